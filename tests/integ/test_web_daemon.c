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
 * refused off loopback without a token, or with its variable unset, or
 * with a token under 16 visible ASCII bytes. Hostile clients (issue 44):
 * a rebinding Host (421), a tokenless GET of a schedule with no alert,
 * wrong tokens (401 late, one log line), a client dripping its headers
 * (cut at the deadline), and /healthz answering beside 64 such clients
 * and 40 looping API readers. The
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
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/time.h>
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

	/* Issue 44, row 9: off loopback, a one-character token (or any
	 * under 16 visible ASCII bytes) is refused by check and by run,
	 * which never listens; the value is never printed. */
	snprintf(http, sizeof(http), "{listen: \"0.0.0.0:%d\", token_env: "
		 "SC_WEB_TOKEN}", free_port());
	write_config(dir, cfg, http);
	static const char *const weak[] = {"SC_WEB_TOKEN=Q",
					   "SC_WEB_TOKEN=Qshort-but-15ch",
					   "SC_WEB_TOKEN=Qhas a space 0123456"};
	for (size_t i = 0; i < sizeof(weak) / sizeof(weak[0]); i++) {
		const char *env3[] = {"SC_WEB_HOOK=https://hooks.example/x",
				      weak[i], NULL};
		assert_int_not_equal(tu_run_bin(dir, dir, env3, check, out,
						sizeof(out), err, sizeof(err)),
				     0);
		assert_non_null(strstr(err, "http.token_env: the token in "
					    "SC_WEB_TOKEN is too weak"));
		if (i) /* the value, never printed */
			assert_null(strstr(err, weak[i] + 13));
		st = tu_run_bin(dir, dir, env3, run, out, sizeof(out), err,
				sizeof(err));
		assert_int_not_equal(st, 0);
		assert_non_null(strstr(err, "event=http_failed"));
		assert_non_null(strstr(err, "too weak"));
		if (i)
			assert_null(strstr(err, weak[i] + 13));
	}
	/* Sixteen visible characters are enough (check only: run would
	 * listen off loopback). */
	const char *env4[] = {"SC_WEB_HOOK=https://hooks.example/x",
			      "SC_WEB_TOKEN=0123456789abcdef", NULL};
	tu_run_bin(dir, dir, env4, check, out, sizeof(out), err, sizeof(err));
	assert_null(strstr(err, "too weak"));
	tu_rmrf(dir);
}

/* ---- issue 44: hostile clients of the web surface ------------------ */

/* A connected socket to 127.0.0.1:port whose reads and writes give up
 * after timeout_ms, or -1. Thread-safe (no assertion). */
static int dial(int port, int timeout_ms)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = timeout_ms / 1000,
			     .tv_usec = (timeout_ms % 1000) * 1000};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends the whole request text and reads the answer (up to n - 1 bytes,
 * until the server closes) within timeout_ms for each read; returns the
 * status, or -1 (refused, cut, or no answer in time). Thread-safe. */
