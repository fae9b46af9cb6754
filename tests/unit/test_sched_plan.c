/*
 * test_sched_plan.c - the scheduler's plan (scheduler.h: a heap of next
 * fire instants, each schedule's last slot in memory) against the plain
 * per-schedule tick, on SQLite and PostgreSQL (store_backend.h).
 *
 * The comparisons run the two side by side on two stores of the same
 * backend, called at the same instants: the same jobs (schedule, slot),
 * the same missed rows, the same alerts and the same next instant, over
 * the DST changes of two zones (hourly and 30-minute crons) and over
 * downtimes with each catch-up policy. Then what only the plan has: a
 * tick with nothing due touches no store (it is handed a store whose
 * every call fails), a reload rebuilds it, two plans on one store (two
 * nodes) make each slot one job, a first start of 1,000 schedules records
 * 1,000 baselines in one go, and 1,000 slots due at once are all enqueued.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "scheduler.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

struct fix {
	struct sc_clock *clock;
	char dir[256];
	char url_b[1100];   /* the second store */
	char schema_b[80];  /* postgresql: its schema */
	struct store *a, *b;
	struct config *cfg;
};

static struct fix F;

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

/* A second store of the same backend: another file, another schema. */
static void open_second(void **state, const char *tag, char *url, size_t n,
			char *schema, size_t ns)
{
	const struct tb *b = *state;
	char sql[200];

	if (tb_is_sqlite(state)) {
		snprintf(url, n, "sqlite:%.200s/%s.db", F.dir, tag);
		return;
	}
	snprintf(schema, ns, "%s_%s", b->schema, tag);
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", schema);
	assert_int_equal(tb_pg_exec(b->base, sql), 0);
	snprintf(url, n, "%s%soptions=-csearch_path%%3D%s", b->base,
		 strchr(b->base, '?') ? "&" : "?", schema);
}

static void drop_second(void **state, const char *schema)
{
	const struct tb *b = *state;
	char sql[200];

	if (tb_is_sqlite(state) || !schema[0])
		return;
	snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", schema);
	(void)tb_pg_exec(b->base, sql);
}

static int setup(void **state)
{
	memset(&F, 0, sizeof(F));
	snprintf(F.dir, sizeof(F.dir), "%s", tu_tmpdir());
	F.clock = sc_clock_virtual_new(0);
	return 0;
}

static int teardown(void **state)
{
	store_close(F.a);
	store_close(F.b);
	config_free(F.cfg);
	sc_clock_free(F.clock);
	drop_second(state, F.schema_b);
	tu_rmrf(F.dir);
	return 0;
}

static void open_both(void **state)
{
	struct sc_err err = {0};

	F.a = tb_open(state, F.clock);
	open_second(state, "b", F.url_b, sizeof(F.url_b), F.schema_b,
		    sizeof(F.schema_b));
	if (store_open(F.url_b, F.clock, &F.b, &err) != 0)
		fail_msg("second store: %s", err.msg);
}

/* Loads the schedules text (the lines under `schedules:`). */
static void load(const char *schedules)
{
	char path[320];
	struct sc_err err = {0};
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.yaml", F.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "schedules:\n%s", schedules);
	fclose(f);
	config_free(F.cfg);
	F.cfg = NULL;
	if (config_load(path, &F.cfg, &err) != 0)
		fail_msg("config: %s", err.msg);
}

/* n schedules "p0000".. with one cron, zone UTC. */
static void load_many(size_t n, const char *cron)
{
	size_t cap = n * 160 + 64, len = 0;
	char *t = malloc(cap);

	assert_non_null(t);
	t[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len,
					"  p%04zu: {cron: \"%s\", tz: UTC, "
					"tasks: [{name: a, command: "
					"[/bin/true]}]}\n", i, cron);
	load(t);
	free(t);
}

