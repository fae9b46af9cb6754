#!/bin/sh
# Checks what surecron installs and ships (issue 18), without installing
# anything on this machine:
#   - `make install` under DESTDIR with PREFIX=/usr puts every file where
#     the usual variables say, and `make uninstall` removes all of them;
#   - `dpkg-buildpackage -b -us -uc` builds the .deb; its contents
#     (dpkg-deb -c) hold the binary, the man pages, the completion, the
#     unit and the default config, which is a conffile; the maintainer
#     scripts create the surecron user and /var/lib/surecron (0700) and
#     enable the unit without starting it; lintian reports no error;
#   - the packaged binary, extracted with dpkg-deb -x, runs, and its
#     default config passes `surecron check` (its folders moved into the
#     extracted tree, since /var/lib/surecron does not exist here).
# Ends with "N passed, N failed" like the suites. Needs the packages of
# `scripts/install-deps.sh test` (debhelper, dpkg-dev, lintian); run from
# the project's root after the other CI steps (the .deb goes to build/pkg).
set -u
cd "$(dirname "$0")/.."

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...
  what=$1; shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- make install / uninstall ----
dest=$work/dest
if make -s install DESTDIR="$dest" PREFIX=/usr >"$work/install.log" 2>&1; then
  ok "make install DESTDIR PREFIX=/usr"
else
  bad "make install (see below)"; cat "$work/install.log"
fi
for f in usr/bin/surecron usr/share/man/man1/surecron.1 \
  usr/share/man/man5/surecron.yaml.5 \
  usr/share/bash-completion/completions/surecron \
  usr/share/doc/surecron/examples/surecron.yaml \
  usr/share/doc/surecron/examples/surecron.service; do
  check "installed /$f" test -f "$dest/$f"
done
check "installed binary is executable and runs" "$dest/usr/bin/surecron" --version
# BINDIR and MANDIR move their parts on their own.
dest2=$work/dest2
make -s install DESTDIR="$dest2" PREFIX=/opt/sc BINDIR=/opt/sc/sbin \
  MANDIR=/opt/sc/man >/dev/null 2>&1
check "BINDIR honoured" test -x "$dest2/opt/sc/sbin/surecron"
check "MANDIR honoured" test -f "$dest2/opt/sc/man/man1/surecron.1"
make -s uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1
left=$(find "$dest" -type f | wc -l)
if [ "$left" -eq 0 ]; then ok "make uninstall removes every file"
else bad "make uninstall left $left files:"; find "$dest" -type f; fi

# ---- the Debian package ----
if ! command -v dpkg-buildpackage >/dev/null 2>&1; then
  bad "dpkg-buildpackage not found (apt-get install dpkg-dev debhelper)"
  echo "$pass passed, $fail failed"
  exit 1
fi
if dpkg-buildpackage -b -us -uc >"$work/dpkg.log" 2>&1; then
  ok "dpkg-buildpackage -b -us -uc"
else
  bad "dpkg-buildpackage (last lines below)"; tail -30 "$work/dpkg.log"
fi
mkdir -p build/pkg
mv ../surecron_*.deb ../surecron-dbgsym_*.deb ../surecron_*.buildinfo \
  ../surecron_*.changes build/pkg/ 2>/dev/null
deb=$(ls build/pkg/surecron_*_*.deb 2>/dev/null | head -n 1)
if [ -z "$deb" ]; then
  bad "no .deb was built"
  echo "$pass passed, $fail failed"
  exit 1
fi
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
for f in ./usr/bin/surecron ./usr/share/man/man1/surecron.1.gz \
  ./usr/share/man/man5/surecron.yaml.5.gz \
  ./usr/share/bash-completion/completions/surecron \
  ./lib/systemd/system/surecron.service ./etc/surecron/surecron.yaml \
  ./usr/share/doc/surecron/copyright; do
  check "package holds $f" grep -qx "$f" "$work/contents"
done
dpkg-deb -e "$deb" "$work/control"
check "the default config is a conffile" \
  grep -qx /etc/surecron/surecron.yaml "$work/control/conffiles"
check "postinst creates the surecron user" \
  grep -q "adduser --system" "$work/control/postinst"
check "postinst makes /var/lib/surecron 0700" \
  grep -q "install -d -o surecron -g surecron -m 0700 /var/lib/surecron" \
  "$work/control/postinst"
check "postinst enables the unit" \
  grep -q "deb-systemd-helper enable 'surecron.service'" "$work/control/postinst"
if grep -q "deb-systemd-invoke .*start" "$work/control/postinst"; then
  bad "postinst starts the unit (it must only enable it)"
else
  ok "postinst does not start the unit"
fi
check "depends on the libraries opened with dlopen" \
  sh -c "dpkg-deb -f '$deb' Depends | grep -q libcurl4 &&
         dpkg-deb -f '$deb' Depends | grep -q libpq5 &&
         dpkg-deb -f '$deb' Depends | grep -q libssl3 &&
         dpkg-deb -f '$deb' Depends | grep -q libmicrohttpd12"
if command -v lintian >/dev/null 2>&1; then
  if lintian --fail-on error "$deb" >"$work/lintian.log" 2>&1; then
    ok "lintian: no error"
  else
    bad "lintian errors:"; grep "^E:" "$work/lintian.log"
  fi
fi

# ---- the packaged binary, from an extracted tree ----
x=$work/x
dpkg-deb -x "$deb" "$x"
check "packaged binary runs" "$x/usr/bin/surecron" --version
check "packaged unit runs /usr/bin/surecron" \
  grep -q "^ExecStart=/usr/bin/surecron run --config /etc/surecron/surecron.yaml" \
  "$x/lib/systemd/system/surecron.service"
mkdir -p "$x/var/lib/surecron"
sed "s|/var/lib/surecron|$x/var/lib/surecron|g" "$x/etc/surecron/surecron.yaml" \
  >"$work/surecron.yaml"
check "packaged default config passes surecron check --strict" \
  "$x/usr/bin/surecron" check --strict --config "$work/surecron.yaml"
check "packaged completion loads in bash" \
  bash -c ". '$x/usr/share/bash-completion/completions/surecron' &&
          complete -p surecron"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
