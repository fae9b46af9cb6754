/*
 * config_check.c - checks a loaded config against the machine it will run
 * on: what `surecron check` adds to what config_load already refused.
 *
 *   - every environment variable the config names (url_env, secret_env,
 *     token_env, client_secret_env, http.token_env) is set and non-empty, never printing
 *     a value; off loopback, http.token_env's token is not weak
 *     (web_token_weak: at least 16 visible ASCII bytes); the URLs in url_env variables pass the URL rule of url.h
 *     as the send applies it (libcurl's parse, no userinfo, https or
 *     http to loopback);
 *   - the URL rule needs libcurl (and the store rule libpq): when it
 *     cannot be loaded, config_parse skipped those checks and the run
 *     could not send, so each URL it leaves unchecked is a finding;
 *   - every task program and command-target program exists and is
 *     executable (absolute, resolved against the config's folder at load,
 *     or found on PATH); `shell:` tasks need /bin/sh;
 *   - working folders exist; file targets' folders exist and are writable;
 *     status_socket's folder too, and no other kind of file holds its
 *     path.
 * Cron expressions and time zones are checked earlier, by config_parse, so
 * that no loaded config holds one the scheduler cannot use.
 *
 * config_check_warnings adds what is legal but leaves a loss unheard
 * (issue 13): no alert target at all (neither alerts.targets nor
 * SURECRON_ALERT_TARGETS), and a schedule whose only delivery target is
 * also the only alert target (one outage silences both). Warnings are
 * kept apart from problems so that `check` still exits 0 on them, unless
 * --strict. A target whose timeout is close to worker.lease or above it
 * is warned of too (issue 42): the worker keeps the lease during a send,
 * but only a worker that can still renew it; one whose renewals fail (a
 * store outage, a paused process) loses the job mid-send once the lease
 * runs out, and the next owner sends a declared second copy. The load's own warnings (an `include:` pattern that matches no
 * file, issue 15) come first.
 *
 * Each finding is located at the key it is about (config_locate_in) so it
 * prints as FILE:LINE:COLUMN, FILE being the included fragment that holds
 * the key when it is not the main file. Checking reads the environment and the file
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
#include "config_int.h"
#include "url.h"
#include "web/web.h"

struct chk {
	const struct config *c;
	struct config_problems *probs;
	int n;
	bool oom;
	const char *last_ok; /* the last program found executable (borrowed
				from the config): 100,000 tasks running one
				program cost one stat, not 100,000 */
};

static void problem(struct chk *k, const char *path, const char *fmt, ...)
	SC_PRINTF(3, 4);
static void check_url(struct chk *k, const char *path, const char *var,
		      const char *url, enum url_use use);

/* Records "path: message" at the position recorded for path. */
static void problem(struct chk *k, const char *path, const char *fmt, ...)
{
	char msg[SC_ERR_MSG_MAX - 64];
	int line, col;
	size_t fx;
	const char *file;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	config_locate_in(k->c, path, &line, &col, &fx, &file);
	if (config_problem_add_in(k->probs, fx, file, line, col, "%s: %s",
				  path, msg))
		k->oom = true;
	k->n++;
}

/* The variable is set and non-empty; when is_url, it holds a URL that
 * delivery accepts. The value itself is never printed: it is a secret. */
static void check_env_as(struct chk *k, const char *path, const char *var,
			 bool is_url, enum url_use use)
{
	const char *v;

	if (!var)
		return;
	v = getenv(var);
	if (!v)
		problem(k, path, "environment variable %s is not set", var);
	else if (!*v)
		problem(k, path, "environment variable %s is empty", var);
	else if (is_url)
		check_url(k, path, var, v, use);
}

static void check_env(struct chk *k, const char *path, const char *var,
		      bool is_url)
{
	check_env_as(k, path, var, is_url, URL_SECRET);
}

/* The URL rule of url.h, as the send applies it. config_parse applied it
 * to the file's URLs already, unless libcurl (or, for the store, libpq)
 * could not be loaded: that is reported here, since the run cannot send
 * (or open the store) either. var names the variable the URL came from
 * (NULL: the file). */
static void check_url(struct chk *k, const char *path, const char *var,
		      const char *url, enum url_use use)
{
	struct sc_err err = {0};
	int rc = url_is_pg(url) ? url_check_store(url, &err)
				: url_check(url, use, &err);

	if (rc == SC_ENOMEM)
		k->oom = true;
	else if (rc && var)
		problem(k, path, "environment variable %s: %s", var, err.msg);
	else if (rc)
		problem(k, path, "%s", err.msg);
}

/* Off loopback the web surface's token guards every request: the
 * daemon refuses to start on a weak one (web_token_weak, issue 44), so
 * check says so first. The value is never printed. */
