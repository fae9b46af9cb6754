/*
 * daemon.c - `surecron run`: scheduler thread, worker threads, watcher
 * thread, alerter thread, pruner thread, signals forwarded by the CLI
 * (docs/internals/daemon.md).
 *
 *   calling thread (scheduler)      watcher thread         N workers
 *   scheduler_plan_tick at a slot   store_wait (SQLite:    claim ->
 *   sleeps until next slot          the db files moved;    worker_run_job
 *   (timed condvar wait)            PG: LISTEN/NOTIFY)     (own store handle,
 *                                                          lease kept)
 *          |   enqueued: bump gen        | change: bump gen       ^
 *          +-------------------> d->gen, d->cond ----------------+
 *
 * Invariants:
 *   - each loaded config has its scheduler plan (scheduler.h), built at
 *     its first tick from one store read and rebuilt after a reload (a
 *     new cfg_ref); a tick touches only the due schedules, an idle tick
 *     no store at all, so 100,000 schedules cost what is due;
 *   - nothing polls once a second: the scheduler sleeps until the next
 *     slot (at most SCHED_MAX_SLEEP_MS, for wall-clock jumps); an idle
 *     worker sleeps until store_job_next_due (a retry's due instant, or a
 *     lease expiry it must recover) or until gen moves;
 *   - a worker reads gen BEFORE it looks for work, so a wakeup between
 *     its look and its sleep is never lost;
 *   - a job claimed ahead (CLAIM_AHEAD_MS) is run at once, its claim
 *     committed, with its due instant as the run's not_before_ns
 *     (worker.h): the store reads and the hand-over of the first task to
 *     a reaper happen before the instant, and nothing of the run starts
 *     before it (the reaper starts the program then, proc.h);
 *   - each thread has its own store handle (store.h's threading rule);
 *   - the alerter thread runs alert_tick every ALERT_TICK_MS of real time
 *     (the one exception to "nothing polls": a failed alert copy is
 *     retried on its own backoff, with no event to wake on), so a slow or
 *     dead alert target never holds up a worker or the scheduler; a
 *     worker that loses a slot sends its alert at once itself;
 *   - the daily prune (prune.h) runs on a thread of its own with its own
 *     store handle, so a prune of minutes never delays the alerter's
 *     timing checks and retries; it stops between two batches;
 *   - the config is shared read-only behind a reference count: a reload
 *     swaps the pointer, a running job keeps the config it started with
 *     (its lease and task settings); the next claim takes the new one's
 *     worker.lease, and a stop reads worker.grace from the current one;
 *   - the store is fixed at start: a reload never moves it (the new
 *     config's store_url is overwritten with the running one, and a
 *     warning names the setting), so cur->cfg->store_url == store_url;
 *   - n_target (under mu) is worker.concurrency: a worker whose idx is
 *     >= n_target leaves at the top of its loop, in the same locked look
 *     that reads gen and stopping, so it never leaves holding a job and a
 *     running job is never cut short by a reload; only the scheduler
 *     thread starts and joins workers (a reload raising concurrency
 *     starts new ones, each with its own store handle);
 *   - after stop, no new claim; a running job is released (not failed)
 *     when grace runs out, through its tick (worker.c), before the run
 *     writes anything more (orchestrator.c's lost-lease invariant), so
 *     its attempt is not counted and the next start runs it again;
 *   - a store whose schema is newer than this binary's (SC_EVERSION,
 *     another node migrated it) is the one store error that ends the
 *     daemon: logged once, a stop as on SIGTERM, daemon_run returns
 *     SC_EVERSION (issue 42: an older node takes no more jobs);
 *   - any other store error never ends the daemon: the thread backs off
 *     (real time, BACKOFF_MIN_MS doubling to BACKOFF_MAX_MS, a wakeup of gen
 *     does not cut it short; only stop does) and the next store call
 *     reconnects (PostgreSQL restarts);
 *   - a store outage is logged once when it begins, then at most once per
 *     OUTAGE_LOG_EVERY_MS while it lasts, then once when it ends, with its
 *     duration: the outage is one daemon-wide state (under mu) that begins
 *     at the first failing store call of any thread and ends when every
 *     thread that saw a failure has had a store call succeed since;
 *   - the external heartbeat (heartbeat.h) is told "alive" by the
 *     scheduler loop only, after a tick the store answered while no
 *     store outage is on (n_failing == 0) and no store call of any
 *     thread is stalled (store_stalled, store.h), and systemd's
 *     watchdog (sdnotify.h) is pinged by the scheduler loop only: a stuck
 *     scheduler thread stops both. So the loop never sleeps longer than a
 *     quarter of the watchdog interval nor half the heartbeat period
 *     (loop_cap_ms), and a watchdog ping goes out at most every quarter
 *     interval, so two are never more than half the interval apart;
 *   - slot pings (start, delivered, lost) are queued from the workers'
 *     slot_event hook and sent by the heartbeat's own thread: a slow or
 *     dead monitor never delays a run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alert.h"
#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "err.h"
#include "failpoint.h"
#include "heartbeat.h"
#include "history.h"
#include "log.h"
#include "prune.h"
#include "report.h"
#include "queue.h"
#include "scheduler.h"
#include "metrics.h"
#include "sdnotify.h"
#include "status_socket.h"
#include "web/web.h"
#include "store.h"
#include "thread.h"
#include "worker.h"

#define WATCH_MS_DEFAULT 250
#define RECOVER_EVERY_MS ((int64_t)30 * 1000)
/* Store-error backoff, real time: 0.1 s doubling to the cap. The cap is
 * how long a daemon may take to notice that the store is back (each
 * thread tries once per cap at worst); docs/operations.md states it. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* While an outage lasts, one line per this much real time at most. */
#define OUTAGE_LOG_EVERY_MS ((int64_t)30 * 1000)
/* /healthz says the loop is stuck past this (real ms): its longest sleep
 * (RECOVER_EVERY_MS) twice, and a slow store pass. */
#define LOOP_STALE_MS (2 * RECOVER_EVERY_MS + 15000)
#define LEAD_MS 50 /* slots are enqueued this much ahead (see tick) */
/* A step of the wall clock it keeps this long (monotonic time) is taken
 * as the new time (docs/operations.md, "Clock steps"); how far it may
 * wander before it counts as stepped is worker.clock_tolerance. */
#define CLOCK_ACCEPT_MS ((int64_t)60 * 1000)
/* How often the database server's clock is read (PostgreSQL). */
#define SERVER_CLOCK_EVERY_MS ((int64_t)10 * 1000)
/* A worker claims a job this much before it is due and waits for the due
 * instant with the claim already committed, so the claim's transaction is
 * not part of the task's lateness. Small, because the job is held. */
#define CLAIM_AHEAD_MS 20
/* The runner's exhaustion (issue 42): a worker whose job was given back
 * for it holds this long (clock ms), doubling while its runs keep meeting
 * it, and the job is due then; the exhaustion is over once a run could
 * start and none was given back for RUNNER_QUIET_MS. */
#define RUNNER_BACKOFF_MIN_MS 1000
#define RUNNER_BACKOFF_MAX_MS 30000
#define RUNNER_QUIET_MS 5000

struct cfg_ref {
	struct config *cfg;
	struct sched_plan *plan; /* built at this config's first tick (one
				    bulk read); NULL until then or while the
				    store fails; scheduler thread only */
	int refs;      /* under daemon.mu */
	uint64_t id;   /* unique per wrap, never reused: a store handle's
			  overlap rule is set again only when it changes */
	/* One provider per auth block, shared by this config's runs
	 * (daemon_auth.c); n_auths 0: every run makes its own. */
	struct http_auth **auths;
	size_t n_auths;
	struct store_known *known; /* the schedules the claims may take,
				      built once and shared by every
				      handle (issue 45); NULL: each claim
				      handle builds its own (and says why
				      it cannot) */
	/* The crons in force (history.h, issue 43), scheduler thread only:
	 * which schedules a reload changed (NULL: all, a start), the notes
	 * computed before the plan's first tick, written then, and again
	 * at the next ticks while the store refuses them. */
	bool *hist_want;
	bool hist_planned;
	bool hist_warned;  /* the write's failure was logged */
	struct history_notes hist;
};

/* Wraps a loaded config (taken over) with one reference. NULL: no memory
 * (the config is freed). */
static struct cfg_ref *cfg_wrap(struct daemon_tokens *tokens,
				struct config *cfg)
{
	struct cfg_ref *r = calloc(1, sizeof(*r));

	if (!r) {
		config_free(cfg);
		return NULL;
	}
	static _Atomic uint64_t next_id;

	r->cfg = cfg;
	r->refs = 1;
	r->id = atomic_fetch_add(&next_id, 1) + 1;
	if (queue_known_new(cfg, &r->known, NULL) != 0)
		r->known = NULL;
	r->n_auths = daemon_auths_new(cfg, tokens, &r->auths);
	return r;
}

static void cfg_ref_free(struct cfg_ref *r)
{
	if (!r)
		return;
	/* The plan and the notes borrow the config: they go first. */
	scheduler_plan_free(r->plan);
	store_known_free(r->known);
	daemon_auths_free(r->auths, r->n_auths);
	history_notes_dispose(&r->hist);
	free(r->hist_want);
	config_free(r->cfg);
	free(r);
}

/* One worker thread. The struct outlives the thread: the scheduler thread
 * joins a worker that left and may start it again on a later reload. */
struct worker {
	struct daemon *d;
	int idx;
	pthread_t thread;
	bool started;   /* scheduler thread only: joinable */
	bool exited;    /* under daemon.mu: the thread left its loop */
	char name[STORE_WORKER_MAX];
	/* The runner's exhaustion met by this worker's runs (its thread
	 * only): the next give-back's backoff (0: the minimum) and the
	 * clock ms before which it claims nothing. */
	int64_t runner_backoff_ms;
	int64_t runner_hold_ms;
};

struct daemon {
	char *config_path;
	struct sc_clock *clock;
	struct sc_clock *own_clock; /* the trusted clock made here, or NULL */
	const struct sc_clock *wall; /* the clock it reads the wall through */
	/* scheduler thread only (check_server_clock): the store server's */
	int64_t server_mono_ms;  /* when it was last read (0: never) */
	int64_t wall_offset_ms;  /* wall less the server's, last measured */
	int64_t tolerance_ms;    /* worker.clock_tolerance in force */
	bool no_server_clock;    /* the store has none (SQLite) */
	bool server_ref;         /* it answered: it is the reference */
	bool wall_skewed;        /* the wall clock disagrees with it */
	bool has_wall_offset;    /* wall_offset_ms was measured */
	bool once;
	int64_t watch_ms;
	char *store_url;        /* fixed at start: a reload cannot move it */
	struct daemon_tokens *tokens; /* the providers' token cache, or NULL */
	struct store *store; /* the scheduler thread's handle */

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

