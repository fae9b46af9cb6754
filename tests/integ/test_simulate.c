/*
 * test_simulate.c - `surecron simulate` end to end: the real binary
 * ($SURECRON_BIN) on configs written into a temp folder, its --json output
 * parsed, and, with --deliver, a real HTTP receiver on 127.0.0.1
 * (tests/fakes) and a real file target counting what arrived.
 *
 * The seed incident (DESIGN.md): a weekly slot whose summary task hits a
 * quota from 17:00 to 20:00 must be attempted at 17:00, 17:30, 18:30 and
 * 20:30, succeed on the fourth attempt and be delivered exactly once; with
 * a forced policy of 2 attempts / 60 s the slot is lost, loudly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon_util.h"
#include "fakes/fake_http.h"
#include "testutil.h"

#define FRI_1700 "2026-11-27T17:00:00+09:00"
#define FRI_2000 "2026-11-27T20:00:00+09:00"
#define WEEK_FROM "2026-11-23T00:00:00+09:00"
#define WEEK_UNTIL "2026-11-30T00:00:00+09:00"
#define QUOTA "summary@" FRI_1700 ".." FRI_2000

static struct fake_http *srv;
static char dir[256];

struct run {
	int status;
	char *out;      /* stdout (owned) */
	char *err;      /* stderr (owned) */
	double seconds; /* wall time of the process */
	double cpu;     /* CPU time (user + system) of it and its children */
	json_t *json;   /* parsed stdout when it is JSON, else NULL */
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
		fail_msg("short read of %s", path);
	fclose(f);
	return buf;
}

/* Runs the binary in `dir` with the NULL-terminated args. */
static void run_bin(struct run *r, ...)
{
	const char *argv[40];
	char out[320], err[320];
	struct timespec a, b;
	int n = 0;
	va_list ap;

	memset(r, 0, sizeof(*r));
	argv[n++] = tu_bin();
	argv[n++] = "simulate";
	va_start(ap, r);
	while (n < 39 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/stdout", dir);
	snprintf(err, sizeof(err), "%s/stderr", dir);
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fo < 0 || fe < 0 || chdir(dir) != 0)
			_exit(127);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	assert_int_equal(wait4(pid, &st, 0, &ru), pid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	r->seconds = (double)(b.tv_sec - a.tv_sec) +
		     (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	r->cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->out = slurp(out);
	r->err = slurp(err);
	r->json = json_loads(r->out, 0, NULL);
}

/* A simulation works on a virtual clock: it needs well under a second of
 * CPU, and it never waits on real time. The CPU bound is the one that
 * stays put on a loaded machine, where the wall time also holds the time
 * other processes had the CPU; the wall bound, 5x looser, still catches a
 * run that sleeps on real time (its backoffs are minutes to hours). */
static void assert_fast(const struct run *r)
{
	printf("simulate: %.3f s wall, %.3f s CPU\n", r->seconds, r->cpu);
	assert_true(r->cpu < 1.0);
	assert_true(r->seconds < 5.0);
}

static void run_dispose(struct run *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->json);
}

static void write_file(const char *name, const char *text, int mode)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, (mode_t)mode);
}

static int group_setup(void **state)
{
	srv = fake_http_start();
	return srv ? 0 : -1;
}

static int group_teardown(void **state)
{
	fake_http_stop(srv);
	return 0;
}

static int setup(void **state)
{
	char url[256];

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	fake_http_reset(srv);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	fake_http_set_default(srv, "/pager", 200, NULL, "ok");
	setenv("SIM_HOOK_URL", fake_http_url(srv, "/hook", url, sizeof(url)),
	       1);
	setenv("SIM_PAGER_URL", fake_http_url(srv, "/pager", url, sizeof(url)),
	       1);
	unsetenv("SURECRON_ALERT_TARGETS");
	/* The summary task prints a line naming its slot. */
	write_file("summary.sh", "#!/bin/sh\necho \"summary of $SURECRON_SLOT\"\n",
		   0700);
	return 0;
}

static int teardown(void **state)
{
	tu_reap_all();
	tu_rmrf(dir);
	return 0;
}

/* A weekly config (Asia/Seoul), optionally with a forced retry policy. */
static void write_weekly(const char *retry)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "targets:\n"
		 "  hook: {kind: webhook, url_env: SIM_HOOK_URL}\n"
		 "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		 "  pager: {kind: webhook, url_env: SIM_PAGER_URL}\n"
		 "alerts: {targets: [pager]}\n"
		 "schedules:\n"
		 "  weekly-summary:\n"
		 "    cron: \"0 17 * * 5\"\n"
		 "    tz: Asia/Seoul\n"
		 "    targets: [hook, archive]\n"
		 "%s"
		 "    tasks:\n"
		 "      - {name: summary, command: [./summary.sh]}\n",
		 retry ? retry : "");
	write_file("c.yaml", text, 0600);
}

/* Events of one kind, in order. */
static size_t events(json_t *root, const char *event, json_t **out,
		     size_t max)
{
	json_t *arr = json_object_get(root, "events"), *e;
	size_t i, n = 0;

	assert_non_null(arr);
	json_array_foreach(arr, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "event")),
			   event) != 0)
			continue;
		if (n < max)
			out[n] = e;
		n++;
	}
	return n;
}

static size_t ledger_count(json_t *root, const char *outcome)
{
	json_t *arr = json_object_get(root, "ledger"), *e;
	size_t i, n = 0;

	assert_non_null(arr);
	json_array_foreach(arr, i, e)
		n += strcmp(json_string_value(json_object_get(e, "outcome")),
			    outcome) == 0;
	return n;
}

/* The recorded count of `kind` messages for target. */
static int delivered(json_t *root, const char *target, const char *kind)
{
	json_t *arr = json_object_get(root, "deliveries"), *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (strcmp(json_string_value(json_object_get(e, "target")),
			   target) == 0)
			return (int)json_integer_value(json_object_get(e, kind));
	fail_msg("no deliveries for %s", target);
	return -1;
}

