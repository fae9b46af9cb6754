/*
 * test_heartbeat.c - the external heartbeats end to end: real daemon
 * processes of $SURECRON_BIN, a real store (SQLite; the core case on
 * PostgreSQL too), and a fake monitor (fake_http on 127.0.0.1) that
 * records every ping in the shape of Healthchecks.io's ping API.
 *
 * What must hold (heartbeat.h):
 *   - a delivered slot: URL/start?rid=R then URL?rid=R; a lost one:
 *     URL/start... then URL/fail?rid=R; a retried attempt sends nothing
 *     more than its start, so a slot that fails twice and then succeeds
 *     is start,start,start,success with one rid, R = heartbeat_rid(slot);
 *   - the daemon's ping comes every `every` and stops when the scheduler
 *     loop is blocked (the daemon.scheduler_stuck test point), when
 *     the process is killed, while the store is down, and while its
 *     PostgreSQL calls are stalled on flows a proxy stranded (issue 42;
 *     they come again once the connections are replaced);
 *   - a monitor that hangs or answers 500 never delays a slot's start
 *     (the task_late_us the daemon logs at event=finish stays within
 *     the same small bound as with a good monitor);
 *   - the URLs never appear in the daemon's log (scheme and host only);
 *   - `run --once` sends its pings before it exits.
 * Waits are on conditions with a generous deadline; the only fixed waits
 * are the windows in which a ping must NOT come.
 */
#include <errno.h>
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

#include "config.h"
#include "fakes/fake_http.h"
#include "fakes/fake_proxy.h"
#include "heartbeat.h"
#include "queue.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "pg_fixture.h"

#define PATIENCE_MS 20000

struct env {
	char dir[256];
	char cfg[512];
	char store_url[600];
	struct fake_http *mon;
	char base[128];     /* http://127.0.0.1:PORT */
	char envs[6][300];  /* "HC_X=URL" for the daemon */
	const char *envp[8];
};

static int reap_all(void **state)
{
	(void)state;
	tu_reap_all();
	return 0;
}

static int pg_teardown(void **state)
{
	reap_all(state);
	return pgfx_teardown(state);
}

static const char *const PATHS[] = {
	"/hc/ok", "/hc/ok/start", "/hc/ok/fail",
	"/hc/bad", "/hc/bad/start", "/hc/bad/fail",
	"/hc/flaky", "/hc/flaky/start", "/hc/flaky/fail",
	"/hc/sec", "/hc/sec/start", "/hc/sec/fail",
	"/hc/daemon", NULL};

static void env_init(struct env *e, const char *store_url)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->cfg, sizeof(e->cfg), "%s/surecron.yaml", e->dir);
	if (store_url)
		snprintf(e->store_url, sizeof(e->store_url), "%s", store_url);
	else
		snprintf(e->store_url, sizeof(e->store_url), "sqlite:%s/s.db",
			 e->dir);
	e->mon = fake_http_start();
	assert_non_null(e->mon);
	for (size_t i = 0; PATHS[i]; i++)
		fake_http_set_default(e->mon, PATHS[i], 200, NULL, "OK");
	fake_http_url(e->mon, "", e->base, sizeof(e->base));
	static const char *const vars[] = {"HC_OK", "HC_BAD", "HC_FLAKY",
					   "HC_SEC", "HC_DAEMON"};
	static const char *const names[] = {"ok", "bad", "flaky", "sec",
					    "daemon"};
	for (size_t i = 0; i < 5; i++) {
		snprintf(e->envs[i], sizeof(e->envs[i]), "%s=%s/hc/%s",
			 vars[i], e->base, names[i]);
		e->envp[i] = e->envs[i];
		putenv(e->envs[i]); /* for config_load here and run --once */
	}
	e->envp[5] = "SURECRON_LOG=debug";
	e->envp[6] = NULL;
}

static void env_dispose(struct env *e)
{
	static const char *const vars[] = {"HC_OK", "HC_BAD", "HC_FLAKY",
					   "HC_SEC", "HC_DAEMON"};
	for (size_t i = 0; i < 5; i++)
		unsetenv(vars[i]);
	fake_http_stop(e->mon);
	tu_rmrf(e->dir);
}

