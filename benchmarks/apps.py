from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save

from core.versions import catalogue_changed


class BenchmarksConfig(AppConfig):
    name = "benchmarks"
    verbose_name = "Benchmarks"

    def ready(self) -> None:
        # Results and workloads are the catalogue the launch forms predict wall time from: a
        # change gives it a new version (core/versions.py), whoever saves it.
        for model in ("benchmarks.BenchmarkResult", "benchmarks.Workload"):
            for signal in (post_save, post_delete):
                signal.connect(catalogue_changed, sender=model, dispatch_uid=f"catalogue:{model}")
