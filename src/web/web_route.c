/*
 * web_route.c - the web surface's one route table: every path the daemon
 * answers, its method, what the handler needs (the shared store lock, the
 * config) and the handler. An endpoint is added here and nowhere else in
 * the routing (docs/api.md documents it).
 *
 * Invariants:
 *   - a path in the table asked with the other method gets 405 (the
 *     message says which method it takes); a path under /api/ not in the
 *     table gets 404; any other GET goes to the dashboard (web_page.c),
 *     which answers its own files or 404;
 *   - a route with ROUTE_LOCK runs under w->lock (it uses w->store);
 *     /healthz alone has no lock (its own handle), so it never waits
 *     behind another handler;
 *   - a route with ROUTE_CFG holds the daemon's config for the whole
 *     request and gives it back on every path; with ROUTE_NEEDS_CFG a
 *     daemon with no config loaded gets 503 before the handler runs;
 *   - a POST route's body is parsed here, once: anything but a JSON
 *     object (a duplicate key included) is 400 before the handler runs.
 */
#include <stdbool.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "store.h"
#include "web_int.h"

enum {
	ROUTE_LOCK = 1,      /* under w->lock: the handler uses w->store */
	ROUTE_CFG = 2,       /* hold the config for the request */
	ROUTE_NEEDS_CFG = 4, /* and 503 when the daemon has none */
	ROUTE_POST = 8,      /* POST with a JSON object body; else GET */
	ROUTE_PREFIX = 16,   /* path is a prefix; the handler gets the rest */
};

#define API (ROUTE_LOCK | ROUTE_CFG | ROUTE_NEEDS_CFG)

static const struct route {
	const char *path;
	unsigned flags;
	web_handler_fn fn;
} routes[] = {
	{"/healthz", 0, web_metrics_healthz},
	{"/metrics", ROUTE_LOCK | ROUTE_CFG, web_metrics_page},
	{"/api/schedules", API, web_api_schedules},
	{"/api/schedules/", API | ROUTE_PREFIX, web_api_schedule},
	{"/api/lost", API, web_api_lost},
	{"/api/ledger", API, web_api_ledger},
	{"/api/nodes", API, web_api_nodes},
	{"/api/slots/", API | ROUTE_PREFIX, web_api_slot},
	{"/api/trigger", API | ROUTE_POST, web_api_trigger},
	{"/api/retry", API | ROUTE_POST, web_api_retry},
	{"/api/release", API | ROUTE_POST, web_api_release},
	{"/api/ack", API | ROUTE_POST, web_api_ack},
	{"/api/pause", API | ROUTE_POST, web_api_pause},
	{"/api/resume", API | ROUTE_POST, web_api_resume},
};

/* The route of url and the part of url past its path; NULL: none. */
static const struct route *find(const char *url, const char **rest)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *r = &routes[i];
		size_t n = strlen(r->path);

		if (r->flags & ROUTE_PREFIX ? strncmp(url, r->path, n) == 0
					    : strcmp(url, r->path) == 0) {
			*rest = url + n;
			return r;
		}
	}
	return NULL;
}

/* A POST body: a JSON object, or NULL (empty, not JSON, not an object,
 * a duplicate key). */
static json_t *body_object(const char *body, size_t len)
{
	json_t *o = len ? json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL)
			: NULL;

	if (o && !json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Runs r's handler with what its flags ask for. */
static enum MHD_Result run(const struct route *r, struct web_call *k,
			   const char *rest, const char *body, size_t body_len)
{
	void *ref = NULL;
	json_t *o = NULL;
	enum MHD_Result rc;

	if (r->flags & ROUTE_POST) {
		o = body_object(body, body_len);
		if (!o)
			return web_respond_error(k->c, 400,
						 "the body is not a "
						 "JSON object");
	}
	if (r->flags & ROUTE_LOCK)
		pthread_mutex_lock(&k->w->lock);
	if (r->flags & ROUTE_CFG)
		k->cfg = web_cfg_hold(k->w, &ref);
	if ((r->flags & ROUTE_NEEDS_CFG) && !k->cfg)
		rc = web_respond_error(k->c, 503,
				       "the daemon has no config "
				       "loaded");
	else
		rc = r->fn(k, rest, o);
	if (r->flags & ROUTE_CFG)
		web_cfg_release(k->w, ref);
	if (r->flags & ROUTE_LOCK)
		pthread_mutex_unlock(&k->w->lock);
	json_decref(o);
	return rc;
}

enum MHD_Result web_route_dispatch(struct web *w, struct MHD_Connection *c,
				   const char *url, const char *method,
				   const char *body, size_t body_len)
{
	bool is_post = strcmp(method, "POST") == 0;
	const char *rest = "";
	const struct route *r = find(url, &rest);
	struct web_call k = {.w = w, .c = c};

	if (!r) {
		if (!is_post && strncmp(url, "/api/", 5) != 0) {
			bool handled = false;
			enum MHD_Result rc = web_page_handle(w, c, url,
							     &handled);
			if (handled)
				return rc;
		}
		return web_respond_error(c, 404, "no such path");
	}
	if (is_post != ((r->flags & ROUTE_POST) != 0))
		return web_respond_error(
			c, 405,
			is_post ? "method not allowed: GET only"
				: "method not allowed: POST only");
	k.now_ms = sc_clock_now_ms(w->clock ? w->clock : store_clock(w->store));
	return run(r, &k, rest, body, body_len);
}
