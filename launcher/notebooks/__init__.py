"""Interactive notebook sessions on an allocation (issue 24): the portal side.

The portal is JupyterHub's control plane: it reserves GPUs x hours on the ledger, starts and
stops one named server per session through the hub's REST API (hubapi.py), follows the hub's
view in a beat task, and charges what the backend recorded. The hub itself (config, spawners)
lives in `hub/`, which imports no Django. See docs/notebooks.md.
"""
