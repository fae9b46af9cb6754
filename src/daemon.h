/*
 * daemon.h - `surecron run`: the scheduler, the workers and the signals
 * tied together in one long-running process (docs/internals/daemon.md).
 *
 * A daemon owns: the current config (replaced as a whole on reload), one
 * store handle per thread, `worker.concurrency` worker threads that claim
 * and run jobs, a watcher thread that notices writes by other processes
 * (SQLite: the database files' mtime; PostgreSQL: LISTEN/NOTIFY through
 * store_wait), and the calling thread, which runs the scheduler and sleeps
 * until the next due slot.
 *
 * Thread-safety: daemon_stop and daemon_reload may be called from any
 * thread (not from a signal handler: the CLI forwards signals from a
 * sigwait thread). Everything else is for the owning thread.
 */
#ifndef SURECRON_DAEMON_H
#define SURECRON_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "surecron.h"

struct daemon;

struct daemon_opts {
	const char *config_path;  /* the YAML file (borrowed) */
	struct sc_clock *clock;   /* NULL: the real clock (borrowed) */
	bool once;                /* one pass: schedule, run what is due, exit */
	/* The watcher's store_wait lasts up to 4 x watch_ms (SQLite looks
	 * at its files every STORE_WATCH_STEP_MS within it); 0: 250 ms. */
	int64_t watch_ms;
};

/*
 * Loads the config and opens the store (migrating it). On failure *out is
 * untouched and err says why: SC_ECONFIG (the config's first problem,
 * FILE:LINE:COLUMN), store errors. Free with daemon_free.
 */
int daemon_new(const struct daemon_opts *o, struct daemon **out,
	       struct sc_err *err);

/*
 * Runs until daemon_stop (or, with opts.once, until everything due now
 * has run). Returns 0 when it stopped cleanly (every running slot finished
 * within worker.grace or was released), 1 with opts.once when a run
 * failed (its job was failed or lost), or a negative SC_E* code when it
 * could not start (threads, store).
 */
int daemon_run(struct daemon *d, struct sc_err *err);

/* Asks the daemon to stop: no new claims; running slots get worker.grace
 * to finish, then they are released. Thread-safe, idempotent. */
void daemon_stop(struct daemon *d);

/*
 * Asks the daemon to reload its config file. A config that does not load
 * is refused with a log line and the old one kept. A good one applies as a
 * whole (schedules, targets, worker.lease from the next claim,
 * worker.grace at the next stop, worker.concurrency at once: workers are
 * started, or the extra ones leave after the job they are running), except
 * `store:`, which stays the running one until a restart (a warning says
 * so). Thread-safe.
 */
void daemon_reload(struct daemon *d);

/* Frees the daemon (after daemon_run returned). NULL is ignored. */
void daemon_free(struct daemon *d);

/* ---- daemon_auth.c: auth providers shared by the workers ---------------- */

struct config;
struct http_auth;
struct daemon_tokens;

/*
 * The token cache the daemon's providers share: access tokens kept in the
 * store at store_url, through one handle of its own (opened at first use,
 * reopened after a failure) behind a lock, so any worker thread may call
 * it. clock is borrowed and must outlive it. Returns NULL on no memory
 * (then the providers are built per run). Free with daemon_tokens_free
 * once no provider made over it is in use.
 */
struct daemon_tokens *daemon_tokens_new(const char *store_url,
					struct sc_clock *clock);
void daemon_tokens_free(struct daemon_tokens *t); /* NULL ok */

/*
 * Makes one provider per `auths:` block of cfg over the cache t, for
 * every run of that config. A block whose provider cannot be made (an
 * unset secret variable) is left out with a warning; its tasks make their
 * own per run and fail with the reason. *out is an array of the returned
 * count (NULL when 0), freed with daemon_auths_free after the last run of
 * the config ended. Thread-safe to use; made and freed by one thread.
 */
size_t daemon_auths_new(const struct config *cfg, struct daemon_tokens *t,
			struct http_auth ***out);
void daemon_auths_free(struct http_auth **a, size_t n); /* NULL, 0 ok */

#endif
