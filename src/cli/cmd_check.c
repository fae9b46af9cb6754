/*
 * cmd_check.c - `surecron check [--config FILE | FILE]`: validates a config
 * without running anything (like `crontab -T`).
 *
 * Prints every problem as "FILE:LINE:COLUMN: reason" on stderr, in file
 * order: first what the file itself gets wrong (config_parse), then, when
 * it loads, what the machine gets wrong (config_check: variables, programs,
 * folders, cron expressions, zones). Exit 0 and "ok: N schedules, N
 * targets" on stdout when clean, 2 otherwise.
 *
 * Then the warnings (config_check_warnings: no alert target, a schedule
 * whose only target is the only alert target), as "FILE:LINE:COLUMN:
 * warning: key.path: reason" on stderr after the problems. Warnings alone
 * keep exit 0 and the "ok" line; with --strict they are errors (exit 2).
 *
 * A config split by `include:` (issue 15) is checked whole; after the "ok"
 * line comes one line per file, main file first, with how many schedules
 * (and targets, auth providers) each defined:
 *   "  conf.d/teams.yaml: 120 schedules, 1 target, 0 auth"
 * (names relative to the main file's folder when under it).
 *
 * --names prints the schedules' names, one per line, and nothing else
 * (for shell completion): the light load of `status` reads only what it
 * needs, so it is quick on a big config and needs no variable set. *
 * --store also opens the config's store (never makes one; a schema newer
 * than this binary is refused) and, on PostgreSQL, compares this host's
 * clock with the database server's and reads the clock offset each live
 * node published (issue 42): one beyond worker.clock_tolerance is a
 * warning ("FILE: warning: store: ..."), an error with --strict. A store
 * that cannot be opened is an error (exit 1).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "report.h"
#include "store.h"

static void print_problems(const struct config_problems *p)
{
	char line[SC_ERR_MSG_MAX + 256];

	for (size_t i = 0; i < p->n; i++)
		cli_out(stderr, "%s\n",
			config_problem_format(p, i, line, sizeof(line)));
	if (p->n_dropped)
		cli_out(stderr, "%s: %zu more problems not shown\n",
			p->file ? p->file : "config", p->n_dropped);
}

/* One line per file when the config has more than one. */
static void print_files(const struct config *c)
{
	size_t dl = c->dir ? strlen(c->dir) : 0;

	for (size_t i = 0; c->n_files > 1 && i < c->n_files; i++) {
		const struct config_file *f = &c->files[i];
		const char *name = f->path ? f->path : "?";
		if (dl && strncmp(name, c->dir, dl) == 0 && name[dl] == '/')
			name += dl + 1;
		cli_out(stdout, "  %s: %zu schedule%s, %zu target%s, %zu "
			"auth\n", name, f->n_schedules,
			f->n_schedules == 1 ? "" : "s", f->n_targets,
			f->n_targets == 1 ? "" : "s", f->n_auths);
	}
}

/* A clock offset as "2.345 s ahead of" / "behind". */
static void offset_words(int64_t off_ms, char *out, size_t n)
{
	int64_t a = off_ms < 0 ? -off_ms : off_ms;

	snprintf(out, n, "%lld.%03lld s %s", (long long)(a / 1000),
		 (long long)(a % 1000), off_ms < 0 ? "behind" : "ahead of");
}

/*
 * check --store: opens c's store and looks at the clocks (issue 42).
 * Returns EXIT_OK with *n_warn counting the warnings printed, or
 * EXIT_FAIL after printing why the store could not be read.
 */
