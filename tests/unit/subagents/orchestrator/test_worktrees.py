"""The orchestrator in a git repository: independent builder steps run at once in separate worktrees, the
reviewer reads each builder's branch (`base...branch`), a rework continues in the same worktree, and the
user's checkout is untouched until the user merges."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.gitrepo import git_project
from yeetui.events import RunStatus
from yeetui.runtime import Runtime
from yeetui.subagents.spawner import SpawnRequest
from yeetui.worktrees.merging import merge_work

PLANNER = "You are the planner."
BUILDER = "You are a builder."
REVIEWER = "You are a code reviewer."
APPROVE = {"verdict": "approve", "findings": []}
CHANGES = {"verdict": "request_changes",
           "findings": [{"severity": "major", "file": "a.py", "line": 1, "message": "FINDING-X: name it"}]}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@e.st", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    return git_project(project_dir, {"README": "project\n"})


def _complete(output: str, artifacts: dict | None = None, **extra) -> ToolCall:
    return ToolCall("complete", {"output": output, **({"artifacts": artifacts} if artifacts else {}), **extra})


def _first(scripted, marker: str) -> int:
    return next(i for i, r in enumerate(scripted.requests) if marker in r.text)


async def _orchestrate(runtime: Runtime, goal: str):
    handle = await runtime.spawner.spawn(SpawnRequest("orchestrator", goal, requested_by="user", blocking=True))
    return handle, handle.result


async def test_independent_builders_run_in_parallel_worktrees_and_merge_when_the_user_says(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    plan = {"steps": [
        {"id": "a", "profile": "builder", "task": "BUILD-A: write a.py", "depends_on": []},
        {"id": "b", "profile": "builder", "task": "BUILD-B: write b.py", "depends_on": []},
        {"id": "check", "profile": "reviewer", "task": "Review both. CHECK-TASK", "depends_on": ["a", "b"]},
    ]}
    scripted.script(
        Reply(tool_calls=[_complete("Two files, then a review.", plan)], when_contains=PLANNER),
        *[Reply(text="Working on it. " * 6, chunk_delay=0.03, when_contains=f"BUILD-{x}",
                tool_calls=[ToolCall("write_file", {"path": f"{x.lower()}.py", "content": f"WHO = '{x}'\n"})])
          for x in "AB"],
        *[Reply(tool_calls=[_complete(f"REPORT-{x}", files_modified=[f"{x.lower()}.py"])],
                when_contains=f"BUILD-{x}") for x in "AB"],
        Reply(tool_calls=[_complete("Approve.", APPROVE)], when_contains=REVIEWER),
    )
    head = git(project_dir, "rev-parse", "HEAD")
    handle, result = await _orchestrate(runtime, "GOAL: two files")
    assert result.status == RunStatus.COMPLETED, result.error

    firsts = [scripted.requests[_first(scripted, f"BUILD-{x}")] for x in "AB"]
    assert firsts[0].started < firsts[1].finished and firsts[1].started < firsts[0].finished, "not concurrent"
    trees = {w.label: w for w in await runtime.store.worktree_records.list(statuses=("active",))}
    assert sorted(trees) == ["builder#1", "builder#2"] and len({w.path for w in trees.values()}) == 2
    # each branch is named by its step's task, not by the overall goal the step's prompt goes on with
    assert {w.branch.rpartition("/")[2] for w in trees.values()} == {"builder-1-build-a-write-a-py",
                                                                      "builder-2-build-b-write-b-py"}, trees

    # Until the user merges, their checkout and branch are as they were.
    assert git(project_dir, "rev-parse", "HEAD") == head and git(project_dir, "status", "--porcelain") == ""
    review = scripted.requests[_first(scripted, REVIEWER)].text
    for wt in trees.values():
        assert f"on {wt.branch}" in review and f"...{wt.branch}" in review
    assert "WHO = 'A'" in review and "WHO = 'B'" in review  # committed files, reviewed from the branches
    assert "Work to merge" in result.output and "/merge builder#1" in result.output
    [end] = [i for i in await runtime.store.inbox.list(handle.session_id) if (i.data or {}).get("event") == "end"]
    assert {w["branch"] for w in end.data["worktrees"]} == {w.branch for w in trees.values()}

    for wt in trees.values():
        outcome = await merge_work(runtime.spawner.worktrees, wt)  # type: ignore[arg-type]
        assert outcome.merged, outcome.message
    assert (project_dir / "a.py").read_text() == "WHO = 'A'\n" and (project_dir / "b.py").read_text() == "WHO = 'B'\n"
    assert git(project_dir, "symbolic-ref", "--short", "HEAD").strip() == "main"


async def test_a_rework_continues_in_the_builders_worktree(runtime: Runtime, scripted, project_dir: Path) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("Just build it.")], when_contains=PLANNER),
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.py", "content": "x = 1\n"})], when_contains=BUILDER),
        Reply(tool_calls=[_complete("built", files_modified=["a.py"])], when_contains=BUILDER),
        Reply(tool_calls=[_complete("Changes needed.", CHANGES)], when_contains=REVIEWER),
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.py", "content": "answer = 1\n"})],
              when_contains="FINDING-X"),
        Reply(tool_calls=[_complete("renamed", files_modified=["a.py"])], when_contains="FINDING-X"),
        Reply(tool_calls=[_complete("Approve.", APPROVE)], when_contains=REVIEWER),
    )
    handle, result = await _orchestrate(runtime, "GOAL: a.py")
    assert result.status == RunStatus.COMPLETED, result.error
    [wt] = await runtime.store.worktree_records.list()
    assert wt.status == "active" and wt.label == "builder#1"  # the rework (builder#2) took over builder#1's tree
    state = (await runtime.store.workflow_states.load(handle.run_id)).state  # type: ignore[union-attr]
    build = next(s for s in state["steps"] if s["id"] == "build")
    assert build["attempts"] == 2 and build["worktree"]["id"] == wt.id
    assert wt.owner_session_id == build["session_id"]
    log = git(project_dir, "log", "--format=%s", f"{wt.base_commit}..{wt.branch}").splitlines()
    assert len(log) == 2 and log[0].startswith("builder#2") and log[1].startswith("builder#1")
    second_review = [r.text for r in scripted.requests if REVIEWER in r.text and len(r.body["messages"]) == 1][1]
    assert "+answer = 1" in second_review and "x = 1" not in second_review.split("```diff", 1)[1]


async def test_auto_merge_merges_only_what_a_review_approved(runtime: Runtime, scripted, project_dir: Path) -> None:
    """`worktrees.auto_merge: merge`: the approved builder's branch goes into the user's branch at the end; the
    one no review looked at stays for the user to decide."""
    runtime.launcher.settings.worktrees.auto_merge = "merge"
    plan = {"steps": [
        {"id": "a", "profile": "builder", "task": "BUILD-A: write a.py", "depends_on": []},
        {"id": "b", "profile": "builder", "task": "BUILD-B: write b.py", "depends_on": []},
        {"id": "check", "profile": "reviewer", "task": "Review a. CHECK-TASK", "depends_on": ["a"]},
    ]}
    scripted.script(
        Reply(tool_calls=[_complete("Two files, one review.", plan)], when_contains=PLANNER),
        *[Reply(tool_calls=[ToolCall("write_file", {"path": f"{x.lower()}.py", "content": f"WHO = '{x}'\n"})],
                when_contains=f"BUILD-{x}") for x in "AB"],
        *[Reply(tool_calls=[_complete(f"REPORT-{x}")], when_contains=f"BUILD-{x}") for x in "AB"],
        Reply(tool_calls=[_complete("Approve.", APPROVE)], when_contains=REVIEWER),
    )
    handle, result = await _orchestrate(runtime, "GOAL: auto merge")
    assert result.status == RunStatus.COMPLETED, result.error
    assert (project_dir / "a.py").read_text() == "WHO = 'A'\n"  # approved: merged at once
    assert not (project_dir / "b.py").exists()  # never reviewed: waits for the user's word
    assert "Merged into your branch" in result.output and "builder#1" in result.output.split("Work to merge")[0]
    assert "/merge builder#2" in result.output
    active = await runtime.store.worktree_records.list(statuses=("active",))
    assert [w.label for w in active] == ["builder#2"]
    [end] = [i for i in await runtime.store.inbox.list(handle.session_id) if (i.data or {}).get("event") == "end"]
    assert [w["branch"] for w in end.data["worktrees"]] == [active[0].branch]  # `m` merges only what is left


async def test_a_builder_interrupted_by_a_crash_is_in_the_report_and_its_worktree_can_be_cleaned_up(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    """The orchestrator's process died while builder#1 worked in its worktree: both runs were found running and
    ended interrupted. On resume the step starts again with a new builder; the report still accounts for
    builder#1 and the worktree it left, which `worktrees stale` lists at once and `cleanup` removes (no work
    in it) — it no longer waits 24 hours as if someone were coming back for it."""
    store, worktrees = runtime.store, runtime.spawner.worktrees
    session = await runtime.launcher.new_session(runtime.profiles.get("orchestrator"))
    run = await store.create_run(session_id=session.id, profile="orchestrator", model="anthropic/x",
                                 prompt="GOAL-CRASH", label="orchestrator#1")
    child_session = await store.create_session(profile="builder", parent_id=session.id)
    child = await store.create_run(session_id=child_session.id, profile="builder", model="anthropic/x",
                                   prompt="build", parent_run_id=run.id, label="builder#1")
    left = await worktrees.create(project_dir, task="builder#1 build it", owner_session_id=child_session.id,
                                  label="builder#1")
    for run_id in (run.id, child.id):
        await store.update_run(run_id, status=RunStatus.INTERRUPTED, error="its process died")
    steps = [{"id": "plan", "profile": "planner", "task": "plan it", "status": "done", "attempts": 1},
             {"id": "build", "profile": "builder", "task": "BUILD-AGAIN it", "status": "running", "attempts": 1,
              "run_id": child.id, "session_id": child_session.id, "label": "builder#1"}]
    await store.workflow_states.save(run.id, "orchestrator", {"goal": "GOAL-CRASH", "steps": steps, "events": []})
    scripted.script(Reply(tool_calls=[_complete("BUILT-AGAIN")], when_contains="BUILD-AGAIN"))

    resumed = await runtime.spawner.start_existing(run.id, resume=True)
    assert resumed.result.status == RunStatus.COMPLETED, resumed.result.error
    report = resumed.result.output
    assert "**Before the restart**" in report
    assert f"builder#1 (build, interrupted): left worktree `{left.path}` on branch `{left.branch}` (no work" in report
    assert [w.id for w in await worktrees.stale()] == [left.id]
    plan = await worktrees.cleanup(dry_run=False)
    assert [(e.worktree.id, e.action) for e in plan] == [(left.id, "remove")]
    assert not left.path.exists()
