# The real JupyterHub fixtures (tests/notebooks/hubfixture.py): `hub`, `hub_process`, `hub_extra_env`.
from tests.notebooks.hubfixture import hub, hub_extra_env, hub_process, provider_key  # noqa: F401
