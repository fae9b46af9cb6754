/*
 * config_problem.c - the problems a config load or check finds, and where
 * in the file each key path is.
 *
 * A problem is a position (line:column, 1-based; 0:0 for the file as a
 * whole) and a message "key.path: reason". The position table maps each
 * key path the loader met ("schedules.weekly.cron",
 * "schedules.weekly.tasks[1].command") to the position of its value, so
 * config_check, which works on the loaded structs and no longer has the
 * YAML, can still say FILE:LINE:COLUMN.
 *
 * Invariants:
 *   - At most CONFIG_MAX_PROBLEMS problems are kept; the rest, and any
 *     that could not be stored for lack of memory, are counted in
 *     n_dropped, so a refusal is never silent.
 *   - A message is one line of clean text: line breaks become spaces and
 *     the file's bytes are shown cleaned (text_clean), because problems
 *     quote values and YAML escapes put any byte in them (issue 11).
 *   - Sorting by position is stable: problems at one position keep the
 *     order in which they were found.
 *   - The position table only ever loses entries (out of memory), never
 *     reports a wrong one; the first entry of a path wins. It is a hash
 *     table over one pool of path bytes, so a config of 100,000
 *     schedules (near a million key paths) costs one allocation per
 *     doubling, not one per path, and config_locate is O(1) (issue 15).
 *   - A problem of an included fragment carries the fragment's printed
 *     name and index (config_problems.at_file, set by the loader while it
 *     reads the fragment); the sort orders by file (main file first, then
 *     the fragments in load order), then position. A problem of the main
 *     file carries no name and prints with config_problems.file, exactly
 *     as before fragments existed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "text.h"

void config_problems_dispose(struct config_problems *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->items[i].msg);
		free(p->items[i].file);
	}
	free(p->items);
	free(p->file);
	p->items = NULL;
	p->file = NULL;
	p->at_file = NULL;
	p->at_file_ix = 0;
	p->n = p->cap = p->n_dropped = 0;
}

/* Room for one more item in p (below the cap): true, or false when
 * out of memory (p->oom set). */
static bool room(struct config_problems *p)
{
	if (p->n < p->cap)
		return true;
	size_t ncap = p->cap ? p->cap * 2 : 8;
	struct config_problem *v = realloc(p->items, ncap * sizeof(*v));
	if (!v) {
		p->oom = true;
		return false;
	}
	p->items = v;
	p->cap = ncap;
	return true;
}

static int problem_vadd(struct config_problems *p, size_t file_ix,
			const char *file, int line, int col, const char *fmt,
			va_list ap) SC_PRINTF(6, 0);

static int problem_vadd(struct config_problems *p, size_t file_ix,
			const char *file, int line, int col, const char *fmt,
			va_list ap)
{
	char msg[SC_ERR_MSG_MAX];

	if (p->n >= CONFIG_MAX_PROBLEMS) {
		p->n_dropped++;
		return 0;
	}
	if (!room(p)) {
		p->n_dropped++;
		return SC_ENOMEM;
	}
	char raw[SC_ERR_MSG_MAX];
	vsnprintf(raw, sizeof(raw), fmt, ap);
	for (char *q = raw; *q; q++)
		if (*q == '\n' || *q == '\r')
			*q = ' ';
	/* Problems quote the file's values, and YAML escapes ("\e", "\a")
	 * put any byte in them: shown cleaned (issue 11). */
	text_clean(msg, sizeof(msg), raw, 0);
	char *m = strdup(msg);
	char *f = file ? strdup(file) : NULL;
	if (!m || (file && !f)) {
		free(m);
		free(f);
		p->n_dropped++;
		p->oom = true;
		return SC_ENOMEM;
	}
	p->items[p->n++] = (struct config_problem){line, col, m, f,
						   file ? file_ix : 0};
	return 0;
}

