/*
 * test_cli_check.c - `surecron check` as a user runs it: the real binary
 * ($SURECRON_BIN) on the shipped examples, on malformed configs and with
 * the environment a deployment would have. Asserts exit codes, stdout and
 * the FILE:LINE:COLUMN lines on stderr.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fifo_watch.h"
#include "alert.h"
#include "config.h"
#include "store.h"
#include "testutil.h"

static char tmp[256];
static char out[65536], err[65536];

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "%s", tu_tmpdir());
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(tmp);
	return 0;
}

/* Runs the binary (see tu_run_bin); fills out/err; returns the exit
 * status and fails the test if the child did not exit normally. */
static int run(const char *cwd, const char *const *env,
	       const char *const *args)
{
	int rc = tu_run_bin(tmp, cwd, env, args, out, sizeof(out), err,
			    sizeof(err));

	assert_true(rc >= 0);
	return rc;
}

/* The source tree (tests run from it under `make test`). */
static const char *src(void)
{
	static char dir[PATH_MAX];
	const char *s = getenv("SURECRON_SRC");

	if (s)
		return s;
	if (!getcwd(dir, sizeof(dir)))
		return ".";
	return dir;
}

static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void example_is_clean(void **state)
{
	char cfg[PATH_MAX + 64];
	snprintf(cfg, sizeof(cfg), "%s/examples/surecron.yaml", src());
	const char *env[] = {"SURECRON_SCHEDULE_WEEKLY_SUMMARY",
			     "SURECRON_SCHEDULE_DAILY_DIGEST", NULL};
	const char *args[] = {"check", "--config", cfg, NULL};

	assert_int_equal(run(tmp, env, args), 0);
	assert_string_equal(out, "ok: 2 schedules, 2 targets\n");
	/* Its alerts go to a target of their own: no warning. */
	assert_string_equal(err, "");
	const char *strict[] = {"check", "--strict", "--config", cfg, NULL};
	assert_int_equal(run(tmp, env, strict), 0);
}

static void team_example_needs_its_webhook(void **state)
{
	const char *unset[] = {"SLACK_WEBHOOK_URL",
			       "SURECRON_SCHEDULE_WEEKLY_SUMMARY",
			       "SURECRON_SCHEDULE_DAILY_DIGEST", NULL};
	const char *set[] = {"SLACK_WEBHOOK_URL=https://hooks.example/T/B/X",
			     "SURECRON_SCHEDULE_WEEKLY_SUMMARY",
			     "SURECRON_SCHEDULE_DAILY_DIGEST", NULL};
	const char *args[] = {"check", "--config", "examples/team.yaml", NULL};

	assert_int_equal(run(src(), unset, args), 2);
	assert_string_equal(out, "");
	assert_string_equal(err, "examples/team.yaml:10:37: "
				 "targets.team-chat.url_env: environment "
				 "variable SLACK_WEBHOOK_URL is not set\n");

	assert_int_equal(run(src(), set, args), 0);
	assert_string_equal(out, "ok: 2 schedules, 2 targets\n");
	/* The secret never shows. */
	assert_null(strstr(out, "hooks.example"));
	assert_null(strstr(err, "hooks.example"));
}

static void bad_config_is_located(void **state)
{
	const char *path = write_file(
		"surecron.yaml",
		"schedules:\n"
		"  weekly-summary:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tasks:\n"
		"      - {name: summary, command: [/bin/true], timout: 10m}\n"
		"    catchup: sometimes\n");
	const char *args[] = {"check", "--config", path, NULL};
	char want[2048];

	assert_int_equal(run(NULL, NULL, args), 2);
	assert_string_equal(out, "");
	snprintf(want, sizeof(want),
		 "%s:5:47: schedules.weekly-summary.tasks[0].timout: unknown "
		 "key in a task (did you mean timeout?); expected one of: "
		 "name, kind, command, shell, cwd, env, timeout, grace, "
		 "max_output, http\n"
		 "%s:6:14: schedules.weekly-summary.catchup: unknown value "
		 "\"sometimes\" (expected latest, all or none)\n",
		 path, path);
	assert_string_equal(err, want);

	/* Default path: ./surecron.yaml in the working folder. */
	const char *dflt[] = {"check", NULL};
	assert_int_equal(run(tmp, NULL, dflt), 2);
	assert_non_null(strstr(err, "surecron.yaml:5:47: "));
}

