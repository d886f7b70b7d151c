"""The store's smaller tables: breadcrumbs, worktree records and workflow states, one part each.

`Store` makes one of each over its Database: `store.breadcrumbs`, `store.worktree_records`,
`store.workflow_states`. The inbox is `yeetui.store.inbox`.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable
from pathlib import Path
from types import EllipsisType
from typing import Any

from yeetui.errors import StoreError
from yeetui.store.db import Database, first_row, placeholders
from yeetui.store.records import Breadcrumb, WorkflowStateRecord, WorktreeRecord, dump_json, utcnow

_WORKTREE_FIELDS = frozenset({"path", "branch", "base_branch", "owner_session_id", "status", "base_commit",
                              "label"})


class Breadcrumbs:
    """The `breadcrumbs` table: short notes of what happened in a session (a child's summary, …)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, *, session_id: str, summary: str, child_session_id: str | None = None,
                  run_id: str | None = None) -> Breadcrumb:
        def add(conn: sqlite3.Connection) -> sqlite3.Row | None:
            self._db.require(conn, "sessions", session_id, "session")
            if child_session_id is not None:
                self._db.require(conn, "sessions", child_session_id, "child session")
            if run_id is not None:
                self._db.require(conn, "agent_runs", run_id, "run")
            cursor = conn.execute(
                "INSERT INTO breadcrumbs (session_id, child_session_id, run_id, summary, created_at)"
                " VALUES (?, ?, ?, ?, ?)", (session_id, child_session_id, run_id, self._db.clean(summary), utcnow()),
            )
            return first_row(conn, "SELECT * FROM breadcrumbs WHERE id = ?", (cursor.lastrowid,))

        row = await self._db.transaction(f"add a breadcrumb to session {session_id}", add)
        assert row is not None
        return Breadcrumb.from_row(row)

    async def list(self, session_id: str) -> list[Breadcrumb]:
        """A session's breadcrumbs, oldest first."""
        rows = await self._db.fetch_all(f"list breadcrumbs of session {session_id}",
                                        "SELECT * FROM breadcrumbs WHERE session_id = ? ORDER BY created_at, id",
                                        (session_id,))
        return [Breadcrumb.from_row(r) for r in rows]


