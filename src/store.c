/*
 * store.c - the store handle: picks a backend from the URL, checks the
 * arguments every backend would have to check, dispatches, and keeps what
 * is policy rather than storage, once for every backend: the stalled-job
 * rule and its ledger texts (store_stall_rule), the order of claimed jobs,
 * and the log form of a store URL (store_url_for_log). The decisions a
 * backend asks for after its statement ran (outcomes, refusal texts, what
 * an alert closes) are store_rule.c's.
 *
 * Invariants:
 *   - A backend operation is only called with arguments that passed the
 *     checks here (names non-empty and shorter than their caps, policies
 *     valid, output pointers non-NULL, max_stalls >= 1), so the backends
 *     do not repeat them and behave alike on bad input.
 *   - A backend evaluates policy, never decides it: recovery is composed
 *     here (store_stall_rule's verdict and texts, the ledger rows, the
 *     dead list) from its statements; a claim returns its jobs (or
 *     alert sends) in any order and store_job_claim_ahead
 *     (store_alert_send_claim) sorts them.
 *   - The handle owns the backend's impl pointer; store_close frees both.
 *   - An alert handed to a backend has last_slot_ms >= slot_ms and
 *     n_slots >= 1 (alert_norm), a known status, and terminated texts.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "log.h"
#include "retry.h"
#include "store.h"
#include "url.h"

struct store {
	const struct store_ops *ops;
	void *impl;
	struct sc_clock *clock;
	struct store_fence fence;   /* job_id 0: not fenced */
	struct store_claim_rule rule; /* store_overlap_set; strings owned
					 but rule.known, known's text */
	struct store_known *known;  /* store_known_use; NULL: any */
	char where[PATH_MAX];       /* the store as errors name it: the
				       SQLite path, the PostgreSQL URL
				       without its password */
};

/* store_known_new: the JSON array of names (for a backend that ships the
 * set to its server), and an open-addressed hash of the raw names (for a
 * backend that asks per row: store_known_has), shared by reference.
 * slot[i] is 0 (empty) or 1 + the offset of a name in names. */
struct store_known {
	atomic_long refs;
	uint32_t mask;   /* slots - 1; slots a power of two >= 2n */
	uint32_t *slot;
	char *names;     /* the names, each NUL-terminated */
	char text[];
};

/* FNV-1a, 32 bits: names are short, and a probe compares the name. */
static uint32_t known_hash(const char *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* Fills k's hash of names[0..n), which passed check_name. 0 or
 * SC_ENOMEM. A name given twice is kept once. */
static int known_index(struct store_known *k, const char *const *names,
		       size_t n)
{
	size_t slots = 8, bytes = 0;

	while (slots < 2 * n)
		slots *= 2;
	for (size_t i = 0; i < n; i++)
		bytes += strlen(names[i]) + 1;
	if (slots > UINT32_MAX || bytes >= UINT32_MAX)
		return SC_ENOMEM;
	k->mask = (uint32_t)(slots - 1);
	k->slot = calloc(slots, sizeof(*k->slot));
	k->names = malloc(bytes ? bytes : 1);
	if (!k->slot || !k->names)
		return SC_ENOMEM;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		uint32_t h = known_hash(names[i], len) & k->mask;

		while (k->slot[h] &&
		       strcmp(k->names + k->slot[h] - 1, names[i]) != 0)
			h = (h + 1) & k->mask;
		if (k->slot[h])
			continue; /* given twice */
		memcpy(k->names + at, names[i], len + 1);
		k->slot[h] = (uint32_t)at + 1;
		at += len + 1;
	}
	return 0;
}

bool store_known_has(const struct store_known *k, const char *name,
		     size_t len)
{
	if (!k)
		return true;
	for (uint32_t h = known_hash(name, len) & k->mask; k->slot[h];
	     h = (h + 1) & k->mask) {
		const char *c = k->names + k->slot[h] - 1;
		if (strncmp(c, name, len) == 0 && c[len] == '\0')
			return true;
	}
	return false;
}

/* The fence to hand to a backend write: NULL when none is set. */
static const struct store_fence *fence_of(const struct store *s)
{
	return s->fence.job_id ? &s->fence : NULL;
}

/* ---- argument checks ------------------------------------------------- */

static int check_name(const char *what, const char *s, size_t cap,
		      struct sc_err *err)
{
	if (!s || !*s)
		return sc_err_set(err, SC_EINVAL, "%s is empty", what);
	if (strnlen(s, cap) >= cap)
		return sc_err_set(err, SC_EINVAL,
				  "%s is too long (at most %zu bytes)", what,
				  cap - 1);
	return 0;
}

static int check_policy(const struct sc_retry_policy *p, struct sc_err *err)
{
	if (!p || !retry_policy_valid(p))
		return sc_err_set(err, SC_EINVAL,
				  "invalid retry policy (attempts 1..100, "
				  "delay 0..30 days)");
	return 0;
}

static int check_out(const void *p, const char *what, struct sc_err *err)
{
	if (!p)
		return sc_err_set(err, SC_EINVAL, "%s is NULL", what);
	return 0;
}

/* ---- one-statement operations (store.h) ----------------------------- */

/* The parameters of a call: ARGS(STORE_TEXT(x), STORE_I64(y)). */
#define ARGS(...)                                                         \
	(const struct store_arg[]){__VA_ARGS__},                          \
		sizeof((const struct store_arg[]){__VA_ARGS__}) /          \
			sizeof(struct store_arg)
/* A run of parameters: fields t->f[0..n) of struct *v. */
#define FIELDS(t, n, v) \
	{.kind = STORE_A_FIELDS, .f = (t)->f, .nf = (n), .x = (v)}

/*
 * Reads by one-statement operation q: ONE into out (zeroed first; zero
 * when it fails), ALL into *(void **)out and *n (NULL and 0 first).
 */
static int call_read(struct store *s, enum store_q q,
		     const struct store_arg *a, size_t na, void *out,
		     size_t *n, struct sc_err *err)
{
	const struct store_qdef *d = &store_calls[q];
	struct store_call c = {.q = q, .args = a, .n_args = na, .out = out,
			       .n = n};

	/* MAYBE: out is left as it was when there is no row. */
	if (d->kind == STORE_QK_ONE) {
		memset(out, 0, d->sz);
	} else if (d->kind == STORE_QK_ALL && n) {
		*(void **)out = NULL;
		*n = 0;
	}
	return s->ops->call(s->impl, &c, err);
}

/* Writes by one-statement operation q (FENCED: under the handle's
 * fence); *changed (may be NULL) the rows changed, 0 on failure. */
static int call_write(struct store *s, enum store_q q,
		      const struct store_arg *a, size_t na, int64_t *changed,
		      struct sc_err *err)
{
	struct store_call c = {.q = q, .args = a, .n_args = na,
			       .fence = fence_of(s)};
	int rc = s->ops->call(s->impl, &c, err);

	if (changed)
		*changed = rc ? 0 : c.changed;
	return rc;
}

/* Writes elements v[0..n) by one-statement operation q (MANY) in one
 * transaction, with commit when the table leaves it to the call;
 * *n_written the rows written. */
static int call_many(struct store *s, enum store_q q, const void *v,
		     size_t n, const struct store_arg *a, size_t na,
		     enum store_commit commit, size_t *n_written,
		     struct sc_err *err)
{
	struct store_call c = {.q = q, .in = v, .n_in = n, .args = a,
			       .n_args = na, .commit = commit};
	int rc = s->ops->call(s->impl, &c, err);

	*n_written = rc ? 0 : (size_t)c.changed;
	return rc;
}

/* The LIMIT of a read into an array of max rows. */
static int64_t limit_of(size_t max)
{
	return max > INT32_MAX ? INT32_MAX : (int64_t)max;
}

/*
 * An ALL read whose last parameter is its LIMIT (limit_of(max)), into
 * the caller's out[0..max) instead of a new array: *n the rows. Read as
 * a list and copied; the tables read so (dead jobs, the timing pass)
 * hold no copied string, so the list's array is all there is to free.
 */
static int read_into(struct store *s, enum store_q q,
		     const struct store_arg *a, size_t na, void *out,
		     size_t max, size_t *n, struct sc_err *err)
{
	void *v = NULL;
	size_t got = 0;
	int rc = call_read(s, q, a, na, &v, &got, err);

	if (rc)
		return rc;
	*n = got < max ? got : max;
	if (*n)
		memcpy(out, v, *n * store_calls[q].sz);
	free(v);
	return 0;
}

/* call_write with the commit cm instead of the table's: for a write
 * whose values pick its durability (an outbox state). */
static int call_write_as(struct store *s, enum store_q q,
			 enum store_commit cm, const struct store_arg *a,
			 size_t na, int64_t *changed, struct sc_err *err)
{
	struct store_call c = {.q = q, .args = a, .n_args = na,
			       .fence = fence_of(s), .commit = cm};
	int rc = s->ops->call(s->impl, &c, err);

	if (changed)
		*changed = rc ? 0 : c.changed;
	return rc;
}

/* Runs body(ctx) as one transaction with commit's class
 * (store_ops.tx): every call it makes joins it. */
static int in_tx(struct store *s, enum store_commit commit,
		 int (*body)(void *ctx, struct sc_err *err), void *ctx,
		 struct sc_err *err)
{
	return s->ops->tx(s->impl, commit, body, ctx, err);
}

/* Whether statement q (MAYBE, by id) finds row id: why a write by id
 * changed nothing. */
static int row_found(struct store *s, enum store_q q, int64_t id,
		     bool *found, struct sc_err *err)
{
	const struct store_arg a = STORE_I64(id);
	int64_t one = 0;
	struct store_call c = {.q = q, .args = &a, .n_args = 1, .out = &one};
	int rc = s->ops->call(s->impl, &c, err);

	*found = !rc && c.changed;
	return rc;
}

/* A composed operation's ledger row, unfenced (none: nothing). */
static int put_row(struct store *s, const struct ledger_row *row,
		   struct sc_err *err)
{
	bool written;

	return row ? store_ledger_put(s->ops, s->impl, NULL, row, &written,
				      err)
		   : 0;
}

/* ---- open / close ---------------------------------------------------- */

/*
 * Splits url into a backend and its target. "sqlite:PATH" and a bare path
 * go to SQLite; "sqlite://PATH" is accepted too, because people write it.
 */
static int pick_backend(const char *url, const struct store_ops **ops,
			const char **target, struct sc_err *err)
{
	if (strncmp(url, "postgresql://", 13) == 0 ||
	    strncmp(url, "postgres://", 11) == 0) {
		/* libpq takes the whole URL; what it leaves out comes from
		 * the PG* environment variables. */
		*target = url;
		*ops = &store_pg_ops;
		return 0;
	}
	if (strncmp(url, "sqlite://", 9) == 0)
		*target = url + 9;
	else if (strncmp(url, "sqlite:", 7) == 0)
		*target = url + 7;
	else if (strstr(url, "://"))
		return sc_err_set(err, SC_EINVAL,
				  "unknown store URL scheme in '%.64s' (use "
				  "sqlite:PATH or postgresql://...)",
				  url);
	else
		*target = url;
	if (!**target)
		return sc_err_set(err, SC_EINVAL, "store URL has no path");
	*ops = &store_sqlite_ops;
	return 0;
}

static int open_store(const char *url, struct sc_clock *clock, bool create,
		      struct store **out, struct sc_err *err)
{
	const struct store_ops *ops = NULL;
	const char *target = NULL;
	struct store *s;
	int rc;

