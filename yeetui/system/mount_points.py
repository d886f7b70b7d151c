"""The empty folders bubblewrap makes in a workspace, and when they may go.

A writable agent's bash keeps `.git/`, `.yeetui/`, `.claude/` and `.opencode/` read-only even where they do not
exist: an empty folder is bound read-only in their place (`sandbox.wrap_confined`), and bubblewrap makes the
mount point for it in the workspace itself. Removing that folder while another command's sandbox has it
bound undoes that sandbox's shield: the kernel detaches a mount whose mount point is removed in another
namespace, and the other command could then create `.claude/agents/…` in the real project (it did, in a test).

So while a sandboxed command runs in a workspace root, its yeetui process holds a shared `flock` on the root
folder itself, and it notes the mount points it is about to make. When its command ends it asks for the lock
alone: only the last command out gets it, and removes the noted folders that are still empty (found from the
root without following a symlink). The lock is the folder's own, so every yeetui sees it whatever its
environment says (a yeetui left in tmux after logout and a new login's name different runtime folders). The
notes outlive a crash, so the next command in that root tidies what a killed yeetui left (and removes them, as
every tidy does); they live in this user's private runtime folder (0700), which the sandbox does not see (its
/run and /tmp are its own). Where
two processes' notes are in different folders, a mount point may stay, empty, until the other's next tidy.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from yeetui.system.private_folder import user_folder

log = logging.getLogger(__name__)

LOCK_WAIT = 30.0
"""Seconds a command waits for another yeetui to finish tidying a root (it takes a moment: a few rmdirs)."""


def notes_file(folder: Path, root: Path) -> Path:
    """The notes of the workspace root `root`, in the private runtime folder `folder`."""
    return folder / f"shield-{hashlib.sha256(os.fsencode(root)).hexdigest()[:20]}.made"


def _open_dir(path: str | Path, dir_fd: int | None = None) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _remove_empty(root: Path, path: Path) -> None:
    """rmdir `path`, found from `root` one folder at a time without following a symlink: a command may have
    swapped a folder on the way for a link elsewhere (a clone's own `.git/` is writable)."""
    parts = path.relative_to(root).parts
    fd = _open_dir(root)
    try:
        for part in parts[:-1]:
            inner = _open_dir(part, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.rmdir(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)


class MountPointsBusy(OSError):
    """Another yeetui held a root's lock alone for longer than `LOCK_WAIT`."""


class Shields:
    """The roots one sandboxed command holds (see the module docstring)."""

    def __init__(self, folder: Path, roots: Sequence[Path]) -> None:
        self._folder = folder
        self._roots = sorted({Path(r) for r in roots})
        self._locks: dict[Path, int] = {}

    async def hold(self) -> None:
        loop = asyncio.get_running_loop()
        for root in self._roots:
            fd = _open_dir(root)  # the lock is the folder's own: the same whatever a process's environment says
            self._locks[root] = fd
            deadline = loop.time() + LOCK_WAIT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if loop.time() > deadline:
                        raise MountPointsBusy(f"another yeetui has been tidying the sandbox's mount points in "
                                              f"{root} for over {LOCK_WAIT:g} s") from None
                    await asyncio.sleep(0.01)

    def made(self, paths: Sequence[Path]) -> None:
        """Note the mount points the sandbox is about to make (before it starts: a crash leaves the notes)."""
        for root in self._roots:
            mine = [p for p in paths if root in Path(p).parents]
            if not mine:
                continue
            notes = notes_file(self._folder, root)
            fd = os.open(notes, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, "".join(json.dumps(os.fspath(p)) + "\n" for p in mine).encode())
            finally:
                os.close(fd)

    def release(self) -> None:
        """The command has ended: let go, and if no other command holds a root, remove its noted mount points
        that are still empty folders."""
        for root, fd in self._locks.items():
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # another command still runs there: the last one out tidies
                self._tidy(root)
            except OSError as exc:
                log.warning("could not tidy the sandbox's mount points in %s: %s", root, exc)
            finally:
                os.close(fd)
        self._locks.clear()

    def _tidy(self, root: Path) -> None:
        notes = notes_file(self._folder, root)
        try:
            fd = os.open(notes, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            with os.fdopen(os.dup(fd), "rb") as stream:
                lines = stream.read().splitlines()
            for line in lines:
                try:
                    path = Path(json.loads(line))
                except (ValueError, TypeError):
                    continue
                if root not in path.parents or ".." in path.parts:
                    continue
                with contextlib.suppress(OSError):  # gone already, or not empty: then it is someone's folder
                    _remove_empty(root, path)
            # Done with: the notes go (they used to stay, emptied, one file per root ever used). Nobody else
            # writes them meanwhile — `made` is called holding the root's lock shared, and this holds it alone.
            os.unlink(notes)
        finally:
            os.close(fd)


@contextlib.asynccontextmanager
async def shields(roots: Sequence[Path], env: Mapping[str, str] | None = None) -> AsyncIterator[Shields | None]:
    """Hold `roots` while a sandboxed command runs there (see the module docstring). Yields None where this
    user has no private runtime folder: the mount points are then never removed (they stay, empty), since
    nothing could tell whether another command still has them bound."""
    folder = user_folder(env)
    if folder is None:
        yield None
        return
    held = Shields(folder, roots)
    try:
        await held.hold()
        yield held
    finally:
        held.release()
