/*
 * cron_next.c - the next fire time of a parsed expression in a zone.
 *
 * The search runs on the local wall clock, one *span* of constant UTC
 * offset at a time (tz_span_at): inside a span wall time and UTC move
 * together, so the first matching wall time of the span is the answer.
 * Inside the wall clock the calendar is walked with the bitsets: a month
 * not in the month set is skipped whole, a month's matching days come out
 * of one mask (cron_day_mask) and ctz, and the time of day of three more
 * ctz. Nothing steps minute by minute. When the next match lies far past
 * a span's end, the search jumps close to it instead of visiting every
 * span in between (see the comment at the jump).
 *
 * The DST rule (cronie, Debian cron(8)):
 *   - fixed-time expressions (SC_CRON_FIXED_TIME) go by the wall clock:
 *     wall times skipped by a forward change fire once, at the change;
 *     wall times repeated by a backward change fire in the first pass only
 *     (the span after the change starts its search where the span before
 *     it ended on the wall clock);
 *   - all others follow real time: each span is searched on its own, so
 *     skipped wall times never match and repeated ones match twice.
 *
 * Invariants: every loop is bounded (400 years of calendar, a fixed number
 * of spans); no allocation; results are whole seconds, strictly after the
 * given instant.
 */
#include <stddef.h>
#include <string.h>

#include "clock.h"
#include "cron.h"
#include "err.h"
#include "tz.h"

#define YEAR_BOUND 400
/* Three days: more than any two offsets of one zone can differ by. TZif
 * types are held to -89999..93599 s and POSIX rules to +-24:59:59 (tz.c),
 * so two offsets differ by under 51 h; two days were not enough for a
 * rule like "<A>24:59<B>-24:59,...", whose offsets are 49 h 58 min apart,
 * and let the jump step over a slot. */
#define JUMP_MARGIN_S (3 * 86400)
#define SECS_400Y (INT64_C(146097) * 86400)
/* Year 1 and year 9999, in UTC ms: the range of after_ms we accept. */
#define MIN_MS INT64_C(-62135596800000)
#define MAX_MS INT64_C(253402300799999)

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Gregorian leap year: y % 100 == 0 is y % 4 == 0 && y % 25 == 0, and
 * y % 400 == 0 is then y % 16 == 0; cheaper than three 64-bit modulos
 * in the walk below, which asks once a year visited. */
static inline bool leap_year(int64_t y)
{
	return (y & 3) == 0 && (y % 25 != 0 || (y & 15) == 0);
}

int cron_days_in_month(int64_t y, int m)
{
	if (m == 2)
		return 28 + leap_year(y);
	return 30 + ((m + (m >= 8)) & 1);
}

/* Days of a common year before the 1st of month m (1-12). */
static const int16_t days_before[13] = {0,   0,	  31,  59,  90,	 120, 151,
					181, 212, 243, 273, 304, 334};

/* The nth/last weekday bits (dow_last, dow_nth[0..6]) as one word: the
 * eight bytes lie side by side, so one load tells whether any is set. */
_Static_assert(offsetof(struct sc_cron, dow_nth) ==
		       offsetof(struct sc_cron, dow_last) + 1 &&
	       sizeof(((struct sc_cron *)0)->dow_nth) == 7,
	       "dow_last and dow_nth must be 8 adjacent bytes");
static inline uint64_t dow_extra(const struct sc_cron *c)
{
	uint64_t x;
	memcpy(&x, (const unsigned char *)c + offsetof(struct sc_cron, dow_last),
	       sizeof(x));
	return x;
}

/* True when the weekday field accepts every day (no list, no 5L or 5#2):
 * then the weekday of a month's first day does not matter. */
static inline bool dow_all(const struct sc_cron *c)
{
	return c->dow == 0x7f && !dow_extra(c);
}

/* cron_day_mask with dow_all(c) already known (the walk asks it once). */
static inline uint32_t day_mask(const struct sc_cron *c, int dim, int wday1,
				bool all_wdays)
{
	uint32_t full = (uint32_t)(((UINT64_C(1) << dim) - 1) << 1);
	uint32_t dom = c->dom & full;
	uint32_t pat, week;

	if (c->dom & 1)
		dom |= UINT32_C(1) << dim; /* L: the last day */
	if (all_wdays)
		/* week is every day: the rule below gives these. */
		return c->flags & (SC_CRON_DOM_STAR | SC_CRON_DOW_STAR) ? dom
									: full;
	/* Rotate the weekday set so that bit i is day i+1 of the month,
	 * then repeat the 7-day pattern over the month. */
	pat = ((uint32_t)c->dow >> wday1 | (uint32_t)c->dow << (7 - wday1)) &
	      0x7f;
	week = pat | pat << 7 | pat << 14 | pat << 21 | pat << 28;
	week = (week << 1) & full;
	if (dow_extra(c)) {
		for (int w = 0; w < 7; w++) {
			int first = 1 + (w - wday1 + 7) % 7;
			for (int k = 0; k < 5; k++)
				if (c->dow_nth[w] >> k & 1 && first + 7 * k <= dim)
					week |= UINT32_C(1) << (first + 7 * k);
			if (c->dow_last >> w & 1)
				week |= UINT32_C(1)
					<< (first + 7 * ((dim - first) / 7));
		}
	}
	/* The OR rule: with both day fields restricted a day matches when
	 * either does; a '*' field is all ones, so AND leaves the other. */
	if (c->flags & (SC_CRON_DOM_STAR | SC_CRON_DOW_STAR))
		return dom & week;
	return dom | week;
}

