"""Whether the process behind a run, a lease or a worker still runs."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this id is running (signal 0 checks without sending anything). A zombie —
    exited, not yet reaped, common under container inits that never reap — counts as dead."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, it is just not ours to signal
        return True
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return True
