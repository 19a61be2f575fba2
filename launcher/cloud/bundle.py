"""The worker bundle: the agent and the CT/X-ray workload as one versioned tarball. No Django.

    portal-worker-<sha256[:12]>.tar.gz

holds launcher/__init__.py, launcher/cloud/{__init__,agent,imds,userdata}.py and
launcher/workloads/ (Python files only): what a worker instance runs, nothing of the portal.
The archive is byte-for-byte reproducible (sorted names, zero mtimes and owners, gzip without a
timestamp), so the same code always has the same name and checksum: the portal uploads it once
per allocation prefix and version, and the user data checks the SHA-256 before unpacking it.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AGENT_FILES = (
    "launcher/__init__.py",
    "launcher/cloud/__init__.py",
    "launcher/cloud/agent.py",
    "launcher/cloud/imds.py",
    "launcher/cloud/userdata.py",
)
WORKLOADS = "launcher/workloads"


@dataclass(frozen=True)
class Bundle:
    name: str
    sha256: str
    data: bytes
    files: tuple[str, ...]

    def key(self, prefix: str) -> str:
        return f"{prefix}bundles/{self.name}"


def bundle_files(root: Path = REPO) -> list[str]:
    workloads = sorted(
        p.relative_to(root).as_posix()
        for p in (root / WORKLOADS).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    return sorted({*AGENT_FILES, *workloads})


def build(root: Path = REPO) -> Bundle:
    """Build the bundle from the files under `root` (the repository by default)."""
    raw = io.BytesIO()
    files = bundle_files(root)
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in files:
            data = (root / rel).read_bytes()
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    data = packed.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    return Bundle(
        name=f"portal-worker-{sha[:12]}.tar.gz", sha256=sha, data=data, files=tuple(files)
    )


@functools.lru_cache(maxsize=1)
def current() -> Bundle:
    """This checkout's bundle (built once per process: the code does not change under it)."""
    return build()
