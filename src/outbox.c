/*
 * outbox.c - the outbox flow: stage the composed result for every target,
 * then send to each target that has no send guard, one state at a time.
 *
 * One (slot, target) row moves like this (the store commits each step):
 *
 *   (none) --stage--> PENDING --flush--> SENDING --2xx--> SENT (the guard)
 *                        ^                  |  \
 *                        |          sure failure  ambiguous failure, or a
 *                        |                  v     crash (found SENDING by
 *                        +----retry----- FAILED    the next attempt)
 *                                                   v
 *                                                UNKNOWN --resend--> SENDING
 *                                                   |   ("duplicate" ledger row)
 *                                                   +--hold--> stays UNKNOWN
 *                                                      (operator: outbox_release:
 *                                                      SENT, or FAILED after a
 *                                                      "duplicate" ledger row)
 *
 *   PENDING|FAILED|UNKNOWN -> SENDING  [send_one]
 *   SENDING -> SENT      [send_one] the target took it
 *   SENDING -> FAILED    [send_one] a sure failure: nothing can have
 *                        arrived, or the target said no (sc_err.ambiguous
 *                        false: see docs/delivery.md for the list)
 *   SENDING -> UNKNOWN   [send_one] an ambiguous failure (a timeout after
 *                        the request left, an empty reply, a command
 *                        killed); [outbox_flush] a row left by a crash
 *   UNKNOWN -> SENT      [outbox_release] an operator: it arrived
 *   UNKNOWN -> FAILED    [outbox_release] an operator: send it again; the
 *                        "duplicate" row first, as a flush's resend
 *                        (both only from UNKNOWN, checked in the write
 *                        itself: store_outbox_release)
 *   PENDING|SENDING|FAILED|UNKNOWN -> ABANDONED  [outbox_abandon_removed]
 *                        the target is no longer one of the schedule's
 *                        (a reload removed it): closed with an
 *                        "abandoned" ledger row in the same commit,
 *                        saying whether the copy may have arrived; never
 *                        sent again, even if the target comes back
 *
 * Invariants:
 *   - every target's row exists before the first send (outbox_stage runs
 *     to the end first), so a retry always finds the message to resend
 *     and never needs the tasks again;
 *   - SENDING is committed before the request leaves and SENT only after
 *     the target took it: a crash in between leaves SENDING, which the
 *     next attempt turns into UNKNOWN, never into a silent "sent";
 *   - a SENT or ABANDONED row is never sent again (the store refuses to
 *     reopen either: STORE_BUT_OUTBOX_SET);
 *   - an UNKNOWN row is resent only with a "duplicate" ledger row written
 *     first, so a possible extra copy is always on the record: by the
 *     flush (resend), or by outbox_release before it makes the row FAILED
 *     (an operator's --resend: a copy sent before the decision may still
 *     land after it, from a worker paused past its lease);
 *   - a row becomes FAILED only when the send surely did not arrive, or
 *     once outbox_release declared the resend, so a FAILED row may be
 *     sent again with nothing (more) to declare;
 *   - a copy staged for a target the schedule no longer has is never
 *     dropped in silence: it is closed with its own ledger row (issue 43)
 *     before the current targets are sent to;
 *   - one target's failure never stops the next target, except a lost
 *     lease (SC_ELEASE from a fenced write, store.h): then the flush
 *     stops, since every write of this worker would be refused and every
 *     send would be a copy the new owner does not know about.
 *
 * Failpoints (test builds; SURECRON_FAILPOINTS), and what recovery does:
 *   delivery.after_sending_commit      killed after SENDING committed,
 *       before the request: nothing arrived; the next attempt finds
 *       SENDING -> UNKNOWN -> resend (one copy arrives, a "duplicate" row
 *       is written because we cannot know) or hold (nothing sent).
 *   delivery.after_2xx_before_sent     killed after the target took the
 *       copy, before SENT: same recovery; with resend the receiver gets a
 *       second copy with the same Idempotency-Key, declared in the ledger.
 *   delivery.after_last_sent_before_marker (orchestrator.c)  killed after
 *       every row is SENT, before the slot marker: the next attempt sends
 *       nothing and writes the marker.
 *   outbox.release_before_change (a hook)  between outbox_release's read
 *       (and its declaration) and its state change: a test changes the
 *       row there; the release is refused and changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "message.h"
#include "target.h"
#include "outbox.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "metrics.h"

static struct sc_clock *slot_clock(const struct outbox_slot *ds)
{
	return ds->clock ? ds->clock : store_clock(ds->store);
}

int outbox_look(const struct outbox_slot *ds, bool *marked, bool *staged,
		char **body, struct sc_err *err)
{
	return outbox_look_others(ds, marked, staged, body, NULL, err);
}

int outbox_look_others(const struct outbox_slot *ds, bool *marked,
		       bool *staged, char **body, size_t *n_others,
		       struct sc_err *err)
{
	const char *names[OUTBOX_MAX_TARGETS];
	struct outbox_entry e = {0};
	int first = -1;
	int rc;

	*marked = *staged = false;
	if (body)
		*body = NULL;
	if (ds->n_targets > OUTBOX_MAX_TARGETS)
		return sc_err_set(err, SC_ECONFIG, "schedule %s: more than %d "
				  "targets", ds->schedule, OUTBOX_MAX_TARGETS);
	for (size_t i = 0; i < ds->n_targets; i++)
		names[i] = ds->targets[i]->name;
	rc = store_slot_look_others(ds->store, ds->schedule, ds->slot_ms,
				    names, ds->n_targets, marked, &first, &e,
				    n_others, err);
	if (rc)
		return rc;
	*staged = first >= 0;
	if (body && *staged) {
		*body = e.body;
		e.body = NULL;
	}
	store_outbox_entry_dispose(&e);
	return 0;
}

int outbox_stage(const struct outbox_slot *ds, const char *body,
		 struct sc_err *err)
{
	for (size_t i = 0; i < ds->n_targets; i++) {
		bool created = false;
		int rc = store_outbox_put(ds->store, ds->schedule, ds->slot_ms,
				    ds->targets[i]->name, body, &created, err);
		if (rc)
			return rc;
		LOG(SC_LOG_DEBUG, "delivery",
		       "event=staged schedule=%s slot_ms=%lld target=%s "
		       "staged=%s",
		       ds->schedule, (long long)ds->slot_ms,
		       ds->targets[i]->name, created ? "new" : "existing");
	}
	return 0;
}

static bool is_target(const struct outbox_slot *ds, const char *name)
{
	for (size_t i = 0; i < ds->n_targets; i++)
		if (strcmp(ds->targets[i]->name, name) == 0)
			return true;
	return false;
}

/* The ledger row of an event of ds's slot at now (started and finished
 * alike): an abandoned copy or a declared duplicate. details is
 * borrowed; error_msg is the caller's to set. */
