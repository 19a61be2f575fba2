#!/usr/bin/env bash
# Starts (idempotently) the real components the tests use: PostgreSQL, Redis, MariaDB, munge,
# Slurm (slurmdbd, slurmctld, slurmd with two fake GPUs), sshd on 127.0.0.1:2222, moto and the
# instance emulator (runs the user data of moto's portal instances, launcher/cloud/emulator.py), and
# an OpenID Connect provider on 127.0.0.1:9090 (oidc-provider from npm) for the sign-in tests,
# and JupyterHub with its proxy on 127.0.0.1:8091 (make run's own hub takes 8081) (notebooks; docs/notebooks-hub.md).
#   bash scripts/services.sh [start|status|stop]
# Facts for tests and seed_demo are written to ${PORTAL_SERVICES_DIR:-/var/lib/portal-services}/services.env.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
action="${1:-start}"

[[ "$(id -u)" == 0 ]] || { echo "services.sh must run as root" >&2; exit 1; }

# Start order matters: slurmdbd needs MariaDB and munge; slurm registers the user sshd logs in as.
COMPONENTS=(postgres redis mariadb munge slurm sshd moto emulator oidc hub)

case "$action" in
  start)
    bash "$here/services/packages.sh" start
    for c in "${COMPONENTS[@]}"; do bash "$here/services/$c.sh" start; done ;;
  status)
    rc=0
    for c in "${COMPONENTS[@]}"; do bash "$here/services/$c.sh" status || rc=1; done
    exit $rc ;;
  stop)
    # Reverse order; PostgreSQL, Redis and MariaDB may be shared with other work, so they stop too
    # only when asked for explicitly: services.sh stop all
    for c in hub oidc emulator moto sshd slurm munge; do bash "$here/services/$c.sh" stop; done
    if [[ "${2:-}" == all ]]; then for c in mariadb redis postgres; do bash "$here/services/$c.sh" stop; done; fi ;;
  *) echo "usage: $0 [start|status|stop [all]]" >&2; exit 2 ;;
esac
