/*
 * test_queue.c - the queue (queue.h) on every store backend: idempotent
 * enqueue, trigger, the backoff timeline, hints, lost slots, stalls and the
 * stall limit, manual retry, fencing, failpoints, and several processes on
 * one queue. Time comes from a virtual clock (a forked child gets a copy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "queue.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define MIN 60000LL
#define LEASE (5 * MIN)

struct fix {
	struct sc_clock *clock;
	struct store *s;
};

static void fix_open(void **state, struct fix *f)
{
	f->clock = sc_clock_virtual_new(T0);
	assert_non_null(f->clock);
	f->s = tb_open(state, f->clock);
}

static void fix_close(struct fix *f)
{
	store_close(f->s);
	sc_clock_free(f->clock);
}

static bool claim1(struct fix *f, struct store_job *j)
{
	size_t n = 0;

	assert_int_equal(queue_claim(f->s, "w", LEASE, j, 1, &n, NULL), 0);
	return n == 1;
}

static size_t ledger(struct fix *f, const char *schedule,
		     struct ledger_row **rows)
{
	struct ledger_filter lf = {.schedule = schedule,
				   .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	size_t n;

	assert_int_equal(store_ledger_query(f->s, &lf, rows, &n, NULL), 0);
	return n;
}

static void enqueue_is_idempotent_and_due_at_slot(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct store_job j;
	int64_t a, b;
	bool created;

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0 + MIN, &p, &a, &created,
				       NULL),
			 0);
	assert_true(created);
	assert_int_equal(queue_enqueue(f.s, "s", T0 + MIN, &p, &b, &created,
				       NULL),
			 0);
	assert_false(created);
	assert_int_equal(a, b);
	/* Due at its slot, not before. */
	assert_false(claim1(&f, &j));
	sc_clock_advance_ms(f.clock, MIN);
	assert_true(claim1(&f, &j));
	assert_int_equal(j.id, a);
	assert_false(j.manual);
	/* Enqueueing a running slot again changes nothing. */
	assert_int_equal(queue_enqueue(f.s, "s", T0 + MIN, &p, &b, &created,
				       NULL),
			 0);
	assert_false(created);
	assert_int_equal(store_job_get(f.s, a, &j, NULL), 0);
	assert_int_equal(j.state, JOB_ACTIVE);
	fix_close(&f);
}

/*
 * The low-frequency class: 4 attempts at T0, +30 min, +90 min, +210 min
 * (delays 30, 60, 120 min); the fourth failure loses the slot.
 */
static void backoff_timeline_low_class(void **state)
{
	static const int64_t expect_at[] = {0, 30 * MIN, 90 * MIN, 210 * MIN};
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_LOW);
	struct sc_err cause = {.code = SC_ETASK, .msg = "quota exceeded"};
	struct store_job j;
	struct ledger_row *rows;
	int64_t next, id;
	bool dead;

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "weekly", T0, &p, &id, NULL, NULL),
			 0);
	for (int k = 0; k < 4; k++) {
		/* Not claimable a moment before its time. */
		sc_clock_set_ms(f.clock, T0 + expect_at[k] - 1);
		if (k > 0)
			assert_false(claim1(&f, &j));
		sc_clock_set_ms(f.clock, T0 + expect_at[k]);
		assert_true(claim1(&f, &j));
		assert_int_equal(j.attempts, k + 1);
		assert_int_equal(queue_fail(f.s, &j, "task", &cause, NULL,
					    &next, &dead, NULL),
				 0);
		if (k < 3) {
			assert_false(dead);
			assert_int_equal(next,
					 T0 + expect_at[k] + (30 * MIN << k));
			assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
			assert_int_equal(j.state, JOB_READY);
		} else {
			assert_true(dead);
			assert_true(next == INT64_MAX);
		}
	}
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(j.attempts, 4);
	size_t n = ledger(&f, "weekly", &rows);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(rows[i].outcome, LEDGER_FAILED);
		assert_int_equal(rows[i].attempt, (int)i + 1);
		assert_string_equal(rows[i].error_msg, "quota exceeded");
	}
	assert_string_equal(rows[3].outcome, LEDGER_LOST);
	assert_int_equal(rows[3].attempt, 4);
	store_ledger_rows_free(rows, n);
	/* The lost slot shows up in the lost-or-missed query. */
	struct ledger_filter lf = {.since_ms = T0, .until_ms = T0 + 1,
				   .lost_or_missed = true};
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].job_id, id);
	store_ledger_rows_free(rows, n);
	fix_close(&f);
}

