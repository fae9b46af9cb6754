/*
 * daemon_util.h - helpers for the suites that run real surecron processes
 * against a real store: real-time waits, a child's exit, the store and its
 * ledger as the test sees them. Header-only (static inline), included by
 * each suite after cmocka.h; a failed store call fails the test.
 */
#ifndef SC_TESTS_DAEMON_UTIL_H
#define SC_TESTS_DAEMON_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "store.h"
#include "surecron.h"

static inline int64_t tu_now_ms(void)
{
	return sc_clock_now_ms(sc_clock_real());
}

static inline void tu_sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits up to timeout_ms for pid to exit; returns its status or -1. */
static inline int tu_wait_exit(pid_t pid, int64_t timeout_ms)
{
	int64_t end = tu_now_ms() + timeout_ms;
	int st;

	while (tu_now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		tu_sleep_ms(10);
	}
	return -1;
}

/* The store at url on the real clock; close with store_close. */
static inline struct sc_store *tu_store_open(const char *url)
{
	struct sc_store *s = NULL;
	struct sc_err err = {0};

	assert_int_equal(store_open(url, sc_clock_real(), &s, &err), 0);
	return s;
}

/* Ledger rows of schedule (NULL: all) with outcome (NULL: any). */
static inline size_t tu_ledger_count(const char *url, const char *schedule,
				     const char *outcome)
{
	struct sc_store *s = tu_store_open(url);
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(ledger_query(s, &f, &rows, &n, NULL), 0);
	ledger_rows_free(rows, n);
	store_close(s);
	return n;
}

#endif
