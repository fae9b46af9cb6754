/*
 * cmd_audit.c - `surecron audit`: the slots the config should have fired
 * in a period that the store has no record of (audit.h decides; this file
 * parses, prints and picks the exit status).
 *
 *   audit [--config FILE] [--schedule S] [--since T] [--until T] [--json]
 *
 * T as for `ledger`: ISO 8601 or an age ("7d"); --since defaults to 7d,
 * --until to now; since inclusive, until exclusive. With retention.ledger
 * set, the period starts no earlier than its horizon (prune_ledger_floor):
 * an older slot's record may be pruned, and its absence proves nothing.
 * Each stretch of the period is judged with the cron that was in force
 * then (the store's cron history, recorded at each start and reload).
 * Copies of removed targets closed unsent ("abandoned" rows) are counted;
 * their slots are accounted for.
 * Exit 1 when any slot is unaccounted (so monitoring can run it), 0 when
 * none, 2 on usage or config errors (and a period wholly before that
 * horizon); a store error is 1 too, with its message.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "prune.h"
#include "store.h"

#define DEFAULT_SINCE "7d"

static int print_json(const struct audit_report *rep, int64_t since_ms,
		      int64_t until_ms, int64_t floor_ms)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	json_t *root = json_pack("{s:s, s:s, s:I, s:I, s:b}",
				 "since", clock_format_utc(since_ms, a),
				 "until", clock_format_utc(until_ms, b),
				 "slots", (json_int_t)rep->n_slots,
				 "unaccounted", (json_int_t)rep->n_holes,
				 "truncated", rep->truncated);
	json_t *scheds = json_array(), *holes = json_array();

	if (!root || !scheds || !holes)
		goto oom;
	/* The oldest slot retention keeps a record of (null: no
	 * retention.ledger); --since was moved up to it when older. */
	json_object_set_new(root, "retention_floor",
			    floor_ms == INT64_MIN
			    ? json_null()
			    : json_string(clock_format_utc(floor_ms, a)));
	for (size_t i = 0; i < rep->n_scheds; i++) {
		const struct audit_sched *s = &rep->scheds[i];
		json_t *o = json_pack(
			"{s:s, s:I, s:I, s:I, s:b, s:s?, s:s?, s:s?}",
			"schedule", s->name, "slots", (json_int_t)s->n_slots,
			"pending", (json_int_t)s->n_pending,
			"unaccounted", (json_int_t)s->n_holes,
			"truncated", s->truncated,
			"cut_after", s->truncated
			? clock_format_utc(s->cut_ms, a) : NULL,
			"last_slot", s->has_state
			? clock_format_utc(s->last_ms, b) : NULL,
			"first_record", NULL);
		if (!o || json_array_append_new(scheds, o))
			goto oom;
		if (s->first_ms != INT64_MAX)
			json_object_set_new(o, "first_record",
					    json_string(clock_format_utc(
						    s->first_ms, a)));
		json_object_set_new(o, "records_before", json_boolean(
					    s->before_period));
		/* How many expressions judged the period (a reload that
		 * changed the cron splits it), and the copies of removed
		 * targets closed unsent (issue 43). */
		json_object_set_new(o, "crons", json_integer(
					    (json_int_t)s->n_stretches));
		json_object_set_new(o, "abandoned", json_integer(
					    (json_int_t)s->n_abandoned));
	}
	for (size_t i = 0; i < rep->n_holes; i++) {
		const struct audit_hole *h = &rep->holes[i];
		json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:s}", "schedule",
				      rep->scheds[h->sched].name, "slot",
				      clock_format_utc(h->slot_ms, a),
				      "slot_ms", (json_int_t)h->slot_ms,
				      "why", audit_why_name(h->why),
				      "reason", audit_why_text(h->why));
		if (!o || json_array_append_new(holes, o))
			goto oom;
	}
	json_object_set_new(root, "abandoned",
			    json_integer((json_int_t)rep->n_abandoned));
	json_object_set_new(root, "schedules", scheds);
	json_object_set_new(root, "holes", holes);
	return cli_print_json(root);
oom:
	json_decref(root);
	json_decref(scheds);
	json_decref(holes);
	return cli_fail(EXIT_FAIL, "out of memory");
}

