/*
 * web.h - the daemon's web surface (issue 16): a libmicrohttpd server on
 * `http.listen`, started by the daemon when the config has one.
 *
 * Served: GET /healthz (200 {"status":"ok"} when the scheduler loop ran
 * within its interval and the store answers, else 503 with the reason);
 * GET /metrics (Prometheus text 0.0.4):
 *   per node, the process's counters (metrics.h): surecron_runs_total,
 *     surecron_slots_lost_total, surecron_slots_missed_total,
 *     surecron_start_lateness_seconds, surecron_run_duration_seconds,
 *     surecron_deliveries_total, surecron_alerts_total, and process_*
 *     (resident memory, CPU seconds, start time);
 *   store-wide gauges, the same on every node: surecron_jobs{state},
 *     surecron_last_success_timestamp_seconds{schedule} (the store's
 *     per-schedule summaries), surecron_next_slot_timestamp_seconds
 *     {schedule} (the config's cron and zone), surecron_build_info,
 *     surecron_nodes and surecron_config_skew (the store's node records,
 *     issue 43);
 *   a scrape costs what the schedules do, never a ledger scan;
 * the JSON API under /api/ (web_api.c, docs/api.md); the dashboard at /
 * and its assets (web_page.c); every other path is a 404 JSON error. Rules on every request: a
 * Content-Security-Policy and X-Content-Type-Options header; on a
 * loopback listener, a Host that is not one of its own names is 421 (DNS
 * rebinding, issue 44); an Origin that is not the server's own is 403; a
 * POST needs `Authorization: Bearer TOKEN` (compared in constant time;
 * 401, after a delay, logged at a bounded rate), and off loopback every
 * request does; the query string and the body are size-limited (414,
 * 413). Responses are JSON built with jansson.
 *
 * Threading: a thread per connection (libmicrohttpd's), so that a slow
 * handler delays only its own client: /healthz answers beside 40 clients
 * looping on /api/schedules (issue 44). The handlers that read the store
 * share one handle under a lock; /healthz has its own handle and lock,
 * and waits for no other handler. A request's headers have a deadline
 * (WEB_HEADER_DEADLINE_S, from the connection's start or the end of its
 * previous request): a client that drips them is cut off (slowloris).
 * web_start and web_stop are for the daemon's scheduler thread.
 */
#ifndef SURECRON_WEB_H
#define SURECRON_WEB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "surecron.h"

struct config;

struct web;

/* Limits of a request. */
#define WEB_QUERY_MAX 2048     /* bytes of query string arguments */
#define WEB_BODY_MAX 16384     /* bytes of a request body */
/* Connections at once: room for a crowd of slow or looping clients on
 * loopback beside the probes of /healthz (a thread each). */
#define WEB_CONN_MAX 256
#define WEB_CONN_PER_IP 16     /* off loopback: connections of one address */
#define WEB_CONN_TIMEOUT_S 10  /* an idle connection is closed */
#define WEB_HEADER_DEADLINE_S 10 /* a request's headers are all in by then */
/* A failed authentication (401) is answered after this delay, on the
 * connection's own thread, and logged at most once per
 * WEB_AUTH_LOG_EVERY_MS (with the count since the last line). */
#define WEB_AUTH_DELAY_MS 250
#define WEB_AUTH_LOG_EVERY_MS 10000
/* The shortest token accepted off loopback, in visible ASCII bytes. */
#define WEB_TOKEN_MIN 16

struct web_opts {
	const char *listen;     /* http.listen (borrowed; copied) */
	const char *token_env;  /* http.token_env or NULL (borrowed) */
	const char *store_url;  /* the daemon's store (borrowed) */
	struct sc_clock *clock; /* the daemon's (borrowed); NULL: the store's */
	/* When the scheduler loop last ran (clock_mono_ms), stored by the
	 * daemon's loop; borrowed: it outlives the server. */
	const _Atomic int64_t *loop_mono_ms;
	int64_t loop_stale_ms;  /* /healthz is 503 past this (real ms) */
	/* The daemon's current config for the API and the page: cfg_hold
	 * returns it with a reference in *ref, cfg_release gives that back.
	 * Called on the server's thread; both NULL: no config (the API
	 * answers 503). */
	const struct config *(*cfg_hold)(void *ctx, void **ref);
	void (*cfg_release)(void *ctx, void *ref);
	void *cfg_ctx;
};

/*
 * Opens the server's store handles, reads the token (its variable must be
 * set and non-empty when token_env is given, and off loopback at least
 * WEB_TOKEN_MIN visible ASCII bytes (web_token_weak): SC_ECONFIG
 * otherwise, naming the variable, never its value) and starts listening. On failure *out is
 * untouched and err says why. Stop and free with web_stop.
 */
int web_start(const struct web_opts *o, struct web **out,
	      struct sc_err *err);

/* Stops listening (waits for the request in progress), closes the store
 * handle, forgets the token and frees. NULL is ignored. */
void web_stop(struct web *w);

/* The port the server listens on (useful with port 0 in tests). */
int web_port(const struct web *w);

/* True when token is too weak for a listener off loopback: shorter than
 * WEB_TOKEN_MIN bytes, or holding a byte that is not visible ASCII (a
 * space, a control, a byte past 0x7e). The rule of `check` and of the
 * daemon's start. */
bool web_token_weak(const char *token);

/* Constant-time equality of two NUL-terminated strings: the time depends
 * on their lengths only, never on where they differ. */
bool web_token_equal(const char *a, const char *b);

#endif
