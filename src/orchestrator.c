/*
 * orchestrator.c - runs a slot's task group and applies the outcome rule.
 *
 * The outcome rule (DESIGN.md), as this file implements it:
 *
 *            orchestrator_run_slot(schedule, slot, attempt)
 *                          |
 *               slot marked? --yes--> return 0 (never run again)
 *                          |no
 *      copies of removed targets? --yes--> each closed: ABANDONED and an
 *                          |                 "abandoned" ledger row
 *         outbox has the slot? --yes--> RESEND (no task runs) ----------+
 *                          |no                                           |
 *        run every task in order (a failure never stops the next)        |
 *                          |                                             |
 *        failed = #FAILED, deliverable = any summary or preview          |
 *                          |                                             |
 *     +--------------------+--------------------+                        |
 *     | failed > 0 and     | otherwise, and     | otherwise, and         |
 *     | no deliverable,    | deliverable        | no deliverable         |
 *     | or short of expect | (maybe + failures) | (all skipped)          |
 *     v                    v                    v                        |
 *  FAILED RUN          compose result        mark the slot (*)           |
 *  notice to each      (+ a notice line      return 0, nothing sent      |
 *  target its policy   per failed task)                                  |
 *  lets speak, direct      |                                             |
 *  (errors: warnings)      |                                             |
 *  NO guard, NO marker  outbox_stage: outbox row for EVERY target        |
 *  return FIRST task       |  first, before any send                     |
 *  error (+hint,           v                                             |
 *  permanence)         outbox_flush <-------------------------------- -+
 *  -> job fails        each target without a guard:
 *  -> queue retries      SENDING -> send -> SENT (the guard) | FAILED
 *                          |
 *                 all SENT? --no--> return first delivery error
 *                          |yes      -> job fails -> retry RESENDs
 *                       mark the slot (*)    from the outbox (tasks not rerun)
 *                       return 0 -> job completes
 *
 *   transitions: (none) -> RUN [orchestrator_run_slot]; RUN -> FAILED RUN
 *   [failed_run]; RUN -> STAGED [outbox_stage]; STAGED -> SENT per
 *   target [outbox_flush]; SENT(all) -> MARKED [mark_done].
 *
 *   (*) mark_done: store_slot_mark, or, when the caller asks for it
 *   (ctx->mark_at_finish: worker.c does), rep->mark_slot, and the caller
 *   writes the marker in the same commit as the job's completion. Either
 *   way the slot is done only once the marker is durable; a crash before
 *   that leaves it to the next attempt, which finds every target's guard
 *   and sends nothing again (or, for an all-skipped run, runs its tasks
 *   again: nothing of them was kept).
 *
 *   short of expect (falls_short): with `expect` set, fewer previews than
 *   min_previews or fewer summary characters (code points, across the
 *   tasks) than min_summary_chars; exactly at a threshold meets it. An
 *   all-skipped run has neither, so with `expect` it falls short too.
 *   Its error names the expectation and both numbers, is never
 *   permanent, and marks the report (error class "expectation").
 *
 *   notice policy (notice_for), per target: the target's `notices:` if
 *   set, else the schedule's. every: each failed attempt; final: only the
 *   attempt that loses the slot (permanent error, or the job's max
 *   attempts reached), whose notice says so with the attempt count;
 *   none: never. The policy changes only the sends: the run's error, so
 *   the ledger row's outcome, attempt and error class, is the same under
 *   all three.
 *
 * Invariants:
 *   - on the failure path nothing that blocks a retry (send guard, slot
 *     marker, outbox row) is written before the job fails;
 *   - the run's error is the first failed task's (for a hollow run, the
 *     expectation it missed); a notice that cannot be sent never replaces
 *     it (err_copy/first-error-wins, notices use their own sc_err);
 *   - a result is generated once: once any outbox row of the slot exists,
 *     later attempts resend the stored message and never run tasks;
 *   - the slot marker is written (or asked of the caller) only after
 *     every target's row is SENT;
 *   - a run whose lease is lost (ctx->tick answers non-zero) stops where it
 *     is and writes or sends nothing more: the slot has a new owner;
 *   - a task the runner could not start for want of descriptors,
 *     processes or memory (err_is_runner) ends the run with that error
 *     before any notice or staging: the attempt was the runner's;
 *   - the caller (worker.c) fences the store handle to the job's lease
 *     for the run (store_fence_set), so a worker that missed its
 *     heartbeats (it was paused) cannot write an outbox state, a guard,
 *     the marker or a "duplicate" row once another claim took the job: the
 *     write fails with SC_ELEASE and the run stops there. This file only
 *     checks that fence before a direct notice (store_fence_check); it
 *     never touches the queue or the lease itself;
 *   - a result delivered after the slot's `deadline:` (only a manual run
 *     gets there: worker.c starts no other attempt past it) says so:
 *     "late": true in the message and in the ledger row's details.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "failpoint.h"
#include "http.h"
#include "log.h"
#include "orchestrator.h"
#include "scheduler.h"
#include "task.h"

void orchestrator_report_dispose(struct orchestrator_report *r)
{
	if (!r)
		return;
	free(r->details_json);
	memset(r, 0, sizeof(*r));
}

static struct sc_clock *ctx_clock(const struct orchestrator_ctx *ctx)
{
	return ctx->clock ? ctx->clock : store_clock(ctx->store);
}

/* ---- token cache of per-run auth providers, kept in the store --------- */

