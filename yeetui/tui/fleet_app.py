"""`yeetui fleet` in a terminal: the fleet screen full-screen, on its own. Opening a run's session, attaching to
its tmux pane or a shell in its worktree hand the terminal over (`Handover`: yeetui on the session, tmux attach,
the user's shell) and come back to the fleet when that ends."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from textual.app import App

from yeetui.application.fleet import FleetDesk, FleetRow, Handover
from yeetui.errors import YeetuiError
from yeetui.tui.screens.fleet import FleetScreen
from yeetui.tui.themes import discover_themes, saved_theme

RunHandover = Callable[[Handover], int]
"""Runs a command in the terminal in the fleet's place; its exit status."""


class FleetApp(App[None]):
    TITLE = "yeetui fleet"

    def __init__(self, desk: FleetDesk, *, run_handover: RunHandover | None = None) -> None:
        super().__init__()
        self.desk = desk
        self.run_handover = run_handover or self._in_place
        for theme in discover_themes()[0]:
            self.register_theme(theme)

    def on_mount(self) -> None:
        for name in (saved_theme(), "yeetui-dark"):  # the theme the user chose in yeetui
            if name and name in self.available_themes:
                self.theme = name
                break
        self.push_screen(FleetScreen(self.desk, self, full=True), lambda _: self.exit())

    def _in_place(self, handover: Handover) -> int:
        with self.suspend():
            try:
                return subprocess.run(handover.argv, cwd=handover.cwd, check=False).returncode
            except OSError as exc:
                raise YeetuiError(f"Could not run {handover.argv[0]}: {exc}.") from None

    # -- FleetHost ------------------------------------------------------------------------------------

    async def open_row(self, row: FleetRow) -> str | None:
        self.run_handover(self.desk.open_session(row))
        await self.desk.mark_read(row)
        return f"Back from {row.label}'s session."

    async def attach_row(self, row: FleetRow) -> str | None:
        pane = await self.desk.pane(row)
        if pane is None:
            return f"{row.label} has no tmux pane (any more)."
        self.run_handover(self.desk.attach(pane))
        return f"Back from {row.label}'s pane."

    async def worktree_row(self, row: FleetRow) -> str | None:
        worktree = await self.desk.worktree(row)
        if worktree is None:
            return f"{row.label} works in no worktree of its own."
        self.run_handover(self.desk.shell(worktree))
        return f"Back from {row.label}'s worktree ({worktree.branch})."

    async def send_row(self, row: FleetRow, text: str) -> str | None:
        return await self.desk.send(row, text)

    def message_refusal(self, row: FleetRow) -> str | None:
        return self.desk.no_message(row)
