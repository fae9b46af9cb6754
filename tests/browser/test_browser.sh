#!/bin/sh
# test_browser.sh - runs dashboard.test.js (the dashboard in headless
# chromium) as one suite of tests/run.sh: its output ends in cmocka's
# summary lines, so its counts join make test's total. Without node,
# chromium or the node modules (npm ci in tests/browser, which
# scripts/install-deps.sh test does), it is skipped, not failed.
here=$(cd "$(dirname "$0")" && pwd)
skip() {
  echo "[ SKIPPED  ] dashboard in chromium: $1"
  echo "[==========] 0 test(s) run."
  echo "[  PASSED  ] 0 test(s)."
  echo "[  SKIPPED ] 1 test(s)."
  exit 0
}
command -v node >/dev/null 2>&1 || skip "no node (apt-get install nodejs)"
[ -d "$here/node_modules/playwright-core" ] ||
  skip "playwright-core is not installed (cd tests/browser && npm ci)"
[ -x "${SURECRON_CHROMIUM:-/usr/bin/chromium}" ] ||
  skip "no chromium (apt-get install chromium)"
exec node "$here/dashboard.test.js"
