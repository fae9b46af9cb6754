/*
 * test_secrets.c - the security rules end to end: secrets given through
 * environment variables are used (they reach the fake server where they
 * belong: Authorization headers, HMAC signatures, the secret webhook path)
 * and appear nowhere else: not in the stdout/stderr of any command, the
 * debug log of the daemon, the ledger, error messages, or any byte of any
 * file in the folder (the SQLite file and its -wal included). Files
 * surecron creates are 0600 even under umask 022.
 *
 * One exception, by design (docs/tasks.md, docs/operations.md "Backups"):
 * OAuth2 access tokens are cached in the store so they survive restarts,
 * in clear. They may appear in the database file and its -wal, which are
 * 0600, and nowhere else. Client secrets, bearer tokens, signing secrets
 * and webhook URLs never reach the store.
 *
 * The story, with real processes of $SURECRON_BIN and a real HTTP server:
 *   check; trigger report; run --once (oauth2 with a 401 that forces a
 *   refresh, a bearer task, the slack target failing once); trigger
 *   broken; the daemon (the slack retry, a failing run with its notices
 *   and its lost-slot alert, a second report slot with another 401);
 *   status, ledger, explain, http --auth, simulate (with and without
 *   --deliver); and, while the daemon runs, every endpoint of its web
 *   surface (the JSON API under /api/, its errors, /metrics, /healthz,
 *   the dashboard at /): no answer holds a secret or the web token. The error replies of the fake echo the credentials they
 *   got, as proxies and debug pages do, since their excerpts are quoted
 *   in errors. Along the way: a command runs without a shell (a "$VAR"
 *   argument arrives literally), and a task inherits no descriptor of
 *   the store or the file target.
 *
 * It runs on SQLite and, when a server is there, on PostgreSQL (then the
 * token cache is in the server and no file may hold a token at all).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <jansson.h>

#include "clock.h"
#include "message.h"
#include "fakes/fake_http.h"
#include "store.h"
#include "daemon_util.h"
#include "testutil.h"
#include "pg_fixture.h"

/* ---- the secrets ------------------------------------------------------ */

#define SLACK_PATH_SECRET "T0SEC/B0SEC/slackPathSecret5f1e9a"
#define HOOK_QUERY_SECRET "hookQuerySecret8c2d71"
#define HOOK_HMAC_SECRET "hmacSigningSecret3b9e04"
#define CLIENT_ID "surecron-e2e"
#define CLIENT_SECRET "oauthClientSecret7a61cf"
#define BEARER_TOKEN "bearerTaskToken42d0b8"
#define TASK_QUERY_SECRET "cfgQuerySecret19e3aa"
#define WEB_TOKEN "webApiToken6e02ad"
/* Access tokens the fake token endpoint hands out, in order; the last
 * one is its default answer. */
static const char *const access_tokens[] = {
	"accessTokenOne1f0c3e", "accessTokenTwo2e91d4",
	"accessTokenThree3ab87c", "accessTokenDefault4c6e02",
};
#define N_ACCESS (sizeof(access_tokens) / sizeof(access_tokens[0]))

enum where { ANYWHERE_FORBIDDEN, STORE_ALLOWED, NOT_IN_CONFIG };

struct needle {
	char label[48];
	char value[256];
	enum where where;
};

static struct needle needles[32];
static size_t n_needles;

static void add_needle(const char *label, const char *value, enum where w)
{
	assert_true(n_needles < sizeof(needles) / sizeof(needles[0]));
	struct needle *n = &needles[n_needles++];
	snprintf(n->label, sizeof(n->label), "%s", label);
	snprintf(n->value, sizeof(n->value), "%s", value);
	n->where = w;
}

static void base64(const char *in, char *out, size_t n)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		"0123456789+/";
	const unsigned char *p = (const unsigned char *)in;
	size_t len = strlen(in), o = 0;

	for (size_t i = 0; i < len && o + 5 < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		out[o++] = tbl[(v >> 18) & 63];
		out[o++] = tbl[(v >> 12) & 63];
		out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? tbl[v & 63] : '=';
	}
	out[o] = '\0';
}

/* Fails the test, naming the secret and the place, when any secret that
 * is forbidden there occurs in the n bytes at p. */
static void assert_clean_bytes(const char *where, const void *p, size_t n,
			       bool is_store, bool is_config)
{
	for (size_t i = 0; i < n_needles; i++) {
		const struct needle *nd = &needles[i];
		if ((nd->where == STORE_ALLOWED && is_store) ||
		    (nd->where == NOT_IN_CONFIG && is_config))
			continue;
		if (memmem(p, n, nd->value, strlen(nd->value)))
			fail_msg("secret %s (%s) leaked into %s", nd->label,
				 nd->value, where);
	}
}

static void assert_clean(const char *where, const char *s)
{
	assert_clean_bytes(where, s, strlen(s), false, false);
}

/* ---- helpers ---------------------------------------------------------- */

struct env {
	char dir[256];
	char cfg[512];
	char store_url[600];
	struct fake_http *srv;
};

static int64_t now_ms(void)
{
	return tu_now_ms();
}

static void sleep_ms(int64_t ms)
{
	tu_sleep_ms(ms);
}

static char out[1 << 18], errb[1 << 18];

/* Runs surecron with args (NULL-ended) in the temp folder; every byte it
 * printed is checked for secrets. Returns its exit status. */
