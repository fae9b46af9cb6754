/*
 * test_receiver_modes.c - the delivery promise against receivers that
 * misbehave (issue 10): a webhook target, under both `on_ambiguous`
 * policies, sends one slot to a counting receiver (tests/fakes/
 * fake_receiver.h: each request fsync'd to a log before it is answered)
 * that, on its first request,
 *
 *   never answers; answers after the client timeout; closes without a
 *   response; closes without a response and without recording (a
 *   receiver that crashed); drips its body slower than the timeout;
 *   answers 503; answers 429 with Retry-After; answers 302 to another URL;
 *   or speaks TLS with a self-signed certificate.
 *
 * Each trial drives the real queue, worker glue and outbox (worker_run_job
 * on a SQLite file and a virtual clock; the HTTP is real) attempt after
 * attempt, and an operator's `surecron release` (the real binary) when
 * the slot is held. What must hold:
 *   - an ambiguous send (the request may have been taken) is never a sure
 *     failure: with `resend` a `duplicate` ledger row is written before
 *     the next copy leaves (checked when that copy arrives), so the
 *     receiver's copies == 1 + declared duplicates; with `hold` nothing
 *     more is sent until `release`, which then finishes the slot (a
 *     `--resend` declaring the copy it lets go, `--arrived` sending none);
 *   - a definite answer (503, 429, 302) is a sure failure: retried per
 *     the retry policy, no later than the Retry-After hint, never held,
 *     no duplicate row; a redirect is not followed;
 *   - a certificate that does not verify is refused before anything is
 *     sent: the receiver gets nothing, the slot is lost loudly.
 * The suite ends with one figure line
 *   receiver modes: trials N, lost L, undeclared U, declared D, held H,
 *   corrupt C
 * and fails when lost, undeclared, corrupt or any expectation above is
 * not 0. SURECRON_RECEIVER_ROUNDS=N runs the whole matrix N times.
 *
 * One more trial runs the real daemon (issue 42): a healthy receiver that
 * answers every copy after 1.5 x worker.lease, with an idle worker ready
 * to recover any lease that runs out. The lease is kept during the send,
 * so each slot is sent once and delivered; its line
 *   slow receiver: slots N, copies C, lost L, undeclared U, declared D
 * must show C == N and L == U == D == 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "fakes/fake_receiver.h"
#include "queue.h"
#include "store.h"
#include "testutil.h"
#include "daemon_util.h"
#include "worker.h"

#define SLOT 1795798800000LL /* Friday 2026-11-27T17:00:00Z */
#define SLOT_ISO "2026-11-27T17:00:00Z"
#define TIMEOUT_MS 2000 /* a loaded machine answers a 200 well within */
#define RETRY_MS 60000
#define RETRY_AFTER_S 120
#define MAX_ATTEMPTS 3

enum mode {
	M_NEVER, M_LATE, M_CLOSE, M_CRASH, M_DRIP, M_503, M_429, M_302, M_TLS,
	N_MODES
};

static const char *const mode_names[N_MODES] = {
	"never-answers", "answers-late", "closes", "crashes-before-recording",
	"drips", "503", "429-retry-after", "302", "self-signed-tls",
};

/* The modes where the request may have been taken: the send is
 * ambiguous. */
static bool is_ambiguous(enum mode m)
{
	return m == M_NEVER || m == M_LATE || m == M_CLOSE || m == M_CRASH ||
	       m == M_DRIP;
}

static struct {
	int trials, lost, undeclared, declared, held, corrupt, bad;
} fig;

static char cert_pem[8192], key_pem[8192];
static bool have_tls;

/* One trial's world. */
struct trial {
	char dir[256], cfg[320], log[320], db[320];
	enum mode m;
	bool hold;
	struct fake_receiver *rcv;
	struct config *c;
	struct sc_clock *clock;
	struct store *store;
	/* filled by on_copy: duplicate rows found when copy i arrived */
	int dup_at_copy[8];
	int n_copies_seen;
};

static void expect(struct trial *t, bool ok, const char *what)
{
	if (ok)
		return;
	fig.bad++;
	print_message("FAIL %s/%s: %s\n", mode_names[t->m],
		      t->hold ? "hold" : "resend", what);
}

static size_t ledger_n(struct store *s, const char *outcome)
{
	struct ledger_filter f = {.schedule = "weekly", .since_ms = INT64_MIN,
				  .until_ms = INT64_MAX, .outcome = outcome};
	struct ledger_row *rows = NULL;
	size_t n = 0;

	assert_int_equal(store_ledger_query(s, &f, &rows, &n, NULL), 0);
	store_ledger_rows_free(rows, n);
	return n;
}

