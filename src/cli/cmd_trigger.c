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
 *
 * Backfill, `trigger SCHEDULE --from T --until T [--dry-run]`: every slot
 * of the schedule in [from, until) (its final expression, in its zone)
 * that has no job yet is triggered as above; a slot with a job (queued,
 * running, done or lost) or a marker is listed and left alone, so running
 * the same range twice enqueues nothing the second time. At most
 * BACKFILL_MAX slots per call: a larger range is refused before anything
 * is written, saying how many slots it holds. --dry-run writes nothing.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "prune.h"
#include "queue.h"
#include "scheduler.h"
#include "store.h"

/* Slots one backfill call may enqueue; counting a range stops at
 * BACKFILL_COUNT_CAP, so a per-second schedule over years answers fast. */
#define BACKFILL_MAX 1000
#define BACKFILL_COUNT_CAP 1000000

/* Counts the slots of sc in [from, until), up to BACKFILL_COUNT_CAP. */
static int backfill_count(const struct schedule_spec *sc, int64_t from,
			  int64_t until, size_t *n, struct sc_err *err)
{
	int64_t t = from - 1;

	*n = 0;
	while (*n < BACKFILL_COUNT_CAP) {
		int rc = sc_cron_next(sc->expr, sc->zone, t, &t, err);
		if (rc == SC_ENEVER)
			return 0;
		if (rc)
			return rc;
		if (t >= until)
			return 0;
		(*n)++;
	}
	return 0;
}

/* One slot of a backfill: what it has, what is done (or would be). */
static int backfill_slot(struct cli_state *st, const struct schedule_spec *sc,
			 int64_t slot, bool dry, size_t *n_new, size_t *n_kept)
{
	struct store_job job;
	struct sc_err err = {0};
	char t[CLOCK_ISO_MAX];
	bool marked = false, created = false;
	int64_t id = 0;
	int rc = store_job_find(st->store, sc->name, slot, &job, &err);

	clock_format_utc(slot, t);
	if (rc == 0) {
		(*n_kept)++;
		cli_out(stdout, "%s slot %s: job %lld %s, left alone\n",
			sc->name, t, (long long)job.id,
			queue_state_name(job.state));
		return EXIT_OK;
	}
	if (rc != SC_ENOENT)
		return cli_fail(EXIT_FAIL, "%s slot %s: %s", sc->name, t,
				err.msg);
	if (store_slot_is_marked(st->store, sc->name, slot, &marked, &err))
		return cli_fail(EXIT_FAIL, "%s slot %s: %s", sc->name, t,
				err.msg);
	if (marked) {
		(*n_kept)++;
		cli_out(stdout, "%s slot %s: completed (marker kept), left "
			"alone\n", sc->name, t);
		return EXIT_OK;
	}
	if (dry) {
		(*n_new)++;
		cli_out(stdout, "%s slot %s: would be enqueued\n", sc->name, t);
		return EXIT_OK;
	}
	if (queue_trigger(st->store, sc->name, slot, spec_policy(sc), &id,
			  &created, &err))
		return cli_fail(err.code == SC_ESTATE ? EXIT_USAGE : EXIT_FAIL,
				"%s slot %s: %s", sc->name, t, err.msg);
	*n_new += created;
	*n_kept += !created;
	cli_out(stdout, "job %lld: %s slot %s, %s\n", (long long)id, sc->name,
		t, created ? "new, due now" : "already queued, left alone");
	return EXIT_OK;
}

