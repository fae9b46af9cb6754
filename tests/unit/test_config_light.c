/*
 * test_config_light.c - the light load of the read-only commands
 * (config_load_light, issue 15): what status and ledger print (store URL,
 * schedule names, cron, override, zone, class, retry policy) is the same
 * as through config_load, for every schedule and for each one asked for
 * alone (a block-style fragment sliced to the name's block, a flow-style
 * one parsed whole); what it skips (tasks, targets, references) does not
 * fail it; a fragment that cannot hold the name is not parsed (a broken
 * one does not fail `status NAME`) while one that is parsed still fails
 * with the position config_load gives; a missing file, a bad store fail.
 *
 * Each test writes its config into a fresh temporary folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "testutil.h"

static char dir[256];

static void put(const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char *main_path(void)
{
	static char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	return p;
}

/* A main file with targets, alerts and an include; two block fragments
 * (a cross-fragment target reference, retry, a zone) and a flow one. */
static int setup(void **state)
{
	char sub[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(sub, sizeof(sub), "%s/conf.d", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	put("surecron.yaml",
	    "store: \"sqlite:./light.db\"\n"
	    "targets:\n"
	    "  archive: {kind: file, path: ./d.jsonl}\n"
	    "alerts: {targets: [archive]}\n"
	    "include: [\"conf.d/*.yaml\"]\n");
	put("conf.d/a.yaml",
	    "# team a\n"
	    "schedules:\n"
	    "  a-one:\n"
	    "    cron: \"5 * * * *\"\n"
	    "    tz: Europe/Paris\n"
	    "    targets: [second]\n"
	    "    retry: {attempts: 3, backoff: fixed, delay: 10s}\n"
	    "    tasks:\n"
	    "      - {name: t, command: [\"/bin/true\"]}\n"
	    "\n"
	    "  a-one-more:\n"
	    "    cron: \"0 3 * * 1\"\n"
	    "    tasks: [{name: t, command: [\"/bin/true\"]}]\n"
	    "targets:\n"
	    "  second: {kind: file, path: ./e.jsonl}\n");
	put("conf.d/b.yaml",
	    "schedules:\n"
	    "  b-one:\n"
	    "    cron: \"*/5 * * * *\"\n"
	    "    tz: UTC\n"
	    "    targets: [archive]\n"
	    "    tasks: [{name: t, command: [\"/bin/true\"]}]\n");
	put("conf.d/c.yaml",
	    "schedules: {c-one: {cron: \"0 0 1 * *\", "
	    "tasks: [{name: t, command: [\"/bin/true\"]}]}}\n");
	return 0;
}

static int teardown(void **state)
{
	tu_rmrf(dir);
	return 0;
}

/* What status prints of a schedule, through either load. */
static void same_schedule(const struct schedule_spec *a,
			  const struct schedule_spec *b)
{
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a->name, b->name);
	assert_string_equal(a->cron, b->cron);
	assert_true((spec_cron_config(a) == NULL) == (spec_cron_config(b) == NULL));
	if (spec_cron_config(a))
		assert_string_equal(spec_cron_config(a), spec_cron_config(b));
	assert_true((spec_x(a)->override_var == NULL) == (spec_x(b)->override_var == NULL));
	assert_string_equal(sc_zone_name(a->zone), sc_zone_name(b->zone));
	assert_int_equal(a->cls, b->cls);
	assert_int_equal(a->has_retry, b->has_retry);
	assert_int_equal(spec_policy(a)->attempts, spec_policy(b)->attempts);
	assert_int_equal(spec_policy(a)->backoff, spec_policy(b)->backoff);
	assert_int_equal(spec_policy(a)->delay_ms, spec_policy(b)->delay_ms);
}

static void light_prints_what_full_prints(void **state)
{
	struct config *full = NULL, *lt = NULL;
	struct sc_err err = {0};

	assert_int_equal(config_load(main_path(), &full, &err), 0);
	assert_int_equal(config_load_light(main_path(), true, NULL, &lt, &err),
			 0);
	assert_string_equal(full->store_url, lt->store_url);
	assert_int_equal(full->n_schedules, 4);
	assert_int_equal(lt->n_schedules, full->n_schedules);
	assert_int_equal(lt->n_targets, 0); /* skipped: check reads them */
	for (size_t i = 0; i < full->n_schedules; i++) {
		same_schedule(&full->schedules[i], &lt->schedules[i]);
		assert_int_equal(lt->schedules[i].n_tasks, 0);
	}
	/* Each alone: the block of a.yaml / b.yaml, the flow c.yaml. */
	for (size_t i = 0; i < full->n_schedules; i++) {
		const char *name = full->schedules[i].name;
		struct config *one = NULL;
		assert_int_equal(config_load_light(main_path(), true, name,
						   &one, &err), 0);
		same_schedule(&full->schedules[i], config_schedule(one, name));
		config_free(one);
	}
	/* "a-one" also matches "a-one-more"'s text: both load, once each. */
	struct config *one = NULL;
	assert_int_equal(config_load_light(main_path(), true, "a-one", &one,
					   &err), 0);
	assert_int_equal(one->n_schedules, 1);
	config_free(one);
	/* The ledger's: no schedule at all, the store still read. */
	assert_int_equal(config_load_light(main_path(), false, NULL, &one,
					   &err), 0);
	assert_int_equal(one->n_schedules, 0);
	assert_string_equal(one->store_url, full->store_url);
	config_free(one);
	/* A name no file holds: loads, and the command says "no schedule". */
	assert_int_equal(config_load_light(main_path(), true, "nosuch", &one,
					   &err), 0);
	assert_null(config_schedule(one, "nosuch"));
	config_free(one);
	config_free(full);
	config_free(lt);
}

static void unread_fragment_cannot_fail_it(void **state)
{
	struct config *c = NULL;
	struct sc_err err = {0};

	put("conf.d/d.yaml", "schedules:\n  d-one: [unclosed\n");
	assert_int_not_equal(config_load(main_path(), &c, &err), 0);
	assert_non_null(strstr(err.msg, "conf.d/d.yaml:"));
	/* Every schedule: d.yaml is parsed, and fails it the same way. */
	struct sc_err e2 = {0};
	assert_int_not_equal(config_load_light(main_path(), true, NULL, &c,
					       &e2), 0);
	assert_string_equal(e2.msg, err.msg);
	/* One schedule elsewhere, or none: d.yaml is not parsed. */
	assert_int_equal(config_load_light(main_path(), true, "b-one", &c,
					   &e2), 0);
	assert_non_null(config_schedule(c, "b-one"));
	config_free(c);
	assert_int_equal(config_load_light(main_path(), false, NULL, &c, &e2),
			 0);
	config_free(c);
	/* The schedule asked for is in the broken file: it fails. */
	assert_int_not_equal(config_load_light(main_path(), true, "d-one", &c,
					       &e2), 0);
	assert_non_null(strstr(e2.msg, "conf.d/d.yaml:"));
}

static void error_in_the_block_keeps_its_position(void **state)
{
	struct config *c = NULL;
	struct sc_err full = {0}, lt = {0};

	/* Line 4 of a.yaml: a cron that does not parse. */
	put("conf.d/a.yaml",
	    "# team a\n"
	    "schedules:\n"
	    "  a-one:\n"
	    "    cron: \"61 * * * *\"\n"
	    "    tasks: [{name: t, command: [\"/bin/true\"]}]\n"
	    "  a-two:\n"
	    "    cron: \"0 3 * * 1\"\n"
	    "    tasks: [{name: t, command: [\"/bin/true\"]}]\n");
	assert_int_not_equal(config_load(main_path(), &c, &full), 0);
	assert_int_not_equal(config_load_light(main_path(), true, "a-one", &c,
					       &lt), 0);
	assert_non_null(strstr(full.msg, "conf.d/a.yaml:4:"));
	assert_string_equal(lt.msg, full.msg);
	/* Its sibling's block holds no error: it loads. */
	assert_int_equal(config_load_light(main_path(), true, "a-two", &c,
					   &lt), 0);
	config_free(c);
}

static void skipped_checks_and_hard_failures(void **state)
{
	struct config *c = NULL;
	struct sc_err err = {0};

	/* A task without a command and an unknown target: check's to say. */
	put("conf.d/b.yaml",
	    "schedules:\n"
	    "  b-one:\n"
	    "    cron: \"*/5 * * * *\"\n"
	    "    targets: [nowhere]\n"
	    "    tasks: [{name: t}]\n");
	assert_int_not_equal(config_load(main_path(), &c, &err), 0);
	assert_int_equal(config_load_light(main_path(), true, NULL, &c, &err),
			 0);
	config_free(c);
	/* An unknown key in a schedule still fails (a typo is never
	 * silently dropped, light or not). */
	put("conf.d/b.yaml",
	    "schedules:\n"
	    "  b-one:\n"
	    "    cronn: \"*/5 * * * *\"\n"
	    "    tasks: [{name: t, command: [\"/bin/true\"]}]\n");
	struct sc_err full = {0};
	memset(&err, 0, sizeof(err));
	assert_int_not_equal(config_load(main_path(), &c, &full), 0);
	assert_int_not_equal(config_load_light(main_path(), true, "b-one", &c,
					       &err), 0);
	assert_non_null(strstr(err.msg, "conf.d/b.yaml:"));
	assert_string_equal(err.msg, full.msg);
	/* A store it cannot open the way it is written. */
	put("surecron.yaml", "store: \"mysql://x\"\n"
	    "include: [\"conf.d/*.yaml\"]\n");
	memset(&err, 0, sizeof(err));
	assert_int_not_equal(config_load_light(main_path(), false, NULL, &c,
					       &err), 0);
	assert_non_null(strstr(err.msg, "store"));
	/* No file at all. */
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/none.yaml", dir);
	assert_int_equal(config_load_light(p, false, NULL, &c, &err),
			 SC_ENOENT);
}

/* Through the binary: status NAME and ledger get past a broken fragment
 * that status of every schedule (and check) refuses, naming it. */
static void commands_past_a_broken_fragment(void **state)
{
	static char out[65536], err[4096];
	const char *cfg = main_path();

	/* The store the commands read, made while every file loads. */
	const char *trig[] = {"trigger", "--config", cfg, "b-one", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, trig, out, sizeof(out),
				    err, sizeof(err)), 0);
	put("conf.d/d.yaml", "schedules:\n  d-one: [unclosed\n");
	const char *one[] = {"status", "--config", cfg, "b-one", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, one, out, sizeof(out),
				    err, sizeof(err)), 0);
	assert_non_null(strstr(out, "\nb-one\n"));
	assert_non_null(strstr(out, "*/5 * * * *"));
	const char *led[] = {"ledger", "--config", cfg, "--lost", "--since",
			     "7d", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, led, out, sizeof(out),
				    err, sizeof(err)), 0);
	const char *all[] = {"status", "--config", cfg, NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, all, out, sizeof(out),
				    err, sizeof(err)), 2);
	assert_non_null(strstr(err, "conf.d/d.yaml:"));
	const char *chk[] = {"check", "--config", cfg, NULL};
	assert_int_not_equal(tu_run_bin(dir, dir, NULL, chk, out, sizeof(out),
					err, sizeof(err)), 0);
	/* A name no file holds: exits 2 as before. */
	const char *none[] = {"status", "--config", cfg, "nosuch", NULL};
	assert_int_equal(tu_run_bin(dir, dir, NULL, none, out, sizeof(out),
				    err, sizeof(err)), 2);
	assert_non_null(strstr(err, "no schedule 'nosuch'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(light_prints_what_full_prints,
						setup, teardown),
		cmocka_unit_test_setup_teardown(unread_fragment_cannot_fail_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			error_in_the_block_keeps_its_position, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			skipped_checks_and_hard_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(
			commands_past_a_broken_fragment, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