static int check_store(const char *path, const struct config *c,
		       size_t *n_warn)
{
	struct store *s = NULL;
	struct store_node *v = NULL;
	struct sc_err err = {0};
	char shown[512], w[64];
	size_t n = 0;
	int64_t srv, tol = report_clock_tolerance_ms(c);
	int rc = EXIT_OK;

	store_url_for_log(c->store_url, shown, sizeof(shown));
	if (store_open_existing(c->store_url, sc_clock_real(), &s, &err)) {
		cli_out(stderr, "%s: store: %s: %s\n", path, shown, err.msg);
		return EXIT_FAIL;
	}
	int64_t m0 = clock_mono_ms();
	int r = store_server_now_ms(s, &srv, &err);
	int64_t rtt = clock_mono_ms() - m0;
	if (r == SC_ENOENT) {
		/* SQLite: the host's clock is the only one. */
		cli_out(stdout, "store: %s: ok (one clock: this host's)\n",
			shown);
		goto done;
	}
	if (r) {
		cli_out(stderr, "%s: store: %s: %s\n", path, shown, err.msg);
		rc = EXIT_FAIL;
		goto done;
	}
	/* Our reading at the middle of the round trip, as the daemon
	 * takes it; the trip's half is slack. */
	int64_t off = sc_clock_now_ms(sc_clock_real()) - rtt / 2 - srv;
	offset_words(off, w, sizeof(w));
	if (off > tol + rtt / 2 || off < -tol - rtt / 2) {
		cli_out(stderr, "%s: warning: store: this host's clock is %s "
			"the database server's, beyond worker.clock_tolerance "
			"(%lld ms): a daemon here runs on the server's time; "
			"set the clock right (NTP)\n", path, w, (long long)tol);
		(*n_warn)++;
	}
	if (store_nodes(s, &v, &n, &err)) {
		cli_out(stderr, "%s: store: %s: %s\n", path, shown, err.msg);
		rc = EXIT_FAIL;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		if (srv - v[i].seen_ms > STORE_NODE_LIVE_MS ||
		    !report_node_skewed(&v[i], tol))
			continue;
		offset_words(v[i].clock_offset_ms, w, sizeof(w));
		cli_out(stderr, "%s: warning: store: node %s (%s): its clock "
			"is %s the database server's, beyond "
			"worker.clock_tolerance (%lld ms)\n", path, v[i].id,
			v[i].host, w, (long long)tol);
		(*n_warn)++;
	}
	cli_out(stdout, "store: %s: ok (this host's clock %+lld ms from the "
		"database server's)\n", shown, (long long)off);
done:
	free(v);
	store_close(s);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	const char *path = "surecron.yaml";
	struct config_problems probs = {0}, warns = {0};
	struct config *c = NULL;
	bool positional = false, strict = false, names = false,
	     with_store = false;

	for (int i = 1; i < argc; i++) {
		int r = cli_opt_config("check", argc, argv, &i, &path);
		if (r < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(argv[i], "--strict") == 0) {
			strict = true;
		} else if (strcmp(argv[i], "--names") == 0) {
			names = true;
		} else if (strcmp(argv[i], "--store") == 0) {
			with_store = true;
		} else if (argv[i][0] == '-') {
			return cli_usage_error("check", "unknown option '%s'",
					       argv[i]);
		} else if (!positional) {
			/* `surecron check FILE`, like `crontab -T FILE`. */
			positional = true;
			path = argv[i];
		} else {
			return cli_usage_error("check", "unexpected argument "
					       "'%s'", argv[i]);
		}
	}
	cli_setup_logging(SC_LOG_WARN);
	if (names) {
		struct sc_err err = {0};
		if (config_load_light(path, true, NULL, &c, &err) != 0)
			return cli_fail(EXIT_USAGE, "%s", err.msg);
		for (size_t i = 0; i < c->n_schedules; i++)
			cli_out(stdout, "%s\n", c->schedules[i].name);
		config_free(c);
		return EXIT_OK;
	}

	int rc = config_parse(path, &c, &probs);
	bool loaded = rc == 0;
	if (loaded)
		rc = config_check(c, &probs);
	/* Warnings are about a config that loads. */
	int wrc = loaded ? config_check_warnings(c, &warns) : 0;
	if (rc >= 0 && wrc < 0)
		rc = wrc;
	if (rc != 0 || probs.n || probs.n_dropped ||
	    (strict && (warns.n || warns.n_dropped))) {
		print_problems(&probs);
		print_problems(&warns);
		if (rc < 0 && probs.n == 0)
			cli_out(stderr, "%s: %s\n", path, sc_strerror(rc));
		config_problems_dispose(&probs);
		config_problems_dispose(&warns);
		config_free(c);
		return EXIT_USAGE;
	}
	print_problems(&warns);
	config_problems_dispose(&warns);
	config_problems_dispose(&probs);
	/* The store's warnings, as the file's: errors with --strict. */
	size_t n_warn = 0;
	int out = with_store ? check_store(path, c, &n_warn) : EXIT_OK;
	if (out == EXIT_OK && strict && n_warn)
		out = EXIT_USAGE;
	if (out == EXIT_OK) {
		cli_out(stdout, "ok: %zu schedule%s, %zu target%s\n",
			c->n_schedules, c->n_schedules == 1 ? "" : "s",
			c->n_targets, c->n_targets == 1 ? "" : "s");
		print_files(c);
	}
	config_free(c);
	return out;
}
