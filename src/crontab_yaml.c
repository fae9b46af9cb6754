/*
 * crontab_yaml.c - a read crontab written as a surecron.yaml (crontab.h;
 * `surecron import-crontab`, issues 18 and 44).
 *
 * One schedule per job line, named from its command; the command runs as
 * cron runs it: the command text is one argument of `SHELL -c` (`shell:`,
 * or `command: [SHELL, -c, ...]` when the crontab set another SHELL),
 * with the variables set above it as task `env`, CRON_TZ or TZ as `tz`,
 * and MAILTO as an email target. A line with a '%' input runs
 * `/bin/sh -c 'printf %s "$2" | "$1" -c "$3"' sh SHELL INPUT COMMAND`:
 * the input reaches the command's stdin and the command is still one
 * opaque argument of SHELL -c, so a command cron's shell refuses (an
 * unbalanced '}', a quote left open) is refused the same way and never
 * spliced into other shell text. Every line that cannot be carried over
 * is listed at the end as a comment with its reason, so the output is
 * also the review list of the migration.
 *
 * Invariants:
 *   - No byte of the crontab reaches the output but through yaml_write:
 *     scalars and comments are printable ASCII, so no crontab text (a
 *     NEL, LS or PS included) can end a comment or a scalar early, and the
 *     file name is escaped like the lines.
 *   - A job is written only when everything the loader will check of it
 *     passes here first (UTF-8 values, the cron expression, the zone, the
 *     mail addresses, the shell): for any crontab the output loads, with
 *     one schedule per job written (fuzz/fuzz_import.c checks this).
 *   - Names are unique: a hash set of the names given, and for each base
 *     the next suffix to try, so naming n lines is O(n), not O(n^3).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crontab.h"
#include "yaml_write.h"

#define NAME_LEN 48
#define NAME_SIZE (NAME_LEN + 8)
#define SCALAR_MAX ((size_t)64 << 20)

/* The wrapper of a line with a '%' input (see the top of this file). */
static const char input_script[] = "printf '%s' \"$2\" | \"$1\" -c \"$3\"";

/* ------------------------------------------------------------------ */
/* Names: a hash set of the names given, with each one's next suffix  */
/* ------------------------------------------------------------------ */

