"""The worker's side of a detached or pane run: its runtime is opened as the run's options say."""

from __future__ import annotations

from pathlib import Path

import pytest

from yeetui.application.agents import Worker
from yeetui.errors import StoreError
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
