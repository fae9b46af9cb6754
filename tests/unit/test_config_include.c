/*
 * test_config_include.c - a config in pieces (issue 15): `include:` globs
 * matched and sorted relative to the main file, fragments' relative paths
 * resolved against their own folder, names defined twice across files,
 * keys a fragment may not hold, nested includes, a missing plain path, a
 * pattern that matches nothing (a warning), the per-file counts (struct
 * config.files and `check`), and a 20,000-schedule config in 4 fragments
 * with config_schedule finding its first, its last and a missing name.
 * Issue 44: the file-trust rule (a warning at check, an error for every
 * other load), a FIFO or device matched and refused without being
 * opened, the lines of a file that is not a config never quoted, and a
 * file matched many times over read once.
 *
 * Fixtures: tests/fixtures/config/include/{ok,dup,badkey,nested,missing}.
 * Each test loads "surecron.yaml" from inside the fixture's folder, so the
 * fragments print as written ("conf.d/teams.yaml:5:3: ...").
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
#include "fifo_watch.h"
#include "testutil.h"

static char here[PATH_MAX];

/* The fixture folder include/NAME, absolute. */
static const char *fixture(const char *name)
{
	static char dir[PATH_MAX + 64];
	const char *src = getenv("SURECRON_SRC");

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/config/include/%s",
		 src ? src : here, name);
	return dir;
}

static int setup(void **state)
{
	assert_non_null(getcwd(here, sizeof(here)));
	return 0;
}

static int back(void **state)
{
	assert_int_equal(chdir(here), 0);
	return 0;
}

/* Loads fixture NAME's surecron.yaml from inside its folder. */
static int load(const char *name, struct config **c,
		struct config_problems *probs)
{
	assert_int_equal(chdir(fixture(name)), 0);
	return config_parse("surecron.yaml", c, probs);
}

/* True when some problem formats exactly as `want` (prefix match on
 * "FILE:LINE:COL: ", then a substring of the rest). */
static bool has_problem(const struct config_problems *p, const char *where,
			const char *text)
{
	char line[1024];

	for (size_t i = 0; i < p->n; i++) {
		config_problem_format(p, i, line, sizeof(line));
		if (strncmp(line, where, strlen(where)) == 0 &&
		    strstr(line + strlen(where), text))
			return true;
	}
	return false;
}

static void dump(const struct config_problems *p)
{
	char line[1024];

	for (size_t i = 0; i < p->n; i++)
		fprintf(stderr, "  %s\n",
			config_problem_format(p, i, line, sizeof(line)));
}

static void globs_sorted_relative_and_counted(void **state)
{
	struct config_problems probs = {0};
	struct config *c = NULL;
	char want[PATH_MAX + 128];

	int rc = load("ok", &c, &probs);
	dump(&probs);
	assert_int_equal(rc, 0);
	assert_int_equal(probs.n, 0);
	/* Main file, then the conf.d glob's matches in byte order (10-zulu before
	 * 20-alpha, whatever their schedules are called; notes.txt and the
	 * sub-folder not matched), then the plain path. */
	assert_int_equal(c->n_files, 4);
	snprintf(want, sizeof(want), "%s/surecron.yaml", fixture("ok"));
	assert_string_equal(c->files[0].path, want);
	snprintf(want, sizeof(want), "%s/conf.d/10-zulu.yaml", fixture("ok"));
	assert_string_equal(c->files[1].path, want);
	snprintf(want, sizeof(want), "%s/conf.d/20-alpha.yaml",
		 fixture("ok"));
	assert_string_equal(c->files[2].path, want);
	snprintf(want, sizeof(want), "%s/teams/ops.yaml", fixture("ok"));
	assert_string_equal(c->files[3].path, want);
	assert_int_equal(c->files[0].n_schedules, 1);
	assert_int_equal(c->files[0].n_targets, 1);
	assert_int_equal(c->files[1].n_schedules, 2);
	assert_int_equal(c->files[1].n_targets, 1);
	assert_int_equal(c->files[2].n_schedules, 1);
	assert_int_equal(c->files[3].n_schedules, 1);
	assert_int_equal(c->files[3].n_auths, 1);
	assert_int_equal(c->n_schedules, 5);
	/* Schedules in file order: main, then each fragment's. */
	assert_string_equal(c->schedules[0].name, "main-hourly");
	assert_string_equal(c->schedules[1].name, "zulu");
	assert_string_equal(c->schedules[2].name, "yankee");
	assert_string_equal(c->schedules[3].name, "alpha");
	assert_string_equal(c->schedules[4].name, "ops");
	assert_null(config_schedule(c, "deep"));
	/* References across files: main -> a fragment's target, a fragment
	 * -> the main file's target and another fragment's. */
	assert_non_null(config_target(c, "team"));
	assert_non_null(config_auth(c, "ops-api"));
	assert_string_equal(config_schedule(c, "ops")->tasks[0].auth,
			    "ops-api");
	config_problems_dispose(&probs);
	config_free(c);
}

