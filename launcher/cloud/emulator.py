"""The local instance emulator: every running EC2 instance in the moto server whose user data is
a portal bootstrap gets a sandbox that runs that user data, the very script AWS would run.
No Django.

    python -m launcher.cloud.emulator run --endpoint http://127.0.0.1:5000 --root var/instances
    python -m launcher.cloud.emulator notice --root var/instances i-0123...   [--rebalance]

Per instance, under `<root>/<instance-id>/`:

- `fs/`: the instance's file system as the bootstrap sees it (`PORTAL_ROOT`): /etc/portal,
  /opt/portal/bundle-<sha>, /etc/systemd/system/portal-worker.service, /var/lib/portal;
- an instance metadata endpoint on 127.0.0.1 (a port of its own) speaking IMDSv2: PUT
  /latest/api/token, then GETs with the token only (401 without), serving instance-id,
  placement, the instance profile's role credentials (moto accepts any; no profile, no
  credentials: the bootstrap then fails as it would on AWS), the user data, and
  `spot/instance-action` / `events/recommendations/rebalance` once `notice` wrote them
  (`imds/` here);
- `shim/`: a `systemctl` stand-in (sandbox only, see SYSTEMCTL below) and `python3` (this
  interpreter); `cloud-init-output.log`: what the user data printed.

The script runs with the sandbox's environment: `PORTAL_ROOT`, the shim first on PATH,
`AWS_EC2_METADATA_SERVICE_ENDPOINT` (botocore's own setting) at the sandbox's metadata endpoint
and `AWS_ENDPOINT_URL` at moto; no AWS keys at all, so boto3 on the "instance" can only use the
instance profile's credentials from the metadata endpoint. An instance that stops running in
moto (terminated, stopped) has its whole process group killed, as a reclaimed machine would.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3

log = logging.getLogger("portal.emulator")
BOOTSTRAP_MARK = "# Portal worker bootstrap"
# moto reserves /aws/... parameter names as AWS does, so the local loop publishes a stand-in for
# the Deep Learning AMI parameter here (the `local-cloud` demo facility names it); emulation only.
LOCAL_IMAGE_PARAMETER = "/portal/local/deeplearning-ami/x86_64/latest/ami-id"
LOCAL_IMAGE_SOURCE = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
IMAGE_CHECK_S = 10.0  # how often the emulator checks that parameter is still there
NOTICE_FILES = {
    "spot/instance-action": "spot-instance-action",
    "events/recommendations/rebalance": "rebalance",
}

# systemd replaced, in the sandbox only: `daemon-reload` does nothing; `enable --now UNIT`
# reads the unit's Environment= and ExecStart= lines and runs ExecStart in the background,
# restarting it on failure after RestartSec (as Restart=on-failure does), logging to
# var/log/UNIT.log. Nothing else of systemd is emulated.
SYSTEMCTL = r"""#!/bin/bash
# systemctl stand-in for the portal's local instance emulator (sandbox only).
set -euo pipefail
cmd="${1:-}"; shift || true
case "$cmd" in
  daemon-reload) exit 0 ;;
  enable|start)
    [ "${1:-}" = "--now" ] && shift
    unit="$PORTAL_ROOT/etc/systemd/system/$1"
    [ -f "$unit" ] || { echo "systemctl (emulator): no unit $1" >&2; exit 5; }
    mkdir -p "$PORTAL_ROOT/var/log" "$PORTAL_ROOT/run"
    (
      while IFS= read -r line; do export "${line#Environment=}"; done < <(grep '^Environment=' "$unit" || true)
      exec_start="$(sed -n 's/^ExecStart=//p' "$unit")"
      delay="$(sed -n 's/^RestartSec=//p' "$unit")"
      while true; do
        rc=0; $exec_start || rc=$?
        [ "$rc" -eq 0 ] && break
        echo "systemctl (emulator): $1 exited $rc, restarting in ${delay:-1}s" >&2
        sleep "${delay:-1}"
      done
    ) >>"$PORTAL_ROOT/var/log/$1.log" 2>&1 </dev/null &
    echo $! > "$PORTAL_ROOT/run/$1.pid" ;;
  *) echo "systemctl (emulator): '$cmd' is not emulated" >&2; exit 1 ;;
