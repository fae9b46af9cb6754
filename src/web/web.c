/*
 * web.c - the daemon's web surface (web.h): libmicrohttpd with a thread
 * per connection, a bounded number of connections (and, off loopback, of
 * connections per address), an idle timeout and a deadline for a
 * request's headers.
 *
 * Invariants:
 *   - every response carries the security headers and, but for
 *     /metrics, a JSON body made by jansson (web_call.c);
 *   - a request that passed the checks goes to the route table
 *     (web_route.c), which alone decides the handler, its method, and
 *     whether it runs under w->lock (the shared store handle) or, for
 *     /healthz, on its own handle under w->health_lock;
 *   - no response carries the token or any other secret: the bodies say
 *     what went wrong in words of this file, never a value they were
 *     given; nor does the log line of a failed authentication;
 *   - the checks run in this order, before any handler: Host on loopback
 *     (421), Origin (403), query size (414), token (401), body size (413);
 *   - a connection whose request headers are not all in by
 *     header_deadline_ms after it started (or after its previous request
 *     ended) is shut down by the reaper thread; the reaper touches a
 *     socket only while its connection is linked in w->conns, and
 *     libmicrohttpd unlinks it (notify_conn) before it closes the socket.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "metrics.h"
#include "report.h"
#include "store.h"
#include "thread.h"
#include "web.h"
#include "web_int.h"

bool web_token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);

	/* Every byte of a is read whatever b holds: the loop's length is
	 * a's, and b is read cyclically (never past its end). */
	for (size_t i = 0; i < la; i++)
		diff |= (unsigned char)a[i] ^
			(unsigned char)(lb ? b[i % lb] : 0);
	return diff == 0 && la == lb;
}

bool web_token_weak(const char *token)
{
	size_t n = strlen(token);

	if (n < WEB_TOKEN_MIN)
		return true;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)token[i] < 0x21 ||
		    (unsigned char)token[i] > 0x7e)
			return true;
	return false;
}

/* Sums the sizes of the query string's arguments. */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
			       const char *key, const char *value)
{
	size_t *n = cls;

	*n += strlen(key) + (value ? strlen(value) + 1 : 0) + 1;
	return MHD_YES;
}

/* An Origin, when sent, must be this server's own: http://HOST where HOST
 * is the request's Host header. A page of another site that makes the
 * browser call here sends its own origin. */
static bool origin_ok(struct MHD_Connection *c)
{
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							 "Origin");
	if (!origin)
		return true;
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "Host");
	if (!host || strncmp(origin, "http://", 7) != 0)
		return false;
	return strcmp(origin + 7, host) == 0;
}

/* Does name (len bytes, without its port) name this listener? On
 * loopback: 127.0.0.1, [::1], localhost, or http.listen's own host.
 * Case-insensitive, as host names are; a trailing dot is the same name. */
static bool own_name(const struct web *w, const char *name, size_t len)
{
	static const char *const names[] = {"127.0.0.1", "[::1]",
					    "localhost"};

	if (len > 1 && name[len - 1] == '.')
		len--;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len &&
		    strncasecmp(name, names[i], len) == 0)
			return true;
	return w->bind_host[0] && strlen(w->bind_host) == len &&
	       strncasecmp(name, w->bind_host, len) == 0;
}

/*
 * On a loopback listener, the Host must be one of its own names, with
 * any port or none (DNS rebinding, issue 44): a page of another site
 * whose name was rebound to 127.0.0.1 is same-origin to the browser, so
 * Origin says nothing, but its Host is still that site's name. Any port,
 * because an SSH tunnel (ssh -L 9000:127.0.0.1:8080) brings the browser's
 * "localhost:9000". No Host at all (an HTTP/1.0 probe) is no browser's
 * request, and is let through. Off loopback the token guards every
 * request, and a listener's names are not known (a proxy's, a balancer's).
 */
static bool host_ok(const struct web *w, struct MHD_Connection *c)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "Host");
	size_t len;

	if (!w->loopback || !host)
		return true;
	if (host[0] == '[') {
		const char *end = strchr(host, ']');
		if (!end)
			return false;
		len = (size_t)(end - host) + 1;
	} else {
		len = strcspn(host, ":");
	}
	const char *port = host + len;
	if (*port == ':') {
		port++;
		if (!*port || strspn(port, "0123456789") != strlen(port) ||
		    strlen(port) > 5)
			return false;
	} else if (*port) {
		return false;
	}
	return own_name(w, host, len);
}

