"""Answering a pane worker's permission questions from another process.

A worker in a tmux pane runs without a dialog of its own. When its run was started by a yeetui that asks the
user (`RunOptions.ask_here`), every `PermissionRequested` on the worker's bus — its run's and its in-process
children's — is written to the store as a question for whoever follows the pane; the worker then waits for the
answer there. The question is withdrawn when the tool call stops waiting (the run was cancelled or timed out),
so a dialog opened later answers nothing. Until someone answers, the run shows `waiting_permission`, and its
own timeout still ends it. A run nobody follows (an MCP client's `spawn`) asks every yeetui that shows dialogs
instead (`open_to_all`), or, with none running, refuses as unattended. A detached `agents start` run asks them
too but waits (`wait`) while none runs — the fleet view, or a TUI opened later, answers — up to its ask timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import cast

from yeetui.errors import YeetuiError
from yeetui.events import PermissionAnswer, PermissionRequested
from yeetui.store import Store

log = logging.getLogger(__name__)

POLL = 0.2
"""Seconds between looks for the answer."""
PRESENCE_EVERY = 10
"""Looks for the answer between two looks for a yeetui that could give it (an open-to-all question)."""


class AskThroughStore:
    """`open_to_all`: the run has no yeetui following it (an MCP client started it); its questions are asked in
    every yeetui showing dialogs, and refused as unattended when none runs — at the question, or later, when the
    last one quits before anybody answered."""

    def __init__(self, store: Store, pane_run_id: str, *, poll: float = POLL, open_to_all: bool = False,
                 wait: bool = False, timeout: float | None = None) -> None:
        self.store = store
        self.pane_run_id = pane_run_id
        self.poll = poll
        self.open_to_all = open_to_all
        self.wait = wait
        """Wait for an answer even while no yeetui is open to give it."""
        self.timeout = timeout
        """Seconds a question waits before it is refused as unattended (None: no limit of its own)."""
        self._waiting: set[asyncio.Task[None]] = set()

    def listen(self, event: object) -> None:
        """A bus listener: take over every question not answered yet."""
        if isinstance(event, PermissionRequested) and not event.reply.done():
            task = asyncio.ensure_future(self._ask(event))
            self._waiting.add(task)
            task.add_done_callback(self._waiting.discard)

    async def _ask(self, request: PermissionRequested) -> None:
        try:
            unattended = self.open_to_all and not self.wait and not await self.store.front_ends.any_present()
            ask_id = await self.store.permission_asks.post(
                self.pane_run_id or request.run_id, run_id=request.run_id, session_id=request.session_id,
                agent_label=request.agent_label, tool=request.tool, subject=request.subject,
                arguments=request.arguments, unattended=unattended, open_to_all=self.open_to_all)
        except YeetuiError as exc:
            log.error("could not pass a permission question on (%s); it is refused", exc)
            if not request.reply.done():
                request.reply.set_result("deny")
            return
        if unattended:
            if not request.reply.done():
                request.reply.set_result("unattended")
            return
        answer: str | None = None
        looks = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout if self.timeout is not None else None
        try:
            while not request.reply.done():
                answer = await self.store.permission_asks.read_answer(ask_id)
                nobody = answer is None and (
                    (deadline is not None and loop.time() >= deadline)
                    or (self.open_to_all and not self.wait and looks % PRESENCE_EVERY == PRESENCE_EVERY - 1
                        and not await self.store.front_ends.any_present()))
                if nobody:  # refused as unattended — unless somebody answered meanwhile
                    answer = "unattended" if await self.store.permission_asks.answer(ask_id, "unattended") \
                        else await self.store.permission_asks.read_answer(ask_id)
                if answer is not None:
                    if not request.reply.done():
                        request.reply.set_result(cast(PermissionAnswer, "deny" if answer == "withdrawn" else answer))
                    return
                looks += 1
                await asyncio.sleep(self.poll)
        finally:
            if answer is None:  # the call stopped waiting (or this worker is closing): nobody needs to answer
                try:
                    await self.store.permission_asks.answer(ask_id, "withdrawn")
                except YeetuiError:
                    log.exception("could not withdraw permission question %s", ask_id)

    async def close(self) -> None:
        for task in list(self._waiting):
            task.cancel()
        await asyncio.gather(*self._waiting, return_exceptions=True)


class RefuseThroughStore:
    """A pane worker nobody follows to ask (its run came from `yeetui run` or `agents start`, without --yes):
    every question is refused as unattended, and each refusal is recorded in the store first — so the command
    that started the pane counts it in its summary — before the tool call hears the answer."""

    def __init__(self, store: Store, pane_run_id: str) -> None:
        self.store = store
        self.pane_run_id = pane_run_id
        self._recording: set[asyncio.Task[None]] = set()

    def listen(self, event: object) -> None:
        """A bus listener: take over every question not answered yet."""
        if isinstance(event, PermissionRequested) and not event.reply.done():
            task = asyncio.ensure_future(self._refuse(event))
            self._recording.add(task)
            task.add_done_callback(self._recording.discard)

    async def _refuse(self, request: PermissionRequested) -> None:
        try:
            await self.store.permission_asks.post(
                self.pane_run_id, run_id=request.run_id, session_id=request.session_id,
                agent_label=request.agent_label, tool=request.tool, subject=request.subject,
                arguments=request.arguments, unattended=True)
        except YeetuiError as exc:
            log.error("could not record a refused permission question (%s)", exc)
        finally:
            if not request.reply.done():
                request.reply.set_result("unattended")

    async def close(self) -> None:
        await asyncio.gather(*self._recording, return_exceptions=True)
