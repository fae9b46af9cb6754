/*
 * test_lazylib.c - libcurl, libpq, libcrypto and libmicrohttpd are loaded
 * on first use (lazylib.c): the real binary ($SURECRON_BIN) runs with
 * LD_LIBRARY_PATH pointing at a folder whose libcurl.so.4, libpq.so.5,
 * libcrypto.so.3 and libmicrohttpd.so.12 are empty files, so dlopen of
 * them fails. Commands that need none still
 * work (the binary does not link them), a file delivery included; those
 * that need one fail with the clear error, not a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char tmp[256];
static char out[65536], err[65536];

static const char *path_in_tmp(const char *name)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	return path;
}

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(path_in_tmp(name), "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char cfg_fmt[] = "store: %s\n"
			      "schedules:\n"
			      "  a:\n"
			      "    cron: \"0 3 * * *\"\n"
			      "    tasks:\n"
			      "      - {name: t, command: [\"/bin/true\"]}\n";

static int setup(void **state)
{
	char cfg[512];

	snprintf(tmp, sizeof(tmp), "%s", tu_tmpdir());
	/* Empty files: dlopen says "file too short". */
	write_file("libcurl.so.4", "");
	write_file("libpq.so.5", "");
	write_file("libcrypto.so.3", "");
	write_file("libmicrohttpd.so.12", "");
	/* One schedule per target kind: a file (no key, no libcrypto) and a
	 * webhook (its Idempotency-Key is a SHA-256: libcrypto). */
	write_file("targets.yaml",
		   "store: sqlite:./t.db\n"
		   "targets:\n"
		   "  archive: {kind: file, path: ./out.jsonl}\n"
		   "  hook: {kind: webhook, url_env: SC_LAZY_HOOK_URL}\n"
		   "schedules:\n"
		   "  f:\n"
		   "    cron: \"0 3 * * *\"\n"
		   "    targets: [archive]\n"
		   "    tasks:\n"
		   "      - {name: t, command: [\"/bin/echo\", \"hi\"]}\n"
		   "  w:\n"
		   "    cron: \"0 3 * * *\"\n"
		   "    targets: [hook]\n"
		   "    retry: {attempts: 1, backoff: fixed, delay: 1m}\n"
		   "    tasks:\n"
		   "      - {name: t, command: [\"/bin/echo\", \"hi\"]}\n");
	/* Port 1: with a working libcurl the send is refused, never a
	 * load error. */
	setenv("SC_LAZY_HOOK_URL", "http://127.0.0.1:1/hook", 1);
	snprintf(cfg, sizeof(cfg), cfg_fmt, "sqlite:./s.db");
	write_file("sqlite.yaml", cfg);
	/* Port 1: nothing listens, so with a working libpq this is a
	 * connection error, never a load error. */
	snprintf(cfg, sizeof(cfg), cfg_fmt, "postgres://127.0.0.1:1/x");
	write_file("pg.yaml", cfg);
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(tmp);
	return 0;
}

/* Runs the binary in tmp with args (NULL-ended); broken: with the empty
 * libraries first on LD_LIBRARY_PATH. Fills out/err; returns the exit
 * status and fails the test if the child died of a signal. */
static int run(bool broken, const char *const *args)
{
	char lib[300];
	const char *env[] = {lib, NULL};

	if (broken)
		snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s", tmp);
	else
		snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH");
	int rc = tu_run_bin(tmp, tmp, env, args, out, sizeof(out), err,
			    sizeof(err));
	assert_true(rc >= 0);
	return rc;
}

/* The binary starts and a SQLite store works with the four libraries
 * broken: none is linked, none is loaded when not needed. */
