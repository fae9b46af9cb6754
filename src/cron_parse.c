/*
 * cron_parse.c - cron expression text -> struct sc_cron.
 *
 * Modelled in spirit on cronie's entry.c get_range: each field is split
 * into comma-separated items and each item is read by an explicit state
 * machine (enum item_state) that sets bits in the field's bitset. Unlike
 * cronie we return an int code and put the failing field, token and reason
 * in sc_err.
 *
 * Invariants kept:
 *   - On success every set of the result is non-empty, every bit lies in
 *     its field's range, and the expression fires at least once (checked by
 *     cron_fires_ever's bounded search).
 *   - On failure *out is untouched.
 *   - No allocation: the expression is copied into a fixed buffer of
 *     SC_CRON_EXPR_MAX bytes; longer input is refused.
 *   - The flags record facts about the *text* that the bitsets lose: whether
 *     a day field was exactly '*' or '?' (the OR rule), whether it was one
 *     fixed value (the frequency class) and whether minute, hour and seconds
 *     avoid a leading '*' (the DST rule).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cron.h"
#include "err.h"
#include "text.h"

enum field_id { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, N_FIELDS };

static const char *const month_abbr[13] = {
	"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
	"JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
};
static const char *const wday_abbr[8] = {
	"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN",
};

static const struct field_info {
	const char *name;
	int min, max;
	const char *const *names; /* indexed by value; NULL: numbers only */
	int n_names;
} fields[N_FIELDS] = {
	[F_SEC] = {"second", 0, 59, NULL, 0},
	[F_MIN] = {"minute", 0, 59, NULL, 0},
	[F_HOUR] = {"hour", 0, 23, NULL, 0},
	[F_DOM] = {"day-of-month", 1, 31, NULL, 0},
	[F_MON] = {"month", 1, 12, month_abbr, 13},
	[F_DOW] = {"day-of-week", 0, 7, wday_abbr, 7},
};

/* What one field collected; folded into struct sc_cron at the end. */
struct field_acc {
	uint64_t bits;
	uint8_t dow_last;
	uint8_t dow_nth[7];
	int n_items;
	bool single; /* the one item is a fixed value (number, name, L, nL, n#k) */
};

/* The error context: the whole expression, for the message. */
struct pctx {
	const char *expr;
	struct sc_err *err;
};

/* Copies s into out (size n) as the message quotes it: double quotes
 * become '?' so the quoting stays unambiguous, and control bytes and bad
 * UTF-8 become visible escapes (text_clean), so the message is one
 * printable line. */
static const char *clean(char *out, size_t n, const char *s)
{
	char q[SC_CRON_EXPR_MAX + 1];
	size_t i = 0;

	for (; s[i] && i + 1 < sizeof(q); i++)
		q[i] = s[i] == '"' ? '?' : s[i];
	q[i] = '\0';
	return text_clean(out, n, q, 0);
}

/* Bytes of the character at p (before end): a whole UTF-8 sequence, so a
 * message quotes "é" and not its first byte; 1 for anything else. */
static int char_len(const char *p, const char *end)
{
	unsigned char c = (unsigned char)*p;
	int n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 1;

	if (c < 0x80 || c > 0xF4 || end - p < n)
		return 1;
	for (int k = 1; k < n; k++)
		if (((unsigned char)p[k] & 0xC0) != 0x80)
			return 1;
	return n;
}

static int fail(const struct pctx *px, int f, const char *fmt, ...)
	SC_PRINTF(3, 4);

