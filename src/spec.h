/*
 * spec.h - the configuration as plain data.
 *
 * config.c turns surecron.yaml into a `struct config`; every other module
 * consumes the part it needs (tasks read task_spec, delivery reads
 * target_spec, the HTTP client reads auth_spec, the scheduler reads
 * schedule_spec) and knows nothing of YAML. All strings and arrays are owned
 * by the config and freed by config_free (config.h). Optional strings are
 * NULL when absent. Read-only once loaded, so safe to share across threads.
 */
#ifndef SURECRON_SPEC_H
#define SURECRON_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "retry.h"
#include "surecron.h"

/*
 * Output limits, one set (issue 11). A task's output is capped by its
 * max_output (default SPEC_DEFAULT_MAX_OUTPUT). A slot's result carries
 * at most SPEC_RESULT_MAX bytes of task output (summaries and previews
 * together): config refuses a max_output above it at load, and when the
 * tasks of a slot together give more, the orchestrator cuts the result to
 * the limit and says so in it (a marked truncation), rather than fail the
 * same way on every retry.
 */
#define SPEC_DEFAULT_MAX_OUTPUT ((size_t)1 << 20)
#define SPEC_RESULT_MAX ((size_t)1 << 20)

enum task_kind { TASK_COMMAND = 0, TASK_HTTP = 1 };

struct task_spec {
	char *name;
	enum task_kind kind;
	/* command */
	char **argv;           /* NULL-terminated; NULL when `shell` is used.
				  A program written with a '/' is absolute
				  (resolved against the config's folder);
				  a bare name is looked up on PATH */
	char *shell;           /* run with /bin/sh -c only when set */
	char *cwd;             /* working directory (absolute), NULL:
				  inherited */
	char **env;            /* NULL-terminated "KEY=VALUE" extras */
	int64_t timeout_ms;    /* default 10 min (http: 60 s) */
	int64_t grace_ms;      /* SIGTERM -> SIGKILL, default 5 s */
	size_t max_output;     /* stdout cap, default 1 MiB, at most
				  SPEC_RESULT_MAX */
	/* http */
	char *method;          /* default "GET" */
	char *url;
	char **headers;        /* NULL-terminated "Name: value" */
	char *body;
	char *auth;            /* name of an auth_spec, or NULL */
	int expect_status;     /* 0: any 2xx */
};

enum target_kind {
	TARGET_SLACK = 0,   /* incoming-webhook JSON {"text": ...} */
	TARGET_WEBHOOK = 1, /* POST the message object, optionally signed */
	TARGET_FILE = 2,    /* append the message object as one JSON line */
	TARGET_COMMAND = 3, /* the message object on the command's stdin */
	TARGET_EMAIL = 4,   /* a plain-text mail over SMTP (issue 18) */
};

enum on_ambiguous { AMBIGUOUS_RESEND = 0, AMBIGUOUS_HOLD = 1 };

/*
 * `notices:` (issue 13): which failed attempts send a failure notice to a
 * delivery target. A schedule's policy applies to each of its targets
 * unless the target sets its own. The ledger is the same under every one.
 */
enum notice_policy {
	NOTICES_EVERY = 0, /* every failed attempt (the default) */
	NOTICES_FINAL = 1, /* only the attempt that loses the slot */
	NOTICES_NONE = 2,  /* never; alerts still go out */
};

struct target_spec {
	char *name;
	enum target_kind kind;
	char *url_env;          /* slack, webhook: variable holding the URL */
	char *secret_env;       /* webhook: variable holding the HMAC secret */
	char *signature_header; /* webhook: default "X-Surecron-Signature" */
	char *path;             /* file: absolute */
	char **argv;            /* command: NULL-terminated */
	/* email: url_env holds smtp:// or smtps:// (STARTTLS is required
	 * but to a loopback host); the envelope sender and recipients, and
	 * the variables of the SMTP login (both NULL: no login). */
	char *mail_from;
	char **mail_to;         /* NULL-terminated, at least one */
	char *username_env;
	char *password_env;
	int64_t connect_timeout_ms; /* default 10 s */
	int64_t timeout_ms;         /* default 30 s */
	enum on_ambiguous on_ambiguous;
	bool has_notices;       /* `notices:` set on the target: it wins
				   over the schedule's */
	enum notice_policy notices;
};

