/*
 * store.h - the durable store: one interface, two backends.
 *
 * The layers above (queue, scheduler, orchestrator, delivery, http token
 * cache, ledger reports) see only the functions declared here. A backend
 * (store_sqlite.c, store_pg.c) fills a `struct store_ops`; each
 * operation below that changes more than one row is ONE transaction in the
 * backend, so a crash leaves either all of it or none of it.
 *
 * Threading: a `struct store` handle is used by one thread at a time.
 * Several threads (or processes, or machines with PostgreSQL) share work by
 * opening one handle each on the same database. Never carry a handle
 * across fork(): the child opens its own.
 *
 * Times are int64 UTC milliseconds, read from the clock given to
 * store_open (real or virtual), never from the system directly.
 *
 * Memory: fixed-size name fields avoid allocation in the hot paths; the few
 * strings handed out (message bodies, ledger text) are allocated and freed
 * by the matching _free function or sc_free(), as each item says.
 *
 * This header is the contract between the backends and their users; the
 * backend-neutral logic (backoff arithmetic, class names) stays in queue.c
 * and friends, and the store's own (the stalled-job rule, the claim order)
 * in store.c, never in a backend.
 */
#ifndef SURECRON_STORE_H
#define SURECRON_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "surecron.h"

#define STORE_NAME_MAX 128  /* schedule, target, provider names, incl. NUL */
#define STORE_WORKER_MAX 64 /* worker identity, incl. NUL */

/* ---- jobs ------------------------------------------------------------ */

/*
 * Job states (the diagram and every transition live at the top of
 * queue.c):  READY -> ACTIVE -> DONE | READY (retry) | DEAD
 */
enum job_state {
	JOB_READY = 0,  /* waiting for run_at (due, or delayed for a retry) */
	JOB_ACTIVE = 1, /* claimed: lease_owner holds it until lease_expires */
	JOB_DONE = 2,   /* completed; the slot is done */
	JOB_DEAD = 3,   /* attempts exhausted or unrecoverable: slot lost */
};

struct store_job {
	int64_t id;
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;            /* the scheduled instant, UTC */
	enum job_state state;
	int attempts;               /* attempts started, incl. a running one */
	int n_stalls;               /* attempts that ended by lease expiry */
	struct sc_retry_policy policy;
	int64_t run_at_ms;          /* READY: not before this instant */
	int64_t lease_token;        /* fencing token of the current claim */
	char lease_owner[STORE_WORKER_MAX];
	int64_t lease_expires_ms;
	int64_t started_ms;         /* when the current/last attempt began */
	int64_t created_ms;
	bool manual;                /* enqueued by `trigger`, not the scheduler */
	bool overlapped;            /* claims only: a `skip` schedule's job
				       claimed while another job of its
				       schedule was ACTIVE (store_overlap_set):
				       record it skipped, do not run it */
};

/* Counts of a schedule's jobs by state; `delayed` are READY jobs whose
 * run_at is in the future (a retry waiting). */
struct store_counts {
	int64_t ready_due, delayed, active, done, dead;
};

/* ---- ledger ---------------------------------------------------------- */

/* What one ledger row records. Stored as these exact words. */
#define LEDGER_SUCCESS "success"     /* an attempt completed the slot */
#define LEDGER_FAILED "failed"       /* an attempt failed, retry scheduled */
#define LEDGER_LOST "lost"           /* the last attempt failed: slot lost */
#define LEDGER_STALLED "stalled"     /* an attempt's worker vanished */
#define LEDGER_MISSED "missed"       /* a slot not run after downtime */
#define LEDGER_PAUSED "paused"       /* a slot not run: its schedule was
					paused (store_pause_set); neither
					missed nor lost, owed nothing */
#define LEDGER_DUPLICATE "duplicate" /* an extra copy may have been sent */
#define LEDGER_RELEASED "released"   /* an attempt given back on shutdown */
#define LEDGER_DECISION "decision"   /* an operator's `release` decision
					(details: target, decision, by) */
#define LEDGER_ALERT "alert"         /* an alert send's state changed
					(details: alert_id, reason, round,
					target, state, tries) */
#define LEDGER_ACKED "acked"         /* an operator's `ack` of an open
					alert (details: alert_id, reason,
					note, by) */
#define LEDGER_RECOVERED "recovered" /* an alerted slot later succeeded
					(details: alert_id, reason) */
#define LEDGER_LATE "late"           /* a due slot not started within
					sla.start_within (issue 14) */
#define LEDGER_OVERRUN "overrun"     /* an attempt running past
					sla.max_runtime */
#define LEDGER_STALE "stale"         /* no delivered slot within
					sla.success_within */
#define LEDGER_REPLACED "replaced"   /* an attempt ended by a newer slot
					of its `overlap: replace` schedule
					(error_class "overlap", details
					cause "replaced", by: the slot) */
#define LEDGER_SKIPPED "skipped"     /* a slot of an `overlap: skip`
					schedule not run: another slot of
					it was running (error_class and
					details cause: "overlap"); not lost */
#define LEDGER_ABANDONED "abandoned" /* a staged copy of a target no
					longer among its schedule's
					targets, closed unsent (issue 43;
					error_class "target_removed",
					details: target, state, tries,
					may_have_arrived) */

/* The outcomes of a run: the rows an attempt (or a slot's skip) wrote,
 * as against the notes about a slot (alert, acked, missed, late...).
 * `status` shows a schedule's newest row of these as its last run
 * (issue 43); both stores' ledger_head keep it (run_id, schema 10 on
 * both), so the list, as SQL, is part of the file format: changing it
 * takes a migration. */
#define LEDGER_RUN_OUTCOMES_SQL                                           \
	"('success', 'failed', 'lost', 'skipped', 'stalled', 'released')"

struct ledger_row {
	int64_t id;                 /* assigned by the store */
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;
	int64_t job_id;             /* 0 when no job (missed slots) */
	int attempt;                /* 0 when not an attempt */
	int64_t started_ms, finished_ms;
	char outcome[16];           /* one of the LEDGER_* words */
	char error_class[32];       /* "" on success, else e.g. "task" */
	char *error_msg;            /* may be NULL; never holds secrets */
	int64_t retry_hint_ms;      /* 0 when none */
	char *details_json;         /* a JSON object or NULL */
};

struct ledger_filter {
	const char *schedule;       /* NULL: all */
	int64_t since_ms;           /* slot_ms >= since (INT64_MIN: open) */
	int64_t until_ms;           /* slot_ms <  until (INT64_MAX: open) */
	const char *outcome;        /* NULL: all; else one LEDGER_* word */
	bool lost_or_missed;        /* only LEDGER_LOST and LEDGER_MISSED
				       (and LEDGER_SKIPPED: the lost
				       report counts those apart) */
	int limit;                  /* 0: no limit */
	bool newest_first;          /* newest row first: with limit 1, the
				       latest row, without reading the rest */
};

/* ---- delivery -------------------------------------------------------- */

/*
 * A send's states for one (slot, target). The outbox row holds the
 * composed message and its state; state SENT is the send guard.
 *
 *   NONE -> PENDING [store_outbox_put] -> SENDING -> SENT | FAILED | UNKNOWN
 *   FAILED -> SENDING (retry);  UNKNOWN -> SENDING (resend) or held.
 */
enum send_state {
	SEND_NONE = 0,    /* no outbox row */
	SEND_PENDING = 1, /* composed and stored, not yet tried */
	SEND_SENDING = 2, /* a request may be on the wire */
	SEND_SENT = 3,    /* delivered: the send guard; never sent again */
	SEND_FAILED = 4,  /* the last try failed for sure */
	SEND_UNKNOWN = 5, /* found SENDING after a crash: may have arrived */
	SEND_ABANDONED = 6, /* never tried again: an alert send still
			       failing when the retry bound ran out; an
			       outbox row of a target removed from its
			       schedule (store_outbox_abandon, schema 13
			       on SQLite) */
};

/* The word of a send state in pages, the ledger's details and messages
 * ("none", "pending", "sending", "sent", "failed", "unknown",
 * "abandoned"; "?" for a value out of the enum). Static; never NULL. */
const char *store_send_state_name(enum send_state st);

struct outbox_entry {
	enum send_state state;
	int n_tries;                /* times it went to SENDING */
	int64_t sent_ms;            /* when SENT, else 0 */
	char *body;                 /* the composed message (owned); NULL
				       for a SENT row whose body prune took
				       (store_prune_batch) */
};

/* ---- the handle ------------------------------------------------------ */

struct store;

/*
 * Opens (creating if needed, mode 0600) the store at url and migrates its
 * schema forward. url: "sqlite:PATH" (a bare path is taken as sqlite too)
 * or "postgresql://..." / "postgres://...".
 * Errors: SC_EINVAL (bad url), SC_ECORRUPT (not our database; the file is
 * left untouched), SC_EVERSION (made by a newer surecron; untouched),
 * SC_EIO / SC_ENOSPC / SC_EACCES, SC_EDB.
 * The clock is borrowed and must outlive the store.
 */
int store_open(const char *url, struct sc_clock *clock, struct store **out,
	       struct sc_err *err);

/*
 * store_open for a store that must already be there: SC_ENOENT, and
 * nothing created, when the SQLite file does not exist or holds no
 * surecron schema (empty), or the PostgreSQL database (search path) has
 * no surecron tables. An older schema is still migrated forward. For the
 * commands that read or act on the store a daemon keeps: a mistyped
 * path must fail, not read as a store where nothing ever went wrong.
 */
int store_open_existing(const char *url, struct sc_clock *clock,
			struct store **out, struct sc_err *err);

/*
 * Caps the page cache of s's connection at kib KiB (kib > 0), for a
 * handle that reads little at a time, such as a daemon's workers: SQLite
 * empties a connection's cache whenever another connection has written
 * since its last read, which in a daemon is between most claims, while a
 * full cache of the default 2 MiB stays allocated (issue 45: 18 such
 * handles were 1.4 MB of the daemon's peak on 100,000 schedules, more
 * after a burst). A backend with no per-handle page cache (PostgreSQL)
 * ignores it. Returns 0, SC_EINVAL (s NULL or kib <= 0) or the
 * backend's error. Not thread-safe for s (like every call on a handle).
 */
int store_cache_cap(struct store *s, int kib, struct sc_err *err);

/* Closes the handle; NULL is ignored. */
void store_close(struct store *s);

/* The clock the store reads. */
struct sc_clock *store_clock(const struct store *s);

/* The backend's name ("sqlite", "postgresql"), static. */
const char *store_backend_name(const struct store *s);
/* Whether the backend's writers take turns on one lock (SQLite): a long
 * write transaction, such as a prune batch, then delays every claim. */
bool store_one_writer(const struct store *s);

/* ---- stalls and stops (process-wide) ---------------------------------- */

/*
 * A backend that waits on a server (PostgreSQL) bounds every wait
 * (docs/operations.md, "Timeouts"); these two process-wide states tie
 * those waits to the program around them. Both are atomics: any thread
 * may call them at any time.
 *
 * store_stop_waits: the program is stopping (on true; false clears it,
 * for a program that starts a daemon again in the same process). From
 * then on a wait that has lasted STORE_STOP_WAIT_MS since the stop (or
 * since it began, if later) is abandoned as a stall would be: its
 * connection is dropped and the operation fails with SC_EIO. A healthy
 * store answers well within it, so the writes of a graceful stop (a
 * finish, a release) still go through; a stalled one no longer holds the
 * stop up.
 */
#define STORE_STOP_WAIT_MS 1000
void store_stop_waits(bool on);

/*
 * True while any handle of the process is stalled: one of its waits has
 * lasted past STORE_STALL_SLOW_MS, or was abandoned at its deadline and
 * no statement of that handle has been answered since. The daemon tells
 * its external monitor nothing while this holds (as in an outage).
 */
#define STORE_STALL_SLOW_MS 5000
bool store_stalled(void);

/* For backends: a handle enters (on true) or leaves the stalled state.
 * Each call of one kind is matched by one of the other. */
void store_stall_mark(bool on);

/* For backends: the CLOCK_MONOTONIC ms at which store_stop_waits(true)
 * was called; 0 when it was not (or was cleared). */
int64_t store_stop_mono_ms(void);

/* ---- jobs (used by queue.c, which owns the state machine) ------------ */

/*
 * Inserts a READY job for (schedule, slot) unless one exists. *created says
 * which; *job_id is the job either way (NULLs allowed).
 */
int store_job_enqueue(struct store *s, const char *schedule,
		      int64_t slot_ms, const struct sc_retry_policy *policy,
		      int64_t run_at_ms, bool manual, int64_t *job_id,
		      bool *created, struct sc_err *err);

/* Enqueues n slots of one schedule in one transaction (idempotent); each
 * new job is due at its own slot instant (run_at = slot). */
int store_job_enqueue_many(struct store *s, const char *schedule,
			   const int64_t *slots_ms, size_t n,
			   const struct sc_retry_policy *policy,
			   struct sc_err *err);

/*
 * One slot for store_job_enqueue_batch: a job for (schedule, slot_ms),
 * due at its slot (run_at = slot), then the schedule's state moved to
 * last_ms (store_sched_last_set's rule: never backwards). created: out.
 */
struct store_enqueue {
	const char *schedule;
	int64_t slot_ms;
	const struct sc_retry_policy *policy;
	int64_t last_ms;
	bool created;
};

/* A slot of store_job_enqueue_batch as its statement binds it. */
struct store_enqueue_row {
	const char *schedule;
	int64_t slot_ms;
	struct sc_retry_policy policy;
	int64_t last_ms;
};

/*
 * The scheduler's tick in one transaction (the 1,000 schedules due on the
 * same instant): every job of v (idempotent, like store_job_enqueue) and
 * every state, all committed together or none, so each schedule's
 * "enqueue, then last_set" order holds (both or neither). Sets each
 * v[i].created. n = 0 does nothing.
 */
int store_job_enqueue_batch(struct store *s, struct store_enqueue *v,
			    size_t n, struct sc_err *err);