	if (!url || !clock || !out)
		return sc_err_set(err, SC_EINVAL, "store_open: NULL argument");
	rc = pick_backend(url, &ops, &target, err);
	if (rc || !ops || !target)
		return rc ? rc : SC_EINVAL;
	/* A shape's text is generated (STORE_Q_IS_SHAPE). */
	for (int q = 0; q < STORE_Q_N; q++)
		if ((!ops->call_sql[q] && !STORE_Q_IS_SHAPE(q)) ||
		    !store_calls[q].op)
			return sc_err_set(err, SC_EINVAL,
					  "%s store: no statement %d "
					  "(a build error)", ops->name, q);
	s = calloc(1, sizeof(*s));
	if (!s)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	s->ops = ops;
	s->clock = clock;
	store_url_for_log(target, s->where, sizeof(s->where));
	rc = ops->open(target, clock, create, &s->impl, err);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int store_open(const char *url, struct sc_clock *clock, struct store **out,
	       struct sc_err *err)
{
	return open_store(url, clock, true, out, err);
}

int store_open_existing(const char *url, struct sc_clock *clock,
			struct store **out, struct sc_err *err)
{
	return open_store(url, clock, false, out, err);
}

int store_cache_cap(struct store *s, int kib, struct sc_err *err)
{
	if (!s || kib <= 0)
		return sc_err_set(err, SC_EINVAL, "store_cache_cap: bad "
				  "argument");
	return s->ops->cache_cap ? s->ops->cache_cap(s->impl, kib, err) : 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	s->ops->close(s->impl);
	free((char *)s->rule.allow);
	free((char *)s->rule.skip);
	store_known_free(s->known);
	free(s);
}

struct sc_clock *store_clock(const struct store *s)
{
	return s->clock;
}

const char *store_backend_name(const struct store *s)
{
	return s->ops->name;
}

bool store_one_writer(const struct store *s)
{
	return s->ops->one_writer;
}

/* ---- stalls and stops ------------------------------------------------- */

/* Process-wide (store.h): when the stop began (mono ms, 0: none) and how
 * many handles are stalled now. */
static _Atomic int64_t stop_mono;
static atomic_int n_stalled;

void store_stop_waits(bool on)
{
	int64_t now = clock_mono_ms();

	atomic_store(&stop_mono, on ? (now > 0 ? now : 1) : 0);
}

int64_t store_stop_mono_ms(void)
{
	return atomic_load(&stop_mono);
}

void store_stall_mark(bool on)
{
	atomic_fetch_add(&n_stalled, on ? 1 : -1);
}

bool store_stalled(void)
{
	return atomic_load(&n_stalled) > 0;
}

/* ---- jobs ------------------------------------------------------------ */

/* store_job_enqueue's steps: the insert, or the id of the slot's job. */
struct enqueue_step {
	struct store *s;
	const char *schedule;
	int64_t slot_ms;
	const struct sc_retry_policy *policy;
	int64_t run_at_ms;
	bool manual;
	bool created;
	int64_t id;
};

static int enqueue_one(struct enqueue_step *e, struct sc_err *err)
{
	struct store *s = e->s;
	const struct store_arg args[] = {
		STORE_TEXT(e->schedule), STORE_I64(e->slot_ms),
		FIELDS(&store_policy_fields, store_policy_fields.n, e->policy),
		STORE_I64(e->run_at_ms), STORE_I64(sc_clock_now_ms(s->clock)),
		STORE_BOOL(e->manual)};
	struct store_call c = {.q = STORE_Q_JOB_INSERT, .args = args,
			       .n_args = sizeof(args) / sizeof(args[0]),
			       .out = &e->id};
	int rc = s->ops->call(s->impl, &c, err);

	e->created = !rc && c.changed;
	/* PostgreSQL: ON CONFLICT waited for a concurrent insert of the
	 * slot to commit, so its row is visible to this read. */
	if (!rc && !e->created)
		rc = call_read(s, STORE_Q_JOB_ID_OF,
			       ARGS(STORE_TEXT(e->schedule),
				    STORE_I64(e->slot_ms)),
			       &e->id, NULL, err);
	return rc;
}

int store_job_enqueue(struct store *s, const char *schedule,
		      int64_t slot_ms, const struct sc_retry_policy *policy,
		      int64_t run_at_ms, bool manual, int64_t *job_id,
		      bool *created, struct sc_err *err)
{
	struct enqueue_step e = {.s = s, .schedule = schedule,
				 .slot_ms = slot_ms, .policy = policy,
				 .run_at_ms = run_at_ms, .manual = manual};
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_policy(policy, err);
	/* No transaction around the two: the insert is the write, and the
	 * read after a conflict sees the row that won it. */
	if (!rc)
		rc = enqueue_one(&e, err);
	if (rc)
		return rc;
	if (job_id)
		*job_id = e.id;
	if (created)
		*created = e.created;
	return 0;
}

int store_job_enqueue_many(struct store *s, const char *schedule,
			   const int64_t *slots_ms, size_t n,
			   const struct sc_retry_policy *policy,
			   struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_policy(policy, err);
	if (!rc && n > 0)
		rc = check_out(slots_ms, "slots", err);
	if (rc)
		return rc;
	if (n == 0)
		return 0;
	size_t made;
	return call_many(s, STORE_Q_JOB_ENQUEUE_MANY, slots_ms, n,
			 ARGS(STORE_TEXT(schedule),
			      FIELDS(&store_policy_fields, store_policy_fields.n,
				     policy),
			      STORE_I64(sc_clock_now_ms(s->clock))),
			 0, &made, err);
}

int store_job_enqueue_batch(struct store *s, struct store_enqueue *v,
			    size_t n, struct sc_err *err)
{
	if (n == 0)
		return 0;
	int rc = check_out(v, "slots", err);

	for (size_t i = 0; !rc && i < n; i++) {
		rc = check_name("schedule name", v[i].schedule, STORE_NAME_MAX,
				err);
		if (!rc)
			rc = check_policy(v[i].policy, err);
		v[i].created = false;
	}
	if (rc)
		return rc;
	/* One statement for the whole tick (one round trip on PostgreSQL:
	 * the tick's commit is on the path of every slot's start). */
	struct store_enqueue_row *rows = malloc(n * sizeof(*rows));
	bool *made = calloc(n, sizeof(*made));
	const struct store_arg now = STORE_I64(sc_clock_now_ms(s->clock));
	struct store_call c = {.q = STORE_Q_JOB_ENQUEUE_TICK, .in = rows,
			       .n_in = n, .args = &now, .n_args = 1,
			       .out = made};

	if (!rows || !made) {
		free(rows);
		free(made);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct store_enqueue_row){v[i].schedule, v[i].slot_ms,
						     *v[i].policy, v[i].last_ms};
	rc = s->ops->call(s->impl, &c, err);
	for (size_t i = 0; !rc && i < n; i++)
		v[i].created = made[i];
	free(rows);
	free(made);
	return rc;
}

/* Earliest run_at first; the job id breaks ties (the order it was made). */
/* The claim order (store.h): fresh jobs (their first attempt, now
 * claimed: attempts 1) before retries, then run_at, then id. */
static int cmp_claimed(const void *x, const void *y)
{
	const struct store_job *a = x, *b = y;
	bool ra = a->attempts > 1, rb = b->attempts > 1;

	if (ra != rb)
		return ra ? 1 : -1;
	if (a->run_at_ms != b->run_at_ms)
		return a->run_at_ms < b->run_at_ms ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

int store_job_claim(struct store *s, const char *worker, int64_t lease_ms,
		    struct store_job *out, size_t max, size_t *n,
		    struct sc_err *err)
{
	return store_job_claim_ahead(s, worker, lease_ms, 0, out, max, n, err);
}

int store_job_claim_ahead(struct store *s, const char *worker,
			  int64_t lease_ms, int64_t ahead_ms,
			  struct store_job *out, size_t max, size_t *n,
			  struct sc_err *err)
{
	int rc = check_name("worker name", worker, STORE_WORKER_MAX, err);

	if (!rc)
		rc = check_out(out, "claim output", err);
	if (!rc)
		rc = check_out(n, "claim count", err);
	if (rc)
		return rc;
	if (lease_ms <= 0)
		return sc_err_set(err, SC_EINVAL, "lease must be positive");
	if (ahead_ms < 0)
		return sc_err_set(err, SC_EINVAL, "claim ahead must be >= 0");
	*n = 0;
	if (max == 0)
		return 0;
	rc = s->ops->job_claim(s->impl, worker, lease_ms, ahead_ms, out, max, n,
			       err);
	/* The backends pick the earliest jobs (ORDER BY ... LIMIT), but an
	 * UPDATE ... RETURNING hands them back in no promised order: the
	 * order store.h promises is made here, once for both. */
	if (!rc && *n > 1)
		qsort(out, *n, sizeof(*out), cmp_claimed);
	return rc;
}

/* After a write by job id and lease token changed nothing: SC_ENOENT when
 * the job is gone, else SC_ELEASE (store_lease_error's texts). */
static int lease_refused(struct store *s, int64_t id, int64_t lease_token,
			 const char *op, struct sc_err *err)
{
	struct store_job j;
	struct sc_err e = {0};
	int rc = call_read(s, STORE_Q_JOB_GET, ARGS(STORE_I64(id)), &j, NULL,
			   &e);

	if (rc && rc != SC_ENOENT) {
		err_copy(err, &e);
		return rc;
	}
	return store_lease_error("job", op, id, lease_token, rc == 0, err);
}

int store_job_heartbeat(struct store *s, int64_t id, int64_t lease_token,
			int64_t lease_ms, struct sc_err *err)
{
	int64_t n = 0;
	int rc;

	if (lease_ms <= 0)
		return sc_err_set(err, SC_EINVAL, "lease must be positive");
	rc = call_write(s, STORE_Q_JOB_HEARTBEAT,
			ARGS(STORE_I64(id), STORE_I64(lease_token),
			     STORE_I64(sc_clock_now_ms(s->clock)),
			     STORE_I64(lease_ms)),
			&n, err);
	/* Nothing extended: the job is gone, or no longer held under
	 * this token. */
	return rc || n > 0 ? rc : lease_refused(s, id, lease_token, "heartbeat",
						err);
}

static int job_finish(struct store *s, int64_t id, int64_t lease_token,
		      enum job_state new_state, int64_t run_at_ms,
		      const struct ledger_row *row, bool mark,
		      struct sc_err *err)
{
	if (!store_finish_outcome(new_state))
		return sc_err_set(err, SC_EINVAL,
				  "a finished attempt leads to DONE, READY or "
				  "DEAD");
	if (row && strnlen(row->outcome, sizeof(row->outcome)) >=
			   sizeof(row->outcome))
		return sc_err_set(err, SC_EINVAL, "ledger outcome too long");
	return s->ops->job_finish(s->impl, id, lease_token, new_state,
				  run_at_ms, row, mark, err);
}

int store_job_finish(struct store *s, int64_t id, int64_t lease_token,
		     enum job_state new_state, int64_t run_at_ms,
		     const struct ledger_row *row, struct sc_err *err)
{
	return job_finish(s, id, lease_token, new_state, run_at_ms, row, false,
			  err);
}

int store_job_complete_marked(struct store *s, int64_t id, int64_t lease_token,
			      const struct ledger_row *row, struct sc_err *err)
{
	return job_finish(s, id, lease_token, JOB_DONE, 0, row, true, err);
}

int store_job_complete_many(struct store *s, const struct store_job *jobs,
			    size_t n, const struct ledger_row *row, int *rcs,
			    struct sc_err *err)
{
	if (n && (!jobs || !rcs))
		return sc_err_set(err, SC_EINVAL, "no jobs or no results");
	if (row && strnlen(row->outcome, sizeof(row->outcome)) >=
			   sizeof(row->outcome))
		return sc_err_set(err, SC_EINVAL, "ledger outcome too long");
	if (n == 0)
		return 0;
	if (s->ops->job_complete_many)
		return s->ops->job_complete_many(s->impl, jobs, n, row, rcs,
						 err);
	for (size_t i = 0; i < n; i++) {
		struct sc_err e = {0};
		rcs[i] = s->ops->job_finish(s->impl, jobs[i].id,
					    jobs[i].lease_token, JOB_DONE, 0,
					    row, false, &e);
		if (rcs[i] && rcs[i] != SC_ELEASE && rcs[i] != SC_ENOENT) {
			err_copy(err, &e);
			return rcs[i];
		}
	}
	return 0;
}

int store_job_release(struct store *s, int64_t id, int64_t lease_token,
		      struct sc_err *err)
{
	return store_job_give_back(s, id, lease_token, 0, "",
				   "released on shutdown", err);
}

int store_job_give_back(struct store *s, int64_t id, int64_t lease_token,
			int64_t run_at_ms, const char *error_class,
			const char *msg, struct sc_err *err)
{
	int64_t now = sc_clock_now_ms(s->clock), n = 0;
	int rc = call_write(s, STORE_Q_JOB_RELEASE,
			    ARGS(STORE_I64(id), STORE_I64(lease_token),
				 STORE_I64(now),
				 STORE_I64(run_at_ms > 0 ? run_at_ms : now),
				 STORE_TEXT(error_class ? error_class : ""),
				 STORE_TEXT(msg ? msg : "")),
			    &n, err);

	return rc || n > 0 ? rc : lease_refused(s, id, lease_token, "release",
						err);
}

/* ---- stalled-job recovery --------------------------------------------- */

/* Expired jobs judged per transaction: a long recovery holds SQLite's
 * write lock for one batch at a time, so that claims pass in between. */
#define RECOVER_BATCH 64

/*
 * One batch of a recovery (store.h, store_job_recover_dead) inside
 * store_ops.tx: the expired jobs, oldest lease first, then by id (on
 * both backends: a long backlog is worked off in the same order
 * everywhere), read under SQLite's write lock or locked by PostgreSQL
 * with SKIP LOCKED (each job is one node's); then per job the verdict of
 * store_stall_rule: the job READY or DEAD, its "stalled" row, then its
 * "lost" row when dead. e[i] keeps the jobs read, moved[i] those this
 * batch changed, for the dead list once the batch committed.
 */
struct recover_step {
	struct store *s;
	int max_stalls;
	int64_t now;
	struct store_stall *e;   /* e[0..got), owned */
	size_t got;
	bool moved[RECOVER_BATCH];
	int n;                   /* the jobs moved */
};

/* The rows a stall writes, stalled then lost (when dead), both with
 * STORE_STALL_CLASS: the ledger's words for it on every backend. */
static int stall_rows(struct store *s, const struct store_stall *x,
		      struct store_stall_verdict *v, int64_t now,
		      struct sc_err *err)
{
	struct ledger_row r = {
		.slot_ms = x->slot_ms, .job_id = x->id,
		.attempt = x->attempts, .started_ms = x->started_ms,
		.finished_ms = now, .outcome = LEDGER_STALLED,
		.error_class = STORE_STALL_CLASS, .error_msg = v->stalled_msg,
	};
	int rc;

	snprintf(r.schedule, sizeof(r.schedule), "%s", x->schedule);
	rc = put_row(s, &r, err);
	if (rc || !v->dead)
		return rc;
	snprintf(r.outcome, sizeof(r.outcome), "%s", LEDGER_LOST);
	r.error_msg = v->lost_msg;
	return put_row(s, &r, err);
}

static int recover_body(void *ctx, struct sc_err *err)
{
	struct recover_step *r = ctx;
	struct store *s = r->s;
	int rc = call_read(s, STORE_Q_JOB_EXPIRED,
			   ARGS(STORE_I64(r->now), STORE_I64(RECOVER_BATCH)),
			   &r->e, &r->got, err);

	r->n = 0;
	for (size_t i = 0; !rc && i < r->got && i < RECOVER_BATCH; i++) {
		const struct store_stall *x = &r->e[i];
		struct store_stall_verdict v;
		int64_t n = 0;

		store_stall_rule(r->max_stalls, x, &v);
		rc = call_write(s, STORE_Q_JOB_STALL,
				ARGS(STORE_I64(x->id),
				     STORE_I64(v.dead ? JOB_DEAD : JOB_READY),
				     STORE_I64(r->now)),
				&n, err);
		/* The job is held (write lock, row lock): it changes. */
		r->moved[i] = !rc && n > 0;
		if (r->moved[i]) {
			r->n++;
			rc = stall_rows(s, x, &v, r->now, err);
		}
	}
	return rc;
}

/* Appends j to dl, or only counts it (n_more) once dl holds
 * STORE_DEAD_MAX. 0 or SC_ENOMEM (dl unchanged). */
static int dead_list_push(struct store_dead_list *dl,
			  const struct store_dead_job *j)
{
	if (dl->n >= STORE_DEAD_MAX) {
		dl->n_more++;
		return 0;
	}
	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 8;
		struct store_dead_job *v;

		if (cap > STORE_DEAD_MAX)
			cap = STORE_DEAD_MAX;
		v = realloc(dl->v, cap * sizeof(*v));
		if (!v)
			return SC_ENOMEM;
		dl->v = v;
		dl->cap = cap;
	}
	dl->v[dl->n++] = *j;
	return 0;
}

/* Once a stall's verdict is dead and committed: logs the lost job and,
 * when dl is given, appends it to dl (dead_list_push). 0 or SC_ENOMEM,
 * set in err. */
static int stall_lost(struct store_dead_list *dl,
		      const struct store_stall *job, const char *lost_msg,
		      struct sc_err *err)
{
	struct store_dead_job dj = {
		.job_id = job->id, .slot_ms = job->slot_ms,
		.attempt = job->attempts,
	};

