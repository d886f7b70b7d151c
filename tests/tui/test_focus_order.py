"""Moving the focus with the keyboard (issue 47, item 6): `tab` goes from the composer through the conversation
to the inbox and back; `shift+tab` goes the other way, so one press from the composer reaches the inbox, as the
keys page and /help say."""

from __future__ import annotations

from pathlib import Path

from tests.tui.test_app import _main
from yeetui.tui.app import YeetuiApp
from yeetui.tui.widgets.composer import ComposerInput
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.inbox import InboxPanel


async def test_tab_and_shift_tab_reach_the_inbox(fake_env, project: Path) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 40)) as pilot:
        await _main(pilot)
        assert isinstance(app.focused, ComposerInput)
        seen = []
        for key in ("tab", "tab", "tab", "shift+tab", "shift+tab", "shift+tab"):
            await pilot.press(key)
            await pilot.pause()
            seen.append(type(app.focused).__name__)
        assert seen == [ConversationView.__name__, InboxPanel.__name__, ComposerInput.__name__,
                        InboxPanel.__name__, ConversationView.__name__, ComposerInput.__name__], seen
