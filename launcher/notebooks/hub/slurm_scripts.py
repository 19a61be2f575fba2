"""The bash that SlurmNotebookSpawner (slurm.py) runs on the cluster: fixed text, in which no
value is ever spliced; values arrive as positional arguments ("$1"...) of an argument list, or
through the session's env.sh of shlex-quoted exports."""

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

# Makes the folders and workdir/datasets/<name>: a symlink to the dataset, or with "ro" an
# empty folder the job mounts it on; a file or non-empty folder of the user's in the way is
# never deleted (exit 3). Arguments: run_dir workdir ro|link [name path]...
PREPARE_SCRIPT = r"""
set -eu
run=$1; wd=$2; mode=$3; shift 3
mkdir -p -- "$run" "$wd/datasets"
chmod 700 -- "$run"
find "$wd/datasets" -mindepth 1 -maxdepth 1 \( -type l -o -type d -empty \) -delete
while [ $# -ge 2 ]; do
  t="$wd/datasets/$1"
  if [ -e "$t" ] && [ ! -L "$t" ] && ! { [ -d "$t" ] && [ -z "$(ls -A -- "$t")" ]; }; then
    echo "datasets/$1 is in the way: a file or folder of the user's, kept; move it" >&2; exit 3
  fi
  if [ "$mode" = ro ]; then mkdir -p -- "$t"; else ln -sfn -- "$2" "$t"; fi
  shift 2
done
"""

# One round trip per look while starting: the job's state, reason and node, then the endpoint.
LOOK_SCRIPT = r"""
squeue -h -a -t all -j "$1" -o '%T|%r|%N' 2>/dev/null
echo '--'
cat -- "$2" 2>/dev/null
true
"""
