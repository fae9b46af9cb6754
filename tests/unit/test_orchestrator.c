/*
 * test_orchestrator.c - the outcome rule, each branch forced for real:
 * tasks are sh scripts that append their name to a run log (so a test can
 * count task runs), targets are webhooks on a real HTTP server on
 * 127.0.0.1, the store is a real SQLite file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "fakes/fake_http.h"
#include "alert.h"
#include "orchestrator.h"
#include "queue.h"
#include "store.h"
#include "testutil.h"
#include "worker.h"

#define SLOT 1795798800000LL /* 2026-11-27T17:00:00Z */
#define MAX_T 8

static struct fake_http *srv;

struct fix {
	char dir[256];
	char runlog[320];
	struct sc_clock *clock;
	struct store *store;
	struct target_spec targets[4];
	char *alert_names[3];
	struct config cfg;
	struct task_spec tasks[MAX_T];
	char *argv[MAX_T][2];
	char paths[MAX_T][320];
	char *target_names[4];
	struct schedule_spec sched;
	struct schedule_extra sched_x; /* sched's extras (sched.x) */
	struct orchestrator_ctx ctx;
};

static struct fix F;

static int group_setup(void **state)
{
	srv = fake_http_start();
	return srv ? 0 : -1;
}

static int group_teardown(void **state)
{
	fake_http_stop(srv);
	return 0;
}

static void set_url(const char *var, const char *path)
{
	char url[256];

	setenv(var, fake_http_url(srv, path, url, sizeof(url)), 1);
}

static int setup(void **state)
{
	char url[400];
	struct sc_err err = {0};

	memset(&F, 0, sizeof(F));
	fake_http_reset(srv);
	unsetenv("SURECRON_ALERT_TARGETS");
	snprintf(F.dir, sizeof(F.dir), "%s", tu_tmpdir());
	snprintf(F.runlog, sizeof(F.runlog), "%s/runs.log", F.dir);
	F.clock = sc_clock_virtual_new(SLOT + 1000);
	snprintf(url, sizeof(url), "sqlite:%s/s.db", F.dir);
	assert_int_equal(store_open(url, F.clock, &F.store, &err), 0);

	static const char *names[] = {"A", "B", "C", "alerts"};
	static const char *vars[] = {"T_URL_A", "T_URL_B", "T_URL_C",
				     "T_URL_ALERTS"};
	static const char *paths[] = {"/a", "/b", "/c", "/alerts"};
	for (int i = 0; i < 4; i++) {
		F.targets[i] = (struct target_spec){
			.name = (char *)names[i], .kind = TARGET_WEBHOOK,
			.url_env = (char *)vars[i], .timeout_ms = 5000};
		set_url(vars[i], paths[i]);
		fake_http_set_default(srv, paths[i], 200, NULL, "ok");
	}
	F.cfg.targets = F.targets;
	F.cfg.n_targets = 4;
	F.cfg.alert_on = CONFIG_ALERT_ON_DEFAULT;
	F.target_names[0] = "A";
	F.target_names[1] = "B";
	F.sched.name = "weekly";
	F.sched.targets = F.target_names;
	F.sched.n_targets = 2;
	F.sched.tasks = F.tasks;
	F.sched.x = &F.sched_x;
	F.cfg.schedules = &F.sched;
	F.cfg.n_schedules = 1;
	F.ctx.store = F.store;
	F.ctx.config = &F.cfg;
	return 0;
}

static int teardown(void **state)
{
	store_close(F.store);
	sc_clock_free(F.clock);
	tu_rmrf(F.dir);
	return 0;
}

/* Adds a task whose script first logs its run, then runs body. */
static void add_task(const char *name, const char *body)
{
	size_t i = F.sched.n_tasks++;
	char dir[256];
	FILE *f;

	memcpy(dir, F.dir, sizeof(dir));
	snprintf(F.paths[i], sizeof(F.paths[i]), "%s/%s.sh", dir, name);
	f = fopen(F.paths[i], "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho %s >> '%s'\n%s\n", name, F.runlog, body);
	fclose(f);
	chmod(F.paths[i], 0700);
	F.argv[i][0] = F.paths[i];
	F.argv[i][1] = NULL;
	F.tasks[i] = (struct task_spec){.name = (char *)name,
					.argv = F.argv[i],
					.timeout_ms = 10000};
}

static int task_runs(void)
{
	FILE *f = fopen(F.runlog, "r");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static bool marked(void)
{
	bool m = true;

	assert_int_equal(store_slot_is_marked(F.store, "weekly", SLOT, &m, NULL), 0);
	return m;
}

static enum send_state state_of(const char *target)
{
	struct outbox_entry e = {0};
	int rc = store_outbox_get(F.store, "weekly", SLOT, target, &e, NULL);

	if (rc == SC_ENOENT)
		return SEND_NONE;
	assert_int_equal(rc, 0);
	enum send_state s = e.state;
	store_outbox_entry_dispose(&e);
	return s;
}

/* The i-th request to path, parsed. */
static json_t *request_json(const char *path, long i)
{
	struct fake_request r;

	assert_true(fake_http_request(srv, path, i, &r));
	json_t *o = json_loads(r.body, 0, NULL);
	fake_request_dispose(&r);
	assert_non_null(o);
	return o;
}

static const char *jget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int run(int attempt, struct orchestrator_report *rep, struct sc_err *err)
{
	sc_err_clear(err);
	return orchestrator_run_slot(&F.ctx, &F.sched, SLOT, 7, attempt, rep,
				     err);
}

/* ---- the failure path --------------------------------------------------- */

static void all_fail_job_fails_with_notices_and_no_guard(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("fetch", "echo '{\"retry_after\": 120, \"error\": \"API "
			  "quota exceeded\"}'; exit 75");
	add_task("render", "echo 'config broken' >&2; exit 78");
	int rc = run(1, &rep, &err);
	/* The FIRST task's error, hint and permanence (not the second's). */
	assert_int_equal(rc, SC_ETASK);
	assert_int_equal(err.code, SC_ETASK);
	assert_non_null(strstr(err.msg, "task fetch:"));
	assert_non_null(strstr(err.msg, "API quota exceeded"));
	assert_int_equal(err.retry_after_ms, 120000);
	assert_false(err.permanent);
	/* The others are in the details. */
	assert_non_null(rep.details_json);
	assert_non_null(strstr(rep.details_json, "render"));
	assert_non_null(strstr(rep.details_json, "config broken"));
	assert_int_equal(rep.n_failed, 2);
	/* Nothing that blocks a retry. */
	assert_false(marked());
	assert_int_equal(state_of("A"), SEND_NONE);
	assert_int_equal(state_of("B"), SEND_NONE);
	/* A notice to every target, each naming both failures. */
	assert_int_equal(rep.n_notices_sent, 2);
	const char *paths[] = {"/a", "/b"};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fake_http_count(srv, paths[i]), 1);
		json_t *o = request_json(paths[i], 0);
		assert_string_equal(jget(o, "kind"), "failure_notice");
		assert_true(json_is_null(json_object_get(o, "summary")));
		json_t *fl = json_object_get(o, "failures");
		assert_int_equal(json_array_size(fl), 2);
		assert_string_equal(jget(json_array_get(fl, 0), "task"), "fetch");
		assert_string_equal(jget(json_array_get(fl, 1), "task"), "render");
		assert_non_null(strstr(jget(o, "text"), "⚠️ fetch: generation "
				       "failed — temporary failure (exit 75): "
				       "API quota exceeded"));
		assert_non_null(strstr(jget(o, "text"), "⚠️ render: generation "
				       "failed — "));
		json_decref(o);
	}
	orchestrator_report_dispose(&rep);

	/* The retry runs the tasks again (nothing was generated). */
	rc = run(2, &rep, &err);
	assert_int_equal(rc, SC_ETASK);
	assert_int_equal(task_runs(), 4);
	orchestrator_report_dispose(&rep);
}

