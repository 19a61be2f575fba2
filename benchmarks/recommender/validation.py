"""Turn untrusted input (API JSON, form data) into a WorkloadRequest, or say what is wrong.

Every problem is collected per field, with the allowed values or range, so the API can answer
one 400 listing them all instead of failing on the first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.recommender.types import (
    NEEDS,
    REQUEST_PRECISIONS,
    SENSITIVITY_TIERS,
    STRATEGIES,
    Workload,
    WorkloadRequest,
)

# Ranges that catch typos and nonsense, not real limits of any system.
LIMITS: dict[str, tuple[float, float]] = {
    "image_size": (8, 4096),
    "dataset_samples": (1, 10**12),
    "epochs": (0.01, 100_000),
    "gpus": (1, 4096),
    "batch_size": (1, 65_536),
    "budget": (0, 10**9),
    "deadline_hours": (0.01, 100_000),
}
SEQUENCE_LIMITS = (1, 131_072)  # tokens per sample for dims 1


class RecommendationInputError(ValueError):
    """Invalid workload description; `errors` maps field name to a list of messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


def _number(
    data: Mapping[str, Any],
    name: str,
    errors: dict[str, list[str]],
    *,
    integer: bool,
    required: bool = True,
    limits: tuple[float, float] | None = None,
) -> float | None:
    raw = data.get(name)
    if raw is None or raw == "":
        if required:
            errors.setdefault(name, []).append("This field is required.")
        return None
    lo, hi = limits or LIMITS[name]
    try:
        # bool is an int in Python; true/false for a count is a client bug, not 1/0.
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw)
        if not math.isfinite(value) or (integer and value != int(value)):
            raise ValueError
    except (TypeError, ValueError):
        kind = "a whole number" if integer else "a number"
        errors.setdefault(name, []).append(f"Must be {kind} between {lo:g} and {hi:g}.")
        return None
    if not lo <= value <= hi:
        errors.setdefault(name, []).append(f"Must be between {lo:g} and {hi:g}; got {value:g}.")
        return None
    return int(value) if integer else value


def _whole(
    data: Mapping[str, Any],
    name: str,
    errors: dict[str, list[str]],
    *,
    limits: tuple[float, float] | None = None,
) -> int | None:
    """`_number` for a whole number, typed as one."""
    value = _number(data, name, errors, integer=True, limits=limits)
    return None if value is None else int(value)


def _choice(
    data: Mapping[str, Any],
    name: str,
    allowed: Iterable[str],
    errors: dict[str, list[str]],
    default: str | None = None,
) -> str | None:
    allowed = tuple(allowed)
    raw = data.get(name, default)
    if raw in (None, ""):
        raw = default
    if raw is None:
        errors.setdefault(name, []).append(
            f"This field is required; allowed: {', '.join(allowed)}."
        )
        return None
    if raw not in allowed:
        errors.setdefault(name, []).append(f"Unknown value {raw!r}; allowed: {', '.join(allowed)}.")
        return None
    return str(raw)


def _needs(data: Mapping[str, Any], errors: dict[str, list[str]]) -> tuple[str, ...]:
    raw = data.get("needs") or ()
    if isinstance(raw, str):
        raw = [s.strip() for s in raw.split(",") if s.strip()]
    if not isinstance(raw, (list, tuple)):
        errors["needs"] = [f"Must be a list; allowed items: {', '.join(NEEDS)}."]
        return ()
    bad = [n for n in raw if n not in NEEDS]
    if bad:
        errors["needs"] = [f"Unknown {bad!r}; allowed items: {', '.join(NEEDS)}."]
        return ()
    return tuple(dict.fromkeys(raw))


def _model_and_dims(
    data: Mapping[str, Any], workloads: Iterable[Workload], errors: dict[str, list[str]]
) -> tuple[Workload | None, int | None]:
    by_model: dict[str, dict[int, Workload]] = {}
    for w in workloads:
        by_model.setdefault(w.model, {})[w.dims] = w
    model = _choice(data, "model", sorted(by_model), errors)
    dims = _whole(data, "dims", errors, limits=(1, 3))
    if model is None or dims is None:
        return None, dims
    if dims not in by_model[model]:
        allowed = ", ".join(str(d) for d in sorted(by_model[model]))
        errors.setdefault("dims", []).append(f"{model} is available with dims {allowed}.")
        return None, dims
    return by_model[model][dims], dims


def parse_request(data: Mapping[str, Any], workloads: Iterable[Workload]) -> WorkloadRequest:
    """Validate `data` against the known `workloads`; raise RecommendationInputError if invalid.

    `image_size` may be omitted (or 0): it then defaults to the workload's reference size
    (224 px, 128 voxels per side, 128 tokens). For dims 1 it is the sequence length in tokens.
    """
    errors: dict[str, list[str]] = {}
    workload, dims = _model_and_dims(data, workloads, errors)
    size_raw = data.get("image_size")
    image_size: int | None = None
    if workload is not None and size_raw in (None, "", 0, "0"):
        image_size = workload.reference_size
    elif size_raw not in (None, "", 0, "0"):
        image_size = _whole(
            data, "image_size", errors, limits=SEQUENCE_LIMITS if dims == 1 else None
        )
    values = {
        n: _number(data, n, errors, integer=n != "epochs")
        for n in ("dataset_samples", "epochs", "gpus", "batch_size")
    }
    optional = {
        n: _number(data, n, errors, integer=False, required=False)
        for n in ("budget", "deadline_hours")
    }
    precision = _choice(data, "precision", REQUEST_PRECISIONS, errors)
    sensitivity = _choice(data, "data_sensitivity", SENSITIVITY_TIERS, errors)
    strategy = _choice(data, "strategy", ("auto",) + STRATEGIES, errors, default="auto")
    needs = _needs(data, errors)
    if strategy == "single" and values["gpus"] not in (None, 1):
        errors.setdefault("strategy", []).append(
            "single means one GPU; use ddp, fsdp or deepspeed."
        )
    if errors or workload is None:
        raise RecommendationInputError(errors or {"model": ["Unknown model."]})
    # No errors, so every required field parsed (each None above recorded an error).
    samples, epochs = values["dataset_samples"], values["epochs"]
    gpus, batch_size = values["gpus"], values["batch_size"]
    assert samples is not None and epochs is not None and gpus is not None
    assert batch_size is not None and image_size is not None
    assert precision is not None and sensitivity is not None and strategy is not None
    return WorkloadRequest(
        model=workload.model,
        dims=workload.dims,
        image_size=image_size,
        needs=needs,
        precision=precision,
        data_sensitivity=sensitivity,
        strategy=strategy,
        dataset_samples=int(samples),  # whole numbers already (integer=True)
        epochs=epochs,
        gpus=int(gpus),
        batch_size=int(batch_size),
        budget=optional["budget"],
        deadline_hours=optional["deadline_hours"],
    )
