/*
 * test_config.c - the config loader: every key into its field, defaults,
 * durations, environment overrides, path resolution, the corpus of
 * malformed configs (tests/fixtures/config/bad, one expected error each),
 * robustness against truncated and mangled input, and config_check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "testutil.h"

static char tmp[256];

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

/* Writes text to tmp/name (creating sub-folders) and returns the path in a
 * static buffer. */
static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	char cmd[600];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	if (strchr(name, '/')) {
		snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"",
			 path);
		assert_int_equal(system(cmd), 0);
	}
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static struct config *load_ok(const char *path)
{
	struct config_problems probs = {0};
	struct config *c = NULL;
	char line[1024];

	int rc = config_parse(path, &c, &probs);
	for (size_t i = 0; i < probs.n; i++)
		fprintf(stderr, "unexpected: %s\n",
			config_problem_format(&probs, i, line, sizeof(line)));
	assert_int_equal(rc, 0);
	assert_int_equal(probs.n, 0);
	assert_non_null(c);
	config_problems_dispose(&probs);
	return c;
}

static const char full_yaml[] =
	"store: sqlite:./state/sc.db\n"
	"worker: {concurrency: 3, lease: 2m, grace: 45s, "
	"clock_tolerance: 1500ms}\n"
	"targets:\n"
	"  chat: {kind: slack, url_env: CHAT_URL, on_ambiguous: hold,\n"
	"         timeout: 20s, connect_timeout: 3s}\n"
	"  hook:\n"
	"    kind: webhook\n"
	"    url_env: HOOK_URL\n"
	"    secret_env: HOOK_SECRET\n"
	"    signature_header: X-Sig\n"
	"  archive: {kind: file, path: out/deliveries.jsonl}\n"
	"  pipe: {kind: command, command: [./bin/receive, --json], "
	"timeout: 5s}\n"
	"alerts: {targets: [chat, hook]}\n"
	"auth:\n"
	"  broker: {kind: oauth2, token_url: \"https://auth.example.com/t\",\n"
	"           client_id: my-app, client_secret_env: BROKER_SECRET,\n"
	"           scope: quotes, client_auth: body, reset_header: "
	"X-RateLimit-Reset}\n"
	"  model: {kind: bearer, token_env: MODEL_KEY}\n"
	"schedules:\n"
	"  weekly-summary:\n"
	"    cron: \"0 17 * * 5\"\n"
	"    tz: Asia/Seoul\n"
	"    catchup: all\n"
	"    schedule_env: WEEKLY_CRON\n"
	"    targets: [chat, archive]\n"
	"    retry: {attempts: 4, backoff: fixed, delay: 30m}\n"
	"    tasks:\n"
	"      - name: summary\n"
	"        command: [\"./tasks/summary.sh\", \"--week\"]\n"
	"        cwd: work\n"
	"        env: {LANG: C.UTF-8, EMPTY: \"\"}\n"
	"        timeout: 90s\n"
	"        grace: 1500ms\n"
	"        max_output: 64KiB\n"
	"      - {name: sh, shell: \"echo hi | tr a-z A-Z\"}\n"
	"      - name: quotes\n"
	"        kind: http\n"
	"        http:\n"
	"          method: POST\n"
	"          url: \"https://api.example.com/q?x=1\"\n"
	"          headers: {Accept: application/json, X-Team: core}\n"
	"          body: '{\"q\": 1}'\n"
	"          auth: broker\n"
	"          expect_status: 201\n"
	"  daily:\n"
	"    cron: \"30 8 * * *\"\n"
	"    tasks: [{name: bare, command: [true]}]\n";

static void every_key_parsed(void **state)
{
	const char *path = write_file("cfg/surecron.yaml", full_yaml);
	unsetenv("WEEKLY_CRON");
	unsetenv("SURECRON_SCHEDULE_WEEKLY_SUMMARY");
	struct config *c = load_ok(path);
	char dir[PATH_MAX], want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "%s/cfg", tmp);
	assert_non_null(realpath(want, dir));

	assert_string_equal(c->dir, dir);
	snprintf(want, sizeof(want), "sqlite:%s/state/sc.db", dir);
	assert_string_equal(c->store_url, want);
	assert_int_equal(c->concurrency, 3);
	assert_int_equal(c->lease_ms, 120000);
	assert_int_equal(c->grace_ms, 45000);
	assert_int_equal(c->clock_tolerance_ms, 1500);

	assert_int_equal(c->n_targets, 4);
	const struct target_spec *t = config_target(c, "chat");
	assert_non_null(t);
	assert_int_equal(t->kind, TARGET_SLACK);
	assert_string_equal(t->url_env, "CHAT_URL");
	assert_int_equal(t->on_ambiguous, AMBIGUOUS_HOLD);
	assert_int_equal(t->timeout_ms, 20000);
	assert_int_equal(t->connect_timeout_ms, 3000);
	t = config_target(c, "hook");
	assert_int_equal(t->kind, TARGET_WEBHOOK);
	assert_string_equal(t->url_env, "HOOK_URL");
	assert_string_equal(t->secret_env, "HOOK_SECRET");
	assert_string_equal(t->signature_header, "X-Sig");
	assert_int_equal(t->on_ambiguous, AMBIGUOUS_RESEND);
	t = config_target(c, "archive");
	assert_int_equal(t->kind, TARGET_FILE);
	snprintf(want, sizeof(want), "%s/out/deliveries.jsonl", dir);
	assert_string_equal(t->path, want);
	t = config_target(c, "pipe");
	assert_int_equal(t->kind, TARGET_COMMAND);
	snprintf(want, sizeof(want), "%s/bin/receive", dir);
	assert_string_equal(t->argv[0], want);
	assert_string_equal(t->argv[1], "--json");
	assert_null(t->argv[2]);
	assert_int_equal(t->timeout_ms, 5000);
	assert_null(config_target(c, "nope"));

	assert_int_equal(c->n_alert_targets, 2);
	assert_string_equal(c->alert_targets[0], "chat");
	assert_string_equal(c->alert_targets[1], "hook");
	assert_null(c->alert_targets[2]);

	assert_int_equal(c->n_auths, 2);
	const struct auth_spec *a = config_auth(c, "broker");
	assert_int_equal(a->kind, AUTH_OAUTH2);
	assert_string_equal(a->token_url, "https://auth.example.com/t");
	assert_string_equal(a->client_id, "my-app");
	assert_string_equal(a->client_secret_env, "BROKER_SECRET");
	assert_string_equal(a->scope, "quotes");
	assert_true(a->client_auth_body);
	assert_string_equal(a->reset_header, "X-RateLimit-Reset");
	a = config_auth(c, "model");
	assert_int_equal(a->kind, AUTH_BEARER);
	assert_string_equal(a->token_env, "MODEL_KEY");
	assert_null(a->client_secret_env);

	assert_int_equal(c->n_schedules, 2);
	const struct schedule_spec *s = config_schedule(c, "weekly-summary");
	assert_non_null(s);
	assert_string_equal(s->cron, "0 17 * * 5");
	assert_string_equal(spec_cron_config(s), "0 17 * * 5");
	assert_null(spec_x(s)->override_var);
	assert_string_equal(spec_x(s)->schedule_env, "WEEKLY_CRON");
	assert_string_equal(s->tz, "Asia/Seoul");
	assert_int_equal(s->catchup, CATCHUP_ALL);
	assert_int_equal(s->n_targets, 2);
	assert_string_equal(s->targets[0], "chat");
	assert_string_equal(s->targets[1], "archive");
	assert_null(s->targets[2]);
	assert_true(s->has_retry);
	assert_int_equal(spec_policy(s)->attempts, 4);
	assert_int_equal(spec_policy(s)->backoff, SC_BACKOFF_FIXED);
	assert_int_equal(spec_policy(s)->delay_ms, 30 * 60000);

	assert_int_equal(s->n_tasks, 3);
	const struct task_spec *k = &s->tasks[0];
	assert_string_equal(k->name, "summary");
	assert_int_equal(k->kind, TASK_COMMAND);
	snprintf(want, sizeof(want), "%s/tasks/summary.sh", dir);
	assert_string_equal(k->argv[0], want);
	assert_string_equal(k->argv[1], "--week");
	assert_null(k->argv[2]);
	assert_null(k->shell);
	snprintf(want, sizeof(want), "%s/work", dir);
	assert_string_equal(k->cwd, want);
	assert_string_equal(k->env[0], "LANG=C.UTF-8");
	assert_string_equal(k->env[1], "EMPTY=");
	assert_null(k->env[2]);
	assert_int_equal(k->timeout_ms, 90000);
	assert_int_equal(k->grace_ms, 1500);
	assert_int_equal(k->max_output, 64 * 1024);
	k = &s->tasks[1];
	assert_string_equal(k->name, "sh");
	assert_null(k->argv);
	assert_string_equal(k->shell, "echo hi | tr a-z A-Z");
	k = &s->tasks[2];
	assert_int_equal(k->kind, TASK_HTTP);
	assert_string_equal(k->method, "POST");
	assert_string_equal(k->url, "https://api.example.com/q?x=1");
	assert_string_equal(k->headers[0], "Accept: application/json");
	assert_string_equal(k->headers[1], "X-Team: core");
	assert_null(k->headers[2]);
	assert_string_equal(k->body, "{\"q\": 1}");
	assert_string_equal(k->auth, "broker");
	assert_int_equal(k->expect_status, 201);

	s = config_schedule(c, "daily");
	assert_string_equal(s->tasks[0].argv[0], "true"); /* left for PATH */
	assert_null(config_schedule(c, "weekly"));

	int line, col;
	assert_true(config_locate(c, "schedules.weekly-summary.cron", &line,
				  &col));
	assert_int_equal(line, 21);
	assert_int_equal(col, 11);
	assert_false(config_locate(c, "schedules.nope", &line, &col));
	config_free(c);
}

