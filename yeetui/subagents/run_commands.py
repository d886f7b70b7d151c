"""Commands between yeetui processes about runs (cancel, abort, steer), through the store's `run_commands`:
posted for a run another process executes, and taken, for the runs this process executes, by a poller while
any is live (and by each run before every turn). What a taken command does is the spawner's to say (`act`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection

from yeetui.errors import YeetuiError
from yeetui.store import Store
from yeetui.store.coordination import RunCommand
from yeetui.subagents.elsewhere import process_running
from yeetui.subagents.spawn_request import SpawnRefused

log = logging.getLogger(__name__)

COMMAND_POLL = 0.2
"""Seconds between looks for commands (cancel, steer) other yeetui processes left for this one's runs."""

ActOn = Callable[[RunCommand], Awaitable[None]]


class RunCommands:
    def __init__(self, store: Store, *, poll: float = COMMAND_POLL) -> None:
        self.store = store
        self.poll = poll
        self._pump: asyncio.Task[None] | None = None

    async def post(self, run_id: str, kind: str, body: str = "", *, sender: str = "user") -> None:
        """Tell the process that executes `run_id` to `kind` it (`cancel`, `abort`, `steer` with `body`).
        Refused for a run that is not running, or that no spawner would pick the command up for."""
        run = await self.store.get_run(run_id)
        if run is None or run.status.is_final or not process_running(run.pid):
            raise SpawnRefused(f"Run {run_id} is not running (it may have finished).")
        if not run.options:  # a conversation's own run, executed outside any spawner: nobody would pick it up
            raise SpawnRefused(f"Run {run_id} is a conversation's own run, not a subagent; interrupt it there.")
        await self.store.run_commands.post(run.id, kind, body, sender=sender)

    def keep_taking(self, live: Callable[[], Collection[str]], act: ActOn) -> None:
        """While `live()` names runs, take the commands left for them and `act` on each; one poller at a
        time (a call while it goes on does nothing)."""
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._take_while_live(live, act), name="yeetui run commands")

    async def _take_while_live(self, live: Callable[[], Collection[str]], act: ActOn) -> None:
        while run_ids := live():
            try:
                await self.take(run_ids, act)
            except YeetuiError:
                log.exception("could not read the commands for this process's runs")
            await asyncio.sleep(self.poll)

    async def take(self, run_ids: Collection[str], act: ActOn) -> None:
        """Take the open commands for these runs (each taken once, whichever process looks) and act on them."""
        for command in await self.store.run_commands.take(run_ids):
            await act(command)

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
