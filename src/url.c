/*
 * url.c - the one URL rule (see url.h): http(s) URLs judged on libcurl's
 * own parse, store URLs on libpq's.
 *
 * Invariants:
 *   - No string test stands in for a parser: the scheme, userinfo and
 *     host judged are the ones curl_url_get reports, and the options of a
 *     store URL the ones PQconninfoParse reports. The parse flags are the
 *     ones the send uses (url_parse hands the very handle to libcurl), so
 *     a URL cannot mean one thing to the check and another to the send.
 *   - Messages and log forms are built from libcurl's scheme, host, port
 *     and path parts only: userinfo, query and fragment never reach them,
 *     whatever the spelling of the URL (one or three slashes, '@' in
 *     odd places, percent-encoding).
 *   - Secrets met on the way (a password libcurl or libpq parsed) are
 *     only tested for presence, never copied; libpq's parse is wiped
 *     before it is freed.
 *   - The one exception to "no string test": url_store_for_log shows a
 *     store URL as written (an operator must recognise it), so it masks
 *     by position, erring on the side of hiding: everything between the
 *     first ':' of the userinfo and its last '@', and the value of every
 *     query parameter whose name holds "pass" or "secret". It never
 *     decides whether a URL is accepted (url_check_store does, on libpq's
 *     parse, and refuses any password in it).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lazylib_curl.h"
#include "lazylib_pq.h"
#include "url.h"

/* Parse flags, shared by the check and (through url_parse) the send: no
 * scheme guessing, so "host/x" is not quietly read as http://host/x. */
#define URL_PARSE_FLAGS 0U

bool url_is_loopback_host(const char *host)
{
	unsigned char a4[4];
	struct in6_addr a6;
	char tmp[64];

	if (!host)
		return false;
	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, a4) == 1)
		return a4[0] == 127;
	size_t len = strlen(host);
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']' &&
	    len - 2 < sizeof(tmp)) {
		memcpy(tmp, host + 1, len - 2);
		tmp[len - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, &a6) == 1)
			return memcmp(&a6, &in6addr_loopback, sizeof(a6)) == 0;
	}
	return false;
}

/* True when libcurl reports part as present (even empty). */
static bool has_part(CURLU *u, CURLUPart part)
{
	char *v = NULL;
	CURLUcode rc = curl_url_get(u, part, &v, 0);

	if (v) {
		memset(v, 0, strlen(v)); /* may be a password */
		curl_free(v);
	}
	return rc == CURLUE_OK;
}

int url_parse(const char *url, enum url_use use, struct Curl_URL **out,
	      struct sc_err *err)
{
	char *scheme = NULL, *host = NULL;
	int rc = dl_curl_load(err);

	if (rc)
		return rc;
	CURLU *u = curl_url();
	if (!u)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	if (!url || !*url) {
		rc = sc_err_set(err, SC_EINVAL, "no URL");
		goto done;
	}
	CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, URL_PARSE_FLAGS);
	if (uc == CURLUE_OUT_OF_MEMORY) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto done;
	}
	if (uc != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		rc = sc_err_set(err, SC_EINVAL, "not a valid %s URL",
				use == URL_MAIL ? "smtp(s)" : "http(s)");
		goto done;
	}
	/* Messages quote at most 40 bytes of the scheme and of the host, so
	 * that the reason is never cut off (an escaped byte takes four). */
	bool mail = use == URL_MAIL;
	bool https = strcasecmp(scheme, mail ? "smtps" : "https") == 0;
	if (mail && !https && strcasecmp(scheme, "smtp") != 0) {
		rc = sc_err_set(err, SC_EINVAL,
				"%.40s://%.40s: unsupported scheme (use "
				"smtp:// or smtps://)", scheme, host);
		goto done;
	}
	if (!mail && !https && strcasecmp(scheme, "http") != 0) {
		rc = sc_err_set(err, SC_EINVAL,
				"%.40s://%.40s: unsupported scheme (use "
				"https://%s)",
				scheme, host,
				use == URL_SECRET ? "" : " or http://");
		goto done;
	}
	/* libcurl sends any userinfo it parsed as Basic credentials; an
	 * empty user or password still makes an Authorization header. */
	if (has_part(u, CURLUPART_USER) || has_part(u, CURLUPART_PASSWORD) ||
	    has_part(u, CURLUPART_OPTIONS)) {
		rc = sc_err_set(err, SC_EINVAL,
				"%.40s://%.40s: the URL holds a user name or "
				"password; secrets are never written in a URL",
				scheme, host);
		goto done;
	}
	if (use == URL_SECRET && !https && !url_is_loopback_host(host)) {
		rc = sc_err_set(err, SC_EINVAL,
				"http://%.40s: plain http is only allowed to a "
				"loopback host (127.0.0.0/8, [::1], localhost); "
				"use https://",
				host);
		goto done;
	}
	if (out) {
		*out = u;
		u = NULL;
	}
done:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

int url_check(const char *url, enum url_use use, struct sc_err *err)
{
	return url_parse(url, use, NULL, err);
}

void url_free(struct Curl_URL *u)
{
	if (u)
		curl_url_cleanup(u);
}

