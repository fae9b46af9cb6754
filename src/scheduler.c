/*
 * scheduler.c - schedules -> slots -> jobs (scheduler.h tells the whole
 * story; docs/internals/scheduler.md has the examples).
 *
 * Invariants kept here:
 *   - A slot at or before the recorded last instant L of its schedule is
 *     never enqueued again by the scheduler: this is what makes a wall
 *     clock set backwards harmless (nothing is re-run).
 *   - Every slot in (L, now] either gets a job (enqueue, idempotent) or a
 *     "missed" ledger row (one per slot up to a cap, then one summarising
 *     row): nothing between two ticks disappears from the record.
 *   - The order of writes is missed rows -> enqueue -> store_sched_last_set, so
 *     a crash between them is repaired by the next tick: it sees the same
 *     (L, now] window, enqueues idempotently, and skips missed rows that
 *     exist already (or whose slot has a job), then records L.
 *   - A slot has at most one missed row, whatever the nodes do: the check
 *     above is read-then-write, so two nodes catching up the same downtime
 *     at once may both decide to write it; the store's unique index
 *     (schema 2) keeps the first and drops the second, which is then not
 *     counted in n_missed.
 *   - One missed alert per catch-up pass (alert_raise_missed, when
 *     opts.alert_missed): raised after the missed rows and before the
 *     enqueue, keyed by the first slot of the pass that does not run, so a
 *     pass replayed after a crash, or run by two nodes, raises it once.
 *   - The work per call is bounded whatever the gap: at most
 *     SCAN_BUDGET cron steps forward from L; beyond that the middle of
 *     the gap is summarised without being enumerated, and only the newest
 *     slots (found by scanning back-off windows that end at now) matter.
 *   - A rename is not a first start: a schedule with no state whose
 *     renamed_from names have some takes over the newest of their states
 *     (recorded under the new name before anything else, so once), and
 *     its first window is (old L, now], as if the name had not changed.
 *     Jobs and ledger rows of the old name are never rewritten.
 *   - No clock is read: now_ms comes from the caller (pure over config,
 *     store, now), so the daemon and `simulate` drive the same code.
 *   - The plan (scheduler_plan_*) runs the same pass per schedule with
 *     the last slot it keeps in memory instead of a read: its heap holds
 *     every schedule that can fire (not retrying) exactly once, keyed by
 *     the first slot after max(last, the tick's now), so a tick pops
 *     exactly the due ones and an idle tick makes no store call. Its copy
 *     of last only moves after the store has it (written through, or the
 *     batch committed), and is read again before a catch-up, so a copy
 *     behind the store (another node ticked first) never turns that
 *     node's slots into missed rows or alerts here. The batch of a tick
 *     holds only passes with nothing missed; their jobs and states commit
 *     in one transaction (both or neither), so "missed rows -> enqueue ->
 *     last_set" holds per schedule.
 *   - `catchup_window:` bounds lateness whatever `catchup` says: a late
 *     slot older than the window (now - slot > window) never runs; it
 *     gets a missed row (and the missed alert) like any slot not run.
 *   - `jitter:` moves only run_at (slot + scheduler_jitter_ms, a hash of
 *     (schedule, slot)): the slot, its ledger rows and its keys stay the
 *     slot. Such a schedule's jobs are enqueued one by one with their
 *     run_at (never through the batch, whose jobs are due at the slot).
 *   - A slot inside its schedule's pause is neither run nor missed: it
 *     gets one paused row (the store keeps one per slot, schema 7), and
 *     choose() never takes it, so a catch-up owes nothing for it. A
 *     disabled schedule writes nothing but its state.
 *   - `overlap: skip`, `buffer_one` and `replace` are judged when a slot
 *     falls due, here, through the store (so across nodes): a skip slot while
 *     another job of its schedule is READY or ACTIVE, a buffer_one slot
 *     while one is READY, gets a `skipped` row (cause overlap, buffered)
 *     and no job. Such schedules never go through the batch: each slot is
 *     judged after the one before it is enqueued. A slot with a job or a
 *     skipped row already (a pass replayed after a crash) is not judged
 *     again, so it is recorded once. A `replace` slot is always
 *     enqueued; before that, every ACTIVE job of an earlier slot of its
 *     schedule is finished DONE with a `replaced` row (fenced by the
 *     job's own lease token), which its worker sees at its next
 *     heartbeat and ends the task (worker.c).
 *   - No cron is parsed and no zone loaded here: each schedule comes
 *     resolved from config_parse (spec.h: expr, zone, policy), so a tick
 *     costs no parse and fires on exactly what the config validated.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alert.h"
#include "clock.h"
#include "failpoint.h"
#include "log.h"
#include "metrics.h"
#include "queue.h"
#include "scheduler.h"

/* Cron steps one forward scan may take before the gap is summarised (a
 * per-second schedule: a little over a day). sc_cron_next costs about a
 * microsecond, so this bounds a catch-up to a fraction of a second. */
#define SCAN_BUDGET 100000

/* FNV-1a over the name and the slot's 8 bytes, then a 64-bit finaliser
 * (splitmix64's), so neighbouring slots get unrelated offsets. Only bytes
 * enter it, never a pointer or the host's byte order: stable everywhere. */
int64_t scheduler_jitter_ms(const struct schedule_spec *spec, int64_t slot_ms)
{
	uint64_t h = 1469598103934665603ULL, u = (uint64_t)slot_ms;

	if (!spec || spec_x(spec)->jitter_ms <= 0)
		return 0;
	for (const char *c = spec->name ? spec->name : ""; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 1099511628211ULL;
	}
	for (int i = 0; i < 8; i++) {
		h ^= (u >> (8 * i)) & 0xff;
		h *= 1099511628211ULL;
	}
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	/* Whole seconds (a jitter under 1 s: milliseconds), so every start
	 * instant prints and parses back exactly; ceil keeps the last one,
	 * (n - 1) s, below jitter_ms. */
	if (spec_x(spec)->jitter_ms < 1000)
		return (int64_t)(h % (uint64_t)spec_x(spec)->jitter_ms);
	uint64_t n = ((uint64_t)spec_x(spec)->jitter_ms + 999) / 1000;
	return (int64_t)(h % n) * 1000;
}

int64_t scheduler_start_ms(const struct schedule_spec *spec, int64_t slot_ms)
{
	return slot_ms + scheduler_jitter_ms(spec, slot_ms);
}

int64_t scheduler_deadline_at(const struct schedule_spec *spec,
			      int64_t slot_ms)
{
	if (!spec || spec_x(spec)->deadline_ms <= 0 ||
	    slot_ms > INT64_MAX - spec_x(spec)->deadline_ms)
		return INT64_MAX;
	return slot_ms + spec_x(spec)->deadline_ms;
}

int scheduler_timeline(const struct schedule_spec *spec, int64_t slot_ms,
		       struct sc_retry_timeline *out, int *n_cut,
		       struct sc_err *err)
{
	int64_t start = scheduler_start_ms(spec, slot_ms);
	int64_t dl = scheduler_deadline_at(spec, slot_ms);
	int rc = sc_retry_timeline(spec_policy(spec), start, out, err);
	int n = 0;

	if (rc)
		return rc;
	/* The first attempt always counts (a start past the deadline is a
	 * config check's business: jitter >= deadline); later ones that
	 * would start after the deadline never do. */
	while (out->n_attempts > 1 &&
	       out->attempt_ms[out->n_attempts - 1] > dl) {
		out->attempt_ms[--out->n_attempts] = 0;
		n++;
	}
	out->window_end_ms = out->attempt_ms[out->n_attempts - 1];
	out->window_ms = out->window_end_ms - start;
	if (n_cut)
		*n_cut = n;
	return 0;
}

static const char *catchup_name(enum catchup c)
{
	switch (c) {
	case CATCHUP_ALL: return "all";
	case CATCHUP_NONE: return "none";
	case CATCHUP_LATEST: break;
	}
	return "latest";
}

/* What one schedule's window (L, now] holds, as far as it was enumerated. */
struct window {
	int64_t *head;      /* the earliest slots, in order */
	size_t n_head, cap_head;
	int64_t *ring;      /* the newest slots seen (ring buffer) */
	size_t n_ring, cap_ring, ring_pos; /* ring_pos: next write index */
	uint64_t total;     /* slots seen (exact when counted) */
	bool counted;       /* false: the middle was skipped, total is a floor */
};

static void ring_push(struct window *w, int64_t slot)
{
	size_t cap = w->cap_ring;

	if (cap == 0)
		return;
	w->ring[w->ring_pos] = slot;
	if (++w->ring_pos >= cap)
		w->ring_pos = 0;
	if (w->n_ring < cap)
		w->n_ring++;
}

/* The i-th newest slot of the ring (0 = newest; i < n_ring). */
static int64_t ring_newest(const struct window *w, size_t i)
{
	size_t k = w->ring_pos + w->cap_ring - 1 - i;

	if (k >= w->cap_ring)
		k -= w->cap_ring;
	return w->ring[k];
}

