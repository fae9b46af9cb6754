/*
 * test_delivery.c - message JSON, chat text, targets (webhook with
 * Idempotency-Key and HMAC signature, slack, file, command) against a real
 * HTTP server on 127.0.0.1 and real files and processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "clock.h"
#include "message.h"
#include "target.h"
#include "fakes/fake_http.h"
#include "testutil.h"

static struct fake_http *srv;
static char dir[256];

static int setup(void **state)
{
	srv = fake_http_start();
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	return srv ? 0 : -1;
}

static int teardown(void **state)
{
	fake_http_stop(srv);
	tu_rmrf(dir);
	return 0;
}

static int reset(void **state)
{
	fake_http_reset(srv);
	return 0;
}

/* Every log line of a test, to prove no secret reaches the log. */
static char logged[64 * 1024];

static void capture(void *ud, enum sc_log_level level, const char *line)
{
	size_t n = strlen(logged);

	snprintf(logged + n, sizeof(logged) - n, "%s\n", line);
}

#define SLOT 1795798800000LL /* 2026-11-27T17:00:00Z */

static char *compose_result(void)
{
	char *previews[] = {"preview one", "line\nbreak"};
	struct message_failure f[] = {{"fetch", "HTTP 429 quota"}};
	struct message m = {
		.kind = MESSAGE_RESULT, .schedule = "weekly", .slot_ms = SLOT,
		.attempt = 2, .summary = "the summary", .previews = previews,
		.n_previews = 2, .failures = f, .n_failures = 1,
	};
	char *body = NULL;

	assert_int_equal(message_compose(&m, &body, NULL), 0);
	return body;
}

static void message_object_shape(void **state)
{
	char *body = compose_result();
	json_error_t je;
	json_t *o = json_loads(body, 0, &je);

	assert_non_null(o);
	assert_null(strchr(body, '\n')); /* one line: file targets rely on it */
	assert_string_equal(json_string_value(json_object_get(o, "kind")),
			    "result");
	assert_string_equal(json_string_value(json_object_get(o, "schedule")),
			    "weekly");
	assert_string_equal(json_string_value(json_object_get(o, "slot")),
			    "2026-11-27T17:00:00Z");
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 2);
	assert_string_equal(json_string_value(json_object_get(o, "summary")),
			    "the summary");
	assert_int_equal(json_array_size(json_object_get(o, "previews")), 2);
	json_t *f = json_array_get(json_object_get(o, "failures"), 0);
	assert_string_equal(json_string_value(json_object_get(f, "task")),
			    "fetch");
	assert_string_equal(json_string_value(json_object_get(f, "error")),
			    "HTTP 429 quota");
	/* Every message carries its chat text, notice lines included. */
	assert_non_null(strstr(json_string_value(json_object_get(o, "text")),
			       "⚠️ fetch: generation failed — HTTP 429 quota"));
	json_decref(o);
	free(body);

	/* A notice: summary is null, previews empty; bad UTF-8 repaired. */
	struct message_failure nf[] = {{"t", "bad \xff"}};
	struct message n = {.kind = MESSAGE_NOTICE, .schedule = "s",
				 .slot_ms = 0, .attempt = 1, .failures = nf,
				 .n_failures = 1};
	assert_int_equal(message_compose(&n, &body, NULL), 0);
	o = json_loads(body, 0, &je);
	assert_non_null(o);
	assert_true(json_is_null(json_object_get(o, "summary")));
	assert_int_equal(json_array_size(json_object_get(o, "previews")), 0);
	json_decref(o);
	free(body);
}

static void chat_text_and_notice_format(void **state)
{
	char *body = compose_result(), *text = NULL;
	char line[256];

	assert_int_equal(message_render_text(body, &text, NULL), 0);
	assert_string_equal(text, "the summary\n\npreview one\n\nline\nbreak\n\n"
			    "\xE2\x9A\xA0\xEF\xB8\x8F fetch: generation failed "
			    "\xE2\x80\x94 HTTP 429 quota");
	free(text);
	free(body);
	assert_string_equal(message_notice_line("report", "timed out", line,
						sizeof(line)),
			    "⚠️ report: generation failed — timed out");
}

