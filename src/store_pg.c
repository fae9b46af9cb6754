/*
 * store_pg.c - the PostgreSQL backend of the store (libpq).
 *
 * Several surecron daemons on several machines share one database; every
 * guarantee of store.h holds across them because the database, not a
 * leader, arbitrates:
 *
 *   - Enqueue is idempotent through the unique key on (schedule, slot_ms)
 *     (INSERT ... ON CONFLICT DO NOTHING), so every node may run the
 *     scheduler for every schedule: the second insert of a slot is a no-op.
 *   - Claims lock candidate rows with FOR UPDATE SKIP LOCKED and update
 *     them in the same statement: two claimers never get the same job (or
 *     alert send) and never wait on each other. An alert is raised once
 *     by its unique key (ON CONFLICT DO NOTHING), closed and realerted by
 *     compare-and-set on its row. With the overlap rule on, a claim also
 *     holds the lock of each schedule it takes to its COMMIT and checks
 *     the rule under it (pg_claim_ruled), so claims of one `queue`
 *     schedule on two nodes still never wait on each other.
 *   - An operation of several rows is ONE statement (data-modifying CTEs:
 *     the job update and its ledger row together) or one explicit
 *     transaction.
 *   - Lease tokens come from the sequence lease_tokens, unique across
 *     nodes, not from the row.
 *
 * SQL: every statement that carries a value is prepared once per
 * connection (PQsendPrepare, lazily on first use) and run with
 * PQsendQueryPrepared under a generic plan; the few of oneshot[] run
 * unnamed (PQsendQueryParams) to be planned with their values, and
 * prune's (pg_exec_once) because each runs once a batch. Values travel
 * only as parameters. Constant statements without values (BEGIN, COMMIT,
 * DDL of the migrations, LISTEN, SET) go as simple queries
 * (PQsendQuery).
 *
 * Durability (each commit's class is the durability table's, store.h):
 * the session runs with synchronous_commit off; a writing statement takes
 * its commit's class as a boolean parameter (arg_dur) and, when durable,
 * sets synchronous_commit back to the server's default inside the
 * statement (DURABLE_IF). WAL is sequential, so a durable commit flushes
 * every earlier one with it; a crash of the server can lose the last few
 * hundred milliseconds of the others.
 *
 * Fencing (store.h): a fenced write reads the job row FOR SHARE in its
 * own statement (FENCE_CTE).
 *
 * Connection loss: an operation whose connection broke returns SC_EIO with
 * a message that says so and drops the connection; the next operation
 * reconnects (re-preparing statements lazily). Failed reconnects back off
 * (100 ms doubling to 5 s, real monotonic time); operations inside the
 * backoff window fail fast with SC_EIO. Nothing here ever exits.
 *
 * Every wait has an end (issue 42): the connection is non-blocking, every
 * statement is sent with PQsend* and every result awaited by collect() or
 * pipe_run() with poll() up to the wait's end (wait_end: the session's
 * statement_timeout plus a margin; see "Timeouts" below). A wait past it
 * abandons the connection (dropped: its outcome unknown, as a lost one),
 * logs event=store_stalled (rate-bounded) and returns SC_EIO; the next
 * operation reconnects. No cancel request is sent: libpq's PQcancel opens
 * a connection of its own without any timeout, the very thing that must
 * not hang here, and the server's statement_timeout, shorter than the
 * client's deadline, has already ended the statement if the server sees
 * it. A stop (store_stop_waits) cuts waits STORE_STOP_WAIT_MS after it.
 * The only blocking libpq call left is PQconnectdbParams, bounded by
 * connect_timeout.
 *
 * Mixed versions: a handle reads the schema's version before a claim (at
 * most every VERSION_CHECK_MS), before recovery (store.c asks:
 * pg_schema_check), and after a statement that found a table, column or
 * function missing; a version newer than SCHEMA_VERSION is SC_EVERSION,
 * so an older node stops taking jobs before it charges an attempt to any.
 *
 * Wake-ups (store_wait, store.h): enqueue, retry scheduling, release,
 * revive and stalled recovery NOTIFY channel surecron_jobs (delivered at
 * commit), which pg_wait LISTENs on. Notifications that arrive during
 * other operations are drained right away (memory stays bounded) and
 * remembered, so the next wait returns at once.
 *
 * Schema versioning: the schema_version table (one row) holds
 * SCHEMA_VERSION. To change the schema, append a migration to
 * `migrations` and bump SCHEMA_VERSION. Migrations run under a
 * transaction-scoped advisory lock, so nodes starting together migrate
 * once.
 *
 * Threading: one connection per handle (store.h: one thread at a time).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "lazylib_pq.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "store.h"
#include "url.h"

#define SCHEMA_VERSION 15
#define CHANNEL "surecron_jobs"
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define MIGRATE_LOCK_KEY "7305521930218410813" /* any constant bigint */
#define CLAIM_LOCK_KEY "7305521930218410814"   /* pg_claim_ruled's */
#define CLAIM_SCHED_SPACE "1935895404" /* CLAIM_SCHED_LOCK's first key */
/*
 * Timeouts (docs/operations.md, "Timeouts"). The session's limits, set
 * at connect unless the connection (URL `options`, PGOPTIONS) or the
 * role or database already set them: no statement of ours runs longer
 * than 30 s, waits on a lock longer than 10 s, or leaves a transaction
 * idle longer than 60 s (a connection lost in the middle of one does not
 * hold its row locks for the server's keepalive time). Every result wait
 * of the client ends at the session's statement_timeout plus a margin
 * (half of it, 1 s to 5 s): the server's own error comes first while it
 * answers; the client's deadline ends a wait the server cannot answer (a
 * flow a NAT or a firewall lost, a frozen server). With statement_timeout
 * 0 the client waits NO_LIMIT_WAIT_MS. Prune batches get LONG_OP_MS,
 * migrations no limit but the connection's keepalives and stop.
 */
#define DEF_STATEMENT_TIMEOUT "30s"
#define DEF_LOCK_TIMEOUT "10s"
#define DEF_IDLE_TX_TIMEOUT "60s"
#define DEF_TCP_USER_TIMEOUT "30000" /* ms */
#define NO_LIMIT_WAIT_MS ((int64_t)300 * 1000)
#define LONG_OP_MS ((int64_t)300 * 1000)
#define LONG_OP_TIMEOUT "300s"       /* LONG_OP_MS, as a setting */
#define STOP_CONNECT_TIMEOUT "2"     /* s: connecting after a stop */
#define POLL_SLICE_MS 250            /* a wait looks at stop this often */
#define STALL_LOG_EVERY_MS ((int64_t)10 * 1000)
/* How often a claim reads the schema's version ("Mixed versions" at the
 * top; issue 42). */
#define VERSION_CHECK_MS 1000

/* ---- schema ----------------------------------------------------------- */

static const char *const migration_1[] = {
	"CREATE TABLE jobs ("
	" id bigserial PRIMARY KEY,"
	" schedule text NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" state smallint NOT NULL DEFAULT 0,"
	" attempts integer NOT NULL DEFAULT 0,"
	" n_stalls integer NOT NULL DEFAULT 0,"
	" max_attempts integer NOT NULL,"
	" backoff smallint NOT NULL,"
	" delay_ms bigint NOT NULL,"
	" run_at_ms bigint NOT NULL,"
	" lease_token bigint NOT NULL DEFAULT 0,"
	" lease_owner text NOT NULL DEFAULT '',"
	" lease_expires_ms bigint NOT NULL DEFAULT 0,"
	" started_ms bigint NOT NULL DEFAULT 0,"
	" created_ms bigint NOT NULL,"
	" manual boolean NOT NULL DEFAULT false,"
	" UNIQUE (schedule, slot_ms))",
	/* The claim scans only READY rows in run_at order; recovery only
	 * ACTIVE rows by lease expiry. Partial indexes keep DONE rows (the
	 * bulk of the table over time) out of both. */
	"CREATE INDEX jobs_due ON jobs (run_at_ms, id) WHERE state = 0",
	"CREATE INDEX jobs_lease ON jobs (lease_expires_ms) WHERE state = 1",
	"CREATE SEQUENCE lease_tokens",
	"CREATE TABLE ledger ("
	" id bigserial PRIMARY KEY,"
	" schedule text NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" job_id bigint NOT NULL DEFAULT 0,"
	" attempt integer NOT NULL DEFAULT 0,"
	" started_ms bigint NOT NULL DEFAULT 0,"
	" finished_ms bigint NOT NULL DEFAULT 0,"
	" outcome text NOT NULL,"
	" error_class text NOT NULL DEFAULT '',"
	" error_msg text,"
	" retry_hint_ms bigint NOT NULL DEFAULT 0,"
	" details_json text)",
	"CREATE INDEX ledger_slot ON ledger (schedule, slot_ms)",
	"CREATE TABLE outbox ("
	" schedule text NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" target text NOT NULL,"
	" body text NOT NULL,"
	" state smallint NOT NULL DEFAULT 1,"
	" n_tries integer NOT NULL DEFAULT 0,"
	" sent_ms bigint NOT NULL DEFAULT 0,"
	" created_ms bigint NOT NULL,"
	" PRIMARY KEY (schedule, slot_ms, target))",
	"CREATE TABLE slot_markers ("
	" schedule text NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" completed_ms bigint NOT NULL,"
	" PRIMARY KEY (schedule, slot_ms))",
	"CREATE TABLE sched_state ("
	" schedule text PRIMARY KEY,"
	" last_slot_ms bigint NOT NULL)",
	"CREATE TABLE token_cache ("
	" provider text PRIMARY KEY,"
	" token text NOT NULL,"
	" expires_ms bigint NOT NULL)",
	NULL,
};

/*
 * 1 -> 2: a missed row once per slot, as on SQLite (store.h,
 * store_ledger_append): keep the first (lowest id) of each (schedule,
 * slot), then let a unique index refuse the next. Partial, so that
 * attempt rows never touch it.
 */
static const char *const migration_2[] = {
	"DELETE FROM ledger WHERE outcome = '" LEDGER_MISSED "' AND id NOT IN"
	" (SELECT min(id) FROM ledger WHERE outcome = '" LEDGER_MISSED "'"
	" GROUP BY schedule, slot_ms)",
	"CREATE UNIQUE INDEX ledger_missed_once ON ledger (schedule, slot_ms)"
	" WHERE outcome = '" LEDGER_MISSED "'",
	NULL,
};

/*
 * 2 -> 3: message bodies move out of the outbox row (issue 10), as on
 * SQLite: the body is written once at stage time into outbox_body and the
 * state row, updated at every send state, holds only state. (PostgreSQL
 * kept a large body out of line in TOAST and did not copy it on update,
 * but a body below the TOAST threshold, ~2 KB, was copied with every
 * state change; one design for both backends.)
 */
static const char *const migration_3[] = {
	"CREATE TABLE outbox_body ("
	" schedule text NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" target text NOT NULL,"
	" body text NOT NULL,"
	" PRIMARY KEY (schedule, slot_ms, target))",
	"INSERT INTO outbox_body (schedule, slot_ms, target, body)"
	" SELECT schedule, slot_ms, target, body FROM outbox",
	"ALTER TABLE outbox DROP COLUMN body",
	NULL,
};

/*
 * 3 -> 4: an alert is a delivery too (issue 13), as on SQLite
 * (docs/internals/store.md, schema 4 and the alert tables).
 */
static const char *const migration_4[] = {
	"ALTER TABLE jobs ADD COLUMN alerted smallint NOT NULL DEFAULT 0",
	"UPDATE jobs SET alerted = 1 WHERE state = 3",
	"CREATE INDEX jobs_unalerted ON jobs (id) WHERE state = 3"
	" AND alerted = 0",
	"CREATE TABLE alerts ("
	" id bigserial PRIMARY KEY,"
	" schedule text NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" last_slot_ms bigint NOT NULL,"
	" n_slots bigint NOT NULL DEFAULT 1,"
	" reason text NOT NULL,"
	" generation bigint NOT NULL DEFAULT 0,"
	" status smallint NOT NULL CHECK (status BETWEEN 0 AND 3),"
	" attempts integer NOT NULL DEFAULT 0,"
	" error_msg text NOT NULL DEFAULT '',"
	" job_id bigint NOT NULL DEFAULT 0,"
	" rounds integer NOT NULL DEFAULT 1,"
	" staged_rounds integer NOT NULL DEFAULT 0,"
	" created_ms bigint NOT NULL,"
	" round_ms bigint NOT NULL,"
	" closed_ms bigint NOT NULL DEFAULT 0,"
	" note text NOT NULL DEFAULT '',"
	" UNIQUE (schedule, slot_ms, reason, generation))",
	"CREATE INDEX alerts_open ON alerts (schedule, slot_ms)"
	" WHERE status = 0",
	"CREATE TABLE alert_sends ("
	" id bigserial PRIMARY KEY,"
	" alert_id bigint NOT NULL REFERENCES alerts (id),"
	" round integer NOT NULL,"
	" target text NOT NULL,"
	" state smallint NOT NULL CHECK (state BETWEEN 1 AND 6),"
	" n_tries integer NOT NULL DEFAULT 0,"
	" next_try_ms bigint NOT NULL,"
	" lease_token bigint NOT NULL DEFAULT 0,"
	" lease_expires_ms bigint NOT NULL DEFAULT 0,"
	" body text NOT NULL,"
	" created_ms bigint NOT NULL,"
	" sent_ms bigint NOT NULL DEFAULT 0,"
	" last_error text NOT NULL DEFAULT '',"
	" UNIQUE (alert_id, round, target))",
	/* A claim reads rows waiting for a try, and SENDING rows by lease
	 * expiry; SENT and ABANDONED rows weigh on neither. */
	"CREATE INDEX alert_sends_due ON alert_sends (next_try_ms)"
	" WHERE state IN (1, 4, 5)",
	"CREATE INDEX alert_sends_lease ON alert_sends (lease_expires_ms)"
	" WHERE state = 2",
	NULL,
};

/*
 * 4 -> 5: scale (issue 15), as on SQLite: ledger_period for the queries
 * over all schedules by period (and prune by age), two partial indexes
 * for the lost-slot report (lost and missed rows by period, the acks),
 * and leases, named expiring locks between nodes (the daily prune).
 */
static const char *const migration_5[] = {
	"CREATE INDEX ledger_period ON ledger (slot_ms)",
	"CREATE INDEX ledger_lost ON ledger (slot_ms)"
	" WHERE outcome IN ('lost', 'missed')",
	"CREATE INDEX ledger_acked ON ledger (schedule, slot_ms)"
	" WHERE outcome = 'acked'",
	/* The unfinished jobs by schedule, for status (as on SQLite). */
	"CREATE INDEX jobs_open ON jobs (schedule, state, run_at_ms)"
	" WHERE state <> 2",
	"CREATE TABLE leases ("
	" name text PRIMARY KEY,"
	" owner text NOT NULL,"
	" expires_ms bigint NOT NULL)",
	NULL,
};

/*
 * 5 -> 6: the last success of each schedule (issue 16), as on SQLite:
 * /metrics must not scan the ledger, and through ledger_slot a schedule
 * failing for a month has its success behind 43,000 rows. This partial
 * index holds success rows only, so store_last_successes costs one
 * descending probe per schedule, and only success rows pay for it.
 */
static const char *const migration_6[] = {
	"CREATE INDEX ledger_ok ON ledger (schedule, slot_ms)"
	" WHERE outcome = 'success'",
	NULL,
};

/*
 * 6 -> 7: pauses (issue 17; store.h, struct store_pause), as on SQLite,
 * and a paused row once per slot by a partial unique index, as
 * ledger_missed_once.
 */
static const char *const migration_7[] = {
	"CREATE TABLE pauses ("
	" schedule text PRIMARY KEY,"
	" from_ms bigint NOT NULL,"
	" until_ms bigint NOT NULL,"
	" paused_by text NOT NULL,"
	" note text NOT NULL,"
	" resumed boolean NOT NULL DEFAULT false)",
	"CREATE UNIQUE INDEX ledger_paused_once ON ledger (schedule, slot_ms)"
	" WHERE outcome = '" LEDGER_PAUSED "'",
	NULL,
};

/*
 * 7 -> 8: the skipped slots of a period, as on SQLite: the lost-slot
 * report lists them apart, and without this partial index it read every
 * row of the period.
 */
static const char *const migration_8[] = {
	"CREATE INDEX ledger_skipped ON ledger (slot_ms)"
	" WHERE outcome = '" LEDGER_SKIPPED "'",
	NULL,
};

/*
 * 8 -> 9: each schedule's newest ledger row and newest success in
 * ledger_head, as on SQLite (schema 9 there), kept by a trigger on every
 * insert; the prune never deletes a head's rows (pg_prune_sql). `status`
 * of every schedule read them with a skip scan of ledger_slot and a probe
 * per name: two index descents per schedule, about 1 s for 10,000
 * schedules over 10,000,000 rows (docs/bench.md, 2026-12-05, late). The
 * order is the ledger's "newest": (slot_ms, id), the greater wins; a row
 * of an older slot written later (a late retry's) does not replace the
 * head. The function pins its search_path, so the trigger finds this
 * schema's ledger_head whatever the session's is. The heads are filled
 * from the existing rows before the trigger exists, in the same
 * transaction as the rest.
 */
#define HEAD_NEWER "(excluded.slot_ms, excluded.id) > (h.slot_ms, h.id)"
#define HEAD_OK_NEWER                                                      \
	"excluded.ok_id IS NOT NULL AND (h.ok_id IS NULL OR"                \
	" (excluded.ok_slot_ms, excluded.ok_id) > (h.ok_slot_ms, h.ok_id))"
static const char *const migration_9[] = {
	"CREATE TABLE ledger_head ("
	" schedule text PRIMARY KEY,"
	" id bigint NOT NULL,"
	" slot_ms bigint NOT NULL,"
	" ok_id bigint,"
	" ok_slot_ms bigint)",
	"INSERT INTO ledger_head (schedule, id, slot_ms, ok_id, ok_slot_ms)"
	" WITH RECURSIVE n(name) AS ((SELECT schedule FROM ledger ORDER BY"
	" schedule LIMIT 1) UNION ALL SELECT (SELECT l.schedule FROM ledger l"
	" WHERE l.schedule > n.name ORDER BY l.schedule LIMIT 1) FROM n"
	" WHERE n.name IS NOT NULL)"
	" SELECT n.name, l.id, l.slot_ms, o.id, o.slot_ms FROM n"
	" CROSS JOIN LATERAL (SELECT id, slot_ms FROM ledger WHERE schedule ="
	" n.name ORDER BY slot_ms DESC, id DESC LIMIT 1) l"
	" LEFT JOIN LATERAL (SELECT id, slot_ms FROM ledger WHERE outcome ="
	" '" LEDGER_SUCCESS "' AND schedule = n.name ORDER BY slot_ms DESC,"
	" id DESC LIMIT 1) o ON true",
	"CREATE FUNCTION ledger_head_new() RETURNS trigger LANGUAGE plpgsql"
	" SET search_path FROM CURRENT AS $$ BEGIN"
	" INSERT INTO ledger_head AS h (schedule, id, slot_ms, ok_id,"
	" ok_slot_ms) VALUES (NEW.schedule, NEW.id, NEW.slot_ms,"
	" CASE WHEN NEW.outcome = '" LEDGER_SUCCESS "' THEN NEW.id END,"
	" CASE WHEN NEW.outcome = '" LEDGER_SUCCESS "' THEN NEW.slot_ms END)"
	" ON CONFLICT (schedule) DO UPDATE SET"
	" id = CASE WHEN " HEAD_NEWER " THEN excluded.id ELSE h.id END,"
	" slot_ms = CASE WHEN " HEAD_NEWER " THEN excluded.slot_ms"
	" ELSE h.slot_ms END,"
	" ok_id = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_id"
	" ELSE h.ok_id END,"
	" ok_slot_ms = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_slot_ms"
	" ELSE h.ok_slot_ms END;"
	" RETURN NULL; END $$",
	"CREATE TRIGGER ledger_head_new AFTER INSERT ON ledger"
	" FOR EACH ROW EXECUTE FUNCTION ledger_head_new()",
	NULL,
};

/*
 * 9 -> 10 (issue 43): each schedule's newest run row (an outcome of
 * LEDGER_RUN_OUTCOMES_SQL) in ledger_head beside its newest row, kept by
 * the same trigger, as on SQLite (schema 10 there; store.h,
 * store_sched_summaries). The heads are filled by one backward walk of
 * ledger_slot per schedule.
 */
#define HEAD_RUN_NEWER                                                     \
	"excluded.run_id IS NOT NULL AND (h.run_id IS NULL OR"              \
	" (excluded.run_slot_ms, excluded.run_id) > (h.run_slot_ms,"        \
	" h.run_id))"
static const char *const migration_10[] = {
	"ALTER TABLE ledger_head ADD COLUMN run_id bigint,"
	" ADD COLUMN run_slot_ms bigint",
	"UPDATE ledger_head h SET run_id = r.id, run_slot_ms = r.slot_ms"
	" FROM ledger_head h2 CROSS JOIN LATERAL (SELECT id, slot_ms FROM"
	" ledger WHERE schedule = h2.schedule AND outcome IN "
	LEDGER_RUN_OUTCOMES_SQL " ORDER BY slot_ms DESC, id DESC LIMIT 1) r"
	" WHERE h2.schedule = h.schedule",
	"CREATE OR REPLACE FUNCTION ledger_head_new() RETURNS trigger"
	" LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
	" INSERT INTO ledger_head AS h (schedule, id, slot_ms, ok_id,"
	" ok_slot_ms, run_id, run_slot_ms) VALUES (NEW.schedule, NEW.id,"
	" NEW.slot_ms,"
	" CASE WHEN NEW.outcome = '" LEDGER_SUCCESS "' THEN NEW.id END,"
	" CASE WHEN NEW.outcome = '" LEDGER_SUCCESS "' THEN NEW.slot_ms END,"
	" CASE WHEN NEW.outcome IN " LEDGER_RUN_OUTCOMES_SQL " THEN NEW.id"
	" END,"
	" CASE WHEN NEW.outcome IN " LEDGER_RUN_OUTCOMES_SQL " THEN"
	" NEW.slot_ms END)"
	" ON CONFLICT (schedule) DO UPDATE SET"
	" id = CASE WHEN " HEAD_NEWER " THEN excluded.id ELSE h.id END,"
	" slot_ms = CASE WHEN " HEAD_NEWER " THEN excluded.slot_ms"
	" ELSE h.slot_ms END,"
	" ok_id = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_id"
	" ELSE h.ok_id END,"
	" ok_slot_ms = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_slot_ms"
	" ELSE h.ok_slot_ms END,"
	" run_id = CASE WHEN " HEAD_RUN_NEWER " THEN excluded.run_id"
	" ELSE h.run_id END,"
	" run_slot_ms = CASE WHEN " HEAD_RUN_NEWER " THEN"
	" excluded.run_slot_ms ELSE h.run_slot_ms END;"
	" RETURN NULL; END $$",
	NULL,
};