static void slot_event_row(const struct outbox_slot *ds, int64_t now,
			   const char *outcome, const char *error_class,
			   char *details, struct ledger_row *row)
{
	memset(row, 0, sizeof(*row));
	snprintf(row->schedule, sizeof(row->schedule), "%s", ds->schedule);
	row->slot_ms = ds->slot_ms;
	row->job_id = ds->job_id;
	row->attempt = ds->attempt;
	row->started_ms = row->finished_ms = now;
	snprintf(row->outcome, sizeof(row->outcome), "%s", outcome);
	snprintf(row->error_class, sizeof(row->error_class), "%s",
		 error_class);
	row->details_json = details;
}

/* Closes the row of a removed target r with its "abandoned" row. */
static int abandon_one(const struct outbox_slot *ds,
		       const struct store_outbox_row *r, bool *closed,
		       struct sc_err *err)
{
	char msg[SC_ERR_MSG_MAX];
	struct ledger_row row;
	int64_t now = sc_clock_now_ms(slot_clock(ds));
	/* SENDING: an attempt died mid-send (we hold the lease), as
	 * outbox_flush would find it; UNKNOWN: an ambiguous send. Either
	 * copy may have been taken. PENDING was never tried, FAILED failed
	 * for sure (outbox.c's rule for FAILED). */
	bool maybe = r->state == SEND_SENDING || r->state == SEND_UNKNOWN;
	json_t *d = json_pack("{s:s, s:s, s:i, s:b}", "target", r->target,
			      "state", store_send_state_name(r->state),
			      "tries", r->n_tries, "may_have_arrived", maybe);
	char *details = d ? json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER)
			  : NULL;
	int rc;

	json_decref(d);
	slot_event_row(ds, now, LEDGER_ABANDONED, "target_removed", details,
		       &row);
	snprintf(msg, sizeof(msg),
		 "target %s is no longer among the schedule's targets: its "
		 "staged copy is abandoned, %s", r->target,
		 maybe ? "and may have arrived (an earlier send may have "
			 "been taken)"
		       : r->n_tries ? "not delivered (its sends failed)"
				    : "not delivered (never sent)");
	row.error_msg = msg;
	rc = store_outbox_abandon(ds->store, ds->schedule, ds->slot_ms,
				  r->target, r->state, &row, closed, err);
	free(details);
	if (rc == 0 && *closed) {
		metrics_delivery(r->target, "abandoned");
		LOG(maybe ? SC_LOG_ERROR : SC_LOG_WARN, "delivery",
		    "event=abandoned schedule=%s slot_ms=%lld target=%s "
		    "state=%s may_have_arrived=%s msg=\"target removed from "
		    "the schedule: staged copy closed unsent\"", ds->schedule,
		    (long long)ds->slot_ms, r->target,
		    store_send_state_name(r->state), maybe ? "yes" : "no");
	}
	return rc;
}

