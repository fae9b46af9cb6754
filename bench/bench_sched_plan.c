/*
 * bench_sched_plan.c - the scheduler's plan at scale (issue 15): building
 * it for N schedules (first start: one bulk read, N baselines in one
 * transaction; restart: one bulk read), an idle tick, and the tick where
 * 1,000 per-minute schedules are due at once.
 *
 * Usage: bench_sched_plan [STORE_URL] [N]   (default: a SQLite file in a
 * temp folder, N = 100000). The mix: 1,000 per-minute schedules, the rest
 * hourly, daily and weekly in 6 zones. The specs are copies of 7
 * templates from a real config (config_load refuses a 100,000-schedule
 * file until config includes land), renamed, so the scheduler computes on
 * parsed crons and loaded zones as in the daemon.
 *
 * One line per case (key=value): build_first_ms, build_again_ms,
 * idle_tick_us, burst_tick_ms (n_enqueued), maxrss_kb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "scheduler.h"
#include "store.h"

static void die(const char *what, const struct sc_err *err)
{
	fprintf(stderr, "bench_sched_plan: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static const char TEMPLATES[] =
	"schedules:\n"
	"  minute: {cron: \"* * * * *\", tz: UTC, tasks: [{name: a, "
	"command: [/bin/true]}]}\n"
	"  hourly: {cron: \"7 * * * *\", tz: Europe/Berlin, tasks: [{name: "
	"a, command: [/bin/true]}]}\n"
	"  daily: {cron: \"30 2 * * *\", tz: America/New_York, tasks: "
	"[{name: a, command: [/bin/true]}]}\n"
	"  weekly: {cron: \"0 9 * * 1\", tz: Asia/Tokyo, tasks: [{name: a, "
	"command: [/bin/true]}]}\n"
	"  daily2: {cron: \"15 23 * * *\", tz: Australia/Sydney, tasks: "
	"[{name: a, command: [/bin/true]}]}\n"
	"  hourly2: {cron: \"45 * * * *\", tz: America/Sao_Paulo, tasks: "
	"[{name: a, command: [/bin/true]}]}\n"
	"  weekly2: {cron: \"0 6 * * 5\", tz: UTC, tasks: [{name: a, "
	"command: [/bin/true]}]}\n";

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/surecron-bench-plan-XXXXXX", url[600], path[600];
	const char *dir = mkdtemp(tmp);
	size_t n = argc > 2 ? (size_t)atol(argv[2]) : 100000;
	struct sc_err err = {0};
	struct config *tpl = NULL;
	struct store *s = NULL;

	if (!dir)
		die("mkdtemp", NULL);
	if (argc > 1)
		snprintf(url, sizeof(url), "%s", argv[1]);
	else
		snprintf(url, sizeof(url), "sqlite:%s/plan.db", dir);
	snprintf(path, sizeof(path), "%s/t.yaml", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		die("config file", NULL);
	fputs(TEMPLATES, f);
	fclose(f);
	if (config_load(path, &tpl, &err))
		die("config", &err);
	/* The big config: shallow copies of the templates, own names. */
	struct config big = *tpl;
	big.schedules = calloc(n, sizeof(*big.schedules));
	char (*names)[24] = calloc(n, sizeof(*names));
	if (!big.schedules || !names)
		die("memory", NULL);
	for (size_t i = 0; i < n; i++) {
		size_t t = i < 1000 ? 0 : 1 + i % (tpl->n_schedules - 1);
		big.schedules[i] = tpl->schedules[t];
		snprintf(names[i], sizeof(names[i]), "s%06zu", i);
		big.schedules[i].name = names[i];
	}
	big.n_schedules = n;

	struct sc_clock *real = sc_clock_real();
	if (store_open(url, real, &s, &err))
		die("store", &err);
	/* Half a minute before a minute: the burst comes at the minute. */
	int64_t now = sc_clock_now_ms(real);
	now = now - now % 60000 + 30000;
	struct sched_plan *p = NULL;
	struct sched_result r;
	int64_t t0 = clock_mono_ms();
	if (scheduler_plan_new(s, &big, now, NULL, &p, &err))
		die("plan (first start)", &err);
	int64_t t1 = clock_mono_ms();
	if (scheduler_plan_tick(p, s, now, &r, &err))
		die("first tick", &err);
	scheduler_plan_free(p);
	int64_t t2 = clock_mono_ms();
	if (scheduler_plan_new(s, &big, now + 1000, NULL, &p, &err))
		die("plan (again)", &err);
	int64_t t3 = clock_mono_ms();
	printf("case=plan_build schedules=%zu build_first_ms=%lld "
	       "build_again_ms=%lld first_start=%zu backend=%s\n", n,
	       (long long)(t1 - t0), (long long)(t3 - t2), r.n_first_start,
	       store_backend_name(s));
	int64_t n_idle = 1000, ti0 = clock_now_ns(real);
	for (int64_t i = 0; i < n_idle; i++)
		if (scheduler_plan_tick(p, s, now + 2000 + i, &r, &err))
			die("idle tick", &err);
	int64_t ti1 = clock_now_ns(real);
	printf("case=idle_tick idle_tick_us=%.2f\n",
	       (double)(ti1 - ti0) / 1000.0 / (double)n_idle);
	int64_t minute = now + 30000;
	int64_t tb0 = clock_mono_ms();
	if (scheduler_plan_tick(p, s, minute, &r, &err))
		die("burst tick", &err);
	int64_t tb1 = clock_mono_ms();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("case=burst due=%zu burst_tick_ms=%lld n_enqueued=%zu "
	       "maxrss_kb=%ld\n", n < 1000 ? n : 1000, (long long)(tb1 - tb0),
	       r.n_enqueued, ru.ru_maxrss);
	scheduler_plan_free(p);
	store_close(s);
	free(big.schedules);
	free(names);
	config_free(tpl);
	if (argc <= 1) {
		char cmd[700];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_sched_plan: could not remove %s\n",
				dir);
	}
	return 0;
}
