/*
 * web_metrics.c - the two answers for machines: GET /healthz (is the
 * scheduler loop running and does the store answer) and GET /metrics
 * (Prometheus text: the process, the store's job counts, each schedule's
 * last success and next slot, the nodes' clocks).
 *
 * Invariants:
 *   - /healthz reads only its own store handle (health_store, under
 *     health_lock): it never waits behind another handler (web_route.c
 *     runs it without the shared lock);
 *   - a scrape reads the process's counters, the store's job counts,
 *     each schedule's last success (one index seek per schedule) and the
 *     config: its cost follows the schedules, never the ledger's rows;
 *   - /metrics is the one text body: it is sent with web_respond_bytes,
 *     so it carries the same security headers as every JSON answer.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "config.h"
#include "failpoint.h"
#include "metrics.h"
#include "report.h"
#include "store.h"
#include "web_int.h"

/* The store's answer for /healthz, on its own handle: never behind
 * the lock of the other handlers. */
static int health_store_due(struct web *w, int64_t *due, struct sc_err *e)
{
	pthread_mutex_lock(&w->health_lock);
	int rc = store_job_next_due(w->health_store, due, e);
	pthread_mutex_unlock(&w->health_lock);
	return rc;
}

/*
 * GET /healthz: the loop ran within its interval and the store answers.
 * Test seams (test builds, SURECRON_FAILPOINTS): web.loop_stale:err
 * takes any age of the loop for stale, web.store_down:err fails the
 * store's answer, so that both 503s are seen without waiting a minute
 * or stopping a server other suites share.
 */
enum MHD_Result web_metrics_healthz(struct web_call *k, const char *rest,
				    json_t *body)
{
	struct web *w = k->w;
	struct MHD_Connection *c = k->c;
	int64_t age = clock_mono_ms() - atomic_load(w->loop_mono_ms);
	int64_t stale_ms = FAILPOINT_ERR("web.loop_stale") ? -1
							  : w->loop_stale_ms;
	if (age > stale_ms) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the scheduler loop has not run "
			 "for %lld ms", (long long)age);
		return web_respond(c, 503, json_pack("{s:s,s:s,s:I}", "status",
						 "unhealthy", "reason", msg,
						 "loop_age_ms", (json_int_t)age));
	}
	struct sc_err e = {0};
	int64_t due = 0;
	if (FAILPOINT_ERR("web.store_down")
		    ? sc_err_set(&e, SC_EIO, "injected") != 0
		    : health_store_due(w, &due, &e) != 0)
		return web_respond(c, 503, json_pack("{s:s,s:s,s:s}", "status",
						 "unhealthy", "reason",
						 "the store does not answer",
						 "code", sc_strerror(e.code)));
	return web_respond(c, 200, json_pack("{s:s,s:I,s:s}", "status", "ok",
					 "loop_age_ms", (json_int_t)age,
					 "backend",
					 store_backend_name(w->health_store)));
}

/* process_*: the resident size and CPU time from /proc/self, the start
 * time from the boot time and the process's start tick. */
static void process_series(char **buf, size_t *len, int64_t start_ms)
{
	long pages = 0, page = sysconf(_SC_PAGESIZE), tck = sysconf(_SC_CLK_TCK);
	unsigned long long ut = 0, st = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%*s %ld", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	f = fopen("/proc/self/stat", "r");
	if (f) {
		char line[1024];
		if (fgets(line, sizeof(line), f)) {
			const char *p = strrchr(line, ')');
			if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u "
					 "%*u %*u %*u %*u %llu %llu", &ut,
					 &st) != 2)
				ut = st = 0;
		}
		fclose(f);
	}
	char tmp[768];
	int k = snprintf(tmp, sizeof(tmp),
		"# HELP process_resident_memory_bytes Resident memory size.\n"
		"# TYPE process_resident_memory_bytes gauge\n"
		"process_resident_memory_bytes %lld\n"
		"# HELP process_cpu_seconds_total User and system CPU time.\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total %.2f\n"
		"# HELP process_start_time_seconds Start time, Unix seconds.\n"
		"# TYPE process_start_time_seconds gauge\n"
		"process_start_time_seconds %.3f\n",
		(long long)pages * page,
		tck > 0 ? (double)(ut + st) / (double)tck : 0.0,
		(double)start_ms / 1000.0);
	if (k <= 0 || (size_t)k >= sizeof(tmp))
		return;
	char *nb = realloc(*buf, *len + (size_t)k + 1);
	if (!nb)
		return;
	memcpy(nb + *len, tmp, (size_t)k + 1);
	*buf = nb;
	*len += (size_t)k;
}

