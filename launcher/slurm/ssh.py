"""A paramiko connection to one login node, with a pinned host key and safe retries.

Guarantees:
- The server must present the pinned host key. An unknown or changed key is a permanent
  `BackendError`; no key is ever added or trusted on first use (RejectPolicy).
- Commands are argument lists; each argument is `shlex.quote`d, so no value reaches the remote
  shell as syntax.
- Transient failures (refused, reset, timed out, dropped) are retried with exponential backoff;
  permanent ones (host key, authentication, missing key file) are raised at once.
- A command that is not safe to repeat (`retry_after_send=False`) is never re-sent once the server
  may have received it: the caller gets a transient error and must check what happened.
"""

from __future__ import annotations

import errno
import os
import shlex
import socket
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import paramiko

from launcher.backends.errors import BackendError

T = TypeVar("T")

_TRANSIENT = (
    paramiko.ssh_exception.NoValidConnectionsError,
    socket.timeout,
    TimeoutError,
    ConnectionError,
    EOFError,
    OSError,
    paramiko.SSHException,
)


class RemoteFileNotFound(BackendError):
    """The remote path does not exist (yet). Permanent for this call."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no such remote file: {path}", permanent=True)


class _UnknownHostKey(paramiko.SSHException):
    pass


class _PinnedOnly(paramiko.MissingHostKeyPolicy):
    """RejectPolicy with an error we can tell apart from transient SSH failures."""

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        raise _UnknownHostKey(
            f"host key for {hostname} ({key.get_name()} {key.fingerprint}) is not the pinned key"
        )


@dataclass(frozen=True)
class SSHTarget:
    """Where and how to log in. `host_key` is a known_hosts line, a bare '<type> <base64>' key,
    or the path of a known_hosts file; it is the only key accepted for this host."""

    host: str
    port: int
    user: str
    key_path: Path
    host_key: str
    connect_timeout: float = 10.0
    command_timeout: float = 120.0
    retries: int = 3
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 8.0

    @property
    def known_hosts_name(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


@dataclass(frozen=True)
class CommandResult:
    """What a remote command returned."""

    args: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    def ok(self) -> bool:
        return self.rc == 0


def pinned_host_keys(target: SSHTarget) -> paramiko.HostKeys:
    """The host keys accepted for `target`, parsed from its `host_key` setting."""
    spec = target.host_key.strip()
    if "\n" not in spec and not spec.startswith(("ssh-", "ecdsa-", "[")) and Path(spec).is_file():
        spec = Path(spec).read_text()
    keys = paramiko.HostKeys()
    for raw in spec.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if len(line.split()) == 2 or line.split()[0].startswith(("ssh-", "ecdsa-")):
            line = f"{target.known_hosts_name} {line}"  # a bare key is pinned to this target
        entry = paramiko.hostkeys.HostKeyEntry.from_line(line)
        if entry is None:
            raise BackendError(f"unreadable pinned host key line: {raw[:60]!r}", permanent=True)
        for name in entry.hostnames:
            keys.add(name, entry.key.get_name(), entry.key)
    if not keys.keys():
        raise BackendError("no pinned host key configured", permanent=True)
    return keys


class SSHConnection:
    """One reusable SSH connection (and SFTP session) to `target`; thread-safe."""

    def __init__(self, target: SSHTarget, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.target = target
        self._sleep = sleep
        self._lock = threading.RLock()
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self.connects = 0  # how many times a connection was opened (reuse is observable)

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        for name, entries in pinned_host_keys(self.target).items():
            for key in entries.values():
                client.get_host_keys().add(name, key.get_name(), key)
        client.set_missing_host_key_policy(_PinnedOnly())
        t = self.target
        client.connect(
            t.host,
            port=t.port,
            username=t.user,
            key_filename=str(t.key_path),
            timeout=t.connect_timeout,
            banner_timeout=t.connect_timeout,
            auth_timeout=t.connect_timeout,
            channel_timeout=t.connect_timeout,
            allow_agent=False,
            look_for_keys=False,
        )
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(15)
        self.connects += 1
        return client

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            transport = self._client.get_transport() if self._client else None
            if transport is None or not transport.is_active():
                self.close()
                self._client = self._connect()
                transport = self._client.get_transport()
            assert transport is not None
            return transport

    def _sftp_client(self) -> paramiko.SFTPClient:
        with self._lock:
            self._transport()
            if (
                self._sftp is None
                or self._sftp.get_channel() is None
                or self._sftp.get_channel().closed
            ):
                assert self._client is not None
                self._sftp = self._client.open_sftp()
                self._sftp.get_channel().settimeout(self.target.command_timeout)
            return self._sftp

    def close(self) -> None:
        """Drop the connection; the next call opens a new one."""
        with self._lock:
            for closable in (self._sftp, self._client):
                try:
                    if closable is not None:
                        closable.close()
                except Exception:  # noqa: BLE001 - closing a dead connection may fail in any way
                    pass
            self._sftp = None
            self._client = None

    # -- retries ------------------------------------------------------------------------------

    def _classify(self, exc: BaseException) -> BackendError:
        where = f"{self.target.user}@{self.target.known_hosts_name}"
        if isinstance(exc, BackendError):
            return exc
        if isinstance(exc, paramiko.BadHostKeyException):
            return BackendError(
                f"host key for {where} CHANGED: expected {exc.expected_key.fingerprint}, got "
                f"{exc.key.fingerprint}; refusing to connect",
                permanent=True,
            )
        if isinstance(exc, _UnknownHostKey):
            return BackendError(f"{exc}; refusing to connect to {where}", permanent=True)
        if isinstance(exc, paramiko.AuthenticationException):
            return BackendError(f"authentication as {where} failed: {exc}", permanent=True)
        if isinstance(exc, FileNotFoundError):
            return BackendError(f"SSH key file missing: {exc.filename}", permanent=True)
        if isinstance(exc, _TRANSIENT):
            return BackendError(
                f"SSH to {where} failed: {type(exc).__name__}: {exc}", permanent=False
            )
        return BackendError(
            f"SSH to {where}: unexpected {type(exc).__name__}: {exc}", permanent=True
        )

    def _with_retries(
        self, op: Callable[[dict[str, bool]], T], *, retry_after_send: bool = True
    ) -> T:
        """Run `op`, retrying transient failures with exponential backoff.

        `op` sets flags['sent'] once the server may have acted; after that point a failure is
        retried only when `retry_after_send` is True.
        """
        attempt = 0
        while True:
            flags = {"sent": False}
            try:
                return op(flags)
            except Exception as exc:  # noqa: BLE001 - classified below, never swallowed
                error = self._classify(exc)
                self.close()  # a half-broken connection is never reused
                if error.permanent or attempt >= self.target.retries:
                    raise error from exc
                if flags["sent"] and not retry_after_send:
                    raise error from exc
                delay = min(
                    self.target.max_backoff_seconds, self.target.backoff_seconds * 2**attempt
                )
                attempt += 1
                self._sleep(delay)

    # -- commands -----------------------------------------------------------------------------

    def run(
        self, args: Sequence[str], *, timeout: float | None = None, retry_after_send: bool = True
    ) -> CommandResult:
        """Run a command given as an argument list; return its exit status and output.

        A non-zero exit status is returned, not raised: only the transport fails loudly.
        """
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise TypeError("args must be a sequence of str, never a shell string")
        command = shlex.join(args)

        def op(flags: dict[str, bool]) -> CommandResult:
            chan = self._transport().open_session(timeout=self.target.connect_timeout)
            try:
                chan.settimeout(timeout or self.target.command_timeout)
                flags["sent"] = True
                chan.exec_command(command)  # nosec B601 # shlex.join of an argument list
                chan.shutdown_write()
                out = chan.makefile("rb").read()
                err = chan.makefile_stderr("rb").read()
                rc = chan.recv_exit_status()
            finally:
                chan.close()
            if rc == -1:  # the channel closed with no exit status: the connection dropped
                raise EOFError("connection closed before the command finished")
            return CommandResult(
                tuple(args), rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
            )

        return self._with_retries(op, retry_after_send=retry_after_send)

    # -- files --------------------------------------------------------------------------------

    def home(self) -> str:
        """The login user's home directory (absolute)."""
        return self._with_retries(lambda flags: self._sftp_client().normalize("."))

    def upload_dir(self, local: Path, remote: str) -> str:
        """Copy the folder `local` to `remote` (relative to home, created as needed), keeping file
        modes; files already there are overwritten, so it is safe to repeat. Returns the absolute
        remote path."""
        local = Path(local)
        if not local.is_dir():
            raise BackendError(f"bundle folder missing: {local}", permanent=True)

        def op(flags: dict[str, bool]) -> str:
            sftp = self._sftp_client()
            _sftp_makedirs(sftp, remote)
            for root, dirs, files in os.walk(local):
                rel = Path(root).relative_to(local)
                target_dir = remote if rel == Path(".") else f"{remote}/{rel.as_posix()}"
                for d in dirs:
                    _sftp_makedirs(sftp, f"{target_dir}/{d}")
                for f in files:
                    src = Path(root) / f
                    sftp.put(str(src), f"{target_dir}/{f}")
                    sftp.chmod(f"{target_dir}/{f}", stat.S_IMODE(src.stat().st_mode))
            return sftp.normalize(remote)

        return self._with_retries(op)

    def read_file(self, path: str, *, max_bytes: int = 65536) -> bytes:
        """The last `max_bytes` bytes of a remote file; `RemoteFileNotFound` if it is absent."""

        def op(flags: dict[str, bool]) -> bytes:
            sftp = self._sftp_client()
            try:
                with sftp.open(path, "rb") as fh:
                    size = fh.stat().st_size or 0
                    fh.seek(max(0, size - max_bytes))
                    return fh.read(max_bytes)
            except OSError as exc:
                if exc.errno == errno.ENOENT or isinstance(exc, FileNotFoundError):
                    raise RemoteFileNotFound(path) from exc
                raise

        return self._with_retries(op)

    def write_file(self, path: str, data: bytes, *, mode: int = 0o600) -> None:
        """Write `data` to a remote file (relative paths: from home) with `mode`, replacing it
        whole: written beside it and renamed, so a reader never sees half a file. The file is
        created with `mode` before anything is written to it. Safe to repeat."""
        staging = f"{path}.part"

        def op(flags: dict[str, bool]) -> None:
            sftp = self._sftp_client()
            with sftp.open(staging, "wb") as fh:
                fh.chmod(mode)
                fh.write(data)
            sftp.posix_rename(staging, path)

        self._with_retries(op)


def _sftp_makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
    """mkdir -p over SFTP."""
    parts = [p for p in path.split("/") if p]
    current = "/" if path.startswith("/") else ""
    for part in parts:
        current = f"{current}{part}" if current in ("", "/") else f"{current}/{part}"
        try:
            sftp.stat(current)
        except OSError:
            sftp.mkdir(current)
