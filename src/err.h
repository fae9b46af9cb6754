/*
 * err.h - internal helpers around struct sc_err (public part in surecron.h).
 */
#ifndef SURECRON_ERR_H
#define SURECRON_ERR_H

#include "surecron.h"

/* Like sc_err_set, and also sets the HTTP status / retry hint / permanence
 * fields when this call is the one that records the error. */
int err_set_http(struct sc_err *err, int code, int http_status,
		 int64_t retry_after_ms, const char *fmt, ...) SC_PRINTF(5, 6);

/* Marks an error recorded in err as permanent (do not retry). */
void err_set_permanent(struct sc_err *err);

/* Marks an error recorded in err as ambiguous: what failed may have been
 * received (struct sc_err). */
void err_set_ambiguous(struct sc_err *err);

/* Copies src into dst unless dst already holds an error. */
void err_copy(struct sc_err *dst, const struct sc_err *src);

/* True when err is non-NULL and holds an error. */
/* Whether code is the runner's own exhaustion (issue 42): out of
 * descriptors, processes (SC_EEXHAUSTED) or memory (SC_ENOMEM) inside
 * surecron, not in the task. Such an attempt is not the slot's failure:
 * the worker gives the job back without counting it. */
static inline bool err_is_runner(int code)
{
	return code == SC_EEXHAUSTED || code == SC_ENOMEM;
}

static inline bool err_is_set(const struct sc_err *err)
{
	return err && err->code != 0;
}

#endif
