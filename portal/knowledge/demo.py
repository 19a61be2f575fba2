"""The seed's System-Tooling Matrix (Turing, seed 004) and a few walkthroughs (one per system,
and one about no system: choosing a sweep). Idempotent."""

from __future__ import annotations

from django.db import transaction

from allocations.models import Facility

from . import services
from .models import Support, System, Tool, Walkthrough

SYSTEMS = [
    ("JADE2", "jade2"),
    ("Baskerville", "baskerville"),
    ("COSMA8", "cosma8"),
    ("Azure", "azure"),
]
# The seed's matrix: ✓ -> yes, ✗ -> no, blank -> not yet tested.
Y, N, U = "yes", "no", "unknown"
MATRIX = [
    ("PyTorch", "https://pytorch.org/docs/", [Y, Y, Y, U]),
    ("Lightning", "https://lightning.ai/docs/pytorch/", [Y, Y, Y, U]),
    ("Fabric", "https://lightning.ai/docs/fabric/", [U, U, U, U]),
    ("DeepSpeed", "https://www.deepspeed.ai/", [Y, Y, Y, U]),
    ("FSDP", "https://pytorch.org/docs/stable/fsdp.html", [Y, Y, Y, U]),
    (
        "Tensor Parallel",
        "https://pytorch.org/docs/stable/distributed.tensor.parallel.html",
        [U, U, U, U],
    ),
    ("MPI", "https://www.mpi-forum.org/", [Y, Y, Y, U]),
    ("oneCCL", "https://github.com/oneapi-src/oneCCL", [U, U, U, U]),
    ("Accelerate", "https://huggingface.co/docs/accelerate/", [U, U, U, U]),
    ("AzureML", "https://learn.microsoft.com/azure/machine-learning/", [N, N, N, Y]),
]

