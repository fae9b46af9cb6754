/*
 * test_url.c - the one URL rule (url.h), judged against libcurl's and
 * libpq's own parsers as oracles (linked here directly, not through the
 * library's lazily loaded tables), and the proof that a refused URL is
 * refused before any connection: each refused URL that could be sent
 * points at a plain TCP listener on 127.0.0.1, which must see no
 * connection. A refused URL that names another host uses the reserved
 * .invalid domain (RFC 2606), which never resolves, and must fail with the
 * rule's SC_EINVAL, not with a resolver error. Nothing leaves the machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "http.h"
#include "store.h"
#include "target.h"
#include "task.h"
#include "testutil.h"
#include "url.h"

/* ---- a listener that only counts connections ---- */

static int lfd = -1;
static int lport;

static int setup_listener(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	lport = ntohs(a.sin_port);
	return 0;
}

static int teardown_listener(void **state)
{
	close(lfd);
	lfd = -1;
	return 0;
}

/*
 * Connections that reached the listener since the last call. The calls
 * under test are synchronous: a connect they made has completed (the
 * kernel queued it) before they returned, so looking without waiting is
 * exact.
 */
static int connections(void)
{
	int n = 0;
	struct pollfd p = {.fd = lfd, .events = POLLIN};

	while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0)
			break;
		close(c);
		n++;
	}
	return n;
}

/*
 * Waits up to 30 s for one connection, takes it and closes it; *arg
 * counts it. The request it answers has connected before the close, so
 * the count is exact once the thread is joined.
 */
static void *accept_one(void *arg)
{
	int *taken = arg;
	struct pollfd p = {.fd = lfd, .events = POLLIN};

	if (poll(&p, 1, 30000) == 1 && (p.revents & POLLIN)) {
		int c = accept(lfd, NULL, NULL);
		if (c >= 0) {
			close(c);
			(*taken)++;
		}
	}
	return NULL;
}

/* fmt with its "PORT" replaced by the listener's port. */
static const char *at_listener(const char *fmt)
{
	static char url[256];
	const char *p = strstr(fmt, "PORT");

	assert_non_null(p);
	snprintf(url, sizeof(url), "%.*s%d%s", (int)(p - fmt), fmt, lport,
		 p + 4);
	return url;
}

/* ---- the oracle: libcurl's own parse, flags as the send uses them ---- */

struct curl_view {
	bool ok;
	char scheme[16], host[256], port[16], path[512];
	bool has_user, has_password;
	char user[256], password[256];
};

static void copy_part(CURLU *u, CURLUPart part, char *out, size_t n,
		      bool *has)
{
	char *v = NULL;
	if (curl_url_get(u, part, &v, 0) == CURLUE_OK && v) {
		snprintf(out, n, "%s", v);
		if (has)
			*has = true;
	}
	curl_free(v);
}

static struct curl_view curl_view(const char *url)
{
	struct curl_view w = {0};
	CURLU *u = curl_url();

	assert_non_null(u);
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
		bool sch = false, host = false;
		copy_part(u, CURLUPART_SCHEME, w.scheme, sizeof(w.scheme), &sch);
		copy_part(u, CURLUPART_HOST, w.host, sizeof(w.host), &host);
		copy_part(u, CURLUPART_PORT, w.port, sizeof(w.port), NULL);
		copy_part(u, CURLUPART_PATH, w.path, sizeof(w.path), NULL);
		copy_part(u, CURLUPART_USER, w.user, sizeof(w.user),
			  &w.has_user);
		copy_part(u, CURLUPART_PASSWORD, w.password,
			  sizeof(w.password), &w.has_password);
		w.ok = sch && host;
	}
	curl_url_cleanup(u);
	return w;
}

/* The loopback hosts of the rule, written out independently. */
static bool oracle_loopback(const char *host)
{
	struct in_addr a4;
	if (strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0)
		return true;
	return strncmp(host, "127.", 4) == 0 && inet_pton(AF_INET, host, &a4);
}

