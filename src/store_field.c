/*
 * store_field.c - how each struct the store reads and writes maps to the
 * columns of a row (store.h, "rows as fields"), written once for both
 * backends: store_sqlite.c and store_pg.c each have one reader and one
 * binder that follow these tables, and no reader or binder of their own
 * per struct.
 *
 * store_fields_read and store_fields_bind map each kind to what a
 * backend can do (read a column as an integer, a text, a copy, a boolean,
 * or see that it is NULL; set a parameter likewise), so the backends
 * hold no switch over the kinds.
 *
 * Invariants:
 *   - A table lists its struct's members in the order of the columns
 *     the backends select (STORE_JOB_COLS, STORE_ALERT_COLS, ...): field
 *     i is column c0 + i. Changing a column list changes its table here.
 *   - Each entry's size is its member's; F() refuses at compile time a
 *     member whose size does not fit its kind (an enum wider than 4
 *     bytes, an int64 read as I32).
 *   - Constant data: no handle, no I/O; safe from any thread.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "store.h"

#define MSIZE(T, m) sizeof(((T *)0)->m)
/* 0, or a compile error when ok is false. */
#define CHECK(ok) (0 * sizeof(char[(ok) ? 1 : -1]))
/* Whether a member of size s can hold kind k. */
#define FITS(k, s)                                             \
	((k) == STORE_F_TEXT           ? (s) > 1               \
		 : (k) == STORE_F_DUP  ? (s) == sizeof(char *) \
		 : (k) == STORE_F_BOOL ? (s) == sizeof(bool)   \
		 : (k) == STORE_F_I32  ? (s) == 4              \
				       : (s) == 8)
