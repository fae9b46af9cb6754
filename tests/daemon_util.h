/*
 * daemon_util.h - helpers for the suites that run real surecron processes
 * against a real store: real-time waits, a child's exit, the store and its
 * ledger as the test sees them. Header-only (static inline), included by
 * each suite after cmocka.h; a failed store call fails the test.
 */
#ifndef SURECRON_TESTS_DAEMON_UTIL_H
#define SURECRON_TESTS_DAEMON_UTIL_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "surecron.h"
#include "testutil.h"

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

/* How tu_start_daemon wires the child. */
enum {
	TU_STDOUT_TO_LOG = 1, /* stdout to daemon.log too (else /dev/null) */
	TU_ONLY_STDIO = 2,    /* close every descriptor above 2, as a
				 service manager would */
	TU_FDS_32 = 4,        /* TU_ONLY_STDIO, and `ulimit -n 32`: the
				 runner's own exhaustion (issue 42) */
};

/*
 * Starts `surecron run --config cfg` in dir, stderr appended to
 * dir/daemon.log (0600), stdin from /dev/null, with the "K=V" strings of
 * envs (NULL-ended, may be NULL) added to its environment. Returns the
 * child's pid; the caller reaps it.
 */
static inline pid_t tu_start_daemon(const char *dir, const char *cfg,
				    const char *const *envs, int flags)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid != 0)
		return pid;
	char log[512];
	snprintf(log, sizeof(log), "%s/daemon.log", dir);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	int nul = open("/dev/null", O_RDWR);
	if (fd >= 0)
		dup2(fd, 2);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
	}
	if ((flags & TU_STDOUT_TO_LOG) && fd >= 0)
		dup2(fd, 1);
	if (fd >= 0)
		close(fd);
	if (nul >= 0)
		close(nul);
	if (flags & (TU_ONLY_STDIO | TU_FDS_32))
		for (int k = 3; k < 1024; k++)
			close(k);
	if (flags & TU_FDS_32) {
		struct rlimit rl = {.rlim_cur = 32, .rlim_max = 32};
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(127);
	}
	if (chdir(dir) != 0)
		_exit(127);
	for (size_t i = 0; envs && envs[i]; i++)
		putenv((char *)envs[i]);
	execl(tu_bin(), tu_bin(), "run", "--config", cfg, (char *)NULL);
	_exit(127);
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
static inline struct store *tu_store_open(const char *url)
{
	struct store *s = NULL;
	struct sc_err err = {0};

	assert_int_equal(store_open(url, sc_clock_real(), &s, &err), 0);
	return s;
}

/* Ledger rows of schedule (NULL: all) with outcome (NULL: any). */
static inline size_t tu_ledger_count(const char *url, const char *schedule,
				     const char *outcome)
{
	struct store *s = tu_store_open(url);
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	store_close(s);
	return n;
}

/* The success rows of schedule: their count, and the first and last slot
 * (INT64_MAX and INT64_MIN when there is none). */
static inline size_t tu_success_span(struct store *s, const char *schedule,
				     int64_t *first, int64_t *last)
{
	struct ledger_filter f = {.schedule = schedule, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX,
				  .outcome = LEDGER_SUCCESS};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	*first = INT64_MAX;
	*last = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		*first = rows[i].slot_ms < *first ? rows[i].slot_ms : *first;
		*last = rows[i].slot_ms > *last ? rows[i].slot_ms : *last;
	}
	store_ledger_rows_free(rows, n);
	return n;
}

/*
 * The daemons a suite started, so a test's teardown can kill what a
 * failed assertion left running (a static per suite: each suite is one
 * translation unit). tu_track records one; tu_reap_all kills and reaps
 * every one still running and forgets them all.
 */
static pid_t tu_pids[16];
static size_t tu_n_pids;

static inline pid_t tu_track(pid_t pid)
{
	if (tu_n_pids < sizeof(tu_pids) / sizeof(tu_pids[0]))
		tu_pids[tu_n_pids++] = pid;
	return pid;
}

static inline void tu_reap_all(void)
{
	for (size_t i = 0; i < tu_n_pids; i++)
		if (tu_pids[i] > 0 && waitpid(tu_pids[i], NULL, WNOHANG) == 0) {
			kill(tu_pids[i], SIGKILL);
			waitpid(tu_pids[i], NULL, 0);
		}
	tu_n_pids = 0;
}

/* SIGTERM, then up to timeout_ms for the exit; SIGKILL after that.
 * Returns whether it stopped on SIGTERM. */
static inline bool tu_stop_daemon(pid_t pid, int64_t timeout_ms)
{
	kill(pid, SIGTERM);
	if (tu_wait_exit(pid, timeout_ms) != -1)
		return true;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return false;
}

/* Lines of dir/daemon.log (tu_start_daemon's) holding needle. */
static inline size_t tu_log_count(const char *dir, const char *needle)
{
	char p[512], line[8192];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/daemon.log", dir);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Waits up to ms for at least n such lines. */
static inline bool tu_wait_log(const char *dir, const char *needle, size_t n,
			       int64_t ms)
{
	int64_t end = tu_now_ms() + ms;

	while (tu_log_count(dir, needle) < n) {
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(10);
	}
	return true;
}

#endif
