/*
 * cmd_retry.c - `surecron retry [--config FILE] JOB`: a dead job (its slot
 * lost) runs again, READY now with a fresh attempt budget (the schedule's
 * policy); its attempt numbers go on from the last one.
 *
 * Only a DEAD job can be retried: a job that is waiting, running or done
 * is refused with its state (exit 2), as is an id with no job. The lost
 * row stays in the ledger; the new attempts follow it there.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "queue.h"
#include "store.h"

int cmd_retry(int argc, char **argv)
{
	const char *path = NULL, *arg = NULL;
	struct cli_state st;
	struct sc_err err = {0};
	struct store_job job;
	char t[CLOCK_ISO_MAX], *end;
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("retry", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if (argv[i][0] == '-')
			return cli_usage_error("retry", "unknown option '%s'",
					       argv[i]);
		if (arg)
			return cli_usage_error("retry", "unexpected argument "
					       "'%s'", argv[i]);
		arg = argv[i];
	}
	if (!arg)
		return cli_usage_error("retry", "missing the job id");
	errno = 0;
	long long id = strtoll(arg, &end, 10);
	if (!isdigit((unsigned char)*arg) || *end || errno || id <= 0)
		return cli_usage_error("retry", "'%s' is not a job id (a "
				       "number, as `surecron ledger` shows)",
				       arg);
	if ((r = cli_state_open(path, true, &st)))
		goto done;
	int rc = store_job_get(st.store, id, &job, &err);
	if (rc == SC_ENOENT) {
		r = cli_fail(EXIT_USAGE, "no job %lld", id);
		goto done;
	}
	if (rc != 0) {
		r = cli_fail(EXIT_FAIL, "job %lld: %s", id, err.msg);
		goto done;
	}
	if (job.state != JOB_DEAD) {
		r = cli_fail(EXIT_USAGE, "job %lld (%s slot %s) is %s, not dead: "
			     "only a dead job can be retried", id, job.schedule,
			     clock_format_utc(job.slot_ms, t),
			     queue_state_name(job.state));
		goto done;
	}
	/* The budget: the schedule's policy as the config has it now (a
	 * schedule gone from the config: as many as the job had). */
	int budget = 0;
	const struct schedule_spec *sc = config_schedule_of(st.cfg, job.schedule);
	if (sc)
		budget = spec_policy(sc)->attempts;
	sc_err_clear(&err);
	rc = queue_retry_dead(st.store, id, budget, &err);
	if (rc != 0) {
		r = cli_fail(rc == SC_ENOENT || rc == SC_ESTATE ? EXIT_USAGE
							       : EXIT_FAIL,
			     "job %lld: %s", id, err.msg);
		goto done;
	}
	if (budget <= 0)
		budget = job.policy.attempts;
	cli_out(stdout, "job %lld: %s slot %s ready again (%d more attempt%s, "
		"from attempt %d)\n", id, job.schedule,
		clock_format_utc(job.slot_ms, t), budget, budget > 1 ? "s" : "",
		job.attempts + 1);
	r = EXIT_OK;
done:
	cli_state_close(&st);
	return r;
}