static int tok_get(void *ud, const char *provider, char **token,
		   int64_t *expires_at_ms)
{
	return store_token_get(ud, provider, token, expires_at_ms, NULL);
}

static int tok_put(void *ud, const char *provider, const char *token,
		   int64_t expires_at_ms)
{
	return store_token_put(ud, provider, token, expires_at_ms, NULL);
}

static int tok_drop(void *ud, const char *provider)
{
	return store_token_drop(ud, provider, NULL);
}

/* ---- details for the ledger ------------------------------------------ */

static char *details(const struct task_spec *tasks,
		     const struct task_result *res, size_t n,
		     json_t *notice_errors)
{
	json_t *o = json_object(), *arr = json_array();
	char *s = NULL;

	if (!o || !arr)
		goto done;
	for (size_t i = 0; i < n; i++) {
		const char *oc = res[i].outcome == TASK_DELIVER ? "deliver"
				 : res[i].outcome == TASK_SKIP	 ? "skip"
								 : "failed";
		json_t *t = json_pack("{s:s, s:s}", "task", tasks[i].name,
				      "outcome", oc);
		if (t && res[i].outcome != TASK_DELIVER && res[i].reason)
			json_object_set_new(t, res[i].outcome == TASK_SKIP
						       ? "reason"
						       : "error",
					    json_string(res[i].reason));
		if (t && res[i].outcome == TASK_FAILED) {
			if (res[i].err.retry_after_ms)
				json_object_set_new(
					t, "retry_after_ms",
					json_integer(res[i].err.retry_after_ms));
			if (res[i].err.permanent)
				json_object_set_new(t, "permanent", json_true());
		}
		json_array_append_new(arr, t);
	}
	json_object_set(o, "tasks", arr);
	if (notice_errors && json_array_size(notice_errors))
		json_object_set(o, "notice_errors", notice_errors);
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
done:
	json_decref(arr);
	json_decref(o);
	return s;
}

/* ---- the two paths ------------------------------------------------------ */

/* What a failed attempt sends to one target. */
enum notice_kind {
	NOTICE_WITHHELD, /* its policy sends none for this attempt */
	NOTICE_PLAIN,    /* today's failure notice */
	NOTICE_LOST,     /* `final` on the attempt that loses the slot: the
			    notice says so, with the attempt count */
};

/*
 * The notice policy for sends to target t is its own when it sets one,
 * else the schedule's. every: each failed attempt; final: only the one
 * that loses the slot (when the job's max attempts are unknown, each
 * attempt may be that one, so each sends); none: never.
 */
static enum notice_kind notice_for(const struct orchestrator_ctx *ctx,
				   const struct schedule_spec *sched,
				   const struct target_spec *t, bool last)
{
	enum notice_policy p = t->has_notices ? t->notices : spec_x(sched)->notices;

	switch (p) {
	case NOTICES_EVERY: return NOTICE_PLAIN;
	case NOTICES_FINAL:
		if (last)
			return NOTICE_LOST;
		return ctx->max_attempts > 0 ? NOTICE_WITHHELD : NOTICE_PLAIN;
	case NOTICES_NONE: break;
	}
	return NOTICE_WITHHELD;
}

/*
 * Composes the failure notice: a failure entry per failed task; the
 * summary (NULL when neither applies) says what `expect` missed (why, for
 * a hollow run) and, when lost_line, that this attempt lost the slot after
 * `attempt` attempts. *body is allocated; NULL after a failure (logged: a
 * notice never costs the run its error).
 */
