/*
 * target_slack.c - the `slack` target: an incoming-webhook POST of
 * {"text": "..."}, the text rendered from the message object.
 *
 * The webhook URL (which holds the secret) comes from the variable the
 * target names and never appears in logs or errors.
 */
#include <stdlib.h>

#include <jansson.h>

#include "err.h"
#include "message.h"
#include "target.h"

int target_slack_send(const struct target_copy *s, const char *k,
		      struct sc_err *err)
{
	char *text = NULL, *payload = NULL;
	char key[MESSAGE_KEY_MAX + 32];
	const char *hdrs[2] = {key, NULL};
	int rc = message_render_text(s->body, &text, err);

	if (rc)
		return rc;
	json_t *o = json_pack("{s:s}", "text", text);
	payload = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	free(text);
	if (!payload)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	snprintf(key, sizeof(key), "Idempotency-Key: %s", k);
	rc = target_http_post(s, payload, *k ? hdrs : NULL, err);
	free(payload);
	return rc;
}
