/*
 * test_cli_hostile.c - issue 11 through the real binary ($SURECRON_BIN):
 * hostile input reaches the operator's terminal only cleaned, and bad
 * input is exit status 2.
 *
 *   - A task's exit-75 "error" with ESC/BEL sequences (a title change, a
 *     screen clear) and a task's raw stderr are stored and shown by
 *     `ledger` and `status` as visible escapes (\x1b), never as raw bytes;
 *     a ledger row written raw by another writer is cleaned when shown,
 *     and `--json` stays valid JSON even for bytes that are not UTF-8.
 *   - `check`, `next` and `explain` echo hostile expressions, zones and
 *     paths cleaned.
 *   - `next` and `explain` exit 2 for a --from outside the years 1-9999,
 *     also when only the offset takes it there; `ledger`, `audit` and
 *     `ack` exit 2 for an age that reaches before the year 1 (issue 44).
 *
 * Every case asserts that no byte below 0x20 (but '\n') and no DEL
 * reaches stdout or stderr of the human output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"

static char tmp[256], cfg[320], db_url[340];
static char out[65536], err[65536];

static const char *const config_text =
	"store: sqlite:./state.db\n"
	"targets:\n"
	"  archive: {kind: file, path: ./out.jsonl}\n"
	"schedules:\n"
	"  hostile:\n"
	"    cron: \"0 17 * * 5\"\n"
	"    tz: UTC\n"
	"    targets: [archive]\n"
	"    tasks:\n"
	"      - {name: title, command: [./title.sh]}\n"
	"  noisy:\n"
	"    cron: \"0 18 * * 5\"\n"
	"    tz: UTC\n"
	"    targets: [archive]\n"
	"    tasks:\n"
	"      - {name: red, command: [./red.sh]}\n";

/* Exit 75 with a JSON error holding OSC 0 (set title), BEL, ED (clear). */
static const char *const title_sh =
	"#!/bin/sh\n"
	"printf '%s\\n' '{\"error\": \"\\u001b]0;pwned\\u0007\\u001b[2J "
	"boom\"}'\n"
	"exit 75\n";
/* Exit 1 with raw escapes and a lone UTF-8 lead byte on stderr (the
 * stderr tail is made printable where it is read, in proc.c). */
static const char *const red_sh =
	"#!/bin/sh\n"
	"printf '\\033[31mred\\007 \\303 alert\\n' >&2\n"
	"exit 1\n";

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/surecron.yaml", tmp);
	snprintf(db_url, sizeof(db_url), "sqlite:%s/state.db", tmp);
	write_file("surecron.yaml", config_text, 0644);
	write_file("title.sh", title_sh, 0755);
	write_file("red.sh", red_sh, 0755);
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(tmp);
	return 0;
}

static const char *const env[] = {"SURECRON_SCHEDULE_HOSTILE",
				  "SURECRON_SCHEDULE_NOISY", "TZ=UTC", NULL};

static int run(const char *const *args)
{
	int rc = tu_run_bin(tmp, tmp, env, args, out, sizeof(out), err,
			    sizeof(err));

	assert_true(rc >= 0);
	return rc;
}

/* Fails when s holds a control byte (but '\n') or DEL. */
static void assert_no_controls(const char *what, const char *s)
{
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c < 0x20 && c != '\n') || c == 0x7f)
			fail_msg("%s: raw control byte 0x%02x at %zu in:\n%s",
				 what, c, (size_t)(p - s), s);
	}
}

static void assert_clean_run(const char *what)
{
	assert_no_controls(what, out);
	assert_no_controls(what, err);
}

static json_t *out_json(void)
{
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);

	if (!j)
		fail_msg("not JSON (%s): %s", je.text, out);
	return j;
}

