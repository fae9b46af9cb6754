/*
 * test_nodes_pg.c - several nodes on one PostgreSQL database.
 *
 * Each "node" is a separate process running what a daemon runs over the
 * queue: it enqueues every slot of the schedule itself (no leader: every
 * node runs the scheduler), recovers stalled jobs, claims, completes, and
 * sleeps in store_wait (LISTEN/NOTIFY) when nothing is due. A node never
 * exits on a store error: it waits a little and goes on, as the daemon
 * must when the database restarts. 2,000 slots of a per-second schedule.
 *
 *   - nodes_share_the_work_under_kills: three nodes, SIGKILLed at random
 *     and respawned; afterwards every slot has exactly one job, DONE, with
 *     exactly one "success" row, and every job's attempts match its ledger
 *     rows (success + failed + stalled).
 *   - killed_node_job_is_taken_over: a node dies holding a job; another
 *     finishes the slot once the lease expired (stalled row, then success).
 *   - restart_in_the_middle: PostgreSQL is stopped (-m fast) and started
 *     while two nodes work; they recover by themselves, no slot is lost or
 *     doubled. Needs a throw-away server (skips on an external one).
 *
 * Real time (processes cannot share a virtual clock), short leases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "queue.h"
#include "store.h"
#include "testutil.h"
#include "pg_fixture.h"

#define N_SLOTS 2000
#define LEASE_MS 400
#define STALL_LIMIT 100000 /* kills stall jobs on purpose; never give up */
#define SCHED "tick"

static const struct sc_retry_policy policy = {100, SC_BACKOFF_FIXED, 0};
static int64_t g_first_slot; /* slot i is g_first_slot + i seconds */

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A node: the scheduler and a worker loop. Exits 0 once nothing is left. */
static void node_main(void)
{
	struct store *s = NULL;
	struct store_job j[4];
	int64_t slots[250];
	char name[32];
	bool enqueued = false;
	int n_err = 0;

	snprintf(name, sizeof(name), "n%d", (int)getpid());
	while (store_open(pgfx_url(), sc_clock_real(), &s, NULL) != 0) {
		if (++n_err > 600)
			_exit(20); /* 30 s without a database */
		nap_ms(50);
	}
	for (;;) {
		int rc = 0;
		size_t n = 0;
		/* Every node materialises every slot: idempotent. */
		for (int i = 0; !enqueued && rc == 0 && i < N_SLOTS; i += 250) {
			for (int k = 0; k < 250; k++)
				slots[k] = g_first_slot + (int64_t)(i + k) * 1000;
			rc = queue_enqueue_many(s, SCHED, slots, 250, &policy,
						NULL);
		}
		if (rc == 0)
			enqueued = true;
		if (rc == 0)
			rc = queue_recover(s, STALL_LIMIT, NULL, NULL);
		if (rc == 0)
			rc = queue_claim(s, name, LEASE_MS, j, 4, &n, NULL);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			rc = queue_complete(s, &j[i], NULL, NULL);
			if (rc == SC_ELEASE)
				rc = 0; /* taken over while we were slow */
		}
		if (rc) {
			/* The database is away: the daemon waits, never exits. */
			if (++n_err > 2000)
				_exit(21);
			nap_ms(20);
			continue;
		}
		if (n > 0)
			continue;
		int64_t due;
		if (queue_next_due(s, &due, NULL))
			continue;
		if (due == INT64_MAX)
			break;
		int64_t wait = due - sc_clock_now_ms(sc_clock_real());
		(void)store_wait(s, wait < 1 ? 1 : wait > 200 ? 200 : wait,
				 NULL, NULL);
	}
	store_close(s);
	_exit(0);
}

/* Every process a test forked, so that a failed assertion (which leaves
 * the test at once) never leaves a node running: the teardown kills what
 * is still there. */
static pid_t forked[512];
static size_t n_forked;

static void track(pid_t pid)
{
	if (n_forked < sizeof(forked) / sizeof(forked[0]))
		forked[n_forked++] = pid;
}

