/*
 * prune.h - retention (issue 15): what `surecron prune` and the daemon's
 * daily prune may delete, and the loop that deletes it in short batches
 * (docs/internals/prune.md, docs/operations.md "Retention and prune").
 *
 * Ages are by slot. The horizon of a table is
 *     now - max(its retention, the longest recovery window) - PRUNE_MARGIN_MS
 * where the longest recovery window is, over the config's schedules, the
 * span of the retry policy (the last attempt's instant minus the slot,
 * sc_retry_timeline) plus one lease per attempt (an attempt may run that
 * long). Schedules no longer in the config get that same longest window:
 * the horizon is one instant per table, for every schedule. A retention
 * of 0 keeps the table forever. What is never deleted whatever the
 * horizon is listed in store.h ("retention"); prune_plan adds that send
 * guards and slot markers go only with retention.jobs set, past the jobs
 * horizon: `trigger --slot` refuses a slot older than retention.jobs
 * (prune_trigger_floor), so a slot whose guard may go can no longer be
 * run again.
 *
 * Thread-safety: any thread, with its own store handle; the config is
 * read only.
 */
#ifndef SURECRON_PRUNE_H
#define SURECRON_PRUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"

/*
 * Added to every horizon. One day covers what the window does not: a
 * retry-after hint that pushed an attempt past its backoff, a daemon that
 * was down while retries were pending and catches up, clock skew between
 * nodes, and the race of a `trigger --slot` accepted just before a prune
 * (the trigger floor is retention.jobs, the prune horizon a day and a
 * window older).
 */
#define PRUNE_MARGIN_MS (24LL * 3600 * 1000)

/*
 * Rows per batch: each batch is one write transaction, and on SQLite the
 * only writer while it runs, so its duration bounds how long a running
 * daemon's claims wait (PRUNE_BATCH_BOUND_MS, the 100 ms). A
 * batch costs about one index page per schedule whatever its size, plus
 * a little per row, so prune_run sizes batches by time: it starts at
 * PRUNE_BATCH_ROWS and sizes each next batch in proportion to aim at
 * PRUNE_BATCH_TARGET_MS (at most doubling), within PRUNE_BATCH_MIN ..
 * PRUNE_BATCH_MAX, leaving the bound room for the claim's own work.
 * Between batches it pauses PRUNE_YIELD_MS so that a writer waiting on
 * the lock gets it (its busy handler polls every 2-4 ms): a claim then
 * waits for one batch at most. Measured figures: docs/internals/prune.md.
 */
#define PRUNE_BATCH_ROWS 4000
#define PRUNE_BATCH_MIN 1000
#define PRUNE_BATCH_MAX 64000
#define PRUNE_BATCH_BOUND_MS 100
#define PRUNE_BATCH_TARGET_MS 60
/* PostgreSQL: a prune's batch does not block claims there (MVCC, row
 * locks), so batches may run longer, for fewer statements. */
#define PRUNE_BATCH_TARGET_PG_MS 500
#define PRUNE_YIELD_MS 5

/* The daemon's daily prune: first PRUNE_FIRST_DELAY_MS after start (a
 * restart loop does not prune every minute), then every PRUNE_EVERY_MS,
 * under the lease "prune" held for PRUNE_LEASE_MS, so one node of
 * several prunes per day (the lease outlives any prune). */
#define PRUNE_FIRST_DELAY_MS (15LL * 60 * 1000)
#define PRUNE_EVERY_MS (24LL * 3600 * 1000)
#define PRUNE_LEASE_MS (23LL * 3600 * 1000)
#define PRUNE_LEASE_NAME "prune"

/* The horizons of one prune. */
struct prune_plan {
	int64_t now_ms;
	int64_t window_ms;          /* the longest recovery window */
	struct store_prune_opts opts; /* the store's horizons; 0: skipped */
	bool any;                   /* some retention is set */
};

/* The longest recovery window of c's schedules (0 when none). */
int64_t prune_window_ms(const struct config *c);

/* Fills *out for c at now_ms. Never fails. */
void prune_plan(const struct config *c, int64_t now_ms,
		struct prune_plan *out);

/*
 * The oldest slot whose ledger rows every prune under c up to now_ms has
 * left (the ledger horizon of prune_plan: a prune at an earlier instant
 * had an earlier one), or INT64_MIN when retention.ledger is not set.
 * Before it a slot's record may be gone, so `audit` does not judge such
 * slots: a pruned slot is not a hole. (A retention shortened and then
 * lengthened again is not known here: prunes under the shorter one went
 * further back.)
 */
int64_t prune_ledger_floor(const struct config *c, int64_t now_ms);

/*
 * The oldest slot `trigger --slot` may run: now - retention.jobs, or
 * INT64_MIN when retention.jobs is not set (jobs are kept forever).
 */
int64_t prune_trigger_floor(const struct config *c, int64_t now_ms);

/* What a prune did (or, dry run, would do). */
struct prune_report {
	struct store_prune_result n;
	int64_t used_before, used_after;   /* store_prune_size */
	int64_t file_before, file_after;
	const char *size_how;              /* static */
	int64_t n_batches;
	int64_t max_batch_ms;              /* the longest batch (real time) */
	int max_batch_rows;                /* the largest batch size used */
	int64_t elapsed_ms;
};

/*
 * Runs plan p on s: store_prune_batch until done (batches of batch_rows
 * rows; <= 0: sized by time, see PRUNE_BATCH_ROWS), with the store's size
 * before and after.
 * Nothing is deleted when p->any is false or dry_run. Stops early, with
 * SC_ECANCELED, when stop (may be NULL) returns true between batches.
 * On error *out holds what was done before it.
 */
int prune_run(struct store *s, const struct prune_plan *p, bool dry_run,
	      int batch_rows, bool (*stop)(void *ud), void *ud,
	      struct prune_report *out, struct sc_err *err);

/* The daemon's daily prune (daemon.c's pruner thread): zero it, then
 * call prune_daily_tick at every pass where prune_daily_due says so. */
struct prune_daily {
	int64_t next_ms;            /* 0: not yet planned */
};

/* Whether prune_daily_tick has work at now_ms (the first call plans the
 * first prune PRUNE_FIRST_DELAY_MS later): the daemon opens a store
 * handle for the prune only then. */
bool prune_daily_due(struct prune_daily *pd, int64_t now_ms);

/*
 * Runs a prune when one is due at now_ms and some retention is set, after
 * taking the lease PRUNE_LEASE_NAME for owner (another node holding it:
 * nothing done, the next try a day later). Logs event=prune with the
 * counts, or event=prune_failed. *ran (NULL allowed) says whether this
 * call pruned.
 */
int prune_daily_tick(struct prune_daily *pd, struct store *s,
		     const struct config *c, int64_t now_ms,
		     const char *owner, bool (*stop)(void *ud), void *ud,
		     bool *ran, struct sc_err *err);

#endif
