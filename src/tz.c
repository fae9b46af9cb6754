/*
 * tz.c - our own TZif reader (RFC 8536) and UTC <-> local conversion.
 *
 * Reads version 1 files (32-bit data) and version 2+ files (the 64-bit
 * block after the v1 one), and the POSIX-TZ footer rule that governs
 * instants after the last transition of the table (RFC 8536 section 3.3;
 * rule syntax as in POSIX TZ, with the version 3 extension of signed
 * change times of -167 to 167 hours). Leap-second records are skipped:
 * surecron counts POSIX time, which has none.
 *
 * Limits of a POSIX rule (RFC 8536 3.3.1, POSIX XBD 8.3): the std and dst
 * offsets have hours 0-24 (so |offset| <= 24:59:59 and two offsets differ
 * by under 50 h, which cron_next's span jump relies on); only the change
 * times (`/time`) may have hours up to 167, signed. A rule with DST must
 * alternate: over a whole 400-year Gregorian cycle (the rule repeats with
 * it) its changes, in time order, go start, end, start, ... with no two at
 * one instant and no year's change crossing another's. The one exception
 * RFC 8536 names, DST all year ("EST5EDT,0/0,J365/25": each year's end is
 * the next year's start), is taken as a zone that is always on DST. Any
 * other rule is refused with the reason.
 *
 * Invariants kept:
 *   - A loaded zone is immutable and never freed: the cache below owns it
 *     until the process exits, so lookups need no lock and pointers handed
 *     out stay valid.
 *   - at[] is strictly ascending; off[i] is the offset from at[i] until
 *     at[i+1] (or, for the last one, until the footer rule takes over).
 *   - Nothing here calls setenv("TZ"), tzset() or localtime(): the
 *     process-wide zone is never read or changed.
 *   - The cache is guarded by one mutex and holds at most CACHE_MAX zones.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "tz.h"

#define TZ_FILE_MAX (1 << 20) /* a real TZif file is a few KB */
#define CACHE_MAX 1024
#define ABBR_MAX 16

/* A day of the year in a POSIX rule: Jn, n or Mm.w.d, plus a time. */
struct rule_date {
	char kind; /* 'J' (1-365, no Feb 29), 'N' (0-365), 'M' */
	int a, b, c; /* J/N: a = day; M: a = month, b = week, c = weekday */
	int32_t time_s; /* local time of day of the change, may be < 0 or > 24h */
};

struct tz_rule {
	int32_t std_off;  /* seconds east of UTC */
	int32_t dst_off;
	bool has_dst;
	bool all_dst;     /* DST all year: std_off is the DST offset */
	struct rule_date start, end; /* into and out of DST */
	char std_abbr[ABBR_MAX], dst_abbr[ABBR_MAX];
	/* With DST: the rule's changes over one 400-year cycle and a year
	 * on each side (CYCLE_Y0.., CYCLE_NY years), sorted; they alternate,
	 * so change i goes into DST iff (i & 1) == cyc_first_off. Owned by
	 * the zone; NULL without DST. */
	int64_t *cyc;
	int n_cyc;
	int cyc_first_off;
};

struct tz_type {
	int32_t off;
	bool is_dst;
	char abbr[ABBR_MAX];
};

struct sc_zone {
	char name[TZ_NAME_MAX + 1];
	char key[PATH_MAX]; /* what the cache matches: the file path */
	int n;              /* transitions */
	int64_t *at;
	uint8_t *type;      /* the type in effect from at[i] */
	int n_types;
	struct tz_type types[256];
	int type0;          /* in effect before at[0] (and always, when n == 0) */
	bool has_rule;
	struct tz_rule rule;
};

static struct sc_zone utc_zone = {
	.name = "UTC",
	.key = "(builtin UTC)",
	.n_types = 1,
	.types = {{0, false, "UTC"}},
};

/* ------------------------------------------------------------------ */
/* POSIX TZ rules                                                     */

static const char *rule_abbr(const char *p, char out[ABBR_MAX])
{
	size_t n = 0;

	if (*p == '<') {
		p++;
		while (*p && *p != '>') {
			if (n + 1 < ABBR_MAX)
				out[n++] = *p;
			p++;
		}
		if (*p != '>')
			return NULL;
		p++;
	} else {
		while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) {
			if (n + 1 < ABBR_MAX)
				out[n++] = *p;
			p++;
		}
	}
	out[n] = '\0';
	return n >= 1 ? p : NULL;
}

