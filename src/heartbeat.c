/*
 * heartbeat.c - the pinger: a bounded queue of pings and the one thread
 * that sends them (Healthchecks.io's ping API shape; heartbeat.h).
 *
 *   worker: heartbeat_slot ---> queue (ring, HEARTBEAT_QUEUE_MAX) ---+
 *   scheduler: heartbeat_alive --> last_alive_ms ---+                 |
 *                                                   v                 v
 *                                       pinger thread: queued pings first,
 *                                       then the daemon's ping when due
 *                                       (http_do, HEARTBEAT_TRIES tries)
 *
 * Invariants:
 *   - no caller waits on the network: heartbeat_slot and heartbeat_alive
 *     take the mutex for a few stores; only the pinger thread sends;
 *   - pings go out in the order they were queued, by one thread, each
 *     one's tries before the next: a slot's start is sent before its
 *     success or fail;
 *   - a full queue drops its OLDEST ping (the newest says most about
 *     now), counted in dropped, logged at most once per DROP_LOG_EVERY_MS;
 *   - the daemon's ping goes out when `every` has passed since the last
 *     one AND heartbeat_alive was called within the last `every`: a stuck
 *     scheduler loop or a store that does not answer (the daemon does not
 *     call heartbeat_alive then) stops it, so the monitor alerts;
 *   - a URL never reaches a log line or an error whole: url_for_log with
 *     its path hidden (scheme and host), and the requests are marked
 *     url_is_secret so the HTTP client's own messages hide it too; URLs
 *     are wiped before they are freed;
 *   - all time here is real time (clock_mono_ms): the monitor lives on
 *     real time, whatever clock the daemon's schedules use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "heartbeat.h"
#include "http.h"
#include "lazylib_crypto.h"
#include "log.h"
#include "thread.h"
#include "url.h"

#define DROP_LOG_EVERY_MS ((int64_t)60 * 1000)
#define RETRY_BACKOFF_MS 500 /* doubles per try */
#define MAX_BODY (64 * 1024)

struct url_entry {
	char *schedule;
	char *url;
};

/* One queued ping; base and schedule are owned. */
struct ping {
	char *base;               /* the check's URL from the environment */
	char *schedule;           /* NULL: the daemon's ping */
	int64_t slot_ms;
	enum heartbeat_kind kind;
};

struct heartbeat {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC: queue, alive, stop, done */
	pthread_t thread;
	bool started;
	bool stopping;

	struct url_entry *urls; /* schedules with a heartbeat URL */
	size_t n_urls;
	char *daemon_url;       /* NULL: no top-level heartbeat */
	int64_t every_ms;

	int64_t last_alive_ms;  /* mono; INT64_MIN: never */
	int64_t last_daemon_ms; /* mono; INT64_MIN: never pinged */

	struct ping q[HEARTBEAT_QUEUE_MAX];
	size_t head, n;
	bool busy;              /* the thread is sending a ping */
	struct heartbeat_counters cnt;
	int64_t last_drop_log_ms;

	struct http_client *http; /* the pinger thread's own */
};

/* ---- the run id ------------------------------------------------------------ */

int heartbeat_rid(const char *schedule, int64_t slot_ms,
		  char out[HEARTBEAT_RID_MAX], struct sc_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	char slot[32];

	out[0] = '\0';
	int rc = dl_crypto_load(err);
	if (rc)
		return rc;
	snprintf(slot, sizeof(slot), "%lld", (long long)slot_ms);
	/* NUL separators: "a"+"bc" and "ab"+"c" must not collide. */
	const char *parts[] = {"surecron/heartbeat/1", schedule ? schedule : "",
			       slot};
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	bool ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
	for (size_t i = 0; ok && i < sizeof(parts) / sizeof(parts[0]); i++)
		ok = EVP_DigestUpdate(c, parts[i], strlen(parts[i]) + 1) == 1;
	ok = ok && EVP_DigestFinal_ex(c, md, &md_len) == 1 && md_len >= 16;
	EVP_MD_CTX_free(c);
	if (!ok)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	md[6] = (unsigned char)((md[6] & 0x0f) | 0x80); /* version 8 */
	md[8] = (unsigned char)((md[8] & 0x3f) | 0x80); /* variant 10xx */
	static const char hexd[] = "0123456789abcdef";
	size_t o = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hexd[md[i] >> 4];
		out[o++] = hexd[md[i] & 15];
	}
	out[o] = '\0';
	return 0;
}

