/*
 * sock_impostor.h - another local user who binds the status socket's path
 * before the daemon (issue 44): a process of uid `uid` (the test runs as
 * root and gives it away with setgid/setuid) that listens on a Unix socket
 * and answers every connection with one canned reply, the forgery. For
 * each connection it reports on a pipe whether the client sent it
 * anything ('s') or nothing ('n'), so a test can tell that a client
 * refused it before sending its question.
 *
 * Header-only (static inline). Needs root: tu_impostor_start returns
 * false otherwise (the caller skips).
 */
#ifndef SURECRON_TESTS_SOCK_IMPOSTOR_H
#define SURECRON_TESTS_SOCK_IMPOSTOR_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct tu_impostor {
	pid_t pid;
	int report; /* read end: one byte per connection served */
};

static inline void tu_impostor_serve(int fd, const char *reply, int report)
{
	for (;;) {
		int c = accept(fd, NULL, NULL);
		if (c < 0)
			continue;
		char buf[4096];
		size_t got = 0;
		for (;;) {
			struct pollfd p = {.fd = c, .events = POLLIN};
			if (poll(&p, 1, 2000) <= 0)
				break;
			ssize_t r = read(c, buf, sizeof(buf));
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		char b = got ? 's' : 'n';
		(void)!write(report, &b, 1);
		(void)!write(c, reply, strlen(reply));
		close(c);
	}
}

/* Starts the impostor on path as uid. False when not root or it could not
 * bind (the socket's folder must let uid in and write). */
static inline bool tu_impostor_start(struct tu_impostor *im, const char *path,
				     uid_t uid, const char *reply)
{
	int ready[2], report[2];

	*im = (struct tu_impostor){.pid = 0, .report = -1};
	if (geteuid() != 0 || pipe(ready) != 0)
		return false;
	if (pipe(report) != 0) {
		close(ready[0]);
		close(ready[1]);
		return false;
	}
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		close(ready[0]);
		close(report[0]);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		signal(SIGPIPE, SIG_IGN); /* a client that hung up */
		if (setgid(uid) != 0 || setuid(uid) != 0)
			_exit(1);
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    listen(fd, 8) != 0)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		close(ready[1]);
		tu_impostor_serve(fd, reply, report[1]);
		_exit(0);
	}
	close(ready[1]);
	close(report[1]);
	char b = 0;
	ssize_t r = read(ready[0], &b, 1);
	close(ready[0]);
	if (r != 1) {
		close(report[0]);
		waitpid(pid, NULL, 0);
		return false;
	}
	im->pid = pid;
	im->report = report[0];
	return true;
}

/* The report of the next connection served ('s' or 'n'), waiting up to
 * ms; 0 when none came. */
static inline char tu_impostor_next(const struct tu_impostor *im, int ms)
{
	struct pollfd p = {.fd = im->report, .events = POLLIN};
	char b = 0;

	if (poll(&p, 1, ms) == 1 && read(im->report, &b, 1) == 1)
		return b;
	return 0;
}

static inline void tu_impostor_stop(struct tu_impostor *im)
{
	if (im->pid > 0) {
		kill(im->pid, SIGKILL);
		waitpid(im->pid, NULL, 0);
		close(im->report);
	}
	im->pid = 0;
}

#endif