/* [+-]hh[:mm[:ss]] -> seconds, hours 0 to max_h (24 for an offset, 167
 * for a change time); *why says what is wrong when NULL is returned. */
static const char *rule_time(const char *p, int max_h, int32_t *out,
			     const char **why)
{
	int sign = 1, part[3] = {0, 0, 0};

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	for (int i = 0; i < 3; i++) {
		int v = 0, nd = 0;
		while (*p >= '0' && *p <= '9' && nd < 3) {
			v = v * 10 + (*p++ - '0');
			nd++;
		}
		if (nd == 0) {
			*why = "a number is missing";
			return NULL;
		}
		part[i] = v;
		if (*p != ':' || i == 2)
			break;
		p++;
	}
	if (part[0] > max_h) {
		*why = max_h == 24 ? "an offset's hours must be 0-24"
				   : "a change time's hours must be -167 to 167";
		return NULL;
	}
	if (part[1] > 59 || part[2] > 59) {
		*why = "minutes and seconds must be 0-59";
		return NULL;
	}
	*out = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
	return p;
}

static const char *rule_num(const char *p, int lo, int hi, int *out)
{
	int v = 0, nd = 0;

	while (*p >= '0' && *p <= '9' && nd < 4) {
		v = v * 10 + (*p++ - '0');
		nd++;
	}
	if (nd == 0 || v < lo || v > hi)
		return NULL;
	*out = v;
	return p;
}

static const char *rule_date(const char *p, struct rule_date *d,
			     const char **why)
{
	d->time_s = 7200; /* POSIX default: 02:00 */
	*why = "a change date must be Jn (1-365), n (0-365) or Mm.w.d";
	if (*p == 'M') {
		d->kind = 'M';
		if (!(p = rule_num(p + 1, 1, 12, &d->a)) || *p++ != '.' ||
		    !(p = rule_num(p, 1, 5, &d->b)) || *p++ != '.' ||
		    !(p = rule_num(p, 0, 6, &d->c)))
			return NULL;
	} else if (*p == 'J') {
		d->kind = 'J';
		if (!(p = rule_num(p + 1, 1, 365, &d->a)))
			return NULL;
	} else {
		d->kind = 'N';
		if (!(p = rule_num(p, 0, 365, &d->a)))
			return NULL;
	}
	if (*p == '/')
		p = rule_time(p + 1, 167, &d->time_s, why);
	return p;
}

static int rule_check(struct tz_rule *r, const char **why);