static int teardown(void **state)
{
	for (size_t i = 0; i < n_forked; i++) {
		if (waitpid(forked[i], NULL, WNOHANG) == 0) {
			kill(forked[i], SIGKILL);
			waitpid(forked[i], NULL, 0);
		}
	}
	n_forked = 0;
	return pgfx_teardown(state);
}

static pid_t spawn_node(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		node_main();
	track(pid);
	return pid;
}

/* Creates the schema (so the parent can watch before any node is up) and
 * picks the slots. */
static void init_run(void)
{
	struct store *s = NULL;

	assert_int_equal(store_open(pgfx_url(), sc_clock_real(), &s, NULL), 0);
	store_close(s); /* never carry a handle across fork() */
	/* All slots already due: the run is as fast as the nodes are. */
	g_first_slot = sc_clock_now_ms(sc_clock_real()) - N_SLOTS * 1000LL;
}

/* Every slot ran exactly once; the ledger and the attempts agree. */
static void check_exactly_once(void)
{
	char q[256];

	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs"), N_SLOTS);
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE slot_ms >= %lld"
		 " AND slot_ms < %lld AND (slot_ms - %lld) %% 1000 = 0",
		 (long long)g_first_slot,
		 (long long)(g_first_slot + N_SLOTS * 1000LL),
		 (long long)g_first_slot);
	assert_int_equal(pgfx_int(q), N_SLOTS);
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs WHERE state <> 2"),
			 0);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger"
				  " WHERE outcome = 'success'"), N_SLOTS);
	assert_int_equal(pgfx_int("SELECT count(DISTINCT slot_ms) FROM ledger"
				  " WHERE outcome = 'success'"), N_SLOTS);
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs j WHERE"
				  " j.attempts <> (SELECT count(*) FROM ledger l"
				  " WHERE l.job_id = j.id AND l.outcome IN"
				  " ('success', 'failed', 'stalled'))"), 0);
	assert_int_equal(pgfx_int("SELECT count(*) FROM jobs j WHERE"
				  " j.n_stalls <> (SELECT count(*) FROM ledger l"
				  " WHERE l.job_id = j.id AND l.outcome ="
				  " 'stalled')"), 0);
}

