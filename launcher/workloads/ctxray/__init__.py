"""CT/X-ray COVID-19 classification workload: synthetic data, training, metrics.

Standalone: PyTorch, MONAI, numpy, pydicom, nibabel and Pillow only (see requirements.txt); no
Django and nothing else from the portal, because it runs on GPU nodes. Use it as
``python -m launcher.workloads.ctxray {synth,train}`` or from Python::

    from launcher.workloads.ctxray import TrainConfig, train, synthesize
    synthesize("data", "ct", n=60, size=64, seed=0)
    result = train(TrainConfig(data="data", out="run", model="resnet18", epochs=3, size=64))
"""

from typing import Any

from .config import EXIT_PREEMPTED, EXIT_USAGE, MODEL_NAMES, TrainConfig, UsageError

__all__ = [
    "EXIT_PREEMPTED",
    "EXIT_USAGE",
    "MODEL_NAMES",
    "TrainConfig",
    "UsageError",
    "synthesize",
    "train",
]


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m ... synth` and the portal's imports of config do not load torch.
    if name == "train":
        from .trainer import train

        return train
    if name == "synthesize":
        from .synth import synthesize

        return synthesize
    raise AttributeError(name)
