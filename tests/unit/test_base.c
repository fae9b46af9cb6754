/*
 * test_base.c - errors, buffers, clock and calendar helpers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "err.h"

static void first_error_wins(void **state)
{
	struct sc_err err = {0};

	assert_int_equal(sc_err_set(&err, SC_ETASK, "task %s failed", "a"),
			 SC_ETASK);
	assert_int_equal(sc_err_set(&err, SC_EDELIVERY, "notice failed"),
			 SC_EDELIVERY);
	assert_int_equal(err.code, SC_ETASK);
	assert_string_equal(err.msg, "task a failed");
	assert_int_equal(sc_err_set(NULL, SC_EIO, "x"), SC_EIO);
	sc_err_set(&(struct sc_err){0}, SC_EIO, "a\nb");
}

static void error_message_is_one_line(void **state)
{
	struct sc_err err = {0};

	sc_err_set(&err, SC_EIO, "line one\nline two");
	assert_null(strchr(err.msg, '\n'));
	assert_string_equal(sc_strerror(SC_ENEVER),
			    "cron expression never fires");
}

static void buf_caps_and_takes(void **state)
{
	struct buf b;

	buf_init(&b, 10);
	assert_int_equal(buf_adds(&b, "hello"), 0);
	assert_int_equal(buf_addf(&b, "%d", 12345), 0);
	assert_string_equal(buf_str(&b), "hello12345");
	/* A failed append leaves the content unchanged. */
	assert_int_equal(buf_adds(&b, "x"), SC_ETOOBIG);
	assert_string_equal(buf_str(&b), "hello12345");
	char *s = buf_take(&b);
	assert_string_equal(s, "hello12345");
	assert_int_equal(b.len, 0);
	sc_free(s);
	buf_dispose(&b);
}

static void calendar_round_trips(void **state)
{
	static const struct {
		int y, m, d;
		int64_t days;
		int wday;
	} rows[] = {
		{1970, 1, 1, 0, 4},      {2000, 2, 29, 11016, 2},
		{2026, 11, 29, 20786, 0}, {1969, 12, 31, -1, 3},
		{2100, 3, 1, 47541, 1},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int64_t y;
		int m, d;
		assert_int_equal(clock_days_from_civil(rows[i].y, rows[i].m,
						       rows[i].d),
				 rows[i].days);
		clock_civil_from_days(rows[i].days, &y, &m, &d);
		assert_int_equal(y, rows[i].y);
		assert_int_equal(m, rows[i].m);
		assert_int_equal(d, rows[i].d);
		assert_int_equal(clock_weekday(rows[i].days), rows[i].wday);
	}
}