	LOG(SC_LOG_ERROR, "store", "event=lost job=%lld attempt=%d "
	    "reason=stalled", (long long)job->id, job->attempts);
	if (!dl)
		return 0;
	snprintf(dj.schedule, sizeof(dj.schedule), "%s", job->schedule);
	snprintf(dj.error_msg, sizeof(dj.error_msg), "%s", lost_msg);
	if (dead_list_push(dl, &dj) != 0)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	return 0;
}

/* After a batch committed: its dead jobs logged and listed in dead
 * (NULL: not wanted). The first failure (SC_ENOMEM) is returned; the
 * others are still logged. */
static int list_dead(const struct recover_step *r,
		     struct store_dead_list *dead, struct sc_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < r->got && i < RECOVER_BATCH; i++) {
		struct store_stall_verdict v;

		if (!r->moved[i])
			continue;
		store_stall_rule(r->max_stalls, &r->e[i], &v);
		if (!v.dead)
			continue;
		int e = stall_lost(rc ? NULL : dead, &r->e[i], v.lost_msg,
				   err);
		if (!rc)
			rc = e;
	}
	return rc;
}

int store_job_recover(struct store *s, int max_stalls, int *n_recovered,
		      struct sc_err *err)
{
	return store_job_recover_dead(s, max_stalls, n_recovered, NULL, err);
}

int store_job_recover_dead(struct store *s, int max_stalls,
			   int *n_recovered, struct store_dead_list *dead,
			   struct sc_err *err)
{
	struct recover_step r = {.s = s, .max_stalls = max_stalls};
	int64_t any = 0;
	int dummy, rc;

	if (!n_recovered)
		n_recovered = &dummy;
	*n_recovered = 0;
	if (dead) {
		dead->n = 0;
		dead->n_more = 0;
	}
	if (max_stalls < 1)
		return sc_err_set(err, SC_EINVAL, "max_stalls must be >= 1");
	/* A plain read first: the common answer, none expired, costs no
	 * write transaction (no write lock, no fsync). */
	rc = call_read(s, STORE_Q_ANY_EXPIRED,
		       ARGS(STORE_I64(sc_clock_now_ms(s->clock))), &any, NULL,
		       err);
	if (rc || !any)
		return rc;
	/* An older node must not judge jobs by rules a newer schema may
	 * have changed. */
	if (s->ops->schema_check)
		rc = s->ops->schema_check(s->impl, err);
	while (!rc) {
		r.now = sc_clock_now_ms(s->clock);
		r.e = NULL;
		r.got = 0;
		memset(r.moved, 0, sizeof(r.moved));
		rc = in_tx(s, STORE_COMMIT_RECOVER, recover_body, &r, err);
		/* Listed only once committed: each dead job is listed by the
		 * one handle whose transaction moved it. */
		if (!rc) {
			*n_recovered += r.n;
			rc = list_dead(&r, dead, err);
		}
		store_rows_free(&store_stall_fields, r.e, r.got, sizeof(*r.e));
		if (r.got < RECOVER_BATCH)
			break;
	}
	if (*n_recovered > 0)
		LOG(SC_LOG_INFO, "store", "event=recovered_stalled n=%d",
		    *n_recovered);
	return rc;
}

int store_job_recover_on(const struct store_ops *ops, void *impl,
			 struct sc_clock *clock, int max_stalls,
			 int *n_recovered, struct store_dead_list *dead,
			 struct sc_err *err)
{
	struct store s = {.ops = ops, .impl = impl, .clock = clock};

	return store_job_recover_dead(&s, max_stalls, n_recovered, dead, err);
}

void store_stall_rule(int max_stalls, const struct store_stall *job,
		      struct store_stall_verdict *v)
{
	int stall = job->n_stalls + 1;
	bool used_up = job->attempts >= job->max_attempts;

	v->dead = used_up || stall >= max_stalls;
	snprintf(v->stalled_msg, sizeof(v->stalled_msg),
		 "lease of worker %s expired: the worker died or hung "
		 "(stall %d)", job->owner, stall);
	v->lost_msg[0] = '\0';
	if (used_up)
		snprintf(v->lost_msg, sizeof(v->lost_msg),
			 "attempts used up (%d), the last one stalled",
			 job->attempts);
	else if (v->dead)
		snprintf(v->lost_msg, sizeof(v->lost_msg),
			 "stalled %d times: giving up", stall);
}


void store_dead_list_dispose(struct store_dead_list *dl)
{
	if (!dl)
		return;
	free(dl->v);
	memset(dl, 0, sizeof(*dl));
}

int store_job_get(struct store *s, int64_t id, struct store_job *out,
		  struct sc_err *err)
{
	int rc = check_out(out, "job output", err);

	return rc ? rc
		  : call_read(s, STORE_Q_JOB_GET, ARGS(STORE_I64(id)), out,
			      NULL, err);
}

int store_job_find(struct store *s, const char *schedule, int64_t slot_ms,
		   struct store_job *out, struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(out, "job output", err);
	return rc ? rc
		  : call_read(s, STORE_Q_JOB_FIND,
			      ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms)),
			      out, NULL, err);
}

int store_job_revive(struct store *s, int64_t id, int budget,
		     struct sc_err *err)
{
	struct store_job j;
	struct sc_err e = {0};
	int64_t n = 0, now = sc_clock_now_ms(s->clock);
	int rc = call_write(s, STORE_Q_JOB_REVIVE,
			    ARGS(STORE_I64(id), STORE_I64(now), STORE_I64(budget)),
			    &n, err);

