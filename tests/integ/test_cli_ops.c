/*
 * test_cli_ops.c - the operator commands as a user runs them: the real
 * binary ($SURECRON_BIN) on a config and a SQLite store prepared in a temp
 * folder. The test builds the store's state through the library (jobs
 * ready, delayed, dead and done; failed, lost and missed ledger rows), then
 * checks what status, ledger, trigger, retry and explain SCHEDULE print and
 * their exit codes, and what trigger and retry changed in the store; and
 * the operator's loop with the daemon: trigger, run --once, ledger, status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "queue.h"
#include "store.h"
#include "testutil.h"

#define HOUR_MS (3600LL * 1000)
#define DAY_MS (24 * HOUR_MS)

static char tmp[256], cfg[320], db_url[340];
static char out[65536], err[65536];
static int64_t now_ms;

static const char *const config_text =
	"store: sqlite:./state.db\n"
	"targets:\n"
	"  archive: {kind: file, path: ./out.jsonl}\n"
	"schedules:\n"
	"  weekly:\n"
	"    cron: \"0 17 * * 5\"\n"
	"    tz: Asia/Seoul\n"
	"    targets: [archive]\n"
	"    tasks:\n"
	"      - {name: summary, command: [/bin/true]}\n"
	"  daily:\n"
	"    cron: \"30 8 * * *\"\n"
	"    tz: UTC\n"
	"    targets: [archive]\n"
	"    retry: {attempts: 3, backoff: fixed, delay: 90s}\n"
	"    tasks:\n"
	"      - {name: digest, command: [/bin/echo, daily report]}\n";

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", tmp);
	snprintf(db_url, sizeof(db_url), "sqlite:%s/state.db", tmp);
	FILE *f = fopen(cfg, "wb");
	assert_non_null(f);
	fputs(config_text, f);
	fclose(f);
	now_ms = sc_clock_now_ms(sc_clock_real());
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(tmp);
	return 0;
}

/* Runs the binary with the "K=V" / "K" (unset) entries of env in the
 * child (see tu_run_bin); fills out/err; returns the exit status. */
static int run_env(const char *const *env, const char *const *args)
{
	int rc = tu_run_bin(tmp, NULL, env, args, out, sizeof(out), err,
			    sizeof(err));

	assert_true(rc >= 0);
	return rc;
}

static const char *const no_overrides[] = {
	"SURECRON_SCHEDULE_WEEKLY", "SURECRON_SCHEDULE_DAILY", NULL};

static int run(const char *const *args)
{
	return run_env(no_overrides, args);
}

/* Opens the test's store on clock c (NULL: the real clock). */
static struct store *open_store(struct sc_clock *c)
{
	struct store *s = NULL;
	struct sc_err e = {0};

	if (store_open(db_url, c ? c : sc_clock_real(), &s, &e) != 0)
		fail_msg("store_open: %s", e.msg);
	return s;
}

/* Parses out as JSON (fails the test when it is not). */
static json_t *out_json(void)
{
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);

	if (!j)
		fail_msg("not JSON (%s): %s", je.text, out);
	return j;
}

static const struct sc_retry_policy one_attempt = {
	.attempts = 1, .backoff = SC_BACKOFF_FIXED, .delay_ms = 1000};
static const struct sc_retry_policy two_attempts = {
	.attempts = 2, .backoff = SC_BACKOFF_FIXED, .delay_ms = 6 * HOUR_MS};

/* Claims the single due job, which must be id. */
static struct store_job claim_one(struct store *s, int64_t id)
{
	struct store_job j;
	struct sc_err e = {0};
	size_t n = 0;

