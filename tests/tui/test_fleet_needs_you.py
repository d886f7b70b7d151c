"""The fleet says what needs the user, and says it so it can be read: "needs you" holds a question, an unread
result of a detached (or scheduled) run, a halt — never a conversation that only answered; statuses are words;
columns are cut from the right, never mid-word from the left; its counts and "needs you" cover every run of the
data dir, not the newest 500; and `m` on a finished conversation of its own either goes on with it (in the app,
for this project) or is refused before a word is typed (`yeetui fleet`), so no message is thrown away."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from tests.fakellm import Reply
from tests.tui.test_app import _main
from tests.waiting import pilot_until
from yeetui import paths
from yeetui.application.fleet import FleetDesk, fleet
from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.tui.app import YeetuiApp
from yeetui.tui.fleet_app import FleetApp
from yeetui.tui.screens.fleet import FleetScreen, MessageScreen
from yeetui.tui.screens.main import MainScreen


@pytest.fixture
async def store(isolated_env: Path) -> AsyncIterator[Store]:
    async with await Store.open(paths.database_path()) as opened:
        yield opened


async def _run(store: Store, project: Path, label: str, status: RunStatus, *, parent: str | None = None,
               title: str | None = None, **options: object) -> tuple[str, str]:
    await asyncio.to_thread(project.mkdir, parents=True, exist_ok=True)
    session = await store.create_session(profile=label.split("#")[0], parent_id=parent, cwd=project,
                                         title=label if title is None else title)
    run = await store.create_run(session_id=session.id, profile=label.split("#")[0], model=None, prompt="p",
                                 status=RunStatus.QUEUED, label=label, pid=os.getpid(),
                                 options={**options, **({"parent_session_id": parent} if parent else {})})
    await store.update_run(run.id, status=RunStatus.RUNNING)
    if status != RunStatus.RUNNING:
        await store.update_run(run.id, status=status)
    return session.id, run.id


async def _unread_result(store: Store, session: str, run: str, label: str) -> None:
    await store.inbox.put(session_id=session, run_id=run, kind="completion", title=f"{label} — completed",
                          body="done", data={"announce": False}, dedupe_key=f"completion:{run}")


def _lines(screen: FleetScreen) -> list[str]:
    listing = screen.query_one(OptionList)
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


def _said(screen: FleetScreen) -> str:
    return str(screen.query_one("#fleet-said", Static).render())


async def _fleet_on_screen(pilot) -> FleetScreen:
    await pilot_until(pilot, lambda: isinstance(pilot.app.screen, FleetScreen) and pilot.app.screen.rows)
    screen = pilot.app.screen
    assert isinstance(screen, FleetScreen)
    return screen


async def _highlight(pilot, screen: FleetScreen, run_id: str) -> None:
    listing = screen.query_one(OptionList)
    listing.highlighted = listing.get_option_index(run_id)
    await pilot.pause()


async def test_counts_and_needs_you_cover_every_run_not_the_newest_500(store: Store, tmp_path: Path) -> None:
    """602 runs: the 12 detached runs whose results nobody read are the oldest; the 590 after them are done."""
    unread = []
    for n in range(12):
        session, run = await _run(store, tmp_path / "proj", f"oracle#{n}", RunStatus.COMPLETED, detached=True)
        await _unread_result(store, session, run, f"oracle#{n}")
        unread.append(run)
    for n in range(12, 602):
        await _run(store, tmp_path / "proj", f"oracle#{n}", RunStatus.COMPLETED, detached=True)
    seen = await fleet(store)
    assert sorted(r.run_id for r in seen.needs_you) == sorted(unread)
    assert seen.counts() == {"needs_you": 12, "working": 0, "done": 590}
    assert len(seen.done) == 500, "the newest 500 done are listed"
    app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _fleet_on_screen(pilot)
        lines = _lines(screen)
        assert lines[0] == "NEEDS YOU (12)"
        assert "DONE (590)" in lines
        assert lines[-1].strip() == "… and 90 older done in the last 24 hours, not listed", lines[-1]


async def test_a_conversation_that_answered_needs_nobody_and_statuses_are_words(store: Store,
                                                                               tmp_path: Path) -> None:
    project = tmp_path / "proj"
    primary, answered = await _run(store, project, "generic#1", RunStatus.WAITING_USER,
                                   title="fix the login flake")
    _, asks_you = await _run(store, project, "oracle#2", RunStatus.WAITING_USER, parent=primary)
    _, halted = await _run(store, project, "builder#3", RunStatus.BUDGET_EXHAUSTED, parent=primary)
    await _unread_result(store, primary, halted, "builder#3")  # its ending tells of the halt
    _, warned = await _run(store, project, "oracle#5", RunStatus.COMPLETED, parent=primary)
    await store.inbox.put(session_id=primary, run_id=warned, kind="budget", title="oracle#5 has spent 80% of its "
                          "budget", body="$0.40 of $0.50", dedupe_key=f"budget-warning:{warned}")
    _, timed_out = await _run(store, project, "oracle#4", RunStatus.TIMEOUT, parent=primary)
    seen = await fleet(store)
    needs = {row.run_id: row for row in seen.needs_you}
    done = {row.run_id: row for row in seen.done}
    assert set(needs) == {asks_you, halted, warned}, "the primary only answered: it needs nobody"
    assert needs[warned].why == "oracle#5 has spent 80% of its budget"
    assert done[answered].status_text == "answered" and needs[asks_you].status_text == "needs input"
    assert needs[halted].status_text == "budget exhausted" and done[timed_out].status_text == "timed out"
    app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _fleet_on_screen(pilot)
        lines = _lines(screen)
        shown = "\n".join(lines)
        for raw in ("waiting_user", "budget_exhausted", "timeout"):
            assert raw not in shown, f"{raw} is shown as it is stored"
        assert lines[0] == "NEEDS YOU (3)"
        line = next(line for line in lines if "generic#1" in line)
        assert "answered" in line and lines.index(line) > lines.index("DONE (2)")
        assert "budget exhausted" in next(line for line in lines if "builder#3" in line)
        assert "needs input" in next(line for line in lines if "oracle#2" in line)


async def test_columns_are_cut_from_the_right_never_mid_word_from_the_left(store: Store, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "a-project-with-a-rather-long-name"
    primary, _ = await _run(store, project, "generic#1", RunStatus.WAITING_USER,
                            title="fix the flaky login test in the authentication service")
    orchestrator, _ = await _run(store, project, "orchestrator#2", RunStatus.RUNNING, parent=primary)
    _, builder = await _run(store, project, "builder#3", RunStatus.RUNNING, parent=orchestrator)
    app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _fleet_on_screen(pilot)
        line = next(line for line in _lines(screen) if "builder#3" in line)
        assert line.startswith("  fix the flaky"), line  # the tree's path begins where it begins
        assert "builder#3" in line  # …and ends with the run itself
        assert " a-project-with…" in line  # the project by its folder's name, from its start
        assert "uthentication" not in line.replace("authentication", ""), "a word cut at its start"
        assert screen.rows[builder].status_text == "running"


async def test_m_on_a_finished_conversation_of_its_own_is_refused_before_anything_is_typed(
        store: Store, tmp_path: Path) -> None:
    """`yeetui fleet`: a detached conversation that ended cannot take a message from here; m says so at once
    (open it, type there) instead of asking for a message it would then throw away."""
    _, run = await _run(store, tmp_path / "proj", "oracle#1", RunStatus.COMPLETED, detached=True)
    app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await _fleet_on_screen(pilot)
        await _highlight(pilot, screen, run)
        await pilot.press("m")
        await pilot.pause()
        assert not isinstance(app.screen, MessageScreen), "a message was asked for that could not be sent"
        assert "oracle#1 is a conversation of its own" in _said(screen) and "enter" in _said(screen)


async def test_m_on_a_finished_detached_conversation_of_this_project_goes_on_with_it(
        fake_env, project: Path, store: Store) -> None:
    """In the app, the same conversation of this project goes on here: it opens, and the message is its next
    turn, with its earlier context."""
    fake_env.script(Reply(text="FOLLOWED-UP: the cache too"))
    session, run = await _run(store, project, "oracle#1", RunStatus.COMPLETED, detached=True)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(160, 32)) as pilot:
        main = await _main(pilot)
        await pilot.press("ctrl+g")
        screen = await _fleet_on_screen(pilot)
        await _highlight(pilot, screen, run)
        await pilot.press("m")
        await pilot_until(pilot, lambda: isinstance(app.screen, MessageScreen))
        app.screen.query_one(Input).value = "and the cache?"
        await pilot.press("enter")
        await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen) and main.current == session)
        await pilot_until(pilot, lambda: any("and the cache?" in r.text for r in fake_env.requests), timeout=30)
