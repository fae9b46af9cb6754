/*
 * prune.c - retention (prune.h): the horizons of a prune, the batch loop
 * and the daemon's daily run.
 *
 * The rules of what may go live in one place per concern: the horizons
 * here (retention, recovery window, margin), the rows' own rules (what is
 * never deleted: unrecovered lost rows, DEAD jobs, held sends, open
 * alerts, guards of slots that can still run) in the store (store.h,
 * "retention"), the same on every backend.
 *
 * Invariants:
 *   - every horizon is at least the longest recovery window plus
 *     PRUNE_MARGIN_MS before now, whatever the retention says, so nothing
 *     a retry may still need is ever deleted;
 *   - guards and markers are deleted only with retention.jobs set, past
 *     the jobs horizon, which is older than prune_trigger_floor: a slot
 *     that `trigger --slot` still accepts keeps its guard;
 *   - a prune is a sequence of short batches (one transaction each), so
 *     it never holds the store's writer for long, and it can stop between
 *     any two of them: every batch leaves a consistent store.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "prune.h"
#include "surecron.h"

int64_t prune_window_ms(const struct config *c)
{
	int64_t w = 0;

	for (size_t i = 0; c && i < c->n_schedules; i++) {
		const struct sc_retry_policy *pol = spec_policy(&c->schedules[i]);
		struct sc_retry_timeline t;
		if (sc_retry_timeline(pol, 0, &t, NULL) != 0)
			continue;
		/* The delays between attempt starts, plus each attempt's own
		 * run: at most a lease (a stall ends it there). */
		int64_t span = t.window_ms + (int64_t)t.n_attempts * c->lease_ms;
		if (span > w)
			w = span;
	}
	return w;
}

/* now - max(retention, window) - margin; 0 (skip) when not retained. */
static int64_t horizon(int64_t now_ms, int64_t retention_ms, int64_t window)
{
	if (retention_ms <= 0)
		return 0;
	int64_t keep = retention_ms > window ? retention_ms : window;
	int64_t h = now_ms - keep - PRUNE_MARGIN_MS;
	return h > 0 ? h : 0;
}

void prune_plan(const struct config *c, int64_t now_ms,
		struct prune_plan *out)
{
	memset(out, 0, sizeof(*out));
	out->now_ms = now_ms;
	out->window_ms = prune_window_ms(c);
	out->opts.ledger_before_ms =
		horizon(now_ms, c->retention_ledger_ms, out->window_ms);
	out->opts.jobs_before_ms =
		horizon(now_ms, c->retention_jobs_ms, out->window_ms);
	out->opts.outbox_before_ms =
		horizon(now_ms, c->retention_outbox_ms, out->window_ms);
	out->any = c->retention_ledger_ms > 0 || c->retention_jobs_ms > 0 ||
		   c->retention_outbox_ms > 0;
}

int64_t prune_ledger_floor(const struct config *c, int64_t now_ms)
{
	if (!c || c->retention_ledger_ms <= 0)
		return INT64_MIN;
	return horizon(now_ms, c->retention_ledger_ms, prune_window_ms(c));
}

int64_t prune_trigger_floor(const struct config *c, int64_t now_ms)
{
	if (!c || c->retention_jobs_ms <= 0)
		return INT64_MIN;
	return now_ms - c->retention_jobs_ms;
}

/*
 * The next batch size from the last one's: aimed at PRUNE_BATCH_TARGET_MS
 * (proportional: a batch's cost is about linear in its rows once past the
 * fixed part, about one leaf of ledger(schedule, slot_ms) per schedule),
 * at most doubling, within PRUNE_BATCH_MIN .. PRUNE_BATCH_MAX. Doubling
 * blindly went from a 40 ms batch to a 600 ms one on a busy machine.
 */
static int next_batch(int rows, int64_t took_ms, int64_t target_ms)
{
	int64_t want = took_ms > 0 ? (int64_t)rows * target_ms / took_ms
				   : (int64_t)rows * 2;

	if (want > (int64_t)rows * 2)
		want = (int64_t)rows * 2;
	if (want < PRUNE_BATCH_MIN)
		want = PRUNE_BATCH_MIN;
	if (want > PRUNE_BATCH_MAX)
		want = PRUNE_BATCH_MAX;
	return (int)want;
}

int prune_run(struct store *s, const struct prune_plan *p, bool dry_run,
	      int batch_rows, bool (*stop)(void *ud), void *ud,
	      struct prune_report *out, struct sc_err *err)
{
	struct store_prune_opts o = p->opts;
	int64_t t0 = clock_mono_ms();
	bool more = p->any;
	int rc;

