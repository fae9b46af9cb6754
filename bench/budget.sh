#!/bin/sh
# bench/budget.sh - instruction budgets, counted with callgrind.
#
# A timed test drifts with the machine and with whatever else runs on it;
# an instruction count does not: callgrind gives the same total for the
# same binary, inputs and libraries whatever the other core does. So the
# costs the queue and the scheduler are judged by (issue 45) are guarded
# here as instructions, each against its budget in bench/budgets.txt, and
# CI fails when one is exceeded:
#
#   claim_complete  one job claimed and completed on SQLite, durable
#                   settings as shipped: bench_queue's one-worker case over
#                   2,000 jobs of one schedule, the worker process's count
#                   less the parent's (the parent enqueued them), per job;
#                   claims take 32 jobs a transaction, each completion is
#                   its own commit;
#   claim_complete_batch
#                   the same, the 32 jobs of a claim, done together,
#                   completed in one commit (bench_queue's work_batch,
#                   queue_complete_many);
#   claim_known_100k
#                   one claim (of one job) on SQLite with a known-schedule
#                   set of 100,000 names (bench_claim_known), per claim;
#   next_*          one sc_cron_next() call of a case of bench_cron, the
#                   difference between 2,000 and 1,000 calls over 1,000
#                   (the zone load and the start cancel out);
#   check_per_schedule
#                   `surecron check` of a config of 6,000 schedules less one
#                   of 1,000 (bench/gen_config.py), per schedule;
#   include_per_fragment
#                   `surecron check` of 5,000 schedules in 5,000 `include:`
#                   fragments less 500 in 500, per fragment (each fragment
#                   was compared with every earlier one: issue 44, row 12);
#   import_per_line `surecron import-crontab` of 2,000 lines that all run
#                   one program less 200 such lines, per line (naming them
#                   was cubic: issue 44, row 4).
#
# Usage: bench/budget.sh [BUILD]  (BUILD: the release build's folder,
# default build; `make budget` builds it and runs this). Prints one line a
# budget and the total line "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
build=${1:-${SURECRON_BUILD:-build}}
budgets=bench/budgets.txt
passed=0 failed=0

for tool in valgrind python3; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "budget.sh: $tool is missing (sh scripts/install-deps.sh test)" >&2
    exit 1
  }
done
for f in "$build/surecron" "$build/bench/bench_queue" "$build/bench/bench_cron" \
  "$build/bench/bench_claim_known"; do
  [ -x "$f" ] || { echo "budget.sh: $f is missing (run make budget)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/surecron-budget-XXXXXX)
trap 'rm -rf "$work"' EXIT

# count OUT CMD...: runs CMD under callgrind (children too, one file each)
# and prints the totals of the files, one a line, in the order of the pids.
count() {
  out=$1
  shift
  mkdir -p "$work/$out"
  valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$work/$out/cg.%p" "$@" >"$work/$out.log" 2>&1 || {
    echo "budget.sh: '$*' failed under callgrind:" >&2
    tail -n 20 "$work/$out.log" >&2
    return 1
  }
  for f in $(ls "$work/$out" | sort -t. -k2 -n); do
    sed -n 's/^totals: //p' "$work/$out/$f"
  done
}

# judge NAME VALUE: compares with NAME's budget and prints one line.
judge() {
  limit=$(awk -v n="$1" '$1 == n {print $2}' "$budgets")
  if [ -z "$limit" ]; then
    echo "budget $1: $2 instructions, no budget in $budgets"
    failed=$((failed + 1))
  elif [ "$2" -le "$limit" ]; then
    echo "budget $1: $2 instructions (budget $limit) ok"
    passed=$((passed + 1))
  else
    echo "budget $1: $2 instructions, over the budget of $limit: FAILED"
    failed=$((failed + 1))
  fi
}

