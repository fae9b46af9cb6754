/*
 * store_rule.c - the store's decisions that do not depend on a backend's
 * SQL, each written once for every backend: where a finished attempt may
 * lead and the ledger outcome it defaults to (store_finish_outcome), and
 * the errors of a row not there (store_missing_error) and of a refused
 * fence (store_lease_error, store_fence_refused),
 * of a closed send asked to reopen (store_guard_error), of a release of
 * a send no longer held (store_release_refused) and of a revive of
 * a job that is not DEAD (store_not_dead_error), what raising an alert
 * closes (store_alert_raise_rule), which ledger rows are a job's and which
 * are kept once per slot (store_ledger_row_kind), and the shape of a
 * ledger filter (store_lq_shape), and which states each transition
 * may leave (store_transitions[], from the STORE_FROM_ macros of store.h
 * that the backends' SQL is spelled with; store_may_leave).
 * A backend runs the statement and reads what it needs to know (did the
 * fenced write match, does the row exist); what that means, and in which
 * words, is decided here.
 *
 * Invariants:
 *   - Pure functions: no handle, no I/O, no allocation; safe from any
 *     thread.
 *   - A text here is the same on SQLite and on PostgreSQL; test_store
 *     runs each rule on both backends and compares.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "store.h"

const char *store_finish_outcome(enum job_state to)
{
	switch (to) {
	case JOB_DONE: return LEDGER_SUCCESS;
	case JOB_READY: return LEDGER_FAILED;
	case JOB_DEAD: return LEDGER_LOST;
	case JOB_ACTIVE: break;
	}
	/* ACTIVE is where an attempt runs, not where one ends. */
	return NULL;
}

int store_missing_error(const char *what, int64_t id, struct sc_err *err)
{
	return sc_err_set(err, SC_ENOENT, "no %s %" PRId64, what, id);
}

int store_lease_error(const char *what, const char *op, int64_t id,
		      int64_t lease_token, bool exists, struct sc_err *err)
{
	if (!exists)
		return store_missing_error(what, id, err);
	return sc_err_set(err, SC_ELEASE, "%s of %s %" PRId64 " refused: "
			  "lease lost (token %" PRId64 " no longer current: "
			  "taken over or finished)", op, what, id,
			  lease_token);
}

int store_fence_refused(const char *op, const struct store_fence *f,
			struct sc_err *err)
{
	return sc_err_set(err, SC_ELEASE,
			  "%s refused: job %" PRId64 " is no longer held under "
			  "lease %" PRId64 " (taken over or finished); this "
			  "worker stops",
			  op, f ? f->job_id : 0, f ? f->lease_token : 0);
}

void store_alert_raise_rule(const struct store_alert *a, int64_t now_ms,
			    struct store_raise_rule *r)
{
	/* A recovered message is no incident: closed at birth. */
	r->closed_ms = a->status == ALERT_OPEN ? 0 : now_ms;
	/* A slot lost again (a re-run lost too) needs one open incident,
	 * not one per loss: the newest stands for them. Other reasons
	 * (missed, late, ...) have a generation per occurrence and stay. */
	r->supersede = strcmp(a->reason, ALERT_REASON_LOST) == 0;
}

int store_guard_error(const char *schedule, const char *target,
		      enum send_state state, struct sc_err *err)
{
	if (state == SEND_ABANDONED)
		return sc_err_set(err, SC_ESTATE, "target %s of %s was "
				  "abandoned (removed from the schedule, on "
				  "the record); it is never sent again",
				  target, schedule);
	return sc_err_set(err, SC_ESTATE, "target %s of %s was already sent "
			  "(send guard); it is never sent again", target,
			  schedule);
}

const char *store_send_state_name(enum send_state st)
{
	switch (st) {
	case SEND_NONE: return "none";
	case SEND_PENDING: return "pending";
	case SEND_SENDING: return "sending";
	case SEND_SENT: return "sent";
	case SEND_FAILED: return "failed";
	case SEND_UNKNOWN: return "unknown";
	case SEND_ABANDONED: return "abandoned";
	}
	return "?";
}

int store_release_refused(const char *schedule, const char *target,
			  enum send_state state, struct sc_err *err)
{
	return sc_err_set(err, SC_ESTATE, "target %s of %s: the send is no "
			  "longer held (it is %s%s); nothing changed", target,
			  schedule, store_send_state_name(state),
			  state == SEND_FAILED ? ", to be sent" : "");
}

int store_not_dead_error(int64_t id, struct sc_err *err)
{
	return sc_err_set(err, SC_ESTATE, "job %" PRId64 " is not dead", id);
}

enum store_row_kind store_ledger_row_kind(const char *outcome)
{
	/* A missed or paused slot ran no job: nothing to fence it by, and
	 * every node may note the same slot, so the first note stands. */
	if (strcmp(outcome, LEDGER_MISSED) == 0)
		return STORE_ROW_MISSED;
	if (strcmp(outcome, LEDGER_PAUSED) == 0)
		return STORE_ROW_PAUSED;
	return STORE_ROW_FENCED;
}

int store_lq_shape(const struct ledger_filter *f)
{
	int kind = STORE_LQ_ANY;

	if (f->lost_or_missed)
		kind = STORE_LQ_LOST;
	else if (f->outcome && strcmp(f->outcome, LEDGER_ACKED) == 0)
		kind = STORE_LQ_ACKED;
	else if (f->outcome && strcmp(f->outcome, LEDGER_MISSED) == 0)
		kind = STORE_LQ_MISSED;
	else if (f->outcome && strcmp(f->outcome, LEDGER_SKIPPED) == 0)
		kind = STORE_LQ_SKIPPED;
	else if (f->outcome && strcmp(f->outcome, LEDGER_ABANDONED) == 0)
		kind = STORE_LQ_ABANDONED;
	else if (f->outcome)
		kind = STORE_LQ_OUTCOME;
	bool open = f->since_ms == INT64_MIN && f->until_ms == INT64_MAX;
	return (((f->schedule != NULL) * STORE_LQ_KINDS + kind) * 2 + open) *
		       2 +
	       f->newest_first;
}

