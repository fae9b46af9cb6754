#!/bin/sh
# bench/queue.sh - queue throughput: ours (bench_queue, SQLite, durable
# settings as shipped) beside BullMQ on a local redis-server, in one run.
#
#   ours:   enqueue 20,000 no-op jobs (bulk), claim+complete with 1 and 4
#           worker processes, peak RSS.
#   BullMQ: the same, concurrency 1 and 16, against redis-server started
#           here twice: appendonly yes + appendfsync everysec (comparable
#           durability), and no persistence (BullMQ's fastest).
# Prints one line per case, then the ratios ours / BullMQ.
#
# BullMQ comes from npm into bench/peers/bullmq/node_modules (git-ignored;
# versions pinned in package.json / package-lock.json). Needs redis-server,
# node and npm (make deps-bench installs them). Not part of `make test`.
set -eu
cd "$(dirname "$0")/.."
N=${SURECRON_BENCH_JOBS:-20000}
BUILD=${SURECRON_BUILD:-build}
BIN=$BUILD/bench/bench_queue
PEER=bench/peers/bullmq

[ -x "$BIN" ] || { echo "queue.sh: $BIN missing (run make bench)" >&2; exit 1; }
work=$(mktemp -d /tmp/surecron-bench-queue-XXXXXX)
redis_pid=""
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

out=$work/results.txt
: >"$out"

echo "-- ours (SQLite, $N jobs)"
"$BIN" "$work" "$N" | tee -a "$out"
# The floor, in the same minute: the same two commits a job (claim,
# complete with its ledger row) in a plain SQLite loop (bench_floor.c).
if [ -x "$BUILD/bench/bench_floor" ]; then
  echo "-- floor (plain SQLite loop, the same commits, $N jobs)"
  "$BUILD/bench/bench_floor" "$work" "$N" | tee -a "$out"
  awk '/^ours case=work workers=1 / { for (i = 1; i <= NF; i++) if ($i ~ /^jobs_per_s=/) o = substr($i, 12) }
       /^floor case=commits / { for (i = 1; i <= NF; i++) if ($i ~ /^jobs_per_s=/) f = substr($i, 12) }
       END { if (o && f) printf "ratio work jobs/s, ours 1 worker vs the same commits in a plain loop %.2f (%s / %s; goal >= 0.5)\n", o / f, o, f }' "$out"
fi

if ! command -v redis-server >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "queue.sh: redis-server or node missing; BullMQ side skipped" >&2
  exit 0
fi
if [ ! -d "$PEER/node_modules/bullmq" ]; then
  echo "-- installing BullMQ into $PEER/node_modules"
  (cd "$PEER" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_redis LABEL ARGS... : starts redis-server in its own folder.
start_redis() {
  label=$1; shift
  port=$(free_port)
  mkdir -p "$work/redis-$label"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$work/redis-$label" \
    --daemonize no --save '' --logfile "$work/redis-$label/log" "$@" &
  redis_pid=$!
  i=0
  until redis-cli -p "$port" ping >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "redis did not start" >&2; exit 1; }
    sleep 0.05
  done
}

stop_redis() {
  kill "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}

for mode in aof nopersist; do
  if [ $mode = aof ]; then
    start_redis aof --appendonly yes --appendfsync everysec
  else
    start_redis nopersist --appendonly no
  fi
  for c in 1 16; do
    echo "-- BullMQ, redis $mode, concurrency $c"
    node "$PEER/bench.js" "$port" "$N" "$c" "bullmq_$mode" | tee -a "$out"
  done
  stop_redis
done

# ratio OURS_PATTERN THEIRS_PATTERN FIELD : ours / theirs for FIELD.
val() { grep -E "$1" "$out" | sed -n "s/.*$2=\([0-9.]*\).*/\1/p" | head -n 1; }
ratio() {
  a=$(val "$1" "$3"); b=$(val "$2" "$3")
  if [ -n "$a" ] && [ -n "$b" ]; then
    awk -v a="$a" -v b="$b" -v t="$4" 'BEGIN { printf "ratio %-58s %.2f (%s / %s)\n", t, a / b, a, b }'
  fi
}
echo "-- ratios (ours / BullMQ; above 1 means ours is higher)"
ratio '^ours case=enqueue' '^bullmq_aof case=enqueue' jobs_per_s \
  "enqueue jobs/s vs BullMQ AOF"
ratio '^ours case=work workers=1 ' '^bullmq_aof case=work concurrency=1 ' jobs_per_s \
  "work jobs/s, ours 1 worker vs BullMQ c=1 AOF (goal >= 3)"
ratio '^ours case=work workers=4 ' '^bullmq_nopersist case=work concurrency=16 ' jobs_per_s \
  "work jobs/s, ours 4 workers vs BullMQ c=16 no persistence (goal >= 1)"
ratio '^ours case=work workers=1 ' '^bullmq_nopersist case=work concurrency=1 ' jobs_per_s \
  "work jobs/s, ours 1 worker vs BullMQ c=1 no persistence"
ratio '^ours case=work_marked' '^bullmq_aof case=work concurrency=1 ' jobs_per_s \
  "work+fsync'd slot marker, ours 1 worker vs BullMQ c=1 AOF"
ratio '^ours case=work workers=1 ' '^bullmq_aof case=work concurrency=1 ' maxrss_kb \
  "peak RSS of the worker process (goal <= 0.1)"
