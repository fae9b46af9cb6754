/*
 * fuzz_import.c - what `surecron import-crontab` prints (crontab_parse +
 * crontab_yaml), read back by the config loader (issue 44).
 *
 * Input: the crontab text; its first byte chooses the format (odd: the
 * system one, with a user column, the daemon's user "root") and, through
 * its other bits, the source name the first comment shows (one with a
 * newline, NEL, LS or PS in it: the file name is the crontab author's
 * too).
 *
 * Properties, for any crontab without a NUL byte:
 *   1. the conversion succeeds, and the text is printable ASCII and LF
 *      (a tab inside a comment only);
 *   2. it loads (config_parse), with exactly one schedule per job written
 *      and every other line listed (n_sched + n_skip = jobs + notes); with
 *      no job written it is refused for that alone ("no schedule
 *      defined": a config runs something);
 *   3. each schedule is one job line as cron runs it: the same time
 *      fields and zone, the same command text as one argument of SHELL
 *      -c (or `shell:`), the '%' input as one argument of the wrapper,
 *      the job's variables as its env; no two schedules are one line;
 *   4. nothing else: no `http:`, no `status_socket:`, no `include:`
 *      (one file), the targets alert-log plus one email target per
 *      MAILTO, and no alert target but those.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "crontab.h"

static const char *path;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	path = fuzz_scratch_file("import");
	return 0;
}

static const char *const sources[] = {
	"/etc/cron.d/plain",
	"a\nhttp: {listen: \"127.0.0.1:8077\"}\n#",
	"b\xc2\x85include: [\"/tmp/*.yaml\"]",
	"c\xe2\x80\xa8schedules: {}\xe2\x80\xa9x",
	"caf\xe9\x7f\r",
};

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static size_t strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* True when schedule s is job j as crontab_yaml.c writes it. */
static bool same(const struct schedule_spec *s, const struct crontab_job *j)
{
	const char *sh = j->shell ? j->shell : "/bin/sh";
	bool other = j->shell && strcmp(j->shell, "/bin/sh") != 0;

	if (!str_eq(spec_cron_config(s), j->spec) || !str_eq(s->tz, j->tz) ||
	    s->n_tasks != 1)
		return false;
	const struct task_spec *t = &s->tasks[0];
	if (j->input && *j->input) {
		if (t->shell || strv_len(t->argv) != 7 ||
		    strcmp(t->argv[0], "/bin/sh") != 0 ||
		    strcmp(t->argv[1], "-c") != 0 ||
		    strcmp(t->argv[4], sh) != 0 ||
		    strcmp(t->argv[5], j->input) != 0 ||
		    strcmp(t->argv[6], j->command) != 0)
			return false;
	} else if (other) {
		if (t->shell || strv_len(t->argv) != 3 ||
		    strcmp(t->argv[0], j->shell) != 0 ||
		    strcmp(t->argv[1], "-c") != 0 ||
		    strcmp(t->argv[2], j->command) != 0)
			return false;
	} else if (!str_eq(t->shell, j->command)) {
		return false;
	}
	size_t n = strv_len(j->env);
	if (strv_len(t->env) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(t->env[i], j->env[i]) != 0)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct crontab ct;
	struct sc_err err = {0};
	struct buf out;

	if (size == 0)
		return 0;
	bool system = data[0] & 1;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	if (memchr(text, '\0', len))
		return 0;
	if (crontab_parse(text, len, system, "root", &ct, &err) != 0)
		return 0; /* out of memory */
	struct crontab_yaml_opts o = {
		.source = sources[(data[0] >> 1) % (sizeof(sources) /
						      sizeof(sources[0]))],
		.from = "root@localhost"};
	size_t n_sched = 0, n_skip = 0;
	buf_init(&out, (size_t)64 << 20);
	int rc = crontab_yaml(&ct, &o, &out, &n_sched, &n_skip, &err);
	FUZZ_CHECK(rc == 0 || rc == SC_ENOMEM, data, size,
		   "crontab_yaml returned %d: %s", rc, err.msg);
	if (rc) {
		buf_dispose(&out);
		crontab_dispose(&ct);
		return 0;
	}
	for (size_t i = 0; i < out.len; i++) {
		unsigned char c = (unsigned char)out.p[i];
		FUZZ_CHECK((c >= 0x20 && c < 0x7F) || c == '\n' || c == '\t',
			   data, size, "byte 0x%02X at %zu of the output", c,
			   i);
	}
	FUZZ_CHECK(n_sched + n_skip == ct.n_jobs + ct.n_notes, data, size,
		   "%zu schedules + %zu listed != %zu jobs + %zu notes",
		   n_sched, n_skip, ct.n_jobs, ct.n_notes);

	FILE *f = fopen(path, "wb");
	if (!f || fwrite(out.p, 1, out.len, f) != out.len || fclose(f) != 0)
		abort();
	struct config_problems probs = {0};
	struct config *c = NULL;
	rc = config_parse(path, &c, &probs);
	if (rc == SC_ENOMEM) {
		config_problems_dispose(&probs);
		buf_dispose(&out);
		crontab_dispose(&ct);
		return 0;
	}
	char line[1024] = "";
	if (probs.n)
		config_problem_format(&probs, 0, line, sizeof(line));
	if (n_sched == 0) {
		/* Nothing to run: the loader refuses a config without a
		 * schedule, and for that alone. */
		FUZZ_CHECK(rc == SC_ECONFIG && probs.n == 1 &&
			   strstr(line, "no schedule defined"), data, size,
			   "no schedule, yet: %s\n%s", line, out.p);
		config_problems_dispose(&probs);
		buf_dispose(&out);
		crontab_dispose(&ct);
		return 0;
	}
	FUZZ_CHECK(rc == 0, data, size, "the output does not load: %s\n%s",
		   line, out.p);
	FUZZ_CHECK(c->n_schedules == n_sched, data, size,
		   "%zu schedules loaded, %zu written", c->n_schedules,
		   n_sched);
	FUZZ_CHECK(!c->http_listen && !c->status_socket && c->n_files == 1,
		   data, size, "a key no crontab line asks for:\n%s", out.p);
	size_t n_mail = 0;
	for (size_t i = 0; i < c->n_targets; i++)
		n_mail += strcmp(c->targets[i].name, "alert-log") != 0;
	FUZZ_CHECK(c->n_targets >= 1 && c->n_alert_targets ==
		   (n_mail ? 2 : 1), data, size, "targets: %zu, alerts %zu",
		   c->n_targets, c->n_alert_targets);

	bool *used = calloc(ct.n_jobs + 1, sizeof(*used));
	if (!used)
		abort();
	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		bool found = false;
		for (size_t k = 0; k < ct.n_jobs && !found; k++)
			if (!used[k] && same(s, &ct.jobs[k]))
				found = used[k] = true;
		FUZZ_CHECK(found, data, size, "schedule %s is no job line as "
			   "cron runs it:\n%s", s->name, out.p);
	}
	free(used);
	config_free(c);
	config_problems_dispose(&probs);
	buf_dispose(&out);
	crontab_dispose(&ct);
	return 0;
}
