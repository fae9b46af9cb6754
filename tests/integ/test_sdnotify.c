/*
 * test_sdnotify.c - `surecron run` under a stand-in for systemd: the test
 * binds a unix datagram socket, starts a real daemon with NOTIFY_SOCKET
 * pointing at it and WATCHDOG_USEC=400000 (WATCHDOG_PID unset), and reads
 * what arrives, with the real time each message came.
 *
 * What must hold (sdnotify.h, daemon.c):
 *   - READY=1 once the daemon runs (before any WATCHDOG=1);
 *   - WATCHDOG=1 keeps a rhythm: several within 2 s, never two more than
 *     the interval apart;
 *   - STOPPING=1 on SIGTERM;
 *   - a stuck scheduler loop (the daemon.scheduler_stuck test point)
 *     sends no more WATCHDOG=1, so systemd would restart it;
 *   - WATCHDOG_PID naming another process: no WATCHDOG=1 at all;
 *   - the signal matrix (issue 42): a daemon with every optional part on
 *     (http, heartbeat to a local monitor, status_socket, sd_notify with
 *     the watchdog, sla, alerts, PostgreSQL), a slot running, takes
 *     SIGTERM and SIGINT as a graceful stop (STOPPING=1, the slot
 *     delivered within the grace, exit 0) and SIGHUP and SIGUSR1 as a
 *     reload (it runs on, then stops on SIGTERM the same way); no slot is
 *     left to lease recovery.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "fakes/fake_http.h"
#include "queue.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "pg_fixture.h"

#define PATIENCE_MS 20000
#define WD_US 400000

struct env {
	char dir[256];
	char cfg[512];
	char sock[300];
	char notify_env[320];
	int fd;
};

static int reap_all(void **state)
{
	(void)state;
	tu_reap_all();
	return 0;
}

static void env_init(struct env *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->cfg, sizeof(e->cfg), "%s/surecron.yaml", e->dir);
	snprintf(e->sock, sizeof(e->sock), "%s/notify.sock", e->dir);
	assert_true(strlen(e->sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, e->sock, strlen(e->sock) + 1);
	e->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(e->fd >= 0);
	assert_int_equal(bind(e->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(e->notify_env, sizeof(e->notify_env), "NOTIFY_SOCKET=%s",
		 e->sock);
	FILE *f = fopen(e->cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: sqlite:%s/s.db\n"
		   "worker: {concurrency: 1, lease: 2s, grace: 1s}\n"
		   "targets:\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n"
		   "  yearly:\n"
		   "    cron: \"0 0 1 1 *\"\n"
		   "    tz: UTC\n"
		   "    targets: [archive]\n"
		   "    tasks: [{name: t, shell: \"echo fine\"}]\n",
		e->dir);
	fclose(f);
}

static void env_dispose(struct env *e)
{
	close(e->fd);
	tu_rmrf(e->dir);
}

static pid_t start_daemon(struct env *e, const char *extra1,
			  const char *extra2)
{
	char wd[64];
	snprintf(wd, sizeof(wd), "WATCHDOG_USEC=%d", WD_US);
	const char *envs[] = {"SURECRON_LOG=debug", e->notify_env, wd,
			      extra1, extra2, NULL};
	return tu_track(tu_start_daemon(e->dir, e->cfg, envs, 0));
}

/* The next datagram within ms (real time) into buf; false on timeout. */
static bool recv_msg(struct env *e, char *buf, size_t n, int64_t ms)
{
	struct pollfd p = {.fd = e->fd, .events = POLLIN};
	int64_t end = tu_now_ms() + ms;

	for (;;) {
		int64_t left = end - tu_now_ms();
		if (left <= 0)
			return false;
		int rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return false;
		ssize_t got = recv(e->fd, buf, n - 1, 0);
		if (got < 0)
			return false;
		buf[got] = '\0';
		return true;
	}
}

/* Waits for a message equal to want, within ms; counts the WATCHDOG=1
 * seen on the way into *n_wd (may be NULL). */
static bool wait_msg(struct env *e, const char *want, int64_t ms,
		     size_t *n_wd)
{
	char buf[256];
	int64_t end = tu_now_ms() + ms;

	while (tu_now_ms() < end) {
		if (!recv_msg(e, buf, sizeof(buf), end - tu_now_ms()))
			return false;
		if (n_wd && strcmp(buf, "WATCHDOG=1") == 0)
			(*n_wd)++;
		if (strcmp(buf, want) == 0)
			return true;
	}
	return false;
}

static size_t log_count(const struct env *e, const char *needle)
{
	return tu_log_count(e->dir, needle);
}

