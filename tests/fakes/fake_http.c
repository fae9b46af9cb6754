/*
 * fake_http.c - the scripted HTTP server of fake_http.h.
 *
 * Invariants:
 *   - One mutex (f->mu) guards every piece of state: path table, FIFOs,
 *     tokens and the request log. Handlers copy what they need under it and
 *     never sleep or send while holding it.
 *   - A request is logged (and waiters woken) once its whole body arrived,
 *     before any scripted delay, so fake_http_wait sees requests that are
 *     still being answered.
 *   - Memory given to callers is always a copy; nothing here points into
 *     libmicrohttpd's buffers after a handler returns.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fake_http.h"
#include "fake_mhd.h"

#define BODY_MAX (1024 * 1024)

struct canned {
	int status;
	char *headers;
	char *body;
	int delay_ms;
	struct canned *next;
};

struct route {
	char *path;
	struct canned *head, *tail; /* FIFO */
	struct canned *dflt;        /* NULL: none */
	bool is_protected;
	bool held;
	int delay_ms;
	struct route *next;
};

struct fake_http {
	struct MHD_Daemon *d;
	int port;
	bool stopping; /* releases held requests */
	bool tls;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct route *routes;
	/* OAuth2 */
	char *token_path;
	int expires_in;
	char *client_id, *client_secret;
	int n_issued;
	bool *revoked; /* revoked[k] for tok-(k+1) */
	/* log */
	struct fake_request *log;
	size_t n_log, cap_log;
};

struct conn_ctx {
	char *uri;
	bool started;
	char *body;
	size_t len;
};

static char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	char *p = strdup(s);
	if (!p)
		abort(); /* test helper: out of memory ends the test */
	return p;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);
	if (!p)
		abort();
	return p;
}

static void canned_free(struct canned *c)
{
	if (!c)
		return;
	free(c->headers);
	free(c->body);
	free(c);
}

static struct canned *canned_new(int status, const char *headers,
				 const char *body, int delay_ms)
{
	struct canned *c = xcalloc(1, sizeof(*c));
	c->status = status;
	c->headers = xstrdup(headers);
	c->body = xstrdup(body ? body : "");
	c->delay_ms = delay_ms;
	return c;
}

static struct canned *canned_copy(const struct canned *c)
{
	return canned_new(c->status, c->headers, c->body, c->delay_ms);
}

/* Caller holds mu. Creates the route when absent. */
static struct route *route_get(struct fake_http *f, const char *path,
			       bool create)
{
	for (struct route *r = f->routes; r; r = r->next)
		if (strcmp(r->path, path) == 0)
			return r;
	if (!create)
		return NULL;
	struct route *r = xcalloc(1, sizeof(*r));
	r->path = xstrdup(path);
	r->next = f->routes;
	f->routes = r;
	return r;
}

static void routes_free(struct route *r)
{
	while (r) {
		struct route *next = r->next;
		for (struct canned *c = r->head; c;) {
			struct canned *n = c->next;
			canned_free(c);
			c = n;
		}
		canned_free(r->dflt);
		free(r->path);
		free(r);
		r = next;
	}
}