/*
 * A failed authentication: counted, logged at most once per
 * WEB_AUTH_LOG_EVERY_MS (a flood of guesses is one line per period, with
 * how many there were), and slowed by WEB_AUTH_DELAY_MS on the
 * connection's own thread: a guesser waits, no other client does. The
 * line names the address and the path, never the header's value.
 */
static void auth_failed(struct web *w, struct MHD_Connection *c,
			const char *url)
{
	char ip[INET6_ADDRSTRLEN] = "?", q[256];
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	int64_t now = clock_mono_ms(), last = atomic_load(&w->auth_logged_ms);

	atomic_fetch_add(&w->auth_failed_n, 1);

	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;
		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)
					     (const void *)sa)->sin_addr, ip,
				  sizeof(ip));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)
					      (const void *)sa)->sin6_addr, ip,
				  sizeof(ip));
	}
	if ((last == 0 || now - last >= WEB_AUTH_LOG_EVERY_MS) &&
	    atomic_compare_exchange_strong(&w->auth_logged_ms, &last, now)) {
		int64_t n = atomic_exchange(&w->auth_failed_n, 0);
		LOG(SC_LOG_WARN, "web", "event=auth_failed ip=%s path=%s "
		    "failures=%lld", ip, log_quote(q, sizeof(q), url),
		    (long long)n);
	}
	/* Test seam (test builds): web.auth_nodelay:err answers at once,
	 * for the fuzz target, which would otherwise sleep more than it
	 * runs. */
	if (FAILPOINT_ERR("web.auth_nodelay"))
		return;
	struct timespec d = {.tv_sec = WEB_AUTH_DELAY_MS / 1000,
			     .tv_nsec = (WEB_AUTH_DELAY_MS % 1000) * 1000000L};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

static bool token_ok(const struct web *w, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Authorization");
	if (!w->token || !h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	return web_token_equal(h + 7, w->token);
}

/* The connection's entry of the headers' deadline (NULL: none, when
 * its start could not be tracked). */
static struct web_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* The request's headers are in (in) or its answer is sent (!in: the
 * next request's headers are timed from now). */
static void conn_mark(struct web *w, struct MHD_Connection *c, bool in)
{
	struct web_conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&w->conn_lock);
	k->in_request = in;
	k->since_ms = clock_mono_ms();
	pthread_mutex_unlock(&w->conn_lock);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct web *w = cls;
	struct req *q = *con_cls;

	if (!q) {
		/* The headers are in: the deadline is met. */
		conn_mark(w, c, true);
		if (!(q = calloc(1, sizeof(*q))))
			return MHD_NO;
		*con_cls = q;
		return MHD_YES;
	}
	if (*upload_size) {
		/* Kept up to the limit; past it only counted, and the
		 * request is refused once it is all in. */
		if (!q->too_big && q->body_len + *upload_size <= WEB_BODY_MAX) {
			char *nb = realloc(q->body, q->body_len +
					   *upload_size + 1);
			if (!nb)
				return MHD_NO;
			memcpy(nb + q->body_len, upload, *upload_size);
			q->body = nb;
			q->body_len += *upload_size;
			q->body[q->body_len] = '\0';
		} else {
			q->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (!host_ok(w, c))
		return web_respond_error(c, 421, "the Host is not a name of "
					 "this server");
	if (!origin_ok(c))
		return web_respond_error(c, 403, "cross-origin request refused");
	size_t qlen = 0;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &qlen);
	if (qlen > WEB_QUERY_MAX)
		return web_respond_error(c, 414, "query string too long");
	bool is_post = strcmp(method, "POST") == 0;
	if ((is_post || !w->loopback) && !token_ok(w, c)) {
		auth_failed(w, c, url);
		return web_respond_error(c, 401, "a bearer token is needed");
	}
	if (q->too_big)
		return web_respond_error(c, 413, "request body too large");
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
	    !is_post)
		return web_respond_error(c, 405, "method not allowed");
	return web_route_dispatch(w, c, url, method, q->body ? q->body : "",
				  q->body_len);
}