/* Messages of `kind` the receiver got at path. */
static size_t received(const char *path, const char *kind)
{
	size_t n = 0, total = fake_http_count(srv, path);

	for (size_t i = 0; i < total; i++) {
		struct fake_request r;
		assert_true(fake_http_request(srv, path, (long)i, &r));
		json_t *m = json_loads(r.body, 0, NULL);
		assert_non_null(m);
		n += strcmp(json_string_value(json_object_get(m, "kind")),
			    kind) == 0;
		json_decref(m);
		fake_request_dispose(&r);
	}
	return n;
}

/* Lines of `kind` in a JSON-lines file of dir. */
static size_t file_kind(const char *name, const char *kind)
{
	char path[400], line[65536];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		json_t *m = json_loads(line, 0, NULL);
		assert_non_null(m);
		n += strcmp(json_string_value(json_object_get(m, "kind")),
			    kind) == 0;
		json_decref(m);
	}
	fclose(f);
	return n;
}

static void seed_incident_recovers_and_delivers_once(void **state)
{
	static const char *const want[] = {
		"2026-11-27T17:00:00+09:00", "2026-11-27T17:30:00+09:00",
		"2026-11-27T18:30:00+09:00", "2026-11-27T20:30:00+09:00"};
	struct run r;
	json_t *ev[8];

	write_weekly(NULL);
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--fail", QUOTA, "--json", (char *)NULL);
	if (r.status != 0 || !r.json)
		fail_msg("status %d, stderr: %s", r.status, r.err);
	/* A simulated week, well under a second. */
	assert_fast(&r);

	assert_int_equal(events(r.json, "slot", ev, 8), 1);
	assert_int_equal(events(r.json, "attempt_started", ev, 8), 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(json_string_value(json_object_get(
					    ev[i], "time")), want[i]);
	assert_int_equal(events(r.json, "attempt_failed", ev, 8), 3);
	for (int i = 0; i < 3; i++) {
		const char *e = json_string_value(json_object_get(ev[i],
								  "error"));
		assert_non_null(strstr(e, "quota"));
		assert_string_equal(json_string_value(json_object_get(
					    ev[i], "next_attempt")), want[i + 1]);
	}
	assert_int_equal(events(r.json, "attempt_succeeded", ev, 8), 1);
	assert_int_equal(json_integer_value(json_object_get(ev[0], "attempt")),
			 4);
	assert_int_equal(events(r.json, "slot_lost", ev, 8), 0);

	/* The ledger: three failures and a success. */
	assert_int_equal(ledger_count(r.json, "failed"), 3);
	assert_int_equal(ledger_count(r.json, "success"), 1);
	assert_int_equal(ledger_count(r.json, "lost"), 0);

	/* Exactly one result per target, recorded (not sent): the receiver
	 * and the real file saw nothing. */
	assert_int_equal(delivered(r.json, "hook", "result"), 1);
	assert_int_equal(delivered(r.json, "archive", "result"), 1);
	assert_int_equal(delivered(r.json, "hook", "failure_notice"), 3);
	assert_int_equal(delivered(r.json, "pager", "alert"), 0);
	assert_int_equal(fake_http_count(srv, NULL), 0);
	assert_int_equal(file_kind("deliveries.jsonl", "result"), 0);
	run_dispose(&r);
}

static void seed_incident_delivered_for_real(void **state)
{
	struct run r;

	write_weekly(NULL);
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--fail", QUOTA, "--deliver", (char *)NULL);
	if (r.status != 0)
		fail_msg("status %d, stderr: %s", r.status, r.err);
	/* The text timeline names the four attempts and the ledger. */
	assert_non_null(strstr(r.out, "2026-11-27T20:30:00+09:00  "
				      "weekly-summary  attempt 4 succeeded"));
	assert_non_null(strstr(r.out, "attempt 3 failed"));
	/* The receiver got exactly one result (and a notice per failed
	 * attempt); the file target holds exactly one result line. */
	assert_int_equal(received("/hook", "result"), 1);
	assert_int_equal(received("/hook", "failure_notice"), 3);
	assert_int_equal(fake_http_count(srv, "/pager"), 0);
	assert_int_equal(file_kind("deliveries.jsonl", "result"), 1);
	assert_int_equal(file_kind("deliveries.jsonl", "failure_notice"), 3);
	run_dispose(&r);
}

static void forced_short_policy_loses_the_slot_loudly(void **state)
{
	struct run r;
	json_t *ev[8];

	write_weekly("    retry: {attempts: 2, backoff: exponential, "
		     "delay: 60s}\n");
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--fail", QUOTA, "--json", (char *)NULL);
	if (r.status != 0 || !r.json)
		fail_msg("status %d, stderr: %s", r.status, r.err);
	assert_int_equal(events(r.json, "attempt_started", ev, 8), 2);
	assert_string_equal(json_string_value(json_object_get(ev[1], "time")),
			    "2026-11-27T17:01:00+09:00");
	assert_int_equal(events(r.json, "slot_lost", ev, 8), 1);
	assert_int_equal(json_integer_value(json_object_get(ev[0],
							    "alerts_sent")),
			 1);
	assert_int_equal(ledger_count(r.json, "failed"), 1);
	assert_int_equal(ledger_count(r.json, "lost"), 1);
	assert_int_equal(ledger_count(r.json, "success"), 0);
	/* Notices to every target of the schedule, each attempt; the alert
	 * to the alert target only; no result anywhere. */
	assert_int_equal(delivered(r.json, "hook", "failure_notice"), 2);
	assert_int_equal(delivered(r.json, "archive", "failure_notice"), 2);
	assert_int_equal(delivered(r.json, "pager", "alert"), 1);
	assert_int_equal(delivered(r.json, "hook", "alert"), 0);
	assert_int_equal(delivered(r.json, "hook", "result"), 0);
	json_t *t = json_object_get(r.json, "totals");
	assert_int_equal(json_integer_value(json_object_get(t, "lost")), 1);
	run_dispose(&r);

	/* For real: the pager receives the alert, the hook the notices. */
	fake_http_reset(srv);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	fake_http_set_default(srv, "/pager", 200, NULL, "ok");
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--fail", QUOTA, "--deliver", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "slot LOST"));
	assert_non_null(strstr(r.out, "attempt 2  lost"));
	assert_int_equal(received("/pager", "alert"), 1);
	assert_int_equal(received("/hook", "failure_notice"), 2);
	assert_int_equal(received("/hook", "result"), 0);
	run_dispose(&r);
}

static void daily_schedule_over_a_week(void **state)
{
	struct run r;
	json_t *ev[16];

	write_file("c.yaml",
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: SIM_HOOK_URL}\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n"
		   "  daily:\n"
		   "    cron: \"0 9 * * *\"\n"
		   "    tz: Europe/Berlin\n"
		   "    targets: [hook, archive]\n"
		   "    tasks:\n"
		   "      - {name: summary, command: [./summary.sh]}\n",
		   0600);
	run_bin(&r, "--config", "c.yaml", "--from", "2026-03-23T00:00:00+01:00",
		"--until", "2026-03-30T00:00:00+02:00", "--json", (char *)NULL);
	if (r.status != 0 || !r.json)
		fail_msg("status %d, stderr: %s", r.status, r.err);
	assert_fast(&r);
	assert_int_equal(events(r.json, "slot", ev, 16), 7);
	/* The week crosses Berlin's spring change (2026-03-29): 09:00 local
	 * on every day, with the offset of that day. */
	assert_string_equal(json_string_value(json_object_get(ev[0], "slot")),
			    "2026-03-23T09:00:00+01:00");
	assert_string_equal(json_string_value(json_object_get(ev[6], "slot")),
			    "2026-03-29T09:00:00+02:00");
	assert_int_equal(events(r.json, "attempt_succeeded", ev, 16), 7);
	assert_int_equal(delivered(r.json, "hook", "result"), 7);
	assert_int_equal(delivered(r.json, "archive", "result"), 7);
	assert_int_equal(ledger_count(r.json, "success"), 7);
	run_dispose(&r);
}

