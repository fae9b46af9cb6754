/*
 * message.c - composing messages, rendering their chat text, the failure
 * notice line, idempotency keys and webhook signatures. Nothing here
 * sends: target.c does, with what this file makes.
 *
 * Invariants:
 *   - a composed message is one line of compact JSON (strings escape their
 *     newlines), so a file target can append it as one record;
 *   - every composed message is valid UTF-8 (bad bytes become '?',
 *     text_utf8_clean) and at most MESSAGE_MAX_BODY bytes;
 *   - an idempotency key depends only on (kind, schedule, slot, target)
 *     for results, so every copy of one result to one target carries the
 *     same key whatever the attempt or the process that sends it;
 *   - libcrypto (SHA-256, HMAC) is loaded only when a key or a signature
 *     is computed, i.e. for the targets that send one, never for a file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "lazylib_crypto.h"
#include "err.h"
#include "message.h"
#include "text.h"

/* A JSON string of s, repairing bad UTF-8; NULL only on out of memory. */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);

	if (!j) {
		char *c = text_utf8_clean(s, strlen(s));
		if (c)
			j = json_string(c);
		free(c);
	}
	return j;
}

static int render_obj(json_t *o, char **out);

static int set_new(json_t *o, const char *key, json_t *v)
{
	return v ? json_object_set_new(o, key, v) : -1;
}

int message_compose(const struct message *m, char **out,
		    struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	json_t *o = json_object(), *pv = json_array(), *fl = json_array();
	int bad = !o || !pv || !fl;

	/* Insertion order is kept by jansson (and by JSON_PRESERVE_ORDER in
	 * older versions): kind first reads best in a file. */
	bad |= set_new(o, "kind", jstr(m->kind)) != 0;
	bad |= set_new(o, "schedule", jstr(m->schedule ? m->schedule : "")) != 0;
	bad |= set_new(o, "slot", jstr(clock_format_utc(m->slot_ms, iso))) != 0;
	bad |= set_new(o, "attempt", json_integer(m->attempt)) != 0;
	bad |= set_new(o, "summary", m->summary ? jstr(m->summary)
						: json_null()) != 0;
	for (size_t i = 0; !bad && i < m->n_previews; i++)
		bad |= json_array_append_new(pv, jstr(m->previews[i])) != 0;
	for (size_t i = 0; !bad && i < m->n_failures; i++) {
		json_t *f = json_object();
		bad |= !f;
		const char *task = m->failures[i].task, *why = m->failures[i].error;
		bad |= set_new(f, "task", jstr(task ? task : "")) != 0;
		bad |= set_new(f, "error", jstr(why ? why : "")) != 0;
		bad |= json_array_append_new(fl, f) != 0;
	}
	if (!bad) {
		bad |= json_object_set(o, "previews", pv) != 0;
		bad |= json_object_set(o, "failures", fl) != 0;
	}
	if (!bad && m->error)
		bad |= set_new(o, "error", jstr(m->error)) != 0;
	/* Only when late: receivers ignore unknown fields, and every other
	 * message stays byte for byte what it was. */
	if (!bad && m->late)
		bad |= set_new(o, "late", json_true()) != 0;
	if (!bad && m->reason) {
		char last[CLOCK_ISO_MAX];
		json_t *sl = json_object();
		bad |= !sl;
		bad |= set_new(o, "reason", jstr(m->reason)) != 0;
		bad |= set_new(sl, "first",
			       jstr(clock_format_utc(m->slot_ms, iso))) != 0;
		bad |= set_new(sl, "last",
			       jstr(clock_format_utc(m->n_slots > 1
							     ? m->last_slot_ms
							     : m->slot_ms,
						     last))) != 0;
		bad |= set_new(sl, "count",
			       json_integer(m->n_slots > 0 ? m->n_slots : 1)) != 0;
		bad |= set_new(o, "slots", sl) != 0;
		bad |= set_new(o, "round", json_integer(m->round)) != 0;
		if (!bad && m->command)
			bad |= set_new(o, "command", jstr(m->command)) != 0;
	}
	/* The chat rendering rides along, so every target (not only slack)
	 * shows failures in the notice format. */
	char *text = NULL;
	if (!bad && render_obj(o, &text) == 0) {
		bad |= set_new(o, "text", jstr(text)) != 0;
		free(text);
	}
	char *s = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(pv);
	json_decref(fl);
	json_decref(o);
	if (!s)
		return sc_err_set(err, SC_ENOMEM, "out of memory composing "
				  "the message");
	if (strlen(s) > MESSAGE_MAX_BODY) {
		free(s);
		return sc_err_set(err, SC_ETOOBIG, "message above %zu bytes",
				  MESSAGE_MAX_BODY);
	}
	*out = s;
	return 0;
}

const char *message_notice_line(const char *task, const char *reason,
				char *out, size_t n)
{
	snprintf(out, n, "\xE2\x9A\xA0\xEF\xB8\x8F %s: generation failed "
		 "\xE2\x80\x94 %s", task ? task : "?", reason ? reason : "");
	return out;
}

