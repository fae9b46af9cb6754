/*
 * target_webhook.c - the `webhook` target: POSTs the message object.
 *
 * Headers:
 *   Idempotency-Key: the same for every copy of one (slot, target), so a
 *     receiver that supports it drops a resent duplicate;
 *   X-Surecron-Timestamp: unix seconds of this send (from the clock);
 *   <signature_header> (default X-Surecron-Signature): "sha256=" + hex
 *     HMAC-SHA256 over timestamp + "." + body, keyed with the secret in
 *     the variable secret_env — only when secret_env is set. A receiver
 *     recomputes it and rejects old timestamps to stop replays.
 * The secret is read at send time, wiped after use and never logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "lazylib.h"
#include "message.h"
#include "target.h"

int target_webhook_send(const struct target_copy *s, const char *k,
			struct sc_err *err)
{
	const struct target_spec *t = s->target;
	char key[MESSAGE_KEY_MAX + 32], ts_h[96], sig_h[256], ts[32];
	char sig[MESSAGE_KEY_MAX];
	const char *hdrs[4] = {0};
	size_t nh = 0;
	struct sc_err kerr = {0};
	int rc;

	/* The key k was computed by target_send, at send time (this kind's
	 * row has sends_key): the SHA-256 needs libcrypto, which a daemon
	 * that only writes files never loads. The signature needs it too, so
	 * the load is checked first for a clear error. */
	rc = t->secret_env ? dl_crypto_load(&kerr) : 0;
	if (rc)
		return sc_err_set(err, rc, "target %s: %s", t->name, kerr.msg);
	snprintf(key, sizeof(key), "Idempotency-Key: %s", k);
	hdrs[nh++] = key;
	snprintf(ts, sizeof(ts), "%lld",
		 (long long)(sc_clock_now_ms(s->clock ? s->clock
						      : sc_clock_real()) /
			     1000));
	snprintf(ts_h, sizeof(ts_h), "%s: %s", TARGET_TIMESTAMP_HEADER, ts);
	hdrs[nh++] = ts_h;
	if (t->secret_env) {
		const char *secret = getenv(t->secret_env);
		if (!secret || !*secret)
			return sc_err_set(err, SC_ECONFIG, "target %s: "
					  "environment variable %s is not set",
					  t->name, t->secret_env);
		rc = message_sign(secret, strlen(secret), ts, s->body,
				  strlen(s->body), sig);
		if (rc)
			return sc_err_set(err, rc, "target %s: cannot sign",
					  t->name);
		snprintf(sig_h, sizeof(sig_h), "%s: sha256=%s",
			 t->signature_header ? t->signature_header
					     : TARGET_DEFAULT_SIG_HEADER,
			 sig);
		hdrs[nh++] = sig_h;
	}
	rc = target_http_post(s, s->body, hdrs, err);
	explicit_bzero(sig, sizeof(sig));
	return rc;
}
