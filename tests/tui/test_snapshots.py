"""SVG snapshot tests of the TUI (pytest-textual-snapshot): each scene at a fixed size with fixed data.

Scenes are built two ways: the real widgets and screens fed with fixed domain records inside a small App
(tests/tui/snapshot_apps/scenes.py), and the whole app against the fake LLM server (main screen mid-stream,
at 80×24, in the light theme, with the help screen). After a deliberate change to what the TUI draws, look
at the new pictures, then update with `pytest tests/tui/test_snapshots.py --snapshot-update`.

Determinism: terminal sizes are fixed; records carry fixed ids and timestamps; every ledger reads a frozen
clock; text cursors do not blink; the fake server's streamed reply sends its first chunk at once and then
stalls, so a capture always shows exactly that chunk; the data dirs are the per-test temp dirs of
`isolated_env`, so no real config, theme choice or history leaks in.

These tests are plain functions, not coroutines: `snap_compare` runs the app in an event loop of its own.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Footer, Input, Static

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import yeetui_argv, yeetui_env
from tests.terminal import run_on_terminal
from tests.tui.snapshot_apps.scenes import (
    MODEL,
    FixedFleet,
    FrozenLedgerApp,
    SceneApp,
    conversation_messages,
    final_summary_messages,
    inbox_items,
    ledger_rows,
    session_nodes,
    stop_blinking,
    tree_ledger_rows,
)
from tests.waiting import pilot_until
from yeetui.events import ProviderRetrying
from yeetui.subagents.heading import SessionHeading
from yeetui.tui.bridge import permission_preview
from yeetui.tui.screens.help import HelpScreen
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.screens.permission import PermissionScreen
from yeetui.tui.screens.switcher import SwitcherScreen
from yeetui.tui.themes import save_theme
from yeetui.tui.widgets.composer import Composer
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.ledger import LedgerPanel
from yeetui.tui.widgets.message_views import AnnouncementView, AssistantMessageView
from yeetui.tui.widgets.session_header import SessionHeader

DARK, LIGHT = "yeetui-dark", "yeetui-light"
THEMES = pytest.mark.parametrize("theme", [DARK, LIGHT])

# -- helpers ----------------------------------------------------------------------------------------


async def _settle(pilot: Any) -> None:
    """Let pending layout, Markdown flushes (50 ms) and call_after_refresh callbacks run, freeze cursors, and
    wait until the screen stays as it is: on a loaded machine a fixed pause was sometimes not enough."""
    await pilot.pause(0.2)
    await pilot.wait_for_scheduled_animations()
    stop_blinking(pilot.app)
    await pilot.pause()
    shot = pilot.app.export_screenshot()
    for _ in range(200):
        await pilot.pause(0.05)
        previous, shot = shot, pilot.app.export_screenshot()
        if shot == previous:
            return
    raise AssertionError("the screen kept changing: a snapshot of it could not be compared")


def _background() -> ComposeResult:
    """What a modal scene covers: a stand-in for the main screen."""
    yield Static("yeetui main screen\n" * 20, id="background")
    yield Footer()


# -- the whole app against the fake LLM server ------------------------------------------------------

STREAM_FIRST = (
    "The login test flakes because it **sleeps on a wall-clock timer** instead of waiting for the cookie.\n\n"
    "1. `test_login` sleeps `0.5s`, then reads the session cookie\n"
    "2. under load the cookie arrives later than that\n\n"
    "```python\ntime.sleep(0.5)\nassert client.cookies['session']\n```\n\n"
    "A fix is to"
)
STREAM_REST = " poll for the cookie with a deadline instead of a fixed sleep."
STALL = 60.0
"""Seconds the fake server waits after the first chunk: far longer than a capture takes (it is cut short
when the server stops)."""


@pytest.fixture
def project(project: Path) -> Path:
    """The shared empty project, with a README to show in completions."""
    root = project
    (root / "README.md").write_text("# demo\n\nA project to test yeetui with.\n", encoding="utf-8")
    return root


async def _main(pilot: Any) -> MainScreen:
    await pilot_until(pilot, lambda: isinstance(pilot.app.screen, MainScreen) and pilot.app.screen.ready,
                 what="the main screen")
    return pilot.app.screen


async def _submit(pilot: Any, text: str) -> None:
    composer = pilot.app.screen.query_one(Composer)
    composer.text = text
    composer.focus()
    await pilot.press("enter")


def _streamed(main: MainScreen) -> str:
    return "".join(v.shown_text for v in main.query_one(ConversationView).query(AssistantMessageView) if v.live)


async def _mid_stream(pilot: Any) -> None:
    main = await _main(pilot)
    await _submit(pilot, "why does the login test flake?")
    await pilot_until(pilot, lambda: STREAM_FIRST in _streamed(main), what="the first streamed chunk")
    await _settle(pilot)


def _stalled_reply() -> Reply:
    return Reply(text=STREAM_FIRST + STREAM_REST, chunk_size=len(STREAM_FIRST), chunk_delay=STALL)


@THEMES
def test_main_screen_mid_stream(snap_compare, fake_env, project: Path, theme: str) -> None:
    """Ledger row of the running primary, the user's prompt, half an answer, the busy composer, the inbox."""
    save_theme(theme)  # the persisted choice, as `/theme` leaves it
    fake_env.script(_stalled_reply())
    assert snap_compare(FrozenLedgerApp(cwd=project), terminal_size=(110, 32), run_before=_mid_stream)


