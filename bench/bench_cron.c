/*
 * bench_cron.c - nanoseconds per sc_cron_next() and per sc_cron_parse()
 * for a fixed set of expressions in UTC, Asia/Seoul and America/New_York.
 * One line per case. bench/cron.sh runs this beside the same work in
 * croner and cron-parser (bench/peers/cron/bench.js) and prints ratios.
 *
 * next(): chains t = next(t) from 2026-01-01T00:00:00Z, restarting every
 * CHAIN steps so that sparse expressions (29 February) stay in range; the
 * peers do exactly the same. Each case runs for about TARGET_NS after a
 * warm-up. With --tsv the lines are "kind<TAB>zone<TAB>expr<TAB>ns".
 *
 * bench_cron --calls N ZONE EXPR runs that one next() case exactly N
 * times and prints nothing timed: the instruction budget (bench/budget.sh)
 * counts it under callgrind, where a time-bound loop would not repeat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "surecron.h"

#define START_MS INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define CHAIN 100
#define TARGET_NS 200000000.0

static const char *const exprs[] = {
	"*/5 * * * *", "0 17 * * 5", "0 0 17 * * 5",
	"10 17 * * 1-5", "0 9 1 * *", "0 0 29 2 *",
};
static const char *const zones[] = {"UTC", "Asia/Seoul", "America/New_York"};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile int64_t sink;

static double run_next(const struct sc_cron *c, const struct sc_zone *z,
		       long n)
{
	int64_t t = START_MS, acc = 0;
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		if (i % CHAIN == 0)
			t = START_MS;
		if (sc_cron_next(c, z, t, &t, NULL) != 0) {
			fprintf(stderr, "bench_cron: next failed\n");
			exit(1);
		}
		acc += t;
	}
	sink = acc;
	return now_ns() - t0;
}

static double run_parse(const char *expr, long n)
{
	struct sc_cron c;
	int64_t acc = 0;
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		if (sc_cron_parse(expr, &c, NULL) != 0) {
			fprintf(stderr, "bench_cron: parse failed\n");
			exit(1);
		}
		acc += (int64_t)c.min;
	}
	sink = acc;
	return now_ns() - t0;
}

/* Grows n until one run takes at least a tenth of the target, then runs
 * long enough for the target; returns ns per call. */
static double measure(double (*fn)(const void *, long), const void *arg)
{
	long n = 1000;
	double el;

	fn(arg, n); /* warm-up */
	while ((el = fn(arg, n)) < TARGET_NS / 10)
		n *= 4;
	n = (long)((double)n * TARGET_NS / el) + 1;
	return fn(arg, n) / (double)n;
}

struct next_arg {
	struct sc_cron c;
	const struct sc_zone *z;
};

static double next_fn(const void *a, long n)
{
	const struct next_arg *na = a;
	return run_next(&na->c, na->z, n);
}

static double parse_fn(const void *a, long n)
{
	return run_parse(a, n);
}

/* --calls N ZONE EXPR: one case, N calls, for counting instructions. */
static int calls_only(int argc, char **argv)
{
	struct sc_err err = {0};
	struct next_arg na;

	if (argc != 5 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: bench_cron --calls N ZONE EXPR\n");
		return 2;
	}
	if (sc_zone_load(argv[3], &na.z, &err) != 0 ||
	    sc_cron_parse(argv[4], &na.c, &err) != 0) {
		fprintf(stderr, "bench_cron: %s\n", err.msg);
		return 1;
	}
	run_next(&na.c, na.z, atol(argv[2]));
	return 0;
}

int main(int argc, char **argv)
{
	bool tsv = argc > 1 && strcmp(argv[1], "--tsv") == 0;
	struct sc_err err = {0};

	if (argc > 1 && strcmp(argv[1], "--calls") == 0)
		return calls_only(argc, argv);

	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		double ns = measure(parse_fn, exprs[e]);
		if (tsv)
			printf("parse\t-\t%s\t%.1f\n", exprs[e], ns);
		else
			printf("parse %-16s %-16s %8.1f ns\n", "", exprs[e], ns);
	}
	for (size_t zi = 0; zi < sizeof(zones) / sizeof(zones[0]); zi++)
		for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
			struct next_arg na;
			if (sc_zone_load(zones[zi], &na.z, &err) != 0 ||
			    sc_cron_parse(exprs[e], &na.c, &err) != 0) {
				fprintf(stderr, "bench_cron: %s\n", err.msg);
				return 1;
			}
			double ns = measure(next_fn, &na);
			if (tsv)
				printf("next\t%s\t%s\t%.1f\n", zones[zi],
				       exprs[e], ns);
			else
				printf("next  %-16s %-16s %8.1f ns\n",
				       zones[zi], exprs[e], ns);
			fflush(stdout);
		}
	return 0;
}
