"""The crash matrix: kill -9 of the process that runs a parent and its child, at three points of the child's
life, then every order of the recovery commands.

Hosts: `yeetui run` (the parent is the primary, the child runs in-process beside it), a detached worker
(`yeetui agents start`, whose run spawns the child inside the worker) and the TUI (the real app in tmux). Each is
forked from the test worker's warm server (`tests/integration/zygote.py`) and killed by its own pid; the TUI's
start-up from a fresh interpreter is the end-to-end tests' part (tests/e2e).
Points: (a) the child mid-stream, (b) the child mid-tool (a `bash` command with a process group of its
own), (c) the child completed while its parent was mid-turn, so its announcement was recorded and not yet
made. Each cell crashes once; its data dir is then copied for each order of `agents list` (any command
that recovers), `agents resume <child>` and resuming the parent, run by the real CLI entry point, and for
one more that starts with the TUI (the app started again, then quit).

After every order: the parent's transcript holds exactly one announcement per ending of the child (its
interruption, then the resumed child's completion; or its one completion), every request the provider got
pairs each tool_use with a tool_result (the fake server rejects any other), and no process of the killed
runs survives — the killed host, its worker, the child's command and its children (the command dies with its
host: its group's watcher ends it).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.tmux import Tmux, tmux_path
from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import query_store, run_yeetui, start_yeetui, yeetui_env
from tests.integration.zygote import ZYGOTE, Forked
from tests.processes import gone, group_members
from tests.waiting import until
from yeetui.cli import main as yeetui_main

HOSTS = ("run", "worker", "tui")
POINTS = ("mid_stream", "mid_tool", "undelivered")
RECOVERY = ("list", "child", "parent")

# Its bash runs unconfined (`off`), the case where a killed yeetui leaves the command running and only the
# recovery ends it: under bubblewrap the command dies with its yeetui (--die-with-parent), see
# test_leftover_processes.
CHILD_PROFILE = """\
---
description: A subagent for the crash tests; runs commands without asking.
capabilities: [subtask]
permissions:
  bash: allow
workspace:
  bash_sandbox: "off"
