/*
 * worker.c - one claimed job, end to end: lease keeping, the slot run,
 * the finish, the lost-slot alert, release on stop.
 *
 *   claimed job (queue_claim)
 *        |
 *   schedule in the config? --no--> run error SC_ECONFIG (permanent)
 *        |yes                                           |
 *   store_fence_set(job, token)                         |
 *   orchestrator_run_slot, ticked by the keeper:        |
 *     stop asked -> queue_release, run stops            |
 *     a third of the lease gone -> queue_heartbeat      |
 *       (SC_ELEASE: lease lost, run stops)              |
 *     during a send or an http task: the lease only     |
 *       (keeper_keep), the stop at the next tick        |
 *   store_fence_clear                                   |
 *        |                                              |
 *   run ok? --yes--> queue_complete (with the slot's    |
 *        |           marker when the run asks: one commit)|
 *        |no                                            |
 *   queue_fail(class, error, hint) <--------------------+
 *        |  DEAD? --yes--> alert_send_lost: that slot's alert (alert.h)
 *        v
 *   finish failed with SC_EIO or SC_ENOSPC (and not released, lease not
 *   lost)?
 *        --yes--> the same finish again, backing off, at most 20 times,
 *                 until the driver's stop (opts.stop) asks
 *   recorded DONE or DEAD: slot_event DELIVERED or LOST (START was said
 *   before the run)
 *
 * Invariants:
 *   - one keeper: every driver (daemon workers, run --once, simulate) gets
 *     the same heartbeats, the same stop check and the same log lines;
 *   - the store handle is fenced to the job's lease for the run
 *     (store_fence_set), so even a worker that missed its heartbeats (it
 *     was paused) cannot write an outbox state, a guard, the marker or a
 *     "duplicate" row once another claim took the job: the write fails
 *     with SC_ELEASE and the run stops there; the finish is fenced by the
 *     job's token itself;
 *   - a run whose lease is lost, or that was released, stops where it is
 *     (the tick answers non-zero from then on) and writes or sends nothing
 *     more (orchestrator.c's lost-lease invariant): the slot has a new
 *     owner, or the job is READY again with its attempt not counted;
 *   - a job is never failed without a reason: a run error without a code
 *     gets the return code's;
 *   - a finish is retried only after SC_EIO or SC_ENOSPC, whose outcome
 *     is unknown (store.h: a failed sync may follow a commit); an
 *     SC_ELEASE on a retry means the first try committed (or another
 *     worker took over): nothing is left to do, so it is no error. A full
 *     disk is retried so that the job does not stay ACTIVE until its
 *     lease runs out, holding a `queue` schedule's later slots that long;
 *   - `overlap: replace`: an attempt's tasks run only while it holds its
 *     schedule's turn (the store lease "replace:SCHEDULE", renewed with
 *     each heartbeat, its time to live the tasks' longest grace plus
 *     REPLACE_TURN_SLACK_MS); it is dropped once the tasks ended. The
 *     scheduler finishes a replaced attempt's job at once (so the new
 *     slot is claimable), but its processes live on for up to their
 *     grace: the new attempt, on this node or another, waits for the
 *     turn, so that two attempts never run at once;
 *   - `deadline:` (scheduler_deadline_at): a job the scheduler made that
 *     is claimed past its slot's deadline is not run: it is failed at
 *     once, permanently, with class "deadline" (DEAD, a lost row, the
 *     lost alert), so no attempt starts after the deadline; a failed
 *     attempt whose retry would start past it loses the slot the same way
 *     then, not at the retry. A stalled job recovered after the deadline
 *     is bound too. A manual job (trigger), or one an operator revived
 *     after the deadline (retry, trigger --slot: deadline_binds), runs:
 *     its success is delivered marked late (orchestrator.c);
 *   - the heartbeat period is real time (clock_real_delta_ms), since a
 *     test build's clock may run faster; a claim the clock already finds
 *     a third of its lease old is renewed at the first tick (which is also
 *     how a stale ticket learns at once that its lease is gone).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alert.h"
#include "clock.h"
#include "err.h"
#include "failpoint.h"
#include "ledger.h"
#include "log.h"
#include "queue.h"
#include "scheduler.h"
#include "worker.h"

/* The finish retry after SC_EIO or SC_ENOSPC: real time, 0.1 s doubling
 * to 5 s. */