	struct worker **workers; /* [n_slots]; scheduler thread only */
	int n_slots;
	int n_target;            /* under mu: worker.concurrency in force */
	pthread_t watcher;
	pthread_t alerter;
	pthread_t pruner;        /* the daily prune (retention) */
	bool watcher_started;
	bool alerter_started;
	bool pruner_started;
	char host[64];           /* for worker names */
	int64_t node_started_ms; /* this daemon's start, in its node id */
	/* Config skew seen by this node (issue 43): the scheduler thread's
	 * alone (skew_check). */
	struct skew_wait *skew;
	size_t n_skew;
	struct heartbeat *hb;    /* external pings; reconfigured on reload */
	int64_t wd_ms;           /* systemd watchdog interval, 0: none */
	int64_t wd_last_mono_ms; /* the last WATCHDOG=1 */
	bool notify_failed;      /* a notify send failed: warned once */
	bool runner_out;         /* under mu: see runner_since_ms below */
	bool runner_raising;     /* under mu: a worker raises its alert */

	/* The store outage (under mu): begun when n_failing went 0 -> 1,
	 * ended when it is back at 0. */
	int n_failing;            /* threads whose last store call failed */
	int64_t outage_mono_ms;   /* when it began */
	int64_t outage_log_mono_ms; /* its last line */
	uint64_t outage_errors;   /* failed store calls since it began */

	/* The web surface (issue 16), NULL without http.listen; its
	 * /healthz reads when the scheduler loop last ran. */
	struct web *web;
	_Atomic int64_t loop_mono_ms; /* clock_mono_ms at the loop's top */
	/* `status_socket:` (issue 15), NULL without it. */
	struct status_socket *ssock;

	/* The runner's exhaustion (issue 42), under mu: begun by the first
	 * job given back for it, ended by a run the runner could start once
	 * no job was given back for RUNNER_QUIET_MS (so that runs that pass
	 * between failing ones do not end it, and raise it again, each
	 * time); runner_out says it lasts. Each worker holds on its own
	 * (struct worker). */
	int64_t runner_since_ms;   /* clock ms it began */
	int64_t runner_last_ms;    /* clock ms of the last give-back */
	int64_t runner_alert;      /* its alert's id; 0: not raised (yet) */
	char runner_why[SC_ERR_MSG_MAX]; /* the alert's message */
	/* The store's schema is newer than this binary's (issue 42): the
	 * first thread to learn it says so, stops the daemon, and
	 * daemon_run returns SC_EVERSION with this message. Under mu. */
	bool schema_newer;
	char schema_msg[SC_ERR_MSG_MAX];
};

/* ---- small helpers -------------------------------------------------------- */

static struct cfg_ref *cfg_get(struct daemon *d);
static void cfg_put(struct daemon *d, struct cfg_ref *r);

/* The web server's view of the config (web_opts.cfg_hold/_release). */
static const struct config *web_cfg_hold(void *ctx, void **ref)
{
	struct cfg_ref *r = cfg_get(ctx);

	*ref = r;
	return r->cfg;
}

static void web_cfg_release(void *ctx, void *ref)
{
	cfg_put(ctx, ref);
}

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
	if (last)
		cfg_ref_free(r);
}

/* Waits on cond until deadline (clock ns) unless pred-like state changed;
 * the caller holds d->mu. The wait uses CLOCK_MONOTONIC, so a wall-clock
 * jump never stretches it; the span is the clock's span in real time (a
 * test build's fast clock waits less). */
