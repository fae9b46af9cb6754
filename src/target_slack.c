/*
 * target_slack.c - the `slack` target (placeholder until the http client
 * lands: fails, so nothing is ever guarded without a real send).
 */
#include "delivery.h"
#include "err.h"

int target_slack_send(const struct delivery_send *s, struct sc_err *err)
{
	return sc_err_set(err, SC_EDELIVERY, "target %s: http not built in",
			  s->target->name);
}
