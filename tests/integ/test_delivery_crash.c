/*
 * test_delivery_crash.c - crashes in the middle of a delivery, for real.
 *
 * The test binary re-executes itself as a child ("child DIR ATTEMPT")
 * that runs one slot with SURECRON_FAILPOINTS set; the failpoint kills it
 * with SIGKILL at the exact step. The parent then recovers the slot with a
 * second attempt and checks the documented outcome (outbox.c, top
 * comment): an interrupted send becomes UNKNOWN and is resent with a
 * "duplicate" ledger row (on_ambiguous: resend) or held (hold); a target
 * with a send guard is never sent again; a crash after the last guard only
 * needs the slot marker. Receivers are a real HTTP server on 127.0.0.1 in
 * the parent; the store is a real SQLite file shared by both processes.
 * (A re-exec, not a bare fork: the parent has server threads, and a forked
 * child of a threaded process may only call async-signal-safe functions.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "delivery.h"
#include "fakes/fake_http.h"
#include "orchestrator.h"
#include "store.h"
#include "testutil.h"

#define SLOT 1795798800000LL

extern char **environ;

static struct fake_http *srv;

/* Everything a run of the slot needs, rebuilt identically in the child. */
struct world {
	char dir[256];
	char runlog[320], script[320];
	char *argv[2];
	struct task_spec task;
	struct target_spec targets[2];
	char *names[2];
	struct config cfg;
	struct schedule_spec sched;
	struct sc_clock *clock;
	struct sc_store *store;
	struct orch_ctx ctx;
};

static void world_open(struct world *w, const char *dir)
{
	char url[400];
	struct sc_err err = {0};

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	snprintf(w->runlog, sizeof(w->runlog), "%s/runs.log", dir);
	snprintf(w->script, sizeof(w->script), "%s/gen.sh", dir);
	w->argv[0] = w->script;
	w->task = (struct task_spec){.name = "gen", .argv = w->argv,
				     .timeout_ms = 10000};
	w->targets[0] = (struct target_spec){
		.name = "A", .kind = TARGET_WEBHOOK, .url_env = "CRASH_URL_A",
		.timeout_ms = 5000};
	w->targets[1] = (struct target_spec){
		.name = "B", .kind = TARGET_WEBHOOK, .url_env = "CRASH_URL_B",
		.timeout_ms = 5000};
	/* CRASH_HOLD names the target that holds ambiguous sends. */
	const char *hold = getenv("CRASH_HOLD");
	for (int i = 0; i < 2; i++)
		if (hold && strcmp(hold, w->targets[i].name) == 0)
			w->targets[i].on_ambiguous = AMBIGUOUS_HOLD;
	w->names[0] = "A";
	w->names[1] = "B";
	w->cfg.targets = w->targets;
	w->cfg.n_targets = 2;
	w->sched = (struct schedule_spec){.name = "weekly", .targets = w->names,
					  .n_targets = 2, .tasks = &w->task,
					  .n_tasks = 1};
	w->clock = sc_clock_virtual_new(SLOT + 1000);
	snprintf(url, sizeof(url), "sqlite:%s/s.db", dir);
	assert_int_equal(store_open(url, w->clock, &w->store, &err), 0);
	w->ctx = (struct orch_ctx){.store = w->store, .config = &w->cfg};
}

static void world_close(struct world *w)
{
	store_close(w->store);
	sc_clock_free(w->clock);
}

static int child_main(const char *dir, int attempt)
{
	struct world w;
	struct sc_err err = {0};

	world_open(&w, dir);
	int rc = orch_run_slot(&w.ctx, &w.sched, SLOT, 1, attempt, NULL, &err);
	world_close(&w);
	return rc == 0 ? 0 : 1;
}

/* ---- parent side -------------------------------------------------------- */

static struct world W;

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

