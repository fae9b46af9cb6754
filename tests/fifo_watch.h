/*
 * fifo_watch.h - a test's guard against a reader that blocks on a FIFO
 * (issue 44): a surecron that opens a FIFO for reading waits for a writer
 * forever, and the test would hang instead of failing. The watch waits,
 * on a thread of its own, for the test to say it is done; past the
 * deadline it opens the FIFO for writing (again and again until stopped),
 * which lets the blocked reader go on, and remembers that it had to.
 * tu_fifo_watch_stop says whether it did: true means the code under test
 * opened the FIFO and blocked, which the test then fails on.
 *
 * Header-only (static inline), for one watch at a time per test.
 */
#ifndef SURECRON_TESTS_FIFO_WATCH_H
#define SURECRON_TESTS_FIFO_WATCH_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct tu_fifo_watch {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char path[PATH_MAX + 256];
	struct timespec deadline; /* CLOCK_REALTIME, for timedwait */
	bool done;                /* the test is past the read */
	bool rescued;             /* the watch had to open the FIFO */
};

static inline void *tu_fifo_watch_main(void *arg)
{
	struct tu_fifo_watch *w = arg;

	pthread_mutex_lock(&w->mu);
	while (!w->done &&
	       pthread_cond_timedwait(&w->cv, &w->mu, &w->deadline) !=
		       ETIMEDOUT)
		;
	while (!w->done) {
		w->rescued = true;
		pthread_mutex_unlock(&w->mu);
		/* ENXIO until a reader has it open: then the open returns
		 * and the close hands the reader an end of file. */
		int fd = open(w->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		struct timespec ts = {.tv_nsec = 10 * 1000000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Starts watching the FIFO at path: after ms, it is opened for writing. */
static inline void tu_fifo_watch_start(struct tu_fifo_watch *w,
				       const char *path, int64_t ms)
{
	*w = (struct tu_fifo_watch){0};
	snprintf(w->path, sizeof(w->path), "%s", path);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	clock_gettime(CLOCK_REALTIME, &w->deadline);
	w->deadline.tv_sec += ms / 1000;
	w->deadline.tv_nsec += (ms % 1000) * 1000000;
	if (w->deadline.tv_nsec >= 1000000000) {
		w->deadline.tv_sec++;
		w->deadline.tv_nsec -= 1000000000;
	}
	if (pthread_create(&w->th, NULL, tu_fifo_watch_main, w) != 0) {
		perror("pthread_create");
		exit(1);
	}
}

/* Stops the watch; true when it had to open the FIFO (a reader blocked
 * on it past the deadline). */
static inline bool tu_fifo_watch_stop(struct tu_fifo_watch *w)
{
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	return w->rescued;
}

#endif
