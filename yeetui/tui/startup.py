"""Start-up: the screen shown while the runtime is built, and how the main screen takes over from it.

`StartingScreen` is the main screen's layout with a live, focused composer and placeholders around it; it
imports no domain module, so it is the first frame. What needs a session — a message sent with Enter, a
main-screen action (f2, ctrl+s, …) — waits in a `pending` list shared by the app, the starting screen and
the main screen. The main screen's `SessionStart` opens the session, then runs what is pending in the order
it came, and only then lets the screen handle input directly (`ready`).

This module is imported for the first frame: domain modules only inside functions or for annotations. It
must not import yeetui.tui.screens (the main screen imports it): what it needs of that screen is
`SessionScreen`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static

from yeetui.tui.widgets.composer import Composer, Draft

if TYPE_CHECKING:
    from yeetui.application.surface import Surface


class SessionScreen(Protocol):
    """What start-up uses of the screen the session opens in (yeetui.tui.screens.main.MainScreen)."""

    @property
    def surface(self) -> Surface: ...

    @property
    def model(self) -> str | None: ...

    @property
    def composer(self) -> Composer: ...

    async def open_session(self, session_id: str) -> None: ...

    def bind_profile_hotkeys(self) -> None: ...

    async def notice(self, level: str, text: str) -> None: ...

    async def handle_input(self, text: str) -> None:
        """What Enter in the composer does once the session is open."""
        ...

    def show_busy(self) -> None:
        """The open session's busy state and queue, on the composer."""
        ...


ScreenT = TypeVar("ScreenT", bound=SessionScreen)
Pending = str | Callable[[ScreenT], Awaitable[None]]
"""A message the user sent, or an action on the main screen, waiting for the session to open."""
LOADING = "loading session…"


class StartingScreen(Screen[None]):
    """The main screen's layout while the runtime is built: a live composer, placeholders around it.
    `on_resume` runs when a modal opened meanwhile (the command palette) closes."""

    AUTO_FOCUS = "#composer-input"

    def __init__(self, pending: list[Pending[Any]], on_resume: Callable[[], object] | None = None) -> None:
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


class SessionStart(Generic[ScreenT]):
    """Opens the main screen's session in a worker, and keeps the input that comes before that is done in
    `pending`, to be run in order once it is."""

    def __init__(self, screen: ScreenT, pending: list[Pending[ScreenT]], *, resume: str | None = None,
                 continue_latest: bool = False, warnings: list[str] | None = None) -> None:
        self.screen = screen
        self.pending = pending
        """Shared with the app and the starting screen."""
        self.resume, self.continue_latest = resume, continue_latest
        self.warnings = warnings or []
        """Shown once the session is open, after the runtime's own."""
        self.notes: list[str] = []
        """Information found while opening the session (which one `--continue` picked), shown with the rest."""
        self.ready = False
        """The session is open and `pending` is empty: input is handled at once."""

    async def run(self) -> None:
        """Open the session, show the warnings, then run what is pending; `ready` once it is all done."""
        screen = self.screen
        await screen.open_session(await self.initial_session())
        screen.bind_profile_hotkeys()
        for warning in [*screen.surface.warnings, *self.warnings]:
            await screen.notice("warning", warning)
        for note in [*screen.surface.notes, *self.notes]:
            await screen.notice("info", note)
        if problem := self.provider_problem():
            await screen.notice("warning", problem)
        self.show_pending()
        while self.pending:  # in the order they came; more may come while one is handled
            item = self.pending.pop(0)
            if isinstance(item, str):
                await screen.handle_input(item)
            else:
                await item(screen)
        self.ready = True
        screen.show_busy()  # the queued hint now belongs to the session again

    def hold(self, text: str) -> bool:
        """Keep `text` for later if the session is not open yet."""
        if self.ready:
            return False
        self.pending.append(text)
        self.show_pending()
        return True

    def show_pending(self) -> None:
        """Messages sent before the session was open show as queued above the composer."""
        if queued := sum(1 for item in self.pending if isinstance(item, str)):
            self.screen.composer.set_busy(False, queued)

    async def initial_session(self) -> str:
        opened = await self.screen.surface.sessions.to_open(resume=self.resume, continue_latest=self.continue_latest,
                                                    model=self.screen.model)
        if opened.note:
            self.notes.append(opened.note)
        return opened.session_id

    def provider_problem(self) -> str | None:
        from yeetui.settings.config import (
            provider_setup_problem,  # not at import: this module is on the first frame's path
        )

        surface = self.screen.surface
        return provider_setup_problem(surface.settings, self.screen.model or surface.settings.model, surface.env)
