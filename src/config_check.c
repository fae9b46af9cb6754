/*
 * config_check.c - checks a loaded config against the machine it will run
 * on: what `surecron check` adds to what config_load already refused.
 *
 *   - every environment variable the config names (url_env, secret_env,
 *     token_env, client_secret_env) is set and non-empty;
 *   - every task program and command-target program exists and is
 *     executable (absolute, resolved against the config's folder at load,
 *     or found on PATH); `shell:` tasks need /bin/sh;
 *   - working folders exist; file targets' folders exist and are writable;
 *   - cron expressions parse and time zones load (the cron module).
 *
 * Each finding is located at the key it is about (config_locate) so it
 * prints as FILE:LINE:COLUMN. Checking reads the environment and the file
 * system only; it changes nothing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

struct chk {
	const struct config *c;
	struct config_problems *probs;
	int n;
	bool oom;
};

static void problem(struct chk *k, const char *path, const char *fmt, ...)
	SC_PRINTF(3, 4);

/* Records "path: message" at the position recorded for path. */
static void problem(struct chk *k, const char *path, const char *fmt, ...)
{
	char msg[SC_ERR_MSG_MAX - 64];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	config_locate(k->c, path, &line, &col);
	if (config_problem_add(k->probs, line, col, "%s: %s", path, msg))
		k->oom = true;
	k->n++;
}

static void check_env(struct chk *k, const char *path, const char *var)
{
	const char *v;

	if (!var)
		return;
	v = getenv(var);
	if (!v)
		problem(k, path, "environment variable %s is not set", var);
	else if (!*v)
		problem(k, path, "environment variable %s is empty", var);
}

/* 0 when path is an executable regular file, else an errno value. */
static int executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	if (access(path, X_OK) != 0)
		return errno;
	return 0;
}

/* Looks a bare program name up on PATH, as execvp would. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	char full[4096];

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		const char *dir = len ? path : ".";
		int dlen = len ? (int)len : 1;
		if (snprintf(full, sizeof(full), "%.*s/%s", dlen, dir, name) <
			    (int)sizeof(full) &&
		    executable(full) == 0)
			return true;
		path += len;
		if (*path == ':')
			path++;
	}
	return false;
}

static void check_program(struct chk *k, const char *path, char **argv)
{
	if (!argv || !argv[0])
		return;
	if (!strchr(argv[0], '/')) {
		if (!on_path(argv[0]))
			problem(k, path, "program \"%s\" is not found on PATH",
				argv[0]);
		return;
	}
	int e = executable(argv[0]);
	if (e == ENOENT)
		problem(k, path, "program %s does not exist", argv[0]);
	else if (e == EISDIR)
		problem(k, path, "program %s is a directory", argv[0]);
	else if (e)
		problem(k, path, "program %s is not executable (%s)", argv[0],
			strerror(e));
}

static void check_dir(struct chk *k, const char *path, const char *dir,
		      bool writable)
{
	struct stat st;

	if (stat(dir, &st) != 0)
		problem(k, path, "folder %s does not exist", dir);
	else if (!S_ISDIR(st.st_mode))
		problem(k, path, "%s is not a folder", dir);
	else if (writable && access(dir, W_OK | X_OK) != 0)
		problem(k, path, "folder %s is not writable", dir);
}

/*
 * Cron expression and time zone.
 *
 * HOOK(cron): the cron module (sc_cron_parse and the zone loader, branch
 * `cron`) had not landed when this was written. Until it is merged, this
 * does the structural part only: 5 or 6 fields or an @macro, and a zone
 * name that exists under $TZDIR or /usr/share/zoneinfo. Replace the body
 * with calls to the cron module once it is available.
 */