/* Issue 11, item 7: what a task says reaches the terminal cleaned. */
static void task_errors_are_shown_cleaned(void **state)
{
	const char *t1[] = {"trigger", "--config", cfg, "--slot",
			    "2026-11-27T17:00:00Z", "hostile", NULL};
	const char *t2[] = {"trigger", "--config", cfg, "--slot",
			    "2026-11-27T18:00:00Z", "noisy", NULL};
	const char *once[] = {"run", "--once", "--config", cfg, NULL};
	const char *led[] = {"ledger", "--config", cfg, NULL};
	const char *ledj[] = {"ledger", "--config", cfg, "--json", NULL};
	const char *st[] = {"status", "--config", cfg, NULL};
	const char *stj[] = {"status", "--config", cfg, "--json", NULL};

	assert_int_equal(run(t1), 0);
	assert_int_equal(run(t2), 0);
	run(once);
	assert_clean_run("run --once");

	assert_int_equal(run(led), 0);
	assert_clean_run("ledger");
	printf("# ledger:\n%s", out);
	assert_non_null(strstr(out, "\\x1b]0;pwned\\x07\\x1b[2J boom"));
	assert_non_null(strstr(out, "red"));
	assert_non_null(strstr(out, "alert"));

	assert_int_equal(run(st), 0);
	assert_clean_run("status");
	assert_non_null(strstr(out, "\\x1b]0;pwned\\x07\\x1b[2J boom"));

	/* JSON stays JSON (jansson escapes what it holds). */
	assert_int_equal(run(ledj), 0);
	json_decref(out_json());
	assert_int_equal(run(stj), 0);
	json_decref(out_json());
}

/* A row written raw (an older version, another node) is cleaned when
 * shown, and --json does not fail on bytes that are not UTF-8. */
static void raw_ledger_rows_are_cleaned(void **state)
{
	struct store *s = NULL;
	struct sc_err e = {0};
	struct ledger_row r = {0};

	assert_int_equal(store_open(db_url, sc_clock_real(), &s, &e), 0);
	snprintf(r.schedule, sizeof(r.schedule), "hostile");
	assert_int_equal(clock_parse_iso("2026-11-20T17:00:00Z", &r.slot_ms,
					 NULL), 0);
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_FAILED);
	snprintf(r.error_class, sizeof(r.error_class), "task");
	r.error_msg = "\x1b]0;pwned\x07\x1b[2J\x9b\xc2\x9b\xff tail";
	r.attempt = 1;
	assert_int_equal(store_ledger_append(s, &r, &e), 0);
	/* A line longer than the CLI's line buffer (cli_ops.c's vout) is
	 * cleaned the same way. */
	char longmsg[700];
	memset(longmsg, 'a', 600);
	snprintf(longmsg + 600, sizeof(longmsg) - 600, "\x1b[2J long end");
	r.error_msg = longmsg;
	r.slot_ms += 3600 * 1000;
	assert_int_equal(store_ledger_append(s, &r, &e), 0);
	store_close(s);

	const char *led[] = {"ledger", "--config", cfg, NULL};
	const char *lost[] = {"ledger", "--config", cfg, "--lost", NULL};
	const char *ledj[] = {"ledger", "--config", cfg, "--json", NULL};
	const char *st[] = {"status", "--config", cfg, NULL};
	const char *stj[] = {"status", "--config", cfg, "--json", NULL};

	assert_int_equal(run(led), 0);
	assert_clean_run("ledger");
	assert_non_null(strstr(out, "\\x1b]0;pwned\\x07\\x1b[2J\\x9b\\u009b"
				    "\\xff tail"));
	assert_non_null(strstr(out, "aaaa\\x1b[2J long end"));
	run(lost);
	assert_clean_run("ledger --lost");
	assert_int_equal(run(st), 0);
	assert_clean_run("status");
	assert_non_null(strstr(out, "aaaa\\x1b[2J long end"));
	assert_int_equal(run(ledj), 0);
	json_t *j = out_json();
	const char *m = json_string_value(json_object_get(
		json_array_get(json_object_get(j, "rows"), 0), "error"));
	assert_non_null(m);
	assert_non_null(strstr(m, "tail"));
	json_decref(j);
	assert_int_equal(run(stj), 0);
	json_decref(out_json());
}

