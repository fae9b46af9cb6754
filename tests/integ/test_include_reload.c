/*
 * test_include_reload.c - a running daemon and a config in pieces (issue
 * 15): SIGHUP re-reads every fragment `include:` names, so a schedule
 * added in a new fragment is taken (and runs when triggered); a broken
 * fragment makes the reload refused, the log naming the fragment, and
 * the old config keeps running. Issue 44: so does a fragment others can
 * write, or a FIFO a pattern matches (the reload does not block on it:
 * schedules keep firing and SIGTERM stops the daemon); and the daemon
 * does not start on a main file others can write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon_util.h"
#include "fifo_watch.h"
#include "queue.h"

#define PATIENCE_MS 20000

static char dir[256];

static void put(const char *name, const char *text)
{
	char p[700];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static size_t log_count(const char *needle)
{
	char p[700], line[4096];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/daemon.log", dir);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static bool wait_log(const char *needle, size_t n)
{
	int64_t end = tu_now_ms() + PATIENCE_MS;

	while (log_count(needle) < n) {
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(10);
	}
	return true;
}

static bool wait_file(const char *name)
{
	char p[700];
	struct stat st;
	int64_t end = tu_now_ms() + PATIENCE_MS;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	while (stat(p, &st) != 0) {
		if (tu_now_ms() > end)
			return false;
		tu_sleep_ms(10);
	}
	return true;
}

/* A manual slot of NAME due now, written to the store as `surecron
 * trigger` does (the CLI would read the config, which may be broken). */
static int trigger(const char *name)
{
	char url[700];
	struct sc_retry_policy p = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct sc_err err = {0};
	int64_t id = 0;

	snprintf(url, sizeof(url), "sqlite:%s/surecron.db", dir);
	struct store *s = tu_store_open(url);
	int rc = queue_trigger(s, name, tu_now_ms() / 1000 * 1000, &p, &id,
			       NULL, &err);
	store_close(s);
	return rc;
}

static const char main_yaml[] =
	"store: sqlite:./surecron.db\n"
	"worker: {concurrency: 1, lease: 30s, grace: 1s}\n"
	"targets:\n"
	"  out: {kind: file, path: ./out.jsonl}\n"
	"alerts: {targets: [out]}\n"
	"include: [\"conf.d/*.yaml\"]\n";

static const char first_yaml[] =
	"schedules:\n"
	"  first:\n"
	"    cron: \"0 3 1 1 *\"\n"
	"    tz: UTC\n"
	"    targets: [out]\n"
	"    tasks: [{name: t, shell: \"touch ran-first\"}]\n";

static const char second_yaml[] =
	"schedules:\n"
	"  second:\n"
	"    cron: \"0 3 1 1 *\"\n"
	"    tz: UTC\n"
	"    targets: [out]\n"
	"    tasks: [{name: t, shell: \"touch ran-second\"}]\n";

static void reload_reads_fragments(void **state)
{
	char p[700];

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	put("surecron.yaml", main_yaml);
	put("conf.d/10-first.yaml", first_yaml);
	pid_t pid = tu_start_daemon(dir, "surecron.yaml", NULL, 0);
	assert_true(wait_log("event=started", 1));

	/* A new fragment: its schedule is in the reloaded config. */
	put("conf.d/20-second.yaml", second_yaml);
	kill(pid, SIGHUP);
	assert_true(wait_log("event=reload outcome=ok schedules=2", 1));
	assert_int_equal(trigger("second"), 0);
	assert_true(wait_file("ran-second"));

	/* A broken fragment: refused, the fragment named, the old config
	 * (both schedules) still running. */
	put("conf.d/30-broken.yaml",
	    "worker: {concurrency: 4}\n"
	    "schedules:\n"
	    "  third: {cron: \"0 3 * * *\", tasks: [{name: t, shell: x}]}\n");
	kill(pid, SIGHUP);
	assert_true(wait_log("event=reload outcome=refused", 1));
	assert_int_equal(log_count("conf.d/30-broken.yaml:1:1: worker: only "
				   "the main file may set worker"), 1);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still running */
	assert_int_equal(trigger("first"), 0);
	assert_true(wait_file("ran-first"));
	assert_int_equal(log_count("event=reload outcome=ok"), 1);

	kill(pid, SIGTERM);
	int st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	tu_rmrf(dir);
}

static void reload_refuses_untrusted_or_fifo(void **state)
{
	char p[700], fifo[700];
	struct tu_fifo_watch w;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(p, sizeof(p), "%s/conf.d", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	put("surecron.yaml", main_yaml);
	put("conf.d/10-first.yaml", first_yaml);
	snprintf(p, sizeof(p), "%s/conf.d/10-first.yaml", dir);
	assert_int_equal(chmod(p, 0644), 0);
	pid_t pid = tu_track(tu_start_daemon(dir, "surecron.yaml", NULL, 0));
	assert_true(wait_log("event=started", 1));

	/* A fragment any user can write: refused, named, old config kept. */
	put("conf.d/20-open.yaml", second_yaml);
	snprintf(p, sizeof(p), "%s/conf.d/20-open.yaml", dir);
	assert_int_equal(chmod(p, 0666), 0);
	kill(pid, SIGHUP);
	assert_true(wait_log("event=reload outcome=refused", 1));
	assert_int_equal(log_count("conf.d/20-open.yaml: not trusted: "
				   "writable by any user (mode 0666)"), 1);
	assert_int_equal(chmod(p, 0644), 0);

	/* A FIFO: refused without blocking the scheduler on it. */
	snprintf(fifo, sizeof(fifo), "%s/conf.d/30-pipe.yaml", dir);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	tu_fifo_watch_start(&w, fifo, 5000);
	kill(pid, SIGHUP);
	bool refused = wait_log("event=reload outcome=refused", 2);
	assert_false(tu_fifo_watch_stop(&w));
	assert_true(refused);
	assert_int_equal(log_count("conf.d/30-pipe.yaml: not a regular file "
				   "but a FIFO (not opened)"), 1);
	assert_int_equal(log_count("event=reload outcome=ok"), 0);
	assert_int_equal(trigger("first"), 0);
	assert_true(wait_file("ran-first"));
	kill(pid, SIGTERM);
	int st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	unlink(fifo);

	/* The start: a main file any user can write, refused. */
	snprintf(p, sizeof(p), "%s/surecron.yaml", dir);
	assert_int_equal(chmod(p, 0646), 0);
	pid = tu_track(tu_start_daemon(dir, "surecron.yaml", NULL, 0));
	st = tu_wait_exit(pid, PATIENCE_MS);
	assert_true(st != -1 && WIFEXITED(st));
	assert_true(WEXITSTATUS(st) != 0);
	assert_true(log_count("surecron.yaml: not trusted: writable by any "
			      "user (mode 0646)") >= 1);
	tu_rmrf(dir);
}

static int reap(void **state)
{
	tu_reap_all();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reload_reads_fragments),
		cmocka_unit_test_teardown(reload_refuses_untrusted_or_fifo,
					  reap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
