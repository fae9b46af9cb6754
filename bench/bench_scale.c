/*
 * bench_scale.c - the generators and readers of bench/scale.sh (issue 15):
 * a store whose ledger is millions of rows deep, written through the
 * store's own API (store_ledger_append_many), never by SQL of our own
 * that could drift from the schema.
 *
 * Usage:
 *   bench_scale gen URL ROWS SCHEDULES [DAYS] [CONFDIR]
 *       Fills the store at URL (sqlite:PATH or a postgresql URL) with
 *       ROWS ledger rows over SCHEDULES schedules named scale-00000...,
 *       10,000 rows per call, slots over the DAYS (default 400) days that
 *       end at the current hour, in time order (ids follow time, as a
 *       real ledger's do). Schedules are hourly ("M * * * *") or daily
 *       ("M H * * *"), UTC; the hourly share is what makes ROWS fit
 *       DAYS (about 650 of 10,000 for 10,000,000 rows). When ROWS is
 *       below SCHEDULES x DAYS, every schedule is daily and DAYS shrinks
 *       to ROWS / SCHEDULES. Outcomes: 1 in 10,000 slots lost (a third
 *       of them recovered by a later success, a third acked), 1 in
 *       10,000 missed, 2 % failed once and then succeeded, the rest
 *       succeeded. Jobs, outbox, slot markers and the schedules' last
 *       handled slots are not written: the ledger is what the read
 *       paths scan (a daemon run on this store with these schedules
 *       would catch them up). With CONFDIR, also writes
 *       CONFDIR/surecron.yaml (store URL, an include of conf.d/NN.yaml)
 *       and CONFDIR/conf.d/NN.yaml with 1,000 schedules each, plus
 *       CONFDIR/single.yaml: the first 2,000 schedules in one file (what
 *       a config without include can hold). Prints one line: rows,
 *       seconds, rows_per_s.
 *   bench_scale late URL SINCE_MS UNTIL_MS
 *       Start lateness (started_ms - slot_ms) of the first attempts of
 *       the slots in [SINCE_MS, UNTIL_MS): n, p50, p99 and max in ms,
 *       and how many started within 2 s. started_ms is when the claim
 *       was sent (a worker claims up to 20 ms ahead, and then records
 *       the slot): it leaves out the claim's own wait and the spawn.
 *   bench_scale tasklate LOG SINCE_MS UNTIL_MS
 *       The same figures from a daemon's log (SURECRON_LOG=info): its
 *       event=finish lines' task_late_us, how late the first task of
 *       each first attempt was exec'd after the slot. The start lateness
 *       the issue means; `late` beside it shows how much of it the
 *       claims took.
 *   bench_scale spawn N THREADS [PROGRAM]
 *       The floor of a burst of N runs at THREADS at a time: THREADS
 *       threads posix_spawn PROGRAM (default /bin/true) and wait for it,
 *       N times in all, with no scheduler, store or reaper around it.
 *       Prints n, threads and the wall time in ms: what the same
 *       processes cost this machine, beside the daemon's burst.
 *   bench_scale time RUNS TIMEOUT_S OKRC OUT ERR CMD [ARG...]
 *       Runs CMD RUNS times, one after the other (stdout to OUT, stderr
 *       to ERR, both truncated at each run), and prints the median wall
 *       time in ms, from posix_spawn to the reaping, on the monotonic
 *       clock. A shell's own timing (date, timeout) adds more than a
 *       command of a few ms takes here. A run over 5 s is not repeated:
 *       its time is the answer (the goals are far below). A run whose
 *       exit status is not in OKRC (a list, "0 1") or that is still
 *       running after TIMEOUT_S (killed; status 124, as timeout(1)
 *       says) ends it with that status, and a line in ERR.
 *   bench_scale head URL NAME
 *       Opens the store, reads NAME's summary (store_sched_summaries:
 *       the read of `surecron status NAME`) and closes it: with `time`,
 *       the floor of that command on this machine, without its config.
 *   bench_scale load pq|none
 *       Loads libpq as a PostgreSQL store does (lazylib_load: dlopen
 *       and every function looked up), or nothing, and exits: with
 *       `time`, the part of that floor spent before connecting.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "clock.h"
#include "lazylib.h"
#include "store.h"
#include "url.h"

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define DAY_MS 86400000LL
#define BATCH 10000
#define PER_FRAGMENT 1000
#define SINGLE_MAX 2000

static void die(const char *what, const struct sc_err *err)
{
	fprintf(stderr, "bench_scale: %s%s%s\n", what, err ? ": " : "",
		err ? err->msg : "");
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

/* splitmix64: a fixed, well spread hash, so every run writes the same
 * ledger. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

struct gen {
	struct store *s;
	struct ledger_row *rows;
	size_t n;              /* rows in the batch */
	int64_t total, limit;  /* rows written (asked) so far, rows to write */
	int64_t job_id;
};

