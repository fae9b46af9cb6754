/*
 * test_store.c - the store contract (store.h), on every backend.
 *
 * Each test opens a fresh store from tb_url() and runs unchanged on SQLite
 * and (with SURECRON_TEST_PG) PostgreSQL; the few file-format tests
 * (0600, corruption, disk full) are SQLite's own and skip elsewhere. Time comes from a virtual clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "config.h"
#include "failpoint.h"
#include "outbox.h"
#include "queue.h"
#include "store.h"
#include "store_backend.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define MIN 60000LL

static const struct sc_retry_policy low = {4, SC_BACKOFF_EXPONENTIAL,
					   30 * MIN};

struct fix {
	struct sc_clock *clock;
	struct store *s;
};

static void fix_open(void **state, struct fix *f)
{
	f->clock = sc_clock_virtual_new(T0);
	assert_non_null(f->clock);
	f->s = tb_open(state, f->clock);
}

static void fix_close(struct fix *f)
{
	store_close(f->s);
	sc_clock_free(f->clock);
}

static int64_t enqueue(struct fix *f, const char *sched, int64_t slot,
		       int64_t run_at, bool *created)
{
	struct sc_err err = {0};
	int64_t id = 0;

	assert_int_equal(store_job_enqueue(f->s, sched, slot, &low, run_at,
					   false, &id, created, &err),
			 0);
	return id;
}

static size_t claim(struct fix *f, const char *worker, struct store_job *out,
		    size_t max)
{
	struct sc_err err = {0};
	size_t n = 99;

	assert_int_equal(
		store_job_claim(f->s, worker, 5 * MIN, out, max, &n, &err), 0);
	return n;
}

static void file_bytes(const char *path, char **data, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	long n;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	assert_true(n >= 0);
	rewind(fp);
	*data = malloc((size_t)n + 1);
	assert_non_null(*data);
	assert_int_equal(fread(*data, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
}

/* ---- open, URL, file format ------------------------------------------- */

static void url_forms(void **state)
{
	struct sc_clock *c;
	struct store *s = NULL;
	struct sc_err err = {0};
	char bare[512];

	if (!tb_is_sqlite(state))
		skip(); /* before any allocation: skip() does not return */
	c = sc_clock_virtual_new(T0);
	/* postgresql:// goes to the PostgreSQL backend: nothing listens on
	 * port 1, so it reports that it cannot connect. */
	assert_int_equal(store_open("postgresql://127.0.0.1:1/x", c, &s, &err),
			 SC_EIO);
	assert_non_null(strstr(err.msg, "PostgreSQL"));
	sc_err_clear(&err);
	assert_int_equal(store_open("redis://x", c, &s, &err), SC_EINVAL);
	assert_non_null(strstr(err.msg, "scheme"));
	sc_err_clear(&err);
	assert_int_equal(store_open("sqlite:", c, &s, &err), SC_EINVAL);
	assert_null(s);
	/* A bare path is SQLite. */
	snprintf(bare, sizeof(bare), "%s/bare.db", tb_dir(state));
	assert_int_equal(store_open(bare, c, &s, NULL), 0);
	assert_string_equal(store_backend_name(s), "sqlite");
	assert_ptr_equal(store_clock(s), c);
	store_close(s);
	sc_clock_free(c);
}

/* The commands that read or act on a store open it with
 * store_open_existing: a path or a database where no store was ever made
 * is refused (SC_ENOENT) and left as it was, so `ledger --lost` on a
 * mistyped path fails instead of reporting a clean store, and `trigger`
 * never writes where no daemon looks. */
static void a_store_never_made_is_refused_and_left_unmade(void **state)
{
	struct sc_clock *c;
	struct store *s = NULL;
	struct sc_err err = {0};
	struct stat sb;

	if (((struct tb *)*state)->is_pg && !tb_url(state)[0])
		skip();
	c = sc_clock_virtual_new(T0);
	/* Twice: had the first refusal made the store (a file, the
	 * tables), the second open would succeed. */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(store_open_existing(tb_url(state), c, &s,
						     &err),
				 SC_ENOENT);
		assert_null(s);
		assert_non_null(strstr(err.msg, "no store"));
		sc_err_clear(&err);
	}
	if (tb_is_sqlite(state)) {
		assert_int_not_equal(stat(tb_path(state), &sb), 0);
		/* An empty file (a `touch`) is no store either. */
		int fd = open(tb_path(state), O_CREAT | O_WRONLY, 0600);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(store_open_existing(tb_url(state), c, &s,
						     &err),
				 SC_ENOENT);
		assert_non_null(strstr(err.msg, "no store at"));
		assert_int_equal(stat(tb_path(state), &sb), 0);
		assert_int_equal(sb.st_size, 0);
	}
	/* Once the daemon's open has made it, it opens, with its rows. */
	s = tb_open(state, c);
	bool created = false;
	assert_int_equal(store_job_enqueue(s, "a", T0, &(struct sc_retry_policy){
						   2, SC_BACKOFF_FIXED, 60000},
					   T0, false, NULL, &created, NULL),
			 0);
	store_close(s);
	s = NULL;
	assert_int_equal(store_open_existing(tb_url(state), c, &s, &err), 0);
	struct store_job j;
	assert_int_equal(store_job_find(s, "a", T0, &j, NULL), 0);
	store_close(s);
	sc_clock_free(c);
}

