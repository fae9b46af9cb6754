/*
 * store_sqlite.c - the SQLite backend of store.h (one file, no server).
 *
 * Every operation is one transaction: either BEGIN IMMEDIATE ... COMMIT, or
 * a single writing statement in autocommit mode, which SQLite runs as its
 * own write transaction from its first step (no read-to-write upgrade, so
 * no SQLITE_BUSY_SNAPSHOT). The operations' SQL is prepared once per
 * connection and cached in `struct sq` (prune's and open's, run once, are
 * prepared per call); no SQL text is ever built from data.
 *
 * Durability (WAL mode; each commit's class is the durability table's,
 * store.h). The connection runs with synchronous = NORMAL, so SQLite never
 * fsyncs at commit, nor while the write lock is held; sync_for maps a
 * class to FULL (after COMMIT, the call waits for a group sync of the
 * -wal file: "group commit" below) or NORMAL (no sync: the WAL is synced
 * at checkpoints and by the next group sync). Invariant: the WAL is
 * append-only and a group sync flushes all of it, so a power cut leaves a
 * prefix of the commit history, never a hole (docs/internals/store.md,
 * "Durability"). A process crash (SIGKILL, OOM) loses nothing that was
 * committed: the WAL is in the OS page cache.
 *
 * Fencing (store.h): a fenced write carries FENCE_OK in its own statement.
 *
 * Disk full: a write that fails for space makes the handle fold in and
 * truncate the WAL before its next write, and checkpoint in small steps
 * from then on (reclaim_wal). Invariant: before a write, the free space
 * covers the WAL plus WAL_RESERVE_BYTES, else the WAL is folded in first
 * (wal_guard), so a checkpoint always fits once space is freed.
 *
 * Schema versioning: PRAGMA user_version holds SCHEMA_VERSION, and
 * PRAGMA application_id marks the file as ours. To change the schema, add a
 * step to `migrations[]` and bump SCHEMA_VERSION; steps run forward, in one
 * transaction, when a file of an older version is opened. store_open's
 * refusals (store.h) are judged from the file's header before SQLite opens
 * it (precheck_file), then from SQLite's view before any write
 * (check_schema).
 *
 * Reads at depth (issue 15): every ledger read a ledger years deep can
 * slow down has a statement whose plan uses an index (a statement per
 * filter shape of store_ledger_query; store_ledger_lost reads lost rows
 * and one seek each; store_sched_summaries and store_last_successes read
 * ledger_head, one row per schedule, and covering indexes).
 * tests/unit/test_ledger_query.c checks the plans through
 * store_sqlite_plan_sql; a new read belongs in that list. Since schema 9
 * no index of the ledger is in schedule order: ledger_day leads with the
 * day, so that a prune of the oldest days touches few pages (prune.md).
 *
 * Waiting for work (store_wait, store.h): SQLite has no notification
 * channel, so sq_wait watches the files another process's commit changes.
 *
 * Threading: one connection per handle, opened SQLITE_OPEN_NOMUTEX (a
 * handle is used by one thread at a time, store.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "failpoint.h"
#include "log.h"
#include "store.h"

#define SCHEMA_VERSION 15
#define APP_ID 0x53435231 /* "SCR1": this file belongs to surecron */
#define BUSY_TIMEOUT_MS 10000
/* Checkpoint the WAL every this many pages (~16 MB) rather than SQLite's
 * 1000: each checkpoint costs two fsyncs, and at 1000 pages they were half
 * of a worker's time. The WAL is truncated only beyond WAL_KEEP_BYTES, so
 * in steady state it is rewritten in place: truncating and regrowing it
 * after every checkpoint cost more kernel time than the writes. */
#define WAL_CHECKPOINT_PAGES 4000
#define WAL_KEEP_BYTES 33554432 /* 32 MiB */
/* After a write failed for a full disk (issue 10): checkpoint this often
 * and truncate the WAL at every reset, so that the WAL, which the normal
 * settings let grow to ~16 MiB, gives its space back at once and stays
 * below ~400 KiB on a volume that has none to spare. */
#define WAL_TIGHT_PAGES 100
/* Room a write keeps free beyond the WAL (see wal_guard): about one
 * transaction's worth of pages for a staged message and its rows. */
#define WAL_RESERVE_BYTES 262144 /* 256 KiB */
#define STR2(x) #x
#define STR(x) STR2(x)
/* The lease fence of a write made for a claimed job (store.h, fencing):
 * ?20 job id, ?21 lease token; both unbound (NULL) when not fenced. Part
 * of the writing statement itself, so the check and the write are one
 * write transaction: no takeover can commit between them. */
#define FENCE_OK                                                          \
	"(?20 IS NULL OR EXISTS (SELECT 1 FROM jobs WHERE id = ?20 AND "     \
	"lease_token = ?21 AND state = " STORE_FROM_FENCE "))"

/* ---- schema ---------------------------------------------------------- */

/*
 * migrations[k] takes a file from version k to k+1. Never edit a step that
 * has shipped; add one. States are stored as their enums' values (store.h,
 * "transitions").
 */
/* The day of a slot, as ledger_day indexes it: a read that seeks the
 * index must spell the expression the same way. */
#define DAY_OF(col) col " / 86400000"
/* The bucket list of the days from lo to hi (SQL expressions), for an IN:
 * a schedule's rows over a period are one seek of ledger_day per day. */
#define DAYS_FROM_TO(lo, hi)                                              \
	"(WITH RECURSIVE d(b) AS (SELECT " DAY_OF("(" lo ")") " UNION ALL "   \
	"SELECT b + 1 FROM d WHERE b < " DAY_OF("(" hi ")") ") SELECT b FROM d)"
/* The trigger's test: the inserted row (excluded) is newer than the head,
 * by slot then id, or the head has none. */
#define HEAD_NEWER                                                        \
	"(id IS NULL OR (excluded.slot_ms, excluded.id) > (slot_ms, id))"
#define HEAD_OK_NEWER                                                     \
	"(excluded.ok_id IS NOT NULL AND (ok_id IS NULL OR "                 \
	"(excluded.ok_slot_ms, excluded.ok_id) > (ok_slot_ms, ok_id)))"
#define HEAD_RUN_NEWER                                                    \
	"(excluded.run_id IS NOT NULL AND (run_id IS NULL OR "               \
	"(excluded.run_slot_ms, excluded.run_id) > (run_slot_ms, run_id)))"

/* Whether outcome x is a run's (LEDGER_RUN_OUTCOMES_SQL, the same list):
 * a CASE, not an IN, whose constant list SQLite turns into a temporary
 * b-tree at every run of a trigger. test_store checks the two agree. */
#define HEAD_RUN_OF(x)                                                    \
	"(CASE " x " WHEN 'success' THEN 1 WHEN 'failed' THEN 1 WHEN "      \
	"'lost' THEN 1 WHEN 'skipped' THEN 1 WHEN 'stalled' THEN 1 WHEN "   \
	"'released' THEN 1 ELSE 0 END)"

static const char *const migrations[SCHEMA_VERSION] = {
	/* 0 -> 1 */
	"CREATE TABLE jobs("
	" id INTEGER PRIMARY KEY,"
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" state INTEGER NOT NULL CHECK (state BETWEEN 0 AND 3),"
	" attempts INTEGER NOT NULL DEFAULT 0,"
	" n_stalls INTEGER NOT NULL DEFAULT 0,"
	" max_attempts INTEGER NOT NULL,"
	" backoff INTEGER NOT NULL,"
	" delay_ms INTEGER NOT NULL,"
	" run_at_ms INTEGER NOT NULL,"
	" lease_token INTEGER NOT NULL DEFAULT 0,"
	" lease_owner TEXT NOT NULL DEFAULT '',"
	" lease_expires_ms INTEGER NOT NULL DEFAULT 0,"
	" started_ms INTEGER NOT NULL DEFAULT 0,"
	" created_ms INTEGER NOT NULL,"
	" manual INTEGER NOT NULL DEFAULT 0,"
	" UNIQUE (schedule, slot_ms));"
	/* Partial indexes: finished jobs never weigh on claim or recovery. */
	"CREATE INDEX jobs_ready ON jobs(run_at_ms, id) WHERE state = 0;"
	"CREATE INDEX jobs_active ON jobs(lease_expires_ms) WHERE state = 1;"
	"CREATE TABLE ledger("
	" id INTEGER PRIMARY KEY,"
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" job_id INTEGER NOT NULL DEFAULT 0,"
	" attempt INTEGER NOT NULL DEFAULT 0,"
	" started_ms INTEGER NOT NULL DEFAULT 0,"
	" finished_ms INTEGER NOT NULL DEFAULT 0,"
	" outcome TEXT NOT NULL,"
	" error_class TEXT NOT NULL DEFAULT '',"
	" error_msg TEXT,"
	" retry_hint_ms INTEGER NOT NULL DEFAULT 0,"
	" details_json TEXT);"
	/* One index only: every ledger row costs a page write per index,
	 * and a job's rows are found by its (schedule, slot) too. */
	"CREATE INDEX ledger_schedule ON ledger(schedule, slot_ms);"
	"CREATE TABLE outbox("
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 5),"
	" n_tries INTEGER NOT NULL DEFAULT 0,"
	" body TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL,"
	" sent_ms INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (schedule, slot_ms, target));"
	"CREATE TABLE slot_markers("
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" completed_ms INTEGER NOT NULL,"
	" PRIMARY KEY (schedule, slot_ms));"
	"CREATE TABLE sched_state("
	" schedule TEXT PRIMARY KEY,"
	" last_slot_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);"
	"CREATE TABLE token_cache("
	" provider TEXT PRIMARY KEY,"
	" token TEXT NOT NULL,"
	" expires_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);"
	"PRAGMA application_id = 1396920881;" /* APP_ID in decimal */
	"PRAGMA user_version = 1;",
	/* 1 -> 2: a missed row once per slot (store.h,
	 * store_ledger_append): keep the first (lowest id) of each
	 * (schedule, slot), then let the index refuse the next. Partial, so
	 * attempt rows are written without touching it. */
	"DELETE FROM ledger WHERE outcome = 'missed' AND id NOT IN ("
	" SELECT min(id) FROM ledger WHERE outcome = 'missed'"
	" GROUP BY schedule, slot_ms);"
	"CREATE UNIQUE INDEX ledger_missed_once ON ledger(schedule, slot_ms)"
	" WHERE outcome = 'missed';"
	"PRAGMA user_version = 2;",
	/* 2 -> 3: message bodies move out of the outbox row (issue 10).
	 * Every state change (SENDING, SENT, FAILED, UNKNOWN) rewrote the
	 * row with its body, so on a nearly full volume each send used up
	 * freed space at once. The body is written once, at stage time,
	 * into outbox_body; the state row holds only state. Keyed like the
	 * outbox (per target), so store_outbox_put keeps its contract. */
	"CREATE TABLE outbox_body("
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" body TEXT NOT NULL,"
	" PRIMARY KEY (schedule, slot_ms, target));"
	"INSERT INTO outbox_body(schedule, slot_ms, target, body)"
	" SELECT schedule, slot_ms, target, body FROM outbox;"
	"ALTER TABLE outbox DROP COLUMN body;"
	"PRAGMA user_version = 3;",
	/* 3 -> 4: an alert is a delivery too (issue 13;
	 * docs/internals/store.md, schema 4 and the alert tables).
	 * jobs.alerted says whether a DEAD job's lost alert was raised. The
	 * partial index keeps the finished jobs out of the search for
	 * unalerted ones. */
	"ALTER TABLE jobs ADD COLUMN alerted INTEGER NOT NULL DEFAULT 0;"
	"UPDATE jobs SET alerted = 1 WHERE state = 3;"
	"CREATE INDEX jobs_unalerted ON jobs(id) WHERE state = 3 AND "
	"alerted = 0;"
	"CREATE TABLE alerts("
	" id INTEGER PRIMARY KEY,"
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" last_slot_ms INTEGER NOT NULL,"
	" n_slots INTEGER NOT NULL DEFAULT 1,"
	" reason TEXT NOT NULL,"
	" generation INTEGER NOT NULL DEFAULT 0,"
	" status INTEGER NOT NULL CHECK (status BETWEEN 0 AND 3),"
	" attempts INTEGER NOT NULL DEFAULT 0,"
	" error_msg TEXT NOT NULL DEFAULT '',"
	" job_id INTEGER NOT NULL DEFAULT 0,"
	" rounds INTEGER NOT NULL DEFAULT 1,"
	" staged_rounds INTEGER NOT NULL DEFAULT 0,"
	" created_ms INTEGER NOT NULL,"
	" round_ms INTEGER NOT NULL,"
	" closed_ms INTEGER NOT NULL DEFAULT 0,"
	" note TEXT NOT NULL DEFAULT '',"
	" UNIQUE (schedule, slot_ms, reason, generation));"
	"CREATE INDEX alerts_open ON alerts(schedule, slot_ms) WHERE "
	"status = 0;"
	"CREATE TABLE alert_sends("
	" id INTEGER PRIMARY KEY,"
	" alert_id INTEGER NOT NULL REFERENCES alerts(id),"
	" round INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 6),"
	" n_tries INTEGER NOT NULL DEFAULT 0,"
	" next_try_ms INTEGER NOT NULL,"
	" lease_token INTEGER NOT NULL DEFAULT 0,"
	" lease_expires_ms INTEGER NOT NULL DEFAULT 0,"
	" body TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" sent_ms INTEGER NOT NULL DEFAULT 0,"
	" last_error TEXT NOT NULL DEFAULT '',"
	" UNIQUE (alert_id, round, target));"
	/* What a claim looks at: rows waiting for a try, and SENDING rows
	 * by lease expiry; SENT and ABANDONED rows weigh on neither. */
	"CREATE INDEX alert_sends_due ON alert_sends(next_try_ms) WHERE "
	"state IN (1, 4, 5);"
	"CREATE INDEX alert_sends_lease ON alert_sends(lease_expires_ms) "
	"WHERE state = 2;"
	"PRAGMA user_version = 4;",
	/* 4 -> 5: scale (issue 15). ledger_period serves the queries over all
	 * schedules by period (the ledger without --schedule, prune by age);
	 * the two partial indexes keep the lost-slot report's reads to the
	 * rows it lists (lost and missed ones by period, and the acks), so
	 * attempt rows pay for one index more, not three. leases: named,
	 * expiring locks between nodes (the daily prune runs on one). */
	"CREATE INDEX ledger_period ON ledger(slot_ms);"
	"CREATE INDEX ledger_lost ON ledger(slot_ms) WHERE outcome IN "
	"('lost', 'missed');"
	"CREATE INDEX ledger_acked ON ledger(schedule, slot_ms) WHERE "
	"outcome = 'acked';"
	/* The unfinished jobs (READY, ACTIVE, DEAD) by schedule, for
	 * `status` (store_sched_summaries): DONE jobs, nearly all of them,
	 * are not in it, so a job pays for it until it finishes, and the
	 * per-schedule counts read it alone, not the table. */
	"CREATE INDEX jobs_open ON jobs(schedule, state, run_at_ms) WHERE "
	"state <> 2;"
	"CREATE TABLE leases("
	" name TEXT PRIMARY KEY,"
	" owner TEXT NOT NULL,"
	" expires_ms INTEGER NOT NULL);"
	"PRAGMA user_version = 5;",
	/* 5 -> 6: the last success of each schedule (issue 16: /metrics
	 * must not scan the ledger). Through ledger_schedule, a schedule
	 * failing for a month has its success behind 43,000 rows; this
	 * partial index holds success rows only, so the newest is one
	 * descending seek per schedule (store_last_successes), and only
	 * success rows pay for one index more. */
	"CREATE INDEX ledger_ok ON ledger(schedule, slot_ms) WHERE "
	"outcome = 'success';"
	"PRAGMA user_version = 6;",
	/* 6 -> 7: pauses (issue 17; store.h, struct store_pause), and a
	 * paused row once per slot by a partial unique index, as
	 * ledger_missed_once: only paused rows pay for it. */
	"CREATE TABLE pauses("
	" schedule TEXT PRIMARY KEY,"
	" from_ms INTEGER NOT NULL,"
	" until_ms INTEGER NOT NULL,"
	" paused_by TEXT NOT NULL,"
	" note TEXT NOT NULL,"
	" resumed INTEGER NOT NULL DEFAULT 0);"
	"CREATE UNIQUE INDEX ledger_paused_once ON ledger(schedule, slot_ms)"
	" WHERE outcome = 'paused';"
	"PRAGMA user_version = 7;",
	/* 7 -> 8: the skipped slots of a period (`overlap: skip`), which the
	 * lost-slot report lists apart: without an index of their own it read
	 * every row of the period through ledger_period (90 days of a
	 * 10,000,000-row ledger: 1.2 s). Partial: only skipped rows pay. */
	"CREATE INDEX ledger_skipped ON ledger(slot_ms) WHERE outcome = "
	"'skipped';"
	"PRAGMA user_version = 8;",
	/* 8 -> 9: a ledger that prunes by time (issue 15). A prune deletes
	 * the oldest slots of every schedule at once, and in the two indexes
	 * on (schedule, slot_ms) those rows sit on one leaf per schedule:
	 * each batch rewrote thousands of leaves, 51 us a row, 581 s for
	 * 9,000,000 rows. ledger_day puts the day of the slot first, so the
	 * rows of a batch are on a few hundred leaves (7 us a row), and a
	 * (schedule, slot) is still one seek, its day being known. What the
	 * per-schedule order served, the newest row and the newest success
	 * of each schedule, is kept in ledger_head by a trigger (the prune
	 * never deletes a head's rows: sq_prune_sql). The heads come from
	 * the old indexes before they go. */
	"CREATE TABLE ledger_head("
	" schedule TEXT PRIMARY KEY,"
	" id INTEGER,"
	" slot_ms INTEGER,"
	" ok_id INTEGER,"
	" ok_slot_ms INTEGER) WITHOUT ROWID;"
	"WITH RECURSIVE n(name) AS (SELECT min(schedule) FROM ledger "
	"INDEXED BY ledger_schedule UNION ALL SELECT (SELECT min(schedule) "
	"FROM ledger INDEXED BY ledger_schedule WHERE schedule > n.name) "
	"FROM n WHERE n.name IS NOT NULL) "
	"INSERT INTO ledger_head(schedule, id, slot_ms) SELECT n.name, l.id, "
	"l.slot_ms FROM n JOIN ledger l ON l.id = (SELECT id FROM ledger "
	"INDEXED BY ledger_schedule WHERE schedule = n.name ORDER BY "
	"slot_ms DESC, id DESC LIMIT 1);"
	"UPDATE ledger_head SET (ok_id, ok_slot_ms) = (SELECT id, slot_ms "
	"FROM ledger INDEXED BY ledger_ok WHERE outcome = 'success' AND "
	"schedule = ledger_head.schedule ORDER BY slot_ms DESC, id DESC "
	"LIMIT 1);"
	"CREATE TRIGGER ledger_head_new AFTER INSERT ON ledger BEGIN "
	"INSERT INTO ledger_head(schedule, id, slot_ms, ok_id, ok_slot_ms) "
	"VALUES (new.schedule, new.id, new.slot_ms, CASE WHEN new.outcome = "
	"'success' THEN new.id END, CASE WHEN new.outcome = 'success' THEN "
	"new.slot_ms END) ON CONFLICT (schedule) DO UPDATE SET "
	"id = CASE WHEN " HEAD_NEWER " THEN excluded.id ELSE id END, "
	"slot_ms = CASE WHEN " HEAD_NEWER " THEN excluded.slot_ms ELSE "
	"slot_ms END, "
	"ok_id = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_id ELSE ok_id "
	"END, "
	"ok_slot_ms = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_slot_ms "
	"ELSE ok_slot_ms END; "
	"END;"
	"DROP INDEX ledger_ok;"
	"DROP INDEX ledger_schedule;"
	"CREATE INDEX ledger_day ON ledger(" DAY_OF("slot_ms") ", schedule, "
	"slot_ms);"
	"PRAGMA user_version = 9;",
	/* 9 -> 10 (issue 43): `status` shows a schedule's last run (store.h,
	 * store_sched_summaries), not its newest row, which is as often an
	 * alert, an ack or a missed slot. ledger_head keeps the newest row
	 * of a run outcome (LEDGER_RUN_OUTCOMES_SQL) beside the newest row,
	 * by the same trigger. The heads are filled from the
	 * rows: a head whose newest row is a run is its own run; the others
	 * (the newest row an alert or a missed slot) take one pass over the
	 * ledger for the newest run slot of each, then one seek of
	 * ledger_day for its newest row; the pass is skipped when every head
	 * is a run already. */
	"ALTER TABLE ledger_head ADD COLUMN run_id INTEGER;"
	"ALTER TABLE ledger_head ADD COLUMN run_slot_ms INTEGER;"
	"UPDATE ledger_head SET run_id = id, run_slot_ms = slot_ms WHERE "
	"(SELECT outcome FROM ledger WHERE id = ledger_head.id) IN "
	LEDGER_RUN_OUTCOMES_SQL ";"
	"WITH m AS (SELECT schedule, max(slot_ms) AS s FROM ledger WHERE "
	"EXISTS (SELECT 1 FROM ledger_head WHERE run_id IS NULL) AND "
	"outcome IN " LEDGER_RUN_OUTCOMES_SQL " GROUP BY schedule) "
	"UPDATE ledger_head SET run_slot_ms = (SELECT s FROM m WHERE "
	"m.schedule = ledger_head.schedule) WHERE run_id IS NULL;"
	"UPDATE ledger_head SET run_id = (SELECT max(id) FROM ledger "
	"INDEXED BY ledger_day WHERE " DAY_OF("slot_ms") " = "
	DAY_OF("ledger_head.run_slot_ms") " AND schedule = "
	"ledger_head.schedule AND slot_ms = ledger_head.run_slot_ms AND "
	"outcome IN " LEDGER_RUN_OUTCOMES_SQL ") WHERE run_id IS NULL AND "
	"run_slot_ms IS NOT NULL;"
	"DROP TRIGGER ledger_head_new;"
	"CREATE TRIGGER ledger_head_new AFTER INSERT ON ledger BEGIN "
	"INSERT INTO ledger_head(schedule, id, slot_ms, ok_id, ok_slot_ms, "
	"run_id, run_slot_ms) "
	"VALUES (new.schedule, new.id, new.slot_ms, CASE WHEN new.outcome = "
	"'success' THEN new.id END, CASE WHEN new.outcome = 'success' THEN "
	"new.slot_ms END, CASE WHEN new.outcome IN " LEDGER_RUN_OUTCOMES_SQL
	" THEN new.id END, CASE WHEN new.outcome IN " LEDGER_RUN_OUTCOMES_SQL
	" THEN new.slot_ms END) ON CONFLICT (schedule) DO UPDATE SET "
	"id = CASE WHEN " HEAD_NEWER " THEN excluded.id ELSE id END, "
	"slot_ms = CASE WHEN " HEAD_NEWER " THEN excluded.slot_ms ELSE "
	"slot_ms END, "
	"ok_id = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_id ELSE ok_id "
	"END, "
	"ok_slot_ms = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_slot_ms "
	"ELSE ok_slot_ms END, "
	"run_id = CASE WHEN " HEAD_RUN_NEWER " THEN excluded.run_id ELSE "
	"run_id END, "
	"run_slot_ms = CASE WHEN " HEAD_RUN_NEWER " THEN excluded.run_slot_ms "
	"ELSE run_slot_ms END; "
	"END;"
	"PRAGMA user_version = 10;",
	/* 10 -> 11 (issue 43): the nodes, as each daemon publishes itself
	 * (store_node_beat). One row per daemon run; O(nodes). */
	"CREATE TABLE nodes("
	" id TEXT PRIMARY KEY,"
	" host TEXT NOT NULL,"
	" pid INTEGER NOT NULL,"
	" version TEXT NOT NULL,"
	" config_digest TEXT NOT NULL,"
	" started_ms INTEGER NOT NULL,"
	" seen_ms INTEGER NOT NULL) WITHOUT ROWID;"
	"PRAGMA user_version = 11;",
	/* 11 -> 12 (issue 45): the same heads, a cheaper trigger. An IN
	 * over six constants is a temporary b-tree that SQLite builds at
	 * every run of the program, and the trigger had two: a third of a
	 * ledger insert's cost. A CASE over the outcome (HEAD_RUN_OF) is a
	 * few comparisons. */
	"DROP TRIGGER ledger_head_new;"
	"CREATE TRIGGER ledger_head_new AFTER INSERT ON ledger BEGIN "
	"INSERT INTO ledger_head(schedule, id, slot_ms, ok_id, ok_slot_ms, "
	"run_id, run_slot_ms) "
	"VALUES (new.schedule, new.id, new.slot_ms, CASE WHEN new.outcome = "
	"'success' THEN new.id END, CASE WHEN new.outcome = 'success' THEN "
	"new.slot_ms END, CASE WHEN " HEAD_RUN_OF("new.outcome")
	" THEN new.id END, CASE WHEN " HEAD_RUN_OF("new.outcome")
	" THEN new.slot_ms END) ON CONFLICT (schedule) DO UPDATE SET "
	"id = CASE WHEN " HEAD_NEWER " THEN excluded.id ELSE id END, "
	"slot_ms = CASE WHEN " HEAD_NEWER " THEN excluded.slot_ms ELSE "
	"slot_ms END, "
	"ok_id = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_id ELSE ok_id "
	"END, "
	"ok_slot_ms = CASE WHEN " HEAD_OK_NEWER " THEN excluded.ok_slot_ms "
	"ELSE ok_slot_ms END, "
	"run_id = CASE WHEN " HEAD_RUN_NEWER " THEN excluded.run_id ELSE "
	"run_id END, "
	"run_slot_ms = CASE WHEN " HEAD_RUN_NEWER " THEN excluded.run_slot_ms "
	"ELSE run_slot_ms END; "
	"END;"
	"PRAGMA user_version = 12;",
	/* 12 -> 13 (issue 43): reloads keep every slot's story. A staged
	 * copy of a target removed from its schedule is closed as
	 * ABANDONED (6) with a ledger row of its own (store_outbox_abandon):
	 * the outbox's CHECK allowed 1..5, and SQLite changes a CHECK only
	 * by copying the table (the state rows carry no body since schema
	 * 3, so the copy is of small rows; nothing else refers to the
	 * table). ledger_abandoned serves the lost-slot report's read of
	 * abandoned rows as ledger_skipped serves the skipped ones.
	 * cron_history holds each schedule's crons in force, one record per
	 * change (store_cron_note_many), for `audit`. */
	"CREATE TABLE outbox_new("
	" schedule TEXT NOT NULL,"
	" slot_ms INTEGER NOT NULL,"
	" target TEXT NOT NULL,"
	" state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 6),"
	" n_tries INTEGER NOT NULL DEFAULT 0,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL,"
	" sent_ms INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (schedule, slot_ms, target));"
	"INSERT INTO outbox_new(schedule, slot_ms, target, state, n_tries, "
	"created_ms, updated_ms, sent_ms) SELECT schedule, slot_ms, target, "
	"state, n_tries, created_ms, updated_ms, sent_ms FROM outbox "
	"ORDER BY rowid;"
	"DROP TABLE outbox;"
	"ALTER TABLE outbox_new RENAME TO outbox;"
	"CREATE INDEX ledger_abandoned ON ledger(slot_ms) WHERE outcome = "
	"'abandoned';"
	"CREATE TABLE cron_history("
	" schedule TEXT NOT NULL,"
	" from_ms INTEGER NOT NULL,"
	" cron TEXT NOT NULL,"
	" tz TEXT NOT NULL,"
	" recorded_ms INTEGER NOT NULL,"
	" PRIMARY KEY (schedule, from_ms)) WITHOUT ROWID;"
	"PRAGMA user_version = 13;",
	/* 13 -> 14: nothing. PostgreSQL's schema 14 (issue 42, each node's
	 * clock offset) has no SQLite counterpart; the step keeps the
	 * version of both backends the same for the same schema. */
	"PRAGMA user_version = 14;",
	/* 14 -> 15 (issue 45): a completion writes one index page fewer.
	 * jobs_open held ACTIVE jobs too, so every completion (ACTIVE to
	 * DONE) took its entry out of it besides the one of jobs_active:
	 * a page of WAL more per commit, about an eighth of a completion's
	 * instructions. jobs_open now holds READY and DEAD jobs only, and
	 * jobs_active, led by the schedule, answers what the ACTIVE entries
	 * of jobs_open answered (is a job of this schedule running: one
	 * seek; the per-schedule counts of `status`). The reads of ACTIVE
	 * jobs by lease (recovery, the next lease to expire) walk the whole
	 * of jobs_active, which holds no more jobs than run at once. The
	 * test is spelled `state = 0 OR state = 3` so that a read's
	 * `state = 0` or `state = 3` implies it (SQLite proves a partial
	 * index usable term by term, through an OR but not an IN). */
	"DROP INDEX jobs_open;"
	"CREATE INDEX jobs_open ON jobs(schedule, state, run_at_ms) WHERE "
	"state = 0 OR state = 3;"
	"DROP INDEX jobs_active;"
	"CREATE INDEX jobs_active ON jobs(schedule, lease_expires_ms) WHERE "
	"state = 1;"
	"PRAGMA user_version = 15;",
};

