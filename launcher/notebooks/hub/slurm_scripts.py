"""The bash that SlurmNotebookSpawner (slurm.py) runs on the cluster: fixed text, in which no
value is ever spliced; values arrive as positional arguments ("$1"...) of an argument list, or
through the session's env.sh of shlex-quoted exports.

Who runs what: PREPARE_SCRIPT and LOOK_SCRIPT run as the portal's service account and touch
only its own folders (the session's fresh run_dir; the fallback workdir beside the jobs); the
batch script and DATASETS_SCRIPT run in the job, as the member, and do everything inside the
member's workdir (a member can plant symlinks there: the service account never works in it).
What the job writes is read as the member (`sudo -n -u <login> tail`)."""

# The batch script. Fixed text: every value arrives through env.sh (shlex-quoted) or as "$1".
BATCH_SCRIPT = r"""#!/bin/bash
# A portal notebook session (launcher/notebooks/hub/slurm.py): nothing here is user-given.
# With PORTAL_NB_READONLY=1 it runs itself again in a user+mount namespace where it is root,
# bind-mounts each dataset read-only on workdir/datasets/<name>, then drops back to its own
# uid in a nested user namespace (which can no longer remount them) to run the server.
set -eu
run_dir=$1; stage=${2:-start}
. "$run_dir/env.sh"
umask 077
if [ "$stage" = start ]; then
  # As the member: the workdir and its datasets/<name> (mount points, or links).
  pairs=()
  for i in "${!portal_nb_ds_names[@]}"; do
    pairs+=("${portal_nb_ds_names[$i]}" "${portal_nb_ds_paths[$i]}")
  done
  mode=link; if [ "$PORTAL_NB_READONLY" = 1 ]; then mode=ro; fi
  bash "$run_dir/datasets.sh" "$PORTAL_NB_WORKDIR" "$mode" "${pairs[@]}"
fi
if [ "$PORTAL_NB_READONLY" = 1 ] && [ "$stage" = start ]; then
  export PORTAL_NB_UID=$(id -u) PORTAL_NB_GID=$(id -g)
  exec unshare --user --map-root-user --mount -- bash "$run_dir/notebook.sh" "$run_dir" mount
fi
if [ "$stage" = mount ]; then
  for i in "${!portal_nb_ds_names[@]}"; do
    target="$PORTAL_NB_WORKDIR/datasets/${portal_nb_ds_names[$i]}"
    mount --bind -- "${portal_nb_ds_paths[$i]}" "$target"
    mount -o remount,bind,ro -- "$target"
  done
  exec unshare --user --map-user="$PORTAL_NB_UID" --map-group="$PORTAL_NB_GID" -- \
    bash "$run_dir/notebook.sh" "$run_dir" run
fi
port=$("$PORTAL_NB_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
printf '%s %s %s\n' "$(hostname)" "$port" "${CUDA_VISIBLE_DEVICES:-}" > "$run_dir/endpoint-$SLURM_JOB_ID.part"
mv -f -- "$run_dir/endpoint-$SLURM_JOB_ID.part" "$run_dir/endpoint-$SLURM_JOB_ID"
cd -- "$PORTAL_NB_WORKDIR"
exec "$PORTAL_NB_PYTHON" -m jupyterhub.singleuser --ip=0.0.0.0 --port="$port" \
  --ServerApp.port_retries=0 --ServerApp.root_dir="$PORTAL_NB_WORKDIR" "${portal_nb_args[@]}"
"""

# In the job, as the member: makes workdir and workdir/datasets/<name>: a symlink to the
# dataset, or with "ro" an empty folder the job mounts it on; a file or non-empty folder of the
# user's in the way is never deleted (exit 3, said in the job's log). Arguments: workdir ro|link
# [name path]...
DATASETS_SCRIPT = r"""
set -eu
wd=$1; mode=$2; shift 2
# The member's folder's parents (project storage's notebooks/) are the project's: shared with
# its group, whoever makes them first.
(umask 0007; mkdir -p -- "$(dirname -- "$wd")")
mkdir -p -- "$wd/datasets"
find "$wd/datasets" -mindepth 1 -maxdepth 1 \( -type l -o -type d -empty \) -delete
while [ $# -ge 2 ]; do
  t="$wd/datasets/$1"
  if [ -e "$t" ] && [ ! -L "$t" ] && ! { [ -d "$t" ] && [ -z "$(ls -A -- "$t")" ]; }; then
    echo "portal: datasets/$1 is in the way: a file or folder of yours, kept; move it" >&2; exit 3
  fi
  if [ "$mode" = ro ]; then mkdir -p -- "$t"; else ln -sfn -- "$2" "$t"; fi
  shift 2
done
"""

# As the service account: makes the session's run_dir (fresh, its own) and shares it with the
# member alone (mode 700 + ACL; the files it writes there inherit the member's read access),
# keeps the jobs folder traversable (not listable), and with a fallback workdir beside the jobs
# ("" when the workdir is in project storage, which the job makes as the member) makes that and
# shares it likewise. Exit 78 when the file system refuses ACLs. Arguments: run_dir jobs_dir
# login workdir|""
PREPARE_SCRIPT = r"""
set -eu
run=$1; jobs=$2; user=$3; own_wd=$4
me=$(id -un)
acl="u:$user:rwx,d:u:$user:rwx,d:u:$me:rwx,d:g::-,d:o::-"
mkdir -p -- "$run"
chmod 0711 -- "$jobs" "$(dirname -- "$run")"
chmod 0700 -- "$run"
setfacl -m "$acl" -- "$run" || exit 78
if [ -n "$own_wd" ]; then
  mkdir -p -- "$own_wd"
  chmod 0711 -- "$(dirname -- "$own_wd")"
  chmod 0700 -- "$own_wd"
  setfacl -m "$acl" -- "$own_wd" || exit 78
fi
"""

# One round trip per look while starting: the job's state, reason and node, then (once it
# runs) the endpoint file, read as the member (arguments: job id, endpoint path, login).
LOOK_SCRIPT = r"""
st=$(squeue -h -a -t all -j "$1" -o '%T|%r|%N' 2>/dev/null)
printf '%s\n' "$st"
echo '--'
case $st in
  RUNNING*) timeout -k 2 10 sudo -n -u "$3" "$(command -v tail)" -c 512 -- "$2" 2>/dev/null ;;
esac
true
"""
