"""Ending a transaction safely when the code inside it failed or its task was cancelled.

aiosqlite runs statements on its own thread, in order. A cancelled `await conn.execute(...)` does not
stop the statement: it still runs, later. So after a failure we first wait for everything already queued
(a no-op `SELECT 1` behind it), then roll back only if a transaction is really open — and we do that
even if the task is cancelled again, or the next caller's `BEGIN` would land inside our transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import aiosqlite

T = TypeVar("T")


async def uninterruptible(awaitable: Awaitable[T]) -> T:
    """Await `awaitable` to the end even if cancelled meanwhile; re-raise the cancellation afterwards."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


async def rollback_if_open(conn: aiosqlite.Connection) -> None:
    """Wait for queued statements, then roll back the transaction if one is open. Never cancelled."""

    async def settle() -> None:
        async with conn.execute("SELECT 1") as cursor:
            await cursor.fetchall()
        if conn.in_transaction:
            await conn.execute("ROLLBACK")

    await uninterruptible(settle())
