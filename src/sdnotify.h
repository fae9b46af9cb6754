/*
 * sdnotify.h - systemd's notification protocol, without libsystemd
 * (docs/internals/sdnotify.md).
 *
 * The protocol (sd_notify(3)): one datagram per message, its payload the
 * state lines ("READY=1", "WATCHDOG=1", "STOPPING=1"), sent to the AF_UNIX
 * socket named by $NOTIFY_SOCKET. A value starting with '/' is a path; one
 * starting with '@' names a socket in Linux's abstract namespace (the '@'
 * becomes a NUL byte). With $NOTIFY_SOCKET unset there is no service
 * manager listening and every send is a no-op.
 *
 * The watchdog: $WATCHDOG_USEC (set by systemd when the unit has
 * WatchdogSec=) is the interval within which a WATCHDOG=1 must arrive, or
 * the service is killed and restarted; $WATCHDOG_PID, when set, names the
 * process meant, and a process with another pid must not ping.
 *
 * Nothing here allocates; every function is thread-safe (each send opens
 * and closes its own socket).
 */
#ifndef SURECRON_SDNOTIFY_H
#define SURECRON_SDNOTIFY_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "err.h"

/*
 * Builds the socket address for a $NOTIFY_SOCKET value: a path (must
 * start with '/') or "@name" (abstract: sun_path[0] is NUL, then name; the
 * length covers exactly the name, no trailing NUL, as systemd binds it).
 * *len gets the address length to pass to sendto.
 * Returns 0, or SC_EINVAL for an empty value, one that is neither form, or
 * one too long for sun_path.
 */
int sdnotify_addr(const char *value, struct sockaddr_un *out, socklen_t *len);

/*
 * Sends state (e.g. "READY=1") to $NOTIFY_SOCKET. Returns 0 when sent or
 * when $NOTIFY_SOCKET is unset (nothing to tell); SC_EINVAL for a value
 * sdnotify_addr refuses; SC_EIO (err: the errno's text) when the socket
 * cannot be made or the send fails.
 */
int sdnotify_send(const char *state, struct sc_err *err);

/*
 * The watchdog interval asked of this process, in microseconds: the value
 * of $WATCHDOG_USEC when it is a positive integer and $WATCHDOG_PID is
 * unset or equal to getpid(); 0 otherwise (no watchdog for us).
 */
int64_t sdnotify_watchdog_usec(void);

#endif
