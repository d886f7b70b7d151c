"""Store: breadcrumbs, worktree records and workflow states (`store/side_tables.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yeetui.errors import StoreError
from yeetui.store import SessionRecord, Store

# ----- breadcrumbs ---------------------------------------------------------------------------------------


async def test_breadcrumbs(store: Store, session: SessionRecord) -> None:
    child = await store.create_session(profile="oracle", parent_id=session.id)
    run = await store.create_run(session_id=child.id, profile="oracle", model=None, prompt="q")
    first = await store.breadcrumbs.add(session_id=session.id, summary="asked the oracle",
                                        child_session_id=child.id, run_id=run.id)
    second = await store.breadcrumbs.add(session_id=session.id, summary="plain note")
    assert (first.child_session_id, first.run_id, first.summary) == (child.id, run.id, "asked the oracle")
    assert (second.child_session_id, second.run_id) == (None, None)
    assert await store.breadcrumbs.list(session.id) == [first, second]  # oldest first
    assert await store.breadcrumbs.list(child.id) == []
    json.dumps(first.to_json())
    with pytest.raises(StoreError, match="no child session ghost"):
        await store.breadcrumbs.add(session_id=session.id, summary="x", child_session_id="ghost")
    await store.delete_session(child.id)  # the link goes, the breadcrumb stays
    kept = await store.breadcrumbs.list(session.id)
    assert [(b.id, b.child_session_id, b.run_id) for b in kept] == [(first.id, None, None), (second.id, None, None)]


# ----- worktrees -----------------------------------------------------------------------------------------


async def test_worktree_records(store: Store, session: SessionRecord, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    wt = await store.worktree_records.add(path=tmp_path / "wt1", branch="yeet/health", repo=repo,
                                          base_branch="main", owner_session_id=session.id)
    assert (wt.path, wt.branch, wt.base_branch, wt.repo, wt.owner_session_id, wt.status) == (
        tmp_path / "wt1", "yeet/health", "main", repo, session.id, "active")
    assert await store.worktree_records.get(wt.id) == wt and await store.worktree_records.get("nope") is None
    assert await store.worktree_records.resolve(wt.id[:8]) == wt
    assert json.loads(json.dumps(wt.to_json()))["path"] == str(tmp_path / "wt1")

    other = await store.worktree_records.add(path=tmp_path / "wt2", branch="b2", repo=tmp_path / "other")
    assert [w.id for w in await store.worktree_records.list()] == [other.id, wt.id]
    assert [w.id for w in await store.worktree_records.list(repo=repo)] == [wt.id]
    assert [w.id for w in await store.worktree_records.list(owner_session_id=None)] == [other.id]
    assert [w.id for w in await store.worktree_records.list(owner_session_id=session.id)] == [wt.id]
    assert [w.id for w in await store.worktree_records.list(path=tmp_path / "wt2")] == [other.id]

    released = await store.worktree_records.update(wt.id, owner_session_id=None, status="merged")
    assert (released.owner_session_id, released.status) == (None, "merged")
    assert [w.id for w in await store.worktree_records.list(statuses=["merged"])] == [wt.id]
    claimed = await store.worktree_records.update(other.id, owner_session_id=session.id)
    assert claimed.owner_session_id == session.id
    await store.delete_session(session.id)
    assert (await store.worktree_records.get(other.id)).owner_session_id is None  # type: ignore[union-attr]


async def test_worktree_path_is_unique_among_live_entries(store: Store, tmp_path: Path) -> None:
    wt = await store.worktree_records.add(path=tmp_path / "wt", branch="b", repo=tmp_path)
    with pytest.raises(StoreError, match=f"worktree at {tmp_path / 'wt'} is already registered .id {wt.id}"):
        await store.worktree_records.add(path=tmp_path / "wt", branch="b2", repo=tmp_path)
    await store.worktree_records.update(wt.id, status="deleted")
    again = await store.worktree_records.add(path=tmp_path / "wt", branch="b2", repo=tmp_path)
    assert again.id != wt.id
    with pytest.raises(StoreError, match=f"Could not update worktree {wt.id} in the store at .*"
                                         "UNIQUE constraint failed"):
        await store.worktree_records.update(wt.id, status="active")  # two live entries for one path
    assert (await store.worktree_records.get(wt.id)).status == "deleted"  # type: ignore[union-attr]


async def test_worktree_errors(store: Store, tmp_path: Path) -> None:
    wt = await store.worktree_records.add(path=tmp_path / "wt", branch="b", repo=tmp_path)
    with pytest.raises(TypeError, match="cannot change repo"):
        await store.worktree_records.update(wt.id, repo="elsewhere")
    with pytest.raises(StoreError, match="no worktree missing"):
        await store.worktree_records.update("missing", status="stale")
    with pytest.raises(StoreError, match="no owner session ghost"):
        await store.worktree_records.update(wt.id, owner_session_id="ghost")
    with pytest.raises(StoreError, match="no owner session ghost"):
        await store.worktree_records.add(path=tmp_path / "x", branch="b", repo=tmp_path, owner_session_id="ghost")
