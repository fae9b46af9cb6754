/*
 * fake_proxy.h - a TCP proxy on 127.0.0.1 in front of a server (the
 * tests' PostgreSQL), that can lose flows the way a NAT, a proxy or a
 * firewall does: without a reset (test_pg_faults, issue 42).
 *
 * One thread; each accepted connection is paired with one to the
 * upstream port, and bytes are copied both ways as the mode says:
 *   PROXY_PASS       copy at once
 *   PROXY_DELAY      copy each chunk delay_ms after it was read (the
 *                    whole proxy waits: a slow path, not a reordering)
 *   PROXY_STRAND     every connection open now is stranded: from now on
 *                    nothing of it is read or copied, and it is never
 *                    closed (no FIN, no RST) until fake_proxy_stop; new
 *                    connections pass
 *   PROXY_BLACKHOLE  as STRAND, and connections accepted while it lasts
 *                    are stranded at once (accepted by the kernel, never
 *                    answered): a partition. Setting PASS again lets new
 *                    connections through; stranded ones stay dead, as a
 *                    flow a NAT forgot does.
 * Thread-safe.
 */
#ifndef SURECRON_FAKE_PROXY_H
#define SURECRON_FAKE_PROXY_H

enum proxy_mode {
	PROXY_PASS,
	PROXY_DELAY,
	PROXY_STRAND,
	PROXY_BLACKHOLE,
};

struct fake_proxy;

/* Starts a proxy to 127.0.0.1:upstream_port on a free port of 127.0.0.1.
 * NULL on failure. */
struct fake_proxy *fake_proxy_start(int upstream_port);

/* The port it listens on. */
int fake_proxy_port(const struct fake_proxy *p);

/* Sets the mode (delay_ms: PROXY_DELAY's delay). */
void fake_proxy_set(struct fake_proxy *p, enum proxy_mode mode, int delay_ms);

/* Connections stranded so far, and connections accepted in all. */
int fake_proxy_stranded(struct fake_proxy *p);
int fake_proxy_accepted(struct fake_proxy *p);

/* Stops the thread and closes every connection; NULL is ignored. */
void fake_proxy_stop(struct fake_proxy *p);

#endif
