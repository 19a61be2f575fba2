#!/usr/bin/env bash
# The OpenID Connect provider the sign-in tests use: the certified `oidc-provider` npm package
# (pinned in oidc/package.json, installed into oidc/node_modules, git-ignored), run by node on
# 127.0.0.1:$OIDC_PORT with the accounts of oidc/accounts.json (copied to $OIDC_DIR, where a test
# may edit someone's groups). Writes OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET and
# OIDC_ACCOUNTS_FILE to services.env. oidc-provider 9 needs Node 20.19 or later: the system's
# node when it is recent enough (apt-get install nodejs npm when missing), else (Debian 12's own
# nodejs is 18) the official Node 22 build that npm's registry carries as node-linux-<arch>, into
# $OIDC_DIR/node.
source "$(dirname "$0")/common.sh"

OIDC_PORT="${PORTAL_OIDC_PORT:-9090}"
OIDC_DIR="$STATE_DIR/oidc"
SRC="$REPO_ROOT/scripts/services/oidc"
PIDFILE="$OIDC_DIR/provider.pid"
ISSUER="http://127.0.0.1:$OIDC_PORT"
CLIENT_ID=portal

oidc_ready() { curl -fsS -o /dev/null "$ISSUER/.well-known/openid-configuration" 2>/dev/null; }

NODE_BUILD_VERSION=22.23.3  # the LTS line oidc-provider 9 asks for
NODE=node

# node_recent NODE: NODE runs and is 20.19 or later.
node_recent() {
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=19)?0:1)' 2>/dev/null
}

pick_node() {
  command -v node >/dev/null && command -v npm >/dev/null \
    || ensure_packages nodejs npm || die oidc "apt-get install nodejs npm failed (see $LOG_DIR/apt.log)"
  node_recent node && return 0
  local arch; case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
  NODE="$OIDC_DIR/node/node_modules/node-linux-$arch/bin/node"
  if ! node_recent "$NODE"; then
    npm install --prefix "$OIDC_DIR/node" --no-audit --no-fund "node-linux-$arch@$NODE_BUILD_VERSION" \
      >>"$LOG_DIR/oidc-npm.log" 2>&1 || die oidc "installing Node $NODE_BUILD_VERSION failed (see $LOG_DIR/oidc-npm.log)"
  fi
  node_recent "$NODE" || die oidc "oidc-provider 9 needs Node 20.19 or later; $NODE is not"
}

install_provider() {
  pick_node
  # npm ci only when the lock file changed since the last install.
  if ! cmp -s "$SRC/package-lock.json" "$SRC/node_modules/.package-lock.json.installed" 2>/dev/null; then
    (cd "$SRC" && npm ci --omit=dev --no-audit --no-fund >>"$LOG_DIR/oidc-npm.log" 2>&1) \
      || die oidc "npm ci failed (see $LOG_DIR/oidc-npm.log)"
    cp "$SRC/package-lock.json" "$SRC/node_modules/.package-lock.json.installed"
  fi
}

case "$action" in
  start)
    mkdir -p "$OIDC_DIR" && chmod 755 "$OIDC_DIR"
    install_provider
    [[ -s "$OIDC_DIR/client-secret" ]] || (umask 077; head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$OIDC_DIR/client-secret")
    # The tests' starting point; a test that changes someone's groups puts them back.
    write_if_changed "$OIDC_DIR/accounts.json" <"$SRC/accounts.json" || true
    chmod 666 "$OIDC_DIR/accounts.json"
    if ! oidc_ready; then
      OIDC_PORT="$OIDC_PORT" OIDC_STATE_DIR="$OIDC_DIR" OIDC_ACCOUNTS_FILE="$OIDC_DIR/accounts.json" \
        OIDC_CLIENT_ID="$CLIENT_ID" OIDC_CLIENT_SECRET="$(cat "$OIDC_DIR/client-secret")" \
        setsid "$NODE" "$SRC/provider.mjs" >>"$LOG_DIR/oidc.log" 2>&1 </dev/null &
      echo $! >"$PIDFILE"
    fi
    wait_until 30 oidc_ready || die oidc "not answering on $ISSUER (see $LOG_DIR/oidc.log)"
    set_env_fact OIDC_ISSUER "$ISSUER"
    set_env_fact OIDC_CLIENT_ID "$CLIENT_ID"
    set_env_fact OIDC_CLIENT_SECRET "$(cat "$OIDC_DIR/client-secret")"
    set_env_fact OIDC_ACCOUNTS_FILE "$OIDC_DIR/accounts.json"
    say oidc running "$ISSUER" ;;
  status)
    if oidc_ready; then say oidc running "$ISSUER"; else say oidc stopped; exit 1; fi ;;
  stop)
    stop_pidfile "$PIDFILE" 10; say oidc stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