/* ---- small helpers ---------------------------------------------------------- */

static void wipe_free(char *s)
{
	if (!s)
		return;
	volatile char *p = s;
	while (*p)
		*p++ = '\0';
	free(s);
}

static void urls_free(struct url_entry *u, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(u[i].schedule);
		wipe_free(u[i].url);
	}
	free(u);
}

static void ping_dispose(struct ping *p)
{
	wipe_free(p->base);
	free(p->schedule);
	memset(p, 0, sizeof(*p));
}

/* The value of the variable, or NULL when unset or empty. */
static const char *env_url(const char *var)
{
	const char *v = var ? getenv(var) : NULL;

	return v && *v ? v : NULL;
}

/* Waits on hb->cond until the mono deadline (INT64_MAX: no deadline);
 * the caller holds hb->mu. */
static void wait_until(struct heartbeat *hb, int64_t until_ms)
{
	if (until_ms == INT64_MAX) {
		pthread_cond_wait(&hb->cond, &hb->mu);
		return;
	}
	struct timespec ts = {.tv_sec = (time_t)(until_ms / 1000),
			      .tv_nsec = (long)(until_ms % 1000) * 1000000};
	pthread_cond_timedwait(&hb->cond, &hb->mu, &ts);
}

static const char *kind_name(const struct ping *p)
{
	if (!p->schedule)
		return "daemon";
	switch (p->kind) {
	case HEARTBEAT_START:
		return "start";
	case HEARTBEAT_SUCCESS:
		return "success";
	case HEARTBEAT_FAIL:
		return "fail";
	}
	return "?";
}

/*
 * The URL to GET: base with "/start" or "/fail" added to its path and
 * "rid=RID" to its query (a base's own query is kept after the path).
 * malloc'd; NULL when out of memory.
 */
static char *ping_url(const struct ping *p)
{
	char rid[HEARTBEAT_RID_MAX] = "";
	const char *suffix = "";
	const char *q = strchr(p->base, '?');
	size_t path_len = q ? (size_t)(q - p->base) : strlen(p->base);

	if (p->schedule) {
		if (heartbeat_rid(p->schedule, p->slot_ms, rid, NULL) != 0)
			rid[0] = '\0'; /* still worth a ping without it */
		if (p->kind == HEARTBEAT_START)
			suffix = "/start";
		else if (p->kind == HEARTBEAT_FAIL)
			suffix = "/fail";
	}
	while (path_len > 0 && p->base[path_len - 1] == '/' && *suffix)
		path_len--;
	size_t n = strlen(p->base) + strlen(suffix) + sizeof(rid) + 8;
	char *out = malloc(n);
	if (!out)
		return NULL;
	const char *query = q ? q + 1 : "";
	snprintf(out, n, "%.*s%s%s%s%s%s%s", (int)path_len, p->base, suffix,
		 (*query || *rid) ? "?" : "", query, (*query && *rid) ? "&" : "",
		 *rid ? "rid=" : "", rid);
	return out;
}

/* ---- the pinger thread ------------------------------------------------------ */

/* Waits backoff ms (real time) unless the object stops; true: stopping. */
static bool backoff_wait(struct heartbeat *hb, int64_t ms)
{
	int64_t until = clock_mono_ms() + ms;

	pthread_mutex_lock(&hb->mu);
	while (!hb->stopping && clock_mono_ms() < until)
		wait_until(hb, until);
	bool stop = hb->stopping;
	pthread_mutex_unlock(&hb->mu);
	return stop;
}