void fake_request_dispose(struct fake_request *r)
{
	if (!r)
		return;
	free(r->path);
	free(r->query);
	free(r->headers);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* Caller holds mu. */
static void state_clear(struct fake_http *f)
{
	routes_free(f->routes);
	f->routes = NULL;
	free(f->token_path);
	f->token_path = NULL;
	free(f->client_id);
	free(f->client_secret);
	f->client_id = f->client_secret = NULL;
	free(f->revoked);
	f->revoked = NULL;
	f->n_issued = 0;
	for (size_t i = 0; i < f->n_log; i++)
		fake_request_dispose(&f->log[i]);
	free(f->log);
	f->log = NULL;
	f->n_log = f->cap_log = 0;
}

/* ---- small parsers ---- */

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes base64 into out (NUL-terminated). False on bad input. */
static bool b64decode(const char *in, char *out, size_t n)
{
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;

	for (; *in && *in != '='; in++) {
		int v = b64val((unsigned char)*in);
		if (v < 0)
			return false;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= n)
				return false;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	return true;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Finds form field key in an x-www-form-urlencoded body and decodes its
 * value into out. False when absent. */
static bool form_get(const char *body, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key);
	const char *p = body;

	while (p && *p) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t o = 0;
			for (size_t i = klen + 1; i < len && o + 1 < n; i++) {
				char c = p[i];
				if (c == '+') {
					c = ' ';
				} else if (c == '%' && i + 2 < len + 1 &&
					   hexval((unsigned char)p[i + 1]) >= 0 &&
					   hexval((unsigned char)p[i + 2]) >= 0) {
					c = (char)(hexval((unsigned char)p[i + 1]) * 16 +
						   hexval((unsigned char)p[i + 2]));
					i += 2;
				}
				out[o++] = c;
			}
			out[o] = '\0';
			return true;
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

bool fake_request_header(const struct fake_request *r, const char *name,
			 char *out, size_t n)
{
	size_t nlen = strlen(name);
	const char *p = r->headers;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > nlen && strncasecmp(p, name, nlen) == 0 &&
		    p[nlen] == ':') {
			const char *v = p + nlen + 1;
			while (*v == ' ')
				v++;
			size_t vlen = len - (size_t)(v - p);
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

/* ---- the handler ---- */

struct hdr_acc {
	char *s;
	size_t len;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind,
				      const char *key, const char *value)
{
	struct hdr_acc *a = cls;
	size_t add = strlen(key) + strlen(value ? value : "") + 3;
	char *p = realloc(a->s, a->len + add + 1);
	if (!p)
		abort();
	a->s = p;
	a->len += (size_t)sprintf(a->s + a->len, "%s: %s\n", key,
				  value ? value : "");
	return MHD_YES;
}

/* Caller holds mu. True when r carries a valid issued token. */
static bool token_ok(struct fake_http *f, const struct fake_request *r)
{
	char v[256];
	int k;
	char extra;

	if (!fake_request_header(r, "Authorization", v, sizeof(v)))
		return false;
	if (sscanf(v, "Bearer tok-%d%c", &k, &extra) != 1)
		return false;
	return k >= 1 && k <= f->n_issued && !f->revoked[k - 1];
}

/* Caller holds mu. Answers the token endpoint. */
static struct canned *issue_token(struct fake_http *f,
				  const struct fake_request *r)
{
	char grant[64], id[512] = "", secret[512] = "", v[512], dec[512];

	if (strcmp(r->method, "POST") != 0 ||
	    !form_get(r->body, "grant_type", grant, sizeof(grant)) ||
	    strcmp(grant, "client_credentials") != 0)
		return canned_new(400, "Content-Type: application/json",
				  "{\"error\":\"unsupported_grant_type\"}", 0);
	if (f->client_id) {
		if (fake_request_header(r, "Authorization", v, sizeof(v)) &&
		    strncmp(v, "Basic ", 6) == 0 &&
		    b64decode(v + 6, dec, sizeof(dec))) {
			char *colon = strchr(dec, ':');
			if (colon) {
				*colon = '\0';
				snprintf(id, sizeof(id), "%s", dec);
				snprintf(secret, sizeof(secret), "%s", colon + 1);
			}
		} else {
			form_get(r->body, "client_id", id, sizeof(id));
			form_get(r->body, "client_secret", secret,
				 sizeof(secret));
		}
		if (strcmp(id, f->client_id) != 0 ||
		    strcmp(secret, f->client_secret) != 0)
			return canned_new(401, "Content-Type: application/json",
					  "{\"error\":\"invalid_client\"}", 0);
	}
	bool *rv = realloc(f->revoked, (size_t)(f->n_issued + 1) * sizeof(*rv));
	if (!rv)
		abort();
	f->revoked = rv;
	f->revoked[f->n_issued++] = false;
	char body[256];
	if (f->expires_in >= 0)
		snprintf(body, sizeof(body),
			 "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\","
			 "\"expires_in\":%d}", f->n_issued, f->expires_in);
	else
		snprintf(body, sizeof(body),
			 "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\"}",
			 f->n_issued);
	return canned_new(200, "Content-Type: application/json", body, 0);
}

/* A scripted delay: ms of real time, cut short when the server stops, so
 * fake_http_stop never waits out a long delay nobody is listening to. */
static void delay_ms(struct fake_http *f, int ms)
{
	(void)fake_mhd_wait(&f->mu, &f->cv, &f->stopping, ms);
}

static enum MHD_Result send_canned(struct MHD_Connection *conn,
				   const struct canned *c)
{
	return fake_mhd_send(conn, c->status, c->headers, c->body);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct fake_http *f = cls;
	struct conn_ctx *x = *con_cls;

	(void)version;
	if (!x)
		return MHD_NO;
	if (!x->started) {
		x->started = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		if (x->len + n > BODY_MAX)
			n = x->len < BODY_MAX ? BODY_MAX - x->len : 0;
		char *p = realloc(x->body, x->len + n + 1);
		if (!p)
			abort();
		x->body = p;
		memcpy(x->body + x->len, upload_data, n);
		x->len += n;
		x->body[x->len] = '\0';
		*upload_data_size = 0;
		return MHD_YES;
	}

	/* The whole request arrived: log it. */
	struct fake_request rq = {0};
	snprintf(rq.method, sizeof(rq.method), "%s", method);
	const char *q = x->uri ? strchr(x->uri, '?') : NULL;
	rq.path = xstrdup(url);
	rq.query = xstrdup(q ? q + 1 : "");
	struct hdr_acc acc = {xstrdup(""), 0};
	MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &acc);
	rq.headers = acc.s;
	rq.body = x->body ? x->body : xstrdup("");
	rq.body_len = x->len;
	x->body = NULL;

	pthread_mutex_lock(&f->mu);
	if (f->n_log == f->cap_log) {
		size_t cap = f->cap_log ? f->cap_log * 2 : 16;
		struct fake_request *l = realloc(f->log, cap * sizeof(*l));
		if (!l)
			abort();
		f->log = l;
		f->cap_log = cap;
	}
	f->log[f->n_log++] = rq; /* the log owns rq's strings now */
	struct route *r = route_get(f, url, false);
	int path_delay = r ? r->delay_ms : 0;
	pthread_cond_broadcast(&f->cv);
	while ((r = route_get(f, url, false)) && r->held && !f->stopping)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);

	if (path_delay > 0)
		delay_ms(f, path_delay);

	struct canned *answer = NULL;
	pthread_mutex_lock(&f->mu);
	/* Find this request again: the log may have grown (and moved) while
	 * the lock was released. Its body pointer is unique. */
	struct fake_request *logged = NULL;
	for (size_t i = f->n_log; i-- > 0;) {
		if (f->log[i].body == rq.body) {
			logged = &f->log[i];
			break;
		}
	}
	r = route_get(f, url, false);
	if (!logged) {
		/* fake_http_reset ran while this request slept. */
		answer = canned_new(503, NULL, "reset", 0);
	} else if (r && r->is_protected && !token_ok(f, logged)) {
		answer = canned_new(401,
				    "WWW-Authenticate: Bearer error=\"invalid_token\"\n"
				    "Content-Type: application/json",
				    "{\"error\":\"invalid_token\"}", 0);
	} else if (r && r->head) {
		answer = r->head;
		r->head = answer->next;
		if (!r->head)
			r->tail = NULL;
		answer->next = NULL;
	} else if (f->token_path && strcmp(url, f->token_path) == 0) {
		answer = issue_token(f, logged);
	} else if (r && r->dflt) {
		answer = canned_copy(r->dflt);
	} else if (r && r->is_protected) {
		answer = canned_new(200, "Content-Type: text/plain", "ok", 0);
	} else {
		answer = canned_new(404, "Content-Type: text/plain",
				    "no route", 0);
	}
	if (logged) /* what the client is told, whatever it then reads */
		logged->status = answer->status;
	pthread_mutex_unlock(&f->mu);

	if (answer->delay_ms > 0)
		delay_ms(f, answer->delay_ms);
	enum MHD_Result rc = send_canned(conn, answer);
	canned_free(answer);
	return rc;
}

static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	struct conn_ctx *x = calloc(1, sizeof(*x));
	if (x)
		x->uri = strdup(uri);
	return x;
}