/* 10 -> 11 (issue 43): the nodes, as on SQLite (schema 11 there). */
static const char *const migration_11[] = {
	"CREATE TABLE nodes ("
	" id text PRIMARY KEY,"
	" host text NOT NULL,"
	" pid bigint NOT NULL,"
	" version text NOT NULL,"
	" config_digest text NOT NULL,"
	" started_ms bigint NOT NULL,"
	" seen_ms bigint NOT NULL)",
	NULL,
};

/*
 * 11 -> 12: nothing. SQLite's schema 12 changed its ledger trigger only
 * (a CASE for an IN); PostgreSQL's has no counterpart. The step keeps
 * the version of both backends the same for the same schema.
 */
static const char *const migration_12[] = {
	NULL,
};

/*
 * 12 -> 13 (issue 43), as on SQLite: a staged copy of a target removed
 * from its schedule is closed as ABANDONED (6) with a ledger row of its
 * own (the outbox's state has no CHECK here: nothing to change);
 * ledger_abandoned serves the lost-slot report's read of them;
 * cron_history holds each schedule's crons in force for `audit`.
 */
static const char *const migration_13[] = {
	"CREATE INDEX ledger_abandoned ON ledger (slot_ms)"
	" WHERE outcome = '" LEDGER_ABANDONED "'",
	"CREATE TABLE cron_history ("
	" schedule text NOT NULL,"
	" from_ms bigint NOT NULL,"
	" cron text NOT NULL,"
	" tz text NOT NULL,"
	" recorded_ms bigint NOT NULL,"
	" PRIMARY KEY (schedule, from_ms))",
	NULL,
};

/* 13 -> 14 (issue 42): each node's clock offset against the server's,
 * as the node measured it (NULL: not measured). */
static const char *const migration_14[] = {
	"ALTER TABLE nodes ADD COLUMN clock_offset_ms bigint",
	NULL,
};

/*
 * 14 -> 15: nothing. SQLite's schema 15 (issue 45) narrowed its
 * jobs_open to READY and DEAD jobs and led its jobs_active with the
 * schedule, so that a completion writes one index page fewer; this
 * store's indexes are its own (store_pg.md). The step keeps the version
 * of both backends the same for the same schema.
 */
static const char *const migration_15[] = {
	NULL,
};

static const char *const *const migrations[SCHEMA_VERSION] = {
	migration_1,
	migration_2,
	migration_3,
	migration_4,
	migration_5,
	migration_6,
	migration_7,
	migration_8,
	migration_9,
	migration_10,
	migration_11,
	migration_12,
	migration_13,
	migration_14,
	migration_15,
};

/* ---- statements ------------------------------------------------------- */


#define LEDGER_COLS STORE_LEDGER_COLS
/* store_sched_summaries' schedules of the ledger: the heads (migration
 * 9), one row per schedule that has a ledger row. */
#define PG_SUM_NAMES_ALL "n(name) AS (SELECT schedule FROM ledger_head)"
#define PG_SUM_NAMES_ONE                                                   \
	"n(name) AS (SELECT schedule FROM ledger_head WHERE schedule ="      \
	" $2::text)"
/*
 * store_sched_summaries ($1 now, $2 the schedule of the _ONE form): the
 * unfinished jobs by state from the partial index jobs_open (no DONE job
 * in it), DONE as the schedule's total (over the unique index on
 * (schedule, slot_ms)) less those, and the newest run row of each
 * schedule by its head (ledger_head's run_id, issue 43, then the row by
 * primary key). Columns: name,
 * ready_due, delayed, active, dead, total, then id and LEDGER_COLS (NULL
 * without a row). Sorted as strcmp does (COLLATE "C").
 */
#define PG_SUMMARIES(names, filter)                                        \
	"WITH " names ","                                                    \
	" c AS (SELECT schedule,"                                            \
	" count(*) FILTER (WHERE state = " STORE_SQL_READY " AND run_at_ms" \
	" <= $1::bigint) rd,"                                                \
	" count(*) FILTER (WHERE state = " STORE_SQL_READY " AND run_at_ms" \
	" > $1::bigint) dl,"                                                 \
	" count(*) FILTER (WHERE state = " STORE_SQL_ACTIVE ") ac,"          \
	" count(*) FILTER (WHERE state = " STORE_SQL_DEAD ") de"             \
	" FROM jobs WHERE state <> " STORE_SQL_DONE filter                   \
	" GROUP BY schedule),"                                               \
	" t AS (SELECT schedule, count(*) tot FROM jobs WHERE true" filter   \
	" GROUP BY schedule),"                                               \
	" s(name) AS (SELECT name FROM n UNION SELECT schedule FROM t)"      \
	" SELECT s.name, COALESCE(c.rd, 0), COALESCE(c.dl, 0),"              \
	" COALESCE(c.ac, 0), COALESCE(c.de, 0), COALESCE(t.tot, 0), l.*"     \
	" FROM s LEFT JOIN c ON c.schedule = s.name"                         \
	" LEFT JOIN t ON t.schedule = s.name"                                \
	" LEFT JOIN ledger_head h ON h.schedule = s.name"                    \
	" LEFT JOIN LATERAL (SELECT id, " LEDGER_COLS " FROM ledger"         \
	" WHERE id = h.run_id LIMIT 1) l ON true ORDER BY s.name COLLATE \"C\""
/*
 * store_last_successes (issue 16): the heads' newest successes (ok_id,
 * kept by the trigger of migration 9), each row by primary key. Columns:
 * name, id, slot_ms, finished_ms; sorted as strcmp does.
 *
 * The row of each head is read by a LATERAL with LIMIT 1, here and in
 * PG_SUMMARIES: a plain join by id lets the planner pick a hash join
 * over a scan of the whole ledger once it prices ten thousand index
 * lookups above one scan, which it does with a compact ledger_head (a
 * store the daemon grew: 239 ms for `status` of 10,000 schedules at
 * 1,000,000 rows, against 47 ms; /metrics' read 110 ms against 31, and
 * ten times that at 10,000,000 rows). The LIMIT keeps the subquery
 * from being flattened into a join: one lookup per head, whatever the
 * ledger's size. test_store_pg's plan guard checks it.
 */
#define PG_LAST_OK_SQL                                                     \
	"SELECT h.schedule, l.id, l.slot_ms, l.finished_ms FROM ledger_head" \
	" h CROSS JOIN LATERAL (SELECT id, slot_ms, finished_ms FROM ledger" \
	" WHERE id = h.ok_id LIMIT 1) l ORDER BY h.schedule COLLATE \"C\""
/* A send row and its alert's fields (store_send_fields); the state
 * column and the body column are given by the statement. */
#define SEND_COLS STORE_SEND_COLS
#define NOTIFY "pg_notify('" CHANNEL "', '')"
/*
 * Evaluated by a statement that wrote something that must survive a crash
 * of the server: sets synchronous_commit back to the server's default for
 * the rest of the statement's transaction, so its commit waits for the WAL
 * flush (one round trip, unlike BEGIN; SET LOCAL; ...; COMMIT). A NULL
 * value is set_config's reset (it is not strict): the parameter's reset
 * value, the one before our session-wide SET, i.e. what the DBA
 * configured. (It used to read that value from pg_settings, which builds
 * every one of the server's ~350 settings to find one: half a millisecond
 * of the server's CPU per durable write, the server's largest cost in a
 * burst of runs.)
 */
#define DURABLE "set_config('synchronous_commit', NULL, true)"
/* DURABLE when parameter $n (arg_dur: the durability table's answer for
 * the statement's commit) is true. $n is always the statement's last
 * parameter (arg_dur the last argument), after those its comment lists. */
#define DURABLE_IF(n) "CASE WHEN $" n "::boolean THEN " DURABLE " END"

/*
 * The ACTIVE test of a statement that finds its job by id (the fence
 * below, heartbeat, finish, release, stall; `from` its transition's
 * STORE_FROM_, store.h), written so that the row is
 * read by primary key whatever the statistics say. Written "state = 1",
 * it let the generic plans, made on statistics with few ACTIVE rows, walk
 * jobs_lease (WHERE state = 1) filtered on the id instead: every ACTIVE
 * job, and between two vacuums a dead entry for every job finished
 * since, read at each heartbeat, fenced write and finish (docs/bench.md,
 * 2026-12-05, night).
 */
#define BY_ID_ACTIVE(from) "state + 0 = " from
/* CLAIM_HELD's ACTIVE test, "state > READY AND state < DONE" (below),
 * holds only while ACTIVE is the one value between them. */
_Static_assert(JOB_READY + 1 == JOB_ACTIVE && JOB_ACTIVE + 1 == JOB_DONE,
	       "CLAIM_HELD's ACTIVE range");

/*
 * The lease fence of a write made for a claimed job (store.h, fencing),
 * as the first CTE of the writing statement: f.ok is true when the handle
 * is not fenced (job id NULL) or the job is ACTIVE under the token. The
 * job row is read FOR SHARE, so in READ COMMITTED a takeover (claim,
 * recovery, finish: all UPDATE the row) either committed before and is
 * seen (the locking read follows the row to its newest version), or waits
 * until this write has committed and then finds it.
 */
#define FENCE_CTE(id, tok)                                                 \
	"f AS (SELECT (" id "::bigint IS NULL OR EXISTS (SELECT 1 FROM jobs" \
	" WHERE id = " id "::bigint AND lease_token = " tok "::bigint"      \
	" AND " BY_ID_ACTIVE(STORE_FROM_FENCE) " FOR SHARE)) AS ok)"

/*
 * The overlap rule's pieces for the claim (ST_CLAIM_PICK, ST_CLAIM_TAKE).
 * CLAIM_POL: the schedule's policy from the framed allow and skip lists
 * (store_claim_rule): 2 allow, 1 skip, 0 queue. CLAIM_HELD: a job of the
 * schedule is ACTIVE, or a READY one due by `due` comes before this one
 * in the claim order (fresh before retries, then run_at, then id). Three
 * seeks of jobs_open by schedule, each ended by the first entry that
 * matches, never a pass over the schedule's backlog (issue 45): ACTIVE
 * ("state > 0 AND state < 2": a range of jobs_open's second column that
 * holds only ACTIVE entries); for a retry, any due first attempt; and an
 * earlier job of the candidate's own class, bounded by the candidate's
 * own run_at, not by `due` (an earlier first attempt of a first attempt
 * has a run_at <= its own: the first job of a schedule finds only itself
 * in its range, a later one an earlier one at once). The READY test is
 * "state = t.state" (the candidate's state, READY): an equality, so that
 * run_at bounds the seek, and a value the planner cannot read as 0, so
 * that jobs_due (WHERE state = 0) never stands in for jobs_open: with
 * "state = 0" the generic plans read jobs_due filtered on the schedule,
 * every due job for each row a pick walked; with a separate "state = 1"
 * test they read every entry of jobs_lease (WHERE state = 1), which
 * between two vacuums holds one dead entry per job finished since
 * (docs/bench.md, 2026-12-05). Every test keeps the literal "state <> 2"
 * that makes jobs_open (WHERE state <> 2) usable, and a correlation that
 * is not an equality ("o.id <> t.id", true of every job it may find):
 * with equalities only, the planner may run a test as a hashed subplan,
 * one pass over every open job of jobs_open at each claim.
 * CLAIM_SCHED_LOCK: the schedule's lock, taken only
 * if free, held to the end of the transaction. Its two-key form has a
 * key space of its own, apart from the one-key locks (CLAIM_LOCK_KEY,
 * MIGRATE_LOCK_KEY); two schedules whose names hash alike share a lock,
 * which costs a skipped turn, never a wrong claim.
 */
#define CLAIM_POL(t, allow, skip)                                            \
	"CASE WHEN strpos(" allow "::text, chr(10) || " t ".schedule"       \
	" || chr(10)) > 0 THEN 2 WHEN strpos(" skip "::text, chr(10) || "   \
	t ".schedule || chr(10)) > 0 THEN 1 ELSE 0 END"
#define CLAIM_HELD(t, retry, due)                                            \
	"(" CLAIM_SEEK("o.schedule = " t ".schedule AND o.state <> "         \
	STORE_SQL_DONE " AND o.state > " STORE_SQL_READY " AND o.state < "   \
	STORE_SQL_DONE " AND o.id <> " t ".id")                             \
	" OR (" retry " AND " CLAIM_SEEK("o.schedule = " t ".schedule AND"  \
	" o.state <> " STORE_SQL_DONE " AND o.state = " t ".state AND"      \
	" o.run_at_ms <= " due " AND o.attempts = 0 AND o.id <> " t ".id")  \
	") OR " CLAIM_SEEK("o.schedule = " t ".schedule AND o.state <> " \
	STORE_SQL_DONE " AND"                                               \
	" o.state = " t ".state AND o.run_at_ms <= " t ".run_at_ms AND"     \
	" (o.attempts > 0) = (" retry ") AND (o.run_at_ms, o.id) < ("       \
	t ".run_at_ms, " t ".id)") ")"
/* Whether a job of jobs o matches cond: a scalar subquery in jobs_open's
 * order, LIMIT 1, not an EXISTS (whose ORDER BY the planner drops). The
 * order leaves the planner one cheap path, the seek of jobs_open: any
 * other must read and sort every match. As an EXISTS, with a deep backlog
 * of one schedule in the statistics (nearly every row "matches"), the
 * generic plan ran the test as a scan of jobs expected to stop at once,
 * and the first job of a schedule, which matches nothing, read the whole
 * table at each claim (issue 45: 10 ms with 100,000 due, growing with
 * the DONE rows). COALESCE: no row is false, never NULL. */
#define CLAIM_SEEK(cond)                                                     \
	"COALESCE((SELECT true FROM jobs o WHERE " cond " ORDER BY"          \
	" o.schedule, o.state, o.run_at_ms LIMIT 1), false)"
/* The schedules this node knows (store_claim_known_set, issue 43): with
 * known true, only those in the connection's temporary table
 * claim_known (known_sync loads it when the set changes, issue 45: the
 * list, ~2 MB of JSON at 100,000 schedules, was sent and hashed at every
 * claim); false: any. A scalar subquery, one probe of the table's key
 * per row walked, never a join that could reorder the walk nor a hash
 * built at each run. */
#define CLAIM_KNOWN(t, known)                                                \
	"(" known "::boolean IS NOT TRUE OR (SELECT true FROM"              \
	" pg_temp.claim_known k WHERE k.name = " t ".schedule ORDER BY"     \
	" k.name LIMIT 1))"
#define CLAIM_SCHED_LOCK(t)                                                  \
	"pg_try_advisory_xact_lock(" CLAIM_SCHED_SPACE ", hashtext(" t      \
	".schedule))"

enum stmt {
	/* 0 .. STORE_Q_N - 1: the one-statement operations (store.h) */
	ST_CLAIM = STORE_Q_N,
	ST_CLAIM_PLAN,
	ST_CLAIM_OPEN,
	ST_CLAIM_PICK,
	ST_CLAIM_TAKE,
	ST_KNOWN_LOAD,
	ST_FINISH,
	ST_SERVER_NOW,
	ST_SUMMARIES,
	ST_SUMMARIES_ONE,
	ST_SLOT_LOOK,
	ST_COUNT
};

/* The lost-slot report (store_ledger_lost): lost and missed rows of
 * the period (ledger_lost), each with the finish of the newest success
 * row of its (schedule, slot) through ledger_slot; column 12 is
 * recovered_ms. A generic plan serves: the schedule term is a filter on
 * the few lost rows, never an index choice, so both ids (every schedule,
 * one) run this one text. */
#define PG_LEDGER_LOST_SQL \
	"SELECT l.id, l.schedule, l.slot_ms, l.job_id, l.attempt," \
	" l.started_ms, l.finished_ms, l.outcome, l.error_class, l.error_msg," \
	" l.retry_hint_ms, l.details_json, COALESCE((SELECT CASE WHEN" \
	" s.finished_ms <> 0 THEN s.finished_ms ELSE 1 END FROM ledger s" \
	" WHERE s.schedule = l.schedule AND s.slot_ms = l.slot_ms AND" \
	" s.outcome = '" LEDGER_SUCCESS "' ORDER BY s.id DESC LIMIT 1), 0)" \
	" FROM ledger l WHERE l.outcome IN ('" LEDGER_LOST "', '" \
	LEDGER_MISSED "') AND l.slot_ms >= $2::bigint AND l.slot_ms <" \
	" $3::bigint AND ($1::text IS NULL OR l.schedule = $1::text)" \
	" ORDER BY l.id"

