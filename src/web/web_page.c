/*
 * web_page.c - the dashboard at / (web_int.h): one page whose HTML, CSS
 * and JavaScript (src/web/assets/) are built into the binary (web_assets.h), so
 * it works on a host with no network. The page reads the JSON API
 * (docs/api.md) and nothing else.
 *
 * Invariants:
 *   - only the built-in files are served, by exact name: no path from the
 *     request ever reaches the file system;
 *   - the page needs no inline script or style, so the server's
 *     Content-Security-Policy (default-src 'self') holds for it too;
 *   - every file's Content-Type is set from its name's ending, and the
 *     server sends X-Content-Type-Options: nosniff with it.
 */
#include <stdlib.h>
#include <string.h>

#include "web_assets.h"
#include "web_int.h"

/* The Content-Type of an asset, by its name's ending. */
static const char *type_of(const char *path)
{
	static const struct {
		const char *end;
		const char *type;
	} types[] = {
		{".html", "text/html; charset=utf-8"},
		{".css", "text/css; charset=utf-8"},
		{".js", "text/javascript; charset=utf-8"},
		{".svg", "image/svg+xml"},
	};
	size_t n = strlen(path);

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t k = strlen(types[i].end);
		if (n >= k && strcmp(path + n - k, types[i].end) == 0)
			return types[i].type;
	}
	return "application/octet-stream";
}

enum MHD_Result web_page_handle(struct web *w, struct MHD_Connection *c,
				const char *url, bool *handled)
{
	(void)w;
	/* The page itself is "/"; its file is not served under its own name
	 * too, so there is one address to bookmark. */
	const char *name = strcmp(url, "/") == 0 ? "/dashboard.html" : url;
	const struct web_asset *a = NULL;

	*handled = false;
	if (strcmp(url, "/dashboard.html") == 0)
		return MHD_NO;
	for (size_t i = 0; web_assets[i].path; i++)
		if (strcmp(web_assets[i].path, name) == 0) {
			a = &web_assets[i];
			break;
		}
	if (!a)
		return MHD_NO;
	*handled = true;
	/* web_respond_bytes takes a malloc'ed body: a copy of the static
	 * bytes (the page is a few tens of KiB). */
	char *b = malloc(a->len + 1);
	if (!b)
		return web_respond_error(c, 500, "out of memory");
	memcpy(b, a->data, a->len);
	b[a->len] = '\0';
	return web_respond_bytes(c, 200, b, a->len, type_of(a->path));
}