static void request_done(void *cls, struct MHD_Connection *c,
			 void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct req *q = *con_cls;

	if (q)
		free(q->body);
	free(q);
	*con_cls = NULL;
	conn_mark(cls, c, false);
}

/* A connection starts (linked for the deadline) or closes (unlinked,
 * before libmicrohttpd closes its socket). */
static void notify_conn(void *cls, struct MHD_Connection *c,
			void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct web *w = cls;
	struct web_conn *k = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
			c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci || !(k = calloc(1, sizeof(*k))))
			return; /* untracked: the idle timeout still holds */
		k->fd = ci->connect_fd;
		k->since_ms = clock_mono_ms();
		pthread_mutex_lock(&w->conn_lock);
		k->next = w->conns;
		if (w->conns)
			w->conns->prev = k;
		w->conns = k;
		pthread_mutex_unlock(&w->conn_lock);
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&w->conn_lock);
	if (k->prev)
		k->prev->next = k->next;
	else
		w->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	pthread_mutex_unlock(&w->conn_lock);
	free(k);
	*socket_context = NULL;
}

/*
 * The reaper: every quarter of the deadline, shuts down the connections
 * whose request headers are late. shutdown(), not close(): the socket
 * stays libmicrohttpd's, whose thread sees the end of the stream and
 * closes the connection as its own; the socket cannot be another's
 * meanwhile, since it is closed only after notify_conn unlinked it.
 */
static void *reaper_main(void *arg)
{
	struct web *w = arg;
	int64_t tick = w->header_deadline_ms / 4;

	pthread_mutex_lock(&w->conn_lock);
	while (!w->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += tick / 1000;
		until.tv_nsec += (tick % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->conn_cv, &w->conn_lock, &until);
		int64_t now = clock_mono_ms();
		int n = 0;
		for (struct web_conn *k = w->conns; k && !w->stopping;
		     k = k->next) {
			if (k->in_request || k->cut ||
			    now - k->since_ms < w->header_deadline_ms)
				continue;
			shutdown(k->fd, SHUT_RDWR);
			k->cut = true;
			n++;
		}
		if (n)
			LOG(SC_LOG_DEBUG, "web", "event=headers_late "
			    "connections=%d deadline_ms=%lld", n,
			    (long long)w->header_deadline_ms);
	}
	pthread_mutex_unlock(&w->conn_lock);
	return NULL;
}

/* Frees what web_start made (the server stopped, the reaper joined). */
static void forget(struct web *w)
{
	if (w->token) {
		explicit_bzero(w->token, strlen(w->token));
		free(w->token);
	}
	store_close(w->store);
	store_close(w->health_store);
	pthread_cond_destroy(&w->conn_cv);
	pthread_mutex_destroy(&w->conn_lock);
	pthread_mutex_destroy(&w->health_lock);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* The host of http.listen ("[::1]:8080" -> "[::1]"), for own_name. */
static void bind_host_of(const char *listen, char out[64])
{
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : strlen(listen);

	out[0] = '\0';
	if (n < 64) {
		memcpy(out, listen, n);
		out[n] = '\0';
	}
}

/* The token of o->token_env into w->token: set, non-empty and, off
 * loopback, not weak (web_token_weak). */
static int read_token(struct web *w, const struct web_opts *o,
		      struct sc_err *err)
{
	const char *v = getenv(o->token_env);

	if (!v || !*v)
		return sc_err_set(err, SC_ECONFIG, "http.token_env: environment "
				  "variable %s is %s", o->token_env,
				  v ? "empty" : "not set");
	if (!w->loopback && web_token_weak(v))
		return sc_err_set(err, SC_ECONFIG, "http.token_env: the token "
				  "in %s is too weak for a listener off "
				  "loopback: it needs at least %d visible "
				  "ASCII characters (no space)", o->token_env,
				  WEB_TOKEN_MIN);
	if (!(w->token = strdup(v)))
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	return 0;
}

/* The locks and the reaper's condition (on the monotonic clock). */
static int init_locks(struct web *w)
{
	pthread_condattr_t ca;

	if (pthread_condattr_init(&ca) != 0)
		return SC_ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int rc = pthread_cond_init(&w->conn_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0)
		return SC_ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->health_lock, NULL);
	pthread_mutex_init(&w->conn_lock, NULL);
	return 0;
}

