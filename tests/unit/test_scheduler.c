/*
 * test_scheduler.c - the scheduler (scheduler.h) against a real SQLite
 * file and configs loaded from real YAML: first start, normal firing,
 * two schedulers on one store, catch-up latest/all/none with the exact
 * missed rows, the bounded catch-up of a huge gap, the wall clock set
 * backwards and forwards, DST days through the cron engine, and an
 * environment override moving both firing and the retry class.
 * "now" is handed to scheduler_tick directly (the scheduler reads no clock);
 * the store's clock is a virtual one kept in step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "failpoint.h"
#include "queue.h"
#include "scheduler.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define WEEK (7 * DAY)

struct fix {
	char dir[256];
	char name[32];      /* the schedule under test */
	const char *url;    /* the store's (sqlite file or pg schema) */
	struct sc_clock *clock;
	struct store *s;
	struct config *cfg;
};

static struct fix F;

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

static int setup(void **state)
{
	struct sc_err err = {0};

	memset(&F, 0, sizeof(F));
	unsetenv("SURECRON_SCHEDULE_S");
	snprintf(F.name, sizeof(F.name), "s");
	snprintf(F.dir, sizeof(F.dir), "%s", tu_tmpdir());
	F.clock = sc_clock_virtual_new(0);
	F.url = tb_url(state);
	if (!F.url[0] || store_open(F.url, F.clock, &F.s, &err) != 0) {
		fprintf(stderr, "store %s: %s\n", F.url, err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	store_close(F.s);
	config_free(F.cfg);
	sc_clock_free(F.clock);
	unsetenv("SURECRON_SCHEDULE_S");
	unsetenv("SURECRON_SCHEDULE_S2");
	tu_rmrf(F.dir);
	return 0;
}

/* Loads a config with one schedule F.name (cron, zone, catch-up policy). */
static void load(const char *cron, const char *tz, const char *catchup)
{
	char path[320], text[1024];
	struct sc_err err = {0};
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.yaml", F.dir);
	snprintf(text, sizeof(text),
		 "schedules:\n"
		 "  %s:\n"
		 "    cron: \"%s\"\n"
		 "    tz: %s\n"
		 "    catchup: %s\n"
		 "    tasks: [{name: a, command: [/bin/true]}]\n",
		 F.name, cron, tz, catchup);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	config_free(F.cfg);
	F.cfg = NULL;
	if (config_load(path, &F.cfg, &err) != 0)
		fail_msg("config: %s", err.msg);
}

static struct sched_result tick_on(struct store *s, int64_t now)
{
	struct sched_result r;
	struct sc_err err = {0};

	sc_clock_set_ms(F.clock, now);
	if (scheduler_tick(s, F.cfg, now, NULL, &r, &err) != 0)
		fail_msg("scheduler_tick: %s", err.msg);
	assert_int_equal(r.n_errors, 0);
	return r;
}

static struct sched_result tick(int64_t now)
{
	return tick_on(F.s, now);
}

/* Ticks at every next_ms the scheduler asks for, from `from` until
 * `until` (as a daemon that wakes exactly on time would). */
static void drive(int64_t from, int64_t until)
{
	struct sched_result r = tick(from);

	while (r.next_ms <= until)
		r = tick(r.next_ms);
}

static int64_t n_jobs(void)
{
	struct store_counts c;

	assert_int_equal(store_job_counts(F.s, F.name, &c, NULL), 0);
	return c.ready_due + c.delayed + c.active + c.done + c.dead;
}

static bool has_job(int64_t slot, struct store_job *out)
{
	struct store_job j;
	int rc = store_job_find(F.s, F.name, slot, &j, NULL);

	if (rc == SC_ENOENT)
		return false;
	assert_int_equal(rc, 0);
	if (out)
		*out = j;
	return true;
}

/* The missed rows, oldest first (caller frees). */
static size_t missed(struct ledger_row **rows)
{
	struct ledger_filter lf = {.schedule = F.name, .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_MISSED};
	size_t n = 0;

	assert_int_equal(store_ledger_query(F.s, &lf, rows, &n, NULL), 0);
	return n;
}

static void first_start_invents_no_past_slot(void **state)
{
	int64_t now = iso("2026-01-01T12:03:00Z");
	int64_t last;

	load("*/10 * * * *", "UTC", "all");
	struct sched_result r = tick(now);
	assert_int_equal(r.n_first_start, 1);
	assert_int_equal(r.n_enqueued, 0);
	assert_int_equal(r.n_missed, 0);
	assert_int_equal(n_jobs(), 0);
	assert_int_equal(r.next_ms, iso("2026-01-01T12:10:00Z"));
	/* The baseline is recorded: a later start is not a first start. */
	assert_int_equal(store_sched_last_get(F.s, F.name, &last, NULL), 0);
	assert_true(last < now && last >= now - 1000);
	r = tick(r.next_ms);
	assert_int_equal(r.n_first_start, 0);
	assert_int_equal(r.n_enqueued, 1);
	assert_true(has_job(iso("2026-01-01T12:10:00Z"), NULL));
	assert_int_equal(n_jobs(), 1);
}

static void first_start_exactly_on_a_slot_runs_it(void **state)
{
	int64_t now = iso("2026-01-01T12:00:00Z");

	load("0 * * * *", "UTC", "latest");
	struct sched_result r = tick(now);
	assert_int_equal(r.n_enqueued, 1);
	assert_true(has_job(now, NULL));
	assert_int_equal(r.next_ms, now + HOUR);
}

static void stopped_before_first_slot_is_downtime(void **state)
{
	load("0 * * * *", "UTC", "none");
	tick(iso("2026-01-01T12:30:00Z"));
	/* Down until 15:30: 13:00, 14:00, 15:00 were missed (policy none). */
	struct sched_result r = tick(iso("2026-01-01T15:30:00Z"));
	assert_int_equal(r.n_first_start, 0);
	assert_int_equal(r.n_enqueued, 0);
	assert_int_equal(r.n_missed, 3);
	assert_int_equal(n_jobs(), 0);
}

static void normal_firing_one_job_per_slot(void **state)
{
	int64_t from = iso("2026-01-01T00:00:30Z");

	load("15 * * * *", "UTC", "latest");
	drive(from, from + DAY);
	assert_int_equal(n_jobs(), 24);
	for (int h = 0; h < 24; h++)
		assert_true(has_job(iso("2026-01-01T00:15:00Z") + h * HOUR,
				    NULL));
	struct ledger_row *rows;
	assert_int_equal(missed(&rows), 0);
	/* A second tick at the same instant changes nothing. */
	struct sched_result r = tick(iso("2026-01-01T23:15:00Z"));
	assert_int_equal(r.n_enqueued, 0);
	assert_int_equal(n_jobs(), 24);
	int64_t last;
	assert_int_equal(store_sched_last_get(F.s, F.name, &last, NULL), 0);
	assert_int_equal(last, iso("2026-01-01T23:15:00Z"));
}

static void job_carries_the_class_policy_and_is_due_at_slot(void **state)
{
	struct store_job j;
	int64_t slot = iso("2026-11-27T17:00:00+09:00");

	load("0 17 * * 5", "Asia/Seoul", "latest");
	drive(iso("2026-11-26T00:00:00Z"), iso("2026-11-28T00:00:00Z"));
	assert_true(has_job(slot, &j));
	assert_int_equal(j.run_at_ms, slot);
	assert_int_equal(j.policy.attempts, 4);
	assert_int_equal(j.policy.delay_ms, 30 * MIN);
	assert_int_equal(n_jobs(), 1);
}

static void two_schedulers_on_one_store_enqueue_once(void **state)
{
	struct store *b = NULL;
	int64_t t = iso("2026-01-01T00:00:30Z");

	/* A second handle on the same store: another node. */
	assert_int_equal(store_open(F.url, F.clock, &b, NULL), 0);
	load("* * * * *", "UTC", "all");
	tick_on(F.s, t);
	tick_on(b, t);
	size_t created = 0;
	for (int i = 1; i <= 30; i++) {
		int64_t now = t + i * MIN;
		/* Both nodes wake for every slot, in either order. */
		struct sched_result r1 = tick_on(i % 2 ? F.s : b, now);
		struct sched_result r2 = tick_on(i % 2 ? b : F.s, now);
		created += r1.n_enqueued + r2.n_enqueued;
	}
	assert_int_equal(created, 30);
	assert_int_equal(n_jobs(), 30);
	/* Both catch up after the same downtime: one job, and the missed
	 * rows written once (the second node sees the moved last slot). */
	int64_t later = t + 40 * MIN;
	tick_on(F.s, later);
	tick_on(b, later);
	assert_int_equal(n_jobs(), 40);
	store_close(b);
}

/* The other node of a catch-up race: its whole tick runs at the first
 * hook point, i.e. after node A looked for existing missed rows and before
 * A writes any. */
struct race {
	struct store *other;
	const struct sched_opts *opts;
	int64_t now;
	int hits, rc;
	struct sched_result r;
};

static void other_node_ticks(const char *name, void *ud)
{
	struct race *x = ud;

	if (strcmp(name, "sched.missed_checked") != 0 || x->hits++ > 0)
		return;
	x->rc = scheduler_tick(x->other, F.cfg, x->now, x->opts, &x->r, NULL);
}

/*
 * Two nodes catch up the same downtime at the same moment, both deciding
 * which missed rows to write before either writes: each slot still gets
 * exactly one missed row, and only the node that wrote a row counts it.
 * With one row per slot, and with a summarising row.
 */
static void two_nodes_catching_up_at_once_record_each_slot_once(void **state)
{
	static const struct {
		size_t max_missed_rows;
		size_t rows;        /* missed rows in the ledger */
	} cases[] = {
		{0, 3}, /* default cap: one row per slot */
		{1, 2}, /* 13:00 alone, then 14:00 summarising 14:00..15:00 */
	};
	int64_t back = iso("2026-01-01T15:30:00Z");

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct store *b = NULL;
		struct sched_opts o = {.max_missed_rows = cases[c].max_missed_rows};
		struct race x = {.opts = &o, .now = back + (int64_t)c * DAY};
		struct sched_result r;
		struct ledger_row *rows;

		snprintf(F.name, sizeof(F.name), "s%zu", c);
		load("0 * * * *", "UTC", "none");
		tick(x.now - 3 * HOUR); /* first start at 12:30; down until 15:30 */
		assert_int_equal(store_open(F.url, F.clock, &b, NULL), 0);
		x.other = b;
		scheduler_result_init(&x.r);
		sc_clock_set_ms(F.clock, x.now);
		failpoint_set_hook(other_node_ticks, &x);
		int rc = scheduler_tick(F.s, F.cfg, x.now, &o, &r, NULL);
		failpoint_set_hook(NULL, NULL);
		assert_int_equal(rc, 0);
		assert_int_equal(x.rc, 0);
		/* A's point, then B's inside it: both looked before any write. */
		assert_int_equal(x.hits, 2);
		assert_int_equal(x.r.n_missed, 3);
		assert_int_equal(r.n_missed, 0);
		size_t n = missed(&rows);
		assert_int_equal(n, cases[c].rows);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(rows[i].slot_ms, x.now - 150 * MIN +
					 (int64_t)i * HOUR);
			if (i > 0)
				assert_true(rows[i].slot_ms > rows[i - 1].slot_ms);
		}
		store_ledger_rows_free(rows, n);
		assert_int_equal(n_jobs(), 0);
		store_close(b);
	}
}

