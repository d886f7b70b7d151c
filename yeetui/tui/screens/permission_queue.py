"""The permission questions of runs, one dialog at a time, in the order they came.

A question of another process's run (a pane's worker, a detached run) is asked through the store, where any
yeetui may answer it first: its dialog closes then, and the screen says how it was settled.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from yeetui import events as ev
from yeetui.application.fleet import FleetDesk
from yeetui.application.permissions import answer_permission
from yeetui.errors import YeetuiError
from yeetui.tui.bridge import permission_preview
from yeetui.tui.screens.permission import PermissionScreen

log = logging.getLogger(__name__)

Show = Callable[[PermissionScreen, Callable[[str | None], None]], object]
"""Puts a dialog on screen, calling back with the answer it closed with."""


class PermissionQueue:
    def __init__(self, fleet: FleetDesk, *, show: Show, later: Callable[[Coroutine[Any, Any, None]], object],
                 tell: Callable[[str], Awaitable[None]]) -> None:
        self.fleet = fleet
        self._show, self._later, self._tell = show, later, tell
        self._waiting: deque[ev.PermissionRequested] = deque()
        self._asking = False
        self._stored: dict[asyncio.Future[ev.PermissionAnswer], int] = {}
        """The store's question behind each request another process asks through it (by its reply)."""

    async def ask(self, request: ev.PermissionRequested) -> None:
        """Ask `request` when the dialogs before it have closed."""
        if (ask_id := await self._stored_question(request)) is not None:
            self._stored[request.reply] = ask_id
        self._waiting.append(request)
        self._next()

    async def _stored_question(self, request: ev.PermissionRequested) -> int | None:
        """The store's id of a question another process asks through it, which another window may answer."""
        try:
            return await self.fleet.stored_question(request, taken=self._stored.values())
        except YeetuiError:
            log.exception("could not find permission question of %s in the store", request.agent_label)
            return None

    def _next(self) -> None:
        if self._asking:
            return
        while self._waiting:
            request = self._waiting.popleft()
            if request.reply.done():  # settled before its dialog came up: nothing was shown, nothing to say
                self._stored.pop(request.reply, None)
                continue
            self._asking = True

            def answered(answer: str | None, request: ev.PermissionRequested = request) -> None:
                if not answer_permission(request, answer):  # settled elsewhere while on screen: say how
                    self._later(self._say_settled(request))
                else:
                    self._stored.pop(request.reply, None)
                self._asking = False
                self._next()

            screen = PermissionScreen(request.agent_label, request.tool, request.subject, request.arguments,
                                      permission_preview(request.tool, request.arguments))

            def settled(_reply: asyncio.Future[ev.PermissionAnswer], dialog: PermissionScreen = screen) -> None:
                dialog.settle()  # answered in another window, withdrawn, or here (then it is closed already)

            request.reply.add_done_callback(settled)
            self._show(screen, answered)
            return

    async def _say_settled(self, request: ev.PermissionRequested) -> None:
        """A dialog closed without the user's answer: how its question was answered in another window, or why
        nobody needs the answer any more."""
        ask_id = self._stored.pop(request.reply, None)
        try:
            said = await self.fleet.how_settled(request, ask_id)
        except YeetuiError as exc:
            said = f"{request.agent_label}'s {request.tool} question was settled elsewhere ({exc})."
        await self._tell(said)