/*
 * The overlap rule of this handle's claims (issue 17; spec.h enum
 * overlap). Off, the default of a new handle: a claim takes any due job,
 * as `allow` does. On: a job of a schedule named in neither list is
 * `queue`: it is not claimed while another job of its schedule is ACTIVE,
 * whichever handle, process or node holds it (the claim itself checks,
 * serialised with every other claim of the store), nor while an earlier
 * due job of its schedule (in the claim order, below) is READY, and one
 * claim takes at most one job of such a schedule; its attempt never
 * starts, on record, before the previous one of its schedule finished
 * (the claim reads now under the lock of its check). A schedule in
 * `allow` is claimed as if off; one in `skip` is claimed all the same, with
 * store_job.overlapped set when another job of its schedule was ACTIVE
 * (or an earlier one of it is in the same claim): the caller finishes it
 * as LEDGER_SKIPPED.
 * allow / skip: n_allow / n_skip names (NULL when 0), copied. The daemon
 * sets it from the configuration before each claim.
 * Errors: SC_EINVAL (a name empty, too long or holding a newline),
 * SC_ENOMEM; on error the previous rule stays. Not thread-safe (the
 * handle's thread).
 */
int store_overlap_set(struct store *s, bool on, const char *const *allow,
		      size_t n_allow, const char *const *skip, size_t n_skip,
		      struct sc_err *err);

/*
 * The schedules this handle's claims may take (issue 43): while the rule
 * of store_overlap_set is on, a claim takes only jobs whose schedule is
 * one of names[0..n) (copied); the others wait for a node that knows
 * them, READY and untouched, whatever their run_at. names NULL: any
 * schedule (the default of a new handle); n 0 with names non-NULL: none.
 * The daemon sets it from the configuration with the overlap rule
 * (queue_overlap_rule): every schedule's name and its renamed_from names.
 * The claim stays a walk of the due jobs in the claim order, the names a
 * filter of it: one lookup per job walked, in a set built when the names
 * change, never per claim (SQLite: sc_known; PostgreSQL: the
 * connection's claim_known table). Errors: SC_EINVAL (a name empty or
 * too long), SC_ENOMEM; on error the previous set stays. Not thread-safe
 * (the handle's thread).
 */
int store_claim_known_set(struct store *s, const char *const *names,
			  size_t n, struct sc_err *err);

/*
 * The same set built once and shared by many handles (issue 45: a daemon
 * of 16 workers held 16 copies of the names of 100,000 schedules, 1 MB
 * each, and built each through a JSON tree of 80 MB). store_known_new
 * makes an immutable set of names[0..n) (checked and copied as by
 * store_claim_known_set) with one reference into *out: 0, SC_EINVAL or
 * SC_ENOMEM (*out untouched). store_known_use makes it the set of s's
 * claims, s keeping a reference of its own until another set replaces it
 * or the handle closes; NULL: any schedule. store_known_free drops the
 * caller's reference (the last one frees; NULL is ignored). The
 * references are atomic: a set may be used and freed from any thread;
 * store_known_use is for the handle's thread.
 */
struct store_known;
int store_known_new(const char *const *names, size_t n,
		    struct store_known **out, struct sc_err *err);
void store_known_use(struct store *s, struct store_known *k);
void store_known_free(struct store_known *k);
/* Whether name[0..len) is in k (NULL: any name is). A lookup in a hash
 * built with the set: a backend that filters row by row (SQLite's claim
 * walk) asks this instead of building the set at each statement run.
 * Safe from any thread holding a reference. */
bool store_known_has(const struct store_known *k, const char *name,
		     size_t len);

/*
 * The claim order (docs/internals/queue.md), "fresh slots first": among
 * the jobs a claim may take, first those never started (attempts 0: an
 * on-time slot, or one given back by a release), then retries (attempts >
 * 0: after a failure or a stall); within each, earliest run_at, then id.
 * A due retry so never holds an on-time slot back: it waits at most for
 * the attempt already running on the worker.
 */

/*
 * Claims up to max due jobs (READY, run_at <= now), in the claim order:
 * each becomes ACTIVE with attempts+1, a fresh lease_token, lease_owner =
 * worker, lease_expires = now + lease_ms, started = now. Fills out[0..*n).
 * *n == 0 when nothing is due. Two claimers never get the same job.
 */
int store_job_claim(struct store *s, const char *worker, int64_t lease_ms,
		    struct store_job *out, size_t max, size_t *n,
		    struct sc_err *err);

/*
 * store_job_claim that also takes jobs due within ahead_ms (run_at <= now
 * + ahead_ms), so a worker can do its reads before the due instant and
 * start the task right on it. started = max(now, run_at): an attempt
 * never starts, on record, before it was due.
 */
int store_job_claim_ahead(struct store *s, const char *worker,
			  int64_t lease_ms, int64_t ahead_ms,
			  struct store_job *out, size_t max, size_t *n,
			  struct sc_err *err);

/* Extends the lease of job id to now + lease_ms if lease_token still
 * matches. SC_ELEASE otherwise (nothing changes). */
int store_job_heartbeat(struct store *s, int64_t id, int64_t lease_token,
			int64_t lease_ms, struct sc_err *err);

/*
 * Ends the current attempt of job id, fenced by lease_token (SC_ELEASE and
 * no change if it does not match), in one transaction with its ledger row:
 *   new_state DONE:  row->outcome "success"
 *   new_state READY: retry at run_at_ms, row->outcome "failed"
 *   new_state DEAD:  row->outcome "lost"
 * `row` carries outcome/error fields; the store fills schedule, slot,
 * job_id, attempt, started, and finished unless row->finished_ms is set
 * (the caller's "now", so that a retry's run_at = finished + backoff
 * holds exactly in the ledger). row may be NULL, and an empty
 * row->outcome means the word above. run_at_ms is used for READY only.
 * When row->job_id is id and row->schedule is not empty, row's schedule,
 * slot_ms, attempt and started_ms must be the claimed job's as its claim
 * returned them (queue.c passes its copy): a store may write them as
 * they are instead of reading them back (SQLite does: the fence held,
 * so the job is still that claim's).
 * Crash-test contract: after its writes and before COMMIT, a backend calls
 * FAILPOINT("queue.before_complete_commit") when new_state is DONE and
 * FAILPOINT("queue.in_retry_schedule") when it is READY (failpoint.h); a
 * backend whose finish is one statement (PostgreSQL) calls them right
 * before sending it, where a crash leaves the same store. Either way the
 * statements are the same in every build.
 */
int store_job_finish(struct store *s, int64_t id, int64_t lease_token,
		     enum job_state new_state, int64_t run_at_ms,
		     const struct ledger_row *row, struct sc_err *err);

/*
 * store_job_finish to DONE and store_slot_mark of the job's slot in one
 * transaction, committed durably as the marker alone is: both or
 * neither. Fenced by lease_token (SC_ELEASE: neither is written), which
 * is the fence store_slot_mark would check for the same claim. The
 * crash points are store_job_finish's for DONE.
 */
int store_job_complete_marked(struct store *s, int64_t id, int64_t lease_token,
			      const struct ledger_row *row,
			      struct sc_err *err);

/*
 * Completes the claimed jobs jobs[0..n) that are ready together: each as
 * store_job_finish to DONE with ledger row `row` (may be NULL; its
 * finished_ms, when set, for every job), fenced by its own lease_token,
 * in as few commits as the backend can: one transaction, at the level
 * each completion has alone (SQLite NORMAL, PostgreSQL asynchronous, its
 * statements sent in one round trip), so a crash takes all of them or
 * none; backends without it finish them one by one. rcs[i]
 * (n entries, caller's) gets job i's result: 0, or SC_ELEASE / SC_ENOENT
 * when its fence refused it (nothing of it written; the others are
 * still completed). Returns 0, or an error of the store (rcs then
 * undefined): any subset of the jobs may be complete, as after a failed
 * commit, and completing each again is safe (a completed one answers
 * SC_ELEASE). No marker: a marked completion is durable and goes alone
 * (store_job_complete_marked). Crash point: "queue.before_complete_commit"
 * before the commit. Not thread-safe per handle (as every call).
 */
int store_job_complete_many(struct store *s, const struct store_job *jobs,
			    size_t n, const struct ledger_row *row, int *rcs,
			    struct sc_err *err);

/* Gives an ACTIVE job back (graceful shutdown): READY, run_at = now, the
 * attempt not counted (attempts - 1), with a "released" ledger row for
 * that attempt number; fenced like finish. */
int store_job_release(struct store *s, int64_t id, int64_t lease_token,
		      struct sc_err *err);

/* store_job_release due at run_at_ms instead of now (the runner could not
 * run it: a backoff, issue 42), its ledger row with error_class and msg
 * (never secrets; both copied). */
int store_job_give_back(struct store *s, int64_t id, int64_t lease_token,
			int64_t run_at_ms, const char *error_class,
			const char *msg, struct sc_err *err);

/*
 * Recovers ACTIVE jobs whose lease expired before now: each gets a
 * "stalled" ledger row and n_stalls+1; it becomes READY (run_at now) or,
 * when its attempts are used up or n_stalls reached max_stalls, DEAD with a
 * "lost" row (store_stall_rule below says it exactly, for every backend).
 * max_stalls < 1: SC_EINVAL, nothing changes. *n_recovered counts the jobs
 * touched.
 */
int store_job_recover(struct store *s, int max_stalls, int *n_recovered,
		      struct sc_err *err);

/*
 * Shortens every ACTIVE lease that ends more than lease_ms + slack_ms after
 * now to end at now + lease_ms (issue 42): no lease is granted for longer,
 * so one that ends later was written before the clock was stepped back,
 * and it is judged by the time it was granted for, not by its absolute
 * end (slack_ms: the clocks of nodes may differ by that much). *n counts
 * the leases shortened. lease_ms < 1 or slack_ms < 0: SC_EINVAL.
 */
int store_job_lease_clamp(struct store *s, int64_t lease_ms, int64_t slack_ms,
			  int *n, struct sc_err *err);

/*
 * The store server's own clock, UTC ms (PostgreSQL: clock_timestamp()),
 * so nodes can hold their time to one reference. SC_ENOENT when the
 * store has no clock of its own (SQLite: the host's is the only one).
 */
int store_server_now_ms(struct store *s, int64_t *out_ms, struct sc_err *err);

/* A job that a recovery moved to DEAD: what its lost-slot alert says. */
struct store_dead_job {
	int64_t job_id;
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;
	int attempt;                /* the attempt that stalled */
	char error_msg[256];        /* the "lost" row's message */
};

/* At most this many dead jobs are listed per recovery call; the rest are
 * only counted (n_more). Their "lost" rows are written all the same. */
#define STORE_DEAD_MAX 1024

/* The jobs one recovery call moved to DEAD. Start zeroed ({0}); release
 * with store_dead_list_dispose. Not shared between threads. */
struct store_dead_list {
	struct store_dead_job *v;   /* v[0..n), owned */
	size_t n, cap;
	size_t n_more;              /* dead jobs beyond STORE_DEAD_MAX */
};

/* Frees dl->v and zeroes *dl; NULL is ignored. */
void store_dead_list_dispose(struct store_dead_list *dl);

/*
 * store_job_recover that also hands back, in *dead (emptied first; NULL:
 * not wanted), every job THIS call moved to DEAD, i.e. whose DEAD
 * transition and "lost" row were committed by this handle's transaction.
 * When several handles (nodes) recover at once, each dead job is listed by
 * exactly one of them, so that one alone sends its lost-slot alert. The
 * list holds only committed transitions: a batch whose commit failed is
 * taken out again. SC_ENOMEM when the list cannot grow (the recovery
 * itself may then have committed; *dead lists what it could).
 */
int store_job_recover_dead(struct store *s, int max_stalls,
			   int *n_recovered, struct store_dead_list *dead,
			   struct sc_err *err);

/* Fetches a job by id (SC_ENOENT) or by (schedule, slot). */
int store_job_get(struct store *s, int64_t id, struct store_job *out,
		  struct sc_err *err);
int store_job_find(struct store *s, const char *schedule, int64_t slot_ms,
		   struct store_job *out, struct sc_err *err);

/* A DEAD job becomes READY again (run_at = now) with a fresh budget of
 * `budget` more attempts (<= 0: as many as its current max_attempts).
 * attempts is kept, so attempt numbers go on across the revival (the
 * ledger never shows two attempts 1 of one slot): max_attempts becomes
 * attempts + budget. Its lost alert counts as not raised again, so that
 * store_alert_dead_unalerted lists it if it dies again. SC_ESTATE if it
 * is not DEAD. */
int store_job_revive(struct store *s, int64_t id, int budget,
		     struct sc_err *err);

/* The earliest instant at which something is due: a READY job's run_at or
 * an ACTIVE job's lease expiry. INT64_MAX when nothing is pending. While
 * the handle's rule is on, only READY jobs its claims may take count
 * (store_claim_known_set): a job of a schedule this node lacks never
 * reads as due, so a waiting one does not keep the worker polling. */
int store_job_next_due(struct store *s, int64_t *out_ms,
		       struct sc_err *err);

/* Counts jobs of a schedule (NULL: all) by state. */
int store_job_counts(struct store *s, const char *schedule,
		     struct store_counts *out, struct sc_err *err);

/* ---- ledger ---------------------------------------------------------- */

/*
 * Appends a row not tied to a job transition (missed slots, duplicates).
 * A LEDGER_MISSED row is kept once per (schedule, slot_ms), by a unique
 * index of the schema (version 2): appending one for a slot that has one
 * already writes nothing and still returns 0, so nodes catching up the
 * same downtime at once cannot record a slot twice (the scheduler's check
 * for a missed slot is a read, then this write). Other outcomes are
 * never deduplicated.
 */
int store_ledger_append(struct store *s, const struct ledger_row *row,
			struct sc_err *err);

/* store_ledger_append that says whether the row was written: *written is false
 * only for a LEDGER_MISSED row whose slot had one already, or a
 * LEDGER_PAUSED row likewise (kept once per slot too, schema 7). */