static void wait_until_ns(struct daemon *d, pthread_cond_t *c,
			  int64_t deadline_ns)
{
	struct timespec ts;

	if (clock_mono_deadline(d->clock, deadline_ns, &ts))
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

/* ---- store outages -------------------------------------------------------- */

/* One thread's view: whether its last store call failed. */
struct store_health {
	bool failing;
	int64_t backoff_ms; /* the next backoff, real ms */
};

/*
 * A store call of this thread failed (where: what it was doing). Logs the
 * outage's first line when it is the first failure of any thread, then a
 * reminder at most every OUTAGE_LOG_EVERY_MS; nothing else.
 */
static void store_failed(struct daemon *d, struct store_health *h,
			 const char *where, int code, const char *msg)
{
	int64_t mono = clock_mono_ms();
	char q[SC_ERR_MSG_MAX + 8];

	pthread_mutex_lock(&d->mu);
	if (code == SC_EVERSION) {
		/* Not an outage: waiting would not help, and every job this
		 * node took would fail. Stop taking any, say why once, and
		 * end the daemon non-zero (docs/operations.md). */
		bool first = !d->schema_newer;
		d->schema_newer = true;
		if (first) {
			snprintf(d->schema_msg, sizeof(d->schema_msg), "%s",
				 msg ? msg : "store schema is newer");
			LOG(SC_LOG_ERROR, "daemon", "event=store_schema_newer "
			       "where=%s action=stopping msg=%s", where,
			       log_quote(q, sizeof(q), d->schema_msg));
			d->stopping = true;
			store_stop_waits(true);
			pthread_cond_broadcast(&d->cond);
			pthread_cond_broadcast(&d->main_cond);
		}
		pthread_mutex_unlock(&d->mu);
		return;
	}
	if (!h->failing) {
		h->failing = true;
		if (d->n_failing++ == 0) {
			d->outage_mono_ms = mono;
			d->outage_log_mono_ms = mono;
			d->outage_errors = 0;
			LOG(SC_LOG_ERROR, "daemon",
			       "event=store-outage state=begin where=%s "
			       "code=%s msg=%s", where, sc_strerror(code),
			       log_quote(q, sizeof(q), msg ? msg : ""));
		}
	}
	d->outage_errors++;
	if (mono - d->outage_log_mono_ms >= OUTAGE_LOG_EVERY_MS) {
		d->outage_log_mono_ms = mono;
		LOG(SC_LOG_ERROR, "daemon",
		       "event=store-outage state=ongoing duration_ms=%lld "
		       "errors=%llu where=%s code=%s msg=%s",
		       (long long)(mono - d->outage_mono_ms),
		       (unsigned long long)d->outage_errors, where,
		       sc_strerror(code),
		       log_quote(q, sizeof(q), msg ? msg : ""));
	}
	pthread_mutex_unlock(&d->mu);
}

/* A store call of this thread succeeded: resets its backoff, and ends the
 * outage when no other thread is still failing. Cheap when all is well. */
static void store_fine(struct daemon *d, struct store_health *h)
{
	h->backoff_ms = BACKOFF_MIN_MS;
	if (!h->failing)
		return;
	h->failing = false;
	pthread_mutex_lock(&d->mu);
	if (--d->n_failing == 0)
		LOG(SC_LOG_WARN, "daemon",
		       "event=store-outage state=end duration_ms=%lld "
		       "errors=%llu",
		       (long long)(clock_mono_ms() - d->outage_mono_ms),
		       (unsigned long long)d->outage_errors);
	pthread_mutex_unlock(&d->mu);
}

/* The thread leaves (stop, fewer workers): it no longer holds the outage
 * open; an outage still on at stop ends without an `end` line. */
static void store_leave(struct daemon *d, struct store_health *h)
{
	if (!h->failing)
		return;
	h->failing = false;
	pthread_mutex_lock(&d->mu);
	d->n_failing--;
	pthread_mutex_unlock(&d->mu);
}

/*
 * After a failed store call: sleeps this thread's backoff in real time
 * (a gen wakeup does not cut it short, or a busy watcher would turn the
 * backoff into a spin; stop does), then doubles it up to BACKOFF_MAX_MS.
 */
static void store_backoff(struct daemon *d, struct store_health *h)
{
	struct timespec ts;
	int64_t ms = h->backoff_ms > 0 ? h->backoff_ms : BACKOFF_MIN_MS;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t end_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec +
			 ms * 1000000;
	ts.tv_sec = (time_t)(end_ns / 1000000000);
	ts.tv_nsec = (long)(end_ns % 1000000000);
	pthread_mutex_lock(&d->mu);
	while (!d->stopping &&
	       pthread_cond_timedwait(&d->cond, &d->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&d->mu);
	h->backoff_ms = ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms * 2;
}

/* ---- recovery ------------------------------------------------------------- */

/* The daemon's side of a running job (worker.h's hooks): the stop flag
 * once grace is over, and the worker thread's part in the store outage. */
struct run_hooks {
	struct daemon *d;
	struct store_health *health;
};

static void run_slot_event(void *ud, const struct store_job *job,
			   enum worker_event ev);

/*
 * Recovers stalled jobs and sends the lost-slot alert for each one this
 * node's recovery declared dead (worker_recover; worker_run_job only
 * alerts for runs that failed). A failure goes to h's outage (NULL:
 * logged, for --once). Returns the number recovered (< 0: error).
 */
static int recover(struct store *s, struct daemon *d,
		   const struct config *cfg, struct store_health *h)
{
	struct sc_err e = {0};
	struct run_hooks rh = {.d = d, .health = h};
	struct worker_opts wo = {.store = s, .clock = d->clock, .config = cfg,
				 .slot_event = run_slot_event, .ud = &rh};
	int n = 0;
	/* A lease ending further ahead than any is granted for was written
	 * before the clock went back: it is judged by its length, from now
	 * (a crashed worker's job is not held for the step's length). */
	int rc = store_job_lease_clamp(s, cfg->lease_ms,
				       report_clock_tolerance_ms(cfg), &n, &e);

	if (!rc && n > 0)
		LOG(SC_LOG_WARN, "daemon", "event=lease_clamped jobs=%d "
		    "lease_ms=%lld msg=\"leases ended after now + their length: "
		    "the clock went back since they were granted\"", n,
		    (long long)cfg->lease_ms);
	n = 0;
	if (!rc)
		rc = worker_recover(&wo, QUEUE_STALL_LIMIT, &n, NULL, &e);

	if (rc) {
		if (h)
			store_failed(d, h, "recover", rc, e.msg);
		else
			LOG(SC_LOG_WARN, "daemon",
			       "event=recover code=%s msg=\"%s\"",
			       sc_strerror(rc), e.msg);
		return rc;
	}
	if (h)
		store_fine(d, h);
	if (n > 0)
		LOG(SC_LOG_WARN, "daemon", "event=recovered jobs=%d", n);
	return n;
}

/* ---- running one job ------------------------------------------------------ */

static bool run_stop(void *ud)
{
	const struct run_hooks *rh = ud;

	return atomic_load(&rh->d->abort_runs);
}

static void run_store_failed(void *ud, const char *where, int code,
			     const char *msg)
{
	const struct run_hooks *rh = ud;

	store_failed(rh->d, rh->health, where, code, msg);
}

static void run_store_fine(void *ud)
{
	const struct run_hooks *rh = ud;

	store_fine(rh->d, rh->health);
}

/* A slot's start, delivery or loss: its external ping is queued (never
 * sent here: the worker must not wait on a monitor). */
static void run_slot_event(void *ud, const struct store_job *job,
			   enum worker_event ev)
{
	const struct run_hooks *rh = ud;
	enum heartbeat_kind k = ev == WORKER_EVENT_START ? HEARTBEAT_START
				: ev == WORKER_EVENT_DELIVERED
					? HEARTBEAT_SUCCESS
					: HEARTBEAT_FAIL;

	heartbeat_slot(rh->d->hb, job->schedule, job->slot_ms, k);
}

/*
 * Raises the node's runner alert while an exhaustion lasts and its alert
 * is not raised yet. A raise the store refused (the exhaustion may reach
 * the store too) is tried again by the next give-back or by a worker's
 * next turn (worker_main), so that an exhaustion whose last give-back met
 * a failing store is not left without its alert.
 */
static void runner_raise(struct daemon *d, struct store *s)
{
	struct sc_err e = {0};
	char why[SC_ERR_MSG_MAX];

	pthread_mutex_lock(&d->mu);
	bool raise = d->runner_out && d->runner_alert == 0 &&
		     !d->runner_raising;
	d->runner_raising |= raise;
	int64_t since = d->runner_since_ms;
	snprintf(why, sizeof(why), "%s", d->runner_why);
	pthread_mutex_unlock(&d->mu);
	if (!raise)
		return;
	int64_t id = 0;
	int rc = alert_raise_runner(s, d->host, since, why, &id, &e);
	if (rc)
		LOG(SC_LOG_WARN, "alert", "event=alert_deferred reason=runner "
		    "code=%s msg=\"the runner alert is raised at a worker's "
		    "next turn\"", sc_strerror(rc));
	pthread_mutex_lock(&d->mu);
	d->runner_raising = false;
	/* Ended meanwhile: runner_fine found no alert to close. */
	bool close_now = rc == 0 && !d->runner_out;
	if (rc == 0 && d->runner_out)
		d->runner_alert = id;
	pthread_mutex_unlock(&d->mu);
	if (close_now)
		(void)alert_close_node(s, id, &e);
}

/*
 * A job was given back for the runner's exhaustion: the node's runner
 * alert is raised once per exhaustion, on this worker's store handle.
 * hold_ms: how long the worker holds (for the log line).
 */
static void runner_exhausted(struct daemon *d, struct store *s,
			     const struct sc_err *why, int64_t hold_ms)
{
	int64_t now = sc_clock_now_ms(d->clock);
	char q[SC_ERR_MSG_MAX + 8];

	pthread_mutex_lock(&d->mu);
	bool begins = !d->runner_out;
	if (begins) {
		d->runner_out = true;
		d->runner_since_ms = now;
		d->runner_alert = 0;
		snprintf(d->runner_why, sizeof(d->runner_why), "%s",
			 why->msg);
	}
	d->runner_last_ms = now;
	pthread_mutex_unlock(&d->mu);
	if (begins)
		LOG(SC_LOG_ERROR, "daemon", "event=runner_exhausted "
		    "state=begin hold_ms=%lld msg=%s", (long long)hold_ms,
		    log_quote(q, sizeof(q), why->msg));
	runner_raise(d, s);
}

/* A run the runner could start: an exhaustion, if one lasted and no job
 * was given back for it for RUNNER_QUIET_MS, is over, and its alert is
 * closed. */
static void runner_fine(struct daemon *d, struct store *s)
{
	struct sc_err e = {0};
	int64_t now = sc_clock_now_ms(d->clock);

	pthread_mutex_lock(&d->mu);
	bool ends = d->runner_out &&
		    now - d->runner_last_ms >= RUNNER_QUIET_MS;
	if (!ends) {
		pthread_mutex_unlock(&d->mu);
		return;
	}
	int64_t id = d->runner_alert;
	int64_t since = d->runner_since_ms;
	d->runner_out = false;
	d->runner_alert = 0;
	pthread_mutex_unlock(&d->mu);
	LOG(SC_LOG_INFO, "daemon", "event=runner_exhausted state=end "
	    "lasted_ms=%lld", (long long)(now - since));
	if (id && alert_close_node(s, id, &e) != 0)
		LOG(SC_LOG_WARN, "alert", "event=alert_not_closed "
		    "reason=runner alert=%lld code=%s msg=\"surecron ack "
		    "closes it\"", (long long)id, sc_strerror(e.code));
}

/* Runs one claimed job; w is the worker running it (NULL: --once), whose
 * hold it sets when the runner could not run the job. */
static void run_job(struct daemon *d, struct store *s, struct cfg_ref *cr,
		    const struct store_job *job, struct store_health *h,
		    struct worker *w)
{
	struct run_hooks rh = {.d = d, .health = h};
	int64_t backoff = w && w->runner_backoff_ms > 0 ? w->runner_backoff_ms
							: RUNNER_BACKOFF_MIN_MS;
	const struct worker_opts wo = {
		.store = s, .clock = d->clock, .config = cr->cfg,
		.auths = (struct http_auth *const *)cr->auths,
		.n_auths = cr->n_auths,
		.lease_ms = cr->cfg->lease_ms, .stop = run_stop,
		.store_failed = run_store_failed, .store_fine = run_store_fine,
		.slot_event = run_slot_event, .ud = &rh,
		.runner_backoff_ms = backoff,
		/* Claimed up to CLAIM_AHEAD_MS early: nothing of the run
		 * starts before due, but its store reads and the hand-over
		 * of its first task to a reaper are done now, and the
		 * reaper starts the program at the instant (proc.h). */
		.not_before_ns = ms_to_ns(job->run_at_ms),
	};
	struct worker_result res;
	struct sc_err e = {0};
	char slot[CLOCK_ISO_MAX];
	/* How late the run starts after the job's due instant, in us:
	 * negative for a run handed over ahead of it (the claim ahead). */
	int64_t late_us = (clock_now_ns(d->clock) - job->run_at_ms * 1000000) /
			  1000;
	/* Its duration counts from the due instant (real ms). */
	int64_t t0 = clock_mono_ms() +
		     (late_us < 0 ? clock_real_delta_ms(d->clock, -late_us / 1000)
				  : 0);

	/* A job claimed as the stop began (the claim was under way when
	 * SIGTERM came, or early by CLAIM_AHEAD_MS) is given back unstarted:
	 * the stop's grace waits only for runs it counted, so a run started
	 * now would go on to its end however long, past the grace. */
	FAILPOINT_STALL("daemon.before_start");
	pthread_mutex_lock(&d->mu);
	bool stop = d->stopping;
	if (!stop)
		d->n_running++;
	pthread_mutex_unlock(&d->mu);
	/* Formatted here, not in the LOG's arguments: LOG skips them below
	 * its level, and the finish line prints slot at any level. */
	iso(job->slot_ms, slot);
	if (stop) {
		int rrc = queue_release(s, job, &e);
		LOG(rrc ? SC_LOG_WARN : SC_LOG_INFO, "daemon",
		    "event=finish schedule=%s slot=%s job=%lld attempt=%d "
		    "outcome=%s duration_ms=0 task_late_us=- next=- code=%s",
		    job->schedule, slot, (long long)job->id, job->attempts,
		    rrc ? "unrecorded" : "released",
		    rrc ? sc_strerror(rrc) : "ok");
		return;
	}
	LOG(SC_LOG_INFO, "daemon",
	       "event=start schedule=%s slot=%s job=%lld attempt=%d "
	       "late_us=%lld", job->schedule, slot,
	       (long long)job->id, job->attempts, (long long)late_us);

	int rc = worker_run_job(&wo, job, &res, &e);
	const char *outcome;
	if (res.runner)
		outcome = "runner";
	else if (res.released)
		outcome = "released";
	else if (res.lease_lost)
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
	if (dur < 0)
		dur = 0;
	/* How late its first task started (the program exec'd), in us. */
	char task_late[24] = "-";
	if (res.rep.started_ns)
		snprintf(task_late, sizeof(task_late), "%lld",
			 (long long)((res.rep.started_ns -
				      job->run_at_ms * 1000000) / 1000));
	char next[CLOCK_ISO_MAX] = "-";
	if (!rc && !res.completed && !res.dead && res.next_ms != INT64_MAX)
		iso(res.next_ms, next);
	/* Counted before the finish line: whoever waits on that line (an
	 * operator's tail, a test) then reads a /metrics that has the run. */
	metrics_run(job->schedule, outcome,
		    res.rep.started_ns ? (res.rep.started_ns -
					  job->run_at_ms * 1000000) / 1000
				       : late_us,
		    dur);
	LOG(res.completed || res.released ? SC_LOG_INFO : SC_LOG_ERROR,
	       "daemon",
	       "event=finish schedule=%s slot=%s job=%lld attempt=%d "
	       "outcome=%s duration_ms=%lld task_late_us=%s next=%s code=%s",
	       job->schedule, slot, (long long)job->id, job->attempts, outcome,
	       (long long)dur, task_late, next,
	       rc ? sc_strerror(rc)
		  : (res.run_err.code ? sc_strerror(res.run_err.code) : "ok"));
	bool failed = !res.released && (rc || !res.completed);
	/* A job given back for the runner's exhaustion holds this worker
	 * and begins or prolongs the exhaustion; a run the runner could
	 * start (whatever its outcome) resets the worker's backoff and may
	 * end it (runner_fine). */
	if (!rc && res.runner) {
		if (w) {
			w->runner_hold_ms = sc_clock_now_ms(d->clock) + backoff;
			w->runner_backoff_ms = backoff * 2 > RUNNER_BACKOFF_MAX_MS
						       ? RUNNER_BACKOFF_MAX_MS
						       : backoff * 2;
		}
		runner_exhausted(d, s, &res.run_err, backoff);
	} else if (!rc || res.rep.started_ns) {
		if (w)
			w->runner_backoff_ms = 0;
		runner_fine(d, s);
	}
	worker_result_dispose(&res);

	pthread_mutex_lock(&d->mu);
	d->n_running--;
	if (failed)
		d->n_failed++;
	pthread_cond_broadcast(&d->main_cond);
	pthread_mutex_unlock(&d->mu);
}

/* ---- workers -------------------------------------------------------------- */

/* The page cache of the daemon's handles, in KiB: SQLite empties a
 * handle's cache whenever another connection wrote in between, which in
 * a daemon is between most reads, so the default 2 MiB of each of 19
 * handles held memory that bought little (store_cache_cap). 100,000
 * schedules, SQLite, 16 workers: VmHWM idle 28.4 -> 27.7 MB, after a
 * burst of 1,577 slots 31.8-32.1 -> 30.6 MB; the CPU to READY, which
 * reads every schedule's state through the scheduler's handle, no more.
 * The pruner's handle sets its own (64 MiB, prune.c's batches). */
#define SMALL_CACHE_KIB 256

/* small: cap the new handle's cache at SMALL_CACHE_KIB. */
static int open_store(struct daemon *d, struct store **out, bool small,
		      struct sc_err *err)
{
	int rc = store_open(d->store_url, d->clock, out, err);

	if (!rc && small &&
	    (rc = store_cache_cap(*out, SMALL_CACHE_KIB, err)) != 0) {
		store_close(*out);
		*out = NULL;
	}
	return rc;
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
	struct store *s = NULL;
	struct store_health h = {.backoff_ms = BACKOFF_MIN_MS};
	uint64_t rule_of = 0; /* the cfg_ref whose rule s holds; 0: none */

	for (;;) {
		struct sc_err e = {0};
		uint64_t seen;
		bool stop;

		pthread_mutex_lock(&d->mu);
		stop = d->stopping;
		seen = d->gen;
		/* A reload lowered worker.concurrency: leave between jobs. */
		bool retire = !stop && w->idx >= d->n_target;
		if (stop || retire)
			w->exited = true;
		pthread_mutex_unlock(&d->mu);
		if (retire)
			LOG(SC_LOG_INFO, "daemon",
			       "event=worker-exit worker=%d reason=concurrency",
			       w->idx);
		if (stop || retire)
			break;
		int64_t now = sc_clock_now_ms(d->clock);
		if (!s) {
			if (open_store(d, &s, true, &e) != 0) {
				store_failed(d, &h, "store-open", e.code,
					     e.msg);
				s = NULL;
				store_backoff(d, &h);
				continue;
			}
			rule_of = 0; /* a new handle has no rule yet */
		}

		/* An exhaustion's alert the store refused: tried again. */
		runner_raise(d, s);
		/* This worker's last job was given back for the runner's
		 * exhaustion: claim nothing before its hold ends (a job
		 * claimed now would likely be given back too). */
		if (w->runner_hold_ms > now) {
			idle(d, seen, w->runner_hold_ms);
			continue;
		}

		struct cfg_ref *cr = cfg_get(d);
		struct store_job job;
		size_t n = 0;
		bool skipped;
		int rc = worker_claim(s, cr->cfg, cr->known, cr->id, &rule_of,
				      w->name, CLAIM_AHEAD_MS, &job, &n,
				      &skipped, &e);
		if (rc == 0 && skipped) {
			cfg_put(d, cr);
			continue;
		}
		if (rc == 0 && n == 1) {
			store_fine(d, &h);
			run_job(d, s, cr, &job, &h, w);
			cfg_put(d, cr);
			continue;
		}
		int64_t next = INT64_MAX;
		if (rc == 0)
			rc = queue_next_due(s, &next, &e);
		if (rc == 0 && next <= now) {
			/* An expired lease (or a job another claimer took in
			 * the meantime): recover, then look again. */
			if (recover(s, d, cr->cfg, &h) > 0) {
				cfg_put(d, cr);
				continue;
			}
			next = now + d->watch_ms;
		}
		cfg_put(d, cr);
		if (rc) {
			store_failed(d, &h, "claim", rc, e.msg);
			store_backoff(d, &h);
			continue;
		}
		store_fine(d, &h);
		if (next > now + SCHED_MAX_SLEEP_MS)
			next = now + SCHED_MAX_SLEEP_MS;
		/* Wake CLAIM_AHEAD_MS early for a job; the claim just made
		 * would have taken one due that soon, so a `next` that near is
		 * a lease expiry, which is not claimable early. */
		idle(d, seen, next - CLAIM_AHEAD_MS > now ? next - CLAIM_AHEAD_MS
							   : next);
	}
	store_close(s);
	store_leave(d, &h);
	return NULL;
}

/* Joins worker w if it left its loop. Scheduler thread only. */
static void reap_worker(struct daemon *d, struct worker *w)
{
	bool gone;

	if (!w || !w->started)
		return;
	pthread_mutex_lock(&d->mu);
	gone = w->exited;
	pthread_mutex_unlock(&d->mu);
	if (!gone)
		return;
	/* It decided to leave under mu; what remains is store_close. */
	pthread_join(w->thread, NULL);
	w->started = false;
}

/*
 * Makes `want` workers run: sets n_target (extra workers leave once their
 * running job is over; idle ones are woken to leave now), joins workers
 * that left, and starts the missing ones among 0..want-1. Scheduler
 * thread only. On failure (memory, thread_start) n_target is lowered to
 * the workers that do run and err says why.
 */
static int set_workers(struct daemon *d, int want, struct sc_err *err)
{
	int rc = 0;

	if (want > d->n_slots) {
		size_t sz = (size_t)want * sizeof(struct worker *);
		struct worker **ws = realloc(d->workers, sz);
		if (!ws) {
			want = d->n_slots;
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		} else {
			for (int i = d->n_slots; i < want; i++)
				ws[i] = NULL;
			d->workers = ws;
			d->n_slots = want;
		}
	}
	pthread_mutex_lock(&d->mu);
	d->n_target = want;
	pthread_cond_broadcast(&d->cond); /* idle extras: leave now */
	pthread_mutex_unlock(&d->mu);
	for (int i = 0; i < d->n_slots; i++)
		reap_worker(d, d->workers[i]);
	for (int i = 0; i < want; i++) {
		struct worker *w = d->workers[i];
		if (w && w->started)
			continue; /* running (or finishing a job): keeps going */
		if (!w) {
			w = calloc(1, sizeof(*w));
			if (!w) {
				rc = sc_err_set(err, SC_ENOMEM,
						"out of memory");
				want = i;
				break;
			}
			d->workers[i] = w;
		}
		w->d = d;
		w->idx = i;
		w->exited = false;
		snprintf(w->name, sizeof(w->name), "%.32s:%ld:%d", d->host,
			 (long)getpid(), i);
		if (thread_start(&w->thread, worker_main, w) != 0) {
			rc = sc_err_set(err, SC_ENOMEM,
					"cannot start worker %d", i);
			want = i;
			break;
		}
		w->started = true;
	}
	if (rc) {
		pthread_mutex_lock(&d->mu);
		d->n_target = want;
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->mu);
	}
	return rc;
}

/* ---- watcher: writes by other processes ----------------------------------- */

/*
 * Wakes the workers when another process or node may have made work due:
 * store_wait says so (PostgreSQL: LISTEN/NOTIFY; SQLite: the database
 * files moved). Its first call always reports a change, so a write by
 * another process between a worker's first look for work and this
 * thread's start wakes the workers at once instead of at their next
 * timeout (up to a minute).
 */
static void *watcher_main(void *arg)
{
	struct daemon *d = arg;
	struct store *s = NULL;
	struct store_health h = {.backoff_ms = BACKOFF_MIN_MS};

	for (;;) {
		pthread_mutex_lock(&d->mu);
		bool stop = d->stopping;
		pthread_mutex_unlock(&d->mu);
		if (stop)
			break;
		struct sc_err e = {0};
		bool changed = true;
		/* The watcher only wakes workers: its failures back off
		 * like theirs but are not part of the outage (the workers'
		 * and scheduler's calls say when the store is back). */
		if (!s && open_store(d, &s, true, &e) != 0) {
			s = NULL;
			store_backoff(d, &h);
			continue;
		}
		/* A lost connection has still waited, and the next call
		 * reconnects. */
		if (store_wait(s, d->watch_ms * 4, &changed, &e) != 0)
			store_backoff(d, &h);
		else
			h.backoff_ms = BACKOFF_MIN_MS;
		if (changed)
			bump(d);
	}
	store_close(s);
	return NULL;
}

/* ---- alerter: the alerts' sends ------------------------------------------- */

static bool alerter_stop(void *ud)
{
	struct daemon *d = ud;

	pthread_mutex_lock(&d->mu);
	bool stop = d->stopping;
	pthread_mutex_unlock(&d->mu);
	return stop;
}

/* One alert pass on s (alert_tick); failures are logged, never fatal:
 * every row stays for the next pass. */
static void alert_pass(struct daemon *d, struct store *s)
{
	struct cfg_ref *cr = cfg_get(d);
	const struct alert_ctx a = {.store = s, .config = cr->cfg,
				    .clock = d->clock, .stop = alerter_stop,
				    .ud = d};
	struct alert_report rep;
	struct sc_err e = {0};
	int rc = alert_tick(&a, &rep, &e);

	cfg_put(d, cr);
	if (rc)
		LOG(SC_LOG_WARN, "alert", "event=alert_pass_failed code=%s "
		       "msg=\"%s\"", sc_strerror(rc), e.msg);
}

/* The daily prune (prune.h), on the pruner's own handle: due once a day
 * when a retention is set, run by the node that takes the lease.
 * Failures are logged by prune_daily_tick and retried the next day. */
static void prune_pass(struct daemon *d, struct store *s,
		       struct prune_daily *pd)
{
	struct cfg_ref *cr = cfg_get(d);
	char owner[96];
	struct sc_err e = {0};

	snprintf(owner, sizeof(owner), "%s:%ld", d->host, (long)getpid());
	(void)prune_daily_tick(pd, s, cr->cfg, sc_clock_now_ms(d->clock),
			       owner, alerter_stop, d, NULL, &e);
	cfg_put(d, cr);
}

/* Sleeps ALERT_TICK_MS of real time, or until the stop. */
static void wait_tick(struct daemon *d)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t until = ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000) +
			ALERT_TICK_MS;
	ts.tv_sec = (time_t)(until / 1000);
	ts.tv_nsec = (long)(until % 1000) * 1000000;
	pthread_mutex_lock(&d->mu);
	while (!d->stopping &&
	       pthread_cond_timedwait(&d->cond, &d->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&d->mu);
}

