/*
 * queue.c - the job queue (queue.h): the job state machine on top of the
 * store. The store makes each transition one transaction; this file decides
 * which transition to make (backoff arithmetic, give up or retry) and keeps
 * the backends free of policy.
 *
 * Job states
 * ----------
 *
 *                 queue_enqueue / queue_trigger (new slot)
 *                                |
 *                                v
 *     queue_release  +------> READY <-----------------------------+
 *     (not counted)  |           |                                |
 *                    |           | queue_claim (attempts + 1,     |
 *                    |           |   fresh lease token)           |
 *                    |           v                                |
 *                    +------- ACTIVE -------------------------+   |
 *                                |      |        |            |   |
 *                 queue_complete |      |        | queue_fail | queue_recover
 *                                v      |        | (retry)    | (lease expired,
 *                              DONE     |        +------------+   budget left)
 *                                       |
 *                  queue_fail (no attempts left or permanent),
 *                  queue_recover (no attempts left or stall limit)
 *                                       v
 *                                     DEAD ---- queue_retry_dead,
 *                                                queue_trigger --> READY
 *
 * Transitions (function that performs it; ledger row written in the same
 * transaction):
 *   (none) -> READY   [queue_enqueue(_at, _many), queue_trigger]            -
 *   READY  -> ACTIVE  [queue_claim] claim order and overlap rule:       -
 *                     store.h (store_overlap_set)
 *   ACTIVE -> ACTIVE  [queue_heartbeat] lease extended                    -
 *   ACTIVE -> DONE    [queue_complete]                            "success"
 *   ACTIVE -> DONE    [queue_skip] overlap: skip, not run         "skipped"
 *   ACTIVE -> READY   [queue_fail] run_at = backoff or hint        "failed"
 *   ACTIVE -> DEAD    [queue_fail] attempts used up or permanent     "lost"
 *   ACTIVE -> READY   [queue_release] attempt not counted        "released"
 *   ACTIVE -> READY   [queue_give_back] the runner could not run it:
 *                     at a backoff, attempt not counted  "released" (runner)
 *   ACTIVE -> READY   [queue_recover] lease expired               "stalled"
 *   ACTIVE -> DEAD    [queue_recover] budget or stall limit "stalled"+"lost"
 *                     (queue_recover_dead: listed to the caller that
 *                     committed it, which alone alerts)
 *   DEAD   -> READY   [queue_retry_dead, queue_trigger] fresh budget      -
 *                     (attempts go on counting: max_attempts grows)
 *
 * Invariants
 *   READY:  lease_expires = 0; attempts < policy.attempts (a job with no
 *           attempt left never waits, it is DEAD); claimable once
 *           run_at <= now.
 *   ACTIVE: exactly one claim holds it: lease_token is the token of the
 *           latest claim, and only that token may move it; attempts counts
 *           the running attempt; started = the claim's instant.
 *   DONE:   terminal; the ledger holds exactly one "success" row for it.
 *   DEAD:   terminal until a manual retry; the ledger holds a "lost" row
 *           for its last attempt (durable: fsync'd).
 *   Always: (schedule, slot) identifies at most one job; lease tokens of
 *           a job only grow; for a job that is not ACTIVE, each attempt
 *           1..attempts (a revival keeps counting) has exactly one ending row
 *           in the ledger: success, failed, stalled, or lost (written by
 *           queue_fail); a job that dies by a stall has a lost row after
 *           the stalled row of the same attempt. "released" rows end no
 *           attempt (the next claim reuses the number).
 *
 * Failpoints (failpoint.h; test builds only) - the crash test kills
 * workers at each of them:
 *   queue.after_claim             the claim committed, nothing ran yet
 *   queue.before_complete_commit  completion written, not committed (in
 *                                 the backend's job_finish, store.h)
 *   queue.after_complete_commit   completion committed, not yet returned
 *   queue.in_retry_schedule       inside the fail transaction, retry row
 *                                 and new run_at written, not committed
 *                                 (in the backend's job_finish)
 *   queue.after_fail_commit       the fail transaction committed
 */
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "queue.h"
#include "retry.h"

const char *queue_state_name(enum job_state st)
{
	switch (st) {
	case JOB_READY:
		return "ready";
	case JOB_ACTIVE:
		return "active";
	case JOB_DONE:
		return "done";
	case JOB_DEAD:
		return "dead";
	}
	return "unknown";
}

static int64_t now_ms(struct store *s)
{
	return sc_clock_now_ms(store_clock(s));
}

int queue_enqueue(struct store *s, const char *schedule, int64_t slot_ms,
		  const struct sc_retry_policy *policy, int64_t *job_id,
		  bool *created, struct sc_err *err)
{
	return queue_enqueue_at(s, schedule, slot_ms, policy, slot_ms, job_id,
				created, err);
}

