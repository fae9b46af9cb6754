/*
 * cmd_simulate.c - `surecron simulate`: the real scheduler, queue,
 * orchestrator and delivery, driven by a virtual clock over a throw-away
 * SQLite store, single-threaded, printing the timeline.
 *
 * The loop: tick the scheduler at the virtual now; claim and run every due
 * job (one at a time, through worker_run_job, exactly as a worker does);
 * then jump the clock to the next event, the earlier of the next slot and
 * the next due job (a retry), and repeat until --until. Nothing sleeps:
 * a simulated week costs the tasks' own run time and a few milliseconds.
 *
 * Tasks named by --fail fail inside their windows through the
 * orchestrator's run_task hook instead of running; every other task runs
 * for real. Deliveries go through the real outbox flow, but unless
 * --deliver is given every target is redirected to a recorder: a file in
 * the temp folder (one JSON line per message, exactly what would have been
 * sent), so a simulation never posts to a real chat or webhook, writes a
 * real file or runs a delivery command. The temp folder (store and
 * recordings) is removed at exit.
 *
 * Each failed attempt also says what its notice policy did: the notices
 * sent show as deliveries, and the targets whose policy (`notices: final`
 * before the last attempt, `none`) withheld one are named on their own
 * line. A result short of the schedule's `expect` shows as the failure it
 * is ("failed (expectation)").
 *
 * --pause T1..T2 pauses every schedule in [T1, T2) in the throw-away
 * store, as `surecron pause` would: the slots inside show as paused.
 *
 * The alerter runs too: alert_tick, the daemon alerter's pass, at each
 * step before and after the workers, and the clock also stops at its own
 * events (a realert round, a failed send due again, a stale deadline), so
 * missed, lost, late, overrun and stale alerts, their rounds and their
 * "recovered" messages all show. --ack SCHEDULE@T acks the schedule's
 * open alerts at T; --fail-target NAME@T1..T2 points the target at a path
 * that cannot be opened in that window, so its sends fail and are retried
 * by the real backoff; --slow TASK@T1..T2=DUR stretches an attempt over
 * DUR of virtual time, stepping the scheduler and the alerter meanwhile.
 *
 * Invariants: the virtual clock only moves forwards, to the next event;
 * the process's real clock is never consulted for scheduling.
 */
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "alert.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "queue.h"
#include "scheduler.h"
#include "store.h"
#include "task.h"
#include "worker.h"

#define SIM_MAX_FAILS 64
#define SIM_MAX_JOBS 100000 /* attempts run before the simulation gives up */
#define SIM_TASK_MAX 64

struct fail_rule {
	char task[SIM_TASK_MAX + 1];
	int64_t from_ms, until_ms; /* fails when from <= now < until */
	int exit_code;             /* 75 retryable (default), 78 permanent */
	int64_t run_ms;            /* --slow: the attempt takes this long
				      (virtual); 0: a --fail rule */
};

struct down {
	int64_t from_ms, until_ms; /* nothing runs when from <= now < until */
};

#define SIM_MAX_DOWN 16
#define SIM_MAX_ACKS 64
#define SIM_MAX_OUTAGES 64
#define SIM_MAX_FAILED_ALERTS 1024

/* --ack SCHEDULE@T: at T, every open alert of the schedule is acked. */
struct ack_rule {
	char schedule[STORE_NAME_MAX];
	int64_t at_ms;
	bool done;
};

/* --fail-target NAME@T1..T2: every send to the target fails in [T1, T2). */
struct outage {
	char target[STORE_NAME_MAX];
	int64_t from_ms, until_ms;
};

/* A target's own kind and path, restored when no outage holds it. */
struct saved_target {
	enum target_kind kind;
	char *path;        /* borrowed from the config (or the recorder) */
	char *down_path;   /* a path that cannot be opened (owned) */
};

struct recorder {
	char *path;   /* the recording of one target (owned) */
	long offset;  /* bytes already reported */
	size_t n_result, n_notice, n_alert;
};

struct sim {
	struct config *cfg;
	struct sc_clock *clock;
	struct store *store;
	char dir[256];
	bool json, deliver;
	struct fail_rule fails[SIM_MAX_FAILS];
	size_t n_fails;
	struct down downs[SIM_MAX_DOWN];
	size_t n_downs;
	struct recorder *rec; /* one per config target; NULL with --deliver */
	json_t *events;       /* --json */
	size_t n_slots, n_attempts, n_succeeded, n_failed, n_lost, n_missed;
	int64_t last_ledger_id;
	struct down pause;    /* --pause: every schedule paused in [from,
				 until); until 0: none */
	int64_t last_paused_id;
	struct ack_rule acks[SIM_MAX_ACKS];
	size_t n_acks;
	struct outage outages[SIM_MAX_OUTAGES];
	size_t n_outages;
	struct saved_target *saved; /* one per config target; NULL: no
				       --fail-target */
	int64_t last_alert_row_id;  /* alert ledger rows reported */
	int64_t last_alert_id;      /* alerts reported as raised */
	size_t n_alerts_raised, n_alert_messages, n_acked;
	/* Alerts with a send that failed: the only ones whose sends can be
	 * due later (a round staged is sent in its own pass). */
	int64_t failed_alerts[SIM_MAX_FAILED_ALERTS];
	size_t n_failed_alerts;
	bool failed_overflow;       /* more than that: scan every alert */
	struct fail_rule slows[SIM_MAX_FAILS];
	size_t n_slows;
	int hook_rc;                /* an error inside a --slow stretch */
};

/* ---- argument parsing ---------------------------------------------------- */

/* A located error about option ARG: column is 1-based within ARG. */
static int arg_error(const char *opt, const char *arg, size_t col,
		     const char *why)
{
	return cli_usage_error("simulate", "%s '%s': column %zu: %s", opt, arg,
			       col, why);
}

static int parse_time_part(const char *opt, const char *arg, const char *p,
			   size_t n, int64_t *out)
{
	char buf[64];
	struct sc_err err = {0};

	if (n == 0)
		return arg_error(opt, arg, (size_t)(p - arg) + 1,
				      "expected an ISO 8601 time here");
	if (n >= sizeof(buf))
		return arg_error(opt, arg, (size_t)(p - arg) + 1,
				      "time too long");
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (clock_parse_iso(buf, out, &err) != 0) {
		char why[SC_ERR_MSG_MAX + 96];
		snprintf(why, sizeof(why), "bad time '%s': %s", buf, err.msg);
		return arg_error(opt, arg, (size_t)(p - arg) + 1, why);
	}
	return EXIT_OK;
}

/* TASK@T1..T2[:exit=N] */
static int parse_fail(const char *opt, const char *arg, struct fail_rule *r)
{
	const char *at = strchr(arg, '@');
	int rc;

	memset(r, 0, sizeof(*r));
	if (!at)
		return arg_error(opt, arg, strlen(arg) + 1,
				      "expected TASK@T1..T2[:exit=N]");
	if (at == arg)
		return arg_error(opt, arg, 1, "expected a task name before '@'");
	if ((size_t)(at - arg) > SIM_TASK_MAX)
		return arg_error(opt, arg, 1, "task name too long");
	memcpy(r->task, arg, (size_t)(at - arg));
	const char *t1 = at + 1;
	const char *dots = strstr(t1, "..");
	if (!dots)
		return arg_error(opt, arg, strlen(arg) + 1,
				      "expected '..' between the two times");
	const char *t2 = dots + 2;
	const char *ex = strstr(t2, ":exit=");
	size_t n2 = ex ? (size_t)(ex - t2) : strlen(t2);
	if ((rc = parse_time_part(opt, arg, t1, (size_t)(dots - t1),
				  &r->from_ms)) != EXIT_OK ||
	    (rc = parse_time_part(opt, arg, t2, n2, &r->until_ms)) != EXIT_OK)
		return rc;
	if (r->until_ms <= r->from_ms)
		return arg_error(opt, arg, (size_t)(t2 - arg) + 1,
				      "the window ends before it starts");
	r->exit_code = TASK_EXIT_TEMPFAIL;
	if (ex) {
		const char *num = ex + 6;
		char *end = NULL;
		long v = strtol(num, &end, 10);
		if (end == num || *end || v < 1 || v > 255)
			return arg_error(opt, arg, (size_t)(num - arg) + 1,
					      "exit=N needs N in 1..255");
		r->exit_code = (int)v;
	}
	return EXIT_OK;
}

