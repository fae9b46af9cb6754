/*
 * proc.c - child processes for command tasks and command targets.
 *
 * One poll() loop watches the child's stdout, stderr, stdin (when data is
 * fed) and a pidfd that becomes readable when the child ends; nothing here
 * sleeps. Invariants:
 *   - the child is the leader of its own process group (POSIX_SPAWN_
 *     SETPGROUP), and every signal we send goes to the whole group;
 *   - the group is signalled only while the leader is unreaped (a zombie
 *     at worst), so its id cannot have been reused by another process;
 *   - when proc_run returns, the child is reaped and its group was sent
 *     SIGKILL, so nothing it started is left running;
 *   - stdout never holds more than max_stdout bytes: the first byte over
 *     the cap ends the group;
 *   - all our descriptors are close-on-exec, so a child never inherits
 *     another child's pipes (tasks may run in several threads at once).
 * stdin is a socketpair rather than a pipe so that writes can use
 * MSG_NOSIGNAL: a child that exits without reading must not raise SIGPIPE
 * in the library's host process.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "proc.h"

extern char **environ;

/* After the leader exited, how long we keep reading what its group wrote
 * before giving up on a descriptor held open by an escaped process. */
#define DRAIN_MS 2000
/* Poll period when the kernel has no pidfd (before Linux 5.3). */
#define NO_PIDFD_POLL_MS 20

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

/* Has the child ended? Never reaps it (WNOWAIT), so its pid and group id
 * stay reserved until we signal the group one last time. */
static bool child_ended(pid_t pid, int pidfd, short revents)
{
	siginfo_t si;

	if (pidfd >= 0)
		return (revents & (POLLIN | POLLHUP)) != 0;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
		return errno == ECHILD;
	return si.si_pid == pid;
}

