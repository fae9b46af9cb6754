/*
 * daemon_stores.h - the fixtures of a daemon suite whose tests run on
 * SQLite and again on the PostgreSQL of pg_fixture.h: which store the
 * running test is on (ds_pg), that store's URL, and the cmocka setups
 * and teardown. The teardown kills and reaps the daemons a failed
 * assertion left running (tu_reap_all) before it drops the test's
 * schema. Header-only (static inline), included by each suite after
 * daemon_util.h and pg_fixture.h.
 */
#ifndef SURECRON_TESTS_DAEMON_STORES_H
#define SURECRON_TESTS_DAEMON_STORES_H

#include <stdbool.h>
#include <stdio.h>

#include "daemon_util.h"
#include "pg_fixture.h"

static bool ds_pg; /* the running test's store is PostgreSQL */

static inline int ds_sqlite_setup(void **state)
{
	(void)state;
	ds_pg = false;
	return 0;
}

static inline int ds_pg_setup(void **state)
{
	ds_pg = true;
	return pgfx_setup(state);
}

static inline int ds_teardown(void **state)
{
	tu_reap_all();
	return ds_pg ? pgfx_teardown(state) : 0;
}

/* The running test's store for the folder dir, into url (n bytes): a
 * SQLite file in dir, or the fixture's server (the test is skipped when
 * there is none). */
static inline const char *ds_store_url(const char *dir, char *url, size_t n)
{
	if (ds_pg) {
		PGFX_NEED_SERVER();
		snprintf(url, n, "%s", pgfx_url());
	} else {
		snprintf(url, n, "sqlite:%s/s.db", dir);
	}
	return url;
}

#endif
