/*
 * test_sla_daemon.c - the timing checks end to end (issue 14): a real
 * daemon of $SURECRON_BIN on the test clock (SURECRON_TEST_CLOCK) and a
 * real alert receiver on 127.0.0.1, on SQLite and PostgreSQL; and
 * `surecron status --stale` as an operator runs it.
 *
 *   - a task that runs past sla.max_runtime gets one overrun alert at the
 *     receiver while it runs (it is not stopped), and one recovered
 *     message once it ended;
 *   - `status --stale` exits 0 while every schedule delivered within its
 *     success_within (or has had nothing due), 1 naming the schedule once
 *     one did not: with sla, and with the default (two periods plus the
 *     recovery window) for a schedule without it;
 *   - a daily prune held for as long as the test likes delays no timing
 *     alert (the prune has a thread of its own).
 *
 * Every wait has a deadline only a broken daemon reaches.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>

#include "alert.h"
#include "config.h"
#include "fakes/fake_http.h"
#include "queue.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "pg_fixture.h"
#include "daemon_stores.h"

#define PATIENCE_MS 30000


struct env {
	char dir[256];
	char cfg[512];
	char store_url[600];
	struct fake_http *alert;
};

static void env_init(struct env *e)
{
	char url[256];

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->cfg, sizeof(e->cfg), "%s/surecron.yaml", e->dir);
	if (ds_pg)
		snprintf(e->store_url, sizeof(e->store_url), "%s", pgfx_url());
	else
		snprintf(e->store_url, sizeof(e->store_url), "sqlite:%s/s.db",
			 e->dir);
	e->alert = fake_http_start();
	assert_non_null(e->alert);
	fake_http_set_default(e->alert, "/alert", 200, NULL, "ok");
	setenv("SLA_ONCALL_URL", fake_http_url(e->alert, "/alert", url,
					       sizeof(url)), 1);
}

static void env_dispose(struct env *e)
{
	fake_http_stop(e->alert);
	tu_rmrf(e->dir);
}

static void write_cfg(const struct env *e, const char *schedules)
{
	FILE *f = fopen(e->cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 1, lease: 2s, grace: 1s}\n"
		   "targets:\n"
		   "  oncall: {kind: webhook, url_env: SLA_ONCALL_URL}\n"
		   "  archive: {kind: file, path: ./results.jsonl}\n"
		   "alerts: {targets: [oncall]}\n"
		   "schedules:\n%s", e->store_url, schedules);
	fclose(f);
}

static pid_t start_daemon(const struct env *e, const char *const *envs)
{
	const char *all[8] = {"SURECRON_LOG=debug"};
	size_t n = 1;

	for (size_t i = 0; envs && envs[i] && n < 7; i++)
		all[n++] = envs[i];
	return tu_track(tu_start_daemon(e->dir, e->cfg, all, 0));
}

static void stop_daemon(pid_t pid)
{
	tu_stop_daemon(pid, 10000);
}

/* The requests to /alert whose "reason" is reason. */
static size_t received(const struct env *e, const char *reason)
{
	size_t n = fake_http_count(e->alert, "/alert"), k = 0;

	for (size_t i = 0; i < n; i++) {
		struct fake_request r;
		assert_true(fake_http_request(e->alert, "/alert", (long)i, &r));
		json_t *o = json_loads(r.body, 0, NULL);
		fake_request_dispose(&r);
		assert_non_null(o);
		const char *s = json_string_value(json_object_get(o, "reason"));
		k += s && strcmp(s, reason) == 0;
		json_decref(o);
	}
	return k;
}

static bool wait_received(const struct env *e, const char *reason, size_t n)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	while (received(e, reason) < n)
		if (tu_now_ms() > end)
			return false;
		else
			tu_sleep_ms(20);
	return true;
}

/* Jobs of schedule in state st. */
static int64_t jobs_in(const struct env *e, const char *schedule,
		       enum job_state st)
{
	struct store *s = tu_store_open(e->store_url);
	struct store_counts c;

	assert_int_equal(store_job_counts(s, schedule, &c, NULL), 0);
	store_close(s);
	return st == JOB_ACTIVE ? c.active : st == JOB_DONE ? c.done
							    : c.ready_due;
}

/* `surecron ARGS... --config CFG`; its exit status, stdout into out. */
static int cli(const struct env *e, char *out, size_t n_out, const char *a1,
	       const char *a2, const char *a3)
{
	char err[4096], buf[8192];
	const char *args[] = {a1, "--config", e->cfg, a2, a3, NULL};

	return tu_run_bin(e->dir, e->dir, NULL, args, out ? out : buf,
			  out ? n_out : sizeof(buf), err, sizeof(err));
}

/* ---- overrun ------------------------------------------------------------- */