static int spawn(const struct proc_spec *spec, int in_fd, int out_fd,
		 int err_fd, pid_t *pid, struct sc_err *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	static const int reset[] = {SIGPIPE, SIGINT,  SIGTERM, SIGHUP,
				    SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2,
				    SIGALRM};
	int rc;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	if (posix_spawnattr_init(&attr) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	rc = posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	if (!rc && spec->cwd)
		rc = posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
	/* Signals the host ignores or blocks would be inherited across exec:
	 * the child starts with defaults and an empty mask. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
		sigaddset(&dfl, reset[i]);
	if (!rc)
		rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
						     POSIX_SPAWN_SETSIGMASK |
						     POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawnattr_setpgroup(&attr, 0);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&attr, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&attr, &dfl);
	if (!rc)
		rc = posix_spawnp(pid, spec->argv[0], &fa, &attr, spec->argv,
				  spec->envp ? spec->envp : environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (rc == 0)
		return 0;
	if (rc == ENOENT && spec->cwd && access(spec->cwd, X_OK) != 0)
		return sc_err_set(err, SC_ENOENT,
				  "cannot enter working directory %s: %s",
				  spec->cwd, strerror(errno));
	return sc_err_set(err, errno_code(rc), "cannot run %s: %s",
			  spec->argv[0], strerror(rc));
}

int proc_run(const struct proc_spec *spec, struct proc_result *res,
	     struct sc_err *err)
{
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, inp[2] = {-1, -1};
	int pidfd = -1, rc = 0, status = 0;
	size_t in_off = 0, tail_len = 0;
	pid_t pid = -1;
	bool ended = false;
	char chunk[16384];

	memset(res, 0, sizeof(*res));
	buf_init(&res->out, spec->max_stdout);
	if (!spec->argv || !spec->argv[0])
		return sc_err_set(err, SC_EINVAL, "empty command");
	if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
		rc = sc_err_set(err, SC_EIO, "pipe: %s", strerror(errno));
		goto done;
	}
	if (spec->stdin_data) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, inp)) {
			rc = sc_err_set(err, SC_EIO, "socketpair: %s",
					strerror(errno));
			goto done;
		}
	} else {
		inp[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (inp[0] < 0) {
			rc = sc_err_set(err, SC_EIO, "/dev/null: %s",
					strerror(errno));
			goto done;
		}
	}

	int64_t start = clock_mono_ms();
	rc = spawn(spec, inp[0], outp[1], errp[1], &pid, err);
	/* posix_spawn returns once the child has exec'd: the program runs. */
	if (!rc)
		res->started_ns = clock_now_ns(spec->clock);
	close_fd(&inp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[1]);
	if (rc)
		goto done;
	pidfd = pidfd_open(pid, 0);
	set_nonblock(outp[0]);
	set_nonblock(errp[0]);
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
			kill(-pid, SIGTERM);
			kill_at = now + (spec->grace_ms > 0 ? spec->grace_ms : 0);
		}
		if (!ended && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = INT64_MAX;
		}
		if (ended && now >= drain_until)
			break;
		if (!ended && now >= next_tick) {
			next_tick = now + spec->tick_ms;
			if (!res->canceled && spec->tick &&
			    spec->tick(spec->tick_ud) != 0) {
				res->canceled = true;
				kill(-pid, SIGKILL);
			}
		}

		struct pollfd fds[4];
		int nfds = 0, i_out = -1, i_err = -1, i_in = -1, i_pid = -1;
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
		if (!ended && pidfd >= 0) {
			i_pid = nfds;
			fds[nfds++] = (struct pollfd){pidfd, POLLIN, 0};
		}
		int64_t until = ended ? drain_until
				      : (res->timed_out ? kill_at : deadline);
		int64_t wait = until == INT64_MAX ? -1 : until - now;
		if (wait < 0 && until != INT64_MAX)
			wait = 0;
		if (!ended && next_tick != INT64_MAX &&
		    (wait < 0 || wait > next_tick - now))
			wait = next_tick > now ? next_tick - now : 0;
		if (!ended && pidfd < 0 && (wait < 0 || wait > NO_PIDFD_POLL_MS))
			wait = NO_PIDFD_POLL_MS;
		if (wait > 60000)
			wait = 60000;
		int pr = poll(fds, (nfds_t)nfds, (int)wait);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			rc = sc_err_set(err, SC_EIO, "poll: %s", strerror(errno));
			kill(-pid, SIGKILL);
			break;
		}

		if (i_out >= 0 && fds[i_out].revents) {
			ssize_t n;
			while ((n = read(outp[0], chunk, sizeof(chunk))) > 0) {
				if (res->out.len + (size_t)n > spec->max_stdout) {
					/* Over the cap: end the group now, do
					 * not let it run on unread. */
					res->stdout_overflow = true;
					kill(-pid, SIGKILL);
					close_fd(&outp[0]);
					break;
				}
				if (buf_add(&res->out, chunk, (size_t)n) != 0) {
					rc = sc_err_set(err, SC_ENOMEM,
							"out of memory");
					kill(-pid, SIGKILL);
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
		if (!ended && child_ended(pid, pidfd,
					  i_pid >= 0 ? fds[i_pid].revents : 0)) {
			ended = true;
			/* The leader is a zombie, not yet reaped: the group id
			 * is still ours. End whatever it left behind. */
			kill(-pid, SIGKILL);
			close_fd(&inp[1]);
			drain_until = clock_mono_ms() + DRAIN_MS;
		}
	}

	if (!ended)
		kill(-pid, SIGKILL);
	pid_t w;
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	res->elapsed_ms = clock_mono_ms() - start;
	if (w < 0) {
		/* Without a status we cannot call it a success: a host that
		 * ignores SIGCHLD has its children reaped by the kernel. */
		rc = sc_err_set(err, SC_EIO, "cannot read the exit status of "
				"%s: %s", spec->argv[0], strerror(errno));
	} else if (WIFEXITED(status)) {
		res->exited = true;
		res->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->term_signal = WTERMSIG(status);
	}

done:
	close_fd(&pidfd);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&inp[0]);
	close_fd(&inp[1]);
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