static void downtime_over_two_weekly_slots_catches_up(void **state)
{
	static const struct {
		const char *policy;
		size_t runs, missed;
	} rows[] = {{"latest", 1, 1}, {"all", 2, 0}, {"none", 0, 2}};
	struct run r;
	json_t *ev[8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 "targets:\n"
			 "  archive: {kind: file, path: ./deliveries.jsonl}\n"
			 "schedules:\n"
			 "  weekly-summary:\n"
			 "    cron: \"0 17 * * 5\"\n"
			 "    tz: Asia/Seoul\n"
			 "    catchup: %s\n"
			 "    targets: [archive]\n"
			 "    tasks:\n"
			 "      - {name: summary, command: [./summary.sh]}\n",
			 rows[i].policy);
		write_file("c.yaml", text, 0600);
		/* Down from Thursday to the Saturday nine days later: the
		 * Fridays 11-27 and 12-04 pass while nothing runs. */
		run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM,
			"--until", "2026-12-06T00:00:00+09:00", "--down",
			"2026-11-26T00:00:00+09:00..2026-12-05T09:00:00+09:00",
			"--json", (char *)NULL);
		if (r.status != 0 || !r.json)
			fail_msg("%s: status %d, stderr: %s", rows[i].policy,
				 r.status, r.err);
		assert_int_equal(events(r.json, "down", ev, 8), 1);
		assert_int_equal(events(r.json, "attempt_succeeded", ev, 8),
				 rows[i].runs);
		assert_int_equal(ledger_count(r.json, "success"),
				 rows[i].runs);
		assert_int_equal(ledger_count(r.json, "missed"),
				 rows[i].missed);
		size_t nm = events(r.json, "missed", ev, 8);
		assert_int_equal(nm, rows[i].missed);
		/* Missed and caught-up slots show at the restart. */
		for (size_t k = 0; k < nm; k++)
			assert_string_equal(json_string_value(json_object_get(
						    ev[k], "time")),
					    "2026-12-05T09:00:00+09:00");
		if (rows[i].runs == 1) {
			events(r.json, "slot", ev, 8);
			assert_string_equal(json_string_value(json_object_get(
						    ev[0], "slot")),
					    "2026-12-04T17:00:00+09:00");
		}
		run_dispose(&r);
	}
}

static void malformed_fail_argument_is_located(void **state)
{
	static const struct {
		const char *arg;
		const char *where; /* expected in stderr */
	} rows[] = {
		{"summary", "column 8"},
		{"@" FRI_1700 ".." FRI_2000, "column 1"},
		{"summary@" FRI_1700, "column 34"},
		{"summary@yesterday.." FRI_2000, "column 9"},
		{"summary@" FRI_1700 "..2026-11-27T20:00:00", "column 36"},
		{QUOTA ":exit=0", "column 67"},
		{QUOTA ":exit=x", "column 67"},
		{"summary@" FRI_2000 ".." FRI_1700, "column 36"},
		{"nosuch@" FRI_1700 ".." FRI_2000, "no task named 'nosuch'"},
	};
	static const struct {
		const char *arg, *where;
	} down_rows[] = {
		{FRI_1700, "column 26"},
		{FRI_2000 ".." FRI_1700, "column 28"},
		{"soon.." FRI_2000, "column 1"},
	};
	struct run r;

	write_weekly(NULL);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM,
			"--until", WEEK_UNTIL, "--fail", rows[i].arg, (char *)NULL);
		if (r.status != 2 || !strstr(r.err, "--fail") ||
		    !strstr(r.err, rows[i].where))
			fail_msg("row %zu (%s): status %d, stderr: %s", i,
				 rows[i].arg, r.status, r.err);
		assert_string_equal(r.out, "");
		run_dispose(&r);
	}
	for (size_t i = 0; i < sizeof(down_rows) / sizeof(down_rows[0]); i++) {
		run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM,
			"--until", WEEK_UNTIL, "--down", down_rows[i].arg, (char *)NULL);
		if (r.status != 2 || !strstr(r.err, "--down") ||
		    !strstr(r.err, down_rows[i].where))
			fail_msg("down row %zu (%s): status %d, stderr: %s", i,
				 down_rows[i].arg, r.status, r.err);
		run_dispose(&r);
	}
}