/* Parses a POSIX TZ string; returns 0, or -1 with *why set. */
static int rule_parse(const char *s, struct tz_rule *r, const char **why)
{
	const char *p = s;
	int32_t v;

	memset(r, 0, sizeof(*r));
	*why = "a zone abbreviation is missing";
	if (!(p = rule_abbr(p, r->std_abbr)) ||
	    !(p = rule_time(p, 24, &v, why)))
		return -1;
	r->std_off = -v; /* POSIX offsets count hours west */
	r->dst_off = r->std_off;
	if (!*p)
		return 0;
	*why = "a zone abbreviation is missing";
	if (!(p = rule_abbr(p, r->dst_abbr)))
		return -1;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (*p && *p != ',') {
		if (!(p = rule_time(p, 24, &v, why)))
			return -1;
		r->dst_off = -v;
	}
	if (!*p) {
		/* No rule given: POSIX leaves it to the implementation; use
		 * the US rule, as glibc does. */
		r->start = (struct rule_date){'M', 3, 2, 0, 7200};
		r->end = (struct rule_date){'M', 11, 1, 0, 7200};
		return rule_check(r, why);
	}
	if (*p != ',') {
		*why = "',' and the DST start date must follow";
		return -1;
	}
	if (!(p = rule_date(p + 1, &r->start, why)))
		return -1;
	if (*p != ',') {
		*why = "',' and the DST end date must follow";
		return -1;
	}
	if (!(p = rule_date(p + 1, &r->end, why)))
		return -1;
	if (*p) {
		*why = "unexpected text after the rule";
		return -1;
	}
	return rule_check(r, why);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Local seconds (as if UTC) of a rule date in year y. */
static int64_t rule_local(const struct rule_date *d, int64_t y)
{
	int64_t day;

	if (d->kind == 'J')
		day = clock_days_from_civil(y, 1, 1) + d->a - 1 +
		      (is_leap(y) && d->a >= 60 ? 1 : 0);
	else if (d->kind == 'N')
		day = clock_days_from_civil(y, 1, 1) + d->a;
	else {
		int64_t first = clock_days_from_civil(y, d->a, 1);
		int dim = d->a == 2 ? (is_leap(y) ? 29 : 28)
				    : 30 + ((d->a + (d->a >= 8)) & 1);
		int md = 1 + (d->c - clock_weekday(first) + 7) % 7 +
			 7 * (d->b - 1);
		while (md > dim)
			md -= 7;
		day = first + md - 1;
	}
	return day * 86400 + d->time_s;
}

struct rule_change {
	int64_t at;
	bool to_dst;
};

/* The UTC instants of year y's DST start and end. */
static void rule_changes(const struct tz_rule *r, int64_t y, int64_t *start,
			 int64_t *end)
{
	*start = rule_local(&r->start, y) - r->std_off;
	*end = rule_local(&r->end, y) - r->dst_off;
}

/*
 * Checks that a DST rule alternates (see the top of the file) over one
 * whole 400-year cycle plus two years on each side for the wrap: all its
 * changes in time order must go start, end, start, ... strictly
 * ascending. A rule that is DST all year (each end is the next year's
 * start) is turned into one with a single (DST) offset. Runs once per
 * loaded rule: 810 changes, nearly sorted. The sorted changes are kept
 * (r->cyc): the calendar, and so the rule, repeats every 400 years
 * (146097 days, a whole number of weeks), so rule_span finds any
 * instant's span by one binary search in them. Returns 0 or -1 with *why.
 */
#define CYCLE_Y0 1998
#define CYCLE_NY 405
/* 2000-01-01T00:00:00Z: the cycle rule_span folds instants into starts
 * here and ends 400 years later. Every change of 1998 lies before it and
 * every change of 2402 after its end (change times are within +-167 h of
 * their day and offsets within +-25 h), so an instant of the cycle has a
 * change at or before it and one after it in the table. */
#define CYCLE_BASE_S INT64_C(946684800)
#define CYCLE_S (INT64_C(146097) * 86400)
static int rule_check(struct tz_rule *r, const char **why)
{
	struct rule_change ch[2 * CYCLE_NY];
	int n = 0;
	bool all_dst = true, alternates = true;

	if (!r->has_dst)
		return 0;
	for (int64_t y = CYCLE_Y0; y < CYCLE_Y0 + CYCLE_NY; y++) {
		int64_t st, en, st1, en1;
		rule_changes(r, y, &st, &en);
		rule_changes(r, y + 1, &st1, &en1);
		if (!(st < en && en == st1))
			all_dst = false;
		ch[n++] = (struct rule_change){st, true};
		ch[n++] = (struct rule_change){en, false};
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && ch[j - 1].at > ch[j].at; j--) {
			struct rule_change tmp = ch[j];
			ch[j] = ch[j - 1];
			ch[j - 1] = tmp;
		}
	for (int i = 1; i < n && alternates; i++)
		if (ch[i].at <= ch[i - 1].at || ch[i].to_dst == ch[i - 1].to_dst)
			alternates = false;
	if (alternates) {
		r->cyc = malloc(sizeof(*r->cyc) * (size_t)n);
		if (!r->cyc) {
			*why = "out of memory";
			return -1;
		}
		for (int i = 0; i < n; i++)
			r->cyc[i] = ch[i].at;
		r->n_cyc = n;
		r->cyc_first_off = ch[0].to_dst ? 0 : 1;
		return 0;
	}
	if (all_dst) {
		r->has_dst = false;
		r->all_dst = true;
		r->std_off = r->dst_off;
		memcpy(r->std_abbr, r->dst_abbr, ABBR_MAX);
		return 0;
	}
	*why = "its DST start and end meet or cross (they must alternate, "
	       "start, end, start, in every year)";
	return -1;
}

/* The span of a DST rule holding t (UTC seconds): t folded into the
 * cycle of r->cyc, one binary search, and the answer moved back. The rule
 * alternates (rule_check), so the changes go start, end, start, ... */
static void rule_span(const struct tz_rule *r, int64_t t, struct tz_span *o)
{
	int64_t k = (t - CYCLE_BASE_S) / CYCLE_S;
	if ((t - CYCLE_BASE_S) % CYCLE_S < 0)
		k--;
	int64_t shift = k * CYCLE_S, tt = t - shift;
	/* cyc[lo] <= tt < cyc[hi]; both exist (see CYCLE_BASE_S). */
	int lo = 0, hi = r->n_cyc - 1;
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;
		if (r->cyc[mid] <= tt)
			lo = mid;
		else
			hi = mid;
	}
	bool dst = (lo & 1) == r->cyc_first_off;
	o->start_s = r->cyc[lo] + shift;
	o->end_s = r->cyc[hi] + shift;
	o->off_s = dst ? r->dst_off : r->std_off;
	o->prev_off_s = o->next_off_s = dst ? r->std_off : r->dst_off;
	o->is_dst = dst;
	o->abbr = dst ? r->dst_abbr : r->std_abbr;
}