class WorktreeRecords:
    """The `worktrees` table: the worktrees and clones yeetui made, who owns each, and its status. The git side
    is `yeetui.worktrees`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, *, path: str | Path, branch: str, repo: str | Path,
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
                self._db.require(conn, "sessions", owner_session_id, "owner session")
            worktree_id, now = uuid.uuid4().hex, utcnow()
            conn.execute(
                "INSERT INTO worktrees (id, path, branch, base_branch, repo, owner_session_id, status,"
                " created_at, updated_at, kind, base_commit, label) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (worktree_id, path_text, branch, base_branch, str(repo), owner_session_id, status, now, now,
                 kind, base_commit, label),
            )
            return first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))

        row = await self._db.transaction(f"register the worktree {path_text}", add)
        assert row is not None
        return WorktreeRecord.from_row(row)

    async def get(self, worktree_id: str) -> WorktreeRecord | None:
        row = await self._db.fetch_one(f"read worktree {worktree_id}", "SELECT * FROM worktrees WHERE id = ?",
                                       (worktree_id,))
        return None if row is None else WorktreeRecord.from_row(row)

    async def resolve(self, id_or_prefix: str) -> WorktreeRecord:
        return WorktreeRecord.from_row(await self._db.resolve_row("worktrees", "worktree", id_or_prefix))

    async def list(self, *, repo: str | Path | None = None, statuses: Iterable[str] | None = None,
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
            marks, values = placeholders(statuses)
            clauses.append(f"status IN ({marks})")
            params.extend(values)
        if owner_session_id is None:
            clauses.append("owner_session_id IS NULL")
        elif owner_session_id is not ...:
            clauses.append("owner_session_id = ?")
            params.append(owner_session_id)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = await self._db.fetch_all("list worktrees",
                                        f"SELECT * FROM worktrees{where} ORDER BY created_at DESC, rowid DESC", params)
        return [WorktreeRecord.from_row(r) for r in rows]

    async def update(self, worktree_id: str, **fields: Any) -> WorktreeRecord:
        """Change any of path, branch, base_branch, owner_session_id, status (claim, release, merged…)."""
        unknown = set(fields) - _WORKTREE_FIELDS
        if unknown:
            raise TypeError(f"worktree_records.update() cannot change {', '.join(sorted(unknown))}; "
                            f"it changes only {', '.join(sorted(_WORKTREE_FIELDS))}.")
        values = {k: (str(v) if isinstance(v, Path) else v) for k, v in fields.items()}

        def update(conn: sqlite3.Connection) -> sqlite3.Row | None:
            if values.get("owner_session_id") is not None:
                self._db.require(conn, "sessions", values["owner_session_id"], "owner session")
            values["updated_at"] = utcnow()
            assignments = ", ".join(f"{name} = ?" for name in values)
            cursor = conn.execute(f"UPDATE worktrees SET {assignments} WHERE id = ?", [*values.values(), worktree_id])
            if cursor.rowcount == 0:
                raise StoreError(f"There is no worktree {worktree_id} in the store at {self._db.path}.")
            return first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))

        row = await self._db.transaction(f"update worktree {worktree_id}", update)
        assert row is not None
        return WorktreeRecord.from_row(row)

    async def claim(self, worktree_id: str, session_id: str | None, *,
                    from_session_id: str | None = None) -> WorktreeRecord:
        """Give the worktree to `session_id` (None releases it), atomically. Refused (StoreError) when it
        belongs to another session (unless that is `from_session_id`: a hand-over its owner's caller
        agreed to) or is no longer active."""

        def claim(conn: sqlite3.Connection) -> sqlite3.Row | None:
            row = first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))
            if row is None:
                raise StoreError(f"There is no worktree {worktree_id} in the store at {self._db.path}.")
            if row["status"] != "active":
                raise StoreError(f"Worktree {worktree_id[:12]} ({row['branch']}) is {row['status']}; only an "
                                 "active worktree can be claimed or released.")
            owner = row["owner_session_id"]
            if session_id is not None and owner not in (None, session_id, from_session_id):
                raise StoreError(f"Worktree {worktree_id[:12]} ({row['branch']}) belongs to session "
                                 f"{owner[:12]}; that session must release it first.")
            if session_id is not None:
                self._db.require(conn, "sessions", session_id, "owner session")
            conn.execute("UPDATE worktrees SET owner_session_id = ?, updated_at = ? WHERE id = ?",
                         (session_id, utcnow(), worktree_id))
            return first_row(conn, "SELECT * FROM worktrees WHERE id = ?", (worktree_id,))

        row = await self._db.transaction(f"claim worktree {worktree_id}", claim)
        assert row is not None
        return WorktreeRecord.from_row(row)


class WorkflowStates:
    """The `workflow_states` table: the saved state of a run's workflow, one row per run."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(self, run_id: str, workflow: str, state: dict[str, Any]) -> WorkflowStateRecord:
        """Replace the saved state of `run_id`'s workflow (one row per run)."""
        saved = dump_json(state)

        def save(conn: sqlite3.Connection) -> sqlite3.Row | None:
            self._db.require(conn, "agent_runs", run_id, "run")
            conn.execute(
                "INSERT INTO workflow_states (run_id, workflow, state, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET workflow = excluded.workflow, state = excluded.state,"
                " updated_at = excluded.updated_at",
                (run_id, workflow, saved, utcnow()),
            )
            return first_row(conn, "SELECT * FROM workflow_states WHERE run_id = ?", (run_id,))

        row = await self._db.transaction(f"save the workflow state of run {run_id}", save)
        assert row is not None
        return WorkflowStateRecord.from_row(row)

    async def load(self, run_id: str) -> WorkflowStateRecord | None:
        row = await self._db.fetch_one(f"read the workflow state of run {run_id}",
                                       "SELECT * FROM workflow_states WHERE run_id = ?", (run_id,))
        return None if row is None else WorkflowStateRecord.from_row(row)