static bool oracle_accepts(const struct curl_view *w, enum url_use use)
{
	bool https = strcmp(w->scheme, "https") == 0;
	bool http = strcmp(w->scheme, "http") == 0;

	if (!w->ok || (!http && !https) || w->has_user || w->has_password)
		return false;
	return use == URL_PLAIN || https || oracle_loopback(w->host);
}

/* Every property of one URL against the oracle. */
static void judge(const char *url)
{
	struct curl_view w = curl_view(url);
	char log[512], want[1200];

	for (int use = URL_PLAIN; use <= URL_SECRET; use++) {
		struct sc_err err = {0};
		int rc = url_check(url, (enum url_use)use, &err);
		bool want_ok = oracle_accepts(&w, (enum url_use)use);
		if ((rc == 0) != want_ok)
			fail_msg("%s (use %d): rc %d (%s), libcurl's parse "
				 "says %s", url, use, rc, err.msg,
				 want_ok ? "accept" : "refuse");
		if (rc)
			assert_int_equal(rc, SC_EINVAL);
		/* The refusal never quotes what libcurl would send. */
		if (w.has_password && strlen(w.password) >= 3 &&
		    !strstr(w.host, w.password) && strstr(err.msg, w.password))
			fail_msg("%s: message \"%s\" quotes the password",
				 url, err.msg);
	}
	url_for_log(url, false, log, sizeof(log));
	if (!w.ok)
		return;
	/* The log form is libcurl's scheme, host, port and path: nothing
	 * libcurl would send as user or password. */
	snprintf(want, sizeof(want), "%s://%s%s%s%s", w.scheme, w.host,
		 *w.port ? ":" : "", w.port, w.path);
	for (char *q = want; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	assert_string_equal(log, want);
	if (w.has_user && *w.user) {
		char ui[600];
		snprintf(ui, sizeof(ui), "%s%s%s@", w.user,
			 w.has_password ? ":" : "", w.password);
		assert_null(strstr(log, ui));
	}
}

/* ---- the rule, row by row ---- */

static void rule_rows(void **state)
{
	static const struct {
		const char *url;
		enum url_use use;
		int rc;
	} rows[] = {
		{"https://hooks.example.com/x", URL_SECRET, 0},
		{"HTTPS://hooks.example.com/x", URL_SECRET, 0},
		{"http://127.0.0.1:8080/x", URL_SECRET, 0},
		{"http://127.5.6.7/x", URL_SECRET, 0},
		{"http://0x7f.1/x", URL_SECRET, 0}, /* libcurl: 127.0.0.1 */
		{"http://localhost:9/x", URL_SECRET, 0},
		{"http://LOCALHOST/x", URL_SECRET, 0},
		{"http://[::1]:8080/x", URL_SECRET, 0},
		{"http://api.example.com/x", URL_PLAIN, 0},
		{"http://hooks.example.com/x", URL_SECRET, SC_EINVAL},
		{"http://128.0.0.1/x", URL_SECRET, SC_EINVAL},
		{"http://localhost./x", URL_SECRET, SC_EINVAL},
		{"http://localhost.evil.com/x", URL_SECRET, SC_EINVAL},
		{"http://127.0.0.1.evil.com/x", URL_SECRET, SC_EINVAL},
		{"http://[::ffff:127.0.0.1]/x", URL_SECRET, SC_EINVAL},
		/* The issue's cases: the "loopback" is the user name. */
		{"http://127.0.0.1:@idp.example/token", URL_SECRET, SC_EINVAL},
		{"http://127.0.0.1:@idp.example/token", URL_PLAIN, SC_EINVAL},
		{"http://localhost:x@10.0.0.1/", URL_SECRET, SC_EINVAL},
		{"http://localhost:x@10.0.0.1/", URL_PLAIN, SC_EINVAL},
		/* One and three slashes: libcurl reads user:password. */
		{"https:/alice:pw@host/x", URL_SECRET, SC_EINVAL},
		{"https:///alice:pw@host", URL_SECRET, SC_EINVAL},
		{"https://alice:pw@host/x", URL_PLAIN, SC_EINVAL},
		{"https://alice@host/x", URL_PLAIN, SC_EINVAL},
		{"https://:@host/x", URL_PLAIN, SC_EINVAL},
		{"https://@host/x", URL_PLAIN, SC_EINVAL},
		{"http://user:pw@127.0.0.1/x", URL_SECRET, SC_EINVAL},
		{"https://host/x?u=a:b@c#@d", URL_SECRET, 0},
		{"ftp://127.0.0.1/x", URL_PLAIN, SC_EINVAL},
		{"file:///etc/passwd", URL_PLAIN, SC_EINVAL},
		{"host.example/x", URL_PLAIN, SC_EINVAL},
		{"not a url", URL_PLAIN, SC_EINVAL},
		{"", URL_PLAIN, SC_EINVAL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sc_err err = {0};
		int rc = url_check(rows[i].url, rows[i].use, &err);
		if (rc != rows[i].rc)
			fail_msg("%s: rc %d (%s), want %d", rows[i].url, rc,
				 err.msg, rows[i].rc);
		assert_null(strstr(err.msg, "pw"));
		assert_null(strstr(err.msg, "alice"));
		judge(rows[i].url);
	}
	assert_int_equal(url_check(NULL, URL_PLAIN, NULL), SC_EINVAL);
}

/* Every combination of the parts that fooled the old string tests,
 * judged against libcurl's parse. */
static void rule_matches_libcurl(void **state)
{
	static const char *const schemes[] = {"http:", "https:", "HtTp:",
					      "ftp:"};
	static const char *const slashes[] = {"", "/", "//", "///", "////"};
	static const char *const infos[] = {
		"", "u@", "u:p@", ":@", "@", "127.0.0.1:@", "localhost:x@",
		"a%40b:c@", "u:p@@", "[::1]@"};
	static const char *const hosts[] = {
		"127.0.0.1", "localhost", "[::1]", "idp.invalid", "10.0.0.1",
		"0x7f.1", "127.1", "LocalHost", "[::1%25lo]", ""};
	static const char *const tails[] = {"", ":8080", "/x", ":1/a@b",
					    "?q=u:p@h", "#@evil.invalid/",
					    "\\@evil.invalid/"};
	char url[256];
	int n = 0;

	for (size_t a = 0; a < 4; a++)
		for (size_t b = 0; b < 5; b++)
			for (size_t c = 0; c < 10; c++)
				for (size_t d = 0; d < 10; d++)
					for (size_t e = 0; e < 7; e++) {
						snprintf(url, sizeof(url),
							 "%s%s%s%s%s",
							 schemes[a], slashes[b],
							 infos[c], hosts[d],
							 tails[e]);
						judge(url);
						n++;
					}
	print_message("judged %d URLs against libcurl's parser\n", n);
}

static void log_form(void **state)
{
	static const struct {
		const char *url;
		bool hide;
		const char *want;
	} rows[] = {
		{"https://u:pw@h.example:8443/p/q?k=v#f", false,
		 "https://h.example:8443/p/q"},
		{"https:/alice:pw@host/x", false, "https://host/x"},
		{"https:///alice:pw@host", false, "https://host/"},
		{"http://127.0.0.1:@idp.example/token", false,
		 "http://idp.example/token"},
		{"https://hooks.example/services/T0/B0/XYZ", true,
		 "https://hooks.example/..."},
		{"https://hooks.example/", true, "https://hooks.example/"},
		{"ftp://u:pw@files.example/f", false, "ftp://files.example/f"},
		{"not a url", false, "(invalid URL)"},
		{"http://h/\x1b[2J", false, "(invalid URL)"},
	};
	char out[128], tiny[12];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_string_equal(url_for_log(rows[i].url, rows[i].hide, out,
						sizeof(out)),
				    rows[i].want);
	assert_string_equal(url_for_log(NULL, false, out, sizeof(out)),
			    "(invalid URL)");
	assert_string_equal(url_for_log("https://host.example/x", false, tiny,
					sizeof(tiny)),
			    "https://hos");
}

/* ---- refused before any connection ---- */

/* http_do: userinfo never, whatever the slashes, and the secret rules. */
static void http_do_refuses_before_connecting(void **state)
{
	static const char *const plain[] = {
		"http://user:pw@127.0.0.1:PORT/x",
		"http:/user:pw@127.0.0.1:PORT/x",
		"http:///user:pw@127.0.0.1:PORT/x",
		"https:/alice:pw@127.0.0.1:PORT/x",
		"https:///alice:pw@127.0.0.1:PORT",
		"http://127.0.0.1:@127.0.0.1:PORT/token",
		"http://@127.0.0.1:PORT/",
	};
	struct http_options opt = {.timeout_ms = 2000,
				   .connect_timeout_ms = 2000};
	struct sc_err err = {0};
	struct http_client *c = http_client_new(&opt, &err);

	assert_non_null(c);
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		const char *url = at_listener(plain[i]);
		struct http_request req = {.url = url};
		sc_err_clear(&err);
		int rc = http_do(c, &req, NULL, &err);
		if (rc != SC_EINVAL)
			fail_msg("%s: rc %d (%s)", url, rc, err.msg);
		assert_int_equal(connections(), 0);
		assert_null(strstr(err.msg, "pw"));
		assert_null(strstr(err.msg, "user:"));
		assert_non_null(strstr(err.msg, "user name or password"));
	}
	/* A secret to another host over plain http: the rule refuses it,
	 * so it never gets as far as the resolver. */
	struct http_request sec[] = {
		{.url = "http://idp.invalid/token", .carries_secret = true},
		{.url = "http://hooks.invalid/x", .url_is_secret = true},
	};
	for (size_t i = 0; i < 2; i++) {
		sc_err_clear(&err);
		assert_int_equal(http_do(c, &sec[i], NULL, &err), SC_EINVAL);
		assert_non_null(strstr(err.msg, "plain http is only allowed"));
	}
	/* The same listener, a clean URL: the request does connect, which
	 * shows the counting works. A thread takes that one connection and
	 * closes it, so the request ends at once on the empty reply; a short
	 * timeout instead could expire before the connect on a loaded
	 * machine and fail the control for the wrong reason. */
	struct http_request ok = {.url = at_listener("http://127.0.0.1:PORT/"),
				  .timeout_ms = 30000};
	pthread_t th;
	int taken = 0;
	assert_int_equal(pthread_create(&th, NULL, accept_one, &taken), 0);
	sc_err_clear(&err);
	assert_int_not_equal(http_do(c, &ok, NULL, &err), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(taken, 1);
	assert_int_equal(connections(), 0);
	http_client_free(c);
}

/* The token fetch: a client secret never goes to a refused token_url. */
static void token_url_refused_before_connecting(void **state)
{
	static const char *const urls[] = {
		"http://127.0.0.1:@127.0.0.1:PORT/token",
		"http://localhost:x@127.0.0.1:PORT/token",
		"https:/alice:pw@127.0.0.1:PORT/token",
		"http://idp.invalid:PORT/token",
	};
	setenv("TEST_URL_SECRET", "s3cr3t-client", 1);
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		char url[256];
		snprintf(url, sizeof(url), "%s", at_listener(urls[i]));
		struct auth_spec as = {.name = "idp", .kind = AUTH_OAUTH2,
				       .token_url = url, .client_id = "app",
				       .client_secret_env = "TEST_URL_SECRET"};
		struct sc_err err = {0};
		struct http_auth *a = http_auth_new(&as, NULL, NULL, &err);
		assert_null(a);
		assert_int_equal(err.code, SC_ECONFIG);
		assert_null(strstr(err.msg, "s3cr3t"));

		/* The same through an http task whose provider is built for
		 * the run: a permanent config failure, nothing sent. */
		struct config cfg = {.auths = &as, .n_auths = 1};
		struct task_spec t = {.name = "q", .kind = TASK_HTTP,
				      .url = (char *)at_listener(
					      "http://127.0.0.1:PORT/api"),
				      .auth = "idp", .timeout_ms = 2000};
		struct task_ctx ctx = {.config = &cfg};
		struct task_result r = {0};
		assert_int_not_equal(task_http_run(&t, &ctx, &r), 0);
		assert_int_equal(r.outcome, TASK_FAILED);
		assert_true(r.err.permanent);
		assert_int_equal(connections(), 0);
		task_result_dispose(&r);
	}
	unsetenv("TEST_URL_SECRET");
}

/* http tasks: userinfo refused, auth over plain http to another host
 * refused; both permanent, nothing sent. */
static void http_task_refused_before_connecting(void **state)
{
	static const struct {
		const char *url;
		bool auth;
	} rows[] = {
		{"http://user:pw@127.0.0.1:PORT/api", false},
		{"https:/user:pw@127.0.0.1:PORT/api", false},
		{"http://api.invalid:PORT/api", true},
	};
	struct auth_spec as = {.name = "b", .kind = AUTH_BEARER,
			       .token_env = "TEST_URL_BEARER"};
	struct config cfg = {.auths = &as, .n_auths = 1};

	setenv("TEST_URL_BEARER", "bearer-XYZ", 1);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char url[256];
		snprintf(url, sizeof(url), "%s", at_listener(rows[i].url));
		struct task_spec t = {.name = "q", .kind = TASK_HTTP,
				      .url = url, .timeout_ms = 2000,
				      .auth = rows[i].auth ? "b" : NULL};
		struct task_ctx ctx = {.config = &cfg};
		struct task_result r = {0};
		assert_int_equal(task_http_run(&t, &ctx, &r), SC_ECONFIG);
		assert_true(r.err.permanent);
		assert_null(strstr(r.err.msg, "pw"));
		assert_null(strstr(r.err.msg, "bearer-XYZ"));
		assert_int_equal(connections(), 0);
		task_result_dispose(&r);
	}
	unsetenv("TEST_URL_BEARER");
}

