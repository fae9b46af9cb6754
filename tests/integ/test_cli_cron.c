/*
 * test_cli_cron.c - the real surecron binary ($SURECRON_BIN): next,
 * explain (text and --json), help, unknown commands and options, exit
 * codes. Each case runs one child process with its own stdout and stderr
 * captured through pipes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

struct run {
	int status;
	char out[16384];
	char err[4096];
};

/* Reads both pipes until both close, so neither child write can block. */
static void drain(int fo, int fe, struct run *r)
{
	size_t no = 0, ne = 0;
	struct pollfd p[2] = {{fo, POLLIN, 0}, {fe, POLLIN, 0}};
	int open_fds = 2;

	while (open_fds > 0) {
		if (poll(p, 2, 10000) <= 0)
			fail_msg("child output timed out");
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			char *buf = i == 0 ? r->out : r->err;
			size_t cap = i == 0 ? sizeof(r->out) : sizeof(r->err);
			size_t *n = i == 0 ? &no : &ne;
			char tmp[4096];
			ssize_t k = read(p[i].fd, tmp, sizeof(tmp));
			if (k <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				open_fds--;
				continue;
			}
			size_t take = (size_t)k < cap - 1 - *n ? (size_t)k
							       : cap - 1 - *n;
			memcpy(buf + *n, tmp, take);
			*n += take;
			buf[*n] = '\0';
		}
	}
}

/* Runs the binary with the NULL-terminated args; env_tz, when not NULL,
 * is put in the child's TZ. */
static void run_bin(struct run *r, const char *env_tz, ...)
{
	const char *argv[32];
	int n = 0, po[2], pe[2];
	va_list ap;

	memset(r, 0, sizeof(*r));
	argv[n++] = tu_bin();
	va_start(ap, env_tz);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	assert_int_equal(pipe(po), 0);
	assert_int_equal(pipe(pe), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		close(po[1]);
		close(pe[1]);
		if (env_tz)
			setenv("TZ", env_tz, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	drain(po[0], pe[0], r);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void next_prints_local_iso(void **state)
{
	struct run r;

	run_bin(&r, NULL, "next", "--tz", "America/New_York", "--from",
		"2026-03-07T12:00:00Z", "--count", "3", "30 2 * * *", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "2026-03-08T03:00:00-04:00\n"
				   "2026-03-09T02:30:00-04:00\n"
				   "2026-03-10T02:30:00-04:00\n");
	assert_string_equal(r.err, "");

	/* --from with an offset, --opt=value, fields as separate args. */
	run_bin(&r, NULL, "next", "--tz=Australia/Lord_Howe",
		"--from=2026-10-04T01:00:00+10:30", "15", "2", "*", "*", "*",
		(char *)NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "2026-10-04T02:30:00+11:00\n");

	/* Default count is 1; UTC shows +00:00. */
	run_bin(&r, NULL, "next", "--tz", "UTC", "--from",
		"2026-01-01T00:00:00Z", "0 0 29 2 *", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "2028-02-29T00:00:00+00:00\n");

	/* Without --from it starts now: one line, in the future. */
	run_bin(&r, NULL, "next", "--tz", "UTC", "--count", "2",
		"* * * * *", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_lines(r.out), 2);
}

static void default_zone_is_tz_env(void **state)
{
	struct run r;

	run_bin(&r, "Asia/Seoul", "next", "--from", "2026-01-01T00:00:00Z",
		"0 17 * * 5", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "2026-01-02T17:00:00+09:00\n");
	run_bin(&r, ":Europe/Berlin", "next", "--from",
		"2026-07-01T00:00:00Z", "0 12 * * *", (char *)NULL);
	assert_string_equal(r.out, "2026-07-01T12:00:00+02:00\n");
}

static const struct bad_row {
	const char *args[6];
	const char *err; /* substring of stderr */
} bad_rows[] = {
	{{"next", "0 25 * * *"},
	 "invalid cron \"0 25 * * *\": hour: 25 is out of range 0-23"},
	{{"next", "0 0 30 2 *"}, "never fires"},
	{{"next", "--tz", "Nowhere/Zone", "* * * * *"}, "Nowhere/Zone"},
	{{"next", "--tz", "../etc/passwd", "* * * * *"}, "time zone"},
	{{"next", "--from", "2026-01-01T00:00:00", "* * * * *"},
	 "needs an offset"},
	{{"next", "--count", "0", "* * * * *"}, "--count"},
	{{"next", "--count", "x", "* * * * *"}, "--count"},
	{{"next", "--json", "* * * * *"}, "unknown option '--json'"},
	{{"next", "--tz"}, "needs a value"},
	{{"next"}, "missing the cron expression"},
	{{"explain", "@sometimes"}, "unknown macro"},
	{{"explain", "--count", "3", "* * * * *"}, "unknown option"},
	{{"frobnicate"}, "'frobnicate' is not a surecron command"},
	{{"--bogus"}, "unknown option '--bogus'"},
	{{"run", "--bogus"}, "unknown option '--bogus'"},
	{{"run", "extra"}, "unexpected argument 'extra'"},
};

static void bad_input_exits_2(void **state)
{
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const char *const *a = bad_rows[i].args;
		struct run r;
		run_bin(&r, NULL, a[0], a[1], a[2], a[3], a[4], a[5], (char *)NULL);
		if (r.status != 2 || !strstr(r.err, bad_rows[i].err))
			fail_msg("row %zu (%s): status %d, stderr \"%s\"", i,
				 a[0], r.status, r.err);
		assert_string_equal(r.out, "");
		/* One line of error. */
		assert_int_equal(count_lines(r.err), 1);
	}
}

static void explain_text(void **state)
{
	struct run r;

	run_bin(&r, NULL, "explain", "--tz", "America/New_York", "--from",
		"2026-03-07T12:00:00Z", "0 17 * * 5", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "meaning     at 17:00, on Friday\n"));
	assert_non_null(strstr(r.out, "next        2026-03-13T17:00:00-04:00\n"));
	assert_non_null(strstr(r.out, "low-frequency (day-of-week is the "
				      "single value FRI)"));
	assert_non_null(strstr(r.out, "attempt 4  2026-03-13T20:30:00-04:00"));
	assert_non_null(strstr(r.out, "recovery window 3h30m (until "
				      "2026-03-13T20:30:00-04:00)"));

	run_bin(&r, NULL, "explain", "--tz", "UTC", "--from",
		"2026-03-07T12:00:00Z", "10 17 * * 1-5", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "class       default"));
	assert_non_null(strstr(r.out, "recovery window 1m (until "
				      "2026-03-09T17:11:00+00:00)"));
}

