"""What pane children leave behind, with the real binary, real tmux and real warm workers: a pane stays live
while its worker does (even once the warm server it was forked from is gone), ended windows do not pile up,
yeetui's tmux server ends once no yeetui process and no live child uses it — a child still running when
its parent's process dies finishes first — and a worker killed outright takes everything its command started
along.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tmux import tmux_path
from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import ORACLE, query_store, start_yeetui, stored_pid
from tests.integration.zygote import Forked
from tests.processes import gone, running_with, unique_sleep
from tests.waiting import until
from yeetui.subagents.panes import ENDED_KEPT
from yeetui.system.tmux import server_name

pytestmark = pytest.mark.skipif(tmux_path() is None, reason="tmux is not installed: tmux mode cannot be tested")





def _tmux(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", server_name(data), "-f", "/dev/null", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, check=False)


def _server_pid(data: Path) -> int | None:
    """The pid of yeetui's tmux server on `data`, while one answers."""
    found = _tmux(data, "display-message", "-p", "#{pid}")
    return int(found.stdout) if found.returncode == 0 and found.stdout.strip().isdigit() else None


def _screen(data: Path, pane: str) -> str:
    return _tmux(data, "capture-pane", "-p", "-J", "-t", pane, "-S", "-200").stdout


def _pane_dead(data: Path, pane: str) -> bool:
    return _tmux(data, "display-message", "-p", "-t", pane, "#{pane_dead}").stdout.strip() == "1"


def _windows(data: Path) -> list[str]:
    """`<window name> <1 if its pane is dead, else 0>` for each window on yeetui's server."""
    found = _tmux(data, "list-panes", "-s", "-t", "yeetui", "-F", "#{window_name} #{pane_dead}")
    return found.stdout.split("\n")[:-1] if found.returncode == 0 else []


def _runs(data: Path, profile: str) -> list[sqlite3.Row]:
    return query_store(data, "SELECT * FROM agent_runs WHERE profile = ? ORDER BY created_at", profile)


def _command_running(data: Path) -> sqlite3.Row | None:
    """The oracle whose bash command runs (its worker recorded the command's process group)."""
    for child in _runs(data, "oracle"):
        if child["status"] == "running" and query_store(data, "SELECT 1 FROM tool_processes WHERE run_id = ?",
                                                        child["id"]):
            return child
    return None


def _pane(child: sqlite3.Row) -> str:
    return str(json.loads(child["options"])["pane"]["pane"])


def _parent_pid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _spawn(prompt: str, *, blocking: bool = True) -> ToolCall:
    return ToolCall("spawn_subagent", {"profile": "oracle", "prompt": prompt, "mode": "tmux", "blocking": blocking})


def _wait_for_release(release: Path) -> ToolCall:
    return ToolCall("bash", {"command": f"until [ -e {release} ]; do sleep 0.05; done"})


@contextlib.contextmanager
def _ended_at_last(process: Forked) -> Iterator[None]:
    try:
        yield
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@contextlib.contextmanager
def _released_at_last(release: Path) -> Iterator[None]:
    """Whatever happens, the children waiting for `release` end: a worker that outlived its warm server has no
    one else to end it."""
    try:
        yield
    finally:
        release.touch()


def test_a_pane_stays_live_while_its_worker_runs_on_after_the_warm_server_died(
        fake_env, project: Path, data: Path) -> None:
    """The warm server a pane's worker was forked from is killed -9 while the worker's command runs. The pane's
    process, the worker's stand-in, used to end at once ("went away"): the pane read dead while the worker ran
    on, and the rest of its output — its answer — never reached the window. It now stands in until the worker
    has ended: the pane shows the answer, and reads dead only once the worker is gone."""
    release = project / "release"
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q-A: wait until released")], when_contains="PARENT-A"),
        Reply(tool_calls=[_wait_for_release(release)], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER-A"})], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-A-DONE"})], when_contains="PARENT-A"),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-A: ask an oracle and wait", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with _ended_at_last(parent), _released_at_last(release):
        until("the oracle's command to run", lambda: _command_running(data))
        child = _command_running(data)
        assert child is not None
        pane, worker = _pane(child), stored_pid(child["id"])
        assert worker is not None
        warm_server = _parent_pid(worker)
        assert b"warm-server" in Path(f"/proc/{warm_server}/cmdline").read_bytes()
        os.kill(warm_server, signal.SIGKILL)
        until("the warm server to be gone", lambda: gone(warm_server), timeout=10)
        until("the stand-in to notice", lambda: "the warm server that ran this command went away"
                   in _screen(data, pane), timeout=10)
        assert not gone(worker) and not _pane_dead(data, pane), "the pane reads dead while its worker runs"
        release.touch()
        until("the oracle's answer in its pane", lambda: "PANE-ANSWER-A" in _screen(data, pane), timeout=30)
        until("the oracle's worker to exit", lambda: gone(worker), timeout=30)
        (ended,) = _runs(data, "oracle")
        assert ended["status"] == "completed", ended["error"]
        out, err = parent.communicate(timeout=60)
    assert parent.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["output"] == "PARENT-A-DONE"


