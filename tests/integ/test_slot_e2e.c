/*
 * test_slot_e2e.c - one slot end to end, from a surecron.yaml: the config
 * loader's specs, the queue, the orchestrator, real task processes, a
 * file target and a signed webhook on a real HTTP server. The operator's
 * release of a held send (the real binary) runs on SQLite and again on
 * the PostgreSQL of pg_fixture.h.
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
#include <sys/wait.h>

#include <jansson.h>

#include "config.h"
#include "message.h"
#include "fakes/fake_http.h"
#include "queue.h"
#include "store.h"
#include "testutil.h"
#include "worker.h"
#include "daemon_stores.h"

#define SLOT 1795798800000LL /* Friday 2026-11-27T17:00:00Z */

static const char yaml[] =
	"store: sqlite:./s.db\n"
	"targets:\n"
	"  archive: {kind: file, path: ./deliveries.jsonl}\n"
	"  hook: {kind: webhook, url_env: E2E_HOOK_URL, secret_env: E2E_HOOK_SECRET}\n"
	"alerts: {targets: [archive]}\n"
	"schedules:\n"
	"  weekly:\n"
	"    cron: \"0 17 * * 5\"\n"
	"    tz: UTC\n"
	"    targets: [archive, hook]\n"
	"    tasks:\n"
	"      - {name: summary, command: [\"./summary.sh\", \"--week\"]}\n"
	"      - {name: flaky, shell: \"echo 'upstream 502' >&2; exit 75\"}\n"
	"  broken:\n"
	"    cron: \"0 9 * * *\"\n"
	"    tz: UTC\n"
	"    targets: [hook]\n"
	"    retry: {attempts: 1, backoff: fixed, delay: 1m}\n"
	"    tasks:\n"
	"      - {name: only, shell: \"echo 'quota exceeded' >&2; exit 1\"}\n";