/* The size of member m of T, checked against kind k. */
#define SIZE(k, T, m) (uint16_t)(MSIZE(T, m) + CHECK(FITS(k, MSIZE(T, m))))
#define F(k, T, m)                                     \
	{                                              \
		STORE_F_##k, (uint16_t)offsetof(T, m), \
			SIZE(STORE_F_##k, T, m), 0     \
	}
/* An OPT member m of T and its has-flag h. */
#define OPT(T, m, h)                                                      \
	{                                                                 \
		STORE_F_OPT, (uint16_t)offsetof(T, m),                    \
			SIZE(STORE_F_OPT, T, m), (uint16_t)offsetof(T, h) \
	}
#define TABLE(name, v) \
	const struct store_fields name = {v, sizeof(v) / sizeof((v)[0])}

#define J struct store_job
static const struct store_field f_job[] = {
	F(I64, J, id),
	F(TEXT, J, schedule),
	F(I64, J, slot_ms),
	F(I32, J, state),
	F(I32, J, attempts),
	F(I32, J, n_stalls),
	F(I32, J, policy.attempts),
	F(I32, J, policy.backoff),
	F(I64, J, policy.delay_ms),
	F(I64, J, run_at_ms),
	F(I64, J, lease_token),
	F(TEXT, J, lease_owner),
	F(I64, J, lease_expires_ms),
	F(I64, J, started_ms),
	F(I64, J, created_ms),
	F(BOOL, J, manual),
};
TABLE(store_job_fields, f_job);
#undef J

#define R struct sc_retry_policy
static const struct store_field f_policy[] = {
	F(I32, R, attempts),
	F(I32, R, backoff),
	F(I64, R, delay_ms),
};
TABLE(store_policy_fields, f_policy);
#undef R

#define A struct store_alert
static const struct store_field f_alert[] = {
	F(I64, A, id),
	F(TEXT, A, schedule),
	F(I64, A, slot_ms),
	F(I64, A, last_slot_ms),
	F(I64, A, n_slots),
	F(TEXT, A, reason),
	F(I64, A, generation),
	F(I32, A, status),
	F(I32, A, attempts),
	F(TEXT, A, error_msg),
	F(I64, A, job_id),
	F(I32, A, rounds),
	F(I32, A, staged_rounds),
	F(I64, A, created_ms),
	F(I64, A, round_ms),
	F(I64, A, closed_ms),
	F(TEXT, A, note),
};
TABLE(store_alert_fields, f_alert);
#undef A

#define P struct store_pause
static const struct store_field f_pause[] = {
	F(TEXT, P, schedule), F(I64, P, from_ms), F(I64, P, until_ms),
	F(TEXT, P, by),       F(TEXT, P, note),   F(BOOL, P, resumed),
};
TABLE(store_pause_fields, f_pause);
#undef P

/* The fields of a struct ledger_row that is member r (with its dot, or
 * empty: the struct itself) of L. */
#define LEDGER_F(L, r)                                                 \
	F(I64, L, r id), F(TEXT, L, r schedule), F(I64, L, r slot_ms), \
		F(I64, L, r job_id), F(I32, L, r attempt),             \
		F(I64, L, r started_ms), F(I64, L, r finished_ms),     \
		F(TEXT, L, r outcome), F(TEXT, L, r error_class),      \
		F(DUP, L, r error_msg), F(I64, L, r retry_hint_ms),    \
		F(DUP, L, r details_json)
static const struct store_field f_ledger[] = {
	LEDGER_F(struct ledger_row, ),
};
TABLE(store_ledger_fields, f_ledger);
const struct store_fields store_ledger_put_fields = {
	f_ledger + 1, sizeof(f_ledger) / sizeof(f_ledger[0]) - 1};

static const struct store_field f_lost[] = {
	LEDGER_F(struct store_lost_row, row.),
	F(I64, struct store_lost_row, recovered_ms),
};
TABLE(store_lost_fields, f_lost);

#define N struct store_cron_note
static const struct store_field f_cron_note[] = {
	F(DUP, N, schedule),
	F(I64, N, from_ms),
	F(DUP, N, cron),
	F(DUP, N, tz),
};
TABLE(store_cron_note_fields, f_cron_note);
#undef N

#define S struct store_alert_send
static const struct store_field f_send[] = {
	F(I64, S, id),          F(I64, S, alert_id),
	F(I32, S, round),       F(TEXT, S, target),
	F(I32, S, state),       F(I32, S, n_tries),
	F(I64, S, next_try_ms), F(I64, S, lease_token),
	F(I64, S, created_ms),  F(I64, S, sent_ms),
	F(TEXT, S, last_error), F(DUP, S, body),
	F(TEXT, S, schedule),   F(I64, S, slot_ms),
	F(TEXT, S, reason),     F(I64, S, alert_created_ms),
};
TABLE(store_send_fields, f_send);
#undef S

#define N struct store_node
static const struct store_field f_node[] = {
	F(TEXT, N, id),
	F(TEXT, N, host),
	F(I64, N, pid),
	F(TEXT, N, version),
	F(TEXT, N, config_digest),
	F(I64, N, started_ms),
	F(I64, N, seen_ms),
	OPT(N, clock_offset_ms, has_clock_offset),
};
TABLE(store_node_fields, f_node);
#undef N

#define T struct store_stall
static const struct store_field f_stall[] = {
	F(I64, T, id),         F(TEXT, T, schedule), F(I64, T, slot_ms),
	F(I32, T, attempts),   F(I32, T, n_stalls),  F(I32, T, max_attempts),
	F(I64, T, started_ms), F(TEXT, T, owner),
};
TABLE(store_stall_fields, f_stall);
#undef T

#define D struct store_dead_job
static const struct store_field f_dead[] = {
	F(I64, D, job_id),  F(TEXT, D, schedule),  F(I64, D, slot_ms),
	F(I32, D, attempt), F(TEXT, D, error_msg),
};
TABLE(store_dead_fields, f_dead);
#undef D

#define C struct store_cron
static const struct store_field f_cron[] = {
	F(TEXT, C, schedule), F(I64, C, from_ms),     F(TEXT, C, cron),
	F(TEXT, C, tz),       F(I64, C, recorded_ms),
};
TABLE(store_cron_fields, f_cron);
#undef C

#define E struct outbox_entry
static const struct store_field f_outbox_entry[] = {
	F(I32, E, state),
	F(I32, E, n_tries),
	F(I64, E, sent_ms),
	F(DUP, E, body),
};
TABLE(store_outbox_entry_fields, f_outbox_entry);
#undef E

#define O struct store_outbox_row
static const struct store_field f_outbox_row[] = {
	F(TEXT, O, target),
	F(I32, O, state),
	F(I32, O, n_tries),
};
TABLE(store_outbox_row_fields, f_outbox_row);
#undef O

#define X struct store_sched_last
static const struct store_field f_sched_last[] = {
	F(TEXT, X, schedule),
	F(I64, X, slot_ms),
};
TABLE(store_sched_last_fields, f_sched_last);
#undef X

#define X struct store_enqueue_row
static const struct store_field f_enqueue_row[] = {
	F(DUP, X, schedule),        F(I64, X, slot_ms),
	F(I32, X, policy.attempts), F(I32, X, policy.backoff),
	F(I64, X, policy.delay_ms), F(I64, X, last_ms),
};
TABLE(store_enqueue_row_fields, f_enqueue_row);
#undef X

#define K struct store_last_ok
static const struct store_field f_last_ok[] = {
	F(TEXT, K, schedule),
	F(I64, K, id),
	F(I64, K, slot_ms),
	F(I64, K, finished_ms),
};
TABLE(store_last_ok_fields, f_last_ok);
#undef K

#define Q struct store_sla_last
static const struct store_field f_sla_last[] = {
	F(TEXT, Q, schedule),
	F(I64, Q, delivered_ms),
	F(I64, Q, first_ms),
};
TABLE(store_sla_last_fields, f_sla_last);
#undef Q

#define C struct store_counts
static const struct store_field f_counts[] = {
	F(I64, C, ready_due), F(I64, C, delayed), F(I64, C, active),
	F(I64, C, done),      F(I64, C, dead),
};
TABLE(store_counts_fields, f_counts);
#undef C

#define K struct store_token
static const struct store_field f_token[] = {
	F(DUP, K, token),
	F(I64, K, expires_ms),
};
TABLE(store_token_fields, f_token);
#undef K

static const struct store_field f_i64[] = {
	{STORE_F_I64, 0, sizeof(int64_t), 0},
};
TABLE(store_i64_fields, f_i64);

static const struct store_field f_str[] = {
	{STORE_F_DUP, 0, sizeof(char *), 0},
};
TABLE(store_str_fields, f_str);

#define S struct store_alert_send
static const struct store_field f_send_taken[] = {
	F(I32, S, n_tries),
	F(I64, S, lease_token),
};
TABLE(store_send_taken_fields, f_send_taken);
#undef S

bool store_fields_read(const struct store_col_ops *ops, const void *src, int c0,
		       const struct store_fields *t, void *x)
{
	bool oom = false;

	for (size_t i = 0; i < t->n; i++) {
		const struct store_field *f = &t->f[i];
		char *m = (char *)x + f->off;
		int c = c0 + (int)i;
		switch (f->kind) {
		case STORE_F_TEXT: ops->text(src, c, m, f->size); break;
		case STORE_F_DUP: *(char **)m = ops->dup(src, c, &oom); break;
		case STORE_F_I32:
			*(int32_t *)m = (int32_t)ops->i64(src, c);
			break;
		case STORE_F_I64: *(int64_t *)m = ops->i64(src, c); break;
		case STORE_F_BOOL: *(bool *)m = ops->truth(src, c); break;
		case STORE_F_OPT:
			*(bool *)((char *)x + f->has) = !ops->is_null(src, c);
			*(int64_t *)m = ops->i64(src, c);
			break;
		}
	}
	return !oom;
}

void store_fields_bind(const struct store_param_ops *ops, void *dst, int p0,
		       const struct store_field *f, size_t n, const void *x)
{
	for (size_t i = 0; i < n; i++, f++) {
		const char *m = x ? (const char *)x + f->off : NULL;
		const char *s = NULL;
		int p = p0 + (int)i;
		switch (f->kind) {
		case STORE_F_TEXT: s = m; break;
		case STORE_F_DUP: s = m ? *(char *const *)m : NULL; break;
		case STORE_F_I32:
			ops->i64(dst, p, m ? *(const int32_t *)m : 0);
			continue;
		case STORE_F_I64:
			ops->i64(dst, p, m ? *(const int64_t *)m : 0);
			continue;
		case STORE_F_BOOL:
			ops->truth(dst, p, m && *(const bool *)m);
			continue;
		case STORE_F_OPT:
			if (m && *(const bool *)((const char *)x + f->has))
				ops->i64(dst, p, *(const int64_t *)m);
			else
				ops->null(dst, p);
			continue;
		}
		if (s)
			ops->text(dst, p, s);
		else
			ops->null(dst, p);
	}
}

void store_rows_free(const struct store_fields *t, void *v, size_t n, size_t sz)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < t->n; k++)
			if (t->f[k].kind == STORE_F_DUP)
				free(*(char **)((char *)v + i * sz +
						t->f[k].off));
	free(v);
}