/*
 * Sends the alerts: every ALERT_TICK_MS of real time, one alert_tick on
 * its own store handle, so that a slow alert target never holds up a
 * worker or the scheduler, and a send that failed is retried while the
 * daemon runs (workers send a fresh lost alert at once themselves).
 */
static void *alerter_main(void *arg)
{
	struct daemon *d = arg;
	struct store *s = NULL;
	struct store_health h = {.backoff_ms = BACKOFF_MIN_MS};

	while (!alerter_stop(d)) {
		struct sc_err e = {0};

		if (!s && open_store(d, &s, true, &e) != 0) {
			s = NULL;
			store_backoff(d, &h);
			continue;
		}
		alert_pass(d, s);
		wait_tick(d);
	}
	store_close(s);
	return NULL;
}

/*
 * The daily prune, on a thread of its own: a prune of a deep store runs
 * for minutes (9,000,000 rows on SQLite: about ten), and on the alerter's
 * thread it held up the timing checks and the alerts' retries that long.
 * It holds a store handle only while a prune is due (a PostgreSQL
 * connection per node for a once-a-day job would sit idle all day).
 */
static void *pruner_main(void *arg)
{
	struct daemon *d = arg;
	struct store_health h = {.backoff_ms = BACKOFF_MIN_MS};
	struct prune_daily pd = {0};

	while (!alerter_stop(d)) {
		if (prune_daily_due(&pd, sc_clock_now_ms(d->clock))) {
			struct store *s = NULL;
			struct sc_err e = {0};

			if (open_store(d, &s, false, &e) != 0) {
				store_backoff(d, &h);
				continue;
			}
			prune_pass(d, s, &pd);
			store_close(s);
		}
		wait_tick(d);
	}
	return NULL;
}

