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
 * Content-Security-Policy and X-Content-Type-Options header; an Origin
 * that is not the server's own is 403; a POST needs `Authorization:
 * Bearer TOKEN` (compared in constant time; 401), and off loopback every
 * request does; the query string and the body are size-limited (414,
 * 413). Responses are JSON built with jansson.
 *
 * Threading: one internal polling thread of libmicrohttpd answers every
 * request, so the server's own store handle (opened by web_start) is used
 * by that thread only. web_start and web_stop are for the daemon's
 * scheduler thread.
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
#define WEB_CONN_MAX 64        /* connections at once */
#define WEB_CONN_TIMEOUT_S 10  /* an idle connection is closed */

struct web_opts {
	const char *listen;     /* http.listen (borrowed; copied) */
	const char *token_env;  /* http.token_env or NULL (borrowed) */
	const char *store_url;  /* the daemon's store (borrowed) */
	struct sc_clock *clock; /* the daemon's clock (borrowed) */
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
 * Opens the server's store handle, reads the token (its variable must be
 * set and non-empty when token_env is given: SC_ECONFIG otherwise, naming
 * the variable, never its value) and starts listening. On failure *out is
 * untouched and err says why. Stop and free with web_stop.
 */
int web_start(const struct web_opts *o, struct web **out,
	      struct sc_err *err);

/* Stops listening (waits for the request in progress), closes the store
 * handle, forgets the token and frees. NULL is ignored. */
void web_stop(struct web *w);

/* The port the server listens on (useful with port 0 in tests). */
int web_port(const struct web *w);

/* Constant-time equality of two NUL-terminated strings: the time depends
 * on their lengths only, never on where they differ. */
bool web_token_equal(const char *a, const char *b);

#endif