	assert_int_equal(queue_claim(s, "test", 60000, &j, 1, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(j.id, id);
	return j;
}

/* A job of (schedule, slot) that failed once and then died: a "failed"
 * row and a "lost" row in the ledger. Runs on its own handle with a
 * virtual clock, so the retry falls due without waiting. Returns its id. */
static int64_t make_lost(const char *sched, int64_t slot)
{
	struct sc_err e = {0}, cause = {0};
	struct sc_clock *clk = sc_clock_virtual_new(now_ms);
	struct store *s = open_store(clk);
	int64_t id;
	bool dead = true;

	assert_int_equal(queue_enqueue(s, sched, slot, &two_attempts, &id,
				       NULL, &e), 0);
	struct store_job j = claim_one(s, id);
	sc_err_set(&cause, SC_EIO, "summary: quota exceeded");
	assert_int_equal(queue_fail(s, &j, "task", &cause, NULL, NULL, &dead,
				    &e), 0);
	assert_false(dead);
	sc_clock_advance_ms(clk, 6 * HOUR_MS + 1000);
	j = claim_one(s, id);
	assert_int_equal(queue_fail(s, &j, "task", &cause, NULL, NULL, &dead,
				    &e), 0);
	assert_true(dead);
	store_close(s);
	sc_clock_free(clk);
	return id;
}

static int64_t make_done(struct store *s, const char *sched, int64_t slot)
{
	struct sc_err e = {0};
	int64_t id;

	assert_int_equal(queue_enqueue(s, sched, slot, &one_attempt, &id, NULL,
				       &e), 0);
	struct store_job j = claim_one(s, id);
	assert_int_equal(queue_complete(s, &j, NULL, &e), 0);
	return id;
}

static void add_missed(struct store *s, const char *sched, int64_t slot)
{
	struct ledger_row r = {0};
	struct sc_err e = {0};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	r.slot_ms = slot;
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_MISSED);
	snprintf(r.error_class, sizeof(r.error_class), "scheduler");
	r.error_msg = "daemon down; catchup latest ran a later slot";
	assert_int_equal(store_ledger_append(s, &r, &e), 0);
}

/* ---- status ----------------------------------------------------------- */

static json_t *sched_obj(json_t *root, const char *name)
{
	json_t *arr = json_object_get(root, "schedules"), *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(json_object_get(v, "name")),
			   name) == 0)
			return v;
	fail_msg("no schedule %s in status", name);
	return NULL;
}

static json_int_t jint(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);
	if (b)
		v = json_object_get(v, b);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static const char *jstr(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);
	if (b)
		v = json_object_get(v, b);
	assert_true(json_is_string(v));
	return json_string_value(v);
}

static void status_counts_and_last(void **state)
{
	struct sc_err e = {0};
	struct store *s;
	int64_t id;

	/* daily: one done slot, then one due and one delayed job. */
	s = open_store(NULL);
	make_done(s, "daily", now_ms - 2 * DAY_MS);
	store_close(s);
	make_lost("weekly", now_ms - 3 * DAY_MS);
	make_lost("retired", now_ms - 4 * DAY_MS); /* no longer in the file */
	s = open_store(NULL);
	assert_int_equal(queue_enqueue(s, "daily", now_ms - DAY_MS,
				       &one_attempt, &id, NULL, &e), 0);
	assert_int_equal(queue_enqueue(s, "daily", now_ms + DAY_MS,
				       &one_attempt, &id, NULL, &e), 0);
	store_close(s);

	const char *json[] = {"status", "--config", cfg, "--json", NULL};
	assert_int_equal(run(json), 0);
	json_t *root = out_json();
	assert_string_equal(jstr(root, "store", NULL), "sqlite");
	json_t *w = sched_obj(root, "weekly"), *d = sched_obj(root, "daily");
	assert_string_equal(jstr(w, "class", NULL), "low-frequency");
	assert_non_null(strstr(jstr(w, "class_reason", NULL), "FRI"));
	assert_int_equal(jint(w, "policy", "attempts"), 4);
	assert_string_equal(jstr(w, "policy", "source"), "class");
	assert_string_equal(jstr(w, "last", "outcome"), "lost");
	assert_int_equal(jint(w, "jobs", "dead"), 1);
	assert_int_equal(jint(w, "jobs", "waiting"), 0);
	/* The next slot, in Seoul: a Friday 17:00 at +09:00, after now. */
	const char *next = jstr(w, "next", NULL);
	assert_non_null(strstr(next, "T17:00:00+09:00"));
	int64_t next_ms;
	assert_int_equal(clock_parse_iso(next, &next_ms, NULL), 0);
	assert_true(next_ms > now_ms && next_ms <= now_ms + 7 * DAY_MS);
	assert_int_equal(jint(w, "next_ms", NULL), next_ms);

	assert_string_equal(jstr(d, "class", NULL), "default");
	assert_int_equal(jint(d, "policy", "attempts"), 3);
	assert_string_equal(jstr(d, "policy", "source"), "config");
	assert_string_equal(jstr(d, "last", "outcome"), "success");
	assert_int_equal(jint(d, "jobs", "waiting"), 1);
	assert_int_equal(jint(d, "jobs", "delayed"), 1);
	assert_int_equal(jint(d, "jobs", "dead"), 0);
	assert_int_equal(jint(d, "jobs", "done"), 1);
	assert_int_equal(jint(root, "other_jobs", "dead"), 1);
	assert_int_equal(jint(root, "other_jobs", "waiting"), 0);
	json_decref(root);

	const char *text[] = {"status", "--config", cfg, NULL};
	assert_int_equal(run(text), 0);
	assert_non_null(strstr(out, "weekly\n"));
	assert_non_null(strstr(out, "0 waiting, 0 delayed, 0 running, 1 dead"));
	assert_non_null(strstr(out, "1 waiting, 1 delayed, 0 running, 0 dead"));
	assert_non_null(strstr(out, "last     lost"));
	/* A fixed delay does not grow: no "from". */
	assert_non_null(strstr(out, "3 attempts, fixed backoff of 1m30s "
				    "(retry: in the config)"));
	assert_string_equal(err, "");
	/* A schedule removed from the file still shows its dead job. */
	assert_non_null(strstr(out, "schedules not in the config\n  jobs     "
				    "0 waiting, 0 delayed, 0 running, 1 dead"));
}