static void keys_and_signatures(void **state)
{
	char a[MESSAGE_KEY_MAX], b[MESSAGE_KEY_MAX], c[MESSAGE_KEY_MAX];
	char sig[MESSAGE_KEY_MAX];

	assert_int_equal(message_idempotency_key(MESSAGE_RESULT, "weekly",
						 SLOT, "hook", 0, a, NULL), 0);
	assert_int_equal(message_idempotency_key(MESSAGE_RESULT, "weekly",
						 SLOT, "hook", 0, b, NULL), 0);
	assert_string_equal(a, b);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(message_idempotency_key(MESSAGE_RESULT, "weekly",
						 SLOT, "hook2", 0, c, NULL), 0);
	assert_string_not_equal(a, c);
	assert_int_equal(message_idempotency_key(MESSAGE_RESULT, "weekly",
						 SLOT + 1, "hook", 0, c, NULL), 0);
	assert_string_not_equal(a, c);
	/* Known values, from before the key moved into the targets (and
	 * equal to: printf 'surecron/1\0result\0weekly\01795798800000\0'
	 * 'hook\0' '0\0' | sha256sum, first 32 digits). Receivers dedupe on
	 * them across upgrades: they must never change. */
	assert_string_equal(a, "6efe0fd2625c32bfc3c35ea0fa247ed7");
	assert_int_equal(message_idempotency_key(MESSAGE_NOTICE, "weekly",
						 SLOT, "hook", 2, c, NULL), 0);
	assert_string_equal(c, "ecebda7f0b2d3d6a8784c12d0ff7ac94");
	/* Checked against openssl(1):
	 * printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret */
	assert_int_equal(message_sign("secret", 6, "1700000000", "{\"a\":1}", 7,
				      sig), 0);
	assert_string_equal(sig, "49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686");
}

static struct target_spec webhook_target(const char *name)
{
	struct target_spec t = {.name = (char *)name, .kind = TARGET_WEBHOOK,
				.url_env = "TEST_HOOK_URL",
				.secret_env = "TEST_HOOK_SECRET",
				.timeout_ms = 5000};
	return t;
}

static void webhook_posts_signed_object(void **state)
{
	char url[256], key[MESSAGE_KEY_MAX], got[256], ts[64], want[128];
	char *body = compose_result();
	struct target_spec t = webhook_target("hook");
	struct sc_clock *clk = sc_clock_virtual_new(1700000000123LL);
	struct fake_request r;

	setenv("TEST_HOOK_URL", fake_http_url(srv, "/hook", url, sizeof(url)), 1);
	setenv("TEST_HOOK_SECRET", "s3cret", 1);
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");
	assert_int_equal(message_idempotency_key(MESSAGE_RESULT, "weekly",
						 SLOT, "hook", 0, key, NULL), 0);
	struct target_copy s = {.target = &t, .body = body,
				  .idempotency_key = key, .clock = clk};
	assert_int_equal(target_send(&s, NULL), 0);
	assert_int_equal(target_send(&s, NULL), 0);
	assert_int_equal(fake_http_count(srv, "/hook"), 2);
	assert_true(fake_http_request(srv, "/hook", 0, &r));
	assert_string_equal(r.method, "POST");
	assert_string_equal(r.body, body);
	assert_true(fake_request_header(&r, "Idempotency-Key", got, sizeof(got)));
	assert_string_equal(got, key);
	assert_true(fake_request_header(&r, "Content-Type", got, sizeof(got)));
	assert_string_equal(got, "application/json");
	assert_true(fake_request_header(&r, "X-Surecron-Timestamp", ts,
					sizeof(ts)));
	assert_string_equal(ts, "1700000000");
	char sig[MESSAGE_KEY_MAX];
	message_sign("s3cret", 6, ts, body, strlen(body), sig);
	snprintf(want, sizeof(want), "sha256=%s", sig);
	assert_true(fake_request_header(&r, "X-Surecron-Signature", got,
					sizeof(got)));
	assert_string_equal(got, want);
	fake_request_dispose(&r);
	/* The second copy carries the same key. */
	assert_true(fake_http_request(srv, "/hook", 1, &r));
	assert_true(fake_request_header(&r, "Idempotency-Key", got, sizeof(got)));
	assert_string_equal(got, key);
	fake_request_dispose(&r);
	/* The way the outbox sends: no key given, the target computes it
	 * from (kind, schedule, slot, target) at send time; the header is
	 * the known value receivers already saw. */
	struct target_copy s2 = {.target = &t, .body = body,
				   .kind = MESSAGE_RESULT,
				   .schedule = "weekly", .slot_ms = SLOT,
				   .clock = clk};
	assert_int_equal(target_send(&s2, NULL), 0);
	assert_true(fake_http_request(srv, "/hook", 2, &r));
	assert_true(fake_request_header(&r, "Idempotency-Key", got, sizeof(got)));
	assert_string_equal(got, "6efe0fd2625c32bfc3c35ea0fa247ed7");
	fake_request_dispose(&r);
	sc_clock_free(clk);
	free(body);
}

