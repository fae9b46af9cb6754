/*
 * test_timing_daemon.c - issue 17's catchup_window, jitter and deadline
 * in a real daemon (`surecron run`) on the test clock seam
 * (SURECRON_TEST_CLOCK and _RATE), with real task processes, on SQLite
 * and on PostgreSQL (SURECRON_TEST_PG):
 *   - the seed's weekly timeline (4 attempts, exponential from 30 min)
 *     with `jitter: 10m` and `deadline: 60m`, the task always failing:
 *     attempt 1 starts at slot + the offset the library computes here
 *     (not at the slot), attempt 2 30 min after it, and attempt 2's
 *     failure loses the slot at once, cause deadline, before the
 *     deadline; no attempt 3;
 *   - catchup_window: a daemon stopped for 20 hours of an hourly schedule
 *     with `catchup: all` and `catchup_window: 3h` runs only the 3 late
 *     slots inside the window when it starts again; the 17 others are
 *     missed rows.
 *   - a wall clock stepped under libfaketime (issue 42; skipped when the
 *     library is not installed), its offset changed at run time through
 *     FAKETIME_TIMESTAMP_FILE while CLOCK_MONOTONIC stays real: +2 h for
 *     15 s then corrected runs every slot at its real time, none early,
 *     none written off as missed; a retry due in 3 s runs within seconds
 *     after a -1 h step; after -1 h and a kill -9, the restarted daemon
 *     recovers the running job within its lease's real length; on
 *     PostgreSQL, one node of two 2 h ahead from its start holds its
 *     time to the server's: no slot early, none missed, none recovered;
 *     and it says so: its offset in its node record, marked in `status`
 *     and `status --json`, counted in /metrics, warned of by `check
 *     --store` (an error with --strict), and a host 2 h ahead is told by
 *     `check --store` itself.
 * Every wait is on a condition (ledger rows, jobs), never a fixed sleep.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "daemon_util.h"
#include "scheduler.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define MIN (60 * 1000LL)
#define HOUR (60 * MIN)
#define PATIENCE_MS 30000

static char dir[256], cfg[320], url[1100];

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", dir);
	snprintf(url, sizeof(url), "%s", tb_url(state));
	return url[0] ? 0 : -1;
}

static int teardown(void **state)
{
	tu_reap_all();
	tu_rmrf(dir);
	return 0;
}

static void write_cfg(const char *schedule)
{
	FILE *f = fopen(cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nschedules:\n%s", url, schedule);
	fclose(f);
}

static pid_t start(const char *clock, const char *rate)
{
	static char c[64], r[64];

	snprintf(c, sizeof(c), "SURECRON_TEST_CLOCK=%s", clock);
	snprintf(r, sizeof(r), "SURECRON_TEST_CLOCK_RATE=%s", rate);
	const char *envs[] = {c, r, "SURECRON_LOG=warn", NULL};
	return tu_track(tu_start_daemon(dir, cfg, envs, 0));
}

static void stop(pid_t pid)
{
	assert_true(tu_stop_daemon(pid, 10000));
}

/* The rows of schedule, oldest first (caller frees). */
static size_t rows_of(const char *schedule, struct ledger_row **rows)
{
	struct store *s = tu_store_open(url);
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, rows, &n, NULL), 0);
	store_close(s);
	return n;
}