static void temp_folder_is_removed(void **state)
{
	struct run r;
	char tmp[400];

	/* Point TMPDIR at a folder of our own and check it is empty after. */
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	assert_int_equal(mkdir(tmp, 0700), 0);
	char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	setenv("TMPDIR", tmp, 1);
	write_weekly(NULL);
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, (char *)NULL);
	if (old) {
		setenv("TMPDIR", old, 1);
		free(old);
	} else {
		unsetenv("TMPDIR");
	}
	assert_int_equal(r.status, 0);
	run_dispose(&r);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", tmp);
	assert_int_equal(system(cmd), 0);
}

/* ---- issue 13: the notice policy and expect ----------------------------- */

/* "attempt outcome class;" of every ledger row, in order. */
static void ledger_text(json_t *root, char *out, size_t n)
{
	json_t *arr = json_object_get(root, "ledger"), *e;
	size_t i, len = 0;

	out[0] = '\0';
	json_array_foreach(arr, i, e) {
		const char *cls = json_string_value(json_object_get(
			e, "error_class"));
		if (len < n)
			len += (size_t)snprintf(
				out + len, n - len, "%d %s %s;",
				(int)json_integer_value(json_object_get(
					e, "attempt")),
				json_string_value(json_object_get(e, "outcome")),
				cls ? cls : "");
	}
}

/* The seed's timeline (3 failures, then a success) under every, final and
 * none: the receiver gets 3, 0 and 0 failure notices and one result, the
 * timeline says which attempts withheld one, and the ledger is the same. */
static void issue13_notice_policies_over_the_seed_timeline(void **state)
{
	static const struct {
		const char *lines;
		size_t notices, withheld_events;
	} rows[] = {
		{"    notices: every\n", 3, 0},
		{"    notices: final\n", 0, 3},
		{"    notices: none\n", 0, 3},
	};
	char first[1024] = "", ledger[1024];
	struct run r;
	json_t *ev[8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		fake_http_reset(srv);
		fake_http_set_default(srv, "/hook", 200, NULL, "ok");
		fake_http_set_default(srv, "/pager", 200, NULL, "ok");
		write_weekly(rows[i].lines);
		char db[400];
		snprintf(db, sizeof(db), "%s/deliveries.jsonl", dir);
		unlink(db);
		run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM,
			"--until", WEEK_UNTIL, "--fail", QUOTA, "--deliver",
			"--json", (char *)NULL);
		if (r.status != 0 || !r.json)
			fail_msg("%s: status %d, stderr: %s", rows[i].lines,
				 r.status, r.err);
		/* At the real receiver and the real file. */
		assert_int_equal(received("/hook", "failure_notice"),
				 rows[i].notices);
		assert_int_equal(received("/hook", "result"), 1);
		assert_int_equal(file_kind("deliveries.jsonl",
					   "failure_notice"), rows[i].notices);
		assert_int_equal(file_kind("deliveries.jsonl", "result"), 1);
		/* Per attempt: what the policy did. */
		assert_int_equal(events(r.json, "attempt_failed", ev, 8), 3);
		for (int k = 0; k < 3; k++) {
			assert_int_equal(json_integer_value(json_object_get(
						 ev[k], "notices_sent")),
					 rows[i].notices ? 2 : 0);
			assert_int_equal(json_integer_value(json_object_get(
						 ev[k], "notices_withheld")),
					 rows[i].notices ? 0 : 2);
		}
		assert_int_equal(events(r.json, "notice_withheld", ev, 8),
				 rows[i].withheld_events);
		ledger_text(r.json, ledger, sizeof(ledger));
		if (i == 0)
			snprintf(first, sizeof(first), "%s", ledger);
		assert_string_equal(ledger, first);
		run_dispose(&r);
	}
	assert_string_equal(first, "1 failed task;2 failed task;3 failed task;"
				   "4 success ;");

	/* The text timeline names the targets and their policy. */
	write_weekly("    notices: final\n");
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--fail", QUOTA, (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "weekly-summary  attempt 1: no failure "
				      "notice to hook (notices: final), archive "
				      "(notices: final)\n"));
	run_dispose(&r);
}

/* final when the slot is lost: exactly one notice per target, from the
 * last attempt, saying the slot is lost and the attempt count. A target's
 * own policy wins over the schedule's. */
static void issue13_final_notice_when_the_slot_is_lost(void **state)
{
	struct fake_request fr;
	struct run r;

	write_weekly("    notices: final\n"
		     "    retry: {attempts: 2, backoff: exponential, "
		     "delay: 60s}\n");
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--fail", QUOTA, "--deliver", (char *)NULL);
	if (r.status != 0)
		fail_msg("status %d, stderr: %s", r.status, r.err);
	assert_int_equal(received("/hook", "failure_notice"), 1);
	assert_int_equal(fake_http_count(srv, "/hook"), 1);
	assert_true(fake_http_request(srv, "/hook", 0, &fr));
	json_t *m = json_loads(fr.body, 0, NULL);
	fake_request_dispose(&fr);
	assert_non_null(m);
	assert_int_equal(json_integer_value(json_object_get(m, "attempt")), 2);
	assert_non_null(strstr(json_string_value(json_object_get(m, "summary")),
			       "weekly-summary: the slot is lost after 2 "
			       "attempts"));
	json_decref(m);
	assert_int_equal(file_kind("deliveries.jsonl", "failure_notice"), 1);
	assert_non_null(strstr(r.out, "attempt 1: no failure notice to hook "
				      "(notices: final), archive (notices: "
				      "final)"));
	run_dispose(&r);
}

/* A result short of expect is a failed run (cause expectation), retried
 * and finally lost; meeting it delivers. explain prints the policy and
 * the expectation. */
