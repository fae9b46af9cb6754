/*
 * failpoint.h - named crash points for crash-safety tests.
 *
 * FAILPOINT("queue.after_claim") kills the process with SIGKILL at that
 * exact step when the environment variable SURECRON_FAILPOINTS lists the
 * name (comma-separated; "name@N" fires on the N-th hit only). The points
 * are compiled in only when SURECRON_FAILPOINTS is defined, which the test build
 * does and the release build does not, so they cost nothing in production.
 *
 * FAILPOINT_ERR("name") evaluates to true instead of killing when the
 * variable lists "name:err": the caller then returns an injected error.
 *
 * FAILPOINT_HOOK("name") calls the hook a test installed with
 * failpoint_set_hook (none: nothing), with the point's name, on the
 * calling thread. A test uses it to run another node's step at that exact
 * point, so that a race between nodes is played out deterministically.
 * Install and remove the hook while no other thread can pass a point.
 *
 * FAILPOINT_STALL("name") holds the calling thread when the list has
 * "name:stall" ("name:stall@N": the N-th hit only) and the environment
 * variable SURECRON_FAILPOINT_STALL names a file: it creates FILE.hit,
 * then sleeps while FILE exists. A test of another process uses it to
 * keep a long step (a prune) under way while it checks what else goes on.
 */
#ifndef SURECRON_FAILPOINT_H
#define SURECRON_FAILPOINT_H

#include <stdbool.h>

typedef void (*failpoint_hook_fn)(const char *name, void *ud);

#ifdef SURECRON_FAILPOINTS
void failpoint_kill(const char *name);
bool failpoint_err(const char *name);
void failpoint_stall(const char *name);
void failpoint_hook(const char *name);
/* Installs fn (NULL: removes the hook); ud is handed to every call. */
void failpoint_set_hook(failpoint_hook_fn fn, void *ud);
#define FAILPOINT(name) failpoint_kill(name)
#define FAILPOINT_ERR(name) failpoint_err(name)
#define FAILPOINT_HOOK(name) failpoint_hook(name)
#define FAILPOINT_STALL(name) failpoint_stall(name)
#else
#define FAILPOINT(name) ((void)0)
#define FAILPOINT_ERR(name) false
#define FAILPOINT_HOOK(name) ((void)0)
#define FAILPOINT_STALL(name) ((void)0)
#endif

#endif