static void fragment_paths_are_its_own(void **state)
{
	struct config_problems probs = {0};
	struct config *c = NULL;
	char want[PATH_MAX + 128];

	assert_int_equal(load("ok", &c, &probs), 0);
	/* The fragment's file target, program and cwd: against conf.d/. */
	snprintf(want, sizeof(want), "%s/conf.d/team.jsonl", fixture("ok"));
	assert_string_equal(config_target(c, "team")->path, want);
	const struct schedule_spec *a = config_schedule(c, "alpha");
	snprintf(want, sizeof(want), "%s/conf.d/bin/job.sh", fixture("ok"));
	assert_string_equal(a->tasks[0].argv[0], want);
	snprintf(want, sizeof(want), "%s/conf.d/work", fixture("ok"));
	assert_string_equal(a->tasks[0].cwd, want);
	/* The main file's: against its own folder. */
	snprintf(want, sizeof(want), "%s/main.jsonl", fixture("ok"));
	assert_string_equal(config_target(c, "log")->path, want);
	snprintf(want, sizeof(want), "sqlite:%s/surecron.db", fixture("ok"));
	assert_string_equal(c->store_url, want);
	config_problems_dispose(&probs);
	config_free(c);
}

static void check_names_the_fragment(void **state)
{
	struct config_problems probs = {0}, warns = {0};
	struct config *c = NULL;

	assert_int_equal(load("ok", &c, &probs), 0);
	unsetenv("OPS_TOKEN");
	assert_int_equal(config_check(c, &probs), 1);
	dump(&probs);
	/* config_check's finding, located in the fragment that has it. */
	assert_true(has_problem(&probs, "teams/ops.yaml:2:38: ",
				"auth.ops-api.token_env: environment variable "
				"OPS_TOKEN is not set"));
	/* The empty glob: a warning, in the main file, at the pattern. */
	assert_int_equal(config_check_warnings(c, &warns), 1);
	dump(&warns);
	assert_true(has_problem(&warns, "surecron.yaml:5:46: ",
				"warning: include[2]: \"nothing/*.yaml\" "
				"matches no file"));
	config_problems_dispose(&probs);
	config_problems_dispose(&warns);
	config_free(c);
}

static void duplicate_across_files_names_both(void **state)
{
	struct config_problems probs = {0};
	struct config *c = NULL;

	assert_int_equal(load("dup", &c, &probs), SC_ECONFIG);
	assert_null(c);
	dump(&probs);
	assert_true(has_problem(&probs, "conf.d/teams.yaml:5:3: ",
				"schedules.nightly: duplicate schedule "
				"\"nightly\": also defined at "
				"surecron.yaml:5:3"));
	assert_true(has_problem(&probs, "conf.d/teams.yaml:9:3: ",
				"targets.log: duplicate target \"log\": also "
				"defined at surecron.yaml:2:3"));
	assert_int_equal(probs.n, 2);
	config_problems_dispose(&probs);
}

static void fragment_keys_and_nesting_refused(void **state)
{
	struct config_problems probs = {0};
	struct config *c = NULL;

	assert_int_equal(load("badkey", &c, &probs), SC_ECONFIG);
	dump(&probs);
	assert_true(has_problem(&probs, "conf.d/teams.yaml:5:1: ",
				"worker: only the main file may set worker"));
	assert_true(has_problem(&probs, "conf.d/teams.yaml:6:1: ",
				"schedulez: unknown key in an included file "
				"(did you mean schedules?)"));
	config_problems_dispose(&probs);
	assert_int_equal(back(state), 0);

	assert_int_equal(load("nested", &c, &probs), SC_ECONFIG);
	dump(&probs);
	assert_true(has_problem(&probs, "conf.d/a.yaml:1:1: ",
				"include: an included file cannot include "
				"others"));
	assert_int_equal(probs.n, 1);
	config_problems_dispose(&probs);
}

