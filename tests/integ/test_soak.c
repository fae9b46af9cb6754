/*
 * test_soak.c - the long run (`make soak` only; issue 10): two daemons on
 * the harness's PostgreSQL for SURECRON_SOAK_SECONDS (default 3600) of
 * real time, a per-second schedule with a webhook target (the fake
 * receiver) and a file target, while at random moments:
 *   - daemon B is SIGKILLed and started again (A is never killed: its RSS
 *     and open descriptors over the whole run are the leak figures);
 *   - PostgreSQL is crashed and restarted (pg_ctl stop -m immediate,
 *     start), or the daemons' sessions are terminated;
 *   - the receiver misbehaves for the next requests: 503, 500, 429 with
 *     Retry-After, an answer slower than the client timeout.
 * Then everything is stopped, the receiver behaves, the daemons drain, and
 * the record is checked like test_pg_faults does: lost (slots not DONE, or
 * lost/missed rows), undeclared copies (receiver or file copies beyond
 * 1 + the slot's `duplicate` rows for that target), declared copies.
 *
 * Figure line: "soak: seconds= slots= kills= pg_restarts= pg_terminates=
 * receiver_faults= lost= undeclared= declared= rss_start_kb= rss_end_kb=
 * rss_growth_kb= fds_start= fds_end=". Fails when lost or undeclared is
 * not 0, or when A's descriptors grew by more than a few.
 *
 * Skips unless SURECRON_SOAK is set (`make soak` sets it) and the server is
 * a throw-away one it may restart. SURECRON_SOAK_SEED replays a schedule
 * of faults (as far as timing allows).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "fakes/fake_http.h"
#include "pg_fixture.h"

#define PATIENCE_MS 120000
#define FD_SLACK 4

static char dir[256], cfg[512];
static pid_t pid_a, pid_b;

static pid_t start(void)
{
	const char *envs[] = {"SURECRON_LOG=warn", "PGAPPNAME=surecron-soak",
			      NULL};
	return tu_start_daemon(dir, cfg, envs, 0);
}

/* VmRSS of pid in kB (0 when gone). */
static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Open descriptors of pid (-1 when gone). */
static long n_fds(pid_t pid)
{
	char path[64];
	long n = 0;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int64_t pg_try_int(const char *q)
{
	PGconn *c = PQconnectdb(pgfx_url());
	int64_t v = -1;

	if (PQstatus(c) == CONNECTION_OK) {
		PQsetNoticeProcessor(c, pgfx_quiet, NULL);
		PGresult *r = PQexec(c, q);
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r))
			v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	}
	PQfinish(c);
	return v;
}

/* Slot index of a message body in [first, first + n s), else -1. */
static long slot_of(const char *body, int64_t first, long n)
{
	json_t *o = json_loads(body, 0, NULL);
	const char *iso = json_string_value(json_object_get(o, "slot"));
	int64_t ms = 0;
	long i = -1;

	if (iso && clock_parse_iso(iso, &ms, NULL) == 0 && ms >= first &&
	    (ms - first) % 1000 == 0 && (ms - first) / 1000 < n)
		i = (long)((ms - first) / 1000);
	json_decref(o);
	return i;
}

static void misbehave(struct fake_http *srv, unsigned *seed)
{
	switch (rand_r(seed) % 4) {
	case 0:
		fake_http_push(srv, "/hook", 503, "Retry-After: 1", "busy", 0);
		break;
	case 1:
		fake_http_push(srv, "/hook", 500, NULL, "oops", 0);
		break;
	case 2:
		fake_http_push(srv, "/hook", 429, "Retry-After: 2", "slow", 0);
		break;
	default: /* slower than the target's 2 s timeout */
		fake_http_push(srv, "/hook", 200, NULL, "late", 3000);
		break;
	}
}

