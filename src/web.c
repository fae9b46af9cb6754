/*
 * web.c - the daemon's web surface (web.h): libmicrohttpd with a thread
 * per connection, a bounded number of connections (and, off loopback, of
 * connections per address), an idle timeout and a deadline for a
 * request's headers.
 *
 * Invariants:
 *   - every response this file builds carries the security headers
 *     (web_respond(), and metrics_page for the one text body) and, but for
 *     /metrics, a JSON body made by jansson;
 *   - a scrape reads the process's counters, the store's job counts,
 *     each schedule's last success (one index seek per schedule) and the
 *     config: its cost follows the schedules, never the ledger's rows;
 *   - the store handle is used under w->lock only, /healthz's own under
 *     w->health_lock only: /healthz never waits for another handler;
 *   - no response carries the token or any other secret: the bodies say
 *     what went wrong in words of this file, never a value they were
 *     given; nor does the log line of a failed authentication;
 *   - the checks run in this order, before any handler: Host on loopback
 *     (421), Origin (403), query size (414), token (401), body size (413);
 *   - a connection whose request headers are not all in by
 *     header_deadline_ms after it started (or after its previous request
 *     ended) is shut down by the reaper thread; the reaper touches a
 *     socket only while its connection is linked in w->conns, and
 *     libmicrohttpd unlinks it (notify_conn) before it closes the socket.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "metrics.h"
#include "report.h"
#include "store.h"
#include "thread.h"
#include "web.h"
#include "web_int.h"

bool web_token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);

	/* Every byte of a is read whatever b holds: the loop's length is
	 * a's, and b is read cyclically (never past its end). */
	for (size_t i = 0; i < la; i++)
		diff |= (unsigned char)a[i] ^
			(unsigned char)(lb ? b[i % lb] : 0);
	return diff == 0 && la == lb;
}

bool web_token_weak(const char *token)
{
	size_t n = strlen(token);

	if (n < WEB_TOKEN_MIN)
		return true;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)token[i] < 0x21 ||
		    (unsigned char)token[i] > 0x7e)
			return true;
	return false;
}

enum MHD_Result web_respond_bytes(struct MHD_Connection *c, unsigned status,
				  char *body, size_t len, const char *ctype)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

enum MHD_Result web_respond(struct MHD_Connection *c, unsigned status,
			    json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		text = strdup("{\"error\":\"out of memory\"}");
	if (!text)
		return MHD_NO;
	return web_respond_bytes(c, status, text, strlen(text),
			     "application/json; charset=utf-8");
}

enum MHD_Result web_respond_error(struct MHD_Connection *c, unsigned status,
				  const char *msg)
{
	return web_respond(c, status, json_pack("{s:s}", "error", msg));
}

/* Sums the sizes of the query string's arguments. */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
			       const char *key, const char *value)
{
	size_t *n = cls;

	*n += strlen(key) + (value ? strlen(value) + 1 : 0) + 1;
	return MHD_YES;
}

/* An Origin, when sent, must be this server's own: http://HOST where HOST
 * is the request's Host header. A page of another site that makes the
 * browser call here sends its own origin. */
static bool origin_ok(struct MHD_Connection *c)
{
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							 "Origin");
	if (!origin)
		return true;
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "Host");
	if (!host || strncmp(origin, "http://", 7) != 0)
		return false;
	return strcmp(origin + 7, host) == 0;
}

/* Does name (len bytes, without its port) name this listener? On
 * loopback: 127.0.0.1, [::1], localhost, or http.listen's own host.
 * Case-insensitive, as host names are; a trailing dot is the same name. */
static bool own_name(const struct web *w, const char *name, size_t len)
{
	static const char *const names[] = {"127.0.0.1", "[::1]",
					    "localhost"};

	if (len > 1 && name[len - 1] == '.')
		len--;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len &&
		    strncasecmp(name, names[i], len) == 0)
			return true;
	return w->bind_host[0] && strlen(w->bind_host) == len &&
	       strncasecmp(name, w->bind_host, len) == 0;
}