static void file_is_0600_and_reopens(void **state)
{
	struct fix f;
	struct stat sb;
	char wal[1100];
	mode_t old = umask(0); /* even a permissive umask gives 0600 */

	if (!tb_is_sqlite(state)) {
		umask(old);
		skip();
	}
	fix_open(state, &f);
	umask(old);
	enqueue(&f, "a", T0, T0, NULL);
	assert_int_equal(stat(tb_path(state), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(wal, sizeof(wal), "%s-wal", tb_path(state));
	assert_int_equal(stat(wal, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	fix_close(&f);

	fix_open(state, &f);
	struct store_job j;
	assert_int_equal(store_job_find(f.s, "a", T0, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	fix_close(&f);
}

static void raw_sql(void **state, const char *sql); /* below */

static void newer_version_is_refused_untouched(void **state)
{
	struct fix f;
	sqlite3 *db;
	char *before = NULL, *after = NULL;
	size_t n1 = 0, n2 = 0;
	struct sc_err err = {0};
	struct store *s = NULL;
	bool sqlite = tb_is_sqlite(state);

	fix_open(state, &f);
	enqueue(&f, "a", T0, T0, NULL);
	store_close(f.s);
	if (sqlite) {
		assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99",
					      NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
		file_bytes(tb_path(state), &before, &n1);
	} else {
		raw_sql(state, "UPDATE schema_version SET version = 99");
	}

	assert_int_equal(store_open(tb_url(state), f.clock, &s, &err),
			 SC_EVERSION);
	assert_null(s);
	assert_non_null(strstr(err.msg, "newer"));
	if (sqlite) {
		file_bytes(tb_path(state), &after, &n2);
		assert_int_equal(n1, n2);
		assert_memory_equal(before, after, n1);
	} else {
		/* Untouched: the version and the job as they were (raw_sql
		 * fails the test when the check raises). */
		raw_sql(state, "DO $$ BEGIN IF (SELECT version FROM "
			"schema_version) <> 99 OR (SELECT count(*) FROM "
			"schema_version) <> 1 OR (SELECT count(*) FROM jobs) "
			"<> 1 THEN RAISE EXCEPTION 'touched'; END IF; END $$");
	}
	free(before);
	free(after);
	sc_clock_free(f.clock);
}

/* Writes `bytes` at offset of a file. */
static void patch_file(const char *path, long off, const void *bytes,
		       size_t n)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

static void expect_refused(void **state, struct sc_clock *c,
			   const char *must_say)
{
	char *before, *after;
	size_t n1, n2;
	struct sc_err err = {0};
	struct store *s = NULL;

	file_bytes(tb_path(state), &before, &n1);
	assert_int_equal(store_open(tb_url(state), c, &s, &err), SC_ECORRUPT);
	assert_null(s);
	if (!strstr(err.msg, must_say))
		fail_msg("message '%s' does not say '%s'", err.msg, must_say);
	file_bytes(tb_path(state), &after, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(before, after, n1);
	free(before);
	free(after);
}

static void corrupt_or_foreign_files_are_refused_untouched(void **state)
{
	struct sc_clock *c;
	struct fix f;
	sqlite3 *db;
	FILE *fp;
	char junk[4000];

	if (!tb_is_sqlite(state))
		skip(); /* before any allocation: skip() does not return */
	c = sc_clock_virtual_new(T0);
	/* 1. Not SQLite at all. */
	fp = fopen(tb_path(state), "w");
	assert_non_null(fp);
	for (int i = 0; i < 200; i++)
		fputs("this is a plain text file, not a database\n", fp);
	fclose(fp);
	expect_refused(state, c, "not a SQLite database");
	/* 2. A short file. */
	fp = fopen(tb_path(state), "w");
	assert_non_null(fp);
	fputs("SQLite", fp);
	fclose(fp);
	expect_refused(state, c, "not a SQLite database");
	/* 3. Another application's SQLite database. */
	unlink(tb_path(state));
	assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE notes(x)", NULL, NULL,
				      NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	expect_refused(state, c, "not surecron's");
	/* 4. Ours, with its schema page smashed. */
	unlink(tb_path(state));
	fix_open(state, &f);
	enqueue(&f, "a", T0, T0, NULL);
	fix_close(&f);
	memset(junk, 0xA5, sizeof(junk));
	patch_file(tb_path(state), 100, junk, sizeof(junk));
	expect_refused(state, c, "corrupt");
	sc_clock_free(c);
}

/*
 * Disk full: a forked child lowers RLIMIT_FSIZE so that the database's
 * files cannot grow (writes fail with EFBIG, as on a full disk), tries a
 * big transaction, reports the error through a pipe, raises the limit
 * again and proves its handle still works. The parent checks the message
 * names the problem and that the database is intact and holds exactly the
 * committed jobs.
 */
static void disk_full_is_reported_and_database_stays_intact(void **state)
{
	struct fix f;
	int fds[2];
	pid_t pid;
	char wal[1100];
	struct stat sb;
	struct {
		int code, second;
		char msg[SC_ERR_MSG_MAX];
	} res = {0};

	if (!tb_is_sqlite(state))
		skip();
	fix_open(state, &f);
	for (int i = 0; i < 10; i++)
		enqueue(&f, "base", T0 + i, T0, NULL);
	store_close(f.s);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *s = NULL;
		struct sc_err err = {0};
		struct rlimit rl;
		int64_t slots[4000];
		long long biggest;
		char name[STORE_NAME_MAX];

		close(fds[0]);
		signal(SIGXFSZ, SIG_IGN);
		if (store_open(tb_url(state), f.clock, &s, &err) != 0)
			_exit(2);
		snprintf(wal, sizeof(wal), "%s-wal", tb_path(state));
		biggest = stat(tb_path(state), &sb) == 0 ? sb.st_size : 0;
		if (stat(wal, &sb) == 0 && sb.st_size > biggest)
			biggest = sb.st_size;
		getrlimit(RLIMIT_FSIZE, &rl);
		struct rlimit low_rl = {(rlim_t)biggest + 32768, rl.rlim_max};
		setrlimit(RLIMIT_FSIZE, &low_rl);
		memset(name, 'x', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		for (int i = 0; i < 4000; i++)
			slots[i] = T0 + 1000 * i;
		res.code = store_job_enqueue_many(s, name, slots, 4000, &low,
						  &err);
		snprintf(res.msg, sizeof(res.msg), "%s", err.msg);
		setrlimit(RLIMIT_FSIZE, &rl);
		sc_err_clear(&err);
		res.second = store_job_enqueue(s, "after", T0, &low, T0, false,
					       NULL, NULL, &err);
		store_close(s);
		if (write(fds[1], &res, sizeof(res)) != (ssize_t)sizeof(res))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	print_message("disk full: code=%d msg=%s\n", res.code, res.msg);
	assert_int_equal(res.code, SC_ENOSPC);
	if (!strstr(res.msg, "space") || !strstr(res.msg, "File too large"))
		fail_msg("disk-full message does not name the problem: %s",
			 res.msg);
	assert_int_equal(res.second, 0);

	/* Intact: integrity check passes, only committed work is there. */
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
					    &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);
	f.s = tb_open(state, f.clock);
	struct store_counts c;
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.ready_due + c.delayed, 11);
	fix_close(&f);
}

/* ---- jobs ------------------------------------------------------------ */

static void enqueue_is_idempotent(void **state)
{
	struct fix f;
	bool created;
	struct store_counts c;
	int64_t slots[] = {T0, T0 + MIN, T0 + 2 * MIN};

	fix_open(state, &f);
	int64_t a = enqueue(&f, "weekly", T0, T0, &created);
	assert_true(created);
	struct store_job j;
	assert_int_equal(store_job_get(f.s, a, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	assert_false(j.manual);
	assert_int_equal(j.created_ms, T0);
	int64_t b = enqueue(&f, "weekly", T0, T0 + 5, &created);
	assert_false(created);
	assert_int_equal(a, b);
	/* Same slot, other schedule: another job. */
	assert_int_not_equal(enqueue(&f, "daily", T0, T0, &created), a);
	assert_true(created);
	/* Bulk overlapping the single ones. */
	assert_int_equal(store_job_enqueue_many(f.s, "weekly", slots, 3, &low,
						NULL),
			 0);
	assert_int_equal(store_job_enqueue_many(f.s, "weekly", slots, 3, &low,
						NULL),
			 0);
	assert_int_equal(store_job_counts(f.s, "weekly", &c, NULL), 0);
	assert_int_equal(c.ready_due, 1);
	assert_int_equal(c.delayed, 2);
	assert_int_equal(store_job_get(f.s, a, &j, NULL), 0);
	assert_int_equal(j.run_at_ms, T0); /* the first enqueue won */
	assert_int_equal(j.policy.attempts, 4);
	assert_int_equal(j.policy.delay_ms, 30 * MIN);
	assert_int_equal(store_job_get(f.s, 424242, &j, NULL), SC_ENOENT);
	/* A tick's batch says which slots were new, each due at its slot
	 * with its policy; the states move forward only. */
	static const struct sc_retry_policy one = {1, SC_BACKOFF_FIXED, 0};
	struct store_enqueue v[] = {
		{"weekly", T0, &low, T0, true},
		{"hourly", T0, &one, T0, false},
		{"weekly", T0 + 3 * MIN, &one, T0 + 3 * MIN, false},
	};
	int64_t last = 0;
	assert_int_equal(store_job_enqueue_batch(f.s, v, 3, NULL), 0);
	assert_false(v[0].created);
	assert_true(v[1].created);
	assert_true(v[2].created);
	assert_int_equal(store_job_find(f.s, "hourly", T0, &j, NULL), 0);
	assert_int_equal(j.run_at_ms, T0);
	assert_int_equal(j.policy.attempts, 1);
	assert_int_equal(j.state, JOB_READY);
	assert_int_equal(store_sched_last_get(f.s, "weekly", &last, NULL), 0);
	assert_int_equal(last, T0 + 3 * MIN);
	v[1].last_ms = T0 - MIN;
	assert_int_equal(store_job_enqueue_batch(f.s, v + 1, 2, NULL), 0);
	assert_false(v[1].created);
	assert_false(v[2].created);
	assert_int_equal(store_sched_last_get(f.s, "hourly", &last, NULL), 0);
	assert_int_equal(last, T0);
	/* A bulk slot is due at its slot; a slot never enqueued is not
	 * there. */
	assert_int_equal(store_job_find(f.s, "weekly", T0 + 2 * MIN, &j, NULL),
			 0);
	assert_int_equal(j.run_at_ms, T0 + 2 * MIN);
	assert_int_equal(store_job_find(f.s, "weekly", T0 + 9, &j, NULL),
			 SC_ENOENT);
	/* A manual enqueue (surecron trigger) is marked so; enqueued again
	 * unmarked, it stays as it was. */
	int64_t m = 0;
	assert_int_equal(store_job_enqueue(f.s, "manual", T0, &low, T0, true,
					   &m, &created, NULL),
			 0);
	assert_true(created);
	assert_int_equal(store_job_enqueue(f.s, "manual", T0, &low, T0 + 5,
					   false, NULL, &created, NULL),
			 0);
	assert_false(created);
	assert_int_equal(store_job_get(f.s, m, &j, NULL), 0);
	assert_true(j.manual);
	assert_int_equal(j.run_at_ms, T0);
	fix_close(&f);
}

static void bad_arguments_are_refused(void **state)
{
	struct fix f;
	struct sc_err err = {0};
	char longname[STORE_NAME_MAX + 4];
	struct sc_retry_policy bad = {0, SC_BACKOFF_FIXED, 1};
	struct store_job j;
	size_t n;

	fix_open(state, &f);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(store_job_enqueue(f.s, longname, T0, &low, T0, false,
					   NULL, NULL, &err),
			 SC_EINVAL);
	assert_non_null(strstr(err.msg, "too long"));
	assert_int_equal(store_job_enqueue(f.s, "", T0, &low, T0, false, NULL,
					   NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_job_enqueue(f.s, "a", T0, &bad, T0, false, NULL,
					   NULL, NULL),
			 SC_EINVAL);
	assert_int_equal(store_job_claim(f.s, "w", 0, &j, 1, &n, NULL),
			 SC_EINVAL);
	/* A cache cap (the daemon's handles) must be positive; a capped
	 * handle works as before. */
	assert_int_equal(store_cache_cap(f.s, 0, NULL), SC_EINVAL);
	assert_int_equal(store_cache_cap(NULL, 256, NULL), SC_EINVAL);
	assert_int_equal(store_cache_cap(f.s, 256, NULL), 0);
	assert_int_equal(store_job_enqueue(f.s, "a", T0, &low, T0, false, NULL,
					   NULL, NULL),
			 0);
	fix_close(&f);
}

static void claim_takes_earliest_due_first(void **state)
{
	struct fix f;
	struct store_job j[8];

	fix_open(state, &f);
	int64_t late = enqueue(&f, "s", T0 + 3, T0 - 1 * MIN, NULL);
	int64_t early = enqueue(&f, "s", T0 + 2, T0 - 3 * MIN, NULL);
	int64_t mid = enqueue(&f, "s", T0 + 1, T0 - 2 * MIN, NULL);
	int64_t future = enqueue(&f, "s", T0 + 4, T0 + 10 * MIN, NULL);

	assert_int_equal(claim(&f, "w1", j, 1), 1);
	assert_int_equal(j[0].id, early);
	assert_int_equal(j[0].state, JOB_ACTIVE);
	assert_int_equal(j[0].attempts, 1);
	assert_string_equal(j[0].lease_owner, "w1");
	assert_int_equal(j[0].lease_expires_ms, T0 + 5 * MIN);
	assert_int_equal(j[0].started_ms, T0);
	assert_int_equal(claim(&f, "w2", j, 8), 2);
	assert_int_equal(j[0].id, mid);
	assert_int_equal(j[1].id, late);
	/* The future job is not due yet. */
	assert_int_equal(claim(&f, "w3", j, 8), 0);
	sc_clock_advance_ms(f.clock, 10 * MIN);
	assert_int_equal(claim(&f, "w3", j, 8), 1);
	assert_int_equal(j[0].id, future);
	fix_close(&f);
}

/*
 * The overlap rule in one claim of many jobs (store_overlap_set): a queue
 * schedule gives only its first READY job in the claim order, and none
 * while one of its jobs is ACTIVE; a skip schedule gives all of its due
 * jobs, every one but an idle schedule's first flagged `overlapped`; an
 * allow schedule gives all, none flagged.
 */
static void claim_follows_the_overlap_rule(void **state)
{
	struct fix f;
	struct store_job j[8];
	const char *allow[] = {"a"}, *skip[] = {"k"};
	struct sc_err err = {0};

	fix_open(state, &f);
	assert_int_equal(store_overlap_set(f.s, true, allow, 1, skip, 1, &err),
			 0);
	int64_t q1 = enqueue(&f, "q", T0 + 1, T0 - 3 * MIN, NULL);
	int64_t q2 = enqueue(&f, "q", T0 + 2, T0 - 2 * MIN, NULL);
	int64_t k1 = enqueue(&f, "k", T0 + 1, T0 - 3 * MIN, NULL);
	int64_t k2 = enqueue(&f, "k", T0 + 2, T0 - 2 * MIN, NULL);
	int64_t a1 = enqueue(&f, "a", T0 + 1, T0 - 3 * MIN, NULL);
	int64_t a2 = enqueue(&f, "a", T0 + 2, T0 - 2 * MIN, NULL);

	/* Claim order: run_at, then id. */
	assert_int_equal(claim(&f, "w1", j, 8), 5);
	assert_int_equal(j[0].id, q1);
	assert_false(j[0].overlapped);
	assert_int_equal(j[1].id, k1);
	assert_false(j[1].overlapped);
	assert_int_equal(j[2].id, a1);
	assert_false(j[2].overlapped);
	assert_int_equal(j[3].id, k2);
	assert_true(j[3].overlapped);
	assert_int_equal(j[4].id, a2);
	assert_false(j[4].overlapped);
	int64_t q1_token = j[0].lease_token;

	/* q1 is ACTIVE: q2 waits, and a new skip slot of busy k is flagged. */
	int64_t k3 = enqueue(&f, "k", T0 + 3, T0 - 1 * MIN, NULL);
	assert_int_equal(claim(&f, "w2", j, 8), 1);
	assert_int_equal(j[0].id, k3);
	assert_true(j[0].overlapped);
	assert_int_equal(claim(&f, "w2", j, 8), 0);
	/* q1 done: q2 is its schedule's first now. */
	assert_int_equal(store_job_finish(f.s, q1, q1_token, JOB_DONE, 0,
					  NULL, &err),
			 0);
	assert_int_equal(claim(&f, "w3", j, 8), 1);
	assert_int_equal(j[0].id, q2);
	assert_false(j[0].overlapped);
	fix_close(&f);
}

/* Claims one job and gives it back as a retry due at run_at. */
static void make_retry(struct fix *f, int64_t id, int64_t run_at)
{
	struct store_job j;
	struct sc_err err = {0};

	assert_int_equal(claim(f, "r", &j, 1), 1);
	assert_int_equal(j.id, id);
	assert_int_equal(store_job_finish(f->s, id, j.lease_token, JOB_READY,
					  run_at, NULL, &err),
			 0);
}

/* Claims one job (the rule on), checks it, and finishes it. */
static void take_one(struct fix *f, int64_t want, bool overlapped)
{
	struct store_job j[8];
	struct sc_err err = {0};

	assert_int_equal(claim(f, "w", j, 8), 1);
	assert_int_equal(j[0].id, want);
	assert_int_equal(j[0].overlapped, overlapped);
	assert_int_equal(store_job_finish(f->s, want, j[0].lease_token,
					  JOB_DONE, 0, NULL, &err),
			 0);
}

/*
 * Issue 45: the claim's "first of its schedule" test is bounded by the
 * candidate, not by now; the rule it keeps, under the overlap rule: a
 * queue schedule's fresh slots go before its retries even when the
 * retries are older (fresh first), a due fresh slot holds every retry
 * but one not yet due does not, retries then go by run_at, and a tie on
 * run_at goes by id. A skip schedule's retry in the same claim as its
 * fresh slot is flagged.
 */
static void claim_keeps_fresh_first_and_order_per_schedule(void **state)
{
	struct fix f;
	struct store_job j[8];
	const char *skip[] = {"k"};
	struct sc_err err = {0};

	fix_open(state, &f);
	int64_t r1 = enqueue(&f, "q", T0 + 1, T0 - 10 * MIN, NULL);
	make_retry(&f, r1, T0 - 7 * MIN);
	int64_t r2 = enqueue(&f, "q", T0 + 2, T0 - 9 * MIN, NULL);
	make_retry(&f, r2, T0 - 8 * MIN); /* older than r1 now */
	int64_t k1 = enqueue(&f, "k", T0 + 1, T0 - 10 * MIN, NULL);
	make_retry(&f, k1, T0 - 6 * MIN);
	int64_t f2 = enqueue(&f, "q", T0 + 4, T0 - 2 * MIN, NULL);
	int64_t f1 = enqueue(&f, "q", T0 + 3, T0 - 2 * MIN, NULL); /* tie */
	int64_t f0 = enqueue(&f, "q", T0 + 5, T0 - 3 * MIN, NULL);
	enqueue(&f, "q", T0 + 6, T0 + 30 * MIN, NULL); /* not due */
	int64_t k2 = enqueue(&f, "k", T0 + 2, T0 - 1 * MIN, NULL);
	assert_int_equal(store_overlap_set(f.s, true, NULL, 0, skip, 1, &err),
			 0);

	/* One claim: q's first fresh slot, k's fresh one, then k's retry
	 * flagged (its fresh slot comes first); q's retries wait. */
	assert_int_equal(claim(&f, "w", j, 8), 3);
	assert_int_equal(j[0].id, f0);
	assert_false(j[0].overlapped);
	assert_int_equal(j[1].id, k2);
	assert_false(j[1].overlapped);
	assert_int_equal(j[2].id, k1);
	assert_true(j[2].overlapped);
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_job_finish(f.s, j[i].id, j[i].lease_token,
						  JOB_DONE, 0, NULL, &err),
				 0);
	/* The tie on run_at by id, then the retries by run_at: r2 was
	 * enqueued later than r1 but is due first. */
	take_one(&f, f2 < f1 ? f2 : f1, false);
	take_one(&f, f2 < f1 ? f1 : f2, false);
	take_one(&f, r2, false);
	take_one(&f, r1, false);
	assert_int_equal(claim(&f, "w", j, 8), 0);
	fix_close(&f);
}

/* A worker may claim a job a little before it is due (so the claim's
 * transaction is not part of the task's lateness): only jobs within the
 * window, and the attempt's start on record is the due instant. */
static void claim_ahead_takes_only_jobs_due_within_the_window(void **state)
{
	struct fix f;
	struct store_job j[4];
	struct sc_err err = {0};
	size_t n = 99;

	fix_open(state, &f);
	int64_t soon = enqueue(&f, "s", T0 + 15, T0 + 15, NULL);
	enqueue(&f, "s", T0 + 25, T0 + 25, NULL);
	assert_int_equal(claim(&f, "w1", j, 4), 0);
	assert_int_equal(store_job_claim_ahead(f.s, "w1", 5 * MIN, 20, j, 4,
					       &n, &err),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(j[0].id, soon);
	assert_int_equal(j[0].started_ms, T0 + 15);
	assert_int_equal(j[0].lease_expires_ms, T0 + 5 * MIN);
	assert_int_equal(store_job_claim_ahead(f.s, "w1", 5 * MIN, -1, j, 4,
					       &n, &err),
			 SC_EINVAL);
	fix_close(&f);
}

static void leases_are_fenced(void **state)
{
	struct fix f;
	struct store_job j, again, now;
	struct sc_err err = {0};
	int n;

	fix_open(state, &f);
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "slow", &j, 1), 1);
	/* A heartbeat extends the lease from its own instant. */
	sc_clock_advance_ms(f.clock, MIN);
	assert_int_equal(store_job_heartbeat(f.s, id, j.lease_token, 5 * MIN,
					     NULL),
			 0);
	assert_int_equal(store_job_get(f.s, id, &now, NULL), 0);
	assert_int_equal(now.lease_expires_ms, T0 + 6 * MIN);
	assert_int_equal(store_job_heartbeat(f.s, id, j.lease_token + 7,
					     5 * MIN, &err),
			 SC_ELEASE);
	/* The slow worker pauses past its lease; the job is taken over. */
	sc_clock_advance_ms(f.clock, 6 * MIN);
	assert_int_equal(store_job_recover(f.s, 3, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(claim(&f, "fast", &again, 1), 1);
	assert_int_equal(again.id, id);
	assert_true(again.lease_token != j.lease_token);

	/* Every call of the paused worker is refused and changes nothing. */
	sc_err_clear(&err);
	assert_int_equal(store_job_heartbeat(f.s, id, j.lease_token, 5 * MIN,
					     &err),
			 SC_ELEASE);
	assert_non_null(strstr(err.msg, "heartbeat of job"));
	assert_non_null(strstr(err.msg, "lease lost"));
	assert_int_equal(store_job_finish(f.s, id, j.lease_token, JOB_DONE, 0,
					  NULL, NULL),
			 SC_ELEASE);
	assert_int_equal(store_job_finish(f.s, id, j.lease_token, JOB_READY,
					  T0, NULL, NULL),
			 SC_ELEASE);
	assert_int_equal(store_job_release(f.s, id, j.lease_token, NULL),
			 SC_ELEASE);
	assert_int_equal(store_job_get(f.s, id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_ACTIVE);
	assert_int_equal(now.lease_token, again.lease_token);
	assert_string_equal(now.lease_owner, "fast");
	assert_int_equal(now.attempts, 2);
	assert_int_equal(now.lease_expires_ms, T0 + 12 * MIN);

	/* The current holder finishes; a second finish is refused. */
	assert_int_equal(store_job_finish(f.s, id, again.lease_token, JOB_DONE,
					  0, NULL, NULL),
			 0);
	assert_int_equal(store_job_finish(f.s, id, again.lease_token, JOB_DONE,
					  0, NULL, NULL),
			 SC_ELEASE);
	/* Finished: even the current token no longer works. */
	assert_int_equal(store_job_heartbeat(f.s, id, again.lease_token,
					     5 * MIN, NULL),
			 SC_ELEASE);
	assert_int_equal(store_job_heartbeat(f.s, 999, 1, 5 * MIN, NULL),
			 SC_ENOENT);
	fix_close(&f);
}

/*
 * The rules of store_rule.c read the same on every backend (issue 46):
 * the outcome a finished attempt defaults to for each state it may end
 * in, ACTIVE refused before any write, and the words of a refused lease
 * and of a refused fence. The backends used to disagree on both.
 */
static void finish_outcomes_and_fence_errors_are_one_rule(void **state)
{
	static const enum job_state to[] = {JOB_DONE, JOB_READY, JOB_DEAD};
	struct fix f;
	struct store_job j;
	struct ledger_row *rows;
	struct sc_err err = {0};
	char want[200];
	size_t n;

	fix_open(state, &f);
	for (size_t i = 0; i < 3; i++) {
		int64_t id = enqueue(&f, "s", T0 + (int64_t)i * MIN, T0, NULL);
		assert_int_equal(claim(&f, "w", &j, 1), 1);
		assert_int_equal(j.id, id);
		/* ACTIVE is no end of an attempt: refused, nothing written. */
		sc_err_clear(&err);
		assert_int_equal(store_job_finish(f.s, id, j.lease_token,
						  JOB_ACTIVE, 0, NULL, &err),
				 SC_EINVAL);
		assert_null(store_finish_outcome(JOB_ACTIVE));
		assert_int_equal(store_job_finish(f.s, id, j.lease_token,
						  to[i], T0 + 90 * MIN, NULL,
						  NULL),
				 0);
		assert_int_equal(store_ledger_query(f.s, NULL, &rows, &n,
						    NULL),
				 0);
		assert_int_equal(n, i + 1);
		assert_string_equal(rows[i].outcome,
				    store_finish_outcome(to[i]));
		store_ledger_rows_free(rows, n);

		/* The lease is gone with the attempt: the same words. */
		sc_err_clear(&err);
		assert_int_equal(store_job_heartbeat(f.s, id, j.lease_token,
						     MIN, &err),
				 SC_ELEASE);
		snprintf(want, sizeof(want), "heartbeat of job %lld refused: "
			 "lease lost (token %lld no longer current: taken "
			 "over or finished)", (long long)id,
			 (long long)j.lease_token);
		assert_string_equal(err.msg, want);
	}
	assert_string_equal(store_finish_outcome(JOB_DONE), LEDGER_SUCCESS);
	assert_string_equal(store_finish_outcome(JOB_READY), LEDGER_FAILED);
	assert_string_equal(store_finish_outcome(JOB_DEAD), LEDGER_LOST);
	sc_err_clear(&err);
	assert_int_equal(store_job_finish(f.s, 999, 1, JOB_DONE, 0, NULL,
					  &err),
			 SC_ENOENT);
	assert_string_equal(err.msg, "no job 999");

	/* A write under the handle's fence, refused. */
	int64_t id = enqueue(&f, "t", T0, T0, NULL);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(j.id, id);
	store_fence_set(f.s, id, j.lease_token + 1);
	sc_err_clear(&err);
	assert_int_equal(store_slot_mark(f.s, "t", T0, &err), SC_ELEASE);
	snprintf(want, sizeof(want), "slot mark refused: job %lld is no "
		 "longer held under lease %lld (taken over or finished); this "
		 "worker stops", (long long)id, (long long)j.lease_token + 1);
	assert_string_equal(err.msg, want);
	/* Rows of no job (store_ledger_row_kind) pass a refused fence, once
	 * per slot; a job's row does not. */
	static const char *const once[] = {LEDGER_MISSED, LEDGER_PAUSED};
	for (size_t i = 0; i < 2; i++) {
		struct ledger_row r = {.schedule = "t", .slot_ms = T0 + MIN};
		bool written = false;
		snprintf(r.outcome, sizeof(r.outcome), "%s", once[i]);
		assert_int_equal(store_ledger_row_kind(once[i]),
				 i ? STORE_ROW_PAUSED : STORE_ROW_MISSED);
		assert_int_equal(store_ledger_append_written(f.s, &r, &written,
							     NULL),
				 0);
		assert_true(written);
		assert_int_equal(store_ledger_append_written(f.s, &r, &written,
							     NULL),
				 0);
		assert_false(written);
	}
	struct ledger_row job_row = {.schedule = "t", .slot_ms = T0,
				     .outcome = LEDGER_SUCCESS};
	assert_int_equal(store_ledger_row_kind(LEDGER_SUCCESS),
			 STORE_ROW_FENCED);
	assert_int_equal(store_ledger_append(f.s, &job_row, NULL), SC_ELEASE);
	store_fence_clear(f.s);

	/* What is not there reads the same too. */
	struct outbox_entry e;
	sc_err_clear(&err);
	assert_int_equal(store_outbox_get(f.s, "t", T0, "nope", &e, &err),
			 SC_ENOENT);
	assert_string_equal(err.msg, "no outbox row for target");
	sc_err_clear(&err);
	assert_int_equal(store_job_find(f.s, "nope", T0, &j, &err), SC_ENOENT);
	assert_string_equal(err.msg, "no such job");
	fix_close(&f);
}

static void finish_writes_one_ledger_row(void **state)
{
	struct fix f;
	struct store_job j;
	struct ledger_row *rows;
	size_t n;
	struct ledger_row fail_row = {.outcome = LEDGER_FAILED,
				      .error_class = "task",
				      .error_msg = "quota exceeded",
				      .retry_hint_ms = 45 * MIN,
				      .details_json = "{\"task\":\"gen\"}"};

	fix_open(state, &f);
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 1000);
	assert_int_equal(store_job_finish(f.s, id, j.lease_token, JOB_READY,
					  T0 + 46 * MIN, &fail_row, NULL),
			 0);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	assert_int_equal(j.run_at_ms, T0 + 46 * MIN);
	assert_int_equal(j.attempts, 1);
	/* No lease any more; who held the last claim is kept. */
	assert_int_equal(j.lease_expires_ms, 0);
	assert_string_equal(j.lease_owner, "w");
	sc_clock_set_ms(f.clock, T0 + 46 * MIN);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(j.attempts, 2);
	sc_clock_advance_ms(f.clock, 200);
	assert_int_equal(store_job_finish(f.s, id, j.lease_token, JOB_DONE, 0,
					  NULL, NULL),
			 0);
	assert_int_equal(store_ledger_query(f.s, NULL, &rows, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].outcome, LEDGER_FAILED);
	assert_string_equal(rows[0].schedule, "s");
	assert_int_equal(rows[0].slot_ms, T0);
	assert_int_equal(rows[0].job_id, id);
	assert_int_equal(rows[0].attempt, 1);
	assert_int_equal(rows[0].started_ms, T0);
	assert_int_equal(rows[0].finished_ms, T0 + 1000);
	assert_string_equal(rows[0].error_class, "task");
	assert_string_equal(rows[0].error_msg, "quota exceeded");
	assert_int_equal(rows[0].retry_hint_ms, 45 * MIN);
	assert_string_equal(rows[0].details_json, "{\"task\":\"gen\"}");
	assert_string_equal(rows[1].outcome, LEDGER_SUCCESS);
	assert_int_equal(rows[1].attempt, 2);
	assert_int_equal(rows[1].finished_ms, T0 + 46 * MIN + 200);
	assert_null(rows[1].error_msg);
	assert_string_equal(rows[1].error_class, "");
	store_ledger_rows_free(rows, n);
	fix_close(&f);
}

static void release_does_not_count_the_attempt(void **state)
{
	struct fix f;
	struct store_job j;

	fix_open(state, &f);
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 5000);
	assert_int_equal(store_job_release(f.s, id, j.lease_token, NULL), 0);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	assert_int_equal(j.attempts, 0);
	assert_int_equal(j.run_at_ms, T0 + 5000);
	/* Its "released" row, the same on every backend: the attempt it
	 * gave back, the claim's start, the release's instant. */
	struct ledger_filter lf = {.schedule = "s", .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	struct ledger_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].outcome, LEDGER_RELEASED);
	assert_int_equal(rows[0].job_id, id);
	assert_int_equal(rows[0].attempt, 1);
	assert_int_equal(rows[0].started_ms, T0);
	assert_int_equal(rows[0].finished_ms, T0 + 5000);
	assert_string_equal(rows[0].error_msg, "released on shutdown");
	store_ledger_rows_free(rows, n);
	/* Released again under the old token: refused, nothing written. */
	assert_int_equal(store_job_release(f.s, id, j.lease_token, NULL),
			 SC_ELEASE);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(j.attempts, 1);
	fix_close(&f);
}

/* A lease written before the clock went back an hour is judged by its
 * length (issue 42): clamped to one lease from now, then recovered when
 * that has passed, not an hour later; a lease within its length is left
 * alone; the store server's clock is PostgreSQL's only. */
static void lease_clamp_after_clock_set_back(void **state)
{
	struct fix f;
	struct store_job j;
	int n = -1, rec;
	int64_t id, srv;

	fix_open(state, &f);
	assert_int_equal(store_job_enqueue(f.s, "s", T0, &low, T0, false, &id,
					   NULL, NULL),
			 0);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(store_job_lease_clamp(f.s, 5 * MIN, 2000, &n, NULL),
			 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_job_lease_clamp(f.s, 0, 2000, &n, NULL),
			 SC_EINVAL);
	sc_clock_advance_ms(f.clock, -60 * MIN);
	int64_t now = sc_clock_now_ms(f.clock);
	assert_int_equal(store_job_lease_clamp(f.s, 5 * MIN, 2000, &n, NULL),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.lease_expires_ms, now + 5 * MIN);
	assert_int_equal(store_job_lease_clamp(f.s, 5 * MIN, 2000, &n, NULL),
			 0);
	assert_int_equal(n, 0);
	sc_clock_advance_ms(f.clock, 5 * MIN + 1);
	assert_int_equal(store_job_recover(f.s, 3, &rec, NULL), 0);
	assert_int_equal(rec, 1);
	int rc = store_server_now_ms(f.s, &srv, NULL);
	if (strcmp(store_backend_name(f.s), "sqlite") == 0) {
		assert_int_equal(rc, SC_ENOENT);
	} else {
		assert_int_equal(rc, 0);
		int64_t real = sc_clock_now_ms(sc_clock_real());
		assert_true(srv > real - 60000 && srv < real + 60000);
	}
	fix_close(&f);
}

static void recover_counts_stalls_and_gives_up(void **state)
{
	struct fix f;
	struct store_job j;
	struct ledger_row *rows;
	size_t n;
	int rec;
	struct sc_retry_policy many = {10, SC_BACKOFF_FIXED, MIN};

	fix_open(state, &f);
	int64_t id;
	assert_int_equal(store_job_enqueue(f.s, "s", T0, &many, T0, false, &id,
					   NULL, NULL),
			 0);
	for (int stall = 1; stall <= 3; stall++) {
		assert_int_equal(claim(&f, "w", &j, 1), 1);
		/* Not yet expired: nothing to recover. */
		sc_clock_advance_ms(f.clock, 5 * MIN);
		assert_int_equal(store_job_recover(f.s, 3, &rec, NULL), 0);
		assert_int_equal(rec, 0);
		sc_clock_advance_ms(f.clock, 1);
		assert_int_equal(store_job_recover(f.s, 3, &rec, NULL), 0);
		assert_int_equal(rec, 1);
		assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
		assert_int_equal(j.n_stalls, stall);
		assert_int_equal(j.attempts, stall);
		assert_int_equal(j.state, stall < 3 ? JOB_READY : JOB_DEAD);
		/* A survived stall is due again at once. */
		if (stall < 3)
			assert_int_equal(j.run_at_ms,
					 sc_clock_now_ms(f.clock));
	}
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 4);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(rows[i].outcome, LEDGER_STALLED);
		assert_int_equal(rows[i].attempt, i + 1);
		assert_string_equal(rows[i].error_class, "stalled");
	}
	assert_string_equal(rows[3].outcome, LEDGER_LOST);
	assert_non_null(strstr(rows[3].error_msg, "stalled 3 times"));
	assert_int_equal(rows[3].job_id, id);
	assert_int_equal(rows[2].job_id, id);
	store_ledger_rows_free(rows, n);

	/* A stall on the last attempt is a lost slot too. */
	struct sc_retry_policy one = {1, SC_BACKOFF_FIXED, MIN};
	assert_int_equal(store_job_enqueue(f.s, "t", T0, &one,
					   sc_clock_now_ms(f.clock), false,
					   &id, NULL, NULL),
			 0);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 6 * MIN);
	assert_int_equal(store_job_recover(f.s, 3, &rec, NULL), 0);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	lf.schedule = "t";
	lf.outcome = LEDGER_LOST;
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_non_null(strstr(rows[0].error_msg, "attempts used up"));
	store_ledger_rows_free(rows, n);
	fix_close(&f);
}

/*
 * The edge of the stall rule (store_stall_rule in store.c, the one place
 * it lives): max_stalls < 1 is refused with SC_EINVAL before any backend
 * runs, and changes nothing; max_stalls 1 (queue_recover's stall limit 0)
 * makes the first stall fatal. The same verdict and the same ledger texts
 * on every backend.
 */
static void recover_max_stalls_edge_is_the_same_on_every_backend(void **state)
{
	static const int refused[] = {0, -1, INT_MIN};
	struct sc_retry_policy many = {10, SC_BACKOFF_FIXED, MIN};
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	struct ledger_row *rows;
	struct store_job j;
	struct fix f;
	size_t n;
	int rec;
	int64_t id;

	fix_open(state, &f);
	assert_int_equal(store_job_enqueue(f.s, "s", T0, &many, T0, false, &id,
					   NULL, NULL),
			 0);
	assert_int_equal(claim(&f, "w1", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 5 * MIN + 1);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct sc_err err = {0};
		rec = 7;
		assert_int_equal(store_job_recover(f.s, refused[i], &rec, &err),
				 SC_EINVAL);
		assert_non_null(strstr(err.msg, "max_stalls"));
		assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
		assert_int_equal(j.state, JOB_ACTIVE);
		assert_int_equal(j.n_stalls, 0);
	}
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_int_equal(queue_recover(f.s, -1, &rec, NULL), SC_EINVAL);

	/* Stall limit 0: the first stall is fatal, with both rows. */
	assert_int_equal(queue_recover(f.s, 0, &rec, NULL), 0);
	assert_int_equal(rec, 1);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_DEAD);
	assert_int_equal(j.n_stalls, 1);
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].outcome, LEDGER_STALLED);
	assert_string_equal(rows[0].error_class, "stalled");
	assert_string_equal(rows[0].error_msg,
			    "lease of worker w1 expired: the worker died or "
			    "hung (stall 1)");
	assert_string_equal(rows[1].outcome, LEDGER_LOST);
	assert_string_equal(rows[1].error_class, "stalled");
	assert_string_equal(rows[1].error_msg, "stalled 1 times: giving up");
	assert_int_equal(rows[1].attempt, 1);
	store_ledger_rows_free(rows, n);

	/* max_stalls 2 through the store: one stall is survived. */
	assert_int_equal(store_job_enqueue(f.s, "t", T0, &many,
					   sc_clock_now_ms(f.clock), false,
					   &id, NULL, NULL),
			 0);
	assert_int_equal(claim(&f, "w2", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 5 * MIN + 1);
	assert_int_equal(store_job_recover(f.s, 2, &rec, NULL), 0);
	assert_int_equal(rec, 1);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	fix_close(&f);
}

/* More expired leases than one recovery batch holds. */
static void recover_handles_many_jobs(void **state)
{
	struct fix f;
	static int64_t slots[150];
	static struct store_job j[150];
	struct store_counts c;
	int n;

	fix_open(state, &f);
	for (int i = 0; i < 150; i++)
		slots[i] = T0 - i;
	assert_int_equal(store_job_enqueue_many(f.s, "s", slots, 150, &low,
						NULL),
			 0);
	assert_int_equal(claim(&f, "w", j, 150), 150);
	sc_clock_advance_ms(f.clock, 5 * MIN + 1);
	assert_int_equal(store_job_recover(f.s, 3, &n, NULL), 0);
	assert_int_equal(n, 150);
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.ready_due, 150);
	assert_int_equal(c.active, 0);
	assert_int_equal(store_job_recover(f.s, 3, &n, NULL), 0);
	assert_int_equal(n, 0);
	fix_close(&f);
}

static void revive_only_dead_jobs(void **state)
{
	struct fix f;
	struct store_job j;
	struct sc_err err = {0};

	fix_open(state, &f);
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(store_job_revive(f.s, id, 0, &err), SC_ESTATE);
	char want[64];
	snprintf(want, sizeof(want), "job %lld is not dead", (long long)id);
	assert_string_equal(err.msg, want);
	sc_err_clear(&err);
	assert_int_equal(store_job_revive(f.s, 777, 0, &err), SC_ENOENT);
	assert_string_equal(err.msg, "no job 777");
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(store_job_finish(f.s, id, j.lease_token, JOB_DEAD, 0,
					  NULL, NULL),
			 0);
	sc_clock_advance_ms(f.clock, MIN);
	int max0 = j.policy.attempts;
	assert_int_equal(store_job_revive(f.s, id, 0, NULL), 0);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	/* Attempts go on counting (issue 10): the budget grows instead. */
	assert_int_equal(j.attempts, 1);
	assert_int_equal(j.policy.attempts, 1 + max0);
	assert_int_equal(j.run_at_ms, T0 + MIN);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(j.attempts, 2);
	/* An explicit budget: that many more attempts. */
	assert_int_equal(store_job_finish(f.s, id, j.lease_token, JOB_DEAD, 0,
					  NULL, NULL),
			 0);
	assert_int_equal(store_job_revive(f.s, id, 3, NULL), 0);
	assert_int_equal(store_job_get(f.s, id, &j, NULL), 0);
	assert_int_equal(j.attempts, 2);
	assert_int_equal(j.policy.attempts, 5);
	fix_close(&f);
}

static void next_due_and_counts(void **state)
{
	struct fix f;
	struct store_job j;
	int64_t due;
	struct store_counts c;

	fix_open(state, &f);
	assert_int_equal(store_job_next_due(f.s, &due, NULL), 0);
	assert_true(due == INT64_MAX);
	enqueue(&f, "a", T0, T0 + 10 * MIN, NULL);
	enqueue(&f, "a", T0 + 1, T0 + 20 * MIN, NULL);
	enqueue(&f, "b", T0, T0, NULL);
	assert_int_equal(store_job_next_due(f.s, &due, NULL), 0);
	assert_int_equal(due, T0);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	/* Now the active job's lease expiry (T0 + 5 min) is the earliest. */
	assert_int_equal(store_job_next_due(f.s, &due, NULL), 0);
	assert_int_equal(due, T0 + 5 * MIN);
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.active, 1);
	assert_int_equal(c.delayed, 2);
	assert_int_equal(c.ready_due, 0);
	assert_int_equal(store_job_finish(f.s, j.id, j.lease_token, JOB_DONE,
					  0, NULL, NULL),
			 0);
	assert_int_equal(store_job_counts(f.s, "b", &c, NULL), 0);
	assert_int_equal(c.done, 1);
	assert_int_equal(c.active + c.delayed + c.ready_due + c.dead, 0);
	assert_int_equal(store_job_counts(f.s, "zzz", &c, NULL), 0);
	assert_int_equal(c.active + c.delayed + c.ready_due + c.dead + c.done,
			 0);
	/* Time makes a delayed job due. */
	sc_clock_advance_ms(f.clock, 10 * MIN);
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.ready_due, 1);
	assert_int_equal(c.delayed, 1);
	fix_close(&f);
}

