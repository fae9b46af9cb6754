/*
 * proc.h - run a child process without a shell, with a deadline, capped
 * output and the tail of its stderr (used by command tasks and command
 * targets).
 *
 * The child runs in a process group of its own under a per-run reaper
 * process that is a child subreaper: whatever the child starts stays under
 * that reaper even when it leaves the group (setsid, setpgid) and its
 * parent exits (a double fork). A timeout or an output overflow SIGTERMs
 * the group, then kills everything under the reaper; when the child exits,
 * everything left under the reaper is killed too. A task's helpers never
 * outlive the task, and the run never waits for an escaped helper that
 * holds its stdout.
 *
 * Thread-safety: proc_run may be called from several threads at once; each
 * run starts its own reaper (forked by the launcher when one runs, else a
 * posix_spawn of the program set with proc_set_reaper_exe, else a fork
 * that makes only system calls before it exits, safe in a fork of a
 * threaded process), and changes no
 * process-wide state of the host (no signal dispositions, no environment,
 * no subreaper flag: the host reaps nothing but its own reapers).
 */
#ifndef SURECRON_PROC_H
#define SURECRON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "surecron.h"

#define PROC_TAIL_MAX 2048 /* bytes of stderr kept (the last ones) */

struct proc_spec {
	char *const *argv;      /* NULL-terminated; argv[0] searched in PATH */
	char *const *envp;      /* the full environment of the child */
	const char *cwd;        /* NULL: the caller's */
	const char *stdin_data; /* NULL: stdin is /dev/null */
	size_t stdin_len;
	int64_t timeout_ms;     /* <= 0: no deadline */
	int64_t grace_ms;       /* SIGTERM -> SIGKILL delay after a timeout */
	size_t max_stdout;      /* more than this ends the child */
	/* Called every tick_ms while the child runs (from this thread), e.g.
	 * to extend a job's lease. A non-zero return ends the child's group
	 * at once (res->canceled); SC_ESTATE (the job was replaced by a
	 * newer slot) ends it as a timeout does: SIGTERM, then SIGKILL
	 * after grace_ms. NULL: no ticks. */
	int (*tick)(void *ud);
	void *tick_ud;
	int64_t tick_ms;
	/* Clock that stamps res->started_ns; NULL: the real clock. */
	const struct sc_clock *clock;
	/* 0: start the program at once. Else the CLOCK_MONOTONIC instant
	 * (ns) to start it at, never before: the run is handed to its
	 * reaper now and the reaper starts the program at that instant by
	 * its own timer, so the hand-over is not part of the program's
	 * lateness. A start more than a second off, or without the
	 * launcher (proc_launcher_start), is waited for in proc_run before
	 * the hand-over. proc_run does not tick (tick) during that wait. */
	int64_t start_mono_ns;
};

struct proc_result {
	bool exited;            /* true: exit_code is valid */
	int exit_code;
	int term_signal;        /* the signal that ended it, else 0 */
	bool timed_out;         /* the deadline passed: the group was ended */
	bool stdout_overflow;   /* it wrote more than max_stdout */
	bool canceled;          /* tick asked to stop: the group was ended */
	struct buf out;         /* stdout (at most max_stdout bytes) */
	char err_tail[PROC_TAIL_MAX + 1]; /* last bytes of stderr, NUL-ended */
	int64_t elapsed_ms;
	int64_t started_ns;     /* spec->clock's UTC ns when the program was
				   exec'd (the reaper's posix_spawn returned,
				   stamped by the reaper); 0 if not */
};

/*
 * Runs spec to completion and fills *res (initialised here; release it
 * with proc_result_dispose, also after a failure).
 * Returns 0 when the child ran (whatever its exit status: read *res), or
 * an error when it could not be started: SC_ENOENT (no such program),
 * SC_EACCES, SC_ENOMEM, SC_EIO. Blocks until the child and its group are
 * gone.
 */
int proc_run(const struct proc_spec *spec, struct proc_result *res,
	     struct sc_err *err);

/* The argument that makes a program run proc_reaper_exec_main. */
#define PROC_REAPER_ARG "__surecron_reaper"

/*
 * Makes every later proc_run start its reaper by posix_spawn of path (a
 * program whose main hands PROC_REAPER_ARG to proc_reaper_exec_main, e.g.
 * "/proc/self/exe" in the surecron binary) instead of by fork: a fork
 * copies the page tables of the whole host and makes it fault on every
 * page it writes while the run lasts, which a large (or ASan) daemon
 * feels. NULL or "" goes back to fork. Call it before any thread runs.
 */
void proc_set_reaper_exe(const char *path);

/* The reaper program's main (see proc_set_reaper_exe); never returns on
 * a good argv. */
int proc_reaper_exec_main(int argc, char **argv);

/* The argument that makes a program run proc_launcher_exec_main. */
#define PROC_LAUNCHER_ARG "__surecron_launcher"

/*
 * Starts the launcher: the reaper program (proc_set_reaper_exe, which
 * must be set) run once more as PROC_LAUNCHER_ARG, a small
 * single-threaded process that forks a reaper for each later proc_run,
 * so that a run costs a fork of a small process instead of a program
 * start (under a burst of runs, most of a run's CPU). A launcher that is
 * gone (killed) makes proc_run start its reapers as before; one that is
 * stopped makes a run fail after 10 s instead of hanging it. Call it
 * before the threads that call proc_run; a second call does nothing.
 * Returns 0, SC_EINVAL (no reaper program), SC_EIO or SC_ENOMEM.
 */
int proc_launcher_start(struct sc_err *err);

/* Ends the launcher (end of file on its socket) and reaps it, after the
 * last proc_run returned. Nothing when none was started. */
void proc_launcher_stop(void);

/* The launcher's pid while proc_run uses it, else -1 (tests). */
pid_t proc_launcher_pid(void);

/* The launcher program's main (fd 3: its socket); returns at the end of
 * file on it. */
int proc_launcher_exec_main(int argc, char **argv);

/* Frees the captured output. NULL is ignored. */
void proc_result_dispose(struct proc_result *res);

/*
 * Builds an environment: the process's own, with each "KEY=VALUE" of set
 * (NULL-terminated, may be NULL) replacing or adding its key; later
 * entries of set win over earlier ones. The array is allocated, its
 * strings are borrowed (from environ and set): free the array with free()
 * and do not use it after either source changes. NULL on out of memory.
 */
char **proc_env_build(char *const *set);

/*
 * Copies the last lines of a stderr tail into out (size n), joined with
 * " | ", trimmed, at most n-1 bytes (the end is kept). Returns out.
 */
const char *proc_tail_summary(const char *tail, char *out, size_t n);

#endif
