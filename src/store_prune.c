/*
 * store_prune.c - the store's prune policy (store.h, "retention"), once
 * for every backend: the phases of a prune and their order, the horizon
 * each phase reads, what each step counts, the position of the batch
 * loop, and the never-remove list below. A backend only runs the step
 * asked of it (store_ops.prune_step: "delete up to N rows of this phase's
 * table older than H that the list keeps not"), in its SQL. prune.c,
 * above the store, computes the horizons and sizes the batches.
 *
 * The phases, in order (enum store_prune_phase), and why that order:
 *   1. ledger  (horizon ledger_before)
 *   2. alerts  (ledger_before; an alert's sends first, same transaction)
 *   3. jobs    (jobs_before)
 *   4. bodies  (outbox_before)
 *   5. guards  (jobs_before; a guard's body with it)
 *   6. markers (jobs_before)
 * Jobs go before guards and markers, so that a slot whose DONE job went
 * in this run frees its guard and marker in the same run; guards go
 * before markers, which wait for every outbox row of their slot to be
 * closed. Bodies go before guards and leave those the guards phase takes
 * (store_prune_step.jobs_before_ms), so each body is counted once, dry
 * run or not.
 *
 * The never-remove list: whatever the horizon, a prune keeps
 *   K1 an unrecovered, unacknowledged "lost" or "missed" ledger row (no
 *      "success" row of its (schedule, slot), no "acked" row of its
 *      schedule whose first_ms..last_ms, read from details_json as
 *      ledger.c reads them, holds it): it is the record that a run was
 *      lost, which `ledger --lost` and `audit` report until an operator
 *      acknowledges it or a run recovers it;
 *   K2 an "acked" row that covers a lost or missed row left in the
 *      ledger (one outside the step's slots or past the horizon): else a
 *      kept row would turn unacknowledged and be reported again;
 *   K3 the newest row, the newest success and the newest run of each
 *      schedule (its ledger_head): `status` shows them as the last
 *      outcome and /metrics as the last success, and a weekly schedule
 *      under a short retention must not read as never run;
 *   K4 part of a slot's ledger rows: a ledger step takes whole slots, so
 *      a success never goes before the lost row it recovers;
 *   K5 an OPEN alert, and a closed one with a send not SENT or ABANDONED
 *      (its notice is still owed);
 *   K6 a READY, ACTIVE or DEAD job (it may still run, or an operator may
 *      revive it with `retry`): only DONE jobs go;
 *   K7 the body of an outbox row that is not SENT, or of a slot with no
 *      marker (it may still be sent, or sent again after a crash);
 *   K8 a send guard (outbox row) that is not SENT or ABANDONED (a send
 *      in flight or held), or of a slot with a READY, ACTIVE or DEAD job
 *      (the guard is what stops a second copy when it runs again);
 *   K9 a slot marker of a slot with a READY, ACTIVE or DEAD job or with
 *      an outbox row still open, and the newest marker of each schedule
 *      (the timing checks read it as the last delivery);
 *   K10 anything inside the longest recovery window plus a margin, and
 *      guards and markers without retention.jobs (prune.c, the horizons:
 *      a slot `trigger --slot` still accepts keeps its guard).
 * docs/internals/prune.md names the test of each rule; both backends run
 * them (tests/unit/test_prune.c, tb_run_all).
 *
 * Invariants:
 *   - res->phase is 0 before a run's first step, else 1 + the phase under
 *     way, whose steps so far end at res->cursor; it only moves after a
 *     step succeeded, so a failed step is retried from the same place.
 *   - No rule depends on what an earlier step of the same run deleted,
 *     so a dry run (each step rolled back) counts what a real run
 *     deletes.
 */
#include <limits.h>
#include <stddef.h>

#include "store.h"

/* Each phase's horizon and counters, as offsets into store_prune_opts
 * and store_prune_result (more: 0 when the phase has no second table). */
static const struct {
	size_t before, rows, more;
} phases[STORE_PRUNE_N_PHASE] = {
	[STORE_PRUNE_LEDGER] = {
		offsetof(struct store_prune_opts, ledger_before_ms),
		offsetof(struct store_prune_result, n_ledger), 0},
	[STORE_PRUNE_ALERTS] = {
		offsetof(struct store_prune_opts, ledger_before_ms),
		offsetof(struct store_prune_result, n_alerts),
		offsetof(struct store_prune_result, n_alert_sends)},
	[STORE_PRUNE_JOBS] = {
		offsetof(struct store_prune_opts, jobs_before_ms),
		offsetof(struct store_prune_result, n_jobs), 0},
	[STORE_PRUNE_BODIES] = {
		offsetof(struct store_prune_opts, outbox_before_ms),
		offsetof(struct store_prune_result, n_bodies), 0},
	[STORE_PRUNE_GUARDS] = {
		offsetof(struct store_prune_opts, jobs_before_ms),
		offsetof(struct store_prune_result, n_guards),
		offsetof(struct store_prune_result, n_bodies)},
	[STORE_PRUNE_MARKERS] = {
		offsetof(struct store_prune_opts, jobs_before_ms),
		offsetof(struct store_prune_result, n_markers), 0},
};

static int64_t before_of(const struct store_prune_opts *o, int ph)
{
	return *(const int64_t *)(const void *)((const char *)o +
						 phases[ph].before);
}

static void count(struct store_prune_result *r, size_t off, int64_t n)
{
	*(int64_t *)(void *)((char *)r + off) += n;
}

int store_prune_next(const struct store_ops *ops, void *impl,
		     const struct store_prune_opts *o, int max_rows,
		     struct store_prune_result *res, bool *more,
		     struct sc_err *err)
{
	bool first = res->phase == 0;
	int ph = first ? 0 : res->phase - 1;
	int64_t before = 0;
	struct store_prune_done d = {.until = INT64_MAX, .last = true};
	int rc;

	if (first)
		res->cursor = INT64_MIN;
	/* A retention of 0 skips its phases. */
	while (ph < STORE_PRUNE_N_PHASE && (before = before_of(o, ph)) <= 0) {
		ph++;
		res->cursor = INT64_MIN;
	}
	res->phase = ph + 1;
	if (ph >= STORE_PRUNE_N_PHASE) {
		*more = false;
		return 0;
	}
	struct store_prune_step st = {
		.phase = (enum store_prune_phase)ph,
		.before_ms = before,
		.jobs_before_ms = ph == STORE_PRUNE_BODIES ? o->jobs_before_ms
							   : 0,
		.after = res->cursor,
		.max_rows = max_rows,
		.dry_run = o->dry_run,
		.first = first,
	};
	rc = ops->prune_step(impl, &st, &d, err);
	if (rc)
		return rc;
	count(res, phases[ph].rows, d.n_rows);
	if (phases[ph].more)
		count(res, phases[ph].more, d.n_more);
	if (d.last) {
		res->phase = ph + 2;
		res->cursor = INT64_MIN;
	} else {
		res->cursor = d.until;
	}
	*more = res->phase <= STORE_PRUNE_N_PHASE;
	return 0;
}
