/*
 * cmd_next.c - `surecron next [--tz ZONE] [--from ISO8601] [--count N] EXPR`
 * (its options are parsed by cli_cron_opts_parse in cli_ops.c, shared with
 * `explain`).
 *
 * Prints the next N fire instants strictly after --from (default: now),
 * one per line, ISO 8601 with seconds and the zone's numeric offset at that
 * instant ("2026-03-08T03:30:00-04:00"). Bad input (expression, zone,
 * time, option) is one line on stderr and exit status 2.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"

int cmd_next(int argc, char **argv)
{
	struct cli_cron_opts o;
	struct sc_cron c;
	struct sc_err err = {0};
	char when[CLI_TIME_MAX];
	int rc = cli_cron_opts_parse("next", argc, argv, CLI_OPT_COUNT, &o);

	if (rc)
		return rc;
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
