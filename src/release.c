/*
 * release.c - an operator's decision on a held send (release.h): the
 * state change, the "decision" ledger row and the job's revival, in that
 * order, for the CLI and the HTTP API alike.
 *
 * Invariants:
 *   - nothing is written when outbox_release refuses (no such send, or
 *     not held), except the "duplicate" row of a --resend whose send
 *     changed between its read and its state change (a concurrent
 *     release or resend): the change is refused, the declaration stays
 *     (one declared copy too many, never one undeclared);
 *   - a resend is declared (a "duplicate" row, by outbox_release) before
 *     the send's state lets a worker send it again: the operator's look
 *     at the receiver cannot see a copy a paused worker has yet to send;
 *   - the row is written only after the state changed, and the job is
 *     revived only after the row is written;
 *   - the row's details hold names and words only (target, decision, by,
 *     uid, via): no secret.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "outbox.h"
#include "queue.h"
#include "release.h"
#include "store.h"

/* The "decision" ledger row of one release. */
static int record_decision(struct store *s, const char *schedule,
			   int64_t slot_ms, const char *target, bool arrived,
			   const char *by, const char *via, int64_t job_id,
			   int64_t now_ms, struct sc_err *err)
{
	struct ledger_row row;
	json_t *d = json_pack("{s:s, s:s, s:s, s:I, s:s}", "target", target,
			      "decision", arrived ? "arrived" : "resend",
			      "by", by, "uid", (json_int_t)getuid(), "via",
			      via);
	char *details = d ? json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER)
			  : NULL;
	int rc;

	json_decref(d);
	if (!details)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	memset(&row, 0, sizeof(row));
	snprintf(row.schedule, sizeof(row.schedule), "%s", schedule);
	row.slot_ms = slot_ms;
	row.job_id = job_id;
	row.attempt = 0;
	row.started_ms = now_ms;
	row.finished_ms = now_ms;
	snprintf(row.outcome, sizeof(row.outcome), "%s", LEDGER_DECISION);
	row.details_json = details;
	rc = store_ledger_append(s, &row, err);
	free(details);
	return rc;
}

int release_decide(struct store *s, const struct schedule_spec *sc,
		   int64_t slot_ms, const char *target, bool arrived,
		   const char *by, const char *via, int64_t now_ms,
		   struct release_result *out, struct sc_err *err)
{
	struct store_job job;
	char msg[SC_ERR_MSG_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	/* No job (pruned, or never had one): the rows say 0. A failed
	 * lookup is taken as none: the decision stands either way. */
	bool have_job = store_job_find(s, sc->name, slot_ms, &job, NULL) == 0;
	out->job_id = have_job ? job.id : 0;
	rc = outbox_release(s, sc->name, slot_ms, target, arrived, out->job_id,
			    err);
	if (rc)
		return rc;
	out->decided = true;
	rc = record_decision(s, sc->name, slot_ms, target, arrived, by, via,
			     out->job_id, now_ms, err);
	if (rc) {
		snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
		sc_err_clear(err);
		return sc_err_set(err, rc, "the decision took effect but could "
				  "not be written to the ledger: %s", msg);
	}
	out->recorded = true;
	if (!have_job || job.state != JOB_DEAD)
		return 0;
	rc = queue_retry_dead(s, job.id, spec_policy(sc)->attempts, err);
	if (rc) {
		snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
		sc_err_clear(err);
		return sc_err_set(err, rc, "job %lld: %s", (long long)job.id,
				  msg);
	}
	out->job_revived = true;
	out->next_attempt = job.attempts + 1;
	return 0;
}
