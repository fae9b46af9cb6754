/*
 * proc.c - child processes for command tasks and command targets.
 *
 * Every run has a reaper: a process that serves one run at a time
 * (forked or exec'd for it, or kept by the launcher and given one run
 * after another), which makes itself a child subreaper
 * (PR_SET_CHILD_SUBREAPER), spawns the program and stays its parent.
 * Whatever the program starts stays a descendant of the reaper even if
 * it leaves the process group (setsid, setpgid) and its parent exits (a
 * double fork): the orphan is re-parented to the reaper, not to init.
 * When the program ends, the reaper kills its group and then every
 * process left under it, until it has no child at all, and only then
 * exits or takes its next run.
 * The reaper holds only this run's processes, so several runs in several
 * threads never mistake each other's children; the host process itself
 * stays an ordinary parent and reaps nothing but its reapers.
 *
 * The reaper is started one of three ways. In the daemon, the launcher
 * forks it and keeps it for later runs (proc_launcher_start: a small
 * single-threaded process started once, see "the launcher" below).
 * Without a launcher, in the surecron binary (which calls
 * proc_set_reaper_exe) it is that binary again, posix_spawn'ed with
 * PROC_REAPER_ARG: no copy of the host's page tables, and no copy-on-write
 * faults in the host while the run lasts (a fork of a large or ASan
 * daemon per run cost it about 20 ms a spawn under ASan and slowed a busy
 * daemon down). Elsewhere (the unit tests, other hosts of the library) it
 * is a fork: then it runs between fork and _exit in a copy of a threaded
 * process, so it only makes system calls (async-signal-safe functions);
 * its spawn file actions and attributes are built before the fork. It talks to
 * proc_run over two channels: a status pipe (started, spawn failed, the
 * program's wait status) and a control socket ('T': SIGTERM the group,
 * 'K': kill everything now; end of file, e.g. the host died: the same).
 *
 * One poll() loop in proc_run watches the child's stdout, stderr, stdin
 * (when data is fed) and the status pipe; nothing here sleeps.
 * Invariants:
 *   - the program is the leader of its own process group (POSIX_SPAWN_
 *     SETPGROUP); the reaper signals that group only while the leader is
 *     unreaped (a zombie at worst) and other processes only while they are
 *     its unreaped children, so no id it signals can have been reused;
 *   - when proc_run returns, the reaper has reaped the program and every
 *     process that descends from it, and proc_run has reaped the reaper:
 *     nothing the run started is left running, wherever it moved;
 *   - stdout never holds more than max_stdout bytes: the first byte over
 *     the cap ends the run;
 *   - all our descriptors are close-on-exec, and the reaper closes every
 *     descriptor but its own five at once, so neither a program nor a
 *     reaper ever holds another run's pipes (tasks may run in several
 *     threads at once): a run's pipes close when its processes are gone.
 * stdin and the control channel are socketpairs rather than pipes so that
 * writes can use MSG_NOSIGNAL: a peer that went away must not raise SIGPIPE
 * in the library's host process.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "proc.h"

extern char **environ;

/* After the program ended, how long we keep reading its pipes. Every
 * process under the reaper is killed, so they close at once; this only
 * bounds a descriptor handed outside the run (over a unix socket). */
#define DRAIN_MS 2000
/* The reaper's poll period when the kernel has no signalfd. */
#define NO_SIGNALFD_POLL_MS 20

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int errno_code(int e)
{
	switch (e) {
	case ENOENT: return SC_ENOENT;
	case EACCES: case EPERM: return SC_EACCES;
	case ENOMEM: return SC_ENOMEM;
	/* The runner's own limits (issue 42): not the task's failure. */
	case EMFILE: case ENFILE: case EAGAIN: return SC_EEXHAUSTED;
	default: return SC_EIO;
	}
}

/* Appends to the stderr tail, keeping only the last PROC_TAIL_MAX bytes. */
static void tail_add(char *tail, size_t *len, const char *p, size_t n)
{
	if (n >= PROC_TAIL_MAX) {
		memcpy(tail, p + n - PROC_TAIL_MAX, PROC_TAIL_MAX);
		*len = PROC_TAIL_MAX;
	} else {
		if (*len + n > PROC_TAIL_MAX) {
			size_t drop = *len + n - PROC_TAIL_MAX;
			memmove(tail, tail + drop, *len - drop);
			*len -= drop;
		}
		memcpy(tail + *len, p, n);
		*len += n;
	}
	tail[*len] = '\0';
}

/* The spawn file actions and attributes of the program, built before the
 * reaper is forked (they allocate). On failure nothing is left to free. */
static int spawn_prepare(const struct proc_spec *spec, int in_fd, int out_fd,
			 int err_fd, posix_spawn_file_actions_t *fa,
			 posix_spawnattr_t *attr, struct sc_err *err)
{
	sigset_t none, dfl;
	static const int reset[] = {SIGPIPE, SIGINT,  SIGTERM, SIGHUP,
				    SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2,
				    SIGALRM};
	int rc;

	if (posix_spawn_file_actions_init(fa) != 0)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	if (posix_spawnattr_init(attr) != 0) {
		posix_spawn_file_actions_destroy(fa);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	rc = posix_spawn_file_actions_adddup2(fa, in_fd, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(fa, out_fd, 1);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(fa, err_fd, 2);
	if (!rc && spec->cwd)
		rc = posix_spawn_file_actions_addchdir_np(fa, spec->cwd);
	/* Signals the host (or the reaper) ignores or blocks would be
	 * inherited across exec: the program starts with defaults and an
	 * empty mask. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
		sigaddset(&dfl, reset[i]);
	if (!rc)
		rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP |
						    POSIX_SPAWN_SETSIGMASK |
						    POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawnattr_setpgroup(attr, 0);
	if (!rc)
		rc = posix_spawnattr_setsigmask(attr, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(attr, &dfl);
	if (rc) {
		posix_spawnattr_destroy(attr);
		posix_spawn_file_actions_destroy(fa);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	return 0;
}

static int spawn_error(const struct proc_spec *spec, int rc,
		       struct sc_err *err)
{
	if (rc == ENOENT && spec->cwd && access(spec->cwd, X_OK) != 0)
		return sc_err_set(err, SC_ENOENT,
				  "cannot enter working directory %s: %s",
				  spec->cwd, strerror(errno));
	return sc_err_set(err, errno_code(rc), "cannot run %s: %s",
			  spec->argv[0], strerror(rc));
}

/* ---- the reaper (system calls only: it runs in a fork of a threaded
 * process) ---- */

/* What the reaper tells proc_run, one record per write (atomic: smaller
 * than PIPE_BUF). */
enum { REAP_STARTED = 1, REAP_SPAWN_FAILED, REAP_ENDED };
struct reap_msg {
	int kind;
	int value; /* REAP_SPAWN_FAILED: errno; REAP_ENDED: wait status */
	int64_t mono_ns; /* REAP_STARTED: CLOCK_MONOTONIC when posix_spawn
			    returned (the program was exec'd); else 0 */
};

static int64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps until the CLOCK_MONOTONIC instant until_ns (0 or past: at
 * once). Relative sleeps, resumed after a signal, as clock.c's (an
 * absolute monotonic sleep returns at once under libfaketime). Only
 * system calls: safe in a forked reaper of a threaded host. */
static void sleep_until_mono(int64_t until_ns)
{
	for (int64_t left; until_ns > 0 && (left = until_ns - mono_now_ns()) > 0;) {
		struct timespec rel = {.tv_sec = (time_t)(left / 1000000000),
				       .tv_nsec = (long)(left % 1000000000)};
		(void)clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL);
	}
}

static void reap_send_at(int fd, int kind, int value, int64_t mono_ns)
{
	struct reap_msg m = {kind, value, mono_ns};
	ssize_t n;

	do
		n = write(fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
}

static void reap_send(int fd, int kind, int value)
{
	reap_send_at(fd, kind, value, 0);
}

static void close_span(unsigned lo, unsigned hi)
{
	if (lo > hi)
		return;
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	/* Before Linux 5.9: one by one, up to the descriptor limit. */
	struct rlimit rl;
	unsigned max = 65536;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < max)
		max = (unsigned)rl.rlim_cur;
	for (unsigned fd = lo; fd <= hi && fd < max; fd++)
		(void)close((int)fd);
}

/* Closes every descriptor above 2 except the n in keep. A fork of the
 * host holds copies of everything the host has open, other runs' pipes
 * among them: kept, they would hold those runs' output open. */
static void close_others(const int *keep, int n)
{
	int k[8];
	unsigned lo = 3;

	for (int i = 0; i < n; i++) {
		int v = keep[i], j = i;
		for (; j > 0 && k[j - 1] > v; j--)
			k[j] = k[j - 1];
		k[j] = v;
	}
	for (int i = 0; i < n; i++) {
		if (k[i] < 0 || (unsigned)k[i] < lo)
			continue;
		close_span(lo, (unsigned)k[i] - 1);
		lo = (unsigned)k[i] + 1;
	}
	close_span(lo, ~0U);
}

/* Writes the decimal of v at p; returns the end. */
static char *put_uint(char *p, unsigned long v)
{
	char d[24];
	int n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0)
		*p++ = d[--n];
	return p;
}

