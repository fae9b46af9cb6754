/*
 * alert.h - the alert targets and the lost-slot alert
 * (docs/internals/alert.md).
 *
 * A slot is lost when its job goes DEAD: its attempts are used up, a
 * failure was permanent, or it stalled too often. That must never be
 * silent: the ledger gets a "lost" row (the queue writes it), and the
 * alert targets get a `kind: "alert"` message from here.
 *
 * Thread-safety: any thread; the config is read only.
 */
#ifndef SURECRON_ALERT_H
#define SURECRON_ALERT_H

#include <stddef.h>
#include <stdint.h>

#include "spec.h"
#include "surecron.h"

/*
 * The alert targets: the comma-separated names in SURECRON_ALERT_TARGETS
 * when set and non-empty, else config->alert_targets. Fills out[0..*n)
 * with pointers into the config (unknown names are logged and skipped).
 */
void alert_targets(const struct config *c, const struct target_spec **out,
		   size_t max, size_t *n);

/*
 * Sends the "slot lost" alert for (schedule, slot) to the alert targets,
 * if any are configured (otherwise sends nothing, logs an error line and
 * returns). why is the error that ended the last attempt (NULL or code 0:
 * "unknown error"); clock dates the sends (borrowed). Failures to send are
 * warnings; how many alert targets took it goes to *n_sent (NULL allowed).
 */
void alert_send_lost(const struct config *c, struct sc_clock *clock,
		     const char *schedule, int64_t slot_ms, int attempts,
		     const struct sc_err *why, size_t *n_sent);

#endif
