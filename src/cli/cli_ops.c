/*
 * cli_ops.c - what the commands share: printing for a person (cleaned,
 * text.h) and the usage and failure lines; --help and SURECRON_LOG; the
 * options of `next` and `explain` and local time formatting; and for the
 * operator commands (status, ledger, trigger, retry, explain SCHEDULE): the --config option, loading the config and
 * opening the store it names, parsing times given as ISO 8601 or as an age
 * ("7d"), and describing one schedule (final expression, zone, class,
 * policy).
 *
 * Exit codes follow surecron(1): a config that does not load, an unknown
 * name or a bad time is EXIT_USAGE (2); a store that cannot be opened or
 * read is EXIT_FAIL (1). Each helper prints its one line itself, so a
 * command just returns the code it gets.
 */
#include <jansson.h>
#include <ctype.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "report.h"
#include "store.h"
#include "text.h"

int cli_opt_value(const char *cmd, int argc, char **argv, int *i,
		  const char *short_name, const char *long_name,
		  const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(long_name);

	if (strncmp(a, long_name, n) == 0 && a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (strcmp(a, long_name) != 0 &&
	    !(short_name && strcmp(a, short_name) == 0))
		return 0;
	if (*i + 1 >= argc)
		return -cli_usage_error(cmd, "option '%s' needs a value", a);
	*val = argv[++*i];
	return 1;
}

json_t *cli_json_text(const char *s)
{
	return report_json_text(s);
}

int cli_print_json(json_t *root)
{
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	int rc = EXIT_OK;

	if (s) {
		printf("%s\n", s);
		free(s);
	} else {
		rc = cli_fail(EXIT_FAIL, "out of memory");
	}
	json_decref(root);
	return rc;
}

int cli_opt_config(const char *cmd, int argc, char **argv, int *i,
		   const char **path)
{
	return cli_opt_value(cmd, argc, argv, i, "-c", "--config", path);
}

int cli_state_open(const char *path, bool want_store, struct cli_state *st)
{
	struct sc_err err = {0};

	memset(st, 0, sizeof(*st));
	st->path = path ? path : CLI_CONFIG_DEFAULT;
	cli_setup_logging(SC_LOG_WARN);
	if (config_load(st->path, &st->cfg, &err) != 0)
		return cli_fail(EXIT_USAGE, "%s", err.msg);
	return want_store ? cli_state_store(st) : EXIT_OK;
}

int cli_state_open_light(const char *path, bool schedules, const char *only,
			 bool want_store, struct cli_state *st)
{
	struct sc_err err = {0};

	memset(st, 0, sizeof(*st));
	st->path = path ? path : CLI_CONFIG_DEFAULT;
	cli_setup_logging(SC_LOG_WARN);
	if (config_load_light(st->path, schedules, only, &st->cfg, &err) != 0)
		return cli_fail(EXIT_USAGE, "%s", err.msg);
	return want_store ? cli_state_store(st) : EXIT_OK;
}

int cli_state_store(struct cli_state *st)
{
	if (st->store)
		return EXIT_OK;
	return cli_store_open(st->cfg->store_url, st->path, st->make_store,
			      &st->store);
}

int cli_store_open(const char *url, const char *config_path, bool make,
		   struct store **out)
{
	struct sc_err err = {0};
	char shown[512];

	/* Only the daemon makes a store as a matter of course: a command
	 * reading a path that names none would report a store where nothing
	 * ever failed. One that queues work for the daemon (trigger, pause)
	 * may make it, as on a first install, and says so: the daemon sees
	 * that work only if it runs on the same store. */
	if (store_open_existing(url, sc_clock_real(), out, &err) == 0)
		return EXIT_OK;
	if (err.code == SC_ENOENT && make) {
		sc_err_clear(&err);
		if (store_open(url, sc_clock_real(), out, &err) == 0) {
			fprintf(stderr, "surecron: note: no store at %s yet: "
				"made a new one (a daemon runs what is queued "
				"there once its config names the same "
				"store)\n",
				store_url_for_log(url, shown, sizeof(shown)));
			return EXIT_OK;
		}
	}
	if (err.code == SC_ENOENT)
		return cli_fail(EXIT_FAIL, "store: %s (the daemon, surecron "
				"run, makes it on its first start: is the "
				"store: of %s the daemon's?)",
				err.msg, config_path);
	return cli_fail(EXIT_FAIL, "store: %s", err.msg);
}

void cli_state_close(struct cli_state *st)
{
	store_close(st->store);
	config_free(st->cfg);
	memset(st, 0, sizeof(*st));
}

int cli_parse_time(const char *cmd, const char *opt, const char *s,
		   int64_t now_ms, int64_t *out_ms)
{
	struct sc_err err = {0};

	/* clock_parse_when: the bound of every time a command or the API
	 * takes (the years 1-9999), so no age prints a negative year. */
	if (clock_parse_when(s, now_ms, 0, out_ms, &err) == 0)
		return EXIT_OK;
	return cli_fail(EXIT_USAGE, "%s: '%s' is neither an ISO 8601 instant "
			"(2026-11-27T17:00:00Z) nor an age (7d, 12h) within "
			"the years 1-9999: %s", opt, s, err.msg);
	(void)cmd;
}

const char *cli_format_policy(const struct sc_retry_policy *p, char *out,
			      size_t n)
{
	char d[CLOCK_DUR_MAX];

	/* "from": an exponential delay grows from it; a fixed one stays. */
	snprintf(out, n, "%d attempt%s, %s", p->attempts,
		 p->attempts > 1 ? "s" : "",
		 p->backoff == SC_BACKOFF_FIXED ? "fixed backoff of"
						: "exponential backoff from");
	size_t len = strlen(out);
	snprintf(out + len, n - len, " %s",
		 clock_format_duration(p->delay_ms, d, sizeof(d)));
	return out;
}

int cli_parse_period(const char *cmd, const char *since, const char *until,
		     int64_t now_ms, int64_t *since_ms, int64_t *until_ms)
{
	int r;

	if (since && (r = cli_parse_time(cmd, "--since", since, now_ms,
					 since_ms)))
		return r;
	if (until && (r = cli_parse_time(cmd, "--until", until, now_ms,
					 until_ms)))
		return r;
	if (*since_ms >= *until_ms)
		return cli_usage_error(cmd, "--since (%s) must be before "
				       "--until (%s)", since ? since : "?",
				       until ? until : "now");
	return EXIT_OK;
}

int cli_schedule_info(const struct schedule_spec *s, int64_t from_ms,
		      struct report_sched_info *out)
{
	struct sc_err err = {0};

	if (report_sched_info(s, from_ms, out, &err))
		return cli_fail(EXIT_FAIL, "schedule %s: %s", s->name, err.msg);
	return EXIT_OK;
}

/*
 * Everything the commands print for a person goes through here: the text
 * is formatted, then cleaned (text_clean), so an escape sequence from a
 * task, a peer, the config or the command line shows as "\x1b" and never
 * acts on the terminal (issue 11). JSON output does not come here.
 */
/* A line that fits the stack buffer and is clean already (nearly every
 * one: `status` of 10,000 schedules prints 90,000) is written as it is,
 * with no allocation; the rest is cleaned. */
static void vout(FILE *f, unsigned flags, const char *fmt, va_list ap)
{
	char small[512], *raw = small;
	struct buf b;
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n >= 0 && (size_t)n >= sizeof(small))
		n = vasprintf(&raw, fmt, again);
	va_end(again);
	if (n < 0)
		return;
	/* A NUL inside (a %c of 0) is not clean: text_clean_buf shows it. */
	if (!memchr(raw, 0, (size_t)n) && text_printable(raw, flags)) {
		fputs(raw, f);
	} else {
		buf_init(&b, (size_t)n * 4 + 16);
		if (text_clean_buf(&b, raw, (size_t)n, flags) == 0)
			fputs(buf_str(&b), f);
		buf_dispose(&b);
	}
	if (raw != small)
		free(raw);
}

