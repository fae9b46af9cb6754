#!/bin/sh
# check.sh - model-checks model/protocol.pml (the job / outbox / lease
# protocol, docs/internals/model.md) with spin, as one suite of
# tests/run.sh: its output ends in cmocka's summary lines, so its counts
# join `make test`'s total.
#
#   model/check.sh              the model (no error allowed) and every
#                               mutant (each must be caught, by the
#                               invariant named below)
#   model/check.sh -DNAME ...   one run with those macros, the verifier's
#                               output and, on an error, the trail (e.g.
#                               -DOPERATOR, -DMAXATT=3)
#
# Without spin (Debian: spin; scripts/install-deps.sh test installs it)
# the suite is skipped, not failed. The verifier (pan) is built with the
# C compiler in a temporary folder; nothing is written to the tree.
here=$(cd "$(dirname "$0")" && pwd)
model=$here/protocol.pml
cc=${CC:-cc}

skip() {
  echo "[ SKIPPED  ] protocol model: $1"
  echo "[==========] 0 test(s) run."
  echo "[  PASSED  ] 0 test(s)."
  echo "[  SKIPPED ] 1 test(s)."
  exit 0
}
command -v spin >/dev/null 2>&1 || skip "no spin (apt-get install spin)"
# The model does not depend on the build: `make test SAN=1` need not check
# it again (only when the whole suite is asked for, not by hand).
[ $# -eq 0 ] && [ "${SURECRON_SAN:-}" = san ] &&
  skip "checked by make test (the model does not depend on the build)"
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc)"

work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
# pan names its trail after the model and spin -t looks for it there.
cp "$model" "$work/protocol.pml" || exit 1

# verify OPT FLAGS...: generates and compiles pan for the model with
# FLAGS, runs it; its output in $work/out. Returns pan's status, or 99
# when spin or the compiler failed.
verify() {
  opt=$1
  shift
  (cd "$work" && rm -f pan pan.* protocol.pml.trail &&
    spin -a "$@" protocol.pml >spin.log 2>&1 &&
    $cc "$opt" -DSAFETY -w -o pan pan.c >cc.log 2>&1) || {
    cat "$work/spin.log" "$work/cc.log" 2>/dev/null
    return 99
  }
  (cd "$work" && ./pan -m10000 -w20 >out 2>&1)
}

errors_of() {
  sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/out"
}

states_of() {
  sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$work/out"
}

if [ $# -gt 0 ]; then
  verify -O1 "$@"
  rc=$?
  [ "$rc" = 99 ] && exit 2
  cat "$work/out"
  if [ "$(errors_of)" != 0 ]; then
    (cd "$work" && spin -t -p -g "$@" protocol.pml)
    exit 1
  fi
  exit 0
fi

run=0 passed=0 failed=0 failed_names=""
ok() {
  echo "[       OK ] $1"
  passed=$((passed + 1))
}
fail() {
  echo "[  ERROR   ] $1: $2"
  failed=$((failed + 1))
  failed_names="$failed_names $1"
}

# The model itself, on SQLite (a power cut) and on PostgreSQL (a server
# crash the workers outlive): no error, every state seen. Then with an
# operator's release of a held send (release --resend declares the
# resend, docs/internals/model.md "Finding"), without the kill -9 (which
# the runs above cover; the paused worker the finding needs is the
# lease's): a quarter of the states (the kill in too: 8 million states,
# 700 MB, by hand with model/check.sh -DOPERATOR).
for v in "model_protocol|" "model_protocol_pg|-DPG" \
  "model_protocol_operator|-DOPERATOR -DKILLS=0" \
  "model_protocol_operator_pg|-DPG -DOPERATOR -DKILLS=0"; do
  name=${v%%|*} flags=${v#*|}
  run=$((run + 1))
  echo "[ RUN      ] $name"
  t0=$(date +%s%N)
  # shellcheck disable=SC2086 # flags holds zero or more -D words
  verify -O0 $flags
  t1=$(date +%s%N)
  if [ "$(errors_of)" = 0 ] && grep -q "Full statespace search" "$work/out"
  then
    echo "$name: $(states_of) states, $(( (t1 - t0) / 1000000 )) ms" \
      "(spin -a, cc, pan)"
    ok "$name"
  else
    cat "$work/out"
    # shellcheck disable=SC2086
    (cd "$work" && [ -f protocol.pml.trail ] &&
      spin -t -p -g $flags protocol.pml | head -n 300)
    fail "$name" "spin reports an error in the model (trail above)"
  fi
done

# Each mutant (protocol.pml's head says what it removes) and the text of
# the assertion that must catch it: I1 copies<=(1+st.dups), I2
# st.marked&&(st.lost>st.revived), I3 st.token==t (the fence), I4 the
# end state (copies>=1 is in it).
for m in \
  "NO_FENCE_SENDING|st.token==t" \
  "NO_FENCE_SENDING -DNO_FENCE_ASSERT|copies<=(1+st.dups)" \
  "NO_FENCE_COMPLETE|st.token==t" \
  "NO_FENCE_COMPLETE -DNO_FENCE_ASSERT|st.marked&&(st.lost>st.revived)" \
  "SENDING_NOT_DURABLE|copies<=(1+st.dups)" \
  "NO_DUPLICATE_ROW|copies<=(1+st.dups)" \
  "NO_GIVE_UP|copies>=1" \
  "OPERATOR -DKILLS=0 -DNO_RELEASE_DUPLICATE|copies<=(1+st.dups)" \
  "PG -DSENDING_NOT_DURABLE|copies<=(1+st.dups)" \
  "PG -DCLAIM_NOT_DURABLE|st.owner==me"; do
  flags=${m%%|*} want=${m#*|}
  name=mutant_$(echo "$flags" | sed 's/ -D/_/g')
  run=$((run + 1))
  echo "[ RUN      ] $name"
  # shellcheck disable=SC2086 # flags holds several -D words
  verify -O0 -D$flags
  msg=$(grep -m1 '^pan:1:' "$work/out")
  if [ "$(errors_of)" = 0 ]; then
    fail "$name" "spin found no error: the mutant went unseen"
  elif ! printf '%s\n' "$msg" | grep -qF "$want"; then
    fail "$name" "caught, but not by the invariant expected ($want): $msg"
  else
    echo "$name: $msg"
    ok "$name"
  fi
done

echo "[==========] $run test(s) run."
echo "[  PASSED  ] $passed test(s)."
if [ "$failed" -gt 0 ]; then
  echo "[  FAILED  ] $failed test(s), listed below:"
  for f in $failed_names; do echo "[  FAILED  ] $f"; done
  exit 1
fi
exit 0
