/*
 * test_nodes_daemon_pg.c - two, then three real daemons (`surecron run`)
 * on one PostgreSQL database, 2,000 slots of a per-second schedule with a
 * webhook target (the fake receiver) and a file target (one JSON-lines
 * file shared by every node).
 *
 * 2,000 seconds of real time would take 33 minutes: the daemons run on a
 * fast clock (test seam: SURECRON_TEST_CLOCK, _RATE, _ANCHOR), the same
 * clock in every process, RATE times faster than real time; every timed
 * wait of the daemon shrinks by RATE, so leases, heartbeats and grace keep
 * their proportions.
 *
 * The run: A and B; then C joins; then B is SIGKILLed and started again;
 * every daemon is stopped with SIGTERM once 2,000 slots are done. B dies
 * while its webhook sends are in flight (the receiver holds them), so the
 * takeover after lease expiry and the declared resend are exercised on
 * every run, not by luck. Then:
 *   - every slot from the first to the last of the run has exactly one job,
 *     DONE, and exactly one `success` ledger row; nothing before it is left
 *     and at most a short tail after it (slots due at the stop);
 *   - each target got each slot's message exactly once: twice only when a
 *     `duplicate` ledger row declares it for that slot and target (a send
 *     in flight at the SIGKILL), counted and printed.
 *
 * rolling_deploy (issue 43), on the real clock: a config deploy over two
 * nodes, a schedule added, one removed and one cron changed on node A
 * first, with restarts; every slot delivered once, none lost, every
 * config skew alerted after worker.skew_grace and closed when the
 * configs agree (the test's own comment has the details).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "fakes/fake_http.h"
#include "pg_fixture.h"

#define N_SLOTS 2000
/* Clock seconds per real second: 50, or 20 under the sanitizers, whose
 * every task start (an instrumented reaper and shell) costs several
 * times more, so that two cores still keep up with the slots. */
#define RATE (rate())
#define TAIL_MAX 16      /* slots left undone or done past the range at stop */
/* Real time for the whole run: twice the slots' own time, plus 40 s
 * (120 s at the rate 50; the run normally takes ~45 s). */
#define RUN_LIMIT_MS ((int)(N_SLOTS * 1000 / RATE * 2 + 40000))
#define T0 "2030-01-01T00:00:00Z"

struct env {
	char dir[256];
	char cfg[512];
	char url[256];
	char anchor[64];
	struct fake_http *srv;
};

static pid_t pids[8];
static size_t n_pids;

static int64_t now_ms(void)
{
	return sc_clock_now_ms(sc_clock_real());
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int rate(void)
{
	const char *san = getenv("SURECRON_SAN");
	return san && *san ? 20 : 50;
}

static pid_t start_daemon(const struct env *e)
{
	char anchor[128], rate_env[64];

	snprintf(anchor, sizeof(anchor), "SURECRON_TEST_CLOCK_ANCHOR=%s",
		 e->anchor);
	snprintf(rate_env, sizeof(rate_env), "SURECRON_TEST_CLOCK_RATE=%d",
		 RATE);
	const char *envs[] = {"SURECRON_TEST_CLOCK=" T0, anchor, rate_env,
			      "SURECRON_LOG=warn", NULL};
	pid_t pid = tu_start_daemon(e->dir, e->cfg, envs, 0);
	if (n_pids < sizeof(pids) / sizeof(pids[0]))
		pids[n_pids++] = pid;
	return pid;
}

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

/* Waits for a daemon sent SIGTERM: it must end by itself, with status 0,
 * within 10 s (its grace is 0.6 s). */
static void wait_stopped(pid_t pid)
{
	int st = 0;

	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			assert_true(WIFEXITED(st));
			assert_int_equal(WEXITSTATUS(st), 0);
			return;
		}
		sleep_ms(10);
	}
	fail_msg("daemon %d did not stop within 10 s", (int)pid);
}

/* Stops every daemon at once: stopped one after the other, the last ones
 * would carry the whole schedule alone for as long as the first take to
 * stop, and on a loaded machine fall behind by more than the tail. */
static void stop_daemons(const pid_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kill(p[i], SIGTERM);
	for (size_t i = 0; i < n; i++)
		wait_stopped(p[i]);
}

static int64_t n_success(void)
{
	return pgfx_int("SELECT count(*) FROM ledger WHERE schedule = 'persec'"
			" AND outcome = 'success'");
}