static void webhook_failures_carry_status_and_excerpt(void **state)
{
	char url[256];
	struct target_spec t = webhook_target("hook");
	struct sc_err err = {0};
	struct target_copy s = {.target = &t, .body = "{}"};

	t.secret_env = NULL;
	logged[0] = '\0';
	sc_log_set_sink(capture, NULL, SC_LOG_DEBUG);
	setenv("TEST_HOOK_URL", fake_http_url(srv, "/hook/SECRETPATH?tok=x",
					      url, sizeof(url)), 1);
	fake_http_push(srv, "/hook/SECRETPATH", 500, NULL,
		       "internal trouble\nsecond line", 0);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_int_equal(err.http_status, 500);
	assert_non_null(strstr(err.msg, "target hook: HTTP 500"));
	assert_non_null(strstr(err.msg, "internal trouble second line"));
	assert_null(strstr(err.msg, "SECRETPATH"));
	assert_false(err.permanent);
	/* A definite answer: surely not taken (issue 10). */
	assert_false(err.ambiguous);

	/* 429 with Retry-After: a hint. */
	sc_err_clear(&err);
	fake_http_push(srv, "/hook/SECRETPATH", 429, "Retry-After: 120", "", 0);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_int_equal(err.http_status, 429);
	assert_int_equal(err.retry_after_ms, 120000);
	assert_false(err.ambiguous);

	/* Redirects are not followed. */
	sc_err_clear(&err);
	fake_http_push(srv, "/hook/SECRETPATH", 302, "Location: http://127.0.0.1:1/x",
		       "", 0);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_int_equal(err.http_status, 302);
	assert_false(err.ambiguous);
	assert_int_equal(fake_http_count(srv, NULL), 3);

	/* A 2xx whose body passes the 64 KiB cap was taken: a success, not
	 * a failure to send again (issue 10). */
	char *big = malloc(100 * 1024 + 1);
	assert_non_null(big);
	memset(big, 'x', 100 * 1024);
	big[100 * 1024] = '\0';
	fake_http_push(srv, "/hook/SECRETPATH", 200, NULL, big, 0);
	free(big);
	sc_err_clear(&err);
	assert_int_equal(target_send(&s, &err), 0);

	/* A receiver slower than the target's total timeout: a failure
	 * with no status, in about the timeout. */
	sc_err_clear(&err);
	t.timeout_ms = 1000;
	/* It answers after 5 s: a timeout that did not fire shows as a
	 * success; the bound leaves a loaded machine room over the 1 s and
	 * stays below those 5 s. The 1 s lets a loaded machine write the
	 * request before it fires, which "may have arrived" depends on. */
	fake_http_push(srv, "/hook/SECRETPATH", 200, NULL, "late", 5000);
	int64_t t0 = clock_mono_ms();
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_true(clock_mono_ms() - t0 < 4000);
	assert_int_equal(err.http_status, 0);
	assert_null(strstr(err.msg, "SECRETPATH"));
	/* The request was written before the timeout: it may have been
	 * taken, so it is not a sure failure (issue 10). */
	assert_true(err.ambiguous);
	assert_non_null(strstr(err.msg, "may have arrived"));
	t.timeout_ms = 5000;

	/* Transport failure: no status, no URL in the message. */
	sc_err_clear(&err);
	setenv("TEST_HOOK_URL", "http://127.0.0.1:1/SECRETPATH", 1);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_int_equal(err.http_status, 0);
	assert_null(strstr(err.msg, "SECRETPATH"));
	/* Refused before anything was sent: a sure failure. */
	assert_false(err.ambiguous);

	/* https only, except loopback. */
	sc_err_clear(&err);
	setenv("TEST_HOOK_URL", "http://example.com/hook", 1);
	assert_int_equal(target_send(&s, &err), SC_ECONFIG);

	/* Unset variable: named, not a crash. */
	sc_err_clear(&err);
	unsetenv("TEST_HOOK_URL");
	assert_int_equal(target_send(&s, &err), SC_ECONFIG);
	assert_non_null(strstr(err.msg, "TEST_HOOK_URL"));

	/* The webhook URL is a credential: not even a debug line shows its
	 * path, while the exchanges themselves were logged. */
	sc_log_set_sink(NULL, NULL, SC_LOG_ERROR);
	assert_non_null(strstr(logged, "event=exchange"));
	assert_null(strstr(logged, "SECRETPATH"));
	assert_null(strstr(logged, "tok=x"));
}

