/*
 * failpoint.h - named crash points for crash-safety tests.
 *
 * SC_FAILPOINT("queue.after_claim") kills the process with SIGKILL at that
 * exact step when the environment variable SURECRON_FAILPOINTS lists the
 * name (comma-separated; "name@N" fires on the N-th hit only). The points
 * are compiled in only when SC_FAILPOINTS is defined, which the test build
 * does and the release build does not, so they cost nothing in production.
 *
 * SC_FAILPOINT_ERR("name") evaluates to true instead of killing when the
 * variable lists "name:err": the caller then returns an injected error.
 *
 * SC_FAILPOINT_HOOK("name") calls the hook a test installed with
 * failpoint_set_hook (none: nothing), with the point's name, on the
 * calling thread. A test uses it to run another node's step at that exact
 * point, so that a race between nodes is played out deterministically.
 * Install and remove the hook while no other thread can pass a point.
 */
#ifndef SC_FAILPOINT_H
#define SC_FAILPOINT_H

#include <stdbool.h>

typedef void (*failpoint_hook_fn)(const char *name, void *ud);

#ifdef SC_FAILPOINTS
void failpoint_kill(const char *name);
bool failpoint_err(const char *name);
void failpoint_hook(const char *name);
/* Installs fn (NULL: removes the hook); ud is handed to every call. */
void failpoint_set_hook(failpoint_hook_fn fn, void *ud);
#define SC_FAILPOINT(name) failpoint_kill(name)
#define SC_FAILPOINT_ERR(name) failpoint_err(name)
#define SC_FAILPOINT_HOOK(name) failpoint_hook(name)
#else
#define SC_FAILPOINT(name) ((void)0)
#define SC_FAILPOINT_ERR(name) false
#define SC_FAILPOINT_HOOK(name) ((void)0)
#endif

#endif
