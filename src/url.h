/*
 * url.h - the one URL rule: every http(s) URL the library checks, sends
 * or logs goes through here, parsed by libcurl's own URL parser (so what
 * is checked is what is sent), and every store URL through libpq's own
 * conninfo parser.
 *
 * The rule for http(s) URLs (url_check; URL_MAIL takes smtp and smtps
 * in their place, with the same userinfo rule):
 *   - libcurl parses it (curl_url_set, no scheme guessing) and its scheme
 *     is http or https;
 *   - it holds no userinfo: libcurl reports no user and no password (an
 *     empty one counts), because libcurl would send them as Basic
 *     credentials and a secret is never written where a URL is;
 *   - with URL_SECRET (a secret travels with the request, or the URL is
 *     one: webhook and chat URLs, token_url, http tasks with auth) the
 *     scheme is https, or http to a loopback host: an IPv4 address in
 *     127.0.0.0/8, the IPv6 address ::1 (a zone id is allowed), or the
 *     name localhost (any case, no trailing dot), all as libcurl reports
 *     the host after its own normalisation (so 0x7f.1 is 127.0.0.1).
 *
 * The rule for store URLs (url_check_store): postgres:// and
 * postgresql:// URLs are handed to libpq's PQconninfoParse, and any
 * option it reports set whose name holds "pass" or "secret" (password,
 * passfile, sslpassword, ...) is refused: the password comes only from
 * PGPASSWORD or the password file (~/.pgpass, PGPASSFILE).
 *
 * libcurl and libpq are loaded on first use (lazylib.h); a function that
 * needs one returns SC_EIO with lazylib's message when it cannot be
 * loaded. Every function here is thread-safe.
 */
#ifndef SURECRON_URL_H
#define SURECRON_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* libcurl's parsed URL handle (CURLU), without including curl here. */
struct Curl_URL;

/* What travels with a URL decides what it may be. */
enum url_use {
	URL_PLAIN = 0,  /* nothing secret: http or https to any host */
	URL_SECRET = 1, /* a secret: https, or http to a loopback host */
	URL_MAIL = 2,   /* an email target's server: smtps, or smtp (the
			   send then requires STARTTLS but to a loopback
			   host); no userinfo, as for the others */
};

/*
 * Applies the rule above to url. Returns 0, or:
 *   SC_EINVAL  the rule refuses it; err's message names the scheme and
 *              host at most, never the userinfo, path or query
 *   SC_EIO     libcurl could not be loaded (err says which package)
 *   SC_ENOMEM  out of memory
 */
int url_check(const char *url, enum url_use use, struct sc_err *err);

/*
 * url_check, handing back libcurl's parsed handle in *out on success
 * (the caller frees it with url_free). Give it to libcurl with
 * CURLOPT_CURLU so that the request goes exactly where the check looked.
 * Same return codes; *out is untouched on failure.
 */
int url_parse(const char *url, enum url_use use, struct Curl_URL **out,
	      struct sc_err *err);

/* Frees a handle from url_parse; NULL is fine. */
void url_free(struct Curl_URL *u);

/* True when host, as libcurl reports it (IPv6 in brackets), is one of the
 * loopback hosts of the rule. */
bool url_is_loopback_host(const char *host);

/*
 * The log form of url: "scheme://host[:port]/path" built from libcurl's
 * own parts, so nothing libcurl would send as user or password, nor the
 * query or fragment, ever appears. hide_path (URLs that are themselves
 * credentials, like webhooks) replaces a path longer than "/" with
 * "/...". A URL libcurl cannot parse is written "(invalid URL)".
 * Truncates to fit n; control characters become '?'. Returns out.
 */
const char *url_for_log(const char *url, bool hide_path, char *out,
			size_t n);

/*
 * The log form of a store URL (store_url_for_log is the store layer's
 * door to it): anything that is not a PostgreSQL URL as it is; a
 * PostgreSQL URL as written, with the password of its userinfo and the
 * value of every query parameter whose name holds "pass" or "secret" (any
 * case) replaced by "***". Needs no library. Truncates to fit n; control
 * characters become '?'. Returns out.
 */
const char *url_store_for_log(const char *url, char *out, size_t n);

/* True when url names a PostgreSQL store (postgres:// or postgresql://,
 * the prefixes the store layer routes to libpq). */
bool url_is_pg(const char *url);

/*
 * The store URL rule above, for a PostgreSQL URL (url_is_pg). Returns 0,
 * or SC_EINVAL with a message that names the refused option (never its
 * value, never libpq's message, which may quote the URL), SC_EIO when
 * libpq could not be loaded, SC_ENOMEM.
 */
int url_check_store(const char *url, struct sc_err *err);

#endif
