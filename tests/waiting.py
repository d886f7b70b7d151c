"""Waiting for a condition instead of sleeping and hoping: the one way every test polls.

`until` for a plain test (processes, files, the store), `until_async` inside an event loop, `pilot_until` under
Textual's Pilot (it lets the app run between looks). Each fails saying what it waited for and how long."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

EVERY = 0.05
"""Seconds between two looks."""


def until(what: str, predicate: Callable[[], T], timeout: float = 60.0) -> T:
    """Poll `predicate` until it holds; past `timeout` seconds fail, saying `what` was not reached. Returns what
    it returned then (a found record, a pid)."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:g} s: {what}")
        time.sleep(EVERY)
    return found


async def until_async(what: str, predicate: Callable[[], Any], timeout: float = 10.0, every: float = 0.02) -> Any:
    """`until` inside an event loop; `predicate` may be a coroutine function. Returns what it returned then."""
    deadline = asyncio.get_running_loop().time() + timeout

    async def holds() -> object:
        found = predicate()
        return await found if inspect.isawaitable(found) else found

    while not (found := await holds()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not reached in {timeout:g} s: {what}")
        await asyncio.sleep(every)
    return found


async def pilot_until(pilot: Any, predicate: Callable[[], object], *, timeout: float = 15.0,
                      what: str = "the condition", every: float = EVERY) -> None:
    """Let the app run (timers, layout, workers) until `predicate()` holds; fail past `timeout` seconds of its
    running. Counted in pauses, not wall time: on a loaded machine the app gets as many chances to get there."""
    for _ in range(max(1, int(timeout / every))):
        if predicate():
            return
        await pilot.pause(every)
    if not predicate():
        raise AssertionError(f"not reached in {timeout:g} s: {what}")