int outbox_abandon_removed(const struct outbox_slot *ds,
			   struct outbox_report *rep, char **body,
			   struct sc_err *err)
{
	struct store_outbox_row *v = NULL;
	size_t n = 0;
	int rc = store_outbox_list(ds->store, ds->schedule, ds->slot_ms, &v,
				   &n, err);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct store_outbox_row *r = &v[i];
		bool closed = false;

		if (is_target(ds, r->target))
			continue;
		/* The result of the slot, generated once: kept for the
		 * current targets when none of them has a row yet. A body
		 * may be gone from a SENT row (prune): try the next. */
		if (body && !*body) {
			struct outbox_entry e = {0};
			struct sc_err gerr = {0};
			if (store_outbox_get(ds->store, ds->schedule,
					     ds->slot_ms, r->target, &e,
					     &gerr) == 0) {
				*body = e.body;
				e.body = NULL;
			}
			store_outbox_entry_dispose(&e);
		}
		if (r->state == SEND_SENT || r->state == SEND_ABANDONED)
			continue;
		rc = abandon_one(ds, r, &closed, err);
		if (rc == 0 && closed && rep)
			rep->n_abandoned++;
	}
	free(v);
	return rc;
}

/* The "duplicate" ledger row that must precede resending an UNKNOWN row:
 * by a flush (on_ambiguous: resend) or by an operator's release
 * --resend (by_operator, outbox_release). */
static int declare_duplicate(const struct outbox_slot *ds, const char *target,
			     int n_tries, bool by_operator,
			     struct sc_err *err)
{
	char msg[SC_ERR_MSG_MAX], key[MESSAGE_KEY_MAX];
	struct ledger_row row;
	int64_t now = sc_clock_now_ms(slot_clock(ds));