/* ---- the statement cache --------------------------------------------- */

/* A send row and its alert's fields (store_send_fields); column 4
 * is given by the statement (a claim reports an expired SENDING as
 * UNKNOWN), column 11 is the body or NULL. */
#define SEND_COLS(state, body)                                            \
	STORE_SEND_COLS(state, body)                                         \
	" FROM alert_sends s JOIN alerts a ON a.id = s.alert_id"

#define LEDGER_COLS "id, " STORE_LEDGER_COLS
#define SCHED_SET_SQL                                                     \
	"INSERT INTO sched_state(schedule, last_slot_ms, updated_ms) "       \
	"VALUES (?1, ?2, ?3) ON CONFLICT (schedule) DO UPDATE SET "         \
	"last_slot_ms = max(last_slot_ms, excluded.last_slot_ms), "         \
	"updated_ms = excluded.updated_ms"
/* The conflict target names the partial index ledger_missed_once, so
 * only that conflict is ignored; any other constraint still fails. */
#define LEDGER_MISSED_SQL                                                 \
	"INSERT INTO ledger(" STORE_LEDGER_COLS ") "                         \
	"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "            \
	"ON CONFLICT (schedule, slot_ms) WHERE outcome = 'missed' "         \
	"DO NOTHING"

#define LEDGER_COLS_L                                                     \
	"l.id, l.schedule, l.slot_ms, l.job_id, l.attempt, l.started_ms, "   \
	"l.finished_ms, l.outcome, l.error_class, l.error_msg, "             \
	"l.retry_hint_ms, l.details_json"

/* The lost-slot report (store_ledger_lost): the lost and missed rows of
 * the period through the partial index ledger_lost (they are few however
 * deep the ledger is), each with the finish of the newest success row of
 * its (schedule, slot): one probe of ledger_day per row, whose entries
 * for a slot come in id order. Column 12: recovered_ms. */
#define LEDGER_LOST_SQL(filter)                                           \
	"SELECT " LEDGER_COLS_L ", COALESCE((SELECT CASE WHEN "              \
	"s.finished_ms <> 0 THEN s.finished_ms ELSE 1 END FROM ledger s "    \
	"INDEXED BY ledger_day WHERE " DAY_OF("s.slot_ms") " = "             \
	DAY_OF("l.slot_ms") " AND s.schedule = l.schedule AND "              \
	"s.slot_ms = l.slot_ms AND "                                         \
	"s.outcome = 'success' ORDER BY s.id DESC LIMIT 1), 0) "             \
	"FROM ledger l INDEXED BY ledger_lost "                              \
	"WHERE l.outcome IN ('lost', 'missed') AND l.slot_ms >= ?2 AND "     \
	"l.slot_ms < ?3" filter " ORDER BY l.id"

/*
 * store_sched_summaries reads three streams, each in schedule order, and
 * merges them (sq_sched_summaries):
 *   - the newest run row of each schedule (a row of
 *     LEDGER_RUN_OUTCOMES_SQL, issue 43: never an alert's or a missed
 *     slot's): ledger_head's run_id, kept by the trigger
 *     ledger_head_new, in schedule order (its primary key), one rowid
 *     lookup per schedule whatever the number of rows;
 *   - the jobs of each schedule (count over the covering unique index on
 *     (schedule, slot_ms), never the table);
 *   - its unfinished jobs: READY due or delayed and DEAD from the
 *     partial covering index jobs_open, ACTIVE from jobs_active (schema
 *     15: both lead with the schedule, neither holds a DONE job), one
 *     sort of the unfinished jobs by schedule.
 * DONE is the total less the unfinished. A head whose row is gone (a
 * prune in the same instant) joins no row: the schedule has none.
 */
#define SUM_LAST_SQL(filter)                                              \
	"SELECT " LEDGER_COLS_L " FROM ledger_head h JOIN ledger l ON "      \
	"l.id = h.run_id" filter " ORDER BY h.schedule"
/*
 * store_last_successes (issue 16): ledger_head's newest success of each
 * schedule (the trigger keeps it by slot, then id), and one rowid lookup
 * for its finish. Columns: schedule, id, slot_ms, finished_ms.
 */
#define LAST_OK_SQL                                                       \
	"SELECT h.schedule, l.id, l.slot_ms, l.finished_ms FROM ledger_head " \
	"h JOIN ledger l ON l.id = h.ok_id ORDER BY h.schedule"
/* ?1 now. Columns: schedule, ready_due, delayed, active, dead. */
#define SUM_OPEN_SQL(filter)                                              \
	"SELECT schedule, sum(state = " STORE_SQL_READY " AND run_at_ms <= " \
	"?1), sum(state = " STORE_SQL_READY " AND run_at_ms > ?1), "         \
	"sum(state = " STORE_SQL_ACTIVE "), sum(state = " STORE_SQL_DEAD ") " \
	"FROM (SELECT schedule, state, run_at_ms FROM jobs WHERE "           \
	"(state = " STORE_SQL_READY " OR state = " STORE_SQL_DEAD ")" filter \
	" UNION ALL SELECT schedule, " STORE_SQL_ACTIVE ", 0 "               \
	"FROM jobs WHERE state = " STORE_SQL_ACTIVE filter                   \
	") GROUP BY schedule "                                               \
	"ORDER BY schedule"

/* The ledger query's filter shapes (store_lq_shape). */
#define LQ_SQL_MAX 1024

enum stmt_id {
	/* 0 .. STORE_Q_N - 1: the one-statement operations (store.h) */
	ST_BEGIN = STORE_Q_N,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_JOB_PICK,
	ST_JOB_CLAIM,
	ST_JOB_STATE,
	ST_FENCE,
	ST_JOB_FINISH,
	ST_JOB_RELEASED,
	ST_JOB_ENDED,
	ST_SUM_LAST,
	ST_SUM_LAST_ONE,
	ST_SUM_TOTAL,
	ST_SUM_TOTAL_ONE,
	ST_SUM_OPEN,
	ST_SUM_OPEN_ONE,
	ST_OUTBOX_BODY_PUT,
	ST_ABANDONED_ROW,
	ST_SCHED_TICK,
	N_STMT
};
/* The shared ledger inserts, also run inside this file's transactions. */
#define ST_LEDGER_INSERT ((enum stmt_id)STORE_Q_LEDGER_FENCED)
#define ST_LEDGER_INSERT_FREE ((enum stmt_id)STORE_Q_LEDGER_FREE)
#define ST_LEDGER_INSERT_MISSED ((enum stmt_id)STORE_Q_LEDGER_MISSED)