int queue_enqueue_at(struct store *s, const char *schedule, int64_t slot_ms,
		     const struct sc_retry_policy *policy, int64_t run_at_ms,
		     int64_t *job_id, bool *created, struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	bool made = false;
	int64_t id = 0;
	int rc = store_job_enqueue(s, schedule, slot_ms, policy, run_at_ms,
				   false, &id, &made, err);

	if (rc)
		return rc;
	if (made)
		LOG(SC_LOG_DEBUG, "queue",
		       "event=enqueue schedule=%s slot=%s job=%lld", schedule,
		       clock_format_utc(slot_ms, iso), (long long)id);
	if (job_id)
		*job_id = id;
	if (created)
		*created = made;
	return 0;
}

int queue_enqueue_many(struct store *s, const char *schedule,
		       const int64_t *slots_ms, size_t n,
		       const struct sc_retry_policy *policy,
		       struct sc_err *err)
{
	return store_job_enqueue_many(s, schedule, slots_ms, n, policy, err);
}

int queue_enqueue_batch(struct store *s, struct store_enqueue *v, size_t n,
			struct sc_err *err)
{
	return store_job_enqueue_batch(s, v, n, err);
}

int queue_trigger(struct store *s, const char *schedule, int64_t slot_ms,
		  const struct sc_retry_policy *policy, int64_t *job_id,
		  bool *created, struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	struct store_job j;
	bool made = false, marked = false;
	int64_t id = 0;
	/* A slot with a marker is complete even when prune took its DONE
	 * job row (issue 15): a new job would deliver it twice. */
	int rc = store_slot_is_marked(s, schedule, slot_ms, &marked, err);

	if (rc)
		return rc;
	if (marked && store_job_find(s, schedule, slot_ms, &j, NULL) != 0)
		return sc_err_set(err, SC_ESTATE,
				  "already completed (its slot marker is "
				  "kept); running it again would deliver it "
				  "twice");
	rc = store_job_enqueue(s, schedule, slot_ms, policy, now_ms(s), true,
			       &id, &made, err);
	if (rc)
		return rc;
	if (!made) {
		rc = store_job_get(s, id, &j, err);
		if (rc)
			return rc;
		if (j.state == JOB_DONE)
			return sc_err_set(err, SC_ESTATE,
					  "already completed by job %lld; "
					  "running it again would deliver "
					  "it twice", (long long)id);
		if (j.state == JOB_DEAD) {
			rc = store_job_revive(s, id,
					      policy ? policy->attempts : 0,
					      err);
			if (rc)
				return rc;
			made = true;
		}
	}
	LOG(SC_LOG_INFO, "queue",
	       "event=trigger schedule=%s slot=%s job=%lld new=%d", schedule,
	       clock_format_utc(slot_ms, iso), (long long)id, made);
	if (job_id)
		*job_id = id;
	if (created)
		*created = made;
	return 0;
}

int queue_claim(struct store *s, const char *worker, int64_t lease_ms,
		struct store_job *jobs, size_t max, size_t *n,
		struct sc_err *err)
{
	return queue_claim_ahead(s, worker, lease_ms, 0, jobs, max, n, err);
}

int queue_claim_ahead(struct store *s, const char *worker,
		      int64_t lease_ms, int64_t ahead_ms,
		      struct store_job *jobs, size_t max, size_t *n,
		      struct sc_err *err)
{
	int rc = store_job_claim_ahead(s, worker, lease_ms, ahead_ms, jobs,
				       max, n, err);

	if (rc || *n == 0)
		return rc;
	FAILPOINT("queue.after_claim");
	for (size_t i = 0; i < *n; i++)
		LOG(SC_LOG_DEBUG, "queue",
		       "event=claim job=%lld schedule=%s attempt=%d worker=%s",
		       (long long)jobs[i].id, jobs[i].schedule,
		       jobs[i].attempts, worker);
	return 0;
}

int queue_heartbeat(struct store *s, struct store_job *job,
		    int64_t lease_ms, struct sc_err *err)
{
	int rc;

	if (!job)
		return sc_err_set(err, SC_EINVAL, "job is NULL");
	rc = store_job_heartbeat(s, job->id, job->lease_token, lease_ms, err);
	if (!rc)
		job->lease_expires_ms = now_ms(s) + lease_ms;
	return rc;
}

