/*
 * fuzz_web_request.c - the web surface's request parsing (web.c,
 * web_api.c): the path and its query, the headers' checks and the JSON
 * bodies of the actions, through a real server (web_start) on 127.0.0.1
 * over a SQLite store and a config of two schedules, asked by a plain
 * socket, so the whole path is fuzzed without exposing its internals.
 *
 * Input: one byte of flags (1: the bearer token, 2: POST, 4: a rebound
 * Host, 8: a foreign Origin, 16: a wrong token instead of the right one),
 * then the request target (path and query) up to the first LF, then the
 * body. In the target, bytes that would end the request line (controls,
 * space, DEL, non-ASCII) are sent %-escaped, which the server decodes:
 * the handlers see them all.
 *
 * Properties:
 *   1. every request is answered, with a status the surface documents
 *      (200, 400, 401, 403, 404, 405, 409, 413, 414, 421), never 500 and
 *      never 503 (the store is there); the server still answers /healthz;
 *   2. an answer of this surface (it carries the Content-Security-Policy)
 *      of type JSON is JSON; an error is {"error": STRING} and nothing
 *      else;
 *   3. a rebound Host is 421, whatever else the request holds (DNS
 *      rebinding, issue 44);
 *   4. a POST without the right token is never done (no 2xx);
 *   5. no answer holds the token;
 *   6. every instant an answer gives (slot_ms, since_ms, until_ms,
 *      run_at_ms) lies in the years 1-9999: the API takes no time the CLI
 *      would refuse (issue 44, row 13).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "web/web.h"

#define TOKEN "fuzz-web-token-0123456789abcdef"
#define TARGET_MAX 1500
#define RESP_MAX (1 << 20)

static struct web *srv;
static struct config *cfg;
static _Atomic int64_t loop_ms;
static int port;
static char db[FUZZ_SCRATCH_MAX];

static const struct config *hold(void *ctx, void **ref)
{
	*ref = NULL;
	return cfg;
}

static void release(void *ctx, void *ref)
{
}

/* The store's files go before fuzz_scratch's cleanup removes the folder
 * (atexit runs the later registration first). */
static void cleanup(void)
{
	char p[sizeof(db) + 16];

	static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", db, ext[i]);
		unlink(p);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_scratch_file("web");
	/* The folder's name is under 256 bytes (fuzz_scratch). */
	int k = snprintf(db, sizeof(db), "%.256s/s.db", fuzz_scratch()->dir);
	if (k < 0 || (size_t)k >= sizeof(db))
		abort();
	atexit(cleanup);
	return 0;
}

/* A port nobody listens on now (bound then released). */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		abort();
	close(fd);
	return ntohs(a.sin_port);
}

/* Started on first use, not in LLVMFuzzerInitialize: the replay runs each
 * input in a forked child, which has no threads of its parent. */
static void start(void)
{
	struct sc_err err = {0};
	char listen[64];
	const char *path = fuzz_scratch()->path;

	if (srv)
		return;
	/* No 250 ms pause after each refused token: the fuzzer would
	 * spend its time asleep. */
	setenv("SURECRON_FAILPOINTS", "web.auth_nodelay:err", 1);
	setenv("FUZZ_WEB_TOKEN", TOKEN, 1);
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fprintf(f, "store: \"sqlite:%s\"\n"
		"targets:\n  out: {kind: file, path: ./out.jsonl}\n"
		"schedules:\n"
		"  daily:\n    cron: \"0 3 * * *\"\n    tz: Asia/Seoul\n"
		"    targets: [out]\n"
		"    tasks: [{name: t, command: [/bin/true]}]\n"
		"  yearly: {cron: \"0 0 1 1 *\", tz: UTC, "
		"tasks: [{name: t, command: [/bin/true]}]}\n", db);
	fclose(f);
	if (config_load(path, &cfg, &err) != 0) {
		fprintf(stderr, "fuzz_web_request: config: %s\n", err.msg);
		abort();
	}
	port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	atomic_store(&loop_ms, clock_mono_ms());
	struct web_opts o = {.listen = listen, .token_env = "FUZZ_WEB_TOKEN",
			     .store_url = cfg->store_url,
			     .clock = sc_clock_real(),
			     .loop_mono_ms = &loop_ms,
			     .loop_stale_ms = INT64_C(1) << 40,
			     .cfg_hold = hold, .cfg_release = release};
	if (web_start(&o, &srv, &err) != 0) {
		fprintf(stderr, "fuzz_web_request: start: %s\n", err.msg);
		abort();
	}
}

