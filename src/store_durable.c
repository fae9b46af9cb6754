/*
 * store_durable.c - the durability class of every commit the store makes
 * (store.h, "durability"), declared once for both backends.
 *
 * A commit is ALWAYS durable when forgetting it could lose a run in
 * silence or send a second copy undeclared: it blocks a re-run (a guard,
 * a marker), records a loss (DEAD, "lost"), turns a crash mid-send into a
 * declared duplicate (SENDING), or is a decision an operator was told is
 * done (a pause, an ack). It is SERVER durable when only a crash the
 * callers outlive makes forgetting it harmful: a PostgreSQL server that
 * crashes alone while the daemons run on with their memory of it; on
 * SQLite a power cut stops the daemon too, and the database is a prefix
 * of its history, so the slot is enqueued again. Everything else may be
 * forgotten: a crash that forgets it re-runs work, never loses it.
 *
 * Invariants:
 *   - store_durability[i].commit == i, every kind has a row (checked
 *     by test_store's durability test), and the classes here are the
 *     only ones a backend applies: store_sqlite.c (sync_for) and
 *     store_pg.c ask store_commit_class, never choose.
 *   - The per-transition argument, in words: docs/internals/store.md,
 *     "Durability"; it names this file.
 */
#include <stdbool.h>
#include <string.h>

#include "failpoint.h"
#include "store.h"

#define ROW(c, d, w) [STORE_COMMIT_##c] = {STORE_COMMIT_##c, #c, STORE_DUR_##d, w}

const struct store_durability_row store_durability[STORE_COMMIT_N] = {
	ROW(MIGRATE, ALWAYS, "other nodes use the new schema at once; one "
			     "sync per migration"),
	ROW(ENQUEUE, SERVER, "PostgreSQL: the daemons outlive the server "
			     "and would not look at the slot again before "
			     "its next fire; SQLite: enqueued again with the "
			     "scheduler state lost along"),
	ROW(REVIVE, SERVER, "the operator was told; SQLite: as enqueue"),
	ROW(CLAIM, SERVER, "PostgreSQL: a forgotten claim could hand out "
			   "its lease token again while its worker runs; "
			   "SQLite: the worker died with the machine"),
	ROW(HEARTBEAT, NONE, "the lease ends early; the next fenced write "
			     "fails with SC_ELEASE"),
	ROW(LEASE_CLAMP, NONE, "clamped again at the next start"),
	ROW(FINISH, NONE, "the job is ACTIVE again, recovered as stalled; "
			  "the durable marker stops a second run"),
	ROW(FINISH_MARKED, ALWAYS, "the slot marker: forgetting it runs "
				   "the slot again"),
	ROW(FINISH_DEAD, ALWAYS, "the lost row is the loud record of a "
				 "lost slot"),
	ROW(COMPLETE_MANY, NONE, "unmarked completions: as FINISH"),
	ROW(RELEASE, NONE, "the job is ACTIVE again under the released "
			   "lease and recovered when it expires"),
	ROW(RECOVER, ALWAYS, "it may turn jobs DEAD with their lost rows"),
	ROW(LEDGER, NONE, "written again by the step that wrote it; a "
			  "duplicate row is flushed by the SENDING after it"),
	ROW(LEDGER_LOST, ALWAYS, "the loud record of a lost slot"),
	ROW(STAGE, NONE, "nothing was sent yet: staged again"),
	ROW(SENDING, ALWAYS, "forgotten, the next attempt would send again "
			     "without a duplicate row"),
	ROW(SENT, ALWAYS, "the send guard: forgotten, a second copy goes"),
	ROW(SEND_FAILED, NONE, "SENDING again: declared UNKNOWN next time"),
	ROW(SEND_UNKNOWN, NONE, "SENDING again: marked UNKNOWN again"),
	ROW(ABANDON, ALWAYS, "a row given up with its ledger row: "
			     "forgotten, it would be tried again"),
	ROW(SLOT_MARK, ALWAYS, "forgetting it runs the slot again"),
	ROW(SCHED_STATE, NONE, "written again; the slots after it are "
			       "enqueued again"),
	ROW(PAUSE, ALWAYS, "an operator was told it is done: a forgotten "
			   "pause runs what they stopped"),
	ROW(NODE, NONE, "written again at the next beat"),
	ROW(TOKEN, NONE, "fetched again"),
	ROW(LEASE, NONE, "a lease ended early or late, as when its holder "
			 "dies"),
	ROW(PRUNE, NONE, "the rows are pruned again"),
	ROW(ALERT_RAISE, ALWAYS, "an alert the operator may have seen"),
	ROW(ALERT_CLOSE, ALWAYS, "an ack or a recovery the operator was "
				 "told"),
	ROW(ALERT_REALERT, NONE, "realerted again on the next pass"),
	ROW(ALERT_STAGE, NONE, "staged again on the next pass"),
	ROW(ALERT_CLAIM, ALWAYS, "as SENDING: a crash mid-send is claimed "
				 "again as UNKNOWN"),
	ROW(ALERT_SENT, ALWAYS, "SENT or ABANDONED: forgotten, a second "
				"copy goes"),
	ROW(ALERT_RETRY, NONE, "SENDING again, claimed again as UNKNOWN"),
};

enum store_dur store_commit_class(enum store_commit c)
{
	if (FAILPOINT_ERR("store.durability_off"))
		return STORE_DUR_NONE;
	return store_durability[c].dur;
}

enum store_commit store_commit_of_finish(enum job_state new_state, bool mark)
{
	if (new_state == JOB_DEAD)
		return STORE_COMMIT_FINISH_DEAD;
	return mark ? STORE_COMMIT_FINISH_MARKED : STORE_COMMIT_FINISH;
}

enum store_commit store_commit_of_send(enum send_state state)
{
	switch (state) {
	case SEND_SENDING:
		return STORE_COMMIT_SENDING;
	case SEND_SENT:
		return STORE_COMMIT_SENT;
	case SEND_FAILED:
		return STORE_COMMIT_SEND_FAILED;
	case SEND_ABANDONED:
		return STORE_COMMIT_ABANDON;
	case SEND_UNKNOWN:
		return STORE_COMMIT_SEND_UNKNOWN;
	default:
		return STORE_COMMIT_STAGE;
	}
}

enum store_commit store_commit_of_rows(const struct ledger_row *rows,
				       size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].outcome, LEDGER_LOST) == 0)
			return STORE_COMMIT_LEDGER_LOST;
	return STORE_COMMIT_LEDGER;
}

enum store_commit store_commit_of_alert_send(enum send_state state)
{
	return state == SEND_SENT || state == SEND_ABANDONED
		       ? STORE_COMMIT_ALERT_SENT
		       : STORE_COMMIT_ALERT_RETRY;
}
