/*
 * test_daemon.c - `surecron run` end to end: real daemon processes of
 * $SURECRON_BIN, a real SQLite file (or PostgreSQL), a real HTTP receiver,
 * configs written to a temp folder. Slots come from the daemon's own
 * scheduler (weekly ones reached through SURECRON_TEST_CLOCK) or from this
 * process writing to the same store, as `surecron trigger` would.
 * Each test takes a few seconds of real time. A test waits for what it
 * needs (a file, a request, a log line) with a generous deadline that only
 * a broken daemon reaches, never for a fixed time it assumes is enough;
 * lateness bounds use the instants the daemon records itself, so a slow
 * or loaded machine running the harness does not count against them.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "fakes/fake_http.h"
#include "queue.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "pg_fixture.h"

/* ---- helpers ---------------------------------------------------------- */

struct env {
	char dir[256];
	char cfg[512];
	char url[256]; /* the receiver's /hook */
	struct fake_http *srv;
	char store_url[600];
};

static int64_t now_ms(void)
{
	return tu_now_ms();
}

static void sleep_ms(int64_t ms)
{
	tu_sleep_ms(ms);
}

static void env_init(struct env *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", tu_tmpdir());
	snprintf(e->cfg, sizeof(e->cfg), "%s/surecron.yaml", e->dir);
	e->srv = fake_http_start();
	assert_non_null(e->srv);
	fake_http_set_default(e->srv, "/hook", 200, NULL, "ok");
	fake_http_url(e->srv, "/hook", e->url, sizeof(e->url));
	setenv("DAEMON_HOOK_URL", e->url, 1);
	snprintf(e->store_url, sizeof(e->store_url), "sqlite:%s/s.db", e->dir);
}

static void env_dispose(struct env *e)
{
	fake_http_stop(e->srv);
	tu_rmrf(e->dir);
}

/* Writes the config: store line, targets, then `schedules` verbatim. */
static void write_cfg(struct env *e, const char *worker,
		      const char *schedules)
{
	FILE *f = fopen(e->cfg, "w");

	assert_non_null(f);
	fprintf(f, "store: %s\n"
		   "worker: %s\n"
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: DAEMON_HOOK_URL}\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n%s",
		e->store_url, worker, schedules);
	fclose(f);
}

/* Every daemon a test started, killed by the teardown if still there, so
 * a failed assertion never leaves one behind. */
static pid_t pids[16];
static size_t n_pids;

static int reap_all(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_pids; i++) {
		if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	}
	n_pids = 0;
	return 0;
}

/* Starts `surecron run --config CFG` in the temp folder, stderr to
 * daemon.log; extra "K=V" strings go into its environment. */
static pid_t start_daemon(const struct env *e, const char *const *envs)
{
	const char *all[16] = {"SURECRON_LOG=debug"}; /* envs may override */
	size_t n = 1;

	for (size_t i = 0; envs && envs[i] && n < 15; i++)
		all[n++] = envs[i];
	pid_t pid = tu_start_daemon(e->dir, e->cfg, all, 0);
	if (n_pids < sizeof(pids) / sizeof(pids[0]))
		pids[n_pids++] = pid;
	return pid;
}

/* Waits up to timeout_ms for pid to exit; returns its status or -1. */
static int wait_exit(pid_t pid, int64_t timeout_ms)
{
	return tu_wait_exit(pid, timeout_ms);
}

