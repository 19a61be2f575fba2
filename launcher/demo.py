"""Demo data for the launcher (called by `manage.py seed_demo`; idempotent): completes the
`local-slurm` facility's backend settings from what `make services` wrote, with the keys
launcher/slurm/backend.py (slurm_settings) reads."""

from __future__ import annotations

import sys

from allocations.demo import read_services_env
from allocations.models import Facility


def local_slurm_settings() -> dict:
    env = read_services_env()
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return {
        "host": env.get("SSH_HOST", "127.0.0.1"),
        "port": int(env.get("SSH_PORT", "2222")),
        "user": env.get("SSH_USER", "portal"),
        "key_path": env.get("SSH_KEY_PATH", "/var/lib/portal-services/ssh/id_ed25519"),
        "host_key": env.get("SSH_KNOWN_HOSTS", "/var/lib/portal-services/ssh/known_hosts"),
        "cluster": env.get("SLURM_CLUSTER", "portal"),
        "partition": env.get("SLURM_PARTITION", "gpu"),
        # The cluster user cannot read the portal's venv interpreter (under /root): the system
        # python of the same version runs with the venv's site-packages on PYTHONPATH.
        "python": f"/usr/bin/python{version}",
        "python_path": f"{sys.prefix}/lib/python{version}/site-packages",
        # Project datasets live in <storage_root>/<project code>/ (relative: the SSH user's
        # home); see docs/security.md.
        "storage_root": "portal-project-data",
    }


def seed() -> None:
    Facility.objects.filter(slug="local-slurm").update(backend_settings=local_slurm_settings())