/*
 * On a loopback listener, the Host must be one of its own names, with
 * any port or none (DNS rebinding, issue 44): a page of another site
 * whose name was rebound to 127.0.0.1 is same-origin to the browser, so
 * Origin says nothing, but its Host is still that site's name. Any port,
 * because an SSH tunnel (ssh -L 9000:127.0.0.1:8080) brings the browser's
 * "localhost:9000". No Host at all (an HTTP/1.0 probe) is no browser's
 * request, and is let through. Off loopback the token guards every
 * request, and a listener's names are not known (a proxy's, a balancer's).
 */
static bool host_ok(const struct web *w, struct MHD_Connection *c)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "Host");
	size_t len;

	if (!w->loopback || !host)
		return true;
	if (host[0] == '[') {
		const char *end = strchr(host, ']');
		if (!end)
			return false;
		len = (size_t)(end - host) + 1;
	} else {
		len = strcspn(host, ":");
	}
	const char *port = host + len;
	if (*port == ':') {
		port++;
		if (!*port || strspn(port, "0123456789") != strlen(port) ||
		    strlen(port) > 5)
			return false;
	} else if (*port) {
		return false;
	}
	return own_name(w, host, len);
}

/*
 * A failed authentication: counted, logged at most once per
 * WEB_AUTH_LOG_EVERY_MS (a flood of guesses is one line per period, with
 * how many there were), and slowed by WEB_AUTH_DELAY_MS on the
 * connection's own thread: a guesser waits, no other client does. The
 * line names the address and the path, never the header's value.
 */
static void auth_failed(struct web *w, struct MHD_Connection *c,
			const char *url)
{
	char ip[INET6_ADDRSTRLEN] = "?", q[256];
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	int64_t now = clock_mono_ms(), last = atomic_load(&w->auth_logged_ms);

	atomic_fetch_add(&w->auth_failed_n, 1);

	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;
		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)
					     (const void *)sa)->sin_addr, ip,
				  sizeof(ip));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)
					      (const void *)sa)->sin6_addr, ip,
				  sizeof(ip));
	}
	if ((last == 0 || now - last >= WEB_AUTH_LOG_EVERY_MS) &&
	    atomic_compare_exchange_strong(&w->auth_logged_ms, &last, now)) {
		int64_t n = atomic_exchange(&w->auth_failed_n, 0);
		LOG(SC_LOG_WARN, "web", "event=auth_failed ip=%s path=%s "
		    "failures=%lld", ip, log_quote(q, sizeof(q), url),
		    (long long)n);
	}
	/* Test seam (test builds): web.auth_nodelay:err answers at once,
	 * for the fuzz target, which would otherwise sleep more than it
	 * runs. */
	if (FAILPOINT_ERR("web.auth_nodelay"))
		return;
	struct timespec d = {.tv_sec = WEB_AUTH_DELAY_MS / 1000,
			     .tv_nsec = (WEB_AUTH_DELAY_MS % 1000) * 1000000L};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