static enum send_state row_state(struct trial *t)
{
	struct outbox_entry e = {0};

	if (store_outbox_get(t->store, "weekly", SLOT, "hook", &e, NULL) != 0)
		return SEND_NONE;
	enum send_state s = e.state;
	store_outbox_entry_dispose(&e);
	return s;
}

static bool slot_marked(struct trial *t)
{
	bool m = false;

	assert_int_equal(store_slot_is_marked(t->store, "weekly", SLOT, &m, NULL), 0);
	return m;
}

static void write_config(struct trial *t)
{
	FILE *f = fopen(t->cfg, "w");

	assert_non_null(f);
	fprintf(f,
		"store: sqlite:%s\n"
		"targets:\n"
		"  hook: {kind: webhook, url_env: RM_HOOK_URL, timeout: %dms, "
		"connect_timeout: %dms, on_ambiguous: %s}\n"
		"schedules:\n"
		"  weekly:\n"
		"    cron: \"0 17 * * 5\"\n"
		"    tz: UTC\n"
		"    targets: [hook]\n"
		"    retry: {attempts: %d, backoff: fixed, delay: %ds}\n"
		"    tasks:\n"
		"      - {name: gen, shell: \"echo weekly report\"}\n",
		t->db, TIMEOUT_MS, TIMEOUT_MS, t->hold ? "hold" : "resend",
		MAX_ATTEMPTS, RETRY_MS / 1000);
	fclose(f);
	chmod(t->cfg, 0600);
}

static void script_receiver(struct trial *t)
{
	char loc[300], url[256];

	switch (t->m) {
	case M_NEVER:
		fake_receiver_script(t->rcv, RECV_NEVER, 1, 0, NULL, 0);
		break;
	case M_LATE:
		fake_receiver_script(t->rcv, RECV_LATE, 1, 0, NULL,
				     3 * TIMEOUT_MS);
		break;
	case M_CLOSE:
		fake_receiver_script(t->rcv, RECV_CLOSE, 1, 0, NULL, 0);
		break;
	case M_CRASH:
		fake_receiver_script(t->rcv, RECV_CRASH, 1, 0, NULL, 0);
		break;
	case M_DRIP: /* 64 bytes, 100 ms each: 6.4 s against a 2 s timeout */
		fake_receiver_script(t->rcv, RECV_DRIP, 1, 0, NULL, 100);
		break;
	case M_503:
		fake_receiver_script(t->rcv, RECV_STATUS, 1, 503, NULL, 0);
		break;
	case M_429:
		snprintf(loc, sizeof(loc), "Retry-After: %d", RETRY_AFTER_S);
		fake_receiver_script(t->rcv, RECV_STATUS, 1, 429, loc, 0);
		break;
	case M_302:
		snprintf(loc, sizeof(loc), "Location: %s",
			 fake_receiver_url(t->rcv, "/elsewhere", url,
					   sizeof(url)));
		fake_receiver_script(t->rcv, RECV_STATUS, 1, 302, loc, 0);
		break;
	case M_TLS: /* every request; none gets past the handshake */
	case N_MODES:
		break;
	}
}

/* Runs `surecron release` as an operator would; returns its status. */
static int release(struct trial *t, bool arrived)
{
	char out[2048], err[2048];
	const char *args[] = {"release", "--config", t->cfg,
			      arrived ? "--arrived" : "--resend", "weekly",
			      SLOT_ISO, "hook", NULL};
	int rc = tu_run_bin(t->dir, t->dir, NULL, args, out, sizeof(out), err,
			    sizeof(err));
	if (rc != 0)
		print_message("release: %s%s\n", out, err);
	return rc;
}

/* Claims the slot's job at the virtual now; false when nothing is due. */
static bool claim(struct trial *t, struct store_job *job)
{
	size_t n = 0;

	assert_int_equal(queue_claim(t->store, "w", 300000, job, 1, &n, NULL),
			 0);
	return n == 1;
}

static int integrity_ok(const char *db)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	int ok = 0;

	if (sqlite3_open(db, &h) != SQLITE_OK)
		return 0;
	if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) ==
	    SQLITE_OK) {
		ok = sqlite3_step(st) == SQLITE_ROW &&
		     strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return ok;
}

/* The receiver's hook: how many duplicate rows the ledger holds when a
 * taken copy arrives (read-only, straight from the file). */
