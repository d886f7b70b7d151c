"""Class 14 (signals): a `yeetui run` whose agent's bash is mid-command is sent SIGHUP (its terminal closed) or
SIGTERM; yeetui exits as cancelled, and the command's whole process group — the shell and what it started in
the background — is gone. Run for a profile whose bash is unconfined (nothing but yeetui's own handling ends
the command there: no sandbox dies with its parent) and for the default sandbox.

kill -9 mid-tool is proven elsewhere: `tests/integration/test_crash_matrix.py` (cell `run`/`mid_tool`, every
recovery order, `agents list` first among them) shows the next yeetui command that starts reaps the group the
killed one left, and `tests/unit/system/test_leftover_processes.py` that an unrelated process with the recorded pid is
never hit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import start_yeetui
from tests.processes import gone, group_members, running_with, unique_sleep
from yeetui.cli.exit_codes import EXIT_CANCELLED

UNCONFINED = """\
---
description: Runs commands without asking, outside any sandbox (the signal tests).
permissions:
  bash: allow
workspace:
  bash_sandbox: "off"
exit_tools: [complete]
---
You do the task you are given.
"""


def _wait(what: str, predicate: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:g} s: {what}")
        time.sleep(0.05)


def _pgid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])


@pytest.mark.parametrize("profile", ["unconfined", "generic"])
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_mid_tool_ends_yeetui_and_the_command_s_group(fake_env, tmp_path: Path, sig: signal.Signals,
                                                               profile: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "unconfined.md").write_text(UNCONFINED, encoding="utf-8")
    marker = unique_sleep()
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": f"sleep {marker} & sleep {marker}; wait"})],
                          when_contains="SLEEP"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "woke"})]))
    proc = start_yeetui("run", "--json", "--yes", "--profile", profile, "SLEEP a while", cwd=project,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sleepers: list[int] = []
    try:
        _wait("both sleeps of the command run", lambda: len(running_with(marker)) == 2 or proc.poll() is not None)
        sleepers = running_with(marker)
        assert len(sleepers) == 2, f"yeetui exited early ({proc.returncode})"
        groups = {_pgid(pid) for pid in sleepers}
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == EXIT_CANCELLED
        _wait("the command's process group is gone",
              lambda: all(gone(pid) for pid in sleepers) and not any(group_members(g) for g in groups), timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pid in running_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
