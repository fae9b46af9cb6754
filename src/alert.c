/*
 * alert.c - loud loss: raising alerts, closing them, repeating them, and
 * sending them like results (issue 13).
 *
 * Who is alerted: the config's alert targets, which config_parse resolved
 * once (SURECRON_ALERT_TARGETS when set and non-empty, names separated by
 * commas or spaces, else `alerts: targets`; an unknown name fails the
 * load, so `check` and the daemon agree, issue 43).
 *
 * One alert's life (store.h has the rows):
 *
 *   job DEAD ---------> raise "lost" (OPEN) <-- sweep: DEAD, not raised
 *   catch-up pass ----> raise "missed" (OPEN)
 *   timing pass ------> raise "late", "overrun", "stale" (OPEN, `sla:`)
 *        |
 *        +-- round 0 staged: one send row per alert target
 *        +-- realert due (OPEN, every `alerts: realert`) -> round 1, 2...
 *        +-- the slot(s) succeeded -> HEALED, and a "recovered" message
 *        |                            (CLOSED, staged and sent the same way)
 *        +-- surecron ack ----------> ACKED ("acked" ledger row)
 *
 *   send row: PENDING --claim--> SENDING --taken--> SENT
 *                ^                  |  \--ambiguous--> UNKNOWN --claim,
 *                |          sure failure             "duplicate" row--> SENDING
 *                +--- FAILED <------+     (and a SENDING whose sender died:
 *                        |                 its lease runs out -> UNKNOWN)
 *                        +-- still failing ALERT_GIVE_UP_MS after the
 *                            raise --> ABANDONED (error line, ledger row)
 *
 * Invariants:
 *   - an alert is a row before it is a message: whatever kills the
 *     process after the slot is lost, the next alert_tick finds the DEAD
 *     job unraised (or the round unstaged, or the send due) and goes on
 *     from there, so the alert goes out once the target takes it;
 *   - once per (slot, reason, target): the raise is keyed, each round is
 *     a compare-and-set, each send row is claimed under a lease, and a SENT
 *     row is never claimed again; a copy that may have arrived is resent
 *     only after a "duplicate" ledger row says so (alerts always resend:
 *     a second copy of an alert beats none, so on_ambiguous does not
 *     apply here);
 *   - every change of a send's state writes a ledger row ("alert") in the
 *     same transaction, so the ledger tells each try of each alert;
 *   - a lost slot with no alert target configured is still loud: an
 *     `error` line says so at each round, and the open alert keeps
 *     `ledger --lost` failing until someone acts;
 *   - the timing checks (issue 14) read the store once per pass for
 *     every schedule (store_sla_scan) and raise keyed alerts, so a breach
 *     seen by every node at once is one alert; each has one ledger row
 *     (late, overrun, stale), written by the raise that created it. A
 *     breach that ends (the slot started, the attempt ended, a slot was
 *     delivered) heals its alert like a succeeded slot: HEALED and one
 *     "recovered" message, whatever `alerts: on` says meanwhile;
 *   - the log lines are module=alert, the vocabulary docs/operations.md
 *     documents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alert.h"
#include "clock.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "message.h"
#include "metrics.h"
#include "target.h"

#define MAX_TARGETS 64
#define SWEEP_MAX 64      /* unraised dead jobs looked at per tick */
#define SENDS_PER_TICK 64 /* claims per tick: the rest wait a second */

void alert_targets(const struct config *c, const struct target_spec **out,
		   size_t max, size_t *n)
{
	*n = 0;
	/* The config resolved SURECRON_ALERT_TARGETS at load and refused a
	 * name that is no target; a config made by hand may still hold one,
	 * which is skipped so that the other targets get the alert. */
	for (size_t i = 0; c && i < c->n_alert_targets && *n < max; i++) {
		const struct target_spec *t = config_target(c, c->alert_targets[i]);
		if (t)
			out[(*n)++] = t;
		else
			LOG(SC_LOG_WARN, "alert",
			       "event=alert_target_unknown alert_target=%s "
			       "msg=\"unknown alert target\"",
			       c->alert_targets[i]);
	}
}

int64_t alert_backoff_ms(int n_tries)
{
	int64_t d = ALERT_BACKOFF_MIN_MS;

	for (int i = 1; i < n_tries && d < ALERT_BACKOFF_MAX_MS; i++)
		d *= 2;
	return d > ALERT_BACKOFF_MAX_MS ? ALERT_BACKOFF_MAX_MS : d;
}

/* ---- raising ------------------------------------------------------------- */

static int raise_logged(struct store *s, const struct store_alert *a,
			struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	bool created = false;
	int64_t id = 0;
	int rc = store_alert_raise(s, a, &created, &id, err);

	if (rc == 0 && created)
		LOG(a->status == ALERT_OPEN ? SC_LOG_ERROR : SC_LOG_INFO,
		       "alert", "event=alert_raised alert=%lld schedule=%s "
		       "slot=%s reason=%s slots=%lld", (long long)id,
		       a->schedule, clock_format_utc(a->slot_ms, iso), a->reason,
		       (long long)a->n_slots);
	return rc;
}

int alert_raise_lost(struct store *s, const struct config *c,
		     const struct store_dead_job *j, struct sc_err *err)
{
	struct store_alert a;

	if (!c || !(c->alert_on & CONFIG_ALERT_ON_LOST))
		return 0;
	memset(&a, 0, sizeof(a));
	snprintf(a.schedule, sizeof(a.schedule), "%s", j->schedule);
	snprintf(a.reason, sizeof(a.reason), "%s", ALERT_REASON_LOST);
	snprintf(a.error_msg, sizeof(a.error_msg), "%s",
		 j->error_msg[0] ? j->error_msg : "unknown error");
	a.slot_ms = a.last_slot_ms = j->slot_ms;
	a.n_slots = 1;
	a.generation = j->attempt;
	a.attempts = j->attempt;
	a.job_id = j->job_id;
	a.status = ALERT_OPEN;
	return raise_logged(s, &a, err);
}

