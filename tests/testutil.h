/*
 * testutil.h - helpers shared by the cmocka suites (header-only).
 *
 * Include after <cmocka.h>'s prerequisites. Each suite gets a fresh temp
 * folder per test from tu_tmpdir(); tu_rmrf removes it afterwards.
 */
#ifndef SC_TESTUTIL_H
#define SC_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Creates a fresh folder under $TMPDIR (or /tmp) and returns its path, a
 * static buffer overwritten by the next call. */
static inline const char *tu_tmpdir(void)
{
	static char path[256];
	const char *base = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/surecron-test-XXXXXX",
		 base ? base : "/tmp");
	if (!mkdtemp(path)) {
		perror("mkdtemp");
		exit(1);
	}
	return path;
}

/* Removes a folder tree made by a test. */
static inline void tu_rmrf(const char *path)
{
	char cmd[512];

	if (!path || strncmp(path, "/tmp/", 5) != 0)
		return; /* never remove anything outside /tmp */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", path);
}

/* The path of the surecron binary under test (set by tests/run.sh). */
static inline const char *tu_bin(void)
{
	const char *b = getenv("SURECRON_BIN");
	return b ? b : "build/test/surecron";
}

#endif
