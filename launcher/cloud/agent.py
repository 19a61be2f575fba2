"""The local worker agent: plays every running moto instance tagged as a worker. No Django.

    python -m launcher.cloud.agent --endpoint http://127.0.0.1:5000 --region us-east-1 --root DIR

For each running worker instance it reads the bootstrap in its user data (userdata.py), fetches
the task's data and its last checkpoint from S3, runs the job as a local process, and keeps S3 up
to date: `out/` (checkpoints, progress.json, metrics.json) after every change,
`checkpoint-meta.json` when a checkpoint lands, and `status/<instance>.json`
(running | succeeded | failed | preempted | killed) which the portal polls.

Spot interruptions: the agent polls `<notice_prefix><instance>/spot/instance-action` as a real
instance polls the metadata endpoint; on a notice it sends the job SIGTERM (the trainer
checkpoints and exits 75), uploads the checkpoint and reports `preempted`. An instance that
disappears without notice has its job killed at once (`killed`: work since the last checkpoint
is lost), as a real reclaimed machine would.
"""
from __future__ import annotations

import argparse
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

from launcher.cloud.userdata import WorkerSpec, parse

log = logging.getLogger("portal.agent")
REPO = Path(__file__).resolve().parents[2]
EXIT_PREEMPTED = 75


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class Worker(threading.Thread):
    """One instance's life: fetch, run, sync, report."""

    def __init__(self, *, instance_id: str, spec: WorkerSpec, s3, root: Path, poll: float) -> None:
        super().__init__(name=f"worker-{instance_id}", daemon=True)
        self.instance_id, self.spec, self.s3, self.poll = instance_id, spec, s3, poll
        self.root = root / instance_id
        self.data, self.out = self.root / "data", self.root / "out"
        self.gone = threading.Event()
        self.proc: subprocess.Popen | None = None
        self.signalled = False  # the job got SIGTERM because of a spot notice
        self.signalled_ns = 0  # when (wall clock): a checkpoint written after it is graceful
        self.killed = False  # the instance vanished under the job
        # What was last uploaded per output file: (inode, mtime_ns, size). The trainer replaces
        # files atomically (a new inode each time), so a rewrite within one coarse mtime tick is
        # still seen; an mtime alone can miss the final progress.json.
        self._seen: dict[str, tuple[int, int, int]] = {}
        self.resumed = 0  # files of an earlier attempt found in S3 (a resume)

    # S3 helpers --------------------------------------------------------------------------------
    def _keys(self, prefix: str) -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.spec.bucket,
                                                                   Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", ())]

    def _download(self, prefix: str, folder: Path) -> int:
        count = 0
        for key in self._keys(prefix):
            target = folder / key[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            self.s3.download_file(self.spec.bucket, key, str(target))
            count += 1
        return count

    def _put_json(self, key: str, data: dict) -> None:
        self.s3.put_object(Bucket=self.spec.bucket, Key=key, Body=json.dumps(data).encode())

    def _status(self, state: str, **extra: object) -> None:
        self._put_json(f"{self.spec.task_prefix}status/{self.instance_id}.json",
                       {"state": state, "instance": self.instance_id, "at": _now(),
                        "resumed_files": self.resumed, **extra})

    def _notice(self) -> bool:
        if not self.spec.notice_prefix:
            return False
        key = f"{self.spec.notice_prefix}{self.instance_id}/spot/instance-action"
        try:
            self.s3.head_object(Bucket=self.spec.bucket, Key=key)
            return True
        except self.s3.exceptions.ClientError:
            return False

    def _sync_out(self, stopped_on_notice: bool = False) -> None:
        """Upload changed output files; a new checkpoint also updates checkpoint-meta.json.
        `graceful` there means the checkpoint holds all the job's work: written after the
        notice, or (`stopped_on_notice`) the job exited 75, having checkpointed before it
        stopped, so nothing since its last checkpoint is lost."""
        new_checkpoint, graceful = stopped_on_notice, stopped_on_notice
        # progress.json last: once it is in S3, every file it speaks of is there too.
        for path in sorted(self.out.rglob("*"), key=lambda p: (p.name == "progress.json", p)):
            if self.gone.is_set():
                return  # the machine is gone: nothing more leaves it
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
            self._put_json(f"{self.spec.task_prefix}checkpoint-meta.json", {
                "saved_at": _now(), "epoch": progress.get("epoch", 0),
                "state": progress.get("state"), "graceful": graceful,
                "instance": self.instance_id})

    def _read_progress(self) -> dict:
        try:
            return json.loads((self.out / "progress.json").read_text())
        except (OSError, ValueError):
            return {}

    # the run -----------------------------------------------------------------------------------
    def _argv(self) -> list[str]:
        subst = {"{data}": str(self.data), "{out}": str(self.out)}
        argv = [subst.get(a, a.replace("{data}", str(self.data)).replace("{out}", str(self.out)))
                for a in self.spec.argv]
        return [sys.executable if i == 0 and a == "python" else a for i, a in enumerate(argv)]

    def run(self) -> None:
        try:
            self._run()
        except Exception:  # a broken worker must not take the agent down; report and stop
            log.exception("worker %s failed", self.instance_id)
            try:
                self._status("failed", exit_code=None, error="agent error")
            except Exception:
                log.exception("could not report failure of %s", self.instance_id)

    def _run(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self._download(self.spec.data_prefix, self.data)
        self.resumed = self._download(f"{self.spec.task_prefix}out/", self.out)
        for path in self.out.rglob("*"):
            if path.is_file():
                st = path.stat()
                self._seen[path.relative_to(self.out).as_posix()] = (
                    st.st_ino, st.st_mtime_ns, st.st_size)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **self.spec.env}
        with open(self.root / "job.log", "wb") as logf:
            self.proc = subprocess.Popen(self._argv(), cwd=self.root, env=env, stdout=logf,
                                         stderr=subprocess.STDOUT)
        self._status("running", pid=self.proc.pid)
        # The notice watch runs on its own thread: uploading a large checkpoint takes seconds,
        # and a real instance's metadata poll does not wait for its uploads either.
        watcher = threading.Thread(target=self._watch, name=f"watch-{self.instance_id}",
                                   daemon=True)
        watcher.start()
        while self.proc.poll() is None and not self.killed:
            self._sync_out()
            self.gone.wait(self.poll)
        code = self.proc.wait()
        watcher.join()
        if self.killed:
            self._status("killed", exit_code=None)  # the portal may see it or not
            return
        self._sync_out(stopped_on_notice=self.signalled and code == EXIT_PREEMPTED)
        self.s3.upload_file(str(self.root / "job.log"), self.spec.bucket,
                            f"{self.spec.task_prefix}logs/{self.instance_id}.log")
        state = {0: "succeeded", EXIT_PREEMPTED: "preempted"}.get(code, "failed")
        self._status(state, exit_code=code)

    def _watch(self) -> None:
        """Until the job exits: kill it at once if the instance vanished, SIGTERM it on the
        first spot notice (the trainer checkpoints and exits 75)."""
        assert self.proc is not None
        while self.proc.poll() is None:
            if self.gone.wait(self.poll):
                self.killed = True
                self.proc.kill()
                return
            try:
                noticed = not self.signalled and self._notice()
            except Exception:  # the endpoint hiccuped: look again next time
                log.exception("notice poll of %s failed", self.instance_id)
                continue
            if noticed and self.proc.poll() is None:
                log.info("spot notice for %s: stopping its job", self.instance_id)
                self.signalled_ns = time.time_ns()
                self.signalled = True
                self.proc.send_signal(signal.SIGTERM)


class Agent:
    """Watches the cloud for running worker instances and runs one Worker per instance."""

    def __init__(self, *, endpoint: str, region: str, root: Path, poll: float = 0.5) -> None:
        session = boto3.session.Session()
        self.ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint)
        self.s3 = session.client("s3", region_name=region, endpoint_url=endpoint)
        self.root, self.poll = root, poll
        self.workers: dict[str, Worker] = {}
        self.ignored: set[str] = set()

    def running_workers(self) -> set[str]:
        pages = self.ec2.get_paginator("describe_instances").paginate(Filters=[
            {"Name": "tag:portal:role", "Values": ["worker"]},
            {"Name": "instance-state-name", "Values": ["running"]}])
        return {i["InstanceId"] for p in pages for r in p["Reservations"] for i in r["Instances"]}

    def step(self) -> None:
        running = self.running_workers()
        for iid, worker in self.workers.items():
            if iid not in running:
                worker.gone.set()
        for iid in sorted(running - set(self.workers) - self.ignored):
            spec = self._spec(iid)
            if spec is None:
                self.ignored.add(iid)
                continue
            worker = Worker(instance_id=iid, spec=spec, s3=self.s3, root=self.root, poll=self.poll)
            self.workers[iid] = worker
            log.info("playing worker %s", iid)
            worker.start()

    def _spec(self, iid: str) -> WorkerSpec | None:
        import base64

        value = self.ec2.describe_instance_attribute(InstanceId=iid, Attribute="userData")[
            "UserData"].get("Value", "")
        return parse(base64.b64decode(value).decode()) if value else None

    def run_forever(self, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                self.step()
            except Exception:  # the endpoint restarting; keep playing
                log.exception("agent step failed")
            stop.wait(self.poll)
        for worker in self.workers.values():
            worker.gone.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launcher.cloud.agent", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", default=os.environ.get("AWS_ENDPOINT_URL"))
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--poll", type=float, default=0.5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    Agent(endpoint=args.endpoint, region=args.region, root=args.root, poll=args.poll).run_forever(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
