/*
 * test_alerts.c - loud loss, end to end (issue 13): real daemons of
 * $SURECRON_BIN on a real SQLite file or PostgreSQL schema, a real alert
 * receiver on 127.0.0.1 that is down (port closed) when the test says so,
 * and the CLI (`ack`, `ledger --lost`, `retry`) as an operator runs it.
 *
 * Every test waits for what it needs (a request, a ledger row, a state)
 * with a deadline only a broken daemon reaches. "Once" is checked after
 * the alert's send row is SENT: a SENT row is never claimed again, so no
 * later copy can come from it.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>

#include "alert.h"
#include "clock.h"
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
	struct fake_http *hook;   /* the results' receiver: always up */
	struct fake_http *alert;  /* the alert receiver: NULL while down */
	int alert_port;
};

/* The alert receiver comes up (again) on its port. */
static void alert_up(struct env *e)
{
	for (int i = 0; i < 100 && !e->alert; i++) {
		e->alert = fake_http_start_on(e->alert_port);
		if (!e->alert)
			tu_sleep_ms(20); /* the old socket is still closing */
	}
	assert_non_null(e->alert);
	fake_http_set_default(e->alert, "/alert", 200, NULL, "ok");
}

static void alert_down(struct env *e)
{
	fake_http_stop(e->alert);
	e->alert = NULL;
}

/* alert_up_first: whether the alert receiver is up at the start. */
static void env_init(struct env *e, bool alert_up_first)
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
	e->hook = fake_http_start();
	assert_non_null(e->hook);
	fake_http_set_default(e->hook, "/hook", 200, NULL, "ok");
	setenv("ALERTS_HOOK_URL", fake_http_url(e->hook, "/hook", url,
						sizeof(url)), 1);
	/* A port of our own: taken from a receiver that is stopped at once
	 * when the test starts with the alert receiver down. */
	e->alert = fake_http_start();
	assert_non_null(e->alert);
	e->alert_port = fake_http_port(e->alert);
	fake_http_set_default(e->alert, "/alert", 200, NULL, "ok");
	setenv("ALERTS_ONCALL_URL", fake_http_url(e->alert, "/alert", url,
						  sizeof(url)), 1);
	if (!alert_up_first)
		alert_down(e);
}

static void env_dispose(struct env *e)
{
	fake_http_stop(e->hook);
	fake_http_stop(e->alert);
	tu_rmrf(e->dir);
}

/* alerts: the lines under `alerts:`; schedules: verbatim. */
static void write_cfg(struct env *e, const char *alerts,
		      const char *schedules)
{
	FILE *f = fopen(e->cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 1, lease: 2s, grace: 1s}\n"
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: ALERTS_HOOK_URL}\n"
		   "  oncall: {kind: webhook, url_env: ALERTS_ONCALL_URL}\n"
		   "  archive: {kind: file, path: ./alerts.jsonl}\n"
		   "alerts:\n%s"
		   "schedules:\n%s",
		e->store_url, alerts, schedules);
	fclose(f);
}

static pid_t start_daemon(const struct env *e, const char *const *envs)
{
	const char *all[16] = {"SURECRON_LOG=debug"};
	size_t n = 1;

	for (size_t i = 0; envs && envs[i] && n < 15; i++)
		all[n++] = envs[i];
	return tu_track(tu_start_daemon(e->dir, e->cfg, all, 0));
}

static void stop_daemon(pid_t pid)
{
	tu_stop_daemon(pid, 10000);
}

static bool wait_log(const struct env *e, const char *needle, size_t n)
{
	return tu_wait_log(e->dir, needle, n, PATIENCE_MS);
}

static int64_t trigger(const struct env *e, const char *schedule,
		       int64_t slot_ms)
{
	struct store *s = tu_store_open(e->store_url);
	struct config *cfg = NULL;
	int64_t id = 0;

	assert_int_equal(config_load(e->cfg, &cfg, NULL), 0);
	const struct schedule_spec *sp = config_schedule(cfg, schedule);
	assert_non_null(sp);
	assert_int_equal(queue_trigger(s, schedule, slot_ms, spec_policy(sp), &id,
				       NULL, NULL), 0);
	config_free(cfg);
	store_close(s);
	return id;
}