esac
"""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Metadata:
    """What one instance's metadata endpoint serves."""

    def __init__(
        self, *, instance: dict, user_data: str, role: str | None, region: str, notices: Path
    ) -> None:
        self.instance, self.user_data, self.role, self.region = instance, user_data, role, region
        self.notices = notices
        self.tokens: dict[str, float] = {}

    def lookup(self, path: str) -> str | None:
        inst = self.instance
        zone = inst.get("Placement", {}).get("AvailabilityZone", f"{self.region}a")
        simple = {
            "meta-data/instance-id": inst["InstanceId"],
            "meta-data/instance-type": inst["InstanceType"],
            "meta-data/ami-id": inst.get("ImageId", ""),
            "meta-data/placement/availability-zone": zone,
            "meta-data/placement/region": self.region,
            "meta-data/instance-life-cycle": "spot"
            if inst.get("InstanceLifecycle") == "spot"
            else "on-demand",
            "user-data": self.user_data,
            "dynamic/instance-identity/document": json.dumps(
                {
                    "instanceId": inst["InstanceId"],
                    "region": self.region,
                    "availabilityZone": zone,
                    "instanceType": inst["InstanceType"],
                }
            ),
        }
        if path in simple:
            return simple[path]
        for notice_path, name in NOTICE_FILES.items():
            if path == f"meta-data/{notice_path}":
                file = self.notices / name
                return file.read_text() if file.exists() else None
        creds = "meta-data/iam/security-credentials/"
        if self.role and path.rstrip("/") == creds.rstrip("/"):
            return self.role
        if self.role and path == creds + self.role:
            return json.dumps(
                {
                    "Code": "Success",
                    "LastUpdated": _now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "Type": "AWS-HMAC",
                    "AccessKeyId": "ASIAEMULATEDINSTANCE",
                    "SecretAccessKey": "emulated-instance-profile",
                    "Token": "emulated-session",
                    "Expiration": (_now() + dt.timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
        return None


def _handler(meta: Metadata) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, code: int, body: str = "") -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self) -> None:
            if self.path != "/latest/api/token":
                return self._send(404)
            if self.headers.get("X-Forwarded-For"):
                return self._send(403)  # IMDS refuses proxied token requests
            try:
                ttl = int(self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", ""))
            except ValueError:
                return self._send(400)
            if not 1 <= ttl <= 21600:
                return self._send(400)
            token = secrets.token_urlsafe(32)
            meta.tokens[token] = time.monotonic() + ttl
            self.send_response(200)
            self.send_header("X-aws-ec2-metadata-token-ttl-seconds", str(ttl))
            data = token.encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            token = self.headers.get("X-aws-ec2-metadata-token", "")
            if meta.tokens.get(token, 0) < time.monotonic():
                return self._send(401)  # HttpTokens=required: no IMDSv1
            if not self.path.startswith("/latest/"):
                return self._send(404)
            value = meta.lookup(self.path[len("/latest/") :])
            return self._send(404) if value is None else self._send(200, value)

    return Handler


class Sandbox:
    """One emulated instance: its metadata endpoint and its user data's processes."""

    def __init__(
        self,
        *,
        root: Path,
        instance: dict,
        user_data: str,
        role: str | None,
        region: str,
        endpoint: str,
    ) -> None:
        self.iid = instance["InstanceId"]
        self.dir = root / self.iid
        self.fs, self.shim, self.notices = self.dir / "fs", self.dir / "shim", self.dir / "imds"
        for d in (self.fs, self.shim, self.notices):
            d.mkdir(parents=True, exist_ok=True)
        meta = Metadata(
            instance=instance, user_data=user_data, role=role, region=region, notices=self.notices
        )
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(meta))
        threading.Thread(
            target=self.server.serve_forever, daemon=True, name=f"imds-{self.iid}"
        ).start()
        (self.dir / "user-data").write_text(user_data)
        (self.shim / "systemctl").write_text(SYSTEMCTL)
        (self.shim / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        for name in ("systemctl", "python3"):
            (self.shim / name).chmod(0o755)
        self.endpoint = endpoint
        self.proc: subprocess.Popen | None = None

    @property
    def metadata_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def boot(self) -> None:
        """Run the user data as cloud-init would (once), in its own process group."""
        keep = ("HOME", "LANG", "LC_ALL", "TMPDIR")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            PATH=f"{self.shim}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            PORTAL_ROOT=str(self.fs),
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_EC2_METADATA_SERVICE_ENDPOINT=self.metadata_url,
            AWS_SHARED_CREDENTIALS_FILE=str(self.dir / "no-credentials"),
            AWS_CONFIG_FILE=str(self.dir / "no-config"),
        )
        with open(self.dir / "cloud-init-output.log", "ab") as out:
            self.proc = subprocess.Popen(
                ["bash", str(self.dir / "user-data")],
                cwd=self.fs,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def halt(self) -> None:
        """The machine is gone: every process it started dies, its endpoint closes."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.server.shutdown()
        self.server.server_close()


class Emulator:
    """Boots a Sandbox for each running instance with a portal bootstrap; halts it when the
    instance stops running."""

    def __init__(self, *, endpoint: str, region: str, root: Path, poll: float = 0.5) -> None:
        session = boto3.session.Session()
        self.ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint)
        self.iam = session.client("iam", region_name=region, endpoint_url=endpoint)
        self.endpoint, self.region, self.root, self.poll = endpoint, region, root, poll
        self.sandboxes: dict[str, Sandbox] = {}
        self.ignored: set[str] = set()
        self.ssm = session.client("ssm", region_name=region, endpoint_url=endpoint)

    def publish_local_image(self) -> str:
        """Put LOCAL_IMAGE_PARAMETER into moto (an AMI moto knows). Idempotent."""
        image = self.ssm.get_parameter(Name=LOCAL_IMAGE_SOURCE)["Parameter"]["Value"]
        self.ssm.put_parameter(
            Name=LOCAL_IMAGE_PARAMETER, Value=image, Type="String", Overwrite=True
        )
        return image

    def ensure_local_image(self) -> str | None:
        """Publish LOCAL_IMAGE_PARAMETER again if it is gone (moto restarted, or reset by hand
        with POST /moto-api/reset, which clears SSM): the image it published, or None when the
        parameter was there."""
        try:
            self.ssm.get_parameter(Name=LOCAL_IMAGE_PARAMETER)
        except self.ssm.exceptions.ParameterNotFound:
            return self.publish_local_image()
        return None

    def _running(self) -> dict[str, dict]:
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "instance-state-name", "Values": ["running"]}]
        )
        return {
            i["InstanceId"]: i for p in pages for r in p["Reservations"] for i in r["Instances"]
        }

    def _role(self, instance: dict) -> str | None:
        arn = (instance.get("IamInstanceProfile") or {}).get("Arn", "")
        if not arn:
            return None
        profile = self.iam.get_instance_profile(InstanceProfileName=arn.rsplit("/", 1)[-1])
        roles = profile["InstanceProfile"]["Roles"]
        return roles[0]["RoleName"] if roles else None

    def _user_data(self, iid: str) -> str:
        value = self.ec2.describe_instance_attribute(InstanceId=iid, Attribute="userData")[
            "UserData"
        ].get("Value", "")
        return base64.b64decode(value).decode() if value else ""

    def step(self) -> None:
        running = self._running()
        for iid in [i for i in self.sandboxes if i not in running]:
            log.info("instance %s stopped running: halting its sandbox", iid)
            self.sandboxes.pop(iid).halt()
            self.ignored.add(iid)  # a stopped instance that starts again does not re-run cloud-init
        for iid in sorted(set(running) - set(self.sandboxes) - self.ignored):
            user_data = self._user_data(iid)
            if BOOTSTRAP_MARK not in user_data:
                self.ignored.add(iid)
                continue
            box = Sandbox(
                root=self.root,
                instance=running[iid],
                user_data=user_data,
                role=self._role(running[iid]),
                region=self.region,
                endpoint=self.endpoint,
            )
            self.sandboxes[iid] = box
            log.info("booting %s in %s (metadata at %s)", iid, box.dir, box.metadata_url)
            box.boot()

    def run_forever(self, stop: threading.Event) -> None:
        checked = -IMAGE_CHECK_S  # check at once, then every IMAGE_CHECK_S
        while not stop.is_set():
            try:
                if time.monotonic() - checked >= IMAGE_CHECK_S:
                    image = self.ensure_local_image()
                    checked = time.monotonic()
                    if image:
                        log.info("published %s = %s", LOCAL_IMAGE_PARAMETER, image)
                self.step()
            except Exception:  # the endpoint restarting; keep going
                log.exception("emulator step failed")
            stop.wait(self.poll)
        for box in self.sandboxes.values():
            box.halt()


def send_notice(
    root: Path, instance_id: str, *, rebalance: bool = False, seconds: int = 120
) -> dict:
    """What AWS does first when it takes a spot instance back: the metadata endpoint starts
    serving the notice (terminate in `seconds`), or a rebalance recommendation."""
    folder = Path(root) / instance_id / "imds"
    folder.mkdir(parents=True, exist_ok=True)
    when = (_now() + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    if rebalance:
        body, name = {"noticeTime": _now().strftime("%Y-%m-%dT%H:%M:%SZ")}, "rebalance"
    else:
        body, name = {"action": "terminate", "time": when}, "spot-instance-action"
    tmp = folder / f".{name}.tmp"
    tmp.write_text(json.dumps(body))
    tmp.replace(folder / name)
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m launcher.cloud.emulator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="boot every running portal instance in moto")
    run.add_argument("--endpoint", default=os.environ.get("AWS_ENDPOINT_URL"))
    run.add_argument("--region", default="us-east-1")
    run.add_argument("--root", type=Path, required=True)
    run.add_argument("--poll", type=float, default=0.5)
    notice = sub.add_parser("notice", help="serve a spot notice to one emulated instance")
    notice.add_argument("--root", type=Path, required=True)
    notice.add_argument("instance_id")
    notice.add_argument("--rebalance", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.command == "notice":
        print(json.dumps(send_notice(args.root, args.instance_id, rebalance=args.rebalance)))
        return 0
    if not args.endpoint:
        parser.error(
            "--endpoint (or AWS_ENDPOINT_URL) is required: the emulator plays moto's instances"
        )
    # The emulator's own calls (describe instances, read profiles) go to moto with dummy keys;
    # the sandboxes never see these.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    args.root.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    Emulator(
        endpoint=args.endpoint, region=args.region, root=args.root.resolve(), poll=args.poll
    ).run_forever(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