/* ------------------------------------------------------------------ */
/* Lookups                                                            */

void tz_span_at(const struct sc_zone *z, int64_t t, struct tz_span *o)
{
	if (!z)
		z = &utc_zone;
	if (z->n == 0 || t >= z->at[z->n - 1]) {
		const struct tz_type *last =
			&z->types[z->n ? z->type[z->n - 1] : z->type0];
		if (z->has_rule && z->rule.has_dst) {
			rule_span(&z->rule, t, o);
			/* The table's last change bounds the rule's span. */
			if (z->n && o->start_s <= z->at[z->n - 1]) {
				o->start_s = z->at[z->n - 1];
				o->prev_off_s = z->n > 1
					? z->types[z->type[z->n - 2]].off
					: z->types[z->type0].off;
			} else if (!z->n && o->start_s == INT64_MIN) {
				o->prev_off_s = o->off_s;
			}
			return;
		}
		o->start_s = z->n ? z->at[z->n - 1] : INT64_MIN;
		o->end_s = INT64_MAX;
		if (z->has_rule) {
			o->off_s = z->rule.std_off;
			o->is_dst = z->rule.all_dst;
			o->abbr = z->rule.std_abbr;
		} else {
			o->off_s = last->off;
			o->is_dst = last->is_dst;
			o->abbr = last->abbr;
		}
		o->prev_off_s = z->n > 1 ? z->types[z->type[z->n - 2]].off
			      : z->n == 1 ? z->types[z->type0].off
					  : o->off_s;
		o->next_off_s = o->off_s;
		return;
	}
	if (t < z->at[0]) {
		const struct tz_type *ty = &z->types[z->type0];
		o->start_s = INT64_MIN;
		o->end_s = z->at[0];
		o->off_s = o->prev_off_s = ty->off;
		o->next_off_s = z->types[z->type[0]].off;
		o->is_dst = ty->is_dst;
		o->abbr = ty->abbr;
		return;
	}
	/* at[lo] <= t < at[hi]: binary search, O(log n). */
	int lo = 0, hi = z->n - 1;
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;
		if (z->at[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	const struct tz_type *ty = &z->types[z->type[lo]];
	o->start_s = z->at[lo];
	o->end_s = z->at[hi];
	o->off_s = ty->off;
	o->prev_off_s = lo ? z->types[z->type[lo - 1]].off
			   : z->types[z->type0].off;
	o->is_dst = ty->is_dst;
	o->abbr = ty->abbr;
	if (hi == z->n - 1 && z->has_rule) {
		struct tz_span after;
		tz_span_at(z, z->at[hi], &after);
		o->next_off_s = after.off_s;
	} else {
		o->next_off_s = z->types[z->type[hi]].off;
	}
}

int tz_local_to_utc(const struct sc_zone *z, int64_t local_s, int64_t out[2])
{
	int n = 0;
	struct tz_span sp;

	/* Offsets lie within +-26 h: try the spans around the two extremes
	 * and keep each instant whose span really maps it to local_s. */
	int64_t t = local_s - 26 * 3600;
	while (t <= local_s + 26 * 3600) {
		tz_span_at(z, t, &sp);
		int64_t u = local_s - sp.off_s;
		if (u >= sp.start_s && u < sp.end_s &&
		    (n == 0 || out[n - 1] != u) && n < 2)
			out[n++] = u;
		if (sp.end_s == INT64_MAX)
			break;
		t = sp.end_s;
	}
	return n;
}

int32_t sc_zone_offset_s(const struct sc_zone *z, int64_t utc_ms)
{
	struct tz_span sp;
	int64_t t = utc_ms / 1000 - (utc_ms % 1000 < 0);

	tz_span_at(z, t, &sp);
	return sp.off_s;
}

const char *sc_zone_name(const struct sc_zone *z)
{
	return z ? z->name : utc_zone.name;
}

const struct sc_zone *sc_zone_utc(void)
{
	return &utc_zone;
}

/* ------------------------------------------------------------------ */
/* TZif parsing                                                       */

static int64_t be32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
			 (uint32_t)p[2] << 8 | p[3]);
}