/* Waits (real time) until n slots are done; fails after RUN_LIMIT_MS. */
static void wait_success(int64_t n, int64_t t_start)
{
	while (n_success() < n) {
		if (now_ms() - t_start > RUN_LIMIT_MS)
			fail_msg("only %lld of %lld slots done after %d ms",
				 (long long)n_success(), (long long)n,
				 RUN_LIMIT_MS);
		sleep_ms(100);
	}
}

/* How many slots from the first one on are all DONE: [first, hi], hi the
 * last slot before the first one not done. */
static long done_prefix(int64_t *first_out, int64_t *hi_out)
{
	char q[512];
	int64_t first = pgfx_int("SELECT min(slot_ms) FROM jobs WHERE "
				 "schedule = 'persec'");
	snprintf(q, sizeof(q),
		 "SELECT coalesce(min(slot_ms) - 1000, "
		 "(SELECT max(slot_ms) FROM jobs WHERE schedule = 'persec')) "
		 "FROM jobs WHERE schedule = 'persec' AND state <> %d",
		 (int)JOB_DONE);
	int64_t hi = pgfx_int(q);
	if (first_out)
		*first_out = first;
	if (hi_out)
		*hi_out = hi;
	return (long)((hi - first) / 1000 + 1);
}

/* Index of an ISO slot in [first, first + n s), else -1. */
static long slot_index(const char *iso, int64_t first, long n)
{
	int64_t ms = 0;

	if (!iso || clock_parse_iso(iso, &ms, NULL) != 0)
		return -1;
	if (ms < first || (ms - first) % 1000 != 0 ||
	    (ms - first) / 1000 >= n)
		return -1;
	return (long)((ms - first) / 1000);
}

/* The slot of a message body (our JSON), counted in cnt; false when the
 * body is not a message of the schedule in range. */
static bool count_body(const char *body, int64_t first, long n, int *cnt)
{
	json_t *o = json_loads(body, 0, NULL);
	const char *iso = o ? json_string_value(json_object_get(o, "slot"))
			    : NULL;
	long i = slot_index(iso, first, n);

	if (i >= 0)
		cnt[i]++;
	json_decref(o);
	return i >= 0;
}

