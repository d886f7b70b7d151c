"""A scheduler `kill -9`ed while it launches a schedule's run: the trigger still runs exactly once.

The killed scheduler is a real process whose launch — the real `yeetui agents start` — is held at its start by a
shim the test controls (a FIFO), so the kill lands while the launch is under way: deterministically, not by
timing. Another scheduler (the real `yeetui schedule daemon --once`) looks while the launch is still going and
must leave the trigger alone; once the launch has finished, it must take the run that launch started as the
trigger's, not start a second one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.fakellm import Reply
from tests.integration.helpers import run_yeetui, wait_for_stored_status, yeetui_env
from tests.waiting import until
from yeetui import paths
from yeetui.store.liveness import pid_alive

SHIM = """\
import os, sys
marker, gate, *argv = sys.argv[1:]
with open(marker + ".tmp", "w") as out:
    out.write(str(os.getpid()))
os.replace(marker + ".tmp", marker)
with open(gate) as wait:  # blocks until the test opens the FIFO for writing
    wait.read()
os.execv(argv[0], argv)  # the real `yeetui agents start`, holding whatever its launcher gave it
"""

SCHEDULER = """\
import asyncio, sys
from yeetui import paths
from yeetui.application import schedules
from yeetui.store import Store

shim, marker, gate = sys.argv[1:]
real = schedules.yeetui_command
schedules.yeetui_command = lambda *args: [sys.executable, shim, marker, gate, *real(*args)]

async def main():
    async with await Store.open(paths.database_path()) as store:
        (schedule,) = await store.schedules.all()
        await schedules.Scheduler(store, clock=lambda: schedule.next_at).tick()

asyncio.run(main())
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def _stored(sql: str) -> list[tuple]:
    with closing(sqlite3.connect(f"file:{paths.database_path()}?mode=ro", uri=True, timeout=5)) as conn:
        return conn.execute(sql).fetchall()


def test_a_scheduler_killed_while_launching_a_run_gets_it_launched_once(fake_env, project: Path, tmp_path: Path
                                                                        ) -> None:
    fake_env.script(Reply.tool("complete", output="checked", repeat=True))
    added = run_yeetui("schedule", "add", "every 1d", "--profile", "oracle", "is main green?", "--json", cwd=project)
    assert added.returncode == 0, added.stderr
    schedule_id = json.loads(added.stdout)["id"]
    shim, marker, gate = tmp_path / "shim.py", tmp_path / "launching", tmp_path / "gate"
    shim.write_text(SHIM)
    os.mkfifo(gate)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    killed = subprocess.Popen([sys.executable, "-c", SCHEDULER, str(shim), str(marker), str(gate)], cwd=elsewhere,
                              env=yeetui_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        until("the scheduler to launch the trigger's run", marker.exists)
        os.kill(killed.pid, signal.SIGKILL)  # kill -9 while its `yeetui agents start` is under way
        killed.wait(timeout=30)
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
    launching = int(marker.read_text())
    try:
        _takes_over_once(schedule_id, elsewhere, gate, launching)
    finally:
        if pid_alive(launching):  # held at the gate by a failed assertion: nobody else will let it go
            os.kill(launching, signal.SIGKILL)


def _takes_over_once(schedule_id: str, elsewhere: Path, gate: Path, launching: int) -> None:
    (claim,) = _stored(f"SELECT due_at, run_id FROM schedule_fires WHERE schedule_id = '{schedule_id}'")
    assert claim[1] is None  # claimed, its run not recorded: the killed scheduler never heard back

    look = run_yeetui("schedule", "daemon", "--once", cwd=elsewhere)
    assert look.returncode == 0, look.stderr
    assert "started run" not in look.stdout, "a second run was started while the first launch was under way"
    assert _stored("SELECT id FROM agent_runs") == []

    with open(gate, "w") as go:  # the held launch goes on: it starts the trigger's run, unheard by anyone
        go.write("go")
    until("the launch to end", lambda: not pid_alive(launching))
    (launched,) = _stored("SELECT id FROM agent_runs")

    look = run_yeetui("schedule", "daemon", "--once", cwd=elsewhere)
    assert look.returncode == 0, look.stderr
    assert "started run" not in look.stdout, look.stdout
    assert _stored(f"SELECT run_id FROM schedule_fires WHERE schedule_id = '{schedule_id}'") == [(launched[0],)]
    assert _stored("SELECT id FROM agent_runs") == [launched]  # one trigger, one run
    assert run_yeetui("schedule", "daemon", "--once", cwd=elsewhere).stdout == ""
    wait_for_stored_status(launched[0])
    assert _stored("SELECT id FROM agent_runs") == [launched]
