"""The header names the session on screen: its trail from the primary, status, whether it can be followed up,
and its model; primary sessions are named by their first prompt, in the header and the switcher."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from tests.fakellm import Fault, Reply, ToolCall
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.switcher import SwitcherScreen
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.message_views import AnnouncementView
from yeetui.tui.widgets.session_header import SessionHeader


def _header(main) -> str:
    return str(main.query_one(SessionHeader).render())


async def test_header_names_the_session_its_parents_status_and_model(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(text="It sleeps on a timer.", when_contains="FLAKY-LOGIN"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ORACLE-VERDICT: freeze the clock."})],
              when_contains="why does it flake"),
        Reply(text="Second answer.", when_contains="SECOND-PROMPT"),
        Reply(text="half", fault=Fault.http(400), when_contains="THIRD-PROMPT"),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(140, 32)) as pilot:
        main = await _main(pilot)
        primary = main.current
        await pilot_until(pilot, lambda: _header(main).startswith("primary · new"))
        await _type(pilot, "fix the FLAKY-LOGIN test\nand explain it")
        await pilot_until(pilot, lambda: "answered" in _header(main))
        assert _header(main) == "primary “fix the FLAKY-LOGIN test” · answered · claude-sonnet-4-6"

        await _type(pilot, "/oracle why does it flake?")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: bool(view.query(AnnouncementView)))
        await main.open_session(view.query(AnnouncementView).first().child_session_id)
        await pilot_until(pilot, lambda: "oracle#1" in _header(main))
        assert _header(main) == ("primary “fix the FLAKY-LOGIN test” › oracle#1 · completed · type to follow up · "
                                 "claude-opus-4-5")

        await main.open_session(primary)
        await _type(pilot, "SECOND-PROMPT")
        await pilot_until(pilot, lambda: "Second answer." in _text(main.view()))
        await pilot_until(pilot, lambda: "answered" in _header(main))
        assert "“fix the FLAKY-LOGIN test”" in _header(main), "the title stays the first prompt's"
        await _type(pilot, "THIRD-PROMPT")
        await pilot_until(pilot, lambda: " · failed · " in _header(main))  # the latest run's status, not the first's

        await pilot.press("ctrl+s")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen))
        [top] = [n for n in cast(SwitcherScreen, pilot.app.screen).nodes if n.id == primary]
        assert (top.label, top.title) == ("primary", "fix the FLAKY-LOGIN test")


async def test_the_header_follows_slash_model_at_once(fake_env, project: Path) -> None:
    """Issue 24, item 13: after `/model provider/name` the header named the old model until the next answer."""
    fake_env.script(Reply(text="First answer.", when_contains="FIRST-PROMPT"),
                    Reply(text="Second answer.", when_contains="SECOND-PROMPT"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(140, 32)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "FIRST-PROMPT")
        await pilot_until(pilot, lambda: "answered" in _header(main))
        assert _header(main).endswith(" · claude-sonnet-4-6")
        await _type(pilot, "/model anthropic/claude-opus-4-5")
        await pilot_until(pilot, lambda: "Model set to anthropic/claude-opus-4-5" in _text(main.view()))
        await pilot_until(pilot, lambda: _header(main).endswith(" · answered · claude-opus-4-5"))
        await _type(pilot, "SECOND-PROMPT")
        await pilot_until(pilot, lambda: "Second answer." in _text(main.view()))
        assert fake_env.requests[-1].body["model"] == "claude-opus-4-5"  # the header says what answers
        await pilot_until(pilot, lambda: _header(main).endswith(" · answered · claude-opus-4-5"))
