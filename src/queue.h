/*
 * queue.h - the job queue: one job per slot, leases, retries with backoff,
 * stalled recovery. Built on the store (store.h); the state machine and its
 * invariants are documented at the top of queue.c.
 *
 * Every function takes the caller's store handle and inherits its
 * threading rule: one thread at a time per handle; several handles (threads,
 * processes, machines) share one queue safely.
 *
 * A `struct store_job` handed out by queue_claim is the worker's ticket:
 * pass it back unchanged to heartbeat / complete / fail / release. Each is
 * fenced by the ticket's lease_token: once another claim took the job over
 * (after this worker's lease expired and the job was recovered), every call
 * with the old ticket returns SC_ELEASE and changes nothing.
 */
#ifndef SURECRON_QUEUE_H
#define SURECRON_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct config;

#define QUEUE_LEASE_MS (5 * 60 * 1000) /* default lease of a claim */
#define QUEUE_STALL_LIMIT 2 /* default stalls tolerated; the next is fatal */

/*
 * Enqueues the slot (schedule, slot_ms) with its retry policy, due at
 * slot_ms. Idempotent: a slot that already has a job (in any state) is
 * left alone. *job_id gets the job either way, *created says whether it is
 * new (both may be NULL). Errors: SC_EINVAL, store errors.
 */
int queue_enqueue(struct store *s, const char *schedule, int64_t slot_ms,
		  const struct sc_retry_policy *policy, int64_t *job_id,
		  bool *created, struct sc_err *err);

/* queue_enqueue, due at run_at_ms instead of the slot (a schedule with
 * `jitter:`: run_at = slot + scheduler_jitter_ms; the job keeps its slot,
 * so the ledger, the idempotency keys and the messages do too). */
int queue_enqueue_at(struct store *s, const char *schedule, int64_t slot_ms,
		     const struct sc_retry_policy *policy, int64_t run_at_ms,
		     int64_t *job_id, bool *created, struct sc_err *err);

/* Enqueues n slots of one schedule in one transaction (idempotent). */
int queue_enqueue_many(struct store *s, const char *schedule,
		       const int64_t *slots_ms, size_t n,
		       const struct sc_retry_policy *policy,
		       struct sc_err *err);

/* The slots of several schedules and their states in one transaction
 * (store_job_enqueue_batch): a scheduler tick where many are due at once.
 * Sets each v[i].created. */
int queue_enqueue_batch(struct store *s, struct store_enqueue *v, size_t n,
			struct sc_err *err);

/*
 * Manual trigger (`surecron trigger`): makes sure the slot runs now. A new
 * job is enqueued as manual and due now; a DEAD job is revived with a fresh
 * attempt budget; a READY or ACTIVE job is left as it is (*created false).
 * SC_ESTATE when the slot's job is already DONE, or when the slot has a
 * marker and no job (prune removed the DONE job row, issue 15).
 */
int queue_trigger(struct store *s, const char *schedule, int64_t slot_ms,
		  const struct sc_retry_policy *policy, int64_t *job_id,
		  bool *created, struct sc_err *err);

/*
 * Claims up to max due jobs, earliest first, in one transaction, for worker
 * with a lease of lease_ms. Fills jobs[0..*n); *n == 0 when nothing is due.
 * Each claim starts an attempt (attempts + 1) and carries a fresh token.
 */
int queue_claim(struct store *s, const char *worker, int64_t lease_ms,
		struct store_job *jobs, size_t max, size_t *n,
		struct sc_err *err);

/* queue_claim that also takes jobs due within ahead_ms. The caller must
 * not start a claimed job before its run_at_ms (the daemon claims a few
 * milliseconds early so the task starts on the due instant itself). */
int queue_claim_ahead(struct store *s, const char *worker,
		      int64_t lease_ms, int64_t ahead_ms,
		      struct store_job *jobs, size_t max, size_t *n,
		      struct sc_err *err);

/* Extends the lease of a claimed job to now + lease_ms and updates
 * job->lease_expires_ms. SC_ELEASE when the claim is no longer current. */
int queue_heartbeat(struct store *s, struct store_job *job,
		    int64_t lease_ms, struct sc_err *err);

/* Completes the attempt: the job is DONE, with a "success" ledger row
 * (details_json may be NULL). SC_ELEASE as above. */
int queue_complete(struct store *s, const struct store_job *job,
		   const char *details_json, struct sc_err *err);

/* queue_complete of jobs[0..n) that are ready together, in one commit
 * where the store can (store_job_complete_many: the same durability as
 * one by one). rcs[i] (caller's, n entries): 0 or SC_ELEASE / SC_ENOENT
 * for job i. An error return: retry each with queue_complete. */
int queue_complete_many(struct store *s, const struct store_job *jobs,
			size_t n, const char *details_json, int *rcs,
			struct sc_err *err);

/* queue_complete, and the job's slot marked done (store_slot_mark) in the
 * same commit, made durable: the slot is done exactly when its attempt
 * is complete. SC_ELEASE: neither is written. */
int queue_complete_marked(struct store *s, const struct store_job *job,
			  const char *details_json, struct sc_err *err);

