"""Looking at processes from tests: whether one still runs."""

from __future__ import annotations

import os
from pathlib import Path


def gone(pid: int) -> bool:
    """The process no longer runs: it does not exist, or it is a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
