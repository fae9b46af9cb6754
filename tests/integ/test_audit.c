/*
 * test_audit.c - `surecron audit` and `renamed_from` as an operator meets
 * them: real daemons (`surecron run`, the real binary) on a per-second
 * schedule, stopped and started again around some downtime, on a real
 * store (SQLite, and PostgreSQL for the cases run by tb_run_all), then
 * the real `surecron audit` over the period.
 *
 *   (a) downtime with catchup none: the slots of the downtime are missed
 *       rows, which account for them: no hole, exit 0;
 *   (b) a rename while the daemon is down, without renamed_from: the new
 *       name starts afresh, and every slot of the period before its first
 *       record (the old name's runs and the downtime) is a hole, exit 1;
 *   (c) the same with renamed_from: the new name takes the old state
 *       over (event=renamed), catches the downtime up by its catchup
 *       (latest: one runs, the rest missed, under the new name) and the
 *       audit finds no hole: the old name's rows count;
 *   (d) a store switch (SQLite file A, then a fresh file B): B's first
 *       start is a first start, and the audit on B names the slots A ran
 *       before it; the same audit on A finds none;
 *   (f) issue 43: a reload changes the cron: each stretch is judged with
 *       its own expression (no hole at the new cron's instants before
 *       the reload; a lost slot of the old cron is one);
 *   (g) issue 43: a reload removes a target whose copy failed: the next
 *       attempt closes it on the record (an "abandoned" row), which
 *       `ledger --lost` lists and `audit` counts.
 * Waits are on conditions (rows in the ledger, the clock passing a slot),
 * never fixed sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "clock.h"
#include "daemon_util.h"
#include "store_backend.h"

#define WAIT_MS 30000

static char out[1 << 20], errb[65536];

/* Writes dir/name.yaml: one per-second schedule `sched` on store url. */
static void write_config(const char *dir, const char *file, const char *url,
			 const char *sched, const char *catchup,
			 const char *renamed_from)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n"
		"schedules:\n"
		"  %s:\n"
		"    cron: \"* * * * * *\"\n"
		"    tz: UTC\n"
		"    catchup: %s\n", url, sched, catchup);
	if (renamed_from)
		fprintf(f, "    renamed_from: [%s]\n", renamed_from);
	fprintf(f, "    tasks:\n"
		"      - {name: t, command: [/bin/true]}\n");
	fclose(f);
}

/* The daemon's clock starts at start_ms (the test seam), so a downtime
 * of any length costs no real time: a restart just starts later. */
static pid_t start(const char *dir, const char *file, int64_t start_ms)
{
	static char env[64];
	char path[512], t[CLOCK_ISO_MAX];
	const char *envs[] = {env, NULL};

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(env, sizeof(env), "SURECRON_TEST_CLOCK=%s",
		 clock_format_utc(start_ms, t));
	return tu_start_daemon(dir, path, envs, 0);
}

/* The daemon's first clock reading: a Monday morning, long past, so that
 * every slot of the test is old for the audit's (real) clock. */
