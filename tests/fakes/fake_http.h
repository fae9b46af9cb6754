/*
 * fake_http.h - a real HTTP/1.1 server on 127.0.0.1 for tests.
 *
 * Built on libmicrohttpd with internal threads (one thread per connection,
 * so a scripted delay on one request never stalls another connection) on a
 * port the OS chooses. Tests script what each path answers, then read back
 * what arrived. Every function is thread-safe; strings passed in are copied.
 *
 * Typical use:
 *
 *   struct fake_http *f = fake_http_start();
 *   fake_http_push(f, "/api", 429, "Retry-After: 30", "slow down", 0);
 *   fake_http_set_default(f, "/api", 200, "Content-Type: text/plain", "ok");
 *   char url[256];
 *   fake_http_url(f, "/api?x=1", url, sizeof(url));
 *   ... run the code under test against url ...
 *   assert_int_equal(fake_http_count(f, "/api"), 2);
 *   fake_http_stop(f);
 *
 * Answering order for a request to PATH:
 *   1. PATH is protected (fake_http_protect) and the request lacks
 *      "Authorization: Bearer T" with T issued and not revoked:
 *      401, header `WWW-Authenticate: Bearer error="invalid_token"`.
 *   2. The FIFO of PATH is not empty: its head is popped and sent.
 *   3. PATH is the OAuth2 token path (fake_http_oauth2): a token is issued.
 *   4. PATH has a default response: it is sent (any number of times).
 *   5. Otherwise 200 with body "ok" for a protected path, else 404.
 * PATH is matched without the query string.
 *
 * Headers arguments are "Name: value" lines separated by '\n' (may be NULL).
 */
#ifndef SURECRON_FAKE_HTTP_H
#define SURECRON_FAKE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

struct fake_http;

/* Starts a server on 127.0.0.1:<free port>. NULL when it cannot start. */
struct fake_http *fake_http_start(void);

/* The same on a given port: a receiver that comes back where a stopped
 * one was (its senders keep their URL). NULL when the port is taken. */
struct fake_http *fake_http_start_on(int port);

/* The same over TLS with the given PEM certificate and key (copied by
 * libmicrohttpd); URLs are then https://. NULL when it cannot start or
 * libmicrohttpd lacks TLS support (tests should skip then). */
struct fake_http *fake_https_start(const char *cert_pem, const char *key_pem);

/* Stops the server (waits for running handlers) and frees it. NULL ok. */
void fake_http_stop(struct fake_http *f);

/* The port the server listens on. */
int fake_http_port(const struct fake_http *f);

/* Writes "http[s]://127.0.0.1:PORT" + path_and_query into out (size n) and
 * returns out. */
const char *fake_http_url(const struct fake_http *f, const char *path_and_query,
			  char *out, size_t n);

/* Forgets every script, default, token, protection and logged request;
 * token numbering starts again at tok-1. */
void fake_http_reset(struct fake_http *f);

/* Appends one response to the FIFO of path. delay_ms > 0 makes the server
 * wait that long (real time) before answering; fake_http_stop cuts such a
 * wait short. */
void fake_http_push(struct fake_http *f, const char *path, int status,
		    const char *headers, const char *body, int delay_ms);

/* Sets the response path gives whenever its FIFO is empty. */
void fake_http_set_default(struct fake_http *f, const char *path, int status,
			   const char *headers, const char *body);

/* Makes every request to path sleep delay_ms (real time) before its answer
 * is chosen and sent, whatever answers it (0 turns it off). Used to hold
 * token requests open so concurrent callers pile up behind one refresh. */
void fake_http_set_delay(struct fake_http *f, const char *path, int delay_ms);

/* Holds (on = true) or releases requests to path: a held request is
 * logged, then waits until released before it is answered. Lets a test
 * line up concurrent callers deterministically. fake_http_stop releases. */
void fake_http_hold(struct fake_http *f, const char *path, bool on);

/* ---- OAuth2 client-credentials token endpoint (RFC 6749 4.4) ---- */

/*
 * Makes token_path a token endpoint. Each POST with form field
 * grant_type=client_credentials gets 200 and
 * {"access_token":"tok-N","token_type":"Bearer","expires_in":E}, N counting
 * from 1 per server (or since the last reset). expires_in < 0 leaves the
 * field out. Other requests get 400 {"error":"unsupported_grant_type"}.
 */
void fake_http_oauth2(struct fake_http *f, const char *token_path,
		      int expires_in);

/* Requires client credentials at the token endpoint: HTTP Basic
 * (id:secret) or form fields client_id/client_secret. Wrong or missing
 * ones get 401 {"error":"invalid_client"}. NULL id turns the check off. */
void fake_http_oauth2_client(struct fake_http *f, const char *client_id,
			     const char *client_secret);

/* Requires a valid issued bearer token on every request to path. */
void fake_http_protect(struct fake_http *f, const char *path);

/* Revokes one issued token ("tok-3"), or every token issued so far when
 * token is NULL: protected paths answer 401 for them from now on. */
void fake_http_revoke(struct fake_http *f, const char *token);

/* Number of tokens issued so far. */
int fake_http_tokens_issued(struct fake_http *f);

/* ---- request log ---- */

/* A copy of one logged request; release with fake_request_dispose. */
struct fake_request {
	char method[16];
	char *path;    /* without query */
	char *query;   /* raw, after '?'; "" when none */
	char *headers; /* "Name: value\n" per header, as received */
	char *body;    /* NUL-terminated, capped at 1 MiB */
	size_t body_len;
	int status;    /* the status it was answered with; 0 until then */
};

/* Requests fully received so far, to path (NULL: to any path). */
size_t fake_http_count(struct fake_http *f, const char *path);

/* Waits until at least n requests to path (NULL: any) have arrived or
 * timeout_ms (real time) passed. Returns true when they arrived. */
bool fake_http_wait(struct fake_http *f, const char *path, size_t n,
		    int timeout_ms);

/* Copies the i-th request (0-based, arrival order) to path (NULL: any)
 * into out. i < 0 counts from the end (-1: the latest). Returns false when
 * there is no such request (out is then zeroed). */
bool fake_http_request(struct fake_http *f, const char *path, long i,
		       struct fake_request *out);

/* Copies the value of header `name` (case-insensitive) into out; returns
 * false when absent. */
bool fake_request_header(const struct fake_request *r, const char *name,
			 char *out, size_t n);

/* Frees the strings of a copied request. NULL ok. */
void fake_request_dispose(struct fake_request *r);

#endif
