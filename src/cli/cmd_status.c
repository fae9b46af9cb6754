/*
 * cmd_status.c - `surecron status [--config FILE] [--json] [SCHEDULE]`: one
 * block per schedule of the config (or SCHEDULE only): its final expression
 * (and the variable that overrode it), next slot in its zone, frequency
 * class with the field that decided it, retry policy (the config's or the
 * class's), the last run (its newest row of a run outcome, with its
 * attempt: never an alert, ack or missed row, issue 43), its jobs
 * waiting, delayed (a retry pending), running and dead (slots lost,
 * waiting for `surecron retry`), and its open alerts (lost or missed slots
 * nobody has recovered or acknowledged yet). A schedule with `enabled:
 * false` has a "state disabled" line, a paused one (surecron pause) a
 * "state paused by WHO until T: NOTE" line; the others print exactly what
 * they always did.
 *
 * Jobs of schedules that are no longer in the config (renamed or removed)
 * are counted too, as "other": a dead job must not vanish from the report
 * because its schedule left the file.
 *
 * The nodes (issue 43; status of every schedule only): each daemon live
 * in the store (seen within STORE_NODE_LIVE_MS), with its host, pid,
 * version and config digest, marked when its config is not this one,
 * and how many records are of daemons gone. Config skew shows here: a
 * node on another config claims only the schedules it has.
 *
 * `--stale` (issue 14) prints only whether each schedule delivered a slot
 * recently enough, and exits 1 when one did not: its `sla:
 * success_within`, or without one two periods of the schedule plus its
 * recovery window (the second slot after the last delivery plus the
 * retry timeline's window: calendar slots, so a weekday schedule is not
 * stale over a weekend). The count starts at the last delivery (the
 * completion of its latest slot marker) or, for a schedule that never
 * delivered, at its first job; one that has no job yet has had nothing
 * due and is not stale. The store is read once for every schedule
 * (store_sla_scan), as the daemon's timing pass does. No alert is raised
 * here: alerts are the daemon's, and only with `sla:`.
 *
 * The store is read in one pass whatever the number of schedules (issue
 * 15): one store_sched_summaries (job counts and newest row of every
 * schedule, or of SCHEDULE only) and one store_alert_list of the open
 * alerts, grouped here; the "other" jobs are the summaries of schedules
 * the config does not name, so no count of all jobs is needed.
 *
 * Read-only: it opens the store, queries, and changes nothing.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "report.h"
#include "status_socket.h"
#include "store.h"
#include "url.h"

/* Schedules of the store's scheduler state read by --stale beyond those
 * of the config (removed or renamed ones take room too). */
#define STALE_EXTRA 1024

static void print_alerts(const char *name, const struct report_sched *x)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];

	if (x->n_alerts == 0) {
		cli_out(stdout, "  alerts   none open\n");
		return;
	}
	cli_out(stdout, "  alerts   %zu open  <- surecron ack %s SLOT, or "
		"run the slot again\n", x->n_alerts, name);
	for (size_t k = 0; k < x->n_alerts; k++) {
		const struct store_alert *al = &x->alerts[k];
		cli_out(stdout, "           %-6s %s", al->reason,
			clock_format_utc(al->slot_ms, a));
		if (al->n_slots > 1)
			cli_out(stdout, " .. %s (%lld slots)",
				clock_format_utc(al->last_slot_ms, b),
				(long long)al->n_slots);
		cli_out(stdout, ", raised %s, %d message%s\n",
			clock_format_utc(al->created_ms, b), al->rounds,
			al->rounds == 1 ? "" : "s");
	}
}

static bool any_pending(const struct store_counts *c)
{
	return c->ready_due || c->delayed || c->active || c->dead;
}

