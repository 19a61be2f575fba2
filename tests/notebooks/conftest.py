# The real JupyterHub fixtures (tests/notebooks/hubfixture.py): `hub`, `hub_process`.
from tests.notebooks.hubfixture import hub, hub_process, provider_key  # noqa: F401
