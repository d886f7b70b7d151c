"""Start-up: the screen shown while the runtime is built, and how the main screen takes over from it.

`StartingScreen` is the main screen's layout with a live, focused composer and placeholders around it; it
imports no domain module, so it is the first frame. What needs a session — a message sent with Enter, a
main-screen action (f2, ctrl+s, …) — waits in a `pending` list shared by the app, the starting screen and
the main screen. `SessionStart` (mixed into MainScreen) opens the session, then runs what is pending in the
order it came, and only then handles input directly (`ready`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from yeetui.tui.widgets.composer import Composer, Draft

if TYPE_CHECKING:
    from yeetui.tui.screens.main import MainScreen

Pending = str | Callable[["MainScreen"], Awaitable[None]]
"""A message the user sent, or an action on the main screen, waiting for the session to open."""
LOADING = "loading session…"


class StartingScreen(Screen):
    """The main screen's layout while the runtime is built: a live composer, placeholders around it.
    `on_resume` runs when a modal opened meanwhile (the command palette) closes."""

    AUTO_FOCUS = "#composer-input"

    def __init__(self, pending: list[Pending], on_resume: Callable[[], object] | None = None) -> None:
        super().__init__()
        self.pending = pending
        self._on_resume = on_resume

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield Static(LOADING, id="starting")
            yield Static(id="starting-inbox")
        yield Composer(id="composer")
        yield Static(id="starting-footer")  # the footer's bar: a real Footer costs ~35 ms of the first frame

    def on_mount(self) -> None:
        self.query_one("#starting-inbox", Static).border_title = "inbox"
        self.set_focus(self.query_one(Composer).input)  # keys typed from the very first frame land here

    def on_resize(self) -> None:
        """Like the main screen: no inbox below 100 columns."""
        self.query_one("#starting-inbox").display = self.size.width >= 100

    def on_screen_resume(self) -> None:
        if self._on_resume is not None:
            self._on_resume()

    @on(Composer.Submitted)
    def queue(self, message: Composer.Submitted) -> None:
        if text := message.text.strip():
            self.pending.append(text)
            self.show_pending()

    def show_pending(self) -> None:
        """Messages sent during start-up: counted above the composer, listed in the conversation area."""
        texts = [p for p in self.pending if isinstance(p, str)]
        self.query_one(Composer).set_busy(False, len(texts))
        lines = [LOADING, *(f"\nqueued, sent when the session is open:\n› {text}" for text in texts)]
        self.query_one("#starting", Static).update("\n".join(lines))

    def failed(self, error: str) -> None:
        """The runtime could not be built (a broken config file): say why; nothing can be sent."""
        self.pending.clear()
        starting = self.query_one("#starting", Static)
        starting.update(f"yeetui could not start:\n\n{error}\n\nctrl+q quits.")
        starting.add_class("-error")
        self.query_one(Composer).disabled = True

    async def settle(self) -> Draft:
        """Wait until the composer, and this screen, have handled every message already sent to them (keys
        become text, Enter becomes a pending message); then the composer's draft."""
        composer = self.query_one(Composer)
        for node in (composer.input, composer, self):
            done = asyncio.Event()
            if node.call_later(done.set):
                await done.wait()
        return composer.draft()


class SessionStart:
    """Mixed into MainScreen: on mount it takes over the starting screen's draft and the focus at once,
    then opens the session in a worker; input that comes before that is done waits in `pending`."""

    class Ready(Message, namespace="main_screen"):
        """The session is open and what was sent during start-up has been handled."""

    pending: list[Pending]
    ready: bool
    """The session is open and `pending` is empty: input is handled at once."""
    carry: Draft | None
    """The starting screen's composer draft, taken over on mount."""

    def take_over(self: Any) -> None:
        """Synchronous, so the composer has the draft and the focus before the app dispatches another key
        (see YeetuiApp.handover)."""
        composer = self.query_one(Composer)
        if self.carry is not None:
            composer.restore(self.carry)
        self.show_pending()
        self.set_focus(composer.input)
        self.run_worker(self.start(), name="start", exclusive=False)

    async def start(self: Any) -> None:
        session_id = await self.initial_session()
        await self.open_session(session_id)
        self._bind_profile_hotkeys()
        for warning in [*self.runtime.warnings, *self.extra_warnings]:
            await self.view().add_notice("warning", warning)
        if problem := self.provider_problem():
            await self.view().add_notice("warning", problem)
        self.show_pending()
        while self.pending:  # in the order they came; more may come while one is handled
            item = self.pending.pop(0)
            if isinstance(item, str):
                await self.handle_input(item)
            else:
                await item(self)
        self.ready = True
        control = self.controls.get(self.current or "")  # the queued hint now belongs to the session again
        self.query_one(Composer).set_busy(bool(control and control.busy), len(control.queue) if control else 0)
        self.post_message(self.Ready())

    def hold(self: Any, text: str) -> bool:
        """Keep `text` for later if the session is not open yet."""
        if self.ready:
            return False
        self.pending.append(text)
        self.show_pending()
        return True

    def show_pending(self: Any) -> None:
        """Messages sent before the session was open show as queued above the composer."""
        if queued := sum(1 for item in self.pending if isinstance(item, str)):
            self.query_one(Composer).set_busy(False, queued)

    async def initial_session(self: Any) -> str:
        store = self.runtime.store
        if self.resume:
            return (await store.resolve_session(self.resume)).id
        if self.continue_latest and (latest := await store.latest_session()):
            return latest.id
        profile = self.runtime.profiles.get(self.runtime.settings.primary_profile)
        return (await self.runtime.new_session(profile, model=self.model)).id

    def provider_problem(self: Any) -> str | None:
        from yeetui.config import provider_setup_problem

        return provider_setup_problem(self.runtime.settings, self.model or self.runtime.settings.model,
                                      self.runtime.env)