exit_tools: [complete]
---
You do the task you are given.
"""


@dataclass
class Crashed:
    """What a cell left behind: the data dir as the kill left it, and who was who."""

    data: Path
    parent_session: str
    parent_run: str
    child_run: str
    killed: list[int]
    command_group: int | None


def _db(data: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{data / 'yeetui.db'}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    return conn






def _child_run(data: Path) -> sqlite3.Row | None:
    rows = query_store(data, "SELECT * FROM agent_runs WHERE profile = 'crashkid'")
    return rows[0] if rows else None


def _script(fake, point: str, pid_file: Path) -> None:
    """Parent: spawn the child without waiting, then stream a long answer (mid-turn while the child works).
    Child: (a) a long stream, (b) a command that sleeps, (c) completes — answered only after the parent's
    second request arrived, so the parent is mid-turn when the completion is recorded."""
    child = {
        "mid_stream": Reply(text="CHILDSTREAM " * 600, chunk_size=6, chunk_delay=0.05, when_contains="CHILD-TASK"),
        "mid_tool": Reply(tool_calls=[ToolCall("bash", {"command": f"echo $$ > {pid_file}; sleep 300 & sleep 301"})],
                          when_contains="CHILD-TASK"),
        "undelivered": Reply(tool_calls=[ToolCall("complete", {"output": "CHILD-RESULT"})],
                             when_contains="CHILD-TASK", after_requests=3),
    }[point]
    fake.script(
        # Matched first: the parent's second request also holds the parent's and the child's tasks.
        Reply(text="PARENTSTREAM " * 800, chunk_size=6, chunk_delay=0.05, when_contains="accepted"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "crashkid", "prompt": "CHILD-TASK: do it",
                                                      "blocking": False})], when_contains="PARENT-TASK"),
        child,
    )


def _killed_at(point: str, data: Path, pid_file: Path) -> Callable[[], bool]:
    """The moment to kill, read from the store (and the command's pid file), never guessed."""

    def child_streamed() -> bool:
        run = _child_run(data)
        return run is not None and bool(query_store(
            data, "SELECT 1 FROM messages WHERE session_id = ? AND partial = 1 AND body LIKE '%CHILDSTREAM%'",
            run["session_id"]))

    def command_running() -> bool:
        return pid_file.exists() and pid_file.read_text().strip().isdigit() and len(
            group_members(int(pid_file.read_text()))) >= 3  # bash, sleep 300, sleep 301

    def completed_not_announced() -> bool:
        run = _child_run(data)
        if run is None or run["status"] != "completed":
            return False
        items = query_store(data, "SELECT data FROM inbox_items WHERE run_id = ?", run["id"])
        announced = [row for row in query_store(data, "SELECT body FROM messages WHERE body LIKE '%announcement%'")
                     if (json.loads(row["body"]).get("meta") or {}).get("run_id") == run["id"]]
        return bool(items) and not announced

    return {"mid_stream": child_streamed, "mid_tool": command_running, "undelivered": completed_not_announced}[point]


def _crash(host: str, point: str, fake, project: Path, tmp_path: Path) -> Crashed:
    data = Path(os.environ["YEETUI_DATA_DIR"])
    pid_file = tmp_path / "command.pid"
    _script(fake, point, pid_file)
    killed: list[int] = []
    tmux: Tmux | None = None
    proc: Forked | None = None
    try:
        if host == "run":
            proc = start_yeetui("run", "--json", "PARENT-TASK: delegate", cwd=project, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
            killed.append(proc.pid)
        elif host == "worker":
            started = run_yeetui("agents", "start", "generic", "PARENT-TASK: delegate", "--json", cwd=project)
            assert started.returncode == 0, started.stderr
            killed.append(json.loads(started.stdout)["pid"])
        else:
            tmux = Tmux(110, 32)
            tmux.start(ZYGOTE.argv(), cwd=project, env=yeetui_env())
            tmux.wait_for("Message yeetui", timeout=30)
            tmux.send("PARENT-TASK: delegate", "Enter")
            killed.append(tmux.pid)
        until(f"{host}: {point}", _killed_at(point, data, pid_file))
        if host != "run":  # the process the run lives in: forked warm, it is not the one `agents start` started,
            # nor the stand-in in the tmux pane (`ZYGOTE.argv`)
            (lives_in,) = query_store(data, "SELECT r.pid FROM agent_runs r JOIN sessions s ON s.id = r.session_id"
                                       " WHERE s.parent_id IS NULL")
            killed.insert(0, lives_in["pid"])
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):  # a stand-in ends as its worker did
                os.kill(pid, signal.SIGKILL)
        if proc is not None:
            proc.wait(timeout=10)
        until("the killed process is gone", lambda: all(gone(pid) for pid in killed), timeout=10)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        if tmux is not None:
            tmux.kill()
    child = _child_run(data)
    assert child is not None
    (parent,) = query_store(data, "SELECT r.* FROM agent_runs r JOIN sessions s ON s.id = r.session_id"
                             " WHERE s.parent_id IS NULL")
    if point == "mid_tool":  # the command's watcher ends it with its killed host, before any recovery
        group = int(pid_file.read_text())
        until("the child's command to die with its host", lambda: not group_members(group), timeout=10)
    # (A group that outlives its host — its watcher killed too — is ended by the recovery:
    # tests/unit/test_leftover_processes.py.)
    return Crashed(data, parent["session_id"], parent["id"], child["id"], killed, None)


def _announcements(data: Path, session_id: str, run_id: str) -> Counter[str]:
    """How many announcements of `run_id` the session holds, by the status announced."""
    found: Counter[str] = Counter()
    for row in query_store(data, "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", session_id):
        meta = json.loads(row["body"]).get("meta") or {}
        if meta.get("announcement") and meta.get("run_id") == run_id:
            found[meta.get("status")] += 1
    return found


def _recover(order: tuple[str, ...], crashed: Crashed, host: str, point: str, fake, project: Path,
             work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = work / "data"
    shutil.copytree(crashed.data, data)
    monkeypatch.setenv("YEETUI_DATA_DIR", str(data))
    monkeypatch.chdir(project)
    first_request = len(fake.requests)
    fake.script(  # the parent resumed (its request holds the child's task too, so it is matched first)
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-DONE"})], when_contains="PARENT-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "CHILD-RESUMED"})], when_contains="CHILD-TASK"))
    for step in order:
        capsys.readouterr()
        if step == "list":
            assert yeetui_main(["agents", "list", "--all", "--json"]) == 0
        elif step == "tui":  # the user starts yeetui again and quits
            with Tmux(110, 32) as tmux:
                tmux.start(ZYGOTE.argv(), cwd=project, env=yeetui_env())
                tmux.wait_for("Message yeetui", timeout=30)
                tmux.press("C-q")
                assert tmux.wait_exit(20) == 0, tmux.screen()
        elif step == "child":
            code = yeetui_main(["agents", "resume", crashed.child_run, "--wait", "--json"])
            out = capsys.readouterr()
            if point == "undelivered":  # it had completed: nothing to resume, said plainly
                assert code == 1 and "nothing to resume" in out.err, out
            else:
                assert code == 0, out
                assert json.loads(out.out)["output"] == "CHILD-RESUMED"
        elif host == "worker":
            assert yeetui_main(["agents", "resume", crashed.parent_run, "--wait", "--json"]) == 0
        else:
            assert yeetui_main(["run", "--json", "--resume", crashed.parent_session, "carry on"]) == 0
        if crashed.command_group is not None:  # the first recovery ended the killed child's command
            until("the killed child's command is gone", lambda: not group_members(crashed.command_group),
                       timeout=10)

    expected = Counter({"completed": 1}) if point == "undelivered" else Counter({"interrupted": 1, "completed": 1})
    assert _announcements(data, crashed.parent_session, crashed.child_run) == expected
    sent = fake.requests[first_request:]
    assert sent and all(r.status == 200 and r.rejected is None for r in sent), [
        (r.number, r.status, r.rejected) for r in sent]
    statuses = {r["id"]: r["status"] for r in query_store(data, "SELECT id, status FROM agent_runs")}
    assert statuses[crashed.child_run] == "completed"
    parents = [r for r in query_store(data, "SELECT r.status FROM agent_runs r JOIN sessions s ON s.id = r.session_id"
                                       " WHERE s.parent_id IS NULL ORDER BY r.created_at")]
    assert parents[-1]["status"] == "completed"
    assert not query_store(data, "SELECT 1 FROM tool_processes")


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("host", HOSTS)
def test_crash_then_every_recovery_order(host: str, point: str, fake_env, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    if host == "tui" and tmux_path() is None:
        pytest.skip("tmux is not installed (not found on PATH); the TUI cells drive the real app inside it")
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0.01")
    project = tmp_path / "project"
    project.mkdir()
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True)
    (agents / "crashkid.md").write_text(CHILD_PROFILE, encoding="utf-8")
    crashed = _crash(host, point, fake_env, project, tmp_path)
    failures = []
    orders = list(itertools.permutations(RECOVERY))
    if tmux_path() is not None:
        orders.append(("tui", "child", "parent"))  # starting the app again recovers too
    try:
        for number, order in enumerate(orders):
            try:
                _recover(order, crashed, host, point, fake_env, project, tmp_path / f"order{number}", monkeypatch,
                         capsys)
            except AssertionError as exc:
                failures.append(f"{' → '.join(order)}: {exc}")
    finally:
        if crashed.command_group is not None:  # a failed recovery leaves no sleepers behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(crashed.command_group, signal.SIGKILL)
    assert not failures, "\n".join(failures)
    assert all(gone(pid) for pid in crashed.killed)
