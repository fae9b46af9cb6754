/*
 * history.c - the crons in force (history.h tells the rule).
 *
 * Invariants:
 *   - a note is computed before the scheduler plan of its config first
 *     ticks (daemon.c), so the state it reads is the last slot of the
 *     earlier expression, and from_ms = that slot + 1 is the first
 *     instant the new expression decides;
 *   - writing is idempotent: the store keeps a note only when it differs
 *     from the schedule's newest record, so a restart with the same
 *     config writes nothing, and nodes starting together write once;
 *   - the stretches of a period cover it without gap or overlap, in
 *     order, so the slots audit.c computes from them are sorted and each
 *     is judged once;
 *   - the store is only read by history_stretches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "config.h"

/* Up to this many notes read the states one name at a time (a reload
 * that changed a few schedules); more read them all at once. */
#define HISTORY_FEW 32

static bool same_spec(const struct schedule_spec *a,
		      const struct schedule_spec *b)
{
	if (!a->cron || !b->cron || strcmp(a->cron, b->cron) != 0)
		return false;
	return strcmp(sc_zone_name(a->zone), sc_zone_name(b->zone)) == 0;
}

int history_changed(const struct config *prev, const struct config *cfg,
		    bool **want, struct sc_err *err)
{
	*want = NULL;
	if (!prev)
		return 0;
	bool *w = calloc(cfg->n_schedules ? cfg->n_schedules : 1, sizeof(*w));
	if (!w)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	for (size_t i = 0; i < cfg->n_schedules; i++) {
		const struct schedule_spec *now = &cfg->schedules[i];
		const struct schedule_spec *was = config_schedule(prev,
								  now->name);
		/* Enabled again: it was left out while disabled. */
		w[i] = !was || !same_spec(was, now) ||
		       was->disabled != now->disabled;
	}
	*want = w;
	return 0;
}