static void hints_delay_but_never_advance(void **state)
{
	static const struct {
		int64_t hint_ms, expect_delay;
	} cases[] = {
		{0, MIN},               /* default class: 60 s */
		{2 * 3600000, 2 * 3600000}, /* Retry-After 2 h wins */
		{10000, MIN},           /* a shorter hint does not advance */
	};
	struct fix f;
	struct sc_retry_policy p = {3, SC_BACKOFF_EXPONENTIAL, MIN};
	struct ledger_row *rows;

	fix_open(state, &f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct store_job j;
		struct sc_err cause = {.code = SC_EHTTP,
				       .http_status = 429,
				       .retry_after_ms = cases[i].hint_ms,
				       .msg = "HTTP 429"};
		int64_t next;
		assert_int_equal(queue_enqueue(f.s, "h", T0 - (int64_t)i, &p,
					       NULL, NULL, NULL),
				 0);
		assert_true(claim1(&f, &j));
		assert_int_equal(queue_fail(f.s, &j, "http", &cause, NULL,
					    &next, NULL, NULL),
				 0);
		assert_int_equal(next - sc_clock_now_ms(f.clock),
				 cases[i].expect_delay);
		assert_int_equal(store_job_get(f.s, j.id, &j, NULL), 0);
		assert_int_equal(j.run_at_ms, next);
	}
	size_t n = ledger(&f, "h", &rows);
	assert_int_equal(n, 3);
	assert_int_equal(rows[1].retry_hint_ms, 2 * 3600000);
	assert_string_equal(rows[1].error_class, "http");
	store_ledger_rows_free(rows, n);
	fix_close(&f);
}

static void permanent_error_loses_the_slot_at_once(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_LOW);
	struct sc_err cause = {.code = SC_ECONFIG, .permanent = true,
			       .msg = "unknown model name"};
	struct store_job j;
	struct ledger_row *rows;
	bool dead = false;

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0, &p, NULL, NULL, NULL), 0);
	assert_true(claim1(&f, &j));
	assert_int_equal(queue_fail(f.s, &j, "task", &cause, "{\"k\":1}", NULL,
				    &dead, NULL),
			 0);
	assert_true(dead);
	assert_int_equal(store_job_get(f.s, j.id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(j.attempts, 1);
	size_t n = ledger(&f, "s", &rows);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].outcome, LEDGER_LOST);
	assert_string_equal(rows[0].error_msg, "unknown model name");
	assert_string_equal(rows[0].details_json, "{\"k\":1}");
	store_ledger_rows_free(rows, n);
	/* Nothing left to claim. */
	sc_clock_advance_ms(f.clock, 86400000);
	assert_false(claim1(&f, &j));
	fix_close(&f);
}

