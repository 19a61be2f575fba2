"""`portal`, the command line of the research compute portal (docs/cli.md)."""

__version__ = "1.0.0"
