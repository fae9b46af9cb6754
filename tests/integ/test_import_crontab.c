/*
 * test_import_crontab.c - `surecron import-crontab` (issue 18).
 *
 * The output of a corpus of crontab lines (tests/fixtures/crontab/, and
 * the machine's own /etc/crontab when it has one: Debian's cron package)
 * must pass `surecron check`, and `surecron explain` of each schedule must
 * give the next fire times an independent reading of the same crontab
 * gives with croniter (tests/fakes/cron_reference.py, Debian's
 * python3-croniter). The cron semantics that decide what runs are run for
 * real: a '%' input reaches the command's stdin, a variable reaches its
 * environment, SHELL picks the shell. What cannot be carried over is
 * listed with its reason, and hostile bytes can neither break the YAML
 * nor change what it says.
 *
 * Issue 44 (checked against 2bbd5b8, where each issue44_ test fails): a
 * Unicode line break in a line or a newline in the file name cannot add
 * a key; one odd byte costs its own line at most; a '%' command is one
 * opaque argument of the shell; naming is linear; and every input of the
 * fuzz corpus (fuzz/corpus/import) imports to a config that loads with
 * one schedule per carried line and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "crontab.h"
#include "spec.h"
#include "testutil.h"

#define PY "/usr/bin/python3"
#define REF "tests/fakes/cron_reference.py"
#define FIX "tests/fixtures/crontab/"
#define START "2026-12-01T00:00:00Z"
#define START_S 1796083200
#define N_NEXT 5

static char dir[256];
static char out[1 << 21], errb[1 << 14];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

static bool reference_available(void)
{
	return access(PY, X_OK) == 0 &&
	       system(PY " -c 'import croniter' >/dev/null 2>&1") == 0;
}

/* Writes text to dir/name; its path in a static buffer. */
static const char *write_file(const char *name, const char *text,
			      size_t len)
{
	static char p[320];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	return p;
}

/* import-crontab ARGS... > dir/out.yaml; returns its exit status. */
static int import(const char *const *args)
{
	const char *argv[12] = {"import-crontab"};
	size_t n = 1;

	for (; args[n - 1] && n < 11; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int rc = tu_run_bin(dir, NULL, NULL, argv, out, sizeof(out), errb,
			    sizeof(errb));
	if (rc == 0)
		write_file("out.yaml", out, strlen(out));
	return rc;
}

static const char *out_path(void)
{
	static char p[320];

	snprintf(p, sizeof(p), "%s/out.yaml", dir);
	return p;
}

/* `check --strict` of the output passes; returns how many schedules it
 * says it loaded. */
static size_t check_passes(void)
{
	static const char *env[] = {"SURECRON_SMTP_URL=smtp://127.0.0.1:25",
				    NULL};
	const char *args[] = {"check", "--strict", "--config", out_path(),
			      NULL};
	char o[4096], e[8192];
	int rc = tu_run_bin(dir, NULL, env, args, o, sizeof(o), e, sizeof(e));
	if (rc != 0)
		fail_msg("check: %d: %s\n--- output ---\n%s", rc, e, out);
	size_t n = 0;
	if (sscanf(o, "ok: %zu schedule", &n) != 1)
		fail_msg("check said: %s", o);
	return n;
}

/* The schedule name written after "  # line N: " for line N, or NULL. */
static const char *name_of_line(int line, char *name, size_t n)
{
	char key[48];

	snprintf(key, sizeof(key), "\n  # line %d: ", line);
	const char *p = strstr(out, key);
	if (!p || !(p = strchr(p + 1, '\n')))
		return NULL;
	p += 3; /* "\n  " */
	const char *e = strchr(p, ':');
	if (!e || (size_t)(e - p) >= n)
		return NULL;
	snprintf(name, n, "%.*s", (int)(e - p), p);
	return name;
}

/* Compares explain's next fire times of every imported job line with the
 * reference's; returns how many lines were compared. */
static int compare_with_reference(const char *crontab, bool system)
{
	char cmd[1024], line[4096];
	int compared = 0;

	snprintf(cmd, sizeof(cmd), PY " " REF " %s %s %d %d", system
		 ? "--system --user root" : "", crontab, START_S, N_NEXT);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		int no = 0, k = 0;
		long long want[N_NEXT];
		char *p = line, *end;
		no = (int)strtol(p, &end, 10);
		for (p = end; k < N_NEXT; k++, p = end)
			want[k] = strtoll(p, &end, 10);
		char name[128];
		if (!name_of_line(no, name, sizeof(name)))
			fail_msg("%s line %d: croniter fires it, the import "
				 "has no schedule for it", crontab, no);
		const char *args[] = {"explain", "--config", out_path(),
				      "--from", START, "--json", name, NULL};
		char o[1 << 14], e[4096];
		int rc = tu_run_bin(dir, NULL, NULL, args, o, sizeof(o), e,
				    sizeof(e));
		if (rc != 0)
			fail_msg("explain %s: %d: %s", name, rc, e);
		json_t *j = json_loads(o, 0, NULL);
		json_t *next = json_object_get(j, "next");
		assert_true(json_array_size(next) >= N_NEXT);
		for (k = 0; k < N_NEXT; k++) {
			int64_t ms;
			struct sc_err err = {0};
			const char *s = json_string_value(
				json_array_get(next, (size_t)k));
			assert_int_equal(clock_parse_iso(s, &ms, &err), 0);
			if (ms != want[k] * 1000)
				fail_msg("%s line %d (%s): fire %d: surecron "
					 "%s, cron %lld", crontab, no, name, k,
					 s, want[k]);
		}
		json_decref(j);
		compared++;
	}
	pclose(f);
	return compared;
}

