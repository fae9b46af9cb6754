/*
 * log.h - the library's logging macro (sink and levels in surecron.h).
 *
 * LOG(level, "module", fmt, ...) checks the level before evaluating its
 * arguments, so debug logging costs one compare when off. The message is
 * logfmt: "key=value key2=value2"; log_write prefixes level and module
 * (and, in debug builds, file:line). Values that may hold spaces go through
 * log_quote. Never pass secrets.
 */
#ifndef SURECRON_LOG_H
#define SURECRON_LOG_H

#include "surecron.h"

extern enum sc_log_level log_max_level;

void log_write(enum sc_log_level level, const char *module, const char *file,
	       int line, const char *fmt, ...) SC_PRINTF(5, 6);

#define LOG(level, module, ...)                                          \
	do {                                                                \
		if ((level) <= log_max_level)                               \
			log_write((level), (module), __FILE__, __LINE__,    \
				  __VA_ARGS__);                             \
	} while (0)

/*
 * Writes s as a logfmt value into out (size n): bare when it has no space,
 * quote or '=', else double-quoted with \" and \\ escaped; control
 * characters become spaces. Truncates to fit. Returns out.
 */
const char *log_quote(char *out, size_t n, const char *s);

#endif
