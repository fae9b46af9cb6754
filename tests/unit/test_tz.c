/*
 * test_tz.c - the TZif reader: against the system's zdump, hand-made v1 and
 * v2 files under TZDIR, POSIX footer rules, gaps and overlaps, bad names,
 * and concurrent use.
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
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "testutil.h"
#include "tz.h"

static int64_t iso(const char *s)
{
	int64_t ms = 0;

	if (clock_parse_iso(s, &ms, NULL) != 0)
		fail_msg("bad test time %s", s);
	return ms;
}

static int month_of(const char *m)
{
	static const char *const names[] = {"Jan", "Feb", "Mar", "Apr",
					    "May", "Jun", "Jul", "Aug",
					    "Sep", "Oct", "Nov", "Dec"};
	for (int i = 0; i < 12; i++)
		if (strcmp(m, names[i]) == 0)
			return i + 1;
	return 0;
}

/*
 * Runs `zdump -v -c 1900,2060 ZONE` and checks, at every instant it lists
 * (each side of every change, including those past the file's table that
 * only the footer rule knows), that our offset, DST flag and abbreviation
 * agree. Returns the number of instants compared.
 */
static int compare_with_zdump(const char *zone)
{
	char cmd[256], line[512];
	const struct sc_zone *z;
	struct sc_err err = {0};
	int n = 0;

	assert_int_equal(sc_zone_load(zone, &z, &err), 0);
	snprintf(cmd, sizeof(cmd), "zdump -v -c 1900,2060 %s 2>/dev/null",
		 zone);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char mon[8], abbr[32];
		int day, hh, mm, ss, isdst;
		long long year;
		long gmtoff;
		if (strstr(line, "NULL"))
			continue;
		if (sscanf(line, "%*s %*s %7s %d %d:%d:%d %lld UT = %*s %*s %*d "
			   "%*d:%*d:%*d %*d %31s isdst=%d gmtoff=%ld",
			   mon, &day, &hh, &mm, &ss, &year, abbr, &isdst,
			   &gmtoff) != 9)
			fail_msg("unexpected zdump line: %s", line);
		int64_t t = clock_days_from_civil(year, month_of(mon), day) *
				    86400 +
			    hh * 3600 + mm * 60 + ss;
		struct tz_span sp;
		tz_span_at(z, t, &sp);
		if (sp.off_s != gmtoff || sp.is_dst != (isdst != 0) ||
		    strcmp(sp.abbr, abbr) != 0)
			fail_msg("%s at %lld: ours %d %d %s, zdump %ld %d %s "
				 "(%s)", zone, (long long)t, sp.off_s, sp.is_dst,
				 sp.abbr, gmtoff, isdst, abbr, line);
		assert_int_equal(sc_zone_offset_s(z, t * 1000), gmtoff);
		/* The span really holds t and its edges are changes. */
		assert_true(sp.start_s <= t && t < sp.end_s);
		n++;
	}
	pclose(f);
	return n;
}

static void matches_zdump(void **state)
{
	static const char *const zones[] = {
		"America/New_York", "Europe/Berlin", "Australia/Lord_Howe",
		"Asia/Seoul", "America/Sao_Paulo", "Asia/Kolkata",
		"Pacific/Chatham", "Africa/Casablanca", "Europe/Dublin",
	};
	if (system("command -v zdump >/dev/null 2>&1") != 0)
		skip();
	for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		int n = compare_with_zdump(zones[i]);
		if (n < 2)
			fail_msg("zdump listed nothing for %s", zones[i]);
	}
}

