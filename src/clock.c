/*
 * clock.c - the real and virtual clocks, the daemon's trusted clock (the
 * wall clock read through CLOCK_MONOTONIC, so a step moves nothing until
 * it is taken), calendar arithmetic, and the reading and printing of
 * instants and durations.
 *
 * The calendar functions are pure integer arithmetic on the proleptic
 * Gregorian calendar (the "days from civil" algorithm), so they are
 * thread-safe and never consult the process's TZ.
 */
#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "err.h"

struct sc_clock {
	bool is_virtual;
	_Atomic int64_t virt_ms;
	int64_t offset_ms; /* a real clock shifted by this much (test seam) */
	int64_t rate;      /* 0 or 1: real speed; else this many times faster,
			      from clock base_ns at real instant anchor_ns */
	int64_t base_ns, anchor_ns;
	/* trusted (clock_trusted_new): reads base's wall time through the
	 * monotonic clock, mono + trust_off_ns; split_mono_ns is when base
	 * began to disagree (0: it agrees), split_ns by how much. */
	const struct sc_clock *base;
	_Atomic int64_t trust_off_ns;
	int64_t split_mono_ns, split_ns;
};

static struct sc_clock real_clock = {.is_virtual = false};

/* ns to ms rounding down, also before 1970 */
static int64_t floor_div_ms(int64_t ns)
{
	return ns >= 0 ? ns / 1000000 : -((-ns + 999999) / 1000000);
}

struct sc_clock *sc_clock_real(void)
{
	return &real_clock;
}

struct sc_clock *sc_clock_virtual_new(int64_t start_ms)
{
	struct sc_clock *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->is_virtual = true;
	atomic_store(&c->virt_ms, start_ms);
	return c;
}

struct sc_clock *sc_clock_offset_new(int64_t offset_ms)
{
	struct sc_clock *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->offset_ms = offset_ms;
	return c;
}

struct sc_clock *clock_scaled_new(int64_t start_ms, int64_t anchor_ms,
				  int64_t rate)
{
	struct sc_clock *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rate = rate > 1 ? rate : 1;
	c->base_ns = start_ms * 1000000;
	c->anchor_ns = anchor_ms * 1000000;
	return c;
}

struct sc_clock *clock_trusted_new(const struct sc_clock *base)
{
	struct sc_clock *c;

	if (base && (base->is_virtual || base->rate > 1 || base->base))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->base = base ? base : &real_clock;
	atomic_store(&c->trust_off_ns, clock_now_ns(c->base) - clock_mono_ns());
	return c;
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

enum clock_trust clock_trust_check(struct sc_clock *c, int64_t tolerance_ms,
				   int64_t accept_ms, int64_t *step_ms)
{
	int64_t mono, d, tol = tolerance_ms * 1000000;

	*step_ms = 0;
	if (!c || !c->base)
		return CLOCK_TRUST_AGREES;
	mono = clock_mono_ns();
	d = clock_now_ns(c->base) - (mono + atomic_load(&c->trust_off_ns));
	*step_ms = d / 1000000;
	if (abs64(d) <= tol) {
		/* Agrees: follow it (an NTP slew moves both alike). */
		atomic_fetch_add(&c->trust_off_ns, d);
		if (!c->split_mono_ns)
			return CLOCK_TRUST_AGREES;
		c->split_mono_ns = 0;
		return CLOCK_TRUST_CORRECTED;
	}
	if (!c->split_mono_ns || abs64(d - c->split_ns) > tol) {
		c->split_mono_ns = mono;
		c->split_ns = d;
		return CLOCK_TRUST_STEPPED;
	}
	if (accept_ms < 0 || mono - c->split_mono_ns < accept_ms * 1000000)
		return CLOCK_TRUST_HOLDING;
	atomic_fetch_add(&c->trust_off_ns, d);
	c->split_mono_ns = 0;
	return CLOCK_TRUST_ACCEPTED;
}

void clock_trust_adopt(struct sc_clock *c, int64_t delta_ms)
{
	if (c && c->base)
		atomic_fetch_add(&c->trust_off_ns, delta_ms * 1000000);
}

int64_t clock_real_delta_ns(const struct sc_clock *c, int64_t delta_ns)
{
	if (c && !c->is_virtual && c->rate > 1)
		return delta_ns / c->rate;
	return delta_ns;
}

int64_t clock_real_delta_ms(const struct sc_clock *c, int64_t delta_ms)
{
	if (c && !c->is_virtual && c->rate > 1)
		return delta_ms / c->rate;
	return delta_ms;
}

bool clock_mono_deadline(const struct sc_clock *c, int64_t deadline_ns,
			 struct timespec *out)
{
	struct timespec ts;
	int64_t delta = clock_real_delta_ns(c, deadline_ns - clock_now_ns(c));

