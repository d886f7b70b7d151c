"""AgentSpawner against the in-process scripted provider: concurrency, limits, delivery, cancellation, steering."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.fakellm.server import RecordedRequest
from tests.gitrepo import git_project
from tests.processes import gone, running_with, unique_sleep
from yeetui.events import InboxItemAdded, RunStatus
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.subagents.spawner import SpawnRefused, SpawnRequest


def _spawn(profile: str, prompt: str, **kw) -> ToolCall:
    return ToolCall("spawn_subagent", {"profile": profile, "prompt": prompt, **kw})


def _wait_for(flag: Path) -> str:
    """A bash command that runs until the test creates `flag`: the agent is busy for exactly as long as needed."""
    return f"until [ -e {flag} ]; do sleep 0.02; done"


def _inbox_items(runtime: Runtime, n: int) -> asyncio.Event:
    """Set once `n` inbox items have been added from now on."""
    arrived = asyncio.Event()
    count = 0

    def on_event(event: object) -> None:
        nonlocal count
        if isinstance(event, InboxItemAdded):
            count += 1
            if count >= n:
                arrived.set()

    runtime.bus.add_listener(on_event)
    return arrived


def _complete(output: str, **artifacts) -> ToolCall:
    args: dict = {"output": output}
    if artifacts:
        args["artifacts"] = artifacts
    return ToolCall("complete", args)


async def test_three_oracles_run_concurrently_and_report_once(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_spawn("oracle", f"QUESTION-{q}: why?") for q in "ABC"], when_contains="PARENT-TASK"),
        *[Reply(tool_calls=[ToolCall("read_file", {"path": "missing.txt"})], when_contains=f"QUESTION-{q}",
                chunk_delay=0.05, text="Looking into it.") for q in "ABC"],
        *[Reply(tool_calls=[_complete(f"ANSWER-{q}")], when_contains=f"QUESTION-{q}") for q in "ABC"],
        Reply(tool_calls=[_complete("all three answered")], when_contains="[Subagent: oracle#"),
    )
    result = await runtime.launcher.run_prompt("PARENT-TASK: ask three oracles")
    assert result.status == RunStatus.COMPLETED, result.error

    children = [r for r in scripted.requests if "QUESTION-" in r.text and "PARENT-TASK" not in r.text]
    firsts: dict[str, RecordedRequest] = {}
    for request in children:
        q = next(q for q in "ABC" if f"QUESTION-{q}" in request.text)
        firsts.setdefault(q, request)
    spans = sorted((r.started, r.finished) for r in firsts.values())
    assert spans[0][1] > spans[2][0], "the three oracles did not overlap in time"

    parent_requests = [r for r in scripted.requests if "PARENT-TASK" in r.text]
    last = parent_requests[-1].text
    for q in "ABC":
        assert last.count(f"ANSWER-{q}") == 1
    assert last.count("[Subagent: oracle#") == 3
    assert "missing.txt" not in last  # none of the children's tool calls
    inbox = await runtime.store.inbox.list(result.session_id)
    assert sorted(i.body for i in inbox) == ["ANSWER-A", "ANSWER-B", "ANSWER-C"]
    messages = await runtime.store.messages(result.session_id)
    assert not any(m.message.meta.get("announcement") for m in messages)  # blocking: the tool result delivered


async def test_non_blocking_children_are_announced_at_next_turn(runtime: Runtime, scripted) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    oracle_marker = "you never change anything"  # in the oracle's system prompt only
    flag = runtime.project_dir / "go.flag"
    scripted.script(
        Reply(tool_calls=[_spawn("oracle", f"BG-{q}", blocking=False) for q in "AB"], when_contains="PARENT-BG"),
        *[Reply(tool_calls=[_complete(f"ORACLE-OUT-{n}")], when_contains=oracle_marker) for n in (1, 2)],
        Reply(tool_calls=[ToolCall("bash", {"command": _wait_for(flag)})], when_contains="accepted"),
        Reply(tool_calls=[_complete("done")], when_contains="go.flag"),
    )
    delivered = _inbox_items(runtime, 2)
    parent = asyncio.create_task(runtime.launcher.run_prompt("PARENT-BG: start two background oracles"))
    try:
        async with asyncio.timeout(10):
            await delivered.wait()  # both children finished while the parent's bash call still runs
    finally:
        flag.touch()
    result = await parent
    assert result.status == RunStatus.COMPLETED, result.error
    last = [r for r in scripted.requests if "PARENT-BG" in r.text][-1].text
    assert last.count("ORACLE-OUT-1") == 1 and last.count("ORACLE-OUT-2") == 1
    messages = await runtime.store.messages(result.session_id)
    announcements = [m.message for m in messages if m.message.meta.get("announcement")]
    assert len(announcements) == 2
    assert all("trust=\"untrusted\"" in a.text for a in announcements)
    # Delivered exactly once, even when asked again (a restart re-running recovery).
    for item in await runtime.store.inbox.list(result.session_id):
        run = await runtime.store.get_run(item.run_id)
        _, created = await runtime.delivery.completion(
            recipient_session_id=result.session_id, run_id=run.id, child_session_id=run.session_id,
            label=run.label, status=run.status, output="again", error=None, result=None)
        assert created is False
    assert await runtime.delivery.flush(result.session_id) == []
    assert len(await runtime.store.inbox.list(result.session_id)) == 2


async def test_child_cannot_spawn(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_spawn("oracle", "NESTED-CHILD")], when_contains="NESTED-PARENT"),
        Reply(tool_calls=[_spawn("oracle", "grandchild")], when_contains="NESTED-CHILD"),
        Reply(tool_calls=[_complete("could not nest")], when_contains="not available"),
        Reply(tool_calls=[_complete("ok")], when_contains="[Subagent: oracle#"),
    )
    result = await runtime.launcher.run_prompt("NESTED-PARENT")
    assert result.status == RunStatus.COMPLETED
    child_first = next(r for r in scripted.requests if "NESTED-CHILD" in r.text and "NESTED-PARENT" not in r.text)
    assert "spawn_subagent" not in {t["name"] for t in child_first.body["tools"]}
    refusal = next(r for r in scripted.requests if "not available" in r.text)
    assert "spawn_subagent" in refusal.text


async def test_depth_allowlist_and_profile_refusals(runtime: Runtime, scripted) -> None:
    primary = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    oracle_child = await runtime.store.create_session(profile="oracle", parent_id=primary.id)
    with pytest.raises(SpawnRefused, match="may not spawn"):
        await runtime.spawner.spawn(SpawnRequest("oracle", "x", parent_session_id=oracle_child.id))
    orchestrator = await runtime.launcher.new_session(runtime.profiles.get("orchestrator"))
    with pytest.raises(SpawnRefused, match="may spawn only"):
        await runtime.spawner.spawn(SpawnRequest("oracle", "x", parent_session_id=orchestrator.id))
    with pytest.raises(SpawnRefused, match="nosuch"):
        await runtime.spawner.spawn(SpawnRequest("nosuch", "x", parent_session_id=primary.id))
    with pytest.raises(SpawnRefused, match="context"):
        await runtime.spawner.spawn(SpawnRequest("oracle", "x", parent_session_id=primary.id,
                                                 session_context="transcript:500"))


async def test_ninth_run_queues_until_a_slot_frees(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(text="slow " * 20, chunk_size=5, chunk_delay=0.05, repeat=True,
                          tool_calls=[_complete("finished")]))
    handles = [await runtime.spawner.spawn(SpawnRequest("generic", f"job {i}", requested_by="user"))
               for i in range(9)]
    await scripted.until_requests(8)  # eight runs are streaming their one-second answers
    statuses = [(await runtime.store.get_run(h.run_id)).status for h in handles]
    assert statuses.count(RunStatus.RUNNING) == 8 and statuses[8] == RunStatus.QUEUED
    results = await asyncio.gather(*(runtime.spawner.wait(h.run_id) for h in handles))
    assert [r.status for r in results] == [RunStatus.COMPLETED] * 9
    ninth = await runtime.store.get_run(handles[8].run_id)
    first_done = min([(await runtime.store.get_run(h.run_id)).finished_at for h in handles[:8]])
    assert ninth.started_at >= first_done


async def test_child_timeout_still_delivers(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_spawn("oracle", "SLOW-CHILD", timeout=0.5)], when_contains="TIMEOUT-PARENT"),
        Reply(text="thinking " * 100, chunk_size=4, chunk_delay=0.05, when_contains="SLOW-CHILD"),
        Reply(tool_calls=[_complete("child timed out")], when_contains="Timed out"),
    )
    result = await runtime.launcher.run_prompt("TIMEOUT-PARENT")
    assert result.status == RunStatus.COMPLETED
    (item,) = await runtime.store.inbox.list(result.session_id)
    assert item.data["status"] == "timeout"
    child = await runtime.store.get_run(item.run_id)
    assert child.status == RunStatus.TIMEOUT


async def test_cancelling_parent_cancels_children_and_their_bash(runtime: Runtime, scripted, tmp_path) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    duration = unique_sleep()
    scripted.script(
        Reply(tool_calls=[_spawn("generic", "CHILD-SLEEPER")], when_contains="CANCEL-PARENT"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"sleep {duration} & wait"})],
              when_contains="CHILD-SLEEPER"),
    )
    task = asyncio.create_task(runtime.launcher.run_prompt("CANCEL-PARENT"))
    for _ in range(200):
        if running_with(duration):
            break
        await asyncio.sleep(0.05)
    [sleeper] = running_with(duration)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    runs = await runtime.store.list_runs()
    assert {r.profile: r.status for r in runs} == {"generic": RunStatus.CANCELLED}
    assert all(r.status == RunStatus.CANCELLED for r in runs)
    for _ in range(100):  # killed at once; being reaped (it is an orphan now) can take a moment on a busy box
        if gone(sleeper):
            break
        await asyncio.sleep(0.05)
    assert gone(sleeper), f"the child's `sleep 60` (pid {sleeper}) outlived the cancelled parent"


async def test_steering_reaches_child_at_next_turn(runtime: Runtime, scripted) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "go.flag"
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": _wait_for(flag)})], when_contains="STEER-ME"),
        Reply(tool_calls=[_complete("steered")], when_contains="use the blue one"),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "STEER-ME", requested_by="user"))
    try:
        await scripted.until_requests(1, finished=True)  # the child's turn is over; its bash call runs
        await runtime.spawner.steer(handle.run_id, "use the blue one", sender="user")
    finally:
        flag.touch()
    result = await runtime.spawner.wait(handle.run_id)
    assert result.status == RunStatus.COMPLETED and result.output == "steered"


async def test_graceful_cancel_asks_to_wrap_up(runtime: Runtime, scripted) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "go.flag"
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": _wait_for(flag)})], when_contains="LONG-JOB"),
        Reply(tool_calls=[_complete("partial work", )], when_contains="Wrap up now"),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "LONG-JOB", requested_by="user"))
    try:
        await scripted.until_requests(1, finished=True)  # started, and busy with its bash call
        await runtime.spawner.cancel(handle.run_id, graceful=True, grace=10)
    finally:
        flag.touch()
    result = await runtime.spawner.wait(handle.run_id)
    assert result.status == RunStatus.COMPLETED and result.output == "partial work"


async def test_a_wrap_up_that_times_out_says_so(runtime: Runtime, scripted) -> None:
    """Issue 47, item 6: a child asked to wrap up that is still busy when the grace period ends is stopped, and
    its record says that is why (it said only 'cancelled')."""
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "late.flag"
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": _wait_for(flag)})], when_contains="STUCK-JOB"))
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "STUCK-JOB", requested_by="user"))
    try:
        await scripted.until_requests(1, finished=True)  # busy with a bash call that never ends by itself
        await runtime.spawner.cancel(handle.run_id, graceful=True, grace=0.2)
        result = await runtime.spawner.wait(handle.run_id)
    finally:
        flag.touch()  # the bash loop ends whatever happened
    assert result.status == RunStatus.CANCELLED
    assert result.error == "cancelled: asked to wrap up, it had not finished after 0.2 s: stopped", result.error
    record = await runtime.store.get_run(handle.run_id)
    assert record is not None and record.error == result.error


def _git_repo(project: Path) -> None:
    git_project(project, {"util.py": "def f():\n    return 1\n"})


async def test_reviewer_gets_the_diff_and_cannot_write(runtime: Runtime, scripted) -> None:
    project = runtime.project_dir
    await asyncio.to_thread(_git_repo, project)
    (project / "util.py").write_text("def f():\n    return 2  # CHANGED-LINE\n")
    verdict = {"verdict": "request_changes", "findings": [{"severity": "major", "file": "util.py", "line": 2,
                                                           "message": "why 2?"}]}
    scripted.script(
        Reply(tool_calls=[ToolCall("request_review", {"focus": "correctness"})], when_contains="REVIEW-PARENT"),
        Reply(tool_calls=[ToolCall("write_file", {"path": "util.py", "content": "hacked"})],
              when_contains="CHANGED-LINE"),
        Reply(tool_calls=[_complete("Needs a reason for 2.", **verdict)], when_contains="is not available"),
        Reply(tool_calls=[_complete("review relayed")], when_contains="[Subagent: reviewer#"),
    )
    result = await runtime.launcher.run_prompt("REVIEW-PARENT")
    assert result.status == RunStatus.COMPLETED, result.error
    first = next(r for r in scripted.requests if "CHANGED-LINE" in r.text and "REVIEW-PARENT" not in r.text)
    assert "```diff" in first.text
    assert not {"write_file", "edit_file"} & {t["name"] for t in first.body["tools"]}
    assert "return 2  # CHANGED-LINE" in (project / "util.py").read_text()
    (item,) = await runtime.store.inbox.list(result.session_id)
    assert item.kind == "review" and item.data["result"]["artifacts"]["verdict"] == "request_changes"
    assert "request_changes" in scripted.requests[-1].text


async def test_review_diff_includes_new_untracked_files(runtime: Runtime, scripted) -> None:
    from yeetui.subagents.review import review_request

    await asyncio.to_thread(_git_repo, runtime.project_dir)
    (runtime.project_dir / "brand_new.py").write_text("NEW_MODULE = True\n")
    (runtime.project_dir / ".gitignore").write_text("ignored.txt\n")
    (runtime.project_dir / "ignored.txt").write_text("SECRET_IGNORED\n")
    parent = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    request = await review_request(runtime.project_dir, parent_session_id=parent.id)
    assert "brand_new.py" in request.prompt_suffix and "NEW_MODULE = True" in request.prompt_suffix
    assert "SECRET_IGNORED" not in request.prompt_suffix


async def test_a_finished_child_followed_up_answers_with_its_context_and_is_delivered_again(
        runtime: Runtime, scripted) -> None:
    """Issue 24, item 10: a message for a subagent that has ended is a new turn of it, in its own session
    (so it has its conversation), delivered to its parent like its first answer."""
    scripted.script(
        Reply(tool_calls=[_complete("FIRST-ANSWER: the cache")], when_contains="FIRST-TASK"),
        Reply(tool_calls=[_complete("SECOND-ANSWER: and the lock")], when_contains="AND-THEN"),
    )
    primary = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "FIRST-TASK: why slow?", parent_session_id=primary.id,
                                                      requested_by="user", blocking=True))
    assert handle.result.status == RunStatus.COMPLETED
    again = await runtime.spawner.follow_up(handle.session_id, "AND-THEN what else?")
    assert again.session_id == handle.session_id and again.label == handle.label and again.run_id != handle.run_id
    result = await runtime.spawner.wait(again.run_id)
    assert result.status == RunStatus.COMPLETED and result.output == "SECOND-ANSWER: and the lock"
    followed = scripted.requests[-1].text  # the oracle was asked with its whole conversation
    assert "FIRST-TASK" in followed and "FIRST-ANSWER" in followed and "AND-THEN" in followed
    items = await runtime.store.inbox.list(primary.id)
    assert sorted(i.body for i in items) == ["FIRST-ANSWER: the cache", "SECOND-ANSWER: and the lock"]
    announced = [m.message.text for m in await runtime.store.messages(primary.id)
                 if m.message.meta.get("announcement")]
    assert any("SECOND-ANSWER" in text for text in announced)

    with pytest.raises(SpawnRefused, match="top-level"):
        await runtime.spawner.follow_up(primary.id, "hello")


async def test_stopping_a_child_its_parent_waits_for_ends_only_the_child(runtime: Runtime, scripted) -> None:
    """The parent's blocking spawn hears its child was cancelled and goes on; its own turn is not cancelled
    with the child (an ACP client's cancel of a child session, or the user stopping it in the ledger)."""
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "late.flag"
    scripted.script(
        Reply(tool_calls=[_spawn("generic", "CHILD-WAITS", blocking=True)], when_contains="PARENT-BLOCKS"),
        Reply(tool_calls=[ToolCall("bash", {"command": _wait_for(flag)})], when_contains="CHILD-WAITS"),
        Reply(tool_calls=[_complete("parent went on")], when_contains="cancel"),
    )
    from yeetui.events import RunRegistered, ToolCallStarted

    registered: list[str] = []
    waiting = asyncio.Event()
    runtime.bus.add_listener(lambda e: registered.append(e.run_id)
                             if isinstance(e, RunRegistered) and e.parent_session_id else None)
    runtime.bus.add_listener(lambda e: waiting.set() if isinstance(e, ToolCallStarted) and e.name == "bash" else None)
    parent = asyncio.create_task(runtime.launcher.run_prompt("PARENT-BLOCKS: ask a child and wait"))
    await asyncio.wait_for(waiting.wait(), 20)  # the child runs its command; the parent waits on the child
    await runtime.spawner.cancel(registered[0], graceful=False)
    result = await asyncio.wait_for(parent, 20)
    assert result.status == RunStatus.COMPLETED and result.output == "parent went on", result.error
    child = await runtime.store.get_run(registered[0])
    assert child is not None and child.status == RunStatus.CANCELLED


async def test_an_external_agents_subagent_is_not_followed_up_without_its_context(runtime: Runtime) -> None:
    """A node an external agent's subagent is (`options.external`) has no context yeetui could continue from:
    a follow-up is refused, saying whom to ask instead."""
    parent = await runtime.store.create_session(profile="generic")
    child = await runtime.store.create_session(profile="generic", parent_id=parent.id)
    await runtime.store.create_run(session_id=child.id, profile="generic", model=None, prompt="p",
                                   status=RunStatus.COMPLETED, label="claude-code#1/claude-code-sub#1",
                                   options={"parent_session_id": parent.id, "external": True})
    with pytest.raises(SpawnRefused, match="subagent of an external agent"):
        await runtime.spawner.follow_up(child.id, "and then?")


async def test_review_of_a_merge_commit_reviews_what_it_brought_in(runtime: Runtime, scripted) -> None:
    """Issue 47, item 6: `/review <merge>` had an empty diff (git's combined diff of a clean merge) and was
    refused as nothing to review; it reviews the merge against its first parent."""
    from yeetui.subagents.review import review_request

    project = runtime.project_dir
    await asyncio.to_thread(_git_repo, project)

    def branch_and_merge() -> None:
        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
        git("checkout", "-qb", "feature")
        (project / "feature.py").write_text("FEATURE_LINE = 1\n")
        git("add", ".")
        git("commit", "-qm", "feature")
        git("checkout", "-q", "-")
        (project / "other.py").write_text("OTHER = 2\n")
        git("add", ".")
        git("commit", "-qm", "other")
        git("merge", "-q", "--no-ff", "--no-edit", "feature")

    await asyncio.to_thread(branch_and_merge)
    parent = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    request = await review_request(project, parent_session_id=parent.id, target="HEAD")
    assert "FEATURE_LINE = 1" in request.prompt_suffix and "OTHER = 2" not in request.prompt_suffix
