/*
 * test_alloc_fail.c - the counting allocation failpoint: every allocation
 * of the pure modules may fail, and each failure ends in a clean SC_ENOMEM
 * (or the operation copes and succeeds), never a crash; under ASan
 * (make test SAN=1) LeakSanitizer also proves that nothing leaks.
 *
 * How: this binary is linked with -Wl,--wrap for malloc, calloc, realloc,
 * strdup and strndup (see the Makefile), so every such call made by
 * libsurecron's objects lands in the __wrap_ functions below; jansson's
 * allocations come here too (json_set_alloc_funcs). With fail_at = N the
 * N-th allocation returns NULL. Each operation runs for N = 1, 2, ...
 * until a run makes fewer than N allocations: that run succeeded with no
 * failure injected, and every allocation it makes has been failed once.
 * SQLite's allocations are counted as well (SQLITE_CONFIG_MALLOC);
 * libyaml's, inside its library, are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "message.h"
#include "queue.h"
#include "store.h"
#include "surecron.h"
#include "testutil.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static long n_allocs;   /* allocations since the last arm() */
static long fail_at;    /* 0: none fails */

static void arm(long n)
{
	n_allocs = 0;
	fail_at = n;
}

/* A failed allocation sets errno, as the C library's does. */
static int fails_now(void)
{
	if (++n_allocs != fail_at)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *__wrap_malloc(size_t n)
{
	return fails_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return fails_now() ? NULL : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fails_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return fails_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return fails_now() ? NULL : __real_strndup(s, n);
}

static void *json_alloc(size_t n)
{
	return __wrap_malloc(n);
}

/* SQLite's allocator, counted too: each block keeps its size in front
 * (xSize needs it). */
#define SQ_HEAD 16

static void *sq_malloc(int n)
{
	char *p = fails_now() ? NULL : __real_malloc((size_t)n + SQ_HEAD);

	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + SQ_HEAD;
}

static void sq_free(void *p)
{
	if (p)
		free((char *)p - SQ_HEAD);
}

static int sq_size(void *p)
{
	int n = 0;

	if (p)
		memcpy(&n, (char *)p - SQ_HEAD, sizeof(n));
	return n;
}

static void *sq_realloc(void *p, int n)
{
	char *q;

	if (!p)
		return sq_malloc(n);
	if (fails_now())
		return NULL;
	q = __real_realloc((char *)p - SQ_HEAD, (size_t)n + SQ_HEAD);
	if (!q)
		return NULL;
	memcpy(q, &n, sizeof(n));
	return q + SQ_HEAD;
}

static int sq_roundup(int n)
{
	return (n + 7) & ~7;
}

static int sq_init(void *ud)
{
	(void)ud;
	return SQLITE_OK;
}

static void sq_shutdown(void *ud)
{
	(void)ud;
}

static const sqlite3_mem_methods sq_methods = {
	sq_malloc, sq_free, sq_realloc, sq_size, sq_roundup, sq_init,
	sq_shutdown, NULL,
};

/*
 * Runs op for N = 1, 2, ... as described at the top. op returns 0 or an
 * error code (and releases what it made, either way). Every failed run
 * must be SC_ENOMEM; returns how many allocations the successful run
 * made, so a test can say the loop covered something.
 */
static char last_msg[SC_ERR_MSG_MAX];

static long loop_failures(const char *what, int (*op)(void *ud), void *ud)
{
	for (long n = 1;; n++) {
		arm(n);
		int rc = op(ud);
		long made = n_allocs;
		arm(0);
		if (made < n) {
			if (rc != 0)
				fail_msg("%s: failed (%d) with no allocation "
					 "failed", what, rc);
			printf("%s: %ld allocations, each failed once: clean\n",
			       what, made);
			return made;
		}
		if (rc != 0 && rc != SC_ENOMEM)
			fail_msg("%s: allocation %ld failed and the result was "
				 "%d, not SC_ENOMEM (%d): %s", what, n, rc,
				 SC_ENOMEM, last_msg);
	}
}

/* ---- config load ------------------------------------------------------ */

static const char config_text[] =
	"store: sqlite://./s.db\n"
	"worker: {concurrency: 2, lease: 30s, grace: 5s}\n"
	"targets:\n"
	"  chat: {kind: slack, url_env: CHAT_URL}\n"
	"  hook: {kind: webhook, url_env: HOOK_URL, secret_env: HOOK_KEY}\n"
	"  file: {kind: file, path: out.jsonl}\n"
	"auth:\n"
	"  broker: {kind: bearer, token_env: BROKER_TOKEN}\n"
	"alerts: {targets: [chat]}\n"
	"schedules:\n"
	"  weekly:\n"
	"    cron: \"0 8 * * 5\"\n"
	"    tz: Europe/Paris\n"
	"    targets: [chat, file]\n"
	"    retry: {attempts: 4, backoff: exponential, delay: 30m}\n"
	"    tasks:\n"
	"      - name: summary\n"
	"        command: [\"/bin/echo\", \"weekly\"]\n"
	"        timeout: 10m\n"
	"      - name: quotes\n"
	"        http: {method: GET, url: \"https://api.example.com/q\","
	" auth: broker}\n"
	"  daily:\n"
	"    cron: \"@daily\"\n"
	"    targets: [hook]\n"
	"    tasks:\n"
	"      - {name: digest, shell: \"echo digest\"}\n";

static int load_config(void *ud)
{
	struct config *c = NULL;
	struct sc_err err = {0};
	int rc = config_load(ud, &c, &err);

	snprintf(last_msg, sizeof(last_msg), "%s", err.msg);
	config_free(c);
	return rc;
}

static void config_load_survives_every_failed_allocation(void **state)
{
	char path[512];
	(void)state;

	snprintf(path, sizeof(path), "%s/surecron.yaml", tu_tmpdir());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(config_text, f);
	fclose(f);
	/* It must load cleanly first, or the loop would test nothing. */
	assert_int_equal(load_config(path), 0);
	assert_true(loop_failures("config load", load_config, path) > 10);
}

/* ---- cron ------------------------------------------------------------- */

static int parse_cron(void *ud)
{
	struct sc_cron c;
	struct sc_err err = {0};
	const struct sc_zone *z = NULL;
	int64_t next = 0;
	int rc = sc_cron_parse(ud, &c, &err);

	if (!rc)
		rc = sc_zone_load("Asia/Tokyo", &z, &err);
	if (!rc)
		rc = sc_cron_next(&c, z, 1767225600000LL, &next, &err);
	return rc;
}

static void cron_survives_every_failed_allocation(void **state)
{
	(void)state;
	struct sc_cron c;

	/* The zone is loaded (and cached) by the loop itself, so its reader's
	 * allocations are failed one by one too. */
	assert_int_equal(sc_cron_parse("30 2 * * 0", &c, NULL), 0);
	assert_true(loop_failures("cron parse, zone load and next", parse_cron,
				  "30 2 * * 0") > 0);
}

/* ---- message composition ---------------------------------------------- */

static int compose(void *ud)
{
	static char *const previews[] = {"first preview", "second \xff"};
	static const struct message_failure fails[] = {
		{"quotes", "HTTP 429: quota exceeded"},
	};
	struct message m = {
		.kind = MESSAGE_RESULT, .schedule = "weekly",
		.slot_ms = 1767225600000LL, .attempt = 2,
		.summary = "the weekly summary", .previews = previews,
		.n_previews = 2, .failures = fails, .n_failures = 1,
	};
	char *out = NULL;
	struct sc_err err = {0};
	int rc = message_compose(&m, &out, &err);

	(void)ud;
	snprintf(last_msg, sizeof(last_msg), "%s", err.msg);
	free(out);
	return rc;
}

static void compose_survives_every_failed_allocation(void **state)
{
	(void)state;
	assert_int_equal(compose(NULL), 0);
	/* Composing only: message_render_text parses with json_loads, and
	 * jansson reports an allocation failure there as a syntax error, so
	 * no caller could tell the two apart. */
	assert_true(loop_failures("message compose", compose, NULL) > 5);
}

/* ---- store open ------------------------------------------------------- */

static int open_store(void *ud)
{
	struct store *s = NULL;
	struct sc_err err = {0};
	int rc = store_open(ud, sc_clock_real(), &s, &err);

	snprintf(last_msg, sizeof(last_msg), "%s", err.msg);
	store_close(s);
	return rc;
}

static void store_open_survives_every_failed_allocation(void **state)
{
	char url[600];
	(void)state;

	snprintf(url, sizeof(url), "sqlite://%s/s.db", tu_tmpdir());
	assert_int_equal(open_store(url), 0); /* creates and migrates */
	assert_true(loop_failures("store open", open_store, url) > 0);
}

/* ---- store operations ------------------------------------------------ */

/* A slot's life on an open store: enqueue, claim, complete; then the
 * ledger and the counts read back. Each run takes a new slot. */
struct slot_run {
	struct store *s;
	int64_t slot_ms;
};

static int slot_life(void *ud)
{
	struct slot_run *o = ud;
	struct sc_retry_policy policy = {.attempts = 3};
	struct store_job job;
	struct ledger_row *rows = NULL;
	struct store_counts k;
	/* The newest row only: a read of them all would allocate more at
	 * each run, and the loop would never see a run that fails nothing. */
	struct ledger_filter f = {.schedule = "weekly", .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX, .limit = 1,
				  .newest_first = true};
	struct sc_err err = {0};
	size_t n = 0, n_rows = 0;
	int64_t id = 0;
	bool created = false;
	int rc;

	o->slot_ms += 60000;
	rc = queue_enqueue(o->s, "weekly", o->slot_ms, &policy, &id, &created,
			   &err);
	if (!rc)
		rc = queue_claim(o->s, "w1", 30000, &job, 1, &n, &err);
	if (!rc && n == 1)
		rc = queue_complete(o->s, &job, "{\"tasks\":[]}", &err);
	if (!rc)
		rc = store_ledger_query(o->s, &f, &rows, &n_rows, &err);
	store_ledger_rows_free(rows, n_rows);
	if (!rc)
		rc = store_job_counts(o->s, NULL, &k, &err);
	snprintf(last_msg, sizeof(last_msg), "%s", err.msg);
	return rc;
}

/*
 * Every allocation of the queue's hot path and the ledger's readers is
 * failed once. Besides the codes: a completion is one commit, so however
 * the allocations failed, the jobs marked done and the ledger's success
 * rows stay equal in number.
 */
static void store_ops_survive_every_failed_allocation(void **state)
{
	char url[600];
	struct slot_run o = {.slot_ms = 1767225600000LL};
	struct store_counts k;
	struct ledger_filter f = {.schedule = "weekly", .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX,
				  .outcome = LEDGER_SUCCESS};
	struct ledger_row *rows = NULL;
	size_t n_rows = 0;
	(void)state;

	snprintf(url, sizeof(url), "sqlite://%s/ops.db", tu_tmpdir());
	assert_int_equal(store_open(url, sc_clock_real(), &o.s, NULL), 0);
	assert_int_equal(slot_life(&o), 0);
	assert_true(loop_failures("store slot life", slot_life, &o) > 5);
	assert_int_equal(store_job_counts(o.s, NULL, &k, NULL), 0);
	assert_int_equal(store_ledger_query(o.s, &f, &rows, &n_rows, NULL), 0);
	assert_int_equal((int64_t)n_rows, k.done);
	assert_true(k.done >= 2);
	store_ledger_rows_free(rows, n_rows);
	store_close(o.s);
}

static int setup(void **state)
{
	(void)state;
	json_set_alloc_funcs(json_alloc, free);
	return 0;
}

int main(void)
{
	/* Before SQLite initialises itself, or it keeps its own allocator. */
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &sq_methods) != SQLITE_OK)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(config_load_survives_every_failed_allocation,
				       setup),
		cmocka_unit_test_setup(cron_survives_every_failed_allocation,
				       setup),
		cmocka_unit_test_setup(compose_survives_every_failed_allocation,
				       setup),
		cmocka_unit_test_setup(store_ops_survive_every_failed_allocation,
				       setup),
		cmocka_unit_test_setup(store_open_survives_every_failed_allocation,
				       setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