static void check_cron(struct chk *k, const struct schedule_spec *s)
{
	static const char *const macros[] = {
		"@yearly", "@annually", "@monthly", "@weekly", "@daily",
		"@midnight", "@hourly", NULL};
	char path[256];
	const char *e = s->cron;

	snprintf(path, sizeof(path), "schedules.%s.cron", s->name);
	if (e && e[0] == '@') {
		bool ok = false;
		for (size_t i = 0; macros[i]; i++)
			if (strcmp(e, macros[i]) == 0)
				ok = true;
		if (!ok)
			problem(k, path, "invalid cron expression \"%s\"%s%s: "
				"unknown macro", e,
				s->override_var ? " from " : "",
				s->override_var ? s->override_var : "");
	} else if (e) {
		int fields = 0;
		bool in = false;
		for (const char *p = e; *p; p++) {
			bool sp = *p == ' ' || *p == '\t';
			if (!sp && !in)
				fields++;
			in = !sp;
		}
		if (fields != 5 && fields != 6)
			problem(k, path, "invalid cron expression \"%s\"%s%s: "
				"expected 5 fields (or 6 with seconds), got %d",
				e, s->override_var ? " from " : "",
				s->override_var ? s->override_var : "",
				fields);
	}
	if (!s->tz)
		return;
	snprintf(path, sizeof(path), "schedules.%s.tz", s->name);
	const char *tzdir = getenv("TZDIR");
	char file[1024];
	if (!tzdir || !*tzdir)
		tzdir = "/usr/share/zoneinfo";
	if (s->tz[0] == '/' || strstr(s->tz, "..") ||
	    snprintf(file, sizeof(file), "%s/%s", tzdir, s->tz) >=
		    (int)sizeof(file)) {
		problem(k, path, "invalid time zone name \"%s\"", s->tz);
		return;
	}
	struct stat st;
	if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
		problem(k, path, "unknown time zone \"%s\" (no such file "
			"under %s)", s->tz, tzdir);
}

int config_check(const struct config *c, struct config_problems *probs)
{
	struct chk k = {.c = c, .probs = probs};
	size_t first = probs->n;
	char path[512];

	for (size_t i = 0; i < c->n_targets; i++) {
		const struct target_spec *t = &c->targets[i];
		snprintf(path, sizeof(path), "targets.%s.url_env", t->name);
		check_env(&k, path, t->url_env);
		snprintf(path, sizeof(path), "targets.%s.secret_env", t->name);
		check_env(&k, path, t->secret_env);
		if (t->kind == TARGET_FILE && t->path) {
			char *d = strdup(t->path);
			if (!d) {
				k.oom = true;
				continue;
			}
			char *slash = strrchr(d, '/');
			if (slash && slash != d)
				*slash = '\0';
			snprintf(path, sizeof(path), "targets.%s.path",
				 t->name);
			check_dir(&k, path, d, true);
			free(d);
		}
		if (t->kind == TARGET_COMMAND) {
			snprintf(path, sizeof(path), "targets.%s.command[0]",
				 t->name);
			check_program(&k, path, t->argv);
		}
	}
	for (size_t i = 0; i < c->n_auths; i++) {
		const struct auth_spec *a = &c->auths[i];
		snprintf(path, sizeof(path), "auth.%s.client_secret_env",
			 a->name);
		check_env(&k, path, a->client_secret_env);
		snprintf(path, sizeof(path), "auth.%s.token_env", a->name);
		check_env(&k, path, a->token_env);
	}
	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		check_cron(&k, s);
		for (size_t j = 0; j < s->n_tasks; j++) {
			const struct task_spec *t = &s->tasks[j];
			if (t->kind != TASK_COMMAND)
				continue;
			if (t->argv) {
				snprintf(path, sizeof(path),
					 "schedules.%s.tasks[%zu].command[0]",
					 s->name, j);
				check_program(&k, path, t->argv);
			} else if (t->shell && executable("/bin/sh") != 0) {
				snprintf(path, sizeof(path),
					 "schedules.%s.tasks[%zu].shell",
					 s->name, j);
				problem(&k, path, "/bin/sh is needed for shell "
					"tasks and is not executable");
			}
			if (t->cwd) {
				snprintf(path, sizeof(path),
					 "schedules.%s.tasks[%zu].cwd",
					 s->name, j);
				check_dir(&k, path, t->cwd, false);
			}
		}
	}
	/* Keep the report in file order, like config_parse's. */
	for (size_t i = first + 1; i < probs->n; i++) {
		struct config_problem t = probs->items[i];
		size_t j = i;
		while (j > first && (probs->items[j - 1].line > t.line ||
				     (probs->items[j - 1].line == t.line &&
				      probs->items[j - 1].col > t.col))) {
			probs->items[j] = probs->items[j - 1];
			j--;
		}
		probs->items[j] = t;
	}
	return k.oom ? SC_ENOMEM : k.n;
}