static const char DST_SCHEDULES[] =
	"  ny_hourly: {cron: \"0 * * * *\", tz: America/New_York, "
	"catchup: latest, tasks: [{name: a, command: [/bin/true]}]}\n"
	"  ny_half: {cron: \"*/30 * * * *\", tz: America/New_York, "
	"catchup: all, tasks: [{name: a, command: [/bin/true]}]}\n"
	"  ny_night: {cron: \"30 1 * * *\", tz: America/New_York, "
	"catchup: all, tasks: [{name: a, command: [/bin/true]}]}\n"
	"  be_hourly: {cron: \"0 * * * *\", tz: Europe/Berlin, "
	"catchup: none, tasks: [{name: a, command: [/bin/true]}]}\n"
	"  be_half: {cron: \"*/30 2 * * *\", tz: Europe/Berlin, "
	"catchup: latest, tasks: [{name: a, command: [/bin/true]}]}\n"
	"  utc_quarter: {cron: \"*/15 * * * *\", tz: UTC, "
	"catchup: all, tasks: [{name: a, command: [/bin/true]}]}\n";

/* Every job and missed row of both stores over [from, until], schedule by
 * schedule and slot by slot, and the alerts: the same. Returns how many
 * jobs there are (so a test can say something happened). */
static size_t compare_stores(int64_t from, int64_t until)
{
	size_t n_jobs = 0;

	for (size_t i = 0; i < F.cfg->n_schedules; i++) {
		const struct schedule_spec *sp = &F.cfg->schedules[i];
		int64_t t = from - 1, slot;
		while (scheduler_next_slot(sp, t, &slot, NULL) == 0 &&
		       slot <= until) {
			struct store_job ja, jb;
			int ra = store_job_find(F.a, sp->name, slot, &ja, NULL);
			int rb = store_job_find(F.b, sp->name, slot, &jb, NULL);
			if (ra != rb) {
				char t1[CLOCK_ISO_MAX];
				fail_msg("%s %s: job %s by the tick, %s by the "
					 "plan", sp->name,
					 clock_format_utc(slot, t1),
					 ra ? "absent" : "present",
					 rb ? "absent" : "present");
			}
			n_jobs += ra == 0;
			t = slot;
		}
	}
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_MISSED};
	struct ledger_row *ra = NULL, *rb = NULL;
	size_t na = 0, nb = 0;
	assert_int_equal(store_ledger_query(F.a, &lf, &ra, &na, NULL), 0);
	assert_int_equal(store_ledger_query(F.b, &lf, &rb, &nb, NULL), 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		bool found = false;
		for (size_t k = 0; k < nb && !found; k++)
			found = strcmp(ra[i].schedule, rb[k].schedule) == 0 &&
				ra[i].slot_ms == rb[k].slot_ms &&
				strcmp(ra[i].error_msg, rb[k].error_msg) == 0;
		if (!found)
			fail_msg("missed row %s %lld only by the tick",
				 ra[i].schedule, (long long)ra[i].slot_ms);
	}
	store_ledger_rows_free(ra, na);
	store_ledger_rows_free(rb, nb);
	struct alert_filter af = {.slot_ms = INT64_MIN,
				  .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	struct store_alert *aa = NULL, *ab = NULL;
	assert_int_equal(store_alert_list(F.a, &af, &aa, &na, NULL), 0);
	assert_int_equal(store_alert_list(F.b, &af, &ab, &nb, NULL), 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		bool found = false;
		for (size_t k = 0; k < nb && !found; k++)
			found = strcmp(aa[i].schedule, ab[k].schedule) == 0 &&
				aa[i].slot_ms == ab[k].slot_ms &&
				aa[i].last_slot_ms == ab[k].last_slot_ms &&
				aa[i].n_slots == ab[k].n_slots;
		if (!found)
			fail_msg("alert %s %lld only by the tick",
				 aa[i].schedule, (long long)aa[i].slot_ms);
	}
	free(aa);
	free(ab);
	return n_jobs;
}

/*
 * Ticks the plain scheduler on store a and a plan on store b at the same
 * instants: each step goes to the earlier of the two next instants (as a
 * daemon that wakes exactly on time), except at the gaps, where both
 * stop (downtime) and come back at the gap's end. Asserts the same counts
 * and next instant at every step.
 */
struct gap {
	int64_t at, until;
};

