"""Opening the store never leaves a connection thread behind when it fails: an interpreter waits for those threads
at exit, so one left running makes a command that failed hang instead of exiting."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from yeetui.errors import StoreError
from yeetui.store import Store

JOIN = 10.0
"""Seconds a stopped connection thread gets to end (a guard against hanging, not a timing assertion)."""


def _left_running(before: set[threading.Thread]) -> list[threading.Thread]:
    """The connection threads started since `before` that are still running (aiosqlite's, named after their
    function; the event loop's executor threads live as long as the loop)."""
    started = [t for t in threading.enumerate() if t not in before and "_connection_worker_thread" in t.name]
    for thread in started:
        thread.join(JOIN)
    return [t for t in started if t.is_alive()]


async def test_a_step_after_opening_that_fails_closes_both_connections(tmp_path: Path) -> None:
    async def recover(store: Store) -> None:
        await store.create_session(profile="generic")  # it got that far: both connections were working
        raise StoreError("Could not mark orphaned runs interrupted: disk I/O error.")

    before = set(threading.enumerate())
    with pytest.raises(StoreError, match="disk I/O error"):
        await Store.open(tmp_path / "yeetui.db", then=recover)
    assert _left_running(before) == []