static void weekly_jitter_and_deadline(void **state)
{
	struct config *c = NULL;
	struct sc_err e = {0};
	int64_t slot = iso("2026-11-27T17:00:00Z");

	TU_NEED_TEST_SEAMS();
	write_cfg("  weekly:\n"
		  "    cron: \"0 17 * * 5\"\n"
		  "    tz: UTC\n"
		  "    jitter: 10m\n"
		  "    deadline: 60m\n"
		  "    tasks:\n"
		  "      - {name: t, command: [/bin/sh, -c, \"echo quota >&2; "
		  "exit 75\"]}\n");
	assert_int_equal(config_load(cfg, &c, &e), 0);
	int64_t start_ms = scheduler_start_ms(config_schedule(c, "weekly"),
					      slot);
	config_free(c);
	/* 600 clock seconds a real second: the 70 minutes in about 7 s,
	 * with half an hour (3 s) before the slot for the daemon to start
	 * (a PostgreSQL store's connection and migrations take a while). */
	pid_t pid = start("2026-11-27T16:30:00Z", "600");
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (tu_ledger_count(url, "weekly", LEDGER_LOST) == 0 &&
	       tu_now_ms() < end)
		tu_sleep_ms(20);
	stop(pid);

	struct ledger_row *rows = NULL;
	size_t n = rows_of("weekly", &rows);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].attempt, 1);
	assert_string_equal(rows[0].outcome, LEDGER_FAILED);
	assert_int_equal(rows[0].slot_ms, slot);
	/* Attempt 1 waited for the jitter: not before slot + offset. */
	assert_true(rows[0].started_ms >= start_ms);
	assert_true(rows[0].started_ms < start_ms + 2 * MIN);
	assert_int_equal(rows[1].attempt, 2);
	assert_string_equal(rows[1].outcome, LEDGER_LOST);
	assert_string_equal(rows[1].error_class, "deadline");
	/* The retry counted from the real start, and the loss came at
	 * attempt 2's end, before the deadline (not at +90 min). */
	assert_true(rows[1].started_ms >= rows[0].finished_ms + 30 * MIN);
	assert_true(rows[1].finished_ms < slot + 60 * MIN);
	store_ledger_rows_free(rows, n);
	/* No attempt 3 can come: the job is dead after 2. */
	struct store *st = tu_store_open(url);
	struct store_job j;
	assert_int_equal(store_job_find(st, "weekly", slot, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(j.attempts, 2);
	store_close(st);
}

static void hourly_catchup_window_after_downtime(void **state)
{
	TU_NEED_TEST_SEAMS();
	write_cfg("  hourly:\n"
		  "    cron: \"0 * * * *\"\n"
		  "    tz: UTC\n"
		  "    catchup: all\n"
		  "    catchup_window: 3h\n"
		  "    tasks:\n"
		  "      - {name: t, command: [/bin/sh, -c, \"echo ok\"]}\n");
	/* A first start at 00:30, recorded, then stopped. */
	pid_t pid = start("2026-03-02T00:30:00Z", "1");
	int64_t end = tu_now_ms() + PATIENCE_MS;
	bool seen = false;
	while (!seen && tu_now_ms() < end) {
		struct store *s = tu_store_open(url);
		int64_t last = 0;
		seen = store_sched_last_get(s, "hourly", &last, NULL) == 0;
		store_close(s);
		if (!seen)
			tu_sleep_ms(20);
	}
	assert_true(seen);
	stop(pid);
	/* Back at 20:30: 01:00..20:00 (20 slots) late; 18:00, 19:00, 20:00
	 * are inside the 3 h window. */
	pid = start("2026-03-02T20:30:00Z", "1");
	end = tu_now_ms() + PATIENCE_MS;
	while (tu_ledger_count(url, "hourly", LEDGER_SUCCESS) < 3 &&
	       tu_now_ms() < end)
		tu_sleep_ms(20);
	stop(pid);
	struct ledger_row *rows = NULL;
	size_t n = rows_of("hourly", &rows), n_ok = 0, n_missed = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].outcome, LEDGER_SUCCESS) == 0) {
			n_ok++;
			assert_true(rows[i].slot_ms >=
				    iso("2026-03-02T18:00:00Z"));
		} else if (strcmp(rows[i].outcome, LEDGER_MISSED) == 0) {
			n_missed++;
			assert_true(rows[i].slot_ms <=
				    iso("2026-03-02T17:00:00Z"));
		}
	}
	store_ledger_rows_free(rows, n);
	assert_int_equal(n_ok, 3);
	assert_int_equal(n_missed, 17);
}

/* ---- a stepped wall clock (libfaketime) ---------------------------------- */

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

/* Sets the faked wall clock's offset ("+0", "+2h", "-1h") from now on. */
static void set_offset(const char *offset)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/faketime.rc", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", offset);
	fclose(f);
}

/* A daemon whose wall clock reads real time + the offset of set_offset,
 * its monotonic clock left real (as a stepped system clock leaves it). */