int store_ledger_append_written(struct store *s, const struct ledger_row *row,
				bool *written, struct sc_err *err);

/* Rows matching f (NULL: every row), oldest first (by id, the order they
 * were written); free with store_ledger_rows_free. *rows is NULL when n is 0. */
int store_ledger_query(struct store *s, const struct ledger_filter *f,
		       struct ledger_row **rows, size_t *n, struct sc_err *err);
void store_ledger_rows_free(struct ledger_row *rows, size_t n);

/*
 * Appends n rows in one transaction (all or none), unfenced: for bulk
 * writers that own their rows (the scale benchmark's generator, tests).
 * A missed row whose slot has one already is skipped, as
 * store_ledger_append_written does; *n_written (NULL allowed) counts the
 * rows written.
 */
int store_ledger_append_many(struct store *s, const struct ledger_row *rows,
			     size_t n, size_t *n_written, struct sc_err *err);

/*
 * The lost-slot report's read (issue 15), in one query whatever the
 * ledger's depth: every LEDGER_LOST and LEDGER_MISSED row of f's period
 * (f->schedule NULL: all schedules; f->outcome, f->limit, f->newest_first
 * and f->lost_or_missed are ignored), in the order they were written (by
 * id, as store_ledger_query), with in
 * (*recovered_ms)[i] the finish of the newest LEDGER_SUCCESS row of the
 * same (schedule, slot), 1 when that row has no finish, 0 when none.
 * Both arrays are allocated: free rows with store_ledger_rows_free and
 * recovered_ms with free(). n = 0 leaves both NULL.
 */
int store_ledger_lost(struct store *s, const struct ledger_filter *f,
		      struct ledger_row **rows, int64_t **recovered_ms,
		      size_t *n, struct sc_err *err);

/*
 * What `status` shows of each schedule, read in one pass (issue 15): job
 * counts by state and the last run, for every schedule that has
 * jobs or ledger rows (schedule NULL), or for that one only. Sorted by
 * schedule name (strcmp). `last` is the run row (an outcome of
 * LEDGER_RUN_OUTCOMES_SQL, never an alert's, an ack's or a missed
 * slot's: issue 43) with the newest slot (of those, the last written);
 * has_last is false when the schedule has no such row. Free with
 * store_sched_summaries_free.
 */
struct store_sched_summary {
	char schedule[STORE_NAME_MAX];
	struct store_counts counts;
	bool has_last;
	struct ledger_row last;     /* error_msg, details_json owned */
};

int store_sched_summaries(struct store *s, const char *schedule,
			  struct store_sched_summary **out, size_t *n,
			  struct sc_err *err);
void store_sched_summaries_free(struct store_sched_summary *v, size_t n);

/*
 * The last success of each schedule, for /metrics (issue 16): for every
 * schedule that has a LEDGER_SUCCESS row, the one of its newest slot (of
 * those, the last written), sorted by schedule name (strcmp). Schedules
 * without a success are absent. Cost: one row lookup per schedule
 * (SQLite: ledger_head, schema 9; PostgreSQL: a seek of the partial
 * index ledger_ok), whatever the number of ledger rows or of failures
 * since the success. *out is allocated (NULL when n is
 * 0): free it with free(). On failure *out is NULL and *n is 0.
 * Like every call on a handle, one thread at a time (see the top).
 */
struct store_last_ok {
	char schedule[STORE_NAME_MAX];
	int64_t id;          /* the success row */
	int64_t slot_ms;
	int64_t finished_ms;  /* 0 when the row has no finish */
};

int store_last_successes(struct store *s, struct store_last_ok **out,
			 size_t *n, struct sc_err *err);

/*
 * Test seam (the plan guard of tests/unit/test_ledger_query.c): the SQL of
 * the i-th ledger read of the SQLite backend (every filter shape of
 * store_ledger_query, then store_ledger_lost's, store_sched_summaries'
 * and store_last_successes' statements), written into buf (cap >= 1024), or NULL past the last.
 * *reads_all is true for a shape whose answer is every row (no schedule,
 * no period, no indexed outcome), which a full scan serves best.
 */
const char *store_sqlite_plan_sql(size_t i, char *buf, size_t cap,
				  bool *reads_all);

/*
 * Test seam (the plan guard of tests/unit/test_store_pg.c): the SQL of
 * the i-th PostgreSQL read that finds each schedule's rows through its
 * ledger_head row (store_sched_summaries' two forms, parameters $1 now
 * and $2 the schedule, then store_last_successes', none), or NULL past
 * the last. Static text.
 */
const char *store_pg_plan_sql(size_t i);

/* Test seam (the claim's plan guard, issue 45): the SQL of the PostgreSQL
 * claim's pick with the overlap rule on (parameters $1 now, $2 max, $3
 * ahead_ms, $4 allow, $5 skip, $6 known schedules). Static text. */
const char *store_pg_claim_pick_sql(void);

/* ---- alerts (alert.c owns the rules; docs/internals/alert.md) ---------- */

/*
 * An alert is a delivery too (issue 13): it is a row of its own, raised in
 * the store, and its copies are send rows that are retried until they are
 * taken or the bound runs out. The rows:
 *
 *   alert       one per (schedule, slot_ms, reason, generation); the
 *               incident's record: OPEN until an operator acks it or the
 *               slot recovers. `rounds` counts its messages (1, plus one
 *               per realert); `staged_rounds` how many of them have send
 *               rows yet.
 *   alert send  one per (alert, round, target): the message of that
 *               round for that target and its send state
 *               (PENDING -> SENDING -> SENT | FAILED | UNKNOWN,
 *               FAILED|UNKNOWN -> SENDING again, or -> ABANDONED).
 *
 * Every function is one transaction. Several nodes may call them at once:
 * the unique key makes a raise happen once, the compare-and-set of
 * store_alert_realert makes a round happen once, and the lease of
 * store_alert_send_claim makes one node send one copy.
 */
#define ALERT_REASON_LOST "lost"
#define ALERT_REASON_MISSED "missed"
#define ALERT_REASON_RECOVERED "recovered"

enum alert_status {
	ALERT_OPEN = 0,      /* lost or missed, nobody has acted yet */
	ALERT_ACKED = 1,     /* an operator ran `surecron ack` */
	ALERT_HEALED = 2,    /* the slot(s) later succeeded */
	ALERT_CLOSED = 3,    /* not an incident (a "recovered" message), or
				replaced by a newer alert of the slot */
};

struct store_alert {
	int64_t id;                 /* assigned by the store */
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;            /* lost: the slot; missed: the first */
	int64_t last_slot_ms;       /* missed: the last; else slot_ms */
	int64_t n_slots;            /* missed: how many; else 1 */
	char reason[16];            /* ALERT_REASON_* */
	int64_t generation;         /* lost: the job's attempts when it died
				       (a revived slot that dies again is a
				       new alert); recovered: the id of the
				       alert it closes; missed: 0 */
	enum alert_status status;   /* raise: OPEN, or CLOSED for recovered */
	int attempts;               /* attempts made */
	char error_msg[256];        /* why; never holds secrets */
	int64_t job_id;             /* lost: the DEAD job; else 0 */
	int rounds;                 /* messages created: raise makes 1 */
	int staged_rounds;          /* rounds with send rows */
	int64_t created_ms;         /* store's now at raise */
	int64_t round_ms;           /* when the latest round was created */
	int64_t closed_ms;          /* 0 while OPEN */
	char note[256];             /* ack's --note, else "" */
};

struct alert_filter {
	const char *schedule;       /* NULL: all */
	bool open_only;             /* status OPEN */
	bool unstaged_only;         /* staged_rounds < rounds */
	int64_t slot_ms;            /* INT64_MIN: any; else alerts whose
				       [slot_ms, last_slot_ms] holds it */
	int64_t since_ms;           /* slot_ms >= since (INT64_MIN: open) */
	int64_t until_ms;           /* slot_ms <  until (INT64_MAX: open) */
	int limit;                  /* 0: no limit */
};

struct store_alert_send {
	int64_t id;
	int64_t alert_id;
	int round;
	char target[STORE_NAME_MAX];
	enum send_state state;      /* claim: the state BEFORE the claim, an
				       expired SENDING given as UNKNOWN */
	int n_tries;                /* times it went to SENDING (claim:
				       including this one) */
	int64_t next_try_ms;        /* FAILED/UNKNOWN: not before this */
	int64_t lease_token;        /* claim: this claim's token */
	int64_t created_ms, sent_ms;
	char last_error[256];
	char *body;                 /* the message (owned); claim only, NULL
				       from store_alert_sends */
	/* Of its alert, so a sender needs no second read: */
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;
	char reason[16];
	int64_t alert_created_ms;
};

/*
 * Raises a->reason for (a->schedule, a->slot_ms) unless an alert with the
 * same (schedule, slot_ms, reason, generation) exists. Written: every
 * field of a but id, rounds (1), staged_rounds (0), created_ms and
 * round_ms (now), closed_ms (0; now for CLOSED). *created says which;
 * *id (NULL allowed) gets the alert's id either way. When a->job_id is
 * not 0, that job's lost alert counts as raised from now on (it leaves
 * store_alert_dead_unalerted), created or not. A new lost alert CLOSES
 * the older OPEN lost alerts of the same slot (it replaces them).
 */
int store_alert_raise(struct store *s, const struct store_alert *a,
		      bool *created, int64_t *id, struct sc_err *err);

/*
 * DEAD jobs whose lost alert is not raised yet (died since the store's
 * schema 4, or revived and dead again), oldest job first, at most max.
 * Each entry's error_msg is the message of the job's latest "lost" row
 * and attempt its attempts.
 */
int store_alert_dead_unalerted(struct store *s, struct store_dead_job *out,
			       size_t max, size_t *n, struct sc_err *err);

/* Alerts matching f (NULL: all), oldest first (by id); free with
 * sc_free(*out) (no owned fields). *out is NULL when *n is 0. */
int store_alert_list(struct store *s, const struct alert_filter *f,
		     struct store_alert **out, size_t *n, struct sc_err *err);

/*
 * Closes alert id if it is OPEN: status to (ACKED or HEALED), closed_ms
 * now, note (NULL: ""). In the same transaction, when it closed: the
 * alert `then` is raised (NULL: none; a "recovered" message) as by
 * store_alert_raise, and the ledger row `row` is appended (NULL: none).
 * *changed false (and nothing written) when it was not OPEN; SC_ENOENT
 * when there is no such alert.
 */
int store_alert_close(struct store *s, int64_t id, enum alert_status to,
		      const char *note, const struct store_alert *then,
		      const struct ledger_row *row, bool *changed,
		      struct sc_err *err);

/* A new round (a realert) of alert id: rounds = rounds_seen + 1 and
 * round_ms now, only if it is OPEN and rounds is still rounds_seen.
 * *won says whether this call made it. */
int store_alert_realert(struct store *s, int64_t id, int rounds_seen,
			bool *won, struct sc_err *err);

/*
 * Stages round `round` of alert id: one PENDING send row (next_try now)
 * per name in targets[0..n) with body, unless the row exists; then
 * staged_rounds = max(staged_rounds, round + 1). n may be 0 (no alert
 * target: the round counts as staged, nothing will be sent).
 */
int store_alert_stage(struct store *s, int64_t id, int round,
		      const char *const *targets, size_t n, const char *body,
		      struct sc_err *err);

/*
 * Claims up to max due alert sends: PENDING, FAILED or UNKNOWN with
 * next_try_ms <= now, or SENDING whose lease expired (its sender died
 * mid-send). Each becomes SENDING with n_tries + 1, a fresh lease_token,
 * lease until now + lease_ms; out[i] (fill, then free each with
 * store_alert_send_dispose) tells the state it had before. Oldest first.
 * Two claimers never get the same row.
 */
int store_alert_send_claim(struct store *s, int64_t lease_ms,
			   struct store_alert_send *out, size_t max,
			   size_t *n, struct sc_err *err);

/* store_alert_send_claim of one alert's sends only (alert_id > 0): what
 * a worker sends at once after it lost a slot (alert_send_lost). */
int store_alert_send_claim_of(struct store *s, int64_t alert_id,
			      int64_t lease_ms, struct store_alert_send *out,
			      size_t max, size_t *n, struct sc_err *err);

/*
 * Ends a claimed send, fenced by lease_token (SC_ELEASE, nothing written,
 * when another claim took it): state SENT (sent_ms now; committed
 * durably), FAILED or UNKNOWN (next_try_ms), or ABANDONED; last_error
 * (NULL: ""); and the ledger row `row` (NULL: none) in the same
 * transaction.
 */
int store_alert_send_finish(struct store *s, int64_t send_id,
			    int64_t lease_token, enum send_state state,
			    int64_t next_try_ms, const char *last_error,
			    const struct ledger_row *row, struct sc_err *err);

/* The send rows of alert id (every round), by id; body NULL. Free with
 * store_alert_sends_free. */
int store_alert_sends(struct store *s, int64_t alert_id,
		      struct store_alert_send **out, size_t *n,
		      struct sc_err *err);
void store_alert_sends_free(struct store_alert_send *v, size_t n);
void store_alert_send_dispose(struct store_alert_send *a);

/* ---- timing checks (issue 14; alert.c owns the rules) ------------------ */

/* A schedule's delivery record, as store_sla_scan reads it. */
struct store_sla_last {
	char schedule[STORE_NAME_MAX];
	int64_t delivered_ms;       /* completed_ms of the marker of its
				       latest delivered slot; 0: none yet */
	int64_t first_ms;           /* created_ms of its earliest job (its
				       first start); 0: no job yet */
};

/*
 * What one timing pass reads, for every schedule at once. The caller
 * gives the arrays and their sizes (a size 0 skips that part); the store
 * fills n_* (at most max_*, the oldest first).
 */