static void compose_notice(const struct schedule_spec *sched, int64_t slot_ms,
			   int attempt, const struct message_failure *fl,
			   size_t nf, const char *why, bool lost_line,
			   char **body)
{
	char summary[SC_ERR_MSG_MAX + 256];
	size_t n = 0;
	struct sc_err cerr = {0};

	summary[0] = '\0';
	if (why)
		n += (size_t)snprintf(summary, sizeof(summary),
				      "\xE2\x9A\xA0\xEF\xB8\x8F %s", why);
	if (lost_line && n < sizeof(summary))
		snprintf(summary + n, sizeof(summary) - n,
			 "%s\xF0\x9F\x9A\xA8 %s: the slot is lost after %d "
			 "attempt%s (no attempt left)", n ? "\n" : "",
			 sched->name, attempt, attempt == 1 ? "" : "s");
	struct message m = {
		.kind = MESSAGE_NOTICE, .schedule = sched->name,
		.slot_ms = slot_ms, .attempt = attempt,
		.summary = summary[0] ? summary : NULL,
		.failures = fl, .n_failures = nf,
	};
	*body = NULL;
	if (message_compose(&m, body, &cerr) != 0) {
		*body = NULL;
		LOG(SC_LOG_WARN, "orchestrator",
		       "event=notice_failed "
		       "schedule=%s slot_ms=%lld msg=\"cannot compose the "
		       "failure notice\" code=%d", sched->name,
		       (long long)slot_ms, cerr.code);
	}
}

/*
 * Failed run: a failure notice to every target whose notice policy sends
 * one for this attempt, directly. No outbox, no guard, no marker. Returns
 * the run's error: `why` when given (a hollow run: the expectation it
 * missed), else the first failed task's. The ledger row the caller
 * writes does not depend on the policies: only the sends do.
 */
static int failed_run(const struct orchestrator_ctx *ctx,
		      const struct schedule_spec *sched, int64_t slot_ms,
		      int attempt, const struct target_spec *const *targets,
		      size_t n_targets, const struct task_result *res,
		      const struct sc_err *why, struct orchestrator_report *rep,
		      struct sc_err *err)
{
	struct message_failure *fl = calloc(sched->n_tasks ? sched->n_tasks : 1,
					      sizeof(*fl));
	const struct sc_err *run_err = why;
	json_t *nerr = json_array();
	size_t nf = 0;
	char *body = NULL, *body_final = NULL;

