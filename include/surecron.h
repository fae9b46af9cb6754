/*
 * surecron.h - the public interface of libsurecron.
 *
 * This is the only installed header. Every public item carries the sc_
 * prefix (SC_ for macros and enum values) and every exported function is
 * marked SC_API; the library is built with -fvisibility=hidden, so what is
 * not marked here is not reachable from outside.
 *
 * Conventions that hold for every function below unless its block says
 * otherwise:
 *   - A fallible function returns int: 0 on success, a negative SC_E* code
 *     on failure. Detail goes into the optional last parameter
 *     `struct sc_err *err` (may be NULL). The first error recorded in an
 *     sc_err wins; later failures (cleanup, notices) never overwrite it.
 *   - Times are int64 milliseconds since the Unix epoch, UTC (`_ms`).
 *   - Arguments are borrowed. Memory the library hands out is freed with the
 *     matching _free function or, for plain strings, with sc_free().
 *   - Thread-safety is stated per item.
 *
 * Sections, in layer order: errors, logging, clock, retry policy, cron.
 */
#ifndef SURECRON_H
#define SURECRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SC_VERSION "0.1.0"

#if defined(__GNUC__)
#define SC_API __attribute__((visibility("default")))
#define SC_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SC_API
#define SC_PRINTF(fmt, args)
#endif

/* ------------------------------------------------------------------ */
/* Errors                                                             */
/* ------------------------------------------------------------------ */

/*
 * Error codes. System-level codes are negated errno values (as in libuv),
 * so a syscall wrapper may return -errno directly; the rest are our own and
 * live below -1000.
 */
enum sc_errcode {
	SC_OK = 0,
	SC_ENOENT = -2,        /* no such file, zone, schedule or row */
	SC_EIO = -5,           /* I/O error (disk, pipe) */
	SC_ENOMEM = -12,       /* out of memory */
	SC_EACCES = -13,       /* permission denied */
	SC_EBUSY = -16,        /* resource busy (database locked) */
	SC_EEXIST = -17,       /* already exists */
	SC_EINVAL = -22,       /* invalid argument or input */
	SC_ENOSPC = -28,       /* no space left on device */
	SC_ETIMEDOUT = -110,   /* timed out */
	SC_ECANCELED = -125,   /* stopped on request */
	SC_ECRON = -1001,      /* malformed cron expression */
	SC_ENEVER = -1002,     /* cron expression never fires */
	SC_EZONE = -1003,      /* unknown or unreadable time zone */
	SC_ECORRUPT = -1004,   /* corrupt or foreign file */
	SC_EVERSION = -1005,   /* state file from a newer version */
	SC_ELEASE = -1006,     /* lease lost: the job belongs to another claim */
	SC_ESTATE = -1007,     /* operation not valid in the object's state */
	SC_ETOOBIG = -1008,    /* a size limit was reached */
	SC_EHTTP = -1009,      /* HTTP request failed (see http_status) */
	SC_ETASK = -1010,      /* a task failed */
	SC_ECONFIG = -1011,    /* invalid configuration */
	SC_EPROTO = -1012,     /* peer broke the protocol (bad JSON, bad reply) */
	SC_EDELIVERY = -1013,  /* a delivery to a target failed */
	SC_EDB = -1014,        /* database error not covered above */
	SC_EEXHAUSTED = -1015, /* the runner itself is out of descriptors or
				  processes (EMFILE, ENFILE, EAGAIN) */
};

#define SC_ERR_MSG_MAX 512

/*
 * Detail of a failure. Zero-initialise (or sc_err_clear) before use.
 *   code            the SC_E* code, 0 while nothing failed
 *   http_status     HTTP status when the failure came from a response, else 0
 *   retry_after_ms  > 0: do not retry before this many ms from now (a hint)
 *   permanent       true: retrying cannot help (do not retry)
 *   ambiguous       true: the failed request (or a command's input) may
 *                   have reached its receiver and been acted on before
 *                   the failure (a timeout after the request was sent, a
 *                   connection lost before the answer, a command killed
 *                   after it started): not a sure failure. false: it
 *                   surely was not taken (never sent, or answered with a
 *                   definite refusal). Deliveries decide on it whether a
 *                   second copy must be declared (docs/delivery.md).
 *   msg             one line, no trailing newline, never holds secrets
 */
struct sc_err {
	int code;
	int http_status;
	int64_t retry_after_ms;
	bool permanent;
	bool ambiguous;
	char msg[SC_ERR_MSG_MAX];
};

/* Resets *err to "no error". err may be NULL. */
SC_API void sc_err_clear(struct sc_err *err);

/*
 * Records a failure and returns `code`, so callers can write
 * `return sc_err_set(err, SC_EINVAL, "...")`. If err is NULL, or already
 * holds an error, nothing is written (the first error wins).
 */
