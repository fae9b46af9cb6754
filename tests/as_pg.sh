# shellcheck shell=sh
# as_pg.sh - sourced by the test servers' scripts (pg_server.sh,
# pgbouncer.sh): as_pg CMD... runs CMD as the `postgres` system user when
# we are root (PostgreSQL and PgBouncer both refuse root), else as we are.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}