static const char *const stmt_sql[N_STMT] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	/* ?6 run_at, ?7 now, ?8 manual; a row (the id) when inserted. */
	[STORE_Q_JOB_INSERT] =
		"INSERT INTO jobs(schedule, slot_ms, state, max_attempts, "
		"backoff, delay_ms, run_at_ms, created_ms, manual) "
		"VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, ?7, ?8) "
		"ON CONFLICT (schedule, slot_ms) DO NOTHING RETURNING id",
	/* ?1 the slot (due at its own instant), ?2 schedule, ?3..?5 the
	 * policy, ?6 now. */
	[STORE_Q_JOB_ENQUEUE_MANY] =
		"INSERT INTO jobs(schedule, slot_ms, state, max_attempts, "
		"backoff, delay_ms, run_at_ms, created_ms, manual) "
		"VALUES (?2, ?1, 0, ?3, ?4, ?5, ?1, ?6, 0) "
		"ON CONFLICT (schedule, slot_ms) DO NOTHING",
	/* A tick's slot (due at its own instant): ?1 schedule, ?2 slot,
	 * ?3..?5 the policy, ?6 its schedule's state, ?7 now; the state
	 * follows (sq_then: ST_SCHED_TICK). */
	[STORE_Q_JOB_ENQUEUE_TICK] =
		"INSERT INTO jobs(schedule, slot_ms, state, max_attempts, "
		"backoff, delay_ms, run_at_ms, created_ms, manual) "
		"VALUES (?1, ?2, 0, ?3, ?4, ?5, ?2, ?7, 0) "
		"ON CONFLICT (schedule, slot_ms) DO NOTHING",
	[ST_SCHED_TICK] =
		"INSERT INTO sched_state(schedule, last_slot_ms, updated_ms) "
		"VALUES (?1, ?6, ?7) ON CONFLICT (schedule) DO UPDATE SET "
		"last_slot_ms = max(last_slot_ms, excluded.last_slot_ms), "
		"updated_ms = excluded.updated_ms",
	[STORE_Q_JOB_ID_OF] = "SELECT id FROM jobs WHERE schedule = ?1 AND "
			      "slot_ms = ?2",
	/*
	 * The claim's choice (store.h: the claim order and the overlap
	 * rule). ?1 now, ?2 ahead, ?4 rule on, ?5 allow, ?6 skip
	 * (store_claim_rule's framed lists), ?7 1 for retries, 0 for first
	 * attempts: sq_job_claim runs this once for each, two walks of
	 * jobs_ready in its order (docs/internals/store.md, "Claim order"),
	 * and stops stepping when it has taken enough. Columns 0-15 are the job (STORE_JOB_COLS: the walk
	 * reads the row anyway, and the claim then sets the taken job's new
	 * fields itself rather than reading the row again, issue 45);
	 * column 16 is the job's verdict: 0 take it, 1 take it flagged
	 * overlapped, NULL pass over it. An allow job (or the rule off) is
	 * taken with no further read; a queue job only when not held (a job
	 * of its schedule ACTIVE, or an earlier one due: store.h,
	 * store_overlap_set); a skip job always, flagged when held. "Earlier"
	 * is bounded by the candidate itself, never by now: an earlier first
	 * attempt b of a first attempt j has (b.run_at, b.id) < (j.run_at,
	 * j.id), and for a retry j, an
	 * earlier job is any due first attempt (one seek, the first found
	 * ends it) or a retry with (run_at, id) < j's. Every test is one seek
	 * of a partial index led by the schedule, which holds no DONE job:
	 * jobs_active (schedule, lease_expires) for the ACTIVE test,
	 * jobs_open (schedule, state, run_at) of the READY and DEAD jobs for
	 * the others (`state = 0` lets SQLite use it; the `state <> 2` kept
	 * beside it is what made the schema-5 index usable), each ended by
	 * the first entry that matches: the first job of a schedule finds
	 * only itself in its range, a later one finds an earlier one at once,
	 * whatever the depth of the backlog. The tests
	 * sit in WHEN clauses, which SQLite evaluates lazily in order (an OR
	 * there jumps), and each walked row is evaluated once: no outer
	 * query repeats the expression in a WHERE. A schedule's due jobs of
	 * the other class (retries before a first attempt's instant, first
	 * attempts for a retry's own test) are passed over in that seek, so a
	 * test costs one step more per such job; they are few (a retry waits
	 * out its backoff, and first attempts are taken before retries).
	 * The claim runs under BEGIN IMMEDIATE: no other handle's claim or
	 * finish commits between this read and the update, so "no ACTIVE
	 * job" holds across processes. ?8 (issue 43): 1 to take only the
	 * schedules this node knows (store_claim_known_set; 0: any). The
	 * test is sc_known (known_fn), a lookup in the hash
	 * the set was built with: an IN over json_each(the list) built its
	 * set again at every run of the statement, 15-30 ms and 4 MB a
	 * claim at 100,000 schedules (issue 45).
	 */
	[ST_JOB_PICK] =
		"SELECT " STORE_JOB_COLS_J ", CASE WHEN ?4 = 0 OR instr(?5, "
		"char(10) || "
		"j.schedule || char(10)) > 0 THEN 0 "
		"WHEN EXISTS (SELECT 1 FROM jobs a WHERE a.schedule = j.schedule "
		"AND a.state = " STORE_SQL_ACTIVE ") "
		"OR (?7 = 1 AND EXISTS (SELECT 1 FROM jobs f WHERE f.schedule = "
		"j.schedule AND f.state = " STORE_FROM_CLAIM " AND f.state <> "
		STORE_SQL_DONE " AND f.run_at_ms <= "
		"?1 + ?2 AND f.attempts = 0)) "
		"OR EXISTS (SELECT 1 FROM jobs b WHERE b.schedule = j.schedule "
		"AND b.state = " STORE_FROM_CLAIM " AND b.state <> " STORE_SQL_DONE
		" AND b.run_at_ms <= j.run_at_ms "
		"AND (b.attempts > 0) = ?7 AND (b.run_at_ms, b.id) < "
		"(j.run_at_ms, j.id)) "
		"THEN CASE WHEN instr(?6, char(10) || j.schedule || char(10)) > 0 "
		"THEN 1 END ELSE 0 END "
		"FROM jobs j WHERE j.state = " STORE_FROM_CLAIM " AND j.run_at_ms <= "
		"?1 + ?2 "
		"AND (j.attempts > 0) = ?7 AND (?8 = 0 OR sc_known(j.schedule)) "
		"ORDER BY j.run_at_ms, j.id",
	/* The fencing token is per job and only grows, so every claim of a
	 * job hands out a token no earlier claim of it had. ?5: the job
	 * ST_JOB_PICK chose. No RETURNING: SQLite gathers a RETURNING
	 * clause's rows in a temporary b-tree made and dropped at every
	 * run (a quarter of a claim's cost). Nor a read of the row after
	 * it: ST_JOB_PICK returned the row under the same write lock, so
	 * sq_job_claim applies these same changes to it (keep the two in
	 * step). A finish reads its row back by id (ST_JOB_ENDED, one
	 * seek) only when its caller has no copy of the claim, a release
	 * writes its ledger row from the row by id (ST_JOB_RELEASED). */
	[ST_JOB_CLAIM] =
		"UPDATE jobs SET state = " STORE_SQL_ACTIVE ", "
		"attempts = attempts + 1, "
		"lease_token = lease_token + 1, lease_owner = ?1, "
		"lease_expires_ms = ?2, started_ms = MAX(?3, run_at_ms) "
		"WHERE id = ?5 AND state = " STORE_FROM_CLAIM,
	/* ?3 now, ?4 the lease */
	[STORE_Q_JOB_HEARTBEAT] =
		"UPDATE jobs SET lease_expires_ms = ?3 + ?4 "
		"WHERE id = ?1 AND lease_token = ?2 AND state = "
		STORE_FROM_HEARTBEAT,
	[ST_JOB_STATE] = "SELECT state FROM jobs WHERE id = ?1",
	[ST_FENCE] = "SELECT 1 FROM jobs WHERE " FENCE_OK,
	[ST_JOB_FINISH] =
		"UPDATE jobs SET state = ?3, lease_expires_ms = 0, "
		"run_at_ms = CASE WHEN ?3 = " STORE_SQL_READY " THEN ?4 ELSE "
		"run_at_ms END "
		"WHERE id = ?1 AND lease_token = ?2 AND state = "
		STORE_FROM_FINISH,
	/* ?3 now, ?4 when it runs again; its ledger row (?5 class, ?6
	 * message) follows (sq_then: ST_JOB_RELEASED). */
	[STORE_Q_JOB_RELEASE] =
		"UPDATE jobs SET state = " STORE_SQL_READY ", "
		"attempts = attempts - 1, "
		"run_at_ms = ?4, lease_expires_ms = 0 "
		"WHERE id = ?1 AND lease_token = ?2 AND state = "
		STORE_FROM_RELEASE,
	[ST_JOB_RELEASED] =
		"INSERT INTO ledger(" STORE_LEDGER_COLS ") SELECT schedule, "
		"slot_ms, id, attempts + 1, started_ms, ?3, '" LEDGER_RELEASED
		"', ?5, ?6, 0, NULL FROM jobs WHERE id = ?1",
	/* The ended attempt's fields, read after ST_JOB_FINISH in its
	 * transaction. */
	[ST_JOB_ENDED] =
		"SELECT schedule, slot_ms, attempts, started_ms FROM jobs "
		"WHERE id = ?1",
	/* ?1 now. Recovery (store.c): whether any lease expired, then a
	 * batch of ?2 of them, read under the write lock of its transaction;
	 * ?1 id, ?2 the verdict's state, ?3 now. */
	[STORE_Q_ANY_EXPIRED] =
		"SELECT 1 FROM jobs WHERE state = " STORE_FROM_RECOVER
		" AND lease_expires_ms < ?1 LIMIT 1",
	[STORE_Q_JOB_EXPIRED] =
		"SELECT " STORE_STALL_COLS " FROM jobs "
		"WHERE state = " STORE_FROM_RECOVER " AND lease_expires_ms < ?1 "
		"ORDER BY lease_expires_ms, id LIMIT ?2",
	[STORE_Q_JOB_STALL] =
		"UPDATE jobs SET state = ?2, n_stalls = n_stalls + 1, "
		"run_at_ms = ?3, lease_expires_ms = 0 "
		"WHERE id = ?1 AND state = " STORE_FROM_RECOVER,
	[STORE_Q_JOB_GET] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE id = ?1",
	[STORE_Q_JOB_FIND] = "SELECT " STORE_JOB_COLS " FROM jobs WHERE "
			"schedule = ?1 AND slot_ms = ?2",
	[STORE_Q_JOB_REVIVE] =
		"UPDATE jobs SET state = " STORE_SQL_READY ", "
		"max_attempts = attempts + "
		"CASE WHEN ?3 > 0 THEN ?3 ELSE max_attempts END, n_stalls = 0, "
		"run_at_ms = ?2, lease_expires_ms = 0, alerted = 0 "
		"WHERE id = ?1 AND state = " STORE_FROM_REVIVE,
	[STORE_Q_JOB_LEASE_CLAMP] =
		"UPDATE jobs SET lease_expires_ms = ?1 + ?2 "
		"WHERE state = " STORE_FROM_LEASE_CLAMP " AND lease_expires_ms > "
		"?1 + ?2 + ?3",
	/* ?1 as ST_JOB_PICK's ?8: the first READY job the claim may take,
	 * by a walk of jobs_ready in order that passes over the others;
	 * INT64_MAX when nothing is due. */
	[STORE_Q_JOB_NEXT_DUE] =
		"SELECT COALESCE(min(m), " STORE_SQL_NEVER ") FROM ("
		"SELECT (SELECT run_at_ms FROM jobs WHERE state = " STORE_FROM_CLAIM
		" AND "
		"(?1 = 0 OR sc_known(schedule)) "
		"ORDER BY run_at_ms LIMIT 1) AS m "
		"UNION ALL "
		"SELECT min(lease_expires_ms) FROM jobs WHERE state = "
		STORE_FROM_RECOVER ")",
	[STORE_Q_JOB_COUNTS] =
		"SELECT count(*) FILTER (WHERE state = " STORE_SQL_READY
		" AND run_at_ms <= ?2), count(*) FILTER (WHERE state = "
		STORE_SQL_READY " AND run_at_ms > ?2), count(*) FILTER (WHERE "
		"state = " STORE_SQL_ACTIVE "), count(*) FILTER (WHERE state = "
		STORE_SQL_DONE "), count(*) FILTER (WHERE state = "
		STORE_SQL_DEAD ") FROM jobs WHERE ?1 IS NULL OR schedule = ?1",
	[STORE_Q_LEDGER_FENCED] =
		"INSERT INTO ledger(schedule, slot_ms, job_id, attempt, "
		"started_ms, finished_ms, outcome, error_class, error_msg, "
		"retry_hint_ms, details_json) "
		"SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 "
		"WHERE " FENCE_OK,
	/* The same, unfenced: an INSERT ... SELECT into a table with a
	 * trigger goes through a temporary b-tree, VALUES does not. */
	[STORE_Q_LEDGER_FREE] =
		"INSERT INTO ledger(schedule, slot_ms, job_id, attempt, "
		"started_ms, finished_ms, outcome, error_class, error_msg, "
		"retry_hint_ms, details_json) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[STORE_Q_LEDGER_MISSED] = LEDGER_MISSED_SQL,
	/* Rows written together, each as a missed one would be: the
	 * conflict target only ever matches a missed row. */
	[STORE_Q_LEDGER_MANY] = LEDGER_MISSED_SQL,
	[STORE_Q_LEDGER_LOST] = LEDGER_LOST_SQL(""),
	[STORE_Q_LEDGER_LOST_ONE] = LEDGER_LOST_SQL(" AND l.schedule = ?1"),
	/* store_sched_summaries' three reads (sq_sched_summaries). */
	[ST_SUM_LAST] = SUM_LAST_SQL(""),
	[ST_SUM_LAST_ONE] = SUM_LAST_SQL(" WHERE h.schedule = ?1"),
	[ST_SUM_TOTAL] = "SELECT schedule, count(*) FROM jobs "
			 "GROUP BY schedule",
	[ST_SUM_TOTAL_ONE] = "SELECT schedule, count(*) FROM jobs "
			     "WHERE schedule = ?1 GROUP BY schedule",
	[ST_SUM_OPEN] = SUM_OPEN_SQL(""),
	[ST_SUM_OPEN_ONE] = SUM_OPEN_SQL(" AND schedule = ?2"),
	[STORE_Q_LAST_SUCCESSES] = LAST_OK_SQL,
	[STORE_Q_OUTBOX_PUT] =
		"INSERT INTO outbox(schedule, slot_ms, target, state, "
		"created_ms, updated_ms) SELECT ?1, ?2, ?3, " STORE_SQL_PENDING
		", ?5, ?5 "
		"WHERE " FENCE_OK " "
		"ON CONFLICT (schedule, slot_ms, target) DO NOTHING",
	[ST_ABANDONED_ROW] =
		"INSERT INTO ledger(" STORE_LEDGER_COLS ") VALUES (?6, ?7, ?8, "
		"?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
	[ST_OUTBOX_BODY_PUT] =
		"INSERT INTO outbox_body(schedule, slot_ms, target, body) "
		"VALUES (?1, ?2, ?3, ?4) "
		"ON CONFLICT (schedule, slot_ms, target) DO NOTHING",
	[STORE_Q_OUTBOX_GET] =
		"SELECT o.state, o.n_tries, o.sent_ms, b.body FROM outbox o "
		"LEFT JOIN outbox_body b ON b.schedule = o.schedule AND "
		"b.slot_ms = o.slot_ms AND b.target = o.target "
		"WHERE o.schedule = ?1 AND o.slot_ms = ?2 AND o.target = ?3",
	[STORE_Q_OUTBOX_SET] =
		"UPDATE outbox SET state = ?4, "
		"n_tries = n_tries + (?4 = " STORE_SQL_SENDING "), "
		"sent_ms = CASE WHEN ?4 = " STORE_SQL_SENT " THEN ?5 ELSE "
		"sent_ms END, "
		"updated_ms = ?5 "
		"WHERE schedule = ?1 AND slot_ms = ?2 AND target = ?3 AND "
		"state NOT IN (" STORE_BUT_OUTBOX_SET ") AND " FENCE_OK,
	[STORE_Q_OUTBOX_RELEASE] =
		"UPDATE outbox SET state = ?4, "
		"sent_ms = CASE WHEN ?4 = " STORE_SQL_SENT " THEN ?5 ELSE "
		"sent_ms END, "
		"updated_ms = ?5 "
		"WHERE schedule = ?1 AND slot_ms = ?2 AND target = ?3 AND "
		"state = " STORE_FROM_OUTBOX_RELEASE " AND " FENCE_OK,
	[STORE_Q_OUTBOX_UNKNOWN] =
		"UPDATE outbox SET state = " STORE_SQL_UNKNOWN ", updated_ms = ?3 "
		"WHERE schedule = ?1 AND slot_ms = ?2 AND state = "
		STORE_FROM_OUTBOX_UNKNOWN " AND "
		FENCE_OK,
	[STORE_Q_OUTBOX_LIST] =
		"SELECT target, state, n_tries FROM outbox WHERE schedule = ?1 "
		"AND slot_ms = ?2 ORDER BY target",
	/* ?4 the state it must still be in; its ledger row, ?6..?16,
	 * follows (sq_then: ST_ABANDONED_ROW). */
	[STORE_Q_OUTBOX_ABANDON] =
		"UPDATE outbox SET state = " STORE_SQL_ABANDONED ", updated_ms = ?5 "
		"WHERE schedule = ?1 AND slot_ms = ?2 AND target = ?3 AND "
		"state = ?4 AND " FENCE_OK,
	[STORE_Q_CRON_NOTE] =
		"INSERT INTO cron_history(schedule, from_ms, cron, tz, "
		"recorded_ms) SELECT ?1, ?2, ?3, ?4, ?5 WHERE NOT EXISTS "
		"(SELECT 1 FROM (SELECT cron, tz FROM cron_history WHERE "
		"schedule = ?1 ORDER BY from_ms DESC LIMIT 1) h WHERE "
		"h.cron = ?3 AND h.tz = ?4) "
		"ON CONFLICT (schedule, from_ms) DO NOTHING",
	[STORE_Q_CRON_HISTORY] =
		"SELECT schedule, from_ms, cron, tz, recorded_ms FROM "
		"cron_history WHERE schedule = ?1 ORDER BY from_ms",
	[STORE_Q_SLOT_MARK] =
		"INSERT INTO slot_markers(schedule, slot_ms, completed_ms) "
		"SELECT ?1, ?2, ?3 WHERE " FENCE_OK " "
		"ON CONFLICT (schedule, slot_ms) DO NOTHING",
	[STORE_Q_SLOT_IS_MARKED] =
		"SELECT 1 FROM slot_markers WHERE schedule = ?1 AND "
		"slot_ms = ?2",
	[STORE_Q_SCHED_LAST_GET] = "SELECT last_slot_ms FROM sched_state "
			 "WHERE schedule = ?1",
	[STORE_Q_SCHED_LAST_SET] = SCHED_SET_SQL,
	[STORE_Q_SCHED_LAST_SET_MANY] = SCHED_SET_SQL,
	/* Name order (BINARY collation: byte order, as strcmp). */
	[STORE_Q_SCHED_LAST_ALL] = "SELECT schedule, last_slot_ms FROM sched_state "
			 "ORDER BY schedule",
	[STORE_Q_PAUSE_SET] =
		"INSERT INTO pauses(schedule, from_ms, until_ms, paused_by, "
		"note, resumed) VALUES (?1, ?2, ?3, ?4, ?5, 0) "
		"ON CONFLICT (schedule) DO UPDATE SET from_ms = excluded.from_ms, "
		"until_ms = excluded.until_ms, paused_by = excluded.paused_by, "
		"note = excluded.note, resumed = 0",
	[STORE_Q_PAUSE_END] = "UPDATE pauses SET until_ms = ?2, resumed = 1 "
			 "WHERE schedule = ?1 AND until_ms > ?2",
	[STORE_Q_PAUSE_GET] = "SELECT " STORE_PAUSE_COLS " FROM pauses "
			 "WHERE schedule = ?1",
	[STORE_Q_PAUSE_ALL] = "SELECT " STORE_PAUSE_COLS " FROM pauses "
			 "ORDER BY schedule",
	/* ?8, the clock offset, is not kept (bind_args). */
	[STORE_Q_NODE_BEAT] =
		"INSERT INTO nodes(id, host, pid, version, config_digest, "
		"started_ms, seen_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
		"ON CONFLICT (id) DO UPDATE SET host = excluded.host, "
		"pid = excluded.pid, version = excluded.version, "
		"config_digest = excluded.config_digest, "
		"started_ms = excluded.started_ms, seen_ms = excluded.seen_ms",
	/* No clock offset kept: read as not measured. */
	[STORE_Q_NODES] = "SELECT id, host, pid, version, config_digest, "
		     "started_ms, seen_ms, NULL FROM nodes ORDER BY id",
	[STORE_Q_NODE_LEAVE] = "DELETE FROM nodes WHERE id = ?1",
	/* The partial index ledger_paused_once, as LEDGER_MISSED_SQL. */
	[STORE_Q_LEDGER_PAUSED] =
		"INSERT INTO ledger(schedule, slot_ms, job_id, attempt, "
		"started_ms, finished_ms, outcome, error_class, error_msg, "
		"retry_hint_ms, details_json) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
		"ON CONFLICT (schedule, slot_ms) WHERE outcome = 'paused' "
		"DO NOTHING",
	[STORE_Q_TOKEN_GET] = "SELECT token, expires_ms FROM token_cache "
			 "WHERE provider = ?1",
	[STORE_Q_LEASE_DROP] =
		"DELETE FROM leases WHERE name = ?1 AND owner = ?2",
	[STORE_Q_TOKEN_PUT] =
		"INSERT INTO token_cache(provider, token, expires_ms, "
		"updated_ms) VALUES (?1, ?2, ?3, ?4) "
		"ON CONFLICT (provider) DO UPDATE SET token = excluded.token, "
		"expires_ms = excluded.expires_ms, "
		"updated_ms = excluded.updated_ms",
	[STORE_Q_TOKEN_DROP] = "DELETE FROM token_cache WHERE provider = ?1",
	/* ?1 name, ?2 owner, ?3 now, ?4 ttl; changes() says whether it
	 * was taken. */
	[STORE_Q_LEASE_TAKE] =
		"INSERT INTO leases(name, owner, expires_ms) "
		"VALUES(?1, ?2, ?3 + ?4) ON CONFLICT(name) DO UPDATE "
		"SET owner = excluded.owner, expires_ms = "
		"excluded.expires_ms WHERE leases.owner = "
		"excluded.owner OR leases.expires_ms <= ?3",
	/* ?11 now, ?13 closed_ms (store_alert_raise_rule). */
	[STORE_Q_ALERT_INSERT] =
		"INSERT INTO alerts(schedule, slot_ms, last_slot_ms, n_slots, "
		"reason, generation, status, attempts, error_msg, job_id, "
		"rounds, staged_rounds, created_ms, round_ms, closed_ms, note) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, 0, ?11, "
		"?11, ?13, ?12) "
		"ON CONFLICT (schedule, slot_ms, reason, generation) DO NOTHING "
		"RETURNING id",
	[STORE_Q_ALERT_ID] =
		"SELECT id FROM alerts WHERE schedule = ?1 AND slot_ms = ?2 "
		"AND reason = ?3 AND generation = ?4",
	/* The older open alerts of the slot and reason ?5, closed when
	 * store_alert_raise_rule says a new one supersedes them. */
	[STORE_Q_ALERT_SUPERSEDE] =
		"UPDATE alerts SET status = " STORE_SQL_CLOSED ", closed_ms = ?4 "
		"WHERE schedule = ?1 AND slot_ms = ?2 AND reason = ?5 AND "
		"status = " STORE_FROM_ALERT_SUPERSEDE " AND id < ?3",
	[STORE_Q_JOB_ALERTED] = "UPDATE jobs SET alerted = 1 WHERE id = ?1",
	[STORE_Q_DEAD_UNALERTED] =
		"SELECT j.id, j.schedule, j.slot_ms, j.attempts, "
		"COALESCE((SELECT l.error_msg FROM ledger l INDEXED BY "
		"ledger_day WHERE " DAY_OF("l.slot_ms") " = "
		DAY_OF("j.slot_ms") " AND l.schedule = j.schedule AND "
		"l.slot_ms = j.slot_ms AND "
		"l.outcome = 'lost' ORDER BY l.id DESC LIMIT 1), '') "
		"FROM jobs j WHERE j.state = " STORE_SQL_DEAD " AND j.alerted = 0 "
		"ORDER BY j.id LIMIT ?1",
	/* ?4 NULL: any slot; ?7 NULL: no limit. */
	[STORE_Q_ALERT_LIST] =
		"SELECT " STORE_ALERT_COLS " FROM alerts "
		"WHERE (?1 IS NULL OR schedule = ?1) AND (?2 = 0 OR status = "
		STORE_SQL_OPEN ") "
		"AND (?3 = 0 OR staged_rounds < rounds) AND (?4 IS NULL OR "
		"(slot_ms <= ?4 AND last_slot_ms >= ?4)) AND slot_ms >= ?5 AND "
		"slot_ms < ?6 ORDER BY id LIMIT coalesce(?7, -1)",
	[STORE_Q_ALERT_CLOSE] =
		"UPDATE alerts SET status = ?2, closed_ms = ?3, note = ?4 "
		"WHERE id = ?1 AND status = " STORE_FROM_ALERT_CLOSE,
	[STORE_Q_ALERT_EXISTS] = "SELECT 1 FROM alerts WHERE id = ?1",
	[STORE_Q_ALERT_REALERT] =
		"UPDATE alerts SET rounds = ?2 + 1, round_ms = ?3 "
		"WHERE id = ?1 AND status = " STORE_FROM_ALERT_REALERT
		" AND rounds = ?2",
	[STORE_Q_SEND_INSERT] =
		"INSERT INTO alert_sends(alert_id, round, target, state, "
		"next_try_ms, body, created_ms) VALUES (?2, ?3, ?1, "
		STORE_SQL_PENDING ", ?4, ?5, "
		"?4) ON CONFLICT (alert_id, round, target) DO NOTHING",
	[STORE_Q_ALERT_STAGED] =
		"UPDATE alerts SET staged_rounds = max(staged_rounds, ?2 + 1) "
		"WHERE id = ?1",
	/* ?1 now, ?2 max. Due: waiting for a try whose time has come, or
	 * SENDING under a lease that expired (its sender died mid-send:
	 * the copy may have arrived, hence UNKNOWN). */
	[STORE_Q_SEND_DUE] =
		"SELECT " SEND_COLS("CASE WHEN s.state = " STORE_FROM_SEND_RECLAIM
				    " THEN " STORE_SQL_UNKNOWN " ELSE "
				    "s.state END", "s.body") " "
		"WHERE ((s.state IN (" STORE_FROM_SEND_CLAIM ") AND "
		"s.next_try_ms <= ?1) OR (s.state = " STORE_FROM_SEND_RECLAIM
		" AND s.lease_expires_ms < ?1)) "
		"AND (?3 = 0 OR s.alert_id = ?3) "
		"ORDER BY s.id LIMIT ?2",
	/* The token is per row and only grows, like a job's. */
	[STORE_Q_SEND_TAKE] =
		"UPDATE alert_sends SET state = " STORE_SQL_SENDING ", "
		"n_tries = n_tries + 1, "
		"lease_token = lease_token + 1, lease_expires_ms = ?2 "
		"WHERE id = ?1 RETURNING n_tries, lease_token",
	/* ?1 id, ?2 token, ?3 state, ?4 next try, ?5 error, ?6 now. */
	[STORE_Q_SEND_FINISH] =
		"UPDATE alert_sends SET state = ?3, lease_expires_ms = 0, "
		"next_try_ms = CASE WHEN ?3 IN (" STORE_SQL_FAILED ", "
		STORE_SQL_UNKNOWN ") THEN ?4 ELSE "
		"next_try_ms END, sent_ms = CASE WHEN ?3 = " STORE_SQL_SENT
		" THEN ?6 ELSE "
		"sent_ms END, last_error = ?5 "
		"WHERE id = ?1 AND lease_token = ?2 AND state = "
		STORE_FROM_SEND_FINISH,
	[STORE_Q_SEND_EXISTS] = "SELECT 1 FROM alert_sends WHERE id = ?1",
	[STORE_Q_ALERT_SENDS] =
		"SELECT " SEND_COLS("s.state", "NULL") " WHERE s.alert_id = ?1 "
		"ORDER BY s.id",
	/* store_sla_scan: jobs_ready and jobs_active serve the first two. */
	[STORE_Q_SLA_LATE] =
		"SELECT " STORE_JOB_COLS " FROM jobs WHERE state = "
		STORE_SQL_READY " AND "
		"attempts = 0 AND run_at_ms <= ?1 ORDER BY run_at_ms, id "
		"LIMIT ?2",
	[STORE_Q_SLA_RUNNING] =
		"SELECT " STORE_JOB_COLS " FROM jobs WHERE state = "
		STORE_SQL_ACTIVE " AND "
		"started_ms <= ?1 ORDER BY started_ms, id LIMIT ?2",
	[STORE_Q_SLA_LAST] =
		"SELECT s.schedule, COALESCE((SELECT m.completed_ms FROM "
		"slot_markers m WHERE m.schedule = s.schedule ORDER BY "
		"m.slot_ms DESC LIMIT 1), 0), COALESCE((SELECT j.created_ms "
		"FROM jobs j WHERE j.schedule = s.schedule ORDER BY j.slot_ms "
		"LIMIT 1), 0) FROM sched_state s ORDER BY s.schedule LIMIT ?1",
};

