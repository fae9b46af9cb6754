#!/bin/sh
# pgbouncer.sh - a throw-away PgBouncer in front of a test PostgreSQL.
#
#   pgbouncer.sh start DIR HOST PORT DBNAME   start PgBouncer on 127.0.0.1
#                              (a free port) and a Unix socket in DIR, in
#                              session mode with one server connection
#                              per pool and NO reset between clients
#                              (server_reset_query empty): the next client
#                              gets the server session exactly as the last
#                              one left it; print the URL of database
#                              DBNAME through it
#   pgbouncer.sh stop DIR      stop it (SIGTERM, then SIGKILL after 10 s)
#
# The tests use it to check what a session-mode pooler hands us. Trust
# authentication on loopback only: never a real pooler. As root it runs as
# the `postgres` system user (PgBouncer refuses root), and DIR is handed
# to it. Exit 3 when PgBouncer is not installed (the test then skips).
set -eu

BIN=${SC_PGBOUNCER:-}
if [ -z "$BIN" ]; then
  for b in /usr/sbin/pgbouncer /usr/bin/pgbouncer; do
    [ -x "$b" ] && BIN=$b && break
  done
fi

# shellcheck source=tests/as_pg.sh
. "$(dirname "$0")/as_pg.sh"

# ready PORT DB: the pooler on 127.0.0.1:PORT answers a connection to DB
# (pg_isready: it speaks the protocol, so another kind of server on the
# port does not count); without pg_isready, its pid file and Unix socket.
ready() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h 127.0.0.1 -p "$1" -d "$2" -U postgres -t 2
  else
    [ -s "$dir/pgbouncer.pid" ] && [ -S "$dir/.s.PGSQL.$1" ]
  fi
}

start() {
  dir=$1 host=$2 sport=$3 db=$4
  [ -n "$BIN" ] || { echo "pgbouncer.sh: PgBouncer is not installed" >&2; exit 3; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  echo '"postgres" ""' >"$dir/users.txt"
  tries=0
  while :; do
    port=$(( $(od -An -N2 -tu2 /dev/urandom) % 20000 + 30000 ))
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
$db = host=$host port=$sport dbname=$db
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
pool_mode = session
server_reset_query =
default_pool_size = 1
max_client_conn = 20
ignore_startup_parameters = options,extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"/*
    if as_pg "$BIN" -d "$dir/pgbouncer.ini" >/dev/null 2>&1; then
      # -d returns once it forked; wait until the TCP port the tests use
      # answers (the Unix socket may come first, and a port taken by
      # another process leaves no pooler behind it).
      n=0
      until ready "$port" "$db" || [ $n -ge 100 ]; do
        sleep 0.1
        n=$((n + 1))
      done
      ready "$port" "$db" && break
    fi
    stop "$dir"
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      tail -n 20 "$dir/pgbouncer.log" >&2 2>/dev/null || true
      echo "pgbouncer.sh: cannot start PgBouncer in $dir" >&2
      exit 1
    fi
  done
  echo "postgresql://postgres@127.0.0.1:$port/$db"
}

stop() {
  pid=$(cat "$1/pgbouncer.pid" 2>/dev/null || true)
  case $pid in
    ''|*[!0-9]*) return 0 ;;
  esac
  kill -TERM "$pid" 2>/dev/null || return 0
  n=0
  while [ $n -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    n=$((n + 1))
  done
  kill -KILL "$pid" 2>/dev/null || true
  return 0
}

case "${1:-}" in
  start) [ $# -eq 5 ] || { echo "usage: pgbouncer.sh start DIR HOST PORT DBNAME" >&2; exit 2; }
    start "$2" "$3" "$4" "$5" ;;
  stop) [ $# -eq 2 ] || { echo "usage: pgbouncer.sh stop DIR" >&2; exit 2; }
    stop "$2" ;;
  *) echo "usage: pgbouncer.sh start DIR HOST PORT DBNAME | stop DIR" >&2
    exit 2 ;;
esac