/* The parent pid in /proc/PID/stat (name is the PID's decimal), or -1. */
static pid_t stat_ppid(const char *name)
{
	char path[64] = "/proc/", buf[512];
	size_t n = strlen(name);

	if (n > 20)
		return -1;
	char *w = path + 6;
	for (size_t i = 0; i < n; i++)
		*w++ = name[i];
	memcpy(w, "/stat", sizeof("/stat"));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	/* "pid (comm) S ppid ...": comm may hold ')' and spaces. */
	char *rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
		return -1;
	long ppid = 0;
	for (char *q = rp + 4; *q >= '0' && *q <= '9'; q++)
		ppid = ppid * 10 + (*q - '0');
	return (pid_t)ppid;
}

/* Fallback for kernels without /proc/PID/task/TID/children: every
 * process in /proc whose parent is self. */
static int kill_children_scan(pid_t self)
{
	char dbuf[4096];
	ssize_t n;
	int count = 0;
	int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return 0;
	while ((n = getdents64(dfd, dbuf, sizeof(dbuf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dbuf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			if (stat_ppid(d->d_name) == self) {
				long pid = 0;
				for (const char *q = d->d_name; *q; q++)
					pid = pid * 10 + (*q - '0');
				kill((pid_t)pid, SIGKILL);
				count++;
			}
		}
	}
	close(dfd);
	return count;
}

/* Sends SIGKILL to every child of this (single-threaded) process. Safe
 * against id reuse: a child's id stays ours until we reap it, and only
 * this thread reaps. */
static void kill_children(pid_t self)
{
	char path[96] = "/proc/self/task/", buf[1024];
	char *p = put_uint(path + strlen(path), (unsigned long)self);
	long pid = 0;
	bool in_num = false;
	ssize_t n;

	memcpy(p, "/children", sizeof("/children"));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		(void)kill_children_scan(self);
		return;
	}
	/* "12 34 56 ": numbers may straddle two reads. */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				pid = pid * 10 + (buf[i] - '0');
				in_num = true;
			} else if (in_num) {
				kill((pid_t)pid, SIGKILL);
				pid = 0;
				in_num = false;
			}
		}
	}
	if (in_num)
		kill((pid_t)pid, SIGKILL);
	close(fd);
}

/*
 * Reaps the children that ended. The program's own end comes first to
 * its group: the group is killed while the leader is still a zombie (so
 * the id is the program's), then the leader is reaped and its status
 * reported.
 */
static void reap_ended(pid_t prog, int st_fd, bool *prog_done)
{
	for (;;) {
		siginfo_t si;
		int st;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
		    si.si_pid == 0)
			return;
		if (si.si_pid == prog && !*prog_done) {
			kill(-prog, SIGKILL);
			while (waitpid(prog, &st, 0) < 0 && errno == EINTR)
				;
			reap_send(st_fd, REAP_ENDED, st);
			*prog_done = true;
		} else {
			while (waitpid(si.si_pid, &st, 0) < 0 && errno == EINTR)
				;
		}
	}
}

/*
 * Kills the program's group (unless already reaped) and then every
 * process left under the reaper: a killed child's own children are
 * re-parented to us at its exit, so each round kills what the last one
 * uncovered, until waitpid says there is no child at all.
 */
static void kill_all(pid_t prog, int st_fd, bool prog_done)
{
	pid_t self = getpid();

	if (!prog_done)
		kill(-prog, SIGKILL);
	for (;;) {
		int st;
		kill_children(self);
		pid_t w = waitpid(-1, &st, 0);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: every descendant is gone */
		}
		if (w == prog && !prog_done) {
			reap_send(st_fd, REAP_ENDED, st);
			prog_done = true;
		}
	}
}

/* Once per reaper process: the signals it takes, every descriptor but
 * the n in keep closed, the subreaper flag. Returns the signalfd of
 * SIGCHLD, or -1 (then reaper_serve polls). */
static int reaper_setup(const int *keep, int n)
{
	/* The daemon decides when a run stops: terminal and service
	 * signals aimed at the host's group do not end the reaper (its
	 * program has its own group and gets them, or not, itself). The
	 * host's handlers are not ours. */
	static const int quiet[] = {SIGINT,  SIGQUIT, SIGHUP,  SIGTERM,
				    SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};
	struct sigaction sa;
	sigset_t chld;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		(void)sigaction(quiet[i], &sa, NULL);
	sa.sa_handler = SIG_DFL; /* a host ignoring SIGCHLD loses statuses */
	(void)sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	(void)sigprocmask(SIG_SETMASK, &chld, NULL);
	close_others(keep, n);
	/* Without it (Linux before 3.4) orphans go to init: the group is
	 * still ended, as it was before reapers. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* A run handed over ahead wakes this reaper at its instant: no
	 * timer slack (50 us by default) added to the program's start. */
	(void)prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	return signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
}

/*
 * One run: starts the program, passes on proc_run's requests, and
 * returns once the program and every process under this reaper are
 * reaped. in_fd, out_fd and err_fd are closed here; ctl_fd and st_fd are
 * left to the caller, whose closing them (or exit) is the end of file
 * that tells proc_run that nothing of the run is left.
 */
