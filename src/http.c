/*
 * http.c - the libcurl client: one reused easy handle per client, typed
 * errors, retry-after hints and the refresh-once-on-401 rule.
 *
 * Invariants:
 *   - TLS verification is on for every transfer unless the client was made
 *     with the test-only insecure_skip_verify, which logs a warning.
 *   - Redirects are never followed; only http and https are spoken.
 *   - A transport failure is marked ambiguous (err->ambiguous) unless it
 *     surely happened before a byte of the request could be written
 *     (maybe_received): a caller may then treat it as "not sent".
 *   - Every request passes the URL rule (url.h) before any connection,
 *     and libcurl is handed the very handle that was checked
 *     (CURLOPT_CURLU), so what is checked is what is sent.
 *   - A request is sent at most twice, and the second time only after a
 *     401 with an auth provider that can refresh (http_do).
 *   - Nothing that may hold a secret reaches a log line or an sc_err
 *     message: URLs are cut to scheme://host[:port]/path (url_for_log),
 *     header values are never logged, and header lists holding
 *     Authorization are wiped before they are freed.
 *   - A response body never hands back the credentials its request
 *     carried (scrub_body): servers and proxies echo what they got in
 *     error pages, and callers quote those bodies in errors, notices and
 *     the ledger. The token, and for secret URLs (webhooks) the path and
 *     its long segments, are overwritten with '*' in every body (with
 *     another byte when a secret holds '*'); the query string in non-2xx
 *     bodies (messages drop it from URLs too).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "clock.h"
#include "lazylib_curl.h"
#include "err.h"
#include "http.h"
#include "log.h"
#include "url.h"

#define HEADERS_MAX (64 * 1024)
#define URL_LOG_MAX 320
#define HINT_MAX_S (365LL * 24 * 3600)
/* The last second of year 9999 (9999-12-31T23:59:59Z): no HTTP-date a
 * peer sends is taken beyond it, so seconds * 1000 always fits int64. */
#define HTTP_DATE_MAX_S 253402300799LL

struct http_client {
	CURL *h;
	int64_t connect_timeout_ms;
	int64_t timeout_ms;
	size_t max_body;
	char *ca_bundle;
	char *user_agent;
	struct sc_clock *clock;
	bool insecure;
	char errbuf[CURL_ERROR_SIZE];
};

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *p = strdup(s);
	if (!p)
		*oom = true;
	return p;
}

struct http_client *http_client_new(const struct http_options *opt,
				    struct sc_err *err)
{
	static const struct http_options defaults;
	struct http_client *c;
	bool oom = false;

	if (!opt)
		opt = &defaults;
	/* libcurl is mapped on first use (curl_global_init included). */
	if (dl_curl_load(err) != 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		sc_err_set(err, SC_ENOMEM, "http: out of memory");
		return NULL;
	}
	c->connect_timeout_ms = opt->connect_timeout_ms > 0
					? opt->connect_timeout_ms
					: HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
	c->timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms
					    : HTTP_DEFAULT_TIMEOUT_MS;
	c->max_body = opt->max_body > 0 ? opt->max_body : HTTP_DEFAULT_MAX_BODY;
	c->clock = opt->clock ? opt->clock : sc_clock_real();
	c->insecure = opt->insecure_skip_verify;
	c->ca_bundle = dup_or_null(opt->ca_bundle, &oom);
	c->user_agent = dup_or_null(opt->user_agent ? opt->user_agent
						    : "surecron/" SC_VERSION,
				    &oom);
	if (oom) {
		sc_err_set(err, SC_ENOMEM, "http: out of memory");
		goto fail;
	}
	c->h = curl_easy_init();
	if (!c->h) {
		sc_err_set(err, SC_ENOMEM, "http: curl_easy_init failed");
		goto fail;
	}
	if (c->insecure)
		LOG(SC_LOG_WARN, "http",
		       "event=tls_verification_disabled reason=test_only "
		       "msg=\"TLS certificate verification is OFF for this "
		       "client; never use outside tests\"");
	return c;
fail:
	http_client_free(c);
	return NULL;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	free(c->ca_bundle);
	free(c->user_agent);
	free(c);
}

void http_response_dispose(struct http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	free(resp->headers);
	memset(resp, 0, sizeof(*resp));
}

