/*
 * test_web_daemon.c - the web surface (issue 16) of a real `surecron run`
 * with http.listen on a free loopback port: /healthz, the 404 JSON error,
 * the security headers on every response, the token rule for POST, a
 * foreign Origin refused, the query limit, no secret (the token, a
 * webhook URL from the environment) in any response; /metrics' series
 * (the counters of a run, the store's gauges: last success as the
 * ledger has it, next slot as the cron engine computes it) and their
 * format (promtool); /healthz's 503 with its reason when the loop is
 * stale and when the store fails (failpoints: skipped in a release-like
 * build); the missed slots counted after downtime, a lost slot and its
 * alert counted; and the start
 * refused off loopback without a token, or with its variable unset. The
 * daemon suites run on SQLite and on the PostgreSQL of tests/pg_fixture.h.
 * Requests go through a plain socket: the bytes on the wire are checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
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
#include "pg_fixture.h"
#include "daemon_stores.h"

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
	char tmp[600], url[700];
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n"
		"http: %s\n"
		"targets:\n  hook: {kind: webhook, url_env: SC_WEB_HOOK}\n"
		"  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n  tick: {cron: \"0 0 1 1 *\", tz: UTC, targets: "
		"[out], tasks: [{name: a, command: [/bin/echo, hi]}]}\n",
		ds_store_url(dir, url, sizeof(url)), http);
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
	assert_non_null(strstr(body_of(resp), ds_pg
			       ? "\"backend\":\"postgresql\""
			       : "\"backend\":\"sqlite\""));

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
		"\nprocess_start_time_seconds ",
		"surecron_slots_lost_total{schedule=\"tick\"} 0\n",
		"surecron_slots_missed_total{schedule=\"tick\"} 0\n",
		"surecron_deliveries_total{target=\"out\",state=\"sent\"} 1\n",
		"# TYPE surecron_alerts_total counter\n",
		"# TYPE surecron_last_success_timestamp_seconds gauge\n",
		"# TYPE surecron_next_slot_timestamp_seconds gauge\n",
		/* Issue 43: this daemon, alone, on its own config. */
		"\nsurecron_nodes 1\n", "\nsurecron_config_skew 0\n"};
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++)
		if (!strstr(m, series[i]))
			fail_msg("no %s in:\n%s", series[i], m);
	/* Issue 43: GET /api/nodes, this daemon on its own config. */
	{
		char nresp[16384];
		assert_int_equal(http_req(port, "GET", "/api/nodes", NULL,
					  nresp, sizeof(nresp)), 200);
		json_t *nj = json_loads(body_of(nresp), 0, NULL);
		assert_non_null(nj);
		json_t *live = json_object_get(nj, "live");
		assert_int_equal(json_array_size(live), 1);
		json_t *x = json_array_get(live, 0);
		assert_true(json_is_true(json_object_get(x, "same_config")));
		assert_true(json_integer_value(json_object_get(x, "pid")) > 0);
		assert_int_equal(json_integer_value(json_object_get(nj,
								    "gone")),
				 0);
		json_decref(nj);
	}
	/* The store's gauges: the last success is the ledger's success row
	 * (its finish), the next slot the cron engine's after now. */
	char url[700], want[256];
	struct store *st = tu_store_open(ds_store_url(dir, url, sizeof(url)));
	struct ledger_filter lf = {.schedule = "tick", .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_SUCCESS};
	struct ledger_row *rows = NULL;
	size_t n_rows = 0;
	assert_int_equal(store_ledger_query(st, &lf, &rows, &n_rows, NULL), 0);
	assert_int_equal(n_rows, 1);
	snprintf(want, sizeof(want), "surecron_last_success_timestamp_seconds"
		 "{schedule=\"tick\"} %.3f\n",
		 (double)rows[0].finished_ms / 1000.0);
	store_ledger_rows_free(rows, n_rows);
	store_close(st);
	if (!strstr(m, want))
		fail_msg("no %s in:\n%s", want, m);
	struct sc_cron cron;
	const struct sc_zone *utc = NULL;
	int64_t next = 0;
	assert_int_equal(sc_cron_parse("0 0 1 1 *", &cron, NULL), 0);
	assert_int_equal(sc_zone_load("UTC", &utc, NULL), 0);
	assert_int_equal(sc_cron_next(&cron, utc, tu_now_ms(), &next, NULL),
			 0);
	snprintf(want, sizeof(want), "surecron_next_slot_timestamp_seconds"
		 "{schedule=\"tick\"} %.3f\n", (double)next / 1000.0);
	if (!strstr(m, want))
		fail_msg("no %s in:\n%s", want, m);
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

/* /healthz's 503s, each with its reason, then healthy again: the
 * failpoints fire on one request each (the second that reaches them). */
