"""The worker's side of a detached or pane run: its runtime is opened as the run's options say."""

from __future__ import annotations

from pathlib import Path

import pytest

from yeetui.application.agents import Worker
from yeetui.cli import _command
from yeetui.cli.exit_codes import EXIT_FAILED
from yeetui.errors import StoreError, YeetuiError
from yeetui.runtime import Runtime


@pytest.mark.parametrize("approve", [True, False])
async def test_a_worker_opens_its_runtime_with_the_runs_approval(runtime: Runtime, project_dir: Path,
                                                                  approve: bool) -> None:
    """`agents start --yes`: the worker's own children in panes are approved too, decided when its runtime
    opens (nothing is switched on afterwards)."""
    run = await runtime.detached.create(profile_name="oracle", prompt="look", approve=approve)
    worker = await Worker.open(run.id[:10], cwd=project_dir)
    try:
        assert worker.run.id == run.id
        assert worker.runtime is not runtime and worker.runtime.spawner.approve_asks is approve
    finally:
        await worker.runtime.close()


async def test_a_worker_for_a_run_that_is_not_there_says_so(runtime: Runtime, project_dir: Path) -> None:
    with pytest.raises(StoreError, match="no-such-run"):
        await Worker.open("no-such-run", cwd=project_dir)


async def test_a_worker_forked_warm_opens_its_runtime_knowing_its_stand_in(runtime: Runtime,
                                                                           project_dir: Path) -> None:
    """The pid of the process standing in for a warm worker (the one its launcher recorded) reaches its spawner,
    which may claim a run recorded under it; a worker started afresh has none."""
    run = await runtime.detached.create(profile_name="oracle", prompt="look")
    for stand_in in (4242, None):
        worker = await Worker.open(run.id, cwd=project_dir, stand_in=stand_in)
        try:
            assert worker.runtime.spawner.stand_in == stand_in
        finally:
            await worker.runtime.close()


def test_the_worker_command_hands_its_stand_in_to_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the warm server runs for a command (`serve_warm_workers` calls the CLI's runner with its arguments
    and the pid of its stand-in): `agent run` opens its worker with that pid."""
    opened: list[tuple[str, int | None]] = []

    async def open_worker(cls: type[Worker], run_id: str, *, cwd: Path, stand_in: int | None = None) -> Worker:
        opened.append((run_id, stand_in))
        raise YeetuiError("opened no further")

    monkeypatch.setattr(Worker, "open", classmethod(open_worker))
    assert _command(["agent", "run", "--run-id", "r-1"], 4242) == EXIT_FAILED
    assert opened == [("r-1", 4242)]
