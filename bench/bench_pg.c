/*
 * bench_pg.c - claim+complete throughput of the PostgreSQL store.
 *
 *   bench_pg URL [N]     (URL defaults to $SURECRON_TEST_PG, N to 20000)
 *
 * Enqueues N due no-op jobs (bulk enqueue, 1,000 slots per statement),
 * then W worker threads, each with its own handle (connection) as a
 * daemon's workers have, go through the queue API a daemon uses
 * (store_open, queue_claim of up to 32 jobs per statement, as
 * bench_queue.c claims on SQLite, queue_complete: job DONE + its ledger row
 * in one statement) until none is left. Runs W = 1 and W = 4 with the
 * shipped settings (store_pg.c's: synchronous_commit off for claims and
 * completions) and prints one line per case,
 * "pg claim+complete workers=W jobs=N seconds=S jobs_per_s=R", after one
 * for the bulk enqueue of the first run ("pg enqueue ...").
 *
 * Then the path a daemon's worker takes, which is neither case: N/40
 * jobs, one handle, the overlap rule on (the schedule `allow`), a claim
 * of one job (two round trips, a durable commit), its completion with
 * its slot marker (a durable commit): "pg daemon_path jobs=N seconds=S
 * jobs_per_s=R".
 * Works in its own schema (bench_<pid>), dropped at the end.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "queue.h"
#include "store.h"

#define CLAIM_BATCH 32 /* as bench_queue.c */
#define LEASE_MS 60000

static const char *g_url;
static struct sc_clock *g_clock;

struct worker {
	long done;
	int id;
	int failed;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct store_job jobs[CLAIM_BATCH];
	struct sc_err err = {0};
	char name[32];
	struct store *h = NULL;

	snprintf(name, sizeof(name), "bench-%d", w->id);
	if (store_open(g_url, g_clock, &h, &err)) {
		fprintf(stderr, "bench_pg: open: %s\n", err.msg);
		w->failed = 1;
		return NULL;
	}
	for (;;) {
		size_t n = 0;
		if (queue_claim(h, name, LEASE_MS, jobs, CLAIM_BATCH, &n,
				&err)) {
			fprintf(stderr, "bench_pg: claim: %s\n", err.msg);
			w->failed = 1;
			break;
		}
		if (n == 0)
			break;
		for (size_t i = 0; i < n; i++) {
			if (queue_complete(h, &jobs[i], NULL, &err)) {
				fprintf(stderr, "bench_pg: finish: %s\n",
					err.msg);
				w->failed = 1;
				break;
			}
			w->done++;
		}
	}
	store_close(h);
	return NULL;
}

static int enqueue(const char *sched, long n)
{
	struct sc_retry_policy pol = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct sc_err err = {0};
	int64_t *slots = malloc(1000 * sizeof(*slots));
	int64_t now = sc_clock_now_ms(g_clock);
	struct store *h = NULL;
	int rc;

	if (!slots)
		return -1;
	rc = store_open(g_url, g_clock, &h, &err);
	for (long i = 0; rc == 0 && i < n; i += 1000) {
		long k = n - i < 1000 ? n - i : 1000;
		for (long j = 0; j < k; j++)
			slots[j] = now - n + i + j; /* all due */
		rc = queue_enqueue_many(h, sched, slots, (size_t)k, &pol,
					&err);
	}
	if (rc)
		fprintf(stderr, "bench_pg: enqueue: %s\n", err.msg);
	store_close(h);
	free(slots);
	return rc;
}

