/*
 * web_api.c - the JSON API under /api/ (web_int.h, docs/api.md).
 *
 * Each endpoint says what a CLI command says, through the same library
 * code: the objects of status and the ledger come from report.h, the
 * lost-slot report from ledger.h, the actions from queue.h (retry,
 * trigger), outbox.h (release), alert.h (ack) and store.h's pauses
 * (pause, resume). This file only reads
 * the request, calls them, and maps their codes to statuses:
 *
 *   400 a malformed body, field or parameter (the message names it);
 *   404 no such path, schedule, job or slot;
 *   409 the state refuses (SC_ESTATE: a job not dead, a slot done, ...);
 *   503 the store does not answer (500 when out of memory).
 *
 * Invariants:
 *   - every answer is JSON made by jansson, with a 4xx/5xx status and an
 *     "error" message on failure;
 *   - no answer carries a secret: schedules and targets are described by
 *     their names and kinds, never by a URL, header or variable's value;
 *     an error message is this file's own words, and names a schedule
 *     only once it was found in the config (so it is one of its names,
 *     never a long or secret value a request sent);
 *   - the config is held (web_cfg_hold) for the whole request and given
 *     back on every path; the store handle is the server thread's own.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert.h"
#include "clock.h"
#include "config.h"
#include "ledger.h"
#include "outbox.h"
#include "prune.h"
#include "queue.h"
#include "release.h"
#include "report.h"
#include "scheduler.h"
#include "store.h"
#include "web_int.h"

/* The last attempts of a schedule in /api/schedules, and how many of its
 * newest rows are read to find them (the rest are alerts, decisions and
 * the like). */
#define RECENT_MAX 12
#define RECENT_READ (4 * RECENT_MAX)

/* `by` of an action: who acted, as the CLI's --by; an ack's note, as
 * its --note. */
#define BY_MAX 64
#define NOTE_MAX 200

/* Ledger rows of one GET /api/ledger. */
#define LEDGER_LIMIT_DEFAULT 200
#define LEDGER_LIMIT_MAX 5000

/* What a request of this file needs: the connection, the server, the
 * config held for it (NULL: none) and now on the daemon's clock. */
/* A store failure's answer: out of memory is the server's (500); any
 * other code means the store did not answer (503). */
static enum MHD_Result store_failed(struct web_call *k, int rc)
{
	if (rc == SC_ENOMEM)
		return web_respond_error(k->c, 500, "out of memory");
	return web_respond_error(k->c, 503, "the store does not answer");
}

static const char *arg(struct web_call *k, const char *name)
{
	return MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, name);
}

/* A time as the CLI takes it (an age such as "7d" before now, or an ISO
 * 8601 instant), or Unix milliseconds: clock_parse_when, so within the
 * years 1-9999 as every command's. False when s is none of them. */
static bool parse_time(const char *s, int64_t now_ms, int64_t *out)
{
	return clock_parse_when(s, now_ms, CLOCK_WHEN_UNIX_MS, out, NULL) == 0;
}

/* A time field of a body: a string parse_time takes, or an integer of
 * Unix milliseconds (read back through parse_time, so bounded alike). */
static bool field_time(const json_t *v, int64_t now_ms, int64_t *out)
{
	char digits[32];

	if (json_is_integer(v)) {
		json_int_t ms = json_integer_value(v);
		if (ms < 0)
			return false;
		snprintf(digits, sizeof(digits), "%lld", (long long)ms);
		return parse_time(digits, now_ms, out);
	}
	return json_is_string(v) && parse_time(json_string_value(v), now_ms,
					       out);
}

/* The schedule of the config named name, or NULL (none, or no config). */
static const struct schedule_spec *schedule_of(struct web_call *k,
					       const char *name)
{
	if (!k->cfg || !name)
		return NULL;
	return config_schedule(k->cfg, name);
}

/* `by` of an action body into out: absent is "web"; a string of 1 to
 * BY_MAX printable characters otherwise (false: malformed). */
static bool field_by(const json_t *o, char out[BY_MAX + 1])
{
	const json_t *v = json_object_get(o, "by");

	if (!v) {
		snprintf(out, BY_MAX + 1, "web");
		return true;
	}
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > BY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (iscntrl((unsigned char)s[i]))
			return false;
	memcpy(out, s, n + 1);
	return true;
}

