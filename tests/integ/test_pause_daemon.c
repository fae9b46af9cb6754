/*
 * test_pause_daemon.c - `surecron pause` / `resume` and `enabled: false`
 * (issue 17) against real daemons and the real binary:
 *   - a pause made by the CLI is seen by every daemon on the store (two
 *     nodes on PostgreSQL), each slot inside it gets one paused row, none
 *     inside runs or is missed or lost, status shows who, why and until
 *     when, and after the expiry (logged) the schedule fires again;
 *   - resume ends a pause at once (logged); resume of a schedule not
 *     paused is exit 1;
 *   - the CLI refuses a pause without an expiry, over 30 days, with a
 *     long note, for an unknown schedule;
 *   - trigger runs a paused schedule by hand;
 *   - enabled: false fires nothing (no job, no row) and status says
 *     disabled (text and --json), while the others fire;
 *   - POST /api/pause and /api/resume: 401 without the token, 404 for an
 *     unknown schedule, 400 for a bad body, 409 resuming what is not
 *     paused; GET /api/schedules shows the pause;
 *   - simulate --pause: the window's slots are paused, not missed, and
 *     not caught up after a downtime across it;
 *   - on PostgreSQL, a pause and a resume the CLI reported done survive
 *     a crash of the server right after.
 * Every wait is on a condition (a log line, a ledger count), never a
 * fixed sleep. The daemon suites run on SQLite and on the PostgreSQL of
 * tests/pg_fixture.h.
 */
/* Paths here come from tu_tmpdir (at most 255 bytes) and the fixture's
 * URL: -O2 (the release-like build) cannot see those bounds through the
 * inlined helpers and warns of truncations that cannot happen. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

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
#include "pg_fixture.h"
#include "daemon_stores.h"

#define PATIENCE_MS 30000
#define TOKEN "tok-pause-5e1d"

static char g_out[65536], g_err[8192];

/* dir/c.yaml: schedule p every 2 s, q every second (a control), off
 * every second with enabled: false, never on 1 January only; http when
 * not NULL. */
static void write_config(const char *dir, const char *url, const char *http)
{
	char cfg[320], tmp[330];

	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n", url);
	if (http)
		fprintf(f, "http: %s\n", http);
	fprintf(f, "schedules:\n"
		"  p: {cron: \"*/2 * * * * *\", tz: UTC, tasks: [{name: a, "
		"command: [/bin/true]}]}\n"
		"  q: {cron: \"* * * * * *\", tz: UTC, tasks: [{name: b, "
		"command: [/bin/true]}]}\n"
		"  off: {cron: \"* * * * * *\", tz: UTC, enabled: false, "
		"tasks: [{name: c, command: [/bin/true]}]}\n"
		"  never: {cron: \"0 0 1 1 *\", tz: UTC, tasks: [{name: d, "
		"command: [/bin/true]}]}\n");
	fclose(f);
	assert_int_equal(rename(tmp, cfg), 0);
}

/* Runs the binary with args (NULL-ended) in dir; returns its status. */
static int run(const char *dir, const char *const *args)
{
	const char *const env[] = {"SUDO_USER=ops-alice", NULL};
	int rc = tu_run_bin(dir, dir, env, args, g_out, sizeof(g_out), g_err,
			    sizeof(g_err));

	assert_true(rc >= 0);
	return rc;
}

/* Waits until schedule has at least n rows of outcome in the store. */
static bool wait_rows(const char *url, const char *schedule,
		      const char *outcome, size_t n)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	while (tu_ledger_count(url, schedule, outcome) < n) {
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(20);
	}
	return true;
}

/* Waits until schedule has a success row whose slot is at or after t. */
static bool wait_success_after(const char *url, const char *schedule,
			       int64_t t)
{
	int64_t end = tu_now_ms() + PATIENCE_MS, first, last;

	for (;;) {
		struct store *s = tu_store_open(url);
		size_t n = tu_success_span(s, schedule, &first, &last);
		store_close(s);
		if (n > 0 && last >= t)
			return true;
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(20);
	}
}

/* The rows of schedule with outcome; free with store_ledger_rows_free. */
static struct ledger_row *rows_of(const char *url, const char *schedule,
				  const char *outcome, size_t *n)
{
	struct store *s = tu_store_open(url);
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;

	assert_int_equal(store_ledger_query(s, &f, &rows, n, NULL), 0);
	store_close(s);
	return rows;
}

static struct store_pause pause_of(const char *url, const char *schedule)
{
	struct store *s = tu_store_open(url);
	struct store_pause p;