static int complete(struct store *s, const struct store_job *job,
		    const char *details_json, bool mark, struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	struct ledger_row row = {.outcome = LEDGER_SUCCESS,
				 .details_json = (char *)details_json};
	int rc;

	if (!job)
		return sc_err_set(err, SC_EINVAL, "job is NULL");
	/* The claimed job as the claim returned it: the store need not
	 * read it back (store_job_finish). */
	row.job_id = job->id;
	memcpy(row.schedule, job->schedule, sizeof(row.schedule));
	row.slot_ms = job->slot_ms;
	row.attempt = job->attempts;
	row.started_ms = job->started_ms;
	rc = mark ? store_job_complete_marked(s, job->id, job->lease_token,
					      &row, err)
		  : store_job_finish(s, job->id, job->lease_token, JOB_DONE, 0,
				     &row, err);
	if (rc)
		return rc;
	FAILPOINT("queue.after_complete_commit");
	LOG(SC_LOG_INFO, "queue",
	       "event=done job=%lld schedule=%s slot=%s attempt=%d",
	       (long long)job->id, job->schedule,
	       clock_format_utc(job->slot_ms, iso),
	       job->attempts);
	return 0;
}

int queue_complete(struct store *s, const struct store_job *job,
		   const char *details_json, struct sc_err *err)
{
	return complete(s, job, details_json, false, err);
}

int queue_complete_many(struct store *s, const struct store_job *jobs,
			size_t n, const char *details_json, int *rcs,
			struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	struct ledger_row row = {.outcome = LEDGER_SUCCESS,
				 .details_json = (char *)details_json};
	int rc = store_job_complete_many(s, jobs, n, &row, rcs, err);

	if (rc)
		return rc;
	FAILPOINT("queue.after_complete_commit");
	for (size_t i = 0; i < n; i++)
		if (rcs[i] == 0)
			LOG(SC_LOG_INFO, "queue",
			    "event=done job=%lld schedule=%s slot=%s "
			    "attempt=%d",
			    (long long)jobs[i].id, jobs[i].schedule,
			    clock_format_utc(jobs[i].slot_ms, iso),
			    jobs[i].attempts);
	return 0;
}

int queue_complete_marked(struct store *s, const struct store_job *job,
			  const char *details_json, struct sc_err *err)
{
	return complete(s, job, details_json, true, err);
}

int queue_overlap_rule(struct store *s, const struct config *cfg,
		       struct sc_err *err)
{
	return queue_overlap_rule_known(s, cfg, NULL, err);
}

int queue_overlap_rule_known(struct store *s, const struct config *cfg,
			     struct store_known *known, struct sc_err *err)
{
	size_t n = cfg ? cfg->n_schedules : 0, n_allow = 0, n_skip = 0;
	const char **v = n ? calloc(n, sizeof(*v)) : NULL;

	if (n && !v)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	/* allow names from the front of v, skip names from its back. */
	for (size_t i = 0; i < n; i++) {
		const struct schedule_spec *sp = &cfg->schedules[i];
		if (sp->overlap == OVERLAP_ALLOW)
			v[n_allow++] = sp->name;
		else if (sp->overlap == OVERLAP_SKIP)
			v[n - ++n_skip] = sp->name;
	}
	int rc = store_overlap_set(s, true, n_allow ? v : NULL, n_allow,
				   n_skip ? v + n - n_skip : NULL, n_skip, err);
	free(v);
	if (rc)
		return rc;
	if (known) {
		store_known_use(s, known);
		return 0;
	}
	struct store_known *k = NULL;
	rc = queue_known_new(cfg, &k, err);
	if (!rc)
		store_known_use(s, k);
	store_known_free(k);
	return rc;
}

int queue_known_new(const struct config *cfg, struct store_known **out,
		    struct sc_err *err)
{
	size_t n = cfg ? cfg->n_schedules : 0;

	/* The names this node can run (worker.c: config_schedule_of). */
	size_t n_known = n;
	for (size_t i = 0; i < n; i++)
		n_known += cfg->schedules[i].n_renamed_from;
	const char **k = calloc(n_known + 1, sizeof(*k));
	if (!k)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	n_known = 0;
	for (size_t i = 0; i < n; i++) {
		const struct schedule_spec *sp = &cfg->schedules[i];
		k[n_known++] = sp->name;
		for (size_t j = 0; j < sp->n_renamed_from; j++)
			k[n_known++] = sp->renamed_from[j];
	}
	int rc = store_known_new(k, n_known, out, err);
	free(k);
	return rc;
}

int queue_skip(struct store *s, const struct store_job *job,
	       struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	struct ledger_row row = {
		.outcome = LEDGER_SKIPPED, .error_class = "overlap",
		.error_msg = (char *)"another slot of the schedule was running "
				     "(overlap: skip)",
		.details_json = (char *)"{\"cause\":\"overlap\"}",
	};
	int rc;

	if (!job)
		return sc_err_set(err, SC_EINVAL, "job is NULL");
	/* The row's interval is the claim's instant, not a run: started =
	 * finished, so no reader takes it for an overlapping run. */
	row.finished_ms = job->started_ms;
	rc = store_job_finish(s, job->id, job->lease_token, JOB_DONE, 0, &row,
			      err);
	if (rc)
		return rc;
	LOG(SC_LOG_WARN, "queue",
	       "event=skipped job=%lld schedule=%s slot=%s cause=overlap",
	       (long long)job->id, job->schedule,
	       clock_format_utc(job->slot_ms, iso));
	return 0;
}

