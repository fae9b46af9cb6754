/*
 * fuzz_cron.c - cron expressions and sc_cron_next, against a brute-force
 * oracle.
 *
 * Input: text lines. Line 1 is the expression; line 2 (optional) picks a
 * zone: a name of the table below, else one by the sum of its bytes
 * (empty: UTC); line 3 (optional) is the start, an ISO 8601 instant or
 * integer UTC milliseconds (default 2025-06-01T00:00:00Z).
 *
 * Properties, for every expression sc_cron_parse accepts and every start
 * sc_cron_next accepts (r is its result):
 *   1. r is a whole second strictly after the start;
 *   2. r matches the expression on the zone's wall clock (the day rule
 *      re-implemented here from the documented fields: L, 5L, 5#2 and the
 *      OR rule), or, for a fixed-time expression, r is an offset change
 *      (a wall time skipped by a forward change fires at the change);
 *   3. no earlier instant after the start is a fire time: checked second
 *      by second (skipping whole months, days, hours and minutes that
 *      cannot match), bounded to keep each input cheap; for fixed-time
 *      expressions the DST rule applies (the second pass of a repeated
 *      wall time does not fire; a skipped one fires at the change);
 *   4. next() from any instant between the start and r is r again (the
 *      fire times are one set, whatever the start);
 *   5. next() finds a fire time, except at the end of the calendar or in
 *      a zone whose changes skip every time of an expression that follows
 *      real time;
 *   6. sc_cron_describe and sc_cron_class always terminate their output;
 *   7. a POSIX rule with an offset outside 0-24 hours is refused.
 * The zones are a fixed table (the zone cache never frees, so the rules
 * are not fuzzed themselves): IANA zones with odd offsets and changes, and
 * POSIX rules, including out-of-range ones that must be refused or
 * handled right (issue 11, item 14).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cron.h"
#include "surecron.h"
#include "tz.h"

#define DEFAULT_START_MS INT64_C(1748736000000) /* 2025-06-01T00:00:00Z */
#define MIN_MS INT64_C(-62135596800000)         /* 0001-01-01T00:00:00Z */
#define MAX_MS INT64_C(253402300799999)         /* 9999-12-31T23:59:59.999Z */
#define BRUTE_STEPS 200000

/* refuse: a POSIX rule with an offset outside 0-24 hours, which the
 * loader must refuse (POSIX; RFC 8536 widens only the change times, to
 * -167..167 h). */
static const struct {
	const char *name;
	bool refuse;
} zones[] = {
	{"UTC", false},
	{"Europe/Berlin", false},
	{"America/New_York", false},
	{"Australia/Lord_Howe", false}, /* 30-minute DST */
	{"Europe/Dublin", false},       /* negative DST */
	{"America/Sao_Paulo", false},   /* changes at midnight (until 2019) */
	{"Pacific/Chatham", false},     /* +12:45 / +13:45 */
	{"America/St_Johns", false},    /* -03:30 */
	{"Pacific/Apia", false},        /* skipped 2011-12-30 */
	{"Antarctica/Troll", false},    /* 2-hour DST */
	{"Africa/Casablanca", false},   /* many changes a year */
	{"Asia/Kolkata", false},
	{"posix:CET-1CEST,M3.5.0,M10.5.0/3", false},
	{"posix:EST5EDT,M3.2.0,M11.1.0", false},
	{"posix:<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", false},
	{"posix:IST-1GMT0,M10.5.0,M3.5.0/1", false},
	{"posix:NZST-12NZDT,M9.5.0,M4.1.0/3", false},
	{"posix:<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", false},
	{"posix:EST5EDT,0/0,J365/25", false}, /* DST all year (RFC 8536) */
	{"posix:EST5EDT,M12.5.0/100,M3.2.0", false}, /* starts next year */
	{"posix:AAA1BBB,M12.5.0/167,M1.1.0/-167", false},
	{"posix:XXX-24YYY-23,M3.5.0,M10.5.0/3", false}, /* the limits */
	{"posix:XXX-23YYY-24,M12.5.6/24,M1.1.0/0", false}, /* into next year */
	{"posix:IST-1GMT051", true},  /* DST offset 51 h (item 14) */
	{"posix:AAA-167BBB,M3.5.0,M10.5.0/3", true},
	{"posix:XXX-24YYY-25,M12.5.6/24,M1.1.0/0", true},
};
#define N_ZONES (sizeof(zones) / sizeof(zones[0]))

static const struct sc_zone *zone_cache[N_ZONES];
static bool zone_tried[N_ZONES];