	if (rc || n > 0)
		return rc;
	/* Nothing revived: the job is gone, or it is not DEAD. */
	rc = call_read(s, STORE_Q_JOB_GET, ARGS(STORE_I64(id)), &j, NULL, &e);
	if (rc == SC_ENOENT)
		return store_missing_error("job", id, err);
	if (rc)
		err_copy(err, &e);
	return rc ? rc : store_not_dead_error(id, err);
}

int store_job_lease_clamp(struct store *s, int64_t lease_ms, int64_t slack_ms,
			  int *n, struct sc_err *err)
{
	*n = 0;
	if (lease_ms < 1 || slack_ms < 0)
		return sc_err_set(err, SC_EINVAL, "lease clamp: lease %lld ms, "
				  "slack %lld ms", (long long)lease_ms,
				  (long long)slack_ms);
	int64_t changed = 0;
	int rc = call_write(s, STORE_Q_JOB_LEASE_CLAMP,
			    ARGS(STORE_I64(sc_clock_now_ms(s->clock)),
				 STORE_I64(lease_ms), STORE_I64(slack_ms)),
			    &changed, err);

	*n = (int)changed;
	return rc;
}

int store_server_now_ms(struct store *s, int64_t *out_ms, struct sc_err *err)
{
	if (!s->ops->server_now)
		return sc_err_set(err, SC_ENOENT, "the %s store has no clock "
				  "of its own", s->ops->name);
	return s->ops->server_now(s->impl, out_ms, err);
}

int store_job_next_due(struct store *s, int64_t *out_ms,
		       struct sc_err *err)
{
	int rc = check_out(out_ms, "next-due output", err);
	/* The claim's filter on the known schedules (store_claim_known_set)
	 * holds here too: a job the claim would pass over is not due. */
	bool known = s->rule.on && s->rule.known_set;

	return rc ? rc
		  : call_read(s, STORE_Q_JOB_NEXT_DUE,
			      ARGS(STORE_BOOL(known)), out_ms, NULL, err);
}

int store_job_counts(struct store *s, const char *schedule,
		     struct store_counts *out, struct sc_err *err)
{
	int rc = schedule ? check_name("schedule name", schedule, STORE_NAME_MAX,
				       err)
			  : 0;

	if (!rc)
		rc = check_out(out, "counts output", err);
	return rc ? rc
		  : call_read(s, STORE_Q_JOB_COUNTS,
			      ARGS(STORE_TEXT(schedule),
				   STORE_I64(sc_clock_now_ms(s->clock))),
			      out, NULL, err);
}

/* ---- fencing ---------------------------------------------------------- */

/* names[0..n) framed for struct store_claim_rule: "\n" NAME "\n" ... */
static int frame_names(const char *const *names, size_t n, char **out,
		       struct sc_err *err)
{
	size_t len = 2;

	for (size_t i = 0; i < n; i++) {
		int rc = check_name("schedule name", names[i], STORE_NAME_MAX,
				    err);
		if (rc)
			return rc;
		if (strchr(names[i], '\n'))
			return sc_err_set(err, SC_EINVAL, "schedule name "
					  "holds a newline");
		len += strlen(names[i]) + 1;
	}
	char *p = malloc(len);
	if (!p)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	size_t k = 0;
	p[k++] = '\n';
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]);
		memcpy(p + k, names[i], l);
		k += l;
		p[k++] = '\n';
	}
	p[k] = '\0';
	*out = p;
	return 0;
}

int store_overlap_set(struct store *s, bool on, const char *const *allow,
		      size_t n_allow, const char *const *skip, size_t n_skip,
		      struct sc_err *err)
{
	char *a = NULL, *k = NULL;
	int rc = frame_names(allow, on ? n_allow : 0, &a, err);

	if (!rc)
		rc = frame_names(skip, on ? n_skip : 0, &k, err);
	if (rc) {
		free(a);
		return rc;
	}
	free((char *)s->rule.allow);
	free((char *)s->rule.skip);
	s->rule.on = on;
	s->rule.allow = a;
	s->rule.skip = k;
	s->ops->claim_rule(s->impl, &s->rule);
	return 0;
}

/* Appends the JSON text of one name (jansson's encoding, one string at a
 * time: a tree of every name cost 800 bytes each at its peak). */
static int known_append(struct buf *b, const char *name, struct sc_err *err)
{
	char one[2 * STORE_NAME_MAX + 8];
	json_t *v = json_string(name);
	size_t len = v ? json_dumpb(v, one, sizeof(one), JSON_ENCODE_ANY) : 0;

	json_decref(v);
	if (!v)
		return sc_err_set(err, SC_EINVAL, "schedule name is not UTF-8");
	/* A name of STORE_NAME_MAX bytes escapes within 2x plus quotes
	 * (\uXXXX only for control bytes, which are refused upstream; a
	 * longer text is refused rather than cut). */
	if (len == 0 || len > sizeof(one))
		return sc_err_set(err, SC_EINVAL, "schedule name does not "
				  "encode");
	return buf_add(b, one, len) ? sc_err_set(err, SC_ENOMEM,
						 "out of memory") : 0;
}

int store_known_new(const char *const *names, size_t n,
		    struct store_known **out, struct sc_err *err)
{
	struct buf b;
	int rc = 0;

	buf_init(&b, SIZE_MAX / 2);
	rc = buf_add(&b, "[", 1) ? SC_ENOMEM : 0;
	for (size_t i = 0; !rc && i < n; i++) {
		rc = check_name("schedule name", names[i], STORE_NAME_MAX,
				err);
		if (!rc && i)
			rc = buf_add(&b, ",", 1) ? SC_ENOMEM : 0;
		if (!rc)
			rc = known_append(&b, names[i], err);
	}
	if (!rc)
		rc = buf_add(&b, "]", 1) ? SC_ENOMEM : 0;
	struct store_known *k = rc ? NULL : calloc(1, sizeof(*k) + b.len + 1);
	if (!rc && !k)
		rc = SC_ENOMEM;
	if (!rc)
		rc = known_index(k, names, n);
	if (!rc) {
		atomic_init(&k->refs, 1);
		memcpy(k->text, b.p, b.len);
		k->text[b.len] = '\0';
		*out = k;
	} else if (k) {
		free(k->slot);
		free(k->names);
		free(k);
	}
	buf_dispose(&b);
	if (rc == SC_ENOMEM)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	return rc;
}

void store_known_free(struct store_known *k)
{
	if (k && atomic_fetch_sub(&k->refs, 1) == 1) {
		free(k->slot);
		free(k->names);
		free(k);
	}
}

void store_known_use(struct store *s, struct store_known *k)
{
	if (k)
		atomic_fetch_add(&k->refs, 1);
	/* A set is immutable and s holds a reference to its current one, so
	 * the same pointer is the same set: a backend that keeps a copy of
	 * it (PostgreSQL's claim_known) reloads only on a new generation. */
	if (k != s->known)
		s->rule.known_gen++;
	store_known_free(s->known);
	s->known = k;
	s->rule.known = k ? k->text : NULL;
	s->rule.known_set = k;
	s->ops->claim_rule(s->impl, &s->rule);
}

int store_claim_known_set(struct store *s, const char *const *names,
			  size_t n, struct sc_err *err)
{
	struct store_known *k = NULL;

	if (names) {
		int rc = store_known_new(names, n, &k, err);
		if (rc)
			return rc;
	}
	store_known_use(s, k);
	store_known_free(k);
	return 0;
}

void store_fence_set(struct store *s, int64_t job_id, int64_t lease_token)
{
	s->fence.job_id = job_id;
	s->fence.lease_token = lease_token;
}

void store_fence_clear(struct store *s)
{
	s->fence.job_id = 0;
	s->fence.lease_token = 0;
}

int store_fence_check(struct store *s, struct sc_err *err)
{
	struct store_job j;
	struct sc_err e = {0};
	int rc;

	if (!s->fence.job_id)
		return 0;
	rc = call_read(s, STORE_Q_JOB_GET, ARGS(STORE_I64(s->fence.job_id)),
		       &j, NULL, &e);
	if (rc == SC_ENOENT ||
	    (rc == 0 && (j.state != JOB_ACTIVE ||
			 j.lease_token != s->fence.lease_token)))
		return sc_err_set(err, SC_ELEASE,
				  "job %lld: lease %lld lost (job taken over, "
				  "finished or gone); this worker stops",
				  (long long)s->fence.job_id,
				  (long long)s->fence.lease_token);
	if (rc)
		err_copy(err, &e);
	return rc;
}

/* ---- ledger ---------------------------------------------------------- */

int store_ledger_append(struct store *s, const struct ledger_row *row,
			struct sc_err *err)
{
	bool written;

	return store_ledger_append_written(s, row, &written, err);
}

int store_ledger_append_written(struct store *s, const struct ledger_row *row,
				bool *written, struct sc_err *err)
{
	bool dummy;
	int rc;

	if (!written)
		written = &dummy;
	*written = false;

	if (!row)
		return sc_err_set(err, SC_EINVAL, "ledger row is NULL");
	rc = check_name("schedule name", row->schedule, STORE_NAME_MAX, err);
	if (!rc)
		rc = check_name("ledger outcome", row->outcome,
				sizeof(row->outcome), err);
	if (!rc && strnlen(row->error_class, sizeof(row->error_class)) >=
			   sizeof(row->error_class))
		rc = sc_err_set(err, SC_EINVAL, "ledger error class too long");
	return rc ? rc
		  : store_ledger_put(s->ops, s->impl, fence_of(s), row,
				     written, err);
}

int store_ledger_put(const struct store_ops *ops, void *impl,
		     const struct store_fence *fence,
		     const struct ledger_row *row, bool *written,
		     struct sc_err *err)
{
	/* A missed or paused row ran no job: unfenced, once per slot. */
	enum store_row_kind kind = store_ledger_row_kind(row->outcome);
	enum store_q q = kind == STORE_ROW_PAUSED   ? STORE_Q_LEDGER_PAUSED
			 : kind == STORE_ROW_MISSED ? STORE_Q_LEDGER_MISSED
			 : fence		    ? STORE_Q_LEDGER_FENCED
						    : STORE_Q_LEDGER_FREE;
	/* the row's fields but its id, the store's */
	const struct store_arg a = {.kind = STORE_A_FIELDS,
				    .f = store_ledger_put_fields.f,
				    .nf = store_ledger_put_fields.n,
				    .x = row};
	struct store_call c = {.q = q, .args = &a, .n_args = 1,
			       .fence = fence,
			       .commit = store_commit_of_rows(row, 1)};
	int rc = ops->call(impl, &c, err);

	*written = !rc && c.changed > 0;
	return rc;
}

static int check_row(const struct ledger_row *row, struct sc_err *err);

int store_ledger_append_many(struct store *s, const struct ledger_row *rows,
			     size_t n, size_t *n_written, struct sc_err *err)
{
	size_t dummy;
	int rc = 0;

	if (!n_written)
		n_written = &dummy;
	*n_written = 0;
	if (n == 0)
		return 0;
	if (!rows)
		return sc_err_set(err, SC_EINVAL, "ledger rows are NULL");
	/* Every row is checked before any is written: all or none. */
	for (size_t i = 0; i < n && !rc; i++) {
		struct sc_err e = {0};

		rc = check_row(&rows[i], &e);
		if (rc)
			sc_err_set(err, rc, "ledger row %zu: %s", i, e.msg);
	}
	if (rc)
		return rc;
	return call_many(s, STORE_Q_LEDGER_MANY, rows, n, NULL, 0,
			 store_commit_of_rows(rows, n), n_written, err);
}