static void healthz_says_why_it_is_unhealthy(void **state)
{
	char dir[256], cfg[320], http[128], resp[16384];
	(void)state;

	TU_NEED_TEST_SEAMS();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	int port = free_port();
	snprintf(http, sizeof(http), "{listen: \"127.0.0.1:%d\"}", port);
	write_config(dir, cfg, http);
	const char *envs[] = {"SC_WEB_HOOK=https://hooks.example/" HOOK_SECRET,
			      "SURECRON_FAILPOINTS=web.loop_stale:err@2,"
			      "web.store_down:err@2", NULL};
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));

	assert_int_equal(http_req(port, "GET", "/healthz", NULL, resp,
				  sizeof(resp)), 200);
	assert_non_null(strstr(body_of(resp), "\"status\":\"ok\""));
	/* The loop is stale. */
	assert_int_equal(http_req(port, "GET", "/healthz", NULL, resp,
				  sizeof(resp)), 503);
	check_response(resp);
	assert_non_null(strstr(body_of(resp), "\"status\":\"unhealthy\""));
	assert_non_null(strstr(body_of(resp), "\"reason\":\"the scheduler "
				     "loop has not run for "));
	assert_non_null(strstr(body_of(resp), "\"loop_age_ms\":"));
	/* The store fails. */
	assert_int_equal(http_req(port, "GET", "/healthz", NULL, resp,
				  sizeof(resp)), 503);
	check_response(resp);
	assert_non_null(strstr(body_of(resp), "\"status\":\"unhealthy\""));
	assert_non_null(strstr(body_of(resp), "\"reason\":\"the store does "
				     "not answer\""));
	assert_non_null(strstr(body_of(resp), "\"code\":\""));
	/* Both past: healthy again. */
	assert_int_equal(http_req(port, "GET", "/healthz", NULL, resp,
				  sizeof(resp)), 200);
	assert_non_null(strstr(body_of(resp), "\"status\":\"ok\""));
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
	tu_rmrf(dir);
}

/* The value of the series line (name and labels, up to the space) in
 * the /metrics body m; -1 when absent. */
static long long series_value(const char *m, const char *series)
{
	char needle[256];
	snprintf(needle, sizeof(needle), "\n%s ", series);
	const char *at = strstr(m, needle);
	return at ? strtoll(at + strlen(needle), NULL, 10) : -1;
}

/* surecron_slots_missed_total counts the slots the scheduler recorded as
 * missed: a start after 30 minutes of downtime, catchup none. */
static void counts_missed_slots(void **state)
{
	char dir[256], cfg[320], url[700], tmp[400], resp[32768];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	int port = free_port();
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nhttp: {listen: \"127.0.0.1:%d\"}\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n  minutely: {cron: \"* * * * *\", tz: UTC, "
		"catchup: none, targets: [out], tasks: [{name: a, command: "
		"[/bin/true]}]}\n", ds_store_url(dir, url, sizeof(url)), port);
	fclose(f);
	assert_int_equal(rename(tmp, cfg), 0);
	/* The scheduler last ran 30 minutes ago. */
	struct store *st = tu_store_open(url);
	int64_t last = (tu_now_ms() / 60000 - 30) * 60000;
	assert_int_equal(store_sched_last_set(st, "minutely", last, NULL), 0);
	store_close(st);
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, NULL, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));
	assert_true(tu_wait_log(dir, "event=missed", 1, PATIENCE_MS));
	/* Until the pass is over: the counter equals the ledger's rows
	 * (each one slot: fewer than the summary's threshold). */
	int64_t end = tu_now_ms() + PATIENCE_MS;
	long long got = -1;
	size_t rows = 0;
	for (;;) {
		rows = tu_ledger_count(url, "minutely", LEDGER_MISSED);
		assert_int_equal(http_req(port, "GET", "/metrics", NULL, resp,
					  sizeof(resp)), 200);
		got = series_value(body_of(resp), "surecron_slots_missed_total"
				   "{schedule=\"minutely\"}");
		if ((got > 0 && (size_t)got == rows &&
		     tu_ledger_count(url, "minutely", LEDGER_MISSED) == rows) ||
		    tu_now_ms() > end)
			break;
		tu_sleep_ms(20);
	}
	assert_true(rows >= 28);
	assert_int_equal(got, (long long)rows);
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
	tu_rmrf(dir);
}

/* A lost slot: the run counted lost, the lost-slot counter, and the
 * alert copy sent (to a file target) counted by its reason; the last
 * success, older than that newest row, still the store's. */