static void first_error_permanence_is_kept(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("auth", "echo 'bad key' >&2; exit 78");
	add_task("other", "exit 1");
	assert_int_equal(run(1, &rep, &err), SC_ETASK);
	assert_true(err.permanent);
	assert_non_null(strstr(err.msg, "task auth:"));
	orchestrator_report_dispose(&rep);
}

static void skip_and_failure_without_deliverable_fails(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("quiet", "exit 0"); /* no output: skip */
	add_task("broken", "echo '{\"summary\": ' ; exit 0"); /* bad JSON */
	assert_int_equal(run(1, &rep, &err), SC_EPROTO);
	assert_non_null(strstr(err.msg, "task broken:"));
	assert_int_equal(rep.n_skipped, 1);
	assert_int_equal(rep.n_failed, 1);
	assert_false(marked());
	assert_int_equal(state_of("A"), SEND_NONE);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	json_t *o = request_json("/a", 0);
	assert_string_equal(jget(o, "kind"), "failure_notice");
	json_decref(o);
	orchestrator_report_dispose(&rep);
}

static void notice_failure_never_replaces_the_task_error(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	fake_http_set_default(srv, "/a", 500, NULL, "receiver down");
	fake_http_set_default(srv, "/b", 503, "Retry-After: 999", "busy");
	add_task("gen", "echo 'model quota' >&2; exit 2");
	assert_int_equal(run(1, &rep, &err), SC_ETASK);
	assert_int_equal(err.code, SC_ETASK);
	assert_non_null(strstr(err.msg, "task gen:"));
	assert_non_null(strstr(err.msg, "model quota"));
	assert_int_equal(err.http_status, 0);
	assert_int_equal(err.retry_after_ms, 0);
	assert_int_equal(rep.n_notices_failed, 2);
	assert_int_equal(rep.n_notices_sent, 0);
	assert_non_null(strstr(rep.details_json, "notice_errors"));
	assert_false(marked());
	orchestrator_report_dispose(&rep);
}

/* ---- the success path --------------------------------------------------- */

static void partial_success_delivers_once_with_notice_lines(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("summary", "echo 'Revenue up 3%'");
	add_task("charts", "echo 'chart service down' >&2; exit 1");
	add_task("previews", "echo '{\"previews\": [\"p1\", \"p2\"]}'");
	assert_int_equal(run(1, &rep, &err), 0);
	assert_int_equal(err.code, 0);
	assert_true(marked());
	assert_int_equal(state_of("A"), SEND_SENT);
	assert_int_equal(state_of("B"), SEND_SENT);
	const char *paths[] = {"/a", "/b"};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fake_http_count(srv, paths[i]), 1);
		json_t *o = request_json(paths[i], 0);
		assert_string_equal(jget(o, "kind"), "result");
		assert_string_equal(jget(o, "summary"), "Revenue up 3%");
		assert_string_equal(jget(o, "slot"), "2026-11-27T17:00:00Z");
		assert_int_equal(json_array_size(json_object_get(o, "previews")), 2);
		json_t *fl = json_object_get(o, "failures");
		assert_int_equal(json_array_size(fl), 1);
		assert_string_equal(jget(json_array_get(fl, 0), "task"), "charts");
		assert_non_null(strstr(jget(json_array_get(fl, 0), "error"),
				       "chart service down"));
		json_decref(o);
	}
	orchestrator_report_dispose(&rep);

	/* Once done, never again: no task run, nothing sent. */
	assert_int_equal(run(2, &rep, &err), 0);
	assert_true(rep.already_marked);
	assert_false(rep.ran_tasks);
	assert_int_equal(task_runs(), 3);
	assert_int_equal(fake_http_count(srv, NULL), 2);
	orchestrator_report_dispose(&rep);
}

/*
 * Issue 11, item 10: a summary over 2 MiB used to fail ("result summary
 * too large", no task, no size), be retried with the same output and be
 * lost. Three tasks of 800000 bytes each give 2400004 bytes with the blank
 * lines: the result is cut to SPEC_RESULT_MAX, says so with both sizes,
 * and is delivered; the slot is done.
 */
static void issue11_large_result_is_cut_not_lost(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;
	char path[400];

	snprintf(path, sizeof(path), "%s/out.jsonl", F.dir);
	F.targets[2] = (struct target_spec){.name = "C", .kind = TARGET_FILE,
					    .path = path};
	F.target_names[0] = "C";
	F.sched.n_targets = 1;
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = {"one", "two", "three"};
		add_task(names[i], "head -c 800000 /dev/zero | tr '\\0' a");
		F.tasks[i].max_output = SPEC_RESULT_MAX;
	}
	int rc = run(1, &rep, &err);
	if (rc)
		fail_msg("run failed: %s", err.msg);
	assert_true(marked());
	orchestrator_report_dispose(&rep);

	size_t cap = 16u << 20;
	char *text = malloc(cap);
	assert_non_null(text);
	tu_slurp(path, text, cap);
	char *nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_string_equal(nl + 1, ""); /* one message */
	*nl = '\0';
	json_t *o = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(o);
	const char *sum = jget(o, "summary");
	assert_non_null(sum);
	size_t len = strlen(sum);
	printf("# summary of %zu bytes (limit %zu), ends: %s\n", len,
	       SPEC_RESULT_MAX, strrchr(sum, '['));
	assert_true(len > SPEC_RESULT_MAX - 8);
	assert_true(len < SPEC_RESULT_MAX + 200);
	assert_non_null(strstr(sum, "[surecron: result truncated: the tasks "
				    "gave 2400004 bytes of summaries and "
				    "previews; a result carries at most "
				    "1048576]"));
	/* What was kept is the start, in task order. */
	assert_int_equal(strspn(sum, "a"), 800000);
	json_decref(o);
}

