/*
 * report.c - the JSON objects of status and the ledger (report.h), shared
 * by the CLI's --json output and the HTTP API.
 *
 * Invariants:
 *   - the CLI's output is these objects, key for key in this order
 *     (tests/integ/test_cli_*.c compare it): a change here is a change of
 *     `surecron status --json` and `ledger --json` too;
 *   - report_status_read reads the store a fixed number of times whatever
 *     the number of schedules (summaries, open alerts, pauses; nothing
 *     per schedule), as `status` always did (issue 15);
 *   - text from the store or a task goes through report_json_text, so a
 *     message that is not UTF-8 is cleaned, never dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "config.h"
#include "report.h"
#include "text.h"

const char *report_format_local(int64_t ms, const struct sc_zone *z,
				char out[REPORT_TIME_MAX])
{
	int32_t off = sc_zone_offset_s(z, ms);
	int64_t secs = ms / 1000 - (ms % 1000 < 0) + off;
	int64_t days = secs / 86400 - (secs % 86400 < 0);
	int sod = (int)(secs - days * 86400);
	int64_t y;
	int m, d, aoff = off < 0 ? -off : off;

	clock_civil_from_days(days, &y, &m, &d);
	snprintf(out, REPORT_TIME_MAX,
		 "%04lld-%02d-%02dT%02d:%02d:%02d%c%02d:%02d",
		 (long long)y, m, d, sod / 3600, sod / 60 % 60, sod % 60,
		 off < 0 ? '-' : '+', aoff / 3600, aoff / 60 % 60);
	return out;
}

json_t *report_json_text(const char *s)
{
	if (!s)
		return NULL;
	json_t *j = json_string(s);
	if (!j) {
		struct buf b;
		buf_init(&b, strlen(s) * 4 + 16);
		if (text_clean_buf(&b, s, strlen(s), 0) == 0)
			j = json_string(buf_str(&b));
		buf_dispose(&b);
	}
	return j;
}

int report_sched_info(const struct schedule_spec *s, int64_t from_ms,
		      struct report_sched_info *out, struct sc_err *err)
{
	/* Resolved by config_parse (spec.h); only the reason is worded here. */
	memset(out, 0, sizeof(*out));
	out->zone = s->zone;
	out->cron = *s->expr;
	out->cls = s->cls;
	out->policy = *spec_policy(s);
	sc_cron_class(&out->cron, out->reason, sizeof(out->reason));
	out->policy_from_config = s->has_retry;
	return sc_cron_next(&out->cron, out->zone, from_ms, &out->next_ms, err);
}

/* Open alerts by schedule name, then id: each schedule's are a slice. */
static int cmp_alert(const void *a, const void *b)
{
	const struct store_alert *x = a, *y = b;
	int c = strcmp(x->schedule, y->schedule);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int cmp_summary(const void *key, const void *elt)
{
	return strcmp(key, ((const struct store_sched_summary *)elt)->schedule);
}

/* Jobs of the schedules the store knows and the config does not: the
 * summaries no schedule of the config took (used[i] false). */
static struct store_counts others(const struct store_sched_summary *sum,
				  const bool *used, size_t n)
{
	struct store_counts o = {0};

	for (size_t i = 0; i < n; i++) {
		if (used[i])
			continue;
		o.ready_due += sum[i].counts.ready_due;
		o.delayed += sum[i].counts.delayed;
		o.active += sum[i].counts.active;
		o.done += sum[i].counts.done;
		o.dead += sum[i].counts.dead;
	}
	return o;
}

/* Fills each entry of r->v from the summaries and the (sorted) alerts. */
static int group(struct report_status *r)
{
	bool *used = calloc(r->n_sum ? r->n_sum : 1, sizeof(*used));

	if (!used)
		return SC_ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		struct report_sched *x = &r->v[i];
		/* No summaries: no array to search (bsearch takes none). */
		const struct store_sched_summary *m =
			r->n_sum ? bsearch(x->sc->name, r->sum, r->n_sum,
					   sizeof(*r->sum), cmp_summary)
				 : NULL;
		if (m) {
			used[m - r->sum] = true;
			x->counts = m->counts;
			x->has_last = m->has_last;
			x->last = m->has_last ? &m->last : NULL;
		}
		/* Its open alerts: the slice of the sorted list. */
		size_t lo = 0, hi = r->n_al;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (strcmp(r->al[mid].schedule, x->sc->name) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* No open alert at all: r->al is NULL, and NULL + 0 is
		 * undefined behaviour in C (UBSan aborts the daemon on it),
		 * so the slice is then NULL, of length 0. */
		x->alerts = r->al ? r->al + lo : NULL;
		while (lo + x->n_alerts < r->n_al &&
		       strcmp(r->al[lo + x->n_alerts].schedule,
			      x->sc->name) == 0)
			x->n_alerts++;
	}
	r->other = others(r->sum, used, r->n_sum);
	free(used);
	return 0;
}

/* The store's message, prefixed "store: ". */
static int store_failed(int rc, struct sc_err *err)
{
	char msg[SC_ERR_MSG_MAX];

	snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
	sc_err_clear(err);
	return sc_err_set(err, rc, "store: %s", msg);
}

int report_status_fetch(struct store *s, const char *one,
			struct report_status *out, struct sc_err *err)
{
	struct alert_filter af = {.schedule = one, .open_only = true,
				  .slot_ms = INT64_MIN, .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = store_sched_summaries(s, one, &out->sum, &out->n_sum, err)) ||
	    (rc = store_alert_list(s, &af, &out->al, &out->n_al, err)) ||
	    (rc = store_pause_all(s, &out->pz, &out->n_pz, err)))
		return store_failed(rc, err);
	return 0;
}