/* TASK@T1..T2=DUR */
static int parse_slow(const char *arg, struct fail_rule *r)
{
	const char *opt = "--slow";
	const char *eq = strchr(arg, '=');
	char head[SIM_TASK_MAX + 2 * CLOCK_ISO_MAX + 8];
	struct sc_err err = {0};
	int rc;

	if (!eq)
		return arg_error(opt, arg, strlen(arg) + 1,
				 "expected TASK@T1..T2=DURATION");
	if ((size_t)(eq - arg) >= sizeof(head))
		return arg_error(opt, arg, 1, "too long");
	memcpy(head, arg, (size_t)(eq - arg));
	head[eq - arg] = '\0';
	if (strstr(head, ":exit="))
		return arg_error(opt, arg, (size_t)(strstr(head, ":exit=") -
						    head) + 1,
				 "exit=N belongs to --fail");
	if ((rc = parse_fail(opt, head, r)) != EXIT_OK)
		return rc;
	if (clock_parse_duration(eq + 1, &r->run_ms, &err) != 0 ||
	    r->run_ms <= 0) {
		char why[SC_ERR_MSG_MAX + 64];
		snprintf(why, sizeof(why), "bad duration '%s'%s%s", eq + 1,
			 err.msg[0] ? ": " : "", err.msg);
		return arg_error(opt, arg, (size_t)(eq - arg) + 2, why);
	}
	return EXIT_OK;
}

/* T1..T2 of option opt (--down: the scheduler and the worker are down
 * in [T1, T2); --pause: every schedule is paused then). */
static int parse_window(const char *opt, const char *arg, struct down *d)
{
	const char *dots = strstr(arg, "..");
	int rc;

	if (!dots)
		return arg_error(opt, arg, strlen(arg) + 1,
				 "expected '..' between the two times");
	if ((rc = parse_time_part(opt, arg, arg, (size_t)(dots - arg),
				  &d->from_ms)) != EXIT_OK ||
	    (rc = parse_time_part(opt, arg, dots + 2, strlen(dots + 2),
				  &d->until_ms)) != EXIT_OK)
		return rc;
	if (d->until_ms <= d->from_ms)
		return arg_error(opt, arg, (size_t)(dots + 2 - arg) + 1,
				 "the window ends before it starts");
	return EXIT_OK;
}

/* NAME@REST: copies NAME (1..STORE_NAME_MAX-1 bytes) and points *rest
 * after the '@'. */
static int parse_name_at(const char *opt, const char *arg, const char *what,
			 const char *shape, char *name, const char **rest)
{
	const char *at = strchr(arg, '@');
	char why[128];

	if (!at) {
		snprintf(why, sizeof(why), "expected %s", shape);
		return arg_error(opt, arg, strlen(arg) + 1, why);
	}
	if (at == arg) {
		snprintf(why, sizeof(why), "expected a %s name before '@'",
			 what);
		return arg_error(opt, arg, 1, why);
	}
	if ((size_t)(at - arg) >= STORE_NAME_MAX) {
		snprintf(why, sizeof(why), "%s name too long", what);
		return arg_error(opt, arg, 1, why);
	}
	memcpy(name, arg, (size_t)(at - arg));
	name[at - arg] = '\0';
	*rest = at + 1;
	return EXIT_OK;
}

/* SCHEDULE@T */
static int parse_ack(const char *arg, struct ack_rule *r)
{
	const char *t = arg;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = parse_name_at("--ack", arg, "schedule", "SCHEDULE@T",
				r->schedule, &t)) != EXIT_OK)
		return rc;
	return parse_time_part("--ack", arg, t, strlen(t), &r->at_ms);
}

/* NAME@T1..T2 */
static int parse_outage(const char *arg, struct outage *o)
{
	const char *opt = "--fail-target", *t = arg;
	struct down w = {0};
	int rc;

	memset(o, 0, sizeof(*o));
	if ((rc = parse_name_at(opt, arg, "target", "NAME@T1..T2", o->target,
				&t)) != EXIT_OK)
		return rc;
	const char *dots = strstr(t, "..");
	if (!dots)
		return arg_error(opt, arg, strlen(arg) + 1,
				 "expected '..' between the two times");
	if ((rc = parse_time_part(opt, arg, t, (size_t)(dots - t),
				  &w.from_ms)) != EXIT_OK ||
	    (rc = parse_time_part(opt, arg, dots + 2, strlen(dots + 2),
				  &w.until_ms)) != EXIT_OK)
		return rc;
	if (w.until_ms <= w.from_ms)
		return arg_error(opt, arg, (size_t)(dots + 2 - arg) + 1,
				 "the window ends before it starts");
	o->from_ms = w.from_ms;
	o->until_ms = w.until_ms;
	return EXIT_OK;
}

static bool task_known(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->n_schedules; i++)
		for (size_t k = 0; k < c->schedules[i].n_tasks; k++)
			if (strcmp(c->schedules[i].tasks[k].name, name) == 0)
				return true;
	return false;
}

/* ---- the task hook -------------------------------------------------------- */

static int stretch(struct sim *sm, const struct task_ctx *tctx,
		   int64_t run_ms);

/* Stretches an attempt of a task named by --slow inside its window over
 * that much virtual time; fails a task named by --fail inside its window,
 * like a command would with that exit status; runs every other task (and
 * a stretched one at the end of its stretch) for real. */
static int sim_run_task(void *ud, const struct task_spec *spec,
			const struct task_ctx *tctx, struct task_result *out)
{
	struct sim *sm = ud;
	int64_t now = sc_clock_now_ms(sm->clock);

	for (size_t i = 0; i < sm->n_slows; i++) {
		const struct fail_rule *r = &sm->slows[i];
		if (strcmp(r->task, spec->name) != 0 || now < r->from_ms ||
		    now >= r->until_ms)
			continue;
		if ((sm->hook_rc = stretch(sm, tctx, r->run_ms)) != EXIT_OK)
			return task_fail(out, spec->name, SC_EIO, "simulate: "
					 "the --slow stretch failed");
		now = sc_clock_now_ms(sm->clock);
		break;
	}

	for (size_t i = 0; i < sm->n_fails; i++) {
		const struct fail_rule *r = &sm->fails[i];
		if (strcmp(r->task, spec->name) != 0 || now < r->from_ms ||
		    now >= r->until_ms)
			continue;
		memset(out, 0, sizeof(*out));
		if (r->exit_code == TASK_EXIT_TEMPFAIL)
			return task_fail(out, spec->name, SC_ETASK,
					 "temporary failure (exit 75): quota "
					 "exceeded (simulated)");
		if (r->exit_code == TASK_EXIT_CONFIG) {
			task_fail(out, spec->name, SC_ETASK, "unrecoverable "
				  "failure (exit 78): simulated");
			out->err.permanent = true;
			return out->err.code;
		}
		return task_fail(out, spec->name, SC_ETASK, "exit status %d: "
				 "simulated failure", r->exit_code);
	}
	return task_run(spec, tctx, out);
}