/* status SCHEDULE (issue 15): that schedule only, nothing else read. */
static void status_of_one_schedule(void **state)
{
	struct store *s = open_store(NULL);
	make_done(s, "daily", now_ms - 2 * DAY_MS);
	store_close(s);
	make_lost("weekly", now_ms - 3 * DAY_MS);
	make_lost("retired", now_ms - 4 * DAY_MS);

	const char *json[] = {"status", "--config", cfg, "--json", "weekly",
			      NULL};
	assert_int_equal(run(json), 0);
	json_t *root = out_json();
	json_t *arr = json_object_get(root, "schedules");
	assert_int_equal(json_array_size(arr), 1);
	json_t *w = sched_obj(root, "weekly");
	assert_string_equal(jstr(w, "last", "outcome"), "lost");
	assert_int_equal(jint(w, "jobs", "dead"), 1);
	assert_true(json_is_null(json_object_get(root, "other_jobs")));
	json_decref(root);

	const char *text[] = {"status", "--config", cfg, "daily", NULL};
	assert_int_equal(run(text), 0);
	assert_non_null(strstr(out, "\ndaily\n"));
	assert_null(strstr(out, "weekly"));
	assert_null(strstr(out, "schedules not in the config"));
	assert_non_null(strstr(out, "last     success"));

	const char *unknown[] = {"status", "--config", cfg, "nope", NULL};
	assert_int_equal(run(unknown), 2);
	assert_non_null(strstr(err, "no schedule 'nope'"));
	const char *two[] = {"status", "--config", cfg, "daily", "weekly",
			     NULL};
	assert_int_equal(run(two), 2);
	const char *stale[] = {"status", "--config", cfg, "--stale", "daily",
			       NULL};
	assert_int_equal(run(stale), 2);
}

static void status_errors(void **state)
{
	const char *bad_opt[] = {"status", "--config", cfg, "--bogus", NULL};
	assert_int_equal(run(bad_opt), 2);
	assert_non_null(strstr(err, "--bogus"));

	char missing[400];
	snprintf(missing, sizeof(missing), "%s/nope.yaml", tmp);
	const char *no_cfg[] = {"status", "--config", missing, NULL};
	assert_int_equal(run(no_cfg), 2);

	/* A store that is not a database: exit 1, the file untouched. */
	char db[400];
	snprintf(db, sizeof(db), "%s/state.db", tmp);
	FILE *f = fopen(db, "wb");
	assert_non_null(f);
	fputs("this is not a database, and it must stay so\n", f);
	fclose(f);
	const char *args[] = {"status", "--config", cfg, NULL};
	assert_int_equal(run(args), 1);
	assert_non_null(strstr(err, "store"));
	assert_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
	tu_slurp(db, out, sizeof(out));
	assert_string_equal(out, "this is not a database, and it must stay "
				 "so\n");
}

/* ---- ledger ----------------------------------------------------------- */

/* The ledger of a bad week: weekly slot 10 days ago lost (failed + lost
 * rows), weekly slot 3 days ago missed, daily slot 2 days ago done. */
static int64_t lost_id;
static const int64_t old_ago = 10 * DAY_MS, missed_ago = 3 * DAY_MS,
		     done_ago = 2 * DAY_MS;

static void fill_ledger(void)
{
	lost_id = make_lost("weekly", now_ms - old_ago);
	struct store *s = open_store(NULL);
	add_missed(s, "weekly", now_ms - missed_ago);
	make_done(s, "daily", now_ms - done_ago);
	store_close(s);
}

/* The outcomes of the rows of a `ledger --json` output, joined by ','. */
static const char *outcomes_of(json_t *root, char *buf, size_t n)
{
	json_t *rows = json_object_get(root, "rows"), *v;
	size_t i, len = 0;

	assert_true(json_is_array(rows));
	buf[0] = '\0';
	json_array_foreach(rows, i, v)
		len += (size_t)snprintf(buf + len, n - len, "%s%s",
					i ? "," : "", jstr(v, "outcome", NULL));
	return buf;
}