static void override_is_checked(void **state)
{
	const char *path = write_file(
		"o.yaml",
		"schedules:\n"
		"  weekly-summary:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *args[] = {"check", "--config", path, NULL};
	const char *bad[] = {"SURECRON_SCHEDULE_WEEKLY_SUMMARY=17 * *", NULL};
	const char *good[] = {"SURECRON_SCHEDULE_WEEKLY_SUMMARY=*/5 * * * *",
			      NULL};

	assert_int_equal(run(NULL, bad, args), 2);
	assert_non_null(strstr(err, ":3:11: schedules.weekly-summary.cron: "
				    "invalid cron \"17 * *\": expected 5 or 6 "
				    "fields, got 3 (from "
				    "SURECRON_SCHEDULE_WEEKLY_SUMMARY)\n"));
	assert_int_equal(run(NULL, good, args), 0);
	assert_string_equal(out, "ok: 1 schedule, 0 targets\n");
}

static void usage_and_unreadable(void **state)
{
	const char *missing[] = {"check", "--config", "/nonexistent/x.yaml",
				 NULL};
	assert_int_equal(run(NULL, NULL, missing), 2);
	assert_string_equal(err, "/nonexistent/x.yaml: cannot open: No such "
				 "file or directory\n");

	const char *opt[] = {"check", "--bogus", NULL};
	assert_int_equal(run(NULL, NULL, opt), 2);
	assert_non_null(strstr(err, "unknown option '--bogus'"));

	const char *noarg[] = {"check", "--config", NULL};
	assert_int_equal(run(NULL, NULL, noarg), 2);

	const char *help[] = {"check", "--help", NULL};
	assert_int_equal(run(NULL, NULL, help), 0);
	assert_non_null(strstr(out, "usage: surecron check [--strict] "
				    "[--store | --names] [--config FILE"));
	assert_non_null(strstr(out, "--strict   warnings are errors"));

	/* The file may also be given bare, like crontab -T FILE. */
	const char *bare[] = {"check", "examples/surecron.yaml", NULL};
	assert_int_equal(run(src(), NULL, bare), 0);
	assert_string_equal(out, "ok: 2 schedules, 2 targets\n");
	const char *two[] = {"check", "a.yaml", "b.yaml", NULL};
	assert_int_equal(run(NULL, NULL, two), 2);
	assert_non_null(strstr(err, "unexpected argument 'b.yaml'"));

	/* Garbage bytes: a located error, not a crash. */
	const char *path = write_file("g.yaml", "schedules:\n  \xff\xfe: 1\n");
	const char *g[] = {"check", "--config", path, NULL};
	assert_int_equal(run(NULL, NULL, g), 2);
	assert_non_null(strstr(err, ":2:3: invalid UTF-8 byte 0xFF"));
}

/* Issue 11: check applies the run's URL rule, on libcurl's reading of
 * the URL: webhook URLs from url_env with userinfo however spelt, a
 * "loopback" that is a user name, a token_url or an http task that would
 * send a secret in clear or a password written in the file. Each exits 2,
 * located, never printing the user or password. */
static void url_rule_as_the_run_applies_it(void **state)
{
	static const char *const hooks[] = {
		"https:/alice:pw@hooks.example/x",
		"https:///alice:pw@hooks.example",
		"http://127.0.0.1:@hooks.example/x",
		"http://localhost:pw@10.0.0.1/x",
	};
	const char *path = write_file(
		"h.yaml",
		"targets:\n"
		"  hook: {kind: webhook, url_env: SC_HOOK_URL}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"0 3 * * *\"\n"
		"    targets: [hook]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *args[] = {"check", "--config", path, NULL};
	char kv[256];
	const char *env[] = {kv, NULL};

	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		snprintf(kv, sizeof(kv), "SC_HOOK_URL=%s", hooks[i]);
		assert_int_equal(run(NULL, env, args), 2);
		assert_non_null(strstr(err, ":2:34: targets.hook.url_env: "
					    "environment variable SC_HOOK_URL: "));
		assert_null(strstr(err, "alice"));
		assert_null(strstr(err, "pw"));
	}
	snprintf(kv, sizeof(kv), "SC_HOOK_URL=https://hooks.example/x");
	assert_int_equal(run(NULL, env, args), 0);

	static const char *const files[] = {
		"auth:\n"
		"  idp: {kind: oauth2, token_url: \"http://127.0.0.1:@idp.example/"
		"t\", client_id: c, client_secret_env: SC_SECRET}\n",
		"auth:\n"
		"  api: {kind: bearer, token_env: SC_SECRET}\n",
		"",
	};
	static const char *const tasks[] = {
		"[{name: a, command: [/bin/true]}]",
		"[{name: a, http: {url: \"http://api.example.com/r\", "
		"auth: api}}]",
		"[{name: a, http: {url: \"https://u:pw@api.example.com/r\"}}]",
	};
	static const char *const want[] = {
		"auth.idp.token_url: http://idp.example: the URL holds a user "
		"name or password",
		"schedules.s.tasks[0].http.url: http://api.example.com: plain "
		"http is only allowed to a loopback host",
		"schedules.s.tasks[0].http.url: https://api.example.com: the URL "
		"holds a user name or password",
	};
	const char *senv[] = {"SC_SECRET=x", NULL};
	for (size_t i = 0; i < 3; i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 "%sschedules:\n  s:\n    cron: \"0 3 * * *\"\n"
			 "    tasks: %s\n",
			 files[i], tasks[i]);
		const char *p = write_file("f.yaml", text);
		const char *a[] = {"check", "--config", p, NULL};
		assert_int_equal(run(NULL, senv, a), 2);
		if (!strstr(err, want[i]))
			fail_msg("want %s, got %s", want[i], err);
		assert_null(strstr(err, "pw"));
	}
}

