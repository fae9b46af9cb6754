/*
 * test_timing.c - the operator's timing controls of issue 17 against a
 * real store (SQLite, and PostgreSQL when SURECRON_TEST_PG is set), real
 * configs and real command tasks, on a virtual clock:
 *   - catchup_window: after a downtime longer than the window, the late
 *     slots older than it are missed (rows and the missed alert), with
 *     `catchup: latest` and `catchup: all`, through scheduler_tick and
 *     through the daemon's plan;
 *   - jitter: every offset in [0, jitter) over many slots, the same in
 *     two computations (two configs loaded apart: two nodes), and the
 *     scheduler's job due at slot + offset while its slot stays the slot;
 *   - deadline: the seed's weekly timeline (4 attempts, exponential from
 *     30 min) with a deadline of 60 min is lost after attempt 2, cause
 *     deadline, at attempt 2's end (not at the retry's 90 min); a job
 *     claimed past the deadline is lost without running; a manual run
 *     afterwards is delivered, "late": true in the message and the
 *     ledger row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alert.h"
#include "clock.h"
#include "config.h"
#include "queue.h"
#include "scheduler.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"
#include "worker.h"

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

struct fix {
	char dir[256];
	struct sc_clock *clock;
	struct store *s;
	struct config *cfg;
};

static struct fix F;

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

static int setup(void **state)
{
	struct sc_err err = {0};

	memset(&F, 0, sizeof(F));
	snprintf(F.dir, sizeof(F.dir), "%s", tu_tmpdir());
	F.clock = sc_clock_virtual_new(0);
	if (!tb_url(state)[0] ||
	    store_open(tb_url(state), F.clock, &F.s, &err) != 0) {
		fprintf(stderr, "store %s: %s\n", tb_url(state), err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	store_close(F.s);
	config_free(F.cfg);
	sc_clock_free(F.clock);
	tu_rmrf(F.dir);
	return 0;
}

/* Loads a config of one schedule "s" with the given extra lines (each
 * "    key: value\n"), a file target and an alert to it. */
static struct config *load_cfg(const char *cron, const char *extra)
{
	char path[320], text[2048];
	struct sc_err err = {0};
	struct config *c = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.yaml", F.dir);
	snprintf(text, sizeof(text),
		 "targets:\n"
		 "  archive: {kind: file, path: %s/out.jsonl}\n"
		 "alerts: {targets: [archive], on: [lost, missed]}\n"
		 "schedules:\n"
		 "  s:\n"
		 "    cron: \"%s\"\n"
		 "    tz: UTC\n"
		 "    targets: [archive]\n"
		 "%s"
		 "    tasks:\n"
		 "      - name: t\n"
		 "        command: [/bin/sh, -c, \"touch %s/ran; test -f "
		 "%s/ok || exit 75; echo '{\\\"summary\\\": \\\"fine\\\"}'\"]\n",
		 F.dir, cron, extra, F.dir, F.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	if (config_load(path, &c, &err) != 0)
		fail_msg("config: %s", err.msg);
	return c;
}

static void load(const char *cron, const char *extra)
{
	config_free(F.cfg);
	F.cfg = load_cfg(cron, extra);
}

static struct sched_result tick(int64_t now)
{
	struct sched_result r;
	struct sc_err err = {0};

