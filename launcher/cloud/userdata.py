"""The worker bootstrap carried in EC2 user data, and its parser. No Django.

The job travels as JSON inside a quoted heredoc, so no user value is ever read by the shell; the
script only hands the file to the worker agent. The local agent (agent.py) parses the same text.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

MARK = "PORTAL_WORKER_SPEC"
VERSION = 1


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker instance runs.

    `argv` is an argument list; `{data}` and `{out}` in it are replaced by the local folders the
    agent fills from `data_prefix` and syncs with `task_prefix + "out/"` (checkpoints, progress,
    metrics). A task that resumes finds its last checkpoint there.
    """

    bucket: str
    task_prefix: str
    data_prefix: str
    argv: list[str]
    notice_prefix: str = ""
    env: dict[str, str] = field(default_factory=dict)
    version: int = VERSION


def render(spec: WorkerSpec) -> str:
    body = json.dumps(asdict(spec), sort_keys=True)
    return (
        "#!/bin/bash\n"
        "# Portal worker bootstrap: write the job spec, hand it to the worker agent.\n"
        "set -euo pipefail\n"
        "install -d -m 700 /etc/portal\n"
        f"cat > /etc/portal/worker.json <<'{MARK}'\n{body}\n{MARK}\n"
        "exec /opt/portal/bin/portal-worker-agent /etc/portal/worker.json\n"
    )


def parse(text: str) -> WorkerSpec | None:
    """The spec in a bootstrap script, or None if the text is not one of ours."""
    lines = text.splitlines()
    try:
        start = lines.index(f"cat > /etc/portal/worker.json <<'{MARK}'")
        body = lines[start + 1]
    except (ValueError, IndexError):
        return None
    data = json.loads(body)
    if data.get("version") != VERSION:
        return None
    return WorkerSpec(**data)