void history_notes_dispose(struct history_notes *h)
{
	if (!h)
		return;
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

static int cmp_last(const void *a, const void *b)
{
	return strcmp(((const struct store_sched_last *)a)->schedule,
		      ((const struct store_sched_last *)b)->schedule);
}

/* The last slot of name: from the sorted array when given, else a read.
 * *has false when none. */
static int last_of(struct store *s, const struct store_sched_last *all,
		   size_t n_all, bool have_all, const char *name, bool *has,
		   int64_t *last, struct sc_err *err)
{
	*has = false;
	if (have_all) {
		struct store_sched_last key = {.slot_ms = 0};
		snprintf(key.schedule, sizeof(key.schedule), "%s", name);
		const struct store_sched_last *hit =
			n_all ? bsearch(&key, all, n_all, sizeof(*all),
					cmp_last)
			      : NULL;
		if (hit) {
			*has = true;
			*last = hit->slot_ms;
		}
		return 0;
	}
	struct sc_err e = {0};
	int rc = store_sched_last_get(s, name, last, &e);
	if (rc == SC_ENOENT)
		return 0;
	if (rc)
		return sc_err_set(err, rc, "%s", e.msg);
	*has = true;
	return 0;
}

int history_plan(struct store *s, const struct config *cfg, const bool *want,
		 int64_t now_ms, struct history_notes *out,
		 struct sc_err *err)
{
	struct store_sched_last *all = NULL;
	size_t n_all = 0, n = 0;
	int rc = 0;

	history_notes_dispose(out);
	for (size_t i = 0; i < cfg->n_schedules; i++)
		n += !want || want[i];
	if (n == 0)
		return 0;
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	bool have_all = n > HISTORY_FEW;
	if (have_all && (rc = store_sched_last_all(s, &all, &n_all, err)))
		goto done;
	for (size_t i = 0; i < cfg->n_schedules && !rc; i++) {
		const struct schedule_spec *sp = &cfg->schedules[i];
		int64_t from = INT64_MIN;

		if ((want && !want[i]) || sp->disabled || !sp->cron ||
		    !sp->zone)
			continue;
		/* Its own state, or its earlier names' (a rename takes the
		 * newest over: scheduler.c), whichever is newest. */
		for (size_t k = 0; k <= sp->n_renamed_from && !rc; k++) {
			bool has;
			int64_t last;
			rc = last_of(s, all, n_all, have_all,
				     k ? sp->renamed_from[k - 1] : sp->name,
				     &has, &last, err);
			if (!rc && has && last + 1 > from)
				from = last + 1;
		}
		out->v[out->n++] = (struct store_cron_note){
			.schedule = sp->name,
			.from_ms = from == INT64_MIN ? now_ms : from,
			.cron = sp->cron,
			.tz = sc_zone_name(sp->zone),
		};
	}
done:
	free(all);
	if (rc)
		history_notes_dispose(out);
	return rc;
}

int history_write(struct store *s, struct history_notes *h,
		  size_t *n_written, struct sc_err *err)
{
	int rc = store_cron_note_many(s, h->v, h->n, n_written, err);

	if (rc == 0)
		history_notes_dispose(h);
	return rc;
}

static int cmp_from(const void *a, const void *b)
{
	int64_t x = ((const struct store_cron *)a)->from_ms;
	int64_t y = ((const struct store_cron *)b)->from_ms;

	return (x > y) - (x < y);
}

/* The expression and zone of record r, or the config's when it no
 * longer parses or loads. */
static void resolve(const struct schedule_spec *spec,
		    const struct store_cron *r, struct history_stretch *st)
{
	const struct sc_zone *z = NULL;

	st->expr = *spec->expr;
	st->recorded = true;
	if (sc_cron_parse(r->cron, &st->expr, NULL) != 0)
		st->expr = *spec->expr;
	/* The config's zone when the names agree (or the record's no longer
	 * loads); the local zone by its name, which may be a TZ rule that
	 * sc_zone_load does not take. */
	if (strcmp(r->tz, sc_zone_name(spec->zone)) != 0) {
		if (strcmp(r->tz, sc_zone_name(sc_zone_local())) == 0)
			z = sc_zone_local();
		else if (sc_zone_load(r->tz, &z, NULL) != 0)
			z = NULL;
	}
	st->zone = z ? z : spec->zone;
}

int history_stretches(struct store *s, const struct schedule_spec *spec,
		      int64_t since_ms, int64_t until_ms,
		      struct history_stretch **out, size_t *n,
		      struct sc_err *err)
{
	struct store_cron *recs = NULL;
	size_t n_recs = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (since_ms >= until_ms)
		return 0;
	for (size_t k = 0; k <= spec->n_renamed_from && !rc; k++) {
		struct store_cron *v = NULL;
		size_t nv = 0;
		rc = store_cron_history(s, k ? spec->renamed_from[k - 1]
					     : spec->name, &v, &nv, err);
		if (rc || nv == 0) {
			free(v);
			continue;
		}
		struct store_cron *m = realloc(recs, (n_recs + nv) *
						     sizeof(*recs));
		if (!m) {
			free(v);
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
			break;
		}
		recs = m;
		memcpy(recs + n_recs, v, nv * sizeof(*v));
		n_recs += nv;
		free(v);
	}
	if (rc) {
		free(recs);
		return rc;
	}
	/* At most one stretch per record, and one when there is none. */
	struct history_stretch *v = calloc(n_recs ? n_recs : 1, sizeof(*v));
	if (!v) {
		free(recs);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	size_t nv = 0;
	if (n_recs == 0) {
		v[nv++] = (struct history_stretch){.from_ms = since_ms,
						   .until_ms = until_ms,
						   .expr = *spec->expr,
						   .zone = spec->zone};
	} else {
		qsort(recs, n_recs, sizeof(*recs), cmp_from);
		for (size_t i = 0; i < n_recs; i++) {
			int64_t a = i == 0 ? INT64_MIN : recs[i].from_ms;
			int64_t b = i + 1 < n_recs ? recs[i + 1].from_ms
						   : INT64_MAX;
			if (a < since_ms)
				a = since_ms;
			if (b > until_ms)
				b = until_ms;
			if (a >= b)
				continue;
			struct history_stretch st = {.from_ms = a,
						     .until_ms = b};
			resolve(spec, &recs[i], &st);
			v[nv++] = st;
		}
	}
	free(recs);
	*out = v;
	*n = nv;
	return 0;
}