/* READY, then the watchdog's rhythm, then STOPPING on SIGTERM. */
static void ready_watchdog_stopping(void **state)
{
	struct env e;
	char buf[256];
	(void)state;

	env_init(&e);
	pid_t pid = start_daemon(&e, NULL, NULL);
	/* The first message is READY=1: the workers are up. */
	assert_true(recv_msg(&e, buf, sizeof(buf), PATIENCE_MS));
	assert_string_equal(buf, "READY=1");
	assert_true(log_count(&e, "event=started") == 1);
	/* 2 s of watchdog pings: several, none more than the interval
	 * apart. */
	int64_t t0 = tu_now_ms(), last = t0, worst = 0;
	size_t n = 0;
	while (tu_now_ms() - t0 < 2000) {
		if (!recv_msg(&e, buf, sizeof(buf), WD_US / 1000 * 2))
			fail_msg("no WATCHDOG=1 for %d ms", WD_US / 1000 * 2);
		assert_string_equal(buf, "WATCHDOG=1");
		int64_t now = tu_now_ms();
		worst = now - last > worst ? now - last : worst;
		last = now;
		n++;
	}
	print_message("%zu WATCHDOG=1 in 2 s, at most %lld ms apart\n", n,
		      (long long)worst);
	assert_true(n >= 5);
	assert_true(worst < WD_US / 1000);
	kill(pid, SIGTERM);
	assert_true(wait_msg(&e, "STOPPING=1", PATIENCE_MS, NULL));
	assert_true(tu_wait_exit(pid, PATIENCE_MS) != -1);
	env_dispose(&e);
}

/* A stuck scheduler loop: the pings stop (systemd would restart it). */
static void stuck_scheduler_stops_watchdog(void **state)
{
	struct env e;
	char buf[256];
	size_t n_wd = 0;
	(void)state;
	TU_NEED_TEST_SEAMS();

	env_init(&e);
	/* The loop passes every ~100 ms (a quarter of the interval): stuck
	 * after about a second of pings. */
	pid_t pid = start_daemon(
		&e, "SURECRON_FAILPOINTS=daemon.scheduler_stuck:err@10", NULL);
	assert_true(wait_msg(&e, "READY=1", PATIENCE_MS, NULL));
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (log_count(&e, "event=scheduler_stuck") == 0) {
		assert_true(tu_now_ms() < end);
		if (recv_msg(&e, buf, sizeof(buf), 20))
			n_wd += strcmp(buf, "WATCHDOG=1") == 0;
	}
	assert_true(n_wd >= 2); /* it pinged while it ran */
	/* Drain what was sent before the loop blocked, then nothing for
	 * three intervals: systemd's watchdog would fire. */
	while (recv_msg(&e, buf, sizeof(buf), 0))
		;
	int64_t t0 = tu_now_ms();
	while (tu_now_ms() - t0 < 3 * WD_US / 1000) {
		if (recv_msg(&e, buf, sizeof(buf), 3 * WD_US / 1000))
			assert_string_not_equal(buf, "WATCHDOG=1");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	env_dispose(&e);
}

/* WATCHDOG_PID names another process: the watchdog is not ours. */
static void watchdog_pid_of_another(void **state)
{
	struct env e;
	char buf[256];
	(void)state;

	env_init(&e);
	pid_t pid = start_daemon(&e, "WATCHDOG_PID=1", NULL);
	assert_true(recv_msg(&e, buf, sizeof(buf), PATIENCE_MS));
	assert_string_equal(buf, "READY=1");
	/* Three intervals without a ping. */
	assert_false(recv_msg(&e, buf, sizeof(buf), 3 * WD_US / 1000));
	kill(pid, SIGTERM);
	assert_true(wait_msg(&e, "STOPPING=1", PATIENCE_MS, NULL));
	assert_true(tu_wait_exit(pid, PATIENCE_MS) != -1);
	env_dispose(&e);
}


/* ---- the signal matrix (issue 42) --------------------------------------- */

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Every optional part on: http, the daemon's and the slot's heartbeat,
 * status_socket, sla, alerts to a webhook, PostgreSQL; sd_notify comes
 * from the environment (start_daemon). The task runs a moment, so the
 * signal finds the slot running. */
static void write_full_cfg(const struct env *e)
{
	FILE *f = fopen(e->cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n"
		   "worker: {concurrency: 2, lease: 3s, grace: 15s}\n"
		   "http: {listen: \"127.0.0.1:%d\"}\n"
		   "status_socket: %s/status.sock\n"
		   "heartbeat: {url_env: SIG_HC_DAEMON, every: 1s}\n"
		   "targets:\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "  oncall: {kind: webhook, url_env: SIG_ONCALL_URL}\n"
		   "alerts: {targets: [oncall]}\n"
		   "schedules:\n"
		   "  slow:\n"
		   "    cron: \"0 0 1 1 *\"\n"
		   "    tz: UTC\n"
		   "    heartbeat: {url_env: SIG_HC_SLOT}\n"
		   "    sla: {max_runtime: 1h}\n"
		   "    targets: [archive]\n"
		   "    tasks: [{name: t, shell: \"sleep 1; echo fine\"}]\n",
		pgfx_url(), free_port(), e->dir);
	fclose(f);
}

static void trigger_slot(const struct env *e, int64_t slot_ms)
{
	struct store *s = tu_store_open(pgfx_url());
	struct config *cfg = NULL;
	struct sc_err err = {0};
	int64_t id = 0;

	assert_int_equal(config_load(e->cfg, &cfg, &err), 0);
	const struct schedule_spec *sp = config_schedule(cfg, "slow");
	assert_non_null(sp);
	assert_int_equal(queue_trigger(s, "slow", slot_ms, spec_policy(sp), &id,
				       NULL, &err), 0);
	config_free(cfg);
	store_close(s);
}

/*
 * Reads every datagram waiting on the socket (a unix datagram socket
 * queues only net.unix.max_dgram_qlen of them, 10 by default: a test that
 * leaves the WATCHDOG=1 to pile up for a second makes the daemon's next
 * message, STOPPING=1, be dropped). Notes a STOPPING=1 in *stopping.
 */
static void drain(struct env *e, bool *stopping)
{
	char buf[256];
	ssize_t got;

	while ((got = recv(e->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
		buf[got] = '\0';
		if (strcmp(buf, "STOPPING=1") == 0)
			*stopping = true;
	}
}

/* tu_wait_log, draining the socket meanwhile. */
static bool wait_log_drained(struct env *e, const char *needle, size_t n,
			     bool *stopping)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		drain(e, stopping);
		if (tu_log_count(e->dir, needle) >= n)
			return true;
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(10);
	}
}

/* fake_http_wait for n requests to path, draining the socket meanwhile. */
static bool wait_pings_drained(struct env *e, struct fake_http *mon,
			       const char *path, size_t n, bool *stopping)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		drain(e, stopping);
		if (fake_http_count(mon, path) >= n)
			return true;
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(10);
	}
}