#define FINISH_TRIES 20
#define FINISH_BACKOFF_MIN_MS 100
#define FINISH_BACKOFF_MAX_MS 5000

void worker_result_dispose(struct worker_result *r)
{
	if (!r)
		return;
	orchestrator_report_dispose(&r->rep);
	memset(r, 0, sizeof(*r));
}

static struct sc_clock *opts_clock(const struct worker_opts *o)
{
	return o->clock ? o->clock : store_clock(o->store);
}

static const char *error_class(int rc, const struct orchestrator_report *rep)
{
	if (rep->expectation_failed)
		return "expectation";
	if (rep->ran_tasks && rep->n_failed > 0 && rep->n_deliver == 0)
		return "task";
	if (rc == SC_EDELIVERY)
		return "delivery";
	if (rc == SC_ECONFIG)
		return "config";
	return "internal";
}

/* ---- the lease keeper ---------------------------------------------------- */

/* Runs on the job's own thread, with the job's own store handle, from
 * inside the task's poll loop, between tasks, before each send, and
 * (keeper_keep) during a send or an http task's exchange. */
struct keeper {
	const struct worker_opts *o;
	struct sc_clock *clock;
	struct store_job job;   /* the ticket; heartbeats move its expiry */
	int64_t lease_ms;
	int64_t last_hb_mono;   /* real ms of the last good heartbeat (or the
				   start) */
	bool released, lost;
	bool hb_failing;        /* no store_failed hook: warned already */
	int64_t replace_poll_ms; /* `overlap: replace`: heartbeat at least
				    this often (clock ms), so that a newer
				    slot's replace is seen within it; 0:
				    not such a schedule */
	/* `overlap: replace`: the schedule's turn, while held (renewed by
	 * each heartbeat): lease name, owner, time to live (clock ms). */
	bool has_turn;
	char turn[STORE_NAME_MAX + 16];
	char turn_owner[64];
	int64_t turn_ttl_ms;
};

/* How soon an attempt of an `overlap: replace` schedule sees that a
 * newer slot replaced it (clock ms): a heartbeat that often. */
#define REPLACE_POLL_MS 250

/* A replace turn outlives its last renewal by the tasks' longest grace
 * plus this (real ms): the heartbeat that finds the attempt replaced,
 * the SIGTERM, the grace, the SIGKILL and the reaping all fit in it.
 * It bounds, too, how long a turn whose node died holds up the next
 * attempt. */
#define REPLACE_TURN_SLACK_MS 2000

/* How often an attempt waiting for its turn asks again (real ms). */
#define REPLACE_TURN_WAIT_MS 20

static bool heartbeat_due(const struct keeper *k, int64_t mono)
{
	int64_t third = k->lease_ms / 3;

	if (k->replace_poll_ms > 0 && k->replace_poll_ms < third)
		third = k->replace_poll_ms;
	/* The lease runs on the job's clock; the period is measured in
	 * real time. */
	if (mono - k->last_hb_mono >= clock_real_delta_ms(k->clock, third))
		return true;
	/* A ticket the clock already finds a third of its lease old. */
	return sc_clock_now_ms(k->clock) >=
	       k->job.lease_expires_ms - k->lease_ms + third;
}

/* Renews the lease when a third of it is gone. Non-zero: the lease is
 * lost (SC_ELEASE). */
static int keeper_renew(struct keeper *k)
{
	const struct worker_opts *o = k->o;
	struct sc_err e = {0};
	int64_t mono = clock_mono_ms();

	if (!heartbeat_due(k, mono))
		return 0;
	int rc = queue_heartbeat(o->store, &k->job, k->lease_ms, &e);
	struct store_job now;
	if (rc == SC_ELEASE && k->replace_poll_ms > 0 &&
	    store_job_get(o->store, k->job.id, &now, NULL) == 0 &&
	    now.state == JOB_DONE) {
		/* A newer slot replaced this attempt (overlap: replace; its
		 * `replaced` row is written): SC_ESTATE ends the task as a
		 * timeout does, SIGTERM then SIGKILL after its grace. */
		k->lost = true;
		LOG(SC_LOG_WARN, "worker", "event=replaced job=%lld "
		    "schedule=%s attempt=%d", (long long)k->job.id,
		    k->job.schedule, k->job.attempts);
		return SC_ESTATE;
	}
	if (rc == SC_ELEASE) {
		/* Another worker recovered the job: stop, it owns the slot. */
		k->lost = true;
		LOG(SC_LOG_ERROR, "daemon",
		       "event=lease-lost job=%lld schedule=%s",
		       (long long)k->job.id, k->job.schedule);
		return rc;
	}
	if (rc) {
		/* Tried again at the next tick: two periods may fail before
		 * the lease runs out. */
		if (o->store_failed)
			o->store_failed(o->ud, "heartbeat", rc, e.msg);
		else if (!k->hb_failing)
			LOG(SC_LOG_WARN, "worker",
			       "event=heartbeat_failed job=%lld "
			       "msg=\"heartbeat failed\" code=%d",
			       (long long)k->job.id, rc);
		k->hb_failing = true;
		return 0;
	}
	if (o->store_fine)
		o->store_fine(o->ud);
	k->hb_failing = false;
	k->last_hb_mono = mono;
	if (k->has_turn) {
		bool won = false;
		/* A failed renewal is tried again at the next heartbeat,
		 * well within the time to live. */
		(void)store_lease_take(o->store, k->turn, k->turn_owner,
				       k->turn_ttl_ms, &won, NULL);
	}
	return 0;
}