/* ---- ledger queries ---------------------------------------------------- */

static void ledger_queries_filter(void **state)
{
	static const struct {
		const char *schedule, *outcome;
		int64_t slot;
	} seed[] = {
		{"a", LEDGER_SUCCESS, T0},      {"a", LEDGER_FAILED, T0 + 1},
		{"a", LEDGER_LOST, T0 + 1},     {"b", LEDGER_MISSED, T0 + 2},
		{"b", LEDGER_SUCCESS, T0 + 3},  {"b", LEDGER_LOST, T0 + 4},
		{"c", LEDGER_DUPLICATE, T0 + 5},
	};
	static const struct {
		struct ledger_filter f;
		size_t n;
		int first; /* index into seed of the first row */
	} cases[] = {
		{{NULL, INT64_MIN, INT64_MAX, NULL, false, 0, false}, 7, 0},
		{{"a", INT64_MIN, INT64_MAX, NULL, false, 0, false}, 3, 0},
		{{"b", INT64_MIN, INT64_MAX, NULL, false, 0, false}, 3, 3},
		{{NULL, T0 + 1, T0 + 4, NULL, false, 0, false}, 4, 1},
		{{NULL, INT64_MIN, INT64_MAX, LEDGER_SUCCESS, false, 0, false}, 2, 0},
		{{NULL, INT64_MIN, INT64_MAX, NULL, true, 0, false}, 3, 2},
		{{"b", T0 + 2, T0 + 3, NULL, true, 0, false}, 1, 3},
		{{NULL, INT64_MIN, INT64_MAX, NULL, false, 2, false}, 2, 0},
		{{"zzz", INT64_MIN, INT64_MAX, NULL, false, 0, false}, 0, 0},
		/* newest first: the latest row of a schedule, alone */
		{{"a", INT64_MIN, INT64_MAX, NULL, false, 1, true}, 1, 2},
		{{NULL, INT64_MIN, INT64_MAX, NULL, false, 0, true}, 7, 6},
	};
	struct fix f;

	fix_open(state, &f);
	for (size_t i = 0; i < sizeof(seed) / sizeof(seed[0]); i++) {
		struct ledger_row r = {.slot_ms = seed[i].slot,
				       .finished_ms = T0,
				       .error_msg = (char *)"why"};
		snprintf(r.schedule, sizeof(r.schedule), "%s",
			 seed[i].schedule);
		snprintf(r.outcome, sizeof(r.outcome), "%s", seed[i].outcome);
		assert_int_equal(store_ledger_append(f.s, &r, NULL), 0);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ledger_row *rows;
		size_t n;
		assert_int_equal(store_ledger_query(f.s, &cases[i].f, &rows, &n,
						    NULL),
				 0);
		if (n != cases[i].n)
			fail_msg("case %zu: %zu rows, want %zu", i, n,
				 cases[i].n);
		if (n) {
			assert_string_equal(rows[0].schedule,
					    seed[cases[i].first].schedule);
			assert_string_equal(rows[0].outcome,
					    seed[cases[i].first].outcome);
			assert_string_equal(rows[0].error_msg, "why");
		}
		for (size_t k = 1; k < n; k++)
			assert_true(cases[i].f.newest_first
					    ? rows[k].id < rows[k - 1].id
					    : rows[k].id > rows[k - 1].id);
		store_ledger_rows_free(rows, n);
	}
	struct ledger_row bad = {.schedule = "a"};
	assert_int_equal(store_ledger_append(f.s, &bad, NULL), SC_EINVAL);
	fix_close(&f);
}

/* ---- one missed row per slot (schema 2) -------------------------------- */

static size_t count_rows(struct fix *f, const char *sched, const char *outcome)
{
	struct ledger_filter lf = {.schedule = sched, .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows;
	size_t n;

	assert_int_equal(store_ledger_query(f->s, &lf, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

/* Appending the same missed row twice leaves one row; the second append
 * succeeds and says it wrote nothing. Other outcomes are never merged. */
static void missed_row_is_kept_once_per_slot(void **state)
{
	static const struct {
		const char *schedule, *outcome;
		int64_t slot;
		bool written;
	} seq[] = {
		{"a", LEDGER_MISSED, T0, true},
		{"a", LEDGER_MISSED, T0, false},     /* the duplicate */
		{"a", LEDGER_MISSED, T0 + 1, true},  /* another slot */
		{"b", LEDGER_MISSED, T0, true},      /* another schedule */
		{"a", LEDGER_DUPLICATE, T0, true},   /* not a missed row: */
		{"a", LEDGER_DUPLICATE, T0, true},   /* never merged */
		{"a", LEDGER_LOST, T0, true},
		{"a", LEDGER_LOST, T0, true},
		{"a", LEDGER_MISSED, T0, false},     /* still refused */
	};
	struct fix f;

	fix_open(state, &f);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		struct ledger_row r = {.slot_ms = seq[i].slot,
				       .finished_ms = T0 + (int64_t)i};
		bool written = !seq[i].written;
		snprintf(r.schedule, sizeof(r.schedule), "%s",
			 seq[i].schedule);
		snprintf(r.outcome, sizeof(r.outcome), "%s", seq[i].outcome);
		r.error_msg = (char *)"not run";
		assert_int_equal(store_ledger_append_written(f.s, &r, &written,
							     NULL),
				 0);
		if (written != seq[i].written)
			fail_msg("row %zu: written %d, want %d", i, written,
				 seq[i].written);
	}
	assert_int_equal(count_rows(&f, "a", LEDGER_MISSED), 2);
	assert_int_equal(count_rows(&f, "b", LEDGER_MISSED), 1);
	assert_int_equal(count_rows(&f, "a", LEDGER_DUPLICATE), 2);
	assert_int_equal(count_rows(&f, "a", LEDGER_LOST), 2);
	/* The row kept is the first one written. */
	struct ledger_filter lf = {.schedule = "a", .since_ms = T0,
				   .until_ms = T0 + 1,
				   .outcome = LEDGER_MISSED};
	struct ledger_row *rows;
	size_t n;
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].finished_ms, T0);
	store_ledger_rows_free(rows, n);
	/* The plain store_ledger_append drops the duplicate quietly too. */
	struct ledger_row again = {.slot_ms = T0};
	snprintf(again.schedule, sizeof(again.schedule), "a");
	snprintf(again.outcome, sizeof(again.outcome), "%s", LEDGER_MISSED);
	assert_int_equal(store_ledger_append(f.s, &again, NULL), 0);
	assert_int_equal(count_rows(&f, "a", LEDGER_MISSED), 2);
	fix_close(&f);
}

/* Runs SQL on the raw database of this test (sqlite file or pg schema). */
static void raw_sql(void **state, const char *sql)
{
	struct tb *b = *state;

	if (!b->is_pg) {
		sqlite3 *db;
		char *msg = NULL;
		assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
		if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
			fail_msg("sqlite: %s: %s", sql, msg);
		sqlite3_close(db);
		return;
	}
	char q[2048];
	snprintf(q, sizeof(q), "SET search_path TO %s; %s", b->schema, sql);
	if (tb_pg_exec(b->base, q) != 0)
		fail_msg("postgresql: %s", q);
}

/* Turns a current (version 6) store back into version 2: no alert
 * tables (version 4), the body back in the outbox row, no outbox_body
 * table. */
/* Undoes versions 8 (ledger_skipped) and 7 (pauses), which every
 * rollback below starts with. */
static void drop_version_7(void **state)
{
	raw_sql(state, TB_UNDO_9(state));
	raw_sql(state, "DROP INDEX ledger_skipped");
	raw_sql(state, "DROP TABLE pauses");
	raw_sql(state, "DROP INDEX ledger_paused_once");
}

static void to_version_2(void **state)
{
	drop_version_7(state);
	raw_sql(state, "DROP INDEX ledger_ok");
	raw_sql(state, "DROP TABLE leases");
	raw_sql(state, "DROP INDEX ledger_period");
	raw_sql(state, "DROP INDEX ledger_lost");
	raw_sql(state, "DROP INDEX ledger_acked");
	raw_sql(state, "DROP INDEX jobs_open");
	raw_sql(state, "DROP TABLE alert_sends");
	raw_sql(state, "DROP TABLE alerts");
	raw_sql(state, "DROP INDEX jobs_unalerted");
	raw_sql(state, "ALTER TABLE jobs DROP COLUMN alerted");
	raw_sql(state, "ALTER TABLE outbox ADD COLUMN body TEXT NOT NULL "
		       "DEFAULT ''");
	raw_sql(state, "UPDATE outbox SET body = (SELECT b.body FROM "
		       "outbox_body b WHERE b.schedule = outbox.schedule AND "
		       "b.slot_ms = outbox.slot_ms AND b.target = outbox.target)");
	raw_sql(state, "DROP TABLE outbox_body");
	raw_sql(state, tb_is_sqlite(state)
			       ? "PRAGMA user_version = 2"
			       : "UPDATE schema_version SET version = 2");
}

/*
 * Issue 10: version 3 keeps message bodies out of the outbox state row.
 * A version 2 store (bodies in the rows) migrates with every message and
 * state kept, and its rows go on working.
 */
static void version_2_outbox_bodies_migrate(void **state)
{
	struct fix f;
	struct outbox_entry e = {0};

	fix_open(state, &f);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "a", "body of a", NULL,
					  NULL), 0);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "b", "body of b", NULL,
					  NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENDING,
						NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENT, NULL),
			 0);
	store_close(f.s);
	to_version_2(state);
	f.s = tb_open(state, f.clock);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "a", &e, NULL), 0);
	assert_int_equal(e.state, SEND_SENT);
	assert_int_equal(e.n_tries, 1);
	assert_string_equal(e.body, "body of a");
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "b", &e, NULL), 0);
	assert_int_equal(e.state, SEND_PENDING);
	assert_string_equal(e.body, "body of b");
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "b", SEND_SENDING,
						NULL), 0);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "c", "body of c", NULL,
					  NULL), 0);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "c", &e, NULL), 0);
	assert_string_equal(e.body, "body of c");
	store_outbox_entry_dispose(&e);
	fix_close(&f);
}

/*
 * Issue 16: version 6 adds ledger_ok, the partial index of success rows
 * that store_last_successes seeks. A version 5 store with its ledger
 * migrates, answers from the rows it had, and then has the index (DROP
 * INDEX fails the test when there is none).
 */
/* Issue 17: a pause row per schedule (replaced by the next pause, ended
 * early by resume), bounded to 30 days; a paused ledger row is kept once
 * per slot, as a missed one is. */
static void pauses_are_stored_replaced_and_ended(void **state)
{
	struct fix f;
	struct store_pause p = {.from_ms = T0, .until_ms = T0 + 60 * MIN},
			   got, *v = NULL;
	size_t n = 0;
	bool ended = true, written = false;

	fix_open(state, &f);
	assert_int_equal(store_pause_get(f.s, "a", &got, NULL), SC_ENOENT);
	assert_int_equal(store_pause_end(f.s, "a", T0, &ended, NULL), 0);
	assert_false(ended);
	snprintf(p.schedule, sizeof(p.schedule), "b");
	snprintf(p.by, sizeof(p.by), "alice");
	snprintf(p.note, sizeof(p.note), "upgrade");
	assert_int_equal(store_pause_set(f.s, &p, NULL), 0);
	snprintf(p.schedule, sizeof(p.schedule), "a");
	assert_int_equal(store_pause_set(f.s, &p, NULL), 0);
	/* Replaced by the next pause of the schedule. */
	p.until_ms = T0 + 120 * MIN;
	snprintf(p.note, sizeof(p.note), "longer");
	assert_int_equal(store_pause_set(f.s, &p, NULL), 0);
	assert_int_equal(store_pause_get(f.s, "a", &got, NULL), 0);
	assert_int_equal(got.until_ms, T0 + 120 * MIN);
	assert_string_equal(got.by, "alice");
	assert_string_equal(got.note, "longer");
	assert_false(got.resumed);
	assert_int_equal(store_pause_all(f.s, &v, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].schedule, "a");
	assert_string_equal(v[1].schedule, "b");
	free(v);
	/* Ended early once; a second end finds nothing running. */
	assert_int_equal(store_pause_end(f.s, "a", T0 + 5 * MIN, &ended, NULL),
			 0);
	assert_true(ended);
	assert_int_equal(store_pause_get(f.s, "a", &got, NULL), 0);
	assert_int_equal(got.until_ms, T0 + 5 * MIN);
	assert_true(got.resumed);
	assert_int_equal(store_pause_end(f.s, "a", T0 + 6 * MIN, &ended, NULL),
			 0);
	assert_false(ended);
	/* Bounds. */
	p.until_ms = p.from_ms + STORE_PAUSE_MAX_MS + 1;
	assert_int_equal(store_pause_set(f.s, &p, NULL), SC_EINVAL);
	p.until_ms = p.from_ms;
	assert_int_equal(store_pause_set(f.s, &p, NULL), SC_EINVAL);
	/* One paused row per slot. */
	struct ledger_row r = {.slot_ms = T0 + MIN};
	snprintf(r.schedule, sizeof(r.schedule), "a");
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_PAUSED);
	assert_int_equal(store_ledger_append_written(f.s, &r, &written, NULL),
			 0);
	assert_true(written);
	assert_int_equal(store_ledger_append_written(f.s, &r, &written, NULL),
			 0);
	assert_false(written);
	fix_close(&f);
}

static void version_5_gains_the_success_index(void **state)
{
	static const struct {
		const char *schedule, *outcome;
		int64_t slot, finished;
	} seed[] = {
		{"a", LEDGER_SUCCESS, T0, T0 + 1},
		{"a", LEDGER_FAILED, T0 + 1000, T0 + 1001},
		{"b", LEDGER_FAILED, T0, T0 + 2},
		{"c", LEDGER_SUCCESS, T0 + 2000, T0 + 2003},
		{"c", LEDGER_SUCCESS, T0 + 1000, T0 + 3000},
	};
	struct fix f;
	struct store_last_ok *v = NULL;
	size_t n = 0;

	fix_open(state, &f);
	for (size_t i = 0; i < sizeof(seed) / sizeof(seed[0]); i++) {
		struct ledger_row r = {.slot_ms = seed[i].slot,
				       .finished_ms = seed[i].finished};
		snprintf(r.schedule, sizeof(r.schedule), "%s",
			 seed[i].schedule);
		snprintf(r.outcome, sizeof(r.outcome), "%s", seed[i].outcome);
		assert_int_equal(store_ledger_append(f.s, &r, NULL), 0);
	}
	store_close(f.s);
	drop_version_7(state);
	raw_sql(state, "DROP INDEX ledger_ok");
	raw_sql(state, tb_is_sqlite(state)
			       ? "PRAGMA user_version = 5"
			       : "UPDATE schema_version SET version = 5");
	f.s = tb_open(state, f.clock);
	assert_int_equal(store_last_successes(f.s, &v, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].schedule, "a");
	assert_int_equal(v[0].finished_ms, T0 + 1);
	assert_string_equal(v[1].schedule, "c");
	assert_int_equal(v[1].slot_ms, T0 + 2000);
	assert_int_equal(v[1].finished_ms, T0 + 2003);
	free(v);
	/* The newest row of each schedule, any outcome (on SQLite, the
	 * heads that version 9 reads from the old indexes). */
	struct store_sched_summary *sum = NULL;
	assert_int_equal(store_sched_summaries(f.s, NULL, &sum, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(sum[0].last.outcome, LEDGER_FAILED);
	assert_int_equal(sum[0].last.slot_ms, T0 + 1000);
	assert_string_equal(sum[1].last.schedule, "b");
	assert_int_equal(sum[2].last.slot_ms, T0 + 2000);
	store_sched_summaries_free(sum, n);
	store_close(f.s);
	f.s = NULL;
	/* Fails when the migration left no such index. */
	raw_sql(state, tb_is_sqlite(state) ? "DROP INDEX ledger_day"
					   : "DROP INDEX ledger_ok");
	sc_clock_free(f.clock);
}

/* The newest row and the newest success of one schedule, as status and
 * /metrics read them; 0 for none. */
static void heads_of(struct fix *f, const char *sched, int64_t *slot,
		     int64_t *ok_slot)
{
	struct store_sched_summary *sum = NULL;
	struct store_last_ok *v = NULL;
	size_t n = 0;

	*slot = 0;
	*ok_slot = 0;
	assert_int_equal(store_sched_summaries(f->s, sched, &sum, &n, NULL),
			 0);
	assert_true(n <= 1);
	if (n == 1 && sum[0].has_last)
		*slot = sum[0].last.slot_ms;
	store_sched_summaries_free(sum, n);
	assert_int_equal(store_last_successes(f->s, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].schedule, sched) == 0)
			*ok_slot = v[i].slot_ms;
	free(v);
}

static void append_row(struct fix *f, const char *sched, int64_t slot,
		       const char *outcome)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = T0};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(f->s, &r, NULL), 0);
}

/*
 * Schema 9 keeps each schedule's newest ledger row and newest success in
 * ledger_head (both backends). A version 8 store gets them from its rows
 * when it migrates, and from then on each new row moves them when it is
 * newer by (slot, id): a row of an older slot written later (a late
 * retry's) does not.
 */
static void version_8_heads_fill_and_follow_new_rows(void **state)
{
	struct fix f;
	int64_t slot, ok;

	fix_open(state, &f);
	append_row(&f, "a", T0, LEDGER_SUCCESS);
	append_row(&f, "a", T0 + 2 * MIN, LEDGER_FAILED);
	append_row(&f, "a", T0 + MIN, LEDGER_SUCCESS); /* written later */
	append_row(&f, "b", T0, LEDGER_LOST);
	store_close(f.s);
	raw_sql(state, TB_UNDO_9(state));
	f.s = tb_open(state, f.clock);
	heads_of(&f, "a", &slot, &ok);
	assert_int_equal(slot, T0 + 2 * MIN);
	assert_int_equal(ok, T0 + MIN);
	heads_of(&f, "b", &slot, &ok);
	assert_int_equal(slot, T0);
	assert_int_equal(ok, 0);
	heads_of(&f, "c", &slot, &ok);
	assert_int_equal(slot, 0);
	/* Older than the heads: nothing moves. */
	append_row(&f, "a", T0 - MIN, LEDGER_SUCCESS);
	heads_of(&f, "a", &slot, &ok);
	assert_int_equal(slot, T0 + 2 * MIN);
	assert_int_equal(ok, T0 + MIN);
	/* A second row of the head's slot is newer (its id). */
	append_row(&f, "a", T0 + 2 * MIN, LEDGER_SUCCESS);
	heads_of(&f, "a", &slot, &ok);
	assert_int_equal(slot, T0 + 2 * MIN);
	assert_int_equal(ok, T0 + 2 * MIN);
	/* A failure moves the newest row only; a first row makes a head. */
	append_row(&f, "a", T0 + 3 * MIN, LEDGER_FAILED);
	append_row(&f, "c", T0, LEDGER_SUCCESS);
	heads_of(&f, "a", &slot, &ok);
	assert_int_equal(slot, T0 + 3 * MIN);
	assert_int_equal(ok, T0 + 2 * MIN);
	heads_of(&f, "c", &slot, &ok);
	assert_int_equal(slot, T0);
	assert_int_equal(ok, T0);
	fix_close(&f);
}

/* The last run of one schedule as status reads it: its outcome and
 * attempt ("" when none). */
static void last_run_of(struct fix *f, const char *sched, char *outcome,
			size_t n_outcome, int *attempt, int64_t *slot)
{
	struct store_sched_summary *sum = NULL;
	size_t n = 0;

	outcome[0] = '\0';
	*attempt = 0;
	*slot = 0;
	assert_int_equal(store_sched_summaries(f->s, sched, &sum, &n, NULL),
			 0);
	if (n == 1 && sum[0].has_last) {
		snprintf(outcome, n_outcome, "%s", sum[0].last.outcome);
		*attempt = sum[0].last.attempt;
		*slot = sum[0].last.slot_ms;
	}
	store_sched_summaries_free(sum, n);
}

