/*
 * cmd_prune.c - `surecron prune [--config FILE] [--dry-run] [--json]`:
 * deletes what the config's `retention:` lets go (prune.h), in short
 * batches, and prints what went per table and the bytes it freed.
 *
 * With no retention set it says so and removes nothing (exit 0). A dry
 * run counts with the same rules and removes nothing: each batch is rolled
 * back. Exit 0 done, 1 store error, 2 usage or config.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "prune.h"
#include "store.h"

static void print_horizon(const char *what, int64_t retention_ms,
			  int64_t before_ms)
{
	char t[CLOCK_ISO_MAX], d[CLOCK_DUR_MAX];

	if (retention_ms <= 0)
		cli_out(stdout, "  %-7s kept forever (no retention)\n", what);
	else
		cli_out(stdout, "  %-7s retention %s: slots before %s\n", what,
			clock_format_duration(retention_ms, d, sizeof(d)),
			clock_format_utc(before_ms, t));
}

static int print_text(const struct config *c, const struct prune_plan *p,
		      const struct prune_report *r, bool dry_run)
{
	char w[CLOCK_DUR_MAX];
	const struct store_prune_result *n = &r->n;
	const char *verb = dry_run ? "would remove" : "removed";

	cli_out(stdout, "%s (longest recovery window %s, margin 1d):\n",
		dry_run ? "dry run, nothing removed" : "pruned",
		clock_format_duration(p->window_ms, w, sizeof(w)));
	print_horizon("ledger", c->retention_ledger_ms,
		      p->opts.ledger_before_ms);
	print_horizon("jobs", c->retention_jobs_ms, p->opts.jobs_before_ms);
	print_horizon("outbox", c->retention_outbox_ms,
		      p->opts.outbox_before_ms);
	cli_out(stdout,
		"%s: %lld ledger rows, %lld jobs, %lld outbox bodies, "
		"%lld send guards, %lld slot markers, %lld alerts "
		"(%lld alert sends)\n", verb, (long long)n->n_ledger,
		(long long)n->n_jobs, (long long)n->n_bodies,
		(long long)n->n_guards, (long long)n->n_markers,
		(long long)n->n_alerts, (long long)n->n_alert_sends);
	cli_out(stdout, "bytes freed: %lld (%s: %lld before, %lld after; "
		"files %lld bytes)\n",
		(long long)(r->used_before - r->used_after), r->size_how,
		(long long)r->used_before, (long long)r->used_after,
		(long long)r->file_after);
	cli_out(stdout, "%lld batches in %lld ms (longest %lld ms)\n",
		(long long)r->n_batches, (long long)r->elapsed_ms,
		(long long)r->max_batch_ms);
	return EXIT_OK;
}

static int print_json(const struct prune_plan *p,
		      const struct prune_report *r, bool dry_run)
{
	const struct store_prune_result *n = &r->n;
	json_t *root = json_pack(
		"{s:b, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, "
		"s:I}, s:I, s:I, s:I, s:s, s:I, s:I}",
		"dry_run", dry_run, "window_ms", (json_int_t)p->window_ms,
		"ledger_before_ms", (json_int_t)p->opts.ledger_before_ms,
		"jobs_before_ms", (json_int_t)p->opts.jobs_before_ms,
		"outbox_before_ms", (json_int_t)p->opts.outbox_before_ms,
		"removed", "ledger", (json_int_t)n->n_ledger, "jobs",
		(json_int_t)n->n_jobs, "outbox_bodies", (json_int_t)n->n_bodies,
		"send_guards", (json_int_t)n->n_guards, "slot_markers",
		(json_int_t)n->n_markers, "alerts", (json_int_t)n->n_alerts,
		"alert_sends", (json_int_t)n->n_alert_sends,
		"bytes_freed", (json_int_t)(r->used_before - r->used_after),
		"bytes_before", (json_int_t)r->used_before, "bytes_after",
		(json_int_t)r->used_after, "bytes_measure", r->size_how,
		"batches", (json_int_t)r->n_batches, "elapsed_ms",
		(json_int_t)r->elapsed_ms);

	if (!root)
		return cli_fail(EXIT_FAIL, "out of memory");
	return cli_print_json(root);
}

int cmd_prune(int argc, char **argv)
{
	const char *path = NULL;
	bool dry_run = false, json = false;
	struct cli_state st;
	struct prune_plan plan;
	struct prune_report rep;
	struct sc_err err = {0};
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("prune", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(argv[i], "--dry-run") == 0)
			dry_run = true;
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] == '-')
			return cli_usage_error("prune", "unknown option '%s'",
					       argv[i]);
		else
			return cli_usage_error("prune", "unexpected argument "
					       "'%s'", argv[i]);
	}
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	prune_plan(st.cfg, sc_clock_now_ms(sc_clock_real()), &plan);
	if (!plan.any) {
		json_t *o = json ? json_pack("{s:b, s:b}", "dry_run", dry_run,
					     "retention", 0)
				 : NULL;
		r = EXIT_OK;
		if (o)
			r = cli_print_json(o);
		else if (json)
			r = cli_fail(EXIT_FAIL, "out of memory");
		else
			cli_out(stdout, "no retention set in %s: nothing is "
				"removed (e.g. retention: {ledger: 400d, jobs: "
				"30d, outbox: 30d})\n", st.path);
		goto done;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	if (prune_run(st.store, &plan, dry_run, 0, NULL, NULL, &rep, &err)) {
		r = cli_fail(EXIT_FAIL, "prune: %s (removed so far: %lld "
			     "ledger rows, %lld jobs)", err.msg,
			     (long long)rep.n.n_ledger, (long long)rep.n.n_jobs);
		goto done;
	}
	r = json ? print_json(&plan, &rep, dry_run)
		 : print_text(st.cfg, &plan, &rep, dry_run);
done:
	cli_state_close(&st);
	return r;
}
