"""Standalone benchmark harness: PyTorch and MONAI only, no Django, nothing else of the portal.

Run `python -m benchmarks.harness run --help`. Copy the `benchmarks/harness/` folder (with an
empty `benchmarks/__init__.py` beside it) to a GPU node that has torch and monai installed.
"""