static void ledger_filters(void **state)
{
	char buf[256], since[CLOCK_ISO_MAX], until[CLOCK_ISO_MAX];
	json_t *root;

	fill_ledger();
	const char *all[] = {"ledger", "--config", cfg, "--json", NULL};
	assert_int_equal(run(all), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)),
			    "failed,lost,missed,success");
	json_t *lost = json_array_get(json_object_get(root, "rows"), 1);
	assert_int_equal(jint(lost, "job", NULL), lost_id);
	assert_string_equal(jstr(lost, "schedule", NULL), "weekly");
	assert_string_equal(jstr(lost, "error_class", NULL), "task");
	assert_string_equal(jstr(lost, "error", NULL),
			    "summary: quota exceeded");
	json_decref(root);

	const char *by_sched[] = {"ledger", "--config", cfg, "--schedule",
				  "daily", "--json", NULL};
	assert_int_equal(run(by_sched), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)), "success");
	json_decref(root);

	const char *by_outcome[] = {"ledger", "--config", cfg, "--outcome",
				    "lost", "--json", NULL};
	assert_int_equal(run(by_outcome), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)), "lost");
	json_decref(root);

	/* A relative --since: the last 5 days hold the missed and done
	 * slots, not the lost one. */
	const char *recent[] = {"ledger", "--config", cfg, "--since", "5d",
				"--json", NULL};
	assert_int_equal(run(recent), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)),
			    "missed,success");
	json_decref(root);

	/* ISO since (inclusive) and until (exclusive) on slot instants. */
	clock_format_utc(now_ms - missed_ago, since);
	clock_format_utc(now_ms - done_ago, until);
	const char *window[] = {"ledger", "--config", cfg, "--since", since,
				"--until", until, "--json", NULL};
	assert_int_equal(run(window), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)), "missed");
	json_decref(root);

	/* --limit keeps the most recent rows, listed oldest first. */
	const char *newest[] = {"ledger", "--config", cfg, "--limit", "2",
				"--json", NULL};
	assert_int_equal(run(newest), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)),
			    "missed,success");
	json_decref(root);
	/* The same with --option=VALUE forms. */
	const char *eq[] = {"ledger", "--config", cfg, "--limit=2",
			    "--since=30d", "--json", NULL};
	assert_int_equal(run(eq), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)),
			    "missed,success");
	json_decref(root);

	/* No row in the period: said in words, not an empty screen. */
	const char *none[] = {"ledger", "--config", cfg, "--until",
			      "2000-01-01T00:00:00Z", NULL};
	assert_int_equal(run(none), 0);
	assert_string_equal(out, "no ledger rows until "
				 "2000-01-01T00:00:00Z\n");

	/* Text: a header, then one line per row with its error. */
	const char *text[] = {"ledger", "--config", cfg, NULL};
	assert_int_equal(run(text), 0);
	assert_int_equal(strncmp(out, "SLOT", 4), 0);
	assert_non_null(strstr(out, "task: summary: quota exceeded"));
}