static int setup(void **state)
{
	char url[256], dir[256];
	FILE *f;

	fake_http_reset(srv);
	setenv("CRASH_URL_A", fake_http_url(srv, "/a", url, sizeof(url)), 1);
	setenv("CRASH_URL_B", fake_http_url(srv, "/b", url, sizeof(url)), 1);
	fake_http_set_default(srv, "/a", 200, NULL, "ok");
	fake_http_set_default(srv, "/b", 200, NULL, "ok");
	unsetenv("CRASH_HOLD");
	unsetenv("SURECRON_FAILPOINTS");
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	world_open(&W, dir);
	f = fopen(W.script, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho run >> '%s'\necho 'weekly report'\n",
		W.runlog);
	fclose(f);
	chmod(W.script, 0700);
	return 0;
}

static int teardown(void **state)
{
	char dir[256];

	memcpy(dir, W.dir, sizeof(dir));
	world_close(&W);
	tu_rmrf(dir);
	return 0;
}

/* Runs attempt 1 in a child with the failpoint; expects it to be killed. */
static void crash_child(const char *failpoint)
{
	char self[4096], att[] = "1";
	char *argv[] = {self, "child", W.dir, att, NULL};
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	pid_t pid;
	int status = 0;

	assert_true(n > 0);
	self[n] = '\0';
	setenv("SURECRON_FAILPOINTS", failpoint, 1);
	assert_int_equal(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
}

static int task_runs(void)
{
	FILE *f = fopen(W.runlog, "r");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static enum send_state state_of(const char *target)
{
	struct outbox_entry e = {0};

	assert_int_equal(outbox_get(W.store, "weekly", SLOT, target, &e, NULL), 0);
	enum send_state s = e.state;
	outbox_entry_dispose(&e);
	return s;
}

static bool marked(void)
{
	bool m = true;

	assert_int_equal(slot_is_marked(W.store, "weekly", SLOT, &m, NULL), 0);
	return m;
}

/* Duplicate ledger rows of the slot; *target gets the first's details. */
static size_t duplicates(char *details, size_t n)
{
	struct ledger_filter f = {.schedule = "weekly", .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX,
				  .outcome = LEDGER_DUPLICATE};
	struct ledger_row *rows = NULL;
	size_t nr = 0;

	assert_int_equal(ledger_query(W.store, &f, &rows, &nr, NULL), 0);
	if (details && n) {
		details[0] = '\0';
		if (nr && rows[0].details_json)
			snprintf(details, n, "%s", rows[0].details_json);
	}
	ledger_rows_free(rows, nr);
	return nr;
}

static int recover(struct orch_report *rep, struct sc_err *err)
{
	sc_err_clear(err);
	return orch_run_slot(&W.ctx, &W.sched, SLOT, 1, 2, rep, err);
}

static void same_key_on_both_copies(const char *path)
{
	struct fake_request r1, r2;
	char k1[80], k2[80];

	assert_true(fake_http_request(srv, path, 0, &r1));
	assert_true(fake_http_request(srv, path, 1, &r2));
	assert_true(fake_request_header(&r1, "Idempotency-Key", k1, sizeof(k1)));
	assert_true(fake_request_header(&r2, "Idempotency-Key", k2, sizeof(k2)));
	assert_string_equal(k1, k2);
	assert_string_equal(r1.body, r2.body);
	fake_request_dispose(&r1);
	fake_request_dispose(&r2);
}

static void crash_after_sending_commit_resends_with_duplicate_row(void **state)
{
	struct orch_report rep;
	struct sc_err err;
	char details[512];

	crash_child("delivery.after_sending_commit");
	/* Killed before the request: nothing arrived, A is SENDING. */
	assert_int_equal(fake_http_count(srv, NULL), 0);
	assert_int_equal(state_of("A"), SEND_SENDING);
	assert_int_equal(state_of("B"), SEND_PENDING);
	assert_false(marked());

	assert_int_equal(recover(&rep, &err), 0);
	assert_false(rep.ran_tasks);
	assert_int_equal(task_runs(), 1);
	assert_int_equal(rep.delivery.n_duplicates, 1);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 1);
	assert_true(marked());
	/* The possible extra copy is on the record. */
	assert_int_equal(duplicates(details, sizeof(details)), 1);
	assert_non_null(strstr(details, "\"target\":\"A\""));
	orch_report_dispose(&rep);
}

static void crash_after_2xx_resends_only_the_unguarded_target(void **state)
{
	struct orch_report rep;
	struct sc_err err;
	char details[512];

	/* Second hit: A was sent and guarded, B took its copy, then the
	 * process died before B's SENT commit. */
	crash_child("delivery.after_2xx_before_sent@2");
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 1);
	assert_int_equal(state_of("A"), SEND_SENT);
	assert_int_equal(state_of("B"), SEND_SENDING);

	assert_int_equal(recover(&rep, &err), 0);
	assert_int_equal(rep.delivery.n_guarded, 1);
	assert_int_equal(rep.delivery.n_duplicates, 1);
	/* The guarded target is never sent again. */
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	/* B gets a second copy, same key and body: a declared duplicate. */
	assert_int_equal(fake_http_count(srv, "/b"), 2);
	same_key_on_both_copies("/b");
	assert_int_equal(duplicates(details, sizeof(details)), 1);
	assert_non_null(strstr(details, "\"target\":\"B\""));
	assert_true(marked());
	assert_int_equal(task_runs(), 1);
	orch_report_dispose(&rep);

	/* And a later attempt sends nothing at all. */
	assert_int_equal(recover(&rep, &err), 0);
	assert_true(rep.already_marked);
	assert_int_equal(fake_http_count(srv, NULL), 3);
	orch_report_dispose(&rep);
}