/*
 * Fails the attempt with `cause` (its message goes to the ledger; its
 * retry_after_ms is a "not before" hint; permanent means do not retry).
 * error_class names the layer that failed ("task", "delivery", ...).
 *   - attempts left and not permanent: READY again at
 *     sc_retry_next_ms(policy, attempts, now, hint), "failed" row;
 *     *next_ms gets that instant, *dead false;
 *   - otherwise: DEAD, "lost" row (the slot is lost); *dead true,
 *     *next_ms INT64_MAX.
 * next_ms and dead may be NULL. SC_ELEASE as above.
 */
int queue_fail(struct store *s, const struct store_job *job,
	       const char *error_class, const struct sc_err *cause,
	       const char *details_json, int64_t *next_ms, bool *dead,
	       struct sc_err *err);

/*
 * Sets the rule of s's claims from cfg: the overlap rule
 * (store_overlap_set: every schedule of cfg is `queue` unless its
 * `overlap:` says skip or allow) and the schedules it may claim
 * (store_claim_known_set, issue 43): the names of cfg's schedules and
 * their renamed_from names, so that a node never claims a job of a
 * schedule its config lacks (a rolling deploy's newer schedule); such a
 * job waits for a node that has it. Errors: SC_ENOMEM, SC_EINVAL (the
 * previous rule may stay in part: the caller sets it again before its
 * next claim). cfg borrowed.
 */
int queue_overlap_rule(struct store *s, const struct config *cfg,
		       struct sc_err *err);

/*
 * queue_overlap_rule with the known set built beforehand by
 * queue_known_new (borrowed: s takes a reference of its own), so that the
 * handles of one config share one copy (store_known_new); known NULL:
 * built here, as queue_overlap_rule does. queue_known_new makes cfg's
 * set (every schedule's name and renamed_from names) into *out, one
 * reference (store_known_free): 0, SC_EINVAL or SC_ENOMEM.
 */
int queue_overlap_rule_known(struct store *s, const struct config *cfg,
			     struct store_known *known, struct sc_err *err);
int queue_known_new(const struct config *cfg, struct store_known **out,
		    struct sc_err *err);

/*
 * Ends a claimed job that store_job.overlapped marks (an `overlap: skip`
 * schedule whose other slot was running): DONE, not run, with a
 * LEDGER_SKIPPED row, error_class "overlap" and details {"cause":
 * "overlap"}. Never retried, never lost, never alerted. SC_ELEASE as
 * queue_complete.
 */
int queue_skip(struct store *s, const struct store_job *job,
	       struct sc_err *err);

/* How long a slot of a `queue` schedule may wait for the slot before it
 * to finish before the wait is worth a warning: max(10 s, 10 % of
 * period_ms), period_ms the schedule's interval at that slot. */
int64_t queue_overlap_wait_warn_ms(int64_t period_ms);

/* Gives a claimed job back without counting the attempt (shutdown). */
int queue_release(struct store *s, const struct store_job *job,
		  struct sc_err *err);

/* Gives a claimed job back without counting the attempt because the
 * runner could not run it (out of descriptors, processes or memory,
 * issue 42): READY at run_at_ms (a backoff), a "released" ledger row of
 * class "runner" with cause's message. SC_ELEASE as queue_release. */
int queue_give_back(struct store *s, const struct store_job *job,
		    int64_t run_at_ms, const struct sc_err *cause,
		    struct sc_err *err);

/*
 * Recovers jobs whose lease expired (their worker died or hung): each
 * attempt gets a "stalled" ledger row and counts; the job is due again, or
 * DEAD with a "lost" row when its attempts are used up or it stalled more
 * than stall_limit times (so a task that kills its worker cannot loop
 * forever). stall_limit counts the stalls tolerated: 0 makes the first
 * stall fatal, < 0 is SC_EINVAL; there is no "unlimited". It becomes the
 * store's max_stalls = stall_limit + 1, and the verdict and its ledger
 * texts are store_stall_rule's (store.h), one rule for every backend.
 * *n (may be NULL) gets the number of jobs recovered.
 */
int queue_recover(struct store *s, int stall_limit, int *n,
		  struct sc_err *err);

/*
 * queue_recover that also hands back, in *dead (emptied first; release
 * with store_dead_list_dispose), the jobs whose DEAD transition THIS call
 * committed (store_job_recover_dead). Several nodes recovering at once
 * each get only their own: whoever lists a job sends its lost-slot alert,
 * so the alert goes out once.
 */
int queue_recover_dead(struct store *s, int stall_limit, int *n,
		       struct store_dead_list *dead, struct sc_err *err);

/* Manual retry of a DEAD job: READY now, with `budget` more attempts (the
 * schedule's policy; <= 0: as many as the job had). Attempt numbers go on
 * from the last one (store_job_revive). SC_ESTATE if the job is not DEAD,
 * SC_ENOENT if there is none. */
int queue_retry_dead(struct store *s, int64_t job_id, int budget,
		     struct sc_err *err);

/* When the next job falls due or the next lease expires (INT64_MAX when
 * nothing is pending): how long a worker may sleep. */
int queue_next_due(struct store *s, int64_t *out_ms, struct sc_err *err);

/* Static name of a job state ("ready", "active", "done", "dead"). */
const char *queue_state_name(enum job_state st);

#endif
