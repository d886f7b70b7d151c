"""The subagent engine's promises under races and across processes: the children cap and unique labels are
decided atomically in the store, a resumed child reaches its parent, and crash recovery tells the parent
once whichever yeetui command finds the dead run first."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.messages import Message
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runs.spec import RunOptions
from yeetui.runtime import Runtime
from yeetui.store import Store

ROOT = Path(__file__).resolve().parents[3]


def _spawn(profile: str, prompt: str, **kw) -> ToolCall:
    return ToolCall("spawn_subagent", {"profile": profile, "prompt": prompt, **kw})


def _complete(output: str) -> ToolCall:
    return ToolCall("complete", {"output": output})


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def test_six_parallel_spawns_in_one_turn_get_five_children(runtime: Runtime, scripted, tmp_path: Path) -> None:
    """Six `spawn_subagent` calls in one message run concurrently; the sixth must be refused, not slip in
    between another's limit check and its registration."""
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "release"  # where the sandboxed command sees it
    scripted.script(  # the parent's replies first: its later requests hold every child's prompt too
        Reply(tool_calls=[_complete("spawned what I could")], when_contains="already has 5 active", repeat=True),
        Reply(tool_calls=[_spawn("generic", f"CAPPED-{i}", blocking=False) for i in range(6)],
              when_contains="CAP-PARENT"),
        *[Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {flag} ]; do sleep 0.02; done"})],
                when_contains=f"CAPPED-{i}") for i in range(6)],
        *[Reply(tool_calls=[_complete(f"done {i}")], when_contains=f"CAPPED-{i}") for i in range(6)],
    )
    result = await runtime.launcher.run_prompt("CAP-PARENT: six helpers")
    assert result.status == RunStatus.COMPLETED, result.error
    children = [r for r in await runtime.store.list_runs() if r.session_id != result.session_id]
    assert len(children) == 5
    flag.touch()
    for child in children:
        await runtime.spawner.wait(child.id, timeout=30)
    assert len({c.label for c in children}) == 5


async def test_labels_are_unique_when_spawned_in_one_turn(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("ok")], when_contains="[Subagent: oracle#"),
        Reply(tool_calls=[_spawn("oracle", f"LABEL-{q}") for q in "ABC"], when_contains="LABEL-PARENT"),
        *[Reply(tool_calls=[_complete(f"answer {q}")], when_contains=f"LABEL-{q}", chunk_delay=0.01) for q in "ABC"],
    )
    result = await runtime.launcher.run_prompt("LABEL-PARENT")
    assert result.status == RunStatus.COMPLETED, result.error
    labels = sorted(r.label for r in await runtime.store.list_runs() if r.profile == "oracle")
    assert labels == ["oracle#1", "oracle#2", "oracle#3"]
    # /cancel oracle#2, the announcements and `agents list` name one run each: the numbers go on.
    assert await runtime.store.allocate_label("oracle") == "oracle#4"