/*
 * Steps through the slots in (from, to], at most budget of them, pushing
 * each into the ring (and into head while it has room, when fill_head).
 * *last gets the last slot seen (from when none). Returns 0 with
 * *exhausted telling whether the budget ran out before `to`, or a cron
 * error. SC_ENEVER from the engine just means "no more slots".
 */
static int scan(const struct sc_cron *c, const struct sc_zone *z,
		int64_t from, int64_t to, size_t budget, bool fill_head,
		struct window *w, int64_t *last, bool *exhausted,
		struct sc_err *err)
{
	int64_t t = from;

	*exhausted = false;
	for (size_t i = 0;; i++) {
		int64_t next;
		struct sc_err e = {0};
		int rc = sc_cron_next(c, z, t, &next, &e);

		if (rc == SC_ENEVER)
			break;
		if (rc) {
			sc_err_set(err, rc, "%s", e.msg);
			return rc;
		}
		if (next > to)
			break;
		if (i >= budget) {
			*exhausted = true;
			break;
		}
		if (fill_head && w->n_head < w->cap_head)
			w->head[w->n_head++] = next;
		ring_push(w, next);
		w->total++;
		t = next;
	}
	*last = t;
	return 0;
}

/* The ring and count as the forward scan left them, restored before each
 * tail window so that the ring ends up holding the newest slots of both,
 * in order (every tail slot is newer than every forward one). */
struct ring_save {
	int64_t *ring;
	size_t n_ring, ring_pos;
	uint64_t total;
};

/* Scans the tail window (now - span, now] (never reaching back before
 * `last`, where the forward scan stopped) on top of the saved state. */
static int tail_window(const struct sc_cron *c, const struct sc_zone *z,
		       int64_t last, int64_t now, int64_t span,
		       const struct ring_save *sv, struct window *w,
		       int64_t *start, uint64_t *seen, bool *exhausted,
		       struct sc_err *err)
{
	int64_t tail_last;

	*start = now - span <= last ? last : now - span;
	memcpy(w->ring, sv->ring, w->cap_ring * sizeof(*w->ring));
	w->n_ring = sv->n_ring;
	w->ring_pos = sv->ring_pos;
	w->total = sv->total;
	int rc = scan(c, z, *start, now, SCAN_BUDGET, false, w, &tail_last,
		      exhausted, err);
	*seen = w->total - sv->total;
	return rc;
}

/*
 * Enumerates (L, now] into w. When the forward scan runs out of budget,
 * the head (earliest slots) is kept and the newest slots are found by
 * scanning windows (now - span, now] whose span doubles until they hold
 * enough slots for the ring (or reach the scanned part): the slots between
 * are the uncounted gap. A window that itself runs out of budget (a burst
 * of per-second slots after a quiet stretch, `* * 1 * *`) is narrowed by
 * bisection, a bounded number of times.
 */
static int enumerate(const struct sc_cron *c, const struct sc_zone *z,
		     int64_t from, int64_t now, struct window *w,
		     struct sc_err *err)
{
	int64_t last, start;
	uint64_t seen;
	bool exhausted;
	int rc = scan(c, z, from, now, SCAN_BUDGET, true, w, &last,
		      &exhausted, err);

	if (rc || !exhausted)
		return rc;
	struct ring_save sv = {.n_ring = w->n_ring, .ring_pos = w->ring_pos,
			       .total = w->total};
	sv.ring = malloc(w->cap_ring * sizeof(*sv.ring));
	if (!sv.ring)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	memcpy(sv.ring, w->ring, w->cap_ring * sizeof(*sv.ring));

	/* A cron fires at most once a second, so a window of span seconds
	 * holds at most span slots: start with the ring's size. */
	int64_t span = (int64_t)w->cap_ring * 1000, lo = 0;
	for (;;) {
		rc = tail_window(c, z, last, now, span, &sv, w, &start, &seen,
				 &exhausted, err);
		if (rc || exhausted || start == last || seen >= w->cap_ring ||
		    span > INT64_MAX / 4)
			break;
		lo = span;
		span *= 2;
	}
	/* Too many slots in the last window: bisect between the last span
	 * that fitted (lo) and this one. */
	bool too_dense = !rc && exhausted;
	for (int i = 0; too_dense && i < 16 && span - lo > 1000; i++) {
		int64_t mid = lo + (span - lo) / 2;
		rc = tail_window(c, z, last, now, mid, &sv, w, &start, &seen,
				 &exhausted, err);
		if (rc || (!exhausted && seen >= w->cap_ring)) {
			too_dense = false;
			break;
		}
		if (exhausted)
			span = mid;
		else
			lo = mid;
	}
	if (too_dense)
		/* Still too dense: settle for the window that fitted. */
		rc = tail_window(c, z, last, now, lo, &sv, w, &start, &seen,
				 &exhausted, err);
	w->counted = start == last && !exhausted;
	free(sv.ring);
	return rc;
}

static void window_dispose(struct window *w)
{
	free(w->head);
	free(w->ring);
}

