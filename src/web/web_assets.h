/*
 * web_assets.h - the dashboard's files (src/web/assets/), built into the binary:
 * scripts/embed.sh writes their bytes and this table into a generated C
 * file of the build directory (the Makefile's rule). Read-only, so any
 * thread may read it. Only web_page.c reads it.
 */
#ifndef SURECRON_WEB_ASSETS_H
#define SURECRON_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path;          /* "/" + the file's name: "/dashboard.js" */
	const unsigned char *data; /* static; len bytes, then a NUL */
	size_t len;
};

/* The files, in the order the Makefile names them; the last entry has a
 * NULL path. */
extern const struct web_asset web_assets[];

#endif