static void ledger_lost_report(void **state)
{
	json_t *root;
	char buf[256];

	fill_ledger();
	const char *lost[] = {"ledger", "--config", cfg, "--lost", NULL};
	assert_int_equal(run(lost), 1); /* a lost slot: the report fails */
	assert_int_equal(strncmp(out, "LOST: 1 slot lost, 1 missed\n", 28), 0);
	assert_non_null(strstr(out, "summary: quota exceeded"));
	assert_non_null(strstr(out, "missed"));
	assert_null(strstr(out, "success"));

	const char *json[] = {"ledger", "--config", cfg, "--lost", "--json",
			      NULL};
	assert_int_equal(run(json), 1);
	root = out_json();
	assert_int_equal(jint(root, "lost", NULL), 1);
	assert_int_equal(jint(root, "missed", NULL), 1);
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)), "lost,missed");
	json_decref(root);

	/* A limit could keep only the missed row and turn the report green:
	 * refused. */
	const char *limited[] = {"ledger", "--config", cfg, "--lost",
				 "--limit", "1", NULL};
	assert_int_equal(run(limited), 2);

	/* Only the missed slot in the last 5 days: listed, and it fails
	 * the report too (issue 13: a missed slot nobody acted on). */
	const char *recent[] = {"ledger", "--config", cfg, "--lost", "--since",
				"5d", NULL};
	assert_int_equal(run(recent), 1);
	assert_int_equal(strncmp(out, "MISSED: 0 slots lost, 1 missed", 30), 0);

	/* Nothing in the last day. */
	const char *today[] = {"ledger", "--config", cfg, "--lost", "--since",
			       "1d", NULL};
	assert_int_equal(run(today), 0);
	assert_int_equal(strncmp(out, "no lost or missed slots since ", 30), 0);

	/* The lost slot run again and delivered: still listed, marked
	 * recovered, and the report stops failing. */
	struct store *s = open_store(NULL);
	struct sc_err e = {0};
	assert_int_equal(queue_retry_dead(s, lost_id, 0, &e), 0);
	struct store_job j = claim_one(s, lost_id);
	assert_int_equal(queue_complete(s, &j, NULL, &e), 0);
	store_close(s);
	/* The missed slot still fails it, until someone acknowledges it. */
	assert_int_equal(run(lost), 1);
	assert_int_equal(strncmp(out, "MISSED: 0 slots lost, 1 missed; 1 "
				      "recovered later\n", 46), 0);
	assert_non_null(strstr(out, "[recovered: success at "));
	char missed_iso[CLOCK_ISO_MAX];
	clock_format_utc(now_ms - missed_ago, missed_iso);
	const char *ack[] = {"ack", "--config", cfg, "--by", "ops", "weekly",
			     missed_iso, NULL};
	assert_int_equal(run(ack), 0);
	assert_non_null(strstr(out, "acknowledged"));
	assert_int_equal(run(ack), 0); /* again: one more acked row, fine */
	assert_int_equal(run(lost), 0);
	assert_non_null(strstr(out, "1 acknowledged"));
	assert_non_null(strstr(out, "[acked at "));
	assert_int_equal(run(json), 0);
	root = out_json();
	assert_int_equal(jint(root, "lost", NULL), 0);
	assert_int_equal(jint(root, "missed", NULL), 0);
	assert_int_equal(jint(root, "acked", NULL), 1);
	assert_int_equal(jint(root, "recovered", NULL), 1);
	json_t *row0 = json_array_get(json_object_get(root, "rows"), 0);
	assert_string_equal(jstr(row0, "outcome", NULL), "lost");
	assert_true(json_is_string(json_object_get(row0, "recovered_at")));
	json_t *row1 = json_array_get(json_object_get(root, "rows"), 1);
	assert_true(json_is_null(json_object_get(row1, "recovered_at")));
	assert_true(json_is_string(json_object_get(row1, "acked_at")));
	json_decref(root);
	/* Nothing lost or missed at that instant: exit 1, and a bad SLOT or
	 * schedule is a usage error. */
	const char *nothing[] = {"ack", "--config", cfg, "weekly",
				 "2020-01-01T00:00:00Z", NULL};
	assert_int_equal(run(nothing), 1);
	const char *bad_slot[] = {"ack", "--config", cfg, "weekly", "soon",
				  NULL};
	assert_int_equal(run(bad_slot), 2);
	const char *bad_sched[] = {"ack", "--config", cfg, "nosuch",
				   missed_iso, NULL};
	assert_int_equal(run(bad_sched), 2);
	const char *no_slot[] = {"ack", "--config", cfg, "weekly", NULL};
	assert_int_equal(run(no_slot), 2);
}

static void ledger_errors(void **state)
{
	const char *bad_time[] = {"ledger", "--config", cfg, "--since",
				  "last tuesday", NULL};
	assert_int_equal(run(bad_time), 2);
	assert_non_null(strstr(err, "--since"));
	const char *bad_outcome[] = {"ledger", "--config", cfg, "--outcome",
				     "exploded", NULL};
	assert_int_equal(run(bad_outcome), 2);
	const char *bad_sched[] = {"ledger", "--config", cfg, "--schedule",
				   "hourly", NULL};
	assert_int_equal(run(bad_sched), 2);
	assert_non_null(strstr(err, "no schedule 'hourly'"));
	const char *no_val[] = {"ledger", "--config", cfg, "--since", NULL};
	assert_int_equal(run(no_val), 2);
}

/* ---- trigger and retry ------------------------------------------------ */

static int64_t job_id_of(const char *text)
{
	long long id = 0;
	assert_int_equal(sscanf(text, "job %lld:", &id), 1);
	return id;
}