/* Two processes tick the same schedule at the same instants, racing:
 * every slot gets exactly one job. */
static void two_processes_racing_enqueue_each_slot_once(void **state)
{
	int64_t t = iso("2026-01-01T00:00:30Z");
	enum { N_TICKS = 120 };
	pid_t kids[2];

	load("* * * * *", "UTC", "all");
	tick(t);
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			struct store *s = NULL;
			struct sched_result r;
			int bad = 0;

			if (store_open(F.url, F.clock, &s, NULL) != 0)
				_exit(2);
			for (int i = 1; i <= N_TICKS; i++)
				bad += scheduler_tick(s, F.cfg, t + i * MIN, NULL,
						      &r, NULL) != 0;
			store_close(s);
			_exit(bad ? 1 : 0);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st;
		assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(n_jobs(), N_TICKS);
	for (int i = 1; i <= N_TICKS; i++)
		assert_true(has_job(iso("2026-01-01T00:00:00Z") + i * MIN, NULL));
}

/* The weekly slots of 2026-11-27 and 2026-12-04 (Fridays 17:00 UTC). */
#define FRI1 "2026-11-27T17:00:00Z"
#define FRI2 "2026-12-04T17:00:00Z"

static void catchup_case(const char *policy, int want_jobs,
			 const char *const *want_missed, size_t n_want)
{
	load("0 17 * * 5", "UTC", policy);
	tick(iso("2026-11-26T12:00:00Z"));               /* first start */
	struct sched_result r = tick(iso("2026-12-05T09:00:00Z")); /* back */
	assert_int_equal(n_jobs(), want_jobs);
	assert_int_equal(r.n_missed, n_want);
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, n_want);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rows[i].slot_ms, iso(want_missed[i]));
		assert_string_equal(rows[i].outcome, LEDGER_MISSED);
		assert_int_equal(rows[i].job_id, 0);
		assert_non_null(strstr(rows[i].error_msg, policy));
	}
	store_ledger_rows_free(rows, n);
	/* Ticking again records nothing twice. */
	r = tick(iso("2026-12-05T09:00:01Z"));
	assert_int_equal(r.n_missed + r.n_enqueued, 0);
	n = missed(&rows);
	assert_int_equal(n, n_want);
	store_ledger_rows_free(rows, n);
	/* The next slot is the next Friday. */
	assert_int_equal(r.next_ms, iso("2026-12-11T17:00:00Z"));
}

