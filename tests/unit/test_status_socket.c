/*
 * test_status_socket.c - the daemon's answer to `status NAME` on a Unix
 * socket (status_socket.h), on each backend (store_backend.h): the answer
 * is what the store's own reads say, field by field; a daemon of another
 * store, or none, is no answer; the socket file is 0600, a stale one is
 * replaced and a live one or a plain file is left alone; a hostile peer
 * costs the server one timeout at most and it goes on answering; a
 * reply that does not parse is refused whole, never half read; and a
 * server of another user (an impostor who bound the path first) is
 * refused before the question is sent (issue 44).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "report.h"
#include "status_socket.h"
#include "store.h"
#include "testutil.h"
#include "sock_impostor.h"
#include "store_backend.h"

#define T0 ((int64_t)1780000000000)
#define HOUR_MS ((int64_t)3600 * 1000)

static char sock_path[300];

/* A socket path of the test's own (a temp folder: the store's folder on
 * PostgreSQL has none). */
static const char *path_of(const char *name)
{
	snprintf(sock_path, sizeof(sock_path), "%s/%s", tu_tmpdir(), name);
	return sock_path;
}

static void rm_dir_of(const char *path)
{
	char d[300];

	snprintf(d, sizeof(d), "%s", path);
	*strrchr(d, '/') = '\0';
	tu_rmrf(d);
}

static struct status_socket *start(void **state, const char *path)
{
	struct status_socket *ss = NULL;
	struct sc_err err = {0};

	if (status_socket_start(path, tb_url(state), sc_clock_real(), &ss,
				&err) != 0)
		fail_msg("status_socket_start: %s", err.msg);
	return ss;
}

/* Schedule a: a job, a failed row with a message and details, an open
 * lost alert with a note, a pause. Schedule b: an alert and a pause of
 * its own, which a's answer must not hold. */
static void fill(struct store *s)
{
	struct sc_err err = {0};
	struct sc_retry_policy pol = {.attempts = 2,
				      .backoff = SC_BACKOFF_FIXED,
				      .delay_ms = 60000};
	int64_t id;
	bool created;

	assert_int_equal(store_job_enqueue(s, "a", T0, &pol, T0 + HOUR_MS,
					   false, &id, &created, &err), 0);
	struct ledger_row r = {.slot_ms = T0 - HOUR_MS, .job_id = 0,
			       .attempt = 2, .started_ms = T0 - HOUR_MS + 5,
			       .finished_ms = T0 - HOUR_MS + 900,
			       .retry_hint_ms = 120000};
	snprintf(r.schedule, sizeof(r.schedule), "a");
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_FAILED);
	snprintf(r.error_class, sizeof(r.error_class), "task");
	r.error_msg = "quota \"exceeded\"\n\xc3\xa9t\xc3\xa9";
	r.details_json = "{\"status\":429}";
	assert_int_equal(store_ledger_append(s, &r, &err), 0);
	const char *names[] = {"a", "b"};
	for (int i = 0; i < 2; i++) {
		struct store_alert a = {.slot_ms = T0 - 2 * HOUR_MS,
					.last_slot_ms = T0 - 2 * HOUR_MS,
					.n_slots = 1, .generation = 2,
					.status = ALERT_OPEN, .attempts = 2};
		snprintf(a.schedule, sizeof(a.schedule), "%s", names[i]);
		snprintf(a.reason, sizeof(a.reason), ALERT_REASON_LOST);
		snprintf(a.error_msg, sizeof(a.error_msg), "died on %s",
			 names[i]);
		assert_int_equal(store_alert_raise(s, &a, &created, &id, &err),
				 0);
		struct store_pause p = {.from_ms = T0, .until_ms = T0 +
					(i + 1) * HOUR_MS};
		snprintf(p.schedule, sizeof(p.schedule), "%s", names[i]);
		snprintf(p.by, sizeof(p.by), "ops-%s", names[i]);
		snprintf(p.note, sizeof(p.note), "window %d", i);
		assert_int_equal(store_pause_set(s, &p, &err), 0);
	}
}