/* Webhook and chat URLs from url_env: refused at send, nothing sent. */
static void webhook_refused_before_connecting(void **state)
{
	static const char *const urls[] = {
		"https:/alice:pw@127.0.0.1:PORT/hook",
		"https:///alice:pw@127.0.0.1:PORT",
		"http://127.0.0.1:@127.0.0.1:PORT/hook",
		"http://hooks.invalid:PORT/hook",
	};
	struct target_spec t = {.name = "hook", .kind = TARGET_WEBHOOK,
				.url_env = "TEST_URL_HOOK", .timeout_ms = 2000};
	struct target_spec s = {.name = "chat", .kind = TARGET_SLACK,
				.url_env = "TEST_URL_HOOK", .timeout_ms = 2000};

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		setenv("TEST_URL_HOOK", at_listener(urls[i]), 1);
		for (int k = 0; k < 2; k++) {
			struct target_copy d = {
				.target = k ? &s : &t,
				.body = "{\"text\":\"hi\"}",
				.idempotency_key = "k"};
			struct sc_err err = {0};
			assert_int_equal(target_send(&d, &err), SC_ECONFIG);
			assert_null(strstr(err.msg, "alice"));
			assert_null(strstr(err.msg, "pw"));
			assert_int_equal(connections(), 0);
		}
	}
	unsetenv("TEST_URL_HOOK");
}

