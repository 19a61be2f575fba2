"""The unit a facility's hours are counted in: GPU-hours, or CPU-hours where it has no GPUs.

The ledger counts what a facility's backend charges: wall time x the accelerators a run holds
(allocations/ledger.py). On a GPU facility that is GPU-seconds. On a CPU-only one (every node
type's `device` is "cpu", as the `local` workstation's `local-cpu`) a run holds CPU slots
instead, each `cpu_cores / accelerators_per_node` of the node's cores for one process
(launcher/local: `facility_slots`), and the same columns count CPU-seconds: a "GPU" there was
always a CPU. The API keeps its field names (`gpu_hours`, `gpus`, ...: the contract, DESIGN.md
"Public surface") and says which unit they are in (`unit`); the forms, pages and messages that
show one facility's figures take their words from here (docs/ledger.md, "The unit", lists them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


class _NodeFacts(Protocol):
    device: str
    cpu_cores: int
    accelerators_per_node: int


@dataclass(frozen=True)
class Unit:
    """What one accelerator is called here, and its hours and seconds."""

    key: str  # "gpu" | "cpu"
    one: str  # "GPU" | "CPU"
    many: str  # "GPUs" | "CPUs"
    cores: int | None = None  # CPU cores per CPU (slot), when the node types agree on it

    @property
    def hour(self) -> str:
        return f"{self.one}-hour"

    @property
    def hours(self) -> str:
        return f"{self.one}-hours"

    @property
    def seconds(self) -> str:
        return f"{self.one}-seconds"

    @property
    def is_cpu(self) -> bool:
        return self.key == "cpu"

    @property
    def per(self) -> str:
        """What one of them is, for a help text ("" for a GPU)."""
        if not self.is_cpu:
            return ""
        cores = f"{self.cores} core{'' if self.cores == 1 else 's'}" if self.cores else "cores"
        return (
            f"This facility has no GPUs: one CPU here is {cores} of a node for one process (a "
            f"training run or a notebook), and its hours are counted in CPU-hours (wall time x "
            f"CPUs)."
        )

    @property
    def brief(self) -> str:
        """`per` in a few words, for a form field's help ("" for a GPU)."""
        if not self.is_cpu:
            return ""
        cores = f"{self.cores} core{'' if self.cores == 1 else 's'}" if self.cores else "cores"
        return f"No GPUs here: one CPU is {cores} for one process."

    def count(self, n: Any) -> str:
        """ "1 GPU", "2 GPUs", "1 CPU (2 cores)"."""
        text = f"{n} {self.one if n == 1 else self.many}"
        if self.is_cpu and self.cores:
            text += f" ({n * self.cores if isinstance(n, int) else n} cores)"
        return text

    def of(self, n: Any) -> str:
        """The noun for `n` of them, without the number: "GPU" or "GPUs"."""
        return self.one if n == 1 else self.many


GPU = Unit("gpu", "GPU", "GPUs")
CPU = Unit("cpu", "CPU", "CPUs")  # cores per CPU unknown: a list row's unit (`of_row`)


def of_row(row: Any) -> Unit:
    """The unit of a list's row annotated with `cpu_only` (allocations/list_selectors.py):
    CPU where its facility has only CPU node types, GPU otherwise."""
    return CPU if getattr(row, "cpu_only", False) else GPU


def unit_of(node_types: Iterable[_NodeFacts]) -> Unit:
    """The unit of a facility with these node types: CPU where every one is a CPU node type,
    GPU otherwise (no node types yet: GPU, the portal's premise)."""
    nodes = list(node_types)
    if not nodes or any(n.device != "cpu" for n in nodes):
        return GPU
    each = {n.cpu_cores // max(n.accelerators_per_node, 1) for n in nodes if n.cpu_cores}
    return Unit("cpu", "CPU", "CPUs", cores=each.pop() if len(each) == 1 else None)
