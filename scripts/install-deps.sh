#!/bin/sh
# Installs the Debian packages surecron builds, tests and benchmarks with.
# Idempotent and quiet when everything is present; needs root only when
# something is missing.
#
#   install-deps.sh [build|test|bench]          install what is missing
#   install-deps.sh --check [build|test|bench]  only say what is missing
#                                               and how to install it
#
# `make` and the other build targets run the --check form: they never
# install anything themselves. `make deps` (deps-test, deps-bench) and the
# README's two commands run the installing form.
set -eu

check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi

build_pkgs="gcc make pkg-config libsqlite3-dev libpq-dev libcurl4-openssl-dev
libjansson-dev libyaml-dev libmicrohttpd-dev libssl-dev tzdata ca-certificates"
test_pkgs="libcmocka-dev postgresql pgbouncer sqlite3 valgrind cppcheck clang-tidy clang-format clang
libclang-rt-14-dev prometheus python3-aiosmtpd python3-croniter cron
debhelper dpkg-dev lintian faketime libfaketime"
# The dashboard's browser test (tests/browser/): installed by the `test`
# set, but not demanded by --check, since the test skips without them.
browser_pkgs="chromium nodejs npm"
# `make man`, and test_completion's check that the committed man pages
# are what their markdown makes: installed by `test`, not demanded by
# --check (the check skips without it).
docs_pkgs="pandoc"
# The protocol model's checker (model/check.sh, a suite of `make test`):
# installed by `test`, not demanded by --check (the suite skips without).
model_pkgs="spin"
bench_pkgs="redis-server nodejs npm"

want=$build_pkgs
case "${1:-build}" in
  build) ;;
  test) want="$want $test_pkgs"; [ "$check" = 1 ] ||
    want="$want $browser_pkgs $docs_pkgs $model_pkgs" ;;
  bench) want="$want $test_pkgs $bench_pkgs" ;;
  *) echo "install-deps.sh: unknown set '$1' (build, test or bench)" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
  # nodejs ships npm on some images; accept a working npm command too.
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing="$missing $p"
  fi
done

# The browser test's node modules (playwright-core, no browser download:
# it drives Debian's chromium), as pinned by tests/browser/package-lock.json.
# Run after the packages are there; only when the lock differs from the
# copy the last install left in node_modules.
browser_modules() {
  case " $want " in *" chromium "*) ;; *) return 0 ;; esac
  d=$(cd "$(dirname "$0")/.." && pwd)/tests/browser
  lock=$d/package-lock.json
  [ -f "$lock" ] || return 0
  cmp -s "$lock" "$d/node_modules/.installed-lock.json" && return 0
  echo "install-deps.sh: npm ci in tests/browser" >&2
  (cd "$d" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
    cp package-lock.json node_modules/.installed-lock.json)
}

if [ -z "$missing" ]; then
  [ "$check" = 1 ] || browser_modules
  exit 0
fi

if [ "$check" = 1 ]; then
  set_name=${1:-build}
  echo "surecron: missing Debian packages:$missing" >&2
  echo "surecron: install them with: make deps$( [ "$set_name" = build ] || echo "-$set_name")" \
    "(or: sudo apt-get install$missing)" >&2
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: missing Debian packages:$missing" >&2
  echo "install-deps.sh: run as root, or: sudo apt-get install$missing" >&2
  exit 1
fi
echo "install-deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# The tests start their own PostgreSQL, Prometheus and Redis on loopback
# ports of their own: keep the packages' services from starting on
# install (a policy-rc.d that says no), unless the host already has one.
rcd=/usr/sbin/policy-rc.d
if [ ! -e "$rcd" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$rcd"
  chmod 755 "$rcd"
  trap 'rm -f "$rcd"' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
browser_modules
