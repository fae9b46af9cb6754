/*
 * test_status_socket_daemon.c - `status_socket:` (issue 15) with the real
 * daemon and the real binary, on SQLite and on the PostgreSQL of
 * tests/pg_fixture.h:
 *   - `status NAME` through the daemon prints exactly what it prints
 *     reading the store itself, as text and as --json, with a ledger
 *     row, an open alert and a running pause to show;
 *   - a daemon's stop removes its socket, and `status NAME` then reads
 *     the store itself: same output, exit 0;
 *   - PostgreSQL crashing and coming back costs asks, never an answer:
 *     the command reads the store itself meanwhile, and the daemon's
 *     handle reconnects so asks go through it again;
 *   - a daemon whose status_socket is a plain file does not start, names
 *     the file, and leaves it as it was;
 *   - `check` refuses an empty status_socket and one too long for a
 *     socket, with its line and column, and says what would stop the
 *     daemon's start: a missing folder, a file in the way; and a folder
 *     others can write, unless sticky and owned by root or this user
 *     (issue 44);
 *   - another user who bound the socket's path first (an impostor
 *     answering "no run, no alert") is no answer: `status NAME` prints
 *     what the store says (issue 44).
 * SURECRON_STATUS_VIA=daemon makes a failed ask say why on stderr, so an
 * empty stderr proves the answer came through the socket. Every wait is
 * on a condition (a log line, a file), never a fixed sleep.
 */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_util.h"
#include "testutil.h"
#include "sock_impostor.h"
#include "pg_fixture.h"
#include "daemon_stores.h"

#define PATIENCE_MS 30000
#define HOUR_MS ((int64_t)3600 * 1000)

static char g_out[65536], g_err[8192];

/* dir/c.yaml with status_socket `sock` (NULL: none): a weekly schedule,
 * whose next slot does not move while the test runs, and another. */
static void write_config(const char *dir, const char *url, const char *sock)
{
	char cfg[320];

	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n", url);
	if (sock)
		fprintf(f, "status_socket: %s\n", sock);
	fprintf(f, "schedules:\n"
		"  weekly: {cron: \"0 17 * * 5\", tz: Asia/Seoul, tasks: "
		"[{name: a, command: [/bin/true]}]}\n"
		"  other: {cron: \"0 3 1 1 *\", tz: UTC, tasks: [{name: b, "
		"command: [/bin/true]}]}\n");
	fclose(f);
}

static int run(const char *dir, const char *via, const char *const *args)
{
	char v[64];
	snprintf(v, sizeof(v), "SURECRON_STATUS_VIA=%s", via);
	const char *const env[] = {v, NULL};
	int rc = tu_run_bin(dir, dir, env, args, g_out, sizeof(g_out), g_err,
			    sizeof(g_err));

	assert_true(rc >= 0);
	return rc;
}

/* A failed row, an open alert and a running pause for weekly. */
static void fill(const char *url)
{
	struct store *s = tu_store_open(url);
	struct sc_err err = {0};
	int64_t now = tu_now_ms(), id;
	bool created;

	struct ledger_row r = {.slot_ms = now - 24 * HOUR_MS, .attempt = 2,
			       .started_ms = now - 24 * HOUR_MS + 10,
			       .finished_ms = now - 24 * HOUR_MS + 900};
	snprintf(r.schedule, sizeof(r.schedule), "weekly");
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_LOST);
	snprintf(r.error_class, sizeof(r.error_class), "task");
	r.error_msg = "quota exceeded";
	assert_int_equal(store_ledger_append(s, &r, &err), 0);
	struct store_alert a = {.slot_ms = r.slot_ms,
				.last_slot_ms = r.slot_ms, .n_slots = 1,
				.generation = 2, .status = ALERT_OPEN,
				.attempts = 2};
	snprintf(a.schedule, sizeof(a.schedule), "weekly");
	snprintf(a.reason, sizeof(a.reason), ALERT_REASON_LOST);
	snprintf(a.error_msg, sizeof(a.error_msg), "quota exceeded");
	assert_int_equal(store_alert_raise(s, &a, &created, &id, &err), 0);
	struct store_pause p = {.from_ms = now - HOUR_MS,
				.until_ms = now + 24 * HOUR_MS};
	snprintf(p.schedule, sizeof(p.schedule), "weekly");
	snprintf(p.by, sizeof(p.by), "ops-alice");
	snprintf(p.note, sizeof(p.note), "vendor outage");
	assert_int_equal(store_pause_set(s, &p, &err), 0);
	store_close(s);
}