static void user_corpus_matches_cron(void **state)
{
	(void)state;
	const char *args[] = {FIX "user.cron", NULL};

	assert_int_equal(import(args), 0);
	check_passes();
	/* Every line it cannot carry over is listed with its reason. */
	assert_non_null(strstr(out, "line 23: @reboot"));
	assert_non_null(strstr(out, "surecron has no start-up jobs"));
	assert_non_null(strstr(out, "line 30: 15 * * * *"));
	assert_non_null(strstr(out, "cron has no continuation lines"));
	assert_non_null(strstr(out, "line 32: 1 2 3 4"));
	assert_non_null(strstr(out, "line 33: 0 0 31 2 *"));
	assert_non_null(strstr(out, "never fires"));
	assert_non_null(strstr(errb, "19 schedules, 5 lines not carried"));
	if (!reference_available())
		skip();
	assert_int_equal(compare_with_reference(FIX "user.cron", false), 19);
}

static void system_corpus_matches_cron(void **state)
{
	(void)state;
	const char *args[] = {"--system", "--user", "root",
			      FIX "system.cron", NULL};

	assert_int_equal(import(args), 0);
	check_passes();
	/* Another user's line is not the daemon's to run. */
	assert_non_null(strstr(out, "line 6: 0 3 * * * postgres"));
	assert_non_null(strstr(out, "runs as user postgres"));
	/* SHELL=/bin/bash: cron runs the line through bash. */
	assert_non_null(strstr(out, "command: [\"/bin/bash\", \"-c\", \"[ -x "
			       "/usr/bin/fstrim ] && /usr/bin/fstrim "
			       "--all\"]"));
	assert_non_null(strstr(out, "tz: \"Europe/Berlin\""));
	if (!reference_available())
		skip();
	assert_int_equal(compare_with_reference(FIX "system.cron", true), 2);
}

/* Debian's own /etc/crontab (package cron), as a person would import it:
 * the path alone selects the system format. */
static void debian_etc_crontab(void **state)
{
	(void)state;
	if (access("/etc/crontab", R_OK) != 0 || !reference_available())
		skip();
	const char *args[] = {"--user", "root", "/etc/crontab", NULL};
	assert_int_equal(import(args), 0);
	check_passes();
	assert_true(compare_with_reference("/etc/crontab", true) >= 1);
	/* Debian's daily line: named after what it runs, not its guard. */
	if (strstr(out, "/etc/cron.daily"))
		assert_non_null(strstr(out, "run-parts-cron-daily:"));
}

/* The cron semantics of a command, run for real by `run --once`: the '%'
 * input on stdin, a variable in the environment, "\%" a literal '%'. */
