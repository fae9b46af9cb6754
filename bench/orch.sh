#!/bin/sh
# bench/orch.sh - task spawn cost (surecron vs system(3) in the same run)
# and the cost of one slot end to end. No peer to install.
set -u
cd "$(dirname "$0")/.."
bin="${SURECRON_BUILD:-build}/bench/bench_orch"
if [ ! -x "$bin" ]; then
  echo "orch.sh: $bin is missing (run 'make bench')" >&2
  exit 1
fi
"$bin" "${SURECRON_BENCH_TASKS:-200}" "${SURECRON_BENCH_SLOTS:-50}"