static void sqlite_needs_neither(void **state)
{
	const char *trig[] = {"trigger", "--config", "sqlite.yaml", "a",
			      NULL};
	const char *args[] = {"status", "--config", "sqlite.yaml", NULL};

	/* trigger makes the store (status reads only one that exists). */
	assert_int_equal(run(true, trig), 0);
	assert_null(strstr(err, "could not be loaded"));
	assert_int_equal(run(true, args), 0);
	assert_non_null(strstr(out, "sqlite:"));
	assert_null(strstr(err, "could not be loaded"));
}

static void http_without_libcurl_fails_clearly(void **state)
{
	const char *args[] = {"http", "GET", "http://127.0.0.1:1/", NULL};

	assert_int_equal(run(true, args), 1);
	assert_non_null(strstr(err, "libcurl.so.4 could not be loaded: "));
	assert_non_null(strstr(err, "; install libcurl4"));
	/* The same request with the real libcurl gets to the network. */
	assert_int_equal(run(false, args), 75);
	assert_null(strstr(err, "could not be loaded"));
	assert_non_null(strstr(err, "connection refused"));
}

static void postgres_without_libpq_fails_clearly(void **state)
{
	const char *args[] = {"status", "--config", "pg.yaml", NULL};

	assert_int_equal(run(true, args), 1);
	assert_non_null(strstr(err, "libpq.so.5 could not be loaded: "));
	assert_non_null(strstr(err, "; install libpq5"));
	/* With the real libpq: loaded, then the connection is refused. */
	assert_int_equal(run(false, args), 1);
	assert_null(strstr(err, "could not be loaded"));
	assert_non_null(strstr(err, "cannot connect to PostgreSQL"));
}

/* A file delivery needs no idempotency key, so no libcrypto: the slot
 * runs and its result is written with every library broken. */
static void file_delivery_needs_no_libcrypto(void **state)
{
	const char *trig[] = {"trigger", "--config", "targets.yaml", "--slot",
			      "2026-11-27T03:00:00Z", "f", NULL};
	const char *once[] = {"run", "--once", "--config", "targets.yaml",
			      NULL};
	char got[4096];

	assert_int_equal(run(true, trig), 0);
	assert_int_equal(run(true, once), 0);
	assert_null(strstr(err, "could not be loaded"));
	tu_slurp(path_in_tmp("out.jsonl"), got, sizeof(got));
	assert_non_null(strstr(got, "\"kind\":\"result\",\"schedule\":\"f\""));
	assert_non_null(strstr(got, "\"summary\":\"hi\""));
}

/* A webhook delivery computes its Idempotency-Key: without libcrypto the
 * slot fails with the clear error (in the ledger), not a crash. */
static void webhook_without_libcrypto_fails_clearly(void **state)
{
	const char *trig[] = {"trigger", "--config", "targets.yaml", "--slot",
			      "2026-11-27T03:00:00Z", "w", NULL};
	const char *trig2[] = {"trigger", "--config", "targets.yaml", "--slot",
			       "2026-11-28T03:00:00Z", "w", NULL};
	const char *once[] = {"run", "--once", "--config", "targets.yaml",
			      NULL};
	const char *led[] = {"ledger", "--config", "targets.yaml",
			     "--schedule", "w", "--json", NULL};

	assert_int_equal(run(true, trig), 0);
	assert_int_equal(run(true, once), 1);
	assert_int_equal(run(true, led), 0);
	assert_non_null(strstr(out, "target hook: libcrypto.so.3 could not "
				    "be loaded: "));
	assert_non_null(strstr(out, "; install libssl3"));
	/* With the real libraries the key is computed and the send gets to
	 * the network (refused on port 1). */
	assert_int_equal(run(false, trig2), 0);
	assert_int_equal(run(false, once), 1);
	assert_int_equal(run(false, led), 0);
	char *second = strstr(out, "2026-11-28T03:00:00Z");
	assert_non_null(second);
	assert_non_null(strstr(out, "target hook: "));
	/* Only the first slot's row names the load error. */
	char *first_err = strstr(out, "could not be loaded");
	assert_non_null(first_err);
	assert_null(strstr(first_err + 1, "could not be loaded"));
}

