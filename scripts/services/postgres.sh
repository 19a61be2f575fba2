#!/usr/bin/env bash
# PostgreSQL 15: role `portal` (password `portal`, CREATEDB) owning database `portal`.
source "$(dirname "$0")/common.sh"

pg_version() { ls /etc/postgresql 2>/dev/null | sort -V | tail -n1; }
pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432; }
# Peer auth as the postgres unix user works under Debian's default pg_hba and under trust.
as_postgres() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 "$@"; }

ensure_role_and_db() {
  as_postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname='portal'" | grep -q 1 \
    || as_postgres -c "CREATE ROLE portal LOGIN PASSWORD 'portal' CREATEDB"
  as_postgres -tAc "SELECT 1 FROM pg_database WHERE datname='portal'" | grep -q 1 \
    || as_postgres -c "CREATE DATABASE portal OWNER portal"
}

case "$action" in
  start)
    ensure_packages postgresql
    ver="$(pg_version)"
    [[ -n "$ver" ]] || die postgres "no cluster under /etc/postgresql"
    pg_ready || pg_ctlcluster --skip-systemctl-redirect "$ver" main start >>"$LOG_DIR/postgres.log" 2>&1 || true
    wait_until 30 pg_ready || die postgres "not ready on 127.0.0.1:5432 (see $LOG_DIR/postgres.log)"
    ensure_role_and_db
    set_env_fact DATABASE_URL "postgres://portal:portal@127.0.0.1:5432/portal"
    say postgres running "127.0.0.1:5432 db=portal user=portal (PostgreSQL $ver)" ;;
  status)
    if pg_ready; then say postgres running "127.0.0.1:5432"; else say postgres stopped; exit 1; fi ;;
  stop)
    ver="$(pg_version)"
    [[ -z "$ver" ]] || pg_ctlcluster --skip-systemctl-redirect "$ver" main stop >/dev/null 2>&1 || true
    say postgres stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
