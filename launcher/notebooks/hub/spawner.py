"""`PortalSpawner`, the hub's one spawner class: it reads `user_options["backend"]` (set by the
portal, never by the user: only the `portal` service may start servers) and hands the server to
that backend's spawner (the wrapspawner pattern), delegating start, poll, stop and the state.

Backends are named in `PortalSpawner.backends`, "module:Class" strings resolved with importlib
only when a server of that backend starts (or is polled after a hub restart), so a backend whose
module is missing breaks only its own servers. Adding a backend: write its Spawner subclass and
add `c.PortalSpawner.backends = {..., "name": "package.module:Class"}` (docs/notebooks-hub.md)."""

from __future__ import annotations

import importlib
import signal

from jupyterhub.spawner import Spawner
from tornado import web
from traitlets import Any, Dict, Unicode, default

BACKENDS = {
    "local": "launcher.notebooks.hub.local:LocalNotebookSpawner",
    "slurm": "launcher.notebooks.hub.slurm:SlurmNotebookSpawner",
}

# What the hub sets on a spawner after creating it and before start(); the backend's spawner
# gets the same values (everything else comes from the same constructor arguments and config).
_RUNTIME = ("user_options", "api_token", "admin_access", "handler", "cert_paths")


def hear_sigint() -> None:
    """For the hub's configuration files: the hub stops a server or a managed service (the idle
    culler) with SIGINT first and waits `interrupt_timeout` (30 s) before SIGTERM. Started in a
    shell's background (`make run`'s `&`, a test suite run with `&`), the hub inherits SIGINT
    ignored and so would every child; Python's own handler instead is reset to the default on
    exec, so the children hear it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def resolve(spec: str) -> type[Spawner]:
    module_name, _, class_name = spec.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Spawner)):
        raise TypeError(f"{spec} is not a JupyterHub Spawner")
    return cls


class PortalSpawner(Spawner):
    backends = Dict(BACKENDS, config=True, help="Backend name -> 'module:Class' of its Spawner.")
    backend = Unicode("", help="The backend of the current server ('' when none).")
    child = Any(None, allow_none=True, help="The backend's Spawner of the current server.")
    child_state = Dict(help="The backend spawner's state, kept across hub restarts.")

    @default("apply_user_options")
    def _check_backend(self):
        def check(spawner, user_options):
            # Before anything starts: an unknown backend is the caller's 400.
            spawner._child_class(str((user_options or {}).get("backend", "")))

        return check

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._child_kwargs = kwargs

    def _child_class(self, backend: str) -> type[Spawner]:
        spec = self.backends.get(backend)
        if not backend:
            raise web.HTTPError(400, "user_options must name the backend (local, slurm ...)")
        if spec is None:
            raise web.HTTPError(
                400,
                f"unknown notebook backend {backend!r}; this hub knows "
                f"{', '.join(sorted(self.backends)) or 'none'}",
            )
        try:
            return resolve(spec)
        except (ImportError, AttributeError, TypeError) as error:
            raise web.HTTPError(
                500, f"notebook backend {backend!r} ({spec}) cannot be loaded: {error}"
            ) from error

    def _make_child(self, backend: str) -> Spawner:
        child = self._child_class(backend)(**self._child_kwargs)
        child.clear_state()
        if self.child_state:
            child.load_state(self.child_state)
        self.backend, self.child = backend, child
        return child

    def _sync(self, child: Spawner) -> Spawner:
        for name in _RUNTIME:
            setattr(child, name, getattr(self, name))
        return child

    def _current(self) -> Spawner | None:
        if self.child is None and self.backend:
            self._make_child(self.backend)
        return self._sync(self.child) if self.child is not None else None

    async def start(self):
        backend = str((self.user_options or {}).get("backend", ""))
        self.child_state = {}
        child = self._sync(self._make_child(backend))
        return await child.start()

    async def poll(self):
        child = self._current()
        if child is None:
            return 0
        status = await child.poll()
        self.child_state = child.get_state()
        return status

    async def stop(self, now=False):
        child = self._current()
        if child is not None:
            await child.stop(now=now)
            self.child_state = child.get_state()

    async def progress(self):
        child = self._current()
        if child is not None:
            async for event in child.progress():
                yield event

    def get_state(self):
        state = super().get_state()
        if self.child is not None:
            self.child_state = self.child.get_state()
        if self.backend:
            state.update(backend=self.backend, child_state=self.child_state)
        return state

    def load_state(self, state):
        super().load_state(state)
        self.backend = state.get("backend", "")
        self.child_state = state.get("child_state", {})
        self.child = None

    def clear_state(self):
        super().clear_state()
        if self.child is not None:
            self.child.clear_state()
        self.backend, self.child, self.child_state = "", None, {}