int report_status_read(struct store *s, const struct config *cfg,
		       const char *one, int64_t now_ms,
		       struct report_status *out, struct sc_err *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (one && !config_schedule(cfg, one))
		return sc_err_set(err, SC_ENOENT, "no schedule '%s'", one);
	if ((rc = report_status_fetch(s, one, out, err)))
		return rc;
	return report_status_build(cfg, one, now_ms, out, err);
}

int report_status_build(const struct config *cfg, const char *one,
			int64_t now_ms, struct report_status *out,
			struct sc_err *err)
{
	const struct schedule_spec *only = one ? config_schedule(cfg, one)
					       : NULL;
	int rc;

	if (one && !only)
		return sc_err_set(err, SC_ENOENT, "no schedule '%s'", one);
	out->n = only ? 1 : cfg->n_schedules;
	out->v = calloc(out->n ? out->n : 1, sizeof(*out->v));
	if (!out->v)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	for (size_t i = 0; i < out->n; i++) {
		out->v[i].sc = only ? only : &cfg->schedules[i];
		rc = report_sched_info(out->v[i].sc, now_ms, &out->v[i].info,
				       err);
		if (rc) {
			/* The first error wins, with the schedule named. */
			char msg[SC_ERR_MSG_MAX];
			snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
			sc_err_clear(err);
			return sc_err_set(err, rc, "schedule %s: %s",
					  out->v[i].sc->name, msg);
		}
	}
	if (out->n_al > 1)
		qsort(out->al, out->n_al, sizeof(*out->al), cmp_alert);
	if (group(out) != 0)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	/* The running pauses: few rows (one per schedule ever paused), each
	 * matched by name (O(schedules x pauses), both small in practice). */
	for (size_t k = 0; k < out->n_pz; k++) {
		const struct store_pause *pz = &out->pz[k];
		if (pz->from_ms > now_ms || pz->until_ms <= now_ms)
			continue;
		for (size_t i = 0; i < out->n; i++)
			if (strcmp(out->v[i].sc->name, pz->schedule) == 0)
				out->v[i].pause = pz;
	}
	return 0;
}

void report_status_dispose(struct report_status *r)
{
	free(r->v);
	store_sched_summaries_free(r->sum, r->n_sum);
	sc_free(r->al);
	free(r->pz);
	memset(r, 0, sizeof(*r));
}

static json_t *alerts_json(const struct report_sched *x)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX], c[CLOCK_ISO_MAX];
	json_t *arr = json_array();

	for (size_t k = 0; arr && k < x->n_alerts; k++) {
		const struct store_alert *al = &x->alerts[k];
		json_array_append_new(arr, json_pack(
			"{s:I, s:s, s:s, s:s, s:I, s:s, s:i, s:s}",
			"id", (json_int_t)al->id, "reason", al->reason,
			"slot", clock_format_utc(al->slot_ms, a),
			"last_slot", clock_format_utc(al->last_slot_ms, b),
			"slots", (json_int_t)al->n_slots,
			"raised", clock_format_utc(al->created_ms, c),
			"messages", al->rounds, "error", al->error_msg));
	}
	return arr;
}

json_t *report_counts_json(const struct store_counts *c)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}",
			 "waiting", (json_int_t)c->ready_due,
			 "delayed", (json_int_t)c->delayed,
			 "running", (json_int_t)c->active,
			 "dead", (json_int_t)c->dead,
			 "done", (json_int_t)c->done);
}

