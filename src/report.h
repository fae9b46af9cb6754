/*
 * report.h - the JSON objects that say what the store holds about the
 * schedules and the ledger, shared by every surface that shows them: the
 * CLI's --json output (status, ledger, ledger --lost) and the daemon's
 * HTTP API (web_api.c). One builder per object, so the two never drift:
 * a field added here shows in both.
 *
 * Every json_t * returned is new (the caller owns one reference and
 * releases it with json_decref); NULL means out of memory. Nothing here
 * writes to the store, prints or logs. Thread-safety: none needed; every
 * function works on what it is given (a store handle is used by one
 * thread at a time, as store.h says).
 *
 * No object holds a secret: schedules are described by name, expression,
 * zone, class and policy; rows by what the ledger says (error messages
 * never hold secrets: store.h).
 */
#ifndef SURECRON_REPORT_H
#define SURECRON_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ledger.h"
#include "store.h"
#include "surecron.h"

struct config;
struct schedule_spec;

/* Room for report_format_local's text, NUL included. */
#define REPORT_TIME_MAX 40

/* Formats ms as local ISO 8601 in zone z with its numeric offset at that
 * instant: "2026-03-08T03:30:00-04:00". Returns out. */
const char *report_format_local(int64_t ms, const struct sc_zone *z,
				char out[REPORT_TIME_MAX]);

/* A JSON string of s (NULL when s is NULL or out of memory), cleaned
 * first only when s is not valid UTF-8, which jansson refuses. */
json_t *report_json_text(const char *s);

/* What status and explain say about a schedule of a loaded config. */
struct report_sched_info {
	const struct sc_zone *zone;
	struct sc_cron cron;          /* the final expression, parsed */
	enum sc_freq_class cls;       /* class of the final expression */
	char reason[160];             /* the field that decided the class */
	struct sc_retry_policy policy; /* `retry:` or the class's */
	bool policy_from_config;
	int64_t next_ms;              /* next slot strictly after from_ms */
};

/* Fills *out for s with the next slot after from_ms. 0, or the error of
 * sc_cron_next (SC_ENEVER: the expression fires no more). */
int report_sched_info(const struct schedule_spec *s, int64_t from_ms,
		      struct report_sched_info *out, struct sc_err *err);

/* One schedule as status shows it: the config's spec and what the store
 * holds (borrowed from the report_status that gathered it). */
struct report_sched {
	const struct schedule_spec *sc;   /* borrowed from the config */
	struct report_sched_info info;
	struct store_counts counts;
	bool has_last;
	const struct ledger_row *last;    /* its newest row, or NULL */
	const struct store_alert *alerts; /* its open alerts */
	size_t n_alerts;
	const struct store_pause *pause;  /* its running pause, or NULL */
};

/* What status reads, in three store reads whatever the number of
 * schedules (issue 15). Release with report_status_dispose. */
struct report_status {
	struct report_sched *v;     /* one per schedule asked for */
	size_t n;
	struct store_counts other;  /* jobs of schedules not in the config
				       (all schedules only) */
	struct store_sched_summary *sum;
	size_t n_sum;
	struct store_alert *al;
	size_t n_al;
	struct store_pause *pz;     /* every pause row (store_pause_all) */
	size_t n_pz;
};

/*
 * Fills *out for the schedules of cfg (in config order), or for the one
 * named `one` only (it must be in cfg: SC_ENOENT otherwise), as of
 * now_ms: next slot, class and policy, job counts, newest row, open
 * alerts and the running pause (one more read: every pause row). *out borrows cfg, which must outlive it. 0, SC_ENOENT,
 * SC_ENOMEM, an sc_cron_next error (err's message: "schedule NAME: ...")
 * or the store's ("store: ..."). Release with report_status_dispose, also after an error.
 */
int report_status_read(struct store *s, const struct config *cfg,
		       const char *one, int64_t now_ms,
		       struct report_status *out, struct sc_err *err);
