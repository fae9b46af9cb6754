/*
 * web_int.h - what the files of the web module share. Not for other
 * modules. The files, each calling only those below it:
 *
 *   web.c          the server and the checks every request passes
 *   web_route.c    the route table: path, method, lock, config, handler
 *   web_api.c      the JSON API under /api/
 *   web_metrics.c  /healthz and /metrics
 *   web_page.c     the dashboard at /
 *   web_call.c     responses and the config held for a request
 *
 * Every connection has its own thread (web.h). The handlers of the API,
 * the page and /metrics run under struct web's lock and use its store
 * handle; /healthz uses health_store under health_lock, so it never waits
 * for them. A handler that reads the config holds it
 * with web_cfg_hold for the request and gives it back with
 * web_cfg_release: the daemon may swap its config (SIGHUP) meanwhile.
 */
#ifndef SURECRON_WEB_INT_H
#define SURECRON_WEB_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include <jansson.h>

#include "lazylib_mhd.h"
#include "web.h"

struct config;

/* A connection, for the headers' deadline: linked into struct web's
 * list from its start to its close (MHD_OPTION_NOTIFY_CONNECTION), under
 * conn_lock. The socket stays open while it is linked: libmicrohttpd
 * tells of the close before it closes the socket. */
struct web_conn {
	struct web_conn *prev, *next;
	int fd;
	int64_t since_ms;   /* clock_mono_ms of the start, or the end of the
			       previous request: the headers' clock */
	bool in_request;    /* the headers are in; the deadline is off */
	bool cut;           /* shut down once already */
};

struct web {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;   /* the handlers of the API, page, /metrics */
	struct store *store;    /* under lock */
	pthread_mutex_t health_lock;
	struct store *health_store; /* /healthz's own, under health_lock */
	char *token;            /* NULL: no POST is accepted */
	bool loopback;          /* off loopback, every request needs the token */
	char bind_host[64];     /* http.listen's host ("127.0.0.1", "[::1]",
				   "localhost"), a name of its own for Host */
	const _Atomic int64_t *loop_mono_ms;
	int64_t loop_stale_ms;
	int port;
	int64_t start_ms;       /* wall clock when the server started */
	struct sc_clock *clock; /* the daemon's (borrowed) */
	const struct config *(*cfg_hold)(void *ctx, void **ref);
	void (*cfg_release)(void *ctx, void *ref);
	void *cfg_ctx;
	/* The headers' deadline: the connections, and the thread that cuts
	 * those past it. */
	pthread_mutex_t conn_lock;
	pthread_cond_t conn_cv; /* wakes the reaper to stop */
	struct web_conn *conns;
	bool reaper_on, stopping;
	pthread_t reaper;
	int64_t header_deadline_ms;
	/* Failed authentications: how many since the last log line, and
	 * when that line was written (clock_mono_ms). */
	_Atomic int64_t auth_failed_n;
	_Atomic int64_t auth_logged_ms;
};

/* What a connection carries between the calls of its request: the body,
 * kept up to WEB_BODY_MAX bytes (NUL-terminated), and whether more came. */
struct req {
	char *body;
	size_t body_len;
	bool too_big;
};

/* One request as a handler sees it (web_route.c fills it): the server,
 * the connection, the config held for the request (NULL when the route
 * does not hold one, or the daemon has none) and the clock's now. */
struct web_call {
	struct web *w;
	struct MHD_Connection *c;
	const struct config *cfg;
	int64_t now_ms;
};

/* A route's handler: rest is the URL past the route's path (empty for an
 * exact path); body is the request's JSON object for a POST route (owned
 * by the router, borrowed here), NULL for GET. */
typedef enum MHD_Result (*web_handler_fn)(struct web_call *k,
					  const char *rest, json_t *body);

/* ---- web_call.c: responses and the held config ------------------------ */

/* Sends status with body (len bytes, malloc'ed, stolen: freed here
 * whatever happens) of type ctype and the headers every response carries
 * (Content-Security-Policy, X-Content-Type-Options, Cache-Control). */
enum MHD_Result web_respond_bytes(struct MHD_Connection *c, unsigned status,
				  char *body, size_t len, const char *ctype);

/* Sends status with the JSON body (stolen; NULL is "out of memory"). */
enum MHD_Result web_respond(struct MHD_Connection *c, unsigned status,
			    json_t *body);

/* Sends status with {"error": msg}. msg is words of the web module, never
 * a value a request or the config gave (no secret can leak through it). */
enum MHD_Result web_respond_error(struct MHD_Connection *c, unsigned status,
				  const char *msg);

/* The daemon's current config, held until web_cfg_release(w, ref). NULL
 * when the server was started without one (tests of web.c alone). */
const struct config *web_cfg_hold(struct web *w, void **ref);
void web_cfg_release(struct web *w, void *ref);

/* ---- web_route.c: the route table -------------------------------------- */

/*
 * Answers one request whose checks (web.c: Host, Origin, sizes, token)
 * have passed: finds its route, refuses a wrong method (405), holds the
 * config and the shared store lock as the route says, parses a POST's
 * JSON body (400), and calls the handler. Paths outside the table go to
 * the dashboard (GET) or get 404. body is NUL-terminated, possibly empty.
 */
enum MHD_Result web_route_dispatch(struct web *w, struct MHD_Connection *c,
				   const char *url, const char *method,
				   const char *body, size_t body_len);

/* ---- the handlers (the table names them) -------------------------------- */

/* web_metrics.c: GET /healthz (own store handle, no lock), GET /metrics. */
enum MHD_Result web_metrics_healthz(struct web_call *k, const char *rest,
				    json_t *body);
enum MHD_Result web_metrics_page(struct web_call *k, const char *rest,
				 json_t *body);

/* web_api.c: the JSON API under /api/ (docs/api.md). GET routes first,
 * then the actions (POST). */
enum MHD_Result web_api_schedules(struct web_call *k, const char *rest,
				  json_t *body);
enum MHD_Result web_api_schedule(struct web_call *k, const char *rest,
				 json_t *body);
enum MHD_Result web_api_lost(struct web_call *k, const char *rest,
			     json_t *body);
enum MHD_Result web_api_ledger(struct web_call *k, const char *rest,
			       json_t *body);
enum MHD_Result web_api_nodes(struct web_call *k, const char *rest,
			      json_t *body);
enum MHD_Result web_api_slot(struct web_call *k, const char *rest,
			     json_t *body);
enum MHD_Result web_api_trigger(struct web_call *k, const char *rest,
				json_t *o);
enum MHD_Result web_api_retry(struct web_call *k, const char *rest,
			      json_t *o);
enum MHD_Result web_api_release(struct web_call *k, const char *rest,
				json_t *o);
enum MHD_Result web_api_ack(struct web_call *k, const char *rest,
			    json_t *o);
enum MHD_Result web_api_pause(struct web_call *k, const char *rest,
			      json_t *o);
enum MHD_Result web_api_resume(struct web_call *k, const char *rest,
			       json_t *o);

/* The dashboard (web_page.c): GET / and its assets. Returns MHD_NO
 * through *handled=false when url is not one of the page's. */
enum MHD_Result web_page_handle(struct web *w, struct MHD_Connection *c,
				const char *url, bool *handled);

#endif
