/*
 * test_web_api.c - the JSON API under /api/ (docs/api.md) of a real
 * `surecron run` with http.listen on a free loopback port (config takes
 * no port 0; the port is checked in the daemon's log), asked through
 * libcurl, on SQLite and on the
 * PostgreSQL server of the fixture (tb_run_all).
 *
 * The story: a schedule whose task fails until a file exists is
 * triggered, lost, and shows in /api/lost and in /api/schedules (its
 * dead job, its open alert, its last attempts); the file is made, POST
 * /api/retry runs it again, and it is a success in the ledger and
 * "recovered" in /api/lost. A schedule that always fails is lost and
 * acknowledged with POST /api/ack, which closes its alert. Along the way:
 * each endpoint's shape, the answers the CLI gives for the same question
 * (status --json, ledger --lost --json: the same objects), and the
 * refusals: 400 (malformed JSON, a bad field or parameter), 401 (a POST
 * without the token), 403 (a foreign Origin), 404 (no such schedule, job
 * or path), 405, 409 (a job not dead, a done slot triggered), 421 (a
 * rebound Host), and times outside the years 1-9999 (issue 44).
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
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <jansson.h>

#include "daemon_util.h"
#include "store_backend.h"
#include "testutil.h"

#define PATIENCE_MS 30000
#define TOKEN "api-token-5d1c"

struct env {
	char dir[256];
	char cfg[320];
	pid_t pid;
	int port;
	const char *url;
};

/* ---- HTTP through libcurl ------------------------------------------- */

struct resp {
	long status;
	char body[1 << 18];
	size_t len;
	json_t *json; /* the body parsed, or NULL */
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t k = size * n;

	if (r->len + k >= sizeof(r->body))
		return 0;
	memcpy(r->body + r->len, p, k);
	r->len += k;
	r->body[r->len] = '\0';
	return k;
}

enum { WITH_TOKEN = 1, FOREIGN_ORIGIN = 2, REBOUND_HOST = 4 };

/* One request: GET when body is NULL, else POST of body. Fills *r (its
 * json released by the next call or resp_dispose) and returns the
 * status. */
static long req(const struct env *e, const char *path, const char *body,
		int flags, struct resp *r)
{
	char url[2048];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();

	assert_non_null(c);
	json_decref(r->json);
	r->status = 0;
	r->len = 0;
	r->body[0] = '\0';
	r->json = NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", e->port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
	if (flags & WITH_TOKEN) {
		char auth[128];
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", TOKEN);
		h = curl_slist_append(h, auth);
	}
	if (flags & FOREIGN_ORIGIN)
		h = curl_slist_append(h, "Origin: http://evil.example");
	if (flags & REBOUND_HOST) /* a name rebound to 127.0.0.1 */
		h = curl_slist_append(h, "Host: rebound.example:8080");
	if (body) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s: %s", path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	r->json = json_loadb(r->body, r->len, 0, NULL);
	if (!r->json)
		fail_msg("%s: not JSON: %s", path, r->body);
	return r->status;
}

static void resp_dispose(struct resp *r)
{
	json_decref(r->json);
	r->json = NULL;
}

/* An error answer: the status, and {"error": "..."} only. */
static void want_error(const struct env *e, const char *path,
		       const char *body, int flags, long status,
		       struct resp *r)
{
	long got = req(e, path, body, flags, r);
	if (got != status)
		fail_msg("%s %s: %ld, not %ld: %s", body ? "POST" : "GET",
			 path, got, status, r->body);
	assert_true(json_is_object(r->json));
	assert_int_equal(json_object_size(r->json), 1);
	assert_true(json_is_string(json_object_get(r->json, "error")));
}

static json_int_t jint(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		fail_msg("no integer %s", k);
	return json_integer_value(v);
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	if (!s)
		fail_msg("no string %s", k);
	return s;
}

/* The schedule named name in a GET /api/schedules answer. */
static json_t *sched_of(json_t *root, const char *name)
{
	json_t *arr = json_object_get(root, "schedules"), *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (strcmp(jstr(v, "name"), name) == 0)
			return v;
	fail_msg("no schedule %s", name);
	return NULL;
}

/* ---- the daemon ------------------------------------------------------ */

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

