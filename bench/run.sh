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
for s in bench/*.sh; do
  [ "$s" = bench/run.sh ] && continue
  [ -f "$s" ] || continue
  echo "== $s"
  sh "$s" || status=1
done
exit $status
