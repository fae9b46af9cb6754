/*
 * worker.h - one claimed job, end to end (docs/internals/worker.md).
 *
 * A job comes from queue_claim; worker_run_job keeps its lease while the
 * slot runs (orchestrator_run_slot, the outcome rule), then finishes it
 * through the queue: queue_complete, or queue_fail and, when the queue
 * says the job is now DEAD, the lost-slot alert (alert.h). A finish lost
 * to a store I/O error is tried again, a bounded number of times, since
 * the outcome is known. When the driver asks the run to stop (the
 * daemon's grace is over), the job is given back (queue_release) without
 * counting the attempt; so is a job the runner itself could not run (out
 * of descriptors, processes or memory: queue_give_back, at a backoff).
 *
 * Every driver of a claimed job calls this: the daemon's worker threads,
 * `surecron run --once` (through the daemon) and `surecron simulate`.
 *
 * Thread-safety: one call per thread at a time, each with its own store
 * handle; the config is shared read-only. The hooks are called on the
 * calling thread.
 */
#ifndef SURECRON_WORKER_H
#define SURECRON_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator.h"
#include "store.h"
#include "surecron.h"

struct http_auth;

/* What happened to a claimed job's slot, for the driver's slot_event hook
 * (the external heartbeat, heartbeat.h). */
enum worker_event {
	WORKER_EVENT_START,     /* the attempt is about to run */
	WORKER_EVENT_DELIVERED, /* queue_complete: the marker is written */
	WORKER_EVENT_LOST,      /* the job is DEAD: the slot is lost */
};

/* What a job run needs (all borrowed). */
struct worker_opts {
	struct store *store;
	struct sc_clock *clock;        /* NULL: the store's */
	const struct config *config;   /* the schedule, targets, alerts */
	struct http_auth *const *auths; /* long-lived auth providers; may be
					   NULL (then built per run) */
	size_t n_auths;
	/* The lease each heartbeat renews; <= 0: the claim's own length
	 * (lease_expires_ms - started_ms), else QUEUE_LEASE_MS. */
	int64_t lease_ms;
	/* Asked at every tick (about every WORKER_TICK_MS of the run): true
	 * means give the job back now (queue_release, logged event=released)
	 * and stop the run. NULL: never. */
	bool (*stop)(void *ud);
	/* The outcome of each heartbeat's store call, for the driver's view
	 * of a store outage (where is "heartbeat"). NULL: a failed heartbeat
	 * is a warning line, a good one says nothing. */
	void (*store_failed)(void *ud, const char *where, int code,
			     const char *msg);
	void (*store_fine)(void *ud);
	/* Told of the slot's events, on the calling thread: START before
	 * the run, then DELIVERED or LOST once the queue recorded it (a
	 * failed attempt that will be retried, a release or a lost lease
	 * say nothing more); worker_recover says LOST for each job it
	 * declared dead. Must not block. NULL: none. */
	void (*slot_event)(void *ud, const struct store_job *job,
			   enum worker_event ev);
	void *ud;                      /* for stop, store_failed, store_fine,
					  slot_event */
	/* The backoff of a job the runner could not run (out of
	 * descriptors, processes or memory: queue_give_back), real ms; <= 0:
	 * WORKER_RUNNER_BACKOFF_MS. The daemon grows it while the
	 * exhaustion lasts. */
	int64_t runner_backoff_ms;
	/* Runs one task in place of task_run (orchestrator_ctx.run_task). */
	int (*run_task)(void *ud, const struct task_spec *spec,
			const struct task_ctx *tctx, struct task_result *out);
	void *run_task_ud;
	/* 0: the run acts at once. Else the clock's UTC ns before which
	 * nothing of the run starts (orchestrator_ctx.not_before_ns): the
	 * daemon claims a job a little ahead of its due instant and passes
	 * that instant, so the store reads and the hand-over of the first
	 * task to its reaper are done before it (the START slot event is
	 * said then too). */
	int64_t not_before_ns;
};

/* How often a running job's tick comes (real ms): the stop flag is seen
 * this quickly; the lease is renewed at a tick every third of it. */
#define WORKER_TICK_MS 100

/* The default backoff of a job given back for the runner's exhaustion. */
#define WORKER_RUNNER_BACKOFF_MS 1000

/* How a claimed job ended. Zeroed by worker_run_job; release with
 * worker_result_dispose. */