/* trigger --from --until: see the top of this file. */
static int backfill(struct cli_state *st, const struct schedule_spec *sc,
		    int64_t from, int64_t until, bool dry, int64_t floor_ms)
{
	struct sc_err err = {0};
	char t1[CLOCK_ISO_MAX], t2[CLOCK_ISO_MAX];
	size_t n = 0, n_new = 0, n_kept = 0;
	int64_t t = from - 1;
	int r;

	clock_format_utc(from, t1);
	clock_format_utc(until, t2);
	if (until <= from)
		return cli_usage_error("trigger", "--until (%s) must be after "
				       "--from (%s)", t2, t1);
	if (from < floor_ms)
		return cli_fail(EXIT_USAGE, "%s: --from %s is older than the "
				"retention: its slots' records may be pruned",
				sc->name, t1);
	if (backfill_count(sc, from, until, &n, &err))
		return cli_fail(EXIT_FAIL, "%s: %s", sc->name, err.msg);
	if (n > BACKFILL_MAX)
		return cli_fail(EXIT_USAGE, "%s: %s%zu slots in [%s, %s); at "
				"most %d per call: split the range", sc->name,
				n >= BACKFILL_COUNT_CAP ? "at least " : "", n,
				t1, t2, BACKFILL_MAX);
	if ((r = cli_state_store(st)))
		return r;
	for (size_t i = 0; i < n; i++) {
		if (sc_cron_next(sc->expr, sc->zone, t, &t, &err))
			return cli_fail(EXIT_FAIL, "%s: %s", sc->name, err.msg);
		if ((r = backfill_slot(st, sc, t, dry, &n_new, &n_kept)))
			return r;
	}
	cli_out(stdout, "%s: %zu slots in [%s, %s): %zu %s, %zu left "
		"alone%s\n", sc->name, n, t1, t2, n_new,
		dry ? "would be enqueued" : "enqueued", n_kept,
		dry ? " (dry run: nothing written)" : "");
	return EXIT_OK;
}

int cmd_trigger(int argc, char **argv)
{
	const char *path = NULL, *name = NULL, *slot_arg = NULL;
	const char *from_arg = NULL, *until_arg = NULL;
	bool dry = false;
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
		if ((r = cli_opt_value("trigger", argc, argv, &i, NULL,
					"--from", &from_arg)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("trigger", argc, argv, &i, NULL,
					"--until", &until_arg)) < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(argv[i], "--dry-run") == 0)
			dry = true;
		else if (argv[i][0] == '-')
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
	if ((from_arg || until_arg) && (!from_arg || !until_arg))
		return cli_usage_error("trigger", "--from and --until go "
				       "together");
	if (from_arg && slot_arg)
		return cli_usage_error("trigger", "--slot and --from/--until "
				       "exclude each other");
	if (dry && !from_arg)
		return cli_usage_error("trigger", "--dry-run goes with --from "
				       "and --until");
	int64_t from_ms = 0, until_ms = 0;
	if (from_arg && ((r = cli_parse_time("trigger", "--from", from_arg,
					     now_ms, &from_ms)) ||
			 (r = cli_parse_time("trigger", "--until", until_arg,
					     now_ms, &until_ms))))
		return r;
	/* A manual slot on a whole second, so it prints and parses back. */
	slot_ms = now_ms - now_ms % 1000;
	if (slot_arg && (r = cli_parse_time("trigger", "--slot", slot_arg,
					    now_ms, &slot_ms)))
		return r;
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	/* A first install triggers before the daemon's first start (the
	 * README does): the store may be made here, with a note. */
	st.make_store = true;
	const struct schedule_spec *sc = config_schedule(st.cfg, name);
	if (!sc) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", name, st.path);
		goto done;
	}
	if (from_arg) {
		r = backfill(&st, sc, from_ms, until_ms, dry,
			     prune_trigger_floor(st.cfg, now_ms));
		goto done;
	}
	/* A slot past retention.jobs may have lost its job row and send
	 * guards to prune: running it could deliver it twice. */
	if (slot_ms < prune_trigger_floor(st.cfg, now_ms)) {
		char d[CLOCK_DUR_MAX];
		r = cli_fail(EXIT_USAGE, "%s slot %s is older than the "
			     "retention (%s): its record may be pruned",
			     sc->name, clock_format_utc(slot_ms, t),
			     clock_format_duration(st.cfg->retention_jobs_ms, d,
					    sizeof(d)));
		goto done;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	if (queue_trigger(st.store, sc->name, slot_ms, spec_policy(sc), &job_id,
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
