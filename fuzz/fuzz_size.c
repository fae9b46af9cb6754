/*
 * fuzz_size.c - the config's sizes and integers, through the real loader.
 *
 * Input: one value, put into a valid config twice: as a task's
 * `max_output` (a size) and as `worker.concurrency` (an integer), both as
 * YAML double-quoted strings so that any byte reaches the value parsers.
 * Reference parsers of the documented forms (docs/man/surecron.yaml.5.md:
 * a size is digits, optionally followed by k, K, KiB, M or MiB; an integer
 * is digits) say what must happen.
 *
 * Properties:
 *   1. the loader accepts a value exactly when the reference does: sizes
 *      from 1 byte to 256 MiB, concurrency from 1 to 1024; no other form
 *      ("+5", " 5", "-18446744073709551615": issue 11, item 11);
 *   2. an accepted value is the reference's value;
 *   3. an accepted size round-trips: written as bytes, and with the
 *      largest exact suffix, it loads as the same size;
 *   4. every problem names one of the two keys (the rest of the file is
 *      valid).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "spec.h"

/* max_output is at most what one result carries (spec.h). */
#define SIZE_MAX_BYTES ((unsigned long long)SPEC_RESULT_MAX)

static const char *path; /* fuzz_scratch_file */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	path = fuzz_scratch_file("size");
	return 0;
}

/* Digits then one of the suffixes; the value saturates above the cap. */
static bool ref_number(const char *s, const char *const *suffixes,
		       const unsigned long long *mults, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++)
		if (v <= SIZE_MAX_BYTES)
			v = v * 10 + (unsigned long long)(*p - '0');
	if (p == s)
		return false;
	for (int i = 0; suffixes[i]; i++)
		if (strcmp(p, suffixes[i]) == 0) {
			*out = v > SIZE_MAX_BYTES ? SIZE_MAX_BYTES + 1 : v * mults[i];
			return true;
		}
	return false;
}

/* The value as a YAML double-quoted scalar. */
static void quote(const char *s, char *out, size_t n)
{
	size_t j = 0;

	out[j++] = '"';
	for (; *s && j + 8 < n; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			j += (size_t)snprintf(out + j, n - j, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			j += (size_t)snprintf(out + j, n - j, "\\x%02x", c);
		else
			out[j++] = (char)c;
	}
	out[j++] = '"';
	out[j] = '\0';
}

/* Loads the config with these two values; 0 or the loader's code. */
static int load(const char *size_yaml, const char *int_yaml,
		struct config **c, struct config_problems *probs)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fprintf(f,
		"worker:\n"
		"  concurrency: %s\n"
		"schedules:\n"
		"  s:\n"
		"    cron: \"0 0 * * *\"\n"
		"    tasks:\n"
		"      - name: t\n"
		"        command: [\"/bin/true\"]\n"
		"        max_output: %s\n",
		int_yaml, size_yaml);
	if (fclose(f) != 0)
		abort();
	*c = NULL;
	return config_parse(path, c, probs);
}

static bool mentions(const struct config_problems *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (strstr(p->items[i].msg, key))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const size_sfx[] = {"", "k", "K", "KiB", "M", "MiB",
					       NULL};
	static const unsigned long long size_mul[] = {1, 1024, 1024, 1024,
						      1 << 20, 1 << 20};
	static const char *const int_sfx[] = {"", NULL};
	static const unsigned long long int_mul[] = {1};
	char *s;
	char q[600];
	struct config *c;
	struct config_problems probs = {0};
	unsigned long long want_size = 0, want_int = 0;

	/* Sizes are ASCII; other bytes only make the file invalid UTF-8. */
	if (size > 200)
		return 0;
	for (size_t i = 0; i < size; i++)
		if (data[i] >= 0x80)
			return 0;
	s = fuzz_cstr(data, size);
	bool size_ok = ref_number(s, size_sfx, size_mul, &want_size) &&
		       want_size >= 1 && want_size <= SIZE_MAX_BYTES;
	bool int_ok = ref_number(s, int_sfx, int_mul, &want_int) &&
		      want_int >= 1 && want_int <= 1024;
	quote(s, q, sizeof(q));
	int rc = load(q, q, &c, &probs);
	FUZZ_CHECK(rc == 0 || rc == SC_ECONFIG, data, size,
		   "the loader failed with %d", rc);
	for (size_t i = 0; i < probs.n; i++)
		FUZZ_CHECK(strstr(probs.items[i].msg, "max_output") ||
				   strstr(probs.items[i].msg, "concurrency"),
			   data, size, "unexpected problem: %s",
			   probs.items[i].msg);
	bool got_size = rc == 0 || !mentions(&probs, "max_output");
	bool got_int = rc == 0 || !mentions(&probs, "concurrency");
	FUZZ_CHECK(got_size == size_ok, data, size,
		   "max_output %s, but the documented forms say %s",
		   got_size ? "accepted" : "refused",
		   size_ok ? "accept" : "refuse");
	FUZZ_CHECK(got_int == int_ok, data, size,
		   "concurrency %s, but the documented form says %s",
		   got_int ? "accepted" : "refused",
		   int_ok ? "accept" : "refuse");
	if (rc == 0) {
		size_t got = c->schedules[0].tasks[0].max_output;
		FUZZ_CHECK(got == want_size, data, size,
			   "max_output is %zu, the value written is %llu", got,
			   want_size);
		FUZZ_CHECK((unsigned long long)c->concurrency == want_int,
			   data, size, "concurrency is %d, the value written "
			   "is %llu", c->concurrency, want_int);
		config_free(c);

		/* Round trip: as bytes, and with the largest exact suffix. */
		char alt[2][64];
		snprintf(alt[0], sizeof(alt[0]), "\"%zu\"", got);
		if (got % (1 << 20) == 0)
			snprintf(alt[1], sizeof(alt[1]), "\"%zuMiB\"", got >> 20);
		else if (got % 1024 == 0)
			snprintf(alt[1], sizeof(alt[1]), "\"%zuKiB\"", got >> 10);
		else
			snprintf(alt[1], sizeof(alt[1]), "%zu", got);
		for (int i = 0; i < 2; i++) {
			config_problems_dispose(&probs);
			rc = load(alt[i], "1", &c, &probs);
			FUZZ_CHECK(rc == 0 &&
					   c->schedules[0].tasks[0].max_output == got,
				   data, size, "size %zu does not round-trip "
				   "through %s (rc %d)", got, alt[i], rc);
			config_free(c);
		}
	}
	config_problems_dispose(&probs);
	free(s);
	return 0;
}
