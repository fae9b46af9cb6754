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
 *     reports a wrong one; the first entry of a path wins.
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
	for (size_t i = 0; i < p->n; i++)
		free(p->items[i].msg);
	free(p->items);
	free(p->file);
	p->items = NULL;
	p->file = NULL;
	p->n = p->cap = p->n_dropped = 0;
}

static int problem_vadd(struct config_problems *p, int line, int col,
			const char *fmt, va_list ap) SC_PRINTF(4, 0);

static int problem_vadd(struct config_problems *p, int line, int col,
			const char *fmt, va_list ap)
{
	char msg[SC_ERR_MSG_MAX];

	if (p->n >= CONFIG_MAX_PROBLEMS) {
		p->n_dropped++;
		return 0;
	}
	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 8;
		struct config_problem *v =
			realloc(p->items, ncap * sizeof(*v));
		if (!v) {
			p->n_dropped++;
			p->oom = true;
			return SC_ENOMEM;
		}
		p->items = v;
		p->cap = ncap;
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
	if (!m) {
		p->n_dropped++;
		p->oom = true;
		return SC_ENOMEM;
	}
	p->items[p->n++] = (struct config_problem){line, col, m};
	return 0;
}

int config_problem_add(struct config_problems *p, int line, int col,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int rc = problem_vadd(p, line, col, fmt, ap);
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
	const char *file = p->file ? p->file : "config";

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

struct config_loc {
	char *path;
	int line, col;
};

struct config_locs {
	struct config_loc *v;
	size_t n, cap;
};

struct config_locs *config_locs_new(void)
{
	return calloc(1, sizeof(struct config_locs));
}

void config_locs_free(struct config_locs *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	free(l);
}

/* Running out of memory only loses the position. */
void config_locs_add(struct config_locs *l, const char *path, int line,
		     int col)
{
	if (!l)
		return;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct config_loc *v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return;
		l->v = v;
		l->cap = ncap;
	}
	l->v[l->n].path = strdup(path);
	if (!l->v[l->n].path)
		return;
	l->v[l->n].line = line;
	l->v[l->n].col = col;
	l->n++;
}

bool config_locate(const struct config *c, const char *path, int *line,
		   int *col)
{
	*line = *col = 0;
	if (!c || !c->locs)
		return false;
	for (size_t i = 0; i < c->locs->n; i++) {
		if (strcmp(c->locs->v[i].path, path) == 0) {
			*line = c->locs->v[i].line;
			*col = c->locs->v[i].col;
			return true;
		}
	}
	return false;
}
