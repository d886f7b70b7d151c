"""The `messages` table: each session's transcript, in order, a streaming answer checkpointed as it grows.

`MessageTable` is a part of `Store` (store/sqlite.py), a mixin over `Database`: `store.append_message(…)`,
`store.messages(session_id)`.
"""

from __future__ import annotations

import sqlite3

from yeetui.errors import StoreError
from yeetui.messages import Message
from yeetui.store.db import Database
from yeetui.store.records import StoredMessage, utcnow


class MessageTable(Database):
    """Messages: appended, checkpointed and finalised, deleted, read back by page, counted."""

    async def append_message(self, session_id: str, message: Message, *, run_id: str | None = None,
                             partial: bool = False) -> int:
        """Commit `message` as the session's next message; returns its id. Bumps the session's activity."""
        body = self.clean(message.model_dump_json())  # serialised (and redacted) here: the writer only runs SQL

        def insert(conn: sqlite3.Connection) -> int | None:
            self.require(conn, "sessions", session_id, "session")
            if run_id is not None:
                self.require(conn, "agent_runs", run_id, "run")
            now = utcnow()
            cursor = conn.execute(
                "INSERT INTO messages (session_id, run_id, seq, role, body, partial, created_at, updated_at)"
                " VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?),"
                " ?, ?, ?, ?, ?)",
                (session_id, run_id, session_id, message.role, body, int(partial), now, now),
            )
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            return cursor.lastrowid

        message_id = await self.transaction(f"append a message to session {session_id}", insert)
        assert message_id is not None
        return message_id

    async def update_message(self, message_id: int, message: Message, *, partial: bool) -> None:
        """Replace a message's content: checkpoint a streaming message, or finalise it (`partial=False`)."""
        def update(conn: sqlite3.Connection) -> None:
            # Serialised and redacted here, in the database's thread: a long answer's checkpoint is ~40 KB
            # through the redaction patterns, which on the event loop would hold up the user's typing.
            body = self.clean(message.model_dump_json())
            now = utcnow()
            cursor = conn.execute("UPDATE messages SET role = ?, body = ?, partial = ?, updated_at = ? WHERE id = ?",
                                  (message.role, body, int(partial), now, message_id))
            if cursor.rowcount == 0:
                raise StoreError(f"There is no message {message_id} in the store at {self.path}.")
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id ="
                         " (SELECT session_id FROM messages WHERE id = ?)", (now, message_id))

        await self.transaction(f"update message {message_id}", update)

    async def delete_message(self, message_id: int) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            if conn.execute("DELETE FROM messages WHERE id = ?", (message_id,)).rowcount == 0:
                raise StoreError(f"There is no message {message_id} in the store at {self.path}.")

        await self.transaction(f"delete message {message_id}", delete)

    async def get_message(self, message_id: int) -> StoredMessage | None:
        row = await self.fetch_one(f"read message {message_id}", "SELECT * FROM messages WHERE id = ?",
                                   (message_id,))
        return None if row is None else StoredMessage.from_row(row)

    async def messages(self, session_id: str, *, include_partial: bool = True, limit: int | None = None,
                       after_seq: int | None = None, before_id: int | None = None, after_id: int | None = None,
                       from_start: bool = False) -> list[StoredMessage]:
        """A session's messages in order; `limit` keeps the last N (the first N with `from_start`),
        `after_seq` only newer ones, `before_id` / `after_id` only those older / newer than that message
        (paging back and forth through a long session)."""
        where, params = "session_id = ?", list[str | int]([session_id])
        if not include_partial:
            where += " AND partial = 0"
        if after_seq is not None:
            where += " AND seq > ?"
            params.append(after_seq)
        if before_id is not None:
            where += " AND seq < (SELECT seq FROM messages WHERE id = ?)"
            params.append(before_id)
        if after_id is not None:
            where += " AND seq > (SELECT seq FROM messages WHERE id = ?)"
            params.append(after_id)
        sql = f"SELECT * FROM messages WHERE {where} ORDER BY seq"
        if limit is not None and from_start:
            sql += " LIMIT ?"
            params.append(max(limit, 0))
        elif limit is not None:
            sql = (f"SELECT * FROM (SELECT * FROM messages WHERE {where} ORDER BY seq DESC LIMIT ?)"
                   " ORDER BY seq")
            params.append(max(limit, 0))
        rows = await self.fetch_all(f"read the messages of session {session_id}", sql, params)
        return [StoredMessage.from_row(r) for r in rows]

    async def run_has_messages(self, run_id: str) -> bool:
        """Whether run `run_id` committed anything to its transcript (its task first of all)."""
        return await self.fetch_one(f"look for the messages of run {run_id}",
                                    "SELECT 1 FROM messages WHERE run_id = ? LIMIT 1", (run_id,)) is not None

    async def count_messages(self, session_id: str, *, include_partial: bool = True) -> int:
        extra = "" if include_partial else " AND partial = 0"
        row = await self.fetch_one(f"count the messages of session {session_id}",
                                   f"SELECT count(*) FROM messages WHERE session_id = ?{extra}", (session_id,))
        return int(row[0]) if row else 0

    async def latest_compaction_at(self, session_id: str) -> str | None:
        """When the session was last compacted (its newest summary message), as stored; None if never."""
        row = await self.fetch_one(f"find the latest compaction of session {session_id}",
                                   "SELECT created_at FROM messages WHERE session_id = ? AND"
                                   " json_extract(body, '$.meta.compaction') = 1 ORDER BY seq DESC LIMIT 1",
                                   (session_id,))
        return str(row["created_at"]) if row is not None else None
