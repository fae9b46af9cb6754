# The operator paths on a scratch copy of the example: trigger, a run,
# reports, a retry of a job that is not dead (error path).
cp -R examples "$tmp/ex"
vcfg="$tmp/ex/surecron.yaml"
case_ trigger 0 trigger --config "$vcfg" weekly-summary
case_ run-once 0 run --once --config "$vcfg"
case_ ledger 0 ledger --config "$vcfg"
case_ ledger-json 0 ledger --config "$vcfg" --json
case_ ledger-lost 0 ledger --config "$vcfg" --lost --since 7d
case_ status 0 status --config "$vcfg"
case_ explain-schedule 0 explain --config "$vcfg" weekly-summary
case_ retry-not-dead 2 retry --config "$vcfg" 1
# A lost slot: its alert (a file alert target), the report that fails,
# status with the open alert, ack, and the report back at 0.
cat >"$tmp/lost.yaml" <<'YAML'
store: sqlite:./lost.db
targets:
  archive: {kind: file, path: ./lost.jsonl}
  oncall: {kind: file, path: ./lost-alerts.jsonl}
alerts: {targets: [oncall], realert: 1h}
schedules:
  broken:
    cron: "0 3 * * *"
    tz: UTC
    targets: [archive]
    retry: {attempts: 1, backoff: fixed, delay: 1m}
    tasks:
      - {name: t, shell: "echo 'quota exceeded' >&2; exit 75"}
YAML
case_ trigger-lost 0 trigger --config "$tmp/lost.yaml" --slot 2026-11-27T03:00:00Z broken
case_ run-once-lost 1 run --once --config "$tmp/lost.yaml"
case_ ledger-lost-open 1 ledger --config "$tmp/lost.yaml" --lost
case_ status-open-alert 0 status --config "$tmp/lost.yaml"
case_ ack 0 ack --config "$tmp/lost.yaml" --note "looked at it" broken 2026-11-27T03:00:00Z
case_ ledger-lost-acked 0 ledger --config "$tmp/lost.yaml" --lost --json
case_ ack-nothing 1 ack --config "$tmp/lost.yaml" broken 2026-11-28T03:00:00Z
