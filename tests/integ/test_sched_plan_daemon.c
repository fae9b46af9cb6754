/*
 * test_sched_plan_daemon.c - the daemon on the scheduler's plan
 * (scheduler.h): SIGHUP rebuilds the plan (a schedule kept fires on, every
 * slot once and none missed; an added one starts from the reload; a
 * removed one stops), and 1,000 per-minute schedules due on the same
 * instant all become jobs and all run (worker.concurrency 16, /bin/true),
 * each slot once. Real `surecron run` processes on SQLite; functional,
 * not timed (bench/bench_sched_plan.c has the figures).
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

struct env {
	char dir[256];
	char cfg[320];
	char url[320];
};

static void env_init(struct env *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->cfg, sizeof(e->cfg), "%s/c.yaml", e->dir);
	snprintf(e->url, sizeof(e->url), "sqlite:%s/s.db", e->dir);
}

static void write_cfg(const struct env *e, int concurrency,
		      const char *schedules)
{
	char tmp[340];
	snprintf(tmp, sizeof(tmp), "%s.tmp", e->cfg);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nworker: {concurrency: %d}\nschedules:\n%s",
		e->url, concurrency, schedules);
	fclose(f);
	assert_int_equal(rename(tmp, e->cfg), 0);
}

static bool wait_log(const struct env *e, const char *needle, size_t n,
		     int64_t ms)
{
	return tu_wait_log(e->dir, needle, n, ms);
}

static bool wait_successes(const struct env *e, const char *schedule,
			   size_t n, int64_t ms)
{
	int64_t end = tu_now_ms() + ms;

	while (tu_ledger_count(e->url, schedule, LEDGER_SUCCESS) < n) {
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(50);
	}
	return true;
}

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	int st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

#define EVERY_2S(name)                                                     \
	"  " name ": {cron: \"*/2 * * * * *\", tz: UTC, catchup: none, "    \
	"tasks: [{name: a, command: [/bin/true]}]}\n"

/* SIGHUP: the new config's plan is built from the store. */
static void reload_rebuilds_the_plan(void **state)
{
	struct env e = {0};
	(void)state;

	env_init(&e);
	write_cfg(&e, 2, EVERY_2S("keep") EVERY_2S("gone"));
	pid_t pid = tu_start_daemon(e.dir, e.cfg, NULL, 0);
	assert_true(wait_log(&e, "event=started", 1, PATIENCE_MS));
	assert_true(wait_successes(&e, "keep", 2, PATIENCE_MS));
	assert_true(wait_successes(&e, "gone", 2, PATIENCE_MS));
	write_cfg(&e, 2, EVERY_2S("keep") EVERY_2S("added"));
	kill(pid, SIGHUP);
	assert_true(wait_log(&e, "event=reload outcome=ok", 1, PATIENCE_MS));
	/* The new plan's build: `added` is seen for the first time. */
	assert_true(wait_log(&e, "schedule=added event=first_start", 1,
			     PATIENCE_MS));
	struct store *s = tu_store_open(e.url);
	struct store_counts c;
	assert_int_equal(store_job_counts(s, "gone", &c, NULL), 0);
	int64_t gone = c.ready_due + c.delayed + c.active + c.done + c.dead;
	assert_true(wait_successes(&e, "added", 3, PATIENCE_MS));
	size_t n_keep = tu_ledger_count(e.url, "keep", LEDGER_SUCCESS);
	assert_true(wait_successes(&e, "keep", n_keep + 2, PATIENCE_MS));
	stop(pid);
	/* `gone` stopped at the reload (a job enqueued just before it may
	 * still have run, none after). */
	assert_int_equal(store_job_counts(s, "gone", &c, NULL), 0);
	assert_int_equal(c.ready_due + c.delayed + c.active + c.done + c.dead,
			 gone);
	/* `keep` fired through the reload: every 2-second slot once, none
	 * missed, none twice. */
	int64_t first, last;
	size_t n = tu_success_span(s, "keep", &first, &last);
	assert_int_equal((int64_t)n, (last - first) / 2000 + 1);
	assert_int_equal(tu_ledger_count(e.url, NULL, LEDGER_MISSED), 0);
	store_close(s);
	tu_rmrf(e.dir);
}

/* 1,000 per-minute schedules: the minute makes all of them due at once;
 * every slot becomes one job and runs. */
static void burst_of_1000_due_all_run(void **state)
{
	struct env e = {0};
	(void)state;
	TU_NEED_TEST_SEAMS(); /* SURECRON_TEST_CLOCK */
	size_t cap = 1000 * 120, len = 0;
	char *t = malloc(cap);
	assert_non_null(t);

	env_init(&e);
	for (int i = 0; i < 1000; i++)
		len += (size_t)snprintf(t + len, cap - len,
					"  m%04d: {cron: \"* * * * *\", tz: UTC, "
					"catchup: none, tasks: [{name: a, "
					"command: [/bin/true]}]}\n", i);
	write_cfg(&e, 16, t);
	free(t);
	/* Five seconds before a minute, on the daemon's clock. */
	int64_t minute = (tu_now_ms() / 60000 + 2) * 60000;
	char env_clock[80], iso[CLOCK_ISO_MAX];
	snprintf(env_clock, sizeof(env_clock), "SURECRON_TEST_CLOCK=%s",
		 clock_format_utc(minute - 5000, iso));
	const char *envs[] = {env_clock, NULL};
	pid_t pid = tu_start_daemon(e.dir, e.cfg, envs, 0);
	assert_true(wait_log(&e, "event=first_start schedules=1000", 1,
			     PATIENCE_MS));
	assert_true(wait_log(&e, "event=start ", 1000, 2 * PATIENCE_MS));
	assert_true(wait_successes(&e, NULL, 1000, PATIENCE_MS));
	stop(pid);
	struct store *s = tu_store_open(e.url);
	struct store_counts c;
	assert_int_equal(store_job_counts(s, NULL, &c, NULL), 0);
	/* Each schedule's minute once (a second minute may have come on a
	 * slow machine: then all of its slots are jobs too). */
	int64_t jobs = c.ready_due + c.delayed + c.active + c.done + c.dead;
	assert_true(jobs == 1000 || jobs == 2000);
	for (int i = 0; i < 1000; i += 97) {
		char name[16];
		struct store_job j;
		snprintf(name, sizeof(name), "m%04d", i);
		assert_int_equal(store_job_find(s, name, minute, &j, NULL), 0);
	}
	assert_int_equal(tu_ledger_count(e.url, NULL, LEDGER_MISSED), 0);
	store_close(s);
	tu_rmrf(e.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reload_rebuilds_the_plan),
		cmocka_unit_test(burst_of_1000_due_all_run),
	};
	return cmocka_run_group_tests_name("sched_plan_daemon", tests, NULL,
					   NULL);
}