static void drive_both(int64_t from, int64_t until, const struct gap *gaps,
		       size_t n_gaps)
{
	struct sched_plan *p = NULL;
	struct sc_err err = {0};
	int64_t now = from;
	size_t g = 0, steps = 0;

	assert_int_equal(scheduler_plan_new(F.b, F.cfg, now, NULL, &p, &err),
			 0);
	while (now <= until) {
		struct sched_result ra, rb;
		sc_clock_set_ms(F.clock, now);
		assert_int_equal(scheduler_tick(F.a, F.cfg, now, NULL, &ra,
						NULL), 0);
		assert_int_equal(scheduler_plan_tick(p, F.b, now, &rb, &err),
				 0);
		assert_int_equal(ra.n_enqueued, rb.n_enqueued);
		assert_int_equal(ra.n_missed, rb.n_missed);
		assert_int_equal(ra.n_first_start, rb.n_first_start);
		assert_int_equal(ra.n_schedules, rb.n_schedules);
		assert_int_equal(ra.n_errors, 0);
		assert_int_equal(rb.n_errors, 0);
		assert_int_equal(ra.next_ms, rb.next_ms);
		int64_t next = ra.next_ms;
		if (gaps && g < n_gaps && next >= gaps[g].at) {
			next = gaps[g].until;
			g++;
		}
		now = next;
		steps++;
	}
	assert_true(steps >= 2);
	scheduler_plan_free(p);
}

/* Spring forward and fall back in New York and Berlin, 2026. */
static void plan_matches_tick_over_dst(void **state)
{
	open_both(state);
	load(DST_SCHEDULES);
	int64_t from = iso("2026-03-07T12:00:00Z");
	int64_t until = iso("2026-03-30T12:00:00Z");
	drive_both(from, until, NULL, 0);
	assert_true(compare_stores(from, until) > 100);
	from = iso("2026-10-24T12:00:00Z");
	until = iso("2026-11-02T12:00:00Z");
	drive_both(from, until, NULL, 0);
	assert_true(compare_stores(from, until) > 100);
}

/* Downtimes (a short one, one across a DST change, a long one) under
 * every catch-up policy, then a clock set back. */
static void plan_matches_tick_over_downtime(void **state)
{
	open_both(state);
	load(DST_SCHEDULES);
	int64_t from = iso("2026-03-07T20:00:00Z");
	int64_t until = iso("2026-03-12T00:00:00Z");
	const struct gap gaps[] = {
		{iso("2026-03-07T23:00:00Z"), iso("2026-03-08T00:20:00Z")},
		{iso("2026-03-08T05:00:00Z"), iso("2026-03-08T09:10:00Z")},
		{iso("2026-03-09T00:00:00Z"), iso("2026-03-11T07:45:00Z")},
	};
	drive_both(from, until, gaps, sizeof(gaps) / sizeof(gaps[0]));
	assert_true(compare_stores(from, until) > 50);
	/* A plan built after the downtime catches up as the tick does. */
	drive_both(iso("2026-03-13T09:07:00Z"), iso("2026-03-13T12:00:00Z"),
		   NULL, 0);
	/* The clock set back: nothing reruns on either. */
	drive_both(iso("2026-03-13T06:00:00Z"), iso("2026-03-13T13:00:00Z"),
		   NULL, 0);
	compare_stores(from, iso("2026-03-13T13:00:00Z"));
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_MISSED};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(store_ledger_query(F.b, &lf, &rows, &n, NULL), 0);
	assert_true(n > 10);
	store_ledger_rows_free(rows, n);
}

/* A rename (renamed_from) across a downtime: the plan's build takes the
 * old name's state over as the tick does, and catches up the same. */
