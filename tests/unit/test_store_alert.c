/*
 * test_store_alert.c - the store's alert rows and their send rows
 * (store.h, "alerts"; schema 4), on every backend: a raise happens once
 * per key, a job's lost alert is raised once per death, a newer lost
 * alert replaces the open one of its slot, a close and a realert are
 * compare-and-sets, staging is idempotent, a claim takes only due rows
 * and never hands one row to two claimers, and a finish is fenced by its
 * lease token. Time moves on the test clock only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define SEC 1000LL
#define MIN 60000LL
#define HOUR 3600000LL

struct fix {
	struct sc_clock *clock;
	struct store *s;
};

static void fix_open(void **state, struct fix *f)
{
	f->clock = sc_clock_virtual_new(T0);
	f->s = tb_open(state, f->clock);
}

static void fix_close(struct fix *f)
{
	store_close(f->s);
	sc_clock_free(f->clock);
}

static struct store_alert mk(const char *sched, int64_t slot,
			     const char *reason, int64_t gen, int64_t job)
{
	struct store_alert a = {.slot_ms = slot, .last_slot_ms = slot,
				.n_slots = 1, .generation = gen,
				.job_id = job, .attempts = 3};

	snprintf(a.schedule, sizeof(a.schedule), "%s", sched);
	snprintf(a.reason, sizeof(a.reason), "%s", reason);
	snprintf(a.error_msg, sizeof(a.error_msg), "exit 1");
	if (strcmp(reason, ALERT_REASON_RECOVERED) == 0)
		a.status = ALERT_CLOSED;
	return a;
}

static int64_t do_raise(struct fix *f, const struct store_alert *a,
		     bool want_created)
{
	bool created = !want_created;
	int64_t id = 0;
	struct sc_err err = {0};

	if (store_alert_raise(f->s, a, &created, &id, &err) != 0)
		fail_msg("raise: %s", err.msg);
	assert_int_equal(created, want_created);
	assert_true(id > 0);
	return id;
}

/* The alert of id (must exist). */
static struct store_alert get(struct fix *f, int64_t id)
{
	struct store_alert *v = NULL, a = {0};
	size_t n = 0;