enum auth_kind { AUTH_OAUTH2 = 0, AUTH_BEARER = 1 };

struct auth_spec {
	char *name;
	enum auth_kind kind;
	/* oauth2 client credentials (RFC 6749 section 4.4) */
	char *token_url;
	char *client_id;
	char *client_secret_env;
	char *scope;            /* may be NULL */
	bool client_auth_body;  /* false: HTTP Basic (default); true: in body */
	char *reset_header;     /* provider's rate-limit reset header, or NULL */
	/* bearer */
	char *token_env;
};

enum catchup { CATCHUP_LATEST = 0, CATCHUP_ALL = 1, CATCHUP_NONE = 2 };

/* `overlap:` (issue 17): what a slot does while another slot of the same
 * schedule runs, on any node. skip and buffer_one are judged when the
 * slot falls due (scheduler.c, issue 43), through the store. */
enum overlap {
	OVERLAP_QUEUE = 0, /* it waits (the default); the wait is lateness */
	OVERLAP_SKIP = 1,  /* not run while another slot of the schedule runs
			      or waits: a `skipped` row, cause overlap */
	OVERLAP_ALLOW = 2, /* it runs alongside */
	OVERLAP_BUFFER_ONE = 3, /* it waits, but at most one slot waits: a
				   slot due while one waits gets a `skipped`
				   row, cause buffered */
	OVERLAP_REPLACE = 4, /* it runs: the running slot's attempt ends (a
				`replaced` row; its task gets SIGTERM, then
				SIGKILL after the task's grace) */
};

/*
 * `heartbeat:` (issue 14): pings to an external monitor in the shape of
 * Healthchecks.io's ping API (GET URL, URL/start, URL/fail, ?rid=UUID).
 * The URL is a secret: only the NAME of its variable is in the file.
 */
struct heartbeat_spec {
	char *url_env;          /* NULL: no heartbeat */
	int64_t every_ms;       /* top level: the daemon's ping period
				   (default 1m); 0 for a schedule's */
};

/*
 * `sla:` (issue 14): timing checks of a schedule; 0: that check is off.
 * A breach is a ledger row and an alert (reasons late, overrun, stale).
 */
struct sla_spec {
	int64_t start_within_ms;   /* a due slot not started by then: late */
	int64_t max_runtime_ms;    /* an attempt running longer: overrun */
	int64_t success_within_ms; /* no delivered slot for that long: stale */
};

/*
 * What few schedules set (issue 45): kept out of struct schedule_spec,
 * behind its `x`, so that a schedule that sets none of it costs a
 * pointer, not 96 bytes. config_parse interns each schedule's extras in
 * the config's pool: schedules with equal extras share one copy, and
 * schedules with none share the all-zero one. Every field's default is
 * 0 / NULL (config.c's schedule_extra_pool tests each one). Read only
 * through spec_x(), which gives the defaults for a spec whose x is NULL
 * (a spec made by hand).
 */
struct schedule_extra {
	struct heartbeat_spec heartbeat; /* `heartbeat: {url_env}` (issue 14) */
	struct sla_spec sla;             /* `sla:`, when has_sla */
	/* Operator controls (issue 17); all 0 / default when not written. */
	int64_t catchup_window_ms;  /* `catchup_window:`: a late slot older
				       than this is missed, whatever
				       `catchup`; 0: no bound */
	int64_t jitter_ms;          /* `jitter:`: each slot starts up to this
				       late, the offset a hash of (schedule,
				       slot); 0: none */
	int64_t deadline_ms;        /* `deadline:`: no attempt starts after
				       slot + this; 0: none */
	/* The environment override (config_env.c): `schedule_env:` as
	 * written, or NULL; when a variable applied, its name and the
	 * expression the file wrote (NULL when the file has none), the
	 * spec's cron then being the variable's value. With no override,
	 * override_var and cron_config are NULL and the spec's cron is the
	 * file's (spec_cron_config). Strings of the config's pool. */
	char *schedule_env;
	char *override_var;
	char *cron_config;
	struct sc_retry_policy retry;   /* `retry:`, when the spec's
					   has_retry (spec_policy) */
	enum notice_policy notices;    /* `notices:`, default every */
	/* `expect:` (issue 13): a run whose deliverables fall short is a
	 * failed run (cause "expectation"). 0: no expectation. */
	int expect_min_previews;
	int expect_min_summary_chars;
	bool has_sla;           /* `sla:` written */
};

