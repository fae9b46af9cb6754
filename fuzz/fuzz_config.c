/*
 * fuzz_config.c - the config loader (config_parse, then config_check on a
 * config that loads) on arbitrary file contents.
 *
 * Input: the bytes of surecron.yaml, written to a file as they are.
 *
 * Properties:
 *   1. no memory error, no undefined behaviour, no leak (ASan, UBSan,
 *      LSan; issue 11, item 2 was a stack over-read in a message);
 *   2. the loader returns 0 or SC_ECONFIG (or SC_ENOMEM), and a refusal
 *      has at least one problem;
 *   3. every problem's position points into the file: either none (0:0)
 *      or 1 <= LINE <= the number of lines and 1 <= COLUMN <= that line's
 *      length in bytes + 1, lines ending at LF, CRLF or a lone CR (and at
 *      U+0085, U+2028 and U+2029, which YAML counts as breaks too), so a
 *      file with CR line ends is counted the way an editor shows it (issue
 *      11, item 12);
 *   4. each problem formats to "FILE:LINE:COLUMN: reason" (or "FILE:
 *      reason") as one terminated line, and its message is valid UTF-8
 *      (the file is, so a message holding anything else printed memory it
 *      should not have: issue 11, item 2);
 *   5. a file with a tab in a line's indentation (before anything but a
 *      comment) is refused, whatever its line ends (the documented rule:
 *      YAML indents with spaces).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "err.h"
#include "spec.h"

static const char *path; /* fuzz_scratch_file */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	path = fuzz_scratch_file("config");
	return 0;
}

/* Length in bytes of a line break at p (0: none). */
static size_t line_break(const uint8_t *p, size_t left)
{
	if (p[0] == '\n')
		return 1;
	if (p[0] == '\r')
		return left > 1 && p[1] == '\n' ? 2 : 1;
	if (left > 1 && p[0] == 0xC2 && p[1] == 0x85)
		return 2;
	if (left > 2 && p[0] == 0xE2 && p[1] == 0x80 &&
	    (p[2] == 0xA8 || p[2] == 0xA9))
		return 3;
	return 0;
}

/* The byte length of line `line` (1-based), or -1 past the last line. */
static long line_len(const uint8_t *data, size_t size, int line)
{
	int cur = 1;
	size_t start = 0;

	for (size_t i = 0; i < size;) {
		size_t b = line_break(data + i, size - i);
		if (!b) {
			i++;
			continue;
		}
		if (cur == line)
			return (long)(i - start);
		cur++;
		i += b;
		start = i;
	}
	return cur == line ? (long)(size - start) : -1;
}

/* Valid UTF-8, except that a character cut by truncation may end it. */
static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		size_t len = p[i] < 0x80 ? 1 : p[i] >= 0xC2 && p[i] <= 0xDF ? 2
		     : p[i] >= 0xE0 && p[i] <= 0xEF ? 3
		     : p[i] >= 0xF0 && p[i] <= 0xF4 ? 4 : 0;
		if (!len)
			return false;
		for (size_t k = 1; k < len; k++)
			if (i + k >= n)
				return true; /* cut at the end */
			else if ((p[i + k] & 0xC0) != 0x80)
				return false;
		i += len;
	}
	return true;
}

/* True when some line's leading blanks hold a tab and go on with
 * something other than a comment or the line's end. */
static bool tab_indented(const uint8_t *data, size_t size)
{
	bool tab = false, at_indent = true;

	for (size_t i = 0; i < size;) {
		size_t b = line_break(data + i, size - i);
		if (b) {
			tab = false;
			at_indent = true;
			i += b;
			continue;
		}
		if (at_indent) {
			if (data[i] == '\t')
				tab = true;
			else if (data[i] != ' ') {
				if (tab && data[i] != '#')
					return true;
				at_indent = false;
			}
		}
		i++;
	}
	return false;
}

static void check_positions(const struct config_problems *p,
			    const uint8_t *data, size_t size, const char *stage)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct config_problem *q = &p->items[i];
		char line[SC_ERR_MSG_MAX + 512];
		FUZZ_CHECK(q->msg && *q->msg, data, size,
			   "%s: problem %zu has no message", stage, i);
		config_problem_format(p, i, line, sizeof(line));
		FUZZ_CHECK(!strchr(line, '\n'), data, size,
			   "%s: problem %zu formats to several lines", stage, i);
		FUZZ_CHECK(utf8_ok(q->msg), data, size,
			   "%s: problem %zu is not UTF-8: %s", stage, i, q->msg);
		char want[FUZZ_SCRATCH_MAX + 64];
		if (q->line == 0 && q->col == 0)
			snprintf(want, sizeof(want), "%s: ", path);
		else
			snprintf(want, sizeof(want), "%s:%d:%d: ", path, q->line,
				 q->col);
		FUZZ_CHECK(strncmp(line, want, strlen(want)) == 0, data, size,
			   "%s: problem %zu formats as \"%s\"", stage, i, line);
		if (q->line == 0 && q->col == 0)
			continue;
		long len = q->line >= 1 ? line_len(data, size, q->line) : -1;
		FUZZ_CHECK(len >= 0 && q->col >= 1 && q->col <= len + 1, data,
			   size, "%s: problem at %d:%d is outside the file "
			   "(that line has %ld bytes): %s", stage, q->line,
			   q->col, len, q->msg);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_problems probs = {0};
	struct config *c = NULL;

	if (size > CONFIG_MAX_BYTES)
		return 0;
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	int rc = config_parse(path, &c, &probs);
	FUZZ_CHECK(rc == 0 || rc == SC_ECONFIG || rc == SC_ENOMEM, data, size,
		   "config_parse returned %d", rc);
	FUZZ_CHECK(rc == 0 || probs.n > 0 || rc == SC_ENOMEM, data, size,
		   "config_parse refused the file (%d) without a problem", rc);
	check_positions(&probs, data, size, "config_parse");
	FUZZ_CHECK(rc != 0 || !tab_indented(data, size), data, size,
		   "a file indented with a tab was accepted");
	if (rc == 0) {
		config_problems_dispose(&probs);
		rc = config_check(c, &probs);
		FUZZ_CHECK(rc >= 0 || rc == SC_ENOMEM, data, size,
			   "config_check returned %d", rc);
		check_positions(&probs, data, size, "config_check");
		config_free(c);
	}
	config_problems_dispose(&probs);
	return 0;
}