static void preview_alone_is_a_deliverable(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("fails", "exit 9");
	add_task("pv", "echo '{\"previews\": [\"only a preview\"]}'");
	assert_int_equal(run(1, &rep, &err), 0);
	assert_true(marked());
	json_t *o = request_json("/a", 0);
	assert_true(json_is_null(json_object_get(o, "summary")));
	assert_int_equal(json_array_size(json_object_get(o, "failures")), 1);
	json_decref(o);
	orchestrator_report_dispose(&rep);
}

static void delivery_failure_retry_resends_only_to_b_from_outbox(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;
	struct fake_request r1, r2;
	char k1[80], k2[80];

	add_task("gen", "echo \"report generated at attempt $SURECRON_ATTEMPT\"");
	fake_http_push(srv, "/b", 500, NULL, "temporarily broken", 0);
	assert_int_equal(run(1, &rep, &err), SC_EDELIVERY);
	assert_int_equal(err.http_status, 500);
	assert_non_null(strstr(err.msg, "target B"));
	assert_false(marked());
	assert_int_equal(state_of("A"), SEND_SENT);
	assert_int_equal(state_of("B"), SEND_FAILED);
	assert_int_equal(task_runs(), 1);
	orchestrator_report_dispose(&rep);

	assert_int_equal(run(2, &rep, &err), 0);
	assert_true(rep.resent);
	assert_false(rep.ran_tasks);
	assert_int_equal(task_runs(), 1); /* tasks not run again */
	assert_int_equal(rep.delivery.n_sent, 1);
	assert_int_equal(rep.delivery.n_guarded, 1);
	assert_int_equal(fake_http_count(srv, "/a"), 1); /* A not resent */
	assert_non_null(strstr(rep.details_json, "\"resent\":true"));
	assert_non_null(strstr(rep.details_json, "\"guarded\":1"));
	assert_int_equal(fake_http_count(srv, "/b"), 2);
	assert_true(marked());
	/* B's second copy is the stored message, byte for byte, with the
	 * same idempotency key. */
	assert_true(fake_http_request(srv, "/b", 0, &r1));
	assert_true(fake_http_request(srv, "/b", 1, &r2));
	assert_string_equal(r1.body, r2.body);
	assert_non_null(strstr(r2.body, "at attempt 1"));
	assert_true(fake_request_header(&r1, "Idempotency-Key", k1, sizeof(k1)));
	assert_true(fake_request_header(&r2, "Idempotency-Key", k2, sizeof(k2)));
	assert_string_equal(k1, k2);
	fake_request_dispose(&r1);
	fake_request_dispose(&r2);
	orchestrator_report_dispose(&rep);
}

/* The abandoned row of target t for the slot, its details parsed (NULL
 * when there is none). */
static json_t *abandoned_of(const char *t)
{
	struct ledger_filter f = {.schedule = "weekly",
				  .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX,
				  .outcome = LEDGER_ABANDONED};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	json_t *found = NULL;

	assert_int_equal(store_ledger_query(F.store, &f, &rows, &n, NULL), 0);
	for (size_t i = 0; i < n && !found; i++) {
		json_t *d = json_loads(rows[i].details_json, 0, NULL);
		assert_non_null(d);
		if (strcmp(jget(d, "target"), t) == 0) {
			assert_int_equal(rows[i].slot_ms, SLOT);
			assert_int_equal(rows[i].job_id, 7);
			assert_string_equal(rows[i].error_class,
					    "target_removed");
			found = d;
		} else {
			json_decref(d);
		}
	}
	store_ledger_rows_free(rows, n);
	return found;
}

/*
 * Issue 43: the targets of a schedule change between two attempts (a
 * reload). Copies of removed targets are closed, each with its row
 * saying whether it may have arrived (UNKNOWN: yes; FAILED: no); the new
 * target gets the message the first attempt generated (tasks not run
 * again); a target taken back later does not reopen its closed copy.
 */