/* Records `invalid cron "EXPR": FIELD: REASON` and returns SC_ECRON. */
static int fail(const struct pctx *px, int f, const char *fmt, ...)
{
	char raw[200], reason[400], ex[4 * SC_CRON_EXPR_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	clean(ex, sizeof(ex), px->expr);
	text_clean(reason, sizeof(reason), raw, 0);
	if (f >= 0)
		sc_err_set(px->err, SC_ECRON, "invalid cron \"%s\": %s: %s", ex,
			   fields[f].name, reason);
	else
		sc_err_set(px->err, SC_ECRON, "invalid cron \"%s\": %s", ex,
			   reason);
	return SC_ECRON;
}

/*
 * Reads the digits at *p (before end), all of them, and advances *p. The
 * value saturates at CRON_NUM_BIG, above every field's range, so leading
 * zeros cost nothing ("0000005" is 5) and a long number is refused whole,
 * and messages quote the digits as written.
 */
#define CRON_NUM_BIG 1000000L
static long read_digits(const char **p, const char *end)
{
	const char *s = *p;
	long v = 0;

	while (s < end && isdigit((unsigned char)*s)) {
		v = v * 10 + (*s++ - '0');
		if (v > CRON_NUM_BIG)
			v = CRON_NUM_BIG;
	}
	*p = s;
	return v;
}

/*
 * Reads a number or a name at *p (within the item [item, end)) into *out;
 * *is_name tells which it was. Returns 0 or SC_ECRON. For day-of-week a
 * name may carry a trailing L ("FRIL"): the L is left unread for the state
 * machine.
 */
static int read_value(const struct pctx *px, int f, const char **p,
		      const char *end, const char *item, int *out,
		      bool *is_name)
{
	const struct field_info *fi = &fields[f];
	const char *s = *p;
	int ilen = (int)(end - item);

	*is_name = false;
	if (s < end && isdigit((unsigned char)*s)) {
		const char *d = s;
		long v = read_digits(&s, end);
		if (v < fi->min || v > fi->max)
			return fail(px, f, "%.*s is out of range %d-%d",
				    (int)(s - d), d, fi->min, fi->max);
		*p = s;
		*out = (int)v;
		return 0;
	}
	if (s < end && isalpha((unsigned char)*s)) {
		const char *a = s;
		while (s < end && isalpha((unsigned char)*s))
			s++;
		size_t len = (size_t)(s - a);
		if (len == 4 && f == F_DOW && (a[3] == 'L' || a[3] == 'l')) {
			len = 3; /* "FRIL": the L is the last-weekday suffix */
			s--;
		}
		if (!fi->names)
			return fail(px, f, "'%.*s' is not a number", ilen, item);
		if (len == 3)
			for (int v = 0; v < fi->n_names; v++)
				if (fi->names[v][0] &&
				    strncasecmp(a, fi->names[v], 3) == 0) {
					*p = s;
					*is_name = true;
					*out = v;
					return 0;
				}
		return fail(px, f, "unknown name '%.*s' in '%.*s'", (int)len, a,
			    ilen, item);
	}
	if (s >= end)
		return fail(px, f, "'%.*s' ends where a value is expected",
			    ilen, item);
	return fail(px, f, "unexpected '%.*s' in '%.*s'", char_len(s, end), s,
		    ilen, item);
}

/* Reads a step or #-count: plain digits in lo..hi, into *out. */
static int read_small(const struct pctx *px, int f, const char **p,
		      const char *end, const char *item, const char *what,
		      int lo, int hi, int *out)
{
	const char *s = *p, *d = s;

	if (s >= end || !isdigit((unsigned char)*s))
		return fail(px, f, "%s in '%.*s' must be a number", what,
			    (int)(end - item), item);
	long v = read_digits(&s, end);
	if (v < lo || v > hi)
		return fail(px, f, "%s %.*s in '%.*s' is out of range %d-%d",
			    what, (int)(s - d), d, (int)(end - item), item, lo,
			    hi);
	*p = s;
	*out = (int)v;
	return 0;
}

/* The states of one list item, e.g. "MON-FRI/2", "*", "5L", "5#2". */
enum item_state {
	ST_START,      /* nothing read */
	ST_LOW,        /* a first value read */
	ST_RANGE,      /* a range (or '*') read; a step may follow */
	ST_STEP,       /* '/' read; the step number follows */
	ST_DONE,       /* the item is complete; only its end may follow */
};

static int parse_item(const struct pctx *px, int f, const char *item,
		      const char *end, struct field_acc *acc)
{
	const struct field_info *fi = &fields[f];
	enum item_state st = ST_START;
	const char *p = item;
	int lo = 0, hi = 0, step = 1, nth = 0, ilen = (int)(end - item);
	int top = f == F_DOW ? 6 : fi->max; /* '*' and a/n stop here */
	bool is_name, fixed = false, special = false;

	if (item == end)
		return fail(px, f, "empty list item");
	while (st != ST_DONE || p < end) {
		switch (st) {
		case ST_START:
			if (*p == '*' || *p == '?') {
				if (*p == '?' && f != F_DOM && f != F_DOW)
					return fail(px, f, "'?' is only allowed "
						    "in day-of-month and "
						    "day-of-week");
				p++;
				lo = fi->min;
				hi = top;
				st = ST_RANGE;
			} else if (f == F_DOM && (*p == 'L' || *p == 'l') &&
				   p + 1 == end) {
				p++;
				acc->bits |= 1; /* bit 0: the last day */
				fixed = special = true;
				st = ST_DONE;
			} else {
				if (read_value(px, f, &p, end, item, &lo,
					       &is_name))
					return SC_ECRON;
				hi = lo;
				st = ST_LOW;
			}
			break;
		case ST_LOW:
			if (p == end) {
				fixed = true;
				st = ST_DONE;
			} else if (*p == '-') {
				p++;
				if (read_value(px, f, &p, end, item, &hi,
					       &is_name))
					return SC_ECRON;
				/* SUN closing a range means 7: FRI-SUN. */
				if (f == F_DOW && is_name && hi == 0)
					hi = 7;
				if (hi < lo)
					return fail(px, f, "range '%.*s' is "
						    "backwards", ilen, item);
				st = ST_RANGE;
			} else if (*p == '/') {
				hi = top; /* a/n: from a to the field's max */
				if (hi < lo)
					return fail(px, f, "'%.*s' starts after "
						    "%d", ilen, item, top);
				st = ST_RANGE;
			} else if (f == F_DOW && (*p == 'L' || *p == 'l')) {
				p++;
				acc->dow_last |= (uint8_t)(1u << (lo % 7));
				fixed = special = true;
				st = ST_DONE;
			} else if (f == F_DOW && *p == '#') {
				p++;
				if (read_small(px, f, &p, end, item,
					       "occurrence", 1, 5, &nth))
					return SC_ECRON;
				/* nth is 1..5 here (read_small checked). */
				acc->dow_nth[lo % 7] |=
					(uint8_t)(1u << ((nth - 1) & 7));
				fixed = special = true;
				st = ST_DONE;
			} else {
				return fail(px, f, "unexpected '%.*s' in '%.*s'",
					    char_len(p, end), p, ilen, item);
			}
			break;
		case ST_RANGE:
			if (p == end) {
				st = ST_DONE;
			} else if (*p == '/') {
				p++;
				st = ST_STEP;
			} else {
				return fail(px, f, "unexpected '%.*s' in '%.*s'",
					    char_len(p, end), p, ilen, item);
			}
			break;
		case ST_STEP:
			if (read_small(px, f, &p, end, item, "step", 1,
				       top - fi->min + 1, &step))
				return SC_ECRON;
			st = ST_DONE;
			break;
		case ST_DONE:
			return fail(px, f, "unexpected '%.*s' in '%.*s'",
				    char_len(p, end), p, ilen, item);
		}
	}
	/* read_value kept lo and hi in the field's range; this keeps every
	 * shift below defined whatever the table says. */
	if (lo < 0 || hi > 63)
		return fail(px, f, "'%.*s' is out of range", ilen, item);
	if (!special)
		for (int v = lo; v <= hi; v += step)
			acc->bits |= 1ULL << (f == F_DOW ? v % 7 : v);
	acc->n_items++;
	acc->single = fixed;
	return 0;
}

/* Parses one whitespace-free field text [s, end). */
static int parse_field(const struct pctx *px, int f, const char *s,
		       const char *end, struct field_acc *acc)
{
	memset(acc, 0, sizeof(*acc));
	while (1) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *e = comma ? comma : end;
		int rc = parse_item(px, f, s, e, acc);
		if (rc)
			return rc;
		if (!comma)
			break;
		s = comma + 1;
	}
	if (acc->n_items > 1)
		acc->single = false;
	return 0;
}