/* ---- the daemon ----------------------------------------------------------- */

int daemon_new(const struct daemon_opts *o, struct daemon **out,
	       struct sc_err *err)
{
	struct daemon *d = calloc(1, sizeof(*d));
	struct config *cfg = NULL;
	int rc;

	if (!d)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	store_stop_waits(false); /* a daemon run again in one process */
	/* A real (or offset) clock is read through the monotonic clock, so
	 * a step of the wall clock moves no slot, lease or retry until the
	 * loop takes it (check_clock). */
	d->own_clock = clock_trusted_new(o->clock);
	d->wall = o->clock ? o->clock : sc_clock_real();
	/* A test seam's clock is off on purpose: not held to the server's. */
	d->no_server_clock = o->clock != NULL;
	d->clock = d->own_clock ? d->own_clock
		   : o->clock   ? o->clock
				: sc_clock_real();
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
	d->tokens = daemon_tokens_new(d->store_url, d->clock);
	d->cur = cfg_wrap(d->tokens, cfg);
	if (!d->cur) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto fail;
	}
	rc = heartbeat_new(d->cur->cfg, &d->hb, err);
	if (rc)
		goto fail;
	rc = open_store(d, &d->store, true, err);
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
	heartbeat_free(d->hb);
	cfg_ref_free(d->cur);
	daemon_tokens_free(d->tokens);
	free(d->store_url);
	free(d->config_path);
	sc_clock_free(d->own_clock);
	free(d);
	return rc;
}

void daemon_stop(struct daemon *d)
{
	/* Waits on the store no longer hold the stop (store.h). */
	store_stop_waits(true);
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

/*
 * Loads the file again; on success swaps it in. Scheduler thread only.
 * Everything applies but the store: schedules and targets at the next
 * tick, worker.lease at the next claim, worker.grace at the next stop,
 * worker.concurrency now (set_workers).
 */
static void node_beat(struct daemon *d);
static void skew_check(struct daemon *d);

static void do_reload(struct daemon *d)
{
	struct config *cfg = NULL;
	struct sc_err e = {0};
	char msg[SC_ERR_MSG_MAX + 8];

	if (config_load(d->config_path, &cfg, &e) != 0) {
		LOG(SC_LOG_ERROR, "daemon",
		       "event=reload outcome=refused msg=%s",
		       log_quote(msg, sizeof(msg), e.msg));
		return;
	}
	if (strcmp(cfg->store_url, d->store_url) != 0) {
		/* Moving a running daemon to another store would split its
		 * jobs over two (the running ones hold leases in this one):
		 * keep this one, say so once per reload. */
		char *keep = strdup(d->store_url);
		if (!keep) {
			config_free(cfg);
			LOG(SC_LOG_ERROR, "daemon", "event=reload "
			       "outcome=refused msg=\"out of memory\"");
			return;
		}
		char a[1200], b[1200], qa[1300], qb[1300];
		store_url_for_log(cfg->store_url, a, sizeof(a));
		store_url_for_log(d->store_url, b, sizeof(b));
		LOG(SC_LOG_WARN, "daemon",
		       "event=reload setting=store new=%s running=%s "
		       "msg=\"store changed in the config; not applied: "
		       "restart surecron to use it\"",
		       log_quote(qa, sizeof(qa), a),
		       log_quote(qb, sizeof(qb), b));
		free(cfg->store_url);
		cfg->store_url = keep;
	}
	size_t n_sched = cfg->n_schedules;
	int conc = cfg->concurrency > 0 ? cfg->concurrency : 1;
	struct cfg_ref *r = cfg_wrap(d->tokens, cfg);
	if (!r) {
		LOG(SC_LOG_ERROR, "daemon",
		       "event=reload outcome=refused msg=\"out of memory\"");
		return;
	}
	pthread_mutex_lock(&d->mu);
	struct cfg_ref *old = d->cur;
	int was = d->n_target;
	d->cur = r;
	pthread_mutex_unlock(&d->mu);
	/* The schedules whose cron or zone this reload changes: their new
	 * expression is noted before the new plan's first tick (tick). On
	 * no memory, every schedule is (an unchanged one writes nothing). */
	if (history_changed(old->cfg, r->cfg, &r->hist_want, &e) != 0)
		r->hist_want = NULL;
	cfg_put(d, old);
	/* The heartbeat URLs of the new config (read from the environment
	 * again); pings already queued keep theirs. r->cfg stays alive: the
	 * daemon holds its reference. */
	if (heartbeat_configure(d->hb, r->cfg, &e) != 0)
		LOG(SC_LOG_ERROR, "heartbeat", "event=reload "
		       "outcome=heartbeat-kept code=%s msg=%s",
		       sc_strerror(e.code), log_quote(msg, sizeof(msg), e.msg));
	if (conc != was) {
		if (set_workers(d, conc, &e) != 0)
			LOG(SC_LOG_ERROR, "daemon",
			       "event=workers code=%s msg=%s",
			       sc_strerror(e.code),
			       log_quote(msg, sizeof(msg), e.msg));
		pthread_mutex_lock(&d->mu);
		conc = d->n_target;
		pthread_mutex_unlock(&d->mu);
		LOG(SC_LOG_INFO, "daemon", "event=workers from=%d to=%d",
		       was, conc);
	}
	LOG(SC_LOG_INFO, "daemon",
	       "event=reload outcome=ok schedules=%zu concurrency=%d", n_sched,
	       conc);
	if (d->node_started_ms)
		node_beat(d);
	bump(d);
}

/*
 * Publishes this daemon in the store's nodes (issue 43): id, host, pid,
 * version and the digest of the config in force. At start, after each
 * reload and at each recovery pass (RECOVER_EVERY_MS, which
 * STORE_NODE_BEAT_MS matches). A failure is logged and waits for the
 * next beat: the record informs operators, no claim depends on it.
 */
/* This daemon's node id (host:pid:started) into id. */
static void node_id(const struct daemon *d, char id[STORE_NODE_ID_MAX])
{
	snprintf(id, STORE_NODE_ID_MAX, "%.63s:%ld:%lld", d->host,
		 (long)getpid(), (long long)d->node_started_ms);
}

static void node_beat(struct daemon *d)
{
	struct store_node n = {.pid = (int64_t)getpid(),
			       .started_ms = d->node_started_ms};
	struct cfg_ref *cr = cfg_get(d);
	struct sc_err e = {0};

	node_id(d, n.id);
	snprintf(n.host, sizeof(n.host), "%s", d->host);
	snprintf(n.version, sizeof(n.version), "%s", sc_version());
	config_digest(cr->cfg, n.config_digest);
	cfg_put(d, cr);
	/* Its clock against the database server's (issue 42), so that
	 * status, /metrics and check --store show a node that is off. */
	n.has_clock_offset = d->has_wall_offset;
	n.clock_offset_ms = d->wall_offset_ms;
	if (store_node_beat(d->store, &n, &e) != 0)
		LOG(SC_LOG_WARN, "daemon", "event=node-beat-failed code=%s "
		       "msg=\"%s\"", sc_strerror(e.code), e.msg);
}

/*
 * Config skew (issue 43). A node never claims a job of a schedule its
 * config lacks (queue_overlap_rule), so during a rolling deploy such a
 * job waits for a node that has it; if none does, it would wait in
 * silence. So each pass, a schedule with due jobs and none running
 * (skew_waits) that this config lacks (by name or renamed_from), and
 * live nodes whose config digests differ,
 * are noted with the clock instant first seen; one that lasts
 * worker.skew_grace raises a skew alert (alert_raise_skew) naming the
 * schedule and the live nodes, closed when it ends. Nothing is charged
 * to a slot.
 *
 * A skew alert belongs to the store, not to the node that raised it, so
 * that a deploy that restarts nodes neither leaves one open for ever nor
 * doubles it:
 *   - `skew::configs` is judged by one node, the live one with the
 *     lowest id (every node reads the same records, so they agree on
 *     it); when it dies or stops the next one takes over;
 *   - before raising, a node takes over an open alert of the same name
 *     (raised by a node that stopped, or by another that lacks the same
 *     schedule), so there is one per skew;
 *   - an open skew alert that no node of ours holds is closed when its
 *     skew is over for everyone: the live digests agree (by the judge),
 *     or its schedule has no due job left or one running (by any node).
 */
struct skew_wait {
	char name[STORE_NAME_MAX]; /* ALERT_SKEW_PREFIX + a schedule, or
				      ALERT_SKEW_CONFIGS */
	int64_t since_ms;          /* clock ms first seen */
	int64_t alert;             /* its alert's id; 0: not raised */
	bool seen;                 /* seen by this pass */
};

/* How often skew_check runs (mono ms): a quarter of the grace, within
 * 1 s and RECOVER_EVERY_MS. */
static int64_t skew_every_ms(const struct config *c)
{
	int64_t v = c->skew_grace_ms / 4;

	return v < 1000 ? 1000 : v > RECOVER_EVERY_MS ? RECOVER_EVERY_MS : v;
}

/* Marks name as seen now; false when out of memory (logged: the entry is
 * left out of this pass, and tried again at the next). */
static bool skew_mark(struct daemon *d, const char *name, int64_t now)
{
	for (size_t i = 0; i < d->n_skew; i++)
		if (strcmp(d->skew[i].name, name) == 0) {
			d->skew[i].seen = true;
			return true;
		}
	struct skew_wait *v = realloc(d->skew, (d->n_skew + 1) * sizeof(*v));
	if (!v) {
		LOG(SC_LOG_WARN, "daemon", "event=skew-check-failed "
		       "msg=\"out of memory\"");
		return false;
	}
	d->skew = v;
	memset(&v[d->n_skew], 0, sizeof(v[0]));
	snprintf(v[d->n_skew].name, sizeof(v[0].name), "%s", name);
	v[d->n_skew].since_ms = now;
	v[d->n_skew].seen = true;
	d->n_skew++;
	return true;
}

/* This node's entry for name, or NULL. */
static struct skew_wait *skew_find(struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->n_skew; i++)
		if (strcmp(d->skew[i].name, name) == 0)
			return &d->skew[i];
	return NULL;
}