static void stalls_count_and_hit_the_limit(void **state)
{
	struct fix f;
	struct sc_retry_policy p = {10, SC_BACKOFF_EXPONENTIAL, MIN};
	struct store_job j;
	struct ledger_row *rows;
	int n_rec;

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0, &p, NULL, NULL, NULL), 0);
	/* QUEUE_STALL_LIMIT (2) stalls are tolerated, the third is fatal. */
	for (int stall = 1; stall <= QUEUE_STALL_LIMIT + 1; stall++) {
		assert_true(claim1(&f, &j));
		sc_clock_advance_ms(f.clock, LEASE + 1);
		assert_int_equal(queue_recover(f.s, QUEUE_STALL_LIMIT, &n_rec,
					       NULL),
				 0);
		assert_int_equal(n_rec, 1);
		assert_int_equal(store_job_get(f.s, j.id, &j, NULL), 0);
		assert_int_equal(j.n_stalls, stall);
		assert_int_equal(j.state, stall <= QUEUE_STALL_LIMIT
						  ? JOB_READY
						  : JOB_DEAD);
	}
	size_t n = ledger(&f, "s", &rows);
	assert_int_equal(n, QUEUE_STALL_LIMIT + 2);
	assert_string_equal(rows[n - 1].outcome, LEDGER_LOST);
	assert_string_equal(rows[n - 1].error_class, "stalled");
	store_ledger_rows_free(rows, n);
	fix_close(&f);
}

static void heartbeat_keeps_a_long_run_alive(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct store_job j;
	int n_rec;

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0, &p, NULL, NULL, NULL), 0);
	assert_true(claim1(&f, &j));
	for (int i = 0; i < 5; i++) {
		sc_clock_advance_ms(f.clock, LEASE - 1000);
		assert_int_equal(queue_heartbeat(f.s, &j, LEASE, NULL), 0);
		assert_int_equal(j.lease_expires_ms,
				 sc_clock_now_ms(f.clock) + LEASE);
		assert_int_equal(queue_recover(f.s, 2, &n_rec, NULL), 0);
		assert_int_equal(n_rec, 0);
	}
	assert_int_equal(queue_complete(f.s, &j, NULL, NULL), 0);
	fix_close(&f);
}

/* A paused worker whose job was taken over changes nothing. */
static void stale_worker_is_fenced_off(void **state)
{
	struct fix f;
	struct sc_retry_policy p = {5, SC_BACKOFF_FIXED, MIN};
	struct sc_err cause = {.code = SC_ETASK, .msg = "late failure"};
	struct store_job stale, fresh, now;
	struct ledger_row *rows;
	struct sc_err err = {0};

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0, &p, NULL, NULL, NULL), 0);
	assert_true(claim1(&f, &stale));
	sc_clock_advance_ms(f.clock, LEASE + 1);
	assert_int_equal(queue_recover(f.s, 2, NULL, NULL), 0);
	assert_true(claim1(&f, &fresh));
	size_t before = ledger(&f, "s", &rows);
	store_ledger_rows_free(rows, before);

	assert_int_equal(queue_heartbeat(f.s, &stale, LEASE, &err), SC_ELEASE);
	assert_int_equal(queue_complete(f.s, &stale, NULL, NULL), SC_ELEASE);
	assert_int_equal(queue_fail(f.s, &stale, "task", &cause, NULL, NULL,
				    NULL, NULL),
			 SC_ELEASE);
	assert_int_equal(queue_release(f.s, &stale, NULL), SC_ELEASE);
	assert_int_equal(store_job_get(f.s, fresh.id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_ACTIVE);
	assert_int_equal(now.lease_token, fresh.lease_token);
	assert_int_equal(now.lease_expires_ms, fresh.lease_expires_ms);
	assert_int_equal(now.attempts, 2);
	size_t after = ledger(&f, "s", &rows);
	assert_int_equal(after, before);
	store_ledger_rows_free(rows, after);
	assert_int_equal(queue_complete(f.s, &fresh, NULL, NULL), 0);
	fix_close(&f);
}

/* Completions ready together (issue 45): one call, each job fenced by its
 * own lease; a refused one is reported and leaves the others complete. */
