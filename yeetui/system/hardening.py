"""What yeetui does to its own process so that the agents it runs cannot read its secrets.

The provider keys live in yeetui's environment and memory. Every command an agent runs gets an environment
without them, but on Linux a process of the same user can read another's initial environment and memory
through `/proc/<pid>/environ` and `/proc/<pid>/mem` — `cat /proc/$PPID/environ` from bash would print the
key. Marking yeetui not dumpable (`prctl(PR_SET_DUMPABLE, 0)`) makes those files root's: other processes of
the user (an agent's commands included) can no longer read them or attach a debugger, and no core file is
written. A privileged process (root with CAP_SYS_PTRACE) still can; agents' commands under the sandbox hold
no capabilities. Commands yeetui starts are dumpable again after their exec, as usual.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

_PR_SET_DUMPABLE = 4


def protect_process() -> bool:
    """Make this process undumpable (Linux); True when that took. Elsewhere, or when it fails, False."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError) as exc:
        log.warning("could not mark the process undumpable: %s", exc)
        return False
