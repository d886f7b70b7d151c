"""This user's private runtime folder (`$XDG_RUNTIME_DIR/yeetui-UID`) keeps nothing of processes that are gone:
the real binary, front ends killed -9 and front ends that end."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import query_store, run_yeetui, start_yeetui
from tests.integration.zygote import Forked
from tests.processes import gone
from tests.waiting import until
from yeetui import paths
from yeetui.system.relay import relay_dir


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own runtime folder (`yeetui-UID` in an XDG_RUNTIME_DIR of its own), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="yf-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield base / f"yeetui-{os.getuid()}"
    shutil.rmtree(base, ignore_errors=True)


def _waiting(tag: str, release: Path) -> list[Reply]:
    return [Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {release} ]; do sleep 0.05; done"})],
                  when_contains=tag),
            Reply(tool_calls=[ToolCall("complete", {"output": f"{tag}-DONE"})], when_contains=tag)]


def test_a_front_end_removes_the_sockets_and_notes_of_processes_that_are_gone(
        fake_env, project: Path, folder: Path) -> None:
    """Two front ends (`yeetui run`) wait in a bash command; one is killed -9, which leaves its relay socket
    behind (it used to stay for good). A third front end starting removes that socket and keeps the live one's.
    The sandbox's mount-point notes go once the last command in the project has ended (they used to stay,
    emptied, one file per workspace root ever used)."""
    releases = {tag: project / f"release-{tag}" for tag in ("LIVE", "KILLED")}
    fake_env.script(*_waiting("LIVE", releases["LIVE"]), *_waiting("KILLED", releases["KILLED"]),
                    Reply(tool_calls=[ToolCall("complete", {"output": "THIRD-DONE"})], when_contains="THIRD"))
    sockets = relay_dir(paths.data_dir())
    assert sockets is not None and sockets.parent == folder
    front = {tag: start_yeetui("run", "--yes", "--json", f"{tag}: wait", cwd=project, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for tag in releases}
    try:
        for process in front.values():

            def listening(p: Forked = process) -> bool:
                return (sockets / f"{p.pid}.sock").exists()

            until("each front end to listen for panes", listening)
        until("both commands to run", lambda: all(_runs_bash(p.pid) for p in front.values()))
        killed = front.pop("KILLED")
        killed.kill()
        killed.communicate()
        until("the killed front end to be gone", lambda: gone(killed.pid), timeout=10)
        assert (sockets / f"{killed.pid}.sock").exists()  # left behind

        third = run_yeetui("run", "--yes", "--json", "THIRD: answer", cwd=project)
        assert third.returncode == 0, third.stderr
        assert not (sockets / f"{killed.pid}.sock").exists()
        assert (sockets / f"{front['LIVE'].pid}.sock").exists()
    finally:
        for release in releases.values():
            release.touch()
        for process in front.values():
            try:
                process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert front["LIVE"].returncode == 0
    assert not list(folder.glob("shield-*")), "the sandbox's notes stayed once every command had ended"


def _runs_bash(pid: int) -> bool:
    """Whether the run that process `pid` executes has its bash command running (its process group recorded)."""
    return bool(query_store(paths.data_dir(), "SELECT 1 FROM tool_processes JOIN agent_runs ON agent_runs.id = "
                                              "tool_processes.run_id WHERE agent_runs.pid = ?", pid))