/* The alerts of schedule with reason (NULL: any). *out: sc_free. */
static size_t alerts_of(const struct env *e, const char *schedule,
			const char *reason, struct store_alert *first)
{
	struct store *s = tu_store_open(e->store_url);
	struct alert_filter f = {.schedule = schedule, .slot_ms = INT64_MIN,
				 .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(store_alert_list(s, &f, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if (!reason || strcmp(v[i].reason, reason) == 0) {
			if (k == 0 && first)
				*first = v[i];
			k++;
		}
	sc_free(v);
	store_close(s);
	return k;
}

/* How many send rows of the alerts of schedule (every reason) are in
 * state st; *all gets how many there are. */
static size_t sends_in(const struct env *e, const char *schedule,
		       enum send_state st, size_t *all)
{
	struct store *s = tu_store_open(e->store_url);
	struct alert_filter f = {.schedule = schedule, .slot_ms = INT64_MIN,
				 .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0, k = 0, total = 0;

	assert_int_equal(store_alert_list(s, &f, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		struct store_alert_send *x = NULL;
		size_t m = 0;
		assert_int_equal(store_alert_sends(s, v[i].id, &x, &m, NULL), 0);
		for (size_t j = 0; j < m; j++)
			k += x[j].state == st;
		total += m;
		store_alert_sends_free(x, m);
	}
	sc_free(v);
	store_close(s);
	if (all)
		*all = total;
	return k;
}

/* Waits until every send row of schedule's alerts is SENT (and there
 * are at least min of them). */
static bool wait_all_sent(const struct env *e, const char *schedule,
			  size_t min)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		size_t all = 0, sent = sends_in(e, schedule, SEND_SENT, &all);
		if (all >= min && sent == all)
			return true;
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(50);
	}
}

/* Ledger rows "alert" of schedule whose details say state. */
static size_t alert_rows(const struct env *e, const char *schedule,
			 const char *state)
{
	struct store *s = tu_store_open(e->store_url);
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX,
				  .outcome = LEDGER_ALERT};
	struct ledger_row *rows = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		json_t *d = json_loads(rows[i].details_json, 0, NULL);
		const char *st = json_string_value(json_object_get(d, "state"));
		k += st && strcmp(st, state) == 0;
		json_decref(d);
	}
	store_ledger_rows_free(rows, n);
	store_close(s);
	return k;
}

/* The i-th request to /alert, parsed (json_decref it). */
static json_t *alert_body(const struct env *e, long i)
{
	struct fake_request r;

	assert_true(fake_http_request(e->alert, "/alert", i, &r));
	json_t *o = json_loads(r.body, 0, NULL);
	fake_request_dispose(&r);
	assert_non_null(o);
	return o;
}

static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* The requests to /alert whose "reason" is reason. */
static size_t alerts_received(const struct env *e, const char *reason)
{
	size_t n = e->alert ? fake_http_count(e->alert, "/alert") : 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		json_t *o = alert_body(e, (long)i);
		k += strcmp(str_of(o, "reason"), reason) == 0;
		json_decref(o);
	}
	return k;
}

static bool wait_received(const struct env *e, const char *reason, size_t n)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	while (alerts_received(e, reason) < n)
		if (tu_now_ms() > end)
			return false;
		else
			tu_sleep_ms(20);
	return true;
}

/* `surecron ARGS...` with the test's config; its exit status. */
static int cli5(const struct env *e, char *out, size_t n_out,
		const char *a1, const char *a2, const char *a3,
		const char *a4, const char *a5)
{
	char err[4096], buf[8192];
	const char *args[] = {a1, "--config", e->cfg, a2, a3, a4, a5, NULL};

	return tu_run_bin(e->dir, e->dir, NULL, args, out ? out : buf,
			  out ? n_out : sizeof(buf), err, sizeof(err));
}

static int cli(const struct env *e, char *out, size_t n_out,
	       const char *a1, const char *a2, const char *a3,
	       const char *a4)
{
	return cli5(e, out, n_out, a1, a2, a3, a4, NULL);
}