def test_the_windows_of_ended_children_do_not_pile_up(fake_env, project: Path, data: Path) -> None:
    """A parent asks more oracles in panes, one after another, than yeetui keeps ended windows for: while it
    goes on (its own command waits), only the windows of the `ENDED_KEPT` that ended last are there — they
    used to stay, every one, until yeetui next started (185 in one session)."""
    asked = ENDED_KEPT + 2
    release = project / "release"
    fake_env.script(
        *[Reply(tool_calls=[_spawn(f"PANE-Q-B{n}: answer")], when_contains="PARENT-B") for n in range(asked)],
        Reply(tool_calls=[_wait_for_release(release)], when_contains="PARENT-B"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-B-DONE"})], when_contains="PARENT-B"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER-B"})], when_contains=ORACLE, repeat=True),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-B: ask oracles one by one", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with _ended_at_last(parent), _released_at_last(release):
        until("the parent's own command to run", lambda: query_store(
            data, "SELECT 1 FROM tool_processes JOIN agent_runs ON agent_runs.id = run_id "
                  "WHERE agent_runs.profile = 'generic'"), timeout=120)
        assert len(_runs(data, "oracle")) == asked
        kept = {f"oracle-{n} 1" for n in range(asked - ENDED_KEPT + 1, asked + 1)}
        until(f"only the last {ENDED_KEPT} ended windows to stay", lambda: set(_windows(data)) == kept,
                   timeout=15)
        release.touch()
        out, err = parent.communicate(timeout=60)
    assert parent.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["output"] == "PARENT-B-DONE"


def test_the_tmux_server_ends_with_the_last_yeetui_process(fake_env, project: Path, data: Path) -> None:
    """`yeetui run` asks an oracle in a pane and ends: nothing is left to read the oracle's window, and the tmux
    server yeetui started for it ends too (it used to stay, holding the ended window, for good)."""
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q-C: answer")], when_contains="PARENT-C"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER-C"})], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-C-DONE"})], when_contains="PARENT-C"),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-C: ask an oracle", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with _ended_at_last(parent):
        until("the oracle's window to open", lambda: _server_pid(data))
        server = _server_pid(data)
        assert server is not None
        out, err = parent.communicate(timeout=60)
    assert parent.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["output"] == "PARENT-C-DONE"
    until("yeetui's tmux server to end", lambda: gone(server), timeout=15)


def test_a_child_outliving_its_killed_parent_finishes_then_the_tmux_server_ends(
        fake_env, project: Path, data: Path) -> None:
    """The parent's process is killed -9 while its oracle's command runs in a pane. The oracle is not stopped:
    it finishes in its window. Then, with no yeetui process left, its window closes and the tmux server ends
    (it used to stay for good, holding the window)."""
    release = project / "release"
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q-D: wait until released")], when_contains="PARENT-D"),
        Reply(tool_calls=[_wait_for_release(release)], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER-D"})], when_contains=ORACLE),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-D: ask an oracle and wait", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with _ended_at_last(parent), _released_at_last(release):
        until("the oracle's command to run", lambda: _command_running(data))
        child, server = _command_running(data), _server_pid(data)
        assert child is not None and server is not None
        worker = stored_pid(child["id"])
        assert worker is not None
        parent.kill()
        parent.communicate()
        assert not gone(worker) and not _pane_dead(data, _pane(child))  # the oracle runs on
        release.touch()
        until("the oracle to complete", lambda: _runs(data, "oracle")[0]["status"] == "completed")
        until("the oracle's worker to exit", lambda: gone(worker), timeout=30)
        until("yeetui's tmux server to end", lambda: gone(server), timeout=15)


def test_the_tmux_server_ends_when_the_last_yeetui_process_is_killed(fake_env, project: Path, data: Path) -> None:
    """`yeetui run` asked an oracle in a pane, which has ended (its window kept for reading while yeetui runs);
    then the parent's process is killed -9 while its own command runs. Nothing is left to read the window: the
    tmux server ends (it used to stay with it until a yeetui started again)."""
    release = project / "release"
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q-F: answer")], when_contains="PARENT-F"),
        Reply(tool_calls=[_wait_for_release(release)], when_contains="PARENT-F"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER-F"})], when_contains=ORACLE),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-F: ask an oracle, then wait", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with _ended_at_last(parent), _released_at_last(release):
        until("the parent's own command to run", lambda: query_store(
            data, "SELECT 1 FROM tool_processes JOIN agent_runs ON agent_runs.id = run_id "
                  "WHERE agent_runs.profile = 'generic'"))
        until("the oracle's window to stay, ended", lambda: _windows(data) == ["oracle-1 1"])
        server = _server_pid(data)
        assert server is not None
        parent.kill()
        parent.communicate()
        until("yeetui's tmux server to end", lambda: gone(server), timeout=20)


def test_a_killed_pane_workers_command_takes_what_it_started_along(fake_env, project: Path, data: Path) -> None:
    """The oracle's command starts a process that leaves its process group (`setsid`, as bubblewrap's sandbox
    itself does when it starts), then its worker is killed -9. Ending the command's group used to leave that
    process running for good; everything the command started now goes with the worker. (Landlock: no pid
    namespace that would take it along anyway.)"""
    escaped = unique_sleep()
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q-E: run it")], when_contains="PARENT-E"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"setsid sleep {escaped} </dev/null >/dev/null 2>&1 & "
                                                       "sleep 300"})], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PARENT-E-DONE"})], when_contains="PARENT-E"),
    )
    parent = start_yeetui("run", "--yes", "--json", "PARENT-E: ask an oracle and wait", cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, YEETUI_SANDBOX="landlock")
    try:
        with _ended_at_last(parent):
            until("the escaped process to run", lambda: running_with(escaped))
            child = _command_running(data)
            assert child is not None
            worker = stored_pid(child["id"])
            assert worker is not None
            os.kill(worker, signal.SIGKILL)
            out, err = parent.communicate(timeout=60)
        assert parent.returncode == 0, err
        assert json.loads(out.splitlines()[-1])["output"] == "PARENT-E-DONE"
        until("what the killed worker's command started to end", lambda: not running_with(escaped),
                   timeout=15)
    finally:
        for pid in running_with(escaped):
            os.kill(pid, signal.SIGKILL)