static void write_cfg(const struct env *e, const char *top,
		      const char *schedules)
{
	FILE *f = fopen(e->cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 3, lease: 2s, grace: 1s}\n"
		   "%s"
		   "targets:\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n%s",
		e->store_url, top, schedules);
	fclose(f);
}

/* Starts the daemon with the HC_* variables and extra "K=V" strings. */
static pid_t start_daemon(struct env *e, const char *extra)
{
	const char *all[10];
	size_t n = 0;

	for (size_t i = 0; e->envp[i]; i++)
		all[n++] = e->envp[i];
	if (extra)
		all[n++] = extra;
	all[n] = NULL;
	return tu_track(tu_start_daemon(e->dir, e->cfg, all, 0));
}

static void stop_daemon(pid_t pid)
{
	if (!tu_stop_daemon(pid, 15000))
		fail_msg("the daemon did not stop on SIGTERM");
}

/* Lines of the daemon log holding needle. */
static size_t log_count(const struct env *e, const char *needle)
{
	return tu_log_count(e->dir, needle);
}

static bool wait_log(const struct env *e, const char *needle, size_t n,
		     int64_t ms)
{
	return tu_wait_log(e->dir, needle, n, ms);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/*
 * The median start lateness (us) of schedule's slots after the first
 * skip ones, from the daemon's finish lines (task_late_us: when the
 * task's program was exec'd; event=start comes before the due instant,
 * the run being handed over ahead); -1 when there are none.
 * The median, not the worst: a ping on a run's path would delay every
 * slot (1.5 s of backoff against a 500, 10 s against a hanging
 * monitor), while a loaded machine (TSan, CI) can stall one slot for
 * seconds whatever the monitor does.
 */
static long long median_late_us(const struct env *e, const char *schedule,
				size_t skip, size_t *n_out)
{
	char p[512], line[8192], needle[128];
	long long v[64];
	size_t n = 0, seen = 0;

	snprintf(needle, sizeof(needle), "event=finish schedule=%s ", schedule);
	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *k = strstr(line, needle)
					? strstr(line, " task_late_us=")
					: NULL;
		if (!k || seen++ < skip || n == sizeof(v) / sizeof(v[0]))
			continue;
		v[n++] = strtoll(k + 14, NULL, 10);
	}
	if (f)
		fclose(f);
	if (n_out)
		*n_out = n;
	if (n == 0)
		return -1;
	qsort(v, n, sizeof(v[0]), cmp_ll);
	return v[n / 2];
}

/* The pings of check `name` in arrival order: kinds joined by spaces
 * into kinds ("start start success"), the first rid into rid, and
 * whether every rid was the same. */
static bool pings(const struct env *e, const char *name, char *kinds,
		  size_t n, char *rid, size_t n_rid)
{
	char pre[64];
	bool same = true;
	struct fake_request r;

	kinds[0] = '\0';
	rid[0] = '\0';
	snprintf(pre, sizeof(pre), "/hc/%s", name);
	for (long i = 0; fake_http_request(e->mon, NULL, i, &r); i++) {
		const char *rest = strncmp(r.path, pre, strlen(pre)) == 0
					   ? r.path + strlen(pre)
					   : NULL;
		if (rest && (*rest == '\0' || *rest == '/')) {
			const char *k = *rest == '\0' ? "success" : rest + 1;
			snprintf(kinds + strlen(kinds), n - strlen(kinds),
				 "%s%s", *kinds ? " " : "", k);
			const char *q = strstr(r.query, "rid=");
			const char *got = q ? q + 4 : "";
			if (!rid[0])
				snprintf(rid, n_rid, "%s", got);
			else if (strcmp(rid, got) != 0)
				same = false;
			assert_string_equal(r.method, "GET");
		}
		fake_request_dispose(&r);
	}
	return same;
}

