#!/bin/sh
# Runs the CLI's main paths under valgrind (memcheck): any invalid access or
# definite/indirect leak fails the case. Prints one line per case and a
# total "N passed, N failed". Usage: tests/valgrind.sh [path/to/surecron]
# Each case runs under a timeout (SURECRON_VG_TIMEOUT seconds, 300 by
# default; SIGKILL 10 s after it): a case that hangs fails with exit 124
# instead of holding CI up.
set -u
cd "$(dirname "$0")/.."
# The configs made here must be writable by their owner only: surecron
# refuses one its group or others can write (issue 44).
umask 022
bin=$(realpath "${1:-build/surecron}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

# case NAME EXPECTED_EXIT ARGS...
case_() {
  name=$1 want=$2
  shift 2
  timeout -k 10 "${SURECRON_VG_TIMEOUT:-300}" \
    valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --error-exitcode=99 \
    --log-file="$tmp/vg.log" "$bin" "$@" >"$tmp/out" 2>&1 </dev/null
  rc=$?
  # Errors and leaks make valgrind exit 99; its warnings about syscalls
  # it does not know (pidfd_open: the code falls back) are not failures.
  if [ "$rc" -eq "$want" ]; then
    passed=$((passed + 1))
    echo "ok   valgrind $name"
  else
    failed=$((failed + 1))
    [ "$rc" -eq 124 ] && echo "valgrind $name: timed out after" \
      "${SURECRON_VG_TIMEOUT:-300} s"
    echo "FAIL valgrind $name (exit $rc, expected $want)"
    cat "$tmp/vg.log" "$tmp/out"
  fi
}

cfg=examples/surecron.yaml
case_ help 0 --help
case_ version 0 --version
case_ unknown-command 2 frobnicate
case_ next 0 next --tz America/New_York --from 2026-03-07T00:00:00Z --count 20 "30 2 * * *"
case_ next-bad 2 next "0 25 * * *"
case_ explain 0 explain --tz Asia/Seoul "0 17 * * 5"
case_ explain-json 0 explain --json "0 0 17 * * 5"
case_ check 0 check --config "$cfg"
case_ check-bad 2 check --config tests/fixtures/config/bad/$(ls tests/fixtures/config/bad | head -n 1)
for extra in tests/valgrind.d/*.sh; do
  # Later commands add their cases here, sourced with case_ and $tmp.
  [ -f "$extra" ] && . "$extra"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