#define V0 INT64_C(1772445600000) /* 2026-03-02T10:00:00Z */

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	int st = tu_wait_exit(pid, WAIT_MS);
	if (st == -1) {
		kill(pid, SIGKILL);
		tu_wait_exit(pid, WAIT_MS);
		fail_msg("the daemon did not stop on SIGTERM");
	}
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Rows of sched with outcome whose slot is at least from_ms. */
static size_t rows_since(const char *url, const char *sched,
			 const char *outcome, int64_t from_ms)
{
	struct store *s = tu_store_open(url);
	struct ledger_filter f = {.schedule = sched, .since_ms = from_ms,
				  .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	store_close(s);
	return n;
}

/* Waits until sched has n success rows of slots from from_ms on. */
static void wait_success(const char *url, const char *sched, size_t n,
			 int64_t from_ms)
{
	int64_t end = tu_now_ms() + WAIT_MS;

	while (rows_since(url, sched, LEDGER_SUCCESS, from_ms) < n) {
		if (tu_now_ms() > end)
			fail_msg("%s: fewer than %zu successes after %d s",
				 sched, n, WAIT_MS / 1000);
		tu_sleep_ms(50);
	}
}

/* The schedule's last materialised slot (the scheduler's state). */
static int64_t state_last(const char *url, const char *sched)
{
	struct store *s = tu_store_open(url);
	int64_t last = 0;

	assert_int_equal(store_sched_last_get(s, sched, &last, NULL), 0);
	store_close(s);
	return last;
}

/* PostgreSQL cases skip without a server; they get a folder of their own
 * for the config and the logs (returned; remove with tu_rmrf). */
static const char *case_dir(void **state)
{
	TU_NEED_TEST_SEAMS();
	if (tb_is_sqlite(state))
		return tb_dir(state);
	store_close(tb_open(state, sc_clock_real()));
	return tu_tmpdir();
}

static void case_done(void **state, const char *dir)
{
	if (!tb_is_sqlite(state))
		tu_rmrf(dir);
}

static void span(const char *url, const char *sched, int64_t *first,
		 int64_t *last)
{
	struct store *s = tu_store_open(url);
	tu_success_span(s, sched, first, last);
	store_close(s);
}

/* Runs `surecron audit --config dir/file --since A --until B --json`
 * (until exclusive); returns the exit status, the JSON in *j. */
static int audit(const char *dir, const char *file, int64_t since,
		 int64_t until, json_t **j)
{
	char cfg[512], a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];

	snprintf(cfg, sizeof(cfg), "%s/%s", dir, file);
	const char *args[] = {"audit", "--config", cfg, "--since",
			      clock_format_utc(since, a), "--until",
			      clock_format_utc(until, b), "--json", NULL};
	int rc = tu_run_bin(dir, NULL, NULL, args, out, sizeof(out), errb,
			    sizeof(errb));
	json_error_t je;
	*j = json_loads(out, 0, &je);
	if (!*j)
		fail_msg("audit printed no JSON (rc %d): %s / %s", rc, out,
			 errb);
	return rc;
}

static json_int_t jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* Is there a hole of sched at slot in the report? */
static bool has_hole(json_t *j, const char *sched, int64_t slot)
{
	json_t *h;
	size_t i;

	json_array_foreach(json_object_get(j, "holes"), i, h) {
		if (strcmp(json_string_value(json_object_get(h, "schedule")),
			   sched) == 0 && jint(h, "slot_ms") == slot)
			return true;
	}
	return false;
}

/* Run 1 from V0 until three slots succeeded, then a stop. Returns the
 * instant a restart after gap_ms of downtime starts at; *first gets the
 * first success slot and *last the last materialised slot. */
static int64_t first_run(const char *dir, const char *url, int64_t gap_ms,
			 int64_t *first, int64_t *last)
{
	int64_t l;
	pid_t pid = start(dir, "a.yaml", V0);

	wait_success(url, "job", 3, INT64_MIN);
	stop(pid);
	span(url, "job", first, &l);
	*last = state_last(url, "job");
	return *last + gap_ms;
}

/* (a) downtime with catchup none: no hole. 200 slots of downtime: 100
 * missed rows one by one and one summary row for the rest (the
 * scheduler's bound), which the audit reads as covering its range. */