static void trigger(const struct env *e, const char *schedule,
		    int64_t slot_ms)
{
	struct store *s = tu_store_open(e->store_url);
	struct config *cfg = NULL;
	struct sc_err err = {0};
	int64_t id = 0;

	assert_int_equal(config_load(e->cfg, &cfg, &err), 0);
	const struct schedule_spec *sp = config_schedule(cfg, schedule);
	assert_non_null(sp);
	assert_int_equal(queue_trigger(s, schedule, slot_ms, spec_policy(sp), &id,
				       NULL, &err), 0);
	config_free(cfg);
	store_close(s);
}

/* The log never holds a ping URL's path (the check's key). */
static void assert_no_url_in_log(const struct env *e)
{
	char p[512], line[8192];

	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/hc/"))
			fail_msg("a ping URL in the log: %s", line);
	fclose(f);
}

static const char SLOT_SCHEDULES[] =
	"  ok:\n"
	"    cron: \"0 0 1 1 *\"\n"
	"    tz: UTC\n"
	"    heartbeat: {url_env: HC_OK}\n"
	"    targets: [archive]\n"
	"    tasks: [{name: t, shell: \"echo fine\"}]\n"
	"  bad:\n"
	"    cron: \"0 0 1 1 *\"\n"
	"    tz: UTC\n"
	"    heartbeat: {url_env: HC_BAD}\n"
	"    retry: {attempts: 2, backoff: exponential, delay: 200ms}\n"
	"    targets: [archive]\n"
	"    tasks: [{name: t, shell: \"echo broken >&2; exit 1\"}]\n"
	"  flaky:\n"
	"    cron: \"0 0 1 1 *\"\n"
	"    tz: UTC\n"
	"    heartbeat: {url_env: HC_FLAKY}\n"
	"    retry: {attempts: 4, backoff: exponential, delay: 200ms}\n"
	"    targets: [archive]\n"
	"    tasks:\n"
	"      - name: t\n"
	"        shell: \"n=$(cat runs 2>/dev/null || echo 0); n=$((n+1)); "
	"echo $n > runs; if [ $n -le 2 ]; then exit 75; fi; echo done\"\n";

/* ---- per-schedule pings ----------------------------------------------- */

static void slot_pings_body(const char *store_url)
{
	struct env e;
	char kinds[256], rid[64], want[HEARTBEAT_RID_MAX];
	char rid_ok[64], rid_bad[64];
	const int64_t slot = INT64_C(1772784000000); /* 2026-03-06T08:00Z */

	env_init(&e, store_url);
	write_cfg(&e, "", SLOT_SCHEDULES);
	/* The slots exist before the daemon starts: it runs them at once. */
	trigger(&e, "ok", slot);
	trigger(&e, "bad", slot);
	trigger(&e, "flaky", slot);
	pid_t pid = start_daemon(&e, NULL);
	assert_true(fake_http_wait(e.mon, "/hc/ok", 1, PATIENCE_MS));
	assert_true(fake_http_wait(e.mon, "/hc/bad/fail", 1, PATIENCE_MS));
	assert_true(fake_http_wait(e.mon, "/hc/flaky", 1, PATIENCE_MS));
	tu_sleep_ms(300); /* a stray ping would come now */
	stop_daemon(pid);

	/* Delivered: start, then success, one rid: the slot's. */
	assert_true(pings(&e, "ok", kinds, sizeof(kinds), rid, sizeof(rid)));
	assert_string_equal(kinds, "start success");
	assert_int_equal(heartbeat_rid("ok", slot, want, NULL), 0);
	assert_string_equal(rid, want);
	snprintf(rid_ok, sizeof(rid_ok), "%s", rid);
	/* Lost after two attempts: each attempt's start, then fail; the
	 * failed first attempt (retried) sent nothing of its own. */
	assert_true(pings(&e, "bad", kinds, sizeof(kinds), rid, sizeof(rid)));
	assert_string_equal(kinds, "start start fail");
	assert_int_equal(heartbeat_rid("bad", slot, want, NULL), 0);
	assert_string_equal(rid, want);
	snprintf(rid_bad, sizeof(rid_bad), "%s", rid);
	/* Two failures, then success: one rid across the three attempts,
	 * nothing between them. */
	assert_true(pings(&e, "flaky", kinds, sizeof(kinds), rid,
			  sizeof(rid)));
	assert_string_equal(kinds, "start start start success");
	assert_string_not_equal(rid, rid_ok);
	assert_string_not_equal(rid_bad, rid_ok);
	assert_int_equal(tu_ledger_count(e.store_url, "flaky", "success"), 1);
	assert_no_url_in_log(&e);
	env_dispose(&e);
}

