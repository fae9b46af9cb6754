/*
 * test_ledger_query.c - the ledger reads of issue 15, on every backend
 * (store_backend.h): every filter shape of store_ledger_query answers what
 * the filter says (compared with the same filter applied here to the rows
 * written), store_ledger_lost's recoveries, store_sched_summaries' counts
 * and newest rows, store_last_successes (issue 16), and (SQLite) the plan
 * guard: no shape that an index can serve reads the whole ledger.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define MIN 60000LL

static const struct sc_retry_policy pol = {3, SC_BACKOFF_FIXED, MIN};

/* The rows written, in order: row k gets id order k. */
static const struct {
	const char *schedule, *outcome;
	int64_t slot, finished;
} seed[] = {
	{"a", LEDGER_SUCCESS, T0, T0 + 1},
	{"b", LEDGER_FAILED, T0, T0 + 2},
	{"a", LEDGER_LOST, T0 + MIN, T0 + MIN + 1},
	{"b", LEDGER_MISSED, T0 + MIN, 0},
	{"a", LEDGER_ACKED, T0 + MIN, T0 + 5 * MIN},
	{"c", LEDGER_SUCCESS, T0 + 2 * MIN, T0 + 2 * MIN + 3},
	{"a", LEDGER_SUCCESS, T0 + 3 * MIN, T0 + 3 * MIN + 1},
	/* Written after newer slots: id order is not slot order. */
	{"b", LEDGER_MISSED, T0 - MIN, 0},
	{"a", LEDGER_MISSED, T0 + 2 * MIN, 0},
	{"c", LEDGER_LOST, T0 + 3 * MIN, T0 + 3 * MIN + 9},
	{"a", LEDGER_SUCCESS, T0 + MIN, T0 + 6 * MIN},
};
#define N_SEED (sizeof(seed) / sizeof(seed[0]))

static void append(struct store *s, const char *sched, const char *outcome,
		   int64_t slot, int64_t finished)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = finished};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(s, &r, NULL), 0);
}

static void write_seed(struct store *s)
{
	for (size_t i = 0; i < N_SEED; i++)
		append(s, seed[i].schedule, seed[i].outcome, seed[i].slot,
		       seed[i].finished);
}

static bool selects(const struct ledger_filter *f, size_t i)
{
	if (f->schedule && strcmp(f->schedule, seed[i].schedule) != 0)
		return false;
	if (seed[i].slot < f->since_ms || seed[i].slot >= f->until_ms)
		return false;
	if (f->outcome && strcmp(f->outcome, seed[i].outcome) != 0)
		return false;
	if (f->lost_or_missed && strcmp(seed[i].outcome, LEDGER_LOST) != 0 &&
	    strcmp(seed[i].outcome, LEDGER_MISSED) != 0)
		return false;
	return true;
}

/* What f must answer: the seed rows it selects by id (write) order, the
 * newest f->limit of them first when newest_first. */
static size_t expected(const struct ledger_filter *f, size_t *idx)
{
	size_t n = 0;

	for (size_t k = 0; k < N_SEED; k++) {
		size_t i = f->newest_first ? N_SEED - 1 - k : k;
		if (!selects(f, i))
			continue;
		if (f->limit && n == (size_t)f->limit)
			break;
		idx[n++] = i;
	}
	return n;
}

