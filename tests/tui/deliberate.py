"""Driving the dialogs keys typed ahead cannot answer (yeetui.tui.screens.deliberate) without waiting out their
window: the `settle_clock` fixture (tests/tui/conftest.py) stands in for their clock, and time moves only when
a test says so."""

from __future__ import annotations

from typing import Any

from tests.waiting import pilot_until
from yeetui.tui.screens.confirm import ConfirmScreen
from yeetui.tui.screens.deliberate import DeliberateScreen


class SettleClock:
    """`DeliberateScreen.clock` for tests: a number that moves only with `advance` / `past_window`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def past_window(self) -> None:
        """Further than any dialog's window."""
        self.now += 60.0


async def shown(pilot: Any, kind: type[DeliberateScreen[Any]] = ConfirmScreen) -> Any:
    """The dialog of `kind` once it is on top and drawn (its window counts from then)."""
    await pilot_until(pilot, lambda: isinstance(pilot.app.screen, kind))
    screen = pilot.app.screen
    await pilot_until(pilot, lambda: screen.shown_at is not None)
    return screen


async def answer(pilot: Any, clock: SettleClock, *, yes: bool) -> None:
    """Answer the confirmation on top, deliberately: past its window, tab to the action's button and enter — or
    enter on "No", where the focus starts."""
    screen = await shown(pilot)
    clock.past_window()
    await pilot.press(*(["tab", "enter"] if yes else ["enter"]))
    await pilot_until(pilot, lambda: pilot.app.screen is not screen)