/* other: NULL when one schedule was asked for (nothing else was read). */
static void print_text(const struct cli_state *st, struct report_sched *v,
		       size_t nv, const struct store_counts *other)
{
	char t[CLI_TIME_MAX], p[96], u[CLOCK_ISO_MAX];

	cli_out(stdout,
		"config: %s\nstore:  %s\n", st->path, st->cfg->store_url);
	for (size_t i = 0; i < nv; i++) {
		const struct schedule_spec *sc = v[i].sc;
		struct report_sched *x = &v[i];

		cli_out(stdout, "\n%s\n", sc->name);
		cli_out(stdout, "  cron     %s", sc->cron);
		if (spec_x(sc)->override_var)
			cli_out(stdout,
				"  (from %s; the file says %s)", spec_x(sc)->override_var,
				spec_cron_config(sc) ? spec_cron_config(sc) : "nothing");
		cli_out(stdout, "\n  next     %s %s\n",
			cli_format_local(x->info.next_ms, x->info.zone, t),
			sc_zone_name(x->info.zone));
		/* Only for a schedule disabled or paused: the others' lines
		 * are as they always were. */
		if (sc->disabled)
			cli_out(stdout, "  state    disabled (enabled: false in "
				"the config): fires nothing\n");
		if (x->pause)
			cli_out(stdout, "  state    paused by %s until %s%s%s  "
				"<- surecron resume %s\n",
				x->pause->by[0] ? x->pause->by : "?",
				clock_format_utc(x->pause->until_ms, u),
				x->pause->note[0] ? ": " : "", x->pause->note,
				sc->name);
		cli_out(stdout,
			"  class    %s (%s)\n", sc_freq_class_name(x->info.cls),
			x->info.reason);
		cli_out(stdout, "  retry    %s%s\n",
			cli_format_policy(&x->info.policy, p, sizeof(p)),
			x->info.policy_from_config ? " (retry: in the config)"
						   : " (the class's policy)");
		if (x->has_last)
			cli_out(stdout,
				"  last     %s, slot %s, attempt %d%s%s\n",
				x->last->outcome,
				clock_format_utc(x->last->slot_ms, u),
				x->last->attempt,
				x->last->error_msg ? ": " : "",
				x->last->error_msg ? x->last->error_msg : "");
		else
			cli_out(stdout, "  last     never run\n");
		cli_out(stdout,
			"  jobs     %lld waiting, %lld delayed, %lld running, "
			"%lld dead%s\n", (long long)x->counts.ready_due,
			(long long)x->counts.delayed,
			(long long)x->counts.active, (long long)x->counts.dead,
			x->counts.dead ? "  <- lost slots: surecron ledger --lost"
				       : "");
		print_alerts(sc->name, x);
	}
	if (other && any_pending(other))
		cli_out(stdout,
			"\nschedules not in the config\n  jobs     %lld waiting, "
			"%lld delayed, %lld running, %lld dead%s\n",
			(long long)other->ready_due, (long long)other->delayed,
			(long long)other->active, (long long)other->dead,
			other->dead ? "  <- lost slots: surecron ledger --lost"
				    : "");
	/* Issue 43: no node of this config claims them. */
	if (other && (other->ready_due || other->delayed))
		cli_out(stdout, "  note     a node claims only the schedules "
			"of its config: these wait for a node whose config "
			"has theirs\n");
}

/* The nodes status shows: live ones and how many are gone. */
struct node_view {
	const struct store_node *v;
	size_t n;
	int64_t now_ms;
	int64_t tolerance_ms;               /* worker.clock_tolerance */
	char digest[STORE_NODE_DIGEST_MAX]; /* this config's */
};

static bool node_live(const struct node_view *nv, const struct store_node *x)
{
	return nv->now_ms - x->seen_ms <= STORE_NODE_LIVE_MS;
}

static void print_nodes(const struct node_view *nv)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX], off[64];
	size_t live = 0, skew = 0, clock_skew = 0;

	for (size_t i = 0; i < nv->n; i++)
		if (node_live(nv, &nv->v[i])) {
			live++;
			skew += strcmp(nv->v[i].config_digest,
				       nv->digest) != 0;
			clock_skew += report_node_skewed(&nv->v[i],
							 nv->tolerance_ms);
		}
	cli_out(stdout, "\nnodes\n  live     %zu%s, %zu gone\n", live,
		skew ? " (configs differ: a node claims only the schedules "
		       "its config has)" : "", nv->n - live);
	if (clock_skew)
		cli_out(stdout, "  clocks   %zu node%s off the database "
			"server's clock by more than %lld ms: %s on the "
			"server's time; set %s right (NTP)\n", clock_skew,
			clock_skew == 1 ? "" : "s",
			(long long)nv->tolerance_ms,
			clock_skew == 1 ? "it runs" : "they run",
			clock_skew == 1 ? "its clock" : "their clocks");
	for (size_t i = 0; i < nv->n; i++) {
		const struct store_node *x = &nv->v[i];
		if (!node_live(nv, x))
			continue;
		/* The clock: the node's offset from the database server's
		 * (PostgreSQL; SQLite has one clock), marked when beyond the
		 * tolerance (issue 42). */
		off[0] = '\0';
		if (x->has_clock_offset)
			snprintf(off, sizeof(off), ", clock %+.3f s%s",
				 (double)x->clock_offset_ms / 1000.0,
				 report_node_skewed(x, nv->tolerance_ms)
					 ? " (SKEWED)" : "");
		cli_out(stdout, "  %s  pid %lld, version %s, config %s%s, "
			"started %s, seen %s%s\n", x->host, (long long)x->pid,
			x->version, x->config_digest,
			strcmp(x->config_digest, nv->digest) == 0
				? " (this config)" : " (another config)",
			clock_format_utc(x->started_ms, a),
			clock_format_utc(x->seen_ms, b), off);
	}
}