	assert_int_equal(store_alert_list(f->s, NULL, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if (v[i].id == id)
			a = v[i];
	sc_free(v);
	assert_int_equal(a.id, id);
	return a;
}

static size_t count_alerts(struct fix *f, const struct alert_filter *af)
{
	struct store_alert *v = NULL;
	size_t n = 0;

	assert_int_equal(store_alert_list(f->s, af, &v, &n, NULL), 0);
	if (n == 0)
		assert_null(v);
	sc_free(v);
	return n;
}

/* A job of (sched, slot) that dies on its only attempt with "boom N". */
static int64_t dead_job(struct fix *f, const char *sched, int64_t slot)
{
	struct sc_retry_policy once = {1, SC_BACKOFF_FIXED, MIN};
	struct store_job j;
	struct ledger_row r = {0};
	struct sc_err err = {0};
	int64_t id;
	size_t n = 0;
	char msg[32];

	/* Due now, whatever its slot. */
	assert_int_equal(store_job_enqueue(f->s, sched, slot, &once,
					   sc_clock_now_ms(f->clock), false,
					   &id, NULL, NULL), 0);
	assert_int_equal(store_job_claim(f->s, "w", MIN, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(j.id, id);
	snprintf(msg, sizeof(msg), "boom %d", j.attempts);
	r.error_msg = msg;
	snprintf(r.error_class, sizeof(r.error_class), "task");
	if (store_job_finish(f->s, j.id, j.lease_token, JOB_DEAD, 0, &r,
			     &err) != 0)
		fail_msg("finish: %s", err.msg);
	return id;
}

static size_t unalerted(struct fix *f, struct store_dead_job *out,
			size_t max)
{
	size_t n = 99;

	assert_int_equal(store_alert_dead_unalerted(f->s, out, max, &n, NULL),
			 0);
	return n;
}

static size_t count_ledger(struct fix *f, const char *outcome)
{
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(f->s, &lf, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

static struct ledger_row mk_row(const char *outcome, int64_t slot)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = slot};

	snprintf(r.schedule, sizeof(r.schedule), "daily");
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	return r;
}

/* ---- raise ------------------------------------------------------------ */

/* One alert per (schedule, slot, reason, generation): the second raise
 * of a key creates nothing and names the first one. */
static void raise_once_per_key(void **state)
{
	struct fix f;

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &a, true);
	sc_clock_advance_ms(f.clock, MIN);
	snprintf(a.error_msg, sizeof(a.error_msg), "another text");
	assert_int_equal(do_raise(&f, &a, false), id);
	struct store_alert got = get(&f, id);
	assert_string_equal(got.error_msg, "exit 1");
	assert_int_equal(got.created_ms, T0);
	assert_int_equal(got.round_ms, T0);
	assert_int_equal(got.rounds, 1);
	assert_int_equal(got.staged_rounds, 0);
	assert_int_equal(got.status, ALERT_OPEN);
	assert_int_equal(got.closed_ms, 0);
	assert_int_equal(got.attempts, 3);
	assert_int_equal(count_alerts(&f, NULL), 1);
	/* Another reason, generation or slot is another alert. */
	struct store_alert b = mk("daily", T0, ALERT_REASON_MISSED, 1, 0);
	assert_true(do_raise(&f, &b, true) != id);
	b = mk("daily", T0 + HOUR, ALERT_REASON_LOST, 1, 0);
	assert_true(do_raise(&f, &b, true) != id);
	/* A recovered message is closed at birth. */
	b = mk("daily", T0, ALERT_REASON_RECOVERED, id, 0);
	got = get(&f, do_raise(&f, &b, true));
	assert_int_equal(got.status, ALERT_CLOSED);
	assert_int_equal(got.closed_ms, T0 + MIN);
	assert_int_equal(count_alerts(&f, NULL), 4);
	fix_close(&f);
}

/* A DEAD job is listed until its lost alert is raised with its job id,
 * created or not; the entry carries the "lost" row's message. */
static void job_id_marks_the_job_alerted(void **state)
{
	struct fix f;
	struct store_dead_job d[8];

	fix_open(state, &f);
	assert_int_equal(unalerted(&f, d, 8), 0);
	int64_t j1 = dead_job(&f, "daily", T0);
	int64_t j2 = dead_job(&f, "daily", T0 + HOUR);
	assert_int_equal(unalerted(&f, d, 8), 2);
	assert_int_equal(d[0].job_id, j1);
	assert_int_equal(d[1].job_id, j2);
	assert_string_equal(d[0].schedule, "daily");
	assert_int_equal(d[0].slot_ms, T0);
	assert_int_equal(d[0].attempt, 1);
	assert_string_equal(d[0].error_msg, "boom 1");
	/* At most max. */
	assert_int_equal(unalerted(&f, d, 1), 1);
	assert_int_equal(d[0].job_id, j1);

	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, j1);
	do_raise(&f, &a, true);
	assert_int_equal(unalerted(&f, d, 8), 1);
	assert_int_equal(d[0].job_id, j2);
	/* A raise that finds its key taken still marks the job. */
	struct store_alert b = mk("daily", T0 + HOUR, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &b, true);
	assert_int_equal(unalerted(&f, d, 8), 1);
	b.job_id = j2;
	assert_int_equal(do_raise(&f, &b, false), id);
	assert_int_equal(unalerted(&f, d, 8), 0);
	fix_close(&f);
}

/* A revived job that dies again is listed again, with its new attempt
 * and the newest "lost" row's message. */
static void revive_lists_the_job_again(void **state)
{
	struct fix f;
	struct store_dead_job d[4];
	struct store_job j;
	struct ledger_row r = {0};
	size_t n = 0;

	fix_open(state, &f);
	int64_t id = dead_job(&f, "daily", T0);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, id);
	do_raise(&f, &a, true);
	assert_int_equal(unalerted(&f, d, 4), 0);
	assert_int_equal(store_job_revive(f.s, id, 1, NULL), 0);
	assert_int_equal(unalerted(&f, d, 4), 0); /* READY, not dead */
	assert_int_equal(store_job_claim(f.s, "w", MIN, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	r.error_msg = "boom again";
	assert_int_equal(store_job_finish(f.s, j.id, j.lease_token, JOB_DEAD,
					  0, &r, NULL), 0);
	assert_int_equal(unalerted(&f, d, 4), 1);
	assert_int_equal(d[0].job_id, id);
	assert_int_equal(d[0].attempt, 2);
	assert_string_equal(d[0].error_msg, "boom again");
	fix_close(&f);
}

/* A new lost alert of a slot closes the older open lost ones of that
 * slot, and nothing else. */
static void new_lost_alert_closes_the_older_open_one(void **state)
{
	struct fix f;

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t first = do_raise(&f, &a, true);
	a = mk("daily", T0, ALERT_REASON_MISSED, 0, 0);
	int64_t missed = do_raise(&f, &a, true);
	a = mk("daily", T0 + HOUR, ALERT_REASON_LOST, 1, 0);
	int64_t other_slot = do_raise(&f, &a, true);
	a = mk("other", T0, ALERT_REASON_LOST, 1, 0);
	int64_t other_sched = do_raise(&f, &a, true);
	sc_clock_advance_ms(f.clock, HOUR);
	a = mk("daily", T0, ALERT_REASON_LOST, 3, 0);
	int64_t second = do_raise(&f, &a, true);

	struct store_alert g = get(&f, first);
	assert_int_equal(g.status, ALERT_CLOSED);
	assert_int_equal(g.closed_ms, T0 + HOUR);
	assert_int_equal(get(&f, second).status, ALERT_OPEN);
	assert_int_equal(get(&f, missed).status, ALERT_OPEN);
	assert_int_equal(get(&f, other_slot).status, ALERT_OPEN);
	assert_int_equal(get(&f, other_sched).status, ALERT_OPEN);
	/* Raising the older key again creates nothing and closes nothing. */
	a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	assert_int_equal(do_raise(&f, &a, false), first);
	assert_int_equal(get(&f, second).status, ALERT_OPEN);
	/* Only a lost alert supersedes (store_alert_raise_rule): a newer
	 * missed one of the slot leaves the older open; a recovered one is
	 * closed at birth, at the store's now, and closes nothing. */
	sc_clock_advance_ms(f.clock, HOUR);
	a = mk("daily", T0, ALERT_REASON_MISSED, 1, 0);
	int64_t missed2 = do_raise(&f, &a, true);
	assert_int_equal(get(&f, missed).status, ALERT_OPEN);
	assert_int_equal(get(&f, missed2).closed_ms, 0);
	a = mk("daily", T0, ALERT_REASON_RECOVERED, 0, 0);
	g = get(&f, do_raise(&f, &a, true));
	assert_int_equal(g.status, ALERT_CLOSED);
	assert_int_equal(g.closed_ms, T0 + 2 * HOUR);
	assert_int_equal(get(&f, second).status, ALERT_OPEN);
	assert_int_equal(get(&f, missed2).status, ALERT_OPEN);
	fix_close(&f);
}

/* ---- migration ---------------------------------------------------------- */

/* Runs SQL on the raw database of this test (sqlite file or pg schema). */
static void raw_sql(void **state, const char *sql)
{
	struct tb *b = *state;

	if (!b->is_pg) {
		sqlite3 *db;
		char *msg = NULL;
		assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
		if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
			fail_msg("sqlite: %s: %s", sql, msg);
		sqlite3_close(db);
		return;
	}
	char q[2048];
	snprintf(q, sizeof(q), "SET search_path TO %s; %s", b->schema, sql);
	if (tb_pg_exec(b->base, q) != 0)
		fail_msg("postgresql: %s", q);
}

/* Turns a current store (schema 9) back into version 3. */
static void to_version_3(void **state)
{
	raw_sql(state, TB_UNDO_9(state));
	raw_sql(state, "DROP INDEX ledger_skipped");
	raw_sql(state, "DROP TABLE pauses");
	raw_sql(state, "DROP INDEX ledger_paused_once");
	raw_sql(state, "DROP INDEX ledger_ok");
	raw_sql(state, "DROP TABLE leases");
	raw_sql(state, "DROP INDEX ledger_period");
	raw_sql(state, "DROP INDEX ledger_lost");
	raw_sql(state, "DROP INDEX ledger_acked");
	raw_sql(state, "DROP INDEX jobs_open");
	raw_sql(state, "DROP TABLE alert_sends");
	raw_sql(state, "DROP TABLE alerts");
	raw_sql(state, "DROP INDEX jobs_unalerted");
	raw_sql(state, "ALTER TABLE jobs DROP COLUMN alerted");
	raw_sql(state, tb_is_sqlite(state)
			       ? "PRAGMA user_version = 3"
			       : "UPDATE schema_version SET version = 3");
}

/* The jobs already DEAD when a version 3 store migrates count as
 * alerted (their alerts went out under the old code); one that dies
 * after the migration is listed. */
static void migration_from_3_marks_dead_jobs_alerted(void **state)
{
	struct fix f;
	struct store_dead_job d[4];
	struct sc_retry_policy once = {1, SC_BACKOFF_FIXED, MIN};
	int64_t later;

	fix_open(state, &f);
	dead_job(&f, "daily", T0);
	dead_job(&f, "daily", T0 + HOUR);
	assert_int_equal(store_job_enqueue(f.s, "daily", T0 + 5 * HOUR, &once,
					   T0 + 5 * HOUR, false, &later, NULL,
					   NULL), 0);
	store_close(f.s);
	to_version_3(state);
	f.s = tb_open(state, f.clock);
	assert_int_equal(unalerted(&f, d, 4), 0);
	assert_int_equal(count_alerts(&f, NULL), 0);

	struct store_job j;
	struct ledger_row r = {0};
	size_t n = 0;
	sc_clock_advance_ms(f.clock, 6 * HOUR);
	assert_int_equal(store_job_claim(f.s, "w", MIN, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(j.id, later);
	assert_int_equal(store_job_finish(f.s, j.id, j.lease_token, JOB_DEAD,
					  0, &r, NULL), 0);
	assert_int_equal(unalerted(&f, d, 4), 1);
	assert_int_equal(d[0].job_id, later);
	store_close(f.s);
	/* Reopening a current store migrates nothing more. */
	f.s = tb_open(state, f.clock);
	assert_int_equal(unalerted(&f, d, 4), 1);
	fix_close(&f);
}

/* ---- list -------------------------------------------------------------- */

static void list_filters(void **state)
{
	struct fix f;
	struct alert_filter af;
	struct store_alert *v = NULL;
	size_t n = 0;
	const char *targets[] = {"oncall"};
	bool changed;

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t lost = do_raise(&f, &a, true);
	/* Missed T0+2h .. T0+5h, 4 slots. */
	a = mk("daily", T0 + 2 * HOUR, ALERT_REASON_MISSED, 0, 0);
	a.last_slot_ms = T0 + 5 * HOUR;
	a.n_slots = 4;
	int64_t missed = do_raise(&f, &a, true);
	a = mk("hourly", T0 + 3 * HOUR, ALERT_REASON_LOST, 1, 0);
	int64_t hourly = do_raise(&f, &a, true);
	a = mk("daily", T0 + 10 * HOUR, ALERT_REASON_LOST, 1, 0);
	int64_t late = do_raise(&f, &a, true);
	assert_int_equal(store_alert_close(f.s, late, ALERT_ACKED, NULL, NULL,
					   NULL, &changed, NULL), 0);
	assert_int_equal(store_alert_stage(f.s, lost, 0, targets, 1, "m",
					   NULL), 0);

	struct alert_filter all = {.slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	/* Everything, oldest first, with its fields. */
	assert_int_equal(store_alert_list(f.s, &all, &v, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].id, lost);
	assert_int_equal(v[1].id, missed);
	assert_int_equal(v[1].last_slot_ms, T0 + 5 * HOUR);
	assert_int_equal(v[1].n_slots, 4);
	assert_string_equal(v[1].reason, ALERT_REASON_MISSED);
	assert_int_equal(v[2].id, hourly);
	assert_int_equal(v[3].id, late);
	sc_free(v);

	af = all;
	af.open_only = true;
	assert_int_equal(count_alerts(&f, &af), 3);
	af = all;
	af.unstaged_only = true; /* all but the staged one */
	assert_int_equal(count_alerts(&f, &af), 3);
	af.open_only = true;
	assert_int_equal(count_alerts(&f, &af), 2);
	af = all;
	af.schedule = "hourly";
	assert_int_equal(count_alerts(&f, &af), 1);
	/* A slot inside the missed range finds the missed alert; its
	 * edges too; a slot outside finds nothing. */
	af = all;
	af.slot_ms = T0 + 4 * HOUR;
	assert_int_equal(store_alert_list(f.s, &af, &v, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, missed);
	sc_free(v);
	af.slot_ms = T0 + 5 * HOUR;
	assert_int_equal(count_alerts(&f, &af), 1);
	af.slot_ms = T0 + 2 * HOUR;
	assert_int_equal(count_alerts(&f, &af), 1);
	af.slot_ms = T0 + 6 * HOUR;
	assert_int_equal(count_alerts(&f, &af), 0);
	af.slot_ms = T0 + 3 * HOUR; /* missed and hourly */
	assert_int_equal(count_alerts(&f, &af), 2);
	af.slot_ms = T0;
	assert_int_equal(count_alerts(&f, &af), 1);
	/* since <= slot_ms < until. */
	af = all;
	af.since_ms = T0 + 2 * HOUR;
	af.until_ms = T0 + 10 * HOUR;
	assert_int_equal(count_alerts(&f, &af), 2);
	af.until_ms = T0 + 10 * HOUR + 1;
	assert_int_equal(count_alerts(&f, &af), 3);
	/* limit: the oldest ones. */
	af = all;
	af.limit = 2;
	assert_int_equal(store_alert_list(f.s, &af, &v, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].id, lost);
	assert_int_equal(v[1].id, missed);
	sc_free(v);
	af.limit = -1;
	assert_int_equal(store_alert_list(f.s, &af, &v, &n, NULL), SC_EINVAL);
	/* NULL: all. */
	assert_int_equal(count_alerts(&f, NULL), 4);
	fix_close(&f);
}

/* ---- close, realert ------------------------------------------------------ */

/* A close happens once: the first closes it, raises `then` and appends
 * its row; a second writes nothing at all. */
static void close_is_a_compare_and_set(void **state)
{
	struct fix f;
	bool changed = false;

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &a, true);
	sc_clock_advance_ms(f.clock, HOUR);
	struct store_alert then = mk("daily", T0, ALERT_REASON_RECOVERED, id, 0);
	struct ledger_row row = mk_row(LEDGER_RECOVERED, T0);
	assert_int_equal(store_alert_close(f.s, id, ALERT_HEALED, "fixed",
					   &then, &row, &changed, NULL), 0);
	assert_true(changed);
	struct store_alert g = get(&f, id);
	assert_int_equal(g.status, ALERT_HEALED);
	assert_int_equal(g.closed_ms, T0 + HOUR);
	assert_string_equal(g.note, "fixed");
	assert_int_equal(count_ledger(&f, LEDGER_RECOVERED), 1);
	struct alert_filter af = {.schedule = "daily", .slot_ms = INT64_MIN,
				  .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	assert_int_equal(count_alerts(&f, &af), 2);
	struct store_alert *v = NULL;
	size_t n = 0;
	assert_int_equal(store_alert_list(f.s, &af, &v, &n, NULL), 0);
	assert_string_equal(v[1].reason, ALERT_REASON_RECOVERED);
	assert_int_equal(v[1].generation, id);
	assert_int_equal(v[1].status, ALERT_CLOSED);
	sc_free(v);

	/* The second close: nothing changes, no row, no `then`. */
	struct store_alert then2 = mk("daily", T0, ALERT_REASON_RECOVERED,
				      id + 1000, 0);
	changed = true;
	assert_int_equal(store_alert_close(f.s, id, ALERT_ACKED, "late",
					   &then2, &row, &changed, NULL), 0);
	assert_false(changed);
	g = get(&f, id);
	assert_int_equal(g.status, ALERT_HEALED);
	assert_string_equal(g.note, "fixed");
	assert_int_equal(count_ledger(&f, LEDGER_RECOVERED), 1);
	assert_int_equal(count_alerts(&f, &af), 2);
	/* No such alert. */
	assert_int_equal(store_alert_close(f.s, id + 9999, ALERT_ACKED, NULL,
					   NULL, NULL, &changed, NULL),
			 SC_ENOENT);
	/* Only ACKED or HEALED. */
	assert_int_equal(store_alert_close(f.s, id, ALERT_CLOSED, NULL, NULL,
					   NULL, &changed, NULL), SC_EINVAL);
	fix_close(&f);
}

/* The close, its `then` and its row commit together or not at all. */
static void close_writes_all_or_nothing(void **state)
{
	struct fix f;
	bool changed = true;

	TU_NEED_TEST_SEAMS(); /* the store.commit:err failpoint */

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &a, true);
	struct store_alert then = mk("daily", T0, ALERT_REASON_RECOVERED, id, 0);
	struct ledger_row row = mk_row(LEDGER_ACKED, T0);
	setenv("SURECRON_FAILPOINTS", "store.commit:err", 1);
	int rc = store_alert_close(f.s, id, ALERT_ACKED, "n", &then, &row,
				   &changed, NULL);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	assert_int_equal(get(&f, id).status, ALERT_OPEN);
	assert_int_equal(count_alerts(&f, NULL), 1);
	assert_int_equal(count_ledger(&f, LEDGER_ACKED), 0);
	/* And then it goes through whole. */
	assert_int_equal(store_alert_close(f.s, id, ALERT_ACKED, "n", &then,
					   &row, &changed, NULL), 0);
	assert_true(changed);
	assert_int_equal(count_alerts(&f, NULL), 2);
	assert_int_equal(count_ledger(&f, LEDGER_ACKED), 1);
	fix_close(&f);
}

/* Of two realerts that saw the same rounds, one wins; a closed alert
 * gets no new round. */
static void realert_is_a_compare_and_set(void **state)
{
	struct fix f;
	bool won = false;

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_MISSED, 0, 0);
	int64_t id = do_raise(&f, &a, true);
	sc_clock_advance_ms(f.clock, 4 * HOUR);
	assert_int_equal(store_alert_realert(f.s, id, 1, &won, NULL), 0);
	assert_true(won);
	assert_int_equal(store_alert_realert(f.s, id, 1, &won, NULL), 0);
	assert_false(won);
	struct store_alert g = get(&f, id);
	assert_int_equal(g.rounds, 2);
	assert_int_equal(g.round_ms, T0 + 4 * HOUR);
	assert_int_equal(g.created_ms, T0);
	bool changed;
	assert_int_equal(store_alert_close(f.s, id, ALERT_ACKED, NULL, NULL,
					   NULL, &changed, NULL), 0);
	assert_int_equal(store_alert_realert(f.s, id, 2, &won, NULL), 0);
	assert_false(won);
	assert_int_equal(get(&f, id).rounds, 2);
	fix_close(&f);
}

/* ---- stage ----------------------------------------------------------- */

static size_t sends(struct fix *f, int64_t alert, struct store_alert_send **v)
{
	size_t n = 0;

	assert_int_equal(store_alert_sends(f->s, alert, v, &n, NULL), 0);
	return n;
}

/* One PENDING row per (round, target), staged once; staged_rounds only
 * grows. */
static void stage_is_idempotent(void **state)
{
	struct fix f;
	struct store_alert_send *v = NULL;
	const char *ab[] = {"a", "b"};

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &a, true);
	sc_clock_advance_ms(f.clock, SEC);
	assert_int_equal(store_alert_stage(f.s, id, 0, ab, 2, "first", NULL),
			 0);
	assert_int_equal(get(&f, id).staged_rounds, 1);
	assert_int_equal(sends(&f, id, &v), 2);
	assert_string_equal(v[0].target, "a");
	assert_string_equal(v[1].target, "b");
	assert_int_equal(v[0].state, SEND_PENDING);
	assert_int_equal(v[0].round, 0);
	assert_int_equal(v[0].n_tries, 0);
	assert_int_equal(v[0].next_try_ms, T0 + SEC);
	assert_int_equal(v[0].created_ms, T0 + SEC);
	assert_int_equal(v[0].alert_id, id);
	assert_null(v[0].body);
	assert_string_equal(v[0].schedule, "daily");
	assert_int_equal(v[0].slot_ms, T0);
	assert_string_equal(v[0].reason, ALERT_REASON_LOST);
	assert_int_equal(v[0].alert_created_ms, T0);
	store_alert_sends_free(v, 2);
	/* Again: no new row, the first message stays. */
	assert_int_equal(store_alert_stage(f.s, id, 0, ab, 2, "second", NULL),
			 0);
	assert_int_equal(sends(&f, id, &v), 2);
	store_alert_sends_free(v, 2);
	struct store_alert_send c[4];
	size_t n = 0;
	assert_int_equal(store_alert_send_claim(f.s, MIN, c, 4, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(c[0].body, "first");
	store_alert_send_dispose(&c[0]);
	store_alert_send_dispose(&c[1]);
	assert_null(c[0].body);
	/* Round 1, one target; round 0 again leaves staged_rounds at 2. */
	assert_int_equal(store_alert_stage(f.s, id, 1, ab, 1, "r1", NULL), 0);
	assert_int_equal(get(&f, id).staged_rounds, 2);
	assert_int_equal(store_alert_stage(f.s, id, 0, ab, 2, "x", NULL), 0);
	assert_int_equal(get(&f, id).staged_rounds, 2);
	assert_int_equal(sends(&f, id, &v), 3);
	assert_int_equal(v[2].round, 1);
	store_alert_sends_free(v, 3);
	/* No target: the round counts as staged, no row. */
	assert_int_equal(store_alert_stage(f.s, id, 2, NULL, 0, NULL, NULL),
			 0);
	assert_int_equal(get(&f, id).staged_rounds, 3);
	assert_int_equal(sends(&f, id, &v), 3);
	store_alert_sends_free(v, 3);
	/* A name is kept byte for byte, quotes and backslashes included
	 * (PostgreSQL gets the round's targets as one array). */
	const char *odd[] = {"q\"uo\\te", "b,c}"};
	assert_int_equal(store_alert_stage(f.s, id, 3, odd, 2, "m", NULL), 0);
	assert_int_equal(sends(&f, id, &v), 5);
	assert_string_equal(v[3].target, "q\"uo\\te");
	assert_string_equal(v[4].target, "b,c}");
	store_alert_sends_free(v, 5);
	/* No such alert: nothing written. */
	assert_int_equal(store_alert_stage(f.s, id + 99, 0, ab, 2, "m", NULL),
			 SC_ENOENT);
	assert_int_equal(sends(&f, id + 99, &v), 0);
	assert_null(v);
	fix_close(&f);
}

/* ---- claim, finish ------------------------------------------------------ */

/* Claims until nothing is due; returns how many, disposing of them. */
static size_t claim_all(struct fix *f, struct store_alert_send *out,
			size_t max)
{
	size_t n = 99;
	struct sc_err err = {0};

	if (store_alert_send_claim(f->s, 30 * SEC, out, max, &n, &err) != 0)
		fail_msg("claim: %s", err.msg);
	return n;
}

static void finish(struct fix *f, const struct store_alert_send *c,
		   enum send_state st, int64_t next_try)
{
	struct sc_err err = {0};

	if (store_alert_send_finish(f->s, c->id, c->lease_token, st, next_try,
				    "why", NULL, &err) != 0)
		fail_msg("finish: %s", err.msg);
}

static void dispose_all(struct store_alert_send *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_alert_send_dispose(&v[i]);
}

/*
 * What is due: PENDING, FAILED and UNKNOWN once next_try has come, and
 * SENDING once its lease expired (reported UNKNOWN); never SENT or
 * ABANDONED, never a live lease, never a retry before its time.
 */
static void claim_takes_only_due_rows(void **state)
{
	struct fix f;
	struct store_alert_send c[8];
	const char *t[] = {"a", "b", "c", "d", "e"};

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &a, true);
	assert_int_equal(store_alert_stage(f.s, id, 0, t, 5, "msg", NULL), 0);
	assert_int_equal(claim_all(&f, c, 8), 5);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(c[i].target, t[i]); /* oldest first */
		assert_int_equal(c[i].state, SEND_PENDING);
		assert_int_equal(c[i].n_tries, 1);
		assert_string_equal(c[i].body, "msg");
		assert_string_equal(c[i].schedule, "daily");
		assert_int_equal(c[i].slot_ms, T0);
		assert_string_equal(c[i].reason, ALERT_REASON_LOST);
		assert_int_equal(c[i].alert_created_ms, T0);
	}
	/* Live leases: nothing due. */
	struct store_alert_send d[8];
	assert_int_equal(claim_all(&f, d, 8), 0);
	finish(&f, &c[0], SEND_FAILED, T0 + MIN);    /* a: retry later */
	finish(&f, &c[1], SEND_SENT, 0);             /* b: done */
	finish(&f, &c[2], SEND_ABANDONED, 0);        /* c: given up */
	finish(&f, &c[3], SEND_UNKNOWN, T0 + 2 * MIN); /* d: resend later */
	/* e stays SENDING, lease until T0 + 30 s. */
	struct store_alert_send e_first = c[4];
	dispose_all(c, 5);

	sc_clock_advance_ms(f.clock, 30 * SEC); /* the lease's last instant */
	assert_int_equal(claim_all(&f, c, 8), 0);
	sc_clock_advance_ms(f.clock, 1);
	assert_int_equal(claim_all(&f, c, 8), 1);
	assert_string_equal(c[0].target, "e");
	assert_int_equal(c[0].state, SEND_UNKNOWN);
	assert_int_equal(c[0].n_tries, 2);
	assert_true(c[0].lease_token != e_first.lease_token);
	finish(&f, &c[0], SEND_SENT, 0);
	dispose_all(c, 1);

	sc_clock_set_ms(f.clock, T0 + MIN - 1);
	assert_int_equal(claim_all(&f, c, 8), 0);
	sc_clock_set_ms(f.clock, T0 + MIN);
	assert_int_equal(claim_all(&f, c, 8), 1);
	assert_string_equal(c[0].target, "a");
	assert_int_equal(c[0].state, SEND_FAILED);
	assert_int_equal(c[0].n_tries, 2);
	assert_string_equal(c[0].last_error, "why");
	finish(&f, &c[0], SEND_SENT, 0);
	dispose_all(c, 1);
	sc_clock_set_ms(f.clock, T0 + 2 * MIN);
	assert_int_equal(claim_all(&f, c, 8), 1);
	assert_string_equal(c[0].target, "d");
	assert_int_equal(c[0].state, SEND_UNKNOWN);
	finish(&f, &c[0], SEND_SENT, 0);
	dispose_all(c, 1);
	/* SENT and ABANDONED rows are never due again. */
	sc_clock_advance_ms(f.clock, 30 * 24 * HOUR);
	assert_int_equal(claim_all(&f, c, 8), 0);

	struct store_alert_send *v = NULL;
	assert_int_equal(sends(&f, id, &v), 5);
	assert_int_equal(v[0].state, SEND_SENT);
	assert_int_equal(v[0].sent_ms, T0 + MIN);
	assert_int_equal(v[1].state, SEND_SENT);
	assert_int_equal(v[1].sent_ms, T0);
	assert_int_equal(v[2].state, SEND_ABANDONED);
	assert_int_equal(v[2].sent_ms, 0);
	assert_int_equal(v[4].n_tries, 2);
	store_alert_sends_free(v, 5);
	/* At most max per claim. */
	assert_int_equal(store_alert_stage(f.s, id, 1, t, 5, "r1", NULL), 0);
	assert_int_equal(claim_all(&f, c, 2), 2);
	assert_string_equal(c[0].target, "a");
	assert_string_equal(c[1].target, "b");
	dispose_all(c, 2);
	fix_close(&f);
}

/* A finish under a token that another claim replaced is refused and
 * writes nothing, neither the state nor the ledger row; the current
 * token's finish writes both, and SENT records sent_ms. */
static void finish_is_fenced_by_the_lease(void **state)
{
	struct fix f;
	struct store_alert_send c[2], old;
	const char *t[] = {"a"};
	struct sc_err err = {0};

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	int64_t id = do_raise(&f, &a, true);
	assert_int_equal(store_alert_stage(f.s, id, 0, t, 1, "msg", NULL), 0);
	assert_int_equal(claim_all(&f, c, 2), 1);
	old = c[0];
	old.body = NULL;
	dispose_all(c, 1);
	sc_clock_advance_ms(f.clock, 31 * SEC);
	assert_int_equal(claim_all(&f, c, 2), 1);
	assert_int_equal(c[0].id, old.id);

	struct ledger_row row = mk_row(LEDGER_ALERT, T0);
	assert_int_equal(store_alert_send_finish(f.s, old.id, old.lease_token,
						 SEND_SENT, 0, "stale", &row,
						 &err), SC_ELEASE);
	/* The words of store_lease_error, the same on every backend. */
	char want[200];
	snprintf(want, sizeof(want), "finish of alert send %lld refused: "
		 "lease lost (token %lld no longer current: taken over or "
		 "finished)", (long long)old.id, (long long)old.lease_token);
	assert_string_equal(err.msg, want);
	struct store_alert_send *v = NULL;
	assert_int_equal(sends(&f, id, &v), 1);
	assert_int_equal(v[0].state, SEND_SENDING);
	assert_int_equal(v[0].sent_ms, 0);
	assert_string_equal(v[0].last_error, "");
	store_alert_sends_free(v, 1);
	assert_int_equal(count_ledger(&f, LEDGER_ALERT), 0);

	sc_clock_advance_ms(f.clock, SEC);
	assert_int_equal(store_alert_send_finish(f.s, c[0].id, c[0].lease_token,
						 SEND_SENT, 0, NULL, &row,
						 NULL), 0);
	assert_int_equal(sends(&f, id, &v), 1);
	assert_int_equal(v[0].state, SEND_SENT);
	assert_int_equal(v[0].sent_ms, T0 + 32 * SEC);
	assert_int_equal(v[0].n_tries, 2);
	store_alert_sends_free(v, 1);
	assert_int_equal(count_ledger(&f, LEDGER_ALERT), 1);
	/* A finished claim is over: the same token again is refused. */
	assert_int_equal(store_alert_send_finish(f.s, c[0].id, c[0].lease_token,
						 SEND_FAILED, 0, NULL, &row,
						 NULL), SC_ELEASE);
	assert_int_equal(count_ledger(&f, LEDGER_ALERT), 1);
	dispose_all(c, 1);
	sc_err_clear(&err);
	assert_int_equal(store_alert_send_finish(f.s, old.id + 99, 1, SEND_SENT,
						 0, NULL, NULL, &err),
			 SC_ENOENT);
	snprintf(want, sizeof(want), "no alert send %lld",
		 (long long)(old.id + 99));
	assert_string_equal(err.msg, want);
	assert_int_equal(store_alert_send_finish(f.s, old.id, 1, SEND_PENDING,
						 0, NULL, NULL, NULL),
			 SC_EINVAL);
	fix_close(&f);
}

#define N_CLAIMERS 4
#define N_ALERTS 10
#define N_TARGETS 5

struct claimer {
	const char *url;
	struct sc_clock *clock;
	pthread_barrier_t *start;
	int64_t got[N_ALERTS * N_TARGETS];
	size_t n;
	int rc;
};

static void *claimer_main(void *arg)
{
	struct claimer *c = arg;
	struct store *s = NULL;
	struct store_alert_send out[3];
	size_t n;

	c->rc = store_open(c->url, c->clock, &s, NULL);
	pthread_barrier_wait(c->start);
	while (!c->rc) {
		n = 0;
		c->rc = store_alert_send_claim(s, MIN, out, 3, &n, NULL);
		for (size_t i = 0; i < n; i++) {
			if (c->n < N_ALERTS * N_TARGETS)
				c->got[c->n] = out[i].id;
			c->n++;
			store_alert_send_dispose(&out[i]);
		}
		if (n == 0)
			break;
	}
	store_close(s);
	return NULL;
}

/* Handles claiming at once (threads, one handle each) never get the
 * same row, and together take every due row. */
static void concurrent_claims_never_share_a_row(void **state)
{
	struct fix f;
	static struct claimer c[N_CLAIMERS];
	static unsigned char seen[N_ALERTS * N_TARGETS + 1];
	pthread_t t[N_CLAIMERS];
	pthread_barrier_t start;
	const char *targets[N_TARGETS] = {"a", "b", "c", "d", "e"};

	fix_open(state, &f);
	for (int i = 0; i < N_ALERTS; i++) {
		struct store_alert a = mk("daily", T0 + i * HOUR,
					  ALERT_REASON_LOST, 1, 0);
		int64_t id = do_raise(&f, &a, true);
		assert_int_equal(store_alert_stage(f.s, id, 0, targets,
						   N_TARGETS, "m", NULL), 0);
	}
	assert_int_equal(pthread_barrier_init(&start, NULL, N_CLAIMERS), 0);
	for (int i = 0; i < N_CLAIMERS; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].url = tb_url(state);
		c[i].clock = f.clock;
		c[i].start = &start;
		assert_int_equal(pthread_create(&t[i], NULL, claimer_main,
						&c[i]), 0);
	}
	size_t total = 0;
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < N_CLAIMERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].rc, 0);
		assert_true(c[i].n <= N_ALERTS * N_TARGETS);
		for (size_t k = 0; k < c[i].n; k++) {
			int64_t id = c[i].got[k];
			assert_true(id >= 1 && id <= N_ALERTS * N_TARGETS);
			assert_int_equal(seen[id], 0);
			seen[id] = 1;
		}
		total += c[i].n;
	}
	pthread_barrier_destroy(&start);
	assert_int_equal(total, N_ALERTS * N_TARGETS);
	fix_close(&f);
}

