/*
 * bench_prune.c - `prune` of a deep ledger (issue 15; SQLite, or PostgreSQL): how long
 * N old rows take to prune, the longest batch, and how long a claim on
 * another handle waited meanwhile (the daemon's claims must never wait
 * more than 100 ms).
 *
 * Usage: bench_prune [DIR] [N] [fill|prune|both] [BATCH]   (DIR: where
 * the database goes, default a temp folder, or a postgres:// URL; N: old ledger rows, default
 * 9000000; fill only makes DIR/prune.db, prune only prunes it, both (the
 * default) does both; BATCH, a 4th argument, fixes the batch size,
 * default: sized by time.)
 *
 * The rows: N over 1,000 schedules, one a minute, 500 days old, 1 in
 * 10,000 of them a lost row never recovered (prune keeps those). One
 * output line per case (key=value).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "prune.h"
#include "store.h"

#define DAY 86400000LL
#define N_SCHEDULES 1000

static void die(const char *what, const struct sc_err *err)
{
	fprintf(stderr, "bench_prune: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static struct store *open_store(const char *url)
{
	struct store *s = NULL;
	struct sc_err err = {0};

	if (store_open(url, sc_clock_real(), &s, &err))
		die("open", &err);
	return s;
}

/* Row i of the generated ledger. */
static void make_row(long i, int64_t base, struct ledger_row *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->schedule, sizeof(r->schedule), "bench-%04ld",
		 i % N_SCHEDULES);
	r->slot_ms = base + (i / N_SCHEDULES) * 60000;
	r->started_ms = r->slot_ms;
	r->finished_ms = r->slot_ms + 1500;
	r->attempt = 1;
	snprintf(r->outcome, sizeof(r->outcome), "%s",
		 i % 10000 == 7 ? LEDGER_LOST : LEDGER_SUCCESS);
}

/*
 * The fill, through the store's own API: store_ledger_append_many in
 * chunks of FILL_CHUNK rows (one transaction each), so the rows are the
 * store's own, whatever its schema becomes.
 */
#define FILL_CHUNK 10000

static void fill(const char *url, long n)
{
	struct store *s = open_store(url);
	struct sc_err err = {0};
	int64_t t0 = clock_mono_ms();
	int64_t base = sc_clock_now_ms(sc_clock_real()) - 500 * DAY;
	struct ledger_row *rows = calloc(FILL_CHUNK, sizeof(*rows));

	if (!rows)
		die("fill: out of memory", NULL);
	for (long i = 0; i < n;) {
		size_t k = 0, written = 0;
		while (k < FILL_CHUNK && i < n)
			make_row(i++, base, &rows[k++]);
		if (store_ledger_append_many(s, rows, k, &written, &err))
			die("append_many", &err);
	}
	free(rows);
	printf("case=fill rows=%ld via=store_ledger_append_many s=%.1f\n", n,
	       (double)(clock_mono_ms() - t0) / 1000.0);
	store_close(s);
}

/* A claimer on its own handle, as a daemon's worker: the longest a claim
 * took while the prune ran. */
struct claimer {
	const char *url;
	atomic_bool stop;
	int64_t max_ms, n;
};

static void *claim_loop(void *arg)
{
	struct claimer *c = arg;
	struct store *s = open_store(c->url);
	struct store_job j;
	struct sc_err err = {0};
	size_t n;

	while (!atomic_load(&c->stop)) {
		int64_t t0 = clock_mono_ms();
		if (store_job_claim(s, "bench", 60000, &j, 1, &n, &err))
			die("claim", &err);
		int64_t took = clock_mono_ms() - t0;
		if (took > c->max_ms)
			c->max_ms = took;
		c->n++;
		usleep(5000);
	}
	store_close(s);
	return NULL;
}

static void prune(const char *url, int batch_rows)
{
	struct store *s = open_store(url);
	struct schedule_spec sc = {.name = "bench",
				   .cls = SC_FREQ_DEFAULT}; /* its policy */
	struct config cfg = {.lease_ms = 300000, .schedules = &sc,
			     .n_schedules = 1, .retention_ledger_ms = 400 * DAY,
			     .retention_jobs_ms = 30 * DAY,
			     .retention_outbox_ms = 30 * DAY};
	struct prune_plan p;
	struct prune_report r;
	struct claimer c = {.url = url};
	struct sc_err err = {0};
	pthread_t th;

	prune_plan(&cfg, sc_clock_now_ms(sc_clock_real()), &p);
	if (pthread_create(&th, NULL, claim_loop, &c))
		die("thread", NULL);
	if (prune_run(s, &p, false, batch_rows, NULL, NULL, &r, &err))
		die("prune", &err);
	atomic_store(&c.stop, true);
	pthread_join(th, NULL);
	printf("case=prune rows=%lld s=%.1f batches=%lld max_batch_rows=%d "
	       "max_batch_ms=%lld claims=%lld max_claim_ms=%lld "
	       "bytes_freed=%lld\n",
	       (long long)r.n.n_ledger, (double)r.elapsed_ms / 1000.0,
	       (long long)r.n_batches, r.max_batch_rows,
	       (long long)r.max_batch_ms, (long long)c.n,
	       (long long)c.max_ms,
	       (long long)(r.used_before - r.used_after));
	store_close(s);
}

int main(int argc, char **argv)
{
	char dir[256], url[300];
	long n = argc > 2 ? atol(argv[2]) : 9000000;
	const char *what = argc > 3 ? argv[3] : "both";

	if (argc > 1) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	} else {
		snprintf(dir, sizeof(dir), "/tmp/surecron-bench-prune-XXXXXX");
		if (!mkdtemp(dir))
			die("mkdtemp", NULL);
	}
	/* A PostgreSQL URL in place of DIR prunes that database. */
	if (strncmp(dir, "postgres", 8) == 0)
		snprintf(url, sizeof(url), "%s", dir);
	else
		snprintf(url, sizeof(url), "sqlite:%s/prune.db", dir);
	if (strcmp(what, "prune") != 0)
		fill(url, n);
	if (strcmp(what, "fill") != 0)
		prune(url, argc > 4 ? atoi(argv[4]) : 0);
	return 0;
}