int64_t queue_overlap_wait_warn_ms(int64_t period_ms)
{
	int64_t tenth = period_ms > 0 ? period_ms / 10 : 0;

	return tenth > 10000 ? tenth : 10000;
}

int queue_fail(struct store *s, const struct store_job *job,
	       const char *error_class, const struct sc_err *cause,
	       const char *details_json, int64_t *next_ms, bool *dead,
	       struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	static const struct sc_err unknown = {.code = SC_ETASK,
					      .msg = "failed (no detail)"};
	struct ledger_row row = {0};
	int64_t now, at;
	bool give_up;
	int rc;

	if (!job)
		return sc_err_set(err, SC_EINVAL, "job is NULL");
	if (!cause || !cause->code)
		cause = &unknown;
	now = now_ms(s);
	/* job->attempts already counts this attempt (claim added it). */
	give_up = cause->permanent || job->attempts >= job->policy.attempts;
	at = give_up ? INT64_MAX
		     : sc_retry_next_ms(&job->policy, job->attempts, now,
					cause->retry_after_ms);
	snprintf(row.outcome, sizeof(row.outcome), "%s",
		 give_up ? LEDGER_LOST : LEDGER_FAILED);
	snprintf(row.error_class, sizeof(row.error_class), "%s",
		 error_class && *error_class ? error_class : "task");
	row.error_msg = (char *)cause->msg;
	row.retry_hint_ms = cause->retry_after_ms;
	row.details_json = (char *)details_json;
	row.finished_ms = now; /* the instant the backoff counts from */

	rc = store_job_finish(s, job->id, job->lease_token,
			      give_up ? JOB_DEAD : JOB_READY, give_up ? 0 : at,
			      &row, err);
	if (rc)
		return rc;
	FAILPOINT("queue.after_fail_commit");
	if (give_up)
		LOG(SC_LOG_ERROR, "queue",
		       "event=lost job=%lld schedule=%s slot=%s attempt=%d "
		       "permanent=%d",
		       (long long)job->id, job->schedule,
		       clock_format_utc(job->slot_ms, iso), job->attempts,
		       cause->permanent);
	else
		LOG(SC_LOG_WARN, "queue",
		       "event=retry job=%lld schedule=%s slot=%s attempt=%d "
		       "next_in_ms=%lld",
		       (long long)job->id, job->schedule,
		       clock_format_utc(job->slot_ms, iso), job->attempts,
		       (long long)(at - now));
	if (next_ms)
		*next_ms = at;
	if (dead)
		*dead = give_up;
	return 0;
}

int queue_release(struct store *s, const struct store_job *job,
		  struct sc_err *err)
{
	if (!job)
		return sc_err_set(err, SC_EINVAL, "job is NULL");
	return store_job_release(s, job->id, job->lease_token, err);
}

int queue_give_back(struct store *s, const struct store_job *job,
		    int64_t run_at_ms, const struct sc_err *cause,
		    struct sc_err *err)
{
	if (!job)
		return sc_err_set(err, SC_EINVAL, "job is NULL");
	return store_job_give_back(s, job->id, job->lease_token, run_at_ms,
				   "runner", cause ? cause->msg : "", err);
}

int queue_recover(struct store *s, int stall_limit, int *n,
		  struct sc_err *err)
{
	return queue_recover_dead(s, stall_limit, n, NULL, err);
}

int queue_recover_dead(struct store *s, int stall_limit, int *n,
		       struct store_dead_list *dead, struct sc_err *err)
{
	int got = 0;
	int rc;

	if (dead) {
		dead->n = 0;
		dead->n_more = 0;
	}
	if (stall_limit < 0)
		return sc_err_set(err, SC_EINVAL, "stall limit must be >= 0");
	/* The store's max_stalls is the stall that is fatal: one more than
	 * the stalls tolerated. */
	rc = store_job_recover_dead(s, stall_limit < INT_MAX ? stall_limit + 1
							     : INT_MAX,
				    &got, dead, err);
	if (rc)
		return rc;
	if (got)
		LOG(SC_LOG_WARN, "queue", "event=recover stalled=%d", got);
	if (n)
		*n = got;
	return 0;
}

int queue_retry_dead(struct store *s, int64_t job_id, int budget,
		     struct sc_err *err)
{
	int rc = store_job_revive(s, job_id, budget, err);

	if (!rc)
		LOG(SC_LOG_INFO, "queue", "event=revive job=%lld",
		       (long long)job_id);
	return rc;
}

int queue_next_due(struct store *s, int64_t *out_ms, struct sc_err *err)
{
	return store_job_next_due(s, out_ms, err);
}
