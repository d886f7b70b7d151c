"""A question a detached run asked before any yeetui app was open on the data dir gets its dialog in the app
opened later (docs/fleet-and-schedules.md: "a TUI opened later answers"): the app's attending side found it in
the store during start-up, before the main screen listened to the bus, and asks it again once it does. It is
shown once, the first answer from any yeetui wins, and the answer lets the run go on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui, stored_status, wait_for_stored_status
from tests.tui.test_answered_elsewhere import _detached_question
from tests.tui.test_app import _main, _text
from tests.waiting import pilot_until
from yeetui import paths
from yeetui.application.fleet import FleetDesk
from yeetui.store import Store
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.screens.permission import PermissionScreen
from yeetui.tui.widgets.conversation import ConversationView


@pytest.fixture
async def other(isolated_env: Path) -> AsyncIterator[Store]:
    """Another process's connection to the data dir: the detached worker asking, the fleet answering."""
    async with await Store.open(paths.database_path()) as opened:
        yield opened


def _stored_error(run_id: str) -> str | None:
    database = Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db"
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as conn:
        row = conn.execute("SELECT error FROM agent_runs WHERE id = ?", (run_id,)).fetchone()
    return row[0] if row else None


def _permission_dialogs(app: YeetuiApp) -> int:
    return sum(isinstance(screen, PermissionScreen) for screen in app.screen_stack)


async def test_a_question_asked_before_the_app_opened_gets_its_dialog(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo ASKED-FIRST-RAN"})], when_contains="ASK-FIRST"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ASKED-FIRST-DONE"})], when_contains="ASKED-FIRST-RAN"),
    )
    started = await asyncio.to_thread(run_yeetui, "agents", "start", "generic", "ASK-FIRST: run the echo", "--json",
                                      cwd=project)  # no --yes: its bash question waits for a yeetui to answer
    assert started.returncode == 0, started.stderr
    worker = json.loads(started.stdout)
    run_id = worker["run_id"]
    try:
        assert await asyncio.to_thread(wait_for_stored_status, run_id, {"waiting_permission"}) == "waiting_permission"
        app = YeetuiApp(cwd=project)
        async with app.run_test(size=(120, 32)) as pilot:
            try:  # once the main screen listens, maybe before its session is open (a loaded machine boots slowly)
                await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen), timeout=60)
            except AssertionError as exc:
                raise AssertionError(f"no dialog: the run is {stored_status(run_id)}, {app.screen_stack}") from exc
            dialog = app.screen  # pushed, then composed: its text is there a frame later on a loaded machine
            await pilot_until(pilot, lambda: "echo ASKED-FIRST-RAN" in _text(dialog), timeout=30)
            assert _permission_dialogs(app) == 1
            await pilot.press("y")
            main = await _main(pilot)
            done = await asyncio.to_thread(wait_for_stored_status, run_id, None)
            assert done == "completed", f"the run ended {done}: {_stored_error(run_id)}"
            await pilot.pause(0.5)  # a second dialog for the same question would be up by now
            assert app.screen is main, f"asked again: {app.screen_stack}"
        ran = [r for r in fake_env.requests if "ASKED-FIRST-RAN" in r.text]
        assert ran and "denied" not in ran[-1].text
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker["pid"], signal.SIGKILL)


async def test_a_question_asked_before_the_app_opened_is_shown_once_and_the_first_answer_wins(
        fake_env, project: Path, other: Store) -> None:
    _, ask = await _detached_question(other, project, "make release")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen), timeout=60)
        [main] = [screen for screen in app.screen_stack if isinstance(screen, MainScreen)]
        await pilot_until(pilot, lambda: main.current is not None, timeout=60)
        await pilot.pause(0.5)  # rounds of looking at the store go by: still the one dialog
        assert _permission_dialogs(app) == 1 and "make release" in _text(app.screen)
        [row] = (await FleetDesk(other).look()).needs_you  # `yeetui fleet` in another terminal answers first
        await FleetDesk(other).answer(row, "deny")
        await pilot_until(pilot, lambda: app.screen is main)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "answered in another window" in _text(view))
        assert "builder#1's bash question was answered in another window: denied." in _text(view)
        await pilot.pause(0.5)
        assert app.screen is main and _permission_dialogs(app) == 0, f"asked again: {app.screen_stack}"
        assert await other.permission_asks.read_answer(ask) == "deny", "the fleet's answer stands"