static void reaper_serve(const struct proc_spec *spec,
			 const posix_spawn_file_actions_t *fa,
			 const posix_spawnattr_t *attr, int ctl_fd, int st_fd,
			 int in_fd, int out_fd, int err_fd, int sfd)
{
	pid_t prog;
	bool prog_done = false;

	/* A run handed over ahead of its instant (spec->start_mono_ns,
	 * proc.h) starts here, by this reaper's own timer: the hand-over
	 * (the host's request, the launcher, this reaper's wakeup) is then
	 * done before the instant, not part of the program's lateness. */
	sleep_until_mono(spec->start_mono_ns);
	/* A launched reaper may start late (a stopped launcher): when
	 * proc_run has given up already (end of file on the control
	 * channel), the program must not start at all. */
	char peek;
	if (recv(ctl_fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
		close(in_fd);
		close(out_fd);
		close(err_fd);
		reap_send(st_fd, REAP_SPAWN_FAILED, ECANCELED);
		return;
	}
	int rc = posix_spawnp(&prog, spec->argv[0], fa, attr, spec->argv,
			      spec->envp ? spec->envp : environ);
	/* The instant the program was exec'd (posix_spawn waits for the
	 * exec), stamped here: proc_run's res->started_ns is this instant,
	 * not when proc_run next ran and read the message. */
	int64_t started = mono_now_ns();
	/* The program has its copies; ours would keep its pipes open. */
	close(in_fd);
	close(out_fd);
	close(err_fd);
	if (rc != 0) {
		reap_send(st_fd, REAP_SPAWN_FAILED, rc);
		return;
	}
	reap_send_at(st_fd, REAP_STARTED, 0, started);

	while (!prog_done) {
		struct pollfd p[2] = {{ctl_fd, POLLIN, 0}, {sfd, POLLIN, 0}};
		int n = poll(p, sfd >= 0 ? 2 : 1,
			     sfd >= 0 ? -1 : NO_SIGNALFD_POLL_MS);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents) {
			char c[16];
			ssize_t k = read(ctl_fd, c, sizeof(c));
			if (k == 0 || (k < 0 && errno != EINTR &&
				       errno != EAGAIN))
				break; /* proc_run is gone: end it all */
			bool stop = false;
			for (ssize_t i = 0; i < k; i++) {
				if (c[i] == 'T')
					kill(-prog, SIGTERM);
				else if (c[i] == 'K')
					stop = true;
			}
			if (stop)
				break;
		}
		if (sfd >= 0 && n > 0 && p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
		}
		reap_ended(prog, st_fd, &prog_done);
	}
	kill_all(prog, st_fd, prog_done);
}

/* A reaper of one run (forked by proc_run, or exec'd): it exits when
 * the run is over. */
static _Noreturn void reaper_main(const struct proc_spec *spec,
				  const posix_spawn_file_actions_t *fa,
				  const posix_spawnattr_t *attr, int ctl_fd,
				  int st_fd, int in_fd, int out_fd, int err_fd)
{
	int keep[] = {ctl_fd, st_fd, in_fd, out_fd, err_fd};
	int sfd = reaper_setup(keep, (int)(sizeof(keep) / sizeof(keep[0])));

	reaper_serve(spec, fa, attr, ctl_fd, st_fd, in_fd, out_fd, err_fd,
		     sfd);
	_exit(0);
}

/* ---- the reaper as its own program ---- */

/* Set once, before threads (proc_set_reaper_exe); "" means fork. */
static char reaper_exe[256];

void proc_set_reaper_exe(const char *path)
{
	if (path && strlen(path) < sizeof(reaper_exe))
		memcpy(reaper_exe, path, strlen(path) + 1);
	else
		reaper_exe[0] = '\0';
}

/*
 * argv: EXE PROC_REAPER_ARG CWD PROGRAM [ARG...]; CWD "" for none. fds
 * 0-2 are the program's stdio, 3 the control socket, 4 the status pipe;
 * the environment is the program's. A fresh process: no locks held by
 * other threads, so the reaper code runs as it does after a fork.
 */
int proc_reaper_exec_main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct proc_spec spec = {0};

	if (argc < 4)
		return 2;
	/* dup2 in our spawn cleared close-on-exec: the program must not
	 * inherit the control socket and the status pipe. */
	if (fcntl(3, F_SETFD, FD_CLOEXEC) != 0 ||
	    fcntl(4, F_SETFD, FD_CLOEXEC) != 0)
		return 2;
	spec.argv = argv + 3;
	spec.cwd = argv[2][0] ? argv[2] : NULL;
	spec.envp = environ;
	if (spawn_prepare(&spec, 0, 1, 2, &fa, &attr, NULL) != 0) {
		reap_send(4, REAP_SPAWN_FAILED, ENOMEM);
		return 0;
	}
	reaper_main(&spec, &fa, &attr, 3, 4, 0, 1, 2);
}

/* The spawn of the reaper program: fds moved to 0-4 (sources first
 * moved above 4 so that no dup2 overwrites one still to be moved), a
 * clean signal mask, the program's environment. */
static int spawn_reaper_exe(const struct proc_spec *spec, const int src[5],
			    pid_t *pid, struct sc_err *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int fd[5], rc = 0, n_args = 0;

	for (int i = 0; i < 5; i++)
		fd[i] = -1;
	for (int i = 0; i < 5 && !rc; i++) {
		fd[i] = src[i] > 4 ? src[i] : fcntl(src[i], F_DUPFD_CLOEXEC, 5);
		if (fd[i] < 0)
			rc = sc_err_set(err, SC_EIO, "dup: %s", strerror(errno));
	}
	while (!rc && spec->argv[n_args])
		n_args++;
	char **av = rc ? NULL : calloc((size_t)n_args + 4, sizeof(char *));
	if (!rc && !av)
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	if (!rc && posix_spawn_file_actions_init(&fa) != 0)
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	if (!rc && posix_spawnattr_init(&attr) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	if (!rc) {
		int r = 0;
		for (int i = 0; i < 5 && !r; i++)
			r = posix_spawn_file_actions_adddup2(&fa, fd[i], i);
		sigemptyset(&none);
		sigfillset(&dfl);
		sigdelset(&dfl, SIGKILL);
		sigdelset(&dfl, SIGSTOP);
		if (!r)
			r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
							    POSIX_SPAWN_SETSIGDEF);
		if (!r)
			r = posix_spawnattr_setsigmask(&attr, &none);
		if (!r)
			r = posix_spawnattr_setsigdefault(&attr, &dfl);
		av[0] = reaper_exe;
		av[1] = (char *)PROC_REAPER_ARG;
		av[2] = (char *)(spec->cwd ? spec->cwd : "");
		for (int i = 0; i < n_args; i++)
			av[3 + i] = spec->argv[i];
		if (!r)
			r = posix_spawn(pid, reaper_exe, &fa, &attr, av,
					spec->envp ? spec->envp : environ);
		if (r)
			rc = sc_err_set(err, errno_code(r), "cannot run %s: "
					"reaper %s: %s", spec->argv[0],
					reaper_exe, strerror(r));
		posix_spawnattr_destroy(&attr);
		posix_spawn_file_actions_destroy(&fa);
	}
	free(av);
	for (int i = 0; i < 5; i++)
		if (fd[i] >= 0 && fd[i] != src[i])
			close(fd[i]);
	return rc;
}