static void issue43_removed_targets_copies_abandoned(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;
	json_t *d;

	add_task("gen", "echo \"report of attempt $SURECRON_ATTEMPT\"");
	fake_http_push(srv, "/a", 500, NULL, "down", 0);
	fake_http_push(srv, "/b", 500, NULL, "down", 0);
	assert_int_equal(run(1, &rep, &err), SC_EDELIVERY);
	orchestrator_report_dispose(&rep);
	/* What an interrupted send of B leaves. */
	assert_int_equal(store_outbox_set_state(F.store, "weekly", SLOT, "B",
						SEND_UNKNOWN, NULL), 0);
	assert_int_equal(state_of("A"), SEND_FAILED);

	/* The reload: [A, B] -> [C]. */
	F.target_names[0] = "C";
	F.sched.n_targets = 1;
	assert_int_equal(run(2, &rep, &err), 0);
	assert_false(rep.ran_tasks);
	assert_true(rep.resent);
	assert_int_equal(task_runs(), 1);
	assert_int_equal(rep.delivery.n_abandoned, 2);
	assert_int_equal(rep.delivery.n_duplicates, 0);
	assert_non_null(strstr(rep.details_json, "\"abandoned\":2"));
	assert_true(marked());
	assert_int_equal(state_of("A"), SEND_ABANDONED);
	assert_int_equal(state_of("B"), SEND_ABANDONED);
	assert_int_equal(state_of("C"), SEND_SENT);
	json_t *c = request_json("/c", 0);
	assert_non_null(strstr(jget(c, "summary"), "report of attempt 1"));
	json_decref(c);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 1);
	d = abandoned_of("A");
	assert_non_null(d);
	assert_true(json_is_false(json_object_get(d, "may_have_arrived")));
	assert_string_equal(jget(d, "state"), "failed");
	json_decref(d);
	d = abandoned_of("B");
	assert_non_null(d);
	assert_true(json_is_true(json_object_get(d, "may_have_arrived")));
	json_decref(d);
	orchestrator_report_dispose(&rep);

	/* Back to [A, C]: a flush of the slot (as a later attempt makes)
	 * leaves A's copy closed and sends nothing to it. */
	F.target_names[0] = "A";
	F.target_names[1] = "C";
	F.sched.n_targets = 2;
	struct ledger_filter lf = {.schedule = "weekly",
				   .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_ABANDONED};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(store_ledger_query(F.store, &lf, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	assert_int_equal(n, 2);
	struct outbox_slot ds = {.store = F.store, .schedule = "weekly",
				 .slot_ms = SLOT, .attempt = 3};
	const struct target_spec *ts[2] = {&F.targets[0], &F.targets[2]};
	struct outbox_report orep = {0};
	ds.targets = ts;
	ds.n_targets = 2;
	assert_int_equal(outbox_flush(&ds, &orep, &err), 0);
	assert_int_equal(orep.n_sent, 0);
	assert_int_equal(orep.n_guarded, 1);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(state_of("A"), SEND_ABANDONED);
}

static void all_skipped_succeeds_silently(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("s1", "exit 0");
	add_task("s2", "echo '{\"skip\": true, \"reason\": \"holiday\"}'");
	assert_int_equal(run(1, &rep, &err), 0);
	assert_int_equal(rep.n_skipped, 2);
	assert_int_equal(fake_http_count(srv, NULL), 0);
	assert_true(marked());
	assert_int_equal(state_of("A"), SEND_NONE);
	orchestrator_report_dispose(&rep);
}

static void marked_slot_is_never_run_again(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("gen", "echo hello");
	assert_int_equal(store_slot_mark(F.store, "weekly", SLOT, NULL), 0);
	assert_int_equal(run(1, &rep, &err), 0);
	assert_true(rep.already_marked);
	assert_int_equal(task_runs(), 0);
	assert_int_equal(fake_http_count(srv, NULL), 0);
	orchestrator_report_dispose(&rep);
}

/* ctx.mark_at_finish (worker.c's way): a delivered run and an
 * all-skipped one ask the caller for the marker (rep.mark_slot) and do
 * not write it; a resend asks the same once every target is SENT; a
 * failed run does not ask. */
static void mark_at_finish_leaves_the_marker_to_the_caller(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	F.ctx.mark_at_finish = true;
	add_task("gen", "echo hello");
	fake_http_set_default(srv, "/b", 503, NULL, "down");
	assert_int_not_equal(run(1, &rep, &err), 0);
	assert_false(rep.mark_slot);
	assert_false(marked());
	orchestrator_report_dispose(&rep);

	fake_http_set_default(srv, "/b", 200, NULL, "ok");
	assert_int_equal(run(2, &rep, &err), 0);
	assert_true(rep.resent);
	assert_true(rep.mark_slot);
	assert_false(marked());
	assert_int_equal(state_of("A"), SEND_SENT);
	assert_int_equal(state_of("B"), SEND_SENT);
	orchestrator_report_dispose(&rep);

	/* The caller's commit never came (a crash): the next attempt sends
	 * nothing again and asks once more. */
	size_t sent = fake_http_count(srv, NULL);
	assert_int_equal(run(3, &rep, &err), 0);
	assert_true(rep.mark_slot);
	assert_int_equal(fake_http_count(srv, NULL), sent);
	assert_int_equal(task_runs(), 1);
	orchestrator_report_dispose(&rep);

	/* All skipped: asked too, nothing written. */
	F.sched.name = "quiet";
	F.sched.n_tasks = 0;
	add_task("s1", "exit 0");
	assert_int_equal(run(1, &rep, &err), 0);
	assert_true(rep.mark_slot);
	bool m = true;
	assert_int_equal(store_slot_is_marked(F.store, "quiet", SLOT, &m, NULL),
			 0);
	assert_false(m);
	orchestrator_report_dispose(&rep);
}

static void unknown_target_fails_permanently_before_tasks(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("gen", "echo hello");
	F.target_names[1] = "nope";
	assert_int_equal(run(1, &rep, &err), SC_ECONFIG);
	assert_true(err.permanent);
	assert_int_equal(task_runs(), 0);
	orchestrator_report_dispose(&rep);
}

/* ---- lost-slot alerts --------------------------------------------------- */

static void lost_alert_only_when_alert_targets_are_set(void **state)
{
	struct store_dead_job d = {.job_id = 7, .slot_ms = SLOT, .attempt = 4};
	const struct alert_ctx a = {.store = F.store, .config = F.ctx.config};
	struct alert_report rep;

	snprintf(d.schedule, sizeof(d.schedule), "weekly");
	snprintf(d.error_msg, sizeof(d.error_msg),
		 "task gen: API quota exceeded");
	assert_int_equal(alert_raise_lost(F.store, F.ctx.config, &d, NULL), 0);
	assert_int_equal(alert_tick(&a, &rep, NULL), 0);
	assert_int_equal(rep.n_sent, 0);
	assert_int_equal(fake_http_count(srv, NULL), 0);

	/* Two names, one no target (only a config made by hand can hold
	 * one: a load refuses it, issue 43): the other gets the alert.
	 * SURECRON_ALERT_TARGETS is the load's to resolve, never read
	 * here. */
	setenv("SURECRON_ALERT_TARGETS", "C", 1);
	F.alert_names[0] = "alerts";
	F.alert_names[1] = "nosuch";
	F.cfg.alert_targets = F.alert_names;
	F.cfg.n_alert_targets = 2;
	d.slot_ms = SLOT + 1000;
	assert_int_equal(alert_raise_lost(F.store, F.ctx.config, &d, NULL), 0);
	assert_int_equal(alert_tick(&a, &rep, NULL), 0);
	assert_int_equal(rep.n_sent, 1);
	assert_int_equal(fake_http_count(srv, "/alerts"), 1);
	assert_int_equal(fake_http_count(srv, NULL), 1);
	json_t *o = request_json("/alerts", 0);
	assert_string_equal(jget(o, "kind"), "alert");
	assert_string_equal(jget(o, "reason"), "lost");
	assert_string_equal(jget(o, "error"), "task gen: API quota exceeded");
	assert_non_null(strstr(jget(o, "command"), "surecron retry 7"));
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 4);
	json_decref(o);
	unsetenv("SURECRON_ALERT_TARGETS");

	/* Another list. */
	F.alert_names[0] = "C";
	F.alert_names[1] = NULL;
	F.cfg.alert_targets = F.alert_names;
	F.cfg.n_alert_targets = 1;
	d.slot_ms = SLOT + 2000;
	assert_int_equal(alert_raise_lost(F.store, F.ctx.config, &d, NULL), 0);
	assert_int_equal(alert_tick(&a, &rep, NULL), 0);
	assert_int_equal(rep.n_sent, 1);
	assert_int_equal(fake_http_count(srv, "/c"), 1);

	/* The same death raised again (another node, the sweep): nothing. */
	assert_int_equal(alert_raise_lost(F.store, F.ctx.config, &d, NULL), 0);
	assert_int_equal(alert_tick(&a, &rep, NULL), 0);
	assert_int_equal(rep.n_sent, 0);
	assert_int_equal(fake_http_count(srv, "/c"), 1);

	/* `alerts: on` without lost: no alert. */
	F.cfg.alert_on = CONFIG_ALERT_ON_MISSED;
	d.slot_ms = SLOT + 3000;
	assert_int_equal(alert_raise_lost(F.store, F.ctx.config, &d, NULL), 0);
	assert_int_equal(alert_tick(&a, &rep, NULL), 0);
	assert_int_equal(rep.n_sent, 0);
	assert_int_equal(fake_http_count(srv, "/c"), 1);
}