static int raw_req(int port, const char *text, char *out, size_t n,
		   int timeout_ms)
{
	size_t got = 0, len = strlen(text);
	int fd = dial(port, timeout_ms), status = -1;

	out[0] = '\0';
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
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
	if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

/* GET path with the Host header host (NULL: none). */
static int get_as(int port, const char *path, const char *host,
		  const char *extra, char *out, size_t n)
{
	char text[1024];

	snprintf(text, sizeof(text), "GET %s HTTP/1.0\r\n%s%s%s%s\r\n", path,
		 host ? "Host: " : "", host ? host : "", host ? "\r\n" : "",
		 extra ? extra : "");
	return raw_req(port, text, out, n, 20000);
}

/*
 * Issue 44, rows 6, 7, 9 and 14 on loopback: a Host that is not one of
 * the listener's names is 421 on every path (DNS rebinding), its own
 * names with any port pass; a tokenless GET of a schedule with no open
 * alert is answered and the daemon lives on (under the sanitizers, the
 * undefined behaviour of report.c's group() aborted it); a wrong token
 * is a 401 answered late, logged once however many came, never with the
 * token; a client that drips its headers is cut off at the deadline
 * (web.short_deadline: 1 s), and the daemon still exits 0.
 */
/* The Host rows below are formats with the port or without it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void refuses_hostile_clients(void **state)
{
	char dir[256], cfg[320], http[128], resp[16384], host[64];
	(void)state;

	TU_NEED_TEST_SEAMS();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	int port = free_port();
	snprintf(http, sizeof(http), "{listen: \"127.0.0.1:%d\", token_env: "
		 "SC_WEB_TOKEN}", port);
	write_config(dir, cfg, http);
	const char *envs[] = {"SC_WEB_TOKEN=" TOKEN,
			      "SC_WEB_HOOK=https://hooks.example/" HOOK_SECRET,
			      "SURECRON_FAILPOINTS=web.short_deadline:err",
			      NULL};
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));

	/* Row 6: a rebound name is refused on every path... */
	static const char *const paths[] = {"/api/schedules", "/metrics",
					    "/api/lost", "/healthz", "/"};
	static const char *const foreign[] = {
		"evil.example", "evil.example:%d", "127.0.0.1.evil.example:%d",
		"localhost:%d@evil.example", "[::1]x", "127.0.0.1:%dx",
		"attacker.localhost:%d"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		for (size_t k = 0; k < sizeof(foreign) / sizeof(*foreign);
		     k++) {
			snprintf(host, sizeof(host), foreign[k], port);
			int st = get_as(port, paths[i], host, NULL, resp,
					sizeof(resp));
			if (st != 421)
				fail_msg("GET %s Host %s: %d, want 421", paths[i],
					 host, st);
			check_response(resp);
			assert_non_null(strstr(body_of(resp), "\"error\":"));
			assert_null(strstr(resp, "\"schedules\""));
		}
	}
	/* ... and the listener's own names pass, with any port (an SSH
	 * tunnel's), or none, and so does a request without a Host. */
	static const char *const own[] = {"127.0.0.1:%d", "localhost:%d",
					  "LOCALHOST:9000", "localhost.",
					  "[::1]:%d", "127.0.0.1", NULL};
	for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
		if (own[k])
			snprintf(host, sizeof(host), own[k], port);
		int st = get_as(port, "/api/schedules", own[k] ? host : NULL,
				NULL, resp, sizeof(resp));
		if (st != 200)
			fail_msg("GET /api/schedules Host %s: %d, want 200",
				 own[k] ? host : "(none)", st);
	}

	/* Row 14: a tokenless GET of a schedule with no open alert. */
	snprintf(host, sizeof(host), "127.0.0.1:%d", port);
	assert_int_equal(get_as(port, "/api/schedules/tick", host, NULL, resp,
				sizeof(resp)), 200);
	assert_non_null(strstr(body_of(resp), "\"open_alerts\":[]"));
	assert_int_equal(get_as(port, "/healthz", host, NULL, resp,
				sizeof(resp)), 200);

	/* Row 9: wrong tokens are 401s, each answered late; one log line
	 * for all of them, without the token sent. */
	char post[512];
	snprintf(post, sizeof(post), "POST /api/trigger HTTP/1.0\r\nHost: "
		 "127.0.0.1:%d\r\nAuthorization: Bearer guess-canary-5e1f\r\n"
		 "Content-Type: application/json\r\nContent-Length: 21\r\n\r\n"
		 "{\"schedule\": \"tick\"}\n", port);
	for (int i = 0; i < 4; i++) {
		int64_t t0 = tu_now_ms();
		assert_int_equal(raw_req(port, post, resp, sizeof(resp),
					 20000), 401);
		assert_true(tu_now_ms() - t0 >= 200);
	}
	assert_true(tu_wait_log(dir, "event=auth_failed", 1, PATIENCE_MS));
	assert_int_equal(tu_log_count(dir, "event=auth_failed"), 1);
	assert_int_equal(tu_log_count(dir, "guess-canary"), 0);
	assert_int_equal(tu_log_count(dir, TOKEN), 0);

	/* Row 7: a client that drips a header line every 200 ms is cut
	 * off at the deadline (1 s here), long before the idle timeout
	 * (10 s) would have: the server ends the stream. */
	int fd = dial(port, 20000);
	assert_true(fd >= 0);
	snprintf(post, sizeof(post), "GET /healthz HTTP/1.1\r\nHost: "
		 "127.0.0.1:%d\r\n", port);
	assert_int_equal(write(fd, post, strlen(post)), (ssize_t)strlen(post));
	int64_t t0 = tu_now_ms();
	bool cut = false;
	while (!cut && tu_now_ms() - t0 < 8000) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 200) > 0) {
			char b[256];
			cut = read(fd, b, sizeof(b)) <= 0;
			break;
		}
		if (write(fd, "X-Drip: 1\r\n", 11) != 11)
			cut = true;
	}
	close(fd);
	if (!cut)
		fail_msg("a dripping client was not cut off in 8 s");
	assert_int_equal(get_as(port, "/healthz", host, NULL, resp,
				sizeof(resp)), 200);
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
	tu_rmrf(dir);
}
#pragma GCC diagnostic pop

/* The crowd of healthz_answers_beside_a_crowd. */
#define DRIPS 64
#define READERS 40
#define PROBES 60
#define CROWD_SCHEDULES 2000

struct crowd {
	int port;
	atomic_bool stop;
	atomic_int dripping;    /* drip connections open now */
	atomic_long reads;      /* /api/schedules answered 200 */
	atomic_long read_fails; /* ... answered otherwise */
};

/* A slowloris: DRIPS connections, each sending one more header line
 * every second and never the end of its headers; one cut off is opened
 * again. */