int store_ledger_read(const struct store_ops *ops, void *impl,
		      const struct ledger_filter *f, struct ledger_row **rows,
		      size_t *n, struct sc_err *err)
{
	/* Shape k's statement names only the terms its filter has, its
	 * parameters in order of use (store_lq_shape): the schedule, the
	 * period, the outcome, then the limit (none: the largest). */
	int k = store_lq_shape(f), kind = store_lq_kind(k);
	struct store_arg a[5];
	size_t na = 0;

	if (store_lq_scheduled(k))
		a[na++] = (struct store_arg)STORE_TEXT(f->schedule);
	if (!store_lq_open(k)) {
		a[na++] = (struct store_arg)STORE_I64(f->since_ms);
		a[na++] = (struct store_arg)STORE_I64(f->until_ms);
	}
	if (kind == STORE_LQ_OUTCOME || kind == STORE_LQ_LOST)
		a[na++] = (struct store_arg)STORE_TEXT(f->outcome);
	a[na++] = (struct store_arg)STORE_I64(f->limit > 0 ? f->limit
							   : INT64_MAX);

	struct store_call c = {.q = (enum store_q)(STORE_Q_LEDGER_SHAPE0 + k),
			       .args = a, .n_args = na, .out = rows, .n = n};
	*rows = NULL;
	*n = 0;
	return ops->call(impl, &c, err);
}

int store_ledger_query(struct store *s, const struct ledger_filter *f,
		       struct ledger_row **rows, size_t *n, struct sc_err *err)
{
	static const struct ledger_filter all = {
		.since_ms = INT64_MIN, .until_ms = INT64_MAX};
	int rc = check_out(rows, "rows output", err);

	if (!rc)
		rc = check_out(n, "row count", err);
	if (rc)
		return rc;
	if (f && f->limit < 0)
		return sc_err_set(err, SC_EINVAL, "negative limit");
	return store_ledger_read(s->ops, s->impl, f ? f : &all, rows, n, err);
}

void store_ledger_rows_free(struct ledger_row *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		free(rows[i].error_msg);
		free(rows[i].details_json);
	}
	free(rows);
}

int store_ledger_lost(struct store *s, const struct ledger_filter *f,
		      struct ledger_row **rows, int64_t **recovered_ms,
		      size_t *n, struct sc_err *err)
{
	static const struct ledger_filter all = {
		.since_ms = INT64_MIN, .until_ms = INT64_MAX};
	int rc = check_out(rows, "rows output", err);

	if (!rc)
		rc = check_out(recovered_ms, "recovered output", err);
	if (!rc)
		rc = check_out(n, "row count", err);
	if (!rc && f && f->schedule)
		rc = check_name("schedule name", f->schedule, STORE_NAME_MAX,
				err);
	if (rc)
		return rc;
	*rows = NULL;
	*recovered_ms = NULL;
	*n = 0;
	f = f ? f : &all;

	/* Read as rows of both, then split as the caller wants them. */
	struct store_lost_row *v = NULL;
	size_t got = 0;
	rc = call_read(s, f->schedule ? STORE_Q_LEDGER_LOST_ONE
				      : STORE_Q_LEDGER_LOST,
		       ARGS(STORE_TEXT(f->schedule), STORE_I64(f->since_ms),
			    STORE_I64(f->until_ms)),
		       &v, &got, err);
	if (rc || got == 0)
		return rc;
	struct ledger_row *r = calloc(got, sizeof(*r));
	int64_t *rec = calloc(got, sizeof(*rec));
	if (!r || !rec) {
		store_rows_free(&store_lost_fields, v, got, sizeof(*v));
		free(r);
		free(rec);
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < got; i++) {
		r[i] = v[i].row; /* its copies move with it */
		rec[i] = v[i].recovered_ms;
	}
	free(v);
	*rows = r;
	*recovered_ms = rec;
	*n = got;
	return 0;
}

int store_sched_summaries(struct store *s, const char *schedule,
			  struct store_sched_summary **out, size_t *n,
			  struct sc_err *err)
{
	int rc = schedule ? check_name("schedule name", schedule,
				       STORE_NAME_MAX, err)
			  : 0;

	if (!rc)
		rc = check_out(out, "summaries output", err);
	if (!rc)
		rc = check_out(n, "summary count", err);
	if (rc)
		return rc;
	*out = NULL;
	*n = 0;
	return s->ops->sched_summaries(s->impl, schedule, out, n, err);
}

void store_sched_summaries_free(struct store_sched_summary *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].last.error_msg);
		free(v[i].last.details_json);
	}
	free(v);
}

int store_last_successes(struct store *s, struct store_last_ok **out,
			 size_t *n, struct sc_err *err)
{
	int rc = check_out(out, "last successes output", err);

	if (!rc)
		rc = check_out(n, "last success count", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_LAST_SUCCESSES, NULL, 0, out, n, err);
}

/* ---- alerts ---------------------------------------------------------- */

/* A ledger row handed to an alert operation: checked like an append. */
static int check_row(const struct ledger_row *row, struct sc_err *err)
{
	int rc;

	if (!row)
		return 0;
	rc = check_name("schedule name", row->schedule, STORE_NAME_MAX, err);
	if (!rc)
		rc = check_name("ledger outcome", row->outcome,
				sizeof(row->outcome), err);
	if (!rc && strnlen(row->error_class, sizeof(row->error_class)) >=
			   sizeof(row->error_class))
		rc = sc_err_set(err, SC_EINVAL, "ledger error class too long");
	return rc;
}

static int check_alert(const struct store_alert *a, struct sc_err *err)
{
	int rc;

	if (!a)
		return sc_err_set(err, SC_EINVAL, "alert is NULL");
	rc = check_name("schedule name", a->schedule, STORE_NAME_MAX, err);
	if (!rc)
		rc = check_name("alert reason", a->reason, sizeof(a->reason),
				err);
	if (!rc && (a->status < ALERT_OPEN || a->status > ALERT_CLOSED))
		rc = sc_err_set(err, SC_EINVAL, "alert status out of range");
	if (!rc && (strnlen(a->error_msg, sizeof(a->error_msg)) >=
			    sizeof(a->error_msg) ||
		    strnlen(a->note, sizeof(a->note)) >= sizeof(a->note)))
		rc = sc_err_set(err, SC_EINVAL,
				"alert text not terminated");
	return rc;
}

/* The alert as the backends write it: a last slot before the first, or
 * fewer than one slot, is read as a single slot (the fields a lost alert
 * need not fill in). */
static void alert_norm(const struct store_alert *a, struct store_alert *out)
{
	*out = *a;
	if (out->last_slot_ms < out->slot_ms)
		out->last_slot_ms = out->slot_ms;
	if (out->n_slots < 1)
		out->n_slots = 1;
}

/* store_alert_raise's steps (store.h: the insert, or the id of the
 * alert that holds the key; a new one closes the older open alerts of
 * the slot when store_alert_raise_rule says so; the job marked alerted)
 * in the caller's transaction. */
struct raise_step {
	struct store *s;
	const struct store_alert *a;
	bool created;
	int64_t id;
};

static int raise_in_tx(struct raise_step *r, struct sc_err *err)
{
	struct store *s = r->s;
	const struct store_alert *a = r->a;
	int64_t now = sc_clock_now_ms(s->clock);
	struct store_raise_rule rule;
	int rc;

	store_alert_raise_rule(a, now, &rule);
	/* schedule .. job_id, then now, note, closed_ms */
	const struct store_arg args[] = {
		{.kind = STORE_A_FIELDS,
		 .f = store_alert_fields.f + STORE_ALERT_RAISE_F0,
		 .nf = STORE_ALERT_RAISE_NF, .x = a},
		STORE_I64(now), STORE_TEXT(a->note), STORE_I64(rule.closed_ms)};
	struct store_call c = {.q = STORE_Q_ALERT_INSERT, .args = args,
			       .n_args = 4, .out = &r->id};

	rc = s->ops->call(s->impl, &c, err);
	r->created = !rc && c.changed;
	if (!rc && !r->created)
		rc = call_read(s, STORE_Q_ALERT_ID,
			       ARGS(STORE_TEXT(a->schedule),
				    STORE_I64(a->slot_ms), STORE_TEXT(a->reason),
				    STORE_I64(a->generation)),
			       &r->id, NULL, err);
	if (!rc && r->created && rule.supersede)
		rc = call_write(s, STORE_Q_ALERT_SUPERSEDE,
				ARGS(STORE_TEXT(a->schedule),
				     STORE_I64(a->slot_ms), STORE_I64(r->id),
				     STORE_I64(now), STORE_TEXT(a->reason)),
				NULL, err);
	if (!rc && a->job_id != 0)
		rc = call_write(s, STORE_Q_JOB_ALERTED,
				ARGS(STORE_I64(a->job_id)), NULL, err);
	return rc;
}

static int raise_body(void *ctx, struct sc_err *err)
{
	return raise_in_tx(ctx, err);
}

int store_alert_raise(struct store *s, const struct store_alert *a,
		      bool *created, int64_t *id, struct sc_err *err)
{
	struct store_alert n;
	struct raise_step r = {.s = s, .a = &n};
	int rc = check_alert(a, err);

	if (rc)
		return rc;
	alert_norm(a, &n);
	/* An alert is a loud record like a "lost" row. */
	rc = in_tx(s, STORE_COMMIT_ALERT_RAISE, raise_body, &r, err);
	if (!rc && created)
		*created = r.created;
	if (!rc && id)
		*id = r.id;
	return rc;
}

int store_alert_dead_unalerted(struct store *s, struct store_dead_job *out,
			       size_t max, size_t *n, struct sc_err *err)
{
	int rc = check_out(n, "count output", err);

	if (!rc && max > 0)
		rc = check_out(out, "dead job output", err);
	if (rc)
		return rc;
	*n = 0;
	if (max == 0)
		return 0;
	return read_into(s, STORE_Q_DEAD_UNALERTED,
			 ARGS(STORE_I64(limit_of(max))), out, max, n, err);
}

int store_alert_list(struct store *s, const struct alert_filter *f,
		     struct store_alert **out, size_t *n, struct sc_err *err)
{
	static const struct alert_filter all = {
		.slot_ms = INT64_MIN, .since_ms = INT64_MIN,
		.until_ms = INT64_MAX};
	int rc = check_out(out, "alerts output", err);

	if (!rc)
		rc = check_out(n, "alert count", err);
	if (rc)
		return rc;
	*out = NULL;
	*n = 0;
	if (f && f->limit < 0)
		return sc_err_set(err, SC_EINVAL, "negative limit");
	if (!f)
		f = &all;
	const struct store_arg null = {.kind = STORE_A_NULL};
	const struct store_arg slot = STORE_I64(f->slot_ms);
	const struct store_arg limit = STORE_I64(f->limit);
	return call_read(s, STORE_Q_ALERT_LIST,
			 ARGS(STORE_TEXT(f->schedule), STORE_BOOL(f->open_only),
			      STORE_BOOL(f->unstaged_only),
			      f->slot_ms != INT64_MIN ? slot : null,
			      STORE_I64(f->since_ms), STORE_I64(f->until_ms),
			      f->limit > 0 ? limit : null),
			 out, n, err);
}

/* store_alert_close's steps: the close (on PostgreSQL a row lock: a
 * second closer waits, then finds it closed); when it closed nothing,
 * whether the alert exists, and nothing written; else the `then` raise
 * and the ledger row. */
