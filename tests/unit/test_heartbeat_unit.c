/*
 * test_heartbeat_unit.c - the pieces of heartbeat.h and sdnotify.h that need
 * no daemon: the run id (deterministic, one per (schedule, slot), a valid
 * UUID of version 8 and the RFC variant), the pinger's bounded queue and
 * counters against a real HTTP server on loopback, and the notify socket
 * address (a path, or '@' for Linux's abstract namespace: a real send to
 * an abstract socket this test binds) and the watchdog's environment.
 * The daemon's use of both is tests/integ/test_heartbeat.c and
 * test_sdnotify.c (this file has its own name: the integration suite
 * is test_heartbeat).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "fakes/fake_http.h"
#include "heartbeat.h"
#include "sdnotify.h"
#include "testutil.h"

/* ---- the run id -------------------------------------------------------- */

static void assert_uuid(const char *s)
{
	assert_int_equal(strlen(s), 36);
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(s[i], '-');
		else
			assert_true(isxdigit((unsigned char)s[i]) &&
				    !isupper((unsigned char)s[i]));
	}
	assert_int_equal(s[14], '8'); /* version 8 */
	assert_non_null(strchr("89ab", s[19])); /* variant 10xx */
}

static void rid_is_a_stable_uuid_per_slot(void **state)
{
	char a[HEARTBEAT_RID_MAX], b[HEARTBEAT_RID_MAX];
	char c[HEARTBEAT_RID_MAX], d[HEARTBEAT_RID_MAX];
	char x[HEARTBEAT_RID_MAX];
	(void)state;

	assert_int_equal(heartbeat_rid("weekly", 1772784000000, a, NULL), 0);
	assert_uuid(a);
	/* The same on every call (every attempt, every node). */
	assert_int_equal(heartbeat_rid("weekly", 1772784000000, b, NULL), 0);
	assert_string_equal(a, b);
	/* Another slot, another schedule: another rid. */
	assert_int_equal(heartbeat_rid("weekly", 1773388800000, c, NULL), 0);
	assert_uuid(c);
	assert_string_not_equal(a, c);
	assert_int_equal(heartbeat_rid("daily", 1772784000000, d, NULL), 0);
	assert_string_not_equal(a, d);
	/* The parts are separated: ("ab", 1) is not ("a", b1...). */
	assert_int_equal(heartbeat_rid("weekly1", 772784000000, x, NULL), 0);
	assert_string_not_equal(a, x);
}

/* ---- the pinger's queue ------------------------------------------------ */

/* A config with one schedule whose heartbeat is HB_UNIT_URL. */
static struct config *load_cfg(const char *dir)
{
	char path[512];
	struct config *cfg = NULL;
	struct sc_err err = {0};

	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "store: sqlite:%s/s.db\n"
		   "targets:\n"
		   "  archive: {kind: file, path: ./d.jsonl}\n"
		   "schedules:\n"
		   "  s:\n"
		   "    cron: \"0 0 1 1 *\"\n"
		   "    tz: UTC\n"
		   "    heartbeat: {url_env: HB_UNIT_URL}\n"
		   "    targets: [archive]\n"
		   "    tasks: [{name: t, shell: \"true\"}]\n", dir);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, &err), 0);
	return cfg;
}

/* A monitor that holds every ping: the queue fills, the oldest go and
 * are counted, the caller never waits. Released: the rest are sent. */
static void full_queue_drops_oldest(void **state)
{
	char dir[256], url[256];
	struct heartbeat *hb = NULL;
	struct heartbeat_counters c;
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	struct fake_http *mon = fake_http_start();
	assert_non_null(mon);
	fake_http_set_default(mon, "/p/start", 200, NULL, "OK");
	fake_http_hold(mon, "/p/start", true);
	setenv("HB_UNIT_URL", fake_http_url(mon, "/p", url, sizeof(url)), 1);
	struct config *cfg = load_cfg(dir);
	assert_int_equal(heartbeat_new(cfg, &hb, NULL), 0);
	heartbeat_slot(hb, "s", 0, HEARTBEAT_START);
	assert_true(fake_http_wait(mon, "/p/start", 1, 10000)); /* held */
	const int extra = HEARTBEAT_QUEUE_MAX + 10;
	for (int i = 1; i <= extra; i++)
		heartbeat_slot(hb, "s", i * 1000, HEARTBEAT_START);
	heartbeat_slot(hb, "nobody", 0, HEARTBEAT_START); /* no URL */
	heartbeat_counters(hb, &c);
	assert_int_equal(c.dropped, 10);
	assert_int_equal(c.sent, 0);
	fake_http_hold(mon, "/p/start", false);
	assert_true(heartbeat_flush(hb, 20000));
	heartbeat_counters(hb, &c);
	assert_int_equal(c.sent, 1 + HEARTBEAT_QUEUE_MAX);
	assert_int_equal(c.failed, 0);
	/* The newest were kept: the last ping is the last slot's. */
	struct fake_request r;
	char rid[HEARTBEAT_RID_MAX], want[64];
	assert_true(fake_http_request(mon, "/p/start", -1, &r));
	assert_int_equal(heartbeat_rid("s", (int64_t)extra * 1000, rid, NULL),
			 0);
	snprintf(want, sizeof(want), "rid=%s", rid);
	assert_string_equal(r.query, want);
	fake_request_dispose(&r);
	heartbeat_free(hb);
	config_free(cfg);
	fake_http_stop(mon);
	unsetenv("HB_UNIT_URL");
	tu_rmrf(dir);
}