/* Issue 11, items 7 and 13: check, next and explain echo input cleaned. */
static void echoed_input_is_cleaned(void **state)
{
	char bad_cfg[400], esc_path[400];

	snprintf(bad_cfg, sizeof(bad_cfg), "%s/bad.yaml", tmp);
	write_file("bad.yaml",
		   "schedules:\n"
		   "  weekly:\n"
		   "    cron: \"0 17 * * \\e[2J\"\n"
		   "    tz: \"Asia/\\e]0;pwned\\aSeoul\"\n"
		   "    tasks: [{name: a, command: [/bin/true],"
		   " timeout: \"\\e[H1m\", max_output: \"\\a1\"}]\n",
		   0644);
	snprintf(esc_path, sizeof(esc_path), "%s/\x1b[2J.yaml", tmp);

	static const char *const cron_esc = "0 17 * * \x1b[2J";
	const char *cases[][8] = {
		{"check", "--config", bad_cfg, NULL},
		{"check", esc_path, NULL},
		{"check", "--bogus\x1b[2J", NULL},
		{"next", cron_esc, NULL},
		{"next", "0 17 * * \xc3", NULL},
		{"next", "--tz", "Asia/\x1b]0;x\x07Seoul", "0 17 * * *", NULL},
		{"next", "--from", "\x1b[2J", "0 17 * * *", NULL},
		{"next", "--count", "\x07", "0 17 * * *", NULL},
		{"explain", cron_esc, NULL},
		{"explain", "--json", cron_esc, NULL},
		{"explain", "--tz", "\x1b]0;x\x07", "0 17 * * *", NULL},
		{"explain", "--config", cfg, "no\x1b[2Jsuch", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = run(cases[i]);
		char what[64];
		snprintf(what, sizeof(what), "case %zu (%s)", i, cases[i][0]);
		assert_clean_run(what);
		if (rc != 2)
			fail_msg("%s: exit %d, want 2; stderr: %s", what, rc,
				 err);
		if (!strstr(err, "\\x"))
			fail_msg("%s: no visible escape in: %s", what, err);
	}
	/* Every problem of the bad config is shown, each cleaned. */
	assert_int_equal(run(cases[0]), 2);
	printf("# check:\n%s", err);
	assert_non_null(strstr(err, "unexpected '\\x1b' in '\\x1b[2J'"));
	assert_non_null(strstr(err, "\"Asia/\\x1b]0;pwned\\x07Seoul\""));
	assert_non_null(strstr(err, "\"\\x1b[H1m\""));
	assert_non_null(strstr(err, "\"\\x071\""));
}

/* Issue 11, item 13: a --from outside the years 1-9999 is bad input
 * (exit 2), also when only its offset takes it out. */
static void from_outside_the_years_exits_2(void **state)
{
	static const char *const froms[] = {
		"0001-01-01T00:00:00+01:00", "0001-01-01T00:30:00+00:31",
		"9999-12-31T23:30:00-01:00", "0000-06-01T00:00:00Z",
	};
	for (size_t i = 0; i < sizeof(froms) / sizeof(froms[0]); i++) {
		const char *nx[] = {"next", "--from", froms[i], "0 * * * *",
				    NULL};
		const char *ex[] = {"explain", "--from", froms[i], "0 * * * *",
				    NULL};
		const char *exj[] = {"explain", "--json", "--from", froms[i],
				     "0 * * * *", NULL};
		const char *const *all[] = {nx, ex, exj};
		for (size_t k = 0; k < 3; k++) {
			int rc = run(all[k]);
			if (rc != 2)
				fail_msg("%s --from %s: exit %d, want 2 (%s)",
					 all[k][0], froms[i], rc, err);
			assert_non_null(strstr(err, "1-9999"));
			assert_clean_run(all[k][0]);
		}
	}
	/* The edges themselves are fine. */
	const char *lo[] = {"next", "--from", "0001-01-01T01:00:00+01:00",
			    "0 * * * *", NULL};
	assert_int_equal(run(lo), 0);
	assert_non_null(strstr(out, "0001-01-01T01:00:00"));
}

/* Issue 11, item 11, on the command line: counts and limits are digits,
 * not "+5" or " 5" (strtol takes both). */
static void numbers_take_their_documented_form(void **state)
{
	static const char *const bad[] = {"+5", " 5", "-0", "5 ", "0x5", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *nx[] = {"next", "--count", bad[i], "0 * * * *", NULL};
		const char *led[] = {"ledger", "--config", cfg, "--limit",
				     bad[i], NULL};
		const char *rt[] = {"retry", "--config", cfg, bad[i], NULL};
		const char *const *all[] = {nx, led, rt};
		for (size_t k = 0; k < 3; k++) {
			int rc = run(all[k]);
			if (rc != 2)
				fail_msg("%s '%s': exit %d, want 2 (%s)",
					 all[k][0], bad[i], rc, err);
		}
	}
	const char *ok[] = {"next", "--count", "3", "0 * * * *", NULL};
	assert_int_equal(run(ok), 0);
}

/* A period that ends before it starts is a usage error, not an empty
 * report: `ledger --lost` would print "no lost or missed slots" and
 * exit 0, the all-clear monitoring reads. */
static void an_inverted_period_exits_2(void **state)
{
	static const char *const lost[] = {"--lost", NULL};
	for (size_t k = 0; k < 2; k++) {
		const char *args[] = {"ledger",   "--config", cfg, "--since",
				      "7d",       "--until",  "30d", lost[k],
				      NULL};
		int rc = run(args);
		if (rc != 2)
			fail_msg("ledger %s --since 7d --until 30d: exit %d, "
				 "want 2 (%s)", k ? "" : "--lost", rc, err);
		assert_non_null(strstr(err, "--since (7d) must be before "
					    "--until (30d)"));
	}
	const char *same[] = {"ledger", "--config", cfg, "--since",
			      "2026-01-01T00:00:00Z", "--until",
			      "2026-01-01T00:00:00Z", NULL};
	assert_int_equal(run(same), 2);
	const char *ok[] = {"ledger", "--config", cfg, "--lost", "--since",
			    "30d", "--until", "7d", NULL};
	assert_int_not_equal(run(ok), 2); /* 0, or 1 for a lost slot */
}

/* Issue 44, row 13: an age that reaches before the year 1 is a usage
 * error for every command that takes one (clock_parse_when), never a
 * negative year printed nor a failure of the store (exit 1). */
static void an_age_before_the_year_1_exits_2(void **state)
{
	static const char *const ages[] = {"3652425d", "800000d"};
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		const char *lost[] = {"ledger", "--config", cfg, "--lost",
				      "--since", ages[i], NULL};
		const char *led[] = {"ledger", "--config", cfg, "--since",
				     ages[i], NULL};
		const char *aud[] = {"audit", "--config", cfg, "--since",
				     ages[i], NULL};
		const char *ack[] = {"ack", "--config", cfg, "hostile",
				     ages[i], NULL};
		const char *const *all[] = {lost, led, aud, ack};
		for (size_t k = 0; k < 4; k++) {
			int rc = run(all[k]);
			if (rc != 2)
				fail_msg("%s %s: exit %d, want 2 (%s)",
					 all[k][0], ages[i], rc, err);
			assert_non_null(strstr(err, "1-9999"));
			assert_null(strstr(out, "-0"));
			assert_clean_run(all[k][0]);
		}
	}
	/* An age that stays in the years is taken. */
	const char *ok[] = {"ledger", "--config", cfg, "--lost", "--since",
			    "700000d", NULL};
	assert_int_not_equal(run(ok), 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(task_errors_are_shown_cleaned),
		T(raw_ledger_rows_are_cleaned),
		T(echoed_input_is_cleaned),
		T(from_outside_the_years_exits_2),
		T(numbers_take_their_documented_form),
		T(an_inverted_period_exits_2),
		T(an_age_before_the_year_1_exits_2),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
