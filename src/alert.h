/*
 * alert.h - loud loss: the alerts of lost and missed slots, delivered
 * like results (docs/internals/alert.md, docs/delivery.md).
 *
 * A slot is lost when its job goes DEAD: its attempts are used up, a
 * failure was permanent, or it stalled too often. A slot is missed when
 * the scheduler did not run it after downtime (its catchup policy). Both
 * are raised as alert rows in the store (store.h, "alerts"), whose copies
 * to the alert targets are send rows retried with backoff until they are
 * taken or ALERT_GIVE_UP_MS runs out. An alert stays OPEN until the slot
 * recovers (then a "recovered" message goes to the same targets) or an
 * operator acks it; with `alerts: realert`, an open alert is sent again at
 * that interval, each time as a new message.
 *
 * Who raises: the worker, right after a finish or a recovery moved a job
 * to DEAD (alert_raise_lost); the scheduler, once per catch-up pass
 * (alert_raise_missed); alert_tick's sweep, for any DEAD job whose alert a
 * crash kept from being raised; and alert_tick's timing pass (issue 14),
 * for the `sla:` breaches: late (slot_ms the slot, generation 0), overrun
 * (the slot, generation the attempt) and stale (slot_ms the instant the
 * staleness counts from, generation 0), job_id 0 in all three. Their
 * "recovered" message names the healed reason in its note. The daemon
 * raises and closes the node's runner alert (alert_raise_runner,
 * alert_close_node, issue 42). Who sends:
 * alert_tick, run by the daemon's alerter thread and at the end of
 * `run --once`.
 *
 * Thread-safety: any thread, each with its own store handle; the config
 * is read only.
 */
#ifndef SURECRON_ALERT_H
#define SURECRON_ALERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "store.h"
#include "surecron.h"

/* An alert send still failing this long after its alert was raised is
 * given up (ABANDONED, an error line and a ledger row). */
#define ALERT_GIVE_UP_MS (48LL * 3600 * 1000)
/* The resend backoff: 1 s doubling, at most 10 min (real sends). */
#define ALERT_BACKOFF_MIN_MS 1000
#define ALERT_BACKOFF_MAX_MS (10 * 60 * 1000)
/* How long a claimed send is ours before another sender may take it for
 * a crashed one (above every target's timeout). */
#define ALERT_SEND_LEASE_MS (5 * 60 * 1000)
/* How often the daemon's alerter runs alert_tick (real time). */
#define ALERT_TICK_MS 1000

/*
 * The alert targets: config->alert_targets, which config_parse resolved
 * from SURECRON_ALERT_TARGETS or `alerts: targets`. Fills out[0..*n)
 * with pointers into the config (an unknown name, possible only in a
 * config made by hand, is logged and skipped).
 */
void alert_targets(const struct config *c, const struct target_spec **out,
		   size_t max, size_t *n);

/* The delay before try n_tries + 1 of a send that failed n_tries times. */
int64_t alert_backoff_ms(int n_tries);

/*
 * Raises the lost alert of job j (which a finish or recovery just moved to
 * DEAD), unless `alerts: on` leaves lost out. Idempotent: a second raise of
 * the same death (another node, the sweep) writes nothing.
 */
int alert_raise_lost(struct store *s, const struct config *c,
		     const struct store_dead_job *j, struct sc_err *err);

/*
 * Raises the missed alert of one catch-up pass of schedule: n slots from
 * first_ms to last_ms were not run. The key is (schedule, first_ms), so
 * the same pass replayed after a crash, or run by two nodes at once,
 * raises it once. The caller checks `alerts: on`.
 */
int alert_raise_missed(struct store *s, const char *schedule,
		       int64_t first_ms, int64_t last_ms, int64_t n,
		       struct sc_err *err);

/* The timing checks' reasons (issue 14), alert rows and message words;
 * store.h's ALERT_REASON_* are the loss reasons. */
#define ALERT_REASON_LATE "late"
#define ALERT_REASON_OVERRUN "overrun"
#define ALERT_REASON_STALE "stale"

/* The runner's own exhaustion (issue 42): out of descriptors, processes
 * or memory, while it lasts. Its alert is the node's, not a schedule's:
 * its schedule field is ALERT_RUNNER_PREFIX + the node's name, which no
 * schedule name can be (they hold no ':'), its slot the instant the
 * exhaustion began. */
#define ALERT_REASON_RUNNER "runner"
#define ALERT_RUNNER_PREFIX "runner:"

