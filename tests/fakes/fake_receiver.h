/*
 * fake_receiver.h - a counting webhook receiver on 127.0.0.1 that can
 * misbehave, for the fault campaigns (test_receiver_modes,
 * test_delivery_crash).
 *
 * Built on libmicrohttpd, one thread per connection (a receiver that never
 * answers stalls only its own connection). Every request it reads in full
 * is first appended to a log file and fsync'd, then answered as the
 * current mode says; so the count survives a crash of whoever sends, and a
 * test reads it from the file, not from memory. One log line per request:
 *
 *   PATH IDEMPOTENCY-KEY DISPOSITION
 *
 * where DISPOSITION is "taken" (the receiver acted on it: answered 2xx, or
 * misbehaved after reading it, which the sender cannot tell from taking)
 * or "refused:STATUS" (a definite non-2xx answer: the receiver did not
 * take it). A receiver that "crashes" before recording (RECV_CRASH) writes
 * nothing: the request never counted.
 *
 * Modes, each for the next n requests (fake_receiver_script); afterwards
 * the receiver answers 200 "ok":
 *   RECV_OK      200
 *   RECV_NEVER   record, then never answer (until fake_receiver_stop)
 *   RECV_LATE    record, answer 200 after delay_ms
 *   RECV_CLOSE   record, close the connection without any response
 *   RECV_CRASH   read the request, close with no response, record nothing
 *   RECV_DRIP    record, answer 200 with a body of 64 bytes, one byte per
 *                delay_ms
 *   RECV_STATUS  record as refused, answer status with headers
 *                ("Name: value" lines separated by '\n')
 * Thread-safe.
 */
#ifndef SURECRON_FAKE_RECEIVER_H
#define SURECRON_FAKE_RECEIVER_H

#include <stdbool.h>
#include <stddef.h>

enum recv_mode {
	RECV_OK,
	RECV_NEVER,
	RECV_LATE,
	RECV_CLOSE,
	RECV_CRASH,
	RECV_DRIP,
	RECV_STATUS,
};

struct fake_receiver;

/* Starts a receiver logging to log_path (created 0600, appended to). With
 * cert_pem and key_pem (PEM strings) it speaks TLS. NULL when it cannot
 * start (or TLS is asked and libmicrohttpd lacks it). */
struct fake_receiver *fake_receiver_start(const char *log_path,
					  const char *cert_pem,
					  const char *key_pem);

/* Wakes every request it holds, stops and frees it. NULL ok. */
void fake_receiver_stop(struct fake_receiver *r);

/* "http[s]://127.0.0.1:PORT" + path into out (size n); returns out. */
const char *fake_receiver_url(const struct fake_receiver *r, const char *path,
			      char *out, size_t n);

/* The next n requests get mode (status, headers and delay_ms as the mode
 * uses them); then 200 again. */
void fake_receiver_script(struct fake_receiver *r, enum recv_mode mode, int n,
			  int status, const char *headers, int delay_ms);

/* Calls fn(ud, path, key, disposition) for each request the receiver
 * records, on its connection thread, right before the log line is
 * written (so before any answer): a test can look at its own state at the
 * moment a copy arrives. NULL fn turns it off. */
void fake_receiver_on_request(struct fake_receiver *r,
			      void (*fn)(void *ud, const char *path,
					 const char *key,
					 const char *disposition),
			      void *ud);

/* Waits until no request is being handled and nothing happened (no
 * connection accepted, no request started or ended) for quiet_ms, or
 * timeout_ms passed; true when quiet. A request from a sender that was
 * just killed may still sit in the receiver's socket and be recorded when
 * read: wait for this before reading the count to decide anything. */
bool fake_receiver_wait_idle(struct fake_receiver *r, int quiet_ms,
			     int timeout_ms);

/* Lines of the log at log_path (read from the file) whose path equals path
 * (NULL: any), whose key equals key (NULL: any) and, with taken_only,
 * whose disposition is "taken". 0 when the file does not exist. */
size_t fake_receiver_count(const char *log_path, const char *path,
			   const char *key, bool taken_only);

#endif
