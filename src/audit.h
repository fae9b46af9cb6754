/*
 * audit.h - which slots the config should have fired in a period have no
 * record at all in the store: the *unaccounted* slots (`surecron audit`;
 * a future HTTP API says the same through this module). The full story,
 * with the rule for slots before a schedule's first start, is in
 * docs/internals/audit.md.
 *
 * For each schedule the slots of [since, until) are recomputed with the
 * expression in force at each instant (sc_cron_next): the store's cron
 * history (history.h) splits the period into stretches, each judged
 * with the cron and zone a start or a reload recorded for it, the
 * config's final expression when there is no record; at most
 * AUDIT_SLOTS_MAX per schedule per call. The "abandoned" rows of the
 * period (copies of removed targets, closed unsent) are counted apart:
 * they account for their slot like any row, and are no hole. A slot is ACCOUNTED when the
 * store holds, under the schedule's name or one of its renamed_from
 * names, a ledger row of that slot (any outcome: an attempt, a lost slot,
 * a missed one, an alert), or a missed summary row whose range holds it,
 * or a job. It is PENDING (neither accounted nor a hole) when the
 * scheduler has not reached it yet and it is at most the grace old. Every
 * other slot is a hole, with why:
 *
 *   AUDIT_NO_RECORD     at or before the last slot the scheduler
 *                       materialised, after the schedule's first record:
 *                       nothing says what became of it;
 *   AUDIT_NOT_REACHED   after the last slot the scheduler materialised,
 *                       older than the grace: the scheduler is not
 *                       running (or not for this store); a restart
 *                       records or runs it by the catchup policy;
 *   AUDIT_BEFORE_FIRST  before the schedule's first record in this store
 *                       (the period reaches back before its first start):
 *                       a rename without renamed_from, a store switch, or
 *                       a schedule added since; the store cannot tell
 *                       them apart, so it says so;
 *   AUDIT_NEVER_RUN     the store has no state and no record of the
 *                       schedule at all.
 *
 * A schedule whose store has any record of it before `since` has no
 * slot before its first start in the period: an audit whose period
 * starts after a first start never names slots before it, so a new
 * schedule is named only while the period reaches back before it.
 *
 * Reads only (store_sched_last_get, store_ledger_query, store_job_find,
 * store_cron_history);
 * the ledger is read a fixed number of times per name per call, and
 * store_job_find only for slots the ledger does not account for.
 * Threading: one call at a time per store handle (store.h); the config is
 * read-only.
 */
#ifndef SURECRON_AUDIT_H
#define SURECRON_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"
#include "surecron.h"

/* At most this many slots of one schedule are looked at per call; the
 * rest of the period is not (audit_sched.truncated says so). */
#define AUDIT_SLOTS_MAX 100000

enum audit_why {
	AUDIT_NO_RECORD = 0,
	AUDIT_NOT_REACHED = 1,
	AUDIT_BEFORE_FIRST = 2,
	AUDIT_NEVER_RUN = 3,
};

/* One unaccounted slot. */
struct audit_hole {
	size_t sched;               /* index into audit_report.scheds */
	int64_t slot_ms;
	enum audit_why why;
};

/* What the audit saw of one schedule. */
struct audit_sched {
	const char *name;           /* borrowed from the config */
	size_t n_slots;             /* slots of the period looked at */
	size_t n_pending;           /* of them, not reached yet, in grace */
	size_t n_holes;
	bool truncated;             /* cut at max_slots */
	int64_t cut_ms;             /* when truncated: the last slot looked
				       at; the rest of the period is after */
	bool has_state;             /* the scheduler has seen it (or an
				       earlier name) */
	int64_t last_ms;            /* its last materialised slot */
	int64_t first_ms;           /* the first slot of the period with a
				       record; INT64_MAX when none */
	bool before_period;         /* records of it before `since` */
	size_t n_stretches;         /* expressions that judged the period
				       (its cron history, history.h) */
	size_t n_abandoned;         /* staged copies of removed targets
				       closed unsent in the period
				       (LEDGER_ABANDONED rows) */
};

/* The result of one audit. Start zeroed ({0}); release with
 * audit_report_dispose. */
struct audit_report {
	struct audit_sched *scheds; /* scheds[0..n_scheds), owned */
	size_t n_scheds, cap_scheds;
	struct audit_hole *holes;   /* holes[0..n_holes), owned, by schedule
				       then slot */
	size_t n_holes, cap_holes;
	size_t n_slots;             /* slots looked at, all schedules */
	bool truncated;             /* some schedule was cut */
	size_t n_abandoned;         /* abandoned copies, all schedules */
};

/* Tuning; zero fields (or a NULL pointer) take the defaults. */
struct audit_opts {
	int64_t grace_ms;           /* default SCHED_GRACE_MS */
	size_t max_slots;           /* default AUDIT_SLOTS_MAX */
};

/*
 * What the store says of one schedule, as audit_classify needs it
 * (filled by audit_schedule from the store; tests fill it by hand).
 */
struct audit_view {
	bool has_state;
	int64_t last_ms;
	int64_t first_ms;           /* INT64_MAX: no record in the period */
	bool before_period;
	int64_t now_ms;
	int64_t grace_ms;
};

/*
 * The verdict on one slot that no record accounts for: 0 and *why when it
 * is a hole, 1 when it is pending (not reached yet, within the grace).
 * Pure.
 */
int audit_classify(const struct audit_view *v, int64_t slot_ms,
		   enum audit_why *why);

/*
 * The slots of spec in [since_ms, until_ms), at most max of them, into
 * *out (allocated, free with free(); NULL when *n is 0). *truncated says
 * whether slots of the period were left out. Returns 0, SC_EZONE (spec
 * not resolved by config_parse), SC_EINVAL (an instant out of the
 * engine's range) or SC_ENOMEM.
 */
int audit_slots(const struct schedule_spec *spec, int64_t since_ms,
		int64_t until_ms, size_t max, int64_t **out, size_t *n,
		bool *truncated, struct sc_err *err);

/*
 * Audits one schedule over [since_ms, until_ms) at instant now_ms (the
 * caller's clock: the library reads none) and appends what it found to
 * *rep. Returns 0, the errors of audit_slots, or a store error (rep then
 * holds what earlier calls appended).
 */
int audit_schedule(struct store *s, const struct schedule_spec *spec,
		   int64_t since_ms, int64_t until_ms, int64_t now_ms,
		   const struct audit_opts *o, struct audit_report *rep,
		   struct sc_err *err);

/* audit_schedule for every schedule of cfg, or only the one named only
 * (SC_ENOENT when cfg has no such schedule). Stops at the first error. */
int audit_run(struct store *s, const struct config *cfg, const char *only,
	      int64_t since_ms, int64_t until_ms, int64_t now_ms,
	      const struct audit_opts *o, struct audit_report *rep,
	      struct sc_err *err);

/* Frees what rep owns and zeroes it; NULL is ignored. */
void audit_report_dispose(struct audit_report *rep);

/* The words of why ("no job, no ledger row; ..."), static. */
const char *audit_why_text(enum audit_why why);
/* A short name of why, for JSON: "no_record", "not_reached",
 * "before_first_record", "never_run"; static. */
const char *audit_why_name(enum audit_why why);

#endif
