/*
 * test_burst_daemon.c - 200 slots due on the same instant at
 * worker.concurrency 8, each run once and delivered once: the durable
 * writes of eight workers finishing together go through SQLite's group
 * commit (store_sqlite.c), and none is lost or doubled on the way. A real
 * `surecron run` on SQLite; functional, not timed (bench/scale.sh's
 * daemon case has the figure).
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

#include "clock.h"
#include "daemon_util.h"
#include "store.h"
#include "testutil.h"

#define PATIENCE_MS 60000
#define N_SCHED 200

static size_t count_lines(const char *path)
{
	char line[4096];
	size_t n = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		n += strchr(line, '\n') != NULL;
	if (f)
		fclose(f);
	return n;
}

static bool wait_successes(const char *url, size_t n, int64_t ms)
{
	int64_t end = tu_now_ms() + ms;

	while (tu_ledger_count(url, NULL, LEDGER_SUCCESS) < n) {
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(50);
	}
	return true;
}

static void burst_of_200_runs_and_delivers_each_once(void **state)
{
	char dir[256], cfg[320], url[320], out[320], tmp[340];
	size_t cap = N_SCHED * 160, len = 0;
	char *t = malloc(cap);
	(void)state;
	TU_NEED_TEST_SEAMS(); /* SURECRON_TEST_CLOCK */

	assert_non_null(t);
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	snprintf(url, sizeof(url), "sqlite:%s/s.db", dir);
	snprintf(out, sizeof(out), "%s/out.jsonl", dir);
	for (int i = 0; i < N_SCHED; i++)
		len += (size_t)snprintf(t + len, cap - len,
					"  b%03d: {cron: \"* * * * *\", tz: UTC, "
					"catchup: none, targets: [out], tasks: "
					"[{name: a, command: [/bin/echo, hi]}]}\n",
					i);
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nworker: {concurrency: 8}\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n%s", url, t);
	fclose(f);
	free(t);
	assert_int_equal(rename(tmp, cfg), 0);

	/* Five seconds before a minute, on the daemon's clock. */
	int64_t minute = (tu_now_ms() / 60000 + 2) * 60000;
	char env_clock[80], iso[CLOCK_ISO_MAX];
	snprintf(env_clock, sizeof(env_clock), "SURECRON_TEST_CLOCK=%s",
		 clock_format_utc(minute - 5000, iso));
	const char *envs[] = {env_clock, NULL};
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(wait_successes(url, N_SCHED, 2 * PATIENCE_MS));
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));

	struct store *s = tu_store_open(url);
	size_t ok = tu_ledger_count(url, NULL, LEDGER_SUCCESS);
	/* Every schedule's minute: one job, run, marked; a second minute
	 * may have begun on a slow machine, and is then whole or partial,
	 * never doubled. */
	for (int i = 0; i < N_SCHED; i++) {
		char name[16];
		struct store_job j;
		bool marked = false;

		snprintf(name, sizeof(name), "b%03d", i);
		assert_int_equal(store_job_find(s, name, minute, &j, NULL), 0);
		assert_int_equal(j.state, JOB_DONE);
		assert_int_equal(j.attempts, 1);
		assert_int_equal(store_slot_is_marked(s, name, minute, &marked,
						      NULL), 0);
		assert_true(marked);
	}
	assert_true(ok >= N_SCHED && ok <= 2 * N_SCHED);
	/* One delivery per successful slot: no copy lost, none doubled. */
	assert_int_equal(count_lines(out), ok);
	assert_int_equal(tu_ledger_count(url, NULL, LEDGER_DUPLICATE), 0);
	assert_int_equal(tu_ledger_count(url, NULL, LEDGER_LOST), 0);
	store_close(s);
	tu_rmrf(dir);
}

static int teardown(void **state)
{
	(void)state;
	tu_reap_all();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			burst_of_200_runs_and_delivers_each_once, teardown),
	};
	return cmocka_run_group_tests_name("burst_daemon", tests, NULL, NULL);
}
