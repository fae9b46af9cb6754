/*
 * test_web_daemon.c - the web surface (issue 16) of a real `surecron run`
 * with http.listen on a free loopback port: /healthz, the 404 JSON error,
 * the security headers on every response, the token rule for POST, a
 * foreign Origin refused, the query limit, no secret (the token, a
 * webhook URL from the environment) in any response; and the start
 * refused off loopback without a token, or with its variable unset.
 * Requests go through a plain socket: the bytes on the wire are checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_util.h"
#include "testutil.h"

#define PATIENCE_MS 30000
#define TOKEN "tok-canary-7f3a"
#define HOOK_SECRET "hook-canary-91bc"

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

/* Sends one HTTP/1.0 request (extra: more header lines, each ending in
 * \r\n) and reads the whole response into out; returns the status or
 * -1 when the connection failed. */
static int http_req(int port, const char *method, const char *path,
		    const char *extra, char *out, size_t n)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	char req[8192];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	out[0] = '\0';
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int len = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: "
			   "127.0.0.1:%d\r\n%sContent-Length: 0\r\n\r\n",
			   method, path, port, extra ? extra : "");
	assert_true(len > 0 && (size_t)len < sizeof(req));
	assert_int_equal(write(fd, req, (size_t)len), len);
	for (;;) {
		ssize_t r = read(fd, out + got, n - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == n - 1)
			break;
	}
	out[got] = '\0';
	close(fd);
	int status = -1;
	if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

/* What every response must carry, and never carry. */
static void check_response(const char *resp)
{
	assert_non_null(strstr(resp, "Content-Security-Policy: "
				     "default-src 'self'\r\n"));
	assert_non_null(strstr(resp, "X-Content-Type-Options: nosniff\r\n"));
	assert_non_null(strstr(resp, "application/json"));
	assert_null(strstr(resp, TOKEN));
	assert_null(strstr(resp, HOOK_SECRET));
}

static const char *body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");
	assert_non_null(b);
	return b + 4;
}

static void write_config(const char *dir, const char *cfg, const char *http)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"sqlite:%s/s.db\"\n"
		"http: %s\n"
		"targets:\n  hook: {kind: webhook, url_env: SC_WEB_HOOK}\n"
		"  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n  tick: {cron: \"0 0 1 1 *\", tz: UTC, targets: "
		"[out], tasks: [{name: a, command: [/bin/true]}]}\n",
		dir, http);
	fclose(f);
	assert_int_equal(rename(tmp, cfg), 0);
}