static void complete_many_fences_each_job(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct store_job j[3], now;
	struct ledger_row *rows;
	int rcs[3] = {-1, -1, -1};
	size_t n = 0;

	fix_open(state, &f);
	for (int i = 0; i < 3; i++)
		assert_int_equal(queue_enqueue(f.s, "s", T0 + i * MIN, &p,
					       NULL, NULL, NULL),
				 0);
	sc_clock_advance_ms(f.clock, 2 * MIN);
	assert_int_equal(queue_claim(f.s, "w", LEASE, j, 3, &n, NULL), 0);
	assert_int_equal(n, 3);
	/* Job 1 is completed on its own first: its lease is spent. */
	assert_int_equal(queue_complete(f.s, &j[1], NULL, NULL), 0);
	assert_int_equal(queue_complete_many(f.s, j, 3, NULL, rcs, NULL), 0);
	assert_int_equal(rcs[0], 0);
	assert_int_equal(rcs[1], SC_ELEASE);
	assert_int_equal(rcs[2], 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(store_job_get(f.s, j[i].id, &now, NULL), 0);
		assert_int_equal(now.state, JOB_DONE);
	}
	n = ledger(&f, "s", &rows);
	assert_int_equal(n, 3); /* one success row a job, none twice */
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(rows[i].outcome, LEDGER_SUCCESS);
		assert_int_equal(rows[i].attempt, 1);
	}
	store_ledger_rows_free(rows, n);
	assert_int_equal(queue_complete_many(f.s, j, 0, NULL, rcs, NULL), 0);
	fix_close(&f);
}

/*
 * A completion's ledger row takes schedule, slot, attempt and start from
 * the caller's copy of the claimed job (store.h, store_job_finish): they
 * must be the claim's, on a later attempt too, alone or in a batch.
 */
static void completion_row_is_the_claims(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct sc_err cause = {.code = SC_ETASK, .msg = "boom"};
	struct store_job j, b[2];
	struct ledger_row *rows;
	int64_t next;
	int rcs[2];
	size_t n = 0;
	bool dead;

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "a", T0, &p, NULL, NULL, NULL), 0);
	sc_clock_set_ms(f.clock, T0 + 5);
	assert_true(claim1(&f, &j));
	assert_int_equal(queue_fail(f.s, &j, "task", &cause, NULL, &next,
				    &dead, NULL),
			 0);
	assert_false(dead);
	sc_clock_set_ms(f.clock, next + 7);
	assert_true(claim1(&f, &j));
	assert_int_equal(j.attempts, 2);
	sc_clock_advance_ms(f.clock, 1000);
	assert_int_equal(queue_complete(f.s, &j, NULL, NULL), 0);
	n = ledger(&f, "a", &rows);
	assert_int_equal(n, 2);
	assert_string_equal(rows[1].outcome, LEDGER_SUCCESS);
	assert_string_equal(rows[1].schedule, "a");
	assert_int_equal(rows[1].slot_ms, T0);
	assert_int_equal(rows[1].job_id, j.id);
	assert_int_equal(rows[1].attempt, 2);
	assert_int_equal(rows[1].started_ms, next + 7);
	assert_int_equal(rows[1].finished_ms, next + 1007);
	store_ledger_rows_free(rows, n);

	for (int i = 0; i < 2; i++)
		assert_int_equal(queue_enqueue(f.s, i ? "c" : "b", T0, &p,
					       NULL, NULL, NULL),
				 0);
	assert_int_equal(queue_claim(f.s, "w", LEASE, b, 2, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(queue_complete_many(f.s, b, 2, NULL, rcs, NULL), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rcs[i], 0);
		n = ledger(&f, b[i].schedule, &rows);
		assert_int_equal(n, 1);
		assert_int_equal(rows[0].job_id, b[i].id);
		assert_int_equal(rows[0].slot_ms, T0);
		assert_int_equal(rows[0].attempt, 1);
		assert_int_equal(rows[0].started_ms, b[i].started_ms);
		store_ledger_rows_free(rows, n);
	}
	fix_close(&f);
}