static void check_http_token(struct chk *k, const struct config *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback = true;
	const char *v = c->http_token_env ? getenv(c->http_token_env) : NULL;

	if (!v || !*v || !c->http_listen ||
	    config_http_addr(c->http_listen, &ss, &len, &loopback) != 0 ||
	    loopback || !web_token_weak(v))
		return;
	problem(k, "http.token_env", "the token in %s is too weak for a "
		"listener off loopback: it needs at least %d visible ASCII "
		"characters (no space)", c->http_token_env, WEB_TOKEN_MIN);
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
	if (k->last_ok && strcmp(k->last_ok, argv[0]) == 0)
		return;
	if (!strchr(argv[0], '/')) {
		if (!on_path(argv[0]))
			problem(k, path, "program \"%s\" is not found on PATH",
				argv[0]);
		else
			k->last_ok = argv[0];
		return;
	}
	int e = executable(argv[0]);
	if (!e)
		k->last_ok = argv[0];
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

/* status_socket (issue 15): the daemon refuses to start when it cannot
 * make the socket, so check says so first: a folder that is missing or
 * not writable, a folder others can write (issue 44), or a file in the
 * way that is not a socket (a socket is fine: the daemon replaces a
 * stale one, and a live one is its own). */
static void check_socket(struct chk *k, const char *sock)
{
	char dir[CONFIG_SOCKET_PATH_MAX];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", sock);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	check_dir(k, "status_socket", dir, true);
	/* A folder others can write lets another user bind the path
	 * before the daemon does, and the daemon then cannot start (the
	 * command refuses the impostor's answer: status_socket.c). Sticky
	 * and owned by this user or root (/tmp, /run/user/UID), the name
	 * is taken by whoever comes first but no one else can remove or
	 * replace the daemon's socket. */
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & (S_IWGRP | S_IWOTH)) &&
	    !((st.st_mode & S_ISVTX) &&
	      (st.st_uid == 0 || st.st_uid == geteuid())))
		problem(k, "status_socket", "the folder %s is writable by "
			"%s (mode %04o) and not sticky with owner root or "
			"this user: another user could make the socket "
			"before the daemon; use a folder only the daemon's "
			"user can write (e.g. /run/surecron)", dir,
			st.st_mode & S_IWOTH ? "any user" : "its group",
			(unsigned)(st.st_mode & 07777));
	if (lstat(sock, &st) == 0 && !S_ISSOCK(st.st_mode))
		problem(k, "status_socket", "%s exists and is not a socket",
			sock);
}

/* Records "warning: path: message" at the position of path, else of
 * `near` (NULL: none), else with no position. */
static void warning(struct chk *k, const char *path, const char *near,
		    const char *fmt, ...) SC_PRINTF(4, 5);

static void warning(struct chk *k, const char *path, const char *near,
		    const char *fmt, ...)
{
	char msg[SC_ERR_MSG_MAX - 64];
	int line, col;
	size_t fx;
	const char *file;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!config_locate_in(k->c, path, &line, &col, &fx, &file) && near)
		config_locate_in(k->c, near, &line, &col, &fx, &file);
	if (config_problem_add_in(k->probs, fx, file, line, col,
				  "warning: %s: %s", path, msg))
		k->oom = true;
	k->n++;
}

/*
 * The alert targets the run uses: the config's, which config_parse
 * resolved (SURECRON_ALERT_TARGETS or alerts.targets), so the warnings
 * judge the list the daemon sends to. Fills up to max names (borrowed
 * from the config); returns how many.
 */
static size_t alert_names(const struct config *c, const char **out,
			  size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n_alert_targets && n < max; i++)
		out[n++] = c->alert_targets[i];
	return n;
}

/* "Close to" the lease: past two thirds of it, a send outlasts the
 * second renewal, and one failed renewal then costs the lease. */
#define LEASE_CLOSE_NUM 2
#define LEASE_CLOSE_DEN 3

/* The longest a send to each target may take (its timeout, with the
 * kinds' default) against worker.lease. A file target has no timeout. */
static void lease_warnings(struct chk *k)
{
	const struct config *c = k->c;
	int64_t lease = c->lease_ms > 0 ? c->lease_ms : 5 * 60 * 1000;
	char path[512], near[512];

	for (size_t i = 0; i < c->n_targets; i++) {
		const struct target_spec *t = &c->targets[i];
		if (t->kind == TARGET_FILE)
			continue;
		/* target.h's TARGET_DEFAULT_TIMEOUT_MS for every kind. */
		int64_t to = t->timeout_ms > 0 ? t->timeout_ms : 30000;
		if (to * LEASE_CLOSE_DEN < lease * LEASE_CLOSE_NUM)
			continue;
		snprintf(path, sizeof(path), "targets.%s.timeout", t->name);
		snprintf(near, sizeof(near), "targets.%s", t->name);
		warning(k, path, near, "target %s may take up to %lld ms a "
			"send, %s worker.lease (%lld ms): the lease is renewed "
			"during the send, but a worker that cannot renew it (a "
			"store outage, a paused process) loses the job mid-send "
			"and the slot is sent again; keep the timeout well under "
			"the lease (at most two thirds), or raise worker.lease",
			t->name, (long long)to,
			to >= lease ? "at or above" : "close to",
			(long long)lease);
	}
}

