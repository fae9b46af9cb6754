/*
 * cron_describe.c - a plain English description of a parsed expression,
 * for `surecron explain`: "at 17:00, on Friday", "every 5 minutes".
 *
 * Works from the bitsets alone (the text is not kept), so equivalent
 * expressions get the same description. Output is always terminated and
 * truncated to the caller's buffer; no allocation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cron.h"

/* A bounded string builder over the caller's buffer. */
struct out {
	char *s;
	size_t n, len;
};

static void put(struct out *o, const char *fmt, ...) SC_PRINTF(2, 3);

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->len + 1 >= o->n)
		return;
	va_start(ap, fmt);
	int r = vsnprintf(o->s + o->len, o->n - o->len, fmt, ap);
	va_end(ap);
	if (r > 0)
		o->len = o->len + (size_t)r >= o->n ? o->n - 1 : o->len + (size_t)r;
}

static int count(uint64_t b)
{
	return __builtin_popcountll(b);
}

static int lowest(uint64_t b)
{
	return b ? __builtin_ctzll(b) : -1;
}

/* The step s when bits are exactly {lo, lo+s, lo+2s, ...} up to hi with
 * s > 1, else 0. */
static int step_of(uint64_t bits, int lo, int hi)
{
	if (lowest(bits) != lo || count(bits) < 2)
		return 0;
	int s = __builtin_ctzll(bits >> (lo + 1)) + 1;
	if (s < 2)
		return 0;
	for (int v = lo; v <= hi; v++)
		if (((bits >> v) & 1) != ((v - lo) % s == 0))
			return 0;
	return s;
}

/* Writes a set as "1-5,7" (values, or names when given). */
static void put_list(struct out *o, uint64_t bits, int lo, int hi,
		     const char *(*name)(int))
{
	bool first = true;

	for (int v = lo; v <= hi; v++) {
		if (!(bits >> v & 1))
			continue;
		int e = v;
		while (e + 1 <= hi && bits >> (e + 1) & 1)
			e++;
		put(o, "%s", first ? "" : ",");
		first = false;
		if (name)
			put(o, "%s", name(v));
		else
			put(o, "%d", v);
		if (e > v) {
			if (name)
				put(o, "%s%s", e > v + 1 ? "-" : ",", name(e));
			else
				put(o, "%s%d", e > v + 1 ? "-" : ",", e);
		}
		v = e;
	}
}

void cron_format_set(uint64_t bits, int lo, int hi, const char *(*name)(int),
		     char *buf, size_t n)
{
	struct out o = {buf, n, 0};

	if (!buf || n == 0)
		return;
	buf[0] = '\0';
	put_list(&o, bits, lo, hi, name);
}

static void put_time(struct out *o, const struct sc_cron *c)
{
	bool secs = c->flags & SC_CRON_SECONDS;
	int nh = count(c->hour), nm = count(c->min), ns = count(c->sec);

	if (ns == 1 && nh * nm <= 4) {
		put(o, "at ");
		bool first = true;
		for (int h = 0; h < 24; h++)
			for (int m = 0; m < 60; m++)
				if (c->hour >> h & 1 && c->min >> m & 1) {
					put(o, "%s%02d:%02d", first ? "" : ", ",
					    h, m);
					if (secs && c->sec != 1)
						put(o, ":%02d", lowest(c->sec));
					first = false;
				}
		return;
	}
	if (secs && c->sec != 1) {
		int s = step_of(c->sec, 0, 59);
		if (ns == 60)
			put(o, "every second");
		else if (s)
			put(o, "every %d seconds", s);
		else {
			put(o, "at second ");
			put_list(o, c->sec, 0, 59, NULL);
		}
		put(o, nm == 60 ? "" : ", ");
	}
	if (nm == 60) {
		if (!(secs && c->sec != 1))
			put(o, "every minute");
	} else if (step_of(c->min, 0, 59)) {
		put(o, "every %d minutes", step_of(c->min, 0, 59));
	} else {
		put(o, "at minute ");
		put_list(o, c->min, 0, 59, NULL);
	}
	if (nh == 24)
		return;
	if (step_of(c->hour, 0, 23))
		put(o, ", every %d hours", step_of(c->hour, 0, 23));
	else {
		put(o, ", during hour%s ", nh > 1 ? "s" : "");
		put_list(o, c->hour, 0, 23, NULL);
	}
}

static const char *const ord[] = {"first", "second", "third", "fourth",
				  "fifth"};

static void put_days(struct out *o, const struct sc_cron *c)
{
	bool dom_star = c->flags & SC_CRON_DOM_STAR;
	bool dow_star = c->flags & SC_CRON_DOW_STAR;

	if (dom_star && dow_star) {
		put(o, ", every day");
		return;
	}
	if (!dom_star) {
		uint32_t days = c->dom & ~UINT32_C(1);
		put(o, ", on ");
		if (days) {
			put(o, "day%s ", count(days) > 1 ? "s" : "");
			put_list(o, days, 1, 31, NULL);
			put(o, "%s", c->dom & 1 ? " and " : " of the month");
		}
		if (c->dom & 1)
			put(o, "the last day of the month");
	}
	if (!dow_star) {
		put(o, dom_star ? ", on " : " or on ");
		bool first = true;
		if (c->dow) {
			if (count(c->dow) == 1)
				put(o, "%s", cron_wday_name(lowest(c->dow)));
			else
				put_list(o, c->dow, 0, 6, cron_wday_abbr);
			first = false;
		}
		for (int w = 0; w < 7; w++) {
			for (int k = 0; k < 5; k++)
				if (c->dow_nth[w] >> k & 1) {
					put(o, "%sthe %s %s", first ? "" : ", ",
					    ord[k], cron_wday_name(w));
					first = false;
				}
			if (c->dow_last >> w & 1) {
				put(o, "%sthe last %s", first ? "" : ", ",
				    cron_wday_name(w));
				first = false;
			}
		}
		if (!c->dow)
			put(o, " of the month");
	}
}

const char *sc_cron_describe(const struct sc_cron *c, char *buf, size_t n)
{
	struct out o = {buf, n, 0};

	if (!buf || n == 0)
		return buf;
	buf[0] = '\0';
	put_time(&o, c);
	put_days(&o, c);
	if ((c->mon & 0x1ffe) != 0x1ffe) {
		put(&o, ", in ");
		if (count(c->mon) == 1)
			put(&o, "%s", cron_month_name(lowest(c->mon)));
		else
			put_list(&o, c->mon, 1, 12, cron_month_abbr);
	}
	return buf;
}
