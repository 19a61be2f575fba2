"""A notebook session: one JupyterHub named server on an allocation, owned by one user.

It reserves `gpus x hours` on the allocation's ledger from its start until it is charged (or
failed); the charge is the backend's own record (`gpu_seconds`), copied once.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.utils import timezone


class NotebookSession(models.Model):
    class State(models.TextChoices):
        STARTING = "starting", "Starting"
        RUNNING = "running", "Running"
        STOPPING = "stopping", "Stopping"
        STOPPED = "stopped", "Stopped"
        FAILED = "failed", "Failed"

    FINAL = (State.STOPPED, State.FAILED)
    # States in which the hub holds (or may hold) a server: followed by the sync beat task.
    LIVE = (State.STARTING, State.RUNNING, State.STOPPING)

    allocation = models.ForeignKey(
        "allocations.Allocation", on_delete=models.PROTECT, related_name="notebook_sessions"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="notebook_sessions"
    )
    gpus = models.PositiveSmallIntegerField(default=0)
    # The wall limit: the backend stops the server there; the ledger reserves gpus x hours.
    hours = models.DecimalField(max_digits=6, decimal_places=2)
    state = models.CharField(
        max_length=10, choices=State.choices, default=State.STARTING, db_index=True
    )
    # Why it stopped, failed or waits (the hub's message, the scheduler's pending reason).
    reason = models.CharField(max_length=300, blank=True)
    server_name = models.CharField(max_length=64, blank=True)
    url = models.CharField(max_length=500, blank=True)
    workdir = models.CharField(max_length=500, blank=True)
    run_dir = models.CharField(max_length=500, blank=True)
    # The user_options sent to the hub (backend, datasets, backend_options...), for the record.
    options = models.JSONField(default=dict, blank=True)
    # The backend's id of the run (a Slurm job id, a local pid) once it is known.
    external_id = models.CharField(max_length=120, blank=True)

    # The ledger: what it reserves while not charged, and what was charged (exact seconds).
    reserved_gpu_seconds = models.BigIntegerField(default=0)
    reserved_cost = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    gpu_seconds = models.BigIntegerField(default=0)
    wall_seconds = models.BigIntegerField(default=0)
    charged_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    last_activity = models.DateTimeField(null=True, blank=True)
    # When the hub accepted the start (201/202): before it, a session the hub does not know is
    # still being started, after it, one the hub no longer has has ended.
    spawned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["allocation", "state"])]

    def __str__(self) -> str:
        return f"Notebook #{self.pk} ({self.get_state_display()})"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL

    @property
    def reserved_now(self) -> int:
        """GPU-seconds this session holds on the ledger now (0 once charged or failed)."""
        if self.charged_at is not None or self.state == self.State.FAILED:
            return 0
        return int(self.reserved_gpu_seconds)

    @staticmethod
    def reservation_for(*, gpus: int, hours: Decimal) -> int:
        """GPU-seconds reserved for `gpus` over `hours` of wall time (the most it may use:
        the backend stops it at `hours`). A CPU-only session (0 GPUs) reserves nothing."""
        return int(Decimal(gpus) * Decimal(hours) * 3600)
