"""The worktree registry against real git repositories and a real store: create, claim, stale, cleanup,
delete, merge, sync, discard."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from yeetui import paths
from yeetui.events import RunStatus
from yeetui.store import SessionRecord, Store
from yeetui.worktrees.manager import WorktreeError, Worktrees, real_path
from yeetui.worktrees.merging import discard_work, merge_work, sync_worktree
from yeetui.worktrees.names import branch_prefix, slug

IDENTITY = ("-c", "user.name=Test", "-c", "user.email=test@example.com")


def cli(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def commit_file(repo: Path, name: str, text: str, message: str) -> None:
    (repo / name).write_text(text)
    cli(repo, "add", name)
    cli(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    cli(root, "init", "-q", "-b", "main")
    commit_file(root, "calc.py", "def add(a, b):\n    return a + b\n", "init")
    return root


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(paths.database_path()) as opened:
        yield opened


@pytest.fixture
def worktrees(store: Store) -> Worktrees:
    return Worktrees(store)


@pytest.fixture
async def session(store: Store) -> SessionRecord:
    return await store.create_session(profile="builder")


def test_slugs_are_safe_for_branches_and_paths() -> None:
    assert slug("Add mul() with a test!") == "add-mul-with-a-test"
    assert slug("--force ../../etc") == "force-etc"
    assert slug("") == slug("!!!") == "work"
    assert len(slug("x" * 200)) == 40
    # cut at a word, not inside one
    assert slug("Refactor the authentication middleware to use dependency injection") == \
        "refactor-the-authentication-middleware"
    assert slug("a" * 35 + " bcdefgh") == "a" * 35
    assert slug("a" * 35 + " bcde") == "a" * 35 + "-bcde"  # exactly 40: whole
    assert slug("a" * 35 + " bcde fg") == "a" * 35 + "-bcde"
    assert branch_prefix("yeetui/build/") == "yeetui/build/"
    for bad in ("-x/", "a..b/", "a b/", "/abs"):
        with pytest.raises(ValueError, match="branch_prefix"):
            branch_prefix(bad)


async def test_create_makes_a_branch_and_a_worktree_under_the_data_dir(worktrees: Worktrees, repo: Path,
                                                                        session: SessionRecord) -> None:
    wt = await worktrees.create(repo, task="Add mul()", prefix="yeetui/build/", owner_session_id=session.id)
    assert wt.branch == "yeetui/build/add-mul"
    assert paths.data_dir() in wt.path.parents and (wt.path / "calc.py").is_file()
    assert wt.base_commit == cli(repo, "rev-parse", "HEAD").strip()
    assert wt.owner_session_id == session.id and wt.repo == real_path(repo)
    assert str(wt.path) in cli(repo, "worktree", "list")
    # An existing name is never reused: the same task again gets a new branch and folder.
    again = await worktrees.create(repo, task="Add mul()", prefix="yeetui/build/")
    assert again.branch == "yeetui/build/add-mul-2" and again.path != wt.path
    cli(repo, "branch", "yeetui/build/taken")
    assert (await worktrees.create(repo, task="taken", prefix="yeetui/build/")).branch == "yeetui/build/taken-2"


async def test_create_outside_a_repository_or_without_commits_says_why(worktrees: Worktrees,
                                                                       tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError, match="not inside a git repository"):
        await worktrees.create(plain, task="x")
    cli(plain, "init", "-q")
    with pytest.raises(WorktreeError, match="no commit yet"):
        await worktrees.create(plain, task="x")


async def test_a_second_session_cannot_claim_a_worktree_another_holds(worktrees: Worktrees, store: Store,
                                                                      repo: Path, session: SessionRecord) -> None:
    wt = await worktrees.create(repo, task="t")
    other = await store.create_session(profile="builder")
    assert (await worktrees.claim(wt.id, session.id)).owner_session_id == session.id
    with pytest.raises(WorktreeError, match="belongs to session"):
        await worktrees.claim(wt.id, other.id)
    assert (await worktrees.claim(wt.id, session.id)).owner_session_id == session.id  # its own: fine
    assert (await worktrees.claim(wt.id, other.id, from_session_id=session.id)).owner_session_id == other.id
    await worktrees.release(wt.id)
    assert (await worktrees.claim(wt.id, session.id)).owner_session_id == session.id


async def test_delete_of_a_dirty_or_unmerged_tree_needs_force(worktrees: Worktrees, repo: Path) -> None:
    wt = await worktrees.create(repo, task="dirty")
    (wt.path / "new.py").write_text("x = 1\n")
    with pytest.raises(WorktreeError, match=r"uncommitted changes in new\.py"):
        await worktrees.delete(wt)
    await worktrees.commit_work(wt, "work")
    with pytest.raises(WorktreeError, match="1 commit"):
        await worktrees.delete(wt)
    gone = await worktrees.delete(wt, force=True)
    assert gone.status == "deleted" and not wt.path.exists()
    assert wt.branch not in cli(repo, "branch", "--list")
    clean = await worktrees.create(repo, task="clean")
    assert (await worktrees.delete(clean)).status == "deleted"


async def test_stale_detection_and_cleanup_dry_run(worktrees: Worktrees, store: Store, repo: Path,
                                                   session: SessionRecord) -> None:
    idle = await worktrees.create(repo, task="idle")
    busy = await worktrees.create(repo, task="busy", owner_session_id=session.id)
    await store.create_run(session_id=session.id, profile="builder", model="m/x", prompt="p")
    worked = await worktrees.create(repo, task="worked")
    commit_file(worked.path, "w.py", "w = 1\n", "work")
    later = datetime.now(UTC) + timedelta(hours=25)
    assert await worktrees.stale(now=datetime.now(UTC)) == []
    stale = {w.id for w in await worktrees.stale(now=later)}
    assert stale == {idle.id, worked.id}  # busy's owner has a live (queued) run
    plan = {e.worktree.id: (e.action, e.reason) for e in await worktrees.cleanup(dry_run=True, now=later)}
    assert plan == {idle.id: ("remove", "stale, with no work in it"),
                    worked.id: ("keep", "stale, but 1 unmerged commit(s)")}
    assert idle.path.exists()  # a dry run removes nothing
    await worktrees.cleanup(dry_run=False, now=later)
    assert not idle.path.exists() and worked.path.exists() and busy.path.exists()
    assert (await store.worktree_records.get(idle.id)).status == "deleted"  # type: ignore[union-attr]
    runs = await store.list_runs(session_id=session.id)
    await store.update_run(runs[0].id, status=RunStatus.COMPLETED)
    assert busy.id in {w.id for w in await worktrees.stale(now=later)}


async def test_merge_brings_the_work_into_the_users_branch_and_removes_the_worktree(
        worktrees: Worktrees, store: Store, repo: Path) -> None:
    wt = await worktrees.create(repo, task="mul", label="builder#1")
    (wt.path / "mul.py").write_text("def mul(a, b):\n    return a * b\n")  # left uncommitted by the agent
    assert cli(repo, "log", "--oneline").count("\n") == 1
    outcome = await merge_work(worktrees, wt)
    assert outcome.merged and outcome.target == "main", outcome.message
    assert (repo / "mul.py").is_file() and not wt.path.exists()
    assert "Merge builder#1" in cli(repo, "log", "-1", "--format=%s")
    assert (await store.worktree_records.get(wt.id)).status == "merged"  # type: ignore[union-attr]
    with pytest.raises(WorktreeError, match="merged"):
        await merge_work(worktrees, wt)


@pytest.mark.parametrize("strategy", ["ff", "squash"])
async def test_fast_forward_and_squash(worktrees: Worktrees, repo: Path, strategy: str) -> None:
    wt = await worktrees.create(repo, task="two commits")
    commit_file(wt.path, "a.py", "a = 1\n", "a")
    commit_file(wt.path, "b.py", "b = 1\n", "b")
    outcome = await merge_work(worktrees, wt, strategy=strategy)  # type: ignore[arg-type]
    assert outcome.merged, outcome.message
    count = cli(repo, "rev-list", "--count", "HEAD").strip()
    assert count == ("3" if strategy == "ff" else "2")
    assert (repo / "a.py").is_file() and (repo / "b.py").is_file()


async def test_a_conflicting_merge_is_undone_and_names_the_files(worktrees: Worktrees, store: Store,
                                                                 repo: Path) -> None:
    wt = await worktrees.create(repo, task="conflict")
    commit_file(wt.path, "calc.py", "def add(a, b):\n    return b + a\n", "theirs")
    commit_file(repo, "calc.py", "def add(a, b):\n    return a + b + 0\n", "ours")
    head = cli(repo, "rev-parse", "HEAD")
    outcome = await merge_work(worktrees, wt)
    assert not outcome.merged and outcome.conflicts == ["calc.py"]
    assert "conflicts in calc.py" in outcome.message
    assert cli(repo, "rev-parse", "HEAD") == head and cli(repo, "status", "--porcelain") == ""
    assert (await store.worktree_records.get(wt.id)).status == "active"  # type: ignore[union-attr]
    # Rebasing it onto the user's branch conflicts the same way, and is undone too.
    synced = await sync_worktree(worktrees, wt)
    assert not synced.merged and synced.conflicts == ["calc.py"]
    assert cli(wt.path, "status", "--porcelain") == ""


async def test_sync_rebases_onto_the_users_new_commits(worktrees: Worktrees, store: Store, repo: Path) -> None:
    wt = await worktrees.create(repo, task="sync")
    commit_file(wt.path, "mine.py", "m = 1\n", "mine")
    commit_file(repo, "theirs.py", "t = 1\n", "theirs")
    outcome = await sync_worktree(worktrees, wt)
    assert outcome.merged, outcome.message
    assert (wt.path / "theirs.py").is_file()
    new_base = cli(repo, "rev-parse", "HEAD").strip()
    assert (await store.worktree_records.get(wt.id)).base_commit == new_base  # type: ignore[union-attr]
    (wt.path / "dirty.py").write_text("")
    with pytest.raises(WorktreeError, match="uncommitted"):
        await sync_worktree(worktrees, wt)


async def test_discard_removes_the_work(worktrees: Worktrees, repo: Path) -> None:
    wt = await worktrees.create(repo, task="nope")
    commit_file(wt.path, "x.py", "x\n", "x")
    assert (await discard_work(worktrees, wt)).status == "discarded"
    assert not wt.path.exists() and not (repo / "x.py").exists()
    assert "nope" not in cli(repo, "branch", "--list")


async def test_a_clone_works_like_a_worktree(worktrees: Worktrees, repo: Path) -> None:
    wt = await worktrees.create(repo, task="cloned", kind="clone")
    assert (wt.path / ".git").is_dir() and str(wt.path) not in cli(repo, "worktree", "list")
    commit_file(wt.path, "c.py", "c = 1\n", "c")
    outcome = await merge_work(worktrees, wt)
    assert outcome.merged, outcome.message
    assert (repo / "c.py").is_file() and not wt.path.exists()


async def test_a_merge_driver_from_the_repository_never_runs(worktrees: Worktrees, repo: Path,
                                                             tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (repo / ".gitattributes").write_text("calc.py merge=evil\n")
    cli(repo, "add", ".gitattributes")
    cli(repo, "commit", "-q", "-m", "attrs")
    cli(repo, "config", "merge.evil.driver", f"touch {marker}; cp %B %A")
    wt = await worktrees.create(repo, task="driver")
    commit_file(wt.path, "calc.py", "def add(a, b):\n    return b + a\n", "theirs")
    commit_file(repo, "calc.py", "def add(a, b):\n    return a + b + 0\n", "ours")
    outcome = await merge_work(worktrees, wt)
    assert not marker.exists()
    assert not outcome.merged and outcome.conflicts == ["calc.py"]
