#!/bin/sh
# bench/cron.sh - ns per cron next() and parse: surecron (bench_cron) beside
# croner and cron-parser (node, bench/peers/cron/bench.js) in the same run,
# one line per case with the ratio against the faster peer, then a summary.
# Both sides run SURECRON_CRON_RUNS times (default 3), taking turns, and
# each case keeps its best time on either side.
# Before timing, agree.js checks that random expressions (UTC, and around
# DST changes in New York and Lord Howe) get the same next times as croner.
# The peers are installed here on first use (npm ci, pinned by
# bench/peers/cron/package-lock.json) into bench/peers/cron/node_modules,
# which git ignores.
set -u
cd "$(dirname "$0")/.."
bin="${SURECRON_BUILD:-build}/bench/bench_cron"
peers=bench/peers/cron
sbin=${SURECRON_BIN:-build/surecron}
case $sbin in /*) ;; *) sbin=$(pwd)/$sbin ;; esac

if [ ! -x "$bin" ]; then
  echo "cron.sh: $bin is missing (run 'make bench')" >&2
  exit 1
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "cron.sh: node and npm are needed for the peers" >&2
  exit 1
fi
if [ ! -d "$peers/node_modules/croner" ] || [ ! -d "$peers/node_modules/cron-parser" ]; then
  echo "cron.sh: installing croner and cron-parser into $peers/node_modules" >&2
  (cd "$peers" && npm ci --no-audit --no-fund --silent >/dev/null) || {
    echo "cron.sh: npm ci failed" >&2
    exit 1
  }
fi

# First a differential check: random expressions, same answers as croner.
(cd "$peers" && node agree.js "$sbin") || agree_failed=1

ours=$(mktemp) theirs=$(mktemp)
trap 'rm -f "$ours" "$theirs"' EXIT
echo "surecron $("$sbin" --version 2>/dev/null | cut -d' ' -f2)," \
  "croner $(node -p "require('./$peers/node_modules/croner/package.json').version")," \
  "cron-parser $(node -p "require('./$peers/node_modules/cron-parser/package.json').version")," \
  "node $(node --version)"
# Each side runs $runs times, turn about, and each case keeps its fastest
# run: on a shared machine a run stretched by other load would otherwise
# decide a ratio (one slow run of ours, or one fast run of the peer's,
# moved the minimum ratio by 2x between two runs of the same build).
runs=${SURECRON_CRON_RUNS:-3}
i=0
while [ "$i" -lt "$runs" ]; do
  "$bin" --tsv >>"$ours" || exit 1
  (cd "$peers" && node bench.js) >>"$theirs" || exit 1
  i=$((i + 1))
done

awk -F '\t' '
  NR == FNR {
    k = $1 "|" $2 "|" $3
    if (!(k in ours)) { order[++n] = k; ours[k] = $4 }
    else if ($4 + 0 < ours[k] + 0) ours[k] = $4
    next
  }
  {
    k = $1 "|" $2 "|" $3 "|" $4
    if (!(k in peer) || $5 + 0 < peer[k] + 0) peer[k] = $5
  }
  END {
    printf "%-5s %-16s %-14s %11s %11s %12s %9s\n", "kind", "zone", "expression",
      "surecron", "croner", "cron-parser", "vs faster"
    for (i = 1; i <= n; i++) {
      k = order[i]; split(k, f, "|")
      cr = peer["croner|" k]; cp = peer["cron-parser|" k]
      best = cr < cp ? cr : cp
      r = best / ours[k]
      printf "%-5s %-16s %-14s %8.1f ns %8.0f ns %9.0f ns %8.0fx\n", f[1], f[2], f[3],
        ours[k], cr, cp, r
      lr[f[1]] += log(r); cnt[f[1]]++
      if (!(f[1] in mn) || r < mn[f[1]]) mn[f[1]] = r
    }
    for (kind in cnt)
      printf "%s: ratio vs the faster peer: min %.0fx, geometric mean %.0fx%s\n",
        kind, mn[kind], exp(lr[kind] / cnt[kind]), kind != "next" ? "" : (mn[kind] >= 20 ? " (goal >= 20x: met)" : " (goal >= 20x: MISSED)")
  }' "$ours" "$theirs"
[ "${agree_failed:-0}" = 0 ]
