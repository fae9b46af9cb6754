/*
 * test_store_pg.c - what is the PostgreSQL backend's own, against a real
 * server: connection faults, timeouts and lock waits, a server restart,
 * LISTEN/NOTIFY wakeups, plans and statistics, migrations and
 * privileges, a pooled session, the claim's locks and the overlap rule
 * across nodes, the transactions of its statements. Each operation's
 * behaviour, error texts and durability class are the conformance
 * suite's (test_store and the other suites run through
 * tests/store_backend.h, on SQLite and on PostgreSQL); a test here that
 * only repeated one of those was folded into it.
 *
 * Server and per-test schema: tests/pg_fixture.h (every test skips when
 * no PostgreSQL is there). The restart test needs a throw-away server and
 * skips on an external one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "clock.h"
#include "failpoint.h"
#include "store.h"
#include "testutil.h"
#include "pg_fixture.h"
#include "fakes/fake_proxy.h"

#define T0 1800000000000LL /* a fixed virtual instant */
#define MIN 60000LL

static const struct store_ops *ops = &store_pg_ops;
/* What ops->wait says; PostgreSQL's is true on every return (store.h). */
static bool woke;

/* The clock of the handle open_store opened last: the "now" that
 * store.c passes to the one-statement operations (store.h). Atomic:
 * some tests open their handles in threads. */
static _Atomic(struct sc_clock *) now_clock;

static void *open_store(struct sc_clock *clock)
{
	void *h = NULL;
	struct sc_err err = {0};

	atomic_store(&now_clock, clock);

	int rc = ops->open(pgfx_url(), clock, true, &h, &err);
	if (rc)
		fail_msg("open: %s", err.msg);
	return h;
}

static int64_t now_of(void)
{
	return sc_clock_now_ms(atomic_load(&now_clock));
}

/* One-statement operation q on the backend's one runner, as store.c calls
 * it: args a[0..na), out zeroed first (ONE), the commit cm when the table
 * leaves it to the call. *changed (may be NULL): the rows a write
 * changed. */
static int qcall_as(void *h, enum store_q q, const struct store_arg *a,
		    size_t na, enum store_commit cm, void *out,
		    int64_t *changed, struct sc_err *err)
{
	struct store_call c = {.q = q, .args = a, .n_args = na, .out = out,
			       .commit = cm};
	int rc;

	if (out && store_calls[q].kind == STORE_QK_ONE)
		memset(out, 0, store_calls[q].sz);
	rc = ops->call(h, &c, err);
	if (changed)
		*changed = rc ? 0 : c.changed;
	return rc;
}

/* qcall_as with the table's commit. */
static int qcall(void *h, enum store_q q, const struct store_arg *a,
		 size_t na, void *out, int64_t *changed, struct sc_err *err)
{
	return qcall_as(h, q, a, na, STORE_COMMIT_N, out, changed, err);
}

#define QARGS(...)                                 \
	(const struct store_arg[]){__VA_ARGS__},   \
		sizeof((const struct store_arg[]){__VA_ARGS__}) / \
			sizeof(struct store_arg)

/* A recovery of the backend's handle, as store.c composes it. */
static int job_recover(void *h, int max_stalls, int *n)
{
	return store_job_recover_on(ops, h, atomic_load(&now_clock),
				    max_stalls, n, NULL, NULL);
}

static int job_get(void *h, int64_t id, struct store_job *j,
		   struct sc_err *err)
{
	return qcall(h, STORE_Q_JOB_GET, QARGS(STORE_I64(id)), j, NULL, err);
}

static int sched_last_set(void *h, const char *sched, int64_t slot,
			  struct sc_err *err)
{
	return qcall(h, STORE_Q_SCHED_LAST_SET,
		     QARGS(STORE_TEXT(sched), STORE_I64(slot),
			   STORE_I64(now_of())),
		     NULL, NULL, err);
}

static int token_put(void *h, const char *provider, const char *token,
		     int64_t expires_ms, struct sc_err *err)
{
	return qcall(h, STORE_Q_TOKEN_PUT,
		     QARGS(STORE_TEXT(provider), STORE_TEXT(token),
			   STORE_I64(expires_ms), STORE_I64(now_of())),
		     NULL, NULL, err);
}

static int token_drop(void *h, const char *provider, struct sc_err *err)
{
	return qcall(h, STORE_Q_TOKEN_DROP, QARGS(STORE_TEXT(provider)), NULL,
		     NULL, err);
}

/* The heartbeat's write; one that extended nothing is SC_ELEASE here
 * (store.c tells a gone job apart: test_store). */
static int job_heartbeat(void *h, int64_t id, int64_t token, int64_t lease_ms,
			 struct sc_err *err)
{
	int64_t n = 0;
	int rc = qcall(h, STORE_Q_JOB_HEARTBEAT,
		       QARGS(STORE_I64(id), STORE_I64(token),
			     STORE_I64(now_of()), STORE_I64(lease_ms)),
		       NULL, &n, err);

	if (!rc && n == 0)
		rc = sc_err_set(err, SC_ELEASE, "heartbeat refused");
	return rc;
}

static const struct sc_retry_policy POL = {2, SC_BACKOFF_EXPONENTIAL, MIN};

/* store_job_enqueue_many on a backend handle, at the store clock's now. */
static int job_enqueue_many(void *h, const char *schedule,
			    const int64_t *slots, size_t n,
			    const struct sc_retry_policy *pol,
			    struct sc_err *err)
{
	const struct store_arg a[] = {
		STORE_TEXT(schedule),
		{.kind = STORE_A_FIELDS, .f = store_policy_fields.f,
		 .nf = store_policy_fields.n, .x = pol},
		STORE_I64(now_of())};
	struct store_call c = {.q = STORE_Q_JOB_ENQUEUE_MANY, .args = a,
			       .n_args = 3, .in = slots, .n_in = n};

	return ops->call(h, &c, err);
}

/* store_job_enqueue on a backend handle, as store.c composes it: the
 * insert (a write answering its id), or the id of the slot's job. */
struct enq_step {
	void *h;
	const struct store_arg *a;
	bool made;
	int64_t id;
};

static int enq_body(void *ctx, struct sc_err *err)
{
	struct enq_step *e = ctx;
	int64_t k = 0;
	int rc = qcall(e->h, STORE_Q_JOB_INSERT, e->a, 6, &e->id, &k, err);

	e->made = !rc && k > 0;
	if (!rc && !e->made)
		rc = qcall(e->h, STORE_Q_JOB_ID_OF, e->a, 2, &e->id, NULL, err);
	return rc;
}

static int job_enqueue(void *h, const char *schedule, int64_t slot,
		       const struct sc_retry_policy *pol, int64_t run_at,
		       bool manual, int64_t *id, bool *created,
		       struct sc_err *err)
{
	const struct store_arg a[] = {
		STORE_TEXT(schedule), STORE_I64(slot),
		{.kind = STORE_A_FIELDS, .f = store_policy_fields.f,
		 .nf = store_policy_fields.n, .x = pol},
		STORE_I64(run_at), STORE_I64(now_of()), STORE_BOOL(manual)};
	struct enq_step e = {.h = h, .a = a};
	int rc = enq_body(&e, err);

	if (!rc && id)
		*id = e.id;
	if (!rc && created)
		*created = e.made;
	return rc;
}

/* store_outbox_put on a backend handle (unfenced), the row created at
 * T0. */
static int outbox_put_op(void *h, const char *schedule, int64_t slot_ms,
			 const char *target, const char *body, bool *created,
			 struct sc_err *err)
{
	int64_t n = 0;
	int rc = qcall(h, STORE_Q_OUTBOX_PUT,
		       QARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
			     STORE_TEXT(target), STORE_TEXT(body),
			     STORE_I64(T0)),
		       NULL, &n, err);

	if (created)
		*created = n > 0;
	return rc;
}

/* qcall_as, the commit given by pointer (NULL: the table's). */
static int run_call(void *h, enum store_q q, const struct store_arg *a,
		    size_t na, const enum store_commit *cm, void *out,
		    int64_t *changed)
{
	return qcall_as(h, q, a, na, cm ? *cm : STORE_COMMIT_N, out, changed,
			NULL);
}

/* store_outbox_set_state's write, with the state's commit. */
static int ob_set(void *h, struct sc_clock *clk, const char *sched,
		  int64_t slot, const char *target, enum send_state st,
		  int *n)
{
	struct store_arg a[] = {STORE_TEXT(sched), STORE_I64(slot),
				STORE_TEXT(target), STORE_I64(st),
				STORE_I64(sc_clock_now_ms(clk))};
	enum store_commit cm = store_commit_of_send(st);
	int64_t k = 0;
	int rc = run_call(h, STORE_Q_OUTBOX_SET, a, 5, &cm, NULL, &k);

	*n = (int)k;
	return rc;
}