	sc_clock_set_ms(F.clock, now);
	if (scheduler_tick(F.s, F.cfg, now, NULL, &r, &err) != 0)
		fail_msg("scheduler_tick: %s", err.msg);
	assert_int_equal(r.n_errors, 0);
	return r;
}

static bool has_job(int64_t slot, struct store_job *out)
{
	struct store_job j;
	int rc = store_job_find(F.s, "s", slot, &j, NULL);

	if (rc == SC_ENOENT)
		return false;
	assert_int_equal(rc, 0);
	if (out)
		*out = j;
	return true;
}

static size_t rows_of(const char *outcome, struct ledger_row **rows)
{
	struct ledger_filter lf = {.schedule = "s", .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX, .outcome = outcome};
	size_t n = 0;

	assert_int_equal(store_ledger_query(F.s, &lf, rows, &n, NULL), 0);
	return n;
}

static size_t count_rows(const char *outcome)
{
	struct ledger_row *rows = NULL;
	size_t n = rows_of(outcome, &rows);

	store_ledger_rows_free(rows, n);
	return n;
}

static size_t count_alerts(const char *reason)
{
	struct store_alert *v = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(store_alert_list(F.s, NULL, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		k += strcmp(v[i].reason, reason) == 0;
	sc_free(v);
	return k;
}

/* ---- catchup_window ---------------------------------------------------- */

/* Hourly, down from 00:30 to 20:30 (20 slots late), window 3h: latest
 * runs 20:00 (inside), all runs 18:00..20:00; everything older than
 * 17:30 is missed, with its rows and one missed alert. */
static void downtime(const char *catchup, size_t want_run)
{
	char extra[128];
	int64_t t0 = iso("2026-03-02T00:30:00Z"), back = t0 + 20 * HOUR;

	snprintf(extra, sizeof(extra), "    catchup: %s\n"
		 "    catchup_window: 3h\n", catchup);
	load("0 * * * *", extra);
	tick(t0); /* first start */
	struct sched_result r = tick(back);
	assert_int_equal(r.n_enqueued, want_run);
	assert_int_equal(r.n_missed, 20 - want_run);
	for (int h = 1; h <= 20; h++) {
		int64_t slot = t0 - 30 * MIN + h * HOUR;
		bool in_window = back - slot <= 3 * HOUR;
		bool runs = in_window && (want_run > 1 || h == 20);
		assert_int_equal(has_job(slot, NULL), runs);
	}
	assert_int_equal(count_rows(LEDGER_MISSED), 20 - want_run);
	struct ledger_row *rows = NULL;
	size_t n = rows_of(LEDGER_MISSED, &rows);
	assert_true(n > 0);
	assert_non_null(strstr(rows[0].details_json, "catchup_window_ms"));
	store_ledger_rows_free(rows, n);
	assert_int_equal(count_alerts("missed"), 1);
}

static void catchup_window_latest(void **state)
{
	downtime("latest", 1);
}

static void catchup_window_all(void **state)
{
	downtime("all", 3);
}

/* Without the window, latest runs the newest slot however old: the
 * window is what bounds it (here 20:00 is 10 h late, window 3h). */
static void catchup_window_latest_too_old_runs_nothing(void **state)
{
	int64_t t0 = iso("2026-03-02T00:30:00Z");

	load("0 */10 * * *", "    catchup: latest\n"
	     "    catchup_window: 3h\n");
	tick(t0);
	/* Back at 06:00 next day: 10:00, 20:00 and 00:00 are late by 20 h,
	 * 10 h and 6 h, all past the window: latest runs none of them. */
	struct sched_result r = tick(iso("2026-03-03T06:00:00Z"));
	assert_int_equal(r.n_enqueued, 0);
	assert_int_equal(r.n_missed, 3);
}

/* The daemon's plan takes the same decisions. */
static void catchup_window_through_the_plan(void **state)
{
	struct sched_plan *p = NULL;
	struct sched_result r;
	struct sc_err err = {0};
	int64_t t0 = iso("2026-03-02T00:30:00Z"), back = t0 + 20 * HOUR;

	load("0 * * * *", "    catchup: all\n    catchup_window: 3h\n");
	tick(t0);
	sc_clock_set_ms(F.clock, back);
	assert_int_equal(scheduler_plan_new(F.s, F.cfg, back, NULL, &p, &err),
			 0);
	assert_int_equal(scheduler_plan_tick(p, F.s, back, &r, &err), 0);
	scheduler_plan_free(p);
	assert_int_equal(r.n_enqueued, 3);
	assert_int_equal(r.n_missed, 17);
	assert_false(has_job(back - 4 * HOUR - 30 * MIN, NULL));
	assert_true(has_job(back - 2 * HOUR - 30 * MIN, NULL));
}

/* ---- jitter ------------------------------------------------------------ */

static void jitter_offsets_in_range_and_the_same_on_two_nodes(void **state)
{
	struct config *other;
	int64_t t = iso("2026-03-02T00:00:00Z");
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	size_t n_zero = 0;

	load("* * * * *", "    jitter: 10m\n");
	other = load_cfg("* * * * *", "    jitter: 10m\n");
	const struct schedule_spec *a = config_schedule(F.cfg, "s");
	const struct schedule_spec *b = config_schedule(other, "s");
	for (int i = 0; i < 20000; i++, t += MIN) {
		int64_t off = scheduler_jitter_ms(a, t);
		assert_true(off >= 0 && off < 10 * MIN);
		assert_int_equal(off % SEC, 0); /* prints exactly */
		assert_int_equal(off, scheduler_jitter_ms(b, t));
		assert_int_equal(scheduler_start_ms(a, t), t + off);
		lo = off < lo ? off : lo;
		hi = off > hi ? off : hi;
		n_zero += off == 0;
	}
	/* Spread over the range, not stuck at one end. */
	assert_true(lo < 10 * SEC);
	assert_true(hi > 10 * MIN - 10 * SEC);
	assert_true(n_zero < 100); /* 600 values: about 33 */
	/* Another schedule name, other offsets. */
	struct schedule_spec c = *a;
	struct schedule_extra cx = *spec_x(a);
	c.name = "s2";
	c.x = &cx;
	size_t same = 0;
	for (int i = 0; i < 100; i++)
		same += scheduler_jitter_ms(&c, t + i * MIN) ==
			scheduler_jitter_ms(a, t + i * MIN);
	assert_true(same < 5);
	/* A jitter that is no whole number of seconds: still below it. */
	cx.jitter_ms = 1500;
	for (int i = 0; i < 1000; i++) {
		int64_t off = scheduler_jitter_ms(&c, t + i * MIN);
		assert_true(off >= 0 && off < 1500);
	}
	cx.jitter_ms = 7;
	for (int i = 0; i < 1000; i++) {
		int64_t off = scheduler_jitter_ms(&c, t + i * MIN);
		assert_true(off >= 0 && off < 7);
	}
	/* No jitter: no offset. */
	cx.jitter_ms = 0;
	assert_int_equal(scheduler_jitter_ms(&c, t), 0);
	config_free(other);
}

/* The scheduler's job is due at slot + offset and keeps its slot. */
static void jitter_moves_run_at_not_the_slot(void **state)
{
	struct store_job j;
	int64_t slot = iso("2026-03-02T09:00:00Z");

	load("0 9 * * *", "    jitter: 10m\n");
	tick(slot - HOUR);
	tick(slot);
	assert_true(has_job(slot, &j));
	const struct schedule_spec *sc = config_schedule(F.cfg, "s");
	assert_int_equal(j.slot_ms, slot);
	assert_int_equal(j.run_at_ms, slot + scheduler_jitter_ms(sc, slot));
	assert_int_equal(count_rows(LEDGER_MISSED), 0);
}

/* ---- deadline ---------------------------------------------------------- */

static struct worker_result run_one(int64_t now, bool *claimed)
{
	struct store_job job;
	struct worker_result wr;
	struct sc_err err = {0};
	struct worker_opts wo = {.store = F.s, .config = F.cfg};
	size_t n = 0;

	sc_clock_set_ms(F.clock, now);
	assert_int_equal(queue_claim(F.s, "w", 5 * MIN, &job, 1, &n, &err), 0);
	*claimed = n == 1;
	memset(&wr, 0, sizeof(wr));
	if (n == 1)
		assert_int_equal(worker_run_job(&wo, &job, &wr, &err), 0);
	return wr;
}

static bool ran(void)
{
	char p[320];
	snprintf(p, sizeof(p), "%s/ran", F.dir);
	bool r = access(p, F_OK) == 0;
	unlink(p);
	return r;
}

static void make_ok(void)
{
	char p[320];
	snprintf(p, sizeof(p), "%s/ok", F.dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

/* The seed's weekly timeline: attempts at +0, +30 min, +90 min, +210
 * min; a deadline of 60 min cuts it after attempt 2. */
static void deadline_cuts_the_weekly_timeline_after_attempt_2(void **state)
{
	int64_t slot = iso("2026-12-04T17:00:00Z");
	struct sc_retry_timeline tl;
	int n_cut = 0;
	bool claimed;

	load("0 17 * * 5", "    deadline: 60m\n");
	const struct schedule_spec *sc = config_schedule(F.cfg, "s");
	assert_int_equal(spec_policy(sc)->attempts, 4);
	assert_int_equal(scheduler_timeline(sc, slot, &tl, &n_cut, NULL), 0);
	assert_int_equal(tl.n_attempts, 2);
	assert_int_equal(n_cut, 2);
	assert_int_equal(tl.attempt_ms[1], slot + 30 * MIN);
	assert_int_equal(tl.window_end_ms, slot + 30 * MIN);

	tick(slot - HOUR);
	tick(slot);
	struct worker_result wr = run_one(slot, &claimed);
	assert_true(claimed && ran());
	assert_false(wr.dead);
	assert_int_equal(wr.next_ms, slot + 30 * MIN);
	worker_result_dispose(&wr);
	/* Nothing due before the retry. */
	wr = run_one(slot + 29 * MIN, &claimed);
	assert_false(claimed);
	/* Attempt 2 fails: its retry would start at +90 min, after the
	 * deadline (+60 min): the slot is lost now, cause deadline. */
	wr = run_one(slot + 30 * MIN, &claimed);
	assert_true(claimed && ran());
	assert_true(wr.dead);
	worker_result_dispose(&wr);
	struct store_job j;
	assert_true(has_job(slot, &j));
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(j.attempts, 2);
	struct ledger_row *rows = NULL;
	size_t n = rows_of(LEDGER_LOST, &rows);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].error_class, "deadline");
	assert_int_equal(rows[0].finished_ms, slot + 30 * MIN);
	assert_non_null(strstr(rows[0].error_msg, "deadline"));
	store_ledger_rows_free(rows, n);
	assert_int_equal(count_alerts("lost"), 1);
	/* No attempt after it: nothing is due, ever. */
	wr = run_one(slot + 90 * MIN, &claimed);
	assert_false(claimed);

	/* A manual run afterwards succeeds and is marked late. */
	make_ok();
	sc_clock_set_ms(F.clock, slot + 3 * HOUR);
	assert_int_equal(queue_trigger(F.s, "s", slot, spec_policy(sc), NULL,
				       NULL, NULL), 0);
	wr = run_one(slot + 3 * HOUR, &claimed);
	assert_true(claimed && ran());
	assert_true(wr.completed);
	worker_result_dispose(&wr);
	n = rows_of(LEDGER_SUCCESS, &rows);
	assert_int_equal(n, 1);
	json_t *d = json_loads(rows[0].details_json, 0, NULL);
	assert_non_null(d);
	assert_true(json_is_true(json_object_get(d, "late")));
	json_decref(d);
	store_ledger_rows_free(rows, n);
	/* The delivered message says so too. */
	char p[320];
	snprintf(p, sizeof(p), "%s/out.jsonl", F.dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	char line[65536];
	bool seen = false;
	while (fgets(line, sizeof(line), f)) {
		json_t *m = json_loads(line, 0, NULL);
		if (m && strcmp(json_string_value(json_object_get(m, "kind")),
				"result") == 0) {
			assert_true(json_is_true(json_object_get(m, "late")));
			seen = true;
		}
		json_decref(m);
	}
	fclose(f);
	assert_true(seen);
}

/* A job claimed after its deadline (the node was down, the queue full)
 * does not run: lost at once, cause deadline. One within it runs and,
 * on time, has no "late" field. */
static void deadline_passed_at_claim_is_lost_unrun(void **state)
{
	int64_t slot = iso("2026-12-04T17:00:00Z");
	bool claimed;

	load("0 17 * * 5", "    deadline: 60m\n");
	tick(slot - HOUR);
	tick(slot);
	struct worker_result wr = run_one(slot + 61 * MIN, &claimed);
	assert_true(claimed);
	assert_false(ran());
	assert_true(wr.dead);
	worker_result_dispose(&wr);
	struct ledger_row *rows = NULL;
	size_t n = rows_of(LEDGER_LOST, &rows);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].error_class, "deadline");
	store_ledger_rows_free(rows, n);
	assert_int_equal(count_alerts("lost"), 1);

	/* The next week's slot, on time and fine: no "late". */
	int64_t next = slot + 7 * DAY;
	make_ok();
	tick(next);
	wr = run_one(next + 59 * MIN, &claimed);
	assert_true(claimed && ran() && wr.completed);
	worker_result_dispose(&wr);
	n = rows_of(LEDGER_SUCCESS, &rows);
	assert_int_equal(n, 1);
	assert_null(strstr(rows[0].details_json, "late"));
	store_ledger_rows_free(rows, n);
}

/* A worker that vanished mid-attempt before the deadline: its job is
 * recovered after the deadline (READY, due now), and claimed then it is
 * still bound: lost unrun, cause deadline. (Only an operator's revival
 * of a lost slot frees a job from the deadline.) */
static void deadline_binds_a_stall_recovered_after_it(void **state)
{
	int64_t slot = iso("2026-12-04T17:00:00Z");
	struct store_job job;
	struct sc_err err = {0};
	size_t n = 0;
	int got = 0;
	bool claimed;

	load("0 17 * * 5", "    deadline: 60m\n");
	tick(slot - HOUR);
	tick(slot);
	sc_clock_set_ms(F.clock, slot);
	assert_int_equal(queue_claim(F.s, "gone", 5 * MIN, &job, 1, &n, &err),
			 0);
	assert_int_equal(n, 1);
	/* The lease runs out; recovery comes after the deadline. */
	sc_clock_set_ms(F.clock, slot + 70 * MIN);
	struct worker_opts wo = {.store = F.s, .config = F.cfg};
	assert_int_equal(worker_recover(&wo, QUEUE_STALL_LIMIT, &got, NULL,
					&err), 0);
	assert_int_equal(got, 1);
	struct worker_result wr = run_one(slot + 70 * MIN, &claimed);
	assert_true(claimed);
	assert_false(ran());
	assert_true(wr.dead);
	worker_result_dispose(&wr);
	struct ledger_row *rows = NULL;
	n = rows_of(LEDGER_LOST, &rows);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].error_class, "deadline");
	store_ledger_rows_free(rows, n);
}