/* The web surface (http: in the config) is the only user of
 * libmicrohttpd: without it the daemon refuses to start, saying which
 * library and package, and `run --once` (no server) still works above
 * (file_delivery_needs_no_libcrypto). */
static void web_without_libmicrohttpd_fails_clearly(void **state)
{
	write_file("web.yaml",
		   "store: sqlite:./w.db\n"
		   "http: {listen: \"127.0.0.1:1\"}\n"
		   "schedules:\n"
		   "  a:\n"
		   "    cron: \"0 3 1 1 *\"\n"
		   "    tasks:\n"
		   "      - {name: t, command: [\"/bin/true\"]}\n");
	/* Port 1 is never bound: the library is loaded first. */
	const char *args[] = {"run", "--config", "web.yaml", NULL};
	const char *st[] = {"status", "--config", "web.yaml", NULL};

	assert_int_not_equal(run(true, args), 0);
	assert_non_null(strstr(err, "libmicrohttpd.so.12 could not be "
				    "loaded: "));
	assert_non_null(strstr(err, "install libmicrohttpd12"));
	/* The commands that serve nothing never load it. */
	assert_int_equal(run(true, st), 0);
	assert_null(strstr(err, "could not be loaded"));
}

/* The URL rule needs libcurl (and the store rule libpq). Without them a
 * config still loads for commands that never send (status), and `check`,
 * which must apply every rule the run applies, says which URL it could
 * not check and why, instead of passing it. */
static void url_rule_without_the_libraries(void **state)
{
	write_file("urls.yaml",
		   "store: postgres://127.0.0.1:1/x\n"
		   "auth:\n"
		   "  api: {kind: bearer, token_env: SC_LAZY_TOKEN}\n"
		   "schedules:\n"
		   "  a:\n"
		   "    cron: \"0 3 * * *\"\n"
		   "    tasks:\n"
		   "      - {name: t, http: {url: \"https://127.0.0.1:1/x\", "
		   "auth: api}}\n");
	write_file("plain.yaml",
		   "auth:\n"
		   "  api: {kind: bearer, token_env: SC_LAZY_TOKEN}\n"
		   "schedules:\n"
		   "  a:\n"
		   "    cron: \"0 3 * * *\"\n"
		   "    tasks:\n"
		   "      - {name: t, http: {url: \"https://127.0.0.1:1/x\", "
		   "auth: api}}\n");
	const char *check[] = {"check", "--config", "urls.yaml", NULL};
	const char *status[] = {"status", "--config", "plain.yaml", NULL};
	const char *trig[] = {"trigger", "--config", "plain.yaml", "a", NULL};

	setenv("SC_LAZY_TOKEN", "x", 1);
	assert_int_equal(run(true, check), 2);
	assert_non_null(strstr(err, "schedules.a.tasks[0].http.url: "
				    "libcurl.so.4 could not be loaded: "));
	assert_non_null(strstr(err, "store: libpq.so.5 could not be loaded: "));
	assert_int_equal(run(true, trig), 0);
	assert_int_equal(run(true, status), 0);
	/* With the real libraries the same URLs pass. */
	assert_int_equal(run(false, check), 0);
	unsetenv("SC_LAZY_TOKEN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sqlite_needs_neither, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			http_without_libcurl_fails_clearly, setup, teardown),
		cmocka_unit_test_setup_teardown(
			postgres_without_libpq_fails_clearly, setup, teardown),
		cmocka_unit_test_setup_teardown(
			file_delivery_needs_no_libcrypto, setup, teardown),
		cmocka_unit_test_setup_teardown(
			webhook_without_libcrypto_fails_clearly, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			url_rule_without_the_libraries, setup, teardown),
		cmocka_unit_test_setup_teardown(
			web_without_libmicrohttpd_fails_clearly, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