static void retry_dead_and_trigger(void **state)
{
	struct fix f;
	struct sc_retry_policy p = {1, SC_BACKOFF_FIXED, MIN};
	struct sc_err cause = {.code = SC_ETASK, .msg = "boom"};
	struct store_job j;
	int64_t id, id2;
	bool created;
	struct sc_err err = {0};

	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0, &p, &id, NULL, NULL), 0);
	assert_int_equal(queue_retry_dead(f.s, id, 0, &err), SC_ESTATE);
	assert_true(claim1(&f, &j));
	assert_int_equal(queue_fail(f.s, &j, "task", &cause, NULL, NULL, NULL,
				    NULL),
			 0);
	sc_clock_advance_ms(f.clock, 3600000);
	assert_int_equal(queue_retry_dead(f.s, id, 1, NULL), 0);
	assert_true(claim1(&f, &j));
	assert_int_equal(j.attempts, 2); /* numbering goes on (issue 10) */
	assert_int_equal(queue_fail(f.s, &j, "task", &cause, NULL, NULL, NULL,
				    NULL),
			 0);
	/* Trigger revives a dead slot too. */
	assert_int_equal(queue_trigger(f.s, "s", T0, &p, &id2, &created, NULL),
			 0);
	assert_true(created);
	assert_int_equal(id2, id);
	assert_true(claim1(&f, &j));
	assert_int_equal(queue_complete(f.s, &j, NULL, NULL), 0);
	sc_err_clear(&err);
	assert_int_equal(queue_trigger(f.s, "s", T0, &p, NULL, NULL, &err),
			 SC_ESTATE);
	assert_non_null(strstr(err.msg, "already completed"));
	/* A new slot far in the future is due now when triggered. */
	assert_int_equal(queue_trigger(f.s, "s", T0 + 86400000 * 7LL, &p, &id2,
				       &created, NULL),
			 0);
	assert_true(created);
	assert_true(claim1(&f, &j));
	assert_int_equal(j.id, id2);
	assert_true(j.manual);
	/* Triggering a running slot leaves it alone. */
	assert_int_equal(queue_trigger(f.s, "s", T0 + 86400000 * 7LL, &p, NULL,
				       &created, NULL),
			 0);
	assert_false(created);
	fix_close(&f);
}

static void release_and_next_due(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct store_job j;
	int64_t due;

	fix_open(state, &f);
	assert_int_equal(queue_next_due(f.s, &due, NULL), 0);
	assert_true(due == INT64_MAX);
	assert_int_equal(queue_enqueue(f.s, "s", T0 + 10 * MIN, &p, NULL, NULL,
				       NULL),
			 0);
	assert_int_equal(queue_next_due(f.s, &due, NULL), 0);
	assert_int_equal(due, T0 + 10 * MIN);
	sc_clock_set_ms(f.clock, T0 + 10 * MIN);
	assert_true(claim1(&f, &j));
	assert_int_equal(queue_release(f.s, &j, NULL), 0);
	assert_true(claim1(&f, &j));
	assert_int_equal(j.attempts, 1);
	assert_int_equal(queue_complete(f.s, &j, NULL, NULL), 0);
	assert_int_equal(queue_next_due(f.s, &due, NULL), 0);
	assert_true(due == INT64_MAX);
	assert_string_equal(queue_state_name(JOB_DEAD), "dead");
	fix_close(&f);
}

/* ---- processes ------------------------------------------------------------ */

#define N_PROCS 4
#define N_JOBS 300

/*
 * N_PROCS processes, each with its own handle, claim in batches and
 * complete; each writes the ids it claimed into a pipe. No id may appear
 * twice and every job must be done.
 */