static void completed_cb(void *cls, struct MHD_Connection *conn,
			 void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	struct conn_ctx *x = *con_cls;
	if (!x)
		return;
	free(x->uri);
	free(x->body);
	free(x);
	*con_cls = NULL;
}

/* ---- public functions ---- */

static struct fake_http *start(const char *cert_pem, const char *key_pem,
			       int port)
{
	struct fake_http *f = xcalloc(1, sizeof(*f));
	struct sockaddr_in sa;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION;

	fake_mhd_sync_init(&f->mu, &f->cv);
	fake_mhd_loopback(&sa);
	if (port > 0)
		sa.sin_port = htons((uint16_t)port);
	f->tls = cert_pem != NULL;
	if (f->tls)
		f->d = MHD_start_daemon(
			flags | MHD_USE_TLS, 0, NULL, NULL, handler, f,
			MHD_OPTION_SOCK_ADDR, &sa,
			MHD_OPTION_URI_LOG_CALLBACK, uri_cb, f,
			MHD_OPTION_NOTIFY_COMPLETED, completed_cb, f,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
			MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
			MHD_OPTION_HTTPS_MEM_KEY, key_pem, MHD_OPTION_END);
	else
		f->d = MHD_start_daemon(
			flags, 0, NULL, NULL, handler, f,
			MHD_OPTION_SOCK_ADDR, &sa,
			MHD_OPTION_URI_LOG_CALLBACK, uri_cb, f,
			MHD_OPTION_NOTIFY_COMPLETED, completed_cb, f,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
			MHD_OPTION_END);
	if (!f->d)
		goto fail;
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || info->port == 0)
		goto fail;
	f->port = info->port;
	return f;