static void append_attempt(struct fix *f, const char *sched, int64_t slot,
			   const char *outcome, int attempt)
{
	struct ledger_row r = {.slot_ms = slot, .finished_ms = T0,
			       .attempt = attempt};

	snprintf(r.schedule, sizeof(r.schedule), "%s", sched);
	snprintf(r.outcome, sizeof(r.outcome), "%s", outcome);
	assert_int_equal(store_ledger_append(f->s, &r, NULL), 0);
}

/*
 * Issue 43: status says what ran. A schedule's last is its newest run
 * row (success, failed, lost, skipped, stalled, released) with its
 * attempt, never the alert, ack, recovered, missed or late row written
 * about a slot after it; a schedule with notes only has run never. A
 * store of schema 9 (here: 8, then 9 and 10) finds the run under the
 * notes when it migrates.
 */
static void issue43_status_last_is_a_run(void **state)
{
	struct fix f;
	char out[32];
	int attempt;
	int64_t slot;

	fix_open(state, &f);
	append_attempt(&f, "a", T0, LEDGER_SUCCESS, 1);
	append_attempt(&f, "a", T0 + MIN, LEDGER_FAILED, 1);
	append_attempt(&f, "a", T0 + MIN, LEDGER_LOST, 2);
	append_attempt(&f, "a", T0 + MIN, LEDGER_ALERT, 0);
	append_attempt(&f, "a", T0 + 2 * MIN, LEDGER_MISSED, 0);
	append_attempt(&f, "b", T0, LEDGER_MISSED, 0);
	append_attempt(&f, "b", T0, LEDGER_ALERT, 0);
	append_attempt(&f, "c", T0, LEDGER_SUCCESS, 3);
	append_attempt(&f, "c", T0 + MIN, LEDGER_SKIPPED, 0);
	append_attempt(&f, "c", T0 + MIN, LEDGER_LATE, 0);
	for (int pass = 0; pass < 2; pass++) {
		last_run_of(&f, "a", out, sizeof(out), &attempt, &slot);
		assert_string_equal(out, LEDGER_LOST);
		assert_int_equal(attempt, 2);
		assert_int_equal(slot, T0 + MIN);
		last_run_of(&f, "b", out, sizeof(out), &attempt, &slot);
		assert_string_equal(out, "");
		last_run_of(&f, "c", out, sizeof(out), &attempt, &slot);
		assert_string_equal(out, LEDGER_SKIPPED);
		assert_int_equal(slot, T0 + MIN);
		if (pass)
			break;
		/* The same rows written before schema 10: the migration
		 * fills the runs from them. */
		store_close(f.s);
		raw_sql(state, TB_UNDO_9(state));
		f.s = tb_open(state, f.clock);
	}
	/* After the migration, the trigger: a recovery's rows. */
	append_attempt(&f, "a", T0 + MIN, LEDGER_SUCCESS, 3);
	append_attempt(&f, "a", T0 + MIN, LEDGER_RECOVERED, 0);
	append_attempt(&f, "a", T0 + MIN, LEDGER_ACKED, 0);
	append_attempt(&f, "b", T0 + MIN, LEDGER_STALLED, 1);
	last_run_of(&f, "a", out, sizeof(out), &attempt, &slot);
	assert_string_equal(out, LEDGER_SUCCESS);
	assert_int_equal(attempt, 3);
	last_run_of(&f, "b", out, sizeof(out), &attempt, &slot);
	assert_string_equal(out, LEDGER_STALLED);
	fix_close(&f);
}

/* The outcomes of LEDGER_RUN_OUTCOMES_SQL, from its text, into v. */
static size_t run_outcomes(char v[][16], size_t cap)
{
	const char *p = LEDGER_RUN_OUTCOMES_SQL;
	size_t n = 0;

	while (n < cap && (p = strchr(p, '\'')) != NULL) {
		const char *end = strchr(p + 1, '\'');
		assert_non_null(end);
		snprintf(v[n++], 16, "%.*s", (int)(end - p - 1), p + 1);
		p = end + 1;
	}
	return n;
}

/*
 * Issue 45: the heads' trigger tells a run's outcome by a list of its
 * own (SQLite's HEAD_RUN_OF, a CASE, not the IN of
 * LEDGER_RUN_OUTCOMES_SQL): every outcome of that list, and only those,
 * becomes a schedule's last run.
 */
static void heads_know_every_run_outcome(void **state)
{
	static const char *const notes[] = {LEDGER_ALERT, LEDGER_ACKED,
					    LEDGER_RECOVERED, LEDGER_LATE,
					    LEDGER_MISSED};
	struct fix f;
	char runs[16][16], out[32];
	size_t n_runs = run_outcomes(runs, 16);
	int64_t slot = T0, last;
	int attempt;

	assert_true(n_runs >= 6);
	fix_open(state, &f);
	for (size_t i = 0; i < n_runs; i++) {
		slot += MIN;
		append_attempt(&f, "a", slot, runs[i], 1);
		last_run_of(&f, "a", out, sizeof(out), &attempt, &last);
		assert_string_equal(out, runs[i]);
		assert_int_equal(last, slot);
		for (size_t k = 0; k < sizeof(notes) / sizeof(notes[0]); k++)
			append_attempt(&f, "a", slot + 1 + (int64_t)k, notes[k],
				       0);
		last_run_of(&f, "a", out, sizeof(out), &attempt, &last);
		assert_string_equal(out, runs[i]);
		assert_int_equal(last, slot);
	}
	fix_close(&f);
}

/*
 * Issue 45: a store of schema 10 (its trigger with the IN, no nodes
 * table) gets the nodes (11) and the cheaper trigger (12) when it opens (SQLite; the PostgreSQL trigger is a
 * function and was not changed), and its heads go on following new rows.
 */
static void version_10_trigger_upgrades(void **state)
{
	struct fix f;
	char out[32];
	int attempt;
	int64_t slot;

	if (!tb_is_sqlite(state))
		skip();
	fix_open(state, &f);
	append_attempt(&f, "a", T0, LEDGER_SUCCESS, 1);
	store_close(f.s);
	/* Schema 10's trigger, in short: its test of a run is an IN. */
	raw_sql(state, "DROP TRIGGER ledger_head_new; CREATE TRIGGER "
		       "ledger_head_new AFTER INSERT ON ledger WHEN new.outcome "
		       "IN " LEDGER_RUN_OUTCOMES_SQL " BEGIN UPDATE ledger_head "
		       "SET id = new.id, slot_ms = new.slot_ms WHERE schedule = "
		       "new.schedule; END; DROP TABLE nodes; " TB_UNDO_13
		       "PRAGMA user_version = 10");
	f.s = tb_open(state, f.clock);
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open(tb_path(state), &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT user_version "
					    "FROM pragma_user_version), sql "
					    "FROM sqlite_master WHERE name = "
					    "'ledger_head_new'", -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true(sqlite3_column_int(st, 0) >= 12);
	assert_null(strstr((const char *)sqlite3_column_text(st, 1), " IN "));
	sqlite3_finalize(st);
	sqlite3_close(db);
	append_attempt(&f, "a", T0 + MIN, LEDGER_STALLED, 2);
	append_attempt(&f, "a", T0 + 2 * MIN, LEDGER_ALERT, 0);
	last_run_of(&f, "a", out, sizeof(out), &attempt, &slot);
	assert_string_equal(out, LEDGER_STALLED);
	assert_int_equal(attempt, 2);
	fix_close(&f);
}

/*
 * Issue 43: a node never claims a job of a schedule its config lacks
 * (by name or by renamed_from): the claim passes it over, and it waits,
 * READY and never attempted, for a node that has the schedule, however
 * long it has been due. The rule comes from the config as the daemon
 * sets it (queue_overlap_rule).
 */
static void issue43_claim_takes_known_schedules_only(void **state)
{
	struct fix f;
	struct store_job got[8], j;
	size_t n = 0;
	char *old[] = {(char *)"old", NULL}, *none[] = {NULL};
	struct schedule_spec specs[2] = {
		{.name = (char *)"a", .renamed_from = none},
		{.name = (char *)"new", .renamed_from = old,
		 .n_renamed_from = 1},
	};
	struct config cfg = {.schedules = specs, .n_schedules = 2};

	fix_open(state, &f);
	int64_t b = enqueue(&f, "b", T0, T0 - 60 * MIN, NULL);
	enqueue(&f, "a", T0, T0, NULL);
	enqueue(&f, "old", T0, T0, NULL);
	assert_int_equal(queue_overlap_rule(f.s, &cfg, NULL), 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(store_job_claim(f.s, "w", MIN, got, 8, &n,
						 NULL), 0);
		/* a and old (renamed to new), never b: none in round 2. */
		assert_int_equal(n, round ? 0 : 2);
		for (size_t i = 0; i < n; i++)
			assert_string_not_equal(got[i].schedule, "b");
	}
	assert_int_equal(store_job_get(f.s, b, &j, NULL), 0);
	assert_int_equal(j.state, JOB_READY);
	assert_int_equal(j.attempts, 0);
	/* Nor is b due for this node: the next due is a's next job, not
	 * b's, an hour late (else the worker would poll for it). */
	int64_t next = 0;
	enqueue(&f, "a", T0 + 5 * MIN, T0 + 5 * MIN, NULL);
	assert_int_equal(store_job_next_due(f.s, &next, NULL), 0);
	assert_true(next > T0);
	assert_int_equal(store_overlap_set(f.s, false, NULL, 0, NULL, 0, NULL),
			 0);
	assert_int_equal(store_job_next_due(f.s, &next, NULL), 0);
	assert_true(next <= T0 - 60 * MIN);
	assert_int_equal(queue_overlap_rule(f.s, &cfg, NULL), 0);
	/* An empty list claims nothing; NULL (a node that knows b, or no
	 * config) any schedule. */
	const char *empty[] = {NULL};
	assert_int_equal(store_claim_known_set(f.s, empty, 0, NULL), 0);
	assert_int_equal(store_job_claim(f.s, "w", MIN, got, 8, &n, NULL), 0);
	assert_int_equal(n, 0);
	/* Each new list is the one applied (PostgreSQL keeps it on its
	 * side between claims and loads it again when it changes, issue
	 * 45). */
	const char *x[] = {"x"}, *bl[] = {"b"};
	enqueue(&f, "c", T0, T0 - 30 * MIN, NULL);
	assert_int_equal(store_claim_known_set(f.s, x, 1, NULL), 0);
	assert_int_equal(store_job_claim(f.s, "w", MIN, got, 8, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_claim_known_set(f.s, bl, 1, NULL), 0);
	assert_int_equal(store_job_claim(f.s, "w", MIN, got, 8, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(got[0].schedule, "b");
	assert_int_equal(store_claim_known_set(f.s, NULL, 0, NULL), 0);
	assert_int_equal(store_job_claim(f.s, "w", MIN, got, 8, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(got[0].schedule, "c");
	fix_close(&f);
}

/* Issue 43: a node's record is written, replaced by its next beat (seen
 * at the store clock's now), listed by id, and removed when the node
 * leaves; a bad record refused. */
static void issue43_nodes_beat_and_list(void **state)
{
	struct fix f;
	struct store_node a = {.pid = 42, .started_ms = T0 - MIN}, b = a;
	struct store_node *v = NULL;
	size_t n = 0;

	fix_open(state, &f);
	snprintf(a.id, sizeof(a.id), "h1:42:1");
	snprintf(a.host, sizeof(a.host), "h1");
	snprintf(a.version, sizeof(a.version), "1.0");
	snprintf(a.config_digest, sizeof(a.config_digest), "00000000000000aa");
	b = a;
	snprintf(b.id, sizeof(b.id), "h0:7:1");
	snprintf(b.config_digest, sizeof(b.config_digest), "00000000000000bb");
	/* Issue 42: a measured clock offset is kept where the store has a
	 * clock of its own (PostgreSQL), not measured on SQLite. */
	b.clock_offset_ms = -7250;
	b.has_clock_offset = true;
	assert_int_equal(store_node_beat(f.s, &a, NULL), 0);
	assert_int_equal(store_node_beat(f.s, &b, NULL), 0);
	sc_clock_set_ms(f.clock, T0 + 30000);
	snprintf(a.config_digest, sizeof(a.config_digest), "00000000000000cc");
	assert_int_equal(store_node_beat(f.s, &a, NULL), 0);
	assert_int_equal(store_nodes(f.s, &v, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].id, "h0:7:1");
	assert_int_equal(v[0].seen_ms, T0);
	bool pg = strcmp(store_backend_name(f.s), "postgresql") == 0;
	assert_int_equal(v[0].has_clock_offset, pg);
	assert_int_equal(v[0].clock_offset_ms, pg ? -7250 : 0);
	assert_false(v[1].has_clock_offset);
	assert_string_equal(v[1].id, "h1:42:1");
	assert_string_equal(v[1].host, "h1");
	assert_int_equal(v[1].pid, 42);
	assert_string_equal(v[1].version, "1.0");
	assert_string_equal(v[1].config_digest, "00000000000000cc");
	assert_int_equal(v[1].started_ms, T0 - MIN);
	assert_int_equal(v[1].seen_ms, T0 + 30000);
	free(v);
	/* A node that stops leaves at once; leaving twice is no error. */
	assert_int_equal(store_node_leave(f.s, "h1:42:1", NULL), 0);
	assert_int_equal(store_node_leave(f.s, "h1:42:1", NULL), 0);
	assert_int_equal(store_nodes(f.s, &v, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].id, "h0:7:1");
	free(v);
	assert_int_equal(store_node_leave(f.s, "", NULL), SC_EINVAL);
	a.id[0] = '\0';
	assert_int_equal(store_node_beat(f.s, &a, NULL), SC_EINVAL);
	fix_close(&f);
}

/* The abandoned rows of schedule s, oldest first (caller frees). */
static size_t abandoned_rows(struct fix *f, struct ledger_row **rows)
{
	struct ledger_filter lf = {.schedule = "s", .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX,
				   .outcome = LEDGER_ABANDONED};
	size_t n = 0;

	assert_int_equal(store_ledger_query(f->s, &lf, rows, &n, NULL), 0);
	return n;
}

static struct ledger_row abandon_row(const char *target)
{
	struct ledger_row r = {.slot_ms = T0, .attempt = 2};

	snprintf(r.schedule, sizeof(r.schedule), "s");
	snprintf(r.outcome, sizeof(r.outcome), LEDGER_ABANDONED);
	snprintf(r.error_class, sizeof(r.error_class), "target_removed");
	r.error_msg = (char *)target;
	return r;
}

/*
 * Issue 43: a staged copy of a removed target is closed ABANDONED with
 * its ledger row in one transaction, once, only from the state the
 * caller read, and only under the job's lease; the slot's look counts
 * the rows of targets it was not asked about, and the list names them.
 */
static void issue43_outbox_abandon_closes_with_its_row(void **state)
{
	struct fix f;
	struct outbox_entry e = {0};
	struct store_outbox_row *v = NULL;
	struct ledger_row *rows = NULL, row;
	struct store_job j;
	size_t n = 0, others = 9;
	bool closed = true, marked = true;
	int staged = 9;

	fix_open(state, &f);
	for (const char *t = "abc"; *t; t++) {
		char name[2] = {*t, 0};
		assert_int_equal(store_outbox_put(f.s, "s", T0, name, "body",
						  NULL, NULL), 0);
	}
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a",
						SEND_FAILED, NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "b",
						SEND_SENDING, NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "b",
						SEND_UNKNOWN, NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "c",
						SEND_SENDING, NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "c", SEND_SENT,
						NULL), 0);
	const char *only_c[] = {"c"};
	assert_int_equal(store_slot_look_others(f.s, "s", T0, only_c, 1,
						&marked, &staged, &e, &others,
						NULL), 0);
	assert_false(marked);
	assert_int_equal(staged, 0);
	assert_int_equal(others, 2);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_list(f.s, "s", T0, &v, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].target, "a");
	assert_int_equal(v[0].state, SEND_FAILED);
	assert_string_equal(v[1].target, "b");
	assert_int_equal(v[1].state, SEND_UNKNOWN);
	assert_int_equal(v[1].n_tries, 1);
	assert_int_equal(v[2].state, SEND_SENT);
	free(v);

	/* Under a lease no longer held: refused, nothing written. */
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(j.id, id);
	store_fence_set(f.s, j.id, j.lease_token + 1);
	row = abandon_row("a");
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "a", SEND_FAILED,
					      &row, &closed, NULL),
			 SC_ELEASE);
	assert_false(closed);
	assert_int_equal(abandoned_rows(&f, &rows), 0);
	store_ledger_rows_free(rows, 0);
	store_fence_set(f.s, j.id, j.lease_token);
	/* Not from the state it is in: nothing. */
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "a", SEND_UNKNOWN,
					      &row, &closed, NULL), 0);
	assert_false(closed);
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "a", SEND_FAILED,
					      &row, &closed, NULL), 0);
	assert_true(closed);
	/* Once: a second try finds it closed already. */
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "a", SEND_FAILED,
					      &row, &closed, NULL), 0);
	assert_false(closed);
	row = abandon_row("b");
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "b", SEND_UNKNOWN,
					      &row, &closed, NULL), 0);
	assert_true(closed);
	/* A sent copy is no copy to abandon. */
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "c", SEND_SENT,
					      &row, &closed, NULL), SC_EINVAL);
	store_fence_clear(f.s);
	assert_int_equal(abandoned_rows(&f, &rows), 2);
	assert_string_equal(rows[0].error_msg, "a");
	assert_string_equal(rows[0].error_class, "target_removed");
	assert_int_equal(rows[0].attempt, 2);
	assert_string_equal(rows[1].error_msg, "b");
	store_ledger_rows_free(rows, 2);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "a", &e, NULL), 0);
	assert_int_equal(e.state, SEND_ABANDONED);
	store_outbox_entry_dispose(&e);
	/* Closed for good: no state moves it again but the store's own. */
	assert_int_equal(store_outbox_get(f.s, "s", T0, "b", &e, NULL), 0);
	assert_int_equal(e.state, SEND_ABANDONED);
	store_outbox_entry_dispose(&e);
	fix_close(&f);
}

/* Issue 43: a schedule's cron is recorded once per change, in order of
 * the slot it governs from; nodes noting the same at once write once. */
static void issue43_cron_history_noted_once_per_change(void **state)
{
	struct fix f;
	struct store_cron *v = NULL;
	size_t n = 0, w = 9;

	fix_open(state, &f);
	struct store_cron_note a[] = {
		{.schedule = "s", .from_ms = T0, .cron = "0 * * * *",
		 .tz = "UTC"},
		{.schedule = "t", .from_ms = T0, .cron = "* * * * *",
		 .tz = "Europe/Paris"},
	};
	assert_int_equal(store_cron_note_many(f.s, a, 2, &w, NULL), 0);
	assert_int_equal(w, 2);
	/* A restart with the same config, later: nothing new. */
	a[0].from_ms = a[1].from_ms = T0 + 60 * MIN;
	assert_int_equal(store_cron_note_many(f.s, a, 2, &w, NULL), 0);
	assert_int_equal(w, 0);
	/* A reload changes s's cron, then its zone. */
	struct store_cron_note b = {.schedule = "s", .from_ms = T0 + 90 * MIN,
				    .cron = "30 * * * *", .tz = "UTC"};
	assert_int_equal(store_cron_note_many(f.s, &b, 1, &w, NULL), 0);
	assert_int_equal(w, 1);
	b.from_ms = T0 + 120 * MIN;
	b.tz = "Asia/Tokyo";
	assert_int_equal(store_cron_note_many(f.s, &b, 1, &w, NULL), 0);
	assert_int_equal(w, 1);
	assert_int_equal(store_cron_history(f.s, "s", &v, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].from_ms, T0);
	assert_string_equal(v[0].cron, "0 * * * *");
	assert_int_equal(v[1].from_ms, T0 + 90 * MIN);
	assert_string_equal(v[1].cron, "30 * * * *");
	assert_string_equal(v[2].tz, "Asia/Tokyo");
	assert_int_equal(v[2].recorded_ms, T0);
	free(v);
	assert_int_equal(store_cron_history(f.s, "nope", &v, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	b.cron = "";
	assert_int_equal(store_cron_note_many(f.s, &b, 1, &w, NULL),
			 SC_EINVAL);
	fix_close(&f);
}

/*
 * Issue 43: a store of the previous schema (SQLite 12, whose outbox takes
 * states 1..5 only; PostgreSQL 11) migrates to 13 with its outbox rows,
 * and from then on closes a row ABANDONED and keeps cron records.
 */
static void version_12_migrates_to_13(void **state)
{
	struct fix f;
	struct outbox_entry e = {0};
	struct ledger_row row = abandon_row("a"), *rows = NULL;
	size_t w = 0;
	bool closed = false;

	fix_open(state, &f);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "a", "body of a", NULL,
					  NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a",
						SEND_FAILED, NULL), 0);
	store_close(f.s);
	if (tb_is_sqlite(state))
		raw_sql(state, TB_UNDO_13
			"CREATE TABLE outbox_old(schedule TEXT NOT NULL, "
			"slot_ms INTEGER NOT NULL, target TEXT NOT NULL, "
			"state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 5), "
			"n_tries INTEGER NOT NULL DEFAULT 0, created_ms "
			"INTEGER NOT NULL, updated_ms INTEGER NOT NULL, "
			"sent_ms INTEGER NOT NULL DEFAULT 0, PRIMARY KEY "
			"(schedule, slot_ms, target)); INSERT INTO outbox_old "
			"SELECT * FROM outbox; DROP TABLE outbox; ALTER TABLE "
			"outbox_old RENAME TO outbox; PRAGMA user_version = 12");
	else
		raw_sql(state, TB_UNDO_13 /* and 14's column */
			"ALTER TABLE nodes DROP COLUMN clock_offset_ms; "
			"UPDATE schema_version SET version = 11");
	f.s = tb_open(state, f.clock);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "a", &e, NULL), 0);
	assert_int_equal(e.state, SEND_FAILED);
	assert_string_equal(e.body, "body of a");
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_abandon(f.s, "s", T0, "a", SEND_FAILED,
					      &row, &closed, NULL), 0);
	assert_true(closed);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "a", &e, NULL), 0);
	assert_int_equal(e.state, SEND_ABANDONED);
	store_outbox_entry_dispose(&e);
	assert_int_equal(abandoned_rows(&f, &rows), 1);
	store_ledger_rows_free(rows, 1);
	struct store_cron_note c = {.schedule = "s", .from_ms = T0,
				    .cron = "0 * * * *", .tz = "UTC"};
	assert_int_equal(store_cron_note_many(f.s, &c, 1, &w, NULL), 0);
	assert_int_equal(w, 1);
	fix_close(&f);
}

/*
 * A database of schema version 1 that holds duplicate missed rows (two
 * nodes caught up the same downtime) migrates to one row per slot, the
 * first one written, and from then on refuses a duplicate. Other rows,
 * duplicates or not, are untouched.
 */