	assert_int_equal(store_pause_get(s, schedule, &p, NULL), 0);
	store_close(s);
	return p;
}

/* The pause, seen by every daemon, its rows, its expiry. */
static void pause_is_seen_recorded_and_expires(void **state)
{
	char dirs[2][256], cfgs[2][320], url[256];
	size_t n_nodes = ds_pg ? 2 : 1;
	(void)state;

	if (ds_pg)
		PGFX_NEED_SERVER();
	for (size_t k = 0; k < n_nodes; k++) {
		snprintf(dirs[k], sizeof(dirs[k]), "%s", tu_tmpdir());
		snprintf(cfgs[k], sizeof(cfgs[k]), "%s/c.yaml", dirs[k]);
	}
	ds_store_url(dirs[0], url, sizeof(url));
	for (size_t k = 0; k < n_nodes; k++) {
		write_config(dirs[k], url, NULL);
		tu_track(tu_start_daemon(dirs[k], cfgs[k], NULL, 0));
	}
	assert_true(wait_rows(url, "p", LEDGER_SUCCESS, 1));

	const char *pause[] = {"pause", "--config", cfgs[0], "--for", "6s",
			       "--note", "db upgrade", "p", NULL};
	assert_int_equal(run(dirs[0], pause), 0);
	assert_non_null(strstr(g_out, "p: paused until "));
	assert_non_null(strstr(g_out, " by ops-alice"));
	struct store_pause pz = pause_of(url, "p");
	assert_string_equal(pz.by, "ops-alice");
	assert_string_equal(pz.note, "db upgrade");
	assert_true(pz.until_ms - pz.from_ms == 6000);

	/* Every node sees it (a CLI on another node too: status). */
	for (size_t k = 0; k < n_nodes; k++)
		assert_true(tu_wait_log(dirs[k], "event=pause_seen schedule=p",
					1, PATIENCE_MS));
	const char *st[] = {"status", "--config", cfgs[n_nodes - 1], "p",
			    NULL};
	assert_int_equal(run(dirs[n_nodes - 1], st), 0);
	assert_non_null(strstr(g_out, "  state    paused by ops-alice until "));
	assert_non_null(strstr(g_out, ": db upgrade  <- surecron resume p"));
	const char *sj[] = {"status", "--config", cfgs[0], "--json", "p", NULL};
	assert_int_equal(run(dirs[0], sj), 0);
	assert_non_null(strstr(g_out, "\"paused\""));
	assert_non_null(strstr(g_out, "\"by\": \"ops-alice\""));
	assert_non_null(strstr(g_out, "\"note\": \"db upgrade\""));
	assert_null(strstr(g_out, "\"disabled\""));

	/* The slots inside: paused rows; after the expiry (logged by every
	 * node) the schedule fires again. */
	assert_true(wait_rows(url, "p", LEDGER_PAUSED, 2));
	for (size_t k = 0; k < n_nodes; k++)
		assert_true(tu_wait_log(dirs[k], "event=pause_expired "
					"schedule=p", 1, PATIENCE_MS));
	assert_true(wait_success_after(url, "p", pz.until_ms));

	/* Nothing inside ran, was missed or lost; each slot of the window
	 * has exactly one paused row, whatever the nodes did. */
	size_t n = 0;
	struct ledger_row *r = rows_of(url, "p", LEDGER_PAUSED, &n);
	assert_true(n >= 2 && n <= 3);
	for (size_t i = 0; i < n; i++) {
		assert_true(r[i].slot_ms >= pz.from_ms &&
			    r[i].slot_ms < pz.until_ms);
		assert_string_equal(r[i].error_class, "paused");
		assert_non_null(strstr(r[i].error_msg, "ops-alice"));
		for (size_t j = 0; j < i; j++)
			assert_true(r[j].slot_ms != r[i].slot_ms);
	}
	store_ledger_rows_free(r, n);
	r = rows_of(url, "p", LEDGER_SUCCESS, &n);
	for (size_t i = 0; i < n; i++)
		assert_false(r[i].slot_ms >= pz.from_ms &&
			     r[i].slot_ms < pz.until_ms);
	store_ledger_rows_free(r, n);
	assert_int_equal(tu_ledger_count(url, "p", LEDGER_MISSED), 0);
	assert_int_equal(tu_ledger_count(url, "p", LEDGER_LOST), 0);
	/* The control schedule was not touched. */
	assert_int_equal(tu_ledger_count(url, "q", LEDGER_PAUSED), 0);
	/* status no longer shows it. */
	assert_int_equal(run(dirs[0], st), 0);
	assert_null(strstr(g_out, "paused by"));
	tu_reap_all();
	for (size_t k = 0; k < n_nodes; k++)
		tu_rmrf(dirs[k]);
}