/* The open skew alert named name among open[0..n), or NULL. */
static const struct store_alert *skew_open(const struct store_alert *open,
					   size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(open[i].reason, ALERT_REASON_SKEW) == 0 &&
		    strcmp(open[i].schedule, name) == 0)
			return &open[i];
	return NULL;
}

/* Whether a summary shows a skew: jobs due, and none running. A job of
 * the schedule ACTIVE means a node that has it is at work, and one due
 * beside it waits for that node (an `overlap:` rule, a backlog), not for
 * a config. */
static bool skew_waits(const struct store_sched_summary *x)
{
	return x->counts.ready_due > 0 && x->counts.active <= 0;
}

/* skew_waits for schedule among the summaries (false: none of it). */
static bool skew_waits_for(const struct store_sched_summary *sum, size_t n,
			   const char *schedule)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(sum[i].schedule, schedule) == 0)
			return skew_waits(&sum[i]);
	return false;
}

static void skew_check(struct daemon *d)
{
	struct cfg_ref *cr = cfg_get(d);
	const struct config *c = cr->cfg;
	int64_t now = sc_clock_now_ms(d->clock);
	struct store_sched_summary *sum = NULL;
	struct store_node *nodes = NULL;
	struct store_alert *open = NULL;
	size_t n_sum = 0, n_nodes = 0, n_open = 0;
	struct sc_err e = {0};
	char live[768] = "", name[STORE_NAME_MAX], me[STORE_NODE_ID_MAX];
	const char *digest = NULL, *judge = NULL;
	bool differ = false, nodes_ok, sum_ok, open_ok;

	node_id(d, me);
	for (size_t i = 0; i < d->n_skew; i++)
		d->skew[i].seen = false;
	nodes_ok = store_nodes(d->store, &nodes, &n_nodes, &e) == 0;
	for (size_t i = 0; nodes_ok && i < n_nodes; i++) {
		if (now - nodes[i].seen_ms > STORE_NODE_LIVE_MS)
			continue;
		size_t l = strlen(live);
		snprintf(live + l, sizeof(live) - l, "%s%s (config %s)",
			 l ? ", " : "", nodes[i].id, nodes[i].config_digest);
		if (digest && strcmp(digest, nodes[i].config_digest) != 0)
			differ = true;
		digest = nodes[i].config_digest;
		if (!judge) /* sorted by id: the first live one */
			judge = nodes[i].id;
	}
	/* This node judges the configs: it is the live one with the lowest
	 * id. Unknown this pass (no read): keep what was seen. Another
	 * node judges: this one forgets its entry (the alert, if any, stays
	 * open for the judge to take over). */
	bool judging = nodes_ok && judge && strcmp(judge, me) == 0;
	struct skew_wait *cw = skew_find(d, ALERT_SKEW_CONFIGS);
	if (judging && differ)
		skew_mark(d, ALERT_SKEW_CONFIGS, now);
	else if (!nodes_ok && cw)
		cw->seen = true;
	else if (nodes_ok && !judging && cw)
		*cw = d->skew[--d->n_skew];
	sum_ok = store_sched_summaries(d->store, NULL, &sum, &n_sum, &e) == 0;
	for (size_t i = 0; sum_ok && i < n_sum; i++) {
		if (!skew_waits(&sum[i]) ||
		    config_schedule_of(c, sum[i].schedule))
			continue;
		/* A stored name is a config's (CONFIG_NAME_MAX), so the
		 * prefix fits; a longer one is not ours. */
		if (snprintf(name, sizeof(name), "%s%s", ALERT_SKEW_PREFIX,
			     sum[i].schedule) < (int)sizeof(name))
			skew_mark(d, name, now);
	}
	if (!sum_ok)
		for (size_t i = 0; i < d->n_skew; i++)
			if (strcmp(d->skew[i].name, ALERT_SKEW_CONFIGS) != 0)
				d->skew[i].seen = true;
	struct alert_filter af = {.open_only = true, .slot_ms = INT64_MIN,
				  .since_ms = INT64_MIN, .until_ms = INT64_MAX};
	open_ok = store_alert_list(d->store, &af, &open, &n_open, &e) == 0;
	for (size_t i = 0; i < d->n_skew;) {
		struct skew_wait *w = &d->skew[i];
		if (!w->seen) {
			if (w->alert && alert_close_node(d->store, w->alert,
							 &e) != 0) {
				/* Closed at a later pass. */
				w->seen = true;
				i++;
				continue;
			}
			if (w->alert)
				LOG(SC_LOG_INFO, "daemon", "event=skew state=end "
				       "name=%s", w->name);
			*w = d->skew[--d->n_skew];
			continue;
		}
		/* An alert of this skew already open (another node's, or one
		 * whose node stopped) is taken over, not doubled; without the
		 * list this pass, wait for the next. */
		if (!w->alert && now - w->since_ms >= c->skew_grace_ms &&
		    open_ok) {
			const struct store_alert *x = skew_open(open, n_open,
								w->name);
			char why[1024];
			if (strcmp(w->name, ALERT_SKEW_CONFIGS) == 0)
				snprintf(why, sizeof(why), "live nodes run "
					 "different configs: %s", live);
			else
				snprintf(why, sizeof(why), "schedule %s has "
					 "jobs due that no node ran, and the "
					 "config of %s lacks it; live nodes: %s",
					 w->name + strlen(ALERT_SKEW_PREFIX),
					 d->host, *live ? live : "none");
			if (x)
				w->alert = x->id;
			else if (alert_raise_skew(d->store, w->name,
						  w->since_ms, why, &w->alert,
						  &e) != 0)
				w->alert = 0;
			if (w->alert)
				LOG(SC_LOG_ERROR, "daemon", "event=skew "
				       "state=begin name=%s since_ms=%lld "
				       "alert=%lld", w->name,
				       (long long)w->since_ms,
				       (long long)w->alert);
		}
		i++;
	}
	/* The open skew alerts no entry here holds, whose skew is over for
	 * every node: closed, whoever raised them. */
	for (size_t i = 0; open_ok && i < n_open; i++) {
		const struct store_alert *x = &open[i];
		if (strcmp(x->reason, ALERT_REASON_SKEW) != 0 ||
		    skew_find(d, x->schedule))
			continue;
		bool over;
		if (strcmp(x->schedule, ALERT_SKEW_CONFIGS) == 0)
			over = judging && !differ;
		else
			over = sum_ok &&
			       strncmp(x->schedule, ALERT_SKEW_PREFIX,
				       strlen(ALERT_SKEW_PREFIX)) == 0 &&
			       !skew_waits_for(sum, n_sum, x->schedule +
					       strlen(ALERT_SKEW_PREFIX));
		if (over && alert_close_node(d->store, x->id, &e) == 0)
			LOG(SC_LOG_INFO, "daemon", "event=skew state=end "
			       "name=%s alert=%lld", x->schedule,
			       (long long)x->id);
	}
	sc_free(open);
	if (sum_ok)
		store_sched_summaries_free(sum, n_sum);
	free(nodes);
	cfg_put(d, cr);
}

/* tick's answer when no schedule could be looked at (the store is down). */
#define TICK_STORE_DOWN INT64_MIN

/*
 * Compares the wall clock with the trusted clock's monotonic expectation
 * before each tick (issue 42): a step is logged when seen, while it lasts
 * nothing is materialised beyond the trusted now and nothing written off
 * (the scheduler only ever sees the trusted now), and it is logged again
 * when corrected or, after CLOCK_ACCEPT_MS, taken as the new time.
 */
/* worker.clock_tolerance of the config in force into d->tolerance_ms
 * (scheduler thread: a reload changes it from the next check). */
static void clock_tolerance_read(struct daemon *d)
{
	struct cfg_ref *cr = cfg_get(d);

	d->tolerance_ms = report_clock_tolerance_ms(cr->cfg);
	cfg_put(d, cr);
}

static void check_clock(struct daemon *d)
{
	int64_t step = 0;
	clock_tolerance_read(d);
	/* With the database's clock as reference, a step is never taken
	 * from the wall clock alone: check_server_clock follows the server */
	enum clock_trust t = clock_trust_check(
		d->own_clock, d->tolerance_ms,
		d->server_ref ? -1 : CLOCK_ACCEPT_MS, &step);
	char t1[CLOCK_ISO_MAX];
	static const char *const what[] = {
		[CLOCK_TRUST_STEPPED] = "stepped",
		[CLOCK_TRUST_CORRECTED] = "corrected",
		[CLOCK_TRUST_ACCEPTED] = "accepted"};

	if (t == CLOCK_TRUST_AGREES || t == CLOCK_TRUST_HOLDING)
		return;
	LOG(t == CLOCK_TRUST_CORRECTED ? SC_LOG_INFO : SC_LOG_WARN, "daemon",
	    "event=clock_step step_ms=%lld state=%s trusted=%s "
	    "tolerance_ms=%lld accept_after_ms=%lld", (long long)step,
	    what[t], clock_format_utc(sc_clock_now_ms(d->clock), t1),
	    (long long)d->tolerance_ms, (long long)CLOCK_ACCEPT_MS);
}

/*
 * On a store with a clock of its own (PostgreSQL), every
 * SERVER_CLOCK_EVERY_MS: the daemon's time is held to the server's (the
 * nodes' one reference), so a node whose clock is off claims, leases,
 * recovers and schedules on the database's time, never on its own
 * alone; a wall clock that disagrees with the server beyond the
 * tolerance is logged when it begins (event=clock_skew state=disagrees)
 * and when it ends (state=agrees). A failed read says nothing (the
 * store's outage is logged where it happens).
 */