static void serves_healthz_and_keeps_its_rules(void **state)
{
	char dir[256], cfg[320], http[128], resp[16384];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	int port = free_port();
	snprintf(http, sizeof(http), "{listen: \"127.0.0.1:%d\", token_env: "
		 "SC_WEB_TOKEN}", port);
	write_config(dir, cfg, http);
	const char *envs[] = {"SC_WEB_TOKEN=" TOKEN,
			      "SC_WEB_HOOK=https://hooks.example/" HOOK_SECRET,
			      NULL};
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));

	/* Healthy: the loop runs, the store answers. */
	assert_int_equal(http_req(port, "GET", "/healthz", NULL, resp,
				  sizeof(resp)), 200);
	check_response(resp);
	assert_non_null(strstr(body_of(resp), "\"status\":\"ok\""));
	assert_non_null(strstr(body_of(resp), "\"backend\":\"sqlite\""));

	/* An unknown path: 404, a JSON error. */
	assert_int_equal(http_req(port, "GET", "/nope", NULL, resp,
				  sizeof(resp)), 404);
	check_response(resp);
	assert_string_equal(body_of(resp), "{\"error\":\"no such path\"}");

	/* POST: no token, a wrong one, a longer one -> 401; the right one
	 * passes the rule (and finds no such path). */
	static const char *const bad[] = {
		NULL, "Authorization: Bearer wrong\r\n",
		"Authorization: Bearer " TOKEN "x\r\n",
		"Authorization: Bearer tok-canary-7f3\r\n",
		"Authorization: Basic " TOKEN "\r\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(http_req(port, "POST", "/api/x", bad[i],
					  resp, sizeof(resp)), 401);
		check_response(resp);
	}
	assert_int_equal(http_req(port, "POST", "/api/x",
				  "Authorization: Bearer " TOKEN "\r\n", resp,
				  sizeof(resp)), 404);
	check_response(resp);

	/* A foreign Origin: 403, even with the token; its own: served. */
	assert_int_equal(http_req(port, "GET", "/healthz",
				  "Origin: http://evil.example\r\n", resp,
				  sizeof(resp)), 403);
	check_response(resp);
	assert_int_equal(http_req(port, "POST", "/api/x",
				  "Origin: http://evil.example\r\n"
				  "Authorization: Bearer " TOKEN "\r\n", resp,
				  sizeof(resp)), 403);
	char own[96];
	snprintf(own, sizeof(own), "Origin: http://127.0.0.1:%d\r\n", port);
	assert_int_equal(http_req(port, "GET", "/healthz", own, resp,
				  sizeof(resp)), 200);

	/* A query string past the limit: 414. */
	char path[4200] = "/healthz?q=";
	memset(path + 11, 'a', 3000);
	path[3011] = '\0';
	assert_int_equal(http_req(port, "GET", path, NULL, resp,
				  sizeof(resp)), 414);
	check_response(resp);

	/* /metrics after a run (`trigger`, run by the daemon). */
	char out[4096], err[4096];
	const char *trig[] = {"trigger", "--config", cfg, "tick", NULL};
	assert_int_equal(tu_run_bin(dir, dir, envs, trig, out, sizeof(out),
				    err, sizeof(err)), 0);
	assert_true(tu_wait_log(dir, "event=finish schedule=tick", 1,
				PATIENCE_MS));
	assert_int_equal(http_req(port, "GET", "/metrics", NULL, resp,
				  sizeof(resp)), 200);
	assert_non_null(strstr(resp, "Content-Security-Policy: "
				     "default-src 'self'\r\n"));
	assert_non_null(strstr(resp, "X-Content-Type-Options: nosniff"));
	assert_non_null(strstr(resp, "text/plain; version=0.0.4"));
	assert_null(strstr(resp, TOKEN));
	assert_null(strstr(resp, HOOK_SECRET));
	const char *m = body_of(resp);
	static const char *const series[] = {
		"surecron_runs_total{schedule=\"tick\",outcome=\"success\"} 1\n",
		"surecron_start_lateness_seconds_count 1\n",
		"surecron_run_duration_seconds_count{schedule=\"tick\"} 1\n",
		"surecron_jobs{state=\"done\"} 1\n",
		"surecron_build_info{version=\"",
		"\nprocess_resident_memory_bytes ",
		"\nprocess_cpu_seconds_total ",
		"\nprocess_start_time_seconds "};
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++)
		if (!strstr(m, series[i]))
			fail_msg("no %s in:\n%s", series[i], m);
	/* The format, as Prometheus reads it. */
	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		char mp[400], cmd[900];
		snprintf(mp, sizeof(mp), "%s/metrics.txt", dir);
		FILE *f = fopen(mp, "w");
		assert_non_null(f);
		fputs(m, f);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' "
			 ">'%s.out' 2>&1", mp, mp);
		int prc = system(cmd);
		if (prc != 0) {
			snprintf(cmd, sizeof(cmd), "cat '%s.out'", mp);
			(void)system(cmd);
		}
		assert_int_equal(prc, 0);
	} else {
		print_message("SKIP promtool check: promtool not installed "
			      "(Debian package prometheus)\n");
	}

	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
	assert_int_equal(tu_log_count(dir, "event=http_stopped"), 1);
	/* Stopped: nobody listens. */
	assert_int_equal(http_req(port, "GET", "/healthz", NULL, resp,
				  sizeof(resp)), -1);
	tu_rmrf(dir);
}

static void refuses_to_start_without_a_token(void **state)
{
	char dir[256], cfg[320], out[4096], err[4096];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	/* Off loopback without token_env: check and run refuse. */
	write_config(dir, cfg, "{listen: \"0.0.0.0:8077\"}");
	const char *env[] = {"SC_WEB_HOOK=https://hooks.example/x", NULL};
	const char *check[] = {"check", "--config", cfg, NULL};
	assert_int_not_equal(tu_run_bin(dir, dir, env, check, out,
					sizeof(out), err, sizeof(err)), 0);
	assert_non_null(strstr(err, "http.listen: \"0.0.0.0:8077\" is not a "
				    "loopback address"));
	const char *run[] = {"run", "--config", cfg, NULL};
	int st = tu_run_bin(dir, dir, env, run, out, sizeof(out), err,
			    sizeof(err));
	assert_int_not_equal(st, 0);
	assert_non_null(strstr(err, "is not a loopback address"));

	/* token_env named but unset: check says so; run does not start. */
	char http[128];
	snprintf(http, sizeof(http), "{listen: \"127.0.0.1:%d\", token_env: "
		 "SC_WEB_TOKEN}", free_port());
	write_config(dir, cfg, http);
	const char *env2[] = {"SC_WEB_HOOK=https://hooks.example/x",
			      "SC_WEB_TOKEN", NULL};
	assert_int_not_equal(tu_run_bin(dir, dir, env2, check, out,
					sizeof(out), err, sizeof(err)), 0);
	assert_non_null(strstr(err, "http.token_env: environment variable "
				    "SC_WEB_TOKEN is not set"));
	st = tu_run_bin(dir, dir, env2, run, out, sizeof(out), err,
			sizeof(err));
	assert_int_not_equal(st, 0);
	assert_non_null(strstr(err, "event=http_failed"));
	assert_non_null(strstr(err, "SC_WEB_TOKEN is not set"));
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
		cmocka_unit_test_teardown(serves_healthz_and_keeps_its_rules,
					  teardown),
		cmocka_unit_test_teardown(refuses_to_start_without_a_token,
					  teardown),
	};
	return cmocka_run_group_tests_name("web_daemon", tests, NULL, NULL);
}
