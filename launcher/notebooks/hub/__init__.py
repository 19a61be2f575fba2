"""JupyterHub's side of notebook sessions (docs/notebooks-hub.md): the hub's configuration and
its spawners. Loaded by JupyterHub, not by Django: nothing here imports Django or the portal."""
