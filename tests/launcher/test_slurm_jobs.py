"""Jobs on the real Slurm through the backend: success and its usage, arrays, cancel, failure,
the GPU-minute cap, resubmission after a dropped connection, and inert user values."""

from __future__ import annotations

import datetime as dt
import os
import shlex
from pathlib import Path

import pytest

from launcher.backends.contract import BackendError
from launcher.slurm.client import SlurmClient
from launcher.slurm.records import JobSpec, JobState
from launcher.slurm.ssh import SSHConnection
from tests.launcher.slurm_members import account, member, other_member  # noqa: F401  (fixtures)
from tests.waiting import wait_for


def final_status(slurm: SlurmClient, job_id: str):
    return wait_for(
        lambda: (s := slurm.status([job_id])[job_id]).state.final and s,
        what=f"job {job_id} to finish",
    )


def test_a_job_runs_to_success_and_its_gpu_time_is_charged(
    slurm, account, member, make_bundle, unique
):
    since = dt.datetime.now() - dt.timedelta(minutes=1)
    bundle = make_bundle('echo "hello from $SLURM_JOB_ID on $CUDA_VISIBLE_DEVICES"; sleep 2')
    job = slurm.submit(
        JobSpec(
            token=unique("ok-"), account=account, bundle_dir=bundle, gpus=2, time_limit_minutes=2
        ),
        user=member,
    )

    status = final_status(slurm, job.job_id)

    assert status.state is JobState.SUCCEEDED and status.exit_code == 0
    assert f"hello from {job.job_id}" in slurm.tail(slurm.output_path(job))
    row = wait_for(
        lambda: next(
            (
                r
                for r in slurm.usage_since(account=account, since=since)
                if r.job_id == job.job_id and r.end
            ),
            None,
        ),
        what="sacct record",
    )
    assert row.gpus == 2 and row.elapsed_seconds >= 2
    assert row.gpu_seconds == row.elapsed_seconds * 2
    assert row.state == "COMPLETED" and row.step == "" and row.external_id == job.job_id


def test_a_job_array_runs_every_task_within_its_concurrency_limit(
    slurm, account, member, make_bundle, unique
):
    since = dt.datetime.now() - dt.timedelta(minutes=1)
    bundle = make_bundle('echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID"; sleep 2')
    job = slurm.submit(
        JobSpec(
            token=unique("arr-"),
            account=account,
            bundle_dir=bundle,
            gpus=1,
            time_limit_minutes=2,
            array_size=3,
            array_concurrency=2,
        ),
        user=member,
    )

    status = final_status(slurm, job.job_id)

    assert status.state is JobState.SUCCEEDED
    assert sorted(status.tasks) == [f"{job.job_id}_{k}" for k in range(3)]
    for k in range(3):
        assert f"task {k} of {job.job_id}" in slurm.tail(slurm.output_path(job, task=k))
    rows = wait_for(
        lambda: (
            len(
                rows := [
                    r
                    for r in slurm.usage_since(account=account, since=since)
                    if r.job_id.startswith(f"{job.job_id}_") and r.end
                ]
            )
            == 3
            and rows
        ),
        what="usage of all three tasks",
    )
    assert sorted(r.job_id for r in rows) == [f"{job.job_id}_{k}" for k in range(3)]
    # %2: the third task could only start once one of the first two had ended.
    last = max(rows, key=lambda r: r.start)
    assert any(r.end <= last.start for r in rows if r is not last)


def test_cancel_stops_a_running_job_and_is_idempotent(slurm, account, member, make_bundle, unique):
    job = slurm.submit(
        JobSpec(token=unique("cx-"), account=account, bundle_dir=make_bundle("sleep 120")),
        user=member,
    )
    wait_for(lambda: slurm.status([job.job_id])[job.job_id].state is JobState.RUNNING, what="start")

    slurm.cancel(job.job_id)

    assert final_status(slurm, job.job_id).state is JobState.CANCELLED
    slurm.cancel(job.job_id)  # again: no error


def test_a_failing_job_reports_failed_with_its_exit_code(
    slurm, account, member, make_bundle, unique
):
    job = slurm.submit(
        JobSpec(
            token=unique("bad-"), account=account, bundle_dir=make_bundle('echo "boom" >&2; exit 3')
        ),
        user=member,
    )

    status = final_status(slurm, job.job_id)

    assert status.state is JobState.FAILED and status.exit_code == 3
    assert "boom" in slurm.tail(slurm.output_path(job))


def test_a_job_that_would_exceed_the_cap_waits_until_a_top_up(slurm, member, make_bundle, unique):
    # With AccountingStorageEnforce=...,safe Slurm 22.05 accepts the job but never starts it
    # while GPUs x time limit exceed what is left of GrpTRESMins; raising the cap releases it.
    account = unique("cap")
    slurm.ensure_account(name=account, users=[member], gpu_minutes=10)
    try:
        job = slurm.submit(
            JobSpec(
                token=unique("cap-"),
                account=account,
                gpus=2,
                time_limit_minutes=6,
                bundle_dir=make_bundle("sleep 1"),
            ),
            user=member,
        )
        held = wait_for(
            lambda: (s := slurm.status([job.job_id])[job.job_id]).reason and s,
            what="a pending reason",
        )
        assert held.state is JobState.PENDING
        assert held.reason == "AssocGrpGRESMinutes"

        slurm.set_cap(name=account, gpu_minutes=12)

        assert final_status(slurm, job.job_id).state is JobState.SUCCEEDED
    finally:
        slurm.ssh.run(["scancel", f"--account={account}"])
        slurm.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={account}"])