static void downtime_no_hole(void **state)
{
	const char *dir = case_dir(state), *url = tb_url(state);
	int64_t first, last1, last2, restart;
	json_t *j;

	write_config(dir, "a.yaml", url, "job", "none", NULL);
	restart = first_run(dir, url, 200 * 1000, &first, &last1);
	pid_t pid = start(dir, "a.yaml", restart);
	wait_success(url, "job", 2, restart);
	stop(pid);
	span(url, "job", &first, &last2);
	/* The downtime is on record as missed, by catchup none. */
	assert_true(rows_since(url, "job", LEDGER_MISSED, last1) >= 101);

	int rc = audit(dir, "a.yaml", first, last2 + 1, &j);
	assert_int_equal(jint(j, "unaccounted"), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(jint(j, "slots"), (last2 - first) / 1000 + 1);
	json_decref(j);
	/* The text form says so in its header. */
	char cfg[512], a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	snprintf(cfg, sizeof(cfg), "%s/a.yaml", dir);
	const char *args[] = {"audit", "--config", cfg, "--since",
			      clock_format_utc(first, a), "--until",
			      clock_format_utc(last2 + 1, b), NULL};
	assert_int_equal(tu_run_bin(dir, NULL, NULL, args, out, sizeof(out),
				    errb, sizeof(errb)), 0);
	assert_non_null(strstr(out, "no unaccounted slots"));
	/* Past the daemon's last slot, the scheduler has not reached the
	 * slots (it is down): holes, so monitoring hears of a dead daemon. */
	rc = audit(dir, "a.yaml", first, last2 + 60 * 1000, &j);
	assert_int_equal(rc, 1);
	json_t *h = json_array_get(json_object_get(j, "holes"), 0);
	assert_string_equal(json_string_value(json_object_get(h, "why")),
			    "not_reached");
	json_decref(j);
	case_done(state, dir);
}

/* (b) and (c): a rename while the daemon is down (60 slots), with or
 * without renamed_from; catchup latest. */
static void rename_case(void **state, bool with_renamed_from)
{
	const char *dir = case_dir(state), *url = tb_url(state);
	int64_t first_old, last_old, first_new, last_new, restart;
	json_t *j;
	char log[512];
	static char text[1 << 20];

	write_config(dir, "a.yaml", url, "job", "latest", NULL);
	restart = first_run(dir, url, 60 * 1000, &first_old, &last_old);
	write_config(dir, "b.yaml", url, "renamed", "latest",
		     with_renamed_from ? "job" : NULL);
	pid_t pid = start(dir, "b.yaml", restart);
	wait_success(url, "renamed", 2, restart);
	stop(pid);
	span(url, "renamed", &first_new, &last_new);
	/* The old name's history stays its own: nothing after the stop. */
	assert_int_equal(rows_since(url, "job", NULL, last_old + 1), 0);

	int rc = audit(dir, "b.yaml", first_old, last_new + 1, &j);
	if (!with_renamed_from) {
		/* Started afresh: no missed row, and every slot of the period
		 * before the new name's first record is a hole, the downtime
		 * first of all. */
		assert_int_equal(rows_since(url, "renamed", LEDGER_MISSED,
					    INT64_MIN), 0);
		assert_true(first_new >= restart);
		assert_int_equal(rc, 1);
		for (int64_t t = last_old + 1000; t < first_new; t += 1000)
			assert_true(has_hole(j, "renamed", t));
		for (int64_t t = first_old; t <= last_old; t += 1000)
			assert_true(has_hole(j, "renamed", t));
		assert_int_equal(jint(j, "unaccounted"),
				 (first_new - first_old) / 1000);
		json_t *h = json_array_get(json_object_get(j, "holes"), 0);
		assert_string_equal(json_string_value(json_object_get(h,
						       "why")),
				    "before_first_record");
	} else {
		/* Taken over: the downtime is the new name's, by catchup
		 * latest: the slots within the grace ran (on time), so no
		 * late one did, and the older ones are missed rows. */
		assert_true(rows_since(url, "renamed", LEDGER_MISSED,
				       INT64_MIN) >= 40);
		assert_int_equal(rows_since(url, "renamed", LEDGER_MISSED,
					    last_old + 1),
				 rows_since(url, "renamed", LEDGER_MISSED,
					    INT64_MIN));
		assert_true(first_new < restart);
		assert_int_equal(jint(j, "unaccounted"), 0);
		assert_int_equal(rc, 0);
		snprintf(log, sizeof(log), "%s/daemon.log", dir);
		tu_slurp(log, text, sizeof(text));
		assert_non_null(strstr(text, "event=renamed schedule=renamed "
					     "from=job to=renamed"));
		/* Once: the restart after it is an ordinary one. */
		assert_null(strstr(strstr(text, "event=renamed") + 1,
				   "event=renamed"));
	}
	json_decref(j);
	case_done(state, dir);
}

static void rename_without_renamed_from(void **state)
{
	rename_case(state, false);
}

static void rename_with_renamed_from(void **state)
{
	rename_case(state, true);
}

/* (d) a store switch: file A, then a fresh file B (a first start). */
static void store_switch(void **state)
{
	const char *dir = tb_dir(state);
	char url_a[600], url_b[600];
	int64_t first_a, last_a, la, first_b, last_b, restart;
	json_t *j;

	TU_NEED_TEST_SEAMS();
	snprintf(url_a, sizeof(url_a), "sqlite:%s/a.db", dir);
	snprintf(url_b, sizeof(url_b), "sqlite:%s/b.db", dir);
	write_config(dir, "a.yaml", url_a, "job", "latest", NULL);
	restart = first_run(dir, url_a, 60 * 1000, &first_a, &la);
	span(url_a, "job", &first_a, &last_a);
	write_config(dir, "b.yaml", url_b, "job", "latest", NULL);
	pid_t pid = start(dir, "b.yaml", restart);
	wait_success(url_b, "job", 2, restart);
	stop(pid);
	span(url_b, "job", &first_b, &last_b);

	/* On B: the slots before its first record are holes, those A ran
	 * among them, and so is the downtime of the switch. */
	int rc = audit(dir, "b.yaml", first_a, last_b + 1, &j);
	assert_int_equal(rc, 1);
	for (int64_t t = first_a; t < first_b; t += 1000)
		assert_true(has_hole(j, "job", t));
	assert_int_equal(jint(j, "unaccounted"), (first_b - first_a) / 1000);
	json_decref(j);

	/* On A, over what A ran: all accounted. */
	rc = audit(dir, "a.yaml", first_a, last_a + 1, &j);
	assert_int_equal(jint(j, "unaccounted"), 0);
	assert_int_equal(rc, 0);
	json_decref(j);

	/* A period that starts at B's first record accepts the first start:
	 * it is not named forever. */
	rc = audit(dir, "b.yaml", first_b, last_b + 1, &j);
	assert_int_equal(jint(j, "unaccounted"), 0);
	assert_int_equal(rc, 0);
	json_decref(j);
}

/* SQL on the case's store, as an operator's mistake or a lost write
 * would leave it. */
static void raw_sql(void **state, const char *sql)
{
	struct tb *b = *state;

	if (tb_is_sqlite(state)) {
		sqlite3 *db;
		char *msg = NULL;
		assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
		if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
			fail_msg("sqlite: %s: %s", sql, msg);
		sqlite3_close(db);
		return;
	}
	char q[2048];
	snprintf(q, sizeof(q), "SET search_path TO %s; %s", b->schema, sql);
	if (tb_pg_exec(b->base, q) != 0)
		fail_msg("postgresql: %s", q);
}

/* Writes dir/file: schedule `job` with cron, targets and tasks given. */
static void write_job(const char *dir, const char *file, const char *url,
		      const char *cron, const char *targets)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n"
		"targets:\n"
		"  good: {kind: file, path: ./good.jsonl}\n"
		"  bad: {kind: file, path: ./no-such-dir/bad.jsonl}\n"
		"schedules:\n"
		"  job:\n"
		"    cron: \"%s\"\n"
		"    tz: UTC\n"
		"    catchup: none\n"
		"    targets: [%s]\n"
		"    retry: {attempts: 10, backoff: fixed, delay: 1s}\n"
		"    tasks:\n"
		"      - {name: t, shell: \"echo report\"}\n", url, cron,
		targets);
	fclose(f);
}