/* Appends fmt to *buf (*len bytes used, kept NUL-terminated); false when
 * out of memory (*buf then unchanged, still the caller's). */
static bool appendf(char **buf, size_t *len, const char *fmt, ...)
	SC_PRINTF(3, 4);

static bool appendf(char **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char tmp[1024];

	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof(tmp))
		return false;
	char *nb = realloc(*buf, *len + (size_t)k + 1);
	if (!nb)
		return false;
	memcpy(nb + *len, tmp, (size_t)k + 1);
	*buf = nb;
	*len += (size_t)k;
	return true;
}

/* surecron_last_success_timestamp_seconds, from the store: one read of
 * every schedule's newest-slot success (store_last_successes: one index
 * seek per schedule, however many failures followed the success), of
 * which only the config's schedules are shown (cfg non-NULL). A schedule
 * that never succeeded, or whose success has no finish, has no series. */
static int last_success_series(struct web *w, const struct config *cfg,
			       char **buf, size_t *len, struct sc_err *err)
{
	struct store_last_ok *v = NULL;
	size_t n = 0;
	char a[512];
	bool ok = appendf(buf, len, "# HELP surecron_last_success_timestamp_"
			  "seconds When the newest slot that succeeded "
			  "finished, Unix seconds (the store's: every node "
			  "reports the same).\n# TYPE surecron_last_success_"
			  "timestamp_seconds gauge\n");
	int rc = store_last_successes(w->store, &v, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && ok; i++) {
		const struct store_last_ok *x = &v[i];
		if ((cfg && !config_schedule(cfg, x->schedule)) ||
		    x->finished_ms <= 0)
			continue;
		ok = appendf(buf, len, "surecron_last_success_timestamp_"
			     "seconds{schedule=\"%s\"} %.3f\n",
			     metrics_escape(x->schedule, a, sizeof(a)),
			     (double)x->finished_ms / 1000.0);
	}
	free(v);
	return ok ? 0 : sc_err_set(err, SC_ENOMEM, "out of memory");
}

/* surecron_nodes and surecron_config_skew (issue 43), from the store's
 * node records: the daemons seen within STORE_NODE_LIVE_MS of now, and
 * 1 when those do not all run the same config (their digests differ: a
 * rolling deploy in progress, or a node left behind). Then the clocks
 * (issue 42): surecron_node_clock_offset_seconds per live node that
 * measured one against the database server's (PostgreSQL; none on
 * SQLite) and surecron_nodes_clock_skewed, how many of them are beyond
 * tolerance_ms. O(nodes). */
static int node_series(struct web *w, int64_t tolerance_ms, char **buf,
		       size_t *len, struct sc_err *err)
{
	struct store_node *v = NULL;
	size_t n = 0, live = 0, clock_skewed = 0;
	const char *first = NULL;
	bool skew = false;
	int64_t now = sc_clock_now_ms(w->clock ? w->clock : store_clock(w->store));
	int rc = store_nodes(w->store, &v, &n, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (now - v[i].seen_ms > STORE_NODE_LIVE_MS)
			continue;
		live++;
		clock_skewed += report_node_skewed(&v[i], tolerance_ms);
		if (!first)
			first = v[i].config_digest;
		else if (strcmp(first, v[i].config_digest) != 0)
			skew = true;
	}
	bool ok = appendf(buf, len, "# HELP surecron_nodes Daemons live in "
			  "the store (seen within %lld s).\n# TYPE "
			  "surecron_nodes gauge\nsurecron_nodes %zu\n"
			  "# HELP surecron_config_skew 1 when the live "
			  "daemons do not all run the same config.\n# TYPE "
			  "surecron_config_skew gauge\nsurecron_config_skew "
			  "%d\n", (long long)(STORE_NODE_LIVE_MS / 1000),
			  live, skew ? 1 : 0);
	ok = ok && appendf(buf, len, "# HELP surecron_nodes_clock_skewed "
			   "Live daemons whose clock is off the database "
			   "server's by more than worker.clock_tolerance "
			   "(%lld ms).\n# TYPE surecron_nodes_clock_skewed "
			   "gauge\nsurecron_nodes_clock_skewed %zu\n"
			   "# HELP surecron_node_clock_offset_seconds A live "
			   "daemon's wall clock less the database server's, "
			   "as it last measured it (PostgreSQL).\n# TYPE "
			   "surecron_node_clock_offset_seconds gauge\n",
			   (long long)tolerance_ms, clock_skewed);
	for (size_t i = 0; ok && i < n; i++) {
		char a[2 * STORE_NODE_ID_MAX];
		if (now - v[i].seen_ms > STORE_NODE_LIVE_MS ||
		    !v[i].has_clock_offset)
			continue;
		ok = appendf(buf, len, "surecron_node_clock_offset_seconds"
			     "{node=\"%s\"} %.3f\n",
			     metrics_escape(v[i].id, a, sizeof(a)),
			     (double)v[i].clock_offset_ms / 1000.0);
	}
	free(v);
	return ok ? 0 : sc_err_set(err, SC_ENOMEM, "out of memory");
}