static void issue13_expect_in_simulate_and_explain(void **state)
{
	struct run r;
	json_t *ev[8];

	write_weekly("    notices: final\n"
		     "    expect: {min_previews: 1, min_summary_chars: 5}\n"
		     "    retry: {attempts: 2, backoff: fixed, delay: 60s}\n");
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--json", (char *)NULL);
	if (r.status != 0 || !r.json)
		fail_msg("status %d, stderr: %s", r.status, r.err);
	assert_int_equal(events(r.json, "attempt_failed", ev, 8), 2);
	for (int k = 0; k < 2; k++) {
		assert_string_equal(json_string_value(json_object_get(
					    ev[k], "error_class")),
				    "expectation");
		assert_non_null(strstr(json_string_value(json_object_get(
					       ev[k], "error")),
				       "expect.min_previews: 0 previews, at "
				       "least 1 expected"));
	}
	assert_int_equal(events(r.json, "slot_lost", ev, 8), 1);
	assert_int_equal(ledger_count(r.json, "failed"), 1);
	assert_int_equal(ledger_count(r.json, "lost"), 1);
	assert_int_equal(delivered(r.json, "hook", "result"), 0);
	assert_int_equal(delivered(r.json, "hook", "failure_notice"), 1);
	run_dispose(&r);

	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, (char *)NULL);
	assert_non_null(strstr(r.out, "attempt 1 failed (expectation): "
				      "schedule weekly-summary: the result fell "
				      "short of expect.min_previews"));
	run_dispose(&r);

	/* With a preview, the expectation is met. */
	write_file("summary.sh", "#!/bin/sh\nprintf '{\"summary\": \"five!\", "
		   "\"previews\": [\"p\"]}'\n", 0700);
	run_bin(&r, "--config", "c.yaml", "--from", WEEK_FROM, "--until",
		WEEK_UNTIL, "--json", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(events(r.json, "attempt_succeeded", ev, 8), 1);
	assert_int_equal(delivered(r.json, "hook", "result"), 1);
	run_dispose(&r);

	/* explain SCHEDULE: the policy, a target's own, the expectation. */
	write_file("c.yaml",
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: SIM_HOOK_URL, "
		   "notices: none}\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n"
		   "  weekly-summary:\n"
		   "    cron: \"0 17 * * 5\"\n"
		   "    tz: Asia/Seoul\n"
		   "    notices: final\n"
		   "    expect: {min_previews: 1, min_summary_chars: 5}\n"
		   "    targets: [hook, archive]\n"
		   "    tasks:\n"
		   "      - {name: summary, command: [./summary.sh]}\n",
		   0600);
	char out[16384], err[4096];
	const char *args[] = {"explain", "--config", "c.yaml",
			      "weekly-summary", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, args, out, sizeof(out), err,
				    sizeof(err)), 0);
	assert_non_null(strstr(out, "notices     final (a failure notice only "
				    "on the attempt that loses the slot)\n"
				    "            to hook: none (the target's "
				    "own)\n"
				    "expect      at least 1 preview, a summary "
				    "of at least 5 characters"));
	const char *jargs[] = {"explain", "--json", "--config", "c.yaml",
			       "weekly-summary", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, jargs, out, sizeof(out),
				    err, sizeof(err)), 0);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "notices")),
			    "final");
	json_t *ex = json_object_get(j, "expect");
	assert_int_equal(json_integer_value(json_object_get(ex,
							    "min_previews")), 1);
	json_t *tn = json_object_get(j, "target_notices");
	assert_int_equal(json_array_size(tn), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(tn, 0), "notices")), "none");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(tn, 1), "source")),
			    "schedule");
	json_decref(j);
}

/* ---- the rehearsal table (issue 43) --------------------------------------- */

#define R_DAY "2026-03-06T"
/* Fails (exit 75) the slots of 01:00 to 03:59, succeeds the others: the
 * same failures in a simulation and in a daemon, with no --fail. */
#define R_WORK "#!/bin/sh\ncase \"$SURECRON_SLOT\" in\n" \
	"  " R_DAY "0[123]:*) echo quota >&2; exit 75;;\n" \
	"  " R_DAY "05:*) [ -z \"$REHEARSAL_SLEEP\" ] || " \
	"sleep \"$REHEARSAL_SLEEP\";;\nesac\n" \
	"if [ \"$SURECRON_TASK\" = block ] && [ -n \"$REHEARSAL_SLEEP\" ]; " \
	"then sleep \"$REHEARSAL_SLEEP\"; fi\necho ok\n"

struct rehearsal {
	const char *name;
	const char *alerts;   /* more of `alerts: {...}` */
	const char *cron;
	const char *extra;    /* more schedule lines */
	const char *from, *until;
	const char *down;     /* --down T1..T2 (NULL: none) */
	const char *ack;      /* --ack job@T (NULL: none) */
	const char *outage;   /* --fail-target pager@T1..T2 (NULL: none) */
	bool daemon;          /* replayed by a daemon too */
	const char *want;     /* sorted "reason/round/target", space-separated */
	const char *slow;     /* --slow TASK@T1..T2=DUR (NULL: none); the
				 daemon sleeps an hour of its clock */
	const char *more;     /* more schedules (NULL: none) */
};