static void trigger_is_idempotent_per_slot(void **state)
{
	struct store_job j;
	struct sc_err e = {0};
	int64_t slot;

	const char *slot_args[] = {"trigger", "--config", cfg, "--slot",
				   "2026-01-02T08:30:00Z", "daily", NULL};
	assert_int_equal(run(slot_args), 0);
	int64_t id = job_id_of(out);
	assert_non_null(strstr(out, "new, due now"));
	assert_int_equal(run(slot_args), 0);
	assert_int_equal(job_id_of(out), id);
	assert_non_null(strstr(out, "already queued"));

	struct store *s = open_store(NULL);
	assert_int_equal(clock_parse_iso("2026-01-02T08:30:00Z", &slot, NULL),
			 0);
	assert_int_equal(store_job_find(s, "daily", slot, &j, &e), 0);
	assert_int_equal(j.id, id);
	assert_true(j.manual);
	assert_int_equal(j.state, JOB_READY);
	assert_int_equal(j.policy.attempts, 3); /* the schedule's retry: */
	store_close(s);

	/* Without --slot: a new job for the current second. */
	const char *now_args[] = {"trigger", "--config", cfg, "weekly", NULL};
	int64_t before = sc_clock_now_ms(sc_clock_real()) / 1000 * 1000;
	assert_int_equal(run(now_args), 0);
	int64_t id2 = job_id_of(out);
	assert_int_not_equal(id2, id);
	s = open_store(NULL);
	assert_int_equal(store_job_get(s, id2, &j, &e), 0);
	assert_string_equal(j.schedule, "weekly");
	assert_true(j.slot_ms >= before && j.slot_ms <= before + 5000);
	assert_true(j.run_at_ms <= sc_clock_now_ms(sc_clock_real()));
	assert_int_equal(j.policy.attempts, 4); /* low-frequency class */
	store_close(s);

	/* A done slot is refused: running it again would send it twice. */
	s = open_store(NULL);
	int64_t done_slot = now_ms - 5 * DAY_MS;
	make_done(s, "daily", done_slot);
	store_close(s);
	char iso[CLOCK_ISO_MAX];
	clock_format_utc(done_slot, iso);
	const char *done_args[] = {"trigger", "--config", cfg, "--slot", iso,
				   "daily", NULL};
	assert_int_equal(run(done_args), 2);
	assert_non_null(strstr(err, iso)); /* the slot as the user wrote it */
	assert_non_null(strstr(err, "would deliver it twice"));

	const char *unknown[] = {"trigger", "--config", cfg, "hourly", NULL};
	assert_int_equal(run(unknown), 2);
	assert_non_null(strstr(err, "no schedule 'hourly'"));
	const char *bad_slot[] = {"trigger", "--config", cfg, "--slot", "soon",
				  "daily", NULL};
	assert_int_equal(run(bad_slot), 2);
}

static void retry_revives_only_dead_jobs(void **state)
{
	struct store_job j;
	struct sc_err e = {0};
	char id_s[32];

	int64_t id = make_lost("weekly", now_ms - DAY_MS);
	snprintf(id_s, sizeof(id_s), "%lld", (long long)id);
	const char *args[] = {"retry", "--config", cfg, id_s, NULL};
	assert_int_equal(run(args), 0);
	assert_int_equal(job_id_of(out), id);
	assert_non_null(strstr(out, "ready again"));

	struct store *s = open_store(NULL);
	assert_int_equal(store_job_get(s, id, &j, &e), 0);
	assert_int_equal(j.state, JOB_READY);
	/* Its attempts go on from the last one (issue 10); the budget is
	 * the schedule's policy again. */
	assert_true(j.attempts >= 1);
	assert_int_equal(j.policy.attempts, j.attempts + 4);
	assert_true(j.run_at_ms <= sc_clock_now_ms(sc_clock_real()));
	store_close(s);

	/* Now it is waiting, not dead: refused, nothing changes. */
	assert_int_equal(run(args), 2);
	assert_non_null(strstr(err, "not dead"));
	assert_string_equal(out, "");

	const char *none[] = {"retry", "--config", cfg, "999999", NULL};
	assert_int_equal(run(none), 2);
	assert_non_null(strstr(err, "no job 999999"));
	const char *junk[] = {"retry", "--config", cfg, "12x", NULL};
	assert_int_equal(run(junk), 2);
	const char *missing[] = {"retry", "--config", cfg, NULL};
	assert_int_equal(run(missing), 2);
}

/* ---- explain SCHEDULE ------------------------------------------------- */

