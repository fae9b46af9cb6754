/*
 * cmd_import_crontab.c - `surecron import-crontab [--system] [--user NAME]
 * [--store URL] [--from ADDR] [FILE|-]`: a crontab read as cron reads it
 * (crontab.h), printed as a surecron.yaml on stdout.
 *
 * One schedule per job line, named from its command; the command runs as
 * cron runs it, through the shell (`shell:`, or `command: [SHELL, -c,
 * ...]` when the crontab set another SHELL), with the variables set above
 * it as task `env`, CRON_TZ or TZ as `tz`, the '%' input fed on stdin, and
 * MAILTO as an email target. Every line that cannot be carried over is
 * listed at the end as a comment with its reason, so the output is also
 * the review list of the migration.
 *
 * The YAML is written here, but no value is: every scalar that comes from
 * the crontab goes through jansson as a JSON string, which is a YAML
 * double-quoted scalar with the same escapes, and comments get the raw
 * lines with control bytes replaced, so no crontab text can end a comment
 * or a scalar early. Exit status: 0 (notes included), 1 the file cannot
 * be read or a line cannot be written, 2 usage.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "config.h"
#include "crontab.h"

#define CRONTAB_MAX ((size_t)4 << 20)
#define NAME_LEN 48

/* A JSON string of s: a YAML double-quoted scalar. NULL: s is not valid
 * UTF-8 (or no memory). Free with free(). */
static char *yq(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

	json_decref(j);
	return out;
}

/* Prints "# " + s with control bytes made '?' (a CR would end the
 * comment in YAML's eyes). */
static void comment(const char *prefix, const char *s)
{
	fputs(prefix, stdout);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		putchar((*p < 0x20 && *p != '\t') || *p == 0x7f ? '?' : *p);
	putchar('\n');
}

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

/* The mail targets: one per distinct MAILTO value. */
struct mail {
	char *mailto;   /* as written */
	char name[NAME_LEN + 8];
};

/* The target of mailto (NULL for "" or unset: no mail). */
static const struct mail *mail_of(const struct mail *m, size_t n,
				  const char *mailto)
{
	for (size_t i = 0; mailto && *mailto && i < n; i++)
		if (strcmp(m[i].mailto, mailto) == 0)
			return &m[i];
	return NULL;
}