/* ---- reading -------------------------------------------------------- */

/* Is r the end of an attempt (or a missed or paused slot)? The rest of
 * the ledger (alerts, decisions, acks, late, overrun, ...) says something
 * about a slot but ran nothing. */
static bool is_attempt(const struct ledger_row *r)
{
	static const char *const words[] = {LEDGER_SUCCESS, LEDGER_FAILED,
					    LEDGER_LOST, LEDGER_STALLED,
					    LEDGER_MISSED, LEDGER_PAUSED,
					    LEDGER_REPLACED};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(r->outcome, words[i]) == 0)
			return true;
	return false;
}

/* The periods a schedule's newest rows are looked for in, widening (the
 * last one open). A schedule's rows over a bounded period are one seek
 * of the ledger's day index per day; an open period reads every row the
 * schedule has to find its newest (issue 45: 270 us a schedule, 2.7 s
 * for /api/schedules of 10,000 schedules of 1,000 rows each). */
static const int64_t recent_periods_ms[] = {
	INT64_C(2) * 86400000, INT64_C(14) * 86400000,
	INT64_C(120) * 86400000, 0};

/* A schedule's last attempts (and missed slots), oldest first: what the
 * dashboard's strip shows. A read of its newest rows of the last two
 * days, widened while they hold fewer than RECENT_MAX attempts; a row
 * written late for a slot older than the period (a retry, a catch-up's
 * missed slot) is left out only when the period holds RECENT_MAX
 * attempts newer than it. */
