/*
 * test_paused_worker.c - the paused-worker fault campaign (issue 10): a
 * worker is frozen with SIGSTOP past its lease, another daemon on the same
 * store takes its job over, then the frozen one is resumed with SIGCONT.
 *
 * Two real daemons (`surecron run`) share one store: a PostgreSQL schema,
 * and one SQLite file (several daemons on one SQLite file on one machine
 * are supported: docs/operations.md). Each trial enqueues one job; daemon
 * A claims it and is stopped either
 *   - inside its task (the task has started: a line in tasks.log), or
 *   - inside its send (the receiver holds the POST until A is stopped,
 *     then answers 200 into A's socket, so A reads a 2xx when it resumes),
 * for 3 x the lease. B is started once A is frozen, recovers the expired
 * lease and runs the slot itself. Then A resumes. The webhook target runs
 * with `on_ambiguous: resend` in some trials and `hold` in others.
 *
 * Asserted for every trial:
 *   - no write with a stale lease: the resumed A writes no SENT (its log
 *     says `state=sent` only for a guard it wrote), no marker, and a slot
 *     that ended lost (held) has no SENT row and no marker;
 *   - no undeclared duplicate: receiver copies <= 1 + `duplicate` rows;
 *   - nothing lost: the slot is delivered (DONE, marked, at least one copy
 *     received) or, with hold, held (DEAD with its `lost` row and the row
 *     UNKNOWN, so `release --arrived|--resend` can settle it);
 *   - with hold, a slot never ends both lost and SENT + marked.
 * The figure line: `paused worker: trials N, lost L, undeclared U,
 * declared D, stale writes S`. On the code before issue 10 the hold trials
 * inside a send end lost AND sent + marked (stale writes > 0).
 *
 * Real time throughout (the lease is 1 s, the pause 3 s); every wait polls
 * a condition with a deadline, the pause itself is the fault being made.
 * On SQLite a daemon frozen while one of its threads is inside a write
 * transaction holds the file's write lock: no takeover is possible until
 * it resumes, and it then carries on as the owner; such a trial is
 * checked the same way (one copy, delivered) and counted apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "fakes/fake_http.h"
#include "pg_fixture.h"

#define LEASE_MS 1000
#define PAUSE_MS (3 * LEASE_MS)
#define WAIT_MS 30000 /* deadline of each wait (real time) */

enum where { IN_TASK, IN_SEND };

struct trial {
	enum where where;
	bool hold;
};

static const struct trial trials[] = {
	{IN_SEND, false},
	{IN_SEND, true},
	{IN_TASK, false},
	{IN_TASK, true},
};
#define N_TRIALS (sizeof(trials) / sizeof(trials[0]))

/* Campaign totals, over every backend; printed once at the end. */
static struct {
	int trials, lost, undeclared, declared, stale, takeovers;
} tot;

static pid_t pids[2];

static void reap(void)
{
	for (size_t i = 0; i < 2; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGCONT);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
	}
}

/* Stops a daemon with SIGTERM; it must exit by itself. */
static void stop(pid_t *pid)
{
	kill(*pid, SIGTERM);
	int st = tu_wait_exit(*pid, WAIT_MS);
	if (st < 0)
		fail_msg("daemon %d did not stop on SIGTERM", (int)*pid);
	*pid = 0;
}

/*
 * Waits until every thread of pid is stopped (state 'T' in the stat file of
 * each entry of /proc/PID/task).
 * kill(SIGSTOP) returns before the group stop is complete; a thread that
 * still ran could read the answer released next and write SENT with a
 * lease that was still its own, which is no stale write.
 */
static bool wait_frozen(pid_t pid)
{
	int64_t end = tu_now_ms() + WAIT_MS;
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	while (tu_now_ms() < end) {
		DIR *d = opendir(dir);
		struct dirent *de;
		bool all = d != NULL;
		while (d && (de = readdir(d)) != NULL) {
			char path[384], buf[512];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/stat", dir,
				 de->d_name);
			tu_slurp(path, buf, sizeof(buf));
			const char *p = strrchr(buf, ')');
			if (!p || (p[2] != 'T' && p[2] != 't'))
				all = false;
		}
		if (d)
			closedir(d);
		if (all)
			return true;
		tu_sleep_ms(1);
	}
	return false;
}

