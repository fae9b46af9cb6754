#!/bin/sh
# Runs surecron on the example config with the embedded SQLite store.
# Until the daemon exists this shows `surecron explain` for the example
# schedules; see README.md.
set -eu
bin=${1:-build/surecron}
cd "$(dirname "$0")/.."
"$bin" --version