/* Issue 42: a target whose timeout is close to worker.lease (two thirds
 * or more) or above it is warned of, located at its timeout; one well
 * under it, and a file target, are not. */
static void issue42_target_timeout_near_lease(void **state)
{
	const char *path = write_file(
		"l.yaml",
		"worker: {lease: 30s}\n"
		"targets:\n"
		"  archive: {kind: file, path: ./a.jsonl}\n"
		"  slow: {kind: webhook, url_env: L42_URL, timeout: 25s}\n"
		"  slower: {kind: webhook, url_env: L42_URL, timeout: 45s}\n"
		"  quick: {kind: webhook, url_env: L42_URL, timeout: 10s}\n"
		"alerts: {targets: [archive]}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"0 3 * * *\"\n"
		"    targets: [slow, slower, quick, archive]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *args[] = {"check", path, NULL};
	const char *strict[] = {"check", "--strict", path, NULL};
	const char *env[] = {"L42_URL=http://127.0.0.1:9/hook", NULL};
	char want[512];
	(void)state;

	assert_int_equal(run(NULL, env, args), 0);
	snprintf(want, sizeof(want), "%s:4:52: warning: targets.slow.timeout: "
		 "target slow may take up to 25000 ms a send, close to "
		 "worker.lease (30000 ms)", path);
	if (!strstr(err, want))
		fail_msg("want %s, got %s", want, err);
	snprintf(want, sizeof(want), "%s:5:54: warning: targets.slower.timeout: "
		 "target slower may take up to 45000 ms a send, at or above "
		 "worker.lease (30000 ms)", path);
	if (!strstr(err, want))
		fail_msg("want %s, got %s", want, err);
	assert_null(strstr(err, "targets.quick"));
	assert_null(strstr(err, "targets.archive"));
	assert_int_equal(run(NULL, env, strict), 2);
}

/* Issue 13: check warns (stderr, exit 0) when no alert target is
 * configured, and when a schedule's only delivery target is also the only
 * alert target; --strict makes them errors (exit 2);
 * SURECRON_ALERT_TARGETS counts as configured. */
static void issue13_alert_warnings(void **state)
{
	const char *path = write_file(
		"a.yaml",
		"targets:\n"
		"  archive: {kind: file, path: ./a.jsonl}\n"
		"  pager: {kind: file, path: ./p.jsonl}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"0 3 * * *\"\n"
		"    targets: [archive]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *args[] = {"check", path, NULL};
	const char *strict[] = {"check", "--strict", "--config", path, NULL};
	const char *unset[] = {"SURECRON_ALERT_TARGETS", NULL};
	const char *pager[] = {"SURECRON_ALERT_TARGETS=pager", NULL};
	const char *archive[] = {"SURECRON_ALERT_TARGETS= archive", NULL};
	char want[2048];

	/* No alerts section at all: the file as a whole is concerned. */
	snprintf(want, sizeof(want),
		 "%s: warning: alerts.targets: no alert target is configured "
		 "(neither alerts.targets nor SURECRON_ALERT_TARGETS): a lost "
		 "or missed slot alerts no one\n", path);
	assert_int_equal(run(NULL, unset, args), 0);
	assert_string_equal(out, "ok: 1 schedule, 2 targets\n");
	assert_string_equal(err, want);
	assert_int_equal(run(NULL, unset, strict), 2);
	assert_string_equal(out, "");
	assert_string_equal(err, want);

	/* The variable names an alert target: nothing to warn about. */
	assert_int_equal(run(NULL, pager, args), 0);
	assert_string_equal(err, "");
	assert_int_equal(run(NULL, pager, strict), 0);
	assert_string_equal(out, "ok: 1 schedule, 2 targets\n");
	assert_string_equal(err, "");

	/* The variable names the schedule's only target. */
	snprintf(want, sizeof(want),
		 "%s:7:14: warning: schedules.s.targets: schedule s delivers "
		 "only to target archive, which is also the only alert target: "
		 "one outage silences both\n", path);
	assert_int_equal(run(NULL, archive, args), 0);
	assert_string_equal(err, want);
	assert_int_equal(run(NULL, archive, strict), 2);
	assert_string_equal(err, want);

	/* In the file: an empty list is located; only the schedule whose
	 * one target is the one alert target is named. */
	path = write_file(
		"b.yaml",
		"targets:\n"
		"  archive: {kind: file, path: ./a.jsonl}\n"
		"  pager: {kind: file, path: ./p.jsonl}\n"
		"alerts: {targets: []}\n"
		"schedules:\n"
		"  s: {cron: \"0 3 * * *\", tasks: [{name: a, command: "
		"[/bin/true]}]}\n");
	const char *b[] = {"check", path, NULL};
	assert_int_equal(run(NULL, unset, b), 0);
	snprintf(want, sizeof(want), "%s:4:19: warning: alerts.targets: no "
		 "alert target is configured", path);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("want %s, got %s", want, err);

	path = write_file(
		"c.yaml",
		"targets:\n"
		"  archive: {kind: file, path: ./a.jsonl}\n"
		"  pager: {kind: file, path: ./p.jsonl}\n"
		"alerts: {targets: [archive]}\n"
		"schedules:\n"
		"  one:\n"
		"    cron: \"0 3 * * *\"\n"
		"    targets: [archive]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  two:\n"
		"    cron: \"0 4 * * *\"\n"
		"    targets: [archive, pager]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  other:\n"
		"    cron: \"0 5 * * *\"\n"
		"    targets: [pager]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *c[] = {"check", path, NULL};
	const char *cs[] = {"check", "--strict", path, NULL};
	snprintf(want, sizeof(want),
		 "%s:8:14: warning: schedules.one.targets: schedule one "
		 "delivers only to target archive, which is also the only "
		 "alert target: one outage silences both\n", path);
	assert_int_equal(run(NULL, unset, c), 0);
	assert_string_equal(out, "ok: 3 schedules, 2 targets\n");
	assert_string_equal(err, want);
	assert_int_equal(run(NULL, unset, cs), 2);
	assert_string_equal(err, want);

	/* A good config: two alert targets. */
	path = write_file(
		"d.yaml",
		"targets:\n"
		"  archive: {kind: file, path: ./a.jsonl}\n"
		"  pager: {kind: file, path: ./p.jsonl}\n"
		"alerts: {targets: [archive, pager]}\n"
		"schedules:\n"
		"  one:\n"
		"    cron: \"0 3 * * *\"\n"
		"    targets: [archive]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *d[] = {"check", "--strict", path, NULL};
	assert_int_equal(run(NULL, unset, d), 0);
	assert_string_equal(out, "ok: 1 schedule, 2 targets\n");
	assert_string_equal(err, "");
}

/*
 * Issue 44 rows 10 and 11, through the binary: a fragment its group can
 * write is a warning at check (exit 0), an error under --strict and for
 * the other commands (status here); a FIFO a pattern matches is refused,
 * named, by check and by status without blocking on it (a watch opens it
 * for writing if one of them blocks, so the code before the fix fails
 * here instead of hanging).
 */
static void issue44_untrusted_or_fifo_fragment(void **state)
{
	char d[300], fifo[320];
	const char *env[] = {"SURECRON_STATUS_VIA=store", NULL};
	const char *chk[] = {"check", "surecron.yaml", NULL};
	const char *strict[] = {"check", "--strict", "surecron.yaml", NULL};
	const char *status[] = {"status", "--config", "surecron.yaml", "b",
				NULL};
	struct tu_fifo_watch w;

	snprintf(d, sizeof(d), "%s/conf.d", tmp);
	assert_int_equal(mkdir(d, 0755), 0);
	write_file("surecron.yaml",
		   "store: sqlite:./s.db\n"
		   "targets:\n  log: {kind: file, path: ./out.jsonl}\n"
		   "  al: {kind: file, path: ./alerts.jsonl}\n"
		   "alerts: {targets: [al]}\n"
		   "include: [\"conf.d/*.yaml\"]\n");
	const char *frag = write_file(
		"conf.d/b.yaml",
		"schedules:\n  b: {cron: \"0 3 * * *\", targets: [log], "
		"tasks: [{name: t, command: [/bin/true]}]}\n");
	assert_int_equal(chmod(frag, 0664), 0);

	assert_int_equal(run(tmp, NULL, chk), 0);
	assert_non_null(strstr(out, "ok: 1 schedule, 2 targets\n"));
	assert_non_null(strstr(err, "conf.d/b.yaml: warning: not trusted: "
			       "writable by its group (mode 0664)"));
	assert_int_equal(run(tmp, NULL, strict), 2);
	assert_non_null(strstr(err, "conf.d/b.yaml: warning: not trusted"));
	assert_int_equal(run(tmp, env, status), 2);
	assert_non_null(strstr(err, "conf.d/b.yaml: not trusted: writable by "
			       "its group"));
	assert_int_equal(chmod(frag, 0644), 0);
	assert_int_equal(run(tmp, NULL, strict), 0);
	assert_string_equal(err, "");

	snprintf(fifo, sizeof(fifo), "%s/conf.d/c.yaml", tmp);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	tu_fifo_watch_start(&w, fifo, 3000);
	int rc = run(tmp, NULL, chk);
	assert_false(tu_fifo_watch_stop(&w));
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "conf.d/c.yaml: not a regular file but a "
			       "FIFO (not opened)"));
	tu_fifo_watch_start(&w, fifo, 3000);
	rc = run(tmp, env, status);
	assert_false(tu_fifo_watch_stop(&w));
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "conf.d/c.yaml: not a regular file but a "
			       "FIFO"));
	unlink(fifo);
}

