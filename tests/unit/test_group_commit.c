/*
 * test_group_commit.c - SQLite's durable commits share their fsyncs
 * (store_sqlite.c, group commit).
 *
 * Threads with their own handles on one file make durable writes (slot
 * markers) at once: every write succeeds and is there afterwards, and
 * the writes that met share syncs (fewer syncs than writes), while a
 * lone durable write still gets a sync of its own. A failed sync is the
 * write's error (SC_EIO), as a failed commit is. SQLite only: the
 * PostgreSQL server makes its own group commits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define N_THREADS 12
#define N_WRITES 20 /* per thread */

struct gc {
	char dir[256];
	char path[300];
	char url[320];
	struct sc_clock *clock;
};

struct writer {
	struct gc *g;
	int idx;
	pthread_barrier_t *go;
	int failed; /* writes that returned an error */
};

static void gc_init(struct gc *g)
{
	snprintf(g->dir, sizeof(g->dir), "%s", tu_tmpdir());
	snprintf(g->path, sizeof(g->path), "%s/surecron.db", g->dir);
	snprintf(g->url, sizeof(g->url), "sqlite:%s", g->path);
	g->clock = sc_clock_virtual_new(T0);
	assert_non_null(g->clock);
}

static void gc_done(struct gc *g)
{
	sc_clock_free(g->clock);
	tu_rmrf(g->dir);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct store *s = NULL;
	char name[32];

	snprintf(name, sizeof(name), "w%d", w->idx);
	if (store_open(w->g->url, w->g->clock, &s, NULL) != 0) {
		w->failed = N_WRITES;
		pthread_barrier_wait(w->go);
		return NULL;
	}
	pthread_barrier_wait(w->go);
	for (int i = 0; i < N_WRITES; i++)
		if (store_slot_mark(s, name, T0 + i * 60000LL, NULL) != 0)
			w->failed++;
	store_close(s);
	return NULL;
}

static void concurrent_durable_writes_all_succeed_and_share_syncs(void **st)
{
	struct gc g = {0};
	struct store *keep = NULL;
	pthread_t th[N_THREADS];
	struct writer w[N_THREADS];
	pthread_barrier_t go;
	uint64_t before, syncs;

	(void)st;
	gc_init(&g);
	/* One handle held open throughout keeps the file's sync count. */
	assert_int_equal(store_open(g.url, g.clock, &keep, NULL), 0);
	before = store_sqlite_syncs(g.path);
	pthread_barrier_init(&go, NULL, N_THREADS);
	for (int i = 0; i < N_THREADS; i++) {
		w[i] = (struct writer){.g = &g, .idx = i, .go = &go};
		assert_int_equal(pthread_create(&th[i], NULL, writer_main,
						&w[i]), 0);
	}
	for (int i = 0; i < N_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	syncs = store_sqlite_syncs(g.path) - before;
	for (int i = 0; i < N_THREADS; i++)
		assert_int_equal(w[i].failed, 0);
	/* Every marker is there. */
	for (int i = 0; i < N_THREADS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "w%d", i);
		for (int k = 0; k < N_WRITES; k++) {
			bool marked = false;

			assert_int_equal(store_slot_is_marked(keep, name,
							      T0 + k * 60000LL,
							      &marked, NULL),
					 0);
			assert_true(marked);
		}
	}
	print_message("group commit: %d durable writes from %d threads, "
		      "%llu syncs\n", N_THREADS * N_WRITES, N_THREADS,
		      (unsigned long long)syncs);
	assert_true(syncs >= 1);
	assert_true(syncs < (uint64_t)(N_THREADS * N_WRITES));
	store_close(keep);
	gc_done(&g);
}

static void each_lone_durable_write_is_synced(void **st)
{
	struct gc g = {0};
	struct store *s = NULL;
	uint64_t before;

	(void)st;
	gc_init(&g);
	assert_int_equal(store_open(g.url, g.clock, &s, NULL), 0);
	for (int i = 0; i < 5; i++) {
		before = store_sqlite_syncs(g.path);
		assert_int_equal(store_slot_mark(s, "s", T0 + i * 60000LL,
						 NULL), 0);
		assert_int_equal(store_sqlite_syncs(g.path) - before, 1);
	}
	/* A write that need not be durable waits for no sync. */
	before = store_sqlite_syncs(g.path);
	assert_int_equal(store_sched_last_set(s, "s", T0, NULL), 0);
	assert_int_equal(store_sqlite_syncs(g.path) - before, 0);
	store_close(s);
	gc_done(&g);
}

static void failed_sync_is_the_writes_error(void **st)
{
	struct gc g = {0};
	struct store *s = NULL;
	struct sc_err e = {0};

	(void)st;
	TU_NEED_TEST_SEAMS();
	gc_init(&g);
	assert_int_equal(store_open(g.url, g.clock, &s, NULL), 0);
	setenv("SURECRON_FAILPOINTS", "store.sync:err", 1);
	assert_int_equal(store_slot_mark(s, "s", T0, &e), SC_EIO);
	unsetenv("SURECRON_FAILPOINTS");
	assert_non_null(strstr(e.msg, "I/O error"));
	/* The handle goes on: the next durable write syncs and succeeds. */
	assert_int_equal(store_slot_mark(s, "s", T0 + 60000LL, NULL), 0);
	store_close(s);
	gc_done(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			concurrent_durable_writes_all_succeed_and_share_syncs),
		cmocka_unit_test(each_lone_durable_write_is_synced),
		cmocka_unit_test(failed_sync_is_the_writes_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
