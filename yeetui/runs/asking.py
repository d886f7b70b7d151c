"""Answering a pane worker's permission questions from another process.

A worker in a tmux pane runs without a dialog of its own. When its run was started by a yeetui that asks the
user (`RunOptions.ask_here`), every `PermissionRequested` on the worker's bus — its run's and its in-process
children's — is written to the store as a question for whoever follows the pane; the worker then waits for the
answer there. The question is withdrawn when the tool call stops waiting (the run was cancelled or timed out),
so a dialog opened later answers nothing. Until someone answers, the run shows `waiting_permission`, and its
own timeout still ends it.
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


class AskThroughStore:
    def __init__(self, store: Store, pane_run_id: str, *, poll: float = POLL) -> None:
        self.store = store
        self.pane_run_id = pane_run_id
        self.poll = poll
        self._waiting: set[asyncio.Task[None]] = set()

    def listen(self, event: object) -> None:
        """A bus listener: take over every question not answered yet."""
        if isinstance(event, PermissionRequested) and not event.reply.done():
            task = asyncio.ensure_future(self._ask(event))
            self._waiting.add(task)
            task.add_done_callback(self._waiting.discard)

    async def _ask(self, request: PermissionRequested) -> None:
        try:
            ask_id = await self.store.permission_asks.post(
                self.pane_run_id, run_id=request.run_id, session_id=request.session_id,
                agent_label=request.agent_label, tool=request.tool, subject=request.subject,
                arguments=request.arguments)
        except YeetuiError as exc:
            log.error("could not pass a permission question on (%s); it is refused", exc)
            if not request.reply.done():
                request.reply.set_result("deny")
            return
        answer: str | None = None
        try:
            while not request.reply.done():
                answer = await self.store.permission_asks.read_answer(ask_id)
                if answer is not None:
                    if not request.reply.done():
                        request.reply.set_result(cast(PermissionAnswer, "deny" if answer == "withdrawn" else answer))
                    return
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
