/*
 * test_cron.c - cron parsing, next fire times, DST, class, retry timeline.
 *
 * Table-driven like curl's unit1395: one row per case, one loop per table.
 * A new edge case is a new row. Expected instants are written as local ISO
 * 8601 with the offset the zone has at that moment, worked out by hand
 * from the calendar and the zone's published rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "cron.h"
#include "tz.h"

static int64_t iso(const char *s)
{
	int64_t ms = 0;
	struct sc_err err = {0};

	if (clock_parse_iso(s, &ms, &err) != 0)
		fail_msg("bad test time %s: %s", s, err.msg);
	return ms;
}

#define NEXT_MAX 4

static const struct next_row {
	const char *expr;
	const char *zone;
	const char *from;
	const char *want[NEXT_MAX]; /* the next instants, in order */
} next_rows[] = {
	/* Every syntax form, in UTC. */
	{"* * * * *", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"}},
	{"*/15 * * * *", "UTC", "2026-01-01T00:07:30Z",
	 {"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z"}},
	{"5-10/2 * * * *", "UTC", "2026-01-01T00:06:00Z",
	 {"2026-01-01T00:07:00Z", "2026-01-01T00:09:00Z",
	  "2026-01-01T01:05:00Z"}},
	{"10/20 * * * *", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-01T00:10:00Z", "2026-01-01T00:30:00Z",
	  "2026-01-01T00:50:00Z", "2026-01-01T01:10:00Z"}},
	{"0,30 9 * * *", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-01T09:00:00Z", "2026-01-01T09:30:00Z",
	  "2026-01-02T09:00:00Z"}},
	{"*/15,30 0 * * *", "UTC", "2026-01-01T00:10:00Z",
	 {"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z",
	  "2026-01-01T00:45:00Z"}},
	{"0 0 * JAN,jul *", "UTC", "2026-02-01T00:00:00Z",
	 {"2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z"}},
	{"0 0 1 Feb-apr/2 *", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-02-01T00:00:00Z", "2026-04-01T00:00:00Z",
	  "2027-02-01T00:00:00Z"}},
	/* 2026-01-01 is a Thursday. */
	{"0 12 * * mon-wed", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-05T12:00:00Z", "2026-01-06T12:00:00Z",
	  "2026-01-07T12:00:00Z", "2026-01-12T12:00:00Z"}},
	{"0 12 * * FRI-SUN", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-02T12:00:00Z", "2026-01-03T12:00:00Z",
	  "2026-01-04T12:00:00Z", "2026-01-09T12:00:00Z"}},
	{"0 12 * * 0,7", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z"}},
	{"0 12 * * 7", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-04T12:00:00Z"}},
	{"0 12 * * 5-7", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-02T12:00:00Z", "2026-01-03T12:00:00Z",
	  "2026-01-04T12:00:00Z"}},
	{"0 12 ? * 5", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-02T12:00:00Z", "2026-01-09T12:00:00Z"}},
	{"0 12 * * */3", "UTC", "2026-01-01T00:00:00Z", /* SUN, WED, SAT */
	 {"2026-01-03T12:00:00Z", "2026-01-04T12:00:00Z",
	  "2026-01-07T12:00:00Z"}},
	/* L, 5L, 5#2, 1#5. */
	{"0 0 L * *", "UTC", "2026-01-15T00:00:00Z",
	 {"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z",
	  "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z"}},
	{"0 0 L 2 *", "UTC", "2027-03-01T00:00:00Z",
	 {"2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"}},
	{"0 0 15,L * *", "UTC", "2026-02-01T00:00:00Z",
	 {"2026-02-15T00:00:00Z", "2026-02-28T00:00:00Z",
	  "2026-03-15T00:00:00Z"}},
	{"0 0 * * 5L", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z",
	  "2026-03-27T00:00:00Z"}},
	{"0 0 * * FRIL", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-30T00:00:00Z"}},
	{"0 0 * * 5#2", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-09T00:00:00Z", "2026-02-13T00:00:00Z",
	  "2026-03-13T00:00:00Z"}},
	{"0 0 * * MON#5", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z"}},
	{"0 9 * * 5#2,1L", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-09T09:00:00Z", "2026-01-26T09:00:00Z",
	  "2026-02-13T09:00:00Z", "2026-02-23T09:00:00Z"}},
	/* Macros. 2026-05-05 is a Tuesday. */
	{"@yearly", "UTC", "2026-05-05T10:30:00Z", {"2027-01-01T00:00:00Z"}},
	{"@annually", "UTC", "2026-05-05T10:30:00Z", {"2027-01-01T00:00:00Z"}},
	{"@monthly", "UTC", "2026-05-05T10:30:00Z", {"2026-06-01T00:00:00Z"}},
	{"@weekly", "UTC", "2026-05-05T10:30:00Z", {"2026-05-10T00:00:00Z"}},
	{"@daily", "UTC", "2026-05-05T10:30:00Z", {"2026-05-06T00:00:00Z"}},
	{"@MIDNIGHT", "UTC", "2026-05-05T10:30:00Z", {"2026-05-06T00:00:00Z"}},
	{"@hourly", "UTC", "2026-05-05T10:30:00Z", {"2026-05-05T11:00:00Z"}},
	/* 6 fields: leading seconds. */
	{"*/10 * * * * *", "UTC", "2026-01-01T00:00:05Z",
	 {"2026-01-01T00:00:10Z", "2026-01-01T00:00:20Z"}},
	{"0 0 17 * * 5", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-02T17:00:00Z", "2026-01-09T17:00:00Z"}},
	{"30 15 10 1 1 *", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-01T10:15:30Z", "2027-01-01T10:15:30Z"}},
	{"0 0 17 ? * 5", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-02T17:00:00Z"}},
	/* Any white space separates fields (YAML may leave a newline). */
	{" 0\t17 * *\t5\n", "UTC", "2026-01-01T00:00:00Z",
	 {"2026-01-02T17:00:00Z"}},
	{"@daily\n", "UTC", "2026-01-01T00:00:00Z", {"2026-01-02T00:00:00Z"}},
	/* Strictly after, with milliseconds. */
	{"0 17 * * 5", "UTC", "2026-01-02T17:00:00Z", {"2026-01-09T17:00:00Z"}},
	{"0 17 * * 5", "UTC", "2026-01-02T16:59:59.999Z",
	 {"2026-01-02T17:00:00Z"}},
	{"0 17 * * 5", "UTC", "1969-12-31T23:59:59.500Z",
	 {"1970-01-02T17:00:00Z"}},
	/* Leap years: 2100 is not one. */
	{"0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z",
	 {"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
	{"0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z",
	 {"2104-02-29T00:00:00Z"}},
	/* 1900 is not one, 2000 is (the walk's own leap test). */
	{"0 0 29 2 *", "UTC", "1896-03-01T00:00:00Z",
	 {"1904-02-29T00:00:00Z"}},
	{"0 0 29 2 *", "UTC", "1999-01-01T00:00:00Z",
	 {"2000-02-29T00:00:00Z", "2004-02-29T00:00:00Z"}},
	/* Months apart, over a year's end into a leap year. */
	{"0 0 1 3,10 *", "UTC", "2027-10-01T00:00:00Z",
	 {"2028-03-01T00:00:00Z", "2028-10-01T00:00:00Z",
	  "2029-03-01T00:00:00Z"}},
	/* Every day matches: today's next time, else tomorrow's first. */
	{"*/5 * * * *", "UTC", "2026-12-31T23:57:30Z",
	 {"2027-01-01T00:00:00Z", "2027-01-01T00:05:00Z"}},
	{"*/10 * * * * *", "UTC", "2028-02-28T23:59:55Z",
	 {"2028-02-29T00:00:00Z"}},
	{"0 0 1-31 * *", "UTC", "2026-02-28T00:00:00Z",
	 {"2026-03-01T00:00:00Z"}},
	{"0 0 1-15 * 0-6", "UTC", "2026-01-20T00:00:00Z", /* OR: every day */
	 {"2026-01-21T00:00:00Z"}},
	/* After the day's last match: none that day. */
	{"0 9 1 * *", "UTC", "2026-03-01T09:00:00Z",
	 {"2026-04-01T09:00:00Z"}},
	{"30 15 10 * * *", "UTC", "2026-03-01T10:15:29Z",
	 {"2026-03-01T10:15:30Z", "2026-03-02T10:15:30Z"}},
	/* The 31st and 30th skip short months. */
	{"0 0 31 * *", "UTC", "2026-01-31T00:00:00Z",
	 {"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z",
	  "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
	{"0 0 30 * *", "UTC", "2026-01-30T00:00:00Z",
	 {"2026-03-30T00:00:00Z"}},
	/* The OR rule: both day fields restricted -> either matches. */
	{"0 0 13 * 5", "UTC", "2026-04-04T00:00:00Z", /* Apr 13 is a Monday */
	 {"2026-04-10T00:00:00Z", "2026-04-13T00:00:00Z",
	  "2026-04-17T00:00:00Z"}},
	{"0 0 13 * 5", "UTC", "2026-02-07T00:00:00Z", /* Friday the 13th: once */
	 {"2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"}},
	{"0 0 */2 * 1", "UTC", "2026-01-10T00:00:00Z", /* odd days or Monday */
	 {"2026-01-11T00:00:00Z", "2026-01-12T00:00:00Z",
	  "2026-01-13T00:00:00Z"}},
	{"0 0 1 * 1", "UTC", "2026-02-24T00:00:00Z",
	 {"2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z",
	  "2026-03-09T00:00:00Z"}},
	{"0 0 31 2 5", "UTC", "2026-02-01T00:00:00Z", /* no 31st: Fridays */
	 {"2026-02-06T00:00:00Z"}},
	/* One star day field: the other alone decides (AND). */
	{"0 0 * * 1", "UTC", "2026-02-24T00:00:00Z", {"2026-03-02T00:00:00Z"}},
	{"0 0 ? * 1", "UTC", "2026-02-24T00:00:00Z", {"2026-03-02T00:00:00Z"}},
	/* Zones without DST. */
	{"0 17 * * 5", "Asia/Seoul", "2026-01-01T00:00:00Z",
	 {"2026-01-02T17:00:00+09:00", "2026-01-09T17:00:00+09:00"}},
	{"0 9 1 * *", "Asia/Seoul", "2026-01-31T23:00:00Z",
	 {"2026-02-01T09:00:00+09:00"}},

	/* DST, America/New_York 2026: Mar 8 02:00 -> 03:00; Nov 1 02:00
	 * EDT -> 01:00 EST. Fixed-time in the gap: once, at 03:00. */
	{"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
	 {"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
	{"0,30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
	 {"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
	{"0 2,3 * * *", "America/New_York", "2026-03-07T12:00:00Z",
	 {"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
	{"30 2 * * *", "America/New_York", "2026-03-08T06:59:59Z",
	 {"2026-03-08T03:00:00-04:00"}},
	{"30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z",
	 {"2026-03-09T02:30:00-04:00"}},
	/* Not fixed-time: follows real time through the gap. */
	{"*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z",
	 {"2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00",
	  "2026-03-08T03:30:00-04:00"}},
	{"30 * * * *", "America/New_York", "2026-03-08T06:00:00Z",
	 {"2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00"}},
	/* Overlap: fixed-time fires in the first pass only ... */
	{"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
	 {"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
	{"30 1 * * *", "America/New_York", "2026-11-01T06:10:00Z",
	 {"2026-11-02T01:30:00-05:00"}},
	/* ... the others fire in both passes. */
	{"*/30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z",
	 {"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00",
	  "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00"}},
	{"*/15 * * * *", "America/New_York", "2026-11-01T05:40:00Z",
	 {"2026-11-01T01:45:00-04:00", "2026-11-01T01:00:00-05:00",
	  "2026-11-01T01:15:00-05:00"}},
	/* Near a change, with the next match a year away: the second pass
	 * must not be jumped over. */
	{"*/30 1 1 11 *", "America/New_York", "2026-11-01T05:40:00Z",
	 {"2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00",
	  "2027-11-01T01:00:00-04:00"}},
	{"30 1 1 11 *", "America/New_York", "2026-11-01T05:40:00Z",
	 {"2027-11-01T01:30:00-04:00"}},
	/* Beyond the file's table (2037): the footer rule. 2045-03-12 is
	 * the second Sunday of March. */
	{"30 2 * * *", "America/New_York", "2045-03-11T12:00:00Z",
	 {"2045-03-12T03:00:00-04:00", "2045-03-13T02:30:00-04:00"}},
	{"0 12 * * *", "America/New_York", "2100-07-01T00:00:00Z",
	 {"2100-07-01T12:00:00-04:00"}},

	/* Europe/Berlin 2026: Mar 29 02:00 -> 03:00; Oct 25 03:00 -> 02:00. */
	{"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
	 {"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
	{"0 15 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
	 {"2026-03-29T03:00:00+02:00"}},
	{"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
	 {"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
	{"0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z",
	 {"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00",
	  "2026-10-25T03:00:00+01:00"}},
	{"0 */1 * * *", "Europe/Berlin", "2026-10-24T23:30:00Z",
	 {"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00"}},

	/* Australia/Lord_Howe 2026: a 30-minute shift. Apr 5 02:00 (+11)
	 * -> 01:30 (+10:30); Oct 4 02:00 (+10:30) -> 02:30 (+11). */
	{"15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
	 {"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
	{"*/15 * * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z",
	 {"2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00",
	  "2026-10-04T02:45:00+11:00"}},
	{"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z",
	 {"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
	{"*/20 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:30:00Z",
	 {"2026-04-05T01:40:00+11:00", "2026-04-05T01:40:00+10:30",
	  "2026-04-06T01:00:00+10:30"}},
};

static void next_table(void **state)
{
	for (size_t i = 0; i < sizeof(next_rows) / sizeof(next_rows[0]); i++) {
		const struct next_row *r = &next_rows[i];
		struct sc_cron c;
		struct sc_err err = {0};
		const struct sc_zone *z;
		int64_t t = iso(r->from);

		if (sc_cron_parse(r->expr, &c, &err) != 0)
			fail_msg("row %zu \"%s\": %s", i, r->expr, err.msg);
		if (sc_zone_load(r->zone, &z, &err) != 0)
			fail_msg("row %zu: %s", i, err.msg);
		for (int k = 0; k < NEXT_MAX && r->want[k]; k++) {
			char got[CLOCK_ISO_MAX], want[CLOCK_ISO_MAX];
			if (sc_cron_next(&c, z, t, &t, &err) != 0)
				fail_msg("row %zu \"%s\": %s", i, r->expr,
					 err.msg);
			clock_format_utc(t, got);
			clock_format_utc(iso(r->want[k]), want);
			if (strcmp(got, want) != 0)
				fail_msg("row %zu \"%s\" in %s after %s, #%d: "
					 "got %s, want %s (%s)", i, r->expr,
					 r->zone, r->from, k + 1, got, want,
					 r->want[k]);
		}
	}
}

static const struct err_row {
	const char *expr;
	int code;
	const char *msg; /* a substring of the message */
} err_rows[] = {
	{"0 25 * * *", SC_ECRON,
	 "invalid cron \"0 25 * * *\": hour: 25 is out of range 0-23"},
	{"60 * * * *", SC_ECRON, "minute: 60 is out of range 0-59"},
	{"60 * * * * *", SC_ECRON, "second: 60 is out of range 0-59"},
	{"* * 0 * *", SC_ECRON, "day-of-month: 0 is out of range 1-31"},
	{"* * 32 * *", SC_ECRON, "day-of-month: 32 is out of range 1-31"},
	{"* * * 13 *", SC_ECRON, "month: 13 is out of range 1-12"},
	{"* * * * 8", SC_ECRON, "day-of-week: 8 is out of range 0-7"},
	{"* * * * 99999999", SC_ECRON, "day-of-week: 99999999 is out of range"},
	{"* * * FOO *", SC_ECRON, "month: unknown name 'FOO'"},
	{"* * * * MONDAY", SC_ECRON, "day-of-week: unknown name 'MONDAY'"},
	{"* JAN * * *", SC_ECRON, "hour: 'JAN' is not a number"},
	{"* * * * 1-", SC_ECRON, "day-of-week: '1-' ends where a value"},
	{"5-1 * * * *", SC_ECRON, "minute: range '5-1' is backwards"},
	{"* * * * SUN-SAT/0", SC_ECRON, "step 0 in 'SUN-SAT/0' is out of range"},
	{"*/0 * * * *", SC_ECRON, "minute: step 0 in '*/0' is out of range 1-60"},
	{"*/61 * * * *", SC_ECRON, "step 61 in '*/61' is out of range 1-60"},
	{"*/x * * * *", SC_ECRON, "minute: step in '*/x' must be a number"},
	{"1,,2 * * * *", SC_ECRON, "minute: empty list item"},
	{"1, * * * *", SC_ECRON, "minute: empty list item"},
	{"? * * * *", SC_ECRON, "minute: '?' is only allowed"},
	{"1x * * * *", SC_ECRON, "minute: unexpected 'x' in '1x'"},
	{"*5 * * * *", SC_ECRON, "minute: unexpected '5' in '*5'"},
	{"* * L/2 * *", SC_ECRON, "day-of-month: 'L/2' is not a number"},
	{"* * * * L", SC_ECRON, "day-of-week: unknown name 'L'"},
	{"* * * * 5#6", SC_ECRON, "occurrence 6 in '5#6' is out of range 1-5"},
	{"* * * * 5#", SC_ECRON, "occurrence in '5#' must be a number"},
	{"* * * * 5L3", SC_ECRON, "unexpected '3' in '5L3'"},
	{"* * 5L * *", SC_ECRON, "day-of-month: unexpected 'L' in '5L'"},
	{"* * * * *,", SC_ECRON, "day-of-week: empty list item"},
	{"* * * *", SC_ECRON, "expected 5 or 6 fields, got 4"},
	{"* * * * * * *", SC_ECRON, "expected 5 or 6 fields, got more"},
	{"", SC_ECRON, "expected 5 or 6 fields, got 0"},
	{"   ", SC_ECRON, "expected 5 or 6 fields, got 0"},
	{"@fortnightly", SC_ECRON, "unknown macro '@fortnightly'"},
	{"@daily 5", SC_ECRON, "'@daily' takes no fields"},
	{"0 0 30 2 *", SC_ENEVER, "\"0 0 30 2 *\": never fires"},
	{"0 0 31 4,6,9,11 *", SC_ENEVER, "never fires"},
	{"0 0 L-1 * *", SC_ECRON, "day-of-month: 'L-1' is not a number"},
	{"0 0 \"x\t* * *", SC_ECRON, "invalid cron \"0 0 ?x\\t* * *\": hour"},
	/* Issue 11, item 13: numbers are shown whole, not cut at 6 digits. */
	{"*/1234567 * * * *", SC_ECRON,
	 "minute: step 1234567 in '*/1234567' is out of range 1-60"},
	{"*/00000000 * * * *", SC_ECRON,
	 "minute: step 00000000 in '*/00000000' is out of range 1-60"},
	{"99999999999999999999 * * * *", SC_ECRON,
	 "minute: 99999999999999999999 is out of range 0-59"},
	{"* * * * 5#0000009", SC_ECRON,
	 "occurrence 0000009 in '5#0000009' is out of range 1-5"},
	/* Issue 11, item 7: what the message quotes is cleaned. */
	{"0 17 * * \x1b[2J", SC_ECRON,
	 "invalid cron \"0 17 * * \\x1b[2J\": day-of-week: unexpected "
	 "'\\x1b' in '\\x1b[2J'"},
	{"0 17 * * 1\x07", SC_ECRON, "unexpected '\\x07' in '1\\x07'"},
	{"0 17 * * \xc3", SC_ECRON,
	 "day-of-week: unexpected '\\xc3' in '\\xc3'"},
	{"0 17 * * 1\xc3\xa9", SC_ECRON, "unexpected '\xc3\xa9' in '1\xc3\xa9'"},
	{"0 17 * * \xe2\x80\xae" "1", SC_ECRON, "unexpected '\\u202e'"},
	{"@\x1b]0;x\x07", SC_ECRON, "unknown macro '@\\x1b]0;x\\x07'"},
};

static void errors_table(void **state)
{
	for (size_t i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++) {
		const struct err_row *r = &err_rows[i];
		struct sc_cron c, before;
		struct sc_err err = {0};

		memset(&c, 0xab, sizeof(c));
		before = c;
		int rc = sc_cron_parse(r->expr, &c, &err);
		if (rc != r->code || err.code != r->code)
			fail_msg("row %zu \"%s\": rc %d (%s), want %d", i, r->expr,
				 rc, err.msg, r->code);
		if (!strstr(err.msg, r->msg))
			fail_msg("row %zu: message \"%s\" lacks \"%s\"", i,
				 err.msg, r->msg);
		assert_null(strchr(err.msg, '\n'));
		for (const char *p = err.msg; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				fail_msg("row %zu: raw control byte 0x%02x in "
					 "\"%s\"", i, (unsigned char)*p, err.msg);
		/* On failure the output is untouched. */
		assert_memory_equal(&c, &before, sizeof(c));
	}
}

/* Issue 11, item 13: leading zeros do not count against a number's size:
 * "*\/0000005" is a step of 5, not a refused "step 0". */
static void issue11_leading_zeros(void **state)
{
	static const char *const same[][2] = {
		{"*/0000005 * * * *", "*/5 * * * *"},
		{"0000005 0000017 * * *", "5 17 * * *"},
		{"0 0 * * 5#0000002", "0 0 * * 5#2"},
		{"00000000000000000000000000000030 * * * *", "30 * * * *"},
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		struct sc_cron a, b;
		struct sc_err err = {0};
		if (sc_cron_parse(same[i][0], &a, &err) != 0)
			fail_msg("\"%s\": %s", same[i][0], err.msg);
		assert_int_equal(sc_cron_parse(same[i][1], &b, NULL), 0);
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

static void too_long_and_null(void **state)
{
	char big[SC_CRON_EXPR_MAX + 20];
	struct sc_cron c;
	struct sc_err err = {0};

	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big + sizeof(big) - 10, "* * * * *", 9);
	assert_int_equal(sc_cron_parse(big, &c, &err), SC_ECRON);
	assert_non_null(strstr(err.msg, "longer than"));
	assert_int_equal(sc_cron_parse(NULL, &c, NULL), SC_ECRON);
}

static const struct class_row {
	const char *expr;
	enum sc_freq_class cls;
	const char *reason; /* substring */
} class_rows[] = {
	{"0 17 * * 5", SC_FREQ_LOW, "day-of-week is the single value FRI"},
	{"0 0 17 * * 5", SC_FREQ_LOW, "day-of-week"},
	{"10 17 * * 1-5", SC_FREQ_DEFAULT,
	 "neither day-of-month (*) nor day-of-week (MON-FRI)"},
	{"*/3 * * * *", SC_FREQ_DEFAULT, "neither"},
	{"0 9 1 * *", SC_FREQ_LOW, "day-of-month is the single value 1"},
	{"0 9 1,15 * *", SC_FREQ_DEFAULT, "day-of-month (1,15)"},
	{"0 9 * * MON", SC_FREQ_LOW, "day-of-week is the single value MON"},
	{"0 0 17 ? * 5", SC_FREQ_LOW, "day-of-week"},
	{"@weekly", SC_FREQ_LOW, "day-of-week is the single value SUN"},
	{"@monthly", SC_FREQ_LOW, "day-of-month is the single value 1"},
	{"@yearly", SC_FREQ_LOW, "day-of-month"},
	{"@daily", SC_FREQ_DEFAULT, "neither"},
	{"@hourly", SC_FREQ_DEFAULT, "neither"},
	{"0 0 L * *", SC_FREQ_LOW, "L (the last day)"},
	{"0 0 * * 5L", SC_FREQ_LOW, "the last Friday"},
	{"0 0 * * 5#2", SC_FREQ_LOW, "the second Friday"},
	{"0 0 * * 7", SC_FREQ_LOW, "SUN"},
	{"0 0 * * 5-5", SC_FREQ_DEFAULT, "(FRI) is a single fixed value; a range"},
	{"0 0 * * 5,5", SC_FREQ_DEFAULT, "neither"},
	{"0 0 */7 * *", SC_FREQ_DEFAULT, "neither"},
	{"0 0 * * */2", SC_FREQ_DEFAULT, "neither"},
	{"0 0 1 * 1-5", SC_FREQ_LOW, "day-of-month is the single value 1"},
	{"0 0 1-7 * 1", SC_FREQ_LOW, "day-of-week is the single value MON"},
};

static void class_table(void **state)
{
	for (size_t i = 0; i < sizeof(class_rows) / sizeof(class_rows[0]); i++) {
		const struct class_row *r = &class_rows[i];
		struct sc_cron c;
		struct sc_err err = {0};
		char reason[160];

		if (sc_cron_parse(r->expr, &c, &err) != 0)
			fail_msg("row %zu: %s", i, err.msg);
		enum sc_freq_class cls = sc_cron_class(&c, reason,
						       sizeof(reason));
		if (cls != r->cls || !strstr(reason, r->reason))
			fail_msg("row %zu \"%s\": class %s (%s), want %s (%s)",
				 i, r->expr, sc_freq_class_name(cls), reason,
				 sc_freq_class_name(r->cls), r->reason);
		assert_int_equal(sc_cron_class(&c, NULL, 0), r->cls);
	}
}

static void flags_follow_the_text(void **state)
{
	static const struct {
		const char *expr;
		unsigned on, off;
	} rows[] = {
		{"30 2 * * *", SC_CRON_FIXED_TIME | SC_CRON_DOM_STAR |
		 SC_CRON_DOW_STAR, SC_CRON_SECONDS},
		{"*/5 * * * *", SC_CRON_DOM_STAR, SC_CRON_FIXED_TIME},
		{"0 */2 * * *", 0, SC_CRON_FIXED_TIME},
		{"0 1-3 * * *", SC_CRON_FIXED_TIME, 0},
		{"* 0 2 * * *", SC_CRON_SECONDS, SC_CRON_FIXED_TIME},
		{"0 0 2 ? * ?", SC_CRON_FIXED_TIME | SC_CRON_DOM_STAR |
		 SC_CRON_DOW_STAR, 0},
		{"0 0 */1 * *", SC_CRON_DOW_STAR, SC_CRON_DOM_STAR},
		{"@hourly", 0, SC_CRON_FIXED_TIME},
		{"@daily", SC_CRON_FIXED_TIME, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sc_cron c;
		assert_int_equal(sc_cron_parse(rows[i].expr, &c, NULL), 0);
		if ((c.flags & rows[i].on) != rows[i].on ||
		    (c.flags & rows[i].off))
			fail_msg("\"%s\": flags 0x%x", rows[i].expr, c.flags);
	}
}

static void value_type_is_small_and_copyable(void **state)
{
	struct sc_cron a, b;
	int64_t t1, t2;

	assert_true(sizeof(struct sc_cron) <= 48);
	assert_int_equal(sc_cron_parse("0 17 * * 5", &a, NULL), 0);
	memcpy(&b, &a, sizeof(a));
	assert_int_equal(sc_cron_next(&a, NULL, 0, &t1, NULL), 0);
	assert_int_equal(sc_cron_next(&b, sc_zone_utc(), 0, &t2, NULL), 0);
	assert_int_equal(t1, t2);
	/* Equivalent texts give equal values. */
	assert_int_equal(sc_cron_parse("0 17 * * fri", &b, NULL), 0);
	assert_memory_equal(&a, &b, sizeof(a));
}

static void next_rejects_bad_input(void **state)
{
	struct sc_cron c;
	struct sc_err err = {0};
	int64_t t;

	memset(&c, 0, sizeof(c));
	assert_int_equal(sc_cron_next(&c, NULL, 0, &t, &err), SC_EINVAL);
	assert_int_equal(sc_cron_parse("* * * * *", &c, NULL), 0);
	assert_int_equal(sc_cron_next(&c, NULL, INT64_MAX, &t, NULL),
			 SC_EINVAL);
	assert_int_equal(sc_cron_next(&c, NULL, INT64_MIN, &t, NULL),
			 SC_EINVAL);
	/* A hand-made value that no day satisfies ends by the bound. */
	assert_int_equal(sc_cron_parse("0 0 29 2 *", &c, NULL), 0);
	c.mon = 1 << 4; /* the 31st of April: parse would refuse it */
	c.dom = 1u << 31;
	sc_err_clear(&err);
	assert_int_equal(sc_cron_next(&c, NULL, 0, &t, &err), SC_ENEVER);
	assert_non_null(strstr(err.msg, "400 years"));
}

static void long_runs_stay_ordered(void **state)
{
	/* Walk a year of several expressions in DST zones: every result is
	 * strictly later than the one before and matches the expression on
	 * the local wall clock. */
	static const char *const exprs[] = {"*/7 * * * *", "30 2 * * *",
					    "0 0 1 * *", "15 1 * * 0"};
	static const char *const zones[] = {"America/New_York",
					    "Europe/Berlin",
					    "Australia/Lord_Howe"};
	for (size_t e = 0; e < 4; e++)
		for (size_t zi = 0; zi < 3; zi++) {
			struct sc_cron c;
			const struct sc_zone *z;
			int64_t t = iso("2026-01-01T00:00:00Z"), prev = t;
			assert_int_equal(sc_cron_parse(exprs[e], &c, NULL), 0);
			assert_int_equal(sc_zone_load(zones[zi], &z, NULL), 0);
			int n = e == 0 ? 3000 : 400;
			for (int i = 0; i < n; i++) {
				assert_int_equal(sc_cron_next(&c, z, t, &t,
							      NULL), 0);
				assert_true(t > prev);
				prev = t;
				int64_t local = t / 1000 +
						sc_zone_offset_s(z, t);
				int64_t days = local / 86400;
				int sod = (int)(local % 86400);
				int64_t y;
				int m, d;
				clock_civil_from_days(days, &y, &m, &d);
				/* Fixed-time fires in a gap land at the change,
				 * off their wall time; skip those. */
				if ((c.flags & SC_CRON_FIXED_TIME) &&
				    sc_zone_offset_s(z, t - 1000) !=
					    sc_zone_offset_s(z, t))
					continue;
				assert_true(c.min >> (sod / 60 % 60) & 1);
				assert_true(c.hour >> (sod / 3600) & 1);
				assert_true(cron_day_mask(
					&c, cron_days_in_month(y, m),
					clock_weekday(days - d + 1)) >> d & 1);
			}
		}
}

/* Does local wall time w (seconds, as if UTC) match c? */
static bool wall_matches(const struct sc_cron *c, int64_t w)
{
	int64_t days = w / 86400, y;
	int sod = (int)(w % 86400), m, d;

	clock_civil_from_days(days, &y, &m, &d);
	return (c->sec >> (sod % 60) & 1) && (c->min >> (sod / 60 % 60) & 1) &&
	       (c->hour >> (sod / 3600) & 1) && (c->mon >> m & 1) &&
	       (cron_day_mask(c, cron_days_in_month(y, m),
			      clock_weekday(days - d + 1)) >> d & 1);
}

/*
 * The DST rule, checked against a slow reference that walks every minute:
 * real-time expressions fire at each UTC minute whose local time matches;
 * fixed-time ones fire at each matching wall minute, at its first instant,
 * or at the change when the wall time was skipped (once per change).
 */
static void brute_force_agrees(void **state)
{
	static const char *const exprs[] = {"*/30 1-3 * * *", "15 * 29 2 *",
					    "45 1,2 * * 0", "30 2 29 2 *",
					    "0,30 2 * * *", "0 3 * * *"};
	static const char *const zones[] = {"America/New_York",
					    "Europe/Berlin",
					    "Australia/Lord_Howe"};
	const int64_t t0 = iso("2026-01-01T00:00:00Z") / 1000;
	const int64_t t1 = iso("2030-01-01T00:00:00Z") / 1000;

	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++)
		for (size_t zi = 0; zi < 3; zi++) {
			struct sc_cron c;
			const struct sc_zone *z;
			assert_int_equal(sc_cron_parse(exprs[e], &c, NULL), 0);
			assert_int_equal(sc_zone_load(zones[zi], &z, NULL), 0);
			bool fixed = c.flags & SC_CRON_FIXED_TIME;
			int64_t t = t0 * 1000, last = INT64_MIN;
			int n = 0;
			/* Real time: UTC minutes; fixed: wall minutes. */
			for (int64_t x = t0 + 60; x < t1; x += 60) {
				int64_t want;
				if (!fixed) {
					struct tz_span sp;
					tz_span_at(z, x, &sp);
					if (!wall_matches(&c, x + sp.off_s))
						continue;
					want = x;
				} else {
					if (!wall_matches(&c, x))
						continue;
					int64_t u[2];
					if (tz_local_to_utc(z, x, u) > 0) {
						want = u[0];
					} else {
						struct tz_span sp;
						int32_t before = sc_zone_offset_s(
							z, (x - 86400) * 1000);
						tz_span_at(z, x - before, &sp);
						want = sp.start_s;
					}
					if (want == last || want <= t0)
						continue; /* once per change */
				}
				last = want;
				if (sc_cron_next(&c, z, t, &t, NULL) != 0)
					fail_msg("%s %s: next failed", exprs[e],
						 zones[zi]);
				if (t != want * 1000) {
					char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
					fail_msg("%s in %s, fire #%d: got %s, "
						 "want %s", exprs[e], zones[zi],
						 n + 1, clock_format_utc(t, a),
						 clock_format_utc(want * 1000, b));
				}
				n++;
			}
			assert_true(n > 0);
		}
}

/* ---- issue 11 item 14: next() on any zone or rule it accepts ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: a fixed seed, so a failure replays. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static int rnd_in(int lo, int hi)
{
	return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

static const char *pick(const char *const *v, size_t n)
{
	return v[rnd() % n];
}

/* A random 5-field expression: fields from small pools that cover stars,
 * steps, single values (fixed-time ones among them), ranges, lists, L,
 * nth and last weekdays, and rare days (29 Feb, the 31st). */
static void random_expr(char *out, size_t n)
{
	static const char *const mins[] = {"*", "*/7", "0", "30", "59",
					   "15,45", "0-10/5", "*/20"};
	static const char *const hours[] = {"*", "0", "1", "2", "3", "23",
					    "*/5", "1-3", "0,12", "12"};
	static const char *const doms[] = {"*", "*", "*", "1", "29", "31",
					   "L", "15", "1-7"};
	static const char *const mons[] = {"*", "*", "*", "2", "1", "3,10",
					   "11-12", "*/4"};
	static const char *const dows[] = {"*", "*", "*", "0", "1-5", "6",
					   "5L", "0#1", "3#5"};
	static const char *const macros[] = {"@yearly", "@monthly",
					     "@weekly", "@daily", "@hourly"};

	if (rnd() % 8 == 0) {
		snprintf(out, n, "%s", pick(macros, 5));
		return;
	}
	snprintf(out, n, "%s %s %s %s %s", pick(mins, 8), pick(hours, 10),
		 pick(doms, 9), pick(mons, 8), pick(dows, 9));
}

/* [+-]hh[:mm[:ss]] of v seconds (v may be negative). */
static void fmt_hms(char *out, size_t n, long v)
{
	long a = v < 0 ? -v : v;
	snprintf(out, n, "%s%ld:%02ld:%02ld", v < 0 ? "-" : "", a / 3600,
		 a / 60 % 60, a % 60);
}

static void random_date(char *out, size_t n)
{
	char t[32];
	long secs = rnd() % 3 == 0 ? (long)rnd_in(-167, 167) * 3600
		  : rnd() % 2	  ? (long)rnd_in(0, 3) * 3600
				  : (long)rnd_in(-167 * 3600, 167 * 3600);
	fmt_hms(t, sizeof(t), secs);
	switch (rnd() % 3) {
	case 0:
		snprintf(out, n, "M%d.%d.%d/%s", rnd_in(1, 12), rnd_in(1, 5),
			 rnd_in(0, 6), t);
		break;
	case 1:
		snprintf(out, n, "J%d/%s", rnd_in(1, 365), t);
		break;
	default:
		snprintf(out, n, "%d/%s", rnd_in(0, 365), t);
	}
}

/* A random POSIX rule within the limits (offsets to +-24:59:59, change
 * times to +-167 h); tz_load_rule may still refuse it (DST that does not
 * alternate): the caller skips those. */
static void random_rule(char *out, size_t n)
{
	char so[32], dof[32], d1[48], d2[48];
	long std = rnd() % 4 == 0 ? (rnd() % 2 ? 89999 : -89999)
				   : (long)rnd_in(-24, 24) * 3600 +
					     (long)rnd_in(0, 3) * 900;
	if (std > 89999)
		std = 89999;
	long dst = rnd() % 4 == 0 ? (rnd() % 2 ? 89999 : -89999)
		 : rnd() % 2	  ? std - 3600
				  : (long)rnd_in(-89999, 89999);
	if (dst < -89999)
		dst = -89999;
	fmt_hms(so, sizeof(so), std);
	fmt_hms(dof, sizeof(dof), dst);
	random_date(d1, sizeof(d1));
	random_date(d2, sizeof(d2));
	snprintf(out, n, "<S>%s<D>%s,%s,%s", so, dof, d1, d2);
}

/*
 * The first instant after `after` (s) at which c fires in z, by a slow
 * reference independent of cron_wall_next and its jumps: span by span
 * (tz_span_at), day by day on the span's wall clock, minute by minute in
 * matching days, with the DST rule of surecron.h: fixed-time expressions
 * skip the repeated wall times after a backward change and fire at a
 * forward change when a skipped wall time matches. Stops at `bound`;
 * returns INT64_MAX when nothing fires up to it. Also checks that the
 * spans it walks join up: each span's end is the next one's start, and
 * the offsets each claims for its neighbours are theirs.
 */
static int64_t reference_next(const struct sc_cron *c, const struct sc_zone *z,
			      int64_t after, int64_t bound, const char *what)
{
	bool fixed = c->flags & SC_CRON_FIXED_TIME;
	int64_t from = after + 1;
	struct tz_span sp;

	tz_span_at(z, from, &sp);
	/* The first span joins the one before it too; one without a start
	 * is the same span two years earlier. */
	struct tz_span pv;
	tz_span_at(z, sp.start_s != INT64_MIN ? sp.start_s - 1
					      : from - 2 * 366 * 86400, &pv);
	if (sp.start_s != INT64_MIN
		    ? pv.end_s != sp.start_s || pv.next_off_s != sp.off_s ||
			      sp.prev_off_s != pv.off_s
		    : pv.start_s != INT64_MIN || pv.end_s != sp.end_s ||
			      pv.off_s != sp.off_s)
		fail_msg("%s: the span at the start (from %lld, offset %d, "
			 "previous %d) does not join the one before it (to "
			 "%lld, offset %d, next %d)", what,
			 (long long)sp.start_s, sp.off_s, sp.prev_off_s,
			 (long long)pv.end_s, pv.off_s, pv.next_off_s);
	while (from <= bound) {
		int64_t lo = from + sp.off_s;
		if (sp.start_s >= from && fixed && sp.prev_off_s < sp.off_s &&
		    sp.start_s != INT64_MIN) {
			/* A forward change at from: a skipped wall minute
			 * that matches fires now. */
			int64_t g0 = sp.start_s + sp.prev_off_s;
			int64_t g1 = sp.start_s + sp.off_s;
			for (int64_t m = (g0 + 59) / 60 * 60; m < g1; m += 60)
				if (wall_matches(c, m))
					return sp.start_s;
		}
		if (fixed && sp.start_s != INT64_MIN &&
		    sp.prev_off_s > sp.off_s && sp.start_s + sp.prev_off_s > lo)
			lo = sp.start_s + sp.prev_off_s;
		int64_t end = sp.end_s == INT64_MAX || sp.end_s > bound + 1
				      ? bound + 1
				      : sp.end_s;
		int64_t hi = end + sp.off_s; /* wall range [lo, hi) */
		for (int64_t day = lo / 86400 - (lo % 86400 < 0);
		     day * 86400 < hi; day++) {
			int64_t y;
			int mo, d;
			clock_civil_from_days(day, &y, &mo, &d);
			if (!(c->mon >> mo & 1) ||
			    !(cron_day_mask(c, cron_days_in_month(y, mo),
					    clock_weekday(day - d + 1)) >> d & 1))
				continue;
			int64_t m0 = day * 86400 > lo ? day * 86400 : lo;
			m0 = (m0 + 59) / 60 * 60;
			for (int64_t m = m0; m < hi && m < (day + 1) * 86400;
			     m += 60)
				if (wall_matches(c, m))
					return m - sp.off_s;
		}
		if (sp.end_s == INT64_MAX || sp.end_s > bound)
			break;
		struct tz_span nx;
		tz_span_at(z, sp.end_s, &nx);
		if (nx.start_s != sp.end_s || nx.off_s != sp.next_off_s ||
		    nx.prev_off_s != sp.off_s)
			fail_msg("%s: spans do not join at %lld: this one says "
				 "next offset %d, the next starts at %lld with "
				 "offset %d (and says previous %d, not %d)",
				 what, (long long)sp.end_s, sp.next_off_s,
				 (long long)nx.start_s, nx.off_s,
				 nx.prev_off_s, sp.off_s);
		from = sp.end_s;
		sp = nx;
	}
	return INT64_MAX;
}

/* One (expression, zone, start) triple: next() is after the start, fires
 * where the expression matches in the zone, and nothing fires earlier.
 * Returns false when the triple was too costly to check (result over 12
 * years away) or never fires. */
static bool check_triple(const char *expr, const struct sc_zone *z,
			 const char *zname, int64_t after_s)
{
	struct sc_cron c;
	struct sc_err err = {0};
	int64_t got_ms;
	char what[512], a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];

	if (sc_cron_parse(expr, &c, &err) != 0) {
		if (strstr(err.msg, "never fires"))
			return false; /* "31 2": refused, rightly */
		fail_msg("\"%s\": %s", expr, err.msg);
	}
	snprintf(what, sizeof(what), "\"%s\" in %s after %s", expr, zname,
		 clock_format_utc(after_s * 1000, a));
	int rc = sc_cron_next(&c, z, after_s * 1000, &got_ms, &err);
	if (rc == SC_ENEVER)
		return false;
	if (rc != 0)
		fail_msg("%s: %s", what, err.msg);
	int64_t got = got_ms / 1000;
	if (got_ms % 1000 != 0 || got <= after_s)
		fail_msg("%s: got %s, not after the start", what,
			 clock_format_utc(got_ms, a));
	if (got - after_s > 12LL * 366 * 86400)
		return false;
	int64_t want = reference_next(&c, z, after_s, got, what);
	if (want != got)
		fail_msg("%s: next() gives %s, the reference %s", what,
			 clock_format_utc(got_ms, a),
			 want == INT64_MAX ? "nothing up to it"
					   : clock_format_utc(want * 1000, b));
	return true;
}

static const struct sc_zone *rule_zone(const char *rule)
{
	const struct sc_zone *z;
	struct sc_err err = {0};
	if (tz_load_rule(rule, &z, &err) != 0)
		fail_msg("rule %s: %s", rule, err.msg);
	return z;
}

static void next_property_on_zones_and_rules(void **state)
{
	static const char *const zones[] = {
		"UTC", "America/New_York", "Europe/Berlin", "Europe/Dublin",
		"Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham",
		"America/Nuuk", "Asia/Kolkata", "Africa/Casablanca",
		"Pacific/Kiritimati", "America/St_Johns"};
	/* Rules at the edges of what is accepted: offsets of +-24:59:59
	 * (49 h 58 min apart: the span jump once stepped over a slot with
	 * them), change times of +-167 h that land in the next or the
	 * previous year, negative DST, DST all year. */
	static const char *const rules[] = {
		"<A>24:59:59<B>-24:59:59,M1.1.0,M12.5.0",
		"<A>-24:59:59<B>24:59:59,M3.2.0,M11.1.0",
		"<A>24<B>-24,J1/0,J182/0",
		"<A>-1<B>-2,J365/167,J365/100",
		"<A>-1<B>-2,M12.5.6/167,M12.5.0/90",
		"<A>5<B>4,M1.1.0/-167,M6.1.0/-100",
		"IST-1GMT0,M10.5.0,M3.5.0/1",
		"EST5EDT,0/0,J365/25",
		"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
		"<-03>3<-02>,M3.5.0/-2,M10.5.0/-1",
		"XST5XDT,J60/2,300/2",
		"<-04>4<-03>,M9.1.6/24,M4.1.6/24",
	};
	/* The cases of the issue and the jump, always checked. */
	static const struct {
		const char *expr, *rule, *after;
	} fixed_cases[] = {
		{"@yearly", "<A>24:59:59<B>-24:59:59,M1.1.0,M12.5.0",
		 "2025-06-01T00:00:00Z"},
		{"@yearly", "<A>-24:59:59<B>24:59:59,M3.2.0,M11.1.0",
		 "2025-06-01T00:00:00Z"},
		{"0 0 29 2 *", "<A>24:59:59<B>-24:59:59,M1.1.0,M12.5.0",
		 "2025-06-01T00:00:00Z"},
		{"@monthly", "<A>24<B>-24,J1/0,J182/0", "2025-06-01T00:00:00Z"},
		{"0 3 1 1 *", "<A>-1<B>-2,J365/167,J365/100",
		 "2025-12-30T00:00:00Z"},
		/* Both of 2025's changes land in January 2026 (the 4th and
		 * the 7th): on the 2nd the change before is 2024's. */
		{"0 3 * * *", "<A>-1<B>-2,J365/167,J365/100",
		 "2026-01-02T00:00:00Z"},
		{"0 3 * * *", "<A>5<B>4,M1.1.0/-167,M6.1.0/-100",
		 "2026-12-27T00:00:00Z"},
	};
	int checked = 0, skipped = 0, refused = 0, n_rules = 0;
	char expr[128], rule[256];
	/* Random rules come from a pool: every loaded rule stays cached
	 * for the process's life, and the cache holds 1024 zones. */
	static char pool[150][256];
	static const struct sc_zone *pool_z[150];

	for (size_t i = 0; i < sizeof(fixed_cases) / sizeof(fixed_cases[0]);
	     i++) {
		const struct sc_zone *z = rule_zone(fixed_cases[i].rule);
		assert_true(check_triple(fixed_cases[i].expr, z,
					 fixed_cases[i].rule,
					 iso(fixed_cases[i].after) / 1000));
	}
	rng_state = UINT64_C(0x9e3779b97f4a7c15);
	while (n_rules < 150) {
		struct sc_err err = {0};
		random_rule(rule, sizeof(rule));
		if (tz_load_rule(rule, &pool_z[n_rules], &err) != 0) {
			/* Only an alternation failure may refuse a rule made
			 * within the limits. */
			if (!strstr(err.msg, "alternate"))
				fail_msg("rule %s: %s", rule, err.msg);
			refused++;
			continue;
		}
		snprintf(pool[n_rules++], sizeof(pool[0]), "%s", rule);
	}
	const int64_t y2020 = iso("2020-01-01T00:00:00Z") / 1000;
	for (int k = 0; k < 3000; k++) {
		const struct sc_zone *z;
		const char *zname;
		int kind = (int)(rnd() % 3);
		if (kind == 0) {
			zname = pick(zones, sizeof(zones) / sizeof(zones[0]));
			assert_int_equal(sc_zone_load(zname, &z, NULL), 0);
		} else if (kind == 1) {
			zname = pick(rules, sizeof(rules) / sizeof(rules[0]));
			z = rule_zone(zname);
		} else {
			size_t r = rnd() % 150;
			zname = pool[r];
			z = pool_z[r];
		}
		random_expr(expr, sizeof(expr));
		/* Starts over 30 years, on odd seconds, often right before
		 * a whole hour. */
		int64_t after = y2020 + (int64_t)(rnd() % (30ULL * 365 * 86400));
		if (rnd() % 3 == 0)
			after = after / 3600 * 3600 - (int64_t)(rnd() % 3);
		if (check_triple(expr, z, zname, after))
			checked++;
		else
			skipped++;
	}
	print_message("next() property: %d triples checked, %d skipped (never "
		      "or over 12 years), %d random rules, %d refused "
		      "(DST not alternating)\n", checked, skipped, n_rules,
		      refused);
	assert_true(checked > 2500);
}

/* Out-of-range rules are refused with the reason (RFC 8536 3.3.1: offsets
 * have hours 0-24; only change times may go to 167). */
static void out_of_range_rules_are_refused(void **state)
{
	static const struct {
		const char *rule, *why;
	} rows[] = {
		{"IST-1GMT051", "offset's hours must be 0-24"},
		{"IST-1GMT051,M3.5.0,M10.5.0", "offset's hours must be 0-24"},
		{"EST25", "offset's hours must be 0-24"},
		{"<X>-167", "offset's hours must be 0-24"},
		{"EST5EDT,M3.2.0/168,M11.1.0", "change time's hours"},
		{"EST5EDT,M3.2.0,M11.1.0/-168", "change time's hours"},
		{"EST5EDT,M3.2.0/2:60,M11.1.0", "minutes and seconds"},
		/* 29 Feb in leap years flips the order of the changes. */
		{"<A>-1<B>-2,J60/0,59/12", "alternate"},
		/* Start and end at one instant (05:00 std = 06:00 DST). */
		{"<A>-1<B>-2,J100/5,J100/6", "alternate"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct sc_zone *z;
		struct sc_err err = {0};
		if (tz_load_rule(rows[i].rule, &z, &err) != SC_EZONE)
			fail_msg("rule %s accepted", rows[i].rule);
		if (!strstr(err.msg, rows[i].why))
			fail_msg("rule %s: \"%s\" does not say \"%s\"",
				 rows[i].rule, err.msg, rows[i].why);
	}
	/* The limits themselves are fine. */
	const struct sc_zone *z;
	assert_int_equal(tz_load_rule("<A>24:59:59<B>-24:59:59,M3.2.0/167,"
				      "M11.1.0/-167", &z, NULL), 0);
	/* DST all year (RFC 8536's example) is one offset, on DST. */
	assert_int_equal(tz_load_rule("EST5EDT,0/0,J365/25", &z, NULL), 0);
	assert_int_equal(sc_zone_offset_s(z, iso("2026-01-01T03:00:00Z")),
			 -4 * 3600);
	assert_int_equal(sc_zone_offset_s(z, iso("2026-07-01T03:00:00Z")),
			 -4 * 3600);
	assert_int_equal(sc_zone_offset_s(z, iso("2026-12-31T23:00:00Z")),
			 -4 * 3600);
}

static void retry_timeline(void **state)
{
	struct sc_retry_timeline tl;
	struct sc_retry_policy low = sc_retry_policy_for(SC_FREQ_LOW);
	struct sc_retry_policy dflt = sc_retry_policy_for(SC_FREQ_DEFAULT);
	int64_t slot = iso("2026-01-02T17:00:00Z");

	assert_int_equal(sc_retry_timeline(&low, slot, &tl, NULL), 0);
	assert_int_equal(tl.n_attempts, 4);
	assert_int_equal(tl.attempt_ms[0], slot);
	assert_int_equal(tl.attempt_ms[1], iso("2026-01-02T17:30:00Z"));
	assert_int_equal(tl.attempt_ms[2], iso("2026-01-02T18:30:00Z"));
	assert_int_equal(tl.attempt_ms[3], iso("2026-01-02T20:30:00Z"));
	assert_int_equal(tl.window_ms, (3 * 60 + 30) * 60 * 1000LL);
	assert_int_equal(tl.window_end_ms, tl.attempt_ms[3]);

	assert_int_equal(sc_retry_timeline(&dflt, slot, &tl, NULL), 0);
	assert_int_equal(tl.n_attempts, 2);
	assert_int_equal(tl.attempt_ms[1], slot + 60000);
	assert_int_equal(tl.window_ms, 60000);

	struct sc_retry_policy fixed = {3, SC_BACKOFF_FIXED, 1000};
	assert_int_equal(sc_retry_timeline(&fixed, 0, &tl, NULL), 0);
	assert_int_equal(tl.attempt_ms[2], 2000);

	struct sc_retry_policy bad = {0, SC_BACKOFF_FIXED, 1000};
	struct sc_err err = {0};
	assert_int_equal(sc_retry_timeline(&bad, 0, &tl, &err), SC_EINVAL);
	bad.attempts = SC_RETRY_TIMELINE_MAX + 1;
	assert_int_equal(sc_retry_timeline(&bad, 0, &tl, NULL), SC_EINVAL);
}

static void descriptions(void **state)
{
	static const struct {
		const char *expr, *want;
	} rows[] = {
		{"0 17 * * 5", "at 17:00, on Friday"},
		{"*/5 * * * *", "every 5 minutes, every day"},
		{"10 17 * * 1-5", "at 17:10, on MON-FRI"},
		{"0 9 1 * *", "at 09:00, on day 1 of the month"},
		{"0 0 29 2 *", "at 00:00, on day 29 of the month, in February"},
		{"0 0 L * *", "at 00:00, on the last day of the month"},
		{"0 0 * * 5#2", "at 00:00, on the second Friday of the month"},
		{"0 0 13 * 5", "at 00:00, on day 13 of the month or on Friday"},
		{"0,30 9,17 * * *", "at 09:00, 09:30, 17:00, 17:30, every day"},
		{"10 * * * *", "at minute 10, every day"},
		{"0 0 17 * * 5", "at 17:00, on Friday"},
		{"15 0 17 * * 5", "at 17:00:15, on Friday"},
		{"*/10 * 9-17 * * *",
		 "every 10 seconds, during hours 9-17, every day"},
	};
	char buf[200], tiny[8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sc_cron c;
		assert_int_equal(sc_cron_parse(rows[i].expr, &c, NULL), 0);
		assert_string_equal(sc_cron_describe(&c, buf, sizeof(buf)),
				    rows[i].want);
		/* Truncation keeps the buffer terminated. */
		sc_cron_describe(&c, tiny, sizeof(tiny));
		assert_true(strlen(tiny) < sizeof(tiny));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(next_table),
		cmocka_unit_test(errors_table),
		cmocka_unit_test(issue11_leading_zeros),
		cmocka_unit_test(too_long_and_null),
		cmocka_unit_test(class_table),
		cmocka_unit_test(flags_follow_the_text),
		cmocka_unit_test(value_type_is_small_and_copyable),
		cmocka_unit_test(next_rejects_bad_input),
		cmocka_unit_test(long_runs_stay_ordered),
		cmocka_unit_test(brute_force_agrees),
		cmocka_unit_test(next_property_on_zones_and_rules),
		cmocka_unit_test(out_of_range_rules_are_refused),
		cmocka_unit_test(retry_timeline),
		cmocka_unit_test(descriptions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
