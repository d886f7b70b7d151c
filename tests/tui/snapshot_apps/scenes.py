"""Small apps that show one yeetui widget or screen fed with fixed domain records, for SVG snapshots.

Everything here is deterministic: fixed ids, fixed timestamps, a frozen ledger clock, no cursor blink.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Input, TextArea

from yeetui.application.fleet import Fleet, FleetDesk, FleetRow
from yeetui.events import RunStatus
from yeetui.store.coordination import PermissionAsk
from yeetui.store.records import InboxItem
from yeetui.subagents.ledger import WATCHING, LedgerRow
from yeetui.tui import app as app_module
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.switcher import SessionNode
from yeetui.tui.themes import discover_themes

FROZEN_NOW = 1_000.0
"""The clock value every snapshot's ledger sees: elapsed times are fixed offsets from it."""
MODEL = "claude-sonnet-4-6"
BASE_TIME = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)


def frozen_clock() -> float:
    return FROZEN_NOW


def stop_blinking(app: App[Any]) -> None:
    """Keep every text cursor steadily drawn, so a capture never lands on the "off" half of a blink — on the
    screens under a modal one too (the main screen's composer under /help): a screen that is not active
    stops blinking in whatever half it was in, which on a loaded machine was the "off" one."""
    for screen in app.screen_stack:
        for widget in screen.query(TextArea):
            widget.cursor_blink = False  # drawn, steadily, where it has focus
        for field in screen.query(Input):
            field.cursor_blink = False
            field._cursor_visible = field.has_focus  # the blink's pause hides it; a focused input shows it


# -- fixed domain records ---------------------------------------------------------------------------


def ledger_rows() -> list[LedgerRow]:
    """One row per state the ledger shows: running, queued, needs permission, watching, completed."""
    def row(run_id: str, label: str, status: RunStatus | str, *, started: float | None = None,
            ended: float | None = None, cost: float | None = 0.0, activity: str = "",
            parent: str | None = "sess-primary") -> LedgerRow:
        profile = label.partition("#")[0]
        return LedgerRow(run_id=run_id, session_id=f"sess-{run_id}", parent_session_id=parent, label=label,
                         profile=profile, model=MODEL if status != WATCHING else "claude-haiku-4-5",
                         status=status, registered=FROZEN_NOW - 300, started=started, ended=ended, cost=cost,
                         activity=activity, clock=frozen_clock)

    return [
        row("run-oracle-4", "oracle#4", RunStatus.RUNNING, started=FROZEN_NOW - 42, cost=0.0312,
            activity="reading src/auth.py"),
        row("run-builder-7", "builder#7", RunStatus.WAITING_PERMISSION, started=FROZEN_NOW - 133, cost=0.12,
            activity="waiting for permission"),
        row("run-reviewer-2", "reviewer#2", RunStatus.QUEUED, activity="queued"),
        row("watch:sess-pair", "pair#2", WATCHING),
        row("run-generic-3", "generic#3", RunStatus.COMPLETED, started=FROZEN_NOW - 3_725, ended=FROZEN_NOW - 5,
            cost=None, activity=""),
    ]


def inbox_items() -> list[InboxItem]:
    """A completion, two review verdicts, an interjection blocker and orchestrator progress; some read."""
    def item(item_id: int, kind: str, title: str, body: str, data: dict[str, Any] | None, status: str,
             minutes: int) -> InboxItem:
        when = BASE_TIME + timedelta(minutes=minutes)
        return InboxItem(id=item_id, session_id="sess-primary", run_id=f"run-{item_id}", kind=kind, title=title,
                         body=body, data=data, status=status, dedupe_key=None,  # type: ignore[arg-type]
                         created_at=when, updated_at=when)

    return [
        item(1, "completion", "oracle#4 — completed",
             "The login test sleeps on a wall-clock timer; freeze the clock in the fixture.",
             {"status": "completed", "child_session_id": "sess-oracle"}, "unread", 9),
        item(2, "review", "reviewer#2 — verdict",
             "Two issues: the retry loop never backs off, and the new flag is undocumented.",
             {"result": {"artifacts": {"verdict": "request_changes"}}}, "unread", 8),
        item(3, "interjection", "pair#2 — blocker",
             "You are deleting the migration that production still needs.", {"severity": "blocker"},
             "unread", 7),
        item(4, "orchestrator", "orchestrate#1 — step 2 of 4 done",
             "build: the parser handles nested lists; next: review.", None, "read", 6),
        item(5, "review", "reviewer#1 — verdict", "Looks good; tests cover the edge cases.",
             {"result": {"artifacts": {"verdict": "approve"}}}, "read", 5),
        item(6, "completion", "builder#6 — failed", "The build broke: missing module `yeetui.frob`.",
             {"status": "failed"}, "read", 4),
    ]