int alert_raise_missed(struct store *s, const char *schedule,
		       int64_t first_ms, int64_t last_ms, int64_t n,
		       struct sc_err *err)
{
	struct store_alert a;

	memset(&a, 0, sizeof(a));
	snprintf(a.schedule, sizeof(a.schedule), "%s", schedule);
	snprintf(a.reason, sizeof(a.reason), "%s", ALERT_REASON_MISSED);
	snprintf(a.error_msg, sizeof(a.error_msg), "not run: the scheduler "
		 "was not running or the clock jumped");
	a.slot_ms = first_ms;
	a.last_slot_ms = last_ms;
	a.n_slots = n > 0 ? n : 1;
	a.status = ALERT_OPEN;
	return raise_logged(s, &a, err);
}

/* A node's alert (runner, skew): raised by the daemon that saw it, on
 * its own name, and closed by it (alert_close_node). */
static bool is_node_reason(const char *reason)
{
	return strcmp(reason, ALERT_REASON_RUNNER) == 0 ||
	       strcmp(reason, ALERT_REASON_SKEW) == 0;
}

static int raise_node(struct store *s, const char *name, const char *reason,
		      int64_t since_ms, const char *why, int64_t *id,
		      struct sc_err *err)
{
	struct store_alert a;
	bool created = false;

	memset(&a, 0, sizeof(a));
	snprintf(a.schedule, sizeof(a.schedule), "%s", name);
	snprintf(a.reason, sizeof(a.reason), "%s", reason);
	snprintf(a.error_msg, sizeof(a.error_msg), "%s", why);
	a.slot_ms = a.last_slot_ms = since_ms;
	a.n_slots = 1;
	a.status = ALERT_OPEN;
	int rc = store_alert_raise(s, &a, &created, id, err);
	if (rc == 0 && created)
		LOG(SC_LOG_ERROR, "alert", "event=alert_raised alert=%lld "
		       "schedule=%s reason=%s", id ? (long long)*id : 0LL,
		       a.schedule, a.reason);
	return rc;
}

int alert_raise_runner(struct store *s, const char *node, int64_t since_ms,
		       const char *why, int64_t *id, struct sc_err *err)
{
	char name[STORE_NAME_MAX];

	/* Test seam: the store refuses the raise, as a store the
	 * exhaustion reached does. */
	if (FAILPOINT_ERR("alert.raise_runner"))
		return sc_err_set(err, SC_ENOMEM, "out of memory (test point "
				  "alert.raise_runner)");
	snprintf(name, sizeof(name), "%s%s", ALERT_RUNNER_PREFIX, node);
	return raise_node(s, name, ALERT_REASON_RUNNER, since_ms,
			  why && *why ? why
				      : "out of descriptors, processes or memory",
			  id, err);
}

int alert_raise_skew(struct store *s, const char *name, int64_t since_ms,
		     const char *why, int64_t *id, struct sc_err *err)
{
	return raise_node(s, name, ALERT_REASON_SKEW, since_ms, why, id, err);
}

/* Raises the lost alerts that a crash (between the DEAD transition and
 * alert_raise_lost) or an older version left unraised. */
static int sweep(const struct alert_ctx *a, struct alert_report *rep,
		 struct sc_err *err)
{
	struct store_dead_job dead[SWEEP_MAX];
	size_t n = 0;

	if (!(a->config->alert_on & CONFIG_ALERT_ON_LOST))
		return 0;
	int rc = store_alert_dead_unalerted(a->store, dead, SWEEP_MAX, &n, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = alert_raise_lost(a->store, a->config, &dead[i], err);
		if (rc == 0)
			rep->n_raised++;
	}
	return rc;
}

/* ---- timing checks (sla:, issue 14) --------------------------------------- */

/* The scan's record of schedule name, or NULL. */
static const struct store_sla_last *sla_last_of(const struct store_sla *x,
						const char *name)
{
	for (size_t i = 0; x && i < x->n_last; i++)
		if (strcmp(x->last[i].schedule, name) == 0)
			return &x->last[i];
	return NULL;
}

/* The instant a stale check counts from: the latest delivery, else the
 * first job (a schedule that never delivered counts from its first
 * start); 0 when neither exists (nothing was ever due). */
static int64_t sla_base_ms(const struct store_sla_last *l)
{
	if (!l)
		return 0;
	return l->delivered_ms ? l->delivered_ms : l->first_ms;
}

/* Raises one breach and, when this call created it, its ledger row. */
static int raise_breach(const struct alert_ctx *a, struct store_alert *al,
			const char *outcome, int attempt, int64_t now,
			size_t *n_raised, struct sc_err *err)
{
	char iso[CLOCK_ISO_MAX];
	bool created = false;
	int64_t id = 0;
	int rc;

	al->status = ALERT_OPEN;
	al->n_slots = 1;
	al->last_slot_ms = al->slot_ms;
	/* job_id stays 0: a lost alert of the job must still be raised. */
	if ((rc = store_alert_raise(a->store, al, &created, &id, err)) != 0 ||
	    !created)
		return rc;
	(*n_raised)++;
	LOG(SC_LOG_ERROR, "alert", "event=alert_raised alert=%lld "
	       "schedule=%s slot=%s reason=%s slots=1", (long long)id,
	       al->schedule, clock_format_utc(al->slot_ms, iso), al->reason);
	LOG(SC_LOG_WARN, "alert", "event=sla_breach schedule=%s slot=%s "
	       "reason=%s attempt=%d msg=\"%s\"", al->schedule,
	       clock_format_utc(al->slot_ms, iso), al->reason, attempt,
	       al->error_msg);
	struct ledger_row row;
	memset(&row, 0, sizeof(row));
	snprintf(row.schedule, sizeof(row.schedule), "%s", al->schedule);
	row.slot_ms = al->slot_ms;
	row.attempt = attempt;
	row.started_ms = row.finished_ms = now;
	snprintf(row.outcome, sizeof(row.outcome), "%s", outcome);
	snprintf(row.error_class, sizeof(row.error_class), "sla");
	row.error_msg = al->error_msg;
	json_t *d = json_pack("{s:I, s:s}", "alert_id", (json_int_t)id,
			      "reason", al->reason);
	row.details_json = d ? json_dumps(d, JSON_COMPACT |
						 JSON_PRESERVE_ORDER)
			     : NULL;
	json_decref(d);
	rc = store_ledger_append(a->store, &row, err);
	free(row.details_json);
	return rc;
}