static void nodes_daemons_exactly_once(void **state)
{
	struct env e;
	(void)state;
	PGFX_NEED_SERVER();

	memset(&e, 0, sizeof(e));
	snprintf(e.dir, sizeof(e.dir), "%s", tu_tmpdir());
	snprintf(e.cfg, sizeof(e.cfg), "%s/surecron.yaml", e.dir);
	e.srv = fake_http_start();
	assert_non_null(e.srv);
	fake_http_set_default(e.srv, "/hook", 200, NULL, "ok");
	fake_http_url(e.srv, "/hook", e.url, sizeof(e.url));
	setenv("NODES_HOOK_URL", e.url, 1);
	/* The clock reads T0 two real seconds from now, in every daemon. */
	char iso[CLOCK_ISO_MAX];
	int64_t anchor = (now_ms() / 1000 + 2) * 1000;
	snprintf(e.anchor, sizeof(e.anchor), "%s",
		 clock_format_utc(anchor, iso));

	FILE *f = fopen(e.cfg, "w");
	assert_non_null(f);
	/* Lease 5 min and grace 30 s of the fast clock: 6 s and 0.6 s real.
	 * catchup: all, because the fast clock turns any real stall into 50
	 * times as much schedule time: a 0.2 s stall of every daemon at once
	 * (a busy CI machine) is 10 s of clock, the scheduler's grace, and
	 * under the default `latest` the slots of those 10 s would rightly
	 * be recorded missed. With `all` they run late instead, as after any
	 * downtime, and every slot must still run exactly once. */
	fprintf(f, "store: %s\n"
		   "worker: {concurrency: 2, lease: 5m, grace: 30s}\n"
		   "targets:\n"
		   "  hook: {kind: webhook, url_env: NODES_HOOK_URL}\n"
		   "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		   "schedules:\n"
		   "  persec:\n"
		   "    cron: \"* * * * * *\"\n"
		   "    tz: UTC\n"
		   "    catchup: all\n"
		   /* Slots of the schedule run side by side, on every node:
		    * what is tested is exactly-once across nodes, at 50
		    * slots a second (issue 17's `queue`, one at a time, is
		    * test_overlap_daemon's). */
		   "    overlap: allow\n"
		   "    targets: [hook, archive]\n"
		   "    tasks:\n"
		   "      - {name: t, shell: \"echo \\\"$SURECRON_SLOT\\\"\"}\n",
		pgfx_url());
	fclose(f);

	/* The schema, before any daemon: the test reads it from the start. */
	struct store *st = NULL;
	assert_int_equal(store_open(pgfx_url(), sc_clock_real(), &st, NULL), 0);
	store_close(st);

	int64_t t_start = now_ms();
	pid_t a = start_daemon(&e);
	pid_t b = start_daemon(&e);
	wait_success(N_SLOTS * 3 / 10, t_start);
	pid_t c = start_daemon(&e);
	wait_success(N_SLOTS * 6 / 10, t_start);
	/* A kill while B holds jobs with a send in flight: the receiver
	 * holds every POST (logged on arrival) until each of the six
	 * workers waits on one; then B dies and the others go on. */
	size_t held0 = fake_http_count(e.srv, "/hook");
	fake_http_hold(e.srv, "/hook", true);
	assert_true(fake_http_wait(e.srv, "/hook", held0 + 6, 60000));
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	fake_http_hold(e.srv, "/hook", false);
	b = start_daemon(&e);
	wait_success(N_SLOTS + 2, t_start);
	/* The jobs B held are retried when their lease expires: wait for
	 * the first N_SLOTS slots to be done, not only for N_SLOTS successes
	 * (on a slow machine a retried one can still be due). */
	while (done_prefix(NULL, NULL) < N_SLOTS) {
		if (now_ms() - t_start > RUN_LIMIT_MS)
			fail_msg("only %ld consecutive slots done after %d ms",
				 done_prefix(NULL, NULL), RUN_LIMIT_MS);
		sleep_ms(100);
	}
	int64_t t_stop = now_ms();
	stop_daemons((pid_t[]){a, b, c}, 3);
	int64_t t_run = now_ms() - t_start;
	t_stop = now_ms() - t_stop;

	/* One job per slot (the unique key), and slots [first, hi] all DONE:
	 * hi is the last slot before the first one not done. */
	assert_int_equal(pgfx_int("SELECT count(*) - count(DISTINCT slot_ms) "
				  "FROM jobs WHERE schedule = 'persec'"), 0);
	int64_t first, hi;
	long n = done_prefix(&first, &hi);
	assert_int_equal(pgfx_int("SELECT state FROM jobs WHERE schedule = "
				  "'persec' ORDER BY slot_ms LIMIT 1"),
			 JOB_DONE);
	char q[512];
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM jobs WHERE schedule = 'persec' AND "
		 "slot_ms BETWEEN %lld AND %lld AND state = %d",
		 (long long)first, (long long)hi, (int)JOB_DONE);
	assert_int_equal(pgfx_int(q), n); /* consecutive seconds, none lost */
	assert_true(n >= N_SLOTS);
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM jobs WHERE schedule = 'persec' AND "
		 "slot_ms > %lld", (long long)hi);
	int64_t tail = pgfx_int(q);
	/* The slots that fell due while the three stopped (RATE a second:
	 * a loaded machine, another suite beside, makes the stop slower)
	 * come on top of the bound. */
	int64_t tail_max = TAIL_MAX + (int64_t)RATE * (t_stop + 999) / 1000;
	print_message("tail %lld (bound %lld, stop %lld ms)\n",
		      (long long)tail, (long long)tail_max, (long long)t_stop);
	assert_true(tail <= tail_max);

	/* Exactly one success row per slot of the range. */
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM (SELECT slot_ms FROM ledger WHERE "
		 "schedule = 'persec' AND outcome = 'success' AND slot_ms "
		 "BETWEEN %lld AND %lld GROUP BY slot_ms HAVING count(*) = 1) "
		 "x", (long long)first, (long long)hi);
	assert_int_equal(pgfx_int(q), n);
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM ledger WHERE schedule = 'persec' AND "
		 "outcome = 'success' AND slot_ms BETWEEN %lld AND %lld",
		 (long long)first, (long long)hi);
	assert_int_equal(pgfx_int(q), n);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE outcome "
				  "IN ('failed', 'lost', 'missed')"), 0);

	/* Declared duplicates, per target and slot. */
	int *dup_hook = calloc((size_t)n, sizeof(int));
	int *dup_file = calloc((size_t)n, sizeof(int));
	int *got_hook = calloc((size_t)n, sizeof(int));
	int *got_file = calloc((size_t)n, sizeof(int));
	assert_true(dup_hook && dup_file && got_hook && got_file);
	PGresult *r = pgfx_sql("SELECT slot_ms, details_json FROM ledger "
			       "WHERE outcome = 'duplicate'");
	int n_dup = PQntuples(r);
	int64_t n_stalled = pgfx_int("SELECT count(*) FROM ledger WHERE "
				     "outcome = 'stalled'");
	for (int i = 0; i < n_dup; i++) {
		int64_t s = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		const char *det = PQgetvalue(r, i, 1);
		if (s < first || s > hi)
			continue;
		long k = (long)((s - first) / 1000);
		if (strstr(det, "\"target\":\"hook\""))
			dup_hook[k]++;
		else if (strstr(det, "\"target\":\"archive\""))
			dup_file[k]++;
	}
	PQclear(r);

	/* The receiver: one POST per slot (twice only when declared). */
	size_t n_req = fake_http_count(e.srv, "/hook");
	for (size_t i = 0; i < n_req; i++) {
		struct fake_request rq;
		assert_true(fake_http_request(e.srv, "/hook", (long)i, &rq));
		count_body(rq.body, first, n, got_hook);
		fake_request_dispose(&rq);
	}
	/* The file: one line per slot (twice only when declared). */
	char path[600], *line = NULL;
	size_t cap = 0;
	snprintf(path, sizeof(path), "%s/deliveries.jsonl", e.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (getline(&line, &cap, f) > 0)
		count_body(line, first, n, got_file);
	free(line);
	fclose(f);

	/* B's jobs were taken over after their lease (a `stalled` row) and
	 * its sends in flight declared before they were sent again. */
	assert_true(n_stalled >= 1);
	assert_true(n_dup >= 1);

	int extra_hook = 0, extra_file = 0;
	for (long i = 0; i < n; i++) {
		if (got_hook[i] != 1 || got_file[i] != 1)
			fprintf(stderr, "slot %ld: hook %d (dup %d) file %d "
				"(dup %d)\n", i, got_hook[i], dup_hook[i],
				got_file[i], dup_file[i]);
		assert_true(got_hook[i] >= 1 &&
			    got_hook[i] <= 1 + dup_hook[i]);
		assert_true(got_file[i] >= 1 &&
			    got_file[i] <= 1 + dup_file[i]);
		extra_hook += got_hook[i] - 1;
		extra_file += got_file[i] - 1;
	}
	fprintf(stderr,
		"nodes_daemon_pg: slots=%ld run_ms=%lld rate=%d tail=%lld "
		"duplicates_declared=%d extra_copies hook=%d file=%d "
		"stalled=%lld posts=%zu\n", n, (long long)t_run, RATE,
		(long long)tail, n_dup, extra_hook, extra_file,
		(long long)n_stalled, n_req);
	free(dup_hook);
	free(dup_file);
	free(got_hook);
	free(got_file);
	fake_http_stop(e.srv);
	tu_rmrf(e.dir);
}

