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
 * needs, so it is quick on a big config and needs no variable set.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"

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

int cmd_check(int argc, char **argv)
{
	const char *path = "surecron.yaml";
	struct config_problems probs = {0}, warns = {0};
	struct config *c = NULL;
	bool positional = false, strict = false, names = false;

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
	cli_out(stdout, "ok: %zu schedule%s, %zu target%s\n", c->n_schedules,
	       c->n_schedules == 1 ? "" : "s", c->n_targets,
	       c->n_targets == 1 ? "" : "s");
	print_files(c);
	config_problems_dispose(&probs);
	config_free(c);
	return EXIT_OK;
}