class DropsAfterSbatch(SSHConnection):
    """Cuts the TCP connection right after the submit command went out, as a worker that
    crashed or a network that failed before the reply came back would."""

    def run(self, args, **kwargs):
        if "portal-submit" not in args:
            return super().run(args, **kwargs)
        chan = self._transport().open_session()
        chan.exec_command(shlex.join(args))
        self.close()
        raise BackendError("connection dropped before sbatch replied", permanent=False)


def jobs_named(slurm: SlurmClient, token: str) -> list[str]:
    out = slurm.ssh.run(["squeue", "-h", "-a", "-t", "all", f"--name={token}", "-o", "%i"]).stdout
    return out.split()


def test_resubmitting_after_a_dropped_connection_never_makes_a_second_job(
    slurm, services_env, account, member, make_bundle, unique
):
    spec = JobSpec(token=unique("drop-"), account=account, bundle_dir=make_bundle("sleep 5"))
    dropping = SlurmClient(DropsAfterSbatch(slurm.ssh.target), cluster=slurm.cluster)
    with pytest.raises(BackendError) as lost:
        dropping.submit(spec, user=member)
    assert not lost.value.permanent

    # A restarted worker (fresh connection) retries the same launch.
    retry = SlurmClient(SSHConnection(slurm.ssh.target), cluster=slurm.cluster).submit(
        spec, user=member
    )
    again = slurm.submit(spec, user=member)

    assert again.job_id == retry.job_id and again.already_submitted
    assert slurm.find_job_by_token(spec.token) == retry.job_id
    assert jobs_named(slurm, spec.token) == [retry.job_id]


def test_shell_metacharacters_in_user_values_stay_inert(
    slurm, account, member, make_bundle, unique, tmp_path
):
    marker = f"/tmp/portal-pwned-{unique('m')}"
    evil = [
        f"$(touch {marker})",
        f"`touch {marker}`",
        f"; touch {marker}",
        f"' \" | & > {marker} *",
    ]
    bundle = make_bundle('for a in "$@"; do printf "<%s>\\n" "$a"; done')
    job = slurm.submit(
        JobSpec(
            token=unique("meta-"),
            account=account,
            bundle_dir=bundle,
            args=tuple(evil),
            comment=f"note $(touch {marker}); `id`",
        ),
        user=member,
    )

    assert final_status(slurm, job.job_id).state is JobState.SUCCEEDED
    assert slurm.tail(slurm.output_path(job)).splitlines() == [f"<{e}>" for e in evil]
    comment = slurm.ssh.run(
        ["squeue", "-h", "-t", "all", "-j", job.job_id, "-o", "%k"]
    ).stdout.strip()
    assert comment == f"note $(touch {marker}); `id`"
    assert not os.path.exists(marker)
    assert not Path(slurm.ssh.run(["bash", "-c", 'echo "$HOME"']).stdout.strip(), "*").exists()


def test_invalid_job_values_are_refused_before_anything_runs(slurm, account, member, make_bundle):
    bundle = make_bundle("true")
    for bad in (
        dict(token="x; rm -rf ~"),
        dict(script="../../etc/passwd"),
        dict(gpus=-1),
        dict(account="a,b"),
        dict(partition="gpu --wrap=id"),
    ):
        spec = JobSpec(
            **{"token": "tok-valid-123", "account": account, "bundle_dir": bundle, **bad}
        )
        with pytest.raises(BackendError) as refused:
            slurm.submit(spec, user=member)
        assert refused.value.permanent
    for login in ("-u", "a b", "$(id)"):
        with pytest.raises(BackendError) as refused:
            slurm.submit(
                JobSpec(token="tok-valid-123", account=account, bundle_dir=bundle), user=login
            )
        assert refused.value.permanent
    assert slurm.find_job_by_token("tok-valid-123") is None


def test_a_job_the_scheduler_does_not_know_is_unknown_not_an_error(slurm):
    assert {s.state for s in slurm.status(["999999", "999998_1"]).values()} == {JobState.UNKNOWN}
    slurm.cancel("999999")  # nothing to cancel is not an error


def test_the_checkpoint_signal_never_comes_before_half_the_time_limit(slurm, account, make_bundle):
    # With the 120 s default lead a 2-minute job was sent USR1 at Slurm's first time-limit check
    # (every ~30 s), so a short job could die of it (FAILED 0:10) before doing its work.
    bundle = make_bundle("true")
    short, _ = slurm._sbatch_args(
        JobSpec(token="tok-short-123", account=account, bundle_dir=bundle, time_limit_minutes=2),
        "/w",
    )
    long, _ = slurm._sbatch_args(
        JobSpec(token="tok-long-1234", account=account, bundle_dir=bundle, time_limit_minutes=60),
        "/w",
    )
    none, _ = slurm._sbatch_args(
        JobSpec(
            token="tok-none-1234", account=account, bundle_dir=bundle, checkpoint_signal_seconds=0
        ),
        "/w",
    )
    assert "--signal=B:USR1@60" in short and "--signal=B:USR1@120" in long
    assert not any(a.startswith("--signal") for a in none)
