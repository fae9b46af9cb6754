/*
 * target_http.c - the one POST of the HTTP targets (slack, webhook).
 *
 * Invariants:
 *   - the URL is read from the target's variable at send time and passes
 *     the URL rule for secrets (url.h: no userinfo, https:// except to a
 *     loopback host) before anything is sent;
 *   - no error message or log line holds the URL (webhook URLs carry
 *     their secret in the path): errors name the target, and http.c's
 *     own "METHOD URL: " prefix is cut off;
 *   - redirects are not followed, and a 2xx is a success even when its
 *     body passed the cap (the target took the copy);
 *   - err->ambiguous is http.c's verdict, copied: true when the request
 *     may have been received.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "http.h"
#include "target.h"
#include "text.h"
#include "url.h"

/* The reason of an http error without its "METHOD URL: " prefix, which
 * may hold a secret path. */
static const char *strip_url(const char *msg, const char *logurl)
{
	const char *p = strstr(msg, logurl);

	if (p && strncmp(p + strlen(logurl), ": ", 2) == 0)
		return p + strlen(logurl) + 2;
	return "request failed";
}

int target_http_post(const struct target_copy *s, const char *body,
		     const char *const *headers, struct sc_err *err)
{
	const struct target_spec *t = s->target;
	const char *url = t->url_env ? getenv(t->url_env) : NULL;
	const char *hdrs[16];
	struct sc_err herr = {0};
	struct http_response resp = {0};
	char logurl[512], ex[TEXT_EXCERPT_SIZE];
	size_t nh = 0;
	int rc;

	if (!t->url_env)
		return sc_err_set(err, SC_ECONFIG, "target %s: no url_env",
				  t->name);
	if (!url || !*url)
		return sc_err_set(err, SC_ECONFIG, "target %s: environment "
				  "variable %s is not set", t->name,
				  t->url_env);
	rc = url_check(url, URL_SECRET, &herr);
	if (rc == SC_EINVAL)
		return sc_err_set(err, SC_ECONFIG, "target %s: %s (from %s)",
				  t->name, herr.msg, t->url_env);
	if (rc)
		return sc_err_set(err, rc, "target %s: %s", t->name, herr.msg);
	hdrs[nh++] = "Content-Type: application/json";
	for (size_t i = 0; headers && headers[i] && nh < 15; i++)
		hdrs[nh++] = headers[i];
	hdrs[nh] = NULL;
	struct http_options opt = {
		.connect_timeout_ms = t->connect_timeout_ms > 0
			? t->connect_timeout_ms : TARGET_DEFAULT_CONNECT_MS,
		.timeout_ms = t->timeout_ms > 0 ? t->timeout_ms
						: TARGET_DEFAULT_TIMEOUT_MS,
		.max_body = 64 * 1024,
		.clock = s->clock,
	};
	/* One client per send: deliveries are rare, and a client is not
	 * thread-safe, so sharing one would need a lock for no gain. */
	struct http_client *c = http_client_new(&opt, &herr);
	if (!c)
		return sc_err_set(err, herr.code ? herr.code : SC_ENOMEM,
				  "target %s: %s", t->name, herr.msg);
	struct http_request req = {
		.method = "POST",
		.url = url,
		.headers = hdrs,
		.body = body,
		.body_len = strlen(body),
		.url_is_secret = true,
		.keep = s->keep,
		.keep_ud = s->keep_ud,
	};
	rc = http_do(c, &req, &resp, &herr);
	http_client_free(c);
	/* A 2xx whose body passed the cap: the target took the copy, and
	 * what it said beyond 64 KiB is of no use to a delivery. Failing it
	 * would only send it again. */
	if (rc == SC_ETOOBIG && herr.http_status >= 200 &&
	    herr.http_status <= 299)
		rc = 0;
	if (rc) {
		struct sc_err out = {0};
		url_for_log(url, true, logurl, sizeof(logurl));
		if (herr.http_status) {
			text_excerpt(ex, sizeof(ex), resp.body, resp.body_len);
			err_set_http(&out, SC_EDELIVERY, herr.http_status,
				     herr.retry_after_ms,
				     "target %s: HTTP %d%s%s", t->name,
				     herr.http_status, *ex ? ": " : "", ex);
		} else {
			err_set_http(&out, SC_EDELIVERY, 0, herr.retry_after_ms,
				     "target %s: %s%s", t->name,
				     strip_url(herr.msg, logurl),
				     herr.ambiguous ? " (the request may have "
						      "arrived)" : "");
		}
		/* The one fact the outbox needs: may this copy have been
		 * taken? (http.h: err->ambiguous) */
		out.ambiguous = herr.ambiguous;
		/* Nothing sent because the runner is out of descriptors or
		 * memory: the runner's failure, not the target's. */
		rc = err_is_runner(herr.code) && !herr.ambiguous
			     ? herr.code : SC_EDELIVERY;
		out.code = rc;
		err_copy(err, &out);
	}
	http_response_dispose(&resp);
	return rc;
}