static int run(const struct env *e, const char *const *args)
{
	char what[256];
	int rc = tu_run_bin(e->dir, e->dir, NULL, args, out, sizeof(out),
			    errb, sizeof(errb));

	snprintf(what, sizeof(what), "stdout of `surecron %s %s`", args[0],
		 args[1] ? args[1] : "");
	assert_clean(what, out);
	snprintf(what, sizeof(what), "stderr of `surecron %s %s`", args[0],
		 args[1] ? args[1] : "");
	assert_clean(what, errb);
	return rc;
}

static pid_t daemon_pid;

static int reap(void **state)
{
	(void)state;
	if (daemon_pid > 0 && waitpid(daemon_pid, NULL, WNOHANG) == 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	daemon_pid = 0;
	return 0;
}

static pid_t start_daemon(const struct env *e)
{
	/* Only 0-2 from this harness (as systemd would): any other
	 * descriptor a task sees is the daemon's own. */
	pid_t pid = tu_start_daemon(e->dir, e->cfg, NULL,
				    TU_STDOUT_TO_LOG | TU_ONLY_STDIO);
	daemon_pid = pid;
	return pid;
}

static int wait_exit(pid_t pid, int64_t timeout_ms)
{
	return tu_wait_exit(pid, timeout_ms);
}

static struct store *open_store(const struct env *e)
{
	return tu_store_open(e->store_url);
}

/* Ledger rows of schedule (NULL: all) with outcome (NULL: any). */
static size_t ledger_count(const struct env *e, const char *schedule,
			   const char *outcome)
{
	return tu_ledger_count(e->store_url, schedule, outcome);
}

static bool wait_ledger(const struct env *e, const char *schedule,
			const char *outcome, size_t n, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (now_ms() < end) {
		if (ledger_count(e, schedule, outcome) >= n)
			return true;
		sleep_ms(20);
	}
	return false;
}

static bool file_has(const struct env *e, const char *name, const char *s)
{
	char p[512];
	static char buf[1 << 20];

	snprintf(p, sizeof(p), "%s/%s", e->dir, name);
	tu_slurp(p, buf, sizeof(buf));
	return strstr(buf, s) != NULL;
}

static bool wait_file_has(const struct env *e, const char *name,
			  const char *s, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (now_ms() < end) {
		if (file_has(e, name, s))
			return true;
		sleep_ms(20);
	}
	return false;
}

static mode_t mode_of(const struct env *e, const char *name)
{
	char p[512];
	struct stat sb;

	snprintf(p, sizeof(p), "%s/%s", e->dir, name);
	if (stat(p, &sb) != 0)
		fail_msg("%s does not exist", name);
	return sb.st_mode & 07777;
}

/* Every regular file under dir: no group or other bits, and no secret
 * in its bytes (access tokens allowed in the store's files only). */
static size_t scan_dir(const char *dir, const char *rel)
{
	char path[1024];
	size_t n_files = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s%s%s", dir, *rel ? "/" : "", rel);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char child[1024], relc[512], full[1024];
		struct stat sb;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(relc, sizeof(relc), "%s%s%s", rel, *rel ? "/" : "",
			 de->d_name);
		snprintf(full, sizeof(full), "%s/%s", dir, relc);
		if (lstat(full, &sb) != 0)
			continue; /* gone meanwhile (a -shm at close) */
		if (S_ISDIR(sb.st_mode)) {
			n_files += scan_dir(dir, relc);
			continue;
		}
		if (!S_ISREG(sb.st_mode))
			continue;
		if (sb.st_mode & 077)
			fail_msg("%s has mode %04o, not 0600", relc,
				 (unsigned)(sb.st_mode & 07777));
		FILE *f = fopen(full, "rb");
		assert_non_null(f);
		char *buf = malloc((size_t)sb.st_size + 1);
		assert_non_null(buf);
		size_t got = fread(buf, 1, (size_t)sb.st_size, f);
		fclose(f);
		bool is_store = strncmp(de->d_name, "s.db", 4) == 0;
		snprintf(child, sizeof(child), "file %s", relc);
		assert_clean_bytes(child, buf, got, is_store,
				   strcmp(relc, "surecron.yaml") == 0);
		free(buf);
		n_files++;
	}
	closedir(d);
	return n_files;
}

/* The value of header name of the i-th request to path. */
static bool header_of(struct fake_http *srv, const char *path, long i,
		      const char *name, char *val, size_t n)
{
	struct fake_request r;
	bool ok = fake_http_request(srv, path, i, &r) &&
		  fake_request_header(&r, name, val, n);
	fake_request_dispose(&r);
	return ok;
}

/* ---- the web surface ------------------------------------------------- */

/* A port nobody listens on now (bound then released). */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

struct web_body {
	char buf[1 << 18];
	size_t len;
};

static size_t web_data(char *p, size_t size, size_t n, void *ud)
{
	struct web_body *b = ud;
	size_t k = size * n;

	if (b->len + k >= sizeof(b->buf))
		return 0;
	memcpy(b->buf + b->len, p, k);
	b->len += k;
	b->buf[b->len] = '\0';
	return k;
}

static struct web_body web_resp;

/* GET (post NULL) or POST of path on the daemon's web port, with the
 * token when token is true; every byte of the answer, headers included,
 * is checked for secrets. Returns the status; the body is in web_resp. */