static const char *const sql[ST_COUNT] = {
	/* store_job_enqueue's steps, inside pg_tx (its commit's durability
	 * set at BEGIN). A new job wakes the waiting workers; the
	 * notification is delivered at COMMIT. ON CONFLICT waits for a
	 * concurrent insert of the slot to commit, so JOB_ID_OF then sees
	 * its row. */
	[STORE_Q_JOB_INSERT] =
	"WITH i AS (INSERT INTO jobs (schedule, slot_ms, max_attempts,"
	" backoff, delay_ms, run_at_ms, created_ms, manual)"
	" VALUES ($1, $2::bigint, $3::integer, $4::smallint, $5::bigint,"
	" $6::bigint, $7::bigint, $8::boolean)"
	" ON CONFLICT (schedule, slot_ms) DO NOTHING RETURNING id)"
	" SELECT id, " NOTIFY ", " DURABLE_IF("9") " FROM i",
	[STORE_Q_JOB_ID_OF] =
	"SELECT id FROM jobs WHERE schedule = $1 AND slot_ms = $2::bigint",
	[STORE_Q_JOB_ENQUEUE_MANY] =
	"WITH i AS (INSERT INTO jobs (schedule, slot_ms, max_attempts,"
	" backoff, delay_ms, run_at_ms, created_ms, manual)"
	" SELECT $2, s, $3::integer, $4::smallint, $5::bigint, s,"
	" $6::bigint, false FROM unnest($1::bigint[]) AS s"
	" ON CONFLICT (schedule, slot_ms) DO NOTHING RETURNING 1)"
	" SELECT count(*), CASE WHEN count(*) > 0 THEN " NOTIFY " END,"
	" CASE WHEN count(*) > 0 THEN " DURABLE_IF("7") " END FROM i",
	/* A scheduler tick: $1 names, $2 slots, $3 attempts, $4 backoff,
	 * $5 delay, $6 last slots (parallel arrays), $7 now. The jobs and the
	 * states in one statement (one transaction, one round trip; data-
	 * modifying CTEs all run). Answer: the 1-based position of each slot
	 * that got a new job, a row each; the waiting workers woken once. */
	[STORE_Q_JOB_ENQUEUE_TICK] =
	"WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[],"
	" $3::integer[], $4::smallint[], $5::bigint[], $6::bigint[])"
	" WITH ORDINALITY AS v(schedule, slot_ms, attempts, backoff, delay_ms,"
	" last_ms, ord)),"
	" i AS (INSERT INTO jobs (schedule, slot_ms, max_attempts, backoff,"
	" delay_ms, run_at_ms, created_ms, manual)"
	" SELECT schedule, slot_ms, attempts, backoff, delay_ms, slot_ms,"
	" $7::bigint, false FROM v ORDER BY ord"
	" ON CONFLICT (schedule, slot_ms) DO NOTHING"
	" RETURNING schedule, slot_ms),"
	" s AS (INSERT INTO sched_state (schedule, last_slot_ms)"
	" SELECT schedule, max(last_ms) FROM v GROUP BY schedule"
	" ON CONFLICT (schedule) DO UPDATE"
	" SET last_slot_ms = GREATEST(sched_state.last_slot_ms,"
	" EXCLUDED.last_slot_ms) RETURNING 1)"
	" SELECT v.ord, (SELECT " NOTIFY "), (SELECT " DURABLE_IF("8") ")"
	" FROM v JOIN i ON i.schedule = v.schedule AND i.slot_ms = v.slot_ms",
	/* $1 now, $2 max, $3 worker, $4 lease_ms, $5 ahead_ms. The rule
	 * off (store_overlap_set): every job as `allow`, in the claim order
	 * (store.h: fresh jobs first). The last column but one is the
	 * overlapped flag, never set here. Two walks of jobs_due in its
	 * order (docs/internals/store.md, "Claim order"), fresh jobs (f)
	 * then retries (r, only for what f left of $2), each stopped by its
	 * LIMIT. The update
	 * reads the taken rows by the addresses the walks locked (a TID
	 * scan, as ST_CLAIM_TAKE's, cheaper than any other path in every
	 * estimate; the id test guards a freed address): joined to the
	 * walks by id, the generic plan hashed the whole table, DONE rows
	 * too, at each claim (4 to 8 ms a claim of 32 with 20,000 jobs in
	 * bench_pg), and an id list planned on a small table was a scan of
	 * every row. Planned and run after ST_CLAIM_PLAN, in one
	 * transaction (pg_job_claim). */
	[ST_CLAIM] =
	"WITH f AS (SELECT id, ctid AS tid FROM jobs WHERE state = "
	STORE_FROM_CLAIM
	" AND attempts = 0 AND run_at_ms <= $1::bigint + $5::bigint"
	" ORDER BY run_at_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED),"
	" r AS (SELECT id, ctid AS tid FROM jobs WHERE state = "
	STORE_FROM_CLAIM
	" AND attempts > 0 AND run_at_ms <= $1::bigint + $5::bigint"
	" ORDER BY run_at_ms, id LIMIT $2 - (SELECT count(*) FROM f)"
	" FOR UPDATE SKIP LOCKED),"
	" c AS (SELECT id, tid FROM f UNION ALL SELECT id, tid FROM r)"
	" UPDATE jobs j SET state = " STORE_SQL_ACTIVE ","
	" attempts = j.attempts + 1,"
	" lease_token = nextval('lease_tokens'), lease_owner = $3,"
	" lease_expires_ms = $1::bigint + $4::bigint,"
	" started_ms = GREATEST($1::bigint, j.run_at_ms)"
	" WHERE j.ctid = ANY(ARRAY(SELECT tid FROM c))"
	" AND j.id = ANY(ARRAY(SELECT id FROM c))"
	" RETURNING " STORE_JOB_COLS_J ", false, " DURABLE_IF("6"),
	/*
	 * The claim with the overlap rule on (store.h, store_overlap_set),
	 * in two statements of one transaction (pg_claim_ruled says why):
	 * a queue job (CLAIM_POL 0) only when CLAIM_HELD is false, a skip
	 * job always, flagged when held.
	 *
	 * ST_CLAIM_PICK: $1 now, $2 max, $3 ahead_ms, $4 allow, $5 skip, $6
	 * filter on the known schedules (CLAIM_KNOWN). Walks
	 * the due READY jobs in the claim order and returns (id and row
	 * address, for ST_CLAIM_TAKE) up to $2 whose schedule lock
	 * (CLAIM_SCHED_LOCK) it could take without waiting; a schedule
	 * another claimer holds is passed over, as SKIP LOCKED
	 * passes over rows. The claim order is two walks of jobs_due, fresh
	 * jobs then retries, so that a claim reads a few rows, not every due
	 * one (a sort of them all cost 1.3 ms a claim with 1,576 due). The
	 * lock is taken in the outer WHERE, after each ORDER BY: a volatile
	 * condition is never pushed below a sort, so only the rows walked
	 * until LIMIT are locked. A CASE, not AND/OR, because only CASE fixes
	 * the order of evaluation. The walks' order holds because the Append
	 * of a UNION ALL runs its branches one after the other, unless it is
	 * parallel, which pg_claim_ruled turns off for its transaction.
	 */
	/*
	 * Both claims' transactions, after their BEGIN: no bitmap scan in
	 * the plans made in them (ST_CLAIM's, or ST_CLAIM_PICK's and
	 * ST_CLAIM_TAKE's: each planned, and planned again when the
	 * statistics change, in its transaction, after this), so that the
	 * walks of jobs_due are its ordered seeks whatever the statistics
	 * say. The walks' "attempts" test is no column of jobs_due: on a
	 * table never analyzed (a new store, and bench_pg's, until
	 * autovacuum gets to it a minute later at the soonest) the planner
	 * guesses that 1 row in 200 passes it, expects a handful of due
	 * rows, and the generic plans read every due job by a bitmap scan
	 * and sorted them, at each claim: 6 ms a claim of 32 with 20,000
	 * due (0.5 ms as a walk), 8 ms a pick (0.2 ms; docs/bench.md,
	 * 2026-12-07). A sort after a sequential scan reads every row of
	 * jobs, DONE ones too, and is never the cheaper plan. Sorts stay
	 * allowed: with enable_sort off too, the take (whose rows come in
	 * the claim order by a sort) took 350 ms with 20,000 DONE rows.
	 */
#define CLAIM_PLAN_SETS "set_config('enable_bitmapscan', 'off', true)"
	[ST_CLAIM_PLAN] = "SELECT " CLAIM_PLAN_SETS,
	/* The ruled claim's transaction, after its BEGIN: CLAIM_PLAN_SETS,
	 * no parallel plan (ST_CLAIM_PICK's order relies on it) and the
	 * shared lock of pg_claim_ruled. One prepared statement: the SET
	 * LOCAL and the lock as statements of their own were parsed and
	 * planned anew at every claim. */
	[ST_CLAIM_OPEN] =
	"SELECT " CLAIM_PLAN_SETS ","
	" set_config('max_parallel_workers_per_gather', '0', true),"
	" pg_advisory_xact_lock_shared(" CLAIM_LOCK_KEY ")",
	[ST_CLAIM_PICK] =
	"SELECT k.id, k.tid FROM ((SELECT j.id, j.ctid AS tid, j.schedule,"
	" j.state, j.run_at_ms, false AS retry, "
	CLAIM_POL("j", "$4", "$5") " AS pol FROM jobs j WHERE j.state = "
	STORE_FROM_CLAIM
	" AND j.attempts = 0 AND j.run_at_ms <= $1::bigint + $3::bigint"
	" AND " CLAIM_KNOWN("j", "$6") " ORDER BY j.run_at_ms, j.id) UNION ALL"
	" (SELECT j.id, j.ctid, j.schedule, j.state, j.run_at_ms, true, "
	CLAIM_POL("j", "$4", "$5") " FROM jobs j WHERE j.state = "
	STORE_FROM_CLAIM
	" AND j.attempts > 0 AND j.run_at_ms <= $1::bigint + $3::bigint"
	" AND " CLAIM_KNOWN("j", "$6") " ORDER BY j.run_at_ms, j.id)) k"
	" WHERE CASE WHEN k.pol = 2 THEN true"
	" WHEN k.pol = 0 AND " CLAIM_HELD("k", "k.retry", "$1::bigint + $3::bigint")
	" THEN false ELSE " CLAIM_SCHED_LOCK("k") " END LIMIT $2",
	/*
	 * ST_CLAIM_TAKE: $1 now, $2 the picked ids ("{1,2}"), $3 worker,
	 * $4 lease_ms, $5 ahead_ms, $6 allow, $7 skip, $8 the picked rows'
	 * addresses (ctid, "{\"(0,1)\",\"(0,2)\"}"). Checks the rule again
	 * for the picked jobs in a snapshot taken after their schedules'
	 * locks were, and claims those that still pass; the rows in the claim
	 * order. The last column but one is the overlapped flag.
	 *
	 * Every read of jobs here goes by a picked address or id, whatever
	 * the statistics say: the row addresses make a TID scan (a few
	 * page reads, cheaper than any index walk in every estimate), and
	 * the READY test is written "state + 0 = 0" so that no partial index
	 * (jobs_due, jobs_open) can stand in for it; the rows are locked in
	 * that same scan. Joined by id, or with "state = 0", the generic plan
	 * made on a table with few READY rows read every READY job at least
	 * once a take: 0.4 ms a take with 1,576 due on a fresh table; after
	 * an ANALYZE of DONE rows, 6 ms with 2,000 due and over 100 s with
	 * 20,000 (docs/bench.md, 2026-12-05, night). An address is only a
	 * hint: a row updated since the pick has moved, so its old address
	 * shows nothing in this snapshot and the job is left to the next
	 * pick (it was claimed, or changed); a freed address taken by another
	 * row fails the id test.
	 */
	[ST_CLAIM_TAKE] =
	"WITH c AS (SELECT k.id, k.tid, k.pol = 1 AND k.held AS flag FROM"
	" (SELECT j.id, j.ctid AS tid, " CLAIM_POL("j", "$6", "$7") " AS pol, "
	CLAIM_HELD("j", "j.attempts > 0", "$1::bigint + $5::bigint") " AS held"
	" FROM jobs j WHERE j.ctid = ANY($8::tid[]) AND j.id = ANY($2::bigint[])"
	" AND j.state + 0 = " STORE_FROM_CLAIM
	" AND j.run_at_ms <= $1::bigint + $5::bigint) k"
	" WHERE k.pol > 0 OR NOT k.held FOR UPDATE OF k SKIP LOCKED),"
	" u AS (UPDATE jobs j SET state = " STORE_SQL_ACTIVE ","
	" attempts = j.attempts + 1,"
	" lease_token = nextval('lease_tokens'), lease_owner = $3,"
	" lease_expires_ms = $1::bigint + $4::bigint,"
	" started_ms = GREATEST($1::bigint, j.run_at_ms)"
	" FROM c WHERE j.ctid = c.tid AND j.id = c.id"
	" RETURNING " STORE_JOB_COLS_J
	", c.flag, " DURABLE_IF("9") " AS durable)"
	" SELECT * FROM u ORDER BY attempts > 1, run_at_ms, id",
	/* $1 the known schedules, a JSON array (known_sync). */
	[ST_KNOWN_LOAD] =
	"INSERT INTO pg_temp.claim_known SELECT DISTINCT"
	" json_array_elements_text($1::text::json)",
	[STORE_Q_JOB_HEARTBEAT] =
	"UPDATE jobs SET lease_expires_ms = $3::bigint + $4::bigint"
	" WHERE id = $1 AND " BY_ID_ACTIVE(STORE_FROM_HEARTBEAT)
	" AND lease_token = $2 RETURNING " DURABLE_IF("5"),
	/* $1 id, $2 token, $3 new state, $4 run_at, $5 now, $6..$10 ledger,
	 * $11 the slot's marker too (DONE only), $12 durable. A WITH's
	 * write runs whether or not the rest reads it; both read u, so
	 * neither is written when the fence refuses. */
	[ST_FINISH] =
	"WITH u AS (UPDATE jobs SET state = $3::smallint,"
	" run_at_ms = CASE WHEN $3::smallint = " STORE_SQL_READY " THEN $4::bigint"
	" ELSE run_at_ms END, lease_expires_ms = 0"
	" WHERE id = $1 AND " BY_ID_ACTIVE(STORE_FROM_FINISH)
	" AND lease_token = $2"
	" RETURNING id, schedule, slot_ms, attempts, started_ms),"
	" m AS (INSERT INTO slot_markers (schedule, slot_ms, completed_ms)"
	" SELECT schedule, slot_ms, $5::bigint FROM u WHERE $11::boolean"
	" ON CONFLICT (schedule, slot_ms) DO NOTHING)"
	" INSERT INTO ledger (" LEDGER_COLS ")"
	" SELECT schedule, slot_ms, id, attempts, started_ms, $5::bigint,"
	" $6, $7, $8, $9::bigint, $10 FROM u"
	" RETURNING id, CASE WHEN $3::smallint = " STORE_SQL_READY " THEN "
	NOTIFY " END,"
	" " DURABLE_IF("12"),
	/* $1 id, $2 token, $3 now, $4 run_at, $5 error class, $6 message,
	 * $7 durable. */
	[STORE_Q_JOB_RELEASE] =
	"WITH u AS (UPDATE jobs SET state = " STORE_SQL_READY ","
	" run_at_ms = $4::bigint,"
	" attempts = attempts - 1, lease_expires_ms = 0"
	" WHERE id = $1 AND " BY_ID_ACTIVE(STORE_FROM_RELEASE)
	" AND lease_token = $2"
	" RETURNING id, schedule, slot_ms, attempts, started_ms)"
	" INSERT INTO ledger (" LEDGER_COLS ")"
	" SELECT schedule, slot_ms, id, attempts + 1, started_ms, $3::bigint,"
	" '" LEDGER_RELEASED "', $5, $6, 0, NULL FROM u"
	" RETURNING id, " NOTIFY ", " DURABLE_IF("7"),
	/* $1 now. Whether any lease expired: the common answer, no, costs
	 * one read and no transaction. */
	[STORE_Q_ANY_EXPIRED] =
	"SELECT 1 FROM jobs WHERE state = " STORE_FROM_RECOVER
	" AND lease_expires_ms < $1 LIMIT 1",
	/* $1 now, $2 the batch. The expired leases, oldest first, locked
	 * until the recovery's COMMIT (store.c runs it inside pg_tx); rows
	 * locked by another node's recovery are skipped (each job is one
	 * node's: store.h, store_job_recover_dead). */
	[STORE_Q_JOB_EXPIRED] =
	"SELECT " STORE_STALL_COLS " FROM jobs"
	" WHERE state = " STORE_FROM_RECOVER " AND lease_expires_ms < $1"
	" ORDER BY lease_expires_ms, id LIMIT $2::bigint"
	" FOR UPDATE SKIP LOCKED",
	/* $1 id, $2 the verdict's state (READY or DEAD), $3 now. A job
	 * READY again wakes the waiting workers (delivered at COMMIT). */
	[STORE_Q_JOB_STALL] =
	"UPDATE jobs SET n_stalls = n_stalls + 1, state = $2::smallint,"
	" run_at_ms = $3::bigint, lease_expires_ms = 0"
	" WHERE id = $1::bigint AND " BY_ID_ACTIVE(STORE_FROM_RECOVER)
	" RETURNING (CASE WHEN $2::smallint = " STORE_SQL_READY " THEN "
	NOTIFY " END)::text, " DURABLE_IF("4"),
	[STORE_Q_JOB_GET] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE id = $1",
	[STORE_Q_JOB_FIND] =
	"SELECT " STORE_JOB_COLS " FROM jobs WHERE schedule = $1 AND "
	"slot_ms = $2",
	[STORE_Q_JOB_REVIVE] =
	"UPDATE jobs SET state = " STORE_SQL_READY ", max_attempts = attempts +"
	" CASE WHEN $3::int > 0 THEN $3::int ELSE max_attempts END,"
	" n_stalls = 0, run_at_ms = $2::bigint, lease_expires_ms = 0,"
	" alerted = 0"
	" WHERE id = $1 AND state = " STORE_FROM_REVIVE " RETURNING id, "
	NOTIFY ", "
	DURABLE_IF("4"),
	[STORE_Q_JOB_LEASE_CLAMP] =
	"UPDATE jobs SET lease_expires_ms = $1::bigint + $2::bigint"
	" WHERE state = " STORE_FROM_LEASE_CLAMP
	" AND lease_expires_ms > $1::bigint + $2::bigint + $3::bigint"
	" RETURNING " DURABLE_IF("4"),
	[ST_SERVER_NOW] =
	"SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
	/* $1: filter on the known schedules (CLAIM_KNOWN, issue 43; pg_call
	 * loads them first, known_first): the first READY job the claim may
	 * take, by a walk of jobs_due in order that passes over the others;
	 * INT64_MAX when nothing is due. */
	[STORE_Q_JOB_NEXT_DUE] =
	"SELECT COALESCE(LEAST((SELECT j.run_at_ms FROM jobs j WHERE j.state = "
	STORE_FROM_CLAIM " AND "
	CLAIM_KNOWN("j", "$1") " ORDER BY j.run_at_ms LIMIT 1),"
	" (SELECT min(lease_expires_ms) FROM jobs WHERE state = "
	STORE_FROM_RECOVER ")), " STORE_SQL_NEVER ")",
	/* O(rows of the schedule): fine for status pages, not a hot path. */
	[STORE_Q_JOB_COUNTS] =
	"SELECT count(*) FILTER (WHERE state = " STORE_SQL_READY
	" AND run_at_ms <= $2),"
	" count(*) FILTER (WHERE state = " STORE_SQL_READY " AND run_at_ms > $2),"
	" count(*) FILTER (WHERE state = " STORE_SQL_ACTIVE "),"
	" count(*) FILTER (WHERE state = " STORE_SQL_DONE "),"
	" count(*) FILTER (WHERE state = " STORE_SQL_DEAD ")"
	" FROM jobs WHERE ($1::text IS NULL OR schedule = $1::text)",
	/* $12, $13: the fence. Answer: ok, rows written, -. */
	[STORE_Q_LEDGER_FENCED] =
	"WITH " FENCE_CTE("$12", "$13") ","
	" i AS (INSERT INTO ledger (" LEDGER_COLS ") SELECT $1::text,"
	" $2::bigint, $3::bigint, $4::integer, $5::bigint, $6::bigint,"
	" $7::text, $8::text, $9::text, $10::bigint, $11::text FROM f"
	" WHERE f.ok RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM i), " DURABLE_IF("14")
	" FROM f",
	/* A missed row for a slot that has one already is dropped: the
	 * conflict target infers the partial index ledger_missed_once, so
	 * no other conflict is ignored. No row returned: not written. */
	[STORE_Q_LEDGER_MISSED] =
	"INSERT INTO ledger (" LEDGER_COLS ") VALUES ($1, $2::bigint,"
	" $3::bigint, $4::integer, $5::bigint, $6::bigint, $7::text, $8, $9,"
	" $10::bigint, $11) ON CONFLICT (schedule, slot_ms)"
	" WHERE outcome = '" LEDGER_MISSED "' DO NOTHING RETURNING "
	DURABLE_IF("12"),
	[STORE_Q_LEDGER_FREE] =
	"INSERT INTO ledger (" LEDGER_COLS ") VALUES ($1, $2::bigint,"
	" $3::bigint, $4::integer, $5::bigint, $6::bigint, $7::text, $8, $9,"
	" $10::bigint, $11) RETURNING " DURABLE_IF("12"),
	/* Rows as one array per column: one statement, so all or none. The
	 * conflict clause only ever matches a missed row (the partial index
	 * ledger_missed_once). */
	[STORE_Q_LEDGER_MANY] =
	"WITH i AS (INSERT INTO ledger (" LEDGER_COLS ") SELECT * FROM"
	" unnest($1::text[], $2::bigint[], $3::bigint[], $4::integer[],"
	" $5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::text[],"
	" $10::bigint[], $11::text[]) ON CONFLICT (schedule, slot_ms)"
	" WHERE outcome = '" LEDGER_MISSED "' DO NOTHING RETURNING outcome)"
	" SELECT count(*), " DURABLE_IF("12") " FROM i",
	[STORE_Q_LEDGER_LOST] = PG_LEDGER_LOST_SQL,
	[STORE_Q_LEDGER_LOST_ONE] = PG_LEDGER_LOST_SQL,
	[ST_SUMMARIES] = PG_SUMMARIES(PG_SUM_NAMES_ALL, ""),
	[ST_SUMMARIES_ONE] = PG_SUMMARIES(PG_SUM_NAMES_ONE,
					  " AND schedule = $2::text"),
	[STORE_Q_LAST_SUCCESSES] = PG_LAST_OK_SQL,
	/* $6, $7: the fence. Answer: ok, rows inserted, -. */
	[STORE_Q_OUTBOX_PUT] =
	"WITH " FENCE_CTE("$6", "$7") ","
	" i AS (INSERT INTO outbox (schedule, slot_ms, target, state,"
	" created_ms) SELECT $1::text, $2::bigint, $3::text, "
	STORE_SQL_PENDING ","
	" $5::bigint FROM f WHERE f.ok"
	" ON CONFLICT (schedule, slot_ms, target) DO NOTHING RETURNING 1),"
	" b AS (INSERT INTO outbox_body (schedule, slot_ms, target, body)"
	" SELECT $1::text, $2::bigint, $3::text, $4::text FROM i"
	" ON CONFLICT (schedule, slot_ms, target) DO NOTHING RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM i), CASE WHEN f.ok AND"
	" EXISTS (SELECT 1 FROM b) THEN " DURABLE_IF("8") " END FROM f",
	[STORE_Q_OUTBOX_GET] =
	"SELECT o.state, o.n_tries, o.sent_ms, b.body FROM outbox o"
	" LEFT JOIN outbox_body b ON b.schedule = o.schedule"
	" AND b.slot_ms = o.slot_ms AND b.target = o.target"
	" WHERE o.schedule = $1 AND o.slot_ms = $2 AND o.target = $3",
	/* $5 now, $6, $7: the fence, $8 durable. Answer: ok, rows
	 * changed, -. */
	[STORE_Q_OUTBOX_SET] =
	"WITH " FENCE_CTE("$6", "$7") ","
	" u AS (UPDATE outbox SET state = $4::smallint,"
	" n_tries = n_tries + CASE WHEN $4::smallint = " STORE_SQL_SENDING
	" THEN 1 ELSE 0 END,"
	" sent_ms = CASE WHEN $4::smallint = " STORE_SQL_SENT " THEN $5::bigint"
	" ELSE sent_ms END"
	" WHERE schedule = $1 AND slot_ms = $2 AND target = $3"
	" AND state NOT IN (" STORE_BUT_OUTBOX_SET ") AND (SELECT ok FROM f)"
	" RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM u), " DURABLE_IF("8")
	" FROM f",
	/* $4 SENT or FAILED, $5 now, $6, $7: the fence, $8 durable.
	 * Answer: ok, rows changed, -. */
	[STORE_Q_OUTBOX_RELEASE] =
	"WITH " FENCE_CTE("$6", "$7") ","
	" u AS (UPDATE outbox SET state = $4::smallint,"
	" sent_ms = CASE WHEN $4::smallint = " STORE_SQL_SENT " THEN $5::bigint"
	" ELSE sent_ms END"
	" WHERE schedule = $1 AND slot_ms = $2 AND target = $3"
	" AND state = " STORE_FROM_OUTBOX_RELEASE " AND (SELECT ok FROM f)"
	" RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM u), " DURABLE_IF("8")
	" FROM f",
	/* $3 now, which this table keeps no column for (SQLite's
	 * updated_ms): answered, so that its type is known. $4, $5: the
	 * fence, $6 durable. Answer: ok, rows changed, -, now. */
	[STORE_Q_OUTBOX_UNKNOWN] =
	"WITH " FENCE_CTE("$4", "$5") ","
	" u AS (UPDATE outbox SET state = " STORE_SQL_UNKNOWN
	" WHERE schedule = $1 AND slot_ms = $2 AND state = "
	STORE_FROM_OUTBOX_UNKNOWN
	" AND (SELECT ok FROM f) RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM u), CASE WHEN f.ok THEN "
	DURABLE_IF("6") " END, $3::bigint FROM f",
	[STORE_Q_OUTBOX_LIST] =
	"SELECT target, state, n_tries FROM outbox"
	" WHERE schedule = $1 AND slot_ms = $2 ORDER BY target COLLATE \"C\"",
	/* $4 the state it must still be in, $5 now (typed only: no column
	 * keeps it here), $6..$16 its ledger row, $17, $18: the fence, $19
	 * durable. Answer: ok, rows closed, -, -. */
	[STORE_Q_OUTBOX_ABANDON] =
	"WITH " FENCE_CTE("$17", "$18") ","
	" u AS (UPDATE outbox SET state = " STORE_SQL_ABANDONED
	" WHERE schedule = $1 AND slot_ms = $2::bigint AND target = $3"
	" AND state = $4::smallint AND (SELECT ok FROM f) RETURNING 1),"
	" i AS (INSERT INTO ledger (" LEDGER_COLS ") SELECT $6::text,"
	" $7::bigint, $8::bigint, $9::integer, $10::bigint, $11::bigint,"
	" $12::text, $13::text, $14::text, $15::bigint, $16::text FROM u"
	" RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM u), $5::bigint,"
	" " DURABLE_IF("19") " FROM f",
	/* $1..$4 arrays (schedule, from, cron, tz), $5 now, $6 durable.
	 * Answer: the records written. */
	[STORE_Q_CRON_NOTE] =
	"WITH i AS (INSERT INTO cron_history (schedule, from_ms, cron, tz,"
	" recorded_ms) SELECT v.s, v.f, v.c, v.z, $5::bigint FROM"
	" unnest($1::text[], $2::bigint[], $3::text[], $4::text[])"
	" AS v(s, f, c, z) WHERE NOT EXISTS (SELECT 1 FROM (SELECT h.cron,"
	" h.tz FROM cron_history h WHERE h.schedule = v.s ORDER BY"
	" h.from_ms DESC LIMIT 1) l WHERE l.cron = v.c AND l.tz = v.z)"
	" ON CONFLICT (schedule, from_ms) DO NOTHING RETURNING 1)"
	" SELECT count(*), " DURABLE_IF("6") " FROM i",
	[STORE_Q_CRON_HISTORY] =
	"SELECT schedule, from_ms, cron, tz, recorded_ms FROM cron_history"
	" WHERE schedule = $1 ORDER BY from_ms",
	/* $4, $5: the fence. Answer: ok, rows inserted, -. */
	[STORE_Q_SLOT_MARK] =
	"WITH " FENCE_CTE("$4", "$5") ","
	" i AS (INSERT INTO slot_markers (schedule, slot_ms, completed_ms)"
	" SELECT $1::text, $2::bigint, $3::bigint FROM f WHERE f.ok"
	" ON CONFLICT (schedule, slot_ms) DO NOTHING RETURNING 1)"
	" SELECT f.ok, (SELECT count(*) FROM i), CASE WHEN f.ok THEN "
	DURABLE_IF("6") " END FROM f",
	[STORE_Q_SLOT_IS_MARKED] =
	"SELECT 1 FROM slot_markers WHERE schedule = $1 AND slot_ms = $2",
	/* $3: the targets (text[]), in order. One row: marked (0/1), then
	 * the outbox row of the first of them that has one, NULLs when
	 * none: its place in $3 (from 1), state, tries, sent, body; then
	 * how many rows of the slot are of none of them (issue 43: targets
	 * removed since they were staged), a seek of the primary key. */
	[ST_SLOT_LOOK] =
	"SELECT (EXISTS (SELECT 1 FROM slot_markers"
	" WHERE schedule = $1 AND slot_ms = $2))::int,"
	" o.i, o.state, o.n_tries, o.sent_ms, b.body,"
	" (SELECT count(*) FROM outbox y WHERE y.schedule = $1"
	" AND y.slot_ms = $2 AND y.target <> ALL ($3::text[]))"
	" FROM (SELECT 1) AS one"
	" LEFT JOIN LATERAL (SELECT x.target, x.state, x.n_tries, x.sent_ms,"
	" array_position($3::text[], x.target) AS i FROM outbox x"
	" WHERE x.schedule = $1 AND x.slot_ms = $2"
	" AND x.target = ANY($3::text[]) ORDER BY i LIMIT 1) AS o ON true"
	" LEFT JOIN outbox_body b ON b.schedule = $1 AND b.slot_ms = $2"
	" AND b.target = o.target",
	[STORE_Q_SCHED_LAST_GET] =
	"SELECT last_slot_ms FROM sched_state WHERE schedule = $1",
	/* $3 now: SQLite keeps it (updated_ms), this table has no such
	 * column; it is named (RETURNING) only for its type. */
	[STORE_Q_SCHED_LAST_SET] =
	"INSERT INTO sched_state (schedule, last_slot_ms)"
	" VALUES ($1, $2::bigint) ON CONFLICT (schedule) DO UPDATE"
	" SET last_slot_ms = GREATEST(sched_state.last_slot_ms,"
	" EXCLUDED.last_slot_ms) RETURNING $3::bigint, " DURABLE_IF("4"),
	/* Byte order, as strcmp (the database's collation may be another). */
	[STORE_Q_SCHED_LAST_ALL] =
	"SELECT schedule, last_slot_ms FROM sched_state"
	" ORDER BY schedule COLLATE \"C\"",
	/* $1 names, $2 slots (parallel arrays); a name given twice keeps its
	 * newest slot (one row may not be updated twice by one statement). */
	[STORE_Q_SCHED_LAST_SET_MANY] =
	"WITH i AS (INSERT INTO sched_state (schedule, last_slot_ms)"
	" SELECT n, max(l) FROM unnest($1::text[], $2::bigint[]) AS u(n, l)"
	" GROUP BY n ON CONFLICT (schedule) DO UPDATE"
	" SET last_slot_ms = GREATEST(sched_state.last_slot_ms,"
	" EXCLUDED.last_slot_ms) RETURNING 1)"
	/* $3 (now) typed only: no column keeps it here */
	" SELECT count(*), $3::bigint, " DURABLE_IF("4") " FROM i",
	[STORE_Q_PAUSE_SET] =
	"INSERT INTO pauses (schedule, from_ms, until_ms, paused_by, note,"
	" resumed) VALUES ($1, $2::bigint, $3::bigint, $4, $5, false)"
	" ON CONFLICT (schedule) DO UPDATE SET from_ms = EXCLUDED.from_ms,"
	" until_ms = EXCLUDED.until_ms, paused_by = EXCLUDED.paused_by,"
	" note = EXCLUDED.note, resumed = false RETURNING "
	DURABLE_IF("6"),
	[STORE_Q_PAUSE_END] =
	"UPDATE pauses SET until_ms = $2::bigint, resumed = true"
	" WHERE schedule = $1 AND until_ms > $2::bigint RETURNING "
	DURABLE_IF("3"),
	[STORE_Q_PAUSE_GET] =
	"SELECT " STORE_PAUSE_COLS " FROM pauses WHERE schedule = $1",
	/* Byte order, as strcmp. */
	[STORE_Q_PAUSE_ALL] =
	"SELECT " STORE_PAUSE_COLS " FROM pauses ORDER BY schedule "
	"COLLATE \"C\"",
	/* $1..$6 the record, $7 now (the store clock's), $8 the clock
	 * offset (NULL: not measured). */
	[STORE_Q_NODE_BEAT] =
	"INSERT INTO nodes (id, host, pid, version, config_digest, started_ms,"
	" seen_ms, clock_offset_ms) VALUES ($1, $2, $3::bigint, $4, $5,"
	" $6::bigint, $7::bigint, $8::bigint)"
	" ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host,"
	" pid = EXCLUDED.pid, version = EXCLUDED.version,"
	" config_digest = EXCLUDED.config_digest,"
	" started_ms = EXCLUDED.started_ms, seen_ms = EXCLUDED.seen_ms,"
	" clock_offset_ms = EXCLUDED.clock_offset_ms RETURNING "
	DURABLE_IF("9"),
	[STORE_Q_NODES] =
	"SELECT id, host, pid, version, config_digest, started_ms, seen_ms,"
	" clock_offset_ms FROM nodes ORDER BY id COLLATE \"C\"",
	[STORE_Q_NODE_LEAVE] =
	"DELETE FROM nodes WHERE id = $1 RETURNING " DURABLE_IF("2"),
	/* The partial index ledger_paused_once, as STORE_Q_LEDGER_MISSED. */
	[STORE_Q_LEDGER_PAUSED] =
	"INSERT INTO ledger (" LEDGER_COLS ") VALUES ($1, $2::bigint,"
	" $3::bigint, $4::integer, $5::bigint, $6::bigint, $7::text, $8, $9,"
	" $10::bigint, $11) ON CONFLICT (schedule, slot_ms)"
	" WHERE outcome = '" LEDGER_PAUSED "' DO NOTHING RETURNING "
	DURABLE_IF("12"),
	[STORE_Q_TOKEN_GET] =
	"SELECT token, expires_ms FROM token_cache WHERE provider = $1",
	[STORE_Q_LEASE_DROP] = "DELETE FROM leases WHERE name = $1 AND"
	" owner = $2 RETURNING " DURABLE_IF("3"),
	/* $4 now: as for STORE_Q_SCHED_LAST_SET. */
	[STORE_Q_TOKEN_PUT] =
	"INSERT INTO token_cache (provider, token, expires_ms)"
	" VALUES ($1, $2, $3::bigint) ON CONFLICT (provider) DO UPDATE"
	" SET token = EXCLUDED.token, expires_ms = EXCLUDED.expires_ms"
	" RETURNING $4::bigint, " DURABLE_IF("5"),
	[STORE_Q_TOKEN_DROP] =
	"DELETE FROM token_cache WHERE provider = $1 RETURNING "
	DURABLE_IF("2"),
	/* $1 name, $2 owner, $3 now, $4 ttl: as on SQLite, a row per
	 * lease taken. */
	[STORE_Q_LEASE_TAKE] =
	"INSERT INTO leases (name, owner, expires_ms) VALUES ($1, $2,"
	" $3::bigint + $4::bigint) ON CONFLICT (name) DO UPDATE SET owner ="
	" EXCLUDED.owner, expires_ms = EXCLUDED.expires_ms WHERE"
	" leases.owner = EXCLUDED.owner OR leases.expires_ms <= $3::bigint"
	" RETURNING " DURABLE_IF("5"),
	[STORE_Q_ALERT_ID] =
	"SELECT id FROM alerts WHERE schedule = $1 AND slot_ms = $2::bigint"
	" AND reason = $3 AND generation = $4::bigint",
	[STORE_Q_DEAD_UNALERTED] =
	"SELECT j.id, j.schedule, j.slot_ms, j.attempts,"
	" COALESCE((SELECT l.error_msg FROM ledger l"
	" WHERE l.schedule = j.schedule AND l.slot_ms = j.slot_ms"
	" AND l.outcome = '" LEDGER_LOST "' ORDER BY l.id DESC LIMIT 1), '')"
	" FROM jobs j WHERE j.state = " STORE_SQL_DEAD " AND j.alerted = 0"
	" ORDER BY j.id"
	" LIMIT $1::bigint",
	/* LIMIT NULL is no limit; $4 NULL: any slot. */
	[STORE_Q_ALERT_LIST] =
	"SELECT " STORE_ALERT_COLS " FROM alerts"
	" WHERE ($1::text IS NULL OR schedule = $1::text)"
	" AND (NOT $2::boolean OR status = " STORE_SQL_OPEN ")"
	" AND (NOT $3::boolean OR staged_rounds < rounds)"
	" AND ($4::bigint IS NULL OR (slot_ms <= $4::bigint"
	" AND last_slot_ms >= $4::bigint))"
	" AND slot_ms >= $5::bigint AND slot_ms < $6::bigint"
	" ORDER BY id LIMIT $7::bigint",
	/* Two nodes closing one alert: the second waits on the row lock,
	 * then finds it no longer OPEN. */
	[STORE_Q_ALERT_CLOSE] =
	"UPDATE alerts SET status = $2::smallint, closed_ms = $3::bigint,"
	" note = $4::text WHERE id = $1::bigint AND status = "
	STORE_FROM_ALERT_CLOSE
	" RETURNING " DURABLE_IF("5"),
	[STORE_Q_ALERT_EXISTS] = "SELECT 1 FROM alerts WHERE id = $1::bigint",
	[STORE_Q_ALERT_REALERT] =
	"UPDATE alerts SET rounds = $2::integer + 1, round_ms = $3::bigint"
	" WHERE id = $1::bigint AND status = " STORE_FROM_ALERT_REALERT
	" AND rounds = $2::integer RETURNING " DURABLE_IF("4"),
	/* The alerts' steps, run inside pg_tx (store.c composes them): its
	 * commit's durability was set at BEGIN; a WRITE's DURABLE_IF takes
	 * the same class. $11 now, $12 note, $13 closed_ms
	 * (store_alert_raise_rule). ON CONFLICT waits for a concurrent
	 * raise of the key to commit, so ALERT_ID then sees its row. */
	[STORE_Q_ALERT_INSERT] =
	"INSERT INTO alerts (schedule, slot_ms, last_slot_ms,"
	" n_slots, reason, generation, status, attempts, error_msg, job_id,"
	" rounds, staged_rounds, created_ms, round_ms, closed_ms, note)"
	" VALUES ($1::text, $2::bigint, $3::bigint, $4::bigint, $5::text,"
	" $6::bigint, $7::smallint, $8::integer, $9::text, $10::bigint, 1, 0,"
	" $11::bigint, $11::bigint, $13::bigint, $12::text)"
	" ON CONFLICT (schedule, slot_ms, reason, generation) DO NOTHING"
	" RETURNING id, " DURABLE_IF("14"),
	/* $3 the new alert, $4 now, $5 reason. */
	[STORE_Q_ALERT_SUPERSEDE] =
	"UPDATE alerts SET status = " STORE_SQL_CLOSED ", closed_ms = $4::bigint"
	" WHERE schedule = $1::text AND slot_ms = $2::bigint"
	" AND reason = $5::text AND status = " STORE_FROM_ALERT_SUPERSEDE
	" AND id < $3::bigint RETURNING " DURABLE_IF("6"),
	[STORE_Q_JOB_ALERTED] =
	"UPDATE jobs SET alerted = 1 WHERE id = $1::bigint"
	" RETURNING " DURABLE_IF("2"),
	[STORE_Q_ALERT_STAGED] =
	"UPDATE alerts SET staged_rounds = GREATEST(staged_rounds,"
	" $2::integer + 1) WHERE id = $1::bigint RETURNING " DURABLE_IF("3"),
	/* $1 the targets (text[]), $2 alert, $3 round, $4 now, $5 body. */
	[STORE_Q_SEND_INSERT] =
	"WITH i AS (INSERT INTO alert_sends (alert_id, round, target, state,"
	" next_try_ms, body, created_ms) SELECT $2::bigint, $3::integer, t, "
	STORE_SQL_PENDING ", $4::bigint, $5::text, $4::bigint"
	" FROM unnest($1::text[]) AS t"
	" ON CONFLICT (alert_id, round, target) DO NOTHING RETURNING 1)"
	" SELECT count(*), " DURABLE_IF("6") " FROM i",
	/* $1 now, $2 max, $3 alert (0: any). The due rows locked with SKIP
	 * LOCKED until the transaction ends: two claimers never get one row
	 * and never wait on each other. An expired SENDING is reported
	 * UNKNOWN (its copy may have arrived). */
	[STORE_Q_SEND_DUE] =
	"SELECT " SEND_COLS("CASE WHEN s.state = " STORE_FROM_SEND_RECLAIM
			    " THEN " STORE_SQL_UNKNOWN " ELSE s.state END",
			    "s.body")
	" FROM alert_sends s JOIN alerts a ON a.id = s.alert_id"
	" WHERE ((s.state IN (" STORE_FROM_SEND_CLAIM ")"
	" AND s.next_try_ms <= $1::bigint)"
	" OR (s.state = " STORE_FROM_SEND_RECLAIM
	" AND s.lease_expires_ms < $1::bigint))"
	" AND ($3::bigint = 0 OR s.alert_id = $3::bigint)"
	" ORDER BY s.id LIMIT $2::bigint FOR UPDATE OF s SKIP LOCKED",
	/* The token comes from the jobs' sequence: unique across nodes. */
	[STORE_Q_SEND_TAKE] =
	"UPDATE alert_sends SET state = " STORE_SQL_SENDING ","
	" n_tries = n_tries + 1, lease_token = nextval('lease_tokens'),"
	" lease_expires_ms = $2::bigint WHERE id = $1::bigint"
	" RETURNING n_tries, lease_token",
	/* $1 id, $2 token, $3 state, $4 next try, $5 error, $6 now. */
	[STORE_Q_SEND_FINISH] =
	"UPDATE alert_sends SET state = $3::smallint,"
	" lease_expires_ms = 0, next_try_ms = CASE WHEN $3::smallint"
	" IN (" STORE_SQL_FAILED ", " STORE_SQL_UNKNOWN ") THEN $4::bigint"
	" ELSE next_try_ms END,"
	" sent_ms = CASE WHEN $3::smallint = " STORE_SQL_SENT " THEN $6::bigint"
	" ELSE sent_ms END, last_error = $5::text"
	" WHERE id = $1::bigint AND lease_token = $2::bigint AND state = "
	STORE_FROM_SEND_FINISH " RETURNING " DURABLE_IF("7"),
	[STORE_Q_SEND_EXISTS] = "SELECT 1 FROM alert_sends WHERE id = $1::bigint",
	[STORE_Q_ALERT_SENDS] =
	"SELECT " SEND_COLS("s.state", "NULL") " FROM alert_sends s"
	" JOIN alerts a ON a.id = s.alert_id WHERE s.alert_id = $1::bigint"
	" ORDER BY s.id",
	/* store_sla_scan: jobs_due and jobs_lease serve the first two. */
	[STORE_Q_SLA_LATE] =
	"SELECT " STORE_JOB_COLS " FROM jobs WHERE state = " STORE_SQL_READY
	" AND attempts = 0"
	" AND run_at_ms <= $1::bigint ORDER BY run_at_ms, id"
	" LIMIT $2::bigint",
	[STORE_Q_SLA_RUNNING] =
	"SELECT " STORE_JOB_COLS " FROM jobs WHERE state = " STORE_SQL_ACTIVE
	" AND started_ms <= $1::bigint ORDER BY started_ms, id"
	" LIMIT $2::bigint",
	[STORE_Q_SLA_LAST] =
	"SELECT s.schedule, COALESCE((SELECT m.completed_ms FROM slot_markers m"
	" WHERE m.schedule = s.schedule ORDER BY m.slot_ms DESC LIMIT 1), 0),"
	" COALESCE((SELECT j.created_ms FROM jobs j WHERE j.schedule ="
	" s.schedule ORDER BY j.slot_ms LIMIT 1), 0)"
	" FROM sched_state s ORDER BY s.schedule LIMIT $1::bigint",
};

