/*
 * target.c - one copy to one target: the table of target kinds and the
 * dispatch through it (see target.h).
 *
 * Invariants:
 *   - every kind of spec.h has exactly one row in kinds[]; target_send
 *     finds the row by kind, so a kind without one is an SC_ECONFIG
 *     error, never a crash;
 *   - the idempotency key is computed here, at send time, and only for
 *     the rows with sends_key: the SHA-256 needs libcrypto, which a
 *     daemon that only writes files never loads (test_lazylib);
 *   - nothing here logs or keeps state: a send is one attempt, and what
 *     it means (guard, resend, hold) is decided by the caller.
 */
#include <stdio.h>

#include "err.h"
#include "target.h"

/* One row per kind; a new kind adds its row here (target.h). */
static const struct target_ops kinds[] = {
	{.kind = TARGET_SLACK, .sends_key = true, .send = target_slack_send},
	{.kind = TARGET_WEBHOOK, .sends_key = true,
	 .send = target_webhook_send},
	{.kind = TARGET_FILE, .sends_key = false, .send = target_file_send},
	{.kind = TARGET_COMMAND, .sends_key = true,
	 .send = target_command_send},
	{.kind = TARGET_EMAIL, .sends_key = true, .send = target_email_send},
};

const struct target_ops *target_ops_of(enum target_kind kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == kind)
			return &kinds[i];
	return NULL;
}

int target_send_key(const struct target_copy *s, char out[MESSAGE_KEY_MAX],
		    struct sc_err *err)
{
	if (s->idempotency_key) {
		snprintf(out, MESSAGE_KEY_MAX, "%s", s->idempotency_key);
		return 0;
	}
	if (!s->kind) {
		out[0] = '\0';
		return 0;
	}
	return message_idempotency_key(s->kind, s->schedule, s->slot_ms,
				       s->target->name, s->attempt, out, err);
}

int target_send(const struct target_copy *s, struct sc_err *err)
{
	const struct target_ops *ops = target_ops_of(s->target->kind);
	char key[MESSAGE_KEY_MAX] = "";

	if (!ops)
		return sc_err_set(err, SC_ECONFIG, "target %s: unknown kind",
				  s->target->name);
	if (ops->sends_key) {
		struct sc_err kerr = {0};
		int rc = target_send_key(s, key, &kerr);
		if (rc)
			return sc_err_set(err, rc, "target %s: %s",
					  s->target->name, kerr.msg);
	}
	return ops->send(s, key, err);
}