/* Sends req (len bytes) and reads the whole answer into out (NUL-
 * terminated); returns its length, or -1 when the server did not
 * answer. */
static long exchange_once(const char *req, size_t len, char *out, size_t n)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 20};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/*
	 * Each input is a new connection, over a thousand a second, and
	 * each leaves its pair of ports in TIME_WAIT for a minute: from one
	 * source address the ephemeral ports ran out within the minute,
	 * and the refused connect() read as the server's "no answer". So
	 * the source address turns over 127.0.0.2-127.0.0.251 (all
	 * loopback), and a connect() refused for want of a port waits for
	 * one (the machine's limit, not the server's).
	 */
	static unsigned turn;
	struct sockaddr_in src = {.sin_family = AF_INET};

	src.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + turn++ % 250);
	(void)bind(fd, (struct sockaddr *)&src, sizeof(src));
	int tries = 0;
	while (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (errno != EADDRNOTAVAIL || ++tries > 300) {
			close(fd);
			return -1;
		}
		usleep(100 * 1000);
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, req + off, len - off);
		if (w <= 0)
			break; /* the server may answer before the body */
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t r = read(fd, out + got, n - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (got += (size_t)r) == n - 1)
			break;
	}
	out[got] = '\0';
	close(fd);
	return got ? (long)got : -1;
}

/*
 * exchange_once, again when the connection ended at once with no byte
 * (up to 5 tries, 50-250 ms apart). At over a thousand new connections
 * a second, the server, a thread per connection with at most
 * WEB_CONN_MAX of them, sometimes closes a new one unanswered while the
 * threads of the last ones wind down: the flood's limit, not the
 * input's. A server that hangs, or answers an input with nothing every
 * time, still fails the property.
 */
static long exchange(const char *req, size_t len, char *out, size_t n)
{
	long got = -1;

	for (int i = 0; i < 5 && got < 0; i++) {
		int64_t t0 = clock_mono_ms();
		if (i > 0)
			usleep((useconds_t)(50 * 1000 * i));
		got = exchange_once(req, len, out, n);
		if (got < 0 && clock_mono_ms() - t0 > 1000 + 50 * i)
			break; /* slow to fail: the server's own */
	}
	return got;
}

/* Every instant under the keys of property 6, anywhere in v. */
static bool instants_in_range(const json_t *v)
{
	static const char *const keys[] = {"slot_ms", "since_ms", "until_ms",
					   "run_at_ms"};
	const char *k;
	json_t *x;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			if (!instants_in_range(x))
				return false;
		return true;
	}
	if (!json_is_object(v))
		return true;
	json_object_foreach((json_t *)v, k, x) {
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strcmp(k, keys[i]) == 0 && json_is_integer(x) &&
			    (json_integer_value(x) < CLOCK_MIN_MS ||
			     json_integer_value(x) > CLOCK_MAX_MS))
				return false;
		if (!instants_in_range(x))
			return false;
	}
	return true;
}