/* ---- store URLs, judged by libpq ---- */

/* What libpq itself reads as a password-ish option in url. */
static bool libpq_sets_secret(const char *url)
{
	char *msg = NULL;
	PQconninfoOption *o = PQconninfoParse(url, &msg);
	bool set = false;

	if (!o) {
		PQfreemem(msg);
		return false;
	}
	for (PQconninfoOption *p = o; p->keyword; p++)
		if (p->val && (strstr(p->keyword, "pass") ||
			       strstr(p->keyword, "secret")))
			set = true;
	PQconninfoFree(o);
	return set;
}

static void store_rule(void **state)
{
	static const struct {
		const char *url;
		int rc;
	} rows[] = {
		{"postgres://db.internal/surecron", 0},
		{"postgresql://u@db/s?sslmode=require", 0},
		{"postgresql://postgres@127.0.0.1:5432/postgres", 0},
		{"postgres://app:hunter2@db/surecron", SC_EINVAL},
		/* The issue's bypasses: libpq decodes the key, and reads
		 * user "h?x" with password "pw". */
		{"postgresql://db/x?pass%77ord=hunter2", SC_EINVAL},
		{"postgres://h?x:pw@db/x", SC_EINVAL},
		{"postgres://db/x?PASSWORD=a", SC_EINVAL}, /* libpq: unknown */
		{"postgres://db/x?passfile=/tmp/p", SC_EINVAL},
		{"postgres://db/x?sslpassword=k", SC_EINVAL},
		{"postgres://u:@db/x", 0}, /* libpq: no password set */
		{"postgres://db/x?%70assword=a", SC_EINVAL},
		{"sqlite:./x.db", SC_EINVAL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sc_err err = {0};
		int rc = url_check_store(rows[i].url, &err);
		if (rc != rows[i].rc)
			fail_msg("%s: rc %d (%s), want %d", rows[i].url, rc,
				 err.msg, rows[i].rc);
		/* libpq agrees: what is accepted sets no password. */
		if (rc == 0)
			assert_false(libpq_sets_secret(rows[i].url));
		assert_null(strstr(err.msg, "hunter2"));
		assert_null(strstr(err.msg, "pw"));
	}
}

/* The store layer applies the rule too: libpq never gets the URL. */
static void store_open_refuses_before_connecting(void **state)
{
	struct store *s = NULL;
	struct sc_err err = {0};

	assert_int_equal(store_open(at_listener("postgres://h?x:pw@127.0.0.1:"
						"PORT/x"),
				    sc_clock_real(), &s, &err),
			 SC_EINVAL);
	assert_null(s);
	assert_int_equal(connections(), 0);
	assert_int_equal(store_open(at_listener("postgresql://127.0.0.1:PORT/x?"
						"pass%77ord=pw"),
				    sc_clock_real(), &s, &err),
			 SC_EINVAL);
	assert_int_equal(connections(), 0);
}

/* ---- check: url_env values ---- */

static void check_judges_url_env(void **state)
{
	static const struct {
		const char *value;
		bool ok;
	} rows[] = {
		{"https://hooks.example/x", true},
		{"http://127.0.0.1:9/x", true},
		{"https:/alice:pw@hooks.example/x", false},
		{"https:///alice:pw@hooks.example", false},
		{"http://127.0.0.1:@hooks.example/x", false},
		{"http://hooks.example/x", false},
	};
	char dir[256], path[300];

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("store: sqlite:./x.db\n"
	      "targets:\n"
	      "  hook: {kind: webhook, url_env: TEST_URL_CHECK}\n"
	      "schedules:\n"
	      "  s:\n"
	      "    cron: \"0 3 * * *\"\n"
	      "    targets: [hook]\n"
	      "    tasks:\n"
	      "      - {name: a, command: [\"/bin/true\"]}\n",
	      f);
	fclose(f);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct config *c = NULL;
		struct config_problems probs = {0};
		char line[512];
		setenv("TEST_URL_CHECK", rows[i].value, 1);
		assert_int_equal(config_parse(path, &c, &probs), 0);
		int n = config_check(c, &probs);
		if ((n == 0) != rows[i].ok)
			fail_msg("%s: %d problems", rows[i].value, n);
		for (size_t j = 0; j < probs.n; j++) {
			config_problem_format(&probs, j, line, sizeof(line));
			assert_non_null(strstr(line, "targets.hook.url_env"));
			assert_null(strstr(line, "alice"));
			assert_null(strstr(line, "pw"));
		}
		config_problems_dispose(&probs);
		config_free(c);
	}
	unsetenv("TEST_URL_CHECK");
	tu_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rule_rows),
		cmocka_unit_test(rule_matches_libcurl),
		cmocka_unit_test(log_form),
		cmocka_unit_test(http_do_refuses_before_connecting),
		cmocka_unit_test(token_url_refused_before_connecting),
		cmocka_unit_test(http_task_refused_before_connecting),
		cmocka_unit_test(webhook_refused_before_connecting),
		cmocka_unit_test(store_rule),
		cmocka_unit_test(store_open_refuses_before_connecting),
		cmocka_unit_test(check_judges_url_env),
	};
	return cmocka_run_group_tests(tests, setup_listener, teardown_listener);
}