/* resume ends it now; a second resume has nothing to end. */
static void resume_ends_a_pause(void **state)
{
	char dir[256], cfg[320], url[256];
	(void)state;

	if (ds_pg)
		PGFX_NEED_SERVER();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), NULL);
	tu_track(tu_start_daemon(dir, cfg, NULL, 0));
	assert_true(wait_rows(url, "p", LEDGER_SUCCESS, 1));
	const char *pause[] = {"pause", "--config", cfg, "--for", "1h", "p",
			       NULL};
	assert_int_equal(run(dir, pause), 0);
	assert_true(wait_rows(url, "p", LEDGER_PAUSED, 1));
	const char *resume[] = {"resume", "--config", cfg, "p", NULL};
	int64_t t = tu_now_ms();
	assert_int_equal(run(dir, resume), 0);
	assert_string_equal(g_out, "p: resumed\n");
	assert_true(tu_wait_log(dir, "event=resumed schedule=p", 1,
				PATIENCE_MS));
	assert_true(wait_success_after(url, "p", t));
	struct store_pause pz = pause_of(url, "p");
	assert_true(pz.resumed);
	assert_true(pz.until_ms >= t && pz.until_ms <= tu_now_ms());
	assert_int_equal(run(dir, resume), 1);
	assert_non_null(strstr(g_err, "not paused"));
	assert_int_equal(tu_ledger_count(url, "p", LEDGER_MISSED), 0);
	tu_reap_all();
	tu_rmrf(dir);
}

/* The CLI's rules: an expiry is required, at most 30 days, a short note,
 * a known schedule. */
static void refuses_bad_pauses(void **state)
{
	char dir[256], cfg[320], url[256], note[260];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), NULL);
	memset(note, 'n', 201);
	note[201] = '\0';
	const char *const bad[][9] = {
		{"pause", "--config", cfg, "p", NULL},
		{"pause", "--config", cfg, "--for", "31d", "p", NULL},
		{"pause", "--config", cfg, "--for", "2h", "--until",
		 "2099-01-01T00:00:00Z", "p", NULL},
		{"pause", "--config", cfg, "--until", "2020-01-01T00:00:00Z",
		 "p", NULL},
		{"pause", "--config", cfg, "--for", "soon", "p", NULL},
		{"pause", "--config", cfg, "--for", "2h", "--note", note, "p",
		 NULL},
		{"pause", "--config", cfg, "--for", "2h", "nope", NULL},
		{"resume", "--config", cfg, "nope", NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(run(dir, bad[i]), 2);
	const char *ok[] = {"pause", "--config", cfg, "--for", "30d", "p",
			    NULL};
	assert_int_equal(run(dir, ok), 0);
	struct store_pause pz = pause_of(url, "p");
	assert_true(pz.until_ms - pz.from_ms == STORE_PAUSE_MAX_MS);
	tu_rmrf(dir);
}

/* A paused schedule still runs by hand. */
static void trigger_works_while_paused(void **state)
{
	char dir[256], cfg[320], url[256];
	(void)state;

	if (ds_pg)
		PGFX_NEED_SERVER();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), NULL);
	const char *pause[] = {"pause", "--config", cfg, "--for", "1h",
			       "never", NULL};
	assert_int_equal(run(dir, pause), 0);
	tu_track(tu_start_daemon(dir, cfg, NULL, 0));
	const char *trig[] = {"trigger", "--config", cfg, "never", NULL};
	assert_int_equal(run(dir, trig), 0);
	assert_true(wait_rows(url, "never", LEDGER_SUCCESS, 1));
	tu_reap_all();
	tu_rmrf(dir);
}

/* enabled: false: no job, no row, while the others fire; status says so. */
static void disabled_fires_nothing(void **state)
{
	char dir[256], cfg[320], url[256];
	(void)state;

	if (ds_pg)
		PGFX_NEED_SERVER();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), NULL);
	tu_track(tu_start_daemon(dir, cfg, NULL, 0));
	assert_true(wait_rows(url, "q", LEDGER_SUCCESS, 3));
	assert_int_equal(tu_ledger_count(url, "off", NULL), 0);
	struct store *s = tu_store_open(url);
	struct store_job j;
	for (int64_t t = tu_now_ms() / 1000 * 1000, k = 0; k < 10; k++)
		assert_int_equal(store_job_find(s, "off", t - k * 1000, &j,
						NULL), SC_ENOENT);
	store_close(s);
	const char *st[] = {"status", "--config", cfg, "off", NULL};
	assert_int_equal(run(dir, st), 0);
	assert_non_null(strstr(g_out, "  state    disabled (enabled: false"));
	const char *sj[] = {"status", "--config", cfg, "--json", "off", NULL};
	assert_int_equal(run(dir, sj), 0);
	assert_non_null(strstr(g_out, "\"disabled\": true"));
	/* No job is owed: audit finds no hole in it. */
	const char *au[] = {"audit", "--config", cfg, "--schedule", "off",
			    "--since", "1m", NULL};
	assert_int_equal(run(dir, au), 0);
	const char *sq[] = {"status", "--config", cfg, "q", NULL};
	assert_int_equal(run(dir, sq), 0);
	assert_null(strstr(g_out, "state "));
	tu_reap_all();
	assert_int_equal(tu_ledger_count(url, "off", NULL), 0);
	tu_rmrf(dir);
}

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

