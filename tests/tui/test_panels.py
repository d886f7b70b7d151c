"""Pilot tests for the panels: ledger strip, inbox, session switcher, permission modal, help.

Each widget or screen is mounted alone in a tiny App at 80×24; the tests read what is drawn (rendered
lines, widget content, region geometry) and what is posted (`message_hook`), and drive the keyboard and
mouse like a user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from yeetui.events import RunStatus
from yeetui.store.records import InboxItem
from yeetui.subagents.ledger import WATCHING, LedgerRow, format_row
from yeetui.tui.screens.help import HelpScreen
from yeetui.tui.screens.permission import PREVIEW_LINES, PermissionScreen, preview_content
from yeetui.tui.screens.switcher import (
    NEW_SESSION,
    SessionNode,
    SessionTree,
    SwitcherScreen,
    fuzzy_positions,
    visible_ids,
)
from yeetui.tui.widgets.inbox import EMPTY_TEXT, InboxPanel
from yeetui.tui.widgets.ledger import LedgerPanel

SIZE = (80, 24)


class PanelApp(App[None]):
    """Mounts whatever `make` yields; collects the messages posted anywhere in the app."""

    def __init__(self, make: Callable[[], ComposeResult] | None = None) -> None:
        super().__init__()
        self.make = make
        self.posted: list[Message] = []

    def compose(self) -> ComposeResult:
        if self.make is not None:
            yield from self.make()
        yield Static("under the modal", id="under")


def run(app: PanelApp):
    return app.run_test(size=SIZE, message_hook=app.posted.append)


def posted(app: PanelApp, kind: type[Message]) -> list[Any]:
    """Each message of `kind` once, in posting order (the hook sees a bubbling message at every node)."""
    unique = {id(m): m for m in app.posted if isinstance(m, kind)}
    return list(unique.values())


def lines(widget: Widget) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


def text(widget: Widget) -> str:
    return "\n".join(lines(widget))


def static_text(widget: Static) -> str:
    return widget.render().plain  # type: ignore[union-attr]


def style_colour_at(widget: Widget, y: int, fragment: str) -> str:
    """The foreground colour (hex, lower case) of the segment of line `y` that contains `fragment`."""
    for segment in widget.render_line(y):
        if fragment in segment.text and segment.style and segment.style.color:
            return segment.style.color.get_truecolor().hex.lower()
    raise AssertionError(f"{fragment!r} is not on line {y}: {widget.render_line(y).text!r}")


def theme_colour(app: App, name: str) -> str:
    return app.get_css_variables()[name].lower()


# -- the ledger -----------------------------------------------------------------------------------

class Clock:
    def __init__(self, now: float = 42.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def ledger_row(run_id: str, label: str, status: RunStatus | str, clock: Clock, **kw: Any) -> LedgerRow:
    values: dict[str, Any] = dict(run_id=run_id, session_id=f"s-{run_id}", parent_session_id="primary", label=label,
                                  profile=label.split("#")[0], model="claude-sonnet-4-6", status=status,
                                  registered=0.0, started=0.0, cost=0.03, activity="", clock=clock)
    values.update(kw)
    return LedgerRow(**values)


def ledger_app() -> PanelApp:
    return PanelApp(lambda: iter([LedgerPanel(id="ledger")]))


async def test_ledger_rows_are_added_updated_and_removed() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        assert not panel.display, "an empty ledger collapses"
        oracle = ledger_row("r1", "oracle#4", RunStatus.RUNNING, clock, activity="reading src/auth.py")
        panel.update_row("r1", oracle)
        panel.update_row("r2", ledger_row("r2", "pair#2", WATCHING, clock, started=None))
        await pilot.pause()
        assert panel.display
        assert lines(panel)[:2] == [
            "oracle#4 running · claude-sonnet-4-6 · 0:42 · $0.03 · reading src/auth.py",
            "pair#2 watching · claude-sonnet-4-6",
        ]
        panel.update_row("r1", replace(oracle, status=RunStatus.WAITING_PERMISSION, activity="waiting for permission"))
        await pilot.pause()
        assert lines(panel)[0].startswith("oracle#4 needs permission · claude-sonnet-4-6")
        panel.update_row("r1", None)
        await pilot.pause()
        assert list(panel.rows) == ["r2"] and panel.option_count == 1
        assert lines(panel)[0] == "pair#2 watching · claude-sonnet-4-6"
        panel.update_row("r2", None)
        panel.update_row("r-unknown", None)  # removing what is not there is harmless
        await pilot.pause()
        assert not panel.display and panel.option_count == 0


async def test_ledger_indents_subagents_under_their_parent_like_the_switcher() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        panel.update_row("p", ledger_row("p", "generic#1", RunStatus.RUNNING, clock, session_id="s-p",
                                         parent_session_id=None, cost=0.01, tree_cost=0.25))
        panel.update_row("o", ledger_row("o", "oracle#2", RunStatus.RUNNING, clock, parent_session_id="s-p"))
        panel.update_row("c", ledger_row("c", "orchestrator#1", RunStatus.RUNNING, clock, parent_session_id="s-p"))
        panel.focus()
        await pilot.press("down", "down")  # the cursor on orchestrator#1
        panel.update_row("b", ledger_row("b", "builder#3", RunStatus.RUNNING, clock, parent_session_id="s-c",
                                         tokens=12_345))
        await pilot.pause()
        assert [line.split(" · ")[0] for line in lines(panel)[:4]] == [
            "generic#1 running", "└ oracle#2 running", "└ orchestrator#1 running", "  └ builder#3 running"]
        assert "$0.01 (tree $0.25)" in lines(panel)[0] and "· 12k tok" in lines(panel)[3]
        assert panel.selected_run_id == "c", "the cursor stays on its run when a row joins the tree"
        panel.update_row("p", None)
        await pilot.pause()
        assert lines(panel)[0].startswith("oracle#2 running"), "without the parent's row, its children lead"


async def test_ledger_lines_match_the_domain_formatter_and_are_cut_with_an_ellipsis() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        long = ledger_row("r1", "builder#7", RunStatus.RUNNING, clock, activity="running " + "pytest -q " * 20)
        short = ledger_row("r2", "oracle#4", RunStatus.QUEUED, clock, started=None, activity="queued")
        panel.update_row("r1", long)
        panel.update_row("r2", short)
        await pilot.pause()
        first, second = lines(panel)[:2]
        assert len(first) <= SIZE[0] and first.endswith("…")
        assert first.strip()[:-1] in format_row(long)
        assert second.strip() == format_row(short)


async def test_ledger_colours_the_status_word_from_the_theme() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        panel.update_row("r1", ledger_row("r1", "builder#7", RunStatus.WAITING_PERMISSION, clock))
        panel.update_row("r2", ledger_row("r2", "oracle#4", RunStatus.COMPLETED, clock, ended=40.0))
        panel.update_row("r3", ledger_row("r3", "helper#1", RunStatus.FAILED, clock, ended=40.0))
        app.set_focus(None)
        await pilot.pause()
        assert style_colour_at(panel, 0, "needs permission") == theme_colour(app, "warning")
        assert style_colour_at(panel, 1, "completed") == theme_colour(app, "success")
        assert style_colour_at(panel, 2, "failed") == theme_colour(app, "error")
        app.theme = "textual-light"
        await pilot.pause()
        assert style_colour_at(panel, 1, "completed") == theme_colour(app, "success")


async def test_ledger_elapsed_time_ticks_every_second() -> None:
    clock = Clock(42.0)
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        panel.update_row("r1", ledger_row("r1", "oracle#4", RunStatus.RUNNING, clock))
        panel.update_row("r2", ledger_row("r2", "pair#2", RunStatus.COMPLETED, clock, ended=5.0))
        await pilot.pause()
        assert "· 0:42 ·" in lines(panel)[0] and "· 0:05 ·" in lines(panel)[1]
        clock.now = 63.0
        await pilot.pause(1.3)  # the panel's own one-second interval redraws; nothing else is called
        assert "· 1:03 ·" in lines(panel)[0]
        assert "· 0:05 ·" in lines(panel)[1], "a finished run's time stays frozen"


async def test_ledger_keys_post_actions_for_the_selected_row() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        for run_id, label in [("r1", "oracle#4"), ("r2", "builder#7"), ("r3", "reviewer#9")]:
            panel.update_row(run_id, ledger_row(run_id, label, RunStatus.RUNNING, clock))
        panel.focus()
        await pilot.pause()
        await pilot.press("enter", "down", "alt+s", "down", "alt+c", "up", "alt+x", "alt+t", "alt+e")
        await pilot.pause()
        actions = [(m.run_id, m.action) for m in posted(app, LedgerPanel.Action)]
        assert actions == [("r1", "open"), ("r2", "steer"), ("r3", "cancel"), ("r2", "abort"), ("r2", "watch"),
                           ("r2", "embed")]


async def test_ledger_letters_alone_post_no_action() -> None:
    """A word typed while the ledger has the focus is for the composer (the main screen sends it there)."""
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        panel.update_row("r1", ledger_row("r1", "oracle#4", RunStatus.RUNNING, clock))
        panel.focus()
        await pilot.press(*"scxte", "o")
        await pilot.pause()
        assert posted(app, LedgerPanel.Action) == []


async def test_ledger_keeps_the_cursor_on_its_run_when_a_row_above_goes() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        for run_id in ("r1", "r2", "r3"):
            panel.update_row(run_id, ledger_row(run_id, f"agent#{run_id}", RunStatus.RUNNING, clock))
        panel.focus()
        await pilot.press("down", "down")
        assert panel.selected_run_id == "r3"
        panel.update_row("r1", None)
        await pilot.pause()
        assert panel.selected_run_id == "r3"


async def test_ledger_click_opens_the_clicked_row() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        panel.update_row("r1", ledger_row("r1", "oracle#4", RunStatus.RUNNING, clock))
        panel.update_row("r2", ledger_row("r2", "builder#7", RunStatus.RUNNING, clock))
        await pilot.pause()
        assert await pilot.click(LedgerPanel, offset=(5, 1))
        await pilot.pause()
        assert [(m.run_id, m.action) for m in posted(app, LedgerPanel.Action)] == [("r2", "open")]


async def test_ledger_keys_can_be_remapped_by_binding_id() -> None:
    clock = Clock()
    app = ledger_app()
    async with run(app) as pilot:
        panel = app.query_one(LedgerPanel)
        panel.update_row("r1", ledger_row("r1", "oracle#4", RunStatus.RUNNING, clock))
        panel.focus()
        app.set_keymap({"ledger.steer": "ctrl+g"})
        await pilot.press("alt+s", "ctrl+g")
        await pilot.pause()
        assert [(m.run_id, m.action) for m in posted(app, LedgerPanel.Action)] == [("r1", "steer")]


def test_every_panel_binding_has_a_unique_id() -> None:
    ids = [cast(Binding, binding).id for cls in (LedgerPanel, InboxPanel, SwitcherScreen, PermissionScreen, HelpScreen)
           for binding in cls.BINDINGS]
    assert all(ids) and len(ids) == len(set(ids)), ids


# -- the inbox ------------------------------------------------------------------------------------

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def inbox_item(item_id: int, kind: str, title: str, body: str = "", data: dict[str, Any] | None = None,
               status: str = "unread") -> InboxItem:
    return InboxItem(id=item_id, session_id="primary", run_id=f"run-{item_id}", kind=kind, title=title, body=body,
                     data=data, status=status, dedupe_key=None,  # type: ignore[arg-type]
                     created_at=T0 + timedelta(minutes=item_id), updated_at=T0)


def sample_items() -> list[InboxItem]:
    return [
        inbox_item(1, "completion", "oracle#4 — completed", "The login test flakes because of the clock.\nMore.",
                   {"status": "completed"}),
        inbox_item(2, "completion", "builder#7 — failed", "", {"status": "failed"}, status="read"),
        inbox_item(3, "review", "reviewer#9 — completed", "Two problems in the handler.",
                   {"status": "completed", "result": {"artifacts": {"verdict": "request_changes"}}}),
        inbox_item(4, "interjection", "pair#2: blocker", "This drops the users table.", {"severity": "blocker"}),
        inbox_item(5, "interjection", "pair#2: aside", "Consider a fixture.", {"severity": "aside"}, status="read"),
    ]


def inbox_app() -> PanelApp:
    return PanelApp(lambda: iter([InboxPanel(id="inbox")]))


async def test_inbox_lists_newest_first_with_badges_and_unread_marks() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items(sample_items())
        await pilot.pause()
        assert panel.unread == 3
        assert panel.border_title == "inbox · 3 unread"
        shown = [line.strip("│ ") for line in lines(panel)]
        assert shown[:9] == [
            "» pair#2: aside",
            "Consider a fixture.",
            "● ‼ pair#2: blocker",
            "This drops the users table.",
            "● ✗ request changes · reviewer#9 —…",
            "Two problems in the handler.",
            "✗ builder#7 — failed",
            "● ✓ oracle#4 — completed",
            "The login test flakes because of…",
        ], shown
        assert style_colour_at(panel, 2, "‼") == theme_colour(app, "error")
        assert style_colour_at(panel, 4, "request changes") == theme_colour(app, "warning")


async def test_inbox_long_titles_and_previews_are_cut_with_an_ellipsis() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items([inbox_item(1, "completion", "oracle#4 — completed " + "x" * 80, "y" * 300)])
        await pilot.pause()
        head, preview = lines(panel)[:2]
        assert head.endswith("…") and preview.endswith("…")
        assert len(head) <= panel.content_region.width


async def test_inbox_open_marks_read_and_posts_the_action() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items(sample_items())
        panel.focus()
        await pilot.press("down")  # the blocker
        await pilot.press("enter")
        await pilot.pause()
        assert [(m.item_id, m.action) for m in posted(app, InboxPanel.Action)] == [(4, "open")]
        assert panel.unread == 2 and panel.items[4].status == "read"
        assert "●" not in lines(panel)[3]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert [(m.item_id, m.action) for m in posted(app, InboxPanel.Action)][-1] == (3, "open")
        assert panel.unread == 1


async def test_inbox_accept_reply_and_dismiss() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items(sample_items())
        panel.focus()
        await pilot.press("down", "alt+a", "down", "alt+r", "alt+d")
        await pilot.pause()
        assert [(m.item_id, m.action) for m in posted(app, InboxPanel.Action)] == [
            (4, "accept"), (3, "reply"), (3, "dismiss")]
        assert panel.items[3].status == "dismissed"
        assert "reviewer#9" not in text(panel), "dismissed items are hidden"
        assert panel.selected_item_id == 2, "the cursor moves on to the next item"
        assert panel.unread == 1


async def test_inbox_keys_on_an_empty_inbox_say_so() -> None:
    """alt+a with nothing in the inbox did nothing at all (issue 47, item 6): it says there is nothing to accept."""
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items([])
        panel.focus()
        await pilot.press("alt+a", "alt+d")
        await pilot.pause()
        assert [n.message for n in app._notifications] == [  # (run_test shows no toasts)
            "The inbox is empty: nothing to accept.", "The inbox is empty: nothing to dismiss."]
        assert posted(app, InboxPanel.Action) == []


async def test_inbox_letters_alone_post_no_action() -> None:
    """Typing "make" or "word" while the inbox has the focus merges and opens nothing: letters are for the
    composer (the main screen sends them there)."""
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items(sample_items())
        panel.focus()
        await pilot.press(*"make", *"word")
        await pilot.pause()
        assert posted(app, InboxPanel.Action) == [] and panel.unread == 3


async def test_inbox_merge_and_worktree_keys_have_a_modifier() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items(sample_items())
        panel.focus()
        await pilot.press("alt+m", "alt+w")
        await pilot.pause()
        assert [(m.item_id, m.action) for m in posted(app, InboxPanel.Action)] == [(5, "merge"), (5, "worktree")]


async def test_inbox_follows_the_screen_add_item_and_set_status() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        assert EMPTY_TEXT in text(panel) and panel.unread == 0
        panel.focus()
        await pilot.press("enter", "alt+d")
        assert posted(app, InboxPanel.Action) == [], "no item, no action"
        panel.set_items(sample_items()[:2])
        panel.add_item(inbox_item(9, "orchestrator", "orchestrator#1: plan ✓ → implement …", "step 2 of 3"))
        await pilot.pause()
        assert lines(panel)[0].startswith("● ▸ progress · orchestrator#1: pl")
        assert panel.unread == 2
        panel.add_item(replace(panel.items[9], title="orchestrator#1: review"))  # same id: replaced
        await pilot.pause()
        assert text(panel).count("orchestrator#1") == 1
        panel.set_status(1, "read")
        panel.set_status(9, "dismissed")
        panel.set_status(12345, "read")  # not in this tree: ignored
        await pilot.pause()
        assert panel.unread == 0 and "orchestrator#1" not in text(panel)
        panel.set_status(9, "unread")
        await pilot.pause()
        assert panel.unread == 1 and "orchestrator#1" in text(panel)


async def test_a_new_inbox_item_comes_into_view_unless_the_user_is_moving_through_the_list() -> None:
    app = inbox_app()
    async with run(app) as pilot:
        panel = app.query_one(InboxPanel)
        panel.set_items([inbox_item(n, "completion", f"oracle#{n} — completed", "done", {"status": "completed"})
                         for n in range(1, 31)])
        panel.highlighted = panel.option_count - 1  # the oldest, far below: the list is scrolled down
        app.set_focus(None)  # the user types in the composer, not in the inbox
        await pilot.pause()
        assert panel.scroll_y > 0 and "oracle#30 " not in text(panel)
        panel.add_item(inbox_item(31, "completion", "oracle#31 — completed", "NEWEST", {"status": "completed"}))
        await pilot.pause()
        assert lines(panel)[0].strip("│ ").startswith("● ✓ oracle#31 — completed")
        assert panel.selected_item_id == 31

        panel.focus()
        await pilot.press("down", "down")
        panel.add_item(inbox_item(32, "completion", "oracle#32 — completed", "", {"status": "completed"}))
        await pilot.pause()
        assert panel.selected_item_id == 29, "a user moving through the list keeps their place"


# -- the session switcher -------------------------------------------------------------------------

NODES = [
    SessionNode("p1", None, "primary", "primary", "fix the login flake", "completed", 0, 0),
    SessionNode("o4", "p1", "oracle#4", "oracle", "why does the login test flake?", "completed", 2, 1),
    SessionNode("c1", "p1", "orchestrator#1", "orchestrator", "add a /health endpoint", "running", 0, 1),
    SessionNode("b7", "c1", "builder#7", "builder", "implement /health", "waiting_permission", 0, 2),
    SessionNode("r9", "c1", "reviewer#9", "reviewer", "review the change", "queued", 0, 2),
    SessionNode("p2", None, "primary", "primary", "an older session", "interrupted", 0, 0),
]


def tree_lines(app: App) -> list[str]:
    return [line for line in lines(app.screen.query_one(SessionTree)) if line]


async def open_switcher(app: PanelApp, pilot: Any, current: str | None = "b7",
                        nodes: list[SessionNode] | None = None) -> list[str | None]:
    results: list[str | None] = []
    app.push_screen(SwitcherScreen(NODES if nodes is None else nodes, current), results.append)
    await pilot.pause()
    return results


async def test_switcher_shows_the_tree_with_status_unread_and_current_marks() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        await open_switcher(app, pilot)
        assert isinstance(app.screen, SwitcherScreen)
        assert tree_lines(app) == [
            "+ New session",
            "▼ primary · completed · fix the login flake",
            "├── oracle#4 · completed · 2 unread · why does the login test flake?",
            "└── ▼ orchestrator#1 · running · add a /health endpoint",
            "    ├── » builder#7 · needs permission · implement /health",
            "    └── reviewer#9 · queued · review the change",
            "primary · interrupted · an older session",
        ]
        tree = cast(SwitcherScreen, app.screen).query_one(SessionTree)
        assert tree.cursor_node is not None and tree.cursor_node.data == "b7", "the cursor starts on the current one"
        assert isinstance(app.focused, Input)


async def test_switcher_filter_keeps_ancestors_and_enter_opens_the_first_match() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot, current="p2")
        await pilot.press(*"revw")
        await pilot.pause()
        assert tree_lines(app) == [
            "+ New session",
            "▼ primary · completed · fix the login flake",
            "└── ▼ orchestrator#1 · running · add a /health endpoint",
            "    └── reviewer#9 · queued · review the change",
        ]
        await pilot.press("enter")
        await pilot.pause()
        assert results == ["r9"]
        assert not isinstance(app.screen, SwitcherScreen)


async def test_switcher_filter_by_profile_and_several_words() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot)
        await pilot.press(*"oracle flake")
        await pilot.pause()
        assert [line.split(" · ")[0] for line in tree_lines(app)] == ["+ New session", "▼ primary", "└── oracle#4"]
        await pilot.press("ctrl+a", "ctrl+k", *"zzzz")
        await pilot.pause()
        assert tree_lines(app) == ["+ New session",
                                   "No session matches zzzz (esc closes; n in the tree starts a new one)"]
        await pilot.press("enter")
        await pilot.pause()
        assert results == [], "with nothing matching, enter starts no session the user did not ask for"
        await pilot.press("up", "enter")  # New session, chosen on purpose
        await pilot.pause()
        assert results == [NEW_SESSION]


async def test_switcher_escape_returns_none() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert results == [None]


async def test_switcher_n_means_new_only_when_not_typing() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot)
        await pilot.press("n")
        await pilot.pause()
        assert results == [] and app.screen.query_one(Input).value == "n"
        await pilot.press("backspace", "tab")
        assert isinstance(app.focused, SessionTree)
        await pilot.press("n")
        await pilot.pause()
        assert results == [NEW_SESSION]


async def test_switcher_new_session_entry_and_arrow_keys_while_typing() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot, current=None)
        tree = app.screen.query_one(SessionTree)
        assert tree.cursor_node is not None and tree.cursor_node.data == "p1"
        await pilot.press("down", "up", "up")
        assert tree.cursor_node is not None and tree.cursor_node.data == NEW_SESSION
        await pilot.press("enter")
        await pilot.pause()
        assert results == [NEW_SESSION]


async def test_switcher_parent_jump_with_p_and_backspace() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot)
        tree = app.screen.query_one(SessionTree)
        await pilot.press("tab", "p")
        assert tree.cursor_node is not None and tree.cursor_node.data == "c1"
        await pilot.press("backspace")
        assert tree.cursor_node is not None and tree.cursor_node.data == "p1"
        await pilot.press("p")  # a top-level session has no parent: the cursor stays
        assert tree.cursor_node is not None and tree.cursor_node.data == "p1"
        await pilot.press("enter")
        await pilot.pause()
        assert results == ["p1"]


async def test_switcher_click_opens_a_session() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot)
        tree = app.screen.query_one(SessionTree)
        assert await pilot.click(tree, offset=(8, 2))
        await pilot.pause()
        assert results == ["o4"]


async def test_switcher_truncates_long_titles_to_fit_80_columns() -> None:
    app = PanelApp()
    nodes = [SessionNode("p1", None, "primary", "primary", "a very long title " * 10, "running"),
             SessionNode("b1", "p1", "builder#1", "builder", "another long title " * 10, "running", 0, 1)]
    async with run(app) as pilot:
        await open_switcher(app, pilot, current=None, nodes=nodes)
        tree = app.screen.query_one(SessionTree)
        shown = tree_lines(app)
        assert all(line.endswith("…") and len(line) <= tree.size.width for line in shown[1:]), shown
        assert tree.virtual_size.width <= tree.size.width, "no sideways scrolling"


async def test_switcher_filter_prefers_whole_words_to_scattered_letters() -> None:
    """`log` finds the session about the login test, not every title with an l, an o and a g in order; with
    no word match, the letters in order still find one."""
    nodes = [SessionNode("p1", None, "primary", "generic", "make a large orange graph", "completed"),
             SessionNode("p2", None, "primary", "generic", "fix the login test", "completed")]
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_switcher(app, pilot, current=None, nodes=nodes)
        await pilot.press(*"log")
        await pilot.pause()
        assert tree_lines(app) == ["+ New session", "primary · completed · fix the login test"]
        await pilot.press("backspace", "backspace", "backspace", *"lrgorg")
        await pilot.pause()
        assert tree_lines(app) == ["+ New session", "primary · completed · make a large orange graph"]
        await pilot.press("enter")
        await pilot.pause()
        assert results == ["p1"]


def test_fuzzy_matching_and_visible_ids() -> None:
    assert fuzzy_positions("orc4", "oracle#4") == [0, 1, 3, 7]
    assert fuzzy_positions("ORA", "oracle#4") == [0, 1, 2]
    assert fuzzy_positions("x", "oracle#4") is None
    shown, matched = visible_ids(NODES, "builder")
    assert matched == {"b7"} and shown == {"b7", "c1", "p1"}
    shown, matched = visible_ids(NODES, "")
    assert shown == matched == {n.id for n in NODES}
    looped = [SessionNode("a", "b", "a", "x", "", "running"), SessionNode("b", "a", "b", "y", "", "running")]
    assert visible_ids(looped, "a")[0] == {"a", "b"}, "a cycle in parent ids does not hang"


# -- the permission modal -------------------------------------------------------------------------

DIFF = "\n".join(["--- a/app.py", "+++ b/app.py", "@@ -1,2 +1,2 @@", " import os", "-old()", "+new()"])


async def open_permission(app: PanelApp, pilot: Any, **kw: Any) -> list[str]:
    values: dict[str, Any] = dict(agent_label="builder#7", tool="bash", subject="pytest -q tests/test_health.py",
                                  arguments={"command": "pytest -q tests/test_health.py", "timeout": 60},
                                  preview=None)
    values.update(kw)
    results: list[str] = []
    app.push_screen(PermissionScreen(**values), results.append)
    await pilot.pause()
    await pilot.pause()
    return results


@pytest.mark.parametrize(("key", "answer"), [("y", "allow_once"), ("a", "allow_always"), ("n", "deny"),
                                             ("escape", "deny")])
async def test_permission_keys_answer(key: str, answer: str) -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_permission(app, pilot)
        await pilot.press(key)
        await pilot.pause()
        assert results == [answer]
        assert not isinstance(app.screen, PermissionScreen)


@pytest.mark.parametrize(("button", "answer"), [("allow_once", "allow_once"), ("allow_always", "allow_always"),
                                                ("deny", "deny")])
async def test_permission_buttons_answer(button: str, answer: str) -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_permission(app, pilot)
        assert await pilot.click(f"#{button}")
        await pilot.pause()
        assert results == [answer]


async def test_permission_enter_alone_answers_nothing() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        results = await open_permission(app, pilot)
        await pilot.press("enter", "space")
        await pilot.pause()
        assert results == [] and isinstance(app.screen, PermissionScreen)


async def test_permission_shows_who_what_and_the_arguments() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        await open_permission(app, pilot)
        screen = app.screen
        assert static_text(screen.query_one("#permission-title", Static)) == "builder#7 wants to run bash"
        assert static_text(screen.query_one("#permission-subject", Static)) == "pytest -q tests/test_health.py"
        assert static_text(screen.query_one("#permission-arguments", Static)) == "timeout: 60"
        assert not screen.query("#permission-preview")


async def test_permission_says_what_always_covers() -> None:
    """The remembered rule is the literal command (or path), for the session: the dialog says so."""
    app = PanelApp()
    async with run(app) as pilot:
        await open_permission(app, pilot)
        assert static_text(app.screen.query_one("#permission-always", Static)) == \
            "Always: this exact command, for the rest of this session"
        app.screen.dismiss("deny")
        await pilot.pause()
        await open_permission(app, pilot, tool="write_file", subject="notes.md",
                              arguments={"path": "notes.md", "content": "hi"})
        assert static_text(app.screen.query_one("#permission-always", Static)) == \
            "Always: write_file on this exact path, for the rest of this session"


async def test_permission_preview_is_capped_and_the_buttons_stay_on_an_80x24_screen() -> None:
    app = PanelApp()
    command = "for f in $(git ls-files); do wc -l $f; done && " * 7
    preview = "\n".join(f"+line {i}" for i in range(PREVIEW_LINES + 50))
    async with run(app) as pilot:
        await open_permission(app, pilot, tool="edit_file", subject=command, preview=preview,
                              arguments={"path": "app.py", "new": "x" * 500, "command": command})
        screen = app.screen
        shown = static_text(screen.query_one("#permission-preview-text", Static))
        assert shown.endswith("[… 50 more lines not shown]")
        assert static_text(screen.query_one("#permission-arguments", Static)) == "path: app.py · new: 500 chars"
        for button in screen.query(Button):
            assert screen.region.contains_region(button.region), f"{button.id} is cut off at {button.region}"
        assert app.focused is screen.query_one("#permission-preview"), "arrows scroll the preview"


def test_permission_diff_preview_is_coloured() -> None:
    content = preview_content(DIFF)
    styles = {content.plain[span.start:span.end]: str(span.style) for span in content.spans}
    assert styles["+new()"] == "$success" and styles["-old()"] == "$error" and styles["@@ -1,2 +1,2 @@"] == "$primary"
    assert preview_content("plain text\n+ not a diff").spans == []


# -- help -----------------------------------------------------------------------------------------

async def test_help_lists_keys_and_commands_and_closes() -> None:
    app = PanelApp()
    keys = [("ctrl+s", "sessions"), ("f2", "toggle the pair watcher")]
    commands = [("/oracle <question>", "ask the read-only oracle"), ("/help", "keys and commands")]
    async with run(app) as pilot:
        for close_key in ("escape", "q"):
            results: list[None] = []
            app.push_screen(HelpScreen(keys, commands), results.append)
            await pilot.pause()
            screen: Screen[Any] = app.screen
            assert isinstance(screen, HelpScreen)
            headings = [static_text(s) for s in screen.query(".help-heading").results(Static)]
            assert headings == ["Keys", "Commands"]
            keys_shown = [static_text(s) for s in screen.query("#help-keys Static").results(Static)]
            assert keys_shown == ["ctrl+s", "sessions", "f2", "toggle the pair watcher"]
            commands_shown = [static_text(s) for s in screen.query("#help-commands .help-name").results(Static)]
            assert commands_shown == ["/oracle <question>", "/help"]
            await pilot.press(close_key)
            await pilot.pause()
            assert results == [None] and isinstance(app.screen, Screen) and not isinstance(app.screen, HelpScreen)


async def test_help_with_empty_lists_says_none() -> None:
    app = PanelApp()
    async with run(app) as pilot:
        app.push_screen(HelpScreen([], []))
        await pilot.pause()
        assert [static_text(s) for s in app.screen.query(".help-empty").results(Static)] == ["(none)", "(none)"]


def test_help_lists_every_ledger_and_inbox_key() -> None:
    """/help's panel keys are the panels' own bindings: a key added to a panel must be listed too."""
    from yeetui.tui.slash import PANEL_KEYS
    from yeetui.tui.widgets.inbox import InboxPanel

    listed = {(name.split(":")[0], key.strip()) for name, _ in PANEL_KEYS for key in name.split(":")[1].split("/")}
    bound = {("ledger", key) for b in LedgerPanel.BINDINGS for key in cast(Binding, b).key.split(",")}
    bound |= {("inbox", key) for b in InboxPanel.BINDINGS for key in cast(Binding, b).key.split(",")}
    assert listed == bound