static const char LOSE_ONCE[] =
	"  daily:\n"
	"    cron: \"0 3 29 2 *\"\n" /* never fires by itself */
	"    tz: UTC\n"
	"    targets: [hook]\n"
	"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
	"    tasks:\n"
	"      - name: report\n"
	"        shell: \"if [ -e ok ]; then echo 'the daily report'; else "
	"echo 'API quota exceeded' >&2; exit 75; fi\"\n";

/* ---- the alert receiver is down when the slot is lost ------------------ */

static void alert_waits_for_its_receiver(void **state)
{
	struct env e;
	(void)state;
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e, false);
	write_cfg(&e, "  targets: [oncall]\n", LOSE_ONCE);
	pid_t pid = start_daemon(&e, NULL);
	int64_t slot = tu_now_ms() / 1000 * 1000;
	int64_t job = trigger(&e, "daily", slot);

	/* Lost at the first attempt; the alert's sends fail while the
	 * port is closed, and say so in the ledger. */
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (alert_rows(&e, "daily", "failed") < 2 && tu_now_ms() < end)
		tu_sleep_ms(50);
	assert_true(alert_rows(&e, "daily", "failed") >= 2);
	assert_int_equal(tu_ledger_count(e.store_url, "daily", LEDGER_LOST), 1);
	assert_int_equal(alert_rows(&e, "daily", "sent"), 0);

	alert_up(&e);
	assert_true(wait_received(&e, "lost", 1));
	assert_true(wait_all_sent(&e, "daily", 1));
	stop_daemon(pid);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 1);
	assert_int_equal(alert_rows(&e, "daily", "sent"), 1);
	assert_int_equal(alerts_of(&e, "daily", "lost", NULL), 1);

	json_t *o = alert_body(&e, 0);
	assert_string_equal(str_of(o, "kind"), "alert");
	assert_string_equal(str_of(o, "reason"), "lost");
	assert_string_equal(str_of(o, "schedule"), "daily");
	assert_non_null(strstr(str_of(o, "error"), "quota exceeded"));
	char want[64];
	snprintf(want, sizeof(want), "surecron retry %lld", (long long)job);
	assert_non_null(strstr(str_of(o, "command"), want));
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 1);
	json_decref(o);
	/* The key is the alert's own, per (slot, reason, target). */
	struct fake_request r;
	char key[128] = "";
	assert_true(fake_http_request(e.alert, "/alert", 0, &r));
	assert_true(fake_request_header(&r, "Idempotency-Key", key,
					sizeof(key)));
	fake_request_dispose(&r);
	assert_true(strlen(key) >= 32);
	env_dispose(&e);
}

/* ---- kill -9 between "lost" and the alert ------------------------------ */

static void alert_survives_kill9(void **state)
{
	struct env e;
	(void)state;
	TU_NEED_TEST_SEAMS();
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e, true);
	write_cfg(&e, "  targets: [oncall]\n", LOSE_ONCE);
	const char *crash[] = {
		"SURECRON_FAILPOINTS=worker.after_lost_before_alert", NULL};
	pid_t pid = start_daemon(&e, crash);
	trigger(&e, "daily", tu_now_ms() / 1000 * 1000);
	int st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(tu_ledger_count(e.store_url, "daily", LEDGER_LOST), 1);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 0);
	assert_int_equal(alerts_of(&e, "daily", NULL, NULL), 0);

	pid = start_daemon(&e, NULL);
	assert_true(wait_received(&e, "lost", 1));
	assert_true(wait_all_sent(&e, "daily", 1));
	stop_daemon(pid);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 1);
	assert_int_equal(alerts_of(&e, "daily", "lost", NULL), 1);
	env_dispose(&e);
}

/* A crash after the alert's copy left but before SENT: the copy is sent
 * again with a "duplicate" row first, under the same key. */