/* ---- the launcher ----
 *
 * One process, started once (proc_launcher_start: this program again,
 * PROC_LAUNCHER_ARG), small and single-threaded, that hands each run to
 * a reaper of its own. A request is one SOCK_SEQPACKET message (struct
 * launch_req) with six descriptors: the run's stdin, stdout and stderr,
 * its control socket, its status pipe (exactly the five of the exec'd
 * reaper) and a memfd holding the working directory, the arguments and
 * the environment, each NUL-ended.
 *
 * The reapers are kept. The launcher forks one when a request finds none
 * idle; after its run (every process of it reaped) the reaper tells the
 * launcher it is idle, on a socket of its own (its channel), then closes
 * the run's status pipe and waits on its channel for the next request. An exec of the reaper
 * program costs a program start per run, a fork of the launcher a copy
 * of its page tables and the faults that follow: on a host where those
 * are dear (a virtual machine that traps page-table writes), either was
 * as much CPU as the run's own program under a burst of runs. A kept
 * reaper serves one run at a time and ends each one whole, so "it holds
 * only this run's processes" stays true, run after run. A reaper idle
 * for REAPER_IDLE_MS is let go (the launcher closes its channel), so a
 * burst leaves no crowd behind; at most REAPER_KEPT are kept, a reaper
 * beyond them serves its one run and exits.
 *
 * A reaper is not our child: proc_run learns that its run is over (all
 * of it reaped) from the end of file on the status pipe, and the
 * launcher reaps its reapers (SIGCHLD ignored). The launcher exits at
 * the end of file on its socket, that is when the host closes its end or
 * dies, and its reapers at the end of file on their channels, that is
 * when the launcher is gone; a launcher that is gone (killed) makes
 * proc_run go back to the exec'd reaper for good. Only the launcher
 * reads the host's socket: a request is never taken by a stopped or busy
 * reaper, and a stopped launcher stops every new run (see
 * LAUNCH_WAIT_MS).
 */
#define LAUNCH_MAGIC 0x73636c31u /* "scl1" */
#define LAUNCH_FDS 6
#define LAUNCH_ARG_MAX (64u << 20) /* bytes of cwd + argv + envp */
/* The farthest ahead a start is handed to a reaper (proc_spec's
 * start_mono_ns); a start farther off is waited for here. proc_run does
 * not tick while its reaper waits, so this stays small. */
#define PROC_START_AHEAD_MAX_NS ((int64_t)1000 * 1000000)
/* How long proc_run waits for a launched reaper to say it started: a
 * launcher that is stopped (SIGSTOP) must not hang the run. */
#define LAUNCH_WAIT_MS 10000
/* How long a request may wait for room in the launcher's socket. */
#define LAUNCH_SEND_MS 2000
/* How long proc_launcher_stop waits for the launcher to end by itself
 * (a multiple of its 10 ms step). */
#define LAUNCH_STOP_MS 3000
/* How long a kept reaper may wait idle, and how many are kept. A minute:
 * a schedule's burst every minute finds its reapers still there. */
#define REAPER_IDLE_MS 60000
#define REAPER_KEPT 256

struct launch_req {
	uint32_t magic;
	uint32_t argc;  /* strings of argv, after the cwd */
	uint32_t envc;  /* strings of envp, after argv */
	uint32_t has_cwd;
	uint64_t len;   /* bytes in the memfd */
	int64_t start_mono_ns; /* proc_spec's start_mono_ns (0: at once) */
};

/* Set by proc_launcher_start before threads run; launcher_gone once a
 * request found the launcher gone (any thread). */
static int launcher_fd = -1;
static pid_t launcher_pid = -1;
static atomic_bool launcher_gone;

/* Reads the request's strings from the memfd into one allocation (*blob)
 * and points spec's arrays at them. The caller frees *blob, spec->argv
 * and spec->envp, also on failure (they may be NULL). */
static int launch_unpack(const struct launch_req *r, int mfd,
			 struct proc_spec *spec, char **blob_out)
{
	*blob_out = NULL;
	if (r->len == 0 || r->len > LAUNCH_ARG_MAX || r->argc == 0 ||
	    r->argc > LAUNCH_ARG_MAX / 2 || r->envc > LAUNCH_ARG_MAX / 2)
		return EINVAL;
	char *blob = malloc((size_t)r->len);
	char **av = calloc((size_t)r->argc + 1, sizeof(char *));
	char **ev = calloc((size_t)r->envc + 1, sizeof(char *));
	*blob_out = blob;
	spec->argv = av;
	spec->envp = ev;
	if (!blob || !av || !ev)
		return ENOMEM;
	size_t got = 0;
	while (got < r->len) {
		ssize_t n = pread(mfd, blob + got, (size_t)r->len - got,
				  (off_t)got);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return EIO;
		}
		got += (size_t)n;
	}
	if (blob[r->len - 1] != '\0')
		return EINVAL;
	/* Strings in order: the cwd (when has_cwd), argv, envp. */
	size_t off = 0, want = (r->has_cwd ? 1 : 0) + (size_t)r->argc +
			       (size_t)r->envc;
	for (size_t i = 0; i < want; i++) {
		if (off >= r->len)
			return EINVAL;
		char *str = blob + off;
		off += strlen(str) + 1;
		size_t k = r->has_cwd ? i : i + 1; /* 0 is the cwd */
		if (k == 0)
			spec->cwd = str;
		else if (k <= r->argc)
			av[k - 1] = str;
		else
			ev[k - 1 - r->argc] = str;
	}
	if (off != r->len)
		return EINVAL;
	return 0;
}

/*
 * Receives one request on sock into r and fd (close-on-exec). Returns 1
 * for a well-formed request, 0 at end of file, -1 on an error (errno) or
 * a malformed request (errno EBADMSG; its descriptors are closed).
 */
static int launch_recv(int sock, int flags, struct launch_req *r,
		       int fd[LAUNCH_FDS])
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * LAUNCH_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {r, sizeof(*r)};
	struct msghdr mh = {0};
	int nfd = 0;

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *p = (int *)(void *)CMSG_DATA(c);
		for (size_t i = 0; i < k; i++) {
			if (nfd < LAUNCH_FDS)
				fd[nfd++] = p[i];
			else
				close(p[i]);
		}
	}
	if ((size_t)n == sizeof(*r) && nfd == LAUNCH_FDS &&
	    r->magic == LAUNCH_MAGIC &&
	    !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return 1;
	for (int i = 0; i < nfd; i++)
		close(fd[i]);
	errno = EBADMSG;
	return -1;
}

/* Sends a request (r and its descriptors) on sock; the byte count sent
 * or -1 (errno). Never raises SIGPIPE. */
static ssize_t launch_send_req(int sock, const struct launch_req *r,
			       const int fd[LAUNCH_FDS], int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * LAUNCH_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)r, sizeof(*r)};
	struct msghdr mh = {0};
	ssize_t n;

	memset(&u, 0, sizeof(u));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * LAUNCH_FDS);
	memcpy(CMSG_DATA(c), fd, sizeof(int) * LAUNCH_FDS);
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * A reaper forked by the launcher: serves the request r, then (when it
 * has a channel, chan >= 0) the requests that come on its channel, one
 * at a time, until the channel ends. The memfd is read and closed, the
 * run's other descriptors closed after its run. Single-threaded (a fork
 * of the launcher), so it may allocate.
 */
