/*
 * cmd_pause.c - `surecron pause SCHEDULE (--for DUR | --until T)
 * [--note TEXT] [--config FILE]` and `surecron resume SCHEDULE
 * [--config FILE]`: a maintenance window for one schedule.
 *
 * The pause is a row of the store (store_pause_set), so every node's
 * scheduler and every CLI sees it: each slot of SCHEDULE inside the
 * window gets a "paused" ledger row (not missed, not lost, not run late
 * afterwards); `surecron trigger` still runs it by hand. An expiry is
 * required and at most 30 days away (STORE_PAUSE_MAX_MS), so a forgotten
 * pause ends by itself. Who paused is the operator's user name
 * (cli_operator_name: the user sudo ran us for, else the real user).
 * `resume` ends a running pause now; the window stays recorded up to
 * then, so a node that was down catches up nothing inside it.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "store.h"

#define NOTE_MAX (STORE_PAUSE_NOTE_MAX - 1)

int cmd_pause(int argc, char **argv)
{
	const char *path = NULL, *name = NULL, *note = NULL, *dur = NULL,
		   *until = NULL;
	struct cli_state st = {0};
	struct store_pause p = {.from_ms = 0};
	struct sc_err err = {0};
	int64_t now_ms = sc_clock_now_ms(sc_clock_real()), ms = 0;
	char iso[CLOCK_ISO_MAX];
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("pause", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("pause", argc, argv, &i, NULL, "--note",
				       &note)) < 0)
			return -r;
		if (r) {
			if (strlen(note) > NOTE_MAX)
				return cli_usage_error("pause", "--note: at "
						       "most %d bytes",
						       NOTE_MAX);
			continue;
		}
		if ((r = cli_opt_value("pause", argc, argv, &i, NULL, "--for",
				       &dur)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("pause", argc, argv, &i, NULL,
				       "--until", &until)) < 0)
			return -r;
		if (r)
			continue;
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage_error("pause", "unknown option '%s'",
					       argv[i]);
		if (name)
			return cli_usage_error("pause", "unexpected argument "
					       "'%s'", argv[i]);
		name = argv[i];
	}
	if (!name)
		return cli_usage_error("pause", "need SCHEDULE");
	if (!dur == !until)
		return cli_usage_error("pause", "give one of --for DUR or "
				       "--until T (an expiry is required)");
	if (dur) {
		if (clock_parse_duration(dur, &ms, &err) != 0 || ms <= 0)
			return cli_usage_error("pause", "--for: '%s' is not a "
					       "duration such as 2h or 3d",
					       dur);
		p.until_ms = now_ms + ms;
	} else {
		if (clock_parse_iso(until, &p.until_ms, &err) != 0)
			return cli_usage_error("pause", "--until: '%s' is not "
					       "an ISO 8601 instant with Z or "
					       "an offset", until);
		if (p.until_ms <= now_ms)
			return cli_usage_error("pause", "--until: %s is not in "
					       "the future", until);
	}
	if (p.until_ms - now_ms > STORE_PAUSE_MAX_MS)
		return cli_usage_error("pause", "a pause lasts at most 30 days");
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	if (!config_schedule(st.cfg, name)) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", name,
			     st.path);
		goto done;
	}
	/* A pause set before the daemon's first start is kept for it. */
	st.make_store = true;
	if ((r = cli_state_store(&st)))
		goto done;
	snprintf(p.schedule, sizeof(p.schedule), "%s", name);
	p.from_ms = now_ms;
	cli_operator_name(NULL, p.by, sizeof(p.by));
	snprintf(p.note, sizeof(p.note), "%s", note ? note : "");
	if (store_pause_set(st.store, &p, &err) != 0) {
		r = cli_fail(EXIT_FAIL, "%s: %s", name, err.msg);
		goto done;
	}
	cli_out(stdout, "%s: paused until %s by %s\n", name,
		clock_format_utc(p.until_ms, iso), p.by);
	r = EXIT_OK;
done:
	cli_state_close(&st);
	return r;
}

int cmd_resume(int argc, char **argv)
{
	const char *path = NULL, *name = NULL;
	struct cli_state st = {0};
	struct sc_err err = {0};
	int64_t now_ms = sc_clock_now_ms(sc_clock_real());
	bool ended = false;
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("resume", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage_error("resume", "unknown option '%s'",
					       argv[i]);
		if (name)
			return cli_usage_error("resume", "unexpected argument "
					       "'%s'", argv[i]);
		name = argv[i];
	}
	if (!name)
		return cli_usage_error("resume", "need SCHEDULE");
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	if (!config_schedule(st.cfg, name)) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", name,
			     st.path);
		goto done;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	if (store_pause_end(st.store, name, now_ms, &ended, &err) != 0) {
		r = cli_fail(EXIT_FAIL, "%s: %s", name, err.msg);
		goto done;
	}
	if (!ended) {
		r = cli_fail(EXIT_FAIL, "%s: not paused", name);
		goto done;
	}
	cli_out(stdout, "%s: resumed\n", name);
	r = EXIT_OK;
done:
	cli_state_close(&st);
	return r;
}
