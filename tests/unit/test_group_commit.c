/*
 * test_group_commit.c - SQLite's durable commits share their fsyncs
 * (store_sqlite.c, group commit).
 *
 * Threads with their own handles on one file make durable writes (slot
 * markers) at once: every write succeeds and is there afterwards, and
 * the writes that met share syncs (fewer syncs than writes), while a
 * lone durable write still gets a sync of its own. A failed sync is the
 * write's error (SC_EIO), as a failed commit is. SQLite only: the
 * PostgreSQL server makes its own group commits.
 *
 * Power loss (issue 46): every commit the store's durability table
 * (store_durable.c) calls durable survives a power cut right after its
 * call returned, simulated by a test VFS that drops or tears what was
 * written since the last sync; with the table ignored, each is lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "failpoint.h"
#include "store.h"
#include "surecron.h"
#include "testutil.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define N_THREADS 12
#define N_WRITES 20 /* per thread */

struct gc {
	char dir[256];
	char path[300];
	char url[320];
	struct sc_clock *clock;
};

struct writer {
	struct gc *g;
	int idx;
	pthread_barrier_t *go;
	int failed; /* writes that returned an error */
};

static void gc_init(struct gc *g)
{
	snprintf(g->dir, sizeof(g->dir), "%s", tu_tmpdir());
	snprintf(g->path, sizeof(g->path), "%s/surecron.db", g->dir);
	snprintf(g->url, sizeof(g->url), "sqlite:%s", g->path);
	g->clock = sc_clock_virtual_new(T0);
	assert_non_null(g->clock);
}

static void gc_done(struct gc *g)
{
	sc_clock_free(g->clock);
	tu_rmrf(g->dir);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct store *s = NULL;
	char name[32];

	snprintf(name, sizeof(name), "w%d", w->idx);
	if (store_open(w->g->url, w->g->clock, &s, NULL) != 0) {
		w->failed = N_WRITES;
		pthread_barrier_wait(w->go);
		return NULL;
	}
	pthread_barrier_wait(w->go);
	for (int i = 0; i < N_WRITES; i++)
		if (store_slot_mark(s, name, T0 + i * 60000LL, NULL) != 0)
			w->failed++;
	store_close(s);
	return NULL;
}

static void concurrent_durable_writes_all_succeed_and_share_syncs(void **st)
{
	struct gc g = {0};
	struct store *keep = NULL;
	pthread_t th[N_THREADS];
	struct writer w[N_THREADS];
	pthread_barrier_t go;
	uint64_t before, syncs;

	(void)st;
	gc_init(&g);
	/* One handle held open throughout keeps the file's sync count. */
	assert_int_equal(store_open(g.url, g.clock, &keep, NULL), 0);
	before = store_sqlite_syncs(g.path);
	pthread_barrier_init(&go, NULL, N_THREADS);
	for (int i = 0; i < N_THREADS; i++) {
		w[i] = (struct writer){.g = &g, .idx = i, .go = &go};
		assert_int_equal(pthread_create(&th[i], NULL, writer_main,
						&w[i]), 0);
	}
	for (int i = 0; i < N_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	syncs = store_sqlite_syncs(g.path) - before;
	for (int i = 0; i < N_THREADS; i++)
		assert_int_equal(w[i].failed, 0);
	/* Every marker is there. */
	for (int i = 0; i < N_THREADS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "w%d", i);
		for (int k = 0; k < N_WRITES; k++) {
			bool marked = false;

			assert_int_equal(store_slot_is_marked(keep, name,
							      T0 + k * 60000LL,
							      &marked, NULL),
					 0);
			assert_true(marked);
		}
	}
	print_message("group commit: %d durable writes from %d threads, "
		      "%llu syncs\n", N_THREADS * N_WRITES, N_THREADS,
		      (unsigned long long)syncs);
	assert_true(syncs >= 1);
	assert_true(syncs < (uint64_t)(N_THREADS * N_WRITES));
	store_close(keep);
	gc_done(&g);
}

