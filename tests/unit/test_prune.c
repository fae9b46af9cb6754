/*
 * test_prune.c - retention (prune.h, store.h "retention"), on every
 * backend: what is old goes, in batches; what prune must never remove
 * stays (unrecovered unacknowledged lost and missed rows, the acks that
 * cover them, DEAD, READY and ACTIVE jobs, held and in-flight sends, open
 * alerts, the guards and markers of slots that still have a job, anything
 * inside the recovery window); a dry run removes nothing and counts the
 * same; a pruned store refuses a second run of a done slot; the lease
 * gives one winner; the daily run waits, then runs once a day on one
 * node. Time moves on the test clock only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "prune.h"
#include "queue.h"
#include "spec.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define MIN 60000LL
#define HOUR 3600000LL
#define DAY 86400000LL
#define OLD (T0 - 100 * DAY)   /* past every horizon below */
#define NEW (T0 - 2 * HOUR)    /* inside the recovery window + margin */

struct fix {
	struct sc_clock *clock;
	struct store *s;
	struct schedule_spec sched;
	struct config cfg;
};

static void fix_open(void **state, struct fix *f, int64_t ret_ms)
{
	memset(f, 0, sizeof(*f));
	f->clock = sc_clock_virtual_new(T0);
	f->s = tb_open(state, f->clock);
	f->sched.name = "s"; /* the default class's policy */
	f->cfg.lease_ms = 5 * MIN;
	f->cfg.schedules = &f->sched;
	f->cfg.n_schedules = 1;
	f->cfg.retention_ledger_ms = ret_ms;
	f->cfg.retention_jobs_ms = ret_ms;
	f->cfg.retention_outbox_ms = ret_ms;
}

static void fix_close(struct fix *f)
{
	store_close(f->s);
	sc_clock_free(f->clock);
}

static void row(struct fix *f, const char *sched, int64_t slot,
		const char *outcome, const char *details)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = slot + 1000,
			       .details_json = (char *)details};
	struct sc_err e = {0};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(f->s, &r, &e), 0);
}

/* A success of sched inside the window: its older rows are no longer
 * its newest row or newest success, which prune keeps (store.h), so the
 * rule a test is about decides for them alone. */
static void newer(struct fix *f, const char *sched)
{
	row(f, sched, NEW, LEDGER_SUCCESS, NULL);
}