static void write_file(const char *dir, const char *name, const char *text,
		       mode_t mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

/* Lines of the file target, parsed; *n gets how many. */
static json_t *lines(const char *dir, size_t *n)
{
	char path[512], line[65536];
	json_t *arr = json_array();
	FILE *f;

	snprintf(path, sizeof(path), "%s/deliveries.jsonl", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		json_t *o = json_loads(line, 0, NULL);
		assert_non_null(o);
		json_array_append_new(arr, o);
	}
	if (f)
		fclose(f);
	*n = json_array_size(arr);
	return arr;
}

static void yaml_to_delivered_slot(void **state)
{
	char dir[256], cfgpath[512], url[256], sig[128], key[80];
	struct config *cfg = NULL;
	struct store *store = NULL;
	struct sc_err err = {0};
	struct fake_http *srv = fake_http_start();
	struct sc_clock *clock = sc_clock_virtual_new(SLOT + 500);
	struct store_job job;
	struct worker_result jr;
	size_t n = 0;

	assert_non_null(srv);
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	write_file(dir, "surecron.yaml", yaml, 0600);
	write_file(dir, "summary.sh",
		   "#!/bin/sh\nprintf '{\"summary\": \"week %s\", "
		   "\"previews\": [\"%s\"]}' \"$1\" \"$SURECRON_SLOT\"\n", 0700);
	setenv("E2E_HOOK_URL", fake_http_url(srv, "/hook", url, sizeof(url)), 1);
	setenv("E2E_HOOK_SECRET", "e2e-secret", 1);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	snprintf(cfgpath, sizeof(cfgpath), "%s/surecron.yaml", dir);
	assert_int_equal(config_load(cfgpath, &cfg, &err), 0);
	assert_int_equal(store_open(cfg->store_url, clock, &store, &err), 0);
	struct worker_opts wo = {.store = store, .config = cfg};

	/* The weekly slot: a partial success. */
	static const struct sc_retry_policy low = {4, SC_BACKOFF_EXPONENTIAL,
						   30 * 60000};
	assert_int_equal(queue_enqueue(store, "weekly", SLOT, &low, NULL, NULL,
				       &err), 0);
	/* The command revived the job at the real "now". */
	sc_clock_set_ms(clock, sc_clock_now_ms(sc_clock_real()) + 1000);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	assert_true(jr.completed);
	worker_result_dispose(&jr);
	/* Marked with the completion (the worker's one commit): never run
	 * again. */
	bool marked = false;
	assert_int_equal(store_slot_is_marked(store, "weekly", SLOT, &marked,
					      &err), 0);
	assert_true(marked);

	json_t *arr = lines(dir, &n);
	assert_int_equal(n, 1);
	json_t *o = json_array_get(arr, 0);
	assert_string_equal(json_string_value(json_object_get(o, "kind")),
			    "result");
	assert_string_equal(json_string_value(json_object_get(o, "summary")),
			    "week --week");
	assert_string_equal(json_string_value(json_array_get(
				    json_object_get(o, "previews"), 0)),
			    "2026-11-27T17:00:00Z");
	json_t *f0 = json_array_get(json_object_get(o, "failures"), 0);
	assert_string_equal(json_string_value(json_object_get(f0, "task")),
			    "flaky");
	json_decref(arr);

	struct fake_request r;
	assert_int_equal(fake_http_count(srv, "/hook"), 1);
	assert_true(fake_http_request(srv, "/hook", 0, &r));
	assert_true(fake_request_header(&r, "X-Surecron-Signature", sig,
					sizeof(sig)));
	assert_true(fake_request_header(&r, "Idempotency-Key", key, sizeof(key)));
	char ts[32], want[MESSAGE_KEY_MAX];
	assert_true(fake_request_header(&r, "X-Surecron-Timestamp", ts,
					sizeof(ts)));
	assert_int_equal(message_sign("e2e-secret", 10, ts, r.body,
				      strlen(r.body), want), 0);
	assert_string_equal(sig + strlen("sha256="), want);
	fake_request_dispose(&r);

	/* The broken slot: one attempt, lost, alert to the archive file. */
	static const struct sc_retry_policy once = {1, SC_BACKOFF_FIXED, 60000};
	assert_int_equal(queue_enqueue(store, "broken", SLOT, &once, NULL, NULL,
				       &err), 0);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	assert_true(jr.dead);
	assert_int_equal(jr.n_alerts_sent, 1);
	worker_result_dispose(&jr);
	arr = lines(dir, &n);
	assert_int_equal(n, 2);
	o = json_array_get(arr, 1);
	assert_string_equal(json_string_value(json_object_get(o, "kind")),
			    "alert");
	assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
			       "quota exceeded"));
	json_decref(arr);
	/* The hook got the weekly result and the broken run's notice. */
	assert_int_equal(fake_http_count(srv, "/hook"), 2);

	store_close(store);
	config_free(cfg);
	sc_clock_free(clock);
	fake_http_stop(srv);
	tu_rmrf(dir);
}

