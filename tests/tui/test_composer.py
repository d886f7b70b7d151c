"""Composer: Enter submits, Ctrl+J (and friends) break the line, history, completion popup, busy hint."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message as TextualMessage

from yeetui.tui.widgets.completion import (
    CompletionContext,
    CompletionPopup,
    candidates,
    find_context,
    match_score,
)
from yeetui.tui.widgets.composer import PLACEHOLDER, Composer

SIZE = (80, 24)
COMMANDS = [("/oracle", "ask the read-only oracle"), ("/orchestrate", "plan and build a goal"),
            ("/help", "list commands and keys"), ("/new", "start a new session")]
PROFILES = ["oracle", "reviewer", "builder"]
FILES = ["src/app.py", "src/auth.py", "docs/"]


class Host(App[None]):
    """Binds Escape at the app level like the real screen (interrupt), to prove the popup only takes it
    while open."""

    BINDINGS = [Binding("escape", "interrupt", "Interrupt", id="test.interrupt")]
    CSS = "Composer { dock: bottom; }"

    def __init__(self) -> None:
        super().__init__()
        self.interrupts = 0
        self.file_queries: list[str] = []

    def compose(self) -> ComposeResult:
        composer = Composer(id="composer")
        composer.commands = list(COMMANDS)
        composer.profiles = list(PROFILES)
        composer.file_source = self.files
        yield composer

    def files(self, prefix: str) -> list[str]:
        self.file_queries.append(prefix)
        return [f for f in FILES if prefix in f] if prefix else list(FILES)

    def on_mount(self) -> None:
        self.query_one(Composer).focus()

    def action_interrupt(self) -> None:
        self.interrupts += 1


def submitted(seen: list[TextualMessage]) -> list[str]:
    unique = {id(m): m for m in seen if isinstance(m, Composer.Submitted)}
    return [m.text for m in unique.values()]


async def type_text(pilot: Any, text: str) -> None:
    await pilot.press(*[{" ": "space"}.get(ch, ch) for ch in text])


def popup_values(app: App[Any]) -> list[str]:
    popup = app.query_one(CompletionPopup)
    return [item.value for item in popup.items] if popup.is_open else []


async def test_enter_submits_and_clears() -> None:
    seen: list[TextualMessage] = []
    app = Host()
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        composer = app.query_one(Composer)
        assert composer.input.placeholder == PLACEHOLDER
        await type_text(pilot, "fix the test")
        await pilot.press("enter")
        await pilot.pause()
        assert submitted(seen) == ["fix the test"]
        assert composer.text == ""
        await pilot.press("enter")  # nothing to send
        await type_text(pilot, "   ")
        await pilot.press("enter")
        await pilot.pause()
        assert submitted(seen) == ["fix the test"]


@pytest.mark.parametrize("key", ["ctrl+j", "shift+enter", "alt+enter"])
async def test_newline_keys_break_the_line(key: str) -> None:
    seen: list[TextualMessage] = []
    app = Host()
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "first")
        await pilot.press(key)
        await type_text(pilot, "second")
        assert composer.text == "first\nsecond"
        assert submitted(seen) == []
        await pilot.press("enter")
        await pilot.pause()
        assert submitted(seen) == ["first\nsecond"]


async def test_backslash_enter_breaks_the_line_where_shift_enter_cannot_reach() -> None:
    seen: list[TextualMessage] = []
    app = Host()
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "one\\")
        await pilot.press("enter")
        await type_text(pilot, "two")
        assert composer.text == "one\ntwo"
        assert submitted(seen) == []


async def test_history_walks_with_up_and_down() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        for text in ("first", "second line one\nsecond line two", "third"):
            composer.text = text
            await pilot.press("enter")
        await type_text(pilot, "draft")
        await pilot.press("up")
        assert composer.text == "third"
        await pilot.press("up")
        assert composer.text == "second line one\nsecond line two"
        await pilot.press("up")  # the cursor sits on the first line, so Up keeps walking back
        assert composer.text == "first"
        await pilot.press("up")
        assert composer.text == "first"
        await pilot.press("down")
        assert composer.text == "second line one\nsecond line two"
        await pilot.press("down")
        assert composer.text == "third"
        await pilot.press("down")
        assert composer.text == "draft"


async def test_up_inside_multiline_text_moves_the_cursor() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.text = "older"
        await pilot.press("enter")
        await type_text(pilot, "a")
        await pilot.press("ctrl+j")
        await type_text(pilot, "b")
        await pilot.press("up")
        assert composer.text == "a\nb"  # moved to line one instead of recalling history
        assert composer.input.cursor_location[0] == 0
        await pilot.press("up")
        assert composer.text == "older"


async def test_slash_popup_filters_and_tab_inserts() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "/")
        assert popup_values(app)[:4] == ["/oracle", "/orchestrate", "/help", "/new"]
        await type_text(pilot, "or")
        await pilot.pause()
        assert popup_values(app) == ["/oracle", "/orchestrate"]
        popup = app.query_one(CompletionPopup)
        assert popup.region.height > 0 and popup.region.bottom <= composer.input.region.y  # drawn above the input
        await pilot.press("tab")
        assert composer.text == "/oracle "
        assert not popup.is_open
        await type_text(pilot, "why")
        assert composer.text == "/oracle why"


async def test_popup_arrows_choose_and_enter_inserts_instead_of_sending() -> None:
    seen: list[TextualMessage] = []
    app = Host()
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "/or")
        await pilot.press("down")
        await pilot.press("enter")
        assert composer.text == "/orchestrate "
        assert submitted(seen) == []
        await pilot.press("enter")
        await pilot.pause()
        assert submitted(seen) == ["/orchestrate "]


async def test_enter_on_a_complete_command_sends_it() -> None:
    seen: list[TextualMessage] = []
    app = Host()
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await type_text(pilot, "/help")
        assert popup_values(app) == ["/help"]
        await pilot.press("enter")
        await pilot.pause()
        assert submitted(seen) == ["/help"]


async def test_at_lists_profiles_and_files() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "ask @")
        assert popup_values(app) == ["@oracle", "@reviewer", "@builder", "@src/app.py", "@src/auth.py", "@docs/"]
        await type_text(pilot, "au")
        assert popup_values(app) == ["@src/auth.py"]
        assert app.file_queries[-1] == "au"
        await pilot.press("tab")
        assert composer.text == "ask @src/auth.py "


async def test_a_file_matching_by_prefix_comes_before_a_profile_matching_by_letters() -> None:
    """`@ca` + Tab: `@calc.py` (its name starts with `ca`), not `@orchestrator` (c…a in order); a profile
    that starts with what was typed still comes first."""
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.profiles = ["oracle", "orchestrator", "calendar"]
        composer.file_source = lambda prefix: [f for f in ["calc.py", "cache/"] if f.startswith(prefix)]
        await type_text(pilot, "explain @ca")
        assert popup_values(app) == ["@calendar", "@calc.py", "@cache/", "@orchestrator"]
        composer.profiles = ["oracle", "orchestrator"]
        await pilot.press("backspace")
        await type_text(pilot, "a")
        assert popup_values(app)[:2] == ["@calc.py", "@cache/"]
        await pilot.press("tab")
        assert composer.text == "explain @calc.py "


async def test_directory_completion_keeps_completing() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "@doc")
        await pilot.press("tab")
        assert composer.text == "@docs/"
        assert app.file_queries[-1] == "docs/"


async def test_escape_closes_the_popup_and_otherwise_falls_through() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "/or")
        assert app.query_one(CompletionPopup).is_open
        await pilot.press("escape")
        assert not app.query_one(CompletionPopup).is_open
        assert app.interrupts == 0
        assert composer.text == "/or"
        await pilot.press("escape")  # popup closed: Escape reaches the app (interrupt)
        assert app.interrupts == 1
        await type_text(pilot, "a")  # typing again reopens it
        assert popup_values(app)[0] == "/oracle"


async def test_busy_hint_shows_work_and_queue() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        hint = composer.query_one("#composer-hint")
        assert not hint.display
        composer.set_busy(True, 2)
        await pilot.pause()
        assert hint.display
        assert hint.visual.plain == "● agent working · 2 queued · esc to interrupt"
        assert hint.region.height == 1
        composer.set_busy(False, 1)
        assert hint.visual.plain == "1 queued"
        composer.set_busy(False)
        await pilot.pause()
        assert not hint.display


async def test_a_removed_composer_still_takes_the_busy_hint_and_gives_its_draft() -> None:
    """As the app quits, its children go before the workers stop: the session-start worker may still set the
    busy hint (a CI run failed with NoMatches '#composer-hint' so)."""
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        await type_text(pilot, "draft")
        await composer.remove_children()
        assert not composer.query("#composer-hint")  # what the worker met
        composer.set_busy(True, 1)
        assert composer.draft().text == "draft"
        assert not composer.check_action("complete", ())


async def test_broken_file_source_does_not_break_the_composer() -> None:
    app = Host()

    def broken(prefix: str) -> list[str]:
        raise PermissionError(13, "Permission denied", prefix)

    async with app.run_test(size=SIZE) as pilot:
        app.query_one(Composer).file_source = broken
        await type_text(pilot, "@or")
        assert popup_values(app) == ["@oracle"]


def test_find_context() -> None:
    assert find_context("/ora", 0, 4) == CompletionContext("command", "ora", (0, 0), (0, 4))
    assert find_context("/oracle why", 0, 11) is None
    assert find_context("/x", 1, 2) is None  # commands only on the first line
    assert find_context("see @src/a", 2, 10) == CompletionContext("mention", "src/a", (2, 4), (2, 10))
    assert find_context("mail a@b", 0, 8) is None  # an @ inside a word is not a mention
    assert find_context("@", 0, 1) == CompletionContext("mention", "", (0, 0), (0, 1))


def test_match_score_prefers_prefix_then_substring_then_subsequence() -> None:
    assert match_score("or", "oracle") == 0
    assert match_score("acl", "oracle") == 1
    assert match_score("ocl", "oracle") == 2
    assert match_score("xyz", "oracle") is None
    ranked = candidates(CompletionContext("command", "re", (0, 0), (0, 3)),
                        commands=[("/compare", ""), ("/review", ""), ("/pre", "")], profiles=[],
                        file_source=lambda p: [])
    assert [c.value for c in ranked] == ["/review", "/compare", "/pre"]


def test_at_most_eight_rows() -> None:
    many = [f"src/file{i}.py" for i in range(30)]
    rows = candidates(CompletionContext("mention", "", (0, 0), (0, 1)), commands=[], profiles=PROFILES,
                      file_source=lambda p: many)
    assert len(rows) == 8
    assert [r.value for r in rows[:3]] == ["@oracle", "@reviewer", "@builder"]


async def test_keys_typed_in_one_burst_take_effect_in_the_order_typed() -> None:
    """Characters, backspaces and arrows read in one burst (a fast typist, a paste, a terminal that
    buffers): Textual inserts a character when the widget reads it but runs a binding (backspace, left)
    only once the key has bubbled back to the app — behind the characters typed after it."""
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        burst = [*"helo", "backspace", "backspace", *"llo", "space", *"wrld", "left", "left", "left", "o", "end",
                 "ctrl+w", *"there"]
        for key in burst:  # all in the app's queue before it reads the first, as from the terminal
            app._driver.send_message(events.Key(key, _CHARACTERS.get(key, key if len(key) == 1 else None)))
        await pilot.pause()
        assert composer.text == "hello there"


_CHARACTERS = {"space": " "}
