/*
 * bench_floor.c - the floor of bench_queue's claim+complete: the same
 * commits in a plain SQLite loop, nothing of surecron around them (issue
 * 45, item 5: a guard that moves with the machine, since queue.sh runs it
 * in the same minute as bench_queue).
 *
 *   bench_floor DIR N
 *
 * A fresh DIR/floor.db in WAL mode with synchronous = NORMAL, as the store
 * opens its file (store_sqlite.c: claims and completions are NORMAL
 * commits, no fsync at commit). N jobs of one schedule are inserted in one
 * transaction, then, per job, the two commits bench_queue's worker makes:
 *   claim:    BEGIN IMMEDIATE; the oldest READY job (an index seek on
 *             state, run_at) set ACTIVE; COMMIT
 *   complete: BEGIN IMMEDIATE; the job set DONE; one ledger row
 *             inserted; COMMIT
 * Prints one line: floor case=commits jobs= commits_per_job=2 seconds=
 * jobs_per_s= txn_per_s=. bench_queue's `work workers=1` jobs_per_s over
 * this one's is the share of the bare commit rate the queue keeps
 * (issue 45's P8 row, goal >= 0.5).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(sqlite3 *db, const char *what)
{
	fprintf(stderr, "bench_floor: %s: %s\n", what,
		db ? sqlite3_errmsg(db) : "out of memory");
	exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(db, sql);
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die(db, sql);
	return st;
}

/* Steps st to its end (a write, or a RETURNING row into *out) and resets
 * it. */
static void run(sqlite3 *db, sqlite3_stmt *st, int64_t *out)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (out)
			*out = sqlite3_column_int64(st, 0);
	if (rc != SQLITE_DONE)
		die(db, "step");
	sqlite3_reset(st);
}

int main(int argc, char **argv)
{
	char path[1024];
	sqlite3 *db = NULL;

	if (argc != 3 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: bench_floor DIR N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	snprintf(path, sizeof(path), "%s/floor.db", argv[1]);
	for (const char *suf = ""; suf;
	     suf = !*suf ? "-wal" : strcmp(suf, "-wal") == 0 ? "-shm" : NULL) {
		char p[1100];
		snprintf(p, sizeof(p), "%s%s", path, suf);
		unlink(p);
	}
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die(db, "open");
	exec(db, "PRAGMA journal_mode = WAL");
	exec(db, "PRAGMA synchronous = NORMAL");
	exec(db, "CREATE TABLE jobs (id INTEGER PRIMARY KEY, schedule TEXT "
		 "NOT NULL, run_at INTEGER NOT NULL, state INTEGER NOT NULL, "
		 "owner TEXT, lease_expires INTEGER);"
		 "CREATE INDEX jobs_due ON jobs (state, run_at);"
		 "CREATE TABLE ledger (id INTEGER PRIMARY KEY, schedule TEXT "
		 "NOT NULL, slot_ms INTEGER NOT NULL, outcome TEXT NOT NULL, "
		 "finished_ms INTEGER NOT NULL)");
	sqlite3_stmt *ins = prep(db, "INSERT INTO jobs (schedule, run_at, "
				     "state) VALUES ('floor', ?1, 0)");
	exec(db, "BEGIN");
	for (int i = 0; i < n; i++) {
		sqlite3_bind_int64(ins, 1, 1795798800000LL + i * 60000LL);
		run(db, ins, NULL);
	}
	exec(db, "COMMIT");
	sqlite3_stmt *begin = prep(db, "BEGIN IMMEDIATE");
	sqlite3_stmt *commit = prep(db, "COMMIT");
	sqlite3_stmt *claim = prep(
		db, "UPDATE jobs SET state = 1, owner = 'w0', lease_expires = "
		    "?1 WHERE id = (SELECT id FROM jobs WHERE state = 0 "
		    "ORDER BY run_at LIMIT 1) RETURNING id");
	sqlite3_stmt *done = prep(db, "UPDATE jobs SET state = 2, owner = "
				      "NULL WHERE id = ?1");
	sqlite3_stmt *row = prep(db, "INSERT INTO ledger (schedule, slot_ms, "
				     "outcome, finished_ms) SELECT schedule, "
				     "run_at, 'success', ?2 FROM jobs WHERE "
				     "id = ?1");
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		int64_t id = -1;
		run(db, begin, NULL);
		sqlite3_bind_int64(claim, 1, (int64_t)i + 60000);
		run(db, claim, &id);
		run(db, commit, NULL);
		if (id < 0)
			die(db, "no job left to claim");
		run(db, begin, NULL);
		sqlite3_bind_int64(done, 1, id);
		run(db, done, NULL);
		sqlite3_bind_int64(row, 1, id);
		sqlite3_bind_int64(row, 2, (int64_t)i);
		run(db, row, NULL);
		run(db, commit, NULL);
	}
	double secs = now_s() - t0;
	printf("floor case=commits jobs=%d commits_per_job=2 seconds=%.3f "
	       "jobs_per_s=%.0f txn_per_s=%.0f\n", n, secs, n / secs,
	       2 * n / secs);
	sqlite3_stmt *all[] = {ins, begin, commit, claim, done, row};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		sqlite3_finalize(all[i]);
	sqlite3_close(db);
	return 0;
}