static void slot_pings(void **state)
{
	(void)state;
	slot_pings_body(NULL);
}

static void slot_pings_pg(void **state)
{
	(void)state;
	PGFX_NEED_SERVER();
	slot_pings_body(pgfx_url());
}

/* `run --once` sends its pings before the process ends. */
static void once_pings(void **state)
{
	struct env e;
	char cmd[1600], kinds[128], rid[64];
	(void)state;

	env_init(&e, NULL);
	write_cfg(&e, "", SLOT_SCHEDULES);
	trigger(&e, "ok", INT64_C(1772784000000));
	snprintf(cmd, sizeof(cmd), "cd '%s' && SURECRON_LOG=debug '%s' run "
		 "--once --config '%s' 2>>'%s/daemon.log' </dev/null "
		 ">/dev/null", e.dir, tu_bin(), e.cfg, e.dir);
	int st = system(cmd);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* No wait: they arrived before the exit. */
	pings(&e, "ok", kinds, sizeof(kinds), rid, sizeof(rid));
	assert_string_equal(kinds, "start success");
	assert_no_url_in_log(&e);
	env_dispose(&e);
}

/* A reload takes the new heartbeat settings: a schedule that gains a
 * heartbeat pings from its next slot on. */
static void reload_takes_heartbeat(void **state)
{
	struct env e;
	char kinds[128], rid[64];
	(void)state;

	env_init(&e, NULL);
	write_cfg(&e, "",
		  "  ok:\n"
		  "    cron: \"0 0 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [archive]\n"
		  "    tasks: [{name: t, shell: \"echo fine\"}]\n");
	pid_t pid = start_daemon(&e, NULL);
	assert_true(wait_log(&e, "event=started", 1, PATIENCE_MS));
	trigger(&e, "ok", INT64_C(1772784000000));
	assert_true(wait_log(&e, "event=finish schedule=ok", 1, PATIENCE_MS));
	assert_int_equal(fake_http_count(e.mon, NULL), 0);
	write_cfg(&e, "", SLOT_SCHEDULES);
	kill(pid, SIGHUP);
	assert_true(wait_log(&e, "event=reload outcome=ok", 1, PATIENCE_MS));
	trigger(&e, "ok", INT64_C(1772870400000));
	assert_true(fake_http_wait(e.mon, "/hc/ok", 1, PATIENCE_MS));
	stop_daemon(pid);
	pings(&e, "ok", kinds, sizeof(kinds), rid, sizeof(rid));
	assert_string_equal(kinds, "start success");
	env_dispose(&e);
}

/* ---- the daemon's ping ------------------------------------------------- */

static const char DAEMON_TOP[] = "heartbeat: {url_env: HC_DAEMON, every: 1s}\n";
static const char IDLE_SCHEDULE[] =
	"  ok:\n"
	"    cron: \"0 0 1 1 *\"\n"
	"    tz: UTC\n"
	"    targets: [archive]\n"
	"    tasks: [{name: t, shell: \"echo fine\"}]\n";

