/*
 * failpoint.c - the test-build implementation of failpoint.h.
 *
 * The environment is read on every hit (not cached) so that a test may set
 * SURECRON_FAILPOINTS in a forked child after the library was loaded.
 * Hit counters are per process and atomic, so "name@N" is exact even when
 * several threads pass the point. The hook of FAILPOINT_HOOK is one
 * process-wide pointer, set by a test while it is alone.
 */
#ifdef SURECRON_FAILPOINTS
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "failpoint.h"

#define MAX_POINTS 64

static struct {
	const char *name;
	atomic_long hits;
} counters[MAX_POINTS];
static atomic_int n_counters;

static long count_hit(const char *name)
{
	int n = atomic_load(&n_counters);

	for (int i = 0; i < n; i++)
		if (counters[i].name == name || strcmp(counters[i].name, name) == 0)
			return atomic_fetch_add(&counters[i].hits, 1) + 1;
	int i = atomic_fetch_add(&n_counters, 1);
	if (i >= MAX_POINTS)
		return 1;
	counters[i].name = name;
	return atomic_fetch_add(&counters[i].hits, 1) + 1;
}

/* Finds name in the list; *suffix gets what follows it (":err", "@3"). */
static bool listed(const char *name, const char **suffix)
{
	const char *list = getenv("SURECRON_FAILPOINTS");
	size_t n = strlen(name);

	if (!list)
		return false;
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len >= n && strncmp(p, name, n) == 0 &&
		    (len == n || p[n] == ':' || p[n] == '@')) {
			*suffix = p + n;
			return true;
		}
		p += len + (end ? 1 : 0);
	}
	return false;
}

static bool due(const char *name, const char *suffix)
{
	long hit = count_hit(name);

	if (*suffix == '@')
		return hit == strtol(suffix + 1, NULL, 10);
	return true;
}

void failpoint_kill(const char *name)
{
	const char *suffix;

	/* ":err" and ":stall" are the other kinds: never a kill. */
	if (!listed(name, &suffix) || *suffix == ':')
		return;
	if (due(name, suffix))
		kill(getpid(), SIGKILL);
}

static failpoint_hook_fn hook_fn;
static void *hook_ud;

void failpoint_set_hook(failpoint_hook_fn fn, void *ud)
{
	hook_fn = fn;
	hook_ud = ud;
}

void failpoint_hook(const char *name)
{
	if (hook_fn)
		hook_fn(name, hook_ud);
}

bool failpoint_err(const char *name)
{
	const char *suffix;

	if (!listed(name, &suffix) || strncmp(suffix, ":err", 4) != 0)
		return false;
	return due(name, suffix + 4);
}

void failpoint_stall(const char *name)
{
	const char *suffix, *file = getenv("SURECRON_FAILPOINT_STALL");
	char hit[4096];

	if (!file || !*file || !listed(name, &suffix) ||
	    strncmp(suffix, ":stall", 6) != 0 || !due(name, suffix + 6))
		return;
	/* Tell the test where the thread is, then hold it there. */
	snprintf(hit, sizeof(hit), "%s.hit", file);
	int fd = open(hit, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	while (access(file, F_OK) == 0) {
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
}
#else
/* ISO C forbids an empty translation unit. */
typedef int failpoint_unused;
#endif