static int mark(void *h, struct sc_clock *clk, const char *sched,
		int64_t slot)
{
	struct store_arg a[] = {STORE_TEXT(sched), STORE_I64(slot),
				STORE_I64(sc_clock_now_ms(clk))};

	return run_call(h, STORE_Q_SLOT_MARK, a, 3, NULL, NULL, NULL);
}

/* Enqueues slot (run_at = slot) and returns the job id. */
static int64_t enq(void *h, const char *sched, int64_t slot)
{
	int64_t id = 0;
	assert_int_equal(job_enqueue(h, sched, slot, &POL, slot, false,
					  &id, NULL, NULL), 0);
	return id;
}

static struct store_job claim1(void *h, const char *worker, int64_t lease)
{
	struct store_job j;
	size_t n = 0;
	assert_int_equal(ops->job_claim(h, worker, lease, 0, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	return j;
}

static size_t ledger_all(void *h, struct ledger_row **rows)
{
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX};
	size_t n = 0;
	assert_int_equal(store_ledger_read(ops, h, &f, rows, &n, NULL), 0);
	return n;
}

static void rows_free(struct ledger_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sc_free(rows[i].error_msg);
		sc_free(rows[i].details_json);
	}
	sc_free(rows);
}

/* ---- jobs ----------------------------------------------------------------- */

/*
 * Completions ready together (store_job_complete_many, issue 45) share one
 * commit: one transaction wrote the jobs and ledger rows of all of them
 * (one xmin), where one by one each was a commit and a round trip. A
 * refused one (its lease spent) is reported and wrote nothing.
 */
static void completions_ready_together_share_one_commit(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	struct store_job j[3];
	int rcs[3] = {-1, -1, -1};
	size_t n = 0;
	char q[256];

	for (int i = 0; i < 3; i++)
		enq(h, "m", T0 - 3 + i);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, j, 3, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ops->job_finish(h, j[1].id, j[1].lease_token,
					 JOB_DONE, 0, NULL, false, NULL), 0);
	assert_non_null(ops->job_complete_many);
	assert_int_equal(ops->job_complete_many(h, j, 3, NULL, rcs, NULL), 0);
	assert_int_equal(rcs[0], 0);
	assert_int_equal(rcs[1], SC_ELEASE);
	assert_int_equal(rcs[2], 0);
	snprintf(q, sizeof(q), "SELECT count(DISTINCT x) FROM (SELECT"
		 " xmin::text x FROM ledger WHERE job_id IN (%lld, %lld)"
		 " UNION ALL SELECT xmin::text FROM jobs WHERE id IN"
		 " (%lld, %lld) AND state = 2) t", (long long)j[0].id,
		 (long long)j[2].id, (long long)j[0].id, (long long)j[2].id);
	assert_int_equal(pgfx_int(q), 1);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE"
				  " schedule = 'm'"), 3);
	ops->close(h);
	sc_clock_free(clk);
}

/*
 * A ledger insert that fails (a constraint added here) takes the job's
 * change with it: the job stays ACTIVE under its lease, and the same
 * finish goes through once the row is one the ledger takes. What a
 * finish writes is the conformance suite's (test_store:
 * finish_writes_one_ledger_row).
 */
static void finish_writes_job_and_ledger_together(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	struct store_job j;

	int64_t id = enq(h, "s", T0);
	struct store_job a = claim1(h, "w", MIN);
	assert_int_equal(a.id, id);
	PQclear(pgfx_sql("ALTER TABLE ledger ADD CONSTRAINT no_boom"
		    " CHECK (outcome <> 'boom')"));
	struct ledger_row boom = {0};
	snprintf(boom.outcome, sizeof(boom.outcome), "boom");
	struct sc_err err = {0};
	assert_int_equal(ops->job_finish(h, id, a.lease_token, JOB_DEAD, 0,
					 &boom, false, &err), SC_EDB);
	assert_non_null(strstr(err.msg, "no_boom"));
	assert_int_equal(job_get(h, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_ACTIVE);
	assert_int_equal(j.lease_token, a.lease_token);
	assert_int_equal(ops->job_finish(h, id, a.lease_token, JOB_DEAD, 0,
					 NULL, false, NULL), 0);
	assert_int_equal(job_get(h, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE outcome"
				 " = 'lost'"), 1);
	ops->close(h);
	sc_clock_free(clk);
}

/* ---- the overlap rule across nodes ------------------------------------ */

/* The hook of failpoint.h; a release-like build (make test-release) has
 * none, and the tests that need it skip there. */
#ifdef SURECRON_FAILPOINTS
#define SET_HOOK(fn, ud) failpoint_set_hook(fn, ud)
#else
#define SET_HOOK(fn, ud) ((void)(fn), (void)(ud))
#endif

/* Every schedule `queue` (no allow, no skip names). */
static const struct store_claim_rule RULE_QUEUE = {true, "\n", "\n",
						    NULL, 0, NULL};

/* Another node's step, played by the hook at pg.claim_picked, once. */
struct other_node {
	void *h;           /* the other node: claims; NULL: none */
	int64_t active_id; /* made ACTIVE from outside; 0: none */
	int hits;
	int rc;
	size_t n;
	struct store_job got;
};

static void other_node_step(const char *name, void *ud)
{
	struct other_node *o = ud;
	char q[160];

	if (strcmp(name, "pg.claim_picked") != 0 || o->hits++ > 0)
		return; /* the other node's own claim passes here too */
	if (o->h)
		o->rc = ops->job_claim(o->h, "other", MIN, 0, &o->got, 1,
				       &o->n, NULL);
	if (o->active_id) {
		snprintf(q, sizeof(q), "UPDATE jobs SET state = 1, attempts = 1,"
			 " lease_expires_ms = %lld WHERE id = %lld",
			 (long long)(T0 + MIN), (long long)o->active_id);
		PQclear(pgfx_sql(q));
	}
}

/*
 * A claim holds the lock of the schedules it picked until it commits;
 * another node's claim made meanwhile passes that schedule over (it does
 * not wait, and does not take the job) and takes the next one. With one
 * lock for every schedule it would wait (and this test would hang); with
 * no lock it would take q1, the first in the claim order.
 */
static void another_node_passes_over_a_schedule_being_claimed(void **state)
{
	TU_NEED_TEST_SEAMS();
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *a = open_store(clk), *b = open_store(clk);
	struct other_node o = {.h = b};

	ops->claim_rule(a, &RULE_QUEUE);
	ops->claim_rule(b, &RULE_QUEUE);
	int64_t q1 = enq(a, "q", T0 - 2 * MIN);
	int64_t r1 = enq(a, "r", T0 - MIN);
	SET_HOOK(other_node_step, &o);
	struct store_job j = claim1(a, "a", MIN);
	SET_HOOK(NULL, NULL);
	assert_int_equal(o.hits, 2); /* a's claim, then b's inside it */
	assert_int_equal(o.rc, 0);
	assert_int_equal(j.id, q1);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.got.id, r1);
	ops->close(b);
	ops->close(a);
	sc_clock_free(clk);
}

/*
 * What a claim picked is checked again once its locks are held: here a
 * job of q turns ACTIVE between the pick and the claim (as a claim that
 * committed between the pick's snapshot and its lock would have made
 * it), so q1 must wait and the claim takes r1. Without the second check
 * it would take q1, and q would run two slots at once.
 */