static void version_1_with_duplicate_missed_rows_migrates(void **state)
{
	static const struct {
		const char *schedule, *outcome;
		int64_t slot;
	} seed[] = {
		{"a", LEDGER_MISSED, T0},      {"a", LEDGER_MISSED, T0},
		{"a", LEDGER_MISSED, T0 + 1},  {"a", LEDGER_MISSED, T0},
		{"b", LEDGER_MISSED, T0},      {"b", LEDGER_MISSED, T0},
		{"a", LEDGER_LOST, T0},        {"a", LEDGER_LOST, T0},
		{"a", LEDGER_DUPLICATE, T0},   {"a", LEDGER_STALLED, T0},
	};
	struct fix f;
	char sql[512];

	fix_open(state, &f);
	enqueue(&f, "a", T0, T0, NULL);
	store_close(f.s);
	f.s = NULL;
	/* Back to version 1: the schema before this migration (and before
	 * version 3's outbox_body). */
	to_version_2(state);
	raw_sql(state, "DROP INDEX ledger_missed_once");
	raw_sql(state, tb_is_sqlite(state)
			       ? "PRAGMA user_version = 1"
			       : "UPDATE schema_version SET version = 1");
	for (size_t i = 0; i < sizeof(seed) / sizeof(seed[0]); i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO ledger (schedule, slot_ms, outcome, "
			 "finished_ms) VALUES ('%s', %lld, '%s', %zu)",
			 seed[i].schedule, (long long)seed[i].slot,
			 seed[i].outcome, i);
		raw_sql(state, sql);
	}

	f.s = tb_open(state, f.clock);
	struct ledger_filter lf = {.since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	struct ledger_row *rows;
	size_t n;
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	/* Kept: a@T0 (seed 0), a@T0+1 (2), b@T0 (4), and the four others. */
	static const int64_t kept[] = {0, 2, 4, 6, 7, 8, 9};
	assert_int_equal(n, sizeof(kept) / sizeof(kept[0]));
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rows[i].finished_ms, kept[i]);
		assert_string_equal(rows[i].outcome, seed[kept[i]].outcome);
	}
	store_ledger_rows_free(rows, n);
	/* The job survived, and the index now refuses a duplicate. */
	struct store_job j;
	assert_int_equal(store_job_find(f.s, "a", T0, &j, NULL), 0);
	struct ledger_row r = {.slot_ms = T0};
	bool written = true;
	snprintf(r.schedule, sizeof(r.schedule), "b");
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_MISSED);
	assert_int_equal(store_ledger_append_written(f.s, &r, &written, NULL), 0);
	assert_false(written);
	assert_int_equal(count_rows(&f, "b", LEDGER_MISSED), 1);
	fix_close(&f);
	/* Reopening a current database migrates nothing more. */
	fix_open(state, &f);
	assert_int_equal(count_rows(&f, NULL, NULL), 7);
	fix_close(&f);
}

/* ---- recovery hands back the jobs it made DEAD ------------------------- */

/* Two handles (two nodes) recover the same expired job one after the
 * other: the first lists it as dead, the second finds nothing. */
static void two_handles_recovering_one_job_list_it_once(void **state)
{
	struct fix f;
	struct store *b;
	struct store_job j;
	struct store_dead_list da = {0}, db = {0};
	struct sc_retry_policy once = {1, SC_BACKOFF_FIXED, MIN};
	int na = -1, nb = -1;

	fix_open(state, &f);
	b = tb_open(state, f.clock);
	int64_t id;
	assert_int_equal(store_job_enqueue(f.s, "s", T0, &once, T0, false, &id,
					   NULL, NULL),
			 0);
	/* A second job that only stalls (attempts left): not dead. */
	assert_int_equal(store_job_enqueue(f.s, "s", T0 + 1, &low, T0, false,
					   NULL, NULL, NULL),
			 0);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 6 * MIN);
	assert_int_equal(store_job_recover_dead(b, 3, &nb, &db, NULL), 0);
	assert_int_equal(store_job_recover_dead(f.s, 3, &na, &da, NULL), 0);
	assert_int_equal(nb, 2);
	assert_int_equal(na, 0);
	assert_int_equal(db.n, 1);
	assert_int_equal(da.n, 0);
	assert_int_equal(db.n_more + da.n_more, 0);
	assert_int_equal(db.v[0].job_id, id);
	assert_string_equal(db.v[0].schedule, "s");
	assert_int_equal(db.v[0].slot_ms, T0);
	assert_int_equal(db.v[0].attempt, 1);
	/* The listed message is the lost row's. */
	struct ledger_filter lf = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				   .outcome = LEDGER_LOST};
	struct ledger_row *rows;
	size_t n;
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].error_msg, db.v[0].error_msg);
	assert_non_null(strstr(db.v[0].error_msg, "attempts used up"));
	store_ledger_rows_free(rows, n);
	/* A later call empties the list it is given. */
	assert_int_equal(store_job_recover_dead(b, 3, &nb, &db, NULL), 0);
	assert_int_equal(db.n, 0);
	store_dead_list_dispose(&da);
	store_dead_list_dispose(&db);
	store_dead_list_dispose(NULL);
	store_close(b);
	fix_close(&f);
}

#define N_RECOVERERS 3
#define N_DYING 40
#define N_STALLING 60 /* with N_DYING more than one recovery batch */

struct recoverer {
	const char *url;
	struct sc_clock *clock;
	pthread_barrier_t *start;
	struct store_dead_list dead;
	int n, rc;
};

static void *recoverer_main(void *arg)
{
	struct recoverer *r = arg;
	struct store *s = NULL;

	r->rc = store_open(r->url, r->clock, &s, NULL);
	pthread_barrier_wait(r->start);
	if (!r->rc)
		r->rc = store_job_recover_dead(s, 3, &r->n, &r->dead, NULL);
	store_close(s);
	return NULL;
}

/* Several handles recover the same expired jobs at once: each job is
 * recovered exactly once (one "stalled" row, one n_stalls), and every
 * dead job is listed by exactly one of them. */
static void concurrent_recoveries_recover_each_job_once(void **state)
{
	enum { N = N_DYING + N_STALLING };
	struct fix f;
	static struct recoverer r[N_RECOVERERS];
	pthread_t t[N_RECOVERERS];
	pthread_barrier_t start;
	static int64_t slots[N];
	static struct store_job j[N];
	static unsigned char seen[N + 1];
	struct sc_retry_policy once = {1, SC_BACKOFF_FIXED, MIN};

	fix_open(state, &f);
	for (int i = 0; i < N; i++)
		slots[i] = T0 - i;
	/* ids 1..N_DYING die at their stall, the rest stall only */
	assert_int_equal(store_job_enqueue_many(f.s, "s", slots, N_DYING,
						&once, NULL),
			 0);
	assert_int_equal(store_job_enqueue_many(f.s, "t", slots + N_DYING,
						N_STALLING, &low, NULL),
			 0);
	assert_int_equal(claim(&f, "w", j, N), N);
	sc_clock_advance_ms(f.clock, 6 * MIN);
	assert_int_equal(pthread_barrier_init(&start, NULL, N_RECOVERERS), 0);
	for (int i = 0; i < N_RECOVERERS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].url = tb_url(state);
		r[i].clock = f.clock;
		r[i].start = &start;
		assert_int_equal(pthread_create(&t[i], NULL, recoverer_main,
						&r[i]),
				 0);
	}
	size_t listed = 0;
	int recovered = 0;
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < N_RECOVERERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].rc, 0);
		assert_true(r[i].dead.n <= (size_t)r[i].n);
		for (size_t k = 0; k < r[i].dead.n; k++) {
			int64_t id = r[i].dead.v[k].job_id;
			assert_true(id >= 1 && id <= N_DYING);
			assert_int_equal(seen[id], 0);
			seen[id] = 1;
		}
		listed += r[i].dead.n;
		recovered += r[i].n;
		store_dead_list_dispose(&r[i].dead);
	}
	pthread_barrier_destroy(&start);
	assert_int_equal(listed, N_DYING);
	assert_int_equal(recovered, N);
	struct store_counts c;
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.dead, N_DYING);
	assert_int_equal(c.ready_due, N_STALLING);
	assert_int_equal(count_rows(&f, NULL, LEDGER_LOST), N_DYING);
	/* One "stalled" row per job, and each job stalled once. */
	struct ledger_filter lf = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				   .outcome = LEDGER_STALLED};
	struct ledger_row *rows;
	size_t n;
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, N);
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < n; i++) {
		assert_true(rows[i].job_id >= 1 && rows[i].job_id <= N);
		assert_int_equal(seen[rows[i].job_id], 0);
		seen[rows[i].job_id] = 1;
	}
	store_ledger_rows_free(rows, n);
	struct store_job x;
	assert_int_equal(store_job_get(f.s, N, &x, NULL), 0);
	assert_int_equal(x.n_stalls, 1);
	fix_close(&f);
}

/* Recovery takes the expired jobs oldest lease first, then by id, on
 * every backend (they used to differ: lease on SQLite, id on
 * PostgreSQL): the order of their "stalled" rows shows it. */
static void recovery_takes_the_oldest_lease_first(void **state)
{
	struct fix f;
	struct store_job j;
	size_t n = 0;
	int64_t id[3];

	fix_open(state, &f);
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_job_enqueue(f.s, "s", T0 + i, &low, T0,
						   false, &id[i], NULL, NULL),
				 0);
	/* id[0] the longest lease; id[1] and id[2] end together */
	assert_int_equal(store_job_claim(f.s, "w", 10 * MIN, &j, 1, &n, NULL),
			 0);
	assert_int_equal(j.id, id[0]);
	for (int i = 1; i < 3; i++) {
		assert_int_equal(store_job_claim(f.s, "w", 5 * MIN, &j, 1, &n,
						 NULL),
				 0);
		assert_int_equal(j.id, id[i]);
	}
	sc_clock_advance_ms(f.clock, 11 * MIN);
	int rec = 0;
	assert_int_equal(store_job_recover(f.s, 3, &rec, NULL), 0);
	assert_int_equal(rec, 3);
	struct ledger_filter lf = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				   .outcome = LEDGER_STALLED};
	struct ledger_row *rows;
	int64_t row_of[3] = {0};
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n, NULL), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			if (rows[i].job_id == id[k])
				row_of[k] = rows[i].id;
	store_ledger_rows_free(rows, n);
	assert_true(row_of[1] < row_of[2]);
	assert_true(row_of[2] < row_of[0]);
	fix_close(&f);
}

/* ---- outbox, guards, markers ------------------------------------------- */

static void outbox_state_machine_and_guard(void **state)
{
	struct fix f;
	struct outbox_entry e;
	bool created;
	struct sc_err err = {0};
	int n;

	fix_open(state, &f);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "slack", &e, NULL),
			 SC_ENOENT);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_SENDING,
						NULL),
			 SC_ENOENT);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "slack", "first", &created,
					  NULL),
			 0);
	assert_true(created);
	/* The first composed message is the one that goes out. */
	assert_int_equal(store_outbox_put(f.s, "s", T0, "slack", "second", &created,
					  NULL),
			 0);
	assert_false(created);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "slack", &e, NULL), 0);
	assert_int_equal(e.state, SEND_PENDING);
	assert_string_equal(e.body, "first");
	store_outbox_entry_dispose(&e);

	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_SENDING,
						NULL),
			 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_FAILED,
						NULL),
			 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_SENDING,
						NULL),
			 0);
	/* A crash while SENDING: recovery marks it UNKNOWN. */
	assert_int_equal(store_outbox_put(f.s, "s", T0, "file", "x", NULL, NULL), 0);
	assert_int_equal(store_outbox_mark_unknown(f.s, "s", T0, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "slack", &e, NULL), 0);
	assert_int_equal(e.state, SEND_UNKNOWN);
	assert_int_equal(e.n_tries, 2);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "file", &e, NULL), 0);
	assert_int_equal(e.state, SEND_PENDING);
	store_outbox_entry_dispose(&e);

	sc_clock_advance_ms(f.clock, 42);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_SENDING,
						NULL),
			 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_SENT,
						NULL),
			 0);
	/* A guard never reopens: no state change is accepted any more. */
	static const enum send_state after[] = {SEND_PENDING, SEND_SENDING,
						SEND_SENT, SEND_FAILED,
						SEND_UNKNOWN};
	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		sc_err_clear(&err);
		assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack",
							after[i], &err),
				 SC_ESTATE);
		/* store_guard_error's words, the same on every backend. */
		assert_string_equal(err.msg, "target slack of s was already "
				    "sent (send guard); it is never sent "
				    "again");
	}
	assert_int_equal(store_outbox_mark_unknown(f.s, "s", T0, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "slack", &e, NULL), 0);
	assert_int_equal(e.state, SEND_SENT);
	assert_int_equal(e.sent_ms, T0 + 42);
	assert_int_equal(e.n_tries, 3);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "slack", SEND_NONE,
						NULL),
			 SC_EINVAL);
	fix_close(&f);
}

/* The hook of failpoint.h; a release-like build (make test-release) has
 * none, and the test that needs it skips there. */
#ifdef SURECRON_FAILPOINTS
#define SET_HOOK(fn, ud) failpoint_set_hook(fn, ud)
#else
#define SET_HOOK(fn, ud) ((void)(fn), (void)(ud))
#endif

/* What happens to the send between outbox_release's read and its state
 * change: a resend takes it (SENDING), or another operator's release
 * says it arrived (SENT). */
struct race {
	struct store *s;
	const char *target;
	enum send_state to;
	int hits;
};

static void race_hook(const char *name, void *ud)
{
	struct race *r = ud;

	if (strcmp(name, "outbox.release_before_change") != 0)
		return;
	r->hits++;
	if (r->to == SEND_SENDING)
		assert_int_equal(store_outbox_set_state(r->s, "rel", T0,
							r->target, r->to,
							NULL), 0);
	else
		assert_int_equal(store_outbox_release(r->s, "rel", T0,
						      r->target, r->to, NULL),
				 0);
}

/*
 * An operator's release changes a send only while it is held, checked in
 * the write (store_outbox_release): a change between outbox_release's
 * read and its write is never overwritten, the release fails and changes
 * nothing (a --resend keeps the "duplicate" row it wrote first: one
 * declared copy too many, never one undeclared). Closed rows (SENT,
 * ABANDONED) are refused, on both backends, in the same words.
 */
static void release_never_overwrites_a_changed_send(void **state)
{
	static const struct {
		const char *target;
		bool arrived;
		enum send_state race;
		size_t dups; /* duplicate rows the release leaves */
	} cases[] = {
		{"a", true, SEND_SENDING, 0},  /* --arrived vs a resend */
		{"b", false, SEND_SENDING, 1}, /* --resend vs a resend */
		{"c", false, SEND_SENT, 1},    /* --resend vs --arrived */
	};
	struct fix f;
	struct outbox_entry e;
	struct sc_err err = {0};
	int n = 0;

#ifndef SURECRON_FAILPOINTS
	skip();
#endif
	fix_open(state, &f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].target;
		assert_int_equal(store_outbox_put(f.s, "rel", T0, t, "m",
						  NULL, NULL), 0);
		assert_int_equal(store_outbox_set_state(f.s, "rel", T0, t,
							SEND_SENDING, NULL), 0);
	}
	assert_int_equal(store_outbox_mark_unknown(f.s, "rel", T0, &n, NULL),
			 0);
	assert_int_equal(n, 3); /* all held */
	sc_clock_advance_ms(f.clock, 7);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].target;
		struct race r = {f.s, t, cases[i].race, 0};
		size_t before = count_rows(&f, "rel", LEDGER_DUPLICATE);
		SET_HOOK(race_hook, &r);
		sc_err_clear(&err);
		int rc = outbox_release(f.s, "rel", T0, t, cases[i].arrived,
					0, &err);
		SET_HOOK(NULL, NULL);
		assert_int_equal(r.hits, 1);
		assert_int_equal(rc, SC_ESTATE);
		char want[160];
		snprintf(want, sizeof(want), "target %s of rel: the send is "
			 "no longer held (it is %s", t,
			 cases[i].race == SEND_SENT ? "sent" : "sending");
		if (strncmp(err.msg, want, strlen(want)) != 0)
			fail_msg("got \"%s\", want \"%s...\"", err.msg, want);
		/* The state the race left, as it left it. */
		assert_int_equal(store_outbox_get(f.s, "rel", T0, t, &e, NULL),
				 0);
		assert_int_equal(e.state, cases[i].race);
		assert_int_equal(e.n_tries, 1 + (cases[i].race == SEND_SENDING));
		assert_int_equal(e.sent_ms,
				 cases[i].race == SEND_SENT ? T0 + 7 : 0);
		store_outbox_entry_dispose(&e);
		assert_int_equal(count_rows(&f, "rel", LEDGER_DUPLICATE),
				 before + cases[i].dups);
	}
	/* Not held when read: refused before any declaration. */
	size_t before = count_rows(&f, "rel", LEDGER_DUPLICATE);
	sc_err_clear(&err);
	assert_int_equal(outbox_release(f.s, "rel", T0, "a", false, 0, &err),
			 SC_ESTATE);
	assert_non_null(strstr(err.msg, "no longer held (it is sending"));
	assert_int_equal(count_rows(&f, "rel", LEDGER_DUPLICATE), before);
	assert_int_equal(store_outbox_release(f.s, "rel", T0, "zz", SEND_SENT,
					      NULL), SC_ENOENT);
	assert_int_equal(store_outbox_release(f.s, "rel", T0, "a",
					      SEND_PENDING, NULL), SC_EINVAL);
	/* ABANDONED is as final as SENT: no state change reopens it. */
	struct ledger_row row = abandon_row("a");
	bool closed = false;
	snprintf(row.schedule, sizeof(row.schedule), "rel");
	assert_int_equal(store_outbox_abandon(f.s, "rel", T0, "a",
					      SEND_SENDING, &row, &closed,
					      NULL), 0);
	assert_true(closed);
	for (int st = SEND_PENDING; st <= SEND_UNKNOWN; st++) {
		sc_err_clear(&err);
		assert_int_equal(store_outbox_set_state(f.s, "rel", T0, "a",
							(enum send_state)st,
							&err), SC_ESTATE);
		assert_string_equal(err.msg, "target a of rel was abandoned "
				    "(removed from the schedule, on the "
				    "record); it is never sent again");
	}
	assert_int_equal(store_outbox_set_state(f.s, "rel", T0, "a",
						SEND_ABANDONED, NULL),
			 SC_EINVAL);
	assert_int_equal(store_outbox_get(f.s, "rel", T0, "a", &e, NULL), 0);
	assert_int_equal(e.state, SEND_ABANDONED);
	store_outbox_entry_dispose(&e);
	fix_close(&f);
}

/*
 * Issue 10: a worker paused past its lease (SIGSTOP) resumed and wrote SENT
 * and the slot marker for a slot another worker had taken over. With the
 * handle fenced to the old claim, every outbox, guard, marker and
 * duplicate-row write is refused with SC_ELEASE and changes nothing; the
 * new claim's fence lets the same writes through.
 */
static void fenced_writes_refuse_a_stale_lease(void **state)
{
	struct fix f;
	struct store_job old, cur;
	struct outbox_entry e = {0};
	struct sc_err err = {0};
	struct ledger_row dup = {0};
	bool marked = true, created = true;
	size_t n_rows = 0;
	struct ledger_row *rows = NULL;
	int n = -1;

	fix_open(state, &f);
	enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "w1", &old, 1), 1);
	store_fence_set(f.s, old.id, old.lease_token);
	assert_int_equal(store_fence_check(f.s, NULL), 0);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "a", "m", &created, NULL), 0);
	assert_true(created);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENDING,
						NULL), 0);
	store_fence_clear(f.s);

	/* The lease runs out; another worker recovers and claims the job. */
	sc_clock_advance_ms(f.clock, 6 * MIN);
	int n_rec = 0;
	assert_int_equal(store_job_recover(f.s, 3, &n_rec, NULL), 0);
	assert_int_equal(n_rec, 1);
	assert_int_equal(claim(&f, "w2", &cur, 1), 1);
	assert_int_equal(cur.id, old.id);
	assert_true(cur.lease_token != old.lease_token);

	/* The resumed worker, still fenced to its old claim. */
	store_fence_set(f.s, old.id, old.lease_token);
	assert_int_equal(store_fence_check(f.s, &err), SC_ELEASE);
	assert_non_null(strstr(err.msg, "lease"));
	sc_err_clear(&err);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENT, &err),
			 SC_ELEASE);
	assert_non_null(strstr(err.msg, "refused"));
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENDING,
						NULL), SC_ELEASE);
	assert_int_equal(store_outbox_mark_unknown(f.s, "s", T0, &n, NULL),
			 SC_ELEASE);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "b", "m", NULL, NULL),
			 SC_ELEASE);
	assert_int_equal(store_slot_mark(f.s, "s", T0, NULL), SC_ELEASE);
	snprintf(dup.schedule, sizeof(dup.schedule), "s");
	dup.slot_ms = T0;
	dup.job_id = old.id;
	snprintf(dup.outcome, sizeof(dup.outcome), "%s", LEDGER_DUPLICATE);
	assert_int_equal(store_ledger_append(f.s, &dup, NULL), SC_ELEASE);
	store_fence_clear(f.s);

	/* Nothing of it was written. */
	assert_int_equal(store_outbox_get(f.s, "s", T0, "a", &e, NULL), 0);
	assert_int_equal(e.state, SEND_SENDING);
	assert_int_equal(e.n_tries, 1);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "b", &e, NULL), SC_ENOENT);
	assert_int_equal(store_slot_is_marked(f.s, "s", T0, &marked, NULL), 0);
	assert_false(marked);
	struct ledger_filter lf = {.outcome = LEDGER_DUPLICATE,
				   .since_ms = INT64_MIN,
				   .until_ms = INT64_MAX};
	assert_int_equal(store_ledger_query(f.s, &lf, &rows, &n_rows, NULL), 0);
	assert_int_equal(n_rows, 0);
	store_ledger_rows_free(rows, n_rows);

	/* The new owner's fence lets the same writes through. */
	store_fence_set(f.s, cur.id, cur.lease_token);
	assert_int_equal(store_outbox_mark_unknown(f.s, "s", T0, &n, NULL), 0);
	assert_int_equal(n, 1);
	/* Nothing SENDING any more: zero rows, and still no refusal. */
	assert_int_equal(store_outbox_mark_unknown(f.s, "s", T0, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_ledger_append(f.s, &dup, NULL), 0);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "b", "m", &created, NULL), 0);
	assert_true(created);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "b", "m", &created, NULL), 0);
	assert_false(created);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENDING,
						NULL), 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_SENT, NULL),
			 0);
	/* A guard still never reopens, fenced or not. */
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "a", SEND_FAILED, NULL),
			 SC_ESTATE);
	assert_int_equal(store_slot_mark(f.s, "s", T0, NULL), 0);
	assert_int_equal(store_slot_mark(f.s, "s", T0, NULL), 0); /* idempotent */
	store_fence_clear(f.s);

	/* Once the job is finished, its own fence refuses too. */
	assert_int_equal(store_job_finish(f.s, cur.id, cur.lease_token,
					  JOB_DONE, 0, NULL, NULL), 0);
	store_fence_set(f.s, cur.id, cur.lease_token);
	assert_int_equal(store_slot_mark(f.s, "s", T0 + 1, NULL), SC_ELEASE);
	store_fence_clear(f.s);
	assert_int_equal(store_slot_mark(f.s, "s", T0 + 1, NULL), 0);
	fix_close(&f);
}