static bool in_set(const int64_t *v, size_t n, int64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* Is slot inside the pause pz (NULL: none)? [from_ms, until_ms). */
static bool in_pause(const struct store_pause *pz, int64_t slot)
{
	return pz && slot >= pz->from_ms && slot < pz->until_ms;
}

/* Appends one paused row (store.h: LEDGER_PAUSED); *written as for
 * write_missed (the store keeps one per slot, schema 7). */
static int write_paused(struct store *s, const struct schedule_spec *spec,
			const struct store_pause *pz, int64_t slot, int64_t now,
			const char *summary, bool *written, struct sc_err *err)
{
	struct ledger_row row = {0};
	char msg[STORE_PAUSE_NOTE_MAX + STORE_PAUSE_BY_MAX + 256];
	char t1[CLOCK_ISO_MAX];

	snprintf(row.schedule, sizeof(row.schedule), "%s", spec->name);
	row.slot_ms = slot;
	row.started_ms = row.finished_ms = now;
	snprintf(row.outcome, sizeof(row.outcome), "%s", LEDGER_PAUSED);
	snprintf(row.error_class, sizeof(row.error_class), "paused");
	snprintf(msg, sizeof(msg), "%snot run: paused by %s until %s%s%s",
		 summary ? summary : "", pz->by[0] ? pz->by : "?",
		 clock_format_utc(pz->until_ms, t1), pz->note[0] ? ": " : "",
		 pz->note);
	row.error_msg = msg;
	return store_ledger_append_written(s, &row, written, err);
}

/* Appends one missed row; kept short so the ledger reads well. *written
 * is false when the slot had a missed row already (another node wrote it
 * since we looked: the store keeps one per slot). */
static int write_missed(struct store *s, const struct schedule_spec *spec,
			int64_t slot, int64_t now, const char *msg,
			const char *details, bool *written, struct sc_err *err)
{
	struct ledger_row row = {0};

	snprintf(row.schedule, sizeof(row.schedule), "%s", spec->name);
	row.slot_ms = slot;
	row.started_ms = row.finished_ms = now;
	snprintf(row.outcome, sizeof(row.outcome), "%s", LEDGER_MISSED);
	snprintf(row.error_class, sizeof(row.error_class), "downtime");
	row.error_msg = (char *)msg;
	row.details_json = (char *)details;
	return store_ledger_append_written(s, &row, written, err);
}

/* Has this slot been recorded already (a missed row, or a job)? Only asked
 * for the rows about to be written, so at most max_missed_rows + 1 times. */
static int already_recorded(struct store *s, const char *name, int64_t slot,
			    const int64_t *missed, size_t n_missed, bool *yes,
			    struct sc_err *err)
{
	struct store_job j;
	struct sc_err e = {0};

	*yes = in_set(missed, n_missed, slot);
	if (*yes)
		return 0;
	int rc = store_job_find(s, name, slot, &j, &e);
	if (rc == 0) {
		*yes = true;
		return 0;
	}
	if (rc == SC_ENOENT)
		return 0;
	sc_err_set(err, rc, "%s", e.msg);
	return rc;
}

/* The slots of this schedule already recorded with outcome (missed or
 * paused) in (from, to]. */
static int missed_rows(struct store *s, const char *name, int64_t from,
		       int64_t to, const char *outcome, int64_t **out,
		       size_t *n, struct sc_err *err)
{
	struct ledger_filter f = {
		.schedule = name, .since_ms = from + 1, .until_ms = to + 1,
		.outcome = outcome,
	};
	struct ledger_row *rows = NULL;
	size_t nr = 0;
	int rc = store_ledger_query(s, &f, &rows, &nr, err);

	*out = NULL;
	*n = 0;
	if (rc || nr == 0)
		return rc;
	*out = malloc(nr * sizeof(**out));
	if (!*out) {
		store_ledger_rows_free(rows, nr);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nr; i++)
		(*out)[i] = rows[i].slot_ms;
	*n = nr;
	store_ledger_rows_free(rows, nr);
	return 0;
}

static void opts_fill(const struct sched_opts *in, struct sched_opts *o)
{
	*o = in ? *in : (struct sched_opts){0};
	if (o->grace_ms <= 0)
		o->grace_ms = SCHED_GRACE_MS;
	if (o->max_catchup == 0)
		o->max_catchup = SCHED_CATCHUP_MAX;
	if (o->max_missed_rows == 0)
		o->max_missed_rows = SCHED_MISSED_ROWS_MAX;
}

/*
 * The schedule comes resolved from config_parse (spec.h): its expression
 * parsed, its zone loaded. A spec made some other way has no zone, and is
 * refused rather than computed in a zone nobody chose.
 */
static int spec_resolved(const struct schedule_spec *spec, struct sc_err *err)
{
	if (spec->zone && spec->expr)
		return 0;
	return sc_err_set(err, SC_EZONE, "schedule %s: no expression or time zone "
			  "resolved (a schedule must come from config_parse)",
			  spec->name ? spec->name : "?");
}

int scheduler_next_slot(const struct schedule_spec *spec, int64_t after_ms,
			int64_t *out_ms, struct sc_err *err)
{
	int rc = spec_resolved(spec, err);

	return rc ? rc : sc_cron_next(spec->expr, spec->zone, after_ms,
				      out_ms, err);
}

int scheduler_schedule_next(struct store *s, const struct schedule_spec *spec,
			    int64_t now_ms, int64_t *out_ms, struct sc_err *err)
{
	int64_t last;
	int rc = store_sched_last_get(s, spec->name, &last, err);

	if (rc)
		return rc;
	return scheduler_next_slot(spec, last > now_ms ? last : now_ms, out_ms,
				   err);
}

/*
 * Decides which slots of w run (run[0..*n_run), oldest first): the on-time
 * ones always; late ones by the catch-up policy; none inside the pause pz
 * (NULL: none). All of them are in the ring, which holds the newest slots.
 */
static void choose(const struct schedule_spec *spec, const struct window *w,
		   const struct store_pause *pz, int64_t now,
		   const struct sched_opts *o, int64_t *run, size_t *n_run)
{
	size_t n = 0, n_late_run = 0;
	bool ontime_any = false;

	/* Walk newest -> oldest, then reverse. */
	for (size_t i = 0; i < w->n_ring; i++) {
		int64_t slot = ring_newest(w, i);
		bool ontime = slot >= now - o->grace_ms;
		bool take = false;

		/* A paused slot never runs, on time or late, and does not
		 * stand in for a late one: catch-up owes nothing for it. */
		if (in_pause(pz, slot))
			continue;
		if (ontime) {
			take = true;
			ontime_any = true;
		} else if (spec_x(spec)->catchup_window_ms > 0 &&
			   now - slot > spec_x(spec)->catchup_window_ms) {
			take = false; /* too late to be worth running */
		} else if (spec->catchup == CATCHUP_ALL) {
			take = n_late_run < o->max_catchup;
		} else if (spec->catchup == CATCHUP_LATEST) {
			take = !ontime_any && n_late_run == 0;
		}
		if (!ontime && take)
			n_late_run++;
		if (take)
			run[n++] = slot;
	}
	for (size_t i = 0; i < n / 2; i++) {
		int64_t t = run[i];
		run[i] = run[n - 1 - i];
		run[n - 1 - i] = t;
	}
	*n_run = n;
}

/*
 * Writes the missed rows of w (every slot not in run[]): one row each for
 * the first max_missed_rows, then one summarising row for the rest. A
 * slot inside the pause pz (NULL: none) gets a paused row instead of a
 * missed one; a summary whose first and last slots are both inside is a
 * paused summary.
 * *n_missed (*n_paused) counts the slots whose missed (paused) rows THIS
 * call wrote: a row that existed already (an interrupted earlier tick,
 * or another node catching up the same downtime at the same moment) is
 * neither written again nor counted.
 */
static int record_missed(struct store *s, const struct schedule_spec *spec,
			 const struct store_pause *pz, int64_t from,
			 int64_t now, const struct window *w,
			 const int64_t *run, size_t n_run,
			 const struct sched_opts *o, size_t *n_missed,
			 size_t *n_paused, struct sc_err *err)
{
	int64_t *have = NULL, *have_p = NULL;
	size_t n_have = 0, n_have_p = 0, n_rowed = 0, n_written = 0, hi;
	bool wrote = false;
	char msg[256], details[512], t1[CLOCK_ISO_MAX], t2[CLOCK_ISO_MAX];
	int rc;

	*n_missed = 0;
	*n_paused = 0;
	if (w->total <= n_run)
		return 0;
	rc = missed_rows(s, spec->name, from, now, LEDGER_MISSED, &have,
			 &n_have, err);
	if (!rc && pz)
		rc = missed_rows(s, spec->name, from, now, LEDGER_PAUSED,
				 &have_p, &n_have_p, err);
	if (rc)
		goto out;
	/* Between the look above and the writes below, another node may
	 * write the same rows: the store drops the second (tests play that
	 * race out here). */
	FAILPOINT_HOOK("sched.missed_checked");
	snprintf(msg, sizeof(msg), "not run: the scheduler was not running "
		 "or the clock jumped (catchup: %s)", catchup_name(spec->catchup));
	if (spec_x(spec)->catchup_window_ms > 0)
		snprintf(details, sizeof(details), "{\"catchup\":\"%s\","
			 "\"catchup_window_ms\":%lld}",
			 catchup_name(spec->catchup),
			 (long long)spec_x(spec)->catchup_window_ms);
	else
		snprintf(details, sizeof(details), "{\"catchup\":\"%s\"}",
			 catchup_name(spec->catchup));
	/* The head holds every slot from the start, so it holds the first
	 * max_missed_rows slots that do not run (cap_head says so). */
	for (hi = 0; hi < w->n_head && n_rowed < o->max_missed_rows; hi++) {
		int64_t slot = w->head[hi];
		bool done;

		if (in_set(run, n_run, slot))
			continue;
		if (in_pause(pz, slot)) {
			rc = already_recorded(s, spec->name, slot, have_p,
					      n_have_p, &done, err);
			if (!rc && !done)
				rc = write_paused(s, spec, pz, slot, now, NULL,
						  &wrote, err);
			if (rc)
				goto out;
			if (!done && wrote) {
				(*n_paused)++;
				LOG(SC_LOG_INFO, "scheduler", "event=paused "
				    "schedule=%s slot=%s outcome=paused by=%s "
				    "until=%s", spec->name,
				    clock_format_utc(slot, t1), pz->by,
				    clock_format_utc(pz->until_ms, t2));
			}
			n_rowed++;
			continue;
		}
		rc = already_recorded(s, spec->name, slot, have, n_have, &done,
				      err);
		if (rc)
			goto out;
		if (!done) {
			rc = write_missed(s, spec, slot, now, msg, details,
					  &wrote, err);
			if (rc)
				goto out;
			if (wrote) {
				n_written++;
				LOG(SC_LOG_WARN, "scheduler", "event=missed "
				       "schedule=%s slot=%s outcome=missed "
				       "catchup=%s",
				       spec->name, clock_format_utc(slot, t1),
				       catchup_name(spec->catchup));
			}
		}
		n_rowed++;
	}
	*n_missed = n_written;
	uint64_t rest = w->total - n_run - n_rowed;
	if (rest == 0 && w->counted)
		goto out;
	/* The rest: from the next missed slot of the head to the newest
	 * missed slot of the ring, one row. */
	int64_t first = INT64_MIN, newest = INT64_MIN;
	for (; hi < w->n_head; hi++)
		if (!in_set(run, n_run, w->head[hi])) {
			first = w->head[hi];
			break;
		}
	for (size_t i = 0; i < w->n_ring; i++)
		if (!in_set(run, n_run, ring_newest(w, i))) {
			newest = ring_newest(w, i);
			break;
		}
	if (first == INT64_MIN || newest == INT64_MIN || newest < first)
		goto out;
	bool done;
	clock_format_utc(first, t1);
	clock_format_utc(newest, t2);
	if (in_pause(pz, first) && in_pause(pz, newest)) {
		/* The rest lies inside the pause: one paused row. */
		char head[160];
		rc = already_recorded(s, spec->name, first, have_p, n_have_p,
				      &done, err);
		if (rc || done)
			goto out;
		if (w->counted)
			snprintf(head, sizeof(head), "%" PRIu64 " slots from "
				 "%s to %s (one row for them all): ", rest, t1,
				 t2);
		else
			snprintf(head, sizeof(head), "at least %" PRIu64
				 " slots from %s to %s (one row for them "
				 "all): ", rest, t1, t2);
		rc = write_paused(s, spec, pz, first, now, head, &wrote, err);
		if (rc || !wrote)
			goto out;
		LOG(SC_LOG_INFO, "scheduler", "event=paused schedule=%s "
		    "slot=%s outcome=paused summary=true count=%" PRIu64
		    " until=%s", spec->name, t1, rest, t2);
		*n_paused += rest > 0 ? (size_t)rest : 1;
		goto out;
	}
	rc = already_recorded(s, spec->name, first, have, n_have, &done, err);
	if (rc || done)
		goto out;
	if (w->counted) {
		snprintf(msg, sizeof(msg), "%" PRIu64 " slots from %s to %s "
			 "not run (one row for them all; catchup: %s)", rest, t1,
			 t2, catchup_name(spec->catchup));
		snprintf(details, sizeof(details), "{\"catchup\":\"%s\","
			 "\"summary\":true,\"count\":%" PRIu64 ",\"from\":\"%s\","
			 "\"until\":\"%s\"}", catchup_name(spec->catchup), rest,
			 t1, t2);
	} else {
		snprintf(msg, sizeof(msg), "at least %" PRIu64 " slots from %s "
			 "to %s not run (too many to count; catchup: %s)", rest,
			 t1, t2, catchup_name(spec->catchup));
		snprintf(details, sizeof(details), "{\"catchup\":\"%s\","
			 "\"summary\":true,\"count\":null,\"at_least\":%" PRIu64
			 ",\"from\":\"%s\",\"until\":\"%s\"}",
			 catchup_name(spec->catchup), rest, t1, t2);
	}
	rc = write_missed(s, spec, first, now, msg, details, &wrote, err);
	if (rc || !wrote)
		goto out;
	LOG(SC_LOG_WARN, "scheduler", "event=missed schedule=%s slot=%s "
	       "outcome=missed summary=true count=%" PRIu64 " until=%s",
	       spec->name, t1, rest, t2);
	*n_missed += rest > 0 ? (size_t)rest : 1;
out:
	free(have);
	free(have_p);
	return rc;
}

/* The missed alert of this pass: every slot of w that does not run,
 * whether its row was written now or by an interrupted earlier pass. */
static int raise_missed(struct store *s, const struct schedule_spec *spec,
			const struct store_pause *pz, const struct window *w,
			const int64_t *run, size_t n_run, struct sc_err *err)
{
	int64_t first = INT64_MIN, last = INT64_MIN;
	uint64_t n_paused = 0;

	/* Paused slots are not missed: no alert for them. Their count is
	 * exact when the window was counted into the head, a floor else. */
	for (size_t i = 0; i < w->n_head; i++) {
		if (in_pause(pz, w->head[i])) {
			n_paused++;
			continue;
		}
		if (first == INT64_MIN && !in_set(run, n_run, w->head[i]))
			first = w->head[i];
	}
	for (size_t i = 0; i < w->n_ring; i++) {
		int64_t slot = ring_newest(w, i);
		if (!in_set(run, n_run, slot) && !in_pause(pz, slot)) {
			last = slot;
			break;
		}
	}
	if (first == INT64_MIN)
		return 0;
	if (last == INT64_MIN || last < first)
		last = first;
	uint64_t n = w->total - n_run;
	n = n > n_paused ? n - n_paused : 1;
	return alert_raise_missed(s, spec->name, first, last, (int64_t)n, err);
}

/*
 * A schedule with no state of its own whose renamed_from names have some
 * takes the newest of theirs over (*last), so a rename is not a first
 * start: the slots since the old name's last one are caught up or
 * recorded as missed under the new name by its own catchup policy. The
 * state is recorded under the new name first, so this happens once (a
 * crash after it replays the same window, as any tick does); the old
 * name's jobs and ledger rows stay as they are. Returns 1 when taken
 * over, SC_ENOENT when no earlier name has state, or a store error.
 */
static int take_renamed(struct store *s, const struct schedule_spec *spec,
			int64_t *last, struct sc_err *err)
{
	const char *from = NULL;
	int64_t best = INT64_MIN;
	char t1[CLOCK_ISO_MAX];

	for (size_t i = 0; i < spec->n_renamed_from; i++) {
		int64_t l;
		struct sc_err e = {0};
		int rc = store_sched_last_get(s, spec->renamed_from[i], &l, &e);

		if (rc == SC_ENOENT)
			continue;
		if (rc)
			return sc_err_set(err, rc, "%s", e.msg);
		if (!from || l > best) {
			from = spec->renamed_from[i];
			best = l;
		}
	}
	if (!from)
		return SC_ENOENT;
	int rc = store_sched_last_set(s, spec->name, best, err);
	if (rc)
		return rc;
	*last = best;
	LOG(SC_LOG_INFO, "scheduler", "event=renamed schedule=%s from=%s "
	    "to=%s slot=%s", spec->name, from, spec->name,
	    clock_format_utc(best, t1));
	return 1;
}

/* Judged when the slot falls due rather than when claimed (issue 43). */
static bool fire_time_overlap(const struct schedule_spec *spec)
{
	return spec->overlap == OVERLAP_SKIP ||
	       spec->overlap == OVERLAP_BUFFER_ONE ||
	       spec->overlap == OVERLAP_REPLACE;
}

/* Most running attempts of one schedule ended by one replace. */
#define REPLACE_MAX 64

/*
 * `overlap: replace`: ends every running attempt of spec's earlier slots
 * (ACTIVE, on any node) with a `replaced` row, through the attempt's own
 * finish (store_job_finish, fenced by its lease token): the job is DONE,
 * so its worker's next heartbeat fails and stops the task (worker.c:
 * SIGTERM, then SIGKILL after the task's grace). An attempt that ended
 * meanwhile (SC_ELEASE) is left as it ended.
 */
static int replace_running(struct store *s, const struct schedule_spec *spec,
			   int64_t slot, int64_t now_ms, struct sc_err *err)
{
	struct store_job *run = calloc(REPLACE_MAX, sizeof(*run));
	struct store_sla x = {.running = run, .max_running = REPLACE_MAX};
	char iso[CLOCK_ISO_MAX], by[CLOCK_ISO_MAX], msg[200], details[96];
	int rc;

	if (!run)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	rc = store_sla_scan(s, INT64_MIN, INT64_MAX, &x, err);
	clock_format_utc(slot, by);
	for (size_t i = 0; !rc && i < x.n_running; i++) {
		const struct store_job *j = &run[i];
		if (strcmp(j->schedule, spec->name) != 0 || j->slot_ms >= slot)
			continue;
		struct ledger_row row = {
			.outcome = LEDGER_REPLACED, .error_class = "overlap",
			.error_msg = msg, .details_json = details};
		snprintf(msg, sizeof(msg), "replaced by the slot %s "
			 "(overlap: replace)", by);
		snprintf(details, sizeof(details),
			 "{\"cause\":\"replaced\",\"by\":\"%s\"}", by);
		struct sc_err fe = {0};
		int frc = store_job_finish(s, j->id, j->lease_token, JOB_DONE,
					   0, &row, &fe);
		if (frc == SC_ELEASE)
			continue;
		if (frc) {
			rc = sc_err_set(err, frc, "%s", fe.msg);
			break;
		}
		LOG(SC_LOG_WARN, "scheduler", "event=replaced schedule=%s "
		    "slot=%s job=%lld attempt=%d by=%s late_ms=%lld",
		    spec->name, clock_format_utc(j->slot_ms, iso),
		    (long long)j->id, j->attempts, by,
		    (long long)(now_ms - slot));
	}
	free(run);
	return rc;
}

/*
 * The fire-time overlap verdict of one due slot of spec (fire_time_overlap):
 * either its job is enqueued, due at run_at_ms (*created as queue_enqueue
 * says), or it gets a `skipped` row at now_ms and no job (*skipped).
 * Another job of the schedule READY or ACTIVE, on any node, skips a `skip`
 * slot; another READY one skips a `buffer_one` slot (cause buffered). The
 * read and the write are not one transaction: a job ending in between
 * only makes the verdict the one of an instant earlier. Called under the
 * schedule's fire lease (fire_one), so the nodes judge a slot one at a
 * time: the second finds the first's job or row and writes nothing.
 */
static int judge(struct store *s, const struct schedule_spec *spec,
		 int64_t slot, int64_t run_at_ms, int64_t now_ms,
		 bool *created, bool *skipped, struct sc_err *err)
{
	struct store_job j;
	struct store_counts c = {0};
	struct sc_err e = {0};
	char iso[CLOCK_ISO_MAX];
	int rc;

	/* A replayed pass, or another node's: the slot has its job (enqueue
	 * is idempotent)... */
	rc = store_job_find(s, spec->name, slot, &j, &e);
	if (rc == 0)
		goto enqueue;
	if (rc != SC_ENOENT)
		return sc_err_set(err, rc, "%s", e.msg);
	/* ...or its skipped row already. */
	struct ledger_filter f = {.schedule = spec->name, .since_ms = slot,
				  .until_ms = slot + 1,
				  .outcome = LEDGER_SKIPPED, .limit = 1};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	if ((rc = store_ledger_query(s, &f, &rows, &n, err)) != 0)
		return rc;
	store_ledger_rows_free(rows, n);
	if (n > 0) {
		*skipped = true;
		return 0;
	}
	if ((rc = store_job_counts(s, spec->name, &c, err)) != 0)
		return rc;
	int64_t waiting = c.ready_due + c.delayed;
	const char *cause = NULL;
	if (spec->overlap == OVERLAP_REPLACE) {
		if (c.active > 0 &&
		    (rc = replace_running(s, spec, slot, now_ms, err)) != 0)
			return rc;
		goto enqueue;
	}
	if (spec->overlap == OVERLAP_SKIP && waiting + c.active > 0)
		cause = "overlap";
	else if (spec->overlap == OVERLAP_BUFFER_ONE && waiting > 0)
		cause = "buffered";
	if (!cause)
		goto enqueue;

	char msg[160], details[64];
	struct ledger_row row = {
		.slot_ms = slot, .started_ms = now_ms, .finished_ms = now_ms,
		.outcome = LEDGER_SKIPPED, .error_class = "overlap",
		.error_msg = msg, .details_json = details};
	snprintf(row.schedule, sizeof(row.schedule), "%s", spec->name);
	if (spec->overlap == OVERLAP_SKIP)
		snprintf(msg, sizeof(msg), "another slot of the schedule was "
			 "%s when this one fell due (overlap: skip)",
			 c.active > 0 ? "running" : "waiting");
	else
		snprintf(msg, sizeof(msg), "a slot of the schedule was "
			 "already waiting when this one fell due (overlap: "
			 "buffer_one)");
	snprintf(details, sizeof(details), "{\"cause\":\"%s\"}", cause);
	if ((rc = store_ledger_append(s, &row, err)) != 0)
		return rc;
	*skipped = true;
	LOG(SC_LOG_WARN, "scheduler", "event=skipped schedule=%s slot=%s "
	    "cause=%s running=%lld waiting=%lld", spec->name,
	    clock_format_utc(slot, iso), cause, (long long)c.active,
	    (long long)waiting);
	return 0;
enqueue:
	rc = queue_enqueue_at(s, spec->name, slot, spec_policy(spec), run_at_ms,
			      NULL, created, err);
	if (!rc && *created)
		LOG(SC_LOG_INFO, "scheduler", "schedule=%s slot=%s "
		    "event=enqueued late_ms=%lld", spec->name,
		    clock_format_utc(slot, iso), (long long)(now_ms - slot));
	return rc;
}

/* How long a node may hold a schedule's fire lease: far more than the
 * four statements of one verdict, so that only a node that died holding
 * it makes the others wait, and then not long. */
#define FIRE_LEASE_MS 10000

/*
 * judge() under the lease "overlap:<schedule>" (store_lease_take), held
 * for one verdict by this process: *deferred when another node holds it
 * (it is judging the same slot right now); the caller then leaves the
 * schedule's state where it was, so that a later pass judges the slot
 * again if that node did not finish (it finds the verdict if it did).
 */
static int fire_one(struct store *s, const struct schedule_spec *spec,
		    int64_t slot, int64_t run_at_ms, int64_t now_ms,
		    bool *created, bool *skipped, bool *deferred,
		    struct sc_err *err)
{
	char name[STORE_NAME_MAX], owner[STORE_NAME_MAX], host[64] = "";
	bool won = false;
	struct sc_err de = {0};
	int rc;

	*created = *skipped = *deferred = false;
	if (snprintf(name, sizeof(name), "overlap:%s", spec->name) >=
	    (int)sizeof(name)) {
		/* A name too long for the lease: its hash (FNV-1a). */
		uint64_t h = 1469598103934665603ULL;
		for (const char *p = spec->name; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
		snprintf(name, sizeof(name), "overlap#%016" PRIx64, h);
	}
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "host");
	snprintf(owner, sizeof(owner), "%s:%ld", host, (long)getpid());
	rc = store_lease_take(s, name, owner, FIRE_LEASE_MS, &won, err);
	if (rc)
		return rc;
	if (!won) {
		*deferred = true;
		return 0;
	}
	rc = judge(s, spec, slot, run_at_ms, now_ms, created, skipped, err);
	/* Dropped on failure too; a failed drop only delays the next
	 * verdict until the lease expires. */
	(void)store_lease_drop(s, name, owner, &de);
	return rc;
}

/* The jobs and states of one plan tick, committed together. */
struct batch {
	struct store_enqueue *v;
	size_t n, cap;
};

static int batch_add(struct batch *b, const struct schedule_spec *spec,
		     const int64_t *run, size_t n_run, int64_t last,
		     struct sc_err *err)
{
	if (b->n + n_run > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n_run)
			cap *= 2;
		struct store_enqueue *v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return sc_err_set(err, SC_ENOMEM, "out of memory");
		b->v = v;
		b->cap = cap;
	}
	for (size_t i = 0; i < n_run; i++)
		b->v[b->n++] = (struct store_enqueue){
			.schedule = spec->name, .slot_ms = run[i],
			.policy = spec_policy(spec), .last_ms = last};
	return 0;
}