enum sync_level { SYNC_UNSET = 0, SYNC_NORMAL = 1, SYNC_FULL = 2 };
struct sync_group;
struct sq;
static void hook_install(struct sq *q, int pages);

struct sq {
	sqlite3 *db;
	struct sc_clock *clock;
	enum sync_level sync;
	bool in_tx; /* inside sq_tx: calls join its transaction */
	int64_t busy_since_ms;
	bool wal_reclaim;       /* a write failed for a full disk: reclaim */
	bool wal_tight;         /* small checkpoints since a full disk */
	bool wal_low;           /* free space below the WAL: fold it in */
	unsigned busy_seed;
	const struct store_claim_rule *rule; /* store_overlap_set; NULL: off */
	char path[PATH_MAX];
	struct sync_group *group; /* the file's group commit (shared) */
	int ckpt_pages;           /* checkpoint when the WAL has this many */
	int sync_errno;           /* errno of a failed group sync, for db_fail */
	sqlite3_stmt *stmt[N_STMT];
	/* sq_wait's previous look at the files; !watched: none yet. */
	bool watched;
	int64_t watch_stamp[4];     /* db mtime, db size, wal mtime, wal size */
};

/* ---- errors ---------------------------------------------------------- */

/*
 * Maps a SQLite result code to an SC_E* code and records a message that
 * names the problem (disk full, I/O error with its errno, corruption) and
 * the operation. Returns the SC_E* code.
 */
static int db_fail(struct sq *q, int rc, const char *op, struct sc_err *err)
{
	int saved_errno = errno;
	int sys = q->db ? sqlite3_system_errno(q->db) : 0;
	const char *detail = q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc);
	int code;
	const char *what;

	/* SQLite does not always keep the errno of a failed write (it is 0
	 * after a failed COMMIT); errno itself still holds it here. */
	if (!sys && (rc & 0xff) == SQLITE_IOERR)
		sys = saved_errno;
	/* wal_hook's failed sync: SQLite reports it as SQLITE_ERROR, "SQL
	 * logic error"; the commit itself was made (wal_hook's comment). */
	if (q->sync_errno) {
		rc = SQLITE_IOERR_FSYNC;
		sys = q->sync_errno;
		detail = "the WAL sync after the commit failed: the write "
			 "may or may not survive a power cut";
		q->sync_errno = 0;
	}
	switch (rc & 0xff) {
	case SQLITE_FULL:
		code = SC_ENOSPC;
		what = "disk full";
		q->wal_reclaim = true;
		break;
	case SQLITE_IOERR:
		if (sys == ENOSPC || sys == EDQUOT || sys == EFBIG) {
			code = SC_ENOSPC;
			what = "no space left for the database";
			q->wal_reclaim = true;
		} else if (sys == ENOMEM || rc == SQLITE_IOERR_NOMEM) {
			/* The WAL index's mapping refused (an address-space
			 * limit): the runner's memory, not the disk, so the
			 * attempt is given back, not charged (issue 42). */
			code = SC_ENOMEM;
			what = "out of memory";
		} else {
			code = SC_EIO;
			what = "I/O error";
		}
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		code = SC_ECORRUPT;
		what = "database file is corrupt";
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		code = SC_EBUSY;
		what = "database is locked";
		break;
	case SQLITE_NOMEM:
		code = SC_ENOMEM;
		what = "out of memory";
		break;
	case SQLITE_PERM:
	case SQLITE_READONLY:
	case SQLITE_AUTH:
		code = SC_EACCES;
		what = "permission denied";
		break;
	case SQLITE_CANTOPEN:
		code = sys == EACCES ? SC_EACCES : SC_EIO;
		what = "cannot open the database";
		break;
	default:
		code = SC_EDB;
		what = "database error";
		break;
	}
	if (sys)
		sc_err_set(err, code, "%s during %s on %s: %s (%s)", what, op,
			   q->path, detail, strerror(sys));
	else
		sc_err_set(err, code, "%s during %s on %s: %s", what, op,
			   q->path, detail);
	LOG(SC_LOG_WARN, "store", "event=store_error op=%s code=%s sqlite=%d "
	       "errno=%d", op,
	       sc_strerror(code), rc, sys);
	return code;
}

/* ---- statements and transactions ------------------------------------- */

/*
 * The ledger query's filter shapes (issue 15). One statement with
 * "(?1 IS NULL OR schedule = ?1)" forms is planned once for every filter,
 * so SQLite could use no index for the schedule and scanned the ledger:
 * each shape gets its own statement instead, whose WHERE names only the
 * terms the filter has, so the planner sees them all. Outcomes with a
 * partial index (acked, missed, skipped, abandoned) are written as
 * literals so that index applies; the lost-or-missed shape without a
 * schedule reads ledger_lost, the skipped one ledger_skipped, the
 * abandoned one ledger_abandoned,
 * a bounded period without a schedule ledger_period. An open period (no
 * bound at all) drops the slot terms: with neither a schedule nor such an
 * outcome, that shape reads every row, which is what it returns.
 */
/* The SQL of shape k into buf (cap >= LQ_SQL_MAX). Parameters in order
 * of use, as store_ledger_query gives them: the schedule, since, until,
 * the outcome, the limit; a shape names only those it uses, plus the
 * limit. A schedule's shapes without a
 * partial index of their own seek ledger_day once per day of the period,
 * clipped to the days the ledger holds (an open period: all of them). */
static void lq_sql(int k, char *buf, size_t cap)
{
	bool desc = store_lq_desc(k), open = store_lq_open(k);
	int kind = store_lq_kind(k);
	bool sched = store_lq_scheduled(k);
	const char *by = "", *days = "";
	/* the parameters' numbers: since/until, the outcome, the limit */
	int p = sched ? 2 : 1, o = open ? p : p + 2;
	int lim = kind == STORE_LQ_OUTCOME || kind == STORE_LQ_LOST ? o + 1
								    : o;
	char period[64], outcome[96], limit[16];

	if (kind == STORE_LQ_ACKED)
		by = " INDEXED BY ledger_acked";
	else if (kind == STORE_LQ_MISSED)
		by = " INDEXED BY ledger_missed_once";
	else if (!sched && kind == STORE_LQ_SKIPPED)
		by = " INDEXED BY ledger_skipped";
	else if (!sched && kind == STORE_LQ_ABANDONED)
		by = " INDEXED BY ledger_abandoned";
	else if (!sched && kind == STORE_LQ_LOST)
		by = " INDEXED BY ledger_lost";
	else if (!sched && !open)
		by = " INDEXED BY ledger_period";
	else if (sched) {
		by = " INDEXED BY ledger_day";
		days = open ? " AND " DAY_OF("slot_ms") " IN " DAYS_FROM_TO(
				      "SELECT min(slot_ms) FROM ledger",
				      "SELECT max(slot_ms) FROM ledger")
			    : " AND " DAY_OF("slot_ms") " IN " DAYS_FROM_TO(
				      "max(?2, (SELECT min(slot_ms) FROM "
				      "ledger))",
				      "min(?3 - 1, (SELECT max(slot_ms) FROM "
				      "ledger))");
	}
	snprintf(period, sizeof(period), " AND slot_ms >= ?%d AND slot_ms < ?%d",
		 p, p + 1);
	if (kind == STORE_LQ_OUTCOME)
		snprintf(outcome, sizeof(outcome), " AND outcome = ?%d", o);
	else if (kind == STORE_LQ_LOST)
		snprintf(outcome, sizeof(outcome),
			 " AND outcome IN ('lost', 'missed') AND "
			 "(?%d IS NULL OR outcome = ?%d)", o, o);
	else
		snprintf(outcome, sizeof(outcome), "%s",
			 kind == STORE_LQ_ACKED ? " AND outcome = 'acked'"
			 : kind == STORE_LQ_MISSED ? " AND outcome = 'missed'"
			 : kind == STORE_LQ_SKIPPED ? " AND outcome = 'skipped'"
			 : kind == STORE_LQ_ABANDONED
				 ? " AND outcome = 'abandoned'"
				 : "");
	snprintf(limit, sizeof(limit), "?%d", lim);
	snprintf(buf, cap, "SELECT " LEDGER_COLS " FROM ledger%s WHERE 1%s%s%s%s "
		 "ORDER BY id%s LIMIT %s", by, days,
		 sched ? " AND schedule = ?1" : "", open ? "" : period, outcome,
		 desc ? " DESC" : "", limit);
}

/* Returns the cached statement id, prepared on first use (a ledger
 * query's shape from lq_sql). */