static void every_shape_answers_its_filter(void **state)
{
	static const char *const scheds[] = {NULL, "a", "b", "nope"};
	static const char *const outcomes[] = {
		NULL, LEDGER_SUCCESS, LEDGER_ACKED, LEDGER_MISSED, LEDGER_LOST};
	/* Open, bounded (since inclusive, until exclusive: T0 + MIN is in,
	 * T0 + 3 * MIN out), one-sided each way, an exact slot. */
	static const int64_t periods[][2] = {
		{INT64_MIN, INT64_MAX},
		{T0 + MIN, T0 + 3 * MIN},
		{INT64_MIN, T0 + MIN},
		{T0 + 2 * MIN, INT64_MAX},
		{T0 + MIN, T0 + MIN + 1},
	};
	struct sc_clock *c = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, c);
	size_t checked = 0;

	write_seed(s);
	for (size_t a = 0; a < 4; a++)
	for (size_t o = 0; o < 5; o++)
	for (int lm = 0; lm < 2; lm++)
	for (size_t p = 0; p < 5; p++)
	for (int d = 0; d < 2; d++)
	for (int lim = 0; lim < 3; lim += 2) {
		struct ledger_filter f = {
			.schedule = scheds[a], .outcome = outcomes[o],
			.lost_or_missed = lm, .since_ms = periods[p][0],
			.until_ms = periods[p][1], .newest_first = d,
			.limit = lim};
		size_t want[N_SEED];
		size_t nw = expected(&f, want);
		struct ledger_row *rows = NULL;
		size_t n = 0;

		assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
		if (n != nw)
			fail_msg("schedule %s outcome %s lost %d period %zu "
				 "desc %d limit %d: %zu rows, want %zu",
				 f.schedule ? f.schedule : "-",
				 f.outcome ? f.outcome : "-", lm, p, d, lim,
				 n, nw);
		for (size_t k = 0; k < n; k++) {
			assert_string_equal(rows[k].schedule,
					    seed[want[k]].schedule);
			assert_string_equal(rows[k].outcome,
					    seed[want[k]].outcome);
			assert_int_equal(rows[k].slot_ms, seed[want[k]].slot);
			assert_int_equal(rows[k].finished_ms,
					 seed[want[k]].finished);
			if (k)
				assert_true(d ? rows[k].id < rows[k - 1].id
					      : rows[k].id > rows[k - 1].id);
		}
		store_ledger_rows_free(rows, n);
		checked++;
	}
	assert_int_equal(checked, 4 * 5 * 2 * 5 * 2 * 2);
	store_close(s);
	sc_clock_free(c);
}

static void lost_rows_carry_their_recovery(void **state)
{
	struct sc_clock *c = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, c);
	struct ledger_filter all = {.since_ms = INT64_MIN,
				    .until_ms = INT64_MAX};
	struct ledger_row *rows = NULL;
	int64_t *rec = NULL;
	size_t n = 0;

	write_seed(s);
	/* c's lost slot succeeds twice: the newest success counts; one
	 * success with no finish says 1. */
	append(s, "c", LEDGER_SUCCESS, T0 + 3 * MIN, T0 + 20 * MIN);
	append(s, "c", LEDGER_SUCCESS, T0 + 3 * MIN, T0 + 10 * MIN);
	append(s, "b", LEDGER_SUCCESS, T0 - MIN, 0);
	/* A success of another schedule's slot recovers nothing. */
	append(s, "z", LEDGER_SUCCESS, T0 + 2 * MIN, T0 + 30 * MIN);
	assert_int_equal(store_ledger_lost(s, &all, &rows, &rec, &n, NULL), 0);
	/* lost a@+1, missed b@+1, missed b@-1, missed a@+2, lost c@+3, by id. */
	assert_int_equal(n, 5);
	const struct {
		const char *schedule;
		int64_t slot, rec;
	} want[] = {
		{"a", T0 + MIN, T0 + 6 * MIN}, {"b", T0 + MIN, 0},
		{"b", T0 - MIN, 1},            {"a", T0 + 2 * MIN, 0},
		{"c", T0 + 3 * MIN, T0 + 10 * MIN},
	};
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(rows[i].schedule, want[i].schedule);
		assert_int_equal(rows[i].slot_ms, want[i].slot);
		assert_int_equal(rec[i], want[i].rec);
	}
	store_ledger_rows_free(rows, n);
	free(rec);

	/* One schedule and a period: since inclusive, until exclusive. */
	struct ledger_filter one = {.schedule = "a", .since_ms = T0 + MIN,
				    .until_ms = T0 + 2 * MIN};
	assert_int_equal(store_ledger_lost(s, &one, &rows, &rec, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].slot_ms, T0 + MIN);
	assert_int_equal(rec[0], T0 + 6 * MIN);
	store_ledger_rows_free(rows, n);
	free(rec);

	/* Nothing lost: both outputs stay NULL. */
	struct ledger_filter none = {.schedule = "z", .since_ms = INT64_MIN,
				     .until_ms = INT64_MAX};
	assert_int_equal(store_ledger_lost(s, &none, &rows, &rec, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(rows);
	assert_null(rec);
	store_close(s);
	sc_clock_free(c);
}

static int64_t enqueue(struct store *s, const char *sched, int64_t slot,
		       int64_t run_at)
{
	int64_t id = 0;
	bool created = false;

	assert_int_equal(store_job_enqueue(s, sched, slot, &pol, run_at, false,
					   &id, &created, NULL), 0);
	assert_true(created);
	return id;
}

/* Claims the one due job and finishes it in state st (DONE, DEAD) or
 * leaves it ACTIVE (st JOB_ACTIVE). */
static void run_one(struct store *s, enum job_state st)
{
	struct store_job j;
	size_t n = 0;

	assert_int_equal(store_job_claim(s, "w", MIN, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	if (st == JOB_ACTIVE)
		return;
	struct ledger_row r = {0};
	snprintf(r.outcome, sizeof(r.outcome), "%s",
		 st == JOB_DONE ? LEDGER_SUCCESS : LEDGER_LOST);
	assert_int_equal(store_job_finish(s, j.id, j.lease_token, st, 0, &r,
					  NULL), 0);
}

static const struct store_sched_summary *
find(const struct store_sched_summary *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].schedule, name) == 0)
			return &v[i];
	return NULL;
}

