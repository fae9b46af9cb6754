/*
 * cli_commands.c - the one sorted command table: it drives dispatch
 * (main.c), the command list and per-command help (like git's
 * commands[]). A new command is one cmd_<name>.c and one row here.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Sorted by name; `help` lists them in this order. */
static const struct cli_command commands[] = {
	{"ack", cmd_ack,
	 "ack [--config FILE] [--note TEXT] [--by NAME] SCHEDULE SLOT",
	 "acknowledge a lost or missed slot: its alert stops",
	 "Closes every open alert of SCHEDULE whose slots hold SLOT (ISO 8601,\n"
	 "as the alert and `surecron ledger --lost` print it): it is not sent\n"
	 "again (realert stops), and `ledger --lost` lists the slot as acked\n"
	 "and no longer exits 1 for it. An \"acked\" ledger row records who\n"
	 "(--by NAME, else the user sudo ran us for, else the real user),\n"
	 "when, and --note TEXT (at most 200 bytes).\n"
	 "A lost slot can also be run again (`surecron retry JOB`, or\n"
	 "`surecron trigger --slot SLOT SCHEDULE`): when that succeeds, its\n"
	 "alert closes by itself and a \"recovered\" message goes out.\n"
	 "Exit status: 0 acknowledged, 1 nothing to acknowledge at that slot\n"
	 "(or a store error), 2 usage, config or unknown schedule.\n"},
	{"audit", cmd_audit,
	 "audit [--config FILE] [--schedule S] [--since T] [--until T] "
	 "[--json]",
	 "name every slot of a period that the store has no record of",
	 "Recomputes from the config every slot each schedule (or only\n"
	 "--schedule S) should have fired in the period, and lists each one\n"
	 "that has no job and no ledger row (not run, not missed, not lost):\n"
	 "an unaccounted slot, with why. Records under a name in the\n"
	 "schedule's renamed_from count. T is ISO 8601 or an age before now\n"
	 "(7d, 36h, 90m); --since defaults to 7d, --until to now (since\n"
	 "inclusive, until exclusive). A slot the scheduler has not reached\n"
	 "yet and at most 10 s old is not a hole; an older one is (the\n"
	 "daemon is not running on this store). A slot before a schedule's\n"
	 "first record in the store is a hole too, unless the store has a\n"
	 "record of the schedule before --since: a rename without\n"
	 "renamed_from, a store switch and a schedule added since all look\n"
	 "alike there; pass --since after the first start to accept one.\n"
	 "At most 100000 slots per schedule are looked at; the output says\n"
	 "where it cut. With retention.ledger set, slots older than what it\n"
	 "keeps (the prune horizon: the retention or the longest recovery\n"
	 "window, plus a day) are not judged, since prune may have removed\n"
	 "their records: an older --since is moved up to it, with a note.\n"
	 "\n"
	 "  --json   one JSON object: since, until, slots, unaccounted,\n"
	 "           truncated, retention_floor, schedules[], holes[]\n"
	 "           (schedule, slot, why)\n"
	 "\n"
	 "Exit status: 0 no unaccounted slot, 1 at least one (or a store\n"
	 "error), 2 usage, config, unknown schedule, or a period that ends\n"
	 "before what retention.ledger keeps.\n"},
	{"check", cmd_check,
	 "check [--strict] [--store | --names] [--config FILE | FILE]",
	 "validate a config file without running anything",
	 "Reads FILE (default ./surecron.yaml) and checks everything: YAML\n"
	 "syntax, known keys and types, durations, names, references between\n"
	 "sections, environment variables the config names, task programs,\n"
	 "folders, cron expressions and time zones. Prints each problem as\n"
	 "FILE:LINE:COLUMN: key.path: reason on stderr. Exit 0 when clean\n"
	 "(and prints \"ok: N schedules, N targets\"), 2 otherwise.\n"
	 "\n"
	 "It also warns, as FILE:LINE:COLUMN: warning: key.path: reason on\n"
	 "stderr, when no alert target is configured (neither alerts.targets\n"
	 "nor SURECRON_ALERT_TARGETS) and when a schedule's only delivery\n"
	 "target is also the only alert target (one outage silences both).\n"
	 "Warnings alone keep exit 0.\n"
	 "\n"
	 "  --strict   warnings are errors: exit 2 when there is one\n"
	 "  --store    also open the config's store (exit 1 when it cannot\n"
	 "             be read) and, on PostgreSQL, warn when this host's\n"
	 "             clock or a live node's is off the database server's\n"
	 "             by more than worker.clock_tolerance\n"
	 "  --names    only print the schedules' names, one per line (for\n"
	 "             shell completion; no other check)\n"},
	{"explain", cmd_explain,
	 "explain [--tz ZONE] [--from ISO8601] [--json] EXPR\n"
	 "       surecron explain [--config FILE] [--from ISO8601] [--json] "
	 "SCHEDULE",
	 "describe a cron expression or a schedule: class and retry timeline",
	 "Prints what EXPR means, its next 5 fire times, its frequency class\n"
	 "with the field that decided it, the retry policy of that class and\n"
	 "the timeline of the next slot's attempts with its recovery window.\n"
	 "\n"
	 "A single argument without spaces that is not a macro (@daily) names\n"
	 "a schedule of the config (--config FILE, default ./surecron.yaml):\n"
	 "then the expression is the schedule's final one, in its zone, and\n"
	 "the output also says whether an environment variable overrode it\n"
	 "(SURECRON_SCHEDULE_<NAME> or the schedule's schedule_env) and\n"
	 "whether the retry policy is the config's `retry:` or the class's.\n"
	 "It also prints the schedule's notice policy (which failed attempts\n"
	 "send a failure notice; a target's own where it sets one) and its\n"
	 "`expect:`.\n"
	 "\n"
	 "  --tz ZONE        IANA zone (default: the system's local zone;\n"
	 "                   not with SCHEDULE, which has its own)\n"
	 "  --from ISO8601   start after this instant, with Z or an offset\n"
	 "                   (default: now)\n"
	 "  --config FILE    the config holding SCHEDULE\n"
	 "  --json           print one JSON object instead of text\n"
	 "\n"
	 "Invalid expression, zone, config or unknown schedule: a message on\n"
	 "stderr, exit status 2.\n"},
	{"help", cmd_help, "help [COMMAND]", "show help for surecron or a command",
	 "Without an argument, lists the commands. With one, shows that\n"
	 "command's usage and description (the same as COMMAND --help).\n"},
	{"http", cmd_http,
	 "http [--auth NAME] [--config FILE] [-H HEADER]... [--timeout DUR] "
	 "METHOD URL [--data BODY]",
	 "send one HTTP request; the exit status carries the verdict",
	 "Sends METHOD URL through surecron's HTTP client (TLS verified, no\n"
	 "redirects) and prints the response body.\n"
	 "--auth NAME adds the token of auth provider NAME from the config\n"
	 "(--config FILE, default ./surecron.yaml): OAuth2 tokens are fetched\n"
	 "and, on a 401, refreshed once. Without --config, the variable\n"
	 "SURECRON_AUTH_<NAME>_TOKEN, when set, is used as a bearer token.\n"
	 "\n"
	 "  -H, --header 'Name: value'   add a header (repeatable)\n"
	 "  -d, --data BODY              send BODY\n"
	 "  --timeout DUR                whole request (default 30s)\n"
	 "\n"
	 "Exit status: 0 on 2xx; 75 on 429, 5xx or a transport failure\n"
	 "(with a Retry-After hint, stdout gets one JSON line\n"
	 "{\"retry_after\": SECONDS, \"error\": \"...\"}); 78 on 403 or an\n"
	 "unusable auth provider; 1 on other statuses; 2 on usage errors.\n"},
	{"import-crontab", cmd_import_crontab,
	 "import-crontab [--system] [--user NAME] [--store URL] [--from ADDR] "
	 "[FILE|-]",
	 "print a surecron.yaml made from a crontab",
	 "Reads a crontab (FILE, or stdin for - or no FILE) as cron(8) reads\n"
	 "it and prints a surecron.yaml on stdout: one schedule per job line,\n"
	 "named from its command; the command run through /bin/sh -c as cron\n"
	 "runs it (`shell:`; the crontab's SHELL when it set one); NAME=VALUE\n"
	 "lines as the task's env, CRON_TZ= or TZ= as tz, '%' input on stdin\n"
	 "(the command still one argument of the shell's -c),\n"
	 "MAILTO= as an email target (url_env SURECRON_SMTP_URL) that also\n"
	 "gets the alerts. Lines that cannot be carried over (@reboot, another\n"
	 "user's line, a line ending in a backslash, a line cron would refuse,\n"
	 "text that is not UTF-8) are listed at the end as comments, with the\n"
	 "reason. The output is printable ASCII: other characters are escaped.\n"
	 "\n"
	 "  --system     the format with a user column (/etc/crontab,\n"
	 "               /etc/cron.d/*: the default for those paths)\n"
	 "  --user NAME  the user the daemon runs as (default: you); in the\n"
	 "               system format, other users' lines are not carried over\n"
	 "  --store URL  the store line of the output (default\n"
	 "               sqlite:./surecron.db)\n"
	 "  --from ADDR  the mail sender (default USER@localhost)\n"
	 "\n"
	 "Then: surecron check --config OUT, surecron explain --config OUT\n"
	 "NAME for each schedule's next runs, surecron run --config OUT.\n"
	 "Exit status: 0 printed (notes included), 1 the file cannot be read,\n"
	 "2 usage.\n"},
	{"ledger", cmd_ledger,
	 "ledger [--config FILE] [--schedule S] [--since T] [--until T] "
	 "[--outcome O] [--limit N] [--json]\n"
	 "       surecron ledger [--config FILE] --lost [--schedule S] "
	 "[--since T] [--until T] [--json]",
	 "show the record of attempts, lost and missed slots",
	 "Prints the ledger rows of the store the config names, in the order\n"
	 "they were written: slot (UTC), schedule, job id, attempt, outcome\n"
	 "and the error. The period selects rows by slot instant (--since\n"
	 "inclusive, --until exclusive); T is ISO 8601\n"
	 "(2026-11-27T17:00:00Z, or with an offset) or an age before now\n"
	 "(7d, 36h, 90m), and --since must come before --until. --outcome\n"
	 "is one of success, failed, lost, stalled, missed, duplicate,\n"
	 "released, decision, alert (an alert send's state), acked,\n"
	 "recovered. --limit N keeps the N most recent rows (1-1000000),\n"
	 "still listed oldest first.\n"
	 "\n"
	 "--lost reports only the lost slots (all attempts failed) and the\n"
	 "missed ones (not run after downtime, by the catchup policy), with a\n"
	 "header line counting them, and exits 1 when any slot of the period\n"
	 "was lost or missed and nobody acted, so `surecron ledger --lost\n"
	 "--since 1d` can page someone. A slot that later succeeded (retry,\n"
	 "trigger --slot) stays listed, marked recovered, and no longer\n"
	 "counts; so does one acknowledged with `surecron ack`, marked acked.\n"
	 "--lost takes no --outcome or --limit: the report covers the whole\n"
	 "period.\n"
	 "A lost job can be run again with `surecron retry JOB`.\n"
	 "Exit status: 0, 1 (open lost or missed slots with --lost, or a\n"
	 "store error), 2\n"
	 "(bad option, time, outcome, config or unknown schedule).\n"},
	{"next", cmd_next, "next [--tz ZONE | --config FILE] [--from ISO8601] "
	 "[--count N] EXPR|SCHEDULE",
	 "print the next fire times of a cron expression",
	 "Prints the next N fire instants of EXPR strictly after --from, one\n"
	 "per line, in ISO 8601 with the zone's offset at that instant, e.g.\n"
	 "2026-03-08T03:30:00-04:00. EXPR has 5 fields (minute hour\n"
	 "day-of-month month day-of-week), 6 with leading seconds, or is a\n"
	 "macro such as @daily; quote it, or give its fields as arguments.\n"
	 "\n"
	 "  --tz ZONE        IANA zone (default: the system's local zone)\n"
	 "  --from ISO8601   start after this instant, with Z or an offset\n"
	 "                   (default: now)\n"
	 "  --count N        how many instants (default 1, at most 10000)\n"
	 "  --config FILE    SCHEDULE names a schedule of FILE: its final\n"
	 "                   expression in its zone, each line the real start\n"
	 "                   instant (slot + jitter), then the slot and the\n"
	 "                   offset when there is one\n"
	 "\n"
	 "Daylight saving time: an expression whose minute and hour (and\n"
	 "seconds) do not start with '*' goes by the wall clock: a time\n"
	 "skipped by a change fires once at the change, a repeated time fires\n"
	 "once, in the first pass. Other expressions follow real time.\n"
	 "Invalid expression or zone: a message on stderr, exit status 2.\n"},
	{"pause", cmd_pause,
	 "pause [--config FILE] (--for DUR | --until T) [--note TEXT] "
	 "SCHEDULE",
	 "pause a schedule for a maintenance window (an expiry is required)",
	 "Pauses SCHEDULE from now for --for DUR (2h, 3d) or until --until T\n"
	 "(ISO 8601 with Z or an offset); at most 30 days, so a forgotten\n"
	 "pause ends by itself. The pause lives in the store: every node and\n"
	 "every CLI sees it. Each slot inside the window gets a \"paused\"\n"
	 "ledger row: not missed, not lost, not run late after the window.\n"
	 "`surecron trigger` still runs the schedule by hand. `status` shows\n"
	 "who paused (the user sudo ran us for, else the real user), why\n"
	 "(--note TEXT, at most 200 bytes) and until when; the daemon logs\n"
	 "the expiry (event=pause_expired). A new pause replaces the old.\n"
	 "Exit status: 0 paused, 1 store error, 2 usage, config or unknown\n"
	 "schedule.\n"},
	{"prune", cmd_prune, "prune [--config FILE] [--dry-run] [--json]",
	 "delete what the config's retention lets go",
	 "Deletes, by age of the slot, the ledger rows, finished jobs, sent\n"
	 "messages' bodies, send guards, slot markers and closed alerts older\n"
	 "than `retention:` (ledger, jobs, outbox; unset: kept forever), in\n"
	 "short batches a running daemon does not wait on. Each horizon is\n"
	 "now minus the larger of the retention and the longest recovery\n"
	 "window of the config's schedules, minus one day. Never deleted: a\n"
	 "lost or missed slot neither recovered nor acked (and the ack that\n"
	 "covers a kept one), a dead job, a ready or running job, a send not\n"
	 "yet sent (held, pending, failed), an open alert, each schedule's\n"
	 "newest ledger row and newest success (status's last outcome, the\n"
	 "metrics' last success), and the send guard and slot marker of a\n"
	 "slot that still has a job or is newer than retention.jobs\n"
	 "(`trigger --slot` refuses older slots), so a done slot is never\n"
	 "delivered twice. The daemon runs this once a day\n"
	 "when a retention is set (one node). Prints the horizons, the\n"
	 "counts per table and the bytes freed (SQLite: pages in use; the\n"
	 "file shrinks only with VACUUM, see docs/operations.md).\n"
	 "\n"
	 "  --dry-run   count what would go; remove nothing\n"
	 "  --json      one JSON object: dry_run, the horizons (*_before_ms),\n"
	 "              removed{ledger, jobs, outbox_bodies, send_guards,\n"
	 "              slot_markers, alerts, alert_sends}, bytes_freed,\n"
	 "              bytes_before, bytes_after, bytes_measure, batches\n"
	 "\n"
	 "Exit status: 0 done (or no retention set: nothing removed), 1 store\n"
	 "error, 2 usage or config.\n"},
	{"release", cmd_release,
	 "release [--config FILE] [--arrived | --resend] [--by NAME] SCHEDULE "
	 "SLOT [TARGET]",
	 "decide a send held after a crash (on_ambiguous: hold)",
	 "A target with on_ambiguous: hold is not resent when a crash left\n"
	 "its send in doubt; the slot's job fails and waits for an operator.\n"
	 "Check the receiver, then: --arrived marks TARGET sent (never sent\n"
	 "again), --resend marks it failed (the next attempt sends it from\n"
	 "the outbox; tasks do not run again) after a `duplicate` ledger row\n"
	 "declares the resend: a copy sent earlier may still arrive (a\n"
	 "worker paused past its lease). The decision is written to the\n"
	 "ledger (a `decision` row: target, decision, who - --by NAME, else\n"
	 "$SUDO_USER, else the user - and when). A job that died of the hold\n"
	 "is made ready again; its attempt numbers go on. SLOT is ISO 8601\n"
	 "(2026-11-27T17:00:00Z). Without\n"
	 "--arrived/--resend, prints the send state of each target of the\n"
	 "slot. Exit 0 when done, 2 on usage errors or when TARGET is not\n"
	 "held, 1 on store errors.\n"},
	{"resume", cmd_resume, "resume [--config FILE] SCHEDULE",
	 "end a schedule's pause now",
	 "Ends the running pause of SCHEDULE (`surecron pause`) now: its next\n"
	 "slot runs. The slots inside the window up to now stay paused (not\n"
	 "caught up). Exit status: 0 resumed, 1 not paused (or a store\n"
	 "error), 2 usage, config or unknown schedule.\n"},
	{"retry", cmd_retry, "retry [--config FILE] JOB",
	 "run a dead job (a lost slot) again",
	 "Makes dead job JOB (its id, as `ledger` and `status` show) ready\n"
	 "again with a fresh attempt budget; a running daemon picks it up.\n"
	 "Exit 0 when done; 2 when there is no such job or it is not dead\n"
	 "(waiting, running or done); 1 on store errors.\n"},
	{"run", cmd_run, "run [--config FILE] [--once]",
	 "the daemon: run the schedules of a config",
	 "Runs the schedules of FILE (default ./surecron.yaml): sleeps until\n"
	 "each slot is due, enqueues it, and runs due jobs with\n"
	 "worker.concurrency workers, heartbeating their leases. A slot\n"
	 "triggered or a job retried by another process starts within a\n"
	 "second. SIGTERM/SIGINT: stop claiming, let running slots finish\n"
	 "within worker.grace, else release them; exit 0. SIGHUP or SIGUSR1:\n"
	 "reload the config (an invalid one is refused and the old one\n"
	 "kept); a good one\n"
	 "applies at once, worker.concurrency, lease and grace included, but\n"
	 "not a changed store: that is logged, and needs a restart.\n"
	 "Logs one logfmt line per event on stderr (event=start ... late_us=,\n"
	 "event=finish ... outcome= duration_ms= task_late_us=); SURECRON_LOG\n"
	 "sets the level (error, warn, info, debug; default info).\n"
	 "\n"
	 "  --once   run the scheduler once, run every job due now, exit:\n"
	 "           0 when all succeeded, 1 when a run failed\n"
	 "\n"
	 "Exit status: 0 after a clean stop, 1 on a failure, 2 on a bad\n"
	 "command line or config.\n"},
	{"simulate", cmd_simulate,
	 "simulate [--config FILE] --from T --until T "
	 "[--fail TASK@T1..T2[:exit=N]]... [--slow TASK@T1..T2=DUR]... "
	 "[--down T1..T2]... [--pause T1..T2] [--ack SCHEDULE@T]... "
	 "[--fail-target NAME@T1..T2]... [--deliver] [--json]",
	 "run the schedules on a virtual clock and print the timeline",
	 "Runs the real scheduler, queue, orchestrator, delivery and alerter\n"
	 "of FILE\n"
	 "(default ./surecron.yaml) on a virtual clock from T to T (ISO 8601\n"
	 "with Z or an offset), single-threaded, with a throw-away store in a\n"
	 "temp folder that is removed at exit (the config's store is never\n"
	 "opened). The clock jumps from event to event (the next slot or the\n"
	 "next retry), so a week takes a moment.\n"
	 "The first slot is the first one at or after --from (a first start).\n"
	 "A failed attempt whose notice policy (`notices:`) withheld the\n"
	 "failure notice names the targets that got none; a result short of\n"
	 "`expect:` fails as \"failed (expectation)\".\n"
	 "\n"
	 "  --fail TASK@T1..T2[:exit=N]\n"
	 "                   task TASK (of any schedule) fails instead of\n"
	 "                   running when an attempt starts in [T1, T2), as a\n"
	 "                   command exiting with N would: 75 (default) a\n"
	 "                   retryable quota error, 78 a permanent failure,\n"
	 "                   others retryable. May be repeated. Other tasks\n"
	 "                   run for real.\n"
	 "  --slow TASK@T1..T2=DUR\n"
	 "                   an attempt of TASK that starts in [T1, T2) lasts\n"
	 "                   DUR of the virtual clock (the scheduler and the\n"
	 "                   alerter go on meanwhile: overrun alerts).\n"
	 "  --ack SCHEDULE@T at T, every open alert of SCHEDULE is\n"
	 "                   acknowledged: its reminder rounds stop.\n"
	 "  --fail-target NAME@T1..T2\n"
	 "                   every send to target NAME fails in [T1, T2):\n"
	 "                   alerts are held, retried with their backoff and\n"
	 "                   delivered once after T2.\n"
	 "  --down T1..T2    the scheduler and worker are stopped in [T1, T2)\n"
	 "                   (downtime): at T2 the schedules catch up by their\n"
	 "                   catchup policy and missed slots are listed.\n"
	 "                   May be repeated.\n"
	 "  --pause T1..T2   every schedule is paused in [T1, T2) (at most 30\n"
	 "                   days), as `surecron pause` would: the slots\n"
	 "                   inside are listed as paused, not run, not missed,\n"
	 "                   and not caught up afterwards.\n"
	 "  --deliver        send to the real targets. Without it nothing\n"
	 "                   leaves the machine: every target (slack, webhook,\n"
	 "                   file, command) is replaced by a recorder in the\n"
	 "                   temp folder, fed through the real delivery path\n"
	 "                   (outbox, send guards, notices, alerts), and each\n"
	 "                   recorded message is printed.\n"
	 "  --json           print one JSON object: events, ledger,\n"
	 "                   deliveries per target, totals\n"
	 "\n"
	 "Prints one line per event (slot fired, attempt started, failed with\n"
	 "its error and next attempt, succeeded, delivery, slot lost, missed,\n"
	 "alert raised or closed, alert send failed, ack) with times in the\n"
	 "schedule's zone, then the ledger and the totals. The alerter runs\n"
	 "as in the daemon: missed and lost alerts, realert rounds, late,\n"
	 "overrun and stale breaches and recovered messages, each alert\n"
	 "delivery with its reason and round.\n"
	 "Exit status 0 when the simulation ran (lost slots are results, not\n"
	 "errors), 2 on usage or config errors, 1 on internal failures.\n"},
	{"status", cmd_status,
	 "status [--config FILE] [--stale] [--json] [SCHEDULE]",
	 "show each schedule's next slot, retry class, last outcome and jobs",
	 "For each schedule of the config (or SCHEDULE only): the final cron\n"
	 "expression (and the variable that overrode it), the next slot in\n"
	 "its zone, the frequency class with the field that decided it, the\n"
	 "retry policy, the last ledger outcome and the counts of its jobs\n"
	 "waiting, delayed (a retry pending), running and dead, and its open\n"
	 "alerts. --json prints one object. With SCHEDULE, only that one is\n"
	 "read (no \"schedules not in the config\"); an unknown name exits 2.\n"
	 "--stale: only whether each schedule delivered a slot within its\n"
	 "sla success_within (without sla: two periods of the schedule plus\n"
	 "its recovery window), counted from its last delivery or, when it\n"
	 "never delivered, from its first job; exit 1 when one is stale.\n"
	 "Exit 0; 2 when the config does not load; 1 on store errors.\n"},
	{"trigger", cmd_trigger, "trigger [--config FILE] [--slot T | --from T "
	 "--until T [--dry-run]] SCHEDULE",
	 "enqueue a manual slot of a schedule, due now",
	 "Enqueues a slot of SCHEDULE due now, with the schedule's retry\n"
	 "policy; `surecron run` (or `run --once`) runs it. The slot is the\n"
	 "current second unless --slot T names one (ISO 8601 or an age such\n"
	 "as 2h). One job per slot: triggering a slot that is already queued\n"
	 "or running changes nothing, a dead one is revived, a done one is\n"
	 "refused, and so is one that has a slot marker (complete) and no job\n"
	 "left. With retention.jobs set, a slot older than it is refused: its\n"
	 "record may be pruned (`surecron prune`). Prints \"job ID: SCHEDULE slot T, new, due now (ready)\"\n"
	 "or \"job ID: SCHEDULE slot T, already queued (STATE)\".\n"
	 "\n"
	 "Backfill: --from T --until T triggers every slot of SCHEDULE in\n"
	 "[from, until) that has no job yet; slots with a job (queued,\n"
	 "running, done, lost) or a marker are listed and left alone. At most\n"
	 "1,000 slots per call (a larger range is refused, with its count).\n"
	 "--dry-run lists what would be done and writes nothing.\n"
	 "Exit 0; 2 on an unknown schedule, a bad time, a done slot, one\n"
	 "past retention.jobs or a range over 1,000 slots; 1 on store errors.\n"},
	{"version", cmd_version, "version", "print the version",
	 "Prints \"surecron VERSION\". The same as surecron --version.\n"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

const struct cli_command *cli_find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

void cli_print_help(FILE *f, const struct cli_command *c)
{
	fprintf(f, "usage: surecron %s\n\n%s\n%s", c->usage, c->summary,
		c->help[0] ? "\n" : "");
	fputs(c->help, f);
}

void cli_print_overview(FILE *f)
{
	fputs("usage: surecron [--version] [--help] COMMAND [ARGS]\n\n"
	      "surecron runs scheduled jobs and never loses a run in silence.\n\n"
	      "Commands:\n", f);
	int w = 0;
	for (size_t i = 0; i < N_COMMANDS; i++)
		if ((int)strlen(commands[i].name) > w)
			w = (int)strlen(commands[i].name);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-*s %s\n", w, commands[i].name,
			commands[i].summary);
	fputs("\nRun 'surecron help COMMAND' for a command's options.\n"
	      "Exit status: 0 success, 1 failure, 2 usage or input error.\n",
	      f);
}