static _Noreturn void launch_child(struct launch_req r, int fd[LAUNCH_FDS],
				   int chan)
{
	static char *no_env[] = {NULL};
	/* The memfd is read below, before the loop closes it. */
	int keep[] = {fd[0], fd[1], fd[2], fd[3], fd[4], fd[5], chan};
	int sfd = reaper_setup(keep, chan >= 0 ? 7 : 6);

	for (;;) {
		struct proc_spec spec = {0};
		posix_spawn_file_actions_t fa;
		posix_spawnattr_t attr;
		char *blob;
		int rc = launch_unpack(&r, fd[5], &spec, &blob);

		spec.start_mono_ns = r.start_mono_ns;
		close(fd[5]);
		if (rc == 0 && spawn_prepare(&spec, fd[0], fd[1], fd[2], &fa,
					     &attr, NULL) != 0)
			rc = ENOMEM;
		if (rc) {
			for (int i = 0; i < 3; i++)
				close(fd[i]);
			reap_send(fd[4], REAP_SPAWN_FAILED, rc);
		} else {
			/* posix_spawnp searches the PATH of environ: the
			 * program's own, as in the exec'd reaper. */
			environ = (char **)spec.envp;
			reaper_serve(&spec, &fa, &attr, fd[3], fd[4], fd[0],
				     fd[1], fd[2], sfd);
			environ = no_env;
			posix_spawnattr_destroy(&attr);
			posix_spawn_file_actions_destroy(&fa);
		}
		free(blob);
		free((void *)spec.argv);
		free((void *)spec.envp);
		/* Idle, said before the status pipe's end of file (proc_run's
		 * "all of it is reaped"), so that a run its caller starts
		 * next finds this reaper idle. The launcher may hand us the
		 * next run, or close the channel (let go, or gone itself). */
		bool more = chan >= 0 && send(chan, "I", 1, MSG_NOSIGNAL) == 1;
		close(fd[3]);
		close(fd[4]);
		if (!more)
			_exit(0);
		int got;
		while ((got = launch_recv(chan, 0, &r, fd)) < 0 &&
		       (errno == EINTR || errno == EBADMSG))
			;
		if (got != 1)
			_exit(0);
	}
}

/* A bound in ms: dflt, or in test builds the positive value of the
 * environment variable test_var, so a test of that bound need not wait
 * it whole (SURECRON_TEST_REAPER_IDLE_MS: idle reapers let go;
 * SURECRON_TEST_LAUNCH_WAIT_MS: a stopped launcher). */
static int test_bound_ms(const char *test_var, int dflt)
{
#ifdef SURECRON_FAILPOINTS
	const char *v = getenv(test_var);
	if (v && atoi(v) > 0)
		return atoi(v);
#else
	(void)test_var;
#endif
	return dflt;
}

/* The launcher's kept reapers: each one's end of its channel, whether it
 * waits for a run, and since when. */
struct kept_reaper {
	int chan;
	bool idle;
	int64_t idle_since;
};

/* Hands the request to the reaper that turned idle last (the others then
 * age out first), or to a new one. Its descriptors stay ours to close. */
static void launch_dispatch(struct kept_reaper *kept, int *nkept,
			    const struct launch_req *r,
			    const int fd[LAUNCH_FDS])
{
	for (;;) {
		int best = -1;
		for (int i = 0; i < *nkept; i++)
			if (kept[i].idle && (best < 0 || kept[i].idle_since >=
							 kept[best].idle_since))
				best = i;
		if (best < 0)
			break;
		if (launch_send_req(kept[best].chan, r, fd, MSG_DONTWAIT) ==
		    (ssize_t)sizeof(*r)) {
			kept[best].idle = false;
			return;
		}
		/* Gone (killed): forget it and try the next. */
		close(kept[best].chan);
		kept[best] = kept[--*nkept];
	}
	int sv[2] = {-1, -1};
	if (*nkept < REAPER_KEPT &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		sv[0] = sv[1] = -1;
	pid_t pid = fork();
	if (pid == 0) {
		int mine[LAUNCH_FDS];
		memcpy(mine, fd, sizeof(mine));
		launch_child(*r, mine, sv[1]);
	}
	int e = errno;
	if (sv[1] >= 0)
		close(sv[1]);
	if (pid < 0) {
		if (sv[0] >= 0)
			close(sv[0]);
		reap_send(fd[4], REAP_SPAWN_FAILED, e);
	} else if (sv[0] >= 0) {
		kept[*nkept] = (struct kept_reaper){sv[0], false, 0};
		++*nkept;
	}
}

int proc_launcher_exec_main(int argc, char **argv)
{
	static const int quiet[] = {SIGINT,  SIGQUIT, SIGHUP,  SIGTERM,
				    SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};
	static struct kept_reaper kept[REAPER_KEPT];
	static struct pollfd p[1 + REAPER_KEPT];
	struct sigaction sa;
	sigset_t none;
	int nkept = 0;
	int64_t idle_ms = test_bound_ms("SURECRON_TEST_REAPER_IDLE_MS",
					 REAPER_IDLE_MS);

	(void)argv;
	if (argc != 2 || fcntl(3, F_SETFD, FD_CLOEXEC) != 0)
		return 2;
	/* The host decides when we end (end of file); signals sent to its
	 * group are not for us. SIGCHLD ignored: the kernel reaps the
	 * reapers (each sets it back to the default for itself). */
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		(void)sigaction(quiet[i], &sa, NULL);
	(void)sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);

	for (;;) {
		/* Sleep until a request, a reaper's word, or the first
		 * idle reaper's time is up. */
		int64_t now = clock_mono_ms(), wait = -1;
		p[0] = (struct pollfd){3, POLLIN, 0};
		for (int i = 0; i < nkept; i++) {
			p[1 + i] = (struct pollfd){kept[i].chan, POLLIN, 0};
			if (kept[i].idle) {
				int64_t left = kept[i].idle_since + idle_ms -
					       now;
				if (left < 0)
					left = 0;
				if (wait < 0 || left < wait)
					wait = left;
			}
		}
		int n = poll(p, (nfds_t)nkept + 1,
			     wait < 0 ? -1 : (int)(wait > INT32_MAX ? INT32_MAX
								   : wait));
		if (n < 0 && errno != EINTR)
			_exit(1);
		now = clock_mono_ms();
		/* Last to first: a reaper forgotten here is replaced by the
		 * last one, whose answer was read already. */
		for (int i = nkept - 1; i >= 0; i--) {
			bool drop = false;
			if (n > 0 && p[1 + i].revents) {
				char c;
				ssize_t k = recv(kept[i].chan, &c, 1,
						 MSG_DONTWAIT);
				if (k == 1) {
					kept[i].idle = true;
					kept[i].idle_since = now;
				} else if (k == 0 || (errno != EAGAIN &&
						      errno != EINTR)) {
					drop = true; /* killed */
				}
			}
			if (kept[i].idle && now - kept[i].idle_since >= idle_ms)
				drop = true; /* let go: it exits at EOF */
			if (drop) {
				close(kept[i].chan);
				kept[i] = kept[--nkept];
			}
		}
		if (n <= 0 || !p[0].revents)
			continue;
		struct launch_req r = {0};
		int fd[LAUNCH_FDS];
		int got = launch_recv(3, MSG_DONTWAIT, &r, fd);
		/* _exit: the launcher has nothing to flush, and the exit
		 * handlers are not for it (under ASan, LeakSanitizer's at
		 * exit was seen spinning in a launcher with a reaper alive,
		 * SIGCHLD ignored). */
		if (got == 0)
			_exit(0); /* the host is gone or done */
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == EBADMSG)
				continue;
			_exit(1);
		}
		launch_dispatch(kept, &nkept, &r, fd);
		for (int i = 0; i < LAUNCH_FDS; i++)
			close(fd[i]);
	}
}

