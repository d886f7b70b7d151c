"""Children with `isolation: worktree` work in a worktree of their own: the user's checkout and branch stay
untouched, the work is committed on the child's branch, the parent is told where it is and how to take it."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.gitrepo import git_project
from yeetui.events import RunStatus
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.subagents.isolation import WorktreeIsolation
from yeetui.subagents.review import review_request
from yeetui.subagents.spawn_request import SpawnRequest
from yeetui.system import sandbox
from yeetui.worktrees.merging import merge_work

IDENTITY = ("-c", "user.name=Test", "-c", "user.email=test@example.com")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    return git_project(project_dir, {"calc.py": "def add(a, b):\n    return a + b\n"})


def _spawn(prompt: str, **kw) -> ToolCall:
    return ToolCall("spawn_subagent", {"profile": "builder", "prompt": prompt, **kw})


async def test_a_builder_works_in_its_own_worktree_and_the_checkout_stays_untouched(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    head = git(project_dir, "rev-parse", "HEAD")
    scripted.script(
        Reply(tool_calls=[_spawn("BUILD: add mul()")], when_contains="PARENT"),
        Reply(tool_calls=[ToolCall("write_file", {"path": "mul.py", "content": "def mul(a, b):\n    return a * b\n"})],
              when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "mul() added"})], when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="[Subagent: builder#"),
    )
    result = await runtime.launcher.run_prompt("PARENT: have mul() built")
    assert result.status == RunStatus.COMPLETED, result.error

    assert not (project_dir / "mul.py").exists()
    assert git(project_dir, "rev-parse", "HEAD") == head and git(project_dir, "status", "--porcelain") == ""
    [wt] = await runtime.store.worktree_records.list(statuses=("active",))
    assert wt.branch.startswith("yeetui/build/builder-1") and wt.label == "builder#1"
    assert git(project_dir, "show", f"{wt.branch}:mul.py").startswith("def mul")  # committed on its branch
    child = await runtime.store.get_session(wt.owner_session_id or "")
    assert child is not None and child.cwd == wt.path and (child.workspace or {})["worktree_id"] == wt.id

    [item] = await runtime.store.inbox.list(result.session_id)
    assert item.data["worktree"]["branch"] == wt.branch and item.data["worktree"]["commits"] == 1
    told = scripted.requests[-1].text
    assert f"on branch {wt.branch}" in told and "/merge builder#1" in told and "untouched" in told

    outcome = await merge_work(runtime.spawner.worktrees, wt)  # type: ignore[arg-type]
    assert outcome.merged, outcome.message
    assert (project_dir / "mul.py").is_file() and not wt.path.exists()


async def test_two_builders_get_two_worktrees(runtime: Runtime, scripted, project_dir: Path) -> None:
    scripted.script(
        Reply(tool_calls=[_spawn("BUILD-A: a.py"), _spawn("BUILD-B: b.py")], when_contains="PARENT"),
        *[Reply(tool_calls=[ToolCall("write_file", {"path": "shared.py", "content": f"who = {x!r}\n"})],
                when_contains=f"BUILD-{x}:") for x in "AB"],
        *[Reply(tool_calls=[ToolCall("complete", {"output": f"{x} done"})], when_contains=f"BUILD-{x}:")
          for x in "AB"],
        Reply(tool_calls=[ToolCall("complete", {"output": "both"})], when_contains="[Subagent: builder#"),
    )
    result = await runtime.launcher.run_prompt("PARENT: two builders")
    assert result.status == RunStatus.COMPLETED, result.error
    trees = await runtime.store.worktree_records.list(statuses=("active",))
    assert len({w.path for w in trees}) == 2 and len({w.branch for w in trees}) == 2
    contents = sorted(git(project_dir, "show", f"{w.branch}:shared.py") for w in trees)
    assert contents == ["who = 'A'\n", "who = 'B'\n"]  # the same file, written apart
    assert not (project_dir / "shared.py").exists()


async def test_a_builder_cannot_write_outside_its_worktree(runtime: Runtime, scripted, project_dir: Path) -> None:
    escapes = [str(project_dir / "evil.py"), "../../../project/evil.py", "../evil.py"]
    scripted.script(
        Reply(tool_calls=[_spawn("BUILD: escape")], when_contains="PARENT"),
        Reply(tool_calls=[ToolCall("write_file", {"path": p, "content": "x"}) for p in escapes],
              when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "tried"})], when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="[Subagent: builder#"),
    )
    result = await runtime.launcher.run_prompt("PARENT: escape")
    assert result.status == RunStatus.COMPLETED, result.error
    assert not (project_dir / "evil.py").exists()
    [wt] = await runtime.store.worktree_records.list()
    assert not (wt.path.parent / "evil.py").exists()
    child_requests = [r for r in scripted.requests if "BUILD: escape" in r.text and "PARENT" not in r.text]
    assert child_requests[-1].text.count("outside the workspace") == 3


async def test_outside_a_repository_a_builder_works_in_the_checkout_with_a_notice(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    (project_dir / ".git").rename(project_dir / "not-git")
    notices: list[str] = []
    runtime.bus.add_listener(lambda e: notices.append(getattr(e, "text", "")))
    scripted.script(
        Reply(tool_calls=[_spawn("BUILD: plain")], when_contains="PARENT"),
        Reply(tool_calls=[ToolCall("write_file", {"path": "out.py", "content": "x = 1\n"})], when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="[Subagent: builder#"),
    )
    result = await runtime.launcher.run_prompt("PARENT: plain dir")
    assert result.status == RunStatus.COMPLETED, result.error
    assert (project_dir / "out.py").is_file()
    assert any("gets no worktree of its own" in n and "not inside a git repository" in n for n in notices)


async def test_review_of_one_commit_or_a_range(project_dir: Path) -> None:
    root = git(project_dir, "rev-parse", "HEAD").strip()
    request = await review_request(project_dir, parent_session_id="s", target=root)
    assert "+def add(a, b):" in request.prompt_suffix  # the root commit, against nothing
    assert request.prompt.startswith(f"Review commit {root}")
    (project_dir / "new.py").write_text("NEW = 1\n")
    git(project_dir, "add", "new.py")
    git(project_dir, "commit", "-q", "-m", "adds a file only")
    for target in ("HEAD", "HEAD~1..", "HEAD~1..HEAD"):
        request = await review_request(project_dir, parent_session_id="s", target=target)
        assert "+NEW = 1" in request.prompt_suffix and "def add" not in request.prompt_suffix.split("new.py", 1)[1]


async def test_a_builders_bash_writes_only_its_worktree(runtime: Runtime, scripted, project_dir: Path) -> None:
    """The OS sandbox of a worktree's bash: writes into the user's checkout fail, its own files and a commit
    on its branch work (its git reaches the main repository's object store and its branch's refs)."""
    if sandbox.probe_sandbox() is None:
        pytest.skip("no OS sandbox (bubblewrap or Landlock) works on this machine")
    answer_permissions_headless(runtime.bus, approve=True)
    escape = project_dir / "escape.txt"
    outside = Path.home() / f".yeetui-escape-probe-{uuid.uuid4().hex}"  # not under /tmp (the sandbox's tmpfs)
    who = "-c user.name=B -c user.email=b@x"
    command = (f"echo x > {escape}; echo x > {outside}; echo y > inside.txt && git {who} add inside.txt && "
               f"git {who} commit -qm inside && echo COMMITTED")
    scripted.script(
        Reply(tool_calls=[_spawn("BUILD: shell")], when_contains="PARENT"),
        Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "tried"})], when_contains="BUILD:"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="[Subagent: builder#"),
    )
    try:
        result = await runtime.launcher.run_prompt("PARENT: shell in a worktree")
        assert result.status == RunStatus.COMPLETED, result.error
        assert not escape.exists() and not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    [told] = [str(m["content"]) for r in scripted.requests if "BUILD: shell" in r.text and "PARENT" not in r.text
              for m in r.body["messages"] if "tool_result" in str(m["content"])]
    # bubblewrap mounts the checkout read-only; Landlock denies the write
    assert ("Read-only file system" in told or "Permission denied" in told) and "COMMITTED" in told
    [wt] = await runtime.store.worktree_records.list()
    assert git(project_dir, "show", f"{wt.branch}:inside.txt") == "y\n"
    assert git(project_dir, "log", "-1", "--format=%s", wt.branch).strip() == "inside"
    assert git(project_dir, "status", "--porcelain") == "" and git(project_dir, "branch", "--show-current") == "main\n"


async def test_worktree_isolation_binds_a_session_and_hands_its_work_in(runtime: Runtime, project_dir: Path) -> None:
    """WorktreeIsolation on its own: a builder's session gets a worktree, what it leaves uncommitted is committed
    on its branch at hand-in; `isolation: current` and a missing registry leave the session as it is."""
    isolation = WorktreeIsolation(runtime.spawner.worktrees, store=runtime.store, bus=runtime.bus,
                                  project_dir=project_dir)
    builder = runtime.profiles.get("builder")
    session = await runtime.launcher.new_session(builder)
    req = SpawnRequest("builder", "add mul()\nand more", label="mul")
    assert await isolation.isolate(session, builder, SpawnRequest("builder", "x", isolation="current"), "b#1",
                                   None) == session
    assert await WorktreeIsolation(None, store=runtime.store, bus=runtime.bus, project_dir=project_dir).isolate(
        session, builder, req, "b#1", None) == session
    bound = await isolation.isolate(session, builder, req, "builder#1", None)
    assert bound.cwd is not None and bound.cwd != project_dir and (bound.workspace or {})["mode"] == "worktree"
    (bound.cwd / "mul.py").write_text("def mul(a, b):\n    return a * b\n")
    info = await isolation.hand_in(session.id, "builder#1", req.task)
    assert info is not None and info["commits"] == 1 and info["path"] == str(bound.cwd)
    assert git(project_dir, "log", "-1", "--format=%s", info["branch"]).strip() == "builder#1: mul"
    assert await isolation.worktree_info(session.id) == info
    other = await runtime.launcher.new_session(builder)
    assert await isolation.hand_in(other.id, "builder#2", "x") is None  # no worktree of its own