# Claim + complete. bench_queue forks its worker after the enqueue; the
# worker's file holds the parent's count up to the fork, so the
# difference is the worker's own work.
jobs=2000
for c in "1|claim_complete" "b|claim_complete_batch"; do
  if totals=$(count "queue${c%%|*}" "$build/bench/bench_queue" "$work" "$jobs" "${c%%|*}"); then
    parent=$(echo "$totals" | head -n 1) child=$(echo "$totals" | tail -n 1)
    judge "${c#*|}" $(( (child - parent) / jobs ))
  else
    failed=$((failed + 1))
  fi
done

# One claim with a known-schedule set of 100,000 names (issue 43's filter):
# 2,000 claims less 1,000, per claim; the set's build and the enqueue
# cancel out.
mkdir -p "$work/known1" "$work/known2"
a=$(count known1 "$build/bench/bench_claim_known" "$work/known1" 100000 1000) &&
  b=$(count known2 "$build/bench/bench_claim_known" "$work/known2" 100000 2000) &&
  judge claim_known_100k $(( (b - a) / 1000 )) || failed=$((failed + 1))

# next(): the cheapest cases and the dearest (29 February past a zone's
# table, where the POSIX rule takes over).
for c in "UTC|*/5 * * * *|next_utc_every5" \
  "America/New_York|0 0 29 2 *|next_ny_leap_day" \
  "America/New_York|0 9 1 * *|next_ny_monthly"; do
  zone=${c%%|*} rest=${c#*|}
  expr=${rest%%|*} name=${rest#*|}
  a=$(count "$name-1" "$build/bench/bench_cron" --calls 1000 "$zone" "$expr") &&
    b=$(count "$name-2" "$build/bench/bench_cron" --calls 2000 "$zone" "$expr") &&
    judge "$name" $(( (b - a) / 1000 )) || failed=$((failed + 1))
done

# The config load, per schedule.
python3 bench/gen_config.py --schedules 1000 --fragments 1 --out "$work/c1" >/dev/null &&
  python3 bench/gen_config.py --schedules 6000 --fragments 2 --out "$work/c6" >/dev/null &&
  a=$(count check1 "$build/surecron" check --config "$work/c1/surecron.yaml") &&
  b=$(count check6 "$build/surecron" check --config "$work/c6/surecron.yaml") &&
  judge check_per_schedule $(( (b - a) / 5000 )) || failed=$((failed + 1))

# The include loader, per fragment of one schedule (gen_config.py's main
# file, its conf.d replaced by N fragments).
fragments() {
  python3 bench/gen_config.py --schedules 1 --fragments 1 --out "$work/$1" >/dev/null &&
    rm -f "$work/$1"/conf.d/*.yaml &&
    awk -v n="$2" -v d="$work/$1/conf.d" 'BEGIN { for (i = 0; i < n; i++) {
      f = sprintf("%s/f%06d.yaml", d, i)
      printf "schedules:\n  f%06d:\n    cron: \"%d * * * *\"\n" \
        "    targets: [log]\n    tasks:\n      - {name: run, " \
        "command: [/bin/true]}\n", i, i % 60 > f
      close(f) } }'
}
fragments f500 500 && fragments f5000 5000 &&
  a=$(count frag500 "$build/surecron" check --config "$work/f500/surecron.yaml") &&
  b=$(count frag5000 "$build/surecron" check --config "$work/f5000/surecron.yaml") &&
  judge include_per_fragment $(( (b - a) / 4500 )) || failed=$((failed + 1))

# import-crontab, per line of a crontab whose lines share one program.
for n in 200 2000; do
  awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
    printf "%d %d * * * /usr/local/bin/backup.sh --n %d\n", i % 60,
      int(i / 60) % 24, i }' >"$work/import$n.cron"
done
a=$(count import200 "$build/surecron" import-crontab "$work/import200.cron") &&
  b=$(count import2000 "$build/surecron" import-crontab "$work/import2000.cron") &&
  judge import_per_line $(( (b - a) / 1800 )) || failed=$((failed + 1))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
