"""The fleet shows what runs say — a model's permission question, an agent's error, a label — from every project
on the data dir: none of it may act on the user's terminal or pass for the fleet's own text, and a question is
answered only once, by the first answer."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from textual.screen import Screen
from textual.widgets import OptionList, Static

from tests.integration.helpers import run_yeetui
from yeetui.application.fleet import FleetDesk
from yeetui.errors import YeetuiError
from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.tui.fleet_app import FleetApp
from yeetui.tui.screens.fleet import FleetScreen

HOSTILE = "make \x1b]52;c;cm0gLXJmIH4=\x07deploy\x1b[2J\r\n[bold red]APPROVED[/] \x9b31m"


@pytest.fixture
async def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Store]:
    monkeypatch.setenv("YEETUI_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    async with await Store.open(tmp_path / "data" / "yeetui.db") as opened:
        yield opened


async def _asking(store: Store, project: Path) -> tuple[str, int]:
    await asyncio.to_thread(project.mkdir, exist_ok=True)
    session = await store.create_session(profile="builder", cwd=project, title="builder#1")
    run = await store.create_run(session_id=session.id, profile="builder", model=None, prompt="p",
                                 status=RunStatus.QUEUED, label="builder#1", pid=os.getpid(),
                                 options={"detached": True, "ask_any_yeetui": True, "ask_wait": True})
    await store.update_run(run.id, status=RunStatus.RUNNING)
    await store.update_run(run.id, status=RunStatus.WAITING_PERMISSION, error=HOSTILE)
    ask = await store.permission_asks.post(run.id, run_id=run.id, session_id=session.id, agent_label="builder#1",
                                           tool="bash", subject=HOSTILE, arguments={"command": HOSTILE},
                                           open_to_all=True)
    return run.id, ask


async def test_a_hostile_question_reaches_the_fleet_as_plain_text_on_one_line(store: Store, tmp_path: Path) -> None:
    await _asking(store, tmp_path / "proj")
    printed = await asyncio.to_thread(run_yeetui, "fleet", "--print", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert "asks to run bash: make deploy" in printed.stdout
    assert "needs permission" in printed.stdout and "waiting_permission" not in printed.stdout  # in words
    for control in ("\x1b", "\x07", "\x9b", "\r"):
        assert control not in printed.stdout
    app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
    async with app.run_test(size=(160, 30)) as pilot:
        while not (isinstance(app.screen, FleetScreen) and cast(FleetScreen, app.screen).rows):
            await pilot.pause(0.05)
        screen: Screen[Any] = app.screen
        assert isinstance(screen, FleetScreen)
        row = str(screen.query_one(OptionList).get_option_at_index(1).prompt)
        detail = str(screen.query_one("#fleet-detail", Static).render())
        for shown in (row, detail):
            assert "make deploy" in shown and "[bold red]APPROVED[/]" in shown  # markup shown as typed, not obeyed
            assert not any(c in shown for c in ("\x1b", "\x07", "\x9b", "\r"))
        assert "\n" not in row


async def test_the_first_answer_wins_and_a_second_is_refused(store: Store, tmp_path: Path) -> None:
    """Two fleets (or a fleet and a TUI's dialog) answer the same question: the run hears the first only."""
    await _asking(store, tmp_path / "proj")
    first, second = FleetDesk(store), FleetDesk(store)
    [row] = (await first.look()).needs_you
    [same] = (await second.look()).needs_you
    assert "allowed once" in await first.answer(row, "allow_once")
    with pytest.raises(YeetuiError, match="answered in another window: allowed once"):
        await second.answer(same, "allow_always")
    assert row.ask is not None and await store.permission_asks.read_answer(row.ask.id) == "allow_once"
