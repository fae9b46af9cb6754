/*
 * bench_claim_known.c - the claim's cost with a node's known-schedule set
 * (issue 43's filter) of many names, for bench/budget.sh.
 *
 * Usage: bench_claim_known DIR KNOWN CLAIMS
 *   makes DIR/known.db, sets a known set of KNOWN names ("s-000000", ...)
 *   and the overlap rule on, enqueues 2,000 due jobs of one known
 *   schedule (overlap allow, so each claim may take one), then claims
 *   CLAIMS of them one at a time and prints "claimed=N".
 *
 * budget.sh runs it with CLAIMS 1,000 and 2,000 over 100,000 names and
 * takes the difference per claim: the set's build and the enqueue cancel
 * out. A filter that builds the set at each claim (an IN over json_each,
 * until issue 45) costs the whole set per claim: ~24 ms at 100,000 names
 * against ~0.06 ms for a lookup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store.h"

#define JOBS 2000

static void die(const char *what, const struct sc_err *err)
{
	fprintf(stderr, "bench_claim_known: %s: %s\n", what,
		err ? err->msg : "");
	exit(1);
}

int main(int argc, char **argv)
{
	static const struct sc_retry_policy policy = {
		1, SC_BACKOFF_EXPONENTIAL, 60000};
	struct sc_err err = {0};
	struct store *s = NULL;
	char url[4200];

	if (argc != 4) {
		fprintf(stderr, "usage: bench_claim_known DIR KNOWN CLAIMS\n");
		return 2;
	}
	int n_known = atoi(argv[2]), claims = atoi(argv[3]);
	if (n_known < 2 || claims < 1 || claims > JOBS ||
	    strlen(argv[1]) > 4000) {
		fprintf(stderr, "bench_claim_known: KNOWN >= 2, CLAIMS "
			"1..%d\n", JOBS);
		return 2;
	}
	snprintf(url, sizeof(url), "sqlite:%s/known.db", argv[1]);
	if (store_open(url, sc_clock_real(), &s, &err))
		die("open", &err);

	char *blob = malloc((size_t)n_known * 16);
	const char **names = malloc(sizeof(*names) * (size_t)n_known);
	if (!blob || !names)
		die("out of memory", NULL);
	for (int i = 0; i < n_known; i++) {
		names[i] = blob + (size_t)i * 16;
		snprintf(blob + (size_t)i * 16, 16, "s-%06d", i);
	}
	const char *allow[] = {names[1]};
	if (store_overlap_set(s, true, allow, 1, NULL, 0, &err))
		die("overlap rule", &err);
	if (store_claim_known_set(s, names, (size_t)n_known, &err))
		die("known set", &err);

	int64_t slots[JOBS], base = sc_clock_now_ms(sc_clock_real()) - JOBS;
	for (int i = 0; i < JOBS; i++)
		slots[i] = base + i;
	if (store_job_enqueue_many(s, names[1], slots, JOBS, &policy, &err))
		die("enqueue", &err);

	int got = 0;
	for (int i = 0; i < claims; i++) {
		struct store_job j;
		size_t n = 0;
		if (store_job_claim(s, "bench", 60000, &j, 1, &n, &err))
			die("claim", &err);
		got += (int)n;
	}
	printf("claimed=%d\n", got);
	store_close(s);
	free(names);
	free(blob);
	return got == claims ? 0 : 1;
}
