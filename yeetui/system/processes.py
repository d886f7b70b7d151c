"""Process groups from the outside: who is in one, ending one, and ending one a dead yeetui left behind.

Every command an agent runs gets a process group of its own. While yeetui lives it ends each group itself
(`kill_group`). When yeetui is killed outright, the groups it started are recorded in the store with their
leader's start time, and whichever yeetui process recovers next ends them (`kill_leftover_group`); the start
time tells a leader still ours from an unrelated process that was given the same pid since. So that such a
group does not wait for the next yeetui command, each one also has a watcher (`GroupWatcher`) that ends it
the moment the yeetui process that started it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL for the process group."""
_POLL = 0.05


def yeetui_command(*args: str) -> list[str]:
    """A command line that runs this yeetui with `args`. `-P`: the working directory — often a cloned
    repository — is not put on the import path, where a `yeetui/` or `anthropic.py` of its own would be
    imported in place of ours."""
    return [sys.executable, "-P", "-m", "yeetui", *args]


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (field 3 onwards), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (/proc stat field 22); None when unknown."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def kill_leftover_group(pgid: int, leader_start: int | None) -> bool:
    """SIGKILL group `pgid`, started by a yeetui process that is gone, unless it is no longer that group.

    The group is still the one recorded when its leader runs with the recorded start time, or when the leader
    has exited and members remain (no new process may take a pid that is still some group's id). A leader
    with another start time is an unrelated process that reused the pid: it is left alone, as is any group
    whose leader's start cannot be read. Returns whether a signal was sent.
    """
    if pgid <= 1 or pgid == os.getpgrp():
        return False
    leader = _stat_fields(pgid)
    if leader is not None and leader[0] not in ("Z", "X"):
        if leader_start is None or start_ticks(pgid) != leader_start or int(leader[2]) != pgid:
            return False
    elif not group_alive(pgid):
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_members(pgid: int) -> list[int] | None:
    """Non-zombie processes in group `pgid`, or None when /proc cannot tell."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    members = _group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_member(pid: int, pgid: int, sig: signal.Signals) -> None:
    """Signal one process through a pidfd, after checking it is still in the group (no pid reuse race)."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return
    try:
        if os.getpgid(pid) == pgid:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


async def _wait_gone(pgid: int, seconds: float, keep: int | None = None) -> None:
    """Poll until the group is empty (or only `keep` is left); nothing signals a group's end."""
    for _ in range(max(int(seconds / _POLL), 1)):
        members = _group_members(pgid)
        gone = not group_alive(pgid) if members is None else set(members) <= {keep}
        if gone:
            return
        await asyncio.sleep(_POLL)


async def kill_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM the group, wait up to `grace` seconds for it to go, then SIGKILL whatever is left.

    While the leader (bash) lives, its children are signalled first so that bash reaps them: an
    orphan's zombie is left to init, and some container inits never reap.
    """
    members = _group_members(pgid) or []
    if pgid in members and len(members) > 1:
        for pid in members:
            if pid != pgid:
                _signal_member(pid, pgid, signal.SIGTERM)
        await _wait_gone(pgid, min(grace, 0.3), keep=pgid)
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    await _wait_gone(pgid, grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


_WATCH = ('IFS= read -r _; kill -9 "-$1" 2>/dev/null; [ -n "$2" ] || exit 0; i=0; while [ "$i" -lt 10 ]; do '
          'found=$(grep -lzxF -- "$2" /proc/[0-9]*/environ 2>/dev/null); [ -n "$found" ] || exit 0; '
          'for e in $found; do p=${e#/proc/}; kill -9 "${p%/environ}" 2>/dev/null; done; i=$((i+1)); done')
"""Wait for EOF on stdin — the write end lives only in the yeetui process, so EOF means it died (or let go)
— then SIGKILL the group and, given a `PROCESS_TAG=…` line (`$2`), every process whose environment holds it
(again, while one is found: one may have forked meanwhile)."""

_WATCH_FILE = ('IFS= read -r _; i=0; while [ "$i" -lt 100 ]; do g=; IFS= read -r g 2>/dev/null < "$1"; '
               'case "$g" in ""|0*|1|*[!0-9]*) ;; *) kill -9 "-$g" 2>/dev/null; exit 0;; esac; '
               '/bin/sleep 0.1; i=$((i+1)); done')
"""The same, for a group whose id its leader writes to the file `$1` (all of it at once): read it once yeetui
died, waiting up to 10 s for it to be written."""


class GroupWatcher:
    """A process that SIGKILLs process group `pgid` the moment the yeetui process that started it dies.

    PR_SET_PDEATHSIG would reach only the group's leader (bash), not the commands it forked; this watcher ends
    the whole group. It holds the read end of a pipe whose only write end is this process's: a kill -9 of
    yeetui closes it, the watcher reads EOF and kills the group. It runs in a session of its own, so a signal
    to yeetui's process group does not take it down first. `stop()` — once the group is done — ends the
    watcher without it acting, and reaps it."""

    def __init__(self, process: asyncio.subprocess.Process, write_fd: int) -> None:
        self.process = process
        self._write_fd: int | None = write_fd

    @classmethod
    async def start(cls, pgid: int, tag: str | None = None) -> GroupWatcher:
        """`tag`: the group's commands were started with `PROCESS_TAG=tag` in their environment, and the
        processes that carry it die too, also those that left the group — a `setsid`, or bubblewrap's sandbox,
        which starts in a session of its own and is bound to its parent's life only once it is set up (a
        bubblewrap killed meanwhile left its sandbox running for good)."""
        return await cls._start(_WATCH, str(pgid), *([f"{PROCESS_TAG}={tag}"] if tag else []))

    @classmethod
    async def start_for(cls, leader_file: Path) -> GroupWatcher:
        """A watcher started before the group is: once this process dies it ends the group whose id is in
        `leader_file`, waiting a few seconds for the file should the group's leader not have written it yet."""
        return await cls._start(_WATCH_FILE, str(leader_file))

    @classmethod
    async def _start(cls, script: str, *arguments: str) -> GroupWatcher:
        read_fd, write_fd = os.pipe()  # both close-on-exec: no other child inherits the write end
        try:
            process = await asyncio.create_subprocess_exec(
                "/bin/sh", "-c", script, "sh", *arguments, stdin=read_fd, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        return cls(process, write_fd)

    async def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
        await self.process.wait()


PROCESS_TAG = "YEETUI_PROCESS_TAG"
"""Set, to a value of its own, in the environment of each hook and MCP server yeetui starts: every process it
starts inherits it, also one that leaves the process group with `setsid`, so `end_tagged` finds them all."""


def tagged(tag: str) -> list[int]:
    """This user's live processes whose environment, as they were started, holds `PROCESS_TAG=tag`."""
    marker = f"{PROCESS_TAG}={tag}".encode()
    uid = os.getuid()
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != uid or marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


async def end_tagged(tag: str, grace: float = KILL_GRACE) -> int:
    """SIGTERM every process tagged `tag` (see `PROCESS_TAG`), SIGKILL those left after `grace` seconds; how many
    there were. A process could clear its environment with a new `exec` and stay unseen: this ends what a hook
    or server left running by accident, it is no boundary (the sandbox's own process namespace is, under
    bubblewrap)."""
    found = await asyncio.to_thread(tagged, tag)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    for _ in range(max(int(grace / _POLL), 1)):
        if not found or not await asyncio.to_thread(tagged, tag):
            return len(found)
        await asyncio.sleep(_POLL)
    for pid in await asyncio.to_thread(tagged, tag):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return len(found)