static void on_copy(void *ud, const char *path, const char *key,
		    const char *disposition)
{
	struct trial *t = ud;
	sqlite3 *h;
	sqlite3_stmt *st;
	int n = -1;

	(void)key;
	if (strcmp(path, "/hook") != 0 || strcmp(disposition, "taken") != 0)
		return;
	if (sqlite3_open_v2(t->db, &h, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK) {
		sqlite3_busy_timeout(h, 5000);
		if (sqlite3_prepare_v2(h, "SELECT count(*) FROM ledger WHERE "
				       "outcome = 'duplicate'", -1, &st,
				       NULL) == SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW)
				n = sqlite3_column_int(st, 0);
			sqlite3_finalize(st);
		}
	}
	sqlite3_close(h);
	if (t->n_copies_seen < 8)
		t->dup_at_copy[t->n_copies_seen] = n;
	t->n_copies_seen++;
}

static void run_trial(enum mode m, bool hold)
{
	struct trial T, *t = &T;
	struct sc_err err = {0};
	char url[256];
	int64_t job_id = 0;
	bool was_held = false, released = false, resent = false;

	memset(t, 0, sizeof(*t));
	t->m = m;
	t->hold = hold;
	snprintf(t->dir, sizeof(t->dir), "%s", tu_tmpdir());
	snprintf(t->cfg, sizeof(t->cfg), "%.200s/surecron.yaml", t->dir);
	snprintf(t->log, sizeof(t->log), "%.200s/received.log", t->dir);
	snprintf(t->db, sizeof(t->db), "%.200s/s.db", t->dir);
	t->rcv = m == M_TLS ? fake_receiver_start(t->log, cert_pem, key_pem)
			    : fake_receiver_start(t->log, NULL, NULL);
	assert_non_null(t->rcv);
	setenv("RM_HOOK_URL", fake_receiver_url(t->rcv, "/hook", url,
						sizeof(url)), 1);
	script_receiver(t);
	fake_receiver_on_request(t->rcv, on_copy, t);
	write_config(t);
	assert_int_equal(config_load(t->cfg, &t->c, &err), 0);
	/* The virtual clock starts at the real now, so a job `release`
	 * revives (at the real now) is due for it. */
	t->clock = sc_clock_virtual_new(sc_clock_now_ms(sc_clock_real()));
	assert_int_equal(store_open(t->c->store_url, t->clock, &t->store,
				    &err), 0);
	static const struct sc_retry_policy pol = {MAX_ATTEMPTS,
						   SC_BACKOFF_FIXED, RETRY_MS};
	assert_int_equal(queue_enqueue(t->store, "weekly", SLOT, &pol, &job_id,
				       NULL, &err), 0);
	struct worker_opts wo = {.store = t->store, .config = t->c};

	for (int round = 0; round < 2 * MAX_ATTEMPTS + 2; round++) {
		struct store_job job;
		struct worker_result jr;

		if (!claim(t, &job))
			break;
		sc_err_clear(&err);
		assert_int_equal(worker_run_job(&wo, &job, &jr, &err), 0);
		int64_t failed_at = sc_clock_now_ms(t->clock);
		enum send_state st = row_state(t);
		if (jr.completed) {
			worker_result_dispose(&jr);
			break;
		}
		size_t copies = fake_receiver_count(t->log, "/hook", NULL, true);
		if (is_ambiguous(m) && !released && round == 0) {
			/* The first send may have been taken. */
			expect(t, st == SEND_UNKNOWN,
			       "an ambiguous send ends UNKNOWN, not FAILED");
		} else if (!is_ambiguous(m) && (round == 0 || m == M_TLS)) {
			expect(t, st == SEND_FAILED,
			       "a definite failure ends FAILED");
			expect(t, !jr.dead || m == M_TLS ||
				  job.attempts >= MAX_ATTEMPTS,
			       "a definite failure is retried");
		}
		if (jr.dead && st == SEND_UNKNOWN && hold) {
			/* Held: exactly nothing more until an operator. */
			was_held = true;
			expect(t, jr.rep.delivery.n_held == 1 ||
				  jr.run_err.permanent,
			       "a held send fails the job permanently");
			sc_clock_advance_ms(t->clock, 10 * RETRY_MS);
			struct store_job j2;
			bool again = claim(t, &j2);
			expect(t, !again, "a held slot is not retried");
			expect(t, fake_receiver_count(t->log, "/hook", NULL,
						      true) == copies,
			       "a held slot sends nothing more");
			/* The operator looks at the receiver. */
			expect(t, release(t, copies > 0) == 0,
			       "surecron release works on a held send");
			released = true;
			resent = copies == 0;
			int64_t real = sc_clock_now_ms(sc_clock_real()) + 1000;
			if (sc_clock_now_ms(t->clock) < real)
				sc_clock_set_ms(t->clock, real);
			worker_result_dispose(&jr);
			continue;
		}
		if (jr.dead) {
			worker_result_dispose(&jr);
			break;
		}
		/* Retried: no earlier than the policy and the hint say. */
		int64_t want = failed_at + RETRY_MS;
		if (m == M_429 && round == 0)
			want = failed_at + RETRY_AFTER_S * 1000LL;
		expect(t, jr.next_ms >= want,
		       "the retry waits for the policy and Retry-After");
		sc_clock_set_ms(t->clock, jr.next_ms);
		worker_result_dispose(&jr);
	}

	/* The figures of this trial. */
	size_t copies = fake_receiver_count(t->log, "/hook", NULL, true);
	size_t declared = ledger_n(t->store, LEDGER_DUPLICATE);
	size_t lost_rows = ledger_n(t->store, LEDGER_LOST);
	bool marked = slot_marked(t);
	fig.trials++;
	fig.declared += (int)declared;
	fig.held += was_held;
	if (copies > 1 + declared)
		fig.undeclared += (int)(copies - 1 - declared);
	/* Lost: marked done but never received, or neither done nor loud. */
	if ((marked && copies == 0) || (!marked && lost_rows == 0))
		fig.lost++;
	if (!integrity_ok(t->db) || (marked && row_state(t) != SEND_SENT))
		fig.corrupt++;

	switch (m) {
	case M_TLS:
		expect(t, fake_receiver_count(t->log, NULL, NULL, false) == 0,
		       "TLS refused: nothing received");
		expect(t, !marked && lost_rows >= 1,
		       "TLS refused: the slot is lost, loudly");
		expect(t, !was_held, "a TLS failure is never held");
		break;
	case M_302:
		expect(t, fake_receiver_count(t->log, "/elsewhere", NULL,
					      false) == 0,
		       "the redirect is not followed");
		/* fall through */
	case M_503:
	case M_429:
		expect(t, marked && copies == 1, "delivered once after retry");
		expect(t, declared == 0 && !was_held,
		       "a definite failure is neither held nor a duplicate");
		break;
	default:
		expect(t, marked, "the slot is delivered in the end");
		if (hold) {
			expect(t, was_held, "on_ambiguous: hold holds");
			expect(t, copies == 1,
			       "hold then release: exactly one copy");
			/* --resend declares the copy it lets go (an
			 * earlier one may still land); --arrived sends
			 * nothing more. */
			expect(t, declared == (resent ? 1u : 0u),
			       "release --resend declares, --arrived not");
		} else {
			expect(t, !was_held, "resend does not hold");
			expect(t, declared >= 1,
			       "resend declares the possible duplicate");
			expect(t, m == M_CRASH ? copies == declared
					       : copies == 1 + declared,
			       "copies == 1 + declared duplicates");
		}
		break;
	}
	/* Each copy after the first found its duplicate row already
	 * written. */
	for (int i = 1; i < t->n_copies_seen && i < 8; i++)
		expect(t, t->dup_at_copy[i] >= i,
		       "the duplicate row is written before the next copy");

	fake_receiver_stop(t->rcv);
	store_close(t->store);
	sc_clock_free(t->clock);
	config_free(t->c);
	char dir[256];
	memcpy(dir, t->dir, sizeof(dir));
	tu_rmrf(dir);
}