SC_API int sc_err_set(struct sc_err *err, int code, const char *fmt, ...)
	SC_PRINTF(3, 4);

/* Static, human-readable name of an SC_E* code; never NULL. Thread-safe. */
SC_API const char *sc_strerror(int code);

/* Frees memory the library returned as a plain string or array. NULL ok. */
SC_API void sc_free(void *p);

/* Library version string, e.g. "0.1.0". */
SC_API const char *sc_version(void);

/* ------------------------------------------------------------------ */
/* Logging                                                            */
/* ------------------------------------------------------------------ */

enum sc_log_level {
	SC_LOG_ERROR = 0, /* an attempt failed or a slot was lost */
	SC_LOG_WARN = 1,  /* degraded but handled */
	SC_LOG_INFO = 2,  /* a state transition */
	SC_LOG_DEBUG = 3, /* everything else */
};

/*
 * A log sink receives one finished logfmt line (no newline) per event.
 * The library never writes to stdout or stderr itself: the program installs
 * a sink. Without one, log lines are dropped.
 */
typedef void (*sc_log_fn)(void *ud, enum sc_log_level level, const char *line);

/* Installs the sink and the most verbose level that reaches it. Call
 * before starting threads; not thread-safe against concurrent logging. */
SC_API void sc_log_set_sink(sc_log_fn fn, void *ud, enum sc_log_level max);

/* A ready-made sink that writes each line plus '\n' to stderr. */
SC_API void sc_log_stderr(void *ud, enum sc_log_level level, const char *line);

/* Parses "error", "warn", "info" or "debug". Returns 0 or SC_EINVAL. */
SC_API int sc_log_level_parse(const char *s, enum sc_log_level *out);

/* ------------------------------------------------------------------ */
/* Clock                                                              */
/* ------------------------------------------------------------------ */

/*
 * Every component asks one clock for the time. The real clock reads the
 * system's wall clock; a virtual clock only moves when told to, which is how
 * tests and `surecron simulate` run a week in a moment.
 * A clock is safe to read and move from several threads.
 */
struct sc_clock;

/* The process-wide real clock; never freed. */
SC_API struct sc_clock *sc_clock_real(void);

/* A new virtual clock at start_ms. NULL only when out of memory. */
SC_API struct sc_clock *sc_clock_virtual_new(int64_t start_ms);

/*
 * A real clock shifted by offset_ms: it runs at real speed from
 * real now + offset_ms. The daemon's test seam (SURECRON_TEST_CLOCK, test
 * builds only) uses it to reach a weekly slot in seconds. Not virtual.
 * Free with sc_clock_free. NULL only when out of memory.
 */
SC_API struct sc_clock *sc_clock_offset_new(int64_t offset_ms);

/* Frees a virtual or offset clock; NULL and the real clock are ignored. */
SC_API void sc_clock_free(struct sc_clock *c);

/* Current time in UTC ms. */
SC_API int64_t sc_clock_now_ms(const struct sc_clock *c);

/* True for a virtual clock. */
SC_API bool sc_clock_is_virtual(const struct sc_clock *c);

/* Moves a virtual clock (no-op on the real one). */
SC_API void sc_clock_set_ms(struct sc_clock *c, int64_t ms);
SC_API void sc_clock_advance_ms(struct sc_clock *c, int64_t delta_ms);

/* ------------------------------------------------------------------ */
/* Retry policy (src/retry.h)                                         */
/* ------------------------------------------------------------------ */

enum sc_backoff {
	SC_BACKOFF_EXPONENTIAL = 0, /* delay after attempt k: base * 2^(k-1) */
	SC_BACKOFF_FIXED = 1,       /* delay after every attempt: base */
};

/* How often a slot is attempted and how long to wait between attempts. */
struct sc_retry_policy {
	int attempts;             /* total attempts, >= 1 */
	enum sc_backoff backoff;
	int64_t delay_ms;         /* the base delay */
};

/* The two classes of DESIGN.md's retry policy. */
enum sc_freq_class {
	SC_FREQ_DEFAULT = 0,      /* 2 attempts, exponential, 60 s */
	SC_FREQ_LOW = 1,          /* 4 attempts, exponential, 30 min */
};

/* The policy of a class. */
SC_API struct sc_retry_policy sc_retry_policy_for(enum sc_freq_class cls);

/*
 * The delay before the attempt that follows failed attempt k (k >= 1):
 * base * 2^(k-1) for exponential, base for fixed. Saturates instead of
 * overflowing. Thread-safe.
 */
SC_API int64_t sc_retry_delay_ms(const struct sc_retry_policy *p, int k);