static long web_req(int port, const char *path, const char *post,
		    bool token)
{
	char url[1024], what[1200];
	struct web_body head = {.len = 0};
	struct curl_slist *h = NULL;
	long status = 0;
	CURL *c = curl_easy_init();

	assert_non_null(c);
	web_resp.len = 0;
	web_resp.buf[0] = '\0';
	head.buf[0] = '\0';
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, web_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &web_resp);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, web_data);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &head);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
	if (token)
		h = curl_slist_append(h, "Authorization: Bearer " WEB_TOKEN);
	if (post)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s: %s", path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	snprintf(what, sizeof(what), "the answer to %s %s", post ? "POST" :
		 "GET", path);
	assert_clean(what, head.buf);
	assert_clean(what, web_resp.buf);
	return status;
}

/* Every endpoint of the web surface, its answers and its errors, while
 * the daemon runs after a lost slot of `broken` and two of `report`. */
static void web_all_clean(int port)
{
	char path[512], body[512];

	/* Reading: every schedule, one, the ledger, the lost report. */
	static const char *const gets[] = {
		"/api/schedules", "/api/schedules/report",
		"/api/schedules/broken", "/api/ledger",
		"/api/ledger?schedule=broken&limit=5000", "/api/lost",
		"/api/lost?schedule=broken&since=3650d",
		"/api/slots/report/2026-03-06T08:00:00Z", "/metrics",
		"/healthz", "/",
		/* Errors. */
		"/api/schedules/nope", "/api/ledger?outcome=nope",
		"/api/lost?since=" SLACK_PATH_SECRET, "/api/nope", "/nope"};
	for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++)
		assert_true(web_req(port, gets[i], NULL, false) > 0);
	assert_int_equal(web_req(port, "/api/schedules", NULL, false), 200);
	assert_non_null(strstr(web_resp.buf, "\"broken\""));

	/* The lost slot: its view, then the actions on it. */
	assert_int_equal(web_req(port, "/api/lost?schedule=broken", NULL,
				 false), 200);
	json_t *lost = json_loads(web_resp.buf, 0, NULL);
	assert_non_null(lost);
	json_t *row = json_array_get(json_object_get(lost, "rows"), 0);
	json_int_t slot = json_integer_value(json_object_get(row, "slot_ms"));
	json_int_t job = json_integer_value(json_object_get(row, "job"));
	json_decref(lost);
	assert_true(slot > 0 && job > 0);
	snprintf(path, sizeof(path), "/api/slots/broken/%lld", (long long)slot);
	assert_int_equal(web_req(port, path, NULL, false), 200);
	assert_non_null(strstr(web_resp.buf, "\"kind\":\"webhook\""));
	snprintf(path, sizeof(path), "/api/slots/report/%lld", (long long)slot);
	assert_int_equal(web_req(port, path, NULL, false), 200);

	/* Acting: refused ones first (no token, malformed, unknown, state),
	 * then ack, which closes the alert. */
	snprintf(body, sizeof(body), "{\"schedule\": \"broken\", \"slot\": "
		 "%lld, \"target\": \"hook\", \"decision\": \"arrived\"}",
		 (long long)slot);
	assert_int_equal(web_req(port, "/api/release", body, false), 401);
	/* The task failed: nothing was composed, so there is no send. */
	assert_int_equal(web_req(port, "/api/release", body, true), 404);
	assert_int_equal(web_req(port, "/api/retry", "{\"job\": ", true),
			 400);
	assert_int_equal(web_req(port, "/api/retry", "{\"job\": 99999}",
				 true), 404);
	assert_int_equal(web_req(port, "/api/trigger", "{\"schedule\": \""
				 SLACK_PATH_SECRET "\"}", true), 404);
	assert_int_equal(web_req(port, "/api/trigger", "{\"schedule\": "
				 "\"report\", \"slot\": "
				 "\"2026-03-06T08:00:00Z\"}", true), 409);
	snprintf(body, sizeof(body), "{\"schedule\": \"broken\", \"slot\": "
		 "%lld, \"note\": \"seen\"}", (long long)slot);
	assert_int_equal(web_req(port, "/api/ack", body, true), 200);
	assert_int_equal(web_req(port, "/api/schedules/broken", NULL, false),
			 200);
}

/* ---- the test --------------------------------------------------------- */

