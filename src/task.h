/*
 * task.h - running one task of a slot's group and reading its outcome.
 *
 * A task ends in exactly one of three outcomes (DESIGN.md, Words):
 *   TASK_DELIVER  a non-empty summary and/or at least one preview;
 *   TASK_SKIP     nothing to say (skip is neither a failure nor a
 *                 deliverable);
 *   TASK_FAILED   a failure, with an sc_err that may carry a retry hint
 *                 (retry_after_ms) or say "do not retry" (permanent).
 *
 * The command task's output protocol, on exit status 0:
 *   - stdout starting with '{' (after blanks) is a JSON object
 *     {"summary": "...", "previews": ["..."], "skip": true, "reason": "..."}
 *     (all optional). Output that starts with '{' but does not parse is a
 *     failure naming the task and the line and column of the error.
 *     skip:true wins over a summary; an object with neither a non-empty
 *     summary nor a preview is a skip (reason "empty result").
 *   - anything else is plain text: non-empty (after trimming) -> summary,
 *     empty -> skip with reason "no output".
 * Exit 75 (EX_TEMPFAIL): retryable failure; stdout may be
 * {"retry_after": SECONDS, "error": "..."} -> hint and message.
 * Exit 78 (EX_CONFIG): permanent failure (no retry).
 * Any other status, or a signal: retryable failure with the stderr tail.
 *
 * Thread-safety: task_run may run in several threads at once (each with
 * its own result).
 */
#ifndef SURECRON_TASK_H
#define SURECRON_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "surecron.h"

struct http_auth;
struct http_token_store;

#define TASK_EXIT_TEMPFAIL 75 /* sysexits.h EX_TEMPFAIL */
#define TASK_EXIT_CONFIG 78   /* sysexits.h EX_CONFIG */

#define TASK_DEFAULT_TIMEOUT_MS (10 * 60 * 1000)
#define TASK_DEFAULT_GRACE_MS (5 * 1000)
#define TASK_DEFAULT_MAX_OUTPUT SPEC_DEFAULT_MAX_OUTPUT
#define TASK_MAX_PREVIEWS 100

enum task_outcome {
	TASK_DELIVER = 0,
	TASK_SKIP = 1,
	TASK_FAILED = 2,
};

struct task_result {
	enum task_outcome outcome;
	char *summary;       /* DELIVER: trimmed, or NULL when none (owned) */
	char **previews;     /* DELIVER: n_previews non-empty strings (owned) */
	size_t n_previews;
	char *reason;        /* SKIP: why; FAILED: the bare reason, without
				the task name (owned; never NULL after
				task_run) */
	struct sc_err err;   /* FAILED: code, "task NAME: reason", hint,
				permanent; zero otherwise */
	int64_t elapsed_ms;
	int64_t started_ns;  /* the task's clock, UTC ns, when it began: its
				program exec'd (command), its request went out
				(http); 0 when it never started */
};

/* What a task learns about the run it belongs to (all borrowed). */
struct task_ctx {
	const char *schedule;
	int64_t slot_ms;
	int attempt;                  /* 1-based */
	struct sc_clock *clock;       /* may be NULL: the real clock */
	const struct config *config;  /* auth specs by name; may be NULL */
	/* http tasks: long-lived providers to use by name (shared caches);
	 * a name not found here is built from config for this run only. */
	struct http_auth *const *auths;
	size_t n_auths;
	const struct http_token_store *tokens; /* persistent token cache of
						  per-run providers; NULL */
	/* Called every tick_ms while a command task runs (same thread): the
	 * orchestrator extends the job's lease with it. Non-zero stops the
	 * task (it fails as canceled). NULL: no ticks. */
	int (*tick)(void *ud);
	void *tick_ud;
	int64_t tick_ms;
	/* Called with tick_ud while an http task waits for its answer
	 * (about once a second at least): keeps the job's lease through a
	 * slow answer. It cannot stop the task. NULL: none. */
	void (*keep)(void *ud);
	/* 0: the task starts at once. Else the clock's UTC ns before which
	 * it must not start: a command is handed to its reaper now and
	 * started at that instant (proc.h, start_mono_ns), an http request
	 * waits for it here. The daemon's worker claims a job a little
	 * ahead of its due instant and passes that instant here. */
	int64_t start_ns;
};

/*
 * Runs one task and fills *out (which this initialises; release with
 * task_result_dispose). Command tasks run spec->argv without a shell, or
 * `/bin/sh -c spec->shell` only when shell is set, in a process group of
 * their own, with the environment of the process plus SURECRON_SCHEDULE,
 * SURECRON_SLOT (ISO 8601 UTC), SURECRON_ATTEMPT, SURECRON_TASK and the
 * spec's extras, in spec->cwd.
 * Returns 0 when the outcome is DELIVER or SKIP, else the failure's code
 * (also in out->err): a task failure is an outcome, not a crash.
 */
int task_run(const struct task_spec *spec, const struct task_ctx *ctx,
	     struct task_result *out);

/* Frees what a result owns and zeroes it. NULL is ignored. */
void task_result_dispose(struct task_result *r);

/*
 * Applies the output protocol to a successful (exit 0 / 2xx) output of
 * task `name`. Fills *out as task_run does; returns 0 or the failure code.
 */
int task_output_parse(const char *name, const char *data, size_t len,
		      struct task_result *out);

/*
 * Sets *out to a failure of task `name`: err->msg becomes
 * "task NAME: reason", out->reason the bare reason. Returns code.
 */
int task_fail(struct task_result *out, const char *name, int code,
	      const char *fmt, ...) SC_PRINTF(4, 5);

/* The http task kind (task_http.c); same contract as task_run. */
int task_http_run(const struct task_spec *spec, const struct task_ctx *ctx,
		  struct task_result *out);

#endif
