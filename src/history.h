/*
 * history.h - which cron expression was in force for a schedule, and
 * from when (issue 43): the daemon notes each schedule's expression and
 * zone at its start and at each reload that changes them (the store's
 * cron_history, store.h), and `audit` judges each stretch of a period
 * with the expression that was in force then, not the config's of today.
 *
 * A note governs the schedule's slots from its from_ms on: the slot
 * after the last one the scheduler materialised (under its own name or
 * a renamed_from one) before the change, or, for a schedule with no
 * state yet (a first start), the start's now, as the scheduler's first
 * window begins there. The scheduler computes every later slot with the
 * new expression, so the boundary is exact whatever the downtime.
 *
 * Threading: a handle's thread (store.h); the config is read only.
 */
#ifndef SURECRON_HISTORY_H
#define SURECRON_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"

/* The notes of one config, computed before its scheduler plan first
 * ticks. Start zeroed; release with history_notes_dispose. The strings
 * are borrowed from the config, which must outlive the notes. */
struct history_notes {
	struct store_cron_note *v;
	size_t n;
};

/*
 * Which schedules of cfg a reload from prev must note: want[i] is true
 * for each schedules[i] that prev has not, or whose final expression or
 * zone differs from prev's (same name), or that prev had disabled or
 * cfg disables (a disabled schedule is not noted). *want is allocated (free());
 * NULL with 0 when prev is NULL (every schedule: a start). SC_ENOMEM.
 */
int history_changed(const struct config *prev, const struct config *cfg,
		    bool **want, struct sc_err *err);

/*
 * Computes the notes of cfg's schedules (only those with want[i] when
 * want is given): expression, zone name and from_ms as history.h says,
 * the scheduler's states read from s (one read for many schedules, one
 * per name for a few). A disabled schedule or one without an expression
 * is left out. Replaces what *out held. 0, SC_ENOMEM or the store's
 * error (*out then empty).
 */
int history_plan(struct store *s, const struct config *cfg, const bool *want,
		 int64_t now_ms, struct history_notes *out,
		 struct sc_err *err);

/* Writes h (store_cron_note_many: an unchanged expression writes
 * nothing) and empties it on success; on failure h stays for the next
 * try. *n_written may be NULL. */
int history_write(struct store *s, struct history_notes *h,
		  size_t *n_written, struct sc_err *err);

void history_notes_dispose(struct history_notes *h);

/* One stretch of a period, judged with one expression. */
struct history_stretch {
	int64_t from_ms, until_ms;  /* [from, until) */
	struct sc_cron expr;
	const struct sc_zone *zone;
	bool recorded;              /* false: no record at all, the
				       config's expression is used */
};

/*
 * The stretches of [since_ms, until_ms) for spec, from the records of its
 * name and its renamed_from names, in order, covering the period without
 * gap: each record's expression from its from_ms to the next record's;
 * before the first record, the first record's expression (the earliest
 * known; a store older than schema 13 has no earlier one); no record at
 * all: the config's expression for the whole period. A record whose
 * expression no longer parses, or whose zone no longer loads, is judged
 * with the config's (it was valid when written). *out is allocated
 * (free()); *n >= 1 when since < until, else 0. SC_ENOMEM or the
 * store's error.
 */
int history_stretches(struct store *s, const struct schedule_spec *spec,
		      int64_t since_ms, int64_t until_ms,
		      struct history_stretch **out, size_t *n,
		      struct sc_err *err);

#endif