json_t *report_sched_json(const struct report_sched *x)
{
	char t[REPORT_TIME_MAX];
	const struct schedule_spec *sc = x->sc;
	json_t *o = json_object(), *last = json_null();

	if (!o)
		return NULL;
	if (x->has_last) {
		char u[CLOCK_ISO_MAX];
		last = json_pack("{s:s, s:s, s:I, s:i, s:s*, s:o*}",
				 "outcome", x->last->outcome, "slot",
				 clock_format_utc(x->last->slot_ms, u),
				 "slot_ms", (json_int_t)x->last->slot_ms,
				 "attempt", x->last->attempt,
				 "error_class", x->last->error_class[0]
				 ? x->last->error_class : NULL,
				 "error",
				 report_json_text(x->last->error_msg));
	}
	json_object_set_new(o, "name", json_string(sc->name));
	json_object_set_new(o, "cron", json_string(sc->cron));
	json_object_set_new(o, "cron_config", spec_cron_config(sc)
			    ? json_string(spec_cron_config(sc)) : json_null());
	json_object_set_new(o, "override_var", spec_x(sc)->override_var
			    ? json_string(spec_x(sc)->override_var) : json_null());
	json_object_set_new(o, "zone", json_string(sc_zone_name(
					       x->info.zone)));
	json_object_set_new(o, "next", json_string(report_format_local(
		x->info.next_ms, x->info.zone, t)));
	json_object_set_new(o, "next_ms", json_integer(x->info.next_ms));
	json_object_set_new(o, "class", json_string(sc_freq_class_name(
						x->info.cls)));
	json_object_set_new(o, "class_reason", json_string(x->info.reason));
	json_object_set_new(o, "policy", json_pack(
		"{s:i, s:s, s:I, s:s}", "attempts",
		x->info.policy.attempts, "backoff",
		x->info.policy.backoff == SC_BACKOFF_FIXED
			? "fixed" : "exponential",
		"delay_ms", (json_int_t)x->info.policy.delay_ms,
		"source", x->info.policy_from_config ? "config" : "class"));
	json_object_set_new(o, "last", last ? last : json_null());
	json_object_set_new(o, "jobs", report_counts_json(&x->counts));
	json_object_set_new(o, "open_alerts", alerts_json(x));
	if (sc->disabled)
		json_object_set_new(o, "disabled", json_true());
	if (x->pause) {
		char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
		json_object_set_new(o, "paused", json_pack(
			"{s:o, s:o, s:s, s:I, s:s, s:I}",
			"by", report_json_text(x->pause->by),
			"note", report_json_text(x->pause->note),
			"since", clock_format_utc(x->pause->from_ms, a),
			"since_ms", (json_int_t)x->pause->from_ms,
			"until", clock_format_utc(x->pause->until_ms, b),
			"until_ms", (json_int_t)x->pause->until_ms));
	}
	return o;
}

json_t *report_ledger_row_json(const struct ledger_row *r, int64_t rec_ms,
			       int64_t ack_ms)
{
	char rc_s[CLOCK_ISO_MAX], ack_s[CLOCK_ISO_MAX];
	char s[CLOCK_ISO_MAX], a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	json_t *details = NULL;

	if (r->details_json)
		details = json_loads(r->details_json, 0, NULL);
	if (r->details_json && !details)
		details = json_string(r->details_json);
	return json_pack("{s:I, s:s, s:s, s:I, s:I, s:i, s:s?, s:s?, s:s, "
			 "s:s?, s:o?, s:I, s:o?, s:s?, s:s?}",
			 "id", (json_int_t)r->id, "schedule", r->schedule,
			 "slot", clock_format_utc(r->slot_ms, s),
			 "slot_ms", (json_int_t)r->slot_ms,
			 "job", (json_int_t)r->job_id, "attempt", r->attempt,
			 "started", r->started_ms
			 ? clock_format_utc(r->started_ms, a) : NULL,
			 "finished", r->finished_ms
			 ? clock_format_utc(r->finished_ms, b) : NULL,
			 "outcome", r->outcome,
			 "error_class", r->error_class[0] ? r->error_class
							  : NULL,
			 "error", report_json_text(r->error_msg),
			 "retry_hint_ms", (json_int_t)r->retry_hint_ms,
			 "details", details,
			 "recovered_at", rec_ms
			 ? clock_format_utc(rec_ms, rc_s) : NULL,
			 "acked_at", ack_ms && !rec_ms
			 ? clock_format_utc(ack_ms, ack_s) : NULL);
}

