/*
 * metrics.c - the in-process counters of metrics.h.
 *
 * Invariants: every access holds `mu`; a series, once created, is never
 * removed (counters only go up) until metrics_reset; series are kept in
 * creation order, so a scrape's output is stable. The per-schedule series
 * are a list searched linearly: fine for the schedules that run in one
 * process's life, a hash is the next step for 100,000 busy ones.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "surecron.h"

/* Histogram buckets, seconds. */
static const double late_le[] = {0.001, 0.01, 0.1, 0.5, 1, 5, 30, 60};
static const double dur_le[] = {0.1, 1, 10, 60, 300, 1800, 3600, 21600};
#define N_LATE (sizeof(late_le) / sizeof(late_le[0]))
#define N_DUR (sizeof(dur_le) / sizeof(dur_le[0]))

struct run_series {
	char *schedule, *outcome;
	uint64_t n;
};

struct dur_series {
	char *schedule;
	uint64_t bucket[N_DUR], n;
	double sum;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct run_series *runs;
static size_t n_runs, cap_runs;
static struct dur_series *durs;
static size_t n_durs, cap_durs;
static uint64_t late_bucket[N_LATE], late_n;
static double late_sum;

static struct run_series *run_get(const char *schedule, const char *outcome)
{
	for (size_t i = 0; i < n_runs; i++)
		if (strcmp(runs[i].schedule, schedule) == 0 &&
		    strcmp(runs[i].outcome, outcome) == 0)
			return &runs[i];
	if (n_runs == cap_runs) {
		size_t nc = cap_runs ? 2 * cap_runs : 16;
		struct run_series *v = realloc(runs, nc * sizeof(*v));
		if (!v)
			return NULL;
		runs = v;
		cap_runs = nc;
	}
	struct run_series *r = &runs[n_runs];
	r->schedule = strdup(schedule);
	r->outcome = strdup(outcome);
	r->n = 0;
	if (!r->schedule || !r->outcome) {
		free(r->schedule);
		free(r->outcome);
		return NULL;
	}
	n_runs++;
	return r;
}

static struct dur_series *dur_get(const char *schedule)
{
	for (size_t i = 0; i < n_durs; i++)
		if (strcmp(durs[i].schedule, schedule) == 0)
			return &durs[i];
	if (n_durs == cap_durs) {
		size_t nc = cap_durs ? 2 * cap_durs : 16;
		struct dur_series *v = realloc(durs, nc * sizeof(*v));
		if (!v)
			return NULL;
		durs = v;
		cap_durs = nc;
	}
	struct dur_series *d = &durs[n_durs];
	memset(d, 0, sizeof(*d));
	if (!(d->schedule = strdup(schedule)))
		return NULL;
	n_durs++;
	return d;
}

void metrics_run(const char *schedule, const char *outcome, int64_t late_us,
		 int64_t duration_ms)
{
	double late = late_us > 0 ? (double)late_us / 1e6 : 0;
	double dur = duration_ms > 0 ? (double)duration_ms / 1e3 : 0;

	pthread_mutex_lock(&mu);
	struct run_series *r = run_get(schedule, outcome);
	if (r)
		r->n++;
	for (size_t i = 0; i < N_LATE; i++)
		late_bucket[i] += late <= late_le[i];
	late_n++;
	late_sum += late;
	struct dur_series *d = dur_get(schedule);
	if (d) {
		for (size_t i = 0; i < N_DUR; i++)
			d->bucket[i] += dur <= dur_le[i];
		d->n++;
		d->sum += dur;
	}
	pthread_mutex_unlock(&mu);
}

char *metrics_escape(const char *value, char *out, size_t n)
{
	size_t o = 0;

	for (const char *p = value; *p && o + 3 < n; p++) {
		if (*p == '\\' || *p == '"') {
			out[o++] = '\\';
			out[o++] = *p;
		} else if (*p == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *p;
		}
	}
	if (n)
		out[o < n ? o : n - 1] = '\0';
	return out;
}

struct out {
	char **buf;
	size_t *len, cap;
	bool oom;
};

static void put(struct out *o, const char *fmt, ...) SC_PRINTF(2, 3);

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->oom)
		return;
	for (;;) {
		size_t room = o->cap - *o->len;
		va_start(ap, fmt);
		int k = vsnprintf(*o->buf + *o->len, room, fmt, ap);
		va_end(ap);
		if (k < 0) {
			o->oom = true;
			return;
		}
		if ((size_t)k < room) {
			*o->len += (size_t)k;
			return;
		}
		size_t nc = 2 * o->cap + (size_t)k;
		char *nb = realloc(*o->buf, nc);
		if (!nb) {
			o->oom = true;
			return;
		}
		*o->buf = nb;
		o->cap = nc;
	}
}

