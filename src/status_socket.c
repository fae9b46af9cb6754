/*
 * status_socket.c - the daemon's answer to `status NAME` on a Unix socket,
 * and the command's ask (status_socket.h says what and why).
 *
 * Invariants:
 *   - the server reads the store only when asked, with the reads status
 *     itself makes, so an answer is never older than its question;
 *   - a request is one line of at most STATUS_SOCKET_REQ_MAX bytes, read
 *     and answered within STATUS_SOCKET_TIMEOUT_MS each way; a peer that
 *     is slow, silent or hostile costs the server that and no more, and
 *     one connection at a time is served (the others wait in the
 *     listen backlog, then their ask times out and reads the store);
 *   - the socket file is 0600 before anyone can connect (chmod before
 *     listen), and a peer of another user (not root) is answered
 *     nothing;
 *   - the ask takes an answer only from a server of its own user or
 *     root (SO_PEERCRED, checked before a byte is sent): in a folder
 *     others can write, another user may bind the path first and
 *     forge "success, no open alert" (issue 44);
 *   - stop removes the file only while it is the one this server made
 *     (same inode), so it never takes a newer daemon's socket away;
 *   - the ask never fails the command: every failure is a code and a
 *     message, and the caller reads the store itself;
 *   - a reply is checked field by field: a string that does not fit its
 *     array, or a field missing or of the wrong type, refuses the whole
 *     reply (SC_EPROTO), never half of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "report.h"
#include "status_socket.h"
#include "thread.h"
#include "url.h"

#define PROTO_VERSION 1

struct status_socket {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char store_id[17];
	int fd;                 /* the listening socket */
	int stop_pipe[2];       /* a byte on [1] stops the thread */
	dev_t dev;              /* the socket file it made */
	ino_t ino;
	struct store *store;    /* its own handle, for its thread only */
	pthread_t thread;
	bool started;
};

static uint64_t fnv(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	/* The NUL too, so ("ab", "c") and ("a", "bc") differ. */
	return (h ^ 0xff) * 0x100000001b3ULL;
}