static void a_claim_checks_the_rule_again_under_its_locks(void **state)
{
	TU_NEED_TEST_SEAMS();
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *a = open_store(clk);
	struct store_job j;

	ops->claim_rule(a, &RULE_QUEUE);
	int64_t q0 = enq(a, "q", T0 + 10 * MIN); /* not due */
	int64_t q1 = enq(a, "q", T0 - 2 * MIN);
	int64_t r1 = enq(a, "r", T0 - MIN);
	struct other_node o = {.active_id = q0};
	SET_HOOK(other_node_step, &o);
	j = claim1(a, "a", MIN);
	SET_HOOK(NULL, NULL);
	assert_int_equal(j.id, r1);
	assert_int_equal(job_get(a, q1, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	ops->close(a);
	sc_clock_free(clk);
}

/* At pg.claim_picked, once: every lease token used up, so the take's
 * nextval fails on the server while the connection stays up. */
static void tokens_run_out(const char *name, void *ud)
{
	int *hits = ud;

	if (strcmp(name, "pg.claim_picked") != 0 || (*hits)++ > 0)
		return;
	PQclear(pgfx_sql("SELECT setval('lease_tokens', "
			 "9223372036854775807)"));
}

/*
 * The take and its COMMIT go to the server together (pipe_run): when the
 * take fails there, the COMMIT is skipped and the transaction must be
 * rolled back. So a failed take claims nothing, holds no lock after it
 * returns, says what failed, and leaves a handle that claims again.
 */
static void a_failed_take_claims_nothing_and_the_handle_goes_on(void **state)
{
	TU_NEED_TEST_SEAMS();
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *a = open_store(clk);
	struct store_job j;
	struct sc_err e = {0};
	size_t n = 9;
	int hits = 0;

	ops->claim_rule(a, &RULE_QUEUE);
	int64_t q1 = enq(a, "q", T0 - MIN);
	SET_HOOK(tokens_run_out, &hits);
	assert_int_equal(ops->job_claim(a, "a", MIN, 0, &j, 1, &n, &e),
			 SC_EDB);
	SET_HOOK(NULL, NULL);
	assert_int_equal(hits, 1);
	assert_non_null(strstr(e.msg, "maximum value"));
	assert_int_equal(pgfx_int("SELECT count(*) FROM pg_locks WHERE"
				  " locktype = 'advisory'"), 0);
	assert_int_equal(pgfx_int("SELECT count(*) FROM pg_stat_activity"
				  " WHERE state LIKE 'idle in transaction%'"),
			 0);
	assert_int_equal(job_get(a, q1, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	assert_int_equal(j.attempts, 0);
	PQclear(pgfx_sql("SELECT setval('lease_tokens', 1000)"));
	j = claim1(a, "a", MIN);
	assert_int_equal(j.id, q1);
	assert_int_equal(j.state, JOB_ACTIVE);
	assert_int_equal(j.lease_token, 1001);
	ops->close(a);
	sc_clock_free(clk);
}

/* At pg.claim_picked: how many sessions hold the fleet's claim lock
 * (store_pg.c CLAIM_LOCK_KEY) shared, and exclusively. */
struct fleet_lock_seen {
	int shared, exclusive;
};

#define FLEET_LOCK_HELD                                                    \
	"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND"      \
	" granted AND classid::bigint = (7305521930218410814 >> 32) AND"     \
	" objid::bigint = (7305521930218410814 & 4294967295) AND"            \
	" objsubid = 1 AND mode = "

static void fleet_lock_look(const char *name, void *ud)
{
	struct fleet_lock_seen *s = ud;

	if (strcmp(name, "pg.claim_picked") != 0)
		return;
	s->shared = pgfx_int(FLEET_LOCK_HELD "'ShareLock'");
	s->exclusive = pgfx_int(FLEET_LOCK_HELD "'ExclusiveLock'");
}

/*
 * A claim holds the fleet's claim lock shared (pg_claim_ruled), so that a
 * node of an earlier version, which takes it exclusively for its whole
 * claim, never claims beside it while a fleet is being upgraded; and it
 * holds it no longer than its transaction.
 */
static void a_claim_holds_the_fleet_lock_shared(void **state)
{
	TU_NEED_TEST_SEAMS();
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *a = open_store(clk);
	struct fleet_lock_seen seen = {-1, -1};

	ops->claim_rule(a, &RULE_QUEUE);
	int64_t q1 = enq(a, "q", T0 - MIN);
	SET_HOOK(fleet_lock_look, &seen);
	struct store_job j = claim1(a, "a", MIN);
	SET_HOOK(NULL, NULL);
	assert_int_equal(j.id, q1);
	assert_int_equal(seen.shared, 1);
	assert_int_equal(seen.exclusive, 0);
	assert_int_equal(pgfx_int("SELECT count(*) FROM pg_locks WHERE"
				  " locktype = 'advisory'"), 0);
	ops->close(a);
	sc_clock_free(clk);
}

/* Runs `tests/pgbouncer.sh start` in front of the test server for
 * database db; its URL goes to url. 3: PgBouncer is not installed. */
static int bouncer_start(const char *dir, const char *db, char *url,
			 size_t n)
{
	char cmd[1024];
	int port = 0;

	if (sscanf(pgfx_url(), "postgresql://postgres@127.0.0.1:%d/", &port)
	    != 1)
		return 3; /* a server given from outside: not ours to pool */
	snprintf(cmd, sizeof(cmd), "sh tests/pgbouncer.sh start '%s' "
		 "127.0.0.1 %d %s 2>&1", dir, port, db);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	if (!fgets(url, (int)n, f))
		url[0] = '\0';
	url[strcspn(url, "\n")] = '\0';
	int rc = pclose(f);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The pooler and database of the test below, for its teardown: a failed
 * assert leaves the test at once, and neither may outlive it. */
static char bouncer_dir[64];
static char bouncer_db[64];

static int bouncer_teardown(void **state)
{
	char cmd[128], q[128];

	if (bouncer_dir[0]) {
		snprintf(cmd, sizeof(cmd), "sh tests/pgbouncer.sh stop '%s'",
			 bouncer_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "pgbouncer.sh stop failed\n");
		tu_rmrf(bouncer_dir);
		bouncer_dir[0] = '\0';
	}
	if (bouncer_db[0]) {
		unsetenv("PGOPTIONS");
		snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s WITH (FORCE)",
			 bouncer_db);
		PQclear(pgfx_sql(q));
		bouncer_db[0] = '\0';
	}
	return pgfx_teardown(state);
}

/*
 * Behind a pooler in session mode that does not reset a server session
 * between its clients (PgBouncer with server_reset_query empty), a handle
 * gets the session the one before left, with that one's prepared
 * statements in it. Ours are named per statement, so the second handle's
 * first prepare would fail ("already exists") had the connect not
 * cleared them. Both handles here get the one server session (a pool of
 * one), checked by the server's count of sessions of the database.
 */
static void a_pooled_session_left_with_our_statements_still_works(
	void **state)
{
	PGFX_NEED_SERVER();
	char url[512] = "", q[128];
	const char *opts = getenv("PGOPTIONS");
	char saved[128];
	struct sc_err e = {0};
	void *a = NULL, *b = NULL;

	snprintf(bouncer_db, sizeof(bouncer_db), "sc_pool_%d", (int)getpid());
	snprintf(q, sizeof(q), "CREATE DATABASE %s", bouncer_db);
	PQclear(pgfx_sql(q));
	/* A folder of its own under /tmp: the pooler runs as `postgres`
	 * when we are root, and cannot enter the test's own temp folder. */
	snprintf(bouncer_dir, sizeof(bouncer_dir),
		 "/tmp/surecron-pgbouncer-XXXXXX");
	assert_non_null(mkdtemp(bouncer_dir));
	int rc = bouncer_start(bouncer_dir, bouncer_db, url, sizeof(url));
	if (rc == 3)
		skip(); /* no PgBouncer here; the teardown cleans up */
	assert_int_equal(rc, 0);
	/* The schema option is the fixture's; the pooler does not pass it
	 * on, and this database is the test's own. */
	snprintf(saved, sizeof(saved), "%s", opts ? opts : "");
	unsetenv("PGOPTIONS");
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	atomic_store(&now_clock, clk); /* enq's "now" (open_store's) */
	rc = ops->open(url, clk, true, &a, &e);
	if (rc)
		fprintf(stderr, "open through the pooler: %s\n", e.msg);
	assert_int_equal(rc, 0);
	int64_t q1 = enq(a, "q", T0 - MIN);
	assert_int_equal(claim1(a, "a", MIN).id, q1);
	ops->close(a);
	assert_int_equal(ops->open(url, clk, true, &b, &e), 0);
	int64_t r1 = enq(b, "r", T0 - MIN);
	assert_int_not_equal(r1, q1);
	struct store_job j = claim1(b, "b", MIN);
	assert_int_equal(j.id, r1);
	setenv("PGOPTIONS", saved, 1);
	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE "
		 "datname = '%s'", bouncer_db);
	assert_int_equal(pgfx_int(q), 1);
	ops->close(b);
	sc_clock_free(clk);
}

/*
 * Many nodes claiming at once never run two slots of one `queue`
 * schedule at the same time, and every slot runs once. Each claimer
 * marks the schedule running from its claim until just before its
 * finish; finding it marked is a breach.
 */
#define RULE_SCHEDS 6
#define RULE_SLOTS 25
#define RULE_THREADS 6

struct rule_claimer {
	struct sc_clock *clk;
	pthread_mutex_t *mu;
	int *running; /* per schedule */
	int *runs;    /* per schedule */
	int *done;    /* slots finished, by every claimer */
	int breaches;
	int failed;
};

static void *rule_claimer_run(void *arg)
{
	struct rule_claimer *c = arg;
	void *h = NULL;

	if (ops->open(pgfx_url(), c->clk, true, &h, NULL) != 0) {
		c->failed = 1;
		return NULL;
	}
	ops->claim_rule(h, &RULE_QUEUE);
	int64_t deadline = clock_mono_ms() + 60000;
	for (;;) {
		struct store_job j;
		size_t n = 0;
		pthread_mutex_lock(c->mu);
		bool all = *c->done == RULE_SCHEDS * RULE_SLOTS;
		pthread_mutex_unlock(c->mu);
		if (all)
			break;
		if (clock_mono_ms() > deadline ||
		    ops->job_claim(h, "w", MIN, 0, &j, 1, &n, NULL)) {
			c->failed = 1;
			break;
		}
		if (n == 0) {
			/* The rest is running elsewhere, or waits behind a
			 * running slot of its schedule. */
			sched_yield();
			continue;
		}
		int k = j.schedule[1] - '0';
		pthread_mutex_lock(c->mu);
		c->breaches += c->running[k]++ > 0;
		c->runs[k]++;
		pthread_mutex_unlock(c->mu);
		/* The run: a store round trip, as a worker's heartbeat. */
		if (job_heartbeat(h, j.id, j.lease_token, MIN, NULL))
			c->failed = 1;
		pthread_mutex_lock(c->mu);
		c->running[k]--;
		pthread_mutex_unlock(c->mu);
		if (ops->job_finish(h, j.id, j.lease_token, JOB_DONE, 0, NULL, false,
				    NULL))
			c->failed = 1;
		pthread_mutex_lock(c->mu);
		(*c->done)++;
		pthread_mutex_unlock(c->mu);
	}
	ops->close(h);
	return NULL;
}

static void nodes_claiming_together_keep_the_queue_rule(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int running[RULE_SCHEDS] = {0}, runs[RULE_SCHEDS] = {0}, done = 0;
	struct rule_claimer c[RULE_THREADS];
	pthread_t th[RULE_THREADS];
	int64_t slots[RULE_SLOTS];

	for (int i = 0; i < RULE_SLOTS; i++)
		slots[i] = T0 - RULE_SLOTS + i;
	for (int k = 0; k < RULE_SCHEDS; k++) {
		char name[16];
		snprintf(name, sizeof(name), "q%d", k);
		assert_int_equal(job_enqueue_many(h, name, slots,
						       RULE_SLOTS, &POL, NULL),
				 0);
	}
	for (int t = 0; t < RULE_THREADS; t++) {
		c[t] = (struct rule_claimer){clk, &mu, running, runs, &done,
					     0, 0};
		assert_int_equal(pthread_create(&th[t], NULL, rule_claimer_run,
						&c[t]), 0);
	}
	int breaches = 0;
	for (int t = 0; t < RULE_THREADS; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(c[t].failed, 0);
		breaches += c[t].breaches;
	}
	assert_int_equal(breaches, 0);
	for (int k = 0; k < RULE_SCHEDS; k++)
		assert_int_equal(runs[k], RULE_SLOTS);
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs WHERE state = 2"),
			 RULE_SCHEDS * RULE_SLOTS);
	ops->close(h);
	sc_clock_free(clk);
}

/*
 * A claim reads a few rows, however many jobs are due. Its two
 * statements' plans are generic, made at their first run on a connection
 * and again after each ANALYZE of jobs: here as on a server that has run
 * a while, on statistics of a table of DONE jobs with no READY one,
 * analyzed but not yet vacuumed, so the index entries of those jobs'
 * earlier versions are still there, as between two autovacuums (the
 * pick's plan at a claim that finds nothing, the take's at the first
 * that finds work). Then 2,000 slots of 2,000 schedules fall due at once
 * and one claim takes 4. What it read (index entries and rows of jobs; a
 * read by row address is not counted there, and is one row each) comes
 * from the server's statistics, which a session sends when it idles and,
 * in full, when it ends: so the writers and the claimer end their
 * sessions before the counts are taken. When the pick's check for an
 * earlier READY job of the schedule could go through jobs_due, each row
 * it walked read every due job again; when the take joined the picked
 * ids to jobs by id, its plan read every READY job at least once
 * (docs/bench.md).
 */
#define BURST_JOBS 2000
#define DONE_JOBS 200

/* Index entries and rows of jobs read by scans so far, once the
 * statistics show at least `want` rows of jobs written (inserted or
 * updated) and two reads 100 ms apart agree; false after 30 s. */
static bool jobs_reads_settled(int64_t want, int64_t *read)
{
	const struct timespec tick = {0, 100000000};
	int64_t end = clock_mono_ms() + 30000, last = -1;

	for (;;) {
		PGresult *r = pgfx_sql(
			"SELECT (SELECT coalesce(sum(idx_tup_read), 0) FROM"
			" pg_stat_user_indexes WHERE relid = 'jobs'::regclass)"
			" + seq_tup_read, n_tup_ins + n_tup_upd FROM"
			" pg_stat_user_tables WHERE relid = 'jobs'::regclass");
		*read = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		int64_t written = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		PQclear(r);
		if (written >= want && *read == last)
			return true;
		last = written >= want ? *read : -1;
		if (clock_mono_ms() > end)
			return false;
		nanosleep(&tick, NULL);
	}
}

/* n jobs of their own schedules, claimed and finished on w, then the
 * table analyzed: the statistics of a store that has run a while, with no
 * READY or ACTIVE job, and the index entries of those jobs' earlier
 * versions still there (no vacuum yet). */
static void jobs_done_and_analyzed(void *w, int n_jobs)
{
	struct store_job out[16];
	size_t n = 0;

	for (int i = 0; i < n_jobs; i++) {
		char name[16];
		snprintf(name, sizeof(name), "d%04d", i);
		enq(w, name, T0 - 2 * MIN);
	}
	for (int done = 0; done < n_jobs; done += (int)n) {
		assert_int_equal(ops->job_claim(w, "w", MIN, 0, out, 16, &n,
						NULL), 0);
		assert_true(n > 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(ops->job_finish(w, out[i].id,
							 out[i].lease_token,
							 JOB_DONE, 0, NULL, false,
							 NULL), 0);
	}
	PQclear(pgfx_sql("ANALYZE jobs"));
}

static void a_claim_reads_a_few_rows_however_many_are_due(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *w = open_store(clk), *h;
	struct store_job out[4];
	size_t n = 0;
	int64_t before = 0, after = 0;

	ops->claim_rule(w, &RULE_QUEUE);
	jobs_done_and_analyzed(w, DONE_JOBS);
	/* The claimer's pick is planned now, on those statistics. */
	h = open_store(clk);
	ops->claim_rule(h, &RULE_QUEUE);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, out, 4, &n, NULL), 0);
	assert_int_equal(n, 0);
	for (int i = 0; i < BURST_JOBS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%04d", i);
		enq(w, name, T0 - MIN);
	}
	ops->close(w);
	assert_true(jobs_reads_settled(3 * DONE_JOBS + BURST_JOBS, &before));
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, out, 4, &n, NULL), 0);
	assert_int_equal(n, 4);
	ops->close(h);
	assert_true(jobs_reads_settled(3 * DONE_JOBS + BURST_JOBS + 4, &after));
	print_message("a claim of 4 among %d due read %lld index entries "
		      "and rows\n", BURST_JOBS, (long long)(after - before));
	assert_true(after - before < BURST_JOBS / 20);
	sc_clock_free(clk);
}

