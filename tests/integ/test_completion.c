/*
 * test_completion.c - the bash completion (completion/surecron.bash,
 * issue 18), run in a real bash against the binary under test: commands,
 * a command's options, schedule names from --config or ./surecron.yaml,
 * the ledger's outcome words, and nothing where nothing fits. Also the
 * other file installed beside the binary that is kept by hand next to
 * its source: each committed man page (docs/man/X) is what `make man`
 * makes of docs/man/X.md, checked when this machine's pandoc is the one
 * that made the committed pages (another version words troff otherwise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"
#include "testutil.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

/* The completions of words (the last is the one being completed), one
 * per line into out, as bash would offer them, run in folder cwd. */
static void complete_in(const char *cwd, const char *words, char *out,
			size_t n)
{
	char bin[PATH_MAX], bindir[PATH_MAX], script[PATH_MAX], cmd[4 * PATH_MAX + 1024];

	assert_non_null(realpath(tu_bin(), bin));
	assert_non_null(realpath("completion/surecron.bash", script));
	snprintf(bindir, sizeof(bindir), "%s", bin);
	*strrchr(bindir, '/') = '\0';
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && PATH='%s':$PATH bash -c 'source \"%s\"; "
		 "COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
		 "_surecron; printf \"%%s\\n\" \"${COMPREPLY[@]}\" | sort'",
		 cwd, bindir, script, words);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t k = fread(out, 1, n - 1, f);
	out[k] = '\0';
	assert_int_equal(pclose(f), 0);
}

static void expect(const char *words, const char *want)
{
	char got[8192];

	complete_in(dir, words, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("completing (%s): got\n%s\nexpected\n%s", words, got,
			 want);
}

static const char cfg_text[] =
	"store: sqlite:./s.db\n"
	"schedules:\n"
	"  weekly-summary: {cron: '0 17 * * 5', tasks: [{name: a, command: "
	"[/bin/true]}]}\n"
	"  daily-digest: {cron: '30 8 * * *', tasks: [{name: a, command: "
	"[/bin/true]}]}\n"
	"  day-end: {cron: '0 23 * * *', tasks: [{name: a, command: "
	"[/bin/true]}]}\n";

static void write_config(const char *name)
{
	char p[320];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(cfg_text, f);
	fclose(f);
}

static void commands_and_options(void **state)
{
	(void)state;
	if (system("command -v bash >/dev/null 2>&1") != 0)
		skip();
	expect("surecron ch", "check\n");
	expect("surecron im", "import-crontab\n");
	expect("surecron --v", "--version\n");
	expect("surecron ledger --l", "--limit\n--lost\n");
	expect("surecron import-crontab --s", "--store\n--system\n");
	expect("surecron help st", "status\n");
	/* A value is not completed as an option or a name. */
	expect("surecron ledger --since \"\"", "\n");
	expect("surecron next --tz Asia/Seo", "Asia/Seoul\n");
}

static void schedule_names(void **state)
{
	(void)state;
	if (system("command -v bash >/dev/null 2>&1") != 0)
		skip();
	write_config("team.yaml");
	expect("surecron explain --config team.yaml we", "weekly-summary\n");
	expect("surecron trigger --config team.yaml da",
	       "daily-digest\nday-end\n");
	expect("surecron ledger --config team.yaml --schedule day-",
	       "day-end\n");
	expect("surecron ledger --config=team.yaml --schedule day-",
	       "day-end\n");
	/* ack's second word is a slot, not a name. */
	expect("surecron ack --config team.yaml weekly-summary \"\"", "\n");
	/* No --config: ./surecron.yaml; none there: nothing. */
	expect("surecron status \"\"", "\n");
	write_config("surecron.yaml");
	expect("surecron status w", "weekly-summary\n");
}

static int cmp_words(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* `ledger --outcome` offers exactly the ledger's outcome words (the
 * table in src/ledger.c), so the completion cannot drift from it. */
static void outcome_words(void **state)
{
	const char *w[64];
	char want[2048] = "";

	(void)state;
	if (system("command -v bash >/dev/null 2>&1") != 0)
		skip();
	assert_true(ledger_n_outcomes <= sizeof(w) / sizeof(w[0]));
	for (size_t i = 0; i < ledger_n_outcomes; i++)
		w[i] = ledger_outcomes[i];
	qsort(w, ledger_n_outcomes, sizeof(w[0]), cmp_words);
	for (size_t i = 0; i < ledger_n_outcomes; i++) {
		strcat(want, w[i]);
		strcat(want, "\n");
	}
	expect("surecron ledger --outcome \"\"", want);
	expect("surecron ledger --outcome fa", "failed\n");
	expect("surecron ledger --outcome ab", "abandoned\n");
}

/* The committed troff pages equal what `make man` makes of their
 * markdown now: a page edited in one place only fails here. */
static void man_pages_match_sources(void **state)
{
	char ver[256] = "", cmd[3 * PATH_MAX], made[PATH_MAX], page[PATH_MAX];
	char *want = malloc(1 << 20), *got = malloc(1 << 20);
	size_t n_checked = 0;
	FILE *f;

	(void)state;
	assert_non_null(want);
	assert_non_null(got);
	f = popen("pandoc --version 2>/dev/null | head -n 1", "r");
	if (f) {
		if (!fgets(ver, sizeof(ver), f))
			ver[0] = '\0';
		pclose(f);
	}
	ver[strcspn(ver, "\n")] = '\0';
	DIR *d = opendir("docs/man");
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".md") != 0)
			continue;
		snprintf(page, sizeof(page), "docs/man/%.*s", (int)(len - 3),
			 de->d_name);
		tu_slurp(page, want, 1 << 20);
		/* "Pandoc 2.17.1.1" in the page, "pandoc 2.17.1.1" here. */
		const char *by = strstr(want, "generated by Pandoc ");
		if (!ver[0] || !by ||
		    strncmp(by + 20, ver + 7, strlen(ver + 7)) != 0 ||
		    by[20 + strlen(ver + 7)] != '\n') {
			printf("man pages not checked: made by %.30s, "
			       "this machine has %s\n", by ? by + 13 : "?",
			       ver[0] ? ver : "no pandoc");
			break;
		}
		snprintf(made, sizeof(made), "%s/page", dir);
		snprintf(cmd, sizeof(cmd),
			 "pandoc -s -f markdown -t man '%s.md' -o '%s'", page,
			 made);
		assert_int_equal(system(cmd), 0);
		tu_slurp(made, got, 1 << 20);
		if (strcmp(got, want) != 0)
			fail_msg("%s differs from what pandoc makes of %s.md: "
				 "run `make man` and commit the page", page,
				 page);
		n_checked++;
	}
	closedir(d);
	free(want);
	free(got);
	if (n_checked == 0)
		skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(commands_and_options, setup,
						teardown),
		cmocka_unit_test_setup_teardown(schedule_names, setup,
						teardown),
		cmocka_unit_test_setup_teardown(outcome_words, setup,
						teardown),
		cmocka_unit_test_setup_teardown(man_pages_match_sources, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
