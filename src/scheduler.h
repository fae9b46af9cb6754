/*
 * scheduler.h - turns a config's schedules into slots (DESIGN.md: the
 * scheduler layer; the full story is in docs/internals/scheduler.md).
 *
 * One call, scheduler_tick, does everything a scheduler pass needs and is pure
 * over (config, store, now): it keeps no state of its own between calls,
 * reads no clock, and so runs the same under the daemon (real clock) and
 * `surecron simulate` (virtual clock). For each schedule it
 *
 *   1. reads the last materialised instant L (store_sched_last_get);
 *      - none recorded, but one of spec->renamed_from has one (a
 *        rename): L is that name's (the newest of them), recorded under
 *        the new name at once; the downtime since is caught up by the
 *        schedule's catchup policy, exactly as without the rename (the
 *        old name's jobs and ledger rows stay under it);
 *      - none recorded (first start): L = now - 1, i.e. start from now:
 *        no past slot is invented; the baseline is recorded at once so a
 *        stop before the first slot is seen as downtime on the next start;
 *   2. lists the slots S in (L, now] of the FINAL cron expression (after
 *      environment overrides: spec->expr, resolved by config_parse) in
 *      the schedule's zone (spec->zone);
 *   3. decides which of S run, by lateness and the catch-up policy:
 *      - on time: slot >= now - grace_ms (a scheduler that woke a little
 *        late): always enqueued;
 *      - late (downtime, or the wall clock jumped forwards):
 *          catchup latest  the newest late slot runs once, only if no
 *                          on-time slot runs (systemd's Persistent=);
 *          catchup all     every late slot runs (the newest max_catchup);
 *          catchup none    no late slot runs;
 *      - every slot of S that does not run gets a LEDGER_MISSED row
 *        (at most max_missed_rows rows one by one, then ONE summarising
 *        missed row for the rest, so a per-second schedule down for a
 *        month costs a bounded amount of work and rows);
 *   4. enqueues the running slots in one transaction (queue_enqueue_many,
 *      idempotent on (schedule, slot), with the schedule's final policy,
 *      spec->policy, so an env override moves the retry class too);
 *   5. records the newest slot of S as the last materialised one
 *      (store_sched_last_set, which never moves backwards).
 * Order 3-4-5 is what makes a crash between the steps harmless: a rerun
 * enqueues idempotently and skips missed rows already written (or for a
 * slot that has a job), then records the state.
 *
 * Clock jumps: backwards -> slots at or before L are never enqueued again,
 * so nothing is re-run; the next slot is the first one after L. Forwards
 * -> the slots jumped over are late: handled like downtime (step 3).
 * Several nodes may tick the same store at once: enqueue is idempotent,
 * sched_last never moves backwards, and a slot has at most one missed row
 * (the store keeps one per (schedule, slot): two nodes catching up at the
 * same instant both try to write it, the second write is dropped and not
 * counted).
 *
 * Threading: one call at a time per store handle (store.h's rule); the
 * config is read-only and may be shared.
 *
 * The daemon's loop:
 *     for (;;) {
 *         now = sc_clock_now_ms(clock);
 *         scheduler_tick_memo(store, cfg, now, memo, NULL, &r, &err);
 *                                  // or scheduler_tick; log r.n_errors
 *         queue_next_due(store, &job_due, &err);
 *         wake = min(r.next_ms, job_due);
 *         sleep until wake (at most SCHED_MAX_SLEEP_MS of real time, so a
 *         wall-clock jump is noticed within that bound), or until woken
 *         (store_wait, signals, reload);
 *     }
 * Call scheduler_tick promptly when next_ms comes (its own thread, or a loop
 * that does not block on running tasks): a slot found more than grace_ms
 * after its instant counts as late, i.e. as downtime.
 */
#ifndef SURECRON_SCHEDULER_H
#define SURECRON_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"
#include "surecron.h"

/* A slot found at most this late is on time, not missed. */
#define SCHED_GRACE_MS ((int64_t)10 * 1000)
/* At most this many late slots are enqueued per schedule per call
 * (catchup: all); older ones are recorded as missed. */
#define SCHED_CATCHUP_MAX 100
/* At most this many missed slots get a row each per schedule per call;
 * the rest share one summarising missed row. */