/*
 * The pass of one schedule over (last, now_ms] once its last materialised
 * slot is known (read from the store, or the plan's copy in memory): the
 * missed rows, the alert, the jobs, then the state (the order of this
 * file's invariants). first_start: last is the baseline now_ms - 1 of a
 * schedule never seen, recorded here when the window is empty (the plan
 * records it before, in bulk, and passes false). *last_out gets the new
 * last slot and *next_out the first slot after max(it, now_ms) (INT64_MAX:
 * none); both untouched on failure. Counts go to *out (not counted:
 * n_schedules, n_errors, n_first_start: the callers do those).
 * b (the plan's tick; NULL: write now): a pass whose every slot runs (no
 * missed row, no alert: the normal case) only adds its jobs and state to
 * b, committed by the caller in one transaction for all schedules
 * (plan_flush); b->n grows then, and *last_out is what the state
 * will be once that commit is made.
 */
static int pass(struct store *s, const struct schedule_spec *spec,
		const struct store_pause *pz, int64_t now_ms,
		const struct sched_opts *o, int64_t last, bool first_start,
		struct batch *b, struct sched_result *out, int64_t *last_out,
		int64_t *next_out, struct sc_err *err)
{
	struct window w = {0};
	int64_t *run = NULL;
	size_t n_run = 0, n_missed = 0, n_paused = 0;
	char t1[CLOCK_ISO_MAX];
	bool deferred = false;
	int rc = 0;

	if (spec->disabled) {
		/* `enabled: false`: nothing fires and nothing is missed; the
		 * state still moves past each slot, so enabling it again
		 * starts from then instead of catching the time up. */
		int64_t first;
		if (now_ms > last &&
		    sc_cron_next(spec->expr, spec->zone, last, &first,
				 NULL) == 0 && first <= now_ms) {
			rc = store_sched_last_set(s, spec->name, now_ms, err);
			if (rc)
				goto done;
			last = now_ms;
		} else if (first_start) {
			rc = store_sched_last_set(s, spec->name, last, err);
			if (rc)
				goto done;
		}
		goto next_slot;
	}
	if (now_ms > last) {
		/* The ring must hold every slot that may run: the late ones
		 * (max_catchup) and the on-time ones (one a second at most). */
		w.cap_ring = o->max_catchup + (size_t)(o->grace_ms / 1000) + 2;
		w.cap_head = o->max_missed_rows + w.cap_ring + 1;
		w.counted = true;
		w.head = malloc(w.cap_head * sizeof(*w.head));
		w.ring = malloc(w.cap_ring * sizeof(*w.ring));
		run = malloc(w.cap_ring * sizeof(*run));
		if (!w.head || !w.ring || !run) {
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
			goto done;
		}
		rc = enumerate(spec->expr, spec->zone, last, now_ms, &w,
			       err);
		if (rc)
			goto done;
	}
	if (w.total > 0) {
		choose(spec, &w, pz, now_ms, o, run, &n_run);
		if (b && n_run == w.total && n_run > 0 &&
		    spec_x(spec)->jitter_ms <= 0 && !fire_time_overlap(spec)) {
			/* Nothing missed: the jobs and the state go with the
			 * other due schedules' in one transaction, which
			 * keeps "jobs, then state" (both or neither). */
			rc = batch_add(b, spec, run, n_run, ring_newest(&w, 0),
				       err);
			if (rc)
				goto done;
			last = ring_newest(&w, 0);
			goto next_slot;
		}
		rc = record_missed(s, spec, pz, last, now_ms, &w, run, n_run,
				   o, &n_missed, &n_paused, err);
		if (rc)
			goto done;
		out->n_missed += n_missed;
		out->n_paused += n_paused;
		metrics_missed(spec->name, n_missed);
		/* After the rows, before the jobs and the state: a crash in
		 * between replays the pass, which raises the same alert (its
		 * key is the first missed slot), so it is raised once. */
		if (o->alert_missed && w.total > n_run &&
		    (rc = raise_missed(s, spec, pz, &w, run, n_run, err)) != 0)
			goto done;
		if (fire_time_overlap(spec)) {
			/* Each slot judged after the one before it. */
			for (size_t i = 0; i < n_run && !rc && !deferred; i++) {
				bool created = false, skipped = false;
				rc = fire_one(s, spec, run[i],
					      scheduler_start_ms(spec, run[i]),
					      now_ms, &created, &skipped,
					      &deferred, err);
				out->n_enqueued += created;
			}
		} else if (spec_x(spec)->jitter_ms > 0) {
			/* Each job due at its own start instant. */
			for (size_t i = 0; i < n_run && !rc; i++) {
				bool created = false;
				rc = queue_enqueue_at(
					s, spec->name, run[i], spec_policy(spec),
					scheduler_start_ms(spec, run[i]), NULL,
					&created, err);
				out->n_enqueued += created;
			}
		} else if (n_run == 1) {
			bool created = false;
			rc = queue_enqueue(s, spec->name, run[0],
					   spec_policy(spec), NULL, &created, err);
			out->n_enqueued += created;
		} else if (n_run > 1) {
			/* One transaction for the whole catch-up. */
			rc = queue_enqueue_many(s, spec->name, run, n_run,
						spec_policy(spec), err);
			out->n_enqueued += n_run;
		}
		if (rc)
			goto done;
		/* fire_one logs its own verdicts. */
		for (size_t i = 0; i < n_run && !fire_time_overlap(spec); i++)
			LOG(SC_LOG_INFO, "scheduler", "schedule=%s slot=%s "
			       "event=enqueued late_ms=%lld", spec->name,
			       clock_format_utc(run[i], t1),
			       (long long)(now_ms - run[i]));
		/* Another node is judging a slot (fire_one): the state stays,
		 * so a later pass finds that verdict or makes it. */
		if (deferred)
			goto next_slot;
		/* Crash tests stop here: rows and jobs written, state not. */
		if (FAILPOINT_ERR("sched.before_last_set")) {
			rc = sc_err_set(err, SC_EIO, "failpoint "
					"sched.before_last_set");
			goto done;
		}
		rc = store_sched_last_set(s, spec->name, ring_newest(&w, 0), err);
		if (rc)
			goto done;
		last = ring_newest(&w, 0);
	} else if (first_start) {
		/* Record the baseline, so a stop before the first slot is seen
		 * as downtime by the next start instead of a first start. */
		rc = store_sched_last_set(s, spec->name, last, err);
		if (rc)
			goto done;
	}

	int64_t next;
	struct sc_err ne;
next_slot:
	next = INT64_MAX;
	ne = (struct sc_err){0};
	rc = sc_cron_next(spec->expr, spec->zone,
			  last > now_ms ? last : now_ms, &next, &ne);
	if (rc == SC_ENEVER) {
		rc = 0;
		next = INT64_MAX;
	} else if (rc) {
		sc_err_set(err, rc, "%s", ne.msg);
		goto done;
	}
	*last_out = last;
	*next_out = next;
done:
	window_dispose(&w);
	free(run);
	return rc;
}

