/*
 * err.c - error codes, their names, and the first-error-wins recorder.
 *
 * Invariant: once an sc_err holds a code, no function here changes it, so a
 * cleanup step or a failure notice can never hide the error that started
 * the trouble (DESIGN.md, the outcome rule). Every message is one line of
 * clean text (text_clean): no control byte, valid UTF-8.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "text.h"

void sc_err_clear(struct sc_err *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

static void vset(struct sc_err *err, int code, const char *fmt, va_list ap)
{
	err->code = code;
	if (fmt) {
		char raw[SC_ERR_MSG_MAX];
		int n = vsnprintf(raw, sizeof(raw), fmt, ap);
		/* One line per error: a newline would split a log record. */
		for (char *p = raw; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		/* A cut may have split the last character: drop its start
		 * rather than show it as an escape. */
		if (n >= (int)sizeof(raw)) {
			size_t len = strlen(raw), k = len;
			while (k > 0 && len - k < 4 &&
			       ((unsigned char)raw[k - 1] & 0xC0) == 0x80)
				k--;
			unsigned char lead = k > 0 ? (unsigned char)raw[k - 1]
						   : 0;
			size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
			if (lead >= 0xC0 && len - (k - 1) < need)
				raw[k - 1] = '\0';
		}
		/* Messages quote input (task output, config values, peers'
		 * bodies) and end up on terminals: make control bytes and
		 * bad UTF-8 visible, never raw (issue 11). */
		text_clean(err->msg, sizeof(err->msg), raw, 0);
	} else {
		snprintf(err->msg, sizeof(err->msg), "%s", sc_strerror(code));
	}
}

int sc_err_set(struct sc_err *err, int code, const char *fmt, ...)
{
	if (!err || err->code != 0)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int err_set_http(struct sc_err *err, int code, int http_status,
		 int64_t retry_after_ms, const char *fmt, ...)
{
	if (!err || err->code != 0)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	err->http_status = http_status;
	err->retry_after_ms = retry_after_ms;
	return code;
}

void err_set_permanent(struct sc_err *err)
{
	if (err && err->code != 0)
		err->permanent = true;
}

void err_set_ambiguous(struct sc_err *err)
{
	if (err && err->code != 0)
		err->ambiguous = true;
}

void err_copy(struct sc_err *dst, const struct sc_err *src)
{
	if (dst && src && dst->code == 0 && src->code != 0)
		*dst = *src;
}

const char *sc_strerror(int code)
{
	switch (code) {
	case SC_OK: return "success";
	case SC_ENOENT: return "not found";
	case SC_EIO: return "I/O error";
	case SC_ENOMEM: return "out of memory";
	case SC_EACCES: return "permission denied";
	case SC_EBUSY: return "resource busy";
	case SC_EEXIST: return "already exists";
	case SC_EINVAL: return "invalid argument";
	case SC_ENOSPC: return "no space left on device";
	case SC_ETIMEDOUT: return "timed out";
	case SC_ECANCELED: return "canceled";
	case SC_ECRON: return "invalid cron expression";
	case SC_ENEVER: return "cron expression never fires";
	case SC_EZONE: return "unknown time zone";
	case SC_ECORRUPT: return "corrupt or foreign file";
	case SC_EVERSION: return "file from a newer version";
	case SC_ELEASE: return "lease lost";
	case SC_ESTATE: return "invalid state";
	case SC_ETOOBIG: return "size limit reached";
	case SC_EHTTP: return "HTTP request failed";
	case SC_ETASK: return "task failed";
	case SC_ECONFIG: return "invalid configuration";
	case SC_EPROTO: return "protocol error";
	case SC_EDELIVERY: return "delivery failed";
	case SC_EDB: return "database error";
	case SC_EEXHAUSTED: return "out of descriptors or processes";
	default: return "unknown error";
	}
}

void sc_free(void *p)
{
	free(p);
}

const char *sc_version(void)
{
	return SC_VERSION;
}