/* ---- output ------------------------------------------------------------- */

static const struct sc_zone *zone_of(const struct sim *sm, const char *name)
{
	const struct schedule_spec *s = config_schedule(sm->cfg, name);

	return s && s->zone ? s->zone : sc_zone_utc();
}

/*
 * One timeline event. text is the human line's tail; extra (may be NULL)
 * is merged into the JSON object and then released.
 */
static void emit(struct sim *sm, const char *schedule, int64_t slot_ms,
		 const char *event, json_t *extra, const char *fmt, ...)
	SC_PRINTF(6, 7);

static void emit(struct sim *sm, const char *schedule, int64_t slot_ms,
		 const char *event, json_t *extra, const char *fmt, ...)
{
	const struct sc_zone *z = zone_of(sm, schedule);
	int64_t now = sc_clock_now_ms(sm->clock);
	char when[CLI_TIME_MAX], slot[CLI_TIME_MAX], text[1024];
	va_list ap;

	cli_format_local(now, z, when);
	cli_format_local(slot_ms, z, slot);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!sm->json) {
		cli_out(stdout, "%s  %s  %s\n", when, schedule, text);
		json_decref(extra);
		return;
	}
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "time", when,
			      "schedule", schedule, "slot", slot, "event", event,
			      "text", text);
	if (o && extra)
		json_object_update(o, extra);
	json_decref(extra);
	if (o)
		json_array_append_new(sm->events, o);
}

/* Reports the messages recorded for each target since the last call. */
static void report_recordings(struct sim *sm, const char *schedule,
			      int64_t slot_ms)
{
	for (size_t i = 0; sm->rec && i < sm->cfg->n_targets; i++) {
		struct recorder *r = &sm->rec[i];
		FILE *f = fopen(r->path, "r");
		char *line = NULL;
		size_t cap = 0;

		if (!f)
			continue;
		if (fseek(f, r->offset, SEEK_SET) != 0) {
			fclose(f);
			continue;
		}
		while (getline(&line, &cap, f) > 0) {
			json_t *m = json_loads(line, 0, NULL);
			const char *kind = json_string_value(
				json_object_get(m, "kind"));
			const char *sched = json_string_value(
				json_object_get(m, "schedule"));
			if (!kind)
				kind = "?";
			const char *reason = json_string_value(
				json_object_get(m, "reason"));
			int round = (int)json_integer_value(
				json_object_get(m, "round"));
			if (strcmp(kind, MESSAGE_RESULT) == 0)
				r->n_result++;
			else if (strcmp(kind, MESSAGE_NOTICE) == 0)
				r->n_notice++;
			else if (strcmp(kind, MESSAGE_ALERT) == 0)
				r->n_alert++;
			json_t *x = json_pack("{s:s, s:s, s:O?}", "target",
					      sm->cfg->targets[i].name, "kind",
					      kind, "message", m);
			if (x && reason && strcmp(kind, MESSAGE_ALERT) == 0) {
				/* An alert's (reason, round): what the on-call
				 * sees, and what a rehearsal compares. */
				sm->n_alert_messages++;
				json_object_set_new(x, "reason",
						    json_string(reason));
				json_object_set_new(x, "round",
						    json_integer(round));
				emit(sm, sched ? sched : schedule, slot_ms,
				     "delivery", x, "delivery: alert (%s, "
				     "round %d) to %s (recorded)", reason,
				     round, sm->cfg->targets[i].name);
			} else {
				emit(sm, sched ? sched : schedule, slot_ms,
				     "delivery", x, "delivery: %s to %s "
				     "(recorded)", kind,
				     sm->cfg->targets[i].name);
			}
			json_decref(m);
		}
		r->offset = ftell(f);
		free(line);
		fclose(f);
	}
}

/* Reports the paused rows the scheduler wrote (--pause). */
static void report_paused(struct sim *sm)
{
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = LEDGER_PAUSED};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	if (sm->pause.until_ms == 0 ||
	    store_ledger_query(sm->store, &f, &rows, &n, NULL) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].id <= sm->last_paused_id)
			continue;
		sm->last_paused_id = rows[i].id;
		char slot[CLI_TIME_MAX];
		cli_format_local(rows[i].slot_ms, zone_of(sm, rows[i].schedule),
				 slot);
		emit(sm, rows[i].schedule, rows[i].slot_ms, "paused",
		     json_pack("{s:s?}", "note", rows[i].error_msg),
		     "slot %s paused: %s", slot,
		     rows[i].error_msg ? rows[i].error_msg : "");
	}
	store_ledger_rows_free(rows, n);
}

/* Reports ledger rows written by the scheduler (missed slots). */
static void report_missed(struct sim *sm)
{
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = LEDGER_MISSED};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	if (store_ledger_query(sm->store, &f, &rows, &n, NULL) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].id <= sm->last_ledger_id)
			continue;
		sm->last_ledger_id = rows[i].id;
		char slot[CLI_TIME_MAX];
		sm->n_missed++;
		cli_format_local(rows[i].slot_ms, zone_of(sm, rows[i].schedule),
				 slot);
		emit(sm, rows[i].schedule, rows[i].slot_ms, "missed",
		     json_pack("{s:s?}", "error", rows[i].error_msg),
		     "slot %s missed: %s", slot,
		     rows[i].error_msg ? rows[i].error_msg : "");
	}
	store_ledger_rows_free(rows, n);
}

/* ---- the alerter -------------------------------------------------------- */

/* Points each target held by a --fail-target window at now at a path
 * that cannot be opened, and every other one back at its own. A held
 * send fails like a down endpoint: the real alerter and outbox retry it
 * with their own backoff. */
static void apply_outages(struct sim *sm, int64_t now)
{
	for (size_t i = 0; sm->saved && i < sm->cfg->n_targets; i++) {
		struct target_spec *t = &sm->cfg->targets[i];
		bool held = false;
		for (size_t k = 0; k < sm->n_outages; k++)
			held |= strcmp(sm->outages[k].target, t->name) == 0 &&
				now >= sm->outages[k].from_ms &&
				now < sm->outages[k].until_ms;
		t->kind = held ? TARGET_FILE : sm->saved[i].kind;
		t->path = held ? sm->saved[i].down_path : sm->saved[i].path;
	}
}

/* Gives every target its own kind and path back (before config_free). */
static void restore_targets(struct sim *sm)
{
	for (size_t i = 0; sm->saved && i < sm->cfg->n_targets; i++) {
		/* Not saved (out of memory in save_targets): never moved. */
		if (!sm->saved[i].down_path)
			continue;
		sm->cfg->targets[i].kind = sm->saved[i].kind;
		sm->cfg->targets[i].path = sm->saved[i].path;
		free(sm->saved[i].down_path);
	}
	free(sm->saved);
	sm->saved = NULL;
}

/* Reports the alerts raised since the last call: lost, missed, late,
 * overrun, stale, and the "recovered" message of each one closed. */