static size_t rows_of(struct store *s, const char *outcome)
{
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

static size_t decision_rows(struct store *s)
{
	return rows_of(s, LEDGER_DECISION);
}

/* The operator loop of on_ambiguous: hold, through the real binary, on
 * SQLite and on PostgreSQL. */
static void held_send_released_by_the_operator(void **state)
{
	static const char held_yaml[] =
		"store: \"%s\"\n"
		"targets:\n"
		"  hook: {kind: webhook, url_env: E2E_HOOK_URL, on_ambiguous: hold}\n"
		"schedules:\n"
		"  weekly:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tz: UTC\n"
		"    targets: [hook]\n"
		"    tasks:\n"
		"      - {name: gen, shell: \"echo report\"}\n";
	char dir[256], cfgpath[512], url[256], cmd[2048], surl[1024],
		text[2048];
	struct config *cfg = NULL;
	struct store *store = NULL;
	struct sc_err err = {0};
	struct fake_http *srv = fake_http_start();
	struct sc_clock *clock = sc_clock_virtual_new(SLOT + 500);
	static const struct sc_retry_policy two = {2, SC_BACKOFF_FIXED, 60000};
	struct store_job job;
	struct worker_result jr;
	size_t n = 0;
	int na = 0;

	assert_non_null(srv);
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(text, sizeof(text), held_yaml,
		 ds_store_url(dir, surl, sizeof(surl)));
	write_file(dir, "surecron.yaml", text, 0600);
	setenv("E2E_HOOK_URL", fake_http_url(srv, "/hook", url, sizeof(url)), 1);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	snprintf(cfgpath, sizeof(cfgpath), "%s/surecron.yaml", dir);
	assert_int_equal(config_load(cfgpath, &cfg, &err), 0);
	assert_int_equal(store_open(cfg->store_url, clock, &store, &err), 0);
	struct worker_opts wo = {.store = store, .config = cfg};

	/* What a crash between the send and its SENT commit leaves. */
	assert_int_equal(store_outbox_put(store, "weekly", SLOT, "hook",
				    "{\"kind\":\"result\"}", NULL, &err), 0);
	assert_int_equal(store_outbox_set_state(store, "weekly", SLOT, "hook",
						SEND_SENDING, &err), 0);
	assert_int_equal(queue_enqueue(store, "weekly", SLOT, &two, NULL, NULL,
				       &err), 0);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	/* Held: nothing sent, the job is dead at once, loudly. */
	assert_true(jr.dead);
	assert_int_equal(jr.rep.delivery.n_held, 1);
	assert_int_equal(fake_http_count(srv, "/hook"), 0);
	worker_result_dispose(&jr);

	/* Two answers at once are refused, and change nothing. */
	struct outbox_entry before = {0}, after = {0};
	assert_int_equal(store_outbox_get(store, "weekly", SLOT, "hook", &before,
					  &err), 0);
	snprintf(cmd, sizeof(cmd), "'%s' release --config='%s' --arrived "
		 "--resend weekly 2026-11-27T17:00:00Z hook >/dev/null 2>&1",
		 tu_bin(), cfgpath);
	na = system(cmd);
	assert_true(WIFEXITED(na) && WEXITSTATUS(na) == 2);
	assert_int_equal(store_outbox_get(store, "weekly", SLOT, "hook", &after,
					  &err), 0);
	assert_int_equal(after.state, before.state);
	store_outbox_entry_dispose(&before);
	store_outbox_entry_dispose(&after);

	/* No decision yet, so no decision row (the refused one wrote none),
	 * and nothing declared. */
	assert_int_equal(decision_rows(store), 0);
	assert_int_equal(rows_of(store, LEDGER_DUPLICATE), 0);

	/* The operator: the copy did not arrive, send it. */
	snprintf(cmd, sizeof(cmd), "'%s' release --config '%s' --resend "
		 "--by=ops-alice weekly 2026-11-27T17:00:00Z hook >/dev/null "
		 "2>&1", tu_bin(), cfgpath);
	assert_int_equal(system(cmd), 0);
	struct outbox_entry e = {0};
	assert_int_equal(store_outbox_get(store, "weekly", SLOT, "hook", &e, &err), 0);
	assert_int_equal(e.state, SEND_FAILED);
	store_outbox_entry_dispose(&e);
	/* The resend is declared before it can go out: the operator saw
	 * no copy, but a worker paused past its lease with its request
	 * not yet out may still deliver one (docs/internals/model.md,
	 * "Finding"). One "duplicate" row, as a flush's resend writes. */
	assert_int_equal(rows_of(store, LEDGER_DUPLICATE), 1);
	/* Releasing again is refused: it is no longer held. */
	na = system(cmd);
	assert_true(WIFEXITED(na) && WEXITSTATUS(na) == 2);
	assert_int_equal(rows_of(store, LEDGER_DUPLICATE), 1);

	/* The decision is in the record (issue 10): one "decision" row for
	 * the slot, naming the target, the decision and who made it, and
	 * `ledger` shows it. */
	assert_int_equal(decision_rows(store), 1);
	struct ledger_filter lf = {.schedule = "weekly",
				   .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_DECISION};
	struct ledger_row *rows = NULL;
	size_t nr = 0;
	assert_int_equal(store_ledger_query(store, &lf, &rows, &nr, &err), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(rows[0].slot_ms, SLOT);
	assert_int_equal(rows[0].job_id, job.id);
	assert_int_equal(rows[0].attempt, 0);
	assert_true(rows[0].finished_ms > 0);
	json_t *det = json_loads(rows[0].details_json, 0, NULL);
	assert_non_null(det);
	assert_string_equal(json_string_value(json_object_get(det, "target")),
			    "hook");
	assert_string_equal(
		json_string_value(json_object_get(det, "decision")), "resend");
	assert_string_equal(json_string_value(json_object_get(det, "by")),
			    "ops-alice");
	json_decref(det);
	store_ledger_rows_free(rows, nr);
	char out[4096];
	snprintf(cmd, sizeof(cmd), "'%s' ledger --config '%s' --outcome "
		 "decision > '%s/ledger.txt' 2>&1", tu_bin(), cfgpath, dir);
	assert_int_equal(system(cmd), 0);
	char lpath[600];
	snprintf(lpath, sizeof(lpath), "%s/ledger.txt", dir);
	tu_slurp(lpath, out, sizeof(out));
	assert_non_null(strstr(out, "decision"));
	assert_non_null(strstr(out, "hook: resend by ops-alice at "));

	/* The command revived the job at the real "now". */
	sc_clock_set_ms(clock, sc_clock_now_ms(sc_clock_real()) + 1000);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	/* Attempt 2: the count goes on across the revival (issue 10). */
	assert_int_equal(job.attempts, 2);
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	assert_true(jr.completed);
	assert_false(jr.rep.ran_tasks);
	assert_int_equal(fake_http_count(srv, "/hook"), 1);
	/* Sent as a FAILED row: declared once, by the release, not again. */
	assert_int_equal(jr.rep.delivery.n_duplicates, 0);
	worker_result_dispose(&jr);
	assert_int_equal(rows_of(store, LEDGER_DUPLICATE), 1);
	/* `ledger` shows the declaration, naming the target and why. */
	snprintf(cmd, sizeof(cmd), "'%s' ledger --config '%s' --outcome "
		 "duplicate > '%s/ledger.txt' 2>&1", tu_bin(), cfgpath, dir);
	assert_int_equal(system(cmd), 0);
	tu_slurp(lpath, out, sizeof(out));
	assert_non_null(strstr(out, "duplicate"));
	assert_non_null(strstr(out, "ambiguous_send: target hook: "));
	assert_non_null(strstr(out, "release --resend"));

	store_close(store);
	config_free(cfg);
	sc_clock_free(clock);
	fake_http_stop(srv);
	tu_rmrf(dir);
}

/* Issue 43: a slot of a schedule renamed (renamed_from) while it was
 * retrying runs its next attempt under the new spec, found through
 * renamed_from, and keeps its rows under the name it was queued under:
 * delivered, not lost as "not in the configuration". */
static void issue43_renamed_schedule_keeps_its_retrying_slot(void **state)
{
	char dir[256], cfgpath[512], yaml1[2048], yaml2[2048], gate[300];
	struct config *cfg = NULL, *cfg2 = NULL;
	struct store *store = NULL;
	struct sc_err err = {0};
	struct sc_clock *clock = sc_clock_virtual_new(SLOT + 500);
	struct store_job job;
	struct worker_result jr;
	size_t n = 0;
	static const char sched[] =
		"    cron: \"0 17 * * 5\"\n"
		"    tz: UTC\n"
		"    targets: [archive]\n"
		"    retry: {attempts: 3, backoff: fixed, delay: 1m}\n"
		"    tasks:\n"
		"      - {name: gated, shell: \"test -f %s || exit 1; "
		"echo '{\\\"summary\\\": \\\"done\\\"}'\"}\n";
	char spec[512];

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(gate, sizeof(gate), "%s/go", dir);
	snprintf(spec, sizeof(spec), sched, gate);
	snprintf(yaml1, sizeof(yaml1),
		 "store: sqlite:./s.db\n"
		 "targets:\n"
		 "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		 "schedules:\n"
		 "  old-name:\n%s", spec);
	snprintf(yaml2, sizeof(yaml2),
		 "store: sqlite:./s.db\n"
		 "targets:\n"
		 "  archive: {kind: file, path: ./deliveries.jsonl}\n"
		 "schedules:\n"
		 "  new-name:\n"
		 "    renamed_from: [old-name]\n%s", spec);
	write_file(dir, "surecron.yaml", yaml1, 0600);
	snprintf(cfgpath, sizeof(cfgpath), "%s/surecron.yaml", dir);
	assert_int_equal(config_load(cfgpath, &cfg, &err), 0);
	assert_int_equal(store_open(cfg->store_url, clock, &store, &err), 0);
	struct worker_opts wo = {.store = store, .config = cfg};
	static const struct sc_retry_policy three = {3, SC_BACKOFF_FIXED,
						     60000};

	/* Attempt 1 fails: a retry is due a minute later. */
	assert_int_equal(queue_enqueue(store, "old-name", SLOT, &three, NULL,
				       NULL, &err), 0);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	assert_false(jr.completed);
	assert_false(jr.dead);
	worker_result_dispose(&jr);

	/* The reload: the schedule is renamed, and the task heals. */
	write_file(dir, "surecron.yaml", yaml2, 0600);
	assert_int_equal(config_load(cfgpath, &cfg2, &err), 0);
	wo.config = cfg2;
	write_file(dir, "go", "", 0600);
	sc_clock_set_ms(clock, SLOT + 10 * 60000);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(job.schedule, "old-name");
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	assert_true(jr.completed);
	assert_false(jr.dead);
	worker_result_dispose(&jr);

	/* Delivered, its rows under the name it was queued under. */
	bool marked = false;
	assert_int_equal(store_slot_is_marked(store, "old-name", SLOT, &marked,
					      &err), 0);
	assert_true(marked);
	struct ledger_filter f = {.schedule = "old-name",
				  .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	struct ledger_row *rows = NULL;
	assert_int_equal(store_ledger_query(store, &f, &rows, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].outcome, LEDGER_FAILED);
	assert_string_equal(rows[1].outcome, LEDGER_SUCCESS);
	assert_int_equal(rows[1].attempt, 2);
	store_ledger_rows_free(rows, n);
	/* The first attempt's failure notice, then the result. */
	json_t *arr = lines(dir, &n);
	assert_int_equal(n, 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(arr, 1), "summary")),
			    "done");
	json_decref(arr);

	/* A job of a schedule this config lacks (claimed by a claimer
	 * without the daemon's rule): given back uncounted, never lost. */
	int64_t ghost = 0;
	assert_int_equal(queue_enqueue(store, "ghost", SLOT, &three, &ghost,
				       NULL, &err), 0);
	assert_int_equal(queue_claim(store, "w", 300000, &job, 1, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(job.schedule, "ghost");
	assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
	assert_true(jr.released);
	assert_false(jr.dead);
	worker_result_dispose(&jr);
	assert_int_equal(store_job_get(store, job.id, &job, &err), 0);
	assert_int_equal(job.state, JOB_READY);
	assert_int_equal(job.attempts, 0);
	struct ledger_filter g = {.schedule = "ghost", .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX,
				  .outcome = LEDGER_LOST};
	assert_int_equal(store_ledger_query(store, &g, &rows, &n, NULL), 0);
	assert_int_equal(n, 0);
	store_ledger_rows_free(rows, n);

	store_close(store);
	config_free(cfg);
	config_free(cfg2);
	sc_clock_free(clock);
	tu_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(yaml_to_delivered_slot),
		cmocka_unit_test_setup_teardown(
			held_send_released_by_the_operator, ds_sqlite_setup,
			ds_teardown),
		cmocka_unit_test(
			issue43_renamed_schedule_keeps_its_retrying_slot),
	};
	const struct CMUnitTest pg_tests[] = {
		cmocka_unit_test_setup_teardown(
			held_send_released_by_the_operator, ds_pg_setup,
			ds_teardown),
	};
	int rc = cmocka_run_group_tests_name("slot_e2e_sqlite", tests, NULL,
					     NULL);
	rc += cmocka_run_group_tests_name("slot_e2e_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	return rc;
}
