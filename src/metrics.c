/*
 * metrics.c - the in-process counters of metrics.h.
 *
 * Every series is one struct series in `ser` (creation order), found by
 * (family, label values) through `tab`, an open-addressing hash table
 * of indexes into `ser` (linear probing, a power of two at most half
 * full, 0 meaning empty, so a lookup ends within a few probes). One
 * find-or-append (series_get) serves every family; a histogram series
 * uses its buckets, a counter only n.
 *
 * Invariants: every access holds `mu`; a series, once created, is never
 * removed (counters only go up) until metrics_reset; `ser` keeps creation
 * order, so a scrape's output is stable; tab holds i + 1 for every i <
 * n_ser and nothing else. A sample that cannot get its series (out of
 * memory) is dropped, never half counted.
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

/* The families, in the order a scrape shows them. */
enum family {
	F_RUNS,       /* {schedule, outcome} */
	F_LOST,       /* {schedule} */
	F_MISSED,     /* {schedule} */
	F_DUR,        /* {schedule}, histogram */
	F_DELIVERIES, /* {target, state} */
	F_ALERTS,     /* {reason} */
};

struct series {
	enum family fam;
	char *a, *b;           /* label values; b NULL for one label */
	uint64_t n;            /* the counter, or the histogram's count */
	uint64_t bucket[N_DUR];
	double sum;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct series *ser;
static size_t n_ser, cap_ser;
static size_t *tab, cap_tab;  /* cap_tab: 0 or a power of two */
static uint64_t late_bucket[N_LATE], late_n;
static double late_sum;

/* FNV-1a over the family and both values (b NULL hashes as ""). */
static size_t hash(enum family fam, const char *a, const char *b)
{
	uint64_t h = 14695981039346656037ULL;

	h = (h ^ (unsigned)fam) * 1099511628211ULL;
	for (const char *p = a; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL; /* a's end: ("ab","c") != ("a","bc") */
	for (const char *p = b ? b : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return (size_t)h;
}

static bool same(const struct series *s, enum family fam, const char *a,
		 const char *b)
{
	return s->fam == fam && strcmp(s->a, a) == 0 &&
	       (s->b && b ? strcmp(s->b, b) == 0 : s->b == b);
}

/* Doubles the table (or makes the first) and puts every series back. */
static bool tab_grow(void)
{
	size_t nc = cap_tab ? 2 * cap_tab : 64;
	size_t *nt = calloc(nc, sizeof(*nt));

	if (!nt)
		return false;
	for (size_t i = 0; i < n_ser; i++) {
		size_t h = hash(ser[i].fam, ser[i].a, ser[i].b) & (nc - 1);
		while (nt[h])
			h = (h + 1) & (nc - 1);
		nt[h] = i + 1;
	}
	free(tab);
	tab = nt;
	cap_tab = nc;
	return true;
}

/* The series of (fam, a, b), created at zero when new; NULL when out of
 * memory. b is NULL for the families with one label. */
static struct series *series_get(enum family fam, const char *a,
				 const char *b)
{
	/* At most half full: a miss ends at an empty slot soon. */
	if (2 * (n_ser + 1) > cap_tab && !tab_grow())
		return NULL;
	size_t h = hash(fam, a, b) & (cap_tab - 1);
	for (; tab[h]; h = (h + 1) & (cap_tab - 1))
		if (same(&ser[tab[h] - 1], fam, a, b))
			return &ser[tab[h] - 1];
	if (n_ser == cap_ser) {
		size_t nc = cap_ser ? 2 * cap_ser : 16;
		struct series *v = realloc(ser, nc * sizeof(*v));
		if (!v)
			return NULL;
		ser = v;
		cap_ser = nc;
	}
	struct series *s = &ser[n_ser];
	memset(s, 0, sizeof(*s));
	s->fam = fam;
	s->a = strdup(a);
	s->b = b ? strdup(b) : NULL;
	if (!s->a || (b && !s->b)) {
		free(s->a);
		free(s->b);
		return NULL;
	}
	tab[h] = ++n_ser;
	return s;
}

static void bump(enum family fam, const char *a, const char *b, uint64_t by)
{
	pthread_mutex_lock(&mu);
	struct series *s = series_get(fam, a, b);
	if (s)
		s->n += by;
	pthread_mutex_unlock(&mu);
}

void metrics_run(const char *schedule, const char *outcome, int64_t late_us,
		 int64_t duration_ms)
{
	double late = late_us > 0 ? (double)late_us / 1e6 : 0;
	double dur = duration_ms > 0 ? (double)duration_ms / 1e3 : 0;

	pthread_mutex_lock(&mu);
	struct series *r = series_get(F_RUNS, schedule, outcome);
	if (r)
		r->n++;
	if (strcmp(outcome, "lost") == 0 &&
	    (r = series_get(F_LOST, schedule, NULL)) != NULL)
		r->n++;
	for (size_t i = 0; i < N_LATE; i++)
		late_bucket[i] += late <= late_le[i];
	late_n++;
	late_sum += late;
	struct series *d = series_get(F_DUR, schedule, NULL);
	if (d) {
		for (size_t i = 0; i < N_DUR; i++)
			d->bucket[i] += dur <= dur_le[i];
		d->n++;
		d->sum += dur;
	}
	pthread_mutex_unlock(&mu);
}

void metrics_missed(const char *schedule, uint64_t n)
{
	if (n)
		bump(F_MISSED, schedule, NULL, n);
}

void metrics_delivery(const char *target, const char *state)
{
	bump(F_DELIVERIES, target, state, 1);
}

void metrics_alert(const char *reason)
{
	bump(F_ALERTS, reason, NULL, 1);
}

void metrics_declare(const char *schedule)
{
	bump(F_LOST, schedule, NULL, 0);
	bump(F_MISSED, schedule, NULL, 0);
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

/* A counter family: its HELP and TYPE, then one line per series, the
 * label names given (lb NULL for one label). O(series). */
static void counters(struct out *o, enum family fam, const char *name,
		     const char *help, const char *la, const char *lb)
{
	char a[512], b[128];

	put(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (size_t i = 0; i < n_ser; i++) {
		const struct series *s = &ser[i];
		if (s->fam != fam)
			continue;
		metrics_escape(s->a, a, sizeof(a));
		if (lb)
			put(o, "%s{%s=\"%s\",%s=\"%s\"} %llu\n", name, la, a,
			    lb, metrics_escape(s->b, b, sizeof(b)),
			    (unsigned long long)s->n);
		else
			put(o, "%s{%s=\"%s\"} %llu\n", name, la, a,
			    (unsigned long long)s->n);
	}
}

int metrics_render(char **buf, size_t *len)
{
	struct out o = {.buf = buf, .len = len};
	char a[512];

	/* Room after *len is unknown: grow from what is used. */
	char *nb = realloc(*buf, (*buf ? *len : 0) + 4096);
	if (!nb)
		return SC_ENOMEM;
	if (!*buf)
		*len = 0;
	*buf = nb;
	o.cap = *len + 4096;
	pthread_mutex_lock(&mu);
	counters(&o, F_RUNS, "surecron_runs_total", "Attempts run by this "
		 "process, by outcome.", "schedule", "outcome");
	counters(&o, F_LOST, "surecron_slots_lost_total", "Slots this process "
		 "saw lost (no attempt left).", "schedule", NULL);
	counters(&o, F_MISSED, "surecron_slots_missed_total", "Slots this "
		 "process recorded as missed (not run after downtime).",
		 "schedule", NULL);
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
	for (size_t i = 0; i < n_ser; i++) {
		const struct series *d = &ser[i];
		if (d->fam != F_DUR)
			continue;
		metrics_escape(d->a, a, sizeof(a));
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
	counters(&o, F_DELIVERIES, "surecron_deliveries_total", "Result sends "
		 "this process made, by target and the state they ended in.",
		 "target", "state");
	counters(&o, F_ALERTS, "surecron_alerts_total", "Alert copies this "
		 "process sent, by reason.", "reason", NULL);
	pthread_mutex_unlock(&mu);
	return o.oom ? SC_ENOMEM : 0;
}

void metrics_reset(void)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_ser; i++) {
		free(ser[i].a);
		free(ser[i].b);
	}
	free(ser);
	free(tab);
	ser = NULL;
	tab = NULL;
	n_ser = cap_ser = cap_tab = 0;
	memset(late_bucket, 0, sizeof(late_bucket));
	late_n = 0;
	late_sum = 0;
	pthread_mutex_unlock(&mu);
}
