"""The `local` backend: jobs as detached child processes on the portal host (what `make run`
uses). backend.py is the registry entry, LocalBackend (Django side); cells.py reads and writes the job folders;
supervisor.py is the stdlib-only process that runs one cell and records how it ended.

Nothing in this package's __init__ imports Django: supervisor.py runs as
`python -m launcher.local.supervisor CELL_DIR` without it.
"""
