#!/bin/sh
# Runs every benchmark binary given on the command line, then the peer
# benchmarks under bench/peers/ (each peer script installs its own packages
# into an ignored folder and prints one line per case).
set -u
cd "$(dirname "$0")/.."
status=0
for b in "$@"; do
  echo "== $(basename "$b")"
  "$b" || status=1
done
exit $status