	for (size_t i = 0; i < sched->n_tasks; i++) {
		if (res[i].outcome != TASK_FAILED)
			continue;
		if (!run_err)
			run_err = &res[i].err;
		if (fl) {
			fl[nf].task = sched->tasks[i].name;
			fl[nf].error = res[i].reason;
			nf++;
		}
	}
	/* Callers come here with a failed task or an expectation. */
	static const struct sc_err no_detail = {.code = SC_ETASK,
						.msg = "failed (no detail)"};
	if (!run_err)
		run_err = &no_detail;
	/* The attempt that loses the slot: the queue gives up on a
	 * permanent error or when the attempts are spent (queue_fail). */
	rep->is_last_attempt = run_err->permanent ||
			       (ctx->max_attempts > 0 &&
				attempt >= ctx->max_attempts);
	bool want_plain = false, want_final = false;
	for (size_t i = 0; i < n_targets; i++) {
		enum notice_kind k = notice_for(ctx, sched, targets[i],
						rep->is_last_attempt);
		want_plain |= k == NOTICE_PLAIN;
		want_final |= k == NOTICE_LOST;
	}
	/* Out of memory only costs the notices, never the run's error. */
	if (!fl)
		LOG(SC_LOG_WARN, "orchestrator",
		       "event=notice_failed "
		       "schedule=%s slot_ms=%lld msg=\"cannot compose the "
		       "failure notice\" code=%d", sched->name,
		       (long long)slot_ms, SC_ENOMEM);
	const char *why_text = why ? why->msg : NULL;
	if (fl && want_plain)
		compose_notice(sched, slot_ms, attempt, fl, nf, why_text, false,
			       &body);
	if (fl && want_final)
		compose_notice(sched, slot_ms, attempt, fl, nf, why_text, true,
			       &body_final);
	for (size_t i = 0; fl && i < n_targets; i++) {
		struct sc_err nerr1 = {0};
		enum notice_kind k = notice_for(ctx, sched, targets[i],
						rep->is_last_attempt);
		if (k == NOTICE_WITHHELD) {
			rep->n_notices_withheld++;
			continue;
		}
		const char *b = k == NOTICE_LOST ? body_final : body;
		if (!b)
			continue; /* could not be composed: logged */
		/* A notice is no store write, so no fence stops it: check the
		 * lease before each one (a worker resumed after a pause must
		 * not speak for a slot that has a new owner). */
		if (store_fence_check(ctx->store, &nerr1) == SC_ELEASE) {
			LOG(SC_LOG_WARN, "orchestrator",
			       "event=lease_lost "
			       "schedule=%s slot_ms=%lld attempt=%d "
			       "msg=\"lease lost; no more failure notices\"",
			       sched->name, (long long)slot_ms, attempt);
			break;
		}
		/* The target computes the key if it sends one. */
		struct target_copy s = {.target = targets[i], .body = b,
					  .kind = MESSAGE_NOTICE,
					  .schedule = sched->name,
					  .slot_ms = slot_ms,
					  .attempt = attempt,
					  .clock = ctx_clock(ctx),
					  .zone = sched->zone,
					  .keep = ctx->keep,
					  .keep_ud = ctx->tick_ud};
		if (target_send(&s, &nerr1) == 0) {
			rep->n_notices_sent++;
			continue;
		}
		/* A warning only: the run's error stays the task's. */
		rep->n_notices_failed++;
		LOG(SC_LOG_WARN, "orchestrator",
		       "event=notice_not_sent "
		       "schedule=%s slot_ms=%lld attempt=%d target=%s "
		       "msg=\"failure notice not sent\" code=%d http_status=%d",
		       sched->name, (long long)slot_ms, attempt,
		       targets[i]->name, nerr1.code, nerr1.http_status);
		json_array_append_new(nerr, json_pack("{s:s, s:s}", "target",
						      targets[i]->name, "error",
						      nerr1.msg));
	}
	free(body);
	free(body_final);
	free(fl);
	rep->details_json = details(sched->tasks, res, sched->n_tasks, nerr);
	json_decref(nerr);
	err_copy(err, run_err);
	LOG(SC_LOG_ERROR, "orchestrator",
	       "event=failed "
	       "schedule=%s slot_ms=%lld attempt=%d outcome=failed "
	       "cause=%s failed=%zu notices_sent=%zu notices_failed=%zu "
	       "notices_withheld=%zu", sched->name, (long long)slot_ms,
	       attempt, why ? "expectation" : "task", rep->n_failed,
	       rep->n_notices_sent, rep->n_notices_failed,
	       rep->n_notices_withheld);
	return run_err->code ? run_err->code : SC_ETASK;
}

/* UTF-8 code points in s: every byte that does not continue a
 * character (task output is valid UTF-8, task_output.c). */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/*
 * The schedule's `expect` against the run's deliverables, counted across
 * every delivering task: previews, and summary characters (code points,
 * what a reader sees; the blank lines that join summaries do not count).
 * Exactly at a threshold meets it. Returns true and fills *why (code
 * SC_ETASK, never permanent: the next attempt may do better) when the run
 * falls short.
 */
static bool falls_short(const struct schedule_spec *sched,
			const struct task_result *res, struct sc_err *why)
{
	size_t np = 0, nc = 0;

	if (spec_x(sched)->expect_min_previews <= 0 &&
	    spec_x(sched)->expect_min_summary_chars <= 0)
		return false;
	for (size_t i = 0; i < sched->n_tasks; i++) {
		if (res[i].outcome != TASK_DELIVER)
			continue;
		np += res[i].n_previews;
		if (res[i].summary)
			nc += utf8_chars(res[i].summary);
	}
	if (np < (size_t)spec_x(sched)->expect_min_previews) {
		sc_err_set(why, SC_ETASK, "schedule %s: the result fell short "
			   "of expect.min_previews: %zu preview%s, at least %d "
			   "expected", sched->name, np, np == 1 ? "" : "s",
			   spec_x(sched)->expect_min_previews);
		return true;
	}
	if (nc < (size_t)spec_x(sched)->expect_min_summary_chars) {
		sc_err_set(why, SC_ETASK, "schedule %s: the result fell short "
			   "of expect.min_summary_chars: a summary of %zu "
			   "character%s, at least %d expected", sched->name, nc,
			   nc == 1 ? "" : "s", spec_x(sched)->expect_min_summary_chars);
		return true;
	}
	return false;
}