static void each_lone_durable_write_is_synced(void **st)
{
	struct gc g = {0};
	struct store *s = NULL;
	uint64_t before;

	(void)st;
	gc_init(&g);
	assert_int_equal(store_open(g.url, g.clock, &s, NULL), 0);
	for (int i = 0; i < 5; i++) {
		before = store_sqlite_syncs(g.path);
		assert_int_equal(store_slot_mark(s, "s", T0 + i * 60000LL,
						 NULL), 0);
		assert_int_equal(store_sqlite_syncs(g.path) - before, 1);
	}
	/* A write that need not be durable waits for no sync. */
	before = store_sqlite_syncs(g.path);
	assert_int_equal(store_sched_last_set(s, "s", T0, NULL), 0);
	assert_int_equal(store_sqlite_syncs(g.path) - before, 0);
	store_close(s);
	gc_done(&g);
}

static void failed_sync_is_the_writes_error(void **st)
{
	struct gc g = {0};
	struct store *s = NULL;
	struct sc_err e = {0};

	(void)st;
	TU_NEED_TEST_SEAMS();
	gc_init(&g);
	assert_int_equal(store_open(g.url, g.clock, &s, NULL), 0);
	setenv("SURECRON_FAILPOINTS", "store.sync:err", 1);
	assert_int_equal(store_slot_mark(s, "s", T0, &e), SC_EIO);
	unsetenv("SURECRON_FAILPOINTS");
	assert_non_null(strstr(e.msg, "I/O error"));
	/* The handle goes on: the next durable write syncs and succeeds. */
	assert_int_equal(store_slot_mark(s, "s", T0 + 60000LL, NULL), 0);
	store_close(s);
	gc_done(&g);
}

/* ---- power loss: a VFS that forgets what was not synced ---------------- */

/*
 * SQLite's own crash test (test6.c) in small: "powerloss", a VFS over
 * the default unix one, registered in this binary only (and only in the
 * child processes below). It keeps, per database and -wal file, the image
 * the disk holds for sure: the file as it was when first opened, taken
 * again after each xSync and after each group sync of store_sqlite.c
 * (which fsyncs the -wal outside SQLite: failpoint hook
 * "store.wal_synced"). pl_crash() is the power cut: every file goes back
 * to its image (PL_DROP), or, sector by sector, to a random mix of the
 * image and what was written since (PL_TEAR: torn and partial writes; a
 * tail appended since the sync is kept in part, some sectors zeroed).
 * The -shm is not kept: SQLite rebuilds it from the -wal, as after a
 * reboot. Directory entries are taken as durable.
 *
 * pl_case_run: the case's setup in this process (then closed), its one
 * durable operation in a child that runs it through powerloss, cuts the
 * power right after the call returned and exits without closing; then
 * this process opens the file again and asks whether the change is there.
 */
#define PL_FILES 4
#define PL_SECTOR 512

enum pl_mode { PL_DROP, PL_TEAR };

struct pl_track {
	char path[512];
	unsigned char *img; /* NULL with n 0: empty or absent */
	size_t n;
};

static struct pl_track pl_tracks[PL_FILES];
static sqlite3_vfs *pl_real;
static sqlite3_vfs pl_vfs;

struct pl_file {
	sqlite3_file base;
	struct pl_track *t; /* NULL: not kept (temp files) */
	sqlite3_file *real; /* right after this struct */
};

/* The file at path, read whole; NULL with n 0 when empty or absent. */
static unsigned char *pl_slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	long len;

	*n = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)len)) != NULL) {
		*n = fread(b, 1, (size_t)len, f);
		if (*n != (size_t)len) {
			free(b);
			b = NULL;
			*n = 0;
		}
	}
	fclose(f);
	return b;
}

static void pl_snap(struct pl_track *t)
{
	free(t->img);
	t->img = pl_slurp(t->path, &t->n);
}