static void log_error(const struct schedule_spec *spec, int rc)
{
	LOG(SC_LOG_ERROR, "scheduler", "schedule=%s event=error "
	       "error=\"%s\"", spec->name, sc_strerror(rc));
}

int scheduler_schedule_tick(struct store *s, const struct schedule_spec *spec,
			    int64_t now_ms, const struct sched_opts *opts,
			    struct sched_result *out, struct sc_err *err)
{
	struct sched_opts o;
	int64_t last, next = INT64_MAX;
	bool first_start = false;
	char t1[CLOCK_ISO_MAX];
	int rc;

	opts_fill(opts, &o);
	out->n_schedules++;
	if ((rc = spec_resolved(spec, err)) != 0)
		goto done;
	struct sc_err e = {0};
	rc = store_sched_last_get(s, spec->name, &last, &e);
	if (rc == SC_ENOENT) {
		/* Taken over from an earlier name: go on as that name. */
		rc = take_renamed(s, spec, &last, err);
		if (rc == 1) {
			rc = 0;
		} else if (rc != SC_ENOENT) {
			goto done;
		}
	}
	if (rc == SC_ENOENT) {
		/* First start: from now on; a slot at exactly now counts. */
		first_start = true;
		last = now_ms - 1;
	} else if (rc) {
		sc_err_set(err, rc, "%s", e.msg);
		goto done;
	}
	/* The schedule's pause: one point read (this path reads the state
	 * per schedule anyway; the plan reads every pause once per tick). */
	struct store_pause pz;
	bool has_pz = false;
	e = (struct sc_err){0};
	rc = store_pause_get(s, spec->name, &pz, &e);
	if (rc == 0) {
		has_pz = true;
	} else if (rc != SC_ENOENT) {
		sc_err_set(err, rc, "%s", e.msg);
		goto done;
	}
	rc = pass(s, spec, has_pz ? &pz : NULL, now_ms, &o, last, first_start,
		  NULL, out, &last, &next, err);
	if (rc)
		goto done;
	if (first_start) {
		out->n_first_start++;
		LOG(SC_LOG_INFO, "scheduler", "schedule=%s event=first_start "
		       "from=%s", spec->name, clock_format_utc(now_ms, t1));
	}
	if (next < out->next_ms)
		out->next_ms = next;
done:
	if (rc) {
		out->n_errors++;
		log_error(spec, rc);
	}
	return rc;
}

