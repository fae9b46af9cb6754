#!/bin/sh
# `make bench`: runs every bench/*.sh script (one per area: cron.sh,
# queue.sh, ...). Each script runs our benchmark binary from
# $SURECRON_BUILD/bench/ and its peer (installed by the script into an
# ignored folder under bench/peers/) in the same run, and prints one line
# per case plus the ratio.
set -u
cd "$(dirname "$0")/.."
# The configs made here must be writable by their owner only: surecron
# refuses one its group or others can write (issue 44).
umask 022
status=0
# Every script's output also goes to $log, from which bench/summary.py
# prints issue 45's P-rows at the end: one table of this run (peer, ours,
# ratio, goal, met), "not run" where a script, peer or floor did not run.
log=$(mktemp "${TMPDIR:-/tmp}/surecron-bench-XXXXXX")
trap 'rm -f "$log" "$log.rc"' EXIT
for s in bench/*.sh; do
  [ "$s" = bench/run.sh ] && continue
  [ -f "$s" ] || continue
  echo "== $s"
  { sh "$s" 2>&1; echo $? >"$log.rc"; } | tee -a "$log"
  [ "$(cat "$log.rc")" = 0 ] || status=1
done
echo
python3 bench/summary.py "$log" || status=1
exit $status
