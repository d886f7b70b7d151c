"""The inbox: items for a session — a child's ending, a watcher's interjection — each made once (`dedupe_key`).

`Store.inbox` is the instance callers use; announcing an item in its session is `Store.announcements`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from yeetui.errors import StoreError
from yeetui.store.db import Database, first_row, placeholders
from yeetui.store.records import INBOX_STATUSES, InboxItem, InboxStatus, dump_json, utcnow


class InboxItems:
    """The `inbox_items` table: what a session is told, with its status (unread, read, …)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(
        self, *, session_id: str, kind: str, title: str, body: str = "", run_id: str | None = None,
        data: dict[str, Any] | None = None, dedupe_key: str | None = None,
    ) -> tuple[InboxItem, bool]:
        """Add an item for the recipient `session_id`, unless one with `dedupe_key` exists.

        Returns the item and whether this call created it, so a deliverer announces exactly once.
        """
        clean = self._db.clean
        data_text = None if data is None else dump_json(data)

        def put(conn: sqlite3.Connection) -> tuple[sqlite3.Row | None, bool]:
            if dedupe_key is not None:
                row = first_row(conn, "SELECT * FROM inbox_items WHERE dedupe_key = ?", (dedupe_key,))
                if row is not None:
                    return row, False
            self._db.require(conn, "sessions", session_id, "session")
            if run_id is not None:
                self._db.require(conn, "agent_runs", run_id, "run")
            now = utcnow()
            cursor = conn.execute(
                "INSERT INTO inbox_items (session_id, run_id, kind, title, body, data, status, dedupe_key,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'unread', ?, ?, ?)",
                (session_id, run_id, kind, clean(title), clean(body),
                 None if data_text is None else clean(data_text), dedupe_key, now, now),
            )
            return first_row(conn, "SELECT * FROM inbox_items WHERE id = ?", (cursor.lastrowid,)), True

        row, created = await self._db.transaction(f"add a {kind!r} inbox item for session {session_id}", put)
        assert row is not None
        return InboxItem.from_row(row), created

    async def add(
        self, *, session_id: str, kind: str, title: str, body: str = "", run_id: str | None = None,
        data: dict[str, Any] | None = None, dedupe_key: str | None = None,
    ) -> InboxItem:
        """Like `put`, returning only the item (the existing one for a known `dedupe_key`)."""
        item, _ = await self.put(session_id=session_id, kind=kind, title=title, body=body,
                                 run_id=run_id, data=data, dedupe_key=dedupe_key)
        return item

    async def get(self, item_id: int) -> InboxItem | None:
        row = await self._db.fetch_one(f"read inbox item {item_id}", "SELECT * FROM inbox_items WHERE id = ?",
                                       (item_id,))
        return None if row is None else InboxItem.from_row(row)

    async def keyed(self, dedupe_key: str) -> InboxItem | None:
        """The item made under `dedupe_key`, if any (e.g. `completion:<run_id>`: a run's ending)."""
        row = await self._db.fetch_one(f"read the inbox item {dedupe_key!r}",
                                       "SELECT * FROM inbox_items WHERE dedupe_key = ?", (dedupe_key,))
        return None if row is None else InboxItem.from_row(row)

    async def list(self, session_id: str | None,
                   statuses: Iterable[InboxStatus] | None = None) -> list[InboxItem]:
        """Items for one recipient (every recipient when `session_id` is None), newest first."""
        sql, params = _inbox_filter(session_id, statuses)
        rows = await self._db.fetch_all("list inbox items", f"SELECT * FROM inbox_items{sql}"
                                        " ORDER BY created_at DESC, id DESC", params)
        return [InboxItem.from_row(r) for r in rows]

    async def count(self, session_id: str | None,
                    statuses: Iterable[InboxStatus] | None = ("unread",)) -> int:
        sql, params = _inbox_filter(session_id, statuses)
        row = await self._db.fetch_one("count inbox items", f"SELECT count(*) FROM inbox_items{sql}", params)
        return int(row[0]) if row else 0

    async def set_status(self, item_id: int, status: InboxStatus) -> InboxItem:
        _check_inbox_statuses([status])

        def mark(conn: sqlite3.Connection) -> sqlite3.Row | None:
            cursor = conn.execute("UPDATE inbox_items SET status = ?, updated_at = ? WHERE id = ?",
                                  (status, utcnow(), item_id))
            if cursor.rowcount == 0:
                raise StoreError(f"There is no inbox item {item_id} in the store at {self._db.path}.")
            return first_row(conn, "SELECT * FROM inbox_items WHERE id = ?", (item_id,))

        row = await self._db.transaction(f"mark inbox item {item_id} {status}", mark)
        assert row is not None
        return InboxItem.from_row(row)


def _inbox_filter(session_id: str | None, statuses: Iterable[InboxStatus] | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if statuses is not None:
        wanted = list(statuses)
        _check_inbox_statuses(wanted)
        marks, values = placeholders(wanted)
        clauses.append(f"status IN ({marks})")
        params.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _check_inbox_statuses(statuses: Iterable[str]) -> None:
    for status in statuses:
        if status not in INBOX_STATUSES:
            raise StoreError(f"Unknown inbox status {status!r}; use one of {', '.join(INBOX_STATUSES)}.")
