/*
 * fuzz_url.c - the URL rule and the log form of a URL (url.h), judged
 * against libcurl's own parser (linked directly, the same library the
 * rule loads lazily).
 *
 * Input: one URL (bytes up to the first NUL).
 *
 * Properties, for both uses (URL_PLAIN, URL_SECRET):
 *   1. url_check returns 0, SC_EINVAL or SC_ENOMEM, and url_parse agrees;
 *   2. accepted => libcurl parses it (no scheme guessing), its scheme is
 *      http or https, it reports no user and no password (so libcurl
 *      sends no credentials from the URL), and with URL_SECRET the scheme
 *      is https or the host is 127.x.x.x, [::1] or localhost;
 *   3. accepted => the handle url_parse gives to libcurl is the URL
 *      libcurl reads from the string: what is checked is what is sent;
 *   4. a refusal's message is a fixed text, prefixed at most with
 *      libcurl's scheme://host: no user, password, path or query of the
 *      URL can be in it;
 *   5. the log form is exactly libcurl's scheme://host[:port]path (with
 *      control characters as '?'), or "(invalid URL)" when libcurl cannot
 *      parse it: whatever libcurl would send as user or password is not
 *      in it, whatever the slashes, '@' or percent-encoding.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "text.h"
#include "url.h"

struct view {
	bool ok;
	char *scheme, *host, *port, *path, *user, *password, *url;
};

static char *part(CURLU *u, CURLUPart p)
{
	char *v = NULL;
	if (curl_url_get(u, p, &v, 0) != CURLUE_OK) {
		curl_free(v);
		return NULL;
	}
	return v;
}

/* libcurl's reading of s, with the given curl_url_set flags. */
static struct view view_of(const char *s, unsigned flags)
{
	struct view w = {0};
	CURLU *u = curl_url();

	if (!u)
		abort();
	if (curl_url_set(u, CURLUPART_URL, s, flags) == CURLUE_OK) {
		w.scheme = part(u, CURLUPART_SCHEME);
		w.host = part(u, CURLUPART_HOST);
		w.port = part(u, CURLUPART_PORT);
		w.path = part(u, CURLUPART_PATH);
		w.user = part(u, CURLUPART_USER);
		w.password = part(u, CURLUPART_PASSWORD);
		w.url = part(u, CURLUPART_URL);
		w.ok = w.scheme && w.host;
	}
	curl_url_cleanup(u);
	return w;
}

static void view_free(struct view *w)
{
	curl_free(w->scheme);
	curl_free(w->host);
	curl_free(w->port);
	curl_free(w->path);
	curl_free(w->user);
	curl_free(w->password);
	curl_free(w->url);
}

static bool loopback(const char *host)
{
	struct in_addr a4;
	if (strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0)
		return true;
	return strncmp(host, "127.", 4) == 0 &&
	       inet_pton(AF_INET, host, &a4) == 1;
}

/* A refusal's message is one of the fixed texts, prefixed with at most
 * libcurl's scheme://host (each cut to 40 bytes, as url.c quotes them):
 * nothing else of the URL can be in it. */
static bool known_message(const char *msg, const struct view *w)
{
	static const char *const fixed[] = {
		": unsupported scheme (use https://)",
		": unsupported scheme (use https:// or http://)",
		": the URL holds a user name or password; secrets are never "
		"written in a URL",
		": plain http is only allowed to a loopback host (127.0.0.0/8, "
		"[::1], localhost); use https://",
	};
	char raw[600], pre[2400];

	if (strcmp(msg, "not a valid http(s) URL") == 0 ||
	    strcmp(msg, "no URL") == 0)
		return true;
	if (!w->ok)
		return false;
	/* Every error message is cleaned for a person (err.c, text.h). */
	snprintf(raw, sizeof(raw), "%.40s://%.40s", w->scheme, w->host);
	text_clean(pre, sizeof(pre), raw, 0);
	size_t n = strlen(pre);
	if (strncmp(msg, pre, n) != 0)
		return false;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (strcmp(msg + n, fixed[i]) == 0)
			return true;
	return false;
}

static void judge(const uint8_t *data, size_t size, const char *s,
		  enum url_use use, const struct view *w)
{
	struct sc_err err = {0}, perr = {0};
	struct Curl_URL *h = NULL;
	int rc = url_check(s, use, &err);
	int prc = url_parse(s, use, &h, &perr);

	FUZZ_CHECK(rc == 0 || rc == SC_EINVAL || rc == SC_ENOMEM, data, size,
		   "url_check returned %d (%s)", rc, err.msg);
	FUZZ_CHECK(rc == prc, data, size, "url_check %d, url_parse %d", rc,
		   prc);
	if (rc == 0) {
		FUZZ_CHECK(w->ok, data, size, "accepted, libcurl cannot parse");
		bool https = strcmp(w->scheme, "https") == 0;
		FUZZ_CHECK(https || strcmp(w->scheme, "http") == 0, data, size,
			   "accepted scheme %s", w->scheme);
		FUZZ_CHECK(!w->user && !w->password, data, size,
			   "accepted, libcurl would send user [%s] password "
			   "[%s]",
			   w->user ? w->user : "", w->password ? w->password : "");
		FUZZ_CHECK(use == URL_PLAIN || https || loopback(w->host), data,
			   size, "secret over plain http to %s", w->host);
		char *sent = NULL;
		FUZZ_CHECK(h && curl_url_get(h, CURLUPART_URL, &sent, 0) ==
					CURLUE_OK,
			   data, size, "no handle for an accepted URL");
		FUZZ_CHECK(w->url && strcmp(sent, w->url) == 0, data, size,
			   "checked %s, libcurl reads %s", sent,
			   w->url ? w->url : "(nothing)");
		curl_free(sent);
	} else {
		FUZZ_CHECK(h == NULL, data, size, "a handle for a refused URL");
		FUZZ_CHECK(rc == SC_ENOMEM || known_message(err.msg, w), data,
			   size, "message not built from scheme and host: %s",
			   err.msg);
	}
	url_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	char log[512], want[1200];

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	/* The rule's parse (flags 0) and the log form's (unknown schemes
	 * too, so refused URLs still show a host). */
	struct view w = view_of(s, 0);
	struct view lw = view_of(s, CURLU_NON_SUPPORT_SCHEME);

	judge(data, size, s, URL_PLAIN, &w);
	judge(data, size, s, URL_SECRET, &w);

	for (int hide = 0; hide < 2; hide++) {
		url_for_log(s, hide, log, sizeof(log));
		if (!lw.ok) {
			FUZZ_CHECK(strcmp(log, "(invalid URL)") == 0, data, size,
				   "log form of an invalid URL: %s", log);
			continue;
		}
		const char *path = lw.path ? lw.path : "";
		if (hide && *path && strcmp(path, "/") != 0)
			path = "/...";
		snprintf(want, sizeof(want), "%s://%s%s%s%s", lw.scheme,
			 lw.host, lw.port ? ":" : "", lw.port ? lw.port : "",
			 path);
		want[sizeof(log) - 1] = '\0'; /* the log form truncates */
		for (char *q = want; *q; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				*q = '?';
		FUZZ_CHECK(strcmp(log, want) == 0, data, size,
			   "log form %s, libcurl's parts give %s", log, want);
	}
	view_free(&w);
	view_free(&lw);
	free(s);
	return 0;
}
