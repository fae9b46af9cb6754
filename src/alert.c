/*
 * alert.c - the alert targets and the lost-slot alert.
 *
 * Who is alerted: SURECRON_ALERT_TARGETS (comma-separated target names,
 * blanks around a name ignored) when set and non-empty, else the config's
 * `alerts: targets`. An unknown name is a warning, never an error: the
 * other targets still get the alert.
 *
 * Invariants:
 *   - a lost slot with no alert target configured is still loud: an
 *     `error` line says so (the ledger's "lost" row is the queue's);
 *   - an alert is sent directly (target_send), not through the outbox:
 *     the slot is already lost, there is no later attempt to resend it;
 *     a target that does not take it is a warning, and the others are
 *     still tried;
 *   - the log lines keep module=orchestrator, the vocabulary
 *     docs/operations.md documents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert.h"
#include "clock.h"
#include "message.h"
#include "target.h"
#include "log.h"
#include "store.h"

#define MAX_TARGETS 64

void alert_targets(const struct config *c, const struct target_spec **out,
		   size_t max, size_t *n)
{
	const char *env = getenv("SURECRON_ALERT_TARGETS");

	*n = 0;
	if (env && *env) {
		char name[STORE_NAME_MAX];
		for (const char *p = env; *p && *n < max;) {
			size_t len = strcspn(p, ",");
			const char *s = p, *e = p + len;
			while (s < e && (*s == ' ' || *s == '\t'))
				s++;
			while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			if (e > s && (size_t)(e - s) < sizeof(name)) {
				memcpy(name, s, (size_t)(e - s));
				name[e - s] = '\0';
				const struct target_spec *t = config_target(c, name);
				if (t)
					out[(*n)++] = t;
				else
					LOG(SC_LOG_WARN, "alert",
					       "event=alert_target_unknown "
					       "alert_target=%s msg=\"unknown "
					       "target in "
					       "SURECRON_ALERT_TARGETS\"", name);
			}
			p += len + (p[len] == ',' ? 1 : 0);
		}
		return;
	}
	for (size_t i = 0; c && i < c->n_alert_targets && *n < max; i++) {
		const struct target_spec *t = config_target(c, c->alert_targets[i]);
		if (t)
			out[(*n)++] = t;
		else
			LOG(SC_LOG_WARN, "alert",
			       "event=alert_target_unknown alert_target=%s "
			       "msg=\"unknown alert target\"",
			       c->alert_targets[i]);
	}
}

void alert_send_lost(const struct config *c, struct sc_clock *clock,
		     const char *schedule, int64_t slot_ms, int attempts,
		     const struct sc_err *why, size_t *n_sent)
{
	const struct target_spec *t[MAX_TARGETS];
	char iso[CLOCK_ISO_MAX], summary[STORE_NAME_MAX + 160];
	size_t n = 0, sent = 0;
	char *body = NULL;

	if (n_sent)
		*n_sent = 0;
	alert_targets(c, t, MAX_TARGETS, &n);
	if (n == 0) {
		LOG(SC_LOG_ERROR, "alert",
		       "event=alert_not_sent schedule=%s slot_ms=%lld "
		       "outcome=lost "
		       "msg=\"no alert targets configured\"", schedule,
		       (long long)slot_ms);
		return;
	}
	snprintf(summary, sizeof(summary),
		 "\xF0\x9F\x9A\xA8 %s: the run of %s was lost after %d "
		 "attempt%s", schedule, clock_format_utc(slot_ms, iso),
		 attempts, attempts == 1 ? "" : "s");
	struct message m = {
		.kind = MESSAGE_ALERT, .schedule = schedule, .slot_ms = slot_ms,
		.attempt = attempts, .summary = summary,
		.error = why && why->code ? why->msg : "unknown error",
	};
	if (message_compose(&m, &body, NULL) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct sc_err aerr = {0};
		struct target_copy s = {.target = t[i], .body = body,
					  .kind = MESSAGE_ALERT,
					  .schedule = schedule,
					  .slot_ms = slot_ms,
					  .attempt = attempts,
					  .clock = clock};
		if (target_send(&s, &aerr) == 0) {
			sent++;
		} else {
			LOG(SC_LOG_WARN, "alert",
			       "event=alert_not_sent schedule=%s slot_ms=%lld "
			       "target=%s msg=\"lost-"
			       "slot alert not sent\" code=%d http_status=%d",
			       schedule, (long long)slot_ms, t[i]->name,
			       aerr.code, aerr.http_status);
		}
	}
	free(body);
	if (n_sent)
		*n_sent = sent;
}
