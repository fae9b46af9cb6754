/*
 * fuzz_task_output.c - the task output protocol (task_output_parse) and
 * the UTF-8 cleaner behind it, on arbitrary stdout bytes.
 *
 * Input: what a task printed on stdout before exiting 0.
 *
 * Properties (task.h and the invariants of task_output.c):
 *   1. the result is exactly one of DELIVER, SKIP, FAILED; the return is 0
 *      for DELIVER and SKIP, else the failure's code, equal to err.code;
 *   2. DELIVER has a non-empty summary or at least one preview, every
 *      preview is non-empty, at most TASK_MAX_PREVIEWS of them, and the
 *      summary and previews are trimmed;
 *   3. every string the result holds is valid UTF-8 without NUL bytes;
 *      SKIP and FAILED always have a reason; a failure's message is
 *      "task NAME: reason" on one line;
 *   4. output whose first non-blank byte is '{' is never plain text: a
 *      DELIVER or SKIP from it means it was a JSON object; anything else
 *      is a summary equal to the output cleaned then trimmed, or a skip
 *      when that is empty;
 *   5. text_utf8_clean returns valid UTF-8 without NUL, and valid UTF-8
 *      without NUL unchanged.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "task.h"
#include "text.h"

#define NAME "fz"

/* A strict UTF-8 check (RFC 3629: no overlongs, surrogates or values
 * past U+10FFFF), written independently of task_output.c. */
static bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		size_t len;
		unsigned cp;
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			len = 2, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			len = 3, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			len = 4, cp = c & 0x07;
		else
			return false;
		if (i + len > n)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			return false;
		i += len;
	}
	return true;
}

static bool str_ok(const char *s)
{
	return s && utf8_valid(s, strlen(s));
}

static bool is_trimmed(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && !isspace((unsigned char)s[0]) &&
	       !isspace((unsigned char)s[n - 1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct task_result r = {0};

	/* 5: the cleaner. */
	char *clean = text_utf8_clean(in, size);
	FUZZ_CHECK(clean && str_ok(clean), data, size,
		   "text_utf8_clean returned invalid UTF-8");
	if (utf8_valid(in, size))
		FUZZ_CHECK(strlen(clean) == size && memcmp(clean, in, size) == 0,
			   data, size, "text_utf8_clean changed valid UTF-8");

	int rc = task_output_parse(NAME, in, size, &r);
	FUZZ_CHECK(r.outcome == TASK_DELIVER || r.outcome == TASK_SKIP ||
			   r.outcome == TASK_FAILED,
		   data, size, "outcome %d", (int)r.outcome);
	if (r.outcome == TASK_FAILED) {
		FUZZ_CHECK(rc < 0 && rc == r.err.code, data, size,
			   "a failure returned %d with err.code %d", rc,
			   r.err.code);
		FUZZ_CHECK(str_ok(r.reason) && *r.reason, data, size,
			   "a failure without a valid reason");
		FUZZ_CHECK(strncmp(r.err.msg, "task " NAME ": ", 8) == 0 &&
				   !strpbrk(r.err.msg, "\r\n"),
			   data, size, "failure message \"%s\"", r.err.msg);
	} else {
		FUZZ_CHECK(rc == 0 && r.err.code == 0, data, size,
			   "outcome %d returned %d (err.code %d)", (int)r.outcome,
			   rc, r.err.code);
	}
	if (r.outcome == TASK_SKIP)
		FUZZ_CHECK(str_ok(r.reason) && *r.reason, data, size,
			   "a skip without a valid reason");
	if (r.outcome == TASK_DELIVER) {
		FUZZ_CHECK(r.summary || r.n_previews > 0, data, size,
			   "DELIVER with nothing to deliver");
		FUZZ_CHECK(!r.summary || (str_ok(r.summary) &&
					  is_trimmed(r.summary)),
			   data, size, "summary is empty, untrimmed or not "
			   "UTF-8");
		FUZZ_CHECK(r.n_previews <= TASK_MAX_PREVIEWS, data, size,
			   "%zu previews", r.n_previews);
		for (size_t i = 0; i < r.n_previews; i++)
			FUZZ_CHECK(str_ok(r.previews[i]) &&
					   is_trimmed(r.previews[i]),
				   data, size, "preview %zu is empty, "
				   "untrimmed or not UTF-8", i);
	}

	/* 4: JSON-looking output is never plain text. */
	size_t i = 0;
	while (i < size && isspace((unsigned char)in[i]))
		i++;
	if (i < size && in[i] == '{') {
		if (r.outcome != TASK_FAILED) {
			json_t *o = json_loadb(in, size, 0, NULL);
			FUZZ_CHECK(json_is_object(o), data, size,
				   "output starting with '{' that is no JSON "
				   "object gave outcome %d", (int)r.outcome);
			json_decref(o);
		}
	} else {
		FUZZ_CHECK(r.outcome != TASK_FAILED, data, size,
			   "plain text output failed: %s", r.err.msg);
		/* Cleaned (NULs dropped, bad bytes '?'), then trimmed. */
		char *want = text_utf8_clean(in, size);
		size_t b = 0, e = strlen(want);
		while (b < e && isspace((unsigned char)want[b]))
			b++;
		while (e > b && isspace((unsigned char)want[e - 1]))
			e--;
		memmove(want, want + b, e - b);
		want[e - b] = '\0';
		if (!*want)
			FUZZ_CHECK(r.outcome == TASK_SKIP, data, size,
				   "blank output is not a skip");
		else
			FUZZ_CHECK(r.outcome == TASK_DELIVER && r.summary &&
					   strcmp(r.summary, want) == 0 &&
					   r.n_previews == 0,
				   data, size, "plain text is not delivered as "
				   "its summary");
		free(want);
	}
	free(clean);
	task_result_dispose(&r);
	return 0;
}
