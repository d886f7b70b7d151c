"""The store under load: whole transactions in one trip to the writer's thread, reads on their own
read-only connection (committed data only, never queued behind a write), and concurrent first opens."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from yeetui.errors import StoreError
from yeetui.messages import Message
from yeetui.store import Store

GUARD = 10.0
"""Seconds before a wait counts as a deadlock (a guard against hanging, not a timing assertion)."""


class HeldTransaction:
    """A write transaction that inserts a message, then holds (uncommitted) until `release()`."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store, self.session_id = store, session_id
        self.inside = threading.Event()
        self._release = threading.Event()

    def body(self, conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "INSERT INTO messages (session_id, seq, role, body, partial, created_at, updated_at)"
            " VALUES (?, 99, 'user', ?, 0, '2026-01-01', '2026-01-01')",
            (self.session_id, Message.user("uncommitted").model_dump_json()))
        self.inside.set()
        if not self._release.wait(GUARD):
            raise RuntimeError("never released")
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def start(self) -> asyncio.Task[int]:
        return asyncio.create_task(self.store.transaction("hold a transaction", self.body))

    async def wait_inside(self) -> None:
        assert await asyncio.to_thread(self.inside.wait, GUARD), "the transaction never started"

    def release(self) -> None:
        self._release.set()


async def test_reads_during_an_open_write_see_committed_data_only_and_do_not_wait(store: Store) -> None:
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("committed"))
    held = HeldTransaction(store, session.id)
    task = held.start()
    try:
        await held.wait_inside()
        # The writer is mid-transaction: a read answers at once, from the last commit.
        seen = await asyncio.wait_for(store.messages(session.id), GUARD)
        assert [m.message.text for m in seen] == ["committed"]
        assert await asyncio.wait_for(store.count_messages(session.id), GUARD) == 1
        assert (await asyncio.wait_for(store.get_session(session.id), GUARD)) is not None
    finally:
        held.release()
    message_id = await task
    assert [m.message.text for m in await store.messages(session.id)] == ["committed", "uncommitted"]
    assert (await store.get_message(message_id)) is not None


async def test_a_write_waits_for_the_open_transaction_and_lands_after_it(store: Store) -> None:
    session = await store.create_session(profile="generic")
    held = HeldTransaction(store, session.id)
    task = held.start()
    await held.wait_inside()
    append = asyncio.create_task(store.append_message(session.id, Message.user("after")))
    await asyncio.sleep(0.05)
    assert not append.done()  # writes are serialised: it cannot land inside the held transaction
    held.release()
    await task
    await append
    assert [m.seq for m in await store.messages(session.id)] == [99, 100]


async def test_a_failing_transaction_writes_nothing_and_the_store_goes_on(store: Store) -> None:
    session = await store.create_session(profile="generic")

    def half_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE sessions SET title = 'half-written' WHERE id = ?", (session.id,))
        raise StoreError("refused half-way")

    with pytest.raises(StoreError, match="refused half-way"):
        await store.transaction("fail half-way", half_then_fail)
    assert (await store.get_session(session.id)).title == ""
    assert not store._connection().in_transaction

    def bad_sql(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE sessions SET title = 'x' WHERE id = ?", (session.id,))
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(StoreError, match=r"Could not break things in the store at .*no such table"):
        await store.transaction("break things", bad_sql)
    assert (await store.get_session(session.id)).title == ""
    updated = await store.update_session(session.id, title="fine")
    assert updated.title == "fine"


async def test_a_cancelled_caller_leaves_the_transaction_whole_and_closed(store: Store) -> None:
    session = await store.create_session(profile="generic")
    held = HeldTransaction(store, session.id)
    task = held.start()
    await held.wait_inside()
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done()  # the caller waits for the thread: the write lock stays held meanwhile
    held.release()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not store._connection().in_transaction
    assert [m.message.text for m in await store.messages(session.id)] == ["uncommitted"]  # it committed
    await store.append_message(session.id, Message.user("next"))
    assert [m.seq for m in await store.messages(session.id)] == [99, 100]


async def test_the_read_connection_cannot_write(store: Store) -> None:
    session = await store.create_session(profile="generic")
    with pytest.raises(StoreError, match=r"readonly|read-only"):
        await store.fetch_all("sneak a write in", "UPDATE sessions SET title = 'x' WHERE id = ?", (session.id,))
    assert (await store.get_session(session.id)).title == ""


async def test_many_streams_checkpointing_at_once_keep_every_message_whole(store: Store) -> None:
    """Twenty runs checkpoint a growing message while reads go on: every read sees whole, ordered text."""
    sessions = [await store.create_session(profile="generic") for _ in range(20)]

    async def stream(session_id: str) -> int:
        text = ""
        message_id = await store.append_message(session_id, Message.assistant(""), partial=True)
        for i in range(15):
            text += f"word{i} "
            await store.update_message(message_id, Message.assistant(text), partial=True)
        await store.update_message(message_id, Message.assistant(text), partial=False)
        return message_id

    async def read_while_streaming() -> None:
        for _ in range(30):
            for stored in await store.messages(sessions[0].id):
                words = stored.message.text.split()
                assert words == [f"word{i}" for i in range(len(words))]
            await asyncio.sleep(0)

    ids, _ = await asyncio.gather(asyncio.gather(*(stream(s.id) for s in sessions)), read_while_streaming())
    for session, message_id in zip(sessions, ids, strict=True):
        (stored,) = await store.messages(session.id)
        assert stored.id == message_id and not stored.partial
        assert stored.message.text == " ".join(f"word{i}" for i in range(15)) + " "


async def test_concurrent_first_opens_of_fresh_files_all_succeed(tmp_path: Path) -> None:
    """Switching a new file to WAL from several connections at once can fail with "database is locked"
    without waiting; opening retries it. (It failed about one time in fifteen before.)"""
    for attempt in range(25):
        path = tmp_path / f"fresh-{attempt}.db"
        stores = await asyncio.gather(*(Store.open(path) for _ in range(4)))
        try:
            created = await asyncio.gather(*(s.create_session(profile="generic") for s in stores))
            assert len(await stores[0].list_sessions()) == len(created) == 4
        finally:
            for opened in stores:
                await opened.close()
