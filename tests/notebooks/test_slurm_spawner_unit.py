"""The Slurm notebook pieces that need no cluster: what the spawner accepts from user_options,
the env file it writes (quoted, never spliced), the charge from sacct rows, and the account's
usage ingestion leaving notebook jobs to their sessions."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest

from launcher.notebooks.hub.slurm import SessionError, env_script, session_options
from launcher.notebooks.hub.slurm_scripts import DATASETS_SCRIPT
from launcher.slurm.client import NOTEBOOK_JOB_PREFIX
from launcher.slurm.notebooks import usage_from_jobs
from launcher.slurm.parse import NamedJob, parse_sacct_usage, without_jobs_named

OPTIONS = {
    "session": 7,
    "backend": "slurm",
    "gpus": 1,
    "hours": 0.5,
    "backend_options": {
        "ssh": {
            "host": "login",
            "port": 22,
            "user": "portal",
            "key_path": "/k",
            "host_key": "ssh-ed25519 AAAA",
        },
        "cluster": "c",
        "account": "acct",
        "partition": "gpu",
        "login": "ada",
        "workdir": "/store/P/notebooks/ada",
        "run_dir": "portal-jobs/notebooks/nb-7",
        "datasets": {"ct": "/store/P/ct/v1"},
        "python": "/usr/bin/python3",
        "env": {},
    },
}


def with_backend(**changes):
    return {**OPTIONS, "backend_options": {**OPTIONS["backend_options"], **changes}}


def test_valid_options_give_whole_minutes_of_wall_time():
    options = session_options(OPTIONS)
    assert (options.minutes, options.account, options.gpus, options.readonly) == (
        30,
        "acct",
        1,
        True,
    )
    assert session_options({**OPTIONS, "hours": 1 / 60}).minutes == 1


@pytest.mark.parametrize(
    "options, words",
    [
        ({**OPTIONS, "hours": 0}, "hours"),
        ({**OPTIONS, "gpus": -1}, "gpus"),
        ({**OPTIONS, "gpus": True}, "gpus"),
        (with_backend(account="a b"), "account"),
        (with_backend(account="-x"), "account"),
        (with_backend(workdir="/store/../etc"), "workdir"),
        (with_backend(workdir="/store/$(id)"), "workdir"),
        (with_backend(datasets={"../x": "/store/P/ct"}), "dataset name"),
        (with_backend(datasets={"ct": "/store/P/ct; rm -rf ~"}), "dataset ct"),
        (with_backend(env={"A=B": "x"}), "env"),
        (with_backend(cluster=None), "cluster"),
        (with_backend(login=""), "login"),
        (with_backend(login=None), "login"),
        (with_backend(login="portal"), "service account"),
        (with_backend(login="a;b"), "login"),
        (with_backend(jobs_dir="../x"), "jobs_dir"),
    ],
)
def test_options_the_portal_never_sends_are_refused(options, words):
    with pytest.raises(SessionError, match=words):
        session_options(options)


def test_the_env_file_carries_any_value_as_data_never_as_shell(tmp_path):
    hostile = "x'; touch " + str(tmp_path / "pwned") + "; echo '$(id) `id` \n \\"
    script = env_script({"JUPYTERHUB_API_TOKEN": hostile}, ["--a b", "$(id)"], {"ct": "/p q"})
    out = subprocess.run(
        [
            "bash",
            "-c",
            script + 'printf "%s|" "$JUPYTERHUB_API_TOKEN" "${portal_nb_args[@]}" '
            '"${portal_nb_ds_names[@]}" "${portal_nb_ds_paths[@]}"',
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == f"{hostile}|--a b|$(id)|ct|/p q|"
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(SessionError):
        env_script({"BAD-NAME": "x"}, [], {})


def job(job_id, state, elapsed, gpus, start, end, reason=""):
    t = dt.datetime(2026, 11, 26, 12, 0)
    return NamedJob(
        job_id=job_id,
        name=f"{NOTEBOOK_JOB_PREFIX}7-abcdef12",
        state=state,
        reason=reason,
        elapsed_seconds=elapsed,
        gpus=gpus,
        start=t + dt.timedelta(seconds=start) if start is not None else None,
        end=t + dt.timedelta(seconds=end) if end is not None else None,
    )


def test_usage_is_elapsed_times_gpus_summed_over_the_sessions_jobs():
    usage = usage_from_jobs([job("41", "FAILED", 3, 2, 0, 3), job("42", "TIMEOUT", 60, 2, 10, 70)])
    assert usage is not None and usage.ended is not None
    assert (usage.gpu_seconds, usage.wall_seconds, usage.external_id, usage.reason) == (
        126,
        63,
        "41,42",
        "time limit",
    )


def test_a_waiting_job_has_no_record_and_a_job_cancelled_while_waiting_charges_nothing():
    assert usage_from_jobs([]) is None
    assert usage_from_jobs([job("5", "PENDING", 0, 0, None, None, "Resources")]) is None
    usage = usage_from_jobs([job("5", "CANCELLED", 0, 0, None, 30)])
    assert usage is not None and (usage.gpu_seconds, usage.reason) == (0, "stopped")
    running = usage_from_jobs([job("6", "RUNNING", 40, 1, 0, None)])
    assert running is not None and running.ended is None and running.gpu_seconds == 40


def test_the_accounts_usage_leaves_notebook_jobs_and_their_steps_out():
    text = "\n".join(
        [
            "10|acct|COMPLETED|60|gres/gpu=1|2026-11-26T12:00:00|2026-11-26T12:01:00|train",
            "10.batch|acct|COMPLETED|60||2026-11-26T12:00:00|2026-11-26T12:01:00|batch",
            f"11|acct|CANCELLED|30|gres/gpu=2|2026-11-26T12:00:00|2026-11-26T12:00:30|{NOTEBOOK_JOB_PREFIX}7-ab",
            "11.batch|acct|CANCELLED|30||2026-11-26T12:00:00|2026-11-26T12:00:30|batch",
        ]
    )
    rows = parse_sacct_usage(without_jobs_named(text, NOTEBOOK_JOB_PREFIX))
    assert [(r.job_id, r.step) for r in rows] == [("10", ""), ("10", "batch")]


def datasets(*args: str):
    """DATASETS_SCRIPT as the job runs it (as the member, in the member's workdir)."""
    return subprocess.run(
        ["bash", "-c", DATASETS_SCRIPT, "datasets", *args], capture_output=True, text=True
    )


def test_the_session_folders_link_the_datasets_and_never_delete_the_users_files(tmp_path):
    work, data = tmp_path / "work", tmp_path / "data"
    data.mkdir()
    (work / "datasets").mkdir(parents=True)
    (work / "datasets" / "old").symlink_to(data)  # a dataset no longer registered
    assert datasets(str(work), "link", "ct", str(data)).returncode == 0
    assert (work / "datasets" / "ct").readlink() == data
    assert not (work / "datasets" / "old").exists()

    assert datasets(str(work), "ro", "ct", str(data)).returncode == 0
    assert (work / "datasets" / "ct").is_dir() and not (work / "datasets" / "ct").is_symlink()

    (work / "datasets" / "xr").mkdir()
    (work / "datasets" / "xr" / "notes.txt").write_text("mine")
    refused = datasets(str(work), "link", "xr", str(data))
    assert refused.returncode == 3 and "in the way" in refused.stderr
    assert (work / "datasets" / "xr" / "notes.txt").read_text() == "mine"


def test_a_new_workdir_is_made_by_the_job(tmp_path):
    work = tmp_path / "store" / "P" / "notebooks" / "ada"
    assert datasets(str(work), "ro").returncode == 0
    assert (work / "datasets").is_dir()