static int run_case(int n_workers, long n)
{
	struct worker w[16];
	pthread_t th[16];
	char sched[32];
	long total = 0;
	int failed = 0;

	snprintf(sched, sizeof(sched), "bench-w%d", n_workers);
	int64_t te = clock_mono_ms();
	if (enqueue(sched, n))
		return -1;
	if (n_workers == 1) {
		double es = (double)(clock_mono_ms() - te) / 1000.0;
		printf("pg enqueue jobs=%ld seconds=%.2f jobs_per_s=%.0f\n", n,
		       es, (double)n / (es > 0 ? es : 0.001));
	}
	int64_t t0 = clock_mono_ms();
	for (int i = 0; i < n_workers; i++) {
		w[i] = (struct worker){.id = i};
		pthread_create(&th[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < n_workers; i++) {
		pthread_join(th[i], NULL);
		total += w[i].done;
		failed |= w[i].failed;
	}
	double s = (double)(clock_mono_ms() - t0) / 1000.0;
	if (failed || total != n) {
		fprintf(stderr, "bench_pg: %ld of %ld jobs done\n", total, n);
		return -1;
	}
	printf("pg claim+complete workers=%d jobs=%ld seconds=%.2f "
	       "jobs_per_s=%.0f\n", n_workers, n, s, (double)n / s);
	fflush(stdout);
	return 0;
}

/* One worker as a daemon's: rule on, one job a claim, marked. */
static int daemon_path(long n)
{
	static const char *const allow[] = {"bench-daemon"};
	struct sc_err err = {0};
	struct store_job job;
	struct store *h = NULL;
	long done = 0;
	int rc;

	if (enqueue(allow[0], n))
		return -1;
	int64_t t0 = clock_mono_ms();
	rc = store_open(g_url, g_clock, &h, &err);
	if (!rc)
		rc = store_overlap_set(h, true, allow, 1, NULL, 0, &err);
	while (!rc) {
		size_t got = 0;
		rc = queue_claim(h, "bench-daemon", LEASE_MS, &job, 1, &got,
				 &err);
		if (rc || got == 0)
			break;
		rc = queue_complete_marked(h, &job, NULL, &err);
		done += rc == 0;
	}
	store_close(h);
	double s = (double)(clock_mono_ms() - t0) / 1000.0;
	if (rc || done != n) {
		fprintf(stderr, "bench_pg: daemon path: %ld of %ld jobs done%s%s\n",
			done, n, rc ? ": " : "", rc ? err.msg : "");
		return -1;
	}
	printf("pg daemon_path jobs=%ld seconds=%.2f jobs_per_s=%.0f\n", n, s,
	       (double)n / s);
	fflush(stdout);
	return 0;
}

static int admin(const char *q)
{
	PGconn *c = PQconnectdb(g_url);
	int rc = -1;

	if (PQstatus(c) == CONNECTION_OK) {
		PGresult *r = PQexec(c, q);
		rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
		if (rc)
			fprintf(stderr, "bench_pg: %s: %s", q,
				PQresultErrorMessage(r));
		PQclear(r);
	} else {
		fprintf(stderr, "bench_pg: %s", PQerrorMessage(c));
	}
	PQfinish(c);
	return rc;
}

int main(int argc, char **argv)
{
	char schema[64], q[128], opt[128];
	long n = argc > 2 ? atol(argv[2]) : 20000;
	int rc = 0;

	g_url = argc > 1 ? argv[1] : getenv("SURECRON_TEST_PG");
	if (!g_url || !*g_url || n <= 0) {
		fprintf(stderr, "usage: bench_pg URL [N] (or SURECRON_TEST_PG)\n");
		return 2;
	}
	g_clock = sc_clock_real();
	snprintf(schema, sizeof(schema), "bench_%d", (int)getpid());
	snprintf(q, sizeof(q), "CREATE SCHEMA %s", schema);
	if (admin(q))
		return 1;
	snprintf(opt, sizeof(opt), "-c search_path=%s -c client_min_messages="
		 "warning", schema);
	setenv("PGOPTIONS", opt, 1);
	static const int workers[] = {1, 4};
	for (size_t i = 0; rc == 0 && i < 2; i++)
		rc = run_case(workers[i], n);
	if (rc == 0)
		rc = daemon_path(n / 40 > 0 ? n / 40 : 1);
	unsetenv("PGOPTIONS");
	snprintf(q, sizeof(q), "DROP SCHEMA %s CASCADE", schema);
	setenv("PGOPTIONS", "-c client_min_messages=warning", 1);
	(void)admin(q);
	return rc ? 1 : 0;
}