static int64_t be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

struct tzif_counts {
	uint32_t isut, isstd, leap, time, type, chr;
};

static int read_header(const unsigned char *p, size_t len,
		       struct tzif_counts *c, int *version)
{
	if (len < 44 || memcmp(p, "TZif", 4) != 0)
		return -1;
	*version = p[4] == 0 ? 1 : p[4] - '0';
	c->isut = (uint32_t)be32(p + 20);
	c->isstd = (uint32_t)be32(p + 24);
	c->leap = (uint32_t)be32(p + 28);
	c->time = (uint32_t)be32(p + 32);
	c->type = (uint32_t)be32(p + 36);
	c->chr = (uint32_t)be32(p + 40);
	if (c->type == 0 || c->type > 256 || c->chr == 0 ||
	    c->time > 100000 || c->leap > 10000 || c->chr > 10000 ||
	    (c->isut && c->isut != c->type) ||
	    (c->isstd && c->isstd != c->type))
		return -1;
	return 0;
}

static size_t block_len(const struct tzif_counts *c, int tsize)
{
	return (size_t)c->time * (size_t)tsize + c->time + c->type * 6u +
	       c->chr + (size_t)c->leap * (size_t)(tsize + 4) + c->isstd +
	       c->isut;
}

/* Parses the TZif image buf (len bytes) into z. Returns 0, -2 (out of
 * memory) or -1; a footer rule that is refused sets *why. */
static int parse_tzif(const unsigned char *buf, size_t len, struct sc_zone *z,
		      const char **why)
{
	struct tzif_counts c;
	int version, tsize = 4;
	const unsigned char *p = buf;

	if (read_header(p, len, &c, &version))
		return -1;
	size_t bl = block_len(&c, 4);
	if (44 + bl > len)
		return -1;
	if (version >= 2) {
		p += 44 + bl;
		len -= 44 + bl;
		int v2;
		if (read_header(p, len, &c, &v2))
			return -1;
		tsize = 8;
		bl = block_len(&c, 8);
		if (44 + bl > len)
			return -1;
	}
	const unsigned char *d = p + 44;
	const unsigned char *idx = d + (size_t)c.time * tsize;
	const unsigned char *types = idx + c.time;
	const unsigned char *chars = types + c.type * 6u;

	z->n = (int)c.time;
	z->n_types = (int)c.type;
	if (c.time) {
		z->at = malloc(sizeof(int64_t) * c.time);
		z->type = malloc(c.time);
		if (!z->at || !z->type)
			return -2;
	}
	for (uint32_t i = 0; i < c.time; i++) {
		z->at[i] = tsize == 8 ? be64(d + (size_t)i * 8)
				      : be32(d + (size_t)i * 4);
		z->type[i] = idx[i];
		if (idx[i] >= c.type || (i && z->at[i] <= z->at[i - 1]))
			return -1;
	}
	for (uint32_t i = 0; i < c.type; i++) {
		const unsigned char *t = types + i * 6u;
		int64_t off = be32(t);
		if (off < -89999 || off > 93599 || t[4] > 1 || t[5] >= c.chr)
			return -1;
		z->types[i].off = (int32_t)off;
		z->types[i].is_dst = t[4];
		size_t k = 0;
		for (uint32_t j = t[5]; j < c.chr && chars[j] && k + 1 < ABBR_MAX;
		     j++)
			z->types[i].abbr[k++] = (char)chars[j];
		z->types[i].abbr[k] = '\0';
	}
	z->type0 = 0;
	if (version >= 2) {
		const unsigned char *f = d + bl, *end = p + len;
		if (f < end && *f == '\n') {
			const unsigned char *nl = memchr(f + 1, '\n',
							 (size_t)(end - f - 1));
			size_t flen = nl ? (size_t)(nl - f - 1) : 0;
			char footer[128];
			if (nl && flen > 0 && flen < sizeof(footer)) {
				memcpy(footer, f + 1, flen);
				footer[flen] = '\0';
				if (rule_parse(footer, &z->rule, why) != 0)
					return -1;
				z->has_rule = true;
			}
		}
	}
	return 0;
}