fail:
	if (f->d)
		MHD_stop_daemon(f->d);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return NULL;
}

struct fake_http *fake_http_start(void)
{
	return start(NULL, NULL, 0);
}

struct fake_http *fake_http_start_on(int port)
{
	return start(NULL, NULL, port);
}

struct fake_http *fake_https_start(const char *cert_pem, const char *key_pem)
{
	if (!cert_pem || !key_pem || !MHD_is_feature_supported(MHD_FEATURE_TLS))
		return NULL;
	return start(cert_pem, key_pem, 0);
}

void fake_http_stop(struct fake_http *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	MHD_stop_daemon(f->d);
	state_clear(f);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

int fake_http_port(const struct fake_http *f)
{
	return f->port;
}

const char *fake_http_url(const struct fake_http *f, const char *path_and_query,
			  char *out, size_t n)
{
	snprintf(out, n, "%s://127.0.0.1:%d%s", f->tls ? "https" : "http",
		 f->port, path_and_query);
	return out;
}

void fake_http_reset(struct fake_http *f)
{
	pthread_mutex_lock(&f->mu);
	state_clear(f);
	pthread_mutex_unlock(&f->mu);
}

void fake_http_push(struct fake_http *f, const char *path, int status,
		    const char *headers, const char *body, int delay_ms)
{
	struct canned *c = canned_new(status, headers, body, delay_ms);
	pthread_mutex_lock(&f->mu);
	struct route *r = route_get(f, path, true);
	if (r->tail)
		r->tail->next = c;
	else
		r->head = c;
	r->tail = c;
	pthread_mutex_unlock(&f->mu);
}

void fake_http_set_default(struct fake_http *f, const char *path, int status,
			   const char *headers, const char *body)
{
	struct canned *c = canned_new(status, headers, body, 0);
	pthread_mutex_lock(&f->mu);
	struct route *r = route_get(f, path, true);
	canned_free(r->dflt);
	r->dflt = c;
	pthread_mutex_unlock(&f->mu);
}

void fake_http_set_delay(struct fake_http *f, const char *path, int delay_ms)
{
	pthread_mutex_lock(&f->mu);
	route_get(f, path, true)->delay_ms = delay_ms;
	pthread_mutex_unlock(&f->mu);
}

void fake_http_hold(struct fake_http *f, const char *path, bool on)
{
	pthread_mutex_lock(&f->mu);
	route_get(f, path, true)->held = on;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void fake_http_oauth2(struct fake_http *f, const char *token_path,
		      int expires_in)
{
	pthread_mutex_lock(&f->mu);
	free(f->token_path);
	f->token_path = xstrdup(token_path);
	f->expires_in = expires_in;
	pthread_mutex_unlock(&f->mu);
}

void fake_http_oauth2_client(struct fake_http *f, const char *client_id,
			     const char *client_secret)
{
	pthread_mutex_lock(&f->mu);
	free(f->client_id);
	free(f->client_secret);
	f->client_id = xstrdup(client_id);
	f->client_secret = client_id ? xstrdup(client_secret ? client_secret
								: "")
				     : NULL;
	pthread_mutex_unlock(&f->mu);
}

void fake_http_protect(struct fake_http *f, const char *path)
{
	pthread_mutex_lock(&f->mu);
	route_get(f, path, true)->is_protected = true;
	pthread_mutex_unlock(&f->mu);
}

void fake_http_revoke(struct fake_http *f, const char *token)
{
	int k;
	char extra;

	pthread_mutex_lock(&f->mu);
	for (int i = 0; i < f->n_issued; i++)
		if (!token)
			f->revoked[i] = true;
	if (token && sscanf(token, "tok-%d%c", &k, &extra) == 1 && k >= 1 &&
	    k <= f->n_issued)
		f->revoked[k - 1] = true;
	pthread_mutex_unlock(&f->mu);
}

int fake_http_tokens_issued(struct fake_http *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->n_issued;
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* Caller holds mu. */
static size_t count_locked(struct fake_http *f, const char *path)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n_log; i++)
		if (!path || strcmp(f->log[i].path, path) == 0)
			n++;
	return n;
}

size_t fake_http_count(struct fake_http *f, const char *path)
{
	pthread_mutex_lock(&f->mu);
	size_t n = count_locked(f, path);
	pthread_mutex_unlock(&f->mu);
	return n;
}

bool fake_http_wait(struct fake_http *f, const char *path, size_t n,
		    int timeout_ms)
{
	struct timespec dl;
	bool ok;

	fake_mhd_deadline(&dl, timeout_ms);
	pthread_mutex_lock(&f->mu);
	while (!(ok = count_locked(f, path) >= n))
		if (pthread_cond_timedwait(&f->cv, &f->mu, &dl) != 0) {
			ok = count_locked(f, path) >= n;
			break;
		}
	pthread_mutex_unlock(&f->mu);
	return ok;
}

bool fake_http_request(struct fake_http *f, const char *path, long i,
		       struct fake_request *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->mu);
	long n = (long)count_locked(f, path);
	long want = i < 0 ? n + i : i;
	bool found = false;
	if (want >= 0 && want < n) {
		long k = 0;
		for (size_t j = 0; j < f->n_log; j++) {
			const struct fake_request *r = &f->log[j];
			if (path && strcmp(r->path, path) != 0)
				continue;
			if (k++ != want)
				continue;
			snprintf(out->method, sizeof(out->method), "%s",
				 r->method);
			out->path = xstrdup(r->path);
			out->query = xstrdup(r->query);
			out->headers = xstrdup(r->headers);
			out->body = malloc(r->body_len + 1);
			if (!out->body)
				abort();
			memcpy(out->body, r->body, r->body_len + 1);
			out->body_len = r->body_len;
			out->status = r->status;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return found;
}
