"""A blocking spawn's child in a tmux pane, its ending delivered exactly once whichever process dies: the real
binary for the parent and the pane's worker, real tmux, the real store. Each crash is forced at a point read
from the store (the child's command running), never guessed.

- The parent's process is killed while it waits: the child's worker records the ending without marking it
  delivered, so the parent resumed with `yeetui agents resume` is told it once — whether the child ended
  before the resume or ends while the resumed parent runs.
- The child's worker is killed while its parent waits: the interruption goes back once, as the spawn's tool
  result, and is not announced to the parent a second time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.e2e.tmux import tmux_path
from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import (
    ORACLE,
    query_store,
    result_text,
    run_yeetui,
    start_yeetui,
    stored_pid,
    tool_results,
)
from tests.processes import gone
from tests.waiting import until

pytestmark = pytest.mark.skipif(tmux_path() is None, reason="tmux is not installed: tmux mode cannot be tested")









def _run(data: Path, profile: str) -> sqlite3.Row | None:
    rows = query_store(data, "SELECT * FROM agent_runs WHERE profile = ? ORDER BY created_at", profile)
    return rows[0] if rows else None


def _command_running(data: Path) -> bool:
    """The oracle's bash command runs (its worker recorded its process group): its parent waits inline."""
    child = _run(data, "oracle")
    return child is not None and child["status"] == "running" and bool(
        query_store(data, "SELECT 1 FROM tool_processes WHERE run_id = ?", child["id"]))


def _announcements(data: Path, session_id: str, run_id: str) -> list[str]:
    """The announcements of `run_id` in the session's conversation, as their text."""
    found = []
    for row in query_store(data, "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", session_id):
        message = json.loads(row["body"])
        meta = message.get("meta") or {}
        if meta.get("announcement") and meta.get("run_id") == run_id:
            found.append("".join(part.get("text", "") for part in message.get("parts", [])))
    return found


def _spawn(prompt: str) -> ToolCall:
    return ToolCall("spawn_subagent", {"profile": "oracle", "prompt": prompt, "mode": "tmux", "blocking": True})


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # a stand-in ends as its worker did
        os.kill(pid, signal.SIGKILL)


def _parent_killed_while_it_waits(fake_env, project: Path, data: Path, tag: str,
                                  resumed: list[Reply]) -> tuple[str, Path]:
    """`agents start` runs the parent (`tag`) in a detached worker; it spawns an oracle in a tmux pane and waits
    for it, and its process is killed -9 while the oracle's command runs (waiting for the file returned). The
    parent's run id and that file. `resumed`: the resumed parent's replies (its first request took the spawn's,
    so they are matched before the fallback that says the parent was never told)."""
    release = project / f"release-{tag}"
    fake_env.script(
        Reply(tool_calls=[_spawn(f"PANE-Q-{tag}: think until released")], when_contains=f"PARENT-{tag}"),
        *resumed,
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {release} ]; do sleep 0.05; done"})],
              when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": f"PANE-ANSWER-{tag}"})], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "NEVER-TOLD"})], when_contains=f"PARENT-{tag}"),
    )
    started = run_yeetui("agents", "start", "generic", f"PARENT-{tag}: ask an oracle and wait", "--yes", "--json",
                         cwd=project)
    assert started.returncode == 0, started.stderr
    parent_id = json.loads(started.stdout)["run_id"]
    killed = [json.loads(started.stdout)["pid"]]
    try:
        until("the oracle's command to run while its parent waits", lambda: _command_running(data))
        lives_in = stored_pid(parent_id)  # forked warm: not the process `agents start` started
        assert lives_in is not None
        killed.insert(0, lives_in)
    finally:
        for pid in killed:
            _kill(pid)
    until("the parent's process to be gone", lambda: all(gone(pid) for pid in killed), timeout=10)
    return parent_id, release


def _child_completed(data: Path) -> sqlite3.Row:
    """Wait for the oracle to complete in its pane and its worker to exit; its run row."""
    def completed() -> sqlite3.Row | None:
        child = _run(data, "oracle")
        return child if child is not None and child["status"] == "completed" else None

    until("the oracle to complete in its pane", completed)
    child = completed()
    assert child is not None and child["pid"] is not None
    until("the oracle's worker to exit", lambda: gone(child["pid"]), timeout=30)
    return child


