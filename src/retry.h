/*
 * retry.h - retry policies (public part in surecron.h).
 */
#ifndef SURECRON_RETRY_H
#define SURECRON_RETRY_H

#include "surecron.h"

/* True when the policy is usable: attempts 1..100, delay 0..30 days. */
bool retry_policy_valid(const struct sc_retry_policy *p);

#endif