static void plan_matches_tick_over_a_rename(void **state)
{
	open_both(state);
	load("  old: {cron: \"0 * * * *\", tz: Europe/Berlin, catchup: all, "
	     "tasks: [{name: a, command: [/bin/true]}]}\n");
	drive_both(iso("2026-03-28T20:00:00Z"), iso("2026-03-29T00:00:00Z"),
		   NULL, 0);
	load("  new: {cron: \"0 * * * *\", tz: Europe/Berlin, catchup: all, "
	     "renamed_from: [old], tasks: [{name: a, command: "
	     "[/bin/true]}]}\n");
	int64_t from = iso("2026-03-29T04:30:00Z");
	drive_both(from, iso("2026-03-29T09:00:00Z"), NULL, 0);
	/* 01:00 .. 04:00 UTC caught up under the new name, then on time. */
	assert_int_equal(compare_stores(iso("2026-03-29T00:00:01Z"),
					iso("2026-03-29T09:00:00Z")), 9);
	int64_t last;
	assert_int_equal(store_sched_last_get(F.b, "new", &last, NULL), 0);
	assert_int_equal(last, iso("2026-03-29T09:00:00Z"));
}

/* Fails every call: a store of the backend whose tables are gone. */
static struct store *broken_store(void **state, char *url, size_t n,
				  char *schema, size_t ns)
{
	struct store *s = NULL;
	struct sc_err err = {0};

	open_second(state, "broken", url, n, schema, ns);
	assert_int_equal(store_open(url, F.clock, &s, &err), 0);
	if (tb_is_sqlite(state)) {
		sqlite3 *db = NULL;
		assert_int_equal(sqlite3_open(url + 7, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, "DROP TABLE sched_state; "
					      "DROP TABLE jobs; DROP TABLE "
					      "ledger;", NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
	} else {
		char sql[200];
		snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", schema);
		assert_int_equal(tb_pg_exec(((struct tb *)*state)->base, sql),
				 0);
		schema[0] = '\0';
	}
	return s;
}

static void idle_tick_touches_no_store(void **state)
{
	struct sched_plan *p = NULL;
	struct sched_result r;
	struct sc_err err = {0};
	char url[1100], schema[80] = "";
	int64_t t0 = iso("2026-01-01T00:00:30Z");

	F.a = tb_open(state, F.clock);
	load_many(50, "0 * * * *");
	sc_clock_set_ms(F.clock, t0);
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, t0, NULL, &p, &err), 0);
	assert_int_equal(scheduler_plan_tick(p, F.a, t0, &r, &err), 0);
	assert_int_equal(r.n_first_start, 50);
	assert_int_equal(r.next_ms, iso("2026-01-01T01:00:00Z"));
	struct store *bad = broken_store(state, url, sizeof(url), schema,
					 sizeof(schema));
	/* The proof that it fails: a read. */
	int64_t last;
	assert_int_not_equal(store_sched_last_get(bad, "p0000", &last, NULL), 0);
	/* Nothing due all the hour: no call reaches the store. */
	for (int64_t t = t0 + MIN; t < iso("2026-01-01T01:00:00Z"); t += MIN) {
		assert_int_equal(scheduler_plan_tick(p, bad, t, &r, &err), 0);
		assert_int_equal(r.n_errors, 0);
		assert_int_equal(r.n_enqueued, 0);
		assert_int_equal(r.next_ms, iso("2026-01-01T01:00:00Z"));
	}
	assert_int_equal(scheduler_plan_next(p), iso("2026-01-01T01:00:00Z"));
	/* Due: all 50 fail on that store, and are retried on the next tick
	 * (the good store then takes them). */
	int64_t t1 = iso("2026-01-01T01:00:00Z");
	sc_clock_set_ms(F.clock, t1);
	assert_int_not_equal(scheduler_plan_tick(p, bad, t1, &r, &err), 0);
	assert_int_equal(r.n_errors, 50);
	assert_int_equal(scheduler_plan_tick(p, F.a, t1 + SEC, &r, &err), 0);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.n_enqueued, 50);
	assert_int_equal(r.next_ms, iso("2026-01-01T02:00:00Z"));
	store_close(bad);
	drop_second(state, schema);
	scheduler_plan_free(p);
}

static int64_t jobs_of(struct store *s, const char *name)
{
	struct store_counts c;

	assert_int_equal(store_job_counts(s, name, &c, NULL), 0);
	return c.ready_due + c.delayed + c.active + c.done + c.dead;
}

static size_t n_missed(struct store *s)
{
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_MISSED};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &lf, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

/* SIGHUP: the plan of the new config is built from the store; a schedule
 * kept fires as before (no slot twice, none missed), an added one starts
 * from now, a removed one stops. */
