/*
 * store_backend.h - runs one store/queue test suite against every backend
 * (header-only; include after <cmocka.h> and testutil.h).
 *
 * A test reads its store URL from tb_url(state) and nothing else, so the
 * same test body runs on SQLite and on PostgreSQL:
 *   - sqlite: a fresh file in a fresh temp folder per test;
 *   - postgresql: when SURECRON_TEST_PG holds a URL, a fresh schema per
 *     test in that database (search_path set through the URL's `options`),
 *     dropped afterwards. When the library has no PostgreSQL backend yet,
 *     or the server is unreachable, each test of that run is skipped.
 * tb_run_all() runs the group once per backend and sums the failures.
 */
#ifndef SURECRON_STORE_BACKEND_H
#define SURECRON_STORE_BACKEND_H

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "testutil.h"

struct tb {
	bool is_pg;
	char dir[256];     /* sqlite: the temp folder */
	char url[1024];    /* what store_open gets */
	char schema[64];   /* postgresql: the per-test schema */
	const char *base;  /* postgresql: SURECRON_TEST_PG */
};

static struct tb tb_sqlite_state, tb_pg_state;

/* Takes a store of schema 13 back to 8, for the migration tests that
 * start from an older one. Both: cron_history and ledger_abandoned (13)
 * out (SQLite's outbox keeps 13's CHECK, which takes every older state);
 * nodes (11) out; ledger_head (9, with 10's columns) out. SQLite:
 * ledger_day out, the two per-schedule indexes back. PostgreSQL:
 * ledger_head's trigger and function out. */
#define TB_UNDO_13 "DROP TABLE cron_history; DROP INDEX ledger_abandoned; "
#define TB_SQLITE_UNDO_9                                                  \
	TB_UNDO_13                                                           \
	"DROP TABLE nodes; "                                                 \
	"DROP TRIGGER ledger_head_new; DROP TABLE ledger_head; "             \
	"DROP INDEX ledger_day; "                                            \
	"CREATE INDEX ledger_schedule ON ledger(schedule, slot_ms); "         \
	"CREATE INDEX ledger_ok ON ledger(schedule, slot_ms) WHERE "         \
	"outcome = 'success'; PRAGMA user_version = 8"
#define TB_PG_UNDO_9                                                      \
	TB_UNDO_13                                                           \
	"DROP TABLE nodes; "                                                 \
	"DROP TRIGGER ledger_head_new ON ledger; "                           \
	"DROP FUNCTION ledger_head_new(); DROP TABLE ledger_head; "          \
	"UPDATE schema_version SET version = 8"
#define TB_UNDO_9(state)                                                  \
	(tb_is_sqlite(state) ? TB_SQLITE_UNDO_9 : TB_PG_UNDO_9)

static inline const char *tb_url(void **state)
{
	return ((struct tb *)*state)->url;
}

static inline const char *tb_dir(void **state)
{
	return ((struct tb *)*state)->dir;
}

static inline bool tb_is_sqlite(void **state)
{
	return !((struct tb *)*state)->is_pg;
}

/* The sqlite file of this test (only meaningful on sqlite). */
static inline const char *tb_path(void **state)
{
	const char *u = tb_url(state);
	return strncmp(u, "sqlite:", 7) == 0 ? u + 7 : u;
}

static inline int tb_setup_sqlite(void **state)
{
	struct tb *b = &tb_sqlite_state;

	memset(b, 0, sizeof(*b));
	snprintf(b->dir, sizeof(b->dir), "%s", tu_tmpdir());
	snprintf(b->url, sizeof(b->url), "sqlite:%.200s/surecron.db", b->dir);
	*state = b;
	return 0;
}

static inline int tb_teardown_sqlite(void **state)
{
	tu_rmrf(((struct tb *)*state)->dir);
	return 0;
}

static inline void tb_pg_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* Runs one SQL command on the PostgreSQL server; 0 on success. Server
 * notices (DROP ... CASCADE lists every table) are not printed. */
static inline int tb_pg_exec(const char *base, const char *sql)
{
	PGconn *c = PQconnectdb(base);
	int rc = -1;

	if (PQstatus(c) == CONNECTION_OK) {
		PQsetNoticeProcessor(c, tb_pg_quiet, NULL);
		PGresult *r = PQexec(c, sql);
		rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
		PQclear(r);
	}
	PQfinish(c);
	return rc;
}

static inline int tb_setup_pg(void **state)
{
	static int n;
	struct tb *b = &tb_pg_state;
	char sql[128];

	memset(b, 0, sizeof(*b));
	b->is_pg = true;
	b->base = getenv("SURECRON_TEST_PG");
	snprintf(b->schema, sizeof(b->schema), "sc_test_%d_%d", (int)getpid(),
		 ++n);
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", b->schema);
	if (!b->base || tb_pg_exec(b->base, sql) != 0) {
		b->url[0] = '\0'; /* tests skip */
	} else {
		snprintf(b->url, sizeof(b->url),
			 "%s%soptions=-csearch_path%%3D%s", b->base,
			 strchr(b->base, '?') ? "&" : "?", b->schema);
	}
	*state = b;
	return 0;
}

static inline int tb_teardown_pg(void **state)
{
	struct tb *b = *state;
	char sql[128];

	if (b->url[0]) {
		snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", b->schema);
		(void)tb_pg_exec(b->base, sql);
	}
	return 0;
}

/*
 * Opens the store of this test; on PostgreSQL, skips the test when the
 * server or the backend is not there. Fails the test on any other error.
 */
static inline struct store *tb_open(void **state, struct sc_clock *clock)
{
	struct store *s = NULL;
	struct sc_err err = {0};
	int rc;

	if (((struct tb *)*state)->is_pg && !tb_url(state)[0])
		skip();
	rc = store_open(tb_url(state), clock, &s, &err);
	if (rc && ((struct tb *)*state)->is_pg &&
	    strstr(err.msg, "not built in"))
		skip();
	if (rc)
		fail_msg("store_open(%s): %s", tb_url(state), err.msg);
	return s;
}

/*
 * Runs tests[] once per backend: wraps every test with the backend's
 * setup/teardown. Returns the number of failures.
 */
static inline int tb_run_all(const char *suite, struct CMUnitTest *tests,
			     size_t n)
{
	char name[128];
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = tb_setup_sqlite;
		tests[i].teardown_func = tb_teardown_sqlite;
	}
	snprintf(name, sizeof(name), "%s/sqlite", suite);
	failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = tb_setup_pg;
		tests[i].teardown_func = tb_teardown_pg;
	}
	snprintf(name, sizeof(name), "%s/postgresql", suite);
	return failed + _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}

#endif