	/* <= 0: sized by time (PRUNE_BATCH_TARGET_MS per batch). */
	bool adapt = batch_rows <= 0;
	/* Where claims do not wait on a prune (PostgreSQL's row locks on
	 * other rows), batches only need to stay short transactions. */
	int64_t target = store_one_writer(s) ? PRUNE_BATCH_TARGET_MS
					     : PRUNE_BATCH_TARGET_PG_MS;

	memset(out, 0, sizeof(*out));
	o.dry_run = dry_run;
	if (adapt)
		batch_rows = PRUNE_BATCH_ROWS;
	rc = store_prune_size(s, &out->used_before, &out->file_before,
			      &out->size_how, err);
	while (!rc && more) {
		if (stop && stop(ud)) {
			rc = sc_err_set(err, SC_ECANCELED, "prune stopped");
			break;
		}
		FAILPOINT_STALL("prune.before_batch");
		int64_t b0 = clock_mono_ms();
		rc = store_prune_batch(s, &o, batch_rows, &out->n, &more, err);
		int64_t took = clock_mono_ms() - b0;
		if (took > out->max_batch_ms)
			out->max_batch_ms = took;
		out->n_batches++;
		if (adapt)
			batch_rows = next_batch(batch_rows, took, target);
		/* Let a writer waiting on the lock in (the daemon's busy
		 * handler polls every 2-4 ms): without the gap the next
		 * BEGIN IMMEDIATE wins again and a claim waits for several
		 * batches, not one. */
		if (more) {
			struct timespec ts = {0, PRUNE_YIELD_MS * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (batch_rows > out->max_batch_rows)
			out->max_batch_rows = batch_rows;
	}
	if (!rc)
		rc = store_prune_size(s, &out->used_after, &out->file_after,
				      &out->size_how, err);
	out->elapsed_ms = clock_mono_ms() - t0;
	return rc;
}

bool prune_daily_due(struct prune_daily *pd, int64_t now_ms)
{
	if (pd->next_ms == 0)
		pd->next_ms = now_ms + PRUNE_FIRST_DELAY_MS;
	return now_ms >= pd->next_ms;
}

int prune_daily_tick(struct prune_daily *pd, struct store *s,
		     const struct config *c, int64_t now_ms,
		     const char *owner, bool (*stop)(void *ud), void *ud,
		     bool *ran, struct sc_err *err)
{
	struct prune_plan p;
	struct prune_report r;
	bool won = false;
	int rc;

	if (ran)
		*ran = false;
	if (!prune_daily_due(pd, now_ms))
		return 0;
	prune_plan(c, now_ms, &p);
	if (!p.any) {
		pd->next_ms = now_ms + PRUNE_EVERY_MS;
		return 0;
	}
	rc = store_lease_take(s, PRUNE_LEASE_NAME, owner, PRUNE_LEASE_MS,
			      &won, err);
	if (rc)
		return rc; /* the store is down: try again at the next pass */
	pd->next_ms = now_ms + PRUNE_EVERY_MS;
	if (!won) {
		LOG(SC_LOG_DEBUG, "prune", "event=prune_skipped reason=lease "
		       "lease=" PRUNE_LEASE_NAME);
		return 0;
	}
	rc = prune_run(s, &p, false, 0, stop, ud, &r, err);
	if (rc) {
		LOG(SC_LOG_WARN, "prune", "event=prune_failed code=%s "
		       "msg=\"%s\" ledger=%lld jobs=%lld", sc_strerror(rc),
		       err ? err->msg : "", (long long)r.n.n_ledger,
		       (long long)r.n.n_jobs);
		return rc;
	}
	if (ran)
		*ran = true;
	LOG(SC_LOG_INFO, "prune", "event=prune ledger=%lld jobs=%lld "
	       "bodies=%lld guards=%lld markers=%lld alerts=%lld "
	       "alert_sends=%lld bytes_freed=%lld batches=%lld "
	       "max_batch_ms=%lld ms=%lld", (long long)r.n.n_ledger,
	       (long long)r.n.n_jobs, (long long)r.n.n_bodies,
	       (long long)r.n.n_guards, (long long)r.n.n_markers,
	       (long long)r.n.n_alerts, (long long)r.n.n_alert_sends,
	       (long long)(r.used_before - r.used_after),
	       (long long)r.n_batches, (long long)r.max_batch_ms,
	       (long long)r.elapsed_ms);
	return 0;
}
