/*
 * clock.h - time helpers shared by every module (the clock itself is public,
 * in surecron.h). This is the only module that reads the system's time.
 */
#ifndef SURECRON_CLOCK_H
#define SURECRON_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "surecron.h"

/* Monotonic milliseconds (nanoseconds), for timeouts and latency only
 * (never stored). */
int64_t clock_mono_ms(void);
int64_t clock_mono_ns(void);

/* The clock's time in UTC nanoseconds: sc_clock_now_ms with the
 * sub-millisecond part, so a sleeper can wake exactly at a due instant. */
int64_t clock_now_ns(const struct sc_clock *c);

/*
 * A fast clock (the daemon's test seam, SURECRON_TEST_CLOCK_RATE): it
 * reads start_ms at the real instant anchor_ms (UTC ms) and runs rate
 * times faster than real time, so processes given the same three values
 * share one clock. Free with sc_clock_free. rate <= 1: real speed.
 */
struct sc_clock *clock_scaled_new(int64_t start_ms, int64_t anchor_ms,
				  int64_t rate);

/*
 * The daemon's trusted clock (issue 42): base's wall time (NULL: the real
 * clock; base is borrowed and outlives it) as it read at the last check
 * that found it trustworthy, plus the CLOCK_MONOTONIC time elapsed since,
 * so a step of the wall clock moves nothing until clock_trust_check takes
 * it. NULL when out of memory or when base is virtual or fast (those are
 * used as they are). Free with sc_clock_free. Reading it is thread-safe.
 */
struct sc_clock *clock_trusted_new(const struct sc_clock *base);

enum clock_trust {
	CLOCK_TRUST_AGREES,    /* within the tolerance (followed) */
	CLOCK_TRUST_STEPPED,   /* the wall clock has just stepped away */
	CLOCK_TRUST_HOLDING,   /* it still disagrees, by the same step */
	CLOCK_TRUST_CORRECTED, /* it agrees again after a step */
	CLOCK_TRUST_ACCEPTED   /* it disagreed for accept_ms: taken */
};

/*
 * Compares a trusted clock's wall clock with its monotonic expectation:
 * within tolerance_ms the trusted clock follows the wall (AGREES or
 * CORRECTED); beyond it the trusted clock keeps its own time (STEPPED,
 * then HOLDING) until the wall clock has disagreed by the same step for
 * accept_ms of monotonic time, when the step is taken (ACCEPTED). *step_ms
 * is wall - trusted before the check (signed). accept_ms < 0: a step is
 * never taken (another reference, clock_trust_adopt, is followed). One
 * caller thread only. Any other clock: AGREES, *step_ms 0.
 */
enum clock_trust clock_trust_check(struct sc_clock *c, int64_t tolerance_ms,
				   int64_t accept_ms, int64_t *step_ms);

/* Moves a trusted clock by delta_ms (to another reference's time: the
 * database server's). Thread-safe; any other clock: nothing. */
void clock_trust_adopt(struct sc_clock *c, int64_t delta_ms);

/*
 * The real time a span of c's time takes: delta / rate for a fast clock,
 * delta itself for the real, offset and virtual clocks. Every timed wait
 * computed from the clock goes through this. Thread-safe.
 */
int64_t clock_real_delta_ns(const struct sc_clock *c, int64_t delta_ns);
int64_t clock_real_delta_ms(const struct sc_clock *c, int64_t delta_ms);

/*
 * The CLOCK_MONOTONIC instant at which c will read deadline_ns (UTC ns),
 * for timed waits that a wall-clock jump must not stretch. Returns false
 * (and leaves *out alone) when the deadline has already passed.
 */
struct timespec;
bool clock_mono_deadline(const struct sc_clock *c, int64_t deadline_ns,
			 struct timespec *out);

/*
 * Sleeps until c reads deadline_ns (UTC ns), measured on the monotonic
 * clock so a wall-clock jump cannot stretch it, and resumed after a
 * signal. Returns at once for a virtual clock (it only moves when a test
 * moves it) and when the deadline has passed.
 */
void clock_sleep_until_ns(const struct sc_clock *c, int64_t deadline_ns);

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12). */
int64_t clock_days_from_civil(int64_t y, int m, int d);

/* Inverse of clock_days_from_civil. */
void clock_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* Day of week of a day number: 0 = Sunday .. 6 = Saturday. */
int clock_weekday(int64_t days);

/* Writes ms as "YYYY-MM-DDTHH:MM:SSZ" (or with ".mmm" when ms has a
 * sub-second part) into out. Returns out. */
#define CLOCK_ISO_MAX 40
const char *clock_format_utc(int64_t ms, char out[CLOCK_ISO_MAX]);

/* The instants of the years 1-9999 (UTC), in ms: 0001-01-01T00:00:00Z
 * and 9999-12-31T23:59:59.999Z. */
#define CLOCK_MIN_MS INT64_C(-62135596800000)
#define CLOCK_MAX_MS INT64_C(253402300799999)

/*
 * Parses an ISO 8601 instant with an explicit offset: "YYYY-MM-DDTHH:MM[:SS
 * [.fff]](Z|+HH:MM|-HH:MM|+HHMM)". A space may replace the 'T'. The
 * instant, after its offset, lies in CLOCK_MIN_MS..CLOCK_MAX_MS. Returns 0
 * or SC_EINVAL (with a message naming the problem).
 */
int clock_parse_iso(const char *s, int64_t *out_ms, struct sc_err *err);

/* The longest duration accepted: 10000 years of 365.2425 days, the span
 * of the instants clock_parse_iso accepts (so an age never leaves it by
 * more than that, and no sum of terms can wrap). */
#define CLOCK_DURATION_MAX_MS (INT64_C(3652425) * 86400000)

/*
 * Parses a duration: an integer followed by ms, s, m, h or d ("1500ms",
 * "90s", "30m", "2h", "1d"); several may be joined ("1h30m"), and the sum
 * is at most CLOCK_DURATION_MAX_MS. Only ASCII digits and these units: no
 * sign, no space. Returns 0 or SC_EINVAL.
 */
int clock_parse_duration(const char *s, int64_t *out_ms, struct sc_err *err);

/* How clock_parse_when reads its text. */
enum clock_when_flags {
	CLOCK_WHEN_UNIX_MS = 1 /* all digits: Unix milliseconds (the API) */
};

/*
 * The one reader of an instant a person or a request names, for every
 * command and every endpoint: an age before now_ms ("7d", "36h", as
 * clock_parse_duration), an ISO 8601 instant (clock_parse_iso) or, with
 * CLOCK_WHEN_UNIX_MS, Unix milliseconds (ASCII digits only). Whatever the
 * form, the instant lies in CLOCK_MIN_MS..CLOCK_MAX_MS (the years 1-9999,
 * UTC), so that every instant taken can be printed and read back by every
 * other command. Returns 0 or SC_EINVAL with a message naming the text
 * and the problem; *out_ms is untouched on failure.
 */
int clock_parse_when(const char *s, int64_t now_ms, unsigned flags,
		     int64_t *out_ms, struct sc_err *err);

/* Room for any duration clock_format_duration writes, with its NUL. */
#define CLOCK_DUR_MAX 32

/*
 * A duration of ms >= 0 as clock_parse_duration reads it back, each unit
 * once, largest first, zero parts left out: "1d12h", "45m", "1s500ms";
 * 0 is "0s". A negative ms (never a config's) is written "-5ms". Writes
 * at most n bytes (CLOCK_DUR_MAX is always enough) into out; returns out.
 */
const char *clock_format_duration(int64_t ms, char *out, size_t n);

#endif