static void status_through_the_daemon_says_the_same(void **state)
{
	char dir[256], url[1024], sock[300], via_daemon[65536];
	const char *const text[] = {"status", "--config", "c.yaml", "weekly",
				    NULL};
	const char *const json[] = {"status", "--json", "--config", "c.yaml",
				    "weekly", NULL};
	struct stat st;

	(void)state;
	if (ds_pg && !pgfx_url()[0])
		skip();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(sock, sizeof(sock), "%s/st.sock", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), "./st.sock");
	/* The daemon makes the store; the rows go in once it has. */
	pid_t pid = tu_track(tu_start_daemon(dir, "c.yaml", NULL, 0));
	assert_true(tu_wait_log(dir, "event=status_socket_started", 1,
				PATIENCE_MS));
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	fill(url);

	for (int k = 0; k < 2; k++) {
		const char *const *args = k ? json : text;
		assert_int_equal(run(dir, "daemon", args), 0);
		assert_string_equal(g_err, "");
		snprintf(via_daemon, sizeof(via_daemon), "%s", g_out);
		assert_int_equal(run(dir, "store", args), 0);
		assert_string_equal(via_daemon, g_out);
		/* What there is to show is shown. */
		assert_non_null(strstr(g_out, "vendor outage"));
		assert_non_null(strstr(g_out, "quota exceeded"));
		assert_non_null(strstr(g_out, ds_pg ? "postgresql" : "sqlite"));
	}

	/* Stopped, the daemon takes its socket with it; status reads the
	 * store itself and says the same. */
	assert_true(tu_stop_daemon(pid, PATIENCE_MS));
	assert_true(tu_wait_log(dir, "event=status_socket_stopped", 1,
				PATIENCE_MS));
	assert_int_equal(access(sock, F_OK), -1);
	assert_int_equal(run(dir, "daemon", json), 0);
	assert_non_null(strstr(g_err, "no daemon answers"));
	assert_string_equal(via_daemon, g_out);
	/* Without the debugging variable, nothing on stderr. */
	assert_int_equal(run(dir, "auto", json), 0);
	assert_string_equal(g_err, "");
	assert_string_equal(via_daemon, g_out);
	tu_rmrf(dir);
}

/* PostgreSQL crashes and comes back: the ask in flight fails (the
 * command then reads the store itself, and its output is right all the
 * same), and the daemon's handle reconnects, so asks go through it
 * again. */
static void a_server_restart_costs_an_ask_not_an_answer(void **state)
{
	char dir[256], url[1024], want[65536];
	const char *const args[] = {"status", "--config", "c.yaml", "weekly",
				    NULL};

	(void)state;
	if (!pgfx_restartable())
		skip();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	write_config(dir, ds_store_url(dir, url, sizeof(url)), "st.sock");
	tu_track(tu_start_daemon(dir, "c.yaml", NULL, 0));
	assert_true(tu_wait_log(dir, "event=status_socket_started", 1,
				PATIENCE_MS));
	fill(url);
	assert_int_equal(run(dir, "store", args), 0);
	snprintf(want, sizeof(want), "%s", g_out);
	assert_int_equal(run(dir, "daemon", args), 0);
	assert_string_equal(g_err, "");

	assert_int_equal(pgfx_server("crash", NULL, 0), 0);
	assert_int_equal(pgfx_server("start", NULL, 0), 0);
	int64_t end = tu_now_ms() + PATIENCE_MS;
	size_t fell_back = 0;
	for (;;) {
		assert_int_equal(run(dir, "daemon", args), 0);
		assert_string_equal(g_out, want);
		if (!g_err[0])
			break;
		assert_non_null(strstr(g_err, "status_socket:"));
		fell_back++;
		assert_true(tu_now_ms() < end);
		tu_sleep_ms(20);
	}
	/* The daemon's handle saw the crash at most once or twice (its next
	 * read reconnects, or waits out the reconnect backoff). */
	assert_true(fell_back <= 50);
	tu_rmrf(dir);
}