@pytest.mark.parametrize("inbox", [False, True], ids=["inbox-folded", "inbox-toggled"])
def test_main_screen_80x24(snap_compare, fake_env, project: Path, inbox: bool) -> None:
    """The smallest supported terminal after an oracle finished: the inbox is folded away (or toggled back
    with ctrl+b, narrower), the ledger keeps the completed row, the announcement links to the child."""
    # A little delay per chunk: the "Started oracle#1." notice is always drawn before the announcement.
    fake_env.script(Reply(text="Reading the test.", chunk_size=6, chunk_delay=0.05, tool_calls=[
        ToolCall("complete", {"output": "ORACLE-VERDICT: the login test sleeps on a timer."})]))

    async def run_before(pilot: Any) -> None:
        main = await _main(pilot)
        await _submit(pilot, "/oracle why does the login test flake?")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: bool(view.query(AnnouncementView)), what="the oracle's announcement")
        ledger = main.query_one(LedgerPanel)
        await pilot_until(pilot, lambda: any(row.is_final for row in ledger.rows.values()), what="the completed row")
        await pilot_until(pilot, lambda: main.query_one(InboxPanel).unread == 1, what="the inbox item")
        if inbox:
            await pilot.press("ctrl+b")
        # The "Inbox: … (1 unread · ctrl+b)" toast lasts 4 s from the item's arrival: on a loaded machine it was
        # sometimes gone by the snapshot. It is not what this snapshot is about (tests/tui/test_hidden_inbox.py).
        pilot.app.clear_notifications()
        await _settle(pilot)

    assert snap_compare(FrozenLedgerApp(cwd=project), terminal_size=(80, 24), run_before=run_before)


def test_help_screen(snap_compare, fake_env, project: Path) -> None:
    """`/help` over the main screen: every key (with the real bindings) and every command."""
    async def run_before(pilot: Any) -> None:
        await _main(pilot)
        await _submit(pilot, "/help")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), what="the help screen")
        await _settle(pilot)

    assert snap_compare(FrozenLedgerApp(cwd=project), terminal_size=(100, 30), run_before=run_before)


# -- widgets fed with fixed records ----------------------------------------------------------------


LIVE_TEXT = "So the fix belongs in **conftest.py**:\n\n- poll the cookie"


@THEMES
def test_conversation_entries(snap_compare, theme: str) -> None:
    """Every kind of entry, then a live message streaming its thinking and half its text."""
    view = ConversationView("sess-primary", id="conversation")

    async def run_before(pilot: Any) -> None:
        for number, message in enumerate(conversation_messages(), start=1):
            await view.add_message(message, number)
        await view.add_notice("warning", "No API key for openai (model openai/gpt-5). Set OPENAI_API_KEY.")
        await view.stream_thinking("run-2", "The fixture is the shared part.")
        await view.stream_text("run-2", LIVE_TEXT)
        await pilot_until(pilot, lambda: any(v.live and v.shown_text == LIVE_TEXT
                                             for v in view.query(AssistantMessageView)), what="the streamed text")
        await _settle(pilot)

    app = SceneApp(lambda: iter([view, Footer()]), theme=theme)
    assert snap_compare(app, terminal_size=(90, 40), run_before=run_before)


