/*
 * sdnotify.c - sd_notify(3)'s datagram protocol, by hand: an unbound
 * AF_UNIX datagram socket, one sendto per message, closed again.
 *
 * Invariants:
 *   - a send never blocks the caller for long: the socket is
 *     non-blocking (a full receive queue at the manager is an error, not
 *     a wait), so the scheduler loop that pings the watchdog cannot hang
 *     on it;
 *   - an abstract address ("@name") is exactly the name after a NUL byte,
 *     without a trailing NUL: the kernel compares abstract names by their
 *     full length, so the length is part of the name;
 *   - nothing is cached: the environment is read at each call (the daemon
 *     reads it once and keeps the answer), so tests can point one process
 *     at several sockets over its life.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sdnotify.h"

int sdnotify_addr(const char *value, struct sockaddr_un *out, socklen_t *len)
{
	size_t n;

	if (!value || (value[0] != '/' && value[0] != '@'))
		return SC_EINVAL;
	n = strlen(value);
	if (n < 2 && value[0] == '@')
		return SC_EINVAL;
	if (n >= sizeof(out->sun_path))
		return SC_EINVAL;
	memset(out, 0, sizeof(*out));
	out->sun_family = AF_UNIX;
	memcpy(out->sun_path, value, n);
	if (value[0] == '@') {
		out->sun_path[0] = '\0';
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
				   1);
	}
	return 0;
}

int sdnotify_send(const char *state, struct sc_err *err)
{
	const char *value = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len = 0;

	if (!value || !*value)
		return 0;
	if (sdnotify_addr(value, &sa, &len) != 0)
		return sc_err_set(err, SC_EINVAL, "NOTIFY_SOCKET is neither "
				  "a path nor an @abstract name");
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return sc_err_set(err, SC_EIO, "notify socket: %s",
				  strerror(errno));
	size_t n = strlen(state);
	ssize_t sent = sendto(fd, state, n, MSG_NOSIGNAL,
			      (const struct sockaddr *)&sa, len);
	int saved = errno;
	close(fd);
	if (sent < 0)
		return sc_err_set(err, SC_EIO, "notify: %s", strerror(saved));
	if ((size_t)sent != n)
		return sc_err_set(err, SC_EIO, "notify: short send");
	return 0;
}

int64_t sdnotify_watchdog_usec(void)
{
	const char *v = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	char *end = NULL;

	if (!v || !*v)
		return 0;
	errno = 0;
	long long us = strtoll(v, &end, 10);
	if (errno || *end || us <= 0)
		return 0;
	if (pid && *pid) {
		errno = 0;
		long long p = strtoll(pid, &end, 10);
		if (errno || *end || p != (long long)getpid())
			return 0;
	}
	return (int64_t)us;
}