static void report_alerts(struct sim *sm)
{
	struct alert_filter f = {.slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				 .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	int64_t top = sm->last_alert_id;

	if (store_alert_list(sm->store, &f, &v, &n, NULL) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct store_alert *x = &v[i];
		if (x->id <= sm->last_alert_id)
			continue;
		top = x->id > top ? x->id : top;
		if (strcmp(x->reason, ALERT_REASON_RECOVERED) == 0) {
			emit(sm, x->schedule, x->slot_ms, "alert_closed",
			     json_pack("{s:s}", "healed", x->note[0] ? x->note
								     : "slot"),
			     "alert closed: %s ended; \"recovered\" message "
			     "staged", x->note[0] ? x->note : "the loss");
			continue;
		}
		sm->n_alerts_raised++;
		emit(sm, x->schedule, x->slot_ms, "alert_raised",
		     json_pack("{s:s, s:I, s:s}", "reason", x->reason, "slots",
			       (json_int_t)x->n_slots, "error", x->error_msg),
		     "alert raised: %s (%lld slot%s): %s", x->reason,
		     (long long)x->n_slots, x->n_slots == 1 ? "" : "s",
		     x->error_msg);
	}
	sm->last_alert_id = top;
	sc_free(v);
}

/* Reports the alert sends that failed (held by an outage, say) and, with
 * --deliver (no recorder), the ones sent. */
static void report_alert_sends(struct sim *sm)
{
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = LEDGER_ALERT};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	int64_t top = sm->last_alert_row_id;

	if (store_ledger_query(sm->store, &f, &rows, &n, NULL) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct ledger_row *w = &rows[i];
		if (w->id <= sm->last_alert_row_id)
			continue;
		top = w->id > top ? w->id : top;
		json_t *d = w->details_json ? json_loads(w->details_json, 0,
							 NULL) : NULL;
		const char *state = json_string_value(json_object_get(d,
								      "state"));
		const char *reason = json_string_value(json_object_get(d,
								       "reason"));
		const char *target = json_string_value(json_object_get(d,
								       "target"));
		int round = (int)json_integer_value(json_object_get(d, "round"));
		int64_t alert_id = (int64_t)json_integer_value(json_object_get(
			d, "alert_id"));
		if (!state || !reason || !target) {
			json_decref(d);
			continue;
		}
		if (strcmp(state, "sent") != 0) {
			bool known = false;
			for (size_t k = 0; k < sm->n_failed_alerts; k++)
				known |= sm->failed_alerts[k] == alert_id;
			if (!known && sm->n_failed_alerts <
					      SIM_MAX_FAILED_ALERTS)
				sm->failed_alerts[sm->n_failed_alerts++] =
					alert_id;
			else if (!known)
				sm->failed_overflow = true;
		}
		if (strcmp(state, "sent") != 0)
			emit(sm, w->schedule, w->slot_ms, "alert_send_failed",
			     json_pack("{s:s, s:s, s:i, s:s, s:s?}", "target",
				       target, "reason", reason, "round", round,
				       "state", state, "error", w->error_msg),
			     "alert (%s, round %d) to %s not delivered (%s): "
			     "%s", reason, round, target, state,
			     w->error_msg ? w->error_msg : "");
		else if (!sm->rec) {
			sm->n_alert_messages++;
			emit(sm, w->schedule, w->slot_ms, "delivery",
			     json_pack("{s:s, s:s, s:s, s:i}", "target", target,
				       "kind", MESSAGE_ALERT, "reason", reason,
				       "round", round),
			     "delivery: alert (%s, round %d) sent to %s",
			     reason, round, target);
		}
		json_decref(d);
	}
	sm->last_alert_row_id = top;
	store_ledger_rows_free(rows, n);
}

/* --ack: at its instant, every open alert of the schedule is acked, as
 * `surecron ack SCHEDULE SLOT` would for each. */
static int run_acks(struct sim *sm, int64_t now)
{
	for (size_t i = 0; i < sm->n_acks; i++) {
		struct ack_rule *r = &sm->acks[i];
		struct alert_filter f = {.schedule = r->schedule,
					 .open_only = true, .slot_ms = INT64_MIN,
					 .since_ms = INT64_MIN,
					 .until_ms = INT64_MAX};
		struct store_alert *v = NULL;
		struct sc_err err = {0};
		size_t n = 0, total = 0;

		if (r->done || r->at_ms > now)
			continue;
		r->done = true;
		if (store_alert_list(sm->store, &f, &v, &n, &err) != 0)
			return cli_fail(EXIT_FAIL, "simulate: --ack: %s",
					err.msg);
		for (size_t k = 0; k < n; k++) {
			size_t acked = 0;
			int rc = alert_ack(sm->store, r->schedule, v[k].slot_ms,
					   "simulate --ack", "simulate", &acked,
					   &err);
			if (rc && rc != SC_ENOENT) {
				sc_free(v);
				return cli_fail(EXIT_FAIL, "simulate: --ack: "
						"%s", err.msg);
			}
			total += acked;
		}
		sc_free(v);
		sm->n_acked += total;
		emit(sm, r->schedule, now, "acked",
		     json_pack("{s:i}", "alerts", (int)total),
		     "ack: %zu open alert%s acknowledged", total,
		     total == 1 ? "" : "s");
	}
	return EXIT_OK;
}

/* One pass of the real alerter at the virtual now (the daemon's alerter
 * thread runs the same alert_tick every second), and what it did. */
static int alert_pass(struct sim *sm)
{
	struct alert_ctx a = {.store = sm->store, .config = sm->cfg,
			      .clock = sm->clock};
	struct alert_report rep;
	struct sc_err err = {0};
	int64_t now = sc_clock_now_ms(sm->clock);

	apply_outages(sm, now);
	/* A pass sends a bounded number of copies; the daemon's next pass,
	 * a second later, sends the rest: here at the same instant. */
	do {
		if (alert_tick(&a, &rep, &err) != 0)
			return cli_fail(EXIT_FAIL, "simulate: alerter: %s",
					err.msg);
	} while (rep.n_sent + rep.n_failed + rep.n_abandoned > 0 &&
		 rep.n_failed == 0);
	report_alerts(sm);
	report_recordings(sm, "(alerts)", now);
	report_alert_sends(sm);
	return EXIT_OK;
}

static void earliest(int64_t *next, int64_t t)
{
	if (t < *next)
		*next = t;
}

/*
 * The alerter's next event after now: a realert round due, a send due
 * again after a failure, a late or stale deadline, an ack, the end of an
 * outage.
 * INT64_MAX when none.
 */