static void zone_free(struct sc_zone *z)
{
	if (!z || z == &utc_zone)
		return;
	free(z->at);
	free(z->type);
	free(z->rule.cyc);
	free(z);
}

/* ------------------------------------------------------------------ */
/* The cache                                                          */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sc_zone *cache[CACHE_MAX];
static int n_cache;

/* Returns the cached zone for key, or NULL. Call with cache_lock held. */
static struct sc_zone *cache_find(const char *key, const char *name)
{
	for (int i = 0; i < n_cache; i++)
		if (strcmp(cache[i]->key, key) == 0 &&
		    strcmp(cache[i]->name, name) == 0)
			return cache[i];
	return NULL;
}

/* Adds z (taking ownership) unless an equal zone won the race; returns the
 * cached one. NULL when the cache is full (z is then freed). */
static struct sc_zone *cache_add(struct sc_zone *z)
{
	struct sc_zone *have;

	pthread_mutex_lock(&cache_lock);
	have = cache_find(z->key, z->name);
	if (!have && n_cache < CACHE_MAX) {
		cache[n_cache++] = z;
		have = z;
		z = NULL;
	}
	pthread_mutex_unlock(&cache_lock);
	zone_free(z);
	return have;
}

static int read_file(const char *path, unsigned char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 8192, n = 0;
	unsigned char *buf = malloc(cap);
	int rc = 0;
	if (!buf) {
		close(fd);
		return SC_ENOMEM;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= TZ_FILE_MAX) {
				rc = SC_ETOOBIG;
				break;
			}
			unsigned char *nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = SC_ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = n;
	return 0;
}

