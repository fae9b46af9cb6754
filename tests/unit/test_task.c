/*
 * test_task.c - command tasks: no shell unless asked, environment, timeout
 * (the whole group ends), stdout cap, and the output protocol (JSON, plain
 * text, malformed JSON position, exit 75 hint, exit 78 permanent).
 *
 * Every task is a real process: small sh scripts written into a temp dir.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fakes/fake_http.h"
#include "proc.h"
#include "task.h"
#include "testutil.h"

static char dir[256];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(dir);
	return 0;
}

/* Writes an executable script dir/name with body; returns its path. */
static const char *script(const char *name, const char *body)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0700);
	return path;
}

static const struct task_ctx ctx = {
	.schedule = "weekly",
	.slot_ms = 1795798800000LL, /* 2026-11-27T17:00:00Z */
	.attempt = 3,
};

/* Runs a script with the given argv tail and limits. */
static int run_script(const char *body, char **args, int64_t timeout_ms,
		      size_t max_output, struct task_result *r)
{
	char *argv[8] = {0};
	struct task_spec t = {
		.name = "report",
		.timeout_ms = timeout_ms,
		.grace_ms = 200,
		.max_output = max_output,
	};
	argv[0] = (char *)script("task.sh", body);
	for (int i = 0; args && args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	t.argv = argv;
	return task_run(&t, &ctx, r);
}

static int run_script_ctx(const char *body, const struct task_ctx *c,
			  struct task_result *r)
{
	char *argv[2] = {(char *)script("task.sh", body), NULL};
	struct task_spec t = {.name = "report", .argv = argv,
			      .timeout_ms = 30000};
	return task_run(&t, c, r);
}

static void argv_runs_without_shell(void **state)
{
	/* Shell syntax in an argument reaches the program verbatim. */
	char *argv[] = {"printf", "%s", "a; echo injected $(id) `id` > x", NULL};
	struct task_spec t = {.name = "noshell", .argv = argv, .cwd = dir};
	struct task_result r;
	char path[512];

	assert_int_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_string_equal(r.summary, "a; echo injected $(id) `id` > x");
	snprintf(path, sizeof(path), "%s/x", dir);
	assert_int_not_equal(access(path, F_OK), 0);
	task_result_dispose(&r);
}

/* The start time on record is when the program began, between the call
 * and its return; a program that never ran has none. */
static void start_time_is_recorded(void **state)
{
	char *argv[] = {"true", NULL};
	char *missing[] = {"/nonexistent/surecron-task", NULL};
	struct task_spec t = {.name = "t", .argv = argv};
	struct task_result r;

	int64_t before = clock_now_ns(NULL);
	assert_int_equal(task_run(&t, &ctx, &r), 0);
	int64_t after = clock_now_ns(NULL);
	assert_true(r.started_ns >= before && r.started_ns <= after);
	task_result_dispose(&r);
	t.argv = missing;
	assert_int_not_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.started_ns, 0);
	task_result_dispose(&r);
}

/* A task given a start instant (task_ctx.start_ns: the daemon's claim
 * ahead of the due instant) is handed over at once and started at that
 * instant, never before: the program's own clock and the start on
 * record both read at least the instant. Through the launcher the
 * reaper itself waits (proc.h, start_mono_ns); without it, proc_run. */