/*
 * One prepared statement per filter shape (issue 15). The session plans
 * generically (plan_cache_mode), so one statement with "$1 IS NULL OR
 * schedule = $1" forms could use no index for the schedule; each shape
 * names only the terms its filter has, numbered in order of use (no
 * unused parameter, whose type PostgreSQL could not infer), and spells
 * the outcomes of the partial indexes (acked, missed, skipped,
 * abandoned) as literals, so those indexes apply under a generic plan
 * too. Shape k as on SQLite (store_lq_shape).
 */
/* The SQL of shape k into buf (its parameters: store_ledger_query). */
static void pg_lq_sql(int k, char *buf, size_t cap)
{
	bool desc = store_lq_desc(k), open = store_lq_open(k);
	int kind = store_lq_kind(k);
	bool sched = store_lq_scheduled(k);
	int n = 0;
	size_t len = (size_t)snprintf(buf, cap, "SELECT id, " LEDGER_COLS
				      " FROM ledger WHERE true");

#define PG_LQ_ADD(...)                                                    \
	(len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0,       \
				 __VA_ARGS__))
	if (sched)
		PG_LQ_ADD(" AND schedule = $%d::text", ++n);
	if (!open) {
		PG_LQ_ADD(" AND slot_ms >= $%d::bigint AND slot_ms < $%d::bigint",
			  n + 1, n + 2);
		n += 2;
	}
	if (kind == STORE_LQ_OUTCOME || kind == STORE_LQ_LOST) {
		if (kind == STORE_LQ_LOST)
			PG_LQ_ADD(" AND outcome IN ('" LEDGER_LOST "', '"
				  LEDGER_MISSED "') AND ($%d::text IS NULL OR "
				  "outcome = $%d::text)", n + 1, n + 1);
		else
			PG_LQ_ADD(" AND outcome = $%d::text", n + 1);
		n++;
	} else if (kind == STORE_LQ_ACKED) {
		PG_LQ_ADD(" AND outcome = '" LEDGER_ACKED "'");
	} else if (kind == STORE_LQ_MISSED) {
		PG_LQ_ADD(" AND outcome = '" LEDGER_MISSED "'");
	} else if (kind == STORE_LQ_SKIPPED) {
		PG_LQ_ADD(" AND outcome = '" LEDGER_SKIPPED "'");
	} else if (kind == STORE_LQ_ABANDONED) {
		PG_LQ_ADD(" AND outcome = '" LEDGER_ABANDONED "'");
	}
	PG_LQ_ADD(" ORDER BY id%s LIMIT $%d::bigint", desc ? " DESC" : "",
		  n + 1);
#undef PG_LQ_ADD
}

/*
 * Statements run unnamed with PQsendQueryParams (parameters still apart
 * from the SQL), so that each run is planned with its values: optional
 * filters ("$1 IS NULL OR schedule = $1") then use the index that fits.
 * They are reports, not the hot path, so the planning cost does not
 * matter.
 */
static const bool oneshot[ST_COUNT] = {
	[STORE_Q_JOB_COUNTS] = true,
	[STORE_Q_ALERT_LIST] = true,
	/* taken once a day: not worth a prepared statement */
	[STORE_Q_LEASE_TAKE] = true,
};

/* The statements that name the connection's claim_known table: pg_call
 * loads the rule's known schedules into it first (known_sync). */
static const bool known_first[ST_COUNT] = {
	[STORE_Q_JOB_NEXT_DUE] = true,
};

/* ---- the handle ------------------------------------------------------- */