static void defaults_apply(void **state)
{
	const char *path = write_file(
		"surecron.yaml",
		"targets:\n"
		"  hook: {kind: webhook, url_env: U}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"* * * * *\"\n"
		"    tasks:\n"
		"      - {name: a, command: [/bin/true]}\n"
		"      - {name: b, http: {url: \"https://x.example/\"}}\n");
	unsetenv("SURECRON_SCHEDULE_S");
	struct config *c = load_ok(path);
	char dir[PATH_MAX], want[PATH_MAX + 64];
	assert_non_null(realpath(tmp, dir));
	snprintf(want, sizeof(want), "sqlite:%s/surecron.db", dir);
	assert_string_equal(c->store_url, want);
	assert_int_equal(c->concurrency, 1);
	assert_int_equal(c->lease_ms, 5 * 60000);
	assert_int_equal(c->grace_ms, 30000);
	assert_int_equal(c->clock_tolerance_ms, CONFIG_CLOCK_TOLERANCE_MS);
	assert_int_equal(c->n_alert_targets, 0);
	assert_non_null(c->alert_targets);
	assert_null(c->alert_targets[0]);
	assert_int_equal(c->n_auths, 0);

	const struct target_spec *t = config_target(c, "hook");
	assert_string_equal(t->signature_header, "X-Surecron-Signature");
	assert_null(t->secret_env);
	assert_int_equal(t->timeout_ms, 30000);
	assert_int_equal(t->connect_timeout_ms, 10000);
	assert_int_equal(t->on_ambiguous, AMBIGUOUS_RESEND);

	const struct schedule_spec *s = &c->schedules[0];
	assert_null(s->tz);
	assert_null(spec_x(s)->schedule_env);
	assert_int_equal(s->catchup, CATCHUP_LATEST);
	assert_false(s->has_retry);
	assert_int_equal(s->n_targets, 0);
	assert_non_null(s->targets);
	assert_null(s->targets[0]);
	const struct task_spec *k = &s->tasks[0];
	assert_int_equal(k->timeout_ms, 10 * 60000);
	assert_int_equal(k->grace_ms, 5000);
	assert_int_equal(k->max_output, 1024 * 1024);
	assert_null(k->cwd);
	assert_null(k->env);
	k = &s->tasks[1];
	assert_int_equal(k->kind, TASK_HTTP);
	assert_int_equal(k->timeout_ms, 60000); /* a request, not a program */
	assert_string_equal(k->method, "GET");
	assert_int_equal(k->expect_status, 0);
	assert_null(k->auth);
	assert_null(k->headers);
	assert_null(k->body);
	config_free(c);
}

/* Issue 14: heartbeat (top level and per schedule), sla, renamed_from,
 * and the sla reasons of alerts.on; the defaults when absent. */
