/*
 * daemon.c - `surecron run`: scheduler thread, worker threads, watcher
 * thread, signals forwarded by the CLI (docs/internals/daemon.md).
 *
 *   calling thread (scheduler)      watcher thread         N workers
 *   sched_tick at each due slot     SQLite: stat the db    claim -> orch_run_job
 *   sleeps until next slot          files every watch_ms   (own store handle,
 *   (timed condvar wait)            PG: store_wait         heartbeat in tick)
 *          |   enqueued: bump gen        | change: bump gen       ^
 *          +-------------------> d->gen, d->cond ----------------+
 *
 * Invariants:
 *   - nothing polls once a second: the scheduler sleeps until the next
 *     slot (at most SCHED_MAX_SLEEP_MS, for wall-clock jumps); an idle
 *     worker sleeps until store_job_next_due (a retry's due instant, or a
 *     lease expiry it must recover) or until gen moves;
 *   - a worker reads gen BEFORE it looks for work, so a wakeup between
 *     its look and its sleep is never lost;
 *   - each thread has its own store handle (store.h's threading rule);
 *   - the config is shared read-only behind a reference count: a reload
 *     swaps the pointer, a running job keeps the config it started with;
 *   - after stop, no new claim; a running job is released (not failed)
 *     when grace runs out, through its tick, before the run writes
 *     anything more (orchestrator.c's lost-lease invariant), so its
 *     attempt is not counted and the next start runs it again;
 *   - a store error never ends the daemon: the thread backs off and the
 *     next store call reconnects (PostgreSQL restarts).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "err.h"
#include "log.h"
#include "orchestrator.h"
#include "queue.h"
#include "scheduler.h"
#include "store.h"

#define WATCH_MS_DEFAULT 250
#define RECOVER_EVERY_MS ((int64_t)30 * 1000)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define LEAD_MS 50 /* slots are enqueued this much ahead (see tick) */
#define TICK_MS 100 /* how often a running job looks at the stop flag */
/* A worker claims a job this much before it is due and waits for the due
 * instant with the claim already committed, so the claim's transaction is
 * not part of the task's lateness. Small, because the job is held. */
#define CLAIM_AHEAD_MS 20

struct cfg_ref {
	struct config *cfg;
	int64_t *memo; /* sched_tick_memo's, one per schedule; scheduler
			  thread only */
	int refs;      /* under daemon.mu */
};

/* Wraps a loaded config (taken over) with one reference. NULL: no memory
 * (the config is freed). */
static struct cfg_ref *cfg_wrap(struct config *cfg)
{
	struct cfg_ref *r = calloc(1, sizeof(*r));
	size_t n = cfg->n_schedules ? cfg->n_schedules : 1;

	if (r)
		r->memo = malloc(n * sizeof(*r->memo));
	if (!r || !r->memo) {
		free(r);
		config_free(cfg);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		r->memo[i] = INT64_MIN;
	r->cfg = cfg;
	r->refs = 1;
	return r;
}

struct worker {
	struct daemon *d;
	int idx;
	pthread_t thread;
	bool started;
	char name[SC_WORKER_MAX];
};

struct daemon {
	char *config_path;
	struct sc_clock *clock;
	bool once;
	int64_t watch_ms;
	char *store_url;        /* fixed at start: a reload cannot move it */
	char db_path[1024];     /* SQLite file, "" for PostgreSQL */
	bool is_pg;
	struct sc_store *store; /* the scheduler thread's handle */

	pthread_mutex_t mu;
	pthread_cond_t cond;      /* workers and watcher: gen, stopping */
	pthread_cond_t main_cond; /* the scheduler thread: stop, reload, drain */
	uint64_t gen;
	bool stopping;
	bool reload;
	atomic_bool abort_runs;   /* grace over: release running jobs */
	int n_running;
	int n_failed;             /* runs that did not complete (--once) */
	struct cfg_ref *cur;