/* ---- the job glue: the queue sees what the rule decided ---------------- */

#define MIN 60000LL
static const struct sc_retry_policy weekly_policy = {4, SC_BACKOFF_EXPONENTIAL,
						     30 * MIN};

/* The worker's options for a job run with the fixture's slot context. */
static const struct worker_opts *wopts(const struct orchestrator_ctx *c)
{
	static struct worker_opts o;

	memset(&o, 0, sizeof(o));
	o.store = c->store;
	o.clock = c->clock;
	o.config = c->config;
	o.auths = c->auths;
	o.n_auths = c->n_auths;
	o.run_task = c->run_task;
	o.run_task_ud = c->run_task_ud;
	return &o;
}

static void claim(struct store_job *job)
{
	size_t n = 0;

	assert_int_equal(queue_claim(F.store, "w1", 5 * MIN, job, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
}

static size_t ledger_count(const char *outcome, char *cls, size_t n)
{
	struct ledger_filter f = {.schedule = "weekly", .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t nr = 0;

	assert_int_equal(store_ledger_query(F.store, &f, &rows, &nr, NULL), 0);
	if (cls && nr)
		snprintf(cls, n, "%s", rows[nr - 1].error_class);
	store_ledger_rows_free(rows, nr);
	return nr;
}

/* The story surecron exists for: a weekly run whose tasks all fail (an
 * API quota) must be retried, not completed. */
static void failed_run_fails_the_job_and_the_retry_heals_it(void **state)
{
	struct store_job job;
	struct worker_result jr;
	char cls[32] = "", flag[400];

	snprintf(flag, sizeof(flag), "%s/quota_ok", F.dir);
	char body[600];
	snprintf(body, sizeof(body),
		 "[ -e '%s' ] || { echo 'API quota exceeded' >&2; exit 75; }\n"
		 "echo 'weekly digest'", flag);
	add_task("digest", body);
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &weekly_policy,
				       NULL, NULL, NULL), 0);
	claim(&job);
	int64_t t1 = sc_clock_now_ms(F.clock);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_false(jr.completed);
	assert_false(jr.dead);
	assert_int_equal(jr.next_ms, t1 + 30 * MIN);
	assert_string_equal(jr.error_class, "task");
	assert_non_null(strstr(jr.run_err.msg, "API quota exceeded"));
	assert_int_equal(ledger_count(LEDGER_FAILED, cls, sizeof(cls)), 1);
	assert_string_equal(cls, "task");
	assert_int_equal(ledger_count(LEDGER_SUCCESS, NULL, 0), 0);
	assert_int_equal(fake_http_count(srv, "/a"), 1); /* the notice */
	worker_result_dispose(&jr);

	/* The quota is back; the retry is due 30 min later and succeeds. */
	FILE *f = fopen(flag, "w");
	assert_non_null(f);
	fclose(f);
	sc_clock_set_ms(F.clock, t1 + 30 * MIN);
	claim(&job);
	assert_int_equal(job.attempts, 2);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_true(jr.completed);
	assert_int_equal(ledger_count(LEDGER_SUCCESS, NULL, 0), 1);
	assert_true(marked());
	json_t *o = request_json("/a", 1);
	assert_string_equal(jget(o, "kind"), "result");
	assert_string_equal(jget(o, "summary"), "weekly digest");
	json_decref(o);
	struct store_job j2;
	assert_int_equal(store_job_get(F.store, job.id, &j2, NULL), 0);
	assert_int_equal(j2.state, JOB_DONE);
	worker_result_dispose(&jr);
}

static void delivery_failure_fails_the_job_and_retry_resends(void **state)
{
	struct store_job job;
	struct worker_result jr;
	char cls[32] = "";

	add_task("gen", "echo report");
	fake_http_push(srv, "/b", 503, "Retry-After: 3600", "maintenance", 0);
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &weekly_policy,
				       NULL, NULL, NULL), 0);
	claim(&job);
	int64_t t1 = sc_clock_now_ms(F.clock);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_false(jr.completed);
	assert_string_equal(jr.error_class, "delivery");
	/* The receiver's Retry-After (1 h) beats the 30 min backoff. */
	assert_int_equal(jr.next_ms, t1 + 60 * MIN);
	assert_int_equal(ledger_count(LEDGER_FAILED, cls, sizeof(cls)), 1);
	assert_string_equal(cls, "delivery");
	int64_t next = jr.next_ms;
	worker_result_dispose(&jr);

	/* Not before the hint. */
	sc_clock_set_ms(F.clock, next - 1);
	size_t n = 9;
	assert_int_equal(queue_claim(F.store, "w1", 5 * MIN, &job, 1, &n, NULL), 0);
	assert_int_equal(n, 0);
	sc_clock_set_ms(F.clock, next);
	claim(&job);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_true(jr.completed);
	assert_true(jr.rep.resent);
	assert_int_equal(task_runs(), 1);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 2);
	worker_result_dispose(&jr);
}

