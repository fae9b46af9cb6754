/*
 * cmd_explain.c - `surecron explain [--tz ZONE] [--from ISO8601] [--json]
 * EXPR`: what an expression means, when it fires next, its frequency class
 * (and which field made it so), and the retry timeline of its next slot
 * with the recovery window.
 *
 * `explain [--config FILE] SCHEDULE`: a single argument with no space that
 * is not a macro cannot be a cron expression, so it names a schedule of
 * the config. Then everything is said of the schedule's FINAL expression
 * (after SURECRON_SCHEDULE_<NAME> or its schedule_env), in its zone, with
 * the policy that will really apply (the config's `retry:` or the class's),
 * so an operator sees what an override changed before the daemon acts on
 * it. It also says the schedule's notice policy (which failed attempts
 * send a failure notice), each target's own policy where it sets one, and
 * the schedule's `expect`.
 *
 * With `jitter:` each next slot is shown with its real start instant
 * (scheduler_start_ms: the same offset the daemon uses), and the retry
 * timeline counts from that start; with `deadline:` the timeline is
 * clipped to it (scheduler_timeline) and the deadline is printed.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "report.h"
#include "scheduler.h"

#define EXPLAIN_NEXT 5

struct explained {
	struct sc_cron c;
	int n_next;
	int64_t next_ms[EXPLAIN_NEXT];
	enum sc_freq_class cls;
	char reason[160];
	char desc[256];
	struct sc_retry_policy policy;
	struct sc_retry_timeline tl;
	int n_cut;                         /* attempts the deadline took */
	const struct schedule_spec *sched; /* explain SCHEDULE, else NULL */
	const struct config *cfg;          /* with sched: its config */
};

static const char *const notice_words[] = {"every", "final", "none"};

static const char *notice_word(enum notice_policy p)
{
	return (unsigned)p < 3 ? notice_words[p] : "?";
}

static const char *notice_meaning(enum notice_policy p)
{
	switch (p) {
	case NOTICES_EVERY: return "a failure notice on every failed attempt";
	case NOTICES_FINAL: return "a failure notice only on the attempt "
				   "that loses the slot";
	case NOTICES_NONE: return "no failure notice (alerts still go out)";
	}
	return "";
}

/* The notice policy and `expect` lines of explain SCHEDULE. */
static void print_notices_expect(const struct explained *x)
{
	const struct schedule_spec *s = x->sched;

	cli_out(stdout, "notices     %s (%s)\n", notice_word(spec_x(s)->notices),
		notice_meaning(spec_x(s)->notices));
	for (size_t i = 0; i < s->n_targets; i++) {
		const struct target_spec *t = config_target(x->cfg,
							    s->targets[i]);
		if (t && t->has_notices)
			cli_out(stdout, "            to %s: %s (the target's "
				"own)\n", t->name, notice_word(t->notices));
	}
	if (!spec_x(s)->expect_min_previews && !spec_x(s)->expect_min_summary_chars) {
		cli_out(stdout, "expect      nothing (any deliverable is a "
			"success)\n");
		return;
	}
	cli_out(stdout, "expect      ");
	if (spec_x(s)->expect_min_previews)
		cli_out(stdout, "at least %d preview%s",
			spec_x(s)->expect_min_previews,
			spec_x(s)->expect_min_previews == 1 ? "" : "s");
	if (spec_x(s)->expect_min_summary_chars)
		cli_out(stdout, "%sa summary of at least %d character%s",
			spec_x(s)->expect_min_previews ? ", " : "",
			spec_x(s)->expect_min_summary_chars,
			spec_x(s)->expect_min_summary_chars == 1 ? "" : "s");
	cli_out(stdout, " (less is a failed run, cause expectation)\n");
}

static json_t *notices_expect_json(const struct explained *x)
{
	const struct schedule_spec *s = x->sched;
	json_t *per = json_array();

	for (size_t i = 0; per && i < s->n_targets; i++) {
		const struct target_spec *t = config_target(x->cfg,
							    s->targets[i]);
		if (!t)
			continue;
		json_array_append_new(per, json_pack(
			"{s:s, s:s, s:s}", "target", t->name, "notices",
			notice_word(t->has_notices ? t->notices : spec_x(s)->notices),
			"source", t->has_notices ? "target" : "schedule"));
	}
	return json_pack("{s:s, s:o, s:o}", "notices", notice_word(spec_x(s)->notices),
			 "target_notices", per ? per : json_array(), "expect",
			 spec_x(s)->expect_min_previews || spec_x(s)->expect_min_summary_chars
				 ? json_pack("{s:i, s:i}", "min_previews",
					     spec_x(s)->expect_min_previews,
					     "min_summary_chars",
					     spec_x(s)->expect_min_summary_chars)
				 : json_null());
}

