/*
 * fake_mhd.h - what the fake servers (fake_http.c, fake_receiver.c) share
 * on top of libmicrohttpd: their lock and wake-up pair, the loopback
 * address they bind, interruptible waits and canned answers. Internal to
 * tests/fakes; tests use fake_http.h and fake_receiver.h.
 */
#ifndef SURECRON_FAKE_MHD_H
#define SURECRON_FAKE_MHD_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

/* Initialises mu and a cv that times out on CLOCK_MONOTONIC, so a wait
 * is not stretched or cut by a change of the wall clock. */
void fake_mhd_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv);

/* *dl = now + ms on CLOCK_MONOTONIC, for pthread_cond_timedwait on a cv
 * from fake_mhd_sync_init. */
void fake_mhd_deadline(struct timespec *dl, int ms);

/* 127.0.0.1 with port 0: the OS picks a free port. */
void fake_mhd_loopback(struct sockaddr_in *sa);

/* Waits up to ms of real time on cv (cv from fake_mhd_sync_init), cut
 * short when *stopping (read under mu) turns true, so stopping a server
 * never waits out a delay nobody listens to. False when stopping. */
bool fake_mhd_wait(pthread_mutex_t *mu, pthread_cond_t *cv,
		   const bool *stopping, int ms);

/* Adds "Name: value" lines (newline-separated, NULL: none) to resp;
 * blanks and a CR at the end of a value are dropped. */
void fake_mhd_add_headers(struct MHD_Response *resp, const char *headers);

/* Queues status, headers and a copy of body on conn. */
enum MHD_Result fake_mhd_send(struct MHD_Connection *conn, int status,
			      const char *headers, const char *body);

#endif