/* Stops the reaper, when it runs. */
static void reaper_stop(struct web *w)
{
	if (!w->reaper_on)
		return;
	pthread_mutex_lock(&w->conn_lock);
	w->stopping = true;
	pthread_cond_signal(&w->conn_cv);
	pthread_mutex_unlock(&w->conn_lock);
	pthread_join(w->reaper, NULL);
	w->reaper_on = false;
}

int web_start(const struct web_opts *o, struct web **out,
	      struct sc_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback = true;

	if (config_http_addr(o->listen, &ss, &len, &loopback) != 0)
		return sc_err_set(err, SC_ECONFIG, "http.listen: \"%s\" is "
				  "not host:port", o->listen);
	if (!o->token_env && !loopback)
		return sc_err_set(err, SC_ECONFIG, "http.listen: \"%s\" is not "
				  "a loopback address: it needs "
				  "http.token_env", o->listen);
	struct web *w = calloc(1, sizeof(*w));
	if (!w)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	if (init_locks(w) != 0) {
		free(w);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	w->loopback = loopback;
	bind_host_of(o->listen, w->bind_host);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	w->start_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	w->loop_mono_ms = o->loop_mono_ms;
	w->clock = o->clock;
	w->cfg_hold = o->cfg_hold;
	w->cfg_release = o->cfg_release;
	w->cfg_ctx = o->cfg_ctx;
	w->loop_stale_ms = o->loop_stale_ms;
	/* Test seam (test builds): web.short_deadline:err makes the
	 * headers' deadline 1 s, so a test sees a dripping client cut off
	 * without waiting WEB_HEADER_DEADLINE_S. */
	w->header_deadline_ms = FAILPOINT_ERR("web.short_deadline")
		? 1000 : (int64_t)WEB_HEADER_DEADLINE_S * 1000;
	int rc = o->token_env ? read_token(w, o, err) : 0;
	/* The server's library is loaded here, not at the process start:
	 * only a daemon with `http:` maps it (lazylib_mhd.h). */
	if (!rc)
		rc = dl_mhd_load(err);
	if (!rc)
		rc = store_open(o->store_url, o->clock, &w->store, err);
	if (!rc)
		rc = store_open(o->store_url, o->clock, &w->health_store, err);
	if (!rc && thread_start(&w->reaper, reaper_main, w) != 0)
		rc = sc_err_set(err, SC_ENOMEM, "cannot start a thread");
	w->reaper_on = rc == 0;
	if (rc) {
		forget(w);
		return rc;
	}
	/* A thread per connection, polled with poll() (a daemon may hold
	 * more descriptors than select() takes). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	int port = ss.ss_family == AF_INET6
		? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		: ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* Off loopback, one address holds at most WEB_CONN_PER_IP
	 * connections; on loopback every client is 127.0.0.1, and the cap
	 * would be the whole limit's. */
	/* Its polling thread inherits this mask: signals are the daemon's
	 * sigwait thread's alone (thread.h). */
	sigset_t old;
	thread_signals_block(&old);
	w->mhd = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, handle, w,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_CONN_MAX,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)(loopback ? 0 : WEB_CONN_PER_IP),
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_CONN_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
		MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1024 * 1024),
		MHD_OPTION_NOTIFY_COMPLETED, request_done, w,
		MHD_OPTION_NOTIFY_CONNECTION, notify_conn, w,
		MHD_OPTION_END);
	thread_signals_restore(&old);
	if (!w->mhd) {
		reaper_stop(w);
		forget(w);
		return sc_err_set(err, SC_EIO, "http.listen: cannot listen on "
				  "%s", o->listen);
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);
	w->port = di ? di->port : port;
	*out = w;
	return 0;
}

int web_port(const struct web *w)
{
	return w->port;
}

void web_stop(struct web *w)
{
	if (!w)
		return;
	MHD_stop_daemon(w->mhd);
	reaper_stop(w);
	forget(w);
}