/*
 * The same with the overlap rule off (one statement, ST_CLAIM: tests,
 * bench_pg), its plan made while 2,000 jobs are due (bench_pg's case):
 * its update joined the taken ids to jobs and the generic plan hashed the
 * whole table at each claim, DONE rows too (4 to 8 ms a claim of 32 with
 * 20,000 jobs). A second claim of 4 now reads what it takes and a few
 * index entries passed over.
 */
static void a_claim_without_the_rule_reads_a_few_rows(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *w = open_store(clk), *h;
	struct store_job out[4];
	size_t n = 0;
	int64_t before = 0, after = 0;

	for (int i = 0; i < BURST_JOBS; i++)
		enq(w, "b", T0 - MIN - BURST_JOBS + i);
	ops->close(w);
	PQclear(pgfx_sql("ANALYZE jobs"));
	h = open_store(clk);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, out, 4, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_int_equal(out[0].slot_ms, T0 - MIN - BURST_JOBS);
	ops->close(h);
	assert_true(jobs_reads_settled(BURST_JOBS + 4, &before));
	h = open_store(clk);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, out, 4, &n, NULL), 0);
	assert_int_equal(n, 4);
	/* The next four in the claim order. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(out[i].slot_ms, T0 - MIN - BURST_JOBS + 4 + i);
	ops->close(h);
	assert_true(jobs_reads_settled(BURST_JOBS + 8, &after));
	print_message("a claim of 4 among %d due, rule off, read %lld index "
		      "entries and rows\n", BURST_JOBS,
		      (long long)(after - before));
	assert_true(after - before < BURST_JOBS / 20);
	sc_clock_free(clk);
}

/*
 * Both claims again on a table never analyzed: a new store's, bench_pg's
 * (autovacuum analyzes it a minute later at the soonest; here never). The
 * planner then guesses the share of rows each test keeps: with 1 in 200
 * for the fresh walk's "attempts = 0", the generic plans of both claims
 * read every due job by a bitmap scan and sorted them at each claim (6 to
 * 8 ms a claim of 32 with 20,000 due in bench_pg). Now each walks
 * jobs_due in its order: a claim of 4, rule off then on (the schedule
 * `allow`), reads what it takes and a few index entries.
 */
