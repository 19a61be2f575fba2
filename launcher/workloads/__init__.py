"""Standalone workloads shipped to compute nodes. Nothing here imports Django or the portal."""
