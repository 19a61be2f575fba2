#!/usr/bin/env bash
# Single-node Slurm 22.05: slurmdbd (on MariaDB), slurmctld, slurmd with two fake GPUs.
# Needs munge and mariadb running first (the driver orders them).
source "$(dirname "$0")/common.sh"

SLURM_DIR="$STATE_DIR/slurm"
NODE="$(hostname -s)"
PASS_FILE="$STATE_DIR/slurmdb.password"
ADMIN_ACCOUNT="portal_ops"

dbd_ready() { sacctmgr -n show cluster >/dev/null 2>&1; }
ctld_ready() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null; }
node_ready() { node_state | grep -qE '^(idle|mixed|allocated)'; }

write_configs() {
  local changed=1
  mkdir -p "$SLURM_DIR"/{ctld,d,dev}
  for i in 0 1; do [[ -c "$SLURM_DIR/dev/gpu$i" ]] || mknod "$SLURM_DIR/dev/gpu$i" c 1 3; done
  "$(dirname "$0")/slurm-conf.sh" slurm.conf "$NODE" | write_if_changed /etc/slurm/slurm.conf && changed=0
  "$(dirname "$0")/slurm-conf.sh" gres.conf "$NODE" | write_if_changed /etc/slurm/gres.conf && changed=0
  "$(dirname "$0")/slurm-conf.sh" slurmdbd.conf "$NODE" | write_if_changed /etc/slurm/slurmdbd.conf && changed=0
  chmod 600 /etc/slurm/slurmdbd.conf
  return $changed
}

start_dbd() {
  dbd_ready && return 0
  pid_alive "$SLURM_DIR/slurmdbd.pid" || /usr/sbin/slurmdbd >>"$LOG_DIR/slurmdbd.start.log" 2>&1
  wait_until 60 dbd_ready || die slurmdbd "sacctmgr cannot reach slurmdbd (see $LOG_DIR/slurmdbd.log)"
}

# The cluster, the service account and its level are registered once; each step re-runnable.
# The service account is a Slurm Operator: enough for sacctmgr add/modify/delete of accounts,
# users and limits and for scancel of any job; never Admin (which could also reconfigure the
# controller as if it were SlurmUser). It has no association with the portal's accounts and
# never runs a member's job: those run as the member (sudoers below).
register_accounting() {
  sacctmgr -n -P show cluster format=Cluster | grep -qx "$SLURM_CLUSTER" \
    || sacctmgr -i add cluster "$SLURM_CLUSTER" >/dev/null
  sacctmgr -n -P show account "$ADMIN_ACCOUNT" format=Account | grep -qx "$ADMIN_ACCOUNT" \
    || sacctmgr -i add account "$ADMIN_ACCOUNT" cluster="$SLURM_CLUSTER" description=portal-service >/dev/null
  sacctmgr -n -P show user "$SSH_USER" format=AdminLevel | grep -qx Operator \
    || sacctmgr -i add user "$SSH_USER" account="$ADMIN_ACCOUNT" adminlevel=Operator >/dev/null \
    || sacctmgr -i modify user "$SSH_USER" set adminlevel=Operator >/dev/null
}

# What the service account may run as a member: sbatch (a member's job or notebook is submitted
# as that member) and tail (what a member's job wrote is read as that member, so a symlink it
# planted never makes the service account read its own or another member's files). Only as a
# user in $MEMBER_GROUP, never root, no password. docs/security.md has the site's version.
write_sudoers() {
  local rule tmp
  rule="$(printf '%s\n' \
    "# Written by scripts/services/slurm.sh; edits are overwritten (docs/security.md)." \
    "Defaults:$SSH_USER !requiretty, env_reset" \
    "$SSH_USER ALL=(%$MEMBER_GROUP, !root) NOPASSWD: $(command -v sbatch), $(command -v tail)")"
  tmp="$(mktemp)"
  printf '%s\n' "$rule" >"$tmp"
  visudo -cqf "$tmp" || { rm -f "$tmp"; die slurm "the sudoers rule does not parse"; }
  rm -f "$tmp"
  printf '%s\n' "$rule" | write_if_changed /etc/sudoers.d/portal-slurm || true
  chmod 0440 /etc/sudoers.d/portal-slurm
}

start_ctld_and_node() {
  pid_alive "$SLURM_DIR/slurmctld.pid" || /usr/sbin/slurmctld >>"$LOG_DIR/slurmctld.start.log" 2>&1
  wait_until 30 ctld_ready || die slurmctld "scontrol ping fails (see $LOG_DIR/slurmctld.log)"
  pid_alive "$SLURM_DIR/slurmd.pid" || /usr/sbin/slurmd >>"$LOG_DIR/slurmd.start.log" 2>&1
  wait_until 30 bash -c "sinfo -h -n '$NODE' -o %T | grep -qvE '^(unknown|down)'" || true
  # A node left drained by an earlier bad start would otherwise never take jobs.
  if node_state | grep -qE 'drain|down'; then
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
  fi
  wait_until 30 node_ready || die slurmd "node $NODE is '$(node_state)' (see $LOG_DIR/slurmd.log)"
}

stop_all() {
  stop_pidfile "$SLURM_DIR/slurmd.pid" 15
  stop_pidfile "$SLURM_DIR/slurmctld.pid" 15
  stop_pidfile "$SLURM_DIR/slurmdbd.pid" 15
}

case "$action" in
  start)
    ensure_packages slurm-wlm slurmdbd slurm-client sudo acl
    ensure_login_user
    ensure_member_logins
    write_sudoers
    if write_configs; then stop_all; fi   # a changed config needs fresh daemons
    start_dbd
    register_accounting
    start_ctld_and_node
    set_env_fact SLURM_CLUSTER "$SLURM_CLUSTER"
    set_env_fact SLURM_PARTITION "$SLURM_PARTITION"
    set_env_fact SLURM_NODE "$NODE"
    set_env_fact SLURM_ADMIN_ACCOUNT "$ADMIN_ACCOUNT"
    set_env_fact SLURM_MEMBERS "$(IFS=,; echo "${MEMBER_LOGINS[*]}")"
    set_env_fact SLURM_MEMBER_GROUP "$MEMBER_GROUP"
    say slurm running "cluster=$SLURM_CLUSTER partition=$SLURM_PARTITION node=$NODE gres=gpu:2 ($(node_state))" ;;
  status)
    if dbd_ready && ctld_ready && node_ready; then say slurm running "node $NODE $(node_state)"
    else say slurm stopped "dbd=$(dbd_ready && echo up || echo down) ctld=$(ctld_ready && echo up || echo down) node=$(node_state)"; exit 1; fi ;;
  stop)
    stop_all; say slurm stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