static size_t n_rows(struct fix *f, const char *outcome)
{
	struct ledger_filter fl = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(f->s, &fl, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

/* What `ledger --lost` counts as lost: neither recovered nor acked. */
static size_t n_unresolved(struct fix *f)
{
	struct ledger_filter fl = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	struct ledger_report rep;
	size_t n;

	assert_int_equal(ledger_lost_report(f->s, &fl, &rep, NULL), 0);
	n = rep.n_lost + rep.n_missed;
	ledger_report_dispose(&rep);
	return n;
}

static struct prune_report prune(struct fix *f, bool dry, int batch)
{
	struct prune_plan p;
	struct prune_report r;
	struct sc_err e = {0};

	prune_plan(&f->cfg, sc_clock_now_ms(f->clock), &p);
	assert_int_equal(prune_run(f->s, &p, dry, batch, NULL, NULL, &r, &e),
			 0);
	return r;
}

/* A job of slot in state st (READY, ACTIVE, DONE or DEAD). */
static int64_t job(struct fix *f, int64_t slot, enum job_state st)
{
	struct sc_retry_policy pol = {.attempts = 1,
				      .backoff = SC_BACKOFF_FIXED,
				      .delay_ms = 1000};
	struct store_job j;
	size_t n = 0;
	int64_t id = 0;

	/* A READY job waits past every claim of the test. */
	int64_t run_at = st == JOB_READY ? T0 + 100 * DAY : slot;

	assert_int_equal(store_job_enqueue(f->s, "s", slot, &pol, run_at,
					   false, &id, NULL, NULL), 0);
	if (st == JOB_READY)
		return id;
	assert_int_equal(store_job_claim(f->s, "w", HOUR, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(j.id, id);
	if (st != JOB_ACTIVE)
		assert_int_equal(store_job_finish(f->s, id, j.lease_token, st,
						  0, NULL, NULL), 0);
	return id;
}

static bool job_there(struct fix *f, int64_t slot)
{
	struct store_job j;

	return store_job_find(f->s, "s", slot, &j, NULL) == 0;
}

static bool marked(struct fix *f, int64_t slot)
{
	bool m = false;

	assert_int_equal(store_slot_is_marked(f->s, "s", slot, &m, NULL), 0);
	return m;
}

/* The send row of (s, slot, target): its state, SEND_NONE when gone;
 * *has_body whether its message is still there. */
static enum send_state send_of(struct fix *f, int64_t slot, const char *t,
			       bool *has_body)
{
	struct outbox_entry e = {0};
	int rc = store_outbox_get(f->s, "s", slot, t, &e, NULL);
	enum send_state st = rc == 0 ? e.state : SEND_NONE;

	if (has_body)
		*has_body = rc == 0 && e.body;
	store_outbox_entry_dispose(&e);
	return st;
}

static void send(struct fix *f, int64_t slot, const char *t,
		 enum send_state st)
{
	assert_int_equal(store_outbox_put(f->s, "s", slot, t, "body", NULL,
					  NULL), 0);
	if (st != SEND_PENDING)
		assert_int_equal(store_outbox_set_state(f->s, "s", slot, t,
							SEND_SENDING, NULL),
				 0);
	if (st != SEND_PENDING && st != SEND_SENDING)
		assert_int_equal(store_outbox_set_state(f->s, "s", slot, t, st,
							NULL), 0);
}

/* ---- ledger ------------------------------------------------------------- */

static void old_rows_go_new_rows_stay(void **state)
{
	struct fix f;

	fix_open(state, &f, 30 * DAY);
	for (int i = 0; i < 10; i++) {
		row(&f, "s", OLD + i * MIN, LEDGER_FAILED, NULL);
		row(&f, "s", OLD + i * MIN, LEDGER_SUCCESS, NULL);
	}
	row(&f, "s", T0 - 29 * DAY, LEDGER_SUCCESS, NULL); /* retained */
	row(&f, "s", NEW, LEDGER_SUCCESS, NULL);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_ledger, 20);
	assert_int_equal(n_rows(&f, NULL), 2);
	/* A second prune finds nothing more. */
	r = prune(&f, false, 0);
	assert_int_equal(r.n.n_ledger, 0);
	fix_close(&f);
}

static void unrecovered_lost_and_missed_stay(void **state)
{
	struct fix f;

	fix_open(state, &f, 30 * DAY);
	row(&f, "s", OLD, LEDGER_FAILED, NULL);
	row(&f, "s", OLD, LEDGER_LOST, NULL);
	row(&f, "s", OLD + MIN, LEDGER_MISSED, NULL);
	/* Recovered: the lost row and its success both go. */
	row(&f, "s", OLD + 2 * MIN, LEDGER_LOST, NULL);
	row(&f, "s", OLD + 2 * MIN, LEDGER_SUCCESS, NULL);
	/* Another schedule's success does not recover s's slot. */
	row(&f, "t", OLD, LEDGER_SUCCESS, NULL);
	newer(&f, "s");
	newer(&f, "t");
	assert_int_equal(n_unresolved(&f), 2);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_ledger, 4);
	assert_int_equal(n_rows(&f, LEDGER_LOST), 1);
	assert_int_equal(n_rows(&f, LEDGER_MISSED), 1);
	assert_int_equal(n_unresolved(&f), 2);
	fix_close(&f);
}

/* A batch never splits a slot: with one row per batch, the success row
 * and the lost row it recovers go together, never the success alone. */
static void a_slot_goes_whole(void **state)
{
	struct fix f;

	fix_open(state, &f, 30 * DAY);
	for (int i = 0; i < 5; i++) {
		row(&f, "s", OLD + i * MIN, LEDGER_SUCCESS, NULL);
		row(&f, "s", OLD + i * MIN, LEDGER_LOST, NULL);
		row(&f, "s", OLD + i * MIN, LEDGER_FAILED, NULL);
	}
	row(&f, "s", OLD + 9 * MIN, LEDGER_LOST, NULL);
	newer(&f, "s");
	struct prune_report r = prune(&f, false, 1);
	assert_int_equal(r.n.n_ledger, 15);
	assert_int_equal(n_rows(&f, NULL), 2);
	assert_int_equal(n_unresolved(&f), 1);
	fix_close(&f);
}

static void acks_that_cover_kept_rows_stay(void **state)
{
	struct fix f;
	char d[128];

	fix_open(state, &f, 30 * DAY);
	/* An old ack of a range whose last slot is recent: the recent missed
	 * row stays (inside the window), so the ack stays too, else `ledger
	 * --lost` would list it again. */
	snprintf(d, sizeof(d), "{\"first_ms\":%lld,\"last_ms\":%lld}",
		 (long long)OLD, (long long)NEW);
	row(&f, "s", OLD, LEDGER_MISSED, NULL);
	row(&f, "s", NEW, LEDGER_MISSED, NULL);
	row(&f, "s", OLD, LEDGER_ACKED, d);
	/* An old ack of old rows only: all go. */
	snprintf(d, sizeof(d), "{\"first_ms\":%lld,\"last_ms\":%lld}",
		 (long long)(OLD - 10 * DAY), (long long)(OLD - 9 * DAY));
	row(&f, "u", OLD - 10 * DAY, LEDGER_LOST, NULL);
	row(&f, "u", OLD - 9 * DAY, LEDGER_LOST, NULL);
	row(&f, "u", OLD - 10 * DAY, LEDGER_ACKED, d);
	newer(&f, "u");
	assert_int_equal(n_unresolved(&f), 0);
	for (int batch = 1; batch <= 1000; batch *= 1000) {
		prune(&f, false, batch);
		assert_int_equal(n_unresolved(&f), 0);
	}
	assert_int_equal(n_rows(&f, LEDGER_ACKED), 1);
	assert_int_equal(n_rows(&f, LEDGER_MISSED), 1);
	assert_int_equal(n_rows(&f, LEDGER_LOST), 0);
	fix_close(&f);
}

/* An ack whose covered rows lie in later batches stays until they went
 * (then the next prune takes it): never a kept row without its ack. */
static void an_ack_outlives_its_rows_across_batches(void **state)
{
	struct fix f;
	char d[128];

	fix_open(state, &f, 30 * DAY);
	snprintf(d, sizeof(d), "{\"first_ms\":%lld,\"last_ms\":%lld}",
		 (long long)OLD, (long long)(OLD + 5 * MIN));
	row(&f, "s", OLD, LEDGER_ACKED, d);
	for (int i = 0; i <= 5; i++)
		row(&f, "s", OLD + i * MIN, LEDGER_MISSED, NULL);
	newer(&f, "s");
	prune(&f, false, 1);
	assert_int_equal(n_unresolved(&f), 0);
	assert_int_equal(n_rows(&f, LEDGER_MISSED), 0);
	prune(&f, false, 1);
	assert_int_equal(n_rows(&f, NULL), 1); /* the newer success */
	fix_close(&f);
}

static void the_recovery_window_is_kept(void **state)
{
	struct fix f;

	fix_open(state, &f, 1000); /* retention 1 s: the window decides */
	struct schedule_extra x = {.retry = {.attempts = 5,
					     .backoff = SC_BACKOFF_FIXED,
					     .delay_ms = DAY}};
	f.sched.x = &x;
	f.sched.has_retry = true;
	/* Window 4 days + 5 leases, margin 1 day: 3 days ago is inside. */
	row(&f, "s", T0 - 3 * DAY, LEDGER_FAILED, NULL);
	row(&f, "s", T0 - 6 * DAY, LEDGER_FAILED, NULL);
	newer(&f, "s"); /* not the heads: the window alone keeps it */
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_ledger, 1);
	assert_int_equal(n_rows(&f, NULL), 2);
	fix_close(&f);
}

/* ---- jobs, guards, markers ------------------------------------------------ */

static void dead_ready_active_jobs_stay(void **state)
{
	struct fix f;

	fix_open(state, &f, 30 * DAY);
	job(&f, OLD, JOB_DEAD);
	job(&f, OLD + MIN, JOB_ACTIVE);
	job(&f, OLD + 2 * MIN, JOB_READY);
	job(&f, OLD + 3 * MIN, JOB_DONE);
	job(&f, NEW, JOB_DONE);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_jobs, 1);
	assert_true(job_there(&f, OLD));
	assert_true(job_there(&f, OLD + MIN));
	assert_true(job_there(&f, OLD + 2 * MIN));
	assert_false(job_there(&f, OLD + 3 * MIN));
	assert_true(job_there(&f, NEW));
	fix_close(&f);
}

