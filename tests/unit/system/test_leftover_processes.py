"""Commands a killed yeetui left running: recorded while they run, ended by whichever process recovers next,
and never an unrelated process that happens to have the recorded pid."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import gone, group_members, running_with, unique_sleep
from tests.waiting import until
from yeetui.bus import Bus
from yeetui.store import Store
from yeetui.subagents.inbox import Delivery
from yeetui.system import sandbox
from yeetui.system.processes import PROCESS_TAG, GroupWatcher, kill_leftover_group, start_ticks

ROOT = Path(__file__).resolve().parents[3]

OWNER = """
import asyncio, sys
from pathlib import Path
from yeetui.store import Store
from yeetui.tools.base import ToolContext
from yeetui.tools.shell import BashArgs, BashTool
from yeetui.workspace import WorkspaceBinding

async def main(db, cwd, marker, mode="off"):
    store = await Store.open(Path(db))
    # Unconfined (`off`): under bubblewrap the command dies with its owner anyway (--die-with-parent); this is
    # the case where nothing but the recovery ends it (no sandbox on the machine, or Landlock).
    ctx = ToolContext(binding=WorkspaceBinding(cwd=Path(cwd), bash_sandbox=mode), run_id="run-1",
                      processes=store.tool_processes.run_log("run-1"))
    await BashTool().run(BashArgs(command=f"echo $$ > {marker}.pid; sleep 300 & sleep 301; wait"), ctx)

asyncio.run(main(*sys.argv[1:]))
"""


async def _recover(db: Path) -> list:
    async with await Store.open(db) as store:
        await Delivery(store, Bus()).recover()
        return await store.tool_processes.take_leftovers()


async def _migrate(db: Path) -> None:
    async with await Store.open(db):
        pass


def test_a_killed_owner_s_command_group_is_ended_by_the_next_recovery(tmp_path: Path) -> None:
    db = tmp_path / "yeetui.db"
    asyncio.run(_migrate(db))
    marker = tmp_path / "cmd"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(db), str(tmp_path), str(marker)], env=env)
    pid_file = Path(f"{marker}.pid")
    def running() -> bool:  # bash, `sleep 300` and `sleep 301`
        text = pid_file.read_text().strip() if pid_file.exists() else ""
        return text.isdigit() and len(group_members(int(text))) == 3

    try:
        until("the command's group of three to run", running, timeout=20.0)
    finally:
        if not running():  # it never got going: no owner left behind either
            owner.kill()
            owner.wait()
    pgid = int(pid_file.read_text())
    try:
        # The group's watcher (which ends it when its owner dies) is killed first, as a kill of every process
        # or the OOM killer could: then nothing but the recovery ends the group.
        for watcher in running_with(str(pgid)):
            os.kill(watcher, signal.SIGKILL)
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        assert len(group_members(pgid)) == 3, "the command's group outlives its killed owner (the case to recover)"

        assert asyncio.run(_recover(db)) == []  # the recovery took the record: one recovery ends each group
        until("the killed owner's group to be ended", lambda: not group_members(pgid), timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)  # a failed test leaves no sleepers behind


async def test_a_command_that_ended_normally_leaves_no_record(tmp_path: Path) -> None:
    from yeetui.tools.base import ToolContext
    from yeetui.tools.shell import BashArgs, BashTool
    from yeetui.workspace import WorkspaceBinding

    async with await Store.open(tmp_path / "yeetui.db") as store:
        ctx = ToolContext(binding=WorkspaceBinding(cwd=tmp_path), run_id="r",
                          processes=store.tool_processes.run_log("r"))
        out = await BashTool().run(BashArgs(command="echo hi"), ctx)
        assert "hi" in out.content
        assert await store.tool_processes.take_leftovers(is_alive=lambda pid: False) == []


async def _note_and_take(db: Path, pgid: int, leader_start: int) -> list:
    async with await Store.open(db) as store:
        await store.tool_processes.note("r", pgid, leader_start, owner_pid=999_999_999)  # an owner that is gone
        return await store.tool_processes.take_leftovers()


def test_a_group_whose_leader_pid_was_reused_is_left_alone(tmp_path: Path) -> None:
    unrelated = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        real_start = start_ticks(unrelated.pid)
        assert real_start is not None
        # Recorded for a leader that started at another time: the pid now belongs to someone else.
        (leftover,) = asyncio.run(_note_and_take(tmp_path / "yeetui.db", unrelated.pid, real_start - 100))
        assert leftover.pgid == unrelated.pid
        assert kill_leftover_group(leftover.pgid, leftover.leader_start) is False
        assert kill_leftover_group(unrelated.pid, None) is False  # no start time recorded: not provably ours
        assert unrelated.poll() is None
        assert kill_leftover_group(unrelated.pid, real_start) is True
        assert unrelated.wait(timeout=10) == -signal.SIGKILL
    finally:
        if unrelated.poll() is None:
            unrelated.kill()
            unrelated.wait()


def test_a_group_whose_leader_exited_is_ended_through_itsgroup_members(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    leader = subprocess.Popen(["bash", "-c", f"sleep 300 & echo $! > {marker}; exit 0"], start_new_session=True)
    leader.wait()
    until("the child's pid in the marker",
          lambda: marker.exists() and marker.read_text().strip(), timeout=20.0)
    child = int(marker.read_text())
    assert not gone(child)
    assert kill_leftover_group(leader.pid, 12345) is True  # the leader's start no longer matters: it is gone
    until("the child to be ended", lambda: gone(child), timeout=10)


STALLED_OWNER = """
import asyncio, sys
from pathlib import Path
from yeetui.tools.base import ToolContext
from yeetui.tools.shell import BashArgs, BashTool
from yeetui.workspace import WorkspaceBinding

