#!/bin/sh
# fuzz/run.sh BUILD_DIR NAME... - runs each libFuzzer target
# BUILD_DIR/fuzz_NAME for FUZZ_SECONDS seconds (600 by default), FUZZ_JOBS
# targets at a time (1), and ends with one line
# "N passed, N failed, 0 skipped": a target passes when it ran its time
# without a finding. Called by `make fuzz` (fuzz/fuzz.mk).
#
# Seeds come from fuzz/corpus/NAME (read only: libFuzzer writes the inputs
# it finds into the first folder it is given, BUILD_DIR/corpus/NAME here).
# Findings (crash-*, leak-*, timeout-*, oom-*) land in
# BUILD_DIR/findings/NAME/, each run's log in BUILD_DIR/logs/NAME.log.
# Optional per target: fuzz/NAME.dict (a libFuzzer dictionary) and
# fuzz/NAME.options (extra libFuzzer flags on one line, e.g. -max_len=65536).
set -u

dir=$1
shift
secs=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-1}
mkdir -p "$dir/logs" "$dir/findings"

run_target() {
  name=$1
  bin=$dir/fuzz_$name
  work=$dir/corpus/$name
  found=$dir/findings/$name
  log=$dir/logs/$name.log
  mkdir -p "$work" "$found"
  seeds=""
  [ -d "fuzz/corpus/$name" ] && seeds="fuzz/corpus/$name"
  dict=""
  [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
  opts=""
  [ -f "fuzz/$name.options" ] && opts=$(cat "fuzz/$name.options")
  marker=$dir/logs/$name.start
  : >"$marker"
  # A whole run may not take much longer than its time: a hung input is
  # cut by -timeout, a hung process by timeout(1).
  # shellcheck disable=SC2086
  timeout -k 10 $((secs + 120)) "$bin" -max_total_time="$secs" -timeout=25 \
    -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$found/" \
    $dict $opts "$work" $seeds >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  new=$(find "$found" -type f -newer "$marker" \( -name 'crash-*' -o \
    -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  if [ "$rc" -eq 0 ] && [ -z "$new" ]; then
    echo "ok $name: ${execs:-?} executions in ${secs} s, no finding" \
      >"$dir/logs/$name.result"
  else
    {
      echo "FAIL $name: exit status $rc after ${execs:-?} executions" \
        "(log: $log)"
      for f in $new; do echo "  finding: $f"; done
    } >"$dir/logs/$name.result"
  fi
  rm -f "$marker"
}

running=0
for name in "$@"; do
  if [ ! -x "$dir/fuzz_$name" ]; then
    echo "FAIL $name: no binary $dir/fuzz_$name" >"$dir/logs/$name.result"
    continue
  fi
  echo "fuzz: $name for ${secs} s"
  run_target "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
done
wait

passed=0 failed=0
for name in "$@"; do
  r=$dir/logs/$name.result
  cat "$r"
  case $(head -c 2 "$r") in
    ok) passed=$((passed + 1)) ;;
    *)
      failed=$((failed + 1))
      sed -n '/^==[0-9]*==ERROR\|^fuzz: property\|SUMMARY:/p' \
        "$dir/logs/$name.log" | head -n 5 | sed 's/^/    /'
      ;;
  esac
done
if [ "$failed" -gt 0 ]; then
  echo "To keep a finding: reproduce it with $dir/fuzz_NAME FILE, fix the" \
    "code, then copy it into fuzz/corpus/NAME/ under a name that says what" \
    "it is (docs/internals/fuzz.md)."
fi
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
