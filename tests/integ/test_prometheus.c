/*
 * test_prometheus.c - /metrics as a real Prometheus reads it (issue 16): a
 * test daemon with http.listen on a free 127.0.0.1 port (config refuses
 * port 0) runs a schedule twice;
 * /usr/bin/prometheus (Debian package prometheus) scrapes it every second
 * on a loopback port of its own, with examples/prometheus-rules.yml
 * loaded; the test polls Prometheus' HTTP API until
 * surecron_runs_total{schedule="tick"} is there and checks it equals the
 * ledger's runs of that schedule, and that every rule of the example
 * file evaluates without error against the real series. The rules file
 * also passes `promtool check rules`. Without the binaries the tests are
 * skipped. Prometheus is killed and its folder removed at the end, on
 * failure too (the teardown).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon_util.h"
#include "testutil.h"

#define PATIENCE_MS 30000
#define PROM_PATIENCE_MS 90000 /* its start, two scrapes, a rule pass */
#define PROMETHEUS "/usr/bin/prometheus"
#define PROMTOOL "/usr/bin/promtool"
#define RULES "examples/prometheus-rules.yml"

static char g_dir[256]; /* this test's folder, removed by the teardown */

/* A port nobody listens on now (bound then released). */
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

/* GET path over HTTP/1.0; the body into out (n bytes, NUL-terminated).
 * Returns the status, or -1 when nobody answered. */
static int http_get(int port, const char *path, char *out, size_t n)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	char req[1024];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	out[0] = '\0';
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: "
			   "127.0.0.1:%d\r\n\r\n", path, port);
	assert_true(len > 0 && (size_t)len < sizeof(req));
	if (write(fd, req, (size_t)len) != len) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, out + got, n - 1 - got);
		if (r <= 0 || (got += (size_t)r) == n - 1)
			break;
	}
	out[got] = '\0';
	close(fd);
	int status = -1;
	if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	const char *body = strstr(out, "\r\n\r\n");
	if (body)
		memmove(out, body + 4, strlen(body + 4) + 1);
	return status;
}

/* The port the daemon logged in its event=http_started line; 0 if none. */
static int daemon_port(const char *dir)
{
	char p[512], line[4096];
	int port = 0;

	snprintf(p, sizeof(p), "%s/daemon.log", dir);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, "event=http_started");
		if (at && (at = strstr(at, " port=")))
			port = atoi(at + 6);
	}
	if (f)
		fclose(f);
	return port;
}

/* Starts prometheus with dir/prometheus.yml, its data in dir/tsdb, its
 * output in dir/prometheus.log, on 127.0.0.1:port. */
