/*
 * cli.h - what the command files of the surecron binary share.
 *
 * Each command lives in cmd_<name>.c as `int cmd_<name>(int argc, char
 * **argv)`, where argv[0] is the command name. It returns the process exit
 * status (see the exit codes below and in surecron(1)). The table in
 * cli_commands.c drives dispatch, `surecron help` and `surecron help CMD`;
 * the helpers below are in cli_ops.c.
 */
#ifndef SURECRON_CLI_H
#define SURECRON_CLI_H

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

/* Looks a command up by name in the table (cli_commands.c); NULL when
 * unknown. */
const struct cli_command *cli_find(const char *name);

/* Prints the usage line and the command list to f. */
void cli_print_overview(FILE *f);

/*
 * Prints formatted text for a person to f, cleaned: control bytes (but
 * '\n') and bad UTF-8 are shown as escapes such as \x1b (text.h). Every
 * human output of the commands goes through here; JSON does not.
 * Returns 0.
 */
int cli_out(FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A JSON string of s (NULL when s is NULL), cleaned first only when s is
 * not valid UTF-8, which jansson refuses. */
struct json_t;
struct json_t *cli_json_text(const char *s);

/* Prints "surecron: <message>" and a hint to stderr, the message cleaned
 * (one line); returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints "surecron: <message>" to stderr, cleaned (one line); returns
 * `code`. */
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
/* cli_setup_logging only when SURECRON_LOG is set (simulate, whose
 * timeline is its output, logs nothing otherwise). The variable is read
 * here and in cli_setup_logging only. */
void cli_setup_logging_if_asked(enum sc_log_level dflt);

/* Options shared by `next` and `explain` (parsed in cli_ops.c). */
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

/* cli_cron_opts_parse for the commands that also take a schedule of a
 * config (explain, next): --config FILE is taken out first (*path, else
 * NULL), and *has_tz says whether --tz was given (it does not go with a
 * schedule, which has its own zone). Same returns. */
int cli_cron_opts_config(const char *cmd, int argc, char **argv,
			 unsigned allowed, struct cli_cron_opts *o,
			 const char **path, bool *has_tz);

/* Formats ms as local ISO 8601 in zone z with its numeric offset at that
 * instant: "2026-03-08T03:30:00-04:00". Returns out. */
const char *cli_format_local(int64_t ms, const struct sc_zone *z,
			     char out[CLI_TIME_MAX]);

/* ---- cli_ops.c: shared by the operator commands ---- */

#define CLI_CONFIG_DEFAULT "surecron.yaml"

struct config;
struct store;
struct schedule_spec;

/* A loaded config and (optionally) the store it names. */
struct cli_state {
	const char *path;        /* the config file (borrowed) */
	struct config *cfg;
	struct store *store;  /* NULL unless asked for */
	bool make_store;      /* cli_state_store may make a missing store */
};

/*
 * If argv[*i] is the option long_name (or short_name, which may be NULL)
 * with a value, as `--long VALUE`, `--long=VALUE` or `-s VALUE`: stores
 * the value in *val, advances *i past it and returns 1. Returns 0 for any
 * other argument, and -EXIT_USAGE (after printing) when the value is
 * missing.
 */
int cli_opt_value(const char *cmd, int argc, char **argv, int *i,
		  const char *short_name, const char *long_name,
		  const char **val);

/*
 * Prints root as indented JSON (keys in insertion order) on stdout and
 * releases it. EXIT_OK, or EXIT_FAIL after printing when out of memory.
 */
struct json_t;
int cli_print_json(struct json_t *root);

/* cli_opt_value for --config FILE / --config=FILE / -c FILE. */
int cli_opt_config(const char *cmd, int argc, char **argv, int *i,
		   const char **path);

/*
 * Loads the config at path (NULL: ./surecron.yaml) and, when want_store,
 * opens its store. Returns EXIT_OK, EXIT_USAGE (config does not load) or
 * EXIT_FAIL (store), after printing one line. Close with cli_state_close
 * in every case.
 */
int cli_state_open(const char *path, bool want_store, struct cli_state *st);
/* cli_state_open through config_load_light (config.h; schedules, only as
 * there): for the read-only commands, whose config is printed, never
 * run. */
int cli_state_open_light(const char *path, bool schedules, const char *only,
			 bool want_store, struct cli_state *st);
/* Opens the store of a loaded state (once), through cli_store_open with
 * st->make_store. Returns EXIT_OK or EXIT_FAIL after printing "surecron:
 * store: reason". */
int cli_state_store(struct cli_state *st);
/*
 * Opens the store at url into *out (the caller closes it): one that
 * exists (store_open_existing), or, when make, a new one, with a note on
 * stderr saying it was made. Returns EXIT_OK or EXIT_FAIL after printing
 * "surecron: store: reason", which for a store never made names
 * config_path and the daemon that makes it.
 */
int cli_store_open(const char *url, const char *config_path, bool make,
		   struct store **out);
void cli_state_close(struct cli_state *st);

/*
 * Parses a time option: an ISO 8601 instant with Z or an offset, or an age
 * such as "7d" or "36h" meaning now_ms minus it (clock_parse_when: the
 * instant lies in the years 1-9999). Returns EXIT_OK or EXIT_USAGE after
 * printing one line naming opt.
 */
int cli_parse_time(const char *cmd, const char *opt, const char *s,
		   int64_t now_ms, int64_t *out_ms);
/*
 * Parses a period's --since and --until (cli_parse_time; a NULL one
 * leaves its *_ms as the caller set it, "now" for an until) and refuses
 * one that does not start before it ends: an empty period would read as
 * "nothing went wrong", a report's all-clear. Returns EXIT_OK or
 * EXIT_USAGE after printing one line.
 */
int cli_parse_period(const char *cmd, const char *since, const char *until,
		     int64_t now_ms, int64_t *since_ms, int64_t *until_ms);

/* "4 attempts, exponential backoff from 30m" into out. Returns out. */
const char *cli_format_policy(const struct sc_retry_policy *p, char *out,
			      size_t n);

/* Fills *out (report.h) for s: what status and explain say about a
 * schedule of a loaded config. Returns EXIT_OK, or EXIT_FAIL after
 * printing one line. */
struct report_sched_info;
int cli_schedule_info(const struct schedule_spec *s, int64_t from_ms,
		      struct report_sched_info *out);

/* The commands. Keep in the same order as the table in main.c. */
/* Who acts, for the ledger: by when set, else the user sudo ran us for,
 * else the real user (its name, or "uid N"). Into out (size n). */
void cli_operator_name(const char *by, char *out, size_t n);

int cmd_ack(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_http(int argc, char **argv);
int cmd_import_crontab(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
int cmd_next(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_trigger(int argc, char **argv);
int cmd_version(int argc, char **argv);

#endif
