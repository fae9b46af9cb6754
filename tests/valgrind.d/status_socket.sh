# status_socket under valgrind, both ends: the daemon answering (its
# thread, its store handle, the JSON it writes) and `status NAME` asking
# (the reply parsed into the store's structures, then freed), text and
# --json; then SIGTERM: exit 0, the socket removed, no invalid access,
# nothing leaked. SURECRON_STATUS_VIA=daemon: a failed ask would say so.
mkdir -p "$tmp/ss"
cat >"$tmp/ss/surecron.yaml" <<YAML
store: sqlite:./ss.db
status_socket: ./st.sock
targets:
  archive: {kind: file, path: ./out.jsonl}
schedules:
  s:
    cron: "0 3 1 1 *"
    targets: [archive]
    tasks:
      - {name: t, command: ["/bin/echo", "hi"]}
YAML
valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect --error-exitcode=99 \
  --log-file="$tmp/vg-ssd.log" "$bin" run --config "$tmp/ss/surecron.yaml" \
  >/dev/null 2>"$tmp/ss/log" &
ss_pid=$!
ss_wait() { # $1 needle: waits up to 60 s for it in the daemon's log
  i=0
  while ! grep -q -- "$1" "$tmp/ss/log" 2>/dev/null && [ "$i" -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done
}
ss_wait "event=status_socket_started"
"$bin" trigger --config "$tmp/ss/surecron.yaml" s >/dev/null 2>&1
ss_wait "outcome=success"
export SURECRON_STATUS_VIA=daemon
case_ status-one-socket 0 status --config "$tmp/ss/surecron.yaml" s
if grep -q "status_socket:" "$tmp/out" || ! grep -q "last     success" "$tmp/out"; then
  failed=$((failed + 1))
  echo "FAIL valgrind status-one-socket: not answered through the socket"
  cat "$tmp/out"
fi
case_ status-one-socket-json 0 status --json --config "$tmp/ss/surecron.yaml" s
unset SURECRON_STATUS_VIA
kill -TERM "$ss_pid"
wait "$ss_pid"
rc=$?
if [ "$rc" -eq 0 ] && [ ! -e "$tmp/ss/st.sock" ] &&
  grep -q "event=status_socket_stopped" "$tmp/ss/log"; then
  passed=$((passed + 1))
  echo "ok   valgrind run-status-socket"
else
  failed=$((failed + 1))
  echo "FAIL valgrind run-status-socket (exit $rc)"
  cat "$tmp/vg-ssd.log" "$tmp/ss/log"
fi