/* Finds header `name` in a raw header block; copies its trimmed value. */
static bool header_find(const char *block, const char *name, char *out,
			size_t n)
{
	size_t nlen = strlen(name);
	const char *p = block;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > nlen && strncasecmp(p, name, nlen) == 0 &&
		    p[nlen] == ':') {
			const char *v = p + nlen + 1;
			const char *end = p + len;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == '\r' || end[-1] == ' ' ||
					   end[-1] == '\t'))
				end--;
			size_t vlen = (size_t)(end - v);
			if (n == 0)
				return true;
			if (vlen >= n)
				vlen = n - 1;
			memcpy(out, v, vlen);
			out[vlen] = '\0';
			return true;
		}
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

bool http_response_header(const struct http_response *resp, const char *name,
			  char *out, size_t n)
{
	return resp && header_find(resp->headers, name, out, n);
}

bool http_status_retryable(int s)
{
	return s == 0 || s == 408 || s == 425 || s == 429 ||
	       (s >= 500 && s <= 599);
}

/* ---- Retry-After ---- */

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr",
				     "May", "Jun", "Jul", "Aug",
				     "Sep", "Oct", "Nov", "Dec"};
static const char *const wdays[] = {"Sun", "Mon", "Tue", "Wed",
				    "Thu", "Fri", "Sat"};

/* Reads n digits at s. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* Strict IMF-fixdate (RFC 9110 5.6.7): "Sun, 06 Nov 1994 08:49:37 GMT".
 * The layout is checked against a pattern where '9' stands for a digit
 * and 'a' for a letter; everything else must match as is. */
static bool parse_imf_fixdate(const char *s, int64_t *out_s)
{
	static const char pattern[] = "aaa, 99 aaa 9999 99:99:99 GMT";

	if (strlen(s) != sizeof(pattern) - 1)
		return false;
	for (size_t i = 0; i < sizeof(pattern) - 1; i++) {
		char p = pattern[i], c = s[i];
		if (p == '9' ? !isdigit((unsigned char)c)
			     : p == 'a' ? !isalpha((unsigned char)c) : c != p)
			return false;
	}
	int m = -1, w = -1;
	for (int i = 0; i < 12; i++)
		if (strncmp(s + 8, months[i], 3) == 0)
			m = i + 1;
	for (int i = 0; i < 7; i++)
		if (strncmp(s, wdays[i], 3) == 0)
			w = i;
	int d = digits(s + 5, 2), y = digits(s + 12, 4);
	int hh = digits(s + 17, 2), mm = digits(s + 20, 2);
	int ss = digits(s + 23, 2);
	if (m < 0 || w < 0 || d < 1 || hh > 23 || mm > 59 || ss > 60)
		return false;
	int64_t days = clock_days_from_civil(y, m, d);
	int64_t cy;
	int cm, cd;
	clock_civil_from_days(days, &cy, &cm, &cd);
	if (cy != y || cm != m || cd != d)
		return false; /* 31 Feb and friends */
	/* A wrong weekday is tolerated, as most parsers do. */
	*out_s = days * 86400 + hh * 3600 + mm * 60 + (ss == 60 ? 59 : ss);
	return true;
}

/* Parses an unsigned decimal of at most 12 digits; false otherwise. The
 * cap keeps every accepted value * 1000 (milliseconds) inside int64. */
static bool parse_digits(const char *s, int64_t *out)
{
	int64_t v = 0;
	size_t n = 0;

	for (; isdigit((unsigned char)*s); s++, n++) {
		if (n >= 12)
			return false;
		v = v * 10 + (*s - '0');
	}
	if (n == 0 || *s != '\0')
		return false;
	*out = v;
	return true;
}

/* Copies value into out with surrounding spaces removed. */
static void trim_copy(const char *value, char *out, size_t n)
{
	while (*value == ' ' || *value == '\t')
		value++;
	size_t len = strlen(value);
	while (len && (value[len - 1] == ' ' || value[len - 1] == '\t' ||
		       value[len - 1] == '\r' || value[len - 1] == '\n'))
		len--;
	if (len >= n)
		len = n - 1;
	memcpy(out, value, len);
	out[len] = '\0';
}

/* Date forms: IMF-fixdate strictly; the two obsolete forms of RFC 9110
 * (RFC 850 and asctime) through curl_getdate, which knows them. */
