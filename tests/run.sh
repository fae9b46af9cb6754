#!/bin/sh
# Runs every test binary given on the command line, shows its output, and
# ends with one total line "N passed, N failed, N skipped" summed from the
# cmocka summaries. A binary that crashes or prints no summary counts as one
# failure, so a suite that silently ran nothing is visible.
# Set SURECRON_TEST_FILTER to a substring to run only matching binaries.
# Each binary runs under a timeout (SURECRON_TEST_TIMEOUT seconds, 900 by
# default): SIGTERM then, SIGKILL 30 s later if it is still there. timeout
# signals the binary's whole process group, so daemons and workers a test
# forked go with it; a binary that timed out counts as a failure.
set -u

passed=0 failed=0 skipped=0
failed_suites=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$@"; do
  name=$(basename "$t")
  case "$name" in *"${SURECRON_TEST_FILTER:-}"*) ;; *) continue ;; esac
  echo "== $name"
  timeout -k 30 "${SURECRON_TEST_TIMEOUT:-900}" "$t" >"$log" 2>&1
  rc=$?
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
  [ "$f" -gt 0 ] && failed_suites="$failed_suites $name"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done

[ -n "$failed_suites" ] && echo "failing suites:$failed_suites"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
