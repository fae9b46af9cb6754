# The daemon under valgrind through three SIGHUPs: worker.concurrency
# raised (workers started), store: changed (not applied, a warning),
# concurrency lowered (the extra workers leave), a slot run by the one
# left, then SIGTERM: exit 0, no invalid access, nothing leaked.
mkdir -p "$tmp/rl"
rl_cfg() { # $1 concurrency, $2 store file
  cat >"$tmp/rl/surecron.yaml" <<YAML
store: sqlite:./$2
worker: {concurrency: $1, lease: 5s, grace: 1s}
targets:
  archive: {kind: file, path: ./out.jsonl}
schedules:
  s:
    cron: "0 3 1 1 *"
    targets: [archive]
    tasks:
      - {name: t, command: ["/bin/echo", "hi"]}
YAML
}
rl_wait() { # $1 needle, $2 count: waits up to 30 s for the daemon's log
  i=0
  while [ "$(grep -c -- "$1" "$tmp/rl/log" 2>/dev/null || true)" -lt "$2" ] &&
    [ "$i" -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
  done
}
rl_cfg 1 rl.db
valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect --error-exitcode=99 \
  --log-file="$tmp/vg.log" "$bin" run --config "$tmp/rl/surecron.yaml" \
  >/dev/null 2>"$tmp/rl/log" &
rl_pid=$!
rl_wait "event=started" 1
rl_cfg 3 rl.db
kill -HUP "$rl_pid"
rl_wait "event=reload outcome=ok" 1
rl_cfg 3 other.db
kill -HUP "$rl_pid"
rl_wait "event=reload outcome=ok" 2
rl_cfg 1 rl.db
kill -HUP "$rl_pid"
rl_wait "event=reload outcome=ok" 3
"$bin" trigger --config "$tmp/rl/surecron.yaml" s >/dev/null 2>&1
rl_wait "outcome=success" 1
kill -TERM "$rl_pid"
wait "$rl_pid"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "event=workers from=1 to=3" "$tmp/rl/log" &&
  grep -q "event=workers from=3 to=1" "$tmp/rl/log" &&
  [ "$(grep -c "setting=store" "$tmp/rl/log")" -eq 1 ] &&
  grep -q "outcome=success" "$tmp/rl/log" && [ ! -e "$tmp/rl/other.db" ]; then
  passed=$((passed + 1))
  echo "ok   valgrind run-sighup-reload"
else
  failed=$((failed + 1))
  echo "FAIL valgrind run-sighup-reload (exit $rc)"
  cat "$tmp/vg.log" "$tmp/rl/log"
fi