/* Sends p, tries included; counts and logs the outcome. Pinger thread,
 * without the mutex. */
static void send_ping(struct heartbeat *hb, const struct ping *p)
{
	struct sc_err e = {0};
	char *url = ping_url(p);
	char shown[256];
	int rc = SC_ENOMEM, tries = 0;

	if (url && !hb->http) {
		const struct http_options o = {
			.connect_timeout_ms = HEARTBEAT_CONNECT_TIMEOUT_MS,
			.timeout_ms = HEARTBEAT_TIMEOUT_MS,
			.max_body = MAX_BODY,
		};
		hb->http = http_client_new(&o, &e);
		if (!hb->http)
			rc = e.code ? e.code : SC_ENOMEM;
	}
	for (int64_t backoff = RETRY_BACKOFF_MS;
	     url && hb->http && tries < HEARTBEAT_TRIES; backoff *= 2) {
		const struct http_request req = {.method = "GET", .url = url,
						 .url_is_secret = true};
		struct http_response resp = {0};
		memset(&e, 0, sizeof(e));
		tries++;
		rc = http_do(hb->http, &req, &resp, &e);
		http_response_dispose(&resp);
		if (rc == 0 || (e.http_status && !http_status_retryable(
							 e.http_status)))
			break;
		if (tries < HEARTBEAT_TRIES && backoff_wait(hb, backoff))
			break;
	}
	url_for_log(p->base, true, shown, sizeof(shown));
	wipe_free(url);
	pthread_mutex_lock(&hb->mu);
	if (rc == 0)
		hb->cnt.sent++;
	else
		hb->cnt.failed++;
	pthread_mutex_unlock(&hb->mu);
	if (rc == 0)
		LOG(SC_LOG_DEBUG, "heartbeat", "event=ping kind=%s schedule=%s "
		       "url=%s", kind_name(p), p->schedule ? p->schedule : "-",
		       shown);
	else
		LOG(SC_LOG_WARN, "heartbeat", "event=ping_failed kind=%s "
		       "schedule=%s url=%s tries=%d code=%s http_status=%d "
		       "msg=\"the monitor was not told; the run is not "
		       "affected\"", kind_name(p),
		       p->schedule ? p->schedule : "-", shown, tries,
		       sc_strerror(rc), e.http_status);
}

/* The daemon's ping is due: a period since the last, and the scheduler
 * loop ran within the last period. Under hb->mu. */
static bool daemon_due(const struct heartbeat *hb, int64_t now)
{
	if (!hb->daemon_url || hb->last_alive_ms == INT64_MIN ||
	    now - hb->last_alive_ms > hb->every_ms)
		return false;
	return hb->last_daemon_ms == INT64_MIN ||
	       now - hb->last_daemon_ms >= hb->every_ms;
}

static void *pinger_main(void *arg)
{
	struct heartbeat *hb = arg;

	pthread_mutex_lock(&hb->mu);
	while (!hb->stopping) {
		struct ping p = {0};
		int64_t now = clock_mono_ms();

		if (hb->n > 0) {
			p = hb->q[hb->head];
			memset(&hb->q[hb->head], 0, sizeof(p));
			hb->head = (hb->head + 1) % HEARTBEAT_QUEUE_MAX;
			hb->n--;
		} else if (daemon_due(hb, now)) {
			p.base = strdup(hb->daemon_url);
			hb->last_daemon_ms = now;
			if (!p.base)
				hb->cnt.dropped++;
		} else {
			int64_t until = INT64_MAX;
			/* A period after the last ping, if the loop is
			 * alive by then; otherwise heartbeat_alive wakes us. */
			if (hb->daemon_url && hb->last_alive_ms != INT64_MIN &&
			    hb->last_daemon_ms != INT64_MIN)
				until = hb->last_daemon_ms + hb->every_ms;
			wait_until(hb, until);
			continue;
		}
		if (!p.base)
			continue;
		hb->busy = true;
		pthread_mutex_unlock(&hb->mu);
		send_ping(hb, &p);
		ping_dispose(&p);
		pthread_mutex_lock(&hb->mu);
		hb->busy = false;
		pthread_cond_broadcast(&hb->cond); /* heartbeat_flush */
	}
	pthread_mutex_unlock(&hb->mu);
	http_client_free(hb->http);
	hb->http = NULL;
	return NULL;
}