static void iso_parse_and_format(void **state)
{
	static const struct {
		const char *in;
		int64_t ms;
	} ok[] = {
		{"2026-03-08T03:30:00-04:00", 1772955000000},
		{"2026-03-08T07:30:00Z", 1772955000000},
		{"2026-03-08 07:30Z", 1772955000000},
		{"2026-03-08T16:30:00+0900", 1772955000000},
		{"1970-01-01T00:00:00.250Z", 250},
	};
	static const char *bad[] = {
		"2026-03-08T03:30:00", "2026-02-30T00:00:00Z", "yesterday",
		"2026-03-08T24:00:00Z", "2026-03-08T03:30:00+0900x", "",
	};
	char out[CLOCK_ISO_MAX];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = 0;
		assert_int_equal(clock_parse_iso(ok[i].in, &ms, NULL), 0);
		assert_int_equal(ms, ok[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sc_err err = {0};
		int64_t ms = 0;
		assert_int_equal(clock_parse_iso(bad[i], &ms, &err), SC_EINVAL);
		assert_non_null(strstr(err.msg, "invalid time"));
	}
	assert_string_equal(clock_format_utc(1772955000000, out),
			    "2026-03-08T07:30:00Z");
	assert_string_equal(clock_format_utc(-1, out),
			    "1969-12-31T23:59:59.999Z");
}

static void durations(void **state)
{
	static const struct {
		const char *in;
		int64_t ms;
	} ok[] = {{"1500ms", 1500}, {"90s", 90000},     {"30m", 1800000},
		  {"2h", 7200000}, {"1d", 86400000},   {"1h30m", 5400000}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = 0;
		assert_int_equal(clock_parse_duration(ok[i].in, &ms, NULL), 0);
		assert_int_equal(ms, ok[i].ms);
	}
	static const char *bad[] = {"", "10", "5 m", "-1s", "1w", "m"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = 0;
		assert_int_equal(clock_parse_duration(bad[i], &ms, NULL),
				 SC_EINVAL);
	}
}

/*
 * Issue 11, item 4: each term of a duration was capped but not the sum,
 * so eight huge terms plus 90008ms wrapped to 1m30s. A duration that is
 * accepted is at most CLOCK_DURATION_MAX_MS and round-trips.
 */
static void issue11_duration_sum_is_capped(void **state)
{
	char in[512], back[64];
	int64_t ms = 0;

	in[0] = '\0';
	for (int i = 0; i < 8; i++)
		strcat(in, "2305843009213693951ms");
	strcat(in, "90008ms");
	assert_int_equal(clock_parse_duration(in, &ms, NULL), SC_EINVAL);
	in[0] = '\0';
	for (int i = 0; i < 8; i++)
		strcat(in, "26687583d");
	strcat(in, "1s");
	assert_int_equal(clock_parse_duration(in, &ms, NULL), SC_EINVAL);
	assert_int_equal(clock_parse_duration("9223372036854775807ms", &ms,
					      NULL), SC_EINVAL);
	assert_int_equal(clock_parse_duration("99999999999999999999d", &ms,
					      NULL), SC_EINVAL);
	/* Too long is said so, not "invalid": the form is right. */
	struct sc_err e = {0};
	assert_int_equal(clock_parse_duration("99999999999d", &ms, &e),
			 SC_EINVAL);
	assert_string_equal(e.msg, "duration \"99999999999d\" is too long "
			    "(at most 3652425d)");
	sc_err_clear(&e);
	assert_int_equal(clock_parse_duration("99999999999999999999d", &ms,
					      &e), SC_EINVAL);
	assert_non_null(strstr(e.msg, "is too long"));
	sc_err_clear(&e);
	assert_int_equal(clock_parse_duration("5x", &ms, &e), SC_EINVAL);
	assert_non_null(strstr(e.msg, "invalid duration \"5x\""));
	/* The largest accepted value, in one term and as a sum. */
	snprintf(in, sizeof(in), "%lldms", (long long)CLOCK_DURATION_MAX_MS);
	assert_int_equal(clock_parse_duration(in, &ms, NULL), 0);
	assert_int_equal(ms, CLOCK_DURATION_MAX_MS);
	snprintf(in, sizeof(in), "%lldms", (long long)CLOCK_DURATION_MAX_MS + 1);
	assert_int_equal(clock_parse_duration(in, &ms, NULL), SC_EINVAL);
	snprintf(in, sizeof(in), "%lldd%lldms",
		 (long long)(CLOCK_DURATION_MAX_MS / 86400000),
		 (long long)(CLOCK_DURATION_MAX_MS % 86400000) + 1);
	assert_int_equal(clock_parse_duration(in, &ms, NULL), SC_EINVAL);
	/* Round trip: what is accepted prints back to the same value. */
	static const char *const ok[] = {"1d1d1d", "0ms", "1h30m90s",
					 "3652425d", "86399999ms"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t a = 0, b = -1;
		assert_int_equal(clock_parse_duration(ok[i], &a, NULL), 0);
		snprintf(back, sizeof(back), "%lldms", (long long)a);
		assert_int_equal(clock_parse_duration(back, &b, NULL), 0);
		assert_int_equal(a, b);
	}
}

/*
 * A duration in messages (config ranges, alerts, timeouts, explain):
 * each unit once, largest first, and what it prints reads back to the
 * same value, up to the largest accepted one.
 */
static void durations_print_as_they_are_written(void **state)
{
	static const struct {
		int64_t ms;
		const char *out;
	} cases[] = {
		{0, "0s"},
		{1, "1ms"},
		{999, "999ms"},
		{1000, "1s"},
		{1500, "1s500ms"},
		{90000, "1m30s"},
		{5400000, "1h30m"},
		{86400000, "1d"},
		{INT64_C(3153600000000), "36500d"},
		{86400000 + 5, "1d5ms"},
		{CLOCK_DURATION_MAX_MS, "3652425d"},
		{CLOCK_DURATION_MAX_MS - 1, "3652424d23h59m59s999ms"},
		{-5, "-5ms"},
	};
	char out[CLOCK_DUR_MAX], small[4];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_string_equal(clock_format_duration(cases[i].ms, out,
							  sizeof(out)),
				    cases[i].out);
		int64_t back = -1;
		if (cases[i].ms < 0)
			continue;
		assert_int_equal(clock_parse_duration(out, &back, NULL), 0);
		assert_int_equal(back, cases[i].ms);
	}
	/* Cut, never overrun, when the buffer is short. */
	assert_string_equal(clock_format_duration(5400000, small,
						  sizeof(small)), "1h3");
}

