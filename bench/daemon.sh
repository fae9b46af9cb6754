#!/bin/sh
# bench/daemon.sh - the daemon's lateness and memory, beside BullMQ's job
# scheduler, in one run.
#
#   ours:   `surecron run` (SQLite, shipped settings) with 100 schedules
#           loaded: one per-second (`* * * * * *`) whose task is
#           /bin/date +%s%N (no shell), 99 idle monthly ones.
#           Task start = the instant the task's program was exec'd
#           (posix_spawn returned; the daemon's `event=finish
#           task_late_us=`), minus the slot's due instant. Beside it, the
#           program's own first output (what date printed, delivered to
#           a file target), which adds the program's loading (ld.so, libc)
#           that no scheduler controls. RSS of the daemon process (VmRSS
#           and VmHWM from /proc) at the end, and its anonymous memory
#           (heap and stacks: smaps_rollup `Anonymous`), which leaves out
#           the shared library pages (SQLite, libc: about 2.5 MB of RSS
#           that even `surecron version` has; libcurl, libpq and libcrypto
#           are loaded only when first needed).
#   BullMQ: upsertJobScheduler every 1000 ms + 99 idle schedulers, one
#           Worker, local redis-server; lateness = processor start -
#           job.opts.prevMillis (in-process: no exec, which favours it).
#   floor:  beside ours, in the same window, half a second off its
#           slots: bench_orch floor, a bare program that sleeps until
#           each instant and posix_spawns the same /bin/date, nothing
#           else (no store, no reaper): how late posix_spawn returned.
# SURECRON_BENCH_SECONDS (default 30) sets the length of each side.
# Goals (issue 6): p99 <= 2 ms; RSS <= 1/10 of the BullMQ worker's.
# Issue 45 (row P5): p99 <= the floor's p99 of the same run + 1 ms.
# The last line is that row for bench/run.sh's summary (`row P5 ...`).
set -eu
cd "$(dirname "$0")/.."
SECS=${SURECRON_BENCH_SECONDS:-30}
BUILD=${SURECRON_BUILD:-build}
BIN=$BUILD/surecron
ORCH=$BUILD/bench/bench_orch
PEER=bench/peers/bullmq

[ -x "$BIN" ] || { echo "daemon.sh: $BIN missing (run make)" >&2; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/surecron # absolute: the daemon runs in $work
work=$(mktemp -d /tmp/surecron-bench-daemon-XXXXXX)
pid=""
redis_pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

{
  echo "store: sqlite:./s.db"
  echo "worker: {concurrency: 1, lease: 1m, grace: 5s}"
  echo "targets:"
  echo "  archive: {kind: file, path: ./deliveries.jsonl}"
  echo "schedules:"
  echo "  persec:"
  echo "    cron: \"* * * * * *\""
  echo "    tz: UTC"
  echo "    targets: [archive]"
  echo "    tasks:"
  echo "      - {name: t, command: [\"/bin/date\", \"+%s%N\"]}"
  i=1
  while [ $i -lt 100 ]; do
    echo "  idle-$i:"
    echo "    cron: \"0 3 1 * *\""
    echo "    tz: UTC"
    echo "    targets: [archive]"
    echo "    tasks:"
    echo "      - {name: t, command: [\"/bin/true\"]}"
    i=$((i + 1))
  done
} >"$work/surecron.yaml"

echo "-- ours: surecron run, 100 schedules, ${SECS}s"
(cd "$work" && SURECRON_LOG=info exec "$BIN" run --config surecron.yaml 2>"$work/daemon.log") &
pid=$!
floor_pid=""
if [ -x "$ORCH" ]; then
  "$ORCH" floor $((SECS - 2)) 500 /bin/date +%s%N >"$work/floor.txt" 2>&1 &
  floor_pid=$!
fi
sleep "$SECS"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "daemon.sh: the daemon exited early; its log:" >&2
  tail -5 "$work/daemon.log" >&2
  exit 1
fi
rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
hwm=$(awk '/^VmHWM/ {print $2}' /proc/$pid/status)
anon=$(awk '/^Anonymous:/ {print $2}' /proc/$pid/smaps_rollup)
kill -TERM "$pid"
wait "$pid" || true
pid=""
ours=$(python3 - "$work" "$rss" "$hwm" "$anon" <<'PY'
import json, sys, math
work, rss, hwm, anon = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def iso_ms(s):
    import datetime
    return int(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
               .replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
def pct(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, math.ceil(p / 100 * len(v)) - 1))]
prog = []
for line in open(f"{work}/deliveries.jsonl"):
    o = json.loads(line)
    if o.get("kind") != "result":
        continue
    prog.append(int(o["summary"]) / 1e6 - iso_ms(o["slot"]))
import re
late = [int(m.group(1)) / 1000 for m in
        (re.search(r"event=finish schedule=persec .* task_late_us=(-?\d+)", l)
         for l in open(f"{work}/daemon.log")) if m]
# The first slot may come while the daemon starts.
late, prog = late[1:], prog[1:]
print(f"ours runs={len(late)} p50_ms={pct(late, 50):.3f} "
      f"p99_ms={pct(late, 99):.3f} max_ms={max(late):.3f} "
      f"program_p50_ms={pct(prog, 50):.3f} program_p99_ms={pct(prog, 99):.3f} "
      f"rss_kb={rss} maxrss_kb={hwm} anon_kb={anon}")
PY
)
echo "$ours"
floor=""
if [ -n "$floor_pid" ] && wait "$floor_pid"; then
  floor=$(grep '^floor ' "$work/floor.txt" || true)
  echo "$floor (bench_orch floor: a bare posix_spawn of the same program at each instant, same window)"