/* One HTTP/1.0 request with body (NULL: none) and the token when tok;
 * the whole response into out; returns the status or -1. */
static int http_req(int port, const char *method, const char *path,
		    bool tok, const char *body, char *out, size_t n)
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
			   "127.0.0.1:%d\r\n%sContent-Type: application/json"
			   "\r\nContent-Length: %zu\r\n\r\n%s", method, path,
			   port, tok ? "Authorization: Bearer " TOKEN "\r\n"
				     : "", body ? strlen(body) : 0,
			   body ? body : "");
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

static void api_pauses_and_resumes(void **state)
{
	char dir[256], cfg[320], url[256], http[128], resp[65536];
	(void)state;

	if (ds_pg)
		PGFX_NEED_SERVER();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	int port = free_port();
	snprintf(http, sizeof(http), "{listen: \"127.0.0.1:%d\", token_env: "
		 "SC_WEB_TOKEN}", port);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), http);
	const char *envs[] = {"SC_WEB_TOKEN=" TOKEN, NULL};
	tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));

	const char *good = "{\"schedule\": \"p\", \"for\": \"1h\", "
			   "\"note\": \"reindex\", \"by\": \"bob\"}";
	assert_int_equal(http_req(port, "POST", "/api/pause", false, good,
				  resp, sizeof(resp)), 401);
	assert_int_equal(http_req(port, "POST", "/api/resume", false,
				  "{\"schedule\": \"p\"}", resp,
				  sizeof(resp)), 401);
	assert_int_equal(http_req(port, "POST", "/api/pause", true,
				  "{\"schedule\": \"nope\", \"for\": \"1h\"}",
				  resp, sizeof(resp)), 404);
	assert_int_equal(http_req(port, "POST", "/api/resume", true,
				  "{\"schedule\": \"nope\"}", resp,
				  sizeof(resp)), 404);
	static const char *const bad[] = {
		"[1]", "{\"schedule\": \"p\"}",
		"{\"schedule\": \"p\", \"for\": \"31d\"}",
		"{\"schedule\": \"p\", \"for\": \"1h\", \"until\": "
		"\"2099-01-01T00:00:00Z\"}",
		"{\"schedule\": \"p\", \"until\": \"2020-01-01T00:00:00Z\"}",
		"{\"schedule\": \"p\", \"for\": 5}",
		"{\"for\": \"1h\"}",
		"{\"schedule\": \"p\", \"for\": \"1h\", \"by\": \"\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(http_req(port, "POST", "/api/pause", true,
					  bad[i], resp, sizeof(resp)), 400);
	assert_int_equal(http_req(port, "POST", "/api/resume", true,
				  "{\"schedule\": \"p\"}", resp,
				  sizeof(resp)), 409);
	assert_int_equal(http_req(port, "POST", "/api/pause", true, good,
				  resp, sizeof(resp)), 200);
	assert_non_null(strstr(resp, "\"by\":\"bob\""));
	struct store_pause pz = pause_of(url, "p");
	assert_string_equal(pz.by, "bob");
	assert_string_equal(pz.note, "reindex");
	assert_int_equal(http_req(port, "GET", "/api/schedules", false, NULL,
				  resp, sizeof(resp)), 200);
	assert_non_null(strstr(resp, "\"paused\":{\"by\":\"bob\",\"note\":"
				     "\"reindex\""));
	assert_non_null(strstr(resp, "\"disabled\":true"));
	assert_true(wait_rows(url, "p", LEDGER_PAUSED, 1));
	assert_int_equal(http_req(port, "POST", "/api/resume", true,
				  "{\"schedule\": \"p\"}", resp,
				  sizeof(resp)), 200);
	assert_true(pause_of(url, "p").resumed);
	assert_int_equal(http_req(port, "POST", "/api/resume", true,
				  "{\"schedule\": \"p\"}", resp,
				  sizeof(resp)), 409);
	tu_reap_all();
	tu_rmrf(dir);
}