/*
 * Issue 11, item 13: an ISO instant is in the years 1-9999 after its
 * offset is applied, not only as written.
 */
static void issue11_iso_range_after_offset(void **state)
{
	static const char *const bad[] = {
		"0001-01-01T00:00:00+00:01", "0001-01-01T00:59:59+01:00",
		"9999-12-31T23:59:59-00:01", "9999-12-31T23:30:00-01:00",
		"0000-06-01T00:00:00Z",      "0000-12-31T23:59:59-01:00",
	};
	int64_t ms = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sc_err err = {0};
		if (clock_parse_iso(bad[i], &ms, &err) != SC_EINVAL)
			fail_msg("%s accepted as %lld", bad[i], (long long)ms);
		assert_non_null(strstr(err.msg, "1-9999"));
	}
	assert_int_equal(clock_parse_iso("0001-01-01T00:00:00Z", &ms, NULL), 0);
	assert_int_equal(ms, INT64_C(-62135596800000));
	assert_int_equal(clock_parse_iso("0001-01-01T01:00:00+01:00", &ms,
					 NULL), 0);
	assert_int_equal(ms, INT64_C(-62135596800000));
	assert_int_equal(clock_parse_iso("9999-12-31T23:59:59.999Z", &ms,
					 NULL), 0);
	assert_int_equal(ms, INT64_C(253402300799999));
	assert_int_equal(clock_parse_iso("9999-12-31T22:59:59-01:00", &ms,
					 NULL), 0);
}

static void virtual_clock_moves_only_when_told(void **state)
{
	struct sc_clock *c = sc_clock_virtual_new(1000);

	assert_non_null(c);
	assert_true(sc_clock_is_virtual(c));
	assert_int_equal(sc_clock_now_ms(c), 1000);
	sc_clock_advance_ms(c, 500);
	assert_int_equal(sc_clock_now_ms(c), 1500);
	sc_clock_set_ms(c, 42);
	assert_int_equal(sc_clock_now_ms(c), 42);
	sc_clock_free(c);
	assert_false(sc_clock_is_virtual(sc_clock_real()));
	assert_true(sc_clock_now_ms(sc_clock_real()) > 1700000000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_error_wins),
		cmocka_unit_test(error_message_is_one_line),
		cmocka_unit_test(buf_caps_and_takes),
		cmocka_unit_test(calendar_round_trips),
		cmocka_unit_test(iso_parse_and_format),
		cmocka_unit_test(durations),
		cmocka_unit_test(issue11_duration_sum_is_capped),
		cmocka_unit_test(durations_print_as_they_are_written),
		cmocka_unit_test(issue11_iso_range_after_offset),
		cmocka_unit_test(virtual_clock_moves_only_when_told),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