/* Issue 43: SURECRON_ALERT_TARGETS has one parser. Each hostile value
 * goes to `check` (the binary), to the daemon's start (the binary) and to
 * the daemon's alert-target resolution on the same loaded config
 * (config_load + alert_targets, what start and reload run): all agree on
 * whether the value is good and on the targets it names. */
static void issue43_alert_env_one_rule(void **state)
{
	static const struct {
		const char *value;
		const char *want; /* the targets, space-joined; NULL: refused */
		const char *msg;  /* the refusal */
	} rows[] = {
		{"a b", "a b", NULL},
		{"a,,b", "a b", NULL},
		{" a ", "a", NULL},
		{"a\tb", "a b", NULL},
		{"b, a ,a", "b a", NULL},
		{"", "b", NULL}, /* empty: unset, the file's list */
		{"a;b", NULL, "SURECRON_ALERT_TARGETS names unknown target "
		 "\"a;b\""},
		{"a,zz", NULL, "SURECRON_ALERT_TARGETS names unknown target "
		 "\"zz\""},
		{"\xc3\xa9t\xc3\xa9", NULL, "unknown target \"\xc3\xa9t\xc3\xa9\""},
		{"a \xff\x1b[2J", NULL, "unknown target \"\\xff\\x1b[2J\""},
		{" , ", NULL, "SURECRON_ALERT_TARGETS names no target"},
	};
	const char *path = write_file(
		"t.yaml",
		"store: sqlite:./state.db\n"
		"targets:\n"
		"  a: {kind: file, path: ./a.jsonl}\n"
		"  b: {kind: file, path: ./b.jsonl}\n"
		"alerts: {targets: [b]}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"0 3 * * *\"\n"
		"    targets: [a, b]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	const char *check[] = {"check", "--strict", path, NULL};
	const char *daemon[] = {"run", "--config", path, NULL};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char var[256], got[256] = "", e_check[65536];
		const char *env[] = {var, NULL};
		struct config *c = NULL;
		struct sc_err e = {0};
		const struct target_spec *t[8];
		size_t n = 0;

		snprintf(var, sizeof(var), "SURECRON_ALERT_TARGETS=%s",
			 rows[i].value);
		int rc_check = run(NULL, env, check);
		snprintf(e_check, sizeof(e_check), "%s", err);
		setenv("SURECRON_ALERT_TARGETS", rows[i].value, 1);
		int rc_load = config_load(path, &c, &e);
		if (rc_load == 0) {
			/* With the daemon's environment, which stays set. */
			alert_targets(c, t, 8, &n);
			for (size_t j = 0; j < n; j++)
				snprintf(got + strlen(got),
					 sizeof(got) - strlen(got), "%s%s",
					 j ? " " : "", t[j]->name);
			config_free(c);
		}
		unsetenv("SURECRON_ALERT_TARGETS");
		if (rows[i].want) {
			if (rc_check != 0 || rc_load != 0)
				fail_msg("row %zu: check %d (%s), load %d (%s)",
					 i, rc_check, e_check, rc_load, e.msg);
			if (strcmp(got, rows[i].want) != 0)
				fail_msg("row %zu: targets '%s', want '%s'", i,
					 got, rows[i].want);
			continue;
		}
		/* Refused by check, by the load the daemon makes, and by
		 * the daemon's start, with the same words. */
		if (rc_check == 0 || rc_load == 0 || n != 0)
			fail_msg("row %zu: check %d, load %d, %zu targets", i,
				 rc_check, rc_load, n);
		if (!strstr(e_check, rows[i].msg) || !strstr(e.msg, rows[i].msg))
			fail_msg("row %zu: check '%s', load '%s', want '%s'", i,
				 e_check, e.msg, rows[i].msg);
		int rc_run = run(NULL, env, daemon);
		if (rc_run == 0 || !strstr(err, rows[i].msg))
			fail_msg("row %zu: run %d '%s'", i, rc_run, err);
		/* Never the raw escape on a terminal. */
		assert_null(strchr(e_check, '\x1b'));
	}
}