WALKTHROUGHS = [
    (
        "baskerville-quick-start",
        "Baskerville quick start",
        "baskerville",
        "Log in, load PyTorch and run a first GPU job on Baskerville's A100 nodes.",
        """
## Before you start

You need a Baskerville project (a trial is approved at once) and an account in it.

## Run a first job

```bash
module purge; module load baskerville
module load bask-apps/live PyTorch/2.0.1-foss-2022a-CUDA-11.7.0
sbatch --qos=bham --gpus-per-task=1 --time=1:0:0 train.sh
```

Use `--gpus-per-task=4` for a whole node; `B-A100-80` nodes are for models that do not fit in 40 GB.

## Notebooks

Baskerville's portal runs JupyterLab on a GPU node: choose the project and the hours you need.
""",
    ),
    (
        "jade2-quick-start",
        "JADE2 quick start",
        "jade2",
        "Submit single-GPU and 8-GPU PyTorch jobs to JADE2's V100 nodes.",
        """
## Partitions

JADE2 nodes have 8 NVIDIA V100 32 GB GPUs. Use `small` for one GPU and `big` for a whole node.

```bash
sbatch --partition=small --gres=gpu:1 --time=2:00:00 train.sh
```

## Tips

* V100s have no bf16: use fp16 mixed precision (`precision="16-mixed"` in Lightning).
* Keep data on the local `/raid` disk of the node for input-bound training.
""",
    ),
    (
        "dawn-xpu-lightning",
        "Using XPUs on Dawn with Lightning",
        "dawn",
        "Train with PyTorch Lightning on Dawn's Intel Max 1550 GPUs (XPUs).",
        """
## Configure the accelerator for use with XPU

```python
# XPUAccelerator must be imported before PyTorch or Lightning
import xpuaccelerator as xpu

# Import OneCCL bindings for PyTorch
import oneccl_bindings_for_pytorch

# Import intel_extension_for_PyTorch
import intel_extension_for_pytorch as ipex
```

You'll need to copy the `xpuaccelerator.py` file somewhere Python can find it: if you install
the project with `pip install -e .`, copy it into the project's root directory.

## Configure precision and callbacks

```python
if torch.xpu.is_available():
    torch.set_float32_matmul_precision("high")
    callback_list.append(callbacks.XPUMetricsCallback())
```

The optional `XPUMetricsCallback` resets the peak-memory counter at the start of each epoch
(`torch.xpu.reset_peak_memory_stats`) and reports the epoch time and the peak memory
(`torch.xpu.max_memory_allocated`) at its end, reduced across ranks.
""",
    ),
    (
        "azure-getting-started",
        "Azure: getting started",
        "azure",
        "Trial credits, brief and full requests, and Trusted Research Environments on Azure.",
        """
## Which request?

| You want | Request |
|---|---|
| to try the cloud | a trial credit |
| cloud paid by your project | a brief request |
| cloud on core funds | a full request |

## Sensitive data

Special-category data only goes into a **Trusted Research Environment**. Say so in the request.

## AzureML

AzureML runs training jobs on managed GPU clusters; the other tools of the matrix have not been
tested on Azure yet.
""",
    ),
    (
        "sweeps-grid-random-tpe-early-stopping",
        "Sweeps: grid, random, TPE, early stopping",
        None,  # about the portal's sweeps, on any system
        "Which way to search hyper-parameters, and when ASHA early stopping saves GPU-hours.",
        """
A sweep trains one run per configuration (model, learning rate, LR step, weight decay) and fold.
It either runs every point of a grid or draws configurations with a random or TPE search, and
it may stop poor configurations early (ASHA).

## When to use which

| Use | When | Not when |
|---|---|---|
| **Grid** | a small space you want exhaustively, every configuration on every fold | wide or continuous ranges: the cells multiply |
| **Random** | wide, continuous ranges (a learning rate from 1e-5 to 1e-1); every trial runs in parallel | a few values to compare one by one |
| **TPE** | expensive trials run a few at a time: each new one learns from those that ended | under about 10 trials: it draws like random until then |
| **ASHA** | many configurations whose ranking settles in the first epochs | models whose ranking flips late, such as long warm-ups |

ASHA compares configurations at rungs (after 1, 3, 9, ... epochs with eta 3) on the validation
metric averaged over folds; eta 3 keeps the top third at each rung and stops the rest on every
fold. A stopped run is charged what it ran and its reservation is released at once.

## Launch one

```bash
echo "preset: claire" > claire.yaml
portal sweeps launch --allocation 1 --grid claire.yaml --early-stop asha --eta 3 \\
    --search tpe --trials 40 --estimate
```

`--estimate` shows the worst case (every run to its last epoch) and the expected case from the
rung schedule, and launches nothing; leave it out to launch. A sweep with a search or early
stopping reserves only the runs it has released (at most its concurrency), not the whole sweep.

## Reading the results

The sweep's leaderboard shows how far each configuration got (its rung), and the sweep shows
the GPU-hours early stopping saved: the epochs not run times the configuration's measured
seconds per epoch, an estimate.
""",
    ),
]


@transaction.atomic
def seed() -> None:
    for order, (name, slug) in enumerate(SYSTEMS):
        System.objects.get_or_create(
            name=name,
            defaults={"order": order, "facility": Facility.objects.filter(slug=slug).first()},
        )
    for order, (tool, url, cells) in enumerate(MATRIX):
        Tool.objects.get_or_create(name=tool, defaults={"url": url, "order": order})
        for (system, _), status in zip(SYSTEMS, cells):
            # Cells edited in the admin since are kept: only missing ones are added.
            if not Support.objects.filter(tool__name=tool, system__name=system).exists():
                services.matrix_set(tool=tool, system=system, status=status)
    for slug, title, facility, summary, body in WALKTHROUGHS:
        if Walkthrough.objects.filter(slug=slug).exists():
            continue
        services.walkthrough_save(
            slug=slug,
            title=title,
            summary=summary,
            body_markdown=body.strip(),
            facility=Facility.objects.filter(slug=facility).first() if facility else None,
        )
