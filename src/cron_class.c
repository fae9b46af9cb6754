/*
 * cron_class.c - the frequency class of an expression (DESIGN.md,
 * "Retry policy"; the policy and a slot's timeline are in retry.c).
 *
 * The class rule, exactly: low-frequency when the day-of-month or the
 * day-of-week field is one fixed value (a number or name; we also count L,
 * 5L and 5#2, which fire at most once a month), default otherwise. `*`,
 * `?`, ranges, lists and steps are never fixed. The parser records the
 * fact in SC_CRON_DOM_SINGLE / SC_CRON_DOW_SINGLE, because a bitset alone
 * cannot tell "5" from "5-5" or from a list that repeats one value.
 * Pure functions; thread-safe.
 */
#include <stdio.h>
#include <string.h>

#include "cron.h"
#include "err.h"

static int lowest(uint64_t bits)
{
	return bits ? __builtin_ctzll(bits) : -1;
}

/* Names the single value of the day-of-week field into out. */
static void dow_value(const struct sc_cron *c, char *out, size_t n)
{
	for (int w = 0; w < 7; w++) {
		if (c->dow_last >> w & 1) {
			snprintf(out, n, "%dL (the last %s of the month)", w,
				 cron_wday_name(w));
			return;
		}
		if (c->dow_nth[w]) {
			static const char *const ord[] = {
				"first", "second", "third", "fourth", "fifth"};
			int k = lowest(c->dow_nth[w]);
			snprintf(out, n, "%d#%d (the %s %s of the month)", w,
				 k + 1, ord[k], cron_wday_name(w));
			return;
		}
	}
	snprintf(out, n, "%s", cron_wday_abbr(lowest(c->dow)));
}

/* The values of a day field, for the reason: "*", "1,15", "MON-FRI". */
static void field_text(const struct sc_cron *c, bool dom, char *out, size_t n)
{
	size_t len;

	if (c->flags & (dom ? SC_CRON_DOM_STAR : SC_CRON_DOW_STAR)) {
		snprintf(out, n, "*");
		return;
	}
	if (dom) {
		cron_format_set(c->dom & ~UINT32_C(1), 1, 31, NULL, out, n);
		len = strlen(out);
		if (c->dom & 1)
			snprintf(out + len, n - len, "%sL", len ? "," : "");
		return;
	}
	cron_format_set(c->dow, 0, 6, cron_wday_abbr, out, n);
	for (int w = 0; w < 7; w++) {
		len = strlen(out);
		if (c->dow_last >> w & 1)
			snprintf(out + len, n - len, "%s%dL", len ? "," : "", w);
		for (int k = 0; k < 5; k++) {
			len = strlen(out);
			if (c->dow_nth[w] >> k & 1)
				snprintf(out + len, n - len, "%s%d#%d",
					 len ? "," : "", w, k + 1);
		}
	}
}

enum sc_freq_class sc_cron_class(const struct sc_cron *c, char *reason,
				 size_t n)
{
	char v[80];

	if (c->flags & SC_CRON_DOM_SINGLE) {
		if (reason) {
			if (c->dom & 1)
				snprintf(v, sizeof(v), "L (the last day)");
			else
				snprintf(v, sizeof(v), "%d", lowest(c->dom));
			snprintf(reason, n, "day-of-month is the single value %s",
				 v);
		}
		return SC_FREQ_LOW;
	}
	if (c->flags & SC_CRON_DOW_SINGLE) {
		if (reason) {
			dow_value(c, v, sizeof(v));
			snprintf(reason, n, "day-of-week is the single value %s",
				 v);
		}
		return SC_FREQ_LOW;
	}
	if (reason) {
		char dom[100], dow[100];
		field_text(c, true, dom, sizeof(dom));
		field_text(c, false, dow, sizeof(dow));
		snprintf(reason, n, "neither day-of-month (%s) nor day-of-week "
			 "(%s) is a single fixed value%s", dom, dow,
			 strpbrk(dom, ",-") || strpbrk(dow, ",-") ||
					 (dom[0] == '*' && dow[0] == '*')
				 ? ""
				 : "; a range, list or step never is, even of "
				   "one value");
	}
	return SC_FREQ_DEFAULT;
}