struct store_sla {
	struct store_job *late;     /* READY, never started (attempts 0),
				       run_at <= ready_before */
	size_t max_late, n_late;
	struct store_job *running;  /* ACTIVE, started <= started_before */
	size_t max_running, n_running;
	struct store_sla_last *last; /* one per schedule the store knows
				       (its scheduler state), by name */
	size_t max_last, n_last;
};

/*
 * One read for the whole timing pass: the never-started READY jobs due
 * at or before ready_before_ms (the claim's partial index), the ACTIVE
 * jobs started at or before started_before_ms (the recovery's partial
 * index) and, per schedule of the scheduler state, its latest delivered
 * slot and its first job (one primary-key lookup each). Finished jobs
 * are never scanned. Read-only.
 */
int store_sla_scan(struct store *s, int64_t ready_before_ms,
		   int64_t started_before_ms, struct store_sla *x,
		   struct sc_err *err);

/* ---- fencing: writes made for a claimed job --------------------------- */

/*
 * A worker writes the outbox, the send guards, the slot marker and the
 * "duplicate" ledger rows of a slot on behalf of the job it claimed. Those
 * writes carry no job id of their own, so without a fence a worker that
 * was paused (SIGSTOP, a VM freeze, a long GC of its host) past its lease
 * would, when it resumes, write SENT and the marker for a slot another
 * worker has taken over (issue 10). While a handle is fenced, each of
 * these writes commits only if the job is still ACTIVE under that lease
 * token, checked in the same statement, so that no takeover commits
 * between the check and the write (how: FENCE_OK in store_sqlite.c,
 * FENCE_CTE in store_pg.c). A refused write changes nothing and returns
 * SC_ELEASE; the caller must then stop working on the job.
 *
 * Fenced: store_outbox_put, store_outbox_set_state, store_outbox_mark_unknown, store_slot_mark,
 * store_ledger_append (except LEDGER_MISSED rows, which belong to no job).
 * Reads, job transitions (fenced by their own token argument), the
 * scheduler state and the token cache are not affected.
 */
struct store_fence {
	int64_t job_id;             /* 0: not fenced */
	int64_t lease_token;
};

/* Fences every write listed above to job job_id under lease_token until
 * store_fence_clear. The worker (worker.c) sets it around a job's run. */
void store_fence_set(struct store *s, int64_t job_id, int64_t lease_token);
void store_fence_clear(struct store *s);

/* 0 while the fence holds (or no fence is set), SC_ELEASE once the job is
 * no longer ACTIVE under the token (or is gone), another code when the
 * store cannot be read. For checks before a side effect that is no store
 * write (a notice sent directly). */
int store_fence_check(struct store *s, struct sc_err *err);

/* ---- outbox, send guards, slot markers -------------------------------- */

/* Stores the composed message for (schedule, slot, target) in state
 * PENDING unless a row exists (then it is left as is: the first composed
 * message is the one that goes out). *created says which (NULL allowed).
 * The message is kept apart from the row's send state (schema 3) and
 * written only here, so state changes never copy it. Fenced. */
int store_outbox_put(struct store *s, const char *schedule, int64_t slot_ms,
		     const char *target, const char *body, bool *created,
		     struct sc_err *err);

/* Reads a row; SC_ENOENT when there is none. Free with store_outbox_entry_dispose. */
int store_outbox_get(struct store *s, const char *schedule, int64_t slot_ms,
		     const char *target, struct outbox_entry *out,
		     struct sc_err *err);
void store_outbox_entry_dispose(struct outbox_entry *e);

/*
 * Moves (schedule, slot, target) to state. SENDING increments n_tries.
 * SENT records sent_ms and is committed durably (fsync'd): it is the send
 * guard. SENDING is committed durably too, before the caller sends: lost
 * to a crash, the next attempt would take a send that may have arrived
 * for one that never left, and send again without declaring it.
 * SC_ESTATE when the row is closed (STORE_BUT_OUTBOX_SET): already SENT
 * (a guard never reopens) or ABANDONED (store_outbox_abandon: never sent
 * again); SC_ENOENT when there is no row; SC_EINVAL for SEND_NONE and
 * SEND_ABANDONED; SC_ELEASE when the fence refused it. Other moves are
 * not policed here: the delivery layer owns the order of its states.
 */
int store_outbox_set_state(struct store *s, const char *schedule, int64_t slot_ms,
			   const char *target, enum send_state state,
			   struct sc_err *err);

/*
 * An operator's decision on a held send (outbox_release): moves the row
 * to `to` (SENT: the copy arrived, recorded as store_outbox_set_state
 * records it, durably; FAILED: send it again) only while it is still
 * UNKNOWN (STORE_FROM_OUTBOX_RELEASE), checked in the write itself: a
 * change between the caller's read and this write (another operator's
 * release, a resend that took the row to SENDING) is never overwritten.
 * SC_ESTATE "the send is no longer held: ..." (store_release_refused),
 * and nothing changed, when the row is in another state; SC_ENOENT when
 * there is no row; SC_EINVAL for a `to` other than SENT or FAILED.
 * Fenced (an operator's handle has no fence).
 */
int store_outbox_release(struct store *s, const char *schedule,
			 int64_t slot_ms, const char *target,
			 enum send_state to, struct sc_err *err);

/* Every row of a slot still in SENDING becomes UNKNOWN (crash recovery);
 * *n gets how many. */
int store_outbox_mark_unknown(struct store *s, const char *schedule,
			      int64_t slot_ms, int *n, struct sc_err *err);

/* Records that the slot is complete (durable). Idempotent. */
int store_slot_mark(struct store *s, const char *schedule, int64_t slot_ms,
		    struct sc_err *err);
int store_slot_is_marked(struct store *s, const char *schedule, int64_t slot_ms,
			 bool *marked, struct sc_err *err);

/*
 * The two reads an attempt starts with, as one (on PostgreSQL, one round
 * trip instead of two for every run): *marked as store_slot_is_marked
 * says, and, for a slot not marked, the outbox row of the first of
 * targets[0..n_targets), in that order, that has one: *staged gets its
 * index, or -1 when none has a row or the slot is marked (a marked slot
 * is done, whatever its outbox holds; *out then stays zeroed). The
 * caller frees *out with store_outbox_entry_dispose. n_targets may be 0
 * (targets NULL).
 */
int store_slot_look(struct store *s, const char *schedule, int64_t slot_ms,
		    const char *const *targets, size_t n_targets, bool *marked,
		    int *staged, struct outbox_entry *out, struct sc_err *err);

/*
 * store_slot_look that also counts, in *n_others, the outbox rows of the
 * slot whose target is none of targets[0..n_targets), whatever their
 * state (0 for a marked slot: a done slot is not looked at further): a
 * target removed from the schedule since they were staged (issue 43).
 * The same one read (PostgreSQL: one round trip).
 */
int store_slot_look_others(struct store *s, const char *schedule,
			   int64_t slot_ms, const char *const *targets,
			   size_t n_targets, bool *marked, int *staged,
			   struct outbox_entry *out, size_t *n_others,
			   struct sc_err *err);

/* One outbox row of a slot, as store_outbox_list reads it. */
struct store_outbox_row {
	char target[STORE_NAME_MAX];
	enum send_state state;
	int n_tries;
};

/*
 * Every outbox row of (schedule, slot), sorted by target (byte order),
 * without bodies. *out is allocated (free()); n = 0 leaves it NULL.
 * O(the slot's rows).
 */
int store_outbox_list(struct store *s, const char *schedule, int64_t slot_ms,
		      struct store_outbox_row **out, size_t *n,
		      struct sc_err *err);

/*
 * Closes the outbox row of (schedule, slot, target) as SEND_ABANDONED,
 * never to be sent, when its state is still `from` (PENDING, SENDING,
 * FAILED or UNKNOWN: SC_EINVAL otherwise), and appends `row` (its
 * LEDGER_ABANDONED row: the caller says what and why) in the same
 * transaction: both or neither, so a crash never leaves a closed row
 * without its story, nor a story told twice. *closed (NULL allowed) is
 * false, and nothing is written, when the row is gone or its state is no
 * longer `from` (an operator's release came first). Fenced; durable (as
 * a guard: it ends a send for good).
 */
int store_outbox_abandon(struct store *s, const char *schedule,
			 int64_t slot_ms, const char *target,
			 enum send_state from, const struct ledger_row *row,
			 bool *closed, struct sc_err *err);

/* ---- scheduler state, token cache ------------------------------------ */

/* The last slot materialised for a schedule; SC_ENOENT when never. */
int store_sched_last_get(struct store *s, const char *schedule, int64_t *slot_ms,
			 struct sc_err *err);
/* Sets it, never moving it backwards. */
int store_sched_last_set(struct store *s, const char *schedule, int64_t slot_ms,
			 struct sc_err *err);

/* Every schedule's last slot, in one read (issue 15: the scheduler keeps
 * them in memory). *out is allocated (free()), sorted by name; n = 0
 * leaves it NULL. */
struct store_sched_last {
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;
};

int store_sched_last_all(struct store *s, struct store_sched_last **out,
			 size_t *n, struct sc_err *err);
/* Sets many in one transaction, each never moving backwards (a first
 * start of 100,000 schedules is one commit, not 100,000). */
int store_sched_last_set_many(struct store *s,
			      const struct store_sched_last *v, size_t n,
			      struct sc_err *err);

/* ---- pauses (issue 17) ------------------------------------------------ */

/* A pause lasts at most this long (an expiry is required, so a forgotten
 * pause ends by itself). */
#define STORE_PAUSE_MAX_MS ((int64_t)30 * 24 * 3600 * 1000)
#define STORE_PAUSE_NOTE_MAX 201 /* the note: 200 bytes, incl. NUL */
#define STORE_PAUSE_BY_MAX 65    /* who paused: 64 bytes, incl. NUL */

/*
 * One schedule's pause (table pauses, schema 7: one row per schedule, the
 * newest pause). Slots in [from_ms, until_ms) are not run: the scheduler
 * gives each a LEDGER_PAUSED row. A resume ends it early (until_ms moves
 * to the resume instant, resumed set), so the window stays known to a
 * node that was down and catches up afterwards: it owes nothing for it.
 * A row whose until_ms has passed is an ended pause, kept as that record
 * until the next pause of the schedule replaces it.
 */
struct store_pause {
	char schedule[STORE_NAME_MAX];
	int64_t from_ms, until_ms;
	char by[STORE_PAUSE_BY_MAX];     /* may be empty */
	char note[STORE_PAUSE_NOTE_MAX]; /* may be empty */
	bool resumed;                    /* ended by store_pause_end */
};

/* Records p (replacing the schedule's earlier pause, ended or not).
 * SC_EINVAL: until_ms <= from_ms, or longer than STORE_PAUSE_MAX_MS. */
int store_pause_set(struct store *s, const struct store_pause *p,
		    struct sc_err *err);
/* Ends the schedule's pause at at_ms when it is still running then
 * (until_ms > at_ms): *ended true. No pause, or one ended already:
 * *ended false, nothing written. */
int store_pause_end(struct store *s, const char *schedule, int64_t at_ms,
		    bool *ended, struct sc_err *err);
/* The schedule's newest pause (maybe ended: compare until_ms with now);
 * SC_ENOENT when it never had one. */
int store_pause_get(struct store *s, const char *schedule,
		    struct store_pause *out, struct sc_err *err);
/* Every pause row in one read, sorted by name (byte order). *out is
 * allocated (free()); n = 0 leaves it NULL. O(pause rows): at most one
 * per schedule ever paused, none for the others. */
int store_pause_all(struct store *s, struct store_pause **out, size_t *n,
		    struct sc_err *err);

/* ---- nodes (issue 43) -------------------------------------------------- */

/*
 * A node: one running daemon, as it publishes itself in the store, so
 * that nodes with different configs (a rolling deploy) are seen, not
 * guessed. id is the daemon's own (host:pid:started); the record is
 * written at start, at each reload and every STORE_NODE_BEAT_MS, and a
 * node not seen for STORE_NODE_LIVE_MS is gone.
 */
#define STORE_NODE_ID_MAX 128
#define STORE_NODE_HOST_MAX 96
#define STORE_NODE_VERSION_MAX 32
#define STORE_NODE_DIGEST_MAX 17 /* 16 hex digits */
#define STORE_NODE_BEAT_MS ((int64_t)30 * 1000)
#define STORE_NODE_LIVE_MS (3 * STORE_NODE_BEAT_MS)

struct store_node {
	char id[STORE_NODE_ID_MAX];
	char host[STORE_NODE_HOST_MAX];
	int64_t pid;
	char version[STORE_NODE_VERSION_MAX];
	char config_digest[STORE_NODE_DIGEST_MAX]; /* config_digest */
	int64_t started_ms;
	int64_t seen_ms;                           /* the store's clock */
	/* The node's wall clock less the store server's, as the node last
	 * measured it (issue 42; positive: the node's clock is ahead).
	 * has_clock_offset false: not measured (SQLite has no clock of its
	 * own, or the node has not read the server's yet). */
	int64_t clock_offset_ms;
	bool has_clock_offset;
};

/* Writes n (replacing its earlier record; seen_ms is the store clock's
 * now, n->seen_ms is ignored). SC_EINVAL: an empty id or a field that
 * does not fit. The clock offset is kept where the store has a clock of
 * its own (PostgreSQL); SQLite keeps none and reads it as not measured. */
int store_node_beat(struct store *s, const struct store_node *n,
		    struct sc_err *err);
/* Every node record in one read, sorted by id (byte order), the gone
 * ones too (compare seen_ms with now). *out is allocated (free()); n = 0
 * leaves it NULL. O(nodes). */
int store_nodes(struct store *s, struct store_node **out, size_t *n,
		struct sc_err *err);
/* Removes the record of node id (a daemon that stops: it is gone at
 * once, not STORE_NODE_LIVE_MS later, so a node restarted during a
 * rolling deploy is not counted twice, once under each config). No
 * record: 0. SC_EINVAL: an empty id. */
int store_node_leave(struct store *s, const char *id, struct sc_err *err);

/* ---- the crons in force (issue 43) ------------------------------------- */