static int next_alert_event(struct sim *sm, int64_t now, int64_t *out)
{
	struct alert_filter f = {.slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				 .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	struct sc_err err = {0};
	size_t n = 0;
	int64_t next = INT64_MAX, every = sm->cfg->alert_realert_ms;

	for (size_t i = 0; i < sm->n_acks; i++)
		if (!sm->acks[i].done)
			earliest(&next, sm->acks[i].at_ms);
	for (size_t i = 0; i < sm->n_outages; i++) {
		if (sm->outages[i].from_ms > now)
			earliest(&next, sm->outages[i].from_ms);
		if (sm->outages[i].until_ms > now)
			earliest(&next, sm->outages[i].until_ms);
	}
	if (store_alert_list(sm->store, &f, &v, &n, &err) != 0)
		return cli_fail(EXIT_FAIL, "simulate: alerts: %s", err.msg);
	for (size_t i = 0; i < n; i++) {
		if (v[i].status == ALERT_OPEN && every > 0)
			earliest(&next, v[i].round_ms + every);
		bool failed = sm->failed_overflow;
		for (size_t k = 0; !failed && k < sm->n_failed_alerts; k++)
			failed = sm->failed_alerts[k] == v[i].id;
		if (!failed)
			continue;
		struct store_alert_send *x = NULL;
		size_t nx = 0;
		if (store_alert_sends(sm->store, v[i].id, &x, &nx, &err) != 0) {
			sc_free(v);
			return cli_fail(EXIT_FAIL, "simulate: alerts: %s",
					err.msg);
		}
		for (size_t k = 0; k < nx; k++)
			if (x[k].state == SEND_PENDING)
				earliest(&next, now + 1);
			else if (x[k].state == SEND_FAILED ||
				 x[k].state == SEND_UNKNOWN)
				earliest(&next, x[k].next_try_ms);
		store_alert_sends_free(x, nx);
	}
	sc_free(v);
	/* Late: the instant a job that has not started (its worker busy
	 * through a --slow stretch) passes its `start_within`. Stale: the
	 * instant each schedule with `success_within` has gone that long
	 * without a delivered slot. */
	struct store_sla_last last[ALERT_SLA_MAX];
	struct store_job *late = calloc(ALERT_SLA_MAX, sizeof(*late));
	if (!late)
		return cli_fail(EXIT_FAIL, "simulate: out of memory");
	struct store_sla scan = {.last = last, .max_last = ALERT_SLA_MAX,
				 .late = late, .max_late = ALERT_SLA_MAX};
	int rc = store_sla_scan(sm->store, INT64_MAX, INT64_MIN, &scan, &err);
	for (size_t i = 0; rc == 0 && i < scan.n_late; i++) {
		const struct schedule_spec *sp = config_schedule(
			sm->cfg, late[i].schedule);
		if (sp && spec_x(sp)->has_sla && spec_x(sp)->sla.start_within_ms > 0 &&
		    late[i].run_at_ms + spec_x(sp)->sla.start_within_ms + 1 > now)
			earliest(&next, late[i].run_at_ms +
						spec_x(sp)->sla.start_within_ms + 1);
	}
	free(late);
	if (rc != 0)
		return cli_fail(EXIT_FAIL, "simulate: alerts: %s", err.msg);
	for (size_t i = 0; i < scan.n_last; i++) {
		const struct schedule_spec *sp = config_schedule(
			sm->cfg, last[i].schedule);
		int64_t base = last[i].delivered_ms ? last[i].delivered_ms
						    : last[i].first_ms;
		if (sp && spec_x(sp)->has_sla && spec_x(sp)->sla.success_within_ms > 0 &&
		    base != 0 && base + spec_x(sp)->sla.success_within_ms + 1 > now)
			earliest(&next, base + spec_x(sp)->sla.success_within_ms + 1);
	}
	*out = next;
	return EXIT_OK;
}

/*
 * --slow: the attempt running on this (the only) worker takes run_ms of
 * virtual time. The clock steps through it to each event of the
 * scheduler and the alerter (and to the schedule's max_runtime, where an
 * overrun is due), which run as in the daemon while the worker is busy;
 * the job's lease is kept through the task's tick, as a long command's
 * is. Another job due meanwhile waits for the worker.
 */
static int stretch(struct sim *sm, const struct task_ctx *tctx,
		   int64_t run_ms)
{
	const struct schedule_spec *sp = config_schedule(sm->cfg,
							 tctx->schedule);
	int64_t now = sc_clock_now_ms(sm->clock), end = now + run_ms;
	int64_t over = sp && spec_x(sp)->has_sla && spec_x(sp)->sla.max_runtime_ms > 0
			       ? now + spec_x(sp)->sla.max_runtime_ms + 1 : INT64_MAX;
	char d[CLOCK_DUR_MAX];
	struct sc_err err = {0};
	int rc;

	emit(sm, tctx->schedule, tctx->slot_ms, "attempt_running",
	     json_pack("{s:i, s:I}", "attempt", tctx->attempt, "run_ms",
		       (json_int_t)run_ms),
	     "attempt %d runs for %s (--slow)", tctx->attempt,
	     clock_format_duration(run_ms, d, sizeof(d)));
	while (now < end) {
		struct sched_result r;
		int64_t alert_next = INT64_MAX;
		if ((rc = next_alert_event(sm, now, &alert_next)) != EXIT_OK)
			return rc;
		if (scheduler_tick(sm->store, sm->cfg, now, NULL, &r, &err) != 0)
			return cli_fail(EXIT_FAIL, "simulate: scheduler: %s",
					err.msg);
		int64_t next = end;
		earliest(&next, alert_next);
		earliest(&next, r.next_ms);
		if (over > now)
			earliest(&next, over);
		now = next > now ? next : now + 1;
		sc_clock_set_ms(sm->clock, now);
		if (tctx->tick && tctx->tick(tctx->tick_ud) != 0)
			return cli_fail(EXIT_FAIL, "simulate: the job's lease "
					"was lost during --slow");
		if (scheduler_tick(sm->store, sm->cfg, now, NULL, &r, &err) != 0)
			return cli_fail(EXIT_FAIL, "simulate: scheduler: %s",
					err.msg);
		report_missed(sm);
		report_paused(sm);
		if ((rc = run_acks(sm, now)) != EXIT_OK ||
		    (rc = alert_pass(sm)) != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

/* ---- the run ------------------------------------------------------------- */

static const char *const notice_words[] = {"every", "final", "none"};

/* After a failed attempt whose policy withheld notices: names each target
 * of the schedule that got none, with its policy (the orchestrator's rule:
 * the target's own, else the schedule's). */
static void report_withheld(struct sim *sm, const struct store_job *job,
			    const struct worker_result *jr)
{
	const struct schedule_spec *s = config_schedule(sm->cfg, job->schedule);
	char names[768] = "";
	size_t len = 0;

	if (!s || jr->rep.n_notices_withheld == 0)
		return;
	json_t *arr = json_array();
	for (size_t i = 0; i < s->n_targets; i++) {
		const struct target_spec *t = config_target(sm->cfg,
							    s->targets[i]);
		if (!t)
			continue;
		enum notice_policy p = t->has_notices ? t->notices : spec_x(s)->notices;
		if (p == NOTICES_EVERY ||
		    (p == NOTICES_FINAL && jr->rep.is_last_attempt))
			continue;
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len,
						"%s%s (notices: %s)",
						len ? ", " : "", t->name,
						notice_words[p]);
		json_array_append_new(arr, json_pack("{s:s, s:s}", "target",
						     t->name, "notices",
						     notice_words[p]));
	}
	emit(sm, job->schedule, job->slot_ms, "notice_withheld",
	     json_pack("{s:i, s:o}", "attempt", job->attempts, "targets", arr),
	     "attempt %d: no failure notice to %s", job->attempts, names);
}

static int run_job(struct sim *sm, const struct store_job *job)
{
	const struct worker_opts wo = {
		.store = sm->store, .clock = sm->clock, .config = sm->cfg,
		.run_task = sim_run_task, .run_task_ud = sm,
	};
	struct worker_result jr;
	struct sc_err err = {0};
	char slot[CLI_TIME_MAX], next[CLI_TIME_MAX];
	const char *sch = job->schedule;

	if (job->attempts == 1) {
		sm->n_slots++;
		emit(sm, sch, job->slot_ms, "slot", NULL, "slot %s fired%s",
		     cli_format_local(job->slot_ms, zone_of(sm, sch), slot),
		     job->manual ? " (manual)" : "");
	}
	sm->n_attempts++;
	emit(sm, sch, job->slot_ms, "attempt_started",
	     json_pack("{s:i}", "attempt", job->attempts),
	     "attempt %d started", job->attempts);
	memset(&jr, 0, sizeof(jr));
	int rc = worker_run_job(&wo, job, &jr, &err);
	if (sm->hook_rc) {
		worker_result_dispose(&jr);
		return sm->hook_rc;
	}
	if (rc) {
		worker_result_dispose(&jr);
		return cli_fail(EXIT_FAIL, "simulate: job of %s: %s", sch,
				err.msg);
	}
	/* What went out during the attempt (notices, results, alerts), then
	 * the attempt's verdict. */
	report_alerts(sm);
	report_recordings(sm, sch, job->slot_ms);
	report_alert_sends(sm);
	const char *cause = strcmp(jr.error_class, "expectation") == 0
				    ? " (expectation)" : "";
	if (jr.completed) {
		sm->n_succeeded++;
		emit(sm, sch, job->slot_ms, "attempt_succeeded",
		     json_pack("{s:i, s:i}", "attempt", job->attempts, "sent",
			       (int)jr.rep.delivery.n_sent),
		     "attempt %d succeeded (%zu target%s sent)", job->attempts,
		     jr.rep.delivery.n_sent,
		     jr.rep.delivery.n_sent == 1 ? "" : "s");
	} else if (jr.dead) {
		sm->n_failed++;
		sm->n_lost++;
		emit(sm, sch, job->slot_ms, "attempt_failed",
		     json_pack("{s:i, s:s, s:s, s:b, s:i, s:i}", "attempt",
			       job->attempts, "error", jr.run_err.msg,
			       "error_class", jr.error_class, "permanent",
			       jr.run_err.permanent, "notices_sent",
			       (int)jr.rep.n_notices_sent, "notices_withheld",
			       (int)jr.rep.n_notices_withheld),
		     "attempt %d failed%s: %s; no attempt left", job->attempts,
		     cause, jr.run_err.msg);
		report_withheld(sm, job, &jr);
		emit(sm, sch, job->slot_ms, "slot_lost",
		     json_pack("{s:i}", "alerts_sent", (int)jr.n_alerts_sent),
		     "slot LOST after %d attempt%s; alert sent to %zu "
		     "target%s", job->attempts, job->attempts == 1 ? "" : "s",
		     jr.n_alerts_sent, jr.n_alerts_sent == 1 ? "" : "s");
	} else {
		sm->n_failed++;
		cli_format_local(jr.next_ms, zone_of(sm, sch), next);
		emit(sm, sch, job->slot_ms, "attempt_failed",
		     json_pack("{s:i, s:s, s:s, s:s, s:i, s:i}", "attempt",
			       job->attempts, "error", jr.run_err.msg,
			       "error_class", jr.error_class, "next_attempt",
			       next, "notices_sent",
			       (int)jr.rep.n_notices_sent, "notices_withheld",
			       (int)jr.rep.n_notices_withheld),
		     "attempt %d failed%s: %s; next attempt at %s",
		     job->attempts, cause, jr.run_err.msg, next);
		report_withheld(sm, job, &jr);
	}
	if (!sm->rec && sm->deliver && jr.rep.n_notices_sent)
		emit(sm, sch, job->slot_ms, "delivery",
		     json_pack("{s:s, s:i}", "kind", MESSAGE_NOTICE, "count",
			       (int)jr.rep.n_notices_sent),
		     "delivery: failure notice sent to %zu target%s",
		     jr.rep.n_notices_sent,
		     jr.rep.n_notices_sent == 1 ? "" : "s");
	worker_result_dispose(&jr);
	return EXIT_OK;
}

/* The end of the --down window holding t (windows may touch or
 * overlap), or t when none does. */
static int64_t up_again(const struct sim *sm, int64_t t)
{
	for (bool moved = true; moved;) {
		moved = false;
		for (size_t i = 0; i < sm->n_downs; i++)
			if (t >= sm->downs[i].from_ms && t < sm->downs[i].until_ms) {
				t = sm->downs[i].until_ms;
				moved = true;
			}
	}
	return t;
}

/* Reports a stop of the scheduler and worker at t until `up`. */
static void report_down(struct sim *sm, int64_t t, int64_t up)
{
	char u[CLOCK_ISO_MAX];

	sc_clock_set_ms(sm->clock, t);
	emit(sm, "(all)", t, "down", NULL, "scheduler and worker down until %s",
	     clock_format_utc(up, u));
}

static int simulate(struct sim *sm, int64_t from, int64_t until)
{
	struct sched_result r;
	struct sc_err err = {0};
	size_t n_jobs = 0;
	uint64_t rule_of = 0; /* the overlap rule is set at the first claim */
	int64_t now = up_again(sm, from);

	if (now != from)
		report_down(sm, from, now);
	if (now > until)
		return EXIT_OK;
	for (;;) {
		sc_clock_set_ms(sm->clock, now);
		if (scheduler_tick(sm->store, sm->cfg, now, NULL, &r, &err) != 0)
			return cli_fail(EXIT_FAIL, "simulate: scheduler: %s",
					err.msg);
		report_missed(sm);
		report_paused(sm);
		/* The alerter before the workers: a job that waited out a
		 * downtime past its `start_within` is late when it starts. */
		int arc;
		if ((arc = run_acks(sm, now)) != EXIT_OK ||
		    (arc = alert_pass(sm)) != EXIT_OK)
			return arc;
		for (;;) {
			struct store_job job;
			size_t n = 0;
			bool skipped = false;
			/* The daemon's claim: its overlap rule and schedules. */
			if (worker_claim(sm->store, sm->cfg, NULL, 1, &rule_of,
					 "simulate", 0, &job, &n, &skipped,
					 &err) != 0)
				return cli_fail(EXIT_FAIL, "simulate: claim: %s",
						err.msg);
			if (skipped)
				continue;
			if (n == 0)
				break;
			if (++n_jobs > SIM_MAX_JOBS)
				return cli_fail(EXIT_FAIL, "simulate: more than "
						"%d attempts; narrow --from/"
						"--until", SIM_MAX_JOBS);
			int rc = run_job(sm, &job);
			if (rc)
				return rc;
		}
		/* And after them: a slot that succeeded heals its alerts. */
		if ((arc = alert_pass(sm)) != EXIT_OK)
			return arc;
		int64_t due, alert_next = INT64_MAX;
		if (queue_next_due(sm->store, &due, &err) != 0)
			return cli_fail(EXIT_FAIL, "simulate: %s", err.msg);
		if ((arc = next_alert_event(sm, now, &alert_next)) != EXIT_OK)
			return arc;
		int64_t next = r.next_ms < due ? r.next_ms : due;
		earliest(&next, alert_next);
		if (next > until)
			break;
		/* The clock only moves forwards. */
		next = next > now ? next : now + 1;
		int64_t up = up_again(sm, next);
		if (up != next) {
			/* Down: the event is not seen until the restart, where
			 * the scheduler catches up and late jobs run. */
			int64_t start = next;
			for (size_t i = 0; i < sm->n_downs; i++)
				if (sm->downs[i].from_ms > now &&
				    sm->downs[i].from_ms <= next &&
				    sm->downs[i].from_ms < start)
					start = sm->downs[i].from_ms;
			report_down(sm, start, up);
			if (up > until)
				break;
		}
		now = up;
	}
	return EXIT_OK;
}

/* ---- reports at the end ---------------------------------------------------- */

static void print_ledger(struct sim *sm, json_t *out)
{
	struct ledger_row *rows = NULL;
	size_t n = 0;
	json_t *arr = json_array();

	if (store_ledger_query(sm->store, NULL, &rows, &n, NULL) != 0)
		n = 0;
	if (!sm->json)
		cli_out(stdout,
			"\nledger (%zu row%s):\n", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct ledger_row *w = &rows[i];
		const struct sc_zone *z = zone_of(sm, w->schedule);
		char slot[CLI_TIME_MAX], at[CLI_TIME_MAX];
		cli_format_local(w->slot_ms, z, slot);
		cli_format_local(w->started_ms, z, at);
		if (!sm->json) {
			cli_out(stdout,
				"  %s  %s  attempt %d  %-8s at %s%s%s\n",
				w->schedule, slot, w->attempt, w->outcome, at,
				w->error_msg ? "  " : "",
				w->error_msg ? w->error_msg : "");
			continue;
		}
		json_array_append_new(arr, json_pack(
			"{s:s, s:s, s:i, s:s, s:s, s:s, s:s?}", "schedule",
			w->schedule, "slot", slot, "attempt", w->attempt,
			"outcome", w->outcome, "started", at, "error_class",
			w->error_class, "error", w->error_msg));
	}
	store_ledger_rows_free(rows, n);
	if (out)
		json_object_set(out, "ledger", arr);
	json_decref(arr);
}

static void print_totals(struct sim *sm, json_t *out)
{
	json_t *dl = json_array();

	for (size_t i = 0; sm->rec && i < sm->cfg->n_targets; i++) {
		const struct recorder *r = &sm->rec[i];
		json_array_append_new(dl, json_pack(
			"{s:s, s:i, s:i, s:i}", "target",
			sm->cfg->targets[i].name, "result", (int)r->n_result,
			"failure_notice", (int)r->n_notice, "alert",
			(int)r->n_alert));
		if (!sm->json)
			cli_out(stdout,
				"%s  %s: %zu result, %zu failure notice, %zu "
				"alert\n", i == 0 ? "\ndeliveries (recorded, "
				"not sent):\n" : "", sm->cfg->targets[i].name,
				r->n_result, r->n_notice, r->n_alert);
	}
	if (!sm->json)
		cli_out(stdout,
			"\n%zu slot%s, %zu attempt%s: %zu succeeded, %zu failed, "
			"%zu slot%s lost, %zu missed; %zu alert%s raised, %zu "
			"alert message%s, %zu acked\n", sm->n_slots,
			sm->n_slots == 1 ? "" : "s", sm->n_attempts,
			sm->n_attempts == 1 ? "" : "s", sm->n_succeeded,
			sm->n_failed, sm->n_lost, sm->n_lost == 1 ? "" : "s",
			sm->n_missed, sm->n_alerts_raised,
			sm->n_alerts_raised == 1 ? "" : "s",
			sm->n_alert_messages,
			sm->n_alert_messages == 1 ? "" : "s", sm->n_acked);
	if (out) {
		json_object_set_new(out, "deliveries", dl);
		json_object_set_new(out, "totals", json_pack(
			"{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}",
			"slots", (int)sm->n_slots, "attempts",
			(int)sm->n_attempts, "succeeded", (int)sm->n_succeeded,
			"failed", (int)sm->n_failed, "lost", (int)sm->n_lost,
			"missed", (int)sm->n_missed, "alerts_raised",
			(int)sm->n_alerts_raised, "alert_messages",
			(int)sm->n_alert_messages, "acked", (int)sm->n_acked));
	} else {
		json_decref(dl);
	}
}

/* ---- set-up and tear-down ------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Points every target at a recording file in the temp folder. */
static int redirect_targets(struct sim *sm)
{
	sm->rec = calloc(sm->cfg->n_targets ? sm->cfg->n_targets : 1,
			 sizeof(*sm->rec));
	if (!sm->rec)
		return cli_fail(EXIT_FAIL, "simulate: out of memory");
	for (size_t i = 0; i < sm->cfg->n_targets; i++) {
		struct target_spec *t = &sm->cfg->targets[i];
		char path[512];
		snprintf(path, sizeof(path), "%s/target-%s.jsonl", sm->dir,
			 t->name);
		sm->rec[i].path = strdup(path);
		char *copy = strdup(path);
		if (!sm->rec[i].path || !copy) {
			free(copy);
			return cli_fail(EXIT_FAIL, "simulate: out of memory");
		}
		/* The recorder is a file target: the real delivery path
		 * (outbox, guards, notices, alerts) writes what it would
		 * have sent, one JSON line per message. */
		free(t->path);
		t->path = copy;
		t->kind = TARGET_FILE;
	}
	return EXIT_OK;
}

/* Remembers each target's own kind and path for --fail-target, with a
 * path under the temp folder that cannot be opened (its folder does not
 * exist) for the windows. */
static int save_targets(struct sim *sm)
{
	sm->saved = calloc(sm->cfg->n_targets ? sm->cfg->n_targets : 1,
			   sizeof(*sm->saved));
	if (!sm->saved)
		return cli_fail(EXIT_FAIL, "simulate: out of memory");
	for (size_t i = 0; i < sm->cfg->n_targets; i++) {
		struct target_spec *t = &sm->cfg->targets[i];
		char path[512];
		snprintf(path, sizeof(path), "%s/unreachable/%s.jsonl",
			 sm->dir, t->name);
		sm->saved[i].kind = t->kind;
		sm->saved[i].path = t->path;
		sm->saved[i].down_path = strdup(path);
		if (!sm->saved[i].down_path)
			return cli_fail(EXIT_FAIL, "simulate: out of memory");
	}
	return EXIT_OK;
}

static int opt(const char *name, int argc, char **argv, int *i,
	       const char **val)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		*val = NULL;
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int cmd_simulate(int argc, char **argv)
{
	const char *path = "surecron.yaml", *from_s = NULL, *until_s = NULL;
	const char *fail_args[SIM_MAX_FAILS] = {0};
	const char *ack_args[SIM_MAX_ACKS] = {0};
	const char *slow_args[SIM_MAX_FAILS] = {0};
	const char *outage_args[SIM_MAX_OUTAGES] = {0};
	struct sim sm;
	struct sc_err err = {0};
	int64_t from = 0, until = 0;
	int code = EXIT_FAIL;

	memset(&sm, 0, sizeof(sm));
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int m;
		if ((m = opt("--config", argc, argv, &i, &v)) != 0 ||
		    (m = opt("-c", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--config "
						       "needs a file");
			path = v;
		} else if ((m = opt("--from", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--from "
						       "needs a time");
			from_s = v;
		} else if ((m = opt("--until", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--until "
						       "needs a time");
			until_s = v;
		} else if ((m = opt("--fail", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--fail needs "
						       "TASK@T1..T2[:exit=N]");
			if (sm.n_fails >= SIM_MAX_FAILS)
				return cli_usage_error("simulate", "at most %d "
						       "--fail", SIM_MAX_FAILS);
			fail_args[sm.n_fails] = v;
			int rc = parse_fail("--fail", v,
					    &sm.fails[sm.n_fails]);
			if (rc)
				return rc;
			sm.n_fails++;
		} else if ((m = opt("--down", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--down needs "
						       "T1..T2");
			if (sm.n_downs >= SIM_MAX_DOWN)
				return cli_usage_error("simulate", "at most %d "
						       "--down", SIM_MAX_DOWN);
			int rc = parse_window("--down", v,
					      &sm.downs[sm.n_downs]);
			if (rc)
				return rc;
			sm.n_downs++;
		} else if ((m = opt("--pause", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--pause "
						       "needs T1..T2");
			if (sm.pause.until_ms != 0)
				return cli_usage_error("simulate", "at most one "
						       "--pause");
			int rc = parse_window("--pause", v, &sm.pause);
			if (rc)
				return rc;
			if (sm.pause.until_ms - sm.pause.from_ms >
			    STORE_PAUSE_MAX_MS)
				return cli_usage_error("simulate", "--pause: a "
						       "pause lasts at most 30 "
						       "days");
		} else if ((m = opt("--slow", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--slow needs "
						       "TASK@T1..T2=DURATION");
			if (sm.n_slows >= SIM_MAX_FAILS)
				return cli_usage_error("simulate", "at most %d "
						       "--slow", SIM_MAX_FAILS);
			slow_args[sm.n_slows] = v;
			int rc = parse_slow(v, &sm.slows[sm.n_slows]);
			if (rc)
				return rc;
			sm.n_slows++;
		} else if ((m = opt("--ack", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--ack needs "
						       "SCHEDULE@T");
			if (sm.n_acks >= SIM_MAX_ACKS)
				return cli_usage_error("simulate", "at most %d "
						       "--ack", SIM_MAX_ACKS);
			ack_args[sm.n_acks] = v;
			int rc = parse_ack(v, &sm.acks[sm.n_acks]);
			if (rc)
				return rc;
			sm.n_acks++;
		} else if ((m = opt("--fail-target", argc, argv, &i, &v)) != 0) {
			if (m < 0)
				return cli_usage_error("simulate", "--fail-target "
						       "needs NAME@T1..T2");
			if (sm.n_outages >= SIM_MAX_OUTAGES)
				return cli_usage_error("simulate", "at most %d "
						       "--fail-target",
						       SIM_MAX_OUTAGES);
			outage_args[sm.n_outages] = v;
			int rc = parse_outage(v, &sm.outages[sm.n_outages]);
			if (rc)
				return rc;
			sm.n_outages++;
		} else if (strcmp(argv[i], "--json") == 0) {
			sm.json = true;
		} else if (strcmp(argv[i], "--deliver") == 0) {
			sm.deliver = true;
		} else {
			return cli_usage_error("simulate", "unexpected argument "
					       "'%s'", argv[i]);
		}
	}
	if (!from_s || !until_s)
		return cli_usage_error("simulate", "--from and --until are "
				       "required");
	if (clock_parse_iso(from_s, &from, &err) != 0)
		return cli_usage_error("simulate", "--from '%s': %s", from_s,
				       err.msg);
	if (clock_parse_iso(until_s, &until, &err) != 0)
		return cli_usage_error("simulate", "--until '%s': %s", until_s,
				       err.msg);
	if (until < from)
		return cli_usage_error("simulate", "--until is before --from");

	cli_setup_logging_if_asked(SC_LOG_WARN);
	if (config_load(path, &sm.cfg, &err) != 0) {
		cli_out(stderr, "surecron: %s\n", err.msg);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sm.n_fails; i++)
		if (!task_known(sm.cfg, sm.fails[i].task)) {
			code = cli_usage_error("simulate", "--fail '%s': column "
					       "1: no task named '%s' in %s",
					       fail_args[i], sm.fails[i].task,
					       path);
			goto out_cfg;
		}

	for (size_t i = 0; i < sm.n_slows; i++)
		if (!task_known(sm.cfg, sm.slows[i].task)) {
			code = cli_usage_error("simulate", "--slow '%s': column "
					       "1: no task named '%s' in %s",
					       slow_args[i], sm.slows[i].task,
					       path);
			goto out_cfg;
		}
	for (size_t i = 0; i < sm.n_acks; i++)
		if (!config_schedule(sm.cfg, sm.acks[i].schedule)) {
			code = cli_usage_error("simulate", "--ack '%s': column "
					       "1: no schedule named '%s' in %s",
					       ack_args[i], sm.acks[i].schedule,
					       path);
			goto out_cfg;
		}
	for (size_t i = 0; i < sm.n_outages; i++)
		if (!config_target(sm.cfg, sm.outages[i].target)) {
			code = cli_usage_error("simulate", "--fail-target '%s': "
					       "column 1: no target named '%s' "
					       "in %s", outage_args[i],
					       sm.outages[i].target, path);
			goto out_cfg;
		}

	const char *tmp = getenv("TMPDIR");
	snprintf(sm.dir, sizeof(sm.dir), "%s/surecron-sim-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sm.dir)) {
		code = cli_fail(EXIT_FAIL, "simulate: cannot make a temp "
				"folder in %s", tmp && *tmp ? tmp : "/tmp");
		goto out_cfg;
	}
	char url[320];
	snprintf(url, sizeof(url), "sqlite:%s/simulate.db", sm.dir);
	sm.clock = sc_clock_virtual_new(from);
	if (!sm.clock) {
		code = cli_fail(EXIT_FAIL, "simulate: out of memory");
		goto out_dir;
	}
	if (store_open(url, sm.clock, &sm.store, &err) != 0) {
		code = cli_fail(EXIT_FAIL, "simulate: store: %s", err.msg);
		goto out_clock;
	}
	if (!sm.deliver && (code = redirect_targets(&sm)) != EXIT_OK)
		goto out_store;
	if (sm.n_outages && (code = save_targets(&sm)) != EXIT_OK)
		goto out_store;
	/* --pause: what `surecron pause` writes, for every schedule. */
	for (size_t i = 0; sm.pause.until_ms && i < sm.cfg->n_schedules; i++) {
		struct store_pause p = {.from_ms = sm.pause.from_ms,
					.until_ms = sm.pause.until_ms};
		snprintf(p.schedule, sizeof(p.schedule), "%s",
			 sm.cfg->schedules[i].name);
		snprintf(p.by, sizeof(p.by), "simulate");
		snprintf(p.note, sizeof(p.note), "--pause");
		if (store_pause_set(sm.store, &p, &err) != 0) {
			code = cli_fail(EXIT_FAIL, "simulate: store: %s",
					err.msg);
			goto out_store;
		}
	}
	sm.events = json_array();

	char f1[CLI_TIME_MAX], f2[CLI_TIME_MAX];
	if (!sm.json)
		cli_out(stdout, "simulating %s from %s until %s%s\n", path,
			clock_format_utc(from, f1), clock_format_utc(until, f2),
			sm.deliver ? " (delivering for real)"
				   : " (deliveries recorded, not sent)");
	code = simulate(&sm, from, until);
	if (code == EXIT_OK) {
		json_t *out = sm.json ? json_object() : NULL;
		if (out) {
			json_object_set_new(out, "config", json_string(path));
			json_object_set_new(out, "from",
					    json_string(clock_format_utc(from,
									 f1)));
			json_object_set_new(out, "until",
					    json_string(clock_format_utc(until,
									 f2)));
			json_object_set_new(out, "deliver",
					    json_boolean(sm.deliver));
			json_object_set(out, "events", sm.events);
		}
		print_ledger(&sm, out);
		print_totals(&sm, out);
		if (out) {
			char *s = json_dumps(out, JSON_INDENT(1));
			if (s)
				printf("%s\n", s);
			free(s);
			json_decref(out);
		}
	}
	json_decref(sm.events);
	for (size_t i = 0; sm.rec && i < sm.cfg->n_targets; i++)
		free(sm.rec[i].path);
	free(sm.rec);
out_store:
	restore_targets(&sm);
	store_close(sm.store);
out_clock:
	sc_clock_free(sm.clock);
out_dir:
	nftw(sm.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
out_cfg:
	config_free(sm.cfg);
	return code;
}
