"""At 80×24 the inbox is hidden: its unread count shows in the header line, and the footer's hints are cut
between hints, never mid-word."""

from __future__ import annotations

import html
import re
from pathlib import Path

from tests.tui.test_app import _main
from tests.waiting import pilot_until
from yeetui import events as ev
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.widgets.footer import FittedFooter
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.inbox_badge import InboxBadge


def screen_lines(app: YeetuiApp) -> list[str]:
    """The text on screen, row by row (from the SVG screenshot)."""
    svg = app.export_screenshot()
    rows: dict[float, list[str]] = {}
    for y, text in re.findall(r'<text class="[^"]*" x="[^"]*" y="([^"]*)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(y), []).append(html.unescape(re.sub("<[^>]+>", "", text)))
    return ["".join(rows[y]).replace("\xa0", " ") for y in sorted(rows)]


async def _deliver(app: YeetuiApp, main: MainScreen, title: str) -> None:
    store = app.surface.store
    assert main.current is not None
    item = await store.inbox.add(session_id=main.current, kind="completion", title=title, body="done")
    app.surface.bus.publish(ev.InboxItemAdded(item.id, main.current, None, "completion", title, "done"))


async def test_the_hidden_inbox_shows_its_unread_count_at_80x24(fake_env, project: Path) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await _main(pilot)
        assert not main.query_one(InboxPanel).display, "too narrow: the inbox starts hidden"
        badge = main.query_one(InboxBadge)
        assert not badge.display
        await _deliver(app, main, "oracle#1 — completed")
        await pilot_until(pilot, lambda: badge.display and badge.region.width > 0)
        await pilot.pause()
        assert "inbox 1 unread · ctrl+b" in screen_lines(app)[0]
        await pilot.press("ctrl+b")  # shown: the inbox says it itself
        await pilot_until(pilot, lambda: main.query_one(InboxPanel).display and not badge.display)


async def test_hiding_the_inbox_with_ctrl_b_shows_the_count(fake_env, project: Path) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 30)) as pilot:
        main = await _main(pilot)
        await _deliver(app, main, "oracle#1 — completed")
        inbox, badge = main.query_one(InboxPanel), main.query_one(InboxBadge)
        await pilot_until(pilot, lambda: inbox.unread == 1)
        assert inbox.display and not badge.display
        await pilot.press("ctrl+b")
        await pilot_until(pilot, lambda: not inbox.display and badge.display)
        await _deliver(app, main, "oracle#2 — completed")
        await pilot_until(pilot, lambda: "inbox 2 unread" in str(badge.render()))


async def test_the_footer_is_cut_between_hints_at_80_columns(fake_env, project: Path) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await _main(pilot)
        footer = main.query_one(FittedFooter)

        def keys() -> tuple[list, list]:
            """The docked keys (the command palette's) and the others shown."""
            every = list(footer.query("FooterKey"))
            docked = [k for k in every if k.styles.dock == "right"]
            return docked, [k for k in every if k not in docked and k.display]

        def fitted() -> bool:
            """Every key shown is laid out (a key just mounted has no region yet, and would pass for one that
            fits) and ends before the docked ones, and some are left out: 80 columns cannot hold them all."""
            docked, shown = keys()
            laid_out = all(k.region.width > 0 for k in [*docked, *shown])
            some_left_out = len(shown) + len(docked) < len(footer.query("FooterKey"))
            return bool(docked and shown) and laid_out and some_left_out and all(
                k.region.right <= docked[0].region.x for k in shown
            )

        await pilot_until(pilot, fitted)
        await pilot.pause()
        _, shown = keys()
        assert fitted(), "the footer stays cut once it is fitted"
        bottom = screen_lines(app)[-1]
        hints = bottom.split("▏")[0].rstrip()
        assert hints.endswith(shown[-1].description), (hints, shown[-1].description)
