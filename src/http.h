/*
 * http.h - the HTTP client (libcurl) and its auth providers.
 *
 * Two objects:
 *
 *   struct http_client  one reused curl easy handle (so connections, DNS and
 *                       TLS sessions are reused). NOT thread-safe: a client
 *                       is used by one thread at a time; give each worker
 *                       thread its own.
 *   struct http_auth    one auth provider of the config (`auth:` section,
 *                       struct auth_spec) with its token cache. Thread-safe:
 *                       one http_auth is shared by every thread and client
 *                       that calls the same API.
 *
 * The rules every request follows (docs/internals/http.md):
 *   - TLS peer and host verification are always on. Only the test-only
 *     option `insecure_skip_verify` turns them off, and it logs a warning
 *     on every client that uses it.
 *   - Redirects are never followed (a 3xx is a failure carrying its status);
 *     only http:// and https:// URLs are accepted.
 *   - A response body larger than max_body fails with SC_ETOOBIG.
 *   - With an auth provider: a 401 drops the cached token, obtains a new one
 *     (one refresh shared by every thread that saw the same token fail) and
 *     sends the request once more; a second 401 fails as is. 403, 429 and
 *     5xx never cause a refresh. A bearer provider (static token from the
 *     environment) cannot refresh, so its 401 fails at once.
 *   - 429 and 503 responses carry a retry-after hint in err->retry_after_ms
 *     from `Retry-After` (delta seconds or HTTP-date, measured against the
 *     client's clock) or, failing that, from the provider's reset header.
 *     A malformed value gives no hint.
 *   - Errors: err->http_status is the status of the response (0 for a
 *     transport failure: refused, timed out, TLS, DNS...). err->msg is
 *     "METHOD URL: HTTP 429" or "METHOD URL: connection refused", where URL
 *     has no query string, fragment or user:password. Decide on
 *     err->http_status (see http_status_retryable), never on the message.
 *   - err->ambiguous says whether a failed request may have been received
 *     (and acted on) all the same. It is false only when nothing can have
 *     reached the server: the URL was refused, the host did not resolve,
 *     the connection or (https) the TLS handshake never completed,
 *     including a certificate that does not verify; or when the server
 *     answered with a definite non-2xx status. Once the connection is up,
 *     any failure short of a whole response is ambiguous: a timeout
 *     waiting for the answer, an empty reply, a reset, a body cut short,
 *     a 2xx whose body passed max_body. Callers that must not send twice
 *     silently (deliveries) decide on this flag, never on the message.
 *   - Tokens and secrets never appear in logs or err->msg: logs name request
 *     headers but never print their values.
 */
#ifndef SURECRON_HTTP_H
#define SURECRON_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "surecron.h"

#define HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000
#define HTTP_DEFAULT_TIMEOUT_MS 30000
#define HTTP_DEFAULT_MAX_BODY (1024 * 1024)

/* Client settings. Zero-initialise, then set what differs from defaults. */
struct http_options {
	int64_t connect_timeout_ms; /* 0: 10 s */
	int64_t timeout_ms;         /* whole exchange; 0: 30 s */
	size_t max_body;            /* response body cap; 0: 1 MiB */
	const char *ca_bundle;      /* PEM file of trusted CAs; NULL: system's */
	struct sc_clock *clock;     /* for HTTP-date hints; NULL: real clock */
	const char *user_agent;     /* NULL: "surecron/VERSION" */
	/* TESTS ONLY: skip TLS verification. Logs a warning per client. */
	bool insecure_skip_verify;
};

struct http_client;
struct http_auth;

/*
 * Creates a client. opt may be NULL (all defaults); its strings are copied.
 * Returns NULL when out of memory or when curl cannot start (err says so).
 */
struct http_client *http_client_new(const struct http_options *opt,
				    struct sc_err *err);

/* Frees a client and closes its connections. NULL ok. */
void http_client_free(struct http_client *c);