static void missing_plain_path_is_an_error(void **state)
{
	struct config_problems probs = {0};
	struct config *c = NULL;

	assert_int_equal(load("missing", &c, &probs), SC_ECONFIG);
	dump(&probs);
	assert_true(has_problem(&probs, "surecron.yaml:2:5: ",
				"include[0]: conf.d/absent.yaml: No such "
				"file"));
	config_problems_dispose(&probs);
}

/* Writes a config of n schedules in k fragments under dir. */
static void write_big(const char *dir, int n, int k)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "targets:\n  log: {kind: file, path: ./d.jsonl}\n"
		   "include: [\"conf.d/*.yaml\"]\n");
	fclose(f);
	for (int i = 0, fi = 0; fi < k; fi++) {
		snprintf(p, sizeof(p), "%s/conf.d/%02d.yaml", dir, fi);
		f = fopen(p, "w");
		assert_non_null(f);
		fprintf(f, "schedules:\n");
		for (int end = (fi + 1) * n / k; i < end; i++)
			fprintf(f, "  s%06d:\n    cron: \"%d * * * *\"\n"
				   "    tz: %s\n    targets: [log]\n"
				   "    tasks:\n      - {name: run, "
				   "command: [/bin/true]}\n",
				i, i % 60, i % 2 ? "UTC" : "Europe/Paris");
		fclose(f);
	}
}

static void twenty_thousand_in_four_fragments(void **state)
{
	const char *dir = tu_tmpdir();
	struct config_problems probs = {0};
	struct config *c = NULL;
	char p[PATH_MAX + 64];

	write_big(dir, 20000, 4);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	int rc = config_parse(p, &c, &probs);
	dump(&probs);
	assert_int_equal(rc, 0);
	assert_int_equal(c->n_schedules, 20000);
	assert_int_equal(c->n_files, 5);
	for (size_t i = 1; i < 5; i++)
		assert_int_equal(c->files[i].n_schedules, 5000);
	const struct schedule_spec *s = config_schedule(c, "s000000");
	assert_ptr_equal(s, &c->schedules[0]);
	s = config_schedule(c, "s019999");
	assert_ptr_equal(s, &c->schedules[19999]);
	assert_string_equal(s->cron, "19 * * * *");
	assert_ptr_equal(config_schedule(c, "s012345"), &c->schedules[12345]);
	assert_null(config_schedule(c, "s020000"));
	assert_null(config_schedule(c, "nope"));
	assert_null(config_schedule(c, NULL));
	/* One zone object per zone, shared. */
	assert_ptr_equal(c->schedules[0].zone, c->schedules[2].zone);
	assert_ptr_equal(c->schedules[1].zone, c->schedules[3].zone);
	/* A config changed by hand after the load (its count) is searched
	 * linearly: the index never answers for items it did not see. */
	c->n_schedules = 10;
	assert_null(config_schedule(c, "s019999"));
	assert_ptr_equal(config_schedule(c, "s000009"), &c->schedules[9]);
	c->n_schedules = 20000;
	int line, col;
	assert_true(config_locate(c, "schedules.s019999.cron", &line, &col));
	assert_int_equal(line, 2 + 6 * 4999 + 1);
	config_problems_dispose(&probs);
	config_free(c);
	/* config_load (the daemon's, the commands'): the same config,
	 * without the positions nobody reads there. */
	struct sc_err err = {0};
	assert_int_equal(config_load(p, &c, &err), 0);
	assert_int_equal(c->n_schedules, 20000);
	assert_ptr_equal(config_schedule(c, "s019999"), &c->schedules[19999]);
	assert_false(config_locate(c, "schedules.s019999.cron", &line, &col));
	config_free(c);
	tu_rmrf(dir);
}

