/*
 * crontab.c - a crontab read as cron(8) reads it (crontab.h).
 *
 * Invariants:
 *   - the reader never fails on what a line says: a line it cannot carry
 *     over is a note with the reason, every other line is a job or a
 *     variable, so nothing of the file is silently dropped;
 *   - a job carries the variables set above it only (cron reads the file
 *     top to bottom and a later assignment does not reach back);
 *   - the time fields are not judged here (the cron engine does that for
 *     the caller); only their count is.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crontab.h"

#define LINE_MAX_BYTES 4096 /* cron's own limit is lower; this is generous */

/* The reader's state: the variables so far, and the lists being built. */
struct rd {
	struct crontab *out;
	char *mailto, *tz, *cron_tz, *shell;
	char **env;             /* NAME=VALUE, NULL-terminated */
	size_t n_env;
	bool oom;
};

static char *dup_n(struct rd *r, const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (!d) {
		r->oom = true;
		return NULL;
	}
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static char *dup_s(struct rd *r, const char *s)
{
	return s ? dup_n(r, s, strlen(s)) : NULL;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void note(struct rd *r, int line, const char *raw, const char *why)
{
	struct crontab *c = r->out;
	struct crontab_note *nv = realloc(c->notes,
					  (c->n_notes + 1) * sizeof(*nv));

	if (!nv) {
		r->oom = true;
		return;
	}
	c->notes = nv;
	nv[c->n_notes] = (struct crontab_note){line, dup_s(r, raw),
					       dup_s(r, why)};
	c->n_notes++;
}

/* Sets the variable name (len n) to value in the reader's list. */
static void set_env(struct rd *r, const char *name, size_t n,
		    const char *value)
{
	size_t len = n + 1 + strlen(value);
	char *kv = malloc(len + 1);

	if (!kv) {
		r->oom = true;
		return;
	}
	memcpy(kv, name, n);
	kv[n] = '=';
	memcpy(kv + n + 1, value, len - n);
	for (size_t i = 0; i < r->n_env; i++)
		if (strncmp(r->env[i], kv, n + 1) == 0) {
			free(r->env[i]);
			r->env[i] = kv;
			return;
		}
	char **nv = realloc(r->env, (r->n_env + 2) * sizeof(*nv));
	if (!nv) {
		free(kv);
		r->oom = true;
		return;
	}
	r->env = nv;
	r->env[r->n_env++] = kv;
	r->env[r->n_env] = NULL;
}

static char **env_copy(struct rd *r)
{
	char **v = calloc(r->n_env + 1, sizeof(*v));

	if (!v) {
		r->oom = true;
		return NULL;
	}
	for (size_t i = 0; i < r->n_env; i++)
		v[i] = dup_s(r, r->env[i]);
	return v;
}

/* Replaces *slot with a copy of v. */
static void keep(struct rd *r, char **slot, const char *v)
{
	free(*slot);
	*slot = dup_s(r, v);
}

/*
 * An assignment as cron's load_env takes one: NAME, blanks, '=', blanks,
 * VALUE (trailing blanks cut; quotes stripped when they match). True when
 * the line is one (name and value set, pointing into buf).
 */
static bool is_assignment(char *buf, char **name, size_t *n_name,
			  char **value)
{
	char *p = buf, *eq;

	while (*p && !isspace((unsigned char)*p) && *p != '=')
		p++;
	if (p == buf)
		return false;
	eq = p;
	while (isspace((unsigned char)*eq))
		eq++;
	if (*eq != '=')
		return false;
	*name = buf;
	*n_name = (size_t)(p - buf);
	char *v = eq + 1;
	while (isspace((unsigned char)*v))
		v++;
	char *e = v + strlen(v);
	while (e > v && isspace((unsigned char)e[-1]))
		*--e = '\0';
	size_t vl = (size_t)(e - v);
	if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
		v[vl - 1] = '\0';
		v++;
	}
	*value = v;
	return true;
}

/* The command and its input from the rest of a job line (crontab(5)'s
 * rule for '%'). cron ends a non-empty input with a newline when it does
 * not end with one (do_command.c writes one after the last character). */
static void split_command(struct rd *r, const char *s, char **cmd,
			  char **input)
{
	size_t n = strlen(s);
	char *c = malloc(n + 1), *in = NULL;
	size_t k = 0;

	if (!c) {
		r->oom = true;
		return;
	}
	for (const char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] == '%') {
			(in ? in : c)[k++] = '%';
			p++;
		} else if (*p == '%') {
			if (!in) {
				c[k] = '\0';
				if (!(in = malloc(n + 2))) {
					r->oom = true;
					free(c);
					return;
				}
				k = 0;
				continue;
			}
			in[k++] = '\n';
		} else {
			(in ? in : c)[k++] = *p;
		}
	}
	if (in && k > 0 && in[k - 1] != '\n')
		in[k++] = '\n';
	(in ? in : c)[k] = '\0';
	*cmd = c;
	*input = in;
}