/* Every `every` while the scheduler runs; none once it is stuck. */
static void daemon_ping_stops_when_stuck(void **state)
{
	struct env e;
	int64_t at[64];
	size_t n_at = 0;
	(void)state;
	TU_NEED_TEST_SEAMS();

	env_init(&e, NULL);
	write_cfg(&e, DAEMON_TOP, IDLE_SCHEDULE);
	/* The loop passes about twice a second (half of `every`): stuck
	 * after some seconds, time for a few pings first. */
	pid_t pid = start_daemon(
		&e, "SURECRON_FAILPOINTS=daemon.scheduler_stuck:err@12");
	int64_t end = tu_now_ms() + PATIENCE_MS;
	size_t seen = 0;
	while (log_count(&e, "event=scheduler_stuck") == 0) {
		assert_true(tu_now_ms() < end);
		size_t c = fake_http_count(e.mon, "/hc/daemon");
		if (c > seen && n_at < 64)
			at[n_at++] = tu_now_ms();
		seen = c;
		tu_sleep_ms(10);
	}
	assert_true(n_at >= 3);
	for (size_t i = 1; i < n_at; i++) {
		int64_t gap = at[i] - at[i - 1];
		/* A period apart, give or take the machine's load. */
		if (gap < 700 || gap > 2500)
			fail_msg("daemon pings %lld ms apart (every: 1s)",
				 (long long)gap);
	}
	size_t n0 = fake_http_count(e.mon, "/hc/daemon");
	tu_sleep_ms(3500); /* three periods: pings would have come */
	size_t n1 = fake_http_count(e.mon, "/hc/daemon");
	/* At most one already due when the loop blocked. */
	assert_true(n1 <= n0 + 1);
	stop_daemon(pid); /* the test point lets a stop through */
	assert_no_url_in_log(&e);
	env_dispose(&e);
}

/* Killed: no more pings (nothing outlives the process). */
static void daemon_ping_stops_when_killed(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, NULL);
	write_cfg(&e, DAEMON_TOP, IDLE_SCHEDULE);
	pid_t pid = start_daemon(&e, NULL);
	assert_true(fake_http_wait(e.mon, "/hc/daemon", 2, PATIENCE_MS));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	size_t n0 = fake_http_count(e.mon, "/hc/daemon");
	tu_sleep_ms(2500);
	assert_int_equal(fake_http_count(e.mon, "/hc/daemon"), n0);
	env_dispose(&e);
}

/* The store does not answer (PostgreSQL stopped): no daemon ping; back:
 * the pings come again. */
static void daemon_ping_stops_when_store_down_pg(void **state)
{
	struct env e;
	(void)state;
	PGFX_NEED_SERVER();
	if (!pgfx_restartable())
		skip(); /* an external server: not ours to stop */

	env_init(&e, pgfx_url());
	/* A per-second schedule: the scheduler asks the store every
	 * second. */
	write_cfg(&e, DAEMON_TOP,
		  "  persec:\n"
		  "    cron: \"* * * * * *\"\n"
		  "    tz: UTC\n"
		  "    catchup: none\n"
		  "    targets: [archive]\n"
		  "    tasks: [{name: t, shell: \"echo tick\"}]\n");
	pid_t pid = start_daemon(&e, NULL);
	assert_true(fake_http_wait(e.mon, "/hc/daemon", 2, PATIENCE_MS));
	assert_int_equal(pgfx_server("stop", NULL, 0), 0);
	assert_true(wait_log(&e, "event=store-outage state=begin", 1,
			     PATIENCE_MS));
	size_t n0 = fake_http_count(e.mon, "/hc/daemon");
	tu_sleep_ms(3500); /* three periods: pings would have come */
	size_t n1 = fake_http_count(e.mon, "/hc/daemon");
	assert_true(n1 <= n0 + 1);
	assert_int_equal(pgfx_server("start", NULL, 0), 0);
	assert_true(fake_http_wait(e.mon, "/hc/daemon", n1 + 2, 30000));
	stop_daemon(pid);
	env_dispose(&e);
}

/* Issue 42: the daemon's flows to PostgreSQL die without a reset (a
 * proxy strands them; new ones pass): no daemon ping while its store
 * calls are stalled; the stall is logged at the client's deadline
 * (statement_timeout 2 s: 3 s), the connections are replaced, and the
 * pings come again. Before, the daemon hung for good, silently. */
