#!/bin/sh
# tsan.sh - runs test binaries built with -fsanitize=thread (`make tsan`,
# `make test TSAN=1`) and judges the run by its ThreadSanitizer reports.
#
#   tsan.sh REPORT_DIR BINARY...
#
# Every process (the test binaries and the daemons they start) writes its
# reports to REPORT_DIR/race.PID (TSAN_OPTIONS log_path), so a race in a
# daemon whose stderr is a test's log file is seen too. The binaries run
# through tests/pg_server.sh and tests/run.sh as in `make test`, under
# `setarch -R` when it exists (TSan wants a fixed memory layout on kernels
# with vm.mmap_rnd_bits > 28).
#
# The verdict is the races: the script fails when there is at least one
# report, and prints them. Suites that fail under TSan without a report
# are listed but do not fail the run: TSan slows threads 5-15 times, and
# the timing bounds of the daemon suites (a slot started within 50 ms, a
# lease kept) are gated by `make test`, not here. The last line is
# "N passed, R failed, S skipped" with R the number of reports, for CI's
# tally.
set -u
dir=$1
shift
rm -rf "$dir" && mkdir -p "$dir"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 log_path=$dir/race ${TSAN_OPTIONS:-}"
export TSAN_OPTIONS
arch=""
if command -v setarch >/dev/null 2>&1; then
  arch="setarch $(uname -m) -R"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086
$arch sh tests/pg_server.sh run bash tests/run.sh "$@" 2>&1 | tee "$log"
total=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
suites=$(sed -n 's/^failing suites://p' "$log" | tail -n 1)
n=$(ls "$dir" 2>/dev/null | wc -l | tr -d ' ')
if [ "$n" -gt 0 ]; then
  for f in "$dir"/*; do
    echo "---- $f" >&2
    cat "$f" >&2
  done
fi
p=$(echo "$total" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
f=$(echo "$total" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
s=$(echo "$total" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
echo "tsan: binaries=$# reports=$n tests_passed=${p:-0}" \
  "tests_failed_under_tsan=${f:-0}${suites:+ (${suites# })}"
echo "${p:-0} passed, $n failed, ${s:-0} skipped"
[ "$n" -eq 0 ] && [ -n "$total" ]