/* Bytes up to which s may be cut (at most max) without splitting a
 * UTF-8 character. */
static size_t utf8_cut(const char *s, size_t max)
{
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/*
 * Composes the result with at most `budget` bytes of task output:
 * summaries joined by blank lines, then previews, in task order, until the
 * budget is spent. The summary that crosses it is cut at a character
 * boundary, the previews after it are left out, and a marked notice line
 * with both sizes ends the summary. *total gets the bytes the tasks gave.
 */
static int compose_within(const struct schedule_spec *sched, int64_t slot_ms,
			  int attempt, bool late, const struct task_result *res,
			  size_t budget, char **body, size_t *total,
			  struct sc_err *err)
{
	size_t n = sched->n_tasks, np = 0, nf = 0, ns = 0, used = 0;
	bool cut = false;
	struct buf summary;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		np += res[i].n_previews;
	char **pv = calloc(np ? np : 1, sizeof(char *));
	struct message_failure *fl = calloc(n ? n : 1, sizeof(*fl));
	if (!pv || !fl) {
		free(pv);
		free(fl);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	buf_init(&summary, budget + 512);
	np = 0;
	*total = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (res[i].outcome == TASK_FAILED) {
			fl[nf].task = sched->tasks[i].name;
			fl[nf].error = res[i].reason;
			nf++;
			continue;
		}
		if (res[i].outcome != TASK_DELIVER)
			continue;
		if (res[i].summary) {
			size_t len = strlen(res[i].summary), sep = ns ? 2 : 0;
			*total += sep + len;
			if (!cut && used + sep + len <= budget) {
				rc = buf_adds(&summary, ns ? "\n\n" : "");
				if (!rc)
					rc = buf_add(&summary, res[i].summary,
						     len);
				used += sep + len;
				ns++;
			} else if (!cut) {
				size_t k = used + sep < budget
						   ? utf8_cut(res[i].summary,
							      budget - used - sep)
						   : 0;
				if (k) {
					rc = buf_adds(&summary,
						      ns ? "\n\n" : "");
					if (!rc)
						rc = buf_add(&summary,
							     res[i].summary, k);
					ns++;
				}
				used = budget;
				cut = true;
			}
		}
		for (size_t j = 0; j < res[i].n_previews; j++) {
			size_t len = strlen(res[i].previews[j]);
			*total += len;
			if (!cut && used + len <= budget) {
				pv[np++] = res[i].previews[j];
				used += len;
			} else {
				cut = true;
			}
		}
	}
	if (!rc && cut) {
		rc = buf_addf(&summary, "%s[surecron: result truncated: the "
			      "tasks gave %zu bytes of summaries and previews; "
			      "a result carries at most %zu]", ns ? "\n\n" : "",
			      *total, budget);
		ns++;
	}
	if (rc) {
		sc_err_set(err, rc, "out of memory composing the result");
	} else {
		struct message m = {
			.kind = MESSAGE_RESULT, .schedule = sched->name,
			.slot_ms = slot_ms, .attempt = attempt,
			.summary = ns ? buf_str(&summary) : NULL,
			.previews = pv, .n_previews = np,
			.failures = fl, .n_failures = nf, .late = late,
		};
		rc = message_compose(&m, body, err);
	}
	buf_dispose(&summary);
	free(pv);
	free(fl);
	return rc;
}

/*
 * Composes the result: summaries joined, previews in task order, a
 * failure entry per failed task (rendered as notice lines), with at most
 * SPEC_RESULT_MAX bytes of task output (issue 11: a result too large used
 * to fail, be retried with the same output and be lost). The composed
 * message may still pass MESSAGE_MAX_BODY when JSON escaping swells the
 * text (a control byte takes six); then the budget shrinks and the result
 * is composed again, each time the same way for the same output.
 */
static int compose_result(const struct schedule_spec *sched, int64_t slot_ms,
			  int attempt, bool late, const struct task_result *res,
			  char **body, struct sc_err *err)
{
	size_t budget = SPEC_RESULT_MAX, total = 0;
	int rc = SC_ETOOBIG;

	for (int pass = 0; pass < 4 && rc == SC_ETOOBIG; pass++, budget /= 4) {
		struct sc_err e = {0};
		rc = compose_within(sched, slot_ms, attempt, late, res, budget,
				    body,
				    &total, &e);
		if (rc && rc != SC_ETOOBIG)
			err_copy(err, &e);
	}
	budget *= 4;
	if (rc == SC_ETOOBIG) {
		sc_err_set(err, rc, "schedule %s: the result (%zu bytes of "
			   "task output) does not fit a message of %zu bytes, "
			   "even cut to %zu bytes", sched->name, total,
			   MESSAGE_MAX_BODY, budget);
		err_set_permanent(err); /* the same output fails the same way */
		return rc;
	}
	if (rc == 0 && total > budget)
		LOG(SC_LOG_WARN, "orchestrator",
		       "event=result_truncated "
		       "schedule=%s slot_ms=%lld result_bytes=%zu limit=%zu "
		       "msg=\"result truncated\"", sched->name,
		       (long long)slot_ms, total, budget);
	return rc;
}

/* Adds what the flush did to the report's details (for the ledger row):
 * {"resent": bool, "delivery": {"sent", "guarded", "failed", "held",
 * "duplicates"}}. Best effort: details are informative only. */
static void add_delivery_details(struct orchestrator_report *rep)
{
	json_t *o = rep->details_json ? json_loads(rep->details_json, 0, NULL)
				      : json_object();
	const struct outbox_report *d = &rep->delivery;

	if (!json_is_object(o)) {
		json_decref(o);
		return;
	}
	json_object_set_new(o, "resent", json_boolean(rep->resent));
	json_object_set_new(o, "delivery",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
				      "sent", (json_int_t)d->n_sent,
				      "guarded", (json_int_t)d->n_guarded,
				      "failed", (json_int_t)d->n_failed,
				      "held", (json_int_t)d->n_held,
				      "duplicates", (json_int_t)d->n_duplicates,
				      "abandoned", (json_int_t)d->n_abandoned));
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (s) {
		free(rep->details_json);
		rep->details_json = s;
	}
}