/* ---- a rolling deploy of a config over two nodes (issue 43) ------------- */

/*
 * Two daemons on the real clock, one PostgreSQL database, a webhook
 * target on a real HTTP receiver. The deploy changes three schedules at
 * once, and reaches node A first:
 *   - `added` is new (every 2 s, a task of 1.2 s),
 *   - `gone` is removed (every second),
 *   - `recron` changes its cron from even seconds to odd ones,
 *   - `busy` is new too, three slots triggered at once on A while B
 *     lacks it, run one after the other (a task of 1.5 s, `queue`): for
 *     3 s a slot of it is due and waits, for A, not for a config,
 * beside `keep` (every second), which both configs have. The steps are an
 * operator's: A restarted with the new config; A down for a while in the
 * middle of the deploy (stopped while a slot of `added` runs, which is
 * released and waits: B lacks `added`); A back; B restarted with the new
 * config. worker.skew_grace is 1 s. Then:
 *   - 0 lost, 0 failed, 0 missed: every job up to the stop is DONE, with
 *     one success row and one POST at the receiver (twice only when a
 *     `duplicate` row declares it);
 *   - `keep` ran every second; `gone` every second until B left the old
 *     config, never after; `added` every 2 s from A's first start on,
 *     also the slots due while A was down (catchup: all), with the
 *     released one run by A once back, never by B; `recron` ran the even
 *     seconds while B had the old config and the odd ones while A was up
 *     with the new one, and only odd seconds once both had it;
 *   - every skew was alerted (`skew::configs` while the live nodes'
 *     digests differed, `skew:added` while its released job waited with
 *     A down), each not before the grace and only once (one open alert
 *     per name, whichever node saw it); none for `busy`; every one is
 *     closed, with a
 *     `recovered` row, when the configs agree; `ledger --lost` says 0.
 */
