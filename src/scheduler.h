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
 *        and with catchup_window set, a late slot older than it
 *        (now - slot > window) never runs, whatever the policy;
 *      - every slot of S that does not run gets a LEDGER_MISSED row
 *        (at most max_missed_rows rows one by one, then ONE summarising
 *        missed row for the rest, so a per-second schedule down for a
 *        month costs a bounded amount of work and rows);
 *   4. enqueues the running slots in one transaction (queue_enqueue_many,
 *      or one by one due at slot + scheduler_jitter_ms with `jitter:`,
 *      idempotent on (schedule, slot), with the schedule's final policy,
 *      spec->policy, so an env override moves the retry class too);
 *   5. records the newest slot of S as the last materialised one
 *      (store_sched_last_set, which never moves backwards).
 * Pauses (issue 17, store_pause_set): a slot of S inside the schedule's
 * pause [from, until) never runs; it gets a LEDGER_PAUSED row instead of
 * a missed one (same caps, same once-per-slot rule) and is not a late
 * slot for catch-up (`latest` takes the newest late slot outside the
 * pause), so nothing is owed for the window, even after a downtime
 * across it; no missed alert counts it. A schedule with `enabled: false`
 * (spec->disabled) fires nothing and writes no row: its state moves to
 * now at each of its slots, so enabling it again starts from then.
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
 * The daemon's loop (a plan per loaded config, see scheduler_plan_new):
 *     for (;;) {
 *         now = sc_clock_now_ms(clock);
 *         if (!plan) scheduler_plan_new(store, cfg, now, NULL, &plan, &err);
 *         scheduler_plan_tick(plan, store, now, &r, &err);
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
	size_t n_paused;      /* slots this call recorded as paused (same
				 counting as n_missed) */
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

/*
 * The plan: what the daemon ticks, so that a tick costs what is due, not
 * how many schedules exist. Built once per loaded config (and again after
 * a reload): ONE store read for every schedule's last slot
 * (store_sched_last_all), ONE transaction for the baselines of the
 * schedules seen for the first time and the states taken over by renames
 * (store_sched_last_set_many). It then keeps in memory each schedule's
 * last slot and a binary min-heap of (next fire instant, schedule).
 * The plan also keeps every pause row (store_pause_all), read again on a
 * tick that has a schedule due or a known pause ending: one read of a
 * table of at most one row per schedule ever paused, so a tick costs
 * what is due, paused or not, and an idle tick still reads nothing. It
 * logs event=pause_seen (a pause new to this node), event=pause_expired
 * and event=resumed (a pause it knew ended); scheduler_plan_next counts
 * the end of a running pause as an instant, so the expiry is logged then.
 * A tick pops the schedules whose instant has come (O(due * log n)) and
 * runs each one's pass exactly as scheduler_schedule_tick does after its
 * read of the last slot (missed rows -> alert -> enqueue -> last_set,
 * written through to the store); a tick with nothing due touches no
 * store. A schedule that fails is passed again on every tick until it
 * works. The copy of last may be behind the store when other nodes tick
 * the same schedules: safe (enqueue is idempotent, missed rows are
 * skipped for slots that have a job or a row, the state never moves
 * backwards), and before a catch-up (a late slot in the window) the state
 * is read again, so a node never takes another node's work for downtime.
 * Same jobs, missed rows and alerts as scheduler_tick called at the same
 * instants (tests/unit/test_sched_plan.c runs both side by side).
 *
 * The config is borrowed and must outlive the plan; the store is passed
 * to each call (the caller's handle; one thread at a time). opts: as for
 * scheduler_tick (NULL: defaults; alert_missed is taken from the config).
 * Returns 0, or a store / memory error (nothing kept: build again later).
 * Free with scheduler_plan_free (NULL is ignored).
 */
struct sched_plan;

int scheduler_plan_new(struct store *s, const struct config *cfg,
		       int64_t now_ms, const struct sched_opts *opts,
		       struct sched_plan **out, struct sc_err *err);

/*
 * One tick at now_ms. *out: n_schedules is the config's count,
 * n_first_start the build's baselines (reported by the first tick),
 * next_ms the heap's top (INT64_MAX: nothing will ever fire). Returns 0
 * when every due schedule was handled, else the first failure's code
 * (each failure logged, counted in n_errors).
 */
int scheduler_plan_tick(struct sched_plan *p, struct store *s, int64_t now_ms,
			struct sched_result *out, struct sc_err *err);

/* The next instant a tick has work (the heap's top), INT64_MAX: none.
 * O(1), touches no store. */
int64_t scheduler_plan_next(const struct sched_plan *p);

void scheduler_plan_free(struct sched_plan *p);

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
 * The start offset of slot slot_ms of spec (`jitter:`), in [0, jitter_ms)
 * (0 when jitter_ms is 0), in whole seconds when jitter_ms is 1 s or
 * more: a hash of (schedule name, slot), so every node,
 * every restart, `explain`, `next` and `simulate` get the same one. The
 * job of the slot is due at slot + offset; its slot stays the slot.
 * Pure and thread-safe.
 */
int64_t scheduler_jitter_ms(const struct schedule_spec *spec, int64_t slot_ms);

/* The real start instant of a slot: slot_ms + scheduler_jitter_ms. */
int64_t scheduler_start_ms(const struct schedule_spec *spec, int64_t slot_ms);

/*
 * The instant after which no attempt of the slot starts (`deadline:`):
 * slot_ms + deadline_ms, or INT64_MAX when the schedule has none.
 */
int64_t scheduler_deadline_at(const struct schedule_spec *spec,
			      int64_t slot_ms);

/*
 * The retry timeline of slot slot_ms of spec as it will run: from the real
 * start (scheduler_start_ms), with spec->policy, and clipped to the
 * deadline (an attempt that would start after slot + deadline_ms is not
 * in *out; window_end_ms is then the last attempt that starts). *n_cut
 * (may be NULL) gets how many attempts the deadline took away. Returns 0
 * or SC_EINVAL (sc_retry_timeline's). Pure and thread-safe.
 */
int scheduler_timeline(const struct schedule_spec *spec, int64_t slot_ms,
		       struct sc_retry_timeline *out, int *n_cut,
		       struct sc_err *err);

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