static void alert_resend_after_kill9_is_declared(void **state)
{
	struct env e;
	(void)state;
	TU_NEED_TEST_SEAMS();
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e, true);
	write_cfg(&e, "  targets: [oncall]\n", LOSE_ONCE);
	const char *crash[] = {
		"SURECRON_FAILPOINTS=alert.after_send_before_sent", NULL};
	pid_t pid = start_daemon(&e, crash);
	trigger(&e, "daily", tu_now_ms() / 1000 * 1000);
	int st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 1);

	/* The claim's lease must run out before another sender takes it:
	 * ALERT_SEND_LEASE_MS is minutes, so the next daemon runs on a
	 * clock that far ahead. */
	char later_env[64], iso[CLOCK_ISO_MAX];
	snprintf(later_env, sizeof(later_env), "SURECRON_TEST_CLOCK=%s",
		 clock_format_utc(tu_now_ms() + 2 * ALERT_SEND_LEASE_MS, iso));
	const char *later[] = {later_env, NULL};
	pid = start_daemon(&e, later);
	assert_true(wait_received(&e, "lost", 2));
	assert_true(wait_all_sent(&e, "daily", 1));
	stop_daemon(pid);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 2);
	assert_int_equal(tu_ledger_count(e.store_url, "daily",
					 LEDGER_DUPLICATE), 1);
	struct fake_request r0, r1;
	char k0[128] = "", k1[128] = "";
	assert_true(fake_http_request(e.alert, "/alert", 0, &r0));
	assert_true(fake_http_request(e.alert, "/alert", 1, &r1));
	assert_true(fake_request_header(&r0, "Idempotency-Key", k0, sizeof(k0)));
	assert_true(fake_request_header(&r1, "Idempotency-Key", k1, sizeof(k1)));
	assert_string_equal(k0, k1);
	fake_request_dispose(&r0);
	fake_request_dispose(&r1);
	env_dispose(&e);
}

/* ---- two daemons on PostgreSQL, one lost slot --------------------------- */

static void two_daemons_one_alert_per_target(void **state)
{
	struct env e;
	(void)state;
	PGFX_NEED_SERVER();
	env_init(&e, true);
	write_cfg(&e, "  targets: [oncall, archive]\n", LOSE_ONCE);
	pid_t a = start_daemon(&e, NULL), b = start_daemon(&e, NULL);
	assert_true(wait_log(&e, "event=started", 2));
	trigger(&e, "daily", tu_now_ms() / 1000 * 1000);
	assert_true(wait_received(&e, "lost", 1));
	assert_true(wait_all_sent(&e, "daily", 2));
	stop_daemon(a);
	stop_daemon(b);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 1);
	char p[600], line[8192];
	size_t lines = 0;
	snprintf(p, sizeof(p), "%s/alerts.jsonl", e.dir);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		lines++;
	if (f)
		fclose(f);
	assert_int_equal(lines, 1);
	assert_int_equal(alerts_of(&e, "daily", "lost", NULL), 1);
	env_dispose(&e);
}

/* ---- missed slots: one alert, ledger --lost, ack, realert --------------- */

static const char MISSED[] =
	"  minutely:\n"
	"    cron: \"* * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: none\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: tick, shell: \"echo tick\"}\n"
	"  other:\n"
	"    cron: \"30 * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: none\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: tock, shell: \"echo tock\"}\n";