static void summaries_count_jobs_and_find_the_last_run(void **state)
{
	struct sc_clock *c = sc_clock_virtual_new(T0 + 10 * MIN);
	struct store *s = tb_open(state, c);
	struct store_sched_summary *v = NULL;
	size_t n = 0;

	write_seed(s);
	/* c's newest slot gets a second row, written last: that one. */
	append(s, "c", LEDGER_SUCCESS, T0 + 3 * MIN, T0 + 9 * MIN);
	/* "j": two done, one dead, one running, one due, one delayed. */
	enqueue(s, "j", T0, T0);
	run_one(s, JOB_DONE);
	enqueue(s, "j", T0 + MIN, T0);
	run_one(s, JOB_DONE);
	enqueue(s, "j", T0 + 2 * MIN, T0);
	run_one(s, JOB_DEAD);
	enqueue(s, "j", T0 + 3 * MIN, T0);
	run_one(s, JOB_ACTIVE);
	enqueue(s, "j", T0 + 4 * MIN, T0);
	enqueue(s, "j", T0 + 5 * MIN, T0 + 60 * MIN);
	/* "k": jobs, no ledger row. */
	enqueue(s, "k", T0 + 4 * MIN, T0 + 60 * MIN);

	assert_int_equal(store_sched_summaries(s, NULL, &v, &n, NULL), 0);
	assert_int_equal(n, 5); /* a b c j k, sorted */
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(v[i - 1].schedule, v[i].schedule) < 0);
	const struct store_sched_summary *a = find(v, n, "a");
	const struct store_sched_summary *b = find(v, n, "b");
	const struct store_sched_summary *j = find(v, n, "j");
	const struct store_sched_summary *k = find(v, n, "k");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(j);
	assert_non_null(k);
	/* The newest slot wins over the last written row. */
	assert_true(a->has_last);
	assert_int_equal(a->last.slot_ms, T0 + 3 * MIN);
	assert_string_equal(a->last.outcome, LEDGER_SUCCESS);
	assert_int_equal(a->counts.done + a->counts.dead + a->counts.active +
			 a->counts.ready_due + a->counts.delayed, 0);
	/* The last run: a missed slot is no run (issue 43), so b's last
	 * is the failed attempt of the slot before it. */
	assert_true(b->has_last);
	assert_int_equal(b->last.slot_ms, T0);
	assert_string_equal(b->last.outcome, LEDGER_FAILED);
	const struct store_sched_summary *cc = find(v, n, "c");
	assert_non_null(cc);
	assert_int_equal(cc->last.slot_ms, T0 + 3 * MIN);
	assert_string_equal(cc->last.outcome, LEDGER_SUCCESS);
	assert_int_equal(cc->last.finished_ms, T0 + 9 * MIN);
	assert_int_equal(j->counts.done, 2);
	assert_int_equal(j->counts.dead, 1);
	assert_int_equal(j->counts.active, 1);
	assert_int_equal(j->counts.ready_due, 1);
	assert_int_equal(j->counts.delayed, 1);
	assert_true(j->has_last);
	assert_int_equal(j->last.slot_ms, T0 + 2 * MIN); /* the lost one */
	assert_false(k->has_last);
	assert_int_equal(k->counts.delayed, 1);
	store_sched_summaries_free(v, n);

	/* One schedule: that one only, the same answer. */
	assert_int_equal(store_sched_summaries(s, "j", &v, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].schedule, "j");
	assert_int_equal(v[0].counts.done, 2);
	assert_int_equal(v[0].counts.ready_due, 1);
	assert_int_equal(v[0].last.slot_ms, T0 + 2 * MIN);
	store_sched_summaries_free(v, n);
	assert_int_equal(store_sched_summaries(s, "k", &v, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_false(v[0].has_last);
	store_sched_summaries_free(v, n);
	assert_int_equal(store_sched_summaries(s, "nope", &v, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	store_close(s);
	sc_clock_free(c);
}

/* The last success of sched in v (n of them), or NULL. */
static const struct store_last_ok *ok_of(const struct store_last_ok *v,
					 size_t n, const char *sched)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].schedule, sched) == 0)
			return &v[i];
	return NULL;
}

