/*
 * bench_queue.c - queue throughput on SQLite, durable settings as shipped.
 *
 * Usage: bench_queue [DIR] [N] [CASES]   (DIR: where the database files
 * go, on a real disk; default: a temp folder. N: jobs, default 20000.
 * CASES: any of "e14mb" (enqueue, 1 worker, 4 workers, marked, batch);
 * all by default.)
 *
 * Cases, one output line each (key=value):
 *   enqueue       bulk enqueue of N no-op jobs, 1000 per transaction
 *   work w=1      one process claims (32 per transaction) and completes
 *                 each job (one transaction per completion)
 *   work w=4      four processes, each with its own handle, same work
 *   work_marked   like w=1, plus a slot marker per job: the fsync'd commit
 *                 the orchestrator makes for every completed slot
 *   work_batch    like w=1, but the jobs of a claim, all done together,
 *                 complete in one commit (queue_complete_many)
 * maxrss_kb is the peak RSS of the process that did the work (for w=4,
 * the largest of the four).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "queue.h"
#include "store.h"

#define CLAIM_BATCH 32
#define ENQ_BATCH 1000

static const struct sc_retry_policy policy = {2, SC_BACKOFF_EXPONENTIAL,
					      60000};

static void die(const char *what, const struct sc_err *err)
{
	fprintf(stderr, "bench_queue: %s: %s\n", what, err ? err->msg : "");
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

/* Enqueues n jobs of schedule "bench" and returns the seconds it took. */
static double enqueue_all(const char *url, int n)
{
	struct store *s = open_store(url);
	struct sc_err err = {0};
	int64_t *slots = malloc(sizeof(*slots) * ENQ_BATCH);
	int64_t t0 = clock_mono_ms(), base = sc_clock_now_ms(sc_clock_real());

	if (!slots)
		die("malloc", NULL);
	for (int i = 0; i < n; i += ENQ_BATCH) {
		int k = n - i < ENQ_BATCH ? n - i : ENQ_BATCH;
		/* Slots in the past: every job is due at once. */
		for (int j = 0; j < k; j++)
			slots[j] = base - 86400000LL - (i + j);
		if (queue_enqueue_many(s, "bench", slots, (size_t)k, &policy,
				       &err))
			die("enqueue", &err);
	}
	free(slots);
	store_close(s);
	return (double)(clock_mono_ms() - t0) / 1000.0;
}

enum mode { ONE, MARKED, BATCH };

/* Claims and completes until nothing is due; returns jobs done. */
static int work(const char *url, const char *name, enum mode mode)
{
	struct store *s = open_store(url);
	struct store_job j[CLAIM_BATCH];
	int rcs[CLAIM_BATCH];
	struct sc_err err = {0};
	bool mark = mode == MARKED;
	size_t n;
	int done = 0;

	for (;;) {
		if (queue_claim(s, name, 60000, j, CLAIM_BATCH, &n, &err))
			die("claim", &err);
		if (n == 0)
			break;
		if (mode == BATCH) {
			if (queue_complete_many(s, j, n, NULL, rcs, &err))
				die("complete", &err);
			for (size_t i = 0; i < n; i++)
				if (rcs[i])
					die("complete (refused)", NULL);
			done += (int)n;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (mark && store_slot_mark(s, j[i].schedule, j[i].slot_ms,
						    &err))
				die("mark", &err);
			if (queue_complete(s, &j[i], NULL, &err))
				die("complete", &err);
			done++;
		}
	}
	store_close(s);
	return done;
}

static long maxrss_kb(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_maxrss;
}

static void fresh(char *url, size_t cap, const char *dir, const char *tag)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/bench-%s.db", dir, tag);
	for (const char *suf = ""; suf;
	     suf = !*suf ? "-wal" : strcmp(suf, "-wal") == 0 ? "-shm" : NULL) {
		char p[1100];
		snprintf(p, sizeof(p), "%s%s", path, suf);
		unlink(p);
	}
	snprintf(url, cap, "sqlite:%s", path);
}

/* What a worker process reports to the parent, in one write. */
struct report {
	int got;
	long rss;
};

/* Runs `workers` processes (each its own handle) over a fresh queue of n
 * jobs; prints one line. */
static void run_work(const char *dir, int n, int workers, enum mode mode)
{
	const char *cases[] = {"work", "work_marked", "work_batch"};
	char url[1100], tag[32];
	int64_t t0;
	long rss = 0;
	int fds[2];
	int total = 0;

	snprintf(tag, sizeof(tag), "w%d%s", workers,
		 mode == MARKED ? "m" : mode == BATCH ? "b" : "");
	fresh(url, sizeof(url), dir, tag);
	enqueue_all(url, n);
	if (pipe(fds))
		die("pipe", NULL);
	t0 = clock_mono_ms();
	for (int w = 0; w < workers; w++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork", NULL);
		if (pid == 0) {
			char name[16];
			struct report rep;
			snprintf(name, sizeof(name), "w%d", w);
			rep.got = work(url, name, mode);
			rep.rss = maxrss_kb(RUSAGE_SELF);
			/* One write (under PIPE_BUF, so atomic): the
			 * workers' reports never interleave. */
			if (write(fds[1], &rep, sizeof(rep)) !=
			    (ssize_t)sizeof(rep))
				_exit(1);
			_exit(0);
		}
	}
	close(fds[1]);
	for (int w = 0; w < workers; w++) {
		struct report rep;
		if (read(fds[0], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
			die("worker died", NULL);
		total += rep.got;
		rss = rep.rss > rss ? rep.rss : rss;
	}
	close(fds[0]);
	struct rusage ru;
	double cpu = 0;
	while (wait4(-1, NULL, 0, &ru) > 0)
		cpu += (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) /
			       1e6;
	double secs = (double)(clock_mono_ms() - t0) / 1000.0;
	if (total != n) {
		fprintf(stderr, "bench_queue: %d of %d jobs done\n", total, n);
		exit(1);
	}
	printf("ours case=%s workers=%d jobs=%d seconds=%.3f jobs_per_s=%.0f "
	       "maxrss_kb=%ld cpu_s=%.2f\n",
	       cases[mode], workers, n, secs,
	       (double)n / secs, rss, cpu);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/surecron-bench-XXXXXX";
	const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
	int n = argc > 2 ? atoi(argv[2]) : 20000;
	char url[1100];

	if (!dir || n <= 0) {
		fprintf(stderr, "usage: bench_queue [DIR] [N]\n");
		return 2;
	}
	const char *cases = argc > 3 ? argv[3] : "e14mb";
	if (strchr(cases, 'e')) {
		fresh(url, sizeof(url), dir, "enq");
		double secs = enqueue_all(url, n);
		printf("ours case=enqueue jobs=%d seconds=%.3f "
		       "jobs_per_s=%.0f maxrss_kb=%ld\n",
		       n, secs, (double)n / secs, maxrss_kb(RUSAGE_SELF));
		fflush(stdout);
	}
	if (strchr(cases, '1'))
		run_work(dir, n, 1, ONE);
	if (strchr(cases, '4'))
		run_work(dir, n, 4, ONE);
	if (strchr(cases, 'm'))
		run_work(dir, n < 5000 ? n : 5000, 1, MARKED);
	if (strchr(cases, 'b'))
		run_work(dir, n, 1, BATCH);
	if (argc <= 1) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_queue: could not remove %s\n",
				dir);
	}
	return 0;
}
