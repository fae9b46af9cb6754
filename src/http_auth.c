/*
 * http_auth.c - auth providers: OAuth2 client credentials (RFC 6749 4.4)
 * with a shared token cache, and static bearer tokens from the environment.
 *
 * Invariants (struct http_auth, guarded by mu):
 *   - At most one token fetch runs per provider (`fetching`); every other
 *     thread that needs a token meanwhile waits on cv and then uses the
 *     fetched token, or returns the fetch's error, without fetching again.
 *     This is the single-flight that keeps a burst of 401s from stampeding
 *     the token endpoint.
 *   - A token that got 401 is dropped only when it is still the cached one:
 *     a caller holding an older token that failed gets the newer cached
 *     token instead of forcing another refresh.
 *   - The cached token is reused until HTTP_AUTH_EARLY_MS (60 s) before its
 *     expiry, or half its lifetime for tokens that live under 2 minutes (so
 *     a 30 s token is still usable at all). A token response without
 *     expires_in lives HTTP_AUTH_DEFAULT_TTL_MS (5 min), never forever;
 *     none lives over HTTP_AUTH_MAX_TTL_MS (24 h), whatever it says.
 *   - The client secret goes only to a token_url that passes the URL rule
 *     for secrets (url.h): checked when the provider is made, and again
 *     by http_do on every token request (carries_secret).
 *   - Secrets (client secret, bearer token, access tokens, request bodies
 *     and replies that carry them) are wiped before their memory is freed
 *     and never written to a log line or an sc_err message.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "http.h"
#include "log.h"
#include "url.h"

struct http_auth {
	char *name;
	enum auth_kind kind;
	char *token_url;
	char *client_id;
	char *secret;        /* oauth2 client secret, or the bearer token */
	char *scope;
	char *reset_header;
	bool client_auth_body;
	struct sc_clock *clock;
	struct http_token_store store;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *token;         /* cached access token, NULL: none */
	int64_t obtained_ms;
	int64_t expires_ms;
	bool fetching;       /* a thread is fetching right now */
	uint64_t n_fetches;  /* fetches finished so far */
	struct sc_err last;  /* outcome of the latest fetch (code 0: ok) */
};

void http_secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

static char *xdup(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *p = strdup(s);
	if (!p)
		*oom = true;
	return p;
}

struct http_auth *http_auth_new(const struct auth_spec *spec,
				struct sc_clock *clock,
				const struct http_token_store *store,
				struct sc_err *err)
{
	struct http_auth *a;
	bool oom = false;
	const char *env_name;

	if (!spec || !spec->name)
		return sc_err_set(err, SC_EINVAL, "auth: no provider given"),
		       NULL;
	if (spec->kind == AUTH_OAUTH2) {
		if (!spec->token_url || !spec->client_id ||
		    !spec->client_secret_env) {
			sc_err_set(err, SC_ECONFIG,
				   "auth %s: oauth2 needs token_url, client_id "
				   "and client_secret_env", spec->name);
			return NULL;
		}
		/* The client secret goes to token_url: the URL rule for
		 * secrets, before anything is read or sent. */
		struct sc_err uerr = {0};
		int rc = url_check(spec->token_url, URL_SECRET, &uerr);
		if (rc) {
			sc_err_set(err, rc == SC_EINVAL ? SC_ECONFIG : rc,
				   "auth %s: token_url: %s", spec->name,
				   uerr.msg);
			return NULL;
		}
		env_name = spec->client_secret_env;
	} else if (spec->kind == AUTH_BEARER) {
		if (!spec->token_env) {
			sc_err_set(err, SC_ECONFIG,
				   "auth %s: bearer needs token_env",
				   spec->name);
			return NULL;
		}
		env_name = spec->token_env;
	} else {
		sc_err_set(err, SC_ECONFIG, "auth %s: unknown kind",
			   spec->name);
		return NULL;
	}
	const char *secret = getenv(env_name);
	if (!secret || !*secret) {
		sc_err_set(err, SC_ECONFIG,
			   "auth %s: environment variable %s is not set",
			   spec->name, env_name);
		return NULL;
	}
	if (strpbrk(secret, "\r\n")) {
		sc_err_set(err, SC_ECONFIG,
			   "auth %s: environment variable %s holds a line "
			   "break", spec->name, env_name);
		return NULL;
	}