/*
 * The instant of the attempt after failed attempt k that ran at now_ms:
 * now_ms + delay, but never earlier than a retry-after hint
 * (hint_ms > 0: "not before now_ms + hint_ms").
 */
SC_API int64_t sc_retry_next_ms(const struct sc_retry_policy *p, int k,
				int64_t now_ms, int64_t hint_ms);

/* "low-frequency" or "default". */
SC_API const char *sc_freq_class_name(enum sc_freq_class cls);

/* ------------------------------------------------------------------ */
/* Cron (src/cron.h, src/tz.h)                                        */
/* ------------------------------------------------------------------ */

/*
** CAPI3REF: Time zones
**
** A loaded IANA time zone, read from the system's TZif files by the
** library's own reader (RFC 8536: v1 and v2+ data plus the POSIX-TZ footer
** rule for instants beyond the file's table). Zones are immutable once
** loaded and owned by the library: a process-wide cache, guarded by a
** mutex, keeps each zone until the process exits, so a pointer returned
** here stays valid and may be shared between threads freely. Nothing here
** touches the process-wide TZ (no setenv, tzset or localtime).
*/
struct sc_zone;

/*
** CAPI3REF: Load a zone by name
**
** Loads `name` ("Europe/Berlin", "UTC", ...) from $TZDIR, or
** /usr/share/zoneinfo when TZDIR is unset, and sets *out. A name that is
** empty, starts with '/' or holds ".." is refused. Returns 0, SC_EZONE
** (unknown, unreadable or malformed zone; the message names it) or
** SC_ENOMEM. Thread-safe.
*/
SC_API int sc_zone_load(const char *name, const struct sc_zone **out,
			struct sc_err *err);

/* CAPI3REF: The built-in UTC zone; never NULL, needs no file. */
SC_API const struct sc_zone *sc_zone_utc(void);

/*
** CAPI3REF: The system's local zone
**
** The zone named by the TZ environment variable when it is set to a
** loadable name (a leading ':' is ignored) or a POSIX TZ rule, else the
** zone of /etc/localtime, else UTC. Decided once per process; never NULL.
** Thread-safe.
*/
SC_API const struct sc_zone *sc_zone_local(void);

/* CAPI3REF: The zone's name ("America/New_York"); valid as long as the
** zone (for ever). */
SC_API const char *sc_zone_name(const struct sc_zone *z);

/*
** CAPI3REF: UTC offset at an instant
**
** Seconds east of UTC in effect at utc_ms (-18000 for New York in winter,
** 37800 for Lord Howe in winter). Thread-safe, no allocation.
*/
SC_API int32_t sc_zone_offset_s(const struct sc_zone *z, int64_t utc_ms);

/*
** CAPI3REF: A parsed cron expression
**
** A small value type (40 bytes, no heap): copy it, store it, compare it
** with memcmp after sc_cron_parse. Bit n of a set means "value n matches".
** The fields are public only so that the type can live on the stack; read
** them through the functions below. SC_CRON_* flags:
**   DOM_STAR / DOW_STAR  the day field was exactly "*" or "?" (unrestricted;
**                        when both day fields are restricted a day matches
**                        if either matches, the OR rule of cron)
**   SECONDS              the expression had 6 fields (leading seconds)
**   FIXED_TIME           neither minute, hour nor (6 fields) seconds
**                        starts with '*' (the DST rule, see sc_cron_next)
**   DOM_SINGLE / DOW_SINGLE  the day field is one fixed value: a number,
**                        a name, L, 5L or 5#2 (the frequency class rule)
*/
struct sc_cron {
	uint64_t sec;       /* bits 0-59 */
	uint64_t min;       /* bits 0-59 */
	uint32_t hour;      /* bits 0-23 */
	uint32_t dom;       /* bits 1-31; bit 0: L, the month's last day */
	uint16_t mon;       /* bits 1-12 */
	uint8_t dow;        /* bits 0-6, 0 = Sunday */
	uint8_t dow_last;   /* bit w: the last weekday w of the month (5L) */
	uint8_t dow_nth[7]; /* dow_nth[w] bit n-1: the n-th weekday w (5#2) */
	uint8_t flags;      /* SC_CRON_* */
};

#define SC_CRON_DOM_STAR 0x01
#define SC_CRON_DOW_STAR 0x02
#define SC_CRON_SECONDS 0x04
#define SC_CRON_FIXED_TIME 0x08
#define SC_CRON_DOM_SINGLE 0x10
#define SC_CRON_DOW_SINGLE 0x20

/* Longest expression sc_cron_parse accepts, in bytes. */
#define SC_CRON_EXPR_MAX 256