/* One request. Zero-initialise, then fill in. Everything is borrowed. */
struct http_request {
	const char *method;          /* NULL: "GET" */
	const char *url;             /* the URL rule of url.h applies: no
					userinfo; with auth, url_is_secret
					or carries_secret, https or http to
					loopback only (URL_SECRET) */
	const char *const *headers;  /* NULL-terminated "Name: value", or NULL */
	const char *body;            /* NULL: no body */
	size_t body_len;             /* bytes of body; 0 with body: strlen */
	struct http_auth *auth;      /* NULL: no Authorization added */
	const char *reset_header;    /* rate-limit reset header; NULL: the
					auth provider's, if any */
	int64_t timeout_ms;          /* 0: the client's */
	int64_t connect_timeout_ms;  /* 0: the client's */
	bool url_is_secret;          /* the URL itself is a credential (chat
					webhooks carry their key in the path):
					logs and errors show scheme and host
					only */
	bool carries_secret;         /* headers or body hold a credential
					(the token request's client secret) */
	/* Called on the calling thread while the exchange lasts: often
	 * while data moves, about once a second while it waits (libcurl's
	 * progress callback). It cannot stop the exchange. The worker keeps
	 * a job's lease with it through a slow answer (issue 42). NULL:
	 * none. */
	void (*keep)(void *ud);
	void *keep_ud;
};

/*
 * What came back. Zero-initialise before the first use; release with
 * http_response_dispose (the struct may then be reused).
 */
struct http_response {
	int status;      /* 0: no response arrived */
	char *body;      /* NUL-terminated (binary bodies may hold NULs) */
	size_t body_len;
	char *headers;   /* the final response's header block, raw lines */
};

/* Frees what resp holds and zeroes it. NULL ok. */
void http_response_dispose(struct http_response *resp);

/*
 * Copies the value of response header `name` (case-insensitive, first
 * occurrence, surrounding spaces trimmed) into out (size n, truncated).
 * Returns true when the header is present.
 */
bool http_response_header(const struct http_response *resp, const char *name,
			  char *out, size_t n);

/*
 * Sends req with client c (the only thread using c right now) and waits
 * for the answer.
 *
 * Returns 0 when a 2xx response arrived; resp (may be NULL) then holds it.
 * Otherwise a negative code and err (may be NULL) filled as the header
 * comment says:
 *   SC_EHTTP      non-2xx status (err->http_status), or a transport
 *                 failure (err->http_status == 0)
 *   SC_ETIMEDOUT  connect or total timeout (http_status 0)
 *   SC_ETOOBIG    the response body passed max_body (http_status: the
 *                 response's status)
 *   SC_EINVAL     a URL the rule of url.h refuses (checked before any
 *                 connection, the token fetch included), or a bad method
 *   SC_ENOMEM     out of memory
 *   any code of http_auth_token when the token could not be obtained
 * and err->ambiguous set as the header comment says.
 * Exception to "outputs untouched on failure": when a non-2xx response
 * arrived, resp holds it (status, headers, body) so callers can show the
 * server's explanation. resp's previous content is disposed first.
 * The body never holds the request's credentials: the token (and, with
 * url_is_secret, the URL's path, its long segments and its query; in a
 * non-2xx body, any URL's query) is overwritten with '*' where a server
 * echoed it, since bodies end up quoted in errors and the ledger.
 */
int http_do(struct http_client *c, const struct http_request *req,
	    struct http_response *resp, struct sc_err *err);

/*
 * True when a failure with this HTTP status may succeed later: 0
 * (transport), 408, 425, 429 and 5xx. Thread-safe.
 */
bool http_status_retryable(int http_status);

/*
 * Parses a Retry-After value (delta seconds or HTTP-date) into
 * milliseconds from now_ms. Returns true with *out_ms > 0 on success;
 * false for malformed, negative, absurd (> 1 year) or past values.
 * Thread-safe.
 */
bool http_parse_retry_after(const char *value, int64_t now_ms,
			    int64_t *out_ms);