/*
 * Fragments are parsed two at a time (config.c's read-ahead) and judged
 * in file order: whatever thread parsed which, the problems are the same
 * and in file order, each naming its fragment, the ones past the cap are
 * counted, and the load of a healthy set of twelve gives its schedules in
 * file order. Run twice to catch an order that depends on timing.
 */
static void fragments_judged_in_file_order(void **state)
{
	const char *dir = tu_tmpdir();
	char p[PATH_MAX + 64], line[1024];
	struct config_problems probs = {0};
	struct config *c = NULL;

	write_big(dir, 1200, 12);
	/* 03: a YAML error; 06: not a mapping; 09: 120 bad crons (past
	 * the cap of 100, with what came before). */
	snprintf(p, sizeof(p), "%s/conf.d/03.yaml", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "schedules:\n  a: [unclosed\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/conf.d/06.yaml", dir);
	assert_non_null(f = fopen(p, "w"));
	fprintf(f, "- a list\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/conf.d/09.yaml", dir);
	assert_non_null(f = fopen(p, "w"));
	fprintf(f, "schedules:\n");
	for (int i = 0; i < 120; i++)
		fprintf(f, "  bad%03d:\n    cron: \"61 * * * *\"\n"
			   "    targets: [log]\n    tasks:\n"
			   "      - {name: run, command: [/bin/true]}\n", i);
	fclose(f);
	char p_06[PATH_MAX + 64];
	snprintf(p_06, sizeof(p_06), "%s/conf.d/06.yaml:1:1: ", dir);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	char first[2][1024], last[2][1024];
	size_t n[2], dropped[2];
	for (int round = 0; round < 2; round++) {
		assert_int_equal(config_parse(p, &c, &probs), SC_ECONFIG);
		assert_null(c);
		n[round] = probs.n;
		dropped[round] = probs.n_dropped;
		config_problem_format(&probs, 0, first[round], 1024);
		config_problem_format(&probs, probs.n - 1, last[round], 1024);
		assert_true(has_problem(&probs, p_06, "expected a mapping at "
					"the top level, got a list"));
		size_t prev = 0;
		for (size_t i = 0; i < probs.n; i++) {
			assert_true(probs.items[i].file_ix >= prev);
			prev = probs.items[i].file_ix;
		}
		config_problems_dispose(&probs);
	}
	print_message("%zu problems, %zu more; first %s; last %s\n", n[0],
		      dropped[0], first[0], last[0]);
	assert_int_equal(n[0], 100);
	assert_int_equal(n[1], 100);
	assert_int_equal(dropped[0], dropped[1]);
	assert_string_equal(first[0], first[1]);
	assert_string_equal(last[0], last[1]);
	/* Kept: 03's, 06's and the first 98 of 09's, in that order. */
	assert_non_null(strstr(first[0], "conf.d/03.yaml:3:1: YAML syntax"));
	assert_non_null(strstr(last[0], "conf.d/09.yaml:488:11: "
				       "schedules.bad097.cron: invalid cron"));
	assert_int_equal(dropped[0], 22);
	/* The healthy set. */
	tu_rmrf(dir);
	dir = tu_tmpdir();
	write_big(dir, 1200, 12);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	int rc = config_parse(p, &c, &probs);
	for (size_t i = 0; i < probs.n; i++)
		fprintf(stderr, "  %s\n",
			config_problem_format(&probs, i, line, sizeof(line)));
	assert_int_equal(rc, 0);
	assert_int_equal(c->n_files, 13);
	assert_int_equal(c->n_schedules, 1200);
	for (size_t i = 0; i < c->n_schedules; i++) {
		char want[32];
		snprintf(want, sizeof(want), "s%06zu", i);
		assert_string_equal(c->schedules[i].name, want);
	}
	for (size_t i = 1; i < 13; i++)
		assert_int_equal(c->files[i].n_schedules, 100);
	config_problems_dispose(&probs);
	config_free(c);
	tu_rmrf(dir);
}

/* A folder a pattern matches is passed over with a warning at the
 * pattern; the files beside it load. */