static void issue14_heartbeat_sla_renamed_keys(void **state)
{
	const char *path = write_file(
		"h.yaml",
		"heartbeat: {url_env: HC_DAEMON, every: 30s}\n"
		"alerts: {on: [late, overrun, stale]}\n"
		"schedules:\n"
		"  weekly:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    heartbeat: {url_env: HC_WEEKLY}\n"
		"    sla: {start_within: 5m, max_runtime: 45m, "
		"success_within: 8d}\n"
		"    renamed_from: [weekly-report, friday]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  daily:\n"
		"    cron: \"0 3 * * *\"\n"
		"    sla: {max_runtime: 1h}\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  plain:\n"
		"    cron: \"0 4 * * *\"\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	struct config *c = load_ok(path);

	assert_string_equal(c->heartbeat.url_env, "HC_DAEMON");
	assert_int_equal(c->heartbeat.every_ms, 30000);
	assert_int_equal(c->alert_on, CONFIG_ALERT_ON_LATE |
					      CONFIG_ALERT_ON_OVERRUN |
					      CONFIG_ALERT_ON_STALE);
	const struct schedule_spec *w = config_schedule(c, "weekly");
	assert_string_equal(spec_x(w)->heartbeat.url_env, "HC_WEEKLY");
	assert_int_equal(spec_x(w)->heartbeat.every_ms, 0);
	assert_true(spec_x(w)->has_sla);
	assert_int_equal(spec_x(w)->sla.start_within_ms, 5 * 60000);
	assert_int_equal(spec_x(w)->sla.max_runtime_ms, 45 * 60000);
	assert_int_equal(spec_x(w)->sla.success_within_ms, 8LL * 86400000);
	assert_int_equal(w->n_renamed_from, 2);
	assert_string_equal(w->renamed_from[0], "weekly-report");
	assert_string_equal(w->renamed_from[1], "friday");
	assert_null(w->renamed_from[2]);
	const struct schedule_spec *d = config_schedule(c, "daily");
	assert_true(spec_x(d)->has_sla);
	assert_int_equal(spec_x(d)->sla.start_within_ms, 0);
	assert_int_equal(spec_x(d)->sla.max_runtime_ms, 3600000);
	assert_int_equal(spec_x(d)->sla.success_within_ms, 0);
	const struct schedule_spec *p = config_schedule(c, "plain");
	assert_false(spec_x(p)->has_sla);
	assert_null(spec_x(p)->heartbeat.url_env);
	assert_non_null(p->renamed_from);
	assert_int_equal(p->n_renamed_from, 0);
	config_free(c);

	/* A top-level heartbeat without every pings each minute. */
	path = write_file("h2.yaml",
			  "heartbeat: {url_env: HC_DAEMON}\n"
			  "schedules:\n"
			  "  s: {cron: \"0 3 * * *\", tasks: [{name: a, "
			  "command: [/bin/true]}]}\n");
	c = load_ok(path);
	assert_int_equal(c->heartbeat.every_ms, 60000);
	config_free(c);
}

/* Issue 43: every value of `overlap:` into its enum; an unknown one is a
 * problem naming the key and the values it takes. */
static void issue43_overlap_values(void **state)
{
	static const struct {
		const char *word;
		enum overlap want;
	} ok[] = {{"queue", OVERLAP_QUEUE}, {"skip", OVERLAP_SKIP},
		  {"allow", OVERLAP_ALLOW}, {"buffer_one", OVERLAP_BUFFER_ONE},
		  {"replace", OVERLAP_REPLACE}};
	char text[512];
	(void)state;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text),
			 "schedules:\n"
			 "  s: {cron: \"0 3 * * *\", overlap: %s, tasks: "
			 "[{name: a, command: [/bin/true]}]}\n", ok[i].word);
		struct config *c = load_ok(write_file("ov.yaml", text));
		assert_int_equal(config_schedule(c, "s")->overlap, ok[i].want);
		config_free(c);
	}
	const char *path = write_file(
		"ov-bad.yaml", "schedules:\n"
			       "  s: {cron: \"0 3 * * *\", overlap: buffer, "
			       "tasks: [{name: a, command: [/bin/true]}]}\n");
	struct config *c = NULL;
	struct sc_err err = {0};
	assert_int_equal(config_load(path, &c, &err), SC_ECONFIG);
	assert_null(c);
	assert_non_null(strstr(err.msg, "overlap"));
	assert_non_null(strstr(err.msg, "buffer_one"));
}

/* Issue 13: alerts.on, alerts.realert, notices (schedule and target) and
 * expect, each into its field; and the defaults when absent. */
static void issue13_alert_notice_expect_keys(void **state)
{
	const char *path = write_file(
		"n.yaml",
		"targets:\n"
		"  chat: {kind: slack, url_env: U, notices: none}\n"
		"  pager: {kind: webhook, url_env: P, notices: every}\n"
		"  archive: {kind: file, path: a.jsonl, notices: final}\n"
		"  pipe: {kind: command, command: [/bin/cat]}\n"
		"alerts: {targets: [pager], on: [missed], realert: 4h}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"0 3 * * *\"\n"
		"    notices: final\n"
		"    expect: {min_previews: 2, min_summary_chars: 40}\n"
		"    targets: [chat, pipe]\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  t:\n"
		"    cron: \"0 4 * * *\"\n"
		"    notices: none\n"
		"    expect: {min_summary_chars: 0}\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n"
		"  u:\n"
		"    cron: \"0 5 * * *\"\n"
		"    tasks: [{name: a, command: [/bin/true]}]\n");
	unsetenv("SURECRON_SCHEDULE_S");
	unsetenv("SURECRON_SCHEDULE_T");
	unsetenv("SURECRON_SCHEDULE_U");
	struct config *c = load_ok(path);

	assert_int_equal(c->alert_on, CONFIG_ALERT_ON_MISSED);
	assert_int_equal(c->alert_realert_ms, INT64_C(4) * 3600000);
	const struct target_spec *t = config_target(c, "chat");
	assert_true(t->has_notices);
	assert_int_equal(t->notices, NOTICES_NONE);
	t = config_target(c, "pager");
	assert_true(t->has_notices);
	assert_int_equal(t->notices, NOTICES_EVERY);
	t = config_target(c, "archive");
	assert_true(t->has_notices);
	assert_int_equal(t->notices, NOTICES_FINAL);
	t = config_target(c, "pipe");
	assert_false(t->has_notices);

	const struct schedule_spec *s = config_schedule(c, "s");
	assert_int_equal(spec_x(s)->notices, NOTICES_FINAL);
	assert_int_equal(spec_x(s)->expect_min_previews, 2);
	assert_int_equal(spec_x(s)->expect_min_summary_chars, 40);
	s = config_schedule(c, "t");
	assert_int_equal(spec_x(s)->notices, NOTICES_NONE);
	assert_int_equal(spec_x(s)->expect_min_previews, 0);
	assert_int_equal(spec_x(s)->expect_min_summary_chars, 0);
	/* Defaults: notices every, no expectation. */
	s = config_schedule(c, "u");
	assert_int_equal(spec_x(s)->notices, NOTICES_EVERY);
	assert_int_equal(spec_x(s)->expect_min_previews, 0);
	assert_int_equal(spec_x(s)->expect_min_summary_chars, 0);
	config_free(c);

	/* Without `alerts:` every reason alerts (the sla ones only where
	 * `sla:` is set) and nothing repeats; `on: []` is allowed and raises
	 * none. */
	path = write_file("d.yaml",
			  "schedules:\n"
			  "  s: {cron: \"0 3 * * *\", tasks: [{name: a, "
			  "command: [/bin/true]}]}\n");
	c = load_ok(path);
	assert_int_equal(c->alert_on,
			 CONFIG_ALERT_ON_LOST | CONFIG_ALERT_ON_MISSED |
				 CONFIG_ALERT_ON_LATE | CONFIG_ALERT_ON_OVERRUN |
				 CONFIG_ALERT_ON_STALE);
	assert_int_equal(c->alert_realert_ms, 0);
	config_free(c);
	path = write_file("e.yaml",
			  "alerts: {on: []}\n"
			  "schedules:\n"
			  "  s: {cron: \"0 3 * * *\", tasks: [{name: a, "
			  "command: [/bin/true]}]}\n");
	c = load_ok(path);
	assert_int_equal(c->alert_on, 0);
	config_free(c);
	path = write_file("f.yaml",
			  "alerts: {on: [lost, missed, lost], targets: []}\n"
			  "schedules:\n"
			  "  s: {cron: \"0 3 * * *\", tasks: [{name: a, "
			  "command: [/bin/true]}]}\n");
	c = load_ok(path);
	assert_int_equal(c->alert_on,
			 CONFIG_ALERT_ON_LOST | CONFIG_ALERT_ON_MISSED);
	config_free(c);
}