static void slack_posts_text(void **state)
{
	char url[256];
	char *body = compose_result();
	struct target_spec t = {.name = "chat", .kind = TARGET_SLACK,
				.url_env = "TEST_SLACK_URL"};
	struct fake_request r;

	setenv("TEST_SLACK_URL", fake_http_url(srv, "/slack", url, sizeof(url)), 1);
	fake_http_set_default(srv, "/slack", 200, NULL, "ok");
	struct target_copy s = {.target = &t, .body = body};
	assert_int_equal(target_send(&s, NULL), 0);
	assert_true(fake_http_request(srv, "/slack", 0, &r));
	json_t *o = json_loads(r.body, 0, NULL);
	assert_non_null(o);
	const char *text = json_string_value(json_object_get(o, "text"));
	assert_non_null(text);
	assert_non_null(strstr(text, "the summary"));
	assert_non_null(strstr(text, "⚠️ fetch: generation failed — HTTP 429 quota"));
	json_decref(o);
	fake_request_dispose(&r);
	free(body);
}

static void file_appends_lines_0600(void **state)
{
	char path[512], line[4096];
	struct target_spec t = {.name = "log", .kind = TARGET_FILE, .path = path};
	struct stat st;

	snprintf(path, sizeof(path), "%s/out.jsonl", dir);
	struct target_copy s = {.target = &t, .body = "{\"a\":1}"};
	assert_int_equal(target_send(&s, NULL), 0);
	s.body = "{\"b\":2}";
	assert_int_equal(target_send(&s, NULL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "{\"a\":1}\n");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "{\"b\":2}\n");
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);

	snprintf(path, sizeof(path), "%s/no/such/dir/x", dir);
	struct sc_err err = {0};
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
}

static void command_gets_message_on_stdin(void **state)
{
	char out[512], script[512], cmd[1200], line[4096];
	char *argv[] = {script, out, NULL};
	struct target_spec t = {.name = "cmd", .kind = TARGET_COMMAND,
				.argv = argv, .timeout_ms = 5000};
	struct sc_err err = {0};

	snprintf(out, sizeof(out), "%s/stdin.txt", dir);
	snprintf(script, sizeof(script), "%s/recv.sh", dir);
	snprintf(cmd, sizeof(cmd),
		 "#!/bin/sh\ncat > \"$1\"\necho \"$SURECRON_IDEMPOTENCY_KEY\" >> \"$1\"\n"
		 "[ -z \"$FAIL\" ] || { echo 'receiver down' >&2; exit 4; }\n");
	FILE *f = fopen(script, "w");
	assert_non_null(f);
	fputs(cmd, f);
	fclose(f);
	chmod(script, 0700);
	struct target_copy s = {.target = &t, .body = "{\"kind\":\"result\"}",
				  .idempotency_key = "k123"};
	assert_int_equal(target_send(&s, &err), 0);
	f = fopen(out, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "{\"kind\":\"result\"}\n");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "k123\n");
	fclose(f);

	setenv("FAIL", "1", 1);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	unsetenv("FAIL");
	assert_non_null(strstr(err.msg, "exit status 4"));
	assert_non_null(strstr(err.msg, "receiver down"));
	/* Its own "no": a sure failure. */
	assert_false(err.ambiguous);

	/* Killed by the timeout after it started: it may have acted. */
	char *slow[] = {"sleep", "5", NULL};
	t.argv = slow;
	t.timeout_ms = 1000; /* room to have started it on a loaded machine */
	sc_err_clear(&err);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_non_null(strstr(err.msg, "timed out"));
	assert_true(err.ambiguous);

	/* Could not be started: nothing ran, a sure failure. */
	char *none[] = {"/nonexistent/surecron-no-such-program", NULL};
	t.argv = none;
	sc_err_clear(&err);
	assert_int_equal(target_send(&s, &err), SC_EDELIVERY);
	assert_false(err.ambiguous);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(message_object_shape),
		cmocka_unit_test(chat_text_and_notice_format),
		cmocka_unit_test(keys_and_signatures),
		cmocka_unit_test_setup(webhook_posts_signed_object, reset),
		cmocka_unit_test_setup(webhook_failures_carry_status_and_excerpt, reset),
		cmocka_unit_test_setup(slack_posts_text, reset),
		cmocka_unit_test(file_appends_lines_0600),
		cmocka_unit_test(command_gets_message_on_stdin),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