static int prep(struct sq *q, enum stmt_id id, sqlite3_stmt **out,
		struct sc_err *err)
{
	if (!q->stmt[id]) {
		char shape[LQ_SQL_MAX];
		const char *text = stmt_sql[id];

		if (STORE_Q_IS_SHAPE(id)) {
			lq_sql((int)id - STORE_Q_LEDGER_SHAPE0, shape,
			       sizeof(shape));
			text = shape;
		}
		int rc = sqlite3_prepare_v3(q->db, text, -1,
					    SQLITE_PREPARE_PERSISTENT,
					    &q->stmt[id], NULL);
		if (rc != SQLITE_OK) {
			q->stmt[id] = NULL;
			return db_fail(q, rc, "prepare", err);
		}
	}
	*out = q->stmt[id];
	return 0;
}

/* Resets a statement for its next use; bindings are dropped so that no
 * borrowed string pointer outlives the call that bound it. */
static void unprep(sqlite3_stmt *st)
{
	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

/* Runs a statement that returns no rows. */
static int exec1(struct sq *q, enum stmt_id id, const char *op,
		 struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prep(q, id, &st, err);

	if (rc)
		return rc;
	rc = sqlite3_step(st);
	while (rc == SQLITE_ROW) /* PRAGMAs may answer with a row */
		rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		int code = db_fail(q, rc, op, err);
		unprep(st);
		return code;
	}
	unprep(st);
	return 0;
}

/*
 * Keeps the store recoverable on a volume that fills up. A checkpoint
 * copies the WAL's pages into the database file, which grows by up to the
 * WAL's size; the WAL is only cut after that copy. So a WAL larger than
 * the free space can never be folded in, and every later write fails for
 * space even after space is freed: freeing gives back what the volume had
 * free before it filled, which is less than the WAL. (Measured on a 4 MiB
 * tmpfs: the 16 MiB autocheckpoint was never reached, the WAL grew to
 * 4,157,440 bytes over a 4,096-byte database and took the volume; every
 * checkpoint then failed with SQLITE_FULL, also after a restart.) Hence,
 * before each write: when the free space is less than the WAL file plus
 * WAL_RESERVE_BYTES, fold the WAL in and truncate it now, while that
 * still fits, so that whatever fills the volume later, the space it gives
 * back covers the checkpoint. Two syscalls per write; a failure to stat
 * is ignored (the write reports its own error).
 */
static void wal_guard(struct sq *q)
{
	char wal[PATH_MAX + 8];
	struct statvfs vs;
	struct stat st;

	if (q->wal_reclaim || !sqlite3_get_autocommit(q->db))
		return;
	snprintf(wal, sizeof(wal), "%s-wal", q->path);
	if (stat(wal, &st) != 0 || st.st_size == 0 ||
	    statvfs(q->path, &vs) != 0)
		return;
	if ((uint64_t)vs.f_bavail * vs.f_frsize <
	    (uint64_t)st.st_size + WAL_RESERVE_BYTES) {
		q->wal_reclaim = true;
		q->wal_low = true;
	}
}

/*
 * Gives the WAL's space back after a write failed for a full disk: a
 * TRUNCATE checkpoint copies the WAL into the database and cuts the WAL
 * file to zero bytes (the default settings keep up to WAL_KEEP_BYTES of it
 * around for speed, which is exactly the space a full volume lacks). From
 * then on the handle checkpoints every WAL_TIGHT_PAGES and truncates at
 * each reset. Runs only outside a transaction; a checkpoint that cannot
 * run yet (readers, or still no space for the pages it must add to the
 * database) is tried again before the next write. Errors are logged, never
 * returned: the write that follows reports its own.
 */
static void reclaim_wal(struct sq *q)
{
	int n_log = -1, n_done = -1, rc;

	wal_guard(q);
	if (!q->wal_reclaim || !sqlite3_get_autocommit(q->db))
		return;
	rc = sqlite3_wal_checkpoint_v2(q->db, NULL,
				       SQLITE_CHECKPOINT_TRUNCATE, &n_log,
				       &n_done);
	/* Once per low-space episode at warn (a nearly full volume folds
	 * the WAL in before many writes); failures always at error. */
	LOG(rc != SQLITE_OK ? SC_LOG_ERROR
	       : q->wal_low && q->wal_tight ? SC_LOG_DEBUG : SC_LOG_WARN,
	       "store",
	       "event=wal-reclaim path=%s sqlite=%d wal_frames=%d "
	       "checkpointed=%d msg=\"%s\"", q->path, rc, n_log, n_done,
	       rc != SQLITE_OK ? "disk full: WAL checkpoint failed; retried "
				 "before the next write"
	       : q->wal_low ? "low disk space: WAL folded in and truncated"
			    : "disk full: WAL folded in and truncated");
	if (rc != SQLITE_OK)
		return;
	q->wal_reclaim = false;
	q->wal_low = false;
	if (!q->wal_tight) {
		sqlite3_stmt *st = NULL;
		static const char *const tight[] = {
			"PRAGMA journal_size_limit = 0",
		};
		hook_install(q, WAL_TIGHT_PAGES);
		for (size_t i = 0; i < 1; i++) {
			if (sqlite3_prepare_v2(q->db, tight[i], -1, &st,
					       NULL) == SQLITE_OK)
				while (sqlite3_step(st) == SQLITE_ROW)
					;
			sqlite3_finalize(st);
			st = NULL;
		}
		q->wal_tight = true;
	}
}

/* ---- group commit ---------------------------------------------------- */

/*
 * The durable commits (SYNC_FULL) of every handle of one database file in
 * this process share their fsyncs. A commit is made with synchronous =
 * NORMAL, so SQLite never fsyncs while it holds the write lock; then,
 * before the store call returns, wal_hook (which SQLite calls after the
 * commit, with the lock released) waits in group_sync until one fdatasync
 * of the -wal file that started after the commit has succeeded. fsync
 * flushes the inode whichever descriptor asks, so one sync serves the
 * commits of every handle (and, the WAL being append-only, every earlier
 * commit: the prefix invariant at the top).
 *
 * group_sync is the classic group commit: a waiter queues itself under
 * mu; when no sync runs, the first waiter becomes the syncer, takes the
 * whole queue (every commit that asked so far), syncs without the mutex,
 * and answers each one; waiters that queued during its sync are taken by
 * the next. A failed sync answers the failure to every waiter queued at
 * its end (after a failed fsync the kernel may have dropped the dirty
 * pages, so a later sync's success would prove nothing for them).
 * Invariants: at most one sync per group runs; a waiter is answered only
 * by a sync that began after it queued (its commit had returned) or by a
 * failure; the queue lives on the waiters' stacks, under mu.
 * Groups are keyed by the database file's device and inode, found or made
 * at sq_open and freed with their last handle (groups_mu).
 */
struct sync_waiter {
	struct sync_waiter *next;
	int rc; /* 0, or the errno of the sync that answered */
	bool done;
};

struct sync_group {
	struct sync_group *next; /* in `groups`, under groups_mu */
	dev_t dev;
	ino_t ino;
	int refs;                /* handles, under groups_mu */
	char wal[PATH_MAX + 8];  /* <db path>-wal */
	char dir[PATH_MAX];      /* its folder */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sync_waiter *queue; /* under mu */
	bool running;              /* a sync is in progress, under mu */
	ino_t synced_ino;          /* the -wal inode whose folder is synced */
	uint64_t n_syncs;          /* syncs made, under mu (tests) */
};

static pthread_mutex_t groups_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sync_group *groups;

/* The group of q's file, found or made; NULL and an error when the file
 * cannot be looked at or memory runs out. */
static struct sync_group *group_get(struct sq *q, struct sc_err *err)
{
	struct stat st;
	struct sync_group *g;

	if (stat(q->path, &st) != 0) {
		sc_err_set(err, SC_EIO, "cannot look at %s: %s", q->path,
			   strerror(errno));
		return NULL;
	}
	pthread_mutex_lock(&groups_mu);
	for (g = groups; g; g = g->next)
		if (g->dev == st.st_dev && g->ino == st.st_ino)
			break;
	if (!g && (g = calloc(1, sizeof(*g))) != NULL) {
		const char *slash = strrchr(q->path, '/');

		g->dev = st.st_dev;
		g->ino = st.st_ino;
		snprintf(g->wal, sizeof(g->wal), "%s-wal", q->path);
		if (!slash)
			snprintf(g->dir, sizeof(g->dir), ".");
		else if (slash == q->path)
			snprintf(g->dir, sizeof(g->dir), "/");
		else
			snprintf(g->dir, sizeof(g->dir), "%.*s",
				 (int)(slash - q->path), q->path);
		pthread_mutex_init(&g->mu, NULL);
		pthread_cond_init(&g->cv, NULL);
		g->next = groups;
		groups = g;
	}
	if (g)
		g->refs++;
	pthread_mutex_unlock(&groups_mu);
	if (!g)
		sc_err_set(err, SC_ENOMEM, "out of memory");
	return g;
}

static void group_put(struct sync_group *g)
{
	struct sync_group **pp;

	if (!g)
		return;
	pthread_mutex_lock(&groups_mu);
	if (--g->refs == 0) {
		for (pp = &groups; *pp != g; pp = &(*pp)->next)
			;
		*pp = g->next;
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->cv);
		free(g);
	}
	pthread_mutex_unlock(&groups_mu);
}

/*
 * One sync of the group's -wal file, opened afresh (SQLite may have cut or
 * remade it), and of its folder the first time an inode is seen: SQLite
 * syncs the folder of a new WAL at its first sync, which NORMAL commits
 * never make. Returns 0 or an errno. Only the syncer calls it.
 */
static int group_fsync(struct sync_group *g)
{
	int fd = open(g->wal, O_RDONLY | O_CLOEXEC);
	struct stat st = {0};
	int e = 0;

	if (fd < 0)
		return errno ? errno : EIO;
	if (FAILPOINT_ERR("store.sync"))
		e = EIO;
	else if (fdatasync(fd) != 0 || fstat(fd, &st) != 0)
		e = errno ? errno : EIO;
	close(fd);
	if (!e && st.st_ino != g->synced_ino) {
		int dfd = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd < 0 || fsync(dfd) != 0)
			e = errno ? errno : EIO;
		if (dfd >= 0)
			close(dfd);
		if (!e)
			g->synced_ino = st.st_ino;
	}
	/* A test build tells the power-loss test (test_group_commit.c)
	 * that the -wal is now on disk: this sync bypasses SQLite's VFS. */
	if (!e)
		FAILPOINT_HOOK("store.wal_synced");
	return e;
}

/* Answers the waiters of a list (under mu). */
static void group_answer(struct sync_waiter *w, int e)
{
	while (w) {
		struct sync_waiter *next = w->next;

		w->rc = e;
		w->done = true;
		w = next;
	}
}

/* Returns once a sync begun after this call has made the group's WAL
 * durable: 0, or the errno of the failed sync. */
static int group_sync(struct sync_group *g)
{
	struct sync_waiter me = {0};

	pthread_mutex_lock(&g->mu);
	me.next = g->queue;
	/* Unlinked by whoever answers it, before it can return. */
	/* cppcheck-suppress autoVariables */
	g->queue = &me;
	while (!me.done) {
		struct sync_waiter *batch;
		int e;

		if (g->running) {
			pthread_cond_wait(&g->cv, &g->mu);
			continue;
		}
		batch = g->queue;
		g->queue = NULL;
		g->running = true;
		pthread_mutex_unlock(&g->mu);
		e = group_fsync(g);
		pthread_mutex_lock(&g->mu);
		g->running = false;
		g->n_syncs++;
		group_answer(batch, e);
		if (e) { /* and those that queued meanwhile */
			group_answer(g->queue, e);
			g->queue = NULL;
		}
		pthread_cond_broadcast(&g->cv);
	}
	pthread_mutex_unlock(&g->mu);
	return me.rc;
}

uint64_t store_sqlite_syncs(const char *path)
{
	struct stat st;
	uint64_t n = 0;

	if (stat(path, &st) != 0)
		return 0;
	pthread_mutex_lock(&groups_mu);
	for (struct sync_group *g = groups; g; g = g->next)
		if (g->dev == st.st_dev && g->ino == st.st_ino) {
			pthread_mutex_lock(&g->mu);
			n = g->n_syncs;
			pthread_mutex_unlock(&g->mu);
		}
	pthread_mutex_unlock(&groups_mu);
	return n;
}

/*
 * SQLite calls this after each commit of q's connection that wrote
 * frames, with the write lock released. A SYNC_FULL commit waits for its
 * group sync here; a failed sync fails the statement, though the commit
 * happened: the hook answers SQLITE_IOERR_FSYNC, which SQLite reports as
 * SQLITE_ERROR, and db_fail tells it apart by q->sync_errno. Then, as
 * SQLite's own autocheckpoint would (which this hook replaces), a
 * passive checkpoint once the WAL holds q->ckpt_pages.
 */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int n_pages)
{
	struct sq *q = arg;
	int rc = SQLITE_OK;

	if (q->sync == SYNC_FULL && q->group) {
		int e = group_sync(q->group);

		if (e) {
			q->sync_errno = e;
			rc = SQLITE_IOERR_FSYNC;
		}
	}
	if (n_pages >= q->ckpt_pages)
		(void)sqlite3_wal_checkpoint(db, name);
	return rc;
}

/* Installs wal_hook with a checkpoint every `pages` (PRAGMA
 * wal_autocheckpoint would replace the hook: never use it). */
static void hook_install(struct sq *q, int pages)
{
	q->ckpt_pages = pages;
	sqlite3_wal_hook(q->db, wal_hook, q);
}

/*
 * The level of commit c, from the store's durability table: only ALWAYS
 * is synced here (SERVER is NONE on a file, store.h enum store_dur).
 */
static enum sync_level sync_for(enum store_commit c)
{
	return store_commit_class(c) == STORE_DUR_ALWAYS ? SYNC_FULL
							 : SYNC_NORMAL;
}

/*
 * Sets the durability of the next transactions: SYNC_FULL waits for a
 * group sync in wal_hook after the commit. The connection itself always
 * runs with synchronous = NORMAL (set at open).
 */
static int set_sync(struct sq *q, enum sync_level level, struct sc_err *err)
{
	(void)err;
	/* Every write starts here, outside any transaction: the place to
	 * give back the WAL's space after a full disk. */
	reclaim_wal(q);
	q->sync = level;
	q->sync_errno = 0;
	return 0;
}

static int tx_begin(struct sq *q, enum sync_level level, struct sc_err *err)
{
	int rc = set_sync(q, level, err);

	return rc ? rc : exec1(q, ST_BEGIN, "begin", err);
}

static void tx_rollback(struct sq *q)
{
	/* SQLite rolls back by itself after some errors (SQLITE_FULL,
	 * SQLITE_IOERR during commit); only roll back what is still open. */
	if (!sqlite3_get_autocommit(q->db))
		(void)exec1(q, ST_ROLLBACK, "rollback", NULL);
	reclaim_wal(q);
}

static int tx_commit(struct sq *q, struct sc_err *err)
{
	int rc;

	if (FAILPOINT_ERR("store.commit")) {
		tx_rollback(q);
		return sc_err_set(err, SC_EIO,
				  "I/O error during commit on %s: injected "
				  "by failpoint store.commit",
				  q->path);
	}
	rc = exec1(q, ST_COMMIT, "commit", err);
	if (rc)
		tx_rollback(q);
	return rc;
}

/* Ends the transaction of an operation whose writes gave rc: ROLLBACK and
 * rc when they failed, else COMMIT and its result. */
static int tx_end(struct sq *q, int rc, struct sc_err *err)
{
	if (rc) {
		tx_rollback(q);
		return rc;
	}
	return tx_commit(q, err);
}

/* A call's own transaction at its commit's level, unless it runs
 * inside sq_tx's, which it joins (own_end then leaves the end to it). */
static int own_begin(struct sq *q, const struct store_call *c,
		     struct sc_err *err)
{
	return q->in_tx ? 0 : tx_begin(q, sync_for(store_call_commit(c)), err);
}

static int own_end(struct sq *q, int rc, struct sc_err *err)
{
	return q->in_tx ? rc : tx_end(q, rc, err);
}

/* store_ops.tx: body's calls in one transaction at the level of commit. */
static int sq_tx(void *impl, enum store_commit commit,
		 int (*body)(void *ctx, struct sc_err *err), void *ctx,
		 struct sc_err *err)
{
	struct sq *q = impl;
	int rc = tx_begin(q, sync_for(commit), err);

	if (rc)
		return rc;
	q->in_tx = true;
	rc = body(ctx, err);
	q->in_tx = false;
	return tx_end(q, rc, err);
}

/* Begins a statement that runs alone in autocommit mode at `level`. */
static int solo(struct sq *q, enum stmt_id id, enum sync_level level,
		sqlite3_stmt **st, struct sc_err *err)
{
	int rc = set_sync(q, level, err);

	return rc ? rc : prep(q, id, st, err);
}

static int64_t now_ms(const struct sq *q)
{
	return sc_clock_now_ms(q->clock);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Binds (schedule, slot) to parameters 1 and 2: the key of a slot's rows. */
static void bind_slot(sqlite3_stmt *st, const char *schedule, int64_t slot_ms)
{
	bind_text(st, 1, schedule);
	sqlite3_bind_int64(st, 2, slot_ms);
}

/*
 * Steps a statement that answers no row and resets it: 0, or the error of
 * `op` (mapped before the reset, which would lose SQLite's message).
 */
static int step_done(struct sq *q, sqlite3_stmt *st, const char *op,
		     struct sc_err *err)
{
	int rc = sqlite3_step(st);

	rc = rc == SQLITE_DONE ? 0 : db_fail(q, rc, op, err);
	unprep(st);
	return rc;
}

/*
 * Steps a statement that answers one row or none; *row says which. 0 or
 * the error of `op`. The statement is not reset, so the row stays
 * readable: the caller reads it, then calls unprep.
 */
static int step_row(struct sq *q, sqlite3_stmt *st, const char *op,
		    bool *row, struct sc_err *err)
{
	int rc = sqlite3_step(st);

	*row = rc == SQLITE_ROW;
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0
						    : db_fail(q, rc, op, err);
}

/* A text column into dst[cap] (cap > 0), cut to fit, NULL as "". Not
 * snprintf: the claim copies two texts a job, and a format costs more
 * than the copy. */
static void copy_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	size_t n = t ? strnlen(t, cap - 1) : 0;

	if (n)
		memcpy(dst, t, n);
	dst[n] = '\0';
}

/* A heap copy of a text column, NULL for SQL NULL. *oom set on failure. */
static char *dup_text(sqlite3_stmt *st, int col, bool *oom)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	char *d;

	if (!t)
		return NULL;
	d = strdup((const char *)t);
	if (!d)
		*oom = true;
	return d;
}

/* The columns and parameters of a statement, for the one reader and
 * binder (store.h, "rows as fields"). */