static void reload_rebuilds_the_plan(void **state)
{
	struct sched_plan *p = NULL;
	struct sched_result r;
	struct sc_err err = {0};
	int64_t t = iso("2026-01-01T00:00:00Z");

	F.a = tb_open(state, F.clock);
	load("  keep: {cron: \"*/10 * * * *\", tz: UTC, tasks: [{name: a, "
	     "command: [/bin/true]}]}\n"
	     "  gone: {cron: \"*/10 * * * *\", tz: UTC, tasks: [{name: a, "
	     "command: [/bin/true]}]}\n");
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, t, NULL, &p, &err), 0);
	for (int i = 0; i < 3; i++, t += 10 * MIN) {
		sc_clock_set_ms(F.clock, t);
		assert_int_equal(scheduler_plan_tick(p, F.a, t, &r, &err), 0);
		assert_int_equal(r.n_enqueued, 2);
	}
	/* 00:30 is next: reload at 00:25. */
	scheduler_plan_free(p);
	p = NULL;
	load("  keep: {cron: \"*/10 * * * *\", tz: UTC, tasks: [{name: a, "
	     "command: [/bin/true]}]}\n"
	     "  added: {cron: \"*/10 * * * *\", tz: UTC, tasks: [{name: a, "
	     "command: [/bin/true]}]}\n");
	int64_t at = iso("2026-01-01T00:25:00Z");
	sc_clock_set_ms(F.clock, at);
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, at, NULL, &p, &err), 0);
	assert_int_equal(scheduler_plan_next(p), iso("2026-01-01T00:30:00Z"));
	assert_int_equal(scheduler_plan_tick(p, F.a, at, &r, &err), 0);
	assert_int_equal(r.n_first_start, 1);
	assert_int_equal(r.n_enqueued, 0);
	int64_t last;
	assert_int_equal(store_sched_last_get(F.a, "added", &last, NULL), 0);
	assert_int_equal(last, at - 1);
	for (t = iso("2026-01-01T00:30:00Z"); t <= iso("2026-01-01T01:00:00Z");
	     t += 10 * MIN) {
		sc_clock_set_ms(F.clock, t);
		assert_int_equal(scheduler_plan_tick(p, F.a, t, &r, &err), 0);
		assert_int_equal(r.n_enqueued, 2);
		assert_int_equal(r.n_missed, 0);
		assert_int_equal(r.n_first_start, 0);
	}
	assert_int_equal(jobs_of(F.a, "keep"), 7);  /* 00:00 .. 01:00 */
	assert_int_equal(jobs_of(F.a, "gone"), 3);  /* 00:00 .. 00:20 */
	assert_int_equal(jobs_of(F.a, "added"), 4); /* 00:30 .. 01:00 */
	assert_int_equal(n_missed(F.a), 0);
	scheduler_plan_free(p);
}

/* Two nodes, each with its plan and handle on one store: each slot is one
 * job; a node that was paused a long while (its copy of last far behind
 * the store) neither reruns nor reports the other's slots as missed. */