static bool any_sla(const struct config *c)
{
	for (size_t i = 0; c && i < c->n_schedules; i++)
		if (spec_x(&c->schedules[i])->has_sla)
			return true;
	return false;
}

/*
 * The one read of a pass: the thresholds are the smallest start_within
 * and max_runtime of the config, so the rows of every schedule come in
 * one go; each row is then held against its own schedule's value.
 */
static int sla_scan(const struct alert_ctx *a, int64_t now,
		    struct store_sla *x, struct sc_err *err)
{
	int64_t min_start = INT64_MAX, min_run = INT64_MAX;
	const struct config *c = a->config;

	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *sp = &c->schedules[i];
		if (!spec_x(sp)->has_sla)
			continue;
		if (spec_x(sp)->sla.start_within_ms > 0 &&
		    spec_x(sp)->sla.start_within_ms < min_start)
			min_start = spec_x(sp)->sla.start_within_ms;
		if (spec_x(sp)->sla.max_runtime_ms > 0 &&
		    spec_x(sp)->sla.max_runtime_ms < min_run)
			min_run = spec_x(sp)->sla.max_runtime_ms;
	}
	if (min_start == INT64_MAX || !(c->alert_on & CONFIG_ALERT_ON_LATE))
		x->max_late = 0;
	if (min_run == INT64_MAX || !(c->alert_on & CONFIG_ALERT_ON_OVERRUN))
		x->max_running = 0;
	return store_sla_scan(a->store,
			      min_start == INT64_MAX ? INT64_MIN
						     : now - min_start - 1,
			      min_run == INT64_MAX ? INT64_MIN
						   : now - min_run - 1, x, err);
}

/* Raises every breach the scan shows (a reason left out of `alerts: on`
 * raises nothing). */
static int sla_raise(const struct alert_ctx *a, const struct store_sla *x,
		     int64_t now, struct alert_report *rep, struct sc_err *err)
{
	const struct config *c = a->config;
	char d1[CLOCK_DUR_MAX], iso[CLOCK_ISO_MAX];
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < x->n_late; i++) {
		const struct store_job *j = &x->late[i];
		const struct schedule_spec *sp = config_schedule(c, j->schedule);
		struct store_alert al;
		/* A manual run counts too: run_at is when it was asked for. */
		if (!sp || !spec_x(sp)->has_sla || spec_x(sp)->sla.start_within_ms <= 0 ||
		    now - j->run_at_ms <= spec_x(sp)->sla.start_within_ms)
			continue;
		memset(&al, 0, sizeof(al));
		snprintf(al.schedule, sizeof(al.schedule), "%s", j->schedule);
		snprintf(al.reason, sizeof(al.reason), "%s", ALERT_REASON_LATE);
		al.slot_ms = j->slot_ms;
		snprintf(al.error_msg, sizeof(al.error_msg), "not started %s "
			 "after it was due at %s (sla start_within)",
			 clock_format_duration(spec_x(sp)->sla.start_within_ms, d1,
					       sizeof(d1)),
			 clock_format_utc(j->run_at_ms, iso));
		rc = raise_breach(a, &al, LEDGER_LATE, 0, now, &rep->n_late,
				  err);
	}
	for (size_t i = 0; rc == 0 && i < x->n_running; i++) {
		const struct store_job *j = &x->running[i];
		const struct schedule_spec *sp = config_schedule(c, j->schedule);
		struct store_alert al;
		if (!sp || !spec_x(sp)->has_sla || spec_x(sp)->sla.max_runtime_ms <= 0 ||
		    now - j->started_ms <= spec_x(sp)->sla.max_runtime_ms)
			continue;
		memset(&al, 0, sizeof(al));
		snprintf(al.schedule, sizeof(al.schedule), "%s", j->schedule);
		snprintf(al.reason, sizeof(al.reason), "%s",
			 ALERT_REASON_OVERRUN);
		al.slot_ms = j->slot_ms;
		/* Each attempt that overruns is its own breach. */
		al.generation = j->attempts;
		al.attempts = j->attempts;
		snprintf(al.error_msg, sizeof(al.error_msg), "attempt %d still "
			 "running %s after it started at %s (sla max_runtime); "
			 "it is not stopped", j->attempts,
			 clock_format_duration(spec_x(sp)->sla.max_runtime_ms, d1,
					       sizeof(d1)),
			 clock_format_utc(j->started_ms, iso));
		rc = raise_breach(a, &al, LEDGER_OVERRUN, j->attempts, now,
				  &rep->n_overrun, err);
	}
	for (size_t i = 0; rc == 0 && (c->alert_on & CONFIG_ALERT_ON_STALE) &&
			   i < c->n_schedules; i++) {
		const struct schedule_spec *sp = &c->schedules[i];
		if (!spec_x(sp)->has_sla || spec_x(sp)->sla.success_within_ms <= 0)
			continue;
		const struct store_sla_last *l = sla_last_of(x, sp->name);
		int64_t base = sla_base_ms(l);
		if (base == 0 || now - base <= spec_x(sp)->sla.success_within_ms)
			continue;
		struct store_alert al;
		memset(&al, 0, sizeof(al));
		snprintf(al.schedule, sizeof(al.schedule), "%s", sp->name);
		snprintf(al.reason, sizeof(al.reason), "%s", ALERT_REASON_STALE);
		/* Keyed by the instant it counts from: the same staleness on
		 * every node, and a new one after the next delivery. */
		al.slot_ms = base;
		snprintf(al.error_msg, sizeof(al.error_msg), "no slot delivered "
			 "for %s (sla success_within), %s %s",
			 clock_format_duration(spec_x(sp)->sla.success_within_ms, d1,
					       sizeof(d1)),
			 l->delivered_ms ? "the last at" : "none since its first "
			 "start at", clock_format_utc(base, iso));
		rc = raise_breach(a, &al, LEDGER_STALE, 0, now, &rep->n_stale,
				  err);
	}
	return rc;
}