static void flush(struct gen *g)
{
	struct sc_err err = {0};
	size_t w = 0;

	if (!g->n)
		return;
	if (store_ledger_append_many(g->s, g->rows, g->n, &w, &err))
		die("append_many", &err);
	g->n = 0;
}

/* Adds one row to the batch; false once the limit is reached. */
static bool put(struct gen *g, int sched, int64_t slot, int attempt,
		const char *outcome, int64_t started, int64_t finished)
{
	struct ledger_row *r;

	if (g->total >= g->limit)
		return false;
	r = &g->rows[g->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->schedule, sizeof(r->schedule), "scale-%05d", sched);
	snprintf(r->outcome, sizeof(r->outcome), "%s", outcome);
	r->slot_ms = slot;
	r->attempt = attempt;
	r->job_id = attempt ? g->job_id : 0;
	r->started_ms = started;
	r->finished_ms = finished;
	if (strcmp(outcome, LEDGER_FAILED) == 0 ||
	    strcmp(outcome, LEDGER_LOST) == 0) {
		snprintf(r->error_class, sizeof(r->error_class), "task");
		r->error_msg = "exit status 1";
		r->retry_hint_ms = strcmp(outcome, LEDGER_FAILED) == 0
				   ? MIN_MS : 0;
	}
	g->total++;
	if (g->n == BATCH)
		flush(g);
	return true;
}

/* The rows of one slot; false once the limit is reached. */
static bool slot_rows(struct gen *g, int sched, int64_t slot)
{
	uint64_t h = mix(((uint64_t)sched << 40) ^ (uint64_t)(slot / MIN_MS));
	uint64_t u = h % 1000000;
	int64_t st = slot + 20 + (int64_t)(h >> 20) % 480;
	int64_t dur = 100 + (int64_t)(h >> 32) % 4900;

	g->job_id++;
	if (u < 100) {
		if (!put(g, sched, slot, 3, LEDGER_LOST, st, st + dur))
			return false;
		if (u % 3 == 0) /* an operator's retry, two hours later */
			return put(g, sched, slot, 4, LEDGER_SUCCESS,
				   slot + 2 * HOUR_MS, slot + 2 * HOUR_MS +
				   dur);
		if (u % 3 == 1)
			return put(g, sched, slot, 0, LEDGER_ACKED, 0,
				   slot + 3 * HOUR_MS);
		return true;
	}
	if (u < 200) /* a downtime's slot */
		return put(g, sched, slot, 0, LEDGER_MISSED, 0,
			   slot + 30 * MIN_MS);
	if (u < 20200) {
		if (!put(g, sched, slot, 1, LEDGER_FAILED, st, st + dur))
			return false;
		return put(g, sched, slot, 2, LEDGER_SUCCESS, st + MIN_MS,
			   st + MIN_MS + dur);
	}
	return put(g, sched, slot, 1, LEDGER_SUCCESS, st, st + dur);
}