static const struct store_claim_rule RULE_ALLOW_B = {true, "\nb\n", "\n",
						     NULL, 0, NULL};

static void a_claim_on_a_table_never_analyzed_reads_a_few_rows(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *w = open_store(clk), *h;
	struct store_job out[4];
	size_t n = 0;
	int64_t before = 0, mid = 0, after = 0;

	PQclear(pgfx_sql("ALTER TABLE jobs SET (autovacuum_enabled = false)"));
	for (int i = 0; i < BURST_JOBS; i++)
		enq(w, "b", T0 - MIN - BURST_JOBS + i);
	ops->close(w);
	assert_true(jobs_reads_settled(BURST_JOBS, &before));
	h = open_store(clk);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, out, 4, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_int_equal(out[0].slot_ms, T0 - MIN - BURST_JOBS);
	ops->close(h);
	assert_true(jobs_reads_settled(BURST_JOBS + 4, &mid));
	h = open_store(clk);
	ops->claim_rule(h, &RULE_ALLOW_B);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, out, 4, &n, NULL), 0);
	assert_int_equal(n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(out[i].slot_ms, T0 - MIN - BURST_JOBS + 4 + i);
	ops->close(h);
	assert_true(jobs_reads_settled(BURST_JOBS + 8, &after));
	print_message("never analyzed, %d due: a claim of 4 read %lld index "
		      "entries and rows with the rule off, %lld with it on\n",
		      BURST_JOBS, (long long)(mid - before),
		      (long long)(after - mid));
	assert_true(mid - before < BURST_JOBS / 20);
	assert_true(after - mid < BURST_JOBS / 20);
	sc_clock_free(clk);
}

/*
 * A job's own statements (heartbeat, a fenced write, finish) read its
 * row by primary key. Planned on statistics as above, of 1,000 DONE jobs
 * (on a table of a few pages a sequential scan is the cheaper plan, and
 * is taken), with the index entries of those jobs' ACTIVE versions still
 * in jobs_lease: written "state = 1", each walked jobs_lease and filtered
 * on the id. What the claim, the heartbeat, the fenced ledger write and
 * the finish read together is counted as above.
 */
#define KEYED_DONE_JOBS 1000

static void a_job_s_statements_read_its_row_by_key(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *w = open_store(clk), *h;
	struct store_job j;
	size_t n = 0;
	int64_t before = 0, after = 0;
	struct ledger_row r = {0};
	bool wr = false;

	ops->claim_rule(w, &RULE_QUEUE);
	jobs_done_and_analyzed(w, KEYED_DONE_JOBS);
	enq(w, "x", T0 - MIN);
	ops->close(w);
	assert_true(jobs_reads_settled(3 * KEYED_DONE_JOBS + 1, &before));
	h = open_store(clk);
	ops->claim_rule(h, &RULE_QUEUE);
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(job_heartbeat(h, j.id, j.lease_token, MIN, NULL),
			 0);
	snprintf(r.schedule, sizeof(r.schedule), "x");
	r.slot_ms = j.slot_ms;
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_SUCCESS);
	r.error_msg = (char *)"";
	const struct store_fence fence = {j.id, j.lease_token};
	assert_int_equal(store_ledger_put(ops, h, &fence, &r, &wr, NULL), 0);
	assert_true(wr);
	assert_int_equal(ops->job_finish(h, j.id, j.lease_token, JOB_DONE, 0,
					 NULL, false, NULL), 0);
	ops->close(h);
	/* Written: the claim, the heartbeat and the finish. */
	assert_true(jobs_reads_settled(3 * KEYED_DONE_JOBS + 4, &after));
	print_message("a claim, heartbeat, fenced write and finish read %lld "
		      "index entries and rows\n", (long long)(after - before));
	assert_true(after - before < 50);
	sc_clock_free(clk);
}

/* ---- migrations ---------------------------------------------------------- */

/* Migrations run once: a second open of a current schema changes
 * nothing. A newer schema is refused untouched on every backend
 * (test_store: newer_version_is_refused_untouched). */
static void migrations_run_once(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);

	enq(h, "s", T0);
	ops->close(h);
	h = open_store(clk); /* already current: nothing to do */
	ops->close(h);
	assert_int_equal(pgfx_int("SELECT version FROM schema_version"), 15);
	assert_int_equal(pgfx_int("SELECT count(*) FROM schema_version"), 1);
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs"), 1);
	sc_clock_free(clk);
}

/* Nodes starting together on an empty schema: one migrates, all open. */
struct opener {
	struct sc_clock *clk;
	int rc;
};

static void *opener_run(void *arg)
{
	struct opener *o = arg;
	void *h = NULL;

	o->rc = store_pg_ops.open(pgfx_url(), o->clk, true, &h, NULL);
	store_pg_ops.close(h);
	return NULL;
}