/* The wrappers refuse bad arguments before any backend runs. */
static void bad_arguments_are_refused(void **state)
{
	struct fix f;
	struct store_alert_send c[1];
	struct store_dead_job d[1];
	size_t n;
	const char *bad[] = {""};

	fix_open(state, &f);
	struct store_alert a = mk("daily", T0, ALERT_REASON_LOST, 1, 0);
	struct store_alert noname = a;
	noname.schedule[0] = '\0';
	assert_int_equal(store_alert_raise(f.s, &noname, NULL, NULL, NULL),
			 SC_EINVAL);
	struct store_alert noreason = a;
	noreason.reason[0] = '\0';
	assert_int_equal(store_alert_raise(f.s, &noreason, NULL, NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_raise(f.s, NULL, NULL, NULL, NULL),
			 SC_EINVAL);
	int64_t id = do_raise(&f, &a, true);
	assert_int_equal(store_alert_stage(f.s, id, 0, bad, 1, "m", NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_stage(f.s, id, -1, NULL, 0, NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_send_claim(f.s, MIN, c, 1, NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_send_claim(f.s, 0, c, 1, &n, NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_dead_unalerted(f.s, d, 1, NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_realert(f.s, id, 0, NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_alert_list(f.s, NULL, NULL, &n, NULL),
			 SC_EINVAL);
	char note[300];
	memset(note, 'x', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	assert_int_equal(store_alert_close(f.s, id, ALERT_ACKED, note, NULL,
					   NULL, NULL, NULL), SC_EINVAL);
	assert_int_equal(get(&f, id).status, ALERT_OPEN);
	fix_close(&f);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(raise_once_per_key),
		cmocka_unit_test(job_id_marks_the_job_alerted),
		cmocka_unit_test(revive_lists_the_job_again),
		cmocka_unit_test(new_lost_alert_closes_the_older_open_one),
		cmocka_unit_test(migration_from_3_marks_dead_jobs_alerted),
		cmocka_unit_test(list_filters),
		cmocka_unit_test(close_is_a_compare_and_set),
		cmocka_unit_test(close_writes_all_or_nothing),
		cmocka_unit_test(realert_is_a_compare_and_set),
		cmocka_unit_test(stage_is_idempotent),
		cmocka_unit_test(claim_takes_only_due_rows),
		cmocka_unit_test(finish_is_fenced_by_the_lease),
		cmocka_unit_test(concurrent_claims_never_share_a_row),
		cmocka_unit_test(bad_arguments_are_refused),
	};
	return tb_run_all("store_alert", tests,
			  sizeof(tests) / sizeof(tests[0]));
}
