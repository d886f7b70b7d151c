"""Launch leases: how a scheduler taking over another's claimed triggers knows that the other's launches are over.

A trigger is claimed in the store under a process id, and a claim whose process is gone is taken over by the next
scheduler that looks. But the process that starts a trigger's run is not the scheduler: it is the `yeetui agents
start` the scheduler started, which goes on when the scheduler is killed, and records a run nobody hears of. So a
scheduler holds a lease — an exclusive `flock` on `<lease dir>/<its pid>.lock` — from its first launch until it
ends, and hands the locked file to every launch it starts (an inherited descriptor shares the lock). The lock is
free only once the scheduler and every launch it started are gone; only then is its claim taken over, and a run
that a finished launch recorded is found rather than started again.

A lease file stays behind its process (a few bytes, named by a pid); a later process given the same pid takes
the same file.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from yeetui.paths import private_dir

LEASE_DIR = "schedule-launches"

_HELD: dict[tuple[Path, int], int] = {}
"""This process's lease per lease directory (and pid: a forked child is another process), held until it ends."""
_TAKING = threading.Lock()
"""One taker at a time: two descriptors of one file exclude each other even within one process."""


def lease_dir(database: Path) -> Path:
    """Where the processes sharing the store at `database` keep their launch leases: beside it."""
    return database.parent / LEASE_DIR


def hold(directory: Path) -> int:
    """This process's lease in `directory`, taken on first use and held until the process ends: the file
    descriptor a launch's process must inherit (`pass_fds`). It waits while another process of the same pid
    before it (pids are reused) still has a launch running — as long as that launch — or while another
    scheduler looks at it (an instant)."""
    key = (directory, os.getpid())
    with _TAKING:
        fd = _HELD.get(key)
        if fd is None:
            private_dir(directory)
            fd = os.open(directory / f"{key[1]}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                os.close(fd)
                raise
            _HELD[key] = fd
    return fd


def held(directory: Path, pid: int) -> bool:
    """Whether process `pid`'s lease in `directory` is held: by that process, or by a launch it started that is
    still running. False when it has none (it never launched, or an older yeetui claimed without one)."""
    try:
        fd = os.open(directory / f"{pid}.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released when `fd` closes
    except BlockingIOError:
        return True
    except OSError:  # a filesystem without locks: the process's own liveness decides, as before leases
        return False
    finally:
        os.close(fd)
    return False
