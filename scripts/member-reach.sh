#!/usr/bin/env bash
# Members' processes (jobs, sweep cells, notebooks on the `local` backend) run under their own
# uids (docs/security.md), so they must be able to pass through the folders above the portal's
# Python and checkout. On a machine where Python lives under /root (pyenv) that folder is 0700:
# this adds o+x (pass through, not list) to each closed folder above them, and says so.
#   bash scripts/member-reach.sh PATH...
set -euo pipefail
[[ "$(id -u)" == 0 ]] || exit 0
for target in "$@"; do
  dir="$(readlink -f "$target")"
  [[ -d "$dir" ]] || dir="$(dirname "$dir")"
  while [[ "$dir" != / ]]; do
    if [[ -z "$(find "$dir" -maxdepth 0 -perm -o+x)" ]]; then
      chmod o+x "$dir"
      echo "member-reach: $dir now lets other users pass through (o+x), so members' processes reach $target"
    fi
    dir="$(dirname "$dir")"
  done
done