static void crash_after_2xx_with_hold_sends_nothing(void **state)
{
	struct orch_report rep;
	struct sc_err err;

	setenv("CRASH_HOLD", "B", 1);
	world_close(&W);
	char dir[256];
	memcpy(dir, W.dir, sizeof(dir));
	world_open(&W, dir); /* reload: B holds */
	crash_child("delivery.after_2xx_before_sent@2");
	assert_int_equal(fake_http_count(srv, "/b"), 1);

	assert_int_equal(recover(&rep, &err), SC_EDELIVERY);
	assert_true(err.permanent); /* retrying cannot decide it */
	assert_non_null(strstr(err.msg, "held"));
	assert_int_equal(rep.delivery.n_held, 1);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 1);
	assert_int_equal(state_of("B"), SEND_UNKNOWN);
	assert_int_equal(duplicates(NULL, 0), 0);
	assert_false(marked());
	orch_report_dispose(&rep);

	/* The operator says the copy arrived: the slot completes, nothing
	 * more is sent. */
	assert_int_equal(delivery_release(W.store, "weekly", SLOT, "B", true,
					  NULL), 0);
	assert_int_equal(recover(&rep, &err), 0);
	assert_int_equal(fake_http_count(srv, NULL), 2);
	assert_true(marked());
	orch_report_dispose(&rep);
}

static void crash_before_marker_only_marks(void **state)
{
	struct orch_report rep;
	struct sc_err err;

	crash_child("delivery.after_last_sent_before_marker");
	assert_int_equal(state_of("A"), SEND_SENT);
	assert_int_equal(state_of("B"), SEND_SENT);
	assert_false(marked());

	assert_int_equal(recover(&rep, &err), 0);
	assert_int_equal(rep.delivery.n_guarded, 2);
	assert_int_equal(rep.delivery.n_sent, 0);
	assert_int_equal(fake_http_count(srv, "/a"), 1);
	assert_int_equal(fake_http_count(srv, "/b"), 1);
	assert_int_equal(duplicates(NULL, 0), 0);
	assert_int_equal(task_runs(), 1);
	assert_true(marked());
	orch_report_dispose(&rep);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return child_main(argv[2], atoi(argv[3]));
	const struct CMUnitTest tests[] = {
		T(crash_after_sending_commit_resends_with_duplicate_row),
		T(crash_after_2xx_resends_only_the_unguarded_target),
		T(crash_after_2xx_with_hold_sends_nothing),
		T(crash_before_marker_only_marks),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