static void durations_table(void **state)
{
	static const struct {
		const char *text;
		int64_t ms; /* -1: refused */
	} rows[] = {
		{"1500ms", 1500},     {"90s", 90000},     {"30m", 1800000},
		{"2h", 7200000},      {"1d", 86400000},   {"1h30m", 5400000},
		{"1", -1},            {"10 m", -1},       {"-5s", -1},
		{"2w", -1},           {"0s", -1},         {"2d", -1},
		{"\"45s\"", 45000},   {"[1s]", -1},
	};
	char text[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* Task timeouts range from 1 ms to 1 day. */
		snprintf(text, sizeof(text),
			 "schedules:\n  s:\n    cron: \"* * * * *\"\n"
			 "    tasks: [{name: a, command: [x], timeout: %s}]\n",
			 rows[i].text);
		const char *path = write_file("d.yaml", text);
		struct config_problems probs = {0};
		struct config *c = NULL;
		int rc = config_parse(path, &c, &probs);
		if (rows[i].ms < 0) {
			assert_int_equal(rc, SC_ECONFIG);
			assert_int_equal(probs.items[0].line, 4);
			assert_non_null(strstr(probs.items[0].msg,
					       "tasks[0].timeout"));
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(c->schedules[0].tasks[0].timeout_ms,
					 rows[i].ms);
		}
		config_free(c);
		config_problems_dispose(&probs);
	}
}

