"""Live events between yeetui processes on one data dir: a pane's worker streams what its runs do to the
yeetui processes showing them, over Unix sockets only this user can reach.

Every front end listens on `<runtime dir>/yeetui-<uid>/<hash of the data dir>/<pid>.sock` (the directories
0700, the socket 0600; the runtime dir is `$XDG_RUNTIME_DIR`, else /tmp). A worker sends each event it relays
as one JSON line to every socket there, finding new ones as they appear; the receiver rebuilds the event
from a fixed list of types and publishes it on its own bus, so the TUI shows a pane child's tokens, tool calls
and status as if it ran in-process. This is a view only: results, deliveries and commands go through the
store, so a lost line loses nothing. Lines carry the sender's project; a receiver drops other projects'.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
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
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=LINE_LIMIT)
        finally:
            os.umask(old)

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