static void catchup_latest_runs_newest_once(void **state)
{
	static const char *const want[] = {FRI1};
	catchup_case("latest", 1, want, 1);
	assert_true(has_job(iso(FRI2), NULL));
	assert_false(has_job(iso(FRI1), NULL));
}

static void catchup_all_runs_every_slot(void **state)
{
	catchup_case("all", 2, NULL, 0);
	assert_true(has_job(iso(FRI1), NULL));
	assert_true(has_job(iso(FRI2), NULL));
}

static void catchup_none_runs_nothing(void **state)
{
	static const char *const want[] = {FRI1, FRI2};
	catchup_case("none", 0, want, 2);
}

/* A tick that stopped after writing its missed rows and jobs but before
 * recording the last slot (a crash) is repaired by the next tick, even a
 * later one that sees a newer slot: no second missed row, no missed row
 * for a slot that got its job. */
static void interrupted_tick_is_repaired_without_duplicates(void **state)
{
	struct sched_result r;
	struct sc_err err = {0};
	int64_t now = iso("2026-12-05T09:00:00Z");

	load("0 17 * * 5", "UTC", "latest");
	tick(iso("2026-11-26T12:00:00Z"));
	setenv("SURECRON_FAILPOINTS", "sched.before_last_set:err", 1);
	int rc = scheduler_tick(F.s, F.cfg, now, NULL, &r, &err);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	assert_int_equal(r.n_errors, 1);
	assert_true(has_job(iso(FRI2), NULL));
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, 1);
	store_ledger_rows_free(rows, n);

	/* The restart comes a week later: FRI3 is the newest and runs; FRI1
	 * keeps its one row; FRI2 ran, so it gets none. */
	r = tick(iso("2026-12-12T09:00:00Z"));
	assert_int_equal(r.n_enqueued, 1);
	assert_true(has_job(iso("2026-12-11T17:00:00Z"), NULL));
	n = missed(&rows);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].slot_ms, iso(FRI1));
	store_ledger_rows_free(rows, n);
	assert_int_equal(n_jobs(), 2);
}