int tz_load_path(const char *path, const char *name,
		 const struct sc_zone **out, struct sc_err *err)
{
	struct sc_zone *z;
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc;

	if (strlen(path) >= PATH_MAX || strlen(name) > TZ_NAME_MAX)
		return sc_err_set(err, SC_EZONE, "unknown time zone \"%.64s\": "
				  "name too long", name);
	pthread_mutex_lock(&cache_lock);
	z = cache_find(path, name);
	pthread_mutex_unlock(&cache_lock);
	if (z) {
		*out = z;
		return 0;
	}
	rc = read_file(path, &buf, &len);
	if (rc == SC_ENOMEM)
		return sc_err_set(err, SC_ENOMEM, "out of memory reading time "
				  "zone \"%s\"", name);
	if (rc)
		return sc_err_set(err, SC_EZONE, "unknown time zone \"%s\" (%s: "
				  "%s)", name, path, rc == SC_ETOOBIG
				  ? "too big" : strerror(-rc));
	z = FAILPOINT_ERR("tz.alloc") ? NULL : calloc(1, sizeof(*z));
	if (!z) {
		free(buf);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	snprintf(z->name, sizeof(z->name), "%s", name);
	snprintf(z->key, sizeof(z->key), "%s", path);
	const char *why = NULL;
	rc = parse_tzif(buf, len, z, &why);
	free(buf);
	if (rc) {
		zone_free(z);
		if (rc == -2)
			return sc_err_set(err, SC_ENOMEM, "out of memory");
		if (why)
			return sc_err_set(err, SC_EZONE, "time zone \"%s\": %s "
					  "has a footer rule that is refused: "
					  "%s", name, path, why);
		return sc_err_set(err, SC_EZONE, "time zone \"%s\": %s is not a "
				  "valid TZif file", name, path);
	}
	struct sc_zone *have = cache_add(z);
	if (!have)
		return sc_err_set(err, SC_EZONE, "time zone \"%s\": more than "
				  "%d zones loaded", name, CACHE_MAX);
	LOG(SC_LOG_DEBUG, "tz", "event=zone_loaded zone=%s transitions=%d",
	       have->name, have->n);
	*out = have;
	return 0;
}

int tz_load_rule(const char *rule, const struct sc_zone **out,
		 struct sc_err *err)
{
	struct sc_zone *z = calloc(1, sizeof(*z));
	char key[PATH_MAX];

	if (!z)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	const char *why = "longer than 255 bytes";
	if (strlen(rule) > TZ_NAME_MAX || rule_parse(rule, &z->rule, &why) != 0) {
		free(z);
		return sc_err_set(err, SC_EZONE, "invalid time zone rule "
				  "\"%.64s\": %s", rule, why);
	}
	snprintf(key, sizeof(key), "(rule) %s", rule);
	snprintf(z->key, sizeof(z->key), "%s", key);
	snprintf(z->name, sizeof(z->name), "%s", rule);
	z->has_rule = true;
	z->n_types = 1;
	z->types[0].off = z->rule.std_off;
	z->types[0].is_dst = z->rule.all_dst;
	snprintf(z->types[0].abbr, ABBR_MAX, "%s", z->rule.std_abbr);
	struct sc_zone *have = cache_add(z);
	if (!have)
		return sc_err_set(err, SC_EZONE, "time zone \"%s\": too many "
				  "zones loaded", rule);
	*out = have;
	return 0;
}

static bool name_ok(const char *name)
{
	if (!name[0] || name[0] == '/' || strstr(name, "..") ||
	    strlen(name) > TZ_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == '\\')
			return false;
	return true;
}

int sc_zone_load(const char *name, const struct sc_zone **out,
		 struct sc_err *err)
{
	char path[PATH_MAX];
	const char *dir = getenv("TZDIR");
	struct sc_err e = {0};
	int rc;

	if (!name || !name_ok(name))
		return sc_err_set(err, SC_EZONE, "unknown time zone \"%.64s\": "
				  "not a zone name", name ? name : "");
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return sc_err_set(err, SC_EZONE, "unknown time zone \"%.64s\"",
				  name);
	rc = tz_load_path(path, name, out, &e);
	if (rc == SC_EZONE && (strcmp(name, "UTC") == 0 ||
			       strcmp(name, "Etc/UTC") == 0)) {
		/* A system without tzdata still knows UTC. */
		*out = &utc_zone;
		return 0;
	}
	if (rc)
		return sc_err_set(err, rc, "%s", e.msg);
	return 0;
}

static const struct sc_zone *local_zone;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void local_init(void)
{
	const char *tz = getenv("TZ");
	const struct sc_zone *z = NULL;

	if (tz && *tz) {
		if (*tz == ':')
			tz++;
		struct sc_err e = {0};
		if (*tz == '/')
			(void)tz_load_path(tz, tz, &z, &e);
		else if (*tz && sc_zone_load(tz, &z, NULL) != 0)
			(void)tz_load_rule(tz, &z, &e);
		/* Not an error of the caller's: said once, and the system
		 * zone is used instead. */
		if (!z)
			LOG(SC_LOG_WARN, "tz", "event=tz_env_ignored "
			       "error=\"%s\"", e.msg);
	}
	if (!z) {
		char link[PATH_MAX];
		const char *name = "localtime";
		ssize_t n = readlink("/etc/localtime", link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			const char *s = strstr(link, "zoneinfo/");
			if (s)
				name = s + strlen("zoneinfo/");
		}
		(void)tz_load_path("/etc/localtime", name, &z, NULL);
	}
	local_zone = z ? z : &utc_zone;
}

const struct sc_zone *sc_zone_local(void)
{
	pthread_once(&local_once, local_init);
	return local_zone;
}