static int recent_json(struct store *s, const char *name, int64_t now_ms,
		       json_t **out, struct sc_err *err)
{
	struct ledger_filter f = {.schedule = name, .until_ms = INT64_MAX,
				  .limit = RECENT_READ, .newest_first = true};
	struct ledger_row *rows = NULL;
	size_t n = 0, first = 0, kept = 0;
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	int rc = 0;

	for (size_t w = 0; w < sizeof(recent_periods_ms) /
			       sizeof(recent_periods_ms[0]); w++) {
		int64_t p = recent_periods_ms[w];
		f.since_ms = p ? now_ms - p : INT64_MIN;
		store_ledger_rows_free(rows, n);
		rows = NULL;
		n = first = kept = 0;
		if ((rc = ledger_read(s, &f, &rows, &n, err)))
			return rc;
		/* Oldest first: keep the last RECENT_MAX attempt rows. */
		for (size_t i = n; i-- > 0 && kept < RECENT_MAX;) {
			if (is_attempt(&rows[i])) {
				first = i;
				kept++;
			}
		}
		if (kept == RECENT_MAX || n == RECENT_READ)
			break;
	}
	json_t *arr = json_array();
	for (size_t i = first; arr && kept && i < n; i++) {
		const struct ledger_row *r = &rows[i];
		if (!is_attempt(r))
			continue;
		json_t *o = json_pack(
			"{s:s, s:s, s:I, s:i, s:s?, s:I}", "outcome",
			r->outcome, "slot", clock_format_utc(r->slot_ms, a),
			"slot_ms", (json_int_t)r->slot_ms, "attempt",
			r->attempt, "finished", r->finished_ms
			? clock_format_utc(r->finished_ms, b) : NULL,
			"job", (json_int_t)r->job_id);
		if (!o || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	store_ledger_rows_free(rows, n);
	if (!arr)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	*out = arr;
	return 0;
}

/* GET /api/schedules (one NULL) and GET /api/schedules/NAME. */
static enum MHD_Result get_schedules(struct web_call *k, const char *one)
{
	struct report_status rs;
	struct sc_err e = {0};
	char now[CLOCK_ISO_MAX];

	if (one && !schedule_of(k, one))
		return web_respond_error(k->c, 404, "no such schedule");
	int rc = report_status_read(k->w->store, k->cfg, one, k->now_ms, &rs,
				    &e);
	if (rc) {
		report_status_dispose(&rs);
		/* Its store errors say "store: " (report.h); the others are
		 * a schedule whose next slot cannot be computed. */
		if (rc != SC_ENOMEM && strncmp(e.msg, "store: ", 7) != 0)
			return web_respond_error(k->c, 500, "a schedule's next "
						 "slot cannot be computed");
		return store_failed(k, rc);
	}
	json_t *arr = json_array(), *root = NULL;
	for (size_t i = 0; arr && rc == 0 && i < rs.n; i++) {
		json_t *o = report_sched_json(&rs.v[i]), *recent = NULL;
		rc = o ? recent_json(k->w->store, rs.v[i].sc->name,
				     k->now_ms, &recent, &e) : SC_ENOMEM;
		if (rc == 0 && json_object_set_new(o, "recent", recent) != 0)
			rc = SC_ENOMEM;
		if (rc == 0 && json_array_append_new(arr, o) != 0)
			rc = SC_ENOMEM;
		else if (rc)
			json_decref(o);
	}
	if (!arr)
		rc = SC_ENOMEM;
	if (rc == 0 && one) {
		root = json_incref(json_array_get(arr, 0));
	} else if (rc == 0) {
		root = json_pack("{s:s, s:I, s:s, s:O, s:o}",
				 "now", clock_format_utc(k->now_ms, now),
				 "now_ms", (json_int_t)k->now_ms,
				 "store", store_backend_name(k->w->store),
				 "schedules", arr,
				 "other_jobs", report_counts_json(&rs.other));
	}
	json_decref(arr);
	report_status_dispose(&rs);
	if (rc)
		return store_failed(k, rc);
	return web_respond(k->c, 200, root);
}

/* The period of /api/lost and /api/ledger from the query: schedule (it
 * must be in the config), since, until. Sends the 400/404 and returns
 * false when one is wrong. */
static bool query_period(struct web_call *k, struct ledger_filter *f,
			 const char *since_dflt, enum MHD_Result *sent)
{
	const char *name = arg(k, "schedule");
	const char *since = arg(k, "since"), *until = arg(k, "until");

	f->since_ms = INT64_MIN;
	f->until_ms = INT64_MAX;
	if (name) {
		const struct schedule_spec *sc = schedule_of(k, name);
		if (!sc) {
			*sent = web_respond_error(k->c, 404, "no such schedule");
			return false;
		}
		f->schedule = sc->name;
	}
	if (!since)
		since = since_dflt;
	if (since && !parse_time(since, k->now_ms, &f->since_ms)) {
		*sent = web_respond_error(k->c, 400, "since: not an ISO 8601 "
					  "instant, Unix milliseconds or an "
					  "age such as 7d");
		return false;
	}
	if (until && !parse_time(until, k->now_ms, &f->until_ms)) {
		*sent = web_respond_error(k->c, 400, "until: not an ISO 8601 "
					  "instant, Unix milliseconds or an "
					  "age such as 7d");
		return false;
	}
	return true;
}

/* GET /api/lost: `ledger --lost --json`, the same report. */
enum MHD_Result web_api_lost(struct web_call *k, const char *rest,
			  json_t *body)
{
	struct ledger_filter f = {0};
	struct ledger_report rep = {0};
	struct sc_err e = {0};
	enum MHD_Result sent;

	if (!query_period(k, &f, "7d", &sent))
		return sent;
	int rc = ledger_lost_report(k->w->store, &f, &rep, &e);
	json_t *root = rc ? NULL : report_ledger_json(rep.rows,
						      rep.recovered_ms, rep.n,
						      &rep);
	ledger_report_dispose(&rep);
	if (rc)
		return store_failed(k, rc);
	if (!root)
		return store_failed(k, SC_ENOMEM);
	return web_respond(k->c, 200, root);
}

/* GET /api/nodes (issue 43): the daemons live in the store and how many
 * records are of daemons gone, each marked same_config against the
 * config of this daemon (report_nodes_json, as `status --json`). */
enum MHD_Result web_api_nodes(struct web_call *k, const char *rest,
			  json_t *body)
{
	struct store_node *v = NULL;
	size_t n = 0;
	char digest[STORE_NODE_DIGEST_MAX] = "";
	int rc = store_nodes(k->w->store, &v, &n, NULL);

	if (rc)
		return store_failed(k, rc);
	if (k->cfg)
		config_digest(k->cfg, digest);
	json_t *root = report_nodes_json(v, n,
					 report_clock_tolerance_ms(k->cfg),
					 k->now_ms, k->cfg ? digest : NULL);
	free(v);
	if (!root)
		return store_failed(k, SC_ENOMEM);
	return web_respond(k->c, 200, root);
}

/* GET /api/ledger: `ledger --json` with its filters; the newest
 * `limit` rows of the period, oldest first. */
enum MHD_Result web_api_ledger(struct web_call *k, const char *rest,
			  json_t *body)
{
	struct ledger_filter f = {0};
	struct ledger_row *rows = NULL;
	struct sc_err e = {0};
	size_t n = 0;
	enum MHD_Result sent;
	const char *outcome = arg(k, "outcome"), *limit = arg(k, "limit");

	if (!query_period(k, &f, NULL, &sent))
		return sent;
	if (outcome && !ledger_outcome_known(outcome))
		return web_respond_error(k->c, 400, "outcome: not one of the "
					 "ledger's outcomes");
	f.outcome = outcome;
	f.limit = LEDGER_LIMIT_DEFAULT;
	if (limit) {
		size_t len = strlen(limit);
		long v = len && len < 5 && strspn(limit, "0123456789") == len
			? strtol(limit, NULL, 10) : 0;
		if (v < 1 || v > LEDGER_LIMIT_MAX)
			return web_respond_error(k->c, 400, "limit: a number "
						 "from 1 to 5000");
		f.limit = (int)v;
	}
	f.newest_first = true;
	int rc = ledger_read(k->w->store, &f, &rows, &n, &e);
	json_t *root = rc ? NULL : report_ledger_json(rows, NULL, n, NULL);
	store_ledger_rows_free(rows, n);
	if (rc)
		return store_failed(k, rc);
	if (!root)
		return store_failed(k, SC_ENOMEM);
	return web_respond(k->c, 200, root);
}

/* The "job" of a slot's answer: null when the slot has none. */
static int slot_job_json(struct web_call *k, const char *name, int64_t slot_ms,
			 struct store_job *job, bool *has, json_t **out)
{
	char t[CLOCK_ISO_MAX];
	struct sc_err e = {0};
	int rc = store_job_find(k->w->store, name, slot_ms, job, &e);

	*has = rc == 0;
	if (rc == SC_ENOENT) {
		*out = json_null();
		return 0;
	}
	if (rc)
		return rc;
	*out = json_pack("{s:I, s:s, s:i, s:s, s:I, s:b}", "id",
			 (json_int_t)job->id, "state",
			 queue_state_name(job->state), "attempts", job->attempts,
			 "run_at", clock_format_utc(job->run_at_ms, t),
			 "run_at_ms", (json_int_t)job->run_at_ms, "manual",
			 job->manual);
	return *out ? 0 : SC_ENOMEM;
}

/* The send state of each of sc's targets for the slot: names and kinds
 * only (a target's URL, path or command is never shown). */
static int slot_sends_json(struct web_call *k, const struct schedule_spec *sc,
			   int64_t slot_ms, json_t **out)
{
	json_t *arr = json_array();
	int rc = arr ? 0 : SC_ENOMEM;

	for (size_t i = 0; rc == 0 && i < sc->n_targets; i++) {
		struct outbox_entry oe = {0};
		struct sc_err e = {0};
		const struct target_spec *t = config_target(k->cfg,
							    sc->targets[i]);
		rc = store_outbox_get(k->w->store, sc->name, slot_ms,
				      sc->targets[i], &oe, &e);
		bool none = rc == SC_ENOENT;
		if (none)
			rc = 0;
		json_t *o = rc ? NULL : json_pack(
			"{s:s, s:s, s:s, s:i}", "target", sc->targets[i],
			"kind", t ? report_target_kind_name((int)t->kind)
				  : "unknown",
			"state", store_send_state_name(none ? SEND_NONE
							     : oe.state),
			"tries", none ? 0 : oe.n_tries);
		store_outbox_entry_dispose(&oe);
		if (rc == 0 && (!o || json_array_append_new(arr, o) != 0))
			rc = SC_ENOMEM;
	}
	if (rc) {
		json_decref(arr);
		return rc;
	}
	*out = arr;
	return 0;
}

/* GET /api/slots/NAME/SLOT: the slot's job, ledger rows, explain's
 * timeline, send states and marker. */
static enum MHD_Result get_slot(struct web_call *k, const char *name,
				const char *slot)
{
	const struct schedule_spec *sc = schedule_of(k, name);
	struct ledger_filter f = {0};
	struct ledger_row *rows = NULL;
	struct sc_retry_timeline tl;
	struct store_job job;
	struct sc_err e = {0};
	char t[CLOCK_ISO_MAX];
	int64_t slot_ms = 0;
	size_t n = 0;
	bool has_job = false, marked = false;
	json_t *jjob = NULL, *attempts = NULL, *sends = NULL, *timeline;

	if (!sc)
		return web_respond_error(k->c, 404, "no such schedule");
	if (!parse_time(slot, k->now_ms, &slot_ms))
		return web_respond_error(k->c, 400, "slot: not an ISO 8601 "
					 "instant or Unix milliseconds");
	f.schedule = sc->name;
	f.since_ms = slot_ms;
	f.until_ms = slot_ms + 1;
	int rc = slot_job_json(k, sc->name, slot_ms, &job, &has_job, &jjob);
	if (rc == 0)
		rc = ledger_read(k->w->store, &f, &rows, &n, &e);
	if (rc == 0) {
		attempts = report_ledger_json(rows, NULL, n, NULL);
		rc = attempts ? 0 : SC_ENOMEM;
	}
	if (rc == 0)
		rc = slot_sends_json(k, sc, slot_ms, &sends);
	if (rc == 0)
		rc = store_slot_is_marked(k->w->store, sc->name, slot_ms,
					  &marked, &e);
	store_ledger_rows_free(rows, n);
	/* explain's plan: the schedule's policy from the slot's real start
	 * (jitter), clipped to its deadline (a job's own budget grows when
	 * it is retried; the plan does not). */
	if (scheduler_timeline(sc, slot_ms, &tl, NULL, NULL) != 0)
		tl.n_attempts = 0;
	timeline = report_timeline_json(&tl, sc->zone);
	if (rc == 0 && !timeline)
		rc = SC_ENOMEM;
	json_t *root = rc ? NULL : json_pack(
		"{s:s, s:s, s:I, s:o, s:O, s:o, s:o, s:b}", "schedule",
		sc->name, "slot", clock_format_utc(slot_ms, t), "slot_ms",
		(json_int_t)slot_ms, "job", jjob, "attempts",
		json_object_get(attempts, "rows"), "timeline", timeline,
		"sends", sends, "marker", marked);
	if (rc) {
		json_decref(jjob);
		json_decref(sends);
		json_decref(timeline);
	}
	json_decref(attempts);
	if (rc)
		return store_failed(k, rc);
	if (!root)
		return store_failed(k, SC_ENOMEM);
	return web_respond(k->c, 200, root);
}

/* ---- acting --------------------------------------------------------- */

/* POST /api/retry {"job": N}: `surecron retry N`. */
enum MHD_Result web_api_retry(struct web_call *k, const char *rest,
			  json_t *o)
{
	const json_t *v = json_object_get(o, "job");
	char by[BY_MAX + 1];
	struct store_job job;
	struct sc_err e = {0};

	if (!json_is_integer(v) || json_integer_value(v) <= 0)
		return web_respond_error(k->c, 400, "job: a job id (a positive "
					 "integer) is needed");
	if (!field_by(o, by))
		return web_respond_error(k->c, 400, "by: a name of 1 to 64 "
					 "printable characters");
	int64_t id = (int64_t)json_integer_value(v);
	int rc = store_job_get(k->w->store, id, &job, &e);
	if (rc == SC_ENOENT)
		return web_respond_error(k->c, 404, "no such job");
	if (rc)
		return store_failed(k, rc);
	if (job.state != JOB_DEAD)
		return web_respond_error(k->c, 409, "the job is not dead: only "
					 "a dead job can be retried");
	/* The budget: the schedule's policy as the config has it now (a
	 * schedule gone from the config: as many as the job had), as the
	 * CLI does. */
	const struct schedule_spec *sc = schedule_of(k, job.schedule);
	int budget = sc ? spec_policy(sc)->attempts : 0;
	rc = queue_retry_dead(k->w->store, id, budget, &e);
	if (rc == SC_ENOENT)
		return web_respond_error(k->c, 404, "no such job");
	if (rc == SC_ESTATE)
		return web_respond_error(k->c, 409, "the job is not dead: only "
					 "a dead job can be retried");
	if (rc)
		return store_failed(k, rc);
	if (budget <= 0)
		budget = job.policy.attempts;
	return web_respond(k->c, 200, json_pack("{s:I, s:s, s:i}", "job",
						(json_int_t)id, "state",
						"ready", "attempts", budget));
}

/* The schedule and slot fields of an action body. slot may be absent
 * when opt (then *slot_ms is untouched). Sends the 400/404 and returns
 * NULL when one is wrong. */
static const struct schedule_spec *field_slot(struct web_call *k, const json_t *o,
					      bool opt, int64_t *slot_ms,
					      enum MHD_Result *sent)
{
	const char *name = json_string_value(json_object_get(o, "schedule"));
	const json_t *slot = json_object_get(o, "slot");

	if (!name) {
		*sent = web_respond_error(k->c, 400, "schedule: a schedule "
					  "name is needed");
		return NULL;
	}
	const struct schedule_spec *sc = schedule_of(k, name);
	if (!sc) {
		*sent = web_respond_error(k->c, 404, "no such schedule");
		return NULL;
	}
	if ((!slot && !opt) ||
	    (slot && !field_time(slot, k->now_ms, slot_ms))) {
		*sent = web_respond_error(k->c, 400, "slot: an ISO 8601 instant "
					  "or Unix milliseconds is needed");
		return NULL;
	}
	return sc;
}

/* POST /api/trigger {"schedule", "slot"?}: `surecron trigger [--slot]`. */
enum MHD_Result web_api_trigger(struct web_call *k, const char *rest,
			  json_t *o)
{
	/* A manual slot on a whole second, so it prints and parses back. */
	int64_t slot_ms = k->now_ms - k->now_ms % 1000, job_id = 0;
	bool created = false;
	char by[BY_MAX + 1], t[CLOCK_ISO_MAX];
	struct sc_err e = {0};
	struct store_job job;
	enum MHD_Result sent;
	const struct schedule_spec *sc = field_slot(k, o, true, &slot_ms,
						    &sent);

	if (!sc)
		return sent;
	if (!field_by(o, by))
		return web_respond_error(k->c, 400, "by: a name of 1 to 64 "
					 "printable characters");
	/* A slot past retention.jobs may have lost its job row and send
	 * guards to prune: running it could deliver it twice. */
	if (slot_ms < prune_trigger_floor(k->cfg, k->now_ms))
		return web_respond_error(k->c, 409, "the slot is older than "
					 "the retention: its record may be "
					 "pruned");
	int rc = queue_trigger(k->w->store, sc->name, slot_ms, spec_policy(sc),
			       &job_id, &created, &e);
	if (rc == SC_ESTATE)
		return web_respond_error(k->c, 409, "the slot is done: running "
					 "it again would deliver it twice");
	if (rc)
		return store_failed(k, rc);
	const char *state = "ready";
	if (store_job_get(k->w->store, job_id, &job, NULL) == 0)
		state = queue_state_name(job.state);
	return web_respond(k->c, 200, json_pack(
		"{s:I, s:b, s:s, s:s, s:s, s:I}", "job", (json_int_t)job_id,
		"created", created, "state", state, "schedule", sc->name,
		"slot", clock_format_utc(slot_ms, t), "slot_ms",
		(json_int_t)slot_ms));
}

/* POST /api/release {"schedule", "slot", "target", "decision"}:
 * `surecron release --arrived|--resend` (release.h). */
enum MHD_Result web_api_release(struct web_call *k, const char *rest,
			  json_t *o)
{
	int64_t slot_ms = 0;
	char by[BY_MAX + 1];
	struct release_result rr;
	struct sc_err e = {0};
	enum MHD_Result sent;
	const struct schedule_spec *sc = field_slot(k, o, false, &slot_ms,
						    &sent);
	const char *target = json_string_value(json_object_get(o, "target"));
	const char *d = json_string_value(json_object_get(o, "decision"));

	if (!sc)
		return sent;
	if (!target)
		return web_respond_error(k->c, 400, "target: a target name is "
					 "needed");
	if (!d || (strcmp(d, "arrived") != 0 && strcmp(d, "resend") != 0))
		return web_respond_error(k->c, 400, "decision: \"arrived\" or "
					 "\"resend\" is needed");
	if (!field_by(o, by))
		return web_respond_error(k->c, 400, "by: a name of 1 to 64 "
					 "printable characters");
	/* One of the schedule's targets: its name, from the config, is
	 * what the answer carries. */
	const char *tname = NULL;
	for (size_t i = 0; i < sc->n_targets && !tname; i++)
		if (strcmp(sc->targets[i], target) == 0)
			tname = sc->targets[i];
	if (!tname)
		return web_respond_error(k->c, 404, "no such target for the "
					 "schedule");
	bool arrived = d[0] == 'a';
	int rc = release_decide(k->w->store, sc, slot_ms, tname, arrived, by,
				"http api", k->now_ms, &rr, &e);
	if (rc && !rr.decided && rc == SC_ENOENT)
		return web_respond_error(k->c, 404, "no such send");
	/* The store's words say what the send is now ("sent", "failed,
	 * to be sent", ...): no secret can be in them. */
	if (rc && !rr.decided && rc == SC_ESTATE)
		return web_respond_error(k->c, 409, e.msg[0] ? e.msg
					 : "the send is not held");
	if (rc && rr.decided && !rr.recorded)
		return web_respond_error(k->c, 503, "the decision took effect "
					 "but could not be written to the "
					 "ledger");
	if (rc && rr.recorded)
		return web_respond_error(k->c, 503, "the decision is recorded "
					 "but the job could not be made ready");
	if (rc)
		return store_failed(k, rc);
	return web_respond(k->c, 200, json_pack(
		"{s:s, s:s, s:b, s:o}", "target", tname, "state",
		arrived ? "sent" : "failed", "job_revived", rr.job_revived,
		"job", rr.job_id ? json_integer(rr.job_id) : json_null()));
}

/* POST /api/ack {"schedule", "slot", "note"?}: `surecron ack`. */
enum MHD_Result web_api_ack(struct web_call *k, const char *rest,
			  json_t *o)
{
	int64_t slot_ms = 0;
	char by[BY_MAX + 1];
	size_t n = 0;
	struct sc_err e = {0};
	enum MHD_Result sent;
	const struct schedule_spec *sc = field_slot(k, o, false, &slot_ms,
						    &sent);
	const json_t *jn = json_object_get(o, "note");

	if (!sc)
		return sent;
	if (jn && !json_is_null(jn) && (!json_is_string(jn) ||
					json_string_length(jn) > NOTE_MAX))
		return web_respond_error(k->c, 400, "note: a text of at most "
					 "200 bytes");
	if (!field_by(o, by))
		return web_respond_error(k->c, 400, "by: a name of 1 to 64 "
					 "printable characters");
	int rc = alert_ack(k->w->store, sc->name, slot_ms,
			   json_string_value(jn), by, &n, &e);
	if (rc == SC_ENOENT)
		return web_respond_error(k->c, 409, "nothing to acknowledge: "
					 "no open alert and no lost or missed "
					 "row for the slot");
	if (rc)
		return store_failed(k, rc);
	return web_respond(k->c, 200, json_pack("{s:I}", "closed",
						(json_int_t)n));
}

/* POST /api/pause {"schedule", "for" | "until", "note"?, "by"?}:
 * `surecron pause` (store_pause_set). "for" is a duration ("2h", "3d"),
 * "until" an ISO 8601 instant or Unix milliseconds; exactly one, the
 * expiry in the future and at most 30 days away. */
enum MHD_Result web_api_pause(struct web_call *k, const char *rest,
			  json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "schedule"));
	const json_t *jf = json_object_get(o, "for"),
		     *ju = json_object_get(o, "until"),
		     *jn = json_object_get(o, "note");
	struct store_pause p = {.from_ms = k->now_ms};
	char t[CLOCK_ISO_MAX], t2[CLOCK_ISO_MAX];
	int64_t ms = 0;

	if (!name)
		return web_respond_error(k->c, 400, "schedule: a schedule "
					 "name is needed");
	const struct schedule_spec *sc = schedule_of(k, name);
	if (!sc)
		return web_respond_error(k->c, 404, "no such schedule");
	if (!jf == !ju)
		return web_respond_error(k->c, 400, "for or until: exactly one "
					 "is needed (an expiry is required)");
	if (jf) {
		const char *d = json_string_value(jf);
		if (!d || clock_parse_duration(d, &ms, NULL) != 0 || ms <= 0)
			return web_respond_error(k->c, 400, "for: a duration "
						 "such as \"2h\" or \"3d\"");
		p.until_ms = k->now_ms + ms;
	} else if (!field_time(ju, k->now_ms, &p.until_ms) ||
		   p.until_ms <= k->now_ms) {
		return web_respond_error(k->c, 400, "until: an ISO 8601 "
					 "instant or Unix milliseconds in the "
					 "future");
	}
	if (p.until_ms - k->now_ms > STORE_PAUSE_MAX_MS)
		return web_respond_error(k->c, 400, "a pause lasts at most 30 "
					 "days");
	if (jn && !json_is_null(jn) && (!json_is_string(jn) ||
					json_string_length(jn) > NOTE_MAX))
		return web_respond_error(k->c, 400, "note: a text of at most "
					 "200 bytes");
	if (!field_by(o, p.by))
		return web_respond_error(k->c, 400, "by: a name of 1 to 64 "
					 "printable characters");
	snprintf(p.schedule, sizeof(p.schedule), "%s", sc->name);
	snprintf(p.note, sizeof(p.note), "%s",
		 json_is_string(jn) ? json_string_value(jn) : "");
	int rc = store_pause_set(k->w->store, &p, NULL);
	if (rc)
		return store_failed(k, rc);
	return web_respond(k->c, 200, json_pack(
		"{s:s, s:s, s:o, s:s, s:I, s:s, s:I}", "schedule", sc->name,
		"by", p.by, "note", report_json_text(p.note),
		"since", clock_format_utc(p.from_ms, t), "since_ms",
		(json_int_t)p.from_ms, "until",
		clock_format_utc(p.until_ms, t2), "until_ms",
		(json_int_t)p.until_ms));
}