static void sends_in_flight_and_held_stay(void **state)
{
	struct fix f;
	bool body;

	fix_open(state, &f, 30 * DAY);
	job(&f, OLD, JOB_DONE);
	send(&f, OLD, "pending", SEND_PENDING);
	send(&f, OLD, "sending", SEND_SENDING);
	send(&f, OLD, "failed", SEND_FAILED);
	send(&f, OLD, "held", SEND_UNKNOWN);
	prune(&f, false, 0);
	assert_int_equal(send_of(&f, OLD, "pending", &body), SEND_PENDING);
	assert_true(body);
	assert_int_equal(send_of(&f, OLD, "sending", &body), SEND_SENDING);
	assert_true(body);
	assert_int_equal(send_of(&f, OLD, "failed", &body), SEND_FAILED);
	assert_true(body);
	assert_int_equal(send_of(&f, OLD, "held", &body), SEND_UNKNOWN);
	assert_true(body);
	fix_close(&f);
}

/* outbox retention alone: the bodies of sent messages go, the guards
 * stay, and the guard still reads SENT (the worker sends nothing). */
static void bodies_go_guards_stay(void **state)
{
	struct fix f;
	bool body;

	fix_open(state, &f, 0);
	f.cfg.retention_outbox_ms = 30 * DAY;
	job(&f, OLD, JOB_DONE);
	send(&f, OLD, "a", SEND_SENT);
	send(&f, NEW, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f.s, "s", OLD, NULL), 0);
	/* A marked slot's sends not SENT keep their bodies (they may still
	 * go out), and so do the SENT ones of a slot with no marker (a
	 * crash before the marker runs the slot again). */
	send(&f, OLD, "held", SEND_UNKNOWN);
	send(&f, OLD, "failed", SEND_FAILED);
	send(&f, OLD + MIN, "a", SEND_SENT);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_bodies, 1);
	assert_int_equal(r.n.n_guards, 0);
	assert_int_equal(send_of(&f, OLD, "a", &body), SEND_SENT);
	assert_false(body);
	assert_int_equal(send_of(&f, NEW, "a", &body), SEND_SENT);
	assert_true(body);
	assert_int_equal(send_of(&f, OLD, "held", &body), SEND_UNKNOWN);
	assert_true(body);
	assert_int_equal(send_of(&f, OLD, "failed", &body), SEND_FAILED);
	assert_true(body);
	assert_int_equal(send_of(&f, OLD + MIN, "a", &body), SEND_SENT);
	assert_true(body);
	assert_true(job_there(&f, OLD));
	assert_true(marked(&f, OLD));
	/* A guard never reopens, body or not. */
	assert_int_equal(store_outbox_set_state(f.s, "s", OLD, "a",
						SEND_SENDING, NULL),
			 SC_ESTATE);
	fix_close(&f);
}

