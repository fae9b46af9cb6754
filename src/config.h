/*
 * config.h - loading surecron.yaml into a struct config (spec.h), applying
 * the environment overrides of schedules, and checking a loaded config
 * against the machine it will run on (`surecron check`).
 *
 * Two levels of validation:
 *   config_load / config_parse  the file itself: YAML syntax, UTF-8, known
 *       keys, types, durations, enums, names, references between sections
 *       (schedule -> target, alerts -> target, http task -> auth), unique
 *       task names. A config that loads is referentially whole: every name
 *       it mentions resolves with config_target / config_auth.
 *       Every schedule of a loaded config is resolved once, after its
 *       environment override: schedule_spec's expr, zone, cls and policy
 *       (spec.h) are filled, so nobody parses its cron again.
 *   config_check  the environment: referenced variables are set, task
 *       programs exist and are executable, working folders exist.
 * Every problem carries the line and column (1-based) of the YAML node it
 * is about, so it prints as "FILE:LINE:COLUMN: reason", FILE being the
 * fragment it is in when the main file includes others (`include:`,
 * issue 15: the main file may hold `include: [GLOB, ...]`; a fragment
 * holds schedules, targets and auth only).
 *
 * Thread-safety: loading and checking touch no global state except reading
 * the environment (getenv); a loaded config is read-only and may be shared.
 */
#ifndef SURECRON_CONFIG_H
#define SURECRON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "spec.h"

/* Size cap on one file of a config (the main file or one fragment it
 * includes), in bytes: a defensive limit per file; the total of a config
 * split by `include:` is bounded only by memory (issue 15). */
#define CONFIG_MAX_BYTES (4 * 1024 * 1024)
/* At most this many problems are kept; the rest are counted. */
#define CONFIG_MAX_PROBLEMS 100
/* Longest schedule, target, auth or task name. */
#define CONFIG_NAME_MAX 64
/* worker.clock_tolerance's default (issue 42): how far a node's wall
 * clock may be from its monotonic expectation, or from the database
 * server's clock, before it counts as stepped or skewed. */
#define CONFIG_CLOCK_TOLERANCE_MS 2000

/* One problem: where (0 when the file as a whole is concerned) and why. */
struct config_problem {
	int line;  /* 1-based, 0: no position */
	int col;   /* 1-based, 0: no position */
	char *msg; /* "key.path: reason", owned */
	char *file;    /* the included fragment it is in, as printed
			  ("conf.d/teams.yaml"), owned; NULL: the main
			  file (config_problems.file) */
	size_t file_ix; /* 0: the main file; i: config.files[i] */
};

/* A list of problems, initialised with {0}. */
struct config_problems {
	char *file;                   /* the config's path, owned */
	/* While the loader reads an included fragment: its printed name
	 * (borrowed) and index, given to each problem added; NULL, 0: the
	 * main file. Callers leave them alone. */
	const char *at_file;
	size_t at_file_ix;
	struct config_problem *items; /* in file order of discovery */
	size_t n;
	size_t cap;
	size_t n_dropped;             /* problems past CONFIG_MAX_PROBLEMS */
	bool oom;                     /* an allocation failed: the load ends
					 in SC_ENOMEM, not SC_ECONFIG */
};

/* Frees the items; the list is empty and reusable afterwards. */
void config_problems_dispose(struct config_problems *p);

/*
 * Appends a problem (printf format). Returns 0, or SC_ENOMEM (the problem
 * is then counted in n_dropped).
 */
int config_problem_add(struct config_problems *p, int line, int col,
		       const char *fmt, ...) SC_PRINTF(4, 5);

/* Records that an allocation failed: an "out of memory" problem, and
 * p->oom, so that the load returns SC_ENOMEM. Returns SC_ENOMEM. */
int config_problem_oom(struct config_problems *p);

/* Writes problem i as "FILE:LINE:COLUMN: reason" (or "FILE: reason" when
 * it has no position) into out (size n), truncating; FILE is the problem's
 * fragment when it has one, else p->file. Returns out. */
const char *config_problem_format(const struct config_problems *p, size_t i,
				  char *out, size_t n);

/*
 * Reads and validates the file at path, collecting every problem found
 * (parsing goes on after a problem where it can). On success *out holds a
 * new config (free with config_free) and 0 is returned. On failure *out is
 * untouched, probs holds at least one problem, and the return is
 * SC_ECONFIG (file content), SC_ENOENT / SC_EACCES / SC_EIO (cannot read)
 * or SC_ENOMEM. probs may not be NULL; its file is set from path.
 */
int config_parse(const char *path, struct config **out,
		 struct config_problems *probs);

/*
 * config_parse reporting only the first problem: err->msg is
 * "FILE:LINE:COLUMN: reason". Returns as config_parse. For the commands
 * and the daemon, which run a config and never check it: the key-path
 * positions are dropped once it loads (config_locate then answers false,
 * config_check's findings carry no position, the load's warnings are
 * gone), which is about a third of the memory of a config of 100,000
 * schedules. `check` uses config_parse.
 */
