"""`yeetui fleet` full screen (FleetApp): the rows a user sees in each group, and each action on a row reaching
the run through the store — a permission answer, guidance, a cancel — or handing the terminal over (yeetui on
the session, tmux attach, a shell in the worktree)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static

from tests.waiting import pilot_until
from yeetui.application.fleet import FleetDesk, Handover
from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.tui.fleet_app import FleetApp
from yeetui.tui.screens.fleet import FleetScreen, MessageScreen
from yeetui.tui.screens.permission import PermissionScreen


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "yeetui.db") as opened:
        yield opened


async def _run(store: Store, project: Path, label: str, status: RunStatus, **options: object) -> tuple[str, str]:
    await asyncio.to_thread(project.mkdir, exist_ok=True)
    session = await store.create_session(profile=label.split("#")[0], cwd=project, title=label)
    run = await store.create_run(session_id=session.id, profile=label.split("#")[0], model=None, prompt="p",
                                 status=RunStatus.QUEUED, label=label, pid=os.getpid(), options=dict(options))
    await store.update_run(run.id, status=RunStatus.RUNNING)
    if status != RunStatus.RUNNING:
        await store.update_run(run.id, status=status)
    return session.id, run.id


def _said(screen: FleetScreen) -> str:
    return str(screen.query_one("#fleet-said", Static).render())


async def _highlight(pilot, screen: FleetScreen, run_id: str) -> None:
    listing = screen.query_one(OptionList)
    listing.highlighted = listing.get_option_index(run_id)
    await pilot.pause()


async def test_the_full_screen_fleet_answers_steers_cancels_and_hands_over(store: Store, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    _, asking = await _run(store, one, "builder#1", RunStatus.WAITING_PERMISSION, detached=True,
                           ask_any_yeetui=True, ask_wait=True)
    ask_id = await store.permission_asks.post(asking, run_id=asking, session_id="s", agent_label="builder#1",
                                              tool="bash", subject="make deploy", arguments={"command": "make deploy"},
                                              open_to_all=True)
    working_session, working = await _run(store, two, "oracle#2", RunStatus.RUNNING, detached=True)
    _, other = await _run(store, two, "oracle#3", RunStatus.RUNNING, detached=True)
    handed: list[Handover] = []

    def hand_over(handover: Handover) -> int:
        handed.append(handover)
        return 0

    app = FleetApp(FleetDesk(store), run_handover=hand_over)
    async with app.run_test(size=(150, 30)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, FleetScreen) and cast(FleetScreen, app.screen).rows)
        screen: Screen[Any] = app.screen
        assert isinstance(screen, FleetScreen)
        listing = screen.query_one(OptionList)
        shown = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert shown[0] == "NEEDS YOU (1)" and "builder#1" in shown[1] and "asks to run bash: make deploy" in shown[1]
        assert shown[2] == "WORKING (2)" and shown[5] == "DONE (0)"

        # a: the question, in the permission dialog; y allows it once — in the store, where the run reads it
        await _highlight(pilot, screen, asking)
        await pilot.press("a")
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen))
        await pilot.press("y")
        await pilot_until(pilot, lambda: "allowed once" in _said(screen))
        assert await store.permission_asks.read_answer(ask_id) == "allow_once"
        await pilot.press("a")  # no question left in the store: where to answer is said, nothing asked
        await pilot_until(pilot, lambda: "answer it in the yeetui that runs it" in _said(screen))

        # m on a running run: guidance it reads at its next turn
        await _highlight(pilot, screen, working)
        await pilot.press("m")
        await pilot_until(pilot, lambda: isinstance(app.screen, MessageScreen))
        app.screen.query_one(Input).value = "look at the flaky test first"
        await pilot.press("enter")
        await pilot_until(pilot, lambda: "reads it at its next turn" in _said(screen))
        [steer] = await store.run_commands.take([working])
        assert steer.kind == "steer" and steer.body == "look at the flaky test first"

        # enter: yeetui on its session, in its project
        await pilot.press("enter")
        await pilot_until(pilot, lambda: handed)
        assert handed[-1].argv[-2:] == ["--resume", working_session] and handed[-1].cwd == str(two)

        # t and w on a run with neither: said so
        await pilot.press("t")
        await pilot_until(pilot, lambda: "no tmux pane" in _said(screen))
        await pilot.press("w")
        await pilot_until(pilot, lambda: "no worktree" in _said(screen))

        # c: cancelled (this test's process runs it, so it is recorded cancelled at once)
        await _highlight(pilot, screen, other)
        await pilot.press("c")
        await pilot_until(pilot, lambda: "cancelled" in _said(screen))
        assert (await store.get_run(other)).status == RunStatus.CANCELLED
        await pilot_until(pilot, lambda: other in screen.rows and screen.rows[other].status == "cancelled")
        await pilot.press("escape")  # closing the fleet ends the app
        await pilot_until(pilot, lambda: not app.is_running)


async def test_a_worktree_row_hands_over_a_shell_there(store: Store, tmp_path: Path) -> None:
    session, run = await _run(store, tmp_path / "proj", "builder#1", RunStatus.RUNNING, detached=True)
    tree = tmp_path / "wt"
    tree.mkdir()
    await store.worktree_records.add(path=tree, branch="yeetui/builder-1", repo=tmp_path / "proj",
                                     owner_session_id=session)
    handed: list[Handover] = []

    def run_handover(handover: Handover) -> int:
        handed.append(handover)
        return 0

    app = FleetApp(FleetDesk(store, env={"SHELL": "/bin/zsh-test"}), run_handover=run_handover)
    async with app.run_test(size=(150, 30)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, FleetScreen) and cast(FleetScreen, app.screen).rows)
        screen: Screen[Any] = app.screen
        assert isinstance(screen, FleetScreen)
        assert screen.rows[run].worktree == str(tree)
        await _highlight(pilot, screen, run)
        await pilot.press("w")
        await pilot_until(pilot, lambda: handed)
        assert handed[0].argv == ["/bin/zsh-test"] and handed[0].cwd == str(tree)


async def test_a_finished_runs_unread_result_needs_you_until_it_is_opened(store: Store, tmp_path: Path) -> None:
    session, run = await _run(store, tmp_path / "proj", "reviewer#1", RunStatus.COMPLETED, detached=True)
    await store.inbox.put(session_id=session, run_id=run, kind="completion", title="reviewer#1 — completed",
                          body="LGTM", data={"announce": False})
    app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
    async with app.run_test(size=(150, 30)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, FleetScreen) and cast(FleetScreen, app.screen).rows)
        screen: Screen[Any] = app.screen
        assert isinstance(screen, FleetScreen)
        listing = screen.query_one(OptionList)
        assert str(listing.get_option_at_index(0).prompt) == "NEEDS YOU (1)"
        assert "finished: not read yet" in str(listing.get_option_at_index(1).prompt)
        await pilot.press("enter")
        await pilot_until(pilot, lambda: "Back from reviewer#1" in _said(screen))
        await pilot_until(pilot, lambda: str(listing.get_option_at_index(0).prompt) == "NEEDS YOU (0)")
        assert [item.status for item in await store.inbox.list(session)] == ["read"]
