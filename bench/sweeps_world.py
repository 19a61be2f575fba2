"""The world of bench_sweeps.py: the grid and the bench's fixed parameters, the throwaway
portal's environment, the machine's description, the seeded portal (a researcher with an active
allocation on `local`, two slots), and the grid and shared params each sweep is launched with.
"""

from __future__ import annotations

import os
import platform
from decimal import Decimal
from pathlib import Path
from typing import Any

# The grid: 18 configurations (one model, 6 learning rates x 3 weight decays) x 2 folds.
# Listed as a user would write them (largest first); the grid expands model, lr, lr_step,
# weight_decay, fold from the outermost, so configurations arrive in this order.
MODELS = ["resnet18"]
LRS = [1e-1, 1e-2, 3e-3, 1e-3, 1e-4, 1e-5]
WEIGHT_DECAYS = [1e-2, 1e-4, 0.0]
LR_STEPS = [10]
FOLDS = 2
EPOCHS = 27
ETA = 3
MIN_EPOCHS = 1
# Shared by every cell: a synthetic CT set of SYNTHETIC_N images (3 per patient) at 32 px, one
# torch thread per run (two runs share the two cores), the trainer's own patience off (every
# cell of the full grid runs its 27 epochs), a fixed seed. `deterministic` is left off: on the
# CPU with one thread the runs are bit-for-bit reproducible without it (the table checks it:
# a configuration run in two sweeps has the same mean), and switching it on imports
# torch._dynamo at start-up (~2.8 s per cell, all of it charged).
# SYNTHETIC_N: every cell, stopped or not, pays a fixed ~8 s (the trainer's start-up, mostly
# importing MONAI and torch, and its end), and ASHA saves only epochs. At 96 images (an epoch
# ~1 s) that fixed cost was two thirds of ASHA's charge and ASHA came to 0.36 of the full grid;
# at 144 (an epoch ~1.5-1.8 s, 72 training images a fold) training dominates.
SYNTHETIC_N = 144
FIXED: dict[str, Any] = {
    "epochs": EPOCHS,
    "patience": EPOCHS,
    "size": 32,
    "batch_size": 8,
    "threads": 1,
    "bootstrap": 10,
    "seed": 0,
}
METRIC = "roc_auc"
CONCURRENCY = 2
SLOTS = 2
# Each cell's wall-time limit. It is also what a live cell reserves, and a search's budget
# counts the live cells' reservations (launcher/services/sweeps.py `_budget_allows`), so it is
# kept short: a cell here runs 40-70 s (a cell past it would end `timeout`, shown per row).
WALL_TIME_MINUTES = 2
POLL_SECONDS = 0.5
SWEEP_TIMEOUT_S = 40 * 60
CHARGE_WAIT_S = 60  # a cell's exit.json comes a moment after its final state
TARGET_RATIO = 1 / 3


def _environment(tmp: Path) -> None:
    """A throwaway portal in `tmp`, whatever `make bench` exported."""
    os.environ.update(
        DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}",
        PORTAL_VAR_DIR=str(tmp),
        CELERY_TASK_ALWAYS_EAGER="true",
        CELERY_BROKER_URL="memory://",
        CACHE_URL="",
        SECRET_KEY="bench",
        DEBUG="false",
        EMAIL_URL="locmem://",
        PORTAL_LOCAL_RUN_AS_MEMBERS="no",
        DJANGO_SETTINGS_MODULE="portal.settings",
    )
    os.environ.pop("PORTAL_LOCAL_JOBS_DIR", None)
    os.environ.pop("PORTAL_LOCAL_SECONDS_PER_MINUTE", None)


def _machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPU cores ({model or platform.processor() or 'unknown CPU'}), "
        f"load average {load}"
    )


def _setup() -> tuple[Any, Any]:
    """Migrate, seed the demo world, give the researcher an active allocation on `local`
    (1000 GPU-hours) and the facility two slots. Returns (user, allocation)."""
    import datetime as dt

    import django

    django.setup()
    import logging

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    logging.getLogger("celery").setLevel(logging.WARNING)  # no line per inline task
    call_command("migrate", verbosity=0)
    call_command("seed_demo", password="demo", stdout=open(os.devnull, "w"))
    from allocations.models import Allocation, Facility, Project

    facility = Facility.objects.get(slug="local")
    # The seeded `local` has one node type of one CPU "accelerator": one slot. Two, for the
    # two cores (launcher/local/places.py `facility_slots`).
    facility.backend_settings = {**(facility.backend_settings or {}), "slots": SLOTS}
    facility.save(update_fields=["backend_settings"])
    today = dt.date.today()
    allocation = Allocation.objects.create(
        project=Project.objects.get(code="ABC-DEF-001"),
        facility=facility,
        kind="full",
        gpu_hours=Decimal(1000),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status=Allocation.Status.ACTIVE,
    )
    # As provisioning leaves it: named and activated (usage is read only for such allocations,
    # launcher/selectors.py `allocations_owing_usage`).
    from django.utils import timezone

    allocation.account_name = allocation.default_account_name()
    allocation.activated_at = timezone.now()
    allocation.save(update_fields=["account_name", "activated_at"])
    return get_user_model().objects.get(username="researcher"), allocation


def _grids(quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the grid, the shared params)."""
    fixed = dict(FIXED)
    lrs, decays = LRS, WEIGHT_DECAYS
    if quick:  # a smoke test of the bench itself: 3 configurations, 4 epochs
        fixed.update(epochs=4, patience=4)
        lrs, decays = [1e-2, 1e-3, 1e-4], [1e-4]
    grid = {
        "models": MODELS,
        "lrs": lrs,
        "lr_steps": LR_STEPS,
        "weight_decays": decays,
        "folds": FOLDS,
        "fixed": fixed,
    }
    return grid, {"dataset": "synthetic-ct", "synthetic_n": SYNTHETIC_N}


def _configurations(grid: dict[str, Any]) -> int:
    return (
        len(grid["models"]) * len(grid["lrs"]) * len(grid["lr_steps"]) * len(grid["weight_decays"])
    )