/* The run's tick: gives the job back when the driver says stop, and
 * keeps the lease (every third of it). Non-zero stops the run. */
static int keeper_tick(void *ud)
{
	struct keeper *k = ud;
	const struct worker_opts *o = k->o;
	struct sc_err e = {0};

	if (k->released || k->lost)
		return SC_ECANCELED;
	if (o->stop && o->stop(o->ud)) {
		int rc = queue_release(o->store, &k->job, &e);
		k->released = true;
		LOG(rc ? SC_LOG_WARN : SC_LOG_INFO, "daemon",
		       "event=released job=%lld schedule=%s attempt=%d%s",
		       (long long)k->job.id, k->job.schedule, k->job.attempts,
		       rc ? " outcome=release-failed" : "");
		return SC_ECANCELED;
	}
	return keeper_renew(k);
}

/*
 * The keep hook of a step that waits without ticking (a send, a failure
 * notice, an http task's exchange; orchestrator_ctx.keep): the lease
 * only, never the stop. A send cut short by a release would leave its
 * row SENDING, and the next attempt would have to declare a possible
 * second copy; the stop is served at the next tick, right after the
 * send. The store handle is free meanwhile: the step is on this thread
 * and holds no statement of it.
 */
static void keeper_keep(void *ud)
{
	struct keeper *k = ud;

	if (!k->released && !k->lost)
		(void)keeper_renew(k);
}

/* ---- overlap: replace, one attempt at a time ----------------------------- */

/* Clock ms of real_ms on k's clock (a test clock may run faster). */
static int64_t clock_span_ms(const struct keeper *k, int64_t real_ms)
{
	int64_t per = clock_real_delta_ms(k->clock, 1000000);

	return per > 0 ? real_ms * 1000000 / per : real_ms;
}

/*
 * Waits for the schedule's turn (struct keeper: has_turn), ticking the
 * keeper meanwhile: its lease is kept, a stop releases the job, a newer
 * slot's replace ends the wait. 0 with the turn held; else the tick's
 * code (the run does not start).
 */