/* Rewrites the config the daemon runs and waits for the n-th reload it
 * took (after its start: a SIGHUP before would end it). */
static void reload(const char *dir, pid_t pid, size_t n)
{
	assert_true(tu_wait_log(dir, "event=started", 1, WAIT_MS));
	kill(pid, SIGHUP);
	assert_true(tu_wait_log(dir, "event=reload outcome=ok", n, WAIT_MS));
}

/* (f) A reload moves the cron from the even seconds to every second. */
static void cron_change_judged_per_stretch(void **state)
{
	const char *dir = case_dir(state), *url = tb_url(state);
	int64_t first, last;
	json_t *j;

	write_job(dir, "a.yaml", url, "*/2 * * * * *", "good");
	/* Half a second before an even one: a slow start only costs a
	 * slot, never the test. */
	pid_t pid = start(dir, "a.yaml", V0 + 1500);
	wait_success(url, "job", 2, INT64_MIN);
	write_job(dir, "a.yaml", url, "* * * * * *", "good");
	reload(dir, pid, 1);
	/* The switch, noted at the new config's first tick (the start's
	 * note was the first): the slot after the last one of the old
	 * cron. */
	assert_true(tu_wait_log(dir, "event=cron_history outcome=ok", 2,
				WAIT_MS));
	struct store *s = tu_store_open(url);
	struct store_cron *v = NULL;
	size_t n = 0;
	assert_int_equal(store_cron_history(s, "job", &v, &n, NULL), 0);
	store_close(s);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].cron, "*/2 * * * * *");
	assert_string_equal(v[1].cron, "* * * * * *");
	int64_t at = v[1].from_ms;
	free(v);
	wait_success(url, "job", 2, at);
	stop(pid);
	span(url, "job", &first, &last);
	assert_true(first < at && last >= at);

	/* Every slot accounted, each stretch by its own cron: the odd
	 * seconds before the switch were never owed. */
	int rc = audit(dir, "a.yaml", first, last + 1, &j);
	assert_int_equal(jint(j, "unaccounted"), 0);
	assert_int_equal(rc, 0);
	int64_t owed = 0;
	for (int64_t t = first; t <= last; t += 1000)
		owed += t >= at || t / 1000 % 2 == 0;
	assert_int_equal(jint(j, "slots"), owed);
	json_t *sc = json_array_get(json_object_get(j, "schedules"), 0);
	assert_int_equal(jint(sc, "crons"), 2);
	json_decref(j);

	/* A slot of the old cron that left no record is judged, and named. */
	int64_t gone = first + 2000;
	assert_true(gone < at);
	char sql[512];
	snprintf(sql, sizeof(sql), "DELETE FROM ledger WHERE schedule = 'job' "
		 "AND slot_ms = %lld; DELETE FROM jobs WHERE schedule = 'job' "
		 "AND slot_ms = %lld", (long long)gone, (long long)gone);
	raw_sql(state, sql);
	rc = audit(dir, "a.yaml", first, last + 1, &j);
	assert_int_equal(rc, 1);
	assert_int_equal(jint(j, "unaccounted"), 1);
	assert_true(has_hole(j, "job", gone));
	json_t *h = json_array_get(json_object_get(j, "holes"), 0);
	assert_string_equal(json_string_value(json_object_get(h, "why")),
			    "no_record");
	json_decref(j);
	case_done(state, dir);
}