static bool token_ok(const struct web *w, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Authorization");
	if (!w->token || !h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	return web_token_equal(h + 7, w->token);
}

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
static enum MHD_Result healthz(struct web *w, struct MHD_Connection *c)
{
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
	int64_t now = sc_clock_now_ms(w->clock ? w->clock : sc_clock_real());
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
	int64_t now = sc_clock_now_ms(w->clock ? w->clock : sc_clock_real());
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
static enum MHD_Result metrics_page(struct web *w, struct MHD_Connection *c)
{
	char *buf = NULL;
	size_t len = 0;
	struct store_counts k = {0};
	struct sc_err e = {0};
	void *ref = NULL;

	if (store_job_counts(w->store, NULL, &k, &e) != 0)
		return web_respond_error(c, 503, "the store does not answer");
	const struct config *cfg = web_cfg_hold(w, &ref);
	for (size_t i = 0; cfg && i < cfg->n_schedules; i++)
		metrics_declare(cfg->schedules[i].name);
	if (metrics_render(&buf, &len) != 0 ||
	    !next_slot_series(w, cfg, &buf, &len)) {
		web_cfg_release(w, ref);
		free(buf);
		return web_respond_error(c, 500, "out of memory");
	}
	int rc = last_success_series(w, cfg, &buf, &len, &e);
	int64_t tolerance_ms = report_clock_tolerance_ms(cfg);
	web_cfg_release(w, ref);
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

/* The connection's entry of the headers' deadline (NULL: none, when
 * its start could not be tracked). */
static struct web_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* The request's headers are in (in) or its answer is sent (!in: the
 * next request's headers are timed from now). */
static void conn_mark(struct web *w, struct MHD_Connection *c, bool in)
{
	struct web_conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&w->conn_lock);
	k->in_request = in;
	k->since_ms = clock_mono_ms();
	pthread_mutex_unlock(&w->conn_lock);
}

/* The handlers past the checks: /healthz on its own, the rest under the
 * lock of the shared store handle. */
static enum MHD_Result dispatch(struct web *w, struct MHD_Connection *c,
				const char *url, const char *method,
				const struct req *q)
{
	bool is_post = strcmp(method, "POST") == 0;
	enum MHD_Result rc;

	if (!is_post && strcmp(url, "/healthz") == 0)
		return healthz(w, c);
	bool is_api = strncmp(url, "/api/", 5) == 0;
	if (is_api || (!is_post && strcmp(url, "/metrics") == 0)) {
		pthread_mutex_lock(&w->lock);
		rc = is_api ? web_api_handle(w, c, url, method,
					     q->body ? q->body : "",
					     q->body_len)
			    : metrics_page(w, c);
		pthread_mutex_unlock(&w->lock);
		return rc;
	}
	if (!is_post) {
		bool handled = false;
		rc = web_page_handle(w, c, url, &handled);
		if (handled)
			return rc;
	}
	return web_respond_error(c, 404, "no such path");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct web *w = cls;
	struct req *q = *con_cls;

	if (!q) {
		/* The headers are in: the deadline is met. */
		conn_mark(w, c, true);
		if (!(q = calloc(1, sizeof(*q))))
			return MHD_NO;
		*con_cls = q;
		return MHD_YES;
	}
	if (*upload_size) {
		/* Kept up to the limit; past it only counted, and the
		 * request is refused once it is all in. */
		if (!q->too_big && q->body_len + *upload_size <= WEB_BODY_MAX) {
			char *nb = realloc(q->body, q->body_len +
					   *upload_size + 1);
			if (!nb)
				return MHD_NO;
			memcpy(nb + q->body_len, upload, *upload_size);
			q->body = nb;
			q->body_len += *upload_size;
			q->body[q->body_len] = '\0';
		} else {
			q->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (!host_ok(w, c))
		return web_respond_error(c, 421, "the Host is not a name of "
					 "this server");
	if (!origin_ok(c))
		return web_respond_error(c, 403, "cross-origin request refused");
	size_t qlen = 0;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &qlen);
	if (qlen > WEB_QUERY_MAX)
		return web_respond_error(c, 414, "query string too long");
	bool is_post = strcmp(method, "POST") == 0;
	if ((is_post || !w->loopback) && !token_ok(w, c)) {
		auth_failed(w, c, url);
		return web_respond_error(c, 401, "a bearer token is needed");
	}
	if (q->too_big)
		return web_respond_error(c, 413, "request body too large");
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
	    !is_post)
		return web_respond_error(c, 405, "method not allowed");
	return dispatch(w, c, url, method, q);
}

static void request_done(void *cls, struct MHD_Connection *c,
			 void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct req *q = *con_cls;

	if (q)
		free(q->body);
	free(q);
	*con_cls = NULL;
	conn_mark(cls, c, false);
}

/* A connection starts (linked for the deadline) or closes (unlinked,
 * before libmicrohttpd closes its socket). */
static void notify_conn(void *cls, struct MHD_Connection *c,
			void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct web *w = cls;
	struct web_conn *k = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
			c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci || !(k = calloc(1, sizeof(*k))))
			return; /* untracked: the idle timeout still holds */
		k->fd = ci->connect_fd;
		k->since_ms = clock_mono_ms();
		pthread_mutex_lock(&w->conn_lock);
		k->next = w->conns;
		if (w->conns)
			w->conns->prev = k;
		w->conns = k;
		pthread_mutex_unlock(&w->conn_lock);
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&w->conn_lock);
	if (k->prev)
		k->prev->next = k->next;
	else
		w->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	pthread_mutex_unlock(&w->conn_lock);
	free(k);
	*socket_context = NULL;
}

