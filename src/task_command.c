/*
 * task_command.c - the `command` task kind, and task_run's dispatch.
 *
 * A command runs without a shell (argv, PATH lookup) unless the config set
 * `shell:`, in which case `/bin/sh -c SHELL` runs. Invariants:
 *   - the task's exit status alone decides failure vs success; the output
 *     protocol (task_output.c) then decides deliver vs skip;
 *   - a timeout or an output overflow is always a failure that says so,
 *     and the task's whole process group is gone when we return;
 *   - the failure message carries the tail of stderr, never the
 *     environment (which may hold secrets).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "proc.h"
#include "task.h"

/* Exit 75: stdout may be {"retry_after": SECONDS, "error": "..."}. */
static void tempfail_hint(const struct buf *out, int64_t *hint_ms,
			  char *msg, size_t n)
{
	json_t *o = json_loadb(buf_str(out), out->len, 0, NULL);
	json_t *ra, *e;

	*hint_ms = 0;
	msg[0] = '\0';
	if (!json_is_object(o)) {
		json_decref(o);
		return;
	}
	ra = json_object_get(o, "retry_after");
	if (json_is_number(ra) && json_number_value(ra) > 0) {
		double s = json_number_value(ra);
		/* Cap at 30 days: a hint, not a way to park a job forever. */
		if (s > 30.0 * 86400)
			s = 30.0 * 86400;
		*hint_ms = (int64_t)(s * 1000.0);
	}
	e = json_object_get(o, "error");
	if (json_is_string(e))
		snprintf(msg, n, "%s", json_string_value(e));
	json_decref(o);
}

static int command_outcome(const struct task_spec *spec,
			   const struct proc_result *pr,
			   struct task_result *out)
{
	char tail[320], d[CLOCK_DUR_MAX];

	proc_tail_summary(pr->err_tail, tail, sizeof(tail));
	if (pr->stdout_overflow)
		return task_fail(out, spec->name, SC_ETOOBIG,
				 "stdout exceeded %zu bytes; the task was "
				 "stopped",
				 spec->max_output ? spec->max_output
						  : TASK_DEFAULT_MAX_OUTPUT);
	if (pr->canceled)
		return task_fail(out, spec->name, SC_ECANCELED,
				 "stopped: the run was canceled (lease lost)");
	if (pr->timed_out)
		return task_fail(out, spec->name, SC_ETIMEDOUT,
				 "timed out after %s%s%s",
				 clock_format_duration(
					 spec->timeout_ms > 0
						 ? spec->timeout_ms
						 : TASK_DEFAULT_TIMEOUT_MS,
					 d, sizeof(d)),
				 *tail ? ": " : "", tail);
	if (!pr->exited)
		return task_fail(out, spec->name, SC_ETASK,
				 "killed by signal %d (%s)%s%s",
				 pr->term_signal, strsignal(pr->term_signal),
				 *tail ? ": " : "", tail);
	if (pr->exit_code == 0)
		return task_output_parse(spec->name, buf_str(&pr->out),
					 pr->out.len, out);
	if (pr->exit_code == TASK_EXIT_TEMPFAIL) {
		char emsg[320];
		int64_t hint;
		tempfail_hint(&pr->out, &hint, emsg, sizeof(emsg));
		task_fail(out, spec->name, SC_ETASK,
			  "temporary failure (exit 75)%s%s",
			  *emsg || *tail ? ": " : "", *emsg ? emsg : tail);
		out->err.retry_after_ms = hint;
		return out->err.code;
	}
	if (pr->exit_code == TASK_EXIT_CONFIG) {
		task_fail(out, spec->name, SC_ETASK,
			  "unrecoverable failure (exit 78)%s%s",
			  *tail ? ": " : "", tail);
		out->err.permanent = true;
		return out->err.code;
	}
	return task_fail(out, spec->name, SC_ETASK, "exit status %d%s%s",
			 pr->exit_code, *tail ? ": " : "", tail);
}