static int print_text(const struct cli_cron_opts *o, const struct explained *x)
{
	char t[CLI_TIME_MAX], d[CLOCK_DUR_MAX];

	if (x->sched) {
		cli_out(stdout, "schedule    %s\n", x->sched->name);
		if (spec_x(x->sched)->override_var)
			cli_out(stdout,
				"override    %s is set: it replaces the file's "
				"%s%s%s\n", spec_x(x->sched)->override_var,
				spec_cron_config(x->sched) ? "\"" : "",
				spec_cron_config(x->sched) ? spec_cron_config(x->sched)
						      : "(no cron)",
				spec_cron_config(x->sched) ? "\"" : "");
		else
			cli_out(stdout,
				"override    none (SURECRON_SCHEDULE_* or "
				"schedule_env not set)\n");
	}
	cli_out(stdout, "expression  %s\n", o->expr);
	cli_out(stdout, "zone        %s\n", sc_zone_name(o->zone));
	cli_out(stdout, "meaning     %s\n", x->desc);
	cli_out(stdout, "dst         %s\n",
		x->c.flags & SC_CRON_FIXED_TIME
			? "fixed time: a time skipped by a change fires once at "
			  "the change, a repeated time fires once"
			: "follows real time: skipped times do not happen, "
			  "repeated times fire twice");
	for (int i = 0; i < x->n_next; i++) {
		cli_out(stdout, "%s%s", i ? "            " : "next        ",
			cli_format_local(x->next_ms[i], o->zone, t));
		if (x->sched && spec_x(x->sched)->jitter_ms > 0)
			cli_out(stdout, "  starts %s (jitter +%s)",
				cli_format_local(scheduler_start_ms(
					x->sched, x->next_ms[i]), o->zone, t),
				clock_format_duration(scheduler_jitter_ms(
					x->sched, x->next_ms[i]), d,
					sizeof(d)));
		cli_out(stdout, "\n");
	}
	if (x->sched && spec_x(x->sched)->jitter_ms > 0)
		cli_out(stdout, "jitter      up to %s, the same offset for a "
			"slot on every node\n",
			clock_format_duration(spec_x(x->sched)->jitter_ms, d,
					      sizeof(d)));
	cli_out(stdout,
		"class       %s (%s)\n", sc_freq_class_name(x->cls), x->reason);
	char p[96];
	cli_out(stdout,
		"policy      %s%s\n", cli_format_policy(&x->policy, p, sizeof(p)),
		!x->sched ? ""
		: x->sched->has_retry ? " (retry: in the config)"
				      : " (the class's policy)");
	cli_out(stdout, "retry timeline of the slot %s:\n",
		cli_format_local(x->next_ms[0], o->zone, t));
	for (int k = 0; k < x->tl.n_attempts; k++)
		cli_out(stdout, "  attempt %d  %s  %s%s\n", k + 1,
			cli_format_local(x->tl.attempt_ms[k], o->zone, t),
			k ? "+" : "",
			k ? clock_format_duration(x->tl.attempt_ms[k] -
						  x->tl.attempt_ms[0],
						  d, sizeof(d))
			  : x->tl.attempt_ms[0] != x->next_ms[0]
				  ? "the start (slot + jitter)"
				  : "the slot");
	if (x->sched && spec_x(x->sched)->deadline_ms > 0)
		cli_out(stdout, "deadline    %s (slot + %s): %d attempt%s cut "
			"by it; no attempt starts later (the slot is lost, "
			"cause deadline)\n",
			cli_format_local(scheduler_deadline_at(x->sched,
							       x->next_ms[0]),
					 o->zone, t),
			clock_format_duration(spec_x(x->sched)->deadline_ms, d,
					      sizeof(d)),
			x->n_cut, x->n_cut == 1 ? "" : "s");
	cli_out(stdout, "recovery window %s (until %s)\n",
		clock_format_duration(x->tl.window_ms, d, sizeof(d)),
		cli_format_local(x->tl.window_end_ms, o->zone, t));
	if (x->sched)
		print_notices_expect(x);
	return EXIT_OK;
}