json_t *report_ledger_json(const struct ledger_row *rows, const int64_t *rec,
			   size_t n, const struct ledger_report *lost)
{
	json_t *root = json_object(), *arr = json_array();

	if (!root || !arr)
		goto fail;
	if (lost) {
		json_object_set_new(root, "lost",
				    json_integer((json_int_t)lost->n_lost));
		json_object_set_new(root, "missed",
				    json_integer((json_int_t)lost->n_missed));
		json_object_set_new(root, "recovered",
				    json_integer((json_int_t)lost->n_recovered));
		json_object_set_new(root, "acked",
				    json_integer((json_int_t)lost->n_acked));
		json_object_set_new(root, "skipped",
				    json_integer((json_int_t)lost->n_skipped));
		json_t *sk = json_array();
		if (!sk || json_object_set_new(root, "skipped_rows", sk) != 0)
			goto fail;
		for (size_t i = 0; i < lost->n_skipped; i++) {
			json_t *o = report_ledger_row_json(&lost->skipped[i],
							   0, 0);
			if (!o || json_array_append_new(sk, o) != 0)
				goto fail;
		}
		/* Copies of removed targets closed unsent (issue 43). */
		json_object_set_new(root, "abandoned",
				    json_integer((json_int_t)lost->n_abandoned));
		json_t *ab = json_array();
		if (!ab || json_object_set_new(root, "abandoned_rows", ab) != 0)
			goto fail;
		for (size_t i = 0; i < lost->n_abandoned; i++) {
			json_t *o = report_ledger_row_json(&lost->abandoned[i],
							   0, 0);
			if (!o || json_array_append_new(ab, o) != 0)
				goto fail;
		}
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = report_ledger_row_json(
			&rows[i], rec ? rec[i] : 0,
			lost && lost->acked_ms ? lost->acked_ms[i] : 0);
		if (!o || json_array_append_new(arr, o) != 0)
			goto fail;
	}
	if (json_object_set_new(root, "rows", arr) != 0) {
		arr = NULL;
		goto fail;
	}
	return root;
fail:
	json_decref(arr);
	json_decref(root);
	return NULL;
}

json_t *report_timeline_json(const struct sc_retry_timeline *tl,
			     const struct sc_zone *z)
{
	char t[REPORT_TIME_MAX];
	json_t *arr = json_array();

	for (int k = 0; arr && k < tl->n_attempts; k++) {
		json_t *o = json_pack(
			"{s:i, s:s, s:I, s:I}", "attempt", k + 1, "at",
			report_format_local(tl->attempt_ms[k], z, t), "at_ms",
			(json_int_t)tl->attempt_ms[k], "after_slot_ms",
			(json_int_t)(tl->attempt_ms[k] - tl->attempt_ms[0]));
		if (!o || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr;
}


const char *report_target_kind_name(int kind)
{
	switch (kind) {
	case TARGET_SLACK: return "slack";
	case TARGET_WEBHOOK: return "webhook";
	case TARGET_FILE: return "file";
	case TARGET_COMMAND: return "command";
	default: return "unknown";
	}
}

int64_t report_clock_tolerance_ms(const struct config *c)
{
	return c && c->clock_tolerance_ms > 0 ? c->clock_tolerance_ms
					      : CONFIG_CLOCK_TOLERANCE_MS;
}

bool report_node_skewed(const struct store_node *x, int64_t tolerance_ms)
{
	return x->has_clock_offset && (x->clock_offset_ms > tolerance_ms ||
				       x->clock_offset_ms < -tolerance_ms);
}

json_t *report_nodes_json(const struct store_node *v, size_t n,
			  int64_t tolerance_ms, int64_t now_ms,
			  const char *digest)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	json_t *arr = json_array();
	size_t gone = 0;

	for (size_t i = 0; arr && i < n; i++) {
		const struct store_node *x = &v[i];
		if (now_ms - x->seen_ms > STORE_NODE_LIVE_MS) {
			gone++;
			continue;
		}
		json_t *o = json_pack(
			"{s:o?, s:o?, s:I, s:o?, s:s, s:b, s:s, s:I, s:s, s:I}",
			"id", report_json_text(x->id), "host",
			report_json_text(x->host), "pid", (json_int_t)x->pid,
			"version", report_json_text(x->version),
			"config_digest", x->config_digest, "same_config",
			digest && strcmp(x->config_digest, digest) == 0,
			"started", clock_format_utc(x->started_ms, a),
			"started_ms", (json_int_t)x->started_ms, "last_seen",
			clock_format_utc(x->seen_ms, b), "last_seen_ms",
			(json_int_t)x->seen_ms);
		if (o && (json_object_set_new(o, "clock_offset_ms",
					      x->has_clock_offset
						      ? json_integer(
							  x->clock_offset_ms)
						      : json_null()) ||
			  json_object_set_new(o, "clock_skewed",
					      json_boolean(report_node_skewed(
						      x, tolerance_ms))))) {
			json_decref(o);
			o = NULL;
		}
		if (!o || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr ? json_pack("{s:o, s:I, s:I}", "live", arr, "gone",
			       (json_int_t)gone, "clock_tolerance_ms",
			       (json_int_t)tolerance_ms) : NULL;
}
