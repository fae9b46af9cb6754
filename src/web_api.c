/*
 * web_api.c - the JSON API under /api/ (web_int.h, docs/api.md).
 *
 * Invariants:
 *   - every answer is JSON made by jansson, with a 4xx/5xx status and an
 *     "error" message on failure;
 *   - no answer carries a secret: schedules and targets are described by
 *     their names and kinds, never by a URL, header or variable's value.
 */
#include <string.h>

#include "web_int.h"

enum MHD_Result web_api_handle(struct web *w, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *body, size_t body_len)
{
	(void)w;
	(void)url;
	(void)method;
	(void)body;
	(void)body_len;
	return web_respond_error(c, 404, "no such path");
}