/*
 * The reaper: every quarter of the deadline, shuts down the connections
 * whose request headers are late. shutdown(), not close(): the socket
 * stays libmicrohttpd's, whose thread sees the end of the stream and
 * closes the connection as its own; the socket cannot be another's
 * meanwhile, since it is closed only after notify_conn unlinked it.
 */
static void *reaper_main(void *arg)
{
	struct web *w = arg;
	int64_t tick = w->header_deadline_ms / 4;

	pthread_mutex_lock(&w->conn_lock);
	while (!w->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += tick / 1000;
		until.tv_nsec += (tick % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->conn_cv, &w->conn_lock, &until);
		int64_t now = clock_mono_ms();
		int n = 0;
		for (struct web_conn *k = w->conns; k && !w->stopping;
		     k = k->next) {
			if (k->in_request || k->cut ||
			    now - k->since_ms < w->header_deadline_ms)
				continue;
			shutdown(k->fd, SHUT_RDWR);
			k->cut = true;
			n++;
		}
		if (n)
			LOG(SC_LOG_DEBUG, "web", "event=headers_late "
			    "connections=%d deadline_ms=%lld", n,
			    (long long)w->header_deadline_ms);
	}
	pthread_mutex_unlock(&w->conn_lock);
	return NULL;
}

/* Frees what web_start made (the server stopped, the reaper joined). */
static void forget(struct web *w)
{
	if (w->token) {
		explicit_bzero(w->token, strlen(w->token));
		free(w->token);
	}
	store_close(w->store);
	store_close(w->health_store);
	pthread_cond_destroy(&w->conn_cv);
	pthread_mutex_destroy(&w->conn_lock);
	pthread_mutex_destroy(&w->health_lock);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* The host of http.listen ("[::1]:8080" -> "[::1]"), for own_name. */
static void bind_host_of(const char *listen, char out[64])
{
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : strlen(listen);

	out[0] = '\0';
	if (n < 64) {
		memcpy(out, listen, n);
		out[n] = '\0';
	}
}

/* The token of o->token_env into w->token: set, non-empty and, off
 * loopback, not weak (web_token_weak). */
static int read_token(struct web *w, const struct web_opts *o,
		      struct sc_err *err)
{
	const char *v = getenv(o->token_env);

	if (!v || !*v)
		return sc_err_set(err, SC_ECONFIG, "http.token_env: environment "
				  "variable %s is %s", o->token_env,
				  v ? "empty" : "not set");
	if (!w->loopback && web_token_weak(v))
		return sc_err_set(err, SC_ECONFIG, "http.token_env: the token "
				  "in %s is too weak for a listener off "
				  "loopback: it needs at least %d visible "
				  "ASCII characters (no space)", o->token_env,
				  WEB_TOKEN_MIN);
	if (!(w->token = strdup(v)))
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	return 0;
}

/* The locks and the reaper's condition (on the monotonic clock). */
static int init_locks(struct web *w)
{
	pthread_condattr_t ca;

	if (pthread_condattr_init(&ca) != 0)
		return SC_ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int rc = pthread_cond_init(&w->conn_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0)
		return SC_ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->health_lock, NULL);
	pthread_mutex_init(&w->conn_lock, NULL);
	return 0;
}

/* Stops the reaper, when it runs. */
static void reaper_stop(struct web *w)
{
	if (!w->reaper_on)
		return;
	pthread_mutex_lock(&w->conn_lock);
	w->stopping = true;
	pthread_cond_signal(&w->conn_cv);
	pthread_mutex_unlock(&w->conn_lock);
	pthread_join(w->reaper, NULL);
	w->reaper_on = false;
}