void config_problems_move(struct config_problems *to,
			  struct config_problems *from)
{
	for (size_t i = 0; i < from->n; i++) {
		struct config_problem *pr = &from->items[i];
		if (to->n < CONFIG_MAX_PROBLEMS && room(to)) {
			to->items[to->n++] = *pr;
			continue;
		}
		free(pr->msg);
		free(pr->file);
		to->n_dropped++;
	}
	to->n_dropped += from->n_dropped;
	to->oom |= from->oom;
	free(from->items);
	from->items = NULL;
	from->n = from->cap = from->n_dropped = 0;
	from->oom = false;
}

int config_problem_add(struct config_problems *p, int line, int col,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int rc = problem_vadd(p, p->at_file_ix, p->at_file, line, col, fmt,
			      ap);
	va_end(ap);
	return rc;
}

int config_problem_add_in(struct config_problems *p, size_t file_ix,
			  const char *file, int line, int col,
			  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int rc = problem_vadd(p, file_ix, file, line, col, fmt, ap);
	va_end(ap);
	return rc;
}

int config_problem_oom(struct config_problems *p)
{
	p->oom = true;
	(void)config_problem_add(p, 0, 0, "out of memory");
	return SC_ENOMEM;
}

const char *config_problem_format(const struct config_problems *p, size_t i,
				  char *out, size_t n)
{
	const struct config_problem *pr = &p->items[i];
	const char *file = pr->file ? pr->file
				    : p->file ? p->file : "config";

	if (pr->line > 0)
		snprintf(out, n, "%s:%d:%d: %s", file, pr->line, pr->col,
			 pr->msg);
	else
		snprintf(out, n, "%s: %s", file, pr->msg);
	return out;
}

static int problem_cmp(const void *a, const void *b)
{
	const struct config_problem *x = a, *y = b;

	if (x->file_ix != y->file_ix)
		return x->file_ix < y->file_ix ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return 0;
}

/* Stable by position: qsort is not stable, so ties keep their order
 * through an insertion sort over the (short) range added by one parse. */
void config_problems_sort(struct config_problems *p, size_t from)
{
	for (size_t i = from + 1; i < p->n; i++) {
		struct config_problem t = p->items[i];
		size_t j = i;
		while (j > from && problem_cmp(&p->items[j - 1], &t) > 0) {
			p->items[j] = p->items[j - 1];
			j--;
		}
		p->items[j] = t;
	}
}

/* ---- positions by key path ---- */

/* 16 bytes: a config of 100,000 schedules has some 800,000 of them. */
struct config_loc {
	uint32_t off;        /* the path's bytes in pool */
	uint32_t file_ix;
	int line, col;
};

/* A slot of the hash table: the entry's hash beside its index, so a
 * probe compares strings only when the kept hash bits match, and a
 * rehash reads no path. */
struct loc_slot {
	uint32_t hash;       /* the low bits of config_name_hash */
	uint32_t ix;         /* index into v + 1; 0: empty */
};

struct config_locs {
	struct config_loc *v;
	size_t n, cap;
	char *pool;          /* the paths, NUL-terminated, end to end */
	size_t pool_len, pool_cap;
	struct loc_slot *slots; /* hash table */
	size_t n_slots;      /* a power of two, at least twice n */
	size_t cur_file;     /* the file the next records are in */
	char **names;        /* printed name of each file ([0]: NULL) */
	size_t n_names;
	struct config_problems warns; /* load-time warnings */
};

struct config_locs *config_locs_new(void)
{
	return calloc(1, sizeof(struct config_locs));
}

void config_locs_free(struct config_locs *l)
{
	if (!l)
		return;
	free(l->v);
	free(l->pool);
	free(l->slots);
	for (size_t i = 0; i < l->n_names; i++)
		free(l->names[i]);
	free(l->names);
	config_problems_dispose(&l->warns);
	free(l);
}

/* The slot of path (hash h): where it is, or the empty slot where it
 * would go. */
static size_t locs_slot(const struct config_locs *l, const char *path,
			size_t h)
{
	size_t mask = l->n_slots - 1, i = (uint32_t)h & mask;

	while (l->slots[i].ix &&
	       (l->slots[i].hash != (uint32_t)h ||
		strcmp(l->pool + l->v[l->slots[i].ix - 1].off, path) != 0))
		i = (i + 1) & mask;
	return i;
}

