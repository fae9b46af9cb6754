# import-crontab on the corpus (both formats, '%' input, notes), a file
# with a NUL byte, and the completion's name listing.
case_ import-crontab 0 import-crontab tests/fixtures/crontab/user.cron
case_ import-crontab-system 0 import-crontab --system --user root tests/fixtures/crontab/system.cron
printf '0 * * * * a\000b\n' >"$tmp/nul.cron"
case_ import-crontab-nul 1 import-crontab "$tmp/nul.cron"
case_ check-names 0 check --names --config examples/surecron.yaml