static void guards_and_markers_of_slots_with_a_job_stay(void **state)
{
	struct fix f;

	fix_open(state, &f, 30 * DAY);
	/* A dead slot can be revived (`retry`): its guard and marker stay. */
	job(&f, OLD, JOB_DEAD);
	send(&f, OLD, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f.s, "s", OLD, NULL), 0);
	/* A done slot past the horizon: all of it goes... */
	job(&f, OLD + MIN, JOB_DONE);
	send(&f, OLD + MIN, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f.s, "s", OLD + MIN, NULL), 0);
	/* ...but for a send still in flight, which keeps its marker. */
	job(&f, OLD + 2 * MIN, JOB_DONE);
	send(&f, OLD + 2 * MIN, "a", SEND_SENT);
	send(&f, OLD + 2 * MIN, "b", SEND_UNKNOWN);
	assert_int_equal(store_slot_mark(f.s, "s", OLD + 2 * MIN, NULL), 0);
	/* A copy closed ABANDONED (its target removed, issue 43) is done
	 * with like a guard: it goes, and keeps no marker. */
	job(&f, OLD + 3 * MIN, JOB_DONE);
	send(&f, OLD + 3 * MIN, "a", SEND_SENT);
	send(&f, OLD + 3 * MIN, "gone", SEND_FAILED);
	struct ledger_row ab = {.slot_ms = OLD + 3 * MIN};
	snprintf(ab.schedule, sizeof(ab.schedule), "s");
	snprintf(ab.outcome, sizeof(ab.outcome), LEDGER_ABANDONED);
	bool closed = false;
	assert_int_equal(store_outbox_abandon(f.s, "s", OLD + 3 * MIN, "gone",
					      SEND_FAILED, &ab, &closed, NULL),
			 0);
	assert_true(closed);
	assert_int_equal(store_slot_mark(f.s, "s", OLD + 3 * MIN, NULL), 0);
	/* A slot whose job still runs (or waits) keeps them too. */
	job(&f, OLD + 4 * MIN, JOB_ACTIVE);
	send(&f, OLD + 4 * MIN, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f.s, "s", OLD + 4 * MIN, NULL), 0);
	job(&f, OLD + 5 * MIN, JOB_READY);
	send(&f, OLD + 5 * MIN, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f.s, "s", OLD + 5 * MIN, NULL), 0);
	/* The newest marker of the schedule stays (timing checks). */
	job(&f, NEW, JOB_DONE);
	assert_int_equal(store_slot_mark(f.s, "s", NEW, NULL), 0);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_jobs, 3);
	assert_int_equal(r.n.n_guards, 4);
	assert_int_equal(r.n.n_markers, 2);
	assert_int_equal(send_of(&f, OLD + 3 * MIN, "gone", NULL), SEND_NONE);
	assert_false(marked(&f, OLD + 3 * MIN));
	assert_int_equal(send_of(&f, OLD, "a", NULL), SEND_SENT);
	assert_true(marked(&f, OLD));
	assert_int_equal(send_of(&f, OLD + MIN, "a", NULL), SEND_NONE);
	assert_false(marked(&f, OLD + MIN));
	assert_int_equal(send_of(&f, OLD + 2 * MIN, "a", NULL), SEND_NONE);
	assert_int_equal(send_of(&f, OLD + 2 * MIN, "b", NULL), SEND_UNKNOWN);
	assert_true(marked(&f, OLD + 2 * MIN));
	assert_int_equal(send_of(&f, OLD + 4 * MIN, "a", NULL), SEND_SENT);
	assert_true(marked(&f, OLD + 4 * MIN));
	assert_int_equal(send_of(&f, OLD + 5 * MIN, "a", NULL), SEND_SENT);
	assert_true(marked(&f, OLD + 5 * MIN));
	assert_true(marked(&f, NEW));
	fix_close(&f);
}