#define SCHED_MISSED_ROWS_MAX 100
/* A daemon should not sleep longer than this between ticks (real time),
 * so that a wall-clock jump during a long sleep is seen soon. */
#define SCHED_MAX_SLEEP_MS ((int64_t)60 * 1000)

/* Tuning knobs; zero fields (or a NULL pointer) take the defaults above. */
struct sched_opts {
	int64_t grace_ms;
	size_t max_catchup;
	size_t max_missed_rows;
	bool alert_missed;   /* raise one missed alert per catch-up pass
				(alert_raise_missed); scheduler_tick sets it
				from the config's `alerts: on` */
};

/* What one scheduler_tick did. Zeroed by scheduler_tick. */
struct sched_result {
	size_t n_schedules;   /* schedules looked at */
	size_t n_enqueued;    /* slots handed to the queue that had no job
				 before (a catch-up of several slots, one
				 transaction, counts every slot it sent) */
	size_t n_missed;      /* slots this call recorded as missed (a
				 summary row counts the slots it stands for,
				 at least 1); a row that existed already,
				 written by another node or an interrupted
				 tick, is not counted */
	size_t n_first_start; /* schedules seen for the first time */
	size_t n_errors;      /* schedules that could not be handled */
	int64_t next_ms;      /* earliest slot of any schedule strictly after
				 max(now, its last materialised slot);
				 INT64_MAX when none */
};

/*
 * One scheduler pass over every schedule of cfg at instant now_ms (see
 * the top of this file). A schedule that fails (a store error, a
 * spec that config_parse did not resolve) is logged, counted in out->n_errors and skipped;
 * the others are still handled and out->next_ms is still computed from
 * the schedules that worked. Returns 0 when every schedule was handled,
 * else the first failure's code (detail in err). opts may be NULL.
 * out may not be NULL.
 */
int scheduler_tick(struct store *s, const struct config *cfg, int64_t now_ms,
		   const struct sched_opts *opts, struct sched_result *out,
		   struct sc_err *err);

/*
 * scheduler_tick with a memo of each schedule's next slot, so that a tick
 * touches the store only for the schedules that may be due: memo has
 * cfg->n_schedules entries, parallel to cfg->schedules, caller-owned,
 * every entry INT64_MIN at first (and again after a config reload, which
 * may reorder or change schedules). A schedule with now_ms < memo[i] is
 * skipped (counted in n_schedules, memo[i] taken into next_ms); the others
 * are ticked and memo[i] gets their next slot (INT64_MIN after an error,
 * so it is tried on every tick). Same results as scheduler_tick for the same
 * sequence of calls; use one memo per store handle and config.
 */
int scheduler_tick_memo(struct store *s, const struct config *cfg,
		    int64_t now_ms, int64_t *memo, const struct sched_opts *opts,
			struct sched_result *out, struct sc_err *err);

/* Empties *r: counts 0, next_ms INT64_MAX. */
void scheduler_result_init(struct sched_result *r);

/*
 * The same for one schedule. Adds to *out (it does not reset it, so a
 * caller may sum several calls; scheduler_result_init it first). Returns 0 or the
 * failure's code: SC_EZONE for a spec config_parse did not resolve (no
 * zone), SC_EINVAL from the cron engine for an instant out of its range,
 * store errors.
 */
int scheduler_schedule_tick(struct store *s, const struct schedule_spec *spec,
			    int64_t now_ms, const struct sched_opts *opts,
			    struct sched_result *out, struct sc_err *err);

/*
 * The first slot of spec strictly after after_ms (final expression, its
 * zone), for `surecron status` and the like. Returns 0, SC_ENEVER (no
 * slot within 400 years of after_ms), SC_EINVAL (after_ms out of the
 * engine's range) or SC_EZONE (spec not resolved by config_parse).
 * Thread-safe, touches no store, parses nothing.
 */
int scheduler_next_slot(const struct schedule_spec *spec, int64_t after_ms,
			int64_t *out_ms, struct sc_err *err);

/*
 * When a daemon should next call scheduler_tick for one schedule: the first
 * slot after max(now_ms, the recorded last slot). SC_ENOENT when the
 * schedule was never seen (tick it now). Store and cron errors otherwise.
 */
int scheduler_schedule_next(struct store *s, const struct schedule_spec *spec,
			int64_t now_ms, int64_t *out_ms, struct sc_err *err);

#endif