def _told_once(fake_env, data: Path, parent_id: str, child: sqlite3.Row, tag: str) -> None:
    """The parent's conversation holds the oracle's answer once, announced, and so does the resumed parent's
    last request."""
    (parent,) = query_store(data, "SELECT session_id FROM agent_runs WHERE id = ?", parent_id)
    told = _announcements(data, parent["session_id"], child["id"])
    assert len(told) == 1 and f"PANE-ANSWER-{tag}" in told[0], told
    last = [r for r in fake_env.requests if f"PARENT-{tag}" in r.text and ORACLE not in r.text][-1]
    assert last.text.count(f"PANE-ANSWER-{tag}") == 1


def test_a_blocking_pane_childs_result_reaches_its_parent_resumed_after_its_process_died(
        fake_env, project: Path, data: Path) -> None:
    """The parent's process is killed while it waits for its oracle; the oracle then completes in its pane and
    its worker exits. `yeetui agents resume` of the parent: the parent is told the oracle's answer once (it
    used to be marked delivered by the oracle's own worker, so the parent never heard of it)."""
    parent_id, release = _parent_killed_while_it_waits(fake_env, project, data, "8", [
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-8-DONE"})], when_contains="PANE-ANSWER-8")])
    release.touch()
    child = _child_completed(data)
    resumed = run_yeetui("agents", "resume", parent_id, "--wait", "--json", cwd=project, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "PARENT-8-DONE"
    _told_once(fake_env, data, parent_id, child, "8")


def test_a_blocking_pane_child_ending_while_its_resumed_parent_runs_is_told_at_its_next_turn(
        fake_env, project: Path, data: Path) -> None:
    """As above, but the parent is resumed while the oracle still runs: the resumed parent runs a command of its
    own; the oracle completes meanwhile, and the parent hears its answer at its next turn, once."""
    go_on = project / "parent-goes-on"
    parent_id, release = _parent_killed_while_it_waits(fake_env, project, data, "8B", [
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-8B-DONE"})], when_contains="PANE-ANSWER-8B"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {go_on} ]; do sleep 0.05; done"})],
              when_contains="PARENT-8B")])
    resumed = start_yeetui("agents", "resume", parent_id, "--wait", "--json", "--yes", cwd=project,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        until("the resumed parent's command to run", lambda: query_store(
            data, "SELECT 1 FROM tool_processes WHERE run_id = ?", parent_id))
        release.touch()
        child = _child_completed(data)
        go_on.touch()
        out, err = resumed.communicate(timeout=120)
    finally:
        if resumed.poll() is None:
            resumed.kill()
            resumed.wait()
    assert resumed.returncode == 0, err
    assert json.loads(out)["output"] == "PARENT-8B-DONE"
    _told_once(fake_env, data, parent_id, child, "8B")


def test_a_killed_pane_worker_is_reported_once_as_its_blocking_spawns_result(
        fake_env, project: Path, data: Path) -> None:
    """`yeetui run` spawns an oracle in a tmux pane and waits for it; the oracle's worker is killed -9 while its
    command runs. The parent hears "Interrupted" once — as the spawn's tool result — and no announcement of
    the same ending follows at its next turn."""
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q9: think for ever")], when_contains="PARENT-9"),
        Reply(tool_calls=[ToolCall("bash", {"command": "sleep 300"})], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-9-DONE"})], when_contains="PARENT-9"),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-9: ask an oracle and wait", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        until("the oracle's command to run while its parent waits", lambda: _command_running(data))
        child = _run(data, "oracle")
        assert child is not None
        worker = stored_pid(child["id"])
        assert worker is not None and worker != parent.pid
        _kill(worker)
        out, err = parent.communicate(timeout=120)
        assert parent.returncode == 0, err
        assert json.loads(out.splitlines()[-1])["output"] == "PARENT-9-DONE"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    last = [r for r in fake_env.requests if "PARENT-9" in r.text and ORACLE not in r.text][-1]
    (spawned,) = [block for block in tool_results(last.body) if "[Subagent: oracle#1]" in result_text(block)]
    assert "Interrupted" in result_text(spawned)
    told = last.text.count("[Subagent: oracle#1] Interrupted")
    assert told == 1, f"the parent's next request tells the interruption {told} times"
    (run,) = query_store(data, "SELECT session_id FROM agent_runs WHERE profile = 'generic'")
    assert _announcements(data, run["session_id"], child["id"]) == []