static void nodes_migrate_once_when_starting_together(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	struct opener o[4];
	pthread_t th[4];

	for (int i = 0; i < 4; i++) {
		o[i] = (struct opener){clk, -1};
		assert_int_equal(pthread_create(&th[i], NULL, opener_run, &o[i]),
				 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(o[i].rc, 0);
	}
	assert_int_equal(pgfx_int("SELECT count(*) FROM schema_version"), 1);
	assert_int_equal(pgfx_int("SELECT version FROM schema_version"), 15);
	sc_clock_free(clk);
}

/*
 * A node that holds the migration lock (paused in the middle of its own
 * open: SIGSTOP, a frozen VM) must not hold the open of every other node
 * once the schema is current: such an open takes no lock. Before, it
 * waited for the lock and the whole fleet stood still behind the paused
 * node. The open runs in a thread; the test waits for it up to 10 s.
 */
static void open_of_a_current_schema_takes_no_lock(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	struct opener o = {clk, -1};
	pthread_t th;
	struct timespec until;

	store_pg_ops.close(open_store(clk)); /* migrates */
	PGconn *holder = PQconnectdb(pgfx_url());
	assert_int_equal(PQstatus(holder), CONNECTION_OK);
	PGresult *r = PQexec(holder, "SELECT pg_advisory_lock("
			     "7305521930218410813)"); /* MIGRATE_LOCK_KEY */
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);

	assert_int_equal(pthread_create(&th, NULL, opener_run, &o), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	int joined = pthread_timedjoin_np(th, NULL, &until);
	PQfinish(holder); /* lets a blocked open through, so the join ends */
	if (joined != 0)
		pthread_join(th, NULL);
	assert_int_equal(joined, 0);
	assert_int_equal(o.rc, 0);
	sc_clock_free(clk);
}

/*
 * The privileges store_pg.md promises: a role with no CREATE is refused a
 * fresh schema with SC_EACCES; on a migrated schema, USAGE on it plus
 * SELECT/INSERT/UPDATE/DELETE on the tables and USAGE on the sequences is
 * enough for every operation.
 */
static void limited_role_works_on_a_migrated_schema(void **state)
{
	PGFX_NEED_SERVER();
	const char *u = pgfx_url();
	const char *at = strstr(u, "://postgres@");
	if (!at)
		skip(); /* not our kind of URL: cannot name another role */
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	char role[64], url[600], q[512];
	struct sc_err err = {0};
	void *h = NULL;

	snprintf(role, sizeof(role), "sc_limited_%d", (int)getpid());
	snprintf(url, sizeof(url), "%.*s://%s@%s", (int)(at - u), u, role,
		 at + strlen("://postgres@"));
	snprintf(q, sizeof(q), "CREATE ROLE %s LOGIN", role);
	PQclear(pgfx_sql(q));
	snprintf(q, sizeof(q), "GRANT USAGE ON SCHEMA %s TO %s", pgfx_schema,
		 role);
	PQclear(pgfx_sql(q));

	/* No CREATE: migrating is refused, clearly. */
	int rc = ops->open(url, clk, true, &h, &err);
	assert_int_equal(rc, SC_EACCES);
	assert_non_null(strstr(err.msg, "permission denied"));

	/* An administrator migrates; the daemon's role gets DML only. */
	h = open_store(clk);
	ops->close(h);
	h = NULL;
	snprintf(q, sizeof(q),
		 "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA"
		 " %s TO %s; GRANT USAGE ON ALL SEQUENCES IN SCHEMA %s TO %s",
		 pgfx_schema, role, pgfx_schema, role);
	PQclear(pgfx_sql(q));
	sc_err_clear(&err);
	rc = ops->open(url, clk, true, &h, &err);
	if (rc)
		fail_msg("limited open: %s", err.msg);
	int64_t id = enq(h, "s", T0);
	struct store_job j = claim1(h, "w", MIN);
	assert_int_equal(j.id, id);
	assert_int_equal(job_heartbeat(h, id, j.lease_token, MIN, NULL), 0);
	assert_int_equal(outbox_put_op(h, "s", T0, "t", "m", NULL, NULL), 0);
	int n = -1;
	assert_int_equal(ob_set(h, clk, "s", T0, "t", SEND_SENT, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(mark(h, clk, "s", T0), 0);
	assert_int_equal(ops->job_finish(h, id, j.lease_token, JOB_DONE, 0,
					 NULL, false, NULL), 0);
	n = -1;
	assert_int_equal(job_recover(h, 2, &n), 0);
	assert_int_equal(sched_last_set(h, "s", T0, NULL), 0);
	assert_int_equal(token_put(h, "p", "tok", T0, NULL), 0);
	assert_int_equal(token_drop(h, "p", NULL), 0);
	struct ledger_row *rows;
	assert_int_equal(ledger_all(h, &rows), 1);
	rows_free(rows, 1);
	assert_int_equal(ops->wait(h, 1, &woke, NULL), 0);
	ops->close(h);

	snprintf(q, sizeof(q), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	PQclear(pgfx_sql(q));
	sc_clock_free(clk);
}

/* A server that turned read-only (the old primary after a failover): the
 * write fails with SC_EIO and the next operation connects afresh. */
static void read_only_server_makes_the_next_op_reconnect(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	char normal[256], ro[320];
	struct sc_err err = {0};

	ops->close(h); /* migrated; now reopen read-only */
	snprintf(normal, sizeof(normal), "%s", getenv("PGOPTIONS"));
	snprintf(ro, sizeof(ro), "%s -c default_transaction_read_only=on",
		 normal);
	setenv("PGOPTIONS", ro, 1);
	h = open_store(clk);
	assert_int_equal(job_enqueue(h, "s", T0, &POL, T0, false, NULL,
					  NULL, &err), SC_EIO);
	assert_non_null(strstr(err.msg, "read-only"));
	setenv("PGOPTIONS", normal, 1); /* "failover" done */
	enq(h, "s", T0);
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs"), 1);
	ops->close(h);
	sc_clock_free(clk);
}

static void unreachable_server_is_a_clear_error(void **state)
{
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = NULL;
	struct sc_err err = {0};

	assert_int_equal(ops->open("postgresql://127.0.0.1:1/none", clk, true,
				   &h, &err),
			 SC_EIO);
	assert_null(h);
	assert_non_null(strstr(err.msg, "cannot connect"));
	sc_clock_free(clk);
}

/* ---- bounded waits (issue 42) -------------------------------------------- */

/* Opens a handle through proxy p, the session's statement_timeout set to
 * st (so the client's deadline is st + its margin). */
static void *open_via(struct fake_proxy *p, struct sc_clock *clk,
		      const char *st)
{
	char url[600], opts[320];
	const char *at = strrchr(pgfx_url(), ':');
	const char *path = strchr(at, '/');

	snprintf(url, sizeof(url), "%.*s:%d%s", (int)(at - pgfx_url()),
		 pgfx_url(), fake_proxy_port(p), path);
	snprintf(opts, sizeof(opts), "%s -c statement_timeout=%s",
		 getenv("PGOPTIONS"), st);
	char *saved = strdup(getenv("PGOPTIONS"));
	setenv("PGOPTIONS", opts, 1);
	void *h = NULL;
	struct sc_err err = {0};
	atomic_store(&now_clock, clk); /* as open_store */
	int rc = ops->open(url, clk, true, &h, &err);
	setenv("PGOPTIONS", saved, 1);
	free(saved);
	if (rc)
		fail_msg("open: %s", err.msg);
	return h;
}

/* A flow that dies without a reset: the statement is abandoned at the
 * client's deadline (1 s statement_timeout + 1 s margin), the handle
 * counts as stalled until a statement is answered again, and the next
 * operation reconnects. Before issue 42 the enqueue never returned. */
static void stranded_flow_is_abandoned_at_the_deadline(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	int port = atoi(strrchr(pgfx_url(), ':') + 1);
	struct fake_proxy *px = fake_proxy_start(port);
	assert_non_null(px);
	void *h = open_via(px, clk, "1s");
	struct sc_err err = {0};

	enq(h, "s", T0);
	assert_false(store_stalled());
	fake_proxy_set(px, PROXY_STRAND, 0);
	int64_t t0 = clock_mono_ms();
	assert_int_equal(job_enqueue(h, "s", T0 + MIN, &POL, T0 + MIN,
					  false, NULL, NULL, &err), SC_EIO);
	int64_t took = clock_mono_ms() - t0;
	fprintf(stderr, "store_pg: stranded enqueue returned after %lld ms "
		"(deadline 2000)\n", (long long)took);
	assert_true(took >= 1900 && took < 4000);
	assert_non_null(strstr(err.msg, "did not answer"));
	assert_true(store_stalled());
	/* New flows pass: the next operation reconnects and is answered. */
	enq(h, "s", T0 + MIN);
	assert_false(store_stalled());
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs"), 2);
	ops->close(h);
	fake_proxy_stop(px);
	sc_clock_free(clk);
}

/* A stop cuts a stalled wait STORE_STOP_WAIT_MS after it, long before
 * the deadline (10 s statement_timeout: 15 s). */
static void stop_cuts_a_stalled_wait(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	int port = atoi(strrchr(pgfx_url(), ':') + 1);
	struct fake_proxy *px = fake_proxy_start(port);
	assert_non_null(px);
	void *h = open_via(px, clk, "10s");
	struct sc_err err = {0};

	enq(h, "s", T0);
	fake_proxy_set(px, PROXY_BLACKHOLE, 0);
	int64_t t0 = clock_mono_ms();
	store_stop_waits(true);
	assert_int_equal(job_enqueue(h, "s", T0 + MIN, &POL, T0 + MIN,
					  false, NULL, NULL, &err), SC_EIO);
	int64_t took = clock_mono_ms() - t0;
	/* Stalled and stopping: no new connection is tried. */
	assert_int_equal(job_enqueue(h, "s", T0 + MIN, &POL, T0 + MIN,
					  false, NULL, NULL, &err), SC_EIO);
	int64_t took2 = clock_mono_ms() - t0 - took;
	store_stop_waits(false);
	fprintf(stderr, "store_pg: stopped wait returned after %lld ms, the "
		"next call after %lld ms\n", (long long)took, (long long)took2);
	assert_true(took >= STORE_STOP_WAIT_MS - 100 && took < 2500);
	assert_true(took2 < 200);
	ops->close(h);
	assert_false(store_stalled());
	fake_proxy_stop(px);
	sc_clock_free(clk);
}

/* A lock held by another session: lock_timeout (1 s here) ends the
 * wait, the error is SC_EIO (retried like a lost connection), and the
 * connection is kept. */
static void lock_timeout_ends_a_lock_wait(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	char opts[320];
	char *saved = strdup(getenv("PGOPTIONS"));
	snprintf(opts, sizeof(opts), "%s -c lock_timeout=1s", saved);
	setenv("PGOPTIONS", opts, 1);
	void *h = open_store(clk);
	setenv("PGOPTIONS", saved, 1);
	free(saved);
	struct sc_err err = {0};

	enq(h, "s", T0);
	PGconn *c = PQconnectdb(pgfx_url());
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PGresult *r = PQexec(c, "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE "
				"MODE");
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	int64_t t0 = clock_mono_ms();
	assert_int_equal(job_enqueue(h, "s", T0 + MIN, &POL, T0 + MIN,
					  false, NULL, NULL, &err), SC_EIO);
	int64_t took = clock_mono_ms() - t0;
	assert_non_null(strstr(err.msg, "lock timeout"));
	assert_true(took >= 900 && took < 3000);
	PQclear(PQexec(c, "COMMIT"));
	PQfinish(c);
	enq(h, "s", T0 + MIN);
	ops->close(h);
	sc_clock_free(clk);
}

/* Another node migrated the schema past this build's (its version record
 * raised, the newer node emulated so): a claim takes nothing and says
 * so; a statement that finds a table gone says so too. */
static void newer_schema_refuses_claims(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	struct sc_err err = {0};
	struct store_job j;
	size_t n = 9;

	enq(h, "s", T0);
	PQclear(pgfx_sql("UPDATE schema_version SET version = version + 1"));
	assert_int_equal(ops->job_claim(h, "w", MIN, 0, &j, 1, &n, &err),
			 SC_EVERSION);
	assert_non_null(strstr(err.msg, "newer than this surecron"));
	assert_int_equal(pgfx_int("SELECT attempts FROM jobs"), 0);
	assert_int_equal(pgfx_int("SELECT state FROM jobs"), JOB_READY);
	/* A statement broken by the new schema: its error names the cause. */
	PQclear(pgfx_sql("ALTER TABLE jobs RENAME TO jobs_next"));
	err = (struct sc_err){0};
	assert_int_equal(job_enqueue(h, "s", T0 + MIN, &POL, T0 + MIN,
					  false, NULL, NULL, &err),
			 SC_EVERSION);
	assert_non_null(strstr(err.msg, "newer than this surecron"));
	ops->close(h);
	sc_clock_free(clk);
}

/* The same for recovery: an older node judges no expired job under a
 * newer schema (store.c asks the backend's schema_check first). */
static void newer_schema_refuses_recovery(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	struct sc_err err = {0};
	int n = -1;

	enq(h, "s", T0);
	(void)claim1(h, "w", MIN);
	PQclear(pgfx_sql("UPDATE schema_version SET version = version + 1"));
	sc_clock_advance_ms(clk, 2 * MIN);
	assert_int_equal(store_job_recover_on(ops, h, clk, 2, &n, NULL, &err),
			 SC_EVERSION);
	assert_non_null(strstr(err.msg, "newer than this surecron"));
	assert_int_equal(n, 0);
	assert_int_equal(pgfx_int("SELECT state FROM jobs"), JOB_ACTIVE);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE outcome"
				  " = '" LEDGER_STALLED "'"), 0);
	PQclear(pgfx_sql("UPDATE schema_version SET version = version - 1"));
	assert_int_equal(job_recover(h, 2, &n), 0);
	assert_int_equal(n, 1);
	ops->close(h);
	sc_clock_free(clk);
}

/* ---- notifications ------------------------------------------------------- */

struct waiter {
	void *h;
	int64_t took_ms;
	int rc;
	int64_t timeout_ms; /* 0: 10 s */
	int64_t until_ms;   /* > 0: wait again while it returns 0, till then */
	_Atomic pid_t tid;  /* the thread's id, once it runs */
};

static void *waiter_run(void *arg)
{
	struct waiter *w = arg;
	int64_t t;

	w->tid = (pid_t)syscall(SYS_gettid);
	do {
		t = clock_mono_ms();
		bool changed;
		w->rc = store_pg_ops.wait(w->h, w->timeout_ms ? w->timeout_ms
							      : 10000,
					  &changed, NULL);
		w->took_ms = clock_mono_ms() - t;
	} while (w->rc == 0 && w->until_ms > 0 &&
		 clock_mono_ms() < w->until_ms);
	return NULL;
}

/* Waits until w's thread sleeps (state S in /proc: blocked in its wait,
 * the only place it blocks), so that what the test does next happens
 * while it waits, not before; 10 s at most. */
static void waiter_blocked(struct waiter *w)
{
	int64_t end = clock_mono_ms() + 10000;
	char what[32], buf[512];

	while (clock_mono_ms() < end) {
		pid_t tid = w->tid;
		if (tid > 0) {
			snprintf(what, sizeof(what), "task/%d/stat", (int)tid);
			long n = tu_proc_read(getpid(), what, buf,
					      sizeof(buf));
			const char *rp = n > 0 ? strrchr(buf, ')') : NULL;
			if (rp && rp[1] && rp[2] == 'S')
				return;
		}
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
	fail_msg("the waiter never blocked in its wait");
}

static void wait_wakes_on_enqueue(void **state)
{
	PGFX_NEED_SERVER();
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *a = open_store(clk), *b = open_store(clk);
	struct waiter w = {a, 0, -1, 0, 0, 0};
	pthread_t th;

	/* The first wait returns at once: what happened before it listened
	 * was not heard. Then, with nothing happening, a wait runs to its
	 * timeout. */
	int64_t t = clock_mono_ms();
	assert_int_equal(ops->wait(a, 5000, &woke, NULL), 0);
	assert_true(clock_mono_ms() - t < 2500);
	t = clock_mono_ms();
	assert_int_equal(ops->wait(a, 150, &woke, NULL), 0);
	assert_true(clock_mono_ms() - t >= 140);

	assert_int_equal(pthread_create(&th, NULL, waiter_run, &w), 0);
	waiter_blocked(&w);
	enq(b, "s", T0);
	pthread_join(th, NULL);
	assert_int_equal(w.rc, 0);
	assert_true(w.took_ms < 5000);

	/* A notification that came while busy is not lost: it ends the
	 * next wait at once. */
	enq(b, "s", T0 + 1);
	size_t n = 0;
	struct store_job out[2];
	assert_int_equal(ops->job_claim(a, "w", MIN, 0, out, 2, &n, NULL), 0);
	t = clock_mono_ms();
	assert_int_equal(ops->wait(a, 5000, &woke, NULL), 0);
	assert_true(clock_mono_ms() - t < 2500);
	ops->close(a);
	ops->close(b);
	sc_clock_free(clk);
}

/* ---- server restart -------------------------------------------------------- */

static void server_restart_fails_then_recovers(void **state)
{
	PGFX_NEED_SERVER();
	if (!pgfx_restartable())
		skip(); /* an external server: not ours to restart */
	/* The restart ends every other connection; none is open here. */
	struct sc_clock *clk = sc_clock_virtual_new(T0);
	void *h = open_store(clk);
	struct sc_err err = {0};
	struct store_job j;

	int64_t id = enq(h, "s", T0);
	struct store_job a = claim1(h, "w", MIN);
	/* A worker asleep in wait when the server goes: an error, no spin.
	 * It waits as the daemon does, 700 ms at a time: stopping the
	 * server can take longer than one wait on a loaded machine, and a
	 * wait that times out before the server goes returns 0; the next
	 * one must then see it go. */
	void *sleeper = open_store(clk);
	assert_int_equal(ops->wait(sleeper, 1, &woke, NULL), 0); /* now listening */
	struct waiter ws = {sleeper, 0, -1, 700, 0, 0};
	ws.until_ms = clock_mono_ms() + 60000;
	pthread_t wth;
	assert_int_equal(pthread_create(&wth, NULL, waiter_run, &ws), 0);
	assert_int_equal(pgfx_server("stop", NULL, 0), 0);
	pthread_join(wth, NULL);
	assert_int_equal(ws.rc, SC_EIO);
	ops->close(sleeper);

	int rc = job_heartbeat(h, id, a.lease_token, MIN, &err);
	assert_int_equal(rc, SC_EIO);
	assert_non_null(strstr(err.msg, "PostgreSQL"));
	/* While it is down every op fails cleanly, none blocks for long. */
	for (int i = 0; i < 3; i++) {
		struct sc_err e2 = {0};
		assert_int_equal(job_get(h, id, &j, &e2), SC_EIO);
		assert_true(strstr(e2.msg, "unavailable") ||
			    strstr(e2.msg, "connect"));
	}
	int64_t t = clock_mono_ms();
	assert_int_equal(ops->wait(h, 50, &woke, NULL), SC_EIO);
	assert_true(clock_mono_ms() - t >= 40); /* waited, did not spin */

	char url[512];
	assert_int_equal(pgfx_server("start", url, sizeof(url)), 0);
	assert_string_equal(url, pgfx_url());
	/* The handle reconnects by itself within its backoff. */
	int64_t deadline = clock_mono_ms() + 15000;
	do {
		rc = job_heartbeat(h, id, a.lease_token, MIN, NULL);
		if (rc) {
			struct timespec ts = {0, 50 * 1000000L};
			nanosleep(&ts, NULL);
		}
	} while (rc && clock_mono_ms() < deadline);
	assert_int_equal(rc, 0);
	assert_int_equal(ops->job_finish(h, id, a.lease_token, JOB_DONE, 0,
					 NULL, false, NULL), 0);
	assert_int_equal(job_get(h, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DONE);
	/* LISTEN is back too. */
	struct waiter w = {h, 0, -1, 0, 0, 0};
	void *b = open_store(clk);
	assert_int_equal(ops->wait(h, 1, &woke, NULL), 0); /* consumes the reconnect */
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, waiter_run, &w), 0);
	waiter_blocked(&w);
	enq(b, "s", T0 + 5);
	pthread_join(th, NULL);
	assert_int_equal(w.rc, 0);
	assert_true(w.took_ms < 5000);
	ops->close(b);
	ops->close(h);
	sc_clock_free(clk);
}

/*
 * The plan guard of the reads that go through each schedule's head
 * (store_pg_plan_sql): with a compact ledger_head (a store the daemon
 * grew, vacuumed) and a ledger many times larger, the planner must still
 * read one ledger row per head by its primary key, never scan the
 * ledger. A plain join by id let it price one scan below the lookups and
 * read the whole ledger for `status` and every /metrics scrape. Plans as
 * the store runs them: generic (plan_cache_mode = force_generic_plan).
 */
static void head_reads_never_scan_the_ledger(void **state)
{
	void *h = open_store(sc_clock_real());
	struct sc_err err = {0};
	/* Many heads, few rows each: the shape in which a scan prices
	 * below the lookups (a store of 10,000 schedules has it at any
	 * size). */
	enum { SCHEDS = 2000, PER = 10 };
	static struct ledger_row rows[SCHEDS * PER];
	size_t n = 0, wrote = 0;

	(void)state;
	for (int k = 0; k < SCHEDS; k++)
		for (int j = 0; j < PER; j++, n++) {
			struct ledger_row *r = &rows[n];
			memset(r, 0, sizeof(*r));
			snprintf(r->schedule, sizeof(r->schedule), "s%04d", k);
			r->slot_ms = T0 + (int64_t)j * MIN;
			r->attempt = 1;
			r->started_ms = r->slot_ms;
			r->finished_ms = r->slot_ms + 10;
			snprintf(r->outcome, sizeof(r->outcome), "%s",
				 j % 3 ? LEDGER_SUCCESS : LEDGER_FAILED);
		}
	struct store_call many = {.q = STORE_Q_LEDGER_MANY, .in = rows,
				  .n_in = n, .commit = STORE_COMMIT_LEDGER};
	assert_int_equal(ops->call(h, &many, &err), 0);
	wrote = (size_t)many.changed;
	assert_int_equal(wrote, n);
	ops->close(h);
	PQclear(pgfx_sql("VACUUM (FULL, ANALYZE) ledger_head"));
	PQclear(pgfx_sql("VACUUM ANALYZE ledger"));

	const char *args[] = {"(0)", "(0, 's0007')", ""};
	const char *q;
	for (size_t i = 0; (q = store_pg_plan_sql(i)) != NULL; i++) {
		size_t len = strlen(q) + 256;
		char *plan_sql = malloc(len), explain[64];
		assert_non_null(plan_sql);
		snprintf(plan_sql, len, "SET plan_cache_mode = "
			 "force_generic_plan; PREPARE p%zu AS %s", i, q);
		snprintf(explain, sizeof(explain), "EXPLAIN EXECUTE p%zu%s", i,
			 args[i]);
		PGconn *c = PQconnectdb(pgfx_url());
		assert_int_equal(PQstatus(c), CONNECTION_OK);
		PGresult *r = PQexec(c, plan_sql);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			fail_msg("%s: %s", q, PQresultErrorMessage(r));
		PQclear(r);
		r = PQexec(c, explain);
		assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
		bool by_id = false;
		for (int row = 0; row < PQntuples(r); row++) {
			const char *line = PQgetvalue(r, row, 0);
			if (strstr(line, " on ledger ") &&
			    !strstr(line, "Index Scan using ledger_pkey"))
				fail_msg("read %zu reads the ledger other than by "
					 "id: %s\n%s", i, line, q);
			by_id |= strstr(line, "ledger_pkey") != NULL;
		}
		assert_true(by_id);
		PQclear(r);
		PQfinish(c);
		free(plan_sql);
	}
}

/* The shared buffers the claim's pick reads (generic plan, rule on, the
 * jobs of `deep` queue, one job asked), and its plan in *plan (caller
 * frees). */
static long pick_buffers(char **plan)
{
	char sql[16384], line[512];
	long total = -1;
	size_t len = 0, cap = 65536;
	PGconn *c = PQconnectdb(pgfx_url());
	PGresult *r;

	assert_int_equal(PQstatus(c), CONNECTION_OK);
	/* The known schedules as the store keeps them (known_sync). */
	snprintf(sql, sizeof(sql), "SET plan_cache_mode = force_generic_plan;"
		 " CREATE TEMPORARY TABLE claim_known (name text PRIMARY KEY);"
		 " INSERT INTO claim_known VALUES ('deep'), ('other');"
		 " ANALYZE claim_known; BEGIN; PREPARE p AS %s",
		 store_pg_claim_pick_sql());
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		snprintf(line, sizeof(line), "%s", PQresultErrorMessage(r));
		PQclear(r);
		PQfinish(c);
		fail_msg("%s", line);
	}
	PQclear(r);
	r = PQexec(c, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "
		      "EXECUTE p(" "9000000000000, 1, 0, E'\\n', E'\\n', "
		      "true)");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	*plan = malloc(cap);
	assert_non_null(*plan);
	(*plan)[0] = '\0';
	for (int i = 0; i < PQntuples(r); i++) {
		const char *l = PQgetvalue(r, i, 0), *b;
		long hit = 0, rd = 0;
		if (total < 0 && (b = strstr(l, "Buffers: shared"))) {
			const char *h = strstr(b, "hit="), *d = strstr(b, "read=");
			hit = h ? atol(h + 4) : 0;
			rd = d ? atol(d + 5) : 0;
			total = hit + rd;
		}
		snprintf(line, sizeof(line), "%s\n", l);
		if (len + strlen(line) < cap) {
			memcpy(*plan + len, line, strlen(line) + 1);
			len += strlen(line);
		}
	}
	PQclear(r);
	PQclear(PQexec(c, "ROLLBACK"));
	PQfinish(c);
	assert_true(total > 0);
	return total;
}

/*
 * Issue 45: the claim's cost does not grow with the backlog. The pick of
 * one job among 1,000 and among 100,000 due jobs of one `queue` schedule
 * (generic plan, statistics of that backlog): the reads of the deep one
 * at most twice the shallow one's. Before, the test "an earlier job of
 * the schedule" ran as a scan of jobs, which read every row for the
 * schedule's first job: ~170 times the pages at 100,000.
 */
static void claim_pick_is_flat_in_the_backlog(void **state)
{
	char *plan1, *plan2;
	char q[512];
	long n[2];

	(void)state;
	ops->close(open_store(sc_clock_real()));
	for (int pass = 0; pass < 2; pass++) {
		snprintf(q, sizeof(q),
			 "INSERT INTO jobs (schedule, slot_ms, state, "
			 "max_attempts, backoff, delay_ms, run_at_ms, "
			 "created_ms) SELECT 'deep', g, 0, 3, 0, 1000, g, 0 "
			 "FROM generate_series(%d, %d) g; ANALYZE jobs",
			 pass ? 1001 : 1, pass ? 100000 : 1000);
		PQclear(pgfx_sql(q));
		n[pass] = pick_buffers(pass ? &plan2 : &plan1);
	}
	long shallow = n[0], deep = n[1];
	if (deep > 2 * shallow || strstr(plan2, "Seq Scan on jobs"))
		fail_msg("pick: %ld buffers with 100,000 due, %ld with "
			 "1,000\n%s", deep, shallow, plan2);
	free(plan1);
	free(plan2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(claim_pick_is_flat_in_the_backlog,
						pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			another_node_passes_over_a_schedule_being_claimed,
			pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_claim_checks_the_rule_again_under_its_locks,
			pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_failed_take_claims_nothing_and_the_handle_goes_on,
			pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_claim_holds_the_fleet_lock_shared,
			pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_pooled_session_left_with_our_statements_still_works,
			pgfx_setup, bouncer_teardown),
		cmocka_unit_test_setup_teardown(
			nodes_claiming_together_keep_the_queue_rule, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			finish_writes_job_and_ledger_together, pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			completions_ready_together_share_one_commit, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_claim_reads_a_few_rows_however_many_are_due,
			pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_claim_without_the_rule_reads_a_few_rows, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_claim_on_a_table_never_analyzed_reads_a_few_rows,
			pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			a_job_s_statements_read_its_row_by_key, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			migrations_run_once, pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			nodes_migrate_once_when_starting_together, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			open_of_a_current_schema_takes_no_lock, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			limited_role_works_on_a_migrated_schema, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			read_only_server_makes_the_next_op_reconnect, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test(unreachable_server_is_a_clear_error),
		cmocka_unit_test_setup_teardown(
			stranded_flow_is_abandoned_at_the_deadline, pgfx_setup,
			pgfx_teardown),
		cmocka_unit_test_setup_teardown(stop_cuts_a_stalled_wait,
						pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(lock_timeout_ends_a_lock_wait,
						pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(newer_schema_refuses_claims,
						pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(newer_schema_refuses_recovery,
						pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(wait_wakes_on_enqueue, pgfx_setup,
						pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			server_restart_fails_then_recovers, pgfx_setup, pgfx_teardown),
		cmocka_unit_test_setup_teardown(
			head_reads_never_scan_the_ledger, pgfx_setup,
			pgfx_teardown),
	};
	return cmocka_run_group_tests(tests, pgfx_group_setup,
				      pgfx_group_teardown);
}