#define ROLL_GRACE_MS 1000

static const char ROLL_HEAD[] =
	"store: %s\n"
	"worker: {concurrency: 3, lease: 5s, grace: 300ms, skew_grace: 1s}\n"
	"targets:\n"
	"  hook: {kind: webhook, url_env: ROLL_HOOK_URL}\n"
	"schedules:\n"
	"  keep:\n"
	"    cron: \"* * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: all\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"echo keep\"}\n";
static const char ROLL_V1[] =
	"  gone:\n"
	"    cron: \"* * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: all\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"echo gone\"}\n"
	"  recron:\n"
	"    cron: \"*/2 * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: all\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"echo even\"}\n";
static const char ROLL_V2[] =
	"  recron:\n"
	"    cron: \"1-59/2 * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: all\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"echo odd\"}\n"
	"  added:\n"
	"    cron: \"*/2 * * * * *\"\n"
	"    tz: UTC\n"
	"    catchup: all\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"sleep 1.2; echo added\"}\n"
	/* Triggered by hand, three slots at once, run one at a time
	 * (`queue`): due jobs that wait for the node at work, no skew. */
	"  busy:\n"
	"    cron: \"0 0 3 1 1 *\"\n"
	"    tz: UTC\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: t, shell: \"sleep 1.5; echo busy\"}\n";

static void roll_cfg(const char *dir, int version)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, ROLL_HEAD, pgfx_url());
	fputs(version == 1 ? ROLL_V1 : ROLL_V2, f);
	fclose(f);
}

/* A daemon on the real clock, in dir (its config and log there). */
static pid_t roll_start(const char *dir)
{
	char cfg[600];
	const char *envs[] = {"SURECRON_LOG=info", NULL};

	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", dir);
	pid_t pid = tu_start_daemon(dir, cfg, envs, 0);
	if (n_pids < sizeof(pids) / sizeof(pids[0]))
		pids[n_pids++] = pid;
	return pid;
}

static void roll_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	wait_stopped(pid);
}

/* Waits (real time, at most ms) until q answers at least want. */
static void roll_wait(const char *q, int64_t want, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (pgfx_int(q) < want) {
		if (now_ms() > end)
			fail_msg("%s: under %lld after %lld ms", q,
				 (long long)want, (long long)ms);
		sleep_ms(50);
	}
}

/* Waits until schedule has n more success rows than now. */
static void roll_more(const char *schedule, int64_t n)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(*) FROM ledger WHERE schedule = "
		 "'%s' AND outcome = 'success'", schedule);
	roll_wait(q, pgfx_int(q) + n, 15000);
}

/* The first odd second after from_ms with a job of recron (the new
 * cron's first slot on a node just started), -1 if none. */
static int64_t roll_first_odd(int64_t from_ms)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT min(slot_ms) FROM jobs WHERE schedule "
		 "= 'recron' AND slot_ms > %lld AND slot_ms %% 2000 = 1000",
		 (long long)from_ms);
	return pgfx_int(q);
}

/* Whether schedule has a job at slot_ms. */
static bool roll_has(const char *schedule, int64_t slot_ms)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE schedule = "
		 "'%s' AND slot_ms = %lld", schedule, (long long)slot_ms);
	return pgfx_int(q) == 1;
}

/* The first slot of schedule with a job. */
static int64_t roll_first(const char *schedule)
{
	char q[256];

	snprintf(q, sizeof(q), "SELECT min(slot_ms) FROM jobs WHERE schedule "
		 "= '%s'", schedule);
	return pgfx_int(q);
}

/* Every second step_s from..to (ms, from aligned to step_s) of schedule
 * has a job; fails naming the first that has none. */
static void roll_every(const char *schedule, int64_t from, int64_t to,
		       int step_s, int phase_s)
{
	int64_t t = (from + 999) / 1000 * 1000;

	while ((t / 1000) % step_s != phase_s)
		t += 1000;
	for (; t <= to; t += (int64_t)step_s * 1000)
		if (!roll_has(schedule, t))
			fail_msg("%s: no job for the slot %lld (from %lld to "
				 "%lld)", schedule, (long long)t,
				 (long long)from, (long long)to);
}

