"""Live events between yeetui processes on one data dir: a pane's worker streams what its runs do to the
yeetui processes showing them, over Unix sockets only this user can reach.

Every front end listens on `<runtime dir>/yeetui-<uid>/<hash of the data dir>/<pid>.sock` (the directories
0700, the socket 0600; the runtime dir is `$XDG_RUNTIME_DIR`, else /tmp). A worker sends each event it relays
as one JSON line to every socket there, finding new ones as they appear; the receiver rebuilds the event
from a fixed list of types and publishes it on its own bus, so the TUI shows a pane child's tokens, tool calls
and status as if it ran in-process. This is a view only: results, deliveries and commands go through the
store, so a lost line loses nothing. Lines carry the sender's project; a receiver drops other projects'.

A receiver killed outright leaves its socket behind, and every data dir used once leaves its folder: each
receiver that starts removes the sockets of receivers that are gone, and the folders left empty
(`remove_stale`). A receiver binds its socket holding a shared `flock` on its folder, the remover holds it
alone while it looks: a folder is never removed under a receiver about to bind in it, and a receiver that
finds its folder removed makes it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from yeetui import events as ev
from yeetui.messages import Message, Usage
from yeetui.system.private_folder import user_folder

log = logging.getLogger(__name__)

RELAYED: dict[str, type[ev.Event]] = {cls.__name__: cls for cls in (
    ev.RunRegistered, ev.RunStatusChanged, ev.TextDelta, ev.ThinkingDelta, ev.StreamRestarted, ev.MessageCommitted,
    ev.ToolCallStarted, ev.ToolCallFinished, ev.ProviderRetrying, ev.RunProgress, ev.RunModelChanged,
    ev.UsageUpdated)}
LINE_LIMIT = 4 * 1024 * 1024
QUEUE_LIMIT = 5000
RESCAN = 1.0
LOCK_WAIT = 0.01
"""Seconds between tries for a folder's lock while another process looks for stale sockets in it."""
_FOLDER = re.compile(r"[0-9a-f]{12}")
_SOCKET = re.compile(r"([1-9][0-9]*)\.sock")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def relay_dir(data_dir: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """This user's socket dir for `data_dir`, created 0700; None when it cannot be made safely (a path someone
    else owns, or that others may write)."""
    base = user_folder(env)
    if base is None:
        log.warning("not relaying live events: this user has no private runtime folder")
        return None
    path = base / hashlib.sha256(str(data_dir).encode()).hexdigest()[:12]
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        log.warning("not relaying live events: %s", exc)
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        log.warning("not relaying live events: %s is not a private directory of this user", path)
        return None
    return path


def encode(event: ev.Event, project: str) -> bytes | None:
    name = type(event).__name__
    if name not in RELAYED:
        return None
    data: dict[str, Any] = {}
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        if isinstance(value, Message | Usage):
            value = value.model_dump(mode="json")
        data[field.name] = value
    return (json.dumps({"type": name, "project": project, "event": data}, default=str) + "\n").encode()


def decode(line: bytes, project: str) -> ev.Event | None:
    """The event a line carries, when it is one of `RELAYED` for `project`; None for anything else."""
    try:
        envelope = json.loads(line)
        if not isinstance(envelope, dict) or envelope.get("project") != project:
            return None
        kind = envelope.get("type")
        cls = RELAYED.get(kind) if isinstance(kind, str) else None
        data = envelope.get("event")
        if cls is None or not isinstance(data, dict):
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in data.items() if k in names and k != "kind"}
        if "message" in data:
            data["message"] = Message.model_validate(data["message"])
        if "usage" in data:
            data["usage"] = Usage.model_validate(data["usage"])
        if "status" in data:
            data["status"] = ev.RunStatus(data["status"])
        return cls(**data)
    except (ValueError, TypeError, KeyError):
        return None


class RelayReceiver:
    """Listens for workers' events and publishes them here (`publish`, usually the bus)."""

    def __init__(self, folder: Path, project: str, publish: Callable[[ev.Event], None]) -> None:
        self.path = folder / f"{os.getpid()}.sock"
        self.project = project
        self.publish = publish
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen (see the module docstring for the folder's lock), then remove what receivers that are gone
        left in this user's folder."""
        held = await _hold_folder(self.path.parent)
        try:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            old = os.umask(0o177)
            try:
                self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=LINE_LIMIT)
            finally:
                os.umask(old)
        finally:
            os.close(held)
        await asyncio.to_thread(remove_stale, self.path.parent.parent)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._clients.add(task)
        try:
            while line := await reader.readline():
                event = decode(line, self.project)
                if event is not None:
                    self.publish(event)
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            if task is not None:
                self._clients.discard(task)
            writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._clients):
                task.cancel()
            await asyncio.gather(*self._clients, return_exceptions=True)
            await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


