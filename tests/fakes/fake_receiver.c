/*
 * fake_receiver.c - the counting, misbehaving receiver of fake_receiver.h.
 *
 * Invariants:
 *   - A request is recorded (its log line written and fsync'd) before any
 *     byte of its answer is queued and before it misbehaves: when the
 *     sender sees anything, the count already holds the request.
 *   - One mutex (r->mu) guards the script and the stopping flag; nothing
 *     sleeps while holding it except the condition waits, which every
 *     stop wakes.
 *   - The log is the only record: fake_receiver_count reads the file, so
 *     it means the same from any process.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_mhd.h"
#include "fake_receiver.h"

#define DRIP_BYTES 64
#define NEVER_MAX_MS 120000 /* a request never answered is let go after */

struct fake_receiver {
	struct MHD_Daemon *d;
	int port;
	bool tls;
	bool stopping;
	char *log_path;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* the script */
	enum recv_mode mode;
	int n_left;
	int status;
	char *headers;
	int delay_ms;
	void (*on_request)(void *ud, const char *path, const char *key,
			   const char *disposition);
	void *on_request_ud;
	int n_busy;                 /* requests being handled now */
	struct timespec last_event; /* last accept, request start or end */
};

/* What one request was told to do (copied out of the script). */
struct answer {
	enum recv_mode mode;
	int status;
	char *headers;
	int delay_ms;
};

struct drip {
	struct fake_receiver *r;
	int delay_ms;
	int sent;
};

static int con_marker;

/* Waits up to ms of real time; false when the receiver is stopping. */
static bool wait_ms(struct fake_receiver *r, int ms)
{
	return fake_mhd_wait(&r->mu, &r->cv, &r->stopping, ms);
}

/* Appends one line to the log and fsyncs it before returning. */
static void record(struct fake_receiver *r, const char *path, const char *key,
		   const char *disposition)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s %s %s\n", path,
			 key && *key ? key : "-", disposition);

	pthread_mutex_lock(&r->mu);
	int fd = open(r->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		      0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n || fsync(fd) != 0)
		abort(); /* a receiver that cannot count makes the test lie */
	close(fd);
	pthread_mutex_unlock(&r->mu);
}

static ssize_t drip_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct drip *d = cls;

	(void)pos;
	if (d->sent >= DRIP_BYTES)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (max == 0)
		return 0;
	if (!wait_ms(d->r, d->delay_ms))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	buf[0] = 'x';
	d->sent++;
	return 1;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct fake_receiver *r = cls;
	struct answer a;
	char disp[32];

	(void)method;
	(void)version;
	(void)upload_data;
	if (!*con_cls) {
		*con_cls = &con_marker;
		pthread_mutex_lock(&r->mu);
		r->n_busy++;
		clock_gettime(CLOCK_MONOTONIC, &r->last_event);
		pthread_mutex_unlock(&r->mu);
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* the body is read, not kept */
		return MHD_YES;
	}
	/* The whole request arrived: take this request's part of the
	 * script. */
	pthread_mutex_lock(&r->mu);
	a.mode = r->n_left > 0 ? r->mode : RECV_OK;
	a.status = r->status;
	a.headers = r->headers ? strdup(r->headers) : NULL;
	a.delay_ms = r->delay_ms;
	if (r->n_left > 0)
		r->n_left--;
	pthread_mutex_unlock(&r->mu);

	const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						      "Idempotency-Key");
	if (a.mode == RECV_STATUS)
		snprintf(disp, sizeof(disp), "refused:%d", a.status);
	else
		snprintf(disp, sizeof(disp), "taken");
	if (a.mode != RECV_CRASH) {
		pthread_mutex_lock(&r->mu);
		void (*fn)(void *, const char *, const char *, const char *) =
			r->on_request;
		void *ud = r->on_request_ud;
		pthread_mutex_unlock(&r->mu);
		if (fn)
			fn(ud, url, key ? key : "-", disp);
		record(r, url, key, disp);
	}

	enum MHD_Result rc = MHD_NO;
	switch (a.mode) {
	case RECV_OK:
		rc = fake_mhd_send(conn, 200, NULL, "ok");
		break;
	case RECV_NEVER:
		(void)wait_ms(r, NEVER_MAX_MS);
		rc = MHD_NO;
		break;
	case RECV_LATE:
		if (wait_ms(r, a.delay_ms))
			rc = fake_mhd_send(conn, 200, NULL, "late ok");
		break;
	case RECV_CLOSE:
	case RECV_CRASH:
		rc = MHD_NO; /* libmicrohttpd closes without a response */
		break;
	case RECV_DRIP: {
		struct drip *d = calloc(1, sizeof(*d));
		if (!d)
			break;
		d->r = r;
		d->delay_ms = a.delay_ms;
		struct MHD_Response *resp = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 1, drip_read, d, free);
		if (!resp) {
			free(d);
			break;
		}
		rc = MHD_queue_response(conn, 200, resp);
		MHD_destroy_response(resp);
		break;
	}
	case RECV_STATUS:
		rc = fake_mhd_send(conn, a.status, a.headers, "scripted");
		break;
	}
	free(a.headers);
	return rc;
}