static void rolling_deploy(void **state)
{
	char dir[256], da[300], db[300], db2[300], url[256], q[512];
	(void)state;
	PGFX_NEED_SERVER();

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(da, sizeof(da), "%s/a", dir);
	snprintf(db, sizeof(db), "%s/b", dir);
	snprintf(db2, sizeof(db2), "%s/b2", dir); /* B on the new config */
	assert_int_equal(mkdir(da, 0700), 0);
	assert_int_equal(mkdir(db, 0700), 0);
	assert_int_equal(mkdir(db2, 0700), 0);
	struct fake_http *srv = fake_http_start();
	assert_non_null(srv);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	setenv("ROLL_HOOK_URL", fake_http_url(srv, "/hook", url, sizeof(url)),
	       1);
	roll_cfg(da, 1);
	roll_cfg(db, 1);
	struct store *st = NULL;
	assert_int_equal(store_open(pgfx_url(), sc_clock_real(), &st, NULL), 0);
	store_close(st);

	int64_t t0 = now_ms();
	pid_t a = roll_start(da);
	pid_t b = roll_start(db);
	roll_wait("SELECT count(*) FROM ledger WHERE schedule = 'keep' AND "
		  "outcome = 'success'", 3, 15000);

	/* 1. A restarted with the new config. */
	roll_stop(a);
	roll_cfg(da, 2);
	int64_t t_a2 = now_ms();
	a = roll_start(da);
	/* Raised by one node, whichever judges (the lowest id). */
	roll_wait("SELECT count(*) FROM alerts WHERE schedule = "
		  "'skew::configs' AND status = 0", 1, 15000);

	/* Three slots of `busy` at once (an operator's `trigger`): B lacks
	 * it, A runs them one at a time. */
	char cfg_a[600], slot_arg[CLOCK_ISO_MAX], o_buf[1024], e_buf[1024];
	snprintf(cfg_a, sizeof(cfg_a), "%s/surecron.yaml", da);
	for (int i = 3; i >= 1; i--) {
		const char *args[] = {"trigger", "--config", cfg_a, "--slot",
				      clock_format_utc(now_ms() / 1000 * 1000 -
						       i * 1000, slot_arg),
				      "busy", NULL};
		assert_int_equal(tu_run_bin(dir, da, NULL, args, o_buf,
					    sizeof(o_buf), e_buf,
					    sizeof(e_buf)), 0);
	}
	roll_wait("SELECT count(*) FROM ledger WHERE schedule = 'busy' AND "
		  "outcome = 'success'", 3, 15000);

	/* 2. A down in the middle of the deploy, while `added` runs: its
	 * slot is released and waits, B lacks the schedule. */
	size_t n_started = tu_log_count(da, "event=start schedule=added");
	assert_true(tu_wait_log(da, "event=start schedule=added",
				n_started + 1, 15000));
	int64_t t_a_down = now_ms();
	roll_stop(a);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE schedule "
				  "= 'added' AND outcome = 'released'"), 1);
	assert_true(tu_wait_log(db, "event=skew state=begin name=skew:added",
				1, 15000));
	int64_t t_a_up = now_ms();
	a = roll_start(da);
	assert_true(tu_wait_log(db, "event=skew state=end name=skew:added", 1,
				15000));

	/* 3. B restarted with the new config: the configs agree. */
	roll_more("keep", 2); /* both nodes up, configs apart */
	int64_t t_b_stop = now_ms();
	roll_stop(b);
	roll_cfg(db2, 2);
	int64_t t_b2 = now_ms();
	b = roll_start(db2);
	int64_t end = now_ms() + 15000;
	while (pgfx_int("SELECT count(*) FROM alerts WHERE reason = 'skew' "
			"AND status = 0") > 0) {
		if (now_ms() > end)
			fail_msg("a skew alert is still open 15 s after the "
				 "configs agreed");
		sleep_ms(50);
	}
	int64_t t_agree = now_ms();
	roll_more("recron", 2); /* slots of the new config on both nodes */

	/* Every job up to 1.5 s before the stop is done; then stop. */
	int64_t t_last = now_ms() / 1000 * 1000 - 1500;
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE slot_ms <= %lld"
		 " AND state = %d", (long long)t_last, (int)JOB_DONE);
	int64_t n_upto = 0;
	char qa[256];
	snprintf(qa, sizeof(qa), "SELECT count(*) FROM jobs WHERE slot_ms <= "
		 "%lld", (long long)t_last);
	n_upto = pgfx_int(qa);
	roll_wait(q, n_upto, 15000);
	stop_daemons((pid_t[]){a, b}, 2);
	int64_t t_run = now_ms() - t0;

	/* 0 lost, 0 failed, 0 missed, nothing dead. */
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE outcome "
				  "IN ('lost', 'failed', 'missed')"), 0);
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE state = %d",
		 (int)JOB_DEAD);
	assert_int_equal(pgfx_int(q), 0);
	/* One success row per done job, and no success without its job. */
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM jobs j WHERE state = %d AND (SELECT "
		 "count(*) FROM ledger l WHERE l.schedule = j.schedule AND "
		 "l.slot_ms = j.slot_ms AND l.outcome = 'success') <> 1",
		 (int)JOB_DONE);
	assert_int_equal(pgfx_int(q), 0);
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE state = %d",
		 (int)JOB_DONE);
	int64_t n_done = pgfx_int(q);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE outcome "
				  "= 'success'"), n_done);

	/* The receiver: one POST per success (twice only when declared),
	 * up to t_last (a send made as the stop released its job has its
	 * success row at the next start). */
	size_t n_req = fake_http_count(srv, "/hook"), n_req_upto = 0;
	for (size_t i = 0; i < n_req; i++) {
		struct fake_request rq;
		assert_true(fake_http_request(srv, "/hook", (long)i, &rq));
		json_t *o = json_loads(rq.body, 0, NULL);
		const char *sch = json_string_value(json_object_get(o,
								    "schedule"));
		const char *iso = json_string_value(json_object_get(o, "slot"));
		int64_t ms = 0;
		assert_non_null(sch);
		assert_non_null(iso);
		assert_int_equal(clock_parse_iso(iso, &ms, NULL), 0);
		snprintf(q, sizeof(q), "SELECT count(*) FROM ledger WHERE "
			 "schedule = '%s' AND slot_ms = %lld AND outcome = "
			 "'success'", sch, (long long)ms);
		if (ms <= t_last) {
			assert_int_equal(pgfx_int(q), 1);
			n_req_upto++;
		}
		json_decref(o);
		fake_request_dispose(&rq);
	}
	int64_t n_dup = pgfx_int("SELECT count(*) FROM ledger WHERE outcome = "
				 "'duplicate'");
	print_message("rolling deploy: %lld slots done, %zu POSTs, %lld "
		      "declared duplicates\n", (long long)n_done, n_req,
		      (long long)n_dup);
	assert_true((int64_t)n_req_upto >= n_upto);
	assert_true((int64_t)n_req_upto <= n_upto + n_dup);

	/* keep: every second. */
	int64_t first = roll_first("keep");
	roll_every("keep", first, t_last, 1, 0);
	/* gone: every second until B left the old config, never after. */
	first = roll_first("gone");
	roll_every("gone", first, t_b_stop - 1000, 1, 0);
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE schedule = "
		 "'gone' AND slot_ms > %lld", (long long)t_b2 + 1000);
	assert_int_equal(pgfx_int(q), 0);
	/* added: every 2 s from A's first start on, never before, the
	 * slots of A's downtime too; B ran none. */
	first = roll_first("added");
	assert_true(first >= t_a2 - 1000);
	roll_every("added", first, t_last, 2, 0);
	assert_int_equal(tu_log_count(db, "event=start schedule=added"), 0);
	/* recron: even seconds while B had the old config, odd ones while A
	 * ran the new one, only odd ones once both had it. */
	first = roll_first("recron");
	roll_every("recron", first, t_b_stop - 1000, 2, 0);
	first = roll_first_odd(t_a2);
	assert_true(first > 0 && first < t_a_down);
	roll_every("recron", first, t_a_down - 1000, 2, 1);
	first = roll_first_odd(t_a_up);
	assert_true(first > 0 && first < t_b_stop);
	roll_every("recron", first, t_last, 2, 1);
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE schedule = "
		 "'recron' AND slot_ms > %lld AND slot_ms %% 2000 = 0",
		 (long long)t_b2 + 1000);
	assert_int_equal(pgfx_int(q), 0);

	/* The skew alerts: both kinds, after the grace, one open per name at
	 * a time, every one closed with a recovered row. */
	PGresult *r = pgfx_sql("SELECT schedule, slot_ms, created_ms, "
			       "closed_ms, status FROM alerts WHERE reason = "
			       "'skew' ORDER BY created_ms");
	int n_al = PQntuples(r), n_cfg = 0, n_added = 0;
	for (int i = 0; i < n_al; i++) {
		const char *name = PQgetvalue(r, i, 0);
		int64_t since = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		int64_t made = strtoll(PQgetvalue(r, i, 2), NULL, 10);
		int64_t closed = strtoll(PQgetvalue(r, i, 3), NULL, 10);
		print_message("  %s since +%lld raised +%lld closed +%lld\n",
			      name, (long long)(since - t0),
			      (long long)(made - t0), (long long)(closed - t0));
		assert_true(made - since >= ROLL_GRACE_MS);
		assert_int_not_equal(atoi(PQgetvalue(r, i, 4)), 0);
		assert_true(closed >= made);
		if (strcmp(name, "skew::configs") == 0) {
			n_cfg++;
			assert_true(made >= t_a2 + ROLL_GRACE_MS);
			assert_true(closed <= t_agree);
		} else {
			/* Only while A, the one node with it, was down
			 * (never `busy`'s). */
			assert_string_equal(name, "skew:added");
			n_added++;
			assert_true(made >= t_a_down + ROLL_GRACE_MS);
			assert_true(closed >= t_a_up);
		}
		/* No other alert of its name open at the same time. */
		for (int j = 0; j < i; j++)
			if (strcmp(PQgetvalue(r, j, 0), name) == 0)
				assert_true(strtoll(PQgetvalue(r, j, 3), NULL,
						    10) <= made);
	}
	PQclear(r);
	assert_true(n_cfg >= 1);
	assert_int_equal(n_added, 1);
	assert_int_equal(pgfx_int("SELECT count(*) FROM ledger WHERE outcome = "
				  "'recovered' AND schedule LIKE 'skew:%'"),
			 n_al);
	/* What an operator checks last: nothing lost or missed. */
	char cfg[600], out[4096], errb[4096];
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", db2);
	const char *args[] = {"ledger", "--config", cfg, "--lost", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, args, out, sizeof(out),
				    errb, sizeof(errb)), 0);
	print_message("rolling deploy: %d skew alerts, run %lld ms\n", n_al,
		      (long long)t_run);
	fake_http_stop(srv);
	tu_rmrf(dir);
}