/* A done slot whose job row was pruned, marker kept: trigger refuses it
 * (before issue 15 it looked at the job row only). */
static void a_pruned_done_slot_is_not_run_again(void **state)
{
	struct fix f;
	struct sc_err e = {0};
	bool created = true;

	fix_open(state, &f, 30 * DAY);
	job(&f, OLD, JOB_DONE);
	send(&f, OLD, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f.s, "s", OLD, NULL), 0);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_jobs, 1);
	assert_false(job_there(&f, OLD));
	assert_true(marked(&f, OLD)); /* the newest marker */
	assert_int_equal(queue_trigger(f.s, "s", OLD, spec_policy(&f.sched), NULL,
				       &created, &e),
			 SC_ESTATE);
	assert_non_null(strstr(e.msg, "deliver it twice"));
	assert_false(job_there(&f, OLD));
	/* And `trigger --slot` refuses the slot before: older than
	 * retention.jobs. */
	assert_true(OLD < prune_trigger_floor(&f.cfg, T0));
	assert_true(T0 - 29 * DAY >= prune_trigger_floor(&f.cfg, T0));
	f.cfg.retention_jobs_ms = 0;
	assert_int_equal(prune_trigger_floor(&f.cfg, T0), INT64_MIN);
	fix_close(&f);
}

/* ---- alerts ------------------------------------------------------------- */

static int64_t alert(struct fix *f, int64_t slot, bool close,
		     enum send_state send_state)
{
	struct store_alert a = {.slot_ms = slot, .last_slot_ms = slot,
				.n_slots = 1};
	const char *const targets[] = {"ops"};
	struct store_alert_send c;
	int64_t id = 0;
	size_t n = 0;
	bool changed;

	snprintf(a.schedule, sizeof(a.schedule), "s");
	snprintf(a.reason, sizeof(a.reason), "%s", ALERT_REASON_MISSED);
	assert_int_equal(store_alert_raise(f->s, &a, NULL, &id, NULL), 0);
	assert_int_equal(store_alert_stage(f->s, id, 0, targets, 1, "m", NULL),
			 0);
	if (send_state != SEND_PENDING) {
		assert_int_equal(store_alert_send_claim(f->s, MIN, &c, 1, &n,
							NULL), 0);
		assert_int_equal(n, 1);
		assert_int_equal(store_alert_send_finish(f->s, c.id,
							 c.lease_token,
							 send_state, T0, NULL,
							 NULL, NULL), 0);
		store_alert_send_dispose(&c);
	}
	if (close)
		assert_int_equal(store_alert_close(f->s, id, ALERT_ACKED, NULL,
						   NULL, NULL, &changed, NULL),
				 0);
	return id;
}

static size_t n_alerts(struct fix *f)
{
	struct store_alert *v = NULL;
	size_t n = 0;

	assert_int_equal(store_alert_list(f->s, NULL, &v, &n, NULL), 0);
	sc_free(v);
	return n;
}

static void open_alerts_and_unsent_ones_stay(void **state)
{
	struct fix f;
	struct store_alert_send *v = NULL;
	size_t n = 0;

	fix_open(state, &f, 30 * DAY);
	alert(&f, OLD, false, SEND_SENT);             /* open */
	int64_t gone = alert(&f, OLD + 2 * MIN, true, SEND_SENT);
	alert(&f, OLD + 3 * MIN, true, SEND_ABANDONED); /* goes too */
	alert(&f, NEW, true, SEND_SENT);              /* recent */
	/* Last: alert() claims the oldest due send. */
	alert(&f, OLD + MIN, true, SEND_PENDING);     /* closed, unsent */
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_alerts, 2);
	assert_int_equal(r.n.n_alert_sends, 2);
	assert_int_equal(n_alerts(&f), 3);
	assert_int_equal(store_alert_sends(f.s, gone, &v, &n, NULL), 0);
	assert_int_equal(n, 0);
	store_alert_sends_free(v, n);
	fix_close(&f);
}

/* ---- the run ------------------------------------------------------------ */

static void fill_everything(struct fix *f)
{
	char d[128];

	for (int i = 0; i < 7; i++)
		row(f, "s", OLD + i * MIN, LEDGER_SUCCESS, NULL);
	row(f, "s", OLD, LEDGER_LOST, NULL);
	row(f, "s", OLD + 20 * MIN, LEDGER_LOST, NULL);
	snprintf(d, sizeof(d), "{\"first_ms\":%lld}",
		 (long long)(OLD + 20 * MIN));
	row(f, "s", OLD + 20 * MIN, LEDGER_ACKED, d);
	job(f, OLD, JOB_DONE);
	job(f, OLD + MIN, JOB_DEAD);
	send(f, OLD, "a", SEND_SENT);
	send(f, OLD + 5 * MIN, "a", SEND_SENT);
	assert_int_equal(store_slot_mark(f->s, "s", OLD, NULL), 0);
	assert_int_equal(store_slot_mark(f->s, "s", NEW, NULL), 0);
	alert(f, OLD, true, SEND_SENT);
	newer(f, "s");
}

