/*
 * cli.h - what the command files of the surecron binary share.
 *
 * Each command lives in cmd_<name>.c as `int cmd_<name>(int argc, char
 * **argv)`, where argv[0] is the command name. It returns the process exit
 * status (see the exit codes below and in surecron(1)). The table in main.c
 * drives dispatch, `surecron help` and `surecron help CMD`.
 */
#ifndef SC_CLI_H
#define SC_CLI_H

#include <stdio.h>

#include "surecron.h"

/* Exit codes, documented in docs/man/surecron.1.md. */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,     /* the operation failed at run time */
	EXIT_USAGE = 2,    /* bad command line, expression, zone or config */
	EXIT_TEMPFAIL = 75, /* retryable failure (EX_TEMPFAIL) */
	EXIT_CONFIG = 78,  /* unrecoverable failure (EX_CONFIG) */
};

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;   /* "next [--tz ZONE] ... EXPR" */
	const char *summary; /* one line for the command list */
	const char *help;    /* the paragraphs shown by `help CMD` */
};

/* Looks a command up by name; NULL when unknown. */
const struct cli_command *cli_find(const char *name);

/* Prints "surecron: <message>" and a hint to stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints "surecron: <message>" to stderr; returns `code`. */
int cli_fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints the full help of a command to f. */
void cli_print_help(FILE *f, const struct cli_command *c);

/*
 * True when argv holds -h or --help before a "--"; commands call this first
 * so that `surecron CMD --help` equals `surecron help CMD`.
 */
int cli_wants_help(int argc, char **argv);

/* Installs the stderr log sink at the level named by SURECRON_LOG (default
 * "info" for the daemon, "warn" otherwise). */
void cli_setup_logging(enum sc_log_level dflt);

/* Options shared by `next` and `explain` (parsed in cmd_next.c). */
#define CLI_OPT_COUNT 0x1 /* accept --count N */
#define CLI_OPT_JSON 0x2  /* accept --json */
#define CLI_COUNT_MAX 10000
#define CLI_TIME_MAX 40

struct cli_cron_opts {
	const struct sc_zone *zone; /* --tz, default the local zone */
	int64_t from_ms;            /* --from, default now */
	int count;                  /* --count, default 1 */
	bool json;                  /* --json */
	char expr[SC_CRON_EXPR_MAX + 2]; /* the arguments, joined by spaces */
};

/* Parses argv of `cmd` into *o. Returns EXIT_OK, or EXIT_USAGE after
 * printing one line to stderr. */
int cli_cron_opts_parse(const char *cmd, int argc, char **argv,
			unsigned allowed, struct cli_cron_opts *o);

/* Formats ms as local ISO 8601 in zone z with its numeric offset at that
 * instant: "2026-03-08T03:30:00-04:00". Returns out. */
const char *cli_format_local(int64_t ms, const struct sc_zone *z,
			     char out[CLI_TIME_MAX]);

/* The commands. Keep in the same order as the table in main.c. */
int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_http(int argc, char **argv);
int cmd_next(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_version(int argc, char **argv);

#endif
