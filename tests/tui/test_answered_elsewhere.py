"""A permission dialog whose question is settled somewhere else closes, saying how: answered in another window
(`yeetui fleet`, another yeetui on the same data dir), withdrawn because its run stopped waiting, refused
because nobody answered in time. The app's dialog, the fleet's own, and a dialog of this app's own run."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from textual.screen import Screen

from tests.fakellm import Reply, ToolCall
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui import paths
from yeetui.application.fleet import FleetDesk
from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.tui.app import YeetuiApp
from yeetui.tui.fleet_app import FleetApp
from yeetui.tui.screens.fleet import FleetScreen
from yeetui.tui.screens.permission import PermissionScreen
from yeetui.tui.widgets.conversation import ConversationView


@pytest.fixture
async def other(isolated_env: Path) -> AsyncIterator[Store]:
    """Another process's connection to the app's data dir: the detached worker asking, the fleet answering."""
    async with await Store.open(paths.database_path()) as opened:
        yield opened


async def _detached_question(store: Store, project: Path, subject: str = "make deploy") -> tuple[str, int]:
    """A detached run (this live process stands in for its worker) waiting on a question open to every yeetui."""
    await asyncio.to_thread(project.mkdir, exist_ok=True)
    session = await store.create_session(profile="builder", cwd=project, title="builder#1")
    run = await store.create_run(session_id=session.id, profile="builder", model=None, prompt="p",
                                 status=RunStatus.QUEUED, label="builder#1", pid=os.getpid(),
                                 options={"detached": True, "ask_any_yeetui": True, "ask_wait": True})
    await store.update_run(run.id, status=RunStatus.RUNNING)
    await store.update_run(run.id, status=RunStatus.WAITING_PERMISSION)
    ask = await store.permission_asks.post(run.id, run_id=run.id, session_id=session.id, agent_label="builder#1",
                                           tool="bash", subject=subject, arguments={"command": subject},
                                           open_to_all=True)
    return run.id, ask


async def test_the_apps_dialog_closes_when_the_fleet_answers_and_says_how(fake_env, project: Path,
                                                                          other: Store) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        _, ask = await _detached_question(other, project)
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen))
        assert "make deploy" in _text(app.screen)
        [row] = (await FleetDesk(other).look()).needs_you  # `yeetui fleet` in another terminal answers first
        await FleetDesk(other).answer(row, "allow_once")
        await pilot_until(pilot, lambda: app.screen is main)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "answered in another window" in _text(view))
        assert "builder#1's bash question was answered in another window: allowed once." in _text(view)
        assert await other.permission_asks.read_answer(ask) == "allow_once", "the fleet's answer stands"


async def test_the_apps_dialog_closes_when_its_run_stops_waiting(fake_env, project: Path, other: Store) -> None:
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        _, ask = await _detached_question(other, project)
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen))
        await other.permission_asks.answer(ask, "withdrawn")  # the worker's run was cancelled meanwhile
        await pilot_until(pilot, lambda: app.screen is main)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "builder#1's bash question was withdrawn" in _text(view))
        await pilot.press("y")  # a key meant for the dialog answers nothing now
        await pilot.pause()
        assert await other.permission_asks.read_answer(ask) == "withdrawn"


async def test_a_dialog_of_this_apps_own_run_closes_when_the_run_is_stopped(fake_env, project: Path) -> None:
    """The subagent asking is stopped (cancelled from the ledger, the fleet, `agents cancel`) while its
    question is on screen: the dialog goes and says why, instead of waiting for an answer nobody needs."""
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build"})], when_contains="CLEAN-UP"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "@generic CLEAN-UP the build dir")
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen))
        [run_id] = main.surface.runs.live_here()
        main.surface.runs.abort(run_id)
        await pilot_until(pilot, lambda: app.screen is main)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "bash question was withdrawn" in _text(view))


async def test_the_fleets_dialog_closes_when_another_window_answers(other: Store, tmp_path: Path) -> None:
    _, ask = await _detached_question(other, tmp_path / "proj")
    app = FleetApp(FleetDesk(other), run_handover=lambda handover: 0)
    async with app.run_test(size=(150, 30)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, FleetScreen) and cast(FleetScreen, app.screen).rows)
        fleet: Screen[Any] = app.screen
        assert isinstance(fleet, FleetScreen)
        await pilot.press("a")
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen))
        await other.permission_asks.answer(ask, "deny")  # a yeetui app's dialog was answered first
        await pilot_until(pilot, lambda: app.screen is fleet)
        said = str(fleet.query_one("#fleet-said").render())
        assert "builder#1's bash question was answered in another window: denied." in said
