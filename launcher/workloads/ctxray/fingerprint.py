"""A fingerprint of the data a run trained on: SHA-256 over every file it read (its path relative
to ``--data`` and its bytes), in sorted order. Two runs with the same fingerprint, settings and
seed read the same bytes; a renamed, added, removed or edited file changes it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

from .sources import Item

CHUNK = 1 << 20


def _files(path: str) -> list[str]:
    """A sample's files: the file itself, or every file of a series folder."""
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names)


def data_fingerprint(root: str, items: Iterable[Item]) -> str:
    """``sha256:<hex>`` of the files behind ``items`` (each file once, whatever its slices)."""
    base = root if os.path.isdir(root) else os.path.dirname(root)
    paths = sorted({f for item in items for f in _files(item.path)})
    digest = hashlib.sha256()
    for path in paths:
        digest.update(os.path.relpath(path, base).encode() + b"\0")
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    return f"sha256:{digest.hexdigest()}"
