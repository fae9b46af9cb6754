/*
 * fuzz_store_url.c - no password reaches libpq from a store URL (url.h,
 * url_check_store), judged by libpq's own PQconninfoParse (linked
 * directly), both for the URL as given and through the real config
 * loader (`store:` as a YAML double-quoted string, so any byte and every
 * YAML escape reaches the value).
 *
 * Input: a store URL; one that does not start with postgres:// or
 * postgresql:// is tried with "postgres://" in front, so that the fuzzer
 * spends its time where libpq parses.
 *
 * Properties:
 *   1. url_check_store returns 0, SC_EINVAL or SC_ENOMEM;
 *   2. accepted => PQconninfoParse parses the URL and reports no option
 *      set that holds or locates a password (password, passfile,
 *      sslpassword, or any other whose name holds "pass" or "secret");
 *   3. a refusal's message never quotes the password libpq read (one
 *      that is a substring of the refusals' own words is not looked
 *      for: "passw" is in every password refusal);
 *   4. a config the loader accepts has a store URL for which 2 holds, and
 *      for a printable ASCII URL the loader accepts the file exactly when
 *      url_check_store accepts the URL (the rest of the file is valid).
 */
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "err.h"
#include "spec.h"
#include "url.h"

static const char *path; /* fuzz_scratch_file */

/* The words of url_check_store's refusals for URLs with a neutral
 * password: a password that is a substring of them (the fuzzer found
 * "passw", in "password") is in a refusal as our own words, not quoted. */
static char own_words[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const refused[] = {
		"postgres://h/?password=x", "postgres://h/?passfile=x",
		"postgres://h/?sslpassword=x", "postgres://[", "mysql://h"};

	path = fuzz_scratch_file("store");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct sc_err err = {0};
		if (url_check_store(refused[i], &err) == 0)
			continue;
		size_t n = strlen(own_words);
		snprintf(own_words + n, sizeof(own_words) - n, "%s\n",
			 err.msg);
	}
	return 0;
}

/* libpq's verdict: parsed, and the password it read (malloc'd) or NULL;
 * *secret: some password-ish option is set. */
static bool libpq_view(const char *url, bool *secret, char **password)
{
	char *msg = NULL;
	PQconninfoOption *o = PQconninfoParse(url, &msg);

	*secret = false;
	*password = NULL;
	if (!o) {
		PQfreemem(msg);
		return false;
	}
	for (PQconninfoOption *p = o; p->keyword; p++) {
		if (!p->val)
			continue;
		if (strstr(p->keyword, "pass") || strstr(p->keyword, "secret"))
			*secret = true;
		if (strcmp(p->keyword, "password") == 0 && !*password)
			*password = strdup(p->val);
	}
	PQconninfoFree(o);
	return true;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

/* Writes url as a YAML double-quoted scalar into a valid config. */
static bool write_config(const char *url)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fputs("store: \"", f);
	for (const unsigned char *p = (const unsigned char *)url; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputs("\"\nschedules:\n  s:\n    cron: \"0 3 * * *\"\n    tasks:\n"
	      "      - {name: a, command: [\"/bin/true\"]}\n",
	      f);
	return fclose(f) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 16);
	struct sc_err err = {0};
	bool secret;
	char *pw = NULL;

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	if (!url_is_pg(s)) {
		memmove(s + 11, s, strlen(s) + 1);
		memcpy(s, "postgres://", 11);
	}
	int rc = url_check_store(s, &err);
	bool parsed = libpq_view(s, &secret, &pw);

	FUZZ_CHECK(rc == 0 || rc == SC_EINVAL || rc == SC_ENOMEM, data, size,
		   "url_check_store returned %d (%s)", rc, err.msg);
	if (rc == 0)
		FUZZ_CHECK(parsed && !secret, data, size,
			   "accepted, libpq %s", parsed ? "reads a password"
							: "cannot parse it");
	if (rc && pw && strlen(pw) >= 3 && !strstr(own_words, pw))
		FUZZ_CHECK(!strstr(err.msg, pw), data, size,
			   "message quotes the password: %s", err.msg);
	free(pw);

	/* Through the loader: what it keeps is what the store opens. The
	 * file is valid but for the store, so the verdicts must agree. */
	if (strlen(s) < 4000 && write_config(s)) {
		struct config *c = NULL;
		struct config_problems probs = {0};
		int lrc = config_parse(path, &c, &probs);
		if (lrc == 0) {
			FUZZ_CHECK(libpq_view(c->store_url, &secret, &pw) &&
					   !secret,
				   data, size, "the loader keeps a store URL "
					       "libpq reads a password from");
			free(pw);
		}
		/* The loader refuses control characters and bad UTF-8 on
		 * its own; for printable ASCII only the store rule speaks. */
		if (rc != SC_ENOMEM && lrc != SC_ENOMEM && printable(s))
			FUZZ_CHECK((lrc == 0) == (rc == 0), data, size,
				   "loader %d, url_check_store %d", lrc, rc);
		config_problems_dispose(&probs);
		config_free(c);
	}
	free(s);
	return 0;
}