uint32_t cron_day_mask(const struct sc_cron *c, int dim, int wday1)
{
	return day_mask(c, dim, wday1, dow_all(c));
}

/* True when every day of every month matches (every 5 minutes): then the
 * next match is today's next time or tomorrow's first, and the civil
 * date need not be worked out at all. */
static inline bool every_day(const struct sc_cron *c)
{
	return (c->mon & 0x1ffe) == 0x1ffe && dow_all(c) &&
	       (!(c->flags & (SC_CRON_DOM_STAR | SC_CRON_DOW_STAR)) ||
		(c->dom & 0xfffffffe) == 0xfffffffe);
}

/* The lowest set bit of `set` at or above `from`, or -1. */
static inline int next_bit(uint64_t set, int from)
{
	if (from > 63)
		return -1;
	set &= ~UINT64_C(0) << from;
	return set ? __builtin_ctzll(set) : -1;
}

/* The first matching second of the day at or after sod, or -1. At most
 * two minutes and two hours are visited: every set is non-empty. */
static int day_time_next(const struct sc_cron *c, int sod)
{
	if (sod == 0) /* a new day: the day's first match */
		return __builtin_ctz(c->hour) * 3600 +
		       __builtin_ctzll(c->min) * 60 + __builtin_ctzll(c->sec);
	/* Past the day's last match: none today (a monthly expression
	 * asks this on its day, after its time). */
	if (sod > (31 - __builtin_clz(c->hour)) * 3600 +
			  (63 - __builtin_clzll(c->min)) * 60 +
			  (63 - __builtin_clzll(c->sec)))
		return -1;
	/* sod is 0-86399: unsigned division is the cheaper one. */
	unsigned u = (unsigned)sod;
	int h0 = (int)(u / 3600), m0 = (int)(u / 60 % 60), s0 = (int)(u % 60);

	for (int h = next_bit(c->hour, h0); h >= 0;
	     h = next_bit(c->hour, h + 1)) {
		for (int m = next_bit(c->min, h == h0 ? m0 : 0); m >= 0;
		     m = next_bit(c->min, m + 1)) {
			int s = next_bit(c->sec, h == h0 && m == m0 ? s0 : 0);
			if (s >= 0)
				return h * 3600 + m * 60 + s;
		}
	}
	return -1;
}

int cron_wall_next(const struct sc_cron *c, int64_t lo, int64_t hi,
		   int64_t *out)
{
	int64_t days, y;
	int m, d, sod;

	if (lo >= hi)
		return SC_ENOENT;
	days = floor_div(lo, 86400);
	sod = (int)(lo - days * 86400);
	if (every_day(c)) {
		int t = day_time_next(c, sod);
		if (t < 0) {
			days++; /* tomorrow's first: every set is non-empty */
			t = day_time_next(c, 0);
		}
		int64_t w = days * 86400 + t;
		if (w >= hi)
			return SC_ENOENT;
		*out = w;
		return 0;
	}
	clock_civil_from_days(days, &y, &m, &d);
	int64_t first = days - (d - 1); /* day number of the 1st */
	int64_t ylimit = y + YEAR_BOUND;
	bool all_wdays = dow_all(c);
	/* The walk keeps the day number of 1 January and whether the year
	 * is a leap year, so that a month's 1st is one addition away. */
	bool leap = leap_year(y);
	int64_t jan1 = first - days_before[m] - (leap && m > 2);

	for (;;) {
		int dim = m == 2 ? 28 + leap : 30 + ((m + (m >= 8)) & 1);
		if (c->mon >> m & 1) {
			uint32_t mask = day_mask(
				c, dim, all_wdays ? 0 : clock_weekday(first),
				all_wdays);
			mask &= ~((UINT32_C(1) << d) - 1); /* days >= d */
			while (mask) {
				int dd = __builtin_ctz(mask);
				if (dd != d)
					sod = 0;
				int t = day_time_next(c, sod);
				if (t >= 0) {
					int64_t w = (first + dd - 1) * 86400 + t;
					if (w >= hi)
						return SC_ENOENT;
					*out = w;
					return 0;
				}
				mask &= mask - 1;
				sod = 0;
			}
		}
		/* On to the next month of the set, skipping the others whole
		 * (a yearly expression visits one month a year, not twelve). */
		int m2 = next_bit(c->mon, m + 1);
		if (m2 < 0 || m2 > 12) {
			m2 = next_bit(c->mon, 1);
			if (m2 < 1 || m2 > 12)
				return SC_ENEVER; /* no month (not parsed) */
			if (++y > ylimit)
				return SC_ENEVER;
			jan1 += 365 + leap;
			leap = leap_year(y);
		}
		first = jan1 + days_before[m2] + (leap && m2 > 2);
		m = m2;
		d = 1;
		sod = 0;
		if (first * 86400 >= hi)
			return SC_ENOENT;
	}
}