static const struct rehearsal rehearsals[] = {
	{"lost", "", "0 1 * * *", "", R_DAY "00:30:00Z", R_DAY "01:30:00Z",
	 NULL, NULL, NULL, true, "lost/0/pager", NULL, NULL},
	{"missed after downtime", "", "0 0-2 * * *", "    catchup: none\n",
	 R_DAY "00:30:00Z", R_DAY "02:45:00Z",
	 R_DAY "00:55:00Z.." R_DAY "02:30:00Z", NULL, NULL, true,
	 "missed/0/pager", NULL, NULL},
	{"three realert rounds", ", realert: 1h", "0 1 * * *", "",
	 R_DAY "00:30:00Z", R_DAY "04:30:00Z", NULL, NULL, NULL, true,
	 "lost/0/pager lost/1/pager lost/2/pager lost/3/pager", NULL, NULL},
	{"late, then recovered", "", "0 * * * *",
	 "    catchup: latest\n    sla: {start_within: 5m}\n",
	 R_DAY "04:30:00Z", R_DAY "05:30:00Z",
	 R_DAY "04:50:00Z.." R_DAY "05:10:00Z", NULL, NULL, false,
	 "late/0/pager recovered/0/pager", NULL, NULL},
	{"late behind a busy worker, then recovered", "", "0 * * * *",
	 "    sla: {start_within: 5m}\n", R_DAY "06:30:00Z", R_DAY "08:30:00Z",
	 NULL, NULL, NULL, true, "late/0/pager recovered/0/pager",
	 "block@" R_DAY "06:58:00Z.." R_DAY "06:59:00Z=1h",
	 "  blocker:\n"
	 "    cron: \"58 6 * * *\"\n"
	 "    tz: UTC\n"
	 "    tasks:\n"
	 "      - {name: block, command: [./work.sh]}\n"},
	{"overrun, then recovered", "", "0 * * * *",
	 "    sla: {max_runtime: 30m}\n", R_DAY "04:30:00Z", R_DAY "06:30:00Z",
	 NULL, NULL, NULL, true, "overrun/0/pager recovered/0/pager",
	 "work@" R_DAY "05:00:00Z.." R_DAY "05:01:00Z=1h", NULL},
	{"stale, then recovered", ", on: [stale]", "0 * * * *",
	 "    sla: {success_within: 90m}\n", "2026-03-05T23:30:00Z",
	 R_DAY "04:30:00Z", NULL, NULL, NULL, true,
	 "recovered/0/pager stale/0/pager", NULL, NULL},
	{"ack stops the rounds", ", realert: 1h", "0 1 * * *", "",
	 R_DAY "00:30:00Z", R_DAY "04:30:00Z", NULL, "job@" R_DAY "02:30:00Z",
	 NULL, true, "lost/0/pager lost/1/pager", NULL, NULL},
	{"target outage", "", "0 1 * * *", "", R_DAY "00:30:00Z",
	 R_DAY "02:30:00Z", NULL, NULL,
	 "pager@" R_DAY "00:50:00Z.." R_DAY "01:20:00Z", true,
	 "lost/0/pager", NULL, NULL},
};

static void write_rehearsal(const struct rehearsal *t, const char *store)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "%s%s%s"
		 "targets:\n"
		 "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		 "  pager: {kind: file, path: ./out/pager.jsonl}\n"
		 "alerts: {targets: [pager]%s}\n"
		 "worker: {concurrency: 1}\n"
		 "schedules:\n"
		 "  job:\n"
		 "    cron: \"%s\"\n"
		 "    tz: UTC\n"
		 "    targets: [archive]\n"
		 "    retry: {attempts: 1, delay: 1m}\n"
		 "%s"
		 "    tasks:\n"
		 "      - {name: work, command: [./work.sh]}\n"
		 "%s",
		 store ? "store: \"" : "", store ? store : "",
		 store ? "\"\n" : "", t->alerts, t->cron, t->extra,
		 t->more ? t->more : "");
	write_file("c.yaml", text, 0600);
	write_file("work.sh", R_WORK, 0700);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and joins the n strings of v (freed) into out. */
static void join_sorted(char **v, size_t n, char *out, size_t cap)
{
	size_t len = 0;

	qsort(v, n, sizeof(*v), cmp_str);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (len < cap)
			len += (size_t)snprintf(out + len, cap - len, "%s%s",
						i ? " " : "", v[i]);
		free(v[i]);
	}
}

/* The alert messages of a simulation, as the sorted multiset. */
static void sim_multiset(json_t *root, char *out, size_t cap)
{
	json_t *arr = json_object_get(root, "events"), *e;
	char *v[64] = {0};
	size_t i, n = 0;

	json_array_foreach(arr, i, e) {
		const char *ev = json_string_value(json_object_get(e, "event"));
		const char *reason = json_string_value(json_object_get(e,
								       "reason"));
		if (strcmp(ev, "delivery") != 0 || !reason || n == 64)
			continue;
		char buf[160];
		snprintf(buf, sizeof(buf), "%s/%d/%s", reason,
			 (int)json_integer_value(json_object_get(e, "round")),
			 json_string_value(json_object_get(e, "target")));
		v[n++] = strdup(buf);
	}
	join_sorted(v, n, out, cap);
}

/* The alert messages in the file target dir/out/pager.jsonl. */
static size_t file_multiset(char *out, size_t cap)
{
	char path[400], line[65536];
	char *v[64] = {0};
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/out/pager.jsonl", dir);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && n < 64) {
		json_t *m = json_loads(line, 0, NULL);
		assert_non_null(m);
		const char *kind = json_string_value(json_object_get(m, "kind"));
		if (kind && strcmp(kind, "alert") == 0) {
			char buf[160];
			snprintf(buf, sizeof(buf), "%s/%d/pager",
				 json_string_value(json_object_get(m,
								   "reason")),
				 (int)json_integer_value(json_object_get(
					 m, "round")));
			v[n++] = strdup(buf);
		}
		json_decref(m);
	}
	if (f)
		fclose(f);
	join_sorted(v, n, out, cap);
	return n;
}

static void simulate_rehearsal(const struct rehearsal *t, struct run *r)
{
	const char *a[12];
	size_t n = 0;

	a[n++] = "--from";
	a[n++] = t->from;
	a[n++] = "--until";
	a[n++] = t->until;
	if (t->down) {
		a[n++] = "--down";
		a[n++] = t->down;
	}
	if (t->ack) {
		a[n++] = "--ack";
		a[n++] = t->ack;
	}
	if (t->outage) {
		a[n++] = "--fail-target";
		a[n++] = t->outage;
	}
	if (t->slow) {
		a[n++] = "--slow";
		a[n++] = t->slow;
	}
	while (n < 10)
		a[n++] = NULL;
	run_bin(r, "--config", "c.yaml", "--json", a[0], a[1], a[2], a[3],
		a[4], a[5], a[6], a[7], a[8], a[9], (char *)NULL);
	if (r->status != 0 || !r->json)
		fail_msg("%s: status %d, stderr: %s", t->name, r->status,
			 r->err);
}