/* "late": true in the report's details (the ledger row of the success).
 * Best effort, as add_delivery_details. */
static void mark_late(struct orchestrator_report *rep)
{
	json_t *o = rep->details_json ? json_loads(rep->details_json, 0, NULL)
				      : json_object();

	if (json_is_object(o) &&
	    json_object_set_new(o, "late", json_true()) == 0) {
		char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (s) {
			free(rep->details_json);
			rep->details_json = s;
		}
	}
	json_decref(o);
}

/* The slot is done: its marker now, or, with ctx->mark_at_finish, with
 * the job's completion (the caller's). */
static int mark_done(const struct orchestrator_ctx *ctx,
		     const struct schedule_spec *sched, int64_t slot_ms,
		     struct orchestrator_report *rep, struct sc_err *err)
{
	if (ctx->mark_at_finish) {
		rep->mark_slot = true;
		return 0;
	}
	return store_slot_mark(ctx->store, sched->name, slot_ms, err);
}

/* Sends the staged message to every target without a guard; marks the
 * slot when all are SENT. */
static int flush_and_mark(const struct orchestrator_ctx *ctx,
			  const struct schedule_spec *sched,
			  const struct outbox_slot *ds,
			  struct orchestrator_report *rep, struct sc_err *err)
{
	int rc = outbox_flush(ds, &rep->delivery, err);

	add_delivery_details(rep);
	if (rc) {
		LOG(SC_LOG_ERROR, "orchestrator",
		       "event=delivery_failed "
		       "schedule=%s slot_ms=%lld attempt=%d outcome=delivery_failed "
		       "sent=%zu guarded=%zu failed=%zu held=%zu", ds->schedule,
		       (long long)ds->slot_ms, ds->attempt, rep->delivery.n_sent,
		       rep->delivery.n_guarded, rep->delivery.n_failed,
		       rep->delivery.n_held);
		return rc;
	}
	FAILPOINT("delivery.after_last_sent_before_marker");
	rc = mark_done(ctx, sched, ds->slot_ms, rep, err);
	if (rc == 0)
		LOG(SC_LOG_INFO, "orchestrator",
		       "event=delivered "
		       "schedule=%s slot_ms=%lld attempt=%d outcome=delivered "
		       "sent=%zu guarded=%zu duplicates=%zu", ds->schedule,
		       (long long)ds->slot_ms, ds->attempt, rep->delivery.n_sent,
		       rep->delivery.n_guarded, rep->delivery.n_duplicates);
	return rc;
}

