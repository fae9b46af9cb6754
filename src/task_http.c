/*
 * task_http.c - the `http` task kind (placeholder until the http client
 * lands: every http task fails permanently, loudly).
 */
#include "task.h"

int task_http_run(const struct task_spec *spec, const struct task_ctx *ctx,
		  struct task_result *out)
{
	(void)ctx;
	task_fail(out, spec->name, SC_ECONFIG, "http tasks are not built in");
	out->err.permanent = true;
	return out->err.code;
}