/* ---- the object ------------------------------------------------------------- */

/* Starts the thread when there is something to ping and it is not
 * running yet. Under hb->mu. */
static int start_thread(struct heartbeat *hb, struct sc_err *err)
{
	if (hb->started || (hb->n_urls == 0 && !hb->daemon_url))
		return 0;
	if (thread_start(&hb->thread, pinger_main, hb) != 0)
		return sc_err_set(err, SC_ENOMEM, "cannot start the pinger "
				  "thread");
	hb->started = true;
	return 0;
}

int heartbeat_configure(struct heartbeat *hb, const struct config *cfg,
			struct sc_err *err)
{
	struct url_entry *urls = NULL;
	size_t n = 0;
	char *durl = NULL;
	const char *v;

	/* Room for the schedules that ping, not for every schedule (16
	 * bytes each: 1.6 MB held for 100,000 schedules without one; issue
	 * 45). */
	size_t n_ping = 0;
	for (size_t i = 0; i < cfg->n_schedules; i++)
		n_ping += env_url(spec_x(&cfg->schedules[i])->heartbeat.url_env) != NULL;
	if (n_ping) {
		urls = calloc(n_ping, sizeof(*urls));
		if (!urls)
			return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < cfg->n_schedules && n < n_ping; i++) {
		const struct schedule_spec *s = &cfg->schedules[i];
		if (!(v = env_url(spec_x(s)->heartbeat.url_env)))
			continue;
		urls[n].schedule = strdup(s->name);
		urls[n].url = strdup(v);
		if (!urls[n].schedule || !urls[n].url) {
			urls_free(urls, n + 1);
			return sc_err_set(err, SC_ENOMEM, "out of memory");
		}
		n++;
	}
	if ((v = env_url(cfg->heartbeat.url_env)) && !(durl = strdup(v))) {
		urls_free(urls, n);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	pthread_mutex_lock(&hb->mu);
	struct url_entry *old = hb->urls;
	size_t n_old = hb->n_urls;
	char *old_durl = hb->daemon_url;
	hb->urls = urls;
	hb->n_urls = n;
	hb->daemon_url = durl;
	hb->every_ms = cfg->heartbeat.every_ms > 0 ? cfg->heartbeat.every_ms
						   : 60000;
	int rc = start_thread(hb, err);
	pthread_cond_broadcast(&hb->cond);
	pthread_mutex_unlock(&hb->mu);
	urls_free(old, n_old);
	wipe_free(old_durl);
	return rc;
}

int heartbeat_new(const struct config *cfg, struct heartbeat **out,
		  struct sc_err *err)
{
	struct heartbeat *hb = calloc(1, sizeof(*hb));
	pthread_condattr_t ca;