_RACER = """
import asyncio, json, sys
from yeetui.errors import ChildLimitReached
from yeetui.store import Store

async def main(db, parent, n):
    store = await Store.open(db)
    made = []
    try:
        for _ in range(n):
            child = await store.create_session(profile="oracle", parent_id=parent)
            try:
                run = await store.create_run(session_id=child.id, profile="oracle", model="x/y", prompt="p",
                                             options={"parent_session_id": parent}, max_children=5)
                made.append(run.label)
            except ChildLimitReached:
                pass
    finally:
        await store.close()
    print(json.dumps(made))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


async def test_children_cap_and_labels_hold_across_processes(tmp_path: Path) -> None:
    """Four processes race to give one parent session 12 children: exactly 5 are made, all labels distinct."""
    db = paths.database_path()
    store = await Store.open(db)
    parent = await store.create_session(profile="generic")
    await store.close()
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", _RACER, str(db), parent.id, "3", cwd=ROOT,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
             for _ in range(4)]
    outputs = await asyncio.gather(*(p.communicate() for p in procs))
    assert all(p.returncode == 0 for p in procs), [err.decode() for _, err in outputs]
    labels = [label for out, _ in outputs for label in json.loads(out)]
    assert len(labels) == 5 and len(set(labels)) == 5
    assert sorted(labels) == [f"oracle#{i}" for i in range(1, 6)]


async def _crashed_child(project: Path, *, blocking: bool) -> tuple[str, str]:
    """A parent session and its child run left `running` by a process that died (as after kill -9)."""
    store = await Store.open(paths.database_path())
    try:
        parent = await store.create_session(profile="generic", cwd=str(project))
        child = await store.create_session(profile="oracle", parent_id=parent.id, cwd=str(project))
        options = RunOptions(parent_session_id=parent.id, blocking=blocking, timeout=60).to_json()
        run = await store.create_run(session_id=child.id, profile="oracle", model="anthropic/claude-opus-4-5",
                                     prompt="CRASHED-CHILD: why?", options=options, pid=_dead_pid())
        await store.update_run(run.id, status=RunStatus.RUNNING, pid=run.pid)
        await store.append_message(child.id, Message.user(run.prompt), run_id=run.id)  # committed before the kill
        return parent.id, run.id
    finally:
        await store.close()


async def _announcements(runtime: Runtime, session_id: str) -> list[str]:
    return [m.message.text for m in await runtime.store.messages(session_id) if m.message.meta.get("announcement")]


async def test_resumed_blocking_child_reaches_its_parent(scripted, tmp_path: Path) -> None:
    """The parent of a crashed blocking spawn hears that its child was interrupted, and again when a resume
    finishes it: the resuming process waits for the child, but nobody is answered inline any more."""
    project = tmp_path / "project"
    project.mkdir()
    parent, child = await _crashed_child(project, blocking=True)
    scripted.script(Reply(tool_calls=[_complete("RESUMED-ANSWER")], when_contains="CRASHED-CHILD"))
    runtime = await Runtime.open(cwd=project, provider_factory=scripted.provider_factory)
    try:
        told = await _announcements(runtime, parent)
        assert len(told) == 1 and "Interrupted" in told[0]
        handle = await runtime.spawner.start_existing(child, blocking=True, resume=True)
        assert handle.result is not None and handle.result.status == RunStatus.COMPLETED
        told = await _announcements(runtime, parent)
        assert len(told) == 2 and "RESUMED-ANSWER" in told[1]
        assert len(await runtime.store.inbox.list(parent)) == 2
    finally:
        await runtime.close()


async def test_recovery_tells_the_parent_once_whichever_command_runs_first(scripted, tmp_path: Path) -> None:
    """`yeetui agents list` finds the dead run first; the parent still hears of it, exactly once, and a
    later runtime (the TUI, `agents resume`) does not tell it again."""
    project = tmp_path / "project"
    project.mkdir()
    parent, child = await _crashed_child(project, blocking=False)
    for command in (["agents", "list", "--all"], ["sessions", "list"], ["agents", "status", child]):
        done = await asyncio.to_thread(run_yeetui, *command, cwd=project)
        assert done.returncode == 0, done.stderr
    runtime = await Runtime.open(cwd=project, provider_factory=scripted.provider_factory)
    try:
        assert (await runtime.store.get_run(child)).status == RunStatus.INTERRUPTED
        told = await _announcements(runtime, parent)
        assert len(told) == 1 and "Interrupted" in told[0]
    finally:
        await runtime.close()


async def test_a_dead_pane_child_is_recovered_mid_run_without_touching_its_live_siblings(
        runtime: Runtime, scripted) -> None:
    """Kill -9 of a `mode: tmux` child's worker while an in-process sibling runs: following the pane finds
    its worker gone and recovers it mid-run. Only that child ends interrupted; the parent and the sibling,
    live in this process, go on; no announcement lands between the parent's tool call and its result; the
    sibling's result reaches the parent exactly once."""
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "release"
    scripted.script(  # the parent's later request holds the sibling's task too: its reply is matched first
        Reply(tool_calls=[_complete("PARENT-DONE")], when_contains="SIBLING-RESULT", repeat=True),
        Reply(tool_calls=[_spawn("generic", "SIBLING-TASK: wait for the flag")], when_contains="PANE-PARENT"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {flag} ]; do sleep 0.02; done"})],
              when_contains="SIBLING-TASK"),
        Reply(tool_calls=[_complete("SIBLING-RESULT")], when_contains="SIBLING-TASK"),
    )
    parent_task = asyncio.create_task(runtime.launcher.run_prompt("PANE-PARENT: delegate"))
    try:
        await _recover_pane_child_mid_run(runtime, scripted, parent_task, flag)
    finally:
        parent_task.cancel()
        await asyncio.gather(parent_task, return_exceptions=True)


async def _recover_pane_child_mid_run(runtime: Runtime, scripted, parent_task: asyncio.Task, flag: Path) -> None:
    await scripted.until_requests(2, timeout=30, finished=True)  # the sibling waits for the flag in its bash
    deadline = asyncio.get_running_loop().time() + 30
    while True:  # its bash call is asked about first (allowed at once, headless): running again once it runs
        runs = await runtime.store.list_runs()
        (parent_run,) = [r for r in runs if not RunOptions.of(r).parent_session_id]
        (sibling,) = [r for r in runs if r.id != parent_run.id]
        if sibling.status == RunStatus.RUNNING:
            break
        assert sibling.status == RunStatus.WAITING_PERMISSION, sibling.status
        assert asyncio.get_running_loop().time() < deadline, "the sibling never ran its command"
        await asyncio.sleep(0.02)

    worker = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
    pane_session = await runtime.store.create_session(profile="generic", parent_id=parent_run.session_id)
    options = RunOptions(parent_session_id=parent_run.session_id, timeout=60,
                         pane={"server": "s", "window": "@1", "pane": "%1"}).to_json()
    pane_run = await runtime.store.create_run(session_id=pane_session.id, profile="generic", model=None,
                                              prompt="PANE-CHILD", options=options, pid=worker.pid,
                                              status=RunStatus.RUNNING)
    elsewhere = runtime.spawner.elsewhere
    elsewhere.follow(pane_run.id, parent_run.session_id)
    worker.kill()
    await worker.wait()
    deadline = asyncio.get_running_loop().time() + 30
    while elsewhere.following(pane_run.id):  # it follows the pane until it has recovered the run
        assert asyncio.get_running_loop().time() < deadline, "the dead pane child was not recovered"
        await asyncio.sleep(0.02)

    assert (await runtime.store.get_run(pane_run.id)).status == RunStatus.INTERRUPTED
    for live in (parent_run, sibling):
        assert (await runtime.store.get_run(live.id)).status == RunStatus.RUNNING
    await asyncio.to_thread(flag.touch)
    result = await asyncio.wait_for(parent_task, 30)
    assert result.status == RunStatus.COMPLETED, result.error
    assert (await runtime.store.get_run(sibling.id)).status == RunStatus.COMPLETED

    transcript = [m.message for m in await runtime.store.messages(parent_run.session_id)]
    for before, after in itertools.pairwise(transcript):
        if before.role == "assistant" and before.tool_calls:
            assert after.role == "tool", f"{after.text!r} came between a tool call and its result"
    announced = [m.meta.get("run_id") for m in transcript if m.meta.get("announcement")]
    assert announced == [pane_run.id]
    assert sum(json.dumps(m.model_dump()).count("SIBLING-RESULT") for m in transcript) == 1
