"""The whole app under Pilot against the fake LLM server: the everyday moves of SPEC §1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.widgets.composer import Composer
from yeetui.tui.widgets.conversation import ConversationView


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    root = tmp_path / "project"
    root.mkdir()
    return root


async def _main(pilot) -> MainScreen:
    for _ in range(100):
        if isinstance(pilot.app.screen, MainScreen) and pilot.app.screen.current:
            return pilot.app.screen
        await pilot.pause(0.05)
    raise AssertionError(f"main screen never appeared: {pilot.app.screen}")


async def _type(pilot, text: str) -> None:
    composer = pilot.app.screen.query_one(Composer)
    composer.text = text
    composer.focus()
    await pilot.press("enter")


async def _until(pilot, predicate, timeout: float = 15.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached in time")


def _text(widget) -> str:
    return "\n".join(str(w.render()) if hasattr(w, "render") else "" for w in widget.query("*"))


async def test_prompt_streams_an_answer(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="Hello **there**, friend."))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "say hello")
        view = main.query_one(ConversationView)
        await _until(pilot, lambda: "friend" in _text(view))
        assert "say hello" in _text(view)


async def test_oracle_scenario(fake_env, project: Path) -> None:
    from yeetui.tui.widgets.inbox import InboxPanel
    from yeetui.tui.widgets.ledger import LedgerPanel

    fake_env.script(
        Reply(text="Reading the test. " * 10, chunk_size=6, chunk_delay=0.03,
              tool_calls=[ToolCall("complete", {"output": "ORACLE-VERDICT: the login test sleeps on a timer."})]),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "/oracle why does the login test flake?")
        ledger = main.query_one(LedgerPanel)
        await _until(pilot, lambda: any("oracle#1 running" in str(ledger.get_option_at_index(i).prompt)
                                        for i in range(ledger.option_count)))
        inbox = main.query_one(InboxPanel)
        await _until(pilot, lambda: inbox.unread == 1)
        view = main.query_one(ConversationView)
        await _until(pilot, lambda: "ORACLE-VERDICT" in _text(view))
        assert "[Subagent: oracle#1]" in _text(view) or "oracle#1" in _text(view)
        primary = fake_env.requests  # only the oracle talked to the model: the primary was never called
        assert all("why does the login test flake" in r.text for r in primary)


async def test_unknown_command_and_bad_input_keep_the_app_usable(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="partial answ", fault=Fault.http(400)),
                    Reply(text="second try works"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "/oracel what?")
        view = main.query_one(ConversationView)
        await _until(pilot, lambda: "Unknown command /oracel" in _text(view))
        assert "/oracle" in _text(view)
        await _type(pilot, "first question")
        await _until(pilot, lambda: "400" in _text(view))
        await _type(pilot, "second question")
        await _until(pilot, lambda: "second try works" in _text(view))
        await pilot.resize_terminal(60, 20)
        await pilot.pause(0.2)
        await _type(pilot, "/help")
        await _until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen")
        await pilot.press("escape")


async def test_permission_modal_deny_reaches_the_child(fake_env, project: Path) -> None:
    from yeetui.tui.screens.permission import PermissionScreen

    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build"})], when_contains="CLEAN-UP"),
        Reply(tool_calls=[ToolCall("complete", {"output": "could not clean"})], when_contains="denied"),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        await _main(pilot)
        await _type(pilot, "@generic CLEAN-UP the build dir")
        await _until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen))
        shown = _text(pilot.app.screen)
        assert "generic#" in shown and "rm -rf build" in shown
        await pilot.press("n")
        await _until(pilot, lambda: any("could not clean" in r.text or "denied" in r.text
                                        for r in fake_env.requests[1:]))
        assert "denied" in fake_env.requests[-1].text
        assert isinstance(pilot.app.screen, MainScreen)
