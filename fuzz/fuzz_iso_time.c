/*
 * fuzz_iso_time.c - clock_parse_iso and clock_format_utc (--from, --since,
 * --at and every instant a person types).
 *
 * Input: the text of an instant. Its first 8 bytes, read as a number, are
 * also an instant to format.
 *
 * Properties:
 *   1. an accepted instant lies in years 1 to 9999 UTC, the range every
 *      other part of the program accepts (issue 11, item 13: an offset
 *      must not carry 0001-01-01T00:00+01:00 out of it);
 *   2. an accepted instant round-trips: clock_format_utc then
 *      clock_parse_iso gives the same milliseconds;
 *   3. any instant in that range, formatted and parsed back, is the same
 *      (so the formatter and the parser agree on the calendar);
 *   4. a refusal has a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "surecron.h"

#define MIN_MS INT64_C(-62135596800000) /* 0001-01-01T00:00:00Z */
#define MAX_MS INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	char iso[CLOCK_ISO_MAX];
	struct sc_err err = {0};
	int64_t ms, again;

	int rc = clock_parse_iso(s, &ms, &err);
	if (rc != 0) {
		FUZZ_CHECK(err.msg[0] != '\0', data, size,
			   "refused (%d) without a message", rc);
	} else {
		FUZZ_CHECK(ms >= MIN_MS && ms <= MAX_MS, data, size,
			   "accepted as %lld ms, outside years 1-9999",
			   (long long)ms);
		clock_format_utc(ms, iso);
		rc = clock_parse_iso(iso, &again, &err);
		FUZZ_CHECK(rc == 0 && again == ms, data, size,
			   "%lld ms does not round-trip through \"%s\" (rc %d, "
			   "%lld)", (long long)ms, iso, rc, (long long)again);
	}

	if (size >= 8) {
		uint64_t u;
		memcpy(&u, data, 8);
		ms = MIN_MS + (int64_t)(u % (uint64_t)(MAX_MS - MIN_MS + 1));
		clock_format_utc(ms, iso);
		rc = clock_parse_iso(iso, &again, &err);
		FUZZ_CHECK(rc == 0 && again == ms, data, size,
			   "%lld ms does not round-trip through \"%s\" (rc %d, "
			   "%lld)", (long long)ms, iso, rc, (long long)again);
	}
	free(s);
	return 0;
}
