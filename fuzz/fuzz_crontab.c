/*
 * fuzz_crontab.c - crontab_parse and crontab_job_name (`surecron
 * import-crontab` reads whatever file it is given).
 *
 * Input: the crontab text; its first byte chooses the format (odd: the
 * system one, with a user column; the daemon's user "root").
 *
 * Properties:
 *   1. text without a NUL byte is always read (0); with one, refused
 *      (SC_EINVAL) with a message and an empty result;
 *   2. every job and note has a line number inside the text, in order,
 *      and no line is both;
 *   3. a job's spec is a known macro or five blank-free fields; in the
 *      system format its user is "root"; its command is not empty;
 *   4. a job name is 1 to 47 bytes of [a-z0-9-], starting and ending
 *      with a letter or digit (a valid schedule name).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crontab.h"

static int count_lines(const char *s, size_t n)
{
	int lines = n > 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n' && i + 1 < n)
			lines++;
	return lines;
}

static void check_spec(const char *spec)
{
	int fields = 0;
	bool in = false;

	if (spec[0] == '@')
		return;
	for (const char *p = spec; *p; p++) {
		if (*p == '\t' || *p == '\n')
			abort();
		if (*p != ' ' && !in)
			fields++;
		in = *p != ' ';
	}
	if (fields != 5)
		abort();
}

static void check_name(const char *command)
{
	char name[48];

	crontab_job_name(command, name, sizeof(name));
	size_t n = strlen(name);
	if (n == 0 || n > 47 || name[0] == '-' || name[n - 1] == '-')
		abort();
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct crontab ct;
	struct sc_err err = {0};

	if (size == 0)
		return 0;
	bool system = data[0] & 1;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	int rc = crontab_parse(text, len, system, "root", &ct, &err);
	if (memchr(text, '\0', len)) {
		if (rc != SC_EINVAL || !err.msg[0] || ct.n_jobs || ct.n_notes)
			abort();
		return 0;
	}
	if (rc == SC_ENOMEM)
		return 0;
	if (rc != 0)
		abort();
	int lines = count_lines(text, len), last = 0;
	for (size_t i = 0; i < ct.n_jobs; i++) {
		const struct crontab_job *j = &ct.jobs[i];
		if (j->line <= last || j->line > lines || !*j->command)
			abort();
		last = j->line;
		check_spec(j->spec);
		if (system && (!j->user || strcmp(j->user, "root") != 0))
			abort();
		if (!system && j->user)
			abort();
		for (size_t k = 0; k < ct.n_notes; k++)
			if (ct.notes[k].line == j->line)
				abort();
		check_name(j->command);
	}
	last = 0;
	for (size_t k = 0; k < ct.n_notes; k++) {
		if (ct.notes[k].line <= last || ct.notes[k].line > lines ||
		    !ct.notes[k].why[0])
			abort();
		last = ct.notes[k].line;
	}
	crontab_dispose(&ct);
	return 0;
}
