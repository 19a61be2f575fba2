#!/usr/bin/env bash
# JupyterHub (launcher/notebooks/hub/jupyterhub_config.py) with its configurable-http-proxy on
# 127.0.0.1:$HUB_PORT (the hub's own API on +1, the proxy's on +2), state (sqlite, cookie secret,
# pids) in $STATE_DIR/hub. Signs users in against the portal at PORTAL_BASE_URL (default
# http://127.0.0.1:8000) once that portal has run `manage.py hub_client` with the facts below;
# the portal service's REST API works without it. Browser tests start their own hub against
# their live server (tests/notebooks/hubfixture.py). Writes JUPYTERHUB_URL, JUPYTERHUB_API_TOKEN,
# JUPYTERHUB_CLIENT_ID, JUPYTERHUB_CLIENT_SECRET, JUPYTERHUB_STATE_DIR and
# PORTAL_PROVIDER_KEY_FILE (the provider's RS256 key, made here once) to services.env.
source "$(dirname "$0")/common.sh"

HUB_PORT="${PORTAL_HUB_PORT:-8091}"  # not make run's 8081: both may run on one machine
HUB_DIR="$STATE_DIR/hub"
HUB_URL="http://127.0.0.1:$HUB_PORT"
PIDFILE="$HUB_DIR/jupyterhub.pid"  # written by the hub itself (c.JupyterHub.pid_file)
CLIENT_ID=jupyterhub

hub_ready() { curl -fsS -o /dev/null "$HUB_URL/hub/health" 2>/dev/null; }

# secret NAME: a random value kept in $HUB_DIR/NAME (mode 600), made once.
secret() {
  [[ -s "$HUB_DIR/$1" ]] || (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$HUB_DIR/$1")
  cat "$HUB_DIR/$1"
}

case "$action" in
  start)
    mkdir -p "$HUB_DIR" && chmod 755 "$HUB_DIR"
    [[ -x "$VENV/bin/jupyterhub" ]] || die hub "$VENV/bin/jupyterhub missing: install requirements.txt into $VENV"
    command -v openssl >/dev/null || ensure_packages openssl || die hub "apt-get install openssl failed"
    bash "$REPO_ROOT/scripts/install-hub-proxy.sh" "$REPO_ROOT/.hub" \
      || die hub "configurable-http-proxy could not be installed (see $REPO_ROOT/.hub/npm.log)"
    KEY="$HUB_DIR/provider-key.pem"
    [[ -s "$KEY" ]] || (umask 077; openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
      -out "$KEY" 2>>"$LOG_DIR/hub.log") || die hub "could not make the provider key $KEY"
    chmod 644 "$KEY"  # read by the tests' portal, which may not run as root
    TOKEN="$(secret api-token)"; CLIENT_SECRET="$(secret client-secret)"
    if ! hub_ready; then
      (cd "$HUB_DIR" && JUPYTERHUB_URL="$HUB_URL" JUPYTERHUB_STATE_DIR="$HUB_DIR" \
        JUPYTERHUB_API_TOKEN="$TOKEN" JUPYTERHUB_CLIENT_ID="$CLIENT_ID" \
        JUPYTERHUB_CLIENT_SECRET="$CLIENT_SECRET" \
        JUPYTERHUB_PROXY_CMD="$REPO_ROOT/.hub/bin/configurable-http-proxy" \
        PORTAL_BASE_URL="${PORTAL_BASE_URL:-http://127.0.0.1:8000}" \
        setsid -f "$VENV/bin/jupyterhub" -f "$REPO_ROOT/launcher/notebooks/hub/jupyterhub_config.py" \
        >>"$LOG_DIR/hub.log" 2>&1 </dev/null &)
    fi
    wait_until 60 hub_ready || die hub "not answering on $HUB_URL (see $LOG_DIR/hub.log)"
    set_env_fact JUPYTERHUB_URL "$HUB_URL"
    set_env_fact JUPYTERHUB_API_TOKEN "$TOKEN"
    set_env_fact JUPYTERHUB_CLIENT_ID "$CLIENT_ID"
    set_env_fact JUPYTERHUB_CLIENT_SECRET "$CLIENT_SECRET"
    set_env_fact JUPYTERHUB_STATE_DIR "$HUB_DIR"
    set_env_fact PORTAL_PROVIDER_KEY_FILE "$KEY"
    say hub running "$HUB_URL" ;;
  status)
    if hub_ready; then say hub running "$HUB_URL"; else say hub stopped; exit 1; fi ;;
  stop)
    stop_pidfile "$PIDFILE" 30
    stop_pidfile "$HUB_DIR/proxy.pid" 10  # the proxy, if the hub left it
    say hub stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
