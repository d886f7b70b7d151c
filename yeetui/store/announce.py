"""Exactly-once announcements: an inbox item told in its session's conversation. The message insert and the
item's mark share one transaction (they span messages, inbox_items and agent_runs), so an item is announced
once whatever crashes or races. `Store.announcements` is the instance callers use."""

from __future__ import annotations

import sqlite3

from yeetui.messages import Message
from yeetui.store.db import Database
from yeetui.store.records import InboxItem, utcnow


class Announcements:
    """Inbox items that go into their session's conversation as a message (`data["announce"]`), once."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def announce(self, item_id: int, message: Message, *, run_id: str | None = None,
                       only_if_idle: bool = False) -> int | None:
        """Append `message` to the item's recipient session and mark the item announced — unless it already
        was, in which case nothing is written and None is returned. Returns the new message id.

        `only_if_idle`: also write nothing while the recipient session has a live run — whatever process runs
        it. A message appended mid-run could land between a tool call and its result; that run announces
        the item itself between turns. Decided in the same transaction as the insert, so a run that starts
        meanwhile either finds the announcement in its history or keeps the item for its next turn."""
        body = self._db.clean(message.model_dump_json())

        def announce(conn: sqlite3.Connection) -> int | None:
            row = conn.execute("SELECT session_id, announced_at FROM inbox_items WHERE id = ?", (item_id,)).fetchone()
            if row is None or row["announced_at"] is not None:
                return None
            session_id = row["session_id"]
            if only_if_idle and conn.execute(
                    "SELECT 1 FROM agent_runs WHERE session_id = ? AND status IN ('running', 'queued',"
                    " 'waiting_permission') LIMIT 1", (session_id,)).fetchone() is not None:
                return None
            now = utcnow()
            cursor = conn.execute(
                "INSERT INTO messages (session_id, run_id, seq, role, body, partial, created_at, updated_at)"
                " VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?),"
                " ?, ?, 0, ?, ?)",
                (session_id, run_id, session_id, message.role, body, now, now),
            )
            conn.execute("UPDATE inbox_items SET announced_at = ?, updated_at = ? WHERE id = ?", (now, now, item_id))
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            return cursor.lastrowid

        return await self._db.transaction(f"announce inbox item {item_id}", announce)

    async def mark_consumed(self, session_id: str, *, delivered_by: str) -> int:
        """A model turn of `session_id` saw everything delivered to it by `delivered_by` (an ISO time, taken
        when the turn's request was built): those items are consumed. How many were. Called after every model
        request: a look on the reader first, so a turn with nothing newly delivered takes no write lock."""
        if await self._db.fetch_one(f"look for unseen results of session {session_id}",
                                    "SELECT 1 FROM inbox_items WHERE session_id = ? AND consumed_at IS NULL AND"
                                    " announced_at IS NOT NULL AND announced_at <= ? LIMIT 1",
                                    (session_id, delivered_by)) is None:
            return 0

        def mark(conn: sqlite3.Connection) -> int:
            now = utcnow()
            return conn.execute(
                "UPDATE inbox_items SET consumed_at = ?, updated_at = ? WHERE session_id = ? AND consumed_at IS NULL"
                " AND announced_at IS NOT NULL AND announced_at <= ?", (now, now, session_id, delivered_by)).rowcount

        return await self._db.transaction(f"mark results seen by session {session_id}", mark)

    async def unseen_before(self, session_id: str, before: str) -> list[InboxItem]:
        """Children's results delivered to `session_id` before `before` (an ISO time: a compaction's) that no
        model turn has seen yet, oldest first."""
        rows = await self._db.fetch_all(
            f"list unseen results of session {session_id}",
            "SELECT * FROM inbox_items WHERE session_id = ? AND consumed_at IS NULL AND announced_at IS NOT NULL"
            " AND announced_at < ? AND kind IN ('completion', 'review') ORDER BY id", (session_id, before))
        return [InboxItem.from_row(row) for row in rows]

    async def redeliver(self, item_id: int, message: Message, *, run_id: str | None = None) -> int | None:
        """Deliver an unseen result again (after a compaction took it out of the conversation): the message is
        appended and the item counts as delivered now — so a later compaction or resume does not deliver it a
        third time. None when it was seen meanwhile."""
        body = self._db.clean(message.model_dump_json())

        def again(conn: sqlite3.Connection) -> int | None:
            row = conn.execute("SELECT session_id, consumed_at FROM inbox_items WHERE id = ?", (item_id,)).fetchone()
            if row is None or row["consumed_at"] is not None:
                return None
            now = utcnow()
            cursor = conn.execute(
                "INSERT INTO messages (session_id, run_id, seq, role, body, partial, created_at, updated_at)"
                " VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?),"
                " ?, ?, 0, ?, ?)", (row["session_id"], run_id, row["session_id"], message.role, body, now, now))
            conn.execute("UPDATE inbox_items SET announced_at = ?, updated_at = ? WHERE id = ?", (now, now, item_id))
            return cursor.lastrowid

        return await self._db.transaction(f"deliver inbox item {item_id} again", again)

    async def mark_announced(self, item_id: int) -> bool:
        """Mark an item announced without a message (its content went out another way, e.g. as the result
        of a blocking spawn). True if this call marked it."""
        def mark(conn: sqlite3.Connection) -> bool:
            now = utcnow()
            cursor = conn.execute(
                "UPDATE inbox_items SET announced_at = ?, updated_at = ? WHERE id = ? AND announced_at IS NULL",
                (now, now, item_id))
            return cursor.rowcount == 1

        return await self._db.transaction(f"mark inbox item {item_id} announced", mark)

    async def pending(self, session_id: str) -> list[InboxItem]:
        """Items for `session_id` that should be announced and were not yet, oldest first."""
        rows = await self._db.fetch_all(
            f"list pending announcements of session {session_id}",
            "SELECT * FROM inbox_items WHERE session_id = ? AND announced_at IS NULL"
            " AND json_extract(data, '$.announce') = 1 ORDER BY id", (session_id,))
        return [InboxItem.from_row(row) for row in rows]

    async def pending_sessions(self) -> list[str]:
        """Sessions with at least one announcement still to make (after a crash between record and announce)."""
        rows = await self._db.fetch_all(
            "list sessions with pending announcements",
            "SELECT DISTINCT session_id FROM inbox_items WHERE announced_at IS NULL"
            " AND json_extract(data, '$.announce') = 1", ())
        return [row["session_id"] for row in rows]
