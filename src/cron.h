/*
 * cron.h - the cron engine's internals (public part in surecron.h).
 *
 * A parsed expression is struct sc_cron: one bitset per field, no heap.
 * cron_parse.c fills it, cron_next.c walks the calendar with it (whole
 * months and days skipped through the bitsets), cron_class.c and
 * cron_describe.c read it. Every function here is pure and thread-safe.
 */
#ifndef SURECRON_CRON_H
#define SURECRON_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "surecron.h"

/* Days in month m (1-12) of proleptic Gregorian year y. */
int cron_days_in_month(int64_t y, int m);

/*
 * The days of month m of year y that the expression's day fields accept:
 * bit d (1..31) set when day d matches (the OR rule applied). wday1 is the
 * weekday of the month's first day (0 = Sunday), dim its length.
 */
uint32_t cron_day_mask(const struct sc_cron *c, int dim, int wday1);

/*
 * The first local wall time (seconds since the epoch, as if the zone were
 * UTC) >= lo and < hi that the expression matches. Returns 0 and sets *out,
 * SC_ENOENT when none lies in [lo, hi), or SC_ENEVER when the search went
 * 400 years past lo without a match (the bound that keeps it finite).
 */
int cron_wall_next(const struct sc_cron *c, int64_t lo, int64_t hi,
		   int64_t *out);

/* True when the expression has at least one day in 400 years (a whole
 * Gregorian cycle, so "never" means never). */
bool cron_fires_ever(const struct sc_cron *c);

/* Writes the set bits of [lo, hi] as "1-5,7" (or with names: "MON-FRI")
 * into buf (n bytes, always terminated). */
void cron_format_set(uint64_t bits, int lo, int hi, const char *(*name)(int),
		     char *buf, size_t n);

/* English names of weekday w (0-6) and month m (1-12): "Friday", "FRI". */
const char *cron_wday_name(int w);
const char *cron_wday_abbr(int w);
const char *cron_month_name(int m);
const char *cron_month_abbr(int m);

#endif
