#!/usr/bin/env bash
# munged: Slurm's authentication between its daemons and clients.
source "$(dirname "$0")/common.sh"

munge_ready() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

case "$action" in
  start)
    ensure_packages munge
    [[ -s /etc/munge/munge.key ]] || { mungekey --create --keyfile /etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
    if ! munge_ready; then
      mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
      runuser -u munge -- /usr/sbin/munged >>"$LOG_DIR/munge.log" 2>&1 || true
    fi
    wait_until 15 munge_ready || die munge "munge -n | unmunge fails"
    say munge running "/run/munge/munge.socket.2" ;;
  status)
    if munge_ready; then say munge running; else say munge stopped; exit 1; fi ;;
  stop)
    stop_pidfile /run/munge/munged.pid 10
    say munge stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