struct close_step {
	struct store *s;
	int64_t id;
	enum alert_status to;
	const char *note;
	const struct store_alert *then;
	const struct ledger_row *row;
	bool closed;
};

static int close_body(void *ctx, struct sc_err *err)
{
	struct close_step *c = ctx;
	struct store *s = c->s;
	int64_t n = 0;
	int rc = call_write(s, STORE_Q_ALERT_CLOSE,
			    ARGS(STORE_I64(c->id), STORE_I64(c->to),
				 STORE_I64(sc_clock_now_ms(s->clock)),
				 STORE_TEXT(c->note)),
			    &n, err);

	bool found;

	c->closed = n > 0;
	if (!rc && !c->closed) {
		rc = row_found(s, STORE_Q_ALERT_EXISTS, c->id, &found, err);
		return rc || found ? rc : store_missing_error("alert", c->id,
							      err);
	}
	if (!rc && c->then) {
		struct raise_step r = {.s = s, .a = c->then};
		rc = raise_in_tx(&r, err);
	}
	return rc ? rc : put_row(s, c->row, err);
}

int store_alert_close(struct store *s, int64_t id, enum alert_status to,
		      const char *note, const struct store_alert *then,
		      const struct ledger_row *row, bool *changed,
		      struct sc_err *err)
{
	struct store_alert n;
	bool dummy;
	int rc = 0;

	if (to != ALERT_ACKED && to != ALERT_HEALED)
		return sc_err_set(err, SC_EINVAL,
				  "an alert closes as ACKED or HEALED");
	if (note && strlen(note) >= sizeof(n.note))
		return sc_err_set(err, SC_EINVAL,
				  "note is too long (at most %zu bytes)",
				  sizeof(n.note) - 1);
	if (then)
		rc = check_alert(then, err);
	if (!rc)
		rc = check_row(row, err);
	if (rc)
		return rc;
	if (then)
		alert_norm(then, &n);
	struct close_step c = {.s = s, .id = id, .to = to,
			       .note = note ? note : "",
			       .then = then ? &n : NULL, .row = row};
	/* An ack, a recovery: records nothing would write again. */
	rc = in_tx(s, STORE_COMMIT_ALERT_CLOSE, close_body, &c, err);
	*(changed ? changed : &dummy) = !rc && c.closed;
	return rc;
}

int store_alert_realert(struct store *s, int64_t id, int rounds_seen,
			bool *won, struct sc_err *err)
{
	bool dummy;

	if (rounds_seen < 1)
		return sc_err_set(err, SC_EINVAL,
				  "rounds_seen must be at least 1");
	int64_t n = 0;
	int rc = call_write(s, STORE_Q_ALERT_REALERT,
			    ARGS(STORE_I64(id), STORE_I64(rounds_seen),
				 STORE_I64(sc_clock_now_ms(s->clock))),
			    &n, err);

	if (!rc)
		*(won ? won : &dummy) = n > 0;
	return rc;
}

/* store_alert_stage's steps: the alert first, so a missing one is
 * SC_ENOENT before any send row could point at it; then a row per
 * target, every row of the round or none. */
struct stage_step {
	struct store *s;
	int64_t id;
	int round;
	const char *const *targets;
	size_t n;
	const char *body;
};

static int stage_body(void *ctx, struct sc_err *err)
{
	struct stage_step *st = ctx;
	struct store *s = st->s;
	int64_t n = 0;
	size_t w;
	int rc = call_write(s, STORE_Q_ALERT_STAGED,
			    ARGS(STORE_I64(st->id), STORE_I64(st->round)), &n,
			    err);

	if (!rc && n == 0)
		rc = store_missing_error("alert", st->id, err);
	if (!rc && st->n > 0)
		rc = call_many(s, STORE_Q_SEND_INSERT, st->targets, st->n,
			       ARGS(STORE_I64(st->id), STORE_I64(st->round),
				    STORE_I64(sc_clock_now_ms(s->clock)),
				    STORE_TEXT(st->body)),
			       STORE_COMMIT_ALERT_STAGE, &w, err);
	return rc;
}

int store_alert_stage(struct store *s, int64_t id, int round,
		      const char *const *targets, size_t n, const char *body,
		      struct sc_err *err)
{
	int rc = 0;

	if (round < 0)
		return sc_err_set(err, SC_EINVAL, "negative alert round");
	if (n > 0) {
		rc = check_out(targets, "target list", err);
		if (!rc)
			rc = check_out(body, "message body", err);
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = check_name("target name", targets[i], STORE_NAME_MAX, err);
	if (rc)
		return rc;
	struct stage_step st = {.s = s, .id = id, .round = round,
				.targets = targets, .n = n,
				.body = body ? body : ""};
	return in_tx(s, STORE_COMMIT_ALERT_STAGE, stage_body, &st, err);
}

/* The alert send claim order (store.h): oldest (lowest id) first. */
static int cmp_send_id(const void *x, const void *y)
{
	const struct store_alert_send *a = x, *b = y;

	return (a->id > b->id) - (a->id < b->id);
}

/*
 * store_alert_send_claim_of's steps: the due rows read (oldest first),
 * then each taken: SENDING under a new token and lease. SQLite reads
 * them under the write lock of its transaction; PostgreSQL locks them
 * with SKIP LOCKED until the commit: either way another claimer never
 * gets one of them. SENDING is durable, as the outbox's is: lost to a
 * power cut, a copy that may have arrived would be sent again as a
 * first try.
 */
struct claim_step {
	struct store *s;
	int64_t alert_id, lease_ms;
	struct store_alert_send *out;
	size_t max, n;
};

static int claim_body(void *ctx, struct sc_err *err)
{
	struct claim_step *c = ctx;
	struct store *s = c->s;
	int64_t now = sc_clock_now_ms(s->clock);
	struct store_alert_send *due = NULL;
	size_t got = 0;
	int rc = call_read(s, STORE_Q_SEND_DUE,
			   ARGS(STORE_I64(now), STORE_I64(limit_of(c->max)),
				STORE_I64(c->alert_id)),
			   &due, &got, err);

	for (size_t i = 0; !rc && i < got && c->n < c->max; i++) {
		const struct store_arg a[] = {STORE_I64(due[i].id),
					      STORE_I64(now + c->lease_ms)};
		struct store_call t = {.q = STORE_Q_SEND_TAKE, .args = a,
				       .n_args = 2, .out = &due[i]};
		rc = s->ops->call(s->impl, &t, err);
		if (!rc && !t.changed)
			rc = sc_err_set(err, SC_ENOENT,
					"alert send claim: alert send %" PRId64
					" vanished", due[i].id);
		if (!rc) {
			c->out[c->n++] = due[i];
			due[i].body = NULL; /* moved */
		}
	}
	store_rows_free(&store_send_fields, due, got, sizeof(*due));
	return rc;
}

int store_alert_send_claim(struct store *s, int64_t lease_ms,
			   struct store_alert_send *out, size_t max,
			   size_t *n, struct sc_err *err)
{
	return store_alert_send_claim_of(s, 0, lease_ms, out, max, n, err);
}

int store_alert_send_claim_of(struct store *s, int64_t alert_id,
			      int64_t lease_ms, struct store_alert_send *out,
			      size_t max, size_t *n, struct sc_err *err)
{
	int rc = check_out(n, "count output", err);

	if (!rc && max > 0)
		rc = check_out(out, "send output", err);
	if (rc)
		return rc;
	*n = 0;
	if (lease_ms <= 0)
		return sc_err_set(err, SC_EINVAL, "lease must be positive");
	if (alert_id < 0)
		return sc_err_set(err, SC_EINVAL, "alert id must not be "
				  "negative");
	if (max == 0)
		return 0;
	struct claim_step c = {.s = s, .alert_id = alert_id,
			       .lease_ms = lease_ms, .out = out, .max = max};
	rc = in_tx(s, STORE_COMMIT_ALERT_CLAIM, claim_body, &c, err);
	if (rc) {
		for (size_t i = 0; i < c.n; i++)
			store_alert_send_dispose(&out[i]);
		return rc;
	}
	*n = c.n;
	/* As for jobs: the order store.h promises is made here, once. */
	if (*n > 1)
		qsort(out, *n, sizeof(*out), cmp_send_id);
	return 0;
}

/* store_alert_send_finish's steps: the send's end under its lease
 * token, then its ledger row; a refused end writes nothing. */
struct finish_step {
	struct store *s;
	int64_t id, token;
	enum send_state state;
	int64_t next_try_ms;
	const char *error;
	const struct ledger_row *row;
};

static int send_finish_body(void *ctx, struct sc_err *err)
{
	struct finish_step *f = ctx;
	struct store *s = f->s;
	int64_t n = 0;
	int rc = call_write(s, STORE_Q_SEND_FINISH,
			    ARGS(STORE_I64(f->id), STORE_I64(f->token),
				 STORE_I64(f->state), STORE_I64(f->next_try_ms),
				 STORE_TEXT(f->error),
				 STORE_I64(sc_clock_now_ms(s->clock))),
			    &n, err);

	bool found;

	if (!rc && n == 0) {
		rc = row_found(s, STORE_Q_SEND_EXISTS, f->id, &found, err);
		return rc ? rc
			  : store_lease_error("alert send", "finish", f->id,
					      f->token, found, err);
	}
	return rc ? rc : put_row(s, f->row, err);
}

int store_alert_send_finish(struct store *s, int64_t send_id,
			    int64_t lease_token, enum send_state state,
			    int64_t next_try_ms, const char *last_error,
			    const struct ledger_row *row, struct sc_err *err)
{
	int rc;

	if (state != SEND_SENT && state != SEND_FAILED &&
	    state != SEND_UNKNOWN && state != SEND_ABANDONED)
		return sc_err_set(err, SC_EINVAL,
				  "a send ends SENT, FAILED, UNKNOWN or "
				  "ABANDONED");
	rc = check_row(row, err);
	if (rc)
		return rc;
	struct finish_step f = {.s = s, .id = send_id, .token = lease_token,
				.state = state, .next_try_ms = next_try_ms,
				.error = last_error ? last_error : "",
				.row = row};
	/* SENT is the alert's send guard; ABANDONED its final word. */
	return in_tx(s, store_commit_of_alert_send(state), send_finish_body,
		     &f, err);
}

int store_alert_sends(struct store *s, int64_t alert_id,
		      struct store_alert_send **out, size_t *n,
		      struct sc_err *err)
{
	int rc = check_out(out, "sends output", err);

	if (!rc)
		rc = check_out(n, "send count", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_ALERT_SENDS, ARGS(STORE_I64(alert_id)), out,
			 n, err);
}

int store_sla_scan(struct store *s, int64_t ready_before_ms,
		   int64_t started_before_ms, struct store_sla *x,
		   struct sc_err *err)
{
	int rc = check_out(x, "sla scan output", err);

	if (rc)
		return rc;
	x->n_late = x->n_running = x->n_last = 0;
	if ((x->max_late && !x->late) || (x->max_running && !x->running) ||
	    (x->max_last && !x->last))
		return sc_err_set(err, SC_EINVAL, "sla scan array is NULL");
	/* The parts in this order: late, running, then the last rows;
	 * a part whose max is 0 is not read. */
	if (x->max_late)
		rc = read_into(s, STORE_Q_SLA_LATE,
			       ARGS(STORE_I64(ready_before_ms),
				    STORE_I64(limit_of(x->max_late))),
			       x->late, x->max_late, &x->n_late, err);
	if (!rc && x->max_running)
		rc = read_into(s, STORE_Q_SLA_RUNNING,
			       ARGS(STORE_I64(started_before_ms),
				    STORE_I64(limit_of(x->max_running))),
			       x->running, x->max_running, &x->n_running,
			       err);
	if (!rc && x->max_last)
		rc = read_into(s, STORE_Q_SLA_LAST,
			       ARGS(STORE_I64(limit_of(x->max_last))), x->last,
			       x->max_last, &x->n_last, err);
	return rc;
}

void store_alert_send_dispose(struct store_alert_send *a)
{
	if (!a)
		return;
	free(a->body);
	a->body = NULL;
}

void store_alert_sends_free(struct store_alert_send *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i].body);
	free(v);
}

