"""The `sessions` table (and each session's remembered "Always" answers): a conversation, a subagent's or a
headless run's, and the tree they make.

`SessionTable` is a part of `Store` (store/sqlite.py), a mixin over `Database`: `store.create_session(…)`,
`store.descendants(…)`, `store.session_project(…)`.
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
from yeetui.store.records import SessionRecord, dump_json, utcnow

_SESSION_FIELDS = frozenset({"title", "profile", "model", "workspace", "cwd", "status"})


def session_key(profile: str, session_id: str, *, subagent: bool, origin: str = "primary") -> str:
    """`agent:<profile>:<origin>:<id>`: `subagent` for a child; for a top-level session where it came from —
    `primary` (a conversation in the app), `run` (`yeetui run`), `detached` (`yeetui agents start`)."""
    return f"agent:{profile}:{'subagent' if subagent else origin}:{session_id}"


class SessionTable(Database):
    """Sessions: created, read, listed, walked as a tree, changed, deleted; and what each remembers allowed."""

    async def create_session(
        self, *, profile: str, title: str = "", parent_id: str | None = None, depth: int | None = None,
        key: str | None = None, model: str | None = None, cwd: str | Path | None = None,
        workspace: dict[str, Any] | None = None, status: str = "active", origin: str = "primary",
    ) -> SessionRecord:
        """Create a session. `depth` defaults to the parent's depth + 1 (0 without a parent); `key`
        defaults to `agent:<profile>:<origin>:<id>`, or `…:subagent:<id>` for a child."""
        session_id = uuid.uuid4().hex
        key = key or session_key(profile, session_id, subagent=parent_id is not None, origin=origin)

        def insert(conn: sqlite3.Connection) -> sqlite3.Row | None:
            level = depth
            if parent_id is not None:
                parent = first_row(conn, "SELECT depth FROM sessions WHERE id = ?", (parent_id,))
                if parent is None:
                    raise StoreError(f"There is no parent session {parent_id} in the store at {self.path}.")
                level = parent["depth"] + 1 if level is None else level
            if first_row(conn, "SELECT 1 FROM sessions WHERE key = ?", (key,)) is not None:
                raise StoreError(f"A session with key {key!r} already exists in the store at {self.path}.")
            now = utcnow()
            conn.execute(
                "INSERT INTO sessions (id, key, parent_id, depth, profile, title, model, workspace, cwd,"
                " status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, key, parent_id, level or 0, profile, self.clean(title), model, dump_json(workspace),
                 None if cwd is None else str(cwd), status, now, now),
            )
            return first_row(conn, "SELECT * FROM sessions WHERE id = ?", (session_id,))

        row = await self.transaction(f"create a {profile!r} session", insert)
        assert row is not None
        return SessionRecord.from_row(row)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        row = await self.fetch_one(f"read session {session_id}", "SELECT * FROM sessions WHERE id = ?",
                                   (session_id,))
        return None if row is None else SessionRecord.from_row(row)

    async def get_sessions(self, session_ids: Iterable[str]) -> dict[str, SessionRecord]:
        """The sessions among `session_ids` that exist, by id, in one read (a listing of many runs)."""
        wanted = list(dict.fromkeys(session_ids))
        found: dict[str, SessionRecord] = {}
        for start in range(0, len(wanted), 500):  # under SQLite's limit on parameters
            chunk = wanted[start:start + 500]
            rows = await self.fetch_all("read sessions", "SELECT * FROM sessions WHERE id IN"
                                        f" ({', '.join('?' * len(chunk))})", chunk)
            found.update((row["id"], SessionRecord.from_row(row)) for row in rows)
        return found

    async def resolve_session(self, id_or_prefix: str) -> SessionRecord:
        """The session whose id (or key) is `id_or_prefix`, or whose id uniquely starts with it."""
        return SessionRecord.from_row(await self.resolve_row("sessions", "session", id_or_prefix,
                                                             key_column="key"))

    async def list_sessions(self, *, parent_id: str | EllipsisType | None = ..., cwd: str | Path | None = None,
                            limit: int = 50) -> list[SessionRecord]:
        """Sessions, most recently active first. `parent_id=None`: top-level only; `...`: all. With `cwd`, only
        the sessions opened in that folder (a project's, for a top-level listing)."""
        clauses, params = _parent_clause(parent_id)
        if cwd is not None:
            clauses.append("cwd = ?")
            params.append(str(cwd))
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = await self.fetch_all("list sessions", f"SELECT * FROM sessions{where}"
                                    " ORDER BY updated_at DESC, rowid DESC LIMIT ?", [*params, limit])
        return [SessionRecord.from_row(r) for r in rows]

    async def latest_session(self, *, parent_id: str | EllipsisType | None = None, origin: str | None = None,
                             with_messages: bool = False, cwd: str | Path | None = None) -> SessionRecord | None:
        """The most recently active top-level session (what `--continue` resumes; `parent_id` as for
        `list_sessions`); with `origin`, the latest of that origin (`primary`: a conversation of the app, not a
        headless or detached run); `with_messages` skips a conversation opened and left with nothing said in it;
        with `cwd`, only a session of that project."""
        clauses, params = _parent_clause(parent_id)
        clauses.insert(0, "1")
        if cwd is not None:
            clauses.append("cwd = ?")
            params.append(str(cwd))
        if origin is not None:
            clauses.append("key LIKE ? ESCAPE '\\'")
            params.append(f"agent:%:{origin}:%")
        if with_messages:
            clauses.append("EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id)")
        rows = await self.fetch_all("find the latest session", f"SELECT * FROM sessions WHERE {' AND '.join(clauses)}"
                                    " ORDER BY updated_at DESC, rowid DESC LIMIT 1", params)
        return SessionRecord.from_row(rows[0]) if rows else None

    async def children(self, session_id: str) -> list[SessionRecord]:
        """Direct children, oldest first."""
        rows = await self.fetch_all(f"list the children of session {session_id}",
                                    "SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, rowid",
                                    (session_id,))
        return [SessionRecord.from_row(r) for r in rows]

    async def descendants(self, session_id: str) -> list[SessionRecord]:
        """Every session below `session_id` (not itself), by depth then age."""
        rows = await self.fetch_all(
            f"list the descendants of session {session_id}",
            "WITH RECURSIVE tree(id) AS (SELECT id FROM sessions WHERE parent_id = ?"
            " UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_id = t.id)"
            " SELECT * FROM sessions WHERE id IN (SELECT id FROM tree) ORDER BY depth, created_at, rowid",
            (session_id,),
        )
        return [SessionRecord.from_row(r) for r in rows]

    async def update_session(self, session_id: str, **fields: Any) -> SessionRecord:
        """Change any of title, profile, model, workspace (a dict), cwd, status; bumps `updated_at`."""
        unknown = set(fields) - _SESSION_FIELDS
        if unknown:
            raise TypeError(f"update_session() cannot change {', '.join(sorted(unknown))}; "
                            f"it changes only {', '.join(sorted(_SESSION_FIELDS))}.")
        values = dict(fields)
        if "workspace" in values:
            values["workspace"] = dump_json(values["workspace"])
        if values.get("cwd") is not None:
            values["cwd"] = str(values["cwd"])
        values["updated_at"] = utcnow()
        assignments = ", ".join(f"{name} = ?" for name in values)

        def update(conn: sqlite3.Connection) -> sqlite3.Row | None:
            cursor = conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", [*values.values(), session_id])
            if cursor.rowcount == 0:
                raise StoreError(f"There is no session {session_id} in the store at {self.path}.")
            return first_row(conn, "SELECT * FROM sessions WHERE id = ?", (session_id,))

        row = await self.transaction(f"update session {session_id}", update)
        assert row is not None
        return SessionRecord.from_row(row)

    async def delete_session(self, session_id: str) -> None:
        """Delete a session with its descendants, messages, runs and inbox items (spawn `cleanup: delete`)."""
        def delete(conn: sqlite3.Connection) -> None:
            if conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise StoreError(f"There is no session {session_id} in the store at {self.path}.")

        await self.transaction(f"delete session {session_id}", delete)

    async def remember_permission(self, session_id: str, tool: str, subject: str) -> None:
        """Keep an "Always" answer for the session: `tool` on exactly `subject` is allowed in its later runs.
        A subject holding a key is not written down (the store keeps no keys): it holds for the current run only."""
        if self.clean(subject) != subject:
            return
        await self.transaction(
            f"remember {tool} on {subject[:40]!r} for session {session_id}",
            lambda conn: conn.execute(
                "INSERT OR IGNORE INTO session_permissions (session_id, tool, subject, created_at)"
                " VALUES (?, ?, ?, ?)", (session_id, tool, subject, utcnow())))

    async def remembered_permissions(self, session_id: str) -> list[tuple[str, str]]:
        """The session's "Always" answers as (tool, subject), oldest first."""
        rows = await self.fetch_all(f"read the remembered permissions of session {session_id}",
                                    "SELECT tool, subject FROM session_permissions WHERE session_id = ?"
                                    " ORDER BY created_at, rowid", (session_id,))
        return [(row["tool"], row["subject"]) for row in rows]

    async def root_session_id(self, session_id: str) -> str:
        """The top-level session above `session_id` (itself when it has no parent)."""
        row = await self.fetch_one(
            f"find the root of session {session_id}",
            "WITH RECURSIVE up(id, parent_id) AS (SELECT id, parent_id FROM sessions WHERE id = ?"
            " UNION SELECT s.id, s.parent_id FROM sessions s JOIN up ON s.id = up.parent_id)"
            " SELECT id FROM up WHERE parent_id IS NULL", (session_id,))
        return row["id"] if row is not None else session_id

    async def session_project(self, session_id: str) -> Path | None:
        """The project the conversation tree of `session_id` belongs to: the folder its top-level session was
        opened in (a subagent's own `cwd` may be its worktree). None for a session that is not there or that
        recorded no folder."""
        row = await self.fetch_one(
            f"find the project of session {session_id}",
            "WITH RECURSIVE up(id, parent_id, cwd) AS (SELECT id, parent_id, cwd FROM sessions WHERE id = ?"
            " UNION SELECT s.id, s.parent_id, s.cwd FROM sessions s JOIN up ON s.id = up.parent_id)"
            " SELECT cwd FROM up WHERE parent_id IS NULL", (session_id,))
        return Path(row["cwd"]) if row is not None and row["cwd"] is not None else None

    async def session_tree_ids(self, session_id: str) -> list[str]:
        """`session_id` and every session below it."""
        rows = await self.fetch_all(f"list the sessions below {session_id}",
                                    "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t"
                                    " ON s.parent_id = t.id) SELECT id FROM tree", (session_id,))
        return [row["id"] for row in rows]

    async def has_child_sessions(self, session_id: str) -> bool:
        return await self.fetch_one(f"look for subagent sessions of {session_id}",
                                    "SELECT 1 FROM sessions WHERE parent_id = ? LIMIT 1", (session_id,)) is not None


def _parent_clause(parent_id: str | EllipsisType | None) -> tuple[list[str], list[Any]]:
    """The WHERE clause of a session listing's `parent_id`: None, top-level only; `...`, any; else its children."""
    if parent_id is None:
        return ["parent_id IS NULL"], []
    if parent_id is ...:
        return [], []
    return ["parent_id = ?"], [parent_id]
