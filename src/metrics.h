/*
 * metrics.h - the process's own counters for /metrics (issue 16):
 *   surecron_runs_total{schedule,outcome}      attempts, by outcome
 *   surecron_slots_lost_total{schedule}        runs that ended "lost"
 *   surecron_slots_missed_total{schedule}      slots recorded as missed
 *   surecron_start_lateness_seconds            histogram, every attempt
 *   surecron_run_duration_seconds{schedule}    histogram
 *   surecron_deliveries_total{target,state}    result sends by final state
 *                                              (sent, failed, unknown)
 *   surecron_alerts_total{reason}              alert copies sent
 * They are per node: each process counts what it did, from zero at its
 * start, as Prometheus expects of counters (sum them over nodes). The
 * store-wide gauges (jobs by state, last success, next slot) are read at
 * scrape time by web.c, not kept here.
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

/* n slots of schedule were recorded as missed by this process (0: no-op). */
void metrics_missed(const char *schedule, uint64_t n);

/* A result send to target ended in state ("sent", "failed", "unknown"). */
void metrics_delivery(const char *target, const char *state);

/* An alert copy of reason ("lost", "missed", "recovered", "late",
 * "overrun", "stale") was sent to one target. */
void metrics_alert(const char *reason);

/* Makes schedule's lost and missed counters exist (at 0 when new), so
 * that its first lost slot is an increase Prometheus can see. */
void metrics_declare(const char *schedule);

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