static void late_within_grace_is_not_missed(void **state)
{
	load("* * * * * *", "UTC", "none");
	tick(iso("2026-01-01T00:00:00.500Z"));
	/* The daemon woke 3 s late: three per-second slots, all on time. */
	struct sched_result r = tick(iso("2026-01-01T00:00:03.500Z"));
	assert_int_equal(r.n_enqueued, 3);
	assert_int_equal(r.n_missed, 0);
}

static void huge_gap_is_bounded_and_summarised(void **state)
{
	struct timespec a, b;
	int64_t t0 = iso("2026-01-01T00:00:00.500Z");

	load("* * * * * *", "UTC", "all");
	tick(t0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	int64_t c0 = tu_thread_cpu_ms();
	/* Down for 30 days: 2.6 million per-second slots. */
	struct sched_result r = tick(t0 + 30 * DAY);
	int64_t cpu_ms = tu_thread_cpu_ms() - c0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	double secs = (double)(b.tv_sec - a.tv_sec) +
		      (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	/* The newest SCHED_CATCHUP_MAX late slots plus the on-time ones. */
	assert_true(r.n_enqueued >= SCHED_CATCHUP_MAX);
	assert_true(r.n_enqueued <= SCHED_CATCHUP_MAX + 11);
	assert_true(has_job(t0 + 30 * DAY - 500, NULL));
	struct ledger_row *rows;
	size_t n = missed(&rows);
	/* One row each for the first ones, then one summary. */
	assert_int_equal(n, SCHED_MISSED_ROWS_MAX + 1);
	assert_int_equal(rows[0].slot_ms, t0 + 500);
	assert_int_equal(rows[SCHED_MISSED_ROWS_MAX - 1].slot_ms,
			 t0 + 500 + (SCHED_MISSED_ROWS_MAX - 1) * SEC);
	const struct ledger_row *sum = &rows[SCHED_MISSED_ROWS_MAX];
	assert_int_equal(sum->slot_ms, t0 + 500 + SCHED_MISSED_ROWS_MAX * SEC);
	assert_non_null(strstr(sum->details_json, "\"summary\":true"));
	assert_non_null(strstr(sum->error_msg, "at least"));
	store_ledger_rows_free(rows, n);
	assert_true(r.n_missed > 100000);
	/* Bounded work: under 2 s of CPU (a tick that walked the 2.6
	 * million slots one by one would take far more), whatever else
	 * loads the machine. Its writes are few, so the wall time, which
	 * also holds other processes' turns on the CPU, gets 10x that. */
	print_message("huge gap: %.3f s, %lld ms CPU\n", secs,
		      (long long)cpu_ms);
	assert_true(cpu_ms < 2000);
	assert_true(secs < 20.0);
	/* Nothing is recorded twice on the next tick. */
	r = tick(t0 + 30 * DAY + 100);
	assert_int_equal(r.n_missed, 0);
}

/* Two days of per-second slots each month: the forward scan runs out in
 * February, and the newest slot (2 March 23:59:59) is still found. */
static void dense_burst_after_quiet_stretch_finds_the_newest(void **state)
{
	int64_t t0 = iso("2026-01-01T00:00:00.500Z");

	load("* * * 1,2 * *", "UTC", "latest");
	tick(t0);
	struct sched_result r = tick(iso("2026-03-20T00:00:00Z"));
	assert_int_equal(r.n_enqueued, 1);
	assert_true(has_job(iso("2026-03-02T23:59:59Z"), NULL));
	assert_int_equal(n_jobs(), 1);
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, SCHED_MISSED_ROWS_MAX + 1);
	assert_int_equal(rows[0].slot_ms, iso("2026-01-01T00:00:01Z"));
	assert_non_null(strstr(rows[n - 1].details_json,
			       "\"until\":\"2026-03-02T23:59:58Z\""));
	store_ledger_rows_free(rows, n);
	assert_int_equal(r.next_ms, iso("2026-04-01T00:00:00Z"));
}

static void counted_gap_summary_has_exact_count(void **state)
{
	int64_t t0 = iso("2026-01-01T00:00:30Z");

	load("* * * * *", "UTC", "latest");
	tick(t0);
	/* Down for one day: 1440 minute slots; the newest runs. */
	struct sched_result r = tick(t0 + DAY);
	assert_int_equal(r.n_enqueued, 1);
	assert_int_equal(r.n_missed, 1439);
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, SCHED_MISSED_ROWS_MAX + 1);
	char want[64];
	snprintf(want, sizeof(want), "\"count\":%d",
		 1439 - SCHED_MISSED_ROWS_MAX);
	assert_non_null(strstr(rows[n - 1].details_json, want));
	store_ledger_rows_free(rows, n);
}