/*
 * A schedule's cron history (table cron_history, schema 13): one record
 * each time a daemon starts with, or reloads to, an expression or zone
 * that differs from the schedule's newest record. A record governs the
 * schedule's slots from from_ms on (the slot after the last one the
 * scheduler materialised under the earlier expression), until the next
 * record's from_ms; `audit` judges each stretch with its own cron.
 */
#define STORE_CRON_MAX (SC_CRON_EXPR_MAX + 1)
#define STORE_TZ_MAX 256

struct store_cron {
	char schedule[STORE_NAME_MAX];
	int64_t from_ms;
	char cron[STORE_CRON_MAX];  /* the final expression, as written */
	char tz[STORE_TZ_MAX];      /* the zone's name (sc_zone_name) */
	int64_t recorded_ms;        /* the store clock when written */
};

/* A cached token as the store reads it (store_token_get). */
struct store_token {
	char *token;                /* allocated; the reader frees it */
	int64_t expires_ms;
};

/* What store_cron_note_many is given (all borrowed). */
struct store_cron_note {
	const char *schedule;
	int64_t from_ms;
	const char *cron;
	const char *tz;
};

/*
 * Records each note unless the schedule's newest record (the greatest
 * from_ms) already holds the same cron and tz, or a record of the same
 * (schedule, from_ms) exists (two nodes starting at once: the first
 * stays); one transaction. *n_written (NULL allowed) counts the records
 * written. SC_EINVAL: a name, cron or tz empty or too long.
 */
int store_cron_note_many(struct store *s, const struct store_cron_note *v,
			 size_t n, size_t *n_written, struct sc_err *err);

/* The records of one schedule name, oldest from_ms first. *out is
 * allocated (free()); n = 0 leaves it NULL. */
int store_cron_history(struct store *s, const char *schedule,
		       struct store_cron **out, size_t *n,
		       struct sc_err *err);

/* ---- leases between nodes (issue 15) ---------------------------------- */

/*
 * A named lease held by one owner at a time (table leases): *won is true
 * when owner holds `name` from now until now + ttl_ms, because it was
 * free, expired, or already owner's (then renewed); false when another
 * owner holds it unexpired. Compare-and-set in one statement, so two
 * nodes asking at once get one winner. The daemon's daily prune takes
 * "prune" before running.
 */
int store_lease_take(struct store *s, const char *name, const char *owner,
		     int64_t ttl_ms, bool *won, struct sc_err *err);
/* Gives it back when owner holds it (else does nothing). */
int store_lease_drop(struct store *s, const char *name, const char *owner,
		     struct sc_err *err);

/* ---- retention (issue 15; prune.c owns the horizons) ------------------ */

/*
 * What may be deleted, by age of the slot; prune.c computes the horizons
 * (retention, the longest recovery window, a margin), store_prune.c runs
 * the phases (ledger, alerts, jobs, outbox bodies, send guards, slot
 * markers, in that order) and keeps its never-remove list, the same on
 * every backend. In short:
 *   ledger (slot < ledger_before): every row except an unrecovered,
 *     unacknowledged "lost" or "missed" row, an "acked" row that still
 *     covers one left in the ledger, and the newest row and newest
 *     success of each schedule; a slot's rows go in one batch.
 *   alerts (last_slot < ledger_before): closed ones whose sends are all
 *     SENT or ABANDONED, with their sends.
 *   jobs (slot < jobs_before): DONE only.
 *   outbox bodies (slot < outbox_before): of SENT rows of a marked slot
 *     only; the row stays, store_outbox_get reads it with body NULL.
 *   send guards and slot markers (slot < jobs_before): SENT or ABANDONED
 *     rows, and markers, of a slot with no READY, ACTIVE or DEAD job; a
 *     marker also needs no other outbox row left, and never the newest
 *     marker of its schedule.
 * store_prune.c lists each rule with its reason.
 * A field <= 0 (INT64_MIN included) skips that part. ledger_before = 0
 * skips the ledger and alerts, jobs_before = 0 jobs, guards and markers,
 * outbox_before = 0 the bodies.
 */
struct store_prune_opts {
	int64_t ledger_before_ms;
	int64_t jobs_before_ms;
	int64_t outbox_before_ms;
	bool dry_run;               /* each batch is rolled back: counts only */
};

/* Counts (added to by every batch) and the position of the batch loop.
 * Start zeroed ({0}) and pass the same one to every batch of a run. */
struct store_prune_result {
	int64_t n_ledger, n_alerts, n_alert_sends, n_jobs, n_bodies,
		n_guards, n_markers;
	int phase;                  /* the loop's position: the store's */
	int64_t cursor;
};

/*
 * Deletes (dry_run: counts) at most about max_rows rows of one table, in
 * one short transaction, adds what it did to *res and says in *more
 * whether batches are left (loop until false). A batch takes whole slots
 * of the ledger, so it may exceed max_rows by the rows of its last slot.
 * max_rows < 1: SC_EINVAL. PostgreSQL dry runs count everything in the
 * first call (one transaction, rolled back; *more false). On error the
 * batch is rolled back and *res is unchanged.
 */
int store_prune_batch(struct store *s, const struct store_prune_opts *o,
		      int max_rows, struct store_prune_result *res,
		      bool *more, struct sc_err *err);

/*
 * The database's size, for the bytes a prune freed: *used_bytes is what
 * the rows take, *file_bytes what the files take (SQLite: (page_count -
 * freelist_count) * page_size, and page_count * page_size;
 * PostgreSQL: the sum of pg_total_relation_size of the store's tables,
 * both). *how names the measure (static text).
 */
int store_prune_size(struct store *s, int64_t *used_bytes,
		     int64_t *file_bytes, const char **how,
		     struct sc_err *err);

/*
 * The phases of a prune, in the order store_prune_batch runs them
 * (store_prune.c says why this order).
 */
enum store_prune_phase {
	STORE_PRUNE_LEDGER, STORE_PRUNE_ALERTS, STORE_PRUNE_JOBS,
	STORE_PRUNE_BODIES, STORE_PRUNE_GUARDS, STORE_PRUNE_MARKERS,
	STORE_PRUNE_N_PHASE
};

/*
 * One step of a prune, which store_prune.c asks of a backend
 * (store_ops.prune_step): in one transaction (rolled back when dry_run),
 * delete the rows of phase's table older than before_ms that the
 * never-remove list lets go, among at most about max_rows rows past key
 * `after` (the ledger's slot, else the table's id; a ledger range ends
 * on a whole slot). A backend whose table has no key may ignore `after`
 * and take the first max_rows rows that go (the rows that stay fail the
 * condition, so the next step finds new ones).
 */
struct store_prune_step {
	enum store_prune_phase phase;
	int64_t before_ms;          /* the phase's horizon, > 0 */
	int64_t jobs_before_ms;     /* bodies: leave those the guards phase
				       takes (<= 0: none), so each body is
				       counted once */
	int64_t after;              /* INT64_MIN: the phase's start */
	int max_rows;               /* >= 1 */
	bool dry_run;
	bool first;                 /* the run's first step */
};

/* What a step did: n_rows of the phase's table, n_more of its second
 * (an alert's sends, a guard's body); `until` is the key the next step
 * starts past; `last` says the phase has nothing left for another step.
 * Untouched on error. */
struct store_prune_done {
	int64_t n_rows, n_more;
	int64_t until;
	bool last;
};

struct store_ops;
enum store_commit; /* the durability table's rows, below */

/*
 * store_prune_batch's work once its arguments are checked (store.c):
 * picks the next phase with a horizon, asks ops->prune_step for one step
 * of it, and adds the counts to *res. In store_prune.c.
 */
int store_prune_next(const struct store_ops *ops, void *impl,
		     const struct store_prune_opts *o, int max_rows,
		     struct store_prune_result *res, bool *more,
		     struct sc_err *err);

/* Cached access token of a provider; SC_ENOENT when none. *token is
 * allocated (wipe and free with sc_free). */
int store_token_get(struct store *s, const char *provider, char **token,
		    int64_t *expires_ms, struct sc_err *err);
int store_token_put(struct store *s, const char *provider, const char *token,
		    int64_t expires_ms, struct sc_err *err);
int store_token_drop(struct store *s, const char *provider, struct sc_err *err);

/* ---- waiting for work ------------------------------------------------- */

/*
 * Blocks until a job may have become due sooner than the caller last saw
 * (another handle, process or node enqueued, retried, released, revived or
 * recovered a job) or timeout_ms of real time passed, whichever comes
 * first. Returns 0 in both cases and says in *changed (NULL: not wanted)
 * whether the caller should look again (store_job_next_due, a claim):
 * true when a sign of change was seen, false when nothing was. A backend
 * may return before timeout_ms with *changed false (the caller loops); a
 * signal may end the wait early (0, *changed true).
 *   PostgreSQL: LISTEN/NOTIFY on channel surecron_jobs, so a worker on one
 *   node wakes when another node enqueues. The first call (and the first
 *   after a reconnect) returns at once: what happened before the handle
 *   listened was not heard. *changed is true on every return, a timeout
 *   included: writes that send no notice (heartbeats, completions) are
 *   looked at then.
 *   SQLite: another process's commit changes the database file or its
 *   -wal file (size or mtime). The wait sleeps min(timeout_ms,
 *   STORE_WATCH_STEP_MS) and looks at both once; *changed says whether
 *   either moved since the handle's previous look. The first call returns
 *   at once with *changed true (there was nothing to compare with).
 *   Backends without a wait operation (ops->wait == NULL): a plain sleep
 *   of timeout_ms, *changed true.
 * On an error (connection lost) it has still waited up to timeout_ms, so a
 * loop around it never spins, and returns SC_EIO with *changed true.
 */
int store_wait(struct store *s, int64_t timeout_ms, bool *changed,
	       struct sc_err *err);

/* SQLite's longest sleep in one store_wait: how soon another process's
 * write is seen at most, and how long a caller's stop may wait for it. */
#define STORE_WATCH_STEP_MS 250

/*
 * The form of a store URL that may be logged: a sqlite URL or path as it
 * is; a PostgreSQL URL with the password of its userinfo and the value of
 * any password= parameter replaced by "***" (url_store_for_log, url.h).
 * Truncates to fit n (out is always terminated when n > 0). Returns out.
 * Thread-safe.
 */
const char *store_url_for_log(const char *url, char *out, size_t n);

/* ---- backends --------------------------------------------------------- */

/*
 * A backend implements every operation above for its database, most of
 * them as SQL texts for its one runner (`call`, "one-statement
 * operations" below). store.c dispatches through this table; each backend exports one
 * `const struct store_ops store_<name>_ops`. Every function pointer is
 * required except those whose comment says NULL (wait, cache_cap,
 * job_complete_many, server_now, slot_look). Names mirror the functions
 * above minus the handle type. `fence` is NULL when the handle is not
 * fenced (store_fence_set); else the write must commit only while job
 * fence->job_id is ACTIVE with fence->lease_token, in the same statement
 * or transaction, and return SC_ELEASE (nothing written) otherwise.
 */
/* The overlap rule as a backend reads it: allow and skip are the names
 * each followed and preceded by a newline ("\na\nb\n"; "\n" when none), so
 * that one substring search of "\n" NAME "\n" tests membership in SQL. */
struct store_claim_rule {
	bool on;
	const char *allow;
	const char *skip;
	/* store_claim_known_set: the schedules the claim may take, as a
	 * JSON array of names; NULL: any. Applied while `on`. */
	const char *known;
	/* Changes with every new set (store_claim_known_set,
	 * store_known_use): a backend that keeps
	 * the set on its side (PostgreSQL) sends it again only then. */
	uint64_t known_gen;
	/* The same set for a lookup by name (store_known_has); NULL: any. */
	const struct store_known *known_set;
};

/* The columns a backend reads a job, an alert and a pause by, in the
 * order its read_job, read_alert and read_pause read them: one list for
 * both backends, whose tables name them alike. STORE_JOB_COLS_J is
 * STORE_JOB_COLS of the row aliased j. */
#define STORE_JOB_COLS                                                    \
	"id, schedule, slot_ms, state, attempts, n_stalls, max_attempts, "   \
	"backoff, delay_ms, run_at_ms, lease_token, lease_owner, "           \
	"lease_expires_ms, started_ms, created_ms, manual"
#define STORE_JOB_COLS_J                                                  \
	"j.id, j.schedule, j.slot_ms, j.state, j.attempts, j.n_stalls, "    \
	"j.max_attempts, j.backoff, j.delay_ms, j.run_at_ms, "              \
	"j.lease_token, j.lease_owner, j.lease_expires_ms, j.started_ms, "  \
	"j.created_ms, j.manual"
#define STORE_ALERT_COLS                                                  \
	"id, schedule, slot_ms, last_slot_ms, n_slots, reason, generation, " \
	"status, attempts, error_msg, job_id, rounds, staged_rounds, "       \
	"created_ms, round_ms, closed_ms, note"
#define STORE_PAUSE_COLS                                                  \
	"schedule, from_ms, until_ms, paused_by, note, resumed"

struct store_call;