int cli_out(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vout(f, TEXT_KEEP_NL, fmt, ap);
	va_end(ap);
	return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("surecron: ", stderr);
	va_start(ap, fmt);
	vout(stderr, 0, fmt, ap);
	va_end(ap);
	if (cmd)
		cli_out(stderr, " (see 'surecron help %s')\n", cmd);
	else
		fputs(" (see 'surecron --help')\n", stderr);
	return EXIT_USAGE;
}

int cli_fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("surecron: ", stderr);
	va_start(ap, fmt);
	vout(stderr, 0, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return 1;
	}
	return 0;
}

void cli_setup_logging(enum sc_log_level dflt)
{
	enum sc_log_level level = dflt;
	const char *env = getenv("SURECRON_LOG");

	if (env && sc_log_level_parse(env, &level) != 0)
		fprintf(stderr, "surecron: ignoring SURECRON_LOG=%s (use error, "
				"warn, info or debug)\n", env);
	sc_log_set_sink(sc_log_stderr, NULL, level);
}

void cli_setup_logging_if_asked(enum sc_log_level dflt)
{
	if (getenv("SURECRON_LOG"))
		cli_setup_logging(dflt);
}

const char *cli_format_local(int64_t ms, const struct sc_zone *z,
			     char out[CLI_TIME_MAX])
{
	return report_format_local(ms, z, out);
}