static void slot_markers_are_idempotent(void **state)
{
	struct fix f;
	bool marked = true;

	fix_open(state, &f);
	assert_int_equal(store_slot_is_marked(f.s, "s", T0, &marked, NULL), 0);
	assert_false(marked);
	assert_int_equal(store_slot_mark(f.s, "s", T0, NULL), 0);
	assert_int_equal(store_slot_mark(f.s, "s", T0, NULL), 0);
	assert_int_equal(store_slot_is_marked(f.s, "s", T0, &marked, NULL), 0);
	assert_true(marked);
	assert_int_equal(store_slot_is_marked(f.s, "s", T0 + 1, &marked, NULL), 0);
	assert_false(marked);
	assert_int_equal(store_slot_is_marked(f.s, "t", T0, &marked, NULL), 0);
	assert_false(marked);
	fix_close(&f);
}

static bool is_marked(struct fix *f, const char *sched, int64_t slot)
{
	bool m = true;

	assert_int_equal(store_slot_is_marked(f->s, sched, slot, &m, NULL), 0);
	return m;
}

/* store_job_complete_marked: the job DONE with its success row, and its
 * slot marked, together; a stale token writes neither; a marker already
 * there is no error. */
static void complete_marked_writes_both_or_neither(void **state)
{
	struct fix f;
	struct store_job j, again, now;
	struct sc_err err = {0};
	int n = 0;

	fix_open(state, &f);
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "slow", &j, 1), 1);
	sc_clock_advance_ms(f.clock, 6 * MIN);
	assert_int_equal(store_job_recover(f.s, 3, &n, NULL), 0);
	assert_int_equal(claim(&f, "fast", &again, 1), 1);

	/* The paused worker's claim: refused, nothing written. */
	assert_int_equal(store_job_complete_marked(f.s, id, j.lease_token, NULL,
						   &err),
			 SC_ELEASE);
	assert_false(is_marked(&f, "s", T0));
	assert_int_equal(count_rows(&f, "s", LEDGER_SUCCESS), 0);
	assert_int_equal(store_job_get(f.s, id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_ACTIVE);

	/* The current claim: both. */
	struct ledger_row row = {.outcome = LEDGER_SUCCESS,
				 .details_json = "{\"sent\":1}"};
	assert_int_equal(store_job_complete_marked(f.s, id, again.lease_token,
						   &row, NULL),
			 0);
	assert_true(is_marked(&f, "s", T0));
	assert_int_equal(count_rows(&f, "s", LEDGER_SUCCESS), 1);
	assert_int_equal(store_job_get(f.s, id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_DONE);
	assert_int_equal(store_job_complete_marked(f.s, id, again.lease_token,
						   NULL, NULL),
			 SC_ELEASE);
	assert_int_equal(count_rows(&f, "s", LEDGER_SUCCESS), 1);

	/* Another slot whose marker is there already (an earlier run of
	 * this store marked it): completes, one marker. */
	int64_t id2 = enqueue(&f, "s", T0 + MIN, sc_clock_now_ms(f.clock),
			      NULL);
	assert_int_equal(store_slot_mark(f.s, "s", T0 + MIN, NULL), 0);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	assert_int_equal(j.id, id2);
	assert_int_equal(store_job_complete_marked(f.s, id2, j.lease_token, NULL,
						   NULL),
			 0);
	assert_true(is_marked(&f, "s", T0 + MIN));
	assert_false(is_marked(&f, "s", T0 + 2 * MIN));
	assert_int_equal(count_rows(&f, "s", LEDGER_SUCCESS), 2);
	fix_close(&f);
}

/* A completion with its marker that fails at the commit keeps neither:
 * the job stays ACTIVE under its claim, which can finish it again. */
static void complete_marked_failed_at_commit_keeps_neither(void **state)
{
	TU_NEED_TEST_SEAMS(); /* the store.commit:err failpoint */
	struct fix f;
	struct store_job j, now;
	struct sc_err err = {0};

	fix_open(state, &f);
	int64_t id = enqueue(&f, "s", T0, T0, NULL);
	assert_int_equal(claim(&f, "w", &j, 1), 1);
	setenv("SURECRON_FAILPOINTS", "store.commit:err", 1);
	int rc = store_job_complete_marked(f.s, id, j.lease_token, NULL, &err);
	unsetenv("SURECRON_FAILPOINTS");
	assert_int_equal(rc, SC_EIO);
	assert_false(is_marked(&f, "s", T0));
	assert_int_equal(count_rows(&f, "s", NULL), 0);
	assert_int_equal(store_job_get(f.s, id, &now, NULL), 0);
	assert_int_equal(now.state, JOB_ACTIVE);
	assert_int_equal(store_job_complete_marked(f.s, id, j.lease_token, NULL,
						   NULL),
			 0);
	assert_true(is_marked(&f, "s", T0));
	assert_int_equal(count_rows(&f, "s", LEDGER_SUCCESS), 1);
	fix_close(&f);
}

/* store_slot_look: the marker and the first staged target of a list, in
 * the list's order, as the two reads it replaces would answer. */
static void look(struct fix *f, int64_t slot, const char *const *v, size_t n,
		 bool *marked, int *staged, char **body)
{
	struct outbox_entry e;
	struct sc_err err = {0};

	assert_int_equal(store_slot_look(f->s, "s", slot, v, n, marked, staged,
					 &e, &err), 0);
	if (*staged < 0)
		assert_null(e.body);
	*body = e.body;
}

static void slot_look_reads_the_marker_and_the_first_staged_target(void **state)
{
	static const char *const abc[] = {"a", "b\"q\\", "c"};
	static const char *const cb[] = {"c", "b\"q\\"};
	static const char *const a[] = {"a"};
	struct outbox_entry e;
	struct sc_err err = {0};
	struct fix f;
	bool marked = true;
	int staged = 7;
	char *body = NULL;

	fix_open(state, &f);
	look(&f, T0, abc, 3, &marked, &staged, &body);
	assert_false(marked);
	assert_int_equal(staged, -1);
	look(&f, T0, NULL, 0, &marked, &staged, &body);
	assert_int_equal(staged, -1);

	/* Rows for the second and third targets (a crash cut the staging
	 * short, or "a" was added to the config since). */
	assert_int_equal(store_outbox_put(f.s, "s", T0, abc[1], "m1", NULL,
					  NULL), 0);
	assert_int_equal(store_outbox_put(f.s, "s", T0, "c", "m2", NULL, NULL),
			 0);
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "c",
						SEND_SENDING, NULL), 0);
	look(&f, T0, abc, 3, &marked, &staged, &body);
	assert_false(marked);
	assert_int_equal(staged, 1);
	assert_string_equal(body, "m1");
	free(body);
	look(&f, T0, cb, 2, &marked, &staged, &body);
	assert_int_equal(staged, 0);
	assert_string_equal(body, "m2");
	free(body);
	assert_int_equal(store_slot_look(f.s, "s", T0, cb, 2, &marked, &staged,
					 &e, NULL), 0);
	assert_int_equal(e.state, SEND_SENDING);
	assert_int_equal(e.n_tries, 1);
	store_outbox_entry_dispose(&e);
	look(&f, T0, a, 1, &marked, &staged, &body);
	assert_int_equal(staged, -1);
	look(&f, T0 + 1, abc, 3, &marked, &staged, &body);
	assert_int_equal(staged, -1);

	/* A staged row whose body is gone (prune takes only a guard's) is
	 * corrupt, named, on both reads; a guard reads without one. */
	raw_sql(state, "DELETE FROM outbox_body WHERE target = 'c'");
	assert_int_equal(store_outbox_get(f.s, "s", T0, "c", &e, &err),
			 SC_ECORRUPT);
	assert_non_null(strstr(err.msg, "outbox row of target c has no "
				"message body"));
	/* ... in the store it names (a PostgreSQL URL without secrets). */
	assert_non_null(strstr(err.msg, tb_is_sqlite(state) ? tb_dir(state)
							    : "postgres"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(store_slot_look(f.s, "s", T0, cb, 2, &marked,
					 &staged, &e, &err), SC_ECORRUPT);
	assert_non_null(strstr(err.msg, "outbox row of target c has no "
				"message body"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(store_outbox_set_state(f.s, "s", T0, "c", SEND_SENT,
						NULL), 0);
	assert_int_equal(store_outbox_get(f.s, "s", T0, "c", &e, NULL), 0);
	assert_int_equal(e.state, SEND_SENT);
	assert_int_equal(e.n_tries, 1);
	assert_null(e.body);

	/* A marked slot is done, whatever its outbox holds. */
	assert_int_equal(store_slot_mark(f.s, "s", T0, NULL), 0);
	look(&f, T0, abc, 3, &marked, &staged, &body);
	assert_true(marked);
	assert_int_equal(staged, -1);
	look(&f, T0 + 1, a, 1, &marked, &staged, &body);
	assert_false(marked);

	/* Bad arguments: refused, named. */
	assert_int_equal(store_slot_look(f.s, "s", T0, NULL, 1, &marked,
					 &staged, &e, &err), SC_EINVAL);
	static const char *const empty[] = {"a", ""};
	memset(&err, 0, sizeof(err));
	assert_int_equal(store_slot_look(f.s, "s", T0, empty, 2, &marked,
					 &staged, &e, &err), SC_EINVAL);
	assert_non_null(strstr(err.msg, "target name"));
	fix_close(&f);
}

static void sched_state_never_moves_backwards(void **state)
{
	struct fix f;
	int64_t last;

	fix_open(state, &f);
	assert_int_equal(store_sched_last_get(f.s, "s", &last, NULL), SC_ENOENT);
	assert_int_equal(store_sched_last_set(f.s, "s", T0 + 10, NULL), 0);
	assert_int_equal(store_sched_last_set(f.s, "s", T0 + 5, NULL), 0);
	assert_int_equal(store_sched_last_get(f.s, "s", &last, NULL), 0);
	assert_int_equal(last, T0 + 10);
	assert_int_equal(store_sched_last_set(f.s, "s", T0 + 20, NULL), 0);
	assert_int_equal(store_sched_last_get(f.s, "s", &last, NULL), 0);
	assert_int_equal(last, T0 + 20);
	assert_int_equal(store_sched_last_get(f.s, "other", &last, NULL), SC_ENOENT);
	fix_close(&f);
}

static void token_cache_round_trips(void **state)
{
	struct fix f;
	char *tok = NULL;
	int64_t exp;

	fix_open(state, &f);
	assert_int_equal(store_token_get(f.s, "llm", &tok, &exp, NULL), SC_ENOENT);
	assert_int_equal(store_token_put(f.s, "llm", "tok-1", T0 + 3600000, NULL), 0);
	assert_int_equal(store_token_put(f.s, "llm", "tok-2", T0 + 7200000, NULL), 0);
	assert_int_equal(store_token_put(f.s, "other", "o", T0, NULL), 0);
	assert_int_equal(store_token_get(f.s, "llm", &tok, &exp, NULL), 0);
	assert_string_equal(tok, "tok-2");
	assert_int_equal(exp, T0 + 7200000);
	sc_free(tok);
	assert_int_equal(store_token_drop(f.s, "llm", NULL), 0);
	assert_int_equal(store_token_drop(f.s, "llm", NULL), 0);
	assert_int_equal(store_token_get(f.s, "llm", &tok, &exp, NULL), SC_ENOENT);
	assert_int_equal(store_token_get(f.s, "other", &tok, &exp, NULL), 0);
	sc_free(tok);
	fix_close(&f);
}

/* ---- durability: which commits fsync --------------------------------- */

/*
 * A pass-through SQLite VFS, installed as the default, that counts xSync
 * calls: it shows which store operations pay for an fsync (FULL) and
 * which do not (NORMAL), so the durability split cannot silently change.
 */
struct shim_file {
	sqlite3_file base;
	sqlite3_file *real;
};

static sqlite3_vfs *real_vfs;
static sqlite3_vfs shim_vfs;
static sqlite3_io_methods shim_io;
static int n_syncs;

#define REAL(f) (((struct shim_file *)(f))->real)

static int sh_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int sh_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int sh_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int sh_truncate(sqlite3_file *f, sqlite3_int64 n)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int sh_sync(sqlite3_file *f, int flags)
{
	n_syncs++;
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int sh_size(sqlite3_file *f, sqlite3_int64 *n)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int sh_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int sh_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int sh_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int sh_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int sh_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int sh_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int sh_shmmap(sqlite3_file *f, int i, int sz, int ext,
		     void volatile **p)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, ext, p);
}
static int sh_shmlock(sqlite3_file *f, int off, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void sh_shmbarrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int sh_shmunmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int sh_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p)
{
	return REAL(f)->pMethods->xFetch(REAL(f), o, n, p);
}
static int sh_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static int sh_open(sqlite3_vfs *v, const char *name, sqlite3_file *f,
		   int flags, int *out)
{
	struct shim_file *sf = (struct shim_file *)f;
	int rc;

	(void)v;
	sf->real = (sqlite3_file *)(sf + 1);
	rc = real_vfs->xOpen(real_vfs, name, sf->real, flags, out);
	sf->base.pMethods = rc == SQLITE_OK && sf->real->pMethods ? &shim_io
								  : NULL;
	return rc;
}

static void shim_install(void)
{
	static const sqlite3_io_methods io = {
		3,           sh_close,    sh_read,       sh_write,
		sh_truncate, sh_sync,     sh_size,       sh_lock,
		sh_unlock,   sh_reserved, sh_fcntl,      sh_sector,
		sh_devchar,  sh_shmmap,   sh_shmlock,    sh_shmbarrier,
		sh_shmunmap, sh_fetch,    sh_unfetch,
	};
	if (!real_vfs) {
		real_vfs = sqlite3_vfs_find(NULL);
		shim_vfs = *real_vfs;
		shim_vfs.zName = "sync-counter";
		shim_vfs.szOsFile =
			(int)sizeof(struct shim_file) + real_vfs->szOsFile;
		shim_vfs.xOpen = sh_open;
		shim_io = io;
	}
	sqlite3_vfs_register(&shim_vfs, 1);
}

static void shim_remove(void)
{
	sqlite3_vfs_unregister(&shim_vfs);
	sqlite3_vfs_register(real_vfs, 1);
}

/*
 * PostgreSQL's side of the durability test: a deferred constraint trigger
 * on every table of the test's schema runs at COMMIT and notes the
 * synchronous_commit in force right then (the server's default, "on", for
 * a durable commit; "off" for the rest). Returns a connection to read the
 * notes with (sync_seen).
 */
static PGconn *sync_notes_install(void **state)
{
	struct tb *b = *state;
	char q[256];

	raw_sql(state,
		"CREATE TABLE sync_log (setting text); "
		"CREATE FUNCTION note_sync() RETURNS trigger LANGUAGE plpgsql "
		"AS $$ BEGIN INSERT INTO sync_log VALUES "
		"(current_setting('synchronous_commit')); RETURN NULL; END $$; "
		"DO $$ DECLARE t text; BEGIN FOR t IN SELECT tablename FROM "
		"pg_tables WHERE schemaname = current_schema() AND tablename "
		"<> 'sync_log' LOOP EXECUTE format('CREATE CONSTRAINT TRIGGER "
		"%I AFTER INSERT OR UPDATE OR DELETE ON %I DEFERRABLE "
		"INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION note_sync()',"
		" 'note_' || t, t); END LOOP; END $$");
	PGconn *c = PQconnectdb(b->base);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	snprintf(q, sizeof(q), "SET search_path TO %s", b->schema);
	PQclear(PQexec(c, q));
	return c;
}

/* The synchronous_commit settings noted since the last call ("on",
 * "off", "off,on"; "none": no commit wrote a row), then forgets them. */
static void sync_seen(PGconn *c, char *out, size_t n)
{
	PGresult *r = PQexec(c, "SELECT coalesce(string_agg(DISTINCT setting,"
			     " ',' ORDER BY setting), 'none') FROM sync_log");

	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	snprintf(out, n, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	PQclear(PQexec(c, "TRUNCATE sync_log"));
}

/*
 * Issue 46: each commit is as durable as the durability table
 * (store_durable.c) says, whatever the backend would choose. On SQLite a
 * commit of an ALWAYS kind makes a sync (its group sync, or SQLite's own)
 * and no other does; on PostgreSQL a commit of an ALWAYS or SERVER kind
 * commits with the server's synchronous_commit ("on") and every other
 * with it off. With the table ignored (failpoint
 * store.durability_off:err) no commit is durable, and every operation
 * still works.
 */
static void durable_commits_sync_as_the_table_says(void **state)
{
	enum { N_STEPS = 27 };
	const char *op[N_STEPS];
	enum store_commit kind[N_STEPS];
	int counts[N_STEPS];
	char seen[N_STEPS][16];
	struct fix f;
	struct store_job j;
	struct store_pause pz = {.from_ms = T0, .until_ms = T0 + 60 * MIN};
	struct ledger_row lost = {0}, ab = {0}, missed = {0};
	struct store_alert al = {.n_slots = 1, .generation = 1};
	bool sqlite = tb_is_sqlite(state), done;
	PGconn *notes = NULL;
	size_t n;
	int k, before, rec;

	TU_NEED_TEST_SEAMS(); /* the store.durability_off:err failpoint */
	snprintf(pz.schedule, sizeof(pz.schedule), "s");
	snprintf(lost.schedule, sizeof(lost.schedule), "s");
	snprintf(lost.outcome, sizeof(lost.outcome), LEDGER_LOST);
	snprintf(ab.schedule, sizeof(ab.schedule), "s");
	snprintf(ab.outcome, sizeof(ab.outcome), LEDGER_ABANDONED);
	snprintf(missed.schedule, sizeof(missed.schedule), "s");
	snprintf(missed.outcome, sizeof(missed.outcome), LEDGER_MISSED);
	snprintf(al.schedule, sizeof(al.schedule), "s");
	snprintf(al.reason, sizeof(al.reason), ALERT_REASON_LOST);
	if (sqlite)
		shim_install();
	fix_open(state, &f);
	if (!sqlite)
		notes = sync_notes_install(state);
	for (int off = 0; off < 2; off++) {
		/* The second pass on the same handle, with slots of its own
		 * (all due: run_at T0). */
		int64_t t = T0 + off * 24 * 60 * MIN;
		/* Slots of a week later: never due in this test. */
		int64_t later[2] = {t + 7 * 24 * 60 * MIN,
				    t + 7 * 24 * 60 * MIN + MIN};

		lost.slot_ms = ab.slot_ms = al.slot_ms = al.last_slot_ms = t;
		missed.slot_ms = t;
		if (off)
			setenv("SURECRON_FAILPOINTS",
			       "store.durability_off:err", 1);
		k = 0;
	/* SQLite's own syncs (the VFS) and the group syncs made after a
	 * durable commit (store_sqlite.c), which do not go through it. */
#define SYNCS()                                                             \
	(sqlite ? n_syncs + (int)store_sqlite_syncs(tb_path(state)) : 0)
#define STEP(name, c, call)                                                 \
	do {                                                                \
		before = SYNCS();                                           \
		if (notes) /* forgets the commits before the step's */      \
			sync_seen(notes, seen[k], sizeof(seen[k]));         \
		assert_int_equal((call), 0);                                \
		op[k] = name;                                               \
		kind[k] = c;                                                \
		counts[k] = SYNCS() - before;                               \
		if (notes)                                                  \
			sync_seen(notes, seen[k], sizeof(seen[k]));         \
		k++;                                                        \
	} while (0)
		STEP("enqueue", STORE_COMMIT_ENQUEUE,
		     store_job_enqueue(f.s, "s", t, &low, T0, false, NULL,
				       NULL, NULL));
		/* A manual enqueue (surecron trigger) has told an operator
		 * "queued" when it returns; a batch is one enqueue too. */
		STEP("manual enqueue", STORE_COMMIT_ENQUEUE,
		     store_job_enqueue(f.s, "m", later[0], &low, later[0],
				       true, NULL, NULL, NULL));
		STEP("enqueue many", STORE_COMMIT_ENQUEUE,
		     store_job_enqueue_many(f.s, "n", later, 2, &low, NULL));
		STEP("claim", STORE_COMMIT_CLAIM,
		     store_job_claim(f.s, "w", 5 * MIN, &j, 1, &n, NULL));
		STEP("heartbeat", STORE_COMMIT_HEARTBEAT,
		     store_job_heartbeat(f.s, j.id, j.lease_token, 5 * MIN,
					 NULL));
		STEP("complete", STORE_COMMIT_FINISH,
		     store_job_finish(f.s, j.id, j.lease_token, JOB_DONE, 0,
				      NULL, NULL));
		enqueue(&f, "t", t, T0, NULL);
		assert_int_equal(claim(&f, "w", &j, 1), 1);
		STEP("retry", STORE_COMMIT_FINISH,
		     store_job_finish(f.s, j.id, j.lease_token, JOB_READY, T0,
				      NULL, NULL));
		STEP("outbox put", STORE_COMMIT_STAGE,
		     store_outbox_put(f.s, "s", t, "slack", "m", NULL, NULL));
		/* issue 10: SENDING lost to a power cut would make the
		 * next attempt send a second copy without declaring it. */
		STEP("sending", STORE_COMMIT_SENDING,
		     store_outbox_set_state(f.s, "s", t, "slack",
					    SEND_SENDING, NULL));
		STEP("send failed", STORE_COMMIT_SEND_FAILED,
		     store_outbox_set_state(f.s, "s", t, "slack",
					    SEND_FAILED, NULL));
		assert_int_equal(store_outbox_set_state(f.s, "s", t, "slack",
							SEND_SENDING, NULL),
				 0);
		STEP("unknown", STORE_COMMIT_SEND_UNKNOWN,
		     store_outbox_mark_unknown(f.s, "s", t, &rec, NULL));
		assert_int_equal(rec, 1);
		assert_int_equal(store_outbox_set_state(f.s, "s", t, "slack",
							SEND_SENDING, NULL),
				 0);
		STEP("sent (guard)", STORE_COMMIT_SENT,
		     store_outbox_set_state(f.s, "s", t, "slack", SEND_SENT,
					    NULL));
		STEP("slot marker", STORE_COMMIT_SLOT_MARK,
		     store_slot_mark(f.s, "s", t, NULL));
		assert_int_equal(claim(&f, "w", &j, 1), 1);
		STEP("dead (lost)", STORE_COMMIT_FINISH_DEAD,
		     store_job_finish(f.s, j.id, j.lease_token, JOB_DEAD, 0,
				      NULL, NULL));
		STEP("revive", STORE_COMMIT_REVIVE,
		     store_job_revive(f.s, j.id, 0, NULL));
		assert_int_equal(claim(&f, "w", &j, 1), 1);
		STEP("release", STORE_COMMIT_RELEASE,
		     store_job_release(f.s, j.id, j.lease_token, NULL));
		/* A lease of 1 ms, expired 1 ms later: recovered as
		 * stalled, then done. */
		assert_int_equal(store_job_claim(f.s, "w", 1, &j, 1, &n, NULL),
				 0);
		assert_int_equal(n, 1);
		sc_clock_advance_ms(f.clock, 2);
		STEP("recover", STORE_COMMIT_RECOVER,
		     store_job_recover(f.s, 3, &rec, NULL));
		assert_int_equal(rec, 1);
		assert_int_equal(claim(&f, "w", &j, 1), 1);
		assert_int_equal(store_job_finish(f.s, j.id, j.lease_token,
						  JOB_DONE, 0, NULL, NULL),
				 0);
		STEP("lost row", STORE_COMMIT_LEDGER_LOST,
		     store_ledger_append(f.s, &lost, NULL));
		STEP("missed row", STORE_COMMIT_LEDGER,
		     store_ledger_append(f.s, &missed, NULL));
		/* issue 46: a pause was NORMAL on SQLite, durable on
		 * PostgreSQL. */
		STEP("pause", STORE_COMMIT_PAUSE,
		     store_pause_set(f.s, &pz, NULL));
		STEP("pause end", STORE_COMMIT_PAUSE,
		     store_pause_end(f.s, "s", T0 + MIN, &done, NULL));
		assert_int_equal(store_outbox_put(f.s, "s", t, "mail", "m",
						  NULL, NULL), 0);
		STEP("abandon", STORE_COMMIT_ABANDON,
		     store_outbox_abandon(f.s, "s", t, "mail", SEND_PENDING,
					  &ab, &done, NULL));
		STEP("alert raise", STORE_COMMIT_ALERT_RAISE,
		     store_alert_raise(f.s, &al, &done, NULL, NULL));
		STEP("sched state", STORE_COMMIT_SCHED_STATE,
		     store_sched_last_set(f.s, "s", t, NULL));
		STEP("token", STORE_COMMIT_TOKEN,
		     store_token_put(f.s, "p", "tok", t, NULL));
		/* Completions ready together: the table's COMPLETE_MANY
		 * row, on PostgreSQL too (one pipeline of finishes). */
		struct store_job two[2];
		int rcs[2] = {-1, -1};
		enqueue(&f, "u1", t, T0, NULL);
		enqueue(&f, "u2", t, T0, NULL);
		assert_int_equal(store_job_claim(f.s, "w", 5 * MIN, two, 2, &n,
						 NULL),
				 0);
		assert_int_equal(n, 2);
		STEP("complete many", STORE_COMMIT_COMPLETE_MANY,
		     store_job_complete_many(f.s, two, 2, NULL, rcs, NULL));
		assert_int_equal(rcs[0] | rcs[1], 0);
		/* A composed operation (store_ops.tx) takes its class. */
		int64_t aid = 0;
		al.generation = 2;
		assert_int_equal(store_alert_raise(f.s, &al, &done, &aid, NULL),
				 0);
		STEP("alert close", STORE_COMMIT_ALERT_CLOSE,
		     store_alert_close(f.s, aid, ALERT_ACKED, "ok", NULL, NULL,
				       &done, NULL));
		al.generation = 1;
#undef STEP
#undef SYNCS
		unsetenv("SURECRON_FAILPOINTS");
		assert_int_equal(k, N_STEPS);
		for (int i = 0; i < k; i++) {
			enum store_dur d = store_durability[kind[i]].dur;
			bool want = !off && (sqlite ? d == STORE_DUR_ALWAYS
						    : d != STORE_DUR_NONE);

			if (sqlite && (counts[i] > 0) != want)
				fail_msg("%s%s: %d syncs, expected %s", op[i],
					 off ? " (table ignored)" : "",
					 counts[i], want ? "some" : "none");
			if (!sqlite && strcmp(seen[i], want ? "on" : "off"))
				fail_msg("%s%s: synchronous_commit at commit: "
					 "%s, expected %s", op[i],
					 off ? " (table ignored)" : "",
					 seen[i], want ? "on" : "off");
		}
	}
	PQfinish(notes);
	fix_close(&f);
	if (sqlite)
		shim_remove();
}

/* The columns of a list ("a, b, c": 3). */
static size_t n_cols(const char *list)
{
	size_t n = 1;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

/* A parameter list as text, for the binder's contract. */
static void p_null(void *dst, int p)
{
	char *b = dst;

	snprintf(b + strlen(b), 64, "%d:NULL ", p);
}

static void p_i64(void *dst, int p, int64_t v)
{
	char *b = dst;

	snprintf(b + strlen(b), 64, "%d:%lld ", p, (long long)v);
}

static void p_truth(void *dst, int p, bool v)
{
	char *b = dst;

	snprintf(b + strlen(b), 64, "%d:%s ", p, v ? "t" : "f");
}

static void p_text(void *dst, int p, const char *v)
{
	char *b = dst;

	snprintf(b + strlen(b), 64, "%d:'%s' ", p, v);
}

/* Each field table has a member for each column of the list the
 * backends select it by (store.h, "rows as fields"), and the binder
 * writes a struct, or NULL for none, as its kinds say. */
static void field_tables_match_the_column_lists(void **state)
{
	static const struct store_param_ops ops = {p_null, p_i64, p_truth,
						   p_text};
	struct store_node n = {.id = "n1", .pid = 7, .has_clock_offset = false};
	char b[1024] = "";

	(void)state;
	assert_int_equal(store_job_fields.n, n_cols(STORE_JOB_COLS));
	assert_int_equal(store_job_fields.n, n_cols(STORE_JOB_COLS_J));
	assert_int_equal(store_alert_fields.n, n_cols(STORE_ALERT_COLS));
	assert_int_equal(store_pause_fields.n, n_cols(STORE_PAUSE_COLS));
	assert_int_equal(store_stall_fields.n, n_cols(STORE_STALL_COLS));
	assert_int_equal(store_ledger_fields.n,
			 n_cols("id, " STORE_LEDGER_COLS));
	assert_int_equal(store_send_fields.n,
			 n_cols(STORE_SEND_COLS("s.state", "NULL")));
	store_fields_bind(&ops, b, 1, store_node_fields.f, 3, &n);
	assert_string_equal(b, "1:'n1' 2:'' 3:7 ");
	b[0] = '\0';
	n.has_clock_offset = true;
	n.clock_offset_ms = -5;
	store_fields_bind(&ops, b, 7, store_node_fields.f + 6, 2, &n);
	assert_string_equal(b, "7:0 8:-5 ");
	b[0] = '\0';
	store_fields_bind(&ops, b, 1, store_ledger_fields.f + 7, 3, NULL);
	assert_string_equal(b, "1:NULL 2:NULL 3:NULL ");
	b[0] = '\0';
	store_fields_bind(&ops, b, 1, store_pause_fields.f + 4, 2, NULL);
	assert_string_equal(b, "1:NULL 2:f ");
	b[0] = '\0';
	store_fields_bind(&ops, b, 1, store_job_fields.f, 1, NULL);
	assert_string_equal(b, "1:0 ");
}

/* The table has one row per commit kind, in order, each with its why. */
static void durability_table_is_whole(void **state)
{
	(void)state;
	for (int k = 0; k < STORE_COMMIT_N; k++) {
		assert_int_equal(store_durability[k].commit, k);
		assert_non_null(store_durability[k].name);
		assert_non_null(store_durability[k].why);
		assert_true(strlen(store_durability[k].why) > 10);
		assert_true(store_durability[k].dur <= STORE_DUR_ALWAYS);
	}
	/* The kinds that depend on the write's data. */
	assert_int_equal(store_commit_of_finish(JOB_DEAD, false),
			 STORE_COMMIT_FINISH_DEAD);
	assert_int_equal(store_commit_of_finish(JOB_DONE, true),
			 STORE_COMMIT_FINISH_MARKED);
	assert_int_equal(store_commit_of_finish(JOB_READY, false),
			 STORE_COMMIT_FINISH);
	assert_int_equal(store_commit_of_send(SEND_SENDING),
			 STORE_COMMIT_SENDING);
	assert_int_equal(store_commit_of_send(SEND_FAILED),
			 STORE_COMMIT_SEND_FAILED);
	assert_int_equal(store_commit_of_alert_send(SEND_ABANDONED),
			 STORE_COMMIT_ALERT_SENT);
	assert_int_equal(store_commit_of_alert_send(SEND_UNKNOWN),
			 STORE_COMMIT_ALERT_RETRY);
}

/* ---- disk space (issue 10) -------------------------------------------- */

#define BODY_40K (40 * 1024)

static char *big_body(char fill)
{
	char *b = malloc(BODY_40K + 1);

	assert_non_null(b);
	memset(b, fill, BODY_40K);
	b[BODY_40K] = '\0';
	return b;
}

static off_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? sb.st_size : 0;
}

/*
 * Each outbox state change rewrote the row with its body: ~465 KB of WAL
 * per 40 KB message to two targets. The body now lives apart, written once
 * at stage time, so a state change writes a page or two of WAL.
 */
static void outbox_state_change_writes_no_body(void **state)
{
	struct fix f;
	char wal[1100];
	char *body;
	static const char *const tg[] = {"a", "b"};
	int n_changes = 0;

	if (!tb_is_sqlite(state))
		skip();
	body = big_body('m');
	fix_open(state, &f);
	snprintf(wal, sizeof(wal), "%s-wal", tb_path(state));
	for (int t = 0; t < 2; t++)
		assert_int_equal(store_outbox_put(f.s, "s", T0, tg[t], body, NULL,
						  NULL), 0);
	off_t before = file_size(wal);
	for (int round = 0; round < 10; round++)
		for (int t = 0; t < 2; t++) {
			assert_int_equal(store_outbox_set_state(f.s, "s", T0, tg[t],
							  SEND_SENDING, NULL),
					 0);
			assert_int_equal(store_outbox_set_state(f.s, "s", T0, tg[t],
							  SEND_FAILED, NULL),
					 0);
			n_changes += 2;
		}
	off_t per = (file_size(wal) - before) / n_changes;
	fprintf(stderr, "store: WAL bytes per outbox state change: %lld "
		"(40 KB message, 2 targets; staging wrote %lld)\n",
		(long long)per, (long long)before);
	/* At most two pages with their frame headers (one is enough: the
	 * state row's page); with the body in the row it was over three,
	 * and the body alone is ten. */
	assert_true(per <= 2 * (4096 + 24));
	struct outbox_entry e = {0};
	assert_int_equal(store_outbox_get(f.s, "s", T0, "b", &e, NULL), 0);
	assert_int_equal(e.state, SEND_FAILED);
	assert_int_equal(e.n_tries, 10);
	assert_string_equal(e.body, body);
	store_outbox_entry_dispose(&e);
	fix_close(&f);
	free(body);
}

/* Runs op until it succeeds; it may fail once with SC_ENOSPC first (the
 * store then gives the WAL's space back), never twice in a row. */
#define ONCE_FULL_AT_MOST(op, n_full)                                      \
	do {                                                               \
		struct sc_err e_ = {0};                                    \
		int rc_ = (op);                                            \
		if (rc_ == SC_ENOSPC) {                                    \
			(n_full)++;                                        \
			sc_err_clear(&e_);                                 \
			rc_ = (op);                                        \
		}                                                          \
		if (rc_ != 0)                                              \
			fail_msg("%s: %s after space was freed", #op,      \
				 sc_strerror(rc_));                        \
	} while (0)

/*
 * A store on a 4 MiB tmpfs that fills up: writes fail with SC_ENOSPC and a
 * message that says so; once some space is freed the store works again
 * (no wedge): the WAL is checkpointed and truncated after the failure, and
 * state changes no longer copy bodies. Needs root for mount(2); skips
 * without it (CI runs as root).
 */
static void full_volume_recovers_after_space_is_freed(void **state)
{
	char mnt[600], path[700], filler[700];
	struct sc_clock *clock;
	struct store *s = NULL;
	struct sc_err err = {0};
	char *body;
	int n_full = 0, rc = 0;

	if (!tb_is_sqlite(state))
		skip();
	snprintf(mnt, sizeof(mnt), "%s/small", tb_dir(state));
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=4m,mode=0700") != 0) {
		rmdir(mnt);
		skip(); /* not root, or no mount namespace rights */
	}
	snprintf(path, sizeof(path), "sqlite:%s/s.db", mnt);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	clock = sc_clock_virtual_new(T0);
	body = big_body('q');
	assert_int_equal(store_open(path, clock, &s, &err), 0);
	for (int k = 0; k < 4; k++)
		for (int t = 0; t < 2; t++)
			assert_int_equal(store_outbox_put(s, "s", T0 + k,
						    t ? "b" : "a", body, NULL,
							  NULL), 0);

	/* Fill the volume to the last block. */
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	static char chunk[65536];
	off_t filled = 0;
	for (;;) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w <= 0)
			break;
		filled += w;
	}
	for (;;) { /* the last partial block */
		ssize_t w = write(fd, chunk, 512);
		if (w <= 0)
			break;
		filled += w;
	}
	/* Writes now fail, cleanly, with a message that says why. */
	for (int i = 0; i < 2000 && rc == 0; i++) {
		sc_err_clear(&err);
		rc = store_outbox_set_state(s, "s", T0 + i % 4, i % 2 ? "b" : "a",
				      i % 2 ? SEND_SENDING : SEND_FAILED, &err);
		if (rc == 0 && i % 50 == 0) /* new rows need new pages */
			rc = store_outbox_put(s, "s", T0 + 100 + i, "a", body, NULL,
					      &err);
	}
	assert_int_equal(rc, SC_ENOSPC);
	assert_non_null(strstr(err.msg, "disk full") ? err.msg
			: strstr(err.msg, "no space"));

	/* Free 1 MiB; the store must carry on, state changes and stages. */
	assert_int_equal(ftruncate(fd, filled - 1024 * 1024), 0);
	close(fd);
	for (int i = 0; i < 600; i++)
		ONCE_FULL_AT_MOST(store_outbox_set_state(s, "s", T0 + i % 4,
							 i % 2 ? "b" : "a",
							 i % 2 ? SEND_FAILED
							 : SEND_SENDING,
							 &e_),
				  n_full);
	for (int k = 0; k < 4; k++)
		ONCE_FULL_AT_MOST(store_outbox_put(s, "s", T0 + 1000 + k, "a", body,
						   NULL, &e_),
				  n_full);
	ONCE_FULL_AT_MOST(store_slot_mark(s, "s", T0, &e_), n_full);
	store_close(s);

	/* A restart finds everything. */
	assert_int_equal(store_open(path, clock, &s, &err), 0);
	struct outbox_entry e = {0};
	bool marked = false;
	assert_int_equal(store_outbox_get(s, "s", T0 + 1003, "a", &e, NULL), 0);
	assert_string_equal(e.body, body);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_outbox_get(s, "s", T0 + 3, "b", &e, NULL), 0);
	assert_int_equal(e.state, SEND_FAILED);
	store_outbox_entry_dispose(&e);
	assert_int_equal(store_slot_is_marked(s, "s", T0, &marked, NULL), 0);
	assert_true(marked);
	store_close(s);
	fprintf(stderr, "store: 4 MiB volume, filled then 1 MiB freed: 600 "
		"state changes and 4 stages, %d write(s) refused once for "
		"space, none twice\n", n_full);
	sc_clock_free(clock);
	free(body);
	assert_int_equal(umount2(mnt, MNT_DETACH), 0);
	rmdir(mnt);
}