static void explain_schedule_and_override(void **state)
{
	json_t *root;

	const char *args[] = {"explain", "--config", cfg, "--from",
			      "2026-11-27T00:00:00Z", "--json", "weekly", NULL};
	assert_int_equal(run(args), 0);
	root = out_json();
	assert_string_equal(jstr(root, "schedule", NULL), "weekly");
	assert_string_equal(jstr(root, "expression", NULL), "0 17 * * 5");
	assert_true(json_is_null(json_object_get(root, "override_var")));
	assert_string_equal(jstr(root, "zone", NULL), "Asia/Seoul");
	assert_string_equal(jstr(root, "class", NULL), "low-frequency");
	assert_int_equal(jint(root, "policy", "attempts"), 4);
	assert_string_equal(jstr(root, "policy_source", NULL), "class");
	/* Friday 2026-11-27 17:00 in Seoul is 08:00Z: 4 attempts in 3h30. */
	assert_string_equal(jstr(root, "timeline", "slot"),
			    "2026-11-27T17:00:00+09:00");
	assert_int_equal(json_array_size(json_object_get(
		json_object_get(root, "timeline"), "attempts")), 4);
	assert_int_equal(jint(root, "timeline", "recovery_window_ms"),
			 (3 * 60 + 30) * 60 * 1000LL);
	json_decref(root);

	/* The override moves both the firing and the class. */
	const char *env[] = {"SURECRON_SCHEDULE_WEEKLY=*/10 * * * *",
			     "SURECRON_SCHEDULE_DAILY", NULL};
	assert_int_equal(run_env(env, args), 0);
	root = out_json();
	assert_string_equal(jstr(root, "expression", NULL), "*/10 * * * *");
	assert_string_equal(jstr(root, "cron_config", NULL), "0 17 * * 5");
	assert_string_equal(jstr(root, "override_var", NULL),
			    "SURECRON_SCHEDULE_WEEKLY");
	assert_string_equal(jstr(root, "class", NULL), "default");
	assert_int_equal(jint(root, "policy", "attempts"), 2);
	assert_string_equal(jstr(root, "timeline", "slot"),
			    "2026-11-27T09:10:00+09:00");
	json_decref(root);

	/* Text says which variable applied. */
	const char *text[] = {"explain", "weekly", "--config", cfg, NULL};
	assert_int_equal(run_env(env, text), 0);
	assert_non_null(strstr(out, "override    SURECRON_SCHEDULE_WEEKLY is "
				    "set"));
	assert_int_equal(run(text), 0);
	assert_non_null(strstr(out, "override    none"));
	assert_non_null(strstr(out, "recovery window 3h30m"));

	/* The config's retry: wins over the class. */
	const char *daily[] = {"explain", "--config", cfg, "--json", "daily",
			       NULL};
	assert_int_equal(run(daily), 0);
	root = out_json();
	assert_int_equal(jint(root, "policy", "attempts"), 3);
	assert_string_equal(jstr(root, "policy", "backoff"), "fixed");
	assert_string_equal(jstr(root, "policy_source", NULL), "config");
	json_decref(root);
}

static void explain_expr_still_works(void **state)
{
	const char *expr[] = {"explain", "--tz", "UTC", "--json",
			      "0 17 * * 5", NULL};
	assert_int_equal(run(expr), 0);
	json_t *root = out_json();
	assert_null(json_object_get(root, "schedule"));
	assert_string_equal(jstr(root, "class", NULL), "low-frequency");
	json_decref(root);
	const char *macro[] = {"explain", "--tz", "UTC", "@daily", NULL};
	assert_int_equal(run(macro), 0);

	const char *unknown[] = {"explain", "--config", cfg, "hourly", NULL};
	assert_int_equal(run(unknown), 2);
	assert_non_null(strstr(err, "no schedule 'hourly'"));
	const char *tz[] = {"explain", "--config", cfg, "--tz", "UTC", "weekly",
			    NULL};
	assert_int_equal(run(tz), 2);
}

/* ---- the operator's loop with the daemon ------------------------------- */

/* trigger -> run --once -> ledger / status: the slot ran once, was
 * delivered once, and cannot be triggered again. */
static void trigger_then_run_once(void **state)
{
	char buf[256], path[400];
	json_t *root;

	const char *trig[] = {"trigger", "--config", cfg, "--slot",
			      "2026-11-27T08:30:00Z", "daily", NULL};
	assert_int_equal(run(trig), 0);
	int64_t id = job_id_of(out);
	const char *once[] = {"run", "--once", "--config", cfg, NULL};
	assert_int_equal(run(once), 0);

	const char *led[] = {"ledger", "--config", cfg, "--schedule", "daily",
			     "--json", NULL};
	assert_int_equal(run(led), 0);
	root = out_json();
	assert_string_equal(outcomes_of(root, buf, sizeof(buf)), "success");
	json_t *row = json_array_get(json_object_get(root, "rows"), 0);
	assert_int_equal(jint(row, "job", NULL), id);
	assert_string_equal(jstr(row, "slot", NULL), "2026-11-27T08:30:00Z");
	json_decref(root);

	/* The task's plain text is the summary, delivered once to the file
	 * target. */
	snprintf(path, sizeof(path), "%s/out.jsonl", tmp);
	char text[4096];
	tu_slurp(path, text, sizeof(text));
	char *nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_string_equal(nl + 1, ""); /* exactly one line */
	*nl = '\0';
	json_error_t je;
	json_t *msg = json_loads(text, 0, &je);
	assert_non_null(msg);
	assert_string_equal(jstr(msg, "kind", NULL), "result");
	assert_string_equal(jstr(msg, "summary", NULL), "daily report");
	assert_string_equal(jstr(msg, "slot", NULL), "2026-11-27T08:30:00Z");
	json_decref(msg);

	/* Done: a second trigger of the slot is refused, nothing re-runs. */
	assert_int_equal(run(trig), 2);
	const char *st[] = {"status", "--config", cfg, "--json", NULL};
	assert_int_equal(run(st), 0);
	root = out_json();
	json_t *d = sched_obj(root, "daily");
	assert_string_equal(jstr(d, "last", "outcome"), "success");
	assert_int_equal(jint(d, "jobs", "done"), 1);
	assert_int_equal(jint(d, "jobs", "waiting"), 0);
	json_decref(root);
	/* And a second pass sends nothing more. */
	assert_int_equal(run(once), 0);
	tu_slurp(path, text, sizeof(text));
	nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_string_equal(nl + 1, "");
}

