/*
 * fuzz_http_hint.c - the retry hints a peer sends: Retry-After (delta
 * seconds or HTTP-date, http_parse_retry_after) and rate-limit reset
 * headers (delta seconds, Unix epoch seconds or HTTP-date,
 * http_parse_reset).
 *
 * Input: an optional first line of decimal digits, the client's clock in
 * UTC ms (default 2026-11-29T12:00:00Z; clamped to years 1970-9999), then
 * the header value (the rest, up to a NUL).
 *
 * Properties:
 *   1. no undefined behaviour on any value, however large its numbers
 *      (issue 11, item 3: a huge year in an HTTP-date);
 *   2. an accepted hint is more than 0 and at most one year;
 *   3. delta seconds from 1 to one year are accepted as exactly that; a
 *      strict IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") less than a
 *      year ahead is accepted as exactly the time to it (the calendar
 *      re-implemented here); an epoch reset value likewise;
 *   4. an IMF-fixdate written from the clock plus N seconds (N from the
 *      input) reads back as N seconds, to the millisecond.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define DEFAULT_NOW_MS INT64_C(1795953600000) /* 2026-11-29T12:00:00Z */
#define MAX_MS INT64_C(253402300799999)
#define YEAR_S INT64_C(365 * 24 * 3600)

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May",
				     "Jun", "Jul", "Aug", "Sep", "Oct",
				     "Nov", "Dec"};
static const char *const wdays[] = {"Sun", "Mon", "Tue", "Wed",
				    "Thu", "Fri", "Sat"};

static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_len(int64_t y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

/* The trimmed value (spaces and tabs around, CR/LF at the end). */
static void trim(const char *v, char *out, size_t n)
{
	while (*v == ' ' || *v == '\t')
		v++;
	size_t len = strlen(v);
	while (len && strchr(" \t\r\n", v[len - 1]))
		len--;
	if (len >= n)
		len = n - 1;
	memcpy(out, v, len);
	out[len] = '\0';
}

/* Unix seconds of a strict IMF-fixdate with a real date, else false. */
static bool ref_imf(const char *s, int64_t *out)
{
	static const char pat[] = "aaa, 99 aaa 9999 99:99:99 GMT";
	int v[6] = {0}, m = -1, w = -1;

	if (strlen(s) != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; i < sizeof(pat) - 1; i++)
		if (pat[i] == '9' ? !isdigit((unsigned char)s[i])
				  : pat[i] == 'a' ? !isalpha((unsigned char)s[i])
						  : s[i] != pat[i])
			return false;
	for (int i = 0; i < 12; i++)
		if (strncmp(s + 8, months[i], 3) == 0)
			m = i + 1;
	for (int i = 0; i < 7; i++)
		if (strncmp(s, wdays[i], 3) == 0)
			w = i;
	if (sscanf(s + 5, "%2d", &v[0]) != 1 || sscanf(s + 12, "%4d", &v[1]) != 1 ||
	    sscanf(s + 17, "%2d:%2d:%2d", &v[2], &v[3], &v[4]) != 3)
		return false;
	if (m < 0 || w < 0 || v[0] < 1 || v[0] > month_len(v[1], m) ||
	    v[2] > 23 || v[3] > 59 || v[4] > 60)
		return false;
	*out = days_from_civil(v[1], m, v[0]) * 86400 + v[2] * 3600 +
	       v[3] * 60 + (v[4] == 60 ? 59 : v[4]);
	return true;
}

/* Digits only, at most 12 of them. */
static bool ref_digits(const char *s, int64_t *out)
{
	size_t n = strlen(s);
	if (n == 0 || n > 12 || strspn(s, "0123456789") != n)
		return false;
	*out = strtoll(s, NULL, 10);
	return true;
}

static void imf_format(int64_t t, char *out, size_t n)
{
	int64_t days = t / 86400, sod = t % 86400;
	int64_t z = days + 719468, era = z / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int d = (int)(doy - (153 * mp + 2) / 5 + 1);
	int m = (int)(mp < 10 ? mp + 3 : mp - 9);
	int64_t y = yoe + era * 400 + (m <= 2);
	snprintf(out, n, "%s, %02d %s %04lld %02d:%02d:%02d GMT",
		 wdays[(days + 4) % 7], d, months[m - 1], (long long)y,
		 (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	const char *value = s;
	int64_t now = DEFAULT_NOW_MS;
	char v[64] = {0};

	size_t nd = strspn(s, "0123456789");
	if (nd > 0 && nd <= 18 && s[nd] == '\n') {
		now = strtoll(s, NULL, 10);
		if (now > MAX_MS)
			now = MAX_MS;
		value = s + nd + 1;
	}
	trim(value, v, sizeof(v));
	bool short_value = strlen(value) < sizeof(v) - 1;

	int64_t ms = 0, secs;
	bool ok = http_parse_retry_after(value, now, &ms);
	FUZZ_CHECK(!ok || (ms > 0 && ms <= YEAR_S * 1000), data, size,
		   "Retry-After accepted as %lld ms", (long long)ms);
	if (short_value && ref_digits(v, &secs) && secs >= 1 && secs <= YEAR_S)
		FUZZ_CHECK(ok && ms == secs * 1000, data, size,
			   "Retry-After %lld s gave %d, %lld ms",
			   (long long)secs, ok, (long long)ms);
	if (short_value && ref_imf(v, &secs) && secs * 1000 - now > 0 &&
	    secs * 1000 - now <= YEAR_S * 1000)
		FUZZ_CHECK(ok && ms == secs * 1000 - now, data, size,
			   "Retry-After date %lld s gave %d, %lld ms",
			   (long long)secs, ok, (long long)ms);

	ms = 0;
	ok = http_parse_reset(value, now, &ms);
	FUZZ_CHECK(!ok || (ms > 0 && ms <= YEAR_S * 1000), data, size,
		   "reset header accepted as %lld ms", (long long)ms);
	if (short_value && ref_digits(v, &secs)) {
		int64_t want = secs >= 1000000000 ? secs * 1000 - now
						  : secs * 1000;
		if (want > 0 && want <= YEAR_S * 1000)
			FUZZ_CHECK(ok && ms == want, data, size,
				   "reset %lld gave %d, %lld ms (want %lld)",
				   (long long)secs, ok, (long long)ms,
				   (long long)want);
	}

	/* 4: a date written from the clock reads back. */
	if (size >= 4) {
		uint32_t k;
		memcpy(&k, data + size - 4, 4);
		int64_t n_s = 1 + (int64_t)(k % (uint32_t)(YEAR_S - 1));
		int64_t now_s = now / 1000;
		/* Dates up to 9999-12-31T23:59:59Z (http.c gives no hint
		 * for a later year). */
		if (now_s + n_s < 253402300800LL) {
			char date[64];
			imf_format(now_s + n_s, date, sizeof(date));
			ms = 0;
			ok = http_parse_retry_after(date, now_s * 1000, &ms);
			FUZZ_CHECK(ok && ms == n_s * 1000, data, size,
				   "\"%s\" (%lld s ahead) gave %d, %lld ms", date,
				   (long long)n_s, ok, (long long)ms);
		}
	}
	free(s);
	return 0;
}