static void print_text(const struct audit_report *rep, int64_t since_ms,
		       int64_t until_ms)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];

	if (rep->n_holes)
		cli_out(stdout, "UNACCOUNTED: %zu slot%s", rep->n_holes,
			rep->n_holes == 1 ? "" : "s");
	else
		cli_out(stdout, "no unaccounted slots");
	cli_out(stdout, " since %s until %s (%zu schedule%s, %zu slots)\n",
		clock_format_utc(since_ms, a), clock_format_utc(until_ms, b),
		rep->n_scheds, rep->n_scheds == 1 ? "" : "s", rep->n_slots);
	for (size_t i = 0; i < rep->n_holes; i++) {
		const struct audit_hole *h = &rep->holes[i];
		cli_out(stdout, "%-20s  %-20s  %s\n",
			rep->scheds[h->sched].name,
			clock_format_utc(h->slot_ms, a), audit_why_text(h->why));
	}
	/* Accounted for (each has its row), yet a copy a target did not
	 * get: said, never failing. */
	if (rep->n_abandoned)
		cli_out(stdout, "%zu staged cop%s abandoned (target removed "
			"from its schedule): `surecron ledger --lost` lists "
			"them\n", rep->n_abandoned,
			rep->n_abandoned == 1 ? "y" : "ies");
	for (size_t i = 0; i < rep->n_scheds; i++) {
		const struct audit_sched *s = &rep->scheds[i];
		if (s->truncated)
			cli_out(stdout, "%s: cut after %zu slots (at %s): the "
				"rest of the period was not looked at; audit "
				"again with --since after it\n", s->name,
				s->n_slots, clock_format_utc(s->cut_ms, a));
	}
}

int cmd_audit(int argc, char **argv)
{
	const char *path = NULL, *since = DEFAULT_SINCE, *until = NULL,
		   *only = NULL;
	int64_t now_ms = sc_clock_now_ms(sc_clock_real());
	int64_t since_ms, until_ms = now_ms;
	bool json = false;
	struct cli_state st;
	struct audit_report rep = {0};
	struct sc_err err = {0};
	int r;

	static const char *const names[] = {"--schedule", "--since",
					    "--until"};
	const char **vals[] = {&only, &since, &until};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((r = cli_opt_config("audit", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(a, "--json") == 0) {
			json = true;
			continue;
		}
		for (size_t k = 0; !r && k < sizeof(names) / sizeof(names[0]);
		     k++)
			r = cli_opt_value("audit", argc, argv, &i, NULL,
					  names[k], vals[k]);
		if (r < 0)
			return -r;
		if (r)
			continue;
		if (a[0] == '-')
			return cli_usage_error("audit", "unknown option '%s'", a);
		return cli_usage_error("audit", "unexpected argument '%s'", a);
	}
	if ((r = cli_parse_period("audit", since, until, now_ms, &since_ms,
				  &until_ms)))
		return r;
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	if (only && !config_schedule(st.cfg, only)) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", only,
			     st.path);
		goto done;
	}
	/* A slot older than the ledger's retention may have had its rows
	 * pruned: no record is then no news, so such slots are not judged
	 * (each would be named a hole). */
	int64_t floor_ms = prune_ledger_floor(st.cfg, now_ms);
	char t1[CLOCK_ISO_MAX], t2[CLOCK_ISO_MAX], d[CLOCK_DUR_MAX];
	if (until_ms <= floor_ms) {
		r = cli_fail(EXIT_USAGE, "the period ends (%s) before the "
			     "oldest slot whose record retention.ledger (%s) "
			     "keeps (%s): prune may have removed its slots' "
			     "records; audit a later period",
			     clock_format_utc(until_ms, t1),
			     clock_format_duration(st.cfg->retention_ledger_ms,
						   d, sizeof(d)),
			     clock_format_utc(floor_ms, t2));
		goto done;
	}
	if (since_ms < floor_ms) {
		fprintf(stderr, "surecron: note: audited from %s, not %s: "
			"with retention.ledger %s, prune may have removed "
			"the records of older slots\n",
			clock_format_utc(floor_ms, t1),
			clock_format_utc(since_ms, t2),
			clock_format_duration(st.cfg->retention_ledger_ms, d,
					      sizeof(d)));
		since_ms = floor_ms;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	if (audit_run(st.store, st.cfg, only, since_ms, until_ms, now_ms,
		      NULL, &rep, &err) != 0) {
		r = cli_fail(EXIT_FAIL, "audit: %s", err.msg);
		goto done;
	}
	if (json) {
		r = print_json(&rep, since_ms, until_ms, floor_ms);
	} else {
		print_text(&rep, since_ms, until_ms);
		r = EXIT_OK;
	}
	if (r == EXIT_OK && rep.n_holes)
		r = EXIT_FAIL;
done:
	audit_report_dispose(&rep);
	cli_state_close(&st);
	return r;
}