static void a_folder_matched_is_passed_over_with_a_warning(void **state)
{
	const char *dir = tu_tmpdir();
	struct config_problems probs = {0}, warns = {0};
	struct config *c = NULL;
	char p[PATH_MAX + 64], want[PATH_MAX + 64];
	FILE *f;

	(void)state;
	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/conf.d/teams.yaml", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/conf.d/a.yaml", dir);
	assert_non_null(f = fopen(p, "w"));
	fputs("schedules:\n  a:\n    cron: \"0 * * * *\"\n"
	      "    tasks: [{name: t, command: [/bin/true]}]\n", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	assert_non_null(f = fopen(p, "w"));
	fputs("store: sqlite:./s.db\n"
	      "include: [\"conf.d/*.yaml\"]\n", f);
	fclose(f);
	assert_int_equal(config_parse(p, &c, &probs), 0);
	assert_int_equal(c->n_files, 2);
	assert_int_equal(c->n_schedules, 1);
	/* Beside it, the warning that no alert target is set. */
	assert_int_equal(config_check_warnings(c, &warns), 2);
	dump(&warns);
	snprintf(want, sizeof(want), "matches the folder %s/conf.d/teams.yaml, "
		 "passed over", dir);
	assert_true(has_problem(&warns, p, want));
	config_problems_dispose(&probs);
	config_problems_dispose(&warns);
	config_free(c);
	tu_rmrf(dir);
}

/* The same 20,000 in one file is past the per-file node limit: the
 * limits stay per file. */
static void per_file_limit_stays(void **state)
{
	const char *dir = tu_tmpdir();
	struct config_problems probs = {0};
	struct config *c = NULL;
	char p[PATH_MAX + 64];

	write_big(dir, 25000, 1);
	snprintf(p, sizeof(p), "%s/conf.d/00.yaml", dir);
	assert_int_equal(config_parse(p, &c, &probs), SC_ECONFIG);
	assert_true(has_problem(&probs, p, "too many YAML nodes"));
	config_problems_dispose(&probs);
	tu_rmrf(dir);
}

static void check_prints_counts_per_file(void **state)
{
	char out[4096], err[4096];
	const char *env[] = {"OPS_TOKEN=t", NULL};
	const char *args[] = {"check", "surecron.yaml", NULL};
	const char *scratch = tu_tmpdir();

	int st = tu_run_bin(scratch, fixture("ok"), env, args, out,
			    sizeof(out), err, sizeof(err));
	fprintf(stderr, "%s%s", out, err);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "ok: 5 schedules, 2 targets\n"
				    "  surecron.yaml: 1 schedule, 1 target, "
				    "0 auth\n"
				    "  conf.d/10-zulu.yaml: 2 schedules, 1 "
				    "target, 0 auth\n"
				    "  conf.d/20-alpha.yaml: 1 schedule, 0 "
				    "targets, 0 auth\n"
				    "  teams/ops.yaml: 1 schedule, 0 targets, "
				    "1 auth\n"));
	assert_non_null(strstr(err, "surecron.yaml:5:46: warning: include[2]"
				    ": \"nothing/*.yaml\" matches no file"));
	/* A warning, not an error; --strict makes it one. */
	const char *strict[] = {"check", "--strict", "surecron.yaml", NULL};
	st = tu_run_bin(scratch, fixture("ok"), env, strict, out, sizeof(out),
			err, sizeof(err));
	assert_int_equal(st, 2);
	/* A single file: no per-file lines. */
	const char *one[] = {"check", "conf.d/sub/deep.yaml", NULL};
	st = tu_run_bin(scratch, fixture("ok"), env, one, out, sizeof(out),
			err, sizeof(err));
	assert_int_equal(st, 0);
	assert_string_equal(out, "ok: 1 schedule, 0 targets\n");
	tu_rmrf(scratch);
}

/* dir/name with text and mode. */
static void put(const char *dir, const char *name, const char *text,
		mode_t mode)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

static const char trust_main[] =
	"targets:\n  log: {kind: file, path: ./d.jsonl}\n"
	"include: [\"conf.d/*.yaml\"]\n";

static const char trust_frag[] =
	"schedules:\n  b:\n    cron: \"0 3 * * *\"\n    targets: [log]\n"
	"    tasks: [{name: t, command: [/bin/true]}]\n";

