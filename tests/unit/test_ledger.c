/*
 * test_ledger.c - reading the ledger (ledger.h): the reading order and
 * the lost-slot report with its "recovered later" rule, on every backend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "ledger.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define HOUR 3600000LL

static void append(struct store *s, const char *sched, int64_t slot,
		   const char *outcome, int64_t finished)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = finished};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(s, &r, NULL), 0);
}

static const struct ledger_filter all = {.since_ms = INT64_MIN,
					 .until_ms = INT64_MAX};

/* A lost slot that later succeeded is listed, recovered, and no longer
 * counts; a lost one that did not, counts; a missed one is its own
 * count; success rows of other slots recover nothing. */
static void report_counts_recovered_slots_apart(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_report rep;
	struct sc_err err = {0};

	append(s, "daily", T0, LEDGER_LOST, T0 + 1000);
	append(s, "daily", T0 + 24 * HOUR, LEDGER_LOST, T0 + 24 * HOUR + 1000);
	append(s, "daily", T0 + 48 * HOUR, LEDGER_SUCCESS, T0 + 48 * HOUR);
	append(s, "hourly", T0 + HOUR, LEDGER_MISSED, T0 + 5 * HOUR);
	append(s, "hourly", T0 + 2 * HOUR, LEDGER_FAILED, T0 + 2 * HOUR);
	/* The first daily slot, retried by an operator a day later. */
	append(s, "daily", T0, LEDGER_SUCCESS, T0 + 30 * HOUR);

	assert_int_equal(ledger_lost_report(s, &all, &rep, &err), 0);
	assert_int_equal(rep.n, 3);
	assert_int_equal(rep.n_lost, 1);
	assert_int_equal(rep.n_missed, 1);
	assert_int_equal(rep.n_recovered, 1);
	for (size_t i = 0; i < rep.n; i++) {
		const struct ledger_row *r = &rep.rows[i];
		if (strcmp(r->schedule, "daily") == 0 && r->slot_ms == T0)
			assert_int_equal(rep.recovered_ms[i], T0 + 30 * HOUR);
		else
			assert_int_equal(rep.recovered_ms[i], 0);
		assert_true(strcmp(r->outcome, LEDGER_LOST) == 0 ||
			    strcmp(r->outcome, LEDGER_MISSED) == 0);
	}
	ledger_report_dispose(&rep);
	assert_null(rep.rows);

	/* A period that holds only the recovered slot reports nothing
	 * lost: the alarm has stopped. */
	struct ledger_filter f = all;
	f.since_ms = T0;
	f.until_ms = T0 + 1;
	assert_int_equal(ledger_lost_report(s, &f, &rep, &err), 0);
	assert_int_equal(rep.n, 1);
	assert_int_equal(rep.n_lost, 0);
	assert_int_equal(rep.n_recovered, 1);
	ledger_report_dispose(&rep);

	store_close(s);
	sc_clock_free(clock);
}

static void append_ack(struct store *s, const char *sched, int64_t first,
		       int64_t last, int64_t at)
{
	struct ledger_row r = {.slot_ms = first, .finished_ms = at};
	char d[128];

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_ACKED);
	snprintf(d, sizeof(d), "{\"first_ms\":%lld,\"last_ms\":%lld}",
		 (long long)first, (long long)last);
	r.details_json = d;
	assert_int_equal(store_ledger_append(s, &r, NULL), 0);
}

/* An acked slot is listed and no longer counts, inside its ack's range
 * only and for its own schedule only; missed slots count like lost ones
 * until then. */
