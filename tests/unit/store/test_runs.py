"""Store: agent runs, their state machine timestamps, start-up interruption, workflow states."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from yeetui.errors import StoreError
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.store import SessionRecord, Store
from yeetui.store.liveness import pid_alive
from yeetui.store.runs import INTERRUPTED_ERROR


@pytest.fixture
async def session(store: Store) -> SessionRecord:
    return await store.create_session(profile="oracle")


@pytest.fixture
def live_pid() -> Iterator[int]:
    """A real process that is alive for the duration of the test."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def dead_pid() -> int:
    """The id of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def test_create_run_defaults(store: Store, session: SessionRecord) -> None:
    run = await store.create_run(session_id=session.id, profile="oracle", model="anthropic/m", prompt="why?")
    assert run.status is RunStatus.QUEUED
    assert (run.session_id, run.profile, run.model, run.prompt) == (session.id, "oracle", "anthropic/m", "why?")
    assert run.usage == Usage() and run.cost is None and run.result is None and run.error is None
    assert (run.started_at, run.finished_at) == (None, None)
    assert run.pid == os.getpid()
    assert await store.get_run(run.id) == run
    assert json.loads(json.dumps(run.to_json()))["status"] == "queued"


async def test_create_run_options_and_errors(store: Store, session: SessionRecord, tmp_path: Path) -> None:
    parent = await store.create_run(session_id=session.id, profile="orchestrator", model=None, prompt="",
                                    status=RunStatus.RUNNING)
    assert parent.started_at is not None and parent.finished_at is None
    child = await store.create_run(session_id=session.id, profile="builder", model="m", prompt="build",
                                   parent_run_id=parent.id, label="builder#2", workflow="build",
                                   worktree=tmp_path / "wt", pid=4242)
    assert (child.parent_run_id, child.label, child.workflow, child.worktree, child.pid) == (
        parent.id, "builder#2", "build", str(tmp_path / "wt"), 4242)
    with pytest.raises(StoreError, match="no session nope"):
        await store.create_run(session_id="nope", profile="x", model=None, prompt="")
    with pytest.raises(StoreError, match="no parent run nope"):
        await store.create_run(session_id=session.id, profile="x", model=None, prompt="", parent_run_id="nope")


async def test_update_run_lifecycle(store: Store, session: SessionRecord) -> None:
    run = await store.create_run(session_id=session.id, profile="oracle", model="m", prompt="p")
    running = await store.update_run(run.id, status=RunStatus.RUNNING, pid=777)
    assert running.status is RunStatus.RUNNING and running.started_at is not None and running.pid == 777
    await asyncio.sleep(0.002)
    perm = await store.update_run(run.id, status=RunStatus.WAITING_PERMISSION)
    again = await store.update_run(run.id, status=RunStatus.RUNNING)
    assert perm.finished_at is None and again.started_at == running.started_at  # first start only
    usage = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=3)
    result = {"output": "flaky because of time", "status": "success", "files_modified": ["a.py"]}
    done = await store.update_run(run.id, status=RunStatus.COMPLETED, result=result, usage=usage, cost=0.0123)
    assert done.status is RunStatus.COMPLETED and done.finished_at is not None
    assert done.finished_at >= done.started_at  # type: ignore[operator]
    assert (done.result, done.usage, done.cost) == (result, usage, 0.0123)
    same = await store.update_run(run.id)  # nothing given: nothing changes
    assert same == done
    await asyncio.sleep(0.002)
    relabelled = await store.update_run(run.id, status=RunStatus.FAILED, error="late failure")
    assert relabelled.finished_at == done.finished_at and relabelled.error == "late failure"
    unknown_price = await store.update_run(run.id, cost=None)
    assert unknown_price.cost is None and unknown_price.usage == usage


async def test_final_statuses_set_finished_at_and_resume_clears_it(store: Store,
                                                                   session: SessionRecord) -> None:
    for status in RunStatus:
        run = await store.create_run(session_id=session.id, profile="g", model=None, prompt="")
        updated = await store.update_run(run.id, status=status, error="boom" if status.is_final else None)
        assert (updated.finished_at is not None) == status.is_final, status
    run = await store.create_run(session_id=session.id, profile="g", model=None, prompt="")
    await store.update_run(run.id, status=RunStatus.RUNNING)
    stopped = await store.update_run(run.id, status=RunStatus.INTERRUPTED, error="process gone")
    resumed = await store.update_run(run.id, status=RunStatus.RUNNING)
    assert stopped.error == "process gone" and stopped.finished_at is not None
    assert (resumed.error, resumed.finished_at, resumed.started_at) == (None, None, stopped.started_at)


async def test_update_run_unknown(store: Store) -> None:
    with pytest.raises(StoreError, match="no run deadbeef"):
        await store.update_run("deadbeef", status=RunStatus.RUNNING)
    assert await store.get_run("deadbeef") is None


async def test_resolve_and_list_runs(store: Store, session: SessionRecord) -> None:
    other = await store.create_session(profile="generic")
    a = await store.create_run(session_id=session.id, profile="oracle", model=None, prompt="a")
    b = await store.create_run(session_id=session.id, profile="oracle", model=None, prompt="b",
                               parent_run_id=a.id)
    c = await store.create_run(session_id=other.id, profile="generic", model=None, prompt="c")
    await store.update_run(b.id, status=RunStatus.RUNNING)
    assert (await store.resolve_run(a.id[:10])).id == a.id
    with pytest.raises(StoreError, match="No run has an id starting with 'xyz'"):
        await store.resolve_run("xyz")
    assert [r.id for r in await store.list_runs()] == [c.id, b.id, a.id]
    assert [r.id for r in await store.list_runs(session_id=session.id)] == [b.id, a.id]
    assert [r.id for r in await store.list_runs(statuses=[RunStatus.RUNNING])] == [b.id]
    assert [r.id for r in await store.list_runs(statuses=["queued"])] == [c.id, a.id]  # type: ignore[list-item]
    assert [r.id for r in await store.list_runs(parent_run_id=a.id)] == [b.id]
    assert len(await store.list_runs(limit=1)) == 1
    assert await store.list_runs(statuses=[]) == []


async def test_mark_interrupted_only_ends_runs_whose_process_is_gone(
    store: Store, session: SessionRecord, live_pid: int, dead_pid: int,
) -> None:
    async def run_with(status: RunStatus, pid: int) -> str:
        run = await store.create_run(session_id=session.id, profile="g", model=None, prompt="", pid=pid)
        await store.update_run(run.id, status=status)
        return run.id

    ours = await run_with(RunStatus.RUNNING, os.getpid())  # live in this process's memory: never an orphan
    earlier_ours = await run_with(RunStatus.RUNNING, os.getpid())  # an earlier process that had our pid
    reused = await run_with(RunStatus.RUNNING, live_pid)  # its process ended; an unrelated one got the pid
    for run_id in (earlier_ours, reused):

        def record_another_start(conn: sqlite3.Connection, run_id: str = run_id) -> sqlite3.Cursor:
            return conn.execute("UPDATE agent_runs SET pid_start = 1 WHERE id = ?", (run_id,))

        await store.transaction("record another start", record_another_start)
    dead_running = await run_with(RunStatus.RUNNING, dead_pid)
    dead_queued = await run_with(RunStatus.QUEUED, dead_pid)
    dead_perm = await run_with(RunStatus.WAITING_PERMISSION, dead_pid)
    live_running = await run_with(RunStatus.RUNNING, live_pid)
    live_queued = await run_with(RunStatus.QUEUED, live_pid)
    completed = await run_with(RunStatus.COMPLETED, dead_pid)
    waiting_user = await run_with(RunStatus.WAITING_USER, dead_pid)
    no_pid = (await store.create_run(session_id=session.id, profile="g", model=None, prompt="")).id
    await store.transaction("clear a pid", lambda conn: conn.execute(  # a row whose process was never recorded
        "UPDATE agent_runs SET pid = NULL, status = 'running' WHERE id = ?", (no_pid,)))

    before = {r.id: r for r in await store.list_runs()}
    marked = await store.mark_interrupted()
    assert {r.id for r in marked} == {earlier_ours, reused, dead_running, dead_queued, dead_perm, no_pid}
    for run in marked:
        assert run.status is RunStatus.INTERRUPTED and run.error == INTERRUPTED_ERROR
        assert run.finished_at is not None
    for run_id in (ours, live_running, live_queued, completed, waiting_user):
        assert await store.get_run(run_id) == before[run_id]
    assert await store.mark_interrupted() == []  # nothing left to mark


async def test_mark_interrupted_uses_the_given_liveness_check(store: Store, session: SessionRecord) -> None:
    a = await store.create_run(session_id=session.id, profile="g", model=None, prompt="", pid=1001,
                               status=RunStatus.RUNNING)
    b = await store.create_run(session_id=session.id, profile="g", model=None, prompt="", pid=1002,
                               status=RunStatus.RUNNING)
    asked: list[int] = []

    def is_alive(pid: int) -> bool:
        asked.append(pid)
        return pid == 1001

    marked = await store.mark_interrupted(is_alive=is_alive)
    assert sorted(asked) == [1001, 1002]
    assert [r.id for r in marked] == [b.id]
    assert (await store.get_run(a.id)).status is RunStatus.RUNNING  # type: ignore[union-attr]


def test_pid_alive(live_pid: int, dead_pid: int) -> None:
    assert pid_alive(os.getpid()) and pid_alive(live_pid)
    assert not pid_alive(dead_pid) and not pid_alive(0) and not pid_alive(-5)


async def test_workflow_state_save_load_replace(store: Store, session: SessionRecord) -> None:
    run = await store.create_run(session_id=session.id, profile="orchestrator", model=None, prompt="goal")
    assert await store.workflow_states.load(run.id) is None
    first = await store.workflow_states.save(run.id, "orchestrate", {"step": "plan", "done": []})
    assert (first.workflow, first.state) == ("orchestrate", {"step": "plan", "done": []})
    await store.workflow_states.save(run.id, "orchestrate", {"step": "review", "done": ["plan", "build"]})
    loaded = await store.workflow_states.load(run.id)
    assert loaded is not None and loaded.state == {"step": "review", "done": ["plan", "build"]}
    assert loaded.updated_at >= first.updated_at
    json.dumps(loaded.to_json())
    with pytest.raises(StoreError, match="no run missing"):
        await store.workflow_states.save("missing", "w", {})
    await store.delete_session(session.id)
    assert await store.workflow_states.load(run.id) is None


async def test_a_run_whose_cost_its_parent_holds_counts_its_tokens_but_leaves_the_cost_known(
        store: Store, session: SessionRecord) -> None:
    """An external agent's subagent: the agent's reported cost (on the parent run) already holds it."""
    parent = await store.create_run(session_id=session.id, profile="claude", model=None, prompt="p")
    await store.update_run(parent.id, usage=Usage(input_tokens=100, output_tokens=10), cost=0.5)
    child_session = await store.create_session(profile="claude", parent_id=session.id)
    child = await store.create_run(session_id=child_session.id, profile="claude", model=None, prompt="c",
                                   options={"parent_session_id": session.id, "cost_in_parent": True})
    await store.update_run(child.id, usage=Usage(input_tokens=40, output_tokens=4))
    usage, cost = await store.tree_usage(session.id)
    assert (usage.input_tokens, usage.output_tokens, cost) == (140, 14, 0.5)
    own = await store.usage_by_session([session.id, child_session.id])
    assert own[child_session.id][0].input_tokens == 40 and own[child_session.id][1] == 0.0
    # an ordinary child without a price still makes the tree's cost unknown
    other = await store.create_session(profile="oracle", parent_id=session.id)
    unpriced = await store.create_run(session_id=other.id, profile="oracle", model=None, prompt="o")
    await store.update_run(unpriced.id, usage=Usage(input_tokens=1))
    assert (await store.tree_usage(session.id))[1] is None