void status_socket_store_id(const char *store_url, char out[17])
{
	/* The libpq variables that can make one URL name another database
	 * (a URL leaves out what they supply): a command run with other
	 * ones reads where the daemon does not, so it must not take the
	 * daemon's answer. Passwords are no part of where. */
	static const char *const pgenv[] = {
		"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER",
		"PGOPTIONS", "PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR",
		"PGTARGETSESSIONATTRS", NULL};
	uint64_t h = fnv(0xcbf29ce484222325ULL, store_url);

	if (url_is_pg(store_url))
		for (size_t i = 0; pgenv[i]; i++) {
			const char *v = getenv(pgenv[i]);
			h = fnv(fnv(h, pgenv[i]), v ? v : "\x01unset");
		}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for ev until the monotonic deadline: 1 ready,
 * 0 timed out, -1 error. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = ev};
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* Writes all of buf before the deadline: 0, SC_ETIMEDOUT or SC_EIO. */
static int send_all(int fd, const char *buf, size_t n, int64_t deadline)
{
	while (n > 0) {
		int w = wait_fd(fd, POLLOUT, deadline);
		if (w <= 0)
			return w == 0 ? SC_ETIMEDOUT : SC_EIO;
		ssize_t k = send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return SC_EIO;
		}
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Reads until EOF (or, with line, a newline) into a new NUL-terminated
 * buffer of at most max bytes, before the deadline: 0 and *out, or
 * SC_ETIMEDOUT, SC_ETOOBIG, SC_EIO, SC_ENOMEM. */
static int recv_all(int fd, size_t max, bool line, int64_t deadline,
		    char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);

	*out = NULL;
	if (!b)
		return SC_ENOMEM;
	for (;;) {
		if (line && n > 0 && memchr(b, '\n', n))
			break;
		int w = wait_fd(fd, POLLIN, deadline);
		if (w <= 0) {
			free(b);
			return w == 0 ? SC_ETIMEDOUT : SC_EIO;
		}
		if (n == cap) {
			if (cap >= max) {
				free(b);
				return SC_ETOOBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			char *nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return SC_ENOMEM;
			}
			b = nb;
		}
		ssize_t k = recv(fd, b + n, cap - n, MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			free(b);
			return SC_EIO;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

/* ---- the answer as JSON, and back ---------------------------------------- */

static int set(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

/* A string field: cleaned when not UTF-8 (report_json_text), null for
 * NULL. */
static int set_text(json_t *o, const char *k, const char *s)
{
	return s ? set(o, k, report_json_text(s))
		 : json_object_set_new(o, k, json_null());
}

static json_t *row_json(const struct ledger_row *r)
{
	json_t *o = json_object();
	int bad = !o;

	if (o) {
		bad |= set(o, "id", json_integer(r->id));
		bad |= set_text(o, "schedule", r->schedule);
		bad |= set(o, "slot_ms", json_integer(r->slot_ms));
		bad |= set(o, "job_id", json_integer(r->job_id));
		bad |= set(o, "attempt", json_integer(r->attempt));
		bad |= set(o, "started_ms", json_integer(r->started_ms));
		bad |= set(o, "finished_ms", json_integer(r->finished_ms));
		bad |= set_text(o, "outcome", r->outcome);
		bad |= set_text(o, "error_class", r->error_class);
		bad |= set_text(o, "error_msg", r->error_msg);
		bad |= set(o, "retry_hint_ms", json_integer(r->retry_hint_ms));
		bad |= set_text(o, "details_json", r->details_json);
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *summary_json(const struct store_sched_summary *s)
{
	const struct store_counts *c = &s->counts;
	json_t *o = json_object();
	int bad = !o;

	if (o) {
		bad |= set_text(o, "schedule", s->schedule);
		bad |= set(o, "counts", json_pack("[IIIII]",
			(json_int_t)c->ready_due, (json_int_t)c->delayed,
			(json_int_t)c->active, (json_int_t)c->done,
			(json_int_t)c->dead));
		bad |= s->has_last ? set(o, "last", row_json(&s->last))
				   : json_object_set_new(o, "last",
							 json_null());
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *alert_json(const struct store_alert *a)
{
	return json_pack("{sI so? sI sI sI so? sI si si so? sI si si sI sI sI so?}",
		"id", (json_int_t)a->id,
		"schedule", report_json_text(a->schedule),
		"slot_ms", (json_int_t)a->slot_ms,
		"last_slot_ms", (json_int_t)a->last_slot_ms,
		"n_slots", (json_int_t)a->n_slots,
		"reason", report_json_text(a->reason),
		"generation", (json_int_t)a->generation,
		"status", (int)a->status,
		"attempts", a->attempts,
		"error_msg", report_json_text(a->error_msg),
		"job_id", (json_int_t)a->job_id,
		"rounds", a->rounds,
		"staged_rounds", a->staged_rounds,
		"created_ms", (json_int_t)a->created_ms,
		"round_ms", (json_int_t)a->round_ms,
		"closed_ms", (json_int_t)a->closed_ms,
		"note", report_json_text(a->note));
}

static json_t *pause_json(const struct store_pause *p)
{
	return json_pack("{so? sI sI so? so? sb}",
		"schedule", report_json_text(p->schedule),
		"from_ms", (json_int_t)p->from_ms,
		"until_ms", (json_int_t)p->until_ms,
		"by", report_json_text(p->by),
		"note", report_json_text(p->note),
		"resumed", (int)p->resumed);
}

/* Copies string field k of o into dst[cap]: 0, or -1 when it is missing,
 * not a string, or does not fit. */
static int get_str(const json_t *o, const char *k, char *dst, size_t cap)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_string(v) || json_string_length(v) >= cap ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -1;
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

/* A string field that may be null, copied into a new string (*dst NULL
 * for null). 0, or -1. */
static int get_owned(const json_t *o, const char *k, char **dst)
{
	const json_t *v = json_object_get(o, k);

	*dst = NULL;
	if (json_is_null(v))
		return 0;
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -1;
	*dst = strdup(json_string_value(v));
	return *dst ? 0 : -1;
}

static int get_i64(const json_t *o, const char *k, int64_t *dst)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_integer(v))
		return -1;
	*dst = json_integer_value(v);
	return 0;
}

static int get_int(const json_t *o, const char *k, int *dst)
{
	int64_t v;

	if (get_i64(o, k, &v) || v < 0 || v > 1000000000)
		return -1;
	*dst = (int)v;
	return 0;
}

static int row_parse(const json_t *o, struct ledger_row *r)
{
	memset(r, 0, sizeof(*r));
	if (!json_is_object(o))
		return -1;
	int bad = get_i64(o, "id", &r->id) |
		get_str(o, "schedule", r->schedule, sizeof(r->schedule)) |
		get_i64(o, "slot_ms", &r->slot_ms) |
		get_i64(o, "job_id", &r->job_id) |
		get_int(o, "attempt", &r->attempt) |
		get_i64(o, "started_ms", &r->started_ms) |
		get_i64(o, "finished_ms", &r->finished_ms) |
		get_str(o, "outcome", r->outcome, sizeof(r->outcome)) |
		get_str(o, "error_class", r->error_class,
			sizeof(r->error_class)) |
		get_i64(o, "retry_hint_ms", &r->retry_hint_ms);
	bad |= get_owned(o, "error_msg", &r->error_msg);
	bad |= get_owned(o, "details_json", &r->details_json);
	return bad ? -1 : 0;
}

static int summary_parse(const json_t *o, struct store_sched_summary *s)
{
	json_int_t c[5];
	const json_t *last;

	memset(s, 0, sizeof(*s));
	if (!json_is_object(o) ||
	    get_str(o, "schedule", s->schedule, sizeof(s->schedule)) ||
	    json_unpack(json_object_get(o, "counts"), "[IIIII!]", &c[0],
			&c[1], &c[2], &c[3], &c[4]) != 0)
		return -1;
	s->counts = (struct store_counts){c[0], c[1], c[2], c[3], c[4]};
	last = json_object_get(o, "last");
	if (json_is_null(last))
		return 0;
	s->has_last = true;
	return row_parse(last, &s->last);
}

static int alert_parse(const json_t *o, struct store_alert *a)
{
	int st = 0;

	memset(a, 0, sizeof(*a));
	if (!json_is_object(o))
		return -1;
	int bad = get_i64(o, "id", &a->id) |
		get_str(o, "schedule", a->schedule, sizeof(a->schedule)) |
		get_i64(o, "slot_ms", &a->slot_ms) |
		get_i64(o, "last_slot_ms", &a->last_slot_ms) |
		get_i64(o, "n_slots", &a->n_slots) |
		get_str(o, "reason", a->reason, sizeof(a->reason)) |
		get_i64(o, "generation", &a->generation) |
		get_int(o, "status", &st) |
		get_int(o, "attempts", &a->attempts) |
		get_str(o, "error_msg", a->error_msg, sizeof(a->error_msg)) |
		get_i64(o, "job_id", &a->job_id) |
		get_int(o, "rounds", &a->rounds) |
		get_int(o, "staged_rounds", &a->staged_rounds) |
		get_i64(o, "created_ms", &a->created_ms) |
		get_i64(o, "round_ms", &a->round_ms) |
		get_i64(o, "closed_ms", &a->closed_ms) |
		get_str(o, "note", a->note, sizeof(a->note));
	if (bad || st > ALERT_CLOSED)
		return -1;
	a->status = (enum alert_status)st;
	return 0;
}

static int pause_parse(const json_t *o, struct store_pause *p)
{
	const json_t *r = json_object_get(o, "resumed");

	memset(p, 0, sizeof(*p));
	if (!json_is_object(o) || !json_is_boolean(r))
		return -1;
	p->resumed = json_is_true(r);
	return (get_str(o, "schedule", p->schedule, sizeof(p->schedule)) |
		get_i64(o, "from_ms", &p->from_ms) |
		get_i64(o, "until_ms", &p->until_ms) |
		get_str(o, "by", p->by, sizeof(p->by)) |
		get_str(o, "note", p->note, sizeof(p->note))) ? -1 : 0;
}

/* Fills *a from a reply's object: 0, or -1 (with *a empty). */
static int answer_parse(const json_t *o, struct report_status *a)
{
	const json_t *sum = json_object_get(o, "summary");
	const json_t *al = json_object_get(o, "alerts");
	const json_t *pz = json_object_get(o, "pauses");
	size_t i;

	memset(a, 0, sizeof(*a));
	if (!json_is_array(al) || !json_is_array(pz) ||
	    (!json_is_null(sum) && !json_is_object(sum)))
		return -1;
	if (json_is_object(sum)) {
		if (!(a->sum = calloc(1, sizeof(*a->sum))))
			return -1;
		a->n_sum = 1;
		if (summary_parse(sum, a->sum))
			goto bad;
	}
	if (json_array_size(al) &&
	    !(a->al = calloc(json_array_size(al), sizeof(*a->al))))
		goto bad;
	for (i = 0; i < json_array_size(al); i++) {
		if (alert_parse(json_array_get(al, i), &a->al[i]))
			goto bad;
		a->n_al++;
	}
	if (json_array_size(pz) &&
	    !(a->pz = calloc(json_array_size(pz), sizeof(*a->pz))))
		goto bad;
	for (i = 0; i < json_array_size(pz); i++) {
		if (pause_parse(json_array_get(pz, i), &a->pz[i]))
			goto bad;
		a->n_pz++;
	}
	return 0;
bad:
	report_status_dispose(a);
	return -1;
}

/* ---- the server ------------------------------------------------------------ */

static json_t *error_reply(const char *msg)
{
	return json_pack("{si sb so?}", "v", PROTO_VERSION, "ok", 0, "error",
			 report_json_text(msg));
}

/* The store's answer for one schedule: report_status_fetch's reads, the
 * pauses narrowed to the schedule's. */
static json_t *answer(struct status_socket *s, const char *name)
{
	struct report_status rs;
	struct sc_err err = {0};
	json_t *o = NULL, *ja = NULL, *jp = NULL;

	if (report_status_fetch(s->store, name, &rs, &err)) {
		o = error_reply(err.msg);
		goto done;
	}
	ja = json_array();
	jp = json_array();
	if (!ja || !jp)
		goto done;
	for (size_t i = 0; i < rs.n_al; i++)
		if (json_array_append_new(ja, alert_json(&rs.al[i])))
			goto done;
	for (size_t i = 0; i < rs.n_pz; i++)
		if (strcmp(rs.pz[i].schedule, name) == 0 &&
		    json_array_append_new(jp, pause_json(&rs.pz[i])))
			goto done;
	o = json_pack("{si sb so* so so}", "v", PROTO_VERSION, "ok", 1,
		      "summary", rs.n_sum ? summary_json(&rs.sum[0])
					  : json_null(),
		      "alerts", ja, "pauses", jp);
	ja = jp = NULL; /* taken by json_pack, even when it failed */
done:
	json_decref(ja);
	json_decref(jp);
	report_status_dispose(&rs);
	return o;
}

/* One connection: a request line in, one reply out, closed. */
static void serve_one(struct status_socket *s, int fd)
{
	int64_t deadline = mono_ms() + STATUS_SOCKET_TIMEOUT_MS;
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	char *req = NULL, *out = NULL;
	size_t len;
	json_t *q = NULL, *reply = NULL;
	const char *name = NULL, *store = NULL;
	int v = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 ||
	    (cr.uid != 0 && cr.uid != geteuid()))
		return;
	if (recv_all(fd, STATUS_SOCKET_REQ_MAX, true, deadline, &req,
		     &len) != 0)
		return;
	q = json_loadb(req, len, JSON_DISABLE_EOF_CHECK, NULL);
	if (!q || json_unpack(q, "{si ss ss !}", "v", &v, "store", &store,
			      "status", &name) != 0 || v != PROTO_VERSION)
		reply = error_reply("a request is {\"v\": 1, \"store\": ID, "
				    "\"status\": SCHEDULE}");
	else if (strcmp(store, s->store_id) != 0)
		reply = error_reply("another store");
	else if (!*name || strlen(name) >= STORE_NAME_MAX)
		reply = error_reply("no such schedule name");
	else
		reply = answer(s, name);
	if (reply && (out = json_dumps(reply, JSON_COMPACT)))
		send_all(fd, out, strlen(out), deadline);
	free(out);
	json_decref(reply);
	json_decref(q);
	free(req);
}

static void *serve(void *arg)
{
	struct status_socket *s = arg;
	struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN},
			      {.fd = s->stop_pipe[0], .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0) {
			/* Out of descriptors or memory: the connection stays
			 * in the backlog and poll would wake at once, so
			 * wait a little (or for the stop) before trying
			 * again. */
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				poll(&p[1], 1, 100);
			continue;
		}
		serve_one(s, c);
		close(c);
	}
	return NULL;
}

static int fill_addr(const char *path, struct sockaddr_un *a,
		     struct sc_err *err)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return sc_err_set(err, SC_EINVAL, "status_socket: %s is "
				  "longer than a socket path can be (%zu "
				  "bytes)", path, sizeof(a->sun_path) - 1);
	memcpy(a->sun_path, path, strlen(path) + 1);
	return 0;
}

/* A file at path: none (0), a socket nobody answers on (removed, 0), a
 * live socket or another kind of file (SC_EEXIST). */
static int clear_stale(const char *path, const struct sockaddr_un *a,
		       struct sc_err *err)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : sc_err_set(err, SC_EIO,
			"status_socket: %s: %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return sc_err_set(err, SC_EEXIST, "status_socket: %s exists "
				  "and is not a socket (left alone)", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sc_err_set(err, SC_EIO, "status_socket: socket: %s",
				  strerror(errno));
	int r = connect(fd, (const struct sockaddr *)a, sizeof(*a));
	int e = errno;
	close(fd);
	if (r == 0)
		return sc_err_set(err, SC_EEXIST, "status_socket: %s: another "
				  "daemon answers on it", path);
	if (e != ECONNREFUSED)
		return sc_err_set(err, SC_EIO, "status_socket: %s: %s", path,
				  strerror(e));
	if (unlink(path) != 0 && errno != ENOENT)
		return sc_err_set(err, SC_EIO, "status_socket: %s: cannot "
				  "remove the stale socket: %s", path,
				  strerror(errno));
	return 0;
}

static void release(struct status_socket *s)
{
	struct stat st;

	if (s->fd >= 0) {
		if (stat(s->path, &st) == 0 && st.st_dev == s->dev &&
		    st.st_ino == s->ino)
			unlink(s->path);
		close(s->fd);
	}
	for (int i = 0; i < 2; i++)
		if (s->stop_pipe[i] >= 0)
			close(s->stop_pipe[i]);
	store_close(s->store);
	free(s);
}

int status_socket_start(const char *path, const char *store_url,
			struct sc_clock *clock, struct status_socket **out,
			struct sc_err *err)
{
	struct sockaddr_un a;
	struct stat st;
	int rc;

	if ((rc = fill_addr(path, &a, err)))
		return rc;
	struct status_socket *s = calloc(1, sizeof(*s));
	if (!s)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	s->fd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	memcpy(s->path, a.sun_path, sizeof(s->path));
	status_socket_store_id(store_url, s->store_id);
	if ((rc = store_open(store_url, clock, &s->store, err)))
		goto fail;
	if ((rc = clear_stale(path, &a, err)))
		goto fail;
	if (pipe2(s->stop_pipe, O_CLOEXEC) != 0 ||
	    (s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, 0)) < 0) {
		rc = sc_err_set(err, SC_EIO, "status_socket: %s",
				strerror(errno));
		goto fail;
	}
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		rc = sc_err_set(err, errno == EADDRINUSE ? SC_EEXIST : SC_EIO,
				"status_socket: cannot make %s: %s", path,
				strerror(errno));
		goto fail;
	}
	/* Mode, then the inode stop compares, then listen: no peer can
	 * connect before the file is 0600. */
	if (chmod(path, 0600) != 0 || stat(path, &st) != 0) {
		rc = sc_err_set(err, SC_EIO, "status_socket: %s: %s", path,
				strerror(errno));
		unlink(path);
		goto fail;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	if (listen(s->fd, 16) != 0 ||
	    thread_start(&s->thread, serve, s) != 0) {
		rc = sc_err_set(err, SC_EIO, "status_socket: cannot listen "
				"on %s", path);
		goto fail;
	}
	s->started = true;
	*out = s;
	return 0;
fail:
	release(s);
	return rc;
}

void status_socket_stop(struct status_socket *s)
{
	if (!s)
		return;
	if (s->started) {
		char b = 1;
		while (write(s->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
			;
		pthread_join(s->thread, NULL);
	}
	release(s);
}

/* ---- the ask ---------------------------------------------------------------- */

int status_socket_ask(const char *path, const char *store_url,
		      const char *schedule, int timeout_ms,
		      struct report_status *out, struct sc_err *err)
{
	int64_t deadline = mono_ms() + timeout_ms;
	struct sockaddr_un a;
	char id[17], *line = NULL, *reply = NULL;
	size_t len = 0;
	json_t *q, *o = NULL;
	int rc, fd = -1;

	memset(out, 0, sizeof(*out));
	if ((rc = fill_addr(path, &a, err)))
		return rc;
	status_socket_store_id(store_url, id);
	q = json_pack("{si ss ss}", "v", PROTO_VERSION, "store", id,
		      "status", schedule);
	line = q ? json_dumps(q, JSON_COMPACT) : NULL;
	json_decref(q);
	if (!line)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = sc_err_set(err, SC_EIO, "socket: %s", strerror(errno));
		goto done;
	}
	/* A Unix socket's connect does not wait for an accept: it succeeds
	 * at once, or EAGAIN when the backlog is full (a busy daemon). */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		rc = sc_err_set(err, errno == EAGAIN ? SC_ETIMEDOUT
				: SC_ENOENT, "%s: no daemon answers: %s", path,
				strerror(errno));
		goto done;
	}
	/* Who listens: the credentials the server had when it called
	 * listen, kept by the kernel, so no peer can pretend. */
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0) {
		rc = sc_err_set(err, SC_EIO, "%s: cannot tell who answers: "
				"%s", path, strerror(errno));
		goto done;
	}
	if (cr.uid != 0 && cr.uid != geteuid()) {
		rc = sc_err_set(err, SC_EACCES, "%s: answered by uid %lu, "
				"neither root nor this user (uid %lu): not the "
				"daemon's answer, ignored", path,
				(unsigned long)cr.uid,
				(unsigned long)geteuid());
		goto done;
	}
	size_t n = strlen(line);
	line[n] = '\n'; /* json_dumps's NUL: the line's end instead */
	rc = send_all(fd, line, n + 1, deadline);
	if (rc == 0)
		shutdown(fd, SHUT_WR);
	if (rc == 0)
		rc = recv_all(fd, STATUS_SOCKET_REPLY_MAX, false, deadline,
			      &reply, &len);
	if (rc) {
		rc = sc_err_set(err, rc, "%s: %s", path, rc == SC_ETIMEDOUT
				? "no answer in time" : "the exchange failed");
		goto done;
	}
	o = json_loadb(reply, len, 0, NULL);
	const json_t *ok = json_object_get(o, "ok");
	json_int_t v = json_integer_value(json_object_get(o, "v"));
	if (!json_is_boolean(ok) || v != PROTO_VERSION) {
		rc = sc_err_set(err, SC_EPROTO, "%s: a reply that is not the "
				"daemon's", path);
	} else if (!json_is_true(ok)) {
		const char *m = json_string_value(json_object_get(o, "error"));
		rc = sc_err_set(err, m && strcmp(m, "another store") == 0
				? SC_EINVAL : SC_EIO, "%s: the daemon: %s",
				path, m ? m : "no reason given");
	} else if (answer_parse(o, out) != 0) {
		rc = sc_err_set(err, SC_EPROTO, "%s: a reply that does not "
				"parse", path);
	} else {
		rc = 0;
	}
done:
	if (fd >= 0)
		close(fd);
	json_decref(o);
	free(line);
	free(reply);
	return rc;
}