/* The next blank-separated token of *p (NULL at the end), cut in place. */
static char *token(char **p)
{
	char *s = *p;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	char *t = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return t;
}

static const char *const macros[] = {"@yearly", "@annually", "@monthly",
				     "@weekly", "@daily", "@midnight",
				     "@hourly", NULL};

/* One job line (buf is a copy of raw: it is cut up here). */
static void job_line(struct rd *r, int line, const char *raw, char *buf,
		     bool system, const char *user)
{
	char spec[512] = "", *p = buf, *t;
	char *who = NULL;

	if (buf[0] == '@') {
		t = token(&p);
		if (strcmp(t, "@reboot") == 0) {
			note(r, line, raw, "@reboot runs once when cron "
			     "starts; surecron has no start-up jobs (run it "
			     "from a systemd unit instead)");
			return;
		}
		bool known = false;
		for (size_t i = 0; macros[i]; i++)
			known = known || strcmp(t, macros[i]) == 0;
		if (!known) {
			note(r, line, raw, "unknown @ macro: cron would refuse "
			     "this line");
			return;
		}
		snprintf(spec, sizeof(spec), "%s", t);
	} else {
		for (int f = 0; f < 5; f++) {
			t = token(&p);
			if (!t) {
				note(r, line, raw, "fewer than five time "
				     "fields and a command: cron would refuse "
				     "this line");
				return;
			}
			size_t k = strlen(spec), tl = strlen(t);
			/* A spec that does not fit is refused whole: cut, it
			 * would be another schedule than the line's. */
			if (k + (f > 0) + tl >= sizeof(spec)) {
				note(r, line, raw, "the time fields are longer "
				     "than 511 bytes: no cron field is, and "
				     "cron would refuse this line");
				return;
			}
			if (f > 0)
				spec[k++] = ' ';
			memcpy(spec + k, t, tl + 1);
		}
	}
	if (system) {
		who = token(&p);
		if (!who) {
			note(r, line, raw, "no user column and no command: "
			     "cron would refuse this line");
			return;
		}
		if (user && strcmp(who, user) != 0) {
			char why[200];
			snprintf(why, sizeof(why), "runs as user %.64s; the "
				 "daemon runs as %.64s (import it under that "
				 "user's daemon)", who, user);
			note(r, line, raw, why);
			return;
		}
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p) {
		note(r, line, raw, "no command: cron would refuse this line");
		return;
	}
	if (*p == '%') {
		note(r, line, raw, "the command is empty (it starts with '%'): "
		     "nothing to run");
		return;
	}
	struct crontab *c = r->out;
	struct crontab_job *nv = realloc(c->jobs, (c->n_jobs + 1) * sizeof(*nv));
	if (!nv) {
		r->oom = true;
		return;
	}
	c->jobs = nv;
	struct crontab_job *j = &nv[c->n_jobs++];
	memset(j, 0, sizeof(*j));
	j->line = line;
	j->raw = dup_s(r, raw);
	j->spec = dup_s(r, spec);
	j->user = dup_s(r, who);
	split_command(r, p, &j->command, &j->input);
	j->mailto = dup_s(r, r->mailto);
	j->tz = dup_s(r, r->cron_tz ? r->cron_tz : r->tz);
	j->shell = dup_s(r, r->shell);
	j->env = env_copy(r);
}

/* One line, without its newline. */
static void one_line(struct rd *r, int line, const char *raw, bool system,
		     const char *user)
{
	const char *s = raw;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '#')
		return;
	size_t n = strlen(raw);
	if (raw[n - 1] == '\\') {
		note(r, line, raw, "ends with a backslash: cron has no "
		     "continuation lines, it would run this line as it is and "
		     "the next as a line of its own; join them and import "
		     "again");
		return;
	}
	char *buf = dup_s(r, s), *name, *value;
	size_t n_name;
	if (!buf)
		return;
	if (is_assignment(buf, &name, &n_name, &value)) {
		char nm[128];
		snprintf(nm, sizeof(nm), "%.*s", (int)n_name, name);
		if (strcmp(nm, "MAILTO") == 0)
			keep(r, &r->mailto, value);
		else if (strcmp(nm, "CRON_TZ") == 0)
			keep(r, &r->cron_tz, value);
		else if (strcmp(nm, "SHELL") == 0)
			keep(r, &r->shell, value);
		if (strcmp(nm, "TZ") == 0)
			keep(r, &r->tz, value);
		if (strcmp(nm, "MAILTO") != 0 && strcmp(nm, "CRON_TZ") != 0 &&
		    strcmp(nm, "SHELL") != 0) {
			if (n_name >= sizeof(nm) || !config_env_name_valid(nm))
				note(r, line, raw, "a variable name surecron "
				     "cannot pass to a task (letters, digits "
				     "and '_', not starting with a digit)");
			else if (strncmp(nm, "SURECRON_", 9) == 0)
				/* The task loader's rule (config.c): these
				 * are surecron's to set. */
				note(r, line, raw, "SURECRON_* variables are "
				     "set by surecron itself");
			else
				set_env(r, name, n_name, value);
		}
	} else {
		job_line(r, line, raw, buf, system, user);
	}
	free(buf);
}