static void missed_alert_acked_stops_realert(void **state)
{
	struct env e;
	struct store_alert x, y;
	(void)state;
	TU_NEED_TEST_SEAMS();
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e, true);
	write_cfg(&e, "  targets: [oncall]\n  on: [lost, missed]\n"
		  "  realert: 2s\n", MISSED);
	/* First start at 07:00:10 (the baseline), then down until
	 * 07:05:20: minutes 07:01..07:05 (5 slots) of `minutely` and the
	 * :30 seconds of 07:00..07:04 (5) of `other` are missed. */
	const char *first[] = {"SURECRON_TEST_CLOCK=2026-03-06T07:00:10Z",
			       NULL};
	pid_t pid = start_daemon(&e, first);
	assert_true(wait_log(&e, "event=first_start", 2));
	stop_daemon(pid);
	const char *later[] = {"SURECRON_TEST_CLOCK=2026-03-06T07:05:20Z",
			       NULL};
	pid = start_daemon(&e, later);
	assert_true(wait_received(&e, "missed", 2));
	assert_int_equal(alerts_of(&e, "minutely", "missed", &x), 1);
	assert_int_equal(x.n_slots, 5);
	assert_int_equal(alerts_of(&e, "other", "missed", NULL), 1);
	int found = 0;
	for (long i = 0; i < (long)fake_http_count(e.alert, "/alert"); i++) {
		json_t *o = alert_body(&e, i);
		json_t *sl = json_object_get(o, "slots");
		if (strcmp(str_of(o, "schedule"), "minutely") == 0 &&
		    json_integer_value(json_object_get(o, "round")) == 0) {
			found++;
			assert_int_equal(json_integer_value(json_object_get(
						 sl, "count")), 5);
			assert_string_equal(str_of(sl, "first"),
					    "2026-03-06T07:01:00Z");
			assert_string_equal(str_of(sl, "last"),
					    "2026-03-06T07:05:00Z");
			assert_non_null(strstr(str_of(o, "command"),
					       "surecron trigger --slot"));
		}
		json_decref(o);
	}
	assert_int_equal(found, 1);
	assert_int_equal(cli(&e, NULL, 0, "ledger", "--lost", NULL, NULL), 1);

	/* Open: it comes again every 2 s, each time a new message. */
	assert_true(wait_received(&e, "missed", 4));
	assert_int_equal(cli5(&e, NULL, 0, "ack", "--note", "rerun by hand",
			      "minutely", "2026-03-06T07:03:00Z"), 0);
	assert_int_equal(alerts_of(&e, "minutely", "missed", &x), 1);
	assert_int_equal(x.status, ALERT_ACKED);
	/* `other` is still open: it keeps failing the report. */
	assert_int_equal(cli(&e, NULL, 0, "ledger", "--lost", NULL, NULL), 1);
	int rounds_at_ack = x.rounds;
	/* Two more rounds of the other alert: two realert periods and
	 * their passes went by after the ack. */
	assert_int_equal(alerts_of(&e, "other", "missed", &y), 1);
	int64_t end = tu_now_ms() + PATIENCE_MS;
	struct store_alert y2 = y;
	while (y2.rounds < y.rounds + 2 && tu_now_ms() < end) {
		tu_sleep_ms(50);
		alerts_of(&e, "other", "missed", &y2);
	}
	assert_true(y2.rounds >= y.rounds + 2);
	assert_int_equal(alerts_of(&e, "minutely", "missed", &x), 1);
	assert_true(x.rounds <= rounds_at_ack + 1); /* a round made right at
						       the ack, at most */
	int settled = x.rounds;
	end = tu_now_ms() + PATIENCE_MS;
	while (y2.rounds < y.rounds + 4 && tu_now_ms() < end) {
		tu_sleep_ms(50);
		alerts_of(&e, "other", "missed", &y2);
	}
	alerts_of(&e, "minutely", "missed", &x);
	assert_int_equal(x.rounds, settled);
	assert_int_equal(cli(&e, NULL, 0, "ack", "other",
			     "2026-03-06T07:00:30Z", NULL), 0);
	assert_int_equal(cli(&e, NULL, 0, "ledger", "--lost", NULL, NULL), 0);
	assert_int_equal(tu_ledger_count(e.store_url, NULL, LEDGER_ACKED), 2);
	/* The ack's row carries the note and who. */
	char lo[16384];
	assert_int_equal(cli5(&e, lo, sizeof(lo), "ledger", "--outcome",
			      "acked", "--json", NULL), 0);
	assert_non_null(strstr(lo, "rerun by hand"));
	assert_non_null(strstr(lo, "\"by\""));
	/* --lost lists the acked slots, marked. */
	assert_int_equal(cli(&e, lo, sizeof(lo), "ledger", "--lost", NULL,
			     NULL), 0);
	assert_non_null(strstr(lo, "[acked at "));
	assert_non_null(strstr(lo, "10 acknowledged"));
	/* Nothing to acknowledge: exit 1. */
	assert_int_equal(cli(&e, NULL, 0, "ack", "minutely",
			     "2026-03-06T09:00:00Z", NULL), 1);
	stop_daemon(pid);
	env_dispose(&e);
}

/* ---- retry of a lost slot: one "recovered" message --------------------- */