static void clock_set_backwards_reruns_nothing(void **state)
{
	load("0 * * * *", "UTC", "all");
	tick(iso("2026-01-01T11:30:00Z"));
	tick(iso("2026-01-01T12:00:00Z"));
	tick(iso("2026-01-01T13:00:00Z"));
	assert_int_equal(n_jobs(), 2);
	/* The wall clock is set back 90 minutes. */
	struct sched_result r = tick(iso("2026-01-01T11:30:00Z"));
	assert_int_equal(r.n_enqueued + r.n_missed, 0);
	/* It sleeps until the first slot after the recorded one. */
	assert_int_equal(r.next_ms, iso("2026-01-01T14:00:00Z"));
	/* 12:00 and 13:00 come again on the wall clock: nothing re-runs. */
	r = tick(iso("2026-01-01T12:00:00Z"));
	assert_int_equal(r.n_enqueued, 0);
	r = tick(iso("2026-01-01T13:00:00Z"));
	assert_int_equal(r.n_enqueued, 0);
	assert_int_equal(n_jobs(), 2);
	r = tick(iso("2026-01-01T14:00:00Z"));
	assert_int_equal(r.n_enqueued, 1);
	struct ledger_row *rows;
	assert_int_equal(missed(&rows), 0);
}

static void clock_set_forwards_is_catchup(void **state)
{
	load("0 * * * *", "UTC", "latest");
	tick(iso("2026-01-01T11:30:00Z"));
	tick(iso("2026-01-01T12:00:00Z"));
	/* The wall clock jumps 5.5 hours ahead. */
	struct sched_result r = tick(iso("2026-01-01T17:30:00Z"));
	assert_int_equal(r.n_enqueued, 1);
	assert_true(has_job(iso("2026-01-01T17:00:00Z"), NULL));
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rows[i].slot_ms,
				 iso("2026-01-01T13:00:00Z") +
					 (int64_t)i * HOUR);
	store_ledger_rows_free(rows, n);
	assert_int_equal(n_jobs(), 2);
}

/* DST through the cron engine: each row drives the scheduler over a few
 * days and lists every slot it must have enqueued, no more. */
static const struct {
	const char *cron, *tz, *from, *until;
	const char *slots[6];
} dst_rows[] = {
	/* New York springs forward 2026-03-08 02:00 -> 03:00: a fixed 02:30
	 * fires once, at the change. */
	{"30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z",
	 "2026-03-10T00:00:00Z",
	 {"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00",
	  "2026-03-09T02:30:00-04:00"}},
	/* Falls back 2026-11-01 02:00 -> 01:00: 01:30 fires once. */
	{"30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z",
	 "2026-11-03T00:00:00Z",
	 {"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00",
	  "2026-11-02T01:30:00-05:00"}},
	/* Berlin 2026-10-25 03:00 -> 02:00: an hourly-in-range expression
	 * follows real time, 02:15 fires in both passes. */
	{"15 */1 * * *", "Europe/Berlin", "2026-10-25T00:00:00Z",
	 "2026-10-25T02:15:00Z",
	 {"2026-10-25T02:15:00+02:00", "2026-10-25T02:15:00+01:00",
	  "2026-10-25T03:15:00+01:00"}},
};

static void dst_days_follow_the_cron_engine(void **state)
{
	for (size_t i = 0; i < sizeof(dst_rows) / sizeof(dst_rows[0]); i++) {
		size_t want = 0;

		/* A fresh schedule per row. */
		snprintf(F.name, sizeof(F.name), "dst%zu", i);
		load(dst_rows[i].cron, dst_rows[i].tz, "latest");
		drive(iso(dst_rows[i].from), iso(dst_rows[i].until));
		for (; want < 6 && dst_rows[i].slots[want]; want++)
			if (!has_job(iso(dst_rows[i].slots[want]), NULL))
				fail_msg("row %zu: no job at %s", i,
					 dst_rows[i].slots[want]);
		if ((size_t)n_jobs() != want)
			fail_msg("row %zu: %lld jobs, want %zu", i,
				 (long long)n_jobs(), want);
	}
}

static void env_override_moves_firing_and_class(void **state)
{
	struct store_job j;
	int64_t from = iso("2026-11-27T16:58:00Z");

	/* Without the override: weekly, low-frequency policy. */
	load("0 17 * * 5", "UTC", "latest");
	drive(from, from + 10 * MIN);
	assert_int_equal(n_jobs(), 1);
	assert_true(has_job(iso("2026-11-27T17:00:00Z"), &j));
	assert_int_equal(j.policy.attempts, 4);

	/* With it: every 5 minutes, the default class (2 attempts, 60 s). */
	snprintf(F.name, sizeof(F.name), "s2");
	setenv("SURECRON_SCHEDULE_S2", "*/5 * * * *", 1);
	load("0 17 * * 5", "UTC", "latest");
	drive(from, from + 10 * MIN);
	assert_int_equal(n_jobs(), 2);
	assert_true(has_job(iso("2026-11-27T17:00:00Z"), &j));
	assert_int_equal(j.policy.attempts, 2);
	assert_int_equal(j.policy.delay_ms, 60 * SEC);
	assert_true(has_job(iso("2026-11-27T17:05:00Z"), &j));
	assert_int_equal(j.policy.attempts, 2);
}

