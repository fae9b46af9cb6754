#!/bin/bash
# Runs every test binary given on the command line, shows its output, and
# ends with one total line "N passed, N failed, N skipped" summed from the
# cmocka summaries. A binary that crashes or prints no summary counts as one
# failure, so a suite that silently ran nothing is visible.
# Set SURECRON_TEST_FILTER to a substring to run only matching binaries.
# Each binary runs under a timeout (SURECRON_TEST_TIMEOUT seconds, 900 by
# default): SIGTERM then, SIGKILL 30 s later if it is still there. timeout
# signals the binary's whole process group, so daemons and workers a test
# forked go with it; a binary that timed out counts as a failure.
# SURECRON_TEST_JOBS=N runs N binaries at a time (default 2 on a machine
# with two cores or more, else 1; 1 gives each suite the machine). Every suite
# works in its own temporary folder, PostgreSQL schema and loopback ports,
# so they do not meet; each one's output is shown whole when it ends.
# The suites that stop and restart the PostgreSQL server of the run
# (SURECRON_TEST_PG_OWN) would cut the others' connections when several
# run at once: with N > 1 each of them starts a throw-away server of its
# own instead (tests/pg_fixture.h does when SURECRON_TEST_PG is unset).
# Every suite's wall time is printed after its name, the slowest at the end.
set -u

passed=0 failed=0 skipped=0
failed_suites=""
cores=$(nproc 2>/dev/null || echo 1)
jobs=${SURECRON_TEST_JOBS:-$([ "$cores" -ge 2 ] && echo 2 || echo 1)}
pg_own=" ${SURECRON_TEST_PG_OWN-test_pg_faults test_daemon test_nodes_pg test_soak test_heartbeat test_store_pg test_pause_daemon test_status_socket_daemon} "
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The configs in the tree are read by surecron, which refuses a config
# file its group or others can write (issue 44): a checkout made under
# umask 002 would fail every suite that loads one. Git keeps no write
# bits, so taking them away changes nothing it tracks.
chmod -R go-w tests/fixtures examples 2>/dev/null || true
# And the configs the suites write, under a umask that leaves them so.
umask 022

# Runs one binary into $work/NAME.{log,rc,ms}.
run_one() {
  local t=$1 name start
  name=$(basename "$t")
  start=$(date +%s%N)
  local own=()
  case $pg_own in
    *" $name "*) [ "$jobs" -gt 1 ] &&
      own=(env -u SURECRON_TEST_PG -u SURECRON_TEST_PG_DIR) ;;
  esac
  "${own[@]}" timeout -k 30 "${SURECRON_TEST_TIMEOUT:-900}" "$t" \
    >"$work/$name.log" 2>&1
  echo $? >"$work/$name.rc"
  echo $(( ($(date +%s%N) - start) / 1000000 )) >"$work/$name.ms"
}

# Shows one finished binary's output and adds its counts to the total.
tally_one() {
  local name=$1 rc ms p f s log="$work/$1.log"
  rc=$(cat "$work/$name.rc") ms=$(cat "$work/$name.ms")
  printf '== %s (%d.%01d s)\n' "$name" $((ms / 1000)) $((ms % 1000 / 100))
  echo "$ms $name" >>"$work/times"
  cat "$log"
  case $rc in
    124) echo "!! $name timed out after ${SURECRON_TEST_TIMEOUT:-900} s" >&2 ;;
    137) echo "!! $name was killed (SIGKILL: still there 30 s after its" \
      "timeout, or the OOM killer)" >&2 ;;
  esac
  # A binary may run several groups (one per store backend): sum them.
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{n+=$1} END {print n+0}')
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{n+=$1} END {print n+0}')
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{n+=$1} END {print n+0}')
  p=${p:-0} f=${f:-0} s=${s:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "!! $name exited with status $rc without a failure summary" >&2
    f=1
  fi
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
    echo "!! $name ran no test" >&2
    f=1
  fi
  if [ "$f" -gt 0 ]; then
    # The failed cases by name, so that the last lines of a long log
    # still say which ones.
    local cases
    cases=$(sed -n 's/^\[  FAILED  \] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' "$log" |
      sort -u | tr '\n' ' ')
    failed_suites="$failed_suites $name${cases:+ (${cases% })}"
  fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

running=()
for t in "$@"; do
  name=$(basename "$t")
  case "$name" in *"${SURECRON_TEST_FILTER:-}"*) ;; *) continue ;; esac
  if [ "$jobs" -le 1 ]; then
    run_one "$t"
    tally_one "$name"
    continue
  fi
  run_one "$t" &
  running+=("$name")
  # At the limit: wait for one to end, then show every finished one.
  while [ "${#running[@]}" -ge "$jobs" ]; do
    wait -n
    left=()
    for n in "${running[@]}"; do
      if [ -f "$work/$n.ms" ]; then tally_one "$n"; else left+=("$n"); fi
    done
    running=("${left[@]}")
  done
done
wait
for n in "${running[@]}"; do tally_one "$n"; done

if [ -f "$work/times" ]; then
  echo "slowest suites (s):" \
    "$(sort -rn "$work/times" | head -n 5 |
      awk '{printf "%s %.1f  ", $2, $1 / 1000}')"
fi
[ -n "$failed_suites" ] && echo "failing suites:$failed_suites"
# Launchers (src/proc.c) of this tree's binaries that outlived every
# suite: their daemon is gone and they should have ended with it. Named
# and killed here, so that they neither go unseen nor load the steps
# after (once, three of an ASan build spun for 35 minutes after a CI run).
left=$(pgrep -f "$(cd "$(dirname "$0")/.." && pwd)/build/.*__surecron_launcher" || true)
if [ -n "$left" ]; then
  echo "!! launcher processes outlived their daemons (killed):" $left >&2
  ps -o pid,ppid,stat,etime,pcpu,args -p "$(echo $left | tr ' ' ',')" >&2 || true
  kill -9 $left 2>/dev/null || true
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