struct store_ops {
	const char *name;
	/* writers take turns on one lock: a long write transaction delays
	 * every claim (SQLite), where row locks let them pass (PostgreSQL) */
	bool one_writer;
	/* create false: SC_ENOENT for a store never made (store_open_existing) */
	int (*open)(const char *target, struct sc_clock *clock, bool create,
		    void **impl, struct sc_err *err);
	void (*close)(void *impl);
	/* The one runner of every one-statement operation ("one-statement
	 * operations" below): c->q's statement with c's parameters. */
	int (*call)(void *impl, struct store_call *c, struct sc_err *err);
	/* The backend's SQL text of each STORE_Q (store_open refuses a
	 * backend that lacks one). */
	const char *const *call_sql;
	/* One transaction around body's calls (store.c composes the
	 * operations of several statements so): begun with the class of
	 * `commit`, committed when body returns 0, rolled back otherwise.
	 * Inside it every call runs in that transaction and takes that
	 * class, whatever its own row says; body must not nest another. */
	int (*tx)(void *impl, enum store_commit commit,
		  int (*body)(void *ctx, struct sc_err *err), void *ctx,
		  struct sc_err *err);
	/* Optional: SC_EVERSION (set in err) when a newer build migrated
	 * the store's schema since this handle opened it, else 0. store.c
	 * asks before a recovery judges jobs: an older node must not apply
	 * its rules under a newer schema. NULL: a backend that reads its
	 * schema's version at open only (SQLite). */
	int (*schema_check)(void *impl, struct sc_err *err);
	/* store_cache_cap; NULL: nothing to cap */
	int (*cache_cap)(void *impl, int kib, struct sc_err *err);
	/* The rule the next claims apply (store_overlap_set): borrowed
	 * until the next call or close; NULL or !on: off. */
	void (*claim_rule)(void *impl, const struct store_claim_rule *r);
	int (*job_claim)(void *impl, const char *worker, int64_t lease_ms,
			 int64_t ahead_ms, struct store_job *out, size_t max,
			 size_t *n, struct sc_err *err);
	/* mark: the slot's marker in the same transaction; store.c sets it
	 * only with DONE (store_job_complete_marked). */
	int (*job_finish)(void *impl, int64_t id, int64_t lease_token,
			  enum job_state new_state, int64_t run_at_ms,
			  const struct ledger_row *row, bool mark,
			  struct sc_err *err);
	/* store_job_complete_many; NULL: store.c finishes one by one. */
	int (*job_complete_many)(void *impl, const struct store_job *jobs,
				 size_t n, const struct ledger_row *row,
				 int *rcs, struct sc_err *err);
	/* NULL: the store has no clock of its own */
	int (*server_now)(void *impl, int64_t *out_ms, struct sc_err *err);
	int (*sched_summaries)(void *impl, const char *schedule,
			       struct store_sched_summary **out, size_t *n,
			       struct sc_err *err);
	/* Optional: NULL makes store.c read the marker and each target's
	 * row in turn (SQLite, where a read is no round trip), and the
	 * slot's rows (outbox_list) when n_others is wanted. Outputs come
	 * zeroed, *staged -1; names checked; n_others NULL: not wanted. */
	int (*slot_look)(void *impl, const char *schedule, int64_t slot_ms,
			 const char *const *targets, size_t n_targets,
			 bool *marked, int *staged, struct outbox_entry *out,
			 size_t *n_others, struct sc_err *err);
	/* One step of a prune (store_prune_step): the backend only runs
	 * it; store_prune.c chooses the phase, horizon and range. */
	int (*prune_step)(void *impl, const struct store_prune_step *st,
			  struct store_prune_done *out, struct sc_err *err);
	int (*prune_size)(void *impl, int64_t *used_bytes,
			  int64_t *file_bytes, const char **how,
			  struct sc_err *err);
	/* Optional; NULL: store_wait sleeps. changed: never NULL. */
	int (*wait)(void *impl, int64_t timeout_ms, bool *changed,
		    struct sc_err *err);
};

/*
 * The stalled-job rule (one place: store.c). A recovery
 * (store_job_recover_dead) reads the ACTIVE jobs whose lease expired,
 * asks this rule about each one and applies the verdict in its
 * transaction: n_stalls + 1, a "stalled" row with v->stalled_msg, then
 * READY (run_at now) or, when v->dead, DEAD with a "lost" row with
 * v->lost_msg after the stalled row.
 *
 * The rule: the job dies when its attempts are used up (attempts >=
 * max_attempts: the stalled attempt was its last) or when this stall is
 * the max_stalls-th (n_stalls + 1 >= max_stalls). max_stalls is always
 * >= 1 here: store_job_recover refuses a smaller one with SC_EINVAL before
 * any backend runs, so "no stall limit" does not exist (queue_recover's
 * stall_limit 0 means max_stalls 1: the first stall is fatal). The texts
 * are the ledger's words for it, the same on every backend.
 *
 * struct store_stall is the expired job as recovery reads it, one row of
 * STORE_STALL_COLS (store_stall_fields), in that order on every backend.
 */
#define STORE_STALL_COLS                                                  \
	"id, schedule, slot_ms, attempts, n_stalls, max_attempts, "          \
	"started_ms, lease_owner"
struct store_stall {
	int64_t id;
	char schedule[STORE_NAME_MAX];
	int64_t slot_ms;
	int attempts, n_stalls;     /* n_stalls: stalls before this one */
	int max_attempts;
	int64_t started_ms;
	char owner[STORE_WORKER_MAX]; /* the worker whose lease expired */
};

struct store_stall_verdict {
	bool dead;
	char stalled_msg[256];      /* the "stalled" row's error_msg */
	char lost_msg[256];         /* the "lost" row's, when dead; else "" */
};

void store_stall_rule(int max_stalls, const struct store_stall *job,
		      struct store_stall_verdict *v);

/* The error_class of both rows a stall writes. */
#define STORE_STALL_CLASS "stalled"

/*
 * The rules of store_rule.c, for backends (one place for every backend).
 *
 * store_finish_outcome: the ledger outcome an attempt that ends in state
 * `to` is recorded with when its row names none: DONE "success", READY
 * "failed" (a retry is scheduled), DEAD "lost". NULL for ACTIVE, where an
 * attempt runs and none ends: store_job_finish refuses it (SC_EINVAL)
 * before any backend runs. Static strings.
 *
 * store_lease_error: after a write fenced by its own lease token (a job's
 * heartbeat, finish, release; an alert send's finish) matched nothing,
 * the backend reads whether the row `what` ("job", "alert send") with
 * `id` exists and passes it here: SC_ENOENT "no job 5" when it does not,
 * else SC_ELEASE "OP of job 5 refused: lease lost (token T no longer
 * current: taken over or finished)". Returns the code it set.
 *
 * store_fence_refused: SC_ELEASE for a write refused by the handle's
 * fence f (struct store_fence above; may be NULL), "OP refused: job N is
 * no longer held under lease T (taken over or finished); this worker
 * stops". Returns SC_ELEASE.
 */
const char *store_finish_outcome(enum job_state to);

/* SC_ENOENT "no WHAT ID" (what: "job", "alert", "alert send"): the row a
 * write by id found missing. Returns SC_ENOENT. */
int store_missing_error(const char *what, int64_t id, struct sc_err *err);

/*
 * store_alert_raise_rule: what raising alert a (store_alert_raise) at the
 * store's now_ms writes beyond its row. r->closed_ms: 0 for an OPEN
 * alert, now_ms for one raised CLOSED (a "recovered" message is closed at
 * birth). r->supersede: when the raise creates the alert (not when its
 * key exists already), the slot's older OPEN alerts of the same reason
 * become CLOSED with closed_ms now_ms, in the same transaction; true for
 * a lost alert only (a new lost alert of a slot replaces the older open
 * ones).
 */
struct store_raise_rule {
	int64_t closed_ms;
	bool supersede;
};
void store_alert_raise_rule(const struct store_alert *a, int64_t now_ms,
			    struct store_raise_rule *r);
int store_lease_error(const char *what, const char *op, int64_t id,
		      int64_t lease_token, bool exists, struct sc_err *err);
int store_fence_refused(const char *op, const struct store_fence *f,
			struct sc_err *err);

/*
 * The refusals of a state a transition may not leave, once for every
 * backend, after the backend's fenced write changed nothing and its read
 * found the row there (else SC_ENOENT is the backend's, from the read):
 * store_guard_error, SC_ESTATE "target T of S was already sent (send
 * guard); it is never sent again", for store_outbox_set_state on a SENT
 * row (a guard never reopens), or "target T of S was abandoned (...); it
 * is never sent again" on an ABANDONED one (state: the state the read
 * found); store_not_dead_error, SC_ESTATE "job N is
 * not dead", for store_job_revive of a job in any other state. Each
 * returns the code it set.
 */
int store_guard_error(const char *schedule, const char *target,
		      enum send_state state, struct sc_err *err);

/* The refusal of store_outbox_release on a row found in `state` (not
 * UNKNOWN): SC_ESTATE "target T of S: the send is no longer held (it is
 * <state>); nothing changed". Returns the code it set. */
int store_release_refused(const char *schedule, const char *target,
			  enum send_state state, struct sc_err *err);

/*
 * store_ledger_row_kind: how a ledger row of `outcome` is written. A
 * "missed" (STORE_ROW_MISSED) or "paused" (STORE_ROW_PAUSED) row belongs
 * to no job: written unfenced, and once per slot (a second one of the
 * slot is dropped, not an error). Every other row is a job's
 * (STORE_ROW_FENCED): written under the handle's fence, if one is set.
 */
enum store_row_kind {
	STORE_ROW_FENCED,
	STORE_ROW_MISSED,
	STORE_ROW_PAUSED,
};
enum store_row_kind store_ledger_row_kind(const char *outcome);

/*
 * store_lq_shape: the shape of a ledger filter f (store_ledger_query),
 * for a backend that prepares one statement per shape so its planner
 * sees only the terms the filter has (issue 15): k = ((has schedule *
 * STORE_LQ_KINDS + kind) * 2 + open period) * 2 + newest_first, 0 <= k <
 * STORE_LQ_SHAPES. The kind is the outcome term: none, any outcome
 * (bound), lost or missed, or one of the outcomes a partial index serves
 * (acked, missed, skipped, abandoned), which a statement spells as a
 * literal. store_lq_kind(k) and store_lq_scheduled(k) decode it.
 */
enum store_lq_kind {
	STORE_LQ_ANY, STORE_LQ_OUTCOME, STORE_LQ_LOST, STORE_LQ_ACKED,
	STORE_LQ_MISSED, STORE_LQ_SKIPPED, STORE_LQ_ABANDONED, STORE_LQ_KINDS
};
#define STORE_LQ_SHAPES (2 * STORE_LQ_KINDS * 2 * 2)
int store_lq_shape(const struct ledger_filter *f);
#define store_lq_kind(k) ((int)(k) / 4 % STORE_LQ_KINDS)
#define store_lq_scheduled(k) ((int)(k) / (4 * STORE_LQ_KINDS) != 0)
/* Does shape k read every slot (no since/until terms), newest first? */
#define store_lq_open(k) ((int)(k) / 2 % 2 != 0)
#define store_lq_desc(k) ((int)(k) % 2 != 0)
int store_not_dead_error(int64_t id, struct sc_err *err);


/* ---- durability: one class per commit (store_durable.c) --------------- */

/*
 * What a power cut (SQLite) or a crash of the database server
 * (PostgreSQL) may forget, declared once for every commit the backends
 * make: store_durability[] in store_durable.c, one row per commit kind
 * with the reason. A backend never picks a commit's durability itself: it
 * names the commit (store_commit_of_* for the kinds that depend on the
 * write's data) and applies store_commit_class()'s answer: SQLite FULL
 * (a group sync before the call returns) or NORMAL; PostgreSQL
 * synchronous_commit back to the server's setting, or off.
 * docs/internals/store.md shows the table.
 *
 * An error from a write means the write may or may not survive, durable
 * or not: SQLite reports a group sync that failed after its COMMIT
 * (SC_EIO; SC_ENOSPC for ENOSPC or EDQUOT), PostgreSQL a connection lost
 * or abandoned before the commit's answer (SC_EIO). The caller treats
 * both as a failed commit.
 */
enum store_dur {
	STORE_DUR_NONE = 0,  /* may be forgotten by any crash */
	STORE_DUR_SERVER,    /* survives a database server's crash the
				callers outlive (PostgreSQL); on a file a
				power cut takes the callers along: NONE */
	STORE_DUR_ALWAYS     /* survives a power cut and a server crash */
};

enum store_commit {
	STORE_COMMIT_MIGRATE,         /* schema migration at open */
	STORE_COMMIT_ENQUEUE,         /* enqueue (one, many, a tick's batch) */
	STORE_COMMIT_REVIVE,          /* store_job_revive */
	STORE_COMMIT_CLAIM,
	STORE_COMMIT_HEARTBEAT,
	STORE_COMMIT_LEASE_CLAMP,
	STORE_COMMIT_FINISH,          /* complete unmarked, fail, retry */
	STORE_COMMIT_FINISH_MARKED,   /* complete with the slot marker */
	STORE_COMMIT_FINISH_DEAD,     /* DEAD, with its "lost" row */
	STORE_COMMIT_COMPLETE_MANY,
	STORE_COMMIT_RELEASE,
	STORE_COMMIT_RECOVER,         /* stalled-job recovery */
	STORE_COMMIT_LEDGER,          /* ledger rows, none "lost" */
	STORE_COMMIT_LEDGER_LOST,     /* ledger rows, one of them "lost" */
	STORE_COMMIT_STAGE,           /* outbox PENDING + body */
	STORE_COMMIT_SENDING,         /* outbox SENDING */
	STORE_COMMIT_SENT,            /* outbox SENT: the send guard */
	STORE_COMMIT_SEND_FAILED,     /* outbox FAILED */
	STORE_COMMIT_SEND_UNKNOWN,    /* outbox UNKNOWN */
	STORE_COMMIT_ABANDON,         /* outbox ABANDONED + its ledger row */
	STORE_COMMIT_SLOT_MARK,
	STORE_COMMIT_SCHED_STATE,     /* sched_last, cron history */
	STORE_COMMIT_PAUSE,           /* a pause set or ended */
	STORE_COMMIT_NODE,            /* node beat, leave */
	STORE_COMMIT_TOKEN,           /* token cache put, drop */
	STORE_COMMIT_LEASE,           /* named lease take, drop */
	STORE_COMMIT_PRUNE,
	STORE_COMMIT_ALERT_RAISE,
	STORE_COMMIT_ALERT_CLOSE,
	STORE_COMMIT_ALERT_REALERT,
	STORE_COMMIT_ALERT_STAGE,
	STORE_COMMIT_ALERT_CLAIM,     /* alert send claim (SENDING) */
	STORE_COMMIT_ALERT_SENT,      /* alert send SENT or ABANDONED */
	STORE_COMMIT_ALERT_RETRY,     /* alert send FAILED or UNKNOWN */
	STORE_COMMIT_N
};

