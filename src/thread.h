/*
 * thread.h - starting the library's own threads with the process's
 * signals blocked.
 *
 * The daemon takes SIGTERM, SIGINT, SIGHUP and SIGUSR1 on one sigwait
 * thread (src/cli/cmd_run.c). A process-directed signal goes to any
 * thread that does not block it, and its default action ends the whole
 * process: one thread started with the signals open (the heartbeat
 * pinger once was, issue 42) turns a graceful stop or a reload into an
 * exit by signal. So every thread the library starts, and every library
 * call that starts threads of its own (libmicrohttpd), does so with all
 * asynchronous signals blocked, whatever the caller's mask is. The
 * synchronous ones (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS)
 * stay open: blocking them cannot stop them, and a fault must still end
 * the process at once.
 *
 * Thread-safety: every function changes or reads the calling thread's
 * mask only.
 */
#ifndef SURECRON_THREAD_H
#define SURECRON_THREAD_H

#include <pthread.h>
#include <signal.h>

/*
 * pthread_create(th, NULL, fn, arg) with every asynchronous signal
 * blocked in the new thread; the caller's mask is unchanged when it
 * returns. Returns 0 or the negative errno of pthread_create.
 */
int thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* Blocks every asynchronous signal in the calling thread; the previous
 * mask into *old, for thread_signals_restore. Around a library call that
 * starts threads itself. */
void thread_signals_block(sigset_t *old);

/* Puts back the mask thread_signals_block saved. */
void thread_signals_restore(const sigset_t *old);

#endif
