/*
 * web_int.h - what the files of the web module share (web.c: the server
 * and the checks every request passes; web_api.c: the JSON API under
 * /api/; web_page.c: the dashboard at /). Not for other modules.
 *
 * Every handler runs on the server's one polling thread, so struct web's
 * store handle needs no lock. A handler that reads the config holds it
 * with web_cfg_hold for the request and gives it back with
 * web_cfg_release: the daemon may swap its config (SIGHUP) meanwhile.
 */
#ifndef SURECRON_WEB_INT_H
#define SURECRON_WEB_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lazylib_mhd.h"
#include "web.h"

struct config;

struct web {
	struct MHD_Daemon *mhd;
	struct store *store;    /* the polling thread's only */
	char *token;            /* NULL: no POST is accepted */
	bool loopback;          /* off loopback, every request needs the token */
	const _Atomic int64_t *loop_mono_ms;
	int64_t loop_stale_ms;
	int port;
	int64_t start_ms;       /* wall clock when the server started */
	struct sc_clock *clock; /* the daemon's (borrowed) */
	const struct config *(*cfg_hold)(void *ctx, void **ref);
	void (*cfg_release)(void *ctx, void *ref);
	void *cfg_ctx;
};

/* What a connection carries between the calls of its request: the body,
 * kept up to WEB_BODY_MAX bytes (NUL-terminated), and whether more came. */
struct req {
	char *body;
	size_t body_len;
	bool too_big;
};

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

/* The JSON API (web_api.c): answers url under /api/ (method GET or POST,
 * body the request's, NUL-terminated, possibly empty). The checks of
 * web.c (Origin, sizes, token for POST) have passed. */
enum MHD_Result web_api_handle(struct web *w, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *body, size_t body_len);

/* The dashboard (web_page.c): GET / and its assets. Returns MHD_NO
 * through *handled=false when url is not one of the page's. */
enum MHD_Result web_page_handle(struct web *w, struct MHD_Connection *c,
				const char *url, bool *handled);

#endif