static void check_server_clock(struct daemon *d)
{
	struct sc_err e = {0};
	int64_t srv, m0 = clock_mono_ms();

	if (!d->own_clock || d->no_server_clock ||
	    (d->server_mono_ms &&
	     m0 - d->server_mono_ms < SERVER_CLOCK_EVERY_MS))
		return;
	d->server_mono_ms = m0 ? m0 : 1;
	int rc = store_server_now_ms(d->store, &srv, &e);
	int64_t rtt = clock_mono_ms() - m0;
	if (rc == SC_ENOENT) {
		d->no_server_clock = true;
		return;
	}
	if (rc)
		return;
	clock_tolerance_read(d);
	/* Our reading at the middle of the round trip; what the trip
	 * takes is uncertain by half of it. */
	int64_t slack = d->tolerance_ms + rtt / 2;
	int64_t ours = sc_clock_now_ms(d->clock) - rtt / 2;
	int64_t wall = sc_clock_now_ms(d->wall) - rtt / 2;
	int64_t skew = srv - ours, wskew = srv - wall;
	char t1[CLOCK_ISO_MAX];

	d->server_ref = true;
	d->wall_offset_ms = -wskew;
	bool first = !d->has_wall_offset;
	d->has_wall_offset = true;
	if (skew > slack || skew < -slack)
		clock_trust_adopt(d->own_clock, skew);
	bool skewed = wskew > slack || wskew < -slack;
	if (skewed != d->wall_skewed)
		LOG(skewed ? SC_LOG_WARN : SC_LOG_INFO, "daemon",
		    "event=clock_skew state=%s skew_ms=%lld rtt_ms=%lld "
		    "server=%s msg=\"%s\"", skewed ? "disagrees" : "agrees",
		    (long long)-wskew, (long long)rtt,
		    clock_format_utc(srv, t1),
		    skewed ? "this node's clock disagrees with the database "
			     "server's: the server's time is used"
			   : "this node's clock agrees with the database "
			     "server's again");
	/* The node record says so at once, not at the next beat: the
	 * first measure, and each change of side of the tolerance. */
	bool beat = d->node_started_ms && (first || skewed != d->wall_skewed);
	d->wall_skewed = skewed;
	if (beat)
		node_beat(d);
}

/* Writes the pending cron notes of cr (history.h). A failure is said
 * (once per config) and the notes kept for the next tick: the audit's
 * record must not cost a slot, so the scheduler goes on. */
static void note_crons(struct cfg_ref *cr, struct store *s)
{
	struct sc_err e = {0};
	size_t n = 0, asked = cr->hist.n;
	char msg[SC_ERR_MSG_MAX + 8];

	if (history_write(s, &cr->hist, &n, &e) != 0) {
		if (!cr->hist_warned)
			LOG(SC_LOG_WARN, "daemon", "event=cron_history "
			    "outcome=failed notes=%zu code=%s msg=%s", asked,
			    sc_strerror(e.code),
			    log_quote(msg, sizeof(msg), e.msg));
		cr->hist_warned = true;
		return;
	}
	if (n)
		LOG(SC_LOG_INFO, "daemon", "event=cron_history outcome=ok "
		    "recorded=%zu of=%zu", n, asked);
}

/*
 * One scheduler pass as of now + lead_ms; returns the next slot (clock
 * ms), or TICK_STORE_DOWN when the store failed (h's outage then has it;
 * h NULL: logged, and the next look 5 s of clock later). With a lead, a slot is enqueued a moment BEFORE its instant, due at
 * the instant itself (run_at = slot): the scheduler's transaction is then
 * off the critical path, and a worker sleeping until queue_next_due claims
 * the job right at the slot's instant.
 */
static int64_t tick(struct daemon *d, int64_t lead_ms,
		    struct store_health *h)
{
	struct cfg_ref *cr = cfg_get(d);
	struct sched_result r;
	struct sc_err e = {0};
	int64_t now = sc_clock_now_ms(d->clock) + lead_ms;
	int rc = 0;

	/* The plan of this config: built at its first tick (daemon start,
	 * reload), again at the next tick when the store failed. Only this
	 * thread touches cr->plan. */
	scheduler_result_init(&r);
	/* The crons in force from this config on (issue 43): computed from
	 * the states before its plan first ticks, so each note starts at
	 * the first slot the new expression decides. */
	if (!cr->plan && !cr->hist_planned) {
		rc = history_plan(d->store, cr->cfg, cr->hist_want, now,
				  &cr->hist, &e);
		cr->hist_planned = rc == 0;
	}
	if (cr->hist.n)
		note_crons(cr, d->store);
	if (!rc && !cr->plan)
		rc = scheduler_plan_new(d->store, cr->cfg, now, NULL, &cr->plan,
					&e);
	if (cr->plan)
		rc = scheduler_plan_tick(cr->plan, d->store, now, &r, &e);

	cfg_put(d, cr);
	if (rc && (r.n_errors == 0 || r.n_errors == r.n_schedules)) {
		/* Nothing worked (store down): the caller backs off. */
		if (h) {
			store_failed(d, h, "schedule", rc, e.msg);
			return TICK_STORE_DOWN;
		}
		LOG(SC_LOG_WARN, "daemon",
		       "event=schedule-error errors=%zu code=%s msg=\"%s\"",
		       r.n_errors, sc_strerror(rc), e.msg);
		return now + BACKOFF_MAX_MS;
	}
	if (rc)
		LOG(SC_LOG_WARN, "daemon",
		       "event=schedule-error errors=%zu code=%s msg=\"%s\"",
		       r.n_errors, sc_strerror(rc), e.msg);
	else if (h)
		store_fine(d, h);
	if (r.n_enqueued || r.n_missed)
		LOG(r.n_missed ? SC_LOG_WARN : SC_LOG_DEBUG, "daemon",
		       "event=scheduled enqueued=%zu missed=%zu",
		       r.n_enqueued, r.n_missed);
	if (r.n_enqueued)
		bump(d);
	return r.next_ms;
}

/* How long `run --once` waits for its pings at exit: every try of one
 * ping and a margin. */
#define ONCE_FLUSH_MS \
	((int64_t)HEARTBEAT_TRIES * HEARTBEAT_TIMEOUT_MS + 2000)
/* How long a stopping daemon waits for its last pings. */
#define STOP_FLUSH_MS 2000

/* --once: every due job, on this thread, then back. */
static int run_once(struct daemon *d)
{
	struct cfg_ref *cr = cfg_get(d);
	char name[STORE_WORKER_MAX];

	struct store_health h = {.backoff_ms = BACKOFF_MIN_MS};

	uint64_t rule_of = 0;

	snprintf(name, sizeof(name), "once-%ld", (long)getpid());
	recover(d->store, d, cr->cfg, NULL);
	cfg_put(d, cr);
	tick(d, 0, NULL);
	for (;;) {
		struct store_job job;
		struct sc_err e = {0};
		size_t n = 0;

		cr = cfg_get(d);
		bool skipped;
		int rc = worker_claim(d->store, cr->cfg, cr->known, cr->id,
				      &rule_of, name, 0, &job, &n, &skipped,
				      &e);
		if (rc == 0 && skipped) {
			cfg_put(d, cr);
			continue;
		}
		if (rc || n == 0) {
			cfg_put(d, cr);
			if (rc) {
				LOG(SC_LOG_ERROR, "daemon",
				       "event=claim code=%s msg=\"%s\"",
				       sc_strerror(rc), e.msg);
				return 1;
			}
			break;
		}
		run_job(d, d->store, cr, &job, &h, NULL);
		cfg_put(d, cr);
	}
	/* The alerts of this run and any an earlier process left due; a
	 * send that fails here waits for the next run or the daemon. */
	alert_pass(d, d->store);
	/* The slot pings go out before the process ends, bounded by their
	 * tries and timeouts. */
	if (!heartbeat_flush(d->hb, ONCE_FLUSH_MS))
		LOG(SC_LOG_WARN, "heartbeat", "event=ping_failed kind=flush "
		       "msg=\"pings still queued at exit were not sent\"");
	return d->n_failed ? 1 : 0;
}

/* Joins every thread; the caller has set stopping. */
static void stop_threads(struct daemon *d)
{
	for (int i = 0; i < d->n_slots; i++) {
		struct worker *w = d->workers[i];
		if (w && w->started) {
			pthread_join(w->thread, NULL);
			w->started = false;
		}
	}
	if (d->watcher_started)
		pthread_join(d->watcher, NULL);
	d->watcher_started = false;
	if (d->alerter_started)
		pthread_join(d->alerter, NULL);
	d->alerter_started = false;
	if (d->pruner_started)
		pthread_join(d->pruner, NULL);
	d->pruner_started = false;
}

/* Takes the pending stop and reload requests: reloads if asked, and
 * returns true when the daemon must stop. */
static bool serve_requests(struct daemon *d)
{
	pthread_mutex_lock(&d->mu);
	bool stop = d->stopping, reload = d->reload;
	d->reload = false;
	pthread_mutex_unlock(&d->mu);
	if (!stop && reload)
		do_reload(d);
	return stop;
}

/* Tells systemd state (sdnotify.h); a failure is warned once, never
 * fatal: the daemon runs the same without a service manager. */
static void notify(struct daemon *d, const char *state)
{
	struct sc_err e = {0};
	char q[SC_ERR_MSG_MAX + 8];

	if (sdnotify_send(state, &e) == 0 || d->notify_failed)
		return;
	d->notify_failed = true;
	LOG(SC_LOG_WARN, "daemon", "event=notify_failed state=%s code=%s "
	       "msg=%s", state, sc_strerror(e.code),
	       log_quote(q, sizeof(q), e.msg));
}

/* The scheduler loop ran: a WATCHDOG=1 when a quarter of the interval
 * has passed since the last one. */
static void watchdog_ping(struct daemon *d)
{
	int64_t mono = clock_mono_ms();

	if (d->wd_ms <= 0 || mono - d->wd_last_mono_ms < d->wd_ms / 4)
		return;
	d->wd_last_mono_ms = mono;
	notify(d, "WATCHDOG=1");
}

/* The longest the scheduler loop may sleep (real ms): a quarter of the
 * watchdog interval, half the heartbeat period; INT64_MAX: no cap. */
static int64_t loop_cap_ms(struct daemon *d)
{
	int64_t cap = INT64_MAX;
	int64_t every = heartbeat_every_ms(d->hb);

	if (d->wd_ms > 0)
		cap = d->wd_ms / 4 > 0 ? d->wd_ms / 4 : 1;
	if (every > 0 && every / 2 < cap)
		cap = every / 2;
	return cap;
}

/* The test point "daemon.scheduler_stuck:err" (optionally @N: the N-th
 * pass): the scheduler thread blocks here, as a hung one would, pinging
 * nothing; only a stop lets it go (so a test can still end the process
 * cleanly). Compiled out of the release build. */
