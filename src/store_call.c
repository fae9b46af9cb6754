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

#define ONE(q, op, t, T, missing) \
	[STORE_Q_##q] = {op, STORE_QK_ONE, 0, &(t), sizeof(T), missing}
#define MAYBE(q, op, t, T) \
	[STORE_Q_##q] = {op, STORE_QK_MAYBE, 0, &(t), sizeof(T), NULL}
#define ALL(q, op, t, T) \
	[STORE_Q_##q] = {op, STORE_QK_ALL, 0, &(t), sizeof(T), NULL}
#define WRITE(q, op, c) \
	[STORE_Q_##q] = {op, STORE_QK_WRITE, STORE_COMMIT_##c, NULL, 0, NULL}
#define FENCED(q, op, c) \
	[STORE_Q_##q] = {op, STORE_QK_FENCED, STORE_COMMIT_##c, NULL, 0, NULL}

const struct store_qdef store_calls[STORE_Q_N] = {
	WRITE(PAUSE_END, "pause end", PAUSE),
	ONE(PAUSE_GET, "pause read", store_pause_fields, struct store_pause,
	    "not paused"),
	ALL(PAUSE_ALL, "pause read", store_pause_fields, struct store_pause),
	ALL(NODES, "node read", store_node_fields, struct store_node),
	WRITE(NODE_LEAVE, "node removal", NODE),
	ONE(OUTBOX_GET, "outbox get", store_outbox_entry_fields,
	    struct outbox_entry, "no outbox row for target"),
	ALL(OUTBOX_LIST, "outbox list", store_outbox_row_fields,
	    struct store_outbox_row),
	/* The commit of these two is the state's (store_commit_of_send),
	 * given by the call; STAGE is only the table's default. */
	FENCED(OUTBOX_SET, "outbox state", STAGE),
	FENCED(OUTBOX_RELEASE, "outbox release", STAGE),
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
	ALL(SLA_LAST, "sla scan", store_sla_last_fields,
	    struct store_sla_last),
};