	/* Rare (a resend after a crash), so computing the key here even for
	 * a file target costs nothing in the steady state; without
	 * libcrypto the row says "" and the send itself reports why. */
	(void)message_idempotency_key(MESSAGE_RESULT, ds->schedule,
				      ds->slot_ms, target, 0, key, NULL);
	json_t *d = json_pack("{s:s, s:s, s:i, s:s}", "target", target,
			      "idempotency_key", key, "tries_before", n_tries,
			      "policy", by_operator ? "release" : "resend");
	char *details = d ? json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER)
			  : NULL;
	int rc;

	json_decref(d);
	slot_event_row(ds, now, LEDGER_DUPLICATE, "ambiguous_send", details,
		       &row);
	if (by_operator)
		snprintf(msg, sizeof(msg),
			 "target %s: an earlier send may have arrived, or may "
			 "still arrive from a worker paused past its lease; "
			 "sending again on an operator's decision (release "
			 "--resend): a second copy is possible", target);
	else
		snprintf(msg, sizeof(msg),
			 "target %s: an earlier send was interrupted and may "
			 "have arrived; sending again (a second copy is "
			 "possible)", target);
	row.error_msg = msg;
	rc = store_ledger_append(ds->store, &row, err);
	free(details);
	return rc;
}

/* Sends the row of target t; it is PENDING, FAILED or UNKNOWN (resend). */
static int send_one(const struct outbox_slot *ds,
		    const struct target_spec *t, const char *body,
		    struct outbox_report *rep, struct sc_err *err)
{
	struct sc_err serr = {0};
	int rc;

	/* Keep the lease across slow sends; once it is lost, the slot
	 * belongs to another worker: send nothing more. */
	if (ds->tick && (rc = ds->tick(ds->tick_ud)) != 0)
		return sc_err_set(err, rc, "target %s: not sent, the run was "
				  "canceled (lease lost)", t->name);
	/* The lease check right before the send: the store handle is
	 * fenced to the job's lease (store_fence_set), so this commit fails
	 * with SC_ELEASE, and nothing is sent, once another worker took the
	 * job over, even when no heartbeat was due (a paused worker). */
	rc = store_outbox_set_state(ds->store, ds->schedule, ds->slot_ms, t->name,
				    SEND_SENDING, err);
	if (rc)
		return rc;
	FAILPOINT("delivery.after_sending_commit");
	struct target_copy snd = {
		.target = t,
		.body = body,
		.kind = MESSAGE_RESULT, /* the key: attempt 0 for results */
		.schedule = ds->schedule,
		.slot_ms = ds->slot_ms,
		.clock = slot_clock(ds),
		.zone = ds->zone,
		/* The lease is kept during the send as well: a target that
		 * answers after more than the lease would otherwise see
		 * the job recovered mid-send and sent again (issue 42). */
		.keep = ds->keep,
		.keep_ud = ds->tick_ud,
	};
	rc = target_send(&snd, &serr);
	if (rc == 0) {
		FAILPOINT("delivery.after_2xx_before_sent");
		/* If this commit fails the row stays SENDING: the next attempt
		 * treats it as ambiguous, which is the truth. */
		rc = store_outbox_set_state(ds->store, ds->schedule, ds->slot_ms,
					    t->name, SEND_SENT, err);
		if (rc == 0) {
			rep->n_sent++;
			metrics_delivery(t->name, "sent");
			LOG(SC_LOG_INFO, "delivery",
			       "event=sent schedule=%s slot_ms=%lld "
			       "target=%s state=sent",
			       ds->schedule, (long long)ds->slot_ms, t->name);
		}
		return rc;
	}
	/* A send that may have been taken is not a failure for sure: it
	 * ends UNKNOWN, exactly like one cut short by a crash, so that the
	 * next copy is declared first (resend) or never sent (hold). Only a
	 * sure failure (nothing sent, or a definite refusal) is FAILED. */
	bool maybe = serr.ambiguous;
	bool hold = maybe && t->on_ambiguous == AMBIGUOUS_HOLD;
	if (hold)
		rep->n_held++;
	else
		rep->n_failed++;
	/* With the reason: "code=-1013" alone does not tell an operator
	 * that the file target's volume is full (issue 10). Error messages
	 * never hold secrets (surecron.h). */
	char why[2 * SC_ERR_MSG_MAX + 4];
	LOG(maybe ? SC_LOG_ERROR : SC_LOG_WARN, "delivery",
	       "event=send_failed schedule=%s slot_ms=%lld target=%s "
	       "state=%s code=%d http_status=%d msg=%s", ds->schedule,
	       (long long)ds->slot_ms, t->name,
	       hold ? "held" : maybe ? "unknown" : "failed", serr.code,
	       serr.http_status, log_quote(why, sizeof(why), serr.msg));
	struct sc_err ferr = {0};
	metrics_delivery(t->name, maybe ? "unknown" : "failed");
	/* If this commit fails the row stays SENDING, which the next
	 * attempt takes for UNKNOWN: at worst a declared duplicate. */
	if (store_outbox_set_state(ds->store, ds->schedule, ds->slot_ms, t->name,
			     maybe ? SEND_UNKNOWN : SEND_FAILED, &ferr) != 0)
		LOG(SC_LOG_WARN, "delivery",
		       "event=record_failed schedule=%s target=%s "
		       "msg=\"cannot record the failed send\" code=%d",
		       ds->schedule, t->name, ferr.code);
	if (hold) {
		int code = sc_err_set(err, SC_EDELIVERY, "%s; held "
				      "(on_ambiguous: hold): nothing is sent "
				      "until an operator decides (surecron "
				      "release --arrived|--resend)", serr.msg);
		/* Retrying cannot resolve it: only an operator can. */
		err_set_permanent(err);
		return code;
	}
	err_copy(err, &serr);
	return serr.code ? serr.code : SC_EDELIVERY;
}

