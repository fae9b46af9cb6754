/*
 * web_call.c - what every handler of the web module answers with: the
 * responses (with the headers every one carries) and the config held for
 * a request. The handlers (web_api.c, web_page.c, web_metrics.c) and the
 * router (web_route.c) call these; none of them calls the server
 * (web.c), so the module's files call downwards only:
 *
 *   web.c (server, checks) -> web_route.c (table) -> web_api.c,
 *   web_page.c, web_metrics.c -> web_call.c
 *
 * Invariants:
 *   - every response carries Content-Security-Policy,
 *     X-Content-Type-Options and Cache-Control: no-store;
 *   - a body handed to web_respond_bytes or web_respond is freed here on
 *     every path (stolen), so a handler never leaks one on an error;
 *   - a held config is given back once (web_cfg_release ignores NULL).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "web_int.h"

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