static int print_json(const struct cli_state *st, struct report_sched *v,
		      size_t nv, const struct store_counts *other,
		      const struct node_view *nodes)
{
	json_t *root = json_object(), *arr = json_array();

	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return cli_fail(EXIT_FAIL, "out of memory");
	}
	/* By the URL: an answer through the daemon opened no store. */
	json_object_set_new(root, "store", json_string(
		url_is_pg(st->cfg->store_url) ? "postgresql" : "sqlite"));
	json_object_set_new(root, "schedules", arr);
	json_object_set_new(root, "other_jobs", !other ? json_null()
			    : report_counts_json(other));
	if (nodes) {
		json_t *nj = report_nodes_json(nodes->v, nodes->n,
						nodes->tolerance_ms,
						nodes->now_ms, nodes->digest);
		if (!nj || json_object_set_new(root, "nodes", nj) != 0) {
			json_decref(root);
			return cli_fail(EXIT_FAIL, "out of memory");
		}
	}
	for (size_t i = 0; i < nv; i++) {
		json_t *o = report_sched_json(&v[i]);
		if (!o || json_array_append_new(arr, o) != 0) {
			json_decref(root);
			return cli_fail(EXIT_FAIL, "out of memory");
		}
	}
	return cli_print_json(root);
}

/* --stale: one schedule's verdict. */
struct stale_status {
	bool started;          /* it has a job or a delivery */
	bool delivered;        /* counts from a delivery, else its first job */
	int64_t since_ms;      /* the instant it counts from */
	int64_t within_ms;     /* success_within (sla), else the default */
	bool from_sla;
	int64_t deadline_ms;   /* stale once now is past this */
	bool stale;
};

/* The deadline of a schedule without sla: the second slot after since,
 * plus the recovery window of its policy. */
static int default_deadline(const struct schedule_spec *sc, int64_t since,
			    int64_t *out, struct sc_err *err)
{
	struct sc_retry_timeline tl;
	int64_t s1 = 0, s2 = 0;
	int rc = sc_cron_next(sc->expr, sc->zone, since, &s1, err);

	if (rc == 0)
		rc = sc_cron_next(sc->expr, sc->zone, s1, &s2, err);
	if (rc == 0)
		rc = sc_retry_timeline(spec_policy(sc), s2, &tl, err);
	if (rc == SC_ENEVER) {
		*out = INT64_MAX; /* never fires again: never stale */
		return 0;
	}
	if (rc == 0)
		*out = tl.window_end_ms;
	return rc;
}

static int stale_verdicts(const struct cli_state *st, int64_t now,
			  struct stale_status *v, struct sc_err *err)
{
	size_t n = st->cfg->n_schedules;
	struct store_sla x = {.max_last = n + STALE_EXTRA};
	int rc;