static bool col_null(const void *st, int c)
{
	return sqlite3_column_type((sqlite3_stmt *)st, c) == SQLITE_NULL;
}

static int64_t col_i64(const void *st, int c)
{
	return sqlite3_column_int64((sqlite3_stmt *)st, c);
}

static bool col_truth(const void *st, int c)
{
	return sqlite3_column_int((sqlite3_stmt *)st, c) != 0;
}

static void col_text(const void *st, int c, char *out, size_t n)
{
	copy_text(out, n, (sqlite3_stmt *)st, c);
}

static char *col_dup(const void *st, int c, bool *oom)
{
	return dup_text((sqlite3_stmt *)st, c, oom);
}

static const struct store_col_ops cols = {
	col_null, col_i64, col_truth, col_text, col_dup,
};

static void par_null(void *st, int p)
{
	sqlite3_bind_null(st, p);
}

static void par_i64(void *st, int p, int64_t v)
{
	sqlite3_bind_int64(st, p, v);
}

static void par_truth(void *st, int p, bool v)
{
	sqlite3_bind_int(st, p, v);
}

static void par_text(void *st, int p, const char *s)
{
	sqlite3_bind_text(st, p, s, -1, SQLITE_STATIC);
}

static const struct store_param_ops params = {
	par_null, par_i64, par_truth, par_text,
};

/* Columns c0.. of st's row into x by t: false when out of memory. */
static bool read_fields(sqlite3_stmt *st, int c0,
			const struct store_fields *t, void *x)
{
	return store_fields_read(&cols, st, c0, t, x);
}

/* Fields f[0..n) of x into parameters p0.. of st. */
static void bind_fields(sqlite3_stmt *st, int p0, const struct store_field *f,
			size_t n, const void *x)
{
	store_fields_bind(&params, st, p0, f, n, x);
}

/* A job from columns STORE_JOB_COLS of st's row (j zeroed first). */
static void read_job(sqlite3_stmt *st, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	(void)read_fields(st, 0, &store_job_fields, j);
}

/* Grows *v (of *cap elements of size sz) to hold one more than len;
 * false when out of memory. */
static bool grow(void **v, size_t len, size_t *cap, size_t sz)
{
	if (len < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *nv = realloc(*v, ncap * sz);
	if (!nv)
		return false;
	*v = nv;
	*cap = ncap;
	return true;
}

/* The elements a row loop reads into. */
struct rows {
	void *v;
	size_t len;   /* elements read */
	size_t cap;   /* room in v */
	size_t sz;    /* of one element */
	bool fixed;   /* v is the caller's array of cap: stop when full */
};

/*
 * The row loop of every read of many rows: steps st (bound) and reads
 * each row with read into the next element of r, grown unless fixed.
 * r->len counts the elements read, also on failure (the caller frees
 * them). Resets st. 0, SC_ENOMEM, or the step's error (`op` names it).
 */
static int step_rows(struct sq *q, sqlite3_stmt *st, struct rows *r,
		     const struct store_fields *t, const char *op,
		     struct sc_err *err)
{
	bool oom = false;
	int rc = SQLITE_DONE;

	while (!oom && (!r->fixed || r->len < r->cap) &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!r->fixed && !grow(&r->v, r->len, &r->cap, r->sz)) {
			oom = true;
			break;
		}
		void *x = (char *)r->v + r->len * r->sz;
		memset(x, 0, r->sz);
		oom = !read_fields(st, 0, t, x);
		r->len++;
	}
	if (oom)
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	else
		rc = rc == SQLITE_DONE || rc == SQLITE_ROW
			     ? 0 : db_fail(q, rc, op, err);
	unprep(st);
	return rc;
}

/* Binds the fence parameters of a fenced write (none: left NULL). */
static void bind_fence(sqlite3_stmt *st, const struct store_fence *f)
{
	if (f) {
		sqlite3_bind_int64(st, 20, f->job_id);
		sqlite3_bind_int64(st, 21, f->lease_token);
	}
}

/* Inserts one ledger row with statement id (ST_LEDGER_INSERT, fenced by
 * fence unless NULL, or ST_LEDGER_INSERT_MISSED / _PAUSED); the caller
 * holds the transaction. */
static int ledger_insert_st(struct sq *q, enum stmt_id id,
			    const struct store_fence *fence,
			    const struct ledger_row *r, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (id == ST_LEDGER_INSERT && !fence)
		id = ST_LEDGER_INSERT_FREE;
	rc = prep(q, id, &st, err);
	if (rc)
		return rc;
	/* the row's fields but its id, the store's */
	bind_fields(st, 1, store_ledger_fields.f + 1,
		    store_ledger_fields.n - 1, r);
	if (id == ST_LEDGER_INSERT)
		bind_fence(st, fence);
	return step_done(q, st, "ledger insert", err);
}

/* Inserts one ledger row of a job transition (never deduplicated). */
static int ledger_insert(struct sq *q, const struct ledger_row *r,
			 struct sc_err *err)
{
	return ledger_insert_st(q, ST_LEDGER_INSERT, NULL, r, err);
}

/*
 * After a fenced write changed nothing: SC_ELEASE if the fence no longer
 * holds (the write was refused for it), else 0 (the write had nothing to
 * do). Fences only ever break, never heal, so reading after the write
 * cannot call a refused write a no-op.
 */
static int fence_refused(struct sq *q, const struct store_fence *f,
			 const char *op, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	bool holds;
	int rc;

	if (!f)
		return 0;
	rc = prep(q, ST_FENCE, &st, err);
	if (rc)
		return rc;
	bind_fence(st, f);
	rc = step_row(q, st, op, &holds, err);
	unprep(st);
	if (!rc && !holds)
		rc = store_fence_refused(op, f, err);
	return rc;
}

/*
 * Binds the fence of a fenced write whose own parameters are bound, steps
 * and resets it; *n (may be NULL) gets the rows it changed, 0 when it
 * failed. A write that changed nothing is SC_ELEASE when the fence no
 * longer holds, else 0 (the caller says what nothing to do means). `op`
 * names the write in either error.
 */
static int fenced_step(struct sq *q, sqlite3_stmt *st,
		       const struct store_fence *f, const char *op, int *n,
		       struct sc_err *err)
{
	int rc, changed;

	bind_fence(st, f);
	rc = step_done(q, st, op, err);
	changed = rc ? 0 : sqlite3_changes(q->db);
	if (n)
		*n = changed;
	if (!rc && changed == 0)
		rc = fence_refused(q, f, op, err);
	return rc;
}

/* c's parameters as ?p.. (store.h, "one-statement operations"). One
 * that the statement does not name (a value SQLite does not keep, e.g. a
 * node's clock offset) is not bound: sqlite3_bind_* refuses its index
 * with SQLITE_RANGE and changes nothing. */
static void bind_args(sqlite3_stmt *st, int p, const struct store_call *c)
{
	for (size_t i = 0; i < c->n_args; i++) {
		const struct store_arg *x = &c->args[i];

		switch (x->kind) {
		case STORE_A_NULL: sqlite3_bind_null(st, p++); break;
		case STORE_A_I64: sqlite3_bind_int64(st, p++, x->i); break;
		case STORE_A_TEXT: bind_text(st, p++, x->s); break;
		case STORE_A_BOOL: sqlite3_bind_int(st, p++, x->i != 0); break;
		case STORE_A_FIELDS:
			bind_fields(st, p, x->f, x->nf, x->x);
			p += (int)x->nf;
			break;
		}
	}
}

/*
 * What a shared write runs after its own statement, in the same
 * transaction, when its own changed a row (SQLite has no data-modifying
 * CTE, which is how PostgreSQL writes the same in one statement); a MANY
 * after each element, whatever it changed. It takes the same parameters.
 */
static const enum stmt_id sq_then[STORE_Q_N] = {
	[STORE_Q_OUTBOX_PUT] = ST_OUTBOX_BODY_PUT,
	[STORE_Q_JOB_RELEASE] = ST_JOB_RELEASED,
	[STORE_Q_OUTBOX_ABANDON] = ST_ABANDONED_ROW,
	[STORE_Q_JOB_ENQUEUE_TICK] = ST_SCHED_TICK,
};

/* MANY: each element in turn, one transaction. */
static int sq_call_many(struct sq *q, struct store_call *c,
			struct sc_err *err)
{
	const struct store_qdef *d = &store_calls[c->q];
	int64_t w = 0;
	int rc = own_begin(q, c, err);

	for (size_t i = 0; !rc && i < c->n_in; i++) {
		const char *x = (const char *)c->in + i * d->sz;
		sqlite3_stmt *st = NULL;

		rc = prep(q, (enum stmt_id)c->q, &st, err);
		if (rc)
			break;
		bind_fields(st, 1, d->rows->f, d->rows->n, x);
		bind_args(st, (int)d->rows->n + 1, c);
		rc = step_done(q, st, d->op, err);
		if (!rc)
			w += sqlite3_changes(q->db);
		if (!rc && c->out)
			((bool *)c->out)[i] = sqlite3_changes(q->db) > 0;
		if (!rc && sq_then[c->q])
			rc = prep(q, sq_then[c->q], &st, err);
		if (!rc && sq_then[c->q]) {
			bind_fields(st, 1, d->rows->f, d->rows->n, x);
			bind_args(st, (int)d->rows->n + 1, c);
			rc = step_done(q, st, d->op, err);
		}
	}
	rc = own_end(q, rc, err);
	c->changed = rc ? 0 : w;
	return rc;
}

/* A write and its sq_then in one transaction. */
static int sq_call_then(struct sq *q, struct store_call *c,
			struct sc_err *err)
{
	const struct store_qdef *d = &store_calls[c->q];
	sqlite3_stmt *st = NULL;
	int n = 0;
	int rc = own_begin(q, c, err);

	if (!rc)
		rc = prep(q, (enum stmt_id)c->q, &st, err);
	if (rc)
		return own_end(q, rc, err);
	bind_args(st, 1, c);
	rc = fenced_step(q, st, d->kind == STORE_QK_FENCED ? c->fence : NULL,
			 d->op, &n, err);
	if (!rc && n > 0)
		rc = prep(q, sq_then[c->q], &st, err);
	if (!rc && n > 0) {
		bind_args(st, 1, c);
		rc = step_done(q, st, d->op, err);
	}
	rc = own_end(q, rc, err);
	c->changed = rc ? 0 : n;
	return rc;
}

/*
 * The one runner of the one-statement operations (store.h): a write runs
 * alone at its commit's level (in a transaction with its sq_then), the
 * fence (FENCED) bound as ?20 and ?21 and checked again when nothing
 * changed (fenced_step).
 */
static int sq_call(void *impl, struct store_call *c, struct sc_err *err)
{
	struct sq *q = impl;
	const struct store_qdef *d = &store_calls[c->q];
	enum stmt_id id = (enum stmt_id)c->q;
	sqlite3_stmt *st = NULL;
	struct rows r = {.sz = d->sz};
	bool row = false;
	int n = 0;
	int rc;

	if (d->kind == STORE_QK_MANY)
		return sq_call_many(q, c, err);
	if (d->kind >= STORE_QK_WRITE && sq_then[c->q])
		return sq_call_then(q, c, err);
	rc = (d->kind >= STORE_QK_WRITE || d->writes) && !q->in_tx
		     ? solo(q, id, sync_for(store_call_commit(c)), &st, err)
		     : prep(q, id, &st, err);
	if (rc)
		return rc;
	bind_args(st, 1, c);
	switch (d->kind) {
	case STORE_QK_ONE:
	case STORE_QK_MAYBE:
		rc = step_row(q, st, d->op, &row, err);
		if (!rc && !row && d->kind == STORE_QK_ONE)
			rc = sc_err_set(err, SC_ENOENT, "%s", d->missing);
		if (!rc && row && !read_fields(st, 0, d->rows, c->out))
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		c->changed = !rc && row;
		unprep(st);
		return rc;
	case STORE_QK_ALL:
		rc = step_rows(q, st, &r, d->rows, d->op, err);
		if (rc) {
			store_rows_free(d->rows, r.v, r.len, r.sz);
			return rc;
		}
		*(void **)c->out = r.v;
		*c->n = r.len;
		return 0;
	case STORE_QK_MANY: /* above */
	case STORE_QK_WRITE:
	case STORE_QK_FENCED:
		rc = fenced_step(q, st,
				 d->kind == STORE_QK_FENCED ? c->fence : NULL,
				 d->op, &n, err);
		c->changed = n;
		return rc;
	}
	unprep(st);
	return sc_err_set(err, SC_EINVAL, "unknown statement kind");
}

/* ---- open / migrate / close ------------------------------------------ */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/*
 * Files this process already checked (by device and inode). POSIX record
 * locks belong to the process, and close() on ANY descriptor of a file
 * drops ALL of the process's locks on it: re-reading the header while
 * another handle of this process has the database open would silently
 * drop that handle's SQLite locks, and another process could then take
 * itself for the last user, checkpoint and delete the WAL that handle
 * still writes to (its commits would vanish). So a file is opened behind
 * SQLite's back only the first time this process sees it.
 */
static pthread_mutex_t checked_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
} checked[64];
static size_t n_checked;

static bool already_checked(const char *path, bool add)
{
	struct stat sb;
	bool found = false;

	if (stat(path, &sb) != 0)
		return false;
	pthread_mutex_lock(&checked_mu);
	for (size_t i = 0; i < n_checked && !found; i++)
		found = checked[i].dev == sb.st_dev && checked[i].ino == sb.st_ino;
	if (!found && add) {
		size_t i = n_checked < 64 ? n_checked++ : 63;
		checked[i].dev = sb.st_dev;
		checked[i].ino = sb.st_ino;
	}
	pthread_mutex_unlock(&checked_mu);
	return found;
}

/*
 * Creates the file 0600 if it does not exist (create; otherwise
 * SC_ENOENT), and otherwise checks its 100-byte SQLite header before
 * SQLite sees it: not SQLite, another application's database, or a newer
 * schema are refused here, so such a file is never opened for writing at
 * all.
 */
static int precheck_file(const char *path, bool create, struct sc_err *err)
{
	unsigned char hdr[100];
	struct stat sb;
	ssize_t got;
	int fd = create ? open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			       0600)
			: -1;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (!create && stat(path, &sb) != 0 && errno == ENOENT)
		return sc_err_set(err, SC_ENOENT, "no store at %s: the file "
				  "does not exist", path);
	if (create && errno != EEXIST) {
		int e = errno;
		return sc_err_set(err, e == EACCES ? SC_EACCES : -e,
				  "cannot create database %s: %s", path,
				  strerror(e));
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return sc_err_set(err, e == EACCES ? SC_EACCES : -e,
				  "cannot open database %s: %s", path,
				  strerror(e));
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return sc_err_set(err, SC_EINVAL,
				  "database path %s is not a regular file",
				  path);
	}
	got = sb.st_size == 0 ? 0 : pread(fd, hdr, sizeof(hdr), 0);
	close(fd);
	if (sb.st_size == 0 && !create)
		return sc_err_set(err, SC_ENOENT, "no store at %s: the file "
				  "is empty", path);
	if (sb.st_size == 0)
		return 0; /* an empty file: ours to initialise */
	if (got != (ssize_t)sizeof(hdr) ||
	    memcmp(hdr, "SQLite format 3", 16) != 0)
		return sc_err_set(err, SC_ECORRUPT,
				  "%s is not a SQLite database (bad header); "
				  "refusing to use or overwrite it",
				  path);
	uint32_t app = be32(hdr + 68), version = be32(hdr + 60);
	if (app != 0 && app != APP_ID)
		return sc_err_set(err, SC_ECORRUPT,
				  "%s is the SQLite database of another "
				  "application (application_id 0x%08x); "
				  "refusing to use it",
				  path, (unsigned)app);
	if (app == APP_ID && version > SCHEMA_VERSION)
		return sc_err_set(err, SC_EVERSION,
				  "%s has schema version %u, newer than this "
				  "surecron understands (%d); upgrade surecron "
				  "(the file was not changed)",
				  path, (unsigned)version, SCHEMA_VERSION);
	return 0;
}

/* Runs every statement of a multi-statement script (migrations only). */
static int run_script(struct sq *q, const char *sql, struct sc_err *err)
{
	const char *tail = sql;

	while (tail && *tail) {
		sqlite3_stmt *st = NULL;
		int rc = sqlite3_prepare_v2(q->db, tail, -1, &st, &tail);
		if (rc != SQLITE_OK)
			return db_fail(q, rc, "migration", err);
		if (!st)
			break; /* trailing whitespace */
		do
			rc = sqlite3_step(st);
		while (rc == SQLITE_ROW);
		if (rc != SQLITE_DONE) {
			int code = db_fail(q, rc, "migration", err);
			sqlite3_finalize(st);
			return code;
		}
		sqlite3_finalize(st);
	}
	return 0;
}

/* Reads the first n integer columns of a one-row query. */
static int query_ints(struct sq *q, const char *sql, int64_t *out, int n,
		      struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			out[i] = sqlite3_column_int64(st, i);
		rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK) {
		int code = db_fail(q, rc, "open", err);
		sqlite3_finalize(st);
		return code;
	}
	sqlite3_finalize(st);
	return 0;
}

/*
 * Checks what SQLite sees (the header check cannot catch a damaged schema
 * page or a newer version held in the WAL), writing nothing. *current
 * says whether the schema is already at SCHEMA_VERSION.
 */
static int check_schema(struct sq *q, bool create, bool *current,
			struct sc_err *err)
{
	int64_t v[3] = {0, 0, 0};
	struct sc_err e = {0};
	/* One statement, so one read snapshot: read separately, another
	 * process's migration could commit between the reads and make a
	 * half-seen new file look foreign. */
	int rc = query_ints(q,
			    "SELECT (SELECT user_version FROM "
			    "pragma_user_version), (SELECT application_id "
			    "FROM pragma_application_id), (SELECT count(*) "
			    "FROM sqlite_master)",
			    v, 3, &e);
	int64_t version = v[0], app = v[1], n_objects = v[2];

	if (rc == SC_ECORRUPT || rc == SC_EDB)
		return sc_err_set(err, SC_ECORRUPT,
				  "%s is corrupt or not a SQLite database "
				  "(%s); refusing to use or overwrite it",
				  q->path, e.msg);
	if (rc) {
		err_copy(err, &e);
		return rc;
	}
	if (app != APP_ID && (app != 0 || n_objects > 0))
		return sc_err_set(err, SC_ECORRUPT,
				  "%s is a SQLite database but not "
				  "surecron's; refusing to use it",
				  q->path);
	if (version > SCHEMA_VERSION)
		return sc_err_set(err, SC_EVERSION,
				  "%s has schema version %lld, newer than "
				  "this surecron understands (%d); the file "
				  "was not changed",
				  q->path, (long long)version, SCHEMA_VERSION);
	if (version == 0 && !create)
		return sc_err_set(err, SC_ENOENT, "no store at %s: the "
				  "database holds no surecron schema", q->path);
	*current = version == SCHEMA_VERSION;
	return 0;
}