static void explain_json(void **state)
{
	struct run r;
	json_error_t jerr;

	run_bin(&r, NULL, "explain", "--json", "--tz", "Europe/Berlin",
		"--from", "2026-03-28T12:00:00Z", "0 30 2 * * *", (char *)NULL);
	assert_int_equal(r.status, 0);
	json_t *j = json_loads(r.out, 0, &jerr);
	if (!j)
		fail_msg("bad JSON: %s\n%s", jerr.text, r.out);
	assert_string_equal(json_string_value(json_object_get(j, "zone")),
			    "Europe/Berlin");
	assert_int_equal(json_integer_value(json_object_get(j, "fields")), 6);
	assert_true(json_is_true(json_object_get(j, "fixed_time")));
	json_t *next = json_object_get(j, "next");
	assert_int_equal(json_array_size(next), 5);
	/* The gap: 02:30 fires once at 03:00 summer time. */
	assert_string_equal(json_string_value(json_array_get(next, 0)),
			    "2026-03-29T03:00:00+02:00");
	assert_string_equal(json_string_value(json_array_get(next, 1)),
			    "2026-03-30T02:30:00+02:00");
	assert_string_equal(json_string_value(json_object_get(j, "class")),
			    "default");
	json_t *tl = json_object_get(j, "timeline");
	assert_int_equal(json_array_size(json_object_get(tl, "attempts")), 2);
	assert_int_equal(json_integer_value(json_object_get(
				 tl, "recovery_window_ms")),
			 60000);
	json_t *pol = json_object_get(j, "policy");
	assert_int_equal(json_integer_value(json_object_get(pol, "attempts")),
			 2);
	json_decref(j);

	run_bin(&r, NULL, "explain", "--json", "--tz", "UTC", "--from",
		"2026-01-01T00:00:00Z", "@weekly", (char *)NULL);
	j = json_loads(r.out, 0, &jerr);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "class")),
			    "low-frequency");
	tl = json_object_get(j, "timeline");
	assert_int_equal(json_integer_value(json_object_get(
				 tl, "recovery_window_ms")),
			 (3 * 60 + 30) * 60 * 1000);
	assert_string_equal(json_string_value(json_object_get(tl,
							      "recovery_end")),
			    "2026-01-04T03:30:00+00:00");
	json_decref(j);
}

static void help_is_the_same_both_ways(void **state)
{
	static const char *const cmds[] = {"next", "explain"};
	for (size_t i = 0; i < 2; i++) {
		struct run a, b;
		run_bin(&a, NULL, cmds[i], "--help", (char *)NULL);
		run_bin(&b, NULL, "help", cmds[i], (char *)NULL);
		assert_int_equal(a.status, 0);
		assert_int_equal(b.status, 0);
		assert_string_equal(a.out, b.out);
		assert_non_null(strstr(a.out, "usage: surecron "));
		assert_non_null(strstr(a.out, "--tz ZONE"));
	}
	struct run r;
	run_bin(&r, NULL, "--help", (char *)NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "  explain "));
	assert_non_null(strstr(r.out, "  next "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(next_prints_local_iso),
		cmocka_unit_test(default_zone_is_tz_env),
		cmocka_unit_test(bad_input_exits_2),
		cmocka_unit_test(explain_text),
		cmocka_unit_test(explain_json),
		cmocka_unit_test(help_is_the_same_both_ways),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
