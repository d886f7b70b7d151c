"""Class 12: no tool holds the event loop or runs unbounded. A grep pattern that backtracks for ever ends
with a clear error at its budget while the loop keeps running, and a run's timeout ends the call sooner."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import RunStatus
from yeetui.runtime import Runtime
from yeetui.subagents.spawner import SpawnRequest
from yeetui.tools import search

EVIL = "(a|aa)+$"
T = TypeVar("T")


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    (project_dir / "data.txt").write_text("a" * 41 + "!\n")
    return project_dir


async def _loop_lag_while(awaitable: Awaitable[T]) -> tuple[T, float]:
    """Run `awaitable` while a ticker measures the event loop's worst delay."""
    worst = 0.0
    running = True

    async def ticker() -> None:
        nonlocal worst
        while running:
            start = time.monotonic()
            await asyncio.sleep(0.01)
            worst = max(worst, time.monotonic() - start - 0.01)

    tick = asyncio.create_task(ticker())
    try:
        return await awaitable, worst
    finally:
        running = False
        await tick


async def test_a_backtracking_grep_ends_at_its_budget_and_never_blocks_the_loop(
        runtime: Runtime, scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "GREP_LINE_SECONDS", 0.5)
    scripted.script(Reply(tool_calls=[ToolCall("grep", {"pattern": EVIL})], when_contains="SEARCH"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result, lag = await _loop_lag_while(runtime.launcher.run_prompt("SEARCH"))
    assert result.status.value == "completed"
    said = scripted.requests[-1].text
    assert "takes too long to match (over 0.5 s on one line" in said
    assert lag < 0.5, f"the event loop stalled for {lag:.2f} s"


async def test_a_run_timeout_ends_a_grep_long_before_its_budget(runtime: Runtime, scripted,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "GREP_LINE_SECONDS", 3.0)  # the run's timeout (0.5 s) comes first, always
    scripted.script(Reply(tool_calls=[ToolCall("grep", {"pattern": EVIL})], when_contains="oracle"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    started = time.monotonic()
    handle = await runtime.spawner.spawn(SpawnRequest(profile="oracle", prompt="grep for it", timeout=0.5,
                                                      blocking=True, requested_by="user"))
    result = handle.result
    assert result is not None and result.status == RunStatus.TIMEOUT
    assert time.monotonic() - started < 3.0
