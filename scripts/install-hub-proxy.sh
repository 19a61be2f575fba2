#!/usr/bin/env bash
# Installs configurable-http-proxy (JupyterHub's proxy, from npm) into an ignored folder and
# writes DIR/bin/configurable-http-proxy, a wrapper that runs it with a Node recent enough:
# CHP 5.3 needs Node 20 or later; the system's node when it is (apt-get install nodejs npm when
# missing and running as root), else the official Node 22 build that npm's registry carries as
# node-linux-<arch> (Debian 12's own nodejs is 18), into DIR/node. Idempotent: a second run with
# the same versions does nothing.
#   bash scripts/install-hub-proxy.sh [DIR]        (default: .hub in the repository)
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$REPO_ROOT/.hub}"
CHP_VERSION=5.3.0
NODE_BUILD_VERSION=22.23.3
mkdir -p "$DIR/bin"
LOG="$DIR/npm.log"

node_recent() {
  "$1" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null
}

if ! command -v npm >/dev/null; then
  [[ "$(id -u)" == 0 ]] || { echo "install-hub-proxy: npm is missing (apt-get install nodejs npm)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >>"$LOG" 2>&1 \
    || { apt-get update -q >>"$LOG" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >>"$LOG" 2>&1; }
fi

NODE="$(command -v node || true)"
if [[ -z "$NODE" ]] || ! node_recent "$NODE"; then
  case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
  NODE="$DIR/node/node_modules/node-linux-$arch/bin/node"
  node_recent "$NODE" || npm install --prefix "$DIR/node" --no-audit --no-fund \
    "node-linux-$arch@$NODE_BUILD_VERSION" >>"$LOG" 2>&1 \
    || { echo "install-hub-proxy: installing Node $NODE_BUILD_VERSION failed (see $LOG)" >&2; exit 1; }
fi

CHP_JS="$DIR/node_modules/configurable-http-proxy/bin/configurable-http-proxy"
installed="$("$NODE" -p 'require(process.argv[1]).version' \
  "$DIR/node_modules/configurable-http-proxy/package.json" 2>/dev/null || true)"
if [[ "$installed" != "$CHP_VERSION" ]]; then
  npm install --prefix "$DIR" --no-audit --no-fund --omit=dev "configurable-http-proxy@$CHP_VERSION" \
    >>"$LOG" 2>&1 || { echo "install-hub-proxy: npm install failed (see $LOG)" >&2; exit 1; }
fi

wrapper="$DIR/bin/configurable-http-proxy"
content="#!/bin/sh
exec \"$NODE\" \"$CHP_JS\" \"\$@\""
[[ -f "$wrapper" && "$(cat "$wrapper")" == "$content" ]] || { printf '%s\n' "$content" >"$wrapper"; chmod 755 "$wrapper"; }
