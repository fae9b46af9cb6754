/*
 * testutil.h - helpers shared by the cmocka suites (header-only).
 *
 * Include after <cmocka.h>'s prerequisites. Each suite gets a fresh temp
 * folder per test from tu_tmpdir(); tu_rmrf removes it afterwards.
 */
#ifndef SURECRON_TESTUTIL_H
#define SURECRON_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * TU_NEED_TEST_SEAMS(): the first line of a test that needs what only a
 * test build compiles (-DSURECRON_FAILPOINTS: the failpoints of
 * failpoint.h, the SURECRON_TEST_CLOCK seam of `surecron run`). In a
 * release-like build (make test-release) the test is skipped, counted as
 * skipped, with the reason on stderr. Needs <cmocka.h> at the use site.
 */
#ifdef SURECRON_FAILPOINTS
#define TU_NEED_TEST_SEAMS() ((void)0)
#else
#define TU_NEED_TEST_SEAMS()                                               \
	do {                                                               \
		fprintf(stderr, "skipped: needs a test build's seams "    \
			"(failpoints, SURECRON_TEST_CLOCK); this build "   \
			"has none\n");                                     \
		skip();                                                    \
	} while (0)
#endif

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

/* CPU time this thread has used, in ms. A cost bound measured on it does
 * not move when other processes load the machine, as a wall-clock one
 * does; use it for work that is all computation (parsing, planning). */
static inline int64_t tu_thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* Reads a file into buf (size n), NUL-terminated and truncated to fit;
 * an unreadable file reads as "". */
static inline void tu_slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "rb");
	size_t got = 0;

	if (f) {
		got = fread(buf, 1, n - 1, f);
		fclose(f);
	}
	buf[got] = '\0';
}

/*
 * Runs the surecron binary under test with args (NULL-ended), in folder
 * cwd (NULL: this one), with the entries of env (NULL-ended, may be NULL)
 * applied in the child only: "K=V" sets K, a bare "K" unsets it. Its
 * stdout and stderr go through files in the folder scratch and are read
 * back into out and err. Returns the exit status, or -1 when the child
 * could not be started or died of a signal.
 */
static inline int tu_run_bin(const char *scratch, const char *cwd,
			     const char *const *env, const char *const *args,
			     char *out, size_t n_out, char *err, size_t n_err)
{
	char op[PATH_MAX], ep[PATH_MAX], bin[PATH_MAX];
	char *argv[32];
	int n = 0, st;

	snprintf(op, sizeof(op), "%s/.out", scratch);
	snprintf(ep, sizeof(ep), "%s/.err", scratch);
	/* Absolute, since the child may change folder first. */
	if (!realpath(tu_bin(), bin))
		return -1;
	argv[n++] = bin;
	for (; args[n - 1] && n < 31; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;

	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fo = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(127);
		for (size_t i = 0; env && env[i]; i++) {
			char kv[PATH_MAX];
			snprintf(kv, sizeof(kv), "%s", env[i]);
			char *eq = strchr(kv, '=');
			if (eq) {
				*eq = '\0';
				setenv(kv, eq + 1, 1);
			} else {
				unsetenv(kv);
			}
		}
		if (cwd && chdir(cwd) != 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	tu_slurp(op, out, n_out);
	tu_slurp(ep, err, n_err);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Makes a self-signed EC certificate for 127.0.0.1 (two days) with the
 * openssl tool: dir/cert.pem and dir/key.pem, their paths in cert and key.
 * False when the tool is missing or fails (the caller skips TLS).
 */
static inline bool tu_self_signed(const char *dir, char *cert, size_t n_cert,
				  char *key, size_t n_key)
{
	char cmd[1024];

	snprintf(cert, n_cert, "%s/cert.pem", dir);
	snprintf(key, n_key, "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt "
		 "ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "
		 "/CN=localhost -addext subjectAltName=IP:127.0.0.1 "
		 "-keyout %s -out %s >/dev/null 2>&1", key, cert);
	return system(cmd) == 0;
}

/* Reads /proc/PID/what into buf (NUL-terminated); the bytes read, or -1
 * when the file cannot be opened (the process is gone). */
static inline long tu_proc_read(pid_t pid, const char *what, char *buf,
				size_t n)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	f = fopen(path, "r");
	if (!f)
		return -1;
	size_t got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = '\0';
	return (long)got;
}

/* True when pid is gone or a zombie (no longer running). */
static inline bool tu_pid_gone(pid_t pid)
{
	char buf[512];
	long n = tu_proc_read(pid, "stat", buf, sizeof(buf));

	if (n < 0)
		return true;
	const char *rp = strrchr(buf, ')');
	return n > 0 && rp && (rp[2] == 'Z' || rp[2] == 'X');
}

/* pid runs (not a zombie) and its command line holds marker: the helper a
 * test script started, not an unrelated process that got its pid. */
static inline bool tu_helper_runs(pid_t pid, const char *marker)
{
	char cmd[512];
	long n;

	if (pid <= 0 || tu_pid_gone(pid))
		return false;
	n = tu_proc_read(pid, "cmdline", cmd, sizeof(cmd));
	for (long i = 0; i < n; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	return n > 0 && strstr(cmd, marker) != NULL;
}

/*
 * Polls until neither helper (a setsid one, h1 with marker m1, and a
 * double-forked one, h2 with m2) runs, 5 s at most (a SIGKILL is acted on
 * the next time the kernel schedules the process); says which survived
 * `after` what, and kills them so a failing run leaves nothing behind.
 * True when both were gone.
 */
static inline bool tu_helpers_gone(pid_t h1, const char *m1, pid_t h2,
				   const char *m2, const char *after)
{
	struct timespec now;
	int64_t end;
	bool a1, a2;

	clock_gettime(CLOCK_MONOTONIC, &now);
	end = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 5000;
	for (;;) {
		a1 = tu_helper_runs(h1, m1);
		a2 = tu_helper_runs(h2, m2);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((!a1 && !a2) ||
		    (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= end)
			break;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (a1 || a2)
		printf("alive after the %s: setsid helper %s, "
		       "double-forked helper %s\n", after, a1 ? "yes" : "no",
		       a2 ? "yes" : "no");
	if (a1)
		kill(h1, SIGKILL);
	if (a2)
		kill(h2, SIGKILL);
	return !a1 && !a2;
}

#endif