/* Laid out by size, widest first, so that no member pads (issue 45: a
 * config of 100,000 schedules holds 100,000 of these): the counts are
 * 32 bits (a config holds far fewer than 2^32 of anything) and the
 * small enums and flags share one 16-bit unit. */
struct schedule_spec {
	char *name;
	char *cron;             /* the final expression (after overrides);
				   as written: spec_cron_config */
	char *tz;               /* IANA name; NULL: the system's zone */
	char **targets;         /* names, NULL-terminated */
	struct task_spec *tasks;
	char **renamed_from;    /* `renamed_from:` names, NULL-terminated
				   (never NULL once loaded): the schedule's
				   earlier names, whose state it keeps */
	/*
	 * Resolved once by config_parse, from the FINAL expression (after the
	 * environment overrides) and tz, so that no consumer parses `cron` or
	 * loads the zone again: the scheduler fires on expr in zone, the
	 * queue retries with spec_policy. A spec not made by config_parse has
	 * zone and expr NULL, which the scheduler refuses (SC_EZONE).
	 */
	const struct sc_cron *expr; /* cron, parsed: the pool's (shared by
				   the schedules that write it); a spec
				   made by hand points to its own */
	const struct sc_zone *zone; /* tz, or the system's zone when tz is
				       NULL; loaded zones live as long as the
				       process (tz.c), so it is never freed */
	/* The rarely set fields, shared (above); NULL: every default. In a
	 * config_parse'd config it lives in the pool (config_free frees
	 * it); in a spec made by hand it is the maker's. */
	const struct schedule_extra *x;
	uint32_t n_targets;
	uint32_t n_tasks;
	uint32_t n_renamed_from;
	enum catchup catchup : 2;
	enum sc_freq_class cls : 1; /* the frequency class of expr */
	enum overlap overlap : 3;   /* `overlap:`, default queue */
	bool has_retry : 1;     /* true when `retry:` overrides the class
				   (the policy is then x->retry) */
	bool disabled : 1;      /* `enabled: false`: fires nothing */
};

/* The extras of s: s->x, or the defaults (all 0) when it is NULL. */
static inline const struct schedule_extra *
spec_x(const struct schedule_spec *s)
{
	static const struct schedule_extra none;
	return s->x ? s->x : &none;
}

/* The retry policy of s: `retry:` as written when has_retry, else the
 * policy of its class. Valid as long as s's extras (a class's: for the
 * life of the process). */
static inline const struct sc_retry_policy *
spec_policy(const struct schedule_spec *s)
{
	return s->has_retry ? &spec_x(s)->retry : retry_policy_of(s->cls);
}

/* The expression as written in the file (NULL when it has none): the
 * spec's cron unless an environment variable overrode it. */
static inline const char *spec_cron_config(const struct schedule_spec *s)
{
	return spec_x(s)->override_var ? spec_x(s)->cron_config : s->cron;
}

struct config_locs;
struct config_index;
struct config_pool;

/* The reasons `alerts: on` may name. Later issues add late, overrun and
 * stale. */
#define CONFIG_ALERT_ON_LOST 1u
#define CONFIG_ALERT_ON_MISSED 2u
#define CONFIG_ALERT_ON_LATE 4u     /* sla.start_within breached */
#define CONFIG_ALERT_ON_OVERRUN 8u  /* sla.max_runtime breached */
#define CONFIG_ALERT_ON_STALE 16u   /* sla.success_within breached */
/* Every reason: the sla ones fire only for schedules with `sla:`. */
#define CONFIG_ALERT_ON_DEFAULT                                           \
	(CONFIG_ALERT_ON_LOST | CONFIG_ALERT_ON_MISSED | CONFIG_ALERT_ON_LATE | \
	 CONFIG_ALERT_ON_OVERRUN | CONFIG_ALERT_ON_STALE)