static void lost_slot_alerts_only_configured_targets(void **state)
{
	static const struct sc_retry_policy once = {1, SC_BACKOFF_EXPONENTIAL,
						    MIN};
	struct store_job job;
	struct worker_result jr;

	add_task("gen", "echo 'still broken' >&2; exit 1");
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &once, NULL,
				       NULL, NULL), 0);
	claim(&job);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_true(jr.dead);
	assert_int_equal(jr.n_alerts_sent, 0);
	assert_int_equal(fake_http_count(srv, "/alerts"), 0);
	assert_int_equal(ledger_count(LEDGER_LOST, NULL, 0), 1);
	worker_result_dispose(&jr);

	/* Same again with alert targets set: the alert goes out. */
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT + MIN, &once,
				       NULL, NULL, NULL), 0);
	F.alert_names[0] = "alerts";
	F.alert_names[1] = NULL;
	F.cfg.alert_targets = F.alert_names;
	F.cfg.n_alert_targets = 1;
	sc_clock_set_ms(F.clock, SLOT + 2 * MIN);
	/* Another slot's alert, raised and not yet sent: the worker sends
	 * its own slot's alert only (alert_send_lost); the other waits for
	 * the alerter's pass. */
	struct store_alert other = {.schedule = "weekly", .reason = "lost",
				    .error_msg = "older loss",
				    .slot_ms = SLOT - 7 * 24 * 60 * MIN,
				    .last_slot_ms = SLOT - 7 * 24 * 60 * MIN,
				    .n_slots = 1, .generation = 1,
				    .attempts = 1, .status = ALERT_OPEN};
	assert_int_equal(store_alert_raise(F.store, &other, NULL, NULL, NULL),
			 0);
	claim(&job);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_true(jr.dead);
	assert_int_equal(jr.n_alerts_sent, 1);
	assert_int_equal(fake_http_count(srv, "/alerts"), 1);
	json_t *o = request_json("/alerts", 0);
	assert_string_equal(jget(o, "kind"), "alert");
	assert_non_null(strstr(jget(o, "error"), "still broken"));
	json_decref(o);
	worker_result_dispose(&jr);
	struct alert_ctx ac = {.store = F.store, .config = &F.cfg};
	struct alert_report rep;
	assert_int_equal(alert_tick(&ac, &rep, NULL), 0);
	assert_int_equal(rep.n_sent, 1);
	assert_int_equal(fake_http_count(srv, "/alerts"), 2);
}

static void permanent_task_failure_kills_the_job_at_once(void **state)
{
	struct store_job job;
	struct worker_result jr;

	add_task("gen", "echo 'invalid API key' >&2; exit 78");
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &weekly_policy,
				       NULL, NULL, NULL), 0);
	claim(&job);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_true(jr.dead);
	assert_int_equal(job.attempts, 1);
	assert_int_equal(ledger_count(LEDGER_LOST, NULL, 0), 1);
	worker_result_dispose(&jr);
}

/*
 * A finish that meets a full disk is recorded once there is room: the
 * worker tries it again (as after a lost connection), so the job does not
 * stay ACTIVE until its lease runs out, holding a `queue` schedule's later
 * slots all that time (a slot was lost that way under a full disk, in
 * test_disk_full). The disk is full for the first try only
 * (worker.finish_full:err@1).
 */
static void a_finish_on_a_full_disk_is_recorded_when_room_returns(void **state)
{
	struct store_job job, after;
	struct worker_result jr;

	TU_NEED_TEST_SEAMS(); /* the worker.finish_full failpoint */
	add_task("digest", "echo 'weekly digest'");
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &weekly_policy,
				       NULL, NULL, NULL), 0);
	claim(&job);
	setenv("SURECRON_FAILPOINTS", "worker.finish_full:err@1", 1);
	int rc = worker_run_job(wopts(&F.ctx), &job, &jr, NULL);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, 0);
	assert_true(jr.completed);
	assert_int_equal(store_job_get(F.store, job.id, &after, NULL), 0);
	assert_int_equal(after.state, JOB_DONE);
	assert_int_equal(ledger_count(LEDGER_SUCCESS, NULL, 0), 1);
	worker_result_dispose(&jr);
}

/* A worker whose lease was taken over must not run or send anything. */
static void lost_lease_runs_and_sends_nothing(void **state)
{
	struct store_job stale, fresh;
	struct worker_result jr;
	struct sc_err err = {0};
	int n = 0;

	add_task("gen", "echo report");
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &weekly_policy,
				       NULL, NULL, NULL), 0);
	claim(&stale);
	/* The worker hangs past its lease; the job is recovered and claimed
	 * by another worker. */
	sc_clock_advance_ms(F.clock, 6 * MIN);
	assert_int_equal(queue_recover(F.store, QUEUE_STALL_LIMIT, &n, NULL), 0);
	assert_int_equal(n, 1);
	claim(&fresh);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &stale, &jr, &err),
			 SC_ELEASE);
	assert_int_equal(task_runs(), 0);
	assert_int_equal(fake_http_count(srv, NULL), 0);
	assert_false(marked());
	worker_result_dispose(&jr);
	/* The new owner runs it normally. */
	assert_int_equal(worker_run_job(wopts(&F.ctx), &fresh, &jr, &err), 0);
	assert_true(jr.completed);
	assert_int_equal(task_runs(), 1);
	worker_result_dispose(&jr);
}

/*
 * Two nodes recover at the same moment (each has its own store handle).
 * Node X's recovery declares job 1 dead (its last attempt stalled); node
 * Y's recovery, at the same instant, only gives job 2 back for a retry
 * (a node whose clock lags claimed it and died). The lost slot of job 1
 * is alerted exactly once, by X: Y must not alert for the "lost" row X
 * wrote, even though that row is as fresh as its own recovery.
 */