static void write_schedule(FILE *f, int i, int hourly)
{
	fprintf(f, "  scale-%05d:\n", i);
	if (i < hourly)
		fprintf(f, "    cron: \"%d * * * *\"\n", i % 60);
	else
		fprintf(f, "    cron: \"%d %d * * *\"\n", i % 60, i % 24);
	fprintf(f, "    tz: UTC\n    targets: [archive]\n    tasks:\n"
		"      - {name: t, command: [\"/bin/true\"]}\n");
}

static FILE *open_out(const char *dir, const char *name)
{
	char path[1200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench_scale: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return f;
}

static void config_head(FILE *f, const char *url)
{
	fprintf(f, "store: \"%s\"\n"
		"worker: {concurrency: 4, lease: 5m, grace: 30s}\n"
		"targets:\n"
		"  archive: {kind: file, path: ./deliveries.jsonl}\n", url);
}

/* The configs listing the generated schedules (see the usage). */
static void write_configs(const char *dir, const char *url, int n_sched,
			  int hourly)
{
	char sub[1200];
	FILE *f = open_out(dir, "surecron.yaml");

	config_head(f, url);
	fprintf(f, "include: [\"conf.d/*.yaml\"]\n");
	fclose(f);
	snprintf(sub, sizeof(sub), "%s/conf.d", dir);
	if (mkdir(sub, 0755) && errno != EEXIST)
		die("mkdir conf.d", NULL);
	for (int k = 0; k * PER_FRAGMENT < n_sched; k++) {
		char name[32];
		snprintf(name, sizeof(name), "conf.d/%02d.yaml", k);
		f = open_out(dir, name);
		fprintf(f, "schedules:\n");
		for (int i = k * PER_FRAGMENT;
		     i < n_sched && i < (k + 1) * PER_FRAGMENT; i++)
			write_schedule(f, i, hourly);
		fclose(f);
	}
	f = open_out(dir, "single.yaml");
	config_head(f, url);
	fprintf(f, "schedules:\n");
	for (int i = 0; i < n_sched && i < SINGLE_MAX; i++)
		write_schedule(f, i, hourly);
	fclose(f);
}

static int cmd_gen(int argc, char **argv)
{
	const char *url = argv[2];
	int64_t rows = argc > 3 ? atoll(argv[3]) : 0;
	int n_sched = argc > 4 ? atoi(argv[4]) : 0;
	int64_t days = argc > 5 ? atoll(argv[5]) : 400;
	const char *confdir = argc > 6 ? argv[6] : NULL;
	int64_t hourly;

	if (rows <= 0 || n_sched <= 0 || days <= 0) {
		fprintf(stderr, "usage: bench_scale gen URL ROWS SCHEDULES "
			"[DAYS] [CONFDIR]\n");
		return 2;
	}
	/* The URL is also written into the configs, whose store key takes
	 * only these two forms (a bare path opens here but not there). */
	if (strncmp(url, "sqlite:", 7) != 0 && !url_is_pg(url)) {
		fprintf(stderr, "bench_scale: gen: URL must be sqlite:PATH or "
			"postgresql://..., as in a config's store: key\n");
		return 2;
	}
	/* Made before the rows, so a long generation never ends on a
	 * folder that is not there. */
	if (confdir && mkdir(confdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "bench_scale: %s: %s\n", confdir,
			strerror(errno));
		return 1;
	}
	/* rows = hourly * 24 * days + (n_sched - hourly) * days */
	if (rows < (int64_t)n_sched * days) {
		days = rows / n_sched > 0 ? rows / n_sched : 1;
		hourly = 0;
	} else if (rows > (int64_t)n_sched * 24 * days) {
		hourly = n_sched;
		days = rows / (24LL * n_sched) + 1;
	} else {
		hourly = (rows - (int64_t)n_sched * days) / (23 * days);
	}
	if (hourly < (int64_t)n_sched &&
	    rows > hourly * 24 * days + (n_sched - hourly) * days)
		hourly++; /* round up: the limit cuts the excess */

	struct gen g = {.s = open_store(url), .limit = rows};
	g.rows = calloc(BATCH, sizeof(*g.rows));
	if (!g.rows)
		die("out of memory", NULL);

	int64_t now = sc_clock_now_ms(sc_clock_real());
	int64_t end_h = now / HOUR_MS, start_h = end_h - 24 * days;
	int64_t t0 = clock_mono_ms();
	bool more = true;
	for (int64_t hh = start_h; hh < end_h && more; hh++) {
		int hod = (int)(hh % 24);
		int64_t base = hh * HOUR_MS;
		for (int i = 0; i < hourly && more; i++)
			more = slot_rows(&g, i, base + (i % 60) * MIN_MS);
		/* the daily schedules of this hour of the day */
		int first = (int)hourly + (hod - (int)(hourly % 24) + 24) % 24;
		for (int i = first; i < n_sched && more; i += 24)
			more = slot_rows(&g, i, base + (i % 60) * MIN_MS);
	}
	flush(&g);
	double secs = (double)(clock_mono_ms() - t0) / 1000.0;

	store_close(g.s);
	if (confdir)
		write_configs(confdir, url, n_sched, (int)hourly);
	printf("ours case=gen backend=%s rows=%" PRId64 " schedules=%d "
	       "hourly=%" PRId64 " daily=%" PRId64 " days=%" PRId64
	       " seconds=%.1f rows_per_s=%.0f\n",
	       strncmp(url, "sqlite:", 7) == 0 ? "sqlite" : "postgresql",
	       g.total, n_sched, hourly, n_sched - hourly, days, secs,
	       secs > 0 ? (double)g.total / secs : 0.0);
	free(g.rows);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t pct(const int64_t *v, size_t n, double p)
{
	size_t i = (size_t)ceil(p / 100.0 * (double)n);

	return v[i ? (i > n ? n - 1 : i - 1) : 0];
}

/* One summary line of start latenesses v[0..k) in ms (sorted here). */
static void print_late(int64_t *v, size_t k)
{
	size_t within = 0;

	if (!k) {
		printf("late n=0\n");
		return;
	}
	qsort(v, k, sizeof(*v), cmp_i64);
	for (size_t i = 0; i < k; i++)
		within += v[i] <= 2000;
	printf("late n=%zu p50_ms=%" PRId64 " p99_ms=%" PRId64
	       " max_ms=%" PRId64 " within_2s=%zu\n",
	       k, pct(v, k, 50), pct(v, k, 99), v[k - 1], within);
}

static int cmd_late(int argc, char **argv)
{
	struct ledger_filter f = {.since_ms = argc > 3 ? atoll(argv[3]) : 0,
				  .until_ms = argc > 4 ? atoll(argv[4])
						       : INT64_MAX};
	struct store *s = open_store(argv[2]);
	struct ledger_row *rows = NULL;
	struct sc_err err = {0};
	size_t n = 0, k = 0;

	if (store_ledger_query(s, &f, &rows, &n, &err))
		die("ledger query", &err);
	int64_t *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		die("out of memory", NULL);
	for (size_t i = 0; i < n; i++) {
		const struct ledger_row *r = &rows[i];
		if (r->attempt != 1 || !r->started_ms)
			continue;
		v[k++] = r->started_ms - r->slot_ms;
	}
	store_ledger_rows_free(rows, n);
	store_close(s);
	print_late(v, k);
	free(v);
	return 0;
}

/* The value of " key=" in line, or NULL. */
static const char *field(const char *line, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = strstr(line, key); p; p = strstr(p + 1, key))
		if (p > line && p[-1] == ' ' && p[n] == '=')
			return p + n + 1;
	return NULL;
}

static int cmd_tasklate(int argc, char **argv)
{
	int64_t since = argc > 3 ? atoll(argv[3]) : 0;
	int64_t until = argc > 4 ? atoll(argv[4]) : INT64_MAX;
	FILE *f = fopen(argv[2], "r");
	char line[4096];
	int64_t *v = NULL;
	size_t k = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "bench_scale: %s: %s\n", argv[2],
			strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, " event=finish "))
			continue;
		const char *slot = field(line, "slot");
		const char *att = field(line, "attempt");
		const char *late = field(line, "task_late_us");
		char iso[64];
		int64_t ms;

		if (!slot || !att || !late || atoi(att) != 1 || *late == '-')
			continue;
		snprintf(iso, sizeof(iso), "%.*s", (int)strcspn(slot, " \n"),
			 slot);
		if (clock_parse_iso(iso, &ms, NULL) || ms < since || ms >= until)
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 1024;
			int64_t *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				die("out of memory", NULL);
			v = nv;
		}
		/* to ms, rounded to the nearest */
		int64_t us = atoll(late);
		v[k++] = (us >= 0 ? us + 500 : us - 500) / 1000;
	}
	fclose(f);
	print_late(v, k);
	free(v);
	return 0;
}