/* One file of a config: the main file or an included fragment. */
struct config_file {
	char *path;             /* as resolved (absolute) */
	size_t n_schedules, n_targets, n_auths; /* defined in this file */
};

/* Room of a Unix socket's path, NUL included (sockaddr_un.sun_path). */
#define CONFIG_SOCKET_PATH_MAX 108

struct config {
	char *path;             /* the file it came from */
	char *dir;              /* its folder, absolute: relative paths in the
				   file (store, file targets, programs, cwd)
				   are resolved against it */
	char *store_url;        /* default "sqlite:./surecron.db", relative
				   paths resolved against the file's folder */
	int concurrency;        /* default 1 */
	int64_t lease_ms;       /* default 5 min */
	int64_t grace_ms;       /* default 30 s */
	int64_t skew_grace_ms;  /* worker.skew_grace, default 10 min */
	int64_t clock_tolerance_ms; /* worker.clock_tolerance, default 2 s:
				       how far the wall clock may be from the
				       monotonic expectation or the database
				       server's clock (issue 42) */
	struct target_spec *targets;
	size_t n_targets;
	char **alert_targets;   /* NULL-terminated names, may be empty */
	size_t n_alert_targets;
	unsigned alert_on;      /* `alerts: on`: CONFIG_ALERT_ON_* bits;
				   config_parse sets the default (both); a
				   hand-made config with 0 raises none */
	int64_t alert_realert_ms; /* `alerts: realert`; 0: never repeat */
	struct heartbeat_spec heartbeat; /* top-level `heartbeat:` (issue 14) */
	/* `retention:` (issue 15): how long rows are kept, by age of their
	 * slot; 0 = forever (the default). prune.h says what is never
	 * removed whatever these say. */
	int64_t retention_ledger_ms, retention_jobs_ms, retention_outbox_ms;
	/* `http:` (issue 16): the daemon's web surface, off when listen is
	 * NULL. listen is "host:port" or "[v6]:port", an IP literal or
	 * localhost (config_http_addr); a non-loopback one has token_env
	 * (config_parse refuses it otherwise). token_env names the variable
	 * that holds the bearer token POSTs need; NULL: no POST. */
	char *http_listen;
	char *http_token_env;
	/* `status_socket:` (issue 15): the Unix socket on which the daemon
	 * answers `status NAME` (status_socket.h), absolute; NULL: none. */
	char *status_socket;
	/* The files the config came from (issue 15, `include:`): [0] is the
	 * main file, then each fragment in the order it was read, with how
	 * many schedules each defined (for `check`). */
	struct config_file *files;
	size_t n_files;
	struct auth_spec *auths;
	size_t n_auths;
	struct schedule_spec *schedules;
	size_t n_schedules;
	struct config_locs *locs; /* private to config.c: key path ->
				     line:column, for config_check */
	struct config_index *index; /* config_lookup.c's own: name -> item */
	struct config_pool *pool; /* private to config.c: the strings and
				     vectors config_parse shares between
				     items (config_pool.c); NULL in a
				     config made by hand */
};

/* Lookups by name (config.c: O(1) through the index config_parse builds;
 * linear over the section for a config made by hand); NULL when absent
 * or when c or name is NULL. The pointer is valid until config_free. */
const struct target_spec *config_target(const struct config *c,
					const char *name);
const struct auth_spec *config_auth(const struct config *c, const char *name);
const struct schedule_spec *config_schedule(const struct config *c,
					    const char *name);
/*
 * The schedule that runs the jobs and rows stored under name (issue 43):
 * the schedule of that name, else the one whose `renamed_from:` holds it
 * (the config allows one heir per earlier name). NULL when neither. The
 * rename lookup is linear in the schedules, and only made when no
 * schedule has the name.
 */
const struct schedule_spec *config_schedule_of(const struct config *c,
					       const char *name);
/*
 * The config's digest as nodes publish it (issue 43): 16 hex digits of
 * a 64-bit FNV-1a over what decides which slots a node fires and claims,
 * schedule by schedule in config order: name, final cron, tz and
 * renamed_from names. Two nodes with the same digest fire and claim the
 * same schedules; one that differs is config skew. Writes out (NUL
 * included). O(schedules).
 */
void config_digest(const struct config *c, char out[17]);

#endif