/* Messages of kind in out.jsonl with the given attempt (0: any). */
static size_t count_messages(const char *kind, int attempt)
{
	char p[320], line[65536];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/out.jsonl", F.dir);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		json_t *m = json_loads(line, 0, NULL);
		const char *k = json_string_value(json_object_get(m, "kind"));
		if (k && strcmp(k, kind) == 0 &&
		    (!attempt || json_integer_value(json_object_get(
				     m, "attempt")) == attempt))
			n++;
		json_decref(m);
	}
	fclose(f);
	return n;
}

/* `notices: final` sends the notice of the attempt that loses the slot:
 * with a deadline that is attempt 2, not attempt 4. */
static void deadline_makes_the_cut_attempt_final_for_notices(void **state)
{
	int64_t slot = iso("2026-12-04T17:00:00Z");
	bool claimed;

	load("0 17 * * 5", "    deadline: 60m\n    notices: final\n");
	tick(slot - HOUR);
	tick(slot);
	struct worker_result wr = run_one(slot, &claimed);
	assert_true(claimed && !wr.dead);
	worker_result_dispose(&wr);
	assert_int_equal(count_messages("failure_notice", 0), 0);
	wr = run_one(slot + 30 * MIN, &claimed);
	assert_true(claimed && wr.dead);
	worker_result_dispose(&wr);
	assert_int_equal(count_messages("failure_notice", 2), 1);
	assert_int_equal(count_messages("failure_notice", 0), 1);
}

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
		T(catchup_window_latest),
		T(catchup_window_all),
		T(catchup_window_latest_too_old_runs_nothing),
		T(catchup_window_through_the_plan),
		T(jitter_offsets_in_range_and_the_same_on_two_nodes),
		T(jitter_moves_run_at_not_the_slot),
		T(deadline_cuts_the_weekly_timeline_after_attempt_2),
		T(deadline_passed_at_claim_is_lost_unrun),
		T(deadline_makes_the_cut_attempt_final_for_notices),
		T(deadline_binds_a_stall_recovered_after_it),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_sqlite;
		tests[i].teardown_func = teardown_sqlite;
	}
	failed = _cmocka_run_group_tests("timing/sqlite", tests, n, NULL,
					 NULL);
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_pg;
		tests[i].teardown_func = teardown_pg;
	}
	return failed + _cmocka_run_group_tests("timing/postgresql", tests,
						n, NULL, NULL);
}