static void write_cfg(const struct env *e)
{
	FILE *f = fopen(e->cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n"
		"http: {listen: \"127.0.0.1:%d\", token_env: SC_API_TOKEN}\n"
		"worker: {concurrency: 1, lease: 5s, grace: 1s}\n"
		"targets:\n"
		"  archive: {kind: file, path: ./alerts.jsonl}\n"
		"  out: {kind: file, path: ./out.jsonl}\n"
		"  careful: {kind: file, path: ./careful.jsonl, on_ambiguous: "
		"hold}\n"
		"alerts: {targets: [archive]}\n"
		"schedules:\n"
		"  flaky:\n"
		"    cron: \"0 3 29 2 *\"\n" /* never fires by itself */
		"    tz: Asia/Seoul\n"
		"    targets: [out]\n"
		"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
		"    tasks:\n"
		"      - name: report\n"
		"        shell: \"if [ -e ok ]; then echo fine; else echo "
		"'quota <exceeded>' >&2; exit 75; fi\"\n"
		"  doomed:\n"
		"    cron: \"0 3 29 2 *\"\n"
		"    tz: UTC\n"
		"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
		"    tasks: [{name: t, command: [/bin/false]}]\n"
		"  held:\n"
		"    cron: \"0 3 29 2 *\"\n"
		"    tz: UTC\n"
		"    targets: [careful]\n"
		"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
		"    tasks: [{name: t, command: [/bin/false]}]\n",
		e->url, e->port);
	fclose(f);
}

/* The port the daemon listens on, from its log line
 * "event=http_started ... port=N". */
static int port_from_log(const struct env *e)
{
	char p[512], line[8192];
	int port = 0;

	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *s = strstr(line, "event=http_started");
		const char *q = s ? strstr(s, " port=") : NULL;
		if (q)
			port = atoi(q + 6);
	}
	fclose(f);
	assert_true(port > 0);
	return port;
}

/* false: the backend is not there (the test skips). */
static bool env_start(struct env *e, void **state)
{
	static const char *const envs[] = {"SC_API_TOKEN=" TOKEN,
					   "SURECRON_LOG=debug", NULL};

	memset(e, 0, sizeof(*e));
	e->url = tb_url(state);
	if (!e->url[0])
		return false;
	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->cfg, sizeof(e->cfg), "%s/c.yaml", e->dir);
	e->port = free_port();
	write_cfg(e);
	e->pid = tu_track(tu_start_daemon(e->dir, e->cfg, envs, 0));
	assert_true(tu_wait_log(e->dir, "event=http_started", 1, PATIENCE_MS));
	assert_int_equal(port_from_log(e), e->port);
	return true;
}

/* Stops the daemon: it must exit 0 (under the sanitizers, a leak or a
 * bad access of a handler is a failed exit). */
static void env_stop(struct env *e)
{
	kill(e->pid, SIGTERM);
	int st = tu_wait_exit(e->pid, PATIENCE_MS);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "tail -n 30 '%s/daemon.log'", e->dir);
		(void)system(cmd);
		fail_msg("the daemon did not exit 0 (status %d)", st);
	}
	tu_rmrf(e->dir);
}

/* Runs the CLI on the test's config; returns its exit status. */
static int cli(const struct env *e, char *out, size_t n, const char *a1,
	       const char *a2, const char *a3)
{
	char err[8192];
	const char *args[] = {a1, "--config", e->cfg, a2, a3, NULL};

	return tu_run_bin(e->dir, e->dir, NULL, args, out, n, err,
			  sizeof(err));
}

/* Waits until GET path answers 200 with integer key equal to want. */
static void wait_count(const struct env *e, const char *path,
		       const char *key, json_int_t want, struct resp *r)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		assert_int_equal(req(e, path, NULL, 0, r), 200);
		if (jint(r->json, key) == want)
			return;
		if (tu_now_ms() > end)
			fail_msg("%s: %s never %lld: %s", path, key,
				 (long long)want, r->body);
		tu_sleep_ms(50);
	}
}

/* The same object as `status --json` prints (the API adds "recent").
 * Read again until the two agree: the alerter may write a row between
 * the API's read and the CLI's, and both must show the state it left. */
static void same_as_status(const struct env *e, const char *name,
			   struct resp *r)
{
	static char out[1 << 16];
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		assert_int_equal(req(e, "/api/schedules", NULL, 0, r), 200);
		json_t *copy = json_deep_copy(sched_of(r->json, name));
		assert_non_null(copy);
		assert_int_equal(json_object_del(copy, "recent"), 0);
		assert_int_equal(cli(e, out, sizeof(out), "status", "--json",
				     name), 0);
		json_t *st = json_loads(out, 0, NULL);
		assert_non_null(st);
		json_t *cli_o = json_array_get(json_object_get(st, "schedules"),
					       0);
		bool same = json_equal(copy, cli_o);
		if (!same && tu_now_ms() > end) {
			char *a = json_dumps(copy, 0), *b = json_dumps(cli_o, 0);
			fail_msg("api %s\ncli %s", a, b);
		}
		json_decref(copy);
		json_decref(st);
		if (same)
			return;
		tu_sleep_ms(50);
	}
}