static void *drip_main(void *arg)
{
	struct crowd *k = arg;
	struct pollfd pf[DRIPS];
	char start[128];

	snprintf(start, sizeof(start), "GET /healthz HTTP/1.1\r\nHost: "
		 "127.0.0.1:%d\r\n", k->port);
	for (int i = 0; i < DRIPS; i++)
		pf[i].fd = -1;
	while (!atomic_load(&k->stop)) {
		int open_n = 0;
		for (int i = 0; i < DRIPS; i++) {
			if (pf[i].fd < 0 && (pf[i].fd = dial(k->port, 1000)) >= 0 &&
			    write(pf[i].fd, start, strlen(start)) < 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
			if (pf[i].fd >= 0 &&
			    write(pf[i].fd, "X-Drip: 1\r\n", 11) != 11) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
			pf[i].events = POLLIN;
			open_n += pf[i].fd >= 0;
		}
		atomic_store(&k->dripping, open_n);
		/* The drip's pace: a second, or less when one is cut. */
		if (poll(pf, DRIPS, 1000) > 0)
			for (int i = 0; i < DRIPS; i++)
				if (pf[i].fd >= 0 && pf[i].revents) {
					close(pf[i].fd);
					pf[i].fd = -1;
				}
	}
	for (int i = 0; i < DRIPS; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	return NULL;
}

/* A client looping on GET /api/schedules. */
static void *reader_main(void *arg)
{
	struct crowd *k = arg;
	char text[128];
	static _Thread_local char resp[1 << 20];

	snprintf(text, sizeof(text), "GET /api/schedules HTTP/1.0\r\nHost: "
		 "127.0.0.1:%d\r\n\r\n", k->port);
	while (!atomic_load(&k->stop)) {
		if (raw_req(k->port, text, resp, sizeof(resp), 60000) == 200)
			atomic_fetch_add(&k->reads, 1);
		else
			atomic_fetch_add(&k->read_fails, 1);
	}
	return NULL;
}

static int cmp_ms(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/*
 * Issue 44, rows 7 and 8: 64 slowloris connections and 40 clients
 * looping on /api/schedules (2,000 schedules) beside 60 probes of
 * /healthz: every probe is answered 200 within 1 s (a liveness bound, as
 * a load balancer's probe has; 5 s under the sanitizers). Before, the
 * 64 drips held every connection slot and the probes were refused, and
 * /healthz waited behind the readers on the one polling thread. The
 * probes' p50 and p99 are printed.
 */
static void healthz_answers_beside_a_crowd(void **state)
{
	char dir[256], cfg[320], url[700], resp[16384], probe[128];
	struct crowd k = {0};
	pthread_t drip, readers[READERS];
	int64_t lat[PROBES];
	int bound_ms = getenv("SURECRON_SAN") && *getenv("SURECRON_SAN")
		? 5000 : 1000;
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	k.port = free_port();
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nhttp: {listen: \"127.0.0.1:%d\"}\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n", ds_store_url(dir, url, sizeof(url)), k.port);
	for (int i = 0; i < CROWD_SCHEDULES; i++)
		fprintf(f, "  s%04d: {cron: \"0 0 1 1 *\", tz: UTC, targets: "
			"[out], tasks: [{name: a, command: [/bin/true]}]}\n", i);
	fclose(f);
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, NULL, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));

	assert_int_equal(pthread_create(&drip, NULL, drip_main, &k), 0);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&readers[i], NULL, reader_main,
						&k), 0);
	/* The crowd in place: every drip connection open, and the readers
	 * answered (so the probes meet them, not an idle server). */
	int64_t end = tu_now_ms() + PATIENCE_MS * 4;
	while ((atomic_load(&k.dripping) < DRIPS ||
		atomic_load(&k.reads) < READERS) && tu_now_ms() < end)
		tu_sleep_ms(20);
	int answered = 0;
	snprintf(probe, sizeof(probe), "GET /healthz HTTP/1.0\r\nHost: "
		 "127.0.0.1:%d\r\n\r\n", k.port);
	for (int i = 0; i < PROBES; i++) {
		int64_t t0 = tu_now_ms();
		int st = raw_req(k.port, probe, resp, sizeof(resp), bound_ms);
		lat[i] = tu_now_ms() - t0;
		answered += st == 200 && lat[i] <= bound_ms;
		tu_sleep_ms(50); /* the probes' pace, as a balancer's */
	}
	long reads = atomic_load(&k.reads);
	int dripping = atomic_load(&k.dripping);
	atomic_store(&k.stop, true);
	pthread_join(drip, NULL);
	for (int i = 0; i < READERS; i++)
		pthread_join(readers[i], NULL);
	qsort(lat, PROBES, sizeof(lat[0]), cmp_ms);
	printf("healthz beside %d drips and %d readers (%s, %d schedules): "
	       "p50 %lld ms, p99 %lld ms, max %lld ms, %d/%d answered; "
	       "%ld reads, %ld failed\n", dripping, READERS,
	       ds_pg ? "postgresql" : "sqlite", CROWD_SCHEDULES,
	       (long long)lat[PROBES / 2], (long long)lat[PROBES * 99 / 100],
	       (long long)lat[PROBES - 1], answered, PROBES, reads,
	       (long)atomic_load(&k.read_fails));
	assert_int_equal(answered, PROBES);
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
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
		SQ(refuses_hostile_clients),
		SQ(healthz_answers_beside_a_crowd),
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
