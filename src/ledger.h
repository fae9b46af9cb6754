/*
 * ledger.h - reading the ledger as an operator does: rows in the order
 * they were written, and the lost-slot report.
 *
 * The store keeps the rows (store.h: store_ledger_append and
 * store_ledger_query); this module holds what a reader of the record
 * decides from them, so that every surface that shows the ledger (the
 * `ledger` command today, an HTTP API tomorrow) says the same thing:
 *
 *   - which words are outcomes (ledger_outcome_known);
 *   - rows come oldest first, even when the filter asked for the newest N
 *     (ledger_read);
 *   - a lost or missed slot that later succeeded (after `retry` or
 *     `trigger --slot`) is "recovered": still listed, with the instant of
 *     that success, but it no longer counts as lost (ledger_lost_report).
 *     A lost or missed slot an operator acknowledged (an "acked" row
 *     whose first_ms..last_ms holds it: surecron ack) is "acked": still
 *     listed, no longer counted. The report fails while a slot of the
 *     period is lost or missed and neither: the alarm stops once the
 *     operator fixed it or took it on.
 *   - a staged copy closed because its target was removed from the
 *     schedule (an "abandoned" row) is listed and counted by the report,
 *     apart: the removal was the operator's act, and the slot's own
 *     outcome (delivered to the other targets, or lost) is on record.
 */
#ifndef SURECRON_LEDGER_H
#define SURECRON_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "surecron.h"

/* The outcome words, in the order `ledger --outcome` lists them. */
extern const char *const ledger_outcomes[];
extern const size_t ledger_n_outcomes;

/* Is o one of the LEDGER_* words? */
bool ledger_outcome_known(const char *o);

/*
 * The rows f selects, oldest first (f->newest_first picks the newest
 * f->limit rows, which are then turned around). *rows is allocated
 * (release with store_ledger_rows_free(*rows, *n)); 0 or the store's
 * error.
 */
int ledger_read(struct store *s, const struct ledger_filter *f,
		struct ledger_row **rows, size_t *n, struct sc_err *err);

/* The lost-slot report of a period (ledger_lost_report). */
struct ledger_report {
	struct ledger_row *rows;  /* lost and missed rows, oldest first */
	int64_t *recovered_ms;    /* per row: when a later attempt
				     succeeded (its finish), 0 when none */
	int64_t *acked_ms;        /* per row: when an operator acked it
				     (surecron ack), 0 when not */
	size_t n;
	size_t n_lost;            /* lost, neither recovered nor acked:
				     these fail it */
	size_t n_missed;          /* missed (catchup), the same */
	size_t n_recovered;       /* lost or missed, then recovered */
	size_t n_acked;           /* lost or missed, acked, not recovered */
	/* Slots not run by `overlap: skip` (LEDGER_SKIPPED), oldest first:
	 * listed and counted apart, they never fail the report. */
	struct ledger_row *skipped;
	size_t n_skipped;
	/* Staged copies of targets removed from their schedule, closed
	 * unsent (LEDGER_ABANDONED, issue 43), oldest first: listed and
	 * counted apart; they never fail the report (the slot itself was
	 * delivered, or is lost and counted as such). */
	struct ledger_row *abandoned;
	size_t n_abandoned;
};

/*
 * Fills *out with the lost and missed rows that f selects (f->outcome
 * and f->limit must be unset: a report that drops a row could turn its
 * verdict green; SC_EINVAL otherwise) and, for each, whether the slot
 * recovered later. Release with ledger_report_dispose, also after an
 * error. 0, SC_ENOMEM, or the store's error.
 */
int ledger_lost_report(struct store *s, const struct ledger_filter *f,
		       struct ledger_report *out, struct sc_err *err);

/* Releases what out holds and zeroes it. */
void ledger_report_dispose(struct ledger_report *r);

#endif