/* (g) A reload removes the target whose copy failed. */
static void removed_target_copy_abandoned(void **state)
{
	const char *dir = case_dir(state), *url = tb_url(state);
	int64_t slot = V0 + 2000; /* "2 0 10 * * *": 10:00:02 */
	char cfg[512], a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	json_t *j;

	snprintf(cfg, sizeof(cfg), "%s/a.yaml", dir);
	write_job(dir, "a.yaml", url, "2 0 10 * * *", "good, bad");
	pid_t pid = start(dir, "a.yaml", V0);
	/* Attempt 1: good took its copy, bad's failed; a retry waits. */
	int64_t end = tu_now_ms() + WAIT_MS;
	while (rows_since(url, "job", LEDGER_FAILED, slot) < 1) {
		if (tu_now_ms() > end)
			fail_msg("no failed attempt");
		tu_sleep_ms(20);
	}
	write_job(dir, "a.yaml", url, "2 0 10 * * *", "good");
	reload(dir, pid, 1);
	wait_success(url, "job", 1, slot);
	stop(pid);

	/* The copy is closed on the record, once, saying it never came. */
	struct store *s = tu_store_open(url);
	struct outbox_entry e = {0};
	assert_int_equal(store_outbox_get(s, "job", slot, "bad", &e, NULL), 0);
	assert_int_equal(e.state, SEND_ABANDONED);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_get(s, "job", slot, "good", &e, NULL), 0);
	assert_int_equal(e.state, SEND_SENT);
	store_outbox_entry_dispose(&e);
	store_close(s);
	assert_int_equal(rows_since(url, "job", LEDGER_ABANDONED, slot), 1);

	const char *lost[] = {"ledger", "--config", cfg, "--lost", "--since",
			      clock_format_utc(V0, a), "--until",
			      clock_format_utc(V0 + 60000, b), "--json", NULL};
	assert_int_equal(tu_run_bin(dir, NULL, NULL, lost, out, sizeof(out),
				    errb, sizeof(errb)), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_int_equal(jint(j, "abandoned"), 1);
	json_t *r = json_array_get(json_object_get(j, "abandoned_rows"), 0);
	assert_string_equal(json_string_value(json_object_get(r, "outcome")),
			    LEDGER_ABANDONED);
	json_t *d = json_object_get(r, "details");
	if (json_is_string(d))
		d = json_loads(json_string_value(d), 0, NULL);
	else
		json_incref(d);
	assert_string_equal(json_string_value(json_object_get(d, "target")),
			    "bad");
	assert_true(json_is_false(json_object_get(d, "may_have_arrived")));
	json_decref(d);
	json_decref(j);
	const char *lost_text[] = {"ledger", "--config", cfg, "--lost",
				   "--since", a, "--until", b, NULL};
	assert_int_equal(tu_run_bin(dir, NULL, NULL, lost_text, out,
				    sizeof(out), errb, sizeof(errb)), 0);
	assert_non_null(strstr(out, "1 copy abandoned (target removed)"));
	assert_non_null(strstr(out, "target bad is no longer"));

	assert_int_equal(audit(dir, "a.yaml", V0, V0 + 60000, &j), 0);
	assert_int_equal(jint(j, "abandoned"), 1);
	assert_int_equal(jint(j, "unaccounted"), 0);
	json_decref(j);
	case_done(state, dir);
}

