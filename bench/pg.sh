#!/bin/sh
# pg.sh - claim+complete on PostgreSQL: surecron beside pg-boss, one server,
# one run.
#
# Starts a throw-away PostgreSQL (tests/pg_server.sh, fsync on, default
# server settings) unless SURECRON_TEST_PG names one, runs bench_pg (1 and
# 4 workers, shipped settings, then a daemon worker's path), then pg-boss
# (npm, pinned in bench/peers/pgboss/package.json, installed into its
# git-ignored node_modules) at its best tuning: 16 workers, batch 100,
# 0.5 s polling.
# Prints each line and the ratios. SURECRON_BENCH_N sets the job count.
set -u
cd "$(dirname "$0")/.." || exit 1
build=${SURECRON_BUILD:-build}
bin=$build/bench/bench_pg
n=${SURECRON_BENCH_N:-20000}

if [ ! -x "$bin" ]; then
  echo "pg.sh: $bin not built (make bench)" >&2
  exit 1
fi

tmp=""
if [ -z "${SURECRON_TEST_PG:-}" ]; then
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/surecron-pgbench-XXXXXX")
  trap 'sh tests/pg_server.sh stop "$tmp"; rm -rf "$tmp"' EXIT INT TERM
  SURECRON_TEST_PG=$(sh tests/pg_server.sh start "$tmp") || {
    echo "pg.sh: cannot start PostgreSQL; skipped" >&2
    exit 0
  }
fi
url=$SURECRON_TEST_PG

ours=$("$bin" "$url" "$n") || { echo "pg.sh: bench_pg failed" >&2; exit 1; }
echo "$ours"

peer=bench/peers/pgboss
if [ ! -d "$peer/node_modules/pg-boss" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "pg.sh: npm missing; pg-boss skipped" >&2
    exit 0
  fi
  (cd "$peer" && npm install --no-audit --no-fund --silent) >/dev/null 2>&1 || {
    echo "pg.sh: npm install of pg-boss failed; skipped" >&2
    exit 0
  }
fi
theirs=$(node "$peer/bench.js" "$url" "$n" 16 100) ||
  { echo "pg.sh: pg-boss run failed" >&2; exit 1; }
echo "$theirs"

rate() { sed -n "s/.*$1.*jobs_per_s=\([0-9]*\).*/\1/p"; }
w1=$(echo "$ours" | rate "workers=1 ")
w4=$(echo "$ours" | rate "workers=4 ")
pb=$(echo "$theirs" | rate "workers=16 ")
awk -v a="$w1" -v b="$w4" -v p="$pb" 'BEGIN {
  printf "ratio surecron/pg-boss(16 workers, batch 100): 1 worker %.2fx, 4 workers %.2fx (goal >= 2x)\n", a / p, b / p
}'