	x.last = calloc(x.max_last, sizeof(*x.last));
	if (!x.last)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	rc = store_sla_scan(st->store, INT64_MIN, INT64_MIN, &x, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct schedule_spec *sc = &st->cfg->schedules[i];
		const struct store_sla_last *l = NULL;
		struct stale_status *o = &v[i];

		memset(o, 0, sizeof(*o));
		for (size_t k = 0; k < x.n_last && !l; k++)
			if (strcmp(x.last[k].schedule, sc->name) == 0)
				l = &x.last[k];
		if (!l || (!l->delivered_ms && !l->first_ms))
			continue;
		o->started = true;
		o->delivered = l->delivered_ms != 0;
		o->since_ms = o->delivered ? l->delivered_ms : l->first_ms;
		if (spec_x(sc)->has_sla && spec_x(sc)->sla.success_within_ms > 0) {
			o->from_sla = true;
			o->within_ms = spec_x(sc)->sla.success_within_ms;
			o->deadline_ms = o->since_ms + o->within_ms;
		} else {
			rc = default_deadline(sc, o->since_ms, &o->deadline_ms,
					      err);
			o->within_ms = o->deadline_ms == INT64_MAX
				? 0 : o->deadline_ms - o->since_ms;
		}
		o->stale = rc == 0 && now > o->deadline_ms;
	}
	free(x.last);
	return rc;
}

static int print_stale_text(const struct cli_state *st,
			    const struct stale_status *v, size_t n_stale)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX], d[CLOCK_DUR_MAX];

	if (n_stale == 0)
		cli_out(stdout, "no stale schedules (%zu checked)\n",
			st->cfg->n_schedules);
	else
		cli_out(stdout, "STALE: %zu schedule%s delivered nothing within "
			"its success_within\n", n_stale, n_stale == 1 ? "" : "s");
	for (size_t i = 0; i < st->cfg->n_schedules; i++) {
		const struct stale_status *o = &v[i];
		const char *name = st->cfg->schedules[i].name;

		if (!o->started) {
			cli_out(stdout, "  ok     %s: nothing due yet\n", name);
			continue;
		}
		if (o->deadline_ms == INT64_MAX) {
			cli_out(stdout, "  ok     %s: fires no more\n", name);
			continue;
		}
		cli_out(stdout, "  %-6s %s: %s %s, within %s (%s), %s %s\n",
			o->stale ? "STALE" : "ok", name,
			o->delivered ? "last delivered" : "never delivered; "
			"first job", clock_format_utc(o->since_ms, a),
			clock_format_duration(o->within_ms, d, sizeof(d)),
			o->from_sla ? "sla success_within"
				    : "default: two periods + recovery window",
			o->stale ? "stale since" : "until",
			clock_format_utc(o->deadline_ms, b));
	}
	return n_stale ? EXIT_FAIL : EXIT_OK;
}

static int print_stale_json(const struct cli_state *st,
			    const struct stale_status *v, size_t n_stale)
{
	char a[CLOCK_ISO_MAX], b[CLOCK_ISO_MAX];
	json_t *root = json_object(), *arr = json_array();

	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return cli_fail(EXIT_FAIL, "out of memory");
	}
	json_object_set_new(root, "store", json_string(store_backend_name(
						   st->store)));
	json_object_set_new(root, "stale", json_integer((json_int_t)n_stale));
	json_object_set_new(root, "schedules", arr);
	for (size_t i = 0; i < st->cfg->n_schedules; i++) {
		const struct stale_status *o = &v[i];
		bool dated = o->started && o->deadline_ms != INT64_MAX;
		json_array_append_new(arr, json_pack(
			"{s:s, s:b, s:b, s:b, s:s*, s:o, s:o, s:s*, s:s*}",
			"name", st->cfg->schedules[i].name, "stale", o->stale,
			"started", o->started, "delivered", o->delivered,
			"since", o->started ? clock_format_utc(o->since_ms, a)
					    : NULL,
			"since_ms", o->started ? json_integer(o->since_ms)
					       : json_null(),
			"success_within_ms", dated ? json_integer(o->within_ms)
						   : json_null(),
			"source", !dated ? NULL : o->from_sla ? "sla" : "default",
			"deadline", dated ? clock_format_utc(o->deadline_ms, b)
					  : NULL));
	}
	int r = cli_print_json(root);
	return r != EXIT_OK ? r : n_stale ? EXIT_FAIL : EXIT_OK;
}

static int run_stale(const struct cli_state *st, bool json, int64_t now)
{
	struct stale_status *v = calloc(st->cfg->n_schedules
					? st->cfg->n_schedules : 1, sizeof(*v));
	struct sc_err err = {0};
	size_t n_stale = 0;

	if (!v)
		return cli_fail(EXIT_FAIL, "out of memory");
	if (stale_verdicts(st, now, v, &err) != 0) {
		free(v);
		return cli_fail(EXIT_FAIL, "store: %s", err.msg);
	}
	for (size_t i = 0; i < st->cfg->n_schedules; i++)
		n_stale += v[i].stale;
	int r = json ? print_stale_json(st, v, n_stale)
		     : print_stale_text(st, v, n_stale);
	free(v);
	return r;
}