/* POST /api/resume {"schedule"}: `surecron resume` (store_pause_end);
 * 409 when the schedule is not paused. */
enum MHD_Result web_api_resume(struct web_call *k, const char *rest,
			  json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "schedule"));
	bool ended = false;

	if (!name)
		return web_respond_error(k->c, 400, "schedule: a schedule "
					 "name is needed");
	const struct schedule_spec *sc = schedule_of(k, name);
	if (!sc)
		return web_respond_error(k->c, 404, "no such schedule");
	int rc = store_pause_end(k->w->store, sc->name, k->now_ms, &ended,
				 NULL);
	if (rc)
		return store_failed(k, rc);
	if (!ended)
		return web_respond_error(k->c, 409, "the schedule is not "
					 "paused");
	return web_respond(k->c, 200, json_pack("{s:s, s:b}", "schedule",
						sc->name, "resumed", 1));
}

/* ---- the routes' entries (web_route.c's table) ------------------- */

enum MHD_Result web_api_schedules(struct web_call *k, const char *rest,
				  json_t *body)
{
	return get_schedules(k, NULL);
}

/* GET /api/schedules/NAME: rest is NAME (no '/'). */
enum MHD_Result web_api_schedule(struct web_call *k, const char *rest,
				 json_t *body)
{
	if (!*rest || strchr(rest, '/'))
		return web_respond_error(k->c, 404, "no such schedule");
	return get_schedules(k, rest);
}

/* GET /api/slots/NAME/SLOT: a schedule name has no '/'; the slot is the
 * rest. */
enum MHD_Result web_api_slot(struct web_call *k, const char *rest,
			     json_t *body)
{
	char name[STORE_NAME_MAX];
	const char *slash = strchr(rest, '/');

	if (!slash || slash == rest || (size_t)(slash - rest) >= sizeof(name)
	    || !slash[1])
		return web_respond_error(k->c, 404, "no such slot path: "
					 "/api/slots/NAME/SLOT");
	memcpy(name, rest, (size_t)(slash - rest));
	name[slash - rest] = '\0';
	return get_slot(k, name, slash + 1);
}