/* NULL when the zone cannot be loaded (a refused rule: nothing to test). */
static const struct sc_zone *zone_get(size_t i)
{
	if (!zone_tried[i]) {
		struct sc_err err = {0};
		zone_tried[i] = true;
		if (i == 0)
			zone_cache[i] = sc_zone_utc();
		else if (strncmp(zones[i].name, "posix:", 6) == 0)
			(void)tz_load_rule(zones[i].name + 6, &zone_cache[i],
					   &err);
		else
			(void)sc_zone_load(zones[i].name, &zone_cache[i], &err);
	}
	return zone_cache[i];
}

static int64_t fdiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Proleptic Gregorian calendar, written independently of clock.c. */
static void civil(int64_t days, int64_t *y, int *m, int *d)
{
	days += 719468;
	int64_t era = fdiv(days, 146097);
	int64_t doe = days - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int month_len(int64_t y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

/* The documented day rule for day d (1-based) of a month of dim days
 * whose weekday is w. */
static bool day_matches(const struct sc_cron *c, int d, int dim, int w)
{
	bool dom = (c->dom >> d & 1) || ((c->dom & 1) && d == dim);
	bool dow = (c->dow >> w & 1) || ((c->dow_last >> w & 1) && d + 7 > dim) ||
		   (c->dow_nth[w] >> ((d - 1) / 7) & 1);
	if (c->flags & (SC_CRON_DOM_STAR | SC_CRON_DOW_STAR))
		return dom && dow;
	return dom || dow;
}

/*
 * How far wall time ws is from possibly matching: 0 when it matches, else
 * a number of seconds that can be skipped without passing a match (to the
 * next minute, hour, day or month boundary).
 */
static int64_t wall_skip(const struct sc_cron *c, int64_t ws)
{
	int64_t days = fdiv(ws, 86400);
	int64_t sod = ws - days * 86400;
	int64_t y;
	int m, d;

	civil(days, &y, &m, &d);
	int w = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
	int dim = month_len(y, m);
	if (!(c->mon >> m & 1))
		return (int64_t)(dim - d) * 86400 + (86400 - sod);
	if (!day_matches(c, d, dim, w))
		return 86400 - sod;
	int hh = (int)(sod / 3600), mm = (int)(sod / 60 % 60), ss = (int)(sod % 60);
	if (!(c->hour >> hh & 1))
		return 3600 - (sod % 3600);
	if (!(c->min >> mm & 1))
		return 60 - ss;
	if (!(c->sec >> ss & 1))
		return 1;
	return 0;
}

struct brute {
	const struct sc_cron *c;
	const struct sc_zone *z;
	bool fixed;
	long steps;
};

/*
 * The first fire time in [from_s, to_s) by brute force, or to_s when none;
 * -1 when the step budget ran out first (the check is then skipped).
 */
static int64_t brute_first(struct brute *b, int64_t from_s, int64_t to_s)
{
	int64_t t = from_s;

	while (t < to_s) {
		struct tz_span sp;
		tz_span_at(b->z, t, &sp);
		int64_t end = sp.end_s < to_s ? sp.end_s : to_s;
		/* A forward change at the start of this span skipped the wall
		 * times [start + prev_off, start + off): a fixed-time
		 * expression fires at the change when one of them matches. */
		if (b->fixed && sp.start_s == t && sp.start_s != INT64_MIN &&
		    sp.prev_off_s < sp.off_s) {
			for (int64_t ws = t + sp.prev_off_s; ws < t + sp.off_s;) {
				if (++b->steps > BRUTE_STEPS)
					return -1;
				int64_t k = wall_skip(b->c, ws);
				if (k == 0)
					return t;
				ws += k;
			}
		}
		while (t < end) {
			if (++b->steps > BRUTE_STEPS)
				return -1;
			int64_t ws = t + sp.off_s;
			int64_t k = wall_skip(b->c, ws);
			if (k == 0) {
				/* Fixed time: the second pass of a repeated
				 * wall time does not fire. */
				int64_t u[2];
				bool second = b->fixed &&
					      tz_local_to_utc(b->z, ws, u) == 2 &&
					      u[1] == t;
				if (!second)
					return t;
				k = 1;
			}
			t = k < end - t ? t + k : end;
		}
	}
	return to_s;
}

static bool parse_start(const char *s, int64_t *out)
{
	struct sc_err err = {0};
	char *end;

	if (clock_parse_iso(s, out, &err) == 0)
		return true;
	long long v = strtoll(s, &end, 10);
	if (end != s && *end == '\0') {
		*out = v;
		return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	char *expr = text, *zname = NULL, *start = NULL;
	struct sc_cron c;
	struct sc_err err = {0};

	char *nl = strchr(expr, '\n');
	if (nl) {
		*nl = '\0';
		zname = nl + 1;
		if ((nl = strchr(zname, '\n'))) {
			*nl = '\0';
			start = nl + 1;
			if ((nl = strchr(start, '\n')))
				*nl = '\0';
		}
	}
	if (sc_cron_parse(expr, &c, &err) != 0) {
		FUZZ_CHECK(err.code == SC_ECRON || err.code == SC_ENEVER, data,
			   size, "sc_cron_parse failed with %d", err.code);
		goto done;
	}

	char buf[512], reason[256];
	sc_cron_describe(&c, buf, sizeof(buf));
	FUZZ_CHECK(memchr(buf, '\0', sizeof(buf)) != NULL, data, size,
		   "describe left its output unterminated");
	sc_cron_class(&c, reason, sizeof(reason));
	FUZZ_CHECK(memchr(reason, '\0', sizeof(reason)) != NULL, data, size,
		   "class left its reason unterminated");

	size_t zi = 0;
	if (zname && *zname) {
		size_t sum = 0;
		for (zi = 0; zi < N_ZONES; zi++)
			if (strcmp(zname, zones[zi].name) == 0)
				break;
		if (zi == N_ZONES) {
			for (const char *p = zname; *p; p++)
				sum += (unsigned char)*p;
			zi = sum % N_ZONES;
		}
	}
	const struct sc_zone *z = zone_get(zi);
	FUZZ_CHECK(!zones[zi].refuse || !z, data, size,
		   "the out-of-range rule %s loads", zones[zi].name);
	if (!z)
		goto done;
	int64_t after = DEFAULT_START_MS;
	if (start && *start && !parse_start(start, &after))
		goto done;

	int64_t r;
	int rc = sc_cron_next(&c, z, after, &r, &err);
	if (after < MIN_MS || after > MAX_MS) {
		FUZZ_CHECK(rc == SC_EINVAL, data, size,
			   "start %lld outside years 1-9999 gave %d",
			   (long long)after, rc);
		goto done;
	}
	if (rc != 0) {
		/* Parse proved a day within 400 years, so only the end of
		 * the calendar may leave no fire time; or a zone whose
		 * changes skip every matching time of an expression that
		 * follows real time ("* 2 * 3 0L" where 02:00-03:00 on the
		 * last Sunday of March does not exist). */
		bool may_never = zi != 0 && !(c.flags & SC_CRON_FIXED_TIME);
		FUZZ_CHECK(rc == SC_ENEVER &&
				   (may_never ||
				    after > MAX_MS - INT64_C(401) * 366 * 86400000),
			   data, size, "next failed with %d (%s) from %lld", rc,
			   err.msg, (long long)after);
		goto done;
	}
	char iso[CLOCK_ISO_MAX], iso2[CLOCK_ISO_MAX];
	clock_format_utc(after, iso);
	clock_format_utc(r, iso2);
	FUZZ_CHECK(r > after && r % 1000 == 0, data, size,
		   "next from %s in %s is %s: not a whole second after it", iso,
		   zones[zi].name, iso2);

	/* r itself: its wall time matches (and is no second pass), or it
	 * is a forward change that skipped a matching wall time. */
	int64_t r_s = r / 1000;
	bool fixed = c.flags & SC_CRON_FIXED_TIME;
	struct brute at = {.c = &c, .z = z, .fixed = fixed};
	int64_t self = brute_first(&at, r_s, r_s + 1);
	FUZZ_CHECK(self == r_s || self < 0, data, size,
		   "next from %s in %s is %s, which is no fire time", iso,
		   zones[zi].name, iso2);

	struct brute b = {.c = &c, .z = z, .fixed = fixed};
	int64_t from_s = fdiv(after, 1000) + 1;
	int64_t first = brute_first(&b, from_s, r_s);
	if (first >= 0) {
		char iso3[CLOCK_ISO_MAX];
		clock_format_utc(first * 1000, iso3);
		FUZZ_CHECK(first == r_s, data, size,
			   "next from %s in %s is %s, but %s fires before it",
			   iso, zones[zi].name, iso2, iso3);
	}

	int64_t probes[3] = {after + 1, after + (r - after) / 2, r - 1};
	for (int i = 0; i < 3; i++) {
		int64_t r2;
		/* r may lie past year 9999, where next() takes no start. */
		if (probes[i] <= after || probes[i] >= r || probes[i] > MAX_MS)
			continue;
		rc = sc_cron_next(&c, z, probes[i], &r2, &err);
		char iso3[CLOCK_ISO_MAX], iso4[CLOCK_ISO_MAX];
		clock_format_utc(probes[i], iso3);
		clock_format_utc(rc == 0 ? r2 : 0, iso4);
		FUZZ_CHECK(rc == 0 && r2 == r, data, size,
			   "next from %s in %s is %s, but from %s it is %s "
			   "(rc %d)", iso, zones[zi].name, iso2, iso3, iso4, rc);
	}
done:
	free(text);
	return 0;
}