/*
 * Migrates forward. The version is read again inside the write
 * transaction, so that processes opening a new file at once migrate it
 * once: the others wait on the lock and find the work done.
 */
static int migrate(struct sq *q, struct sc_err *err)
{
	int64_t version = 0;
	int rc = tx_begin(q, sync_for(STORE_COMMIT_MIGRATE), err);

	if (rc)
		return rc;
	rc = query_ints(q, "PRAGMA user_version", &version, 1, err);
	for (int64_t k = version; !rc && k < SCHEMA_VERSION; k++) {
		LOG(SC_LOG_INFO, "store", "event=migrate path=%s from=%lld "
		       "to=%lld",
		       q->path, (long long)k, (long long)k + 1);
		rc = run_script(q, migrations[k], err);
	}
	if (rc) {
		tx_rollback(q);
		return rc;
	}
	return tx_commit(q, err);
}

/* journal_mode=WAL may answer SQLITE_BUSY without calling the busy
 * handler while another connection sets it up; retry a little. */
static int set_wal(struct sq *q, struct sc_err *err)
{
	for (int i = 0;; i++) {
		sqlite3_stmt *st = NULL;
		int rc = sqlite3_prepare_v2(q->db, "PRAGMA journal_mode = WAL",
					    -1, &st, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const unsigned char *m = sqlite3_column_text(st, 0);
			bool ok = m && strcmp((const char *)m, "wal") == 0;
			sqlite3_finalize(st);
			if (!ok)
				return sc_err_set(err, SC_EDB,
						  "cannot put %s in WAL mode",
						  q->path);
			return 0;
		}
		sqlite3_finalize(st);
		if ((rc & 0xff) != SQLITE_BUSY || i >= 100)
			return db_fail(q, rc, "set WAL mode", err);
		usleep(10000);
	}
}

/*
 * Busy handler: short jittered sleeps while another connection holds the
 * write lock, up to BUSY_TIMEOUT_MS. SQLite's own handler sleeps 1, 2, 5,
 * ... 100 ms, so with several workers a waiting writer idles long after
 * the lock is free (a commit takes tens of microseconds).
 */
static int busy_wait(void *ud, int n)
{
	struct sq *q = ud;
	int64_t now = clock_mono_ms();
	unsigned us;

	if (n == 0)
		q->busy_since_ms = now;
	if (now - q->busy_since_ms >= BUSY_TIMEOUT_MS)
		return 0;
	us = n < 12 ? 40u << (n / 2) : 2000u;
	usleep(us + (unsigned)rand_r(&q->busy_seed) % (us + 1));
	return 1;
}

static int exec_pragma(struct sq *q, const char *sql, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);

	while (rc == SQLITE_OK || rc == SQLITE_ROW)
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_fail(q, rc, "open", err);
}

/*
 * sc_known(name): whether the claim rule's known set has name (ST_JOB_PICK,
 * STORE_Q_JOB_NEXT_DUE bind their flag only when a set is there; without one
 * any name is known). Not deterministic: the set changes with the rule.
 * Direct only: a schema or trigger cannot call it.
 */
static void known_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const struct sq *q = sqlite3_user_data(ctx);
	const unsigned char *name = sqlite3_value_text(argv[0]);
	int len = sqlite3_value_bytes(argv[0]);

	(void)argc;
	sqlite3_result_int(ctx, name && store_known_has(
			q->rule ? q->rule->known_set : NULL,
			(const char *)name, (size_t)len));
}

static void sq_close(void *impl)
{
	struct sq *q = impl;

	if (!q)
		return;
	for (int i = 0; i < N_STMT; i++)
		sqlite3_finalize(q->stmt[i]);
	sqlite3_close(q->db);
	group_put(q->group);
	free(q);
}

static int sq_open(const char *target, struct sc_clock *clock, bool create,
		   void **impl, struct sc_err *err)
{
	struct sq *q;
	bool current = false;
	int rc;

	if (strlen(target) >= PATH_MAX)
		return sc_err_set(err, SC_EINVAL, "database path too long");
	if (!already_checked(target, false)) {
		rc = precheck_file(target, create, err);
		if (rc)
			return rc;
		already_checked(target, true);
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	q->clock = clock;
	snprintf(q->path, sizeof(q->path), "%s", target);

	/* No SQLITE_OPEN_CREATE: precheck_file made the file, with 0600;
	 * SQLite gives the -wal and -shm files the same mode. */
	rc = sqlite3_open_v2(target, &q->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		rc = db_fail(q, rc, "open", err);
		goto fail_open;
	}
	sqlite3_extended_result_codes(q->db, 1);
	/* The last handle to close keeps the -wal and -shm files (the WAL
	 * is still checkpointed, and truncated by journal_size_limit):
	 * without it every command on a store no daemon holds open created
	 * both and deleted them again, 1.5 ms of a 6.5 ms `status NAME`. */
	int persist = 1;
	(void)sqlite3_file_control(q->db, "main", SQLITE_FCNTL_PERSIST_WAL,
				   &persist);
	q->busy_seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)q;
	sqlite3_busy_handler(q->db, busy_wait, q);
	rc = sqlite3_create_function_v2(q->db, "sc_known", 1,
					SQLITE_UTF8 | SQLITE_DIRECTONLY, q,
					known_fn, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		rc = db_fail(q, rc, "open", err);
		goto fail_open;
	}

	/* Check (read only), then WAL, then migrate: a refused file is never
	 * written, and a new file is migrated in WAL mode, so a process
	 * opening it meanwhile never reads a half-written main file. */
	rc = check_schema(q, create, &current, err);
	if (rc)
		goto fail_open;
	/* Durable commits go through the group sync (wal_hook), from the
	 * migration on; SQLite itself never fsyncs at commit. */
	q->group = group_get(q, err);
	if (!q->group) {
		rc = err ? err->code : SC_ENOMEM;
		goto fail_open;
	}
	hook_install(q, WAL_CHECKPOINT_PAGES);
	rc = set_wal(q, err);
	if (!rc)
		rc = exec_pragma(q, "PRAGMA synchronous = NORMAL", err);
	if (!rc)
		rc = set_sync(q, SYNC_NORMAL, err);
	if (!rc && !current)
		rc = migrate(q, err);
	if (!rc)
		rc = exec_pragma(q,
				 "PRAGMA journal_size_limit = "
				 STR(WAL_KEEP_BYTES),
				 err);
	if (rc)
		goto fail_open;
	*impl = q;
	return 0;

fail_open:
	sq_close(q);
	return rc;
}

/* store_cache_cap: a negative cache_size counts KiB. */
static int sq_cache_cap(void *impl, int kib, struct sc_err *err)
{
	char sql[48];

	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", kib);
	return exec_pragma(impl, sql, err);
}

/* ---- jobs ------------------------------------------------------------ */

static void sq_claim_rule(void *impl, const struct store_claim_rule *r)
{
	struct sq *q = impl;

	q->rule = r;
}

/* The most jobs one claim takes (store.h: "up to max"). */
#define CLAIM_PICK_MAX 256

static int sq_job_claim(void *impl, const char *worker, int64_t lease_ms,
			int64_t ahead_ms, struct store_job *out, size_t max,
			size_t *n, struct sc_err *err)
{
	struct sq *q = impl;
	const struct store_claim_rule *r = q->rule;
	bool on = r && r->on;
	sqlite3_stmt *st = NULL;
	int64_t now;
	size_t got = 0, n_pick = 0;
	size_t want = max < CLAIM_PICK_MAX ? max : CLAIM_PICK_MAX;
	int rc = tx_begin(q, sync_for(STORE_COMMIT_CLAIM), err);

	if (rc)
		return rc;
	/* "now" under the write lock: a claim that waited for a finish's
	 * commit never starts, on record, before that finish. */
	now = now_ms(q);
	rc = prep(q, ST_JOB_PICK, &st, err);
	if (rc) {
		tx_rollback(q);
		return rc;
	}
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, ahead_ms);
	sqlite3_bind_int(st, 4, on);
	bind_text(st, 5, on ? r->allow : "\n");
	bind_text(st, 6, on ? r->skip : "\n");
	sqlite3_bind_int(st, 8, on && r->known_set);
	/* First attempts, then retries (the claim order). The picked rows go
	 * straight into out: the caller's array holds at least want. */
	for (int retry = 0; !rc && retry < 2 && n_pick < want; retry++) {
		sqlite3_bind_int(st, 7, retry);
		/* Step only until enough are taken: the walk ends there. */
		while (n_pick < want &&
		       (rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (sqlite3_column_type(st, 16) == SQLITE_NULL)
				continue; /* held: passed over */
			read_job(st, &out[n_pick]);
			out[n_pick++].overlapped =
				sqlite3_column_int(st, 16) != 0;
		}
		rc = rc == SQLITE_DONE || rc == SQLITE_ROW
			     ? 0 : db_fail(q, rc, "claim", err);
		sqlite3_reset(st);
	}
	unprep(st);
	for (size_t i = 0; !rc && i < n_pick; i++) {
		struct store_job *j = &out[i];
		st = NULL;
		rc = prep(q, ST_JOB_CLAIM, &st, err);
		if (rc)
			break;
		bind_text(st, 1, worker);
		sqlite3_bind_int64(st, 2, now + lease_ms);
		sqlite3_bind_int64(st, 3, now);
		sqlite3_bind_int64(st, 5, j->id);
		rc = step_done(q, st, "claim", err);
		if (rc || sqlite3_changes(q->db) == 0)
			continue;
		/* What ST_JOB_CLAIM wrote, on the row read under the same
		 * write lock: no other write came between. */
		j->state = JOB_ACTIVE;
		j->attempts++;
		j->lease_token++;
		snprintf(j->lease_owner, sizeof(j->lease_owner), "%s", worker);
		j->lease_expires_ms = now + lease_ms;
		j->started_ms = now > j->run_at_ms ? now : j->run_at_ms;
		if (got != i)
			out[got] = *j;
		got++;
	}
	rc = tx_end(q, rc, err);
	if (!rc)
		*n = got;
	return rc;
}

/*
 * Whether the row of statement `exists` (one parameter: the id) is there:
 * *found, or an error of the read (`what` names it).
 */
