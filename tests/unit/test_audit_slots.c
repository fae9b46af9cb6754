/*
 * test_audit.c - the audit module (audit.h): the classes of a slot without
 * a record (one table, one loop), the slot arithmetic (the half-open
 * period, the cap, a DST day in a real zone), and audit_schedule against a
 * real SQLite store whose rows the test writes: a missed summary row that
 * reaches into the period from before it, rows under a renamed_from name,
 * a slot with only a job, and the first-start rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "clock.h"
#include "history.h"
#include "queue.h"
#include "store.h"
#include "testutil.h"

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

static int64_t iso(const char *s)
{
	int64_t ms;

	assert_int_equal(clock_parse_iso(s, &ms, NULL), 0);
	return ms;
}

/* A schedule as config_parse leaves it: expression parsed, zone loaded. */
static struct schedule_spec spec_of(const char *name, const char *expr,
				    const char *zone, char **renamed)
{
	static char *none[] = {NULL};
	/* The expressions live on, as a config's pool's do. */
	static struct sc_cron exprs[64];
	static size_t n_exprs;
	struct sc_cron *e = &exprs[n_exprs++ % 64];
	struct schedule_spec s = {.name = (char *)name, .expr = e};

	assert_int_equal(sc_cron_parse(expr, e, NULL), 0);
	assert_int_equal(sc_zone_load(zone, &s.zone, NULL), 0);
	s.renamed_from = renamed ? renamed : none;
	while (s.renamed_from[s.n_renamed_from])
		s.n_renamed_from++;
	return s;
}

/* ---- the classes -------------------------------------------------------- */

#define NOW INT64_C(1000000000)
#define G (10 * SEC)

static void classes(void **state)
{
	static const struct row {
		const char *what;
		struct audit_view v;
		int64_t slot;
		int pending;            /* expected return */
		enum audit_why why;
	} rows[] = {
		{"not reached, in the grace: pending",
		 {true, NOW - MIN, NOW - 2 * MIN, false, NOW, G},
		 NOW - 5 * SEC, 1, 0},
		{"not reached, older than the grace",
		 {true, NOW - MIN, NOW - 2 * MIN, false, NOW, G},
		 NOW - 30 * SEC, 0, AUDIT_NOT_REACHED},
		{"reached, in the grace: a hole all the same",
		 {true, NOW, NOW - 2 * MIN, false, NOW, G},
		 NOW - 5 * SEC, 0, AUDIT_NO_RECORD},
		{"reached, after the first record",
		 {true, NOW - MIN, NOW - 2 * MIN, false, NOW, G},
		 NOW - 90 * SEC, 0, AUDIT_NO_RECORD},
		{"before the first record, none before the period",
		 {true, NOW - MIN, NOW - 2 * MIN, false, NOW, G},
		 NOW - 3 * MIN, 0, AUDIT_BEFORE_FIRST},
		{"before the first record, records before the period",
		 {true, NOW - MIN, NOW - 2 * MIN, true, NOW, G},
		 NOW - 3 * MIN, 0, AUDIT_NO_RECORD},
		{"state only (a first start, no row yet): at or before it",
		 {true, NOW - MIN, INT64_MAX, false, NOW, G},
		 NOW - MIN, 0, AUDIT_BEFORE_FIRST},
		{"state only: after it, older than the grace",
		 {true, NOW - MIN, INT64_MAX, false, NOW, G},
		 NOW - 30 * SEC, 0, AUDIT_NOT_REACHED},
		{"nothing at all",
		 {false, 0, INT64_MAX, false, NOW, G},
		 NOW - MIN, 0, AUDIT_NEVER_RUN},
		{"nothing at all, in the grace: pending",
		 {false, 0, INT64_MAX, false, NOW, G},
		 NOW - SEC, 1, 0},
		{"rows but no state (trigger only): before them",
		 {false, 0, NOW - MIN, false, NOW, G},
		 NOW - 2 * MIN, 0, AUDIT_BEFORE_FIRST},
		{"rows but no state: after them",
		 {false, 0, NOW - MIN, false, NOW, G},
		 NOW - 30 * SEC, 0, AUDIT_NOT_REACHED},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum audit_why why = (enum audit_why)-1;
		int rc = audit_classify(&rows[i].v, rows[i].slot, &why);

		if (rc != rows[i].pending || (!rc && why != rows[i].why))
			fail_msg("%s: got %d/%s", rows[i].what, rc,
				 rc ? "-" : audit_why_name(why));
	}
}

/* ---- the slots ---------------------------------------------------------- */

