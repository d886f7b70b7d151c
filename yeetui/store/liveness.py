"""Whether the process behind a run, a lease or a worker still runs, and whether it is still the same one."""

from __future__ import annotations

import os
from collections.abc import Callable


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


def process_start(pid: int | None) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat field 22); None when unknown
    (no such process, no /proc). A pid given to a new process gets a new start: together they name one."""
    if pid is None or pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return int(handle.read().rpartition(")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def process_gone(pid: int | None, start: int | None, *, is_alive: Callable[[int], bool] = pid_alive) -> bool:
    """Whether the process recorded as `pid`, started at `start`, has ended. This process is gone only when
    the record is of an earlier one that had the same pid (another start, or none recorded where one is
    known now). Another pid is gone when nothing runs under it, or what runs there started at another time
    (the pid was reused); with no start recorded or readable, a running pid counts as the same process."""
    if pid is None:
        return True
    if pid == os.getpid():
        return start != process_start(pid)
    if not is_alive(pid):
        return True
    now = process_start(pid) if start is not None else None
    return now is not None and now != start
