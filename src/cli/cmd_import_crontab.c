/*
 * cmd_import_crontab.c - `surecron import-crontab [--system] [--user NAME]
 * [--store URL] [--from ADDR] [FILE|-]`: a crontab read as cron reads it
 * (crontab_parse), printed as a surecron.yaml on stdout (crontab_yaml,
 * which says how each line is carried over and keeps every byte of the
 * crontab, its file name included, inside escaped ASCII).
 *
 * The whole text is built before anything is printed, so a crontab that
 * cannot be converted prints nothing. Exit status: 0 (notes included), 1
 * the file cannot be read or the text cannot be built or written, 2
 * usage.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "crontab.h"

#define CRONTAB_MAX ((size_t)4 << 20)
/* The config of the largest crontab: every byte of a line may take ten
 * in an escape, twice (comment and scalar), plus each job's lines. */
#define YAML_MAX ((size_t)1 << 30)

static int read_all(const char *path, struct buf *b)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char chunk[8192];
	size_t n;
	int rc = 0;

	if (!f)
		return cli_fail(EXIT_FAIL, "%s: %s", path, strerror(errno));
	while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(b, chunk, n) != 0)
			rc = cli_fail(EXIT_FAIL, "%s: larger than 4 MiB: not "
				      "a crontab", path);
	if (rc == 0 && ferror(f))
		rc = cli_fail(EXIT_FAIL, "%s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	return rc;
}

/* The user the jobs will run as: --user, else the one running this. */
static const char *default_user(char *out, size_t n)
{
	struct passwd *pw = getpwuid(geteuid());

	snprintf(out, n, "%s", pw ? pw->pw_name : "root");
	return out;
}

int cmd_import_crontab(int argc, char **argv)
{
	const char *path = NULL, *user = NULL, *store = NULL, *from = NULL;
	bool system = false, system_set = false;
	char me[128];
	struct buf b;
	struct crontab ct;
	struct sc_err err = {0};
	int r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--system") == 0) {
			system = system_set = true;
			continue;
		}
		if ((r = cli_opt_value("import-crontab", argc, argv, &i, NULL,
				       "--user", &user)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("import-crontab", argc, argv, &i, NULL,
				       "--store", &store)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("import-crontab", argc, argv, &i, NULL,
				       "--from", &from)) < 0)
			return -r;
		if (r)
			continue;
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage_error("import-crontab", "unknown "
					       "option '%s'", argv[i]);
		if (path)
			return cli_usage_error("import-crontab", "unexpected "
					       "argument '%s'", argv[i]);
		path = argv[i];
	}
	if (!path)
		path = "-";
	/* /etc/crontab and /etc/cron.d files have the user column. */
	if (!system_set)
		system = strcmp(path, "/etc/crontab") == 0 ||
			 strncmp(path, "/etc/cron.d/", 12) == 0;
	if (!user)
		user = default_user(me, sizeof(me));
	char from_buf[200];
	if (!from) {
		snprintf(from_buf, sizeof(from_buf), "%s@localhost", user);
		from = from_buf;
	}
	buf_init(&b, CRONTAB_MAX);
	if ((r = read_all(path, &b))) {
		buf_dispose(&b);
		return r;
	}
	int rc = crontab_parse(b.p ? b.p : "", b.len, system, user, &ct,
			       &err);
	buf_dispose(&b);
	if (rc)
		return cli_fail(EXIT_FAIL, "%s: %s", path, err.msg);

	struct crontab_yaml_opts o = {
		.source = strcmp(path, "-") == 0 ? "stdin" : path,
		.store = store, .from = from};
	size_t n_sched = 0, n_skip = 0;
	buf_init(&b, YAML_MAX);
	rc = crontab_yaml(&ct, &o, &b, &n_sched, &n_skip, &err);
	if (rc) {
		rc = cli_fail(EXIT_FAIL, "%s", err.msg);
		goto done;
	}
	if (fwrite(b.p, 1, b.len, stdout) != b.len || fflush(stdout) != 0) {
		rc = cli_fail(EXIT_FAIL, "stdout: %s", strerror(errno));
		goto done;
	}
	fprintf(stderr, "import-crontab: %zu schedule%s, %zu line%s not "
		"carried over (listed at the end)\n", n_sched,
		n_sched == 1 ? "" : "s", n_skip, n_skip == 1 ? "" : "s");
	rc = EXIT_OK;
done:
	buf_dispose(&b);
	crontab_dispose(&ct);
	return rc;
}