static size_t count_in_file(const char *path, const char *needle)
{
	static char buf[1 << 20];
	size_t n = 0;

	tu_slurp(path, buf, sizeof(buf));
	for (const char *p = buf; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static bool wait_file_count(const char *path, const char *needle, size_t n)
{
	int64_t end = tu_now_ms() + WAIT_MS;

	while (tu_now_ms() < end) {
		if (count_in_file(path, needle) >= n)
			return true;
		tu_sleep_ms(20);
	}
	return false;
}

/* Waits until job id has had at least min_attempts claims and, when
 * ended is set, has ended (DONE or DEAD), or real time reaches end_ms;
 * *out is its last state. */
static bool wait_job(const char *url, int64_t id, int min_attempts,
		     bool ended, int64_t end_ms, struct store_job *out)
{
	while (tu_now_ms() < end_ms) {
		struct store *s = tu_store_open(url);
		int rc = store_job_get(s, id, out, NULL);
		store_close(s);
		if (rc == 0 && out->attempts >= min_attempts &&
		    (!ended || out->state == JOB_DONE ||
		     out->state == JOB_DEAD))
			return true;
		tu_sleep_ms(50);
	}
	return false;
}

static void run_trial(const char *url, const char *root, int k,
		      const struct trial *t, struct fake_http *srv)
{
	bool is_sqlite = strncmp(url, "sqlite:", 7) == 0;
	char dir_a[512], dir_b[512], cfg[600], tasks[600], sched[32];
	char log_a[600], hook[256], env_url[300], needle[128];
	int64_t id = 0;

	snprintf(sched, sizeof(sched), "pw%d", k);
	snprintf(dir_a, sizeof(dir_a), "%s/a%d", root, k);
	snprintf(dir_b, sizeof(dir_b), "%s/b%d", root, k);
	assert_int_equal(mkdir(dir_a, 0700), 0);
	assert_int_equal(mkdir(dir_b, 0700), 0);
	snprintf(cfg, sizeof(cfg), "%s/pw%d.yaml", root, k);
	snprintf(tasks, sizeof(tasks), "%s/tasks%d.log", root, k);
	snprintf(log_a, sizeof(log_a), "%s/daemon.log", dir_a);
	fake_http_reset(srv);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	fake_http_url(srv, "/hook", hook, sizeof(hook));
	snprintf(env_url, sizeof(env_url), "PW_HOOK_URL=%s", hook);

	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	/* A yearly cron never fires during the test: the one job is the
	 * test's own. The client timeout outlasts the pause, so a resumed
	 * A reads the 2xx waiting in its socket. */
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 1, lease: 1s, grace: 1s}\n"
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: PW_HOOK_URL, "
		   "on_ambiguous: %s, timeout: 60s}\n"
		   "schedules:\n"
		   "  %s:\n"
		   "    cron: \"0 0 1 1 *\"\n"
		   "    tz: UTC\n"
		   "    targets: [hook]\n"
		   "    tasks:\n"
		   "      - {name: t, shell: \"echo started >> %s; %s"
		   "echo done\"}\n",
		url, t->hold ? "hold" : "resend", sched, tasks,
		t->where == IN_TASK ? "sleep 1; " : "");
	fclose(f);

	const char *envs[] = {env_url, "SURECRON_LOG=info", NULL};
	pids[0] = tu_start_daemon(dir_a, cfg, envs, 0);
	if (t->where == IN_SEND)
		fake_http_hold(srv, "/hook", true);

	struct store *s = tu_store_open(url);
	struct sc_retry_policy pol = {4, SC_BACKOFF_EXPONENTIAL, 1000};
	int64_t slot = tu_now_ms() / 1000 * 1000;
	assert_int_equal(store_job_enqueue(s, sched, slot, &pol, slot, true,
					   &id, NULL, NULL), 0);
	store_close(s);

	/* A is inside the fault point: freeze it. */
	if (t->where == IN_SEND)
		assert_true(fake_http_wait(srv, "/hook", 1, WAIT_MS));
	else
		assert_true(wait_file_count(tasks, "started", 1));
	kill(pids[0], SIGSTOP);
	assert_true(wait_frozen(pids[0]));
	int64_t t_stop = tu_now_ms();
	/* A's request is answered now, into the socket of a frozen worker. */
	if (t->where == IN_SEND)
		fake_http_hold(srv, "/hook", false);

	pids[1] = tu_start_daemon(dir_b, cfg, envs, 0);
	struct store_job j;
	/* A stays frozen for 3 x the lease and at least until B has taken
	 * the job over (claimed it: attempt 2), so that whatever A writes
	 * after it resumes is a write with a stale lease. On SQLite a
	 * daemon frozen inside a write transaction (its scheduler or
	 * recovery thread, say) holds the file's write lock until it
	 * resumes: then nobody can take over, and A, resumed, goes on as
	 * the owner. Such a trial is checked the same way below; only
	 * PostgreSQL must always take over. */
	bool taken = wait_job(url, id, 2, false,
			      t_stop + 4 * PAUSE_MS + 4000, &j);
	if (!taken && !is_sqlite)
		fail_msg("trial %d: B did not take job %lld over", k,
			 (long long)id);
	int64_t left = t_stop + PAUSE_MS - tu_now_ms();
	if (left > 0)
		tu_sleep_ms(left); /* the pause is the fault itself */
	kill(pids[0], SIGCONT);
	if (!wait_job(url, id, 1, true, tu_now_ms() + WAIT_MS, &j))
		fail_msg("trial %d: job %lld did not end after the resume", k,
			 (long long)id);
	/* A ends its stale attempt (outcome lease-lost) and logs it. */
	snprintf(needle, sizeof(needle), "event=finish schedule=%s", sched);
	if (!wait_file_count(log_a, needle, 1))
		fail_msg("trial %d: the resumed daemon did not end its run", k);
	stop(&pids[0]);
	stop(&pids[1]);

	/* What the store and the receiver say. */
	s = tu_store_open(url);
	struct outbox_entry e = {0};
	bool marked = false;
	assert_int_equal(store_job_get(s, id, &j, NULL), 0);
	assert_int_equal(store_outbox_get(s, sched, slot, "hook", &e, NULL), 0);
	assert_int_equal(store_slot_is_marked(s, sched, slot, &marked, NULL), 0);
	store_close(s);
	size_t n_dup = tu_ledger_count(url, sched, LEDGER_DUPLICATE);
	size_t n_recv = fake_http_count(srv, "/hook");

	/* A writes SENT only for a copy its stale attempt sent: the delivery
	 * log line follows the committed guard. */
	snprintf(needle, sizeof(needle), "schedule=%s slot_ms=%lld "
		 "target=hook state=sent", sched, (long long)slot);
	int stale = taken ? (int)count_in_file(log_a, needle) : 0;
	bool dead = j.state == JOB_DEAD;
	if (dead && (e.state == SEND_SENT || marked))
		stale++; /* lost and SENT/marked: only a stale writer did it */
	bool delivered = j.state == JOB_DONE && marked && e.state == SEND_SENT &&
			 n_recv >= 1;
	bool held = dead && t->hold && e.state == SEND_UNKNOWN && !marked;
	int lost = delivered || held ? 0 : 1;
	int undeclared = n_recv > 1 + n_dup ? (int)(n_recv - 1 - n_dup) : 0;

	fprintf(stderr, "trial %d (%s, %s): %s, job %s, row %d, marked %d, "
		"copies %zu, declared %zu, stale %d\n", k,
		t->where == IN_TASK ? "in task" : "in send",
		t->hold ? "hold" : "resend",
		taken ? "taken over" : "no takeover (write lock frozen)",
		dead ? "dead" : j.state == JOB_DONE ? "done" : "other",
		(int)e.state, (int)marked, n_recv, n_dup, stale);
	tot.takeovers += taken;
	store_outbox_entry_dispose(&e);
	tot.trials++;
	tot.lost += lost;
	tot.undeclared += undeclared;
	tot.declared += (int)n_dup;
	tot.stale += stale;
	assert_int_equal(stale, 0);
	assert_int_equal(undeclared, 0);
	assert_int_equal(lost, 0);
	/* Inside a task nothing was on the wire: one copy, nothing held. */
	if (t->where == IN_TASK) {
		assert_true(delivered);
		assert_int_equal(n_recv, 1);
	}
}