static void processes_never_claim_the_same_job(void **state)
{
	struct fix f;
	static int64_t slots[N_JOBS];
	static unsigned char seen[N_JOBS + 1];
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	int fds[2];
	pid_t pids[N_PROCS];

	fix_open(state, &f);
	for (int i = 0; i < N_JOBS; i++)
		slots[i] = T0 - i;
	assert_int_equal(queue_enqueue_many(f.s, "s", slots, N_JOBS, &p, NULL),
			 0);
	store_close(f.s); /* never carry a handle across fork() */
	assert_int_equal(pipe(fds), 0);
	for (int k = 0; k < N_PROCS; k++) {
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			struct store *s = NULL;
			struct store_job j[4];
			char name[16];
			size_t n;
			close(fds[0]);
			snprintf(name, sizeof(name), "p%d", k);
			if (store_open(tb_url(state), f.clock, &s, NULL))
				_exit(2);
			for (;;) {
				if (queue_claim(s, name, LEASE, j, 4, &n, NULL))
					_exit(3);
				if (n == 0)
					break;
				for (size_t i = 0; i < n; i++) {
					if (write(fds[1], &j[i].id,
						  sizeof(j[i].id)) !=
					    (ssize_t)sizeof(j[i].id))
						_exit(4);
					if (queue_complete(s, &j[i], NULL,
							   NULL))
						_exit(5);
				}
			}
			store_close(s);
			_exit(0);
		}
	}
	close(fds[1]);
	memset(seen, 0, sizeof(seen));
	int64_t id;
	int total = 0;
	while (read(fds[0], &id, sizeof(id)) == (ssize_t)sizeof(id)) {
		assert_true(id >= 1 && id <= N_JOBS);
		if (seen[id])
			fail_msg("job %lld claimed twice", (long long)id);
		seen[id] = 1;
		total++;
	}
	close(fds[0]);
	for (int k = 0; k < N_PROCS; k++) {
		int status;
		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(total, N_JOBS);
	f.s = tb_open(state, f.clock);
	struct store_counts c;
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.done, N_JOBS);
	fix_close(&f);
}

/*
 * Each failpoint kills a child at its step; the parent then sees exactly
 * the state the step promises, and recovery makes the job whole again.
 */
static void failpoints_leave_consistent_state(void **state)
{
	static const struct {
		const char *point;
		bool fail; /* the child fails the job instead of completing */
		enum job_state after_kill;
		int ledger_rows_after_kill;
	} cases[] = {
		{"queue.after_claim", false, JOB_ACTIVE, 0},
		{"queue.before_complete_commit", false, JOB_ACTIVE, 0},
		{"queue.after_complete_commit", false, JOB_DONE, 1},
		{"queue.in_retry_schedule", true, JOB_ACTIVE, 0},
		{"queue.after_fail_commit", true, JOB_READY, 1},
	};
	struct sc_retry_policy p = {3, SC_BACKOFF_FIXED, 0};
	TU_NEED_TEST_SEAMS();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fix f;
		struct store_job j;
		struct ledger_row *rows;
		char sched[32];
		int64_t id;
		pid_t pid;
		int status;

		fix_open(state, &f);
		snprintf(sched, sizeof(sched), "fp%zu", i);
		assert_int_equal(queue_enqueue(f.s, sched, T0, &p, &id, NULL,
					       NULL),
				 0);
		store_close(f.s);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct store *s = NULL;
			struct sc_err cause = {.code = SC_ETASK, .msg = "x"};
			size_t n;
			setenv("SURECRON_FAILPOINTS", cases[i].point, 1);
			if (store_open(tb_url(state), f.clock, &s, NULL))
				_exit(2);
			if (queue_claim(s, "victim", LEASE, &j, 1, &n, NULL) ||
			    n != 1)
				_exit(3);
			if (cases[i].fail)
				queue_fail(s, &j, "task", &cause, NULL, NULL,
					   NULL, NULL);
			else
				queue_complete(s, &j, NULL, NULL);
			_exit(0); /* the failpoint did not fire */
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("%s: child was not killed", cases[i].point);
		f.s = tb_open(state, f.clock);
		assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
		if (j.state != cases[i].after_kill)
			fail_msg("%s: state %s", cases[i].point,
				 queue_state_name(j.state));
		assert_int_equal(j.attempts, 1);
		size_t n = ledger(&f, sched, &rows);
		assert_int_equal(n, cases[i].ledger_rows_after_kill);
		store_ledger_rows_free(rows, n);
		/* Recovery: a dead worker's attempt is a stall. */
		sc_clock_advance_ms(f.clock, LEASE + 1);
		assert_int_equal(queue_recover(f.s, 2, NULL, NULL), 0);
		if (j.state != JOB_DONE) {
			assert_true(claim1(&f, &j));
			assert_int_equal(j.attempts, 2);
			assert_int_equal(queue_complete(f.s, &j, NULL, NULL), 0);
		}
		n = ledger(&f, sched, &rows);
		int success = 0;
		for (size_t k = 0; k < n; k++)
			success += strcmp(rows[k].outcome, LEDGER_SUCCESS) == 0;
		assert_int_equal(success, 1);
		store_ledger_rows_free(rows, n);
		fix_close(&f);
	}
}

