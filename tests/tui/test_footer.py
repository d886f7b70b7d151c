"""The footer mounts its keys again only when what it shows changes, not on every focus change."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from yeetui.tui.widgets.footer import FittedFooter


class CountingFooter(FittedFooter):
    def __init__(self) -> None:
        super().__init__()
        self.recomposed = 0

    async def recompose(self) -> None:
        self.recomposed += 1
        await super().recompose()


class Special(Input):
    BINDINGS = [Binding("ctrl+x", "special", "Do the special thing")]

    def action_special(self) -> None:
        pass


class Host(App[None]):
    BINDINGS = [Binding("ctrl+b", "bell", "Ring")]

    def compose(self) -> ComposeResult:
        yield Input(id="one")
        yield Input(id="two")
        yield Special(id="special")
        yield CountingFooter()


def descriptions(footer: FittedFooter) -> list[str]:
    return [key.description for key in footer.query(FooterKey)]


async def settle(pilot: Any) -> None:
    for _ in range(3):
        await pilot.pause()


async def test_focus_moving_between_widgets_with_the_same_keys_leaves_the_footer_alone() -> None:
    app = Host()
    async with app.run_test(size=(100, 12)) as pilot:
        footer = app.query_one(CountingFooter)
        await settle(pilot)
        assert "Ring" in descriptions(footer)
        before = footer.recomposed
        for _ in range(3):
            app.query_one("#two", Input).focus()
            await settle(pilot)
            app.query_one("#one", Input).focus()
            await settle(pilot)
        assert footer.recomposed == before
        assert "Ring" in descriptions(footer)


async def test_a_focused_widget_with_keys_of_its_own_shows_them_and_they_go_with_it() -> None:
    app = Host()
    async with app.run_test(size=(100, 12)) as pilot:
        footer = app.query_one(CountingFooter)
        await settle(pilot)
        assert "Do the special thing" not in descriptions(footer)
        app.query_one("#special", Special).focus()
        await settle(pilot)
        assert "Do the special thing" in descriptions(footer)
        app.query_one("#one", Input).focus()
        await settle(pilot)
        assert "Do the special thing" not in descriptions(footer)
        assert "Ring" in descriptions(footer)