#define T(id, nm, of, set, but, to, fn)                                    \
	[STORE_T_##id] = {STORE_T_##id, nm, STORE_OF_##of, set, but, to, fn, \
			  (but) ? "STORE_BUT_" #id : "STORE_FROM_" #id}
const struct store_transition store_transitions[STORE_T_N] = {
	T(CLAIM, "claim", JOB, STORE_FROM_CLAIM, false, "ACTIVE",
	  "store_job_claim"),
	T(HEARTBEAT, "heartbeat", JOB, STORE_FROM_HEARTBEAT, false,
	  "ACTIVE", "store_job_heartbeat"),
	T(FINISH, "finish", JOB, STORE_FROM_FINISH, false,
	  "DONE, READY (retry), DEAD",
	  "store_job_finish, store_job_complete(_marked, _many)"),
	T(RELEASE, "release", JOB, STORE_FROM_RELEASE, false, "READY",
	  "store_job_release, store_job_give_back"),
	T(RECOVER, "recover (lease expired)", JOB, STORE_FROM_RECOVER, false,
	  "READY, DEAD", "store_job_recover"),
	T(REVIVE, "revive", JOB, STORE_FROM_REVIVE, false, "READY",
	  "store_job_revive"),
	T(LEASE_CLAMP, "lease clamp", JOB, STORE_FROM_LEASE_CLAMP, false,
	  "ACTIVE", "store_job_lease_clamp"),
	T(FENCE, "fenced write (its job)", JOB, STORE_FROM_FENCE, false,
	  "(unchanged)", "store_fence_set, then any fenced write"),
	T(JOB_PRUNE, "prune a job", JOB, STORE_FROM_JOB_PRUNE, false,
	  "(deleted)", "store_prune_batch"),
	T(OUTBOX_SET, "outbox state", OUTBOX, STORE_BUT_OUTBOX_SET, true,
	  "PENDING, SENDING, SENT, FAILED, UNKNOWN",
	  "store_outbox_set_state"),
	T(OUTBOX_RELEASE, "outbox release (operator)", OUTBOX,
	  STORE_FROM_OUTBOX_RELEASE, false, "SENT (arrived), FAILED (resend)",
	  "store_outbox_release"),
	T(OUTBOX_UNKNOWN, "outbox recovery", OUTBOX,
	  STORE_FROM_OUTBOX_UNKNOWN, false, "UNKNOWN",
	  "store_outbox_mark_unknown"),
	T(OUTBOX_ABANDON, "outbox abandon", OUTBOX, STORE_FROM_OUTBOX_ABANDON,
	  false, "ABANDONED", "store_outbox_abandon"),
	T(BODY_PRUNE, "prune a body", OUTBOX, STORE_FROM_BODY_PRUNE, false,
	  "(body deleted)", "store_prune_batch"),
	T(OUTBOX_PRUNE, "prune an outbox row", OUTBOX,
	  STORE_FROM_OUTBOX_PRUNE, false, "(deleted)", "store_prune_batch"),
	T(SEND_CLAIM, "alert send claim (due)", SEND, STORE_FROM_SEND_CLAIM,
	  false, "SENDING", "store_alert_send_claim(_of)"),
	T(SEND_RECLAIM, "alert send claim (lease expired)", SEND,
	  STORE_FROM_SEND_RECLAIM, false, "SENDING (reported UNKNOWN)",
	  "store_alert_send_claim(_of)"),
	T(SEND_FINISH, "alert send finish", SEND, STORE_FROM_SEND_FINISH,
	  false, "SENT, FAILED, UNKNOWN, ABANDONED",
	  "store_alert_send_finish"),
	T(SEND_PRUNE, "prune an alert", SEND, STORE_FROM_SEND_PRUNE,
	  false, "(deleted)", "store_prune_batch"),
	T(ALERT_CLOSE, "alert close", ALERT, STORE_FROM_ALERT_CLOSE, false,
	  "ACKED, HEALED", "store_alert_close"),
	T(ALERT_REALERT, "alert realert", ALERT, STORE_FROM_ALERT_REALERT,
	  false, "OPEN (a new round)", "store_alert_realert"),
	T(ALERT_SUPERSEDE, "alert superseded", ALERT,
	  STORE_FROM_ALERT_SUPERSEDE, false, "CLOSED",
	  "store_alert_raise (a newer lost alert of its slot)"),
	T(ALERT_PRUNE, "prune an alert (status)", ALERT, STORE_BUT_ALERT_PRUNE,
	  true, "(deleted)", "store_prune_batch"),
};
#undef T

bool store_state_listed(const char *list, int state)
{
	/* A STORE_FROM_ list: decimal values joined by ", ". */
	for (const char *p = list; *p;) {
		int v = 0;
		if (*p < '0' || *p > '9')
			return false; /* not a list: listed nowhere */
		while (*p >= '0' && *p <= '9')
			v = v * 10 + (*p++ - '0');
		if (v == state)
			return true;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return false;
}

bool store_may_leave(enum store_trans t, int state)
{
	if ((unsigned)t >= STORE_T_N)
		return false;
	const struct store_transition *x = &store_transitions[t];
	return store_state_listed(x->from, state) != x->but;
}

bool store_body_may_be_pruned(enum send_state state)
{
	return store_may_leave(STORE_T_BODY_PRUNE, (int)state);
}
