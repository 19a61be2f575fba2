# Shared helpers for scripts/services/*.sh. Sourced, never run.
# Every component script offers: start | status | stop, and prints one status line per component.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="${PORTAL_SERVICES_DIR:-/var/lib/portal-services}"
ENV_FILE="$STATE_DIR/services.env"
LOG_DIR="$STATE_DIR/log"
VENV="${VENV:-$REPO_ROOT/.venv}"
case "$VENV" in /*) ;; *) VENV="$REPO_ROOT/$VENV" ;; esac

SSH_PORT="${PORTAL_SSH_PORT:-2222}"
SSH_USER="${PORTAL_SSH_USER:-portal}"
SLURM_CLUSTER="${PORTAL_SLURM_CLUSTER:-portal}"
SLURM_PARTITION="${PORTAL_SLURM_PARTITION:-gpu}"
MOTO_PORT="${PORTAL_MOTO_PORT:-5000}"

mkdir -p "$STATE_DIR" "$LOG_DIR"

# One line per component, aligned, so `services.sh status` reads as a table.
say() { printf '%-10s %-8s %s\n' "$1" "$2" "${3:-}"; }
die() { say "$1" "FAILED" "$2" >&2; exit 1; }

# wait_until SECONDS CMD...: poll CMD every 0.2 s; bounded so a broken service fails fast.
wait_until() {
  local limit="$1"; shift
  local deadline=$(( $(date +%s%N) / 1000000 + limit * 1000 ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s%N) / 1000000 < deadline )) || return 1
    sleep 0.2
  done
}

# ensure_packages PKG...: install only what is missing; `apt-get update` only when needed.
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  (( ${#missing[@]} )) || return 0
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOG_DIR/apt.log" 2>&1 || {
    apt-get update -q >>"$LOG_DIR/apt.log" 2>&1
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOG_DIR/apt.log" 2>&1
  }
}

# write_if_changed PATH: replace PATH with stdin only if different; returns 0 when it changed.
write_if_changed() {
  local target="$1" tmp
  tmp="$(mktemp)"
  cat >"$tmp"
  if [[ -f "$target" ]] && cmp -s "$tmp" "$target"; then rm -f "$tmp"; return 1; fi
  mkdir -p "$(dirname "$target")"
  mv "$tmp" "$target"
  chmod 644 "$target"
  return 0
}

# pid_alive PIDFILE: the process named in PIDFILE exists.
pid_alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pidfile PIDFILE SECONDS: TERM the process (only the one we started), wait, then KILL.
stop_pidfile() {
  local pidfile="$1" limit="${2:-10}" pid
  pid_alive "$pidfile" || return 0
  pid="$(cat "$pidfile")"
  kill "$pid" 2>/dev/null || true
  wait_until "$limit" bash -c "! kill -0 $pid" || kill -9 "$pid" 2>/dev/null || true
}

# set_env_fact KEY VALUE: record a fact in services.env (read by tests and seed_demo).
set_env_fact() {
  local key="$1" value="$2"
  touch "$ENV_FILE"
  grep -v "^${key}=" "$ENV_FILE" >"$ENV_FILE.tmp" || true
  printf '%s=%s\n' "$key" "$value" >>"$ENV_FILE.tmp"
  mv "$ENV_FILE.tmp" "$ENV_FILE"
  chmod 644 "$ENV_FILE"
}

action="${1:-start}"

# ensure_login_user: the unix user that the portal logs in as over SSH (the Slurm service
# account: sacctmgr as a Slurm Operator, squeue/sacct/scancel, and sbatch only as a member
# through sudo; docs/security.md).
ensure_login_user() {
  id "$SSH_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$SSH_USER"
  # sshd with `UsePAM no` refuses a locked account ('!' in shadow); '*' = no password, not locked.
  [[ "$(getent shadow "$SSH_USER" | cut -d: -f2)" == "*" ]] || usermod -p '*' "$SSH_USER"
  # Members' jobs reach their folders under ~/portal-jobs (each shared with its member alone by
  # an ACL): the home is traversable, never listable, by others.
  chmod 0711 "$(getent passwd "$SSH_USER" | cut -d: -f6)"
}

# Members' cluster logins on the test cluster: unix users in $MEMBER_GROUP, whom the service
# account may submit for (the sudoers rule in slurm.sh). Their Slurm associations are added by
# the portal when an allocation is provisioned (its members' cluster logins), never here.
MEMBER_GROUP="${PORTAL_SLURM_MEMBER_GROUP:-portal-members}"
MEMBER_LOGINS=(${PORTAL_SLURM_MEMBERS:-slurm-alice slurm-bob})

ensure_member_logins() {
  getent group "$MEMBER_GROUP" >/dev/null || groupadd --system "$MEMBER_GROUP"
  local login
  for login in "${MEMBER_LOGINS[@]}"; do
    id "$login" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$login"
    id -nG "$login" | tr ' ' '\n' | grep -qx "$MEMBER_GROUP" || usermod -aG "$MEMBER_GROUP" "$login"
    chmod 0700 "$(getent passwd "$login" | cut -d: -f6)"
  done
}
