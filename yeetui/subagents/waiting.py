"""Waiting around a child run: for a provider's quota hold to lift before it starts (`wait_out_hold`), and for
its ending — how it ended as its waiter sees it (cancelled too, without the waiter's turn ending), a parent
blocked on its child lending it its run slot meanwhile."""

from __future__ import annotations

import asyncio

from yeetui.bus import Bus
from yeetui.events import RunStatus, RunStatusChanged
from yeetui.providers.base import split_model
from yeetui.runs.slots import RunSlots
from yeetui.runs.spec import RunResult
from yeetui.store import Store
from yeetui.text import clip

HOLD_POLL = 2.0
"""Seconds between looks at a provider's hold by the runs queued for it (another process may lift it)."""


async def wait_out_hold(run_id: str, session_id: str, model: str, *, store: Store, bus: Bus) -> None:
    """A run for a provider whose quota is spent waits, queued, until the hold is over (its time is up, or
    a request to that provider succeeded, in any process) instead of starting into the same refusal."""
    provider = split_model(model)[0]
    said = False
    while (hold := await store.provider_holds.active(provider)) is not None:
        if not said:
            said = True
            bus.publish(RunStatusChanged(run_id, session_id, RunStatus.QUEUED,
                                         f"held: {provider}'s quota is spent ({clip(hold.reason, 120)})"))
        await asyncio.sleep(HOLD_POLL)


async def wait_lending_slot(task: asyncio.Future[RunResult], parent_run_id: str | None, run_id: str,
                            session_id: str, *, slots: RunSlots, store: Store) -> RunResult:
    """A parent blocked on its child gives its run slot to the child meanwhile, so nested spawns can
    never deadlock the concurrency limit (8 parents each waiting for a queued child)."""
    if parent_run_id is None or not slots.holds(parent_run_id):
        return await outcome(task, run_id, session_id, store=store, stop_with_waiter=True)
    await slots.lend(parent_run_id)
    try:
        return await outcome(task, run_id, session_id, store=store, stop_with_waiter=True)
    finally:
        await asyncio.shield(slots.acquire(parent_run_id))


async def outcome(task: asyncio.Future[RunResult], run_id: str, session_id: str, *, store: Store,
                  stop_with_waiter: bool = False) -> RunResult:
    """How the run of `task` ended — cancelled too: stopping a child the parent waits for ends the child,
    not the parent's turn (the parent hears it was cancelled). Only the waiter's own cancellation stops
    the waiter — and, `stop_with_waiter` (a parent blocked on its child), the run too, before the waiter
    goes: a timed-out parent leaves no child running behind it."""
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError as exc:
        if stop_with_waiter and not task.done():
            task.cancel(exc.args[0] if exc.args else None)  # why it was stopped goes down with it
            await asyncio.wait({task})
        raise
    if not task.cancelled():
        return task.result()
    run = await store.get_run(run_id)
    status = run.status if run is not None and run.status.is_final else RunStatus.CANCELLED
    return RunResult(run_id=run_id, session_id=session_id, status=status,
                     error=(run.error if run is not None else None) or "cancelled")