void scheduler_result_init(struct sched_result *r)
{
	memset(r, 0, sizeof(*r));
	r->next_ms = INT64_MAX;
}

int scheduler_tick_memo(struct store *s, const struct config *cfg,
		    int64_t now_ms, int64_t *memo, const struct sched_opts *opts,
			struct sched_result *out, struct sc_err *err)
{
	struct sched_opts o = opts ? *opts : (struct sched_opts){0};
	int first_rc = 0;

	o.alert_missed = (cfg->alert_on & CONFIG_ALERT_ON_MISSED) != 0;
	scheduler_result_init(out);
	for (size_t i = 0; i < cfg->n_schedules; i++) {
		struct sched_result one;

		if (memo && now_ms < memo[i]) {
			/* Nothing can be due before its next slot: no store
			 * access. (A clock set back lands here too, which is
			 * right: slots up to the recorded one never rerun.) */
			out->n_schedules++;
			if (memo[i] < out->next_ms)
				out->next_ms = memo[i];
			continue;
		}
		scheduler_result_init(&one);
		int rc = scheduler_schedule_tick(s, &cfg->schedules[i], now_ms,
						 &o, &one, err);
		out->n_schedules += one.n_schedules;
		out->n_enqueued += one.n_enqueued;
		out->n_missed += one.n_missed;
		out->n_paused += one.n_paused;
		out->n_first_start += one.n_first_start;
		out->n_errors += one.n_errors;
		if (one.next_ms < out->next_ms)
			out->next_ms = one.next_ms;
		/* A failed schedule is tried again on every tick. */
		if (memo)
			memo[i] = rc ? INT64_MIN : one.next_ms;
		if (rc && !first_rc)
			first_rc = rc;
	}
	return first_rc;
}

int scheduler_tick(struct store *s, const struct config *cfg, int64_t now_ms,
		   const struct sched_opts *opts, struct sched_result *out,
		   struct sc_err *err)
{
	return scheduler_tick_memo(s, cfg, now_ms, NULL, opts, out, err);
}

/* ---- the plan: a heap of next fire instants ---------------------------- */

/* A schedule whose pass waits for the tick's batch to commit. */
struct plan_pending {
	size_t idx;
	int64_t last_ms, next_ms;
};

/* A heap entry: schedule idx of the config fires next at due_ms. */
struct plan_ent {
	int64_t due_ms;
	size_t idx;
};

struct sched_plan {
	const struct config *cfg;   /* borrowed: outlives the plan */
	struct sched_opts o;        /* filled, alert_missed from the config */
	int64_t *last;              /* [n]: each schedule's last slot */
	bool *fresh;                /* [n]: last as read from the store by
				       the build, no pass since */
	struct plan_ent *heap;      /* min-heap on due_ms, n_heap entries */
	size_t n_heap;
	size_t *retry, n_retry;     /* failed: passed again on every tick */
	size_t *due;                /* scratch: this tick's schedules */
	size_t n_first_start;       /* baselines of the build, reported by
				       the first tick */
	struct batch batch;         /* this tick's deferred jobs and states */
	struct plan_pending *pending; /* [n]: the deferred schedules */
	size_t n_pending;
	struct store_pause *pz;     /* every pause row as last read, by name */
	size_t n_pz;
	int64_t pz_read_ms;         /* the tick that read them */
	int64_t pz_next_ms;         /* the earliest end of a pause running
				       then (INT64_MAX: none) */
};