/* The fast clock itself: shared anchor, speed, and the wait conversion. */
static void scaled_clock(void **state)
{
	(void)state;
	int64_t real = now_ms();
	struct sc_clock *c = clock_scaled_new(1000000, real, RATE);
	struct sc_clock *v = sc_clock_virtual_new(0);
	assert_non_null(c);
	assert_non_null(v);
	assert_false(sc_clock_is_virtual(c));
	int64_t t = sc_clock_now_ms(c);
	assert_true(t >= 1000000 && t < 1000000 + 50 * RATE);
	sleep_ms(40);
	int64_t t2 = sc_clock_now_ms(c);
	assert_true(t2 - t >= 40 * RATE && t2 - t < 1000 * RATE);
	assert_true(clock_now_ns(c) / 1000000 - sc_clock_now_ms(c) <= RATE);
	/* A span of the clock takes RATE times less real time. */
	assert_int_equal(clock_real_delta_ms(c, 5000), 5000 / RATE);
	assert_int_equal(clock_real_delta_ns(c, 5000000000), 5000000000 / RATE);
	assert_int_equal(clock_real_delta_ms(sc_clock_real(), 5000), 5000);
	assert_int_equal(clock_real_delta_ms(v, 5000), 5000);
	/* Before its anchor the clock reads before its start. */
	struct sc_clock *later = clock_scaled_new(1000000, real + 10000, RATE);
	assert_non_null(later);
	assert_true(sc_clock_now_ms(later) < 1000000);
	sc_clock_free(later);
	sc_clock_free(v);
	sc_clock_free(c);
}

static int teardown(void **state)
{
	reap_all(state);
	return pgfx_teardown(state);
}

int main(void)
{
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scaled_clock),
		cmocka_unit_test_setup_teardown(nodes_daemons_exactly_once,
						pgfx_setup, teardown),
		cmocka_unit_test_setup_teardown(rolling_deploy, pgfx_setup,
						teardown),
	};
	return cmocka_run_group_tests_name("nodes_daemon_pg", tests,
					   pgfx_group_setup,
					   pgfx_group_teardown);
}
