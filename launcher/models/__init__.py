"""The launcher's data: jobs (one training run each) and sweeps (a grid of jobs)."""
from .job import Job
from .sweep import Sweep

__all__ = ["Job", "Sweep"]