struct worker_result {
	bool completed;           /* queue_complete: the job is DONE */
	bool dead;                /* queue_fail made it DEAD: the slot is lost */
	bool released;            /* given back on stop (opts.stop) */
	bool lease_lost;          /* another worker took the job over */
	bool runner;              /* the runner was out of descriptors,
				     processes or memory: the job was given
				     back uncounted, due at next_ms
				     (queue_give_back); run_err says why */
	int64_t next_ms;          /* retry: when the next attempt is due
				     (INT64_MAX: none) */
	size_t n_alerts_sent;     /* lost: alert copies sent at once (the
				     rest are retried by alert_tick) */
	struct sc_err run_err;    /* the run's error (code 0 on success) */
	char error_class[16];     /* "task", "expectation", "delivery",
				     "config", "internal"; "runner" when
				     given back (runner) */
	struct orchestrator_report rep; /* owned */
};

void worker_result_dispose(struct worker_result *r);

/*
 * Runs the slot of `job` (claimed with queue_claim; the attempt number is
 * job->attempts) and finishes the job:
 *   - success: queue_complete;
 *   - failure: queue_fail with the run's error, its retry hint and
 *     permanence, and its class ("task" for a failed run, "delivery",
 *     "config", "internal"); when that makes the job DEAD, the lost-slot
 *     alert is raised and what is due is sent at once (alert_raise_lost,
 *     alert_tick); a crash in between leaves it to the next alert_tick;
 *   - a job whose schedule is not in the config (by name or renamed_from:
 *     config_schedule_of) is given back uncounted (queue_release, a
 *     "released" row, out->released) for a node that has it: config skew
 *     never fails nor loses a slot (issue 43). The daemon's claims never
 *     take such a job (queue_overlap_rule);
 *   - a run that ended for the runner's own exhaustion (err_is_runner:
 *     out of descriptors, processes or memory, the task not started)
 *     gives the job back uncounted, due after opts.runner_backoff_ms
 *     (queue_give_back; out->runner, out->next_ms): no attempt, no
 *     notice, never a lost slot;
 *   - a finish that fails with SC_EIO (the connection went) is tried
 *     again up to 20 times, 0.1 s doubling to 5 s apart (real time), unless
 *     the job was released or its lease lost; SC_ELEASE on such a retry
 *     means the first try did commit: the outcome stands as recorded.
 * While the slot runs, the store handle is fenced to the job's lease
 * (store_fence_set) and the lease is renewed every third of its length
 * (real time, or sooner when the clock says a third has gone; always at
 * the first tick of a claim already that old), so a task longer than the
 * lease is not taken for a dead worker's; if the lease is lost anyway, or
 * opts.stop asks, the running task is stopped.
 * Returns 0 when the queue recorded the outcome (read *out), or the
 * queue's error (SC_ELEASE: another worker took the job over, or it was
 * released; nothing was recorded by this call). *out is filled either way.
 */
int worker_run_job(const struct worker_opts *o, const struct store_job *job,
		   struct worker_result *out, struct sc_err *err);

/*
 * The claim every driver makes (the daemon's workers, its --once pass,
 * simulate): one job of the config's schedules (name: the claimer), due
 * by now + ahead_ms, under the config's overlap rule. The rule is set on
 * s when *rule_of differs from cfg_id (any value other than 0 naming this
 * config for the handle's life; *rule_of starts at 0), from known (NULL:
 * built here; queue_known_new). *n is 1 when a job to run is in *job. A
 * job `overlap: skip` refuses (another slot of its schedule runs) is
 * finished here, never run: *skipped says so and *n is 0, and the caller
 * claims again. A `queue` slot that waited past
 * queue_overlap_wait_warn_ms for its turn is logged here, once per
 * attempt (cause=schedule when an earlier slot of its own schedule held
 * it, cause=workers when every worker was busy). Returns 0 or the
 * queue's error.
 */
int worker_claim(struct store *s, const struct config *cfg,
		 struct store_known *known, uint64_t cfg_id, uint64_t *rule_of,
		 const char *name, int64_t ahead_ms, struct store_job *job,
		 size_t *n, bool *skipped, struct sc_err *e);

/*
 * Recovers jobs whose lease expired (queue_recover_dead with stall_limit)
 * and raises the lost-slot alert for each job THIS call moved to DEAD
 * (worker_run_job alerts only for runs that failed), sending it at once.
 * When several nodes recover at the same moment, each lost slot is
 * alerted once: the raise is keyed by the job's death, and each copy is
 * claimed by one sender (alert.h). *n gets the jobs recovered and *n_lost the slots
 * declared lost (both may be NULL). Uses o's store, clock and config only.
 * Returns 0 or the queue's error; the alerts for transitions that were
 * committed before an error still go out.
 */
int worker_recover(const struct worker_opts *o, int stall_limit, int *n,
		   size_t *n_lost, struct sc_err *err);

#endif
