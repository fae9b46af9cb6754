/*
 * status_socket.h - `status_socket: PATH` (issue 15): the daemon answers
 * `surecron status NAME`'s store reads on a Unix socket, through the
 * store handle it keeps open, so the command need not load a database
 * client and open a connection of its own (on PostgreSQL those cost more
 * than the whole answer: docs/bench.md).
 *
 * What the daemon answers is what the store says, read when asked (the
 * same three reads as report_status_read: the schedule's summary, its
 * open alerts, its pauses); nothing is cached. The command keeps its own
 * config for the rest (expression, next slot, policy), so an edit the
 * daemon has not reloaded shows as it would without the socket. Any
 * failure to get an answer (no daemon, another store, a timeout, a store
 * error, a malformed reply) is not an error: the command reads the store
 * itself, as it does without `status_socket`.
 *
 * The exchange, one per connection: the command writes one line of JSON
 * {"v": 1, "store": HASH, "status": NAME} and the daemon writes one JSON
 * object and closes: {"v": 1, "ok": true, "summary": {...} or null,
 * "alerts": [...], "pauses": [...]} or {"v": 1, "ok": false, "error":
 * "..."}. HASH (status_socket_store_id) names the store without carrying
 * its URL, so a daemon of another store is told apart and no password in
 * a URL travels. The socket file is 0600 (mode set before it listens) and
 * the daemon answers only a peer of its own user or root (SO_PEERCRED);
 * the command, in turn, takes an answer only from a server of its own
 * user or root, so a socket another user bound first (in a folder others
 * can write) is no answer: the command reads the store itself.
 *
 * Threading: the server runs one thread of its own, with its own store
 * handle; start and stop are for one thread (the daemon's). The ask is
 * a plain blocking call of the command.
 */
#ifndef SURECRON_STATUS_SOCKET_H
#define SURECRON_STATUS_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "surecron.h"

struct status_socket;

/* Limits: a request line, a reply, the time either side waits. */
#define STATUS_SOCKET_REQ_MAX 4096
#define STATUS_SOCKET_REPLY_MAX (4 * 1024 * 1024)
#define STATUS_SOCKET_TIMEOUT_MS 1000

/* A store's identity in the exchange: 16 hex digits of a hash (FNV-1a,
 * 64 bits) of its resolved URL and, for PostgreSQL, of the libpq
 * variables that can change where that URL leads (PGHOST, PGPORT,
 * PGDATABASE, PGUSER, PGOPTIONS, PGSERVICE, ...; never a password), into
 * out. Not a secret, not a check of trust: it tells two stores apart, so
 * a command whose URL or environment leads elsewhere reads its own. */
void status_socket_store_id(const char *store_url, char out[17]);

/*
 * Opens a store handle of its own on store_url, makes the socket at path
 * (a file left there by a daemon that died is replaced; a live socket, or
 * a file that is not a socket, is SC_EEXIST and left alone) and starts
 * answering. On failure nothing is left behind and err says why. Stop
 * and free with status_socket_stop.
 */
int status_socket_start(const char *path, const char *store_url,
			struct sc_clock *clock, struct status_socket **out,
			struct sc_err *err);

/* Stops answering (waits for the answer in progress), removes the socket
 * file if it is still the one it made, closes the handle and frees. NULL
 * is ignored. */
void status_socket_stop(struct status_socket *s);

/*
 * Asks the daemon at path for schedule's store reads, waiting at most
 * timeout_ms in all. 0 and *out filled as report_status_fetch(store,
 * schedule) fills it, except that out->pz holds the schedule's pause rows
 * only (the caller owns them: report_status_dispose); or an error with
 * *out empty: SC_ENOENT (no daemon there), SC_ETIMEDOUT, SC_EIO (the
 * daemon's store failed), SC_EPROTO (a reply that does not parse),
 * SC_EINVAL (a daemon of another store), or SC_EACCES (the server is of
 * another user, not root: nothing is sent to it). Never prints.
 */
int status_socket_ask(const char *path, const char *store_url,
		      const char *schedule, int timeout_ms,
		      struct report_status *out, struct sc_err *err);

#endif