static int print_json(const struct cli_cron_opts *o, const struct explained *x)
{
	char t[CLI_TIME_MAX], t2[CLI_TIME_MAX];
	json_t *root = json_object(), *next = json_array(),
	       *attempts = report_timeline_json(&x->tl, o->zone);

	if (!root || !next || !attempts) {
		json_decref(root);
		json_decref(next);
		json_decref(attempts);
		return cli_fail(EXIT_FAIL, "out of memory");
	}
	for (int i = 0; i < x->n_next; i++)
		json_array_append_new(next, json_string(cli_format_local(
						    x->next_ms[i], o->zone, t)));
	if (x->sched) {
		json_t *starts = json_array();
		for (int i = 0; starts && i < x->n_next; i++)
			json_array_append_new(starts, json_string(
				cli_format_local(scheduler_start_ms(
					x->sched, x->next_ms[i]), o->zone, t)));
		json_object_set_new(root, "starts",
				    starts ? starts : json_null());
		json_object_set_new(root, "jitter_ms",
				    json_integer(spec_x(x->sched)->jitter_ms));
		json_object_set_new(root, "deadline_ms",
				    json_integer(spec_x(x->sched)->deadline_ms));
		json_object_set_new(root, "catchup_window_ms",
				    json_integer(spec_x(x->sched)->catchup_window_ms));
		json_object_set_new(root, "schedule",
				    json_string(x->sched->name));
		json_object_set_new(root, "cron_config", spec_cron_config(x->sched)
				    ? json_string(spec_cron_config(x->sched))
				    : json_null());
		json_object_set_new(root, "override_var", spec_x(x->sched)->override_var
				    ? json_string(spec_x(x->sched)->override_var)
				    : json_null());
		json_object_set_new(root, "policy_source", json_string(
			x->sched->has_retry ? "config" : "class"));
		json_t *ne = notices_expect_json(x);
		if (ne)
			json_object_update(root, ne);
		json_decref(ne);
	}
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
	json_t *tl = json_pack(
		"{s:s, s:I, s:o, s:I, s:s}", "slot",
		cli_format_local(x->next_ms[0], o->zone, t), "slot_ms",
		(json_int_t)x->next_ms[0], "attempts", attempts,
		"recovery_window_ms", (json_int_t)x->tl.window_ms,
		"recovery_end",
		cli_format_local(x->tl.window_end_ms, o->zone, t2));
	if (tl && x->sched) {
		int64_t dl = scheduler_deadline_at(x->sched, x->next_ms[0]);
		json_object_set_new(tl, "start", json_string(cli_format_local(
			x->tl.attempt_ms[0], o->zone, t)));
		json_object_set_new(tl, "deadline", dl == INT64_MAX
			? json_null()
			: json_string(cli_format_local(dl, o->zone, t)));
		json_object_set_new(tl, "attempts_cut",
				    json_integer(x->n_cut));
	}
	json_object_set_new(root, "timeline", tl);
	return cli_print_json(root);
}

/* A lone argument with no space that is not a macro names a schedule. */
static bool names_schedule(const char *expr)
{
	return expr[0] != '@' && !strchr(expr, ' ');
}

int cmd_explain(int argc, char **argv)
{
	struct cli_cron_opts o;
	struct explained x;
	struct sc_err err = {0};
	struct cli_state st = {0};
	const char *path = NULL;
	bool has_tz = false;
	int rc;

	rc = cli_cron_opts_config("explain", argc, argv, CLI_OPT_JSON, &o,
				  &path, &has_tz);
	if (rc)
		return rc;
	memset(&x, 0, sizeof(x));
	if (path || names_schedule(o.expr)) {
		struct report_sched_info info;

		if (!names_schedule(o.expr))
			return cli_usage_error("explain", "with --config, give a "
					       "schedule name, not an "
					       "expression");
		if (has_tz)
			return cli_usage_error("explain", "--tz does not go with "
					       "a schedule: it has its own zone");
		if ((rc = cli_state_open(path, false, &st)))
			goto done;
		x.sched = config_schedule(st.cfg, o.expr);
		x.cfg = st.cfg;
		if (!x.sched) {
			rc = cli_fail(EXIT_USAGE, "no schedule '%s' in %s "
				      "(nor is it a cron expression)", o.expr,
				      st.path);
			goto done;
		}
		if ((rc = cli_schedule_info(x.sched, o.from_ms, &info)))
			goto done;
		snprintf(o.expr, sizeof(o.expr), "%s", x.sched->cron);
		o.zone = info.zone;
	}
	if (sc_cron_parse(o.expr, &x.c, &err)) {
		rc = cli_fail(EXIT_USAGE, "%s", err.msg);
		goto done;
	}
	int64_t t = o.from_ms;
	for (x.n_next = 0; x.n_next < EXPLAIN_NEXT; x.n_next++) {
		if (sc_cron_next(&x.c, o.zone, t, &t, &err)) {
			rc = cli_fail(EXIT_FAIL, "%s", err.msg);
			goto done;
		}
		x.next_ms[x.n_next] = t;
	}
	x.cls = sc_cron_class(&x.c, x.reason, sizeof(x.reason));
	sc_cron_describe(&x.c, x.desc, sizeof(x.desc));
	x.policy = sc_retry_policy_for(x.cls);
	if (x.sched)
		x.policy = *spec_policy(x.sched);
	if (x.sched ? scheduler_timeline(x.sched, x.next_ms[0], &x.tl,
					 &x.n_cut, &err)
		    : sc_retry_timeline(&x.policy, x.next_ms[0], &x.tl, &err)) {
		rc = cli_fail(EXIT_FAIL, "%s", err.msg);
		goto done;
	}
	rc = o.json ? print_json(&o, &x) : print_text(&o, &x);
done:
	cli_state_close(&st);
	return rc;
}