static void campaign(const char *url, const char *root)
{
	struct fake_http *srv = fake_http_start();

	/* SURECRON_PW_ROUNDS=N repeats the trials N times (default 1: CI). */
	const char *env = getenv("SURECRON_PW_ROUNDS");
	int rounds = env && atoi(env) > 0 ? atoi(env) : 1;

	assert_non_null(srv);
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < N_TRIALS; i++)
			run_trial(url, root, r * (int)N_TRIALS + (int)i,
				  &trials[i], srv);
	fake_http_stop(srv);
}

static void paused_worker_sqlite(void **state)
{
	char url[600];
	(void)state;
	char *root = strdup(tu_tmpdir());

	assert_non_null(root);
	snprintf(url, sizeof(url), "sqlite:%s/store.db", root);
	campaign(url, root);
	tu_rmrf(root);
	free(root);
}

static void paused_worker_pg(void **state)
{
	(void)state;
	PGFX_NEED_SERVER();
	char *root = strdup(tu_tmpdir());

	assert_non_null(root);
	campaign(pgfx_url(), root);
	tu_rmrf(root);
	free(root);
}

static int teardown_sqlite(void **state)
{
	(void)state;
	reap();
	return 0;
}

static int teardown_pg(void **state)
{
	reap();
	return pgfx_teardown(state);
}

static int group_teardown(void **state)
{
	fprintf(stderr, "paused worker: trials %d, lost %d, undeclared %d, "
		"declared %d, stale writes %d (takeovers %d)\n", tot.trials,
		tot.lost, tot.undeclared, tot.declared, tot.stale,
		tot.takeovers);
	return pgfx_group_teardown(state);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(paused_worker_sqlite,
					  teardown_sqlite),
		cmocka_unit_test_setup_teardown(paused_worker_pg, pgfx_setup,
						teardown_pg),
	};
	return cmocka_run_group_tests_name("paused_worker", tests,
					   pgfx_group_setup, group_teardown);
}