static void story(bool pg)
{
	struct env e;
	char url[512], v[512], want[512];

	umask(022); /* the code must set 0600 itself */
	memset(&e, 0, sizeof(e));
	snprintf(e.dir, sizeof(e.dir), "%s", tu_tmpdir());
	snprintf(e.cfg, sizeof(e.cfg), "%s/surecron.yaml", e.dir);
	if (pg)
		snprintf(e.store_url, sizeof(e.store_url), "%s", pgfx_url());
	else
		snprintf(e.store_url, sizeof(e.store_url), "sqlite:%s/s.db",
			 e.dir);
	e.srv = fake_http_start();
	assert_non_null(e.srv);
	struct fake_http *srv = e.srv;

	/* The secrets, in the environment every child inherits. */
	setenv("SEC_SLACK_URL",
	       fake_http_url(srv, "/services/" SLACK_PATH_SECRET, url,
			     sizeof(url)), 1);
	setenv("SEC_HOOK_URL",
	       fake_http_url(srv, "/hook?key=" HOOK_QUERY_SECRET, url,
			     sizeof(url)), 1);
	setenv("SEC_HOOK_SECRET", HOOK_HMAC_SECRET, 1);
	setenv("SEC_CLIENT_SECRET", CLIENT_SECRET, 1);
	setenv("SEC_BEARER", BEARER_TOKEN, 1);
	setenv("SEC_HTTP_TOKEN", WEB_TOKEN, 1);
	setenv("SURECRON_LOG", "debug", 1);
	unsetenv("SURECRON_ALERT_TARGETS");

	n_needles = 0;
	add_needle("slack webhook path", SLACK_PATH_SECRET, ANYWHERE_FORBIDDEN);
	add_needle("slack webhook path tail", "slackPathSecret5f1e9a",
		   ANYWHERE_FORBIDDEN);
	add_needle("webhook url query", HOOK_QUERY_SECRET, ANYWHERE_FORBIDDEN);
	add_needle("webhook hmac secret", HOOK_HMAC_SECRET, ANYWHERE_FORBIDDEN);
	add_needle("oauth2 client secret", CLIENT_SECRET, ANYWHERE_FORBIDDEN);
	base64(CLIENT_ID ":" CLIENT_SECRET, v, sizeof(v));
	add_needle("oauth2 basic credentials", v, ANYWHERE_FORBIDDEN);
	base64(CLIENT_SECRET, v, sizeof(v));
	add_needle("oauth2 client secret, base64", v, ANYWHERE_FORBIDDEN);
	add_needle("bearer token", BEARER_TOKEN, ANYWHERE_FORBIDDEN);
	base64(BEARER_TOKEN, v, sizeof(v));
	add_needle("bearer token, base64", v, ANYWHERE_FORBIDDEN);
	add_needle("web api token", WEB_TOKEN, ANYWHERE_FORBIDDEN);
	for (size_t i = 0; i < N_ACCESS; i++)
		add_needle("oauth2 access token", access_tokens[i],
			   STORE_ALLOWED);
	/* Not an environment secret, but URLs in messages lose their query
	 * (docs/tasks.md): only the config file may hold it. */
	add_needle("task url query", TASK_QUERY_SECRET, NOT_IN_CONFIG);

	/* The fake services. */
	char tokbody[256];
	for (size_t i = 0; i < N_ACCESS; i++) {
		snprintf(tokbody, sizeof(tokbody),
			 "{\"access_token\":\"%s\",\"token_type\":\"Bearer\","
			 "\"expires_in\":3600}", access_tokens[i]);
		if (i + 1 < N_ACCESS)
			fake_http_push(srv, "/token", 200,
				       "Content-Type: application/json",
				       tokbody, 0);
		else
			fake_http_set_default(srv, "/token", 200,
					      "Content-Type: application/json",
					      tokbody);
	}
	/* The first call with the first token: 401, refresh, resend. */
	fake_http_push(srv, "/api", 401,
		       "WWW-Authenticate: Bearer error=\"invalid_token\"",
		       "{\"error\":\"invalid_token\"}", 0);
	fake_http_set_default(srv, "/api", 200, "Content-Type: application/json",
			      "{\"summary\": \"quotes are up\"}");
	fake_http_set_default(srv, "/bearer", 200, "Content-Type: text/plain",
			      "models are fine");
	/* Error replies that echo what they were sent (proxies and debug
	 * pages do): their excerpts land in errors, so the credentials the
	 * request carried must not come back with them. */
	fake_http_set_default(srv, "/fail", 500, "Content-Type: text/plain",
			      "upstream broke; rejected Authorization: Bearer "
			      BEARER_TOKEN " for /fail?api_key="
			      TASK_QUERY_SECRET);
	/* The slack hook fails once: a delivery error names the target. */
	fake_http_push(srv, "/services/" SLACK_PATH_SECRET, 500, NULL,
		       "slack is down: no service at /services/"
		       SLACK_PATH_SECRET, 0);
	fake_http_set_default(srv, "/services/" SLACK_PATH_SECRET, 200, NULL,
			      "ok");
	fake_http_set_default(srv, "/hook", 200, NULL, "ok");

	char api[256], bearer[256], failurl[256], tokurl[256];
	fake_http_url(srv, "/api?market=kr", api, sizeof(api));
	fake_http_url(srv, "/bearer", bearer, sizeof(bearer));
	fake_http_url(srv, "/fail?api_key=" TASK_QUERY_SECRET, failurl,
		      sizeof(failurl));
	/* Some providers take a tenant or key in the token URL's query. */
	fake_http_url(srv, "/token?tenant=" TASK_QUERY_SECRET, tokurl,
		      sizeof(tokurl));

	int web_port = free_port();
	FILE *f = fopen(e.cfg, "w");
	assert_non_null(f);
	fprintf(f,
		"store: %s\n"
		"worker: {concurrency: 1, lease: 5s, grace: 1s}\n"
		"http: {listen: \"127.0.0.1:%d\", token_env: SEC_HTTP_TOKEN}\n"
		"targets:\n"
		"  chat: {kind: slack, url_env: SEC_SLACK_URL}\n"
		"  hook: {kind: webhook, url_env: SEC_HOOK_URL, "
		"secret_env: SEC_HOOK_SECRET}\n"
		"  archive: {kind: file, path: ./out/deliveries.jsonl}\n"
		"alerts: {targets: [chat, hook, archive]}\n"
		"auth:\n"
		"  broker: {kind: oauth2, token_url: \"%s\", client_id: %s, "
		"client_secret_env: SEC_CLIENT_SECRET, scope: quotes}\n"
		"  model: {kind: bearer, token_env: SEC_BEARER}\n"
		"schedules:\n"
		"  report:\n"
		"    cron: \"0 8 * * 5\"\n"
		"    tz: UTC\n"
		"    targets: [chat, hook, archive]\n"
		"    retry: {attempts: 3, backoff: fixed, delay: 300ms}\n"
		"    tasks:\n"
		"      - {name: quotes, http: {url: \"%s\", auth: broker}}\n"
		"      - {name: models, http: {url: \"%s\", auth: model}}\n"
		/* No shell unless asked: a shell would expand the variable
		 * into the result. */
		"      - {name: literal, command: [printf, \"%%s\", "
		"\"$SEC_BEARER `id`\"]}\n"
		/* What a task inherits: its pipes, never the store. */
		"      - {name: fds, command: [sh, -c, 'cd /proc/$$/fd && "
		"for f in *; do printf \"fd%%s=%%s \" $f \"$(readlink $f)\"; "
		"done']}\n"
		"  broken:\n"
		"    cron: \"0 9 * * 5\"\n"
		"    tz: UTC\n"
		"    targets: [chat, hook, archive]\n"
		"    retry: {attempts: 1, backoff: fixed, delay: 1s}\n"
		"    tasks:\n"
		"      - {name: upstream, http: {url: \"%s\", auth: model}}\n",
		e.store_url, web_port, tokurl, CLIENT_ID, api, bearer,
		failurl);
	fclose(f);
	chmod(e.cfg, 0600);
	char outdir[512];
	snprintf(outdir, sizeof(outdir), "%s/out", e.dir);
	assert_int_equal(mkdir(outdir, 0700), 0);

	/* ---- check, trigger, run --once ---- */
	const char *check[] = {"check", "--config", e.cfg, NULL};
	assert_int_equal(run(&e, check), 0);
	const char *trig_report[] = {"trigger", "--config", e.cfg, "report",
				     NULL};
	assert_int_equal(run(&e, trig_report), 0);
	const char *once[] = {"run", "--config", e.cfg, "--once", NULL};
	/* The slack target failed: the run failed, its retry waits. */
	assert_int_equal(run(&e, once), 1);
	assert_non_null(strstr(errb, "level=debug")); /* the level took */
	assert_true(ledger_count(&e, "report", LEDGER_FAILED) >= 1);

	/* The oauth2 task: the token endpoint got the client credentials as
	 * HTTP Basic, the API the first token, a 401, then the second. */
	assert_true(fake_http_count(srv, "/token") >= 2);
	assert_true(header_of(srv, "/token", 0, "Authorization", v, sizeof(v)));
	base64(CLIENT_ID ":" CLIENT_SECRET, want + 6, sizeof(want) - 6);
	memcpy(want, "Basic ", 6);
	assert_string_equal(v, want);
	assert_true(fake_http_count(srv, "/api") >= 2);
	assert_true(header_of(srv, "/api", 0, "Authorization", v, sizeof(v)));
	snprintf(want, sizeof(want), "Bearer %s", access_tokens[0]);
	assert_string_equal(v, want);
	assert_true(header_of(srv, "/api", 1, "Authorization", v, sizeof(v)));
	snprintf(want, sizeof(want), "Bearer %s", access_tokens[1]);
	assert_string_equal(v, want);
	/* The bearer task sent its token. */
	assert_true(header_of(srv, "/bearer", 0, "Authorization", v,
			      sizeof(v)));
	assert_string_equal(v, "Bearer " BEARER_TOKEN);

	/* ---- the daemon: the slack retry, a lost slot, a second 401 ---- */
	const char *trig_broken[] = {"trigger", "--config", e.cfg, "broken",
				     NULL};
	assert_int_equal(run(&e, trig_broken), 0);
	pid_t pid = start_daemon(&e);
	assert_true(wait_ledger(&e, "report", LEDGER_SUCCESS, 1, 10000));
	assert_true(wait_ledger(&e, "broken", LEDGER_LOST, 1, 10000));
	assert_true(wait_file_has(&e, "out/deliveries.jsonl",
				  "\"kind\":\"alert\"", 10000));
	assert_true(file_has(&e, "out/deliveries.jsonl",
			     "$SEC_BEARER `id`"));

	/* Another slot of report: the cached token now gets a 401. */
	size_t api_before = fake_http_count(srv, "/api");
	size_t tok_before = fake_http_count(srv, "/token");
	fake_http_push(srv, "/api", 401,
		       "WWW-Authenticate: Bearer error=\"invalid_token\"",
		       "{\"error\":\"invalid_token\"}", 0);
	const char *trig_again[] = {"trigger", "--config", e.cfg, "--slot",
				    "2026-03-06T08:00:00Z", "report", NULL};
	assert_int_equal(run(&e, trig_again), 0);
	assert_true(wait_ledger(&e, "report", LEDGER_SUCCESS, 2, 10000));
	/* That run's fds task: it listed its descriptors, and neither the
	 * store, the file target nor a connection was among them. */
	{
		char p[600], line[65536];
		bool found = false;
		snprintf(p, sizeof(p), "%s/out/deliveries.jsonl", e.dir);
		FILE *df = fopen(p, "r");
		assert_non_null(df);
		while (fgets(line, sizeof(line), df)) {
			if (!strstr(line, "\"slot\":\"2026-03-06T08:00:00Z\"") ||
			    !strstr(line, "\"kind\":\"result\""))
				continue;
			found = true;
			assert_non_null(strstr(line, "fd1=pipe:"));
			assert_null(strstr(line, "s.db"));
			assert_null(strstr(line, ".jsonl"));
			assert_null(strstr(line, "socket:"));
		}
		fclose(df);
		assert_true(found);
	}
	assert_int_equal(fake_http_count(srv, "/api"), api_before + 2);
	/* It started from the cached token (no fetch before the 401). */
	assert_true(header_of(srv, "/api", (long)api_before, "Authorization", v,
			      sizeof(v)));
	snprintf(want, sizeof(want), "Bearer %s", access_tokens[1]);
	assert_string_equal(v, want);
	assert_int_equal(fake_http_count(srv, "/token"), tok_before + 1);
	assert_true(header_of(srv, "/api", -1, "Authorization", v, sizeof(v)));
	snprintf(want, sizeof(want), "Bearer %s", access_tokens[2]);
	assert_string_equal(v, want);

	/* While it runs, the WAL and its index exist: 0600 like the file. */
	if (!pg) {
		assert_int_equal(mode_of(&e, "s.db"), 0600);
		assert_int_equal(mode_of(&e, "s.db-wal"), 0600);
		assert_int_equal(mode_of(&e, "s.db-shm"), 0600);
	}
	assert_int_equal(mode_of(&e, "out/deliveries.jsonl"), 0600);
	/* The token cache is where the docs say it is: the store. */
	struct store *s = open_store(&e);
	char *cached = NULL;
	int64_t exp_ms = 0;
	assert_int_equal(store_token_get(s, "broker", &cached, &exp_ms, NULL), 0);
	assert_string_equal(cached, access_tokens[2]);
	assert_true(exp_ms > now_ms());
	sc_free(cached);
	store_close(s);
	/* The web surface, every endpoint. */
	assert_true(tu_wait_log(e.dir, "event=http_started", 1, 10000));
	web_all_clean(web_port);
	/* Every byte while the daemon runs: the WAL holds the latest pages. */
	assert_true(scan_dir(e.dir, "") >= (pg ? 5u : 8u));

	kill(pid, SIGTERM);
	int st = wait_exit(pid, 10000);
	assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	daemon_pid = 0;

	/* What reached the receivers: the slack result at the secret path,
	 * signed webhooks with the query, a notice and an alert. */
	const char *slack = "/services/" SLACK_PATH_SECRET;
	assert_true(fake_http_count(srv, slack) >= 4);
	size_t n_hook = fake_http_count(srv, "/hook");
	assert_true(n_hook >= 4);
	bool saw_alert = false, saw_notice = false;
	for (size_t i = 0; i < n_hook; i++) {
		struct fake_request r;
		char sig[160], ts[32], mac[MESSAGE_KEY_MAX];
		assert_true(fake_http_request(srv, "/hook", (long)i, &r));
		assert_string_equal(r.query, "key=" HOOK_QUERY_SECRET);
		assert_true(fake_request_header(&r, "X-Surecron-Signature", sig,
						sizeof(sig)));
		assert_true(fake_request_header(&r, "X-Surecron-Timestamp", ts,
						sizeof(ts)));
		assert_int_equal(message_sign(HOOK_HMAC_SECRET,
					      strlen(HOOK_HMAC_SECRET), ts,
					      r.body, r.body_len, mac), 0);
		assert_string_equal(sig + strlen("sha256="), mac);
		assert_clean("a webhook body", r.body);
		saw_alert |= strstr(r.body, "\"alert\"") != NULL;
		saw_notice |= strstr(r.body, "\"failure_notice\"") != NULL;
		fake_request_dispose(&r);
	}
	assert_true(saw_alert);
	assert_true(saw_notice);
	for (size_t i = 0; i < fake_http_count(srv, slack); i++) {
		struct fake_request r;
		assert_true(fake_http_request(srv, slack, (long)i, &r));
		assert_clean("a slack body", r.body);
		fake_request_dispose(&r);
	}

	/* ---- the ledger: rows, errors, details ---- */
	s = open_store(&e);
	struct ledger_filter lf = {.since_ms = INT64_MIN, .until_ms = INT64_MAX};
	struct ledger_row *rows = NULL;
	size_t nr = 0;
	bool saw_500 = false, saw_slack_err = false;
	assert_int_equal(store_ledger_query(s, &lf, &rows, &nr, NULL), 0);
	assert_true(nr >= 4);
	for (size_t i = 0; i < nr; i++) {
		char what[128];
		snprintf(what, sizeof(what), "ledger row %zu error", i);
		assert_clean(what, rows[i].error_msg ? rows[i].error_msg : "");
		snprintf(what, sizeof(what), "ledger row %zu details", i);
		assert_clean(what, rows[i].details_json ? rows[i].details_json
							: "");
		const char *m = rows[i].error_msg ? rows[i].error_msg : "";
		if (strstr(m, "500") && strstr(m, "upstream broke"))
			saw_500 = true;
		if (strstr(m, "target chat") && strstr(m, "slack is down"))
			saw_slack_err = true;
	}
	store_ledger_rows_free(rows, nr);
	store_close(s);
	/* The errors are there, only without their secrets. */
	assert_true(saw_500);
	assert_true(saw_slack_err);

	/* ---- the other commands ---- */
	const char *status[] = {"status", "--config", e.cfg, NULL};
	assert_int_equal(run(&e, status), 0);
	const char *status_j[] = {"status", "--config", e.cfg, "--json", NULL};
	assert_int_equal(run(&e, status_j), 0);
	const char *ledger_j[] = {"ledger", "--config", e.cfg, "--json", NULL};
	assert_int_equal(run(&e, ledger_j), 0);
	assert_non_null(strstr(out, "lost"));
	const char *ledger_t[] = {"ledger", "--config", e.cfg, NULL};
	assert_int_equal(run(&e, ledger_t), 0);
	const char *lost[] = {"ledger", "--config", e.cfg, "--lost", "--json",
			      NULL};
	/* The lost slot was acknowledged through the web API. */
	assert_int_equal(run(&e, lost), 0);
	assert_non_null(strstr(out, "\"acked\": 1"));
	const char *explain[] = {"explain", "--config", e.cfg, "report", NULL};
	assert_int_equal(run(&e, explain), 0);
	const char *check2[] = {"check", e.cfg, NULL};
	assert_int_equal(run(&e, check2), 0);

	/* `surecron http`: fetches its own token (Basic credentials again),
	 * sends it; the bearer; a failing call's error without the query. */
	tok_before = fake_http_count(srv, "/token");
	const char *http_o[] = {"http", "--config", e.cfg, "--auth", "broker",
				"GET", api, NULL};
	assert_int_equal(run(&e, http_o), 0);
	assert_string_equal(out, "{\"summary\": \"quotes are up\"}");
	assert_int_equal(fake_http_count(srv, "/token"), tok_before + 1);
	assert_true(header_of(srv, "/api", -1, "Authorization", v, sizeof(v)));
	snprintf(want, sizeof(want), "Bearer %s", access_tokens[3]);
	assert_string_equal(v, want);
	/* A token reply without a token: the error names the endpoint
	 * without its query. */
	fake_http_push(srv, "/token", 200, "Content-Type: application/json",
		       "{\"error\":\"temporarily_unavailable\"}", 0);
	assert_int_equal(run(&e, http_o), 1);
	assert_non_null(strstr(errb, "no usable access_token"));
	assert_non_null(strstr(errb, "/token"));
	const char *http_b[] = {"http", "--config", e.cfg, "--auth", "model",
				"GET", bearer, NULL};
	assert_int_equal(run(&e, http_b), 0);
	assert_true(header_of(srv, "/bearer", -1, "Authorization", v,
			      sizeof(v)));
	assert_string_equal(v, "Bearer " BEARER_TOKEN);
	const char *http_f[] = {"http", "--config", e.cfg, "--auth", "model",
				"GET", failurl, NULL};
	assert_int_equal(run(&e, http_f), 75);
	assert_non_null(strstr(errb, "500"));

	/* simulate: a throw-away store in $TMPDIR (here: in the scanned
	 * folder), removed at exit; nothing of it may leak either. */
	char simtmp[600];
	const char *old_tmp = getenv("TMPDIR");
	char saved_tmp[512] = "";
	if (old_tmp)
		snprintf(saved_tmp, sizeof(saved_tmp), "%s", old_tmp);
	snprintf(simtmp, sizeof(simtmp), "%s/simtmp", e.dir);
	assert_int_equal(mkdir(simtmp, 0700), 0);
	setenv("TMPDIR", simtmp, 1);
	const char *sim[] = {"simulate", "--config", e.cfg, "--from",
			     "2026-03-06T07:00:00Z", "--until",
			     "2026-03-06T12:00:00Z", NULL};
	assert_int_equal(run(&e, sim), 0);
	const char *sim_j[] = {"simulate", "--config", e.cfg, "--from",
			       "2026-03-06T07:00:00Z", "--until",
			       "2026-03-06T12:00:00Z", "--json", NULL};
	assert_int_equal(run(&e, sim_j), 0);
	if (*saved_tmp)
		setenv("TMPDIR", saved_tmp, 1);
	else
		unsetenv("TMPDIR");
	assert_non_null(strstr(out, "\"failure_notice\""));
	size_t slack_before = fake_http_count(srv, slack);
	const char *sim_d[] = {"simulate", "--config", e.cfg, "--from",
			       "2026-03-06T07:00:00Z", "--until",
			       "2026-03-06T12:00:00Z", "--deliver", NULL};
	assert_int_equal(run(&e, sim_d), 0);
	assert_true(fake_http_count(srv, slack) > slack_before);
	DIR *sd = opendir(simtmp);
	assert_non_null(sd);
	struct dirent *sde;
	while ((sde = readdir(sd)) != NULL)
		if (strcmp(sde->d_name, ".") != 0 &&
		    strcmp(sde->d_name, "..") != 0)
			fail_msg("simulate left %s behind", sde->d_name);
	closedir(sd);

	/* ---- every byte of every file, and the modes ---- */
	assert_true(file_has(&e, "daemon.log", "level=debug"));
	assert_true(file_has(&e, "daemon.log", "token"));
	/* yaml, log, deliveries, .out, .err (and s.db) at least */
	size_t n_files = scan_dir(e.dir, "");
	assert_true(n_files >= (pg ? 5u : 6u));
	if (!pg)
		assert_int_equal(mode_of(&e, "s.db"), 0600);
	assert_int_equal(mode_of(&e, "out/deliveries.jsonl"), 0600);

	fake_http_stop(srv);
	tu_rmrf(e.dir);
}

