/*
 * cmd_ledger.c - `surecron ledger`: the record of what happened to each
 * slot, read from the store's ledger.
 *
 *   ledger [--config FILE] [--schedule S] [--since T] [--until T]
 *          [--outcome O] [--limit N] [--json]
 *   ledger [--config FILE] --lost [--schedule S] [--since T] [--until T]
 *          [--json]
 *
 * T is an ISO 8601 instant or an age ("7d": seven days before now); the
 * period selects rows by their SLOT instant, since inclusive, until
 * exclusive. --lost is the report that must not be missed: a header with
 * the counts, one line per lost or missed slot with its cause, and exit
 * status 1 when at least one slot of the period was lost or missed and
 * nobody acted (a missed slot's result never came either), so `surecron
 * ledger --lost --since 1d || alert` works from cron or a monitoring
 * check; so does a store that does not exist (cli_store_open). A lost or
 * missed slot that later succeeded (after `surecron retry` or `trigger
 * --slot`) or was acknowledged (`surecron ack`) is still listed, marked
 * recovered or acked, and no longer fails the report: the alarm stops once
 * the operator fixed it. Copies staged for a target that was removed from
 * its schedule ("abandoned" rows, issue 43) are listed and counted apart,
 * and never fail it. Rows come oldest first (the order they were
 * written).
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "ledger.h"
#include "report.h"
#include "store.h"

static int print_json(const struct ledger_row *rows, const int64_t *rec,
		      size_t n, const struct ledger_report *lost)
{
	json_t *root = report_ledger_json(rows, rec, n, lost);

	if (!root)
		return cli_fail(EXIT_FAIL, "out of memory");
	return cli_print_json(root);
}

/* A `release` decision: "  TARGET: arrived by WHO at T". */
static void print_decision(const struct ledger_row *r)
{
	char s[CLOCK_ISO_MAX];
	json_t *d = r->details_json ? json_loads(r->details_json, 0, NULL)
				    : NULL;
	const char *t = json_string_value(json_object_get(d, "target"));
	const char *what = json_string_value(json_object_get(d, "decision"));
	const char *by = json_string_value(json_object_get(d, "by"));

	cli_out(stdout, "  %s: %s by %s at %s", t ? t : "?",
		what ? what : "?", by ? by : "?",
		clock_format_utc(r->finished_ms, s));
	json_decref(d);
}

static void print_row(const struct ledger_row *r, int64_t rec_ms)
{
	char s[CLOCK_ISO_MAX];

	bool more = r->error_class[0] || r->error_msg || r->retry_hint_ms > 0 ||
		    rec_ms || strcmp(r->outcome, LEDGER_DECISION) == 0;

	/* Pad the outcome only when something follows it. */
	cli_out(stdout,
		"%-20s  %-20s %6lld %3d  %-*s", clock_format_utc(r->slot_ms, s),
		r->schedule, (long long)r->job_id, r->attempt, more ? 9 : 0,
		r->outcome);
	if (r->error_class[0] || r->error_msg)
		cli_out(stdout, "  %s%s%s", r->error_class,
			r->error_class[0] && r->error_msg ? ": " : "",
			r->error_msg ? r->error_msg : "");
	if (r->retry_hint_ms > 0) {
		char d[CLOCK_DUR_MAX];
		cli_out(stdout, " (retry after %s)",
			clock_format_duration(r->retry_hint_ms, d, sizeof(d)));
	}
	if (rec_ms)
		cli_out(stdout, "  [recovered: success at %s]",
			clock_format_utc(rec_ms, s));
	if (strcmp(r->outcome, LEDGER_DECISION) == 0)
		print_decision(r);
	putchar('\n');
}

static void print_period(const struct ledger_filter *f)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];

	if (f->since_ms != INT64_MIN)
		cli_out(stdout, " since %s", clock_format_utc(f->since_ms, a));
	if (f->until_ms != INT64_MAX)
		cli_out(stdout, " until %s", clock_format_utc(f->until_ms, b));
}