else
  echo "daemon.sh: the spawn floor did not run: $(head -c 200 "$work/floor.txt" 2>/dev/null)" >&2
fi

# row_p5 PEER_NOTE: issue 45's P5 row for bench/run.sh's summary.
row_p5() {
  python3 - "$ours" "$floor" "$1" <<'PY'
import sys
def kv(line):
    return {k: v for k, v in (w.split("=", 1) for w in line.split()[1:] if "=" in w)}
o, f, peer = kv(sys.argv[1]), kv(sys.argv[2]) if sys.argv[2] else {}, sys.argv[3]
p99 = float(o["p99_ms"])
if "p99_ms" in f:
    fl = float(f["p99_ms"])
    goal, met = f"<= floor p99 {fl:.3f} + 1 ms", "yes" if p99 <= fl + 1 else "no"
    ratio = f"{p99 / fl:.2f}x floor" if fl > 0 else "-"
else:
    goal, met, ratio = "<= floor p99 + 1 ms", "not run (no floor)", "-"
print(f'row P5 name="task start lateness p99" peer="{peer}" '
      f'ours="{p99:.3f} ms" ratio="{ratio}" goal="{goal}" met="{met}"')
PY
}

if ! command -v redis-server >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "daemon.sh: redis-server or node missing; BullMQ side skipped" >&2
  row_p5 "BullMQ: not run (redis-server or node missing)"
  exit 0
fi
if [ ! -d "$PEER/node_modules/bullmq" ]; then
  echo "-- installing BullMQ into $PEER/node_modules"
  if ! (cd "$PEER" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
    echo "daemon.sh: npm ci of BullMQ failed; BullMQ side skipped" >&2
    row_p5 "BullMQ: not run (npm ci failed)"
    exit 0
  fi
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
mkdir -p "$work/redis"
redis-server --port "$port" --bind 127.0.0.1 --dir "$work/redis" \
  --daemonize no --save '' --appendonly yes --appendfsync everysec \
  --logfile "$work/redis/log" &
redis_pid=$!
i=0
until redis-cli -p "$port" ping >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "redis did not start" >&2; exit 1; }
  sleep 0.05
done
echo "-- BullMQ: job scheduler every 1000 ms, 100 schedulers, ${SECS}s"
peer=$(node "$PEER/scheduler.js" "$port" "$SECS" bullmq)
echo "$peer"

python3 - "$ours" "$peer" <<'PY'
import sys
def kv(line):
    return {k: v for k, v in (w.split("=", 1) for w in line.split()[1:])}
o, b = kv(sys.argv[1]), kv(sys.argv[2])
f = lambda d, k: float(d[k])
print(f"ratio p50 ours/bullmq={f(o,'p50_ms')/f(b,'p50_ms'):.2f} "
      f"p99 ours/bullmq={f(o,'p99_ms')/f(b,'p99_ms'):.2f} "
      f"program p99 ours/bullmq={f(o,'program_p99_ms')/f(b,'p99_ms'):.2f} "
      f"rss ours/bullmq={f(o,'rss_kb')/f(b,'rss_kb'):.3f} "
      f"maxrss ours/bullmq={f(o,'maxrss_kb')/f(b,'maxrss_kb'):.3f} "
      f"anon ours/bullmq={f(o,'anon_kb')/f(b,'anon_kb'):.3f}")
print(f"goals: p99<=2ms {'met' if f(o,'p99_ms') <= 2 else 'NOT met'} "
      f"(program's own output: {'met' if f(o,'program_p99_ms') <= 2 else 'NOT met'}); "
      f"rss<=1/10 of bullmq {'met' if f(o,'rss_kb') * 10 <= f(b,'rss_kb') else 'NOT met'}; "
      f"anon<=1/10 {'met' if f(o,'anon_kb') * 10 <= f(b,'anon_kb') else 'NOT met'}")
PY
row_p5 "BullMQ p99 $(echo "$peer" | sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p') ms (in-process, no exec)"