/* ---- healing ------------------------------------------------------------- */

/* Have the slots of alert x all succeeded since (a timing breach: has
 * it ended)? scan: this pass's timing read (NULL: none was made). */
static int slots_succeeded(struct store *s, const struct store_alert *x,
			   const struct store_sla *scan, bool *yes,
			   struct sc_err *err)
{
	*yes = false;
	/* The node's daemon closes it when what raised it ends. */
	if (is_node_reason(x->reason))
		return 0;
	if (strcmp(x->reason, ALERT_REASON_LATE) == 0 ||
	    strcmp(x->reason, ALERT_REASON_OVERRUN) == 0) {
		/* late: the slot's first attempt began, or the job is gone;
		 * overrun: that attempt ended (or the job is gone). */
		struct store_job j;
		int rc = store_job_find(s, x->schedule, x->slot_ms, &j, err);
		if (rc == SC_ENOENT) {
			*yes = true;
			return 0;
		}
		if (rc)
			return rc;
		if (x->reason[0] == 'l')
			*yes = j.state != JOB_READY || j.attempts > 0;
		else
			*yes = j.state != JOB_ACTIVE ||
			       j.attempts != x->generation;
		return 0;
	}
	if (strcmp(x->reason, ALERT_REASON_STALE) == 0) {
		/* A slot delivered after the instant it counted from; a
		 * schedule the pass did not read stays open (ack closes). */
		const struct store_sla_last *l = sla_last_of(scan, x->schedule);
		*yes = l && l->delivered_ms > x->slot_ms;
		return 0;
	}
	if (strcmp(x->reason, ALERT_REASON_LOST) == 0) {
		struct store_job j;
		int rc = store_job_find(s, x->schedule, x->slot_ms, &j, err);
		if (rc == SC_ENOENT)
			return 0;
		*yes = rc == 0 && j.state == JOB_DONE;
		return rc;
	}
	/* missed: as many success rows in its range as slots it names (a
	 * slot completes once: the marker guards it). */
	struct ledger_filter f = {.schedule = x->schedule,
				  .since_ms = x->slot_ms,
				  .until_ms = x->last_slot_ms + 1,
				  .outcome = LEDGER_SUCCESS};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	int rc = store_ledger_query(s, &f, &rows, &n, err);
	if (rc)
		return rc;
	*yes = (int64_t)n >= x->n_slots;
	store_ledger_rows_free(rows, n);
	return 0;
}

static char *details_of(const struct store_alert *x, const char *note,
			const char *by)
{
	json_t *d = json_pack("{s:I, s:s, s:I, s:I}", "alert_id",
			      (json_int_t)x->id, "reason", x->reason,
			      "first_ms", (json_int_t)x->slot_ms, "last_ms",
			      (json_int_t)x->last_slot_ms);
	if (d && note)
		json_object_set_new(d, "note", json_string(note));
	if (d && by)
		json_object_set_new(d, "by", json_string(by));
	char *s = d ? json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(d);
	return s;
}

static void row_for(struct ledger_row *row, const struct store_alert *x,
		    const char *outcome, int64_t now)
{
	memset(row, 0, sizeof(*row));
	snprintf(row->schedule, sizeof(row->schedule), "%s", x->schedule);
	row->slot_ms = x->slot_ms;
	row->job_id = x->job_id;
	row->started_ms = row->finished_ms = now;
	snprintf(row->outcome, sizeof(row->outcome), "%s", outcome);
}

/* Is reason one of the timing checks'? */
static bool is_sla_reason(const char *reason)
{
	return strcmp(reason, ALERT_REASON_LATE) == 0 ||
	       strcmp(reason, ALERT_REASON_OVERRUN) == 0 ||
	       strcmp(reason, ALERT_REASON_STALE) == 0;
}

/* Closes x as HEALED with its "recovered" message and ledger row;
 * *changed false when it was not OPEN any more. */
static int close_healed(struct store *s, struct sc_clock *clock,
			const struct store_alert *x, bool *changed,
			struct sc_err *err)
{
	struct store_alert then = *x;
	then.id = 0;
	snprintf(then.reason, sizeof(then.reason), "%s",
		 ALERT_REASON_RECOVERED);
	then.generation = x->id;
	then.status = ALERT_CLOSED;
	then.error_msg[0] = '\0';
	then.note[0] = '\0';
	/* A timing breach's "recovered" message says which one ended, and
	 * so does a node's alert. */
	if (is_sla_reason(x->reason) || is_node_reason(x->reason))
		snprintf(then.note, sizeof(then.note), "%s", x->reason);
	struct ledger_row row;
	char msg[STORE_NAME_MAX + 96];
	row_for(&row, x, LEDGER_RECOVERED,
		sc_clock_now_ms(clock ? clock : store_clock(s)));
	if (strcmp(x->reason, ALERT_REASON_RUNNER) == 0)
		snprintf(msg, sizeof(msg), "the runner alert of %s is closed: "
			 "it runs tasks again", x->schedule +
			 strlen(ALERT_RUNNER_PREFIX));
	else if (strcmp(x->reason, ALERT_REASON_SKEW) == 0)
		snprintf(msg, sizeof(msg), "the skew alert %s is closed: the "
			 "nodes agree again", x->schedule);
	else if (is_sla_reason(x->reason))
		snprintf(msg, sizeof(msg), "the %s alert of %s is closed: %s",
			 x->reason, x->schedule,
			 x->reason[0] == 'l' ? "the slot started"
			 : x->reason[0] == 'o' ? "the attempt ended"
					       : "a slot was delivered since");
	else
		snprintf(msg, sizeof(msg), "the %s alert of %s is closed: the "
			 "slot succeeded since", x->reason, x->schedule);
	row.error_msg = msg;
	row.details_json = details_of(x, NULL, NULL);
	int rc = store_alert_close(s, x->id, ALERT_HEALED, NULL, &then, &row,
				   changed, err);
	free(row.details_json);
	if (rc == 0 && *changed)
		LOG(SC_LOG_INFO, "alert", "event=alert_healed alert=%lld "
		       "schedule=%s reason=%s", (long long)x->id, x->schedule,
		       x->reason);
	return rc;
}

