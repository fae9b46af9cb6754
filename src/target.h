/*
 * target.h - sending one copy of a composed message to one target.
 *
 * Target kinds (spec.h target_kind): slack renders "text" from the
 * message and POSTs {"text": ...}; webhook POSTs the object
 * (Idempotency-Key header, optional HMAC-SHA256 signature); file appends
 * the object as one line; command gets it on stdin; email sends the text
 * as a plain-text mail over SMTP (Message-ID from the idempotency key). URLs and secrets are
 * read from the environment variables the target names, at send time, and
 * are never logged.
 *
 * target_send dispatches through a table of per-kind operations
 * (target_kinds[] in target.c), the way struct store_ops serves the store
 * backends: one row per kind, holding its send function and what else
 * differs per kind (today: whether it passes an idempotency key on).
 * A new target kind is one file, target_<kind>.c, defining
 * target_<kind>_send, plus one row in that table (and, outside this
 * module, its enum value in spec.h and the reading of its fields in the
 * config). The kinds that POST share target_http_post (target_http.c).
 *
 * What a copy means to the caller (once per target, send guards, resends)
 * is the outbox's business (outbox.h); here a send is one attempt with no
 * memory. Failure notices and alerts call target_send directly.
 *
 * Thread-safety: every function may run in several threads at once; a
 * file target serialises its appends itself (target_file.c).
 */
#ifndef SURECRON_TARGET_H
#define SURECRON_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "message.h"
#include "spec.h"
#include "surecron.h"

#define TARGET_DEFAULT_CONNECT_MS 10000
#define TARGET_DEFAULT_TIMEOUT_MS 30000
#define TARGET_DEFAULT_SIG_HEADER "X-Surecron-Signature"
#define TARGET_TIMESTAMP_HEADER "X-Surecron-Timestamp"

/* One copy to one target (all borrowed). */
struct target_copy {
	const struct target_spec *target;
	const char *body;           /* the composed message */
	const char *idempotency_key; /* NULL: from the four below */
	const char *kind;           /* MESSAGE_*; NULL (and no key): none */
	const char *schedule;
	int64_t slot_ms;
	int attempt;                /* 0 for results (see message.h) */
	struct sc_clock *clock;     /* signature timestamps; NULL: real */
	const struct sc_zone *zone; /* the schedule's, for texts that show
				       the slot locally (email); NULL: UTC */
	/* Called on the sending thread while the send lasts (about once a
	 * second at least, while it waits for the target): the worker keeps
	 * the job's lease with it, so a slow but healthy target is not
	 * taken for a dead worker's (issue 42). It cannot stop the send.
	 * NULL: none. */
	void (*keep)(void *ud);
	void *keep_ud;
};

/*
 * A kind's send: same contract as target_send. key is the copy's
 * idempotency key (target_send_key) when the kind's row has sends_key,
 * else "".
 */
typedef int (*target_send_fn)(const struct target_copy *s, const char *key,
			      struct sc_err *err);

/* One row of the kind table (target.c). */
struct target_ops {
	enum target_kind kind;
	bool sends_key;             /* passes an idempotency key on, so the
				       key (and libcrypto) is computed */
	target_send_fn send;
};

/* The row of kind, or NULL for a kind that has none. Static storage. */
const struct target_ops *target_ops_of(enum target_kind kind);

/*
 * The idempotency key of s into out: s->idempotency_key when set, else
 * message_idempotency_key of (kind, schedule, slot_ms, target name,
 * attempt), else "" when s->kind is NULL. 0 or SC_EIO (libcrypto could
 * not be loaded; the reason in err).
 */
int target_send_key(const struct target_copy *s, char out[MESSAGE_KEY_MAX],
		    struct sc_err *err);

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
int target_send(const struct target_copy *s, struct sc_err *err);

/*
 * POSTs body (Content-Type: application/json) to the URL held by the
 * environment variable t->url_env, with extra headers ("Name: value",
 * NULL-terminated, may be NULL). https only, except loopback; redirects
 * are not followed; the target's connect and total timeouts apply.
 * Errors say "target NAME: HTTP 500: <body excerpt>" and never hold the
 * URL (webhook URLs carry secrets in their path). Used by the slack and
 * webhook targets.
 */
int target_http_post(const struct target_copy *s, const char *body,
		     const char *const *headers, struct sc_err *err);

/* The kinds' send functions (target_<kind>.c), as target_send_fn. */
int target_slack_send(const struct target_copy *s, const char *key,
		      struct sc_err *err);
int target_webhook_send(const struct target_copy *s, const char *key,
			struct sc_err *err);
int target_file_send(const struct target_copy *s, const char *key,
		     struct sc_err *err);
int target_command_send(const struct target_copy *s, const char *key,
			struct sc_err *err);
int target_email_send(const struct target_copy *s, const char *key,
		      struct sc_err *err);

/*
 * The mail an email target sends for s, with key its idempotency key:
 * RFC 5322 headers (Date from s->clock, From, To, a Subject naming the
 * schedule, the kind and the slot in s->zone, Message-ID <KEY@surecron>)
 * and the chat text of the message as a quoted-printable UTF-8 body, CRLF
 * line ends. *out is allocated (free()), *len its length. SC_ENOMEM, or
 * SC_EINVAL when the body is not a message (message_render_text).
 */
int target_email_render(const struct target_copy *s, const char *key,
			char **out, size_t *len, struct sc_err *err);

/* The subject line of target_email_render, without "Subject: ", into out
 * (at most n bytes, NUL-terminated). */
void target_email_subject(const struct target_copy *s, const char *reason,
			  char *out, size_t n);

#endif
