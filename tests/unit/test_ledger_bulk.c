/*
 * test_ledger_bulk.c - store_ledger_append_many (store.h), the bulk
 * writer of the scale benchmark's generator, on every backend: every
 * row written as given, all or none when one row fails (refused by the
 * checks, by the database, or at commit), and missed rows deduplicated
 * as a single append does, counted out of n_written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define MIN 60000LL
#define HOUR 3600000LL

static void set_row(struct ledger_row *r, const char *sched, int64_t slot,
		    const char *outcome)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->schedule, sizeof(r->schedule), "%s", sched);
	snprintf(r->outcome, sizeof(r->outcome), "%s", outcome);
	r->slot_ms = slot;
	r->started_ms = slot + 120;
	r->finished_ms = slot + 450;
}

static size_t count_rows(struct store *s, const char *sched)
{
	struct ledger_filter f = {.schedule = sched, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

/* 1,000 rows of every outcome, with text that needs quoting: all
 * written, in order, each field as given. */
static void writes_every_row_as_given(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	static const char *const outcomes[] = {LEDGER_SUCCESS, LEDGER_FAILED,
					       LEDGER_LOST, LEDGER_ACKED};
	enum { N = 1000 };
	struct ledger_row *in = calloc(N, sizeof(*in));
	struct ledger_row *out = NULL;
	struct sc_err err = {0};
	size_t n = 0, w = 0;

	assert_non_null(in);
	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "s%d", i % 7);
		set_row(&in[i], name, T0 + i * MIN, outcomes[i % 4]);
		in[i].job_id = i + 1;
		in[i].attempt = 1 + i % 3;
		in[i].retry_hint_ms = i % 5;
		if (i % 4 == 1) {
			snprintf(in[i].error_class, sizeof(in[i].error_class),
				 "task");
			in[i].error_msg = "exit 1: \"quoted\" \\ back, comma";
		}
		if (i % 10 == 0)
			in[i].details_json = "{\"k\": \"v\\\"w\", \"n\": null}";
	}
	assert_int_equal(store_ledger_append_many(s, in, N, &w, &err), 0);
	assert_int_equal(w, N);

	assert_int_equal(store_ledger_query(s, NULL, &out, &n, NULL), 0);
	assert_int_equal(n, N);
	for (int i = 0; i < N; i++) {
		const struct ledger_row *a = &in[i], *b = &out[i];
		assert_string_equal(a->schedule, b->schedule);
		assert_int_equal(a->slot_ms, b->slot_ms);
		assert_int_equal(a->job_id, b->job_id);
		assert_int_equal(a->attempt, b->attempt);
		assert_int_equal(a->started_ms, b->started_ms);
		assert_int_equal(a->finished_ms, b->finished_ms);
		assert_string_equal(a->outcome, b->outcome);
		assert_string_equal(a->error_class, b->error_class);
		assert_int_equal(a->retry_hint_ms, b->retry_hint_ms);
		if (a->error_msg)
			assert_string_equal(a->error_msg, b->error_msg);
		else
			assert_null(b->error_msg);
		if (a->details_json)
			assert_string_equal(a->details_json, b->details_json);
		else
			assert_null(b->details_json);
	}
	store_ledger_rows_free(out, n);
	free(in);

	/* No rows: nothing to do; n_written may be NULL. */
	assert_int_equal(store_ledger_append_many(s, NULL, 0, &w, NULL), 0);
	assert_int_equal(w, 0);
	struct ledger_row one;
	set_row(&one, "s0", T0 - HOUR, LEDGER_SUCCESS);
	assert_int_equal(store_ledger_append_many(s, &one, 1, NULL, NULL), 0);
	assert_int_equal(count_rows(s, NULL), N + 1);
	store_close(s);
	sc_clock_free(clock);
}

/* A missed row whose slot has one (in the store, or earlier in the same
 * batch) is skipped and not counted; rows of other outcomes for that
 * slot are written. */
static void missed_rows_deduplicated_and_not_counted(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_row r[6];
	size_t w = 99;

	set_row(&r[0], "a", T0, LEDGER_MISSED);
	assert_int_equal(store_ledger_append(s, &r[0], NULL), 0);

	set_row(&r[0], "a", T0, LEDGER_MISSED);          /* in the store */
	set_row(&r[1], "a", T0 + HOUR, LEDGER_MISSED);   /* new */
	set_row(&r[2], "a", T0 + HOUR, LEDGER_MISSED);   /* same batch */
	set_row(&r[3], "a", T0, LEDGER_LOST);            /* not missed */
	set_row(&r[4], "b", T0, LEDGER_MISSED);          /* other schedule */
	set_row(&r[5], "a", T0 + HOUR, LEDGER_SUCCESS);
	assert_int_equal(store_ledger_append_many(s, r, 6, &w, NULL), 0);
	assert_int_equal(w, 4);
	assert_int_equal(count_rows(s, "a"), 4);
	assert_int_equal(count_rows(s, "b"), 1);

	/* The same batch again: only its rows that are not missed. */
	assert_int_equal(store_ledger_append_many(s, r, 6, &w, NULL), 0);
	assert_int_equal(w, 2);
	assert_int_equal(count_rows(s, NULL), 7);
	store_close(s);
	sc_clock_free(clock);
}

