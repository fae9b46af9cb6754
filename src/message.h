/*
 * message.h - what is sent: composing a message, its chat text, the
 * failure notice line, the idempotency key and the webhook signature.
 * Nothing here sends (target.h does); nothing here touches the store.
 *
 * Every message is one JSON object (compact, one line):
 *   {"kind": "result" | "failure_notice" | "alert",
 *    "schedule": "...", "slot": "ISO 8601 UTC", "attempt": N,
 *    "summary": "..." | null, "previews": ["..."],
 *    "failures": [{"task": "...", "error": "..."}]}
 * followed, for alerts, by "error": "...", "reason": "lost" | "missed" |
 * "recovered", "slots": {"first", "last", "count"} (ISO 8601 UTC),
 * "round" (0, then one more per realert) and "command" (what to run),
 * and by "text": the chat
 * rendering (summary, previews, one notice line per failure) that slack
 * posts. Receivers must ignore fields they do not know: more may follow.
 *
 * Results go out through the outbox (outbox.h), which stores the composed
 * message and sends it once per target; alerts through their own send
 * rows (alert.h), retried the same way. Failure notices are composed here
 * too but bypass both: the orchestrator sends them directly with
 * target_send, and a failure to send one is only a warning.
 *
 * Memory: composed and rendered strings are allocated here and freed by
 * the caller with free(); keys and signatures go into caller buffers of
 * MESSAGE_KEY_MAX bytes.
 *
 * Thread-safety: every function may run in several threads at once.
 */
#ifndef SURECRON_MESSAGE_H
#define SURECRON_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "surecron.h"

#define MESSAGE_RESULT "result"
#define MESSAGE_NOTICE "failure_notice"
#define MESSAGE_ALERT "alert"

#define MESSAGE_KEY_MAX 65        /* idempotency key / hex digest + NUL */
#define MESSAGE_MAX_BODY ((size_t)4 << 20) /* composed message cap */

struct message_failure {
	const char *task;
	const char *error;          /* the bare reason, without the task name */
};

/* A message before it is composed (all borrowed). */
struct message {
	const char *kind;           /* MESSAGE_RESULT, _NOTICE or _ALERT */
	const char *schedule;
	int64_t slot_ms;
	int attempt;
	const char *summary;        /* NULL: JSON null */
	char *const *previews;
	size_t n_previews;
	const struct message_failure *failures;
	size_t n_failures;
	const char *error;          /* alerts: why the slot was lost; or NULL */
	/* Alerts only (kind MESSAGE_ALERT; issue 13): reason NULL for
	 * every other kind, and then none of these is written. */
	const char *reason;         /* "lost" | "missed" | "recovered" */
	int64_t last_slot_ms;       /* missed: the last slot missed */
	int64_t n_slots;            /* missed: how many slots */
	int round;                  /* 0, then 1, 2... for each realert */
	const char *command;        /* what an operator runs next, or NULL */
	bool late;                  /* results: delivered after the slot's
				       `deadline:` (a manual run); writes
				       "late": true, else no field */
};

/*
 * Composes m into *out (allocated; free with free()). Strings that are not
 * valid UTF-8 are repaired ('?'), so this fails only with SC_ENOMEM or
 * SC_ETOOBIG (above MESSAGE_MAX_BODY).
 */
int message_compose(const struct message *m, char **out, struct sc_err *err);

/*
 * Writes the failure notice line "⚠️ {task}: generation failed — {reason}"
 * into out (size n, truncated to fit). Returns out.
 */
const char *message_notice_line(const char *task, const char *reason,
				char *out, size_t n);

/*
 * Renders a composed message as chat text (slack's "text"): the summary,
 * the previews, then one notice line per failure; for an alert its
 * summary and error. *out is allocated. SC_EPROTO if body is not a
 * message object, SC_ENOMEM.
 */
int message_render_text(const char *body, char **out, struct sc_err *err);

/*
 * The idempotency key of a copy: hex SHA-256 (first 32 digits) of
 * (kind, schedule, slot, target) — the same for every copy of one
 * (slot, target) result, whatever the attempt. Notices and alerts add
 * `attempt`, since each attempt's notice is a different message
 * (pass 0 for results). Loads libcrypto on first use (lazylib.h): 0, or
 * SC_EIO with the load error in err (out is then ""). Only the target
 * kinds that pass the key on (webhook, slack, command: their row in
 * target.c says so) compute it, at send time (target_send_key), so file
 * deliveries never load libcrypto.
 */
int message_idempotency_key(const char *kind, const char *schedule,
			    int64_t slot_ms, const char *target, int attempt,
			    char out[MESSAGE_KEY_MAX], struct sc_err *err);

/*
 * HMAC-SHA256 of `timestamp "." body` with key secret, as lowercase hex
 * (64 digits + NUL) into out. Returns 0 or SC_EIO (also when libcrypto
 * cannot be loaded: call dl_crypto_load first for the reason).
 */
int message_sign(const char *secret, size_t secret_len, const char *timestamp,
		 const char *body, size_t body_len, char out[MESSAGE_KEY_MAX]);

#endif