struct pg {
	PGconn *conn;              /* NULL while disconnected */
	char *conninfo;            /* URL or conninfo as given (owned) */
	struct sc_clock *clock;    /* borrowed */
	bool prepared[ST_COUNT];   /* on the current connection */
	bool listening;            /* wait() was called: LISTEN on connect */
	bool notified;             /* a notification arrived since last wait */
	int64_t next_try_mono_ms;  /* no reconnect before this */
	int64_t backoff_ms;        /* the next backoff step */
	char last_error[256];      /* why the last connect failed */
	const struct store_claim_rule *rule; /* store_overlap_set; NULL: off */
	bool known_table;          /* claim_known exists on this connection */
	uint64_t known_gen;        /* the rule's known_gen it holds; 0: none */
	int64_t deadline_ms;       /* a result wait's limit on this
				      connection (connect_now) */
	int64_t long_ms;           /* > 0: this limit instead, for a long
				      operation (prune, migrate) */
	bool stalled;              /* counted in store_stalled() */
	bool checking_version;     /* version_check runs: no recursion */
	int64_t version_mono_ms;   /* when the schema version was read */
	bool in_tx;                /* inside pg_tx: calls join it */
	enum store_commit tx_commit; /* pg_tx's commit, while in_tx */
};

/* Parameters of one statement: values as text, NULL for SQL NULL. */
#define ARGS_MAX 20
struct args {
	const char *v[ARGS_MAX];
	char num[ARGS_MAX][24];
	int n;
};

static void arg_i64(struct args *a, int64_t x)
{
	snprintf(a->num[a->n], sizeof(a->num[0]), "%" PRId64, x);
	a->v[a->n] = a->num[a->n];
	a->n++;
}

static void arg_str(struct args *a, const char *s)
{
	a->v[a->n++] = s;
}

static void arg_bool(struct args *a, bool b)
{
	a->v[a->n++] = b ? "t" : "f";
}

/* The durability table's answer for commit c as the boolean parameter of
 * DURABLE_IF: durable unless the class is STORE_DUR_NONE (store.h, enum
 * store_dur: SERVER is durable on a server). */
static void arg_dur(struct args *a, enum store_commit c)
{
	arg_bool(a, store_commit_class(c) != STORE_DUR_NONE);
}

/* Appends s to the array literal in *b as one quoted element, keeping
 * room for the closing brace and the NUL. */
static bool array_add(char **b, size_t *len, size_t *cap, const char *s)
{
	/* comma, two quotes, every byte escaped, '}', NUL */
	size_t need = *len + 2 * strlen(s) + 5;

	if (need > *cap) {
		size_t ncap = need * 2;
		char *nb = realloc(*b, ncap);
		if (!nb)
			return false;
		*b = nb;
		*cap = ncap;
	}
	char *o = *b + *len;
	if (*len > 1)
		*o++ = ',';
	*o++ = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			*o++ = '\\';
		*o++ = *s;
	}
	*o++ = '"';
	*len = (size_t)(o - *b);
	return true;
}

/* v[0..n) as one text[] literal ("{\"a\",\"b\"}"), allocated (free());
 * NULL when out of memory. */
static char *text_array(const char *const *v, size_t n)
{
	size_t len = 1, cap = 64;
	char *arr = malloc(cap);

	if (!arr)
		return NULL;
	arr[0] = '{';
	for (size_t i = 0; i < n; i++) {
		if (!array_add(&arr, &len, &cap, v[i])) {
			free(arr);
			return NULL;
		}
	}
	arr[len++] = '}';
	arr[len] = '\0';
	return arr;
}

/* The key of a slot's rows: schedule and slot. */
static void arg_slot(struct args *a, const char *schedule, int64_t slot_ms)
{
	arg_str(a, schedule);
	arg_i64(a, slot_ms);
}

/* The two fence parameters: job id and token, or NULL and NULL. */
static void arg_fence(struct args *a, const struct store_fence *f)
{
	if (f) {
		arg_i64(a, f->job_id);
		arg_i64(a, f->lease_token);
	} else {
		arg_str(a, NULL);
		arg_str(a, NULL);
	}
}

/* The parameters of a statement, for the one binder (store.h, "rows as
 * fields"): appended in order, so the number is not needed. */
static void par_null(void *a, int p)
{
	arg_str(a, NULL);
}

static void par_i64(void *a, int p, int64_t v)
{
	arg_i64(a, v);
}

static void par_truth(void *a, int p, bool v)
{
	arg_bool(a, v);
}

static void par_text(void *a, int p, const char *s)
{
	arg_str(a, s);
}

static const struct store_param_ops params = {
	par_null, par_i64, par_truth, par_text,
};

/* Fields f[0..n) of x as the next parameters. A text parameter points
 * into x: x outlives the statement's run. */
static void arg_fields(struct args *a, const struct store_field *f, size_t n,
		       const void *x)
{
	store_fields_bind(&params, a, 0, f, n, x);
}

static int64_t now_ms(const struct pg *p)
{
	return sc_clock_now_ms(p->clock);
}

/* The first line of a libpq message, without its trailing newline. */
static const char *one_line(char *out, size_t n, const char *msg)
{
	snprintf(out, n, "%s", msg ? msg : "");
	out[strcspn(out, "\n")] = '\0';
	return out;
}

static void drop_conn(struct pg *p)
{
	if (p->conn)
		PQfinish(p->conn);
	p->conn = NULL;
	memset(p->prepared, 0, sizeof(p->prepared));
	p->known_table = false; /* temporary: gone with the session */
	p->known_gen = 0;
}

/* ---- bounded waits ------------------------------------------------------ */

/* This handle's part in store_stalled(). */
static void set_stalled(struct pg *p, bool on)
{
	if (p->stalled == on)
		return;
	p->stalled = on;
	store_stall_mark(on);
}

/* The client's limit for one result wait, from the session's
 * statement_timeout (ms; 0: none): see "Timeouts" above. */
static int64_t deadline_for(int64_t statement_timeout_ms)
{
	if (statement_timeout_ms <= 0)
		return NO_LIMIT_WAIT_MS;
	int64_t margin = statement_timeout_ms / 2;
	if (margin < 1000)
		margin = 1000;
	if (margin > 5000)
		margin = 5000;
	return statement_timeout_ms + margin;
}

/* Process-wide, so that many handles stalling at once (a partition hits
 * every worker) still log one line per STALL_LOG_EVERY_MS. */
static _Atomic int64_t stall_log_mono;
static atomic_long stall_quiet;

/*
 * Reports a stall: reason "deadline" (the client gave up a wait), "stop"
 * (a wait cut short by the stop), "lock" (lock_timeout), or
 * "statement_timeout" (the server's limit); waited_ms < 0: the server
 * timed it (its own limit, not ours to state). At most one line per
 * STALL_LOG_EVERY_MS for the process; the lines held back are counted in
 * the next one's `suppressed=`.
 */
static void stall_log(const char *reason, const char *op, int64_t waited_ms,
		      int64_t limit_ms)
{
	int64_t now = clock_mono_ms();
	int64_t last = atomic_load(&stall_log_mono);
	char q[96];

	if ((last != 0 && now - last < STALL_LOG_EVERY_MS) ||
	    !atomic_compare_exchange_strong(&stall_log_mono, &last, now)) {
		atomic_fetch_add(&stall_quiet, 1);
		return;
	}
	long quiet = atomic_exchange(&stall_quiet, 0);
	log_quote(q, sizeof(q), op);
	if (waited_ms < 0)
		LOG(SC_LOG_WARN, "store", "event=store_stalled reason=%s op=%s "
		       "suppressed=%ld", reason, q, quiet);
	else
		LOG(SC_LOG_WARN, "store", "event=store_stalled reason=%s op=%s "
		       "waited_ms=%" PRId64 " limit_ms=%" PRId64
		       " suppressed=%ld", reason, q, waited_ms, limit_ms, quiet);
}

/* When a wait that began at start (mono ms) must end: the connection's
 * limit (or the long operation's), cut to STORE_STOP_WAIT_MS after a
 * stop (store.h). INT64_MAX: never. */
static int64_t wait_end(const struct pg *p, int64_t start)
{
	int64_t lim = p->long_ms > 0 ? p->long_ms : p->deadline_ms;
	int64_t end = lim == INT64_MAX ? INT64_MAX : start + lim;
	int64_t stop = store_stop_mono_ms();

	if (stop > 0) {
		int64_t cut = (stop > start ? stop : start) + STORE_STOP_WAIT_MS;
		if (cut < end)
			end = cut;
	}
	return end;
}

static int fail(struct pg *p, PGresult *res, const char *what,
		struct sc_err *err);

/* fail() for a wait that broke off in the middle of a query: whatever
 * fail() judged, the connection is out of step now, so it goes. */
static int fail_mid(struct pg *p, const char *what, struct sc_err *err)
{
	int rc = fail(p, NULL, what, err);

	drop_conn(p);
	return rc;
}

/*
 * Polls the connection's socket for ev (POLLIN, POLLOUT) until it is
 * ready or the wait's end; slices of POLL_SLICE_MS, so that a stop and a
 * stall are seen while the wait lasts. 0: ready (or a slice passed: the
 * caller looks again). At the end the connection is abandoned: dropped
 * (the statement's outcome is unknown, as after a lost connection), the
 * stall reported, SC_EIO returned.
 */
static int wait_socket(struct pg *p, int64_t start, short ev, const char *what,
		       struct sc_err *err)
{
	int64_t now = clock_mono_ms();
	int64_t end = wait_end(p, start);

	/* A long operation (prune, migrate) may be slow without being
	 * stalled: only its deadline says so. */
	if (p->long_ms == 0 && now - start >= STORE_STALL_SLOW_MS)
		set_stalled(p, true);
	if (now >= end) {
		bool stopping = store_stop_mono_ms() > 0;
		stall_log(stopping ? "stop" : "deadline", what, now - start,
			  end - start);
		set_stalled(p, true);
		drop_conn(p);
		return sc_err_set(err, SC_EIO, "PostgreSQL did not answer %s "
				  "within %" PRId64 " ms%s; connection "
				  "abandoned (reconnecting on the next "
				  "operation)", what, end - start,
				  stopping ? " of the stop" : "");
	}
	int64_t left = end - now;
	struct pollfd pfd = {PQsocket(p->conn), ev, 0};
	if (poll(&pfd, 1, left > POLL_SLICE_MS ? POLL_SLICE_MS : (int)left) < 0 &&
	    errno != EINTR)
		return fail_mid(p, what, err);
	return 0;
}

/* Sends what the last PQsend* left queued (the connection is
 * non-blocking), within the wait's end; answers are read meanwhile, so
 * the server never blocks on us. */
static int flush_out(struct pg *p, int64_t start, const char *what,
		     struct sc_err *err)
{
	for (;;) {
		int f = PQflush(p->conn);
		if (f == 0)
			return 0;
		if (f < 0)
			return fail_mid(p, what, err);
		int rc = wait_socket(p, start, POLLIN | POLLOUT, what, err);
		if (rc)
			return rc;
		if (!PQconsumeInput(p->conn))
			return fail_mid(p, what, err);
	}
}

/* Waits until PQgetResult will not block, within the wait's end. */
static int await_ready(struct pg *p, int64_t start, const char *what,
		       struct sc_err *err)
{
	while (PQisBusy(p->conn)) {
		int rc = wait_socket(p, start, POLLIN, what, err);
		if (rc)
			return rc;
		if (!PQconsumeInput(p->conn))
			return fail_mid(p, what, err);
	}
	return 0;
}

static bool result_failed(const PGresult *r)
{
	ExecStatusType s = PQresultStatus(r);

	return s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK;
}

/*
 * After a PQsend* outside pipeline mode: flushes it and reads every
 * result to the end, all within one wait's end (wait_end). *out: the
 * last result (PQclear it). A failed result (the first one that failed,
 * PQexec's rule) or none at all is the code fail() gives it. On a
 * returned error (the wait abandoned, the connection broke: dropped)
 * *out is NULL.
 */
static int collect(struct pg *p, const char *what, PGresult **out,
		   struct sc_err *err)
{
	int64_t start = clock_mono_ms();
	PGresult *keep = NULL;
	int rc = flush_out(p, start, what, err);

	*out = NULL;
	while (!rc) {
		rc = await_ready(p, start, what, err);
		if (rc)
			break;
		PGresult *r = PQgetResult(p->conn);
		if (!r)
			break;
		if (keep && result_failed(keep)) {
			PQclear(r);
		} else {
			PQclear(keep);
			keep = r;
		}
		if (PQstatus(p->conn) != CONNECTION_OK)
			break; /* no NULL will follow: fail() says why */
	}
	if (rc) {
		PQclear(keep);
		return rc;
	}
	set_stalled(p, false); /* the server answers */
	if (!keep || result_failed(keep)) {
		rc = fail(p, keep, what, err);
		PQclear(keep);
		return rc;
	}
	*out = keep;
	return 0;
}

/*
 * Runs q (constant SQL, several statements allowed) within the wait's
 * limit. *out: its last result (PQclear it); on failure NULL and the
 * code (fail()).
 */
static int exec_res(struct pg *p, const char *q, const char *what,
		    PGresult **out, struct sc_err *err)
{
	PGresult *res = NULL;
	int rc;

	*out = NULL;
	if (!p->conn || !PQsendQuery(p->conn, q))
		return fail(p, NULL, what, err);
	rc = collect(p, what, &res, err);
	if (rc)
		return rc;
	*out = res;
	return 0;
}

/* Frees every notification libpq has read; remembers that one came. */
static void drain_notifies(struct pg *p)
{
	PGnotify *n;

	while ((n = PQnotifies(p->conn)) != NULL) {
		p->notified = true;
		PQfreemem(n);
	}
}

/* Runs a constant statement without values. */
static int exec_const(struct pg *p, const char *q, struct sc_err *err);
static int64_t get_i64(const PGresult *r, int row, int col);

/* Server notices (NOTICE, WARNING) go to the log, never to stderr. */
static void on_notice(void *arg, const char *message)
{
	char line[256], q[300];

	LOG(SC_LOG_DEBUG, "store", "event=pg_notice msg=%s",
	       log_quote(q, sizeof(q), one_line(line, sizeof(line), message)));
}

static int connect_now(struct pg *p, struct sc_err *err)
{
	const char *keys[12], *vals[12];
	int k = 0;
	char line[256];

	/* Defaults first: with expand_dbname the URL's own settings (and
	 * the PG* environment, which we do not override) win. */
	if (!getenv("PGCONNECT_TIMEOUT")) {
		keys[k] = "connect_timeout";
		vals[k++] = "10";
	}
	if (!getenv("PGAPPNAME")) {
		keys[k] = "application_name";
		vals[k++] = "surecron";
	}
	/* A server that vanished without a word (host down, network cut)
	 * is noticed in about a minute instead of hanging an operation for
	 * the kernel's two hours. */
	keys[k] = "keepalives_idle";
	vals[k++] = "30";
	keys[k] = "keepalives_interval";
	vals[k++] = "10";
	keys[k] = "keepalives_count";
	vals[k++] = "3";
	/* Data the server does not acknowledge (a partition) ends the
	 * connection after 30 s, however much of it is queued. */
	keys[k] = "tcp_user_timeout";
	vals[k++] = DEF_TCP_USER_TIMEOUT;
	keys[k] = "dbname";
	vals[k++] = p->conninfo;
	/* After a stop, a connect no longer waits the URL's timeout: after
	 * dbname, so it wins over the URL's own. */
	if (store_stop_mono_ms() > 0) {
		keys[k] = "connect_timeout";
		vals[k++] = STOP_CONNECT_TIMEOUT;
	}
	keys[k] = NULL;
	vals[k] = NULL;

	drop_conn(p);
	/* Blocking, bounded by connect_timeout (10 s unless the URL or
	 * PGCONNECT_TIMEOUT says otherwise) for each host. */
	p->conn = PQconnectdbParams(keys, vals, 1);
	if (!p->conn)
		return sc_err_set(err, SC_ENOMEM, "out of memory connecting");
	if (PQstatus(p->conn) != CONNECTION_OK) {
		one_line(p->last_error, sizeof(p->last_error),
			 PQerrorMessage(p->conn));
		drop_conn(p);
		p->next_try_mono_ms = clock_mono_ms() + p->backoff_ms;
		p->backoff_ms = p->backoff_ms * 2 > BACKOFF_MAX_MS
				      ? BACKOFF_MAX_MS
				      : p->backoff_ms * 2;
		LOG(SC_LOG_WARN, "store", "event=pg_connect_failed err=%s",
		       log_quote(line, sizeof(line), p->last_error));
		return sc_err_set(err, SC_EIO, "cannot connect to PostgreSQL: %s",
				  p->last_error);
	}
	PQsetNoticeProcessor(p->conn, on_notice, p);
	/* Every send then returns at once and every wait is ours, bounded
	 * (collect, pipe_run). */
	if (PQsetnonblocking(p->conn, 1) != 0) {
		int rc = fail(p, NULL, "connect", err);
		drop_conn(p);
		return rc;
	}
	/*
	 * Hot-path commits skip the WAL flush wait (see the file comment);
	 * the records that must survive set it back in their statement.
	 * Our statements are written for generic plans (partial indexes on
	 * literal states, no value-dependent shapes); re-planning each
	 * execution for a custom plan cost up to half the hot path's time.
	 * The two filter queries whose best plan depends on the values run
	 * as one-shot statements instead (see `oneshot`). Session SETs,
	 * LISTEN and named prepared statements are why a pooler in
	 * transaction mode cannot sit between us and the server. A pooler
	 * in session mode may hand us a server session an earlier client
	 * left its prepared statements in (PgBouncer with an empty
	 * server_reset_query): ours would collide with them, so none is
	 * kept. All in one round trip: every command pays it once, and it
	 * is one implicit transaction, so a failure leaves none of it.
	 * The session's limits (see "Timeouts" above) are set where nobody
	 * chose them for this session, role or database (pg_settings'
	 * source), and the statement_timeout in force read back: it sets
	 * the client's deadline on this connection.
	 */
#define SESSION_SETS                                                      \
	"DEALLOCATE ALL; SET synchronous_commit TO off; "                 \
	"SET plan_cache_mode TO force_generic_plan; "                     \
	"SELECT set_config(name, CASE name"                               \
	" WHEN 'statement_timeout' THEN '" DEF_STATEMENT_TIMEOUT "'"      \
	" WHEN 'lock_timeout' THEN '" DEF_LOCK_TIMEOUT "'"                \
	" ELSE '" DEF_IDLE_TX_TIMEOUT "' END, false) FROM pg_settings"    \
	" WHERE name IN ('statement_timeout', 'lock_timeout',"            \
	" 'idle_in_transaction_session_timeout') AND source NOT IN"       \
	" ('client', 'user', 'database', 'database user'); "
#define SESSION_READ                                                      \
	"; SELECT setting FROM pg_settings WHERE name = 'statement_timeout'"
	PGresult *res = NULL;
	int rc = exec_res(p, p->listening
			  ? SESSION_SETS "LISTEN " CHANNEL SESSION_READ
			  : SESSION_SETS "SELECT 1" SESSION_READ,
			  "session setup", &res, err);
#undef SESSION_SETS
#undef SESSION_READ
	if (rc) {
		drop_conn(p);
		return rc;
	}
	if (PQntuples(res) == 1)
		p->deadline_ms = deadline_for(get_i64(res, 0, 0));
	PQclear(res);
	drain_notifies(p);
	/* We may have missed notifications while disconnected. */
	if (p->listening)
		p->notified = true;
	p->backoff_ms = BACKOFF_MIN_MS;
	p->next_try_mono_ms = 0;
	return 0;
}

/* Makes sure a live connection exists, reconnecting with backoff. */
static int ensure_conn(struct pg *p, struct sc_err *err)
{
	if (p->conn && PQstatus(p->conn) == CONNECTION_OK)
		return 0;
	if (p->conn) {
		LOG(SC_LOG_WARN, "store", "event=pg_connection_lost");
		drop_conn(p);
	}
	/* A handle that stalled does not try again once the program
	 * stops: the connect could wait connect_timeout more. */
	if (p->stalled && store_stop_mono_ms() > 0)
		return sc_err_set(err, SC_EIO, "PostgreSQL stalled and the "
				  "program is stopping: not reconnecting");
	int64_t wait_ms = p->next_try_mono_ms - clock_mono_ms();
	if (wait_ms > 0)
		return sc_err_set(err, SC_EIO,
				  "PostgreSQL unavailable (reconnecting in "
				  "%" PRId64 " ms): %s",
				  wait_ms, p->last_error);
	int rc = connect_now(p, err);
	if (rc == 0)
		LOG(SC_LOG_INFO, "store", "event=pg_connected");
	return rc;
}

static int version_check(struct pg *p, struct sc_err *err);
static int known_sync(struct pg *p, bool *on, struct sc_err *err);

/*
 * Turns a failed result (res may be NULL) into an SC_E* code. A broken
 * connection is dropped, so the next operation reconnects.
 */
static int fail(struct pg *p, PGresult *res, const char *what,
		struct sc_err *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE)
				: NULL;
	const char *msg = res ? PQresultErrorMessage(res) : NULL;
	char line[256], q[300];
	int code = SC_EDB;

	if (!msg || !*msg)
		msg = p->conn ? PQerrorMessage(p->conn) : "no connection";
	one_line(line, sizeof(line), msg);
	/* 25006: a write reached a read-only server, e.g. the old primary
	 * after a failover. Reconnecting lets libpq pick the host that now
	 * takes writes (URL with several hosts and
	 * target_session_attrs=read-write). */
	bool lost = !p->conn || PQstatus(p->conn) != CONNECTION_OK ||
		    (state && (strncmp(state, "08", 2) == 0 ||
			       strncmp(state, "57P", 3) == 0 ||
			       strcmp(state, "25006") == 0));
	if (lost) {
		drop_conn(p);
		LOG(SC_LOG_WARN, "store", "event=pg_connection_lost op=%s "
		       "err=%s", what, log_quote(q, sizeof(q), line));
		return sc_err_set(err, SC_EIO,
				  "PostgreSQL connection lost during %s "
				  "(reconnecting on the next operation): %s",
				  what, line);
	}
	/* The session's own limits ended the statement (lock_timeout,
	 * statement_timeout): it did nothing, and the next try may well
	 * pass, so it is retried like a lost connection (a finish is). */
	bool lock_to = state && strcmp(state, "55P03") == 0 &&
		       strstr(line, "lock timeout");
	bool stmt_to = state && strcmp(state, "57014") == 0 &&
		       strstr(line, "statement timeout");
	if (lock_to || stmt_to) {
		stall_log(lock_to ? "lock" : "statement_timeout", what, -1, -1);
		return sc_err_set(err, SC_EIO, "PostgreSQL %s failed: %s",
				  what, line);
	}
	/* An undefined table, column or function: the schema may have
	 * moved under us (a newer node migrated it). Read its version
	 * now when no transaction of ours is open (one in error could not
	 * read), else at the next claim. */
	if (state && strncmp(state, "42", 2) == 0 &&
	    strcmp(state, "42501") != 0 && !p->checking_version) {
		struct sc_err ve = {0};
		if (PQtransactionStatus(p->conn) != PQTRANS_IDLE)
			p->version_mono_ms = INT64_MIN / 2;
		else if (version_check(p, &ve) == SC_EVERSION)
			return sc_err_set(err, SC_EVERSION, "%s", ve.msg);
	}
	if (state) {
		if (strcmp(state, "53100") == 0)
			code = SC_ENOSPC;
		else if (strcmp(state, "42501") == 0)
			code = SC_EACCES;
		else if (strcmp(state, "40001") == 0 ||
			 strcmp(state, "40P01") == 0 ||
			 strcmp(state, "55P03") == 0)
			code = SC_EBUSY;
		else if (strncmp(state, "58", 2) == 0 ||
			 strncmp(state, "53", 2) == 0)
			code = SC_EIO;
	}
	return sc_err_set(err, code, "PostgreSQL %s failed: %s", what, line);
}