static bool parse_http_date(const char *s, int64_t *out_s)
{
	if (parse_imf_fixdate(s, out_s))
		return true;
	/* Obsolete forms hold a weekday name then either '-' separated
	 * fields or the asctime layout; anything else is malformed. */
	size_t len = strlen(s);
	if (len < 24 || len > 40 || !isalpha((unsigned char)s[0]))
		return false;
	if (dl_curl_load(NULL) != 0)
		return false;
	time_t t = curl_getdate(s, NULL);
	/* curl_getdate takes years of any length ("Sun Nov 29 12:00:10
	 * 2147483647" is 6.8e16 s): a date outside 1970..9999 is refused
	 * before anyone multiplies it into milliseconds. */
	if (t < 0 || (int64_t)t > HTTP_DATE_MAX_S)
		return false;
	*out_s = (int64_t)t;
	return true;
}

bool http_parse_retry_after(const char *value, int64_t now_ms,
			    int64_t *out_ms)
{
	char v[64] = {0};
	int64_t secs;

	if (!value)
		return false;
	trim_copy(value, v, sizeof(v));
	if (parse_digits(v, &secs)) {
		if (secs <= 0 || secs > HINT_MAX_S)
			return false;
		*out_ms = secs * 1000;
		return true;
	}
	if (!parse_http_date(v, &secs))
		return false;
	int64_t ms = secs * 1000 - now_ms;
	if (ms <= 0 || ms > HINT_MAX_S * 1000)
		return false;
	*out_ms = ms;
	return true;
}

/*
 * A provider's reset header: delta seconds, or (values above 10^9) Unix
 * epoch seconds as GitHub-style X-RateLimit-Reset sends, or an HTTP-date.
 */
bool http_parse_reset(const char *value, int64_t now_ms, int64_t *out_ms)
{
	char v[64] = {0};
	int64_t secs;

	trim_copy(value, v, sizeof(v));
	if (parse_digits(v, &secs) && secs >= 1000000000LL) {
		int64_t ms = secs * 1000 - now_ms;
		if (ms <= 0 || ms > HINT_MAX_S * 1000)
			return false;
		*out_ms = ms;
		return true;
	}
	return http_parse_retry_after(v, now_ms, out_ms);
}

/* ---- one exchange ---- */

struct sink {
	struct buf body;
	struct buf headers;
	bool too_big;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct sink *s = ud;
	if (buf_add(&s->body, p, sz * n) != 0) {
		s->too_big = true;
		return 0; /* makes curl stop with CURLE_WRITE_ERROR */
	}
	return sz * n;
}

/* libcurl's progress callback: the request's keep hook; never aborts. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	const struct http_request *req = ud;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	req->keep(req->keep_ud);
	return 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct sink *s = ud;
	/* A new status line starts a new header block (100 Continue, or a
	 * proxy's answer); keep only the final response's block. */
	if (sz * n >= 5 && strncmp(p, "HTTP/", 5) == 0)
		buf_reset(&s->headers);
	(void)buf_add(&s->headers, p, sz * n); /* past the cap: dropped */
	return sz * n;
}

static bool valid_method(const char *m)
{
	if (!*m || strlen(m) > 16)
		return false;
	for (; *m; m++)
		if (!isupper((unsigned char)*m))
			return false;
	return true;
}

/* Frees a header list after wiping it: it may hold a token. */
static void slist_wipe_free(struct curl_slist *l)
{
	for (struct curl_slist *p = l; p; p = p->next)
		if (p->data)
			explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(l);
}

/* A short stable wording for a transport failure. */
static const char *transport_reason(CURLcode cc, long os_errno, int *code)
{
	*code = SC_EHTTP;
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		if (os_errno == ECONNREFUSED)
			return "connection refused";
		/* No socket for us: the runner's own limit (issue 42). */
		if (os_errno == EMFILE || os_errno == ENFILE) {
			*code = SC_EEXHAUSTED;
			return "out of file descriptors";
		}
		if (os_errno == ENETUNREACH || os_errno == EHOSTUNREACH)
			return "host unreachable";
		return "could not connect";
	case CURLE_COULDNT_RESOLVE_HOST:
		return "could not resolve host";
	case CURLE_OPERATION_TIMEDOUT:
		*code = SC_ETIMEDOUT;
		return "timed out";
	case CURLE_PEER_FAILED_VERIFICATION:
		return "TLS certificate verification failed";
	case CURLE_SSL_CONNECT_ERROR:
		return "TLS handshake failed";
	case CURLE_SSL_CACERT_BADFILE:
		return "cannot read the CA bundle";
	case CURLE_GOT_NOTHING:
		return "empty reply from server";
	case CURLE_SEND_ERROR:
		return "connection lost while sending";
	case CURLE_RECV_ERROR:
		return "connection lost while receiving";
	case CURLE_PARTIAL_FILE:
		return "response ended early";
	case CURLE_UNSUPPORTED_PROTOCOL:
		*code = SC_EINVAL;
		return "unsupported scheme";
	case CURLE_URL_MALFORMAT:
		*code = SC_EINVAL;
		return "malformed URL";
	case CURLE_WEIRD_SERVER_REPLY:
		return "malformed reply from server";
	case CURLE_OUT_OF_MEMORY:
		*code = SC_ENOMEM;
		return "out of memory";
	default:
		return curl_easy_strerror(cc);
	}
}