/* An injected commit error rolls the whole transition back. */
static void commit_error_rolls_back(void **state)
{
	struct fix f;
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct store_job j, now;
	struct ledger_row *rows;
	struct sc_err err = {0};
	TU_NEED_TEST_SEAMS();

	/* Both backends honour store.commit:err (PostgreSQL fails its one
	 * finish statement before sending it, store.h). */
	fix_open(state, &f);
	assert_int_equal(queue_enqueue(f.s, "s", T0, &p, NULL, NULL, NULL), 0);
	assert_true(claim1(&f, &j));
	setenv("SURECRON_FAILPOINTS", "store.commit:err", 1);
	int rc = queue_complete(f.s, &j, NULL, &err);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	assert_non_null(strstr(err.msg, "I/O error"));
	assert_int_equal(store_job_get(f.s, j.id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_ACTIVE);
	size_t n = ledger(&f, "s", &rows);
	assert_int_equal(n, 0);
	store_ledger_rows_free(rows, n);
	/* The handle still works. */
	assert_int_equal(queue_complete(f.s, &j, NULL, NULL), 0);

	/* Completions sharing a commit: a failed commit leaves every one
	 * of them ACTIVE, with no row, and they complete when tried again. */
	struct store_job two[2];
	int rcs[2];
	size_t got = 0;
	for (int i = 1; i <= 2; i++)
		assert_int_equal(queue_enqueue(f.s, "s", T0 + i * MIN, &p,
					       NULL, NULL, NULL),
				 0);
	sc_clock_advance_ms(f.clock, 2 * MIN);
	assert_int_equal(queue_claim(f.s, "w", LEASE, two, 2, &got, NULL), 0);
	assert_int_equal(got, 2);
	setenv("SURECRON_FAILPOINTS", "store.commit:err", 1);
	rc = queue_complete_many(f.s, two, 2, NULL, rcs, NULL);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(store_job_get(f.s, two[i].id, &now, NULL), 0);
		assert_int_equal(now.state, JOB_ACTIVE);
	}
	n = ledger(&f, "s", &rows);
	assert_int_equal(n, 1);
	store_ledger_rows_free(rows, n);
	assert_int_equal(queue_complete_many(f.s, two, 2, NULL, rcs, NULL), 0);
	assert_int_equal(rcs[0], 0);
	assert_int_equal(rcs[1], 0);
	fix_close(&f);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(enqueue_is_idempotent_and_due_at_slot),
		cmocka_unit_test(backoff_timeline_low_class),
		cmocka_unit_test(hints_delay_but_never_advance),
		cmocka_unit_test(permanent_error_loses_the_slot_at_once),
		cmocka_unit_test(stalls_count_and_hit_the_limit),
		cmocka_unit_test(heartbeat_keeps_a_long_run_alive),
		cmocka_unit_test(stale_worker_is_fenced_off),
		cmocka_unit_test(complete_many_fences_each_job),
		cmocka_unit_test(completion_row_is_the_claims),
		cmocka_unit_test(retry_dead_and_trigger),
		cmocka_unit_test(release_and_next_due),
		cmocka_unit_test(processes_never_claim_the_same_job),
		cmocka_unit_test(failpoints_leave_consistent_state),
		cmocka_unit_test(commit_error_rolls_back),
	};
	return tb_run_all("queue", tests, sizeof(tests) / sizeof(tests[0]));
}