	a = calloc(1, sizeof(*a));
	if (!a) {
		sc_err_set(err, SC_ENOMEM, "auth %s: out of memory", spec->name);
		return NULL;
	}
	a->kind = spec->kind;
	a->name = xdup(spec->name, &oom);
	a->token_url = xdup(spec->token_url, &oom);
	a->client_id = xdup(spec->client_id, &oom);
	a->scope = xdup(spec->scope, &oom);
	a->reset_header = xdup(spec->reset_header, &oom);
	a->secret = xdup(secret, &oom);
	a->client_auth_body = spec->client_auth_body;
	a->clock = clock ? clock : sc_clock_real();
	if (store)
		a->store = *store;
	if (oom) {
		sc_err_set(err, SC_ENOMEM, "auth %s: out of memory", spec->name);
		goto fail;
	}
	if (pthread_mutex_init(&a->mu, NULL) != 0)
		goto fail;
	if (pthread_cond_init(&a->cv, NULL) != 0) {
		pthread_mutex_destroy(&a->mu);
		goto fail;
	}
	return a;
fail:
	sc_err_set(err, SC_ENOMEM, "auth %s: cannot initialise", spec->name);
	free(a->name);
	free(a->token_url);
	free(a->client_id);
	free(a->scope);
	free(a->reset_header);
	http_secret_free(a->secret);
	free(a);
	return NULL;
}

void http_auth_free(struct http_auth *a)
{
	if (!a)
		return;
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	http_secret_free(a->token);
	http_secret_free(a->secret);
	http_secret_free(a->client_id); /* an identifier, but wipe it too */
	free(a->name);
	free(a->token_url);
	free(a->scope);
	free(a->reset_header);
	free(a);
}

const char *http_auth_name(const struct http_auth *a)
{
	return a->name;
}

bool http_auth_can_refresh(const struct http_auth *a)
{
	return a->kind == AUTH_OAUTH2;
}

const char *http_auth_reset_header(const struct http_auth *a)
{
	return a->reset_header;
}

/* True when a token obtained at obtained_ms, expiring at expires_ms, may
 * still be used at now_ms. */
static bool still_good(int64_t obtained_ms, int64_t expires_ms,
		       int64_t now_ms)
{
	int64_t early = HTTP_AUTH_EARLY_MS;
	int64_t life = expires_ms - obtained_ms;

	if (life < 2 * early)
		early = life > 0 ? life / 2 : 0;
	return now_ms < expires_ms - early;
}

/* ---- the token request ---- */

/*
 * The lifetime a token reply's expires_in gives, in milliseconds, always
 * within [1, HTTP_AUTH_MAX_TTL_MS] or HTTP_AUTH_DEFAULT_TTL_MS. The value
 * comes from a peer, so it is compared against the cap *before* any
 * multiplication (an integer 2^63-1, a real 1e308 or a 20-digit string
 * would overflow int64 otherwise). Accepted: a positive JSON number, or a
 * string of decimal digits with an optional fraction (some servers quote
 * it). Anything else, zero or negative, gives the default; above the cap
 * gives the cap and sets *capped.
 */
static int64_t expires_in_ms(const json_t *ei, bool *capped)
{
	const int64_t max_s = HTTP_AUTH_MAX_TTL_MS / 1000;
	double v = 0;

	*capped = false;
	if (json_is_integer(ei)) {
		json_int_t i = json_integer_value(ei);
		if (i <= 0)
			return HTTP_AUTH_DEFAULT_TTL_MS;
		if (i > max_s) {
			*capped = true;
			return HTTP_AUTH_MAX_TTL_MS;
		}
		return (int64_t)i * 1000;
	}
	if (json_is_real(ei)) {
		v = json_real_value(ei);
	} else if (json_is_string(ei)) {
		/* Digits saturate one past the cap, so no length overflows. */
		const char *p = json_string_value(ei);
		int64_t secs = 0;
		size_t n = 0;
		for (; *p >= '0' && *p <= '9'; p++, n++)
			if (secs <= max_s)
				secs = secs * 10 + (*p - '0');
		if (n > 0 && *p == '.') {
			for (p++; *p >= '0' && *p <= '9'; p++)
				;
		}
		if (n == 0 || *p != '\0')
			return HTTP_AUTH_DEFAULT_TTL_MS;
		v = (double)secs;
	} else {
		return HTTP_AUTH_DEFAULT_TTL_MS;
	}
	/* NaN fails both tests and gets the default. */
	if (!(v > 0))
		return HTTP_AUTH_DEFAULT_TTL_MS;
	if (!(v <= (double)max_s)) {
		*capped = true;
		return HTTP_AUTH_MAX_TTL_MS;
	}
	int64_t ms = (int64_t)(v * 1000.0);
	return ms > 0 ? ms : 1;
}

/* application/x-www-form-urlencoded, as RFC 6749 2.3.1 and appendix B ask
 * for both the form body and the Basic credentials. */
static int add_form_encoded(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '*') {
			rc = buf_add(b, p, 1);
		} else if (*p == ' ') {
			rc = buf_add(b, "+", 1);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
			rc = buf_add(b, e, 3);
		}
	}
	return rc;
}

