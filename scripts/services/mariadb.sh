#!/usr/bin/env bash
# MariaDB for slurmdbd: database slurm_acct_db, user slurm@localhost.
source "$(dirname "$0")/common.sh"

SLURMDB_PASS_FILE="$STATE_DIR/slurmdb.password"
maria_ready() { mariadb-admin ping --silent >/dev/null 2>&1; }

ensure_slurm_db() {
  [[ -s "$SLURMDB_PASS_FILE" ]] || { umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$SLURMDB_PASS_FILE"; }
  local pass; pass="$(cat "$SLURMDB_PASS_FILE")"
  # root logs in through the unix socket (Debian's unix_socket auth, or an empty password).
  mariadb -u root <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$pass';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL
}

case "$action" in
  start)
    ensure_packages mariadb-server
    if ! maria_ready; then
      mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
      start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    fi
    wait_until 60 maria_ready || die mariadb "not answering ping"
    ensure_slurm_db
    say mariadb running "socket /run/mysqld/mysqld.sock db=slurm_acct_db" ;;
  status)
    if maria_ready; then say mariadb running; else say mariadb stopped; exit 1; fi ;;
  stop)
    maria_ready && mariadb-admin shutdown >/dev/null 2>&1 || true
    say mariadb stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
