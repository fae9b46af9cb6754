/*
 * audit.c - the unaccounted slots of a period (audit.h tells the rules;
 * docs/internals/audit.md the why).
 *
 * Invariants kept here:
 *   - Read only: nothing here writes to the store, so an audit can run
 *     beside the daemon, on any node, as often as monitoring wants.
 *   - The slots come from the expressions that were in force (the
 *     store's cron history, history.h: each stretch of the period with
 *     its own cron and zone; the config's when there is no record),
 *     never from the store's jobs or rows: a slot the store never heard
 *     of is exactly what must be found.
 *   - A slot is accounted by any record under the schedule's name or a
 *     renamed_from name: the history of a rename stays under the old
 *     name (the scheduler never rewrites it), and still counts.
 *   - Bounded work: at most max_slots slots per schedule per call; the
 *     ledger is read three times per name per call (the period, one row
 *     before it, the missed rows before it for summaries that reach into
 *     it), and store_job_find is asked only about slots without a row.
 *   - No clock is read: now_ms comes from the caller.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "clock.h"
#include "config.h"
#include "history.h"
#include "scheduler.h"

const char *audit_why_text(enum audit_why why)
{
	switch (why) {
	case AUDIT_NOT_REACHED:
		return "no job, no ledger row; the scheduler has not reached "
		       "it (is the daemon running on this store?)";
	case AUDIT_BEFORE_FIRST:
		return "no job, no ledger row; before the schedule's first "
		       "record in this store (renamed without renamed_from, "
		       "another store, or added since)";
	case AUDIT_NEVER_RUN:
		return "no job, no ledger row; the store has no record of "
		       "this schedule at all";
	case AUDIT_NO_RECORD:
		break;
	}
	return "no job, no ledger row";
}

const char *audit_why_name(enum audit_why why)
{
	switch (why) {
	case AUDIT_NOT_REACHED: return "not_reached";
	case AUDIT_BEFORE_FIRST: return "before_first_record";
	case AUDIT_NEVER_RUN: return "never_run";
	case AUDIT_NO_RECORD: break;
	}
	return "no_record";
}

int audit_classify(const struct audit_view *v, int64_t slot_ms,
		   enum audit_why *why)
{
	bool reached = v->has_state && slot_ms <= v->last_ms;

	/* Not reached yet but due within the grace: the scheduler may be
	 * about to tick (it counts such a slot as on time, not late). */
	if (!reached && slot_ms >= v->now_ms - v->grace_ms)
		return 1;
	if (!v->has_state && v->first_ms == INT64_MAX && !v->before_period) {
		*why = AUDIT_NEVER_RUN;
		return 0;
	}
	/* Before the first record: the store cannot say whether the
	 * schedule existed then (see audit.h). A record before the period
	 * means it did, and was looked after from then on. */
	if (!v->before_period &&
	    (v->first_ms != INT64_MAX ? slot_ms < v->first_ms : reached)) {
		*why = AUDIT_BEFORE_FIRST;
		return 0;
	}
	*why = reached ? AUDIT_NO_RECORD : AUDIT_NOT_REACHED;
	return 0;
}

int audit_slots(const struct schedule_spec *spec, int64_t since_ms,
		int64_t until_ms, size_t max, int64_t **out, size_t *n,
		bool *truncated, struct sc_err *err)
{
	int64_t *v = NULL, t = since_ms - 1;
	size_t nv = 0, cap = 0;

	*out = NULL;
	*n = 0;
	*truncated = false;
	if (!spec->zone)
		return sc_err_set(err, SC_EZONE, "schedule %s: no time zone "
				  "resolved", spec->name ? spec->name : "?");
	while (t < until_ms - 1) {
		int64_t next;
		struct sc_err e = {0};
		int rc = sc_cron_next(spec->expr, spec->zone, t, &next, &e);

		if (rc == SC_ENEVER || (rc == 0 && next >= until_ms))
			break;
		if (rc) {
			free(v);
			return sc_err_set(err, rc, "schedule %s: %s",
					  spec->name, e.msg);
		}
		if (nv == max) {
			*truncated = true;
			break;
		}
		if (nv == cap) {
			size_t nc = cap ? cap * 2 : 64;
			int64_t *nvp = realloc(v, nc * sizeof(*v));
			if (!nvp) {
				free(v);
				return sc_err_set(err, SC_ENOMEM,
						  "out of memory");
			}
			v = nvp;
			cap = nc;
		}
		v[nv++] = next;
		t = next;
	}
	*out = v;
	*n = nv;
	return 0;
}