/* ---- concurrency --------------------------------------------------------- */

#define N_THREADS 4
#define N_JOBS 400

struct claimer {
	const char *url;
	struct sc_clock *clock;
	int64_t ids[N_JOBS];
	int n, rc;
	char name[16];
};

static void *claimer_main(void *arg)
{
	struct claimer *c = arg;
	struct store *s = NULL;
	struct store_job j[3];
	size_t n;

	c->rc = store_open(c->url, c->clock, &s, NULL);
	while (!c->rc) {
		c->rc = store_job_claim(s, c->name, 5 * MIN, j, 3, &n, NULL);
		if (c->rc || n == 0)
			break;
		for (size_t i = 0; i < n && !c->rc; i++) {
			c->ids[c->n++] = j[i].id;
			c->rc = store_job_finish(s, j[i].id, j[i].lease_token,
						 JOB_DONE, 0, NULL, NULL);
		}
	}
	store_close(s);
	return NULL;
}

static void threads_never_claim_the_same_job(void **state)
{
	struct fix f;
	static struct claimer c[N_THREADS];
	pthread_t t[N_THREADS];
	static int64_t slots[N_JOBS];
	static unsigned char seen[N_JOBS + 1];

	fix_open(state, &f);
	for (int i = 0; i < N_JOBS; i++)
		slots[i] = T0 - i;
	assert_int_equal(store_job_enqueue_many(f.s, "s", slots, N_JOBS, &low,
						NULL),
			 0);
	for (int i = 0; i < N_THREADS; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].url = tb_url(state);
		c[i].clock = f.clock;
		snprintf(c[i].name, sizeof(c[i].name), "t%d", i);
		assert_int_equal(pthread_create(&t[i], NULL, claimer_main,
						&c[i]),
				 0);
	}
	int total = 0, busy = 0;
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < N_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].rc, 0);
		busy += c[i].n > 0;
		for (int k = 0; k < c[i].n; k++) {
			int64_t id = c[i].ids[k];
			assert_true(id >= 1 && id <= N_JOBS);
			assert_int_equal(seen[id], 0);
			seen[id] = 1;
		}
		total += c[i].n;
	}
	assert_int_equal(total, N_JOBS);
	assert_true(busy >= 2); /* they really ran side by side */
	struct store_counts cnt;
	assert_int_equal(store_job_counts(f.s, NULL, &cnt, NULL), 0);
	assert_int_equal(cnt.done, N_JOBS);
	/* One success row a job, none twice. */
	assert_int_equal(count_rows(&f, NULL, LEDGER_SUCCESS), N_JOBS);
	fix_close(&f);
}

/* Several processes opening a store that does not exist yet: one creates
 * and migrates it, the others wait and find it done. */
static void concurrent_first_open(void **state)
{
	struct fix f;
	pid_t pids[6];
	struct store_counts c;

	if (!tb_is_sqlite(state) && !tb_url(state)[0])
		skip();
	f.clock = sc_clock_virtual_new(T0);
	for (int k = 0; k < 6; k++) {
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			struct store *s = NULL;
			struct sc_err err = {0};
			if (store_open(tb_url(state), f.clock, &s, &err)) {
				if (strstr(err.msg, "not built in"))
					_exit(77); /* backend absent: skip */
				fprintf(stderr, "open: %s\n", err.msg);
				_exit(2);
			}
			if (store_job_enqueue(s, "s", T0 + k, &low, T0, false,
					      NULL, NULL, &err)) {
				fprintf(stderr, "enqueue: %s\n", err.msg);
				_exit(3);
			}
			store_close(s);
			_exit(0);
		}
	}
	bool absent = false;
	for (int k = 0; k < 6; k++) {
		int status;
		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		assert_true(WIFEXITED(status));
		absent |= WEXITSTATUS(status) == 77;
		if (WEXITSTATUS(status) != 77)
			assert_int_equal(WEXITSTATUS(status), 0);
	}
	if (absent) {
		sc_clock_free(f.clock);
		skip();
	}
	f.s = tb_open(state, f.clock);
	assert_int_equal(store_job_counts(f.s, NULL, &c, NULL), 0);
	assert_int_equal(c.ready_due, 6);
	fix_close(&f);
}

/*
 * Issue 46: the conformance of every transition with the one table of the
 * states (job, outbox and alert send states, alert statuses) it may leave (store_transitions[], the STORE_FROM_ macros both
 * backends' SQL is spelled with). For each transition: one row in each
 * state of its table, put there by raw SQL (so that the state is the only
 * thing that differs: the same lease token, an unexpired lease or an
 * expired one as the transition needs, due), then the transition through
 * store.h on every row: it must change exactly the rows whose state is in
 * its set. A backend whose SQL accepts one state more, or one less, fails
 * here; a transition added to the table without a driver below fails too.
 */
#define CF_N 7 /* states 0..6: jobs and alerts use 0..3, sends 1..6 */

static int cf_lo(enum store_trans_of of)
{
	return of == STORE_OF_JOB ? JOB_READY
	       : of == STORE_OF_ALERT ? ALERT_OPEN : SEND_PENDING;
}

static int cf_hi(enum store_trans_of of)
{
	return of == STORE_OF_JOB ? JOB_DEAD
	       : of == STORE_OF_ALERT ? ALERT_CLOSED : SEND_ABANDONED;
}

/* Raises a lost alert of (sched, T0) of generation gen; its id. */
static int64_t cf_raise(struct fix *f, const char *sched, int64_t gen)
{
	struct store_alert a = {.slot_ms = T0, .last_slot_ms = T0,
				.n_slots = 1, .attempts = 1,
				.generation = gen};
	bool created = false;
	int64_t id = 0;

	snprintf(a.schedule, sizeof(a.schedule), "%s", sched);
	snprintf(a.reason, sizeof(a.reason), "%s", ALERT_REASON_LOST);
	assert_int_equal(store_alert_raise(f->s, &a, &created, &id, NULL), 0);
	assert_true(created);
	return id;
}

/* Alerts of sched, one per status (generation status + 1, closed_ms 0),
 * put there by raw SQL; ids[status]. */
static void cf_alerts(void **state, struct fix *f, const char *sched,
		      int64_t *ids)
{
	char sql[256];

	for (int st = ALERT_OPEN; st <= ALERT_CLOSED; st++)
		ids[st] = cf_raise(f, sched, st + 1);
	snprintf(sql, sizeof(sql), "UPDATE alerts SET status = "
		 "CAST(generation - 1 AS smallint), closed_ms = 0 WHERE "
		 "schedule = '%s'", sched);
	raw_sql(state, sql);
}

/* Alert id as the store has it; false when it is gone. */
static bool cf_alert(struct fix *f, const char *sched, int64_t id,
		     struct store_alert *out)
{
	struct alert_filter af = {.schedule = sched, .slot_ms = INT64_MIN,
				  .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX};
	struct store_alert *v = NULL;
	size_t n = 0;
	bool found = false;

	assert_int_equal(store_alert_list(f->s, &af, &v, &n, NULL), 0);
	for (size_t i = 0; i < n; i++)
		if (v[i].id == id) {
			*out = v[i];
			found = true;
		}
	sc_free(v);
	return found;
}

/* Jobs of schedule sched, one per state (slot T0 + state), claimed; then
 * each set to its state by raw SQL. ids[st], toks[st] filled. */
static void cf_jobs(void **state, struct fix *f, const char *sched,
		    int64_t *ids, int64_t *toks)
{
	struct store_job j[CF_N];
	char sql[512];

	for (int st = JOB_READY; st <= JOB_DEAD; st++)
		ids[st] = enqueue(f, sched, T0 + st, T0, NULL);
	assert_int_equal(claim(f, "w", j, CF_N), JOB_DEAD + 1);
	for (int i = 0; i <= JOB_DEAD; i++)
		toks[j[i].slot_ms - T0] = j[i].lease_token;
	snprintf(sql, sizeof(sql), "UPDATE jobs SET state = CAST(slot_ms - "
		 "%lld AS smallint) WHERE schedule = '%s'", (long long)T0,
		 sched);
	raw_sql(state, sql);
}