static void commands_run_as_cron_runs_them(void **state)
{
	(void)state;
	char text[1024], o[4096], e[4096];
	int n = snprintf(text, sizeof(text),
			 "GREETING = 'hello world'\n"
			 "0 4 * * * cat > %s/stdin.txt%%line one%%50\\%% done\n"
			 "0 5 * * * printf '\\%%s' \"$GREETING\" > %s/env.txt\n",
			 dir, dir);
	const char *cron = write_file("run.cron", text, (size_t)n);
	const char *args[] = {"--store", "sqlite:./s.db", cron, NULL};
	assert_int_equal(import(args), 0);
	check_passes();
	char a[128], b[128];
	assert_non_null(name_of_line(2, a, sizeof(a)));
	assert_non_null(name_of_line(3, b, sizeof(b)));
	const char *names[] = {a, b};
	for (int i = 0; i < 2; i++) {
		const char *trig[] = {"trigger", "--config", out_path(),
				      names[i], NULL};
		assert_int_equal(tu_run_bin(dir, NULL, NULL, trig, o,
					    sizeof(o), e, sizeof(e)), 0);
	}
	const char *run[] = {"run", "--once", "--config", out_path(), NULL};
	int rc = tu_run_bin(dir, NULL, NULL, run, o, sizeof(o), e, sizeof(e));
	if (rc != 0)
		fail_msg("run --once: %d: %s", rc, e);
	char got[256], p[320];
	snprintf(p, sizeof(p), "%s/stdin.txt", dir);
	tu_slurp(p, got, sizeof(got));
	/* cron ends the input with a newline (do_command.c). */
	assert_string_equal(got, "line one\n50% done\n");
	snprintf(p, sizeof(p), "%s/env.txt", dir);
	tu_slurp(p, got, sizeof(got));
	assert_string_equal(got, "hello world");
}

/* Hostile bytes: quotes, backslashes, YAML syntax, a CR in the middle of
 * a line, non-ASCII text. The output still parses, and each task's shell
 * is exactly the command cron would run. */
static void hostile_lines_stay_data(void **state)
{
	(void)state;
	static const char *const cmds[] = {
		"echo \"a\\\"b\" 'c' \\\\ # not a comment: {x: y}",
		"echo '---' ; echo '... ' && echo \"key: [1, 2]\"",
		"echo caf\xc3\xa9 \xe2\x9c\x93 \\u0041",
		"echo \"\x01\x02\" | tr -d x",
	};
	char text[2048] = "";
	size_t n = 0;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%zu * * * * %s\n", i, cmds[i]);
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "7 * * * * echo one\rtwo: three\n");
	const char *cron = write_file("hostile.cron", text, n);
	const char *args[] = {cron, NULL};
	assert_int_equal(import(args), 0);
	check_passes();
	struct config *cfg = NULL;
	struct sc_err err = {0};
	assert_int_equal(config_load(out_path(), &cfg, &err), 0);
	assert_int_equal(cfg->n_schedules, 5);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char name[128];
		assert_non_null(name_of_line((int)i + 1, name, sizeof(name)));
		const struct schedule_spec *s = config_schedule(cfg, name);
		assert_non_null(s);
		assert_string_equal(s->tasks[0].shell, cmds[i]);
	}
	char name[128];
	assert_non_null(name_of_line(5, name, sizeof(name)));
	assert_string_equal(config_schedule(cfg, name)->tasks[0].shell,
			    "echo one\rtwo: three");
	config_free(cfg);

	/* Time fields longer than the spec holds (a fuzz finding): the
	 * line is listed as not carried over, never cut into another
	 * schedule. */
	char longf[700];
	memset(longf, '5', 600);
	snprintf(longf + 600, sizeof(longf) - 600, " * * * * echo long\n");
	const char *lc = write_file("long.cron", longf, strlen(longf));
	const char *a1[] = {lc, NULL};
	assert_int_equal(import(a1), 0);
	assert_non_null(strstr(out, "longer than 511 bytes"));
	assert_non_null(strstr(out, "schedules: {}"));
	assert_non_null(strstr(errb, "0 schedules, 1 line"));

	/* A NUL byte: not a crontab, said so, exit 1, nothing printed. */
	const char *bin = write_file("nul.cron", "0 * * * * a\0b\n", 14);
	const char *a2[] = {bin, NULL};
	assert_int_equal(import(a2), 1);
	assert_non_null(strstr(errb, "NUL byte"));
	assert_string_equal(out, "");
	/* A missing file: its name and why. */
	const char *a3[] = {"/nonexistent/crontab", NULL};
	assert_int_equal(import(a3), 1);
	assert_non_null(strstr(errb, "/nonexistent/crontab"));
	const char *a4[] = {"--bogus", NULL};
	assert_int_equal(import(a4), 2);
}

