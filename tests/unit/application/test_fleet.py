"""The fleet read model: each run of each project in the right group, a run whose process is gone never shown
working, and what each needs said."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from yeetui.application.fleet import fleet
from yeetui.events import RunStatus
from yeetui.store import Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "yeetui.db") as opened:
        yield opened


def _dead_pid() -> int:
    """A process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def _run(store: Store, project: Path, label: str, status: RunStatus, *, parent: str | None = None,
               pid: int | None = None, options: dict | None = None) -> tuple[str, str]:
    session = await store.create_session(profile=label.split("#")[0], parent_id=parent, cwd=project,
                                         title=label)
    run = await store.create_run(session_id=session.id, profile=label.split("#")[0], model=None, prompt="p",
                                 status=RunStatus.QUEUED, label=label, pid=pid if pid is not None else os.getpid(),
                                 options=options if options is not None else ({"parent_session_id": parent}
                                                                              if parent else {}))
    await store.update_run(run.id, status=RunStatus.RUNNING)
    if status != RunStatus.RUNNING:
        await store.update_run(run.id, status=status)
    return session.id, run.id


async def test_each_run_of_each_project_is_in_the_right_group(store: Store, tmp_path: Path) -> None:
    one, two, three = (tmp_path / name for name in ("one", "two", "three"))
    primary, _ = await _run(store, one, "generic#1", RunStatus.COMPLETED)
    _, asking = await _run(store, one, "builder#2", RunStatus.WAITING_PERMISSION, parent=primary,
                           options={"parent_session_id": primary, "mode": "tmux"})
    await store.permission_asks.post(asking, run_id=asking, session_id="s", agent_label="builder#2", tool="bash",
                                     subject="make deploy", arguments={}, open_to_all=True)
    _, working = await _run(store, two, "oracle#1", RunStatus.RUNNING, options={"detached": True})
    _, gone = await _run(store, two, "oracle#2", RunStatus.RUNNING, pid=_dead_pid(), options={"detached": True})
    finished, done_top = await _run(store, three, "generic#3", RunStatus.COMPLETED, options={"detached": True})
    await store.inbox.put(session_id=finished, run_id=done_top, kind="completion", title="done",
                                    body="b")
    _, child_done = await _run(store, three, "oracle#4", RunStatus.FAILED, parent=finished)
    seen = await fleet(store)
    groups = {name: {r.run_id: r for r in rows} for name, rows in
              (("needs", seen.needs_you), ("working", seen.working), ("done", seen.done))}
    assert set(groups["needs"]) == {asking, done_top}
    assert groups["needs"][asking].why == "asks to run bash: make deploy" and groups["needs"][asking].mode == "tmux"
    assert groups["needs"][asking].path == "generic#1 › builder#2" and groups["needs"][asking].project == str(one)
    assert set(groups["working"]) == {working} and groups["working"][working].mode == "detached"
    assert groups["done"][gone].status == "gone"  # never working
    assert child_done in groups["done"]
    # a stalled run is said so
    later = await fleet(store, now=datetime.now(UTC) + timedelta(minutes=10))
    assert [r.status for r in later.working] == ["stalled"] and later.working[0].why.startswith("no progress")


async def test_five_hundred_runs_are_listed(store: Store, tmp_path: Path) -> None:
    for n in range(500):
        await _run(store, tmp_path, f"oracle#{n}", RunStatus.COMPLETED)
    seen = await fleet(store)
    assert len(seen.done) == 500


async def test_a_run_whose_stored_usage_or_options_are_not_json_is_still_listed(store: Store, tmp_path: Path) -> None:
    """A listing of every project's runs: one damaged row (an older version's, a disk fault) shows what it can
    and never takes the others with it."""
    _, broken = await _run(store, tmp_path, "oracle#1", RunStatus.COMPLETED)
    _, fine = await _run(store, tmp_path, "oracle#2", RunStatus.COMPLETED)

    def damage(conn) -> None:  # type: ignore[no-untyped-def]
        conn.execute("UPDATE agent_runs SET usage = '{not json', options = '[1,' , status = 'no-such' WHERE id = ?",
                     (broken,))

    await store.transaction("damage a run", damage)
    seen = await fleet(store)
    rows = {r.run_id: r for r in seen.done + seen.needs_you + seen.working}
    assert set(rows) == {broken, fine}
    assert rows[broken].tokens == 0 and rows[broken].mode == "in_process" and rows[broken].status == "failed"


async def test_a_working_run_says_what_it_is_doing(store: Store, tmp_path: Path) -> None:
    """Working rows carry their activity, read from each run's newest message: a tool call, a result gone back
    to the model, an answer streaming."""
    from yeetui.messages import Message, ToolCallPart, ToolResultPart

    calling_session, calling = await _run(store, tmp_path, "builder#1", RunStatus.RUNNING)
    after_session, after = await _run(store, tmp_path, "oracle#2", RunStatus.RUNNING)
    streaming_session, streaming = await _run(store, tmp_path, "oracle#3", RunStatus.RUNNING)
    _, quiet = await _run(store, tmp_path, "oracle#4", RunStatus.RUNNING)
    call = Message(role="assistant", parts=(ToolCallPart(id="c1", name="bash", arguments={"command": "make"}),))
    await store.append_message(calling_session, Message.user("build it"), run_id=calling)
    await store.append_message(calling_session, call, run_id=calling)
    await store.append_message(after_session, call, run_id=after)
    await store.append_message(after_session, Message(role="tool", parts=(
        ToolResultPart(call_id="c1", name="grep", content="found"),)), run_id=after)
    await store.append_message(streaming_session, Message.assistant("The flake comes from"), run_id=streaming,
                               partial=True)
    seen = {row.run_id: row.why for row in (await fleet(store)).working}
    assert seen == {calling: "calling bash", after: "thinking after grep", streaming: "answering", quiet: "starting"}
