"""Looking at processes from tests: whether one still runs, and who is in a process group."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
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


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is `pgid`, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def unique_sleep() -> str:
    """A `sleep` duration no other process uses, so a test can find its own command's process from outside
    any sandbox (inside bubblewrap's pid namespace, `$!` is not the pid the host sees)."""
    return f"600.{uuid.uuid4().int % 10**6:06d}"


def running_with(argument: str) -> list[int]:
    """Live (non-zombie) processes with `argument` as one of their command-line arguments."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argument.encode() in args and state != "Z":
            found.append(int(entry.name))
    return found


UNPRIVILEGED_UID = 65534
"""nobody: the user tests drop to when they run as root."""


def as_unprivileged_user() -> list[str] | None:
    """A command prefix that runs a Python as a user without privileges (nobody, via setpriv and the system's
    Python, which that user can reach), or None when none is at hand. Not root already: this Python."""
    if os.getuid() != 0:
        return [sys.executable]
    setpriv = shutil.which("setpriv")
    system_python = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)
    if setpriv is None or system_python is None:
        return None
    return [setpriv, f"--reuid={UNPRIVILEGED_UID}", f"--regid={UNPRIVILEGED_UID}", "--clear-groups", system_python]