static int command_run(const struct task_spec *spec,
		       const struct task_ctx *ctx, struct task_result *out)
{
	char iso[CLOCK_ISO_MAX];
	char e_sched[SC_ERR_MSG_MAX], e_slot[64], e_att[48], e_task[SC_ERR_MSG_MAX];
	char *sh_argv[] = {"/bin/sh", "-c", spec->shell, NULL};
	struct proc_result pr;
	struct sc_err perr = {0};
	size_t n_extra = 0;
	int rc;

	if (!spec->shell && (!spec->argv || !spec->argv[0]))
		return task_fail(out, spec->name, SC_ECONFIG,
				 "no command to run");
	snprintf(e_sched, sizeof(e_sched), "SURECRON_SCHEDULE=%s",
		 ctx->schedule ? ctx->schedule : "");
	snprintf(e_slot, sizeof(e_slot), "SURECRON_SLOT=%s",
		 clock_format_utc(ctx->slot_ms, iso));
	snprintf(e_att, sizeof(e_att), "SURECRON_ATTEMPT=%d", ctx->attempt);
	snprintf(e_task, sizeof(e_task), "SURECRON_TASK=%s", spec->name);
	while (spec->env && spec->env[n_extra])
		n_extra++;
	char **set = calloc(n_extra + 5, sizeof(char *));
	if (!set)
		return task_fail(out, spec->name, SC_ENOMEM, "out of memory");
	/* Ours first, the spec's extras after: an extra may not override
	 * what surecron tells the task about its run. */
	for (size_t i = 0; i < n_extra; i++)
		set[i] = spec->env[i];
	set[n_extra] = e_sched;
	set[n_extra + 1] = e_slot;
	set[n_extra + 2] = e_att;
	set[n_extra + 3] = e_task;
	char **envp = proc_env_build(set);
	if (!envp) {
		free(set);
		return task_fail(out, spec->name, SC_ENOMEM, "out of memory");
	}

	struct proc_spec ps = {
		.argv = spec->shell ? sh_argv : spec->argv,
		.envp = envp,
		.cwd = spec->cwd,
		.timeout_ms = spec->timeout_ms > 0 ? spec->timeout_ms
						   : TASK_DEFAULT_TIMEOUT_MS,
		.grace_ms = spec->grace_ms > 0 ? spec->grace_ms
					       : TASK_DEFAULT_GRACE_MS,
		.max_stdout = spec->max_output ? spec->max_output
					       : TASK_DEFAULT_MAX_OUTPUT,
		.tick = ctx->tick,
		.tick_ud = ctx->tick_ud,
		.tick_ms = ctx->tick_ms,
		.clock = ctx->clock,
	};
	struct timespec at;
	if (ctx->start_ns && clock_mono_deadline(ctx->clock, ctx->start_ns, &at))
		ps.start_mono_ns = (int64_t)at.tv_sec * 1000000000 + at.tv_nsec;
	rc = proc_run(&ps, &pr, &perr);
	free(envp);
	free(set);
	if (rc) {
		/* The runner out of descriptors, processes or memory keeps
		 * its code: the attempt is the runner's, not the task's
		 * (worker.c gives the job back uncounted). */
		task_fail(out, spec->name, err_is_runner(rc) ? rc : SC_ETASK,
			  "%s", perr.msg);
	} else {
		out->elapsed_ms = pr.elapsed_ms;
		out->started_ns = pr.started_ns;
		rc = command_outcome(spec, &pr, out);
	}
	proc_result_dispose(&pr);
	return rc;
}

int task_run(const struct task_spec *spec, const struct task_ctx *ctx,
	     struct task_result *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (spec->kind == TASK_HTTP)
		rc = task_http_run(spec, ctx, out);
	else
		rc = command_run(spec, ctx, out);
	if (out->outcome == TASK_FAILED && !out->reason)
		out->reason = strdup(out->err.msg);
	LOG(rc ? SC_LOG_WARN : SC_LOG_DEBUG, "task",
	       "event=task_end schedule=%s task=%s attempt=%d outcome=%s "
	       "elapsed_ms=%lld",
	       ctx->schedule ? ctx->schedule : "-", spec->name, ctx->attempt,
	       out->outcome == TASK_DELIVER ? "deliver"
	       : out->outcome == TASK_SKIP  ? "skip"
					    : "failed",
	       (long long)out->elapsed_ms);
	return rc;
}