/*
 * Could the request have reached the server before transfer h failed with
 * cc? A request is written only once the connection is up (for https,
 * once the TLS handshake is done), so a failure before that point is sure:
 * resolving, connecting, a refused or unverified certificate, a timeout
 * while connecting. From that point on the server may have read the whole
 * request and acted on it, whatever went wrong next: a timeout waiting for
 * the answer, an empty reply, a connection reset, a body cut short. When
 * curl cannot tell us how far it got, the answer is "maybe".
 */
static bool maybe_received(CURL *h, CURLcode cc, bool https, long status)
{
	curl_off_t up = 0, pre = 0, conn = 0;
	long req_size = 0;

	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return false; /* no connection was ever made */
	default:
		break;
	}
	if (status > 0)
		return true; /* an answer started: the request was read */
	if (curl_easy_getinfo(h, https ? CURLINFO_APPCONNECT_TIME_T
				       : CURLINFO_CONNECT_TIME_T,
			      &conn) != CURLE_OK ||
	    curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pre) !=
		    CURLE_OK ||
	    curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &req_size) !=
		    CURLE_OK ||
	    curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up) != CURLE_OK)
		return true;
	return conn > 0 || pre > 0 || req_size > 0 || up > 0;
}

/*
 * Sends one request with `token` (may be NULL) and fills resp. Returns 0
 * when a response arrived (any status), else a negative code with err set.
 */
static int exchange(struct http_client *c, const struct http_request *req,
		    CURLU *url, const char *method, const char *logurl,
		    const char *token, struct http_response *resp,
		    struct sc_err *err)
{
	struct curl_slist *hl = NULL, *tmp;
	struct sink s;
	char names[256] = "";
	size_t nl = 0;
	int rc = 0;
	CURL *h = c->h;
	char *authz = NULL;

	http_response_dispose(resp); /* a failure leaves no stale response */
	buf_init(&s.body, c->max_body);
	buf_init(&s.headers, HEADERS_MAX);
	s.too_big = false;

	for (const char *const *hp = req->headers; hp && *hp; hp++) {
		if (strpbrk(*hp, "\r\n") || !strchr(*hp, ':')) {
			rc = sc_err_set(err, SC_EINVAL,
					"%s %s: malformed request header",
					method, logurl);
			goto done;
		}
		if (!(tmp = curl_slist_append(hl, *hp)))
			goto oom;
		hl = tmp;
		size_t k = strcspn(*hp, ":");
		if (nl + k + 2 < sizeof(names)) {
			if (nl)
				names[nl++] = ',';
			memcpy(names + nl, *hp, k);
			nl += k;
			names[nl] = '\0';
		}
	}
	/* No "Expect: 100-continue" round trip for large bodies. */
	if (!(tmp = curl_slist_append(hl, "Expect:")))
		goto oom;
	hl = tmp;
	if (token) {
		size_t len = strlen(token) + sizeof("Authorization: Bearer ");
		authz = malloc(len);
		if (!authz)
			goto oom;
		snprintf(authz, len, "Authorization: Bearer %s", token);
		tmp = curl_slist_append(hl, authz);
		if (!tmp)
			goto oom;
		hl = tmp;
		if (nl + 15 < sizeof(names))
			snprintf(names + nl, sizeof(names) - nl,
				 "%sAuthorization", nl ? "," : "");
	}