static void two_recoveries_alert_a_lost_slot_once(void **state)
{
	static const struct sc_retry_policy once = {1, SC_BACKOFF_EXPONENTIAL,
						    MIN};
	struct store *y = NULL, *c = NULL;
	struct sc_clock *lag = NULL;
	struct store_job job;
	struct orchestrator_ctx cx, cy;
	char url[400];
	size_t lost_x = 9, lost_y = 9;
	int nx = -1, ny = -1;

	snprintf(url, sizeof(url), "sqlite:%s/s.db", F.dir);
	assert_int_equal(store_open(url, F.clock, &y, NULL), 0);
	F.alert_names[0] = "alerts";
	F.alert_names[1] = NULL;
	F.cfg.alert_targets = F.alert_names;
	F.cfg.n_alert_targets = 1;
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &once, NULL,
				       NULL, NULL), 0);
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT + MIN,
				       &weekly_policy, NULL, NULL, NULL), 0);
	claim(&job); /* job 1; its worker dies */
	assert_int_equal(job.slot_ms, SLOT);
	int64_t now = SLOT + 30 * MIN;
	sc_clock_set_ms(F.clock, now);

	cx = F.ctx;
	assert_int_equal(worker_recover(wopts(&cx), QUEUE_STALL_LIMIT, &nx,
					&lost_x, NULL), 0);
	assert_int_equal(nx, 1);
	assert_int_equal(lost_x, 1);

	/* A node 10 minutes behind claims job 2 and dies: by the shared
	 * clock its lease ran out at now - 5 min. */
	lag = sc_clock_virtual_new(now - 10 * MIN);
	assert_int_equal(store_open(url, lag, &c, NULL), 0);
	size_t n = 0;
	assert_int_equal(queue_claim(c, "lagging", 5 * MIN, &job, 1, &n, NULL),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(job.slot_ms, SLOT + MIN);

	cy = F.ctx;
	cy.store = y;
	assert_int_equal(worker_recover(wopts(&cy), QUEUE_STALL_LIMIT, &ny,
					&lost_y, NULL), 0);
	unsetenv("SURECRON_ALERT_TARGETS");
	assert_int_equal(fake_http_count(srv, "/alerts"), 1);
	assert_int_equal(ny, 1);
	assert_int_equal(lost_y, 0);
	assert_int_equal(ledger_count(LEDGER_LOST, NULL, 0), 1);
	json_t *o = request_json("/alerts", 0);
	assert_string_equal(jget(o, "kind"), "alert");
	assert_non_null(strstr(jget(o, "error"), "attempts used up"));
	json_decref(o);
	struct store_job j2;
	assert_int_equal(store_job_find(F.store, "weekly", SLOT + MIN, &j2,
					NULL), 0);
	assert_int_equal(j2.state, JOB_READY);
	store_close(c);
	sc_clock_free(lag);
	store_close(y);
}

/* ---- the run_task hook (simulate) ------------------------------------- */

/* Fails task "gen" with a quota error, runs every other task for real. */
static int hook(void *ud, const struct task_spec *spec,
		const struct task_ctx *tctx, struct task_result *out)
{
	int *calls = ud;

	(*calls)++;
	if (strcmp(spec->name, "gen") == 0) {
		memset(out, 0, sizeof(*out));
		int rc = task_fail(out, spec->name, SC_ETASK, "quota exceeded");
		out->err.retry_after_ms = 5000;
		return rc;
	}
	return task_run(spec, tctx, out);
}

static void run_task_hook_replaces_task_run(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;
	int calls = 0;

	add_task("gen", "echo hello");
	add_task("other", "exit 0");
	F.ctx.run_task = hook;
	F.ctx.run_task_ud = &calls;
	assert_int_equal(run(1, &rep, &err), SC_ETASK);
	assert_int_equal(calls, 2);
	/* gen never ran (the hook answered), other ran for real. */
	assert_int_equal(task_runs(), 1);
	assert_non_null(strstr(err.msg, "quota exceeded"));
	assert_int_equal(err.retry_after_ms, 5000);
	assert_false(marked());
	orchestrator_report_dispose(&rep);

	/* Without the hook, task_run is used again: the slot succeeds. */
	F.ctx.run_task = NULL;
	assert_int_equal(run(2, &rep, &err), 0);
	assert_int_equal(task_runs(), 3);
	assert_true(marked());
	orchestrator_report_dispose(&rep);
}

/* ---- issue 13: hollow results (expect) and the notice policy ----------- */

/* A result that falls short of `expect` is a failed run: cause
 * expectation, retried (not permanent: the job is READY again), the
 * failure path's notice, nothing staged, no guard, no marker. */
static void issue13_expect_below_threshold_fails_and_is_retried(void **state)
{
	struct store_job job, j2;
	struct worker_result jr;
	char cls[32] = "";

	add_task("list", "echo '{\"summary\": \"top stories\", \"previews\": "
			 "[\"only one\"]}'");
	F.sched_x.expect_min_previews = 2;
	assert_int_equal(queue_enqueue(F.store, "weekly", SLOT, &weekly_policy,
				       NULL, NULL, NULL), 0);
	claim(&job);
	int64_t t1 = sc_clock_now_ms(F.clock);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_false(jr.completed);
	assert_false(jr.dead);
	assert_true(jr.rep.expectation_failed);
	assert_string_equal(jr.error_class, "expectation");
	assert_false(jr.run_err.permanent);
	assert_non_null(strstr(jr.run_err.msg, "expect.min_previews: 1 "
				"preview, at least 2 expected"));
	assert_int_equal(jr.next_ms, t1 + 30 * MIN);
	assert_int_equal(store_job_get(F.store, job.id, &j2, NULL), 0);
	assert_int_equal(j2.state, JOB_READY);
	assert_int_equal(ledger_count(LEDGER_FAILED, cls, sizeof(cls)), 1);
	assert_string_equal(cls, "expectation");
	/* Nothing staged, no guard, no marker. */
	assert_false(marked());
	assert_int_equal(state_of("A"), SEND_NONE);
	assert_int_equal(state_of("B"), SEND_NONE);
	/* The failure notice (notices: every), saying what fell short. */
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	json_t *o = request_json("/a", 0);
	assert_string_equal(jget(o, "kind"), "failure_notice");
	assert_non_null(strstr(jget(o, "summary"), "expect.min_previews"));
	json_decref(o);
	worker_result_dispose(&jr);

	/* The retry that meets the expectation delivers. */
	add_task("more", "echo '{\"previews\": [\"a second\"]}'");
	sc_clock_set_ms(F.clock, t1 + 30 * MIN);
	claim(&job);
	assert_int_equal(job.attempts, 2);
	assert_int_equal(worker_run_job(wopts(&F.ctx), &job, &jr, NULL), 0);
	assert_true(jr.completed);
	assert_true(marked());
	worker_result_dispose(&jr);
}

/* Exactly at a threshold is delivered; summary characters are code
 * points, counted across every task's summary. */