static void same_row(const struct ledger_row *x, const struct ledger_row *y)
{
	assert_int_equal(x->id, y->id);
	assert_string_equal(x->schedule, y->schedule);
	assert_int_equal(x->slot_ms, y->slot_ms);
	assert_int_equal(x->job_id, y->job_id);
	assert_int_equal(x->attempt, y->attempt);
	assert_int_equal(x->started_ms, y->started_ms);
	assert_int_equal(x->finished_ms, y->finished_ms);
	assert_string_equal(x->outcome, y->outcome);
	assert_string_equal(x->error_class, y->error_class);
	assert_string_equal(x->error_msg, y->error_msg);
	assert_int_equal(x->retry_hint_ms, y->retry_hint_ms);
	assert_string_equal(x->details_json, y->details_json);
}

static void same_alert(const struct store_alert *x,
		       const struct store_alert *y)
{
	assert_int_equal(x->id, y->id);
	assert_string_equal(x->schedule, y->schedule);
	assert_int_equal(x->slot_ms, y->slot_ms);
	assert_int_equal(x->last_slot_ms, y->last_slot_ms);
	assert_int_equal(x->n_slots, y->n_slots);
	assert_string_equal(x->reason, y->reason);
	assert_int_equal(x->generation, y->generation);
	assert_int_equal(x->status, y->status);
	assert_int_equal(x->attempts, y->attempts);
	assert_string_equal(x->error_msg, y->error_msg);
	assert_int_equal(x->job_id, y->job_id);
	assert_int_equal(x->rounds, y->rounds);
	assert_int_equal(x->staged_rounds, y->staged_rounds);
	assert_int_equal(x->created_ms, y->created_ms);
	assert_int_equal(x->round_ms, y->round_ms);
	assert_int_equal(x->closed_ms, y->closed_ms);
	assert_string_equal(x->note, y->note);
}


/* The answer holds, field by field, what the store's own reads of the
 * schedule hold, and nothing of another schedule. */
static void the_answer_is_what_the_store_says(void **state)
{
	struct store *s = tb_open(state, sc_clock_real());
	const char *path = path_of("st.sock");
	struct report_status a;
	struct sc_err err = {0};
	struct stat st;

	fill(s);
	struct status_socket *ss = start(state, path);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);

	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 5000, &a,
					   &err), 0);
	struct store_sched_summary *sum;
	size_t n_sum;
	assert_int_equal(store_sched_summaries(s, "a", &sum, &n_sum, &err), 0);
	assert_int_equal(n_sum, 1);
	assert_int_equal(a.n_sum, 1);
	assert_string_equal(a.sum[0].schedule, "a");
	assert_memory_equal(&a.sum[0].counts, &sum[0].counts,
			    sizeof(sum[0].counts));
	assert_int_equal(a.sum[0].counts.ready_due + a.sum[0].counts.delayed,
			 1);
	assert_true(a.sum[0].has_last && sum[0].has_last);
	same_row(&a.sum[0].last, &sum[0].last);
	store_sched_summaries_free(sum, n_sum);

	struct alert_filter af = {.schedule = "a", .open_only = true,
				  .slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	struct store_alert *al;
	size_t n_al;
	assert_int_equal(store_alert_list(s, &af, &al, &n_al, &err), 0);
	assert_int_equal(n_al, 1);
	assert_int_equal(a.n_al, 1);
	same_alert(&a.al[0], &al[0]);
	free(al);

	assert_int_equal(a.n_pz, 1);
	assert_string_equal(a.pz[0].schedule, "a");
	assert_int_equal(a.pz[0].from_ms, T0);
	assert_int_equal(a.pz[0].until_ms, T0 + HOUR_MS);
	assert_string_equal(a.pz[0].by, "ops-a");
	assert_string_equal(a.pz[0].note, "window 0");
	assert_false(a.pz[0].resumed);
	report_status_dispose(&a);

	/* Read when asked: a row written now is in the next answer. */
	struct ledger_row r = {.slot_ms = T0, .attempt = 1,
			       .started_ms = T0 + 1, .finished_ms = T0 + 2};
	snprintf(r.schedule, sizeof(r.schedule), "a");
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_SUCCESS);
	assert_int_equal(store_ledger_append(s, &r, &err), 0);
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 5000, &a,
					   &err), 0);
	assert_int_equal(a.sum[0].last.slot_ms, T0);
	assert_string_equal(a.sum[0].last.outcome, LEDGER_SUCCESS);
	assert_null(a.sum[0].last.error_msg);
	assert_null(a.sum[0].last.details_json);
	report_status_dispose(&a);

	/* A schedule the store has never seen: an empty answer. */
	assert_int_equal(status_socket_ask(path, tb_url(state), "zz", 5000,
					   &a, &err), 0);
	assert_int_equal(a.n_sum + a.n_al + a.n_pz, 0);
	report_status_dispose(&a);

	status_socket_stop(ss);
	assert_int_equal(lstat(path, &st), -1);
	store_close(s);
	rm_dir_of(path);
}