int cmd_ledger(int argc, char **argv)
{
	const char *path = NULL, *since = NULL, *until = NULL, *limit = NULL;
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX};
	bool json = false, lost = false;
	struct cli_state st;
	struct ledger_row *rows = NULL;
	struct sc_err err = {0};
	size_t n = 0;
	int64_t now_ms = sc_clock_now_ms(sc_clock_real());
	struct ledger_report rep = {0};
	int r;

	static const char *const names[] = {"--schedule", "--since", "--until",
					    "--outcome", "--limit"};
	const char **vals[] = {&f.schedule, &since, &until, &f.outcome,
			       &limit};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((r = cli_opt_config("ledger", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(a, "--json") == 0) {
			json = true;
			continue;
		}
		if (strcmp(a, "--lost") == 0) {
			lost = true;
			continue;
		}
		for (size_t k = 0; !r && k < sizeof(names) / sizeof(names[0]);
		     k++)
			r = cli_opt_value("ledger", argc, argv, &i, NULL,
					  names[k], vals[k]);
		if (r < 0)
			return -r;
		if (r)
			continue;
		if (a[0] == '-')
			return cli_usage_error("ledger", "unknown option '%s'", a);
		return cli_usage_error("ledger", "unexpected argument '%s'", a);
	}
	if (lost && f.outcome)
		return cli_usage_error("ledger", "--lost and --outcome do not "
				       "go together");
	/* The report counts every lost slot of the period: a limit could
	 * drop the lost one and turn the exit status green. */
	if (lost && limit)
		return cli_usage_error("ledger", "--lost and --limit do not go "
				       "together (narrow the period with "
				       "--since)");
	if (f.outcome && !ledger_outcome_known(f.outcome))
		return cli_usage_error("ledger", "--outcome: '%s' is not one of "
				       "success, failed, lost, stalled, missed, "
				       "duplicate, released, decision, "
				       "skipped, abandoned (or alert, acked, "
				       "recovered, late, overrun, stale, "
				       "paused, replaced)",
				       f.outcome);
	/* `--since 7d --until 30d` (ages both) would answer "no lost or
	 * missed slots", exit 0. */
	if ((r = cli_parse_period("ledger", since, until, now_ms, &f.since_ms,
				  &f.until_ms)))
		return r;
	if (limit) {
		char *end;
		errno = 0;
		long v = strtol(limit, &end, 10);
		if (!isdigit((unsigned char)*limit) || *end || errno || v < 1 ||
		    v > 1000000)
			return cli_usage_error("ledger", "--limit must be a "
					       "number 1-1000000, not '%s'",
					       limit);
		f.limit = (int)v;
		/* The N most recent rows: what an operator looking at a
		 * long ledger wants. Read newest first, shown oldest first. */
		f.newest_first = true;
	}
	/* The light load (config.h): the ledger needs the store, and a
	 * schedule's name only when one is asked for. */
	if ((r = cli_state_open_light(path, f.schedule != NULL, f.schedule,
				      false, &st)))
		goto done;
	if (f.schedule && !config_schedule(st.cfg, f.schedule)) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", f.schedule,
			     st.path);
		goto done;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	if ((lost ? ledger_lost_report(st.store, &f, &rep, &err)
		  : ledger_read(st.store, &f, &rows, &n, &err)) != 0) {
		r = cli_fail(EXIT_FAIL, "store: %s", err.msg);
		goto done;
	}
	if (lost) {
		rows = rep.rows;
		n = rep.n;
	}
	if (json) {
		r = print_json(rows, rep.recovered_ms, n, lost ? &rep : NULL);
	} else if (lost) {
		if (rep.n_lost || rep.n_missed)
			cli_out(stdout,
				"%s: %zu slot%s lost, %zu missed",
				rep.n_lost ? "LOST" : "MISSED", rep.n_lost,
				rep.n_lost == 1 ? "" : "s", rep.n_missed);
		else
			cli_out(stdout, "no lost or missed slots");
		print_period(&f);
		if (rep.n_recovered)
			cli_out(stdout, "; %zu recovered later",
				rep.n_recovered);
		if (rep.n_acked)
			cli_out(stdout, "; %zu acknowledged", rep.n_acked);
		/* Not run by choice (overlap: skip): shown, never failing. */
		if (rep.n_skipped)
			cli_out(stdout, "; %zu skipped (overlap)",
				rep.n_skipped);
		/* Copies of targets removed from their schedule, closed
		 * unsent (issue 43): shown, never failing. */
		if (rep.n_abandoned)
			cli_out(stdout, "; %zu cop%s abandoned (target removed)",
				rep.n_abandoned,
				rep.n_abandoned == 1 ? "y" : "ies");
		cli_out(stdout, "\n");
		for (size_t i = 0; i < rep.n_skipped; i++)
			print_row(&rep.skipped[i], 0);
		for (size_t i = 0; i < rep.n_abandoned; i++)
			print_row(&rep.abandoned[i], 0);
		for (size_t i = 0; i < n; i++) {
			print_row(&rows[i], rep.recovered_ms[i]);
			if (!rep.recovered_ms[i] && rep.acked_ms[i]) {
				char t[CLOCK_ISO_MAX];
				cli_out(stdout, "%22s[acked at %s]\n", "",
					clock_format_utc(rep.acked_ms[i], t));
			}
		}
		r = EXIT_OK;
	} else {
		if (n) {
			cli_out(stdout,
				"%-20s  %-20s %6s %3s  %-9s  %s\n", "SLOT",
				"SCHEDULE", "JOB", "ATT", "OUTCOME", "ERROR");
		} else {
			/* Say so: an empty screen reads like a hang or a
			 * wrong store. */
			cli_out(stdout, "no ledger rows");
			print_period(&f);
			cli_out(stdout, "\n");
		}
		for (size_t i = 0; i < n; i++)
			print_row(&rows[i], 0);
		r = EXIT_OK;
	}
	/* The loud part: a lost or missed slot of the period that nobody
	 * fixed or took on fails the report. */
	if (r == EXIT_OK && lost && (rep.n_lost || rep.n_missed))
		r = EXIT_FAIL;
done:
	if (lost)
		ledger_report_dispose(&rep);
	else
		store_ledger_rows_free(rows, n);
	cli_state_close(&st);
	return r;
}