static int exec_const(struct pg *p, const char *q, struct sc_err *err)
{
	PGresult *res;
	int rc = exec_res(p, q, q, &res, err);

	if (rc == 0) {
		drain_notifies(p);
		PQclear(res);
	}
	return rc;
}

/* The name statement st is prepared under on a connection. */
#define STMT_NAME_LEN 16
static void stmt_name(enum stmt st, char *name)
{
	snprintf(name, STMT_NAME_LEN, "sc%d", (int)st);
}

/* Prepares st as text on the live connection, unless st runs unnamed
 * (oneshot) or is prepared there already. */
static int prepare_once(struct pg *p, enum stmt st, const char *text,
			struct sc_err *err)
{
	char name[STMT_NAME_LEN];
	PGresult *res;
	int rc = 0;

	if (oneshot[st] || p->prepared[st])
		return 0;
	stmt_name(st, name);
	if (!PQsendPrepare(p->conn, name, text, 0, NULL))
		return fail(p, NULL, "prepare", err);
	rc = collect(p, "prepare", &res, err);
	if (rc)
		return rc;
	p->prepared[st] = true;
	PQclear(res);
	return 0;
}

/*
 * Runs prepared statement st with a's values. On success *out holds the
 * result (PQclear it); on failure it is NULL and the code is returned.
 */
static int run_text(struct pg *p, enum stmt st, const char *text,
		    const struct args *a, PGresult **out, struct sc_err *err)
{
	char name[STMT_NAME_LEN];
	PGresult *res;
	int rc;

	*out = NULL;
	rc = ensure_conn(p, err);
	if (!rc)
		rc = prepare_once(p, st, text, err);
	if (rc)
		return rc;
	stmt_name(st, name);
	int sent;
	if (oneshot[st])
		sent = PQsendQueryParams(p->conn, text, a ? a->n : 0, NULL,
					 a ? a->v : NULL, NULL, NULL, 0);
	else
		sent = PQsendQueryPrepared(p->conn, name, a ? a->n : 0,
					   a ? a->v : NULL, NULL, NULL, 0);
	if (!sent)
		return fail(p, NULL, name, err);
	rc = collect(p, name, &res, err);
	if (rc)
		return rc;
	drain_notifies(p);
	*out = res;
	return 0;
}

/* run_text with the statement's own SQL (sql[st]; a ledger query's
 * shape: pg_lq_sql's). */
static int run(struct pg *p, enum stmt st, const struct args *a,
	       PGresult **out, struct sc_err *err)
{
	char text[640];

	if (!STORE_Q_IS_SHAPE(st))
		return run_text(p, st, sql[st], a, out, err);
	pg_lq_sql((int)st - STORE_Q_LEDGER_SHAPE0, text, sizeof(text));
	return run_text(p, st, text, a, out, err);
}

/*
 * One statement of a pipelined batch (pipe_run): the prepared statement
 * st with a's values, or, when text is set, that constant statement
 * without values. *out gets its result (PQclear it); NULL out: not
 * wanted.
 */
struct pipe_step {
	enum stmt st;
	const char *text;
	const struct args *a;
	PGresult **out;
};

/*
 * Sends the n steps in one round trip (libpq pipeline mode: the
 * statements, then one Sync) and reads every answer. The server runs
 * them in order and skips those after the first that fails, up to the
 * Sync; so on failure the first failure's code is returned, every *out
 * is NULL, and a transaction the steps opened is left open, in error:
 * the caller rolls it back. The connection is out of pipeline mode on
 * return, or dropped when it broke. Statements not yet prepared on this
 * connection are prepared first, one round trip each, as run() does.
 */
static int pipe_run(struct pg *p, const struct pipe_step *v, size_t n,
		    struct sc_err *err)
{
	PGresult *bad = NULL; /* the first failed result */
	const char *bad_what = "pipeline";
	int rc = ensure_conn(p, err);

	for (size_t i = 0; i < n; i++)
		if (v[i].out)
			*v[i].out = NULL;
	for (size_t i = 0; !rc && i < n; i++)
		if (!v[i].text)
			rc = prepare_once(p, v[i].st, sql[v[i].st], err);
	if (rc)
		return rc;
	if (!PQenterPipelineMode(p->conn))
		return fail(p, NULL, "pipeline", err);
	bool sent = true;
	for (size_t i = 0; sent && i < n; i++) {
		const struct args *a = v[i].a;
		char name[STMT_NAME_LEN];

		stmt_name(v[i].st, name);
		if (v[i].text)
			sent = PQsendQueryParams(p->conn, v[i].text, 0, NULL,
						 NULL, NULL, NULL, 0);
		else if (oneshot[v[i].st])
			sent = PQsendQueryParams(p->conn, sql[v[i].st],
						 a ? a->n : 0, NULL,
						 a ? a->v : NULL, NULL, NULL,
						 0);
		else
			sent = PQsendQueryPrepared(p->conn, name,
						   a ? a->n : 0,
						   a ? a->v : NULL, NULL,
						   NULL, 0);
	}
	int64_t start = clock_mono_ms();
	if (!sent || !PQpipelineSync(p->conn) ||
	    (rc = flush_out(p, start, "pipeline", err)) != 0) {
		if (!rc)
			rc = fail(p, NULL, "pipeline", err);
		drop_conn(p); /* half a batch sent: start afresh */
		return rc;
	}
	/* Each statement answers one result and a NULL; the Sync, its own.
	 * Every read waits within the batch's one limit (wait_end). */
	for (size_t i = 0; i < n; i++) {
		if ((rc = await_ready(p, start, "pipeline", err)) != 0) {
			drop_conn(p); /* abandoned or broken */
			goto out;
		}
		PGresult *res = PQgetResult(p->conn);
		ExecStatusType s = PQresultStatus(res);

		if (!res || PQstatus(p->conn) != CONNECTION_OK) {
			PQclear(bad);
			bad = NULL;
			rc = fail(p, res, v[i].text ? v[i].text : "pipeline",
				  err);
			PQclear(res);
			drop_conn(p); /* broken, or out of step */
			goto out;
		}
		if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
			if (v[i].out)
				*v[i].out = res;
			else
				PQclear(res);
		} else if (s == PGRES_PIPELINE_ABORTED || bad) {
			PQclear(res);
		} else {
			bad = res;
			bad_what = v[i].text ? v[i].text : "pipeline";
		}
		if ((rc = await_ready(p, start, "pipeline", err)) != 0) {
			drop_conn(p);
			goto out;
		}
		res = PQgetResult(p->conn); /* the NULL that ends it */
		PQclear(res);
	}
	if ((rc = await_ready(p, start, "pipeline", err)) != 0) {
		drop_conn(p);
		goto out;
	}
	PGresult *sync = PQgetResult(p->conn);
	bool synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
	PQclear(sync);
	if (!synced || !PQexitPipelineMode(p->conn)) {
		drop_conn(p); /* out of step with the server: start afresh */
		PQclear(bad);
		bad = NULL;
		rc = sc_err_set(err, SC_EIO, "PostgreSQL pipeline out of step; "
				"reconnecting on the next operation");
		goto out;
	}
	drain_notifies(p);
	set_stalled(p, false); /* the server answers */
	if (bad)
		rc = fail(p, bad, bad_what, err);
out:
	PQclear(bad);
	if (rc)
		for (size_t i = 0; i < n; i++)
			if (v[i].out) {
				PQclear(*v[i].out);
				*v[i].out = NULL;
			}
	return rc;
}