/* A row the checks refuse (empty outcome) refuses the batch before any
 * write, naming the row. */
static void invalid_row_refuses_whole_batch(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_row r[5];
	struct sc_err err = {0};
	size_t w = 99;

	for (int i = 0; i < 5; i++)
		set_row(&r[i], "a", T0 + i * MIN, LEDGER_SUCCESS);
	r[3].outcome[0] = '\0';
	assert_int_equal(store_ledger_append_many(s, r, 5, &w, &err),
			 SC_EINVAL);
	assert_non_null(strstr(err.msg, "ledger row 3"));
	assert_int_equal(w, 0);
	assert_int_equal(count_rows(s, NULL), 0);
	store_close(s);
	sc_clock_free(clock);
}

/* Makes the database itself refuse a ledger row of schedule "boom". */
static void install_boom(void **state)
{
	struct tb *b = *state;

	if (tb_is_sqlite(state)) {
		sqlite3 *db = NULL;
		assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
		assert_int_equal(
			sqlite3_exec(db,
				     "CREATE TRIGGER boom BEFORE INSERT ON "
				     "ledger WHEN NEW.schedule = 'boom' BEGIN "
				     "SELECT RAISE(ABORT, 'boom'); END",
				     NULL, NULL, NULL),
			SQLITE_OK);
		sqlite3_close(db);
		return;
	}
	char sql[640];
	snprintf(sql, sizeof(sql),
		 "CREATE FUNCTION %s.boom() RETURNS trigger LANGUAGE plpgsql "
		 "AS $$BEGIN IF NEW.schedule = 'boom' THEN RAISE EXCEPTION "
		 "'boom'; END IF; RETURN NEW; END$$; CREATE TRIGGER boom "
		 "BEFORE INSERT ON %s.ledger FOR EACH ROW EXECUTE FUNCTION "
		 "%s.boom()",
		 b->schema, b->schema, b->schema);
	assert_int_equal(tb_pg_exec(b->base, sql), 0);
}

/* The database refuses row 50 of 100: none of the 100 is kept, and the
 * handle writes the next batch. */
static void database_failure_mid_batch_keeps_none(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_row r[100];
	struct sc_err err = {0};
	size_t w = 99;

	install_boom(state);
	for (int i = 0; i < 100; i++)
		set_row(&r[i], i == 50 ? "boom" : "a", T0 + i * MIN,
			i % 2 ? LEDGER_MISSED : LEDGER_SUCCESS);
	assert_int_not_equal(store_ledger_append_many(s, r, 100, &w, &err), 0);
	assert_non_null(strstr(err.msg, "boom"));
	assert_int_equal(w, 0);
	assert_int_equal(count_rows(s, NULL), 0);

	snprintf(r[50].schedule, sizeof(r[50].schedule), "a");
	assert_int_equal(store_ledger_append_many(s, r, 100, &w, NULL), 0);
	assert_int_equal(w, 100);
	assert_int_equal(count_rows(s, NULL), 100);
	store_close(s);
	sc_clock_free(clock);
}

/* A failure at commit (store.commit:err) keeps none either. */
static void commit_failure_keeps_none(void **state)
{
	TU_NEED_TEST_SEAMS(); /* the store.commit:err failpoint */
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_row r[10];
	struct sc_err err = {0};
	size_t w = 99;

	for (int i = 0; i < 10; i++)
		set_row(&r[i], "a", T0 + i * MIN,
			i == 4 ? LEDGER_LOST : LEDGER_SUCCESS);
	setenv("SURECRON_FAILPOINTS", "store.commit:err", 1);
	int rc = store_ledger_append_many(s, r, 10, &w, &err);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	assert_int_equal(w, 0);
	assert_int_equal(count_rows(s, NULL), 0);
	assert_int_equal(store_ledger_append_many(s, r, 10, &w, NULL), 0);
	assert_int_equal(w, 10);
	store_close(s);
	sc_clock_free(clock);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(writes_every_row_as_given),
		cmocka_unit_test(missed_rows_deduplicated_and_not_counted),
		cmocka_unit_test(invalid_row_refuses_whole_batch),
		cmocka_unit_test(database_failure_mid_batch_keeps_none),
		cmocka_unit_test(commit_failure_keeps_none),
	};
	return tb_run_all("ledger_bulk", tests,
			  sizeof(tests) / sizeof(tests[0]));
}