/* Every command that reads the store or acts on what is in it refuses
 * one that was never made (a mistyped store:, a config the daemon does
 * not run), with exit 1 and a line naming the path and the config, and
 * makes nothing: `ledger --lost` must not read a missing store as a clean
 * one. trigger and pause, which queue work for the daemon (a first
 * install triggers before the daemon's first start), make it and say
 * so. */
static void a_store_never_made_is_refused_by_every_command(void **state)
{
	static const char *const cmds[][6] = {
		{"ledger", "--lost", NULL},
		{"ledger", NULL},
		{"status", NULL},
		{"status", "daily", NULL},
		{"status", "--stale", NULL},
		{"audit", "--since", "2d", NULL},
		{"ack", "daily", "2026-11-27T08:30:00Z", NULL},
		{"retry", "1", NULL},
		{"resume", "daily", NULL},
		{"release", "daily", "2026-11-27T08:30:00Z", NULL},
	};
	char db[400], want[600];
	struct stat sb;

	snprintf(db, sizeof(db), "%s/state.db", tmp);
	snprintf(want, sizeof(want), "no store at %s: the file does not exist",
		 db);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[10] = {cmds[i][0], "--config", cfg};
		size_t n = 3;
		for (size_t k = 1; cmds[i][k]; k++)
			args[n++] = cmds[i][k];
		args[n] = NULL;
		int rc = run(args);
		if (rc != 1 || !strstr(err, want) || !strstr(err, cfg))
			fail_msg("%s %s: exit %d, want 1 naming the path and "
				 "the config: %s", cmds[i][0],
				 cmds[i][1] ? cmds[i][1] : "", rc, err);
		if (stat(db, &sb) == 0)
			fail_msg("%s %s made %s", cmds[i][0],
				 cmds[i][1] ? cmds[i][1] : "", db);
	}
	/* An unknown schedule is still a usage error, found before the
	 * store is looked for. */
	const char *nope[] = {"status", "--config", cfg, "nope", NULL};
	assert_int_equal(run(nope), 2);
	assert_non_null(strstr(err, "no schedule 'nope'"));
	/* trigger makes the store, says so once, and the job is in it. */
	const char *trig[] = {"trigger", "--config", cfg, "--slot",
			      "2026-11-27T08:30:00Z", "daily", NULL};
	assert_int_equal(run(trig), 0);
	assert_non_null(strstr(err, "note: no store at sqlite:"));
	assert_non_null(strstr(err, "made a new one"));
	assert_int_equal(stat(db, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(run(trig), 0);
	assert_null(strstr(err, "made a new one"));
	struct store *s = open_store(NULL);
	struct store_job j;
	assert_int_equal(store_job_find(s, "daily",
					 1795768200000LL /* that slot */, &j,
					 NULL),
			 0);
	store_close(s);
	/* Once made, the reading commands work on it. */
	const char *lost[] = {"ledger", "--config", cfg, "--lost", NULL};
	assert_int_equal(run(lost), 0);
	const char *st[] = {"status", "--config", cfg, "daily", NULL};
	assert_int_equal(run(st), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(status_counts_and_last),
		T(status_of_one_schedule),
		T(status_errors),
		T(a_store_never_made_is_refused_by_every_command),
		T(ledger_filters),
		T(ledger_lost_report),
		T(ledger_errors),
		T(trigger_is_idempotent_per_slot),
		T(retry_revives_only_dead_jobs),
		T(explain_schedule_and_override),
		T(explain_expr_still_works),
		T(trigger_then_run_once),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