/* Like run, for a statement without result rows we need. */
static int run_n(struct pg *p, enum stmt st, const struct args *a,
		 int64_t *n_rows, struct sc_err *err)
{
	PGresult *res;
	int rc = run(p, st, a, &res, err);

	if (rc)
		return rc;
	if (n_rows)
		*n_rows = strtoll(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	return 0;
}

/* Like run, for a statement whose rows only count: *n gets how many. */
static int run_count(struct pg *p, enum stmt st, const struct args *a,
		     int *n, struct sc_err *err)
{
	PGresult *res;
	int rc = run(p, st, a, &res, err);

	if (rc)
		return rc;
	*n = PQntuples(res);
	PQclear(res);
	return 0;
}

/*
 * Like run, for a statement that answers one row: no row (or more) is
 * SC_ENOENT with message `missing`, and *out is NULL.
 */
static int run_one(struct pg *p, enum stmt st, const struct args *a,
		   const char *missing, PGresult **out, struct sc_err *err)
{
	int rc = run(p, st, a, out, err);

	if (rc)
		return rc;
	if (PQntuples(*out) != 1) {
		PQclear(*out);
		*out = NULL;
		return sc_err_set(err, SC_ENOENT, "%s", missing);
	}
	return 0;
}

static int64_t get_i64(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return 0;
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/*
 * Runs a fenced write whose answer is one row (f.ok, rows written, ...):
 * *rows gets the count (NULL: not wanted). SC_ELEASE, nothing written,
 * when the fence refused it.
 */
static int run_fenced(struct pg *p, enum stmt st, const struct args *a,
		      const struct store_fence *f, const char *op,
		      int64_t *rows, struct sc_err *err)
{
	PGresult *res;
	int rc = run(p, st, a, &res, err);

	if (rc)
		return rc;
	bool one = PQntuples(res) == 1;
	bool ok = one && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	int64_t n = one ? get_i64(res, 0, 1) : 0;
	PQclear(res);
	if (!ok)
		return store_fence_refused(op, f, err);
	if (rows)
		*rows = n;
	return 0;
}

static void get_str(const PGresult *r, int row, int col, char *out,
		    size_t n)
{
	snprintf(out, n, "%s", PQgetvalue(r, row, col));
}

/* A copy of a text column, NULL for SQL NULL. *oom on allocation failure. */
static char *get_dup(const PGresult *r, int row, int col, bool *oom)
{
	if (PQgetisnull(r, row, col))
		return NULL;
	char *s = strdup(PQgetvalue(r, row, col));
	if (!s)
		*oom = true;
	return s;
}

/* A row of a result, for the one reader (store.h, "rows as fields"). */
struct cell {
	const PGresult *r;
	int row;
};

static bool cell_null(const void *x, int c)
{
	const struct cell *k = x;

	return PQgetisnull(k->r, k->row, c);
}

static int64_t cell_i64(const void *x, int c)
{
	const struct cell *k = x;

	return get_i64(k->r, k->row, c);
}

static bool cell_truth(const void *x, int c)
{
	const struct cell *k = x;

	return PQgetvalue(k->r, k->row, c)[0] == 't';
}

static void cell_text(const void *x, int c, char *out, size_t n)
{
	const struct cell *k = x;

	get_str(k->r, k->row, c, out, n);
}

static char *cell_dup(const void *x, int c, bool *oom)
{
	const struct cell *k = x;

	return get_dup(k->r, k->row, c, oom);
}

static const struct store_col_ops cols = {
	cell_null, cell_i64, cell_truth, cell_text, cell_dup,
};

/* Columns c0.. of row `row` of r into x by t; *oom (NULL: a table
 * without a copy) set when out of memory. */
static void get_fields(const PGresult *r, int row, int c0,
		       const struct store_fields *t, void *x, bool *oom)
{
	struct cell k = {r, row};

	if (!store_fields_read(&cols, &k, c0, t, x) && oom)
		*oom = true;
}

/* A job from a row selected with STORE_JOB_COLS (j zeroed first). */
static void get_job(const PGresult *r, int row, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	get_fields(r, row, 0, &store_job_fields, j, NULL);
}

/*
 * The row loop of every read of many rows: reads up to max rows of res
 * with read into out[] (elements of size sz), clears res, and returns
 * how many it read; *oom as read sets it.
 */
static size_t fill_rows(PGresult *res, void *out, size_t max, size_t sz,
			const struct store_fields *t, bool *oom)
{
	size_t got = (size_t)PQntuples(res);

	if (got > max)
		got = max;
	for (size_t i = 0; i < got; i++) {
		void *x = (char *)out + i * sz;
		memset(x, 0, sz);
		get_fields(res, (int)i, 0, t, x, oom);
	}
	PQclear(res);
	return got;
}

/*
 * Runs st with a's values and reads its rows with fill_rows into a new
 * array: *out (NULL when there is no row; the caller frees it, and the
 * copies t's DUP fields hold) and *n. On an error both are untouched and
 * what was read is freed (store_rows_free).
 */
static int take_rows(struct pg *p, enum stmt st, const struct args *a,
		     size_t sz, const struct store_fields *t, void **out,
		     size_t *n, struct sc_err *err)
{
	PGresult *res;
	int rc = run(p, st, a, &res, err);
	size_t len;
	bool oom = false;
	void *v;

	if (rc)
		return rc;
	len = (size_t)PQntuples(res);
	v = len ? calloc(len, sz) : NULL;
	if (len && !v) {
		PQclear(res);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	len = fill_rows(res, v, len, sz, t, &oom);
	if (oom) {
		store_rows_free(t, v, len, sz);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	*out = v;
	*n = len;
	return 0;
}

/* c's parameters, in order (store.h, "one-statement operations"). */
static void args_of(struct args *a, const struct store_call *c)
{
	for (size_t i = 0; i < c->n_args; i++) {
		const struct store_arg *x = &c->args[i];

		switch (x->kind) {
		case STORE_A_NULL: arg_str(a, NULL); break;
		case STORE_A_I64: arg_i64(a, x->i); break;
		case STORE_A_TEXT: arg_str(a, x->s); break;
		case STORE_A_BOOL: arg_bool(a, x->i != 0); break;
		case STORE_A_FIELDS: arg_fields(a, x->f, x->nf, x->x); break;
		}
	}
}

/* A growing array literal ("{...}") of one column of a MANY write. */
struct col_buf {
	char *b;
	size_t len, cap;
	bool oom;
};

/* Room for `more` bytes plus the closing '}' and NUL; false when out of
 * memory (then every later write is dropped). */
static bool col_room(struct col_buf *c, size_t more)
{
	if (c->oom)
		return false;
	if (!c->b || c->len + more + 2 > c->cap) {
		size_t ncap = 2 * (c->len + more + 2);
		char *nb = realloc(c->b, ncap);
		if (!nb) {
			c->oom = true;
			return false;
		}
		c->b = nb;
		c->cap = ncap;
	}
	return true;
}

/* Opens the element: '{' before the first, ',' before the others. */
static void col_sep(struct col_buf *c)
{
	c->b[c->len] = c->len == 0 ? '{' : ',';
	c->len++;
}

static void col_i64(struct col_buf *c, int64_t x)
{
	if (!col_room(c, 24))
		return;
	col_sep(c);
	c->len += (size_t)snprintf(c->b + c->len, 22, "%" PRId64, x);
}

/* A text element, quoted and escaped; s NULL: SQL NULL. */
static void col_str(struct col_buf *c, const char *s)
{
	if (!col_room(c, s ? 2 * strlen(s) + 3 : 5))
		return;
	col_sep(c);
	if (!s) {
		memcpy(c->b + c->len, "NULL", 4);
		c->len += 4;
		return;
	}
	c->b[c->len++] = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			c->b[c->len++] = '\\';
		c->b[c->len++] = *s;
	}
	c->b[c->len++] = '"';
}

/* Closes the literal (n >= 1 elements were put); false when out of memory. */
static bool col_end(struct col_buf *c)
{
	if (c->oom || !c->b)
		return false;
	c->b[c->len++] = '}';
	c->b[c->len] = '\0';
	return true;
}

/* The one binder's parameters as array literals: parameter p of each
 * element is appended to column p (MANY). */
static void colp_null(void *d, int p)
{
	col_str((struct col_buf *)d + p, NULL);
}

static void colp_i64(void *d, int p, int64_t v)
{
	col_i64((struct col_buf *)d + p, v);
}

static void colp_truth(void *d, int p, bool v)
{
	col_str((struct col_buf *)d + p, v ? "t" : "f");
}

static void colp_text(void *d, int p, const char *s)
{
	col_str((struct col_buf *)d + p, s);
}

static const struct store_param_ops col_params = {
	colp_null, colp_i64, colp_truth, colp_text,
};

/* The commit a call takes: pg_tx's while inside one, else its own. */
static enum store_commit call_commit(const struct pg *p,
				     const struct store_call *c)
{
	return p->in_tx ? p->tx_commit : store_call_commit(c);
}

/* MANY: one array per field of c's elements, then c's parameters and
 * the durability; the statement answers the rows written. */
static int call_many(struct pg *p, struct store_call *c,
		     struct sc_err *err)
{
	const struct store_qdef *d = &store_calls[c->q];
	struct col_buf col[STORE_ARGS_MAX];
	struct args a = {0};
	PGresult *res = NULL;
	bool oom = false;
	int rc;

	memset(col, 0, sizeof(col));
	for (size_t i = 0; i < c->n_in; i++)
		store_fields_bind(&col_params, col, 0, d->rows->f, d->rows->n,
				  (const char *)c->in + i * d->sz);
	for (size_t k = 0; k < d->rows->n; k++) {
		oom |= !col_end(&col[k]);
		arg_str(&a, col[k].b);
	}
	args_of(&a, c);
	arg_dur(&a, call_commit(p, c));
	if (oom)
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	else if (FAILPOINT_ERR("store.commit"))
		rc = sc_err_set(err, SC_EIO, "I/O error during commit: "
				"injected by failpoint store.commit");
	else
		rc = run(p, (enum stmt)c->q, &a, &res, err);
	if (!rc && c->out) {
		/* the positions of the elements that wrote, a row each */
		c->changed = PQntuples(res);
		for (int r = 0; r < PQntuples(res); r++) {
			int64_t k = get_i64(res, r, 0);
			if (k >= 1 && (size_t)k <= c->n_in)
				((bool *)c->out)[k - 1] = true;
		}
	} else {
		c->changed = rc ? 0 : get_i64(res, 0, 0);
	}
	PQclear(res);
	for (size_t k = 0; k < d->rows->n; k++)
		free(col[k].b);
	return rc;
}

/* Wipes libpq's copy of the texts of res read by t (a secret's rows)
 * before the result is cleared. */
static void wipe(PGresult *res, const struct store_fields *t)
{
	for (int r = 0; r < PQntuples(res); r++)
		for (size_t k = 0; k < t->n; k++)
			if (t->f[k].kind == STORE_F_DUP ||
			    t->f[k].kind == STORE_F_TEXT) {
				char *v = PQgetvalue(res, r, (int)k);
				memset(v, 0, strlen(v));
			}
}

/*
 * The one runner of the one-statement operations (store.h): a write
 * takes the fence (FENCED) and then its commit's durability as its last
 * parameters; a fenced statement answers (fence ok, rows changed), a
 * plain write RETURNING a row per row changed.
 */
static int pg_call(void *impl, struct store_call *c, struct sc_err *err)
{
	struct pg *p = impl;
	const struct store_qdef *d = &store_calls[c->q];
	enum stmt st = (enum stmt)c->q;
	struct args a = {0};
	PGresult *res;
	bool oom = false;
	int rc;

	if (d->kind == STORE_QK_MANY)
		return call_many(p, c, err);
	if (known_first[st]) {
		bool on;
		rc = known_sync(p, &on, err);
		if (rc)
			return rc;
	}
	args_of(&a, c);
	switch (d->kind) {
	case STORE_QK_ONE:
	case STORE_QK_MAYBE:
		if (d->writes)
			arg_dur(&a, call_commit(p, c));
		rc = run(p, st, &a, &res, err);
		if (rc)
			return rc;
		c->changed = PQntuples(res) > 0;
		if (c->changed)
			get_fields(res, 0, 0, d->rows, c->out, &oom);
		if (d->secret)
			wipe(res, d->rows);
		PQclear(res);
		if (!c->changed && d->kind == STORE_QK_ONE)
			return sc_err_set(err, SC_ENOENT, "%s", d->missing);
		return oom ? sc_err_set(err, SC_ENOMEM, "out of memory") : 0;
	case STORE_QK_ALL:
		return take_rows(p, st, &a, d->sz, d->rows, c->out, c->n, err);
	case STORE_QK_WRITE:
		arg_dur(&a, call_commit(p, c));
		return run_n(p, st, &a, &c->changed, err);
	case STORE_QK_FENCED:
		arg_fence(&a, c->fence);
		arg_dur(&a, call_commit(p, c));
		return run_fenced(p, st, &a, c->fence, d->op, &c->changed, err);
	case STORE_QK_MANY: /* above */
		break;
	}
	return sc_err_set(err, SC_EINVAL, "unknown statement kind");
}

/*
 * store_ops.tx: BEGIN, body's calls, COMMIT, on one connection. A durable
 * class sets synchronous_commit back to the server's for this transaction
 * at its start, so its commit waits whichever statements body runs. A
 * failure rolls back (a broken connection took the transaction along).
 */
static int pg_tx(void *impl, enum store_commit commit,
		 int (*body)(void *ctx, struct sc_err *err), void *ctx,
		 struct sc_err *err)
{
	struct pg *p = impl;
	bool durable = store_commit_class(commit) != STORE_DUR_NONE;
	int rc = ensure_conn(p, err);

	if (!rc)
		rc = exec_const(p, durable ? "BEGIN; SET LOCAL "
				"synchronous_commit TO DEFAULT" : "BEGIN",
				err);
	if (rc)
		return rc;
	p->in_tx = true;
	p->tx_commit = commit;
	rc = body(ctx, err);
	p->in_tx = false;
	if (!rc && FAILPOINT_ERR("store.commit"))
		rc = sc_err_set(err, SC_EIO, "I/O error during commit: "
				"injected by failpoint store.commit");
	if (!rc)
		return exec_const(p, "COMMIT", err);
	if (p->conn)
		(void)exec_const(p, "ROLLBACK", NULL);
	/* A step met an undefined name inside the transaction, where the
	 * schema's version could not be read (fail() marked it due):
	 * read it now, as a statement outside one does at once. */
	if (p->conn && p->version_mono_ms == INT64_MIN / 2) {
		struct sc_err ve = {0};
		if (version_check(p, &ve) == SC_EVERSION) {
			sc_err_clear(err); /* the cause, not its symptom */
			return sc_err_set(err, SC_EVERSION, "%s", ve.msg);
		}
	}
	return rc;
}

/* ---- open, migrate, close --------------------------------------------- */

/*
 * The schema's version without the migration lock: 1 when it is current
 * (nothing to do), 0 when a migration may be needed (or the read failed:
 * the locked path reads again and reports), SC_EVERSION when the schema
 * is newer than this binary. Outside any transaction, so a failed read
 * leaves the connection as it was.
 */
/* The schema_version table's newest version, -1 when it cannot be read
 * (on a new database the table is missing: the locked path creates it;
 * else the next statement reports the failure). */
static int read_version(struct pg *p)
{
	PGresult *res = NULL;
	int version = -1;

	p->checking_version = true;
	if (exec_res(p, "SELECT max(version) FROM schema_version",
		     "schema version read", &res, NULL) == 0 &&
	    PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		version = (int)get_i64(res, 0, 0);
	p->checking_version = false;
	PQclear(res);
	return version;
}

static int schema_current(struct pg *p, struct sc_err *err)
{
	int version = read_version(p);

	if (version > SCHEMA_VERSION)
		return sc_err_set(err, SC_EVERSION,
				  "database schema version %d is newer than "
				  "this surecron supports (%d); refusing to "
				  "touch it", version, SCHEMA_VERSION);
	return version == SCHEMA_VERSION;
}

/*
 * Reads the schema's version on the live connection: SC_EVERSION when it
 * is newer than this binary's (a newer node migrated the store since we
 * opened it), 0 otherwise (a failed read is left to the next statement
 * to report). "Mixed versions" at the top says who calls it.
 */
static int version_check(struct pg *p, struct sc_err *err)
{
	int version;

	p->version_mono_ms = clock_mono_ms();
	version = read_version(p);
	if (version > SCHEMA_VERSION)
		return sc_err_set(err, SC_EVERSION,
				  "the store's schema is version %d, newer than "
				  "this surecron understands (%d): a newer "
				  "surecron migrated it; this node takes no more "
				  "jobs (upgrade it)", version, SCHEMA_VERSION);
	return 0;
}

/* store_ops.schema_check: version_check now, connecting first when
 * needed. */
static int pg_schema_check(void *impl, struct sc_err *err)
{
	struct pg *p = impl;
	int rc = ensure_conn(p, err);

	return rc ? rc : version_check(p, err);
}

/* Whether the schema's version is due for a look (version_check), and
 * the look: connects first when needed. */
static int version_due(struct pg *p, struct sc_err *err)
{
	if (clock_mono_ms() - p->version_mono_ms < VERSION_CHECK_MS)
		return 0;
	int rc = ensure_conn(p, err);
	return rc ? rc : version_check(p, err);
}

/* 1 when the schema_version table is on the search path, 0 when not. */
static int schema_present(struct pg *p, struct sc_err *err)
{
	PGresult *res;
	int rc = exec_res(p, "SELECT to_regclass('schema_version') IS NOT NULL",
			  "schema check", &res, err);

	if (rc)
		return rc;
	rc = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return rc;
}

/* create false: a database without our tables is SC_ENOENT, untouched. */
static int migrate(struct pg *p, bool create, struct sc_err *err)
{
	PGresult *res;
	int version = 0, rc;
	bool exists;

	/* The usual open finds the schema current and takes no lock: a node
	 * paused in the middle of its open (SIGSTOP, a VM freeze) must not
	 * hold every other node's open, and so the whole fleet, behind the
	 * migration lock. */
	rc = schema_current(p, err);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return 0;
	if (!create) {
		/* Read before any lock: the usual case (an older schema)
		 * goes on to migrate as store_open would. */
		rc = schema_present(p, err);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return sc_err_set(err, SC_ENOENT, "no store in this "
					  "database: no surecron tables on "
					  "its search path");
	}
	/* A migration may rewrite a large table and waits for another
	 * node's: no statement or lock limit, and no client deadline but
	 * the stop (the connection's keepalives still end a dead one). */
	p->long_ms = INT64_MAX;
	rc = exec_const(p, "BEGIN; SET LOCAL statement_timeout = 0; "
			"SET LOCAL lock_timeout = 0", err);
	if (rc)
		goto fail_tx;
	/* Nodes starting together: the first migrates, the rest wait and
	 * then find the schema current. */
	rc = exec_const(p, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")",
			err);
	if (rc)
		goto fail_tx;
	/* The commit's durability is the table's. */
	if (store_commit_class(STORE_COMMIT_MIGRATE) != STORE_DUR_NONE) {
		rc = exec_const(p, "SELECT " DURABLE, err);
		if (rc)
			goto fail_tx;
	}
	rc = schema_present(p, err);
	if (rc < 0)
		goto fail_tx;
	exists = rc == 1;
	if (exists) {
		rc = exec_res(p, "SELECT max(version) FROM schema_version",
			      "schema version read", &res, err);
		if (rc)
			goto fail_tx;
		version = (int)get_i64(res, 0, 0);
		PQclear(res);
	}
	if (version > SCHEMA_VERSION) {
		rc = sc_err_set(err, SC_EVERSION,
				"database schema version %d is newer than this "
				"surecron supports (%d); refusing to touch it",
				version, SCHEMA_VERSION);
		goto fail_tx;
	}
	if (!exists) {
		rc = exec_const(p, "CREATE TABLE schema_version"
				   " (version integer NOT NULL)", err);
		if (rc == 0)
			rc = exec_const(p, "INSERT INTO schema_version"
					   " VALUES (0)", err);
		if (rc)
			goto fail_tx;
	}
	for (int v = version; v < SCHEMA_VERSION; v++) {
		for (const char *const *q = migrations[v]; *q; q++) {
			rc = exec_const(p, *q, err);
			if (rc)
				goto fail_tx;
		}
		LOG(SC_LOG_INFO, "store", "event=pg_migrated version=%d",
		       v + 1);
	}
	if (version < SCHEMA_VERSION) {
		char q[64];
		/* A constant of this file, not a value from outside. */
		snprintf(q, sizeof(q), "UPDATE schema_version SET version = %d",
			 SCHEMA_VERSION);
		rc = exec_const(p, q, err);
		if (rc)
			goto fail_tx;
	}
	rc = exec_const(p, "COMMIT", err);
	p->long_ms = 0;
	return rc;

fail_tx:
	if (p->conn)
		(void)exec_const(p, "ROLLBACK", NULL);
	p->long_ms = 0;
	return rc;
}

static void pg_close(void *impl)
{
	struct pg *p = impl;

	if (!p)
		return;
	drop_conn(p);
	set_stalled(p, false);
	free(p->conninfo);
	free(p);
}

static int pg_open(const char *target, struct sc_clock *clock, bool create,
		   void **impl, struct sc_err *err)
{
	struct pg *p;
	int rc;

	/* libpq is mapped on first use: SQLite-only daemons never load it. */
	rc = dl_pq_load(err);
	if (rc)
		return rc;
	/* The store URL rule (url.h), whoever built the URL: libpq never
	 * sees a password written in it. */
	rc = url_check_store(target, err);
	if (rc)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	p->conninfo = strdup(target);
	if (!p->conninfo) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto fail_alloc;
	}
	p->clock = clock;
	p->backoff_ms = BACKOFF_MIN_MS;
	p->deadline_ms = deadline_for(30 * 1000); /* DEF_STATEMENT_TIMEOUT's */
	rc = connect_now(p, err);
	if (rc)
		goto fail_alloc;
	rc = migrate(p, create, err);
	if (rc)
		goto fail_alloc;
	*impl = p;
	return 0;

fail_alloc:
	pg_close(p);
	return rc;
}

/* ---- jobs -------------------------------------------------------------- */

/* $1..$5 of ST_CLAIM. */
static void fill_claim_args(struct args *a, int64_t now, size_t max,
			    const char *worker, int64_t lease_ms,
			    int64_t ahead_ms)
{
	arg_i64(a, now);
	arg_i64(a, (int64_t)max);
	arg_str(a, worker);
	arg_i64(a, lease_ms);
	arg_i64(a, ahead_ms);
	arg_dur(a, STORE_COMMIT_CLAIM);
}

static void pg_claim_rule(void *impl, const struct store_claim_rule *r)
{
	struct pg *p = impl;

	p->rule = r;
}

/* How many times a ruled claim picks again when every job it picked was
 * taken meanwhile (see pg_claim_ruled). */
#define CLAIM_TRIES 4

/* The ids and row addresses of a ST_CLAIM_PICK result as array literals,
 * "{1,2}" in ids and "{\"(0,1)\",\"(0,2)\"}" in tids, each a buffer of
 * CLAIM_IDS_LEN(n) bytes (a tid is at most "(4294967295,65535)"). */
#define CLAIM_IDS_LEN(n) ((n) * 21 + 3)
static void claim_ids(const PGresult *res, char *ids, char *tids)
{
	size_t at = 0, tat = 0;
	int n = PQntuples(res);

	ids[at++] = '{';
	tids[tat++] = '{';
	for (int i = 0; i < n; i++) {
		if (i) {
			ids[at++] = ',';
			tids[tat++] = ',';
		}
		at += (size_t)sprintf(ids + at, "%" PRId64, get_i64(res, i, 0));
		tat += (size_t)snprintf(tids + tat, 21, "\"%.18s\"",
					PQgetvalue(res, i, 1));
	}
	ids[at++] = '}';
	ids[at] = '\0';
	tids[tat++] = '}';
	tids[tat] = '\0';
}

/*
 * Makes the connection's claim_known table (CLAIM_KNOWN) hold the rule's
 * known schedules: created on the connection's first claim or next-due
 * read (before their statements are prepared, which name it), loaded
 * again only when store_claim_known_set changed the set (known_gen), so
 * a claim sends a flag, not the list. *on says whether to filter.
 */
static int known_sync(struct pg *p, bool *on, struct sc_err *err)
{
	const struct store_claim_rule *r = p->rule;
	int rc = ensure_conn(p, err);

	*on = r && r->on && r->known;
	if (!rc && !p->known_table) {
		rc = exec_const(p, "CREATE TEMPORARY TABLE IF NOT EXISTS "
				"claim_known (name text PRIMARY KEY)", err);
		p->known_table = rc == 0;
	}
	if (rc || !*on || p->known_gen == r->known_gen)
		return rc;
	struct args a = {0};
	arg_str(&a, r->known);
	/* ANALYZE: the probe's plan is then the key's, for any size. */
	const struct pipe_step load[] = {
		{.text = "BEGIN"},
		{.text = "DELETE FROM pg_temp.claim_known"},
		{.st = ST_KNOWN_LOAD, .a = &a},
		{.text = "ANALYZE pg_temp.claim_known"},
		{.text = "COMMIT"},
	};
	rc = pipe_run(p, load, sizeof(load) / sizeof(load[0]), err);
	if (rc) {
		if (p->conn)
			(void)exec_const(p, "ROLLBACK", NULL);
		return rc;
	}
	p->known_gen = r->known_gen;
	return 0;
}

/*
 * The claim with the overlap rule on: "no ACTIVE job of the schedule"
 * must hold against claims made at the same time on other nodes. In READ
 * COMMITTED a statement sees what was committed when it began, so two
 * claims running together could each find no ACTIVE job and take two
 * slots of one queue schedule (SKIP LOCKED keeps them off the same ROW,
 * not the same schedule: say a retry due since a minute, claimed by one,
 * and a fresh slot just due, which comes first in the claim order for
 * the other). Hence one lock per schedule, held by the claiming
 * transaction to its COMMIT, and the rule checked under it:
 *   1. ST_CLAIM_PICK walks the due jobs and takes the locks of the
 *      schedules it picks, passing over those held by other claimers;
 *   2. ST_CLAIM_TAKE checks the rule again for the picked jobs, in a
 *      snapshot taken after the locks were: a claim of the same schedule
 *      that committed before is seen there; one that has not committed
 *      holds the lock, so it was passed over.
 * Claims of different schedules run side by side, on every node. (Until
 * 2026-12 one lock served every schedule: claims of all nodes ran one at
 * a time, each holding it through its COMMIT's WAL flush, and 1,576 slots
 * due at once took 6-7 s to start on PostgreSQL; docs/bench.md.) A job
 * picked but claimed by another meanwhile (its commit fell between the
 * two snapshots) is dropped by step 2; if all were, step 1 runs again, in
 * a new transaction, at most CLAIM_TRIES times. "now" is read anew for
 * step 2, once the locks are held, so that an attempt never starts on
 * record before the finish of its schedule's previous one that step 2
 * sees.
 *
 * Every ruled claim also takes CLAIM_LOCK_KEY shared: a node of an earlier
 * version takes it exclusively for its whole claim, so the two kinds
 * never claim at the same time while a fleet is being upgraded. And no
 * parallel plan, which ST_CLAIM_PICK's order relies on (see there).
 *
 * Two round trips (pipe_run): BEGIN, the settings and the shared lock
 * (ST_CLAIM_OPEN), and step 1 in one; step 2 and COMMIT in the other.
 * Step 2 must wait for step 1's answer (its ids), the COMMIT need not:
 * a take that claimed nothing commits nothing. A burst of runs on a
 * busy 2-core host spent its CPU on each statement's wake-ups as much as
 * on the statements (docs/bench.md, 2026-12-06); four round trips a
 * claim were two more than the claim needs.
 */
static int pg_claim_ruled(struct pg *p, const struct store_claim_rule *r,
			  const char *worker, int64_t lease_ms,
			  int64_t ahead_ms, size_t max, PGresult **out,
			  struct sc_err *err)
{
	PGresult *res = NULL;
	char *ids = malloc(CLAIM_IDS_LEN(max));
	char *tids = malloc(CLAIM_IDS_LEN(max));
	bool open = false; /* a transaction of ours is open */
	int rc = 0;

	if (!ids || !tids) {
		free(ids);
		free(tids);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	bool known = false;
	rc = known_sync(p, &known, err);
	for (int t = 0; !rc && t < CLAIM_TRIES; t++) {
		struct args a = {0};
		PGresult *picked = NULL;

		arg_i64(&a, now_ms(p));
		arg_i64(&a, (int64_t)max);
		arg_i64(&a, ahead_ms);
		arg_str(&a, r->allow);
		arg_str(&a, r->skip);
		arg_bool(&a, known);
		const struct pipe_step pick[] = {
			{.text = "BEGIN"},
			{.st = ST_CLAIM_OPEN},
			{.st = ST_CLAIM_PICK, .a = &a, .out = &picked},
		};
		/* pipe_run connects when needed, as run() would. */
		rc = pipe_run(p, pick, sizeof(pick) / sizeof(pick[0]), err);
		if (rc)
			break; /* what BEGIN opened is rolled back below */
		open = true;
		int n_picked = PQntuples(picked);
		claim_ids(picked, ids, tids);
		PQclear(picked);
		if (n_picked == 0)
			break; /* nothing due, or every one held by others */
		/* Picked, locks held, nothing claimed yet: where tests play
		 * another node's claim (test_store_pg.c). */
		FAILPOINT_HOOK("pg.claim_picked");
		a = (struct args){0};
		arg_i64(&a, now_ms(p));
		arg_str(&a, ids);
		arg_str(&a, worker);
		arg_i64(&a, lease_ms);
		arg_i64(&a, ahead_ms);
		arg_str(&a, r->allow);
		arg_str(&a, r->skip);
		arg_str(&a, tids);
		arg_dur(&a, STORE_COMMIT_CLAIM);
		const struct pipe_step take[] = {
			{.st = ST_CLAIM_TAKE, .a = &a, .out = &res},
			{.text = "COMMIT"},
		};
		rc = pipe_run(p, take, sizeof(take) / sizeof(take[0]), err);
		if (rc)
			break;
		open = false;
		if (PQntuples(res) > 0)
			break;
		/* Every picked job was claimed meanwhile: pick again, in a
		 * new transaction (this one committed nothing). */
		PQclear(res);
		res = NULL;
	}
	free(ids);
	free(tids);
	if (!rc && open)
		rc = exec_const(p, "COMMIT", err);
	if (rc) {
		if (p->conn)
			(void)exec_const(p, "ROLLBACK", NULL);
		PQclear(res);
		return rc;
	}
	*out = res; /* NULL when nothing was picked: no rows */
	return 0;
}

static int pg_job_claim(void *impl, const char *worker, int64_t lease_ms,
			int64_t ahead_ms, struct store_job *out, size_t max,
			size_t *n, struct sc_err *err)
{
	struct pg *p = impl;
	const struct store_claim_rule *r = p->rule;
	PGresult *res = NULL;
	int rc = version_due(p, err);

	if (rc)
		return rc;
	if (r && r->on) {
		rc = pg_claim_ruled(p, r, worker, lease_ms, ahead_ms, max,
				    &res, err);
	} else {
		/* The rule off (no configuration, tests, bench): one
		 * statement, in a transaction of its own after ST_CLAIM_PLAN's
		 * settings; one round trip. A failure leaves the transaction
		 * open, in error (pipe_run): rolled back here. */
		struct args a = {0};

		fill_claim_args(&a, now_ms(p), max, worker, lease_ms,
				ahead_ms);
		const struct pipe_step claim[] = {
			{.text = "BEGIN"},
			{.st = ST_CLAIM_PLAN},
			{.st = ST_CLAIM, .a = &a, .out = &res},
			{.text = "COMMIT"},
		};
		rc = pipe_run(p, claim, sizeof(claim) / sizeof(claim[0]),
			      err);
		if (rc && p->conn)
			(void)exec_const(p, "ROLLBACK", NULL);
	}
	if (rc)
		return rc;
	size_t got = (size_t)PQntuples(res);
	/* LIMIT keeps the rows at most max; the bound is belt and braces. */
	for (size_t i = 0; i < got && i < max; i++) {
		get_job(res, (int)i, &out[i]);
		out[i].overlapped = PQgetvalue(res, (int)i, 16)[0] == 't';
	}
	PQclear(res);
	*n = got < max ? got : max;
	return 0;
}

/* After a write fenced by lease_token matched nothing: the error of
 * store_lease_error (SC_ENOENT or SC_ELEASE) for the row `what` id, whose
 * existence statement `exists` reads. */
static int lease_error(struct pg *p, enum stmt exists, const char *what,
		       int64_t id, int64_t lease_token, const char *op,
		       struct sc_err *err)
{
	struct args a = {0};
	int n = 0;
	int rc;

	arg_i64(&a, id);
	rc = run_count(p, exists, &a, &n, err);
	if (rc)
		return rc;
	return store_lease_error(what, op, id, lease_token, n == 1, err);
}

static int fence_error(struct pg *p, int64_t id, int64_t lease_token,
		       const char *op, struct sc_err *err)
{
	return lease_error(p, (enum stmt)STORE_Q_JOB_GET, "job", id, lease_token, op, err);
}

/*
 * Runs ST_FINISH, one statement, with the crash points of store.h's
 * store_job_finish right before it is sent (a crash there leaves what a
 * crash before COMMIT would: the server aborts an open transaction of a
 * dead client). "store.commit:err" fails it there the same way: SC_EIO,
 * nothing committed. (A BEGIN/COMMIT around it would cost two round
 * trips per finish: about a third of the claim+complete throughput,
 * bench_pg.)
 */
static int run_finish(struct pg *p, const struct args *a,
		      enum job_state new_state, PGresult **res,
		      struct sc_err *err)
{
	*res = NULL;
	if (new_state == JOB_DONE)
		FAILPOINT("queue.before_complete_commit");
	else if (new_state == JOB_READY)
		FAILPOINT("queue.in_retry_schedule");
	if (FAILPOINT_ERR("store.commit"))
		return sc_err_set(err, SC_EIO, "I/O error during commit: "
				  "injected by failpoint store.commit");
	return run(p, ST_FINISH, a, res, err);
}

/* ST_FINISH's values (its comment lists them). */
static void fill_finish_args(struct pg *p, struct args *a, int64_t id,
			     int64_t lease_token, enum job_state new_state,
			     int64_t run_at_ms, const struct ledger_row *row,
			     bool mark, enum store_commit commit)
{
	arg_i64(a, id);
	arg_i64(a, lease_token);
	arg_i64(a, (int64_t)new_state);
	arg_i64(a, run_at_ms);
	arg_i64(a, row && row->finished_ms ? row->finished_ms : now_ms(p));
	arg_str(a, row && row->outcome[0] ? row->outcome
					  : store_finish_outcome(new_state));
	arg_str(a, row ? row->error_class : "");
	arg_str(a, row ? row->error_msg : NULL);
	arg_i64(a, row ? row->retry_hint_ms : 0);
	arg_str(a, row ? row->details_json : NULL);
	arg_bool(a, mark);
	arg_dur(a, commit);
}

static int pg_job_finish(void *impl, int64_t id, int64_t lease_token,
			 enum job_state new_state, int64_t run_at_ms,
			 const struct ledger_row *row, bool mark,
			 struct sc_err *err)
{
	struct pg *p = impl;
	struct args a = {0};
	PGresult *res;
	int rc;

	fill_finish_args(p, &a, id, lease_token, new_state, run_at_ms, row,
			 mark, store_commit_of_finish(new_state, mark));
	rc = run_finish(p, &a, new_state, &res, err);
	if (rc)
		return rc;
	bool done = PQntuples(res) == 1;
	PQclear(res);
	return done ? 0 : fence_error(p, id, lease_token, "finish", err);
}

/*
 * Completions ready together (store_job_complete_many; why sharing the
 * commit is safe: docs/internals/store.md, "Shared commits"): BEGIN,
 * each job's ST_FINISH, COMMIT, sent in one round trip (pipe_run) and
 * committed once, where one by one each was a round trip and a commit.
 * A refused job (its fence: no row) wrote nothing and does not stop the
 * others; it is told apart afterwards (fence_error).
 */
static int pg_job_complete_many(void *impl, const struct store_job *jobs,
				size_t n, const struct ledger_row *row,
				int *rcs, struct sc_err *err)
{
	struct pg *p = impl;
	struct args *a = calloc(n, sizeof(*a));
	struct pipe_step *v = calloc(n + 2, sizeof(*v));
	PGresult **res = calloc(n, sizeof(PGresult *));
	int rc = 0;

	if (!a || !v || !res) {
		free(a);
		free(v);
		free(res);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	v[0].text = "BEGIN";
	for (size_t i = 0; i < n; i++) {
		/* The batch's commit is the table's COMPLETE_MANY row. */
		fill_finish_args(p, &a[i], jobs[i].id, jobs[i].lease_token,
				 JOB_DONE, 0, row, false,
				 STORE_COMMIT_COMPLETE_MANY);
		v[i + 1] = (struct pipe_step){.st = ST_FINISH, .a = &a[i],
					      .out = &res[i]};
	}
	v[n + 1].text = "COMMIT";
	FAILPOINT("queue.before_complete_commit");
	if (FAILPOINT_ERR("store.commit"))
		rc = sc_err_set(err, SC_EIO, "I/O error during commit: "
				"injected by failpoint store.commit");
	if (!rc)
		rc = pipe_run(p, v, n + 2, err);
	if (rc && p->conn)
		(void)exec_const(p, "ROLLBACK", NULL);
	for (size_t i = 0; i < n; i++) {
		bool done = res[i] && PQntuples(res[i]) == 1;
		PQclear(res[i]);
		if (rc || done) {
			rcs[i] = rc;
			continue;
		}
		struct sc_err e = {0};
		rcs[i] = fence_error(p, jobs[i].id, jobs[i].lease_token,
				     "finish", &e);
		if (rcs[i] != SC_ELEASE && rcs[i] != SC_ENOENT) {
			/* Committed; only telling the refusal apart failed. */
			err_copy(err, &e);
			rc = rcs[i];
		}
	}
	free(a);
	free(v);
	free(res);
	return rc;
}

static int pg_server_now(void *impl, int64_t *out_ms, struct sc_err *err)
{
	PGresult *res;
	int rc = run_one(impl, ST_SERVER_NOW, NULL, "no server time", &res,
			 err);

	if (rc)
		return rc;
	*out_ms = get_i64(res, 0, 0);
	PQclear(res);
	return 0;
}

/* ---- ledger ------------------------------------------------------------ */

static void summary_row(const PGresult *r, int row,
			struct store_sched_summary *x, bool *oom)
{
	get_str(r, row, 0, x->schedule, sizeof(x->schedule));
	x->counts.ready_due = get_i64(r, row, 1);
	x->counts.delayed = get_i64(r, row, 2);
	x->counts.active = get_i64(r, row, 3);
	x->counts.dead = get_i64(r, row, 4);
	x->counts.done = get_i64(r, row, 5) - x->counts.ready_due -
			 x->counts.delayed - x->counts.active - x->counts.dead;
	x->has_last = !PQgetisnull(r, row, 6);
	if (x->has_last)
		get_fields(r, row, 6, &store_ledger_fields, &x->last, oom);
}

static int pg_sched_summaries(void *impl, const char *schedule,
			      struct store_sched_summary **out, size_t *n,
			      struct sc_err *err)
{
	struct pg *p = impl;
	struct args a = {0};
	PGresult *res;
	bool oom = false;
	int rc;

	arg_i64(&a, now_ms(p));
	if (schedule)
		arg_str(&a, schedule);
	rc = run(p, schedule ? ST_SUMMARIES_ONE : ST_SUMMARIES, &a, &res, err);
	if (rc)
		return rc;
	size_t len = (size_t)PQntuples(res);
	struct store_sched_summary *v = len ? calloc(len, sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < len; i++)
		summary_row(res, (int)i, &v[i], &oom);
	PQclear(res);
	if (oom || (len && !v)) {
		store_sched_summaries_free(v, v ? len : 0);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	*out = v;
	*n = len;
	return 0;
}

/* *out from the first row's state, tries, sent and body, in columns
 * c..c+3 (target names the row in an error). */
static int get_outbox(const PGresult *res, int c, const char *target,
		      struct outbox_entry *out, struct sc_err *err)
{
	struct outbox_entry e = {0};
	bool oom = false;

	get_fields(res, 0, c, &store_outbox_entry_fields, &e, &oom);
	if (oom)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	/* A guard keeps its row when prune takes its body (store.h). */
	if (!e.body && !store_body_may_be_pruned(e.state))
		return sc_err_set(err, SC_ECORRUPT, "outbox row of target %s "
				  "has no message body", target);
	*out = e;
	return 0;
}

static int pg_slot_look(void *impl, const char *schedule, int64_t slot_ms,
			const char *const *targets, size_t n_targets,
			bool *marked, int *staged, struct outbox_entry *out,
			size_t *n_others, struct sc_err *err)
{
	struct args a = {0};
	PGresult *res;
	char *arr = text_array(targets, n_targets);
	int rc;

	if (!arr)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	arg_slot(&a, schedule, slot_ms);
	arg_str(&a, arr);
	rc = run_one(impl, ST_SLOT_LOOK, &a, "slot look: no answer", &res,
		     err);
	free(arr);
	if (rc)
		return rc;
	*marked = get_i64(res, 0, 0) != 0;
	int64_t i = get_i64(res, 0, 1); /* NULL (0): no target has a row */
	if (!*marked && i >= 1 && (size_t)i <= n_targets) {
		rc = get_outbox(res, 2, targets[i - 1], out, err);
		if (!rc)
			*staged = (int)(i - 1);
	}
	if (!rc && !*marked && n_others)
		*n_others = (size_t)get_i64(res, 0, 6);
	PQclear(res);
	return rc;
}

/* ---- scheduler state, token cache -------------------------------------- */

/* The test seam of store.h: the reads that find each schedule's rows by
 * its head (PG_SUMMARIES, PG_LAST_OK_SQL). */
const char *store_pg_plan_sql(size_t i)
{
	static const enum stmt heads[] = {ST_SUMMARIES, ST_SUMMARIES_ONE,
					  (enum stmt)STORE_Q_LAST_SUCCESSES};

	return i < sizeof(heads) / sizeof(heads[0]) ? sql[heads[i]] : NULL;
}

const char *store_pg_claim_pick_sql(void)
{
	return sql[ST_CLAIM_PICK];
}

/* ---- pauses (issue 17) ------------------------------------------------ */

/* ---- the crons in force (issue 43) ------------------------------------- */

/* ---- retention (issue 15) -------------------------------------------- */

/*
 * Runs text (not prepared: a prune runs each statement once per batch,
 * and reads the size before and after) with a's values, every one typed
 * bigint or text as `types` says ('i' or 't' per value), so a statement
 * may leave one unused. *out as for run.
 */
static int pg_exec_once(struct pg *p, const char *text, const struct args *a,
			const char *types, PGresult **out, struct sc_err *err)
{
	Oid oids[ARGS_MAX];
	PGresult *res;
	int rc = ensure_conn(p, err);

	*out = NULL;
	if (rc)
		return rc;
	for (int i = 0; i < a->n; i++)
		oids[i] = types[i] == 'i' ? 20 : 25; /* int8, text */
	if (!PQsendQueryParams(p->conn, text, a->n, oids, a->v, NULL, NULL, 0))
		return fail(p, NULL, "prune", err);
	rc = collect(p, "prune", &res, err);
	if (rc)
		return rc;
	if (!res || result_failed(res)) {
		rc = fail(p, res, "prune", err);
		PQclear(res);
		return rc;
	}
	drain_notifies(p);
	*out = res;
	return 0;
}

/* An acked row's range (alias x): details first_ms..last_ms, its slot
 * when they are missing (ledger.c reads them the same way). Read as text,
 * so a malformed details_json cannot fail the prune. */
#define PG_ACK_FIRST(x)                                                    \
	"COALESCE(substring(" x ".details_json from "                       \
	"'\"first_ms\"\\s*:\\s*(-?[0-9]+)')::bigint, " x ".slot_ms)"
#define PG_ACK_LAST(x)                                                     \
	"COALESCE(substring(" x ".details_json from "                       \
	"'\"last_ms\"\\s*:\\s*(-?[0-9]+)')::bigint, " PG_ACK_FIRST(x) ")"
/* The slot of alias x has no job that may still run or be revived
 * (READY, ACTIVE, DEAD: store_prune.c K8, K9). */
#define PG_NO_LIVE_JOB(x)                                                  \
	"NOT EXISTS (SELECT 1 FROM jobs j WHERE j.schedule = " x             \
	".schedule AND j.slot_ms = " x ".slot_ms AND j.state <> "         \
	STORE_FROM_JOB_PRUNE ")"
/* A SENT or ABANDONED (closed unsent, schema 13) row that may go (K8). */
#define PG_GUARD_GOES                                                      \
	"o.state IN (" STORE_FROM_OUTBOX_PRUNE ") AND o.slot_ms < $1 AND "      \
	PG_NO_LIVE_JOB("o")

/*
 * The statements of a prune step (store_prune.c chooses the phase and its
 * order, and lists the rules the WHERE clauses keep, K1..K9). Each `del`
 * answers (rows, rows of the second table). Keyed phases (end != NULL):
 * $1 horizon, $2..$3 the step's range (lo, hi] of the slot or id; `end`
 * ($1 horizon, $2 lo, $3 offset) finds hi. The tables without an id
 * (bodies, guards, markers): $1 horizon, $2 how many at most (NULL: all,
 * a dry run's single step), $3 the jobs horizon (read by the bodies); the
 * rows that stay fail the condition, so each step finds new ones.
 */
static const struct {
	const char *end, *del;
} pg_prune_sql[STORE_PRUNE_N_PHASE] = {
	[STORE_PRUNE_LEDGER] = {
		"SELECT slot_ms FROM ledger WHERE slot_ms > $2 AND slot_ms < $1 "
		"ORDER BY slot_ms LIMIT 1 OFFSET $3",
		"WITH d AS (DELETE FROM ledger r WHERE r.slot_ms > $2 AND "
		"r.slot_ms <= $3 AND r.slot_ms < $1 AND NOT ("
		"(r.outcome IN ('lost', 'missed') AND NOT EXISTS (SELECT 1 FROM "
		"ledger s WHERE s.schedule = r.schedule AND s.slot_ms = "
		"r.slot_ms AND s.outcome = 'success') AND NOT EXISTS (SELECT 1 "
		"FROM ledger a WHERE a.outcome = 'acked' AND a.schedule = "
		"r.schedule AND a.slot_ms <= r.slot_ms AND r.slot_ms BETWEEN "
		PG_ACK_FIRST("a") " AND " PG_ACK_LAST("a") "))"
		" OR (r.outcome = 'acked' AND EXISTS (SELECT 1 FROM ledger l "
		"WHERE l.outcome IN ('lost', 'missed') AND l.schedule = "
		"r.schedule AND (l.slot_ms <= $2 OR l.slot_ms > $3 OR l.slot_ms >= "
		"$1) AND "
		"l.slot_ms BETWEEN " PG_ACK_FIRST("r") " AND " PG_ACK_LAST("r")
		"))) AND r.id NOT IN (SELECT id FROM ledger_head WHERE slot_ms "
		"> $2 AND slot_ms <= $3 UNION ALL SELECT ok_id FROM ledger_head "
		"WHERE ok_slot_ms > $2 AND ok_slot_ms <= $3 AND ok_id IS NOT "
		"NULL UNION ALL SELECT run_id FROM ledger_head WHERE "
		"run_slot_ms > $2 AND run_slot_ms <= $3 AND run_id IS NOT "
		"NULL) RETURNING 1) SELECT count(*), 0 FROM d",
	},
	[STORE_PRUNE_ALERTS] = {
		"SELECT id FROM alerts WHERE id > $2 ORDER BY id LIMIT 1 "
		"OFFSET $3",
		"WITH g AS (SELECT al.id FROM alerts al WHERE al.id > $2 AND "
		"al.id <= $3 AND al.status <> " STORE_BUT_ALERT_PRUNE
		" AND al.last_slot_ms < $1 "
		"AND "
		"NOT EXISTS (SELECT 1 FROM alert_sends x WHERE x.alert_id = "
		"al.id AND x.state NOT IN (" STORE_FROM_SEND_PRUNE "))), s AS "
		"(DELETE FROM "
		"alert_sends x USING g WHERE x.alert_id = g.id RETURNING 1), "
		"d AS (DELETE FROM alerts x USING g WHERE x.id = g.id "
		"RETURNING 1) SELECT (SELECT count(*) FROM d), (SELECT "
		"count(*) FROM s)",
	},
	[STORE_PRUNE_JOBS] = {
		"SELECT id FROM jobs WHERE id > $2 ORDER BY id LIMIT 1 "
		"OFFSET $3",
		"WITH d AS (DELETE FROM jobs WHERE id > $2 AND id <= $3 AND "
		"state = " STORE_FROM_JOB_PRUNE " AND slot_ms < $1 RETURNING 1) "
		"SELECT count(*), 0 "
		"FROM d",
	},
	[STORE_PRUNE_BODIES] = {
		NULL,
		"WITH d AS (DELETE FROM outbox_body WHERE ctid = ANY (ARRAY("
		"SELECT b.ctid FROM outbox_body b WHERE b.slot_ms < $1 AND "
		"EXISTS (SELECT 1 FROM outbox o WHERE o.schedule = b.schedule "
		"AND o.slot_ms = b.slot_ms AND o.target = b.target AND "
		"o.state = " STORE_FROM_BODY_PRUNE ") AND EXISTS (SELECT 1 FROM "
		"slot_markers m WHERE "
		"m.schedule = b.schedule AND m.slot_ms = b.slot_ms) AND NOT ($3 "
		"> 0 AND b.slot_ms < $3 AND " PG_NO_LIVE_JOB("b") ") LIMIT $2)) "
		"RETURNING 1) SELECT count(*), 0 FROM d",
	},
	[STORE_PRUNE_GUARDS] = {
		NULL,
		"WITH g AS (SELECT o.schedule, o.slot_ms, o.target FROM outbox "
		"o WHERE " PG_GUARD_GOES " LIMIT $2), b AS (DELETE FROM "
		"outbox_body x USING g WHERE x.schedule = g.schedule AND "
		"x.slot_ms = g.slot_ms AND x.target = g.target RETURNING 1), "
		"d AS (DELETE FROM outbox x USING g WHERE x.schedule = "
		"g.schedule AND x.slot_ms = g.slot_ms AND x.target = g.target "
		"RETURNING 1) SELECT (SELECT count(*) FROM d), (SELECT "
		"count(*) FROM b)",
	},
	[STORE_PRUNE_MARKERS] = {
		NULL,
		"WITH d AS (DELETE FROM slot_markers WHERE ctid = ANY (ARRAY("
		"SELECT m.ctid FROM slot_markers m WHERE m.slot_ms < $1 AND "
		PG_NO_LIVE_JOB("m") " AND NOT EXISTS (SELECT "
		"1 FROM outbox o WHERE o.schedule = m.schedule AND o.slot_ms = "
		"m.slot_ms AND o.state NOT IN (" STORE_FROM_OUTBOX_PRUNE ")) AND "
		"m.slot_ms < (SELECT "
		"max(n.slot_ms) FROM slot_markers n WHERE n.schedule = "
		"m.schedule) LIMIT $2)) RETURNING 1) SELECT count(*), 0 FROM d",
	},
};

/* The step's statements inside the caller's transaction. */
static int pg_prune_run(struct pg *p, const struct store_prune_step *st,
			struct store_prune_done *out, struct sc_err *err)
{
	const char *end = pg_prune_sql[st->phase].end;
	struct args a = {0};
	PGresult *res;
	int64_t hi = INT64_MAX;
	bool last = true;
	int rc;

	arg_i64(&a, st->before_ms);
	if (end) {
		arg_i64(&a, st->after);
		arg_i64(&a, (int64_t)st->max_rows - 1);
		rc = pg_exec_once(p, end, &a, "iii", &res, err);
		if (rc)
			return rc;
		last = PQntuples(res) == 0;
		hi = last ? INT64_MAX : get_i64(res, 0, 0);
		PQclear(res);
		a.n = 2;
		arg_i64(&a, hi);
	} else {
		if (st->dry_run)
			a.v[a.n++] = NULL; /* LIMIT NULL: all, one step */
		else
			arg_i64(&a, st->max_rows);
		arg_i64(&a, st->jobs_before_ms);
	}
	rc = pg_exec_once(p, pg_prune_sql[st->phase].del, &a, "iii", &res,
			  err);
	if (rc)
		return rc;
	*out = (struct store_prune_done){.n_rows = get_i64(res, 0, 0),
					 .n_more = get_i64(res, 0, 1),
					 .until = hi, .last = last};
	PQclear(res);
	/* A step of a table without an id that found fewer rows than it
	 * may take was the last (a dry run's one step always is). */
	if (!end)
		out->last = st->dry_run || out->n_rows < st->max_rows;
	return 0;
}

static int pg_prune_step(void *impl, const struct store_prune_step *st,
			 struct store_prune_done *out, struct sc_err *err)
{
	struct pg *p = impl;
	struct store_prune_done d = {0};
	int rc = ensure_conn(p, err);

	/* A step's statements cost past the planner's JIT threshold, and
	 * the compiling (7 to 10 ms a statement here) is never paid back in
	 * one execution. Local to the step: the handle's other work keeps
	 * the server's setting. */
	/* A step of a large store may take longer than the session's
	 * statement limit: LONG_OP_MS for its statements, on both sides. */
	p->long_ms = deadline_for(LONG_OP_MS);
	if (!rc)
		rc = exec_const(p, "BEGIN; SET LOCAL jit = off; SET LOCAL "
				"statement_timeout = '" LONG_OP_TIMEOUT "'", err);
	if (!rc)
		rc = pg_prune_run(p, st, &d, err);
	if (!rc && !st->dry_run)
		rc = exec_const(p, "COMMIT", err);
	if ((rc || st->dry_run) && p->conn)
		(void)exec_const(p, "ROLLBACK", NULL);
	p->long_ms = 0;
	if (!rc)
		*out = d;
	return rc;
}

static int pg_prune_size(void *impl, int64_t *used_bytes,
			 int64_t *file_bytes, const char **how,
			 struct sc_err *err)
{
	static const char *const tables[] = {
		"jobs", "ledger", "outbox", "outbox_body", "slot_markers",
		"alerts", "alert_sends",
	};
	struct args a = {0};
	PGresult *res;
	int64_t sum = 0;
	int rc;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		a.n = 0;
		arg_str(&a, tables[i]);
		rc = pg_exec_once(impl, "SELECT COALESCE(pg_total_relation_size("
				  "to_regclass($1)), 0)", &a, "t", &res, err);
		if (rc)
			return rc;
		sum += get_i64(res, 0, 0);
		PQclear(res);
	}
	*used_bytes = sum;
	*file_bytes = sum;
	*how = "postgresql pg_total_relation_size of the tables (space of "
	       "deleted rows is reused after autovacuum; it shrinks only "
	       "with VACUUM FULL)";
	return 0;
}

/* ---- alerts ------------------------------------------------------------ */

/* ---- waiting for work --------------------------------------------------- */

static void sleep_ms(int64_t ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	(void)nanosleep(&ts, NULL);
}

static int pg_wait(void *impl, int64_t timeout_ms, bool *changed,
		   struct sc_err *err)
{
	struct pg *p = impl;
	int64_t deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int rc;

	/* Every return is a reason to look (store.h): a notice, a timeout
	 * after which writes that send none are seen, or an error. */
	*changed = true;
	rc = ensure_conn(p, err);
	if (rc == 0 && !p->listening) {
		p->listening = true;
		rc = exec_const(p, "LISTEN " CHANNEL, err);
		if (rc)
			p->listening = false;
		/* What happened before LISTEN went unheard: wake at once
		 * once, and let the caller look again. */
		p->notified = true;
	}
	if (rc) {
		/* No channel: degrade to a plain sleep so callers that loop
		 * on wait do not spin while the database is away. */
		sleep_ms(deadline - clock_mono_ms());
		return rc;
	}
	for (;;) {
		/* A server going away either fails the read or leaves a
		 * FATAL message and a bad connection: both end the wait. */
		if (PQconsumeInput(p->conn) == 0 ||
		    PQstatus(p->conn) != CONNECTION_OK) {
			rc = fail(p, NULL, "wait", err);
			sleep_ms(deadline - clock_mono_ms());
			return rc;
		}
		drain_notifies(p);
		if (p->notified) {
			p->notified = false;
			return 0;
		}
		int64_t left = deadline - clock_mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd pfd = {PQsocket(p->conn), POLLIN, 0};
		int prc = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (prc < 0)
			return 0; /* a signal: let the caller look around */
	}
}

const struct store_ops store_pg_ops = {
	.name = "postgresql",
	.open = pg_open,
	.close = pg_close,
	.call = pg_call,
	.tx = pg_tx,
	.schema_check = pg_schema_check,
	.call_sql = sql,
	.claim_rule = pg_claim_rule,
	.job_claim = pg_job_claim,
	.job_finish = pg_job_finish,
	.job_complete_many = pg_job_complete_many,
	.server_now = pg_server_now,
	.sched_summaries = pg_sched_summaries,
	.slot_look = pg_slot_look,
	.prune_step = pg_prune_step,
	.prune_size = pg_prune_size,
	.wait = pg_wait,
};