bool cron_fires_ever(const struct sc_cron *c)
{
	/* 2000-01-01 starts a 400-year Gregorian cycle; it was a Saturday. */
	int wday1 = 6;

	if (!(c->sec && c->min && c->hour))
		return false;
	for (int y = 2000; y < 2000 + YEAR_BOUND; y++)
		for (int m = 1; m <= 12; m++) {
			int dim = cron_days_in_month(y, m);
			if (c->mon >> m & 1 && cron_day_mask(c, dim, wday1))
				return true;
			wday1 = (wday1 + dim) % 7;
		}
	return false;
}

static bool cron_valid(const struct sc_cron *c)
{
	return c->sec && !(c->sec >> 60) && c->min && !(c->min >> 60) &&
	       c->hour && !(c->hour >> 24) && (c->mon & 0x1ffe) &&
	       !(c->mon & ~0x1ffe) && !(c->dow & 0x80) && !(c->dow_last & 0x80);
}

int sc_cron_next(const struct sc_cron *c, const struct sc_zone *z,
		 int64_t after_ms, int64_t *out_ms, struct sc_err *err)
{
	struct tz_span sp;
	bool fixed;
	int64_t from, limit, w;
	int64_t memo_lo = INT64_MAX, memo_w = INT64_MIN;
	int rc;

	if (!c || !out_ms || !cron_valid(c))
		return sc_err_set(err, SC_EINVAL, "cron next: not a parsed "
				  "expression");
	if (after_ms < MIN_MS || after_ms > MAX_MS)
		return sc_err_set(err, SC_EINVAL, "cron next: instant %lld ms is "
				  "outside the years 1-9999",
				  (long long)after_ms);
	fixed = c->flags & SC_CRON_FIXED_TIME;
	from = floor_div(after_ms, 1000) + 1;
	limit = from + SECS_400Y;
	tz_span_at(z, from, &sp);
	/* Each pass searches one span; 400 years hold at most a few
	 * thousand offset changes. */
	for (int pass = 0; pass < 4 * YEAR_BOUND * 12; pass++) {
		int64_t lo = from + sp.off_s;
		if (fixed && sp.start_s == from && sp.prev_off_s < sp.off_s) {
			/* A forward change at `from`: the skipped wall times
			 * [start+prev_off, start+off) fire once, right now. */
			if (cron_wall_next(c, sp.start_s + sp.prev_off_s,
					   sp.start_s + sp.off_s, &w) == 0) {
				*out_ms = from * 1000;
				return 0;
			}
		}
		if (fixed && sp.start_s != INT64_MIN &&
		    sp.prev_off_s > sp.off_s && sp.start_s + sp.prev_off_s > lo)
			/* A backward change: the repeated wall times had
			 * their (only) pass before it. */
			lo = sp.start_s + sp.prev_off_s;
		/* The first match on this span's clock, even past its end.
		 * That is a function of lo alone (the wall clock knows no
		 * offsets): when the last search from memo_lo found memo_w
		 * and lo lies in [memo_lo, memo_w], the answer is memo_w
		 * again, so a jump (below) costs one calendar walk, not two. */
		if (lo >= memo_lo && lo <= memo_w) {
			w = memo_w;
		} else {
			rc = cron_wall_next(c, lo, INT64_MAX, &w);
			if (rc != 0)
				break; /* SC_ENEVER: nothing within 400 years */
			memo_lo = lo;
			memo_w = w;
		}
		if (sp.end_s == INT64_MAX || w < sp.end_s + sp.off_s) {
			*out_ms = (w - sp.off_s) * 1000;
			return 0;
		}
		if (sp.end_s > limit)
			break;
		/*
		 * No match before the span ends: go on with the next span.
		 * But when this span lasts JUMP_MARGIN_S more and the match
		 * w lies past its end, jump to JUMP_MARGIN_S before w's
		 * instant: every span skipped then starts that margin after
		 * `from` and ends that margin before w, so its whole wall
		 * range (and any gap) lies inside [lo, w), where nothing
		 * matches (offsets of a zone differ by less than the
		 * margin, see JUMP_MARGIN_S). This makes 29 February cost
		 * two searches, not one per DST change.
		 */
		int64_t jump = w - sp.off_s - JUMP_MARGIN_S;
		from = sp.end_s - from >= JUMP_MARGIN_S && jump > sp.end_s
			       ? jump
			       : sp.end_s;
		tz_span_at(z, from, &sp);
	}
	return sc_err_set(err, SC_ENEVER, "cron next: no fire time within %d "
			  "years", YEAR_BOUND);
}