static void gaps_and_overlaps(void **state)
{
	static const struct {
		const char *zone, *local; /* local wall time, written as Z */
		int n;
		const char *first;
	} rows[] = {
		{"America/New_York", "2026-03-08T02:30:00Z", 0, NULL},
		{"America/New_York", "2026-03-08T03:00:00Z", 1,
		 "2026-03-08T07:00:00Z"},
		{"America/New_York", "2026-11-01T01:30:00Z", 2,
		 "2026-11-01T05:30:00Z"},
		{"America/New_York", "2026-11-01T02:00:00Z", 1,
		 "2026-11-01T07:00:00Z"},
		{"Europe/Berlin", "2026-03-29T02:59:59Z", 0, NULL},
		{"Europe/Berlin", "2026-10-25T02:00:00Z", 2,
		 "2026-10-25T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-10-04T02:15:00Z", 0, NULL},
		{"Australia/Lord_Howe", "2026-10-04T02:30:00Z", 1,
		 "2026-10-03T15:30:00Z"},
		{"Australia/Lord_Howe", "2026-04-05T01:45:00Z", 2,
		 "2026-04-04T14:45:00Z"},
		{"Asia/Seoul", "2026-07-01T12:00:00Z", 1,
		 "2026-07-01T03:00:00Z"},
		{"UTC", "2026-07-01T12:00:00Z", 1, "2026-07-01T12:00:00Z"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct sc_zone *z;
		int64_t out[2];
		assert_int_equal(sc_zone_load(rows[i].zone, &z, NULL), 0);
		int n = tz_local_to_utc(z, iso(rows[i].local) / 1000, out);
		if (n != rows[i].n)
			fail_msg("row %zu: %d instants, want %d", i, n,
				 rows[i].n);
		if (n)
			assert_int_equal(out[0], iso(rows[i].first) / 1000);
		if (n == 2) /* the second pass is one offset change later */
			assert_true(out[1] > out[0]);
	}
}

static void bad_names(void **state)
{
	static const char *const names[] = {
		"", "/etc/localtime", "../../etc/passwd", "Europe/../UTC",
		"No/Such_Zone", "America/New_York/", "Europe/Berlin\n",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct sc_zone *z = NULL;
		struct sc_err err = {0};
		assert_int_equal(sc_zone_load(names[i], &z, &err), SC_EZONE);
		assert_int_equal(err.code, SC_EZONE);
		assert_null(z);
		assert_non_null(strstr(err.msg, "time zone"));
	}
	struct sc_err err = {0};
	const struct sc_zone *z;
	assert_int_equal(sc_zone_load("No/Such_Zone", &z, &err), SC_EZONE);
	assert_non_null(strstr(err.msg, "No/Such_Zone"));
	assert_int_equal(sc_zone_load(NULL, &z, NULL), SC_EZONE);
}

/* --- hand-made TZif files --- */

struct img {
	unsigned char b[1024];
	size_t n;
};

static void put32(struct img *im, int64_t v)
{
	uint32_t u = (uint32_t)v;
	for (int i = 3; i >= 0; i--)
		im->b[im->n++] = (unsigned char)(u >> (8 * i));
}

static void put64(struct img *im, int64_t v)
{
	uint64_t u = (uint64_t)v;
	for (int i = 7; i >= 0; i--)
		im->b[im->n++] = (unsigned char)(u >> (8 * i));
}

static void put_bytes(struct img *im, const void *p, size_t n)
{
	if (n == 0)
		return;
	memcpy(im->b + im->n, p, n);
	im->n += n;
}

struct zdef {
	int n_times;
	const int64_t *times;
	const unsigned char *idx;
	int n_types;
	const int32_t *offs;
	const unsigned char *dst;
	const unsigned char *abbr_i;
	const char *chars; /* NUL-separated, size n_chars */
	int n_chars;
};

static void put_block(struct img *im, char version, const struct zdef *d,
		      int tsize)
{
	put_bytes(im, "TZif", 4);
	im->b[im->n++] = (unsigned char)version;
	memset(im->b + im->n, 0, 15);
	im->n += 15;
	put32(im, 0); /* isut */
	put32(im, 0); /* isstd */
	put32(im, 0); /* leap */
	put32(im, d->n_times);
	put32(im, d->n_types);
	put32(im, d->n_chars);
	for (int i = 0; i < d->n_times; i++)
		tsize == 8 ? put64(im, d->times[i]) : put32(im, d->times[i]);
	put_bytes(im, d->idx, (size_t)d->n_times);
	for (int i = 0; i < d->n_types; i++) {
		put32(im, d->offs[i]);
		im->b[im->n++] = d->dst[i];
		im->b[im->n++] = d->abbr_i[i];
	}
	put_bytes(im, d->chars, (size_t)d->n_chars);
}

static void write_file(const char *dir, const char *name, const void *p,
		       size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static void tzdir_and_handmade_files(void **state)
{
	const char *dir = tu_tmpdir();
	char sub[300], keep[256];
	const char *old = getenv("TZDIR");

	snprintf(keep, sizeof(keep), "%s", dir);
	snprintf(sub, sizeof(sub), "%s/Test", dir);
	assert_int_equal(mkdir(sub, 0700), 0);

	/* v1: EST, then EDT from 1e9 s, EST again from 1.01e9 s. */
	static const int64_t t1[] = {1000000000, 1010000000};
	static const unsigned char i1[] = {1, 0};
	static const int32_t o1[] = {-18000, -14400};
	static const unsigned char d1[] = {0, 1}, a1[] = {0, 4};
	struct zdef v1 = {2, t1, i1, 2, o1, d1, a1, "EST\0EDT", 8};
	struct img im = {.n = 0};
	put_block(&im, 0, &v1, 4);
	write_file(keep, "Test/V1", im.b, im.n);

	/* v2 with no transitions and only the Berlin footer rule. */
	static const int32_t o2[] = {3600};
	static const unsigned char d2[] = {0}, a2[] = {0};
	struct zdef v2 = {0, NULL, NULL, 1, o2, d2, a2, "CET", 4};
	im.n = 0;
	put_block(&im, '2', &v2, 4);
	put_block(&im, '2', &v2, 8);
	put_bytes(&im, "\nCET-1CEST,M3.5.0,M10.5.0/3\n", 28);
	write_file(keep, "Test/Rule", im.b, im.n);

	/* The same with footers out of range (issue 11 item 14): a dst
	 * offset of 51 h, and DST that does not alternate. */
	im.n = 0;
	put_block(&im, '2', &v2, 4);
	put_block(&im, '2', &v2, 8);
	put_bytes(&im, "\nIST-1GMT051\n", 13);
	write_file(keep, "Test/Far", im.b, im.n);
	im.n = 0;
	put_block(&im, '2', &v2, 4);
	put_block(&im, '2', &v2, 8);
	put_bytes(&im, "\n<A>-1<B>-2,J60/0,59/12\n", 24);
	write_file(keep, "Test/Cross", im.b, im.n);

	/* Garbage and a truncated real file. */
	write_file(keep, "Test/Bad", "TZif2 this is not a zone", 24);
	write_file(keep, "Test/Trunc", im.b, 30);

	setenv("TZDIR", keep, 1);
	const struct sc_zone *z, *berlin;
	struct sc_err err = {0};

	assert_int_equal(sc_zone_load("Test/V1", &z, &err), 0);
	assert_string_equal(sc_zone_name(z), "Test/V1");
	assert_int_equal(sc_zone_offset_s(z, 999999999000LL), -18000);
	assert_int_equal(sc_zone_offset_s(z, 1000000000000LL), -14400);
	assert_int_equal(sc_zone_offset_s(z, 1009999999999LL), -14400);
	assert_int_equal(sc_zone_offset_s(z, 1010000000000LL), -18000);
	assert_int_equal(sc_zone_offset_s(z, 4000000000000LL), -18000);

	assert_int_equal(sc_zone_load("Test/Rule", &z, &err), 0);
	sc_err_clear(&err);
	assert_int_equal(sc_zone_load("Test/Far", &z, &err), SC_EZONE);
	assert_non_null(strstr(err.msg, "offset's hours must be 0-24"));
	sc_err_clear(&err);
	assert_int_equal(sc_zone_load("Test/Cross", &z, &err), SC_EZONE);
	assert_non_null(strstr(err.msg, "alternate"));
	sc_err_clear(&err);
	assert_int_equal(sc_zone_load("Test/Bad", &berlin, &err), SC_EZONE);
	assert_non_null(strstr(err.msg, "Test/Bad"));
	assert_int_equal(sc_zone_load("Test/Trunc", &berlin, NULL), SC_EZONE);
	/* Europe/Berlin is not in our folder: TZDIR really is used. */
	assert_int_equal(sc_zone_load("Europe/Berlin", &berlin, NULL),
			 SC_EZONE);
	if (old)
		setenv("TZDIR", old, 1);
	else
		unsetenv("TZDIR");
	assert_int_equal(sc_zone_load("Europe/Berlin", &berlin, NULL), 0);

	/* The rule-only zone agrees with Berlin every 3 hours, 2026-2036. */
	int64_t from = iso("2026-01-01T00:00:00Z");
	for (int64_t t = from; t < from + 10 * 365LL * 86400000; t += 3 * 3600000)
		if (sc_zone_offset_s(z, t) != sc_zone_offset_s(berlin, t))
			fail_msg("rule zone differs from Berlin at %lld",
				 (long long)t);
	tu_rmrf(keep);
}

/*
 * A "slim" file (zic -b slim) keeps almost no transitions and leaves the
 * rest to the footer rule; compile one with the system's zic and check it
 * against the fat America/New_York every 2 hours over 2008-2040.
 */
static void slim_file_from_zic(void **state)
{
	const char *dir;
	char keep[256], cmd[800], src[300];
	const char *old = getenv("TZDIR");

	if (system("command -v zic >/dev/null 2>&1") != 0)
		skip();
	dir = tu_tmpdir();
	snprintf(keep, sizeof(keep), "%s", dir);
	snprintf(src, sizeof(src), "%s/zone.txt", keep);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs("Rule US 2007 max - Mar Sun>=8 2:00 1:00 D\n"
	      "Rule US 2007 max - Nov Sun>=1 2:00 0 S\n"
	      "Zone Test/Slim -5:00 US E%sT\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "zic -b slim -d '%s' '%s' 2>&1", keep, src);
	assert_int_equal(system(cmd), 0);

	const struct sc_zone *slim, *ny;
	struct sc_err err = {0};
	setenv("TZDIR", keep, 1);
	int rc = sc_zone_load("Test/Slim", &slim, &err);
	if (old)
		setenv("TZDIR", old, 1);
	else
		unsetenv("TZDIR");
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(sc_zone_load("America/New_York", &ny, NULL), 0);
	int64_t from = iso("2008-01-01T00:00:00Z");
	int64_t to = iso("2040-01-01T00:00:00Z");
	for (int64_t t = from; t < to; t += 2 * 3600000)
		if (sc_zone_offset_s(slim, t) != sc_zone_offset_s(ny, t))
			fail_msg("slim zone differs from New York at %lld",
				 (long long)t);
	/* And cron agrees across a change computed from the rule alone. */
	struct sc_cron c;
	int64_t a, b;
	assert_int_equal(sc_cron_parse("30 2 * * *", &c, NULL), 0);
	assert_int_equal(sc_cron_next(&c, slim, iso("2031-03-08T12:00:00Z"),
				      &a, NULL), 0);
	assert_int_equal(sc_cron_next(&c, ny, iso("2031-03-08T12:00:00Z"), &b,
				      NULL), 0);
	assert_int_equal(a, b);
	assert_int_equal(a, iso("2031-03-09T03:00:00-04:00"));
	tu_rmrf(keep);
}

static void posix_rules(void **state)
{
	const struct sc_zone *r, *lh;
	struct sc_err err = {0};

	/* Lord Howe's footer, on its own, agrees with the file after the
	 * table ends (checked every 30 minutes over 2040-2044). */
	assert_int_equal(tz_load_rule("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
				      &r, &err), 0);
	assert_int_equal(sc_zone_load("Australia/Lord_Howe", &lh, NULL), 0);
	int64_t from = iso("2040-01-01T00:00:00Z");
	for (int64_t t = from; t < from + 4 * 365LL * 86400000; t += 1800000)
		if (sc_zone_offset_s(r, t) != sc_zone_offset_s(lh, t))
			fail_msg("Lord Howe rule differs at %lld",
				 (long long)t);

	/* Julian forms: J60 is March 1 in every year; 300 (zero-based,
	 * counting Feb 29) is Oct 28 in 2026. */
	assert_int_equal(tz_load_rule("XST5XDT,J60/2,300/2", &r, NULL), 0);
	assert_int_equal(sc_zone_offset_s(r, iso("2026-03-01T01:59:00-05:00")),
			 -18000);
	assert_int_equal(sc_zone_offset_s(r, iso("2026-03-01T02:00:00-05:00")),
			 -14400);
	assert_int_equal(sc_zone_offset_s(r, iso("2026-10-28T01:59:00-04:00")),
			 -14400);
	assert_int_equal(sc_zone_offset_s(r, iso("2026-10-28T02:00:00-04:00")),
			 -18000);
	/* Negative and >24h change times (RFC 8536 extension). */
	assert_int_equal(tz_load_rule("<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", &r,
				      NULL), 0);
	assert_int_equal(tz_load_rule("EST5EDT,0/0,J365/25", &r, NULL), 0);
	/* A fixed rule and bad ones. */
	assert_int_equal(tz_load_rule("<+0530>-5:30", &r, NULL), 0);
	assert_int_equal(sc_zone_offset_s(r, 0), 19800);
	static const char *const bad[] = {"", "5", "EST", "EST5EDT,M13.1.0,M1.1.0",
					  "EST5EDT,M3.2.0", "<EST5", "EST5EDT,M3.2.8,M11.1.0"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sc_err_clear(&err);
		if (tz_load_rule(bad[i], &r, &err) != SC_EZONE)
			fail_msg("rule \"%s\" accepted", bad[i]);
	}
}

/* A POSIX rule's span comes from one 400-year table of its changes
 * (tz.c rule_span): instants far from the table's cycle (2000-2400), on
 * both sides of its edges and in other centuries, get the offset glibc
 * computes for the same rule (glibc applies rules from 1970 on), each
 * span holds its instant, and the span of the same instant 400 and 800
 * years earlier is the same span moved by as much. */
static void rules_agree_with_libc_in_every_cycle(void **state)
{
	static const char *const rules[] = {
		"EST5EDT,M3.2.0,M11.1.0",
		"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
		"XST5XDT,J60/2,300/2",
		"CET-1CEST,M3.5.0,M10.5.0/3",
	};
	static const char *const edges[] = {
		"1999-12-31T12:00:00Z", "2000-01-01T00:00:00Z",
		"2399-12-31T12:00:00Z", "2400-01-01T00:00:00Z",
		"2800-03-01T00:00:00Z", "2800-10-01T00:00:00Z",
		"9999-06-01T00:00:00Z", "1970-03-01T00:00:00Z",
	};
	const int64_t cycle = INT64_C(146097) * 86400;
	const char *old = getenv("TZ");
	char *saved = old ? strdup(old) : NULL;

	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct sc_zone *z;
		assert_int_equal(tz_load_rule(rules[i], &z, NULL), 0);
		setenv("TZ", rules[i], 1);
		tzset();
		uint64_t x = 0x9e3779b97f4a7c15u + i;
		for (int k = 0; k < 4000; k++) {
			int64_t t;
			if (k < (int)(sizeof(edges) / sizeof(edges[0])) * 200) {
				/* Every 6 h 7 min over 50 days around an edge. */
				int e = k / 200;
				t = iso(edges[e]) / 1000 - 25 * 86400 +
				    (int64_t)(k % 200) * 22020;
			} else {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				/* Years 1970 to 2770. */
				t = (int64_t)(x % (UINT64_C(800) * 31556952));
			}
			time_t tt = (time_t)t;
			struct tm tm;
			assert_non_null(localtime_r(&tt, &tm));
			struct tz_span sp;
			tz_span_at(z, t, &sp);
			if (sp.off_s != tm.tm_gmtoff)
				fail_msg("%s at %lld: ours %d, libc %ld",
					 rules[i], (long long)t, sp.off_s,
					 (long)tm.tm_gmtoff);
			assert_true(sp.start_s <= t && t < sp.end_s);
			assert_int_not_equal(sp.prev_off_s, sp.off_s);
			for (int back = 1; back <= 2; back++) {
				struct tz_span sb;
				tz_span_at(z, t - back * cycle, &sb);
				assert_int_equal(sb.off_s, sp.off_s);
				assert_true(sb.start_s == sp.start_s - back * cycle);
				assert_true(sb.end_s == sp.end_s - back * cycle);
			}
		}
	}
	if (saved)
		setenv("TZ", saved, 1);
	else
		unsetenv("TZ");
	tzset();
	free(saved);
}

static void builtin_and_local(void **state)
{
	const struct sc_zone *u = sc_zone_utc();

	assert_string_equal(sc_zone_name(u), "UTC");
	assert_int_equal(sc_zone_offset_s(u, 1234567890000LL), 0);
	assert_int_equal(sc_zone_offset_s(NULL, 0), 0);
	assert_non_null(sc_zone_local());
	assert_true(sc_zone_local() == sc_zone_local());
	/* A loaded zone is cached: the same pointer comes back. */
	const struct sc_zone *a, *b;
	assert_int_equal(sc_zone_load("Asia/Seoul", &a, NULL), 0);
	assert_int_equal(sc_zone_load("Asia/Seoul", &b, NULL), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(sc_zone_offset_s(a, 0), 9 * 3600);
}

static void out_of_memory_is_reported(void **state)
{
	const struct sc_zone *z = NULL;
	struct sc_err err = {0};

#ifndef SURECRON_FAILPOINTS
	skip();
#endif
	setenv("SURECRON_FAILPOINTS", "tz.alloc:err", 1);
	int rc = sc_zone_load("Europe/Madrid", &z, &err);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_ENOMEM);
	assert_int_equal(err.code, SC_ENOMEM);
	assert_null(z);
	/* Nothing half-made was cached: the next load works. */
	assert_int_equal(sc_zone_load("Europe/Madrid", &z, NULL), 0);
	assert_int_equal(sc_zone_offset_s(z, 0), 3600);
}

/* --- concurrency --- */

/* Zones no earlier test loaded, so the threads race on first loads. */
static const char *const thread_zones[] = {"America/Chicago", "Europe/Paris",
					   "Australia/Sydney", "Asia/Tokyo"};
#define THREAD_STEPS 500

static void walk(int64_t out[4][THREAD_STEPS])
{
	struct sc_cron c;

	if (sc_cron_parse("*/13 * * * *", &c, NULL) != 0)
		return;
	for (int zi = 0; zi < 4; zi++) {
		const struct sc_zone *z;
		int64_t t = 1772323200000; /* 2026-03-01 */
		if (sc_zone_load(thread_zones[zi], &z, NULL) != 0)
			return;
		for (int i = 0; i < THREAD_STEPS; i++) {
			if (sc_cron_next(&c, z, t, &t, NULL) != 0)
				return;
			out[zi][i] = t;
		}
	}
}

static void *thread_main(void *arg)
{
	walk(arg);
	return NULL;
}

static void threads_agree(void **state)
{
	static int64_t want[4][THREAD_STEPS], got[4][4][THREAD_STEPS];
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_main,
						got[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	walk(want);
	assert_true(want[0][THREAD_STEPS - 1] > 0);
	for (int i = 0; i < 4; i++)
		assert_memory_equal(got[i], want, sizeof(want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matches_zdump),
		cmocka_unit_test(gaps_and_overlaps),
		cmocka_unit_test(bad_names),
		cmocka_unit_test(tzdir_and_handmade_files),
		cmocka_unit_test(slim_file_from_zic),
		cmocka_unit_test(posix_rules),
		cmocka_unit_test(rules_agree_with_libc_in_every_cycle),
		cmocka_unit_test(builtin_and_local),
		cmocka_unit_test(out_of_memory_is_reported),
		cmocka_unit_test(threads_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
