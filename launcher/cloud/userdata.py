"""What a worker instance is told: its node configuration (in the EC2 user data, a cloud-init
shell script) and its task assignments (JSON objects in S3). No Django.

The user data carries no secret and no user text: bucket, region, prefixes, ids and the bundle's
key and checksum, as JSON in a quoted heredoc the shell never expands. The instance's S3 access
comes from its instance profile (IMDSv2). The script:

1. writes the configuration to /etc/portal/node.json;
2. picks the image's Python (the Deep Learning AMI's PyTorch at /opt/pytorch/bin/python3, else
   conda's, else python3) and installs boto3 there if the image lacks it;
3. fetches the worker bundle (agent + workload, launcher/cloud/bundle.py) from the allocation's
   prefix, checks its SHA-256, unpacks it under /opt/portal/bundle-<sha>;
4. writes a systemd unit running `python -m launcher.cloud.agent --config /etc/portal/node.json`
   and starts it (`systemctl enable --now`).

`PORTAL_ROOT` (empty on a real instance) lets the local emulator run the very same script in a
sandbox directory (launcher/cloud/emulator.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

CONFIG_MARK = "PORTAL_NODE_CONFIG"
VERSION = 2
BOTO3_PIN = "boto3==1.44.5"  # requirements.txt's pin: the agent speaks to S3 with it
UNIT = "portal-worker.service"


@dataclass(frozen=True)
class WorkerSpec:
    """One task assigned to a worker (`<prefix>nodes/<node token>/assignment.json`).

    `argv` is an argument list; `{data}` and `{out}` in it are replaced by the local folders the
    agent fills from `data_prefix` and syncs with `task_prefix + "out/"` (checkpoints, progress,
    metrics). A task that resumes finds its last checkpoint there. `task_prefix` names the task:
    a worker runs each assignment once. `deadline_seconds` is the run time this attempt may
    use (the job's wall time less what earlier attempts ran): the agent stops the job there
    (SIGTERM, the trainer checkpoints; SIGKILL after `kill_after_seconds`) and reports it
    failed with the reason, so a job is never charged past its reservation. None: no limit."""

    bucket: str
    task_prefix: str
    data_prefix: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    version: int = VERSION
    deadline_seconds: float | None = None
    kill_after_seconds: float = 30.0


@dataclass(frozen=True)
class NodeConfig:
    """Everything a worker instance needs to know, none of it secret."""

    bucket: str
    region: str
    prefix: str  # the allocation's prefix: all the instance's role may touch
    cluster: int
    node: int
    node_token: str
    role: str
    bundle_key: str
    bundle_sha256: str
    poll_seconds: float = 1.0
    version: int = VERSION

    @property
    def assignment_key(self) -> str:
        """The node's task queue: the portal writes the next task here."""
        return f"{self.prefix}nodes/{self.node_token}/assignment.json"

    @property
    def report_prefix(self) -> str:
        """Where the agent reports what the metadata service told it (notices)."""
        return f"{self.prefix}instances/"


def assignment_key(*, prefix: str, node_token: str) -> str:
    return f"{prefix}nodes/{node_token}/assignment.json"


def render(config: NodeConfig) -> str:
    """The cloud-init user data (a shell script) for one worker node."""
    body = json.dumps(asdict(config), sort_keys=True)
    sha = config.bundle_sha256[:12]
    return f"""#!/bin/bash
# Portal worker bootstrap (cloud-init runs it once, as root, at first boot).
# No secrets here: S3 access comes from the instance profile, read through IMDSv2.
set -euo pipefail
ROOT="${{PORTAL_ROOT:-}}"
install -d -m 755 "$ROOT/etc/portal" "$ROOT/opt/portal" "$ROOT/etc/systemd/system" "$ROOT/var/lib/portal"
cat > "$ROOT/etc/portal/node.json" <<'{CONFIG_MARK}'
{body}
{CONFIG_MARK}
PY=""
for candidate in /opt/pytorch/bin/python3 /opt/conda/bin/python3 python3; do
  if command -v "$candidate" >/dev/null 2>&1; then PY="$(command -v "$candidate")"; break; fi
done
[ -n "$PY" ] || {{ echo "portal bootstrap: no python3 on this image" >&2; exit 1; }}
"$PY" -c 'import boto3' 2>/dev/null || "$PY" -m pip install --quiet '{BOTO3_PIN}'
BUNDLE="$ROOT/opt/portal/bundle-{sha}"
if [ ! -f "$BUNDLE/.complete" ]; then
  "$PY" - "$ROOT/etc/portal/node.json" "$BUNDLE" <<'PORTAL_FETCH'
import hashlib, io, json, sys, tarfile
import boto3
cfg = json.load(open(sys.argv[1]))
s3 = boto3.client("s3", region_name=cfg["region"])
body = s3.get_object(Bucket=cfg["bucket"], Key=cfg["bundle_key"])["Body"].read()
if hashlib.sha256(body).hexdigest() != cfg["bundle_sha256"]:
    sys.exit("portal bootstrap: the bundle's checksum does not match")
tarfile.open(fileobj=io.BytesIO(body), mode="r:gz").extractall(sys.argv[2], filter="data")
open(sys.argv[2] + "/.complete", "w").close()
PORTAL_FETCH
fi
cat > "$ROOT/etc/systemd/system/{UNIT}" <<PORTAL_UNIT
[Unit]
Description=Portal worker agent (bundle {sha})
After=network-online.target
Wants=network-online.target

[Service]
Environment=PYTHONPATH=$BUNDLE
Environment=OMP_NUM_THREADS=1
ExecStart=$PY -m launcher.cloud.agent --config $ROOT/etc/portal/node.json --workdir $ROOT/var/lib/portal
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
PORTAL_UNIT
systemctl daemon-reload
systemctl enable --now {UNIT}
"""


def parse(text: str) -> NodeConfig | None:
    """The node configuration in a bootstrap script, or None if the text is not one of ours."""
    lines = text.splitlines()
    try:
        start = lines.index(f"""cat > "$ROOT/etc/portal/node.json" <<'{CONFIG_MARK}'""")
        data = json.loads(lines[start + 1])
    except (ValueError, IndexError):
        return None
    if data.get("version") != VERSION:
        return None
    return NodeConfig(**data)