static void daemon_ping_stops_while_store_stalled_pg(void **state)
{
	struct env e;
	char url[600], opts[400];
	(void)state;
	PGFX_NEED_SERVER();

	const char *colon = strrchr(pgfx_url(), ':');
	struct fake_proxy *px = fake_proxy_start(atoi(colon + 1));
	assert_non_null(px);
	snprintf(url, sizeof(url), "%.*s:%d%s", (int)(colon - pgfx_url()),
		 pgfx_url(), fake_proxy_port(px), strchr(colon, '/'));
	snprintf(opts, sizeof(opts), "PGOPTIONS=%s -c statement_timeout=2s",
		 getenv("PGOPTIONS"));
	env_init(&e, url);
	write_cfg(&e, DAEMON_TOP,
		  "  persec:\n"
		  "    cron: \"* * * * * *\"\n"
		  "    tz: UTC\n"
		  "    catchup: none\n"
		  "    targets: [archive]\n"
		  "    tasks: [{name: t, shell: \"echo tick\"}]\n");
	pid_t pid = start_daemon(&e, opts);
	assert_true(fake_http_wait(e.mon, "/hc/daemon", 2, PATIENCE_MS));
	fake_proxy_set(px, PROXY_STRAND, 0);
	size_t n0 = fake_http_count(e.mon, "/hc/daemon");
	assert_true(wait_log(&e, "event=store_stalled", 1, PATIENCE_MS));
	size_t n1 = fake_http_count(e.mon, "/hc/daemon");
	assert_true(n1 <= n0 + 1);
	assert_true(fake_http_wait(e.mon, "/hc/daemon", n1 + 2, 30000));
	stop_daemon(pid);
	fake_proxy_stop(px);
	env_dispose(&e);
}

/* ---- a bad monitor never delays a slot -------------------------------- */

static const char SEC_SCHEDULE[] =
	"  sec:\n"
	"    cron: \"* * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: none\n"
	"    heartbeat: {url_env: HC_SEC}\n"
	"    targets: [archive]\n"
	"    tasks: [{name: t, shell: \"echo tick\"}]\n";

enum monitor_mode { MON_GOOD, MON_HANGS, MON_500 };

/* Runs the per-second schedule for 5 slots against the monitor in mode;
 * returns the median start lateness (us) after the first slot. */
static long long lateness_with(enum monitor_mode mode)
{
	struct env e;
	size_t n = 0;

	env_init(&e, NULL);
	write_cfg(&e, DAEMON_TOP, SEC_SCHEDULE);
	if (mode == MON_HANGS) {
		fake_http_hold(e.mon, "/hc/sec/start", true);
		fake_http_hold(e.mon, "/hc/sec", true);
		fake_http_hold(e.mon, "/hc/daemon", true);
	} else if (mode == MON_500) {
		fake_http_set_default(e.mon, "/hc/sec/start", 500, NULL, "no");
		fake_http_set_default(e.mon, "/hc/sec", 500, NULL, "no");
		fake_http_set_default(e.mon, "/hc/daemon", 500, NULL, "no");
	}
	pid_t pid = start_daemon(&e, NULL);
	assert_true(wait_log(&e, "event=finish schedule=sec", 6, PATIENCE_MS));
	long long late = median_late_us(&e, "sec", 1, &n);
	assert_true(n >= 5);
	if (mode == MON_HANGS) {
		/* The pings are stuck at the monitor (the first one held
		 * holds up the pinger), the slots ran. */
		assert_true(fake_http_count(e.mon, "/hc/sec/start") +
				    fake_http_count(e.mon, "/hc/daemon") >=
			    1);
		assert_int_equal(fake_http_count(e.mon, "/hc/sec"), 0);
		fake_http_hold(e.mon, "/hc/sec/start", false);
		fake_http_hold(e.mon, "/hc/sec", false);
		fake_http_hold(e.mon, "/hc/daemon", false);
	}
	if (mode == MON_500) {
		/* A failing ping is a warning with scheme and host only. */
		char want[200];
		snprintf(want, sizeof(want), "url=%s/...", e.base);
		assert_true(wait_log(&e, "event=ping_failed", 1, PATIENCE_MS));
		assert_true(log_count(&e, want) >= 1);
	}
	stop_daemon(pid);
	assert_int_equal(tu_ledger_count(e.store_url, "sec", "lost"), 0);
	assert_no_url_in_log(&e);
	env_dispose(&e);
	return late;
}

