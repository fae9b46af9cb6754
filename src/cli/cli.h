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

/* The commands. Keep in the same order as the table in main.c. */
int cmd_check(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_http(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_version(int argc, char **argv);

#endif