static void overrun_alerts_once_and_recovers_once(void **state)
{
	struct env e;
	(void)state;
	TU_NEED_TEST_SEAMS();
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e);
	/* 08:00 is three seconds after the start; the task runs 4 s, past
	 * its max_runtime of 1 s, and is not stopped for it. */
	write_cfg(&e, "  nightly:\n"
		      "    cron: \"0 8 * * *\"\n"
		      "    tz: UTC\n"
		      "    targets: [archive]\n"
		      "    sla: {max_runtime: 1s}\n"
		      "    tasks:\n"
		      "      - {name: slow, shell: \"sleep 4; echo done\"}\n");
	const char *envs[] = {"SURECRON_TEST_CLOCK=2026-03-06T07:59:57Z",
			      NULL};
	pid_t pid = start_daemon(&e, envs);

	assert_true(wait_received(&e, "overrun", 1));
	/* The alert came while the attempt still runs. */
	assert_int_equal(jobs_in(&e, "nightly", JOB_ACTIVE), 1);
	assert_int_equal(received(&e, "recovered"), 0);
	assert_true(wait_received(&e, "recovered", 1));
	assert_int_equal(jobs_in(&e, "nightly", JOB_DONE), 1);
	/* A few more passes: nothing more comes. */
	tu_sleep_ms(2500);
	stop_daemon(pid);
	assert_int_equal(received(&e, "overrun"), 1);
	assert_int_equal(received(&e, "recovered"), 1);
	assert_int_equal(tu_ledger_count(e.store_url, "nightly",
					 LEDGER_OVERRUN), 1);
	assert_int_equal(tu_ledger_count(e.store_url, "nightly",
					 LEDGER_SUCCESS), 1);
	struct fake_request r;
	assert_true(fake_http_request(e.alert, "/alert", 0, &r));
	assert_non_null(strstr(r.body, "max_runtime"));
	fake_request_dispose(&r);
	env_dispose(&e);
}

/* ---- status --stale ------------------------------------------------------ */

static const char WEEKLY[] =
	"  weekly:\n"
	"    cron: \"0 3 29 2 *\"\n" /* never fires by itself */
	"    tz: UTC\n"
	"    targets: [archive]\n"
	"    sla: {success_within: %s}\n"
	"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
	"    tasks:\n"
	"      - {name: report, shell: \"echo the report\"}\n";

/* Every second, no sla, one attempt (no recovery window): its default
 * success_within is two seconds. */
static const char IDLE[] =
	"  idle:\n"
	"    cron: \"* * * * * *\"\n"
	"    tz: UTC\n"
	"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
	"    tasks:\n"
	"      - {name: tick, shell: \"true\"}\n";

static void write_weekly(const struct env *e, const char *within,
			 bool idle)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), WEEKLY, within);
	if (idle)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s",
			 IDLE);
	write_cfg(e, buf);
}

/* Polls `status --stale` until it exits want (or the patience ends). */
static int wait_stale_exit(const struct env *e, int want, char *out,
			   size_t n)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;
	int rc;

	while ((rc = cli(e, out, n, "status", "--stale", NULL)) != want &&
	       tu_now_ms() < end)
		tu_sleep_ms(200);
	return rc;
}

static void status_stale_exit_codes(void **state)
{
	struct env e;
	char out[8192];
	(void)state;
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e);
	write_weekly(&e, "1h", false);
	/* No store yet (no daemon ever started on it): the check fails. */
	assert_int_equal(cli(&e, out, sizeof(out), "status", "--stale", NULL),
			 1);
	store_close(tu_store_open(e.store_url));
	/* Nothing due yet: not stale. */
	assert_int_equal(cli(&e, out, sizeof(out), "status", "--stale", NULL),
			 0);
	assert_non_null(strstr(out, "nothing due yet"));

	/* One slot, delivered now: within its hour. */
	assert_int_equal(cli(&e, NULL, 0, "trigger", "weekly", NULL), 0);
	assert_int_equal(cli(&e, NULL, 0, "run", "--once", NULL), 0);
	assert_int_equal(jobs_in(&e, "weekly", JOB_DONE), 1);
	assert_int_equal(cli(&e, out, sizeof(out), "status", "--stale", NULL),
			 0);
	assert_non_null(strstr(out, "no stale schedules"));
	assert_non_null(strstr(out, "last delivered"));

	/* A schedule without sla whose first job never ran: stale once two
	 * of its periods (2 s; no recovery window) have passed. */
	write_weekly(&e, "1h", true);
	struct store *s = tu_store_open(e.store_url);
	struct config *cfg = NULL;
	assert_int_equal(config_load(e.cfg, &cfg, NULL), 0);
	const struct schedule_spec *sp = config_schedule(cfg, "idle");
	assert_non_null(sp);
	assert_int_equal(store_sched_last_set(s, "idle", tu_now_ms(), NULL),
			 0);
	assert_int_equal(queue_trigger(s, "idle", tu_now_ms() / 1000 * 1000,
				       spec_policy(sp), NULL, NULL, NULL), 0);
	config_free(cfg);
	store_close(s);
	assert_int_equal(wait_stale_exit(&e, 1, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "STALE  idle"));
	assert_non_null(strstr(out, "never delivered"));
	assert_non_null(strstr(out, "ok     weekly"));
	assert_int_equal(cli(&e, out, sizeof(out), "status", "--stale",
			     "--json"), 1);
	json_t *o = json_loads(out, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "stale")), 1);
	json_t *arr = json_object_get(o, "schedules");
	assert_int_equal(json_array_size(arr), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *x = json_array_get(arr, i);
		const char *name = json_string_value(json_object_get(x, "name"));
		bool stale = json_is_true(json_object_get(x, "stale"));
		const char *src = json_string_value(json_object_get(x,
								    "source"));
		assert_int_equal(stale, strcmp(name, "idle") == 0);
		assert_string_equal(src, stale ? "default" : "sla");
	}
	json_decref(o);

	/* The weekly's own success_within, shorter than its age: stale too. */
	write_weekly(&e, "1s", true);
	assert_int_equal(wait_stale_exit(&e, 1, out, sizeof(out)), 1);
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (!strstr(out, "STALE  weekly") && tu_now_ms() < end) {
		tu_sleep_ms(200);
		cli(&e, out, sizeof(out), "status", "--stale", NULL);
	}
	assert_non_null(strstr(out, "STALE: 2 schedules"));
	/* Plain status is unchanged by it. */
	assert_int_equal(cli(&e, NULL, 0, "status", NULL, NULL), 0);
	env_dispose(&e);
}