static void bad_monitor_never_delays_slots(void **state)
{
	(void)state;
	long long good = lateness_with(MON_GOOD);
	long long hangs = lateness_with(MON_HANGS);
	long long err500 = lateness_with(MON_500);

	print_message("start lateness (median us): good %lld, hanging %lld, "
		      "500 %lld\n", good, hangs, err500);
	/* The same small bound for all three: a ping is never on a run's
	 * path. The bound is generous for a loaded machine, and far below
	 * the monitor's 10 s timeout that a blocking ping would add. */
	const long long bound_us = 400000;
	assert_true(good >= 0 && good < bound_us);
	assert_true(hangs >= 0 && hangs < bound_us);
	assert_true(err500 >= 0 && err500 < bound_us);
}

/* ---- surecron check ------------------------------------------------- */

/* An unset heartbeat variable, or one that is not an http(s) URL the
 * secret rule accepts, is a finding of `check`, located, value unshown. */
static void check_reports_heartbeat_env(void **state)
{
	struct env e;
	char out[4096], err[4096];
	(void)state;

	env_init(&e, NULL);
	write_cfg(&e, DAEMON_TOP, SLOT_SCHEDULES);
	const char *const args[] = {"check", e.cfg, NULL};
	const char *const unset[] = {"HC_DAEMON", "HC_BAD", NULL};
	int rc = tu_run_bin(e.dir, e.dir, unset, args, out, sizeof(out), err,
			    sizeof(err));
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "heartbeat.url_env: environment "
				    "variable HC_DAEMON is not set"));
	assert_non_null(strstr(err, "schedules.bad.heartbeat.url_env: "
				    "environment variable HC_BAD is not set"));
	assert_null(strstr(err, "HC_OK"));
	const char *const bad[] = {"HC_DAEMON=ftp://hc.example/secret-key",
				   "HC_BAD=http://hc.example/secret-key", NULL};
	rc = tu_run_bin(e.dir, e.dir, bad, args, out, sizeof(out), err,
			sizeof(err));
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "heartbeat.url_env: environment "
				    "variable HC_DAEMON:"));
	assert_non_null(strstr(err, "schedules.bad.heartbeat.url_env: "
				    "environment variable HC_BAD:"));
	assert_null(strstr(err, "secret-key"));
	/* All set to good URLs (loopback http): clean. */
	rc = tu_run_bin(e.dir, e.dir, NULL, args, out, sizeof(out), err,
			sizeof(err));
	assert_int_equal(rc, 0);
	env_dispose(&e);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(slot_pings, reap_all),
		cmocka_unit_test_teardown(once_pings, reap_all),
		cmocka_unit_test_teardown(reload_takes_heartbeat, reap_all),
		cmocka_unit_test_teardown(daemon_ping_stops_when_stuck,
					  reap_all),
		cmocka_unit_test_teardown(daemon_ping_stops_when_killed,
					  reap_all),
		cmocka_unit_test_teardown(bad_monitor_never_delays_slots,
					  reap_all),
		cmocka_unit_test(check_reports_heartbeat_env),
	};
	const struct CMUnitTest pg_tests[] = {
		cmocka_unit_test_setup_teardown(slot_pings_pg, pgfx_setup,
						pg_teardown),
		cmocka_unit_test_setup_teardown(
			daemon_ping_stops_when_store_down_pg, pgfx_setup,
			pg_teardown),
		cmocka_unit_test_setup_teardown(
			daemon_ping_stops_while_store_stalled_pg, pgfx_setup,
			pg_teardown),
	};
	int rc = cmocka_run_group_tests_name("heartbeat", tests, NULL, NULL);
	rc += cmocka_run_group_tests_name("heartbeat_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