static void two_plans_on_one_store_make_one_job_per_slot(void **state)
{
	struct sched_plan *p1 = NULL, *p2 = NULL;
	struct sched_result r1, r2;
	struct sc_err err = {0};
	int64_t t = iso("2026-01-01T00:00:00Z");

	F.a = tb_open(state, F.clock);
	F.b = tb_open(state, F.clock); /* the same store, a second handle */
	load("  h: {cron: \"0 * * * *\", tz: UTC, catchup: all, tasks: "
	     "[{name: a, command: [/bin/true]}]}\n"
	     "  q: {cron: \"*/15 * * * *\", tz: UTC, catchup: latest, tasks: "
	     "[{name: a, command: [/bin/true]}]}\n");
	sc_clock_set_ms(F.clock, t);
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, t, NULL, &p1, &err), 0);
	assert_int_equal(scheduler_plan_new(F.b, F.cfg, t, NULL, &p2, &err), 0);
	size_t made = 0;
	/* Both on time for two hours, in both orders. */
	for (int i = 0; i <= 8; i++, t += 15 * MIN) {
		sc_clock_set_ms(F.clock, t);
		if (i % 2) {
			assert_int_equal(scheduler_plan_tick(p1, F.a, t, &r1,
							     &err), 0);
			assert_int_equal(scheduler_plan_tick(p2, F.b, t, &r2,
							     &err), 0);
		} else {
			assert_int_equal(scheduler_plan_tick(p2, F.b, t, &r2,
							     &err), 0);
			assert_int_equal(scheduler_plan_tick(p1, F.a, t, &r1,
							     &err), 0);
		}
		made += r1.n_enqueued + r2.n_enqueued;
	}
	assert_int_equal(jobs_of(F.a, "h"), 3);
	assert_int_equal(jobs_of(F.a, "q"), 9);
	assert_int_equal(made, 12);
	/* Node 2 pauses for five hours while node 1 runs on time. */
	for (; t <= iso("2026-01-01T07:00:00Z"); t += 15 * MIN) {
		sc_clock_set_ms(F.clock, t);
		assert_int_equal(scheduler_plan_tick(p1, F.a, t, &r1, &err), 0);
	}
	t -= 15 * MIN;
	/* Node 2 comes back at 07:00:05, behind the store by five hours. */
	sc_clock_set_ms(F.clock, t + 5 * SEC);
	assert_int_equal(scheduler_plan_tick(p2, F.b, t + 5 * SEC, &r2, &err),
			 0);
	assert_int_equal(r2.n_enqueued, 0);
	assert_int_equal(r2.n_missed, 0);
	assert_int_equal(jobs_of(F.a, "h"), 8);  /* 00:00 .. 07:00 */
	assert_int_equal(jobs_of(F.a, "q"), 29); /* 00:00 .. 07:00 */
	assert_int_equal(n_missed(F.a), 0);
	struct alert_filter af = {.slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	struct store_alert *al = NULL;
	size_t na = 0;
	assert_int_equal(store_alert_list(F.a, &af, &al, &na, NULL), 0);
	assert_int_equal(na, 0);
	free(al);
	scheduler_plan_free(p1);
	scheduler_plan_free(p2);
}

/* 1,000 schedules seen for the first time: 1,000 baselines, in one go,
 * before any slot; a stop before the first slot is then downtime. */
static void first_start_of_1000_records_baselines(void **state)
{
	struct sched_plan *p = NULL;
	struct sched_result r;
	struct sc_err err = {0};
	int64_t t = iso("2026-01-01T00:00:30Z");

	F.a = tb_open(state, F.clock);
	load_many(1000, "0 * * * *");
	sc_clock_set_ms(F.clock, t);
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, t, NULL, &p, &err), 0);
	struct store_sched_last *v = NULL;
	size_t n = 0;
	assert_int_equal(store_sched_last_all(F.a, &v, &n, &err), 0);
	assert_int_equal(n, 1000);
	for (size_t i = 0; i < n; i++) {
		char want[32];
		snprintf(want, sizeof(want), "p%04zu", i);
		assert_string_equal(v[i].schedule, want); /* name order */
		assert_int_equal(v[i].slot_ms, t - 1);
	}
	free(v);
	assert_int_equal(scheduler_plan_tick(p, F.a, t, &r, &err), 0);
	assert_int_equal(r.n_first_start, 1000);
	assert_int_equal(scheduler_plan_tick(p, F.a, t + SEC, &r, &err), 0);
	assert_int_equal(r.n_first_start, 0);
	scheduler_plan_free(p);
	/* Stopped past 01:00 and 02:00: the new plan is no first start, it
	 * catches 02:00 up (latest) and records 01:00 as missed. */
	int64_t back = iso("2026-01-01T02:00:30Z");
	sc_clock_set_ms(F.clock, back);
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, back, NULL, &p, &err),
			 0);
	assert_int_equal(scheduler_plan_tick(p, F.a, back, &r, &err), 0);
	assert_int_equal(r.n_first_start, 0);
	assert_int_equal(r.n_enqueued, 1000);
	assert_int_equal(r.n_missed, 1000);
	scheduler_plan_free(p);
}