/* A warning of c's (config_check_warnings) holding text. */
static bool has_warning(const struct config *c, const char *where,
			const char *text)
{
	struct config_problems w = {0};

	assert_true(config_check_warnings(c, &w) >= 0);
	bool yes = has_problem(&w, where, text);
	if (!yes)
		dump(&w);
	config_problems_dispose(&w);
	return yes;
}

/*
 * Issue 44 row 10: a config file its group or any user can write is
 * loaded by check with a warning naming it (--strict makes that an
 * error, test_cli_check), and refused by every other load (the daemon's
 * start and reload, the commands', the light load of status), the main
 * file as a fragment.
 */
static void writable_by_others_warned_at_check_refused_at_load(void **st)
{
	const char *dir = tu_tmpdir();
	char p[PATH_MAX + 64], want[PATH_MAX + 128];
	struct config_problems probs = {0};
	struct config *c = NULL;
	struct sc_err err = {0};

	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put(dir, "surecron.yaml", trust_main, 0644);
	put(dir, "conf.d/b.yaml", trust_frag, 0664);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	assert_int_equal(config_parse(p, &c, &probs), 0);
	snprintf(want, sizeof(want), "%s/conf.d/b.yaml: ", dir);
	assert_true(has_warning(c, want, "warning: not trusted: writable by "
				"its group (mode 0664)"));
	config_free(c);
	c = NULL;
	config_problems_dispose(&probs);
	assert_int_equal(config_load(p, &c, &err), SC_ECONFIG);
	assert_null(c);
	assert_non_null(strstr(err.msg, "conf.d/b.yaml: not trusted: "
			       "writable by its group"));
	err = (struct sc_err){0};
	assert_int_equal(config_load_light(p, true, "b", &c, &err),
			 SC_ECONFIG);
	assert_non_null(strstr(err.msg, "not trusted"));

	/* The main file, writable by anyone. */
	put(dir, "conf.d/b.yaml", trust_frag, 0644);
	assert_int_equal(chmod(p, 0646), 0);
	assert_int_equal(config_parse(p, &c, &probs), 0);
	snprintf(want, sizeof(want), "%s: ", p);
	assert_true(has_warning(c, want, "warning: not trusted: writable by "
				"any user (mode 0646)"));
	config_free(c);
	c = NULL;
	config_problems_dispose(&probs);
	err = (struct sc_err){0};
	assert_int_equal(config_load(p, &c, &err), SC_ECONFIG);
	assert_non_null(strstr(err.msg, "surecron.yaml: not trusted"));

	/* Owner-only writes: loads, no such warning. */
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(config_load(p, &c, &err), 0);
	config_free(c);
	tu_rmrf(dir);
}

/* Issue 44 row 10: a file owned by another user (not root) is refused
 * the same way, as cron refuses it. Needs root to give a file away. */
static void owned_by_another_user_refused(void **state)
{
	if (geteuid() != 0) {
		fprintf(stderr, "skipped: giving a file to another user "
			"needs root\n");
		skip();
	}
	const char *dir = tu_tmpdir();
	char p[PATH_MAX + 64], want[PATH_MAX + 128];
	struct config_problems probs = {0};
	struct config *c = NULL;
	struct sc_err err = {0};

	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put(dir, "surecron.yaml", trust_main, 0644);
	put(dir, "conf.d/b.yaml", trust_frag, 0644);
	snprintf(p, sizeof(p), "%s/conf.d/b.yaml", dir);
	assert_int_equal(chown(p, 65534, 65534), 0);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	assert_int_equal(config_parse(p, &c, &probs), 0);
	snprintf(want, sizeof(want), "%s/conf.d/b.yaml: ", dir);
	assert_true(has_warning(c, want, "warning: not trusted: owned by uid "
				"65534, neither root nor the user surecron "
				"runs as (uid 0)"));
	config_free(c);
	c = NULL;
	config_problems_dispose(&probs);
	assert_int_equal(config_load(p, &c, &err), SC_ECONFIG);
	assert_non_null(strstr(err.msg, "conf.d/b.yaml: not trusted: owned "
			       "by uid 65534"));
	tu_rmrf(dir);
}