/* Names: unique, valid, from what the line runs. */
static void names_are_unique_and_readable(void **state)
{
	(void)state;
	static const char text[] =
		"0 1 * * * /usr/local/bin/backup.sh --fast\n"
		"0 2 * * * /usr/local/bin/backup.sh --slow\n"
		"0 3 * * * cd /srv && ./deploy.sh > /tmp/log 2>&1\n"
		"0 4 * * * test -x /usr/sbin/anacron || run-parts /etc/x.d\n"
		"0 5 * * * FOO=1 nice -n 10 /opt/\xc3\xa9t\xc3\xa9/run\n"
		"0 6 * * * >/dev/null\n";
	const char *cron = write_file("names.cron", text, sizeof(text) - 1);
	const char *args[] = {cron, NULL};
	assert_int_equal(import(args), 0);
	check_passes();
	static const char *const want[] = {"backup-sh", "backup-sh-2",
					   "deploy-sh", "run-parts-x-d",
					   "run", "job"};
	for (int i = 0; i < 6; i++) {
		char name[128];
		assert_non_null(name_of_line(i + 1, name, sizeof(name)));
		if (strcmp(name, want[i]) != 0)
			fail_msg("line %d: name '%s', expected '%s'", i + 1,
				 name, want[i]);
	}
}

/* The config the import printed: printable ASCII (a tab in a comment),
 * passes `check --strict`, loads with n_sched schedules and nothing a
 * crontab line could have added. Free with config_free. */