/* A ping answered 500 is tried HEARTBEAT_TRIES times, then counted as
 * failed; a 404 (no such check) is not retried. */
static void failing_ping_is_counted(void **state)
{
	char dir[256], url[256];
	struct heartbeat *hb = NULL;
	struct heartbeat_counters c;
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	struct fake_http *mon = fake_http_start();
	assert_non_null(mon);
	fake_http_set_default(mon, "/p/fail", 500, NULL, "no");
	setenv("HB_UNIT_URL", fake_http_url(mon, "/p/", url, sizeof(url)), 1);
	struct config *cfg = load_cfg(dir);
	assert_int_equal(heartbeat_new(cfg, &hb, NULL), 0);
	heartbeat_slot(hb, "s", 0, HEARTBEAT_FAIL);
	heartbeat_slot(hb, "s", 0, HEARTBEAT_SUCCESS); /* "/p": 404 */
	assert_true(heartbeat_flush(hb, 30000));
	heartbeat_counters(hb, &c);
	assert_int_equal(c.failed, 2);
	assert_int_equal(c.sent, 0);
	/* The base's trailing slash is not doubled. */
	assert_int_equal(fake_http_count(mon, "/p/fail"), HEARTBEAT_TRIES);
	assert_int_equal(fake_http_count(mon, "/p/"), 1);
	heartbeat_free(hb);
	config_free(cfg);
	fake_http_stop(mon);
	unsetenv("HB_UNIT_URL");
	tu_rmrf(dir);
}

/* ---- sd_notify ----------------------------------------------------------- */

static void notify_addresses(void **state)
{
	struct sockaddr_un sa;
	socklen_t len = 0;
	(void)state;

	assert_int_equal(sdnotify_addr("/run/systemd/notify", &sa, &len), 0);
	assert_string_equal(sa.sun_path, "/run/systemd/notify");
	assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) +
				      strlen("/run/systemd/notify") + 1);
	/* Abstract: a NUL, then the name, no trailing NUL in the length. */
	assert_int_equal(sdnotify_addr("@sc/notify", &sa, &len), 0);
	assert_int_equal(sa.sun_path[0], '\0');
	assert_memory_equal(sa.sun_path + 1, "sc/notify", 9);
	assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 10);
	assert_int_equal(sdnotify_addr("", &sa, &len), SC_EINVAL);
	assert_int_equal(sdnotify_addr("@", &sa, &len), SC_EINVAL);
	assert_int_equal(sdnotify_addr("relative/path", &sa, &len),
			 SC_EINVAL);
	char longp[200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(sdnotify_addr(longp, &sa, &len), SC_EINVAL);
}

/* A real datagram to an abstract socket bound here. */
static void notify_abstract_send(void **state)
{
	char name[64], env[80], buf[64];
	struct sockaddr_un sa;
	socklen_t len;
	(void)state;

	snprintf(name, sizeof(name), "@surecron-test-%ld", (long)getpid());
	assert_int_equal(sdnotify_addr(name, &sa, &len), 0);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	snprintf(env, sizeof(env), "%s", name);
	setenv("NOTIFY_SOCKET", env, 1);
	assert_int_equal(sdnotify_send("READY=1", NULL), 0);
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_int_equal(n, 7);
	buf[n] = '\0';
	assert_string_equal(buf, "READY=1");
	close(fd);
	/* Nobody listening any more: an error, never a hang. */
	assert_int_equal(sdnotify_send("WATCHDOG=1", NULL), SC_EIO);
	/* No NOTIFY_SOCKET: nothing to tell, no error. */
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sdnotify_send("READY=1", NULL), 0);
}

static void watchdog_env(void **state)
{
	char pid[32];
	(void)state;

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "400000", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 400000);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(sdnotify_watchdog_usec(), 400000);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "12x", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "0", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_USEC");
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rid_is_a_stable_uuid_per_slot),
		cmocka_unit_test(full_queue_drops_oldest),
		cmocka_unit_test(failing_ping_is_counted),
		cmocka_unit_test(notify_addresses),
		cmocka_unit_test(notify_abstract_send),
		cmocka_unit_test(watchdog_env),
	};
	return cmocka_run_group_tests_name("heartbeat_unit", tests, NULL,
					   NULL);
}
