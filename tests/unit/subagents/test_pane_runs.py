"""PaneRuns on its own: what it says when panes cannot be used, and a pane tmux refuses (the run ends failed,
the spawn is refused, and a sibling waiting for its place is let go)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from yeetui.events import RunStatus
from yeetui.runs.spec import RunOptions
from yeetui.runtime import Runtime
from yeetui.subagents.elsewhere import RunsElsewhere
from yeetui.subagents.pane_runs import PaneRuns
from yeetui.subagents.panes import Pane, PaneHost, TmuxError
from yeetui.subagents.spawn_request import SpawnRefused


class RefusingHost(PaneHost):
    """A tmux host whose every window is refused, after `gate` is set (so a test can look meanwhile)."""

    def __init__(self, project_dir: Path) -> None:
        super().__init__(env={}, project_dir=project_dir)
        self.gate = asyncio.Event()

    async def start(self, run_id: str, label: str, *, resume: bool = False) -> Pane:
        await self.gate.wait()
        raise TmuxError("no server")


async def _run(runtime: Runtime, parent_id: str | None = None) -> str:
    profile = runtime.profiles.get("generic")
    session = await runtime.launcher.new_session(profile, parent_id=parent_id)
    run = await runtime.launcher.create_run(session, profile, model="m", prompt="p",
                                            options=RunOptions(parent_session_id=parent_id, mode="tmux"))
    return run.id


def _pane_runs(runtime: Runtime, host: PaneHost | None) -> PaneRuns:
    elsewhere = RunsElsewhere(runtime.store, runtime.bus, runtime.delivery, host)
    return PaneRuns(host, elsewhere, store=runtime.store, bus=runtime.bus)


async def test_without_a_tmux_host_nothing_runs_in_a_pane(runtime: Runtime) -> None:
    pane_runs = _pane_runs(runtime, None)
    assert await pane_runs.problem() == "this process has no tmux host"
    assert await pane_runs.pane_of(await _run(runtime)) is None
    assert not await pane_runs.siblings_opened("any parent")


async def test_a_pane_tmux_refuses_fails_its_run_and_lets_a_waiting_sibling_go(runtime: Runtime,
                                                                              project_dir: Path) -> None:
    host = RefusingHost(project_dir)
    pane_runs = _pane_runs(runtime, host)
    parent = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    run_id = await _run(runtime, parent.id)
    starting = asyncio.ensure_future(pane_runs.start(run_id, "generic#1", parent_session_id=parent.id,
                                                     session_id=parent.id))
    await asyncio.sleep(0)  # it is opening its pane now
    waiting = asyncio.ensure_future(pane_runs.siblings_opened(parent.id))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    host.gate.set()
    with pytest.raises(SpawnRefused, match="could not start in a tmux pane: no server"):
        await starting
    assert await asyncio.wait_for(waiting, 5) is True
    run = await runtime.store.get_run(run_id)
    assert run is not None and run.status == RunStatus.FAILED and "could not open its tmux window" in (run.error or "")
    assert not await pane_runs.siblings_opened(parent.id)  # nothing is opening any more
    assert not pane_runs.elsewhere.following(run_id)