/* The memo gives the results of plain ticks: the same jobs, missed rows
 * and next_ms through normal firing, a clock set back and a jump ahead. */
static void memo_ticks_match_plain_ticks(void **state)
{
	int64_t memo[1] = {INT64_MIN};
	struct sched_result r;
	static const char *const nows[] = {
		"2026-01-01T11:30:00Z", "2026-01-01T11:45:00Z",
		"2026-01-01T12:00:00Z", "2026-01-01T12:20:00Z",
		"2026-01-01T11:00:00Z", /* set back */
		"2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z",
		"2026-01-01T18:30:00Z", /* jump ahead */
		"2026-01-01T19:00:00Z",
	};
	static const int64_t jobs[] = {0, 0, 1, 1, 1, 1, 2, 3, 4};

	load("0 * * * *", "UTC", "latest");
	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		int64_t now = iso(nows[i]);
		sc_clock_set_ms(F.clock, now);
		assert_int_equal(scheduler_tick_memo(F.s, F.cfg, now, memo, NULL, &r,
						     NULL), 0);
		if (n_jobs() != jobs[i])
			fail_msg("tick %zu (%s): %lld jobs, want %lld", i,
				 nows[i], (long long)n_jobs(),
				 (long long)jobs[i]);
		assert_int_equal(r.next_ms, memo[0]);
		assert_int_equal(r.n_schedules, 1);
	}
	assert_int_equal(memo[0], iso("2026-01-01T20:00:00Z"));
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, 4); /* 14:00 .. 17:00 */
	store_ledger_rows_free(rows, n);
}

/*
 * Issue 17: a downtime across a pause. Hourly, back at 06:30 after a stop
 * at 00:30, paused [05:00, 07:00): 05:00 and 06:00 get paused rows, not
 * missed ones; catchup latest runs the newest late slot OUTSIDE the pause
 * (04:00), not one inside; 01:00..03:00 are missed; no missed alert counts
 * the paused ones. The same through the plan (the daemon's path).
 */
static void pause_case(bool plan)
{
	struct store_pause pz = {.from_ms = iso("2026-01-01T05:00:00Z"),
				 .until_ms = iso("2026-01-01T07:00:00Z")};
	struct sched_result r;
	struct sched_plan *pl = NULL;
	struct sc_err err = {0};
	int64_t t0 = iso("2026-01-01T00:30:00Z"), t1 = iso("2026-01-01T06:30:00Z");

	load("0 * * * *", "UTC", "latest");
	snprintf(pz.schedule, sizeof(pz.schedule), "%s", F.name);
	snprintf(pz.by, sizeof(pz.by), "ops");
	if (plan) {
		sc_clock_set_ms(F.clock, t0);
		assert_int_equal(scheduler_plan_new(F.s, F.cfg, t0, NULL, &pl,
						    &err), 0);
		assert_int_equal(scheduler_plan_tick(pl, F.s, t0, &r, &err), 0);
		assert_int_equal(store_pause_set(F.s, &pz, NULL), 0);
		sc_clock_set_ms(F.clock, t1);
		assert_int_equal(scheduler_plan_tick(pl, F.s, t1, &r, &err), 0);
	} else {
		tick(t0);
		assert_int_equal(store_pause_set(F.s, &pz, NULL), 0);
		r = tick(t1);
	}
	assert_int_equal(r.n_paused, 2);
	assert_int_equal(r.n_missed, 3);
	assert_int_equal(n_jobs(), 1);
	assert_true(has_job(iso("2026-01-01T04:00:00Z"), NULL));
	struct ledger_filter lf = {.schedule = F.name, .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_PAUSED};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(store_ledger_query(F.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].slot_ms, iso("2026-01-01T05:00:00Z"));
	assert_int_equal(rows[1].slot_ms, iso("2026-01-01T06:00:00Z"));
	store_ledger_rows_free(rows, n);
	n = missed(&rows);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_true(rows[i].slot_ms < pz.from_ms);
	store_ledger_rows_free(rows, n);
	/* After the window: 07:00 runs on time, nothing owed for it. */
	int64_t t2 = iso("2026-01-01T07:00:00Z");
	sc_clock_set_ms(F.clock, t2);
	if (plan)
		assert_int_equal(scheduler_plan_tick(pl, F.s, t2, &r, &err), 0);
	else
		r = tick(t2);
	assert_int_equal(r.n_paused + r.n_missed, 0);
	assert_int_equal(r.n_enqueued, 1);
	assert_true(has_job(t2, NULL));
	scheduler_plan_free(pl);
}

static void pause_is_not_missed_nor_caught_up(void **state)
{
	pause_case(false);
}

static void pause_is_not_missed_nor_caught_up_in_the_plan(void **state)
{
	pause_case(true);
}

/* enabled: false writes nothing but its state; enabling it again starts
 * from then, with nothing missed for the disabled time. */