/* simulate --pause: the slots inside are paused, the others run; a
 * downtime across the window catches up nothing inside it. */
static void simulate_rehearses_a_pause(void **state)
{
	char dir[256], cfg[320];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/h.yaml", dir);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: \"sqlite:%s/unused.db\"\nschedules:\n"
		"  h: {cron: \"0 * * * *\", tz: UTC, catchup: all, tasks: "
		"[{name: a, command: [/bin/true]}]}\n", dir);
	fclose(f);
	const char *sim[] = {"simulate", "--config", cfg, "--from",
			     "2026-01-01T00:00:00Z", "--until",
			     "2026-01-01T06:30:00Z", "--pause",
			     "2026-01-01T02:00:00Z..2026-01-01T04:00:00Z",
			     "--down",
			     "2026-01-01T01:30:00Z..2026-01-01T05:30:00Z",
			     NULL};
	assert_int_equal(run(dir, sim), 0);
	assert_non_null(strstr(g_out, "slot 2026-01-01T02:00:00+00:00 "
				      "paused"));
	assert_non_null(strstr(g_out, "slot 2026-01-01T03:00:00+00:00 "
				      "paused"));
	assert_non_null(strstr(g_out, "5 slots, 5 attempts: 5 succeeded, 0 "
				      "failed, 0 slots lost, 0 missed"));
	const char *longp[] = {"simulate", "--config", cfg, "--from",
			       "2026-01-01T00:00:00Z", "--until",
			       "2026-01-02T00:00:00Z", "--pause",
			       "2026-01-01T00:00:00Z..2026-03-01T00:00:00Z",
			       NULL};
	assert_int_equal(run(dir, longp), 2);
	tu_rmrf(dir);
}

/* A pause the CLI reported done, and its end, survive the database
 * server's crash right after (PostgreSQL: the session commits without
 * waiting for the WAL flush, except for the writes that must not be
 * forgotten; a pause is one). */
static void a_pause_and_its_end_survive_a_server_crash(void **state)
{
	char dir[256], url[1024], cfg[320];

	(void)state;
	if (!pgfx_restartable())
		skip();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), NULL);
	const char *const pause[] = {"pause", "--config", cfg, "p", "--for",
				     "1h", "--note", "vendor outage", NULL};
	const char *const status[] = {"status", "--config", cfg, "p", NULL};
	const char *const resume[] = {"resume", "--config", cfg, "p", NULL};

	assert_int_equal(run(dir, pause), 0);
	assert_int_equal(pgfx_server("crash", NULL, 0), 0);
	assert_int_equal(pgfx_server("start", NULL, 0), 0);
	assert_int_equal(run(dir, status), 0);
	if (!strstr(g_out, "paused by ops-alice"))
		fail_msg("the pause was lost in the crash: %s", g_out);

	assert_int_equal(run(dir, resume), 0);
	assert_int_equal(pgfx_server("crash", NULL, 0), 0);
	assert_int_equal(pgfx_server("start", NULL, 0), 0);
	assert_int_equal(run(dir, status), 0);
	if (strstr(g_out, "paused by"))
		fail_msg("the resume was lost in the crash: %s", g_out);
	tu_rmrf(dir);
}

int main(void)
{
#define SQ(t) cmocka_unit_test_setup_teardown(t, ds_sqlite_setup, ds_teardown)
#define PG(t) cmocka_unit_test_setup_teardown(t, ds_pg_setup, ds_teardown)
	const struct CMUnitTest tests[] = {
		SQ(pause_is_seen_recorded_and_expires),
		SQ(resume_ends_a_pause),
		SQ(refuses_bad_pauses),
		SQ(trigger_works_while_paused),
		SQ(disabled_fires_nothing),
		SQ(api_pauses_and_resumes),
		SQ(simulate_rehearses_a_pause),
	};
	/* On PostgreSQL: two nodes for the pause, the rest as on SQLite. */
	const struct CMUnitTest pg_tests[] = {
		PG(pause_is_seen_recorded_and_expires),
		PG(resume_ends_a_pause),
		PG(trigger_works_while_paused),
		PG(disabled_fires_nothing),
		PG(api_pauses_and_resumes),
		PG(a_pause_and_its_end_survive_a_server_crash),
	};
	int rc = cmocka_run_group_tests_name("pause_daemon_sqlite", tests,
					     NULL, NULL);
	rc += cmocka_run_group_tests_name("pause_daemon_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