/* ---- a long prune ------------------------------------------------------- */

/*
 * The daily prune (retention) is held at its first batch by the failpoint
 * prune.before_batch:stall while a run goes past its max_runtime: the
 * overrun alert still reaches the receiver, and only then is the prune
 * let go. When the prune ran on the alerter's thread, a prune of minutes
 * held the timing checks and the alerts' retries for as long.
 *
 * On a clock 1,000 times real time: the prune is due 15 minutes after
 * the start (0.9 s real), the slot at 08:00 (1.2 s), its overrun two
 * hours later (8.4 s), while the task sleeps 12 s.
 */
static void a_long_prune_holds_up_no_alert(void **state)
{
	struct env e;
	char stall[320], hit[340], fp_env[400];
	(void)state;
	TU_NEED_TEST_SEAMS();
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e);
	snprintf(stall, sizeof(stall), "%s/prune.stall", e.dir);
	snprintf(hit, sizeof(hit), "%s.hit", stall);
	snprintf(fp_env, sizeof(fp_env), "SURECRON_FAILPOINT_STALL=%s", stall);
	FILE *f = fopen(stall, "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(e.cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 1, lease: 10h, grace: 1s}\n"
		   "retention: {ledger: 1d}\n"
		   "targets:\n"
		   "  oncall: {kind: webhook, url_env: SLA_ONCALL_URL}\n"
		   "  archive: {kind: file, path: ./results.jsonl}\n"
		   "alerts: {targets: [oncall]}\n"
		   "schedules:\n"
		   "  nightly:\n"
		   "    cron: \"0 8 * * *\"\n"
		   "    tz: UTC\n"
		   "    targets: [archive]\n"
		   "    sla: {max_runtime: 2h}\n"
		   "    tasks:\n"
		   "      - {name: slow, shell: \"sleep 12; echo done\"}\n",
		e.store_url);
	fclose(f);
	const char *envs[] = {"SURECRON_TEST_CLOCK=2026-03-06T07:40:00Z",
			      "SURECRON_TEST_CLOCK_RATE=1000",
			      "SURECRON_FAILPOINTS=prune.before_batch:stall@1",
			      fp_env, NULL};
	pid_t pid = start_daemon(&e, envs);

	/* The prune is under way and held, before the overrun is due. */
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (access(hit, F_OK) != 0 && tu_now_ms() < end)
		tu_sleep_ms(20);
	assert_int_equal(access(hit, F_OK), 0);
	assert_int_equal(received(&e, "overrun"), 0);
	/* The timing check goes on beside it. */
	assert_true(wait_received(&e, "overrun", 1));
	assert_int_equal(access(stall, F_OK), 0); /* still held */
	assert_int_equal(tu_ledger_count(e.store_url, "nightly",
					 LEDGER_OVERRUN), 1);
	/* Let go, the prune ends, and the daemon stops as usual. */
	assert_int_equal(unlink(stall), 0);
	assert_true(tu_wait_log(e.dir, "event=prune ", 1, PATIENCE_MS));
	stop_daemon(pid);
	env_dispose(&e);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
#define SQ(t) cmocka_unit_test_setup_teardown(t, ds_sqlite_setup, ds_teardown)
#define PG(t) cmocka_unit_test_setup_teardown(t, ds_pg_setup, ds_teardown)
	const struct CMUnitTest tests[] = {
		SQ(overrun_alerts_once_and_recovers_once),
		SQ(status_stale_exit_codes),
		SQ(a_long_prune_holds_up_no_alert),
	};
	const struct CMUnitTest pg_tests[] = {
		PG(overrun_alerts_once_and_recovers_once),
		PG(status_stale_exit_codes),
		PG(a_long_prune_holds_up_no_alert),
	};
	int rc = cmocka_run_group_tests_name("sla_daemon_sqlite", tests, NULL,
					     NULL);
	rc += cmocka_run_group_tests_name("sla_daemon_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
