#!/bin/sh
# bench/import.sh - `surecron import-crontab` of crontabs whose lines all
# run one program (issue 44, row 4: naming them was cubic, 2,000 lines
# took 9-34 s). One line per size: the lines, the wall time (best of 3),
# and, for 2,000 lines, the goal (under 1 s); 80,000 lines are about the
# 4 MiB a crontab may hold. Then 40,000 jobs each with its own MAILTO.
# No peer.
set -u
cd "$(dirname "$0")/.."
sbin=${SURECRON_BIN:-${SURECRON_BUILD:-build}/surecron}
if [ ! -x "$sbin" ]; then
  echo "import.sh: $sbin is missing (run 'make bench')" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-import-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
for n in ${SURECRON_BENCH_IMPORT_LINES:-2000 20000 80000}; do
  awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
    printf "%d %d * * * /usr/local/bin/backup.sh --n %d\n", i % 60,
      int(i / 60) % 24, i }' > "$tmp/c.cron"
  best=
  for k in 1 2 3; do
    t0=$(date +%s%N)
    "$sbin" import-crontab "$tmp/c.cron" > "$tmp/out.yaml" 2>/dev/null ||
      { echo "import.sh: import of $n lines failed" >&2; status=1; break; }
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  goal=-
  [ "$n" = 2000 ] && goal="< 1000 ms"
  echo "import_shared_program lines=$n ms=$best goal=$goal"
done
# Each job its own MAILTO: one email target per value (found by hash, not
# by a scan of the targets so far).
n=${SURECRON_BENCH_IMPORT_MAILTO:-40000}
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
  printf "MAILTO=u%d\n0 1 * * * /bin/x%d\n", i, i }' > "$tmp/c.cron"
t0=$(date +%s%N)
"$sbin" import-crontab "$tmp/c.cron" > "$tmp/out.yaml" 2>/dev/null ||
  { echo "import.sh: import of $n MAILTOs failed" >&2; status=1; }
t1=$(date +%s%N)
echo "import_distinct_mailto jobs=$n ms=$(( (t1 - t0) / 1000000 ))"
exit $status