/* The same instant makes 1,000 per-minute schedules due: one tick
 * enqueues all 1,000, and the next instant is the next minute. */
static void burst_of_1000_due_enqueues_all(void **state)
{
	struct sched_plan *p = NULL;
	struct sched_result r;
	struct sc_err err = {0};
	int64_t t = iso("2026-01-01T00:00:30Z");

	F.a = tb_open(state, F.clock);
	load_many(1000, "* * * * *");
	sc_clock_set_ms(F.clock, t);
	assert_int_equal(scheduler_plan_new(F.a, F.cfg, t, NULL, &p, &err), 0);
	assert_int_equal(scheduler_plan_tick(p, F.a, t, &r, &err), 0);
	assert_int_equal(r.n_enqueued, 0);
	int64_t due = iso("2026-01-01T00:01:00Z");
	assert_int_equal(r.next_ms, due);
	sc_clock_set_ms(F.clock, due);
	assert_int_equal(scheduler_plan_tick(p, F.a, due, &r, &err), 0);
	assert_int_equal(r.n_enqueued, 1000);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.next_ms, due + MIN);
	struct store_counts c;
	assert_int_equal(store_job_counts(F.a, NULL, &c, NULL), 0);
	assert_int_equal(c.ready_due + c.delayed, 1000);
	/* Every schedule's state moved to the slot. */
	struct store_sched_last *v = NULL;
	size_t n = 0;
	assert_int_equal(store_sched_last_all(F.a, &v, &n, &err), 0);
	assert_int_equal(n, 1000);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i].slot_ms, due);
	free(v);
	scheduler_plan_free(p);
}

/* set_many never moves a state backwards, and takes a name twice. */
static void set_many_never_moves_backwards(void **state)
{
	struct sc_err err = {0};
	struct store_sched_last v[3] = {
		{"x", 100}, {"y", 50}, {"x", 70},
	};
	int64_t l;

	F.a = tb_open(state, F.clock);
	assert_int_equal(store_sched_last_set(F.a, "y", 80, &err), 0);
	assert_int_equal(store_sched_last_set_many(F.a, v, 3, &err), 0);
	assert_int_equal(store_sched_last_get(F.a, "x", &l, NULL), 0);
	assert_int_equal(l, 100);
	assert_int_equal(store_sched_last_get(F.a, "y", &l, NULL), 0);
	assert_int_equal(l, 80);
	/* A name with the characters an array literal quotes. */
	struct store_sched_last q = {"a\"b\\c,{d}", 5};
	assert_int_equal(store_sched_last_set_many(F.a, &q, 1, &err), 0);
	assert_int_equal(store_sched_last_get(F.a, q.schedule, &l, NULL), 0);
	assert_int_equal(l, 5);
	assert_int_equal(store_sched_last_set_many(F.a, NULL, 0, &err), 0);
}

/* The store backends' set-up (store_backend.h) chained with ours. */
static int setup_sqlite(void **state)
{
	return tb_setup_sqlite(state) || setup(state);
}

static int teardown_sqlite(void **state)
{
	teardown(state);
	return tb_teardown_sqlite(state);
}

static int setup_pg(void **state)
{
	return tb_setup_pg(state) || setup(state);
}

static int teardown_pg(void **state)
{
	teardown(state);
	return tb_teardown_pg(state);
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	struct CMUnitTest tests[] = {
		T(plan_matches_tick_over_dst),
		T(plan_matches_tick_over_downtime),
		T(plan_matches_tick_over_a_rename),
		T(idle_tick_touches_no_store),
		T(reload_rebuilds_the_plan),
		T(two_plans_on_one_store_make_one_job_per_slot),
		T(first_start_of_1000_records_baselines),
		T(burst_of_1000_due_enqueues_all),
		T(set_many_never_moves_backwards),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_sqlite;
		tests[i].teardown_func = teardown_sqlite;
	}
	failed = _cmocka_run_group_tests("sched_plan/sqlite", tests, n, NULL,
					 NULL);
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_pg;
		tests[i].teardown_func = teardown_pg;
	}
	return failed + _cmocka_run_group_tests("sched_plan/postgresql", tests,
						n, NULL, NULL);
}
