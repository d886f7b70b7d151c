"""Live events between processes (yeetui.system.relay): what crosses, who may connect, what is dropped."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from yeetui import events as ev
from yeetui.messages import Message, Usage
from yeetui.system.relay import RelayReceiver, RelaySender, decode, encode, relay_dir


def test_events_round_trip_and_others_are_dropped() -> None:
    events: list[ev.Event] = [
        ev.TextDelta("r", "s", "hello"),
        ev.RunStatusChanged("r", "s", ev.RunStatus.RUNNING),
        ev.MessageCommitted("r", "s", 7, Message.assistant("done")),
        ev.UsageUpdated("r", "s", Usage(input_tokens=3, output_tokens=4), 0.01),
        ev.ToolCallStarted("r", "s", "c1", "grep", {"pattern": "x"}, "searching"),
    ]
    for event in events:
        line = encode(event, "/p")
        assert line is not None and decode(line, "/p") == event
        assert decode(line, "/other-project") is None
    assert encode(ev.Notice("info", "x"), "/p") is None  # not relayed
    for junk in (b"not json\n", b'{"type": "Exploit", "project": "/p", "event": {}}\n', b"[]\n",
                 b'{"type": "TextDelta", "project": "/p", "event": {"run_id": 1}}\n'):
        assert decode(junk, "/p") is None


@pytest.fixture
def run_dir() -> Iterator[str]:
    """A short runtime dir: a Unix socket's path must stay under about 100 bytes."""
    path = tempfile.mkdtemp(prefix="yr-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_socket_folder_is_private(tmp_path: Path, run_dir: str) -> None:
    folder = relay_dir(tmp_path / "data", {"XDG_RUNTIME_DIR": run_dir})
    assert folder is not None and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    folder.chmod(0o777)  # someone opened it up: refused
    assert relay_dir(tmp_path / "data", {"XDG_RUNTIME_DIR": run_dir}) is None


async def test_a_sender_reaches_every_receiver_of_its_project(tmp_path: Path, run_dir: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    folder = relay_dir(tmp_path / "data", {"XDG_RUNTIME_DIR": run_dir})
    assert folder is not None
    got: list[object] = []
    receiver = RelayReceiver(folder, "/p", got.append)
    await receiver.start()
    assert stat.S_IMODE(os.stat(receiver.path).st_mode) == 0o600
    monkeypatch.setattr(os, "getpid", lambda: 1)  # the sender is another process
    sender = RelaySender(folder, "/p")
    sender.start()
    for n in range(50):
        sender.listen(ev.TextDelta("r", "s", f"t{n}"))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while len(got) < 50:
        assert loop.time() < deadline, got
        await asyncio.sleep(0.02)
    assert [e.text for e in got] == [f"t{n}" for n in range(50)]  # type: ignore[attr-defined]
    await sender.close()
    await receiver.close()
    assert not receiver.path.exists()


def _socket_file(path: Path) -> None:
    """A socket file nobody listens on: what a receiver killed outright leaves."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()


def _ended_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


async def test_a_starting_receiver_removes_what_receivers_that_are_gone_left(tmp_path: Path, run_dir: str) -> None:
    """A socket of a process that is gone goes, and a folder left empty with it; a live process's socket stays,
    and so does anything receivers do not make (another name, a link), and a folder whose lock is held (a
    receiver binds there right now)."""
    env = {"XDG_RUNTIME_DIR": run_dir}
    mine, used, emptied, binding = (relay_dir(tmp_path / name, env) for name in ("a", "b", "c", "d"))
    assert mine and used and emptied and binding
    dead = _ended_pid()
    for folder in (used, emptied, binding):
        _socket_file(folder / f"{dead}.sock")
    _socket_file(used / f"{os.getpid()}.sock")  # this test's process stands for a live receiver
    (used / "notes").write_text("")
    (used / f"{_ended_pid()}.sock").symlink_to(tmp_path / "elsewhere.sock")
    busy = os.open(binding, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(busy, fcntl.LOCK_SH)
    receiver = RelayReceiver(mine, "/p", lambda _: None)
    try:
        await receiver.start()
        assert sorted(p.name for p in used.iterdir()) == sorted(
            [f"{os.getpid()}.sock", "notes", *(p.name for p in used.iterdir() if p.is_symlink())])
        assert len([p for p in used.iterdir() if p.is_symlink()]) == 1
        assert not emptied.exists()
        assert (binding / f"{dead}.sock").exists()
        assert receiver.path.exists()
    finally:
        os.close(busy)
        await receiver.close()


async def test_a_receiver_whose_folder_was_removed_as_empty_makes_it_again(tmp_path: Path, run_dir: str) -> None:
    folder = relay_dir(tmp_path / "data", {"XDG_RUNTIME_DIR": run_dir})
    assert folder is not None
    folder.rmdir()  # another receiver found it empty a moment ago
    receiver = RelayReceiver(folder, "/p", lambda _: None)
    await receiver.start()
    try:
        assert receiver.path.exists() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        await receiver.close()
