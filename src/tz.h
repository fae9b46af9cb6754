/*
 * tz.h - the TZif reader's internals (public part in surecron.h).
 *
 * A zone is an immutable list of transitions (UTC instants where the
 * offset changes) plus, for instants after the last one, the POSIX-TZ rule
 * of the file's footer. Lookups are pure reads: any number of threads may
 * use one zone at once.
 */
#ifndef SURECRON_TZ_H
#define SURECRON_TZ_H

#include <stdint.h>

#include "surecron.h"

/* Longest zone name accepted, in bytes. */
#define TZ_NAME_MAX 255

/*
 * The stretch of time around an instant during which the zone's offset is
 * constant: [start_s, end_s) in UTC seconds. start_s is INT64_MIN and
 * end_s INT64_MAX when the stretch has no end on that side; prev_off_s and
 * next_off_s are the offsets on either side (equal to off_s when none).
 */
struct tz_span {
	int64_t start_s;
	int64_t end_s;
	int32_t off_s;
	int32_t prev_off_s;
	int32_t next_off_s;
	bool is_dst;
	const char *abbr; /* "EST"; static for the zone's lifetime */
};

/* The span that holds instant t_s (UTC seconds). Never fails. */
void tz_span_at(const struct sc_zone *z, int64_t t_s, struct tz_span *out);

/*
 * Local wall time (seconds, as if the zone were UTC) -> UTC instants.
 * Returns how many instants show that wall time: 0 in a gap (spring
 * forward), 1 normally, 2 in an overlap (fall back; out[0] < out[1]).
 */
int tz_local_to_utc(const struct sc_zone *z, int64_t local_s,
		    int64_t out[2]);

/* Loads a zone from a file path (no name checks; for /etc/localtime and
 * tests). The zone is cached under `name`. Returns 0, SC_EZONE, SC_ENOMEM. */
int tz_load_path(const char *path, const char *name,
		 const struct sc_zone **out, struct sc_err *err);

/* Builds a zone from a POSIX TZ rule alone ("CET-1CEST,M3.5.0,M10.5.0/3").
 * Returns 0, SC_EZONE or SC_ENOMEM. */
int tz_load_rule(const char *rule, const struct sc_zone **out,
		 struct sc_err *err);

#endif
