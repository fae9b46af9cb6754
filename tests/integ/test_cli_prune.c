/*
 * test_cli_prune.c - `surecron prune` and the trigger refusal of issue 15
 * as a user runs them: the real binary ($SURECRON_BIN) on a config and a
 * SQLite store prepared in a temp folder through the library. Checks: no
 * retention set removes nothing and says so (exit 0); --dry-run counts and
 * removes nothing; prune removes old rows, prints counts per table and
 * the bytes freed, keeps an unrecovered lost slot (`ledger --lost` still
 * fails for it, no more, no less); --json; a pruned done slot is refused
 * by `trigger --slot` (older than retention.jobs, exit 2); usage errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"

#define DAY_MS (86400LL * 1000)

static char tmp[256], cfg[320], db_url[340];
static char out[65536], err[65536];
static int64_t now_ms;

static const char *const base_config =
	"store: sqlite:./state.db\n"
	"targets:\n"
	"  archive: {kind: file, path: ./out.jsonl}\n"
	"schedules:\n"
	"  daily:\n"
	"    cron: \"30 8 * * *\"\n"
	"    tz: UTC\n"
	"    targets: [archive]\n"
	"    tasks:\n"
	"      - {name: digest, command: [/bin/true]}\n";

static void write_config(const char *extra)
{
	FILE *f = fopen(cfg, "wb");

	assert_non_null(f);
	fputs(base_config, f);
	fputs(extra, f);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", tmp);
	snprintf(db_url, sizeof(db_url), "sqlite:%s/state.db", tmp);
	write_config("retention: {ledger: 400d, jobs: 30d, outbox: 30d}\n");
	now_ms = sc_clock_now_ms(sc_clock_real());
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(tmp);
	return 0;
}

static int run(const char *const *args)
{
	int rc = tu_run_bin(tmp, NULL, NULL, args, out, sizeof(out), err,
			    sizeof(err));

	assert_int_not_equal(rc, -1);
	return rc;
}

static struct store *open_db(void)
{
	struct store *s = NULL;
	struct sc_err e = {0};

	if (store_open(db_url, sc_clock_real(), &s, &e))
		fail_msg("store_open: %s", e.msg);
	return s;
}

static void add_row(struct store *s, int64_t slot, const char *outcome)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = slot + 1000};

	snprintf(r.schedule, sizeof(r.schedule), "daily");
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(s, &r, NULL), 0);
}

/* A done slot with its guard and marker, 500 days ago, plus 30 old
 * success rows, one old lost slot never recovered, and a recent row. */
static int64_t old_slot;

