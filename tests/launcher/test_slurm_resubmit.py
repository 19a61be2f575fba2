"""A submission is never run twice, and a retry never touches a submitted job's folder: the
token is looked up on the cluster before anything is uploaded, and each attempt stages into a
fresh folder of its own (removed when the token turns out to be taken)."""

from __future__ import annotations

from launcher.slurm.records import JobSpec, JobState
from tests.launcher.slurm_members import account, member, other_member  # noqa: F401  (fixtures)
from tests.launcher.test_slurm_jobs import jobs_named
from tests.waiting import wait_for

BODY = "cat payload.txt; sleep 30"


def staged_folders(slurm, token: str) -> list[str]:
    out = slurm.ssh.run(
        ["bash", "-c", 'ls -d "$1"-* 2>/dev/null; true', "ls", f"{slurm.jobs_dir}/{token}"]
    ).stdout
    return [path.rsplit("/", 1)[1] for path in out.split()]


def test_a_retry_while_the_job_runs_finds_it_and_leaves_its_folder_alone(
    slurm, account, member, make_bundle, unique
):
    first_bundle = make_bundle(BODY)
    (first_bundle / "payload.txt").write_text("first\n")
    spec = JobSpec(
        token=unique("rerun-"), account=account, bundle_dir=first_bundle, time_limit_minutes=2
    )
    first = slurm.submit(spec, user=member)
    wait_for(
        lambda: slurm.status([first.job_id])[first.job_id].state is JobState.RUNNING,
        what="the first job to run",
    )

    second_bundle = make_bundle(BODY)
    (second_bundle / "payload.txt").write_text("second\n")
    again = slurm.submit(
        JobSpec(token=spec.token, account=account, bundle_dir=second_bundle, time_limit_minutes=2),
        user=member,
    )

    assert again.already_submitted and again.job_id == first.job_id
    assert again.workdir == first.workdir and again.output_pattern == first.output_pattern
    assert slurm.read_file(f"{first.workdir}/payload.txt") == b"first\n"
    assert staged_folders(slurm, spec.token) == [first.workdir.rsplit("/", 1)[1]]
    assert jobs_named(slurm, spec.token) == [first.job_id]
    slurm.cancel(first.job_id)
    slurm.ssh.run(["rm", "-rf", "--", first.workdir])