/*
 * Issue 16: store_last_successes gives each schedule's newest-slot
 * success: still the success when failures follow it, by slot rather
 * than by write order (a retry of an older slot that succeeds later does
 * not win), of one slot's rows the last written; a schedule that never
 * succeeded is absent. Sorted as strcmp does ("Zed" before "a").
 */
static void last_successes_are_the_newest_success_slots(void **state)
{
	struct sc_clock *c = sc_clock_virtual_new(T0 + 600 * MIN);
	struct store *s = tb_open(state, c);
	struct store_last_ok *v = NULL;
	size_t n = 7;

	/* An empty ledger: nothing. */
	assert_int_equal(store_last_successes(s, &v, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(v);

	/* "a": a success, then a newer lost slot and 200 failures. */
	append(s, "a", LEDGER_SUCCESS, T0, T0 + 1);
	append(s, "a", LEDGER_LOST, T0 + MIN, T0 + MIN + 1);
	for (int64_t k = 2; k < 202; k++)
		append(s, "a", LEDGER_FAILED, T0 + k * MIN, T0 + k * MIN + 1);
	/* "b": failures, a lost and a missed slot, no success. */
	append(s, "b", LEDGER_FAILED, T0, T0 + 2);
	append(s, "b", LEDGER_LOST, T0, T0 + 3);
	append(s, "b", LEDGER_MISSED, T0 + MIN, 0);
	/* "c": the newer slot succeeds first; the older slot's retry
	 * succeeds after it (a larger id): the newer slot still wins. */
	append(s, "c", LEDGER_FAILED, T0 + MIN, T0 + MIN + 1);
	append(s, "c", LEDGER_SUCCESS, T0 + 2 * MIN, T0 + 2 * MIN + 5);
	append(s, "c", LEDGER_SUCCESS, T0 + MIN, T0 + 9 * MIN);
	append(s, "c", LEDGER_FAILED, T0 + 3 * MIN, T0 + 3 * MIN + 1);
	/* "Zed": two successes of its newest slot: the last written. */
	append(s, "Zed", LEDGER_SUCCESS, T0 + 5 * MIN, T0 + 5 * MIN + 1);
	append(s, "Zed", LEDGER_SUCCESS, T0 + 5 * MIN, T0 + 5 * MIN + 7);
	append(s, "Zed", LEDGER_SUCCESS, T0 + 4 * MIN, T0 + 8 * MIN);

	assert_int_equal(store_last_successes(s, &v, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].schedule, "Zed");
	assert_string_equal(v[1].schedule, "a");
	assert_string_equal(v[2].schedule, "c");
	assert_null(ok_of(v, n, "b"));
	const struct store_last_ok *a = ok_of(v, n, "a");
	assert_int_equal(a->slot_ms, T0);
	assert_int_equal(a->finished_ms, T0 + 1);
	const struct store_last_ok *cc = ok_of(v, n, "c");
	assert_int_equal(cc->slot_ms, T0 + 2 * MIN);
	assert_int_equal(cc->finished_ms, T0 + 2 * MIN + 5);
	const struct store_last_ok *z = ok_of(v, n, "Zed");
	assert_int_equal(z->slot_ms, T0 + 5 * MIN);
	assert_int_equal(z->finished_ms, T0 + 5 * MIN + 7);
	assert_true(z->id > 0);
	free(v);

	/* A newer success replaces the answer; b's first success counts. */
	append(s, "a", LEDGER_SUCCESS, T0 + 300 * MIN, T0 + 300 * MIN + 4);
	append(s, "b", LEDGER_SUCCESS, T0 + 2 * MIN, T0 + 2 * MIN + 6);
	assert_int_equal(store_last_successes(s, &v, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ok_of(v, n, "a")->finished_ms, T0 + 300 * MIN + 4);
	assert_int_equal(ok_of(v, n, "b")->slot_ms, T0 + 2 * MIN);
	free(v);
	store_close(s);
	sc_clock_free(c);
}

/*
 * The plan of store_last_successes (SQLite), the last statement of the
 * plan list: it reads ledger_head (one row per schedule, kept by the
 * trigger) and looks each success up by rowid, so its cost follows the
 * number of schedules, never the ledger's rows: no scan of the ledger or
 * of any of its indexes.
 */
static void last_successes_read_the_heads(void **state)
{
	struct sc_clock *c;
	struct store *s;
	sqlite3 *db;
	char sql[2048], q[2200];
	size_t last = 0, n_rowid = 0;
	bool reads_all;

	if (!tb_is_sqlite(state))
		skip();
	c = sc_clock_virtual_new(T0);
	s = tb_open(state, c);
	write_seed(s);
	while (store_sqlite_plan_sql(last + 1, sql, sizeof(sql), &reads_all))
		last++;
	assert_non_null(store_sqlite_plan_sql(last, sql, sizeof(sql),
					      &reads_all));
	assert_non_null(strstr(sql, "ledger_head"));
	assert_false(reads_all);
	assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
	snprintf(q, sizeof(q), "EXPLAIN QUERY PLAN %s", sql);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(st, 3);
		/* A scan of the table or of one of its indexes, under
		 * either name; the heads' own scan (SCAN h) is the names. */
		if (d && (strncmp(d, "SCAN ledger", 11) == 0 ||
			  strcmp(d, "SCAN l") == 0 ||
			  strncmp(d, "SCAN l ", 7) == 0))
			fail_msg("a scan in the plan of the last successes: "
				 "%s", d);
		n_rowid += d && strncmp(d, "SEARCH l USING INTEGER PRIMARY "
					   "KEY", 31) == 0;
	}
	sqlite3_finalize(st);
	assert_int_equal(n_rowid, 1);
	sqlite3_close(db);
	store_close(s);
	sc_clock_free(c);
}

/*
 * The plan guard (SQLite): EXPLAIN QUERY PLAN of every ledger read on a
 * store at the current schema. A full "SCAN ledger" is allowed only for
 * the shapes whose answer is every row; everything else must SEARCH an
 * index (or scan a partial one), or the read grows with the ledger.
 */
static void no_shape_scans_the_ledger(void **state)
{
	struct sc_clock *c;
	struct store *s;
	sqlite3 *db;
	char sql[2048], q[2200];
	size_t n = 0, n_scan = 0, n_day = 0;
	bool reads_all;

	if (!tb_is_sqlite(state))
		skip();
	c = sc_clock_virtual_new(T0);
	s = tb_open(state, c);
	write_seed(s);
	assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
	for (size_t i = 0; store_sqlite_plan_sql(i, sql, sizeof(sql),
						 &reads_all); i++) {
		sqlite3_stmt *st = NULL;
		bool scans = false;
		snprintf(q, sizeof(q), "EXPLAIN QUERY PLAN %s", sql);
		if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
			fail_msg("%s: %s", sql, sqlite3_errmsg(db));
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *d = (const char *)sqlite3_column_text(st, 3);
			/* "SCAN ledger" alone: the table, no index. */
			if (d && (strcmp(d, "SCAN ledger") == 0 ||
				  strcmp(d, "SCAN l") == 0 ||
				  strcmp(d, "SCAN jobs") == 0))
				scans = true;
			/* ledger_day is as deep as the table: it is only
			 * ever sought, a day at a time. */
			if (d && strncmp(d, "SCAN ", 5) == 0 &&
			    strstr(d, "INDEX ledger_day"))
				fail_msg("a scan of ledger_day in the plan of: "
					 "%s", sql);
			n_day += d && strncmp(d, "SEARCH ", 7) == 0 &&
				 strstr(d, "INDEX ledger_day (<expr>=? AND "
					   "schedule=?");
		}
		sqlite3_finalize(st);
		if (scans && !reads_all)
			fail_msg("full scan in the plan of: %s", sql);
		n_scan += scans;
		n++;
	}
	/* 56 shapes, the lost and summary reads, the last successes. */
	assert_true(n >= 45);
	assert_int_equal(n_scan, 4); /* the every-row shapes only */
	/* A schedule's shapes without a partial index of their own (any,
	 * an outcome, lost, skipped, abandoned; x period x order: 20) and
	 * the lost report's recovery probe (2) seek ledger_day by day and
	 * name. */
	assert_int_equal(n_day, 22);
	sqlite3_close(db);
	store_close(s);
	sc_clock_free(c);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(every_shape_answers_its_filter),
		cmocka_unit_test(lost_rows_carry_their_recovery),
		cmocka_unit_test(summaries_count_jobs_and_find_the_last_run),
		cmocka_unit_test(last_successes_are_the_newest_success_slots),
		cmocka_unit_test(last_successes_read_the_heads),
		cmocka_unit_test(no_shape_scans_the_ledger),
	};
	return tb_run_all("ledger_query", tests,
			  sizeof(tests) / sizeof(tests[0]));
}