static pid_t start_stepped(void)
{
	static char rc[320];

	snprintf(rc, sizeof(rc), "FAKETIME_TIMESTAMP_FILE=%s/faketime.rc",
		 dir);
	const char *envs[] = {"LD_PRELOAD=" FAKETIME_LIB, rc,
			      "FAKETIME_NO_CACHE=1",
			      "FAKETIME_DONT_FAKE_MONOTONIC=1",
			      /* its own monotonic timed waits stay right */
			      "FAKETIME_FORCE_MONOTONIC_FIX=0",
			      /* a sanitizer build: the preload comes first */
			      "ASAN_OPTIONS=verify_asan_link_order=0",
			      "SURECRON_LOG=info", NULL};
	return tu_track(tu_start_daemon(dir, cfg, envs, 0));
}

/* Skipped without libfaketime, and under ThreadSanitizer: the preloaded
 * library reads its offset file from every thread without a lock and
 * interposes the timed waits, which TSan reports as races and double
 * locks of our mutexes that are the library's, not the daemon's. */
#define NEED_FAKETIME()                                                    \
	do {                                                               \
		const char *san_ = getenv("SURECRON_SAN");                 \
		if (access(FAKETIME_LIB, R_OK) != 0 ||                     \
		    (san_ && strcmp(san_, "tsan") == 0))                   \
			skip();                                            \
	} while (0)

static bool exists(const char *name)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/*
 * +2 h for 15 s, then corrected, on a schedule every 2 s: every slot is
 * run at its real time (the slots are contiguous, none in the real
 * future), none is written off as missed, and the step and its
 * correction are logged.
 */
static void forward_step_then_corrected(void **state)
{
	NEED_FAKETIME();
	set_offset("+0");
	write_cfg("  tick:\n"
		  "    cron: \"*/2 * * * * *\"\n"
		  "    tz: UTC\n"
		  "    tasks:\n"
		  "      - {name: t, command: [/bin/true]}\n");
	pid_t pid = start_stepped();
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (tu_ledger_count(url, "tick", LEDGER_SUCCESS) < 2 &&
	       tu_now_ms() < end)
		tu_sleep_ms(20);
	assert_true(tu_ledger_count(url, "tick", LEDGER_SUCCESS) >= 2);
	set_offset("+2h");
	int64_t stepped = tu_now_ms();
	/* The step lasts 15 s of real time: the daemon's slots go on. */
	while (tu_now_ms() < stepped + 15000)
		tu_sleep_ms(50);
	set_offset("+0");
	int64_t corrected = tu_now_ms();
	struct store *s = tu_store_open(url);
	int64_t first, last = INT64_MIN;
	end = tu_now_ms() + PATIENCE_MS;
	while (tu_success_span(s, "tick", &first, &last) > 0 &&
	       last < corrected + 6000 && tu_now_ms() < end)
		tu_sleep_ms(50);
	stop(pid);
	int64_t now = tu_now_ms();
	size_t n = tu_success_span(s, "tick", &first, &last);
	store_close(s);
	print_message("clock +2h for 15 s: %zu slots run, last %lld ms "
		      "before now, %zu missed\n", n, (long long)(now - last),
		      tu_ledger_count(url, "tick", LEDGER_MISSED));
	assert_int_equal(tu_ledger_count(url, "tick", LEDGER_MISSED), 0);
	assert_true(last <= now); /* nothing from the real future */
	assert_true(last >= corrected + 6000);
	/* Every 2 s slot from the first to the last ran: none skipped. */
	assert_int_equal(n, (size_t)((last - first) / 2000 + 1));
	/* It ran through the step: the slots of those 15 s are there. */
	assert_true(first < stepped);
	assert_true(tu_log_count(dir, "state=stepped") >= 1);
	assert_true(tu_log_count(dir, "state=corrected") >= 1);
}

/*
 * A retry due 3 s after its failure, then the wall clock stepped back an
 * hour: the retry runs at its real time, not an hour later.
 */