int outbox_flush(const struct outbox_slot *ds, struct outbox_report *rep,
		 struct sc_err *err)
{
	struct outbox_report local;
	int n_unknown = 0, first = 0, rc;

	if (!rep) {
		rep = &local;
		local.n_abandoned = 0;
	}
	/* n_abandoned is the caller's (outbox_abandon_removed, before). */
	size_t n_abandoned = rep->n_abandoned;
	memset(rep, 0, sizeof(*rep));
	rep->n_abandoned = n_abandoned;
	/* We hold the job's lease: a row still SENDING belongs to an attempt
	 * that died mid-send. */
	rc = store_outbox_mark_unknown(ds->store, ds->schedule, ds->slot_ms,
				       &n_unknown, err);
	if (rc)
		return rc;
	if (n_unknown)
		LOG(SC_LOG_WARN, "delivery",
		       "event=crash_found schedule=%s slot_ms=%lld unknown=%d "
		       "msg=\"sends interrupted by a crash\"", ds->schedule,
		       (long long)ds->slot_ms, n_unknown);

	for (size_t i = 0; i < ds->n_targets; i++) {
		const struct target_spec *t = ds->targets[i];
		struct outbox_entry e = {0};
		struct sc_err terr = {0};

		rc = store_outbox_get(ds->store, ds->schedule, ds->slot_ms, t->name,
				      &e, &terr);
		if (rc == SC_ENOENT)
			sc_err_set(&terr, SC_ESTATE, "target %s: nothing "
				   "staged for this slot", t->name);
		if (rc) {
			rep->n_failed++;
			goto next;
		}
		switch (e.state) {
		case SEND_SENT:
			rep->n_guarded++;
			break;
		case SEND_UNKNOWN:
			if (t->on_ambiguous == AMBIGUOUS_HOLD) {
				rep->n_held++;
				rc = sc_err_set(&terr, SC_EDELIVERY,
						"target %s: held; an earlier "
						"send may have arrived "
						"(on_ambiguous: hold), nothing "
						"sent until an operator "
						"decides (surecron release "
						"--arrived|--resend)", t->name);
				/* Retrying cannot resolve it: only an
				 * operator can. */
				terr.permanent = true;
				LOG(SC_LOG_ERROR, "delivery",
				       "event=held schedule=%s slot_ms=%lld "
				       "target=%s state=held", ds->schedule,
				       (long long)ds->slot_ms, t->name);
				break;
			}
			rc = declare_duplicate(ds, t->name, e.n_tries, false,
					       &terr);
			if (rc)
				break;
			rep->n_duplicates++;
			LOG(SC_LOG_WARN, "delivery",
			       "event=resend schedule=%s slot_ms=%lld "
			       "target=%s msg=\"resending after an ambiguous "
			       "send\"",
			       ds->schedule, (long long)ds->slot_ms, t->name);
			rc = send_one(ds, t, e.body, rep, &terr);
			break;
		case SEND_PENDING:
		case SEND_FAILED:
			rc = send_one(ds, t, e.body, rep, &terr);
			break;
		case SEND_ABANDONED:
			/* Closed when the target was removed, on the
			 * record; taking the target back does not reopen
			 * it (the "abandoned" row says what became of the
			 * copy). */
			break;
		default:
			rc = sc_err_set(&terr, SC_ESTATE, "target %s: send "
					"state %d is not expected here",
					t->name, (int)e.state);
			break;
		}
	next:
		store_outbox_entry_dispose(&e);
		if (rc && !first) {
			first = rc;
			err_copy(err, &terr);
		}
		/* The lease is lost: the slot has a new owner, which sends
		 * the remaining targets; this worker sends nothing more. */
		if (rc == SC_ELEASE)
			break;
	}
	return first;
}