static void rehearsal_table_through_simulate(void **state)
{
	for (size_t i = 0; i < sizeof(rehearsals) / sizeof(rehearsals[0]);
	     i++) {
		const struct rehearsal *t = &rehearsals[i];
		struct run r;
		char got[1024];
		json_t *ev[64];

		write_rehearsal(t, NULL);
		simulate_rehearsal(t, &r);
		assert_fast(&r);
		sim_multiset(r.json, got, sizeof(got));
		if (strcmp(got, t->want) != 0)
			fail_msg("%s: alert messages '%s', want '%s'", t->name,
				 got, t->want);
		if (t->outage) {
			/* Held while the target was down, tried again with
			 * backoff, delivered once after the window. */
			assert_true(events(r.json, "alert_send_failed", ev, 64)
				    >= 3);
			size_t nd = events(r.json, "delivery", ev, 64);
			int64_t end = 0, at = 0;
			assert_int_equal(clock_parse_iso(R_DAY "01:20:00Z",
							 &end, NULL), 0);
			for (size_t k = 0; k < nd; k++)
				if (json_object_get(ev[k], "reason"))
					assert_int_equal(clock_parse_iso(
						json_string_value(json_object_get(
							ev[k], "time")), &at,
						NULL), 0);
			assert_true(at >= end);
		}
		if (t->ack)
			assert_int_equal(json_integer_value(json_object_get(
				json_object_get(r.json, "totals"), "acked")), 1);
		if (t->more) {
			/* Late when its start_within ran out, while the
			 * worker was still busy, not when it got the worker. */
			int64_t at = 0, due = 0;
			assert_int_equal(events(r.json, "alert_raised", ev, 64),
					 1);
			assert_int_equal(clock_parse_iso(json_string_value(
				json_object_get(ev[0], "time")), &at, NULL), 0);
			assert_int_equal(clock_parse_iso(R_DAY "07:05:00Z",
							 &due, NULL), 0);
			assert_true(at >= due && at < due + 1000);
		}
		run_dispose(&r);
	}
}

static void rehearsal_arguments_are_checked(void **state)
{
	static const struct {
		const char *opt, *arg, *where;
	} rows[] = {
		{"--ack", "job", "expected SCHEDULE@T"},
		{"--ack", "@" R_DAY "01:00:00Z", "column 1"},
		{"--ack", "job@tomorrow", "column 5"},
		{"--ack", "nosuch@" R_DAY "01:00:00Z", "no schedule named 'nosuch'"},
		{"--fail-target", "pager@" R_DAY "01:00:00Z", "column 27"},
		{"--fail-target", "pager@" R_DAY "02:00:00Z.." R_DAY "01:00:00Z",
		 "ends before it starts"},
		{"--fail-target", "nosuch@" R_DAY "01:00:00Z.." R_DAY "02:00:00Z",
		 "no target named 'nosuch'"},
		{"--slow", "work@" R_DAY "01:00:00Z.." R_DAY "02:00:00Z",
		 "expected TASK@T1..T2=DURATION"},
		{"--slow", "work@" R_DAY "01:00:00Z.." R_DAY "02:00:00Z=soon",
		 "column 49: bad duration 'soon'"},
		{"--slow", "nosuch@" R_DAY "01:00:00Z.." R_DAY "02:00:00Z=1h",
		 "no task named 'nosuch'"},
	};
	struct run r;

	write_rehearsal(&rehearsals[0], NULL);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		run_bin(&r, "--config", "c.yaml", "--from", R_DAY "00:00:00Z",
			"--until", R_DAY "01:00:00Z", rows[i].opt, rows[i].arg,
			(char *)NULL);
		assert_int_equal(r.status, 2);
		if (!strstr(r.err, rows[i].where))
			fail_msg("%s %s: stderr '%s' lacks '%s'", rows[i].opt,
				 rows[i].arg, r.err, rows[i].where);
		run_dispose(&r);
	}
}

/* The daemon's clock: R_RATE clock-seconds a real second from the
 * anchor (an hour a second; a third of that under the sanitizers). */
static int64_t r_rate(void)
{
	const char *san = getenv("SURECRON_SAN");
	return san && *san ? 1200 : 3600;
}
#define R_RATE r_rate()