static int add_para(struct buf *b, const char *s, const char *sep)
{
	int rc = 0;

	if (!s || !*s)
		return 0;
	if (b->len)
		rc = buf_adds(b, sep);
	return rc ? rc : buf_adds(b, s);
}

/* The chat text of a message object; *out allocated. 0, SC_ENOMEM or
 * SC_ETOOBIG. */
static int render_obj(json_t *o, char **out)
{
	struct buf b;
	int rc;

	buf_init(&b, MESSAGE_MAX_BODY);
	const char *kind = json_string_value(json_object_get(o, "kind"));
	rc = add_para(&b, json_string_value(json_object_get(o, "summary")),
		      "\n\n");
	json_t *pv = json_object_get(o, "previews");
	for (size_t i = 0; !rc && i < json_array_size(pv); i++)
		rc = add_para(&b, json_string_value(json_array_get(pv, i)),
			      "\n\n");
	if (!rc && kind && strcmp(kind, MESSAGE_ALERT) == 0) {
		rc = add_para(&b, json_string_value(json_object_get(o, "error")),
			      "\n");
		/* What to run, on a line of its own: the one thing an
		 * on-call reader needs to act. */
		const char *cmd = json_string_value(json_object_get(o, "command"));
		if (!rc && cmd) {
			rc = add_para(&b, "\xE2\x86\x92 ", "\n");
			rc = rc ? rc : buf_adds(&b, cmd);
		}
	}
	json_t *fl = json_object_get(o, "failures");
	for (size_t i = 0; !rc && i < json_array_size(fl); i++) {
		json_t *f = json_array_get(fl, i);
		char line[SC_ERR_MSG_MAX + 256];
		message_notice_line(
			json_string_value(json_object_get(f, "task")),
			json_string_value(json_object_get(f, "error")), line,
				    sizeof(line));
		/* Notices after results get a blank line; between each other,
		 * one line each. */
		rc = add_para(&b, line, i == 0 ? "\n\n" : "\n");
	}
	if (rc) {
		buf_dispose(&b);
		return rc;
	}
	*out = buf_take(&b);
	return *out ? 0 : SC_ENOMEM;
}

int message_render_text(const char *body, char **out, struct sc_err *err)
{
	json_t *o = json_loads(body, 0, NULL);
	int rc;

	if (!json_is_object(o)) {
		json_decref(o);
		return sc_err_set(err, SC_EPROTO, "stored message is not a "
				  "JSON object");
	}
	/* Messages carry their text; older ones are rendered here. */
	const char *t = json_string_value(json_object_get(o, "text"));
	if (t) {
		*out = strdup(t);
		rc = *out ? 0 : SC_ENOMEM;
	} else {
		rc = render_obj(o, out);
	}
	json_decref(o);
	if (rc)
		return sc_err_set(err, rc, "cannot render the message text");
	return 0;
}

static void hex(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

int message_idempotency_key(const char *kind, const char *schedule,
			    int64_t slot_ms, const char *target, int attempt,
			    char out[MESSAGE_KEY_MAX], struct sc_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	char slot[32], att[16];

	out[0] = '\0';
	int rc = dl_crypto_load(err);
	if (rc)
		return rc;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	snprintf(slot, sizeof(slot), "%lld", (long long)slot_ms);
	snprintf(att, sizeof(att), "%d", attempt);
	/* NUL separators: "a"+"bc" and "ab"+"c" must not collide. */
	const char *parts[] = {"surecron/1", kind, schedule, slot, target, att};
	bool ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
	for (size_t i = 0; ok && i < sizeof(parts) / sizeof(parts[0]); i++)
		ok = EVP_DigestUpdate(c, parts[i] ? parts[i] : "",
				      strlen(parts[i] ? parts[i] : "") + 1) == 1;
	ok = ok && EVP_DigestFinal_ex(c, md, &md_len) == 1 && md_len >= 16;
	EVP_MD_CTX_free(c);
	if (!ok) {
		/* Only out of memory gets here; a key that is stable per
		 * (slot, target) still beats none. */
		snprintf(out, MESSAGE_KEY_MAX, "%s-%lld", kind ? kind : "",
			 (long long)slot_ms);
		return 0;
	}
	hex(md, 16, out);
	return 0;
}

int message_sign(const char *secret, size_t secret_len, const char *timestamp,
		 const char *body, size_t body_len, char out[MESSAGE_KEY_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	size_t ts_len = strlen(timestamp);
	char *msg;

	if (dl_crypto_load(NULL) != 0)
		return SC_EIO;
	msg = malloc(ts_len + 1 + body_len + 1);
	if (!msg)
		return SC_ENOMEM;
	memcpy(msg, timestamp, ts_len + 1); /* its NUL becomes the '.' */
	msg[ts_len] = '.';
	memcpy(msg + ts_len + 1, body, body_len);
	unsigned char *r = HMAC(EVP_sha256(), secret, (int)secret_len,
				(const unsigned char *)msg, ts_len + 1 + body_len,
				md, &md_len);
	free(msg);
	if (!r || md_len != 32)
		return SC_EIO;
	hex(md, md_len, out);
	return 0;
}
