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
		cmocka_unit_test(retry_timeline),
		cmocka_unit_test(descriptions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