/*
 * The slots of [since, until) as the scheduler fired them: each stretch
 * of the period with the expression in force then (history.h), at most
 * max in all. *n_stretches gets how many expressions judged the period.
 */
static int slots_in_force(struct store *s, const struct schedule_spec *spec,
			  int64_t since_ms, int64_t until_ms, size_t max,
			  int64_t **out, size_t *n, bool *truncated,
			  size_t *n_stretches, struct sc_err *err)
{
	struct history_stretch *st = NULL;
	size_t n_st = 0;
	int64_t *v = NULL;
	size_t nv = 0;
	int rc;

	*out = NULL;
	*n = 0;
	*truncated = false;
	*n_stretches = 0;
	if (!spec->zone)
		return sc_err_set(err, SC_EZONE, "schedule %s: no time zone "
				  "resolved", spec->name ? spec->name : "?");
	rc = history_stretches(s, spec, since_ms, until_ms, &st, &n_st, err);
	for (size_t i = 0; rc == 0 && i < n_st && !*truncated; i++) {
		struct schedule_spec one = *spec;
		int64_t *part = NULL;
		size_t np = 0;

		one.expr = &st[i].expr;
		one.zone = st[i].zone;
		rc = audit_slots(&one, st[i].from_ms, st[i].until_ms, max - nv,
				 &part, &np, truncated, err);
		if (rc == 0 && np) {
			int64_t *m = realloc(v, (nv + np) * sizeof(*v));
			if (!m) {
				rc = sc_err_set(err, SC_ENOMEM,
						"out of memory");
			} else {
				v = m;
				memcpy(v + nv, part, np * sizeof(*v));
				nv += np;
			}
		}
		free(part);
		/* The rest of the period is past the cut, whatever the
		 * later stretches hold. */
		if (rc == 0 && nv == max && i + 1 < n_st)
			*truncated = true;
	}
	*n_stretches = n_st;
	free(st);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}

/* A missed row that stands for a range of slots, [from, until]. */
struct range {
	int64_t from, until;
};

/* What the ledger says of one schedule (all its names). */
struct seen {
	int64_t *slots;             /* slots with a row, sorted */
	size_t n, cap;
	struct range *ranges;       /* missed summaries */
	size_t n_ranges, cap_ranges;
	int64_t first_ms;
	bool before;
	size_t n_abandoned;         /* "abandoned" rows of the period */
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	void *p = realloc(*v, nc * size);
	if (!p)
		return SC_ENOMEM;
	*v = p;
	*cap = nc;
	return 0;
}

/* The range of a missed summary row (details "summary": true, "until"),
 * or 0 when the row is not one. */
static int summary_range(const struct ledger_row *r, struct range *out)
{
	json_t *d;
	int64_t until;

	if (strcmp(r->outcome, LEDGER_MISSED) != 0 || !r->details_json)
		return 0;
	d = json_loads(r->details_json, 0, NULL);
	const char *u = json_string_value(json_object_get(d, "until"));
	int ok = json_is_true(json_object_get(d, "summary")) && u &&
		 clock_parse_iso(u, &until, NULL) == 0;
	json_decref(d);
	if (!ok)
		return 0;
	out->from = r->slot_ms;
	out->until = until;
	return 1;
}