	if (delta <= 0)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + delta;
	out->tv_sec = (time_t)(t / 1000000000);
	out->tv_nsec = (long)(t % 1000000000);
	return true;
}

void clock_sleep_until_ns(const struct sc_clock *c, int64_t deadline_ns)
{
	struct timespec ts;

	if ((c && c->is_virtual) || !clock_mono_deadline(c, deadline_ns, &ts))
		return;
	/* Relative sleeps until the monotonic instant: resumed after a
	 * signal, and right under libfaketime too (its absolute monotonic
	 * sleeps return at once when it leaves the monotonic clock real). */
	int64_t until = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	for (int64_t left; (left = until - clock_mono_ns()) > 0;) {
		struct timespec rel = {.tv_sec = (time_t)(left / 1000000000),
				       .tv_nsec = (long)(left % 1000000000)};
		(void)clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL);
	}
}

void sc_clock_free(struct sc_clock *c)
{
	if (c && c != &real_clock)
		free(c);
}

int64_t sc_clock_now_ms(const struct sc_clock *c)
{
	struct timespec ts;

	if (c && c->is_virtual)
		return atomic_load(&((struct sc_clock *)c)->virt_ms);
	if (c && (c->rate > 1 || c->base))
		return floor_div_ms(clock_now_ns(c));
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
	       (c ? c->offset_ms : 0);
}

int64_t clock_now_ns(const struct sc_clock *c)
{
	struct timespec ts;

	if (c && c->is_virtual)
		return atomic_load(&((struct sc_clock *)c)->virt_ms) * 1000000;
	if (c && c->base)
		return clock_mono_ns() +
		       atomic_load(&((struct sc_clock *)c)->trust_off_ns);
	clock_gettime(CLOCK_REALTIME, &ts);
	if (c && c->rate > 1)
		return c->base_ns + ((int64_t)ts.tv_sec * 1000000000 +
				     ts.tv_nsec - c->anchor_ns) * c->rate;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec +
	       (c ? c->offset_ms : 0) * 1000000;
}

bool sc_clock_is_virtual(const struct sc_clock *c)
{
	return c && c->is_virtual;
}

void sc_clock_set_ms(struct sc_clock *c, int64_t ms)
{
	if (c && c->is_virtual)
		atomic_store(&c->virt_ms, ms);
}

void sc_clock_advance_ms(struct sc_clock *c, int64_t delta_ms)
{
	if (c && c->is_virtual)
		atomic_fetch_add(&c->virt_ms, delta_ms);
}

int64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000;
}

int64_t clock_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void clock_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int clock_weekday(int64_t days)
{
	/* 1970-01-01 was a Thursday (4). */
	int64_t w = (days + 4) % 7;
	return (int)(w < 0 ? w + 7 : w);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

const char *clock_format_utc(int64_t ms, char out[CLOCK_ISO_MAX])
{
	int64_t secs = floor_div(ms, 1000);
	int frac = (int)(ms - secs * 1000);
	int64_t days = floor_div(secs, 86400);
	int64_t sod = secs - days * 86400;
	int64_t y;
	int m, d;

	clock_civil_from_days(days, &y, &m, &d);
	if (frac)
		snprintf(out, CLOCK_ISO_MAX,
			 "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y,
			 m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
			 (int)(sod % 60), frac);
	else
		snprintf(out, CLOCK_ISO_MAX, "%04lld-%02d-%02dT%02d:%02d:%02dZ",
			 (long long)y, m, d, (int)(sod / 3600),
			 (int)(sod / 60 % 60), (int)(sod % 60));
	return out;
}

/* Reads exactly n digits at *p; advances *p. Returns -1 when not digits. */
static int digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return v;
}