static void a_plain_file_stops_the_start(void **state)
{
	char dir[256], url[1024], path[300], buf[64] = {0};

	(void)state;
	if (ds_pg && !pgfx_url()[0])
		skip();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("my notes", f);
	fclose(f);
	write_config(dir, ds_store_url(dir, url, sizeof(url)), "notes.txt");
	pid_t pid = tu_track(tu_start_daemon(dir, "c.yaml", NULL, 0));
	int st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	assert_int_equal(tu_log_count(dir, "event=status_socket_failed"), 1);
	assert_true(tu_log_count(dir, "notes.txt exists and is not a "
				      "socket") >= 1);
	tu_slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "my notes");
	tu_rmrf(dir);
}

static void check_refuses_bad_paths(void **state)
{
	char dir[256], cfg[320], long_path[200];
	const char *const args[] = {"check", "--config", "c.yaml", NULL};

	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	memset(long_path, 'p', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = '\0';
	const char *bad[][2] = {
		{"\"\"", "status_socket: needs a file path"},
		{long_path, "a socket path holds at most 107"},
		{"[a, b]", "status_socket"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(cfg, "w");
		assert_non_null(f);
		fprintf(f, "store: sqlite:./s.db\nstatus_socket: %s\n"
			"schedules:\n  a: {cron: \"@daily\", tasks: [{name: t, "
			"command: [/bin/true]}]}\n", bad[i][0]);
		fclose(f);
		assert_int_equal(run(dir, "auto", args), 2);
		if (!strstr(g_err, bad[i][1]) || !strstr(g_err, "c.yaml:2:"))
			fail_msg("%s: %s", bad[i][0], g_err);
	}
	/* What the daemon would refuse at its start, check says first: a
	 * folder that is not there, a file in the way. A stale socket is
	 * no problem (the daemon replaces it). */
	char notes[320];
	snprintf(notes, sizeof(notes), "%s/notes.txt", dir);
	FILE *nf = fopen(notes, "w");
	assert_non_null(nf);
	fclose(nf);
	/* Folders others can write (issue 44): another user could make
	 * the socket first. Sticky and owned by root (or this user), as
	 * /tmp is, the daemon's socket cannot be taken from it. */
	const char *modes[][2] = {{"open", "0777"}, {"grp", "0770"},
				  {"sticky", "1777"}};
	for (size_t i = 0; i < 3; i++) {
		char d[320];
		snprintf(d, sizeof(d), "%s/%s", dir, modes[i][0]);
		assert_int_equal(mkdir(d, 0700), 0);
		assert_int_equal(chmod(d, (mode_t)strtol(modes[i][1], NULL,
							 8)), 0);
	}
	bool root = geteuid() == 0;
	if (root) {
		char d[320];
		snprintf(d, sizeof(d), "%s/theirs", dir);
		assert_int_equal(mkdir(d, 0700), 0);
		assert_int_equal(chmod(d, 01777), 0);
		assert_int_equal(chown(d, 65534, 65534), 0);
	}
	const char *env[][2] = {
		{"./nowhere/st.sock", "folder"},
		{"notes.txt", "notes.txt exists and is not a socket"},
		{"./st.sock", NULL},
		{"./open/st.sock", "/open is writable by any user "
				   "(mode 0777) and not sticky"},
		{"./grp/st.sock", "/grp is writable by its group "
				  "(mode 0770)"},
		{"./sticky/st.sock", NULL},
		{root ? "./theirs/st.sock" : "./st.sock",
		 root ? "/theirs is writable by any user (mode "
			"1777) and not sticky with owner root or this user"
		      : NULL},
	};
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		FILE *f = fopen(cfg, "w");
		assert_non_null(f);
		fprintf(f, "store: sqlite:./s.db\nstatus_socket: %s\n"
			"alerts: {targets: [t]}\ntargets:\n  t: {kind: file, "
			"path: ./out.jsonl}\nschedules:\n  a: {cron: \"@daily\","
			" targets: [t], tasks: [{name: t, command: [/bin/true]}]}"
			"\n", env[i][0]);
		fclose(f);
		int rc = run(dir, "auto", args);
		if (!env[i][1]) {
			if (rc != 0)
				fail_msg("%s: exit %d: %s", env[i][0], rc, g_err);
			continue;
		}
		assert_int_equal(rc, 2);
		if (!strstr(g_err, env[i][1]) ||
		    !strstr(g_err, "c.yaml:2:"))
			fail_msg("%s: %s", env[i][0], g_err);
	}
	tu_rmrf(dir);
}

/*
 * Issue 44 row 5: another local user binds the socket's path before the
 * daemon (a sticky folder lets anyone make a name there) and answers
 * `status NAME` with "no run, no open alert". The command refuses the
 * answer of a server that is neither root nor its own user and prints
 * what the store says: the lost slot and its open alert. Needs root, to
 * be that other user.
 */
static void an_impostor_on_the_path_is_no_answer(void **state)
{
	char dir[256], url[1024], sock[320], truth[65536];
	const char *const args[] = {"status", "--config", "c.yaml", "weekly",
				    NULL};
	struct tu_impostor im;

	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(sock, sizeof(sock), "%s/pub", dir);
	assert_int_equal(mkdir(sock, 0700), 0);
	assert_int_equal(chmod(sock, 01777), 0);
	assert_int_equal(chmod(dir, 0711), 0);
	snprintf(sock, sizeof(sock), "%s/pub/st.sock", dir);
	write_config(dir, ds_store_url(dir, url, sizeof(url)),
		     "./pub/st.sock");
	fill(url);
	assert_int_equal(run(dir, "store", args), 0);
	snprintf(truth, sizeof(truth), "%s", g_out);
	assert_non_null(strstr(truth, "quota exceeded"));

	if (!tu_impostor_start(&im, sock, 65534,
			       "{\"v\":1,\"ok\":true,\"summary\":null,"
			       "\"alerts\":[],\"pauses\":[]}")) {
		tu_rmrf(dir);
		fprintf(stderr, "skipped: being another user needs root\n");
		skip();
	}
	int rc = run(dir, "daemon", args);
	char sent = tu_impostor_next(&im, 5000);
	tu_impostor_stop(&im);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(g_err, "answered by uid 65534"));
	assert_string_equal(g_out, truth);
	assert_int_equal(sent, 'n');
	tu_rmrf(dir);
}

int main(void)
{
#define SQ(t) cmocka_unit_test_setup_teardown(t, ds_sqlite_setup, ds_teardown)
#define PG(t) cmocka_unit_test_setup_teardown(t, ds_pg_setup, ds_teardown)
	const struct CMUnitTest tests[] = {
		SQ(status_through_the_daemon_says_the_same),
		SQ(a_plain_file_stops_the_start),
		SQ(check_refuses_bad_paths),
		SQ(an_impostor_on_the_path_is_no_answer),
	};
	const struct CMUnitTest pg_tests[] = {
		PG(status_through_the_daemon_says_the_same),
		PG(a_plain_file_stops_the_start),
		PG(a_server_restart_costs_an_ask_not_an_answer),
	};
	int rc = cmocka_run_group_tests_name("status_socket_daemon_sqlite",
					     tests, NULL, NULL);
	rc += cmocka_run_group_tests_name("status_socket_daemon_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
