"""The Textual app: opens the runtime after the first frame, then hands over to the main screen.

The runtime (store, profiles, spawner …) is built inside the app's event loop, off the start-up path:
the first frame is a bare "starting" screen, and provider SDKs are warmed in a thread afterwards.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from yeetui.tui.themes import discover_themes, save_theme, saved_theme


class StartingScreen(Screen):
    def compose(self) -> ComposeResult:
        yield Static("yeetui — starting…", id="starting")


class YeetuiApp(App):
    TITLE = "yeetui"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        Binding("ctrl+p", "command_palette", "Commands", id="command_palette", priority=True, show=False),
        Binding("ctrl+s", "switcher", "Sessions", id="switcher", priority=True),
        Binding("f2", "toggle_pair", "Pair", id="toggle_pair", priority=True),
        Binding("escape", "interrupt", "Interrupt", id="interrupt"),
        Binding("ctrl+b", "toggle_inbox", "Inbox", id="toggle_inbox"),
        Binding("ctrl+o", "parent_session", "Parent", id="parent_session", show=False),
    ]

    def __init__(self, *, cwd: Path | None = None, resume: str | None = None, continue_latest: bool = False,
                 model: str | None = None, runtime: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.cwd = cwd
        self.resume = resume
        self.continue_latest = continue_latest
        self.model_override = model
        self.runtime = runtime
        self.boot_error: str | None = None
        self._own_runtime = runtime is None
        self._theme_warnings: list[str] = []
        for theme in self._load_themes():
            self.register_theme(theme)

    def _load_themes(self):
        themes, self._theme_warnings = discover_themes()
        return themes

    def on_mount(self) -> None:
        chosen = saved_theme()
        default = self.runtime.settings.theme if self.runtime else "yeetui-dark"
        for name in (chosen, default, "yeetui-dark"):
            if name and name in self.available_themes:
                self.theme = name
                break
        self.push_screen(StartingScreen())
        # Boot after the first frame is on screen: building the runtime must not delay it.
        self.call_after_refresh(lambda: self.run_worker(self._boot(), name="boot", exclusive=True))

    async def _boot(self) -> None:
        from yeetui.errors import YeetuiError
        from yeetui.tui.screens.main import MainScreen

        if self.runtime is None:
            from yeetui.runtime import Runtime

            try:
                self.runtime = await Runtime.open(cwd=self.cwd)
            except YeetuiError as exc:
                self.boot_error = str(exc)
                self.query_one("#starting", Static).update(f"yeetui could not start:\n\n{exc}\n\nctrl+q quits.")
                return
        keymap = dict(self.runtime.settings.keymap)
        if keymap:
            self.set_keymap(keymap)
        screen = MainScreen(self.runtime, resume=self.resume, continue_latest=self.continue_latest,
                            model=self.model_override, extra_warnings=self._theme_warnings)
        await self.switch_screen(screen)
        self.run_worker(self._warm_providers(), name="warm", exclusive=False)

    async def _warm_providers(self) -> None:
        """Import the provider SDK of the default model in a daemon thread, so the first prompt doesn't stall
        — and quitting right after start doesn't wait for an import nobody needs any more."""
        model = self.model_override or self.runtime.settings.model
        if model.startswith("anthropic/"):
            threading.Thread(target=importlib.import_module, args=("anthropic",), daemon=True,
                             name="yeetui-warm-sdk").start()

    # -- actions that belong to the main screen ----------------------------------------------------

    def _main(self):
        from yeetui.tui.screens.main import MainScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, MainScreen):
                return screen
        return None

    async def action_switcher(self) -> None:
        if main := self._main():
            await main.open_switcher()

    async def action_toggle_pair(self) -> None:
        if main := self._main():
            await main.toggle_pair()

    async def action_interrupt(self) -> None:
        if main := self._main():
            await main.interrupt()

    def action_toggle_inbox(self) -> None:
        if main := self._main():
            main.toggle_inbox()

    async def action_parent_session(self) -> None:
        if main := self._main():
            await main.open_parent()

    async def action_profile_hotkey(self, profile: str) -> None:
        if main := self._main():
            await main.profile_hotkey(profile)

    def watch_theme(self, theme: str) -> None:
        if self.runtime is not None and self.screen_stack and not isinstance(self.screen, StartingScreen):
            save_theme(theme)  # a choice made in the running app (palette or /theme) persists

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        main = self._main()
        if main is None:
            return
        for command in main.commands:
            if command.name in ("quit", "theme"):
                continue
            yield SystemCommand(f"/{command.name}", command.help, main.palette_callback(command))

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
        if self.runtime is not None and self._own_runtime:
            await self.runtime.close()