int outbox_release(struct store *s, const char *schedule, int64_t slot_ms,
		   const char *target, bool arrived, int64_t job_id,
		   struct sc_err *err)
{
	struct outbox_entry e = {0};
	int rc = store_outbox_get(s, schedule, slot_ms, target, &e, err);

	if (rc)
		return rc;
	enum send_state st = e.state;
	int n_tries = e.n_tries;
	store_outbox_entry_dispose(&e);
	/* This read only spares a row that is plainly not held a
	 * declaration; the decision is the store's conditional write below
	 * (store_outbox_release), made only from UNKNOWN. */
	if (st != SEND_UNKNOWN)
		return store_release_refused(schedule, target, st, err);
	if (!arrived) {
		/* The row is UNKNOWN because an earlier send may have
		 * arrived, and the operator's look at the receiver cannot
		 * rule out one still to come: a worker paused past its
		 * lease after its SENDING commit sends when it resumes
		 * (the fence stops its writes, not a request it was
		 * already allowed; docs/internals/model.md, "Finding").
		 * So the resend is declared as a flush declares one, and
		 * before the row can be sent again. The order is what
		 * makes it crash-safe: the "duplicate" row is committed
		 * first, then the state change; a crash in between leaves
		 * the row held (UNKNOWN), declared once more by the next
		 * release. FAILED then means "send it", and a FAILED row
		 * is sent with nothing more to declare. If the row
		 * changed between the read above and the state change
		 * (another release, a flush's resend), the change is
		 * refused and the declaration stays: one declared copy
		 * too many, never one undeclared. */
		const struct outbox_slot ds = {
			.store = s,
			.schedule = schedule,
			.slot_ms = slot_ms,
			.job_id = job_id,
			.attempt = 0, /* the operator's: it ends no attempt */
		};
		rc = declare_duplicate(&ds, target, n_tries, true, err);
		if (rc)
			return rc;
	}
	/* Tests change the row here, as a concurrent release or resend
	 * would. */
	FAILPOINT_HOOK("outbox.release_before_change");
	return store_outbox_release(s, schedule, slot_ms, target,
				    arrived ? SEND_SENT : SEND_FAILED, err);
}
