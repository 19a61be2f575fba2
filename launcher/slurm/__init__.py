"""The `slurm` backend: Slurm over SSH (paramiko, pinned host keys).

backend.py  SlurmBackend: accounts, sbatch, squeue/sacct, scancel (no Django)
ssh.py      the SSH connection with retries and a pinned host key (no Django)
parse.py    squeue/sacct output parsing (no Django)
connection.py  a facility's settings -> a cached SlurmBackend
accounts.py    accounts for allocations (provision, block/unblock, caps)
runner.py      SlurmRunner, the registry entry (registered by LauncherConfig.ready())
"""
