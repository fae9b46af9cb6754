/*
 * heartbeat.h - pings to an external monitor in the shape of
 * Healthchecks.io's ping API (docs/internals/heartbeat.md).
 *
 * Per schedule (schedule_extra.heartbeat.url_env names the variable that
 * holds the check's ping URL):
 *   GET URL/start?rid=RID   an attempt of the slot starts
 *   GET URL?rid=RID         the slot is delivered (its marker is written)
 *   GET URL/fail?rid=RID    the slot is lost (its job is DEAD)
 * where RID is heartbeat_rid(schedule, slot): every attempt of one slot
 * carries the same run id, so the monitor pairs them. A failed attempt
 * that will be retried sends nothing.
 * Top level (config.heartbeat): GET URL every `every_ms` (real time) while
 * heartbeat_alive was called within that interval; not otherwise, so the
 * monitor alerts on a dead or stuck daemon, or one whose store is down.
 *
 * A ping never blocks its caller: it is queued (HEARTBEAT_QUEUE_MAX; when
 * full, the oldest is dropped and counted) for the one pinger thread the
 * object owns, which sends it with the HTTP client (TLS verified, no
 * redirects, HEARTBEAT_CONNECT_TIMEOUT_MS / HEARTBEAT_TIMEOUT_MS) and
 * tries it HEARTBEAT_TRIES times. A ping that still fails is a warning
 * line (module=heartbeat event=ping_failed) and a counter, never an error
 * of the run. The URLs are secrets: they come from the environment and a
 * log line shows their scheme and host only.
 *
 * Ownership: heartbeat_new allocates, heartbeat_free frees (it stops the
 * thread). The URLs are copied from the environment at heartbeat_new and
 * heartbeat_configure; the config is not kept.
 * Thread-safety: every function may be called from any thread, except
 * heartbeat_free (once, when no other thread uses the object).
 */
#ifndef SURECRON_HEARTBEAT_H
#define SURECRON_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

#define HEARTBEAT_QUEUE_MAX 256
#define HEARTBEAT_TRIES 3
#define HEARTBEAT_CONNECT_TIMEOUT_MS 5000
#define HEARTBEAT_TIMEOUT_MS 10000
/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" and its NUL. */
#define HEARTBEAT_RID_MAX 37

/* What a per-schedule ping says. */
enum heartbeat_kind {
	HEARTBEAT_START,   /* URL/start: an attempt starts */
	HEARTBEAT_SUCCESS, /* URL: the slot is delivered */
	HEARTBEAT_FAIL,    /* URL/fail: the slot is lost */
};

/* The pinger's counts since heartbeat_new (for /metrics). */
struct heartbeat_counters {
	uint64_t sent;    /* pings answered 2xx */
	uint64_t failed;  /* pings given up after HEARTBEAT_TRIES */
	uint64_t dropped; /* pings dropped unsent (queue full) */
};

/*
 * The run id of (schedule, slot_ms): the first 16 bytes of the SHA-256 of
 * "surecron/heartbeat/1", schedule and the slot's decimal ms (each with
 * its NUL), as a UUID of version 8 (RFC 9562's custom, name-based form)
 * and the RFC variant, written 8-4-4-4-12 in lower-case hex. Deterministic:
 * the same on every node and every attempt. Returns 0, or SC_EIO when
 * libcrypto cannot be loaded (err says which package), SC_ENOMEM.
 */
int heartbeat_rid(const char *schedule, int64_t slot_ms,
		  char out[HEARTBEAT_RID_MAX], struct sc_err *err);

struct heartbeat;

/*
 * Creates the pinger for cfg (heartbeat_configure) and starts its thread.
 * A config without any heartbeat gives an object whose calls do nothing
 * (and no thread until a reload adds one). Returns 0, or SC_ENOMEM (or
 * pthread's failure as SC_ENOMEM); *out is untouched on failure.
 */
int heartbeat_new(const struct config *cfg, struct heartbeat **out,
		  struct sc_err *err);

/*
 * Takes the heartbeat settings of cfg (a reload): the URLs are read from
 * the environment again; pings already queued keep their URLs. A variable
 * that is unset or empty means no ping for it (`surecron check` reports
 * it). Returns 0 or SC_ENOMEM (the old settings are then kept).
 */
int heartbeat_configure(struct heartbeat *hb, const struct config *cfg,
			struct sc_err *err);

/*
 * Queues the ping of `kind` for (schedule, slot_ms), when that schedule
 * has a heartbeat URL; nothing otherwise. Never blocks on the network.
 * hb may be NULL (nothing).
 */
void heartbeat_slot(struct heartbeat *hb, const char *schedule,
		    int64_t slot_ms, enum heartbeat_kind kind);

/*
 * The scheduler loop has just run and the store answered: the daemon's
 * ping may go out (when it is due). hb may be NULL.
 */
void heartbeat_alive(struct heartbeat *hb);

/* The top-level ping period (ms), 0 without a top-level heartbeat: the
 * scheduler loop must call heartbeat_alive more often than this. */
int64_t heartbeat_every_ms(struct heartbeat *hb);

/*
 * Waits until every queued ping has been sent or given up, or timeout_ms
 * (real time) passed. Returns true when the queue is empty. For `run
 * --once`, whose process ends right after.
 */
bool heartbeat_flush(struct heartbeat *hb, int64_t timeout_ms);

/* Copies the counters into *out. */
void heartbeat_counters(struct heartbeat *hb, struct heartbeat_counters *out);

/* Stops the thread (after the ping in flight, at most its timeouts;
 * queued pings are dropped: call heartbeat_flush first to send them) and
 * frees everything, wiping the URLs. NULL ok. */
void heartbeat_free(struct heartbeat *hb);

#endif