/* ---- outbox, guards, markers ----------------------------------------- */

static int check_slot_target(const char *schedule, const char *target,
			     struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	return rc ? rc : check_name("target name", target, STORE_NAME_MAX, err);
}

int store_outbox_put(struct store *s, const char *schedule, int64_t slot_ms,
		     const char *target, const char *body, bool *created,
		     struct sc_err *err)
{
	int rc = check_slot_target(schedule, target, err);

	if (!rc)
		rc = check_out(body, "message body", err);
	if (rc)
		return rc;
	int64_t n = 0;
	rc = call_write(s, STORE_Q_OUTBOX_PUT,
			ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
			     STORE_TEXT(target), STORE_TEXT(body),
			     STORE_I64(sc_clock_now_ms(s->clock))),
			&n, err);
	if (!rc && created)
		*created = n > 0;
	return rc;
}

/*
 * The outbox row of (schedule, slot_ms, target) into *out (untouched on
 * failure): SC_ENOENT when there is none, SC_ECORRUPT when a row that
 * must still hold its message has none.
 */
static int outbox_read(struct store *s, const char *schedule,
		       int64_t slot_ms, const char *target,
		       struct outbox_entry *out, struct sc_err *err)
{
	struct outbox_entry e = {0};
	int rc = call_read(s, STORE_Q_OUTBOX_GET,
			   ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
				STORE_TEXT(target)),
			   &e, NULL, err);

	/* A guard keeps its row when prune takes its body (store.h). */
	if (!rc && !e.body && !store_body_may_be_pruned(e.state))
		rc = sc_err_set(err, SC_ECORRUPT, "outbox row of target %s "
				"has no message body in %s", target,
				s->where);
	if (rc) {
		store_outbox_entry_dispose(&e);
		return rc;
	}
	*out = e;
	return 0;
}

int store_outbox_get(struct store *s, const char *schedule, int64_t slot_ms,
		     const char *target, struct outbox_entry *out,
		     struct sc_err *err)
{
	int rc = check_slot_target(schedule, target, err);

	if (!rc)
		rc = check_out(out, "outbox output", err);
	return rc ? rc : outbox_read(s, schedule, slot_ms, target, out, err);
}

void store_outbox_entry_dispose(struct outbox_entry *e)
{
	if (!e)
		return;
	free(e->body);
	e->body = NULL;
}

/* A send's state change that changed no row though the fence held: the
 * row is gone (the read says SC_ENOENT) or its state refuses the change,
 * in refuse's words (store_guard_error, store_release_refused). */
static int outbox_refused(struct store *s, const char *schedule,
			  int64_t slot_ms, const char *target,
			  int (*refuse)(const char *, const char *,
					enum send_state, struct sc_err *),
			  struct sc_err *err)
{
	struct outbox_entry e = {0};
	int rc = outbox_read(s, schedule, slot_ms, target, &e, err);

	if (rc)
		return rc;
	store_outbox_entry_dispose(&e);
	return refuse(schedule, target, e.state, err);
}

/* A send's state change by statement q (OUTBOX_SET, or OUTBOX_RELEASE:
 * only from UNKNOWN); *n the rows changed. SENT is the send guard, and
 * SENDING is what makes a crash after the request left a declared
 * duplicate instead of a silent one: the state's commit class makes both
 * durable before this returns (and the request leaves). */
static int outbox_write(struct store *s, enum store_q q,
			const char *schedule, int64_t slot_ms,
			const char *target, enum send_state state, int64_t *n,
			struct sc_err *err)
{
	return call_write_as(s, q, store_commit_of_send(state),
			     ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
				  STORE_TEXT(target), STORE_I64(state),
				  STORE_I64(sc_clock_now_ms(s->clock))),
			     n, err);
}

int store_outbox_set_state(struct store *s, const char *schedule, int64_t slot_ms,
			   const char *target, enum send_state state,
			   struct sc_err *err)
{
	int64_t n = 0;
	int rc = check_slot_target(schedule, target, err);

	if (rc)
		return rc;
	if (state < SEND_PENDING || state > SEND_UNKNOWN)
		return sc_err_set(err, SC_EINVAL,
				  "outbox state must be PENDING..UNKNOWN");
	rc = outbox_write(s, STORE_Q_OUTBOX_SET, schedule, slot_ms, target,
			  state, &n, err);
	/* Nothing changed: a send guard, which never reopens, or no row. */
	return rc || n > 0 ? rc
			   : outbox_refused(s, schedule, slot_ms, target,
					    store_guard_error, err);
}

int store_outbox_release(struct store *s, const char *schedule,
			 int64_t slot_ms, const char *target,
			 enum send_state to, struct sc_err *err)
{
	int64_t n = 0;
	int rc = check_slot_target(schedule, target, err);

	if (rc)
		return rc;
	if (to != SEND_SENT && to != SEND_FAILED)
		return sc_err_set(err, SC_EINVAL, "a release makes a held send "
				  "SENT or FAILED");
	rc = outbox_write(s, STORE_Q_OUTBOX_RELEASE, schedule, slot_ms, target,
			  to, &n, err);
	/* Nothing changed: no longer held, or no row. */
	return rc || n > 0 ? rc
			   : outbox_refused(s, schedule, slot_ms, target,
					    store_release_refused, err);
}

int store_outbox_mark_unknown(struct store *s, const char *schedule,
			      int64_t slot_ms, int *n, struct sc_err *err)
{
	int64_t changed = 0;
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = call_write(s, STORE_Q_OUTBOX_UNKNOWN,
				ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
				     STORE_I64(sc_clock_now_ms(s->clock))),
				&changed, err);
	if (n)
		*n = (int)changed;
	return rc;
}

int store_slot_mark(struct store *s, const char *schedule, int64_t slot_ms,
		    struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	return rc ? rc
		  : call_write(s, STORE_Q_SLOT_MARK,
			       ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
				    STORE_I64(sc_clock_now_ms(s->clock))),
			       NULL, err);
}

/* Whether (schedule, slot_ms) has its marker (a MAYBE read: the row
 * is the answer): *marked, set on success. */
static int marker_read(struct store *s, const char *schedule,
		       int64_t slot_ms, bool *marked, struct sc_err *err)
{
	const struct store_arg a[] = {STORE_TEXT(schedule),
				      STORE_I64(slot_ms)};
	int64_t one = 0;
	struct store_call c = {.q = STORE_Q_SLOT_IS_MARKED, .args = a,
			       .n_args = 2, .out = &one};
	int rc = s->ops->call(s->impl, &c, err);

	if (!rc)
		*marked = c.changed > 0;
	return rc;
}

int store_slot_is_marked(struct store *s, const char *schedule, int64_t slot_ms,
			 bool *marked, struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(marked, "marked output", err);
	return rc ? rc : marker_read(s, schedule, slot_ms, marked, err);
}

int store_slot_look(struct store *s, const char *schedule, int64_t slot_ms,
		    const char *const *targets, size_t n_targets, bool *marked,
		    int *staged, struct outbox_entry *out, struct sc_err *err)
{
	return store_slot_look_others(s, schedule, slot_ms, targets,
				      n_targets, marked, staged, out, NULL,
				      err);
}

/* Is t one of v[0..n)? O(n): a slot has a few targets. */
static bool name_in(const char *t, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t, v[i]) == 0)
			return true;
	return false;
}

int store_slot_look_others(struct store *s, const char *schedule,
			   int64_t slot_ms, const char *const *targets,
			   size_t n_targets, bool *marked, int *staged,
			   struct outbox_entry *out, size_t *n_others,
			   struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(marked, "marked output", err);
	if (!rc)
		rc = check_out(staged, "staged output", err);
	if (!rc)
		rc = check_out(out, "outbox output", err);
	if (rc)
		return rc;
	if (n_targets && !targets)
		return sc_err_set(err, SC_EINVAL, "target list is NULL");
	for (size_t i = 0; !rc && i < n_targets; i++)
		rc = check_name("target name", targets[i], STORE_NAME_MAX, err);
	if (rc)
		return rc;
	*marked = false;
	*staged = -1;
	if (n_others)
		*n_others = 0;
	memset(out, 0, sizeof(*out));
	if (s->ops->slot_look)
		return s->ops->slot_look(s->impl, schedule, slot_ms, targets,
					 n_targets, marked, staged, out,
					 n_others, err);
	rc = marker_read(s, schedule, slot_ms, marked, err);
	if (rc || *marked)
		return rc;
	if (!n_others) {
		for (size_t i = 0; !rc && i < n_targets; i++) {
			struct sc_err lerr = {0};

			rc = outbox_read(s, schedule, slot_ms, targets[i],
					 out, &lerr);
			if (rc == SC_ENOENT) {
				rc = 0; /* not staged for this one: next */
				continue;
			}
			if (rc)
				err_copy(err, &lerr);
			else
				*staged = (int)i;
			break;
		}
		return rc;
	}
	/* The slot's rows (a read of the slot's part of the primary key):
	 * which targets have one, and which rows are of targets removed
	 * since they were staged; then the first staged target's message.
	 * A fresh slot costs this one read instead of one per target. */
	struct store_outbox_row *v = NULL;
	size_t n = 0;
	rc = call_read(s, STORE_Q_OUTBOX_LIST,
		       ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms)), &v, &n,
		       err);
	for (size_t i = 0; !rc && i < n; i++)
		*n_others += !name_in(v[i].target, targets, n_targets);
	for (size_t i = 0; !rc && *staged < 0 && i < n_targets; i++) {
		for (size_t k = 0; k < n; k++)
			if (strcmp(v[k].target, targets[i]) == 0) {
				*staged = (int)i;
				break;
			}
	}
	free(v);
	if (!rc && *staged >= 0) {
		rc = outbox_read(s, schedule, slot_ms, targets[*staged], out,
				 err);
		if (rc)
			*staged = -1;
	}
	return rc;
}

int store_outbox_list(struct store *s, const char *schedule, int64_t slot_ms,
		      struct store_outbox_row **out, size_t *n,
		      struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(out, "outbox rows output", err);
	if (!rc)
		rc = check_out(n, "outbox row count", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_OUTBOX_LIST,
			 ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms)), out, n,
			 err);
}

int store_outbox_abandon(struct store *s, const char *schedule,
			 int64_t slot_ms, const char *target,
			 enum send_state from, const struct ledger_row *row,
			 bool *closed, struct sc_err *err)
{
	bool dummy;
	int rc = check_slot_target(schedule, target, err);

	if (!closed)
		closed = &dummy;
	*closed = false;
	if (rc)
		return rc;
	if (!store_may_leave(STORE_T_OUTBOX_ABANDON, (int)from))
		return sc_err_set(err, SC_EINVAL, "only an unsent outbox row "
				  "(PENDING, SENDING, FAILED, UNKNOWN) is "
				  "abandoned");
	if (!row)
		return sc_err_set(err, SC_EINVAL, "ledger row is NULL");
	rc = check_row(row, err);
	if (rc)
		return rc;
	int64_t n = 0;
	rc = call_write(s, STORE_Q_OUTBOX_ABANDON,
			ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
			     STORE_TEXT(target), STORE_I64(from),
			     STORE_I64(sc_clock_now_ms(s->clock)),
			     FIELDS(&store_ledger_put_fields,
				    store_ledger_put_fields.n, row)),
			&n, err);
	*closed = !rc && n > 0;
	return rc;
}

