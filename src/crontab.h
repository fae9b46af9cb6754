/*
 * crontab.h - reading a crontab as cron(8) does, for `surecron
 * import-crontab` (issue 18).
 *
 * Both formats: a user's crontab (five time fields, then the command) and
 * the system one of /etc/crontab and /etc/cron.d (a user name between the
 * fields and the command). Lines are read as Debian's cron reads them:
 *   - blank lines and lines whose first non-blank character is '#' are
 *     comments;
 *   - NAME=VALUE (blanks allowed around '=', the value optionally in
 *     matching single or double quotes) sets a variable for the lines
 *     after it; MAILTO, CRON_TZ, TZ and SHELL are kept apart as well;
 *   - a job line is five fields or a macro (@hourly ... @yearly), the user
 *     in the system format, then the command: the rest of the line;
 *   - in the command, an unescaped '%' ends the command and starts its
 *     standard input, in which each further '%' is a newline and which
 *     ends with a newline; "\%" is a literal '%' in both.
 * What cron would do but surecron cannot carry over becomes a note with
 * its line: @reboot, another user's line, a line ending in a backslash
 * (cron has no continuation lines: the next line is a line of its own),
 * a variable name surecron cannot pass on, a line cron would refuse.
 *
 * Memory: crontab_parse fills a struct crontab whose strings it owns;
 * crontab_dispose frees them. Thread-safe (no shared state).
 */
#ifndef SURECRON_CRONTAB_H
#define SURECRON_CRONTAB_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "err.h"

/* One job line. */
struct crontab_job {
	int line;               /* 1-based */
	char *raw;              /* the line as written, without its newline */
	char *spec;             /* the five fields, one space apart, or the
				   macro (@daily) */
	char *user;             /* system format: the user column; else NULL */
	char *command;          /* what cron hands to the shell: up to the
				   first unescaped '%', "\%" made '%' */
	char *input;            /* standard input after the first '%' (each
				   further '%' a newline, and one at the
				   end when it has none, as cron writes
				   it), or NULL */
	/* The variables in effect at this line (set on lines above it). */
	char *mailto;           /* NULL: never set; "": set empty (no mail) */
	char *tz;               /* CRON_TZ, else TZ, or NULL */
	char *shell;            /* SHELL, or NULL (cron's /bin/sh) */
	char **env;             /* the other NAME=VALUE, NULL-terminated */
};

/* A line that is not carried over, and why. */
struct crontab_note {
	int line;
	char *raw;
	char *why;
};

struct crontab {
	struct crontab_job *jobs;
	size_t n_jobs;
	struct crontab_note *notes;
	size_t n_notes;
};

/*
 * Reads text (len bytes, need not be NUL-terminated). system: the format
 * with a user column. user: the user the jobs will run as; in the system
 * format a line of another user becomes a note (NULL: every user is
 * taken). Returns 0 (problems are notes, never errors), SC_ENOMEM, or
 * SC_EINVAL for text that holds a NUL byte. *out is cleared first.
 */
int crontab_parse(const char *text, size_t len, bool system,
		  const char *user, struct crontab *out, struct sc_err *err);

void crontab_dispose(struct crontab *c);

/*
 * A schedule name made from a job's command: the program's file name and
 * its first argument that is a path, lowercased, other characters made
 * '-' ("/usr/local/bin/backup.sh --fast" -> "backup-sh";
 * "cd / && run-parts --report /etc/cron.daily" -> "run-parts-cron-daily"),
 * at most max - 1 bytes (max >= 8) into out. Never empty ("job").
 */
void crontab_job_name(const char *command, char *out, size_t max);

/* What crontab_yaml writes around the jobs. */
struct crontab_yaml_opts {
	const char *source;     /* where the crontab came from, named in the
				   first comment (any bytes: escaped) */
	const char *store;      /* the store URL; NULL: sqlite:./surecron.db */
	const char *from;       /* the mail targets' sender (a mail address) */
};

/*
 * Appends to out the surecron.yaml of c (crontab_yaml.c says how each
 * line is carried over): printable ASCII only, one schedule per job line
 * that can be carried, every other line listed at the end in a comment
 * with its reason. For any c the text loads (config_parse) with exactly
 * those schedules and nothing else. *n_sched and *n_skip get the
 * schedules written and the lines listed. Returns 0; SC_EINVAL when
 * o->from is not a mail address or o->store not UTF-8; SC_ENOMEM, or
 * SC_ETOOBIG past out's cap (out then holds part of the text). Thread-
 * safe.
 */
int crontab_yaml(const struct crontab *c, const struct crontab_yaml_opts *o,
		 struct buf *out, size_t *n_sched, size_t *n_skip,
		 struct sc_err *err);

#endif