static void fill(void)
{
	struct store *s = open_db();
	struct sc_retry_policy pol = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct store_job j;
	size_t n = 0;
	int64_t id = 0;

	old_slot = (now_ms - 500 * DAY_MS) / 1000 * 1000;
	for (int i = 1; i <= 30; i++)
		add_row(s, old_slot + i * DAY_MS, LEDGER_SUCCESS);
	add_row(s, old_slot + 40 * DAY_MS, LEDGER_LOST);
	add_row(s, now_ms - DAY_MS, LEDGER_SUCCESS);
	assert_int_equal(store_job_enqueue(s, "daily", old_slot, &pol,
					   old_slot, false, &id, NULL, NULL), 0);
	assert_int_equal(store_job_claim(s, "w", 60000, &j, 1, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_outbox_put(s, "daily", old_slot, "archive",
					  "msg", NULL, NULL), 0);
	assert_int_equal(store_outbox_set_state(s, "daily", old_slot,
						"archive", SEND_SENDING, NULL),
			 0);
	assert_int_equal(store_outbox_set_state(s, "daily", old_slot,
						"archive", SEND_SENT, NULL), 0);
	assert_int_equal(store_slot_mark(s, "daily", old_slot, NULL), 0);
	assert_int_equal(store_job_finish(s, id, j.lease_token, JOB_DONE, 0,
					  NULL, NULL), 0);
	store_close(s);
}

static size_t n_ledger(void)
{
	struct store *s = open_db();
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, NULL, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	store_close(s);
	return n;
}

static void no_retention_removes_nothing(void **state)
{
	write_config("");
	fill();
	size_t before = n_ledger();
	assert_int_equal(run((const char *[]){"prune", "--config", cfg, NULL}),
			 0);
	assert_non_null(strstr(out, "no retention set"));
	assert_int_equal(n_ledger(), before);
}

static void dry_run_then_prune(void **state)
{
	fill();
	size_t before = n_ledger();
	/* `ledger --lost` fails for the one lost slot, before and after. */
	assert_int_equal(run((const char *[]){"ledger", "--config", cfg,
					      "--lost", "--since", "1000d",
					      NULL}),
			 1);
	assert_int_equal(run((const char *[]){"prune", "--config", cfg,
					      "--dry-run", NULL}),
			 0);
	assert_non_null(strstr(out, "dry run, nothing removed"));
	assert_non_null(strstr(out, "would remove: 31 ledger rows, 1 jobs, "
				    "1 outbox bodies, 1 send guards, 0 slot "
				    "markers"));
	assert_int_equal(n_ledger(), before);

	assert_int_equal(run((const char *[]){"prune", "--config", cfg, NULL}),
			 0);
	assert_non_null(strstr(out, "removed: 31 ledger rows, 1 jobs, 1 outbox "
				    "bodies, 1 send guards, 0 slot markers"));
	assert_non_null(strstr(out, "bytes freed: "));
	assert_non_null(strstr(out, "page_count"));
	assert_int_equal(n_ledger(), before - 31);
	assert_int_equal(run((const char *[]){"ledger", "--config", cfg,
					      "--lost", "--since", "1000d",
					      NULL}),
			 1);
	assert_non_null(strstr(out, "lost"));

	/* Nothing more to do; --json says so in numbers. */
	assert_int_equal(run((const char *[]){"prune", "--config", cfg,
					      "--json", NULL}),
			 0);
	json_t *o = json_loads(out, 0, NULL);
	assert_non_null(o);
	json_t *rm = json_object_get(o, "removed");
	assert_int_equal(json_integer_value(json_object_get(rm, "ledger")), 0);
	assert_true(json_is_integer(json_object_get(o, "bytes_freed")));
	assert_false(json_is_true(json_object_get(o, "dry_run")));
	json_decref(o);
}

static void a_pruned_done_slot_is_refused_by_trigger(void **state)
{
	char slot[CLOCK_ISO_MAX], recent[CLOCK_ISO_MAX];

	fill();
	assert_int_equal(run((const char *[]){"prune", "--config", cfg, NULL}),
			 0);
	clock_format_utc(old_slot, slot);
	assert_int_equal(run((const char *[]){"trigger", "--config", cfg,
					      "--slot", slot, "daily", NULL}),
			 2);
	assert_non_null(strstr(err, "older than the retention (30d): its "
				    "record may be pruned"));
	/* A slot inside retention.jobs is still accepted. */
	clock_format_utc((now_ms - 2 * DAY_MS) / 1000 * 1000, recent);
	assert_int_equal(run((const char *[]){"trigger", "--config", cfg,
					      "--slot", recent, "daily", NULL}),
			 0);
	assert_non_null(strstr(out, "new, due now"));
}

static void usage_errors(void **state)
{
	assert_int_equal(run((const char *[]){"prune", "--config", cfg,
					      "--bogus", NULL}),
			 2);
	assert_non_null(strstr(err, "unknown option"));
	assert_int_equal(run((const char *[]){"prune", "--config", cfg,
					      "extra", NULL}),
			 2);
	assert_int_equal(run((const char *[]){"prune", "--help", NULL}), 0);
	assert_non_null(strstr(out, "--dry-run"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_retention_removes_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(dry_run_then_prune, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_pruned_done_slot_is_refused_by_trigger, setup,
			teardown),
		cmocka_unit_test_setup_teardown(usage_errors, setup, teardown),
	};

	return cmocka_run_group_tests_name("cli_prune", tests, NULL, NULL);
}
