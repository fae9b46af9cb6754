/*
 * release.h - an operator's decision on a send held after a crash (a
 * target with `on_ambiguous: hold`, docs/internals/delivery.md), as
 * `surecron release` and POST /api/release make it.
 *
 * A held (UNKNOWN) send may or may not have reached its target; the
 * operator says which. The decision is part of the record: a "decision"
 * ledger row (attempt 0) says which target of which slot, what was
 * decided, by whom and through what. Order, so that the record never
 * says more than what happened:
 *
 *   1. the send's state: arrived -> SENT (the send guard), resend ->
 *      FAILED, after a "duplicate" ledger row declares the resend
 *      (outbox_release: a copy sent before the decision may still land
 *      after it, from a worker paused past its lease);
 *   2. the "decision" row (after 1: a row always stands for a decision
 *      that took effect);
 *   3. the slot's job, if it died of the hold, READY again with the
 *      schedule's budget (after 2: the row comes before the attempts it
 *      causes), so a worker finishes the slot.
 *
 * Thread-safety: as the store handle it is given (one thread at a time).
 */
#ifndef SURECRON_RELEASE_H
#define SURECRON_RELEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "surecron.h"

struct store;
struct schedule_spec;

/* How far a release went; set as each step completes, so a caller can
 * say what took effect even when a later step failed. */
struct release_result {
	bool decided;        /* step 1 done: the send's state changed */
	bool recorded;       /* step 2 done: the ledger row is written */
	bool job_revived;    /* step 3 done: the job is READY again */
	int64_t job_id;      /* the slot's job, 0 when none */
	int next_attempt;    /* job_revived: the attempt it goes on from */
};

/*
 * Releases target's held send of sc's slot slot_ms: arrived true marks it
 * SENT, false FAILED (after its "duplicate" row). by names who decided (not NULL, at most 64 bytes),
 * via what made the decision ("surecron release", "http api"); both go
 * into the row's details with the process's uid. now_ms is the row's
 * time. *out is always filled.
 *
 * Returns 0; outbox_release's SC_ENOENT (no such send) or SC_ESTATE (the
 * send is not held) with nothing changed; or, after step 1, the error of
 * the row (err: "the decision took effect but could not be written to
 * the ledger: ...") or of the revival (err: "job N: ...").
 */
int release_decide(struct store *s, const struct schedule_spec *sc,
		   int64_t slot_ms, const char *target, bool arrived,
		   const char *by, const char *via, int64_t now_ms,
		   struct release_result *out, struct sc_err *err);

#endif
