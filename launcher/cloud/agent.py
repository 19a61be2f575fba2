"""The worker agent: what runs on every worker instance, under systemd, from the worker bundle.
No Django; only boto3 and the standard library (the workload brings PyTorch).

    python -m launcher.cloud.agent --config /etc/portal/node.json --workdir /var/lib/portal

The user data (userdata.py) installs and starts it. It:

- reads its task assignments from `<prefix>nodes/<node token>/assignment.json` (the portal
  writes one per task; a warm worker takes the next task of its allocation the same way), runs
  each once: fetches the data and the task's last checkpoint from S3, runs the trainer with
  `--resume`, uploads `out/` (checkpoints, progress.json, metrics.json) after every change,
  `checkpoint-meta.json` when a checkpoint lands, and `status/<instance>.json`
  (running | succeeded | failed | preempted), which the portal polls;
- polls the instance metadata service (IMDSv2, imds.py) for `spot/instance-action` (the
  two-minute interruption notice) and `events/recommendations/rebalance`; on either it sends
  the running job SIGTERM (the trainer checkpoints and exits 75), uploads the checkpoint at once,
  reports the notice under `<prefix>instances/<instance>/` and its job `preempted`, and takes no
  further task. The portal's own detection (spot request status, instance state) stays as the
  fallback for a notice this agent never saw;
- enforces the task's wall time (`deadline_seconds` in the assignment): at the deadline it
  sends the job SIGTERM (the trainer checkpoints), SIGKILL `kill_after_seconds`
  later if it is still there, and reports it `failed` with
  `deadline: true` and the reason, so no job runs (and is charged) past what it reserved.

Its S3 credentials are the instance profile's, read by boto3 from the metadata service; the
role allows the allocation's prefix and nothing else.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3

from launcher.cloud.imds import Imds
from launcher.cloud.userdata import NodeConfig, WorkerSpec

log = logging.getLogger("portal.agent")
REPO = Path(__file__).resolve().parents[2]  # the bundle's root on an instance
EXIT_PREEMPTED = 75
NOTICE_PATHS = {
    "spot/instance-action": "meta-data/spot/instance-action",
    "events/rebalance": "meta-data/events/recommendations/rebalance",
}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class Job:
    """One assigned task on this instance: fetch, run, sync, report."""

    def __init__(self, *, instance_id: str, spec: WorkerSpec, s3, root: Path, poll: float) -> None:
        self.instance_id, self.spec, self.s3, self.poll = instance_id, spec, s3, poll
        self.root = root
        self.data, self.out = root / "data", root / "out"
        self.proc: subprocess.Popen | None = None
        self.signalled = False  # the job got SIGTERM because of a notice
        self.signalled_ns = 0  # when (wall clock): a checkpoint written after it is graceful
        self.lock = threading.Lock()
        # What was last uploaded per output file: (inode, mtime_ns, size). The trainer replaces
        # files atomically (a new inode each time), so a rewrite within one coarse mtime tick is
        # still seen; an mtime alone can miss the final progress.json.
        self._seen: dict[str, tuple[int, int, int]] = {}
        self.resumed = 0  # files of an earlier attempt found in S3 (a resume)
        self.deadline_hit = False  # stopped at its wall time (the assignment's deadline)

    # S3 helpers --------------------------------------------------------------------------------
    def _keys(self, prefix: str) -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.spec.bucket, Prefix=prefix
        )
        return [o["Key"] for page in pages for o in page.get("Contents", ())]

    def _download(self, prefix: str, folder: Path) -> int:
        count = 0
        for key in self._keys(prefix):
            target = folder / key[len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            self.s3.download_file(self.spec.bucket, key, str(target))
            count += 1
        return count

    def _put_json(self, key: str, data: dict) -> None:
        self.s3.put_object(Bucket=self.spec.bucket, Key=key, Body=json.dumps(data).encode())

    def _status(self, state: str, **extra: object) -> None:
        self._put_json(
            f"{self.spec.task_prefix}status/{self.instance_id}.json",
            {
                "state": state,
                "instance": self.instance_id,
                "at": _now(),
                "resumed_files": self.resumed,
                **extra,
            },
        )

    def sync_out(self, stopped_on_notice: bool = False) -> None:
        """Upload changed output files; a new checkpoint also updates checkpoint-meta.json.
        `graceful` there means the checkpoint holds all the job's work: written after the
        notice, or (`stopped_on_notice`) the job exited 75, having checkpointed before it
        stopped, so nothing since its last checkpoint is lost."""
        with self.lock:  # the notice path and the main loop both upload
            self._sync_out(stopped_on_notice)

    def _sync_out(self, stopped_on_notice: bool) -> None:
        new_checkpoint, graceful = stopped_on_notice, stopped_on_notice
        # progress.json last: once it is in S3, every file it speaks of is there too.
        for path in sorted(self.out.rglob("*"), key=lambda p: (p.name == "progress.json", p)):
            if not path.is_file() or path.name.startswith(".tmp-"):
                continue
            rel = path.relative_to(self.out).as_posix()
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # replaced between the listing and now; the next pass sends it
            sig = (st.st_ino, st.st_mtime_ns, st.st_size)
            if self._seen.get(rel) == sig:
                continue
            # The upload reads the file after this stat, so S3 gets content at least this new.
            self.s3.upload_file(str(path), self.spec.bucket, f"{self.spec.task_prefix}out/{rel}")
            self._seen[rel] = sig
            if rel == "checkpoint.pt":
                new_checkpoint = True
                graceful |= self.signalled and st.st_mtime_ns >= self.signalled_ns
        if new_checkpoint:
            progress = self._read_progress()
            self._put_json(
                f"{self.spec.task_prefix}checkpoint-meta.json",
                {
                    "saved_at": _now(),
                    "epoch": progress.get("epoch", 0),
                    "state": progress.get("state"),
                    "graceful": graceful,
                    "instance": self.instance_id,
                },
            )

    def _read_progress(self) -> dict:
        try:
            return json.loads((self.out / "progress.json").read_text())
        except (OSError, ValueError):
            return {}

    # the run -----------------------------------------------------------------------------------
    def _argv(self) -> list[str]:
        argv = [
            a.replace("{data}", str(self.data)).replace("{out}", str(self.out))
            for a in self.spec.argv
        ]
        return [sys.executable if i == 0 and a == "python" else a for i, a in enumerate(argv)]

    def stop(self) -> None:
        """The instance is being taken back: SIGTERM the job (it checkpoints and exits 75)."""
        self.signalled_ns = time.time_ns()
        self.signalled = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def run(self) -> str:
        """Run the task to its end; returns the state reported."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self._download(self.spec.data_prefix, self.data)
        self.resumed = self._download(f"{self.spec.task_prefix}out/", self.out)
        for path in self.out.rglob("*"):
            if path.is_file():
                st = path.stat()
                self._seen[path.relative_to(self.out).as_posix()] = (
                    st.st_ino,
                    st.st_mtime_ns,
                    st.st_size,
                )
        env = {**os.environ, "PYTHONPATH": str(REPO), **self.spec.env}
        with open(self.root / "job.log", "wb") as logf:
            self.proc = subprocess.Popen(
                self._argv(), cwd=self.root, env=env, stdout=logf, stderr=subprocess.STDOUT
            )
        started = time.monotonic()
        if self.signalled:  # the notice came while the data was downloading
            self.proc.send_signal(signal.SIGTERM)
        self._status("running", pid=self.proc.pid)
        while self.proc.poll() is None:
            self._enforce_deadline(time.monotonic() - started)
            self.sync_out()
            time.sleep(self.poll)
        code = self.proc.wait()
        if code not in (0, EXIT_PREEMPTED) and self._read_progress().get("state") == "preempted":
            code = EXIT_PREEMPTED  # torchrun (gpus > 1) reports its workers' checkpoint exit as 1
        self.sync_out(stopped_on_notice=self.signalled and code == EXIT_PREEMPTED)
        self.s3.upload_file(
            str(self.root / "job.log"),
            self.spec.bucket,
            f"{self.spec.task_prefix}logs/{self.instance_id}.log",
        )
        if self.deadline_hit and not self.signalled:
            limit = self.spec.deadline_seconds
            self._status(
                "failed",
                exit_code=code,
                deadline=True,
                error=f"Stopped at its wall time ({limit:.0f} s of run time).",
            )
            return "failed"
        state = {0: "succeeded", EXIT_PREEMPTED: "preempted"}.get(code, "failed")
        self._status(state, exit_code=code)
        return state

    def _enforce_deadline(self, ran: float) -> None:
        """At the deadline, SIGTERM (the trainer checkpoints and exits; torchrun passes it to its
        workers); kill_after_seconds later, SIGKILL. The job stays in the agent's process group,
        which the instance (and the emulator) takes down as a whole."""
        limit = self.spec.deadline_seconds
        if limit is None or self.proc is None or ran < limit:
            return
        if not self.deadline_hit:
            log.info(
                "task %s reached its wall time (%.0f s): stopping it", self.spec.task_prefix, limit
            )
            self.deadline_hit = True
            self.proc.send_signal(signal.SIGTERM)
        elif ran >= limit + self.spec.kill_after_seconds:
            self.proc.kill()