/*
 * Issue 44 row 11: a FIFO an include pattern matches is refused, naming
 * it, without being opened (an open for reading waits for a writer:
 * check, status and the daemon's reload hung); so is a device. The
 * watch opens the FIFO for writing if the load blocks on it, so the
 * code before the fix fails here instead of hanging.
 */
static void fifo_and_device_refused_unopened(void **state)
{
	const char *dir = tu_tmpdir();
	char p[PATH_MAX + 64], fifo[512], want[PATH_MAX + 128];
	struct config_problems probs = {0};
	struct config *c = NULL;
	struct sc_err err = {0};
	struct tu_fifo_watch w;

	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put(dir, "surecron.yaml", trust_main, 0644);
	put(dir, "conf.d/a.yaml", trust_frag, 0644);
	snprintf(fifo, sizeof(fifo), "%s/conf.d/b.yaml", dir);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);

	tu_fifo_watch_start(&w, fifo, 3000);
	int rc = config_parse(p, &c, &probs);
	assert_false(tu_fifo_watch_stop(&w));
	assert_int_equal(rc, SC_ECONFIG);
	snprintf(want, sizeof(want), "%s: ", fifo);
	assert_true(has_problem(&probs, want, "not a regular file but a FIFO "
				"(not opened)"));
	config_problems_dispose(&probs);
	/* The light load of `status NAME`, and the daemon's. */
	tu_fifo_watch_start(&w, fifo, 3000);
	err = (struct sc_err){0};
	rc = config_load_light(p, true, "b", &c, &err);
	assert_false(tu_fifo_watch_stop(&w));
	assert_int_equal(rc, SC_ECONFIG);
	assert_non_null(strstr(err.msg, "conf.d/b.yaml: not a regular file "
			       "but a FIFO"));
	tu_fifo_watch_start(&w, fifo, 3000);
	err = (struct sc_err){0};
	rc = config_load(p, &c, &err);
	assert_false(tu_fifo_watch_stop(&w));
	assert_int_equal(rc, SC_ECONFIG);

	/* A device a pattern matches. */
	put(dir, "surecron.yaml",
	    "targets:\n  log: {kind: file, path: ./d.jsonl}\n"
	    "include: [\"/dev/nul[l]\"]\n"
	    "schedules:\n  a: {cron: \"0 3 * * *\", targets: [log], "
	    "tasks: [{name: t, command: [/bin/true]}]}\n", 0644);
	assert_int_equal(config_parse(p, &c, &probs), SC_ECONFIG);
	assert_true(has_problem(&probs, "/dev/null: ", "not a regular file "
				"but a character device (not opened)"));
	config_problems_dispose(&probs);
	unlink(fifo);
	tu_rmrf(dir);
}

/*
 * Issue 44 row 10: a pattern that matched a file which is not a config
 * (a link to a secret file) must not have its lines printed as the keys
 * of errors (nor in "duplicate key"). A key that reads as a mistyped
 * setting is still quoted.
 */
static void lines_of_a_file_not_a_config_are_not_quoted(void **state)
{
	const char *dir = tu_tmpdir();
	char p[PATH_MAX + 64], line[1024];
	struct config_problems probs = {0};
	struct config *c = NULL;

	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put(dir, "surecron.yaml", trust_main, 0644);
	put(dir, "secret.env",
	    "AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI\n"
	    "ghp_16C7e42F292c6912E7710c838347Ae178B4a: x\n"
	    "hunter2hunter2hunter2hunter2hunter2hunter2: y\n"
	    "db pass: z\n"
	    "schedueles: {}\n"
	    "ghp_16C7e42F292c6912E7710c838347Ae178B4a: again\n", 0600);
	snprintf(p, sizeof(p), "%s/secret.env", dir);
	char link[1024];
	snprintf(link, sizeof(link), "%s/conf.d/x.yaml", dir);
	assert_int_equal(symlink(p, link), 0);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	assert_int_equal(config_parse(p, &c, &probs), SC_ECONFIG);
	size_t hidden = 0;
	for (size_t i = 0; i < probs.n; i++) {
		config_problem_format(&probs, i, line, sizeof(line));
		fprintf(stderr, "%s\n", line);
		assert_null(strstr(line, "AWS_SECRET"));
		assert_null(strstr(line, "wJalr"));
		assert_null(strstr(line, "ghp_"));
		assert_null(strstr(line, "hunter2"));
		assert_null(strstr(line, "db pass"));
		hidden += strstr(line, "(key not shown)") != NULL;
	}
	/* Four unknown, the repeated one twice more: unknown, duplicate. */
	assert_int_equal(hidden, 6);
	snprintf(p, sizeof(p), "%s:1:1: ", link);
	assert_true(has_problem(&probs, p, "(key not shown): an unknown key "
				"in an included file that does not read as a "
				"setting"));
	snprintf(p, sizeof(p), "%s:5:1: ", link);
	assert_true(has_problem(&probs, p, "schedueles: unknown key in an "
				"included file (did you mean schedules?)"));
	config_problems_dispose(&probs);
	tu_rmrf(dir);
}

