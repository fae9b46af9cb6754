/*
 * ledger.c - what a reader of the ledger decides from its rows (ledger.h):
 * the outcome words, the reading order, and the lost-slot report.
 *
 * Invariants:
 *   - a report lists every lost and missed row of its period: it takes no
 *     limit and no outcome filter, so no row can fall out of it;
 *   - a row counts as recovered only when the same (schedule, slot) has a
 *     success row; its instant is that row's finish (the newest, when a
 *     slot succeeded twice);
 *   - a row counts as acked only when an "acked" row of its schedule
 *     names a range (details first_ms..last_ms) that holds its slot;
 *   - the report is a fixed number of reads whatever the ledger's depth:
 *     the lost and missed rows with their recoveries (store_ledger_lost),
 *     the skipped and the abandoned rows (each a partial index), the acks;
 *   - the store is only read: nothing here writes.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ledger.h"

const char *const ledger_outcomes[] = {
	LEDGER_SUCCESS, LEDGER_FAILED, LEDGER_LOST, LEDGER_STALLED,
	LEDGER_MISSED, LEDGER_DUPLICATE, LEDGER_RELEASED, LEDGER_DECISION,
	LEDGER_ALERT, LEDGER_ACKED, LEDGER_RECOVERED, LEDGER_LATE,
	LEDGER_OVERRUN, LEDGER_STALE, LEDGER_SKIPPED, LEDGER_PAUSED,
	LEDGER_REPLACED, LEDGER_ABANDONED,
};
const size_t ledger_n_outcomes =
	sizeof(ledger_outcomes) / sizeof(ledger_outcomes[0]);

bool ledger_outcome_known(const char *o)
{
	for (size_t i = 0; o && i < ledger_n_outcomes; i++)
		if (strcmp(o, ledger_outcomes[i]) == 0)
			return true;
	return false;
}

int ledger_read(struct store *s, const struct ledger_filter *f,
		struct ledger_row **rows, size_t *n, struct sc_err *err)
{
	int rc = store_ledger_query(s, f, rows, n, err);

	if (rc || !f || !f->newest_first)
		return rc;
	for (size_t i = 0; i < *n / 2; i++) {
		struct ledger_row t = (*rows)[i];
		(*rows)[i] = (*rows)[*n - 1 - i];
		(*rows)[*n - 1 - i] = t;
	}
	return 0;
}

/* The acknowledged ranges of f's schedule(s): the "acked" rows. */
struct acks {
	struct ledger_row *rows;
	size_t n;
};

static int64_t detail_int(const char *json, const char *key, int64_t dflt)
{
	json_t *d = json ? json_loads(json, 0, NULL) : NULL;
	json_t *v = json_object_get(d, key);
	int64_t x = json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;

	json_decref(d);
	return x;
}

/* When r's slot was acked (the newest ack holding it), or 0. */
static int64_t acked_at(const struct acks *a, const struct ledger_row *r)
{
	int64_t at = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct ledger_row *k = &a->rows[i];
		if (strcmp(k->schedule, r->schedule) != 0)
			continue;
		int64_t first = detail_int(k->details_json, "first_ms",
					   k->slot_ms);
		int64_t last = detail_int(k->details_json, "last_ms", first);
		if (r->slot_ms >= first && r->slot_ms <= last)
			at = k->finished_ms ? k->finished_ms : 1;
	}
	return at;
}

int ledger_lost_report(struct store *s, const struct ledger_filter *f,
		       struct ledger_report *out, struct sc_err *err)
{
	struct acks acks = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (f->outcome || f->limit)
		return sc_err_set(err, SC_EINVAL, "the lost-slot report takes "
				  "no outcome filter and no limit");
	/* One read for every row and its recovery, whatever the depth of
	 * the ledger (issue 15): no query per row. */
	rc = store_ledger_lost(s, f, &out->rows, &out->recovered_ms,
			       &out->n, err);
	if (rc)
		return rc;
	/* The skipped slots of the period, by the ledger's outcome read (no
	 * partial index holds them: this read costs the period's rows of
	 * the schedule(s), not the lost ones alone). */
	struct ledger_filter sf = {.schedule = f->schedule,
				   .since_ms = f->since_ms,
				   .until_ms = f->until_ms,
				   .outcome = LEDGER_SKIPPED};
	rc = store_ledger_query(s, &sf, &out->skipped, &out->n_skipped, err);
	if (rc)
		return rc;
	/* The abandoned copies of the period: a partial index of their own
	 * (ledger_abandoned, schema 13), so the read costs their rows. */
	sf.outcome = LEDGER_ABANDONED;
	rc = store_ledger_query(s, &sf, &out->abandoned, &out->n_abandoned,
				err);
	if (rc || out->n == 0)
		return rc;
	out->acked_ms = calloc(out->n, sizeof(*out->acked_ms));
	if (!out->acked_ms)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	/* Every ack of the schedule(s), whatever its slot: an ack of a
	 * missed range is filed under the range's first slot, which may lie
	 * before the period. The acks alone are read (ledger_acked). */
	struct ledger_filter af = {.schedule = f->schedule,
				   .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_ACKED};
	rc = store_ledger_query(s, &af, &acks.rows, &acks.n, err);
	for (size_t i = 0; rc == 0 && i < out->n; i++) {
		out->acked_ms[i] = acked_at(&acks, &out->rows[i]);
		if (out->recovered_ms[i])
			out->n_recovered++;
		else if (out->acked_ms[i])
			out->n_acked++;
		else if (strcmp(out->rows[i].outcome, LEDGER_LOST) == 0)
			out->n_lost++;
		else
			out->n_missed++;
	}
	store_ledger_rows_free(acks.rows, acks.n);
	return rc;
}

void ledger_report_dispose(struct ledger_report *r)
{
	if (!r)
		return;
	store_ledger_rows_free(r->rows, r->n);
	store_ledger_rows_free(r->skipped, r->n_skipped);
	store_ledger_rows_free(r->abandoned, r->n_abandoned);
	free(r->recovered_ms);
	free(r->acked_ms);
	memset(r, 0, sizeof(*r));
}