	struct worker *workers;
	int n_workers;
	pthread_t watcher;
	bool watcher_started;
};

/* ---- small helpers -------------------------------------------------------- */

static struct cfg_ref *cfg_get(struct daemon *d)
{
	pthread_mutex_lock(&d->mu);
	struct cfg_ref *r = d->cur;
	r->refs++;
	pthread_mutex_unlock(&d->mu);
	return r;
}

static void cfg_put(struct daemon *d, struct cfg_ref *r)
{
	bool last;

	pthread_mutex_lock(&d->mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&d->mu);
	if (last) {
		config_free(r->cfg);
		free(r->memo);
		free(r);
	}
}

/* Waits on cond until deadline (clock ns) unless pred-like state changed;
 * the caller holds d->mu. The wait uses CLOCK_MONOTONIC, so a wall-clock
 * jump never stretches it; the span is the clock's span in real time (a
 * test build's fast clock waits less). */
static void wait_until_ns(struct daemon *d, pthread_cond_t *c,
			  int64_t deadline_ns)
{
	int64_t delta = clock_real_delta_ns(d->clock,
					    deadline_ns - clock_now_ns(d->clock));
	struct timespec ts;

	if (delta <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + delta;
	ts.tv_sec = (time_t)(t / 1000000000);
	ts.tv_nsec = (long)(t % 1000000000);
	pthread_cond_timedwait(c, &d->mu, &ts);
}

static void bump(struct daemon *d)
{
	pthread_mutex_lock(&d->mu);
	d->gen++;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

static int64_t ms_to_ns(int64_t ms)
{
	if (ms >= INT64_MAX / 1000000)
		return INT64_MAX / 2;
	return ms * 1000000;
}

static const char *iso(int64_t ms, char out[CLOCK_ISO_MAX])
{
	return clock_format_utc(ms, out);
}

/* ---- recovery ------------------------------------------------------------- */

/*
 * Recovers stalled jobs and sends the lost-slot alert for each one that
 * died of it (orch_run_job only alerts for runs that failed). The jobs a
 * recovery killed are found by their "lost" rows with error class
 * "stalled" written from t0 on. Returns the number recovered (< 0: error).
 */
static int recover(struct sc_store *s, struct daemon *d,
		   const struct config *cfg)
{
	struct sc_err e = {0};
	int64_t t0 = sc_clock_now_ms(d->clock);
	int n = 0;
	int rc = queue_recover(s, QUEUE_STALL_LIMIT, &n, &e);

	if (rc) {
		SC_LOG(SC_LOG_WARN, "daemon", "event=recover code=%s msg=\"%s\"",
		       sc_strerror(rc), e.msg);
		return rc;
	}
	if (n == 0)
		return 0;
	SC_LOG(SC_LOG_WARN, "daemon", "event=recovered jobs=%d", n);
	struct ledger_filter f = {.since_ms = INT64_MIN, .until_ms = INT64_MAX,
				  .outcome = LEDGER_LOST};
	struct ledger_row *rows = NULL;
	size_t nr = 0;
	if (ledger_query(s, &f, &rows, &nr, &e) != 0)
		return n;
	struct orch_ctx ctx = {.store = s, .clock = d->clock, .config = cfg};
	for (size_t i = 0; i < nr; i++) {
		if (strcmp(rows[i].error_class, "stalled") != 0 ||
		    rows[i].finished_ms < t0)
			continue;
		struct sc_err why = {0};
		sc_err_set(&why, SC_ETIMEDOUT, "%s",
			   rows[i].error_msg ? rows[i].error_msg : "stalled");
		orch_send_lost_alert(&ctx, rows[i].schedule, rows[i].slot_ms,
				     rows[i].attempt, &why, NULL);
	}
	ledger_rows_free(rows, nr);
	return n;
}

/* ---- running one job ------------------------------------------------------ */

struct keeper {
	struct daemon *d;
	struct sc_store *store;
	struct store_job job;   /* the ticket; heartbeats move its expiry */
	int64_t lease_ms;
	int64_t last_hb_mono;
	bool released, lost;
};

/* The run's tick: keeps the lease (every third of it) and, once grace is
 * over, gives the job back and stops the run. */
static int keeper_tick(void *ud)
{
	struct keeper *k = ud;
	struct sc_err e = {0};

	if (k->released || k->lost)
		return SC_ECANCELED;
	if (atomic_load(&k->d->abort_runs)) {
		int rc = queue_release(k->store, &k->job, &e);
		k->released = true;
		SC_LOG(rc ? SC_LOG_WARN : SC_LOG_INFO, "daemon",
		       "event=released job=%lld schedule=%s attempt=%d%s",
		       (long long)k->job.id, k->job.schedule, k->job.attempts,
		       rc ? " outcome=release-failed" : "");
		return SC_ECANCELED;
	}
	int64_t mono = clock_mono_ms();
	/* The lease runs on the daemon's clock; the heartbeat period is
	 * measured in real time. */
	if (mono - k->last_hb_mono <
	    clock_real_delta_ms(k->d->clock, k->lease_ms / 3))
		return 0;
	int rc = queue_heartbeat(k->store, &k->job, k->lease_ms, &e);
	if (rc == SC_ELEASE) {
		k->lost = true;
		SC_LOG(SC_LOG_ERROR, "daemon",
		       "event=lease-lost job=%lld schedule=%s",
		       (long long)k->job.id, k->job.schedule);
		return rc;
	}
	if (rc)
		SC_LOG(SC_LOG_WARN, "daemon",
		       "event=heartbeat job=%lld code=%s", (long long)k->job.id,
		       sc_strerror(rc));
	else
		k->last_hb_mono = mono;
	return 0;
}

/*
 * A finish lost to a connection error: the outcome is known, so record it
 * again once the store answers. SC_ELEASE then means the first try did
 * commit (or another worker took over): nothing left to do.
 */
static int refinish(struct daemon *d, struct sc_store *s,
		    const struct config *cfg, const struct store_job *job,
		    struct orch_job_result *res)
{
	int64_t backoff = BACKOFF_MIN_MS;
	int rc = SC_EIO;

	for (int i = 0; i < 20 && rc == SC_EIO; i++) {
		struct sc_err e = {0};
		struct timespec ts = {.tv_sec = backoff / 1000,
				      .tv_nsec = (backoff % 1000) * 1000000};
		nanosleep(&ts, NULL);
		if (res->run_err.code == 0) {
			rc = queue_complete(s, job, res->rep.details_json, &e);
			res->completed = rc == 0;
		} else {
			rc = queue_fail(s, job, res->error_class, &res->run_err,
					res->rep.details_json, &res->next_ms,
					&res->dead, &e);
			if (rc == 0 && res->dead) {
				struct orch_ctx ctx = {.store = s,
						       .clock = d->clock,
						       .config = cfg};
				orch_send_lost_alert(&ctx, job->schedule,
						     job->slot_ms, job->attempts,
						     &res->run_err,
						     &res->n_alerts_sent);
			}
		}
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
						       : backoff * 2;
	}
	if (rc == SC_ELEASE) {
		res->completed = res->run_err.code == 0;
		return 0;
	}
	return rc;
}

static void run_job(struct daemon *d, struct sc_store *s, struct cfg_ref *cr,
		    const struct store_job *job)
{
	struct keeper k = {.d = d, .store = s, .job = *job,
			   .lease_ms = cr->cfg->lease_ms,
			   .last_hb_mono = clock_mono_ms()};
	struct orch_ctx ctx = {.store = s, .clock = d->clock,
			       .config = cr->cfg, .tick = keeper_tick,
			       .tick_ud = &k, .tick_ms = TICK_MS};
	struct orch_job_result res;
	struct sc_err e = {0};
	char slot[CLOCK_ISO_MAX];
	/* Claimed up to CLAIM_AHEAD_MS early: never start before due. */
	clock_sleep_until_ns(d->clock, ms_to_ns(job->run_at_ms));
	int64_t t0 = clock_mono_ms();
	/* How late the run starts after the job's due instant, in us. */
	int64_t late_us = (clock_now_ns(d->clock) - job->run_at_ms * 1000000) /
			  1000;

	if (k.lease_ms <= 0)
		k.lease_ms = QUEUE_LEASE_MS;
	pthread_mutex_lock(&d->mu);
	d->n_running++;
	pthread_mutex_unlock(&d->mu);
	SC_LOG(SC_LOG_INFO, "daemon",
	       "event=start schedule=%s slot=%s job=%lld attempt=%d "
	       "late_us=%lld", job->schedule, iso(job->slot_ms, slot),
	       (long long)job->id, job->attempts, (long long)late_us);

	int rc = orch_run_job(&ctx, job, &res, &e);
	if (rc == SC_EIO && !k.released && !k.lost)
		rc = refinish(d, s, cr->cfg, job, &res);
	const char *outcome;
	if (k.released)
		outcome = "released";
	else if (rc == SC_ELEASE || k.lost)
		outcome = "lease-lost";
	else if (rc)
		outcome = "unrecorded";
	else if (res.completed)
		outcome = "success";
	else if (res.dead)
		outcome = "lost";
	else
		outcome = "failed";
	int64_t dur = clock_mono_ms() - t0;
	/* How late its first task started (the program exec'd), in us. */
	char task_late[24] = "-";
	if (res.rep.started_ns)
		snprintf(task_late, sizeof(task_late), "%lld",
			 (long long)((res.rep.started_ns -
				      job->run_at_ms * 1000000) / 1000));
	char next[CLOCK_ISO_MAX] = "-";
	if (!rc && !res.completed && !res.dead && res.next_ms != INT64_MAX)
		iso(res.next_ms, next);
	SC_LOG(res.completed || k.released ? SC_LOG_INFO : SC_LOG_ERROR,
	       "daemon",
	       "event=finish schedule=%s slot=%s job=%lld attempt=%d "
	       "outcome=%s duration_ms=%lld task_late_us=%s next=%s code=%s",
	       job->schedule, slot, (long long)job->id, job->attempts, outcome,
	       (long long)dur, task_late, next,
	       rc ? sc_strerror(rc)
		  : (res.run_err.code ? sc_strerror(res.run_err.code) : "ok"));
	bool failed = !k.released && (rc || !res.completed);
	orch_job_result_dispose(&res);

	pthread_mutex_lock(&d->mu);
	d->n_running--;
	if (failed)
		d->n_failed++;
	pthread_cond_broadcast(&d->main_cond);
	pthread_mutex_unlock(&d->mu);
}

/* ---- workers -------------------------------------------------------------- */

static int open_store(struct daemon *d, struct sc_store **out,
		      struct sc_err *err)
{
	return store_open(d->store_url, d->clock, out, err);
}

/* Sleeps until gen moves, stop, or the deadline (clock ms). */
static void idle(struct daemon *d, uint64_t seen, int64_t deadline_ms)
{
	pthread_mutex_lock(&d->mu);
	if (!d->stopping && d->gen == seen)
		wait_until_ns(d, &d->cond, ms_to_ns(deadline_ms));
	pthread_mutex_unlock(&d->mu);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct daemon *d = w->d;
	struct sc_store *s = NULL;
	int64_t backoff = BACKOFF_MIN_MS;

	for (;;) {
		struct sc_err e = {0};
		uint64_t seen;
		bool stop;

		pthread_mutex_lock(&d->mu);
		stop = d->stopping;
		seen = d->gen;
		pthread_mutex_unlock(&d->mu);
		if (stop)
			break;
		int64_t now = sc_clock_now_ms(d->clock);
		if (!s && open_store(d, &s, &e) != 0) {
			SC_LOG(SC_LOG_WARN, "daemon",
			       "event=store-open worker=%d code=%s msg=\"%s\"",
			       w->idx, sc_strerror(e.code), e.msg);
			s = NULL;
			idle(d, seen + 1, now + backoff);
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
							       : backoff * 2;
			continue;
		}
		struct cfg_ref *cr = cfg_get(d);
		struct store_job job;
		size_t n = 0;
		int rc = queue_claim_ahead(s, w->name, cr->cfg->lease_ms,
					   CLAIM_AHEAD_MS, &job, 1, &n, &e);
		if (rc == 0 && n == 1) {
			run_job(d, s, cr, &job);
			cfg_put(d, cr);
			backoff = BACKOFF_MIN_MS;
			continue;
		}
		int64_t next = INT64_MAX;
		if (rc == 0)
			rc = queue_next_due(s, &next, &e);
		if (rc == 0 && next <= now) {
			/* An expired lease (or a job another claimer took in
			 * the meantime): recover, then look again. */
			if (recover(s, d, cr->cfg) > 0) {
				cfg_put(d, cr);
				continue;
			}
			next = now + d->watch_ms;
		}
		cfg_put(d, cr);
		if (rc) {
			SC_LOG(SC_LOG_WARN, "daemon",
			       "event=store-error worker=%d code=%s msg=\"%s\"",
			       w->idx, sc_strerror(rc), e.msg);
			idle(d, seen + 1, now + backoff);
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
							       : backoff * 2;
			continue;
		}
		backoff = BACKOFF_MIN_MS;
		if (next > now + SCHED_MAX_SLEEP_MS)
			next = now + SCHED_MAX_SLEEP_MS;
		/* Wake CLAIM_AHEAD_MS early for a job; the claim just made
		 * would have taken one due that soon, so a `next` that near is
		 * a lease expiry, which is not claimable early. */
		idle(d, seen, next - CLAIM_AHEAD_MS > now ? next - CLAIM_AHEAD_MS
							   : next);
	}
	store_close(s);
	return NULL;
}

/* ---- watcher: writes by other processes ----------------------------------- */

struct fstamp {
	int64_t mtime_ns, size;
};

static void stamp(const char *path, struct fstamp *out)
{
	struct stat st;

	memset(out, 0, sizeof(*out));
	if (stat(path, &st) == 0) {
		out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
				st.st_mtim.tv_nsec;
		out->size = (int64_t)st.st_size;
	}
}

static void *watcher_main(void *arg)
{
	struct daemon *d = arg;
	struct sc_store *s = NULL;
	char wal[1100];
	struct fstamp a0, b0, a1, b1;

	snprintf(wal, sizeof(wal), "%s-wal", d->db_path);
	/* No baseline from here: the first look always wakes the workers.
	 * A write by another process between a worker's first look for
	 * work and this thread's start would otherwise already be in the
	 * baseline, and wait for the worker's next timeout (up to a
	 * minute) instead of the next watch_ms. */
	memset(&a0, 0, sizeof(a0));
	memset(&b0, 0, sizeof(b0));
	for (;;) {
		pthread_mutex_lock(&d->mu);
		bool stop = d->stopping;
		if (!stop && !d->is_pg)
			wait_until_ns(d, &d->cond,
				      clock_now_ns(d->clock) +
					      ms_to_ns(d->watch_ms));
		stop = d->stopping;
		pthread_mutex_unlock(&d->mu);
		if (stop)
			break;
		if (d->is_pg) {
			/* LISTEN/NOTIFY: store_wait returns on a notice, on
			 * timeout, or (after waiting) on a lost connection,
			 * which the next call reconnects. */
			struct sc_err e = {0};
			if (!s && open_store(d, &s, &e) != 0) {
				s = NULL;
				struct timespec ts = {.tv_sec = 1};
				nanosleep(&ts, NULL);
				continue;
			}
			store_wait(s, d->watch_ms * 4, &e);
			bump(d);
			continue;
		}
		stamp(d->db_path, &a1);
		stamp(wal, &b1);
		if (a0.mtime_ns != a1.mtime_ns || a0.size != a1.size ||
		    b0.mtime_ns != b1.mtime_ns || b0.size != b1.size) {
			a0 = a1;
			b0 = b1;
			bump(d);
		}
	}
	store_close(s);
	return NULL;
}

/* ---- the daemon ----------------------------------------------------------- */

static void set_db_path(struct daemon *d)
{
	const char *u = d->store_url;

	d->is_pg = strncmp(u, "postgresql://", 13) == 0 ||
		   strncmp(u, "postgres://", 11) == 0;
	if (d->is_pg)
		return;
	if (strncmp(u, "sqlite://", 9) == 0)
		u += 9;
	else if (strncmp(u, "sqlite:", 7) == 0)
		u += 7;
	snprintf(d->db_path, sizeof(d->db_path), "%s", u);
}

int daemon_new(const struct daemon_opts *o, struct daemon **out,
	       struct sc_err *err)
{
	struct daemon *d = calloc(1, sizeof(*d));
	struct config *cfg = NULL;
	int rc;

	if (!d)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	d->clock = o->clock ? o->clock : sc_clock_real();
	d->once = o->once;
	d->watch_ms = o->watch_ms > 0 ? o->watch_ms : WATCH_MS_DEFAULT;
	d->config_path = strdup(o->config_path);
	if (!d->config_path) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto fail;
	}
	rc = config_load(o->config_path, &cfg, err);
	if (rc || !cfg) {
		rc = rc ? rc : SC_ECONFIG;
		goto fail;
	}
	d->store_url = strdup(cfg->store_url);
	if (!d->store_url) {
		config_free(cfg);
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto fail;
	}
	d->cur = cfg_wrap(cfg);
	if (!d->cur) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto fail;
	}
	set_db_path(d);
	rc = open_store(d, &d->store, err);
	if (rc)
		goto fail;
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_cond_init(&d->main_cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = d;
	return 0;
fail:
	if (d->cur) {
		config_free(d->cur->cfg);
		free(d->cur->memo);
		free(d->cur);
	}
	free(d->store_url);
	free(d->config_path);
	free(d);
	return rc;
}

void daemon_stop(struct daemon *d)
{
	pthread_mutex_lock(&d->mu);
	d->stopping = true;
	pthread_cond_broadcast(&d->cond);
	pthread_cond_broadcast(&d->main_cond);
	pthread_mutex_unlock(&d->mu);
}

void daemon_reload(struct daemon *d)
{
	pthread_mutex_lock(&d->mu);
	d->reload = true;
	pthread_cond_broadcast(&d->main_cond);
	pthread_mutex_unlock(&d->mu);
}

/* Loads the file again; on success swaps it in. Scheduler thread only. */
static void do_reload(struct daemon *d)
{
	struct config *cfg = NULL;
	struct sc_err e = {0};
	char msg[SC_ERR_MSG_MAX + 8];

	if (config_load(d->config_path, &cfg, &e) != 0) {
		SC_LOG(SC_LOG_ERROR, "daemon",
		       "event=reload outcome=refused msg=%s",
		       log_quote(msg, sizeof(msg), e.msg));
		return;
	}
	if (strcmp(cfg->store_url, d->store_url) != 0)
		SC_LOG(SC_LOG_WARN, "daemon", "event=reload msg=\"store "
		       "changed: takes effect at the next start\"");
	size_t n_sched = cfg->n_schedules;
	struct cfg_ref *r = cfg_wrap(cfg);
	if (!r) {
		SC_LOG(SC_LOG_ERROR, "daemon",
		       "event=reload outcome=refused msg=\"out of memory\"");
		return;
	}
	pthread_mutex_lock(&d->mu);
	struct cfg_ref *old = d->cur;
	d->cur = r;
	pthread_mutex_unlock(&d->mu);
	cfg_put(d, old);
	SC_LOG(SC_LOG_INFO, "daemon", "event=reload outcome=ok schedules=%zu",
	       n_sched);
	bump(d);
}

/*
 * One scheduler pass as of now + lead_ms; returns the next slot (clock
 * ms). With a lead, a slot is enqueued a moment BEFORE its instant, due at
 * the instant itself (run_at = slot): the scheduler's transaction is then
 * off the critical path, and a worker sleeping until queue_next_due claims
 * the job right at the slot's instant.
 */
static int64_t tick(struct daemon *d, int64_t lead_ms)
{
	struct cfg_ref *cr = cfg_get(d);
	struct sched_result r;
	struct sc_err e = {0};
	int64_t now = sc_clock_now_ms(d->clock) + lead_ms;
	int rc = sched_tick_memo(d->store, cr->cfg, now, cr->memo, NULL, &r,
				 &e);

	cfg_put(d, cr);
	if (rc) {
		SC_LOG(SC_LOG_WARN, "daemon",
		       "event=schedule-error errors=%zu code=%s msg=\"%s\"",
		       r.n_errors, sc_strerror(rc), e.msg);
		if (r.n_errors == 0 || r.n_errors == r.n_schedules) {
			/* nothing worked (store down): try again soon */
			return now + BACKOFF_MAX_MS;
		}
	}
	if (r.n_enqueued || r.n_missed)
		SC_LOG(r.n_missed ? SC_LOG_WARN : SC_LOG_DEBUG, "daemon",
		       "event=scheduled enqueued=%zu missed=%zu",
		       r.n_enqueued, r.n_missed);
	if (r.n_enqueued)
		bump(d);
	return r.next_ms;
}

/* --once: every due job, on this thread, then back. */
static int run_once(struct daemon *d)
{
	struct cfg_ref *cr = cfg_get(d);
	char name[SC_WORKER_MAX];

	snprintf(name, sizeof(name), "once-%ld", (long)getpid());
	recover(d->store, d, cr->cfg);
	cfg_put(d, cr);
	tick(d, 0);
	for (;;) {
		struct store_job job;
		struct sc_err e = {0};
		size_t n = 0;

		cr = cfg_get(d);
		int rc = queue_claim(d->store, name, cr->cfg->lease_ms, &job, 1,
				     &n, &e);
		if (rc || n == 0) {
			cfg_put(d, cr);
			if (rc) {
				SC_LOG(SC_LOG_ERROR, "daemon",
				       "event=claim code=%s msg=\"%s\"",
				       sc_strerror(rc), e.msg);
				return 1;
			}
			break;
		}
		run_job(d, d->store, cr, &job);
		cfg_put(d, cr);
	}
	return d->n_failed ? 1 : 0;
}

static void stop_threads(struct daemon *d)
{
	for (int i = 0; i < d->n_workers; i++)
		if (d->workers[i].started)
			pthread_join(d->workers[i].thread, NULL);
	if (d->watcher_started)
		pthread_join(d->watcher, NULL);
	d->watcher_started = false;
	d->n_workers = 0;
}

int daemon_run(struct daemon *d, struct sc_err *err)
{
	struct cfg_ref *cr = cfg_get(d);
	int conc = cr->cfg->concurrency > 0 ? cr->cfg->concurrency : 1;
	int64_t grace = cr->cfg->grace_ms;
	char host[64] = "host";

	SC_LOG(SC_LOG_INFO, "daemon",
	       "event=started backend=%s schedules=%zu concurrency=%d once=%d",
	       store_backend_name(d->store), cr->cfg->n_schedules, conc,
	       (int)d->once);
	if (d->once) {
		cfg_put(d, cr);
		return run_once(d);
	}
	recover(d->store, d, cr->cfg);
	cfg_put(d, cr);

	gethostname(host, sizeof(host) - 1);
	d->workers = calloc((size_t)conc, sizeof(*d->workers));
	if (!d->workers)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	d->n_workers = conc;
	for (int i = 0; i < conc; i++) {
		struct worker *w = &d->workers[i];
		w->d = d;
		w->idx = i;
		snprintf(w->name, sizeof(w->name), "%.32s:%ld:%d", host,
			 (long)getpid(), i);
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			daemon_stop(d);
			stop_threads(d);
			return sc_err_set(err, SC_ENOMEM, "cannot start a worker");
		}
		w->started = true;
	}
	if (pthread_create(&d->watcher, NULL, watcher_main, d) == 0)
		d->watcher_started = true;

	int64_t last_recover = clock_mono_ms();
	for (;;) {
		int64_t next = tick(d, LEAD_MS);
		int64_t now = sc_clock_now_ms(d->clock);
		if (next != INT64_MAX)
			next -= LEAD_MS;
		if (clock_mono_ms() - last_recover >= RECOVER_EVERY_MS) {
			cr = cfg_get(d);
			recover(d->store, d, cr->cfg);
			cfg_put(d, cr);
			last_recover = clock_mono_ms();
		}
		if (next > now + SCHED_MAX_SLEEP_MS)
			next = now + SCHED_MAX_SLEEP_MS;
		if (next > now + RECOVER_EVERY_MS)
			next = now + RECOVER_EVERY_MS;
		pthread_mutex_lock(&d->mu);
		if (!d->stopping && !d->reload)
			wait_until_ns(d, &d->main_cond, ms_to_ns(next));
		bool stop = d->stopping, reload = d->reload;
		d->reload = false;
		pthread_mutex_unlock(&d->mu);
		if (stop)
			break;
		if (reload)
			do_reload(d);
	}

	/* Stop: no new claims (workers saw stopping); give running slots the
	 * grace, then release them through their tick. */
	SC_LOG(SC_LOG_INFO, "daemon", "event=stopping grace_ms=%lld",
	       (long long)grace);
	int64_t deadline = clock_mono_ms() +
			   clock_real_delta_ms(d->clock, grace);
	pthread_mutex_lock(&d->mu);
	while (d->n_running > 0 && clock_mono_ms() < deadline) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t t = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		int64_t until = deadline < t + 100 ? deadline : t + 100;
		ts.tv_sec = (time_t)(until / 1000);
		ts.tv_nsec = (long)(until % 1000) * 1000000;
		pthread_cond_timedwait(&d->main_cond, &d->mu, &ts);
	}
	int left = d->n_running;
	pthread_mutex_unlock(&d->mu);
	if (left > 0) {
		SC_LOG(SC_LOG_WARN, "daemon",
		       "event=grace-over running=%d msg=\"releasing\"", left);
		atomic_store(&d->abort_runs, true);
	}
	stop_threads(d);
	SC_LOG(SC_LOG_INFO, "daemon", "event=stopped");
	return 0;
}

void daemon_free(struct daemon *d)
{
	if (!d)
		return;
	stop_threads(d);
	free(d->workers);
	store_close(d->store);
	if (d->cur) {
		config_free(d->cur->cfg);
		free(d->cur->memo);
		free(d->cur);
	}
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cond);
	pthread_cond_destroy(&d->main_cond);
	free(d->store_url);
	free(d->config_path);
	free(d);
}
