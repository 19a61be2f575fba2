"""The trainer samples utilisation into progress.json: CPU utilisation of its process where no
GPU exists (here), GPU utilisation and memory through NVML where one does (NVML is faked: no
GPU on these machines), and the portal stores the mean on the Job."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
import types
from decimal import Decimal

import pytest
from django.utils import timezone

from launcher.workloads.ctxray.progress import Progress
from launcher.workloads.ctxray.utilisation import UtilisationSampler


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


def test_without_a_gpu_it_samples_cpu_utilisation_into_progress(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # as on a machine without pynvml
    progress = Progress(str(tmp_path), epochs=1, steps_per_epoch=2, images_per_step=4, enabled=True)
    _busy(0.3)
    progress.write("running", 0, 1, 0.5)
    _busy(0.3)
    progress.write("running", 0, 2, 0.4)
    data = json.loads((tmp_path / "progress.json").read_text())
    util = data["utilisation"]
    assert util["source"] == "cpu" and util["samples"] == 2
    # A busy loop used some CPU; how much depends on the machine's other load.
    assert 0 < util["mean_percent"] <= 100 and util["cpus"] >= 1


def test_with_nvml_it_samples_gpu_utilisation_and_memory(monkeypatch):
    handles = {0: "gpu0", 1: "gpu1"}
    rates = {"gpu0": 90, "gpu1": 50}
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: handles[i],
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=rates[h]),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=2 * 2**30),
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    sampler = UtilisationSampler()
    sampler.sample()
    rates["gpu0"] = 70
    sampler.sample()
    assert sampler.summary() == {
        "source": "gpu",
        "samples": 2,
        "mean_percent": 65.0,
        "memory_mean_mib": 2048.0,
        "devices": 2,
    }


@pytest.mark.django_db
def test_the_portal_stores_the_mean_on_the_job(project, researcher, facility):
    from allocations.models import Allocation
    from launcher.backends.contract import Fetched
    from launcher.models import Job
    from launcher.services import job_record_files

    today = timezone.localdate()
    allocation = Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(5),
        start_date=today,
        end_date=today + dt.timedelta(days=5),
        status="active",
    )
    job = Job.objects.create(
        allocation=allocation, created_by=researcher, token="portal-job-u1", state="running"
    )
    job_record_files(
        job=job,
        fetched=Fetched(
            progress={"epoch": 1, "step": 2, "utilisation": {"source": "gpu", "mean_percent": 71.5}}
        ),
    )
    job.refresh_from_db()
    assert (job.utilisation_mean, job.utilisation_source) == (71.5, "gpu")
    job_record_files(job=job, fetched=Fetched(progress={"utilisation": {"source": "x"}}))
    job.refresh_from_db()
    assert job.utilisation_mean == 71.5  # nonsense is ignored, the last good mean kept
