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
 */
#ifndef SC_FAILPOINT_H
#define SC_FAILPOINT_H

#include <stdbool.h>

#ifdef SC_FAILPOINTS
void failpoint_kill(const char *name);
bool failpoint_err(const char *name);
#define SC_FAILPOINT(name) failpoint_kill(name)
#define SC_FAILPOINT_ERR(name) failpoint_err(name)
#else
#define SC_FAILPOINT(name) ((void)0)
#define SC_FAILPOINT_ERR(name) false
#endif

#endif