int orchestrator_run_slot(const struct orchestrator_ctx *ctx,
			  const struct schedule_spec *sched, int64_t slot_ms,
			  int64_t job_id, int attempt,
			  struct orchestrator_report *rep, struct sc_err *err)
{
	const struct target_spec *targets[OUTBOX_MAX_TARGETS];
	struct task_result *res = NULL;
	char *body = NULL;
	bool marked = false, staged = false;
	int rc;

	if (!rep) { /* the caller wants no report: make one, and free it */
		struct orchestrator_report local;
		rc = orchestrator_run_slot(ctx, sched, slot_ms, job_id,
					   attempt, &local, err);
		orchestrator_report_dispose(&local);
		return rc;
	}
	memset(rep, 0, sizeof(*rep));
	if (sched->n_targets > OUTBOX_MAX_TARGETS) {
		rc = sc_err_set(err, SC_ECONFIG, "schedule %s: more than %d "
				"targets", sched->name, OUTBOX_MAX_TARGETS);
		err_set_permanent(err);
		return rc;
	}
	for (size_t i = 0; i < sched->n_targets; i++) {
		targets[i] = config_target(ctx->config, sched->targets[i]);
		if (!targets[i]) {
			rc = sc_err_set(err, SC_ECONFIG, "schedule %s: unknown "
					"target %s", sched->name,
					sched->targets[i]);
			err_set_permanent(err);
			return rc;
		}
	}
	struct outbox_slot ds = {
		.store = ctx->store, .clock = ctx_clock(ctx),
		.schedule = sched->name, .zone = sched->zone,
		.slot_ms = slot_ms, .job_id = job_id,
		.attempt = attempt, .targets = targets,
		.n_targets = sched->n_targets,
		.tick = ctx->tick, .tick_ud = ctx->tick_ud,
		.keep = ctx->keep,
	};

	/* A message in the outbox means an earlier attempt generated the
	 * result and a delivery failed or was cut short: resend it, never
	 * generate a second one. */
	size_t n_others = 0;
	rc = outbox_look_others(&ds, &marked, &staged, &body, &n_others, err);
	if (rc)
		return rc;
	if (marked) { /* done: nothing staged is read for it */
		rep->already_marked = true;
		LOG(SC_LOG_INFO, "orchestrator",
		       "event=already_done "
		       "schedule=%s slot_ms=%lld attempt=%d outcome=already_done",
		       sched->name, (long long)slot_ms, attempt);
		return 0;
	}

	/* Copies staged for targets a reload removed since (issue 43):
	 * closed on the record before anything is sent, never left FAILED
	 * or UNKNOWN in silence. When none of the current targets has a
	 * row yet, their message is the one those copies held: the result
	 * is generated once. */
	if (n_others) {
		rc = outbox_abandon_removed(&ds, &rep->delivery,
					    staged ? NULL : &body, err);
		if (rc) {
			free(body);
			return rc;
		}
		staged = staged || body;
	}

	if (staged) {
		clock_sleep_until_ns(ctx_clock(ctx), ctx->not_before_ns);
		rep->resent = true;
		LOG(SC_LOG_INFO, "orchestrator",
		       "event=resend_from_outbox "
		       "schedule=%s slot_ms=%lld attempt=%d msg=\"resending "
		       "from the outbox; tasks not run\"", sched->name,
		       (long long)slot_ms, attempt);
		/* Targets staged before a crash cut the staging short, or
		 * added to the config since, get the same message. */
		rc = outbox_stage(&ds, body, err);
		free(body);
		return rc ? rc : flush_and_mark(ctx, sched, &ds, rep, err);
	}