static void retry_survives_backward_step(void **state)
{
	char sh[1200];

	NEED_FAKETIME();
	set_offset("+0");
	/* The first attempt ever fails; every other one succeeds. */
	snprintf(sh, sizeof(sh),
		 "  flaky:\n"
		 "    cron: \"*/5 * * * * *\"\n"
		 "    tz: UTC\n"
		 "    retry: {attempts: 3, backoff: fixed, delay: 3s}\n"
		 "    tasks:\n"
		 "      - {name: t, command: [/bin/sh, -c, \"test -e %s/failed"
		 " || { touch %s/failed; exit 1; }\"]}\n", dir, dir);
	write_cfg(sh);
	pid_t pid = start_stepped();
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (tu_ledger_count(url, "flaky", LEDGER_FAILED) == 0 &&
	       tu_now_ms() < end)
		tu_sleep_ms(10);
	set_offset("-1h");
	int64_t stepped = tu_now_ms();
	struct ledger_row *rows = NULL;
	size_t n = rows_of("flaky", &rows);
	assert_true(n >= 1);
	int64_t slot = INT64_MIN;
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].outcome, LEDGER_FAILED) == 0)
			slot = rows[i].slot_ms;
	store_ledger_rows_free(rows, n);
	assert_true(slot != INT64_MIN);
	/* Its attempt 2 succeeds within seconds of real time. */
	struct store *s = tu_store_open(url);
	struct store_job j = {0};
	end = tu_now_ms() + 20000;
	for (;;) {
		assert_int_equal(store_job_find(s, "flaky", slot, &j, NULL), 0);
		if (j.state == JOB_DONE || tu_now_ms() > end)
			break;
		tu_sleep_ms(20);
	}
	int64_t took = tu_now_ms() - stepped;
	store_close(s);
	/* The loop sees the step at its next pass (a slot every 5 s). */
	bool logged = tu_wait_log(dir, "event=clock_step", 1, 10000);
	stop(pid);
	print_message("retry after a -1 h step: done %lld ms after the "
		      "step\n", (long long)took);
	assert_int_equal(j.state, JOB_DONE);
	assert_int_equal(j.attempts, 2);
	assert_true(took < 10000);
	assert_true(logged);
}

/*
 * A job running under a 4 s lease; the wall clock stepped back an hour,
 * the daemon killed with SIGKILL and started again: the new daemon
 * recovers the job within the lease's real length (not an hour later).
 */
static void lease_survives_backward_step_and_kill(void **state)
{
	char sh[1400], p[300];

	NEED_FAKETIME();
	set_offset("+0");
	/* The first run hangs (its pid kept for the cleanup); the others,
	 * the recovered attempt among them, succeed at once. */
	snprintf(sh, sizeof(sh),
		 "worker: {concurrency: 2, lease: 4s}\n"
		 "schedules:\n"
		 "  hang:\n"
		 "    cron: \"*/5 * * * * *\"\n"
		 "    tz: UTC\n"
		 "    retry: {attempts: 3, backoff: fixed, delay: 1s}\n"
		 "    tasks:\n"
		 "      - {name: t, command: [/bin/sh, -c, \"test -e %s/hung"
		 " || { echo $$ > %s/hung; exec sleep 300; }\"]}\n", dir, dir);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\n%s", url, sh);
	fclose(f);
	pid_t pid = start_stepped();
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while (!exists("hung") && tu_now_ms() < end)
		tu_sleep_ms(10);
	assert_true(exists("hung"));
	tu_sleep_ms(100); /* the pid written */
	set_offset("-1h");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	int64_t killed = tu_now_ms();
	snprintf(p, sizeof(p), "%s/hung", dir);
	f = fopen(p, "r");
	int task = 0;
	if (f) {
		if (fscanf(f, "%d", &task) != 1)
			task = 0;
		fclose(f);
	}
	if (task > 0)
		kill(task, SIGKILL);
	pid = start_stepped();
	end = tu_now_ms() + 30000;
	while (tu_ledger_count(url, "hang", LEDGER_STALLED) == 0 &&
	       tu_now_ms() < end)
		tu_sleep_ms(20);
	int64_t took = tu_now_ms() - killed;
	stop(pid);
	print_message("lease after -1 h and kill -9: recovered %lld ms "
		      "after the kill (lease 4 s)\n", (long long)took);
	assert_int_equal(tu_ledger_count(url, "hang", LEDGER_STALLED), 1);
	/* the lease's 4 s from the restart, and the start itself */
	assert_true(took < 4000 + 6000);
	/* SQLite: the lease judged by its length; PostgreSQL: the restarted
	 * node holds its time to the server's, which was not stepped. */
	if (strncmp(url, "sqlite", 6) == 0)
		assert_true(tu_log_count(dir, "event=lease_clamped") >= 1);
	else
		assert_true(tu_log_count(dir, "state=disagrees") >= 1);
}