def session_nodes() -> list[SessionNode]:
    """A primary session with children and a grandchild, plus an older primary."""
    return [
        SessionNode("sess-primary", None, "generic", "generic", "fix the flaky login test", "running", 0, 0),
        SessionNode("sess-oracle", "sess-primary", "oracle#4", "oracle", "why does the login test flake?",
                    "completed", 1, 1),
        SessionNode("sess-orch", "sess-primary", "orchestrate#1", "orchestrator", "retry with backoff",
                    "running", 0, 1),
        SessionNode("sess-builder", "sess-orch", "builder#7", "builder", "implement the retry loop",
                    "waiting_permission", 0, 2),
        SessionNode("sess-review", "sess-orch", "reviewer#2", "reviewer", "review the retry loop",
                    "failed", 2, 2),
        SessionNode("sess-pair", "sess-primary", "pair#2", "pair", "", "watching", 0, 1),
        SessionNode("sess-old", None, "generic", "generic", "rename the config loader", "completed", 0, 0),
        SessionNode("sess-old-oracle", "sess-old", "oracle#1", "oracle", "where is the config read?",
                    "completed", 0, 1),
    ]


# -- apps -------------------------------------------------------------------------------------------


class SceneApp(App[None]):
    """yeetui's themes registered, `theme` chosen, and whatever `make` composes on the default screen."""

    TITLE = "yeetui"
    AUTO_FOCUS = None
    """Nothing is focused unless a scene focuses it (on the main screen the composer has the focus)."""

    def __init__(self, make: Callable[[], ComposeResult] | None = None, *, theme: str = "yeetui-dark",
                 screen: Callable[[], Screen[Any]] | None = None) -> None:
        super().__init__()
        for found in discover_themes()[0]:
            self.register_theme(found)
        self._theme_name = theme
        self.make = make
        self.make_screen = screen

    def compose(self) -> ComposeResult:
        if self.make is not None:
            yield from self.make()

    def on_mount(self) -> None:
        self.theme = self._theme_name
        if self.make_screen is not None:
            self.push_screen(self.make_screen())


class FrozenLedgerApp(YeetuiApp):
    """The real app, whose runtime's ledger reads a frozen clock (elapsed times never tick)."""

    CSS_PATH = [str(Path(app_module.__file__).with_name("app.tcss"))]  # relative paths resolve per subclass
    LEDGER_CLOCK = staticmethod(frozen_clock)


def conversation_messages() -> list[Any]:
    """A finished exchange with every kind of entry: user, assistant with a tool call, its result,
    a subagent announcement, guidance, and a reminder."""
    from yeetui.events import RunStatus as Status
    from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
    from yeetui.subagents.inbox import announcement_text

    announcement = announcement_text("oracle#4", Status.COMPLETED,
                                     "The session fixture sleeps 0.5s; under load the cookie is late.", None)
    return [
        Message.user("why does the login test flake? look at tests/test_login.py"),
        Message(role="assistant", parts=[
            ThinkingPart(text="The test name says login; read it first."),
            TextPart(text="Let me read the test first."),
            ToolCallPart(id="call-1", name="read_file", arguments={"path": "tests/test_login.py"}),
            ToolCallPart(id="call-2", name="bash", arguments={"command": "pytest -q tests/test_login.py"}),
        ]),
        Message(role="tool", parts=[
            ToolResultPart(call_id="call-1", name="read_file", content="def test_login(client):\n    ..."),
            ToolResultPart(call_id="call-2", name="bash", content="F\nFAILED tests/test_login.py::test_login",
                           is_error=True),
        ]),
        Message.user(announcement, announcement=True, label="oracle#4", child_session_id="sess-oracle",
                     status="completed"),
        Message.user("[Guidance from user]\nfocus on the fixture, not the test", steer=True),
    ]


