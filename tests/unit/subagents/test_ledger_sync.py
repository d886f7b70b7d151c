"""LedgerSync: rows for runs another yeetui process executes, read from the store, and the session tree's
cost on a parent's row."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.store import Store
from yeetui.subagents.ledger import Ledger, format_row
from yeetui.subagents.ledger_sync import LedgerSync


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "yeetui.db") as opened:
        yield opened


@pytest.fixture
async def worker() -> AsyncIterator[int]:
    """A live process that is not this one: stands in for a detached worker's pid."""
    proc = await asyncio.create_subprocess_exec("sleep", "300")
    yield proc.pid
    proc.kill()
    await proc.wait()


async def _run(store: Store, cwd: Path, *, pid: int, profile: str = "oracle", label: str = "oracle#3",
               parent_id: str | None = None, status: RunStatus = RunStatus.RUNNING):
    session = await store.create_session(profile=profile, cwd=cwd, parent_id=parent_id)
    run = await store.create_run(session_id=session.id, profile=profile, model="anthropic/claude-opus-4-5",
                                 prompt="why?", pid=pid, label=label)
    return session, await store.update_run(run.id, status=status)


async def test_a_pane_childs_row_says_it_runs_in_its_pane_not_its_pid(store: Store, tmp_path: Path,
                                                                       worker: int) -> None:
    """Issue 47, item 6: a tmux child's row said `in process 18387`; the pane is what the user watches."""
    ledger = Ledger(Bus(), linger=60)
    sync = LedgerSync(store, ledger, project_dir=tmp_path, is_local=lambda run_id: False)
    session = await store.create_session(profile="oracle", cwd=tmp_path)
    run = await store.create_run(session_id=session.id, profile="oracle", model="anthropic/claude-opus-4-5",
                                 prompt="why?", pid=worker, label="oracle#2", status=RunStatus.RUNNING,
                                 options={"mode": "tmux", "pane": {"server": "s", "window": "@1", "pane": "%2"}})
    await sync.refresh()
    shown = format_row(ledger.get(run.id))  # type: ignore[arg-type]
    assert "in its tmux pane" in shown and str(worker) not in shown, shown


async def test_a_run_of_another_process_gets_a_row_until_it_ends(store: Store, tmp_path: Path, worker: int) -> None:
    ledger = Ledger(Bus(), linger=60)
    sync = LedgerSync(store, ledger, project_dir=tmp_path, is_local=lambda run_id: False)
    _, run = await _run(store, tmp_path, pid=worker)
    await sync.refresh()
    row = ledger.get(run.id)
    assert row is not None and row.elsewhere == worker and row.status == RunStatus.RUNNING
    assert format_row(row).startswith("oracle#3 running · claude-opus-4-5 · 0:0")
    assert f"in process {worker}" in format_row(row)

    await store.update_run(run.id, usage=Usage(input_tokens=1000, output_tokens=100), cost=0.25)
    await sync.refresh()
    assert ledger.get(run.id).cost == 0.25  # type: ignore[union-attr]

    await store.update_run(run.id, status=RunStatus.CANCELLED, error="cancelled by the user")
    await sync.refresh()
    ended = ledger.get(run.id)
    assert ended is not None and ended.status == RunStatus.CANCELLED and ended.ended is not None
    assert "cancelled by the user" in format_row(ended)


async def test_a_row_follows_its_run_to_the_process_that_claims_it(store: Store, tmp_path: Path) -> None:
    """`agents start` records the run queued in the process it started; a worker forked warm then claims it and
    records its own pid. The row says where the run lives now, and steering and cancelling go there."""
    stand_in = await asyncio.create_subprocess_exec("sleep", "300")
    claimer = await asyncio.create_subprocess_exec("sleep", "300")
    try:
        ledger = Ledger(Bus(), linger=60)
        sync = LedgerSync(store, ledger, project_dir=tmp_path, is_local=lambda run_id: False)
        _, run = await _run(store, tmp_path, pid=stand_in.pid, status=RunStatus.QUEUED)
        await sync.refresh()
        assert ledger.get(run.id).elsewhere == stand_in.pid  # type: ignore[union-attr]

        await store.update_run(run.id, pid=claimer.pid, status=RunStatus.RUNNING)
        await sync.refresh()
        row = ledger.get(run.id)
        assert row is not None and row.elsewhere == claimer.pid and row.status == RunStatus.RUNNING
        assert f"in process {claimer.pid}" in format_row(row)
    finally:
        for proc in (stand_in, claimer):
            proc.kill()
            await proc.wait()


async def test_runs_of_this_process_other_projects_and_dead_processes_are_not_shown(
        store: Store, tmp_path: Path, worker: int) -> None:
    ledger = Ledger(Bus())
    elsewhere_project = tmp_path / "other"
    elsewhere_project.mkdir()
    _, local = await _run(store, tmp_path, pid=worker, label="oracle#1")
    await _run(store, elsewhere_project, pid=worker, label="oracle#2")
    dead = await asyncio.create_subprocess_exec("true")
    await dead.wait()
    await _run(store, tmp_path, pid=dead.pid, label="oracle#3")
    sync = LedgerSync(store, ledger, project_dir=tmp_path, is_local=lambda run_id: run_id == local.id)
    await sync.refresh()
    assert ledger.rows() == []


async def test_a_run_whose_process_dies_shows_interrupted(store: Store, tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec("sleep", "300")
    ledger = Ledger(Bus(), linger=60)
    sync = LedgerSync(store, ledger, project_dir=tmp_path, is_local=lambda run_id: False)
    _, run = await _run(store, tmp_path, pid=proc.pid)
    await sync.refresh()
    assert ledger.get(run.id) is not None
    proc.kill()
    await proc.wait()
    await sync.refresh()
    row = ledger.get(run.id)
    assert row is not None and row.status == RunStatus.INTERRUPTED and "its process is gone" in format_row(row)


async def test_a_parent_row_shows_what_its_whole_tree_cost(store: Store, tmp_path: Path) -> None:
    bus = Bus()
    ledger = Ledger(bus)
    sync = LedgerSync(store, ledger, project_dir=tmp_path, is_local=lambda run_id: True)
    session, parent = await _run(store, tmp_path, pid=0, profile="generic", label="generic")
    await store.update_run(parent.id, usage=Usage(input_tokens=10, output_tokens=10), cost=0.01)
    bus.publish(ev.RunRegistered(parent.id, session.id, None, "generic", "generic", "anthropic/claude-sonnet-4-6",
                                 RunStatus.RUNNING))
    bus.publish(ev.UsageUpdated(parent.id, session.id, Usage(input_tokens=10, output_tokens=10), 0.01))
    await sync.refresh()
    assert ledger.get(parent.id).tree_cost is None  # type: ignore[union-attr]  # no subagents yet
    assert "tree" not in format_row(ledger.get(parent.id))  # type: ignore[arg-type]

    child_session, child = await _run(store, tmp_path, pid=0, parent_id=session.id)
    _, grandchild = await _run(store, tmp_path, pid=0, parent_id=child_session.id, label="oracle#4")
    await store.update_run(child.id, usage=Usage(input_tokens=10, output_tokens=10), cost=0.40)
    await store.update_run(grandchild.id, usage=Usage(input_tokens=10, output_tokens=10), cost=0.02)
    await sync.refresh()
    row = ledger.get(parent.id)
    assert row is not None and row.tree_cost == pytest.approx(0.43)
    assert "$0.01 (tree $0.43)" in format_row(row)