static void a_dry_run_removes_nothing_and_counts_the_same(void **state)
{
	struct fix f;

	fix_open(state, &f, 30 * DAY);
	fill_everything(&f);
	size_t rows = n_rows(&f, NULL);
	struct prune_report dry = prune(&f, true, 2);
	assert_int_equal(n_rows(&f, NULL), rows);
	assert_true(job_there(&f, OLD));
	assert_int_equal(send_of(&f, OLD, "a", NULL), SEND_SENT);
	assert_true(marked(&f, OLD));
	assert_int_equal(n_alerts(&f), 1);
	assert_int_equal(dry.used_before, dry.used_after);
	struct prune_report real = prune(&f, false, 2);
	/* 7 successes, a recovered lost row, an acked lost row and its ack,
	 * the done job's success and the dead job's lost row, recovered by
	 * the success of its slot. */
	assert_int_equal(real.n.n_ledger, 12);
	assert_int_equal(dry.n.n_ledger, real.n.n_ledger);
	assert_int_equal(dry.n.n_jobs, real.n.n_jobs);
	assert_int_equal(dry.n.n_bodies, real.n.n_bodies);
	assert_int_equal(dry.n.n_guards, real.n.n_guards);
	assert_int_equal(dry.n.n_markers, real.n.n_markers);
	assert_int_equal(dry.n.n_alerts, real.n.n_alerts);
	assert_int_equal(dry.n.n_alert_sends, real.n.n_alert_sends);
	assert_int_equal(real.n.n_jobs, 1);
	assert_int_equal(real.n.n_guards, 2);
	assert_int_equal(real.n.n_bodies, 2);
	assert_int_equal(real.n.n_markers, 1);
	assert_int_equal(real.n.n_alerts, 1);
	fix_close(&f);
}

static void no_retention_removes_nothing(void **state)
{
	struct fix f;
	struct prune_plan p;

	fix_open(state, &f, 0);
	fill_everything(&f);
	size_t rows = n_rows(&f, NULL);
	prune_plan(&f.cfg, T0, &p);
	assert_false(p.any);
	assert_int_equal(p.opts.ledger_before_ms, 0);
	struct prune_report r = prune(&f, false, 0);
	assert_int_equal(r.n.n_ledger + r.n.n_jobs + r.n.n_guards +
				 r.n.n_markers + r.n.n_bodies + r.n.n_alerts,
			 0);
	assert_int_equal(r.n_batches, 0);
	assert_int_equal(n_rows(&f, NULL), rows);
	assert_true(job_there(&f, OLD));
	fix_close(&f);
}

/* The newest row of a schedule, as `status` reads it: *slot and its
 * outcome into out, or false when the schedule has none. */
static bool newest(struct fix *f, const char *sched, int64_t *slot,
		   char *out, size_t cap)
{
	struct store_sched_summary *v = NULL;
	size_t n = 0;
	bool found = false;

	assert_int_equal(store_sched_summaries(f->s, sched, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].schedule, sched) == 0 && v[i].has_last) {
			*slot = v[i].last.slot_ms;
			snprintf(out, cap, "%s", v[i].last.outcome);
			found = true;
		}
	store_sched_summaries_free(v, n);
	return found;
}

/* The newest success of sched (store_last_successes), or 0. */
static int64_t last_ok(struct fix *f, const char *sched)
{
	struct store_last_ok *v = NULL;
	size_t n = 0;
	int64_t slot = 0;

	assert_int_equal(store_last_successes(f->s, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].schedule, sched) == 0)
			slot = v[i].slot_ms;
	free(v);
	return slot;
}

/*
 * What `status` and /metrics read after a prune: each schedule's newest
 * row and newest success stay, however old (a weekly or monthly slot
 * under a short retention must not read as never run, nor its last
 * success series vanish, which a "no recent success" alert reads as no
 * data); the older rows go. Once newer rows take their place, they go
 * like any other. On both backends these come from ledger_head, whose
 * rows the prune keeps.
 */