static void disabled_writes_nothing_and_owes_nothing(void **state)
{
	struct sched_result r;

	load("0 * * * *", "UTC", "all");
	F.cfg->schedules[0].disabled = true;
	tick(iso("2026-01-01T00:30:00Z"));
	drive(iso("2026-01-01T00:30:00Z"), iso("2026-01-01T05:30:00Z"));
	assert_int_equal(n_jobs(), 0);
	struct ledger_row *rows;
	size_t n = missed(&rows);
	assert_int_equal(n, 0);
	store_ledger_rows_free(rows, n);
	F.cfg->schedules[0].disabled = false;
	r = tick(iso("2026-01-01T06:00:00Z"));
	assert_int_equal(r.n_missed, 0);
	assert_int_equal(r.n_enqueued, 1);
	assert_int_equal(n_jobs(), 1);
}

static void bad_zone_is_counted_and_others_still_run(void **state)
{
	char path[320];
	struct sc_err err = {0};
	struct sched_result r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.yaml", F.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("schedules:\n"
	      "  s: {cron: \"0 * * * *\", tz: UTC, tasks: [{name: a, "
	      "command: [/bin/true]}]}\n"
	      "  t: {cron: \"30 * * * *\", tz: UTC, tasks: [{name: a, "
	      "command: [/bin/true]}]}\n", f);
	fclose(f);
	assert_int_equal(config_load(path, &F.cfg, &err), 0);
	/* A schedule that cannot be computed: its zone is not resolved
	 * (config_parse resolves every zone once, so only this is left). */
	F.cfg->schedules[1].zone = NULL;
	int rc = scheduler_tick(F.s, F.cfg, iso("2026-01-01T00:00:00Z"), NULL, &r,
				&err);
	assert_int_equal(rc, SC_EZONE);
	assert_int_equal(r.n_errors, 1);
	assert_int_equal(r.n_schedules, 2);
	assert_int_equal(r.n_enqueued, 1);
	assert_int_equal(r.next_ms, iso("2026-01-01T01:00:00Z"));
}

/* The store backends' set-up (store_backend.h) chained with ours. */
static int setup_sqlite(void **state)
{
	return tb_setup_sqlite(state) || setup(state);
}

static int teardown_sqlite(void **state)
{
	teardown(state);
	return tb_teardown_sqlite(state);
}

static int setup_pg(void **state)
{
	return tb_setup_pg(state) || setup(state);
}

static int teardown_pg(void **state)
{
	teardown(state);
	return tb_teardown_pg(state);
}

/* ---- overlap judged when the slot falls due (issue 43) ------------------ */

static void set_overlap(enum overlap ov)
{
	/* The test's own config: its spec changed in place. */
	((struct schedule_spec *)config_schedule(F.cfg, F.name))->overlap = ov;
}

/* The skipped rows of slot; *cause gets the first one's details. */
static size_t skipped_at(int64_t slot, char *cause, size_t cap)
{
	struct ledger_filter f = {.schedule = F.name, .since_ms = slot,
				  .until_ms = slot + 1,
				  .outcome = LEDGER_SKIPPED};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(F.s, &f, &rows, &n, NULL), 0);
	if (cause && cap)
		snprintf(cause, cap, "%s",
			 n && rows[0].details_json ? rows[0].details_json : "");
	store_ledger_rows_free(rows, n);
	return n;
}

static struct store_job claim_one(void)
{
	struct store_job j;
	size_t n = 0;