class Stalled:
    async def started(self, pgid, leader_start):
        print("spawned", pgid, flush=True)
        await asyncio.sleep(3600)  # killed here: after the spawn, before the record
    async def ended(self, pgid):
        pass

async def main(cwd, marker):
    ctx = ToolContext(binding=WorkspaceBinding(cwd=Path(cwd)), run_id="r", processes=Stalled())
    await BashTool().run(BashArgs(command=f"touch {marker}"), ctx)

asyncio.run(main(*sys.argv[1:]))
"""


def test_a_command_whose_owner_dies_before_recording_it_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen([sys.executable, "-c", STALLED_OWNER, str(tmp_path), str(marker)], env=env,
                             stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    kind, pgid = owner.stdout.readline().split()
    assert kind == "spawned"
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    until("the group to end by itself",
          lambda: not group_members(int(pgid)), timeout=10)  # the gate saw EOF: the group ended by itself
    assert not marker.exists()


SANDBOXED_OWNER = """
import asyncio, sys
from pathlib import Path
from yeetui.tools.base import ToolContext
from yeetui.tools.shell import BashArgs, BashTool
from yeetui.workspace import WorkspaceBinding

async def main(cwd, duration):
    ctx = ToolContext(binding=WorkspaceBinding(cwd=Path(cwd)), run_id="r")
    await BashTool().run(BashArgs(command=f"sleep {duration} & sleep {duration}; wait"), ctx)

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")
def test_under_bubblewrap_a_killed_owner_s_command_dies_with_it(tmp_path: Path) -> None:
    """bubblewrap's --die-with-parent: a yeetui killed outright takes its agents' commands with it, before any
    recovery (which stays for the unconfined case above)."""
    duration = unique_sleep()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen([sys.executable, "-c", SANDBOXED_OWNER, str(tmp_path), duration], env=env)
    def sleepers() -> list[int]:  # the owner has `duration` among its arguments too
        return [pid for pid in running_with(duration) if pid != owner.pid]

    try:
        until("both sleepers to run", lambda: len(sleepers()) == 2, timeout=20.0)
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        until("the sleepers to be ended", lambda: not sleepers(), timeout=10)
    finally:
        if owner.poll() is None:
            owner.kill()
        for pid in running_with(duration):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_a_watched_command_s_processes_die_with_its_owner_also_those_that_left_its_group() -> None:
    """What a command started carries its tag (`PROCESS_TAG`): once the owner dies, its watcher ends the group and
    every process with the tag — here one that left the group with `setsid`, as bubblewrap's sandbox does as it
    starts (killed then, bubblewrap used to leave its sandbox running for good)."""
    escaped = unique_sleep()
    tag = f"bash-test-{os.getpid()}-{escaped}"
    command = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", f"setsid sleep {escaped} </dev/null >/dev/null 2>&1 & sleep 300", start_new_session=True,
        env={**os.environ, PROCESS_TAG: tag})
    watcher: GroupWatcher | None = None
    try:
        watcher = await GroupWatcher.start(command.pid, tag)
        for _ in range(500):
            if running_with(escaped):
                break
            await asyncio.sleep(0.01)
        assert running_with(escaped)
        assert watcher._write_fd is not None
        os.close(watcher._write_fd)  # what the owner's death does: the watcher's pipe has no writer left
        watcher._write_fd = None
        await asyncio.wait_for(command.wait(), 10)
        for _ in range(500):
            if not running_with(escaped):
                break
            await asyncio.sleep(0.01)
        assert not running_with(escaped)
    finally:
        for pid in running_with(escaped):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(command.pid, signal.SIGKILL)
        await command.wait()
        if watcher is not None:
            await watcher.stop()
