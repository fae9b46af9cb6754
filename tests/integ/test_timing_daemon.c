/*
 * test_timing_daemon.c - issue 17's catchup_window, jitter and deadline
 * in a real daemon (`surecron run`) on the test clock seam
 * (SURECRON_TEST_CLOCK and _RATE), with real task processes, on SQLite
 * and on PostgreSQL (SURECRON_TEST_PG):
 *   - the seed's weekly timeline (4 attempts, exponential from 30 min)
 *     with `jitter: 10m` and `deadline: 60m`, the task always failing:
 *     attempt 1 starts at slot + the offset the library computes here
 *     (not at the slot), attempt 2 30 min after it, and attempt 2's
 *     failure loses the slot at once, cause deadline, before the
 *     deadline; no attempt 3;
 *   - catchup_window: a daemon stopped for 20 hours of an hourly schedule
 *     with `catchup: all` and `catchup_window: 3h` runs only the 3 late
 *     slots inside the window when it starts again; the 17 others are
 *     missed rows.
 * Every wait is on a condition (ledger rows, jobs), never a fixed sleep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "clock.h"
#include "config.h"
#include "daemon_util.h"
#include "scheduler.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define MIN (60 * 1000LL)
#define HOUR (60 * MIN)
#define PATIENCE_MS 30000

static char dir[256], cfg[320], url[1100];

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", dir);
	snprintf(url, sizeof(url), "%s", tb_url(state));
	return url[0] ? 0 : -1;
}

static int teardown(void **state)
{
	tu_reap_all();
	tu_rmrf(dir);
	return 0;
}

static void write_cfg(const char *schedule)
{
	FILE *f = fopen(cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nschedules:\n%s", url, schedule);
	fclose(f);
}

static pid_t start(const char *clock, const char *rate)
{
	static char c[64], r[64];

	snprintf(c, sizeof(c), "SURECRON_TEST_CLOCK=%s", clock);
	snprintf(r, sizeof(r), "SURECRON_TEST_CLOCK_RATE=%s", rate);
	const char *envs[] = {c, r, "SURECRON_LOG=warn", NULL};
	return tu_track(tu_start_daemon(dir, cfg, envs, 0));
}

static void stop(pid_t pid)
{
	assert_true(tu_stop_daemon(pid, 10000));
}

/* The rows of schedule, oldest first (caller frees). */
static size_t rows_of(const char *schedule, struct ledger_row **rows)
{
	struct store *s = tu_store_open(url);
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, rows, &n, NULL), 0);
	store_close(s);
	return n;
}

static void weekly_jitter_and_deadline(void **state)
{
	struct config *c = NULL;
	struct sc_err e = {0};
	int64_t slot = iso("2026-11-27T17:00:00Z");

	TU_NEED_TEST_SEAMS();
	write_cfg("  weekly:\n"
		  "    cron: \"0 17 * * 5\"\n"
		  "    tz: UTC\n"
		  "    jitter: 10m\n"
		  "    deadline: 60m\n"
		  "    tasks:\n"
		  "      - {name: t, command: [/bin/sh, -c, \"echo quota >&2; "
		  "exit 75\"]}\n");
	assert_int_equal(config_load(cfg, &c, &e), 0);
	int64_t start_ms = scheduler_start_ms(config_schedule(c, "weekly"),
					      slot);
	config_free(c);
	/* 600 clock seconds a real second: the 70 minutes in about 7 s,
	 * with half an hour (3 s) before the slot for the daemon to start
	 * (a PostgreSQL store's connection and migrations take a while). */
	pid_t pid = start("2026-11-27T16:30:00Z", "600");
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (tu_ledger_count(url, "weekly", LEDGER_LOST) == 0 &&
	       tu_now_ms() < end)
		tu_sleep_ms(20);
	stop(pid);

	struct ledger_row *rows = NULL;
	size_t n = rows_of("weekly", &rows);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].attempt, 1);
	assert_string_equal(rows[0].outcome, LEDGER_FAILED);
	assert_int_equal(rows[0].slot_ms, slot);
	/* Attempt 1 waited for the jitter: not before slot + offset. */
	assert_true(rows[0].started_ms >= start_ms);
	assert_true(rows[0].started_ms < start_ms + 2 * MIN);
	assert_int_equal(rows[1].attempt, 2);
	assert_string_equal(rows[1].outcome, LEDGER_LOST);
	assert_string_equal(rows[1].error_class, "deadline");
	/* The retry counted from the real start, and the loss came at
	 * attempt 2's end, before the deadline (not at +90 min). */
	assert_true(rows[1].started_ms >= rows[0].finished_ms + 30 * MIN);
	assert_true(rows[1].finished_ms < slot + 60 * MIN);
	store_ledger_rows_free(rows, n);
	/* No attempt 3 can come: the job is dead after 2. */
	struct store *st = tu_store_open(url);
	struct store_job j;
	assert_int_equal(store_job_find(st, "weekly", slot, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(j.attempts, 2);
	store_close(st);
}

static void hourly_catchup_window_after_downtime(void **state)
{
	TU_NEED_TEST_SEAMS();
	write_cfg("  hourly:\n"
		  "    cron: \"0 * * * *\"\n"
		  "    tz: UTC\n"
		  "    catchup: all\n"
		  "    catchup_window: 3h\n"
		  "    tasks:\n"
		  "      - {name: t, command: [/bin/sh, -c, \"echo ok\"]}\n");
	/* A first start at 00:30, recorded, then stopped. */
	pid_t pid = start("2026-03-02T00:30:00Z", "1");
	int64_t end = tu_now_ms() + PATIENCE_MS;
	bool seen = false;
	while (!seen && tu_now_ms() < end) {
		struct store *s = tu_store_open(url);
		int64_t last = 0;
		seen = store_sched_last_get(s, "hourly", &last, NULL) == 0;
		store_close(s);
		if (!seen)
			tu_sleep_ms(20);
	}
	assert_true(seen);
	stop(pid);
	/* Back at 20:30: 01:00..20:00 (20 slots) late; 18:00, 19:00, 20:00
	 * are inside the 3 h window. */
	pid = start("2026-03-02T20:30:00Z", "1");
	end = tu_now_ms() + PATIENCE_MS;
	while (tu_ledger_count(url, "hourly", LEDGER_SUCCESS) < 3 &&
	       tu_now_ms() < end)
		tu_sleep_ms(20);
	stop(pid);
	struct ledger_row *rows = NULL;
	size_t n = rows_of("hourly", &rows), n_ok = 0, n_missed = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].outcome, LEDGER_SUCCESS) == 0) {
			n_ok++;
			assert_true(rows[i].slot_ms >=
				    iso("2026-03-02T18:00:00Z"));
		} else if (strcmp(rows[i].outcome, LEDGER_MISSED) == 0) {
			n_missed++;
			assert_true(rows[i].slot_ms <=
				    iso("2026-03-02T17:00:00Z"));
		}
	}
	store_ledger_rows_free(rows, n);
	assert_int_equal(n_ok, 3);
	assert_int_equal(n_missed, 17);
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
		T(weekly_jitter_and_deadline),
		T(hourly_catchup_window_after_downtime),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_sqlite;
		tests[i].teardown_func = teardown_sqlite;
	}
	failed = _cmocka_run_group_tests("timing_daemon/sqlite", tests, n,
					 NULL, NULL);
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_pg;
		tests[i].teardown_func = teardown_pg;
	}
	return failed + _cmocka_run_group_tests("timing_daemon/postgresql",
						tests, n, NULL, NULL);
}
