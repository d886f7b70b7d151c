"""A blocking spawn's pane child, its ending taken on the parent's side (`RunsElsewhere.ended(inline=True)`):
the worker records the ending as an announcement still to make, after the run's final status; the waiting
parent marks it delivered before it returns the result, so its next turn announces nothing. The worker is a
process the test holds, so each interleaving is forced, not waited for."""

from __future__ import annotations

import asyncio

from yeetui.events import RunStatus
from yeetui.runs.spec import RunOptions
from yeetui.runtime import Runtime
from yeetui.store.records import InboxItem
from yeetui.subagents.elsewhere import RunsElsewhere
from yeetui.subagents.inbox import Delivery


class CountingDelivery(Delivery):
    """Delivery that counts the parent side's looks for the ending it takes inline (`looked`: two of them)."""

    def __init__(self, delivery: Delivery) -> None:
        super().__init__(delivery.store, delivery.bus)
        self.looks = 0
        self.looked = asyncio.Event()

    async def taken_inline(self, run_id: str, attempt: int = 0) -> InboxItem | None:
        item = await super().taken_inline(run_id, attempt)
        self.looks += 1
        if self.looks >= 2:
            self.looked.set()
        return item


async def _final_blocking_child(runtime: Runtime, worker_pid: int) -> tuple[str, str, str]:
    """A blocking pane child already final in the store, its worker `worker_pid`: (parent, child session, run)."""
    profile = runtime.profiles.get("generic")
    parent = await runtime.launcher.new_session(profile)
    child = await runtime.launcher.new_session(profile, parent_id=parent.id)
    run = await runtime.launcher.create_run(child, profile, model="m", prompt="p",
                                            options=RunOptions(parent_session_id=parent.id, mode="tmux",
                                                               blocking=True))
    await runtime.store.update_run(run.id, status=RunStatus.COMPLETED, result={"output": "INLINE-DONE"},
                                   pid=worker_pid)
    return parent.id, child.id, run.id


async def _announced(runtime: Runtime, session_id: str) -> list[str]:
    return [m.message.text for m in await runtime.store.messages(session_id) if m.message.meta.get("announcement")]


async def test_the_waiting_parent_marks_delivered_what_the_worker_records_after_the_final_status(
        runtime: Runtime) -> None:
    worker = await asyncio.create_subprocess_exec("sleep", "300")
    parent_id, child_id, run_id = await _final_blocking_child(runtime, worker.pid)
    delivery = CountingDelivery(runtime.delivery)
    elsewhere = RunsElsewhere(runtime.store, runtime.bus, delivery, None)
    waiting = asyncio.ensure_future(elsewhere.ended(run_id, 60.0, inline=True))
    try:
        await asyncio.wait_for(delivery.looked.wait(), 10)  # the run is final; its worker recorded nothing yet
        assert not waiting.done()
        in_worker = Delivery(runtime.store, runtime.bus)  # as the worker records it: an announcement to make
        in_worker.hold_for.add(parent_id)
        await in_worker.completion(recipient_session_id=parent_id, run_id=run_id, child_session_id=child_id,
                                   label="generic#1", status=RunStatus.COMPLETED, output="INLINE-DONE", error=None,
                                   result=None)
        assert len(await runtime.store.announcements.pending(parent_id)) == 1
        result = await asyncio.wait_for(waiting, 10)
    finally:
        worker.kill()
        await worker.wait()
    assert result.status == RunStatus.COMPLETED and result.output == "INLINE-DONE"
    assert await runtime.store.announcements.pending(parent_id) == []
    assert await runtime.delivery.flush(parent_id) == [] and await _announced(runtime, parent_id) == []


async def test_a_worker_gone_without_recording_the_ending_leaves_it_recorded_as_delivered(runtime: Runtime) -> None:
    worker = await asyncio.create_subprocess_exec("true")
    await worker.wait()
    parent_id, _, run_id = await _final_blocking_child(runtime, worker.pid)
    elsewhere = RunsElsewhere(runtime.store, runtime.bus, runtime.delivery, None)
    result = await asyncio.wait_for(elsewhere.ended(run_id, 60.0, inline=True), 10)
    assert result.output == "INLINE-DONE"
    (item,) = await runtime.store.inbox.list(parent_id)
    assert item.run_id == run_id
    marked = await runtime.store.fetch_one("the item's mark", "SELECT announced_at FROM inbox_items WHERE id = ?",
                                           (item.id,))
    assert marked is not None and marked["announced_at"] is not None  # delivered: the spawn's result
    assert await runtime.delivery.flush(parent_id) == [] and await _announced(runtime, parent_id) == []