static bool locs_grow_slots(struct config_locs *l)
{
	size_t ns = l->n_slots ? l->n_slots * 2 : 256;

	if (ns > ((size_t)1 << 32))
		return false;
	struct loc_slot *s = calloc(ns, sizeof(*s));
	if (!s)
		return false;
	/* The paths are distinct: each goes to the first free slot. The
	 * table never exceeds 2^32 slots, so the 32 bits of the hash a slot
	 * keeps place it as the full hash would. */
	for (size_t k = 0; k < l->n_slots; k++) {
		const struct loc_slot *o = &l->slots[k];
		if (!o->ix)
			continue;
		size_t i = o->hash & (ns - 1);
		while (s[i].ix)
			i = (i + 1) & (ns - 1);
		s[i] = *o;
	}
	free(l->slots);
	l->slots = s;
	l->n_slots = ns;
	return true;
}

/* Running out of memory only loses the position. */
void config_locs_add(struct config_locs *l, const char *path, int line,
		     int col)
{
	if (!l || l->n >= UINT32_MAX - 1)
		return;
	size_t len = strlen(path) + 1;
	if (l->pool_len + len > UINT32_MAX)
		return; /* past what an offset holds: the position is lost */
	if ((l->n + 1) * 2 > l->n_slots && !locs_grow_slots(l))
		return;
	size_t h = config_name_hash(path);
	size_t slot = locs_slot(l, path, h);
	if (l->slots[slot].ix)
		return; /* the first record of a path wins */
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct config_loc *v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return;
		l->v = v;
		l->cap = ncap;
	}
	if (l->pool_len + len > l->pool_cap) {
		size_t ncap = l->pool_cap ? l->pool_cap * 2 : 4096;
		while (ncap < l->pool_len + len)
			ncap *= 2;
		char *p = realloc(l->pool, ncap);
		if (!p)
			return;
		l->pool = p;
		l->pool_cap = ncap;
	}
	memcpy(l->pool + l->pool_len, path, len);
	l->v[l->n] = (struct config_loc){(uint32_t)l->pool_len,
					 (uint32_t)l->cur_file, line, col};
	l->pool_len += len;
	l->slots[slot] = (struct loc_slot){(uint32_t)h, (uint32_t)++l->n};
}

int config_locs_file(struct config_locs *l, size_t ix, const char *name)
{
	if (!l)
		return 0;
	if (ix >= l->n_names) {
		char **v = realloc(l->names, (ix + 1) * sizeof(*v));
		if (!v)
			return SC_ENOMEM;
		for (size_t i = l->n_names; i <= ix; i++)
			v[i] = NULL;
		l->names = v;
		l->n_names = ix + 1;
	}
	if (ix && name && !l->names[ix] && !(l->names[ix] = strdup(name)))
		return SC_ENOMEM;
	l->cur_file = ix;
	return 0;
}

struct config_problems *config_locs_warns(struct config_locs *l)
{
	return l ? &l->warns : NULL;
}

bool config_locate_in(const struct config *c, const char *path, int *line,
		      int *col, size_t *file_ix, const char **file)
{
	const struct config_locs *l = c ? c->locs : NULL;

	*line = *col = 0;
	if (file_ix)
		*file_ix = 0;
	if (file)
		*file = NULL;
	if (!l || !l->n_slots)
		return false;
	size_t slot = locs_slot(l, path, config_name_hash(path));
	if (!l->slots[slot].ix)
		return false;
	const struct config_loc *e = &l->v[l->slots[slot].ix - 1];
	*line = e->line;
	*col = e->col;
	if (file_ix)
		*file_ix = e->file_ix;
	if (file && e->file_ix < l->n_names)
		*file = l->names[e->file_ix];
	return true;
}

bool config_locate(const struct config *c, const char *path, int *line,
		   int *col)
{
	return config_locate_in(c, path, line, col, NULL, NULL);
}
