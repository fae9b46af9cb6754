/*
 * cmd_release.c - `surecron release`: an operator's decision on a send held
 * after a crash (a target with `on_ambiguous: hold`, docs/internals/
 * delivery.md).
 *
 * A held (UNKNOWN) send may or may not have reached its target. The
 * operator looks at the receiver and says which: --arrived makes it SENT
 * (the send guard: never sent again), --resend makes it FAILED (the next
 * attempt sends it) after a "duplicate" ledger row declares that resend:
 * a copy sent before the decision may still land after it (a worker
 * paused past its lease), which no look at the receiver can rule out. If the slot's job died of the hold, it is made READY
 * again (fresh attempt budget, attempt numbers going on) so a worker
 * finishes the slot: resends what is left from the outbox and writes the
 * slot marker. Tasks never run again. Without a decision, prints the
 * slot's send states.
 *
 * The decision is part of the record: a "decision" ledger row (attempt 0,
 * it ends no attempt) says which target of which slot, what was decided,
 * by whom (--by NAME, else $SUDO_USER, else the user running it) and when.
 * Order: the send state is changed first (so a row always stands for a
 * decision that took effect), then the row, then the job is revived (so
 * the row comes before the attempts it causes). A row that cannot be
 * written fails the command (exit 1) and says the decision took effect.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "release.h"
#include "store.h"

static const char *state_name(enum send_state s)
{
	return s == SEND_UNKNOWN ? "unknown (may have arrived)"
				 : store_send_state_name(s);
}

static void print_states(struct store *s, const struct schedule_spec *sc,
			 int64_t slot_ms)
{
	for (size_t i = 0; i < sc->n_targets; i++) {
		struct outbox_entry e = {0};
		int rc = store_outbox_get(s, sc->name, slot_ms, sc->targets[i], &e,
					  NULL);
		cli_out(stdout, "%-24s %s (tries %d)\n", sc->targets[i],
			rc == 0 ? state_name(e.state) : "none", rc == 0 ? e.n_tries : 0);
		store_outbox_entry_dispose(&e);
	}
}

int cmd_release(int argc, char **argv)
{
	const char *path = "surecron.yaml", *pos[3] = {0}, *by = NULL;
	int n_pos = 0, decision = -1; /* 1 arrived, 0 resend */
	struct config *c = NULL;
	struct store *s = NULL;
	struct sc_err err = {0};
	int64_t slot_ms;
	int code = EXIT_FAIL;

	for (int i = 1; i < argc; i++) {
		int r = cli_opt_config("release", argc, argv, &i, &path);
		if (r < 0)
			return -r;
		if (r)
			continue;
		r = cli_opt_value("release", argc, argv, &i, NULL, "--by", &by);
		if (r < 0)
			return -r;
		if (r) {
			if (!*by || strlen(by) > 64)
				return cli_usage_error("release", "--by: a name "
						       "of 1 to 64 characters");
			continue;
		}
		if (strcmp(argv[i], "--arrived") == 0 ||
		    strcmp(argv[i], "--resend") == 0) {
			int d = argv[i][2] == 'a';
			/* Two different answers about one send: refuse rather
			 * than let the last one win silently. */
			if (decision >= 0 && decision != d)
				return cli_usage_error("release", "--arrived and "
						       "--resend exclude each "
						       "other");
			decision = d;
		} else if (argv[i][0] == '-') {
			return cli_usage_error("release", "unknown option '%s'",
					       argv[i]);
		} else if (n_pos < 3) {
			pos[n_pos++] = argv[i];
		} else {
			return cli_usage_error("release", "unexpected argument "
					       "'%s'", argv[i]);
		}
	}
	if (n_pos < 2 || (decision >= 0 && n_pos < 3))
		return cli_usage_error("release", "need SCHEDULE SLOT%s",
				       decision >= 0 ? " TARGET" : "");
	if (clock_parse_iso(pos[1], &slot_ms, &err) != 0)
		return cli_usage_error("release", "SLOT: %s", err.msg);
	cli_setup_logging(SC_LOG_WARN);
	if (config_load(path, &c, &err) != 0)
		return cli_fail(EXIT_USAGE, "%s", err.msg);
	const struct schedule_spec *sc = config_schedule(c, pos[0]);
	if (!sc) {
		code = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", pos[0], path);
		goto done;
	}
	if ((code = cli_store_open(c->store_url, path, false, &s)) != EXIT_OK)
		goto done;
	if (decision < 0) {
		print_states(s, sc, slot_ms);
		code = EXIT_OK;
		goto done;
	}
	struct release_result rr;
	char who[128];
	cli_operator_name(by, who, sizeof(who));
	int rc = release_decide(s, sc, slot_ms, pos[2], decision == 1, who,
				"surecron release",
				sc_clock_now_ms(sc_clock_real()), &rr, &err);
	if (rr.decided)
		cli_out(stdout, "%s: %s\n", pos[2], decision == 1
			? "marked sent (it will not be sent again)"
			: "marked failed (the next attempt sends it; a "
			  "duplicate row declares the possible second copy)");
	if (rc != 0) {
		/* Refused before anything changed: a wrong name or a send
		 * that is not held is the operator's (exit 2). */
		code = cli_fail(!rr.decided && (rc == SC_ENOENT ||
						rc == SC_ESTATE)
				? EXIT_USAGE : EXIT_FAIL, "%s", err.msg);
		goto done;
	}
	if (rr.job_revived)
		cli_out(stdout, "job %lld: ready again from attempt %d; a worker "
			"will finish the slot\n", (long long)rr.job_id,
			rr.next_attempt);
	code = EXIT_OK;
done:
	store_close(s);
	config_free(c);
	return code;
}