static bool name_taken(char (*names)[NAME_LEN + 8], size_t n,
		       const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* base, or base-2, base-3 ... not in names; appended to names. */
static const char *unique(char (*names)[NAME_LEN + 8], size_t *n,
			  const char *base)
{
	char *out = names[*n];

	snprintf(out, NAME_LEN + 8, "%s", base);
	/* base is at most NAME_LEN bytes and k stays below 10^6 (two
	 * names per job line of a 4 MiB file), so this always fits. */
	for (unsigned k = 2; name_taken(names, *n, out) && k < 1000000; k++) {
		char sfx[8];
		/* The suffix first, then as much of base as leaves room. */
		int ls = snprintf(sfx, sizeof(sfx), "-%u", k % 1000000u);
		snprintf(out, NAME_LEN + 8, "%.*s%s", NAME_LEN, base,
			 ls > 0 ? sfx : "");
	}
	(*n)++;
	return out;
}

/* Prints the recipients of a MAILTO value as a YAML flow list: split on
 * commas and blanks; a bare user name gets "@localhost", as cron's local
 * mail delivery reads it. */
static int print_recipients(const char *mailto)
{
	char *copy = strdup(mailto), *save = NULL, *tok;
	int n = 0;

	if (!copy)
		return -1;
	fputs("[", stdout);
	for (tok = strtok_r(copy, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		char addr[320];
		snprintf(addr, sizeof(addr), "%s%s", tok,
			 strchr(tok, '@') ? "" : "@localhost");
		char *q = yq(addr);
		if (!q) {
			free(copy);
			return -1;
		}
		printf("%s%s", n++ ? ", " : "", q);
		free(q);
	}
	fputs("]", stdout);
	free(copy);
	return n;
}

/* 'text' for sh: single-quoted, a ' written as '\''. */
static int sh_quote(struct buf *b, const char *text)
{
	int rc = buf_add(b, "'", 1);

	for (const char *p = text; *p && !rc; p++)
		rc = *p == '\'' ? buf_adds(b, "'\\''") : buf_add(b, p, 1);
	return rc ? rc : buf_add(b, "'", 1);
}

/* The shell text of a job: the command, fed its '%' input when it has
 * one (cron writes that text to the command's stdin). */
static char *shell_text(const struct crontab_job *j)
{
	struct buf b;

	buf_init(&b, CRONTAB_MAX);
	if (!j->input)
		return strdup(j->command);
	if (buf_adds(&b, "printf '%s' ") || sh_quote(&b, j->input) ||
	    buf_adds(&b, " | {\n") || buf_adds(&b, j->command) ||
	    buf_adds(&b, "\n}")) {
		buf_dispose(&b);
		return NULL;
	}
	return buf_take(&b);
}

/* The quoted scalars of one job; all NULL-free when ok. */
struct job_text {
	char *spec, *tz, *cmd, *shell;
	char **env_v;           /* quoted values, as j->env */
	bool ok;
	char why[SC_ERR_MSG_MAX + 64]; /* !ok: the reason, for the note */
};

static void job_text_free(struct job_text *t, const struct crontab_job *j)
{
	free(t->spec);
	free(t->tz);
	free(t->cmd);
	free(t->shell);
	for (size_t i = 0; t->env_v && j->env && j->env[i]; i++)
		free(t->env_v[i]);
	free(t->env_v);
}

/* Quotes every value of j; ok false when one is not valid UTF-8. */
static void job_text(const struct crontab_job *j, struct job_text *t)
{
	size_t n = 0;
	char *text = shell_text(j);

	memset(t, 0, sizeof(*t));
	while (j->env && j->env[n])
		n++;
	t->spec = yq(j->spec);
	t->tz = j->tz ? yq(j->tz) : NULL;
	t->cmd = text ? yq(text) : NULL;
	t->shell = j->shell ? yq(j->shell) : NULL;
	t->env_v = calloc(n + 1, sizeof(*t->env_v));
	t->ok = t->spec && t->cmd && (!j->tz || t->tz) &&
		(!j->shell || t->shell) && t->env_v;
	for (size_t i = 0; t->ok && i < n; i++)
		t->ok = (t->env_v[i] = yq(strchr(j->env[i], '=') + 1)) != NULL;
	free(text);
	if (!t->ok) {
		snprintf(t->why, sizeof(t->why), "not valid UTF-8: surecron's "
			 "config is UTF-8 text");
		return;
	}
	/* cron takes some lines surecron refuses: an expression that never
	 * fires (cron keeps it and never runs it), a zone it cannot read. */
	struct sc_cron cr;
	struct sc_err err = {0};
	const struct sc_zone *z = NULL;
	if (sc_cron_parse(j->spec, &cr, &err) != 0) {
		t->ok = false;
		snprintf(t->why, sizeof(t->why), "%s", err.msg);
	} else if (j->tz && sc_zone_load(j->tz, &z, &err) != 0) {
		t->ok = false;
		snprintf(t->why, sizeof(t->why), "the zone of CRON_TZ or TZ: %s",
			 err.msg);
	}
}

static void print_job(const struct crontab_job *j, const struct job_text *t,
		      const char *name, const struct mail *mail)
{
	bool other_shell = j->shell && strcmp(j->shell, "/bin/sh") != 0;

	printf("\n");
	char at[32];
	snprintf(at, sizeof(at), "  # line %d: ", j->line);
	comment(at, j->raw);
	printf("  %s:\n    cron: %s\n", name, t->spec);
	if (t->tz)
		printf("    tz: %s\n", t->tz);
	printf("    catchup: none\n");
	if (mail)
		printf("    targets: [%s]\n", mail->name);
	printf("    tasks:\n      - name: run\n");
	if (other_shell)
		printf("        command: [%s, \"-c\", %s]\n", t->shell, t->cmd);
	else
		printf("        shell: %s\n", t->cmd);
	printf("        timeout: 24h\n");
	if (j->env && j->env[0]) {
		printf("        env:\n");
		for (size_t i = 0; j->env[i]; i++)
			printf("          %.*s: %s\n",
			       (int)(strchr(j->env[i], '=') - j->env[i]),
			       j->env[i], t->env_v[i]);
	}
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

	/* Quote everything first: a line that cannot be written is a note,
	 * and the targets are those of the jobs that stay. */
	struct job_text *tx = calloc(ct.n_jobs + 1, sizeof(*tx));
	struct mail *mails = calloc(ct.n_jobs + 1, sizeof(*mails));
	char (*names)[NAME_LEN + 8] = calloc(2 * ct.n_jobs + 1,
					     sizeof(*names));
	size_t n_mail = 0, n_names = 0, n_sched = 0;
	if (!tx || !mails || !names) {
		rc = cli_fail(EXIT_FAIL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ct.n_jobs; i++) {
		const struct crontab_job *j = &ct.jobs[i];
		job_text(j, &tx[i]);
		if (!tx[i].ok || !j->mailto || !*j->mailto ||
		    mail_of(mails, n_mail, j->mailto))
			continue;
		char base[NAME_LEN + 8] = "mail-";
		crontab_job_name(j->mailto, base + 5, NAME_LEN - 5);
		mails[n_mail].mailto = j->mailto;
		snprintf(mails[n_mail].name, sizeof(mails[n_mail].name), "%s",
			 unique(names, &n_names, base));
		n_mail++;
	}

	printf("# surecron.yaml imported from %s by `surecron import-crontab`.\n"
	       "# Check it (surecron check --config FILE), compare each "
	       "schedule's next\n# runs with cron's (surecron explain "
	       "--config FILE NAME), then run it.\n#\n"
	       "# cron runs every command through /bin/sh -c (or the "
	       "crontab's SHELL):\n# each task below does the same (`shell:`, "
	       "or `command: [SHELL, -c, ...]`).\n# A task's output is its "
	       "result: sent to the schedule's targets, as cron\n# mailed it "
	       "to MAILTO; no output, nothing is sent. cron does not run a\n"
	       "# slot it missed while down: `catchup: none` keeps that, and "
	       "surecron\n# records and alerts each missed slot instead of "
	       "forgetting it. cron sets\n# no time limit; `timeout: 24h` is "
	       "surecron's longest.\n",
	       strcmp(path, "-") == 0 ? "stdin" : path);
	char *sq = yq(store ? store : "sqlite:./surecron.db");
	printf("store: %s\n", sq ? sq : "\"sqlite:./surecron.db\"");
	free(sq);
	/* Alerts go to a file as well as to the mail: one mail outage must
	 * not silence both a result and the alert that it was lost. */
	printf("\ntargets:\n  alert-log: {kind: file, path: ./alerts.jsonl}\n");
	if (n_mail) {
		char *fq = yq(from);
		printf("  # MAILTO became email targets. Set SURECRON_SMTP_URL to "
		       "the mail\n  # server (smtp://localhost:25 for this "
		       "host's own) before `surecron check`.\n");
		for (size_t i = 0; i < n_mail; i++) {
			printf("  %s:\n    kind: email\n    url_env: "
			       "SURECRON_SMTP_URL\n    from: %s\n    to: ",
			       mails[i].name, fq ? fq : "\"surecron@localhost\"");
			if (print_recipients(mails[i].mailto) < 0) {
				free(fq);
				rc = cli_fail(EXIT_FAIL, "out of memory");
				goto done;
			}
			printf("\n");
		}
		free(fq);
	}
	printf("\n# A lost slot (every attempt failed) or a missed one is "
	       "alerted here.\nalerts:\n  targets: [alert-log%s%s]\n",
	       n_mail ? ", " : "", n_mail ? mails[0].name : "");
	for (size_t i = 0; i < ct.n_jobs; i++)
		n_sched += tx[i].ok;
	if (n_sched)
		printf("\nschedules:");
	else
		printf("\nschedules: {}\n");
	for (size_t i = 0; i < ct.n_jobs; i++) {
		const struct crontab_job *j = &ct.jobs[i];
		if (!tx[i].ok)
			continue;
		char base[NAME_LEN + 1];
		crontab_job_name(j->command, base, sizeof(base));
		print_job(j, &tx[i], unique(names, &n_names, base),
			  mail_of(mails, n_mail, j->mailto));
	}
	size_t n_skip = ct.n_notes;
	for (size_t i = 0; i < ct.n_jobs; i++)
		n_skip += !tx[i].ok;
	if (n_skip) {
		printf("\n# Not carried over (%zu line%s):\n", n_skip,
		       n_skip == 1 ? "" : "s");
		for (size_t i = 0, k = 0; i < ct.n_notes || k < ct.n_jobs;) {
			/* In line order: notes and unwritable jobs merged. */
			while (k < ct.n_jobs && tx[k].ok)
				k++;
			bool take_note = i < ct.n_notes &&
					 (k >= ct.n_jobs ||
					  ct.notes[i].line < ct.jobs[k].line);
			if (!take_note && k >= ct.n_jobs)
				break;
			char at[32];
			int line = take_note ? ct.notes[i].line
					     : ct.jobs[k].line;
			snprintf(at, sizeof(at), "#   line %d: ", line);
			comment(at, take_note ? ct.notes[i].raw
					      : ct.jobs[k].raw);
			comment("#     ", take_note ? ct.notes[i].why
					      : tx[k].why);
			if (take_note)
				i++;
			else
				k++;
		}
	}
	fprintf(stderr, "import-crontab: %zu schedule%s, %zu line%s not "
		"carried over (listed at the end)\n", n_sched,
		n_sched == 1 ? "" : "s", n_skip, n_skip == 1 ? "" : "s");
	rc = fflush(stdout) == 0 ? EXIT_OK
				 : cli_fail(EXIT_FAIL, "stdout: %s",
					    strerror(errno));
done:
	for (size_t i = 0; tx && i < ct.n_jobs; i++)
		job_text_free(&tx[i], &ct.jobs[i]);
	free(tx);
	free(mails);
	free(names);
	crontab_dispose(&ct);
	return rc;
}