async def _hold_folder(folder: Path) -> int:
    """A descriptor of `folder` with a shared lock on it, the folder made again (0700) if a remover took it
    away; raises OSError when it cannot be had, or is not a private folder of this user."""
    while True:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        try:
            fd = os.open(folder, _DIRECTORY)
        except FileNotFoundError:  # removed, empty, between the two: again
            continue
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(LOCK_WAIT)
            info = os.fstat(fd)
            try:
                there = os.lstat(folder)
            except FileNotFoundError:
                there = None
        except BaseException:
            os.close(fd)
            raise
        if there is not None and (there.st_dev, there.st_ino) == (info.st_dev, info.st_ino):
            if info.st_uid != os.getuid() or info.st_mode & 0o077:
                os.close(fd)
                raise OSError(f"{folder} is not a private folder of this user")
            return fd
        os.close(fd)  # removed (as it was empty) while this waited for it: make it again


def remove_stale(base: Path) -> int:
    """In this user's folder `base`: remove each receiver's socket whose process is gone, and each receiver
    folder left empty; how many entries went. Only what receivers make is looked at (`<hash>/<pid>.sock`,
    sockets of this user), nothing is followed through a symlink, and a folder whose lock another process holds
    (a receiver binding there) is skipped."""
    try:
        top = os.open(base, _DIRECTORY)
    except OSError:
        return 0
    removed = 0
    try:
        for name in os.listdir(top):
            if _FOLDER.fullmatch(name):
                with contextlib.suppress(OSError):
                    removed += _remove_stale_in(top, name)
    finally:
        os.close(top)
    return removed


def _remove_stale_in(top: int, name: str) -> int:
    fd = os.open(name, _DIRECTORY, dir_fd=top)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # a receiver binds there right now
        if os.fstat(fd).st_uid != os.getuid():
            return 0
        removed, kept = 0, 0
        for entry in os.listdir(fd):
            found = _SOCKET.fullmatch(entry)
            try:  # a receiver closing removes its own socket meanwhile
                info = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                if not (found and stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()
                        and not _running(int(found[1]))):
                    kept += 1
                    continue
                os.unlink(entry, dir_fd=fd)
                removed += 1
            except FileNotFoundError:
                continue
        if not kept:
            os.rmdir(name, dir_fd=top)
            removed += 1
        return removed
    finally:
        os.close(fd)


def _running(pid: int) -> bool:
    """Whether process `pid` exists and has not exited (a zombie has): a receiver that could still serve."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: not known to be gone
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


class RelaySender:
    """Sends the events of this process's bus (`listen`) to every receiver in the folder; never blocks the
    sender: past `QUEUE_LIMIT` waiting lines, new ones are dropped (the store still has everything)."""

    def __init__(self, folder: Path, project: str) -> None:
        self.folder = folder
        self.project = project
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(QUEUE_LIMIT)
        self._peers: dict[Path, asyncio.StreamWriter] = {}
        self._task: asyncio.Task[None] | None = None

    def listen(self, event: ev.Event) -> None:
        line = encode(event, self.project)
        if line is not None:
            with contextlib.suppress(asyncio.QueueFull):
                self._queue.put_nowait(line)

    def start(self) -> None:
        self._task = asyncio.create_task(self._pump(), name="yeetui relay")

    async def _pump(self) -> None:
        loop = asyncio.get_running_loop()
        scanned = 0.0
        while True:
            line = await self._queue.get()
            if loop.time() - scanned > RESCAN:
                await self._connect()
                scanned = loop.time()
            for path, writer in list(self._peers.items()):
                try:
                    writer.write(line)
                    await writer.drain()
                except (ConnectionError, OSError):
                    self._peers.pop(path, None)
                    writer.close()
            self._queue.task_done()

    async def _connect(self) -> None:
        try:
            sockets = [p for p in self.folder.glob("*.sock") if p.name != f"{os.getpid()}.sock"]
        except OSError:
            return
        for path in sockets:
            if path in self._peers:
                continue
            try:
                _, writer = await asyncio.open_unix_connection(str(path))
            except OSError:
                continue
            self._peers[path] = writer

    async def close(self, *, drain: float = 2.0) -> None:
        """Send what is queued (for at most `drain` seconds), then close."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain):
                await self._queue.join()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        for writer in self._peers.values():
            writer.close()