	if (!hb)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	pthread_mutex_init(&hb->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hb->cond, &ca);
	pthread_condattr_destroy(&ca);
	hb->last_alive_ms = INT64_MIN;
	hb->last_daemon_ms = INT64_MIN;
	hb->last_drop_log_ms = INT64_MIN;
	int rc = heartbeat_configure(hb, cfg, err);
	if (rc) {
		heartbeat_free(hb);
		return rc;
	}
	*out = hb;
	return 0;
}

/* The URL of schedule, or NULL. Under hb->mu. O(schedules with a
 * heartbeat). */
static const char *schedule_url(const struct heartbeat *hb,
				const char *schedule)
{
	for (size_t i = 0; i < hb->n_urls; i++)
		if (strcmp(hb->urls[i].schedule, schedule) == 0)
			return hb->urls[i].url;
	return NULL;
}

void heartbeat_slot(struct heartbeat *hb, const char *schedule,
		    int64_t slot_ms, enum heartbeat_kind kind)
{
	bool log_drop = false;

	if (!hb || !schedule)
		return;
	pthread_mutex_lock(&hb->mu);
	const char *url = schedule_url(hb, schedule);
	if (!url || hb->stopping) {
		pthread_mutex_unlock(&hb->mu);
		return;
	}
	struct ping p = {.base = strdup(url), .schedule = strdup(schedule),
			 .slot_ms = slot_ms, .kind = kind};
	if (!p.base || !p.schedule) {
		ping_dispose(&p);
		hb->cnt.dropped++;
		pthread_mutex_unlock(&hb->mu);
		return;
	}
	if (hb->n == HEARTBEAT_QUEUE_MAX) {
		/* Full: the oldest goes. */
		ping_dispose(&hb->q[hb->head]);
		hb->head = (hb->head + 1) % HEARTBEAT_QUEUE_MAX;
		hb->n--;
		hb->cnt.dropped++;
		int64_t now = clock_mono_ms();
		if (hb->last_drop_log_ms == INT64_MIN ||
		    now - hb->last_drop_log_ms >= DROP_LOG_EVERY_MS) {
			hb->last_drop_log_ms = now;
			log_drop = true;
		}
	}
	hb->q[(hb->head + hb->n) % HEARTBEAT_QUEUE_MAX] = p;
	hb->n++;
	uint64_t dropped = hb->cnt.dropped;
	pthread_cond_broadcast(&hb->cond);
	pthread_mutex_unlock(&hb->mu);
	if (log_drop)
		LOG(SC_LOG_WARN, "heartbeat", "event=ping_dropped dropped=%llu "
		       "msg=\"the ping queue is full (the monitor is slow or "
		       "down): the oldest pings are dropped\"",
		       (unsigned long long)dropped);
}

void heartbeat_alive(struct heartbeat *hb)
{
	if (!hb)
		return;
	int64_t now = clock_mono_ms();
	pthread_mutex_lock(&hb->mu);
	hb->last_alive_ms = now;
	if (daemon_due(hb, now))
		pthread_cond_broadcast(&hb->cond);
	pthread_mutex_unlock(&hb->mu);
}

int64_t heartbeat_every_ms(struct heartbeat *hb)
{
	if (!hb)
		return 0;
	pthread_mutex_lock(&hb->mu);
	int64_t every = hb->daemon_url ? hb->every_ms : 0;
	pthread_mutex_unlock(&hb->mu);
	return every;
}

bool heartbeat_flush(struct heartbeat *hb, int64_t timeout_ms)
{
	if (!hb)
		return true;
	int64_t until = clock_mono_ms() + timeout_ms;
	pthread_mutex_lock(&hb->mu);
	while ((hb->n > 0 || hb->busy) && hb->started &&
	       clock_mono_ms() < until)
		wait_until(hb, until);
	bool empty = hb->n == 0 && !hb->busy;
	pthread_mutex_unlock(&hb->mu);
	return empty;
}

void heartbeat_counters(struct heartbeat *hb, struct heartbeat_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!hb)
		return;
	pthread_mutex_lock(&hb->mu);
	*out = hb->cnt;
	pthread_mutex_unlock(&hb->mu);
}

void heartbeat_free(struct heartbeat *hb)
{
	if (!hb)
		return;
	pthread_mutex_lock(&hb->mu);
	hb->stopping = true;
	pthread_cond_broadcast(&hb->cond);
	bool started = hb->started;
	pthread_mutex_unlock(&hb->mu);
	if (started)
		pthread_join(hb->thread, NULL);
	while (hb->n > 0) {
		ping_dispose(&hb->q[hb->head]);
		hb->head = (hb->head + 1) % HEARTBEAT_QUEUE_MAX;
		hb->n--;
	}
	urls_free(hb->urls, hb->n_urls);
	wipe_free(hb->daemon_url);
	pthread_mutex_destroy(&hb->mu);
	pthread_cond_destroy(&hb->cond);
	free(hb);
}
