/*
 * cmd_next.c - `surecron next [--tz ZONE] [--from ISO8601] [--count N] EXPR`
 * and `surecron next --config FILE [--from ISO8601] [--count N] SCHEDULE`
 * (its options are parsed by cli_cron_opts_parse in cli_ops.c, shared with
 * `explain`).
 *
 * Prints the next N fire instants strictly after --from (default: now),
 * one per line, ISO 8601 with seconds and the zone's numeric offset at that
 * instant ("2026-03-08T03:30:00-04:00"). With --config, of the schedule's
 * final expression in its zone, and each line is the real start instant:
 * the slot plus its `jitter:` offset (scheduler_start_ms, the daemon's),
 * followed by "  slot T jitter +D" when the offset is not zero. Bad input
 * (expression, zone, time, option, schedule) is one line on stderr and
 * exit status 2.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "report.h"
#include "scheduler.h"

/* next --config FILE SCHEDULE: the real start instants. */
static int next_schedule(const char *path, struct cli_cron_opts *o)
{
	struct cli_state st = {0};
	struct report_sched_info info;
	char when[CLI_TIME_MAX], slot[CLI_TIME_MAX], d[CLOCK_DUR_MAX];
	int64_t t = o->from_ms;
	int rc;

	if ((rc = cli_state_open(path, false, &st)))
		goto done;
	const struct schedule_spec *sc = config_schedule(st.cfg, o->expr);
	if (!sc) {
		rc = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", o->expr,
			      st.path);
		goto done;
	}
	if ((rc = cli_schedule_info(sc, o->from_ms, &info)))
		goto done;
	for (int i = 0; i < o->count; i++) {
		struct sc_err err = {0};
		if (scheduler_next_slot(sc, t, &t, &err)) {
			rc = cli_fail(EXIT_FAIL, "%s", err.msg);
			goto done;
		}
		int64_t off = scheduler_jitter_ms(sc, t);
		cli_out(stdout, "%s", cli_format_local(t + off, info.zone,
						       when));
		if (off)
			cli_out(stdout, "  slot %s jitter +%s",
				cli_format_local(t, info.zone, slot),
				clock_format_duration(off, d, sizeof(d)));
		cli_out(stdout, "\n");
	}
	rc = EXIT_OK;
done:
	cli_state_close(&st);
	return rc;
}

int cmd_next(int argc, char **argv)
{
	struct cli_cron_opts o;
	struct sc_cron c;
	struct sc_err err = {0};
	char when[CLI_TIME_MAX];
	const char *path = NULL;
	bool has_tz = false;
	int rc;

	rc = cli_cron_opts_config("next", argc, argv, CLI_OPT_COUNT, &o, &path,
				  &has_tz);
	if (rc)
		return rc;
	if (path) {
		if (has_tz)
			return cli_usage_error("next", "--tz does not go with "
					       "a schedule: it has its own zone");
		if (strchr(o.expr, ' '))
			return cli_usage_error("next", "with --config, give a "
					       "schedule name, not an "
					       "expression");
		return next_schedule(path, &o);
	}
	if (sc_cron_parse(o.expr, &c, &err))
		return cli_fail(EXIT_USAGE, "%s", err.msg);
	int64_t t = o.from_ms;
	for (int i = 0; i < o.count; i++) {
		if (sc_cron_next(&c, o.zone, t, &t, &err))
			return cli_fail(EXIT_FAIL, "%s", err.msg);
		cli_out(stdout, "%s\n", cli_format_local(t, o.zone, when));
	}
	return EXIT_OK;
}