/* status NAME through the daemon's socket: 0 and *rs filled, or
 * non-zero (nothing printed, *rs empty) for the caller to read the
 * store itself. SURECRON_STATUS_VIA (tests, benchmarks) set to "store"
 * skips the ask, and to "daemon" makes a failed one say why on stderr. */
static int ask_daemon(const struct cli_state *st, const char *one,
		      int64_t now_ms, struct report_status *rs)
{
	const char *via = getenv("SURECRON_STATUS_VIA");
	struct sc_err err = {0};
	int rc;

	if (via && strcmp(via, "store") == 0)
		return -1;
	rc = status_socket_ask(st->cfg->status_socket, st->cfg->store_url,
			       one, STATUS_SOCKET_TIMEOUT_MS, rs, &err);
	if (rc == 0) {
		rc = report_status_build(st->cfg, one, now_ms, rs, &err);
		if (rc)
			report_status_dispose(rs);
	}
	if (rc && via && strcmp(via, "daemon") == 0)
		fprintf(stderr, "surecron: status_socket: %s\n", err.msg);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	const char *path = NULL, *one = NULL;
	bool json = false, stale = false;
	struct cli_state st;
	struct report_status rs = {0};
	struct sc_err err = {0};
	int64_t now_ms = sc_clock_now_ms(sc_clock_real());
	struct store_node *nodes = NULL;
	size_t n_nodes = 0;
	struct node_view nv = {.now_ms = now_ms};
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt_config("status", argc, argv, &i, &path)) < 0)
			return -r;
		if (r)
			continue;
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--stale") == 0)
			stale = true;
		else if (argv[i][0] == '-')
			return cli_usage_error("status", "unknown option '%s'",
					       argv[i]);
		else if (!one)
			one = argv[i];
		else
			return cli_usage_error("status", "unexpected argument "
					       "'%s'", argv[i]);
	}
	if (one && stale)
		return cli_usage_error("status", "--stale checks every "
				       "schedule: it takes no SCHEDULE");
	/* --stale reads the heartbeats and slas: the full load. The rest
	 * prints names, cron, zone and policy only: the light load, and for
	 * one schedule only the fragments that can hold it (config.h). */
	if ((r = stale ? cli_state_open(path, true, &st)
		       : cli_state_open_light(path, true, one, false, &st)))
		goto done;
	if (stale) {
		r = run_stale(&st, json, now_ms);
		goto done;
	}
	if (one && !config_schedule(st.cfg, one)) {
		r = cli_fail(EXIT_USAGE, "no schedule '%s' in %s", one, st.path);
		goto done;
	}
	/* One schedule, and a daemon that answers for the store: its
	 * answer, or on any failure the store read here (status_socket.h). */
	if (one && st.cfg->status_socket &&
	    ask_daemon(&st, one, now_ms, &rs) == 0)
		goto print;
	if ((r = cli_state_store(&st)))
		goto done;
	/* The messages say "schedule NAME: ..." or "store: ..." (report.h). */
	if (report_status_read(st.store, st.cfg, one, now_ms, &rs,
			       &err) != 0) {
		r = cli_fail(EXIT_FAIL, "%s", err.msg);
		goto done;
	}
	/* Every schedule: the nodes too (one more read, O(nodes)). */
	if (!one) {
		if (store_nodes(st.store, &nodes, &n_nodes, &err) != 0) {
			r = cli_fail(EXIT_FAIL, "store: %s", err.msg);
			goto done;
		}
		nv.v = nodes;
		nv.n = n_nodes;
		config_digest(st.cfg, nv.digest);
		nv.tolerance_ms = report_clock_tolerance_ms(st.cfg);
	}
print:
	r = json ? print_json(&st, rs.v, rs.n, one ? NULL : &rs.other,
			      one ? NULL : &nv)
		 : (print_text(&st, rs.v, rs.n, one ? NULL : &rs.other),
		    one ? (void)0 : print_nodes(&nv), EXIT_OK);
done:
	free(nodes);
	report_status_dispose(&rs);
	cli_state_close(&st);
	return r;
}
