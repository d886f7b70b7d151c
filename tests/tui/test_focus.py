"""Typing after a mouse click: printable keys land in the composer wherever the focus went (a tool row, an
announcement card, a child opened by clicking and left with ctrl+o, the ledger or the inbox); the panels' own
actions take a key with a modifier."""

from __future__ import annotations

from pathlib import Path

from textual.message import Message

from tests.fakellm import Reply, ToolCall
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.tui.app import YeetuiApp
from yeetui.tui.widgets.composer import Composer, ComposerInput
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.ledger import LedgerPanel
from yeetui.tui.widgets.message_views import AnnouncementView
from yeetui.tui.widgets.tool_views import ToolCallView


async def test_keys_typed_after_clicks_land_in_the_composer(fake_env, project: Path) -> None:
    (project / "notes.txt").write_text("NOTES\n")
    fake_env.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})], when_contains="READ-IT"),
        Reply(text="Read it.", when_contains="NOTES"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ORACLE-VERDICT"})], when_contains="ask the oracle"),
    )
    app = YeetuiApp(cwd=project)
    posted: list[Message] = []
    async with app.run_test(size=(120, 34), message_hook=posted.append) as pilot:
        main = await _main(pilot)
        composer = main.query_one(Composer)
        view = main.query_one(ConversationView)
        await _type(pilot, "READ-IT please")
        await pilot_until(pilot, lambda: "Read it." in _text(view))

        await pilot.click(view.query_one(ToolCallView))  # the tool row takes the focus (and opens)
        await pilot.pause()
        assert not isinstance(app.focused, ComposerInput)
        await pilot.press("h", "i", "space", "!")
        assert composer.text == "hi !" and isinstance(app.focused, ComposerInput)

        composer.text = ""
        await _type(pilot, "/oracle ask the oracle")
        await pilot_until(pilot, lambda: bool(view.query(AnnouncementView)))
        primary = main.current
        await pilot.click(view.query_one(AnnouncementView))  # opens the child's transcript
        await pilot_until(pilot, lambda: main.current != primary)
        await pilot.press("ctrl+o")
        await pilot_until(pilot, lambda: main.current == primary)
        await pilot.press("o", "k")
        assert composer.text == "ok" and isinstance(app.focused, ComposerInput)

        ledger = main.query_one(LedgerPanel)  # a panel's own keys (with a modifier) work when it has the focus
        await pilot_until(pilot, lambda: bool(ledger.rows))
        ledger.focus()
        await pilot.press("c")
        assert composer.text == "okc" and isinstance(app.focused, ComposerInput), "a letter is for the composer"
        ledger.focus()
        await pilot.press("alt+c")
        await pilot_until(pilot, lambda: any(isinstance(m, LedgerPanel.Action) and m.action == "cancel"
                                             for m in posted))
        assert composer.text == "okc"