/* A port nobody listens on now (bound then released). */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* GET path on 127.0.0.1:port (HTTP/1.0), the whole response into out. */
static void http_get(int port, const char *path, char *out, size_t n)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	char req[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	int len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: "
			   "127.0.0.1:%d\r\n\r\n", path, port);
	assert_int_equal(write(fd, req, (size_t)len), len);
	for (ssize_t r; got < n - 1 &&
	     (r = read(fd, out + got, n - 1 - got)) > 0;)
		got += (size_t)r;
	out[got] = '\0';
	close(fd);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * Issue 42: the node ahead says so. Waits for its record to carry its
 * offset, then `status` marks it (one node SKEWED), `status --json`
 * gives its offset, /metrics of the other node (on `port`) counts it,
 * `check --store` warns of it (exit 0; 2 with --strict), and run with
 * this host's clock 2 h ahead, `check --store` warns of the host too.
 */
static void ahead_node_is_shown(const char *cfg_good, int port)
{
	static char out[65536], err[16384];
	char rc[320];
	struct store_node *v = NULL;
	size_t n = 0, skewed = 0;
	int64_t end = tu_now_ms() + PATIENCE_MS;

	for (;;) {
		struct store *s = tu_store_open(url);
		assert_int_equal(store_nodes(s, &v, &n, NULL), 0);
		store_close(s);
		skewed = 0;
		for (size_t i = 0; i < n; i++)
			skewed += v[i].has_clock_offset &&
				  v[i].clock_offset_ms > 2 * HOUR - MIN;
		free(v);
		if (skewed == 1 || tu_now_ms() > end)
			break;
		tu_sleep_ms(50);
	}
	assert_int_equal(skewed, 1);

	const char *st[] = {"status", "--config", cfg_good, NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, st, out, sizeof(out), err,
				    sizeof(err)), 0);
	assert_int_equal(count_of(out, "(SKEWED)"), 1);
	assert_non_null(strstr(out, "clocks   1 node off the database"));
	assert_non_null(strstr(out, ", clock +7"));

	const char *sj[] = {"status", "--json", "--config", cfg_good, NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, sj, out, sizeof(out), err,
				    sizeof(err)), 0);
	json_t *root = json_loads(out, 0, NULL);
	assert_non_null(root);
	json_t *live = json_object_get(json_object_get(root, "nodes"), "live");
	assert_int_equal(json_array_size(live), 2);
	size_t n_true = 0;
	for (size_t i = 0; i < json_array_size(live); i++) {
		json_t *o = json_array_get(live, i);
		json_int_t off = json_integer_value(
			json_object_get(o, "clock_offset_ms"));
		bool sk = json_is_true(json_object_get(o, "clock_skewed"));
		assert_true(json_is_integer(
			json_object_get(o, "clock_offset_ms")));
		assert_int_equal(sk, off > 2 * HOUR - MIN);
		n_true += sk;
	}
	assert_int_equal(n_true, 1);
	json_decref(root);

	http_get(port, "/metrics", out, sizeof(out));
	assert_non_null(strstr(out, "\nsurecron_nodes_clock_skewed 1\n"));
	assert_int_equal(count_of(out, "\nsurecron_node_clock_offset_seconds{"
				       "node=\""), 2);
	assert_non_null(strstr(out, "\"} 7"));

	const char *ck[] = {"check", "--store", cfg_good, NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, ck, out, sizeof(out), err,
				    sizeof(err)), 0);
	assert_int_equal(count_of(err, "warning: store: node "), 1);
	assert_null(strstr(err, "this host's clock is"));
	assert_non_null(strstr(out, "ok: 1 schedule"));
	const char *cks[] = {"check", "--strict", "--store", cfg_good, NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, cks, out, sizeof(out),
				    err, sizeof(err)), 2);
	assert_null(strstr(out, "ok: "));

	/* This host 2 h ahead (the faked clock's file still says +2h). */
	snprintf(rc, sizeof(rc), "FAKETIME_TIMESTAMP_FILE=%s/faketime.rc",
		 dir);
	const char *fenv[] = {"LD_PRELOAD=" FAKETIME_LIB, rc,
			      "FAKETIME_NO_CACHE=1",
			      "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
	assert_int_equal(tu_run_bin(dir, dir, fenv, ck, out, sizeof(out), err,
				    sizeof(err)), 0);
	assert_non_null(strstr(err, "warning: store: this host's clock is "
				    "7"));
	assert_non_null(strstr(err, "s ahead of the database server's"));
	print_message("node 2 h ahead: shown in status, /metrics and check "
		      "--store\n");
}

