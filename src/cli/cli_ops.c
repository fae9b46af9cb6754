/*
 * cli_ops.c - what the operator commands (status, ledger, trigger, retry,
 * explain SCHEDULE) share: the --config option, loading the config and
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
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
	if (!s)
		return NULL;
	json_t *j = json_string(s);
	if (!j) {
		struct buf b;
		buf_init(&b, strlen(s) * 4 + 16);
		if (text_clean_buf(&b, s, strlen(s), 0) == 0)
			j = json_string(buf_str(&b));
		buf_dispose(&b);
	}
	return j;
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

int cli_state_store(struct cli_state *st)
{
	struct sc_err err = {0};

	if (st->store)
		return EXIT_OK;
	if (store_open(st->cfg->store_url, sc_clock_real(), &st->store,
		       &err) != 0)
		return cli_fail(EXIT_FAIL, "store: %s", err.msg);
	return EXIT_OK;
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
	int64_t d;

	/* An age ("7d", "36h", "1h30m") counts back from now; anything that
	 * starts like a date is an instant. */
	if (clock_parse_duration(s, &d, NULL) == 0) {
		*out_ms = now_ms - d;
		return EXIT_OK;
	}
	if (clock_parse_iso(s, out_ms, &err) == 0)
		return EXIT_OK;
	return cli_fail(EXIT_USAGE, "%s: '%s' is neither an ISO 8601 instant "
			"(2026-11-27T17:00:00Z) nor an age (7d, 12h): %s", opt,
			s, err.msg);
	(void)cmd;
}

const char *cli_format_dur(int64_t ms, char *out, size_t n)
{
	int64_t s = ms / 1000;
	size_t len = 0;

	out[0] = '\0';
	if (s >= 86400)
		len += (size_t)snprintf(out + len, n - len, "%lldd",
					(long long)(s / 86400));
	if (s % 86400 >= 3600 && len < n)
		len += (size_t)snprintf(out + len, n - len, "%lldh",
					(long long)(s % 86400 / 3600));
	if (s % 3600 >= 60 && len < n)
		len += (size_t)snprintf(out + len, n - len, "%lldm",
					(long long)(s % 3600 / 60));
	if ((s % 60 || s == 0) && len < n)
		snprintf(out + len, n - len, "%llds", (long long)(s % 60));
	return out;
}

const char *cli_format_policy(const struct sc_retry_policy *p, char *out,
			      size_t n)
{
	char d[32];

	/* "from": an exponential delay grows from it; a fixed one stays. */
	snprintf(out, n, "%d attempt%s, %s", p->attempts,
		 p->attempts > 1 ? "s" : "",
		 p->backoff == SC_BACKOFF_FIXED ? "fixed backoff of"
						: "exponential backoff from");
	size_t len = strlen(out);
	snprintf(out + len, n - len, " %s",
		 cli_format_dur(p->delay_ms, d, sizeof(d)));
	return out;
}

int cli_schedule_info(const struct schedule_spec *s, int64_t from_ms,
		      struct cli_schedule_info *out)
{
	struct sc_err err = {0};

	/* Resolved by config_parse (spec.h); only the reason is worded here. */
	memset(out, 0, sizeof(*out));
	out->zone = s->zone;
	out->cron = s->expr;
	out->cls = s->cls;
	out->policy = s->policy;
	sc_cron_class(&out->cron, out->reason, sizeof(out->reason));
	out->policy_from_config = s->has_retry;
	if (sc_cron_next(&out->cron, out->zone, from_ms, &out->next_ms, &err))
		return cli_fail(EXIT_FAIL, "schedule %s: %s", s->name, err.msg);
	return EXIT_OK;
}