/*
 * Issue 44 row 12: which files are already in the config is a hash
 * table of resolved paths (it was a compare with every earlier file,
 * O(N^2)); here its answers: 300 fragments (the table grows past its
 * first size several times), each matched by two patterns, a link to one
 * of them, and the main file matched by a pattern, are each read once.
 */
static void a_file_matched_many_times_is_read_once(void **state)
{
	const char *dir = tu_tmpdir();
	char p[PATH_MAX + 64], name[64], text[256];
	struct config_problems probs = {0};
	struct config *c = NULL;

	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put(dir, "surecron.yaml",
	    "targets:\n  log: {kind: file, path: ./d.jsonl}\n"
	    "include: [\"conf.d/*.yaml\", \"conf.d/f*\", \"*.yaml\", "
	    "\"link.yaml\"]\n", 0644);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "conf.d/f%03d.yaml", i);
		snprintf(text, sizeof(text), "schedules:\n  s%03d: {cron: \"0 "
			 "3 * * *\", targets: [log], tasks: [{name: t, "
			 "command: [/bin/true]}]}\n", i);
		put(dir, name, text, 0644);
	}
	char to[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/conf.d/f123.yaml", dir);
	snprintf(to, sizeof(to), "%s/link.yaml", dir);
	assert_int_equal(symlink(p, to), 0);
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	int rc = config_parse(p, &c, &probs);
	dump(&probs);
	assert_int_equal(rc, 0);
	assert_int_equal(c->n_files, 301);
	assert_int_equal(c->n_schedules, 300);
	for (size_t i = 1; i < c->n_files; i++) {
		snprintf(to, sizeof(to), "%s/conf.d/f%03zu.yaml", dir, i - 1);
		assert_string_equal(c->files[i].path, to);
	}
	config_problems_dispose(&probs);
	config_free(c);
	tu_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			globs_sorted_relative_and_counted, setup, back),
		cmocka_unit_test_setup_teardown(fragment_paths_are_its_own,
						setup, back),
		cmocka_unit_test_setup_teardown(check_names_the_fragment, setup,
						back),
		cmocka_unit_test_setup_teardown(
			duplicate_across_files_names_both, setup, back),
		cmocka_unit_test_setup_teardown(
			fragment_keys_and_nesting_refused, setup, back),
		cmocka_unit_test_setup_teardown(missing_plain_path_is_an_error,
						setup, back),
		cmocka_unit_test_setup_teardown(
			twenty_thousand_in_four_fragments, setup, back),
		cmocka_unit_test_setup_teardown(fragments_judged_in_file_order,
						setup, back),
		cmocka_unit_test_setup_teardown(
			a_folder_matched_is_passed_over_with_a_warning, setup,
			back),
		cmocka_unit_test_setup_teardown(per_file_limit_stays, setup,
						back),
		cmocka_unit_test_setup_teardown(check_prints_counts_per_file,
						setup, back),
		cmocka_unit_test_setup_teardown(
			writable_by_others_warned_at_check_refused_at_load,
			setup, back),
		cmocka_unit_test_setup_teardown(owned_by_another_user_refused,
						setup, back),
		cmocka_unit_test_setup_teardown(
			fifo_and_device_refused_unopened, setup, back),
		cmocka_unit_test_setup_teardown(
			lines_of_a_file_not_a_config_are_not_quoted, setup,
			back),
		cmocka_unit_test_setup_teardown(
			a_file_matched_many_times_is_read_once, setup, back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