int web_start(const struct web_opts *o, struct web **out,
	      struct sc_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback = true;

	if (config_http_addr(o->listen, &ss, &len, &loopback) != 0)
		return sc_err_set(err, SC_ECONFIG, "http.listen: \"%s\" is "
				  "not host:port", o->listen);
	if (!o->token_env && !loopback)
		return sc_err_set(err, SC_ECONFIG, "http.listen: \"%s\" is not "
				  "a loopback address: it needs "
				  "http.token_env", o->listen);
	struct web *w = calloc(1, sizeof(*w));
	if (!w)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	if (init_locks(w) != 0) {
		free(w);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	w->loopback = loopback;
	bind_host_of(o->listen, w->bind_host);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	w->start_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	w->loop_mono_ms = o->loop_mono_ms;
	w->clock = o->clock;
	w->cfg_hold = o->cfg_hold;
	w->cfg_release = o->cfg_release;
	w->cfg_ctx = o->cfg_ctx;
	w->loop_stale_ms = o->loop_stale_ms;
	/* Test seam (test builds): web.short_deadline:err makes the
	 * headers' deadline 1 s, so a test sees a dripping client cut off
	 * without waiting WEB_HEADER_DEADLINE_S. */
	w->header_deadline_ms = FAILPOINT_ERR("web.short_deadline")
		? 1000 : (int64_t)WEB_HEADER_DEADLINE_S * 1000;
	int rc = o->token_env ? read_token(w, o, err) : 0;
	/* The server's library is loaded here, not at the process start:
	 * only a daemon with `http:` maps it (lazylib_mhd.h). */
	if (!rc)
		rc = dl_mhd_load(err);
	if (!rc)
		rc = store_open(o->store_url, o->clock, &w->store, err);
	if (!rc)
		rc = store_open(o->store_url, o->clock, &w->health_store, err);
	if (!rc && thread_start(&w->reaper, reaper_main, w) != 0)
		rc = sc_err_set(err, SC_ENOMEM, "cannot start a thread");
	w->reaper_on = rc == 0;
	if (rc) {
		forget(w);
		return rc;
	}
	/* A thread per connection, polled with poll() (a daemon may hold
	 * more descriptors than select() takes). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	int port = ss.ss_family == AF_INET6
		? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		: ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* Off loopback, one address holds at most WEB_CONN_PER_IP
	 * connections; on loopback every client is 127.0.0.1, and the cap
	 * would be the whole limit's. */
	/* Its polling thread inherits this mask: signals are the daemon's
	 * sigwait thread's alone (thread.h). */
	sigset_t old;
	thread_signals_block(&old);
	w->mhd = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, handle, w,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_CONN_MAX,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)(loopback ? 0 : WEB_CONN_PER_IP),
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_CONN_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
		MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1024 * 1024),
		MHD_OPTION_NOTIFY_COMPLETED, request_done, w,
		MHD_OPTION_NOTIFY_CONNECTION, notify_conn, w,
		MHD_OPTION_END);
	thread_signals_restore(&old);
	if (!w->mhd) {
		reaper_stop(w);
		forget(w);
		return sc_err_set(err, SC_EIO, "http.listen: cannot listen on "
				  "%s", o->listen);
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);
	w->port = di ? di->port : port;
	*out = w;
	return 0;
}

const struct config *web_cfg_hold(struct web *w, void **ref)
{
	*ref = NULL;
	return w->cfg_hold ? w->cfg_hold(w->cfg_ctx, ref) : NULL;
}

void web_cfg_release(struct web *w, void *ref)
{
	if (w->cfg_release && ref)
		w->cfg_release(w->cfg_ctx, ref);
}

int web_port(const struct web *w)
{
	return w->port;
}

void web_stop(struct web *w)
{
	if (!w)
		return;
	MHD_stop_daemon(w->mhd);
	reaper_stop(w);
	forget(w);
}
