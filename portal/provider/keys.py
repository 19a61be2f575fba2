"""The provider's RS256 signing key: a PEM file named by the environment, never in the
repository. `make run` and `make services` create it once (`manage.py provider_key`)."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def read_key(path: Path) -> str:
    """The PEM text, or "" while the file does not exist (the provider's endpoints then say
    so: make run / make services create it)."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def ensure_key(path: Path) -> bool:
    """Write a new 2048-bit RSA key to `path` (mode 600) unless one is there; True if written."""
    if path.exists() and path.stat().st_size:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    tmp.replace(path)
    return True
