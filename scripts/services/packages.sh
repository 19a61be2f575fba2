#!/usr/bin/env bash
# Debian packages for every component, in one apt transaction (only what is missing).
# wrk drives `make bench`; docker-compose checks docker-compose.yml (no engine needed); curl and
# jq run the README's API lines in tests/portal/test_readme.py.
source "$(dirname "$0")/common.sh"

PACKAGES=(postgresql redis-server mariadb-server munge slurm-wlm slurmdbd slurm-client
          openssh-server openssh-client curl jq chromium util-linux wrk docker-compose)

case "$action" in
  start)
    ensure_packages "${PACKAGES[@]}" || die packages "apt-get failed (see $LOG_DIR/apt.log)"
    set_env_fact CHROMIUM_PATH /usr/bin/chromium
    say packages ok "${#PACKAGES[@]} Debian packages present" ;;
  status|stop) ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
