/*
 * bench_orch.c - what a slot costs: spawning a task (surecron's no-shell
 * posix_spawn + process group + poll loop, against system(3), which runs
 * /bin/sh -c like classic cron does), and a whole slot end to end (one
 * task, outbox row, file target with fsync, send guard, slot marker in a
 * real SQLite file). Prints one line per case; the ratio line compares the
 * two spawn paths measured in the same run.
 *
 *   bench_orch [TASKS [SLOTS]]
 *   bench_orch floor SECONDS OFFSET_MS PROGRAM [ARG...]
 *       The floor of a scheduled start (bench/daemon.sh's P5 row): at
 *       OFFSET_MS past each of the next SECONDS wall-clock seconds, sleep
 *       until that instant (CLOCK_REALTIME, absolute, no timer slack) and
 *       posix_spawn PROGRAM in its own process group, nothing else: how
 *       late, after the instant, posix_spawn returned (the program was
 *       exec'd). One line: floor runs= p50_ms= p99_ms= max_ms=. Run
 *       beside the daemon, half a second off its slots, so both meet the
 *       same machine.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator.h"
#include "store.h"
#include "task.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

extern char **environ;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static double pct_ms(const int64_t *v, int n, int p)
{
	int i = (p * n + 99) / 100 - 1;

	return (double)v[i < 0 ? 0 : i >= n ? n - 1 : i] / 1e6;
}

static int floor_main(int argc, char **argv)
{
	if (argc < 5 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: bench_orch floor SECONDS OFFSET_MS "
			"PROGRAM [ARG...]\n");
		return 2;
	}
	int n = atoi(argv[2]), ok = 0;
	int64_t off_ns = (int64_t)atoi(argv[3]) * 1000000;
	int64_t *late = calloc((size_t)n, sizeof(*late));
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	struct timespec ts;

	/* The program's output goes nowhere: this line is the output. */
	if (!late || posix_spawnattr_init(&attr) != 0 ||
	    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP) != 0 ||
	    posix_spawn_file_actions_init(&fa) != 0 ||
	    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY,
					     0) != 0) {
		free(late);
		return 1;
	}
	(void)prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t at = ((int64_t)ts.tv_sec + 1) * 1000000000 + off_ns;
	for (int i = 0; i < n; i++, at += 1000000000) {
		struct timespec when = {.tv_sec = (time_t)(at / 1000000000),
					.tv_nsec = (long)(at % 1000000000)};
		pid_t pid;

		while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &when,
				       NULL) != 0)
			;
		int rc = posix_spawn(&pid, argv[4], &fa, &attr, argv + 4,
				     environ);
		clock_gettime(CLOCK_REALTIME, &ts);
		if (rc != 0) {
			fprintf(stderr, "bench_orch floor: %s: %s\n", argv[4],
				strerror(rc));
			free(late);
			return 1;
		}
		late[ok++] = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - at;
		waitpid(pid, NULL, 0);
	}
	qsort(late, (size_t)ok, sizeof(*late), cmp_i64);
	printf("floor runs=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", ok,
	       pct_ms(late, ok, 50), pct_ms(late, ok, 99),
	       (double)late[ok - 1] / 1e6);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	free(late);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "floor") == 0)
		return floor_main(argc, argv);
	int n = argc > 1 ? atoi(argv[1]) : 200;
	int slots = argc > 2 ? atoi(argv[2]) : 50;
	char *targv[] = {"true", NULL};
	struct task_spec t = {.name = "b", .argv = targv};
	struct task_ctx ctx = {.schedule = "bench", .slot_ms = 0, .attempt = 1};
	struct task_result r;
	double t0, ours, sys;

	t0 = now_s();
	for (int i = 0; i < n; i++) {
		task_run(&t, &ctx, &r);
		task_result_dispose(&r);
	}
	ours = (now_s() - t0) / n;
	t0 = now_s();
	for (int i = 0; i < n; i++)
		if (system("true") != 0)
			return 1;
	sys = (now_s() - t0) / n;
	printf("task spawn (argv, own group, poll): %8.1f us/task\n", ours * 1e6);
	printf("system(\"true\") via /bin/sh -c:      %8.1f us/task\n", sys * 1e6);
	printf("ratio surecron/system: %.2f\n", ours / sys);

	char dir[] = "/tmp/surecron-bench-XXXXXX", url[128], path[128];
	if (!mkdtemp(dir))
		return 1;
	snprintf(url, sizeof(url), "sqlite:%s/b.db", dir);
	snprintf(path, sizeof(path), "%s/out.jsonl", dir);
	struct sc_clock *clk = sc_clock_virtual_new(1795798800000LL);
	struct store *s = NULL;
	if (store_open(url, clk, &s, NULL) != 0)
		return 1;
	char *echo[] = {"echo", "weekly report", NULL};
	struct task_spec task = {.name = "gen", .argv = echo};
	struct target_spec tg = {.name = "file", .kind = TARGET_FILE,
				 .path = path};
	char *tnames[] = {"file", NULL};
	struct schedule_spec sc = {.name = "bench", .targets = tnames,
				   .n_targets = 1, .tasks = &task, .n_tasks = 1};
	struct config cfg = {.targets = &tg, .n_targets = 1};
	struct orchestrator_ctx oc = {.store = s, .config = &cfg};
	t0 = now_s();
	for (int i = 0; i < slots; i++) {
		struct orchestrator_report rep;
		if (orchestrator_run_slot(&oc, &sc,
					  1795798800000LL + i * 60000LL, 0, 1,
					  &rep, NULL) != 0)
			return 1;
		orchestrator_report_dispose(&rep);
	}
	printf("slot end to end (1 task, file target, outbox, guard, marker): "
	       "%8.2f ms/slot\n", (now_s() - t0) / slots * 1e3);
	store_close(s);
	sc_clock_free(clk);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