/*
** CAPI3REF: Parse a cron expression
**
** Understands 5 fields (minute hour day-of-month month day-of-week) or 6
** (a leading seconds field); numbers; names JAN-DEC and SUN-SAT in any
** case; "*"; "?" in the day fields; ranges a-b; lists; steps (star)/n, a-b/n
** and a/n (a to the field's max); day-of-week 0-7 (0 and 7 are Sunday,
** SUN closing a range is 7: FRI-SUN); L (last day) in day-of-month; 5L
** (last Friday) and 5#2 (second Friday) in day-of-week; the macros
** @yearly @annually @monthly @weekly @daily @midnight @hourly.
**
** Returns 0 and fills *out, or leaves *out untouched and returns
** SC_ECRON (malformed; the message names field, token and reason:
** `invalid cron "0 25 * * *": hour: 25 is out of range 0-23`) or SC_ENEVER
** (well formed but no day of any year matches, found by a bounded search:
** `0 0 30 2 *`). Thread-safe, no allocation.
*/
SC_API int sc_cron_parse(const char *expr, struct sc_cron *out,
			 struct sc_err *err);

/*
** CAPI3REF: Next fire time
**
** Sets *out_ms to the first fire instant strictly after after_ms (UTC ms)
** of the expression in zone z (NULL means UTC). Fire instants are whole
** seconds.
**
** Daylight saving time follows the rule of cronie and Debian cron(8):
**   - A fixed-time expression (SC_CRON_FIXED_TIME) goes by the wall clock:
**     a time that falls in a skipped interval fires once, right at the
**     change (02:30 in a 02:00->03:00 gap fires at 03:00 new time, once,
**     even when several of its times fell in the gap or it also fires at
**     03:00); a time in a repeated interval fires once, in the first pass.
**   - Every other expression follows real time: skipped times do not
**     happen and repeated times fire in both passes.
**
** Returns 0, SC_EINVAL (after_ms beyond year 1..9999, or an sc_cron that
** no sc_cron_parse produced) or SC_ENEVER (no fire time within 400
** years). Thread-safe, no allocation.
*/
SC_API int sc_cron_next(const struct sc_cron *c, const struct sc_zone *z,
			int64_t after_ms, int64_t *out_ms, struct sc_err *err);

/*
** CAPI3REF: Frequency class
**
** DESIGN.md's rule: SC_FREQ_LOW when the day-of-month or the day-of-week
** field is one fixed value (a number, a name, L, 5L, 5#2; @weekly,
** @monthly and @yearly expand to such a field), else SC_FREQ_DEFAULT.
** `0 17 * * 5` low, `10 17 * * 1-5` default, `0 9 1,15 * *` default.
** When reason is not NULL, writes there (at most n bytes, always
** terminated) which field made it so, e.g. "day-of-week is the single
** value FRI", or "neither day-of-month (*) nor day-of-week (MON-FRI) is a
** single fixed value". Thread-safe.
*/
SC_API enum sc_freq_class sc_cron_class(const struct sc_cron *c,
					char *reason, size_t n);

/*
** CAPI3REF: Plain description
**
** Writes an English description ("at 17:00, on Friday") into out (at most
** n bytes, always terminated; truncated when it does not fit). Returns
** out. Thread-safe.
*/
SC_API const char *sc_cron_describe(const struct sc_cron *c, char *out,
				    size_t n);

/* The most attempts a retry timeline holds (retry_policy_valid's cap). */
#define SC_RETRY_TIMELINE_MAX 100

/*
** CAPI3REF: Retry timeline of a slot
**
** When every attempt of the slot at slot_ms fails and no hint delays it,
** attempt k (1-based) runs at attempt_ms[k-1]: the first at the slot, each
** next one sc_retry_delay_ms after the previous. The recovery window is
** the time from the slot to the last attempt (3 h 30 min for the
** low-frequency policy); window_end_ms = slot_ms + window_ms. Returns 0
** or SC_EINVAL (attempts outside 1..SC_RETRY_TIMELINE_MAX). Thread-safe.
*/
struct sc_retry_timeline {
	int n_attempts;
	int64_t attempt_ms[SC_RETRY_TIMELINE_MAX];
	int64_t window_ms;
	int64_t window_end_ms;
};

SC_API int sc_retry_timeline(const struct sc_retry_policy *p,
			     int64_t slot_ms, struct sc_retry_timeline *out,
			     struct sc_err *err);

/*
 * The layers above cron (store, queue, scheduler, orchestrator, tasks,
 * delivery, HTTP client, config, daemon) are internal for now: their
 * interfaces live in src/<module>.h under <module>_ names and may change
 * between versions. The surecron binary links libsurecron statically. An
 * item moves here, with an sc_ name and SC_API, once a program outside the
 * tree needs it and its shape has settled.
 */

#ifdef __cplusplus
}
#endif

#endif /* SURECRON_H */
