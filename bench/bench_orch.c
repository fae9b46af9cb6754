/*
 * bench_orch.c - what a slot costs: spawning a task (surecron's no-shell
 * posix_spawn + process group + poll loop, against system(3), which runs
 * /bin/sh -c like classic cron does), and a whole slot end to end (one
 * task, outbox row, file target with fsync, send guard, slot marker in a
 * real SQLite file). Prints one line per case; the ratio line compares the
 * two spawn paths measured in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
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