static int wait_exit(pid_t pid)
{
	int st = 0;

	for (size_t i = 0; i < n_forked; i++)
		if (forked[i] == pid)
			forked[i] = forked[--n_forked]; /* reaped below */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void nodes_share_the_work_under_kills(void **state)
{
	PGFX_NEED_SERVER();
	enum { N_NODES = 3 };
	pid_t nodes[N_NODES];
	unsigned seed = (unsigned)time(NULL);
	int kills = 0;

	init_run();
	printf("seed=%u\n", seed);
	for (int i = 0; i < N_NODES; i++)
		nodes[i] = spawn_node();
	/* Kill a random node every 15-45 ms until the work is nearly done
	 * (and at least 40 times), respawning it at once. */
	int64_t deadline = clock_mono_ms() + 20000;
	for (;;) {
		nap_ms(15 + rand_r(&seed) % 30);
		int64_t done = pgfx_int("SELECT count(*) FROM jobs"
					" WHERE state = 2");
		if ((done >= N_SLOTS * 9 / 10 && kills >= 40) ||
		    clock_mono_ms() > deadline)
			break;
		int k = rand_r(&seed) % N_NODES;
		kill(nodes[k], SIGKILL);
		(void)wait_exit(nodes[k]);
		kills++;
		nodes[k] = spawn_node();
	}
	for (int i = 0; i < N_NODES; i++)
		assert_int_equal(wait_exit(nodes[i]), 0);
	printf("kills=%d stalled_rows=%lld\n", kills,
	       (long long)pgfx_int("SELECT count(*) FROM ledger WHERE outcome"
				   " = 'stalled'"));
	assert_true(kills >= 10);
	check_exactly_once();
}

static void killed_node_job_is_taken_over(void **state)
{
	PGFX_NEED_SERVER();
	struct store *s = NULL;
	struct store_job j;
	struct ledger_row *rows = NULL;
	struct ledger_filter f = {.schedule = SCHED, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	int fds[2];
	size_t n = 0;
	char name[32];

	assert_int_equal(store_open(pgfx_url(), sc_clock_real(), &s, NULL), 0);
	int64_t slot = sc_clock_now_ms(sc_clock_real()) - 1000;
	assert_int_equal(queue_enqueue(s, SCHED, slot, &policy, NULL, NULL,
				       NULL), 0);
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The doomed node: claims the job, says so, then hangs. */
		struct store *c = NULL;
		struct store_job cj;
		size_t cn = 0;
		if (store_open(pgfx_url(), sc_clock_real(), &c, NULL) ||
		    queue_claim(c, "doomed", LEASE_MS, &cj, 1, &cn, NULL) ||
		    cn != 1)
			_exit(1);
		(void)!write(fds[1], "x", 1);
		pause();
		_exit(0);
	}
	track(pid);
	char x;
	assert_int_equal(read(fds[0], &x, 1), 1);
	kill(pid, SIGKILL);
	assert_int_equal(wait_exit(pid), 128 + SIGKILL);
	close(fds[0]);
	close(fds[1]);

	/* The job is still the dead node's until its lease runs out. */
	snprintf(name, sizeof(name), "survivor");
	assert_int_equal(queue_claim(s, name, LEASE_MS, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_job_find(s, SCHED, slot, &j, NULL), 0);
	assert_int_equal(j.state, JOB_ACTIVE);
	assert_string_equal(j.lease_owner, "doomed");
	int64_t deadline = clock_mono_ms() + 30000;
	int rec = 0;
	while (rec == 0 && clock_mono_ms() < deadline) {
		nap_ms(50);
		assert_int_equal(queue_recover(s, STALL_LIMIT, &rec, NULL), 0);
	}
	assert_int_equal(rec, 1);
	assert_int_equal(queue_claim(s, name, LEASE_MS, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(j.attempts, 2);
	assert_int_equal(queue_complete(s, &j, NULL, NULL), 0);

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].outcome, LEDGER_STALLED);
	assert_non_null(strstr(rows[0].error_msg, "doomed"));
	assert_string_equal(rows[1].outcome, LEDGER_SUCCESS);
	assert_int_equal(rows[1].attempt, 2);
	store_ledger_rows_free(rows, n);
	store_close(s);
}

static void restart_in_the_middle(void **state)
{
	PGFX_NEED_SERVER();
	if (!pgfx_restartable())
		skip(); /* an external server: not ours to restart */
	enum { N_NODES = 2 };
	pid_t nodes[N_NODES];
	char url[512];

	init_run();
	for (int i = 0; i < N_NODES; i++)
		nodes[i] = spawn_node();
	/* Let them get going, then pull the database away under them. */
	int64_t deadline = clock_mono_ms() + 10000;
	while (pgfx_int("SELECT count(*) FROM jobs WHERE state = 2") < 300 &&
	       clock_mono_ms() < deadline)
		nap_ms(10);
	assert_int_equal(pgfx_server("stop", NULL, 0), 0);
	nap_ms(300);
	assert_int_equal(pgfx_server("start", url, sizeof(url)), 0);
	int64_t done = pgfx_int("SELECT count(*) FROM jobs WHERE state = 2");
	printf("done_at_restart=%lld\n", (long long)done);
	assert_true(done < N_SLOTS); /* the restart really hit a running job */
	for (int i = 0; i < N_NODES; i++)
		assert_int_equal(wait_exit(nodes[i]), 0);
	check_exactly_once();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(nodes_share_the_work_under_kills,
						pgfx_setup, teardown),
		cmocka_unit_test_setup_teardown(killed_node_job_is_taken_over,
						pgfx_setup, teardown),
		cmocka_unit_test_setup_teardown(restart_in_the_middle,
						pgfx_setup, teardown),
	};
	return cmocka_run_group_tests(tests, pgfx_group_setup,
				      pgfx_group_teardown);
}