/* Issue 42: check --store opens the store, never makes one (exit 1
 * while there is none), and on SQLite says there is one clock. */
static void issue42_check_store_sqlite(void **state)
{
	char url[600];
	struct store *st = NULL;
	const char *path = write_file(
		"s.yaml", "store: sqlite:./s.db\n"
		"alerts: {targets: [out]}\n"
		"targets: {out: {kind: file, path: ./o.jsonl}}\n"
		"schedules:\n  a: {cron: \"* * * * *\", targets: [out],"
		" tasks: [{name: t, command: [/bin/true]}]}\n");
	const char *args[] = {"check", "--store", path, NULL};

	assert_int_equal(run(tmp, NULL, args), 1);
	assert_non_null(strstr(err, "s.yaml: store: "));
	assert_null(strstr(out, "ok: "));
	snprintf(url, sizeof(url), "sqlite:%s/s.db", tmp);
	assert_int_equal(store_open(url, sc_clock_real(), &st, NULL), 0);
	store_close(st);
	assert_int_equal(run(tmp, NULL, args), 0);
	assert_non_null(strstr(out, "ok (one clock: this host's)\n"));
	assert_non_null(strstr(out, "ok: 1 schedule, 1 target\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(example_is_clean, setup,
						teardown),
		cmocka_unit_test_setup_teardown(team_example_needs_its_webhook,
						setup, teardown),
		cmocka_unit_test_setup_teardown(bad_config_is_located, setup,
						teardown),
		cmocka_unit_test_setup_teardown(override_is_checked, setup,
						teardown),
		cmocka_unit_test_setup_teardown(usage_and_unreadable, setup,
						teardown),
		cmocka_unit_test_setup_teardown(url_rule_as_the_run_applies_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue44_untrusted_or_fifo_fragment, setup, teardown),
		cmocka_unit_test_setup_teardown(issue42_check_store_sqlite,
						setup, teardown),
		cmocka_unit_test_setup_teardown(issue42_target_timeout_near_lease,
						setup, teardown),
		cmocka_unit_test_setup_teardown(issue13_alert_warnings, setup,
						teardown),
		cmocka_unit_test_setup_teardown(issue43_alert_env_one_rule,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