int cli_cron_opts_config(const char *cmd, int argc, char **argv,
			 unsigned allowed, struct cli_cron_opts *o,
			 const char **path, bool *has_tz)
{
	char **rest = calloc((size_t)argc + 1, sizeof(*rest));
	int n_rest = 0, rc;

	*path = NULL;
	*has_tz = false;
	if (!rest)
		return cli_fail(EXIT_FAIL, "out of memory");
	for (int i = 0; i < argc; i++) {
		if (i > 0 && strcmp(argv[i], "--") == 0) {
			while (i < argc)
				rest[n_rest++] = argv[i++];
			break;
		}
		if (i > 0 && (rc = cli_opt_config(cmd, argc, argv, &i,
						   path)) != 0) {
			if (rc < 0) {
				free(rest);
				return -rc;
			}
			continue;
		}
		if (strcmp(argv[i], "--tz") == 0 ||
		    strncmp(argv[i], "--tz=", 5) == 0)
			*has_tz = true;
		rest[n_rest++] = argv[i];
	}
	rc = cli_cron_opts_parse(cmd, n_rest, rest, allowed, o);
	free(rest);
	return rc;
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
		const char *a = argv[i];
		int r = 0;

		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = true;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1] != '\0') {
			r = cli_opt_value(cmd, argc, argv, &i, NULL, "--tz", &tz);
			if (!r)
				r = cli_opt_value(cmd, argc, argv, &i, NULL,
						  "--from", &from);
			if (!r && (allowed & CLI_OPT_COUNT))
				r = cli_opt_value(cmd, argc, argv, &i, NULL,
						  "--count", &count);
			if (r < 0)
				return -r;
			if (r)
				continue;
			if ((allowed & CLI_OPT_JSON) && strcmp(a, "--json") == 0)
				o->json = true;
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

void cli_operator_name(const char *by, char *out, size_t n)
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd *pw;

	if (by && *by)
		snprintf(out, n, "%s", by);
	else if (sudo && *sudo)
		snprintf(out, n, "%s", sudo);
	else if ((pw = getpwuid(getuid())) && pw->pw_name)
		snprintf(out, n, "%s", pw->pw_name);
	else
		snprintf(out, n, "uid %ld", (long)getuid());
}
