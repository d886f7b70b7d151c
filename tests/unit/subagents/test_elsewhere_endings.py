"""RunsElsewhere announcing the ending of a run another process executed (a pane child): the run counts as
followed until its ending is announced to its parent, so whoever waits for `following()` to turn false finds
the announcement there (a full run of the suite once read the parents' announcements in between)."""

from __future__ import annotations

import asyncio

from yeetui.errors import StoreError
from yeetui.events import RunStatus
from yeetui.messages import Message
from yeetui.runs.spec import RunOptions
from yeetui.runtime import Runtime
from yeetui.subagents.elsewhere import RunsElsewhere
from yeetui.subagents.inbox import Delivery


class GatedDelivery(Delivery):
    """Delivery whose announcing waits for `gate`: the moment between "the run is done" and "its parent heard of
    it", held open."""

    def __init__(self, delivery: Delivery) -> None:
        super().__init__(delivery.store, delivery.bus)
        self.gate = asyncio.Event()
        self.flushing = asyncio.Event()

    async def flush(self, session_id: str, *, only_if_idle: bool = False) -> list[Message]:
        self.flushing.set()
        await self.gate.wait()
        return await super().flush(session_id, only_if_idle=only_if_idle)


async def _a_pane_child_that_ended(runtime: Runtime) -> tuple[str, str]:
    """A pane child whose worker has come and gone, its ending recorded as the worker records it (the announcing
    left to the parent's process): (parent session id, run id)."""
    profile = runtime.profiles.get("generic")
    parent = await runtime.launcher.new_session(profile)
    child = await runtime.launcher.new_session(profile, parent_id=parent.id)
    run = await runtime.launcher.create_run(child, profile, model="m", prompt="p",
                                            options=RunOptions(parent_session_id=parent.id, mode="tmux"))
    ended = await asyncio.create_subprocess_exec("true")
    await ended.wait()
    await runtime.store.update_run(run.id, status=RunStatus.COMPLETED, result={"output": "PANE-DONE"}, pid=ended.pid)
    in_worker = Delivery(runtime.store, runtime.bus)
    in_worker.hold_for.add(parent.id)
    await in_worker.completion(recipient_session_id=parent.id, run_id=run.id, child_session_id=child.id,
                               label="generic#1", status=RunStatus.COMPLETED, output="PANE-DONE", error=None,
                               result=None)
    return parent.id, run.id


async def _announced(runtime: Runtime, session_id: str) -> list[str]:
    return [m.message.text for m in await runtime.store.messages(session_id) if m.message.meta.get("announcement")]


async def test_a_run_is_followed_until_its_ending_is_announced_to_its_parent(runtime: Runtime) -> None:
    parent_id, run_id = await _a_pane_child_that_ended(runtime)
    delivery = GatedDelivery(runtime.delivery)
    elsewhere = RunsElsewhere(runtime.store, runtime.bus, delivery, None)

    elsewhere.follow(run_id, parent_id)  # its worker is gone: the ending is announced now
    await asyncio.wait_for(delivery.flushing.wait(), 10)
    assert elsewhere.following(run_id) and elsewhere.following()  # mid-announcement: still followed
    delivery.gate.set()
    for _ in range(500):
        if not elsewhere.following():
            break
        await asyncio.sleep(0.01)
    assert not elsewhere.following(run_id)
    announced = await _announced(runtime, parent_id)
    assert len(announced) == 1 and "PANE-DONE" in announced[0]


class FailingOnceDelivery(Delivery):
    """Delivery whose first announcing fails as the store does when it cannot write (a disk full, a lock held
    past its wait)."""

    def __init__(self, delivery: Delivery) -> None:
        super().__init__(delivery.store, delivery.bus)
        self.attempts = 0

    async def flush(self, session_id: str, *, only_if_idle: bool = False) -> list[Message]:
        self.attempts += 1
        if self.attempts == 1:
            raise StoreError("announce inbox item: database is locked")
        return await super().flush(session_id, only_if_idle=only_if_idle)


async def test_an_announcement_the_store_failed_to_write_is_made_in_the_next_round(runtime: Runtime) -> None:
    """A failed write leaves the run followed and the next look announces it, once: it no longer waited,
    recorded but unsaid, for the next start of a yeetui."""
    parent_id, run_id = await _a_pane_child_that_ended(runtime)
    delivery = FailingOnceDelivery(runtime.delivery)
    elsewhere = RunsElsewhere(runtime.store, runtime.bus, delivery, None)

    elsewhere.follow(run_id, parent_id)
    for _ in range(1000):
        if not elsewhere.following():
            break
        await asyncio.sleep(0.01)
    assert not elsewhere.following(run_id) and delivery.attempts == 2  # failed, then made
    announced = await _announced(runtime, parent_id)
    assert len(announced) == 1 and "PANE-DONE" in announced[0]