struct store_durability_row {
	enum store_commit commit;
	const char *name;             /* as docs/internals/store.md says it */
	enum store_dur dur;
	const char *why;              /* what a crash that forgets it does */
};

/* The table, indexed by enum store_commit (row i has commit i). */
extern const struct store_durability_row store_durability[STORE_COMMIT_N];

/*
 * The class a backend applies to commit c. In a test build, the failpoint
 * "store.durability_off:err" answers STORE_DUR_NONE for every commit (the
 * control run of the power-loss test: the table ignored). Thread-safe.
 */
enum store_dur store_commit_class(enum store_commit c);

/* The commit of a job_finish to new_state (mark: with the slot marker). */
enum store_commit store_commit_of_finish(enum job_state new_state,
					 bool mark);
/* The commit of an outbox row set to state (store_outbox_set_state). */
enum store_commit store_commit_of_send(enum send_state state);
/* The commit of ledger rows[0..n) written together: LEDGER_LOST when one
 * of them is a "lost" row. */
enum store_commit store_commit_of_rows(const struct ledger_row *rows,
				       size_t n);
/* The commit of an alert send finished in state. */
enum store_commit store_commit_of_alert_send(enum send_state state);

/* ---- end of durability ------------------------------------------------ */

/* ---- transitions: the states each may leave (store_rule.c) ---------- */

/*
 * Which states a transition may leave, written once for every backend
 * (issue 46): the SQL of both backends and the C checks above them take
 * their state literals from here, and store_transitions[] (store_rule.c)
 * lists every transition for test_store's conformance test and
 * docs/internals/store.md.
 *
 * Both backends store a state as the integer value of its enum (job_state,
 * send_state for outbox rows and alert sends alike, alert_status): the
 * values are part of both file formats, and changing one takes a
 * migration on each. STORE_SQL_<STATE> is that value as SQL text, and
 * STORE_FROM_<T> the states transition T may leave as a SQL list of them
 * (STORE_BUT_<T>: it may leave every state but those). All of it is
 * string-literal concatenation: the statements' text, and so their
 * plans, are what they were when the numbers were spelled in place.
 *
 * A statement spells a set of one state "state = " STORE_FROM_T, never
 * "state IN (" STORE_FROM_T ")": SQLite proves a partial index's WHERE
 * (jobs_ready: state = 0, jobs_active: state = 1) only from an equality,
 * and "state IN (0)" turns the claim's walk of jobs_ready into a scan
 * and a sort of the whole table. A set of several is "state IN (...)",
 * a STORE_BUT_ set of one "state <> ", of several "state NOT IN (...)".
 * A set that gains a state must have its statements respelled; the
 * conformance test (test_store, both backends) fails until they are.
 */
#define STORE_SQL_READY "0"          /* JOB_READY */
#define STORE_SQL_ACTIVE "1"         /* JOB_ACTIVE */
#define STORE_SQL_DONE "2"           /* JOB_DONE */
#define STORE_SQL_DEAD "3"           /* JOB_DEAD */
#define STORE_SQL_PENDING "1"        /* SEND_PENDING */
#define STORE_SQL_SENDING "2"        /* SEND_SENDING */
#define STORE_SQL_SENT "3"           /* SEND_SENT */
#define STORE_SQL_FAILED "4"         /* SEND_FAILED */
#define STORE_SQL_UNKNOWN "5"        /* SEND_UNKNOWN */
#define STORE_SQL_ABANDONED "6"      /* SEND_ABANDONED */
#define STORE_SQL_OPEN "0"           /* ALERT_OPEN */
#define STORE_SQL_CLOSED "3"         /* ALERT_CLOSED */
/* INT64_MAX: store_job_next_due's "nothing due". */
#define STORE_SQL_NEVER "9223372036854775807"

/* Jobs. The claim takes a due READY job; every write under a lease (the
 * heartbeat, a finish, a release, a fenced write of another table) needs
 * the job ACTIVE under the caller's token; the recovery takes an ACTIVE
 * job whose lease expired; a revive a DEAD one; the lease clamp shortens
 * ACTIVE leases; prune removes DONE jobs only (every other job may still
 * run or be revived: a "live" job, which keeps its slot's rows). */
#define STORE_FROM_CLAIM STORE_SQL_READY
#define STORE_FROM_HEARTBEAT STORE_SQL_ACTIVE
#define STORE_FROM_FINISH STORE_SQL_ACTIVE
#define STORE_FROM_RELEASE STORE_SQL_ACTIVE
#define STORE_FROM_RECOVER STORE_SQL_ACTIVE
#define STORE_FROM_REVIVE STORE_SQL_DEAD
#define STORE_FROM_LEASE_CLAMP STORE_SQL_ACTIVE
#define STORE_FROM_FENCE STORE_SQL_ACTIVE
#define STORE_FROM_JOB_PRUNE STORE_SQL_DONE

/* Outbox rows. A state change leaves any state but the closed ones: SENT
 * (the send guard never reopens) and ABANDONED (a removed target's copy,
 * closed on the record, is never sent again); an operator's release
 * leaves only a held (UNKNOWN) row; the recovery of a slot turns its
 * SENDING rows UNKNOWN; only an unsent row is abandoned; prune takes the
 * body of a SENT row, and the closed rows (SENT, ABANDONED) of a slot
 * past its horizon. */
#define STORE_BUT_OUTBOX_SET STORE_SQL_SENT ", " STORE_SQL_ABANDONED
#define STORE_FROM_OUTBOX_RELEASE STORE_SQL_UNKNOWN
#define STORE_FROM_OUTBOX_UNKNOWN STORE_SQL_SENDING
#define STORE_FROM_OUTBOX_ABANDON                                         \
	STORE_SQL_PENDING ", " STORE_SQL_SENDING ", " STORE_SQL_FAILED ", "  \
	STORE_SQL_UNKNOWN
#define STORE_FROM_BODY_PRUNE STORE_SQL_SENT
#define STORE_FROM_OUTBOX_PRUNE STORE_SQL_SENT ", " STORE_SQL_ABANDONED

/* Alert sends. A claim takes a send waiting for its try (PENDING,
 * FAILED, UNKNOWN) once its time has come, or takes back a SENDING one
 * whose lease expired (its sender died mid-send; reported UNKNOWN); a
 * finish needs it SENDING under the caller's token; the closed sends
 * (SENT, ABANDONED) are all an alert that prune removes may have. */
#define STORE_FROM_SEND_CLAIM                                             \
	STORE_SQL_PENDING ", " STORE_SQL_FAILED ", " STORE_SQL_UNKNOWN
#define STORE_FROM_SEND_RECLAIM STORE_SQL_SENDING
#define STORE_FROM_SEND_FINISH STORE_SQL_SENDING
#define STORE_FROM_SEND_PRUNE STORE_SQL_SENT ", " STORE_SQL_ABANDONED

/* Alerts (their status). Only an OPEN alert is closed (ack, heal), gets
 * a new round (realert) or is closed by the newer lost alert of its slot
 * that supersedes it (CLOSED); prune takes any alert but an OPEN one. */
#define STORE_FROM_ALERT_CLOSE STORE_SQL_OPEN
#define STORE_FROM_ALERT_REALERT STORE_SQL_OPEN
#define STORE_FROM_ALERT_SUPERSEDE STORE_SQL_OPEN
#define STORE_BUT_ALERT_PRUNE STORE_SQL_OPEN

enum store_trans {
	STORE_T_CLAIM, STORE_T_HEARTBEAT, STORE_T_FINISH, STORE_T_RELEASE,
	STORE_T_RECOVER, STORE_T_REVIVE, STORE_T_LEASE_CLAMP, STORE_T_FENCE,
	STORE_T_JOB_PRUNE,
	STORE_T_OUTBOX_SET, STORE_T_OUTBOX_RELEASE, STORE_T_OUTBOX_UNKNOWN,
	STORE_T_OUTBOX_ABANDON,
	STORE_T_BODY_PRUNE, STORE_T_OUTBOX_PRUNE,
	STORE_T_SEND_CLAIM, STORE_T_SEND_RECLAIM, STORE_T_SEND_FINISH,
	STORE_T_SEND_PRUNE,
	STORE_T_ALERT_CLOSE, STORE_T_ALERT_REALERT, STORE_T_ALERT_SUPERSEDE,
	STORE_T_ALERT_PRUNE,
	STORE_T_N
};

/* Which table's states a transition reads. */
enum store_trans_of {
	STORE_OF_JOB, STORE_OF_OUTBOX, STORE_OF_SEND, STORE_OF_ALERT
};

struct store_transition {
	enum store_trans t;
	const char *name;     /* as docs/internals/store.md says it */
	enum store_trans_of of;
	const char *from;     /* STORE_FROM_<T> (or STORE_BUT_<T>) */
	bool but;             /* from lists the states it may NOT leave */
	const char *to;       /* the state entered, in words */
	const char *fn;       /* the store.h function(s) that run it */
	const char *macro;    /* "STORE_FROM_<T>", for the docs */
};

/* The table, indexed by enum store_trans (row i has t i). */
extern const struct store_transition store_transitions[STORE_T_N];

/*
 * Whether transition t may leave `state` (a job_state, send_state or
 * alert_status value, as t's table has it): the same answer as its SQL.
 * Pure, any thread.
 */
bool store_may_leave(enum store_trans t, int state);

/* Whether a SQL list of states (a STORE_FROM_ value, "1, 4, 5") holds
 * state. */
bool store_state_listed(const char *list, int state);

/* Whether an outbox row in `state` may have lost its message body to
 * prune (STORE_FROM_BODY_PRUNE): a backend's read of a row without one
 * is corrupt otherwise. */
bool store_body_may_be_pruned(enum send_state state);

/* ---- end of transitions ---------------------------------------------- */

/* ---- rows as fields (store_field.c) ---------------------------------- */

/*
 * How a struct the store reads and writes maps to a row's columns, one
 * description for both backends: a table of fields in column order (the
 * order of its column list: STORE_JOB_COLS, STORE_ALERT_COLS, ...). Each
 * backend has one reader (columns c0.. of a row into a struct, field i
 * from column c0 + i) and one binder (a run of fields into consecutive
 * parameters) that follow a table; neither knows a struct.
 *
 * The kinds, and what SQL NULL is:
 *   TEXT  char[size]: read truncated to size - 1 and terminated, NULL
 *         reads as ""; bound as text.
 *   DUP   char *, allocated (the struct's owner frees it): NULL reads and
 *         binds as NULL; a failed copy sets the reader's *oom.
 *   I32   int or an enum (4 bytes); I64 int64_t: NULL reads as 0.
 *   BOOL  bool: SQLite an integer (non-zero: true), PostgreSQL a boolean.
 *   OPT   int64_t with a bool has-flag at offset `has`: NULL reads as
 *         has false, value 0; has false binds NULL.
 * Thread-safety: the tables are constant.
 */
enum store_fkind {
	STORE_F_TEXT,
	STORE_F_DUP,
	STORE_F_I32,
	STORE_F_I64,
	STORE_F_BOOL,
	STORE_F_OPT,
};

struct store_field {
	uint8_t kind;               /* enum store_fkind */
	uint16_t off;               /* offsetof the member */
	uint16_t size;              /* sizeof the member (TEXT: its room) */
	uint16_t has;               /* OPT: offsetof its has-flag */
};

struct store_fields {
	const struct store_field *f;
	size_t n;
};

/*
 * What a backend gives the one reader and the one binder: how to read a
 * column of its current row (src: a statement or a result and its row)
 * and how to set a parameter (dst: a statement or an argument list;
 * parameters are set in order p0, p0 + 1, ...). The kinds are mapped to
 * these here, once; a backend only speaks its library.
 */
struct store_col_ops {
	bool (*is_null)(const void *src, int col);
	int64_t (*i64)(const void *src, int col);
	bool (*truth)(const void *src, int col);   /* a boolean column */
	void (*text)(const void *src, int col, char *out, size_t n);
	char *(*dup)(const void *src, int col, bool *oom);
};
struct store_param_ops {
	void (*null)(void *dst, int p);
	void (*i64)(void *dst, int p, int64_t v);
	void (*truth)(void *dst, int p, bool v);
	void (*text)(void *dst, int p, const char *s); /* s never NULL */
};

/* Reads columns c0.. of src into the members of x that t names (the
 * rest of x is left as it is). False when a copy could not be allocated
 * (that member NULL, the others read: the caller's free sees what x
 * holds). */
bool store_fields_read(const struct store_col_ops *ops, const void *src,
		       int c0, const struct store_fields *t, void *x);
/* Sets parameters p0.. of dst from fields f[0..n) of x; x NULL: every
 * parameter NULL but numbers 0 and booleans false. */
void store_fields_bind(const struct store_param_ops *ops, void *dst, int p0,
		       const struct store_field *f, size_t n, const void *x);
/* Frees v, an array of n elements of size sz read by t, and the copies
 * its DUP fields hold. v may be NULL. */
void store_rows_free(const struct store_fields *t, void *v, size_t n,
		     size_t sz);

/* struct store_job, STORE_JOB_COLS (its policy inlined; `overlapped` is
 * no column). */
extern const struct store_fields store_job_fields;
/* struct sc_retry_policy: attempts, backoff, delay_ms, as an enqueue
 * writes them (a job's max_attempts, backoff, delay_ms). */
extern const struct store_fields store_policy_fields;
/* struct store_alert, STORE_ALERT_COLS. store_alert_raise writes fields
 * STORE_ALERT_RAISE_F0 .. + STORE_ALERT_RAISE_NF (schedule .. job_id) as
 * its first parameters; the store sets the rest. */
extern const struct store_fields store_alert_fields;
#define STORE_ALERT_RAISE_F0 1
#define STORE_ALERT_RAISE_NF 10
/* struct store_pause, STORE_PAUSE_COLS. store_pause_set writes all but
 * the last (resumed: store_pause_end's). */