/*
 * Parses a provider's rate-limit reset header (delta seconds, Unix epoch
 * seconds above 10^9, or an HTTP-date) as http_parse_retry_after does.
 * http_do applies it; tests and fuzz/fuzz_http_hint.c call it directly.
 */
bool http_parse_reset(const char *value, int64_t now_ms, int64_t *out_ms);

/* ------------------------------------------------------------------ */
/* Auth providers (http_auth.c)                                       */
/* ------------------------------------------------------------------ */

/*
 * Optional persistence of access tokens (e.g. the store's token cache), so
 * a restarted daemon does not fetch a new token at once. Every callback is
 * called without the provider's lock held, possibly from several threads.
 * They must not log tokens.
 *   get   on a cache miss: 0 and a malloc'd *token (the provider wipes and
 *         frees it) with its expiry, or SC_ENOENT (or any error: ignored)
 *   put   after a token was obtained; errors are logged and ignored
 *   drop  after a token was rejected with 401; errors are ignored
 */
struct http_token_store {
	void *ud;
	int (*get)(void *ud, const char *provider, char **token,
		   int64_t *expires_at_ms);
	int (*put)(void *ud, const char *provider, const char *token,
		   int64_t expires_at_ms);
	int (*drop)(void *ud, const char *provider);
};

/* How long a token without expires_in is trusted. */
#define HTTP_AUTH_DEFAULT_TTL_MS (5 * 60 * 1000)
/* The longest a token is trusted, whatever its reply's expires_in says:
 * a larger (or absurd: 1e308, 2^63-1, a 20-digit string) expires_in is
 * cut to this, so the cache expiry is plain int64 arithmetic and a token
 * is fetched again at least once a day. */
#define HTTP_AUTH_MAX_TTL_MS (24LL * 3600 * 1000)
/* A cached token is reused until this long before its expiry. */
#define HTTP_AUTH_EARLY_MS (60 * 1000)

/*
 * Creates a provider from spec (copied; spec may be freed afterwards).
 * Secrets are read from the environment now (client_secret_env for oauth2,
 * token_env for bearer); a missing variable fails with SC_ECONFIG naming
 * the variable, never its value. clock (NULL: real) decides expiry.
 * store may be NULL (in-memory cache only); it is copied.
 * Returns NULL on failure, with err set.
 */
struct http_auth *http_auth_new(const struct auth_spec *spec,
				struct sc_clock *clock,
				const struct http_token_store *store,
				struct sc_err *err);

/* Wipes the secrets and cached token and frees the provider. Call only
 * when no thread uses it any more. NULL ok. */
void http_auth_free(struct http_auth *a);

/* The provider's name (from the spec). */
const char *http_auth_name(const struct http_auth *a);

/*
 * Puts a valid access token into *token (malloc'd; the caller wipes it
 * with http_secret_free). Uses the cache when the token is still good;
 * otherwise fetches one with client c (c is used by the calling thread
 * only). When `failed` is non-NULL, it is the token a request just got 401
 * with: it is dropped if it is still the cached one, and a newer cached
 * token is returned as is (single-flight: concurrent callers wait for one
 * fetch instead of each fetching). Thread-safe.
 * Returns 0, or SC_EHTTP / SC_ETIMEDOUT (token endpoint unreachable or
 * non-2xx: err->http_status is the endpoint's), SC_EPROTO (no
 * access_token in the reply), SC_ECONFIG (bearer token missing), SC_ENOMEM.
 */
int http_auth_token(struct http_auth *a, struct http_client *c,
		    const char *failed, char **token, struct sc_err *err);

/* True when the provider can obtain a new token after a 401 (oauth2). */
bool http_auth_can_refresh(const struct http_auth *a);

/* The provider's rate-limit reset header, or NULL. */
const char *http_auth_reset_header(const struct http_auth *a);

/* Wipes and frees a secret string. NULL ok. */
void http_secret_free(char *s);

#endif