/* The jobs of `slow` as the store sees them. */
static struct store_counts slow_counts(void)
{
	struct store *s = tu_store_open(pgfx_url());
	struct store_counts c;

	assert_int_equal(store_job_counts(s, "slow", &c, NULL), 0);
	store_close(s);
	return c;
}

/* Waits for pid's exit by the graceful path: STOPPING=1 on the socket,
 * then exit status 0 (not a death by signal). */
static void assert_graceful_exit(struct env *e, pid_t pid, const char *sig,
				 bool stopping)
{
	if (!stopping && !wait_msg(e, "STOPPING=1", PATIENCE_MS, NULL)) {
		int st = tu_wait_exit(pid, 1000);
		fail_msg("%s: no STOPPING=1 (exit status %d%s)", sig,
			 st == -1 ? -1 : WIFSIGNALED(st) ? WTERMSIG(st)
							  : WEXITSTATUS(st),
			 st != -1 && WIFSIGNALED(st) ? ", by signal" : "");
	}
	int st = tu_wait_exit(pid, PATIENCE_MS);
	if (st == -1)
		fail_msg("%s: the daemon did not exit", sig);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s: exit %s %d, not 0", sig,
			 WIFSIGNALED(st) ? "by signal" : "status",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void signal_matrix_pg(void **state)
{
	static const struct {
		int sig;
		const char *name;
		bool reload;
	} rows[] = {
		{SIGTERM, "SIGTERM", false},
		{SIGHUP, "SIGHUP", true},
		{SIGUSR1, "SIGUSR1", true},
		{SIGINT, "SIGINT", false},
	};
	char base[128], hc_d[200], hc_s[200], oncall[200];
	struct env e;
	(void)state;
	PGFX_NEED_SERVER();

	env_init(&e);
	struct fake_http *mon = fake_http_start();
	assert_non_null(mon);
	fake_http_set_default(mon, "/hc/daemon", 200, NULL, "OK");
	fake_http_set_default(mon, "/hc/slot", 200, NULL, "OK");
	fake_http_set_default(mon, "/hc/slot/start", 200, NULL, "OK");
	fake_http_set_default(mon, "/alert", 200, NULL, "ok");
	fake_http_url(mon, "", base, sizeof(base));
	snprintf(hc_d, sizeof(hc_d), "SIG_HC_DAEMON=%s/hc/daemon", base);
	snprintf(hc_s, sizeof(hc_s), "SIG_HC_SLOT=%s/hc/slot", base);
	snprintf(oncall, sizeof(oncall), "SIG_ONCALL_URL=%s/alert", base);
	putenv(hc_d); /* for config_load here */
	putenv(hc_s);
	putenv(oncall);
	write_full_cfg(&e);

	int64_t slot = INT64_C(1772784000000);
	size_t n_reload = 0, n_started = 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char wd[64];
		snprintf(wd, sizeof(wd), "WATCHDOG_USEC=%d", WD_US);
		const char *envs[] = {"SURECRON_LOG=debug", e.notify_env, wd,
				      hc_d, hc_s, oncall, NULL};
		bool stopping = false;
		pid_t pid = tu_track(tu_start_daemon(e.dir, e.cfg, envs, 0));
		n_started++;
		assert_true(wait_msg(&e, "READY=1", PATIENCE_MS, NULL));
		assert_true(wait_log_drained(&e, "event=http_started",
					     n_started, &stopping));
		assert_true(wait_log_drained(&e, "event=status_socket_started",
					     n_started, &stopping));
		/* The daemon's heartbeat is running (its thread is up). */
		size_t pings = fake_http_count(mon, "/hc/daemon");
		assert_true(wait_pings_drained(&e, mon, "/hc/daemon",
					       pings + 1, &stopping));
		/* A slot is running when the signal comes. */
		slot += 86400000;
		size_t starts = tu_log_count(e.dir, "event=start schedule=slow");
		trigger_slot(&e, slot);
		assert_true(wait_log_drained(&e, "event=start schedule=slow",
					     starts + 1, &stopping));
		kill(pid, rows[i].sig);
		if (rows[i].reload) {
			n_reload++;
			assert_true(wait_log_drained(&e,
						     "event=reload outcome=ok",
						     n_reload, &stopping));
			/* It runs on: the slot is delivered, pings go on. */
			assert_true(wait_log_drained(&e,
						     "event=finish schedule=slow",
						     n_started, &stopping));
			pings = fake_http_count(mon, "/hc/daemon");
			assert_true(wait_pings_drained(&e, mon, "/hc/daemon",
						       pings + 1, &stopping));
			assert_false(stopping);
			assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
			kill(pid, SIGTERM);
		}
		assert_graceful_exit(&e, pid, rows[i].name, stopping);
		assert_true(tu_log_count(e.dir, "event=stopped") == n_started);
		/* No slot left behind: each delivered in the grace, none
		 * given back or left ACTIVE for lease recovery. */
		struct store_counts c = slow_counts();
		print_message("%s: done=%lld active=%lld ready=%lld dead=%lld\n",
			      rows[i].name, (long long)c.done,
			      (long long)c.active, (long long)c.ready_due,
			      (long long)c.dead);
		assert_int_equal(c.active, 0);
		assert_int_equal(c.ready_due + c.delayed, 0);
		assert_int_equal(c.dead, 0);
		assert_int_equal(c.done, (int64_t)n_started);
	}
	assert_int_equal(tu_ledger_count(pgfx_url(), "slow", "success"),
			 n_started);
	assert_int_equal(tu_ledger_count(pgfx_url(), "slow", "released"), 0);
	assert_int_equal(tu_ledger_count(pgfx_url(), "slow", "stalled"), 0);
	unsetenv("SIG_HC_DAEMON");
	unsetenv("SIG_HC_SLOT");
	unsetenv("SIG_ONCALL_URL");
	fake_http_stop(mon);
	env_dispose(&e);
}

static int pg_teardown(void **state)
{
	tu_reap_all();
	return pgfx_teardown(state);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(ready_watchdog_stopping, reap_all),
		cmocka_unit_test_teardown(stuck_scheduler_stops_watchdog,
					  reap_all),
		cmocka_unit_test_teardown(watchdog_pid_of_another, reap_all),
	};
	const struct CMUnitTest pg_tests[] = {
		cmocka_unit_test_setup_teardown(signal_matrix_pg, pgfx_setup,
						pg_teardown),
	};
	int rc = cmocka_run_group_tests_name("sdnotify", tests, NULL, NULL);
	rc += cmocka_run_group_tests_name("sdnotify_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
