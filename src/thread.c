/*
 * thread.c - the library's threads start with the signals blocked
 * (thread.h says why).
 *
 * Invariant: a thread started here never takes an asynchronous signal,
 * since a new thread inherits its creator's mask and the creator's mask
 * is put back before thread_start returns.
 */
#include <errno.h>

#include "thread.h"

/* The signals a fault raises on the faulting thread: left open. */
static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE,
				  SIGILL,  SIGTRAP, SIGSYS};

void thread_signals_block(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]);
	     i++)
		sigdelset(&all, synchronous[i]);
	(void)pthread_sigmask(SIG_BLOCK, &all, old);
}

void thread_signals_restore(const sigset_t *old)
{
	(void)pthread_sigmask(SIG_SETMASK, old, NULL);
}

int thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t old;

	thread_signals_block(&old);
	int rc = pthread_create(th, NULL, fn, arg);
	thread_signals_restore(&old);
	return rc ? -rc : 0;
}
