"""The side tables of the store: inbox items, breadcrumbs, worktrees and workflow states.

A mixin over `Database`; `yeetui.store.sqlite.Store` is the class callers use.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable
from pathlib import Path
from types import EllipsisType
from typing import Any

from yeetui.errors import StoreError
from yeetui.store.db import Database, first_row
from yeetui.store.records import (
    INBOX_STATUSES,
    Breadcrumb,
    InboxItem,
    InboxStatus,
    WorkflowStateRecord,
    WorktreeRecord,
    dump_json,
    utcnow,
)

_WORKTREE_FIELDS = frozenset({"path", "branch", "base_branch", "owner_session_id", "status", "base_commit",
                              "label"})


def _placeholders(values: Iterable[Any]) -> tuple[str, list[Any]]:
    items = list(values)
    return ", ".join("?" * len(items)), items


class SideTablesMixin(Database):
    # ----- inbox -------------------------------------------------------------------------------------

    async def put_inbox_item(
        self, *, session_id: str, kind: str, title: str, body: str = "", run_id: str | None = None,
        data: dict[str, Any] | None = None, dedupe_key: str | None = None,
    ) -> tuple[InboxItem, bool]:
        """Add an item for the recipient `session_id`, unless one with `dedupe_key` exists.

        Returns the item and whether this call created it, so a deliverer announces exactly once.
        """
        clean = self.clean
        data_text = None if data is None else dump_json(data)

        def put(conn: sqlite3.Connection) -> tuple[sqlite3.Row | None, bool]:
            if dedupe_key is not None:
                row = first_row(conn, "SELECT * FROM inbox_items WHERE dedupe_key = ?", (dedupe_key,))
                if row is not None:
                    return row, False
            self.require(conn, "sessions", session_id, "session")
            if run_id is not None:
                self.require(conn, "agent_runs", run_id, "run")
            now = utcnow()
            cursor = conn.execute(
                "INSERT INTO inbox_items (session_id, run_id, kind, title, body, data, status, dedupe_key,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'unread', ?, ?, ?)",
                (session_id, run_id, kind, clean(title), clean(body),
                 None if data_text is None else clean(data_text), dedupe_key, now, now),
            )
            return first_row(conn, "SELECT * FROM inbox_items WHERE id = ?", (cursor.lastrowid,)), True

        row, created = await self.transaction(f"add a {kind!r} inbox item for session {session_id}", put)
        assert row is not None
        return InboxItem.from_row(row), created

    async def add_inbox_item(
        self, *, session_id: str, kind: str, title: str, body: str = "", run_id: str | None = None,
        data: dict[str, Any] | None = None, dedupe_key: str | None = None,
    ) -> InboxItem:
        """Like `put_inbox_item`, returning only the item (the existing one for a known `dedupe_key`)."""
        item, _ = await self.put_inbox_item(session_id=session_id, kind=kind, title=title, body=body,
                                            run_id=run_id, data=data, dedupe_key=dedupe_key)
        return item

    async def get_inbox_item(self, item_id: int) -> InboxItem | None:
        row = await self.fetch_one(f"read inbox item {item_id}", "SELECT * FROM inbox_items WHERE id = ?",
                                   (item_id,))
        return None if row is None else InboxItem.from_row(row)

    async def list_inbox(self, session_id: str | None,
                         statuses: Iterable[InboxStatus] | None = None) -> list[InboxItem]:
        """Items for one recipient (every recipient when `session_id` is None), newest first."""
        sql, params = self._inbox_filter(session_id, statuses)
        rows = await self.fetch_all("list inbox items", f"SELECT * FROM inbox_items{sql}"
                                    " ORDER BY created_at DESC, id DESC", params)
        return [InboxItem.from_row(r) for r in rows]

    async def count_inbox(self, session_id: str | None,
                          statuses: Iterable[InboxStatus] | None = ("unread",)) -> int:
        sql, params = self._inbox_filter(session_id, statuses)
        row = await self.fetch_one("count inbox items", f"SELECT count(*) FROM inbox_items{sql}", params)
        return int(row[0]) if row else 0

    @staticmethod
    def _inbox_filter(session_id: str | None,
                      statuses: Iterable[InboxStatus] | None) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if statuses is not None:
            wanted = list(statuses)
            _check_inbox_statuses(wanted)
            marks, values = _placeholders(wanted)
            clauses.append(f"status IN ({marks})")
            params.extend(values)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    async def set_inbox_status(self, item_id: int, status: InboxStatus) -> InboxItem:
        _check_inbox_statuses([status])

        def mark(conn: sqlite3.Connection) -> sqlite3.Row | None:
            cursor = conn.execute("UPDATE inbox_items SET status = ?, updated_at = ? WHERE id = ?",
                                  (status, utcnow(), item_id))
            if cursor.rowcount == 0:
                raise StoreError(f"There is no inbox item {item_id} in the store at {self.path}.")
            return first_row(conn, "SELECT * FROM inbox_items WHERE id = ?", (item_id,))

        row = await self.transaction(f"mark inbox item {item_id} {status}", mark)
        assert row is not None
        return InboxItem.from_row(row)

    # ----- breadcrumbs -------------------------------------------------------------------------------

    async def add_breadcrumb(self, *, session_id: str, summary: str, child_session_id: str | None = None,
                             run_id: str | None = None) -> Breadcrumb:
        def add(conn: sqlite3.Connection) -> sqlite3.Row | None:
            self.require(conn, "sessions", session_id, "session")
            if child_session_id is not None:
                self.require(conn, "sessions", child_session_id, "child session")
            if run_id is not None:
                self.require(conn, "agent_runs", run_id, "run")
            cursor = conn.execute(
                "INSERT INTO breadcrumbs (session_id, child_session_id, run_id, summary, created_at)"
                " VALUES (?, ?, ?, ?, ?)", (session_id, child_session_id, run_id, self.clean(summary), utcnow()),
            )
            return first_row(conn, "SELECT * FROM breadcrumbs WHERE id = ?", (cursor.lastrowid,))

        row = await self.transaction(f"add a breadcrumb to session {session_id}", add)
        assert row is not None
        return Breadcrumb.from_row(row)

    async def list_breadcrumbs(self, session_id: str) -> list[Breadcrumb]:
        """A session's breadcrumbs, oldest first."""
        rows = await self.fetch_all(f"list breadcrumbs of session {session_id}",
                                    "SELECT * FROM breadcrumbs WHERE session_id = ? ORDER BY created_at, id",
                                    (session_id,))
        return [Breadcrumb.from_row(r) for r in rows]

    # ----- worktrees ---------------------------------------------------------------------------------

    async def add_worktree(self, *, path: str | Path, branch: str, repo: str | Path,
                           base_branch: str | None = None, owner_session_id: str | None = None,
                           status: str = "active", kind: str = "worktree", base_commit: str | None = None,
                           label: str | None = None) -> WorktreeRecord:
        """Register a worktree (or clone). Only one entry per path may have a status other than deleted."""
        path_text = str(path)

        def add(conn: sqlite3.Connection) -> sqlite3.Row | None:
            live = first_row(conn, "SELECT id FROM worktrees WHERE path = ? AND status != 'deleted'", (path_text,))
            if live is not None and status != "deleted":
                raise StoreError(f"A worktree at {path_text} is already registered (id {live['id']}).")
            if owner_session_id is not None:
                self.require(conn, "sessions", owner_session_id, "owner session")
            worktree_id, now = uuid.uuid4().hex, utcnow()
            conn.execute(
                "INSERT INTO worktrees (id, path, branch, base_branch, repo, owner_session_id, status,"
                " created_at, updated_at, kind, base_commit, label) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (worktree_id, path_text, branch, base_branch, str(repo), owner_session_id, status, now, now,
                 kind, base_commit, label),
            )
            return first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))

        row = await self.transaction(f"register the worktree {path_text}", add)
        assert row is not None
        return WorktreeRecord.from_row(row)

    async def get_worktree(self, worktree_id: str) -> WorktreeRecord | None:
        row = await self.fetch_one(f"read worktree {worktree_id}", "SELECT * FROM worktrees WHERE id = ?",
                                   (worktree_id,))
        return None if row is None else WorktreeRecord.from_row(row)

    async def resolve_worktree(self, id_or_prefix: str) -> WorktreeRecord:
        return WorktreeRecord.from_row(await self.resolve_row("worktrees", "worktree", id_or_prefix))

    async def list_worktrees(self, *, repo: str | Path | None = None, statuses: Iterable[str] | None = None,
                             owner_session_id: str | EllipsisType | None = ...,
                             path: str | Path | None = None) -> list[WorktreeRecord]:
        """Registered worktrees, newest first. `owner_session_id=None` means unowned ones only."""
        clauses: list[str] = []
        params: list[Any] = []
        if repo is not None:
            clauses.append("repo = ?")
            params.append(str(repo))
        if path is not None:
            clauses.append("path = ?")
            params.append(str(path))
        if statuses is not None:
            marks, values = _placeholders(statuses)
            clauses.append(f"status IN ({marks})")
            params.extend(values)
        if owner_session_id is None:
            clauses.append("owner_session_id IS NULL")
        elif owner_session_id is not ...:
            clauses.append("owner_session_id = ?")
            params.append(owner_session_id)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = await self.fetch_all("list worktrees",
                                    f"SELECT * FROM worktrees{where} ORDER BY created_at DESC, rowid DESC", params)
        return [WorktreeRecord.from_row(r) for r in rows]

    async def update_worktree(self, worktree_id: str, **fields: Any) -> WorktreeRecord:
        """Change any of path, branch, base_branch, owner_session_id, status (claim, release, merged…)."""
        unknown = set(fields) - _WORKTREE_FIELDS
        if unknown:
            raise TypeError(f"update_worktree() cannot change {', '.join(sorted(unknown))}; "
                            f"it changes only {', '.join(sorted(_WORKTREE_FIELDS))}.")
        values = {k: (str(v) if isinstance(v, Path) else v) for k, v in fields.items()}

        def update(conn: sqlite3.Connection) -> sqlite3.Row | None:
            if values.get("owner_session_id") is not None:
                self.require(conn, "sessions", values["owner_session_id"], "owner session")
            values["updated_at"] = utcnow()
            assignments = ", ".join(f"{name} = ?" for name in values)
            cursor = conn.execute(f"UPDATE worktrees SET {assignments} WHERE id = ?", [*values.values(), worktree_id])
            if cursor.rowcount == 0:
                raise StoreError(f"There is no worktree {worktree_id} in the store at {self.path}.")
            return first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))

        row = await self.transaction(f"update worktree {worktree_id}", update)
        assert row is not None
        return WorktreeRecord.from_row(row)

    async def claim_worktree(self, worktree_id: str, session_id: str | None, *,
                             from_session_id: str | None = None) -> WorktreeRecord:
        """Give the worktree to `session_id` (None releases it), atomically. Refused (StoreError) when it
        belongs to another session (unless that is `from_session_id`: a hand-over its owner's caller
        agreed to) or is no longer active."""

        def claim(conn: sqlite3.Connection) -> sqlite3.Row | None:
            row = first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))
            if row is None:
                raise StoreError(f"There is no worktree {worktree_id} in the store at {self.path}.")
            if row["status"] != "active":
                raise StoreError(f"Worktree {worktree_id[:12]} ({row['branch']}) is {row['status']}; only an "
                                 "active worktree can be claimed or released.")
            owner = row["owner_session_id"]
            if session_id is not None and owner not in (None, session_id, from_session_id):
                raise StoreError(f"Worktree {worktree_id[:12]} ({row['branch']}) belongs to session "
                                 f"{owner[:12]}; that session must release it first.")
            if session_id is not None:
                self.require(conn, "sessions", session_id, "owner session")
            conn.execute("UPDATE worktrees SET owner_session_id = ?, updated_at = ? WHERE id = ?",
                         (session_id, utcnow(), worktree_id))
            return first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))

        row = await self.transaction(f"claim worktree {worktree_id}", claim)
        assert row is not None
        return WorktreeRecord.from_row(row)

    # ----- workflow states ---------------------------------------------------------------------------

    async def save_workflow_state(self, run_id: str, workflow: str,
                                  state: dict[str, Any]) -> WorkflowStateRecord:
        """Replace the saved state of `run_id`'s workflow (one row per run)."""
        saved = dump_json(state)

        def save(conn: sqlite3.Connection) -> sqlite3.Row | None:
            self.require(conn, "agent_runs", run_id, "run")
            conn.execute(
                "INSERT INTO workflow_states (run_id, workflow, state, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET workflow = excluded.workflow, state = excluded.state,"
                " updated_at = excluded.updated_at",
                (run_id, workflow, saved, utcnow()),
            )
            return first_row(conn, "SELECT * FROM workflow_states WHERE run_id = ?", (run_id,))

        row = await self.transaction(f"save the workflow state of run {run_id}", save)
        assert row is not None
        return WorkflowStateRecord.from_row(row)

    async def load_workflow_state(self, run_id: str) -> WorkflowStateRecord | None:
        row = await self.fetch_one(f"read the workflow state of run {run_id}",
                                   "SELECT * FROM workflow_states WHERE run_id = ?", (run_id,))
        return None if row is None else WorkflowStateRecord.from_row(row)


def _check_inbox_statuses(statuses: Iterable[str]) -> None:
    for status in statuses:
        if status not in INBOX_STATUSES:
            raise StoreError(f"Unknown inbox status {status!r}; use one of {', '.join(INBOX_STATUSES)}.")