/* Another store's daemon, or no daemon at all, gives no answer (the
 * command then reads the store itself). */
static void another_store_or_none_is_no_answer(void **state)
{
	struct store *s = tb_open(state, sc_clock_real());
	const char *path = path_of("st.sock");
	struct report_status a;
	struct sc_err err = {0};

	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), SC_ENOENT);
	assert_non_null(strstr(err.msg, "no daemon answers"));
	struct status_socket *ss = start(state, path);
	sc_err_clear(&err);
	assert_int_equal(status_socket_ask(path, "sqlite:/elsewhere.db", "a",
					   2000, &a, &err), SC_EINVAL);
	assert_non_null(strstr(err.msg, "another store"));
	assert_null(a.sum);
	assert_null(a.al);
	assert_null(a.pz);
	/* The same URL with libpq variables that lead elsewhere is another
	 * store on PostgreSQL; on SQLite they change nothing. */
	const char *was = getenv("PGOPTIONS");
	char keep[256] = "";
	if (was)
		snprintf(keep, sizeof(keep), "%s", was);
	setenv("PGOPTIONS", "-c search_path=elsewhere", 1);
	sc_err_clear(&err);
	int rc = status_socket_ask(path, tb_url(state), "a", 2000, &a, &err);
	if (was)
		setenv("PGOPTIONS", keep, 1);
	else
		unsetenv("PGOPTIONS");
	if (tb_is_sqlite(state)) {
		assert_int_equal(rc, 0);
		report_status_dispose(&a);
	} else {
		assert_int_equal(rc, SC_EINVAL);
	}
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), 0);
	report_status_dispose(&a);
	/* A name no store can hold is refused by the daemon. */
	char long_name[STORE_NAME_MAX + 10];
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(status_socket_ask(path, tb_url(state), long_name,
					   2000, &a, &err), SC_EIO);
	status_socket_stop(ss);
	sc_err_clear(&err);
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), SC_ENOENT);
	store_close(s);
	rm_dir_of(path);
}

/* Binds a socket at path and closes it without removing the file: what
 * a daemon killed with -9 leaves. */
static void leave_stale_socket(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
}

static void the_socket_file_is_guarded(void **state)
{
	struct store *s = tb_open(state, sc_clock_real());
	const char *path = path_of("st.sock");
	struct status_socket *ss = NULL, *other = NULL;
	struct report_status a;
	struct sc_err err = {0};
	char buf[64] = {0};

	/* A plain file is never taken. */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("keep me", f);
	fclose(f);
	assert_int_equal(status_socket_start(path, tb_url(state),
					     sc_clock_real(), &ss, &err),
			 SC_EEXIST);
	assert_null(ss);
	assert_non_null(strstr(err.msg, "is not a socket"));
	tu_slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "keep me");
	unlink(path);

	/* A stale socket is replaced. */
	leave_stale_socket(path);
	ss = start(state, path);
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), 0);
	report_status_dispose(&a);

	/* A live one is left to its daemon, which goes on answering. */
	sc_err_clear(&err);
	assert_int_equal(status_socket_start(path, tb_url(state),
					     sc_clock_real(), &other, &err),
			 SC_EEXIST);
	assert_non_null(strstr(err.msg, "another daemon answers"));
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), 0);
	report_status_dispose(&a);

	/* The file replaced under it (a newer daemon took the path): its
	 * stop leaves the newer socket in place. */
	assert_int_equal(unlink(path), 0);
	other = start(state, path);
	status_socket_stop(ss);
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), 0);
	report_status_dispose(&a);
	status_socket_stop(other);
	assert_int_equal(access(path, F_OK), -1);

	/* A path longer than a socket's is refused before anything. */
	char lp[200];
	memset(lp, 'p', sizeof(lp) - 1);
	lp[0] = '/';
	lp[sizeof(lp) - 1] = '\0';
	sc_err_clear(&err);
	assert_int_equal(status_socket_start(lp, tb_url(state),
					     sc_clock_real(), &ss, &err),
			 SC_EINVAL);
	assert_non_null(strstr(err.msg, "longer than a socket path"));
	store_close(s);
	rm_dir_of(path);
}

