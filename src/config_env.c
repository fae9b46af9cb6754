/*
 * config_env.c - environment overrides of a schedule's cron expression.
 *
 * A deployment may move a schedule without editing the file: the variable
 * named by the schedule's `schedule_env:` wins, then
 * SURECRON_SCHEDULE_<NAME> (name upper-cased, every character other than
 * A-Z and 0-9 replaced by '_'). An empty value counts as unset, so a
 * blank `FOO=` in an env file does not wipe a schedule.
 *
 * config_parse calls config_env_apply for each schedule before it resolves
 * the schedule (config.c resolve_schedule: the parsed expression, zone,
 * class and policy), so those follow the override, once, for everyone.
 *
 * Invariants kept for every loaded schedule: `cron` is the final expression
 * (what the scheduler fires on and the retry class is derived from); when
 * a variable applied, the extras' `override_var` names it and their
 * `cron_config` is the expression as written (NULL when the file has
 * none); when none did, both are NULL and `cron` is the file's (spec.h's
 * spec_cron_config).
 *
 * The other override, SURECRON_ALERT_TARGETS, is split here and only here
 * (config_env_names, issue 43): config_parse resolves it once against the
 * targets, so `check`, the daemon and every command read the same list
 * (struct config's alert_targets) and nobody reads the variable again.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "err.h"

bool config_env_name_valid(const char *name)
{
	if (!name || !*name)
		return false;
	if (!(name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= 'a' && name[0] <= 'z')))
		return false;
	for (const char *p = name; *p; p++) {
		char ch = *p;
		if (!(ch == '_' || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			return false;
	}
	return true;
}

int config_env_default_var(const char *schedule, char *out, size_t n)
{
	static const char prefix[] = "SURECRON_SCHEDULE_";
	size_t len = strlen(schedule);

	if (n < sizeof(prefix) + len)
		return SC_ETOOBIG;
	memcpy(out, prefix, sizeof(prefix) - 1);
	char *q = out + sizeof(prefix) - 1;
	for (const char *p = schedule; *p; p++) {
		char ch = *p;
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 'a' + 'A');
		else if (!((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
			ch = '_';
		*q++ = ch;
	}
	*q = '\0';
	return 0;
}

/* The value of a variable, or NULL when unset or empty. */
static const char *env_value(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

int config_env_apply(struct config_pool *pool, struct schedule_spec *s,
		     struct schedule_extra *x)
{
	char dflt[CONFIG_NAME_MAX + 32];
	const char *var = NULL, *val = NULL;
	char *written = x->override_var ? x->cron_config : s->cron;

	if (!pool)
		return SC_EINVAL;
	if (x->schedule_env && (val = env_value(x->schedule_env)) != NULL)
		var = x->schedule_env;
	if (!var && config_env_default_var(s->name, dflt, sizeof(dflt)) == 0 &&
	    (val = env_value(dflt)) != NULL)
		var = dflt;

	if (!var) {
		if (!written)
			return SC_ENOENT;
		if (s->cron != written)
			config_pool_release(pool, s->cron);
		s->cron = written;
		x->override_var = NULL;
		x->cron_config = NULL;
		return 0;
	}
	char *cron = strdup(val);
	char *ov = config_pool_str(pool, var);
	if (!cron || !ov) {
		free(cron);
		return SC_ENOMEM;
	}
	if (s->cron != written)
		config_pool_release(pool, s->cron);
	s->cron = cron;
	x->override_var = ov;
	x->cron_config = written;
	return 0;
}

int config_env_names(const char *v, char ***out, size_t *n)
{
	static const char sep[] = ", \t";
	size_t cap = 0, count = 0;
	char **names;

	/* An upper bound on the names: one per separator run, plus one. */
	for (const char *p = v; *p; p++)
		cap += strchr(sep, *p) != NULL;
	names = calloc(cap + 2, sizeof(*names));
	if (!names)
		return SC_ENOMEM;
	for (const char *p = v; *p;) {
		p += strspn(p, sep);
		size_t len = strcspn(p, sep);
		if (len == 0)
			break;
		bool dup = false;
		for (size_t j = 0; j < count && !dup; j++)
			dup = strlen(names[j]) == len &&
			      memcmp(names[j], p, len) == 0;
		if (!dup && !(names[count++] = strndup(p, len))) {
			for (size_t j = 0; j + 1 < count; j++)
				free(names[j]);
			free(names);
			return SC_ENOMEM;
		}
		p += len;
	}
	*out = names;
	*n = count;
	return 0;
}
