/*
 * orchestrator.h - runs one slot: its task group, then the outcome rule
 * (DESIGN.md; the diagram is at the top of orchestrator.c).
 *
 * orch_run_slot is the rule itself and knows nothing of the queue: it
 * returns 0 when the slot is done (results delivered to every target and
 * the slot marked, or nothing to deliver) and an error when the job must
 * fail (with the first task's error and its hint or permanence, or the
 * first delivery error). orch_run_job is the glue that takes a claimed
 * job, runs the slot and finishes the job through the queue; it also sends
 * the lost-slot alert when the queue says the job is dead.
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
struct orch_ctx {
	struct store *store;
	struct sc_clock *clock;        /* NULL: the store's */
	const struct config *config;   /* targets, alert targets, auths */
	struct http_auth *const *auths; /* long-lived auth providers; may be
					   NULL (then built per run) */
	size_t n_auths;
	/* Called about every tick_ms while the slot runs (inside long tasks,
	 * between tasks, before each send), on this thread. orch_run_job sets
	 * it to extend the job's lease. Non-zero: stop (the running task is
	 * ended and fails as canceled). NULL: no ticks. */
	int (*tick)(void *ud);
	void *tick_ud;
	int64_t tick_ms;
	/* Runs one task in place of task_run when set (`surecron simulate`
	 * fails named tasks in time windows with it; tests too). Same
	 * contract as task_run: fills *out, returns 0 or the failure's code.
	 * NULL: task_run. */
	int (*run_task)(void *ud, const struct task_spec *spec,
			const struct task_ctx *tctx, struct task_result *out);
	void *run_task_ud;
};

/* What happened in one slot run. Zeroed by orch_run_slot; release with
 * orch_report_dispose. */
struct orch_report {
	size_t n_tasks, n_deliver, n_skipped, n_failed;
	bool ran_tasks;           /* false: resent from the outbox, or the
				     slot was already marked */
	bool already_marked;      /* the slot was complete before this run */
	bool resent;              /* the outbox held the slot's message */
	size_t n_notices_sent;    /* failed run: notices that went out */
	size_t n_notices_failed;  /* failed run: notices that did not */
	int64_t started_ns;       /* when the first task began (clock UTC ns;
				     0: no task started) */
	struct outbox_report delivery;
	char *details_json;       /* per-task outcomes, notice errors (owned;
				     for the ledger; may be NULL) */
};

void orch_report_dispose(struct orch_report *r);

/*
 * Runs slot (sched, slot_ms) as attempt `attempt` of job job_id (0: no
 * job, e.g. `surecron run-once`) and applies the outcome rule:
 *   - slot already marked: returns 0, runs and sends nothing;
 *   - outbox already holds the slot's message (a delivery failed before):
 *     resends to the targets without a guard, no task runs;
 *   - failed > 0 and no deliverable: failure notice to every target
 *     directly (a notice that cannot be sent is a warning), no guard, no
 *     marker; returns the FIRST failed task's error (code, message, retry
 *     hint, permanence) in err, the others in rep->details_json;
 *   - otherwise: the result (deliverables + a notice line per failed task)
 *     goes to the outbox for every target first, then to each target;
 *     guard after each send, marker after the last; returns 0, or the
 *     first delivery error (the next attempt resends from the outbox);
 *   - all tasks skipped: marker, nothing sent, returns 0.
 * A schedule naming an unknown target fails permanently (SC_ECONFIG)
 * before any task runs.
 */
int orch_run_slot(const struct orch_ctx *ctx, const struct schedule_spec *sched,
		  int64_t slot_ms, int64_t job_id, int attempt,
		  struct orch_report *rep, struct sc_err *err);

/* How a claimed job ended (orch_run_job). */
struct orch_job_result {
	bool completed;           /* queue_complete: the job is DONE */
	bool dead;                /* queue_fail made it DEAD: the slot is lost */
	int64_t next_ms;          /* retry: when the next attempt is due */
	size_t n_alerts_sent;     /* lost: alert targets that took the alert */
	struct sc_err run_err;    /* the run's error (code 0 on success) */
	char error_class[16];     /* "task", "delivery", "config", "internal" */
	struct orch_report rep;   /* owned: dispose with orch_job_result_dispose */
};

void orch_job_result_dispose(struct orch_job_result *r);

/*
 * The worker's glue: runs the slot of a job claimed with queue_claim (the
 * attempt number is job->attempts) and finishes the job through the queue:
 * queue_complete on success; otherwise queue_fail with the run's error,
 * its retry hint and permanence (error class "task" for a failed run,
 * "delivery" for a delivery failure, "config", "internal"). When the queue
 * says the job is now DEAD, the lost-slot alert goes to the alert targets
 * (only if configured). A job whose schedule is no longer in the config
 * fails permanently (it cannot be run, and that must be loud).
 * While the slot runs, the job's lease is extended every third of its
 * length (queue_heartbeat, same thread and store handle), so a task longer
 * than the lease is not taken for a dead worker's; if the lease is lost
 * anyway, the running task is stopped.
 * Returns 0 when the queue recorded the outcome (read *out), or the
 * queue's error (SC_ELEASE: another worker took the job over; nothing
 * was recorded by this call).
 */
int orch_run_job(const struct orch_ctx *ctx, const struct store_job *job,
		 struct orch_job_result *out, struct sc_err *err);

/*
 * The alert targets: the comma-separated names in SURECRON_ALERT_TARGETS
 * when set and non-empty, else config->alert_targets. Fills out[0..*n)
 * with pointers into the config (unknown names are logged and skipped).
 */
void orch_alert_targets(const struct config *c,
			const struct target_spec **out, size_t max, size_t *n);

/*
 * Sends the "slot lost" alert for (schedule, slot) to the alert targets,
 * if any are configured (otherwise sends nothing and returns 0). why is
 * the error that ended the last attempt. Failures to send are warnings;
 * returns how many alert targets took it via *n_sent (NULL allowed).
 */
void orch_send_lost_alert(const struct orch_ctx *ctx, const char *schedule,
			  int64_t slot_ms, int attempts,
			  const struct sc_err *why, size_t *n_sent);

/*
 * Recovers jobs whose lease expired (queue_recover_dead with stall_limit)
 * and sends the lost-slot alert for each job THIS call moved to DEAD
 * (orch_run_job alerts only for runs that failed). When several nodes
 * recover at the same moment, each lost slot is alerted once: by the node
 * whose recovery transaction declared the job dead, never by one that only
 * sees its "lost" row. *n gets the jobs recovered and *n_lost the slots
 * declared lost (both may be NULL). Returns 0 or the queue's error; the
 * alerts for transitions that were committed before an error still go out.
 */
int orch_recover(const struct orch_ctx *ctx, int stall_limit, int *n,
		 size_t *n_lost, struct sc_err *err);

#endif
