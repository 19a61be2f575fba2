"""Named fault-injection points for crash tests (a real worker killed at a precise moment).

Inert unless the environment variable PORTAL_FAULT_PAUSE names a point; then reaching that
point creates the file PORTAL_FAULT_FLAG (so the test knows the process is there) and sleeps,
so the test can kill -9 the process exactly there. Never set in production.
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def point(name: str) -> None:
    """Pause here if a test asked for it (see module doc); otherwise do nothing."""
    if os.environ.get("PORTAL_FAULT_PAUSE") != name:
        return
    flag = os.environ.get("PORTAL_FAULT_FLAG")
    if flag:
        Path(flag).write_text(str(os.getpid()))
    time.sleep(float(os.environ.get("PORTAL_FAULT_SECONDS", "120")))