static int turn_take(struct keeper *k, const struct schedule_spec *sched)
{
	const struct worker_opts *o = k->o;
	int64_t grace = 0;

	for (size_t i = 0; i < sched->n_tasks; i++)
		if (sched->tasks[i].grace_ms > grace)
			grace = sched->tasks[i].grace_ms;
	snprintf(k->turn, sizeof(k->turn), "replace:%s", sched->name);
	snprintf(k->turn_owner, sizeof(k->turn_owner), "job:%lld:%lld",
		 (long long)k->job.id, (long long)k->job.lease_token);
	k->turn_ttl_ms = clock_span_ms(k, grace + REPLACE_TURN_SLACK_MS);
	for (bool logged = false;;) {
		bool won = false;
		struct sc_err e = {0};
		int rc = store_lease_take(o->store, k->turn, k->turn_owner,
					  k->turn_ttl_ms, &won, &e);
		if (rc == 0 && won) {
			k->has_turn = true;
			return 0;
		}
		if (!logged) {
			LOG(SC_LOG_INFO, "worker", "event=replace-wait job=%lld "
			    "schedule=%s msg=\"the attempt it replaced is "
			    "still ending\"", (long long)k->job.id,
			    k->job.schedule);
			logged = true;
		}
		rc = keeper_tick(k);
		if (rc)
			return rc;
		struct timespec ts = {.tv_nsec = REPLACE_TURN_WAIT_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* Gives the turn back once the tasks ended (the next attempt waits no
 * longer); a failure leaves it to run out. */
static void turn_drop(struct keeper *k)
{
	if (!k->has_turn)
		return;
	(void)store_lease_drop(k->o->store, k->turn, k->turn_owner, NULL);
	k->has_turn = false;
}

/* ---- the finish ---------------------------------------------------------- */

/*
 * Raises the lost alert of d and sends what is due at once, on this
 * thread: the on-call hears of the loss now, not at the alerter's next
 * tick. A failure is only logged: the alert row (or, if even the raise
 * failed, the DEAD job itself) is still there for the next alert_tick.
 */
static void alert_now(const struct worker_opts *o, struct sc_clock *clock,
		      const struct store_dead_job *d, size_t *n_sent)
{
	struct alert_ctx a = {.store = o->store, .config = o->config,
			      .clock = clock, .stop = o->stop, .ud = o->ud};
	struct alert_report rep;
	struct sc_err e = {0};
	int rc = alert_send_lost(&a, d, &rep, &e);

	if (rc) {
		LOG(SC_LOG_WARN, "alert", "event=alert_deferred schedule=%s "
		       "job=%lld code=%d msg=\"the lost alert goes out at the "
		       "next alert pass\"", d->schedule, (long long)d->job_id,
		       rc);
		return;
	}
	if (n_sent)
		*n_sent += rep.n_sent;
}

/* Records the outcome once: complete, or fail (and alert when the job is
 * now DEAD). */
static int finish(const struct worker_opts *o, struct sc_clock *clock,
		  const struct store_job *job, bool ok,
		  struct worker_result *out, struct sc_err *err)
{
	int rc;

	/* Test builds: the store's disk full at this finish. */
	if (FAILPOINT_ERR("worker.finish_full"))
		return sc_err_set(err, SC_ENOSPC, "database or disk is full "
				  "(injected by failpoint worker.finish_full)");
	if (ok) {
		rc = out->rep.mark_slot
			     ? queue_complete_marked(o->store, job,
						     out->rep.details_json, err)
			     : queue_complete(o->store, job,
					      out->rep.details_json, err);
		out->completed = rc == 0;
		return rc;
	}
	rc = queue_fail(o->store, job, out->error_class, &out->run_err,
			out->rep.details_json, &out->next_ms, &out->dead, err);
	if (rc == 0 && out->dead) {
		struct store_dead_job d = {.job_id = job->id,
					   .slot_ms = job->slot_ms,
					   .attempt = job->attempts};
		snprintf(d.schedule, sizeof(d.schedule), "%s", job->schedule);
		/* Cut to the row's size, on purpose. */
		size_t len = strnlen(out->run_err.msg, sizeof(d.error_msg) - 1);
		memcpy(d.error_msg, out->run_err.msg, len);
		d.error_msg[len] = '\0';
		/* A crash here leaves the job DEAD with its alert unraised:
		 * the next alert_tick's sweep raises it. */
		FAILPOINT("worker.after_lost_before_alert");
		alert_now(o, clock, &d, &out->n_alerts_sent);
	}
	return rc;
}

/* Whether a finish that failed with rc may have failed for a while only
 * (a lost connection, a full disk, the runner's memory short: SQLite's
 * or libpq's allocation failed under an address-space limit), with an
 * outcome unknown. */
static bool finish_retryable(int rc)
{
	return rc == SC_EIO || rc == SC_ENOSPC || rc == SC_ENOMEM;
}

/* Sleeps backoff_ms before a store write is tried again, in steps of the
 * tick, so that a stop (grace over) ends the retries at once: false then
 * (the job stays ACTIVE and lease recovery runs it again, as after a
 * crash). */
static bool retry_wait(const struct worker_opts *o, int64_t backoff_ms)
{
	for (int64_t slept = 0; slept < backoff_ms; slept += WORKER_TICK_MS) {
		if (o->stop && o->stop(o->ud))
			return false;
		int64_t ms = backoff_ms - slept < WORKER_TICK_MS
				     ? backoff_ms - slept
				     : WORKER_TICK_MS;
		struct timespec ts = {.tv_sec = ms / 1000,
				      .tv_nsec = (ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	return !(o->stop && o->stop(o->ud));
}

/*
 * A finish lost to a connection error or a full disk: the run's outcome
 * is known, so record it again once the store answers. SC_ELEASE then
 * means the first try did commit (or another worker took over): nothing
 * left to do.
 */
static int finish_again(const struct worker_opts *o, struct sc_clock *clock,
			const struct store_job *job, bool ok,
			struct worker_result *out)
{
	int64_t backoff = FINISH_BACKOFF_MIN_MS;
	int rc = SC_EIO;

	for (int i = 0; i < FINISH_TRIES && finish_retryable(rc); i++) {
		struct sc_err e = {0};
		if (!retry_wait(o, backoff))
			return rc;
		rc = finish(o, clock, job, ok, out, &e);
		backoff = backoff * 2 > FINISH_BACKOFF_MAX_MS
				  ? FINISH_BACKOFF_MAX_MS
				  : backoff * 2;
	}
	if (rc == SC_ELEASE) {
		out->completed = ok;
		return 0;
	}
	return rc;
}

/* ---- the runner's exhaustion ---------------------------------------------- */

/* One try of the give-back. Test seam: worker.give_back:err fails it as
 * the store's allocation fails when the exhaustion reaches it. */
static int give_back_try(const struct worker_opts *o, struct keeper *k,
			 int64_t at, const struct worker_result *out,
			 struct sc_err *err)
{
	if (FAILPOINT_ERR("worker.give_back"))
		return sc_err_set(err, SC_ENOMEM, "out of memory (test point "
				  "worker.give_back)");
	return queue_give_back(o->store, &k->job, at, &out->run_err, err);
}

/* Gives the job back uncounted, due after the backoff (clock ms), with
 * the run's error as the ledger row's message. */
static int give_back(const struct worker_opts *o, struct keeper *k, int rc,
		     struct worker_result *out, struct sc_err *err)
{
	int64_t backoff = o->runner_backoff_ms > 0 ? o->runner_backoff_ms
						   : WORKER_RUNNER_BACKOFF_MS;
	int64_t at = sc_clock_now_ms(k->clock) + backoff;
	char q[SC_ERR_MSG_MAX + 8];

	if (out->run_err.code == 0)
		sc_err_set(&out->run_err, rc, "%s", sc_strerror(rc));
	snprintf(out->error_class, sizeof(out->error_class), "runner");
	int frc = give_back_try(o, k, at, out, err);
	/* The exhaustion may reach the store too (its memory, its files):
	 * the give-back is tried again as a finish is, or the job would sit
	 * ACTIVE until its lease ends and be recovered as stalled, which a
	 * long exhaustion turns into a lost slot. SC_ELEASE after a failed
	 * try: that try committed (or another worker took over). */
	int64_t wait = FINISH_BACKOFF_MIN_MS;
	for (int i = 0; i < FINISH_TRIES && finish_retryable(frc) &&
			!k->released && !k->lost;
	     i++) {
		if (!retry_wait(o, wait))
			break;
		struct sc_err e = {0};
		frc = give_back_try(o, k, at, out, &e);
		if (frc == SC_ELEASE)
			frc = 0;
		wait = wait * 2 > FINISH_BACKOFF_MAX_MS ? FINISH_BACKOFF_MAX_MS
							: wait * 2;
	}
	if (frc == 0 && err)
		sc_err_clear(err);
	out->runner = frc == 0;
	out->released = false;
	out->lease_lost = frc == SC_ELEASE;
	if (frc == 0)
		out->next_ms = at;
	LOG(SC_LOG_WARN, "worker", "event=runner_exhausted job=%lld "
	    "schedule=%s attempt=%d code=%s backoff_ms=%lld given_back=%s "
	    "msg=%s", (long long)k->job.id, k->job.schedule, k->job.attempts,
	    sc_strerror(rc), (long long)backoff, frc ? "no" : "yes",
	    log_quote(q, sizeof(q), out->run_err.msg));
	return frc;
}

/* ---- one job ------------------------------------------------------------- */

/*
 * True when job is bound by its slot's deadline: a manual job (trigger)
 * is not, nor one an operator revived after the deadline (retry, trigger
 * --slot or release of a dead slot: due past the deadline, and its slot
 * has a lost row, which only a DEAD job leaves). A job due past it with
 * no lost row is the scheduler's, late (a stall recovered after the
 * deadline): bound. The ledger is read only in that rare case. A read
 * error counts as bound: the deadline is the safer side.
 */
static bool deadline_binds(struct store *s, const struct store_job *job,
			   int64_t dl)
{
	struct ledger_filter f = {.schedule = job->schedule,
				  .since_ms = job->slot_ms,
				  .until_ms = job->slot_ms + 1,
				  .outcome = LEDGER_LOST, .limit = 1};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	if (dl == INT64_MAX || job->manual)
		return false;
	if (job->run_at_ms <= dl)
		return true;
	if (store_ledger_query(s, &f, &rows, &n, NULL) != 0)
		return true;
	store_ledger_rows_free(rows, n);
	return n == 0;
}

/* The attempt just failed: when its retry would start past the deadline,
 * the failure becomes permanent with class "deadline", so the slot is
 * lost now. */
static void deadline_cut(struct store *s, const struct store_job *job,
			 int64_t dl, int64_t now_ms, struct worker_result *out)
{
	char t[CLOCK_ISO_MAX], msg[sizeof(out->run_err.msg)];

	if (dl == INT64_MAX || out->run_err.permanent ||
	    job->attempts >= job->policy.attempts ||
	    !deadline_binds(s, job, dl))
		return;
	if (sc_retry_next_ms(&job->policy, job->attempts, now_ms,
			     out->run_err.retry_after_ms) <= dl)
		return;
	int n = snprintf(msg, sizeof(msg), "deadline %s passes before "
			 "attempt %d could start: ", clock_format_utc(dl, t),
			 job->attempts + 1);
	/* The cause's text, cut to what is left (on purpose). */
	if (n > 0 && (size_t)n < sizeof(msg)) {
		size_t room = sizeof(msg) - (size_t)n - 1;
		size_t len = strnlen(out->run_err.msg, room);
		memcpy(msg + n, out->run_err.msg, len);
		msg[(size_t)n + len] = '\0';
	}
	memcpy(out->run_err.msg, msg, sizeof(msg));
	out->run_err.permanent = true;
	snprintf(out->error_class, sizeof(out->error_class), "deadline");
}

int worker_run_job(const struct worker_opts *o, const struct store_job *job_in,
		   struct worker_result *out, struct sc_err *err)
{
	struct keeper k = {.o = o, .clock = opts_clock(o), .job = *job_in,
			   .last_hb_mono = clock_mono_ms()};
	const struct store_job *job = &k.job;
	const struct schedule_spec *sched = config_schedule_of(o->config,
							     job->schedule);
	struct schedule_spec renamed;
	int rc;

	/* A job of a schedule renamed since it was queued (renamed_from,
	 * issue 43) runs under the new spec, and its rows (ledger, outbox,
	 * guards, marker) stay under the name the slot was queued under,
	 * with the slot's earlier attempts. A copy, borrowed fields and
	 * all: only the name differs. */
	if (sched && strcmp(sched->name, job->schedule) != 0) {
		renamed = *sched;
		renamed.name = k.job.schedule;
		sched = &renamed;
	}

	k.lease_ms = o->lease_ms > 0 ? o->lease_ms
				     : job->lease_expires_ms - job->started_ms;
	if (sched && sched->overlap == OVERLAP_REPLACE)
		k.replace_poll_ms = REPLACE_POLL_MS;
	if (k.lease_ms <= 0)
		k.lease_ms = QUEUE_LEASE_MS;
	memset(out, 0, sizeof(*out));
	out->next_ms = INT64_MAX;
	if (!sched) {
		/* Config skew (issue 43): the claim takes only the
		 * schedules of the config (queue_overlap_rule), so a job
		 * whose schedule this config lacks was claimed under another
		 * one (a reload in between, or a claimer without the rule).
		 * Not this node's to judge: given back uncounted, for a node
		 * that has the schedule, never failed nor lost for it. */
		struct sc_err e = {0};
		int rrc = queue_release(o->store, &k.job, &e);
		out->released = rrc == 0;
		LOG(SC_LOG_WARN, "worker", "event=unknown-schedule job=%lld "
		       "schedule=%s slot_ms=%lld outcome=%s msg=\"schedule %s "
		       "is not in this node's configuration: the job waits for "
		       "a node that has it\"", (long long)job->id,
		       job->schedule, (long long)job->slot_ms,
		       rrc ? "release-failed" : "released", job->schedule);
		if (rrc && err)
			*err = e;
		return rrc;
	}
	int64_t dl = scheduler_deadline_at(sched, job->slot_ms);
	bool past = sc_clock_now_ms(k.clock) > dl &&
		    deadline_binds(o->store, job, dl);
	if (past) {
		char t[CLOCK_ISO_MAX];
		/* No attempt starts after the deadline: lost, not run. */
		sc_err_set(&out->run_err, SC_ETASK, "deadline %s passed before "
			   "attempt %d started", clock_format_utc(dl, t),
			   job->attempts);
		out->run_err.permanent = true;
		rc = SC_ETASK;
	} else {
		/* A failure of this attempt loses the slot when its retry
		 * would start past the deadline (deadline_cut): the notice
		 * policy then treats it as the last attempt, as it is. */
		int max_attempts = job->policy.attempts;
		if (dl != INT64_MAX && job->attempts < max_attempts &&
		    sc_retry_next_ms(&job->policy, job->attempts,
				     sc_clock_now_ms(k.clock), 0) > dl &&
		    deadline_binds(o->store, job, dl))
			max_attempts = job->attempts;
		const struct orchestrator_ctx ctx = {
			.store = o->store, .clock = k.clock,
			.config = o->config, .auths = o->auths,
			.n_auths = o->n_auths, .tick = keeper_tick,
			.keep = keeper_keep,
			.tick_ud = &k, .tick_ms = WORKER_TICK_MS,
			.run_task = o->run_task, .run_task_ud = o->run_task_ud,
			.max_attempts = max_attempts,
			/* The marker goes with the completion (finish):
			 * one durable commit a run instead of two. */
			.mark_at_finish = true,
			.not_before_ns = o->not_before_ns,
		};
		/* Every outbox, guard, marker and duplicate-row write of
		 * the run commits only while this claim holds the job
		 * (store.h, fencing); the finish below has its own token. */
		rc = sched->overlap == OVERLAP_REPLACE ? turn_take(&k, sched)
						       : 0;
		/* Test seam: the runner out of processes as the run starts. */
		if (rc == 0 && FAILPOINT_ERR("worker.runner"))
			rc = sc_err_set(&out->run_err, SC_EEXHAUSTED, "out of "
					"processes (test point worker.runner)");
		if (rc == 0) {
			store_fence_set(o->store, job->id, job->lease_token);
			if (o->slot_event)
				o->slot_event(o->ud, job, WORKER_EVENT_START);
			rc = orchestrator_run_slot(&ctx, sched, job->slot_ms,
						   job->id, job->attempts,
						   &out->rep, &out->run_err);
			store_fence_clear(o->store);
		}
		turn_drop(&k);
	}
	/* The runner's own exhaustion is not the slot's failure: the job
	 * goes back, uncounted, after a backoff (issue 42). The worker and
	 * the lease are fine, so it is ours to give. */
	if (sched && !past && err_is_runner(rc) && !k.released && !k.lost)
		return give_back(o, &k, rc, out, err);
	bool ok = rc == 0;
	if (!ok) {
		if (out->run_err.code == 0) /* never fail without a reason */
			sc_err_set(&out->run_err, rc, "%s", sc_strerror(rc));
		snprintf(out->error_class, sizeof(out->error_class), "%s",
			 past ? "deadline" : error_class(rc, &out->rep));
		if (!past)
			deadline_cut(o->store, job, dl,
				     sc_clock_now_ms(k.clock), out);
	}
	rc = finish(o, k.clock, job, ok, out, err);
	if (finish_retryable(rc) && !k.released && !k.lost)
		rc = finish_again(o, k.clock, job, ok, out);
	out->released = k.released;
	out->lease_lost = k.lost || (rc == SC_ELEASE && !k.released);
	if (rc == 0 && o->slot_event && (out->completed || out->dead))
		o->slot_event(o->ud, job, out->completed
					  ? WORKER_EVENT_DELIVERED
					  : WORKER_EVENT_LOST);
	return rc;
}

/* ---- stalled recovery ---------------------------------------------------- */

int worker_recover(const struct worker_opts *o, int stall_limit, int *n,
		   size_t *n_lost, struct sc_err *err)
{
	struct store_dead_list dead = {0};
	int got = 0;
	int rc = queue_recover_dead(o->store, stall_limit, &got, &dead, err);

	/* Alert from the list this call's transactions committed, never
	 * from the ledger: a "lost" row another node's recovery wrote at the
	 * same moment is that node's to alert. The list is sound even when
	 * the call failed part way (it holds only committed batches). */
	for (size_t i = 0; i < dead.n; i++) {
		alert_now(o, opts_clock(o), &dead.v[i], NULL);
		if (o->slot_event) {
			struct store_job j = {.id = dead.v[i].job_id,
					      .slot_ms = dead.v[i].slot_ms,
					      .attempts = dead.v[i].attempt,
					      .state = JOB_DEAD};
			snprintf(j.schedule, sizeof(j.schedule), "%s",
				 dead.v[i].schedule);
			o->slot_event(o->ud, &j, WORKER_EVENT_LOST);
		}
	}
	if (dead.n_more)
		LOG(SC_LOG_ERROR, "worker", "event=lost_not_alerted "
		       "n=%zu msg=\"more slots lost in one recovery than "
		       "alerted; see surecron ledger --lost\"", dead.n_more);
	if (n)
		*n = rc ? 0 : got;
	if (n_lost)
		*n_lost = dead.n + dead.n_more;
	store_dead_list_dispose(&dead);
	return rc;
}

/* ---- the claim ------------------------------------------------------------ */

/*
 * Why a claimed slot waited (the overlap-wait warning): true when an
 * earlier slot of its schedule finished after this one was due (the
 * newest ledger row of an earlier slot ends after run_at), i.e. the slot
 * waited for its schedule's own slot; false when it waited for a free
 * worker, or when the ledger cannot tell.
 */
static bool waited_for_own(struct store *s, const struct store_job *job)
{
	struct ledger_filter f = {.schedule = job->schedule,
				  .since_ms = INT64_MIN,
				  .until_ms = job->slot_ms, .limit = 1,
				  .newest_first = true};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	bool own = false;

	if (store_ledger_query(s, &f, &rows, &n, NULL) == 0 && n == 1)
		own = rows[0].finished_ms > job->run_at_ms;
	store_ledger_rows_free(rows, n);
	return own;
}

int worker_claim(struct store *s, const struct config *cfg,
		 struct store_known *known, uint64_t cfg_id, uint64_t *rule_of,
		 const char *name, int64_t ahead_ms, struct store_job *job,
		 size_t *n, bool *skipped, struct sc_err *e)
{
	int rc = 0;

	/* The rule walks every schedule: set it on this handle once per
	 * config (*rule_of: the config id it was set from, 0: none). */
	if (*rule_of != cfg_id &&
	    (rc = queue_overlap_rule_known(s, cfg, known, e)) == 0)
		*rule_of = cfg_id;

	*skipped = false;
	if (!rc)
		rc = queue_claim_ahead(s, name, cfg->lease_ms, ahead_ms, job, 1,
				       n, e);
	if (rc || *n != 1)
		return rc;
	const struct schedule_spec *sp = config_schedule(cfg, job->schedule);
	if (job->overlapped) {
		*n = 0;
		*skipped = true;
		rc = queue_skip(s, job, e);
		/* Another claim took it over meanwhile: its business. */
		return rc == SC_ELEASE ? 0 : rc;
	}
	int64_t waited = sc_clock_now_ms(store_clock(s)) - job->run_at_ms;
	int64_t next = 0;
	if (sp && (sp->overlap == OVERLAP_QUEUE ||
		   sp->overlap == OVERLAP_BUFFER_ONE) && job->attempts == 1 &&
	    waited > 0 &&
	    sc_cron_next(sp->expr, sp->zone, job->slot_ms, &next, NULL) == 0 &&
	    waited > queue_overlap_wait_warn_ms(next - job->slot_ms)) {
		char slot[CLOCK_ISO_MAX];
		bool own = waited_for_own(s, job);
		LOG(SC_LOG_WARN, "queue", "event=overlap-wait schedule=%s "
		       "slot=%s job=%lld waited_ms=%lld warn_ms=%lld "
		       "cause=%s msg=\"%s\"", job->schedule,
		       clock_format_utc(job->slot_ms, slot),
		       (long long)job->id, (long long)waited,
		       (long long)queue_overlap_wait_warn_ms(next -
							     job->slot_ms),
		       own ? "schedule" : "workers",
		       own ? "the slot waited for an earlier slot of its "
			     "schedule to finish (overlap: queue)"
			   : "the slot waited for a free worker: every "
			     "worker was busy with other schedules' slots "
			     "(worker.concurrency)");
	}
	return 0;
}
