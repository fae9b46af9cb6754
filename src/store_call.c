/*
 * store_call.c - what each one-statement operation is (store.h,
 * "one-statement operations"), declared once for both backends: its name
 * in errors, its kind, the commit whose durability class it takes, the
 * fields of its rows and the text of a missing row.
 *
 * Invariants:
 *   - store_calls[q] describes STORE_Q q; every q has a row (checked by
 *     test_store's call-table test) and a statement in each backend.
 *   - Constant data: no handle, no I/O; safe from any thread.
 */
#include <stddef.h>

#include "store.h"

/* A row at index i: name, kind, commit, fields, element size, missing
 * text, and whether its rows hold a secret. */
#define ROW(i, op, k, c, t, sz, missing) \
	[i] = {op, k, c, t, sz, missing, false, false}
#define ONE(q, op, t, T, missing) \
	ROW(STORE_Q_##q, op, STORE_QK_ONE, 0, &(t), sizeof(T), missing)
#define MAYBE(q, op, t, T) \
	ROW(STORE_Q_##q, op, STORE_QK_MAYBE, 0, &(t), sizeof(T), NULL)
/* A write whose one row (RETURNING) answers it, at commit c. */
#define MAYBE_W(q, op, c, t, T)            \
	[STORE_Q_##q] = {op,               \
			 STORE_QK_MAYBE,   \
			 STORE_COMMIT_##c, \
			 &(t),             \
			 sizeof(T),        \
			 NULL,             \
			 false,            \
			 true}
#define ALL(q, op, t, T) \
	ROW(STORE_Q_##q, op, STORE_QK_ALL, 0, &(t), sizeof(T), NULL)
#define WRITE(q, op, c) \
	ROW(STORE_Q_##q, op, STORE_QK_WRITE, STORE_COMMIT_##c, NULL, 0, NULL)
#define MANY(q, op, c, t, T)                                                   \
	ROW(STORE_Q_##q, op, STORE_QK_MANY, STORE_COMMIT_##c, &(t), sizeof(T), \
	    NULL)
#define FENCED(q, op, c) \
	ROW(STORE_Q_##q, op, STORE_QK_FENCED, STORE_COMMIT_##c, NULL, 0, NULL)
/* The ledger query's shapes: one row each, all alike. */
#define SHAPE(k)                                                          \
	ROW(STORE_Q_LEDGER_SHAPE0 + (k), "ledger query", STORE_QK_ALL, 0, \
	    &store_ledger_fields, sizeof(struct ledger_row), NULL)
#define SHAPES4(k) SHAPE(k), SHAPE((k) + 1), SHAPE((k) + 2), SHAPE((k) + 3)
#define SHAPES8(k) SHAPES4(k), SHAPES4((k) + 4)
_Static_assert(STORE_LQ_SHAPES == 56, "a row per shape below");

const struct store_qdef store_calls[STORE_Q_N] = {
	WRITE(PAUSE_END, "pause end", PAUSE),
	ONE(PAUSE_GET, "pause read", store_pause_fields, struct store_pause,
	    "not paused"),
	ALL(PAUSE_ALL, "pause read", store_pause_fields, struct store_pause),
	ALL(NODES, "node read", store_node_fields, struct store_node),
	WRITE(NODE_LEAVE, "node removal", NODE),
	/* The commit of a ledger row is its outcome's (store_commit_of_rows):
	 * a "lost" row is durable. */
	FENCED(LEDGER_FENCED, "ledger row", N),
	WRITE(LEDGER_FREE, "ledger row", N),
	WRITE(LEDGER_MISSED, "ledger row", N),
	WRITE(LEDGER_PAUSED, "ledger row", N),
	MANY(LEDGER_MANY, "ledger rows", N, store_ledger_put_fields,
	     struct ledger_row),
	ONE(JOB_COUNTS, "counts", store_counts_fields, struct store_counts,
	    "no counts"),
	/* The row and its body, in one transaction: a row never exists
	 * without its message. */
	FENCED(OUTBOX_PUT, "outbox put", STAGE),
	/* The row closed and its ledger row, in one transaction. */
	FENCED(OUTBOX_ABANDON, "outbox abandon", ABANDON),
	MANY(CRON_NOTE, "cron history", SCHED_STATE, store_cron_note_fields,
	     struct store_cron_note),
	ONE(JOB_GET, "job read", store_job_fields, struct store_job,
	    "no such job"),
	ONE(JOB_FIND, "job read", store_job_fields, struct store_job,
	    "no such job"),
	WRITE(JOB_REVIVE, "revive", REVIVE),
	WRITE(JOB_LEASE_CLAMP, "lease clamp", LEASE_CLAMP),
	ONE(SCHED_LAST_GET, "scheduler state read", store_i64_fields, int64_t,
	    "no slot materialised yet"),
	ALL(SCHED_LAST_ALL, "scheduler state read", store_sched_last_fields,
	    struct store_sched_last),
	ALL(CRON_HISTORY, "cron history read", store_cron_fields,
	    struct store_cron),
	ALL(LAST_SUCCESSES, "last successes", store_last_ok_fields,
	    struct store_last_ok),
	WRITE(PAUSE_SET, "pause write", PAUSE),
	WRITE(SCHED_LAST_SET, "scheduler state", SCHED_STATE),
	MANY(SCHED_LAST_SET_MANY, "scheduler state", SCHED_STATE,
	     store_sched_last_fields, struct store_sched_last),
	WRITE(TOKEN_PUT, "token write", TOKEN),
	WRITE(TOKEN_DROP, "token drop", TOKEN),
	[STORE_Q_TOKEN_GET] = {"token read", STORE_QK_ONE, 0,
			       &store_token_fields, sizeof(struct store_token),
			       "no cached token", true, false},
	WRITE(LEASE_DROP, "lease drop", LEASE),
	WRITE(LEASE_TAKE, "lease take", LEASE),
	WRITE(NODE_BEAT, "node write", NODE),
	WRITE(JOB_HEARTBEAT, "heartbeat", HEARTBEAT),
	/* The job READY again and its "released" row, one transaction. */
	WRITE(JOB_RELEASE, "release", RELEASE),
	/* A slot is due at its own instant: run_at = slot. */
	MANY(JOB_ENQUEUE_MANY, "enqueue", ENQUEUE, store_i64_fields, int64_t),
	/* store_job_enqueue's steps, inside store_ops.tx (the ENQUEUE
	 * commit): the insert answers the new job's id, if any. */
	MAYBE_W(JOB_INSERT, "enqueue", ENQUEUE, store_i64_fields, int64_t),
	ONE(JOB_ID_OF, "job lookup", store_i64_fields, int64_t,
	    "no job for that slot"),
	/* Always one row (STORE_SQL_NEVER when nothing is due). */
	ONE(JOB_NEXT_DUE, "next due", store_i64_fields, int64_t, "no next due"),
	/* A scheduler tick: each slot's job (each element told whether it
	 * was new), then its schedule's state, all in one transaction. */
	MANY(JOB_ENQUEUE_TICK, "enqueue", ENQUEUE, store_enqueue_row_fields,
	     struct store_enqueue_row),
	ONE(OUTBOX_GET, "outbox get", store_outbox_entry_fields,
	    struct outbox_entry, "no outbox row for target"),
	ALL(OUTBOX_LIST, "outbox list", store_outbox_row_fields,
	    struct store_outbox_row),
	/* The commit of these two is the state's (store_commit_of_send),
	 * given by the call. */
	FENCED(OUTBOX_SET, "outbox state", N),
	FENCED(OUTBOX_RELEASE, "outbox release", N),
	FENCED(OUTBOX_UNKNOWN, "outbox recovery", SEND_UNKNOWN),
	FENCED(SLOT_MARK, "slot mark", SLOT_MARK),
	MAYBE(SLOT_IS_MARKED, "slot marker read", store_i64_fields, int64_t),
	WRITE(ALERT_REALERT, "realert", ALERT_REALERT),
	ALL(ALERT_SENDS, "alert sends", store_send_fields,
	    struct store_alert_send),
	ALL(ALERT_LIST, "alert list", store_alert_fields, struct store_alert),
	ALL(DEAD_UNALERTED, "dead jobs read", store_dead_fields,
	    struct store_dead_job),
	ALL(SLA_LATE, "sla scan", store_job_fields, struct store_job),
	ALL(SLA_RUNNING, "sla scan", store_job_fields, struct store_job),
	ALL(SLA_LAST, "sla scan", store_sla_last_fields, struct store_sla_last),
	/* The alerts' steps, run inside store_ops.tx only, whose commit
	 * they take (the ALERT_* rows of the durability table): a write
	 * that answers a row (RETURNING) is a MAYBE here. */
	MAYBE_W(ALERT_INSERT, "alert raise", ALERT_RAISE, store_i64_fields,
		int64_t),
	ONE(ALERT_ID, "alert raise", store_i64_fields, int64_t,
	    "alert raise: the alert of the key vanished"),
	WRITE(ALERT_SUPERSEDE, "alert raise", ALERT_RAISE),
	WRITE(JOB_ALERTED, "alert raise", ALERT_RAISE),
	WRITE(ALERT_CLOSE, "alert close", ALERT_CLOSE),
	MAYBE(ALERT_EXISTS, "alert close", store_i64_fields, int64_t),
	WRITE(ALERT_STAGED, "alert stage", ALERT_STAGE),
	MANY(SEND_INSERT, "alert stage", ALERT_STAGE, store_str_fields,
	     const char *),
	ALL(SEND_DUE, "alert send claim", store_send_fields,
	    struct store_alert_send),
	MAYBE(SEND_TAKE, "alert send claim", store_send_taken_fields,
	      struct store_alert_send),
	WRITE(SEND_FINISH, "alert send finish", N),
	MAYBE(SEND_EXISTS, "alert send finish", store_i64_fields, int64_t),
	/* Recovery: whether any lease expired (a plain read, no write
	 * lock), then, inside store_ops.tx, a batch of the expired jobs
	 * (oldest lease first, then id; locked on PostgreSQL, SKIP LOCKED:
	 * each job is one node's) and the verdict applied to each. */
	MAYBE(ANY_EXPIRED, "recover", store_i64_fields, int64_t),
	ALL(JOB_EXPIRED, "recover", store_stall_fields, struct store_stall),
	WRITE(JOB_STALL, "recover", RECOVER),
	ALL(LEDGER_LOST, "lost-slot query", store_lost_fields,
	    struct store_lost_row),
	ALL(LEDGER_LOST_ONE, "lost-slot query", store_lost_fields,
	    struct store_lost_row),
	SHAPES8(0),
	SHAPES8(8),
	SHAPES8(16),
	SHAPES8(24),
	SHAPES8(32),
	SHAPES8(40),
	SHAPES8(48),
};

enum store_commit store_call_commit(const struct store_call *c)
{
	enum store_commit t = store_calls[c->q].commit;

	/* A call that names none (or a bad one) is made durable: zero is
	 * STORE_COMMIT_MIGRATE, whose class is ALWAYS. */
	if (t != STORE_COMMIT_N)
		return t;
	return (unsigned)c->commit < STORE_COMMIT_N ? c->commit
						    : STORE_COMMIT_MIGRATE;
}
