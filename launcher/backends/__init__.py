"""The backend seam: the contract every compute backend meets (contract.py: the Protocol, its
capabilities, the errors and the facts it returns) and the registry of backends (registry.py:
one entry per Facility.backend). The implementations live beside it, one package each:
launcher/slurm/, launcher/local/, launcher/cloud/ (with their backend-only types).

Nothing in this package imports Django at run time, so its pieces can be tested alone.
"""