int crontab_parse(const char *text, size_t len, bool system,
		  const char *user, struct crontab *out, struct sc_err *err)
{
	struct rd r = {.out = out};
	int line = 0;

	memset(out, 0, sizeof(*out));
	if (memchr(text, '\0', len))
		return sc_err_set(err, SC_EINVAL, "the crontab holds a NUL "
				  "byte: not a text file");
	for (size_t i = 0; i < len && !r.oom;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t full = nl ? (size_t)(nl - (text + i)) : len - i;
		size_t n = full;
		line++;
		if (n && text[i + n - 1] == '\r')
			n--;
		if (n > LINE_MAX_BYTES) {
			note(&r, line, "", "longer than 4096 bytes: not "
			     "carried over");
		} else {
			char *raw = dup_n(&r, text + i, n);
			if (raw)
				one_line(&r, line, raw, system, user);
			free(raw);
		}
		i += full + (nl ? 1 : 0);
	}
	free(r.mailto);
	free(r.tz);
	free(r.cron_tz);
	free(r.shell);
	strv_free(r.env);
	if (r.oom) {
		crontab_dispose(out);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	return 0;
}

void crontab_dispose(struct crontab *c)
{
	for (size_t i = 0; i < c->n_jobs; i++) {
		struct crontab_job *j = &c->jobs[i];
		free(j->raw);
		free(j->spec);
		free(j->user);
		free(j->command);
		free(j->input);
		free(j->mailto);
		free(j->tz);
		free(j->shell);
		strv_free(j->env);
	}
	free(c->jobs);
	for (size_t i = 0; i < c->n_notes; i++) {
		free(c->notes[i].raw);
		free(c->notes[i].why);
	}
	free(c->notes);
	memset(c, 0, sizeof(*c));
}

/* Words that run another program: the name comes from what they run. */
static bool is_wrapper(const char *w)
{
	static const char *const words[] = {
		"cd", "test", "[", "exec", "nice", "ionice", "env", "sudo",
		"timeout", "flock", "command", "sh", "bash", "chronic", "if",
		"then", "!", "{", "(", "time", "nohup", "-", NULL};
	for (size_t i = 0; words[i]; i++)
		if (strcmp(w, words[i]) == 0)
			return true;
	return false;
}

/* Appends the file name of word w to out, lowercased, other bytes '-'. */
static void add_part(char *out, size_t max, const char *w)
{
	const char *b = strrchr(w, '/');
	size_t k = strlen(out);

	b = b ? b + 1 : w;
	if (!*b)
		return;
	if (k && k + 1 < max)
		out[k++] = '-';
	for (; *b && k + 1 < max; b++) {
		unsigned char ch = (unsigned char)*b;
		char o = isalnum(ch) ? (char)tolower(ch) : '-';
		if (o == '-' && k && out[k - 1] == '-')
			continue;
		out[k++] = o;
	}
	out[k] = '\0';
}

void crontab_job_name(const char *command, char *out, size_t max)
{
	char buf[LINE_MAX_BYTES + 1], *p = buf, *w;
	bool have_prog = false, skip_next = false;

	out[0] = '\0';
	/* "test -x PROG || real work": the guard names nothing. */
	const char *alt = strstr(command, "||");
	if (alt && (strncmp(command, "test ", 5) == 0 ||
		    strncmp(command, "[ ", 2) == 0)) {
		crontab_job_name(alt + 2, out, max);
		return;
	}
	snprintf(buf, sizeof(buf), "%s", command);
	while ((w = token(&p))) {
		/* A redirection, a pipe or the end of a list ends the words
		 * that name it, unless nothing was found yet. */
		size_t d = strspn(w, "0123456789");
		bool op = strchr("<>|;&", w[0]) != NULL ||
			  (d > 0 && (w[d] == '<' || w[d] == '>'));
		if (op) {
			if (have_prog)
				break;
			continue;
		}
		if (!have_prog) {
			/* cd's folder and an option's number name nothing. */
			bool skip = skip_next;
			skip_next = strcmp(w, "cd") == 0;
			if (skip || is_wrapper(w) || strchr(w, '=') ||
			    w[0] == '-' || strcmp(w, "/") == 0 ||
			    strspn(w, "0123456789") == strlen(w))
				continue;
			add_part(out, max, w);
			have_prog = true;
			continue;
		}
		if (w[0] != '-' && strchr(w, '/')) {
			add_part(out, max, w);
			break;
		}
	}
	/* Trim '-' at both ends; a name starts with a letter or digit. */
	size_t s = 0, k = strlen(out);
	while (out[s] == '-')
		s++;
	while (k > s && out[k - 1] == '-')
		k--;
	memmove(out, out + s, k - s);
	out[k - s] = '\0';
	if (!out[0])
		snprintf(out, max, "job");
}