/* ---- scheduler state, token cache ------------------------------------ */

int store_sched_last_get(struct store *s, const char *schedule, int64_t *slot_ms,
			 struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(slot_ms, "slot output", err);
	return rc ? rc
		  : call_read(s, STORE_Q_SCHED_LAST_GET,
			      ARGS(STORE_TEXT(schedule)), slot_ms, NULL, err);
}

int store_sched_last_set(struct store *s, const char *schedule, int64_t slot_ms,
			 struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	return rc ? rc
		  : call_write(s, STORE_Q_SCHED_LAST_SET,
			       ARGS(STORE_TEXT(schedule), STORE_I64(slot_ms),
				    STORE_I64(sc_clock_now_ms(s->clock))),
			       NULL, err);
}

int store_sched_last_all(struct store *s, struct store_sched_last **out,
			 size_t *n, struct sc_err *err)
{
	int rc = check_out(out, "output", err);

	if (!rc)
		rc = check_out(n, "count output", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_SCHED_LAST_ALL, NULL, 0, out, n, err);
}

int store_sched_last_set_many(struct store *s,
			      const struct store_sched_last *v, size_t n,
			      struct sc_err *err)
{
	if (n == 0)
		return 0;
	int rc = check_out(v, "states", err);

	for (size_t i = 0; !rc && i < n; i++)
		rc = check_name("schedule name", v[i].schedule, STORE_NAME_MAX,
				err);
	size_t written;
	return rc ? rc
		  : call_many(s, STORE_Q_SCHED_LAST_SET_MANY, v, n,
			      ARGS(STORE_I64(sc_clock_now_ms(s->clock))), 0,
			      &written, err);
}

int store_pause_set(struct store *s, const struct store_pause *p,
		    struct sc_err *err)
{
	int rc = check_out(p, "pause", err);

	if (!rc)
		rc = check_name("schedule name", p->schedule, STORE_NAME_MAX,
				err);
	if (rc)
		return rc;
	if (p->until_ms <= p->from_ms)
		return sc_err_set(err, SC_EINVAL, "pause of %s: it must end "
				  "after it starts", p->schedule);
	if (p->until_ms - p->from_ms > STORE_PAUSE_MAX_MS)
		return sc_err_set(err, SC_EINVAL, "pause of %s: at most 30 "
				  "days", p->schedule);
	/* every field but resumed: a pause set is never resumed */
	return call_write(s, STORE_Q_PAUSE_SET,
			  ARGS(FIELDS(&store_pause_fields,
				      store_pause_fields.n - 1, p)),
			  NULL, err);
}

int store_pause_end(struct store *s, const char *schedule, int64_t at_ms,
		    bool *ended, struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(ended, "output", err);
	if (rc)
		return rc;
	int64_t n = 0;
	rc = call_write(s, STORE_Q_PAUSE_END,
			ARGS(STORE_TEXT(schedule), STORE_I64(at_ms)), &n, err);
	*ended = n > 0;
	return rc;
}

int store_pause_get(struct store *s, const char *schedule,
		    struct store_pause *out, struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(out, "output", err);
	return rc ? rc
		  : call_read(s, STORE_Q_PAUSE_GET, ARGS(STORE_TEXT(schedule)),
			      out, NULL, err);
}

int store_pause_all(struct store *s, struct store_pause **out, size_t *n,
		    struct sc_err *err)
{
	int rc = check_out(out, "output", err);

	if (!rc)
		rc = check_out(n, "count output", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_PAUSE_ALL, NULL, 0, out, n, err);
}

int store_node_beat(struct store *s, const struct store_node *n,
		    struct sc_err *err)
{
	int rc = check_out((void *)n, "node", err);

	if (!rc && (!n->id[0] ||
		    !memchr(n->id, '\0', sizeof(n->id)) ||
		    !memchr(n->host, '\0', sizeof(n->host)) ||
		    !memchr(n->version, '\0', sizeof(n->version)) ||
		    !memchr(n->config_digest, '\0', sizeof(n->config_digest))))
		rc = sc_err_set(err, SC_EINVAL, "node record: an empty id or "
				"a field that does not fit");
	if (rc)
		return rc;
	struct store_node m = *n;
	m.seen_ms = sc_clock_now_ms(s->clock);
	return call_write(s, STORE_Q_NODE_BEAT,
			  ARGS(FIELDS(&store_node_fields, store_node_fields.n,
				      &m)),
			  NULL, err);
}

int store_nodes(struct store *s, struct store_node **out, size_t *n,
		struct sc_err *err)
{
	int rc = check_out(out, "output", err);

	if (!rc)
		rc = check_out(n, "count output", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_NODES, NULL, 0, out, n, err);
}

int store_node_leave(struct store *s, const char *id, struct sc_err *err)
{
	if (!id || !id[0])
		return sc_err_set(err, SC_EINVAL, "node id is empty");
	return call_write(s, STORE_Q_NODE_LEAVE, ARGS(STORE_TEXT(id)), NULL,
			  err);
}

int store_token_get(struct store *s, const char *provider, char **token,
		    int64_t *expires_ms, struct sc_err *err)
{
	int rc = check_name("provider name", provider, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(token, "token output", err);
	if (!rc)
		rc = check_out(expires_ms, "expiry output", err);
	if (rc)
		return rc;
	struct store_token t;
	rc = call_read(s, STORE_Q_TOKEN_GET, ARGS(STORE_TEXT(provider)), &t,
		       NULL, err);
	if (!rc && !t.token)
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
	if (rc)
		return rc;
	*token = t.token;
	*expires_ms = t.expires_ms;
	return 0;
}

int store_token_put(struct store *s, const char *provider, const char *token,
		    int64_t expires_ms, struct sc_err *err)
{
	int rc = check_name("provider name", provider, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(token, "token", err);
	return rc ? rc
		  : call_write(s, STORE_Q_TOKEN_PUT,
			       ARGS(STORE_TEXT(provider), STORE_TEXT(token),
				    STORE_I64(expires_ms),
				    STORE_I64(sc_clock_now_ms(s->clock))),
			       NULL, err);
}

int store_token_drop(struct store *s, const char *provider, struct sc_err *err)
{
	int rc = check_name("provider name", provider, STORE_NAME_MAX, err);

	return rc ? rc
		  : call_write(s, STORE_Q_TOKEN_DROP,
			       ARGS(STORE_TEXT(provider)), NULL, err);
}

/* ---- the crons in force (issue 43) ------------------------------------- */

int store_cron_note_many(struct store *s, const struct store_cron_note *v,
			 size_t n, size_t *n_written, struct sc_err *err)
{
	size_t dummy;
	int rc = 0;

	if (!n_written)
		n_written = &dummy;
	*n_written = 0;
	if (n == 0)
		return 0;
	if (!v)
		return sc_err_set(err, SC_EINVAL, "cron notes are NULL");
	for (size_t i = 0; i < n && !rc; i++) {
		rc = check_name("schedule name", v[i].schedule, STORE_NAME_MAX,
				err);
		if (!rc)
			rc = check_name("cron expression", v[i].cron,
					STORE_CRON_MAX, err);
		if (!rc)
			rc = check_name("time zone name", v[i].tz, STORE_TZ_MAX,
					err);
	}
	return rc ? rc
		  : call_many(s, STORE_Q_CRON_NOTE, v, n,
			      ARGS(STORE_I64(sc_clock_now_ms(s->clock))), 0,
			      n_written, err);
}

int store_cron_history(struct store *s, const char *schedule,
		       struct store_cron **out, size_t *n, struct sc_err *err)
{
	int rc = check_name("schedule name", schedule, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_out(out, "cron history output", err);
	if (!rc)
		rc = check_out(n, "cron history count", err);
	if (rc)
		return rc;
	return call_read(s, STORE_Q_CRON_HISTORY, ARGS(STORE_TEXT(schedule)),
			 out, n, err);
}

/* ---- leases, retention ------------------------------------------------- */

int store_lease_take(struct store *s, const char *name, const char *owner,
		     int64_t ttl_ms, bool *won, struct sc_err *err)
{
	int rc = check_name("lease name", name, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_name("lease owner", owner, STORE_NAME_MAX, err);
	if (!rc)
		rc = check_out(won, "lease output", err);
	if (!rc && ttl_ms < 1)
		rc = sc_err_set(err, SC_EINVAL, "lease ttl must be positive");
	if (rc)
		return rc;
	int64_t n = 0;
	rc = call_write(s, STORE_Q_LEASE_TAKE,
			ARGS(STORE_TEXT(name), STORE_TEXT(owner),
			     STORE_I64(sc_clock_now_ms(s->clock)),
			     STORE_I64(ttl_ms)),
			&n, err);
	*won = n == 1;
	return rc;
}

int store_lease_drop(struct store *s, const char *name, const char *owner,
		     struct sc_err *err)
{
	int rc = check_name("lease name", name, STORE_NAME_MAX, err);

	if (!rc)
		rc = check_name("lease owner", owner, STORE_NAME_MAX, err);
	return rc ? rc
		  : call_write(s, STORE_Q_LEASE_DROP,
			       ARGS(STORE_TEXT(name), STORE_TEXT(owner)), NULL,
			       err);
}

int store_prune_batch(struct store *s, const struct store_prune_opts *o,
		      int max_rows, struct store_prune_result *res,
		      bool *more, struct sc_err *err)
{
	int rc = check_out(o, "prune options", err);

	if (!rc)
		rc = check_out(res, "prune result", err);
	if (!rc)
		rc = check_out(more, "prune output", err);
	if (!rc && max_rows < 1)
		rc = sc_err_set(err, SC_EINVAL, "prune batch size must be "
				"positive");
	return rc ? rc : store_prune_next(s->ops, s->impl, o, max_rows, res,
					  more, err);
}

int store_prune_size(struct store *s, int64_t *used_bytes,
		     int64_t *file_bytes, const char **how,
		     struct sc_err *err)
{
	int rc = check_out(used_bytes, "size output", err);

	if (!rc)
		rc = check_out(file_bytes, "size output", err);
	if (!rc)
		rc = check_out(how, "size output", err);
	return rc ? rc : s->ops->prune_size(s->impl, used_bytes, file_bytes,
					     how, err);
}

/* ---- waiting for work ------------------------------------------------ */

int store_wait(struct store *s, int64_t timeout_ms, bool *changed,
	       struct sc_err *err)
{
	bool dummy;

	if (!changed)
		changed = &dummy;
	*changed = true;
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (s->ops->wait)
		return s->ops->wait(s->impl, timeout_ms, changed, err);
	/* No wait operation: a plain sleep, so a caller's loop around
	 * store_wait paces itself like the others. */
	struct timespec ts = {(time_t)(timeout_ms / 1000),
			      (long)(timeout_ms % 1000) * 1000000L};
	(void)nanosleep(&ts, NULL);
	return 0;
}

const char *store_url_for_log(const char *url, char *out, size_t n)
{
	if (n == 0)
		return out;
	if (!url) {
		snprintf(out, n, "%s", "");
		return out;
	}
	if (url_is_pg(url))
		return url_store_for_log(url, out, n);
	/* A sqlite URL or path holds no secret: as written. */
	snprintf(out, n, "%s", url);
	return out;
}
