"""Where `portal login` keeps the portal's URL and the token: one JSON file in the user's
config dir (`$XDG_CONFIG_HOME/portal/config.json`, else `~/.config/portal/`), mode 600.
PORTAL_URL and PORTAL_TOKEN override what is stored."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import typer

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    return Path(typer.get_app_dir("portal")) / "config.json"


@dataclass(frozen=True)
class Settings:
    url: str
    token: str | None
    source: str  # where the token came from: "PORTAL_TOKEN", the config file's path, or ""


def load() -> Settings:
    stored: dict = {}
    path = config_path()
    if path.exists():
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            stored = {}
    url = os.environ.get("PORTAL_URL") or stored.get("url") or DEFAULT_URL
    if os.environ.get("PORTAL_TOKEN"):
        return Settings(
            url=url.rstrip("/"), token=os.environ["PORTAL_TOKEN"], source="PORTAL_TOKEN"
        )
    token = stored.get("token")
    return Settings(url=url.rstrip("/"), token=token, source=str(path) if token else "")


def save(*, url: str, token: str, username: str) -> Path:
    """Write the file readable by its owner only (created 600, never widened)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"url": url.rstrip("/"), "token": token, "username": username}, out, indent=2)
    os.chmod(path, 0o600)  # an older file may have been made wider
    return path


def forget() -> bool:
    path = config_path()
    if path.exists():
        path.unlink()
        return True
    return False