static struct config *load_imported(size_t n_sched)
{
	size_t n_checked = check_passes();
	if (n_checked != n_sched)
		fail_msg("check loads %zu schedules, expected %zu:\n%s",
			 n_checked, n_sched, out);
	struct config *cfg = NULL;
	struct sc_err err = {0};
	if (config_load(out_path(), &cfg, &err) != 0)
		fail_msg("%s", err.msg);
	if (cfg->n_schedules != n_sched)
		fail_msg("%zu schedules, expected %zu:\n%s", cfg->n_schedules,
			 n_sched, out);
	assert_null(cfg->http_listen);
	assert_null(cfg->status_socket);
	assert_int_equal(cfg->n_files, 1);
	for (const char *p = out; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (!((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t'))
			fail_msg("byte 0x%02X at %td of the output:\n%s", c,
				 p - out, out);
	}
	return cfg;
}

/* Row 1: NEL, LS and PS in a line, or a newline in the crontab's file
 * name, ended the comment they were printed in and added keys (another
 * schedule, `http:`, `include:`) that `check` approved. */
static void issue44_unicode_breaks_cannot_inject(void **state)
{
	(void)state;
	static const char *const cmds[] = {
		"echo a\xe2\x80\xa8  evil:\xe2\x80\xa8    cron: \"* * * * *\""
		"\xe2\x80\xa8    tasks: [{name: x, shell: id}]",
		"echo b\xc2\x85http: {listen: \"127.0.0.1:8077\"}",
		"echo c\xe2\x80\xa9include: [\"/tmp/*.yaml\"]",
		"echo d\xc2\x85status_socket: /tmp/s.sock\xc2\x85#",
	};
	/* Each after a plain line, and last: a top-level key injected
	 * before another schedule would be a syntax error, not a key. */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char text[512];
		int n = snprintf(text, sizeof(text), "0 1 * * * echo first\n"
				 "%zu * * * * %s\n", i, cmds[i]);
		const char *cron = write_file("breaks.cron", text, (size_t)n);
		const char *args[] = {cron, NULL};
		assert_int_equal(import(args), 0);
		struct config *cfg = load_imported(2);
		assert_null(config_schedule(cfg, "evil"));
		char name[128];
		assert_non_null(name_of_line(2, name, sizeof(name)));
		assert_string_equal(config_schedule(cfg, name)->tasks[0].shell,
				    cmds[i]);
		config_free(cfg);
	}
	/* What the comment shows of them. */
	assert_non_null(strstr(out, "# line 2: 3 * * * * echo "
			       "d\\u0085status_socket:"));

	/* The file name is the crontab author's text too. */
	static const char fname[] = "x\nhttp: {listen: \"127.0.0.1:8078\"}\n#"
				    "\xe2\x80\xa8include: [\"*.yaml\"]";
	const char *named = write_file(fname, "0 1 * * * echo ok\n", 18);
	const char *a2[] = {named, NULL};
	assert_int_equal(import(a2), 0);
	config_free(load_imported(1));
	assert_non_null(strstr(out, "x\\x0Ahttp: {listen"));
}

/* Row 2: one Latin-1 byte, DEL, C1 control or NEL in a line made the
 * whole printed config fail `check`. Now what is UTF-8 is carried
 * (escaped), what is not is listed with the byte shown, and every other
 * line imports. */
static void issue44_odd_bytes_cost_one_line(void **state)
{
	(void)state;
	static const char *const cmds[] = {
		"echo ok", "echo caf\xe9", "echo del\x7f", "echo c1\xc2\x9b",
		"echo nel\xc2\x85x", "echo raw\x85", "echo ok2",
	};
	static const bool carried[] = {true, false, true, true, true, false,
				       true};
	char text[1024] = "";
	size_t n = 0;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%zu * * * * %s\n", i, cmds[i]);
	const char *cron = write_file("odd.cron", text, n);
	const char *args[] = {cron, NULL};
	assert_int_equal(import(args), 0);
	struct config *cfg = load_imported(5);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char name[128];
		if (!carried[i])
			continue;
		assert_non_null(name_of_line((int)i + 1, name, sizeof(name)));
		assert_string_equal(config_schedule(cfg, name)->tasks[0].shell,
				    cmds[i]);
	}
	config_free(cfg);
	assert_non_null(strstr(out, "#   line 2: 1 * * * * echo caf\\xE9\n"
			       "#     not valid UTF-8"));
	assert_non_null(strstr(out, "#   line 6: 5 * * * * echo raw\\x85\n"));
	assert_non_null(strstr(errb, "5 schedules, 2 lines not carried"));
}

/* Row 3: the '%' input wrapped the command as `{ COMMAND }`, so an
 * unbalanced '}' ran what cron's `sh -c` refuses to run. The command is
 * one argument of the shell now, and the input still reaches stdin. */
static void issue44_percent_command_stays_opaque(void **state)
{
	(void)state;
	char text[1024], cmd1[512], o[4096], e[4096];
	snprintf(cmd1, sizeof(cmd1), "echo a; }; touch %s/pwned; { echo b",
		 dir);
	int n = snprintf(text, sizeof(text),
			 "0 4 * * * %s%%in\n"
			 "0 5 * * * cat > %s/stdin.txt%%one%%two\\%%\n",
			 cmd1, dir);
	const char *cron = write_file("brace.cron", text, (size_t)n);
	const char *args[] = {"--store", "sqlite:./s.db", cron, NULL};
	assert_int_equal(import(args), 0);
	char a[128], b[128];
	assert_non_null(name_of_line(1, a, sizeof(a)));
	assert_non_null(name_of_line(2, b, sizeof(b)));
	const char *names[] = {a, b};
	for (int i = 0; i < 2; i++) {
		const char *trig[] = {"trigger", "--config", out_path(),
				      names[i], NULL};
		assert_int_equal(tu_run_bin(dir, NULL, NULL, trig, o,
					    sizeof(o), e, sizeof(e)), 0);
	}
	const char *run[] = {"run", "--once", "--config", out_path(), NULL};
	tu_run_bin(dir, NULL, NULL, run, o, sizeof(o), e, sizeof(e));
	char got[256], p[320];
	snprintf(p, sizeof(p), "%s/pwned", dir);
	if (access(p, F_OK) == 0)
		fail_msg("the '}' line ran a command sh -c refuses:\n%s", out);
	snprintf(p, sizeof(p), "%s/stdin.txt", dir);
	tu_slurp(p, got, sizeof(got));
	assert_string_equal(got, "one\ntwo%\n");
	/* The command is one argument of sh -c, the input another. */
	struct config *cfg = load_imported(2);
	const struct task_spec *t = &config_schedule(cfg, a)->tasks[0];
	assert_non_null(t->argv);
	assert_string_equal(t->argv[1], "-c");
	assert_string_equal(t->argv[5], "in\n");
	assert_string_equal(t->argv[6], cmd1);
	config_free(cfg);
}

/* Row 4: naming was cubic in the lines sharing a program (2,000 lines:
 * 9-34 s). Here the names' order and uniqueness, including a base that
 * is another base's suffixed form; the time is in docs/bench.md. */
static void issue44_many_lines_one_program(void **state)
{
	(void)state;
	enum { N = 2000 };
	static char text[N * 64];
	size_t n = (size_t)snprintf(text, sizeof(text),
				    "0 0 * * * /opt/backup-sh-2\n");
	for (int i = 0; i < N; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%d %d * * * /usr/local/bin/backup.sh "
				      "--n %d\n", i % 60, i / 60 % 24, i);
	const char *cron = write_file("many.cron", text, n);
	const char *args[] = {cron, NULL};
	assert_int_equal(import(args), 0);
	config_free(load_imported(N + 1));
	static const struct {
		int line;
		const char *name;
	} want[] = {{1, "backup-sh-2"}, {2, "backup-sh"}, {3, "backup-sh-3"},
		    {4, "backup-sh-4"}, {N + 1, "backup-sh-2001"}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char name[128];
		assert_non_null(name_of_line(want[i].line, name, sizeof(name)));
		assert_string_equal(name, want[i].name);
	}
}

/* The property of fuzz/fuzz_import.c, through the binary, over its
 * corpus: every input imports (first byte odd: the system format) to a
 * config that loads with one schedule per carried line and nothing else;
 * with no line carried, `check` refuses it for that alone. */
static void issue44_fuzz_corpus_imports_and_loads(void **state)
{
	(void)state;
	const char *cdir = "fuzz/corpus/import";
	DIR *d = opendir(cdir);
	struct dirent *de;
	int n_files = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char p[512];
		static char data[1 << 16];
		snprintf(p, sizeof(p), "%s/%s", cdir, de->d_name);
		FILE *f = fopen(p, "rb");
		assert_non_null(f);
		size_t size = fread(data, 1, sizeof(data), f);
		fclose(f);
		if (size == 0 || memchr(data + 1, '\0', size - 1))
			continue;
		bool system = data[0] & 1;
		const char *cron = write_file("corpus.cron", data + 1, size - 1);
		const char *args[] = {"--system", "--user", "root", cron,
				      NULL};
		if (import(system ? args : args + 1) != 0)
			fail_msg("%s: import: %s", p, errb);
		size_t n_sched = 0, n_skip = 0;
		const char *s = strstr(errb, "import-crontab: ");
		assert_non_null(s);
		assert_int_equal(sscanf(s, "import-crontab: %zu schedule%*[s,] "
					"%zu line", &n_sched, &n_skip), 2);
		struct crontab ct;
		struct sc_err err = {0};
		assert_int_equal(crontab_parse(data + 1, size - 1, system,
					       "root", &ct, &err), 0);
		if (n_sched + n_skip != ct.n_jobs + ct.n_notes)
			fail_msg("%s: %zu + %zu lines, %zu jobs + %zu notes",
				 p, n_sched, n_skip, ct.n_jobs, ct.n_notes);
		crontab_dispose(&ct);
		if (n_sched) {
			config_free(load_imported(n_sched));
		} else {
			const char *chk[] = {"check", "--config", out_path(),
					     NULL};
			char o[4096], e[4096];
			assert_int_equal(tu_run_bin(dir, NULL, NULL, chk, o,
						    sizeof(o), e, sizeof(e)),
					 2);
			assert_non_null(strstr(e, "no schedule defined"));
		}
		n_files++;
	}
	closedir(d);
	assert_true(n_files >= 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(user_corpus_matches_cron,
						setup, teardown),
		cmocka_unit_test_setup_teardown(system_corpus_matches_cron,
						setup, teardown),
		cmocka_unit_test_setup_teardown(debian_etc_crontab, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			commands_run_as_cron_runs_them, setup, teardown),
		cmocka_unit_test_setup_teardown(hostile_lines_stay_data,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			names_are_unique_and_readable, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue44_unicode_breaks_cannot_inject, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue44_odd_bytes_cost_one_line, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue44_percent_command_stays_opaque, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue44_many_lines_one_program, setup, teardown),
		cmocka_unit_test_setup_teardown(
			issue44_fuzz_corpus_imports_and_loads, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