/* The target with the bytes that would end the request line %-escaped. */
static size_t escape_target(const uint8_t *p, size_t n, char *out)
{
	size_t k = 0;

	if (n == 0 || p[0] != '/')
		out[k++] = '/';
	for (size_t i = 0; i < n; i++) {
		if (p[i] <= 0x20 || p[i] >= 0x7f)
			k += (size_t)sprintf(out + k, "%%%02X", p[i]);
		else
			out[k++] = (char)p[i];
	}
	out[k] = '\0';
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char resp[RESP_MAX];
	char target[3 * TARGET_MAX + 2];

	if (size < 1)
		return 0;
	start();
	atomic_store(&loop_ms, clock_mono_ms());
	unsigned flags = data[0];
	const uint8_t *p = data + 1, *nl = memchr(p, '\n', size - 1);
	size_t tlen = nl ? (size_t)(nl - p) : size - 1;
	if (tlen > TARGET_MAX)
		return 0;
	const uint8_t *body = nl ? nl + 1 : p + size - 1;
	size_t blen = (size_t)(data + size - body);
	bool post = flags & 2, rebound = flags & 4;
	bool right_token = (flags & 1) && !(flags & 16);
	escape_target(p, tlen, target);

	size_t cap = strlen(target) + blen + 512;
	char *req = malloc(cap);
	if (!req)
		abort();
	int h = snprintf(req, cap, "%s %s HTTP/1.0\r\nHost: %s\r\n%s%s%s"
			 "Content-Type: application/json\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 post ? "POST" : "GET", target,
			 rebound ? "rebound.example:8077" : "127.0.0.1",
			 (flags & 1) ? "Authorization: Bearer " : "",
			 (flags & 1) ? ((flags & 16) ? "fuzz-wrong-token"
						     : TOKEN) : "",
			 (flags & 1) ? "\r\n" : "", post ? blen : 0);
	if (h < 0 || (size_t)h >= cap)
		abort();
	size_t len = (size_t)h;
	if (post) {
		memcpy(req + len, body, blen);
		len += blen;
	}
	if (flags & 8) {
		/* The Origin goes among the headers, before the blank line. */
		static const char origin[] = "Origin: http://evil.example\r\n";
		char *end = strstr(req, "\r\n\r\n");
		size_t tail = len - (size_t)(end + 2 - req);
		char *nr = malloc(len + sizeof(origin));
		if (!nr)
			abort();
		memcpy(nr, req, (size_t)(end + 2 - req));
		memcpy(nr + (end + 2 - req), origin, sizeof(origin) - 1);
		memcpy(nr + (end + 2 - req) + sizeof(origin) - 1, end + 2, tail);
		len += sizeof(origin) - 1;
		free(req);
		req = nr;
	}
	long got = exchange(req, len, resp, sizeof(resp));
	free(req);

	int status = 0;
	FUZZ_CHECK(got > 0 && sscanf(resp, "HTTP/1.%*d %d", &status) == 1,
		   data, size, "no answer");
	static const int known[] = {200, 400, 401, 403, 404, 405, 409, 413,
				    414, 421};
	bool ok = false;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= status == known[i];
	FUZZ_CHECK(ok, data, size, "status %d", status);
	FUZZ_CHECK(!strstr(resp, TOKEN), data, size, "the token in the answer");
	bool ours = strstr(resp, "Content-Security-Policy: default-src "
			   "'self'\r\n") != NULL;
	if (ours && rebound)
		FUZZ_CHECK(status == 421, data, size, "rebound Host: %d", status);
	if (post && !right_token)
		FUZZ_CHECK(status / 100 != 2, data, size, "a POST done without "
			   "the token");
	const char *b = strstr(resp, "\r\n\r\n");
	if (ours && b && strstr(resp, "Content-Type: application/json")) {
		json_t *j = json_loads(b + 4, 0, NULL);
		FUZZ_CHECK(j != NULL, data, size, "not JSON: %.200s", b + 4);
		if (status >= 400)
			FUZZ_CHECK(json_object_size(j) == 1 &&
				   json_is_string(json_object_get(j, "error")),
				   data, size, "not an error object");
		FUZZ_CHECK(instants_in_range(j), data, size,
			   "an instant outside the years 1-9999");
		json_decref(j);
	}
	/* The server still answers. */
	static const char hz[] = "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n"
				 "Authorization: Bearer " TOKEN "\r\n\r\n";
	got = exchange(hz, sizeof(hz) - 1, resp, sizeof(resp));
	FUZZ_CHECK(got > 0 && strncmp(resp + 9, "200", 3) == 0, data, size,
		   "/healthz no longer answers: %.100s", got > 0 ? resp : "");
	return 0;
}
