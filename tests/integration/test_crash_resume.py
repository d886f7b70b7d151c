"""`kill -9` of `yeetui run` mid-stream and mid-tool: nothing committed is lost, the run shows
`interrupted`, and resuming produces a history the provider accepts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, run_yeetui, tool_results, yeetui_argv, yeetui_env


def _start(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(yeetui_argv("run", "--json", *args), cwd=project, env=yeetui_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


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

    _wait_for(streamed_enough)
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
    _wait_for(marker.exists)
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