static bool ent_less(const struct plan_ent *a, const struct plan_ent *b)
{
	return a->due_ms < b->due_ms ||
	       (a->due_ms == b->due_ms && a->idx < b->idx);
}

static void heap_down(struct plan_ent *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < n && ent_less(&h[l], &h[m]))
			m = l;
		if (r < n && ent_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		struct plan_ent t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* O(log n). The heap has room: it never holds more than n_schedules. */
static void heap_push(struct sched_plan *p, int64_t due_ms, size_t idx)
{
	size_t i = p->n_heap++;

	p->heap[i] = (struct plan_ent){.due_ms = due_ms, .idx = idx};
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!ent_less(&p->heap[i], &p->heap[up]))
			break;
		struct plan_ent t = p->heap[i];
		p->heap[i] = p->heap[up];
		p->heap[up] = t;
		i = up;
	}
}

static size_t heap_pop(struct sched_plan *p)
{
	size_t idx = p->heap[0].idx;

	p->heap[0] = p->heap[--p->n_heap];
	heap_down(p->heap, p->n_heap, 0);
	return idx;
}

static int last_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_sched_last *)a)->schedule,
		      ((const struct store_sched_last *)b)->schedule);
}

static const struct store_sched_last *
last_find(const struct store_sched_last *v, size_t n, const char *name)
{
	struct store_sched_last key = {.slot_ms = 0};

	snprintf(key.schedule, sizeof(key.schedule), "%s", name);
	return n ? bsearch(&key, v, n, sizeof(*v), last_cmp) : NULL;
}

void scheduler_plan_free(struct sched_plan *p)
{
	if (!p)
		return;
	free(p->last);
	free(p->fresh);
	free(p->heap);
	free(p->retry);
	free(p->due);
	free(p->pending);
	free(p->batch.v);
	free(p->pz);
	free(p);
}

static int pause_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_pause *)a)->schedule,
		      ((const struct store_pause *)b)->schedule);
}

static const struct store_pause *
pause_find(const struct store_pause *v, size_t n, const char *name)
{
	struct store_pause key = {.from_ms = 0};

	snprintf(key.schedule, sizeof(key.schedule), "%s", name);
	return n ? bsearch(&key, v, n, sizeof(*v), pause_cmp) : NULL;
}

/*
 * Reads every pause again (one read, O(pause rows), whatever the number
 * of schedules) and logs what changed since the last read: a pause this
 * node sees for the first time (event=pause_seen), one that ended
 * (event=pause_expired, or event=resumed when a resume ended it). Done on
 * a tick that has a schedule due, or when a pause it knows of ends; an
 * idle tick reads nothing. On failure the old copy is kept.
 */
static int plan_pauses(struct sched_plan *p, struct store *s, int64_t now_ms,
		       struct sc_err *err)
{
	struct store_pause *v = NULL;
	size_t n = 0;
	char t1[CLOCK_ISO_MAX];
	int64_t next = INT64_MAX;
	int rc = store_pause_all(s, &v, &n, err);

	if (rc)
		return rc;
	for (size_t i = 1; i < n; i++)
		if (pause_cmp(&v[i - 1], &v[i]) > 0) {
			qsort(v, n, sizeof(*v), pause_cmp);
			break;
		}
	for (size_t i = 0; i < n; i++) {
		const struct store_pause *o = pause_find(p->pz, p->n_pz,
							 v[i].schedule);
		bool was = o && o->from_ms == v[i].from_ms &&
			   o->until_ms > p->pz_read_ms;
		bool is = v[i].until_ms > now_ms && v[i].from_ms <= now_ms;

		if (is && !was)
			LOG(SC_LOG_INFO, "scheduler", "event=pause_seen "
			    "schedule=%s until=%s by=%s", v[i].schedule,
			    clock_format_utc(v[i].until_ms, t1), v[i].by);
		else if (!is && was && v[i].until_ms <= now_ms)
			LOG(SC_LOG_INFO, "scheduler", "event=%s schedule=%s "
			    "until=%s by=%s", v[i].resumed ? "resumed" :
			    "pause_expired", v[i].schedule,
			    clock_format_utc(v[i].until_ms, t1), v[i].by);
		if (v[i].until_ms > now_ms && v[i].until_ms < next)
			next = v[i].until_ms;
	}
	free(p->pz);
	p->pz = v;
	p->n_pz = n;
	p->pz_read_ms = now_ms;
	p->pz_next_ms = next;
	return 0;
}

/* How many first starts are logged one by one at a build; the rest are
 * one line, so a first start of 100,000 schedules is not 100,000 lines. */
#define FIRST_START_LOG_MAX 20
/* Baselines (a first start's, a rename's) written in one transaction at
 * a build: a batch of these, not one entry per schedule held at once
 * (136 bytes each: 13.6 MB for a first start of 100,000 schedules, the
 * daemon's peak; issue 45). 25 commits for 100,000. */
#define PLAN_BASE_BATCH 4096

int scheduler_plan_new(struct store *s, const struct config *cfg,
		       int64_t now_ms, const struct sched_opts *opts,
		       struct sched_plan **out, struct sc_err *err)
{
	size_t n = cfg->n_schedules, cap = n ? n : 1;
	struct sched_plan *p = calloc(1, sizeof(*p));
	struct store_sched_last *have = NULL, *base = NULL;
	size_t n_have = 0, n_base = 0;
	char t1[CLOCK_ISO_MAX];
	int rc;

	*out = NULL;
	if (!p)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	p->cfg = cfg;
	p->pz_read_ms = INT64_MIN;
	p->pz_next_ms = INT64_MAX;
	opts_fill(opts, &p->o);
	p->o.alert_missed = (cfg->alert_on & CONFIG_ALERT_ON_MISSED) != 0;
	p->last = malloc(cap * sizeof(*p->last));
	p->fresh = calloc(cap, sizeof(*p->fresh));
	p->heap = malloc(cap * sizeof(*p->heap));
	p->retry = malloc(cap * sizeof(*p->retry));
	p->due = malloc(cap * sizeof(*p->due));
	p->pending = malloc(cap * sizeof(*p->pending));
	base = malloc((cap < PLAN_BASE_BATCH ? cap : PLAN_BASE_BATCH) *
		      sizeof(*base));
	if (!p->last || !p->fresh || !p->heap || !p->retry || !p->due ||
	    !p->pending || !base) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto fail;
	}
	/* One read for every schedule's state (O(rows)), then a binary
	 * search per schedule. The store answers in name order; sorted
	 * again only if not, so a backend's collation cannot break it. */
	rc = store_sched_last_all(s, &have, &n_have, err);
	if (rc)
		goto fail;
	rc = plan_pauses(p, s, now_ms, err);
	if (rc)
		goto fail;
	for (size_t i = 1; i < n_have; i++)
		if (last_cmp(&have[i - 1], &have[i]) > 0) {
			qsort(have, n_have, sizeof(*have), last_cmp);
			break;
		}
	for (size_t i = 0; i < n; i++) {
		const struct schedule_spec *spec = &cfg->schedules[i];
		const struct store_sched_last *l = NULL;
		const char *from = NULL;

		/* A full batch of baselines is written before the next
		 * (each one a schedule's own, so a batch committed before a
		 * failure is as good as the whole). */
		if (n_base == PLAN_BASE_BATCH) {
			rc = store_sched_last_set_many(s, base, n_base, err);
			if (rc)
				goto fail;
			n_base = 0;
		}
		if (!spec->zone || !spec->expr || !spec->name) {
			/* Not resolved: refused by every pass (spec_resolved),
			 * so it is counted as failing on every tick. */
			p->retry[p->n_retry++] = i;
			continue;
		}
		l = last_find(have, n_have, spec->name);
		/* A rename: the newest state of the earlier names, recorded
		 * under the new name with the baselines below, before any
		 * pass (take_renamed's rule). */
		for (size_t k = 0; !l && k < spec->n_renamed_from; k++) {
			const struct store_sched_last *o =
				last_find(have, n_have, spec->renamed_from[k]);
			if (o && (!from || o->slot_ms > base[n_base].slot_ms)) {
				from = spec->renamed_from[k];
				snprintf(base[n_base].schedule,
					 sizeof(base[n_base].schedule), "%s",
					 spec->name);
				base[n_base].slot_ms = o->slot_ms;
			}
		}
		if (l) {
			p->last[i] = l->slot_ms;
			p->fresh[i] = true;
		} else if (from) {
			p->last[i] = base[n_base++].slot_ms;
			p->fresh[i] = true;
			LOG(SC_LOG_INFO, "scheduler", "event=renamed "
			    "schedule=%s from=%s to=%s slot=%s", spec->name,
			    from, spec->name,
			    clock_format_utc(p->last[i], t1));
		} else {
			/* First start: from now on; a slot at exactly now
			 * counts (the first tick's window is (now - 1, now]). */
			p->last[i] = now_ms - 1;
			snprintf(base[n_base].schedule,
				 sizeof(base[n_base].schedule), "%s",
				 spec->name);
			base[n_base++].slot_ms = p->last[i];
			if (++p->n_first_start <= FIRST_START_LOG_MAX)
				LOG(SC_LOG_INFO, "scheduler", "schedule=%s "
				    "event=first_start from=%s", spec->name,
				    clock_format_utc(now_ms, t1));
		}
		/* Due at the first slot after last: in the past after a
		 * downtime (the first tick catches up), after now when the
		 * clock was set back (nothing reruns). */
		int64_t due;
		struct sc_err ce = {0};
		int crc = sc_cron_next(spec->expr, spec->zone, p->last[i],
				       &due, &ce);
		if (crc == 0)
			p->heap[p->n_heap++] =
				(struct plan_ent){.due_ms = due, .idx = i};
		else if (crc != SC_ENEVER)
			p->retry[p->n_retry++] = i;
	}
	if (p->n_first_start > FIRST_START_LOG_MAX)
		LOG(SC_LOG_INFO, "scheduler", "event=first_start schedules=%zu "
		    "from=%s", p->n_first_start, clock_format_utc(now_ms, t1));
	/* The baselines and renames in one transaction a batch: a stop
	 * before a schedule's first slot is then downtime on the next
	 * start. */
	if (n_base > 0) {
		rc = store_sched_last_set_many(s, base, n_base, err);
		if (rc)
			goto fail;
	}
	for (size_t i = p->n_heap / 2; i-- > 0;)
		heap_down(p->heap, p->n_heap, i);
	free(have);
	free(base);
	*out = p;
	return 0;
