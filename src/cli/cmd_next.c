/*
 * cmd_next.c - `surecron next [--tz ZONE] [--from ISO8601] [--count N] EXPR`
 * and the option parsing and time formatting it shares with `explain`.
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

const char *cli_format_local(int64_t ms, const struct sc_zone *z,
			     char out[CLI_TIME_MAX])
{
	int32_t off = sc_zone_offset_s(z, ms);
	int64_t secs = ms / 1000 - (ms % 1000 < 0) + off;
	int64_t days = secs / 86400 - (secs % 86400 < 0);
	int sod = (int)(secs - days * 86400);
	int64_t y;
	int m, d, aoff = off < 0 ? -off : off;

	clock_civil_from_days(days, &y, &m, &d);
	snprintf(out, CLI_TIME_MAX, "%04lld-%02d-%02dT%02d:%02d:%02d%c%02d:%02d",
		 (long long)y, m, d, sod / 3600, sod / 60 % 60, sod % 60,
		 off < 0 ? '-' : '+', aoff / 3600, aoff / 60 % 60);
	return out;
}

/* Takes the value of option `name` from "--name=V" or "--name V". Returns
 * the value, NULL when argv[*i] is not this option, or sets *missing. */
static const char *opt_value(const char *name, int argc, char **argv, int *i,
			     bool *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (!a || strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

int cli_cron_opts_parse(const char *cmd, int argc, char **argv,
			unsigned allowed, struct cli_cron_opts *o)
{
	const char *tz = NULL, *from = NULL, *count = NULL;
	struct sc_err err = {0};
	bool dashdash = false;
	size_t len = 0;

	memset(o, 0, sizeof(*o));
	o->count = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing = false;

		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = true;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1] != '\0') {
			if ((v = opt_value("--tz", argc, argv, &i, &missing)))
				tz = v;
			else if ((v = opt_value("--from", argc, argv, &i,
						&missing)))
				from = v;
			else if ((allowed & CLI_OPT_COUNT) &&
				 (v = opt_value("--count", argc, argv, &i,
						&missing)))
				count = v;
			else if ((allowed & CLI_OPT_JSON) &&
				 strcmp(a, "--json") == 0)
				o->json = true;
			else if (missing)
				return cli_usage_error(cmd, "option '%s' needs "
						       "a value", a);
			else
				return cli_usage_error(cmd, "unknown option "
						       "'%s'", a);
			continue;
		}
		/* The expression may come as one quoted argument or as its
		 * fields; join them with spaces. */
		size_t al = strlen(a);
		if (len + al + 2 > sizeof(o->expr))
			return cli_usage_error(cmd, "expression is longer than "
					       "%d bytes", SC_CRON_EXPR_MAX);
		if (len)
			o->expr[len++] = ' ';
		memcpy(o->expr + len, a, al + 1);
		len += al;
	}
	if (!len)
		return cli_usage_error(cmd, "missing the cron expression");
	if (count) {
		char *end;
		long n = strtol(count, &end, 10);
		if (!isdigit((unsigned char)*count) || *end || n < 1 ||
		    n > CLI_COUNT_MAX)
			return cli_usage_error(cmd, "--count must be a number "
					       "1-%d, not '%s'", CLI_COUNT_MAX,
					       count);
		o->count = (int)n;
	}
	if (tz) {
		if (sc_zone_load(tz, &o->zone, &err))
			return cli_fail(EXIT_USAGE, "%s", err.msg);
	} else {
		o->zone = sc_zone_local();
	}
	if (from) {
		if (clock_parse_iso(from, &o->from_ms, &err))
			return cli_fail(EXIT_USAGE, "--from: %s", err.msg);
	} else {
		o->from_ms = sc_clock_now_ms(sc_clock_real());
	}
	return EXIT_OK;
}

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