	curl_easy_reset(h); /* keeps the connection, DNS and TLS caches */
	c->errbuf[0] = '\0';
	/* The handle url_parse checked: libcurl goes where the rule
	 * looked, with no second parse of the string. */
	curl_easy_setopt(h, CURLOPT_CURLU, url);
	curl_easy_setopt(h, CURLOPT_DISALLOW_USERNAME_IN_URL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(req->connect_timeout_ms > 0
					? req->connect_timeout_ms
					: c->connect_timeout_ms));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)(req->timeout_ms > 0 ? req->timeout_ms
						    : c->timeout_ms));
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
	if (c->ca_bundle)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_bundle);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
			 (curl_off_t)c->max_body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	if (req->keep) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)req);
	}

	size_t blen = req->body ? (req->body_len ? req->body_len
						  : strlen(req->body))
				: 0;
	if (strcmp(method, "GET") == 0 && !req->body) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (req->body || strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)blen);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS,
				 req->body ? req->body : "");
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}

	int64_t t0 = clock_mono_ms();
	CURLcode cc = curl_easy_perform(h);
	long status = 0, os_errno = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
	/* Drop our pointers from the handle before the list is wiped. */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
	curl_easy_setopt(h, CURLOPT_CURLU, NULL); /* http_do frees it */
	LOG(SC_LOG_DEBUG, "http",
	       "event=exchange method=%s url=%s status=%ld ms=%lld bytes=%zu "
	       "headers=%s curl=%d",
	       method, logurl, status, (long long)(clock_mono_ms() - t0),
	       s.body.len, names[0] ? names : "-", (int)cc);

	bool https = strncasecmp(req->url, "https://", 8) == 0;
	if (s.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
		rc = err_set_http(err, SC_ETOOBIG, (int)status, 0,
				  "%s %s: response body larger than %zu bytes",
				  method, logurl, c->max_body);
		/* A 2xx with an oversized body was taken all the same; a
		 * 3xx-5xx status is a definite refusal. */
		if (status < 300)
			err_set_ambiguous(err);
		goto done;
	}
	if (cc != CURLE_OK) {
		int code;
		const char *why = transport_reason(cc, os_errno, &code);
		rc = err_set_http(err, code, 0, 0, "%s %s: %s", method, logurl,
				  why);
		if (maybe_received(h, cc, https, status))
			err_set_ambiguous(err);
		goto done;
	}
	resp->status = (int)status;
	resp->body_len = s.body.len;
	resp->body = buf_take(&s.body);
	resp->headers = buf_take(&s.headers);
	if (!resp->body || !resp->headers) {
		http_response_dispose(resp);
		goto oom;
	}
	goto done;
oom:
	rc = sc_err_set(err, SC_ENOMEM, "%s %s: out of memory", method, logurl);
done:
	if (authz) {
		explicit_bzero(authz, strlen(authz));
		free(authz);
	}
	slist_wipe_free(hl);
	buf_dispose(&s.body);
	buf_dispose(&s.headers);
	return rc;
}

/* The retry-after hint of a response, 0 when none. */
static int64_t response_hint(const struct http_client *c,
			     const struct http_response *r,
			     const char *reset_header)
{
	char v[128] = {0};
	int64_t ms = 0;
	int64_t now = sc_clock_now_ms(c->clock);

	if (r->status != 429 && r->status != 503)
		return 0;
	if (header_find(r->headers, "Retry-After", v, sizeof(v)) &&
	    http_parse_retry_after(v, now, &ms))
		return ms;
	if (reset_header && header_find(r->headers, reset_header, v, sizeof(v)) &&
	    http_parse_reset(v, now, &ms))
		return ms;
	return 0;
}

/*
 * Marks in hit[] every byte of body that lies in an occurrence of the n
 * bytes at secret, overlapping occurrences included, found in the body as
 * received (masking never feeds the search), and notes the secret's bytes
 * in used[]. Strings under 4 bytes are left alone: they are no secret,
 * and masking them would mangle ordinary text.
 */
static void scrub_mark(const char *body, size_t len, const char *secret,
		       size_t n, unsigned char *hit, bool used[256])
{
	const char *p = body, *end = body + len;

	if (n < 4)
		return;
	for (size_t i = 0; i < n; i++)
		used[(unsigned char)secret[i]] = true;
	while ((size_t)(end - p) >= n &&
	       (p = memmem(p, (size_t)(end - p), secret, n)) != NULL) {
		memset(hit + (p - body), 1, n);
		p++;
	}
}

/* Removes the request's credentials from resp's body (see the header
 * comment): token, and the URL's secret parts, as libcurl sent them (the
 * checked handle's path and query, whatever the URL's spelling). The mask
 * is '*' unless a secret holds one (then "masked" and "still there" could
 * not be told apart); it is always a byte no secret holds, so no
 * occurrence of a secret is left, nor made by the mask. */