/*
 * PostgreSQL: two nodes, one of them with its wall clock 2 h ahead from
 * its start (no step to see locally): it holds its time to the server's,
 * says so once, and together they run every slot at its real time, none
 * early, none missed, no job recovered from the other node.
 */
static void one_node_of_two_ahead(void **state)
{
	NEED_FAKETIME();
	if (strncmp(url, "postgres", 8) != 0)
		skip();
	set_offset("+2h");
	write_cfg("  tick:\n"
		  "    cron: \"*/2 * * * * *\"\n"
		  "    tz: UTC\n"
		  "    tasks:\n"
		  "      - {name: t, command: [/bin/sh, -c, \"sleep 0.5\"]}\n");
	/* The good node serves /metrics: its config differs by http only
	 * (the same schedules, the same digest). */
	char cfg_good[400];
	int port = free_port();
	snprintf(cfg_good, sizeof(cfg_good), "%s/good.yaml", dir);
	FILE *f = fopen(cfg_good, "w");
	assert_non_null(f);
	fprintf(f, "store: \"%s\"\nhttp: {listen: \"127.0.0.1:%d\"}\n"
		"schedules:\n  tick:\n    cron: \"*/2 * * * * *\"\n"
		"    tz: UTC\n    tasks:\n      - {name: t, command: [/bin/sh, "
		"-c, \"sleep 0.5\"]}\n", url, port);
	fclose(f);
	const char *envs[] = {"SURECRON_LOG=info", NULL};
	pid_t good = tu_track(tu_start_daemon(dir, cfg_good, envs, 0));
	pid_t ahead = start_stepped();
	int64_t t0 = tu_now_ms();
	struct store *s = tu_store_open(url);
	int64_t first, last = INT64_MIN;
	int64_t end = tu_now_ms() + PATIENCE_MS;
	while ((tu_success_span(s, "tick", &first, &last) == 0 ||
		last < t0 + 12000) && tu_now_ms() < end)
		tu_sleep_ms(50);
	ahead_node_is_shown(cfg_good, port);
	stop(ahead);
	stop(good);
	int64_t now = tu_now_ms();
	size_t n = tu_success_span(s, "tick", &first, &last);
	store_close(s);
	size_t missed = tu_ledger_count(url, "tick", LEDGER_MISSED);
	print_message("one node of two 2 h ahead: %zu slots run, last %lld "
		      "ms before now, %zu missed\n", n, (long long)(now - last),
		      missed);
	assert_int_equal(missed, 0);
	assert_true(last <= now);
	assert_true(last >= t0 + 12000);
	assert_int_equal(n, (size_t)((last - first) / 2000 + 1));
	assert_int_equal(tu_ledger_count(url, "tick", LEDGER_STALLED), 0);
	assert_int_equal(tu_log_count(dir, "event=clock_skew state=disagrees"),
			 1);
}

static int setup_sqlite(void **state)
{
	return tb_setup_sqlite(state) || setup(state);
}

static int teardown_sqlite(void **state)
{
	teardown(state);
	return tb_teardown_sqlite(state);
}

static int setup_pg(void **state)
{
	return tb_setup_pg(state) || setup(state);
}

static int teardown_pg(void **state)
{
	teardown(state);
	return tb_teardown_pg(state);
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	struct CMUnitTest tests[] = {
		T(weekly_jitter_and_deadline),
		T(hourly_catchup_window_after_downtime),
		T(forward_step_then_corrected),
		T(retry_survives_backward_step),
		T(lease_survives_backward_step_and_kill),
		T(one_node_of_two_ahead),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_sqlite;
		tests[i].teardown_func = teardown_sqlite;
	}
	failed = _cmocka_run_group_tests("timing_daemon/sqlite", tests, n,
					 NULL, NULL);
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_pg;
		tests[i].teardown_func = teardown_pg;
	}
	return failed + _cmocka_run_group_tests("timing_daemon/postgresql",
						tests, n, NULL, NULL);
}