static void counts_a_lost_slot_and_its_alert(void **state)
{
	char dir[256], cfg[320], url[700], tmp[400], resp[32768];
	char out[4096], err[4096];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	int port = free_port();
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nhttp: {listen: \"127.0.0.1:%d\"}\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"  archive: {kind: file, path: ./alerts.jsonl}\n"
		"alerts:\n  targets: [archive]\n"
		"schedules:\n  doomed: {cron: \"0 0 1 1 *\", tz: UTC, "
		"targets: [out], retry: {attempts: 1, backoff: fixed, delay: "
		"1s}, tasks: [{name: a, shell: \"echo hi; [ -e ok ]\"}]}\n",
		ds_store_url(dir, url, sizeof(url)), port);
	fclose(f);
	assert_int_equal(rename(tmp, cfg), 0);
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, NULL, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));
	/* 2025's slot succeeds (the file ok is there), then 2026's is lost:
	 * the newest row is no success, the last success is 2025's. */
	char ok[320];
	snprintf(ok, sizeof(ok), "%s/ok", dir);
	FILE *okf = fopen(ok, "w");
	assert_non_null(okf);
	fclose(okf);
	const char *trig[] = {"trigger", "--config", cfg, "--slot",
			      "2025-01-01T00:00:00Z", "doomed", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, trig, out, sizeof(out),
				    err, sizeof(err)), 0);
	assert_true(tu_wait_log(dir, "event=finish schedule=doomed", 1,
				PATIENCE_MS));
	assert_int_equal(unlink(ok), 0);
	trig[4] = "2026-01-01T00:00:00Z";
	assert_int_equal(tu_run_bin(dir, dir, NULL, trig, out, sizeof(out),
				    err, sizeof(err)), 0);
	/* The alert goes out from the alerter thread, and the run is counted
	 * by its worker after the commit that queued that alert: the two
	 * counters move in either order, so wait for both (a loaded
	 * PostgreSQL run saw the alert counted before the run). */
	int64_t end = tu_now_ms() + PATIENCE_MS;
	const char *m = "";
	while (tu_now_ms() < end) {
		assert_int_equal(http_req(port, "GET", "/metrics", NULL, resp,
					  sizeof(resp)), 200);
		m = body_of(resp);
		if (series_value(m, "surecron_alerts_total{reason=\"lost\"}") ==
			    1 &&
		    series_value(m, "surecron_runs_total{schedule=\"doomed\","
				 "outcome=\"lost\"}") == 1)
			break;
		tu_sleep_ms(20);
	}
	if (series_value(m, "surecron_alerts_total{reason=\"lost\"}") != 1 ||
	    series_value(m, "surecron_runs_total{schedule=\"doomed\","
			 "outcome=\"lost\"}") != 1)
		print_message("the last /metrics read:\n%s\n", m);
	assert_int_equal(series_value(m, "surecron_alerts_total{reason="
				      "\"lost\"}"), 1);
	assert_int_equal(series_value(m, "surecron_runs_total{schedule="
				      "\"doomed\",outcome=\"lost\"}"), 1);
	assert_int_equal(series_value(m, "surecron_slots_lost_total{schedule="
				      "\"doomed\"}"), 1);
	assert_int_equal(tu_ledger_count(url, "doomed", LEDGER_LOST), 1);
	/* The last success: 2025's, found behind the newer lost slot, and
	 * the same again on the next scrape. */
	struct store *st = tu_store_open(url);
	struct ledger_filter lf = {.schedule = "doomed", .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_SUCCESS};
	struct ledger_row *rows = NULL;
	size_t n_rows = 0;
	assert_int_equal(store_ledger_query(st, &lf, &rows, &n_rows, NULL), 0);
	assert_int_equal(n_rows, 1);
	char want[256];
	snprintf(want, sizeof(want), "surecron_last_success_timestamp_seconds"
		 "{schedule=\"doomed\"} %.3f\n",
		 (double)rows[0].finished_ms / 1000.0);
	store_ledger_rows_free(rows, n_rows);
	store_close(st);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(http_req(port, "GET", "/metrics", NULL, resp,
					  sizeof(resp)), 200);
		if (!strstr(body_of(resp), want))
			fail_msg("no %s in:\n%s", want, body_of(resp));
	}
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
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

int main(void)
{
#define SQ(t) cmocka_unit_test_setup_teardown(t, ds_sqlite_setup, ds_teardown)
#define PG(t) cmocka_unit_test_setup_teardown(t, ds_pg_setup, ds_teardown)
	const struct CMUnitTest tests[] = {
		SQ(serves_healthz_and_keeps_its_rules),
		SQ(healthz_says_why_it_is_unhealthy),
		SQ(counts_missed_slots),
		SQ(counts_a_lost_slot_and_its_alert),
		SQ(refuses_to_start_without_a_token),
	};
	/* The daemon's store on PostgreSQL: the same requests. */
	const struct CMUnitTest pg_tests[] = {
		PG(serves_healthz_and_keeps_its_rules),
		PG(healthz_says_why_it_is_unhealthy),
		PG(counts_missed_slots),
		PG(counts_a_lost_slot_and_its_alert),
	};
	int rc = cmocka_run_group_tests_name("web_daemon_sqlite", tests, NULL,
					     NULL);
	rc += cmocka_run_group_tests_name("web_daemon_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