static int days_in_month(int64_t y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

int clock_parse_iso(const char *s, int64_t *out_ms, struct sc_err *err)
{
	const char *p = s;
	int y, mo, d, h, mi, sec = 0, frac = 0, off = 0;

	if ((y = digits(&p, 4)) < 0 || *p++ != '-' || (mo = digits(&p, 2)) < 0 ||
	    *p++ != '-' || (d = digits(&p, 2)) < 0)
		goto bad;
	if (*p != 'T' && *p != 't' && *p != ' ')
		goto bad;
	p++;
	if ((h = digits(&p, 2)) < 0 || *p++ != ':' || (mi = digits(&p, 2)) < 0)
		goto bad;
	if (*p == ':') {
		p++;
		if ((sec = digits(&p, 2)) < 0)
			goto bad;
		if (*p == '.' || *p == ',') {
			int scale = 100;
			p++;
			if (!isdigit((unsigned char)*p))
				goto bad;
			while (isdigit((unsigned char)*p)) {
				frac += (*p - '0') * scale;
				scale /= 10;
				p++;
			}
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		int oh, om;
		if ((oh = digits(&p, 2)) < 0)
			goto bad;
		if (*p == ':')
			p++;
		if ((om = digits(&p, 2)) < 0 || oh > 23 || om > 59)
			goto bad;
		off = sign * (oh * 3600 + om * 60);
	} else {
		return sc_err_set(err, SC_EINVAL,
				  "invalid time \"%s\": needs an offset (Z or "
				  "+HH:MM)", s);
	}
	if (*p != '\0')
		goto bad;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
	    mi > 59 || sec > 60)
		return sc_err_set(err, SC_EINVAL,
				  "invalid time \"%s\": a field is out of range",
				  s);
	if (sec == 60)
		sec = 59; /* leap second: clamp, POSIX time has none */
	int64_t days = clock_days_from_civil(y, mo, d);
	int64_t ms = ((days * 86400 + h * 3600 + mi * 60 + sec) - off) * 1000 +
		     frac;
	/* The instant, not only the text, lies in the years 1-9999: an
	 * offset can move 0001-01-01T00:00 or 9999-12-31T23:59 out. */
	if (y < 1 || ms < CLOCK_MIN_MS || ms > CLOCK_MAX_MS)
		return sc_err_set(err, SC_EINVAL,
				  "invalid time \"%s\": outside the years "
				  "1-9999 (UTC)", s);
	*out_ms = ms;
	return 0;
bad:
	return sc_err_set(err, SC_EINVAL,
			  "invalid time \"%s\": expected ISO 8601 like "
			  "2026-03-08T03:30:00-04:00", s);
}

int clock_parse_duration(const char *s, int64_t *out_ms, struct sc_err *err)
{
	const char *p = s;
	int64_t total = 0;

	if (!*p)
		goto bad;
	while (*p) {
		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		char *end;
		long long v = strtoll(p, &end, 10);
		if (errno == ERANGE)
			goto too_long;
		if (errno || v < 0)
			goto bad;
		p = end;
		int64_t unit;
		if (strncmp(p, "ms", 2) == 0) {
			unit = 1;
			p += 2;
		} else if (*p == 's') {
			unit = 1000;
			p++;
		} else if (*p == 'm') {
			unit = 60000;
			p++;
		} else if (*p == 'h') {
			unit = 3600000;
			p++;
		} else if (*p == 'd') {
			unit = 86400000;
			p++;
		} else {
			goto bad;
		}
		/* Each term, then the sum, within the cap: no term can
		 * overflow and no sum can wrap (issue 11). */
		if (v > CLOCK_DURATION_MAX_MS / unit ||
		    v * unit > CLOCK_DURATION_MAX_MS - total)
			goto too_long;
		total += v * unit;
	}
	*out_ms = total;
	return 0;
too_long:
	/* Well formed, but past what any setting could mean: said so,
	 * rather than "invalid", which sends the reader to the syntax. */
	return sc_err_set(err, SC_EINVAL, "duration \"%s\" is too long (at "
			  "most %lldd)", s,
			  (long long)(CLOCK_DURATION_MAX_MS / 86400000));
bad:
	return sc_err_set(err, SC_EINVAL,
			  "invalid duration \"%s\": expected a number with a "
			  "unit (ms, s, m, h, d), e.g. 90s or 30m", s);
}

int clock_parse_when(const char *s, int64_t now_ms, unsigned flags,
		     int64_t *out_ms, struct sc_err *err)
{
	size_t n = strlen(s);
	int64_t ms, d = 0;

	if (n == 0)
		return sc_err_set(err, SC_EINVAL, "an empty time");
	if ((flags & CLOCK_WHEN_UNIX_MS) && strspn(s, "0123456789") == n) {
		/* More than 15 digits is past the year 9999 anyway, and
		 * strtoll cannot overflow on 15. */
		if (n > 15)
			return sc_err_set(err, SC_EINVAL, "time \"%.20s...\" "
					  "is outside the years 1-9999 (UTC)",
					  s);
		ms = strtoll(s, NULL, 10);
		goto bounded;
	}
	/* An age ("7d", "36h", "1h30m") counts back from now; anything else
	 * must be an instant. An age is at most CLOCK_DURATION_MAX_MS, so
	 * the subtraction cannot wrap, but it can leave the years. */
	if (clock_parse_duration(s, &d, NULL) == 0) {
		ms = now_ms - d;
		goto bounded;
	}
	return clock_parse_iso(s, out_ms, err);
bounded:
	if (ms < CLOCK_MIN_MS || ms > CLOCK_MAX_MS)
		return sc_err_set(err, SC_EINVAL, "time \"%s\" is outside the "
				  "years 1-9999 (UTC)", s);
	*out_ms = ms;
	return 0;
}

const char *clock_format_duration(int64_t ms, char *out, size_t n)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} u[] = {
		{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"},
		{1, "ms"},
	};
	size_t len = 0;

	if (n == 0)
		return out;
	out[0] = '\0';
	if (ms <= 0) {
		snprintf(out, n, ms ? "%lldms" : "0s", (long long)ms);
		return out;
	}
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]) && len < n; i++) {
		if (ms < u[i].ms)
			continue;
		int w = snprintf(out + len, n - len, "%lld%s",
				 (long long)(ms / u[i].ms), u[i].unit);
		len += w > 0 ? (size_t)w : 0;
		ms %= u[i].ms;
	}
	return out;
}