extern char **environ;

static atomic_long spawn_left;
static const char *spawn_prog = "/bin/true";
static atomic_int spawn_failed;

static void *spawn_worker(void *arg)
{
	char *av[] = {(char *)spawn_prog, NULL};

	(void)arg;
	while (atomic_fetch_sub(&spawn_left, 1) > 0) {
		pid_t pid;
		int st;
		if (posix_spawn(&pid, spawn_prog, NULL, NULL, av, environ) != 0) {
			atomic_store(&spawn_failed, 1);
			break;
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	return NULL;
}

static int cmd_spawn(int argc, char **argv)
{
	long n = atol(argv[2]);
	int t = argc > 3 ? atoi(argv[3]) : 16;
	pthread_t th[256];

	if (argc > 4)
		spawn_prog = argv[4];
	if (n < 1 || t < 1 || t > 256) {
		fprintf(stderr, "bench_scale spawn: N >= 1, 1 <= THREADS <= "
			"256\n");
		return 2;
	}
	atomic_store(&spawn_left, n);
	int64_t t0 = clock_mono_ms();
	for (int i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, spawn_worker, NULL) != 0)
			die("pthread_create", NULL);
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	int64_t took = clock_mono_ms() - t0;
	if (atomic_load(&spawn_failed)) {
		fprintf(stderr, "bench_scale spawn: cannot run %s\n",
			spawn_prog);
		return 1;
	}
	printf("spawn n=%ld threads=%d wall_ms=%" PRId64 "\n", n, t, took);
	return 0;
}

/* "0 1" or "0,1": is rc in the list? */
static int rc_ok(const char *list, int rc)
{
	const char *p = list;

	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p) {
			p++;
			continue;
		}
		if (v == rc)
			return 1;
		p = end;
	}
	return 0;
}

