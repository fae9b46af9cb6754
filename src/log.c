/*
 * log.c - one logfmt line per event, handed to the sink the program set.
 *
 * Invariants: the library itself never writes to stdout or stderr; without
 * a sink, lines are dropped. A line reaches the sink cleaned (text.h): no
 * control byte, valid UTF-8, whatever its values held.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "text.h"

enum sc_log_level log_max_level = SC_LOG_WARN;
static sc_log_fn sink;
static void *sink_ud;

static const char *level_names[] = {"error", "warn", "info", "debug"};

void sc_log_set_sink(sc_log_fn fn, void *ud, enum sc_log_level max)
{
	sink = fn;
	sink_ud = ud;
	log_max_level = fn ? max : SC_LOG_ERROR;
}

void sc_log_stderr(void *ud, enum sc_log_level level, const char *line)
{
	(void)ud;
	(void)level;
	fprintf(stderr, "%s\n", line);
}

int sc_log_level_parse(const char *s, enum sc_log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum sc_log_level)i;
			return 0;
		}
	}
	return SC_EINVAL;
}

void log_write(enum sc_log_level level, const char *module, const char *file,
	       int line, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	if (!sink)
		return;
#ifdef SURECRON_DEBUG
	n = snprintf(buf, sizeof(buf), "level=%s module=%s at=%s:%d ",
		     level_names[level], module, file, line);
#else
	(void)file;
	(void)line;
	n = snprintf(buf, sizeof(buf), "level=%s module=%s ",
		     level_names[level], module);
#endif
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	/* Values quote what peers and tasks sent: a log line read on a
	 * terminal must not carry their escape sequences (issue 11). */
	char clean[sizeof(buf)];
	sink(sink_ud, level, text_clean(clean, sizeof(clean), buf, 0));
}

const char *log_quote(char *out, size_t n, const char *s)
{
	size_t o = 0;
	bool plain = s[0] != '\0';

	if (n == 0)
		return out;
	for (const char *p = s; *p; p++)
		if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20)
			plain = false;
	if (!plain && o + 1 < n)
		out[o++] = '"';
	for (const char *p = s; *p && o + 3 < n; p++) {
		char c = *p;
		if ((unsigned char)c < 0x20)
			c = ' ';
		if (!plain && (c == '"' || c == '\\'))
			out[o++] = '\\';
		out[o++] = c;
	}
	if (!plain && o + 1 < n)
		out[o++] = '"';
	out[o] = '\0';
	return out;
}