static void issue13_expect_at_threshold_and_code_points(void **state)
{
	static const struct {
		int min_previews, min_chars;
		int want_rc; /* 0 delivered, else failed */
		const char *in; /* in the error */
	} rows[] = {
		/* "héllo" (5 characters, 6 bytes) + "ab" = 7 characters. */
		{2, 7, 0, NULL},
		{3, 0, SC_ETASK, "expect.min_previews: 2 previews, at least 3"},
		{0, 8, SC_ETASK, "expect.min_summary_chars: a summary of 7 "
		 "characters, at least 8"},
		{2, 0, 0, NULL},
		{0, 0, 0, NULL},
		/* An all-skipped run has no deliverable: short of expect. */
		{1, 0, SC_ETASK, "expect.min_previews: 0 previews"},
	};

	add_task("one", "printf '{\"summary\": \"h\\303\\251llo\", \"previews\": "
			"[\"p1\"]}'");
	add_task("two", "echo '{\"summary\": \"ab\", \"previews\": [\"p2\"]}'");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct orchestrator_report rep;
		struct sc_err err;
		int64_t slot = SLOT + (int64_t)i * 60000;

		F.sched_x.expect_min_previews = rows[i].min_previews;
		F.sched_x.expect_min_summary_chars = rows[i].min_chars;
		if (i == sizeof(rows) / sizeof(rows[0]) - 1) {
			add_task("empty", "echo '{\"previews\": []}'");
			F.tasks[0] = F.tasks[2];
			F.sched.n_tasks = 1;
		}
		sc_err_clear(&err);
		int rc = orchestrator_run_slot(&F.ctx, &F.sched, slot, 7, 1,
					       &rep, &err);
		if (rc != rows[i].want_rc)
			fail_msg("row %zu: rc %d (%s)", i, rc, err.msg);
		bool m = false;
		assert_int_equal(store_slot_is_marked(F.store, "weekly", slot,
						      &m, NULL), 0);
		assert_int_equal(m, rows[i].want_rc == 0);
		assert_int_equal(rep.expectation_failed, rows[i].want_rc != 0);
		if (rows[i].in && !strstr(err.msg, rows[i].in))
			fail_msg("row %zu: %s", i, err.msg);
		if (rows[i].want_rc) {
			struct outbox_entry e = {0};
			assert_int_equal(store_outbox_get(F.store, "weekly", slot,
							  "A", &e, NULL),
					 SC_ENOENT);
			assert_false(err.permanent);
		}
		orchestrator_report_dispose(&rep);
	}
}

/* Per target: the target's own policy, else the schedule's. final sends
 * nothing on an attempt that will be retried, one notice saying the slot
 * is lost and the attempt count on the attempt that loses it (the last,
 * or a permanent error); none never sends. */
static void issue13_notice_policy_per_target(void **state)
{
	struct orchestrator_report rep;
	struct sc_err err;

	add_task("gen", "echo 'quota' >&2; exit 75");
	F.ctx.max_attempts = 4;
	F.sched_x.notices = NOTICES_FINAL;
	F.targets[1].has_notices = true; /* B: none */
	F.targets[1].notices = NOTICES_NONE;
	for (int a = 1; a <= 3; a++) {
		assert_int_equal(run(a, &rep, &err), SC_ETASK);
		assert_false(rep.is_last_attempt);
		assert_int_equal(rep.n_notices_sent, 0);
		assert_int_equal(rep.n_notices_withheld, 2);
		orchestrator_report_dispose(&rep);
	}
	assert_int_equal(fake_http_count(srv, "/a"), 0);
	assert_int_equal(run(4, &rep, &err), SC_ETASK);
	assert_true(rep.is_last_attempt);
	assert_int_equal(rep.n_notices_sent, 1);
	assert_int_equal(rep.n_notices_withheld, 1);
	orchestrator_report_dispose(&rep);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 0);
	json_t *o = request_json("/a", 0);
	assert_string_equal(jget(o, "kind"), "failure_notice");
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 4);
	assert_non_null(strstr(jget(o, "summary"), "weekly: the slot is lost "
				"after 4 attempts"));
	json_decref(o);

	/* B's own `every` wins over the schedule's `none`. */
	fake_http_reset(srv);
	fake_http_set_default(srv, "/a", 200, NULL, "ok");
	fake_http_set_default(srv, "/b", 200, NULL, "ok");
	F.sched_x.notices = NOTICES_NONE;
	F.targets[1].notices = NOTICES_EVERY;
	assert_int_equal(run(1, &rep, &err), SC_ETASK);
	assert_int_equal(rep.n_notices_sent, 1);
	orchestrator_report_dispose(&rep);
	assert_int_equal(fake_http_count(srv, "/a"), 0);
	assert_int_equal(fake_http_count(srv, "/b"), 1);
	o = request_json("/b", 0);
	assert_true(json_is_null(json_object_get(o, "summary")));
	json_decref(o);

	/* A permanent error loses the slot at attempt 1: final speaks. */
	fake_http_reset(srv);
	fake_http_set_default(srv, "/a", 200, NULL, "ok");
	fake_http_set_default(srv, "/b", 200, NULL, "ok");
	F.sched_x.notices = NOTICES_FINAL;
	F.targets[1].has_notices = false;
	F.tasks[0].argv[0] = F.paths[0];
	add_task("broken", "exit 78");
	F.tasks[0] = F.tasks[1];
	F.sched.n_tasks = 1;
	assert_int_equal(run(1, &rep, &err), SC_ETASK);
	assert_true(err.permanent);
	assert_true(rep.is_last_attempt);
	assert_int_equal(rep.n_notices_sent, 2);
	orchestrator_report_dispose(&rep);
	o = request_json("/b", 0);
	assert_non_null(strstr(jget(o, "summary"), "lost after 1 attempt "));
	json_decref(o);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(all_fail_job_fails_with_notices_and_no_guard),
		T(first_error_permanence_is_kept),
		T(skip_and_failure_without_deliverable_fails),
		T(notice_failure_never_replaces_the_task_error),
		T(partial_success_delivers_once_with_notice_lines),
		T(preview_alone_is_a_deliverable),
		T(issue43_removed_targets_copies_abandoned),
		T(issue11_large_result_is_cut_not_lost),
		T(delivery_failure_retry_resends_only_to_b_from_outbox),
		T(all_skipped_succeeds_silently),
		T(marked_slot_is_never_run_again),
		T(mark_at_finish_leaves_the_marker_to_the_caller),
		T(unknown_target_fails_permanently_before_tasks),
		T(lost_alert_only_when_alert_targets_are_set),
		T(failed_run_fails_the_job_and_the_retry_heals_it),
		T(delivery_failure_fails_the_job_and_retry_resends),
		T(lost_slot_alerts_only_configured_targets),
		T(permanent_task_failure_kills_the_job_at_once),
		T(a_finish_on_a_full_disk_is_recorded_when_room_returns),
		T(lost_lease_runs_and_sends_nothing),
		T(two_recoveries_alert_a_lost_slot_once),
		T(run_task_hook_replaces_task_run),
		T(issue13_expect_below_threshold_fails_and_is_retried),
		T(issue13_expect_at_threshold_and_code_points),
		T(issue13_notice_policy_per_target),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
