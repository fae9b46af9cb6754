/*
 * test_log_vocab.c - the log vocabulary (docs/internals/base.md), checked
 * on the sources: every LOG(...) line of src/ names its `event=`, and
 * `slot=` is always an ISO 8601 instant (a %s of clock_format_utc), never
 * a number: milliseconds are `slot_ms=`.
 *
 * The check reads each LOG call's format (the string literals after the
 * module name, joined) from the .c files of src/ and src/cli/, in the tree the
 * tests run in (SURECRON_SRC, default ./src). A line that breaks the rule
 * fails the test with its file and line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

struct scan {
	int calls;     /* LOG calls with a format */
	int bad;       /* calls that break the rule */
};

/* Reads the whole file; NULL when it cannot. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *t = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (t = malloc((size_t)n + 1))) {
		if (fread(t, 1, (size_t)n, f) != (size_t)n) {
			free(t);
			t = NULL;
		} else {
			t[n] = '\0';
		}
	}
	fclose(f);
	return t;
}

/* Appends the body of the string literal at *p (just past its opening
 * quote) to out, escapes kept as written; *p ends past the closing quote. */
static void take_literal(const char **p, char *out, size_t n)
{
	size_t len = strlen(out);
	const char *s = *p;

	while (*s && *s != '"') {
		if (*s == '\\' && s[1]) {
			if (len + 2 < n) {
				out[len++] = s[0];
				out[len++] = s[1];
			}
			s += 2;
			continue;
		}
		if (len + 1 < n)
			out[len++] = *s;
		s++;
	}
	out[len] = '\0';
	*p = *s ? s + 1 : s;
}

/*
 * From the character after "LOG(", collects the call's literals but the
 * first (the module) into fmt; returns a pointer past the call.
 */
static const char *call_format(const char *s, char *fmt, size_t n)
{
	int depth = 1, lit = 0;

	fmt[0] = '\0';
	while (*s && depth > 0) {
		if (*s == '"') {
			s++;
			if (lit++ == 0) {
				char skip[256] = "";
				take_literal(&s, skip, sizeof(skip));
			} else {
				take_literal(&s, fmt, n);
			}
			continue;
		}
		if (*s == '\'') { /* a character constant, e.g. '(' */
			s++;
			if (*s == '\\')
				s++;
			if (*s)
				s++;
			if (*s == '\'')
				s++;
			continue;
		}
		if (*s == '(')
			depth++;
		else if (*s == ')')
			depth--;
		s++;
	}
	return s;
}

/* True when fmt has "slot=" followed by a number conversion. */
static bool slot_is_a_number(const char *fmt)
{
	for (const char *p = fmt; (p = strstr(p, "slot=")); p += 5) {
		if (p > fmt && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))
			continue; /* first_slot=, slot_ms= is another key */
		const char *v = p + 5;
		if (v[0] == '%' && v[1] != 's')
			return true;
	}
	return false;
}

static void scan_file(const char *path, struct scan *sc)
{
	char *t = slurp(path);

	if (!t)
		fail_msg("cannot read %s", path);
	for (const char *p = t; (p = strstr(p, "LOG(")); ) {
		bool word = p > t && ((p[-1] >= 'A' && p[-1] <= 'Z') ||
				      (p[-1] >= 'a' && p[-1] <= 'z') ||
				      p[-1] == '_');
		/* Skip the macro's own definition and mentions in comments. */
		bool define = false;
		for (const char *q = p; q > t && q[-1] != '\n'; q--)
			if (strncmp(q - 1, "#define", 7) == 0 || q[-1] == '*')
				define = true;
		if (word || define) {
			p += 4;
			continue;
		}
		char fmt[2048];
		int line = 1;
		for (const char *q = t; q < p; q++)
			line += *q == '\n';
		const char *end = call_format(p + 4, fmt, sizeof(fmt));
		if (fmt[0]) {
			sc->calls++;
			if (!strstr(fmt, "event=")) {
				print_message("%s:%d: no event= in \"%s\"\n", path,
					      line, fmt);
				sc->bad++;
			}
			if (slot_is_a_number(fmt)) {
				print_message("%s:%d: slot= is a number (use an "
					      "ISO instant, or slot_ms=) in "
					      "\"%s\"\n", path, line, fmt);
				sc->bad++;
			}
		}
		p = end;
	}
	free(t);
}

static void scan_dir(const char *dir, struct scan *sc)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		fail_msg("cannot open %s (run from the tree, or set "
			 "SURECRON_SRC)", dir);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char path[1024];
		if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		scan_file(path, sc);
	}
	closedir(d);
}

static void every_log_line_has_an_event_and_an_iso_slot(void **state)
{
	const char *src = getenv("SURECRON_SRC") ? getenv("SURECRON_SRC")
						  : "src";
	char cli[1024];
	struct scan sc = {0};
	(void)state;

	scan_dir(src, &sc);
	snprintf(cli, sizeof(cli), "%s/cli", src);
	scan_dir(cli, &sc);
	printf("log vocabulary: %d LOG calls, %d break the rule\n", sc.calls,
	       sc.bad);
	/* The scan must have found the tree's calls, or it proves nothing. */
	assert_true(sc.calls > 50);
	assert_int_equal(sc.bad, 0);
}

/* The checker itself: it must catch both faults, and pass good lines. */
static void the_checker_catches_what_it_should(void **state)
{
	char fmt[256];
	(void)state;

	call_format("SC_LOG_INFO, \"q\", \"event=x slot=%s\", s)", fmt,
		    sizeof(fmt));
	assert_string_equal(fmt, "event=x slot=%s");
	assert_false(slot_is_a_number(fmt));
	assert_true(slot_is_a_number("event=x slot=%lld"));
	assert_false(slot_is_a_number("event=x slot_ms=%lld"));
	assert_false(slot_is_a_number("event=x first_slot=%lld"));
	call_format("SC_LOG_WARN, \"q\", \"schedule=%s \"\n\t\"a=%d\", "
		    "f(')'), x)", fmt, sizeof(fmt));
	assert_string_equal(fmt, "schedule=%s a=%d");
	assert_null(strstr(fmt, "event="));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_checker_catches_what_it_should),
		cmocka_unit_test(every_log_line_has_an_event_and_an_iso_slot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