static void a_start_instant_is_kept(void **state)
{
	struct task_ctx c = ctx;
	struct task_result r;

	c.start_ns = clock_now_ns(NULL) + 300 * 1000000LL;
	assert_int_equal(run_script_ctx("date +%s%N", &c, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_true(r.started_ns >= c.start_ns);
	assert_true(atoll(r.summary ? r.summary : "0") >= c.start_ns);
	/* Its timeout counts from its start, not from the hand-over. */
	assert_true(r.elapsed_ms < 300);
	task_result_dispose(&r);
	/* An instant already past: at once. */
	c.start_ns = clock_now_ns(NULL) - 1000000000LL;
	int64_t before = clock_now_ns(NULL);
	assert_int_equal(run_script_ctx("date +%s%N", &c, &r), 0);
	assert_true(r.started_ns >= before);
	task_result_dispose(&r);
}

static void shell_only_when_asked(void **state)
{
	struct task_spec t = {.name = "sh", .shell = "echo one; echo two"};
	struct task_result r;

	assert_int_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_string_equal(r.summary, "one\ntwo");
	task_result_dispose(&r);
}

static void environment_and_cwd(void **state)
{
	char *env[] = {"EXTRA_ONE=1", "SURECRON_TASK=spoofed", NULL};
	char *argv[] = {(char *)script("env.sh",
		"printf '%s|%s|%s|%s|%s|%s' \"$SURECRON_SCHEDULE\" "
		"\"$SURECRON_SLOT\" \"$SURECRON_ATTEMPT\" \"$SURECRON_TASK\" "
		"\"$EXTRA_ONE\" \"$(pwd)\""), NULL};
	struct task_spec t = {.name = "envtask", .argv = argv, .env = env,
			      .cwd = dir};
	struct task_result r;
	char want[512];

	assert_int_equal(task_run(&t, &ctx, &r), 0);
	snprintf(want, sizeof(want),
		 "weekly|2026-11-27T17:00:00Z|3|envtask|1|%s", dir);
	assert_string_equal(r.summary, want);
	task_result_dispose(&r);
}

/* SIGKILL reaches a group member the next time the kernel schedules it,
 * so on a loaded machine it can still show as sleeping for a moment
 * after the task returned. Two seconds is far beyond that and far below
 * the 30 s the member would live if nobody had killed it. */
static bool not_running(pid_t pid)
{
	for (int i = 0; i < 200; i++) {
		if (tu_pid_gone(pid))
			return true;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return false;
}

static pid_t read_pid(const char *name)
{
	char path[512];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	return (pid_t)pid;
}

static void timeout_kills_the_group(void **state)
{
	static const int64_t timeouts[] = {1500, 5000, 15000};
	struct task_result r;
	char body[512], bg[512], want[96];
	int64_t timeout = 0, took = 0;

	/* A background child in the group, and a parent that ignores
	 * SIGTERM: both must be gone, the second only by SIGKILL. The
	 * script must have started its child and said so before the
	 * timeout fires, or there is nothing to check: a machine too busy
	 * to start a shell in 1.5 s gets a longer timeout (each run still
	 * has to time out, and to take about its timeout). */
	snprintf(body, sizeof(body),
		 "trap '' TERM\nsleep 30 &\necho $! > %s/bg.pid\n"
		 "echo started >&2\nsleep 30\n", dir);
	snprintf(bg, sizeof(bg), "%s/bg.pid", dir);
	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		timeout = timeouts[i];
		unlink(bg);
		int64_t t0 = clock_mono_ms();
		assert_int_equal(run_script(body, NULL, timeout, 0, &r),
				 SC_ETIMEDOUT);
		took = clock_mono_ms() - t0;
		if (access(bg, F_OK) == 0 && strstr(r.err.msg, "started"))
			break;
		print_message("the script had not started after %lld ms; "
			      "again with a longer timeout\n",
			      (long long)timeout);
		if (i + 1 < sizeof(timeouts) / sizeof(timeouts[0]))
			task_result_dispose(&r);
	}
	char dur[CLOCK_DUR_MAX];
	snprintf(want, sizeof(want), "task report: timed out after %s",
		 clock_format_duration(timeout, dur, sizeof(dur)));
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_non_null(strstr(r.err.msg, want));
	assert_non_null(strstr(r.err.msg, "started"));
	assert_false(r.err.permanent);
	/* The timeout, the 200 ms grace before SIGKILL, and reaping. */
	assert_true(took >= timeout && took < timeout + 6500);
	assert_true(not_running(read_pid("bg.pid")));
	task_result_dispose(&r);
}

/* ---- issue 11 item 8: helpers that leave the group ---- */

/*
 * A script that starts two helpers that escape the task's process group
 * and then carries on with tail (shell text):
 *   h1: `setsid sleep`: a new session, still holding the task's stdout;
 *   h2: a double fork: a shell in a new session starts sleep and exits,
 *       so the sleep is an orphan outside the group (stdout to /dev/null).
 * The script goes on only once both are really there: h1 exec'd sleep
 * (so it already called setsid) and h2's pid is written. Each sleep has
 * a duration no other process uses (the marker), so a reused pid is never
 * taken for a helper. Before tail it records the real time in ns.
 */
static void escaping_script(char *body, size_t n, const char *tail)
{
	snprintf(body, n,
		 "setsid sleep 313.1 &\n"
		 "echo $! > %1$s/h1.pid\n"
		 "setsid sh -c 'sleep 313.2 & echo $! > %1$s/h2.tmp; "
		 "mv %1$s/h2.tmp %1$s/h2.pid' > /dev/null 2>&1 &\n"
		 "h1=$(cat %1$s/h1.pid)\n"
		 "until tr '\\0' ' ' < /proc/$h1/cmdline 2>/dev/null | "
		 "grep -q 313.1; do sleep 0.01; done\n"
		 "until [ -s %1$s/h2.pid ]; do sleep 0.01; done\n"
		 "echo helpers started >&2\n"
		 "date +%%s%%N > %1$s/end.ns\n"
		 "%2$s\n",
		 dir, tail);
}

/* Polls until neither helper runs (tu_helpers_gone). */
static bool helpers_gone(void)
{
	return tu_helpers_gone(read_pid("h1.pid"), "313.1", read_pid("h2.pid"),
			       "313.2", "task");
}

/* Real time now minus the ns the script wrote before it ended, in ms. */
static int64_t ms_since_script_end(void)
{
	char path[512];
	long long ns = 0;
	struct timespec now;
	FILE *f;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(path, sizeof(path), "%s/end.ns", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lld", &ns), 1);
	fclose(f);
	return ((long long)now.tv_sec * 1000000000LL + now.tv_nsec - ns) /
	       1000000;
}

static void escaped_helpers_end_with_the_task(void **state)
{
	struct task_result r;
	char body[4096];

	escaping_script(body, sizeof(body), "echo report; exit 0");
	int64_t t0 = clock_mono_ms();
	int rc = run_script(body, NULL, 60000, 0, &r);
	int64_t after = ms_since_script_end();
	int64_t took = clock_mono_ms() - t0;
	print_message("task ran %lld ms; returned %lld ms after the script "
		      "ended (was 2000+: waiting on the helper's stdout)\n",
		      (long long)took, (long long)after);
	bool gone = helpers_gone();
	assert_int_equal(rc, 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_true(gone);
	/* The old code read on for DRAIN_MS (2 s) while h1 held stdout. */
	assert_true(after < 1000);
	task_result_dispose(&r);
}

static void escaped_helpers_end_with_a_timeout(void **state)
{
	struct task_result r;
	char body[4096];

	escaping_script(body, sizeof(body), "trap '' TERM\nsleep 30");
	/* Long enough for a loaded machine to start both helpers: the
	 * test needs them running when the timeout fires. */
	int rc = run_script(body, NULL, 4000, 0, &r);
	bool gone = helpers_gone();
	assert_int_equal(rc, SC_ETIMEDOUT);
	assert_non_null(strstr(r.err.msg, "helpers started"));
	assert_true(gone);
	task_result_dispose(&r);
}

/* What a daemon stop does to a running task: its tick says stop. */
static int stop_when_started(void *ud)
{
	char path[512];
	(void)ud;
	snprintf(path, sizeof(path), "%s/end.ns", dir);
	return access(path, F_OK) == 0 ? SC_ECANCELED : 0;
}

static void escaped_helpers_end_when_the_run_is_stopped(void **state)
{
	struct task_ctx c = ctx;
	struct task_result r;
	char body[4096];

	c.tick = stop_when_started;
	c.tick_ms = 20;
	escaping_script(body, sizeof(body), "sleep 30");
	int64_t t0 = clock_mono_ms();
	int rc = run_script_ctx(body, &c, &r);
	int64_t took = clock_mono_ms() - t0;
	bool gone = helpers_gone();
	assert_int_equal(rc, SC_ECANCELED);
	assert_true(gone);
	assert_true(took < 20000);
	task_result_dispose(&r);
}

/* Runs in a thread: a task that outlives the other thread's task. */
static void *long_task(void *ud)
{
	struct task_result *r = ud;
	char *argv[] = {"/bin/sh", "-c",
			"sleep 0.8 & wait; echo long-done", NULL};
	struct task_spec t = {.name = "long", .argv = argv,
			      .timeout_ms = 30000};
	(void)task_run(&t, &ctx, r);
	return NULL;
}

/* Two runs at once: the one that ends first kills its own descendants,
 * never the other run's processes (each run has its own reaper). */
static void concurrent_runs_keep_their_processes(void **state)
{
	struct task_result lr, sr;
	pthread_t th;
	char body[4096];

	assert_int_equal(pthread_create(&th, NULL, long_task, &lr), 0);
	escaping_script(body, sizeof(body), "exit 0");
	int rc = run_script(body, NULL, 30000, 0, &sr);
	pthread_join(th, NULL);
	bool gone = helpers_gone();
	assert_int_equal(rc, 0);
	assert_true(gone);
	assert_int_equal(lr.outcome, TASK_DELIVER);
	assert_non_null(strstr(lr.summary ? lr.summary : "", "long-done"));
	task_result_dispose(&lr);
	task_result_dispose(&sr);
}

static void stdout_cap_stops_the_task(void **state)
{
	struct task_result r;
	char body[512];

	snprintf(body, sizeof(body), "echo $$ > %s/yes.pid\nexec yes", dir);
	int64_t t0 = clock_mono_ms();
	assert_int_equal(run_script(body, NULL, 20000, 1000, &r), SC_ETOOBIG);
	assert_true(clock_mono_ms() - t0 < 5000);
	assert_non_null(strstr(r.err.msg, "stdout exceeded 1000 bytes"));
	assert_true(not_running(read_pid("yes.pid")));
	task_result_dispose(&r);

	/* Exactly at the cap is fine. */
	assert_int_equal(run_script("head -c 1000 /dev/zero | tr '\\0' a",
				    NULL, 0, 1000, &r), 0);
	assert_int_equal(strlen(r.summary), 1000);
	task_result_dispose(&r);
}

static void malformed_json_names_task_and_position(void **state)
{
	struct task_result r;

	assert_int_equal(run_script("printf '{\\n  \"summary\": \"x\",\\n"
				    "  oops\\n}\\n'", NULL, 0, 0, &r),
			 SC_EPROTO);
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_non_null(strstr(r.err.msg, "task report:"));
	assert_non_null(strstr(r.err.msg, "malformed JSON"));
	assert_non_null(strstr(r.err.msg, "line 3"));
	assert_non_null(strstr(r.err.msg, "column"));
	assert_null(strstr(r.reason, "task report"));
	task_result_dispose(&r);
}

static void exit_75_is_retryable_with_hint(void **state)
{
	struct task_result r;

	assert_int_equal(run_script("echo '{\"retry_after\": 120, \"error\": "
				    "\"quota exceeded\"}'\nexit 75",
				    NULL, 0, 0, &r), SC_ETASK);
	assert_int_equal(r.err.retry_after_ms, 120000);
	assert_false(r.err.permanent);
	assert_non_null(strstr(r.err.msg, "quota exceeded"));
	task_result_dispose(&r);

	/* Without a hint: the stderr tail is the message. */
	assert_int_equal(run_script("echo 'try later' >&2\nexit 75", NULL, 0,
				    0, &r), SC_ETASK);
	assert_int_equal(r.err.retry_after_ms, 0);
	assert_non_null(strstr(r.err.msg, "try later"));
	task_result_dispose(&r);
}

static void exit_78_is_permanent(void **state)
{
	struct task_result r;

	assert_int_equal(run_script("echo 'bad api key' >&2\nexit 78", NULL,
				    0, 0, &r), SC_ETASK);
	assert_true(r.err.permanent);
	assert_non_null(strstr(r.err.msg, "bad api key"));
	task_result_dispose(&r);
}

static void other_exit_and_signal_are_retryable(void **state)
{
	struct task_result r;

	assert_int_equal(run_script("echo noise\necho 'line 1' >&2\n"
				    "echo 'boom: disk full' >&2\nexit 3",
				    NULL, 0, 0, &r), SC_ETASK);
	assert_false(r.err.permanent);
	assert_non_null(strstr(r.err.msg, "exit status 3"));
	assert_non_null(strstr(r.err.msg, "line 1 | boom: disk full"));
	task_result_dispose(&r);

	assert_int_equal(run_script("kill -SEGV $$", NULL, 0, 0, &r),
			 SC_ETASK);
	assert_false(r.err.permanent);
	assert_non_null(strstr(r.err.msg, "signal 11"));
	task_result_dispose(&r);

	char *argv[] = {"/nonexistent/prog", NULL};
	struct task_spec t = {.name = "missing", .argv = argv};
	assert_int_not_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_non_null(strstr(r.err.msg, "/nonexistent/prog"));
	task_result_dispose(&r);
}

static void output_protocol_table(void **state)
{
	static const struct {
		const char *out;
		enum task_outcome outcome;
		const char *summary; /* NULL: none */
		size_t n_previews;
		const char *reason;  /* skip reason */
	} rows[] = {
		{"  weekly report ready \n", TASK_DELIVER, "weekly report ready",
		 0, NULL},
		{"", TASK_SKIP, NULL, 0, "no output"},
		{" \n\t\n", TASK_SKIP, NULL, 0, "no output"},
		{"{\"summary\": \"s\", \"previews\": [\"p1\", \"\", \"p2\"]}",
		 TASK_DELIVER, "s", 2, NULL},
		{"{\"previews\": [\"only\"]}", TASK_DELIVER, NULL, 1, NULL},
		{"{\"skip\": true, \"reason\": \"holiday\", \"summary\": \"x\"}",
		 TASK_SKIP, NULL, 0, "holiday"},
		{"{\"summary\": \"\"}", TASK_SKIP, NULL, 0, "empty result"},
		{"{}", TASK_SKIP, NULL, 0, "empty result"},
		{"{\"summary\": 5}", TASK_FAILED, NULL, 0, NULL},
		{"{\"previews\": [1]}", TASK_FAILED, NULL, 0, NULL},
		{"{\"summary\": \"a\"} trailing", TASK_FAILED, NULL, 0, NULL},
		{"[1, 2]", TASK_DELIVER, "[1, 2]", 0, NULL},
		{"bad \xff byte", TASK_DELIVER, "bad ? byte", 0, NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct task_result r = {0};
		int rc = task_output_parse("t", rows[i].out,
					   strlen(rows[i].out), &r);
		assert_int_equal(r.outcome, rows[i].outcome);
		assert_int_equal(rc != 0, rows[i].outcome == TASK_FAILED);
		if (rows[i].summary)
			assert_string_equal(r.summary, rows[i].summary);
		else
			assert_null(r.summary);
		assert_int_equal(r.n_previews, rows[i].n_previews);
		if (rows[i].reason)
			assert_string_equal(r.reason, rows[i].reason);
		task_result_dispose(&r);
	}
}

/* Issue 11 (fuzz/corpus/task_output/crash-nul-shields-blanks-from-trim):
 * NUL bytes are dropped by the cleaner; trimming before cleaning let the
 * blanks next to them through, so the summary kept leading and trailing
 * spaces, and output of only NULs and blanks was delivered as " ". */
static void output_nul_bytes_do_not_shield_blanks(void **state)
{
	static const char out[] = "\0 weekly report \0\n";
	static const char blank[] = "\0 \0\t\0";
	struct task_result r = {0};

	assert_int_equal(task_output_parse("t", out, sizeof(out) - 1, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_string_equal(r.summary, "weekly report");
	task_result_dispose(&r);

	assert_int_equal(task_output_parse("t", blank, sizeof(blank) - 1, &r),
			 0);
	assert_int_equal(r.outcome, TASK_SKIP);
	assert_string_equal(r.reason, "no output");
	task_result_dispose(&r);
}

static void plain_text_and_empty_from_a_process(void **state)
{
	struct task_result r;

	assert_int_equal(run_script("echo 'all good'", NULL, 0, 0, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_string_equal(r.summary, "all good");
	task_result_dispose(&r);

	assert_int_equal(run_script("exit 0", NULL, 0, 0, &r), 0);
	assert_int_equal(r.outcome, TASK_SKIP);
	assert_string_equal(r.reason, "no output");
	task_result_dispose(&r);
}

static void http_task_outcomes(void **state)
{
	struct fake_http *f = fake_http_start();
	char url[256];
	struct task_spec t = {.name = "api", .kind = TASK_HTTP, .url = url,
			      .timeout_ms = 5000};
	struct task_result r;

	assert_non_null(f);
	fake_http_url(f, "/r", url, sizeof(url));
	/* 2xx: the same output protocol as a command. */
	fake_http_push(f, "/r", 200, "Content-Type: application/json",
		       "{\"summary\": \"from api\", \"previews\": [\"p\"]}", 0);
	assert_int_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	assert_string_equal(r.summary, "from api");
	assert_int_equal(r.n_previews, 1);
	task_result_dispose(&r);
	fake_http_push(f, "/r", 200, NULL, "{broken", 0);
	assert_int_equal(task_run(&t, &ctx, &r), SC_EPROTO);
	assert_non_null(strstr(r.err.msg, "column"));
	task_result_dispose(&r);

	/* 503 + Retry-After: retryable with the hint and the status. */
	fake_http_push(f, "/r", 503, "Retry-After: 90", "overloaded", 0);
	assert_int_not_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_int_equal(r.err.http_status, 503);
	assert_int_equal(r.err.retry_after_ms, 90000);
	assert_false(r.err.permanent);
	assert_non_null(strstr(r.err.msg, "overloaded"));
	task_result_dispose(&r);

	/* 403: permanent. */
	fake_http_push(f, "/r", 403, NULL, "quota plan exhausted", 0);
	assert_int_not_equal(task_run(&t, &ctx, &r), 0);
	assert_int_equal(r.err.http_status, 403);
	assert_true(r.err.permanent);
	task_result_dispose(&r);

	/* expect_status: another 2xx is a failure. */
	t.expect_status = 201;
	fake_http_push(f, "/r", 200, NULL, "fine", 0);
	assert_int_not_equal(task_run(&t, &ctx, &r), 0);
	assert_non_null(strstr(r.err.msg, "expected 201"));
	task_result_dispose(&r);
	fake_http_stop(f);
}

struct ticks {
	int n, stop_at;
};

static int count_tick(void *ud)
{
	struct ticks *t = ud;

	return ++t->n >= t->stop_at ? SC_ECANCELED : 0;
}

static void ticks_run_inside_long_tasks_and_can_stop_them(void **state)
{
	struct ticks tk = {0, 1000};
	struct task_ctx c = ctx;
	struct task_result r;

	c.tick = count_tick;
	c.tick_ud = &tk;
	c.tick_ms = 50;
	int64_t t1 = clock_mono_ms();
	assert_int_equal(run_script_ctx("sleep 0.6; echo done", &c, &r), 0);
	int64_t ran = clock_mono_ms() - t1;
	/* Ticks come through the whole run (it lasts at least 0.6 s), and
	 * never more often than every tick_ms: the upper bound follows the
	 * run's real length, which a loaded machine stretches. */
	print_message("ticks=%d in %lld ms\n", tk.n, (long long)ran);
	assert_true(tk.n >= 5 && tk.n <= ran / 50 + 2);
	task_result_dispose(&r);

	/* A tick that says stop ends the task's group at once. */
	tk = (struct ticks){0, 3};
	int64_t t0 = clock_mono_ms();
	assert_int_equal(run_script_ctx("sleep 20", &c, &r), SC_ECANCELED);
	assert_true(clock_mono_ms() - t0 < 5000);
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_non_null(strstr(r.err.msg, "canceled"));
	task_result_dispose(&r);
}

/* A host that ignores SIGCHLD loses exit statuses: never read that as
 * success. */
static void lost_exit_status_is_a_failure(void **state)
{
	struct task_result r;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;

	sigemptyset(&ign.sa_mask);
	sigaction(SIGCHLD, &ign, &old);
	int rc = run_script("echo 'looks fine'; exit 3", NULL, 0, 0, &r);
	sigaction(SIGCHLD, &old, NULL);
	assert_int_not_equal(rc, 0);
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_non_null(strstr(r.err.msg, "exit status"));
	task_result_dispose(&r);
}

/* ---- the same runs through the launcher (src/proc.c) ----------------
 *
 * The daemon's runs go through the launcher: a process started once that
 * hands each run to a reaper it forked and keeps. Its group runs the
 * process tests above again that way (the surecron binary of the build,
 * SURECRON_BIN, is the launcher), plus what is the launcher's own: runs
 * really go through it, a kept reaper serves run after run and ends each
 * one whole, idle reapers are let go, one that is killed leaves the runs
 * to the exec'd reaper, and one that is stopped fails a run in bounded
 * time without ever starting it. Kept reapers are let go after
 * REAPER_IDLE_MS of idleness, a second here (the variable is read at the
 * launcher's start). */

static int launcher_setup(void **state)
{
	const char *bin = getenv("SURECRON_BIN");
	struct sc_err err = {0};

	if (!bin || access(bin, X_OK) != 0)
		return 0; /* each test skips */
	setenv("SURECRON_TEST_REAPER_IDLE_MS", "1000", 1);
	proc_set_reaper_exe(bin);
	return proc_launcher_start(&err);
}

static int launcher_teardown(void **state)
{
	proc_launcher_stop();
	proc_set_reaper_exe(NULL);
	return 0;
}

static int lsetup(void **state)
{
	if (proc_launcher_pid() < 0) {
		/* No binary, or a test below left it gone: start again. */
		struct sc_err err = {0};
		proc_launcher_stop();
		if (!getenv("SURECRON_BIN") ||
		    proc_launcher_start(&err) != 0)
			skip();
	}
	return setup(state);
}

/* Polls pred(pid) every 5 ms for at most ms; its last answer. */
static bool wait_for(bool (*pred)(pid_t), pid_t pid, int64_t ms)
{
	int64_t end = clock_mono_ms() + ms;
	const struct timespec tick = {0, 5000000};

	while (!pred(pid) && clock_mono_ms() < end)
		nanosleep(&tick, NULL);
	return pred(pid);
}

/* The parent of the reaper of a run: its script's grandparent. */
static pid_t run_reaper_parent(void)
{
	struct task_result r;
	assert_int_equal(run_script("awk '{print $4}' /proc/$PPID/stat", NULL,
				    30000, 0, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	pid_t pp = (pid_t)atol(r.summary ? r.summary : "0");
	task_result_dispose(&r);
	return pp;
}

static void runs_go_through_the_launcher(void **state)
{
	pid_t l = proc_launcher_pid();
	assert_true(l > 0);
	assert_int_equal(run_reaper_parent(), l);
	assert_int_equal(run_reaper_parent(), l);
}

static bool launcher_idle(pid_t l);

/* The reaper of a run (its script's parent) and that reaper's parent. */
static void run_reaper(pid_t *reaper, pid_t *parent)
{
	struct task_result r;
	assert_int_equal(run_script("echo $PPID $(awk '{print $4}' "
				    "/proc/$PPID/stat)", NULL, 30000, 0, &r),
			 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	long a = 0, b = 0;
	assert_int_equal(sscanf(r.summary ? r.summary : "", "%ld %ld", &a, &b),
			 2);
	*reaper = (pid_t)a;
	*parent = (pid_t)b;
	task_result_dispose(&r);
}

/* Run after run, one kept reaper serves (no fork per run), and each run
 * still ends whole: the helpers an earlier run left behind under that
 * same reaper are gone before its next run starts. */
static void a_kept_reaper_serves_run_after_run(void **state)
{
	struct task_result r;
	char body[4096];
	pid_t l = proc_launcher_pid(), r1, p1, r2, p2;

	assert_true(l > 0);
	run_reaper(&r1, &p1);
	assert_int_equal(p1, l);
	escaping_script(body, sizeof(body), "echo report; exit 0");
	assert_int_equal(run_script(body, NULL, 60000, 0, &r), 0);
	assert_int_equal(r.outcome, TASK_DELIVER);
	task_result_dispose(&r);
	assert_true(helpers_gone());
	run_reaper(&r2, &p2);
	assert_int_equal(p2, l);
	assert_int_equal(r2, r1);
}

/* An idle reaper is let go: after its run, the launcher is left with no
 * child once the idle time (a second here) is up. */
static void idle_reapers_are_let_go(void **state)
{
	pid_t l = proc_launcher_pid(), r1, p1;

	assert_true(l > 0);
	run_reaper(&r1, &p1);
	assert_int_equal(p1, l);
	assert_true(wait_for(launcher_idle, l, 10000));
	assert_true(wait_for(tu_pid_gone, r1, 10000));
}

static void a_killed_launcher_leaves_runs_to_the_reaper(void **state)
{
	pid_t l = proc_launcher_pid();
	assert_true(l > 0);
	assert_int_equal(kill(l, SIGKILL), 0);
	assert_true(wait_for(tu_pid_gone, l, 10000));
	/* The first run finds it gone and starts its reaper itself (our
	 * child); so does every later one. */
	assert_int_equal(run_reaper_parent(), getpid());
	assert_int_equal(proc_launcher_pid(), -1);
	assert_int_equal(run_reaper_parent(), getpid());
}

/* Whether the launcher has no child left (its reapers all exited). */
static bool launcher_idle(pid_t l)
{
	char path[96], buf[256] = "";
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)l,
		 (int)l);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strspn(buf, " \n") == n;
}

static bool launcher_busy(pid_t l)
{
	return !launcher_idle(l);
}

static void a_stopped_launcher_fails_the_run_and_starts_nothing(void **state)
{
	struct task_result r;
	char marker[512], body[1024];
	pid_t l = proc_launcher_pid();

	assert_true(l > 0);
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	snprintf(body, sizeof(body), "touch '%s'", marker);
	/* No kept reaper left from the tests before: the late request
	 * below is then served by a reaper forked for it, which the end of
	 * the test can see come and go. */
	assert_true(wait_for(launcher_idle, l, 10000));
	setenv("SURECRON_TEST_LAUNCH_WAIT_MS", "300", 1);
	assert_int_equal(kill(l, SIGSTOP), 0);
	/* A script of its own: the runs below write task.sh again, and a
	 * late start of this one must find its own body. */
	char *argv[] = {(char *)script("late.sh", body), NULL};
	struct task_spec t = {.name = "report", .argv = argv,
			      .timeout_ms = 30000, .grace_ms = 200};
	int64_t t0 = clock_mono_ms();
	int rc = task_run(&t, &ctx, &r);
	int64_t took = clock_mono_ms() - t0;
	unsetenv("SURECRON_TEST_LAUNCH_WAIT_MS");
	assert_int_equal(kill(l, SIGCONT), 0);
	assert_int_not_equal(rc, 0);
	assert_int_equal(r.outcome, TASK_FAILED);
	assert_non_null(strstr(r.err.msg, "launcher did not start it"));
	assert_true(took < 10000);
	task_result_dispose(&r);
	/* The launcher is given up on: the next run takes the exec'd
	 * reaper. Continued, the launcher forks the late request's reaper,
	 * which finds the run given up and starts nothing. (The reaper's
	 * kill at its control socket's EOF would also end the program, so
	 * the marker checks the outcome, not which of the two did it.)
	 * That reaper is the launcher's child from the request until a
	 * second after its answer (let go when idle), so it is seen; once
	 * it is gone, whatever it started has ended. Waiting
	 * for "no child" alone would pass before the launcher even read
	 * the request. */
	assert_int_equal(proc_launcher_pid(), -1);
	assert_int_equal(run_reaper_parent(), getpid());
	assert_true(wait_for(launcher_busy, l, 10000));
	assert_true(wait_for(launcher_idle, l, 10000));
	assert_int_not_equal(access(marker, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest launched[] = {
		cmocka_unit_test_setup_teardown(runs_go_through_the_launcher, lsetup, teardown),
		cmocka_unit_test_setup_teardown(argv_runs_without_shell, lsetup, teardown),
		cmocka_unit_test_setup_teardown(start_time_is_recorded, lsetup, teardown),
		cmocka_unit_test_setup_teardown(a_start_instant_is_kept, lsetup, teardown),
		cmocka_unit_test_setup_teardown(shell_only_when_asked, lsetup, teardown),
		cmocka_unit_test_setup_teardown(environment_and_cwd, lsetup, teardown),
		cmocka_unit_test_setup_teardown(timeout_kills_the_group, lsetup, teardown),
		cmocka_unit_test_setup_teardown(escaped_helpers_end_with_the_task, lsetup, teardown),
		cmocka_unit_test_setup_teardown(escaped_helpers_end_with_a_timeout, lsetup, teardown),
		cmocka_unit_test_setup_teardown(escaped_helpers_end_when_the_run_is_stopped, lsetup, teardown),
		cmocka_unit_test_setup_teardown(concurrent_runs_keep_their_processes, lsetup, teardown),
		cmocka_unit_test_setup_teardown(stdout_cap_stops_the_task, lsetup, teardown),
		cmocka_unit_test_setup_teardown(other_exit_and_signal_are_retryable, lsetup, teardown),
		cmocka_unit_test_setup_teardown(ticks_run_inside_long_tasks_and_can_stop_them, lsetup, teardown),
		cmocka_unit_test_setup_teardown(a_stopped_launcher_fails_the_run_and_starts_nothing, lsetup, teardown),
		cmocka_unit_test_setup_teardown(a_kept_reaper_serves_run_after_run, lsetup, teardown),
		cmocka_unit_test_setup_teardown(idle_reapers_are_let_go, lsetup, teardown),
		cmocka_unit_test_setup_teardown(a_killed_launcher_leaves_runs_to_the_reaper, lsetup, teardown),
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(argv_runs_without_shell, setup, teardown),
		cmocka_unit_test_setup_teardown(start_time_is_recorded, setup, teardown),
		cmocka_unit_test_setup_teardown(a_start_instant_is_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(shell_only_when_asked, setup, teardown),
		cmocka_unit_test_setup_teardown(environment_and_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(timeout_kills_the_group, setup, teardown),
		cmocka_unit_test_setup_teardown(escaped_helpers_end_with_the_task, setup, teardown),
		cmocka_unit_test_setup_teardown(escaped_helpers_end_with_a_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(escaped_helpers_end_when_the_run_is_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(concurrent_runs_keep_their_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(stdout_cap_stops_the_task, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_json_names_task_and_position, setup, teardown),
		cmocka_unit_test_setup_teardown(exit_75_is_retryable_with_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(exit_78_is_permanent, setup, teardown),
		cmocka_unit_test_setup_teardown(other_exit_and_signal_are_retryable, setup, teardown),
		cmocka_unit_test(output_protocol_table),
		cmocka_unit_test(output_nul_bytes_do_not_shield_blanks),
		cmocka_unit_test_setup_teardown(plain_text_and_empty_from_a_process, setup, teardown),
		cmocka_unit_test(http_task_outcomes),
		cmocka_unit_test_setup_teardown(lost_exit_status_is_a_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(ticks_run_inside_long_tasks_and_can_stop_them, setup, teardown),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	return failed + cmocka_run_group_tests_name("launcher", launched,
						    launcher_setup,
						    launcher_teardown);
}