int metrics_render(char **buf, size_t *len)
{
	struct out o = {.buf = buf, .len = len};
	char a[512], b[64];

	/* Room after *len is unknown: grow from what is used. */
	char *nb = realloc(*buf, (*buf ? *len : 0) + 4096);
	if (!nb)
		return SC_ENOMEM;
	if (!*buf)
		*len = 0;
	*buf = nb;
	o.cap = *len + 4096;
	pthread_mutex_lock(&mu);
	put(&o, "# HELP surecron_runs_total Attempts run by this process, by "
	    "outcome.\n# TYPE surecron_runs_total counter\n");
	for (size_t i = 0; i < n_runs; i++) {
		metrics_escape(runs[i].schedule, a, sizeof(a));
		metrics_escape(runs[i].outcome, b, sizeof(b));
		put(&o, "surecron_runs_total{schedule=\"%s\",outcome=\"%s\"} "
		    "%llu\n", a, b, (unsigned long long)runs[i].n);
	}
	put(&o, "# HELP surecron_slots_lost_total Slots this process saw "
	    "lost (no attempt left).\n# TYPE surecron_slots_lost_total "
	    "counter\n");
	for (size_t i = 0; i < n_runs; i++)
		if (strcmp(runs[i].outcome, "lost") == 0)
			put(&o, "surecron_slots_lost_total{schedule=\"%s\"} "
			    "%llu\n", metrics_escape(runs[i].schedule, a,
						     sizeof(a)),
			    (unsigned long long)runs[i].n);
	put(&o, "# HELP surecron_start_lateness_seconds How late attempts "
	    "started after their due instant.\n# TYPE "
	    "surecron_start_lateness_seconds histogram\n");
	for (size_t i = 0; i < N_LATE; i++)
		put(&o, "surecron_start_lateness_seconds_bucket{le=\"%g\"} "
		    "%llu\n", late_le[i], (unsigned long long)late_bucket[i]);
	put(&o, "surecron_start_lateness_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "surecron_start_lateness_seconds_sum %.6f\n"
	    "surecron_start_lateness_seconds_count %llu\n",
	    (unsigned long long)late_n, late_sum, (unsigned long long)late_n);
	put(&o, "# HELP surecron_run_duration_seconds How long attempts "
	    "ran.\n# TYPE surecron_run_duration_seconds histogram\n");
	for (size_t i = 0; i < n_durs; i++) {
		const struct dur_series *d = &durs[i];
		metrics_escape(d->schedule, a, sizeof(a));
		for (size_t j = 0; j < N_DUR; j++)
			put(&o, "surecron_run_duration_seconds_bucket{schedule="
			    "\"%s\",le=\"%g\"} %llu\n", a, dur_le[j],
			    (unsigned long long)d->bucket[j]);
		put(&o, "surecron_run_duration_seconds_bucket{schedule=\"%s\","
		    "le=\"+Inf\"} %llu\n"
		    "surecron_run_duration_seconds_sum{schedule=\"%s\"} %.6f\n"
		    "surecron_run_duration_seconds_count{schedule=\"%s\"} "
		    "%llu\n", a, (unsigned long long)d->n, a, d->sum, a,
		    (unsigned long long)d->n);
	}
	pthread_mutex_unlock(&mu);
	return o.oom ? SC_ENOMEM : 0;
}

void metrics_reset(void)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_runs; i++) {
		free(runs[i].schedule);
		free(runs[i].outcome);
	}
	for (size_t i = 0; i < n_durs; i++)
		free(durs[i].schedule);
	free(runs);
	free(durs);
	runs = NULL;
	durs = NULL;
	n_runs = cap_runs = n_durs = cap_durs = 0;
	memset(late_bucket, 0, sizeof(late_bucket));
	late_n = 0;
	late_sum = 0;
	pthread_mutex_unlock(&mu);
}