def test_ledger_states(snap_compare) -> None:
    """Running, needs permission, queued, watching and completed rows; the cursor on the second row."""
    panel = LedgerPanel(id="ledger")

    async def run_before(pilot: Any) -> None:
        for row in ledger_rows():
            panel.update_row(row.run_id, row)
        panel.focus()
        await pilot.press("down")
        await _settle(pilot)

    def make() -> ComposeResult:
        yield panel
        yield Static("(conversation)", id="body")
        yield Footer()

    assert snap_compare(SceneApp(make), terminal_size=(100, 14), run_before=run_before)


def test_ledger_states_narrow(snap_compare) -> None:
    """The same rows at 60 columns, unfocused: long rows end in an ellipsis."""
    panel = LedgerPanel(id="ledger")

    async def run_before(pilot: Any) -> None:
        for row in ledger_rows():
            panel.update_row(row.run_id, row)
        await _settle(pilot)

    assert snap_compare(SceneApp(lambda: iter([panel, Static("(conversation)"), Footer()])),
                        terminal_size=(60, 10), run_before=run_before)


def _inbox_scene(panel: InboxPanel) -> ComposeResult:
    """The inbox beside a stand-in conversation, full height, as on the main screen."""
    body = Static("(conversation)", id="body")
    body.styles.width = "1fr"
    row = Horizontal(body, panel)
    row.styles.height = "1fr"
    yield row
    yield Footer()


def test_inbox_items(snap_compare) -> None:
    """Completion, review verdicts, an interjection blocker and orchestrator progress; three unread."""
    panel = InboxPanel(id="inbox")

    async def run_before(pilot: Any) -> None:
        panel.set_items(inbox_items())
        await _settle(pilot)

    assert snap_compare(SceneApp(lambda: _inbox_scene(panel)), terminal_size=(100, 20), run_before=run_before)


def test_inbox_focused_after_open(snap_compare) -> None:
    """Focused, cursor on the review verdict, which was opened (now read): the badge counts two unread."""
    panel = InboxPanel(id="inbox")

    async def run_before(pilot: Any) -> None:
        panel.set_items(inbox_items())
        panel.focus()
        await pilot.press("down", "enter")
        await _settle(pilot)

    assert snap_compare(SceneApp(lambda: _inbox_scene(panel)), terminal_size=(100, 20), run_before=run_before)


# -- modal screens ----------------------------------------------------------------------------------


def test_switcher_tree(snap_compare) -> None:
    """Primary → children → grandchildren with status and unread marks; the current session marked."""
    app = SceneApp(_background, screen=lambda: SwitcherScreen(session_nodes(), "sess-orch"))

    async def run_before(pilot: Any) -> None:
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen), what="the switcher")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)


def test_switcher_filtered(snap_compare) -> None:
    """`retry` typed: the three matches with their ancestors (dimmed) and the matched letters marked."""
    app = SceneApp(_background, screen=lambda: SwitcherScreen(session_nodes(), "sess-orch"))

    async def run_before(pilot: Any) -> None:
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen), what="the switcher")
        await pilot.press(*"retry")
        await pilot_until(pilot, lambda: pilot.app.screen.query_one(Input).value == "retry", what="the typed filter")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)


def test_permission_bash(snap_compare) -> None:
    """A subagent's bash command: the command prominent, the other arguments on one line, no preview."""
    command = "pytest -q tests/test_login.py && rm -rf build/"
    app = SceneApp(_background, screen=lambda: PermissionScreen(
        "builder#7", "bash", command, {"command": command, "timeout": 120}, permission_preview("bash", {})))

    async def run_before(pilot: Any) -> None:
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen), what="the permission modal")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_permission_edit_diff(snap_compare) -> None:
    """An edit_file call: the path as subject and the diff preview (from the bridge) coloured."""
    arguments = {
        "path": "tests/conftest.py",
        "old_string": "def wait_for_cookie(client):\n    time.sleep(0.5)\n    return client.cookies['session']",
        "new_string": ("def wait_for_cookie(client, deadline=5.0):\n    end = time.monotonic() + deadline\n"
                       "    while 'session' not in client.cookies:\n        if time.monotonic() > end:\n"
                       "            raise TimeoutError('no session cookie')\n        time.sleep(0.05)\n"
                       "    return client.cookies['session']"),
    }
    app = SceneApp(_background, screen=lambda: PermissionScreen(
        "builder#7", "edit_file", arguments["path"], arguments, permission_preview("edit_file", arguments)))

    async def run_before(pilot: Any) -> None:
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen), what="the permission modal")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


