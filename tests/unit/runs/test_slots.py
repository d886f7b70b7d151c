"""Run slots: the concurrency cap and the queue order hold across every yeetui process sharing a data dir,
a dead process's slots are taken back, and a headless primary run waits its turn like a subagent."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.runs.slots import RunSlots
from yeetui.runtime import Runtime
from yeetui.store import Store

ROOT = Path(__file__).resolve().parents[3]

_HOLDER = """
import asyncio, json, sys, time
from yeetui.runs.slots import RunSlots
from yeetui.store import Store

async def main(db, run_id, limit):
    store = await Store.open(db)
    slots = RunSlots(store, limit=limit)
    try:
        await slots.acquire(run_id)
        start = time.time()
        held = (await store.slots.counts()).get("held", 0)
        await asyncio.sleep(0.3)  # keep the slot a while, so the others pile up behind the cap
        end = time.time()
        await slots.release(run_id)
    finally:
        await store.close()
    print(json.dumps({"start": start, "end": end, "held": held}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    opened = await Store.open(paths.database_path())
    yield opened
    await opened.close()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def test_cap_holds_across_processes(store: Store) -> None:
    """Eight processes each run one job under a cap of three: never more than three hold a slot at once."""
    db = paths.database_path()
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", _HOLDER, str(db), f"run-{i}", "3", cwd=ROOT,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
             for i in range(8)]
    outputs = await asyncio.gather(*(p.communicate() for p in procs))
    assert all(p.returncode == 0 for p in procs), [err.decode() for _, err in outputs]
    spans = [json.loads(out) for out, _ in outputs]
    assert all(s["held"] <= 3 for s in spans)  # what each holder saw in the store while it held its slot
    events = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    assert peak <= 3
    assert await store.slots.counts() == {}


async def test_slots_of_a_dead_process_are_taken_back(store: Store) -> None:
    await store.slots.queue("ghost", pid=_dead_pid())
    assert await store.slots.take("ghost", 1, is_alive=lambda pid: True)  # held while its process "lives"
    slots = RunSlots(store, limit=1)
    async with asyncio.timeout(10):
        await slots.acquire("mine")  # the ghost's process is gone: its slot is reclaimed
    assert slots.holds("mine") and await store.slots.counts() == {"held": 1}


async def test_waiting_runs_get_slots_in_queue_order(store: Store) -> None:
    slots = RunSlots(store, limit=1)
    await slots.acquire("first")
    order: list[str] = []

    async def queued(run_id: str) -> None:
        await slots.acquire(run_id)
        order.append(run_id)

    second = asyncio.create_task(queued("second"))
    for _ in range(500):  # "second" is in the queue before "third" joins it
        if (await store.slots.counts()).get("waiting"):
            break
        await asyncio.sleep(0.01)
    third = asyncio.create_task(queued("third"))
    for _ in range(500):
        if (await store.slots.counts()).get("waiting") == 2:
            break
        await asyncio.sleep(0.01)
    await slots.release("first")
    await asyncio.wait_for(second, 10)
    assert order == ["second"] and not third.done()
    await slots.release("second")
    await asyncio.wait_for(third, 10)
    assert order == ["second", "third"]


async def test_a_cancelled_wait_leaves_the_queue(store: Store) -> None:
    slots = RunSlots(store, limit=1)
    await slots.acquire("holder")
    waiter = asyncio.create_task(slots.acquire("impatient"))
    for _ in range(500):
        if (await store.slots.counts()).get("waiting"):
            break
        await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert await store.slots.counts() == {"held": 1}


async def test_headless_primary_waits_for_a_slot_held_elsewhere(scripted, tmp_path: Path) -> None:
    """`yeetui run`'s own run is inside the cap: with the only slot held by another live process, it queues."""
    project = tmp_path / "project"
    project.mkdir()
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    other = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
    try:
        runtime = await Runtime.open(cwd=project, provider_factory=scripted.provider_factory,
                                     spawner_limits={"max_concurrent": 1})
        try:
            await runtime.store.slots.queue("elsewhere", pid=other.pid)
            assert await runtime.store.slots.take("elsewhere", 1)
            task = asyncio.create_task(runtime.launcher.run_prompt("PRIMARY"))
            for _ in range(500):
                if (await runtime.store.slots.counts()).get("waiting"):
                    break
                await asyncio.sleep(0.01)
            (run,) = await runtime.store.list_runs()
            assert run.status == RunStatus.QUEUED and not scripted.requests
            await runtime.store.slots.release("elsewhere")
            result = await asyncio.wait_for(task, 30)
            assert result.status == RunStatus.COMPLETED
        finally:
            await runtime.close()
    finally:
        other.kill()
        await other.wait()


async def test_a_run_resumed_by_another_process_replaces_its_stale_slot(store: Store) -> None:
    """A worker killed while holding its run's slot; the resuming process queues the same run afresh."""
    await store.slots.queue("resumed", pid=_dead_pid())
    assert await store.slots.take("resumed", 1, is_alive=lambda pid: True)
    slots = RunSlots(store, limit=1)
    async with asyncio.timeout(10):
        await slots.acquire("resumed")
    assert slots.holds("resumed") and await store.slots.counts() == {"held": 1}


async def test_a_cancel_right_after_queueing_leaves_the_queue(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The queue row is committed, the cancel lands before `acquire` goes on: the row must still go."""
    queued = asyncio.Event()
    original = store.slots.queue

    async def queue_then_stall(run_id: str, **kw) -> None:
        await original(run_id, **kw)
        queued.set()
        await asyncio.Event().wait()  # the cancel arrives here, after the commit

    monkeypatch.setattr(store.slots, "queue", queue_then_stall)
    slots = RunSlots(store, limit=1)
    waiter = asyncio.create_task(slots.acquire("early"))
    await queued.wait()
    assert await store.slots.counts() == {"waiting": 1}
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert await store.slots.counts() == {}
