#!/usr/bin/env bash
# sshd on 127.0.0.1:$SSH_PORT with its own config and throwaway keys, separate from any system sshd.
# The login user ($SSH_USER) is the portal's Slurm service account (a Slurm Operator; it submits
# only as a member, through sudo: slurm.sh).
source "$(dirname "$0")/common.sh"

SSH_DIR="$STATE_DIR/ssh"
CFG="$SSH_DIR/sshd_config"
PIDFILE="$SSH_DIR/sshd.pid"

ssh_ready() {
  ssh -q -o BatchMode=yes -o ConnectTimeout=3 -o UserKnownHostsFile="$SSH_DIR/known_hosts" \
    -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -i "$SSH_DIR/id_ed25519" -p "$SSH_PORT" \
    "$SSH_USER@127.0.0.1" true
}

ensure_keys() {
  mkdir -p "$SSH_DIR" && chmod 755 "$SSH_DIR"
  [[ -s "$SSH_DIR/ssh_host_ed25519_key" ]] || ssh-keygen -q -t ed25519 -N '' -C portal-test-host -f "$SSH_DIR/ssh_host_ed25519_key"
  [[ -s "$SSH_DIR/id_ed25519" ]] || ssh-keygen -q -t ed25519 -N '' -C portal-test-client -f "$SSH_DIR/id_ed25519"
  # The pinned host key, as a known_hosts line for a non-standard port.
  echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$SSH_DIR/ssh_host_ed25519_key.pub")" >"$SSH_DIR/known_hosts"
  chmod 644 "$SSH_DIR/known_hosts"
  local home; home="$(getent passwd "$SSH_USER" | cut -d: -f6)"
  install -d -m 700 -o "$SSH_USER" -g "$SSH_USER" "$home/.ssh"
  grep -qxF "$(cat "$SSH_DIR/id_ed25519.pub")" "$home/.ssh/authorized_keys" 2>/dev/null \
    || cat "$SSH_DIR/id_ed25519.pub" >>"$home/.ssh/authorized_keys"
  chown "$SSH_USER:$SSH_USER" "$home/.ssh/authorized_keys" && chmod 600 "$home/.ssh/authorized_keys"
}

write_config() {
  write_if_changed "$CFG" <<CONF
# Written by scripts/services/sshd.sh. Tests copy it to start throwaway instances on other ports.
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $SSH_DIR/ssh_host_ed25519_key
PidFile $PIDFILE
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin no
AllowUsers $SSH_USER
AuthorizedKeysFile .ssh/authorized_keys
Subsystem sftp internal-sftp
MaxStartups 100:30:200
MaxSessions 50
ClientAliveInterval 15
LogLevel ERROR
CONF
}

case "$action" in
  start)
    ensure_packages openssh-server openssh-client
    ensure_login_user
    ensure_keys
    if write_config; then stop_pidfile "$PIDFILE" 10; fi
    mkdir -p /run/sshd && chmod 755 /run/sshd
    pid_alive "$PIDFILE" || /usr/sbin/sshd -f "$CFG" -E "$LOG_DIR/sshd.log"
    wait_until 15 ssh_ready || die sshd "cannot log in as $SSH_USER on 127.0.0.1:$SSH_PORT (see $LOG_DIR/sshd.log)"
    set_env_fact SSH_HOST 127.0.0.1
    set_env_fact SSH_PORT "$SSH_PORT"
    set_env_fact SSH_USER "$SSH_USER"
    set_env_fact SSH_KEY_PATH "$SSH_DIR/id_ed25519"
    set_env_fact SSH_KNOWN_HOSTS "$SSH_DIR/known_hosts"
    set_env_fact SSH_HOST_KEY_PUB "$SSH_DIR/ssh_host_ed25519_key.pub"
    set_env_fact SSHD_CONFIG "$CFG"
    say sshd running "$SSH_USER@127.0.0.1:$SSH_PORT key=$SSH_DIR/id_ed25519" ;;
  status)
    if pid_alive "$PIDFILE" && ssh_ready; then say sshd running "127.0.0.1:$SSH_PORT"; else say sshd stopped; exit 1; fi ;;
  stop)
    stop_pidfile "$PIDFILE" 10; say sshd stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