fail:
	free(have);
	free(base);
	scheduler_plan_free(p);
	return rc;
}

int64_t scheduler_plan_next(const struct sched_plan *p)
{
	int64_t top = p->n_heap ? p->heap[0].due_ms : INT64_MAX;

	/* A pause's end is an instant too: the tick then logs it. */
	return p->pz_next_ms < top ? p->pz_next_ms : top;
}

/*
 * One schedule's pass from the plan's copy of its last slot. That copy can
 * be behind the store (another node passed it since): harmless for slots
 * on time (enqueue is idempotent, and the state never moves backwards),
 * but late slots would read as a downtime this node did not have (missed
 * rows are skipped for slots with a job, but the missed alert would be
 * raised). So before a catch-up the state is read again: one read, only
 * for a schedule with a late slot, never on the normal path.
 */
static int plan_pass(struct sched_plan *p, struct store *s, size_t i,
		     int64_t now_ms, struct sched_result *out, int64_t *next,
		     bool *deferred, struct sc_err *err)
{
	const struct schedule_spec *spec = &p->cfg->schedules[i];
	int64_t last = p->last[i], first;
	int rc = spec_resolved(spec, err);

	if (rc)
		return rc;
	if (!p->fresh[i] &&
	    sc_cron_next(spec->expr, spec->zone, last, &first, NULL) == 0 &&
	    first < now_ms - p->o.grace_ms) {
		int64_t stored;
		struct sc_err e = {0};
			rc = store_sched_last_get(s, spec->name, &stored, &e);
		if (rc == 0 && stored > last)
			last = stored;
		else if (rc && rc != SC_ENOENT)
			return sc_err_set(err, rc, "%s", e.msg);
	}
	size_t before = p->batch.n;
	rc = pass(s, spec, pause_find(p->pz, p->n_pz, spec->name), now_ms,
		  &p->o, last, false, &p->batch, out, &last, next, err);
	if (rc) {
		p->batch.n = before; /* none of its slots is committed */
		return rc;
	}
	*deferred = p->batch.n > before;
	/* A deferred one's copy moves once its commit is made. */
	if (!*deferred) {
		p->last[i] = last;
		p->fresh[i] = false;
	}
	return 0;
}

/*
 * Commits the tick's batch (every deferred schedule's jobs and state, one
 * transaction) and settles the deferred schedules: on success each one's
 * last moves and it goes back on the heap at its next instant; on failure
 * none of it was written, and each is retried on the next tick.
 */
static int plan_flush(struct sched_plan *p, struct store *s, int64_t now_ms,
		      struct sched_result *out, size_t *n_retry,
		      struct sc_err *err)
{
	struct batch *b = &p->batch;
	char t1[CLOCK_ISO_MAX];
	int rc = 0;

	if (p->n_pending == 0)
		return 0;
	/* Crash tests stop here: jobs written, states not. */
	if (FAILPOINT_ERR("sched.before_last_set")) {
		for (size_t k = 0; k < b->n && !rc; k++)
			rc = queue_enqueue(s, b->v[k].schedule, b->v[k].slot_ms,
					   b->v[k].policy, NULL, NULL, err);
		if (!rc)
			rc = sc_err_set(err, SC_EIO, "failpoint "
					"sched.before_last_set");
	} else {
		rc = queue_enqueue_batch(s, b->v, b->n, err);
	}
	if (rc == 0)
		for (size_t k = 0; k < b->n; k++) {
			out->n_enqueued += b->v[k].created;
			LOG(SC_LOG_INFO, "scheduler", "schedule=%s slot=%s "
			    "event=enqueued late_ms=%lld", b->v[k].schedule,
			    clock_format_utc(b->v[k].slot_ms, t1),
			    (long long)(now_ms - b->v[k].slot_ms));
		}
	for (size_t k = 0; k < p->n_pending; k++) {
		const struct plan_pending *d = &p->pending[k];
		if (rc) {
			out->n_errors++;
			log_error(&p->cfg->schedules[d->idx], rc);
			p->retry[(*n_retry)++] = d->idx;
			continue;
		}
		p->last[d->idx] = d->last_ms;
		p->fresh[d->idx] = false;
		if (d->next_ms != INT64_MAX)
			heap_push(p, d->next_ms, d->idx);
	}
	p->n_pending = 0;
	b->n = 0;
	return rc;
}

int scheduler_plan_tick(struct sched_plan *p, struct store *s, int64_t now_ms,
			struct sched_result *out, struct sc_err *err)
{
	size_t n_due = 0, n_retry = 0;
	int first_rc = 0;

	scheduler_result_init(out);
	out->n_schedules = p->cfg->n_schedules;
	out->n_first_start = p->n_first_start;
	p->n_first_start = 0;
	/* The failed ones first (every tick), then every schedule whose
	 * next slot has come: O(due * log n), nothing for the others. */
	for (size_t k = 0; k < p->n_retry; k++)
		p->due[n_due++] = p->retry[k];
	while (p->n_heap > 0 && p->heap[0].due_ms <= now_ms)
		p->due[n_due++] = heap_pop(p);
	/* The pauses, read once for the whole tick when a schedule is due
	 * or a known pause ends: nothing paused costs one read of an empty
	 * table per busy tick, whatever the number of schedules. Without
	 * them no due schedule is passed (a paused slot would run). */
	if (n_due > 0 || p->pz_next_ms <= now_ms) {
		int prc = plan_pauses(p, s, now_ms, err);
		if (prc) {
			for (size_t k = 0; k < n_due; k++) {
				log_error(&p->cfg->schedules[p->due[k]], prc);
				p->retry[n_retry++] = p->due[k];
			}
			out->n_errors += n_due;
			p->n_retry = n_retry;
			out->next_ms = scheduler_plan_next(p);
			return prc;
		}
	}
	for (size_t k = 0; k < n_due; k++) {
		size_t i = p->due[k];
		int64_t next = INT64_MAX;
		bool deferred = false;
		int rc = plan_pass(p, s, i, now_ms, out, &next, &deferred, err);

		if (rc == 0 && deferred) {
			p->pending[p->n_pending++] = (struct plan_pending){
				.idx = i, .last_ms = p->batch.v[p->batch.n - 1]
							 .last_ms,
				.next_ms = next};
			continue;
		}
		if (rc) {
			/* Tried again on every tick, as scheduler_tick_memo
			 * does; it does not set next_ms. */
			out->n_errors++;
			log_error(&p->cfg->schedules[i], rc);
			p->retry[n_retry++] = i;
			if (!first_rc)
				first_rc = rc;
		} else if (next != INT64_MAX) {
			heap_push(p, next, i);
		}
	}
	/* The due schedules with nothing missed: one commit for them all
	 * (1,000 due at one instant are one transaction, not 1,000). */
	int frc = plan_flush(p, s, now_ms, out, &n_retry, err);
	if (frc && !first_rc)
		first_rc = frc;
	p->n_retry = n_retry;
	out->next_ms = scheduler_plan_next(p);
	return first_rc;
}
