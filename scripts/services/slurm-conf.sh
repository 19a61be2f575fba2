#!/usr/bin/env bash
# Prints one Slurm config file: slurm-conf.sh slurm.conf|gres.conf|slurmdbd.conf NODE
source "$(dirname "$0")/common.sh" >/dev/null
file="$1"; node="$2"
SLURM_DIR="$STATE_DIR/slurm"

case "$file" in
slurm.conf) cat <<CONF
# Written by scripts/services/slurm.sh; edits are overwritten.
ClusterName=$SLURM_CLUSTER
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_DIR/ctld
SlurmdSpoolDir=$SLURM_DIR/d
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# No cgroups on these machines.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# The node claims more CPUs than the machine has so GPUs, not cores, limit concurrency.
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
# A single small node: scheduling often is cheap and keeps tests fast (jobs start in ~0.1-2 s).
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000,sched_interval=2,bf_interval=5
# GrpTRESMins is only enforced with priority/multifactor; usage never decays, is never reset,
# and is recomputed every minute (the smallest PriorityCalcPeriod).
PriorityType=priority/multifactor
PriorityDecayHalfLife=0
PriorityUsageResetPeriod=NONE
PriorityCalcPeriod=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
# safe: a job starts only if its whole time limit x GPUs fits in what is left of GrpTRESMins.
# Without it (limits alone) 22.05 starts the job, lets usage pass the cap, and kills the job
# (state TIMEOUT) at the next usage recalculation: an overrun of minutes x GPUs.
AccountingStorageEnforce=associations,limits,safe
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
# Finished jobs stay visible to squeue for 5 min, covering sacct's lag.
MinJobAge=300
KillWait=2
InactiveLimit=0
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 Gres=gpu:2 State=UNKNOWN
PartitionName=$SLURM_PARTITION Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
;;
gres.conf) cat <<CONF
# Two fake GPUs: character devices (copies of /dev/null), so slurmd counts them.
AutoDetect=off
NodeName=$node Name=gpu File=$SLURM_DIR/dev/gpu[0-1]
CONF
;;
slurmdbd.conf) cat <<CONF
# Written by scripts/services/slurm.sh; edits are overwritten.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
PidFile=$SLURM_DIR/slurmdbd.pid
LogFile=$LOG_DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$(cat "$STATE_DIR/slurmdb.password")
StorageLoc=slurm_acct_db
CONF
;;
*) echo "unknown file $file" >&2; exit 2 ;;
esac
