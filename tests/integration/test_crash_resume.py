"""`kill -9` of `yeetui run` mid-stream and mid-tool: nothing committed is lost, the run shows
`interrupted`, and resuming produces a history the provider accepts."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import query_store, result_text, run_yeetui, start_yeetui, tool_results, yeetui_env
from tests.integration.zygote import Forked
from tests.waiting import until
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.runtime import Runtime


def _start(project: Path, *args: str) -> Forked:
    return start_yeetui("run", "--json", *args, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _only_session(project: Path) -> dict:
    listed = run_yeetui("sessions", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    (session,) = json.loads(listed.stdout)
    return session


def test_kill_mid_stream_keeps_committed_messages_and_resumes(fake_env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    long_text = "".join(f"word{i} " for i in range(400))
    fake_env.script(Reply(text=long_text, chunk_size=8, chunk_delay=0.02))
    proc = _start(project, "tell me a long story")
    seen: list[str] = []

    def streamed_enough() -> bool:
        line = proc.stdout.readline()
        if line and '"text_delta"' in line:
            seen.append(json.loads(line)["text"])
        return len("".join(seen)) > 200

    until("enough of the answer streamed", streamed_enough)
    time.sleep(0.6)  # past at least one checkpoint interval
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    session = _only_session(project)
    assert session["status"] == "interrupted"
    shown = json.loads(run_yeetui("sessions", "show", session["id"], "--json", cwd=project).stdout)
    user, assistant = shown["messages"]
    assert user["role"] == "user" and user["parts"][0]["text"] == "tell me a long story"
    partial_text = assistant["parts"][0]["text"]
    assert len(partial_text) >= 200 and long_text.startswith(partial_text)

    fake_env.script(Reply.tool("complete", output="resumed fine"))
    resumed = run_yeetui("run", "--json", "--resume", session["id"][:8], "please finish", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.result["session_id"] == session["id"]
    sent = fake_env.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert json.dumps(sent[1]).count("word0 ") == 1


def test_kill_mid_tool_gets_synthetic_result_on_resume(fake_env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    marker = project / "started"
    fake_env.script(Reply(text="Running it.", tool_calls=[
        ToolCall("bash", {"command": f"touch {marker} && sleep 30"}, id="toolu_sleepy")]))
    proc = _start(project, "--yes", "run the slow thing")
    until("the marker file", marker.exists)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    session = _only_session(project)
    assert session["status"] == "interrupted"
    fake_env.script(Reply.tool("complete", output="ok after crash"))
    resumed = run_yeetui("run", "--json", "--continue", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    body = fake_env.requests[-1].body
    (synthetic,) = tool_results(body)
    assert synthetic["tool_use_id"] == "toolu_sleepy"
    assert synthetic.get("is_error") is True and "Interrupted" in result_text(synthetic)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "user"] or roles == ["user", "assistant", "user"]


_PARENT_HOST = """
import asyncio, sys
from pathlib import Path
from yeetui.runtime import Runtime

async def main(project):
    runtime = await Runtime.open(cwd=Path(project), spawner_limits={"max_concurrent": 1})
    await runtime.launcher.run_prompt("QUEUE-PARENT: delegate")

asyncio.run(main(sys.argv[1]))
"""




async def test_a_child_queued_when_its_parent_was_killed_resumes_with_its_task(
        fake_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One run slot: the parent holds it while it streams, so the child it spawned waits for a slot. kill -9
    of the parent's process; recovery ends the child interrupted; resuming it sends its original task (it
    never started, so nothing of it was in its transcript), not a bare "Continue where you left off."."""
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0.01")
    project = tmp_path / "project"
    project.mkdir()
    child = _kill_parent_of_a_queued_child(fake_env, project)
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "CHILD-DONE"})], when_contains="QUEUED-CHILD"))
    runtime = await Runtime.open(cwd=project)  # recovers: the child's parent process is gone
    try:
        assert (await runtime.store.get_run(child["id"])).status == RunStatus.INTERRUPTED
        handle = await runtime.spawner.start_existing(child["id"], blocking=True, resume=True)
        sent = json.dumps(fake_env.requests[-1].body["messages"])
        assert "QUEUED-CHILD: count to 3" in sent and "Continue where you left off" not in sent
        assert handle.result is not None and handle.result.status == RunStatus.COMPLETED, handle.result
        transcript = [m.message for m in await runtime.store.messages(child["session_id"])]
    finally:
        await runtime.close()
    assert transcript[0].role == "user" and "QUEUED-CHILD: count to 3" in transcript[0].text


def _kill_parent_of_a_queued_child(fake_env, project: Path) -> sqlite3.Row:
    """The parent's process (one run slot, which its run holds) spawns a child and streams on; killed -9 while
    the child waits for the slot. The child's run row."""
    db = paths.database_path()
    fake_env.script(  # the parent's second request also holds the child's task: matched first
        Reply(text="PARENTSTREAM " * 800, chunk_size=6, chunk_delay=0.05, when_contains="accepted"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "generic", "prompt": "QUEUED-CHILD: count to 3",
                                                      "blocking": False})], when_contains="QUEUE-PARENT"))
    host = subprocess.Popen([sys.executable, "-c", _PARENT_HOST, str(project)], cwd=project, env=yeetui_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        until("the child to wait for a slot", lambda: bool(query_store(
            db.parent, "SELECT 1 FROM agent_runs r JOIN run_slots s ON s.run_id = r.id"
                       " WHERE r.prompt LIKE '%QUEUED-CHILD%' AND r.status = 'queued'"
                       " AND s.state = 'waiting'")) or host.poll() is not None)
        assert host.poll() is None, host.stderr.read().decode() if host.stderr else ""
        os.kill(host.pid, signal.SIGKILL)
        host.wait(timeout=10)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    (child,) = query_store(db.parent, "SELECT id, session_id FROM agent_runs WHERE prompt LIKE '%QUEUED-CHILD%'")
    return child