static int64_t r_iso(const char *s)
{
	int64_t ms = 0;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

struct replay {
	int64_t t0, anchor; /* clock t0 reads t0 at real anchor */
};

static int64_t virtual_now(const struct replay *p)
{
	return p->t0 + (tu_now_ms() - p->anchor) * R_RATE;
}

/* Waits (real time) until the daemons' clock reads t. */
static void wait_virtual(const struct replay *p, int64_t t)
{
	int64_t left = (t - virtual_now(p)) / R_RATE;

	if (left > 0)
		tu_sleep_ms(left + 1);
	while (virtual_now(p) < t)
		tu_sleep_ms(1);
}

static pid_t replay_start(const struct replay *p)
{
	static char c[64], a[64], rt[64], sl[64];
	char iso[CLOCK_ISO_MAX];

	snprintf(c, sizeof(c), "SURECRON_TEST_CLOCK=%s",
		 clock_format_utc(p->t0, iso));
	snprintf(a, sizeof(a), "SURECRON_TEST_CLOCK_ANCHOR=%s",
		 clock_format_utc(p->anchor, iso));
	snprintf(rt, sizeof(rt), "SURECRON_TEST_CLOCK_RATE=%d", (int)R_RATE);
	/* An hour of the clock, for the 05:00 slot of the overrun row. */
	snprintf(sl, sizeof(sl), "REHEARSAL_SLEEP=%d", (int)(3600 / R_RATE));
	const char *envs[] = {c, a, rt, sl, "SURECRON_LOG=warn", NULL};
	return tu_track(tu_start_daemon(dir, "c.yaml", envs, 0));
}

/* Plays t in a real daemon on the fast test clock: the downtime as a
 * stop and a restart on the same clock, the ack as `surecron ack`, the
 * outage as a folder in the way of the target's file until the window
 * ends. */
/* How many alert messages the simulation delivered before instant t. */
static size_t sim_before(json_t *root, int64_t t)
{
	json_t *arr = json_object_get(root, "events"), *e;
	size_t i, n = 0;

	json_array_foreach(arr, i, e) {
		int64_t at = 0;
		if (!json_object_get(e, "reason") ||
		    strcmp(json_string_value(json_object_get(e, "event")),
			   "delivery") != 0)
			continue;
		assert_int_equal(clock_parse_iso(json_string_value(
				json_object_get(e, "time")), &at, NULL), 0);
		n += at < t;
	}
	return n;
}

/* Waits (up to 30 s) for the daemon to have delivered n alert messages:
 * a loaded machine may hold its passes back behind its clock. */
static void wait_messages(size_t n, char *got, size_t cap)
{
	int64_t end = tu_now_ms() + 30000;

	while (file_multiset(got, cap) < n && tu_now_ms() < end)
		tu_sleep_ms(5);
}

static void daemon_rehearsal(const struct rehearsal *t, json_t *sim,
			     const char *want, char *got, size_t cap)
{
	char url[400], out[512], err[512];
	struct replay p;
	size_t n_want = 1;

	for (const char *c = want; *c; c++)
		n_want += *c == ' ';
	snprintf(url, sizeof(url), "sqlite:%s/store.db", dir);
	write_rehearsal(t, url);
	char outdir[400], held[420];
	snprintf(outdir, sizeof(outdir), "%s/out", dir);
	snprintf(held, sizeof(held), "%s/pager.jsonl", outdir);
	assert_int_equal(mkdir(outdir, 0700), 0);
	/* The outage: a folder where the target's file should be, so every
	 * open of it fails (even as root) until it is removed. */
	if (t->outage)
		assert_int_equal(mkdir(held, 0700), 0);
	p.t0 = r_iso(t->from);
	/* A real second whole, so the anchor formats exactly, and the
	 * daemon started then: its clock starts at `from` (each row leaves
	 * half an hour of it, a fraction of a real second, before its first
	 * slot for the start-up). */
	p.anchor = (tu_now_ms() / 1000 + 1) * 1000;
	tu_sleep_ms(p.anchor - tu_now_ms());
	pid_t pid = replay_start(&p);
	int64_t until = r_iso(t->until);
	if (t->down) {
		const char *dots = strstr(t->down, "..");
		char d1[64];
		snprintf(d1, sizeof(d1), "%.*s", (int)(dots - t->down),
			 t->down);
		wait_virtual(&p, r_iso(d1));
		assert_true(tu_stop_daemon(pid, 10000));
		wait_virtual(&p, r_iso(dots + 2));
		pid = replay_start(&p);
	}
	if (t->ack) {
		const char *at = strchr(t->ack, '@');
		wait_virtual(&p, r_iso(at + 1));
		/* The rounds due before the ack went out first. */
		wait_messages(sim_before(sim, r_iso(at + 1)), got, cap);
		/* What the on-call would run: ack the open alert's slot. */
		const char *args[] = {"ack", "--config", "c.yaml", "job",
				      R_DAY "01:00:00Z", NULL};
		assert_int_equal(tu_run_bin(dir, dir, NULL, args, out,
					    sizeof(out), err, sizeof(err)), 0);
	}
	if (t->outage) {
		const char *dots = strstr(t->outage, "..");
		wait_virtual(&p, r_iso(dots + 2));
		assert_int_equal(rmdir(held), 0);
	}
	wait_virtual(&p, until);
	/* A loaded machine may hold the daemon's passes back: wait for the
	 * messages the clock has made due, then five clock minutes more for
	 * any extra (every scenario ends half an hour from its next event),
	 * before stopping it. */
	wait_messages(n_want, got, cap);
	tu_sleep_ms(5 * 60 * 1000 / R_RATE);
	assert_true(tu_stop_daemon(pid, 10000));
	file_multiset(got, cap);
}

static void rehearsal_table_simulate_equals_daemon(void **state)
{
	TU_NEED_TEST_SEAMS();
	for (size_t i = 0; i < sizeof(rehearsals) / sizeof(rehearsals[0]);
	     i++) {
		const struct rehearsal *t = &rehearsals[i];
		struct run r;
		char sim[1024], dmn[1024];

		if (!t->daemon)
			continue;
		write_rehearsal(t, NULL);
		simulate_rehearsal(t, &r);
		sim_multiset(r.json, sim, sizeof(sim));
		daemon_rehearsal(t, r.json, sim, dmn, sizeof(dmn));
		run_dispose(&r);
		printf("%s: simulate '%s', daemon '%s'\n", t->name, sim, dmn);
		if (strcmp(sim, dmn) != 0)
			fail_msg("%s: simulate gave '%s', the daemon '%s'",
				 t->name, sim, dmn);
		/* The next scenario starts from a clean folder. */
		tu_rmrf(dir);
		assert_int_equal(mkdir(dir, 0700), 0);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(seed_incident_recovers_and_delivers_once),
		T(seed_incident_delivered_for_real),
		T(forced_short_policy_loses_the_slot_loudly),
		T(daily_schedule_over_a_week),
		T(downtime_over_two_weekly_slots_catches_up),
		T(malformed_fail_argument_is_located),
		T(temp_folder_is_removed),
		T(issue13_notice_policies_over_the_seed_timeline),
		T(issue13_final_notice_when_the_slot_is_lost),
		T(issue13_expect_in_simulate_and_explain),
		T(rehearsal_table_through_simulate),
		T(rehearsal_arguments_are_checked),
		T(rehearsal_table_simulate_equals_daemon),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