/* surecron_next_slot_timestamp_seconds from the config (the same on
 * every node that has it), and each schedule's lost and missed counters
 * made to exist at 0. O(schedules), no store read. */
static bool next_slot_series(struct web *w, const struct config *cfg,
			     char **buf, size_t *len)
{
	char a[512];
	int64_t now = sc_clock_now_ms(w->clock ? w->clock : store_clock(w->store));
	bool ok = appendf(buf, len, "# HELP surecron_next_slot_timestamp_"
			  "seconds The schedule's next slot after now, Unix "
			  "seconds (from the config).\n# TYPE surecron_next_"
			  "slot_timestamp_seconds gauge\n");

	for (size_t i = 0; cfg && i < cfg->n_schedules && ok; i++) {
		const struct schedule_spec *s = &cfg->schedules[i];
		int64_t next = 0;
		if (!s->zone ||
		    sc_cron_next(s->expr, s->zone, now, &next, NULL) != 0)
			continue; /* never fires again: no next slot */
		ok = appendf(buf, len, "surecron_next_slot_timestamp_seconds"
			     "{schedule=\"%s\"} %.3f\n",
			     metrics_escape(s->name, a, sizeof(a)),
			     (double)next / 1000.0);
	}
	return ok;
}

/* GET /metrics: the process's counters (metrics.c), then the store's
 * gauges (job counts and one last success per schedule: no ledger
 * scan), the config's next slots, build and process series. */
enum MHD_Result web_metrics_page(struct web_call *call, const char *rest,
				 json_t *body)
{
	struct web *w = call->w;
	struct MHD_Connection *c = call->c;
	const struct config *cfg = call->cfg; /* may be NULL */
	char *buf = NULL;
	size_t len = 0;
	struct store_counts k = {0};
	struct sc_err e = {0};

	if (store_job_counts(w->store, NULL, &k, &e) != 0)
		return web_respond_error(c, 503, "the store does not answer");
	for (size_t i = 0; cfg && i < cfg->n_schedules; i++)
		metrics_declare(cfg->schedules[i].name);
	if (metrics_render(&buf, &len) != 0 ||
	    !next_slot_series(w, cfg, &buf, &len)) {
		free(buf);
		return web_respond_error(c, 500, "out of memory");
	}
	int rc = last_success_series(w, cfg, &buf, &len, &e);
	int64_t tolerance_ms = report_clock_tolerance_ms(cfg);
	if (!rc)
		rc = node_series(w, tolerance_ms, &buf, &len, &e);
	if (rc) {
		free(buf);
		return rc == SC_ENOMEM
			? web_respond_error(c, 500, "out of memory")
			: web_respond_error(c, 503, "the store does not "
					    "answer");
	}
	if (!appendf(&buf, &len,
		"# HELP surecron_jobs Jobs in the store by state (every node "
		"reports the same).\n# TYPE surecron_jobs gauge\n"
		"surecron_jobs{state=\"ready\"} %lld\n"
		"surecron_jobs{state=\"delayed\"} %lld\n"
		"surecron_jobs{state=\"active\"} %lld\n"
		"surecron_jobs{state=\"done\"} %lld\n"
		"surecron_jobs{state=\"dead\"} %lld\n"
		"# HELP surecron_build_info The running version.\n"
		"# TYPE surecron_build_info gauge\n"
		"surecron_build_info{version=\"%s\"} 1\n",
		(long long)k.ready_due, (long long)k.delayed,
		(long long)k.active, (long long)k.done, (long long)k.dead,
		SC_VERSION)) {
		free(buf);
		return web_respond_error(c, 500, "out of memory");
	}
	process_series(&buf, &len, w->start_ms);
	return web_respond_bytes(c, 200, buf, len,
			     "text/plain; version=0.0.4; charset=utf-8");
}