class NodeAgent:
    """This instance's life: watch the metadata service, run assigned tasks one by one."""

    def __init__(
        self, *, config: NodeConfig, workdir: Path, s3, imds: Imds, poll: float | None = None
    ) -> None:
        self.config, self.workdir, self.s3, self.imds = config, workdir, s3, imds
        self.poll = poll if poll is not None else config.poll_seconds
        self.instance_id = imds.instance_id()
        self.job: Job | None = None
        self.interrupted = threading.Event()
        self.done: set[str] = set()
        self._load_done()

    def _load_done(self) -> None:
        # A restarted agent (systemd Restart=on-failure) must not run a finished task again.
        path = self.workdir / "done.json"
        if path.exists():
            self.done = set(json.loads(path.read_text()))

    def _save_done(self) -> None:
        (self.workdir / "done.json").write_text(json.dumps(sorted(self.done)))

    def assignment(self) -> WorkerSpec | None:
        try:
            body = self.s3.get_object(Bucket=self.config.bucket, Key=self.config.assignment_key)[
                "Body"
            ].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        # Fields this agent does not know (a newer portal's) are left out, so a warm worker on
        # an older bundle still runs the task.
        known = {f.name for f in dataclasses.fields(WorkerSpec)}
        spec = WorkerSpec(**{k: v for k, v in json.loads(body).items() if k in known})
        return None if spec.task_prefix in self.done else spec

    def check_metadata(self) -> str | None:
        """Look once for an interruption notice or a rebalance recommendation; on the first
        one, stop the job, report the notice and return its kind."""
        if self.interrupted.is_set():
            return None
        for kind, path in NOTICE_PATHS.items():
            text = self.imds.get(path)
            if text is None:
                continue
            log.info("%s from the metadata service: %s", kind, text)
            self.interrupted.set()
            job = self.job
            if job is not None:
                job.stop()
            try:
                notice = json.loads(text)
            except ValueError:
                notice = {"raw": text}
            self.s3.put_object(
                Bucket=self.config.bucket,
                Key=f"{self.config.report_prefix}{self.instance_id}/{kind}",
                Body=json.dumps({**notice, "seen_at": _now(), "kind": kind}).encode(),
            )
            return kind
        return None

    def watch(self, stop: threading.Event) -> None:
        while not stop.is_set() and not self.interrupted.is_set():
            try:
                self.check_metadata()
            except Exception:  # the endpoint hiccuped: look again next time
                log.exception("metadata poll failed")
            stop.wait(self.poll)

    def step(self) -> bool:
        """Run the next assigned task if there is one; False when there was nothing to do."""
        if self.interrupted.is_set():
            return False
        spec = self.assignment()
        if spec is None:
            return False
        name = spec.task_prefix.rstrip("/").rsplit("/", 1)[-1]
        self.job = Job(
            instance_id=self.instance_id,
            spec=spec,
            s3=self.s3,
            root=self.workdir / "tasks" / name,
            poll=self.poll,
        )
        if self.interrupted.is_set():
            self.job.signalled = True
        log.info("running task %s", spec.task_prefix)
        try:
            state = self.job.run()
        except Exception:  # a broken task must not take the agent down; report it
            log.exception("task %s failed in the agent", spec.task_prefix)
            self.job._status("failed", exit_code=None, error="agent error")
            state = "failed"
        log.info("task %s: %s", spec.task_prefix, state)
        self.done.add(spec.task_prefix)
        self._save_done()
        self.job = None
        return True

    def run_forever(self, stop: threading.Event) -> None:
        watcher = threading.Thread(target=self.watch, args=(stop,), name="imds-watch", daemon=True)
        watcher.start()
        while not stop.is_set():
            try:
                if self.step():
                    continue
            except Exception:  # S3 unreachable for a moment: keep going
                log.exception("agent step failed")
            stop.wait(self.poll)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m launcher.cloud.agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, default=Path("/var/lib/portal"))
    parser.add_argument("--poll", type=float, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = NodeConfig(**json.loads(args.config.read_text()))
    args.workdir.mkdir(parents=True, exist_ok=True)
    # Credentials: the instance profile's, through IMDSv2 (boto3's own provider chain).
    s3 = boto3.session.Session().client("s3", region_name=config.region)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    NodeAgent(config=config, workdir=args.workdir, s3=s3, imds=Imds(), poll=args.poll).run_forever(
        stop
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
