"""The SSH layer against the real sshd: pinned host keys, reuse, retries, outages, files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from launcher.backends.contract import BackendError
from launcher.slurm.client import SlurmClient
from launcher.slurm.records import JobSpec, JobState
from launcher.slurm.ssh import RemoteFileNotFound, SSHConnection
from tests.waiting import wait_for

from .conftest import free_port, make_target
from .slurm_members import account, member, other_member  # noqa: F401  (fixtures)


def other_host_key(tmp_path: Path) -> str:
    """The public half of a freshly made key: a key the server does not have."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True
    )
    return " ".join((tmp_path / "k.pub").read_text().split()[:2])


def test_a_changed_host_key_is_refused_without_retrying(services_env, tmp_path):
    sleeps: list[float] = []
    target = make_target(
        services_env, host_key=f"[127.0.0.1]:{services_env['SSH_PORT']} {other_host_key(tmp_path)}"
    )
    conn = SSHConnection(target, sleep=sleeps.append)

    with pytest.raises(BackendError) as refused:
        conn.run(["true"])

    assert refused.value.permanent
    assert "CHANGED" in refused.value.message
    assert sleeps == [] and conn.connects == 0


def test_an_unknown_host_is_refused(services_env, tmp_path):
    # The pinned key belongs to another host name: the server's key is not trusted on first use.
    pinned = Path(services_env["SSH_HOST_KEY_PUB"]).read_text().split()[:2]
    target = make_target(services_env, host_key=f"login.other.example {' '.join(pinned)}")

    with pytest.raises(BackendError) as refused:
        SSHConnection(target).run(["true"])

    assert refused.value.permanent
    assert "not the pinned key" in refused.value.message


def test_a_bare_pinned_key_is_accepted_for_the_target(services_env):
    pinned = " ".join(Path(services_env["SSH_HOST_KEY_PUB"]).read_text().split()[:2])
    conn = SSHConnection(make_target(services_env, host_key=pinned))

    assert conn.run(["echo", "ok"]).stdout == "ok\n"


def test_one_connection_is_reused_across_commands(services_env):
    conn = SSHConnection(make_target(services_env))

    results = [conn.run(["echo", str(i)]).stdout for i in range(5)]

    assert results == [f"{i}\n" for i in range(5)]
    assert conn.connects == 1


def test_connection_refused_is_transient_and_retried_with_backoff(services_env):
    sleeps: list[float] = []
    target = make_target(services_env, port=free_port(), retries=3, backoff_seconds=0.5)

    with pytest.raises(BackendError) as failed:
        SSHConnection(target, sleep=sleeps.append).run(["true"])

    assert not failed.value.permanent
    assert sleeps == [0.5, 1.0, 2.0]


def test_commands_must_be_argument_lists(services_env):
    conn = SSHConnection(make_target(services_env))
    with pytest.raises(TypeError):
        conn.run("echo hi; id")  # type: ignore[arg-type]


def test_a_value_with_shell_syntax_reaches_the_command_as_one_argument(services_env):
    conn = SSHConnection(make_target(services_env))
    value = "a b; echo INJECTED $(id) `id` | cat > x & \n' \""

    out = conn.run(["printf", "%s", value]).stdout

    assert out == value


def test_files_are_uploaded_and_read_back_from_the_end(services_env, tmp_path, unique):
    bundle = tmp_path / "bundle"
    (bundle / "sub dir").mkdir(parents=True)
    (bundle / "sub dir" / "log.txt").write_text("".join(f"line {i}\n" for i in range(1000)))
    conn = SSHConnection(make_target(services_env))

    remote = conn.upload_dir(bundle, f"portal-test/{unique('up')}")

    assert remote.startswith("/")
    assert conn.read_file(f"{remote}/sub dir/log.txt", max_bytes=9) == b"line 999\n"
    with pytest.raises(RemoteFileNotFound):
        conn.read_file(f"{remote}/missing.txt")
    conn.run(["rm", "-rf", remote])


def test_polling_survives_sshd_going_away_and_coming_back(
    services_env, throwaway_sshd, account, member, make_bundle, unique
):
    pinned = " ".join(Path(services_env["SSH_HOST_KEY_PUB"]).read_text().split()[:2])
    target = make_target(
        services_env,
        port=throwaway_sshd.port,
        host_key=pinned,
        retries=1,
        backoff_seconds=0.1,
        connect_timeout=2.0,
    )
    backend = SlurmClient(SSHConnection(target), cluster=services_env["SLURM_CLUSTER"])
    job = backend.submit(
        JobSpec(
            token=unique("outage-"),
            account=account,
            bundle_dir=make_bundle("sleep 4; echo survived"),
        ),
        user=member,
    )
    wait_for(
        lambda: backend.status([job.job_id])[job.job_id].state is JobState.RUNNING, what="start"
    )

    throwaway_sshd.stop()
    with pytest.raises(BackendError) as down:
        backend.status([job.job_id])
    assert not down.value.permanent

    throwaway_sshd.start()
    final = wait_for(
        lambda: (s := backend.status([job.job_id])[job.job_id]).state.final and s,
        what="the job, polled after sshd came back",
    )
    assert final.state is JobState.SUCCEEDED
    assert "survived" in backend.tail(backend.output_path(job))
    assert backend.find_job_by_token(job.token) == job.job_id