static int add_base64(struct buf *b, const unsigned char *in, size_t n)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i += 3) {
		unsigned v = (unsigned)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		char o[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63],
			     i + 1 < n ? tbl[(v >> 6) & 63] : '=',
			     i + 2 < n ? tbl[v & 63] : '='};
		rc = buf_add(b, o, 4);
	}
	return rc;
}

/* Wipes a buffer's bytes and frees them. */
static void buf_wipe(struct buf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->cap);
	buf_dispose(b);
}

/* A token must be a visible ASCII word: it goes into a header line. */
static bool token_ok(const char *t)
{
	if (!*t)
		return false;
	for (; *t; t++)
		if (*t < 0x21 || *t > 0x7e)
			return false;
	return true;
}

/*
 * POSTs the client-credentials grant and parses the reply. On success
 * *token is malloc'd and *expires_ms set. err messages never hold the
 * reply's body (it may hold a token) nor the credentials.
 */
static int fetch_token(struct http_auth *a, struct http_client *c,
		       char **token, int64_t *expires_ms, struct sc_err *err)
{
	struct buf form, cred, basic;
	struct http_response resp = {0};
	struct sc_err herr = {0};
	json_t *root = NULL;
	int rc = 0;

	buf_init(&form, 16 * 1024);
	buf_init(&cred, 4096);
	buf_init(&basic, 8192);
	rc = buf_adds(&form, "grant_type=client_credentials");
	if (!rc && a->scope) {
		rc = buf_adds(&form, "&scope=");
		rc = rc ? rc : add_form_encoded(&form, a->scope);
	}
	if (!rc && a->client_auth_body) {
		rc = buf_adds(&form, "&client_id=");
		rc = rc ? rc : add_form_encoded(&form, a->client_id);
		rc = rc ? rc : buf_adds(&form, "&client_secret=");
		rc = rc ? rc : add_form_encoded(&form, a->secret);
	} else if (!rc) {
		rc = add_form_encoded(&cred, a->client_id);
		rc = rc ? rc : buf_adds(&cred, ":");
		rc = rc ? rc : add_form_encoded(&cred, a->secret);
		rc = rc ? rc : buf_adds(&basic, "Authorization: Basic ");
		rc = rc ? rc : add_base64(&basic,
					  (const unsigned char *)buf_str(&cred),
					  cred.len);
	}
	if (rc) {
		rc = sc_err_set(err, rc, "auth %s: credentials too long",
				a->name);
		goto done;
	}
	const char *headers[] = {
		"Content-Type: application/x-www-form-urlencoded",
		"Accept: application/json",
		a->client_auth_body ? NULL : buf_str(&basic),
		NULL,
	};
	struct http_request req = {
		.method = "POST",
		.url = a->token_url,
		.headers = headers,
		.body = buf_str(&form),
		.body_len = form.len,
		.carries_secret = true, /* the client secret */
	};
	rc = http_do(c, &req, &resp, &herr);
	if (rc) {
		/* The endpoint's status and hint travel on, so a 5xx or 429
		 * at the token endpoint stays retryable. */
		err_set_http(err, herr.code, herr.http_status,
			     herr.retry_after_ms, "auth %s: token request %s",
			     a->name, herr.msg);
		goto done;
	}
	json_error_t jerr;
	root = json_loadb(resp.body, resp.body_len, 0, &jerr);
	json_t *at = root ? json_object_get(root, "access_token") : NULL;
	json_t *ei = root ? json_object_get(root, "expires_in") : NULL;
	if (!json_is_string(at) || !token_ok(json_string_value(at))) {
		/* Without the query, like every URL in a message. */
		char logurl[320];
		url_for_log(a->token_url, false, logurl, sizeof(logurl));
		rc = sc_err_set(err, SC_EPROTO,
				"auth %s: token reply from %s has no usable "
				"access_token", a->name, logurl);
		goto done;
	}
	bool capped = false;
	int64_t ttl_ms = expires_in_ms(ei, &capped);
	if (capped)
		LOG(SC_LOG_WARN, "http", "event=token_ttl_capped auth=%s "
		       "max_ttl_s=%lld", a->name,
		       (long long)(HTTP_AUTH_MAX_TTL_MS / 1000));
	*token = strdup(json_string_value(at));
	if (!*token) {
		rc = sc_err_set(err, SC_ENOMEM, "auth %s: out of memory",
				a->name);
		goto done;
	}
	*expires_ms = sc_clock_now_ms(a->clock) + ttl_ms;
	LOG(SC_LOG_INFO, "http", "event=token_obtained auth=%s ttl_s=%lld",
	       a->name, (long long)(ttl_ms / 1000));
done:
	if (root) {
		/* jansson frees without wiping: clear its copy of the token. */
		json_t *t = json_object_get(root, "access_token");
		if (json_is_string(t))
			explicit_bzero((char *)json_string_value(t),
				       json_string_length(t));
		json_decref(root);
	}
	if (resp.body)
		explicit_bzero(resp.body, resp.body_len);
	http_response_dispose(&resp);
	buf_wipe(&form);
	buf_wipe(&cred);
	buf_wipe(&basic);
	return rc;
}