static void soak_daemons_under_faults(void **state)
{
	(void)state;
	if (!getenv("SURECRON_SOAK"))
		skip(); /* `make soak` only */
	PGFX_NEED_SERVER();
	if (!pgfx_restartable())
		skip();
	const char *sec_env = getenv("SURECRON_SOAK_SECONDS");
	int64_t seconds = sec_env ? strtoll(sec_env, NULL, 10) : 3600;
	const char *seed_env = getenv("SURECRON_SOAK_SEED");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10)
				 : (unsigned)time(NULL);
	const unsigned seed0 = seed;
	print_message("soak: seed=%u seconds=%lld\n", seed, (long long)seconds);

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", dir);
	struct fake_http *srv = fake_http_start();
	char url[256];
	assert_non_null(srv);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	setenv("SOAK_HOOK_URL", fake_http_url(srv, "/hook", url, sizeof(url)),
	       1);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 2, lease: 10s, grace: 2s}\n"
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: SOAK_HOOK_URL, "
		   "timeout: 2s}\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n"
		   "  persec:\n"
		   "    cron: \"* * * * * *\"\n"
		   "    tz: UTC\n"
		   "    catchup: all\n"
		   "    retry: {attempts: 100, backoff: fixed, delay: 1s}\n"
		   "    targets: [hook, archive]\n"
		   "    tasks:\n"
		   "      - {name: t, shell: \"echo \\\"$SURECRON_SLOT\\\"\"}\n",
		pgfx_url());
	fclose(f);
	struct store *st = tu_store_open(pgfx_url());
	store_close(st);

	pid_a = start();
	pid_b = start();
	int kills = 0, restarts = 0, terminates = 0, faults = 0;
	long rss0 = 0, fds0 = -1;
	int64_t t0 = tu_now_ms(), end = t0 + seconds * 1000;
	while (tu_now_ms() < end) {
		tu_sleep_ms(2000 + rand_r(&seed) % 8000);
		assert_int_equal(waitpid(pid_a, NULL, WNOHANG), 0);
		if (fds0 < 0 && tu_now_ms() - t0 > 20000) {
			/* A's baseline, once it is warm. */
			rss0 = rss_kb(pid_a);
			fds0 = n_fds(pid_a);
		}
		switch (rand_r(&seed) % 6) {
		case 0:
		case 1:
			kill(pid_b, SIGKILL);
			waitpid(pid_b, NULL, 0);
			pid_b = start();
			kills++;
			break;
		case 2:
			assert_int_equal(pgfx_server("crash", NULL, 0), 0);
			tu_sleep_ms(rand_r(&seed) % 3000);
			assert_int_equal(pgfx_server("start", NULL, 0), 0);
			restarts++;
			break;
		case 3:
			(void)pg_try_int("SELECT count(pg_terminate_backend(pid))"
					 " FROM pg_stat_activity WHERE "
					 "application_name = 'surecron-soak'");
			terminates++;
			break;
		default:
			for (int k = 1 + rand_r(&seed) % 3; k > 0; k--) {
				misbehave(srv, &seed);
				faults++;
			}
			break;
		}
	}
	long rss1 = rss_kb(pid_a), fds1 = n_fds(pid_a);

	/* Drain: no more faults (the few still queued in the receiver are
	 * answered and retried); wait until every slot due before now is
	 * done, then stop both. */
	int64_t t_stop = tu_now_ms();
	char q[512];
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM jobs WHERE schedule = 'persec' AND "
		 "slot_ms <= %lld AND state <> %d", (long long)t_stop,
		 (int)JOB_DONE);
	int64_t deadline = t_stop + PATIENCE_MS;
	while (pg_try_int(q) != 0 && tu_now_ms() < deadline)
		tu_sleep_ms(200);
	kill(pid_a, SIGTERM);
	kill(pid_b, SIGTERM);
	assert_true(tu_wait_exit(pid_a, PATIENCE_MS) != -1);
	assert_true(tu_wait_exit(pid_b, PATIENCE_MS) != -1);
	pid_a = pid_b = 0;

	int64_t first = pgfx_int("SELECT min(slot_ms) FROM jobs WHERE "
				 "schedule = 'persec'");
	snprintf(q, sizeof(q),
		 "SELECT coalesce(max(slot_ms), 0) FROM jobs WHERE schedule = "
		 "'persec' AND slot_ms <= %lld", (long long)t_stop);
	int64_t hi = pgfx_int(q);
	long n = (long)((hi - first) / 1000 + 1);
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM jobs WHERE schedule = 'persec' AND "
		 "slot_ms BETWEEN %lld AND %lld AND state = %d",
		 (long long)first, (long long)hi, (int)JOB_DONE);
	int64_t lost = (n - pgfx_int(q)) +
		       pgfx_int("SELECT count(*) FROM ledger WHERE outcome IN "
				"('lost', 'missed')");

	int *got_h = calloc((size_t)n, sizeof(int));
	int *got_f = calloc((size_t)n, sizeof(int));
	int *dup_h = calloc((size_t)n, sizeof(int));
	int *dup_f = calloc((size_t)n, sizeof(int));
	assert_true(got_h && got_f && dup_h && dup_f);
	size_t nreq = fake_http_count(srv, "/hook");
	for (size_t i = 0; i < nreq; i++) {
		struct fake_request rq;
		assert_true(fake_http_request(srv, "/hook", (long)i, &rq));
		long k = slot_of(rq.body, first, n);
		/* A copy is a request the receiver took: a definite refusal
		 * (503, 500, 429) was not delivered and needs no declaring. */
		if (k >= 0 && (rq.status == 0 ||
			       (rq.status >= 200 && rq.status < 300)))
			got_h[k]++;
		fake_request_dispose(&rq);
	}
	char path[600], *line = NULL;
	size_t cap = 0;
	snprintf(path, sizeof(path), "%s/deliveries.jsonl", dir);
	long torn = 0;
	f = fopen(path, "r");
	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		long k = slot_of(line, first, n);
		if (k >= 0)
			got_f[k]++;
		json_t *o = json_loads(line, 0, NULL);
		torn += !json_is_object(o);
		json_decref(o);
	}
	free(line);
	fclose(f);
	PGresult *r = pgfx_sql("SELECT slot_ms, details_json FROM ledger "
			       "WHERE outcome = 'duplicate'");
	int declared = PQntuples(r);
	for (int i = 0; i < declared; i++) {
		int64_t s = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		if (s < first || s > hi)
			continue;
		long k = (long)((s - first) / 1000);
		if (strstr(PQgetvalue(r, i, 1), "\"target\":\"hook\""))
			dup_h[k]++;
		else
			dup_f[k]++;
	}
	PQclear(r);
	int undeclared = 0, missing = 0;
	for (long i = 0; i < n; i++) {
		if (got_h[i] > 1 + dup_h[i])
			undeclared += got_h[i] - 1 - dup_h[i];
		if (got_f[i] > 1 + dup_f[i])
			undeclared += got_f[i] - 1 - dup_f[i];
		missing += (got_h[i] < 1) + (got_f[i] < 1);
	}
	free(got_h);
	free(got_f);
	free(dup_h);
	free(dup_f);
	fprintf(stderr,
		"soak: seconds=%lld slots=%ld kills=%d pg_restarts=%d "
		"pg_terminates=%d receiver_faults=%d lost=%lld missing=%d "
		"undeclared=%d declared=%d torn=%ld rss_start_kb=%ld "
		"rss_end_kb=%ld rss_growth_kb=%ld fds_start=%ld fds_end=%ld "
		"seed=%u\n",
		(long long)seconds, n, kills, restarts, terminates, faults,
		(long long)lost, missing, undeclared, declared, torn, rss0,
		rss1, rss1 - rss0, fds0, fds1, seed0);
	fake_http_stop(srv);
	assert_int_equal(lost, 0);
	assert_int_equal(missing, 0);
	assert_int_equal(torn, 0);
	assert_int_equal(undeclared, 0);
	if (fds0 >= 0)
		assert_true(fds1 <= fds0 + FD_SLACK);
	tu_rmrf(dir);
}

static int teardown(void **state)
{
	pid_t *p[] = {&pid_a, &pid_b};
	for (size_t i = 0; i < 2; i++) {
		if (*p[i] > 0 && waitpid(*p[i], NULL, WNOHANG) == 0) {
			kill(*p[i], SIGKILL);
			waitpid(*p[i], NULL, 0);
		}
		*p[i] = 0;
	}
	if (pgfx_restartable() && PQping(pgfx_url()) != PQPING_OK)
		pgfx_server("start", NULL, 0);
	return pgfx_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(soak_daemons_under_faults,
						pgfx_setup, teardown),
	};
	return cmocka_run_group_tests_name("soak", tests, pgfx_group_setup,
					   pgfx_group_teardown);
}
