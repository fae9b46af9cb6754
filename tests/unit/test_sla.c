/*
 * test_sla.c - the timing checks of `sla:` (issue 14), on every backend:
 * alert_tick driven directly on a virtual clock, with a config loaded by
 * config_load from a small file and a real file target as the alert
 * receiver (each copy is one JSON line).
 *
 *   - late fires once when start_within has passed (not at it), clears
 *     once ("recovered") when the slot's first attempt begins;
 *   - overrun fires once per overrunning attempt and clears when that
 *     attempt ends; the job is not touched;
 *   - stale fires once after success_within without a delivered slot and
 *     clears once at the next delivery;
 *   - a reason left out of `alerts: on` raises nothing;
 *   - two handles (two nodes) ticking at the same moment raise one alert
 *     per breach and send one copy per target;
 *   - store_sla_scan returns what the pass needs and no finished job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert.h"
#include "config.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define SEC 1000LL
#define MIN 60000LL
#define HOUR 3600000LL

struct fix {
	char dir[256];          /* the config and the alert file */
	char cfg_path[300];
	char alerts_path[300];
	struct sc_clock *clock;
	struct store *s;
	struct config *cfg;
};

/* sla: the schedule's sla line (e.g. "{start_within: 5m}"); on: the
 * `alerts: on` list. */
static void fix_open(void **state, struct fix *f, const char *sla,
		     const char *on)
{
	struct sc_err err = {0};

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "%s", tu_tmpdir());
	snprintf(f->cfg_path, sizeof(f->cfg_path), "%s/surecron.yaml", f->dir);
	snprintf(f->alerts_path, sizeof(f->alerts_path), "%s/alerts.jsonl",
		 f->dir);
	FILE *fp = fopen(f->cfg_path, "w");
	assert_non_null(fp);
	fprintf(fp, "store: %s\n"
		    "targets:\n"
		    "  pager: {kind: file, path: ./alerts.jsonl}\n"
		    "alerts: {targets: [pager], on: [%s]}\n"
		    "schedules:\n"
		    "  nightly:\n"
		    "    cron: \"0 3 * * *\"\n"
		    "    tz: UTC\n"
		    "    sla: %s\n"
		    "    tasks:\n"
		    "      - {name: run, shell: \"true\"}\n"
		    /* Tighter checks, never due: the pass reads with the
		     * smallest values, each row is held against its own. */
		    "  other:\n"
		    "    cron: \"0 3 29 2 *\"\n"
		    "    sla: {start_within: 1s, max_runtime: 1s, "
		    "success_within: 1s}\n"
		    "    tasks:\n"
		    "      - {name: run, shell: \"true\"}\n",
		tb_url(state), on, sla);
	fclose(fp);
	if (config_load(f->cfg_path, &f->cfg, &err) != 0)
		fail_msg("config_load: %s", err.msg);
	f->clock = sc_clock_virtual_new(T0);
	f->s = tb_open(state, f->clock);
}

static void fix_close(struct fix *f)
{
	store_close(f->s);
	sc_clock_free(f->clock);
	config_free(f->cfg);
	tu_rmrf(f->dir);
}

static struct alert_report tick_on(struct fix *f, struct store *s)
{
	struct alert_ctx a = {.store = s, .config = f->cfg, .clock = f->clock};
	struct alert_report rep;
	struct sc_err err = {0};

	if (alert_tick(&a, &rep, &err) != 0)
		fail_msg("alert_tick: %s", err.msg);
	return rep;
}

static struct alert_report tick(struct fix *f)
{
	return tick_on(f, f->s);
}

