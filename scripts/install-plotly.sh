#!/usr/bin/env bash
# Installs the plotly.js the pages draw their charts with: the official partial bundle
# `plotly.js-basic-dist-min` (the trace types scatter, bar and pie: every chart of the portal is
# scatter or bar, tests/portal/test_production_serving.py), 1.2 MB where the full plotly.js is
# 4.8 MB. From npm, pinned by version and by the file's sha256, into DIR/plotly/plotly.min.js,
# which settings serve as static/vendor/plotly/plotly.min.js (docs/operations.md).
# Needs npm (scripts/install-hub-proxy.sh installs it). Idempotent: a second run does nothing.
#   bash scripts/install-plotly.sh [DIR]        (default: .vendor in the repository)
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$REPO_ROOT/.vendor}"
PACKAGE=plotly.js-basic-dist-min
VERSION=4.1.1
FILE=plotly-basic.min.js
SHA256=99784e3abfb07b142a15e521a439e6d9addceadb3f79553fd24c72774f0649ba
TARGET="$DIR/plotly/plotly.min.js"

sum() { sha256sum "$1" | cut -d' ' -f1; }
[[ -f "$TARGET" && "$(sum "$TARGET")" == "$SHA256" ]] && exit 0

command -v npm >/dev/null || { echo "install-plotly: npm is missing (apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$DIR/plotly"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# `npm pack` fetches the package's tarball and checks it against the registry's integrity hash.
npm pack --silent --pack-destination "$work" "$PACKAGE@$VERSION" >"$work/npm.log" 2>&1 \
  || { cat "$work/npm.log" >&2; echo "install-plotly: npm pack $PACKAGE@$VERSION failed" >&2; exit 1; }
tar -xzf "$work/$PACKAGE-$VERSION.tgz" -C "$work" "package/$FILE"
got="$(sum "$work/package/$FILE")"
[[ "$got" == "$SHA256" ]] \
  || { echo "install-plotly: $PACKAGE@$VERSION/$FILE has sha256 $got, expected $SHA256" >&2; exit 1; }
# Dated now, not 1985 as npm dates every file: collectstatic copies a file only when its source
# is newer than the copy it has, so a new version must be newer than the old one's copy.
mv "$work/package/$FILE" "$TARGET.tmp" && chmod 644 "$TARGET.tmp" && touch "$TARGET.tmp"
mv "$TARGET.tmp" "$TARGET"