static void on_connection(void *cls, struct MHD_Connection *conn,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct fake_receiver *r = cls;

	(void)conn;
	(void)socket_context;
	(void)toe;
	pthread_mutex_lock(&r->mu);
	clock_gettime(CLOCK_MONOTONIC, &r->last_event);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* libmicrohttpd is done with a request the handler saw (answered, or cut
 * short by the client). */
static void on_completed(void *cls, struct MHD_Connection *conn,
			 void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct fake_receiver *r = cls;

	(void)conn;
	(void)toe;
	if (!*con_cls)
		return;
	*con_cls = NULL;
	pthread_mutex_lock(&r->mu);
	r->n_busy--;
	clock_gettime(CLOCK_MONOTONIC, &r->last_event);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static int64_t mono_ms(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

bool fake_receiver_wait_idle(struct fake_receiver *r, int quiet_ms,
			     int timeout_ms)
{
	struct timespec now;
	bool quiet = false;

	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t end = mono_ms(&now) + timeout_ms;
	pthread_mutex_lock(&r->mu);
	/* The quiet period counts from now as well: a connection the kernel
	 * accepted may not have reached libmicrohttpd yet. */
	int64_t since = mono_ms(&now);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t t = mono_ms(&now);
		int64_t last = mono_ms(&r->last_event);
		if (last > since)
			since = last;
		if (r->n_busy == 0 && t - since >= quiet_ms) {
			quiet = true;
			break;
		}
		if (t >= end) {
			break;
		}
		struct timespec dl = now;
		dl.tv_nsec += 5 * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cv, &r->mu, &dl);
	}
	pthread_mutex_unlock(&r->mu);
	return quiet;
}

struct fake_receiver *fake_receiver_start(const char *log_path,
					  const char *cert_pem,
					  const char *key_pem)
{
	struct fake_receiver *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION;

	if (!r)
		return NULL;
	if (cert_pem && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		free(r);
		return NULL;
	}
	r->log_path = strdup(log_path);
	fake_mhd_sync_init(&r->mu, &r->cv);
	fake_mhd_loopback(&sa);
	r->tls = cert_pem != NULL;
	if (r->tls)
		r->d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL,
					handler, r, MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_CONNECTION_TIMEOUT,
					(unsigned)30,
					MHD_OPTION_NOTIFY_CONNECTION,
					on_connection, r,
					MHD_OPTION_NOTIFY_COMPLETED,
					on_completed, r,
					MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
					MHD_OPTION_HTTPS_MEM_KEY, key_pem,
					MHD_OPTION_END);
	else
		r->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, r,
					MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_CONNECTION_TIMEOUT,
					(unsigned)30,
					MHD_OPTION_NOTIFY_CONNECTION,
					on_connection, r,
					MHD_OPTION_NOTIFY_COMPLETED,
					on_completed, r, MHD_OPTION_END);
	const union MHD_DaemonInfo *info =
		r->d ? MHD_get_daemon_info(r->d, MHD_DAEMON_INFO_BIND_PORT)
		     : NULL;
	if (!r->log_path || !info || info->port == 0) {
		fake_receiver_stop(r);
		return NULL;
	}
	r->port = info->port;
	return r;
}

void fake_receiver_stop(struct fake_receiver *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stopping = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->d)
		MHD_stop_daemon(r->d);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r->headers);
	free(r->log_path);
	free(r);
}

const char *fake_receiver_url(const struct fake_receiver *r, const char *path,
			      char *out, size_t n)
{
	snprintf(out, n, "%s://127.0.0.1:%d%s", r->tls ? "https" : "http",
		 r->port, path);
	return out;
}

void fake_receiver_script(struct fake_receiver *r, enum recv_mode mode, int n,
			  int status, const char *headers, int delay_ms)
{
	pthread_mutex_lock(&r->mu);
	r->mode = mode;
	r->n_left = n;
	r->status = status;
	free(r->headers);
	r->headers = headers ? strdup(headers) : NULL;
	r->delay_ms = delay_ms;
	pthread_mutex_unlock(&r->mu);
}

void fake_receiver_on_request(struct fake_receiver *r,
			      void (*fn)(void *ud, const char *path,
					 const char *key,
					 const char *disposition),
			      void *ud)
{
	pthread_mutex_lock(&r->mu);
	r->on_request = fn;
	r->on_request_ud = ud;
	pthread_mutex_unlock(&r->mu);
}

size_t fake_receiver_count(const char *log_path, const char *path,
			   const char *key, bool taken_only)
{
	FILE *f = fopen(log_path, "r");
	char line[512], p[256], k[128], d[32];
	size_t n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %127s %31s", p, k, d) != 3)
			continue;
		if (path && strcmp(p, path) != 0)
			continue;
		if (key && strcmp(k, key) != 0)
			continue;
		if (taken_only && strcmp(d, "taken") != 0)
			continue;
		n++;
	}
	fclose(f);
	return n;
}
