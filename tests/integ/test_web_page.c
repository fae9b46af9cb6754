/*
 * test_web_page.c - the dashboard's files (issue 16) as a real `surecron
 * run` serves them: each at its address with its Content-Type and the
 * headers every response carries, byte for byte the files of src/web/assets/
 * (built into the binary by scripts/embed.sh), nothing else under their
 * names; and the rules that keep the page working under the server's
 * Content-Security-Policy (default-src 'self') and safe with hostile
 * data: no inline script, style or handler, no address off the host, and
 * no script that writes markup (innerHTML and its kin). The page in a
 * real browser is tests/browser/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_util.h"
#include "testutil.h"

#define PATIENCE_MS 30000
#define RESP_MAX (512 * 1024)

static char dir[256];
static int port;
static pid_t daemon_pid;
static char *resp;

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

/* One HTTP/1.0 request; the whole response into resp (RESP_MAX). Returns
 * the status, or -1 when the connection failed. *len: the bytes read. */
static int http_req(const char *method, const char *path, size_t *len)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	char req[1024];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	resp[0] = '\0';
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: "
			 "127.0.0.1:%d\r\nContent-Length: 0\r\n\r\n",
			 method, path, port);
	assert_true(n > 0 && (size_t)n < sizeof(req));
	assert_int_equal(write(fd, req, (size_t)n), n);
	for (;;) {
		ssize_t r = read(fd, resp + got, RESP_MAX - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		assert_true(got < RESP_MAX - 1);
	}
	resp[got] = '\0';
	close(fd);
	if (len)
		*len = got;
	int status = -1;
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

/* The body of resp, and its length from the bytes read. */
static const char *body_of(size_t got, size_t *n)
{
	const char *b = strstr(resp, "\r\n\r\n");
	assert_non_null(b);
	b += 4;
	*n = got - (size_t)(b - resp);
	return b;
}

/* A whole file of src/web/ (the tests run from the source tree's root),
 * malloc'ed, NUL-terminated; *n its length. */
static char *read_source(const char *name, size_t *n)
{
	char p[256];
	snprintf(p, sizeof(p), "src/web/assets/%s", name);
	FILE *f = fopen(p, "rb");
	if (!f)
		fail_msg("cannot open %s (run from the source tree)", p);
	char *b = malloc(RESP_MAX);
	assert_non_null(b);
	*n = fread(b, 1, RESP_MAX - 1, f);
	b[*n] = '\0';
	fclose(f);
	return b;
}

static int setup(void **state)
{
	char cfg[320];
	(void)state;

	resp = malloc(RESP_MAX);
	assert_non_null(resp);
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	port = free_port();
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "store: \"sqlite:%s/s.db\"\n"
		"http: {listen: \"127.0.0.1:%d\", token_env: SC_PAGE_TOKEN}\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n  tick: {cron: \"0 0 1 1 *\", tz: UTC, targets: "
		"[out], tasks: [{name: a, command: [/bin/true]}]}\n",
		dir, port);
	fclose(f);
	const char *envs[] = {"SC_PAGE_TOKEN=page-token-1", NULL};
	daemon_pid = tu_track(tu_start_daemon(dir, cfg, envs, 0));
	assert_true(tu_wait_log(dir, "event=http_started", 1, PATIENCE_MS));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_true(tu_stop_daemon(daemon_pid, PATIENCE_MS));
	tu_rmrf(dir);
	free(resp);
	return 0;
}

static void serves_each_file_with_its_type(void **state)
{
	static const struct {
		const char *path, *file, *type;
	} files[] = {
		{"/", "dashboard.html", "text/html; charset=utf-8"},
		{"/dashboard.css", "dashboard.css", "text/css; charset=utf-8"},
		{"/dashboard.js", "dashboard.js",
		 "text/javascript; charset=utf-8"},
		{"/favicon.svg", "favicon.svg", "image/svg+xml"},
		/* The query string is not part of the name. */
		{"/dashboard.js?v=2", "dashboard.js",
		 "text/javascript; charset=utf-8"},
	};
	(void)state;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		size_t got, n, want_n;
		char type[128];
		assert_int_equal(http_req("GET", files[i].path, &got), 200);
		snprintf(type, sizeof(type), "Content-Type: %s\r\n",
			 files[i].type);
		if (!strstr(resp, type))
			fail_msg("%s: no \"%s\"", files[i].path, files[i].type);
		assert_non_null(strstr(resp, "Content-Security-Policy: "
					     "default-src 'self'\r\n"));
		assert_non_null(strstr(resp, "X-Content-Type-Options: "
					     "nosniff\r\n"));
		const char *b = body_of(got, &n);
		char *want = read_source(files[i].file, &want_n);
		if (n != want_n || memcmp(b, want, n) != 0)
			fail_msg("%s: %zu bytes, not the %zu of src/web/assets/%s "
				 "(rebuild?)", files[i].path, n, want_n,
				 files[i].file);
		free(want);
	}
}

