"""Nothing the user typed is thrown away: an unknown slash command stays in the composer (the notice names it
and points at /help), even when it was sent during start-up and another draft was begun meanwhile; and the
session switcher's filter, with `/` and enter, opens nothing and starts no session."""

from __future__ import annotations

from pathlib import Path

from tests.tui.test_app import GatedApp, _main, _starting, _text, _type
from tests.waiting import pilot_until
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.switcher import SessionTree, SwitcherScreen
from yeetui.tui.widgets.composer import Composer
from yeetui.tui.widgets.conversation import ConversationView


async def test_an_unknown_command_stays_in_the_composer_and_the_notice_names_it(fake_env, project: Path) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        main = await _main(pilot)
        typed = "/oracel why does the login test flake after the 2 s timer?"
        await _type(pilot, typed)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "Unknown command /oracel" in _text(view))
        assert main.query_one(Composer).text == typed
        notice = next(line for line in _text(view).splitlines() if "Unknown command /oracel" in line)
        assert "/oracle" in notice and "/help" in notice and "composer" in notice
        assert fake_env.requests == [], "nothing went to the model"


async def test_an_unknown_command_sent_during_start_up_keeps_the_draft_begun_since(fake_env, project: Path) -> None:
    app = GatedApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        await _starting(pilot)
        await pilot.press(*"/revew the diff", "enter")
        await pilot.press(*"next thought")
        app.gate.set()
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "Unknown command /revew" in _text(view))
        assert main.query_one(Composer).text == "/revew the diff\nnext thought"


async def test_the_switcher_filter_with_a_slash_and_enter_starts_no_session(fake_env, project: Path) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        main = await _main(pilot)
        before = await main.surface.store.list_sessions(parent_id=...)
        await pilot.press("ctrl+s")
        await pilot_until(pilot, lambda: isinstance(app.screen, SwitcherScreen))
        switcher = app.screen
        await pilot.press("/", "enter")
        await pilot.pause()
        assert app.screen is switcher, "enter on a filter nothing matches closed the switcher"
        tree = switcher.query_one(SessionTree)
        shown = [str(tree.render_label(tree.get_node_at_line(n), tree.rich_style, tree.rich_style))
                 for n in range(tree.last_line + 1)]
        assert any("No session matches /" in line for line in shown), shown
        after = await main.surface.store.list_sessions(parent_id=...)
        assert [s.id for s in after] == [s.id for s in before], "a session was started"
        await pilot.press("escape")
        await pilot_until(pilot, lambda: app.screen is main)
        assert main.current == before[0].id
