/*
 * orchestrator.h - runs one slot: its task group, then the outcome rule
 * (DESIGN.md; the diagram is at the top of orchestrator.c).
 *
 * orchestrator_run_slot is the rule itself and knows nothing of the
 * queue: it returns 0 when the slot is done (results delivered to every
 * target and the slot marked, or nothing to deliver) and an error when the
 * job must fail (with the first task's error and its hint or permanence,
 * or the first delivery error). Taking a claimed job, keeping its lease
 * and finishing it through the queue is worker.h's.
 *
 * Thread-safety: one call per thread at a time, each with its own store
 * handle; the config is shared read-only.
 */
#ifndef SURECRON_ORCHESTRATOR_H
#define SURECRON_ORCHESTRATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "message.h"
#include "outbox.h"
#include "spec.h"
#include "store.h"
#include "surecron.h"
#include "target.h"
#include "task.h"

struct http_auth;

/* What a slot run needs (all borrowed). */
struct orchestrator_ctx {
	struct store *store;
	struct sc_clock *clock;        /* NULL: the store's */
	const struct config *config;   /* schedules' targets, auths */
	struct http_auth *const *auths; /* long-lived auth providers; may be
					   NULL (then built per run) */
	size_t n_auths;
	/* Called about every tick_ms while the slot runs (inside long tasks,
	 * between tasks, before each send), on this thread. worker.c sets
	 * it to keep the job's lease. Non-zero: stop (the running task is
	 * ended and fails as canceled). NULL: no ticks. */
	int (*tick)(void *ud);
	void *tick_ud;
	int64_t tick_ms;
	/* Called with tick_ud during a step that waits without ticking (a
	 * send, a failure notice, an http task's exchange), about once a
	 * second at least: keeps the lease, never stops the step. worker.c
	 * sets it. NULL: none. */
	void (*keep)(void *ud);
	/* Runs one task in place of task_run when set (`surecron simulate`
	 * fails named tasks in time windows with it; tests too). Same
	 * contract as task_run: fills *out, returns 0 or the failure's code.
	 * NULL: task_run. */
	int (*run_task)(void *ud, const struct task_spec *spec,
			const struct task_ctx *tctx, struct task_result *out);
	void *run_task_ud;
	/* The job's max attempts (its policy's): a failed attempt whose
	 * number reaches it, or whose error is permanent, loses the slot,
	 * which is when `notices: final` speaks. <= 0: unknown, so every
	 * failed attempt may be the last and `final` sends as `every` does
	 * (a duplicate notice beats a silent loss). */
	int max_attempts;
	/* The caller writes the slot's marker itself, with the job's
	 * completion (queue_complete_marked: one durable commit for both,
	 * not two). A run that would mark the slot sets rep->mark_slot
	 * instead and returns 0; the slot is done only once the caller's
	 * commit is. false: the run writes the marker (store_slot_mark). */
	bool mark_at_finish;
	/* 0: the run acts at once. Else the clock's UTC ns before which
	 * nothing of the run may start (the job's due instant, for a job
	 * claimed a little ahead): the run reads the store first, then
	 * hands its first command task to its reaper to be started at that
	 * instant (task.h, start_ns), or waits for it before an http task,
	 * a run_task hook or a resend. */
	int64_t not_before_ns;
};

/* What happened in one slot run. Zeroed by orchestrator_run_slot;
 * release with orchestrator_report_dispose. */
struct orchestrator_report {
	size_t n_tasks, n_deliver, n_skipped, n_failed;
	bool ran_tasks;           /* false: resent from the outbox, or the
				     slot was already marked */
	bool already_marked;      /* the slot was complete before this run */
	bool resent;              /* the outbox held the slot's message */
	bool mark_slot;           /* ctx->mark_at_finish: the run succeeded
				     and the caller must write the marker */
	size_t n_notices_sent;    /* failed run: notices that went out */
	size_t n_notices_failed;  /* failed run: notices that did not */
	size_t n_notices_withheld; /* failed run: targets whose notice policy
				      (final, none) sent none this attempt */
	bool is_last_attempt;     /* failed run: this attempt loses the slot
				     (permanent, or max_attempts reached) */
	bool expectation_failed;  /* the deliverables fell short of the
				     schedule's `expect` (cause
				     "expectation") */
	int64_t started_ns;       /* when the first task began (clock UTC ns;
				     0: no task started) */
	struct outbox_report delivery;
	char *details_json;       /* per-task outcomes, notice errors (owned;
				     for the ledger; may be NULL) */
};

void orchestrator_report_dispose(struct orchestrator_report *r);

/*
 * Runs slot (sched, slot_ms) as attempt `attempt` of job job_id (0: no
 * job, e.g. `surecron run-once`) and applies the outcome rule:
 *   - slot already marked: returns 0, runs and sends nothing;
 *   - outbox rows of targets the schedule no longer has (a reload removed
 *     them, issue 43): each one not sent is closed ABANDONED with an
 *     "abandoned" ledger row (outbox_abandon_removed) before anything
 *     else, and rep->delivery.n_abandoned counts them; when none of the
 *     current targets has a row, their message is staged for them (the
 *     resend below: no task runs);
 *   - outbox already holds the slot's message (a delivery failed before):
 *     resends to the targets without a guard, no task runs;
 *   - failed > 0 and no deliverable: failure notice to every target
 *     directly (a notice that cannot be sent is a warning), no guard, no
 *     marker; returns the FIRST failed task's error (code, message, retry
 *     hint, permanence) in err, the others in rep->details_json;
 *   - otherwise, when the schedule has an `expect` and the deliverables
 *     fall short of it (fewer previews than expect_min_previews, or fewer
 *     summary characters, UTF-8 code points, than
 *     expect_min_summary_chars): the same failure path, returning SC_ETASK
 *     with an error naming the expectation and both numbers (never
 *     permanent: retried like any failure), rep->expectation_failed set;
 *   - on the failure path each target's notice follows its notice
 *     policy (the target's `notices:` if set, else the schedule's):
 *     every: sent; final: sent only when this attempt loses the slot,
 *     saying so and the attempt count; none: never;
 *   - otherwise: the result (deliverables + a notice line per failed task)
 *     goes to the outbox for every target first, then to each target;
 *     guard after each send, marker after the last; returns 0, or the
 *     first delivery error (the next attempt resends from the outbox);
 *   - all tasks skipped: marker, nothing sent, returns 0.
 * A schedule naming an unknown target fails permanently (SC_ECONFIG)
 * before any task runs.
 */
int orchestrator_run_slot(const struct orchestrator_ctx *ctx,
			  const struct schedule_spec *sched, int64_t slot_ms,
			  int64_t job_id, int attempt,
			  struct orchestrator_report *rep, struct sc_err *err);

#endif
