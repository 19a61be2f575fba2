#!/usr/bin/env bash
# Prints `export NAME=value` lines for the hub and the portal beside it (`make run`):
# JUPYTERHUB_URL, JUPYTERHUB_STATE_DIR, JUPYTERHUB_API_TOKEN (the portal service's token),
# JUPYTERHUB_CLIENT_ID and JUPYTERHUB_CLIENT_SECRET (the hub's client at the portal's provider).
# The two secrets are made once into DIR (mode 600) and kept; values already in the
# environment win.   eval "$(bash scripts/hub-env.sh var/hub)"
set -euo pipefail
DIR="${1:?usage: hub-env.sh DIR}"
mkdir -p "$DIR"
secret() {
  [[ -s "$DIR/$1" ]] || (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/$1")
  cat "$DIR/$1"
}
emit() { printf 'export %s=%q\n' "$1" "${!1:-$2}"; }
emit JUPYTERHUB_URL "http://127.0.0.1:8081"
emit JUPYTERHUB_STATE_DIR "$DIR"
emit JUPYTERHUB_API_TOKEN "$(secret api-token)"
emit JUPYTERHUB_CLIENT_ID "jupyterhub"
emit JUPYTERHUB_CLIENT_SECRET "$(secret client-secret)"