/* Appends s to out (capacity n, *o used), truncating. */
static void put(char *out, size_t n, size_t *o, const char *s)
{
	while (s && *s && *o + 1 < n)
		out[(*o)++] = *s++;
	out[*o] = '\0';
}

const char *url_for_log(const char *url, bool hide_path, char *out,
			size_t n)
{
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	size_t o = 0;
	CURLU *u = NULL;

	if (n == 0)
		return out;
	out[0] = '\0';
	/* Unknown schemes parse too, so a refused ftp:// URL still shows
	 * its host in the message that refuses it. */
	if (url && dl_curl_load(NULL) == 0 && (u = curl_url()) != NULL &&
	    curl_url_set(u, CURLUPART_URL, url,
			 URL_PARSE_FLAGS | CURLU_NON_SUPPORT_SCHEME) ==
		    CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		(void)curl_url_get(u, CURLUPART_PORT, &port, 0);
		(void)curl_url_get(u, CURLUPART_PATH, &path, 0);
		put(out, n, &o, scheme);
		put(out, n, &o, "://");
		put(out, n, &o, host);
		if (port) {
			put(out, n, &o, ":");
			put(out, n, &o, port);
		}
		if (hide_path && path && strcmp(path, "/") != 0 && *path)
			put(out, n, &o, "/...");
		else
			put(out, n, &o, path);
	} else {
		put(out, n, &o, "(invalid URL)");
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	if (u)
		curl_url_cleanup(u);
	/* Control characters would break the one-line log format. */
	for (char *q = out; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	return out;
}

bool url_is_pg(const char *url)
{
	return url && (strncmp(url, "postgres://", 11) == 0 ||
		       strncmp(url, "postgresql://", 13) == 0);
}

/* An option that holds, or points at, a password. */
static bool secret_option(const char *kw)
{
	return strstr(kw, "pass") || strstr(kw, "secret");
}

/* Appends s[0..len) to out (capacity n, *o used), truncating. */
static void put_n(char *out, size_t n, size_t *o, const char *s, size_t len)
{
	while (len-- > 0 && *o + 1 < n)
		out[(*o)++] = *s++;
	out[*o] = '\0';
}

/* A query key s[0..len) that secret_option would name, in any case. */
static bool secret_key(const char *s, size_t len)
{
	char kw[64];

	if (len >= sizeof(kw))
		return true; /* an odd one: hide its value */
	for (size_t i = 0; i < len; i++)
		kw[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	kw[len] = '\0';
	return secret_option(kw);
}

const char *url_store_for_log(const char *url, char *out, size_t n)
{
	size_t o = 0;

	if (n == 0)
		return out;
	out[0] = '\0';
	if (!url_is_pg(url)) {
		put_n(out, n, &o, url ? url : "", url ? strlen(url) : 0);
		return out;
	}
	const char *auth = strstr(url, "://") + 3;
	size_t alen = strcspn(auth, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < alen; i++) /* the last '@' ends userinfo */
		if (auth[i] == '@')
			at = auth + i;
	put_n(out, n, &o, url, (size_t)(auth - url));
	const char *p = auth;
	if (at) {
		const char *colon = memchr(auth, ':', (size_t)(at - auth));
		if (colon) {
			put_n(out, n, &o, auth, (size_t)(colon - auth));
			put_n(out, n, &o, ":***", 4);
			p = at;
		}
	}
	/* The rest, with the value of any secret parameter hidden. */
	bool in_query = false;
	while (*p) {
		if (*p == '#')
			in_query = false;
		else if (*p == '?')
			in_query = true;
		if (in_query && (p[-1] == '?' || p[-1] == '&')) {
			size_t klen = strcspn(p, "=&#");
			if (p[klen] == '=' && secret_key(p, klen)) {
				put_n(out, n, &o, p, klen + 1);
				put_n(out, n, &o, "***", 3);
				p += klen + 1 + strcspn(p + klen + 1, "&#");
				continue;
			}
		}
		put_n(out, n, &o, p, 1);
		p++;
	}
	/* Control characters would break the one-line log format. */
	for (char *q = out; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	return out;
}

int url_check_store(const char *url, struct sc_err *err)
{
	char *msg = NULL;
	int rc = dl_pq_load(err);

	if (rc)
		return rc;
	if (!url_is_pg(url))
		return sc_err_set(err, SC_EINVAL, "not a PostgreSQL URL");
	PQconninfoOption *opts = PQconninfoParse(url, &msg);
	if (!opts) {
		/* libpq's message may quote the URL, password included. */
		if (msg)
			PQfreemem(msg);
		return msg ? sc_err_set(err, SC_EINVAL,
					"libpq cannot parse the URL")
			   : sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val || !secret_option(o->keyword))
			continue;
		rc = sc_err_set(err, SC_EINVAL,
				"the URL holds a password setting (libpq reads "
				"\"%s\" from it); secrets are never written "
				"in the file (use PGPASSWORD or ~/.pgpass)",
				o->keyword);
		break;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (o->val)
			memset(o->val, 0, strlen(o->val));
	PQconninfoFree(opts);
	return rc;
}