/*
 * The daemon's auth providers are shared by its runs (daemon_auth.c): two
 * runs that need a token at once wait for one fetch; a token a run got
 * 401 with is fetched again once; after a reload the new providers use
 * the stored token, no fetch. Built per run, the first step alone would
 * fetch twice.
 */
static void shared_provider(void **state)
{
	(void)state;
	struct env e;
	char tokurl[256], api[256];

	memset(&e, 0, sizeof(e));
	snprintf(e.dir, sizeof(e.dir), "%s", tu_tmpdir());
	snprintf(e.cfg, sizeof(e.cfg), "%s/surecron.yaml", e.dir);
	snprintf(e.store_url, sizeof(e.store_url), "sqlite:%s/s.db", e.dir);
	struct fake_http *srv = fake_http_start();
	assert_non_null(srv);
	setenv("SEC_CLIENT_SECRET", CLIENT_SECRET, 1);
	unsetenv("SURECRON_ALERT_TARGETS");
	n_needles = 0;
	add_needle("oauth2 client secret", CLIENT_SECRET, ANYWHERE_FORBIDDEN);
	fake_http_set_default(srv, "/token", 200,
			      "Content-Type: application/json",
			      "{\"access_token\":\"sharedTokenA\","
			      "\"expires_in\":3600}");
	/* Held open, so both runs are inside the fetch together. */
	fake_http_set_delay(srv, "/token", 700);
	fake_http_set_default(srv, "/api", 200,
			      "Content-Type: application/json",
			      "{\"summary\": \"up\"}");
	fake_http_url(srv, "/token", tokurl, sizeof(tokurl));
	fake_http_url(srv, "/api", api, sizeof(api));
	FILE *f = fopen(e.cfg, "w");
	assert_non_null(f);
	fprintf(f,
		"store: %s\n"
		"worker: {concurrency: 2, lease: 5s, grace: 1s}\n"
		"targets:\n"
		"  archive: {kind: file, path: ./deliveries.jsonl}\n"
		"auth:\n"
		"  broker: {kind: oauth2, token_url: \"%s\", client_id: %s, "
		"client_secret_env: SEC_CLIENT_SECRET}\n"
		"schedules:\n"
		"  a: {cron: \"0 8 * * 5\", targets: [archive], tasks: "
		"[{name: q, http: {url: \"%s\", auth: broker}}]}\n"
		"  b: {cron: \"0 9 * * 5\", targets: [archive], tasks: "
		"[{name: q, http: {url: \"%s\", auth: broker}}]}\n",
		e.store_url, tokurl, CLIENT_ID, api, api);
	fclose(f);
	chmod(e.cfg, 0600);
	const char *ta[] = {"trigger", "--config", e.cfg, "a", NULL};
	const char *tb[] = {"trigger", "--config", e.cfg, "b", NULL};
	assert_int_equal(run(&e, ta), 0);
	assert_int_equal(run(&e, tb), 0);
	pid_t pid = start_daemon(&e);
	assert_true(wait_ledger(&e, "a", LEDGER_SUCCESS, 1, 10000));
	assert_true(wait_ledger(&e, "b", LEDGER_SUCCESS, 1, 10000));
	assert_int_equal(fake_http_count(srv, "/token"), 1);
	assert_int_equal(fake_http_count(srv, "/api"), 2);

	/* A 401 on the shared token: that run fetches once more. */
	fake_http_set_delay(srv, "/token", 0);
	fake_http_push(srv, "/api", 401,
		       "WWW-Authenticate: Bearer error=\"invalid_token\"",
		       "{\"error\":\"invalid_token\"}", 0);
	const char *ta2[] = {"trigger", "--config", e.cfg, "--slot",
			     "2026-03-06T08:00:00Z", "a", NULL};
	assert_int_equal(run(&e, ta2), 0);
	assert_true(wait_ledger(&e, "a", LEDGER_SUCCESS, 2, 10000));
	assert_int_equal(fake_http_count(srv, "/token"), 2);

	/* A reload makes new providers: they start from the stored token. */
	assert_int_equal(kill(pid, SIGHUP), 0);
	assert_true(wait_file_has(&e, "daemon.log", "event=reload outcome=ok", 10000));
	const char *tb2[] = {"trigger", "--config", e.cfg, "--slot",
			     "2026-03-06T09:00:00Z", "b", NULL};
	assert_int_equal(run(&e, tb2), 0);
	assert_true(wait_ledger(&e, "b", LEDGER_SUCCESS, 2, 10000));
	assert_int_equal(fake_http_count(srv, "/token"), 2);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(wait_exit(pid, 10000), 0);
	daemon_pid = 0;
	assert_int_equal(scan_dir(e.dir, "") > 0, 1); /* no secret in a file */
	fake_http_stop(srv);
	tu_rmrf(e.dir);
}

static void secrets_sqlite(void **state)
{
	(void)state;
	story(false);
}

/* The same on PostgreSQL: the token cache lives in the server, so no
 * file of the folder may hold an access token at all. */
static void secrets_pg(void **state)
{
	(void)state;
	PGFX_NEED_SERVER();
	story(true);
}

static int pg_teardown(void **state)
{
	reap(state);
	return pgfx_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(secrets_sqlite, reap),
		cmocka_unit_test_teardown(shared_provider, reap),
	};
	const struct CMUnitTest pg_tests[] = {
		cmocka_unit_test_setup_teardown(secrets_pg, pgfx_setup,
						pg_teardown),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests_name("secrets", tests, NULL, NULL);
	rc += cmocka_run_group_tests_name("secrets_pg", pg_tests,
					  pgfx_group_setup,
					  pgfx_group_teardown);
	curl_global_cleanup();
	return rc;
}