int config_check_warnings(const struct config *c,
			  struct config_problems *warns)
{
	struct chk k = {.c = c, .probs = warns};
	size_t first = warns->n;
	const char *alert[2];
	char path[512];

	if (!warns->file && c->path && !(warns->file = strdup(c->path)))
		return SC_ENOMEM;
	/* What the load found legal but suspect (an include pattern that
	 * matches no file), kept with the config. */
	const struct config_problems *lw = config_locs_warns(c->locs);
	for (size_t i = 0; lw && i < lw->n; i++) {
		const struct config_problem *w = &lw->items[i];
		if (config_problem_add_in(warns, w->file_ix, w->file, w->line,
					  w->col, "%s", w->msg))
			k.oom = true;
		k.n++;
	}
	size_t n_alert = alert_names(c, alert, 2);
	if (n_alert == 0) {
		warning(&k, "alerts.targets", "alerts", "no alert target is "
			"configured (neither alerts.targets nor "
			"SURECRON_ALERT_TARGETS): a lost or missed slot alerts "
			"no one");
	} else if (n_alert == 1) {
		for (size_t i = 0; i < c->n_schedules; i++) {
			const struct schedule_spec *s = &c->schedules[i];
			if (s->n_targets != 1 ||
			    strcmp(s->targets[0], alert[0]) != 0)
				continue;
			snprintf(path, sizeof(path), "schedules.%s.targets",
				 s->name);
			warning(&k, path, NULL, "schedule %s delivers only to "
				"target %s, which is also the only alert target: "
				"one outage silences both", s->name, alert[0]);
		}
	}
	lease_warnings(&k);
	config_problems_sort(warns, first);
	return k.oom ? SC_ENOMEM : k.n;
}

int config_check(const struct config *c, struct config_problems *probs)
{
	struct chk k = {.c = c, .probs = probs};
	size_t first = probs->n;
	char path[512];

	if (!probs->file && c->path && !(probs->file = strdup(c->path)))
		return SC_ENOMEM;

	for (size_t i = 0; i < c->n_targets; i++) {
		const struct target_spec *t = &c->targets[i];
		snprintf(path, sizeof(path), "targets.%s.url_env", t->name);
		check_env_as(&k, path, t->url_env, true,
			     t->kind == TARGET_EMAIL ? URL_MAIL : URL_SECRET);
		snprintf(path, sizeof(path), "targets.%s.username_env",
			 t->name);
		check_env(&k, path, t->username_env, false);
		snprintf(path, sizeof(path), "targets.%s.password_env",
			 t->name);
		check_env(&k, path, t->password_env, false);
		snprintf(path, sizeof(path), "targets.%s.secret_env", t->name);
		check_env(&k, path, t->secret_env, false);
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
	/* The heartbeat URLs (issue 14): a ping goes nowhere when the
	 * variable is unset, and the URL carries the check's key, so it
	 * follows the secret rule (https, or http to loopback). */
	check_env(&k, "heartbeat.url_env", c->heartbeat.url_env, true);
	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		snprintf(path, sizeof(path), "schedules.%s.heartbeat.url_env",
			 s->name);
		check_env(&k, path, spec_x(s)->heartbeat.url_env, true);
	}
	for (size_t i = 0; i < c->n_auths; i++) {
		const struct auth_spec *a = &c->auths[i];
		snprintf(path, sizeof(path), "auth.%s.client_secret_env",
			 a->name);
		check_env(&k, path, a->client_secret_env, false);
		snprintf(path, sizeof(path), "auth.%s.token_env", a->name);
		check_env(&k, path, a->token_env, false);
		if (a->token_url) {
			snprintf(path, sizeof(path), "auth.%s.token_url",
				 a->name);
			check_url(&k, path, NULL, a->token_url, URL_SECRET);
		}
	}
	/* The web surface's token (issue 16): the daemon refuses to start
	 * without it, so check says so first. */
	check_env(&k, "http.token_env", c->http_token_env, false);
	check_http_token(&k, c);
	if (c->status_socket)
		check_socket(&k, c->status_socket);
	if (url_is_pg(c->store_url))
		check_url(&k, "store", NULL, c->store_url, URL_SECRET);
	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		for (size_t j = 0; j < s->n_tasks; j++) {
			const struct task_spec *t = &s->tasks[j];
			if (t->kind == TASK_HTTP && t->url) {
				snprintf(path, sizeof(path),
					 "schedules.%s.tasks[%zu].http.url",
					 s->name, j);
				check_url(&k, path, NULL, t->url,
					  t->auth ? URL_SECRET : URL_PLAIN);
			}
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
	config_problems_sort(probs, first);
	return k.oom ? SC_ENOMEM : k.n;
}
