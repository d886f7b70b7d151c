"""`yeetui --continue`: the restored transcript says how earlier runs ended (their error lines), and no frame
shows an empty conversation before the history appears."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from tests.fakellm import Fault, Reply
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.message_views import NoticeView


def _blank_frames(app: YeetuiApp) -> list[str]:
    """Wrap the app's frame output: note each frame of the main screen whose conversation area is blank
    (nothing shown there, or a conversation view with nothing in it)."""
    blank: list[str] = []
    display = app._display

    def spy(screen: Any, renderable: Any) -> None:
        if isinstance(screen, MainScreen) and screen.is_mounted and renderable is not None:
            shown = [w for w in screen.query_one("#conversations").children if w.display]
            if not shown:
                blank.append("no conversation and no placeholder")
            elif any(isinstance(w, ConversationView) and not w.children for w in shown):
                blank.append("an empty conversation")
        display(screen, renderable)

    app._display = spy  # type: ignore[method-assign]
    return blank


async def test_continue_restores_error_lines_without_an_empty_frame(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="FIRST ANSWER"), Reply(text="half", fault=Fault.http(400)))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "first question")
        await pilot_until(pilot, lambda: "FIRST ANSWER" in _text(view))
        await _type(pilot, "second question")
        await pilot_until(pilot, lambda: any("400" in str(n.render()) for n in view.query(NoticeView)))
        live = [str(n.render()) for n in view.query(NoticeView) if "The run failed" in str(n.render())]
        assert live, [str(n.render()) for n in view.query(NoticeView)]

    again = YeetuiApp(cwd=project, continue_latest=True)
    blank = _blank_frames(again)
    async with again.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.view()
        await pilot_until(pilot, lambda: "second question" in _text(view))
        restored = [str(n.render()) for n in view.query(NoticeView) if "The run failed" in str(n.render())]
        assert restored == live
        texts = [type(w).__name__ for w in view.children]
        assert texts.index("NoticeView") > texts.index("UserMessageView"), "the error follows its prompt"
    assert blank == []


async def test_continue_reopens_the_apps_conversation_not_a_later_headless_or_detached_run(
        fake_env, project: Path) -> None:
    """Issue 24, item 13: `yeetui --continue` after a `yeetui run` and a `yeetui agents start` reopens the last
    conversation of the app; the switcher shows those runs as what they are, not as primaries."""
    from yeetui import paths
    from yeetui.runtime import Runtime
    from yeetui.tui.screens.switcher import SwitcherScreen

    fake_env.script(Reply(text="APP ANSWER"), Reply(text="HEADLESS ANSWER"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        view = (await _main(pilot)).query_one(ConversationView)
        await _type(pilot, "in the app")
        await pilot_until(pilot, lambda: "APP ANSWER" in _text(view))
    runtime = await Runtime.open(cwd=project)
    try:
        await runtime.launcher.run_prompt("headless question")  # as `yeetui run` does
        await runtime.detached.create(profile_name="oracle", prompt="detached question")
    finally:
        await runtime.close()
    assert paths.database_path().exists()

    again = YeetuiApp(cwd=project, continue_latest=True)
    async with again.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await pilot_until(pilot, lambda: "in the app" in _text(main.view()))
        assert "headless question" not in _text(main.view())
        await pilot.press("ctrl+s")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen))
        tops = {node.title: node.label for node in cast(SwitcherScreen, pilot.app.screen).nodes
                if node.parent_id is None}
        assert tops["in the app"] == "primary", tops
        assert tops["headless question"].startswith("run ") and tops["detached question"].startswith("detached ")


async def test_continue_skips_a_conversation_left_empty(fake_env, project: Path) -> None:
    """Issue 47, item 6: opening the app and quitting without a word made an empty conversation, which
    `--continue` then reopened instead of the one the user had talked in."""
    fake_env.script(Reply(text="THE ANSWER"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        view = (await _main(pilot)).query_one(ConversationView)
        await _type(pilot, "the question that matters")
        await pilot_until(pilot, lambda: "THE ANSWER" in _text(view))
    async with YeetuiApp(cwd=project).run_test(size=(100, 30)) as pilot:
        await _main(pilot)  # opened, nothing said, closed

    again = YeetuiApp(cwd=project, continue_latest=True)
    async with again.run_test(size=(100, 30)) as pilot:
        view = (await _main(pilot)).view()
        await pilot_until(pilot, lambda: "THE ANSWER" in _text(view))
        assert "the question that matters" in _text(view)