static int copy_out(const char *tok, char **out, struct sc_err *err,
		    const char *name)
{
	char *p = tok ? strdup(tok) : NULL;
	if (!p)
		return sc_err_set(err, SC_ENOMEM, "auth %s: out of memory",
				  name);
	*out = p;
	return 0;
}

int http_auth_token(struct http_auth *a, struct http_client *c,
		    const char *failed, char **token, struct sc_err *err)
{
	bool dropped = false;
	int rc;

	if (a->kind == AUTH_BEARER)
		return copy_out(a->secret, token, err, a->name);

	pthread_mutex_lock(&a->mu);
	if (failed && a->token && strcmp(a->token, failed) == 0) {
		http_secret_free(a->token);
		a->token = NULL;
		dropped = true;
		LOG(SC_LOG_INFO, "http", "event=token_dropped auth=%s "
		       "reason=401", a->name);
	}
	for (;;) {
		int64_t now = sc_clock_now_ms(a->clock);
		if (a->token && still_good(a->obtained_ms, a->expires_ms, now)) {
			rc = copy_out(a->token, token, err, a->name);
			pthread_mutex_unlock(&a->mu);
			goto drop_store;
		}
		if (!a->fetching)
			break;
		/* Someone is fetching: wait for that one fetch. Logged
		 * under mu, so once the line is out this thread is sure to
		 * see the fetch's end (tests line threads up on it). */
		LOG(SC_LOG_DEBUG, "http", "event=token_wait auth=%s",
		       a->name);
		uint64_t seen = a->n_fetches;
		while (a->fetching)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->n_fetches != seen && a->last.code != 0 && !a->token) {
			err_copy(err, &a->last);
			rc = a->last.code;
			pthread_mutex_unlock(&a->mu);
			goto drop_store;
		}
	}
	a->fetching = true;
	pthread_mutex_unlock(&a->mu);

	/* This thread fetches; the lock is not held during I/O. */
	if (dropped && a->store.drop)
		(void)a->store.drop(a->store.ud, a->name);
	char *fresh = NULL;
	int64_t expires = 0, obtained = sc_clock_now_ms(a->clock);
	struct sc_err ferr = {0};
	rc = 1;
	if (!failed && a->store.get &&
	    a->store.get(a->store.ud, a->name, &fresh, &expires) == 0 &&
	    fresh) {
		/* The store does not know when it was obtained; assume the
		 * full 60 s margin applies. */
		/* An expiry in the past or beyond the longest lifetime
		 * a reply can give (a row an older version wrote from a
		 * wrapped expires_in) is not trusted; checking it first
		 * also keeps the arithmetic below inside int64. */
		if (token_ok(fresh) && expires > obtained &&
		    expires - obtained <= HTTP_AUTH_MAX_TTL_MS &&
		    still_good(expires - 2 * HTTP_AUTH_EARLY_MS - 1, expires,
			       obtained)) {
			rc = 0;
			obtained = expires - 2 * HTTP_AUTH_EARLY_MS - 1;
		} else {
			http_secret_free(fresh);
			fresh = NULL;
		}
	}
	if (rc) {
		rc = fetch_token(a, c, &fresh, &expires, &ferr);
		if (!rc && a->store.put &&
		    a->store.put(a->store.ud, a->name, fresh, expires) != 0)
			LOG(SC_LOG_WARN, "http",
			       "event=token_store_put_failed auth=%s", a->name);
		if (rc) {
			char q[SC_ERR_MSG_MAX + 8];
			LOG(SC_LOG_WARN, "http",
			       "event=token_fetch_failed auth=%s status=%d "
			       "error=%s", a->name, ferr.http_status,
			       log_quote(q, sizeof(q), ferr.msg));
		}
	}

	pthread_mutex_lock(&a->mu);
	a->fetching = false;
	a->n_fetches++;
	a->last = ferr;
	if (!rc) {
		http_secret_free(a->token);
		a->token = fresh;
		a->obtained_ms = obtained;
		a->expires_ms = expires;
		/* The fetcher uses what it fetched even when the token is
		 * too short-lived to pass still_good. */
		rc = copy_out(a->token, token, err, a->name);
	} else {
		err_copy(err, &ferr);
	}
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return rc;

drop_store:
	if (dropped && a->store.drop)
		(void)a->store.drop(a->store.ud, a->name);
	return rc;
}
