#!/bin/sh
# Static checks: cppcheck and clang-tidy over the library, the CLI, the test
# fakes, the benchmarks and the fuzz targets; cppcheck also over the test
# suites.
# Exits non-zero on the first finding so CI fails loudly.
set -eu
cd "$(dirname "$0")/.."
inc="-Iinclude -Isrc -Itests -Ifuzz"
pkgflags=$(pkg-config --cflags sqlite3 libpq libcurl jansson yaml-0.1 libmicrohttpd)
files=$(ls src/*.c src/web/*.c src/cli/*.c 2>/dev/null)
# The test fakes and benchmarks get both tools. The test suites get
# cppcheck only: clang-tidy's analyzer does not know that a failed cmocka
# assert_* never returns, so every "x may be NULL after assert_non_null(x)"
# would be a false finding.
# Fuzz targets are built with fuzz/fuzz.h force-included (fuzz/fuzz.mk).
helpers=$(ls tests/fakes/*.c bench/*.c fuzz/*.c 2>/dev/null)
suites=$(ls tests/unit/*.c tests/integ/*.c 2>/dev/null)

echo "lint: clang-format"
# New code keeps the layout of .clang-format; scripts/formatted.txt lists
# the files held to it (older files join as they are reworked).
fmt_bad=0
for f in $(grep -v '^#' scripts/formatted.txt); do
  [ -f "$f" ] || { echo "lint: $f is listed in scripts/formatted.txt but missing" >&2; fmt_bad=1; continue; }
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 ||
    { echo "lint: $f is not laid out as .clang-format says (clang-format -i $f)" >&2; fmt_bad=1; }
done
[ "$fmt_bad" -eq 0 ] || exit 1

echo "lint: cppcheck"
# shellcheck disable=SC2086
jobs=$(nproc 2>/dev/null || echo 1)
cppcheck -j "$jobs" --quiet --error-exitcode=1 --std=c11 --enable=warning,portability \
  --inline-suppr --suppress=missingIncludeSystem -D__GNUC__ -DSURECRON_FAILPOINTS \
  $inc $files $helpers $suites

echo "lint: clang-tidy"
checks='-*,bugprone-*,clang-analyzer-*,cert-err33-c,misc-redundant-expression,-bugprone-easily-swappable-parameters,-bugprone-reserved-identifier,-bugprone-narrowing-conversions,-bugprone-assignment-in-if-condition,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,-bugprone-implicit-widening-of-multiplication-result,-cert-err33-c,-clang-analyzer-valist.Uninitialized'
# valist.Uninitialized misreads va_start on x86_64 in clang-tidy 14.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
# One clang-tidy per file, as many at a time as there are cores (it is
# the longest step of the lint); any failing file fails the whole.
export checks inc pkgflags
# shellcheck disable=SC2086,SC2016
printf '%s\n' $files $helpers | xargs -P "$jobs" -n 1 sh -c \
  'clang-tidy --quiet --warnings-as-errors="*" --checks="$checks" "$0" -- \
     -std=c11 -D_GNU_SOURCE -DSURECRON_FAILPOINTS -include fuzz/fuzz.h \
     $inc $pkgflags' >"$out" 2>&1 || rc=$?
grep -v "warnings generated" "$out" || true
[ "$rc" -eq 0 ] || { echo "lint: clang-tidy found problems" >&2; exit 1; }
echo "lint: clean"
