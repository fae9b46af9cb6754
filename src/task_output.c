/*
 * task_output.c - the task output protocol (see task.h) and task results.
 *
 * Invariants:
 *   - a result is exactly one of DELIVER / SKIP / FAILED, and DELIVER
 *     always has a non-empty summary or at least one non-empty preview;
 *   - every string a result holds is valid UTF-8 without NUL bytes (bad
 *     bytes become '?'), so composing the message JSON cannot fail on it;
 *   - output that looks like JSON (first non-blank byte '{') is never
 *     taken as plain text: a broken object is a failure with its position,
 *     not a summary made of braces and not a silent skip.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "err.h"
#include "log.h"
#include "task.h"
#include "text.h"

void task_result_dispose(struct task_result *r)
{
	if (!r)
		return;
	free(r->summary);
	for (size_t i = 0; i < r->n_previews; i++)
		free(r->previews[i]);
	free(r->previews);
	free(r->reason);
	memset(r, 0, sizeof(*r));
}

int task_fail(struct task_result *out, const char *name, int code,
	      const char *fmt, ...)
{
	char reason[SC_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	for (char *p = reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	free(out->reason);
	/* stderr tails are arbitrary bytes: keep messages valid UTF-8. */
	out->reason = text_utf8_clean(reason, strlen(reason));
	if (out->reason)
		snprintf(reason, sizeof(reason), "%s", out->reason);
	out->outcome = TASK_FAILED;
	sc_err_set(&out->err, code, "task %s: %s", name, reason);
	return code;
}

/* Cleaned, then trimmed copy; NULL when out of memory. Cleaning comes
 * first: it drops NUL bytes, so "\0 x \0" trimmed before cleaning would
 * keep the blanks the NULs had shielded. */
static char *trimmed(const char *p, size_t n)
{
	char *s = text_utf8_clean(p, n);
	size_t b = 0, e;

	if (!s)
		return NULL;
	e = strlen(s);
	while (b < e && isspace((unsigned char)s[b]))
		b++;
	while (e > b && isspace((unsigned char)s[e - 1]))
		e--;
	memmove(s, s + b, e - b);
	s[e - b] = '\0';
	return s;
}

static int set_skip(struct task_result *out, const char *name,
		    const char *reason)
{
	out->outcome = TASK_SKIP;
	out->reason = strdup(reason && *reason ? reason : "skipped");
	if (!out->reason)
		return task_fail(out, name, SC_ENOMEM, "out of memory");
	return 0;
}

static int parse_object(const char *name, json_t *o, struct task_result *out)
{
	json_t *summary = json_object_get(o, "summary");
	json_t *previews = json_object_get(o, "previews");
	json_t *skip = json_object_get(o, "skip");
	json_t *reason = json_object_get(o, "reason");

	if (summary && !json_is_string(summary) && !json_is_null(summary))
		return task_fail(out, name, SC_EPROTO,
				 "output field \"summary\" is not a string");
	if (previews && !json_is_array(previews) && !json_is_null(previews))
		return task_fail(out, name, SC_EPROTO,
				 "output field \"previews\" is not an array");
	if (skip && !json_is_boolean(skip) && !json_is_null(skip))
		return task_fail(out, name, SC_EPROTO,
				 "output field \"skip\" is not true or false");
	if (reason && !json_is_string(reason) && !json_is_null(reason))
		return task_fail(out, name, SC_EPROTO,
				 "output field \"reason\" is not a string");
	if (json_is_true(skip))
		return set_skip(out, name, json_string_value(reason));

	size_t n = json_array_size(previews);
	for (size_t i = 0; i < n; i++)
		if (!json_is_string(json_array_get(previews, i)))
			return task_fail(out, name, SC_EPROTO,
					 "output field \"previews\"[%zu] is "
					 "not a string", i);
	if (n > TASK_MAX_PREVIEWS) {
		LOG(SC_LOG_WARN, "task",
		       "event=previews_cut task=%s previews=%zu kept=%d "
		       "msg=\"too many previews\"",
		       name, n, TASK_MAX_PREVIEWS);
		n = TASK_MAX_PREVIEWS;
	}
	if (n) {
		out->previews = calloc(n, sizeof(char *));
		if (!out->previews)
			return task_fail(out, name, SC_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(previews, i);
		char *s = trimmed(json_string_value(v), json_string_length(v));
		if (!s)
			return task_fail(out, name, SC_ENOMEM, "out of memory");
		if (!*s) {
			free(s); /* an empty preview is no deliverable */
			continue;
		}
		out->previews[out->n_previews++] = s;
	}
	if (json_is_string(summary)) {
		out->summary = trimmed(json_string_value(summary),
				       json_string_length(summary));
		if (!out->summary)
			return task_fail(out, name, SC_ENOMEM, "out of memory");
		if (!*out->summary) {
			free(out->summary);
			out->summary = NULL;
		}
	}
	if (!out->summary && out->n_previews == 0)
		return set_skip(out, name, json_is_string(reason)
						   ? json_string_value(reason)
						   : "empty result");
	out->outcome = TASK_DELIVER;
	return 0;
}

static bool looks_like_json(const char *data, size_t len)
{
	size_t i = 0;

	while (i < len && isspace((unsigned char)data[i]))
		i++;
	return i < len && data[i] == '{';
}

int task_output_parse(const char *name, const char *data, size_t len,
		      struct task_result *out)
{
	if (looks_like_json(data, len)) {
		json_error_t jerr;
		json_t *o = json_loadb(data, len, 0, &jerr);
		if (!o)
			return task_fail(out, name, SC_EPROTO,
					 "malformed JSON output at line %d, "
					 "column %d: %s", jerr.line,
					 jerr.column, jerr.text);
		int rc = parse_object(name, o, out);
		json_decref(o);
		return rc;
	}
	char *s = trimmed(data, len);
	if (!s)
		return task_fail(out, name, SC_ENOMEM, "out of memory");
	if (!*s) {
		free(s);
		return set_skip(out, name, "no output");
	}
	out->summary = s;
	out->outcome = TASK_DELIVER;
	return 0;
}