static int dial(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Sends what, reads the reply to its end (the server closes). */
static size_t exchange(const char *path, const char *what, size_t n,
		       char *reply, size_t cap)
{
	int fd = dial(path);
	size_t got = 0;
	ssize_t k;

	/* The server may stop reading (and close) before all is sent. */
	(void)!send(fd, what, n, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	while (got + 1 < cap && (k = read(fd, reply + got, cap - 1 - got)) > 0)
		got += (size_t)k;
	reply[got] = '\0';
	close(fd);
	return got;
}

/* Garbage, an oversized line and a peer that says nothing: each gets an
 * error or nothing, and the server answers the next ask. */
static void hostile_peers_cost_one_timeout_at_most(void **state)
{
	struct store *s = tb_open(state, sc_clock_real());
	const char *path = path_of("st.sock");
	struct status_socket *ss = start(state, path);
	struct report_status a;
	struct sc_err err = {0};
	char reply[4096];
	static char big[STATUS_SOCKET_REQ_MAX * 3];

	const char *bad[] = {
		"not json\n",
		"{\"v\": 1}\n",
		"{\"v\": 2, \"store\": \"x\", \"status\": \"a\"}\n",
		"{\"v\": 1, \"store\": \"x\", \"status\": \"a\", \"more\": 1}\n",
		"{\"v\": 1, \"store\": 5, \"status\": \"a\"}\n",
		"[1, 2, 3]\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		exchange(path, bad[i], strlen(bad[i]), reply, sizeof(reply));
		assert_non_null(strstr(reply, "\"ok\":false"));
		assert_int_equal(status_socket_ask(path, tb_url(state), "a",
						   2000, &a, &err), 0);
		report_status_dispose(&a);
	}
	/* Longer than a request may be, with no newline: closed unanswered. */
	memset(big, '{', sizeof(big));
	assert_int_equal(exchange(path, big, sizeof(big), reply,
				  sizeof(reply)), 0);
	assert_int_equal(status_socket_ask(path, tb_url(state), "a", 2000, &a,
					   &err), 0);
	report_status_dispose(&a);

	/* A silent peer holds the server for one timeout; an ask behind it
	 * that waits longer is answered once it is dropped. */
	int quiet = dial(path);
	assert_int_equal(status_socket_ask(path, tb_url(state), "a",
					   4 * STATUS_SOCKET_TIMEOUT_MS, &a,
					   &err), 0);
	report_status_dispose(&a);
	assert_int_equal(read(quiet, reply, sizeof(reply)), 0);
	close(quiet);

	status_socket_stop(ss);
	store_close(s);
	rm_dir_of(path);
}

/* A stand-in daemon that answers every connection with one canned
 * reply: what the ask does with replies no real daemon sends. */
struct fake {
	int fd;
	const char *reply;
	int n;
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	char buf[STATUS_SOCKET_REQ_MAX];

	for (int i = 0; i < f->n; i++) {
		int c = accept(f->fd, NULL, NULL);
		if (c < 0)
			break;
		(void)!read(c, buf, sizeof(buf));
		(void)!write(c, f->reply, strlen(f->reply));
		close(c);
	}
	return NULL;
}

static void asks_reply(const char *path, const char *url, const char *reply,
		       int want)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fake f = {.reply = reply, .n = 1};
	struct report_status a;
	struct sc_err err = {0};
	pthread_t t;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	f.fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(f.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f.fd, 4), 0);
	assert_int_equal(pthread_create(&t, NULL, fake_main, &f), 0);
	int rc = status_socket_ask(path, url, "a", 2000, &a, &err);
	pthread_join(t, NULL);
	close(f.fd);
	if (rc != want)
		fail_msg("reply %s: got %d (%s), want %d", reply, rc, err.msg,
			 want);
	assert_null(a.sum);
	assert_null(a.al);
	assert_null(a.pz);
	assert_int_equal(a.n_sum + a.n_al + a.n_pz, 0);
}

