/*
 * cmd_run.c - `surecron run [--config FILE] [--once]`: the daemon.
 *
 * Signals are blocked in every thread and taken by one sigwait thread,
 * which forwards them to the daemon (SIGTERM/SIGINT: stop, SIGHUP and
 * SIGUSR1: reload), so no daemon code runs in a signal handler. They are
 * blocked first thing, before the config is read: daemon_new already
 * starts threads (the heartbeat pinger, the config's read-ahead), and a
 * thread that took a stop signal with its default action would end the
 * process with no graceful stop (issue 42); the library's threads block
 * them themselves as well (thread.h).
 *
 * Test seam (test builds only, SURECRON_FAILPOINTS): SURECRON_TEST_CLOCK=ISO8601
 * starts the daemon's clock at that instant, running at real speed.
 * SURECRON_TEST_CLOCK_RATE=N makes it run N times faster (every timed wait
 * of the daemon shrinks by N); SURECRON_TEST_CLOCK_ANCHOR=ISO8601 is the
 * real instant at which the clock reads SURECRON_TEST_CLOCK (default: the
 * daemon's start), so several daemons, and a restarted one, share a clock.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../clock.h"
#include "../daemon.h"
#include "../log.h"
#include "../proc.h"
#include "cli.h"

struct sigctx {
	sigset_t set;
	struct daemon *d;
	atomic_bool done; /* the daemon ended: the next SIGUSR1 is our cue */
};

static void *signal_main(void *arg)
{
	struct sigctx *sc = arg;

	for (;;) {
		int sig = 0;
		if (sigwait(&sc->set, &sig) != 0)
			continue;
		/* SIGUSR1 from outside is a reload like SIGHUP: a tool that
		 * sends it must not take the signal thread away (after which
		 * every stop signal would be left pending, unserved). */
		if (sig == SIGUSR1 && atomic_load(&sc->done))
			return NULL;
		if (sig == SIGHUP || sig == SIGUSR1)
			daemon_reload(sc->d);
		else
			daemon_stop(sc->d);
	}
}

int cmd_run(int argc, char **argv)
{
	struct daemon_opts o = {.config_path = "./surecron.yaml"};
	struct sc_clock *clock = NULL;
	struct daemon *d = NULL;
	struct sc_err err = {0};

	for (int i = 1; i < argc; i++) {
		int r = cli_opt_config("run", argc, argv, &i, &o.config_path);
		if (r < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(argv[i], "--once") == 0) {
			o.once = true;
		} else if (argv[i][0] == '-') {
			return cli_usage_error("run", "unknown option '%s'",
					       argv[i]);
		} else {
			return cli_usage_error("run", "unexpected argument '%s'",
					       argv[i]);
		}
	}
	cli_setup_logging(SC_LOG_INFO);
#ifdef SURECRON_FAILPOINTS
	const char *tc = getenv("SURECRON_TEST_CLOCK");
	if (tc && *tc) {
		int64_t at = 0;
		if (clock_parse_iso(tc, &at, &err) != 0)
			return cli_fail(EXIT_USAGE, "SURECRON_TEST_CLOCK: %s",
					err.msg);
		const char *rs = getenv("SURECRON_TEST_CLOCK_RATE");
		const char *as = getenv("SURECRON_TEST_CLOCK_ANCHOR");
		long long rate = rs && *rs ? strtoll(rs, NULL, 10) : 1;
		int64_t anchor = sc_clock_now_ms(sc_clock_real());
		if (rate < 1 || rate > 10000)
			return cli_fail(EXIT_USAGE, "SURECRON_TEST_CLOCK_RATE: "
					"1 to 10000");
		if (as && *as && clock_parse_iso(as, &anchor, &err) != 0)
			return cli_fail(EXIT_USAGE,
					"SURECRON_TEST_CLOCK_ANCHOR: %s",
					err.msg);
		if (rate > 1)
			clock = clock_scaled_new(at, anchor, rate);
		else
			clock = sc_clock_offset_new(at - anchor);
		if (!clock)
			return cli_fail(EXIT_FAIL, "out of memory");
		o.clock = clock;
	}
#endif
	struct sigctx sc = {.d = NULL};
	pthread_t sig_thread;
	bool have_sig = false;
	sigemptyset(&sc.set);
	sigaddset(&sc.set, SIGTERM);
	sigaddset(&sc.set, SIGINT);
	sigaddset(&sc.set, SIGHUP);
	sigaddset(&sc.set, SIGUSR1);
	atomic_init(&sc.done, false);
	/* Before any thread starts (daemon_new starts some), so every
	 * thread inherits the mask; a signal that comes meanwhile waits,
	 * pending, for the signal thread below. Task children get a clean
	 * mask from proc.c. --once keeps the default actions: a signal ends
	 * it, and whatever it held is recovered by lease expiry like after a
	 * crash. */
	if (!o.once)
		pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
	if (daemon_new(&o, &d, &err) != 0) {
		sc_clock_free(clock);
		return cli_fail(err.code == SC_ECONFIG ? EXIT_USAGE : EXIT_FAIL,
				"%s", err.msg);
	}

	/* Task runs go through the launcher (src/proc.c): without it each
	 * run would start this program once more for its reaper. Spawned,
	 * not forked, so it holds none of the config loaded above. */
	if (proc_launcher_start(&err) != 0) {
		char q[SC_ERR_MSG_MAX + 8];
		LOG(SC_LOG_WARN, "daemon", "event=launcher_unavailable "
		    "error=%s", log_quote(q, sizeof(q), err.msg));
		err = (struct sc_err){0};
	}

	sc.d = d;
	if (!o.once) {
		if (pthread_create(&sig_thread, NULL, signal_main, &sc) == 0)
			have_sig = true;
		else /* no one would take them: keep the default actions */
			pthread_sigmask(SIG_UNBLOCK, &sc.set, NULL);
	}

	int rc = daemon_run(d, &err);
	if (have_sig) {
		atomic_store(&sc.done, true);
		pthread_kill(sig_thread, SIGUSR1);
		pthread_join(sig_thread, NULL);
	}
	daemon_free(d);
	proc_launcher_stop();
	sc_clock_free(clock);
	if (rc < 0)
		return cli_fail(EXIT_FAIL, "%s", err.msg);
	return rc ? EXIT_FAIL : EXIT_OK;
}
