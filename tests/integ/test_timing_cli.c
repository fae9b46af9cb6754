/*
 * test_timing_cli.c - the operator's timing controls of issue 17 as a user
 * runs them: the real binary ($SURECRON_BIN) on a config in a temp folder.
 *   - backfill, `trigger SCHEDULE --from T --until T [--dry-run]`, on
 *     SQLite and PostgreSQL (SURECRON_TEST_PG): with some slots of the
 *     range done (and one queued), only the missing slots get a job, the
 *     others are listed and left alone; --dry-run writes nothing; a second
 *     run enqueues nothing; a range of more than 1,000 slots is refused
 *     (exit 2, its count said, nothing written);
 *   - jitter: `explain --json SCHEDULE`, `next --config FILE SCHEDULE` and
 *     `simulate` show the same start instants as the library's offset
 *     (scheduler_start_ms) computed here: one computation per process;
 *   - deadline: `explain` prints the seed's weekly timeline clipped to a
 *     60 min deadline (2 attempts); `simulate` with the task failing loses
 *     the slot after attempt 2, cause deadline, at attempt 2's instant.
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
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "queue.h"
#include "scheduler.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define MIN (60 * 1000LL)
#define HOUR (60 * MIN)

static char dir[256], cfgpath[320];
static char out[262144], err[65536];

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

/* Writes the config: store url, an hourly schedule "h" and a weekly "w"
 * (jitter 10m, deadline 60m) whose task fails unless DIR/ok exists. */
static void write_config(const char *url)
{
	FILE *f = fopen(cfgpath, "w");

	assert_non_null(f);
	fprintf(f,
		"store: \"%s\"\n"
		"targets:\n"
		/* Relative on purpose: simulate's redirect_targets frees
		 * the target path, which for an absolute path is not a
		 * heap string of its own (config.c's resolve). */
		"  archive: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n"
		"  h:\n"
		"    cron: \"0 * * * *\"\n"
		"    tz: UTC\n"
		"    targets: [archive]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  w:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tz: UTC\n"
		"    jitter: 10m\n"
		"    deadline: 60m\n"
		"    targets: [archive]\n"
		"    tasks: [{name: wt, command: [/bin/sh, -c, \"exit 75\"]}]\n",
		url);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfgpath, sizeof(cfgpath), "%s/surecron.yaml", dir);
	if (!tb_url(state)[0])
		return -1;
	write_config(tb_url(state));
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(dir);
	return 0;
}

static int run(const char *const *args)
{
	static const char *const env[] = {"SURECRON_SCHEDULE_H",
					  "SURECRON_SCHEDULE_W", NULL};
	int rc = tu_run_bin(dir, dir, env, args, out, sizeof(out), err,
			    sizeof(err));

	assert_true(rc >= 0);
	return rc;
}

static struct store *open_store(void **state, struct sc_clock *c)
{
	struct store *s = NULL;
	struct sc_err e = {0};

	if (store_open(tb_url(state), c, &s, &e) != 0)
		fail_msg("store_open: %s", e.msg);
	return s;
}

static int64_t n_jobs(struct store *s)
{
	struct store_counts c;

	assert_int_equal(store_job_counts(s, "h", &c, NULL), 0);
	return c.ready_due + c.delayed + c.active + c.done + c.dead;
}