/* Alerts of reason (NULL: any) and status (-1: any). */
static size_t n_alerts(struct fix *f, const char *reason, int status)
{
	struct store_alert *v = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(store_alert_list(f->s, NULL, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if ((!reason || strcmp(v[i].reason, reason) == 0) &&
		    (status < 0 || (int)v[i].status == status))
			k++;
	sc_free(v);
	return k;
}

static size_t n_rows(struct fix *f, const char *outcome)
{
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(f->s, &lf, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

/* Copies that reached the file target with "reason":"<reason>". */
static size_t n_copies(struct fix *f, const char *reason)
{
	static char buf[1 << 16];
	char needle[64];
	size_t k = 0;

	buf[0] = '\0';
	FILE *fp = fopen(f->alerts_path, "r");
	if (!fp)
		return 0;
	size_t got = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[got] = '\0';
	fclose(fp);
	snprintf(needle, sizeof(needle), "\"reason\":\"%s\"", reason);
	for (const char *p = buf; (p = strstr(p, needle)) != NULL; p++)
		k++;
	return k;
}

static const struct sc_retry_policy POLICY = {3, SC_BACKOFF_FIXED, MIN};

/* A scheduled job of nightly at slot, due at its slot. */
static int64_t enqueue(struct fix *f, int64_t slot)
{
	int64_t id = 0;

	assert_int_equal(store_job_enqueue(f->s, "nightly", slot, &POLICY,
					   slot, false, &id, NULL, NULL), 0);
	assert_int_equal(store_sched_last_set(f->s, "nightly", slot, NULL), 0);
	return id;
}

static struct store_job claim(struct fix *f)
{
	struct store_job j;
	size_t n = 0;

	assert_int_equal(store_job_claim(f->s, "w", 24 * HOUR, &j, 1, &n,
					 NULL), 0);
	assert_int_equal(n, 1);
	return j;
}

static void finish(struct fix *f, const struct store_job *j,
		   enum job_state to)
{
	struct ledger_row r = {0};

	assert_int_equal(store_job_finish(f->s, j->id, j->lease_token, to,
					  sc_clock_now_ms(f->clock), &r, NULL),
			 0);
	if (to == JOB_DONE)
		assert_int_equal(store_slot_mark(f->s, j->schedule, j->slot_ms,
						 NULL), 0);
}

/* ---- late ---------------------------------------------------------------- */

static void late_fires_once_and_clears_once(void **state)
{
	struct fix f;

	fix_open(state, &f, "{start_within: 5m}", "lost, missed, late");
	enqueue(&f, T0);
	sc_clock_set_ms(f.clock, T0 + 5 * MIN); /* at start_within: not yet */
	assert_int_equal(tick(&f).n_late, 0);
	assert_int_equal(n_alerts(&f, ALERT_REASON_LATE, -1), 0);
	sc_clock_set_ms(f.clock, T0 + 5 * MIN + 1);
	assert_int_equal(tick(&f).n_late, 1);
	sc_clock_advance_ms(f.clock, MIN);
	assert_int_equal(tick(&f).n_late, 0); /* once */
	assert_int_equal(n_alerts(&f, ALERT_REASON_LATE, ALERT_OPEN), 1);
	assert_int_equal(n_rows(&f, LEDGER_LATE), 1);
	assert_int_equal(n_copies(&f, "late"), 1);
	assert_int_equal(n_copies(&f, "recovered"), 0);

	struct store_job j = claim(&f); /* the slot starts */
	assert_int_equal(tick(&f).n_healed, 1);
	sc_clock_advance_ms(f.clock, MIN);
	assert_int_equal(tick(&f).n_healed, 0);
	assert_int_equal(n_alerts(&f, ALERT_REASON_LATE, ALERT_HEALED), 1);
	assert_int_equal(n_alerts(&f, ALERT_REASON_RECOVERED, -1), 1);
	assert_int_equal(n_copies(&f, "late"), 1);
	assert_int_equal(n_copies(&f, "recovered"), 1);
	/* Ending the attempt raises nothing more. */
	finish(&f, &j, JOB_DONE);
	tick(&f);
	assert_int_equal(n_alerts(&f, NULL, -1), 2);
	fix_close(&f);
}

/* ---- overrun ------------------------------------------------------------- */

static void overrun_fires_per_attempt_and_clears(void **state)
{
	struct fix f;

	fix_open(state, &f, "{max_runtime: 10m}", "overrun");
	enqueue(&f, T0);
	struct store_job j = claim(&f); /* attempt 1 at T0 */
	sc_clock_set_ms(f.clock, T0 + 10 * MIN);
	assert_int_equal(tick(&f).n_overrun, 0);
	sc_clock_set_ms(f.clock, T0 + 10 * MIN + 1);
	assert_int_equal(tick(&f).n_overrun, 1);
	sc_clock_advance_ms(f.clock, MIN);
	assert_int_equal(tick(&f).n_overrun, 0);
	assert_int_equal(n_rows(&f, LEDGER_OVERRUN), 1);
	assert_int_equal(n_copies(&f, "overrun"), 1);
	/* It is not stopped: the job is still the same attempt. */
	struct store_job now;
	assert_int_equal(store_job_get(f.s, j.id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_ACTIVE);
	assert_int_equal(now.attempts, 1);

	finish(&f, &j, JOB_READY); /* it fails: a retry is due now */
	assert_int_equal(tick(&f).n_healed, 1);
	assert_int_equal(n_copies(&f, "recovered"), 1);

	j = claim(&f); /* attempt 2 overruns too: a new alert */
	assert_int_equal(j.attempts, 2);
	sc_clock_advance_ms(f.clock, 10 * MIN + 1);
	assert_int_equal(tick(&f).n_overrun, 1);
	assert_int_equal(tick(&f).n_overrun, 0);
	assert_int_equal(n_alerts(&f, ALERT_REASON_OVERRUN, -1), 2);
	finish(&f, &j, JOB_DONE);
	assert_int_equal(tick(&f).n_healed, 1);
	assert_int_equal(tick(&f).n_healed, 0);
	assert_int_equal(n_alerts(&f, ALERT_REASON_OVERRUN, ALERT_HEALED), 2);
	assert_int_equal(n_copies(&f, "overrun"), 2);
	assert_int_equal(n_copies(&f, "recovered"), 2);
	fix_close(&f);
}

/* ---- stale --------------------------------------------------------------- */

static void stale_fires_once_and_clears_at_next_success(void **state)
{
	struct fix f;

	fix_open(state, &f, "{success_within: 1h}", "stale");
	enqueue(&f, T0);
	/* Never delivered: counts from its first start (the job, at T0). */
	sc_clock_set_ms(f.clock, T0 + 30 * MIN);
	struct store_job j = claim(&f);
	finish(&f, &j, JOB_DONE); /* delivered at T0 + 30m */
	sc_clock_set_ms(f.clock, T0 + 90 * MIN);
	assert_int_equal(tick(&f).n_stale, 0);
	sc_clock_set_ms(f.clock, T0 + 90 * MIN + 1);
	assert_int_equal(tick(&f).n_stale, 1);
	sc_clock_advance_ms(f.clock, HOUR);
	assert_int_equal(tick(&f).n_stale, 0);
	assert_int_equal(n_alerts(&f, ALERT_REASON_STALE, ALERT_OPEN), 1);
	assert_int_equal(n_rows(&f, LEDGER_STALE), 1);
	assert_int_equal(n_copies(&f, "stale"), 1);

	/* A failed attempt is no delivery. */
	enqueue(&f, T0 + 3 * HOUR);
	sc_clock_set_ms(f.clock, T0 + 3 * HOUR);
	j = claim(&f);
	finish(&f, &j, JOB_READY);
	assert_int_equal(tick(&f).n_healed, 0);
	j = claim(&f);
	finish(&f, &j, JOB_DONE);
	assert_int_equal(tick(&f).n_healed, 1);
	assert_int_equal(tick(&f).n_healed, 0);
	assert_int_equal(n_alerts(&f, ALERT_REASON_STALE, ALERT_HEALED), 1);
	assert_int_equal(n_copies(&f, "stale"), 1);
	assert_int_equal(n_copies(&f, "recovered"), 1);
	fix_close(&f);
}

static void stale_counts_from_first_start(void **state)
{
	struct fix f;

	fix_open(state, &f, "{success_within: 1h}", "stale");
	assert_int_equal(tick(&f).n_stale, 0); /* nothing ever due */
	enqueue(&f, T0); /* created at T0, never delivered */
	sc_clock_set_ms(f.clock, T0 + HOUR);
	assert_int_equal(tick(&f).n_stale, 0);
	sc_clock_set_ms(f.clock, T0 + HOUR + 1);
	assert_int_equal(tick(&f).n_stale, 1);
	struct store_alert *v = NULL;
	size_t n = 0;
	struct alert_filter af = {.open_only = true, .slot_ms = INT64_MIN,
				  .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	assert_int_equal(store_alert_list(f.s, &af, &v, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].slot_ms, T0);
	sc_free(v);
	fix_close(&f);
}

/* ---- alerts: on ---------------------------------------------------------- */

static void reason_left_out_raises_nothing(void **state)
{
	struct fix f;

	fix_open(state, &f, "{start_within: 1m, max_runtime: 1m, "
		 "success_within: 1m}", "lost, missed");
	enqueue(&f, T0);
	enqueue(&f, T0 + MIN);
	sc_clock_set_ms(f.clock, T0 + MIN);
	claim(&f); /* T0's slot runs, T0 + 1m's waits */
	sc_clock_set_ms(f.clock, T0 + HOUR);
	struct alert_report r = tick(&f);
	assert_int_equal(r.n_late + r.n_overrun + r.n_stale, 0);
	assert_int_equal(n_alerts(&f, NULL, -1), 0);
	assert_int_equal(n_rows(&f, LEDGER_LATE) + n_rows(&f, LEDGER_OVERRUN) +
			 n_rows(&f, LEDGER_STALE), 0);
	assert_int_equal(n_copies(&f, "late"), 0);
	fix_close(&f);
}

/* ---- two nodes ----------------------------------------------------------- */

struct node {
	struct fix *f;
	struct store *s;
	pthread_barrier_t *go;
	struct alert_report rep;
	int rc;
};

static void *node_main(void *arg)
{
	struct node *n = arg;
	struct alert_ctx a = {.store = n->s, .config = n->f->cfg,
			      .clock = n->f->clock};
	struct sc_err err = {0};

	pthread_barrier_wait(n->go);
	n->rc = alert_tick(&a, &n->rep, &err);
	return NULL;
}

static void two_nodes_one_alert_one_copy(void **state)
{
	struct fix f;
	struct node nodes[2];
	pthread_t th[2];
	pthread_barrier_t go;

	fix_open(state, &f, "{start_within: 5m, max_runtime: 5m, "
		 "success_within: 5m}", "late, overrun, stale");
	enqueue(&f, T0);
	enqueue(&f, T0 + MIN);
	sc_clock_set_ms(f.clock, T0 + MIN);
	claim(&f); /* T0 runs (overrun, stale); T0 + 1m waits (late) */
	sc_clock_set_ms(f.clock, T0 + HOUR);
	pthread_barrier_init(&go, NULL, 2);
	for (int i = 0; i < 2; i++) {
		nodes[i] = (struct node){.f = &f, .go = &go};
		nodes[i].s = tb_open(state, f.clock);
		assert_int_equal(pthread_create(&th[i], NULL, node_main,
						&nodes[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(nodes[i].rc, 0);
	}
	/* Whatever one of them left unsent goes in the next ticks. */
	tick_on(&f, nodes[0].s);
	tick_on(&f, nodes[1].s);
	assert_int_equal(nodes[0].rep.n_late + nodes[1].rep.n_late, 1);
	assert_int_equal(nodes[0].rep.n_overrun + nodes[1].rep.n_overrun, 1);
	assert_int_equal(nodes[0].rep.n_stale + nodes[1].rep.n_stale, 1);
	assert_int_equal(n_alerts(&f, ALERT_REASON_LATE, -1), 1);
	assert_int_equal(n_alerts(&f, ALERT_REASON_OVERRUN, -1), 1);
	assert_int_equal(n_alerts(&f, ALERT_REASON_STALE, -1), 1);
	assert_int_equal(n_rows(&f, LEDGER_LATE), 1);
	assert_int_equal(n_rows(&f, LEDGER_OVERRUN), 1);
	assert_int_equal(n_rows(&f, LEDGER_STALE), 1);
	assert_int_equal(n_copies(&f, "late"), 1);
	assert_int_equal(n_copies(&f, "overrun"), 1);
	assert_int_equal(n_copies(&f, "stale"), 1);
	pthread_barrier_destroy(&go);
	store_close(nodes[0].s);
	store_close(nodes[1].s);
	fix_close(&f);
}

/* ---- the store op -------------------------------------------------------- */

static void scan_reads_what_the_pass_needs(void **state)
{
	struct fix f;
	struct store_job late[8], running[8];
	struct store_sla_last last[8];
	struct store_sla x = {.late = late, .max_late = 8,
			      .running = running, .max_running = 8,
			      .last = last, .max_last = 8};
	struct sc_err err = {0};

	fix_open(state, &f, "{start_within: 5m}", "late");
	enqueue(&f, T0);                 /* will run and be delivered */
	enqueue(&f, T0 + MIN);           /* will be ACTIVE */
	enqueue(&f, T0 + 2 * MIN);       /* never started */
	enqueue(&f, T0 + 10 * MIN);      /* due later */
	sc_clock_set_ms(f.clock, T0 + 2 * MIN);
	struct store_job a = claim(&f);
	sc_clock_set_ms(f.clock, T0 + 3 * MIN);
	finish(&f, &a, JOB_DONE);
	struct store_job b = claim(&f);
	assert_int_equal(b.slot_ms, T0 + MIN);
	assert_int_equal(store_sla_scan(f.s, T0 + 5 * MIN, T0 + 3 * MIN, &x,
					&err), 0);
	assert_int_equal(x.n_late, 1); /* not DONE, ACTIVE or not yet due */
	assert_int_equal(late[0].slot_ms, T0 + 2 * MIN);
	assert_int_equal(late[0].attempts, 0);
	assert_int_equal(x.n_running, 1);
	assert_int_equal(running[0].slot_ms, T0 + MIN);
	assert_int_equal(running[0].started_ms, T0 + 3 * MIN);
	assert_int_equal(x.n_last, 1);
	assert_string_equal(last[0].schedule, "nightly");
	assert_int_equal(last[0].delivered_ms, T0 + 3 * MIN);
	assert_int_equal(last[0].first_ms, T0);
	/* The thresholds are bounds: an earlier one lists less. */
	assert_int_equal(store_sla_scan(f.s, T0 + MIN, T0 + 3 * MIN - 1, &x,
					&err), 0);
	assert_int_equal(x.n_late, 0);
	assert_int_equal(x.n_running, 0);
	/* A size 0 skips that part. */
	x.max_late = x.max_running = 0;
	assert_int_equal(store_sla_scan(f.s, INT64_MAX, INT64_MAX, &x, &err),
			 0);
	assert_int_equal(x.n_late + x.n_running, 0);
	assert_int_equal(x.n_last, 1);
	fix_close(&f);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(late_fires_once_and_clears_once),
		cmocka_unit_test(overrun_fires_per_attempt_and_clears),
		cmocka_unit_test(stale_fires_once_and_clears_at_next_success),
		cmocka_unit_test(stale_counts_from_first_start),
		cmocka_unit_test(reason_left_out_raises_nothing),
		cmocka_unit_test(two_nodes_one_alert_one_copy),
		cmocka_unit_test(scan_reads_what_the_pass_needs),
	};

	return tb_run_all("test_sla", tests, sizeof(tests) / sizeof(tests[0]))
		       ? 1 : 0;
}
