/*
 * retry.h - retry policies (public part in surecron.h).
 */
#ifndef SURECRON_RETRY_H
#define SURECRON_RETRY_H

#include "surecron.h"

/* True when the policy is usable: attempts 1..100, delay 0..30 days. */
bool retry_policy_valid(const struct sc_retry_policy *p);

/* The policy of a class (sc_retry_policy_for's), as a constant that lives
 * as long as the process: a schedule without `retry:` points to it rather
 * than holding a copy (spec.h's spec_policy). Thread-safe. */
const struct sc_retry_policy *retry_policy_of(enum sc_freq_class cls);

#endif