static void slots_half_open_and_capped(void **state)
{
	struct schedule_spec s = spec_of("s", "*/15 * * * *", "UTC", NULL);
	int64_t *v;
	size_t n;
	bool cut;
	int64_t since = iso("2026-03-02T10:00:00Z");

	(void)state;
	/* since inclusive, until exclusive: 10:00, 10:15, 10:30, 10:45. */
	assert_int_equal(audit_slots(&s, since, since + HOUR, 1000, &v, &n,
				     &cut, NULL), 0);
	assert_int_equal(n, 4);
	assert_false(cut);
	assert_true(v[0] == since && v[3] == since + 45 * MIN);
	free(v);
	/* The cap: the first max slots, and the cut said. */
	assert_int_equal(audit_slots(&s, since, since + DAY, 10, &v, &n, &cut,
				     NULL), 0);
	assert_int_equal(n, 10);
	assert_true(cut);
	assert_true(v[9] == since + 9 * 15 * MIN);
	free(v);
	/* Exactly max slots in the period is no cut. */
	assert_int_equal(audit_slots(&s, since, since + HOUR, 4, &v, &n, &cut,
				     NULL), 0);
	assert_int_equal(n, 4);
	assert_false(cut);
	free(v);
	/* An empty period. */
	assert_int_equal(audit_slots(&s, since + 1, since + 2, 10, &v, &n,
				     &cut, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	/* Not resolved by config_parse: refused. */
	s.zone = NULL;
	assert_int_equal(audit_slots(&s, since, since + HOUR, 10, &v, &n, &cut,
				     NULL), SC_EZONE);
}

/* A spring-forward day: 02:30 does not exist in Berlin on 2026-03-29, so
 * a daily 02:30 fires at 03:00 CEST (the engine's DST rule), once. */
static void slots_dst_day(void **state)
{
	struct schedule_spec s = spec_of("s", "30 2 * * *", "Europe/Berlin",
					 NULL);
	int64_t *v;
	size_t n;
	bool cut;

	(void)state;
	assert_int_equal(audit_slots(&s, iso("2026-03-28T00:00:00Z"),
				     iso("2026-03-31T00:00:00Z"), 100, &v, &n,
				     &cut, NULL), 0);
	assert_int_equal(n, 3);
	assert_true(v[0] == iso("2026-03-28T01:30:00Z"));
	assert_true(v[1] == iso("2026-03-29T01:00:00Z"));
	assert_true(v[2] == iso("2026-03-30T00:30:00Z"));
	free(v);
}

/* ---- against a store ---------------------------------------------------- */

static char dir[256], url[320];
static struct store *st;

static int store_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(url, sizeof(url), "sqlite:%s/a.db", dir);
	return store_open(url, sc_clock_real(), &st, NULL);
}

static int store_teardown(void **state)
{
	(void)state;
	store_close(st);
	tu_rmrf(dir);
	return 0;
}

static void add_row(const char *sched, int64_t slot, const char *outcome,
		    const char *details)
{
	struct ledger_row r = {0};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	r.slot_ms = slot;
	r.started_ms = r.finished_ms = slot;
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	r.details_json = (char *)details;
	assert_int_equal(store_ledger_append(st, &r, NULL), 0);
}

static const struct sc_retry_policy pol = {
	.attempts = 1, .backoff = SC_BACKOFF_FIXED, .delay_ms = 1000};

/*
 * A per-minute schedule "new", renamed from "old": the old name ran
 * 10:00-10:04 and has a summary missed row for 10:05-10:20 (written
 * before the period starts at 10:10); the new name has missed rows for
 * 10:21-10:22, a job for 10:23 and nothing for 10:24; its state is
 * 10:25. Audit [10:10, 10:26) at 11:00: only 10:24 and 10:25 are holes
 * (no record at or before the last slot).
 */
static void accounted_by_rows_ranges_jobs_and_old_names(void **state)
{
	static char *renamed[] = {"old", NULL};
	struct schedule_spec s = spec_of("new", "* * * * *", "UTC", renamed);
	int64_t t0 = iso("2026-03-02T10:00:00Z");
	struct audit_report rep = {0};
	char until[CLOCK_ISO_MAX], d[256];

	(void)state;
	for (int i = 0; i < 5; i++)
		add_row("old", t0 + i * MIN, LEDGER_SUCCESS, NULL);
	snprintf(d, sizeof(d), "{\"catchup\":\"none\",\"summary\":true,"
		 "\"count\":16,\"from\":\"x\",\"until\":\"%s\"}",
		 clock_format_utc(t0 + 20 * MIN, until));
	add_row("old", t0 + 5 * MIN, LEDGER_MISSED, d);
	assert_int_equal(store_sched_last_set(st, "old", t0 + 20 * MIN, NULL),
			 0);
	add_row("new", t0 + 21 * MIN, LEDGER_MISSED, NULL);
	add_row("new", t0 + 22 * MIN, LEDGER_MISSED, NULL);
	assert_int_equal(queue_enqueue(st, "new", t0 + 23 * MIN, &pol, NULL,
				       NULL, NULL), 0);
	assert_int_equal(store_sched_last_set(st, "new", t0 + 25 * MIN, NULL),
			 0);

	assert_int_equal(audit_schedule(st, &s, t0 + 10 * MIN, t0 + 26 * MIN,
					t0 + HOUR, NULL, &rep, NULL), 0);
	assert_int_equal(rep.n_scheds, 1);
	assert_int_equal(rep.n_slots, 16);
	assert_int_equal(rep.n_holes, 2);
	assert_true(rep.holes[0].slot_ms == t0 + 24 * MIN);
	assert_int_equal(rep.holes[0].why, AUDIT_NO_RECORD);
	assert_true(rep.holes[1].slot_ms == t0 + 25 * MIN);
	assert_true(rep.scheds[0].before_period);
	audit_report_dispose(&rep);

	/* Without renamed_from, the same store: the old name's records do
	 * not count, so the period before the new name's first record
	 * (10:21) is named as before the first start. */
	struct schedule_spec alone = spec_of("new", "* * * * *", "UTC", NULL);
	assert_int_equal(audit_schedule(st, &alone, t0 + 10 * MIN,
					t0 + 26 * MIN, t0 + HOUR, NULL, &rep,
					NULL), 0);
	assert_int_equal(rep.n_holes, 11 + 2);
	assert_int_equal(rep.holes[0].why, AUDIT_BEFORE_FIRST);
	assert_true(rep.holes[10].slot_ms == t0 + 20 * MIN);
	assert_int_equal(rep.holes[11].why, AUDIT_NO_RECORD);
	audit_report_dispose(&rep);

	/* A period from the new name's first record on accepts it. */
	assert_int_equal(audit_schedule(st, &alone, t0 + 21 * MIN,
					t0 + 24 * MIN, t0 + HOUR, NULL, &rep,
					NULL), 0);
	assert_int_equal(rep.n_holes, 0);
	audit_report_dispose(&rep);
}

/* audit_run: every schedule, or only one; SC_ENOENT for an unknown one;
 * the cap reported. */
static void run_and_cap(void **state)
{
	struct schedule_spec v[2] = {
		spec_of("a", "* * * * *", "UTC", NULL),
		spec_of("b", "*/5 * * * *", "UTC", NULL)};
	struct config cfg = {.schedules = v, .n_schedules = 2};
	struct audit_report rep = {0};
	struct audit_opts o = {.max_slots = 30};
	int64_t t0 = iso("2026-03-02T10:00:00Z");

	(void)state;
	assert_int_equal(audit_run(st, &cfg, NULL, t0, t0 + HOUR, t0 + DAY,
				   &o, &rep, NULL), 0);
	assert_int_equal(rep.n_scheds, 2);
	assert_true(rep.scheds[0].truncated);
	assert_int_equal(rep.scheds[0].n_slots, 30);
	assert_true(rep.scheds[0].cut_ms == t0 + 29 * MIN);
	assert_false(rep.scheds[1].truncated);
	assert_int_equal(rep.scheds[1].n_slots, 12);
	assert_true(rep.truncated);
	assert_int_equal(rep.n_holes, 42);
	assert_int_equal(rep.holes[0].why, AUDIT_NEVER_RUN);
	audit_report_dispose(&rep);
	assert_int_equal(audit_run(st, &cfg, "b", t0, t0 + HOUR, t0 + DAY, &o,
				   &rep, NULL), 0);
	assert_int_equal(rep.n_scheds, 1);
	audit_report_dispose(&rep);
	assert_int_equal(audit_run(st, &cfg, "c", t0, t0 + HOUR, t0 + DAY, &o,
				   &rep, NULL), SC_ENOENT);
	audit_report_dispose(&rep);
}

/*
 * Issue 43: the crons in force. Records under the name and a renamed_from
 * name split a period into stretches, each judged with its own
 * expression and zone, the first record's before it; the audit counts
 * slots by them, and the cap runs across stretches. The notes of a
 * reload are the changed schedules', from the slot after their last.
 */
static void crons_in_force_split_the_period(void **state)
{
	char *old[] = {(char *)"old", NULL};
	struct schedule_spec sp = spec_of("job", "*/10 * * * *", "UTC", old);
	int64_t t0 = iso("2026-03-02T10:00:00Z");
	struct history_stretch *v = NULL;
	size_t n = 0;

	(void)state;
	/* No record: the config's expression, whole. */
	assert_int_equal(history_stretches(st, &sp, t0, t0 + HOUR, &v, &n,
					   NULL), 0);
	assert_int_equal(n, 1);
	assert_false(v[0].recorded);
	free(v);
	struct store_cron_note notes[] = {
		{"old", t0 - DAY, "*/5 * * * *", "UTC"},
		{"job", t0 + 20 * MIN, "*/15 * * * *", "Asia/Kolkata"},
		{"job", t0 + 40 * MIN, "*/10 * * * *", "UTC"},
	};
	assert_int_equal(store_cron_note_many(st, notes, 3, NULL, NULL), 0);
	assert_int_equal(history_stretches(st, &sp, t0, t0 + HOUR, &v, &n,
					   NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].from_ms, t0);
	assert_int_equal(v[0].until_ms, t0 + 20 * MIN);
	assert_int_equal(v[1].until_ms, t0 + 40 * MIN);
	assert_string_equal(sc_zone_name(v[1].zone), "Asia/Kolkata");
	assert_int_equal(v[2].until_ms, t0 + HOUR);
	assert_true(v[0].recorded && v[2].recorded);
	free(v);

	/* Every 5 min for 20 min (4 slots), every 15 min of the +05:30
	 * wall clock for the next 20 (as the cron engine says), every 10
	 * from :40 (2): counted so, not as the config's 6. */
	struct config cfg = {.schedules = &sp, .n_schedules = 1};
	struct audit_report rep = {0};
	assert_int_equal(audit_run(st, &cfg, NULL, t0, t0 + HOUR, t0 + DAY,
				   NULL, &rep, NULL), 0);
	int64_t *mid = NULL;
	size_t n_mid = 0;
	bool cut = false;
	struct schedule_spec k = sp;
	struct sc_cron kx;
	assert_int_equal(sc_zone_load("Asia/Kolkata", &k.zone, NULL), 0);
	assert_int_equal(sc_cron_parse("*/15 * * * *", &kx, NULL), 0);
	k.expr = &kx;
	assert_int_equal(audit_slots(&k, t0 + 20 * MIN, t0 + 40 * MIN, 100,
				     &mid, &n_mid, &cut, NULL), 0);
	free(mid);
	assert_int_equal(rep.scheds[0].n_slots, 4 + n_mid + 2);
	assert_int_equal(rep.scheds[0].n_stretches, 3);
	audit_report_dispose(&rep);
	/* The cap counts across the stretches. */
	struct audit_opts o = {.max_slots = 5};
	assert_int_equal(audit_run(st, &cfg, NULL, t0, t0 + HOUR, t0 + DAY,
				   &o, &rep, NULL), 0);
	assert_int_equal(rep.scheds[0].n_slots, 5);
	assert_true(rep.scheds[0].truncated);
	audit_report_dispose(&rep);

	/* A reload that changes job's cron and adds new: both noted, job
	 * from the slot after its last, new from now; unchanged b is not. */
	struct schedule_spec a1[2] = {spec_of("job", "*/10 * * * *", "UTC",
					      NULL),
				      spec_of("b", "0 * * * *", "UTC", NULL)};
	struct schedule_spec a2[3] = {spec_of("job", "*/30 * * * *", "UTC",
					      NULL),
				      spec_of("b", "0 * * * *", "UTC", NULL),
				      spec_of("new", "0 * * * *", "UTC", NULL)};
	a1[0].cron = (char *)"*/10 * * * *";
	a1[1].cron = a2[1].cron = a2[2].cron = (char *)"0 * * * *";
	a2[0].cron = (char *)"*/30 * * * *";
	struct config c1 = {.schedules = a1, .n_schedules = 2};
	struct config c2 = {.schedules = a2, .n_schedules = 3};
	bool *want = NULL;
	struct history_notes h = {0};
	assert_int_equal(history_changed(&c1, &c2, &want, NULL), 0);
	assert_true(want[0] && !want[1] && want[2]);
	assert_int_equal(store_sched_last_set(st, "job", t0 + HOUR, NULL), 0);
	assert_int_equal(history_plan(st, &c2, want, t0 + DAY, &h, NULL), 0);
	assert_int_equal(h.n, 2);
	assert_string_equal(h.v[0].schedule, "job");
	assert_int_equal(h.v[0].from_ms, t0 + HOUR + 1);
	assert_string_equal(h.v[1].schedule, "new");
	assert_int_equal(h.v[1].from_ms, t0 + DAY);
	size_t w = 0;
	assert_int_equal(history_write(st, &h, &w, NULL), 0);
	assert_int_equal(w, 2);
	assert_int_equal(h.n, 0);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classes),
		cmocka_unit_test(slots_half_open_and_capped),
		cmocka_unit_test(slots_dst_day),
		cmocka_unit_test_setup_teardown(
			accounted_by_rows_ranges_jobs_and_old_names,
			store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(run_and_cap, store_setup,
						store_teardown),
		cmocka_unit_test_setup_teardown(crons_in_force_split_the_period,
						store_setup, store_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
