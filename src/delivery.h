/*
 * delivery.h - messages, targets, notices and alerts.
 *
 * Every message is one JSON object (compact, one line):
 *   {"kind": "result" | "failure_notice" | "alert",
 *    "schedule": "...", "slot": "ISO 8601 UTC", "attempt": N,
 *    "summary": "..." | null, "previews": ["..."],
 *    "failures": [{"task": "...", "error": "..."}]}
 * followed, for alerts, by "error": "...", and by "text": the chat
 * rendering (summary, previews, one notice line per failure) that slack
 * posts. Receivers must ignore fields they do not know: more may follow.
 *
 * Targets (spec.h target_kind): slack renders "text" from the message;
 * webhook POSTs the object (Idempotency-Key header, optional HMAC-SHA256
 * signature); file appends the object as one line; command gets it on
 * stdin. URLs and secrets are read from the environment variables the
 * target names, at send time, and are never logged.
 *
 * The outbox flow, which makes a result go out once, is outbox.h.
 * Notices and alerts bypass the outbox: they are sent directly, and a
 * failure to send them is only a warning for the caller to log.
 *
 * Thread-safety: every function may run in several threads at once, each
 * with its own store handle.
 */
#ifndef SURECRON_DELIVERY_H
#define SURECRON_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"
#include "surecron.h"

#define DELIVERY_RESULT "result"
#define DELIVERY_NOTICE "failure_notice"
#define DELIVERY_ALERT "alert"

#define DELIVERY_KEY_MAX 65        /* idempotency key / hex digest + NUL */
#define DELIVERY_MAX_BODY ((size_t)4 << 20) /* composed message cap */
#define DELIVERY_DEFAULT_CONNECT_MS 10000
#define DELIVERY_DEFAULT_TIMEOUT_MS 30000
#define DELIVERY_DEFAULT_SIG_HEADER "X-Surecron-Signature"
#define DELIVERY_TIMESTAMP_HEADER "X-Surecron-Timestamp"

/* ---- messages ----------------------------------------------------------- */

struct delivery_failure {
	const char *task;
	const char *error;          /* the bare reason, without the task name */
};

/* A message before it is composed (all borrowed). */
struct delivery_msg {
	const char *kind;           /* DELIVERY_RESULT, _NOTICE or _ALERT */
	const char *schedule;
	int64_t slot_ms;
	int attempt;
	const char *summary;        /* NULL: JSON null */
	char *const *previews;
	size_t n_previews;
	const struct delivery_failure *failures;
	size_t n_failures;
	const char *error;          /* alerts: why the slot was lost; or NULL */
};

/*
 * Composes m into *out (allocated; free with free()). Strings that are not
 * valid UTF-8 are repaired ('?'), so this fails only with SC_ENOMEM or
 * SC_ETOOBIG (above DELIVERY_MAX_BODY).
 */
int delivery_compose(const struct delivery_msg *m, char **out,
		     struct sc_err *err);

/*
 * Writes the failure notice line "⚠️ {task}: generation failed — {reason}"
 * into out (size n, truncated to fit). Returns out.
 */
const char *delivery_notice_line(const char *task, const char *reason,
				 char *out, size_t n);

/*
 * Renders a composed message as chat text (slack's "text"): the summary,
 * the previews, then one notice line per failure; for an alert its
 * summary and error. *out is allocated. SC_EPROTO if body is not a
 * message object, SC_ENOMEM.
 */
int delivery_render_text(const char *body, char **out, struct sc_err *err);

/*
 * The idempotency key of a copy: hex SHA-256 (first 32 digits) of
 * (kind, schedule, slot, target) — the same for every copy of one
 * (slot, target) result, whatever the attempt. Notices and alerts add
 * `attempt`, since each attempt's notice is a different message
 * (pass 0 for results). Loads libcrypto on first use (lazylib.h): 0, or
 * SC_EIO with the load error in err (out is then ""). Only the targets
 * that pass the key on (webhook, slack, command) compute it, at send time
 * (delivery_send_key), so file deliveries never load libcrypto.
 */
int delivery_idempotency_key(const char *kind, const char *schedule,
			     int64_t slot_ms, const char *target, int attempt,
			     char out[DELIVERY_KEY_MAX], struct sc_err *err);

/*
 * HMAC-SHA256 of `timestamp "." body` with key secret, as lowercase hex
 * (64 digits + NUL) into out. Returns 0 or SC_EIO (also when libcrypto
 * cannot be loaded: call dl_crypto_load first for the reason).
 */
int delivery_sign(const char *secret, size_t secret_len, const char *timestamp,
		  const char *body, size_t body_len, char out[DELIVERY_KEY_MAX]);

/* ---- sending one copy ----------------------------------------------------- */

struct target_copy {
	const struct target_spec *target;
	const char *body;           /* the composed message */
	const char *idempotency_key; /* NULL: from the four below */
	const char *kind;           /* DELIVERY_*; NULL (and no key): none */
	const char *schedule;
	int64_t slot_ms;
	int attempt;                /* 0 for results (see the key above) */
	struct sc_clock *clock;     /* signature timestamps; NULL: real */
};

/*
 * The idempotency key of s into out: s->idempotency_key when set, else
 * delivery_idempotency_key of (kind, schedule, slot_ms, target name,
 * attempt), else "" when s->kind is NULL. 0 or SC_EIO (libcrypto could
 * not be loaded; the reason in err).
 */
int delivery_send_key(const struct target_copy *s,
		      char out[DELIVERY_KEY_MAX], struct sc_err *err);

/*
 * Sends one copy to one target, with no outbox and no guard (the caller
 * decides what the result means). Returns 0 when the target took it (2xx,
 * line written and fsync'd, command exited 0), else SC_EDELIVERY (or
 * SC_ECONFIG for a target whose variables are unset) with the status and a
 * short body excerpt in err, and for HTTP 429/503 the Retry-After hint.
 * err->ambiguous is true when the copy may have been taken all the same
 * (a timeout after the request left, an empty reply, a command killed
 * after it started: docs/delivery.md has the list per kind); false for a
 * sure failure.
 */
int delivery_send(const struct target_copy *s, struct sc_err *err);

/*
 * POSTs body (Content-Type: application/json) to the URL held by the
 * environment variable t->url_env, with extra headers ("Name: value",
 * NULL-terminated, may be NULL). https only, except loopback; redirects
 * are not followed; the target's connect and total timeouts apply.
 * Errors say "target NAME: HTTP 500: <body excerpt>" and never hold the
 * URL (webhook URLs carry secrets in their path). Used by the slack and
 * webhook targets.
 */
int delivery_http_post(const struct target_copy *s, const char *body,
		       const char *const *headers, struct sc_err *err);

/* The target kinds (one file each). Same contract as delivery_send. */
int target_slack_send(const struct target_copy *s, struct sc_err *err);
int target_webhook_send(const struct target_copy *s, struct sc_err *err);
int target_file_send(const struct target_copy *s, struct sc_err *err);
int target_command_send(const struct target_copy *s, struct sc_err *err);

#endif