int proc_launcher_start(struct sc_err *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int sv[2];

	if (launcher_fd >= 0)
		return 0;
	if (!reaper_exe[0])
		return sc_err_set(err, SC_EINVAL, "no reaper program set");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return sc_err_set(err, SC_EIO, "socketpair: %s",
				  strerror(errno));
	char *av[] = {reaper_exe, (char *)PROC_LAUNCHER_ARG, NULL};
	int r = posix_spawn_file_actions_init(&fa);
	if (r == 0 && (r = posix_spawnattr_init(&attr)) != 0)
		posix_spawn_file_actions_destroy(&fa);
	if (r) {
		close(sv[0]);
		close(sv[1]);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	for (int i = 0; i < 3 && !r; i++)
		r = posix_spawn_file_actions_addopen(&fa, i, "/dev/null",
						     i ? O_WRONLY : O_RDONLY, 0);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	sigemptyset(&none);
	sigfillset(&dfl);
	sigdelset(&dfl, SIGKILL);
	sigdelset(&dfl, SIGSTOP);
	if (!r)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
						    POSIX_SPAWN_SETSIGDEF);
	if (!r)
		r = posix_spawnattr_setsigmask(&attr, &none);
	if (!r)
		r = posix_spawnattr_setsigdefault(&attr, &dfl);
	pid_t pid = -1;
	if (!r)
		r = posix_spawn(&pid, reaper_exe, &fa, &attr, av, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (r) {
		close(sv[0]);
		return sc_err_set(err, errno_code(r), "cannot start the "
				  "launcher %s: %s", reaper_exe, strerror(r));
	}
	/* A full socket (a stopped launcher) must not hold a run for long:
	 * the request then goes to the exec'd reaper. */
	struct timeval tv = {LAUNCH_SEND_MS / 1000,
			     (LAUNCH_SEND_MS % 1000) * 1000};
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	launcher_fd = sv[0];
	launcher_pid = pid;
	atomic_store(&launcher_gone, false);
	return 0;
}

void proc_launcher_stop(void)
{
	if (launcher_fd < 0)
		return;
	close(launcher_fd);
	launcher_fd = -1;
	/* It ends at the socket's EOF; a stopped one is woken to read it,
	 * and one given up on (it let a run time out) is not waited for. */
	(void)kill(launcher_pid,
		   atomic_load(&launcher_gone) ? SIGKILL : SIGCONT);
	/* Bounded: a launcher that does not end within LAUNCH_STOP_MS is
	 * killed, so the daemon's stop never hangs on it (under ASan one
	 * was seen spinning at its exit, its daemon stuck in this wait). */
	for (int waited = 0;; waited += 10) {
		pid_t w = waitpid(launcher_pid, NULL, WNOHANG);
		if (w == launcher_pid || (w < 0 && errno != EINTR))
			break;
		if (waited == LAUNCH_STOP_MS) {
			(void)kill(launcher_pid, SIGKILL);
			while (waitpid(launcher_pid, NULL, 0) < 0 &&
			       errno == EINTR)
				;
			break;
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	launcher_pid = -1;
}

pid_t proc_launcher_pid(void)
{
	return launcher_fd >= 0 && !atomic_load(&launcher_gone) ? launcher_pid
								 : -1;
}

/* Appends str and its NUL to the memfd through buf (used bytes held);
 * false when a write failed. */
static bool pack_str(int mfd, char *buf, size_t cap, size_t *used,
		     const char *str, struct launch_req *r)
{
	size_t len = strlen(str) + 1;

	r->len += len;
	while (len > 0) {
		size_t k = cap - *used < len ? cap - *used : len;
		memcpy(buf + *used, str, k);
		*used += k;
		str += k;
		len -= k;
		if (*used == cap) {
			if (write(mfd, buf, cap) != (ssize_t)cap)
				return false;
			*used = 0;
		}
	}
	return true;
}

/* Writes the request's strings (cwd, argv, envp) to a memfd; -1 when that
 * cannot be done (the caller then starts the exec'd reaper). */
static int launch_pack(const struct proc_spec *spec, char *const *envp,
		       struct launch_req *r)
{
	char buf[8192];
	size_t used = 0;
	int mfd = memfd_create("surecron-run", MFD_CLOEXEC);

	if (mfd < 0)
		return -1;
	memset(r, 0, sizeof(*r));
	r->magic = LAUNCH_MAGIC;
	r->has_cwd = spec->cwd != NULL;
	bool ok = !spec->cwd ||
		  pack_str(mfd, buf, sizeof(buf), &used, spec->cwd, r);
	for (size_t i = 0; ok && spec->argv[i]; i++, r->argc++)
		ok = pack_str(mfd, buf, sizeof(buf), &used, spec->argv[i], r);
	for (size_t i = 0; ok && envp[i]; i++, r->envc++)
		ok = pack_str(mfd, buf, sizeof(buf), &used, envp[i], r);
	if (ok && used)
		ok = write(mfd, buf, used) == (ssize_t)used;
	if (!ok || r->len > LAUNCH_ARG_MAX) {
		close(mfd);
		return -1;
	}
	return mfd;
}


/* Hands one run to the launcher; false when it cannot take it (then the
 * caller starts the reaper itself). */
static bool launch_send(const struct proc_spec *spec, const int src[5],
			int64_t start_mono_ns)
{
	struct launch_req r;

	if (launcher_fd < 0 || atomic_load(&launcher_gone))
		return false;
	int mfd = launch_pack(spec, spec->envp ? spec->envp : environ, &r);
	if (mfd < 0)
		return false;
	r.start_mono_ns = start_mono_ns;
	int fds[LAUNCH_FDS] = {src[0], src[1], src[2], src[3], src[4], mfd};
	ssize_t n = launch_send_req(launcher_fd, &r, fds, 0);
	int e = errno;
	close(mfd);
	if (n == (ssize_t)sizeof(r))
		return true;
	if (n < 0 && e != EAGAIN && e != EWOULDBLOCK && e != ENOBUFS &&
	    e != ENOMEM)
		atomic_store(&launcher_gone, true); /* EPIPE: it is gone */
	return false;
}

/* ---- proc_run ---- */

/* Asks the reaper for something ('T' or 'K'); a reaper already gone
 * needs nothing. Never raises SIGPIPE. */
static void ctl_send(int fd, char c)
{
	if (fd >= 0)
		(void)send(fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Reads one record; false on end of file (the reaper is gone). */
static bool read_msg(int fd, struct reap_msg *m)
{
	size_t got = 0;

	while (got < sizeof(*m)) {
		ssize_t n = read(fd, (char *)m + got, sizeof(*m) - got);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || (errno != EINTR && errno != EAGAIN))
			return false;
		else if (errno == EAGAIN) {
			struct pollfd p = {fd, POLLIN, 0};
			(void)poll(&p, 1, -1);
		}
	}
	return true;
}

int proc_run(const struct proc_spec *spec, struct proc_result *res,
	     struct sc_err *err)
{
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, inp[2] = {-1, -1};
	int ctl[2] = {-1, -1}, stp[2] = {-1, -1};
	int rc = 0, status = 0;
	size_t in_off = 0, tail_len = 0;
	pid_t rpid = -1;
	bool ended = false, have_status = false;
	char chunk[16384];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct reap_msg m = {0, 0, 0};

	memset(res, 0, sizeof(*res));
	buf_init(&res->out, spec->max_stdout);
	if (!spec->argv || !spec->argv[0])
		return sc_err_set(err, SC_EINVAL, "empty command");
	if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0 ||
	    pipe2(stp, O_CLOEXEC) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) {
		rc = sc_err_set(err, errno_code(errno), "pipe: %s",
				strerror(errno));
		goto done;
	}
	if (spec->stdin_data) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, inp)) {
			rc = sc_err_set(err, errno_code(errno), "socketpair: %s",
					strerror(errno));
			goto done;
		}
	} else {
		inp[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (inp[0] < 0) {
			rc = sc_err_set(err, errno_code(errno), "/dev/null: %s",
					strerror(errno));
			goto done;
		}
	}
	/* A start ahead (spec->start_mono_ns): handed to a launched reaper
	 * now, which starts the program at the instant; any other reaper
	 * is started when the instant has come. */
	int64_t now_ns = mono_now_ns(), start_at = spec->start_mono_ns;
	if (start_at <= now_ns)
		start_at = 0;
	else if (start_at - now_ns > PROC_START_AHEAD_MAX_NS ||
		 launcher_fd < 0 || atomic_load(&launcher_gone)) {
		sleep_until_mono(start_at);
		start_at = 0;
	}
	const int src[5] = {inp[0], outp[1], errp[1], ctl[1], stp[1]};
	bool launched = launch_send(spec, src, start_at), spawned = launched;
	if (!launched && start_at) {
		sleep_until_mono(start_at);
		start_at = 0;
	}
	/* The timeout counts from the program's start. */
	int64_t start = start_at ? (start_at + 999999) / 1000000
				 : clock_mono_ms();
	bool lost_launch = false; /* the launched reaper never answered */
	if (!spawned && reaper_exe[0]) {
		/* posix_spawn of the reaper program: no copy of this
		 * process's page tables, no copy-on-write while it runs.
		 * Should it fail to start (no /proc), fork as elsewhere. */
		spawned = spawn_reaper_exe(spec, src, &rpid, NULL) == 0;
	}
	if (!spawned) {
		rc = spawn_prepare(spec, inp[0], outp[1], errp[1], &fa, &attr,
				   err);
		if (!rc) {
			rpid = fork();
			if (rpid == 0)
				reaper_main(spec, &fa, &attr, ctl[1], stp[1],
					    inp[0], outp[1], errp[1]);
			int fork_errno = errno;
			posix_spawnattr_destroy(&attr);
			posix_spawn_file_actions_destroy(&fa);
			if (rpid < 0)
				rc = sc_err_set(err, errno_code(fork_errno),
						"cannot run %s: fork: %s",
						spec->argv[0],
						strerror(fork_errno));
		}
	}
	close_fd(&inp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[1]);
	close_fd(&ctl[1]);
	close_fd(&stp[1]);
	if (rc)
		goto done;
	/* The reaper answers once posix_spawn returned: the program was
	 * exec'd and runs. A launched reaper gets a bound: should the
	 * launcher be stopped, the run fails instead of waiting, and the
	 * reaper, if it starts later, finds us gone and starts nothing.
	 * Later runs go to the exec'd reaper. */
	if (launched) {
		struct pollfd p = {stp[0], POLLIN, 0};
		int pr, wait_ms = test_bound_ms("SURECRON_TEST_LAUNCH_WAIT_MS",
					   LAUNCH_WAIT_MS);
		if (start_at) /* and the wait it was asked for */
			wait_ms += (int)((start_at - now_ns) / 1000000) + 1;
		do
			pr = poll(&p, 1, wait_ms);
		while (pr < 0 && errno == EINTR);
		if (pr == 0) {
			/* A launcher that sat on a run is not trusted with
			 * the next ones: they take the exec'd reaper. */
			atomic_store(&launcher_gone, true);
			lost_launch = true;
			rc = sc_err_set(err, SC_EIO, "cannot run %s: the "
					"launcher did not start it in %d ms",
					spec->argv[0], wait_ms);
			goto reap;
		}
	}
	if (!read_msg(stp[0], &m) || m.kind != REAP_STARTED) {
		if (m.kind == REAP_SPAWN_FAILED)
			rc = spawn_error(spec, m.value, err);
		else
			rc = sc_err_set(err, SC_EIO, "cannot run %s: its reaper "
					"ended", spec->argv[0]);
		goto reap;
	}
	/* When the reaper's posix_spawn returned, on spec->clock: now, less
	 * the time the message took to be read here (in the clock's own
	 * units: a test build's clock may run faster than real time). */
	res->started_ns = clock_now_ns(spec->clock);
	if (m.mono_ns > 0) {
		int64_t back = mono_now_ns() - m.mono_ns;
		int64_t real_s = clock_real_delta_ns(spec->clock, 1000000000);
		if (back > 0 && real_s > 0 && back < 1000000000)
			res->started_ns -= back * (1000000000 / real_s);
	}
	set_nonblock(outp[0]);
	set_nonblock(errp[0]);
	set_nonblock(stp[0]);
	if (inp[1] >= 0) {
		set_nonblock(inp[1]);
		if (spec->stdin_len == 0)
			close_fd(&inp[1]);
	}

	int64_t deadline = spec->timeout_ms > 0 ? start + spec->timeout_ms
						 : INT64_MAX;
	int64_t kill_at = INT64_MAX, drain_until = INT64_MAX;
	int64_t next_tick = spec->tick && spec->tick_ms > 0
				    ? start + spec->tick_ms : INT64_MAX;

	for (;;) {
		int64_t now = clock_mono_ms();

		if (ended && outp[0] < 0 && errp[0] < 0)
			break;
		if (!ended && !res->timed_out && now >= deadline) {
			/* SIGTERM first: a task may want to clean up. */
			res->timed_out = true;
			ctl_send(ctl[0], 'T');
			kill_at = now + (spec->grace_ms > 0 ? spec->grace_ms : 0);
		}
		if (!ended && now >= kill_at) {
			ctl_send(ctl[0], 'K');
			kill_at = INT64_MAX;
		}
		if (ended && now >= drain_until)
			break;
		if (!ended && now >= next_tick) {
			next_tick = now + spec->tick_ms;
			int trc = 0;
			if (!res->canceled && spec->tick &&
			    (trc = spec->tick(spec->tick_ud)) != 0) {
				res->canceled = true;
				if (trc == SC_ESTATE) {
					/* Ended as a timeout ends it. */
					ctl_send(ctl[0], 'T');
					kill_at = now + (spec->grace_ms > 0
							 ? spec->grace_ms : 0);
				} else {
					ctl_send(ctl[0], 'K');
				}
			}
		}

		struct pollfd fds[4];
		int nfds = 0, i_out = -1, i_err = -1, i_in = -1, i_st = -1;
		if (outp[0] >= 0) {
			i_out = nfds;
			fds[nfds++] = (struct pollfd){outp[0], POLLIN, 0};
		}
		if (errp[0] >= 0) {
			i_err = nfds;
			fds[nfds++] = (struct pollfd){errp[0], POLLIN, 0};
		}
		if (inp[1] >= 0) {
			i_in = nfds;
			fds[nfds++] = (struct pollfd){inp[1], POLLOUT, 0};
		}
		if (!ended) {
			i_st = nfds;
			fds[nfds++] = (struct pollfd){stp[0], POLLIN, 0};
		}
		int64_t until = ended ? drain_until
				      : (res->timed_out ? kill_at : deadline);
		int64_t wait = until == INT64_MAX ? -1 : until - now;
		if (wait < 0 && until != INT64_MAX)
			wait = 0;
		if (!ended && next_tick != INT64_MAX &&
		    (wait < 0 || wait > next_tick - now))
			wait = next_tick > now ? next_tick - now : 0;
		if (wait > 60000)
			wait = 60000;
		int pr = poll(fds, (nfds_t)nfds, (int)wait);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			rc = sc_err_set(err, SC_EIO, "poll: %s", strerror(errno));
			break;
		}

		if (i_out >= 0 && fds[i_out].revents) {
			ssize_t n;
			while ((n = read(outp[0], chunk, sizeof(chunk))) > 0) {
				if (res->out.len + (size_t)n > spec->max_stdout) {
					/* Over the cap: end the run now, do
					 * not let it run on unread. */
					res->stdout_overflow = true;
					ctl_send(ctl[0], 'K');
					close_fd(&outp[0]);
					break;
				}
				if (buf_add(&res->out, chunk, (size_t)n) != 0) {
					rc = sc_err_set(err, SC_ENOMEM,
							"out of memory");
					ctl_send(ctl[0], 'K');
					close_fd(&outp[0]);
					break;
				}
			}
			if (outp[0] >= 0 && (n == 0 || (n < 0 && errno != EAGAIN &&
							 errno != EINTR)))
				close_fd(&outp[0]);
		}
		if (i_err >= 0 && fds[i_err].revents) {
			ssize_t n;
			while ((n = read(errp[0], chunk, sizeof(chunk))) > 0)
				tail_add(res->err_tail, &tail_len, chunk,
					 (size_t)n);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				close_fd(&errp[0]);
		}
		if (i_in >= 0 && fds[i_in].revents) {
			ssize_t n = send(inp[1], spec->stdin_data + in_off,
					 spec->stdin_len - in_off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				in_off += (size_t)n;
			if (in_off >= spec->stdin_len ||
			    (n < 0 && errno != EAGAIN && errno != EINTR))
				close_fd(&inp[1]); /* EOF, or it stopped reading */
		}
		if (i_st >= 0 && fds[i_st].revents) {
			/* The program ended (the reaper reaped it and now
			 * kills what is left, which closes the pipes), or
			 * the reaper itself died. */
			if (read_msg(stp[0], &m) && m.kind == REAP_ENDED) {
				status = m.value;
				have_status = true;
			}
			ended = true;
			close_fd(&inp[1]);
			drain_until = clock_mono_ms() + DRAIN_MS;
		}
	}

	if (!ended)
		ctl_send(ctl[0], 'K');
reap:
	/* End of file on the control channel tells a reaper still waiting
	 * to end everything; then it exits. */
	close_fd(&ctl[0]);
	if (rpid > 0) {
		while (waitpid(rpid, NULL, 0) < 0 && errno == EINTR)
			;
	} else if (launched && !lost_launch) {
		/* Not our child: its end of the status pipe closes when it
		 * exits, after it reaped everything under it. */
		while (read_msg(stp[0], &m))
			if (m.kind == REAP_ENDED && !have_status) {
				status = m.value;
				have_status = true;
			}
	}
	if (rc)
		goto done;
	if (!have_status) {
		/* Killed before it ended by itself: the reaper reported its
		 * status while ending the rest. */
		set_nonblock(stp[0]);
		while (read_msg(stp[0], &m))
			if (m.kind == REAP_ENDED) {
				status = m.value;
				have_status = true;
			}
	}
	res->elapsed_ms = clock_mono_ms() - start;
	if (!have_status) {
		/* Without a status we cannot call it a success. */
		rc = sc_err_set(err, SC_EIO, "cannot read the exit status of "
				"%s: its reaper ended first", spec->argv[0]);
	} else if (WIFEXITED(status)) {
		res->exited = true;
		res->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->term_signal = WTERMSIG(status);
	}

done:
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&inp[0]);
	close_fd(&inp[1]);
	close_fd(&ctl[0]);
	close_fd(&ctl[1]);
	close_fd(&stp[0]);
	close_fd(&stp[1]);
	return rc;
}

