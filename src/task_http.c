/*
 * task_http.c - the `http` task kind: one request through the http
 * client; a 2xx body goes through the same output protocol as a command's
 * stdout (task_output.c).
 *
 * Invariants:
 *   - the URL passes the URL rule (url.h) before anything is sent: no
 *     userinfo ever, and a request that carries credentials (auth set)
 *     goes only to https:// or a loopback host, like deliveries; a
 *     refused URL is a permanent config failure;
 *   - a non-2xx answer (or one that differs from expect_status) is a
 *     failure carrying the status and the server's retry-after hint;
 *     4xx answers that a retry cannot change (http_status_retryable says
 *     no: 400, 401 after the one refresh, 403, 404, ...) are permanent;
 *   - tokens never reach the task's messages (the client guarantees it for
 *     its own errors; our excerpts come from the response body only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "http.h"
#include "task.h"
#include "text.h"
#include "url.h"

#define HTTP_TASK_DEFAULT_TIMEOUT_MS 60000

int task_http_run(const struct task_spec *spec, const struct task_ctx *ctx,
		  struct task_result *out)
{
	struct http_auth *auth = NULL, *own = NULL;
	struct http_client *c = NULL;
	struct http_response resp = {0};
	struct sc_err herr = {0};
	char ex[TEXT_EXCERPT_SIZE];
	int rc;

	if (!spec->url || !*spec->url)
		return task_fail(out, spec->name, SC_ECONFIG, "no url");
	/* The URL rule before anything else (a token fetch included): a
	 * refused URL is a config error, permanent. With auth a token goes
	 * with the request, so it needs https (or http to loopback). */
	rc = url_check(spec->url, spec->auth ? URL_SECRET : URL_PLAIN, &herr);
	if (rc) {
		task_fail(out, spec->name, rc == SC_EINVAL ? SC_ECONFIG : rc,
			  "%s", herr.msg);
		out->err.permanent = rc == SC_EINVAL;
		return out->err.code;
	}
	if (spec->auth) {
		for (size_t i = 0; i < ctx->n_auths && !auth; i++)
			if (strcmp(http_auth_name(ctx->auths[i]), spec->auth) == 0)
				auth = ctx->auths[i];
		if (!auth) {
			const struct auth_spec *as = config_auth(ctx->config,
								 spec->auth);
			if (!as) {
				task_fail(out, spec->name, SC_ECONFIG,
					  "unknown auth %s", spec->auth);
				out->err.permanent = true;
				return out->err.code;
			}
			own = http_auth_new(as, ctx->clock, ctx->tokens, &herr);
			if (!own) {
				task_fail(out, spec->name, herr.code, "%s",
					  herr.msg);
				out->err.permanent = herr.code == SC_ECONFIG;
				return out->err.code;
			}
			auth = own;
		}
	}
	struct http_options opt = {
		.timeout_ms = spec->timeout_ms > 0 ? spec->timeout_ms
						   : HTTP_TASK_DEFAULT_TIMEOUT_MS,
		.max_body = spec->max_output ? spec->max_output
					     : TASK_DEFAULT_MAX_OUTPUT,
		.clock = ctx->clock,
	};
	c = http_client_new(&opt, &herr);
	if (!c) {
		rc = task_fail(out, spec->name, herr.code ? herr.code : SC_ENOMEM,
			       "%s", herr.msg);
		goto done;
	}
	struct http_request req = {
		.method = spec->method ? spec->method : "GET",
		.url = spec->url,
		.headers = (const char *const *)spec->headers,
		.body = spec->body,
		.auth = auth,
		.keep = ctx->keep,
		.keep_ud = ctx->tick_ud,
	};
	if (ctx->start_ns)
		clock_sleep_until_ns(ctx->clock, ctx->start_ns);
	out->started_ns = clock_now_ns(ctx->clock);
	rc = http_do(c, &req, &resp, &herr);
	bool expected = spec->expect_status ? resp.status == spec->expect_status
					    : rc == 0;
	if (expected) {
		rc = task_output_parse(spec->name, resp.body ? resp.body : "",
				       resp.body_len, out);
		goto done;
	}
	if (rc == 0) /* a 2xx other than the one expected */
		sc_err_set(&herr, SC_EHTTP, "%s: HTTP %d, expected %d",
			   req.method, resp.status, spec->expect_status);
	text_excerpt(ex, sizeof(ex), resp.body, resp.body_len);
	rc = task_fail(out, spec->name, herr.code ? herr.code : SC_EHTTP,
		       "%s%s%s", herr.msg, *ex && resp.status ? ": " : "",
		       resp.status ? ex : "");
	out->err.http_status = herr.http_status ? herr.http_status : resp.status;
	out->err.retry_after_ms = herr.retry_after_ms;
	out->err.permanent = out->err.http_status >= 400 &&
			     out->err.http_status < 500 &&
			     !http_status_retryable(out->err.http_status);
done:
	http_response_dispose(&resp);
	http_client_free(c);
	http_auth_free(own);
	return rc;
}