	assert_int_equal(store_job_claim(F.s, "w", 60000, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	return j;
}

static void finish_ok(const struct store_job *j)
{
	assert_int_equal(store_job_finish(F.s, j->id, j->lease_token,
					  JOB_DONE, 0, NULL, NULL),
			 0);
}

/* skip: a slot due while another waits or runs gets a skipped row and
 * no job; once none does, the next one runs. A replayed tick writes
 * nothing twice. */
static void overlap_skip_judged_when_due(void **state)
{
	char cause[128];
	(void)state;
	load("* * * * *", "UTC", "latest");
	set_overlap(OVERLAP_SKIP);
	int64_t m1 = iso("2026-01-01T00:01:00Z");

	tick(m1 - 30000);
	tick(m1);
	assert_true(has_job(m1, NULL));
	/* m1 waits (no worker yet): m2 is skipped. */
	tick(m1 + MIN);
	assert_false(has_job(m1 + MIN, NULL));
	assert_int_equal(skipped_at(m1 + MIN, cause, sizeof(cause)), 1);
	assert_non_null(strstr(cause, "\"cause\":\"overlap\""));
	/* m1 runs: m3 is skipped. */
	struct store_job j = claim_one();
	tick(m1 + 2 * MIN);
	assert_false(has_job(m1 + 2 * MIN, NULL));
	assert_int_equal(skipped_at(m1 + 2 * MIN, NULL, 0), 1);
	/* m1 done: m4 runs. */
	finish_ok(&j);
	tick(m1 + 3 * MIN);
	assert_true(has_job(m1 + 3 * MIN, NULL));
	assert_int_equal(skipped_at(m1 + 3 * MIN, NULL, 0), 0);
	/* A pass stopped before its state (a crash), then replayed over the
	 * same slot: it keeps its one verdict. m4 waits, so m5 is skipped,
	 * once. */
	struct sched_result r;
	struct sc_err err = {0};
	setenv("SURECRON_FAILPOINTS", "sched.before_last_set:err", 1);
	sc_clock_set_ms(F.clock, m1 + 4 * MIN);
	int rc = scheduler_tick(F.s, F.cfg, m1 + 4 * MIN, NULL, &r, &err);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	assert_int_equal(skipped_at(m1 + 4 * MIN, NULL, 0), 1);
	tick(m1 + 4 * MIN);
	assert_int_equal(skipped_at(m1 + 4 * MIN, NULL, 0), 1);
	assert_false(has_job(m1 + 4 * MIN, NULL));
	assert_int_equal(n_jobs(), 2);
}

/* buffer_one: one slot may wait behind the running one; a slot due while
 * one waits is skipped, cause buffered. */
static void overlap_buffer_one_keeps_one_waiting(void **state)
{
	char cause[128];
	(void)state;
	load("* * * * *", "UTC", "latest");
	set_overlap(OVERLAP_BUFFER_ONE);
	int64_t m1 = iso("2026-01-01T00:01:00Z");

	tick(m1 - 30000);
	tick(m1);
	struct store_job j = claim_one();
	tick(m1 + MIN); /* waits behind m1 */
	assert_true(has_job(m1 + MIN, NULL));
	tick(m1 + 2 * MIN); /* one waits already */
	assert_false(has_job(m1 + 2 * MIN, NULL));
	assert_int_equal(skipped_at(m1 + 2 * MIN, cause, sizeof(cause)), 1);
	assert_non_null(strstr(cause, "\"cause\":\"buffered\""));
	finish_ok(&j);
	struct store_job k = claim_one(); /* m2 runs, none waits */
	assert_int_equal(k.slot_ms, m1 + MIN);
	tick(m1 + 3 * MIN);
	assert_true(has_job(m1 + 3 * MIN, NULL));
}

/* Another node judging the schedule (its lease held): this one writes
 * nothing and keeps its state, and judges the slot once the lease is
 * free. */
static void overlap_judged_by_one_node_at_a_time(void **state)
{
	(void)state;
	load("* * * * *", "UTC", "latest");
	set_overlap(OVERLAP_SKIP);
	int64_t m1 = iso("2026-01-01T00:01:00Z"), last = 0;
	bool won = false;

	tick(m1 - 30000);
	assert_int_equal(store_lease_take(F.s, "overlap:s", "other-node",
					  600000, &won, NULL),
			 0);
	assert_true(won);
	tick(m1);
	assert_false(has_job(m1, NULL));
	assert_int_equal(skipped_at(m1, NULL, 0), 0);
	assert_int_equal(store_sched_last_get(F.s, F.name, &last, NULL), 0);
	assert_true(last < m1);
	assert_int_equal(store_lease_drop(F.s, "overlap:s", "other-node",
					  NULL),
			 0);
	tick(m1 + 1000);
	assert_true(has_job(m1, NULL));
	assert_int_equal(store_sched_last_get(F.s, F.name, &last, NULL), 0);
	assert_int_equal(last, m1);
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	struct CMUnitTest tests[] = {
		T(first_start_invents_no_past_slot),
		T(first_start_exactly_on_a_slot_runs_it),
		T(stopped_before_first_slot_is_downtime),
		T(normal_firing_one_job_per_slot),
		T(job_carries_the_class_policy_and_is_due_at_slot),
		T(two_schedulers_on_one_store_enqueue_once),
		T(two_processes_racing_enqueue_each_slot_once),
		T(two_nodes_catching_up_at_once_record_each_slot_once),
		T(catchup_latest_runs_newest_once),
		T(catchup_all_runs_every_slot),
		T(catchup_none_runs_nothing),
		T(pause_is_not_missed_nor_caught_up),
		T(pause_is_not_missed_nor_caught_up_in_the_plan),
		T(disabled_writes_nothing_and_owes_nothing),
		T(interrupted_tick_is_repaired_without_duplicates),
		T(late_within_grace_is_not_missed),
		T(huge_gap_is_bounded_and_summarised),
		T(dense_burst_after_quiet_stretch_finds_the_newest),
		T(counted_gap_summary_has_exact_count),
		T(clock_set_backwards_reruns_nothing),
		T(clock_set_forwards_is_catchup),
		T(dst_days_follow_the_cron_engine),
		T(env_override_moves_firing_and_class),
		T(memo_ticks_match_plain_ticks),
		T(bad_zone_is_counted_and_others_still_run),
		T(overlap_skip_judged_when_due),
		T(overlap_buffer_one_keeps_one_waiting),
		T(overlap_judged_by_one_node_at_a_time),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_sqlite;
		tests[i].teardown_func = teardown_sqlite;
	}
	failed = _cmocka_run_group_tests("scheduler/sqlite", tests, n, NULL,
					 NULL);
	/* Several nodes share a PostgreSQL store: the same tests on it. */
	if (!getenv("SURECRON_TEST_PG"))
		return failed;
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup_pg;
		tests[i].teardown_func = teardown_pg;
	}
	return failed + _cmocka_run_group_tests("scheduler/postgresql", tests,
						n, NULL, NULL);
}