struct names {
	char (*v)[NAME_SIZE];   /* the names given, in order */
	unsigned *next;         /* per name: the next suffix to try after it
				   as a base */
	size_t n, max;
	size_t *slot;           /* open addressing: index + 1, 0 empty */
	size_t mask;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

/* Room for max names. Returns 0 or SC_ENOMEM. */
static int names_init(struct names *ns, size_t max)
{
	size_t cap = 16;

	memset(ns, 0, sizeof(*ns));
	while (cap < 2 * max)
		cap *= 2;
	ns->v = calloc(max + 1, sizeof(*ns->v));
	ns->next = calloc(max + 1, sizeof(*ns->next));
	ns->slot = calloc(cap, sizeof(*ns->slot));
	ns->max = max;
	ns->mask = cap - 1;
	return ns->v && ns->next && ns->slot ? 0 : SC_ENOMEM;
}

static void names_dispose(struct names *ns)
{
	free(ns->v);
	free(ns->next);
	free(ns->slot);
}

/* The slot of name: where it is, or the empty one where it would go. */
static size_t *names_slot(const struct names *ns, const char *name)
{
	size_t i = (size_t)hash(name) & ns->mask;

	while (ns->slot[i] && strcmp(ns->v[ns->slot[i] - 1], name) != 0)
		i = (i + 1) & ns->mask;
	return &ns->slot[i];
}

/* base, or base-2, base-3 ... not given yet; recorded as given. The set
 * has room (max names), so this cannot fail. */
static const char *names_unique(struct names *ns, const char *base)
{
	size_t *s = names_slot(ns, base);
	char cand[NAME_SIZE];

	snprintf(cand, sizeof(cand), "%s", base);
	if (*s) {
		/* Taken: from this base's next suffix on. Each try either
		 * ends the loop or skips a name given earlier, so the tries
		 * of all calls together stay below twice the names. */
		size_t b = *s - 1;
		unsigned k = ns->next[b];
		do {
			snprintf(cand, sizeof(cand), "%.*s-%u", NAME_LEN, base,
				 k++);
			s = names_slot(ns, cand);
		} while (*s);
		ns->next[b] = k;
	}
	size_t i = ns->n++;
	snprintf(ns->v[i], NAME_SIZE, "%s", cand);
	ns->next[i] = 2;
	*s = i + 1;
	return ns->v[i];
}

/* ------------------------------------------------------------------ */
/* The quoted text of each job                                        */
/* ------------------------------------------------------------------ */

/* s as a quoted scalar, allocated (free()); NULL with *rc set: SC_EINVAL
 * (not UTF-8) or out of memory. */
static char *quote(const char *s, int *rc)
{
	struct buf b;

	buf_init(&b, SCALAR_MAX);
	*rc = yaml_write_str(&b, s);
	if (*rc) {
		buf_dispose(&b);
		return NULL;
	}
	char *out = buf_take(&b);
	if (!out)
		*rc = SC_ENOMEM;
	return out;
}

/* The mail targets: one per distinct MAILTO value. */
struct mail {
	const char *mailto;     /* as written (the job's) */
	char *to;               /* the recipients as a YAML flow list */
	char name[NAME_SIZE];
};

/* The mail targets by MAILTO value: open addressing over mails[], index
 * + 1, 0 empty; room for every job's. */
struct mail_index {
	size_t *slot;
	size_t mask;
};

static size_t *mail_slot(const struct mail_index *mi, const struct mail *m,
			 const char *mailto)
{
	size_t i = (size_t)hash(mailto) & mi->mask;

	while (mi->slot[i] && strcmp(m[mi->slot[i] - 1].mailto, mailto) != 0)
		i = (i + 1) & mi->mask;
	return &mi->slot[i];
}

/* The quoted scalars of one job; all set when ok. */
struct job_text {
	char *spec, *tz, *cmd, *shell, *input;
	char **env_k, **env_v;  /* quoted names and values, as j->env */
	size_t n_env;
	size_t mail;            /* its mail target: index + 1, 0 none */
	bool ok;
	char why[SC_ERR_MSG_MAX + 64]; /* !ok: the reason, for the note */
};

static void job_text_free(struct job_text *t)
{
	free(t->spec);
	free(t->tz);
	free(t->cmd);
	free(t->shell);
	free(t->input);
	for (size_t i = 0; i < t->n_env; i++) {
		free(t->env_k ? t->env_k[i] : NULL);
		free(t->env_v ? t->env_v[i] : NULL);
	}
	free(t->env_k);
	free(t->env_v);
}

/*
 * The recipients of a MAILTO value as a YAML flow list into *out: split
 * on commas and blanks; a bare user name gets "@localhost", as cron's
 * local mail delivery reads it. Returns 0, SC_ENOMEM, or SC_EINVAL with
 * why set (no address, or one the email target cannot send to).
 */
static int recipients(const char *mailto, char **out, char *why, size_t n)
{
	char *copy = strdup(mailto), *save = NULL, *tok;
	struct buf b, addr;
	int rc = copy ? 0 : SC_ENOMEM, k = 0;

	buf_init(&b, SCALAR_MAX);
	buf_init(&addr, SCALAR_MAX);
	if (!rc)
		rc = buf_adds(&b, "[");
	for (tok = copy ? strtok_r(copy, ", \t", &save) : NULL; tok && !rc;
	     tok = strtok_r(NULL, ", \t", &save)) {
		buf_reset(&addr);
		rc = buf_addf(&addr, "%s%s", tok,
			      strchr(tok, '@') ? "" : "@localhost");
		if (!rc && !config_mail_address_ok(buf_str(&addr))) {
			snprintf(why, n, "MAILTO: not a mail address the "
				 "email target can send to (printable ASCII, "
				 "one '@')");
			rc = SC_EINVAL;
		}
		if (!rc)
			rc = buf_adds(&b, k++ ? ", " : "");
		if (!rc)
			rc = yaml_write_str(&b, buf_str(&addr));
	}
	if (!rc && k == 0) {
		snprintf(why, n, "MAILTO holds no address");
		rc = SC_EINVAL;
	}
	if (!rc)
		rc = buf_adds(&b, "]");
	free(copy);
	buf_dispose(&addr);
	if (!rc && !(*out = buf_take(&b)))
		rc = SC_ENOMEM;
	buf_dispose(&b);
	return rc;
}

/* Quotes every value of j and checks what the loader will check. Returns
 * 0 (t->ok says whether the line is carried) or SC_ENOMEM. */
static int job_text(const struct crontab_job *j, struct job_text *t)
{
	int rc = 0;

	memset(t, 0, sizeof(*t));
	while (j->env && j->env[t->n_env])
		t->n_env++;
	t->env_k = calloc(t->n_env + 1, sizeof(*t->env_k));
	t->env_v = calloc(t->n_env + 1, sizeof(*t->env_v));
	if (!t->env_k || !t->env_v)
		return SC_ENOMEM;
	t->spec = quote(j->spec, &rc);
	if (!rc && j->tz)
		t->tz = quote(j->tz, &rc);
	if (!rc)
		t->cmd = quote(j->command, &rc);
	if (!rc && j->shell)
		t->shell = quote(j->shell, &rc);
	/* An empty input ("cmd%") is an empty stdin: what a task reads
	 * from /dev/null (and an empty argument is refused at load). */
	if (!rc && j->input && *j->input)
		t->input = quote(j->input, &rc);
	/* NAME=VALUE, NAME shorter than 128 bytes (crontab.c). */
	for (size_t i = 0; !rc && j->env && i < t->n_env; i++) {
		const char *kv = j->env[i], *eq = strchr(kv, '=');
		char name[256];
		snprintf(name, sizeof(name), "%.*s",
			 (int)(eq ? (size_t)(eq - kv) : strlen(kv)), kv);
		t->env_k[i] = quote(name, &rc);
		if (!rc)
			t->env_v[i] = quote(eq ? eq + 1 : "", &rc);
	}
	if (rc == SC_EINVAL) {
		snprintf(t->why, sizeof(t->why), "not valid UTF-8: surecron's "
			 "config is UTF-8 text");
		return 0;
	}
	if (rc)
		return rc;
	/* cron takes some lines surecron refuses: an expression that never
	 * fires (cron keeps it and never runs it), a zone it cannot read,
	 * a SHELL that names no absolute path. */
	struct sc_cron cr;
	struct sc_err err = {0};
	const struct sc_zone *z = NULL;
	if (sc_cron_parse(j->spec, &cr, &err) != 0) {
		snprintf(t->why, sizeof(t->why), "%s", err.msg);
		return 0;
	}
	if (j->tz && sc_zone_load(j->tz, &z, &err) != 0) {
		snprintf(t->why, sizeof(t->why), "the zone of CRON_TZ or TZ: %s",
			 err.msg);
		return 0;
	}
	if (j->shell && j->shell[0] != '/') {
		/* cron execs SHELL as written, from the user's home folder;
		 * surecron would look a bare name up on PATH and a relative
		 * path up in the config's folder: another program. */
		snprintf(t->why, sizeof(t->why), "SHELL is not an absolute "
			 "path: cron runs it from the user's home folder, "
			 "surecron would not find the same program");
		return 0;
	}
	t->ok = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

static int write_job(struct buf *b, const struct crontab_job *j,
		     const struct job_text *t, const char *name,
		     const struct mail *mail)
{
	bool other_shell = j->shell && strcmp(j->shell, "/bin/sh") != 0;
	char at[32];
	int rc;

	snprintf(at, sizeof(at), "\n  # line %d: ", j->line);
	rc = yaml_write_comment(b, at, j->raw);
	if (!rc)
		rc = buf_addf(b, "  %s:\n    cron: %s\n", name, t->spec);
	if (!rc && t->tz)
		rc = buf_addf(b, "    tz: %s\n", t->tz);
	if (!rc)
		rc = buf_adds(b, "    catchup: none\n");
	if (!rc && mail)
		rc = buf_addf(b, "    targets: [%s]\n", mail->name);
	if (!rc)
		rc = buf_adds(b, "    tasks:\n      - name: run\n");
	if (!rc && t->input) {
		rc = buf_addf(b, "        # The '%%' input on stdin; the command "
			      "is one argument of %s -c.\n        command: "
			      "[\"/bin/sh\", \"-c\", ",
			      other_shell ? "SHELL" : "/bin/sh");
		if (!rc)
			rc = yaml_write_str(b, input_script);
		if (!rc)
			rc = buf_addf(b, ", \"sh\", %s, %s, %s]\n",
				      other_shell ? t->shell : "\"/bin/sh\"",
				      t->input, t->cmd);
	}
	else if (!rc && other_shell)
		rc = buf_addf(b, "        command: [%s, \"-c\", %s]\n",
			      t->shell, t->cmd);
	else if (!rc)
		rc = buf_addf(b, "        shell: %s\n", t->cmd);
	if (!rc)
		rc = buf_adds(b, "        timeout: 24h\n");
	if (!rc && t->n_env)
		rc = buf_adds(b, "        env:\n");
	for (size_t i = 0; !rc && i < t->n_env; i++)
		rc = buf_addf(b, "          %s: %s\n", t->env_k[i],
			      t->env_v[i]);
	return rc;
}

static const char header[] =
	"# Check it (surecron check --config FILE), compare each schedule's "
	"next\n# runs with cron's (surecron explain --config FILE NAME), then "
	"run it.\n#\n# cron runs every command through /bin/sh -c (or the "
	"crontab's SHELL):\n# each task below does the same (`shell:`, or "
	"`command: [SHELL, -c, ...]`),\n# the command one argument of -c as "
	"cron passes it; a '%' input is fed\n# on stdin by a small /bin/sh "
	"wrapper. A task's output is its result: sent\n# to the schedule's "
	"targets, as cron mailed it to MAILTO; no output, nothing\n# is sent. "
	"cron does not run a slot it missed while down: `catchup: none`\n# "
	"keeps that, and surecron records and alerts each missed slot instead "
	"of\n# forgetting it. cron sets no time limit; `timeout: 24h` is "
	"surecron's longest.\n";

/* The notes and the jobs not carried, merged in line order. */
static int write_skipped(struct buf *b, const struct crontab *c,
			 const struct job_text *tx, size_t n_skip)
{
	int rc = buf_addf(b, "\n# Not carried over (%zu line%s):\n", n_skip,
			  n_skip == 1 ? "" : "s");

	for (size_t i = 0, k = 0; !rc && (i < c->n_notes || k < c->n_jobs);) {
		while (k < c->n_jobs && tx[k].ok)
			k++;
		bool take_note = i < c->n_notes &&
				 (k >= c->n_jobs ||
				  c->notes[i].line < c->jobs[k].line);
		if (!take_note && k >= c->n_jobs)
			break;
		char at[32];
		int line = take_note ? c->notes[i].line : c->jobs[k].line;
		snprintf(at, sizeof(at), "#   line %d: ", line);
		rc = yaml_write_comment(b, at, take_note ? c->notes[i].raw
							 : c->jobs[k].raw);
		if (!rc)
			rc = yaml_write_comment(b, "#     ",
						take_note ? c->notes[i].why
							  : tx[k].why);
		if (take_note)
			i++;
		else
			k++;
	}
	return rc;
}

int crontab_yaml(const struct crontab *c, const struct crontab_yaml_opts *o,
		 struct buf *out, size_t *n_sched, size_t *n_skip,
		 struct sc_err *err)
{
	const char *store = o->store ? o->store : "sqlite:./surecron.db";
	struct job_text *tx = calloc(c->n_jobs + 1, sizeof(*tx));
	struct mail *mails = calloc(c->n_jobs + 1, sizeof(*mails));
	struct names ns;
	struct mail_index mi = {0};
	char *sq = NULL, *fq = NULL;
	size_t n_mail = 0, ns_ = 0, nk = c->n_notes;
	int rc = names_init(&ns, 2 * c->n_jobs + 1);

	/* Twice the names' table: as many slots as that has for 2n + 1. */
	mi.mask = ns.mask;
	mi.slot = calloc(mi.mask + 1, sizeof(*mi.slot));
	if (rc || !tx || !mails || !mi.slot) {
		rc = SC_ENOMEM;
		goto done;
	}
	if (!config_mail_address_ok(o->from)) {
		rc = sc_err_set(err, SC_EINVAL, "--from: not a mail address "
				"(printable ASCII, one '@')");
		goto done;
	}
	sq = quote(store, &rc);
	if (!rc)
		fq = quote(o->from, &rc);
	if (rc == SC_EINVAL)
		rc = sc_err_set(err, rc, "--store: not valid UTF-8");
	if (rc)
		goto done;

	/* Quote everything first: a line that cannot be written is a note,
	 * and the targets are those of the jobs that stay. */
	for (size_t i = 0; i < c->n_jobs; i++) {
		const struct crontab_job *j = &c->jobs[i];
		if ((rc = job_text(j, &tx[i])))
			goto done;
		if (!tx[i].ok || !j->mailto || !*j->mailto)
			continue;
		size_t *slot = mail_slot(&mi, mails, j->mailto);
		if (*slot) {
			tx[i].mail = *slot;
			continue;
		}
		/* A MAILTO seen for the first time: its recipients decide
		 * whether the line can be carried. A value refused once is
		 * refused again for each of its lines, which is as costly
		 * as the lines are. */
		struct mail *m = &mails[n_mail];
		rc = recipients(j->mailto, &m->to, tx[i].why,
				sizeof(tx[i].why));
		if (rc == SC_EINVAL) {
			tx[i].ok = false;
			rc = 0;
			continue;
		}
		if (rc)
			goto done;
		char base[NAME_SIZE] = "mail-";
		crontab_job_name(j->mailto, base + 5, NAME_LEN - 5);
		m->mailto = j->mailto;
		snprintf(m->name, sizeof(m->name), "%s",
			 names_unique(&ns, base));
		tx[i].mail = *slot = ++n_mail;
	}

	rc = buf_adds(out, "# surecron.yaml imported from a crontab by "
		      "`surecron import-crontab`.\n");
	if (!rc)
		rc = yaml_write_comment(out, "# The crontab: ", o->source);
	if (!rc)
		rc = buf_adds(out, header);
	if (!rc)
		rc = buf_addf(out, "store: %s\n", sq);
	/* Alerts go to a file as well as to the mail: one mail outage must
	 * not silence both a result and the alert that it was lost. */
	if (!rc)
		rc = buf_adds(out, "\ntargets:\n  alert-log: {kind: file, "
			      "path: ./alerts.jsonl}\n");
	if (!rc && n_mail)
		rc = buf_adds(out, "  # MAILTO became email targets. Set "
			      "SURECRON_SMTP_URL to the mail\n  # server "
			      "(smtp://localhost:25 for this host's own) "
			      "before `surecron check`.\n");
	for (size_t i = 0; !rc && i < n_mail; i++)
		rc = buf_addf(out, "  %s:\n    kind: email\n    url_env: "
			      "SURECRON_SMTP_URL\n    from: %s\n    to: %s\n",
			      mails[i].name, fq, mails[i].to);
	if (!rc)
		rc = buf_addf(out, "\n# A lost slot (every attempt failed) or a "
			      "missed one is alerted here.\nalerts:\n  "
			      "targets: [alert-log%s%s]\n", n_mail ? ", " : "",
			      n_mail ? mails[0].name : "");
	for (size_t i = 0; i < c->n_jobs; i++)
		ns_ += tx[i].ok;
	if (!rc)
		rc = buf_adds(out, ns_ ? "\nschedules:\n" : "\nschedules: {}\n");
	for (size_t i = 0; !rc && i < c->n_jobs; i++) {
		const struct crontab_job *j = &c->jobs[i];
		if (!tx[i].ok)
			continue;
		const struct mail *m = tx[i].mail ? &mails[tx[i].mail - 1]
						  : NULL;
		char base[NAME_LEN + 1];
		crontab_job_name(j->command, base, sizeof(base));
		rc = write_job(out, j, &tx[i], names_unique(&ns, base), m);
	}
	for (size_t i = 0; i < c->n_jobs; i++)
		nk += !tx[i].ok;
	if (!rc && nk)
		rc = write_skipped(out, c, tx, nk);
	if (rc == SC_ENOMEM || rc == SC_ETOOBIG)
		rc = sc_err_set(err, rc, rc == SC_ENOMEM ? "out of memory"
				: "the config would be larger than %zu bytes",
				out->max);
	if (!rc) {
		*n_sched = ns_;
		*n_skip = nk;
	}
done:
	if (rc == SC_ENOMEM)
		sc_err_set(err, rc, "out of memory");
	for (size_t i = 0; tx && i < c->n_jobs; i++)
		job_text_free(&tx[i]);
	for (size_t i = 0; mails && i < n_mail; i++)
		free(mails[i].to);
	free(tx);
	free(mails);
	free(mi.slot);
	free(sq);
	free(fq);
	names_dispose(&ns);
	return rc;
}
