"""Entry point: ``python -m launcher.workloads.ctxray <command>``."""

import sys

from .cli import main

sys.exit(main())