/* One run of CMD: its wall time in *ns; returns its exit status (128 +
 * signal when killed, 124 when it outlived timeout_ns, -1 when it could
 * not be started). The caller has blocked *chld (SIGCHLD), so that the
 * wait for it can have a time limit (sigtimedwait) and no poll adds to
 * the time measured. */
static int time_one(char **cmd, const char *out, const char *errf,
		    int64_t timeout_ns, const sigset_t *chld, int64_t *ns)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st = 0, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out,
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errf,
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int64_t t0 = clock_mono_ns();
	rc = posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, "bench_scale time: cannot run %s: %s\n", cmd[0],
			strerror(rc));
		return -1;
	}
	int timed_out = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		int64_t left = timeout_ns - (clock_mono_ns() - t0);
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			timed_out = 1;
			break;
		}
		struct timespec ts = {.tv_sec = (time_t)(left / 1000000000),
				      .tv_nsec = (long)(left % 1000000000)};
		(void)sigtimedwait(chld, NULL, &ts);
	}
	*ns = clock_mono_ns() - t0;
	if (timed_out)
		return 124;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cmd_time(int argc, char **argv)
{
	if (argc < 8) {
		fprintf(stderr, "usage: bench_scale time RUNS TIMEOUT_S OKRC "
			"OUT ERR CMD [ARG...]\n");
		return 2;
	}
	int runs = atoi(argv[2]);
	double timeout_s = atof(argv[3]);
	int64_t timeout_ns = (int64_t)(timeout_s * 1e9);
	const char *okrc = argv[4], *out = argv[5], *errf = argv[6];
	char **cmd = argv + 7;
	sigset_t chld;

	if (runs < 1 || runs > 1000 || timeout_s <= 0) {
		fprintf(stderr, "bench_scale time: 1 <= RUNS <= 1000, "
			"TIMEOUT_S > 0\n");
		return 2;
	}
	int64_t *v = calloc((size_t)runs, sizeof(*v));
	if (!v)
		die("out of memory", NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int k = 0;
	while (k < runs) {
		int rc = time_one(cmd, out, errf, timeout_ns, &chld, &v[k]);
		if (rc < 0 || !rc_ok(okrc, rc)) {
			FILE *f = fopen(errf, "a");
			if (f) {
				fprintf(f, "%s: exit status %d%s\n", cmd[0], rc,
					rc == 124 ? " (timed out)" : "");
				fclose(f);
			}
			free(v);
			return rc < 0 ? 1 : rc;
		}
		if (v[k++] > 5000000000LL)
			break;
	}
	qsort(v, (size_t)k, sizeof(*v), cmp_i64);
	printf("%.1f\n", (double)pct(v, (size_t)k, 50) / 1e6);
	free(v);
	return 0;
}

static int cmd_head(int argc, char **argv)
{
	struct store_sched_summary *sum = NULL;
	struct sc_err err = {0};
	size_t n = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: bench_scale head URL NAME\n");
		return 2;
	}
	struct store *s = open_store(argv[2]);
	if (store_sched_summaries(s, argv[3], &sum, &n, &err))
		die("summary", &err);
	printf("head %s rows=%zu last_slot_ms=%" PRId64 "\n", argv[3], n,
	       n && sum[0].has_last ? sum[0].last.slot_ms : 0);
	store_sched_summaries_free(sum, n);
	store_close(s);
	return 0;
}

