/*
 * test_deps.c - `make` never installs anything: a build target that finds
 * a Debian package missing names it and the command that installs it,
 * and stops; only `make deps` (scripts/install-deps.sh without --check)
 * runs apt-get.
 *
 * The test puts a folder in front of PATH whose dpkg-query says every
 * package is missing and whose apt-get only leaves a marker file, then
 * runs the script and make from the tree (the working folder of the
 * suites). The installing form must leave the marker, which proves the
 * fake is the apt-get that would run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

struct env {
	char dir[256];         /* scratch (tu_tmpdir) */
	char bin[PATH_MAX];    /* the fake commands */
	char marker[PATH_MAX]; /* written by the fake apt-get */
	char err[8192];        /* the last run's stderr */
};

static void write_exe(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(body, f);
	fclose(f);
	assert_int_equal(chmod(path, 0700), 0);
}

static void env_init(struct env *e)
{
	char p[PATH_MAX + 32], body[PATH_MAX + 64];

	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->bin, sizeof(e->bin), "%s/bin", e->dir);
	snprintf(e->marker, sizeof(e->marker), "%s/apt-get-ran", e->dir);
	assert_int_equal(mkdir(e->bin, 0700), 0);
	snprintf(p, sizeof(p), "%s/dpkg-query", e->bin);
	write_exe(p, "#!/bin/sh\nexit 1\n");
	snprintf(p, sizeof(p), "%s/apt-get", e->bin);
	snprintf(body, sizeof(body), "#!/bin/sh\necho \"$@\" >> '%s'\n",
		 e->marker);
	write_exe(p, body);
}

/* Runs argv in the tree with the fake folder first on PATH and no
 * make state inherited from the make that runs the tests; returns the
 * exit status (-1 when it could not run), stderr in e->err. */
static int run(struct env *e, char *const argv[])
{
	char ep[PATH_MAX + 8], path[PATH_MAX + 32];
	int st;

	snprintf(ep, sizeof(ep), "%s/.err", e->dir);
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", e->bin);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fo = open("/dev/null", O_WRONLY);
		if (fe < 0 || fo < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(127);
		setenv("PATH", path, 1);
		unsetenv("MAKEFLAGS");
		unsetenv("MFLAGS");
		unsetenv("MAKELEVEL");
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	tu_slurp(ep, e->err, sizeof(e->err));
	return WEXITSTATUS(st);
}

static bool apt_get_ran(const struct env *e)
{
	return access(e->marker, F_OK) == 0;
}

static int setup(void **state)
{
	(void)state;
	/* The suites run from the tree; without it there is nothing to test. */
	return access("scripts/install-deps.sh", R_OK) == 0 &&
			       access("Makefile", R_OK) == 0
		       ? 0
		       : -1;
}

static void check_names_what_is_missing_and_installs_nothing(void **state)
{
	struct env e = {0};
	char *argv[] = {"sh", "scripts/install-deps.sh", "--check", "test",
			NULL};
	(void)state;

	env_init(&e);
	assert_int_equal(run(&e, argv), 1);
	assert_non_null(strstr(e.err, "missing Debian packages:"));
	assert_non_null(strstr(e.err, "libsqlite3-dev"));
	assert_non_null(strstr(e.err, "make deps-test"));
	assert_false(apt_get_ran(&e));
	tu_rmrf(e.dir);
}

static void make_stops_without_apt_get(void **state)
{
	struct env e = {0};
	char *argv[] = {"make", "-s", "need", NULL};
	(void)state;

	env_init(&e);
	assert_true(run(&e, argv) > 0);
	assert_non_null(strstr(e.err, "make deps"));
	assert_false(apt_get_ran(&e));
	tu_rmrf(e.dir);
}

/* The installing form does call apt-get (as root: CI and the README's
 * commands run as root), so the two tests above would see it. */
static void make_deps_form_installs(void **state)
{
	struct env e = {0};
	char *argv[] = {"sh", "scripts/install-deps.sh", "build", NULL};
	(void)state;

	if (geteuid() != 0)
		skip();
	env_init(&e);
	run(&e, argv);
	assert_true(apt_get_ran(&e));
	tu_rmrf(e.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_names_what_is_missing_and_installs_nothing),
		cmocka_unit_test(make_stops_without_apt_get),
		cmocka_unit_test(make_deps_form_installs),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
