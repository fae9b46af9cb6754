/*
 * fuzz_duration.c - clock_parse_duration (every timeout, lease, retry
 * delay and --since of the config and the CLI).
 *
 * Input: the duration text. A reference parser of the documented grammar
 * (docs/man/surecron.yaml.5.md, Durations: one or more terms, each
 * digits followed by ms, s, m, h or d) computes the exact sum in 128 bits.
 *
 * Properties:
 *   1. an accepted text is in the grammar, and its value is the exact sum
 *      of its terms: no accepted sum wraps (issue 11, item 4);
 *   2. an accepted value round-trips: written with the largest units
 *      ("1d2h3m4s5ms"), and as "<N>ms" when at most 100 years, it parses
 *      to the same value;
 *   3. a text in the grammar whose sum is at most 100 years, with at most
 *      16 terms of at most 18 digits, is accepted;
 *   4. a refusal has a message.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "surecron.h"

#define CENTURY_MS ((__int128)100 * 366 * 86400000)

/* Exact sum of a text in the grammar; false when it is not in it. The
 * sum saturates far above INT64_MAX, so "huge" stays huge. */
static bool reference(const char *s, __int128 *sum, int *n_terms,
		      int *max_digits)
{
	const __int128 cap = (__int128)1 << 100;

	*sum = 0;
	*n_terms = 0;
	*max_digits = 0;
	if (!*s)
		return false;
	while (*s) {
		__int128 v = 0;
		int nd = 0;
		for (; *s >= '0' && *s <= '9'; s++, nd++)
			if (v < cap)
				v = v * 10 + (*s - '0');
		if (nd == 0)
			return false;
		__int128 unit;
		if (strncmp(s, "ms", 2) == 0) {
			unit = 1;
			s += 2;
		} else if (*s == 's') {
			unit = 1000;
			s++;
		} else if (*s == 'm') {
			unit = 60000;
			s++;
		} else if (*s == 'h') {
			unit = 3600000;
			s++;
		} else if (*s == 'd') {
			unit = 86400000;
			s++;
		} else {
			return false;
		}
		if (v > cap)
			v = cap;
		*sum += v * unit;
		if (*sum > cap)
			*sum = cap;
		(*n_terms)++;
		if (nd > *max_digits)
			*max_digits = nd;
	}
	return true;
}

static void largest_units(int64_t ms, char *out, size_t n)
{
	static const struct {
		int64_t ms;
		const char *u;
	} units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"},
		     {1000, "s"},     {1, "ms"}};
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < 5; i++) {
		int64_t k = ms / units[i].ms;
		if (k == 0 && !(i == 4 && used == 0))
			continue;
		ms -= k * units[i].ms;
		used += (size_t)snprintf(out + used, n - used, "%lld%s",
					 (long long)k, units[i].u);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	struct sc_err err = {0};
	int64_t ms = -1;
	__int128 sum;
	int n_terms, max_digits;

	bool in_grammar = reference(s, &sum, &n_terms, &max_digits);
	int rc = clock_parse_duration(s, &ms, &err);
	if (rc != 0) {
		FUZZ_CHECK(err.msg[0] != '\0', data, size,
			   "refused (%d) without a message", rc);
		FUZZ_CHECK(!in_grammar || sum > CENTURY_MS || n_terms > 16 ||
				   max_digits > 18,
			   data, size, "a documented duration of %lld ms was "
			   "refused: %s", (long long)sum, err.msg);
		goto done;
	}
	FUZZ_CHECK(in_grammar, data, size,
		   "accepted as %lld ms, but not a documented duration",
		   (long long)ms);
	FUZZ_CHECK(sum == (__int128)ms, data, size,
		   "accepted as %lld ms, but its terms add up to %.0Lf ms "
		   "(the sum wrapped)",
		   (long long)ms, (long double)sum);

	char buf[96];
	int64_t again = -1;
	if ((__int128)ms <= CENTURY_MS) {
		snprintf(buf, sizeof(buf), "%lldms", (long long)ms);
		rc = clock_parse_duration(buf, &again, &err);
		FUZZ_CHECK(rc == 0 && again == ms, data, size,
			   "%lld ms does not round-trip through \"%s\" (rc "
			   "%d, %lld)", (long long)ms, buf, rc,
			   (long long)again);
	}
	largest_units(ms, buf, sizeof(buf));
	again = -1;
	rc = clock_parse_duration(buf, &again, &err);
	FUZZ_CHECK(rc == 0 && again == ms, data, size,
		   "%lld ms does not round-trip through \"%s\" (rc %d, %lld)",
		   (long long)ms, buf, rc, (long long)again);
done:
	free(s);
	return 0;
}