int config_load(const char *path, struct config **out, struct sc_err *err);

/*
 * The light load of the read-only commands (status, ledger; issue 15):
 * config_load that reads only what they print. The main file is parsed
 * and its store, worker, retention and heartbeat read as by config_load;
 * targets, auth, alerts, the schedules' targets and tasks, and every
 * reference between them are not read, so the config holds no target,
 * auth or task (n_targets, n_auths, n_tasks 0) and is for printing only,
 * never for running. schedules false: no schedule is read and no
 * fragment parsed (n_schedules 0). only non-NULL: the fragments whose
 * bytes do not hold that name are read but not parsed, so a schedule
 * named only is found as by config_load while the other fragments cost
 * nothing (nor can they fail the load); the main file is parsed whole.
 * A file that cannot be read, a YAML error or an unknown key in what is
 * parsed, a bad store, cron or zone still fail it. `check` (config_parse)
 * is what validates everything. Returns and frees as config_load.
 */
int config_load_light(const char *path, bool schedules, const char *only,
		      struct config **out, struct sc_err *err);

/* Frees a config and everything it owns. NULL is ignored. */
void config_free(struct config *c);

/*
 * Checks a loaded config against the environment (see the top of this
 * file), appending one problem per finding. Returns the number of problems
 * appended (0: clean), or SC_ENOMEM.
 */
int config_check(const struct config *c, struct config_problems *probs);

/*
 * Appends the warnings about a loaded config to warns (like problems,
 * "key.path: warning: reason" at the key's position): no alert target
 * configured, and each schedule whose only delivery target is the only
 * alert target. The alert targets are the loaded ones (config_parse
 * resolved SURECRON_ALERT_TARGETS). Returns the number of
 * warnings appended (0: none), or SC_ENOMEM.
 */
int config_check_warnings(const struct config *c,
			  struct config_problems *warns);

/*
 * The position recorded for a key path such as "schedules.weekly.cron" or
 * "schedules.weekly.tasks[1].command" (the node of the value). Returns
 * true and sets *line, *col when known; else false and sets both to 0.
 */
bool config_locate(const struct config *c, const char *path, int *line,
		   int *col);

/* ---- config_env.c: environment overrides of schedules ---- */

/*
 * The default override variable of a schedule: "SURECRON_SCHEDULE_" + the
 * name upper-cased with every character other than A-Z and 0-9 replaced by
 * '_' ("weekly-summary" -> SURECRON_SCHEDULE_WEEKLY_SUMMARY). Writes it into
 * out (size n). Returns 0 or SC_ETOOBIG.
 */
int config_env_default_var(const char *schedule, char *out, size_t n);

/*
 * Applies the environment to a schedule being loaded, whose extras x are
 * not interned yet (config.c interns them after): the variable named by
 * x->schedule_env (when set and non-empty) wins, then the default
 * variable above (when set and non-empty). On entry the expression as
 * written is x->cron_config when x->override_var is set (an override
 * applied before), else s->cron (NULL when the file has none). Sets
 * s->cron to the final expression; when a variable applied,
 * x->override_var to its name and x->cron_config to the expression as
 * written, else both NULL (so that the extras of a schedule with no
 * override stay the shared defaults). Strings come from the config's
 * pool (the value of a variable excepted: s->cron is then a copy of its
 * own), so the 100,000 schedules of a large config hold no string of
 * their own for it (issue 45); what it replaces is released
 * (config_pool_release: pooled strings are never freed), so it may be
 * applied again.
 * Returns 0, SC_ENOENT (no cron in the file and no variable set),
 * SC_EINVAL (pool NULL) or SC_ENOMEM.
 */
struct config_pool;
int config_env_apply(struct config_pool *pool, struct schedule_spec *s,
		     struct schedule_extra *x);

/*
 * The one parser of a list of names in an environment variable
 * (SURECRON_ALERT_TARGETS): names separated by commas, spaces and tabs,
 * in any mix ("a b", "a,b", "a, b", " a ,, b "); empty items are
 * ignored and a name given twice is kept once. Nothing else separates:
 * "a;b" is one name. *out is a new NULL-terminated vector of *n names
 * (each and the vector freed with free()). Returns 0 or SC_ENOMEM (out
 * and n untouched).
 */
int config_env_names(const char *v, char ***out, size_t *n);

/* True for a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
bool config_env_name_valid(const char *name);

/* True when a is a mail address as the email target takes it
 * (`from:`, `to:`): local@domain, printable ASCII with no space, no angle
 * bracket, no comma and one '@' that is neither first nor last. */
bool config_mail_address_ok(const char *a);

/* Parses `http.listen` ("host:port", "[v6]:port"; host an IP literal or
 * localhost) into *ss and *len, and says whether it is a loopback address.
 * Returns 0, or -1 when listen is not such an address. */
int config_http_addr(const char *listen, struct sockaddr_storage *ss,
		     socklen_t *len, bool *loopback);

#endif