static void env_override_forms(void **state)
{
	const char *path = write_file(
		"surecron.yaml",
		"schedules:\n"
		"  weekly-summary:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tasks: [{name: a, command: [x]}]\n"
		"  named:\n"
		"    cron: \"0 9 * * 1\"\n"
		"    schedule_env: NAMED_CRON\n"
		"    tasks: [{name: a, command: [x]}]\n"
		"  envonly:\n"
		"    schedule_env: ENVONLY_CRON\n"
		"    tasks: [{name: a, command: [x]}]\n");
	char buf[64];

	assert_int_equal(config_env_default_var("weekly-summary", buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "SURECRON_SCHEDULE_WEEKLY_SUMMARY");
	assert_int_equal(config_env_default_var("a.b_c-9Z", buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "SURECRON_SCHEDULE_A_B_C_9Z");
	assert_int_equal(config_env_default_var("abc", buf, 10), SC_ETOOBIG);

	/* 1. The default variable. */
	setenv("SURECRON_SCHEDULE_WEEKLY_SUMMARY", "*/3 * * * *", 1);
	unsetenv("NAMED_CRON");
	unsetenv("SURECRON_SCHEDULE_NAMED");
	setenv("ENVONLY_CRON", "0 0 1 * *", 1);
	struct config *c = load_ok(path);
	const struct schedule_spec *s = config_schedule(c, "weekly-summary");
	assert_string_equal(s->cron, "*/3 * * * *");
	assert_string_equal(spec_cron_config(s), "0 17 * * 5");
	assert_string_equal(spec_x(s)->override_var,
			    "SURECRON_SCHEDULE_WEEKLY_SUMMARY");
	s = config_schedule(c, "named");
	assert_string_equal(s->cron, "0 9 * * 1");
	assert_null(spec_x(s)->override_var);
	s = config_schedule(c, "envonly");
	assert_string_equal(s->cron, "0 0 1 * *");
	assert_null(spec_cron_config(s));
	assert_string_equal(spec_x(s)->override_var, "ENVONLY_CRON");
	config_free(c);

	/* 2. schedule_env wins over the default variable; an empty value
	 * counts as unset. */
	setenv("SURECRON_SCHEDULE_NAMED", "1 1 * * *", 1);
	setenv("NAMED_CRON", "2 2 * * *", 1);
	setenv("SURECRON_SCHEDULE_WEEKLY_SUMMARY", "", 1);
	c = load_ok(path);
	s = config_schedule(c, "named");
	assert_string_equal(s->cron, "2 2 * * *");
	assert_string_equal(spec_x(s)->override_var, "NAMED_CRON");
	assert_string_equal(spec_cron_config(s), "0 9 * * 1");
	s = config_schedule(c, "weekly-summary");
	assert_string_equal(s->cron, "0 17 * * 5");
	assert_null(spec_x(s)->override_var);
	config_free(c);

	unsetenv("NAMED_CRON");
	c = load_ok(path);
	s = config_schedule(c, "named");
	assert_string_equal(s->cron, "1 1 * * *");
	assert_string_equal(spec_x(s)->override_var, "SURECRON_SCHEDULE_NAMED");
	config_free(c);

	/* 3. No cron in the file and no variable: a located error. */
	unsetenv("ENVONLY_CRON");
	struct sc_err err = {0};
	c = NULL;
	assert_int_equal(config_load(path, &c, &err), SC_ECONFIG);
	assert_null(c);
	assert_non_null(strstr(err.msg, ":9:3: schedules.envonly: missing "
				      "required key \"cron\" (or set "
				      "ENVONLY_CRON or "
				      "SURECRON_SCHEDULE_ENVONLY)"));
	unsetenv("SURECRON_SCHEDULE_NAMED");
	unsetenv("SURECRON_SCHEDULE_WEEKLY_SUMMARY");
}

/* The final expression decides the retry class; `retry:` wins over it. */
static void override_moves_retry_class(void **state)
{
	const char *path = write_file(
		"r.yaml",
		"schedules:\n"
		"  weekly:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tasks: [{name: a, command: [x]}]\n"
		"  pinned:\n"
		"    cron: \"*/3 * * * *\"\n"
		"    retry: {attempts: 5, delay: 10s}\n"
		"    tasks: [{name: a, command: [x]}]\n");
	const struct schedule_spec *s;

	unsetenv("SURECRON_SCHEDULE_WEEKLY");
	unsetenv("SURECRON_SCHEDULE_PINNED");
	struct config *c = load_ok(path);
	s = config_schedule(c, "weekly");
	assert_int_equal(s->cls, SC_FREQ_LOW);
	assert_int_equal(spec_policy(s)->attempts, 4);
	assert_int_equal(spec_policy(s)->delay_ms, 30 * 60000);
	s = config_schedule(c, "pinned");
	assert_int_equal(s->cls, SC_FREQ_DEFAULT);
	assert_int_equal(spec_policy(s)->attempts, 5);
	assert_int_equal(spec_policy(s)->backoff, SC_BACKOFF_EXPONENTIAL);
	assert_int_equal(spec_policy(s)->delay_ms, 10000);
	assert_ptr_equal(config_schedule(c, "weekly")->zone, sc_zone_local());
	config_free(c);

	/* Weekly moved to every 3 minutes: default class, 2 attempts. */
	setenv("SURECRON_SCHEDULE_WEEKLY", "*/3 * * * *", 1);
	/* Pinned moved to a weekly slot: its own policy still wins. */
	setenv("SURECRON_SCHEDULE_PINNED", "0 0 17 * * 5", 1);
	c = load_ok(path);
	s = config_schedule(c, "weekly");
	/* Resolved from the override, not from the file's expression. */
	struct sc_cron want;
	assert_int_equal(sc_cron_parse("*/3 * * * *", &want, NULL), 0);
	assert_memory_equal(s->expr, &want, sizeof(want));
	assert_int_equal(s->cls, SC_FREQ_DEFAULT);
	assert_int_equal(spec_policy(s)->attempts, 2);
	assert_int_equal(spec_policy(s)->delay_ms, 60000);
	s = config_schedule(c, "pinned");
	assert_int_equal(s->cls, SC_FREQ_LOW);
	assert_int_equal(spec_policy(s)->attempts, 5);
	config_free(c);
	unsetenv("SURECRON_SCHEDULE_WEEKLY");
	unsetenv("SURECRON_SCHEDULE_PINNED");
}

static void relative_store_path(void **state)
{
	char dir[PATH_MAX], want[PATH_MAX + 64], cwd[PATH_MAX];
	static const struct {
		const char *store, *suffix; /* suffix after "sqlite:" + dir */
	} rows[] = {
		{"sqlite:./data/x.db", "/data/x.db"},
		{"sqlite:x.db", "/x.db"},
		{"sqlite:./././y.db", "/y.db"},
		{"sqlite:/var/lib/surecron/z.db", NULL},
		{"postgres://db.internal/surecron", NULL},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[256];
		snprintf(text, sizeof(text),
			 "store: %s\nschedules: {s: {cron: \"* * * * *\", "
			 "tasks: [{name: a, command: [x]}]}}\n",
			 rows[i].store);
		write_file("etc/sc/cfg.yaml", text);
		/* Load through a relative path from another folder: the store
		 * must follow the file, not the working directory. */
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(tmp), 0);
		struct config *c = load_ok("etc/sc/cfg.yaml");
		assert_int_equal(chdir(cwd), 0);
		snprintf(want, sizeof(want), "%s/etc/sc", tmp);
		assert_non_null(realpath(want, dir));
		if (rows[i].suffix)
			snprintf(want, sizeof(want), "sqlite:%s%s", dir,
				 rows[i].suffix);
		else
			snprintf(want, sizeof(want), "%s", rows[i].store);
		assert_string_equal(c->store_url, want);
		assert_string_equal(c->path, "etc/sc/cfg.yaml");
		config_free(c);
	}
}

/* The folder of this source file's fixtures. */
static const char *fixtures_dir(void)
{
	static char dir[PATH_MAX];
	const char *src = getenv("SURECRON_SRC");

	if (src)
		snprintf(dir, sizeof(dir), "%s/tests/fixtures/config/bad", src);
	else
		snprintf(dir, sizeof(dir), "tests/fixtures/config/bad");
	return dir;
}

/* Checks one "L:C: text" expectation against a formatted problem
 * "FILE:L:C: msg". */
static bool matches(const char *formatted, const char *file, const char *exp)
{
	size_t fl = strlen(file);
	if (strncmp(formatted, file, fl) != 0 || formatted[fl] != ':')
		return false;
	const char *rest = formatted + fl + 1;
	const char *sp = strstr(exp, ": ");
	if (!sp)
		return false;
	size_t loclen = (size_t)(sp - exp) + 2; /* "L:C: " */
	if (strncmp(rest, exp, loclen) != 0)
		return false;
	return strstr(rest + loclen, sp + 2) != NULL;
}

static void bad_corpus(void **state)
{
	const char *dir = fixtures_dir();
	DIR *d = opendir(dir);
	struct dirent *de;
	int n_files = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
			continue;
		char path[PATH_MAX + 300], text[4096], expect[1024], line[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = '\0';
		if (strncmp(text, "# expect: ", 10) != 0)
			fail_msg("%s has no '# expect:' first line", path);
		size_t el = strcspn(text + 10, "\n");
		snprintf(expect, sizeof(expect), "%.*s", (int)el, text + 10);

		struct config_problems probs = {0};
		struct config *c = NULL;
		int rc = config_parse(path, &c, &probs);
		if (rc != SC_ECONFIG || probs.n == 0)
			fail_msg("%s: expected SC_ECONFIG with a problem, got "
				 "%d", path, rc);
		assert_null(c);
		config_problem_format(&probs, 0, line, sizeof(line));
		if (!matches(line, path, expect))
			fail_msg("%s:\n  expected  %s\n  got       %s", path,
				 expect, line);
		/* Extra expectations, anywhere in the list. */
		for (char *p = strstr(text, "\n# also: "); p;
		     p = strstr(p + 1, "\n# also: ")) {
			size_t al = strcspn(p + 9, "\n");
			snprintf(expect, sizeof(expect), "%.*s", (int)al,
				 p + 9);
			bool found = false;
			for (size_t i = 0; i < probs.n && !found; i++)
				found = matches(config_problem_format(
							&probs, i, line,
							sizeof(line)),
						path, expect);
			if (!found)
				fail_msg("%s: no problem matches '%s'", path,
					 expect);
		}
		/* config_load reports the same first problem. */
		struct sc_err err = {0};
		assert_int_equal(config_load(path, &c, &err), SC_ECONFIG);
		config_problem_format(&probs, 0, line, sizeof(line));
		assert_string_equal(err.msg, line);
		config_problems_dispose(&probs);
		n_files++;
	}
	closedir(d);
	assert_true(n_files >= 30);
}

/* Issue 44: NEL, LS and PS are refused outside quoted scalars (the bad
 * corpus has them in a comment, a plain value and a last comment), and
 * still load inside single and double quotes, where YAML folds them as it
 * folds any line break of a quoted scalar. */
static void issue44_unicode_breaks_only_in_quotes(void **state)
{
	(void)state;
	const char *path = write_file(
		"q.yaml", "schedules:\n  a:\n    cron: \"0 * * * *\"\n"
		"    tasks:\n      - {name: t, shell: \"echo a\xe2\x80\xa8" "b\"}\n"
		"      - {name: u, shell: 'echo c\xc2\x85" "d'}\n"
		"      - {name: v, shell: \"echo \\L\\P\\N\"}\n");
	struct config_problems probs = {0};
	struct config *c = NULL;
	int rc = config_parse(path, &c, &probs);
	if (rc != 0)
		fail_msg("%d: %s", rc, probs.n ? probs.items[0].msg : "");
	assert_int_equal(c->n_schedules, 1);
	/* The escapes are the way to put one in a value. */
	assert_string_equal(c->schedules[0].tasks[2].shell,
			    "echo \xe2\x80\xa8\xe2\x80\xa9\xc2\x85");
	config_free(c);
	config_problems_dispose(&probs);
}

static void size_and_file_limits(void **state)
{
	char path[512];
	struct config_problems probs = {0};
	struct config *c = NULL;

	/* One byte over the cap: refused before parsing, no crash. */
	snprintf(path, sizeof(path), "%s/huge.yaml", tmp);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs("schedules:\n", f);
	for (long i = 11; i < CONFIG_MAX_BYTES + 1; i++)
		fputc(i % 64 == 0 ? '\n' : '#', f);
	fclose(f);
	assert_int_equal(config_parse(path, &c, &probs), SC_ECONFIG);
	assert_int_equal(probs.items[0].line, 1);
	assert_non_null(strstr(probs.items[0].msg, "too large"));
	config_problems_dispose(&probs);

	/* Missing file, folder. */
	snprintf(path, sizeof(path), "%s/none.yaml", tmp);
	assert_int_equal(config_parse(path, &c, &probs), SC_ENOENT);
	assert_int_equal(probs.items[0].line, 0);
	assert_non_null(strstr(probs.items[0].msg, "cannot open"));
	config_problems_dispose(&probs);
	assert_int_equal(config_parse(tmp, &c, &probs), SC_ECONFIG);
	assert_non_null(strstr(probs.items[0].msg, "not a regular file"));
	config_problems_dispose(&probs);
	assert_null(c);
}

/* A file near the node cap made of one huge mapping (24k keys, half of them
 * duplicate) is refused quickly: duplicate detection is not quadratic and
 * the problem list is capped. */
static void wide_mapping_is_cheap(void **state)
{
	char path[512];
	struct config_problems probs = {0};
	struct config *c = NULL;

	snprintf(path, sizeof(path), "%s/wide.yaml", tmp);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs("worker: {", f);
	for (int i = 0; i < 12000; i++)
		fprintf(f, "%sk%d: 1, k%d: 2", i ? ", " : "", i, i);
	fputs("}\n", f);
	fclose(f);
	int64_t t0 = clock_mono_ms(), c0 = tu_thread_cpu_ms();
	assert_int_equal(config_parse(path, &c, &probs), SC_ECONFIG);
	int64_t took = clock_mono_ms() - t0, cpu = tu_thread_cpu_ms() - c0;
	assert_int_equal(probs.n, CONFIG_MAX_PROBLEMS);
	assert_true(probs.n_dropped > 11000);
	/* A pairwise scan took about 2 s here (release build); sorted, it is
	 * a few tens of ms. The bound is on the CPU the parse used, loose
	 * for ASan: the wall time also holds whatever else a busy CI
	 * machine runs meanwhile. */
	fprintf(stderr, "wide mapping: %lld ms (%lld ms CPU)\n",
		(long long)took, (long long)cpu);
	assert_true(cpu < 1500);
	config_problems_dispose(&probs);
}

/* Every prefix of a valid config and a few thousand single-byte mutations
 * either load or give a located problem; none crashes (ASan in SAN=1). */
static void truncated_and_mangled_input(void **state)
{
	const size_t len = strlen(full_yaml);
	char *text = malloc(len + 1);
	unsigned seed = 12345;
	static const char junk[] = {'\t', '\0', '*', '&', '{', '[', ':', '-',
				    '"', '\'', '#', '\n', ' ', (char)0xC3,
				    (char)0xFF, '!', '|', '>', '%', '@'};

	assert_non_null(text);
	for (size_t cut = 0; cut <= len; cut += 7) {
		memcpy(text, full_yaml, cut);
		text[cut] = '\0';
		const char *path = write_file("t.yaml", text);
		struct config_problems probs = {0};
		struct config *c = NULL;
		int rc = config_parse(path, &c, &probs);
		assert_true(rc == 0 || (rc == SC_ECONFIG && probs.n > 0));
		config_free(c);
		config_problems_dispose(&probs);
	}
	for (int i = 0; i < 600; i++) {
		memcpy(text, full_yaml, len + 1);
		seed = seed * 1103515245u + 12345u;
		size_t pos = (seed >> 8) % len;
		seed = seed * 1103515245u + 12345u;
		text[pos] = junk[(seed >> 8) % sizeof(junk)];
		/* A NUL would end the text early; write the bytes raw. */
		char path[512];
		snprintf(path, sizeof(path), "%s/m.yaml", tmp);
		FILE *f = fopen(path, "wb");
		assert_non_null(f);
		fwrite(text, 1, len, f);
		fclose(f);
		struct config_problems probs = {0};
		struct config *c = NULL;
		int rc = config_parse(path, &c, &probs);
		assert_true(rc == 0 || (rc == SC_ECONFIG && probs.n > 0));
		for (size_t k = 0; k < probs.n; k++)
			assert_non_null(probs.items[k].msg);
		config_free(c);
		config_problems_dispose(&probs);
	}
	free(text);
}

static int count_containing(const struct config_problems *p, const char *s)
{
	int n = 0;
	for (size_t i = 0; i < p->n; i++)
		if (strstr(p->items[i].msg, s))
			n++;
	return n;
}

static void check_environment(void **state)
{
	char text[2048];
	write_file("tasks/ok.sh", "#!/bin/sh\necho ok\n");
	write_file("tasks/noexec.sh", "#!/bin/sh\necho no\n");
	char p[600];
	snprintf(p, sizeof(p), "%s/tasks/ok.sh", tmp);
	assert_int_equal(chmod(p, 0755), 0);
	snprintf(text, sizeof(text),
		 "targets:\n"
		 "  chat: {kind: slack, url_env: SC_TEST_CHAT}\n"
		 "  hook: {kind: webhook, url_env: SC_TEST_HOOK, secret_env: "
		 "SC_TEST_SECRET}\n"
		 "  archive: {kind: file, path: ./nowhere/d.jsonl}\n"
		 "auth:\n"
		 "  b: {kind: bearer, token_env: SC_TEST_TOKEN}\n"
		 "schedules:\n"
		 "  s:\n"
		 "    cron: \"0 17 * * 5\"\n"
		 "    tz: Asia/Seoul\n"
		 "    targets: [chat]\n"
		 "    tasks:\n"
		 "      - {name: ok, command: [./tasks/ok.sh]}\n"
		 "      - {name: noexec, command: [./tasks/noexec.sh]}\n"
		 "      - {name: gone, command: [./tasks/gone.sh]}\n"
		 "      - {name: path, command: [sh, -c, 'true']}\n"
		 "      - {name: nopath, command: [surecron-no-such-tool]}\n"
		 "      - {name: shell, shell: 'true', cwd: ./missing}\n");
	const char *path = write_file("c.yaml", text);
	unsetenv("SC_TEST_CHAT");
	setenv("SC_TEST_HOOK", "", 1);
	setenv("SC_TEST_SECRET", "s3cret", 1);
	unsetenv("SC_TEST_TOKEN");
	unsetenv("SURECRON_SCHEDULE_S");
	unsetenv("SURECRON_SCHEDULE_T");
	struct config *c = load_ok(path);
	struct config_problems probs = {0};
	char line[1024];

	int n = config_check(c, &probs);
	for (size_t i = 0; i < probs.n; i++)
		fprintf(stderr, "  %s\n",
			config_problem_format(&probs, i, line, sizeof(line)));
	assert_int_equal(n, (int)probs.n);
	assert_int_equal(n, 8);
	/* In file order, each at its key. */
	assert_int_equal(probs.items[0].line, 2);
	assert_int_equal(probs.items[0].col, 32);
	assert_string_equal(probs.items[0].msg,
			    "targets.chat.url_env: environment variable "
			    "SC_TEST_CHAT is not set");
	assert_int_equal(probs.items[1].line, 3);
	assert_non_null(strstr(probs.items[1].msg, "SC_TEST_HOOK is empty"));
	assert_int_equal(probs.items[2].line, 4);
	assert_non_null(strstr(probs.items[2].msg, "nowhere does not exist"));
	assert_int_equal(probs.items[3].line, 6);
	assert_non_null(strstr(probs.items[3].msg, "SC_TEST_TOKEN is not set"));
	assert_int_equal(probs.items[4].line, 14);
	assert_non_null(strstr(probs.items[4].msg, "is not executable"));
	assert_int_equal(probs.items[5].line, 15);
	assert_non_null(strstr(probs.items[5].msg, "gone.sh does not exist"));
	assert_int_equal(probs.items[6].line, 17);
	assert_non_null(strstr(probs.items[6].msg, "not found on PATH"));
	assert_int_equal(probs.items[7].line, 18);
	assert_non_null(strstr(probs.items[7].msg, "missing does not exist"));
	assert_int_equal(count_containing(&probs, "s3cret"), 0);
	config_problems_dispose(&probs);

	/* Fix the environment: those problems go away. */
	setenv("SC_TEST_CHAT", "https://hooks.example/x", 1);
	setenv("SC_TEST_HOOK", "https://hooks.example/y", 1);
	setenv("SC_TEST_TOKEN", "t", 1);
	n = config_check(c, &probs);
	assert_int_equal(n, 5);
	assert_int_equal(count_containing(&probs, "environment variable"), 0);
	config_problems_dispose(&probs);
	config_free(c);
	unsetenv("SC_TEST_CHAT");
	unsetenv("SC_TEST_HOOK");
	unsetenv("SC_TEST_SECRET");
	unsetenv("SC_TEST_TOKEN");
}

static void check_urls_and_alert_env(void **state)
{
	const char *path = write_file(
		"u.yaml",
		"targets:\n"
		"  chat: {kind: slack, url_env: SC_TEST_URL}\n"
		"alerts: {targets: [chat]}\n"
		"schedules:\n"
		"  s: {cron: \"* * * * *\", tasks: [{name: a, command: [sh]}]}\n");
	static const struct {
		const char *url, *alert_env; /* NULL: unset */
		int problems;
		const char *msg;
	} rows[] = {
		{"https://hooks.example/T/sekrit", NULL, 0, NULL},
		{"http://127.0.0.1:8080/hook", NULL, 0, NULL},
		{"http://[::1]/hook", "chat", 0, NULL},
		{"http://hooks.example/sekrit", NULL, 1,
		 "SC_TEST_URL: http://hooks.example: plain http is only "
		 "allowed to a loopback host"},
		{"ftp://x/sekrit", NULL, 1, "SC_TEST_URL: ftp://x: unsupported "
		 "scheme"},
		{"https://", NULL, 1, "SC_TEST_URL: not a valid http(s) URL"},
		/* Issue 11: libcurl reads user:password from one or three
		 * slashes, and a "loopback" user name is no loopback host. */
		{"https:/alice:sekrit@hooks.example/x", NULL, 1,
		 "SC_TEST_URL: https://hooks.example: the URL holds a user "
		 "name or password"},
		{"https:///alice:sekrit@hooks.example", NULL, 1,
		 "the URL holds a user name or password"},
		{"http://127.0.0.1:@hooks.example/sekrit", NULL, 1,
		 "the URL holds a user name or password"},
		/* Issue 43: the variable is resolved at load, so a name
		 * that is no target fails the load (-1), located at the
		 * alerts.targets key, before anything is checked. */
		{"https://hooks.example/sekrit", "chat,pager", -1,
		 "alerts.targets: SURECRON_ALERT_TARGETS names unknown target "
		 "\"pager\""},
		{"https://hooks.example/sekrit", " chat , chat ", 0, NULL},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct config_problems probs = {0};
		struct config *c = NULL;
		setenv("SC_TEST_URL", rows[i].url, 1);
		if (rows[i].alert_env)
			setenv("SURECRON_ALERT_TARGETS", rows[i].alert_env, 1);
		else
			unsetenv("SURECRON_ALERT_TARGETS");
		int rc = config_parse(path, &c, &probs);
		if (rows[i].problems < 0) {
			assert_int_equal(rc, SC_ECONFIG);
			assert_non_null(strstr(probs.items[0].msg,
					       rows[i].msg));
			assert_int_equal(probs.items[0].line, 3);
			config_problems_dispose(&probs);
			continue;
		}
		assert_int_equal(rc, 0);
		int n = config_check(c, &probs);
		if (n != rows[i].problems)
			fail_msg("row %zu: %d problems (%s)", i, n,
				 n > 0 ? probs.items[0].msg : "");
		if (rows[i].msg) {
			assert_non_null(strstr(probs.items[0].msg, rows[i].msg));
			/* Located at the key, never showing the value. */
			assert_true(probs.items[0].line == 2 ||
				    probs.items[0].line == 3);
			assert_int_equal(count_containing(&probs, "sekrit"), 0);
		}
		config_problems_dispose(&probs);
		config_free(c);
	}
	unsetenv("SC_TEST_URL");
	unsetenv("SURECRON_ALERT_TARGETS");
}

/* Cron expressions (the final ones) and zones go through the cron module
 * at load: a loaded schedule can always fire. */
/* `http:` (issue 16): listen forms, the loopback rule, token_env; each
 * refusal at its key. */
static void http_listen_table(void **state)
{
	static const struct {
		const char *http;   /* the value of `http:` */
		const char *expect; /* NULL: loads */
		int port;           /* when it loads */
		bool loopback;
	} rows[] = {
		{"{listen: \"127.0.0.1:8077\"}", NULL, 8077, true},
		{"{listen: \"localhost:9\"}", NULL, 9, true},
		{"{listen: \"[::1]:8077\"}", NULL, 8077, true},
		{"{listen: \"127.3.4.5:65535\"}", NULL, 65535, true},
		{"{listen: \"0.0.0.0:8077\", token_env: SC_T}", NULL, 8077,
		 false},
		{"{listen: \"[::]:80\", token_env: SC_T}", NULL, 80, false},
		{"{listen: \"0.0.0.0:8077\"}",
		 "2:16: http.listen: \"0.0.0.0:8077\" is not a loopback "
		 "address: it needs http.token_env", 0, false},
		{"{listen: \"[::]:8077\"}", "2:16: http.listen: \"[::]:8077\" "
		 "is not a loopback", 0, false},
		{"{listen: \"127.0.0.1\"}", "2:16: http.listen: \"127.0.0.1\" "
		 "is not host:port", 0, false},
		{"{listen: \"127.0.0.1:0\"}", "2:16: http.listen: ", 0, false},
		{"{listen: \"127.0.0.1:65536\"}", "2:16: http.listen: ", 0,
		 false},
		{"{listen: \"example.com:80\"}", "2:16: http.listen: ", 0, false},
		{"{listen: \"::1:80\"}", "2:16: http.listen: ", 0, false},
		{"{listen: \"[::1]80\"}", "2:16: http.listen: ", 0, false},
		{"{listen: \"127.0.0.1:8x\"}", "2:16: http.listen: ", 0, false},
		{"{listen: \"127.0.0.1:1\", token_env: \"A-B\"}",
		 "2:42: http.token_env: \"A-B\" is not a variable name", 0,
		 false},
		{"{token_env: SC_T}", "2:7: http: missing required key \"listen\"", 0,
		 false},
		{"{listen: \"127.0.0.1:1\", port: 3}", "2:31: http.port: unknown key in http",
		 0, false},
	};
	char text[512], line[1024];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(text, sizeof(text),
			 "# row\nhttp: %s\nschedules:\n  s:\n"
			 "    cron: \"0 * * * *\"\n"
			 "    tasks: [{name: a, command: [x]}]\n", rows[i].http);
		const char *path = write_file("h.yaml", text);
		struct config_problems probs = {0};
		struct config *c = NULL;
		int rc = config_parse(path, &c, &probs);
		if (!rows[i].expect) {
			for (size_t j = 0; j < probs.n; j++)
				fprintf(stderr, "row %zu: %s\n", i,
					config_problem_format(&probs, j, line,
							      sizeof(line)));
			assert_int_equal(rc, 0);
			assert_non_null(c->http_listen);
			struct sockaddr_storage ss;
			socklen_t len;
			bool lo = !rows[i].loopback;
			assert_int_equal(config_http_addr(c->http_listen, &ss,
							  &len, &lo), 0);
			assert_int_equal(lo, rows[i].loopback);
			int port = ss.ss_family == AF_INET6
			    ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
			    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
			assert_int_equal(port, rows[i].port);
			config_free(c);
		} else {
			assert_int_not_equal(rc, 0);
			assert_true(probs.n >= 1);
			const char *got = config_problem_format(&probs, 0, line,
								sizeof(line));
			const char *at = strstr(got, ":");
			/* FILE:LINE:COL: msg; compare from LINE on. */
			if (!at || strncmp(at + 1, rows[i].expect,
					   strlen(rows[i].expect)) != 0)
				fail_msg("row %zu: got \"%s\", want \"%s\"", i,
					 got, rows[i].expect);
		}
		config_problems_dispose(&probs);
	}
	/* check: the token's variable must be set (the daemon refuses to
	 * start without it). */
	struct config *c = load_ok(write_file("h.yaml",
		"http: {listen: \"0.0.0.0:8077\", token_env: SC_TEST_WEB_T}\n"
		"schedules:\n  s:\n    cron: \"0 * * * *\"\n"
		"    tasks: [{name: a, command: [sh]}]\n"));
	struct config_problems probs = {0};
	unsetenv("SC_TEST_WEB_T");
	assert_int_equal(config_check(c, &probs), 1);
	assert_int_equal(probs.items[0].line, 1);
	assert_string_equal(probs.items[0].msg, "http.token_env: environment "
			    "variable SC_TEST_WEB_T is not set");
	config_problems_dispose(&probs);
	/* Off loopback a token must have 16 visible ASCII bytes or more
	 * (issue 44, row 9); the message never holds the value. */
	setenv("SC_TEST_WEB_T", "tok", 1);
	assert_int_equal(config_check(c, &probs), 1);
	assert_null(strstr(probs.items[0].msg, "tok\""));
	config_problems_dispose(&probs);
	setenv("SC_TEST_WEB_T", "0123456789abcdef", 1);
	assert_int_equal(config_check(c, &probs), 0);
	config_problems_dispose(&probs);
	unsetenv("SC_TEST_WEB_T");
	config_free(c);
	/* No http: the surface is off. */
	c = load_ok(write_file("h.yaml",
		"schedules:\n  s:\n    cron: \"0 * * * *\"\n"
		"    tasks: [{name: a, command: [x]}]\n"));
	assert_null(c->http_listen);
	assert_null(c->http_token_env);
	config_free(c);
}

