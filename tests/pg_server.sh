#!/bin/sh
# pg_server.sh - a throw-away PostgreSQL for tests and benchmarks.
#
#   pg_server.sh start DIR     initdb into DIR/data (first time), start the
#                              server on 127.0.0.1:<free port> and a Unix
#                              socket in DIR; print the URL to use
#   pg_server.sh stop DIR      stop it fast (pg_ctl stop -m fast; if it is
#                              still there after 60 s, -m immediate, then
#                              SIGKILL), so no postgres is left behind
#   pg_server.sh crash DIR     stop it as a crash would (pg_ctl stop -m
#                              immediate: no shutdown checkpoint, the next
#                              start runs crash recovery); `crash` then
#                              `start` is `pg_ctl restart -m immediate`
#   pg_server.sh url DIR       print the URL of a server started in DIR
#   pg_server.sh run CMD...    start a server in a fresh temp folder, run
#                              CMD with SURECRON_TEST_PG set to its URL (and
#                              SURECRON_TEST_PG_DIR to the folder), stop the
#                              server and remove the folder; CMD's exit
#                              status is the script's
#
# `start` on a DIR that already holds a stopped server starts it again on
# the same port (tests restart the server in the middle of a run this
# way). When SURECRON_TEST_PG already names a server, `run` uses it and
# starts nothing; when no PostgreSQL binaries are installed, `run` runs CMD
# without SURECRON_TEST_PG (PostgreSQL suites then skip).
#
# PostgreSQL refuses to run as root, so as root the server runs as the
# `postgres` system user (runuser) and DIR is handed to it. Authentication
# is `trust` on 127.0.0.1 and the socket only: a test server, never a real one.
# SC_PG_FSYNC=off (tests) trades crash safety of the throw-away server for
# speed; the benchmark leaves fsync on.
#
# Every step is bounded: initdb gets 300 s, pg_ctl waits at most 30 s
# for a start and 60 s for a stop, a start that fails stops whatever it
# left running before it tries again, and `run` stops its server however
# it ends (exit, INT, TERM), so a failing or interrupted CI run leaves no
# server behind.
set -eu

PGBIN=${SC_PGBIN:-}
if [ -z "$PGBIN" ]; then
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && PGBIN=$d
  done
fi

# shellcheck source=tests/as_pg.sh
. "$(dirname "$0")/as_pg.sh"

url_of() {
  echo "postgresql://postgres@127.0.0.1:$(cat "$1/port")/postgres"
}

start() {
  dir=$1
  [ -n "$PGBIN" ] || { echo "pg_server.sh: no PostgreSQL binaries" >&2; exit 3; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_pg timeout -k 10 300 "$PGBIN/initdb" -D "$dir/data" -U postgres \
      --auth=trust \
      --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  fsync=${SC_PG_FSYNC:-on}
  tries=0
  while :; do
    if [ -f "$dir/port" ]; then
      port=$(cat "$dir/port")
    else
      # A random port; a taken one makes the start fail and we pick again.
      port=$(( $(od -An -N2 -tu2 /dev/urandom) % 20000 + 30000 ))
    fi
    if as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=$fsync \
          -c max_connections=300 -c shared_buffers=128MB" \
      start >/dev/null 2>&1; then
      echo "$port" >"$dir/port"
      break
    fi
    # A start that timed out (a slow machine) may have left a postmaster
    # coming up: stop it before another try, or before giving up.
    stop "$dir"
    tries=$((tries + 1))
    if [ -f "$dir/port" ] || [ $tries -ge 5 ]; then
      tail -n 20 "$dir/server.log" >&2 2>/dev/null || true
      echo "pg_server.sh: cannot start PostgreSQL in $dir" >&2
      exit 1
    fi
  done
  url_of "$dir"
}

stop() {
  sdir=$1
  [ -f "$sdir/data/postmaster.pid" ] || return 0
  as_pg "$PGBIN/pg_ctl" -D "$sdir/data" -m fast -w -t 60 stop \
    >/dev/null 2>&1 && return 0
  as_pg "$PGBIN/pg_ctl" -D "$sdir/data" -m immediate -w -t 30 stop \
    >/dev/null 2>&1 && return 0
  # The postmaster is the first line of postmaster.pid; its children end
  # with it.
  pid=$(head -n 1 "$sdir/data/postmaster.pid" 2>/dev/null || true)
  case $pid in
    ''|*[!0-9]*) ;;
    *) kill -KILL "$pid" 2>/dev/null || true ;;
  esac
  return 0
}

case "${1:-}" in
  start) [ $# -eq 2 ] || { echo "usage: pg_server.sh start DIR" >&2; exit 2; }
    start "$2" ;;
  stop) [ $# -eq 2 ] || { echo "usage: pg_server.sh stop DIR" >&2; exit 2; }
    stop "$2" ;;
  crash) [ $# -eq 2 ] || { echo "usage: pg_server.sh crash DIR" >&2; exit 2; }
    [ -f "$2/data/postmaster.pid" ] || exit 0
    as_pg "$PGBIN/pg_ctl" -D "$2/data" -m immediate -w -t 30 stop \
      >/dev/null 2>&1 || stop "$2" ;;
  url) [ $# -eq 2 ] || { echo "usage: pg_server.sh url DIR" >&2; exit 2; }
    url_of "$2" ;;
  run)
    shift
    if [ -n "${SURECRON_TEST_PG:-}" ] || [ -z "$PGBIN" ]; then
      exec "$@"
    fi
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/surecron-pg-XXXXXX")
    trap 'stop "$tmp"; rm -rf "$tmp"' EXIT
    if url=$(start "$tmp"); then
      # SURECRON_TEST_PG_DIR tells tests the server is a throw-away one
      # they may stop and start again (pg_server.sh stop/start DIR).
      SURECRON_TEST_PG=$url SURECRON_TEST_PG_DIR=$tmp
      export SURECRON_TEST_PG SURECRON_TEST_PG_DIR
    else
      echo "pg_server.sh: no PostgreSQL for this run; its tests skip" >&2
    fi
    # CMD runs in the background so that INT or TERM (CI giving up) is
    # taken at once, not when CMD ends: it is passed on to CMD, and the
    # EXIT trap stops the server.
    "$@" 0<&0 &
    child=$!
    trap 'kill -INT "$child" 2>/dev/null; exit 130' INT
    trap 'kill -TERM "$child" 2>/dev/null; exit 143' TERM
    rc=0
    wait "$child" || rc=$?
    exit $rc ;;
  *) echo "usage: pg_server.sh start DIR | stop DIR | crash DIR | url DIR | run CMD..." >&2
    exit 2 ;;
esac
