"""Sweeps that search and stop early: the spec's `early_stopping` and `search` (spec.py), the
ASHA rule (asha.py) and Optuna's samplers over the sweep's own rows (sampling.py). Pure, apart
from Optuna; launcher/services/sweeps.py applies them to a sweep's cells."""