static pid_t start_prometheus(const char *dir, int port)
{
	char cfg[400], tsdb[400], listen[64], log[400];

	snprintf(cfg, sizeof(cfg), "--config.file=%s/prometheus.yml", dir);
	snprintf(tsdb, sizeof(tsdb), "--storage.tsdb.path=%s/tsdb", dir);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d",
		 port);
	snprintf(log, sizeof(log), "%s/prometheus.log", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *f = freopen(log, "w", stderr);
		(void)f;
		dup2(2, 1);
		execl(PROMETHEUS, PROMETHEUS, cfg, tsdb, listen,
		      "--storage.tsdb.retention.time=1h", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The sum of the values of the samples of query's answer (an instant
 * vector) whose label schedule is `schedule`, into *sum; false while
 * Prometheus does not answer or has no such sample. */
static bool prom_sum(int port, const char *query, const char *schedule,
		     double *sum)
{
	char path[512], *body = malloc(1 << 20);
	bool found = false;

	assert_non_null(body);
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", query);
	int st = http_get(port, path, body, 1 << 20);
	json_t *j = st == 200 ? json_loads(body, 0, NULL) : NULL;
	free(body);
	json_t *res = json_object_get(json_object_get(j, "data"), "result");
	size_t i;
	json_t *s;
	*sum = 0;
	json_array_foreach(res, i, s) {
		const char *sch = json_string_value(json_object_get(
			json_object_get(s, "metric"), "schedule"));
		const char *v = json_string_value(
			json_array_get(json_object_get(s, "value"), 1));
		if (sch && v && strcmp(sch, schedule) == 0) {
			*sum += strtod(v, NULL);
			found = true;
		}
	}
	json_decref(j);
	return found;
}

/* Whether every rule Prometheus loaded has been evaluated without an
 * error (health "ok"), and there are n of them; *why gets the last
 * error seen (or "") for the failure message. */
static bool rules_healthy(int port, size_t n, char *why, size_t why_n)
{
	char *body = malloc(1 << 20);
	size_t seen = 0, ok = 0, gi, ri;
	json_t *g, *r;

	assert_non_null(body);
	int st = http_get(port, "/api/v1/rules", body, 1 << 20);
	json_t *j = st == 200 ? json_loads(body, 0, NULL) : NULL;
	free(body);
	json_t *groups = json_object_get(json_object_get(j, "data"), "groups");
	json_array_foreach(groups, gi, g) {
		json_array_foreach(json_object_get(g, "rules"), ri, r) {
			const char *h = json_string_value(
				json_object_get(r, "health"));
			const char *e = json_string_value(
				json_object_get(r, "lastError"));
			seen++;
			ok += h && strcmp(h, "ok") == 0;
			if (e && *e)
				snprintf(why, why_n, "%s", e);
		}
	}
	json_decref(j);
	return seen == n && ok == n;
}

static void real_prometheus_scrapes_the_daemon(void **state)
{
	char cfg[400], rules[PATH_MAX], url[400], p[400];
	(void)state;

	if (access(PROMETHEUS, X_OK) != 0) {
		fprintf(stderr, "skipped: %s not installed (Debian package "
			"prometheus)\n", PROMETHEUS);
		skip();
	}
	assert_non_null(realpath(RULES, rules));
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", g_dir);
	snprintf(url, sizeof(url), "sqlite:%s/s.db", g_dir);
	int want_port = free_port();
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n"
		"http: {listen: \"127.0.0.1:%d\"}\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n  tick: {cron: \"0 0 1 1 *\", tz: UTC, targets: "
		"[out], tasks: [{name: a, command: [/bin/echo, hi]}]}\n", url,
		want_port);
	fclose(f);
	pid_t d = tu_track(tu_start_daemon(g_dir, cfg, NULL, 0));
	assert_true(tu_wait_log(g_dir, "event=http_started", 1, PATIENCE_MS));
	int dport = daemon_port(g_dir);
	assert_int_equal(dport, want_port);

	/* Two runs of tick, run by the daemon. */
	char out[4096], err[4096];
	const char *trig[] = {"trigger", "--config", cfg, "--slot",
			      "2026-01-01T00:00:00Z", "tick", NULL};
	assert_int_equal(tu_run_bin(g_dir, g_dir, NULL, trig, out,
				    sizeof(out), err, sizeof(err)), 0);
	trig[4] = "2025-01-01T00:00:00Z";
	assert_int_equal(tu_run_bin(g_dir, g_dir, NULL, trig, out,
				    sizeof(out), err, sizeof(err)), 0);
	assert_true(tu_wait_log(g_dir, "event=finish schedule=tick", 2,
				PATIENCE_MS));
	size_t runs = tu_ledger_count(url, "tick", LEDGER_SUCCESS);
	assert_int_equal(runs, 2);

	int pport = free_port();
	snprintf(p, sizeof(p), "%s/prometheus.yml", g_dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "global:\n  scrape_interval: 1s\n"
		"  evaluation_interval: 1s\n"
		"rule_files: [\"%s\"]\n"
		"scrape_configs:\n  - job_name: surecron\n"
		"    static_configs: [{targets: [\"127.0.0.1:%d\"]}]\n",
		rules, dport);
	fclose(f);
	pid_t prom = tu_track(start_prometheus(g_dir, pport));

	/* Until Prometheus is up and has scraped the daemon. */
	int64_t end = tu_now_ms() + PROM_PATIENCE_MS;
	double got = 0;
	while (!prom_sum(pport, "surecron_runs_total", "tick", &got)) {
		if (tu_now_ms() > end || waitpid(prom, NULL, WNOHANG) == prom) {
			snprintf(p, sizeof(p), "tail -n 20 '%s/prometheus.log' "
				 ">&2", g_dir);
			(void)system(p);
			fail_msg("Prometheus has no surecron_runs_total for "
				 "tick after %d ms", PROM_PATIENCE_MS);
		}
		tu_sleep_ms(100);
	}
	assert_true(got == (double)runs);
	/* The gauges went through too (store-wide: one per schedule). */
	assert_true(prom_sum(pport, "surecron_last_success_timestamp_seconds",
			     "tick", &got));
	assert_true(got > 0);
	assert_true(prom_sum(pport, "surecron_slots_lost_total", "tick",
			     &got));
	assert_true(got == 0);
	/* The example rules evaluate against the real series. */
	char why[512] = "";
	while (!rules_healthy(pport, 2, why, sizeof(why))) {
		if (tu_now_ms() > end)
			fail_msg("the rules of %s are not all healthy: %s",
				 RULES, why);
		tu_sleep_ms(100);
	}

	assert_true(tu_stop_daemon(prom, PATIENCE_MS));
	assert_true(tu_stop_daemon(d, PATIENCE_MS));
}

static void rules_file_passes_promtool(void **state)
{
	char cmd[512];
	(void)state;

	if (access(PROMTOOL, X_OK) != 0) {
		fprintf(stderr, "skipped: %s not installed (Debian package "
			"prometheus)\n", PROMTOOL);
		skip();
	}
	snprintf(cmd, sizeof(cmd), "%s check rules %s >&2", PROMTOOL, RULES);
	assert_int_equal(system(cmd), 0);
}

static int teardown(void **state)
{
	(void)state;
	tu_reap_all();
	if (g_dir[0])
		tu_rmrf(g_dir);
	g_dir[0] = '\0';
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(rules_file_passes_promtool, teardown),
		cmocka_unit_test_teardown(real_prometheus_scrapes_the_daemon,
					  teardown),
	};
	return cmocka_run_group_tests_name("prometheus", tests, NULL, NULL);
}