static void stop_daemon(pid_t pid)
{
	kill(pid, SIGTERM);
	if (wait_exit(pid, 5000) == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static bool file_exists(const struct env *e, const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", e->dir, name);
	return access(p, F_OK) == 0;
}

static bool wait_file(const struct env *e, const char *name, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (now_ms() < end) {
		if (file_exists(e, name))
			return true;
		sleep_ms(5);
	}
	return false;
}

/* Lines of a file in the temp folder. */
static size_t count_lines(const struct env *e, const char *name)
{
	char p[512], line[4096];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/%s", e->dir, name);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

static bool log_has(const struct env *e, const char *needle)
{
	char p[512], line[4096];
	bool found = false;

	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* The integer after key in the first daemon log line holding needle;
 * -1 when there is none. */
static long long log_field(const struct env *e, const char *needle,
			   const char *key)
{
	char p[512], line[4096];
	long long v = -1;

	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	while (f && v < 0 && fgets(line, sizeof(line), f)) {
		const char *k = strstr(line, needle) ? strstr(line, key) : NULL;
		if (k && k[strlen(key)] >= '0' && k[strlen(key)] <= '9')
			v = strtoll(k + strlen(key), NULL, 10);
	}
	if (f)
		fclose(f);
	return v;
}

/* Lines of the daemon log (every daemon of the test) holding needle. */
static size_t log_count(const struct env *e, const char *needle)
{
	char p[512], line[4096];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Lines of the daemon log holding needle whose late_us is negative. */
static size_t log_count_negative_late(const struct env *e, const char *needle)
{
	char p[512], line[4096];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/daemon.log", e->dir);
	FILE *f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *l = strstr(line, needle) ? strstr(line, " late_us=")
						     : NULL;
		n += l && l[9] == '-';
	}
	if (f)
		fclose(f);
	return n;
}

/* Waits up to ms until n lines of the daemon log hold needle. */
static bool wait_log(const struct env *e, const char *needle, size_t n,
		     int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (log_count(e, needle) < n) {
		if (now_ms() > end)
			return false;
		sleep_ms(10);
	}
	return true;
}

/* Waits until the n-th daemon of the test has its signal handling in
 * place and runs (it logs event=started then). */
static void wait_started(const struct env *e, size_t n)
{
	assert_true(wait_log(e, "event=started", n, 20000));
}

static struct store *open_store(const struct env *e)
{
	return tu_store_open(e->store_url);
}

/* `surecron trigger` from this process: a manual slot due now. */
static int64_t trigger(const struct env *e, const char *schedule,
		       int64_t slot_ms)
{
	struct store *s = open_store(e);
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct sc_err err = {0};
	struct config *cfg = NULL;
	int64_t id = 0;

	/* The schedule's own policy, as `surecron trigger` uses it. */
	if (config_load(e->cfg, &cfg, NULL) == 0) {
		const struct schedule_spec *sp = config_schedule(cfg, schedule);
		if (sp)
			p = *spec_policy(sp);
		config_free(cfg);
	}

	assert_int_equal(queue_trigger(s, schedule, slot_ms, &p, &id, NULL,
				       &err), 0);
	store_close(s);
	return id;
}

/* Ledger rows of a schedule with a given outcome. */
static size_t ledger_count(const struct env *e, const char *schedule,
			   const char *outcome)
{
	return tu_ledger_count(e->store_url, schedule, outcome);
}

#define W_FAST "{concurrency: 1, lease: 2s, grace: 1s}"

/* How long a test waits for something that a working daemon does within
 * a second or two: only a broken one (or a hung machine) reaches it. */
#define PATIENCE_MS 20000

/* Waits (PATIENCE_MS at most) until a schedule has n rows of outcome. */
static bool wait_ledger(const struct env *e, const char *schedule,
			const char *outcome, size_t n)
{
	int64_t end = now_ms() + PATIENCE_MS;

	while (ledger_count(e, schedule, outcome) < n) {
		if (now_ms() > end)
			return false;
		sleep_ms(20);
	}
	return true;
}

static bool wait_hooks(const struct env *e, size_t n, int ms)
{
	return fake_http_wait(e->srv, "/hook", n, ms);
}

/* ---- (1) the seed incident, in real time ------------------------------ */

static void quota_then_success(void **state)
{
	struct env e;
	(void)state;
	TU_NEED_TEST_SEAMS();
	env_init(&e);
	/* Friday 2026-03-06 08:00 UTC, three seconds after the daemon
	 * starts: time to start up (slowly under ASan on a busy machine)
	 * before the slot, so the slot's start measures the daemon, not
	 * its start-up. */
	write_cfg(&e, W_FAST,
		  "  weekly:\n"
		  "    cron: \"0 8 * * 5\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    retry: {attempts: 4, backoff: exponential, delay: 300ms}\n"
		  "    tasks:\n"
		  "      - name: summary\n"
		  "        shell: \"n=$(cat runs 2>/dev/null || echo 0); "
		  "n=$((n+1)); echo $n > runs; if [ $n -le 3 ]; then "
		  "echo 'LLM API quota exceeded' >&2; exit 75; fi; "
		  "echo 'the weekly summary'\"\n");
	const char *envs[] = {"SURECRON_TEST_CLOCK=2026-03-06T07:59:57Z",
			      NULL};
	pid_t pid = start_daemon(&e, envs);

	/* 3 s to the slot, then 0.3 + 0.6 + 1.2 s of backoff. Each failed
	 * attempt sends its failure notice (DESIGN.md), then the result. */
	assert_true(wait_hooks(&e, 4, 30000));
	/* The success row is the run's last write; the stop is graceful, so
	 * a second result, if the run sent one, is in by the exit. */
	assert_true(wait_ledger(&e, "weekly", LEDGER_SUCCESS, 1));
	stop_daemon(pid);
	size_t n = fake_http_count(e.srv, "/hook"), n_result = 0;
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		struct fake_request r;
		assert_true(fake_http_request(e.srv, "/hook", (long)i, &r));
		if (strstr(r.body, "the weekly summary"))
			n_result++;
		else
			assert_non_null(strstr(r.body, "quota exceeded"));
		fake_request_dispose(&r);
	}
	assert_int_equal(n_result, 1);
	char runs[600];
	snprintf(runs, sizeof(runs), "%s/runs", e.dir);
	FILE *f = fopen(runs, "r");
	assert_non_null(f);
	int nruns = 0;
	assert_int_equal(fscanf(f, "%d", &nruns), 1);
	fclose(f);
	assert_int_equal(nruns, 4);
	/* The timeline: attempt k starts 300 ms * (2^(k-1) - 1) after the
	 * slot (0, 300, 900, 2100 ms), plus the time the earlier attempts
	 * ran (the script itself, slower on a loaded machine), each within
	 * a few hundred ms. */
	struct store *s = open_store(&e);
	struct ledger_filter lf = {.schedule = "weekly", .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	struct ledger_row *rows = NULL;
	size_t nr = 0;
	assert_int_equal(store_ledger_query(s, &lf, &rows, &nr, NULL), 0);
	assert_int_equal(nr, 4);
	static const int64_t at[] = {0, 300, 900, 2100};
	int64_t ran = 0; /* how long attempts 1..i-1 ran */
	for (size_t i = 0; i < nr; i++) {
		int64_t off = rows[i].started_ms - rows[i].slot_ms - ran;
		printf("attempt %zu off_ms=%lld ran_ms=%lld\n", i + 1,
		       (long long)off, (long long)ran);
		assert_int_equal(rows[i].attempt, (int)i + 1);
		/* -3: a ms of rounding per retry, as `late` allows below. */
		assert_true(off >= at[i] - 3 && off < at[i] + 400);
		ran += rows[i].finished_ms - rows[i].started_ms;
		if (i == 0)
			continue;
		/* A retry starts within a few ms of its due instant: the
		 * failure's time + the backoff (no polling in between). */
		int64_t due = rows[i - 1].finished_ms + (300 << (i - 1));
		int64_t late = rows[i].started_ms - due;
		printf("retry %zu late_ms=%lld\n", i, (long long)late);
		assert_true(late >= -1 && late <= 50);
	}
	store_ledger_rows_free(rows, nr);
	store_close(s);
	assert_int_equal(ledger_count(&e, "weekly", LEDGER_FAILED), 3);
	assert_int_equal(ledger_count(&e, "weekly", LEDGER_SUCCESS), 1);
	assert_int_equal(ledger_count(&e, "weekly", LEDGER_LOST), 0);
	assert_true(log_has(&e, "outcome=failed"));
	assert_true(log_has(&e, "outcome=success"));
	env_dispose(&e);
}

/* ---- (2) kill -9 in the middle of a slot ------------------------------ */

static void kill9_mid_slot(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	/* The first run holds until the file `go` exists, which the test
	 * makes only once that run is dead: whatever the machine's load, the
	 * kill lands mid-run, and the run cannot end on its own. */
	write_cfg(&e, "{concurrency: 1, lease: 1s, grace: 1s}",
		  "  daily:\n"
		  "    cron: \"0 3 * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook, archive]\n"
		  "    tasks:\n"
		  "      - name: slow\n"
		  "        shell: \"echo $$ >> started; "
		  "while [ ! -e go ]; do sleep 0.02; done; "
		  "echo 'the daily report'\"\n");
	pid_t pid = start_daemon(&e, NULL);
	int64_t slot = now_ms() / 1000 * 1000;
	trigger(&e, "daily", slot);
	int64_t end = now_ms() + PATIENCE_MS;
	while (count_lines(&e, "started") < 1 && now_ms() < end)
		sleep_ms(5);
	char line[64] = "";
	char p[512];
	snprintf(p, sizeof(p), "%s/started", e.dir);
	tu_slurp(p, line, sizeof(line));
	pid_t task = (pid_t)strtol(line, NULL, 10);
	assert_true(task > 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* The run's reaper sees its host gone and kills the orphaned task;
	 * nothing reads its output, nothing delivers it. */
	end = now_ms() + PATIENCE_MS;
	while (!tu_pid_gone(task) && now_ms() < end)
		sleep_ms(5);
	assert_true(tu_pid_gone(task));
	assert_int_equal(fake_http_count(e.srv, "/hook"), 0);
	assert_int_equal(count_lines(&e, "deliveries.jsonl"), 0);
	snprintf(p, sizeof(p), "%s/go", e.dir);
	FILE *go = fopen(p, "w");
	assert_non_null(go);
	fclose(go);

	pid = start_daemon(&e, NULL);
	/* The lease (1 s) expires, the job is recovered and runs again;
	 * its success row is the last thing the run writes. */
	assert_true(wait_hooks(&e, 1, PATIENCE_MS));
	end = now_ms() + PATIENCE_MS;
	while (count_lines(&e, "deliveries.jsonl") < 1 && now_ms() < end)
		sleep_ms(20);
	assert_true(wait_ledger(&e, "daily", LEDGER_SUCCESS, 1));
	stop_daemon(pid); /* a graceful stop: what was under way ends */
	assert_int_equal(fake_http_count(e.srv, "/hook"), 1);
	assert_int_equal(count_lines(&e, "deliveries.jsonl"), 1);
	assert_int_equal(count_lines(&e, "started"), 2);
	assert_int_equal(ledger_count(&e, "daily", LEDGER_STALLED), 1);
	assert_int_equal(ledger_count(&e, "daily", LEDGER_SUCCESS), 1);
	env_dispose(&e);
}

/* ---- (3) down over two weekly slots, catchup latest ------------------- */

static void downtime_catchup_latest(void **state)
{
	struct env e;
	(void)state;
	TU_NEED_TEST_SEAMS();
	env_init(&e);
	write_cfg(&e, W_FAST,
		  "  weekly:\n"
		  "    cron: \"0 8 * * 5\"\n"
		  "    tz: UTC\n"
		  "    catchup: latest\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: summary, shell: \"echo \\\"$SURECRON_SLOT\\\"\"}\n");
	const char *before[] = {"SURECRON_TEST_CLOCK=2026-03-06T07:00:00Z",
				NULL};
	pid_t pid = start_daemon(&e, before);
	int64_t end = now_ms() + PATIENCE_MS;
	bool seen = false;
	while (!seen && now_ms() < end) {
		struct store *s = open_store(&e);
		int64_t last = 0;
		seen = store_sched_last_get(s, "weekly", &last, NULL) == 0;
		store_close(s);
		sleep_ms(20);
	}
	assert_true(seen);
	stop_daemon(pid);

	/* Two Fridays later (03-06 and 03-13 08:00 passed while down). */
	const char *after[] = {"SURECRON_TEST_CLOCK=2026-03-13T09:00:00Z",
			       NULL};
	pid = start_daemon(&e, after);
	assert_true(wait_hooks(&e, 1, PATIENCE_MS));
	assert_true(wait_ledger(&e, "weekly", LEDGER_SUCCESS, 1));
	stop_daemon(pid);
	assert_int_equal(fake_http_count(e.srv, "/hook"), 1);
	struct fake_request r;
	assert_true(fake_http_request(e.srv, "/hook", 0, &r));
	assert_non_null(strstr(r.body, "2026-03-13T08:00:00Z"));
	fake_request_dispose(&r);
	assert_int_equal(ledger_count(&e, "weekly", LEDGER_SUCCESS), 1);
	assert_int_equal(ledger_count(&e, "weekly", LEDGER_MISSED), 1);
	env_dispose(&e);
}

/* ---- (4) SURECRON_SCHEDULE_<NAME> changes firing and class ------------ */

static void env_override_fires(void **state)
{
	struct env e;
	(void)state;
	TU_NEED_TEST_SEAMS();
	env_init(&e);
	/* As written: weekly (low-frequency, 4 attempts); overridden: every
	 * second (default class, 2 attempts). */
	write_cfg(&e, W_FAST,
		  "  weekly-report:\n"
		  "    cron: \"0 8 * * 5\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo tick\"}\n");
	const char *envs[] = {
		"SURECRON_SCHEDULE_WEEKLY_REPORT=* * * * * *",
		"SURECRON_TEST_CLOCK=2026-03-04T10:00:00Z", NULL};
	pid_t pid = start_daemon(&e, envs);
	assert_true(wait_hooks(&e, 2, PATIENCE_MS));
	stop_daemon(pid);
	struct store *s = open_store(&e);
	struct ledger_filter f = {.schedule = "weekly-report",
				  .since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = LEDGER_SUCCESS};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	assert_true(n >= 2);
	struct store_job job;
	assert_int_equal(store_job_get(s, rows[0].job_id, &job, NULL), 0);
	assert_int_equal(job.policy.attempts, 2); /* the default class */
	/* Slots are whole seconds on a Wednesday: not the weekly cron. */
	assert_int_equal(rows[0].slot_ms % 1000, 0);
	assert_int_not_equal(rows[0].slot_ms, rows[1].slot_ms);
	store_ledger_rows_free(rows, n);
	store_close(s);
	env_dispose(&e);
}

/* ---- (5) SIGTERM: grace, release, exit 0 ------------------------------ */

static void sigterm_grace(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	/* Grace 0.5 s, task 5 s: released. */
	write_cfg(&e, "{concurrency: 1, lease: 5s, grace: 500ms}",
		  "  long:\n"
		  "    cron: \"0 3 * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"touch started; sleep 5; echo done\"}\n"
		  "  short:\n"
		  "    cron: \"0 3 * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"touch started2; sleep 0.4; "
		  "echo done\"}\n");
	pid_t pid = start_daemon(&e, NULL);
	int64_t id = trigger(&e, "long", now_ms() / 1000 * 1000);
	assert_true(wait_file(&e, "started", PATIENCE_MS));
	int64_t t0 = now_ms();
	kill(pid, SIGTERM);
	int st = wait_exit(pid, PATIENCE_MS);
	int64_t took = now_ms() - t0;
	/* It waits the grace, then releases the slot and ends: well
	 * before the task's 5 s, with room for the release and the exit
	 * (ASan's leak check at exit) on a loaded machine. */
	printf("SIGTERM to exit: %lld ms\n", (long long)took);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(took >= 450 && took < 4000);
	struct store *s = open_store(&e);
	struct store_job job;
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	assert_int_equal(job.state, JOB_READY);
	assert_int_equal(job.attempts, 0);
	store_close(s);
	assert_int_equal(ledger_count(&e, "long", LEDGER_RELEASED), 1);
	assert_int_equal(fake_http_count(e.srv, "/hook"), 0);

	/* A slot shorter than the grace finishes. The released one runs
	 * first (its claim is older); let it go, then stop the daemon while
	 * `short` runs. */
	write_cfg(&e, "{concurrency: 1, lease: 5s, grace: 3s}",
		  "  short:\n"
		  "    cron: \"0 3 * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"touch started2; sleep 0.4; "
		  "echo done\"}\n");
	s = open_store(&e);
	struct sc_err err = {0};
	/* Drop the released job out of the way: not this test's point. */
	size_t n = 0;
	assert_int_equal(queue_claim(s, "test", 60000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(queue_complete(s, &job, NULL, &err), 0);
	store_close(s);
	pid = start_daemon(&e, NULL);
	id = trigger(&e, "short", now_ms() / 1000 * 1000);
	assert_true(wait_file(&e, "started2", PATIENCE_MS));
	kill(pid, SIGTERM);
	st = wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	s = open_store(&e);
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	assert_int_equal(job.state, JOB_DONE);
	store_close(s);
	assert_int_equal(fake_http_count(e.srv, "/hook"), 1);
	env_dispose(&e);
}

/* ---- (6) SIGHUP: a broken config is refused, a good one taken --------- */

static const char one_sched[] =
	"  first:\n"
	"    cron: \"0 3 * * *\"\n"
	"    tz: UTC\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"echo first\"}\n";

static void sighup_reload(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_cfg(&e, W_FAST, one_sched);
	pid_t pid = start_daemon(&e, NULL);
	/* Until it logs event=started it may not have read its config, nor
	 * taken SIGHUP from the default action (which ends the process). */
	wait_started(&e, 1);

	FILE *f = fopen(e.cfg, "w");
	assert_non_null(f);
	fputs("schedules: [this is: not: valid\n", f);
	fclose(f);
	kill(pid, SIGHUP);
	assert_true(wait_log(&e, "event=reload outcome=refused", 1,
			     PATIENCE_MS));
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still running */
	/* The old config still runs `first`. */
	trigger(&e, "first", now_ms() / 1000 * 1000);
	assert_true(wait_hooks(&e, 1, PATIENCE_MS));

	/* A good config with a new schedule is taken. */
	write_cfg(&e, W_FAST,
		  "  second:\n"
		  "    cron: \"0 3 * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo second\"}\n");
	kill(pid, SIGHUP);
	assert_true(wait_log(&e, "event=reload outcome=ok", 1, PATIENCE_MS));
	trigger(&e, "second", now_ms() / 1000 * 1000);
	assert_true(wait_hooks(&e, 2, PATIENCE_MS));
	struct fake_request r;
	assert_true(fake_http_request(e.srv, "/hook", 1, &r));
	assert_non_null(strstr(r.body, "second"));
	fake_request_dispose(&r);
	stop_daemon(pid);
	env_dispose(&e);
}

/* ---- (6b) SIGHUP applies worker.concurrency, lease, grace; not store -- */

/* A number a task wrote (date +%s%N) into a file of the temp folder; -1
 * when the file is missing or empty. */
static int64_t read_ns(const struct env *e, const char *name)
{
	char p[512];
	long long v = -1;

	snprintf(p, sizeof(p), "%s/%s", e->dir, name);
	FILE *f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Rewrites the config, sends SIGHUP and waits for the n-th reload that
 * was taken (the log's `event=reload outcome=ok`). */
static void reload_to(const struct env *e, pid_t pid, const char *worker,
		      const char *schedules, size_t n)
{
	/* A SIGHUP before the daemon blocks it (cmd_run.c, before
	 * event=started) would end it: wait for the start, not a fixed
	 * time. */
	int64_t up = now_ms() + PATIENCE_MS;
	while (log_count(e, "event=started") < 1 && now_ms() < up)
		sleep_ms(10);
	write_cfg((struct env *)e, worker, schedules);
	kill(pid, SIGHUP);
	/* PATIENCE_MS: under TSan beside another suite a reload took more
	 * than 10 s. */
	int64_t end = now_ms() + PATIENCE_MS;
	while (log_count(e, "event=reload outcome=ok") < n && now_ms() < end)
		sleep_ms(10);
	assert_int_equal(log_count(e, "event=reload outcome=ok"), n);
}

/* Three never-due schedules whose task writes its start and end times
 * (ns) to NAME.start / NAME.end around a sleep of `secs` (NULL: until the
 * test creates the file `go`, at most 20 s), then prints its name (the
 * message delivered). A gate, not a sleep, is what makes "these ran at
 * the same time" independent of how loaded the machine is. NAME.start is
 * written under another name and renamed, so a test that sees it also
 * sees the time in it. */
static void slow_scheds(char *out, size_t n, const char *secs)
{
	size_t o = 0;
	char wait[128];

	if (secs)
		snprintf(wait, sizeof(wait), "sleep %s", secs);
	else
		snprintf(wait, sizeof(wait), "i=0; while [ ! -f go ] && "
			 "[ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done");
	for (const char *c = "abc"; *c; c++)
		o += (size_t)snprintf(out + o, n - o,
			"  %c:\n"
			"    cron: \"0 3 1 1 *\"\n"
			"    tz: UTC\n"
			"    targets: [hook]\n"
			"    tasks:\n"
			"      - {name: t, shell: \"date +%%s%%N > %c.s; "
			"mv %c.s %c.start; %s; date +%%s%%N > %c.end; "
			"echo %c\"}\n",
			*c, *c, *c, *c, wait, *c, *c);
	assert_true(o < n);
}

static void open_gate(const struct env *e)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/go", e->dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

static void sighup_raises_concurrency(void **state)
{
	struct env e;
	char sched[2048];
	(void)state;
	env_init(&e);
	slow_scheds(sched, sizeof(sched), NULL);
	write_cfg(&e, "{concurrency: 1, lease: 30s, grace: 1s}", sched);
	pid_t pid = start_daemon(&e, NULL);
	wait_started(&e, 1); /* its SIGHUP handling is in place */
	reload_to(&e, pid, "{concurrency: 3, lease: 30s, grace: 1s}", sched, 1);
	int64_t slot = now_ms() / 1000 * 1000;
	trigger(&e, "a", slot);
	trigger(&e, "b", slot);
	trigger(&e, "c", slot);
	/* Three tasks running at once need three workers: with one, b and c
	 * cannot start before a ends, and a waits for the gate. */
	assert_true(wait_file(&e, "a.start", 10000));
	assert_true(wait_file(&e, "b.start", 10000));
	assert_true(wait_file(&e, "c.start", 10000));
	open_gate(&e);
	assert_true(wait_hooks(&e, 3, 10000));
	stop_daemon(pid);
	/* All three ran at once: the last start precedes the first end. */
	int64_t last_start = 0, first_end = INT64_MAX;
	for (const char *c = "abc"; *c; c++) {
		char f[16];
		snprintf(f, sizeof(f), "%c.start", *c);
		int64_t s0 = read_ns(&e, f);
		snprintf(f, sizeof(f), "%c.end", *c);
		int64_t s1 = read_ns(&e, f);
		assert_true(s0 > 0 && s1 > s0);
		last_start = s0 > last_start ? s0 : last_start;
		first_end = s1 < first_end ? s1 : first_end;
	}
	printf("last start %lld ms before the first end\n",
	       (long long)((first_end - last_start) / 1000000));
	assert_true(last_start < first_end);
	assert_true(log_has(&e, "event=workers from=1 to=3"));
	env_dispose(&e);
}

static void sighup_lowers_concurrency(void **state)
{
	struct env e;
	char sched[2048];
	(void)state;
	env_init(&e);
	slow_scheds(sched, sizeof(sched), NULL);
	write_cfg(&e, "{concurrency: 3, lease: 30s, grace: 1s}", sched);
	pid_t pid = start_daemon(&e, NULL);
	wait_started(&e, 1); /* its SIGHUP handling is in place */
	trigger(&e, "a", now_ms() / 1000 * 1000);
	assert_true(wait_file(&e, "a.start", 10000));
	/* Lowered while `a` runs (it waits for the gate): its worker
	 * finishes it, then leaves. */
	reload_to(&e, pid, "{concurrency: 1, lease: 30s, grace: 1s}", sched, 1);
	assert_false(file_exists(&e, "a.end"));
	open_gate(&e);
	assert_true(wait_hooks(&e, 1, 10000));
	assert_true(file_exists(&e, "a.end"));
	/* b and c together (shorter now): one worker left, so one after
	 * the other. */
	slow_scheds(sched, sizeof(sched), "0.4");
	reload_to(&e, pid, "{concurrency: 1, lease: 30s, grace: 1s}", sched, 2);
	int64_t slot = now_ms() / 1000 * 1000;
	trigger(&e, "b", slot);
	trigger(&e, "c", slot);
	assert_true(wait_hooks(&e, 3, 10000));
	assert_true(wait_ledger(&e, "b", LEDGER_SUCCESS, 1));
	assert_true(wait_ledger(&e, "c", LEDGER_SUCCESS, 1));
	stop_daemon(pid); /* graceful: a second delivery is in by the exit */
	assert_int_equal(fake_http_count(e.srv, "/hook"), 3);
	assert_int_equal(ledger_count(&e, "a", LEDGER_SUCCESS), 1);
	assert_int_equal(ledger_count(&e, "a", LEDGER_RELEASED), 0);
	assert_int_equal(ledger_count(&e, "a", LEDGER_FAILED), 0);
	int64_t b0 = read_ns(&e, "b.start"), b1 = read_ns(&e, "b.end");
	int64_t c0 = read_ns(&e, "c.start"), c1 = read_ns(&e, "c.end");
	assert_true(b0 > 0 && b1 > b0 && c0 > 0 && c1 > c0);
	assert_true(b1 <= c0 || c1 <= b0);
	assert_int_equal(log_count(&e, "event=worker-exit"), 2);
	env_dispose(&e);
}

static void sighup_applies_lease_and_grace(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	static const char sched[] =
		"  long:\n"
		"    cron: \"0 3 1 1 *\"\n"
		"    tz: UTC\n"
		"    targets: [hook]\n"
		"    tasks:\n"
		"      - {name: t, shell: \"touch started; sleep 1; "
		"echo done\"}\n";
	write_cfg(&e, "{concurrency: 1, lease: 2s, grace: 200ms}", sched);
	pid_t pid = start_daemon(&e, NULL);
	wait_started(&e, 1); /* its SIGHUP handling is in place */
	reload_to(&e, pid, "{concurrency: 1, lease: 1m, grace: 3s}", sched, 1);
	int64_t id = trigger(&e, "long", now_ms() / 1000 * 1000);
	assert_true(wait_file(&e, "started", 3000));
	/* The claim took the new lease. */
	struct store *s = open_store(&e);
	struct store_job job;
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	store_close(s);
	assert_int_equal(job.state, JOB_ACTIVE);
	assert_true(job.lease_expires_ms - now_ms() > 30000);
	/* The stop takes the new grace: the 1 s task finishes. */
	kill(pid, SIGTERM);
	int st = wait_exit(pid, 5000);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	s = open_store(&e);
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	store_close(s);
	assert_int_equal(job.state, JOB_DONE);
	assert_int_equal(ledger_count(&e, "long", LEDGER_RELEASED), 0);
	assert_int_equal(fake_http_count(e.srv, "/hook"), 1);
	assert_true(log_has(&e, "event=stopping grace_ms=3000"));
	env_dispose(&e);
}

static void sighup_store_change_not_applied(void **state)
{
	struct env e;
	char old_url[600];
	(void)state;
	env_init(&e);
	write_cfg(&e, W_FAST, one_sched);
	pid_t pid = start_daemon(&e, NULL);
	wait_started(&e, 1); /* its SIGHUP handling is in place */
	/* A new store and a new schedule: the schedule applies, the store
	 * does not (one warning naming it). */
	snprintf(old_url, sizeof(old_url), "%s", e.store_url);
	snprintf(e.store_url, sizeof(e.store_url), "sqlite:%s/other.db",
		 e.dir);
	reload_to(&e, pid, W_FAST,
		  "  second:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo second\"}\n", 1);
	assert_int_equal(log_count(&e, "setting=store"), 1);
	assert_true(log_has(&e, "restart surecron to use it"));
	assert_true(log_has(&e, "level=warn"));
	assert_false(file_exists(&e, "other.db"));
	/* The daemon still works on the old database. */
	snprintf(e.store_url, sizeof(e.store_url), "%s", old_url);
	trigger(&e, "second", now_ms() / 1000 * 1000);
	assert_true(wait_hooks(&e, 1, 3000));
	struct fake_request r;
	assert_true(fake_http_request(e.srv, "/hook", 0, &r));
	assert_non_null(strstr(r.body, "second"));
	fake_request_dispose(&r);
	stop_daemon(pid);
	assert_int_equal(ledger_count(&e, "second", LEDGER_SUCCESS), 1);
	assert_false(file_exists(&e, "other.db"));
	env_dispose(&e);
}

/* ---- (7) a trigger from another process starts within a second -------- */

static void trigger_starts_within_a_second(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_cfg(&e, W_FAST,
		  "  manual:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"touch started; echo hi\"}\n");
	pid_t pid = start_daemon(&e, NULL);
	wait_started(&e, 1); /* then idle until next year's slot */
	/* `surecron trigger`, a separate process writing to the store. */
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' trigger --config '%s' "
		 "manual >/dev/null 2>&1", e.dir, tu_bin(), e.cfg);
	int64_t t0 = now_ms();
	assert_int_equal(system(cmd), 0);
	assert_true(wait_file(&e, "started", PATIENCE_MS));
	int64_t took = now_ms() - t0;
	assert_true(wait_hooks(&e, 1, PATIENCE_MS));
	stop_daemon(pid);
	/* The daemon's own measure: from the job's due instant (the
	 * trigger's "now", in its transaction) to the task's exec. The
	 * wall time above also holds the trigger command's own start-up
	 * and exit and this test's polling, which a loaded machine (and
	 * ASan) stretch; printed, not bounded. */
	long long late_us = log_field(&e, "event=finish schedule=manual",
				      "task_late_us=");
	printf("trigger to task start: %lld ms (daemon: %lld us)\n",
	       (long long)took, late_us);
	assert_true(late_us >= 0 && late_us < 1000000);
	env_dispose(&e);
}

/* ---- (8b) claimed ahead, started on time ------------------------------ */

/* Workers claim a job a few milliseconds before it is due; no task may
 * start before its slot's instant because of that. Each run of a
 * per-second schedule prints its own start time, which must not precede
 * the slot it was delivered for; and the run is handed over ahead
 * (event=start before the slot), its program started at the instant by
 * its reaper. */
static void never_starts_before_due(void **state)
{
	struct env e;
	char p[512], line[4096];
	size_t n = 0;
	(void)state;
	env_init(&e);
	write_cfg(&e, W_FAST,
		  "  persec:\n"
		  "    cron: \"* * * * * *\"\n"
		  "    tz: UTC\n"
		  "    catchup: none\n"
		  "    targets: [archive]\n"
		  "    tasks:\n"
		  "      - {name: t, command: [\"/bin/date\", \"+%s%N\"]}\n");
	pid_t pid = start_daemon(&e, NULL);
	int64_t end = now_ms() + PATIENCE_MS;
	while (count_lines(&e, "deliveries.jsonl") < 4 && now_ms() < end)
		sleep_ms(50);
	stop_daemon(pid);
	snprintf(p, sizeof(p), "%s/deliveries.jsonl", e.dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		json_t *m = json_loads(line, 0, NULL);
		assert_non_null(m);
		int64_t slot = 0;
		assert_int_equal(clock_parse_iso(json_string_value(json_object_get(
						 m, "slot")),
					 &slot, NULL),
				 0);
		const char *sum = json_string_value(json_object_get(m, "summary"));
		assert_non_null(sum);
		long long started_ns = atoll(sum);
		assert_true(started_ns >= slot * 1000000);
		json_decref(m);
		n++;
	}
	fclose(f);
	assert_true(n >= 4);
	/* And the start was prepared ahead: a worker claims a job up to
	 * CLAIM_AHEAD_MS before it is due and hands the run over then
	 * (its store reads, the first task to a reaper that starts it at
	 * the instant), so its event=start comes before the slot
	 * (late_us < 0), not after a sleep until it. One of the runs is
	 * enough: a loaded machine may wake a worker late. */
	assert_true(log_count_negative_late(&e, "event=start schedule=persec")
		    > 0);
	env_dispose(&e);
}

/* ---- (9) --once: what is due now, then exit -------------------------- */

static int run_once(const struct env *e)
{
	char cmd[1400];

	snprintf(cmd, sizeof(cmd), "cd '%s' && SURECRON_LOG=warn '%s' run "
		 "--once --config '%s' 2>>'%s/once.log' </dev/null >/dev/null",
		 e->dir, tu_bin(), e->cfg, e->dir);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void once_runs_what_is_due(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_cfg(&e, W_FAST,
		  "  good:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo good\"}\n"
		  "  bad:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    retry: {attempts: 2, backoff: fixed, delay: 1h}\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo quota >&2; exit 75\"}\n");
	assert_int_equal(run_once(&e), 0); /* nothing due: fine */
	assert_int_equal(fake_http_count(e.srv, "/hook"), 0);
	trigger(&e, "good", now_ms() / 1000 * 1000);
	assert_int_equal(run_once(&e), 0);
	assert_int_equal(fake_http_count(e.srv, "/hook"), 1);
	assert_int_equal(ledger_count(&e, "good", LEDGER_SUCCESS), 1);
	/* A failed run: exit 1, the retry (an hour away) is left alone. */
	int64_t id = trigger(&e, "bad", now_ms() / 1000 * 1000);
	assert_int_equal(run_once(&e), 1);
	assert_int_equal(ledger_count(&e, "bad", LEDGER_FAILED), 1);
	struct store *s = open_store(&e);
	struct store_job job;
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	assert_int_equal(job.state, JOB_READY);
	assert_true(job.run_at_ms > now_ms() + 3000000);
	store_close(s);
	assert_int_equal(run_once(&e), 0); /* nothing due again */
	env_dispose(&e);
}

/* Issue 43: a node whose config lacks a schedule (a rolling deploy that
 * adds it: this node still runs the old config) never claims its jobs,
 * which wait, READY and never attempted, for a node that has it: not
 * `lost` as "not in the configuration". Through the binary, as the
 * daemon claims. */
static void issue43_unknown_schedule_waits(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_cfg(&e, W_FAST,
		  "  good:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo good\"}\n");
	int64_t now = now_ms() / 1000 * 1000;
	/* The newer node's schedule, queued before this node's own. */
	int64_t id = trigger(&e, "added-elsewhere", now - 1000);
	trigger(&e, "good", now);
	assert_int_equal(run_once(&e), 0);
	assert_int_equal(ledger_count(&e, "good", LEDGER_SUCCESS), 1);
	assert_int_equal(ledger_count(&e, "added-elsewhere", LEDGER_LOST), 0);
	struct store *s = open_store(&e);
	struct store_job job;
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	assert_int_equal(job.state, JOB_READY);
	assert_int_equal(job.attempts, 0);
	store_close(s);
	/* status says where it is and why it waits. */
	static char out[16384], err[4096];
	const char *st[] = {"status", "--config", e.cfg, NULL};
	assert_int_equal(tu_run_bin(e.dir, e.dir, NULL, st, out, sizeof(out),
				    err, sizeof(err)), 0);
	assert_non_null(strstr(out, "schedules not in the config\n  jobs     "
				    "1 waiting, 0 delayed, 0 running, 0 dead\n"
				    "  note     a node claims only the "
				    "schedules of its config"));
	/* The node that has it runs it. */
	write_cfg(&e, W_FAST,
		  "  added-elsewhere:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo added\"}\n");
	assert_int_equal(run_once(&e), 0);
	assert_int_equal(ledger_count(&e, "added-elsewhere", LEDGER_SUCCESS),
			 1);
	env_dispose(&e);
}

/*
 * Issue 43: a job of a schedule no node has waits (never lost to config
 * skew), and is not silent: past worker.skew_grace this node raises a
 * skew alert naming the schedule; a reload that adds the schedule runs the
 * job, and the alert closes with its recovered row. On the code before
 * the skew alert the job waited with no word.
 */
static void issue43_skew_alerted_after_grace(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_cfg(&e, "{concurrency: 1, lease: 2s, grace: 1s, skew_grace: 1s}",
		  "  good:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo good\"}\n");
	int64_t id = trigger(&e, "added-elsewhere", now_ms() / 1000 * 1000);
	pid_t pid = start_daemon(&e, NULL);
	assert_true(wait_log(&e, "event=skew state=begin "
			     "name=skew:added-elsewhere", 1, 15000));
	struct store *s = open_store(&e);
	struct store_job job;
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	assert_int_equal(job.state, JOB_READY);
	assert_int_equal(job.attempts, 0);
	store_close(s);
	assert_int_equal(ledger_count(&e, "added-elsewhere", LEDGER_LOST), 0);
	/* One alert, however many passes saw it. */
	assert_int_equal(log_count(&e, "event=skew state=begin"), 1);
	write_cfg(&e, "{concurrency: 1, lease: 2s, grace: 1s, skew_grace: 1s}",
		  "  added-elsewhere:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo added\"}\n");
	kill(pid, SIGHUP);
	assert_true(wait_log(&e, "event=skew state=end "
			     "name=skew:added-elsewhere", 1, 15000));
	assert_int_equal(ledger_count(&e, "added-elsewhere", LEDGER_SUCCESS),
			 1);
	assert_int_equal(ledger_count(&e, "skew:added-elsewhere",
				      LEDGER_RECOVERED), 1);
	stop_daemon(pid);
	env_dispose(&e);
}

/*
 * A job claimed as the stop begins is given back unstarted, not run to
 * its end past the grace: the claim is held (failpoint) until SIGTERM
 * has come, then let go; the task would run 30 s. Before, the stop,
 * which waits only for the runs it counted, joined the worker while it
 * ran the whole task.
 */
static void claim_at_stop_is_released_unstarted(void **state)
{
	struct env e;
	char stall[600], fp_env[640];
	(void)state;
	TU_NEED_TEST_SEAMS();
	env_init(&e);
	snprintf(stall, sizeof(stall), "%s/stall", e.dir);
	snprintf(fp_env, sizeof(fp_env), "SURECRON_FAILPOINT_STALL=%s", stall);
	FILE *f = fopen(stall, "w");
	assert_non_null(f);
	fclose(f);
	write_cfg(&e, "{concurrency: 1, lease: 60s, grace: 300ms}",
		  "  long:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"touch ran; sleep 30\"}\n");
	const char *envs[] = {"SURECRON_FAILPOINTS=daemon.before_start:stall",
			      fp_env, NULL};
	pid_t pid = start_daemon(&e, envs);
	int64_t id = trigger(&e, "long", now_ms() / 1000 * 1000);
	assert_true(wait_file(&e, "stall.hit", PATIENCE_MS));
	kill(pid, SIGTERM);
	assert_true(wait_log(&e, "event=stopping", 1, PATIENCE_MS));
	int64_t t0 = now_ms();
	assert_int_equal(unlink(stall), 0);
	int st = wait_exit(pid, PATIENCE_MS);
	int64_t took = now_ms() - t0;
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(took < 5000);
	assert_false(file_exists(&e, "ran"));
	assert_int_equal(ledger_count(&e, "long", LEDGER_RELEASED), 1);
	struct store *s = open_store(&e);
	struct store_job job;
	assert_int_equal(store_job_get(s, id, &job, NULL), 0);
	assert_int_equal(job.state, JOB_READY);
	assert_int_equal(job.attempts, 0);
	store_close(s);
	env_dispose(&e);
}

/* ---- issue 11 item 8: helpers that leave the task's group ------------ */

/* Writes dir/helpers.sh: a task that starts a `setsid sleep` helper and a
 * double-forked one (a shell in a new session starts sleep and exits),
 * waits until both run, touches `started`, then runs tail. */
static void write_helpers_script(const struct env *e, const char *tail)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/helpers.sh", e->dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "setsid sleep 317.1 &\n"
		   "echo $! > h1.pid\n"
		   "setsid sh -c 'sleep 317.2 & echo $! > h2.tmp; "
		   "mv h2.tmp h2.pid' > /dev/null 2>&1 &\n"
		   "h1=$(cat h1.pid)\n"
		   "until tr '\\0' ' ' < /proc/$h1/cmdline 2>/dev/null | "
		   "grep -q 317.1; do sleep 0.01; done\n"
		   "until [ -s h2.pid ]; do sleep 0.01; done\n"
		   "touch started\n%s\n", tail);
	fclose(f);
}

static pid_t pid_in(const struct env *e, const char *name)
{
	char p[512];
	long pid = 0;

	snprintf(p, sizeof(p), "%s/%s", e->dir, name);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	return (pid_t)pid;
}

/* Polls until both helpers are gone (tu_helpers_gone). */
static bool helpers_gone(const struct env *e)
{
	return tu_helpers_gone(pid_in(e, "h1.pid"), "317.1",
			       pid_in(e, "h2.pid"), "317.2", "daemon");
}

/* docs/tasks.md: helpers never outlive the task, also when the daemon is
 * stopped while the task runs (grace over: the run is released). */
static void escaped_helpers_end_with_daemon_stop(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_helpers_script(&e, "sleep 30");
	write_cfg(&e, "{concurrency: 1, lease: 5s, grace: 300ms}",
		  "  long:\n"
		  "    cron: \"0 3 * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"sh ./helpers.sh\"}\n");
	pid_t pid = start_daemon(&e, NULL);
	trigger(&e, "long", now_ms() / 1000 * 1000);
	assert_true(wait_file(&e, "started", PATIENCE_MS));
	kill(pid, SIGTERM);
	int st = wait_exit(pid, PATIENCE_MS);
	bool gone = helpers_gone(&e);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(gone);
	assert_int_equal(ledger_count(&e, "long", LEDGER_RELEASED), 1);
	env_dispose(&e);
}

/* The same through `run --once`, where the task ends by itself. */
static void escaped_helpers_end_with_run_once(void **state)
{
	struct env e;
	(void)state;
	env_init(&e);
	write_helpers_script(&e, "echo report");
	write_cfg(&e, W_FAST,
		  "  good:\n"
		  "    cron: \"0 3 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"sh ./helpers.sh\"}\n");
	trigger(&e, "good", now_ms() / 1000 * 1000);
	int rc = run_once(&e);
	bool gone = helpers_gone(&e);
	assert_int_equal(rc, 0);
	assert_true(gone);
	assert_int_equal(fake_http_count(e.srv, "/hook"), 1);
	env_dispose(&e);
}

/* ---- (8) PostgreSQL: two daemons, one database ------------------------ */

static void two_daemons_pg(void **state)
{
	struct env e;
	(void)state;
	PGFX_NEED_SERVER();
	env_init(&e);
	snprintf(e.store_url, sizeof(e.store_url), "%s", pgfx_url());
	write_cfg(&e, "{concurrency: 2, lease: 5s, grace: 1s}",
		  "  persec:\n"
		  "    cron: \"* * * * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo \\\"$SURECRON_SLOT\\\"\"}\n");
	int64_t t0 = now_ms();
	pid_t a = start_daemon(&e, NULL);
	pid_t b = start_daemon(&e, NULL);
	/* Seven slots delivered (about 7 s; more on a loaded machine),
	 * then stop both: never more messages than seconds went by. */
	bool got = wait_hooks(&e, 7, 60000);
	stop_daemon(a);
	stop_daemon(b);
	int64_t t1 = now_ms();
	assert_true(got);

	size_t n = fake_http_count(e.srv, "/hook");
	printf("two daemons: %zu slots in %lld ms\n", n, (long long)(t1 - t0));
	assert_true(n >= 7 && n <= (size_t)((t1 - t0) / 1000 + 1));
	/* Each slot's message exactly once. */
	char **bodies = calloc(n, sizeof(*bodies));
	assert_non_null(bodies);
	for (size_t i = 0; i < n; i++) {
		struct fake_request r;
		assert_true(fake_http_request(e.srv, "/hook", (long)i, &r));
		bodies[i] = strdup(r.body);
		fake_request_dispose(&r);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(bodies[i], bodies[j]);
	}
	for (size_t i = 0; i < n; i++)
		free(bodies[i]);
	free(bodies);
	assert_int_equal(ledger_count(&e, "persec", LEDGER_SUCCESS), n);
	assert_int_equal(ledger_count(&e, "persec", LEDGER_FAILED), 0);
	env_dispose(&e);
}

/* `surecron status --json` (every schedule) with config cfg: the root
 * object, or NULL when it failed. */
static json_t *status_json(const struct env *e, const char *cfg)
{
	static char out[65536], err[8192];
	const char *args[] = {"status", "--json", "--config", cfg, NULL};
	int rc = tu_run_bin(e->dir, e->dir, NULL, args, out, sizeof(out), err,
			    sizeof(err));

	return rc == 0 ? json_loads(out, 0, NULL) : NULL;
}

/* Issue 43: each daemon publishes itself in the store (id, host, pid,
 * version, config digest, started, last seen), and `status` shows the
 * live nodes and which of them run another config: two daemons on
 * PostgreSQL, the second with one schedule more (a rolling deploy). */
static void issue43_nodes_published_pg(void **state)
{
	struct env e, e2;
	(void)state;
	PGFX_NEED_SERVER();
	env_init(&e);
	snprintf(e.store_url, sizeof(e.store_url), "%s", pgfx_url());
	static const char one[] =
		"  s1:\n"
		"    cron: \"0 3 1 1 *\"\n"
		"    tz: UTC\n"
		"    targets: [hook]\n"
		"    tasks:\n"
		"      - {name: t, shell: \"echo s1\"}\n";
	char two[1024];
	snprintf(two, sizeof(two), "%s  s2:\n    renamed_from: [s0]\n"
		 "    cron: \"0 4 1 1 *\"\n    tz: UTC\n"
		 "    targets: [hook]\n    tasks:\n"
		 "      - {name: t, shell: \"echo s2\"}\n", one);
	write_cfg(&e, W_FAST, one);
	e2 = e;
	snprintf(e2.cfg, sizeof(e2.cfg), "%s/newer.yaml", e.dir);
	write_cfg(&e2, W_FAST, two);
	pid_t a = start_daemon(&e, NULL);
	pid_t b = start_daemon(&e2, NULL);
	json_t *st = NULL, *live = NULL;
	int64_t end = now_ms() + PATIENCE_MS;
	for (;;) {
		json_decref(st);
		st = status_json(&e, e.cfg);
		live = st ? json_object_get(json_object_get(st, "nodes"),
					   "live") : NULL;
		if (json_array_size(live) == 2 || now_ms() > end)
			break;
		sleep_ms(100);
	}
	assert_int_equal(json_array_size(live), 2);
	size_t same = 0;
	for (size_t i = 0; i < 2; i++) {
		json_t *x = json_array_get(live, i);
		json_int_t pid = json_integer_value(json_object_get(x, "pid"));
		assert_true(pid == a || pid == b);
		assert_true(json_is_true(json_object_get(x, "same_config")) ==
			    (pid == a));
		same += json_is_true(json_object_get(x, "same_config"));
		assert_int_equal(strlen(json_string_value(
					 json_object_get(x, "config_digest"))),
				 16);
		assert_true(json_integer_value(json_object_get(
				    x, "last_seen_ms")) >=
			    json_integer_value(json_object_get(x,
							       "started_ms")));
	}
	assert_int_equal(same, 1);
	json_decref(st);
	/* The other daemon's view: the same two, its own config marked. */
	st = status_json(&e2, e2.cfg);
	assert_non_null(st);
	live = json_object_get(json_object_get(st, "nodes"), "live");
	assert_int_equal(json_array_size(live), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *x = json_array_get(live, i);
		json_int_t pid = json_integer_value(json_object_get(x, "pid"));
		assert_true(json_is_true(json_object_get(x, "same_config")) ==
			    (pid == b));
	}
	json_decref(st);
	stop_daemon(a);
	stop_daemon(b);
	env_dispose(&e);
}

/* ---- (10) PostgreSQL restarted under a running daemon ------------------ */

static void pg_restart(void **state)
{
	struct env e;
	(void)state;
	PGFX_NEED_SERVER();
	if (!pgfx_restartable())
		skip(); /* an external server: not ours to restart */
	env_init(&e);
	snprintf(e.store_url, sizeof(e.store_url), "%s", pgfx_url());
	write_cfg(&e, "{concurrency: 1, lease: 5s, grace: 1s}",
		  "  persec:\n"
		  "    cron: \"* * * * * *\"\n"
		  "    tz: UTC\n"
		  "    targets: [hook]\n"
		  "    tasks:\n"
		  "      - {name: t, shell: \"echo \\\"$SURECRON_SLOT\\\"\"}\n");
	pid_t pid = start_daemon(&e, NULL);
	assert_true(wait_hooks(&e, 2, PATIENCE_MS));
	assert_int_equal(pgfx_server("stop", NULL, 0), 0);
	sleep_ms(1500);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still running */
	assert_int_equal(pgfx_server("start", NULL, 0), 0);
	size_t before = fake_http_count(e.srv, "/hook");
	/* It reconnects by itself and catches up the slots of the outage. */
	assert_true(wait_hooks(&e, before + 3, 30000));
	/* A slot's success row follows its send; on a loaded machine the
	 * last ones may still be finishing when the hooks are in. */
	int64_t end = tu_now_ms() + 30000;
	while (ledger_count(&e, "persec", LEDGER_SUCCESS) < 5) {
		assert_true(tu_now_ms() < end);
		sleep_ms(50);
	}
	kill(pid, SIGTERM);
	int st = wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* The receiver logs a request before it answers, and the daemon
	 * exits once its sends are answered: every send is counted now. */
	size_t n = fake_http_count(e.srv, "/hook");
	char **bodies = calloc(n, sizeof(*bodies));
	assert_non_null(bodies);
	for (size_t i = 0; i < n; i++) {
		struct fake_request r;
		assert_true(fake_http_request(e.srv, "/hook", (long)i, &r));
		bodies[i] = strdup(r.body);
		fake_request_dispose(&r);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(bodies[i], bodies[j]);
	}
	for (size_t i = 0; i < n; i++)
		free(bodies[i]);
	free(bodies);
	/* No slot lost: the successful slots are consecutive seconds. */
	struct store *s = open_store(&e);
	int64_t lo, hi;
	size_t nr = tu_success_span(s, "persec", &lo, &hi);
	assert_true(nr >= 5);
	assert_int_equal((size_t)((hi - lo) / 1000 + 1), nr);
	store_close(s);
	env_dispose(&e);
}

/* ---- the offset clock (the test seam) --------------------------------- */

static void offset_clock(void **state)
{
	(void)state;
	struct sc_clock *c = sc_clock_offset_new(-86400000);
	assert_non_null(c);
	assert_false(sc_clock_is_virtual(c));
	/* Between two real readings taken around it, however long the
	 * machine takes between them. */
	int64_t real = now_ms();
	int64_t off = sc_clock_now_ms(c);
	int64_t real2 = now_ms();
	assert_true(off >= real - 86400000 && off <= real2 - 86400000);
	sleep_ms(30);
	assert_true(sc_clock_now_ms(c) - off >= 30); /* real speed */
	assert_true(clock_now_ns(c) / 1000000 - sc_clock_now_ms(c) <= 1);
	sc_clock_set_ms(c, 0); /* no-op: not virtual */
	assert_true(sc_clock_now_ms(c) > 0);
	sc_clock_free(c);
}

/* ---- the runner's own exhaustion (issue 42) ---------------------------- */

#define EMFILE_SLOTS 24

/* The runner alerts of the store: *n_open OPEN ones, *n_healed HEALED;
 * the name and slot of the last one into name and *slot_ms (NULL: not
 * wanted). */
static void runner_alerts_of(const char *url, size_t *n_open,
			     size_t *n_healed, char *name, size_t n_name,
			     int64_t *slot_ms)
{
	struct store *s = tu_store_open(url);
	struct alert_filter f = {.slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				 .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;

	assert_int_equal(store_alert_list(s, &f, &v, &n, NULL), 0);
	*n_open = *n_healed = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i].reason, "runner") != 0)
			continue;
		assert_int_equal(strncmp(v[i].schedule, "runner:", 7), 0);
		*n_open += v[i].status == ALERT_OPEN;
		*n_healed += v[i].status == ALERT_HEALED;
		if (name)
			snprintf(name, n_name, "%s", v[i].schedule);
		if (slot_ms)
			*slot_ms = v[i].slot_ms;
	}
	sc_free(v);
	store_close(s);
}

static void runner_alerts(const char *url, size_t *n_open, size_t *n_healed)
{
	runner_alerts_of(url, n_open, n_healed, NULL, 0, NULL);
}

/* The ledger rows of outcome whose error class is cls (NULL: any). */
static size_t rows_of(const char *url, const char *outcome, const char *cls)
{
	struct store *s = tu_store_open(url);
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		k += !cls || strcmp(rows[i].error_class, cls) == 0;
	store_ledger_rows_free(rows, n);
	store_close(s);
	return k;
}

/* Runs that pass again close the runner alert: one slot of s0 after
 * another (done successes so far) until the exhaustion is over. */
static void runner_alert_closes(const struct env *e, size_t done, int64_t end)
{
	static const struct sc_retry_policy pol = {2, SC_BACKOFF_FIXED, 60000};
	int64_t slot = INT64_C(1772784000000) + 400 * 86400000LL;
	size_t open = 0, healed = 0;

	runner_alerts(e->store_url, &open, &healed);
	while (healed == 0 && now_ms() < end) {
		struct store *s = tu_store_open(e->store_url);
		int64_t id = 0;
		assert_int_equal(queue_trigger(s, "s0", slot, &pol, &id, NULL,
					       NULL), 0);
		store_close(s);
		size_t want = ++done;
		while (rows_of(e->store_url, LEDGER_SUCCESS, NULL) < want &&
		       now_ms() < end)
			sleep_ms(50);
		runner_alerts(e->store_url, &open, &healed);
		slot += 86400000LL;
	}
	assert_int_equal(open, 0);
	assert_int_equal(healed, 1);
	assert_true(tu_log_count(e->dir, "event=runner_exhausted state=end")
		    == 1);
}

/*
 * An exhaustion whose only give-back meets a store refusing the runner
 * alert (the exhaustion reaching the store too): the raise is tried again
 * at the worker's next turn, so the alert is open although no give-back
 * follows (the slot succeeds at its next attempt).
 */
static void runner_alert_after_store_refused(void **state)
{
	struct env e;
	size_t open = 0, healed = 0;
	(void)state;
	TU_NEED_TEST_SEAMS();
	env_init(&e);
	write_cfg(&e, "{concurrency: 1, lease: 30s, grace: 1s}",
		  "  nightly:\n"
		  "    cron: \"0 0 1 1 *\"\n"
		  "    tz: UTC\n"
		  "    targets: [archive]\n"
		  "    tasks: [{name: t, shell: \"echo done\"}]\n");
	const char *envs[] = {"SURECRON_FAILPOINTS=worker.runner:err@1,"
			      "alert.raise_runner:err@1",
			      NULL};
	pid_t pid = start_daemon(&e, envs);
	wait_started(&e, 1);
	trigger(&e, "nightly", now_ms() / 1000 * 1000);
	assert_true(wait_ledger(&e, "nightly", LEDGER_SUCCESS, 1));
	int64_t end = now_ms() + PATIENCE_MS;
	do {
		runner_alerts(e.store_url, &open, &healed);
		if (open)
			break;
		sleep_ms(20);
	} while (now_ms() < end);
	stop_daemon(pid);
	assert_int_equal(open, 1);
	assert_int_equal(rows_of(e.store_url, LEDGER_RELEASED, "runner"), 1);
	assert_int_equal(tu_log_count(e.dir, "event=alert_deferred "
					     "reason=runner"), 1);
	env_dispose(&e);
}

/*
 * `ulimit -n 32` under load: four workers, 24 slots of four schedules at
 * once, each task a program. The runner runs out of descriptors (its
 * pipes, /dev/null): those attempts are the runner's, not the tasks':
 * each job goes back uncounted (a "released" row of class "runner"),
 * the worker holds, and a `runner` alert is open while it lasts. Every
 * slot is delivered in the end: none failed, none lost; once runs pass
 * again the alert is closed.
 */
static void runner_exhaustion_is_the_runners(void **state)
{
	struct env e;
	char sched[2048] = "";
	(void)state;

	env_init(&e);
	for (int i = 0; i < 4; i++)
		snprintf(sched + strlen(sched), sizeof(sched) - strlen(sched),
			 "  s%d:\n"
			 "    cron: \"0 0 1 1 *\"\n"
			 "    tz: UTC\n"
			 "    retry: {attempts: 2, backoff: fixed, delay: 60s}\n"
			 "    targets: [archive]\n"
			 "    tasks: [{name: t, shell: \"sleep 0.2; echo %d\"}]\n",
			 i, i);
	write_cfg(&e, "{concurrency: 4, lease: 30s, grace: 5s}", sched);
	const char *envs[] = {"SURECRON_LOG=debug", NULL};
	pid_t pid = tu_start_daemon(e.dir, e.cfg, envs, TU_FDS_32);
	if (n_pids < sizeof(pids) / sizeof(pids[0]))
		pids[n_pids++] = pid;
	assert_true(tu_wait_log(e.dir, "event=started", 1, 20000));
	static const struct sc_retry_policy pol = {2, SC_BACKOFF_FIXED, 60000};
	struct store *s = tu_store_open(e.store_url);
	for (int i = 0; i < EMFILE_SLOTS; i++) {
		char name[8];
		int64_t id = 0;
		snprintf(name, sizeof(name), "s%d", i % 4);
		assert_int_equal(queue_trigger(s, name,
					       INT64_C(1772784000000) +
						       (i / 4) * 86400000LL,
					       &pol, &id, NULL, NULL), 0);
	}
	store_close(s);
	/* Every slot delivered; on the way, the runner alert open. */
	int64_t end = now_ms() + 90000;
	size_t done = 0, open = 0, healed = 0, seen_open = 0;
	while (now_ms() < end) {
		done = rows_of(e.store_url, LEDGER_SUCCESS, NULL);
		runner_alerts(e.store_url, &open, &healed);
		seen_open += open > 0;
		if (done >= EMFILE_SLOTS)
			break;
		sleep_ms(50);
	}
	size_t given = rows_of(e.store_url, LEDGER_RELEASED, "runner");
	size_t failed = rows_of(e.store_url, LEDGER_FAILED, NULL);
	size_t lost = rows_of(e.store_url, LEDGER_LOST, NULL);
	print_message("ulimit -n 32: slots %d, delivered %zu, lost %zu, "
		      "attempts charged %zu, given back (runner) %zu, runner "
		      "alert seen open %s\n", EMFILE_SLOTS, done, lost, failed,
		      given, seen_open ? "yes" : "no");
	assert_int_equal(done, EMFILE_SLOTS);
	assert_int_equal(lost, 0);
	assert_int_equal(failed, 0);
	assert_true(given >= 1);   /* the limit was met */
	assert_true(seen_open > 0 || healed > 0);
	assert_true(tu_log_count(e.dir, "event=runner_exhausted state=begin")
		    >= 1);
	runner_alert_closes(&e, done, end);
	/* `surecron ack` knows the node's alert by its name (closed
	 * already: nothing left to acknowledge, but not an unknown
	 * schedule). */
	char name[STORE_NAME_MAX], iso[CLOCK_ISO_MAX], out[2048], err[2048];
	int64_t at = 0;
	runner_alerts_of(e.store_url, &open, &healed, name, sizeof(name), &at);
	const char *ack[] = {"ack", "--config", e.cfg, name,
			     clock_format_utc(at, iso), NULL};
	int arc = tu_run_bin(e.dir, e.dir, NULL, ack, out, sizeof(out), err,
			     sizeof(err));
	assert_int_equal(arc, 1);
	assert_null(strstr(err, "no schedule"));
	assert_non_null(strstr(err, name));
	stop_daemon(pid);
	assert_int_equal(rows_of(e.store_url, LEDGER_FAILED, NULL), 0);
	assert_int_equal(rows_of(e.store_url, LEDGER_LOST, NULL), 0);
	env_dispose(&e);
}

/*
 * An address-space limit under load (RLIMIT_AS): the daemon started with
 * one malloc arena and a padded heap (so that small allocations, the
 * store's among them, find room, and the big ones map memory the limit
 * refuses), then, once a first slot ran, its soft limit set to its size
 * while 24 slots of four schedules run four at a time,
 * each task's output 600 KB (the runner's buffers and messages): the
 * runner's allocations fail, not the tasks'. Each such attempt goes back
 * uncounted, a `runner` alert is open while it lasts; the limit lifted,
 * every slot is delivered promptly, none failed, none lost, none stalled
 * (a give-back whose store write fails is tried again), and the alert
 * closes. ASan and TSan reserve terabytes of shadow memory and cannot
 * run under RLIMIT_AS: skipped there.
 */
static void runner_address_space_limit(void **state)
{
	struct env e;
	char sched[2048] = "", p[300], line[256];
	(void)state;

	const char *san = getenv("SURECRON_SAN");
	if (san && *san) {
		print_message("skipped: a sanitizer build (%s) cannot run "
			      "under RLIMIT_AS\n", san);
		skip();
	}
	env_init(&e);
	for (int i = 0; i < 4; i++)
		snprintf(sched + strlen(sched), sizeof(sched) - strlen(sched),
			 "  s%d:\n"
			 "    cron: \"0 0 1 1 *\"\n"
			 "    tz: UTC\n"
			 "    retry: {attempts: 2, backoff: fixed, delay: 60s}\n"
			 "    targets: [archive]\n"
			 "    tasks: [{name: t, shell: \"head -c 600000 "
			 "/dev/zero | tr '\\\\0' a; sleep 0.2\"}]\n", i);
	write_cfg(&e, "{concurrency: 4, lease: 30s, grace: 5s}", sched);
	/* The limit reaches the store's writes by chance (a give-back's
	 * ledger row, once in a few runs here); the test point makes the
	 * second give-back's first write fail so, every run: before the fix
	 * that job sat ACTIVE for its lease and was recovered `stalled`. */
	const char *envs[] = {"SURECRON_LOG=info", "MALLOC_ARENA_MAX=1",
			      "MALLOC_TOP_PAD_=16777216",
			      "MALLOC_MMAP_THRESHOLD_=131072",
			      "SURECRON_FAILPOINTS=worker.give_back:err@2",
			      NULL};
	pid_t pid = tu_start_daemon(e.dir, e.cfg, envs, 0);
	if (n_pids < sizeof(pids) / sizeof(pids[0]))
		pids[n_pids++] = pid;
	assert_true(tu_wait_log(e.dir, "event=started", 1, 20000));
	/* One slot first, so that every thread and the task launcher are
	 * up when the size is read. */
	static const struct sc_retry_policy pol = {2, SC_BACKOFF_FIXED, 60000};
	struct store *s = tu_store_open(e.store_url);
	int64_t id = 0;
	assert_int_equal(queue_trigger(s, "s0", INT64_C(1772784000000) -
					   86400000LL, &pol, &id, NULL, NULL),
			 0);
	int64_t end = now_ms() + 20000;
	while (rows_of(e.store_url, LEDGER_SUCCESS, NULL) < 1 &&
	       now_ms() < end)
		sleep_ms(20);
	assert_int_equal(rows_of(e.store_url, LEDGER_SUCCESS, NULL), 1);
	long vm_kb = 0;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &vm_kb) == 1)
			break;
	fclose(f);
	assert_true(vm_kb > 0);
	struct rlimit was, lim;
	assert_int_equal(prlimit(pid, RLIMIT_AS, NULL, &was), 0);
	lim = was;
	lim.rlim_cur = (rlim_t)vm_kb * 1024;
	assert_int_equal(prlimit(pid, RLIMIT_AS, &lim, NULL), 0);

	for (int i = 0; i < EMFILE_SLOTS; i++) {
		char name[8];
		snprintf(name, sizeof(name), "s%d", i % 4);
		assert_int_equal(queue_trigger(s, name,
					       INT64_C(1772784000000) +
						       (i / 4) * 86400000LL,
					       &pol, &id, NULL, NULL), 0);
	}
	store_close(s);
	/* The limit lasts until the runner met it ten times and its alert
	 * is open (or 20 s): long enough for the store's own writes to meet
	 * it too (a give-back, a finish). */
	end = now_ms() + 20000;
	size_t open = 0, healed = 0, seen_open = 0, given = 0, done = 0;
	while (now_ms() < end) {
		given = rows_of(e.store_url, LEDGER_RELEASED, "runner");
		runner_alerts(e.store_url, &open, &healed);
		seen_open += open > 0;
		if ((given >= 10 && seen_open) ||
		    rows_of(e.store_url, LEDGER_SUCCESS, NULL) > EMFILE_SLOTS)
			break;
		sleep_ms(50);
	}
	lim.rlim_cur = was.rlim_cur;
	assert_int_equal(prlimit(pid, RLIMIT_AS, &lim, NULL), 0);
	int64_t lifted = now_ms();
	end = now_ms() + 90000;
	while (now_ms() < end) {
		done = rows_of(e.store_url, LEDGER_SUCCESS, NULL) - 1;
		if (done >= EMFILE_SLOTS)
			break;
		sleep_ms(50);
	}
	given = rows_of(e.store_url, LEDGER_RELEASED, "runner");
	size_t failed = rows_of(e.store_url, LEDGER_FAILED, NULL);
	size_t lost = rows_of(e.store_url, LEDGER_LOST, NULL);
	size_t stalled = rows_of(e.store_url, LEDGER_STALLED, NULL);
	print_message("RLIMIT_AS at its size (%ld kB): slots %d, delivered "
		      "%zu (%lld ms after the limit was lifted), lost %zu, "
		      "attempts charged %zu, stalled %zu, given back (runner) "
		      "%zu, runner alert seen open %s\n", vm_kb,
		      EMFILE_SLOTS, done, (long long)(now_ms() - lifted), lost,
		      failed, stalled, given, seen_open ? "yes" : "no");
	assert_int_equal(done, EMFILE_SLOTS);
	assert_int_equal(lost, 0);
	assert_int_equal(failed, 0);
	assert_int_equal(stalled, 0);
	assert_true(now_ms() - lifted < 20000); /* not after a lease */
	assert_true(given >= 1);   /* the limit was met */
	assert_true(seen_open > 0);
	runner_alert_closes(&e, done + 1, now_ms() + 60000);
	stop_daemon(pid);
	assert_int_equal(rows_of(e.store_url, LEDGER_FAILED, NULL), 0);
	assert_int_equal(rows_of(e.store_url, LEDGER_LOST, NULL), 0);
	env_dispose(&e);
}

static int pg_teardown(void **state)
{
	reap_all(state);
	return pgfx_teardown(state);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(offset_clock, reap_all),
		cmocka_unit_test_teardown(runner_exhaustion_is_the_runners,
					  reap_all),
		cmocka_unit_test_teardown(runner_alert_after_store_refused,
					  reap_all),
		cmocka_unit_test_teardown(runner_address_space_limit,
					  reap_all),
		cmocka_unit_test_teardown(quota_then_success, reap_all),
		cmocka_unit_test_teardown(kill9_mid_slot, reap_all),
		cmocka_unit_test_teardown(downtime_catchup_latest, reap_all),
		cmocka_unit_test_teardown(env_override_fires, reap_all),
		cmocka_unit_test_teardown(sigterm_grace, reap_all),
		cmocka_unit_test_teardown(sighup_reload, reap_all),
		cmocka_unit_test_teardown(sighup_raises_concurrency, reap_all),
		cmocka_unit_test_teardown(sighup_lowers_concurrency, reap_all),
		cmocka_unit_test_teardown(sighup_applies_lease_and_grace,
					  reap_all),
		cmocka_unit_test_teardown(sighup_store_change_not_applied,
					  reap_all),
		cmocka_unit_test_teardown(trigger_starts_within_a_second, reap_all),
		cmocka_unit_test_teardown(never_starts_before_due, reap_all),
		cmocka_unit_test_teardown(once_runs_what_is_due, reap_all),
		cmocka_unit_test_teardown(issue43_skew_alerted_after_grace,
					  reap_all),
		cmocka_unit_test_teardown(issue43_unknown_schedule_waits,
					  reap_all),
		cmocka_unit_test_teardown(claim_at_stop_is_released_unstarted,
					  reap_all),
		cmocka_unit_test_teardown(escaped_helpers_end_with_daemon_stop,
					  reap_all),
		cmocka_unit_test_teardown(escaped_helpers_end_with_run_once,
					  reap_all),
	};
	const struct CMUnitTest pg_tests[] = {
		cmocka_unit_test_setup_teardown(two_daemons_pg, pgfx_setup,
						pg_teardown),
		cmocka_unit_test_setup_teardown(pg_restart, pgfx_setup,
						pg_teardown),
		cmocka_unit_test_setup_teardown(issue43_nodes_published_pg,
						pgfx_setup, pg_teardown),
	};
	int rc = cmocka_run_group_tests_name("daemon", tests, NULL, NULL);
	rc += cmocka_run_group_tests_name("daemon_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
