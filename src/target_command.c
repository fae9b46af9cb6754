/*
 * target_command.c - the `command` target: the message object on the
 * stdin of a program (argv, no shell), which must exit 0.
 *
 * The program also gets SURECRON_IDEMPOTENCY_KEY, the same for every copy
 * of one (slot, target), so it can drop a duplicate after a crash. It runs
 * in its own process group with the target's timeout; stdout is discarded
 * (a program that prints more than 64 KiB is stopped, which is a failed
 * send), the stderr tail goes into the error.
 *
 * Sure and ambiguous failures (sc_err.ambiguous): a program that could
 * not be started, or that exited with a non-zero status (its own "no"),
 * surely did not take the message. A program that was started and then
 * killed (the timeout, a signal, too much output, the run canceled) may
 * have read its stdin and acted before it died: that send is ambiguous,
 * whether or not it read anything, since we cannot know what it did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "message.h"
#include "proc.h"
#include "target.h"

#define COMMAND_TARGET_GRACE_MS 2000
#define COMMAND_TARGET_MAX_STDOUT (64 * 1024)

/* How often a running command target calls the copy's keep hook. */
#define KEEP_TICK_MS 500

/* proc_run's tick: the copy's keep hook; never stops the command. */
static int keep_tick(void *ud)
{
	const struct target_copy *s = ud;

	s->keep(s->keep_ud);
	return 0;
}

int target_command_send(const struct target_copy *s, const char *k,
			struct sc_err *err)
{
	const struct target_spec *t = s->target;
	char key[MESSAGE_KEY_MAX + 32], tail[320];
	char *set[2] = {key, NULL};
	struct proc_result pr;
	struct sc_err perr = {0};
	size_t len = strlen(s->body);
	int rc;

	if (!t->argv || !t->argv[0])
		return sc_err_set(err, SC_ECONFIG, "target %s: no command",
				  t->name);
	/* The command gets the key in its environment (its row in target.c
	 * has sends_key, so target_send computed it). */
	snprintf(key, sizeof(key), "SURECRON_IDEMPOTENCY_KEY=%s", k);
	char **envp = proc_env_build(set);
	char *in = malloc(len + 1);
	if (!envp || !in) {
		free(envp);
		free(in);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	memcpy(in, s->body, len);
	in[len] = '\n';
	struct proc_spec ps = {
		.argv = t->argv,
		.envp = envp,
		.stdin_data = in,
		.stdin_len = len + 1,
		.timeout_ms = t->timeout_ms > 0 ? t->timeout_ms
						: TARGET_DEFAULT_TIMEOUT_MS,
		.grace_ms = COMMAND_TARGET_GRACE_MS,
		.max_stdout = COMMAND_TARGET_MAX_STDOUT,
		.tick = s->keep ? keep_tick : NULL,
		.tick_ud = (void *)s,
		.tick_ms = KEEP_TICK_MS,
	};
	rc = proc_run(&ps, &pr, &perr);
	free(envp);
	free(in);
	struct sc_err out = {0};
	if (rc) {
		/* Not started because the runner is out of descriptors,
		 * processes or memory: the runner's failure, not the
		 * target's (issue 42), and surely nothing sent. */
		bool runner = err_is_runner(rc) && pr.started_ns == 0;
		rc = sc_err_set(&out, runner ? rc : SC_EDELIVERY,
				"target %s: %s", t->name, perr.msg);
		/* Failed after the program started (a poll or wait error):
		 * it may have run. */
		out.ambiguous = pr.started_ns != 0;
	} else {
		proc_tail_summary(pr.err_tail, tail, sizeof(tail));
		if (pr.timed_out)
			rc = sc_err_set(&out, SC_EDELIVERY,
					"target %s: command timed out (it may "
					"have acted)%s%s",
					t->name, *tail ? ": " : "", tail);
		else if (!pr.exited)
			rc = sc_err_set(&out, SC_EDELIVERY,
					"target %s: command killed by signal "
					"%d (it may have acted)%s%s", t->name,
					pr.term_signal, *tail ? ": " : "",
					tail);
		else if (pr.exit_code != 0)
			rc = sc_err_set(&out, SC_EDELIVERY,
					"target %s: command exit status %d%s%s",
					t->name, pr.exit_code,
					*tail ? ": " : "", tail);
		/* Killed by us or by a signal: it ran, for some time. */
		out.ambiguous = rc != 0 && (pr.timed_out || !pr.exited);
	}
	err_copy(err, &out);
	proc_result_dispose(&pr);
	return rc;
}
