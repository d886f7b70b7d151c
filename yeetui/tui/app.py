"""The Textual app: the first frame is the real layout with a live composer; the runtime is built behind it.

Start-up, in order (see also yeetui/tui/startup.py):

1. `StartingScreen` paints the main screen's layout — the conversation area ("loading session…"), the inbox
   frame, the composer and the footer — with the composer focused, so the user types at once. This path
   imports no domain module (pydantic, the store, the runtime): see tests/tui/test_app.py.
2. The boot worker imports the domain in a thread (keys keep echoing meanwhile), opens the Runtime and
   builds the MainScreen.
3. The handover runs on the app's own message loop, so no key is dispatched while it runs: it lets the
   starting composer handle every key already sent to it, carries its draft (text, cursor, history) into
   the MainScreen and switches. The MainScreen focuses its composer before the app dispatches another key.
4. What needs a session — a message sent with Enter, f2, ctrl+s, ctrl+b, ctrl+o — waits in `pending`
   meanwhile (sent messages are shown as queued); the MainScreen runs it in order once its session is open.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.filter import LineFilter
from textual.screen import Screen
from textual.theme import Theme

from yeetui.heavy_imports import gc_paused
from yeetui.tui.gc_pacing import FullCollections, calm_gc
from yeetui.tui.startup import Pending, StartingScreen
from yeetui.tui.terminal_filter import TerminalControls
from yeetui.tui.themes import discover_themes, save_theme, saved_theme

if TYPE_CHECKING:
    from yeetui.application.surface import Surface
    from yeetui.tui.screens.main import MainScreen
    from yeetui.tui.widgets.conversation_window import EntryWindow

__all__ = ["StartingScreen", "YeetuiApp"]
DOMAIN = ("yeetui.application.surface", "yeetui.tui.screens.main", "yeetui.application.mcp", "yeetui.tui.screens.trust",
          "yeetui.tui.screens.mcp_approval")
"""What the boot worker imports off the event loop: everything the main screen needs comes with the first two,
the rest are what it asks about before the runtime opens (trust, MCP approvals)."""
QUIT_WINDOW = 2.0
"""Seconds within which a second ctrl+c (with nothing running to stop) quits."""


def _import_domain(*, calm: bool) -> None:
    """With the collector paused: it would otherwise run full collections over the growing heap of new
    modules and classes, none of it garbage (~45 ms of the ~300 these imports take, 2-core machine). With
    `calm`, what they made is frozen (`calm_gc`) before the collector resumes, or its first young collection
    and the one after it walk all of it (~40 ms, with the screen waiting on the event loop)."""
    with gc_paused():
        for name in DOMAIN:
            importlib.import_module(name)
        if calm:
            calm_gc()


class YeetuiApp(App[None]):
    LEDGER_CLOCK: Callable[[], float] = staticmethod(time.monotonic)
    """The clock the status ledger's elapsed times read (snapshot tests freeze it)."""
    TITLE = "yeetui"
    # Absolute, so subclasses elsewhere find them. The main screen's CSS is read with the app's: read when
    # that screen first shows, it would make Textual re-parse all CSS in the middle of the handover.
    CSS_PATH = [str(Path(__file__).with_name("app.tcss")), str(Path(__file__).parent / "screens" / "main.tcss")]
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        Binding("ctrl+p", "command_palette", "Commands", id="command_palette", priority=True, show=False),
        Binding("ctrl+s", "switcher", "Sessions", id="switcher", priority=True),
        Binding("f2", "toggle_pair", "Pair", id="toggle_pair", priority=True),
        Binding("escape", "interrupt", "Interrupt", id="interrupt"),
        Binding("ctrl+c", "interrupt_or_quit", "Interrupt / quit", id="interrupt_or_quit", priority=True,
                show=False),
        Binding("ctrl+b", "toggle_inbox", "Inbox", id="toggle_inbox"),
        Binding("ctrl+g", "fleet", "Fleet", id="fleet", show=False),
        Binding("ctrl+o", "parent_session", "Parent", id="parent_session", show=False),
    ]

    _TERMINAL_CONTROLS = TerminalControls()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, and one that keeps control characters off the terminal (`terminal_filter.py`)."""
        return [*super().get_line_filters(), self._TERMINAL_CONTROLS]

    def __init__(self, *, cwd: Path | None = None, resume: str | None = None, continue_latest: bool = False,
                 model: str | None = None, surface: Surface | None = None, tune_gc: bool = False,
                 setup_logging: Callable[[], None] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.setup_logging = setup_logging
        """The front end's logging set-up, run by the boot worker: after the first frame (the log's key-redacting
        patterns cost ~15 ms of it), before the domain is imported."""
        self.cwd = cwd
        self._ctrl_c_at: float | None = None
        self.tune_gc = tune_gc
        self.full_collections = FullCollections()
        """Calm the garbage collector (`calm_gc`) from the start, freezing what exists at each step (Textual, the
        domain, the open session); the real binary does, tests that run many apps in one process don't."""
        self.resume = resume
        self.continue_latest = continue_latest
        self.exit_note: str | None = None
        """Printed to the terminal once the app has closed (what quitting stopped)."""
        self.model_override = model
        self.surface = surface
        """What the app does and reads (opened by the boot worker unless given)."""
        self.boot_error: str | None = None
        self.pending: list[Pending[MainScreen]] = []
        """Sent messages and main-screen actions waiting for the session (the MainScreen empties it)."""
        self._waiting_main: MainScreen | None = None
        self._own_surface = surface is None
        self._theme_warnings: list[str] = []
        for theme in self._load_themes():
            self.register_theme(theme)

    def _load_themes(self) -> list[Theme]:
        themes, self._theme_warnings = discover_themes()
        return themes

    def on_mount(self) -> None:
        if self.tune_gc:  # Textual and the first screen are imported: frozen, the first frame walks none of it
            calm_gc()  # (a full collection over them took 25-35 ms just before the first paint)
        self._apply_theme(saved_theme(), self.surface.settings.theme if self.surface else None)
        self.push_screen(StartingScreen(self.pending, on_resume=self._resumed))
        # Boot after the first frame is on screen: building the runtime must not delay it.
        self.call_after_refresh(lambda: self.run_worker(self._boot(), name="boot", exclusive=True))

    def _apply_theme(self, *names: str | None) -> None:
        for name in (*names, "yeetui-dark"):
            if name and name in self.available_themes:
                self.theme = name
                return

    async def _boot(self) -> None:
        from yeetui.errors import YeetuiError

        if self.setup_logging is not None:
            await asyncio.to_thread(self.setup_logging)
        # Importing the domain takes a few hundred ms of Python: in a thread, the composer keeps echoing.
        await asyncio.to_thread(_import_domain, calm=self.tune_gc)
        from yeetui.tui.screens.main import MainScreen

        if self.surface is None:
            from yeetui.application.surface import FrontEnd, Surface

            try:
                await self._ask_trust()  # pane children's questions come to this app's dialog
                await self._ask_mcp_approvals()
                self.surface = await Surface.open(cwd=self.cwd, front_end=FrontEnd(
                    answers_asks=True, session_end="prompt_input_exit"))
            except YeetuiError as exc:
                self.boot_error = str(exc)
                for screen in self.screen_stack:
                    if isinstance(screen, StartingScreen):
                        screen.failed(str(exc))
                return
            if not saved_theme():  # config.yaml's theme, unless one was chosen in the app
                self._apply_theme(self.surface.settings.theme, self.theme)
        from yeetui.tui.screens.form import answer_in

        self.surface.mcp.answer_forms(answer_in(self))  # what an MCP server asks the user: a form here
        keymap = dict(self.surface.settings.keymap)
        if keymap:
            self.set_keymap(keymap)
        self._waiting_main = MainScreen(self.surface, resume=self.resume, continue_latest=self.continue_latest,
                                        model=self.model_override, extra_warnings=self._theme_warnings,
                                        pending=self.pending, ledger_clock=self.LEDGER_CLOCK)
        self.call_later(self.handover)

    async def _ask_trust(self) -> None:
        """Before the project's files are read for real: when they ask for more rights than an untrusted project
        gets, ask once whether to trust it (remembered, like `yeetui trust`); declined, they only narrow."""
        from yeetui.application.trust import is_trusted, project_files, project_widenings, set_trusted
        from yeetui.paths import find_project_root
        from yeetui.tui.screens.trust import TrustScreen

        project = find_project_root(self.cwd or Path.cwd())  # where Runtime.open will read the files
        if await asyncio.to_thread(is_trusted, project):
            return
        shown = await asyncio.to_thread(project_files, project)  # before reading what they grant: a change
        grants = await asyncio.to_thread(project_widenings, project)  # made meanwhile is not trusted unseen
        trusting = await self.push_screen_wait(TrustScreen(project, grants)) if grants else False
        if trusting:
            await asyncio.to_thread(set_trusted, project, files=shown)
            self.notify(f"Trusted {project}: its files take effect as written.", title="trust")

    async def _ask_mcp_approvals(self) -> None:
        """Before the runtime starts the MCP servers: each one a project's file defines that nobody approved yet
        is shown as it is configured, to start (remembered for exactly that) or not now."""
        from yeetui.application.mcp import McpServers
        from yeetui.errors import YeetuiError
        from yeetui.paths import find_project_root
        from yeetui.tui.screens.mcp_approval import McpApprovalScreen

        servers = McpServers(find_project_root(self.cwd or Path.cwd()))
        for row in await servers.waiting_for_approval():  # files it cannot read: Runtime.open warns of them
            spec = row.spec
            if not await self.push_screen_wait(McpApprovalScreen(row)):
                continue
            try:
                await servers.approve_shown(spec)
            except (YeetuiError, OSError) as exc:
                self.notify(f"Could not remember the approval of {spec.name}: {exc}", title="MCP", severity="error")
            else:
                self.notify(f"Approved the MCP server {spec.name}; it starts with this session.", title="MCP")

    def _resumed(self) -> None:
        """The starting screen is on top again (a modal opened during start-up closed)."""
        if self._waiting_main is not None:
            self.call_later(self.handover)

    async def handover(self) -> None:
        """Switch from the starting screen to the main screen, carrying the composer's draft over.

        Runs on the app's message loop (`call_later`), so no key is dispatched to any widget until the
        main screen has mounted and focused its composer: a key is either in the draft or reaches the
        main composer, in the order typed."""
        main = self._waiting_main
        starting = self.screen
        if main is None or not isinstance(starting, StartingScreen):
            return  # a modal is open over the starting screen: its resume calls again
        self._waiting_main = None
        main.carry = await starting.settle()
        await self.switch_screen(main)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.full_collections.key()  # full collections wait for a pause in the typing
        await super().on_event(event)

    def on_entry_window_dropped(self, message: EntryWindow.Dropped) -> None:
        """Views were unmounted: their garbage makes a full collection due sooner — at once, if the keyboard
        is quiet (scrolling with the wheel or the scrollbar), rather than at the next tick: many small
        collections keep the heap from growing where one large one a second later does not (paging down
        2,000 messages: RSS +20 % → +16 % of the opening RSS, collections 63 → 39 ms each)."""
        self.full_collections.dropped(message.views)
        if self.tune_gc:
            self.full_collections.tick()

    def on_main_screen_ready(self) -> None:
        """The session is open: now warm what the first answer needs (not earlier — it would compete with
        start-up)."""
        if self.tune_gc:
            calm_gc()
            self.set_interval(1.0, self.full_collections.tick, name="full collections")
        self.run_worker(self._warm(), name="warm", exclusive=False)

    async def _warm(self) -> None:
        """Import the Markdown renderer and the provider SDK of the default model in a daemon thread, so the
        first prompt and answer don't stall — and quitting right after start doesn't wait for an import nobody
        needs any more."""
        model = self.model_override or (self.surface.settings.model if self.surface else "")
        sdk = "anthropic" if model.startswith("anthropic/") else None
        threading.Thread(target=self._import_for_answers, args=(sdk,), daemon=True, name="yeetui-warm").start()

    def _import_for_answers(self, sdk: str | None) -> None:
        from yeetui.tui.widgets import markdown_text

        markdown_text.warm()
        if sdk is not None:
            importlib.import_module(sdk)
        if self.tune_gc:
            calm_gc()  # the SDK's modules are long-lived too

    # -- actions that belong to the main screen ----------------------------------------------------

    def _main(self) -> MainScreen | None:
        from yeetui.tui.screens.main import MainScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, MainScreen):
                return screen
        return None

    async def _on_main(self, act: Callable[[MainScreen], Awaitable[None]]) -> None:
        """Run `act` on the main screen, or keep it for when the session is open (start-up)."""
        if self.boot_error is not None:
            return
        main = self._main()
        if main is not None and main.ready:
            await act(main)
        else:
            self.pending.append(act)

    async def action_switcher(self) -> None:
        await self._on_main(lambda main: main.open_switcher())

    async def action_fleet(self) -> None:
        await self._on_main(lambda main: main.open_fleet())

    async def action_toggle_pair(self) -> None:
        await self._on_main(lambda main: main.toggle_pair())

    async def action_quit(self) -> None:
        """ctrl+q: quit; the answer in progress and the subagents this process runs stop with it (the runtime
        ends them as it closes), and the terminal is told which."""
        main = self._main()
        running: list[str] = []
        stopped: list[str] = []
        if main is not None and main.ready:
            running = main.running_subagents()
            if any(control.busy for control in main.controls.values()):
                stopped.append("the answer in progress")
        if running:
            stopped.append(f"{len(running)} running subagent{'s' if len(running) > 1 else ''} ({', '.join(running)})")
        if stopped:
            self.exit_note = (f"yeetui: stopped {' and '.join(stopped)} as it quit; `yeetui --continue` reopens the "
                              "conversation.")
        self.exit()

    async def action_interrupt(self) -> None:
        # During start-up nothing runs yet, so there is nothing to interrupt (and a queued message is
        # not taken back by a stray Esc).
        main = self._main()
        if main is not None and main.ready:
            await main.interrupt()

    async def action_interrupt_or_quit(self) -> None:
        """ctrl+c as in other agent terminals: copy a selection; else stop what runs in the session on screen;
        else, pressed twice within `QUIT_WINDOW` seconds, quit."""
        focused = self.focused
        selected = getattr(focused, "selected_text", "")
        if isinstance(selected, str) and selected:
            self.copy_to_clipboard(selected)
            return
        main = self._main()
        if main is not None and main.ready and await main.interrupt():
            self._ctrl_c_at = None
            return
        now = time.monotonic()
        if self._ctrl_c_at is not None and now - self._ctrl_c_at <= QUIT_WINDOW:
            self.exit()
            return
        self._ctrl_c_at = now
        self.notify("Press ctrl+c again to quit.", timeout=QUIT_WINDOW)

    async def action_toggle_inbox(self) -> None:
        async def toggle(main: MainScreen) -> None:
            main.toggle_inbox()

        await self._on_main(toggle)

    async def action_parent_session(self) -> None:
        await self._on_main(lambda main: main.open_parent())

    async def action_profile_hotkey(self, profile: str) -> None:
        await self._on_main(lambda main: main.profile_hotkey(profile))

    def watch_theme(self, theme: str) -> None:
        booting = not self.screen_stack or any(isinstance(s, StartingScreen) for s in self.screen_stack)
        if self.surface is not None and not booting:
            save_theme(theme)  # a choice made in the running app (palette or /theme) persists

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        main = self._main()
        if main is None:
            return
        from yeetui.tui.slash import palette_action  # here, not at import: the first frame needs no commands

        for command in main.commands:
            if command.name in ("quit", "theme"):  # Textual's own system commands do these
                continue
            yield SystemCommand(f"/{command.name}", command.help, palette_action(main, command))

    def _fatal_error(self) -> None:
        """Like Textual's, but without local variables in the traceback: they can hold the environment
        (API keys). The full traceback goes to the log file instead."""
        import logging
        import sys

        from rich.segment import Segments
        from rich.traceback import Traceback

        logging.getLogger("yeetui.tui").error("the TUI crashed", exc_info=sys.exc_info())
        self.bell()
        traceback = Traceback(show_locals=False, width=None)
        self._exit_renderables.append(Segments(self.console.render(traceback, self.console.options)))
        self._close_messages_no_wait()

    async def on_unmount(self) -> None:
        if self.surface is not None and self._own_surface:
            await self.surface.close()