static void the_newest_rows_of_each_schedule_stay(void **state)
{
	struct fix f;
	char oc[32];
	int64_t slot = 0;

	fix_open(state, &f, 30 * DAY);
	row(&f, "g", OLD - 2 * DAY, LEDGER_LOST, NULL); /* kept */
	row(&f, "g", OLD, LEDGER_SUCCESS, NULL);
	row(&f, "g", OLD + MIN, LEDGER_SUCCESS, NULL);  /* newest success */
	row(&f, "g", OLD + 2 * MIN, LEDGER_FAILED, NULL); /* newest row */
	row(&f, "h", OLD, LEDGER_SUCCESS, NULL);        /* both at once */
	row(&f, "s", OLD, LEDGER_SUCCESS, NULL);
	row(&f, "s", NEW - HOUR, LEDGER_SUCCESS, NULL);
	row(&f, "s", NEW, LEDGER_FAILED, NULL);
	/* k's three heads are three rows: its newest row is no run (an
	 * alert's), its newest run a failure, its newest success older. */
	row(&f, "k", OLD - MIN, LEDGER_FAILED, NULL);
	row(&f, "k", OLD, LEDGER_SUCCESS, NULL);       /* newest success */
	row(&f, "k", OLD + MIN, LEDGER_FAILED, NULL);  /* newest run */
	row(&f, "k", OLD + 2 * MIN, LEDGER_ALERT, NULL); /* newest row */
	/* A dry run counts what the run removes. */
	struct prune_report r = prune(&f, true, 1);
	assert_int_equal(r.n.n_ledger, 3);
	r = prune(&f, false, 1);
	/* g's and s's first success, k's first failure */
	assert_int_equal(r.n.n_ledger, 3);
	assert_int_equal(n_rows(&f, NULL), 9);
	assert_int_equal(n_rows(&f, LEDGER_ALERT), 1);
	assert_true(newest(&f, "k", &slot, oc, sizeof(oc)));
	assert_int_equal(slot, OLD + MIN);
	assert_string_equal(oc, LEDGER_FAILED);
	assert_int_equal(last_ok(&f, "k"), OLD);
	assert_true(newest(&f, "g", &slot, oc, sizeof(oc)));
	assert_int_equal(slot, OLD + 2 * MIN);
	assert_string_equal(oc, LEDGER_FAILED);
	assert_int_equal(last_ok(&f, "g"), OLD + MIN);
	assert_true(newest(&f, "h", &slot, oc, sizeof(oc)));
	assert_int_equal(slot, OLD);
	assert_int_equal(last_ok(&f, "h"), OLD);
	assert_true(newest(&f, "s", &slot, oc, sizeof(oc)));
	assert_int_equal(slot, NEW);
	assert_int_equal(last_ok(&f, "s"), NEW - HOUR);
	/* A new success of g is its head now: the old heads go. */
	row(&f, "g", NEW, LEDGER_SUCCESS, NULL);
	assert_true(newest(&f, "g", &slot, oc, sizeof(oc)));
	assert_int_equal(slot, NEW);
	assert_int_equal(last_ok(&f, "g"), NEW);
	r = prune(&f, false, 1);
	assert_int_equal(r.n.n_ledger, 2);
	assert_int_equal(n_rows(&f, LEDGER_LOST), 1); /* still unrecovered */
	assert_int_equal(last_ok(&f, "h"), OLD);
	fix_close(&f);
}

/* max_rows bounds a batch (a ledger batch takes whole slots), and the
 * `more` loop ends. */
static void batches_respect_max_rows(void **state)
{
	struct fix f;
	struct prune_plan p;
	struct store_prune_result res = {0};
	bool more = true;
	int batches = 0;

	fix_open(state, &f, 30 * DAY);
	for (int i = 0; i < 20; i++) /* each with its success row */
		job(&f, OLD + i * MIN, JOB_DONE);
	newer(&f, "s");
	prune_plan(&f.cfg, T0, &p);
	while (more) {
		int64_t before = res.n_ledger + res.n_jobs;
		assert_int_equal(store_prune_batch(f.s, &p.opts, 3, &res, &more,
						   NULL), 0);
		assert_true(res.n_ledger + res.n_jobs - before <= 3);
		assert_true(++batches < 100);
	}
	assert_int_equal(res.n_ledger, 20);
	assert_int_equal(res.n_jobs, 20);
	assert_true(batches >= 14);
	assert_int_equal(store_prune_batch(f.s, &p.opts, 0, &res, &more, NULL),
			 SC_EINVAL);
	fix_close(&f);
}

/* ---- leases, the daily run ------------------------------------------------ */

