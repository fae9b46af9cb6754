/*
 * retry.c - the retry policy of DESIGN.md: classes, delays, next attempt,
 * and the timeline of every attempt of one slot.
 *
 * default:        2 attempts, exponential, 60 s
 * low-frequency:  4 attempts, exponential, 30 min -> attempts at
 *                 +0, +30 min, +90 min, +210 min (a 3 h 30 min window)
 * A retry-after hint only ever delays the next attempt, never advances it.
 */
#include <string.h>

#include "err.h"
#include "retry.h"

/* DESIGN.md's two classes, by enum sc_freq_class. */
static const struct sc_retry_policy class_policy[2] = {
	[SC_FREQ_DEFAULT] = {2, SC_BACKOFF_EXPONENTIAL, 60 * 1000},
	[SC_FREQ_LOW] = {4, SC_BACKOFF_EXPONENTIAL, 30 * 60 * 1000},
};

const struct sc_retry_policy *retry_policy_of(enum sc_freq_class cls)
{
	return &class_policy[cls == SC_FREQ_LOW];
}

struct sc_retry_policy sc_retry_policy_for(enum sc_freq_class cls)
{
	return *retry_policy_of(cls);
}

int64_t sc_retry_delay_ms(const struct sc_retry_policy *p, int k)
{
	int64_t d = p->delay_ms;

	if (p->backoff == SC_BACKOFF_FIXED || k <= 1)
		return d;
	for (int i = 1; i < k; i++) {
		if (d > INT64_MAX / 2)
			return INT64_MAX / 2;
		d *= 2;
	}
	return d;
}

int64_t sc_retry_next_ms(const struct sc_retry_policy *p, int k,
			 int64_t now_ms, int64_t hint_ms)
{
	int64_t at = now_ms + sc_retry_delay_ms(p, k);

	if (hint_ms > 0 && now_ms + hint_ms > at)
		at = now_ms + hint_ms;
	return at;
}

const char *sc_freq_class_name(enum sc_freq_class cls)
{
	return cls == SC_FREQ_LOW ? "low-frequency" : "default";
}

bool retry_policy_valid(const struct sc_retry_policy *p)
{
	return p->attempts >= 1 && p->attempts <= 100 && p->delay_ms >= 0 &&
	       p->delay_ms <= 30LL * 86400 * 1000 &&
	       (p->backoff == SC_BACKOFF_EXPONENTIAL ||
		p->backoff == SC_BACKOFF_FIXED);
}

int sc_retry_timeline(const struct sc_retry_policy *p, int64_t slot_ms,
		      struct sc_retry_timeline *out, struct sc_err *err)
{
	if (!p || !out || p->attempts < 1 ||
	    p->attempts > SC_RETRY_TIMELINE_MAX || p->delay_ms < 0)
		return sc_err_set(err, SC_EINVAL, "retry timeline: attempts "
				  "must be 1-%d", SC_RETRY_TIMELINE_MAX);
	memset(out, 0, sizeof(*out));
	out->n_attempts = p->attempts;
	out->attempt_ms[0] = slot_ms;
	for (int k = 1; k < p->attempts; k++)
		out->attempt_ms[k] =
			sc_retry_next_ms(p, k, out->attempt_ms[k - 1], 0);
	out->window_end_ms = out->attempt_ms[p->attempts - 1];
	out->window_ms = out->window_end_ms - slot_ms;
	return 0;
}
