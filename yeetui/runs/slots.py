"""RunSlots: at most `limit` runs execute at once across every yeetui process sharing a data dir.

A run queues (`acquire`), waits in queue order for a slot, and gives it back when it ends (`release`). The
slots are rows in the store (`yeetui.store.coordination`), so the cap and the order hold however many `yeetui`
processes run — a TUI, `yeetui run`, detached workers — and the slots of a process that died are taken
back. Within one process a release wakes the waiters at once; a release elsewhere is seen by polling.
A run that blocks on its child lends its slot (`lend`) and gets it back before anyone queued later
(`acquire` again), so nested spawns never deadlock the cap.
"""

from __future__ import annotations

import asyncio

from yeetui.errors import StoreError
from yeetui.store import Store

POLL_FIRST = 0.02
POLL_MAX = 0.5
"""Seconds between looks for a slot freed by another process (doubling from POLL_FIRST)."""


class RunSlots:
    def __init__(self, store: Store, limit: int = 8) -> None:
        if limit < 1:
            raise ValueError(f"at least one run must be able to execute; got a limit of {limit}")
        self.store = store
        self.limit = limit
        self._held: set[str] = set()
        self._waiters: set[asyncio.Future[None]] = set()

    def holds(self, run_id: str) -> bool:
        """Whether `run_id` holds a slot taken by this process."""
        return run_id in self._held

    async def acquire(self, run_id: str) -> None:
        """Wait for a slot in queue order; a run taking back the slot it lent keeps its place, ahead of runs
        queued after it. Cancelled (a timeout while queued), the run leaves the queue."""
        delay = POLL_FIRST
        try:
            # Inside the try: a cancel landing while the queue write commits must still leave the queue.
            await self.store.slots.queue(run_id)
            while True:
                # Registered before looking, so a release between the look and the wait is not missed.
                freed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._waiters.add(freed)
                try:
                    if await self.store.slots.take(run_id, self.limit):
                        break
                    await asyncio.wait_for(freed, delay)
                    delay = POLL_FIRST
                except TimeoutError:
                    delay = min(delay * 2, POLL_MAX)
                finally:
                    self._waiters.discard(freed)
        except BaseException:
            await asyncio.shield(self.store.slots.release(run_id))
            self._wake()  # it may have taken a slot in the moment it was cancelled
            raise
        self._held.add(run_id)

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def lend(self, run_id: str) -> None:
        self._held.discard(run_id)
        await self.store.slots.lend(run_id)
        self._wake()

    async def release(self, run_id: str) -> None:
        """Give the slot back. One the store cannot take back now (a full disk) is owed: given back once it takes
        writes again — the run has ended, and its ending, not this, is what the user hears."""
        self._held.discard(run_id)
        try:
            await self.store.slots.release(run_id)
        except StoreError:
            self.store.owe(f"release slot {run_id}", lambda: self.store.slots.release(run_id))
        self._wake()