static void cron_and_zone_at_load(void **state)
{
	static const struct {
		const char *cron, *tz, *env; /* env: the override, or NULL */
		const char *expect;          /* NULL: loads */
	} rows[] = {
		{"0 17 * * 5", "Asia/Seoul", NULL, NULL},
		{"0 0 17 * * 5", "UTC", NULL, NULL},
		{"@weekly", "America/New_York", NULL, NULL},
		{"0 17 * *", NULL, NULL,
		 "4:11: schedules.s.cron: invalid cron \"0 17 * *\": expected "
		 "5 or 6 fields, got 4"},
		{"0 25 * * *", NULL, NULL, "4:11: schedules.s.cron: invalid cron "
		 "\"0 25 * * *\": hour: 25 is out of range 0-23"},
		{"0 0 30 2 *", NULL, NULL, "4:11: schedules.s.cron: invalid cron "
		 "\"0 0 30 2 *\": never fires"},
		{"0 17 * * 5", "Mars/Olympus", NULL,
		 "5:9: schedules.s.tz: unknown time zone \"Mars/Olympus\""},
		{"0 17 * * 5", "../etc/passwd", NULL, "5:9: schedules.s.tz: "},
		{"0 17 * * 5", NULL, "61 * * * *",
		 "4:11: schedules.s.cron: invalid cron \"61 * * * *\": minute: "
		 "61 is out of range 0-59 (from SURECRON_SCHEDULE_S)"},
		{"61 * * * *", NULL, "*/5 * * * *", NULL},
	};
	char text[512], line[1024];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(text, sizeof(text),
			 "# row\nschedules:\n  s:\n    cron: \"%s\"\n%s%s%s"
			 "    tasks: [{name: a, command: [x]}]\n",
			 rows[i].cron, rows[i].tz ? "    tz: \"" : "",
			 rows[i].tz ? rows[i].tz : "", rows[i].tz ? "\"\n" : "");
		const char *path = write_file("z.yaml", text);
		if (rows[i].env)
			setenv("SURECRON_SCHEDULE_S", rows[i].env, 1);
		else
			unsetenv("SURECRON_SCHEDULE_S");
		struct config_problems probs = {0};
		struct config *c = NULL;
		int rc = config_parse(path, &c, &probs);
		if (!rows[i].expect) {
			if (rc != 0)
				fail_msg("row %zu: %s", i, probs.items[0].msg);
			assert_string_equal(c->schedules[0].cron,
					    rows[i].env ? rows[i].env
							: rows[i].cron);
		} else {
			assert_int_equal(rc, SC_ECONFIG);
			config_problem_format(&probs, 0, line, sizeof(line));
			if (!matches(line, path, rows[i].expect))
				fail_msg("row %zu:\n  expected %s\n  got      %s",
					 i, rows[i].expect, line);
		}
		config_free(c);
		config_problems_dispose(&probs);
	}
	unsetenv("SURECRON_SCHEDULE_S");
}