extern const struct store_fields store_pause_fields;
/* struct ledger_row: id, then STORE_LEDGER_COLS, the columns a row is
 * written with (field 1 on: store_ledger_put_fields). */
extern const struct store_fields store_ledger_fields;
extern const struct store_fields store_ledger_put_fields;
/* A row of the lost-slot report (store_ledger_lost): the ledger row,
 * then recovered_ms (column 12). */
struct store_lost_row {
	struct ledger_row row;
	int64_t recovered_ms;
};
extern const struct store_fields store_lost_fields;
/* struct store_cron_note: schedule, from_ms, cron, tz (written). */
extern const struct store_fields store_cron_note_fields;
#define STORE_LEDGER_COLS                                                 \
	"schedule, slot_ms, job_id, attempt, started_ms, finished_ms, "      \
	"outcome, error_class, error_msg, retry_hint_ms, details_json"
/* struct store_alert_send, STORE_SEND_COLS: the send row s (its state
 * and body as the statement gives them: a NULL body reads as NULL), then
 * its alert a's schedule, slot_ms, reason, created_ms. */
extern const struct store_fields store_send_fields;
#define STORE_SEND_COLS(state, body)                                      \
	"s.id, s.alert_id, s.round, s.target, " state ", s.n_tries, "        \
	"s.next_try_ms, s.lease_token, s.created_ms, s.sent_ms, "            \
	"s.last_error, " body ", a.schedule, a.slot_ms, a.reason, "          \
	"a.created_ms"
/* struct store_node, STORE_NODE_COLS (the clock offset last: SQLite
 * keeps none and writes all but it). */
extern const struct store_fields store_node_fields;
/* struct store_stall, STORE_STALL_COLS. */
extern const struct store_fields store_stall_fields;
/* struct store_dead_job: job id, schedule, slot_ms, attempt, error_msg. */
extern const struct store_fields store_dead_fields;
/* struct store_cron: schedule, from_ms, cron, tz, recorded_ms. */
extern const struct store_fields store_cron_fields;
/* struct outbox_entry: state, n_tries, sent_ms, body. */
extern const struct store_fields store_outbox_entry_fields;
/* struct store_outbox_row: target, state, n_tries. */
extern const struct store_fields store_outbox_row_fields;
/* struct store_sched_last: schedule, slot_ms. */
extern const struct store_fields store_sched_last_fields;
/* struct store_enqueue_row: schedule, slot_ms, the policy's three,
 * last_ms. */
extern const struct store_fields store_enqueue_row_fields;
/* struct store_last_ok: schedule, id, slot_ms, finished_ms. */
extern const struct store_fields store_last_ok_fields;
/* struct store_sla_last: schedule, delivered_ms, first_ms. */
extern const struct store_fields store_sla_last_fields;
/* struct store_counts: READY due, READY later, ACTIVE, DONE, DEAD. */
extern const struct store_fields store_counts_fields;
/* struct store_token: the token cache's token and expiry. */
extern const struct store_fields store_token_fields;
/* One int64_t (a count, a time): the first column. */
extern const struct store_fields store_i64_fields;
/* A `const char *` element: one text parameter (binding only). */
extern const struct store_fields store_str_fields;
/* struct store_alert_send's n_tries and lease_token: a claim's take. */
extern const struct store_fields store_send_taken_fields;

/* ---- end of rows as fields -------------------------------------------- */

/* ---- one-statement operations (store_call.c) -------------------------- */

/*
 * Most operations are one statement on either backend: a read of one row
 * or of all rows, or one write. Those are written once, in store.c, as a
 * call of the backend's one runner (store_ops.call) with the statement's
 * id, its parameters and where its rows go. The table store_calls[]
 * (store_call.c) says per statement what it is: its name in errors, its
 * kind, its commit (the durability table's row: the backend applies its
 * class, never picks one), the fields of its rows and the message of a
 * missing row. A backend keeps, per id, only the SQL text.
 *
 * What a backend's runner does by kind:
 *   ONE    runs the statement; its single row is read into c->out by
 *          the table's fields (the caller zeroed it); no row is SC_ENOENT
 *          with the table's `missing` text.
 *   MAYBE  as ONE, but no row is no error: c->changed gets the rows read
 *          (0 or 1), and c->out is left as it was when 0.
 *          A ONE or MAYBE row marked `writes` is a write that answers
 *          its row (INSERT ... RETURNING): run alone at its commit's
 *          class, as a WRITE is, when outside store_ops.tx.
 *   ALL    every row into a new array *(void **)c->out of c->n elements
 *          of size `sz` (NULL when none; the caller frees it, and the
 *          copies its elements hold); on failure nothing is kept.
 *   WRITE  one write, committed alone with the class of `commit`;
 *          c->changed gets the rows it changed.
 *   FENCED as WRITE, under the fence c->fence (NULL: none): a write the
 *          fence refused is SC_ELEASE (store_fence_refused's text),
 *          nothing written.
 *   MANY   each element of c->in[0..c->n_in) (of the table's size, its
 *          fields by the table) through the statement, all in one
 *          transaction with the class of `commit`; c->changed the rows
 *          written. The element's fields are the first parameters
 *          (SQLite binds each element in turn; PostgreSQL one array per
 *          field, the statement unnests them and answers the count).
 *          With c->out (a bool[n_in]), each element's out says whether
 *          it wrote a row; such a statement answers on PostgreSQL the
 *          1-based positions of the elements that wrote one, a row each
 *          (WITH ORDINALITY), instead of the count.
 * Parameters: c->args in order are the statement's first parameters
 * (SQLite ?1.., PostgreSQL $1..). After them, each backend adds its own:
 * the fence's two values (SQLite ?20 and ?21, PostgreSQL the next two)
 * and, on PostgreSQL, the commit's durability as the last (DURABLE_IF).
 */
enum store_q {
	STORE_Q_PAUSE_END,
	STORE_Q_PAUSE_GET,
	STORE_Q_PAUSE_ALL,
	STORE_Q_NODES,
	STORE_Q_NODE_LEAVE,
	STORE_Q_LEDGER_FENCED,  /* a job's row, under the fence */
	STORE_Q_LEDGER_FREE,    /* a job's row, no fence set */
	STORE_Q_LEDGER_MISSED,  /* once per slot */
	STORE_Q_LEDGER_PAUSED,  /* once per slot */
	STORE_Q_LEDGER_MANY,
	STORE_Q_CRON_NOTE,
	STORE_Q_JOB_COUNTS,
	STORE_Q_OUTBOX_PUT,
	STORE_Q_OUTBOX_ABANDON,
	STORE_Q_JOB_GET,
	STORE_Q_JOB_FIND,
	STORE_Q_JOB_REVIVE,
	STORE_Q_JOB_LEASE_CLAMP,
	STORE_Q_SCHED_LAST_GET,
	STORE_Q_SCHED_LAST_ALL,
	STORE_Q_CRON_HISTORY,
	STORE_Q_LAST_SUCCESSES,
	STORE_Q_PAUSE_SET,
	STORE_Q_SCHED_LAST_SET,
	STORE_Q_SCHED_LAST_SET_MANY,
	STORE_Q_TOKEN_PUT,
	STORE_Q_TOKEN_DROP,
	STORE_Q_TOKEN_GET,
	STORE_Q_LEASE_DROP,
	STORE_Q_LEASE_TAKE,
	STORE_Q_NODE_BEAT,
	STORE_Q_JOB_HEARTBEAT,
	STORE_Q_JOB_RELEASE,
	STORE_Q_JOB_ENQUEUE_MANY,
	/* store_job_enqueue's steps (store.c, inside store_ops.tx): */
	STORE_Q_JOB_INSERT,
	STORE_Q_JOB_ID_OF,
	STORE_Q_JOB_NEXT_DUE,
	STORE_Q_JOB_ENQUEUE_TICK,
	STORE_Q_OUTBOX_GET,
	STORE_Q_OUTBOX_LIST,
	STORE_Q_OUTBOX_SET,
	STORE_Q_OUTBOX_RELEASE,
	STORE_Q_OUTBOX_UNKNOWN,
	STORE_Q_SLOT_MARK,
	STORE_Q_SLOT_IS_MARKED,
	STORE_Q_ALERT_REALERT,
	STORE_Q_ALERT_SENDS,
	STORE_Q_ALERT_LIST,
	STORE_Q_DEAD_UNALERTED,
	STORE_Q_SLA_LATE,
	STORE_Q_SLA_RUNNING,
	STORE_Q_SLA_LAST,
	/* The alerts' composed operations (store.c, inside store_ops.tx): */
	STORE_Q_ALERT_INSERT,
	STORE_Q_ALERT_ID,
	STORE_Q_ALERT_SUPERSEDE,
	STORE_Q_JOB_ALERTED,
	STORE_Q_ALERT_CLOSE,
	STORE_Q_ALERT_EXISTS,
	STORE_Q_ALERT_STAGED,
	STORE_Q_SEND_INSERT,
	STORE_Q_SEND_DUE,
	STORE_Q_SEND_TAKE,
	STORE_Q_SEND_FINISH,
	STORE_Q_SEND_EXISTS,
	/* Stalled-job recovery (store.c, the batches inside store_ops.tx): */
	STORE_Q_ANY_EXPIRED,
	STORE_Q_JOB_EXPIRED,
	STORE_Q_JOB_STALL,
	STORE_Q_LEDGER_LOST,     /* the lost-slot report, every schedule */
	STORE_Q_LEDGER_LOST_ONE, /* the same, of one schedule */
	/* store_ledger_query: one statement per filter shape k
	 * (store_lq_shape), id STORE_Q_LEDGER_SHAPE0 + k. Its text is the
	 * backend's, generated from k (no call_sql entry). */
	STORE_Q_LEDGER_SHAPE0,
	STORE_Q_LEDGER_SHAPE_END = STORE_Q_LEDGER_SHAPE0 + STORE_LQ_SHAPES - 1,
	STORE_Q_N
};

/* Is q one of the ledger query's shapes (its text generated)? */
#define STORE_Q_IS_SHAPE(q)                                               \
	((int)(q) >= STORE_Q_LEDGER_SHAPE0 &&                             \
	 (int)(q) <= STORE_Q_LEDGER_SHAPE_END)

enum store_qkind {
	STORE_QK_ONE,
	STORE_QK_MAYBE,
	STORE_QK_ALL,
	STORE_QK_WRITE,  /* and the kinds after it: the writes */
	STORE_QK_FENCED,
	STORE_QK_MANY
};

struct store_qdef {
	const char *op;                 /* names it in errors */
	enum store_qkind kind;
	enum store_commit commit;       /* WRITE, FENCED; STORE_COMMIT_N:
					   the call's (store_call.commit) */
	const struct store_fields *rows; /* ONE, ALL: the columns read;
					    MANY: an element's written */
	size_t sz;                      /* ALL, MANY: of one element */
	const char *missing;            /* ONE: the SC_ENOENT text */
	bool secret;                    /* its rows hold a secret: a
					   backend wipes its library's copy */
	bool writes;                    /* ONE, MAYBE: a write answering a
					   row (RETURNING), run at its
					   commit's class like a WRITE */
};

/* Indexed by enum store_q. */
extern const struct store_qdef store_calls[STORE_Q_N];

enum store_akind { STORE_A_NULL, STORE_A_I64, STORE_A_TEXT, STORE_A_BOOL,
		   STORE_A_FIELDS };

/* One parameter, or (FIELDS) a run of them: fields f[0..nf) of x. A
 * TEXT of NULL binds NULL. */
struct store_arg {
	enum store_akind kind;
	int64_t i;
	const char *s;
	const struct store_field *f;
	size_t nf;
	const void *x;
};

#define STORE_I64(v) {.kind = STORE_A_I64, .i = (v)}
#define STORE_TEXT(v) {.kind = STORE_A_TEXT, .s = (v)}
#define STORE_BOOL(v) {.kind = STORE_A_BOOL, .i = (v)}

/* At most this many parameters in c->args (FIELDS counted by nf). */
#define STORE_ARGS_MAX 16

struct store_call {
	enum store_q q;
	const struct store_arg *args;
	size_t n_args;
	const struct store_fence *fence; /* FENCED; NULL: unfenced */
	void *out;       /* ONE: the struct; ALL: a void **; MANY: NULL,
			    or a bool per element (whether it wrote) */
	size_t *n;       /* ALL: the elements */
	const void *in;  /* MANY: the elements */
	size_t n_in;
	int64_t changed; /* the writes: set by the runner */
	/* The commit when the table's is STORE_COMMIT_N: the values pick
	 * it (a ledger row's, an outbox state's). */
	enum store_commit commit;
};

/* store_ledger_append_written on a backend's handle (the store's
 * argument checks done): the statement the row's kind takes, fenced by
 * fence (NULL: none), its commit the row's. For backend tests. */
int store_ledger_put(const struct store_ops *ops, void *impl,
		     const struct store_fence *fence,
		     const struct ledger_row *row, bool *written,
		     struct sc_err *err);

/* store_job_recover_dead on a backend's handle, now read from clock. For
 * backend tests. */
int store_job_recover_on(const struct store_ops *ops, void *impl,
			 struct sc_clock *clock, int max_stalls,
			 int *n_recovered, struct store_dead_list *dead,
			 struct sc_err *err);

/* store_ledger_query on a backend's handle (f checked, never NULL): the
 * statement of f's shape with the values it names. For backend tests. */
int store_ledger_read(const struct store_ops *ops, void *impl,
		      const struct ledger_filter *f, struct ledger_row **rows,
		      size_t *n, struct sc_err *err);

/* The commit of write c: the table's, or the call's when it depends on
 * the data written. */
enum store_commit store_call_commit(const struct store_call *c);

/* ---- end of one-statement operations ---------------------------------- */

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

/* For tests: how many group syncs (store_sqlite.c) this process made for
 * the SQLite file at path since a handle on it was first opened (the
 * count restarts when its last handle closes); 0 if none is open. */
uint64_t store_sqlite_syncs(const char *path);

#endif