# -- issue 13: which session, the end of a turn, retries, headless progress --------------------------


def test_session_header_over_the_ledger_tree(snap_compare) -> None:
    """The header names a finished builder three levels down; the ledger shows the tree indented, the
    primary's row with the tree's cost, tokens, an orchestrator's progress line and a retry."""
    header = SessionHeader(id="session-header")
    panel = LedgerPanel(id="ledger")

    async def run_before(pilot: Any) -> None:
        header.show(SessionHeading(trail=("primary", "orchestrator#2", "builder#3"),
                                   title="add a /health endpoint with tests", status="completed", follow_up=True,
                                   model=MODEL))
        for row in tree_ledger_rows():
            panel.update_row(row.run_id, row)
        await _settle(pilot)

    def make() -> ComposeResult:
        yield header
        yield panel
        yield Static("(conversation)", id="body")
        yield Footer()

    assert snap_compare(SceneApp(make), terminal_size=(120, 10), run_before=run_before)


def test_final_summary_rendered_as_the_answer(snap_compare) -> None:
    """An agent that ends with `complete`: its summary is the answer, rendered Markdown, not a tool row."""
    view = ConversationView("sess-primary", id="conversation")

    async def run_before(pilot: Any) -> None:
        for number, message in enumerate(final_summary_messages(), start=1):
            await view.add_message(message, number)
        await pilot_until(pilot, lambda: bool(view.query(AssistantMessageView)), what="the rendered summary")
        await _settle(pilot)

    assert snap_compare(SceneApp(lambda: iter([view, Footer()])), terminal_size=(90, 22), run_before=run_before)


def test_retry_line_in_the_conversation_and_the_ledger(snap_compare) -> None:
    """An overloaded provider: the retry said in the conversation and on the run's ledger row."""
    view = ConversationView("sess-primary", id="conversation")
    panel = LedgerPanel(id="ledger")
    retry = ProviderRetrying("run-oracle-4", "sess-primary", 1, 4.0, "Anthropic is overloaded (529)", max_attempts=5)

    async def run_before(pilot: Any) -> None:
        [row] = [r for r in ledger_rows() if r.run_id == "run-oracle-4"]
        panel.update_row(row.run_id, replace(row, activity=retry.text))
        from yeetui.messages import Message

        await view.add_message(Message.user("why does the login test flake?"), 1)
        await view.add_notice("warning", retry.text)
        await _settle(pilot)

    assert snap_compare(SceneApp(lambda: iter([panel, view, Footer()])), terminal_size=(100, 12),
                        run_before=run_before)


def _steady(text: str) -> str:
    """Progress with what changes from run to run made fixed: the run id, the clock, durations."""
    text = re.sub(r"run [0-9a-f]{12}", "run 0123456789ab", text)
    text = re.sub(r"\[\d+:\d\d\]", "[0:0•]", text)
    return re.sub(r"after [\d.]+ s", "after • s", text)


def test_headless_progress_on_a_terminal(snap_compare, fake_env, project: Path) -> None:
    """`yeetui run` on a pseudo-terminal: the run id at once, a retry, a tool, the end — then the answer."""
    fake_env.script(Reply.error(529, retry_after=1.0),
                    Reply(tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
                    Reply(tool_calls=[ToolCall("complete", {"output": "The README says **demo**."})]))
    run = run_on_terminal(yeetui_argv("run", "--yes", "what is this project?"), cwd=project, env=yeetui_env())
    assert run.exit_status == 0, run.text
    shown = _steady(run.text)
    assert "retrying (2/5) in 1 s" in shown and "reading README.md" in shown

    def make() -> ComposeResult:
        yield Static(shown, id="terminal", markup=False)

    assert snap_compare(SceneApp(make), terminal_size=(100, 12))


def test_fleet_full_screen(snap_compare) -> None:
    """`yeetui fleet`: needs you (a pane child's question, a scheduled review not read), working (one stalled),
    done (one whose process is gone); the first run highlighted with its details below."""
    from yeetui.tui.fleet_app import FleetApp
    from yeetui.tui.screens.fleet import FleetScreen

    app = FleetApp(FixedFleet(), run_handover=lambda handover: 0)

    async def run_before(pilot: Any) -> None:
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, FleetScreen) and pilot.app.screen.rows,
                     what="the fleet")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(130, 20), run_before=run_before)