static void many_problems_reported_in_file_order(void **state)
{
	const char *path = write_file(
		"m.yaml",
		"worker: {concurrency: 0, lease: 1x, clock_tolerance: 1m}\n"
		"targets:\n"
		"  a: {kind: file, pth: x}\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"* * * * *\"\n"
		"    catchup: never\n"
		"    targets: [b]\n"
		"    tasks: [{name: a, command: [x], timeout: 5}]\n");
	struct config_problems probs = {0};
	struct config *c = NULL;

	assert_int_equal(config_parse(path, &c, &probs), SC_ECONFIG);
	assert_true(probs.n >= 7);
	for (size_t i = 1; i < probs.n; i++)
		assert_true(probs.items[i - 1].line < probs.items[i].line ||
			    (probs.items[i - 1].line == probs.items[i].line &&
			     probs.items[i - 1].col <= probs.items[i].col));
	assert_non_null(strstr(probs.items[0].msg, "worker.concurrency"));
	/* issue 42: a tolerance a step would be taken (60 s) before */
	assert_int_equal(count_containing(&probs, "worker.clock_tolerance: "
					  "duration 1m is out of range"), 1);
	assert_int_equal(count_containing(&probs, "did you mean path?"), 1);
	assert_int_equal(count_containing(&probs, "unknown target \"b\""), 1);
	config_problems_dispose(&probs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_key_parsed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(defaults_apply, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue13_alert_notice_expect_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue14_heartbeat_sla_renamed_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(issue43_overlap_values, setup,
						teardown),
		cmocka_unit_test_setup_teardown(durations_table, setup,
						teardown),
		cmocka_unit_test_setup_teardown(env_override_forms, setup,
						teardown),
		cmocka_unit_test_setup_teardown(override_moves_retry_class,
						setup, teardown),
		cmocka_unit_test_setup_teardown(relative_store_path, setup,
						teardown),
		cmocka_unit_test(bad_corpus),
		cmocka_unit_test_setup_teardown(
			issue44_unicode_breaks_only_in_quotes, setup, teardown),
		cmocka_unit_test_setup_teardown(size_and_file_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(wide_mapping_is_cheap, setup,
						teardown),
		cmocka_unit_test_setup_teardown(truncated_and_mangled_input,
						setup, teardown),
		cmocka_unit_test_setup_teardown(check_environment, setup,
						teardown),
		cmocka_unit_test_setup_teardown(check_urls_and_alert_env, setup,
						teardown),
		cmocka_unit_test_setup_teardown(http_listen_table, setup,
						teardown),
		cmocka_unit_test_setup_teardown(cron_and_zone_at_load, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			many_problems_reported_in_file_order, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
