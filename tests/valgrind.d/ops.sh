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