static int heal(const struct alert_ctx *a, const struct store_alert *x,
		const struct store_sla *scan, struct alert_report *rep,
		struct sc_err *err)
{
	bool yes = false, changed = false;
	int rc = slots_succeeded(a->store, x, scan, &yes, err);

	if (rc || !yes)
		return rc;
	rc = close_healed(a->store, a->clock, x, &changed, err);
	if (rc == 0 && changed)
		rep->n_healed++;
	return rc;
}

int alert_close_node(struct store *s, int64_t id, struct sc_err *err)
{
	struct alert_filter f = {.open_only = true, .slot_ms = INT64_MIN,
				 .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	bool changed = false;
	int rc = store_alert_list(s, &f, &v, &n, err);

	/* The open alerts are few: the one asked for is looked up among
	 * them (an acked one is not there, and needs nothing). */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (v[i].id == id && is_node_reason(v[i].reason))
			rc = close_healed(s, NULL, &v[i], &changed, err);
	sc_free(v);
	return rc;
}

/* ---- rounds: realert and staging ------------------------------------------ */

static void compose_text(const struct store_alert *x, int round,
			 char *summary, size_t ns, char *command, size_t nc,
			 bool *has_command)
{
	char t1[CLOCK_ISO_MAX], t2[CLOCK_ISO_MAX], again[32] = "";

	clock_format_utc(x->slot_ms, t1);
	clock_format_utc(x->last_slot_ms, t2);
	if (round > 0)
		snprintf(again, sizeof(again), " (reminder %d)", round);
	*has_command = true;
	if (strcmp(x->reason, ALERT_REASON_LOST) == 0) {
		snprintf(summary, ns, "\xF0\x9F\x9A\xA8 %s: the run of %s was "
			 "lost after %d attempt%s%s", x->schedule, t1,
			 x->attempts, x->attempts == 1 ? "" : "s", again);
		snprintf(command, nc, "surecron retry %lld (or: surecron ack "
			 "%s %s)", (long long)x->job_id, x->schedule, t1);
	} else if (strcmp(x->reason, ALERT_REASON_MISSED) == 0) {
		if (x->n_slots <= 1)
			snprintf(summary, ns, "\xF0\x9F\x9A\xA8 %s: the run of "
				 "%s was missed (not run after downtime)%s",
				 x->schedule, t1, again);
		else
			snprintf(summary, ns, "\xF0\x9F\x9A\xA8 %s: %lld runs "
				 "were missed, from %s to %s (not run after "
				 "downtime)%s", x->schedule,
				 (long long)x->n_slots, t1, t2, again);
		snprintf(command, nc, "surecron trigger --slot %s %s (or: "
			 "surecron ack %s %s)", t1, x->schedule, x->schedule,
			 t1);
	} else if (strcmp(x->reason, ALERT_REASON_LATE) == 0) {
		snprintf(summary, ns, "\xE2\x8F\xB0 %s: the run of %s is late: "
			 "not started yet%s", x->schedule, t1, again);
		snprintf(command, nc, "surecron ledger --schedule %s (or: "
			 "surecron ack %s %s)", x->schedule, x->schedule, t1);
	} else if (strcmp(x->reason, ALERT_REASON_OVERRUN) == 0) {
		snprintf(summary, ns, "\xE2\x8F\xB0 %s: attempt %d of the run of "
			 "%s overruns its max_runtime (still running)%s",
			 x->schedule, x->attempts, t1, again);
		snprintf(command, nc, "surecron ledger --schedule %s (or: "
			 "surecron ack %s %s)", x->schedule, x->schedule, t1);
	} else if (strcmp(x->reason, ALERT_REASON_STALE) == 0) {
		snprintf(summary, ns, "\xE2\x8F\xB0 %s is stale: no run "
			 "delivered since %s%s", x->schedule, t1, again);
		snprintf(command, nc, "surecron status --stale (or: surecron "
			 "ack %s %s)", x->schedule, t1);
	} else if (strcmp(x->reason, ALERT_REASON_RUNNER) == 0) {
		snprintf(summary, ns, "\xF0\x9F\x9A\xA8 surecron on %s cannot run "
			 "tasks since %s: out of descriptors, processes or "
			 "memory; no slot is charged, they wait and run once "
			 "it ends%s", x->schedule + strlen(ALERT_RUNNER_PREFIX),
			 t1, again);
		snprintf(command, nc, "surecron status (or: surecron ack %s "
			 "%s)", x->schedule, t1);
	} else if (strcmp(x->reason, ALERT_REASON_SKEW) == 0) {
		/* error_msg is cut to fit: it names the nodes, which may
		 * be many. */
		if (snprintf(summary, ns, "\xF0\x9F\x9A\xA8 config skew since "
			     "%s%s: no slot is charged, the jobs wait for a "
			     "node that has the schedule: %s", t1, again,
			     x->error_msg) < 0)
			summary[0] = '\0';
		snprintf(command, nc, "surecron status (or: surecron ack %s "
			 "%s)", x->schedule, t1);
	} else if (strcmp(x->note, ALERT_REASON_SKEW) == 0) {
		snprintf(summary, ns, "\xE2\x9C\x85 config skew %s ended "
			 "(since %s); its alert is closed", x->schedule, t1);
		*has_command = false;
	} else if (strcmp(x->note, ALERT_REASON_RUNNER) == 0) {
		snprintf(summary, ns, "\xE2\x9C\x85 surecron on %s runs tasks "
			 "again (exhausted since %s); its alert is closed",
			 x->schedule + strlen(ALERT_RUNNER_PREFIX), t1);
		*has_command = false;
	} else if (strcmp(x->note, ALERT_REASON_LATE) == 0) {
		snprintf(summary, ns, "\xE2\x9C\x85 %s: the late run of %s has "
			 "started; its alert is closed", x->schedule, t1);
		*has_command = false;
	} else if (strcmp(x->note, ALERT_REASON_OVERRUN) == 0) {
		snprintf(summary, ns, "\xE2\x9C\x85 %s: the overrunning attempt "
			 "of the run of %s has ended; its alert is closed",
			 x->schedule, t1);
		*has_command = false;
	} else if (strcmp(x->note, ALERT_REASON_STALE) == 0) {
		snprintf(summary, ns, "\xE2\x9C\x85 %s delivered a run again "
			 "(stale since %s); its alert is closed", x->schedule,
			 t1);
		*has_command = false;
	} else {
		snprintf(summary, ns, "\xE2\x9C\x85 %s: the run of %s recovered; "
			 "its alert is closed", x->schedule, t1);
		*has_command = false;
	}
}

static int stage_round(const struct alert_ctx *a, const struct store_alert *x,
		       int round, struct alert_report *rep, struct sc_err *err)
{
	const struct target_spec *t[MAX_TARGETS];
	const char *names[MAX_TARGETS];
	char summary[STORE_NAME_MAX + 256], command[2 * STORE_NAME_MAX + 128];
	char iso[CLOCK_ISO_MAX];
	bool has_command;
	size_t n = 0;
	char *body = NULL;
	int rc;

	/* A reminder round of an alert closed meanwhile is not sent. */
	bool wanted = x->status == ALERT_OPEN || round == 0;
	if (wanted)
		alert_targets(a->config, t, MAX_TARGETS, &n);
	if (wanted && n == 0)
		LOG(SC_LOG_ERROR, "alert", "event=alert_not_sent alert=%lld "
		       "schedule=%s slot=%s reason=%s msg=\"no alert targets "
		       "configured\"", (long long)x->id, x->schedule,
		       clock_format_utc(x->slot_ms, iso), x->reason);
	for (size_t i = 0; i < n; i++)
		names[i] = t[i]->name;
	if (n > 0) {
		compose_text(x, round, summary, sizeof(summary), command,
			     sizeof(command), &has_command);
		struct message m = {
			.kind = MESSAGE_ALERT, .schedule = x->schedule,
			.slot_ms = x->slot_ms, .attempt = x->attempts,
			.summary = summary,
			.error = x->error_msg[0] ? x->error_msg : NULL,
			.reason = x->reason, .last_slot_ms = x->last_slot_ms,
			.n_slots = x->n_slots, .round = round,
			.command = has_command ? command : NULL,
		};
		if ((rc = message_compose(&m, &body, err)) != 0)
			return rc;
	}
	rc = store_alert_stage(a->store, x->id, round, names, n, body, err);
	free(body);
	if (rc == 0)
		rep->n_staged++;
	return rc;
}

/* Realert rounds, then the staging of every round not staged yet. */
static int rounds(const struct alert_ctx *a, struct alert_report *rep,
		  struct sc_err *err)
{
	struct alert_filter f = {.unstaged_only = true, .slot_ms = INT64_MIN,
				 .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	int rc = store_alert_list(a->store, &f, &v, &n, err);

	for (size_t i = 0; rc == 0 && i < n; i++)
		for (int r = v[i].staged_rounds; rc == 0 && r < v[i].rounds;
		     r++)
			rc = stage_round(a, &v[i], r, rep, err);
	sc_free(v);
	return rc;
}

/* The open alerts: heal those whose slots succeeded, then realert. */
static int open_alerts(const struct alert_ctx *a, int64_t now,
		       const struct store_sla *scan, struct alert_report *rep,
		       struct sc_err *err)
{
	struct alert_filter f = {.open_only = true, .slot_ms = INT64_MIN,
				 .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	int64_t every = a->config->alert_realert_ms;
	int rc = store_alert_list(a->store, &f, &v, &n, err);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct store_alert *x = &v[i];
		bool won = false;

		rc = heal(a, x, scan, rep, err);
		if (rc || every <= 0 || x->staged_rounds < x->rounds ||
		    now - x->round_ms < every)
			continue;
		rc = store_alert_realert(a->store, x->id, x->rounds, &won, err);
		if (rc == 0 && won) {
			rep->n_rounds++;
			LOG(SC_LOG_WARN, "alert", "event=alert_realert "
			       "alert=%lld schedule=%s reason=%s round=%d",
			       (long long)x->id, x->schedule, x->reason,
			       x->rounds);
		}
	}
	sc_free(v);
	return rc;
}

/* ---- sending -------------------------------------------------------------- */

/* The ledger row of one send's new state; *details allocated. */
static void send_row(struct ledger_row *row, const struct store_alert_send *x,
		     enum send_state st, const char *key, int64_t now,
		     const char *msg)
{
	memset(row, 0, sizeof(*row));
	snprintf(row->schedule, sizeof(row->schedule), "%s", x->schedule);
	row->slot_ms = x->slot_ms;
	row->started_ms = row->finished_ms = now;
	snprintf(row->outcome, sizeof(row->outcome), "%s", LEDGER_ALERT);
	if (st != SEND_SENT)
		snprintf(row->error_class, sizeof(row->error_class),
			 "alert_send");
	row->error_msg = (char *)msg;
	json_t *d = json_pack("{s:I, s:s, s:i, s:s, s:s, s:i, s:s}",
			      "alert_id", (json_int_t)x->alert_id, "reason",
			      x->reason, "round", x->round, "target",
			      x->target, "state", store_send_state_name(st),
			      "tries", x->n_tries, "idempotency_key", key);
	row->details_json = d ? json_dumps(d, JSON_COMPACT |
						 JSON_PRESERVE_ORDER)
			      : NULL;
	json_decref(d);
}

static int finish_send(const struct alert_ctx *a,
		       const struct store_alert_send *x, enum send_state st,
		       int64_t next_ms, const char *key, const char *msg,
		       struct sc_err *err)
{
	struct ledger_row row;
	int64_t now = sc_clock_now_ms(a->clock ? a->clock
					       : store_clock(a->store));

	send_row(&row, x, st, key, now, msg);
	int rc = store_alert_send_finish(a->store, x->id, x->lease_token, st,
					 next_ms, st == SEND_SENT ? NULL : msg,
					 &row, err);
	free(row.details_json);
	return rc;
}

/* The "duplicate" row before a copy that may have arrived goes again. */
static int declare_duplicate(const struct alert_ctx *a,
			     const struct store_alert_send *x, const char *key,
			     int64_t now, struct sc_err *err)
{
	struct ledger_row row;
	char msg[STORE_NAME_MAX + 160];

	send_row(&row, x, SEND_UNKNOWN, key, now, msg);
	snprintf(row.outcome, sizeof(row.outcome), "%s", LEDGER_DUPLICATE);
	snprintf(row.error_class, sizeof(row.error_class), "ambiguous_send");
	snprintf(msg, sizeof(msg), "alert to target %s: an earlier send was "
		 "interrupted and may have arrived; sending again (a second "
		 "copy is possible)", x->target);
	int rc = store_ledger_append(a->store, &row, err);
	free(row.details_json);
	return rc;
}

static int send_one(const struct alert_ctx *a, struct store_alert_send *x,
		    struct alert_report *rep, struct sc_err *err)
{
	struct sc_clock *clock = a->clock ? a->clock : store_clock(a->store);
	int64_t now = sc_clock_now_ms(clock);
	const struct target_spec *t = config_target(a->config, x->target);
	const struct schedule_spec *sc_of = config_schedule(a->config,
							    x->schedule);
	char key[MESSAGE_KEY_MAX] = "", kind[32], msg[SC_ERR_MSG_MAX + 64];
	char iso[CLOCK_ISO_MAX];
	int rc;

	/* The key of (slot, reason, round, target): the same for every copy
	 * of that message, whoever sends it; without libcrypto it stays ""
	 * and a target that needs one says why when it sends. */
	snprintf(kind, sizeof(kind), "%s/%s", MESSAGE_ALERT, x->reason);
	(void)message_idempotency_key(kind, x->schedule, x->slot_ms, x->target,
				      x->round, key, NULL);
	if (!t) {
		snprintf(msg, sizeof(msg), "target %s is no longer in the "
			 "configuration", x->target);
		rep->n_abandoned++;
		LOG(SC_LOG_ERROR, "alert", "event=alert_abandoned alert=%lld "
		       "schedule=%s target=%s msg=\"%s\"",
		       (long long)x->alert_id, x->schedule, x->target, msg);
		return finish_send(a, x, SEND_ABANDONED, 0, key, msg, err);
	}
	if (x->state == SEND_UNKNOWN) {
		rc = declare_duplicate(a, x, key, now, err);
		if (rc)
			return rc;
		rep->n_duplicates++;
		LOG(SC_LOG_WARN, "alert", "event=alert_resend alert=%lld "
		       "schedule=%s target=%s msg=\"resending after an "
		       "ambiguous send\"", (long long)x->alert_id,
		       x->schedule, x->target);
	}
	FAILPOINT("alert.after_claim_before_send");
	struct target_copy c = {
		.target = t, .body = x->body,
		.idempotency_key = key[0] ? key : NULL,
		.kind = MESSAGE_ALERT, .schedule = x->schedule,
		.slot_ms = x->slot_ms, .attempt = x->round, .clock = clock,
		.zone = sc_of ? sc_of->zone : NULL,
	};
	struct sc_err serr = {0};
	if (target_send(&c, &serr) == 0) {
		FAILPOINT("alert.after_send_before_sent");
		snprintf(msg, sizeof(msg), "%s alert sent to %s (round %d, "
			 "try %d)", x->reason, x->target, x->round, x->n_tries);
		rc = finish_send(a, x, SEND_SENT, 0, key, msg, err);
		if (rc == 0) {
			rep->n_sent++;
			metrics_alert(x->reason);
			LOG(SC_LOG_INFO, "alert", "event=alert_sent alert=%lld "
			       "schedule=%s slot=%s reason=%s target=%s "
			       "round=%d tries=%d", (long long)x->alert_id,
			       x->schedule, clock_format_utc(x->slot_ms, iso),
			       x->reason, x->target, x->round, x->n_tries);
		}
		return rc;
	}
	char why[2 * SC_ERR_MSG_MAX + 4];
	snprintf(msg, sizeof(msg), "%s", serr.msg[0] ? serr.msg
						     : sc_strerror(serr.code));
	if (now - x->alert_created_ms >= ALERT_GIVE_UP_MS) {
		rep->n_abandoned++;
		LOG(SC_LOG_ERROR, "alert", "event=alert_abandoned alert=%lld "
		       "schedule=%s target=%s tries=%d msg=%s",
		       (long long)x->alert_id, x->schedule, x->target,
		       x->n_tries, log_quote(why, sizeof(why), msg));
		return finish_send(a, x, SEND_ABANDONED, 0, key, msg, err);
	}
	enum send_state st = serr.ambiguous ? SEND_UNKNOWN : SEND_FAILED;
	int64_t next = now + alert_backoff_ms(x->n_tries);
	rep->n_failed++;
	LOG(SC_LOG_WARN, "alert", "event=alert_send_failed alert=%lld "
	       "schedule=%s target=%s state=%s tries=%d code=%d "
	       "http_status=%d msg=%s", (long long)x->alert_id, x->schedule,
	       x->target, store_send_state_name(st), x->n_tries, serr.code,
	       serr.http_status, log_quote(why, sizeof(why), msg));
	return finish_send(a, x, st, next, key, msg, err);
}

/* Sends the due send rows, of alert_id only when it is not 0. */
static int send_due(const struct alert_ctx *a, int64_t alert_id,
		    struct alert_report *rep, struct sc_err *err)
{
	int rc = 0;

	/* One claim at a time: a stop between sends leaves nothing claimed
	 * that it did not send. */
	for (int i = 0; i < SENDS_PER_TICK; i++) {
		struct store_alert_send x;
		size_t n = 0;

		if (a->stop && a->stop(a->ud))
			break;
		memset(&x, 0, sizeof(x));
		rc = store_alert_send_claim_of(a->store, alert_id,
					       ALERT_SEND_LEASE_MS, &x, 1, &n,
					       err);
		if (rc || n == 0)
			break;
		rc = send_one(a, &x, rep, err);
		store_alert_send_dispose(&x);
		if (rc == SC_ELEASE) {
			/* Another sender took it over (we were slower than
			 * the lease): its copy is its own to record. */
			LOG(SC_LOG_WARN, "alert", "event=alert_lease_lost "
			       "msg=\"another sender took the alert over\"");
			rc = 0;
		}
		if (rc)
			break;
	}
	return rc;
}

int alert_tick(const struct alert_ctx *a, struct alert_report *rep,
	       struct sc_err *err)
{
	struct alert_report local;
	int64_t now = sc_clock_now_ms(a->clock ? a->clock
					       : store_clock(a->store));
	int rc;

	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	if ((rc = sweep(a, rep, err)) != 0)
		return rc;
	/* The timing pass: one read for every schedule, only when some
	 * schedule has `sla:` (without one, an old stale alert waits for
	 * an ack). */
	struct store_sla scan = {0}, *sp = NULL;
	if (any_sla(a->config)) {
		scan.max_late = scan.max_running = scan.max_last = ALERT_SLA_MAX;
		scan.late = calloc(ALERT_SLA_MAX, sizeof(*scan.late));
		scan.running = calloc(ALERT_SLA_MAX, sizeof(*scan.running));
		scan.last = calloc(ALERT_SLA_MAX, sizeof(*scan.last));
		if (!scan.late || !scan.running || !scan.last)
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		if (rc == 0)
			rc = sla_scan(a, now, &scan, err);
		if (rc == 0)
			rc = sla_raise(a, &scan, now, rep, err);
		sp = &scan;
	}
	if (rc == 0)
		rc = open_alerts(a, now, sp, rep, err);
	free(scan.late);
	free(scan.running);
	free(scan.last);
	if (rc)
		return rc;
	if ((rc = rounds(a, rep, err)) != 0)
		return rc;
	return send_due(a, 0, rep, err);
}

int alert_send_lost(const struct alert_ctx *a, const struct store_dead_job *d,
		    struct alert_report *rep, struct sc_err *err)
{
	struct alert_report local;
	struct alert_filter f = {.schedule = d->schedule, .open_only = true,
				 .slot_ms = d->slot_ms, .since_ms = INT64_MIN,
				 .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	int rc;

	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	rc = alert_raise_lost(a->store, a->config, d, err);
	if (!rc)
		rc = store_alert_list(a->store, &f, &v, &n, err);
	/* This slot's open alerts only: the lost one just raised (and any
	 * other of the same slot, a breach), staged and sent; the rest is
	 * the alerter's next pass. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		for (int r = v[i].staged_rounds; rc == 0 && r < v[i].rounds;
		     r++)
			rc = stage_round(a, &v[i], r, rep, err);
		if (rc == 0)
			rc = send_due(a, v[i].id, rep, err);
	}
	sc_free(v);
	return rc;
}

/* ---- ack ------------------------------------------------------------------ */

int alert_ack(struct store *s, const char *schedule, int64_t slot_ms,
	      const char *note, const char *by, size_t *n_acked,
	      struct sc_err *err)
{
	struct alert_filter f = {.schedule = schedule, .open_only = true,
				 .slot_ms = slot_ms, .since_ms = INT64_MIN,
				 .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	int64_t now = sc_clock_now_ms(store_clock(s));
	char msg[SC_ERR_MSG_MAX];
	int rc = store_alert_list(s, &f, &v, &n, err);

	*n_acked = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct ledger_row row;
		bool changed = false;

		row_for(&row, &v[i], LEDGER_ACKED, now);
		snprintf(msg, sizeof(msg), "the %s alert is acknowledged%s%s",
			 v[i].reason, note ? ": " : "", note ? note : "");
		row.error_msg = msg;
		row.details_json = details_of(&v[i], note, by);
		rc = store_alert_close(s, v[i].id, ALERT_ACKED, note, NULL, &row,
				       &changed, err);
		free(row.details_json);
		if (rc == 0 && changed) {
			(*n_acked)++;
			LOG(SC_LOG_INFO, "alert", "event=alert_acked "
			       "alert=%lld schedule=%s reason=%s",
			       (long long)v[i].id, schedule, v[i].reason);
		}
	}
	sc_free(v);
	if (rc || *n_acked > 0)
		return rc;
	/* No open alert: a lost or missed row of the slot still counts as
	 * handled once acknowledged. */
	struct ledger_filter lf = {.schedule = schedule, .since_ms = slot_ms,
				   .until_ms = slot_ms + 1,
				   .lost_or_missed = true};
	struct ledger_row *rows = NULL;
	size_t nr = 0;
	if ((rc = store_ledger_query(s, &lf, &rows, &nr, err)) != 0)
		return rc;
	if (nr == 0) {
		store_ledger_rows_free(rows, nr);
		return sc_err_set(err, SC_ENOENT, "no open alert and no lost or "
				  "missed slot of %s at that instant",
				  schedule);
	}
	struct store_alert x;
	memset(&x, 0, sizeof(x));
	snprintf(x.schedule, sizeof(x.schedule), "%s", schedule);
	snprintf(x.reason, sizeof(x.reason), "%s", rows[0].outcome);
	x.slot_ms = x.last_slot_ms = slot_ms;
	x.job_id = rows[0].job_id;
	store_ledger_rows_free(rows, nr);
	struct ledger_row row;
	row_for(&row, &x, LEDGER_ACKED, now);
	snprintf(msg, sizeof(msg), "the %s slot is acknowledged%s%s", x.reason,
		 note ? ": " : "", note ? note : "");
	row.error_msg = msg;
	row.details_json = details_of(&x, note, by);
	rc = store_ledger_append(s, &row, err);
	free(row.details_json);
	if (rc == 0)
		*n_acked = 1;
	return rc;
}
