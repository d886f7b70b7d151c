"""The confirmation asked before merging, discarding, cancelling or aborting: keys typed ahead (a tab, an enter,
letters) and clicks within its window never answer it, nor move its focus off "No"; past the window (the
`settle_clock` moves instead of the test waiting), a deliberate choice answers."""

from __future__ import annotations

import pytest
from textual.widgets import Button

from tests.tui.deliberate import SettleClock, shown
from tests.tui.test_panels import PanelApp, run
from tests.waiting import pilot_until
from yeetui.tui.screens.confirm import NO, YES, ConfirmScreen
from yeetui.tui.screens.deliberate import WAITING


async def _ask(app: PanelApp, pilot) -> tuple[ConfirmScreen, list[bool | None]]:
    results: list[bool | None] = []
    app.push_screen(ConfirmScreen("Merge builder#1 into your branch?", "yeetui/build/builder-1 into main",
                                  yes="Merge"), results.append)
    return await shown(pilot), results


async def test_keys_typed_ahead_never_answer_a_confirmation(settle_clock: SettleClock) -> None:
    app = PanelApp()
    async with run(app) as pilot:
        screen, results = await _ask(app, pilot)
        assert app.focused is screen.query_one(f"#{NO}", Button)
        assert screen.query_one("#confirm-box").border_subtitle == WAITING
        await pilot.press("tab", "enter", "right", "space", "y", "m", "escape")  # all at once, as typed ahead
        await pilot.pause()
        assert results == [] and app.screen is screen
        assert app.focused is screen.query_one(f"#{NO}", Button), "typed-ahead keys do not move the focus"

        settle_clock.advance(ConfirmScreen.SETTLE - 0.1)  # still within the window: the keys restarted it
        await pilot.press("tab", "enter")
        assert results == [] and app.screen is screen

        settle_clock.advance(ConfirmScreen.SETTLE - 0.1)  # the last ignored key restarted it again
        await pilot.press("enter")
        assert results == [] and app.screen is screen

        settle_clock.advance(ConfirmScreen.SETTLE)  # the keyboard was quiet long enough
        await pilot.press("y", "m")  # no letter answers
        assert results == []
        await pilot.press("right", "enter")
        await pilot_until(pilot, lambda: results == [True])


async def test_a_click_on_yes_within_the_window_does_nothing_and_a_later_one_confirms(
        settle_clock: SettleClock) -> None:
    app = PanelApp()
    async with run(app) as pilot:
        screen, results = await _ask(app, pilot)
        assert await pilot.click(f"#{YES}")
        await pilot.pause()
        assert results == [] and app.screen is screen
        assert app.focused is screen.query_one(f"#{NO}", Button), "the click did not move the focus either"
        await pilot.press("enter")  # on "No", still within the window
        assert results == []
        settle_clock.past_window()
        yes = screen.query_one(f"#{YES}", Button)
        await pilot_until(pilot, lambda: not yes.has_class("-active"))  # (a button takes no click while it flashes)
        assert await pilot.click(f"#{YES}")
        await pilot_until(pilot, lambda: results == [True])


@pytest.mark.parametrize("keys", [["enter"], ["escape"]], ids=["enter-on-no", "escape"])
async def test_no_is_where_the_focus_starts_and_escape_says_no(settle_clock: SettleClock, keys: list[str]) -> None:
    app = PanelApp()
    async with run(app) as pilot:
        _, results = await _ask(app, pilot)
        settle_clock.past_window()
        await pilot.press(*keys)
        await pilot_until(pilot, lambda: results == [False])