static struct pl_track *pl_track_of(const char *path)
{
	for (int i = 0; i < PL_FILES; i++)
		if (pl_tracks[i].path[0] && strcmp(pl_tracks[i].path, path) == 0)
			return &pl_tracks[i];
	for (int i = 0; i < PL_FILES; i++)
		if (!pl_tracks[i].path[0]) {
			snprintf(pl_tracks[i].path, sizeof(pl_tracks[i].path),
				 "%s", path);
			pl_snap(&pl_tracks[i]);
			return &pl_tracks[i];
		}
	return NULL;
}

/* The failpoint hook: store_sqlite.c synced a -wal by itself. */
static void pl_hook(const char *name, void *ud)
{
	(void)ud;
	if (strcmp(name, "store.wal_synced") != 0)
		return;
	for (int i = 0; i < PL_FILES; i++) {
		size_t len = strlen(pl_tracks[i].path);

		if (len > 4 && strcmp(pl_tracks[i].path + len - 4, "-wal") == 0)
			pl_snap(&pl_tracks[i]);
	}
}

static sqlite3_file *pl_real_of(sqlite3_file *f)
{
	return ((struct pl_file *)f)->real;
}

static int pl_close(sqlite3_file *f)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
}
static int pl_read(sqlite3_file *f, void *b, int n, sqlite3_int64 off)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xRead(r, b, n, off);
}
static int pl_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 off)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xWrite(r, b, n, off);
}
static int pl_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xTruncate(r, size);
}
static int pl_sync(sqlite3_file *f, int flags)
{
	sqlite3_file *r = pl_real_of(f);
	int rc = r->pMethods->xSync(r, flags);

	if (rc == SQLITE_OK && ((struct pl_file *)f)->t)
		pl_snap(((struct pl_file *)f)->t);
	return rc;
}
static int pl_size(sqlite3_file *f, sqlite3_int64 *size)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xFileSize(r, size);
}
static int pl_lock(sqlite3_file *f, int l)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xLock(r, l);
}
static int pl_unlock(sqlite3_file *f, int l)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xUnlock(r, l);
}
static int pl_reserved(sqlite3_file *f, int *out)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xCheckReservedLock(r, out);
}
static int pl_fcntl(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xFileControl(r, op, arg);
}
static int pl_sector(sqlite3_file *f)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xSectorSize(r);
}
static int pl_device(sqlite3_file *f)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xDeviceCharacteristics(r);
}
static int pl_shm_map(sqlite3_file *f, int pg, int sz, int ext,
		      void volatile **p)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xShmMap(r, pg, sz, ext, p);
}
static int pl_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xShmLock(r, off, n, flags);
}
static void pl_shm_barrier(sqlite3_file *f)
{
	sqlite3_file *r = pl_real_of(f);

	r->pMethods->xShmBarrier(r);
}
static int pl_shm_unmap(sqlite3_file *f, int del)
{
	sqlite3_file *r = pl_real_of(f);

	return r->pMethods->xShmUnmap(r, del);
}

/* Version 2: no xFetch, so SQLite reads through xRead (no mmap). */
static const sqlite3_io_methods pl_methods = {
	2,           pl_close,     pl_read,      pl_write,
	pl_truncate, pl_sync,      pl_size,      pl_lock,
	pl_unlock,   pl_reserved,  pl_fcntl,     pl_sector,
	pl_device,   pl_shm_map,   pl_shm_lock,  pl_shm_barrier,
	pl_shm_unmap, NULL,        NULL,
};

static int pl_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
		   int flags, int *out_flags)
{
	struct pl_file *p = (struct pl_file *)f;
	int rc;

	(void)vfs;
	memset(p, 0, sizeof(*p));
	p->real = (sqlite3_file *)(p + 1);
	if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)))
		p->t = pl_track_of(name);
	rc = pl_real->xOpen(pl_real, name, p->real, flags, out_flags);
	/* SQLite calls xClose even after a failed xOpen when pMethods is
	 * set: set it only once the real file is open. */
	if (rc == SQLITE_OK)
		p->base.pMethods = &pl_methods;
	return rc;
}