/* Fields are separated by any white space, so a value read from YAML with
 * a trailing newline still parses. */
#define BLANKS " \t\n\r\v\f"

static bool is_blank(char ch)
{
	return ch && strchr(BLANKS, ch) != NULL;
}

static const struct {
	const char *name;
	const char *expr;
} macros[] = {
	{"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
	{"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
	{"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
};

static int parse_fields(const struct pctx *px, const char *text,
			struct sc_cron *out)
{
	const char *start[N_FIELDS + 1], *end[N_FIELDS + 1];
	int n = 0;
	const char *p = text;

	while (1) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		if (n == N_FIELDS) {
			n++;
			break;
		}
		start[n] = p;
		while (*p && !is_blank(*p))
			p++;
		end[n++] = p;
	}
	if (n == 1 && start[0][0] == '@')
		return fail(px, -1, "unknown macro '%.*s'",
			    (int)(end[0] - start[0]), start[0]);
	if (n != 5 && n != 6) {
		if (n > 6)
			return fail(px, -1, "expected 5 or 6 fields, got more");
		return fail(px, -1, "expected 5 or 6 fields, got %d", n);
	}

	struct field_acc acc[N_FIELDS];
	int first = n == 6 ? F_SEC : F_MIN;
	struct sc_cron c;

	memset(&c, 0, sizeof(c));
	memset(acc, 0, sizeof(acc));
	for (int f = first; f < N_FIELDS; f++) {
		int i = f - first;
		int rc = parse_field(px, f, start[i], end[i], &acc[f]);
		if (rc)
			return rc;
	}
	c.sec = n == 6 ? acc[F_SEC].bits : 1; /* 5 fields: second 0 */
	c.min = acc[F_MIN].bits;
	c.hour = (uint32_t)acc[F_HOUR].bits;
	c.dom = (uint32_t)acc[F_DOM].bits;
	c.mon = (uint16_t)acc[F_MON].bits;
	c.dow = (uint8_t)acc[F_DOW].bits;
	c.dow_last = acc[F_DOW].dow_last;
	memcpy(c.dow_nth, acc[F_DOW].dow_nth, sizeof(c.dow_nth));

	int idom = F_DOM - first, idow = F_DOW - first;
	size_t ldom = (size_t)(end[idom] - start[idom]);
	size_t ldow = (size_t)(end[idow] - start[idow]);
	if (ldom == 1 && (start[idom][0] == '*' || start[idom][0] == '?'))
		c.flags |= SC_CRON_DOM_STAR;
	if (ldow == 1 && (start[idow][0] == '*' || start[idow][0] == '?'))
		c.flags |= SC_CRON_DOW_STAR;
	if (n == 6)
		c.flags |= SC_CRON_SECONDS;
	bool fixed = start[F_MIN - first][0] != '*' &&
		     start[F_HOUR - first][0] != '*' &&
		     (n == 5 || start[0][0] != '*');
	if (fixed)
		c.flags |= SC_CRON_FIXED_TIME;
	if (acc[F_DOM].single)
		c.flags |= SC_CRON_DOM_SINGLE;
	if (acc[F_DOW].single)
		c.flags |= SC_CRON_DOW_SINGLE;

	if (!cron_fires_ever(&c)) {
		char ex[4 * SC_CRON_EXPR_MAX + 1];
		return sc_err_set(px->err, SC_ENEVER,
				  "invalid cron \"%s\": never fires (no day of "
				  "any year matches)",
				  clean(ex, sizeof(ex), px->expr));
	}
	*out = c;
	return 0;
}

int sc_cron_parse(const char *expr, struct sc_cron *out, struct sc_err *err)
{
	struct pctx px = {expr ? expr : "", err};
	const char *p;

	if (!expr)
		return fail(&px, -1, "no expression");
	if (strnlen(expr, SC_CRON_EXPR_MAX + 1) > SC_CRON_EXPR_MAX)
		return sc_err_set(err, SC_ECRON, "invalid cron: expression is "
				  "longer than %d bytes", SC_CRON_EXPR_MAX);
	p = expr;
	while (is_blank(*p))
		p++;
	if (*p == '@') {
		size_t len = strcspn(p, BLANKS);
		const char *rest = p + len;
		while (is_blank(*rest))
			rest++;
		for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
			if (strlen(macros[i].name) == len &&
			    strncasecmp(p, macros[i].name, len) == 0) {
				if (*rest)
					return fail(&px, -1, "'%s' takes no "
						    "fields", macros[i].name);
				return parse_fields(&px, macros[i].expr, out);
			}
		return fail(&px, -1, "unknown macro '%.*s'", (int)len, p);
	}
	if (!*p)
		return fail(&px, -1, "expected 5 or 6 fields, got 0");
	return parse_fields(&px, expr, out);
}

static const char *const wday_full[7] = {
	"Sunday", "Monday", "Tuesday", "Wednesday",
	"Thursday", "Friday", "Saturday",
};
static const char *const month_full[13] = {
	"", "January", "February", "March", "April", "May", "June",
	"July", "August", "September", "October", "November", "December",
};

const char *cron_wday_name(int w) { return wday_full[((w % 7) + 7) % 7]; }
const char *cron_wday_abbr(int w) { return wday_abbr[((w % 7) + 7) % 7]; }
const char *cron_month_name(int m)
{
	return m >= 1 && m <= 12 ? month_full[m] : "?";
}
const char *cron_month_abbr(int m)
{
	return m >= 1 && m <= 12 ? month_abbr[m] : "?";
}
