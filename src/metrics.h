/*
 * metrics.h - the process's own counters for /metrics (issue 16): runs by
 * schedule and outcome, lost slots, start lateness and run durations.
 * They start at zero with the process, as Prometheus expects of
 * counters; the gauges (jobs by state, ...) come from the store at scrape
 * time (web.c), not from here.
 *
 * Thread-safety: every function may be called from any thread (one mutex).
 * One registry per process.
 */
#ifndef SURECRON_METRICS_H
#define SURECRON_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* A run ended: outcome is the word of daemon.c's `event=finish` line
 * ("success", "failed", "lost", ...); late_us how late it started,
 * duration_ms how long it took. Out of memory drops the sample. */
void metrics_run(const char *schedule, const char *outcome, int64_t late_us,
		 int64_t duration_ms);

/*
 * Appends the registry in Prometheus text format 0.0.4 (HELP, TYPE, one
 * line per series, label values escaped) to *buf: NULL (*len is then
 * set to 0) or malloc'ed with *len bytes used; it is reallocated as
 * needed and stays NUL-terminated; the caller frees. Returns 0 or
 * SC_ENOMEM (*buf still the caller's to free).
 */
int metrics_render(char **buf, size_t *len);

/* Writes value escaped as a Prometheus label value (\\, \", \n) into out
 * (n bytes, NUL-terminated, cut short when too small); returns out. */
char *metrics_escape(const char *value, char *out, size_t n);

/* Forgets every sample (tests). */
void metrics_reset(void);

#endif
