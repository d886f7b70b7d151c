"""Store across connections and processes: concurrent writers on one file, and durability under kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from yeetui.messages import Message
from yeetui.store import Store

ROOT = Path(__file__).resolve().parents[3]

WRITER = """
import asyncio, sys
from pathlib import Path
from yeetui.messages import Message
from yeetui.store import Store

async def main(path, session_id, count, tag):
    async with await Store.open(Path(path)) as store:
        print("ready", flush=True)
        sys.stdin.readline()  # start together with the test process
        for i in range(count):
            await store.append_message(session_id, Message.user(f"{tag}{i}"))
        await store.inbox.add(session_id=session_id, kind="note", title=tag, dedupe_key="shared")

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
"""

CRASHER = """
import asyncio, sys
from pathlib import Path
from yeetui.messages import Message
from yeetui.store import Store

async def main(path):
    store = await Store.open(Path(path))
    session = await store.create_session(profile="generic")
    print("session", session.id, flush=True)
    i = 0
    while True:
        mid = await store.append_message(session.id, Message.assistant(f"m{i}"), partial=True)
        print("partial", mid, f"m{i}", flush=True)
        await store.update_message(mid, Message.assistant(f"m{i} done"), partial=False)
        print("final", mid, f"m{i} done", flush=True)
        i += 1

asyncio.run(main(sys.argv[1]))
"""


async def _python(code: str, *args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                                        if p)}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *args, env=env, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )


async def _line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
    if not line:
        assert proc.stderr is not None
        raise AssertionError(f"subprocess ended early: {(await proc.stderr.read()).decode()}")
    return line.decode().strip()


async def test_two_stores_on_one_file_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    async with await Store.open(path) as first, await Store.open(path) as second:
        session = await first.create_session(profile="generic")

        async def write(store: Store, tag: str) -> None:
            for i in range(100):
                await store.append_message(session.id, Message.user(f"{tag}{i}"))
                if i % 10 == 0:
                    await store.create_run(session_id=session.id, profile="generic", model=None, prompt=tag)

        await asyncio.gather(write(first, "a"), write(second, "b"))
        for store in (first, second):  # each sees the other's commits
            stored = await store.messages(session.id)
            assert [m.seq for m in stored] == list(range(1, 201))
            texts = [m.message.text for m in stored]
            assert sorted(texts) == sorted([f"a{i}" for i in range(100)] + [f"b{i}" for i in range(100)])
            assert [t for t in texts if t.startswith("a")] == [f"a{i}" for i in range(100)]  # order kept
            assert len(await store.list_runs(session_id=session.id)) == 20


async def test_two_processes_write_one_file_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    async with await Store.open(path) as store:
        session = await store.create_session(profile="generic")
        proc = await _python(WRITER, str(path), session.id, "150", "child")
        assert await _line(proc) == "ready"
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
        for i in range(150):
            await store.append_message(session.id, Message.user(f"parent{i}"))
        await store.inbox.add(session_id=session.id, kind="note", title="parent", dedupe_key="shared")
        _, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode == 0, stderr.decode()
        stored = await store.messages(session.id)
        assert [m.seq for m in stored] == list(range(1, 301))
        assert sum(m.message.text.startswith("child") for m in stored) == 150
        assert len(await store.inbox.list(session.id)) == 1  # dedupe held across processes


async def test_kill_9_loses_nothing_already_committed(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    async with await Store.open(path):  # migrated before the child starts, like a running app
        pass
    proc = await _python(CRASHER, str(path))
    kind, session_id = (await _line(proc)).split()
    assert kind == "session"
    last_seen: dict[int, str] = {}  # message id -> newest text the child reported committed
    while len(last_seen) < 40:
        kind, reported, text = (await _line(proc)).split(maxsplit=2)
        last_seen[int(reported)] = text
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()
    assert proc.returncode == -signal.SIGKILL

    async with await Store.open(path) as fresh:
        stored = {m.id: m for m in await fresh.messages(session_id)}
    for mid, text in last_seen.items():
        assert mid in stored, f"message {mid} was committed before the kill but is gone"
        # the child may have committed one more update after its last report, never less
        assert stored[mid].message.text in (text, f"{text} done"), (mid, text, stored[mid].message.text)
        if text.endswith("done"):
            assert not stored[mid].partial
    assert len(stored) >= len(last_seen)
    assert [m.seq for m in sorted(stored.values(), key=lambda m: m.seq)] == list(range(1, len(stored) + 1))