/* The same rows as `ledger --json ARG` prints for GET path, read again
 * until the two agree, as same_as_status: the daemon may still write a
 * row of the run just done between the API's read and the CLI's (seen
 * under TSan's slowdown). */
static void same_as_ledger(const struct env *e, const char *path,
			   const char *arg, struct resp *r)
{
	static char out[1 << 16];
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		assert_int_equal(req(e, path, NULL, 0, r), 200);
		assert_int_equal(cli(e, out, sizeof(out), "ledger", "--json",
				     arg), 0);
		json_t *cl = json_loads(out, 0, NULL);
		assert_non_null(cl);
		bool same = json_equal(cl, r->json);
		if (!same && tu_now_ms() > end) {
			char *a = json_dumps(cl, 0);
			fail_msg("api %s\ncli %s", r->body, a);
		}
		json_decref(cl);
		if (same)
			return;
		tu_sleep_ms(50);
	}
}

/* ---- the tests ------------------------------------------------------- */

static void lost_retried_recovered(void **state)
{
	struct env e;
	static struct resp r;
	static char out[1 << 16];
	char body[256], path[256];

	if (!env_start(&e, state))
		skip();

	/* The list before anything ran: every schedule, config order. */
	assert_int_equal(req(&e, "/api/schedules", NULL, 0, &r), 200);
	json_t *arr = json_object_get(r.json, "schedules");
	assert_int_equal(json_array_size(arr), 3);
	assert_string_equal(jstr(json_array_get(arr, 0), "name"), "flaky");
	assert_string_equal(jstr(json_array_get(arr, 1), "name"), "doomed");
	assert_string_equal(jstr(r.json, "store"),
			    tb_is_sqlite(state) ? "sqlite" : "postgresql");
	assert_true(jint(r.json, "now_ms") > 0);
	assert_non_null(json_object_get(r.json, "other_jobs"));
	json_t *fl = sched_of(r.json, "flaky");
	assert_string_equal(jstr(fl, "zone"), "Asia/Seoul");
	/* The next slot in its zone: 29 February, 03:00 KST. */
	assert_non_null(strstr(jstr(fl, "next"), "-02-29T03:00:00+09:00"));
	assert_true(jint(fl, "next_ms") > jint(r.json, "now_ms"));
	assert_true(json_is_string(json_object_get(fl, "class")));
	json_t *pol = json_object_get(fl, "policy");
	assert_int_equal(jint(pol, "attempts"), 1);
	assert_string_equal(jstr(pol, "backoff"), "fixed");
	assert_string_equal(jstr(pol, "source"), "config");
	assert_true(json_is_null(json_object_get(fl, "last")));
	assert_int_equal(json_array_size(json_object_get(fl, "recent")), 0);
	assert_int_equal(json_array_size(json_object_get(fl, "open_alerts")),
			 0);
	assert_int_equal(jint(json_object_get(fl, "jobs"), "dead"), 0);

	/* Lost: the task fails, one attempt. */
	assert_int_equal(cli(&e, out, sizeof(out), "trigger", "flaky", NULL),
			 0);
	wait_count(&e, "/api/lost", "lost", 1, &r);
	assert_int_equal(jint(r.json, "missed"), 0);
	assert_int_equal(jint(r.json, "recovered"), 0);
	json_t *row = json_array_get(json_object_get(r.json, "rows"), 0);
	assert_string_equal(jstr(row, "schedule"), "flaky");
	assert_string_equal(jstr(row, "outcome"), "lost");
	assert_non_null(strstr(jstr(row, "error"), "quota <exceeded>"));
	json_int_t job = jint(row, "job");
	json_int_t slot_ms = jint(row, "slot_ms");
	assert_true(json_is_null(json_object_get(row, "recovered_at")));
	/* The same report as `ledger --lost --json`. */
	assert_int_equal(cli(&e, out, sizeof(out), "ledger", "--lost",
			     "--json"), 1);
	json_t *cl = json_loads(out, 0, NULL);
	assert_non_null(cl);
	assert_true(json_equal(cl, r.json));
	json_decref(cl);
	/* Its period and schedule narrow it. */
	assert_int_equal(req(&e, "/api/lost?schedule=doomed", NULL, 0, &r),
			 200);
	assert_int_equal(jint(r.json, "lost"), 0);
	snprintf(path, sizeof(path), "/api/lost?since=%lld",
		 (long long)slot_ms + 1);
	assert_int_equal(req(&e, path, NULL, 0, &r), 200);
	assert_int_equal(jint(r.json, "lost"), 0);
	assert_int_equal(req(&e, "/api/lost?since=30d&until=2099-01-01T00:00:"
			     "00Z", NULL, 0, &r), 200);
	assert_int_equal(jint(r.json, "lost"), 1);

	/* In the list: its dead job, open alert, last outcome, attempts;
	 * the object is status --json's. */
	int64_t end = tu_now_ms() + PATIENCE_MS;
	for (;;) {
		assert_int_equal(req(&e, "/api/schedules", NULL, 0, &r), 200);
		fl = sched_of(r.json, "flaky");
		if (json_array_size(json_object_get(fl, "open_alerts")) == 1)
			break;
		assert_true(tu_now_ms() < end);
		tu_sleep_ms(50);
	}
	assert_int_equal(jint(json_object_get(fl, "jobs"), "dead"), 1);
	/* "last" is the newest row of the newest slot, as in status: here
	 * the alert's row, written after the lost one. */
	assert_int_equal(jint(json_object_get(fl, "last"), "slot_ms"),
			 slot_ms);
	json_t *rec = json_object_get(fl, "recent");
	assert_int_equal(json_array_size(rec), 1);
	assert_string_equal(jstr(json_array_get(rec, 0), "outcome"), "lost");
	assert_int_equal(jint(json_array_get(rec, 0), "job"), job);
	same_as_status(&e, "flaky", &r);

	/* Retry refused: malformed, unknown, no token, foreign origin. */
	want_error(&e, "/api/retry", "{\"job\": ", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/retry", "[1]", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/retry", "", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/retry", "{\"job\": \"7\"}", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/retry", "{\"job\": -1}", WITH_TOKEN, 400, &r);
	snprintf(body, sizeof(body), "{\"job\": %lld, \"by\": \"%065d\"}",
		 (long long)job, 0);
	want_error(&e, "/api/retry", body, WITH_TOKEN, 400, &r);
	want_error(&e, "/api/retry", "{\"job\": 999999}", WITH_TOKEN, 404, &r);
	snprintf(body, sizeof(body), "{\"job\": %lld}", (long long)job);
	want_error(&e, "/api/retry", body, 0, 401, &r);
	want_error(&e, "/api/retry", body, WITH_TOKEN | FOREIGN_ORIGIN, 403,
		   &r);
	want_error(&e, "/api/retry", NULL, WITH_TOKEN, 405, &r);
	want_error(&e, "/api/schedules", "{}", WITH_TOKEN, 405, &r);
	/* The route table (web_route.c): every path in it takes one
	 * method; /healthz and /metrics are GET only too, and a path under
	 * /api/ that is not in it is 404 whatever the method. */
	want_error(&e, "/api/slots/x/y", "{}", WITH_TOKEN, 405, &r);
	want_error(&e, "/healthz", "{}", WITH_TOKEN, 405, &r);
	want_error(&e, "/metrics", "{}", WITH_TOKEN, 405, &r);
	want_error(&e, "/api/nope", "{}", WITH_TOKEN, 404, &r);
	want_error(&e, "/api/nope", NULL, WITH_TOKEN, 404, &r);
	want_error(&e, "/api/schedules/a/b", NULL, WITH_TOKEN, 404, &r);

	/* Fixed, retried: a success in the ledger, recovered in the report. */
	char ok[400];
	snprintf(ok, sizeof(ok), "%s/ok", e.dir);
	FILE *f = fopen(ok, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(req(&e, "/api/retry", body, WITH_TOKEN, &r), 200);
	assert_int_equal(jint(r.json, "job"), job);
	assert_string_equal(jstr(r.json, "state"), "ready");
	assert_int_equal(jint(r.json, "attempts"), 1);
	wait_count(&e, "/api/lost", "recovered", 1, &r);
	assert_int_equal(jint(r.json, "lost"), 0);
	row = json_array_get(json_object_get(r.json, "rows"), 0);
	assert_true(json_is_string(json_object_get(row, "recovered_at")));
	/* Done now: a second retry is refused. */
	want_error(&e, "/api/retry", body, WITH_TOKEN, 409, &r);

	/* One schedule: the list's object. */
	assert_int_equal(req(&e, "/api/schedules", NULL, 0, &r), 200);
	json_t *listed = json_incref(sched_of(r.json, "flaky"));
	assert_int_equal(req(&e, "/api/schedules/flaky", NULL, 0, &r), 200);
	assert_string_equal(jstr(r.json, "name"), "flaky");
	assert_true(json_equal(json_object_get(r.json, "jobs"),
			       json_object_get(listed, "jobs")));
	assert_int_equal(json_array_size(json_object_get(r.json, "recent")),
			 2);
	json_decref(listed);

	/* The ledger: ledger --json's rows, with its filters. */
	same_as_ledger(&e, "/api/ledger?schedule=flaky", "--schedule=flaky",
		       &r);
	assert_int_equal(req(&e, "/api/ledger?schedule=flaky&outcome=success",
			     NULL, 0, &r), 200);
	json_t *rows = json_object_get(r.json, "rows");
	assert_int_equal(json_array_size(rows), 1);
	assert_int_equal(jint(json_array_get(rows, 0), "job"), job);
	assert_int_equal(jint(json_array_get(rows, 0), "attempt"), 2);
	assert_int_equal(req(&e, "/api/ledger?limit=1", NULL, 0, &r), 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "rows")), 1);
	want_error(&e, "/api/ledger?outcome=great", NULL, 0, 400, &r);
	want_error(&e, "/api/ledger?limit=0", NULL, 0, 400, &r);
	want_error(&e, "/api/ledger?limit=5001", NULL, 0, 400, &r);
	want_error(&e, "/api/ledger?limit=ten", NULL, 0, 400, &r);
	want_error(&e, "/api/ledger?schedule=nope", NULL, 0, 404, &r);

	/* The slot: its job, rows, timeline, send states, marker; by
	 * milliseconds and by ISO 8601. */
	char iso[64];
	snprintf(path, sizeof(path), "/api/slots/flaky/%lld",
		 (long long)slot_ms);
	assert_int_equal(req(&e, path, NULL, 0, &r), 200);
	snprintf(iso, sizeof(iso), "%s", jstr(r.json, "slot"));
	assert_string_equal(jstr(r.json, "schedule"), "flaky");
	assert_int_equal(jint(r.json, "slot_ms"), slot_ms);
	json_t *jj = json_object_get(r.json, "job");
	assert_int_equal(jint(jj, "id"), job);
	assert_string_equal(jstr(jj, "state"), "done");
	assert_int_equal(jint(jj, "attempts"), 2);
	json_t *att = json_object_get(r.json, "attempts");
	assert_true(json_array_size(att) >= 2);
	assert_string_equal(jstr(json_array_get(att, 0), "outcome"), "lost");
	json_t *tl = json_object_get(r.json, "timeline");
	assert_int_equal(json_array_size(tl), 1);
	assert_int_equal(jint(json_array_get(tl, 0), "attempt"), 1);
	assert_int_equal(jint(json_array_get(tl, 0), "at_ms"), slot_ms);
	json_t *sends = json_object_get(r.json, "sends");
	assert_int_equal(json_array_size(sends), 1);
	assert_string_equal(jstr(json_array_get(sends, 0), "target"), "out");
	assert_string_equal(jstr(json_array_get(sends, 0), "kind"), "file");
	assert_string_equal(jstr(json_array_get(sends, 0), "state"), "sent");
	assert_true(json_is_true(json_object_get(r.json, "marker")));
	snprintf(path, sizeof(path), "/api/slots/flaky/%s", iso);
	assert_int_equal(req(&e, path, NULL, 0, &r), 200);
	assert_int_equal(jint(r.json, "slot_ms"), slot_ms);
	/* A slot nothing happened to: no job, the schedule's plan. */
	assert_int_equal(req(&e, "/api/slots/doomed/1000", NULL, 0, &r), 200);
	assert_true(json_is_null(json_object_get(r.json, "job")));
	assert_int_equal(json_array_size(json_object_get(r.json, "attempts")),
			 0);
	assert_true(json_is_false(json_object_get(r.json, "marker")));
	want_error(&e, "/api/slots/nope/1000", NULL, 0, 404, &r);
	want_error(&e, "/api/slots/flaky/soon", NULL, 0, 400, &r);
	want_error(&e, "/api/slots/flaky", NULL, 0, 404, &r);
	/* Issue 44, row 13: the years 1-9999, as every command takes:
	 * no age that reaches before the year 1, no Unix milliseconds past
	 * 9999 (the API took both, and ack could not name them). */
	want_error(&e, "/api/slots/flaky/3652425d", NULL, 0, 400, &r);
	want_error(&e, "/api/slots/flaky/999999999999999", NULL, 0, 400, &r);
	want_error(&e, "/api/lost?since=3652425d", NULL, 0, 400, &r);
	want_error(&e, "/api/ledger?until=253402300800000", NULL, 0, 400, &r);
	assert_int_equal(req(&e, "/api/ledger?until=253402300799999", NULL, 0,
			     &r), 200);
	want_error(&e, "/api/trigger", "{\"schedule\": \"doomed\", \"slot\": "
		   "999999999999999}", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/trigger", "{\"schedule\": \"doomed\", \"slot\": "
		   "\"999999999999999\"}", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/pause", "{\"schedule\": \"doomed\", \"until\": "
		   "999999999999999}", WITH_TOKEN, 400, &r);
	/* Issue 44, row 6: a rebound name is refused, read or action. */
	want_error(&e, "/api/schedules", NULL, REBOUND_HOST, 421, &r);
	want_error(&e, "/api/lost", NULL, REBOUND_HOST, 421, &r);
	want_error(&e, "/api/trigger", "{\"schedule\": \"doomed\"}",
		   WITH_TOKEN | REBOUND_HOST, 421, &r);

	/* Trigger: a done slot is refused; a new one runs. */
	snprintf(body, sizeof(body), "{\"schedule\": \"flaky\", \"slot\": "
		 "%lld}", (long long)slot_ms);
	want_error(&e, "/api/trigger", body, WITH_TOKEN, 409, &r);
	snprintf(body, sizeof(body), "{\"schedule\": \"flaky\", \"slot\": "
		 "\"%s\"}", iso);
	want_error(&e, "/api/trigger", body, WITH_TOKEN, 409, &r);
	want_error(&e, "/api/trigger", "{\"schedule\": \"nope\"}",
		   WITH_TOKEN, 404, &r);
	want_error(&e, "/api/trigger", "{\"slot\": 1000}", WITH_TOKEN, 400,
		   &r);
	want_error(&e, "/api/trigger", "{\"schedule\": \"flaky\", "
		   "\"slot\": true}", WITH_TOKEN, 400, &r);
	want_error(&e, "/api/trigger", "{\"schedule\": \"doomed\"}", 0, 401,
		   &r);
	assert_int_equal(req(&e, "/api/trigger", "{\"schedule\": \"doomed\", "
			     "\"by\": \"ops\"}", WITH_TOKEN, &r), 200);
	assert_true(json_is_true(json_object_get(r.json, "created")));
	json_int_t djob = jint(r.json, "job");
	json_int_t dslot = jint(r.json, "slot_ms");
	assert_true(djob > job);
	assert_true(json_is_string(json_object_get(r.json, "state")));
	/* Lost, alerted; ack closes the alert. */
	end = tu_now_ms() + PATIENCE_MS;
	json_t *dm;
	for (;;) {
		assert_int_equal(req(&e, "/api/schedules/doomed", NULL, 0, &r),
				 200);
		dm = r.json;
		if (json_array_size(json_object_get(dm, "open_alerts")) == 1)
			break;
		assert_true(tu_now_ms() < end);
		tu_sleep_ms(50);
	}
	assert_string_equal(jstr(json_array_get(json_object_get(
		dm, "open_alerts"), 0), "reason"), "lost");
	snprintf(body, sizeof(body), "{\"schedule\": \"doomed\", \"slot\": "
		 "%lld, \"note\": \"known outage\", \"by\": \"ops\"}",
		 (long long)dslot);
	want_error(&e, "/api/ack", body, 0, 401, &r);
	want_error(&e, "/api/ack", "{\"schedule\": \"doomed\"}", WITH_TOKEN,
		   400, &r);
	char longnote[400];
	snprintf(longnote, sizeof(longnote), "{\"schedule\": \"doomed\", "
		 "\"slot\": %lld, \"note\": \"%0201d\"}", (long long)dslot, 0);
	want_error(&e, "/api/ack", longnote, WITH_TOKEN, 400, &r);
	want_error(&e, "/api/ack", "{\"schedule\": \"doomed\", \"slot\": "
		   "1000}", WITH_TOKEN, 409, &r);
	assert_int_equal(req(&e, "/api/ack", body, WITH_TOKEN, &r), 200);
	assert_int_equal(jint(r.json, "closed"), 1);
	assert_int_equal(req(&e, "/api/schedules/doomed", NULL, 0, &r), 200);
	assert_int_equal(json_array_size(json_object_get(r.json,
							 "open_alerts")), 0);
	assert_int_equal(req(&e, "/api/lost?schedule=doomed", NULL, 0, &r),
			 200);
	assert_int_equal(jint(r.json, "lost"), 0);
	assert_int_equal(jint(r.json, "acked"), 1);
	row = json_array_get(json_object_get(r.json, "rows"), 0);
	assert_true(json_is_string(json_object_get(row, "acked_at")));
	/* The ack is in the ledger with its note and who. */
	assert_int_equal(req(&e, "/api/ledger?schedule=doomed&outcome=acked",
			     NULL, 0, &r), 200);
	json_t *det = json_object_get(json_array_get(json_object_get(
		r.json, "rows"), 0), "details");
	assert_string_equal(jstr(det, "note"), "known outage");
	assert_string_equal(jstr(det, "by"), "ops");

	/* Release: only a held send of one of the schedule's targets. */
	snprintf(body, sizeof(body), "{\"schedule\": \"flaky\", \"slot\": "
		 "%lld, \"target\": \"out\", \"decision\": \"arrived\"}",
		 (long long)slot_ms);
	want_error(&e, "/api/release", body, 0, 401, &r);
	want_error(&e, "/api/release", body, WITH_TOKEN, 409, &r);
	snprintf(body, sizeof(body), "{\"schedule\": \"flaky\", \"slot\": "
		 "1000, \"target\": \"out\", \"decision\": \"resend\"}");
	want_error(&e, "/api/release", body, WITH_TOKEN, 404, &r);
	snprintf(body, sizeof(body), "{\"schedule\": \"flaky\", \"slot\": "
		 "%lld, \"target\": \"archive\", \"decision\": "
		 "\"arrived\"}", (long long)slot_ms);
	want_error(&e, "/api/release", body, WITH_TOKEN, 404, &r);
	snprintf(body, sizeof(body), "{\"schedule\": \"flaky\", \"slot\": "
		 "%lld, \"target\": \"out\", \"decision\": \"maybe\"}",
		 (long long)slot_ms);
	want_error(&e, "/api/release", body, WITH_TOKEN, 400, &r);

	/* Unknown names and bad parameters. */
	want_error(&e, "/api/schedules/nope", NULL, 0, 404, &r);
	want_error(&e, "/api/lost?schedule=nope", NULL, 0, 404, &r);
	want_error(&e, "/api/lost?since=yesterday", NULL, 0, 400, &r);
	want_error(&e, "/api/lost?until=%3Cscript%3E", NULL, 0, 400, &r);
	assert_null(strstr(r.body, "script"));
	want_error(&e, "/api/nothing", NULL, 0, 404, &r);

	resp_dispose(&r);
	env_stop(&e);
}

/* A send held after a crash (made here in the store as a crash leaves
 * it: SENDING, then UNKNOWN), released through POST /api/release: SENT,
 * the decision in the ledger with who and through what, the dead job
 * ready again, and the slot finished without running its task again. */
/* One row of schedule name at slot_ms, written now. */
static void put_row(struct store *s, const char *name, int64_t slot_ms,
		    const char *outcome)
{
	struct sc_err err = {0};
	struct ledger_row r = {.slot_ms = slot_ms, .attempt = 1,
			       .started_ms = slot_ms + 10,
			       .finished_ms = slot_ms + 900};

	snprintf(r.schedule, sizeof(r.schedule), "%s", name);
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(s, &r, &err), 0);
}

/* The strip of /api/schedules (issue 45: read over widening periods,
 * not the schedule's whole ledger): attempts weeks old still show when
 * nothing newer does, an ack is never one, and with more than 12 recent
 * attempts the 12 newest show, oldest first. */
static void recent_reaches_back(const struct env *e, struct resp *r)
{
	const int64_t day = 86400000, now = tu_now_ms() / 1000 * 1000;
	struct store *s = tu_store_open(e->url);

	for (int d = 40; d >= 20; d -= 10)
		put_row(s, "doomed", now - d * day, LEDGER_SUCCESS);
	put_row(s, "doomed", now - day, LEDGER_ACKED);
	assert_int_equal(req(e, "/api/schedules/doomed", NULL, 0, r), 200);
	json_t *rec = json_object_get(r->json, "recent");
	assert_int_equal(json_array_size(rec), 3);
	assert_int_equal(jint(json_array_get(rec, 0), "slot_ms"),
			 now - 40 * day);
	assert_int_equal(jint(json_array_get(rec, 2), "slot_ms"),
			 now - 20 * day);

	for (int h = 14; h >= 1; h--)
		put_row(s, "doomed", now - h * 3600000, h == 3 ? LEDGER_FAILED
							       : LEDGER_SUCCESS);
	store_close(s);
	assert_int_equal(req(e, "/api/schedules/doomed", NULL, 0, r), 200);
	rec = json_object_get(r->json, "recent");
	assert_int_equal(json_array_size(rec), 12);
	assert_int_equal(jint(json_array_get(rec, 0), "slot_ms"),
			 now - 12 * 3600000);
	assert_string_equal(jstr(json_array_get(rec, 9), "outcome"),
			    LEDGER_FAILED);
	assert_int_equal(jint(json_array_get(rec, 11), "slot_ms"),
			 now - 3600000);
}

static void held_send_released(void **state)
{
	struct env e;
	static struct resp r;
	char body[512], path[256];
	struct sc_err err = {0};

	if (!env_start(&e, state))
		skip();
	assert_int_equal(req(&e, "/api/trigger", "{\"schedule\": \"held\"}",
			     WITH_TOKEN, &r), 200);
	json_int_t job = jint(r.json, "job"), slot_ms = jint(r.json, "slot_ms");
	wait_count(&e, "/api/lost?schedule=held", "lost", 1, &r);

	/* The crash's trace: a composed message whose send may have left. */
	struct store *s = tu_store_open(e.url);
	int n = 0;
	assert_int_equal(store_outbox_put(s, "held", slot_ms, "careful",
					  "{\"kind\":\"result\"}", NULL, &err),
			 0);
	assert_int_equal(store_outbox_set_state(s, "held", slot_ms, "careful",
						SEND_SENDING, &err), 0);
	assert_int_equal(store_outbox_mark_unknown(s, "held", slot_ms, &n,
						   &err), 0);
	assert_int_equal(n, 1);
	store_close(s);
	snprintf(path, sizeof(path), "/api/slots/held/%lld", (long long)slot_ms);
	assert_int_equal(req(&e, path, NULL, 0, &r), 200);
	json_t *send = json_array_get(json_object_get(r.json, "sends"), 0);
	assert_string_equal(jstr(send, "target"), "careful");
	assert_string_equal(jstr(send, "state"), "unknown");
	assert_string_equal(jstr(json_object_get(r.json, "job"), "state"),
			    "dead");

	/* Arrived: SENT, recorded, the job goes on and finishes the slot. */
	snprintf(body, sizeof(body), "{\"schedule\": \"held\", \"slot\": "
		 "%lld, \"target\": \"careful\", \"decision\": \"arrived\", "
		 "\"by\": \"ops on call\"}", (long long)slot_ms);
	want_error(&e, "/api/release", body, 0, 401, &r);
	assert_int_equal(req(&e, "/api/release", body, WITH_TOKEN, &r), 200);
	assert_string_equal(jstr(r.json, "target"), "careful");
	assert_string_equal(jstr(r.json, "state"), "sent");
	assert_true(json_is_true(json_object_get(r.json, "job_revived")));
	assert_int_equal(jint(r.json, "job"), job);
	/* Not held any more: a second decision is refused, and the answer
	 * says what the send is now. */
	want_error(&e, "/api/release", body, WITH_TOKEN, 409, &r);
	assert_non_null(strstr(jstr(r.json, "error"), "(it is sent)"));
	/* The orchestrator writes the marker, then the worker completes the
	 * job (src/worker.c): two commits, so wait for both. */
	int64_t end = tu_now_ms() + PATIENCE_MS;
	for (;;) {
		assert_int_equal(req(&e, path, NULL, 0, &r), 200);
		if (json_is_true(json_object_get(r.json, "marker")) &&
		    strcmp(jstr(json_object_get(r.json, "job"), "state"),
			   "done") == 0)
			break;
		assert_true(tu_now_ms() < end);
		tu_sleep_ms(50);
	}
	send = json_array_get(json_object_get(r.json, "sends"), 0);
	assert_string_equal(jstr(send, "state"), "sent");
	/* The decision row: who, what, through what. */
	json_t *rows = json_object_get(r.json, "attempts"), *row, *dec = NULL;
	size_t i;
	json_array_foreach(rows, i, row)
		if (strcmp(jstr(row, "outcome"), "decision") == 0)
			dec = json_object_get(row, "details");
	assert_non_null(dec);
	assert_string_equal(jstr(dec, "target"), "careful");
	assert_string_equal(jstr(dec, "decision"), "arrived");
	assert_string_equal(jstr(dec, "by"), "ops on call");
	assert_string_equal(jstr(dec, "via"), "http api");
	/* The task did not run again: one attempt row, the lost one. */
	size_t n_att = 0;
	json_array_foreach(rows, i, row)
		n_att += strcmp(jstr(row, "outcome"), "lost") == 0 ||
			 strcmp(jstr(row, "outcome"), "failed") == 0;
	assert_int_equal(n_att, 1);

	recent_reaches_back(&e, &r);
	resp_dispose(&r);
	env_stop(&e);
}

int main(void)
{
	struct CMUnitTest both[] = {
		cmocka_unit_test(lost_retried_recovered),
		cmocka_unit_test(held_send_released),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	int failed = tb_run_all("test_web_api", both,
				sizeof(both) / sizeof(both[0]));
	tu_reap_all();
	curl_global_cleanup();
	return failed;
}