/*
 * Raises the runner alert of node for an exhaustion that began at
 * since_ms, why its first error (never secrets). Idempotent on (node,
 * since_ms). *id (NULL allowed) gets the alert's id, for
 * alert_close_node.
 */
int alert_raise_runner(struct store *s, const char *node, int64_t since_ms,
		       const char *why, int64_t *id, struct sc_err *err);

/*
 * Config skew between nodes (issue 43): a job of a schedule this node's
 * config lacks that has waited past worker.skew_grace (no node that has
 * the schedule ran it), or live nodes whose config digests have differed
 * for as long. Like the runner's, it is a node's alert, raised and closed
 * by the daemon that saw it: its schedule field is ALERT_SKEW_PREFIX and
 * the schedule's name (ALERT_SKEW_CONFIGS for the digests), its slot the
 * instant the skew was first seen.
 */
#define ALERT_REASON_SKEW "skew"
#define ALERT_SKEW_PREFIX "skew:"
#define ALERT_SKEW_CONFIGS "skew::configs"

/* Raises the skew alert named `name` (ALERT_SKEW_PREFIX + a schedule, or
 * ALERT_SKEW_CONFIGS) first seen at since_ms; why names the schedule and
 * the nodes. Idempotent on (name, since_ms); *id as alert_raise_runner. */
int alert_raise_skew(struct store *s, const char *name, int64_t since_ms,
		     const char *why, int64_t *id, struct sc_err *err);

/*
 * Closes a node's alert id, a runner or a skew one (HEALED), once what
 * raised it ended, with its "recovered" message and ledger row. Nothing
 * when it is not OPEN (an operator acked it).
 */
int alert_close_node(struct store *s, int64_t id, struct sc_err *err);

/* The most late, overrunning and schedule rows one timing pass reads;
 * the rest wait for the next pass (oldest first). */
#define ALERT_SLA_MAX 256

/* What one alert_tick did. */
struct alert_report {
	size_t n_raised;     /* lost alerts the sweep raised */
	size_t n_late, n_overrun, n_stale; /* timing breaches raised here */
	size_t n_healed;     /* open alerts closed because the slot succeeded */
	size_t n_rounds;     /* realert rounds made */
	size_t n_staged;     /* rounds staged */
	size_t n_sent, n_failed, n_abandoned, n_duplicates;
};

struct alert_ctx {
	struct store *store;        /* borrowed; this thread's handle */
	const struct config *config;
	struct sc_clock *clock;     /* NULL: the store's */
	bool (*stop)(void *ud);     /* asked between sends (NULL: never) */
	void *ud;
};

/*
 * One pass: raise the lost alerts a crash left unraised, the timing
 * breaches of the schedules with `sla:` (one store_sla_scan for all of
 * them; each breach raised once, keyed, with its ledger row), close the open
 * alerts whose slots succeeded or whose breach ended (raising their
 * "recovered" message), make
 * the realert rounds that are due, stage every round not staged yet (one
 * send row per alert target; none when no alert target is configured,
 * which is logged as an error), then send every due send row. A store
 * error ends the pass (returned); a send that fails is only counted and
 * retried later.
 */
int alert_tick(const struct alert_ctx *a, struct alert_report *rep,
	       struct sc_err *err);

/*
 * What a worker does when its run left the slot lost: raises the lost
 * alert of d (alert_raise_lost) and stages and sends that slot's open
 * alerts at once, on the calling thread, so the on-call hears of the
 * loss now; nothing of other slots (the alerter's pass does the rest:
 * alert_tick). rep (may be NULL) counts what it did. Returns 0 or the
 * store's error; a send that fails is counted and retried by the pass.
 */
int alert_send_lost(const struct alert_ctx *a, const struct store_dead_job *d,
		    struct alert_report *rep, struct sc_err *err);

/*
 * `surecron ack`: closes every OPEN alert of schedule whose slots hold
 * slot_ms, each with an "acked" ledger row (note and by in its details;
 * NULL: none). When no alert is open but the ledger holds a lost or
 * missed row of that slot (its alert was never raised, or not by this
 * version), one "acked" row for the slot is written, so that
 * `ledger --lost` counts it as handled. *n_acked counts the alerts
 * closed (the lone row counts 1). SC_ENOENT: nothing to acknowledge.
 */
int alert_ack(struct store *s, const char *schedule, int64_t slot_ms,
	      const char *note, const char *by, size_t *n_acked,
	      struct sc_err *err);

#endif
