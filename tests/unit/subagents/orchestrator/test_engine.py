"""The orchestrator engine against the in-process scripted provider: plan → build → review, the review loop, failures,
progress reporting, cancellation and resume."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.gitrepo import git_project
from yeetui.events import InboxItemAdded, Notice, RunProgress, RunStatus
from yeetui.runtime import Runtime
from yeetui.subagents.spawner import SpawnRequest

PLANNER = "You are the planner."
BUILDER = "You are a builder."
REVIEWER = "You are a code reviewer."
"""Phrases from each profile's system prompt: they occur only in that profile's requests."""
NEW_UTIL = "def f():\n    return 2  # NEW-LINE\n"
APPROVE = {"verdict": "approve", "findings": []}
CHANGES = {"verdict": "request_changes",
           "findings": [{"severity": "major", "file": "util.py", "line": 2, "message": "FINDING-X: explain the 2"}]}


def _git_repo(project: Path) -> None:
    git_project(project, {"util.py": "def f():\n    return 1\n"})


def _show(project: Path, ref: str) -> str:
    return subprocess.run(["git", "show", ref], cwd=project, capture_output=True, text=True, check=True).stdout


def _complete(output: str, **artifacts) -> ToolCall:
    args: dict = {"output": output}
    if artifacts:
        args["artifacts"] = artifacts
    return ToolCall("complete", args)


def _built(output: str = "Wrote util.py; tests pass.") -> ToolCall:
    return ToolCall("complete", {"output": output, "files_modified": ["util.py"]})


def _first(scripted, marker: str) -> int:
    return next(i for i, r in enumerate(scripted.requests) if marker in r.text)


def _count(scripted, marker: str) -> int:
    """Runs of a profile: requests whose conversation has just the task (the first request of each run)."""
    return sum(1 for r in scripted.requests if marker in r.text and len(r.body["messages"]) == 1)


async def _orchestrate(runtime: Runtime, goal: str):
    handle = await runtime.spawner.spawn(SpawnRequest("orchestrator", goal, requested_by="user", blocking=True))
    return handle, handle.result


async def _state(runtime: Runtime, run_id: str) -> dict:
    record = await runtime.store.workflow_states.load(run_id)
    assert record is not None and record.workflow == "orchestrator"
    return record.state


async def test_default_plan_builds_then_reviews_the_diff(runtime: Runtime, scripted) -> None:
    await asyncio.to_thread(_git_repo, runtime.project_dir)
    seen: list[object] = []
    runtime.bus.add_listener(seen.append)
    scripted.script(
        Reply(tool_calls=[_complete("No plan needed: change f to return 2. PLANNER-NOTES")], when_contains=PLANNER),
        Reply(tool_calls=[ToolCall("write_file", {"path": "util.py", "content": NEW_UTIL})], when_contains=BUILDER),
        Reply(tool_calls=[_built()], when_contains=BUILDER),
        Reply(tool_calls=[_complete("Approve: f is right.", **APPROVE)], when_contains=REVIEWER),
    )
    handle, result = await _orchestrate(runtime, "GOAL-1: make f return 2")
    assert result.status == RunStatus.COMPLETED, result.error
    # The builder worked in a worktree of its own: the user's checkout is untouched, its branch has the work.
    assert (runtime.project_dir / "util.py").read_text() == "def f():\n    return 1\n"
    [wt] = await runtime.store.worktree_records.list(statuses=("active",))
    assert _show(runtime.project_dir, f"{wt.branch}:util.py") == NEW_UTIL
    assert _first(scripted, PLANNER) < _first(scripted, BUILDER) < _first(scripted, REVIEWER)

    build = scripted.requests[_first(scripted, BUILDER)].text
    assert "GOAL-1" in build and "PLANNER-NOTES" in build  # the default build task: goal + planner's summary
    review = scripted.requests[_first(scripted, REVIEWER)].text
    assert "```diff" in review and "NEW-LINE" in review  # the builder's branch against where it started
    assert f"builder#1 on {wt.branch}" in review
    assert "## Results of earlier steps" in review and "Wrote util.py; tests pass." in review
    assert "Files modified: util.py" in review

    assert result.output.startswith("Orchestrator finished: plan ✓ → build ✓ → review ✓")
    assert f"builder#1: branch `{wt.branch}` — `/merge builder#1`" in result.output
    assert result.result["worktrees"] == [result.result["steps"][1]["worktree"]]
    assert [s["id"] for s in result.result["steps"]] == ["plan", "build", "review"]
    assert result.result["steps"][2]["verdict"] == "approve"
    run = await runtime.store.get_run(handle.run_id)
    assert run.status == RunStatus.COMPLETED and run.result["steps"][1]["files_modified"] == ["util.py"]
    state = await _state(runtime, handle.run_id)
    assert [s["status"] for s in state["steps"]] == ["done"] * 3 and state["plan_source"] == "default"

    # Steps starting and ending are progress on the ledger row, not inbox items: the inbox gets the end only.
    lines = [e.text for e in seen if isinstance(e, RunProgress) and e.run_id == handle.run_id]
    assert lines[0] == "plan …" and "plan ✓ → build … → review" in lines
    assert lines[-1] == "plan ✓ → build ✓ → review ✓"
    last = [e.steps for e in seen if isinstance(e, RunProgress) and e.run_id == handle.run_id][-1]
    assert [status for _, status in last] == ["done"] * 3 and last[1][0].startswith("build (builder#1): ")
    [end] = [i for i in await runtime.store.inbox.list(handle.session_id) if i.kind == "orchestrator"]
    assert end.body == "plan ✓ → build ✓ → review ✓" and end.data["event"] == "end"
    assert sum(isinstance(e, InboxItemAdded) and e.item_kind == "orchestrator" for e in seen) == 1
    assert any(isinstance(e, Notice) and "build (builder#1) started" in e.text for e in seen)

    crumbs = [b.summary for b in await runtime.store.breadcrumbs.list(handle.session_id)]
    assert crumbs[-1] == "orchestrator#1: completed — plan ✓ → build ✓ → review ✓"
    transcript = [m.message for m in await runtime.store.messages(handle.session_id)]
    assert [m.role for m in transcript] == ["user", "assistant"] and transcript[0].text == "GOAL-1: make f return 2"


async def test_planned_steps_run_in_parallel_and_feed_the_reviewer(runtime: Runtime, scripted) -> None:
    plan = {"steps": [
        {"id": "a", "profile": "builder", "task": "BUILD-A: write a.py", "depends_on": []},
        {"id": "b", "profile": "builder", "task": "BUILD-B: write b.py"},
        {"id": "check", "profile": "reviewer", "task": "Review a.py and b.py. CHECK-TASK", "depends_on": ["a", "b"]},
    ]}
    scripted.script(
        Reply(tool_calls=[_complete("Two files, then a review.", **plan)], when_contains=PLANNER),
        *[Reply(text="Working on it. " * 6, chunk_delay=0.03, when_contains=f"BUILD-{x}",
                tool_calls=[ToolCall("write_file", {"path": f"{x.lower()}.py", "content": f"# {x}\n"})])
          for x in "AB"],
        *[Reply(tool_calls=[ToolCall("complete", {"output": f"REPORT-{x}", "files_modified": [f"{x.lower()}.py"]})],
                when_contains=f"BUILD-{x}") for x in "AB"],
        Reply(tool_calls=[_complete("Approve.", **APPROVE)], when_contains=REVIEWER),
    )
    handle, result = await _orchestrate(runtime, "GOAL-2: two files")
    assert result.status == RunStatus.COMPLETED, result.error
    assert (runtime.project_dir / "a.py").exists() and (runtime.project_dir / "b.py").exists()
    firsts = [scripted.requests[_first(scripted, f"BUILD-{x}")] for x in "AB"]
    assert firsts[0].started < firsts[1].finished and firsts[1].started < firsts[0].finished, "not concurrent"
    review = scripted.requests[_first(scripted, REVIEWER)].text
    assert "CHECK-TASK" in review and "REPORT-A" in review and "REPORT-B" in review
    assert "```diff" not in review  # not a git repository: the reviewer works from the reports
    state = await _state(runtime, handle.run_id)
    assert state["plan_source"] == "planner" and [s["id"] for s in state["steps"]] == ["plan", "a", "b", "check"]


@pytest.mark.parametrize("bad_plan, problem", [
    ([{"id": "x", "task": "t", "depends_on": ["y"]}, {"id": "y", "task": "t", "depends_on": ["x"]}], "cycle"),
    ([{"id": "x", "profile": "oracle", "task": "t"}], "'oracle'"),
])
async def test_an_invalid_plan_falls_back_to_the_default_with_a_notice(runtime: Runtime, scripted, bad_plan,
                                                                      problem) -> None:
    notices: list[Notice] = []
    runtime.bus.add_listener(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    scripted.script(
        Reply(tool_calls=[_complete("A bad plan.", steps=bad_plan)], when_contains=PLANNER),
        Reply(tool_calls=[_built()], when_contains=BUILDER),
        Reply(tool_calls=[_complete("Approve.", **APPROVE)], when_contains=REVIEWER),
    )
    handle, result = await _orchestrate(runtime, "GOAL-3")
    assert result.status == RunStatus.COMPLETED, result.error
    warning = next(n for n in notices if n.level == "warning" and "plan is not valid" in n.text)
    assert problem in warning.text and "default plan" in warning.text
    state = await _state(runtime, handle.run_id)
    assert [s["id"] for s in state["steps"]] == ["plan", "build", "review"] and problem in state["plan_error"]


async def test_review_loop_is_bounded_then_waits_for_the_user_and_resume_goes_on(runtime: Runtime,
                                                                                 scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("Just build it.")], when_contains=PLANNER),
        *[r for n in range(3) for r in (
            Reply(tool_calls=[_built(f"BUILD-ROUND-{n}")], when_contains=BUILDER),
            Reply(tool_calls=[_complete(f"Changes needed (round {n}).", **CHANGES)], when_contains=REVIEWER))],
    )
    handle, result = await _orchestrate(runtime, "GOAL-4")
    assert result.status == RunStatus.WAITING_USER, result.error
    items = [i for i in await runtime.store.inbox.list(handle.session_id) if i.kind == "orchestrator"]
    assert [i.data["event"] for i in items] == ["end", "blocked"], "what needs the user is in the inbox"
    assert "your decision is needed" in items[1].title
    assert _count(scripted, BUILDER) == 3 and _count(scripted, REVIEWER) == 3  # 1 + max_review_loops (2)
    rework = [r.text for r in scripted.requests if BUILDER in r.text and "## Review findings to address" in r.text]
    assert len(rework) == 2 and all("FINDING-X" in t for t in rework) and "Round 2 of 2" in rework[-1]
    assert "your decision is needed" in result.output and "FINDING-X: explain the 2" in result.output
    assert (await runtime.store.get_run(handle.run_id)).status == RunStatus.WAITING_USER
    state = await _state(runtime, handle.run_id)
    assert [s["status"] for s in state["steps"]] == ["done", "done", "blocked"]

    # The user resumes: one more round of fixes, and this time the reviewer approves.
    scripted.script(Reply(tool_calls=[_built("BUILD-ROUND-3")], when_contains=BUILDER),
                    Reply(tool_calls=[_complete("Approve now.", **APPROVE)], when_contains=REVIEWER))
    before = len(scripted.requests)
    resumed = await runtime.spawner.start_existing(handle.run_id, resume=True)
    assert resumed.result.status == RunStatus.COMPLETED, resumed.result.error
    later = scripted.requests[before:]
    assert not any(PLANNER in r.text for r in later)
    assert [BUILDER in r.text for r in later] == [True, False]


async def test_max_review_loops_from_the_profile(runtime: Runtime, scripted) -> None:
    profile = runtime.profiles.get("orchestrator")
    runtime.profiles.profiles["orchestrator"] = profile.model_copy(
        update={"default_variables": {"max_review_loops": "0"}})
    scripted.script(
        Reply(tool_calls=[_complete("Just build it.")], when_contains=PLANNER),
        Reply(tool_calls=[_built()], when_contains=BUILDER),
        Reply(tool_calls=[_complete("Changes needed.", **CHANGES)], when_contains=REVIEWER),
    )
    _, result = await _orchestrate(runtime, "GOAL-5")
    assert result.status == RunStatus.WAITING_USER
    assert _count(scripted, BUILDER) == 1 and "after 0 round(s)" in result.output


async def test_a_failed_child_fails_the_run_and_skips_its_dependants(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("Just build it.")], when_contains=PLANNER),
        Reply(fault=Fault.http(400), when_contains=BUILDER),
    )
    handle, result = await _orchestrate(runtime, "GOAL-6")
    assert result.status == RunStatus.FAILED
    assert "step 'build' failed: builder#1 ended failed" in result.error
    assert not any(REVIEWER in r.text for r in scripted.requests)
    state = await _state(runtime, handle.run_id)
    assert [s["status"] for s in state["steps"]] == ["done", "failed", "skipped"]
    assert result.output.startswith("Orchestrator failed: plan ✓ → build ✗ → review (skipped)")


async def test_cancel_mid_review_then_resume_never_reruns_finished_steps(scripted, project_dir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    project = project_dir
    await asyncio.to_thread(_git_repo, project)
    first = await Runtime.open(cwd=project, provider_factory=scripted.provider_factory)
    scripted.script(
        Reply(tool_calls=[_complete("Just build it.")], when_contains=PLANNER),
        Reply(tool_calls=[ToolCall("write_file", {"path": "util.py", "content": NEW_UTIL})], when_contains=BUILDER),
        Reply(tool_calls=[_built()], when_contains=BUILDER),
        Reply(text="reading " * 400, chunk_size=4, chunk_delay=0.05, when_contains=REVIEWER),
    )
    handle = await first.spawner.spawn(SpawnRequest("orchestrator", "GOAL-7", requested_by="user"))
    await scripted.until(lambda requests: any(REVIEWER in r.text for r in requests), timeout=20)
    first.spawner.abort(handle.run_id)
    ended = await first.spawner.wait(handle.run_id)
    assert ended is not None and ended.status == RunStatus.CANCELLED
    runs = {r.profile: r for r in await first.store.list_runs()}
    assert runs["orchestrator"].status == RunStatus.CANCELLED and runs["reviewer"].status == RunStatus.CANCELLED
    state = await _state(first, handle.run_id)
    assert [s["status"] for s in state["steps"]] == ["done", "done", "running"]
    await first.close()

    scripted.script(Reply(tool_calls=[_complete("Approve.", **APPROVE)], when_contains=REVIEWER))
    before = len(scripted.requests)
    second = await Runtime.open(cwd=project, provider_factory=scripted.provider_factory)
    try:
        resumed = await second.spawner.start_existing(handle.run_id, resume=True)
        assert resumed.result.status == RunStatus.COMPLETED, resumed.result.error
        later = scripted.requests[before:]
        assert len(later) == 1 and REVIEWER in later[0].text and "NEW-LINE" in later[0].text
        assert not any(BUILDER in r.text or PLANNER in r.text for r in later)
        state = await _state(second, handle.run_id)
        assert [(s["status"], s["attempts"]) for s in state["steps"]] == [("done", 1), ("done", 1), ("done", 2)]
    finally:
        await second.close()


async def _stopped_in_build(runtime: Runtime, goal: str, *, review: bool, **child_end) -> tuple[str, str]:
    """An orchestrator run whose saved state has `plan` done and `build` running, as a process left it when
    it stopped; the builder child run ended as `child_end` says. Returns (orchestrator run, child run)."""
    store = runtime.store
    session = await runtime.launcher.new_session(runtime.profiles.get("orchestrator"))
    run = await store.create_run(session_id=session.id, profile="orchestrator", model="anthropic/x",
                                 prompt=goal, label="orchestrator#1")
    child_session = await store.create_session(profile="builder", parent_id=session.id)
    child = await store.create_run(session_id=child_session.id, profile="builder", model="anthropic/x",
                                   prompt="build", parent_run_id=run.id, label="builder#1")
    await store.update_run(child.id, **child_end)
    steps = [{"id": "plan", "profile": "planner", "task": "plan it", "status": "done", "attempts": 1},
             {"id": "build", "profile": "builder", "task": "build it", "status": "running", "attempts": 1,
              "run_id": child.id, "session_id": child_session.id, "label": "builder#1"}]
    if review:
        steps.append({"id": "review", "profile": "reviewer", "task": "review it", "depends_on": ["build"]})
    await store.workflow_states.save(run.id, "orchestrator", {"goal": goal, "steps": steps, "events": []})
    return run.id, child.id


async def test_resume_takes_the_result_of_a_child_that_finished_meanwhile(runtime: Runtime, scripted) -> None:
    run, _ = await _stopped_in_build(runtime, "GOAL-8", review=True, status=RunStatus.COMPLETED, result={
        "output": "BUILT-WHILE-AWAY", "status": "success", "files_modified": ["u.py"]})
    scripted.script(Reply(tool_calls=[_complete("Approve.", **APPROVE)], when_contains=REVIEWER))
    resumed = await runtime.spawner.start_existing(run, resume=True)
    assert resumed.result.status == RunStatus.COMPLETED, resumed.result.error
    assert len(scripted.requests) == 1 and "BUILT-WHILE-AWAY" in scripted.requests[0].text


async def test_resume_supersedes_an_interrupted_child_it_starts_again(runtime: Runtime, scripted) -> None:
    """The step of a child that was interrupted starts again with a new child; the old run is ended as
    superseded, so it no longer shows as something to resume."""
    run, child = await _stopped_in_build(runtime, "GOAL-9", review=False, status=RunStatus.INTERRUPTED,
                                         error="its process died")
    scripted.script(Reply(tool_calls=[_complete("BUILT-AGAIN")], when_contains="build it"))
    resumed = await runtime.spawner.start_existing(run, resume=True)
    assert resumed.result.status == RunStatus.COMPLETED, resumed.result.error
    old = await runtime.store.get_run(child)
    assert old.status == RunStatus.CANCELLED and "superseded" in (old.error or "")


async def test_progress_goes_to_the_parent_session(runtime: Runtime, scripted) -> None:
    primary = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    scripted.script(
        Reply(tool_calls=[_complete("Just build it.")], when_contains=PLANNER),
        Reply(tool_calls=[_built()], when_contains=BUILDER),
        Reply(tool_calls=[_complete("Approve.", **APPROVE)], when_contains=REVIEWER),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("orchestrator", "GOAL-9", parent_session_id=primary.id,
                                                      requested_by="agent", blocking=True))
    assert handle.result.status == RunStatus.COMPLETED, handle.result.error
    [item] = await runtime.store.inbox.list(primary.id)  # one item: the end, no progress, no second report
    assert item.kind == "completion" and item.data["label"] == "orchestrator#1"
    assert not [i for i in await runtime.store.inbox.list(handle.session_id) if i.kind == "orchestrator"]
    crumbs = [b.summary for b in await runtime.store.breadcrumbs.list(primary.id)]
    assert crumbs == ["orchestrator#1: Orchestrator finished: plan ✓ → build ✓ → review ✓"]  # one, not two
    own = [b.summary for b in await runtime.store.breadcrumbs.list(handle.session_id)]
    assert own[-1] == "orchestrator#1: completed — plan ✓ → build ✓ → review ✓"


async def test_timeout_from_a_cli_run_cancels_the_children(runtime: Runtime, scripted) -> None:
    profile = runtime.profiles.get("orchestrator")
    runtime.profiles.profiles["orchestrator"] = profile.model_copy(
        update={"limits": profile.limits.model_copy(update={"timeout": 0.8})})
    scripted.script(Reply(text="pondering " * 200, chunk_size=5, chunk_delay=0.05, when_contains=PLANNER))
    result = await runtime.launcher.run_prompt("GOAL-10", profile_name="orchestrator")
    assert result.status == RunStatus.TIMEOUT and "0.8" in result.error
    runs = {r.profile: r.status for r in await runtime.store.list_runs()}
    assert runs == {"orchestrator": RunStatus.TIMEOUT, "planner": RunStatus.CANCELLED}
    assert result.output.startswith("Orchestrator timed out: plan …")
