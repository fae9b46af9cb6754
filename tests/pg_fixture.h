/*
 * pg_fixture.h - a PostgreSQL server and a fresh schema per test, for the
 * suites that need PostgreSQL itself (header-only; include after
 * <cmocka.h> and testutil.h).
 *
 * The server: SURECRON_TEST_PG when set (`make test` runs every suite
 * under `tests/pg_server.sh run`, which sets it and SURECRON_TEST_PG_DIR),
 * else a throw-away one started here with tests/pg_server.sh in a temp
 * folder and stopped by pgfx_group_teardown. Without either (no PostgreSQL
 * installed) pgfx_url() is "" and tests skip with PGFX_NEED_SERVER().
 * pgfx_restartable() says whether the server is a throw-away one that a
 * test may stop and start (pgfx_server("stop"/"start")).
 *
 * Each test gets a fresh schema, selected for every connection of the
 * process and its children through PGOPTIONS (search_path), and dropped
 * afterwards, so tests never see each other's rows.
 */
#ifndef SURECRON_PG_FIXTURE_H
#define SURECRON_PG_FIXTURE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char pgfx_url_buf[512]; /* the server; "" when none */
static char pgfx_dir[256];     /* a throw-away server's folder, else "" */
static bool pgfx_own;          /* started here: stop and remove at the end */
static char pgfx_schema[64];   /* this test's schema */

static inline const char *pgfx_url(void)
{
	return pgfx_url_buf;
}

static inline bool pgfx_restartable(void)
{
	return pgfx_dir[0] != '\0';
}

#define PGFX_NEED_SERVER()                                                 \
	do {                                                               \
		if (!pgfx_url()[0])                                        \
			skip();                                            \
	} while (0)

/* Runs `tests/pg_server.sh verb DIR`; its first output line goes to out. */
static inline int pgfx_server(const char *verb, char *out, size_t n)
{
	char cmd[512], line[512] = "";

	snprintf(cmd, sizeof(cmd), "SC_PG_FSYNC=off sh tests/pg_server.sh %s "
		 "'%s' 2>/dev/null", verb, pgfx_dir);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	int rc = pclose(f);
	line[strcspn(line, "\n")] = '\0';
	if (out)
		snprintf(out, n, "%s", line);
	return rc;
}

static inline int pgfx_group_setup(void **state)
{
	const char *env = getenv("SURECRON_TEST_PG");

	(void)state;
	if (env && *env) {
		const char *dir = getenv("SURECRON_TEST_PG_DIR");
		snprintf(pgfx_url_buf, sizeof(pgfx_url_buf), "%s", env);
		snprintf(pgfx_dir, sizeof(pgfx_dir), "%s", dir ? dir : "");
		return 0;
	}
	if (access("tests/pg_server.sh", R_OK) != 0)
		return 0;
	snprintf(pgfx_dir, sizeof(pgfx_dir), "%s", tu_tmpdir());
	pgfx_own = true;
	if (pgfx_server("start", pgfx_url_buf, sizeof(pgfx_url_buf)) != 0 ||
	    strncmp(pgfx_url_buf, "postgresql://", 13) != 0) {
		fprintf(stderr, "pg_fixture: no server could be started\n");
		pgfx_url_buf[0] = '\0';
	}
	return 0;
}

static inline int pgfx_group_teardown(void **state)
{
	(void)state;
	if (pgfx_own) {
		pgfx_server("stop", NULL, 0);
		tu_rmrf(pgfx_dir);
	}
	return 0;
}

static inline void pgfx_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* Runs q on a connection of its own (in this test's schema); fails the
 * test on an error. PQclear the result. */
static inline PGresult *pgfx_sql(const char *q)
{
	PGconn *c = PQconnectdb(pgfx_url());
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQsetNoticeProcessor(c, pgfx_quiet, NULL);
	PGresult *r = PQexec(c, q);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", q, PQresultErrorMessage(r));
	PQfinish(c);
	return r;
}

/* The first column of the first row as an integer; -1 when no row. */
static inline int64_t pgfx_int(const char *q)
{
	PGresult *r = pgfx_sql(q);
	int64_t v = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
	PQclear(r);
	return v;
}

static inline int pgfx_setup(void **state)
{
	static int seq;
	char q[128];

	(void)state;
	if (!pgfx_url()[0])
		return 0;
	snprintf(pgfx_schema, sizeof(pgfx_schema), "t_%d_%d", (int)getpid(),
		 ++seq);
	unsetenv("PGOPTIONS");
	snprintf(q, sizeof(q), "CREATE SCHEMA %s", pgfx_schema);
	PQclear(pgfx_sql(q));
	snprintf(q, sizeof(q), "-c search_path=%s", pgfx_schema);
	setenv("PGOPTIONS", q, 1);
	return 0;
}

static inline int pgfx_teardown(void **state)
{
	char q[128];

	(void)state;
	if (!pgfx_url()[0] || !pgfx_schema[0])
		return 0;
	snprintf(q, sizeof(q), "DROP SCHEMA %s CASCADE", pgfx_schema);
	unsetenv("PGOPTIONS");
	PQclear(pgfx_sql(q));
	pgfx_schema[0] = '\0';
	return 0;
}

#endif