static int find_row(struct sq *q, enum stmt_id exists, int64_t id,
		    const char *what, bool *found, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prep(q, exists, &st, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = step_row(q, st, what, found, err);
	unprep(st);
	return rc;
}

/* After a write fenced by lease_token changed nothing: the error of
 * store_lease_error (SC_ENOENT or SC_ELEASE) for the row `what` id. */
static int lease_error(struct sq *q, enum stmt_id exists, const char *what,
		       int64_t id, int64_t lease_token, const char *op,
		       struct sc_err *err)
{
	bool found = false;
	int rc = find_row(q, exists, id, op, &found, err);

	if (rc)
		return rc;
	return store_lease_error(what, op, id, lease_token, found, err);
}

/*
 * Runs a fenced UPDATE (ST_JOB_FINISH) and fills the
 * schedule, slot, attempt and started fields of *r from the row it
 * changed (ST_JOB_ENDED, in the same transaction), unless `known` gives
 * them (the claim's copy: store.h, store_job_finish). SC_ELEASE /
 * SC_ENOENT when nothing matched.
 */
static int fenced_update(struct sq *q, enum stmt_id id_st, int64_t id,
			 int64_t token, int state, int64_t run_at_ms,
			 const char *op, const struct ledger_row *known,
			 struct ledger_row *r, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	bool row;
	int rc = prep(q, id_st, &st, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, token);
	sqlite3_bind_int(st, 3, state);
	sqlite3_bind_int64(st, 4, run_at_ms);
	rc = step_done(q, st, op, err);
	unprep(st);
	if (rc)
		return rc;
	if (sqlite3_changes(q->db) == 0)
		return lease_error(q, ST_JOB_STATE, "job", id, token, op,
				   err);
	if (known) {
		memcpy(r->schedule, known->schedule, sizeof(r->schedule));
		r->slot_ms = known->slot_ms;
		r->attempt = known->attempt;
		r->started_ms = known->started_ms;
		return 0;
	}
	st = NULL;
	rc = prep(q, ST_JOB_ENDED, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = step_row(q, st, op, &row, err);
	if (!rc && row) {
		copy_text(r->schedule, sizeof(r->schedule), st, 0);
		r->slot_ms = sqlite3_column_int64(st, 1);
		r->attempt = sqlite3_column_int(st, 2);
		r->started_ms = sqlite3_column_int64(st, 3);
	}
	unprep(st);
	return rc;
}

/* The marker of the slot of row r, in the caller's transaction, whose
 * fenced update of the job stands for the fence. */
static int mark_in_tx(struct sq *q, const struct ledger_row *r,
		      struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prep(q, (enum stmt_id)STORE_Q_SLOT_MARK, &st, err);

	if (rc)
		return rc;
	bind_slot(st, r->schedule, r->slot_ms);
	sqlite3_bind_int64(st, 3, r->finished_ms);
	return step_done(q, st, "slot mark", err);
}

/*
 * The writes of one finish (store_job_finish) in the caller's
 * transaction: the fenced update, its ledger row, the marker when asked.
 * SC_ELEASE / SC_ENOENT come before any write (the update changed
 * nothing), so the transaction may go on with other work.
 */
static int finish_in_tx(struct sq *q, int64_t id, int64_t lease_token,
			enum job_state new_state, int64_t run_at_ms,
			const struct ledger_row *row, bool mark,
			struct sc_err *err)
{
	struct ledger_row r = {0};
	/* The caller's copy of the claimed job: one read fewer per finish. */
	const struct ledger_row *known =
		row && row->job_id == id && row->schedule[0] ? row : NULL;
	int rc = fenced_update(q, ST_JOB_FINISH, id, lease_token,
			       (int)new_state, run_at_ms, "finish", known, &r,
			       err);

	if (rc)
		return rc;
	if (row) {
		memcpy(r.outcome, row->outcome, sizeof(r.outcome));
		memcpy(r.error_class, row->error_class, sizeof(r.error_class));
		r.error_msg = row->error_msg;
		r.retry_hint_ms = row->retry_hint_ms;
		r.details_json = row->details_json;
	}
	if (!r.outcome[0])
		snprintf(r.outcome, sizeof(r.outcome), "%s",
			 store_finish_outcome(new_state));
	r.job_id = id;
	r.finished_ms = row && row->finished_ms ? row->finished_ms : now_ms(q);
	rc = ledger_insert(q, &r, err);
	if (!rc && mark)
		rc = mark_in_tx(q, &r, err);
	return rc;
}

static int sq_job_finish(void *impl, int64_t id, int64_t lease_token,
			 enum job_state new_state, int64_t run_at_ms,
			 const struct ledger_row *row, bool mark,
			 struct sc_err *err)
{
	struct sq *q = impl;
	int rc = tx_begin(q, sync_for(store_commit_of_finish(new_state, mark)),
			  err);

	if (rc)
		return rc;
	rc = finish_in_tx(q, id, lease_token, new_state, run_at_ms, row, mark,
			  err);
	if (rc) {
		tx_rollback(q);
		return rc;
	}
	/* Crash points inside the transaction, after every write. */
	if (new_state == JOB_DONE)
		FAILPOINT("queue.before_complete_commit");
	else if (new_state == JOB_READY)
		FAILPOINT("queue.in_retry_schedule");
	return tx_commit(q, err);
}

/*
 * Completions ready together, one transaction (store_job_complete_many;
 * why sharing the commit is safe: docs/internals/store.md, "Shared
 * commits"). A refused job (SC_ELEASE, SC_ENOENT) comes before any write
 * of it (finish_in_tx), so the transaction goes on with the others.
 */
static int sq_job_complete_many(void *impl, const struct store_job *jobs,
				size_t n, const struct ledger_row *row,
				int *rcs, struct sc_err *err)
{
	struct sq *q = impl;
	int rc = tx_begin(q, sync_for(STORE_COMMIT_COMPLETE_MANY), err);

	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++) {
		struct sc_err e = {0};
		struct ledger_row r = {0};
		if (row)
			r = *row;
		/* Each job's own fields, as its claim returned them. */
		r.job_id = jobs[i].id;
		memcpy(r.schedule, jobs[i].schedule, sizeof(r.schedule));
		r.slot_ms = jobs[i].slot_ms;
		r.attempt = jobs[i].attempts;
		r.started_ms = jobs[i].started_ms;
		rcs[i] = finish_in_tx(q, jobs[i].id, jobs[i].lease_token,
				      JOB_DONE, 0, &r, false, &e);
		if (rcs[i] == SC_ELEASE || rcs[i] == SC_ENOENT)
			continue;
		rc = rcs[i];
		if (rc)
			err_copy(err, &e);
	}
	if (rc) {
		tx_rollback(q);
		return rc;
	}
	FAILPOINT("queue.before_complete_commit");
	return tx_commit(q, err);
}

/* ---- ledger ---------------------------------------------------------- */

/* The summary of `name` in v (sorted by name, len of cap): found, or
 * inserted at its place. NULL when out of memory. Streams come in name
 * order, so an insert is nearly always at the end. */
static struct store_sched_summary *sum_at(struct store_sched_summary **v,
					  size_t *len, size_t *cap,
					  const char *name)
{
	size_t lo = 0, hi = *len;

	if (*len && strcmp((*v)[*len - 1].schedule, name) < 0)
		lo = *len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp((*v)[mid].schedule, name);
		if (c == 0)
			return &(*v)[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!grow((void **)v, *len, cap, sizeof(**v)))
		return NULL;
	memmove(&(*v)[lo + 1], &(*v)[lo], (*len - lo) * sizeof(**v));
	(*len)++;
	struct store_sched_summary *x = &(*v)[lo];
	memset(x, 0, sizeof(*x));
	snprintf(x->schedule, sizeof(x->schedule), "%s", name);
	return x;
}

static int sq_sched_summaries(void *impl, const char *schedule,
			      struct store_sched_summary **out, size_t *n,
			      struct sc_err *err)
{
	struct sq *q = impl;
	struct store_sched_summary *v = NULL;
	size_t len = 0, cap = 0;
	bool oom = false;
	int rc = 0;

	/* Stream 0: newest rows; 1: totals; 2: unfinished jobs. */
	for (int k = 0; k < 3 && rc == 0 && !oom; k++) {
		static const enum stmt_id all[] = {ST_SUM_LAST, ST_SUM_TOTAL,
						   ST_SUM_OPEN};
		static const enum stmt_id one[] = {
			ST_SUM_LAST_ONE, ST_SUM_TOTAL_ONE, ST_SUM_OPEN_ONE};
		sqlite3_stmt *st = NULL;
		if ((rc = prep(q, schedule ? one[k] : all[k], &st, err)) != 0)
			break;
		if (k == 2) {
			sqlite3_bind_int64(st, 1, now_ms(q));
			bind_text(st, 2, schedule);
		} else {
			bind_text(st, 1, schedule);
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(
				st, k == 0 ? 1 : 0);
			struct store_sched_summary *x =
				name ? sum_at(&v, &len, &cap, name) : NULL;
			if (!x) {
				oom = name != NULL;
				if (oom)
					break;
				continue;
			}
			if (k == 0) {
				x->has_last = true;
				oom = !read_fields(st, 0, &store_ledger_fields,
						   &x->last);
			} else if (k == 1) {
				x->counts.done = sqlite3_column_int64(st, 1);
			} else {
				x->counts.ready_due = sqlite3_column_int64(st, 1);
				x->counts.delayed = sqlite3_column_int64(st, 2);
				x->counts.active = sqlite3_column_int64(st, 3);
				x->counts.dead = sqlite3_column_int64(st, 4);
				x->counts.done -= x->counts.ready_due +
						  x->counts.delayed +
						  x->counts.active +
						  x->counts.dead;
			}
			if (oom)
				break;
		}
		if (!oom)
			rc = rc == SQLITE_DONE ? 0
					       : db_fail(q, rc, "summaries", err);
		unprep(st);
	}
	if (oom)
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	if (rc) {
		store_sched_summaries_free(v, len);
		return rc;
	}
	*out = v;
	*n = len;
	return 0;
}

const char *store_sqlite_plan_sql(size_t i, char *buf, size_t cap,
				  bool *reads_all)
{
	static const enum stmt_id fixed[] = {
		(enum stmt_id)STORE_Q_LEDGER_LOST,
		(enum stmt_id)STORE_Q_LEDGER_LOST_ONE, ST_SUM_LAST,
		ST_SUM_LAST_ONE, ST_SUM_TOTAL, ST_SUM_TOTAL_ONE, ST_SUM_OPEN,
		ST_SUM_OPEN_ONE, (enum stmt_id)STORE_Q_LAST_SUCCESSES,
	};

	*reads_all = false;
	if (i < STORE_LQ_SHAPES) {
		int kind = store_lq_kind(i);
		/* No schedule, open period, any or a parameter outcome: the
		 * answer is every row (of that outcome). */
		*reads_all = !store_lq_scheduled(i) && store_lq_open(i) &&
			     (kind == STORE_LQ_ANY ||
			      kind == STORE_LQ_OUTCOME);
		lq_sql((int)i, buf, cap);
		return buf;
	}
	i -= STORE_LQ_SHAPES;
	if (i >= sizeof(fixed) / sizeof(fixed[0]))
		return NULL;
	snprintf(buf, cap, "%s", stmt_sql[fixed[i]]);
	return buf;
}

/* ---- scheduler state, token cache ------------------------------------ */

/* ---- pauses (issue 17) ------------------------------------------------ */

/* ---- retention (issue 15) -------------------------------------------- */

/*
 * Prepared per call, not in the statement cache: a prune batch runs a few
 * thousand deletions, so one prepare per batch costs nothing.
 */
static int sq_prep_once(struct sq *q, const char *sql, sqlite3_stmt **st,
			struct sc_err *err)
{
	int rc = sqlite3_prepare_v2(q->db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : db_fail(q, rc, "prepare", err);
}

/* Runs a one-shot write; *changes (NULL allowed) gets its row count. */
static int sq_write_once(struct sq *q, sqlite3_stmt *st, const char *op,
			 int64_t *changes, struct sc_err *err)
{
	int rc = sqlite3_step(st);

	rc = rc == SQLITE_DONE ? 0 : db_fail(q, rc, op, err);
	if (!rc && changes)
		*changes = sqlite3_changes64(q->db);
	sqlite3_finalize(st);
	return rc;
}

/* The range of acked row x (alias): details first_ms..last_ms, its slot
 * when they are missing (ledger.c reads them the same way). */
#define SQ_ACK_FIRST(x)                                                   \
	"COALESCE(CASE WHEN json_valid(" x ".details_json) THEN "           \
	"json_extract(" x ".details_json, '$.first_ms') END, " x ".slot_ms)"
#define SQ_ACK_LAST(x)                                                    \
	"COALESCE(CASE WHEN json_valid(" x ".details_json) THEN "           \
	"json_extract(" x ".details_json, '$.last_ms') END, "               \
	SQ_ACK_FIRST(x) ")"
/* The slot of alias x has no job that may still run or be revived
 * (READY, ACTIVE, DEAD: store_prune.c K8, K9). */
#define SQ_NO_LIVE_JOB(x)                                                 \
	"NOT EXISTS (SELECT 1 FROM jobs j WHERE j.schedule = " x             \
	".schedule AND j.slot_ms = " x ".slot_ms AND j.state <> "         \
	STORE_FROM_JOB_PRUNE ")"
/* A SENT (or ABANDONED: closed unsent, schema 13) row of outbox alias o
 * that may go: its slot is past the jobs horizon (?1), K8. */
#define SQ_GUARD_GOES                                                     \
	"o.state IN (" STORE_FROM_OUTBOX_PRUNE ") AND o.slot_ms < ?1 AND "     \
	SQ_NO_LIVE_JOB("o")
/* A closed alert of alias al whose sends are all done (K5). */
#define SQ_ALERT_GOES                                                     \
	"al.status <> " STORE_BUT_ALERT_PRUNE " AND al.last_slot_ms < ?1 AND " \
	"NOT EXISTS (SELECT 1 "                                              \
	"FROM alert_sends x WHERE x.alert_id = al.id AND x.state NOT IN "   \
	"(" STORE_FROM_SEND_PRUNE "))"

/* The rows the heads (ledger_head) of the batch's slots (?2, ?3] point
 * at, which the ledger DELETE keeps (K3). A scan of the heads, one row
 * per schedule, into a list of usually none: probing the heads for every
 * row of the batch made the DELETE 70 % slower, this about 5 %. */
#define SQ_HEADS_IN_BATCH                                                 \
	"SELECT id FROM ledger_head WHERE slot_ms > ?2 AND slot_ms <= ?3 "  \
	"UNION ALL SELECT ok_id FROM ledger_head WHERE ok_slot_ms > ?2 AND " \
	"ok_slot_ms <= ?3 AND ok_id IS NOT NULL "                            \
	"UNION ALL SELECT run_id FROM ledger_head WHERE run_slot_ms > ?2 "  \
	"AND run_slot_ms <= ?3 AND run_id IS NOT NULL"

/*
 * The statements of a prune step (store_prune.c chooses the phase and its
 * order, and lists the rules the WHERE clauses keep, K1..K9). ?1 is the
 * phase's horizon, ?2 and ?3 the step's range (lo, hi] of the key (the
 * ledger's slot, else id or rowid). `end` finds hi: the key of the
 * max_rows-th row (?4 = max_rows - 1) past lo; none means this is the
 * phase's last step, and a ledger range so ends on a whole slot (K4).
 * `pre` (may be NULL) runs before `del` in the same transaction and
 * counts into n_more (bodies of guards, sends of alerts). ?5: the jobs
 * horizon, read by the bodies only.
 */
static const struct {
	const char *end, *pre, *del;
} sq_prune_sql[STORE_PRUNE_N_PHASE] = {
	[STORE_PRUNE_LEDGER] = {
		"SELECT slot_ms FROM ledger WHERE slot_ms > ?2 AND "
		"slot_ms < ?1 ORDER BY slot_ms LIMIT 1 OFFSET ?4",
		NULL,
		"DELETE FROM ledger AS r WHERE r.slot_ms > ?2 AND r.slot_ms <= ?3 "
		"AND r.slot_ms < ?1 AND NOT ("
		/* K1: an unrecovered, unacknowledged lost or missed row */
		"(r.outcome IN ('lost', 'missed') AND NOT EXISTS (SELECT 1 "
		"FROM ledger s INDEXED BY ledger_day WHERE " DAY_OF("s.slot_ms")
		" = " DAY_OF("r.slot_ms") " AND s.schedule = r.schedule AND "
		"s.slot_ms = r.slot_ms AND s.outcome = 'success') AND NOT "
		"EXISTS (SELECT "
		"1 FROM ledger a WHERE a.outcome = 'acked' AND a.schedule = "
		"r.schedule AND a.slot_ms <= r.slot_ms AND r.slot_ms BETWEEN "
		SQ_ACK_FIRST("a") " AND " SQ_ACK_LAST("a") "))"
		/* K2: an ack covering a lost or missed row this batch
		 * keeps: one outside its slots or past the horizon (inside,
		 * every covered row goes: the ack makes it acked) */
		" OR (r.outcome = 'acked' AND EXISTS (SELECT 1 FROM ledger l "
		"WHERE l.outcome IN ('lost', 'missed') AND l.schedule = "
		"r.schedule AND (l.slot_ms <= ?2 OR l.slot_ms > ?3 OR "
		"l.slot_ms >= ?1) AND "
		"l.slot_ms BETWEEN " SQ_ACK_FIRST("r") " AND " SQ_ACK_LAST("r")
		")))"
		/* K3: the heads of its schedule */
		" AND r.id NOT IN (" SQ_HEADS_IN_BATCH ")",
	},
	[STORE_PRUNE_ALERTS] = {
		"SELECT id FROM alerts WHERE id > ?2 ORDER BY id LIMIT 1 "
		"OFFSET ?4",
		"DELETE FROM alert_sends WHERE alert_id IN (SELECT al.id FROM "
		"alerts al WHERE al.id > ?2 AND al.id <= ?3 AND "
		SQ_ALERT_GOES ")",
		"DELETE FROM alerts AS al WHERE al.id > ?2 AND al.id <= ?3 "
		"AND " SQ_ALERT_GOES,
	},
	[STORE_PRUNE_JOBS] = {
		"SELECT id FROM jobs WHERE id > ?2 ORDER BY id LIMIT 1 "
		"OFFSET ?4",
		NULL,
		/* K6: DONE only */
		"DELETE FROM jobs WHERE id > ?2 AND id <= ?3 AND state = "
		STORE_FROM_JOB_PRUNE " "
		"AND slot_ms < ?1",
	},
	[STORE_PRUNE_BODIES] = {
		"SELECT rowid FROM outbox_body WHERE rowid > ?2 ORDER BY "
		"rowid LIMIT 1 OFFSET ?4",
		NULL,
		/* K7: of a SENT row of a marked slot */
		"DELETE FROM outbox_body AS b WHERE b.rowid > ?2 AND b.rowid "
		"<= ?3 AND b.slot_ms < ?1 AND EXISTS (SELECT 1 FROM outbox o "
		"WHERE o.schedule = b.schedule AND o.slot_ms = b.slot_ms AND "
		"o.target = b.target AND o.state = " STORE_FROM_BODY_PRUNE ") AND "
		"EXISTS (SELECT 1 "
		"FROM slot_markers m WHERE m.schedule = b.schedule AND "
		"m.slot_ms = b.slot_ms) AND NOT (?5 > 0 AND b.slot_ms < ?5 AND "
		SQ_NO_LIVE_JOB("b") ")",
	},
	[STORE_PRUNE_GUARDS] = {
		"SELECT rowid FROM outbox WHERE rowid > ?2 ORDER BY rowid "
		"LIMIT 1 OFFSET ?4",
		"DELETE FROM outbox_body WHERE (schedule, slot_ms, target) IN "
		"(SELECT o.schedule, o.slot_ms, o.target FROM outbox o WHERE "
		"o.rowid > ?2 AND o.rowid <= ?3 AND " SQ_GUARD_GOES ")",
		"DELETE FROM outbox AS o WHERE o.rowid > ?2 AND o.rowid <= ?3 "
		"AND " SQ_GUARD_GOES,
	},
	[STORE_PRUNE_MARKERS] = {
		"SELECT rowid FROM slot_markers WHERE rowid > ?2 ORDER BY "
		"rowid LIMIT 1 OFFSET ?4",
		NULL,
		/* K9: no job left, no send open, not the newest */
		"DELETE FROM slot_markers AS m WHERE m.rowid > ?2 AND m.rowid "
		"<= ?3 AND m.slot_ms < ?1 AND " SQ_NO_LIVE_JOB("m") " AND NOT "
		"EXISTS (SELECT 1 FROM outbox o WHERE "
		"o.schedule = m.schedule AND o.slot_ms = m.slot_ms AND "
		"o.state NOT IN (" STORE_FROM_OUTBOX_PRUNE ")) AND m.slot_ms < "
		"(SELECT max(n.slot_ms) "
		"FROM slot_markers n WHERE n.schedule = m.schedule)",
	},
};

/* Runs one statement of a step with the step's parameters. */
static int sq_prune_stmt(struct sq *q, const char *sql,
			 const struct store_prune_step *p, int64_t hi,
			 int64_t *changes, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sq_prep_once(q, sql, &st, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, p->before_ms);
	sqlite3_bind_int64(st, 2, p->after);
	sqlite3_bind_int64(st, 3, hi);
	/* Only the bodies read ?5; SQLITE_RANGE elsewhere, harmless. */
	(void)sqlite3_bind_int64(st, 5, p->jobs_before_ms);
	return sq_write_once(q, st, "prune", changes, err);
}

/* The end of the step that starts past p->after: *hi, *last when it is
 * the phase's last. */
static int sq_prune_end(struct sq *q, const struct store_prune_step *p,
			int64_t *hi, bool *last, struct sc_err *err)
{
	sqlite3_stmt *st = NULL;
	bool row = false;
	int rc = sq_prep_once(q, sq_prune_sql[p->phase].end, &st, err);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, p->before_ms);
	sqlite3_bind_int64(st, 2, p->after);
	sqlite3_bind_int64(st, 4, (int64_t)p->max_rows - 1);
	rc = step_row(q, st, "prune", &row, err);
	if (!rc) {
		*last = !row;
		*hi = row ? sqlite3_column_int64(st, 0) : INT64_MAX;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * One step: BEGIN IMMEDIATE, the step's statements, COMMIT (dry run:
 * ROLLBACK, which gives the same counts: store_prune.c).
 */
static int sq_prune_step(void *impl, const struct store_prune_step *p,
			 struct store_prune_done *out, struct sc_err *err)
{
	struct sq *q = impl;
	int64_t hi = 0, n1 = 0, n2 = 0;
	bool last = true;
	int rc;

	if (p->first) {
		/* A step's day of ledger_day sits on a few hundred leaf
		 * pages that the next steps of that day revisit: keep
		 * them cached (64 MiB at most, for this handle; SQLite's
		 * default is 2 MiB). */
		rc = exec_pragma(q, "PRAGMA cache_size = -65536", err);
		if (rc)
			return rc;
	}
	rc = tx_begin(q, sync_for(STORE_COMMIT_PRUNE), err);
	if (rc)
		return rc;
	rc = sq_prune_end(q, p, &hi, &last, err);
	if (!rc && sq_prune_sql[p->phase].pre)
		rc = sq_prune_stmt(q, sq_prune_sql[p->phase].pre, p, hi, &n2,
				   err);
	if (!rc)
		rc = sq_prune_stmt(q, sq_prune_sql[p->phase].del, p, hi, &n1,
				   err);
	if (rc || p->dry_run) {
		tx_rollback(q);
		if (rc)
			return rc;
	} else if ((rc = tx_commit(q, err)) != 0) {
		return rc;
	}
	*out = (struct store_prune_done){.n_rows = n1, .n_more = n2,
					 .until = hi, .last = last};
	return 0;
}

static int sq_prune_size(void *impl, int64_t *used_bytes,
			 int64_t *file_bytes, const char **how,
			 struct sc_err *err)
{
	int64_t v[3] = {0, 0, 0};
	int rc = query_ints(impl, "SELECT page_count, freelist_count, "
			    "page_size FROM pragma_page_count(), "
			    "pragma_freelist_count(), pragma_page_size()",
			    v, 3, err);

	if (rc)
		return rc;
	*file_bytes = v[0] * v[2];
	*used_bytes = (v[0] - v[1]) * v[2];
	*how = "sqlite pages in use, (page_count - freelist_count) * "
	       "page_size";
	return 0;
}

/* ---- alerts ---------------------------------------------------------- */

/* ---- waiting for work ------------------------------------------------ */

/* mtime (ns) and size of path into out[0..2); zeros when it is absent. */
static void file_stamp(const char *path, int64_t out[2])
{
	struct stat st;

	out[0] = out[1] = 0;
	if (stat(path, &st) == 0) {
		out[0] = (int64_t)st.st_mtim.tv_sec * 1000000000 +
			 st.st_mtim.tv_nsec;
		out[1] = (int64_t)st.st_size;
	}
}

static int sq_wait(void *impl, int64_t timeout_ms, bool *changed,
		   struct sc_err *err)
{
	struct sq *q = impl;
	char wal[PATH_MAX + 8];
	int64_t now[4];

	snprintf(wal, sizeof(wal), "%s-wal", q->path);
	if (q->watched) {
		/* One look per call: a caller that loops on store_wait sees
		 * its own stop at least this often. */
		int64_t ms = timeout_ms < STORE_WATCH_STEP_MS
				     ? timeout_ms
				     : STORE_WATCH_STEP_MS;
		struct timespec ts = {(time_t)(ms / 1000),
				      (long)(ms % 1000) * 1000000L};
		if (ms > 0 && nanosleep(&ts, NULL) != 0) {
			*changed = true; /* a signal: let the caller look */
			return 0;
		}
	}
	file_stamp(q->path, now);
	file_stamp(wal, now + 2);
	/* The first look has nothing to compare with: a write made before
	 * it would otherwise go unseen until the next one. */
	*changed = !q->watched ||
		   memcmp(now, q->watch_stamp, sizeof(now)) != 0;
	memcpy(q->watch_stamp, now, sizeof(now));
	q->watched = true;
	return 0;
}

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.one_writer = true,
	.open = sq_open,
	.close = sq_close,
	.call = sq_call,
	.tx = sq_tx,
	.call_sql = stmt_sql,
	.cache_cap = sq_cache_cap,
	.claim_rule = sq_claim_rule,
	.job_claim = sq_job_claim,
	.job_finish = sq_job_finish,
	.job_complete_many = sq_job_complete_many,
	.sched_summaries = sq_sched_summaries,
	.prune_step = sq_prune_step,
	.prune_size = sq_prune_size,
	.wait = sq_wait,
};