static int add_rows(struct seen *sn, const struct ledger_row *rows, size_t n,
		    bool slots_too)
{
	for (size_t i = 0; i < n; i++) {
		struct range rg;

		if (slots_too &&
		    strcmp(rows[i].outcome, LEDGER_ABANDONED) == 0)
			sn->n_abandoned++;
		if (slots_too) {
			if (grow((void **)&sn->slots, &sn->cap, sn->n + 1,
				 sizeof(*sn->slots)))
				return SC_ENOMEM;
			sn->slots[sn->n++] = rows[i].slot_ms;
			if (rows[i].slot_ms < sn->first_ms)
				sn->first_ms = rows[i].slot_ms;
		}
		if (summary_range(&rows[i], &rg)) {
			if (grow((void **)&sn->ranges, &sn->cap_ranges,
				 sn->n_ranges + 1, sizeof(*sn->ranges)))
				return SC_ENOMEM;
			sn->ranges[sn->n_ranges++] = rg;
		}
	}
	return 0;
}

/* Reads what the ledger says of name over the period into sn. */
static int read_name(struct store *s, const char *name, int64_t since_ms,
		     int64_t until_ms, struct seen *sn, struct sc_err *err)
{
	struct ledger_filter in = {.schedule = name, .since_ms = since_ms,
				   .until_ms = until_ms};
	struct ledger_filter one = {.schedule = name, .since_ms = INT64_MIN,
				    .until_ms = since_ms, .limit = 1};
	struct ledger_filter missed = {.schedule = name,
				       .since_ms = INT64_MIN,
				       .until_ms = since_ms,
				       .outcome = LEDGER_MISSED};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	int rc = store_ledger_query(s, &in, &rows, &n, err);

	if (rc)
		return rc;
	rc = add_rows(sn, rows, n, true);
	store_ledger_rows_free(rows, n);
	if (rc)
		return sc_err_set(err, rc, "out of memory");
	if ((rc = store_ledger_query(s, &one, &rows, &n, err)) != 0)
		return rc;
	sn->before = sn->before || n > 0;
	store_ledger_rows_free(rows, n);
	if (n == 0)
		return 0;
	/* Only a schedule with records before the period can have a
	 * summary from before it that reaches into it. */
	if ((rc = store_ledger_query(s, &missed, &rows, &n, err)) != 0)
		return rc;
	rc = add_rows(sn, rows, n, false);
	store_ledger_rows_free(rows, n);
	return rc ? sc_err_set(err, rc, "out of memory") : 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static bool has_row(const struct seen *sn, int64_t slot)
{
	if (sn->n && bsearch(&slot, sn->slots, sn->n, sizeof(*sn->slots),
			     cmp_i64))
		return true;
	for (size_t i = 0; i < sn->n_ranges; i++)
		if (slot >= sn->ranges[i].from && slot <= sn->ranges[i].until)
			return true;
	return false;
}

/* Is there a job of slot under any of the names? */
static int has_job(struct store *s, const struct schedule_spec *spec,
		   int64_t slot, bool *yes, struct sc_err *err)
{
	*yes = false;
	for (size_t i = 0; i <= spec->n_renamed_from && !*yes; i++) {
		const char *name = i == 0 ? spec->name
					  : spec->renamed_from[i - 1];
		struct store_job j;
		struct sc_err e = {0};
		int rc = store_job_find(s, name, slot, &j, &e);

		if (rc == 0)
			*yes = true;
		else if (rc != SC_ENOENT)
			return sc_err_set(err, rc, "%s", e.msg);
	}
	return 0;
}

/* The newest state of the schedule's names: *has false when none. */
static int state_of(struct store *s, const struct schedule_spec *spec,
		    bool *has, int64_t *last, struct sc_err *err)
{
	*has = false;
	*last = INT64_MIN;
	for (size_t i = 0; i <= spec->n_renamed_from; i++) {
		const char *name = i == 0 ? spec->name
					  : spec->renamed_from[i - 1];
		int64_t l;
		struct sc_err e = {0};
		int rc = store_sched_last_get(s, name, &l, &e);

		if (rc == SC_ENOENT)
			continue;
		if (rc)
			return sc_err_set(err, rc, "%s", e.msg);
		*has = true;
		if (l > *last)
			*last = l;
	}
	return 0;
}

static int push_hole(struct audit_report *rep, size_t sched, int64_t slot,
		     enum audit_why why)
{
	if (grow((void **)&rep->holes, &rep->cap_holes, rep->n_holes + 1,
		 sizeof(*rep->holes)))
		return SC_ENOMEM;
	rep->holes[rep->n_holes++] = (struct audit_hole){
		.sched = sched, .slot_ms = slot, .why = why};
	return 0;
}

int audit_schedule(struct store *s, const struct schedule_spec *spec,
		   int64_t since_ms, int64_t until_ms, int64_t now_ms,
		   const struct audit_opts *o, struct audit_report *rep,
		   struct sc_err *err)
{
	struct audit_opts op = o ? *o : (struct audit_opts){0};
	struct seen sn = {.first_ms = INT64_MAX};
	struct audit_sched as = {.name = spec->name, .first_ms = INT64_MAX};
	struct audit_view v;
	int64_t *slots = NULL;
	size_t n = 0;
	int rc;

	if (op.grace_ms <= 0)
		op.grace_ms = SCHED_GRACE_MS;
	if (op.max_slots == 0)
		op.max_slots = AUDIT_SLOTS_MAX;
	rc = slots_in_force(s, spec, since_ms, until_ms, op.max_slots, &slots,
			    &n, &as.truncated, &as.n_stretches, err);
	if (rc)
		return rc;
	if ((rc = state_of(s, spec, &as.has_state, &as.last_ms, err)) != 0)
		goto done;
	for (size_t i = 0; i <= spec->n_renamed_from; i++) {
		const char *name = i == 0 ? spec->name
					  : spec->renamed_from[i - 1];
		if ((rc = read_name(s, name, since_ms, until_ms, &sn, err)))
			goto done;
	}
	if (sn.n)
		qsort(sn.slots, sn.n, sizeof(*sn.slots), cmp_i64);
	as.first_ms = sn.first_ms;
	as.before_period = sn.before;
	as.n_abandoned = sn.n_abandoned;
	as.n_slots = n;
	as.cut_ms = as.truncated && n ? slots[n - 1] : 0;
	v = (struct audit_view){.has_state = as.has_state,
				.last_ms = as.last_ms,
				.first_ms = as.first_ms,
				.before_period = as.before_period,
				.now_ms = now_ms, .grace_ms = op.grace_ms};
	if (grow((void **)&rep->scheds, &rep->cap_scheds, rep->n_scheds + 1,
		 sizeof(*rep->scheds))) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto done;
	}
	size_t idx = rep->n_scheds;
	for (size_t i = 0; i < n; i++) {
		enum audit_why why;
		bool job;

		if (has_row(&sn, slots[i]))
			continue;
		if (audit_classify(&v, slots[i], &why) == 1) {
			as.n_pending++;
			continue;
		}
		if ((rc = has_job(s, spec, slots[i], &job, err)) != 0)
			goto done;
		if (job)
			continue;
		if (push_hole(rep, idx, slots[i], why)) {
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
			goto done;
		}
		as.n_holes++;
	}
	rep->scheds[rep->n_scheds++] = as;
	rep->n_slots += n;
	rep->n_abandoned += as.n_abandoned;
	rep->truncated = rep->truncated || as.truncated;
done:
	free(slots);
	free(sn.slots);
	free(sn.ranges);
	return rc;
}

int audit_run(struct store *s, const struct config *cfg, const char *only,
	      int64_t since_ms, int64_t until_ms, int64_t now_ms,
	      const struct audit_opts *o, struct audit_report *rep,
	      struct sc_err *err)
{
	bool found = false;

	for (size_t i = 0; i < cfg->n_schedules; i++) {
		const struct schedule_spec *spec = &cfg->schedules[i];

		if (only && strcmp(only, spec->name) != 0)
			continue;
		found = true;
		/* `enabled: false` fires nothing by design (issue 17): none
		 * of its slots is owed, so none is a hole. */
		if (spec->disabled)
			continue;
		int rc = audit_schedule(s, spec, since_ms, until_ms, now_ms, o,
					rep, err);
		if (rc)
			return rc;
	}
	if (only && !found)
		return sc_err_set(err, SC_ENOENT, "no schedule '%s'", only);
	return 0;
}

void audit_report_dispose(struct audit_report *rep)
{
	if (!rep)
		return;
	free(rep->scheds);
	free(rep->holes);
	memset(rep, 0, sizeof(*rep));
}