static void retry_sends_recovered_once(void **state)
{
	struct env e;
	struct store_alert x;
	char out[8192], idbuf[32], p[600];
	(void)state;
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e, true);
	write_cfg(&e, "  targets: [oncall]\n", LOSE_ONCE);
	pid_t pid = start_daemon(&e, NULL);
	int64_t job = trigger(&e, "daily", tu_now_ms() / 1000 * 1000);
	assert_true(wait_received(&e, "lost", 1));
	assert_int_equal(cli(&e, NULL, 0, "ledger", "--lost", NULL, NULL), 1);
	/* status names the open alert, in text and JSON. */
	assert_int_equal(cli(&e, out, sizeof(out), "status", NULL, NULL, NULL),
			 0);
	assert_non_null(strstr(out, "alerts   1 open"));
	assert_non_null(strstr(out, "lost"));
	assert_int_equal(cli(&e, out, sizeof(out), "status", "--json", NULL,
			     NULL), 0);
	json_t *st = json_loads(out, 0, NULL);
	assert_non_null(st);
	json_t *oa = json_object_get(json_array_get(json_object_get(
				st, "schedules"), 0), "open_alerts");
	assert_int_equal(json_array_size(oa), 1);
	assert_string_equal(str_of(json_array_get(oa, 0), "reason"), "lost");
	json_decref(st);

	snprintf(p, sizeof(p), "%s/ok", e.dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(idbuf, sizeof(idbuf), "%lld", (long long)job);
	assert_int_equal(cli(&e, out, sizeof(out), "retry", idbuf, NULL,
			     NULL), 0);
	assert_true(wait_received(&e, "recovered", 1));
	assert_true(wait_all_sent(&e, "daily", 2));
	stop_daemon(pid);
	assert_int_equal(alerts_received(&e, "recovered"), 1);
	assert_int_equal(alerts_received(&e, "lost"), 1);
	assert_int_equal(alerts_of(&e, "daily", "lost", &x), 1);
	assert_int_equal(x.status, ALERT_HEALED);
	assert_int_equal(tu_ledger_count(e.store_url, "daily",
					 LEDGER_RECOVERED), 1);
	assert_int_equal(cli(&e, NULL, 0, "ledger", "--lost", NULL, NULL), 0);
	assert_int_equal(cli(&e, out, sizeof(out), "status", NULL, NULL, NULL),
			 0);
	assert_non_null(strstr(out, "alerts   none open"));
	env_dispose(&e);
}

/* ---- no alert target: still loud --------------------------------------- */

static void no_alert_target_is_an_error_line(void **state)
{
	struct env e;
	(void)state;
	if (ds_pg)
		PGFX_NEED_SERVER();
	env_init(&e, true);
	write_cfg(&e, "  targets: []\n", LOSE_ONCE);
	pid_t pid = start_daemon(&e, NULL);
	trigger(&e, "daily", tu_now_ms() / 1000 * 1000);
	assert_true(wait_log(&e, "msg=\"no alert targets configured\"", 1));
	stop_daemon(pid);
	assert_int_equal(fake_http_count(e.alert, "/alert"), 0);
	assert_int_equal(alerts_of(&e, "daily", "lost", NULL), 1);
	assert_int_equal(cli(&e, NULL, 0, "ledger", "--lost", NULL, NULL), 1);
	env_dispose(&e);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
#define BOTH(t)                                                            \
	cmocka_unit_test_setup_teardown(t, ds_sqlite_setup, ds_teardown)
#define PG(t) cmocka_unit_test_setup_teardown(t, ds_pg_setup, ds_teardown)
	const struct CMUnitTest tests[] = {
		BOTH(alert_waits_for_its_receiver),
		BOTH(alert_survives_kill9),
		BOTH(alert_resend_after_kill9_is_declared),
		BOTH(missed_alert_acked_stops_realert),
		BOTH(retry_sends_recovered_once),
		BOTH(no_alert_target_is_an_error_line),
	};
	const struct CMUnitTest pg_tests[] = {
		PG(alert_waits_for_its_receiver),
		PG(alert_survives_kill9),
		PG(alert_resend_after_kill9_is_declared),
		PG(two_daemons_one_alert_per_target),
		PG(missed_alert_acked_stops_realert),
		PG(retry_sends_recovered_once),
		PG(no_alert_target_is_an_error_line),
	};
	int rc = cmocka_run_group_tests_name("alerts_sqlite", tests, NULL,
					     NULL);
	rc += cmocka_run_group_tests_name("alerts_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