static void a_reply_that_does_not_parse_is_refused_whole(void **state)
{
	const char *path = path_of("fake.sock");
	char long_name[400], reply[1024];

	(void)state;
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	snprintf(reply, sizeof(reply), "{\"v\":1,\"ok\":true,\"summary\":null,"
		 "\"alerts\":[],\"pauses\":[{\"schedule\":\"%s\",\"from_ms\":1,"
		 "\"until_ms\":2,\"by\":\"\",\"note\":\"\",\"resumed\":false}]}",
		 long_name);
	asks_reply(path, "sqlite:/x.db", "", SC_EPROTO);
	asks_reply(path, "sqlite:/x.db", "not json", SC_EPROTO);
	asks_reply(path, "sqlite:/x.db", "{\"v\":2,\"ok\":true}", SC_EPROTO);
	asks_reply(path, "sqlite:/x.db", "{\"v\":1,\"ok\":false,\"error\":"
		   "\"store: the server is gone\"}", SC_EIO);
	asks_reply(path, "sqlite:/x.db", "{\"v\":1,\"ok\":true,\"summary\":"
		   "null,\"alerts\":{},\"pauses\":[]}", SC_EPROTO);
	/* A valid pause after an alert that is not: nothing kept. */
	asks_reply(path, "sqlite:/x.db", "{\"v\":1,\"ok\":true,\"summary\":"
		   "null,\"alerts\":[{\"id\":1}],\"pauses\":[]}", SC_EPROTO);
	/* A string longer than its field. */
	asks_reply(path, "sqlite:/x.db", reply, SC_EPROTO);
	/* A summary whose counts are not five numbers. */
	asks_reply(path, "sqlite:/x.db", "{\"v\":1,\"ok\":true,\"summary\":"
		   "{\"schedule\":\"a\",\"counts\":[1,2],\"last\":null},"
		   "\"alerts\":[],\"pauses\":[]}", SC_EPROTO);
	/* A string with a NUL inside. */
	asks_reply(path, "sqlite:/x.db", "{\"v\":1,\"ok\":true,\"summary\":"
		   "{\"schedule\":\"a\\u0000b\",\"counts\":[1,2,3,4,5],"
		   "\"last\":null},\"alerts\":[],\"pauses\":[]}", SC_EPROTO);
	unlink(path);
	rm_dir_of(path);
}

/*
 * Issue 44 row 5: another local user binds the socket's path first and
 * answers with a forged "no run, no alert". The ask reads who listens
 * (SO_PEERCRED) and refuses the answer, sending nothing; the caller then
 * reads the store itself. Needs root, to be that other user.
 */
static void an_answer_of_another_user_is_refused(void **state)
{
	const char *path = path_of("st.sock");
	struct tu_impostor im;
	struct report_status a;
	struct sc_err err = {0};
	char dir[300];

	(void)state;
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(chmod(dir, 01777), 0);
	if (!tu_impostor_start(&im, path, 65534,
			       "{\"v\":1,\"ok\":true,\"summary\":null,"
			       "\"alerts\":[],\"pauses\":[]}")) {
		rm_dir_of(path);
		fprintf(stderr, "skipped: being another user needs root\n");
		skip();
	}
	int rc = status_socket_ask(path, "sqlite:/x.db", "a", 2000, &a, &err);
	char sent = tu_impostor_next(&im, 5000);
	tu_impostor_stop(&im);
	if (rc != SC_EACCES)
		fail_msg("got %d (%s), want SC_EACCES", rc, err.msg);
	assert_non_null(strstr(err.msg, "answered by uid 65534, neither root "
			       "nor this user"));
	assert_int_equal(sent, 'n');
	assert_null(a.sum);
	assert_int_equal(a.n_sum + a.n_al + a.n_pz, 0);
	unlink(path);
	rm_dir_of(path);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(the_answer_is_what_the_store_says),
		cmocka_unit_test(another_store_or_none_is_no_answer),
		cmocka_unit_test(the_socket_file_is_guarded),
		cmocka_unit_test(hostile_peers_cost_one_timeout_at_most),
		cmocka_unit_test(a_reply_that_does_not_parse_is_refused_whole),
		cmocka_unit_test(an_answer_of_another_user_is_refused),
	};

	return tb_run_all("status_socket", tests,
			  sizeof(tests) / sizeof(tests[0]));
}