static void report_counts_acked_slots_apart(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_report rep;
	struct sc_err err = {0};

	for (int i = 0; i < 4; i++)
		append(s, "hourly", T0 + i * HOUR, LEDGER_MISSED, T0 + 5 * HOUR);
	append(s, "daily", T0, LEDGER_LOST, T0 + 1000);
	assert_int_equal(ledger_lost_report(s, &all, &rep, &err), 0);
	assert_int_equal(rep.n_missed, 4);
	assert_int_equal(rep.n_lost, 1);
	ledger_report_dispose(&rep);

	/* An ack of hours 1..2 of hourly; one of "daily" at another slot;
	 * one of another schedule over everything. */
	append_ack(s, "hourly", T0 + HOUR, T0 + 2 * HOUR, T0 + 6 * HOUR);
	append_ack(s, "daily", T0 + HOUR, T0 + HOUR, T0 + 6 * HOUR);
	append_ack(s, "other", T0 - HOUR, T0 + 9 * HOUR, T0 + 6 * HOUR);
	assert_int_equal(ledger_lost_report(s, &all, &rep, &err), 0);
	assert_int_equal(rep.n, 5);
	assert_int_equal(rep.n_acked, 2);
	assert_int_equal(rep.n_missed, 2);
	assert_int_equal(rep.n_lost, 1);
	for (size_t i = 0; i < rep.n; i++) {
		const struct ledger_row *r = &rep.rows[i];
		bool in = strcmp(r->schedule, "hourly") == 0 &&
			  r->slot_ms >= T0 + HOUR && r->slot_ms <= T0 + 2 * HOUR;
		assert_int_equal(rep.acked_ms[i], in ? T0 + 6 * HOUR : 0);
	}
	ledger_report_dispose(&rep);

	/* The rest acked: nothing counts any more. */
	append_ack(s, "hourly", T0, T0 + 3 * HOUR, T0 + 7 * HOUR);
	append_ack(s, "daily", T0, T0, T0 + 7 * HOUR);
	assert_int_equal(ledger_lost_report(s, &all, &rep, &err), 0);
	assert_int_equal(rep.n_acked, 5);
	assert_int_equal(rep.n_missed + rep.n_lost, 0);
	ledger_report_dispose(&rep);
	store_close(s);
	sc_clock_free(clock);
}

/* The report refuses the filters that could drop one of its rows. */
static void report_takes_no_limit_or_outcome(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_report rep;
	struct sc_err err = {0};
	struct ledger_filter f = all;

	f.limit = 1;
	assert_int_equal(ledger_lost_report(s, &f, &rep, &err), SC_EINVAL);
	ledger_report_dispose(&rep);
	f = all;
	f.outcome = LEDGER_SUCCESS;
	assert_int_equal(ledger_lost_report(s, &f, &rep, &err), SC_EINVAL);
	ledger_report_dispose(&rep);
	store_close(s);
	sc_clock_free(clock);
}

/* The newest N rows, shown oldest first. */
static void read_turns_newest_first_around(void **state)
{
	struct sc_clock *clock = sc_clock_virtual_new(T0);
	struct store *s = tb_open(state, clock);
	struct ledger_filter f = all;
	struct ledger_row *rows = NULL;
	size_t n = 0;

	for (int i = 0; i < 5; i++)
		append(s, "daily", T0 + i * 24 * HOUR, LEDGER_SUCCESS,
		       T0 + i * 24 * HOUR);
	f.limit = 3;
	f.newest_first = true;
	assert_int_equal(ledger_read(s, &f, &rows, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].slot_ms, T0 + 2 * 24 * HOUR);
	assert_int_equal(rows[2].slot_ms, T0 + 4 * 24 * HOUR);
	store_ledger_rows_free(rows, n);
	store_close(s);
	sc_clock_free(clock);
}

static void outcome_words(void **state)
{
	(void)state;
	assert_true(ledger_outcome_known(LEDGER_LOST));
	assert_true(ledger_outcome_known(LEDGER_DECISION));
	assert_true(ledger_outcome_known(LEDGER_ALERT));
	assert_true(ledger_outcome_known(LEDGER_ACKED));
	assert_true(ledger_outcome_known(LEDGER_RECOVERED));
	assert_true(ledger_outcome_known(LEDGER_LATE));
	assert_true(ledger_outcome_known(LEDGER_OVERRUN));
	assert_true(ledger_outcome_known(LEDGER_STALE));
	assert_true(ledger_outcome_known(LEDGER_SKIPPED));
	assert_true(ledger_outcome_known(LEDGER_PAUSED));
	assert_true(ledger_outcome_known(LEDGER_REPLACED));
	assert_true(ledger_outcome_known(LEDGER_ABANDONED));
	assert_false(ledger_outcome_known("completed"));
	assert_false(ledger_outcome_known(NULL));
	assert_int_equal(ledger_n_outcomes, 18);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(report_counts_recovered_slots_apart),
		cmocka_unit_test(report_counts_acked_slots_apart),
		cmocka_unit_test(report_takes_no_limit_or_outcome),
		cmocka_unit_test(read_turns_newest_first_around),
		cmocka_unit_test(outcome_words),
	};
	return tb_run_all("ledger", tests, sizeof(tests) / sizeof(tests[0]));
}