/*
 * The store reads of report_status_read and nothing else: out->sum (the
 * summaries of `one`, or of every schedule when NULL), out->al (the open
 * alerts, of `one` only when given) and out->pz (every pause row); the
 * rest of *out zeroed. 0, or the store's error ("store: ..."). Release
 * with report_status_dispose, also after an error. The daemon's answer
 * to `status NAME` (status_socket.h) is these reads.
 */
int report_status_fetch(struct store *s, const char *one,
			struct report_status *out, struct sc_err *err);

/*
 * The part of report_status_read that reads no store: given out->sum,
 * out->al and out->pz as the store's reads return them (out zeroed
 * otherwise; report_status_dispose frees them), fills the rest. For an
 * answer that came another way (status_socket.h). Same returns.
 */
int report_status_build(const struct config *cfg, const char *one,
			int64_t now_ms, struct report_status *out,
			struct sc_err *err);
void report_status_dispose(struct report_status *r);

/* The object `status --json` prints for one schedule (name, cron,
 * cron_config, override_var, zone, next, next_ms, class, class_reason,
 * policy, last, jobs, open_alerts; then "disabled": true for a schedule
 * with `enabled: false`, and "paused": {by, note, since, since_ms,
 * until, until_ms} while it is paused: both keys absent otherwise, so
 * the object of a schedule neither paused nor disabled is unchanged). */
json_t *report_sched_json(const struct report_sched *x);

/* worker.clock_tolerance of c (issue 42); its default for a NULL config
 * or one built without it. */
int64_t report_clock_tolerance_ms(const struct config *c);

/* Whether node x measured its clock beyond tolerance_ms from the store
 * server's (issue 42): false when it measured none (SQLite). */
bool report_node_skewed(const struct store_node *x, int64_t tolerance_ms);

/* The nodes (issue 43) as `status --json` and GET /api/nodes give them:
 * {"live": [{id, host, pid, version, config_digest, same_config, started,
 * started_ms, last_seen, last_seen_ms, clock_offset_ms, clock_skewed}],
 * "gone": N, "clock_tolerance_ms": T}: the records seen within
 * STORE_NODE_LIVE_MS of now_ms, in their order, same_config true when the
 * node's digest is `digest` (this config's, config_digest), and how many
 * are older. clock_offset_ms is the node's wall clock less the database
 * server's as the node measured it (null: not measured, SQLite), and
 * clock_skewed true when it is beyond tolerance_ms (issue 42). NULL when
 * out of memory. */
json_t *report_nodes_json(const struct store_node *v, size_t n,
			  int64_t tolerance_ms,
			  int64_t now_ms, const char *digest);

/* The jobs of schedules not in the config: {waiting, delayed, running,
 * dead, done}. */
json_t *report_counts_json(const struct store_counts *c);

/* One ledger row as `ledger --json` prints it; rec_ms / ack_ms (0:
 * none) add recovered_at / acked_at (acked_at only when not recovered). */
json_t *report_ledger_row_json(const struct ledger_row *r, int64_t rec_ms,
			       int64_t ack_ms);

/* `ledger --json`: {"rows": [...]} of n rows; with lost (then rows and
 * rec are its own) `ledger --lost --json`: the counts first (lost,
 * missed, recovered, acked, skipped), the skipped rows (skipped_rows),
 * then the rows. */
json_t *report_ledger_json(const struct ledger_row *rows, const int64_t *rec,
			   size_t n, const struct ledger_report *lost);

/* explain's retry timeline of a slot: [{attempt, at (local time in z),
 * at_ms, after_slot_ms}], one per attempt the policy allows, when each
 * would start if every one before it failed. */
json_t *report_timeline_json(const struct sc_retry_timeline *tl,
			     const struct sc_zone *z);

/* A target's kind: slack, webhook, file, command. */
const char *report_target_kind_name(int kind);

#endif