static void serves_nothing_else(void **state)
{
	/* One address for the page; no file system behind the names; the
	 * page's names are not a prefix match. */
	static const char *const nope[] = {
		"/dashboard.html", "/index.html", "/src/web/dashboard.js",
		"/../src/web/dashboard.js", "/dashboard.js/x", "/dashboard",
		"//dashboard.js", "/DASHBOARD.JS", "/web_assets.c"};
	(void)state;

	for (size_t i = 0; i < sizeof(nope) / sizeof(nope[0]); i++) {
		size_t got, n;
		if (http_req("GET", nope[i], &got) != 404)
			fail_msg("%s: not 404:\n%s", nope[i], resp);
		assert_non_null(strstr(resp, "application/json"));
		const char *b = body_of(got, &n);
		assert_string_equal(b, "{\"error\":\"no such path\"}");
	}
	/* A POST to the page is an action without the token. */
	assert_int_equal(http_req("POST", "/", NULL), 401);
}

/* Does s (lowercased markup) hold an attribute on...= inside a tag? */
static bool has_handler(const char *s)
{
	bool in_tag = false;

	for (const char *p = s; *p; p++) {
		if (*p == '<')
			in_tag = true;
		else if (*p == '>')
			in_tag = false;
		else if (in_tag && isspace((unsigned char)*p) &&
			 p[1] == 'o' && p[2] == 'n' &&
			 isalpha((unsigned char)p[3])) {
			const char *q = p + 3;
			while (isalpha((unsigned char)*q))
				q++;
			if (*q == '=')
				return true;
		}
	}
	return false;
}

static void the_page_keeps_the_csp_and_writes_no_markup(void **state)
{
	size_t got, n;
	(void)state;

	/* The page as served, lowercased. */
	assert_int_equal(http_req("GET", "/", &got), 200);
	const char *b = body_of(got, &n);
	char *html = strndup(b, n);
	assert_non_null(html);
	for (char *p = html; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	/* Every script comes from a file of the host. */
	size_t scripts = 0;
	for (const char *p = strstr(html, "<script"); p;
	     p = strstr(p + 1, "<script")) {
		const char *end = strchr(p, '>');
		assert_non_null(end);
		char tag[256];
		snprintf(tag, sizeof(tag), "%.*s", (int)(end - p), p);
		if (!strstr(tag, " src=\"/"))
			fail_msg("an inline or foreign script: %s", tag);
		scripts++;
	}
	assert_true(scripts >= 1);
	assert_null(strstr(html, "<style"));
	assert_null(strstr(html, " style="));
	assert_false(has_handler(html));
	assert_null(strstr(html, "javascript:"));
	free(html);

	/* No file names an address off the host (no CDN, no font). */
	static const char *const paths[] = {"/", "/dashboard.css",
					    "/dashboard.js"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(http_req("GET", paths[i], &got), 200);
		b = body_of(got, &n);
		if (strstr(b, "http://") || strstr(b, "https://") ||
		    strstr(b, "@import") || strstr(b, "//cdn"))
			fail_msg("%s names an address off the host", paths[i]);
	}

	/* The script builds nodes and sets text: it never parses markup
	 * (a schedule or an error holding "<script>" stays text). */
	assert_int_equal(http_req("GET", "/dashboard.js", &got), 200);
	b = body_of(got, &n);
	static const char *const banned[] = {
		"innerHTML", "outerHTML", "insertAdjacentHTML",
		"document.write", "eval(", "new Function", "DOMParser",
		"createContextualFragment", "setTimeout('", "setInterval('"};
	for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
		if (strstr(b, banned[i]))
			fail_msg("dashboard.js uses %s", banned[i]);
	assert_non_null(strstr(b, "textContent"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(serves_each_file_with_its_type),
		cmocka_unit_test(serves_nothing_else),
		cmocka_unit_test(the_page_keeps_the_csp_and_writes_no_markup),
	};
	signal(SIGPIPE, SIG_IGN);
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	tu_reap_all();
	return rc;
}