/* The rows of schedule sched out of the way of the next transition. */
static void cf_drop(void **state, const char *table, const char *col,
		    const char *sched)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE %s = '%s'", table,
		 col, sched);
	raw_sql(state, sql);
}

/* Outbox rows of (sched, T0), target "t<state>" in each send state. */
static void cf_outbox(void **state, struct fix *f, const char *sched)
{
	char sql[512], t[16];
	int k = snprintf(sql, sizeof(sql), "UPDATE outbox SET state = CASE "
			 "target");

	for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
		snprintf(t, sizeof(t), "t%d", st);
		assert_int_equal(store_outbox_put(f->s, sched, T0, t, "body",
						  NULL, NULL), 0);
		k += snprintf(sql + k, sizeof(sql) - (size_t)k,
			      " WHEN '%s' THEN %d", t, st);
	}
	snprintf(sql + k, sizeof(sql) - (size_t)k, " END WHERE schedule = "
		 "'%s'", sched);
	raw_sql(state, sql);
}

static enum send_state cf_outbox_state(struct fix *f, const char *sched,
				       int st, bool *has_body)
{
	struct outbox_entry e = {0};
	char t[16];

	snprintf(t, sizeof(t), "t%d", st);
	assert_int_equal(store_outbox_get(f->s, sched, T0, t, &e, NULL), 0);
	if (has_body)
		*has_body = e.body != NULL;
	store_outbox_entry_dispose(&e);
	return e.state;
}

/* An alert of sched with one send per state (target "t<state>"), all
 * claimed (sends[st]: id and token); then each set to its state, with
 * next_try_ms and lease_expires_ms as given, by raw SQL. */
static int64_t cf_sends(void **state, struct fix *f, const char *sched,
			int64_t slot, struct store_alert_send *sends,
			int64_t next_try, int64_t lease_exp)
{
	struct store_alert a = {.slot_ms = slot, .last_slot_ms = slot,
				.n_slots = 1, .attempts = 1};
	struct store_alert_send got[CF_N];
	const char *targets[CF_N];
	char names[CF_N][16], sql[640];
	int64_t id = 0;
	size_t n = 0;

	snprintf(a.schedule, sizeof(a.schedule), "%s", sched);
	snprintf(a.reason, sizeof(a.reason), "%s", ALERT_REASON_LOST);
	bool created = false;
	assert_int_equal(store_alert_raise(f->s, &a, &created, &id, NULL), 0);
	assert_true(created);
	for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
		snprintf(names[st - 1], sizeof(names[0]), "t%d", st);
		targets[st - 1] = names[st - 1];
	}
	assert_int_equal(store_alert_stage(f->s, id, 0, targets,
					   SEND_ABANDONED, "m", NULL), 0);
	assert_int_equal(store_alert_send_claim_of(f->s, id, 5 * MIN, got,
						   CF_N, &n, NULL), 0);
	assert_int_equal(n, SEND_ABANDONED);
	for (size_t i = 0; i < n; i++) {
		sends[atoi(got[i].target + 1)] = got[i];
		sends[atoi(got[i].target + 1)].body = NULL;
		store_alert_send_dispose(&got[i]);
	}
	int k = snprintf(sql, sizeof(sql), "UPDATE alert_sends SET "
			 "next_try_ms = %lld, lease_expires_ms = %lld, state = "
			 "CASE target", (long long)next_try,
			 (long long)lease_exp);
	for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++)
		k += snprintf(sql + k, sizeof(sql) - (size_t)k,
			      " WHEN 't%d' THEN %d", st, st);
	snprintf(sql + k, sizeof(sql) - (size_t)k, " END WHERE alert_id = "
		 "%lld", (long long)id);
	raw_sql(state, sql);
	return id;
}

/* Which sends of alert id a claim takes now, as a mask of their states. */
static unsigned cf_send_claim(struct fix *f, int64_t id)
{
	struct store_alert_send got[CF_N];
	size_t n = 0;
	unsigned mask = 0;

	assert_int_equal(store_alert_send_claim_of(f->s, id, 5 * MIN, got,
						   CF_N, &n, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		mask |= 1u << atoi(got[i].target + 1);
		store_alert_send_dispose(&got[i]);
	}
	return mask;
}

/* Runs transition x on one row per state; *done gets the mask of the
 * states it changed. */
static void cf_drive(void **state, struct fix *f,
		     const struct store_transition *x, unsigned *done)
{
	char sched[32];
	int64_t ids[CF_N] = {0}, toks[CF_N] = {0};
	struct store_alert_send sends[CF_N];
	struct store_job j;
	int n = 0;

	snprintf(sched, sizeof(sched), "cf%d", (int)x->t);
	*done = 0;
	switch (x->t) {
	case STORE_T_CLAIM: {
		struct store_job got[CF_N];
		cf_jobs(state, f, sched, ids, toks);
		size_t k = claim(f, "w2", got, CF_N);
		for (size_t i = 0; i < k; i++)
			*done |= 1u << (got[i].slot_ms - T0);
		break;
	}
	case STORE_T_HEARTBEAT:
	case STORE_T_FINISH:
	case STORE_T_RELEASE:
	case STORE_T_REVIVE:
	case STORE_T_FENCE:
		cf_jobs(state, f, sched, ids, toks);
		for (int st = JOB_READY; st <= JOB_DEAD; st++) {
			int rc;
			if (x->t == STORE_T_HEARTBEAT)
				rc = store_job_heartbeat(f->s, ids[st],
							 toks[st], MIN, NULL);
			else if (x->t == STORE_T_FINISH)
				rc = store_job_finish(f->s, ids[st], toks[st],
						      JOB_DONE, 0, NULL, NULL);
			else if (x->t == STORE_T_RELEASE)
				rc = store_job_release(f->s, ids[st], toks[st],
						       NULL);
			else if (x->t == STORE_T_REVIVE)
				rc = store_job_revive(f->s, ids[st], 0, NULL);
			else {
				store_fence_set(f->s, ids[st], toks[st]);
				rc = store_slot_mark(f->s, sched, T0 + st, NULL);
				store_fence_clear(f->s);
			}
			/* A refusal is the lease's or the state's, never
			 * another error. */
			if (rc != 0)
				assert_true(rc == SC_ELEASE || rc == SC_ESTATE);
			*done |= (unsigned)(rc == 0) << st;
		}
		break;
	case STORE_T_RECOVER:
		cf_jobs(state, f, sched, ids, toks);
		sc_clock_advance_ms(f->clock, 6 * MIN); /* every lease expired */
		assert_int_equal(store_job_recover(f->s, 99, &n, NULL), 0);
		for (int st = JOB_READY; st <= JOB_DEAD; st++) {
			assert_int_equal(store_job_get(f->s, ids[st], &j, NULL),
					 0);
			*done |= (unsigned)(j.n_stalls > 0) << st;
		}
		break;
	case STORE_T_LEASE_CLAMP:
		cf_jobs(state, f, sched, ids, toks);
		assert_int_equal(store_job_lease_clamp(f->s, MIN, 0, &n, NULL),
				 0);
		for (int st = JOB_READY; st <= JOB_DEAD; st++) {
			assert_int_equal(store_job_get(f->s, ids[st], &j, NULL),
					 0);
			int64_t now = sc_clock_now_ms(f->clock);
			*done |= (unsigned)(j.lease_expires_ms == now + MIN)
				 << st;
		}
		break;
	case STORE_T_JOB_PRUNE: {
		struct store_prune_opts o = {.ledger_before_ms = 0,
					     .jobs_before_ms = INT64_MAX,
					     .outbox_before_ms = 0};
		struct store_prune_result r = {0};
		bool more = true;
		cf_jobs(state, f, sched, ids, toks);
		while (more)
			assert_int_equal(store_prune_batch(f->s, &o, 1000, &r,
							   &more, NULL), 0);
		for (int st = JOB_READY; st <= JOB_DEAD; st++)
			*done |= (unsigned)(store_job_get(f->s, ids[st], &j,
							  NULL) == SC_ENOENT)
				 << st;
		break;
	}
	case STORE_T_OUTBOX_SET:
	case STORE_T_OUTBOX_RELEASE:
	case STORE_T_OUTBOX_ABANDON:
		cf_outbox(state, f, sched);
		for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
			char t[16];
			bool closed = false;
			int rc;
			snprintf(t, sizeof(t), "t%d", st);
			if (x->t != STORE_T_OUTBOX_ABANDON) {
				rc = x->t == STORE_T_OUTBOX_SET
					     ? store_outbox_set_state(
						       f->s, sched, T0, t,
						       SEND_FAILED, NULL)
					     : store_outbox_release(
						       f->s, sched, T0, t,
						       SEND_FAILED, NULL);
				if (rc != 0)
					assert_int_equal(rc, SC_ESTATE);
				*done |= (unsigned)(rc == 0) << st;
				continue;
			}
			struct ledger_row row = abandon_row(t);
			snprintf(row.schedule, sizeof(row.schedule), "%s",
				 sched);
			rc = store_outbox_abandon(f->s, sched, T0, t,
						  (enum send_state)st, &row,
						  &closed, NULL);
			if (rc != 0)
				assert_int_equal(rc, SC_EINVAL);
			*done |= (unsigned)closed << st;
		}
		break;
	case STORE_T_OUTBOX_UNKNOWN:
		cf_outbox(state, f, sched);
		assert_int_equal(store_outbox_mark_unknown(f->s, sched, T0, &n,
							   NULL), 0);
		for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++)
			if (cf_outbox_state(f, sched, st, NULL) !=
			    (enum send_state)st)
				*done |= 1u << st;
		/* UNKNOWN stays UNKNOWN either way: the count tells. */
		assert_int_equal(n, __builtin_popcount(*done) +
			 (store_may_leave(x->t, SEND_UNKNOWN) ? 1 : 0));
		if (store_may_leave(x->t, SEND_UNKNOWN))
			*done |= 1u << SEND_UNKNOWN;
		break;
	case STORE_T_BODY_PRUNE:
	case STORE_T_OUTBOX_PRUNE: {
		/* Bodies: the slot marked, guards kept (jobs horizon 0).
		 * Guards: no job in the slot, every horizon past. */
		bool bodies = x->t == STORE_T_BODY_PRUNE;
		struct store_prune_opts o = {
			.jobs_before_ms = bodies ? 0 : INT64_MAX,
			.outbox_before_ms = INT64_MAX};
		struct store_prune_result r = {0};
		bool more = true, body;
		cf_outbox(state, f, sched);
		assert_int_equal(store_slot_mark(f->s, sched, T0, NULL), 0);
		while (more)
			assert_int_equal(store_prune_batch(f->s, &o, 1000, &r,
							   &more, NULL), 0);
		struct store_outbox_row *v = NULL;
		size_t nv = 0;
		assert_int_equal(store_outbox_list(f->s, sched, T0, &v, &nv,
						   NULL), 0);
		unsigned left = 0;
		for (size_t i = 0; i < nv; i++)
			left |= 1u << atoi(v[i].target + 1);
		free(v);
		for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
			if (!bodies) {
				*done |= (unsigned)!(left & (1u << st)) << st;
				continue;
			}
			assert_true(left & (1u << st));
			cf_outbox_state(f, sched, st, &body);
			*done |= (unsigned)!body << st;
		}
		break;
	}
	case STORE_T_SEND_CLAIM:
	case STORE_T_SEND_RECLAIM: {
		/* Due and leased on (claim), or not due and the lease
		 * expired (reclaim): the state alone decides. */
		int64_t now = sc_clock_now_ms(f->clock);
		bool due = x->t == STORE_T_SEND_CLAIM;
		int64_t id = cf_sends(state, f, sched, T0, sends,
				      due ? 0 : INT64_MAX / 2,
				      due ? now + 60 * MIN : 0);
		*done = cf_send_claim(f, id);
		break;
	}
	case STORE_T_SEND_FINISH: {
		int64_t now = sc_clock_now_ms(f->clock);
		cf_sends(state, f, sched, T0, sends, 0, now + 60 * MIN);
		for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
			int rc = store_alert_send_finish(
				f->s, sends[st].id, sends[st].lease_token,
				SEND_FAILED, now + MIN, "x", NULL, NULL);
			if (rc != 0)
				assert_int_equal(rc, SC_ELEASE);
			*done |= (unsigned)(rc == 0) << st;
		}
		break;
	}
	case STORE_T_SEND_PRUNE: {
		/* One closed alert per send state, each with one send of
		 * that state; an alert goes only when its sends are all
		 * closed. */
		struct store_prune_opts o = {.ledger_before_ms = INT64_MAX};
		struct store_prune_result r = {0};
		int64_t al[CF_N];
		bool more = true;
		for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
			char sql[256];
			al[st] = cf_sends(state, f, sched, T0 + st, sends, 0,
					  0);
			snprintf(sql, sizeof(sql), "UPDATE alerts SET status "
				 "= %d WHERE id = %lld; DELETE FROM "
				 "alert_sends WHERE alert_id = %lld AND "
				 "target <> 't%d'", ALERT_CLOSED,
				 (long long)al[st], (long long)al[st], st);
			raw_sql(state, sql);
		}
		while (more)
			assert_int_equal(store_prune_batch(f->s, &o, 1000, &r,
							   &more, NULL), 0);
		for (int st = SEND_PENDING; st <= SEND_ABANDONED; st++) {
			struct store_alert_send *v = NULL;
			size_t nv = 0;
			assert_int_equal(store_alert_sends(f->s, al[st], &v,
							   &nv, NULL), 0);
			*done |= (unsigned)(nv == 0) << st;
			store_alert_sends_free(v, nv);
		}
		break;
	}
	case STORE_T_ALERT_CLOSE:
	case STORE_T_ALERT_REALERT:
		cf_alerts(state, f, sched, ids);
		for (int st = ALERT_OPEN; st <= ALERT_CLOSED; st++) {
			bool yes = false;
			if (x->t == STORE_T_ALERT_CLOSE)
				assert_int_equal(store_alert_close(
					f->s, ids[st], ALERT_ACKED, "n", NULL,
					NULL, &yes, NULL), 0);
			else
				assert_int_equal(store_alert_realert(
					f->s, ids[st], 1, &yes, NULL), 0);
			*done |= (unsigned)yes << st;
		}
		break;
	case STORE_T_ALERT_SUPERSEDE:
	case STORE_T_ALERT_PRUNE: {
		struct store_prune_opts o = {.ledger_before_ms = INT64_MAX};
		struct store_prune_result r = {0};
		struct store_alert a;
		bool more = true;
		cf_alerts(state, f, sched, ids);
		if (x->t == STORE_T_ALERT_SUPERSEDE)
			cf_raise(f, sched, 9);
		else
			while (more)
				assert_int_equal(store_prune_batch(
					f->s, &o, 1000, &r, &more, NULL), 0);
		for (int st = ALERT_OPEN; st <= ALERT_CLOSED; st++) {
			bool there = cf_alert(f, sched, ids[st], &a);
			if (x->t == STORE_T_ALERT_PRUNE)
				*done |= (unsigned)!there << st;
			else
				*done |= (unsigned)(there && a.closed_ms != 0)
					 << st;
		}
		break;
	}
	default:
		fail_msg("transition %s has no conformance driver: add one "
			 "to cf_drive", x->name);
	}
	/* Out of the way of the transitions after it. */
	if (x->of == STORE_OF_JOB)
		cf_drop(state, "jobs", "schedule", sched);
	else if (x->of == STORE_OF_OUTBOX)
		cf_drop(state, "outbox", "schedule", sched);
	else {
		char sql[256];
		snprintf(sql, sizeof(sql), "DELETE FROM alert_sends WHERE "
			 "alert_id IN (SELECT id FROM alerts WHERE schedule = "
			 "'%s')", sched);
		raw_sql(state, sql);
		cf_drop(state, "alerts", "schedule", sched);
	}
}

static void every_transition_leaves_exactly_its_states(void **state)
{
	struct fix f;

	/* The SQL spellings are the enums' values. */
	assert_int_equal(atoi(STORE_SQL_OPEN), ALERT_OPEN);
	assert_int_equal(atoi(STORE_SQL_CLOSED), ALERT_CLOSED);
	assert_int_equal(atoi(STORE_SQL_READY), JOB_READY);
	assert_int_equal(atoi(STORE_SQL_ACTIVE), JOB_ACTIVE);
	assert_int_equal(atoi(STORE_SQL_DONE), JOB_DONE);
	assert_int_equal(atoi(STORE_SQL_DEAD), JOB_DEAD);
	assert_int_equal(atoi(STORE_SQL_PENDING), SEND_PENDING);
	assert_int_equal(atoi(STORE_SQL_SENDING), SEND_SENDING);
	assert_int_equal(atoi(STORE_SQL_SENT), SEND_SENT);
	assert_int_equal(atoi(STORE_SQL_FAILED), SEND_FAILED);
	assert_int_equal(atoi(STORE_SQL_UNKNOWN), SEND_UNKNOWN);
	assert_int_equal(atoi(STORE_SQL_ABANDONED), SEND_ABANDONED);
	fix_open(state, &f);
	for (int t = 0; t < STORE_T_N; t++) {
		const struct store_transition *x = &store_transitions[t];
		unsigned want = 0, got = 0;
		assert_int_equal(x->t, t);
		for (int st = cf_lo(x->of); st <= cf_hi(x->of); st++)
			want |= (unsigned)store_may_leave(x->t, st) << st;
		assert_true(want != 0);
		cf_drive(state, &f, x, &got);
		if (got != want)
			fail_msg("%s on %s: left states 0x%x, the table says "
				 "0x%x (%s %s)", x->name,
				 store_backend_name(f.s), got, want, x->macro,
				 x->from);
	}
	fix_close(&f);
}

/* The store URL as the daemon's reload warning prints it: no password. */
static void store_url_for_log_hides_password(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"sqlite:/var/lib/s.db", "sqlite:/var/lib/s.db"},
		{"postgresql://u@db/s", "postgresql://u@db/s"},
		{"postgresql://u:hunter2@db:5432/s?sslmode=require",
		 "postgresql://u:***@db:5432/s?sslmode=require"},
		{"postgres://u:p%40ss@x@db/s", "postgres://u:***@db/s"},
		{"postgresql://db/s?user=u&password=hunter2&sslmode=require",
		 "postgresql://db/s?user=u&password=***&sslmode=require"},
		{"postgres://db/s?PASSWORD=hunter2", "postgres://db/s?PASSWORD=***"},
		{"postgresql://u:pw@db/s?password=x#f",
		 "postgresql://u:***@db/s?password=***#f"},
		{"postgresql://db/s?sslpassword=k&x=1",
		 "postgresql://db/s?sslpassword=***&x=1"},
		{"db.sqlite", "db.sqlite"},
	};
	char out[256];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		store_url_for_log(cases[i].in, out, sizeof(out));
		assert_string_equal(out, cases[i].want);
	}
	/* Truncated to fit, still terminated and without the password. */
	char small[16];
	store_url_for_log("postgresql://u:hunter2@db/s", small,
			  sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_null(strstr(small, "hunter2"));
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(url_forms),
		cmocka_unit_test(store_url_for_log_hides_password),
		cmocka_unit_test(a_store_never_made_is_refused_and_left_unmade),
		cmocka_unit_test(file_is_0600_and_reopens),
		cmocka_unit_test(newer_version_is_refused_untouched),
		cmocka_unit_test(corrupt_or_foreign_files_are_refused_untouched),
		cmocka_unit_test(disk_full_is_reported_and_database_stays_intact),
		cmocka_unit_test(enqueue_is_idempotent),
		cmocka_unit_test(bad_arguments_are_refused),
		cmocka_unit_test(claim_takes_earliest_due_first),
		cmocka_unit_test(claim_follows_the_overlap_rule),
		cmocka_unit_test(claim_keeps_fresh_first_and_order_per_schedule),
		cmocka_unit_test(heads_know_every_run_outcome),
		cmocka_unit_test(version_10_trigger_upgrades),
		cmocka_unit_test(claim_ahead_takes_only_jobs_due_within_the_window),
		cmocka_unit_test(leases_are_fenced),
		cmocka_unit_test(finish_writes_one_ledger_row),
		cmocka_unit_test(finish_outcomes_and_fence_errors_are_one_rule),
		cmocka_unit_test(release_does_not_count_the_attempt),
		cmocka_unit_test(recover_counts_stalls_and_gives_up),
		cmocka_unit_test(lease_clamp_after_clock_set_back),
		cmocka_unit_test(recover_max_stalls_edge_is_the_same_on_every_backend),
		cmocka_unit_test(recover_handles_many_jobs),
		cmocka_unit_test(revive_only_dead_jobs),
		cmocka_unit_test(next_due_and_counts),
		cmocka_unit_test(ledger_queries_filter),
		cmocka_unit_test(missed_row_is_kept_once_per_slot),
		cmocka_unit_test(version_1_with_duplicate_missed_rows_migrates),
		cmocka_unit_test(version_2_outbox_bodies_migrate),
		cmocka_unit_test(version_8_heads_fill_and_follow_new_rows),
		cmocka_unit_test(issue43_status_last_is_a_run),
		cmocka_unit_test(issue43_claim_takes_known_schedules_only),
		cmocka_unit_test(issue43_nodes_beat_and_list),
		cmocka_unit_test(issue43_outbox_abandon_closes_with_its_row),
		cmocka_unit_test(issue43_cron_history_noted_once_per_change),
		cmocka_unit_test(version_12_migrates_to_13),
		cmocka_unit_test(version_5_gains_the_success_index),
		cmocka_unit_test(pauses_are_stored_replaced_and_ended),
		cmocka_unit_test(two_handles_recovering_one_job_list_it_once),
		cmocka_unit_test(concurrent_recoveries_recover_each_job_once),
		cmocka_unit_test(recovery_takes_the_oldest_lease_first),
		cmocka_unit_test(outbox_state_machine_and_guard),
		cmocka_unit_test(release_never_overwrites_a_changed_send),
		cmocka_unit_test(every_transition_leaves_exactly_its_states),
		cmocka_unit_test(fenced_writes_refuse_a_stale_lease),
		cmocka_unit_test(slot_markers_are_idempotent),
		cmocka_unit_test(complete_marked_writes_both_or_neither),
		cmocka_unit_test(complete_marked_failed_at_commit_keeps_neither),
		cmocka_unit_test(slot_look_reads_the_marker_and_the_first_staged_target),
		cmocka_unit_test(sched_state_never_moves_backwards),
		cmocka_unit_test(token_cache_round_trips),
		cmocka_unit_test(durable_commits_sync_as_the_table_says),
		cmocka_unit_test(durability_table_is_whole),
		cmocka_unit_test(field_tables_match_the_column_lists),
		cmocka_unit_test(outbox_state_change_writes_no_body),
		cmocka_unit_test(full_volume_recovers_after_space_is_freed),
		cmocka_unit_test(threads_never_claim_the_same_job),
		cmocka_unit_test(concurrent_first_open),
	};
	return tb_run_all("store", tests, sizeof(tests) / sizeof(tests[0]));
}
