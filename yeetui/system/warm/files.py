"""A warm server's files: its socket and lock (where they are, whether a server holds the lock, taking it and
listening, removing them), and the files of other builds' servers that ended, tidied away.

The socket lies in a private folder of this user (`$XDG_RUNTIME_DIR/yeetui-UID`, 0700, checked); the server
holds an exclusive lock on a file beside it while it lives, so two never serve one build.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from yeetui.system.private_folder import user_folder
from yeetui.system.warm.build import build_key


@dataclass(frozen=True)
class Place:
    """Where the server of one build listens, and the lock that says it lives."""

    socket: Path
    lock: Path


def place(env: Mapping[str, str], *, key: str | None = None) -> Place | None:
    """This user's warm server for this build: in `$XDG_RUNTIME_DIR/yeetui-UID` (or `/tmp/yeetui-UID`), created
    0700. None when that folder cannot be made safely (someone else owns it, or others may write in it) or
    its path is too long for a socket."""
    folder = user_folder(env)
    if folder is None:
        return None
    name = f"warm-{key or build_key()}"
    found = Place(folder / f"{name}.sock", folder / f"{name}.lock")
    return found if len(os.fsencode(found.socket)) < 100 else None


def server_alive(where: Place) -> bool:
    """Whether a server holds the lock of `where` (it is starting or serving)."""
    try:
        fd = os.open(where.lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def listen(where: Place, *, ready: Callable[[], None] = lambda: None) -> tuple[socket.socket, int] | None:
    """Take the lock of `where`, call `ready` (the imports: clients that find the lock held wait meanwhile), and
    listen on its socket: (the listener, the lock's descriptor, held while this process lives); None when
    another server holds the lock."""
    while True:
        lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            return None
        if _is_at(lock, where.lock):
            break
        os.close(lock)  # removed as stale (`remove_stale`) after it was opened: the lock is the new file's
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    ready()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(where.socket)  # a server that died left it; the lock says none serves it now
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(os.fspath(where.socket))
    finally:
        os.umask(old)
    listener.listen(64)
    return listener, lock


def _is_at(fd: int, path: Path) -> bool:
    """Whether `path` (not followed) is still the file open at `fd`."""
    try:
        there = os.lstat(path)
    except FileNotFoundError:
        return False
    info = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (info.st_dev, info.st_ino)


_LEFT = re.compile(r"warm-([0-9a-f]{16})\.(sock|lock|log)")


def remove_stale(folder: Path, *, keep: str) -> list[str]:
    """The files of other builds' servers that have ended (an upgrade or an edit starts a new one, and the old
    one's socket, lock and log stayed): removed, but those of `keep` (this server's build) and of any server
    still holding its lock. Each build's lock is taken before its files go, and stays taken until they have:
    a server of that build starting meanwhile finds it held and leaves serving to another, or takes the new
    lock file (`listen`). Only regular files and sockets of this user, named as servers name them, are
    removed; nothing is followed through a symlink. The names removed."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    builds = {found[1] for name in names if (found := _LEFT.fullmatch(name)) and found[1] != keep}
    removed: list[str] = []
    for build in sorted(builds):
        lock_path = folder / f"warm-{build}.lock"
        try:
            lock = os.open(lock_path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # no lock (a server of that build about to start?), or not a file: left alone
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if not _is_at(lock, lock_path) or os.fstat(lock).st_uid != os.getuid():
                    continue
            except OSError:  # BlockingIOError: that server lives
                continue
            for suffix in ("sock", "log", "lock"):  # the lock last: it guards the others
                path = folder / f"warm-{build}.{suffix}"
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    if info.st_uid == os.getuid() and (stat.S_ISREG(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
                        os.unlink(path)
                        removed.append(path.name)
        finally:
            os.close(lock)
    return removed


def remove(where: Place) -> None:
    """Stop serving at `where`: the socket goes. Only the lock's holder calls it, so it is this server's."""
    with contextlib.suppress(OSError):
        os.unlink(where.socket)