static void a_lease_has_one_winner(void **state)
{
	struct fix f;
	struct store *s2 = NULL;
	bool won = false;

	fix_open(state, &f, 0);
	s2 = tb_open(state, f.clock);
	assert_int_equal(store_lease_take(f.s, "prune", "a", HOUR, &won, NULL),
			 0);
	assert_true(won);
	assert_int_equal(store_lease_take(s2, "prune", "b", HOUR, &won, NULL),
			 0);
	assert_false(won);
	/* The owner renews; another name is another lease. */
	assert_int_equal(store_lease_take(f.s, "prune", "a", HOUR, &won, NULL),
			 0);
	assert_true(won);
	assert_int_equal(store_lease_take(s2, "other", "b", HOUR, &won, NULL),
			 0);
	assert_true(won);
	/* A drop by another owner does nothing; by the owner frees it. */
	assert_int_equal(store_lease_drop(s2, "prune", "b", NULL), 0);
	assert_int_equal(store_lease_take(s2, "prune", "b", HOUR, &won, NULL),
			 0);
	assert_false(won);
	assert_int_equal(store_lease_drop(f.s, "prune", "a", NULL), 0);
	assert_int_equal(store_lease_take(s2, "prune", "b", HOUR, &won, NULL),
			 0);
	assert_true(won);
	/* Held to its last millisecond; expired, the next asker takes
	 * it. */
	sc_clock_advance_ms(f.clock, HOUR - 1);
	assert_int_equal(store_lease_take(f.s, "prune", "a", HOUR, &won, NULL),
			 0);
	assert_false(won);
	sc_clock_advance_ms(f.clock, 1);
	assert_int_equal(store_lease_take(f.s, "prune", "a", HOUR, &won, NULL),
			 0);
	assert_true(won);
	assert_int_equal(store_lease_take(f.s, "prune", "a", 0, &won, NULL),
			 SC_EINVAL);
	store_close(s2);
	fix_close(&f);
}

static void the_daily_prune_waits_then_runs_once_a_day_on_one_node(
	void **state)
{
	struct fix f;
	struct store *s2;
	struct prune_daily a = {0}, b = {0};
	bool ran = true;

	fix_open(state, &f, 30 * DAY);
	s2 = tb_open(state, f.clock);
	row(&f, "s", OLD, LEDGER_SUCCESS, NULL);
	newer(&f, "s");
	/* Not at start: a restart loop must not prune every minute. */
	assert_int_equal(prune_daily_tick(&a, f.s, &f.cfg, T0, "a", NULL,
					  NULL, &ran, NULL), 0);
	assert_false(ran);
	assert_int_equal(prune_daily_tick(&b, s2, &f.cfg, T0, "b", NULL,
					  NULL, &ran, NULL), 0);
	assert_false(ran);
	assert_int_equal(n_rows(&f, NULL), 2);
	int64_t t = T0 + PRUNE_FIRST_DELAY_MS;
	sc_clock_advance_ms(f.clock, (t) - sc_clock_now_ms(f.clock));
	assert_int_equal(prune_daily_tick(&a, f.s, &f.cfg, t, "a", NULL, NULL,
					  &ran, NULL), 0);
	assert_true(ran);
	assert_int_equal(n_rows(&f, NULL), 1);
	/* The other node, due too, finds the lease taken. */
	assert_int_equal(prune_daily_tick(&b, s2, &f.cfg, t, "b", NULL, NULL,
					  &ran, NULL), 0);
	assert_false(ran);
	/* Not again the same day. */
	sc_clock_advance_ms(f.clock, (t + HOUR) - sc_clock_now_ms(f.clock));
	assert_int_equal(prune_daily_tick(&a, f.s, &f.cfg, t + HOUR, "a",
					  NULL, NULL, &ran, NULL), 0);
	assert_false(ran);
	/* A day later it runs again. */
	t += PRUNE_EVERY_MS;
	sc_clock_advance_ms(f.clock, (t) - sc_clock_now_ms(f.clock));
	assert_int_equal(prune_daily_tick(&a, f.s, &f.cfg, t, "a", NULL, NULL,
					  &ran, NULL), 0);
	assert_true(ran);
	store_close(s2);
	fix_close(&f);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(old_rows_go_new_rows_stay),
		cmocka_unit_test(unrecovered_lost_and_missed_stay),
		cmocka_unit_test(a_slot_goes_whole),
		cmocka_unit_test(acks_that_cover_kept_rows_stay),
		cmocka_unit_test(an_ack_outlives_its_rows_across_batches),
		cmocka_unit_test(the_recovery_window_is_kept),
		cmocka_unit_test(dead_ready_active_jobs_stay),
		cmocka_unit_test(sends_in_flight_and_held_stay),
		cmocka_unit_test(bodies_go_guards_stay),
		cmocka_unit_test(guards_and_markers_of_slots_with_a_job_stay),
		cmocka_unit_test(a_pruned_done_slot_is_not_run_again),
		cmocka_unit_test(open_alerts_and_unsent_ones_stay),
		cmocka_unit_test(a_dry_run_removes_nothing_and_counts_the_same),
		cmocka_unit_test(no_retention_removes_nothing),
		cmocka_unit_test(batches_respect_max_rows),
		cmocka_unit_test(the_newest_rows_of_each_schedule_stay),
		cmocka_unit_test(a_lease_has_one_winner),
		cmocka_unit_test(
			the_daily_prune_waits_then_runs_once_a_day_on_one_node),
	};

	return tb_run_all("prune", tests, sizeof(tests) / sizeof(tests[0]));
}
