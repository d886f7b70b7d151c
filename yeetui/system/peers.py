"""Who is at the other end of a Unix socket, and whether it runs confined where this process does not. The warm
server (`warm`) forks no command for a process in a sandbox (the command would run outside it), and its clients
hand no command to a sandboxed process listening in its place.

SO_PEERCRED gives the peer's pid and uid as they were when it connected (or called `listen`); a pidfd pins that
process, so what `/proc/PID/status` says is known to be its own, not that of a process given its pid since.
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Mapping

_SO_PEERPIDFD = 77
"""getsockopt: a pidfd of the peer (Linux 6.5+; the generic number, as on x86 and ARM)."""


def process_status(pid: int | str) -> dict[str, str]:
    """`/proc/PID/status` (`self` for this process) as a map of its fields. Raises OSError."""
    with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
        return {key: value.strip() for key, _, value in (line.partition(":") for line in status)}


def confinement(theirs: Mapping[str, str], own: Mapping[str, str]) -> str | None:
    """Why the process of status `theirs` runs confined where this one (`own`) does not — in a sandbox that a
    process forked by this one would not be in — or None.

    Every sandbox of yeetui's sets no_new_privs (bubblewrap does; Landlock requires it of a process without
    CAP_SYS_ADMIN, and the kernel shows no Landlock field in the status, up to Linux 6.18 at least), so that is
    refused outright, even where this process has it too. Seccomp filters, pid namespaces and the capability
    bounding set are compared with this process's own: in a container every process has its filter."""
    if theirs.get("NoNewPrivs", "0") != "0":
        return "it runs with no_new_privs, as every sandbox of yeetui's sets it"
    their_mode, own_mode = theirs.get("Seccomp", "0"), own.get("Seccomp", "0")
    their_filters, own_filters = theirs.get("Seccomp_filters"), own.get("Seccomp_filters")
    if their_mode != "0" and (their_mode != own_mode or their_filters is None or own_filters is None
                              or int(their_filters) > int(own_filters)):
        return "it runs under a seccomp filter this process has not"
    if len(theirs.get("NSpid", "").split()) > len(own.get("NSpid", "").split()):
        return "it is in a pid namespace of its own"
    if int(own.get("CapBnd", "0"), 16) & ~int(theirs.get("CapBnd", "0"), 16):
        return f"it has dropped capabilities this process holds (bounding set {theirs.get('CapBnd')})"
    return None


def peer_pidfd(conn: socket.socket, pid: int) -> int:
    """A pidfd of the process at the other end of `conn` (the one that connected, or that listens), whose pid
    SO_PEERCRED gave as `pid`: SO_PEERPIDFD names exactly it (Linux 6.5+); before that, `pid` opened now (a pid
    goes to another process only once the whole pid range has been gone through). Raises OSError when it has
    ended or cannot be seen from here."""
    try:
        return int(conn.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD))
    except OSError:
        if pid <= 0:
            raise
        return os.pidfd_open(pid)


def peer_confinement(pid: int, pidfd: int) -> str | None:
    """`confinement` of the process at the other end of a socket: `pid` as SO_PEERCRED gave it, `pidfd` the
    process itself (`peer_pidfd`), which says it still lives once its status is read — so that status was its
    own. A peer this process cannot see, read or signal counts as confined too."""
    if pid <= 0:
        return "it is in a pid namespace this process cannot see"
    try:
        theirs, own = process_status(pid), process_status("self")
    except (OSError, ValueError):
        return f"its /proc/{pid}/status cannot be read"
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except ProcessLookupError:
        return "it has ended"
    except PermissionError:
        return "it cannot be signalled from here (a sandbox stands between the two)"
    return confinement(theirs, own)