static void maybe_stuck(struct daemon *d)
{
	if (!FAILPOINT_ERR("daemon.scheduler_stuck"))
		return;
	LOG(SC_LOG_WARN, "daemon", "event=scheduler_stuck "
	       "msg=\"test point: the scheduler loop blocks\"");
	pthread_mutex_lock(&d->mu);
	while (!d->stopping) {
		pthread_mutex_unlock(&d->mu);
		struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
}

int daemon_run(struct daemon *d, struct sc_err *err)
{
	struct cfg_ref *cr = cfg_get(d);
	int conc = cr->cfg->concurrency > 0 ? cr->cfg->concurrency : 1;

	LOG(SC_LOG_INFO, "daemon",
	       "event=started backend=%s schedules=%zu concurrency=%d once=%d",
	       store_backend_name(d->store), cr->cfg->n_schedules, conc,
	       (int)d->once);
	if (d->once) {
		cfg_put(d, cr);
		return run_once(d);
	}
	check_server_clock(d); /* before the first recovery and tick */
	recover(d->store, d, cr->cfg, NULL);
	cfg_put(d, cr);

	snprintf(d->host, sizeof(d->host), "host");
	gethostname(d->host, sizeof(d->host) - 1);
	d->node_started_ms = sc_clock_now_ms(d->clock);
	node_beat(d);
	int rc = set_workers(d, conc, err);
	if (rc) {
		daemon_stop(d);
		stop_threads(d);
		return rc;
	}
	if (thread_start(&d->watcher, watcher_main, d) == 0)
		d->watcher_started = true;
	if (thread_start(&d->alerter, alerter_main, d) == 0)
		d->alerter_started = true;
	else
		LOG(SC_LOG_ERROR, "alert", "event=alerter_not_started "
		       "msg=\"alerts are sent only by workers: failed sends "
		       "wait for the next lost slot or restart\"");
	if (thread_start(&d->pruner, pruner_main, d) == 0)
		d->pruner_started = true;
	else
		LOG(SC_LOG_ERROR, "prune", "event=pruner_not_started "
		       "msg=\"no daily prune until restart; surecron prune "
		       "still works\"");

	/* The web surface, when configured: a listen address that cannot
	 * be had or a token variable that is unset stops the start. */
	atomic_store(&d->loop_mono_ms, clock_mono_ms());
	cr = cfg_get(d);
	if (cr->cfg->http_listen) {
		struct web_opts wo = {
			.listen = cr->cfg->http_listen,
			.token_env = cr->cfg->http_token_env,
			.store_url = d->store_url, .clock = d->clock,
			.loop_mono_ms = &d->loop_mono_ms,
			.loop_stale_ms = LOOP_STALE_MS,
			.cfg_hold = web_cfg_hold,
			.cfg_release = web_cfg_release, .cfg_ctx = d};
		rc = web_start(&wo, &d->web, err);
		if (rc) {
			char q[SC_ERR_MSG_MAX + 8];
			LOG(SC_LOG_ERROR, "web", "event=http_failed code=%s "
			       "listen=%s msg=%s", sc_strerror(rc),
			       cr->cfg->http_listen,
			       log_quote(q, sizeof(q), err->msg));
			cfg_put(d, cr);
			daemon_stop(d);
			stop_threads(d);
			return rc;
		}
		LOG(SC_LOG_INFO, "web", "event=http_started listen=%s port=%d",
		       cr->cfg->http_listen, web_port(d->web));
	}
	/* status NAME's answers, when configured: like http.listen, a
	 * socket that cannot be made stops the start, so the operator
	 * hears of it now, not as commands that quietly go the slow way. */
	if (cr->cfg->status_socket) {
		rc = status_socket_start(cr->cfg->status_socket, d->store_url,
					 d->clock, &d->ssock, err);
		if (rc) {
			char q[SC_ERR_MSG_MAX + 8];
			LOG(SC_LOG_ERROR, "daemon", "event=status_socket_failed "
			       "code=%s msg=%s", sc_strerror(rc),
			       log_quote(q, sizeof(q), err->msg));
			cfg_put(d, cr);
			if (d->web) {
				web_stop(d->web);
				d->web = NULL;
			}
			daemon_stop(d);
			stop_threads(d);
			return rc;
		}
		LOG(SC_LOG_INFO, "daemon", "event=status_socket_started "
		       "path=%s", cr->cfg->status_socket);
	}
	cfg_put(d, cr);

	d->wd_ms = sdnotify_watchdog_usec() / 1000;
	d->wd_last_mono_ms = clock_mono_ms();
	int64_t last_recover = clock_mono_ms(), last_skew = 0;
	struct store_health h = {.backoff_ms = BACKOFF_MIN_MS};
	bool ready = false;
	for (;;) {
		maybe_stuck(d);
		atomic_store(&d->loop_mono_ms, clock_mono_ms());
		check_server_clock(d);
		check_clock(d);
		int64_t next = tick(d, LEAD_MS, &h);
		/* READY=1 after the first tick, whatever the store said: the
		 * workers are up and every schedule's plan is built (its one
		 * store read, 100,000 schedules' first starts), so what
		 * follows READY is the daemon's steady state, not the end of
		 * its start. A store that is down does not hold READY back:
		 * the loop's backoff is the daemon working. */
		if (!ready) {
			notify(d, "READY=1");
			ready = true;
		}
		/* The loop runs: systemd's watchdog hears so even in a store
		 * outage (a restart would not bring the store back); the
		 * external monitor only when the store answered. */
		watchdog_ping(d);
		if (next == TICK_STORE_DOWN) {
			store_backoff(d, &h);
			if (serve_requests(d))
				break;
			continue;
		}
		/* An idle tick does not touch the store (the plan): "the
		 * store answers" is the outage state, which every thread's
		 * store calls keep (the recovery pass here at least every
		 * RECOVER_EVERY_MS). */
		/* A store call stalled on any thread (store_stalled) counts
		 * as an outage here, for as long as it waits. */
		pthread_mutex_lock(&d->mu);
		bool store_ok = d->n_failing == 0;
		pthread_mutex_unlock(&d->mu);
		if (store_ok && !store_stalled())
			heartbeat_alive(d->hb);
		int64_t now = sc_clock_now_ms(d->clock);
		if (next != INT64_MAX)
			next -= LEAD_MS;
		if (clock_mono_ms() - last_recover >= RECOVER_EVERY_MS) {
			cr = cfg_get(d);
			recover(d->store, d, cr->cfg, &h);
			cfg_put(d, cr);
			last_recover = clock_mono_ms();
			node_beat(d);
		}
		cr = cfg_get(d);
		int64_t skew_every = skew_every_ms(cr->cfg);
		cfg_put(d, cr);
		if (clock_mono_ms() - last_skew >= skew_every) {
			skew_check(d);
			last_skew = clock_mono_ms();
		}
		/* While a skew is pending, look again in time for its grace. */
		if (d->n_skew && next > now + skew_every)
			next = now + skew_every;
		if (next > now + SCHED_MAX_SLEEP_MS)
			next = now + SCHED_MAX_SLEEP_MS;
		if (next > now + RECOVER_EVERY_MS)
			next = now + RECOVER_EVERY_MS;
		/* The watchdog and the heartbeat need the loop this often
		 * (real time; a fast test clock covers more clock time). */
		int64_t cap = loop_cap_ms(d);
		if (cap != INT64_MAX) {
			/* cap real ms in clock ms: times the clock's rate. */
			int64_t real_ns = clock_real_delta_ns(d->clock,
							      1000000000);
			int64_t rate = real_ns > 0 ? 1000000000 / real_ns : 1;
			if (rate < 1)
				rate = 1;
			if (next > now + cap * rate)
				next = now + cap * rate;
		}
		pthread_mutex_lock(&d->mu);
		if (!d->stopping && !d->reload)
			wait_until_ns(d, &d->main_cond, ms_to_ns(next));
		pthread_mutex_unlock(&d->mu);
		if (serve_requests(d))
			break;
	}

	/* Stop: no new claims (workers saw stopping); give running slots the
	 * grace (the current config's: a reload may have changed it), then
	 * release them through their tick. */
	cr = cfg_get(d);
	int64_t grace = cr->cfg->grace_ms;
	cfg_put(d, cr);
	notify(d, "STOPPING=1");
	LOG(SC_LOG_INFO, "daemon", "event=stopping grace_ms=%lld",
	       (long long)grace);
	/* The grace counts from the stop request, not from when this loop
	 * saw it: a store call may have held the loop up to
	 * STORE_STOP_WAIT_MS (store.h). */
	int64_t from = store_stop_mono_ms(), mono = clock_mono_ms();
	if (from <= 0 || from > mono)
		from = mono;
	int64_t deadline = from + clock_real_delta_ms(d->clock, grace);
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
		LOG(SC_LOG_WARN, "daemon",
		       "event=grace-over running=%d msg=\"releasing\"", left);
		atomic_store(&d->abort_runs, true);
	}
	stop_threads(d);
	if (d->web) {
		web_stop(d->web);
		d->web = NULL;
		LOG(SC_LOG_INFO, "web", "event=http_stopped");
	}
	if (d->ssock) {
		status_socket_stop(d->ssock);
		d->ssock = NULL;
		LOG(SC_LOG_INFO, "daemon", "event=status_socket_stopped");
	}
	/* The last slots' pings, briefly: a monitor that hangs must not
	 * hold up the stop. */
	heartbeat_flush(d->hb, STOP_FLUSH_MS);
	/* Gone from the nodes at once: the record of a node restarted with
	 * a new config would otherwise count as a live node of the old one
	 * for STORE_NODE_LIVE_MS (a config skew that is not there). A
	 * failure leaves it to age out. */
	if (d->node_started_ms) {
		char id[STORE_NODE_ID_MAX];
		struct sc_err e = {0};
		node_id(d, id);
		if (store_node_leave(d->store, id, &e) != 0)
			LOG(SC_LOG_WARN, "daemon", "event=node-leave-failed "
			       "code=%s msg=\"%s\"", sc_strerror(e.code), e.msg);
	}
	LOG(SC_LOG_INFO, "daemon", "event=stopped");
	pthread_mutex_lock(&d->mu);
	bool newer = d->schema_newer;
	pthread_mutex_unlock(&d->mu);
	if (newer)
		return sc_err_set(err, SC_EVERSION, "%s", d->schema_msg);
	return 0;
}

void daemon_free(struct daemon *d)
{
	if (!d)
		return;
	stop_threads(d);
	status_socket_stop(d->ssock);
	heartbeat_free(d->hb);
	for (int i = 0; i < d->n_slots; i++)
		free(d->workers[i]);
	free(d->workers);
	store_close(d->store);
	cfg_ref_free(d->cur);
	daemon_tokens_free(d->tokens); /* after the providers that use it */
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cond);
	pthread_cond_destroy(&d->main_cond);
	free(d->skew);
	free(d->store_url);
	free(d->config_path);
	/* Last: the store, the heartbeat and the threads read it. */
	sc_clock_free(d->own_clock);
	free(d);
}