static int pl_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return pl_real->xDelete(pl_real, name, sync_dir);
}
static int pl_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return pl_real->xAccess(pl_real, name, flags, out);
}
static int pl_full(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return pl_real->xFullPathname(pl_real, name, n, out);
}

/* Makes powerloss the default VFS of this process (a child's). */
static void pl_install(void)
{
	pl_real = sqlite3_vfs_find(NULL);
	pl_vfs = *pl_real;
	pl_vfs.iVersion = pl_real->iVersion;
	pl_vfs.zName = "powerloss";
	pl_vfs.pNext = NULL;
	pl_vfs.szOsFile = (int)sizeof(struct pl_file) + pl_real->szOsFile;
	pl_vfs.xOpen = pl_open;
	pl_vfs.xDelete = pl_delete;
	pl_vfs.xAccess = pl_access;
	pl_vfs.xFullPathname = pl_full;
	memset(pl_tracks, 0, sizeof(pl_tracks));
	sqlite3_vfs_register(&pl_vfs, 1);
#ifdef SURECRON_FAILPOINTS
	failpoint_set_hook(pl_hook, NULL);
#else
	(void)pl_hook; /* the test is skipped there */
#endif
}

/* The power cut: each kept file back to what the disk surely holds. */
static int pl_crash(enum pl_mode mode, unsigned seed)
{
	for (int i = 0; i < PL_FILES; i++) {
		struct pl_track *t = &pl_tracks[i];
		size_t n_now, len = t->n;
		unsigned char *now;
		int fd;

		if (!t->path[0])
			continue;
		now = pl_slurp(t->path, &n_now);
		if (mode == PL_TEAR && n_now > t->n)
			len = t->n + (size_t)(rand_r(&seed) %
					      (n_now - t->n + 1));
		unsigned char *out = calloc(1, len ? len : 1);

		if (!out)
			return -1;
		for (size_t off = 0; off < len; off += PL_SECTOR) {
			size_t k = len - off < PL_SECTOR ? len - off : PL_SECTOR;
			int pick = mode == PL_TEAR ? rand_r(&seed) % 4 : 0;
			const unsigned char *src = NULL;
			size_t n_src = 0;

			/* 1, 2: what was written since the sync landed; 0,
			 * 3: it did not (the synced image; past its end,
			 * zeros: a sector that never made it). */
			if ((pick == 1 || pick == 2) && off < n_now) {
				src = now;
				n_src = n_now;
			} else if (off < t->n) {
				src = t->img;
				n_src = t->n;
			}
			if (src)
				memcpy(out + off, src + off,
				       n_src - off < k ? n_src - off : k);
		}
		free(now);
		fd = open(t->path, O_WRONLY | O_CREAT, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
		    (len && pwrite(fd, out, len, 0) != (ssize_t)len)) {
			free(out);
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		free(out);
	}
	return 0;
}

/* What a case's setup made, for its operation and its check. */
struct pl_ctx {
	struct gc *g;
	struct store_job job;   /* claimed by the setup */
	int64_t alert_id;
	struct store_alert_send send; /* claimed by the setup */
};

struct pl_case {
	enum store_commit commit;
	const char *what;
	void (*setup)(struct store *s, struct pl_ctx *x);  /* NULL: none */
	int (*op)(struct store *s, struct pl_ctx *x);      /* in the child */
	bool (*there)(struct store *s, struct pl_ctx *x);  /* after */
	bool raw; /* there() reads the file before a store opens it (s
		     NULL): an open would migrate it */
};

static const struct sc_retry_policy pl_policy = {3, SC_BACKOFF_FIXED, 1000};

static void pl_claimed(struct store *s, struct pl_ctx *x)
{
	size_t n = 0;

	assert_int_equal(store_job_enqueue(s, "a", T0, &pl_policy, T0, false,
					   NULL, NULL, NULL), 0);
	assert_int_equal(store_job_claim(s, "w", 1000, &x->job, 1, &n, NULL),
			 0);
	assert_int_equal(n, 1);
}

static void pl_staged(struct store *s, struct pl_ctx *x)
{
	(void)x;
	assert_int_equal(store_outbox_put(s, "a", T0, "t", "{}", NULL, NULL),
			 0);
}

static void pl_sending(struct store *s, struct pl_ctx *x)
{
	pl_staged(s, x);
	assert_int_equal(store_outbox_set_state(s, "a", T0, "t",
						SEND_SENDING, NULL), 0);
}

static struct store_alert pl_alert(void)
{
	struct store_alert a = {.slot_ms = T0, .last_slot_ms = T0,
				.n_slots = 1, .generation = 1, .attempts = 1};

	snprintf(a.schedule, sizeof(a.schedule), "a");
	snprintf(a.reason, sizeof(a.reason), "%s", ALERT_REASON_LOST);
	return a;
}

static void pl_raised(struct store *s, struct pl_ctx *x)
{
	struct store_alert a = pl_alert();

	assert_int_equal(store_alert_raise(s, &a, NULL, &x->alert_id, NULL),
			 0);
}

static void pl_alert_staged(struct store *s, struct pl_ctx *x)
{
	const char *t[] = {"t"};

	pl_raised(s, x);
	assert_int_equal(store_alert_stage(s, x->alert_id, 0, t, 1, "{}",
					   NULL), 0);
}

static void pl_alert_claimed(struct store *s, struct pl_ctx *x)
{
	size_t n = 0;

	pl_alert_staged(s, x);
	assert_int_equal(store_alert_send_claim(s, 60000, &x->send, 1, &n,
						NULL), 0);
	assert_int_equal(n, 1);
	free(x->send.body);
	x->send.body = NULL;
}

/* The schema as it was at version 13 (14 and 15 only change indexes). */
static void pl_old_schema(struct store *s, struct pl_ctx *x)
{
	sqlite3 *db;

	(void)s;
	assert_int_equal(sqlite3_open(x->g->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 13", NULL,
				      NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static int pl_op_migrate(struct store *s, struct pl_ctx *x)
{
	(void)s;
	(void)x;
	return 0; /* the child's store_open migrated */
}
static int pl_op_marked(struct store *s, struct pl_ctx *x)
{
	return store_job_complete_marked(s, x->job.id, x->job.lease_token,
					 NULL, NULL);
}
static int pl_op_dead(struct store *s, struct pl_ctx *x)
{
	return store_job_finish(s, x->job.id, x->job.lease_token, JOB_DEAD,
				0, NULL, NULL);
}
static int pl_op_recover(struct store *s, struct pl_ctx *x)
{
	int n = 0;

	(void)x;
	sc_clock_advance_ms(x->g->clock, 60000);
	return store_job_recover(s, 1, &n, NULL) || n != 1;
}
static int pl_op_lost_row(struct store *s, struct pl_ctx *x)
{
	struct ledger_row r = {.slot_ms = T0};

	(void)x;
	snprintf(r.schedule, sizeof(r.schedule), "a");
	snprintf(r.outcome, sizeof(r.outcome), LEDGER_LOST);
	return store_ledger_append(s, &r, NULL);
}
static int pl_op_sending(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return store_outbox_set_state(s, "a", T0, "t", SEND_SENDING, NULL);
}
static int pl_op_sent(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return store_outbox_set_state(s, "a", T0, "t", SEND_SENT, NULL);
}
static int pl_op_abandon(struct store *s, struct pl_ctx *x)
{
	struct ledger_row r = {.slot_ms = T0};
	bool closed = false;

	(void)x;
	snprintf(r.schedule, sizeof(r.schedule), "a");
	snprintf(r.outcome, sizeof(r.outcome), LEDGER_ABANDONED);
	return store_outbox_abandon(s, "a", T0, "t", SEND_PENDING, &r,
				    &closed, NULL) || !closed;
}
static int pl_op_mark(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return store_slot_mark(s, "a", T0, NULL);
}
static int pl_op_pause(struct store *s, struct pl_ctx *x)
{
	struct store_pause p = {.from_ms = T0, .until_ms = T0 + 3600000};

	(void)x;
	snprintf(p.schedule, sizeof(p.schedule), "a");
	return store_pause_set(s, &p, NULL);
}
static void pl_paused(struct store *s, struct pl_ctx *x)
{
	assert_int_equal(pl_op_pause(s, x), 0);
}
static int pl_op_resume(struct store *s, struct pl_ctx *x)
{
	bool ended = false;

	(void)x;
	return store_pause_end(s, "a", T0 + 1000, &ended, NULL) || !ended;
}
static int pl_op_raise(struct store *s, struct pl_ctx *x)
{
	pl_raised(s, x);
	return 0;
}
static int pl_op_ack(struct store *s, struct pl_ctx *x)
{
	bool changed = false;

	return store_alert_close(s, x->alert_id, ALERT_ACKED, "seen", NULL,
				 NULL, &changed, NULL) || !changed;
}
static int pl_op_alert_claim(struct store *s, struct pl_ctx *x)
{
	size_t n = 0;
	int rc = store_alert_send_claim(s, 60000, &x->send, 1, &n, NULL);

	if (n)
		store_alert_send_dispose(&x->send);
	return rc || n != 1;
}
static int pl_op_alert_sent(struct store *s, struct pl_ctx *x)
{
	return store_alert_send_finish(s, x->send.id, x->send.lease_token,
				       SEND_SENT, 0, NULL, NULL, NULL);
}

static bool pl_is_migrated(struct store *s, struct pl_ctx *x)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int v = 0;

	(void)s;
	if (sqlite3_open(x->g->path, &db) != SQLITE_OK)
		return false;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v > 13;
}
static enum job_state pl_job_state(struct store *s, struct pl_ctx *x)
{
	struct store_job j;

	assert_int_equal(store_job_get(s, x->job.id, &j, NULL), 0);
	return j.state;
}
static bool pl_is_done(struct store *s, struct pl_ctx *x)
{
	bool marked = false;

	assert_int_equal(store_slot_is_marked(s, "a", T0, &marked, NULL), 0);
	return marked && pl_job_state(s, x) == JOB_DONE;
}
static bool pl_is_dead(struct store *s, struct pl_ctx *x)
{
	return pl_job_state(s, x) == JOB_DEAD;
}
static bool pl_has_lost_row(struct store *s, struct pl_ctx *x)
{
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = LEDGER_LOST};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	(void)x;
	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n == 1;
}
static enum send_state pl_send_state(struct store *s)
{
	struct outbox_entry e;

	enum send_state st;

	memset(&e, 0, sizeof(e));
	if (store_outbox_get(s, "a", T0, "t", &e, NULL) != 0)
		return SEND_NONE;
	st = e.state;
	store_outbox_entry_dispose(&e);
	return st;
}
static bool pl_is_sending(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return pl_send_state(s) == SEND_SENDING;
}
static bool pl_is_sent(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return pl_send_state(s) == SEND_SENT;
}
static bool pl_is_abandoned(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return pl_send_state(s) == SEND_ABANDONED;
}
static bool pl_is_marked(struct store *s, struct pl_ctx *x)
{
	bool marked = false;

	(void)x;
	assert_int_equal(store_slot_is_marked(s, "a", T0, &marked, NULL), 0);
	return marked;
}
static bool pl_is_paused(struct store *s, struct pl_ctx *x)
{
	struct store_pause p;

	(void)x;
	return store_pause_get(s, "a", &p, NULL) == 0 && !p.resumed;
}
static bool pl_is_resumed(struct store *s, struct pl_ctx *x)
{
	struct store_pause p;

	(void)x;
	return store_pause_get(s, "a", &p, NULL) == 0 && p.resumed;
}
static bool pl_alert_status(struct store *s, bool want_open, size_t want_n)
{
	struct store_alert *v = NULL;
	size_t n = 0;
	bool ok;

	assert_int_equal(store_alert_list(s, NULL, &v, &n, NULL), 0);
	ok = n == want_n && (n == 0 || (v[0].status == ALERT_OPEN) == want_open);
	sc_free(v);
	return ok;
}
static bool pl_is_raised(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return pl_alert_status(s, true, 1);
}
static bool pl_is_acked(struct store *s, struct pl_ctx *x)
{
	(void)x;
	return pl_alert_status(s, false, 1);
}
static enum send_state pl_alert_send_state(struct store *s,
					   struct pl_ctx *x)
{
	struct store_alert_send *v = NULL;
	size_t n = 0;
	enum send_state st = SEND_NONE;

	assert_int_equal(store_alert_sends(s, x->alert_id, &v, &n, NULL), 0);
	if (n == 1)
		st = v[0].state;
	store_alert_sends_free(v, n);
	return st;
}
static bool pl_is_alert_sending(struct store *s, struct pl_ctx *x)
{
	return pl_alert_send_state(s, x) == SEND_SENDING;
}
static bool pl_is_alert_sent(struct store *s, struct pl_ctx *x)
{
	return pl_alert_send_state(s, x) == SEND_SENT;
}

/* One row per durable kind of the table (more than one may share it). */
static const struct pl_case pl_cases[] = {
	{STORE_COMMIT_MIGRATE, "migration", pl_old_schema, pl_op_migrate,
	 pl_is_migrated, true},
	{STORE_COMMIT_FINISH_MARKED, "complete + marker", pl_claimed,
	 pl_op_marked, pl_is_done, false},
	{STORE_COMMIT_FINISH_DEAD, "dead", pl_claimed, pl_op_dead,
	 pl_is_dead, false},
	{STORE_COMMIT_RECOVER, "stalled recovery", pl_claimed, pl_op_recover,
	 pl_is_dead, false},
	{STORE_COMMIT_LEDGER_LOST, "lost row", NULL, pl_op_lost_row,
	 pl_has_lost_row, false},
	{STORE_COMMIT_SENDING, "SENDING", pl_staged, pl_op_sending,
	 pl_is_sending, false},
	{STORE_COMMIT_SENT, "SENT", pl_sending, pl_op_sent, pl_is_sent, false},
	{STORE_COMMIT_ABANDON, "abandon", pl_staged, pl_op_abandon,
	 pl_is_abandoned, false},
	{STORE_COMMIT_SLOT_MARK, "slot marker", NULL, pl_op_mark,
	 pl_is_marked, false},
	{STORE_COMMIT_PAUSE, "pause", NULL, pl_op_pause, pl_is_paused, false},
	{STORE_COMMIT_PAUSE, "pause end", pl_paused, pl_op_resume,
	 pl_is_resumed, false},
	{STORE_COMMIT_ALERT_RAISE, "alert raise", NULL, pl_op_raise,
	 pl_is_raised, false},
	{STORE_COMMIT_ALERT_CLOSE, "ack", pl_raised, pl_op_ack, pl_is_acked, false},
	{STORE_COMMIT_ALERT_CLAIM, "alert send claim", pl_alert_staged,
	 pl_op_alert_claim, pl_is_alert_sending, false},
	{STORE_COMMIT_ALERT_SENT, "alert SENT", pl_alert_claimed,
	 pl_op_alert_sent, pl_is_alert_sent, false},
};
#define PL_N_CASES (sizeof(pl_cases) / sizeof(pl_cases[0]))

/* Copies the template store (closed: no -wal) to path. */
static void pl_copy(const char *from, const char *to)
{
	size_t n = 0;
	unsigned char *b = pl_slurp(from, &n);
	FILE *f = fopen(to, "wb");

	assert_non_null(b);
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	free(b);
}

/*
 * Runs case c once: setup, the operation in a child that cuts the power
 * right after it returned (control: with the durability table ignored),
 * then whether the change is there. Fails the test when the operation
 * itself failed.
 */
static bool pl_case_run(const struct pl_case *c, const char *tmpl,
			enum pl_mode mode, unsigned seed, bool control)
{
	struct gc g = {0};
	struct pl_ctx x = {.g = &g};
	struct store *s = NULL;
	int status = 0;
	bool there;
	pid_t pid;

	gc_init(&g);
	pl_copy(tmpl, g.path);
	assert_int_equal(store_open(g.url, g.clock, &s, NULL), 0);
	if (c->setup)
		c->setup(s, &x);
	store_close(s);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc;

		if (control)
			setenv("SURECRON_FAILPOINTS",
			       "store.durability_off:err", 1);
		pl_install();
		if (store_open(g.url, g.clock, &s, NULL) != 0)
			_exit(3);
		rc = c->op(s, &x);
		if (pl_crash(mode, seed) != 0)
			_exit(4);
		_exit(rc ? 2 : 0); /* no close: the machine is off */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s: the operation failed in the child (status %d)",
			 c->what, status);
	if (c->raw) {
		there = c->there(NULL, &x);
	} else {
		assert_int_equal(store_open(g.url, g.clock, &s, NULL), 0);
		there = c->there(s, &x);
		store_close(s);
	}
	gc_done(&g);
	return there;
}

/*
 * Issue 46: every commit the table calls durable survives a power cut
 * right after its call returned, whether the unsynced writes are dropped
 * or torn; and the same cut with the table ignored (every commit NORMAL)
 * forgets each one of them, which shows the cut can tell.
 */
static void durable_commits_survive_power_loss(void **st)
{
	struct gc t = {0};
	struct store *s = NULL;

	(void)st;
	TU_NEED_TEST_SEAMS();
	/* A migrated store, copied for each run (a migration per run cost
	 * a third of the test). */
	gc_init(&t);
	assert_int_equal(store_open(t.url, t.clock, &s, NULL), 0);
	store_close(s);
	for (int k = 0; k < STORE_COMMIT_N; k++) {
		bool found = false;

		if (store_durability[k].dur != STORE_DUR_ALWAYS)
			continue;
		for (size_t i = 0; i < PL_N_CASES; i++)
			found = found || pl_cases[i].commit == (enum store_commit)k;
		if (!found)
			fail_msg("durable commit %s has no power-loss case",
				 store_durability[k].name);
	}
	for (size_t i = 0; i < PL_N_CASES; i++) {
		const struct pl_case *c = &pl_cases[i];

		assert_int_equal(store_durability[c->commit].dur,
				 STORE_DUR_ALWAYS);
		unsigned seed = 7919u * (unsigned)(i + 1);

		if (!pl_case_run(c, t.path, PL_DROP, 0, false))
			fail_msg("%s: forgotten by a power cut", c->what);
		if (!pl_case_run(c, t.path, PL_TEAR, seed, false))
			fail_msg("%s: forgotten by a torn power cut (seed %u)",
				 c->what, seed);
		if (pl_case_run(c, t.path, PL_DROP, 0, true))
			fail_msg("%s: survived a power cut with the table "
				 "ignored: the cut cannot tell", c->what);
	}
	gc_done(&t);
	print_message("power loss: %zu durable operations survive; each is "
		      "lost with the table ignored\n", PL_N_CASES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			concurrent_durable_writes_all_succeed_and_share_syncs),
		cmocka_unit_test(each_lone_durable_write_is_synced),
		cmocka_unit_test(failed_sync_is_the_writes_error),
		cmocka_unit_test(durable_commits_survive_power_loss),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