/* Usage and config errors are 2; a schedule not in the config too. */
/* (e) retention: prune removes old slots' records, and the audit does
 * not read their absence as holes. A --since older than the ledger's
 * prune horizon is moved up to it (a note says so, the JSON has it as
 * retention_floor), and a period wholly before it is refused (exit 2);
 * the same config without the retention names the pruned slots. */
static void pruned_slots_are_not_holes(void **state)
{
	const char *dir = case_dir(state), *url = tb_url(state);
	int64_t first, last;
	char cfg[512], a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	json_t *j, *h;
	size_t i;

	snprintf(cfg, sizeof(cfg), "%s/a.yaml", dir);
	write_config(dir, "a.yaml", url, "job", "none", NULL);
	(void)first_run(dir, url, 0, &first, &last);
	assert_int_equal(audit(dir, "a.yaml", first, last + 1, &j), 0);
	json_decref(j);

	/* The slots ran on V0, months ago: a day's retention lets them go. */
	FILE *f = fopen(cfg, "ab");
	assert_non_null(f);
	fputs("retention: {ledger: 1d, jobs: 1d}\n", f);
	fclose(f);
	const char *prune[] = {"prune", "--config", cfg, NULL};
	assert_int_equal(tu_run_bin(dir, NULL, NULL, prune, out, sizeof(out),
				    errb, sizeof(errb)),
			 0);
	/* Only the newest success stays (what status shows as last). */
	assert_int_equal(rows_since(url, "job", LEDGER_SUCCESS, INT64_MIN),
			 1);

	const char *old[] = {"audit", "--config", cfg, "--since",
			     clock_format_utc(first, a), "--until",
			     clock_format_utc(last + 1, b), NULL};
	assert_int_equal(tu_run_bin(dir, NULL, NULL, old, out, sizeof(out),
				    errb, sizeof(errb)),
			 2);
	assert_non_null(strstr(errb, "retention.ledger (1d)"));

	/* From V0 to 47 h ago: audited from the horizon (about 2 days ago:
	 * a day's retention and a day's margin) on. The daemon never got
	 * there, so those slots are holes, and only those. */
	int64_t now = tu_now_ms(), floor_ms = 0;
	int rc = audit(dir, "a.yaml", first, now - 47 * 3600 * 1000LL, &j);
	assert_int_equal(rc, 1);
	json_t *fl = json_object_get(j, "retention_floor");
	assert_true(json_is_string(fl));
	assert_int_equal(clock_parse_iso(json_string_value(fl), &floor_ms,
					 NULL),
			 0);
	assert_string_equal(json_string_value(json_object_get(j, "since")),
			    json_string_value(fl));
	assert_true(floor_ms > now - 3 * 24 * 3600 * 1000LL);
	assert_true(floor_ms < now - 47 * 3600 * 1000LL);
	assert_non_null(strstr(errb, "note: audited from"));
	assert_true(jint(j, "unaccounted") > 0);
	json_t *holes = json_object_get(j, "holes");
	for (i = 0; i < json_array_size(holes); i++) {
		h = json_array_get(holes, i);
		assert_true(jint(h, "slot_ms") >= floor_ms);
	}
	json_decref(j);

	/* Without the retention, the pruned slots are holes. */
	write_config(dir, "a.yaml", url, "job", "none", NULL);
	assert_int_equal(audit(dir, "a.yaml", first, last + 1, &j), 1);
	assert_true(has_hole(j, "job", first));
	assert_true(json_is_null(json_object_get(j, "retention_floor")));
	json_decref(j);
	case_done(state, dir);
}

