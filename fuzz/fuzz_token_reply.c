/*
 * fuzz_token_reply.c - an OAuth2 token endpoint's reply (http_auth.c), sent
 * by the real fake server of tests/fakes on 127.0.0.1 and read by the real
 * client, so the whole path is fuzzed without exposing its internals.
 *
 * Input: the reply body (up to a NUL), sent with status 200 and
 * Content-Type: application/json. The client's clock is virtual, fixed at
 * 2026-11-29T12:00:00Z; the expiry is read where the provider hands it to
 * its token store.
 *
 * Properties:
 *   1. no undefined behaviour however large expires_in is (issue 11, item
 *      3: 1e308, 2^63-1 or a 20-digit string wrapped the expiry);
 *   2. a token is returned exactly when the body is a JSON object whose
 *      access_token is a non-empty string of visible ASCII, and it is that
 *      string; otherwise the error is SC_EPROTO and does not quote the
 *      token;
 *   3. the expiry is not before now and within 100 years; expires_in an
 *      integer from 1 to 3600 gives exactly that many seconds, no
 *      expires_in the default HTTP_AUTH_DEFAULT_TTL_MS.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fakes/fake_http.h"
#include "http.h"
#include "surecron.h"

#define NOW_MS INT64_C(1795953600000)
#define CENTURY_MS (INT64_C(100) * 366 * 86400000)

static struct fake_http *srv;
static struct sc_clock *clk;
static struct http_client *client;
static char token_url[256];

struct seen {
	int puts;
	int64_t expires_ms;
};

static int st_get(void *ud, const char *provider, char **token,
		  int64_t *expires_at_ms)
{
	return SC_ENOENT;
}

static int st_put(void *ud, const char *provider, const char *token,
		  int64_t expires_at_ms)
{
	struct seen *s = ud;
	s->puts++;
	s->expires_ms = expires_at_ms;
	return 0;
}

/* Started on first use, not in LLVMFuzzerInitialize: the replay runs each
 * input in a forked child, which has no threads of its parent. */
static void start(void)
{
	struct sc_err err = {0};

	if (srv)
		return;
	setenv("FUZZ_TOKEN_CLIENT_SECRET", "fuzz-client-secret", 1);
	srv = fake_http_start();
	clk = sc_clock_virtual_new(NOW_MS);
	struct http_options opt = {.clock = clk, .timeout_ms = 20000};
	client = http_client_new(&opt, &err);
	if (!srv || !clk || !client) {
		fprintf(stderr, "fuzz_token_reply: cannot start: %s\n", err.msg);
		abort();
	}
	fake_http_url(srv, "/token", token_url, sizeof(token_url));
}

static bool visible_ascii(const char *t)
{
	if (!*t)
		return false;
	for (; *t; t++)
		if (*t < 0x21 || *t > 0x7e)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = fuzz_cstr(data, size);
	struct sc_err err = {0};
	struct seen seen = {0};
	char *tok = NULL;

	start();
	fake_http_reset(srv);
	fake_http_push(srv, "/token", 200, "Content-Type: application/json",
		       body, 0);
	struct auth_spec spec = {
		.name = "fz",
		.kind = AUTH_OAUTH2,
		.token_url = token_url,
		.client_id = "fuzz-app",
		.client_secret_env = "FUZZ_TOKEN_CLIENT_SECRET",
	};
	struct http_token_store store = {.ud = &seen, .get = st_get,
					 .put = st_put};
	struct http_auth *a = http_auth_new(&spec, clk, &store, &err);
	if (!a) {
		fprintf(stderr, "fuzz_token_reply: %s\n", err.msg);
		abort();
	}
	int rc = http_auth_token(a, client, NULL, &tok, &err);

	json_t *root = json_loads(body, 0, NULL);
	json_t *at = json_object_get(root, "access_token");
	json_t *ei = json_object_get(root, "expires_in");
	const char *want = json_string_value(at);
	bool usable = json_is_object(root) && want && visible_ascii(want) &&
		      strlen(want) == json_string_length(at);
	if (!usable) {
		FUZZ_CHECK(rc == SC_EPROTO, data, size,
			   "a reply without a usable token gave %d: %s", rc,
			   err.msg);
		FUZZ_CHECK(!want || strlen(want) < 4 || !strstr(err.msg, want),
			   data, size, "the error quotes the token: %s",
			   err.msg);
		goto done;
	}
	FUZZ_CHECK(rc == 0 && tok && strcmp(tok, want) == 0, data, size,
		   "a usable token gave %d (%s)", rc, err.msg);
	FUZZ_CHECK(seen.puts == 1, data, size, "%d store puts", seen.puts);
	int64_t ttl = seen.expires_ms - NOW_MS;
	FUZZ_CHECK(seen.expires_ms >= NOW_MS && ttl <= CENTURY_MS, data, size,
		   "expires_in gave an expiry %lld ms from now",
		   (long long)ttl);
	if (!ei)
		FUZZ_CHECK(ttl == HTTP_AUTH_DEFAULT_TTL_MS, data, size,
			   "no expires_in gave %lld ms", (long long)ttl);
	if (json_is_integer(ei) && json_integer_value(ei) >= 1 &&
	    json_integer_value(ei) <= 3600)
		FUZZ_CHECK(ttl == json_integer_value(ei) * 1000, data, size,
			   "expires_in %lld gave %lld ms",
			   (long long)json_integer_value(ei), (long long)ttl);
done:
	json_decref(root);
	http_secret_free(tok);
	http_auth_free(a);
	free(body);
	return 0;
}
