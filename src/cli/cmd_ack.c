/*
 * cmd_ack.c - `surecron ack [--config FILE] [--note TEXT] [--by NAME]
 * SCHEDULE SLOT`: an operator has seen a lost or missed slot and takes it
 * from here.
 *
 * Every OPEN alert of SCHEDULE whose slots hold SLOT is closed (ACKED):
 * it is not sent again (realert stops), `ledger --lost` no longer counts
 * its slots, and an "acked" ledger row records who, when and the note.
 * A lost or missed slot with no open alert (raised by an older version,
 * or `alerts: on` left its reason out) still gets its "acked" row. A slot
 * with nothing to acknowledge is exit 1, so a typo in SLOT is not taken
 * for success.
 */
#include <stdio.h>
#include <string.h>

#include "alert.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "store.h"

#define NOTE_MAX 200

int cmd_ack(int argc, char **argv)
{
	const char *path = NULL, *pos[2] = {0}, *note = NULL, *by = NULL;
	struct cli_state st;
	struct sc_err err = {0};
	int64_t now_ms = sc_clock_now_ms(sc_clock_real()), slot_ms;
	char who[128], iso[CLOCK_ISO_MAX];
	size_t n_pos = 0, n = 0;
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("ack", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if ((r = cli_opt_value("ack", argc, argv, &i, NULL, "--note",
				       &note)) < 0)
			return -r;
		if (r) {
			if (strlen(note) > NOTE_MAX)
				return cli_usage_error("ack", "--note: at most "
						       "%d bytes", NOTE_MAX);
			continue;
		}
		if ((r = cli_opt_value("ack", argc, argv, &i, NULL, "--by",
				       &by)) < 0)
			return -r;
		if (r) {
			if (!*by || strlen(by) > 64)
				return cli_usage_error("ack", "--by: a name of "
						       "1 to 64 characters");
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage_error("ack", "unknown option '%s'",
					       argv[i]);
		if (n_pos == 2)
			return cli_usage_error("ack", "unexpected argument "
					       "'%s'", argv[i]);
		pos[n_pos++] = argv[i];
	}
	if (n_pos < 2)
		return cli_usage_error("ack", "need SCHEDULE SLOT");
	if ((r = cli_parse_time("ack", "SLOT", pos[1], now_ms, &slot_ms)))
		return r;
	if ((r = cli_state_open(path, false, &st)))
		goto done;
	/* A node's runner or skew alert (alert.h) is named runner:HOST or
	 * skew:..., which no schedule can be. */
	if (strncmp(pos[0], ALERT_RUNNER_PREFIX,
		    strlen(ALERT_RUNNER_PREFIX)) != 0 &&
	    strncmp(pos[0], ALERT_SKEW_PREFIX, strlen(ALERT_SKEW_PREFIX)) != 0 &&
	    !config_schedule(st.cfg, pos[0])) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", pos[0],
			     st.path);
		goto done;
	}
	if ((r = cli_state_store(&st)))
		goto done;
	cli_operator_name(by, who, sizeof(who));
	if (alert_ack(st.store, pos[0], slot_ms, note, who, &n, &err) != 0) {
		r = cli_fail(EXIT_FAIL, "%s: %s", pos[0], err.msg);
		goto done;
	}
	cli_out(stdout, "%s %s: acknowledged (%zu alert%s closed) by %s\n",
		pos[0], clock_format_utc(slot_ms, iso), n, n == 1 ? "" : "s",
		who);
	r = EXIT_OK;
done:
	cli_state_close(&st);
	return r;
}