static void usage_errors(void **state)
{
	const char *dir = tb_dir(state);
	char cfg[512];

	write_config(dir, "a.yaml", tb_url(state), "job", "none", NULL);
	snprintf(cfg, sizeof(cfg), "%s/a.yaml", dir);
	const char *bad_since[] = {"audit", "--config", cfg, "--since",
				   "yesterday", NULL};
	const char *reversed[] = {"audit", "--config", cfg, "--since", "1h",
				  "--until", "2h", NULL};
	const char *unknown[] = {"audit", "--config", cfg, "--schedule",
				 "nope", NULL};
	const char *no_cfg[] = {"audit", "--config", "/nonexistent.yaml",
				NULL};
	const char *const *cases[] = {bad_since, reversed, unknown, no_cfg};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(tu_run_bin(dir, NULL, NULL, cases[i], out,
					    sizeof(out), errb, sizeof(errb)),
				 2);
	/* Never run against this store (made, as a daemon's first start
	 * makes it, and left empty): every slot old enough is a hole, and a
	 * slot within the grace is not. */
	store_close(tb_open(state, sc_clock_real()));
	json_t *j;
	int64_t now = tu_now_ms();
	assert_int_equal(audit(dir, "a.yaml", now - 30000, now, &j), 1);
	assert_true(jint(j, "unaccounted") >= 19);
	assert_true(jint(j, "unaccounted") <= 21);
	json_decref(j);
}

int main(void)
{
	struct CMUnitTest both[] = {
		cmocka_unit_test(downtime_no_hole),
		cmocka_unit_test(pruned_slots_are_not_holes),
		cmocka_unit_test(rename_without_renamed_from),
		cmocka_unit_test(rename_with_renamed_from),
		cmocka_unit_test(cron_change_judged_per_stretch),
	};
	const struct CMUnitTest sqlite_only[] = {
		cmocka_unit_test_setup_teardown(store_switch, tb_setup_sqlite,
						tb_teardown_sqlite),
		cmocka_unit_test_setup_teardown(usage_errors, tb_setup_sqlite,
						tb_teardown_sqlite),
		/* The store's part runs on both in test_store. */
		cmocka_unit_test_setup_teardown(removed_target_copy_abandoned,
						tb_setup_sqlite,
						tb_teardown_sqlite),
	};
	int failed = tb_run_all("test_audit", both,
				sizeof(both) / sizeof(both[0]));

	return failed + cmocka_run_group_tests_name("test_audit/sqlite_only",
						    sqlite_only, NULL, NULL);
}