static void scrub_body(const struct http_request *req, CURLU *url,
		       const char *token, struct http_response *resp)
{
	char *b = resp->body;
	size_t len = resp->body_len;
	bool used[256] = {false};
	char *path = NULL, *query = NULL;

	if (!b || !len)
		return;
	unsigned char *hit = calloc(len, 1);
	if (!hit) {
		memset(b, '*', len); /* no memory to be precise: hide it all */
		return;
	}
	if (token)
		scrub_mark(b, len, token, strlen(token), hit, used);
	if (url && curl_url_get(url, CURLUPART_QUERY, &query, 0) == CURLUE_OK &&
	    query && (req->url_is_secret || resp->status < 200 ||
		      resp->status > 299))
		scrub_mark(b, len, query, strlen(query), hit, used);
	if (url && req->url_is_secret &&
	    curl_url_get(url, CURLUPART_PATH, &path, 0) == CURLUE_OK && path) {
		size_t plen = strlen(path);
		scrub_mark(b, len, path, plen, hit, used);
		/* A page may quote a part of the path: its long segments. */
		for (const char *q = path; q < path + plen; q++) {
			size_t k = strcspn(q, "/");
			if (k >= 8)
				scrub_mark(b, len, q, k, hit, used);
			q += k;
			if (*q != '/')
				break;
		}
	}
	char mask = '*';
	for (int c = '!'; used[(unsigned char)mask] && c <= '~'; c++)
		mask = (char)c;
	for (size_t i = 0; i < len; i++)
		if (hit[i])
			b[i] = mask;
	free(hit);
	curl_free(path);
	curl_free(query);
}

int http_do(struct http_client *c, const struct http_request *req,
	    struct http_response *resp, struct sc_err *err)
{
	struct http_response local = {0};
	struct sc_err aerr = {0};
	char logurl[URL_LOG_MAX];
	char *token = NULL;
	CURLU *url = NULL;
	int rc;

	if (!resp)
		resp = &local;
	http_response_dispose(resp);
	const char *method = req->method ? req->method : "GET";
	url_for_log(req->url, req->url_is_secret, logurl, sizeof(logurl));
	/* The URL rule, on every request (tasks, webhooks, the token fetch,
	 * the CLI): refused here means never connected. */
	rc = url_parse(req->url,
		       req->auth || req->url_is_secret || req->carries_secret
			       ? URL_SECRET
			       : URL_PLAIN,
		       &url, &aerr);
	if (rc) {
		rc = sc_err_set(err, aerr.code, "%s %s: %s", method, logurl,
				aerr.msg);
		goto done;
	}
	if (!valid_method(method)) {
		rc = sc_err_set(err, SC_EINVAL, "%s %s: invalid method",
				"?", logurl);
		goto done;
	}
	if (req->auth) {
		rc = http_auth_token(req->auth, c, NULL, &token, &aerr);
		if (rc)
			goto auth_failed;
	}
	rc = exchange(c, req, url, method, logurl, token, resp, err);
	if (rc)
		goto done;
	if (resp->status == 401 && req->auth &&
	    http_auth_can_refresh(req->auth)) {
		/* Refresh once: the next 401 is the answer. */
		LOG(SC_LOG_INFO, "http",
		       "event=token_rejected auth=%s method=%s url=%s "
		       "action=refresh_and_resend",
		       http_auth_name(req->auth), method, logurl);
		char *fresh = NULL;
		rc = http_auth_token(req->auth, c, token, &fresh, &aerr);
		http_secret_free(token);
		token = fresh;
		if (rc)
			goto auth_failed;
		rc = exchange(c, req, url, method, logurl, token, resp, err);
		if (rc)
			goto done;
	}
	if (resp->status >= 200 && resp->status <= 299) {
		rc = 0;
		goto done;
	}
	const char *reset = req->reset_header;
	if (!reset && req->auth)
		reset = http_auth_reset_header(req->auth);
	rc = err_set_http(err, SC_EHTTP, resp->status,
			  response_hint(c, resp, reset), "%s %s: HTTP %d",
			  method, logurl, resp->status);
	goto done;
auth_failed:
	rc = err_set_http(err, aerr.code, aerr.http_status, aerr.retry_after_ms,
			  "%s %s: %s", method, logurl, aerr.msg);
done:
	scrub_body(req, url, token, resp);
	http_secret_free(token);
	http_response_dispose(&local);
	url_free(url);
	return rc;
}