/* What opening a PostgreSQL store pays before it connects: libpq and
 * the libraries it needs, loaded as the store loads them. */
static int cmd_load(int argc, char **argv)
{
	struct sc_err err = {0};

	if (argc < 3 || (strcmp(argv[2], "pq") != 0 &&
			 strcmp(argv[2], "none") != 0)) {
		fprintf(stderr, "usage: bench_scale load pq|none\n");
		return 2;
	}
	if (strcmp(argv[2], "pq") == 0 && lazylib_load(LAZYLIB_PQ, &err))
		die("load", &err);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "gen") == 0)
		return cmd_gen(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "late") == 0)
		return cmd_late(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "tasklate") == 0)
		return cmd_tasklate(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "spawn") == 0)
		return cmd_spawn(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "time") == 0)
		return cmd_time(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "head") == 0)
		return cmd_head(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "load") == 0)
		return cmd_load(argc, argv);
	fprintf(stderr, "usage: bench_scale gen URL ROWS SCHEDULES [DAYS] "
		"[CONFDIR]\n       bench_scale late URL SINCE_MS UNTIL_MS\n"
		"       bench_scale tasklate LOG SINCE_MS UNTIL_MS\n"
		"       bench_scale spawn N THREADS [PROGRAM]\n"
		"       bench_scale time RUNS TIMEOUT_S OKRC OUT ERR CMD "
		"[ARG...]\n       bench_scale head URL NAME\n"
		"       bench_scale load pq|none\n");
	return 2;
}