static void receiver_modes_both_policies(void **state)
{
	const char *r = getenv("SURECRON_RECEIVER_ROUNDS");
	int rounds = r ? atoi(r) : 1;

	for (int k = 0; k < (rounds > 0 ? rounds : 1); k++)
		for (int m = 0; m < N_MODES; m++) {
			if (m == M_TLS && !have_tls)
				continue;
			run_trial((enum mode)m, false);
			run_trial((enum mode)m, true);
		}
	print_message("receiver modes: trials %d, lost %d, undeclared %d, "
		      "declared %d, held %d, corrupt %d\n",
		      fig.trials, fig.lost, fig.undeclared, fig.declared,
		      fig.held, fig.corrupt);
	assert_int_equal(fig.lost, 0);
	assert_int_equal(fig.undeclared, 0);
	assert_int_equal(fig.corrupt, 0);
	assert_int_equal(fig.bad, 0);
}


/* ---- a slow but healthy receiver, through the daemon (issue 42) ------- */

#define SLOW_LEASE_MS 2000
#define SLOW_SLOTS 3

static void slow_receiver_sent_once(void **state)
{
	char dir[256], cfg[320], log[320], db[320], url[256], store_url[400];
	(void)state;

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%.200s/surecron.yaml", dir);
	snprintf(log, sizeof(log), "%.200s/received.log", dir);
	snprintf(db, sizeof(db), "%.200s/s.db", dir);
	snprintf(store_url, sizeof(store_url), "sqlite:%s", db);
	struct fake_receiver *rcv = fake_receiver_start(log, NULL, NULL);
	assert_non_null(rcv);
	/* Every copy is taken, and answered 1.5 leases later. */
	fake_receiver_script(rcv, RECV_LATE, 1000, 0, NULL,
			     SLOW_LEASE_MS * 3 / 2);
	setenv("RM_HOOK_URL", fake_receiver_url(rcv, "/hook", url, sizeof(url)),
	       1);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	/* Two workers: while one sends, the other is idle, and recovers
	 * the job as soon as its lease runs out. */
	fprintf(f,
		"store: %s\n"
		"worker: {concurrency: 2, lease: %dms, grace: 10s}\n"
		"targets:\n"
		"  hook: {kind: webhook, url_env: RM_HOOK_URL, timeout: 20s}\n"
		"schedules:\n"
		"  weekly:\n"
		"    cron: \"0 0 1 1 *\"\n"
		"    tz: UTC\n"
		"    targets: [hook]\n"
		"    retry: {attempts: 3, backoff: fixed, delay: 1s}\n"
		"    tasks:\n"
		"      - {name: gen, shell: \"echo weekly report\"}\n",
		store_url, SLOW_LEASE_MS);
	fclose(f);
	chmod(cfg, 0600);
	const char *envs[] = {"SURECRON_LOG=debug", NULL};
	pid_t pid = tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(tu_wait_log(dir, "event=started", 1, 20000));
	static const struct sc_retry_policy pol = {3, SC_BACKOFF_FIXED, 1000};
	struct store *s = tu_store_open(store_url);
	for (int i = 0; i < SLOW_SLOTS; i++) {
		int64_t id = 0;
		assert_int_equal(queue_trigger(s, "weekly",
					       SLOT + i * 86400000LL, &pol, &id,
					       NULL, NULL), 0);
	}
	store_close(s);
	/* Every slot ends: delivered, or lost. */
	int64_t end = tu_now_ms() + 60000;
	size_t done = 0, lost = 0;
	while (tu_now_ms() < end) {
		done = tu_ledger_count(store_url, "weekly", LEDGER_SUCCESS);
		lost = tu_ledger_count(store_url, "weekly", LEDGER_LOST);
		if (done + lost >= SLOW_SLOTS)
			break;
		tu_sleep_ms(50);
	}
	assert_true(tu_stop_daemon(pid, 20000));
	assert_true(fake_receiver_wait_idle(rcv, 200, 10000));
	size_t copies = fake_receiver_count(log, "/hook", NULL, true);
	size_t declared = tu_ledger_count(store_url, "weekly",
					  LEDGER_DUPLICATE);
	size_t stalled = tu_ledger_count(store_url, "weekly", LEDGER_STALLED);
	size_t undeclared = copies > SLOW_SLOTS + declared
				    ? copies - SLOW_SLOTS - declared
				    : 0;
	print_message("slow receiver: slots %d, copies %zu, lost %zu, "
		      "undeclared %zu, declared %zu (stalled %zu, delivered "
		      "%zu)\n", SLOW_SLOTS, copies, lost, undeclared, declared,
		      stalled, done);
	assert_int_equal(lost, 0);
	assert_int_equal(done, SLOW_SLOTS);
	assert_int_equal(undeclared, 0);
	assert_int_equal(declared, 0);
	assert_int_equal(stalled, 0);
	assert_int_equal(copies, SLOW_SLOTS);
	fake_receiver_stop(rcv);
	unsetenv("RM_HOOK_URL");
	tu_rmrf(dir);
}

static int reap_all(void **state)
{
	(void)state;
	tu_reap_all();
	return 0;
}

static int group_setup(void **state)
{
	const char *dir = tu_tmpdir();
	char cert[300], key[300];

	if (tu_self_signed(dir, cert, sizeof(cert), key, sizeof(key))) {
		tu_slurp(cert, cert_pem, sizeof(cert_pem));
		tu_slurp(key, key_pem, sizeof(key_pem));
		struct fake_receiver *probe =
			fake_receiver_start("/dev/null", cert_pem, key_pem);
		have_tls = probe != NULL;
		fake_receiver_stop(probe);
	}
	if (!have_tls)
		print_message("no openssl tool or no TLS in libmicrohttpd: "
			      "the self-signed mode is left out\n");
	tu_rmrf(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(receiver_modes_both_policies),
		cmocka_unit_test_teardown(slow_receiver_sent_once, reap_all),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