void proc_result_dispose(struct proc_result *res)
{
	if (res)
		buf_dispose(&res->out);
}

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static bool same_key(const char *a, const char *b)
{
	size_t n = key_len(a);

	return n == key_len(b) && strncmp(a, b, n) == 0;
}

char **proc_env_build(char *const *set)
{
	size_t n_env = 0, n_set = 0, o = 0;

	while (environ && environ[n_env])
		n_env++;
	while (set && set[n_set])
		n_set++;
	char **env = calloc(n_env + n_set + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n_env; i++) {
		bool replaced = false;
		for (size_t j = 0; j < n_set && !replaced; j++)
			replaced = same_key(environ[i], set[j]);
		if (!replaced)
			env[o++] = environ[i];
	}
	for (size_t j = 0; j < n_set; j++) {
		bool later = false;
		if (!strchr(set[j], '='))
			continue; /* not KEY=VALUE: ignored */
		for (size_t k = j + 1; k < n_set && !later; k++)
			later = same_key(set[j], set[k]);
		if (!later)
			env[o++] = set[j];
	}
	env[o] = NULL;
	return env;
}

const char *proc_tail_summary(const char *tail, char *out, size_t n)
{
	char tmp[PROC_TAIL_MAX * 3 + 1];
	size_t t = 0;
	bool pending_sep = false;

	if (n == 0)
		return out;
	for (const char *p = tail; *p && t + 4 < sizeof(tmp); p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\n' || c == '\r') {
			pending_sep = t > 0;
			continue;
		}
		if (pending_sep) {
			memcpy(tmp + t, " | ", 3);
			t += 3;
			pending_sep = false;
		}
		tmp[t++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	while (t > 0 && tmp[t - 1] == ' ')
		t--;
	tmp[t] = '\0';
	size_t from = t > n - 1 ? t - (n - 1) : 0;
	/* Do not start inside a UTF-8 sequence. */
	while (from < t && ((unsigned char)tmp[from] & 0xC0) == 0x80)
		from++;
	memcpy(out, tmp + from, t - from + 1);
	return out;
}