def tree_ledger_rows() -> list[LedgerRow]:
    """The primary running an orchestration: its row, the orchestrator under it, the builder under that (with
    tokens and a retry), an oracle beside the orchestrator; the primary's row carries the tree's cost."""
    def row(run_id: str, label: str, session: str, parent: str | None, **kw: Any) -> LedgerRow:
        values: dict[str, Any] = dict(run_id=run_id, session_id=session, parent_session_id=parent, label=label,
                                      profile=label.partition("#")[0], model=MODEL, status=RunStatus.RUNNING,
                                      registered=FROZEN_NOW - 300, started=FROZEN_NOW - 95, clock=frozen_clock)
        values.update(kw)
        return LedgerRow(**values)

    return [
        row("run-primary", "generic#1", "sess-primary", None, cost=0.0123, tree_cost=0.4125, tokens=18_400,
            activity="answering"),
        row("run-orch", "orchestrator#2", "sess-orch", "sess-primary", cost=0.0, tree_cost=0.31,
            activity="plan ✓ → build … → review"),
        row("run-builder", "builder#3", "sess-builder", "sess-orch", cost=0.21, tokens=52_000,
            activity="retrying (2/5) in 4 s — Anthropic is overloaded (529)"),
        row("run-oracle", "oracle#4", "sess-oracle", "sess-primary", status=RunStatus.COMPLETED,
            ended=FROZEN_NOW - 3, cost=0.09, tokens=9_800),
    ]


def final_summary_messages() -> list[Any]:
    """A prompt, then an agent that ends by calling `complete` with a Markdown summary."""
    from yeetui.messages import Message, ToolCallPart, ToolResultPart

    summary = ("## Done\n\nI renamed **three** functions and kept their old names as aliases:\n\n"
               "- `load()` → `read_config()`\n- `save()` → `write_config()`\n- `check()` → `validate()`\n\n"
               "All 41 tests pass.")
    return [
        Message.user("rename the config helpers"),
        Message(role="assistant", parts=[ToolCallPart(id="call-1", name="complete",
                                                      arguments={"output": summary, "status": "success"})]),
        Message(role="tool", parts=[ToolResultPart(call_id="call-1", name="complete", content="Run complete.")]),
    ]


class FixedFleet(FleetDesk):
    """The fleet as it stood at one moment (fixed rows: three projects, each group), for the fleet screen; its
    actions are FleetDesk's own (none is used by the snapshots)."""

    def __init__(self) -> None:
        super().__init__(cast(Any, None), env={})

        ask = PermissionAsk(7, "run-ask", "run-ask", "sess-ask", "builder#2", "bash", "make deploy",
                            {"command": "make deploy"})
        self.fleet = Fleet(
            needs_you=[
                FleetRow("run-ask", "builder#2", "builder", "/home/ada/shop", "generic#1 › builder#2", "tmux",
                         "waiting_permission", "asks to run bash: make deploy", 192.0, 0.41, 48_200, "sess-ask",
                         4242, ask=ask, pane="tmux -L yeetui-1a2b3c attach -t yeetui:builder-2"),
                FleetRow("run-review", "reviewer#1", "reviewer", "/home/ada/api", "schedule 3f2a", "detached",
                         "completed", "finished: not read yet", 75.0, 0.08, 12_400, "sess-review", None)],
            working=[
                FleetRow("run-oracle", "oracle#3", "oracle", "/home/ada/shop", "generic#1 › oracle#3", "in_process",
                         "running", "", 44.0, 0.02, 6_100, "sess-oracle", 4100),
                FleetRow("run-slow", "builder#4", "builder", "/home/ada/docs", "orchestrator#1 › builder#4",
                         "detached", "stalled", "no progress for 3:10", 610.0, 1.27, 210_000, "sess-slow", 4300,
                         worktree="/home/ada/docs/.yeetui/worktrees/builder-4")],
            done=[
                FleetRow("run-gone", "oracle#1", "oracle", "/home/ada/api", "oracle#1", "detached", "gone",
                         "its process is gone (it is recorded interrupted at the next start)", 30.0, None, 0,
                         "sess-gone", 999),
                FleetRow("run-done", "planner#1", "planner", "/home/ada/shop", "generic#1 › planner#1",
                         "in_process", "completed", "", 121.0, 0.05, 9_900, "sess-done", None)])

    async def look(self, *, limit: int = 500) -> Fleet:
        return self.fleet