	res = calloc(sched->n_tasks ? sched->n_tasks : 1, sizeof(*res));
	if (!res)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	const struct http_token_store tokens = {
		.ud = ctx->store, .get = tok_get, .put = tok_put, .drop = tok_drop,
	};
	struct task_ctx tctx = {
		.schedule = sched->name, .slot_ms = slot_ms, .attempt = attempt,
		.clock = ctx_clock(ctx), .config = ctx->config,
		.auths = ctx->auths, .n_auths = ctx->n_auths, .tokens = &tokens,
		.tick = ctx->tick, .tick_ud = ctx->tick_ud, .tick_ms = ctx->tick_ms,
		.keep = ctx->keep,
	};
	rep->ran_tasks = true;
	rep->n_tasks = sched->n_tasks;
	for (size_t i = 0; i < sched->n_tasks; i++) {
		if (ctx->tick && (rc = ctx->tick(ctx->tick_ud)) != 0) {
			/* The run was canceled (the lease is lost: another
			 * worker owns the slot now). Send nothing, write
			 * nothing: the owner decides. */
			sc_err_set(err, rc, "run canceled before task %s "
				   "(lease lost)", sched->tasks[i].name);
			goto done;
		}
		/* The first task starts at the run's instant, never before:
		 * a command is handed to its reaper now to start then, so
		 * the hand-over is done ahead (task.h, start_ns). */
		tctx.start_ns = 0;
		if (i == 0 && !ctx->run_task)
			tctx.start_ns = ctx->not_before_ns;
		else
			clock_sleep_until_ns(ctx_clock(ctx), ctx->not_before_ns);
		/* Each task's failure is its own outcome: the loop goes on. */
		if (ctx->run_task)
			(void)ctx->run_task(ctx->run_task_ud, &sched->tasks[i],
					    &tctx, &res[i]);
		else
			(void)task_run(&sched->tasks[i], &tctx, &res[i]);
		if (!rep->started_ns)
			rep->started_ns = res[i].started_ns;
		switch (res[i].outcome) {
		case TASK_DELIVER: rep->n_deliver++; break;
		case TASK_SKIP: rep->n_skipped++; break;
		case TASK_FAILED: rep->n_failed++; break;
		}
		/* The runner could not start the task (out of descriptors,
		 * processes or memory): no outcome of the slot's, so no
		 * notice and no result; the run ends here with that error
		 * and worker.c gives the job back uncounted (issue 42). */
		if (res[i].outcome == TASK_FAILED &&
		    err_is_runner(res[i].err.code)) {
			err_copy(err, &res[i].err);
			rc = res[i].err.code;
			goto done;
		}
	}
	/* Nothing is sent nor marked before the run's instant, even when
	 * no task waited for it (none, or the first failed to start). */
	clock_sleep_until_ns(ctx_clock(ctx), ctx->not_before_ns);
	/* The last task may have been the one the tick ended (the daemon
	 * released the job at shutdown, or the lease was lost): its failure
	 * is no outcome, and no notice may go out for it. */
	if (ctx->tick && (rc = ctx->tick(ctx->tick_ud)) != 0) {
		sc_err_set(err, rc, "run canceled after its tasks (lease lost "
			   "or job released)");
		goto done;
	}

	if (rep->n_failed > 0 && rep->n_deliver == 0) {
		rc = failed_run(ctx, sched, slot_ms, attempt, targets,
				sched->n_targets, res, NULL, rep, err);
		goto done;
	}
	/* A hollow result is a failed run too (the seed's incident in
	 * disguise): the same path, before anything is staged. */
	struct sc_err why = {0};
	if (falls_short(sched, res, &why)) {
		rep->expectation_failed = true;
		rc = failed_run(ctx, sched, slot_ms, attempt, targets,
				sched->n_targets, res, &why, rep, err);
		goto done;
	}
	rep->details_json = details(sched->tasks, res, sched->n_tasks, NULL);
	if (rep->n_deliver == 0) {
		/* Every task skipped (or there are none): done, silently. */
		LOG(SC_LOG_INFO, "orchestrator",
		       "event=skipped "
		       "schedule=%s slot_ms=%lld attempt=%d outcome=skipped",
		       sched->name, (long long)slot_ms, attempt);
		rc = mark_done(ctx, sched, slot_ms, rep, err);
		goto done;
	}
	/* Past the deadline only a manual run gets here: still delivered,
	 * marked late (the message and the ledger row). */
	bool late = ctx->clock && sc_clock_now_ms(ctx->clock) >
					  scheduler_deadline_at(sched, slot_ms);
	if (late)
		mark_late(rep);
	rc = compose_result(sched, slot_ms, attempt, late, res, &body, err);
	if (rc)
		goto done;
	/* Outbox first, for every target, before the first send. */
	rc = outbox_stage(&ds, body, err);
	if (rc)
		goto done;
	rc = flush_and_mark(ctx, sched, &ds, rep, err);
done:
	free(body);
	for (size_t i = 0; i < sched->n_tasks; i++)
		task_result_dispose(&res[i]);
	free(res);
	return rc;
}
