"""Run a cell in a session's JupyterLab as its user would: a token of the hub user, a kernel
started through the single-user server's REST API, the code sent over the kernel's websocket
(Jupyter's messaging protocol), its printed output returned."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import requests
import websocket


def server_token(record: Path) -> str:
    """The session server's own hub token (its JUPYTERHUB_API_TOKEN, scoped to that server),
    read as root from the server's environment: what the user's browser holds after sign-on."""
    pid = json.loads(record.read_text())["server_pid"]
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return env["JUPYTERHUB_API_TOKEN"]


def run_cell(server_url: str, token: str, code: str, *, timeout: float = 120) -> str:
    """Start a kernel on the server at `server_url` (…/user/<name>/<server>/), execute `code`,
    return what it printed (stdout and stderr); the kernel is shut down afterwards."""
    headers = {"Authorization": f"token {token}"}
    base = server_url.rstrip("/")
    kernel = requests.post(
        f"{base}/api/kernels", headers=headers, json={"name": "python3"}, timeout=60
    )
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    ws = websocket.create_connection(
        f"{base.replace('http', 'ws', 1)}/api/kernels/{kernel_id}/channels",
        header=[f"Authorization: token {token}"],
        timeout=timeout,
    )
    try:
        msg_id = uuid.uuid4().hex
        ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "username": "test",
                        "session": uuid.uuid4().hex,
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "channel": "shell",
                    "content": {
                        "code": code,
                        "silent": False,
                        "store_history": False,
                        "user_expressions": {},
                        "allow_stdin": False,
                        "stop_on_error": True,
                    },
                }
            )
        )
        output, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(ws.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                output.append(content["text"])
            elif kind == "error":
                output.append("\n".join(content.get("traceback") or [content.get("evalue", "")]))
            elif kind == "status" and content.get("execution_state") == "idle":
                return "".join(output)
        raise AssertionError(f"the cell did not finish in {timeout:.0f} s: {''.join(output)}")
    finally:
        ws.close()
        requests.delete(f"{base}/api/kernels/{kernel_id}", headers=headers, timeout=60)
