/*
 * config_lookup.c - a loaded config's lookups: the name index of its
 * targets, auth providers and schedules, config_target/auth/schedule
 * (and config_schedule_of, through renamed_from), and config_digest.
 *
 * Invariants:
 *   - config_target/auth/schedule answer through the index built at the
 *     end of the load (O(1)), and fall back to a linear search for a
 *     config made or changed by hand.
 *   - The first item of a name wins, in the index as in the search.
 *   - Nothing here changes a config; a lookup's pointer is valid until
 *     the config is freed or changed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"

/*
 * The name index (issue 15): one open-addressing hash table per section,
 * built by config_parse once a section is read, so the lookups below are
 * O(1) for a config of 100,000 schedules. A table records how many items
 * it was built over: a config made or changed by hand (n_* different, or
 * no index) is searched linearly, as before. The first item of a name
 * wins, like the linear search.
 */
struct name_table {
	uint32_t *slots;       /* item index + 1; 0: empty (4 bytes: the
				  table has 2 to 4 slots a schedule) */
	size_t n_slots;        /* a power of two, or 0: not built */
	size_t n_items;        /* the section's count when built */
};

struct config_index {
	struct name_table t[3]; /* by enum section_count */
};

size_t config_name_hash(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	/* FNV's low bits mix poorly and the table masks them: a
	 * finalizer (MurmurHash3's fmix64) spreads every bit. */
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return (size_t)h;
}

static const char *item_name(const struct config *c, enum section_count w,
			     size_t i)
{
	return w == COUNT_TARGETS ? c->targets[i].name
	       : w == COUNT_AUTHS ? c->auths[i].name : c->schedules[i].name;
}

static size_t section_n(const struct config *c, enum section_count w)
{
	return w == COUNT_TARGETS ? c->n_targets
	       : w == COUNT_AUTHS ? c->n_auths : c->n_schedules;
}

void config_index_build(struct config_pc *pc, enum section_count w)
{
	struct config *c = pc->c;
	size_t n = section_n(c, w);

	if (!c->index && !(c->index = calloc(1, sizeof(*c->index)))) {
		config_oom(pc);
		return;
	}
	struct name_table *t = &c->index->t[w];
	size_t ns = 16;
	while (ns < 2 * n)
		ns *= 2;
	free(t->slots);
	*t = (struct name_table){0};
	if (n >= UINT32_MAX)
		return; /* not built: index_find searches */
	if (!(t->slots = calloc(ns, sizeof(*t->slots)))) {
		config_oom(pc);
		return;
	}
	t->n_slots = ns;
	t->n_items = n;
	for (size_t i = 0; i < n; i++) {
		const char *name = item_name(c, w, i);
		if (!name)
			continue;
		size_t k = config_name_hash(name) & (ns - 1);
		bool dup = false;
		while (t->slots[k] && !dup) {
			dup = strcmp(item_name(c, w, t->slots[k] - 1), name) ==
			      0;
			k = (k + 1) & (ns - 1);
		}
		if (!dup)
			t->slots[k] = (uint32_t)(i + 1);
	}
}

void config_index_free(struct config_index *x)
{
	if (x)
		for (size_t i = 0; i < 3; i++)
			free(x->t[i].slots);
	free(x);
}

/* The index of the item called name, or -1. */
static long index_find(const struct config *c, enum section_count w,
		       const char *name)
{
	if (!c || !name)
		return -1;
	size_t n = section_n(c, w);
	const struct name_table *t = c->index ? &c->index->t[w] : NULL;
	if (!t || !t->n_slots || t->n_items != n) {
		for (size_t i = 0; i < n; i++) {
			const char *nm = item_name(c, w, i);
			if (nm && strcmp(nm, name) == 0)
				return (long)i;
		}
		return -1;
	}
	for (size_t k = config_name_hash(name) & (t->n_slots - 1); t->slots[k];
	     k = (k + 1) & (t->n_slots - 1))
		if (strcmp(item_name(c, w, t->slots[k] - 1), name) == 0)
			return (long)(t->slots[k] - 1);
	return -1;
}

const struct target_spec *config_target(const struct config *c,
					const char *name)
{
	long i = c ? index_find(c, COUNT_TARGETS, name) : -1;

	return i < 0 ? NULL : &c->targets[i];
}

const struct auth_spec *config_auth(const struct config *c, const char *name)
{
	long i = c ? index_find(c, COUNT_AUTHS, name) : -1;

	return i < 0 ? NULL : &c->auths[i];
}

const struct schedule_spec *config_schedule(const struct config *c,
					    const char *name)
{
	long i = c ? index_find(c, COUNT_SCHEDULES, name) : -1;

	return i < 0 ? NULL : &c->schedules[i];
}

const struct schedule_spec *config_schedule_of(const struct config *c,
					       const char *name)
{
	const struct schedule_spec *s = config_schedule(c, name);

	if (s || !c || !name || !c->schedules)
		return s;
	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *x = &c->schedules[i];
		for (size_t j = 0; x->renamed_from && j < x->n_renamed_from;
		     j++)
			if (strcmp(x->renamed_from[j], name) == 0)
				return x;
	}
	return NULL;
}

static uint64_t digest_add(uint64_t h, const char *s)
{
	/* Each string with its NUL, so ("ab", "c") and ("a", "bc")
	 * differ. */
	for (const char *p = s ? s : ""; ; p++) {
		h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
		if (!*p)
			break;
	}
	return h;
}

void config_digest(const struct config *c, char out[17])
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; c && i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		h = digest_add(h, s->name);
		h = digest_add(h, s->cron);
		h = digest_add(h, s->tz);
		for (size_t j = 0; j < s->n_renamed_from; j++)
			h = digest_add(h, s->renamed_from[j]);
		h = digest_add(h, "\n");
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}
