/*
 * cmd_trigger.c - `surecron trigger [--config FILE] [--slot T] SCHEDULE`:
 * a manual slot, run by the daemon (or `run --once`) as soon as a worker
 * is free.
 *
 * The slot is now (to the second) unless --slot names one, for instance a
 * lost slot to run again. queue_trigger keeps one job per (schedule, slot):
 * a second trigger of the same slot finds the existing job and says so; a
 * DEAD job of that slot is revived; a DONE slot is refused (exit 2), since
 * running it again would deliver it twice, and so is a slot with a marker
 * but no job (prune took the job row) and, with retention.jobs set, a
 * slot older than it (its record may be pruned: prune.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "prune.h"
#include "queue.h"
#include "store.h"

int cmd_trigger(int argc, char **argv)
{
	const char *path = NULL, *name = NULL, *slot_arg = NULL;
	struct cli_state st;
	struct sc_err err = {0};
	int64_t now_ms = sc_clock_now_ms(sc_clock_real()), slot_ms, job_id = 0;
	bool created = false;
	char t[CLOCK_ISO_MAX];
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("trigger", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("trigger", argc, argv, &i, NULL,
					"--slot", &slot_arg)) < 0)
			return -r;
		if (r)
			continue;
		if (argv[i][0] == '-')
			return cli_usage_error("trigger", "unknown option '%s'",
					       argv[i]);
		else if (!name)
			name = argv[i];
		else
			return cli_usage_error("trigger", "unexpected argument "
					       "'%s'", argv[i]);
	}
	if (!name)
		return cli_usage_error("trigger", "missing the schedule name");
	/* A manual slot on a whole second, so it prints and parses back. */
	slot_ms = now_ms - now_ms % 1000;
	if (slot_arg && (r = cli_parse_time("trigger", "--slot", slot_arg,
					    now_ms, &slot_ms)))
		return r;
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	const struct schedule_spec *sc = config_schedule(st.cfg, name);
	if (!sc) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", name, st.path);
		goto done;
	}
	/* A slot past retention.jobs may have lost its job row and send
	 * guards to prune: running it could deliver it twice. */
	if (slot_ms < prune_trigger_floor(st.cfg, now_ms)) {
		char d[32];
		r = cli_fail(EXIT_USAGE, "%s slot %s is older than the "
			     "retention (%s): its record may be pruned",
			     sc->name, clock_format_utc(slot_ms, t),
			     cli_format_dur(st.cfg->retention_jobs_ms, d,
					    sizeof(d)));
		goto done;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	if (queue_trigger(st.store, sc->name, slot_ms, &sc->policy, &job_id,
			  &created, &err) != 0) {
		r = cli_fail(err.code == SC_ESTATE ? EXIT_USAGE : EXIT_FAIL,
			     "%s slot %s: %s", sc->name,
			     clock_format_utc(slot_ms, t), err.msg);
		goto done;
	}
	struct store_job job;
	const char *state = "ready";
	if (store_job_get(st.store, job_id, &job, NULL) == 0)
		state = queue_state_name(job.state);
	cli_out(stdout,
		"job %lld: %s slot %s, %s (%s)\n", (long long)job_id, sc->name,
		clock_format_utc(slot_ms, t),
		created ? "new, due now" : "already queued", state);
	r = EXIT_OK;
done:
	cli_state_close(&st);
	return r;
}
