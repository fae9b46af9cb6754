/*
 * outbox.h - the outbox flow: what makes a result go out once.
 *
 *   outbox_stage  stores the composed message for every target first;
 *   outbox_abandon_removed closes the copies of targets the schedule no
 *                   longer has (a reload removed them), on the record;
 *   outbox_flush  sends to every target without a send guard, moving
 *                   each row PENDING|FAILED -> SENDING -> SENT|FAILED|
 *                   UNKNOWN (UNKNOWN: the send failed but may have
 *                   arrived), and deciding what a row found SENDING after
 *                   a crash becomes (UNKNOWN, then resend or hold).
 *
 * Thread-safety: every function may run in several threads at once, each
 * with its own store handle.
 */
#ifndef SURECRON_OUTBOX_H
#define SURECRON_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"

/* The most targets one slot may have: a run of a schedule with more
 * fails, permanently (orchestrator.c). */
#define OUTBOX_MAX_TARGETS 64

/* The slot a flush works for (all borrowed). */
struct outbox_slot {
	struct store *store;
	struct sc_clock *clock;     /* NULL: the store's */
	const char *schedule;
	const struct sc_zone *zone; /* the schedule's (mail subjects); NULL:
				       UTC */
	int64_t slot_ms;
	int64_t job_id;             /* for ledger rows; 0 when none */
	int attempt;
	const struct target_spec *const *targets;
	size_t n_targets;
	int (*tick)(void *ud);      /* called before each send (NULL: none);
				       non-zero: that target is not sent */
	void (*keep)(void *ud);     /* called with tick_ud during each send
				       (target_copy.keep; NULL: none) */
	void *tick_ud;
};

struct outbox_report {
	size_t n_abandoned;  /* copies of removed targets closed unsent
				(outbox_abandon_removed) */
	size_t n_sent;       /* sent by this flush */
	size_t n_guarded;    /* already SENT before it: not sent again */
	size_t n_failed;     /* failed this time (retry will resend) */
	size_t n_held;       /* UNKNOWN with on_ambiguous: hold */
	size_t n_duplicates; /* UNKNOWN resent: a "duplicate" ledger row each */
};

/*
 * Where an attempt starts, in one store read: *marked when the slot is
 * complete already (nothing to do; then *staged is false), else *staged
 * when anything of it is in the outbox. *body gets a copy of the stored
 * message of the first target that has a row (allocated; NULL when none;
 * pass NULL to skip). A slot with rows was generated already: a retry
 * resends, it does not run the tasks again. At most OUTBOX_MAX_TARGETS
 * targets.
 */
int outbox_look(const struct outbox_slot *ds, bool *marked, bool *staged,
		char **body, struct sc_err *err);

/*
 * outbox_look that also says, in *n_others, how many outbox rows the
 * slot has for targets that are not ds->targets (0 for a marked slot):
 * targets removed from the schedule since they were staged, for
 * outbox_abandon_removed. The same one store read.
 */
int outbox_look_others(const struct outbox_slot *ds, bool *marked,
		       bool *staged, char **body, size_t *n_others,
		       struct sc_err *err);

/*
 * Closes every copy of the slot staged for a target that is not one of
 * ds->targets any more (issue 43: the target was removed from the
 * schedule by a reload) and that was not sent: PENDING, SENDING, FAILED
 * or UNKNOWN rows become ABANDONED, each with a LEDGER_ABANDONED row
 * naming the target and whether the copy may have arrived (SENDING or
 * UNKNOWN: an earlier send may have been taken; PENDING or FAILED: it
 * surely was not), in one store transaction each. SENT rows stay as they
 * are (delivered), ABANDONED ones too (closed already). rep->n_abandoned
 * counts the rows closed (rep may be NULL). When body is given and *body
 * is NULL, *body gets a copy of the message of one of those rows (the
 * slot's result, generated once: the current targets get the same one;
 * allocated, NULL when none). A failure stops at the row it met (the
 * next attempt goes on); SC_ELEASE when the fence refused a write.
 */
int outbox_abandon_removed(const struct outbox_slot *ds,
			   struct outbox_report *rep, char **body,
			   struct sc_err *err);

/*
 * Stores body as the message of every target that has no outbox row yet
 * (PENDING); rows already there are left as they are (the first composed
 * message is the one that goes out). Must complete before any send.
 */
int outbox_stage(const struct outbox_slot *ds, const char *body,
		 struct sc_err *err);

/*
 * Sends the staged message to every target whose row is not SENT.
 * First, rows left SENDING by a crashed attempt become UNKNOWN; then each
 * UNKNOWN row follows its target's on_ambiguous: resend (a "duplicate"
 * ledger row declares the possible extra copy, then it is sent again) or
 * hold (nothing is sent; the row stays UNKNOWN until an operator runs
 * outbox_release, which declares a resend the same way). A send that fails ambiguously (err->ambiguous of
 * target_send) leaves its row UNKNOWN as well, for the next attempt to
 * resend that way; with hold it is held at once (n_held, a permanent
 * error). A sure failure leaves it FAILED. A failed target never stops
 * the next one.
 * Returns 0 when every target's row is SENT; else the first target's error
 * in order (SC_EDELIVERY with the status and hint, permanent for a hold).
 * Writes no slot marker: the caller does, after this returns 0.
 */
int outbox_flush(const struct outbox_slot *ds, struct outbox_report *rep,
		 struct sc_err *err);

/*
 * An operator's decision on a held (UNKNOWN) row: arrived = true makes it
 * SENT (the copy did arrive), false makes it FAILED (the next attempt
 * sends it) after a "duplicate" ledger row declares the resend, as a
 * flush declares one: an earlier send may still land after the operator
 * looked (a worker paused past its lease with its request not yet out).
 * That row names job_id (0: none) and attempt 0. SC_ESTATE when the row
 * is not UNKNOWN, SC_ENOENT when none: nothing written. An error of the
 * declaration leaves the row UNKNOWN; one of the state change leaves
 * the declaration standing (a resend declared that did not happen: the
 * safe side).
 */
int outbox_release(struct store *s, const char *schedule, int64_t slot_ms,
		   const char *target, bool arrived, int64_t job_id,
		   struct sc_err *err);

#endif
