/*
 * cmd_explain.c - `surecron explain [--tz ZONE] [--from ISO8601] [--json]
 * EXPR`: what an expression means, when it fires next, its frequency class
 * (and which field made it so), and the retry timeline of its next slot
 * with the recovery window.
 *
 * Only expressions for now; `explain SCHEDULE --config FILE` comes with
 * the config layer and hooks in where the expression fails to parse.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define EXPLAIN_NEXT 5

/* "3h30m", "30m", "1m30s", "0s". */
static const char *fmt_dur(int64_t ms, char *out, size_t n)
{
	int64_t s = ms / 1000;
	size_t len = 0;

	out[0] = '\0';
	if (s >= 86400)
		len += (size_t)snprintf(out + len, n - len, "%lldd",
					(long long)(s / 86400));
	if (s % 86400 >= 3600 && len < n)
		len += (size_t)snprintf(out + len, n - len, "%lldh",
					(long long)(s % 86400 / 3600));
	if (s % 3600 >= 60 && len < n)
		len += (size_t)snprintf(out + len, n - len, "%lldm",
					(long long)(s % 3600 / 60));
	if ((s % 60 || s == 0) && len < n)
		snprintf(out + len, n - len, "%llds", (long long)(s % 60));
	return out;
}

struct explained {
	struct sc_cron c;
	int n_next;
	int64_t next_ms[EXPLAIN_NEXT];
	enum sc_freq_class cls;
	char reason[160];
	char desc[256];
	struct sc_retry_policy policy;
	struct sc_retry_timeline tl;
};

static int print_text(const struct cli_cron_opts *o, const struct explained *x)
{
	char t[CLI_TIME_MAX], d[32];

	printf("expression  %s\n", o->expr);
	printf("zone        %s\n", sc_zone_name(o->zone));
	printf("meaning     %s\n", x->desc);
	printf("dst         %s\n",
	       x->c.flags & SC_CRON_FIXED_TIME
		       ? "fixed time: a time skipped by a change fires once at "
			 "the change, a repeated time fires once"
		       : "follows real time: skipped times do not happen, "
			 "repeated times fire twice");
	for (int i = 0; i < x->n_next; i++)
		printf("%s%s\n", i ? "            " : "next        ",
		       cli_format_local(x->next_ms[i], o->zone, t));
	printf("class       %s (%s)\n", sc_freq_class_name(x->cls), x->reason);
	printf("policy      %d attempt%s, %s backoff from %s\n",
	       x->policy.attempts, x->policy.attempts > 1 ? "s" : "",
	       x->policy.backoff == SC_BACKOFF_FIXED ? "fixed" : "exponential",
	       fmt_dur(x->policy.delay_ms, d, sizeof(d)));
	printf("retry timeline of the slot %s:\n",
	       cli_format_local(x->tl.attempt_ms[0], o->zone, t));
	for (int k = 0; k < x->tl.n_attempts; k++)
		printf("  attempt %d  %s  %s%s\n", k + 1,
		       cli_format_local(x->tl.attempt_ms[k], o->zone, t),
		       k ? "+" : "",
		       k ? fmt_dur(x->tl.attempt_ms[k] - x->tl.attempt_ms[0], d,
				   sizeof(d))
			 : "the slot");
	printf("recovery window %s (until %s)\n",
	       fmt_dur(x->tl.window_ms, d, sizeof(d)),
	       cli_format_local(x->tl.window_end_ms, o->zone, t));
	return EXIT_OK;
}

static int print_json(const struct cli_cron_opts *o, const struct explained *x)
{
	char t[CLI_TIME_MAX], t2[CLI_TIME_MAX];
	json_t *root = json_object(), *next = json_array(),
	       *attempts = json_array();
	int rc = EXIT_OK;

	if (!root || !next || !attempts) {
		json_decref(root);
		json_decref(next);
		json_decref(attempts);
		return cli_fail(EXIT_FAIL, "out of memory");
	}
	for (int i = 0; i < x->n_next; i++)
		json_array_append_new(next, json_string(cli_format_local(
						    x->next_ms[i], o->zone, t)));
	for (int k = 0; k < x->tl.n_attempts; k++)
		json_array_append_new(
			attempts,
			json_pack("{s:i, s:s, s:I, s:I}", "attempt", k + 1, "at",
				  cli_format_local(x->tl.attempt_ms[k], o->zone,
						   t),
				  "at_ms", (json_int_t)x->tl.attempt_ms[k],
				  "after_slot_ms",
				  (json_int_t)(x->tl.attempt_ms[k] -
					       x->tl.attempt_ms[0])));
	json_object_set_new(root, "expression", json_string(o->expr));
	json_object_set_new(root, "zone", json_string(sc_zone_name(o->zone)));
	json_object_set_new(root, "description", json_string(x->desc));
	json_object_set_new(root, "fields", json_integer(
		x->c.flags & SC_CRON_SECONDS ? 6 : 5));
	json_object_set_new(root, "fixed_time", json_boolean(
		x->c.flags & SC_CRON_FIXED_TIME));
	json_object_set_new(root, "next", next);
	json_object_set_new(root, "class", json_string(sc_freq_class_name(
		x->cls)));
	json_object_set_new(root, "class_reason", json_string(x->reason));
	json_object_set_new(root, "policy", json_pack(
		"{s:i, s:s, s:I}", "attempts", x->policy.attempts, "backoff",
		x->policy.backoff == SC_BACKOFF_FIXED ? "fixed" : "exponential",
		"delay_ms", (json_int_t)x->policy.delay_ms));
	json_object_set_new(root, "timeline", json_pack(
		"{s:s, s:I, s:o, s:I, s:s}", "slot",
		cli_format_local(x->tl.attempt_ms[0], o->zone, t), "slot_ms",
		(json_int_t)x->tl.attempt_ms[0], "attempts", attempts,
		"recovery_window_ms", (json_int_t)x->tl.window_ms,
		"recovery_end",
		cli_format_local(x->tl.window_end_ms, o->zone, t2)));
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (s) {
		printf("%s\n", s);
		free(s);
	} else {
		rc = cli_fail(EXIT_FAIL, "out of memory");
	}
	json_decref(root);
	return rc;
}

int cmd_explain(int argc, char **argv)
{
	struct cli_cron_opts o;
	struct explained x;
	struct sc_err err = {0};
	int rc = cli_cron_opts_parse("explain", argc, argv, CLI_OPT_JSON, &o);

	if (rc)
		return rc;
	memset(&x, 0, sizeof(x));
	if (sc_cron_parse(o.expr, &x.c, &err))
		return cli_fail(EXIT_USAGE, "%s", err.msg);
	int64_t t = o.from_ms;
	for (x.n_next = 0; x.n_next < EXPLAIN_NEXT; x.n_next++) {
		if (sc_cron_next(&x.c, o.zone, t, &t, &err))
			return cli_fail(EXIT_FAIL, "%s", err.msg);
		x.next_ms[x.n_next] = t;
	}
	x.cls = sc_cron_class(&x.c, x.reason, sizeof(x.reason));
	sc_cron_describe(&x.c, x.desc, sizeof(x.desc));
	x.policy = sc_retry_policy_for(x.cls);
	if (sc_retry_timeline(&x.policy, x.next_ms[0], &x.tl, &err))
		return cli_fail(EXIT_FAIL, "%s", err.msg);
	return o.json ? print_json(&o, &x) : print_text(&o, &x);
}