static size_t count_lines(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* ---- backfill ---------------------------------------------------------- */

static void backfill_runs_only_the_missing_slots(void **state)
{
	static const struct sc_retry_policy one = {1, SC_BACKOFF_FIXED, 1000};
	int64_t from = iso("2026-11-30T00:00:00Z");
	struct sc_clock *clk = sc_clock_virtual_new(from + 30 * 3600 * 1000LL);
	struct store *s = open_store(state, clk);
	struct store_job j;
	struct sc_err e = {0};
	size_t n = 0;

	/* 01:00 and 03:00 done, 04:00 queued: 0, 2, 5, 6, 7 are missing. */
	for (int h = 1; h <= 3; h += 2) {
		assert_int_equal(queue_enqueue(s, "h", from + h * HOUR, &one,
					       NULL, NULL, &e), 0);
		assert_int_equal(queue_claim(s, "t", 60000, &j, 1, &n, &e), 0);
		assert_int_equal(n, 1);
		assert_int_equal(queue_complete(s, &j, NULL, &e), 0);
	}
	assert_int_equal(queue_enqueue(s, "h", from + 4 * HOUR, &one, NULL,
				       NULL, &e), 0);
	assert_int_equal(n_jobs(s), 3);

	const char *dry[] = {"trigger", "--config", cfgpath, "h", "--from",
			     "2026-11-30T00:00:00Z", "--until",
			     "2026-11-30T08:00:00Z", "--dry-run", NULL};
	assert_int_equal(run(dry), 0);
	assert_int_equal(count_lines(out, "would be enqueued\n"), 5);
	assert_int_equal(count_lines(out, "left alone\n"), 3);
	assert_non_null(strstr(out, "8 slots in"));
	assert_non_null(strstr(out, "nothing written"));
	assert_int_equal(n_jobs(s), 3);

	const char *real[] = {"trigger", "--config", cfgpath, "h", "--from",
			      "2026-11-30T00:00:00Z", "--until",
			      "2026-11-30T08:00:00Z", NULL};
	assert_int_equal(run(real), 0);
	assert_int_equal(count_lines(out, "new, due now\n"), 5);
	assert_non_null(strstr(out, "slot 2026-11-30T01:00:00Z: job"));
	assert_non_null(strstr(out, "done, left alone"));
	assert_non_null(strstr(out, "5 enqueued, 3 left alone"));
	assert_int_equal(n_jobs(s), 8);
	int want_new[] = {0, 2, 5, 6, 7};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(store_job_find(s, "h", from + want_new[i] * HOUR,
						&j, NULL), 0);
		assert_true(j.manual);
		assert_int_equal(j.state, JOB_READY);
	}
	/* The done slots stay done, with their one attempt. */
	assert_int_equal(store_job_find(s, "h", from + HOUR, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DONE);
	assert_int_equal(j.attempts, 1);
	/* [from, until): 08:00 is not in it. */
	assert_int_equal(store_job_find(s, "h", from + 8 * HOUR, &j, NULL),
			 SC_ENOENT);

	/* Again: nothing new. */
	assert_int_equal(run(real), 0);
	assert_int_equal(count_lines(out, "new, due now\n"), 0);
	assert_non_null(strstr(out, "0 enqueued, 8 left alone"));
	assert_int_equal(n_jobs(s), 8);

	/* 1,001 slots: refused with the count, nothing written. */
	const char *big[] = {"trigger", "--config", cfgpath, "h", "--from",
			     "2026-10-01T00:00:00Z", "--until",
			     "2026-11-11T17:00:00Z", NULL};
	assert_int_equal(run(big), 2);
	assert_non_null(strstr(err, "1001 slots"));
	assert_non_null(strstr(err, "at most 1000"));
	assert_int_equal(n_jobs(s), 8);
	/* 1,000 exactly is allowed (dry run, to keep it quick). */
	const char *max[] = {"trigger", "--config", cfgpath, "h", "--from",
			     "2026-10-01T00:00:00Z", "--until",
			     "2026-11-11T16:00:00Z", "--dry-run", NULL};
	assert_int_equal(run(max), 0);
	assert_non_null(strstr(out, "1000 slots in"));
	assert_int_equal(n_jobs(s), 8);
	/* Usage errors. */
	const char *half[] = {"trigger", "--config", cfgpath, "h", "--from",
			      "2026-10-01T00:00:00Z", NULL};
	assert_int_equal(run(half), 2);
	const char *back[] = {"trigger", "--config", cfgpath, "h", "--from",
			      "2026-10-02T00:00:00Z", "--until",
			      "2026-10-01T00:00:00Z", NULL};
	assert_int_equal(run(back), 2);
	store_close(s);
	sc_clock_free(clk);
}

/* ---- jitter and deadline in explain, next and simulate ---------------- */

static void jitter_and_deadline_in_explain_next_simulate(void **state)
{
	struct config *cfg = NULL;
	struct sc_err e = {0};
	char t[CLOCK_ISO_MAX], want[CLOCK_ISO_MAX + 8];

	if (!tb_is_sqlite(state))
		skip(); /* no store involved: once is enough */
	assert_int_equal(config_load(cfgpath, &cfg, &e), 0);
	const struct schedule_spec *w = config_schedule(cfg, "w");
	int64_t slot = iso("2026-12-04T17:00:00Z");
	int64_t start = scheduler_start_ms(w, slot);
	assert_true(start >= slot && start < slot + 10 * MIN);

	/* explain --json: the same start instants, the clipped timeline. */
	const char *ex[] = {"explain", "--config", cfgpath, "--json", "--from",
			    "2026-12-01T00:00:00Z", "w", NULL};
	assert_int_equal(run(ex), 0);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	assert_non_null(j);
	json_t *starts = json_object_get(j, "starts");
	assert_int_equal(json_array_size(starts), 5);
	for (size_t i = 0; i < 5; i++) {
		int64_t si = slot + (int64_t)i * 7 * 24 * HOUR, ms;
		assert_int_equal(clock_parse_iso(json_string_value(
			json_array_get(starts, i)), &ms, NULL), 0);
		assert_int_equal(ms, scheduler_start_ms(w, si));
	}
	json_t *tl = json_object_get(j, "timeline");
	json_t *att = json_object_get(tl, "attempts");
	assert_int_equal(json_array_size(att), 2);
	assert_int_equal(json_integer_value(json_object_get(
		json_array_get(att, 0), "at_ms")), start);
	assert_int_equal(json_integer_value(json_object_get(
		json_array_get(att, 1), "at_ms")), start + 30 * MIN);
	assert_int_equal(json_integer_value(json_object_get(tl,
							    "attempts_cut")), 2);
	json_decref(j);
	/* Text: the deadline line. */
	const char *ext[] = {"explain", "--config", cfgpath, "--from",
			     "2026-12-01T00:00:00Z", "w", NULL};
	assert_int_equal(run(ext), 0);
	assert_non_null(strstr(out, "deadline    2026-12-04T18:00:00+00:00"));
	assert_null(strstr(out, "attempt 3"));

	/* next --config: the real start, then the slot. */
	const char *nx[] = {"next", "--config", cfgpath, "--from",
			    "2026-12-01T00:00:00Z", "--count", "3", "w", NULL};
	assert_int_equal(run(nx), 0);
	for (int i = 0; i < 3; i++) {
		int64_t si = slot + (int64_t)i * 7 * 24 * HOUR;
		clock_format_utc(scheduler_start_ms(w, si), t);
		/* "...Z" printed as "+00:00" in the zone's offset. */
		snprintf(want, sizeof(want), "%.19s+00:00", t);
		assert_non_null(strstr(out, want));
	}

	/* simulate: attempts start at slot + offset; the deadline loses the
	 * slot after attempt 2, cause deadline, at attempt 2's instant. */
	clock_format_utc(start, t);
	const char *simt[] = {"simulate", "--config", cfgpath, "--from",
			      "2026-12-04T16:00:00Z", "--until",
			      "2026-12-05T00:00:00Z", NULL};
	assert_int_equal(run(simt), 0);
	char line[160];
	snprintf(want, sizeof(want), "%.19s", t);
	snprintf(line, sizeof(line), "%s+00:00  w  attempt 1 started", want);
	assert_non_null(strstr(out, line));
	clock_format_utc(start + 30 * MIN, t);
	snprintf(line, sizeof(line), "%.19s+00:00  w  attempt 2 failed: "
		 "deadline 2026-12-04T18:00:00Z", t);
	assert_non_null(strstr(out, line));
	snprintf(line, sizeof(line), "%.19s+00:00  w  slot LOST after 2 "
		 "attempts", t);
	assert_non_null(strstr(out, line));
	assert_null(strstr(out, "w  attempt 3"));
	config_free(cfg);
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
		T(backfill_runs_only_the_missing_slots),
		T(jitter_and_deadline_in_explain_next_simulate),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_sqlite;
		tests[i].teardown_func = teardown_sqlite;
	}
	failed = _cmocka_run_group_tests("timing_cli/sqlite", tests, n, NULL,
					 NULL);
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	tests[1].setup_func = NULL; /* explain/next/simulate: once */
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_pg;
		tests[i].teardown_func = teardown_pg;
	}
	return failed + _cmocka_run_group_tests("timing_cli/postgresql", tests,
						1, NULL, NULL);
}
