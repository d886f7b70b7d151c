"""`Store`: yeetui's SQLite persistence for sessions, messages and agent runs.

Open it with `await Store.open(path)` (or `async with await Store.open(path) as store`). Several Store
instances, in one process or many, may share a file: the database runs in WAL mode and writers wait up
to `busy_timeout`. Every call commits before it returns, so a `kill -9` loses nothing already stored.
Writes run as whole transactions on the store's writer thread; reads use a second, read-only connection
(see `yeetui.store.db`).

`Store` is a `Database` with the core tables — sessions (and their remembered permissions), messages and agent
runs — and holds the other tables as typed parts, each given the Database and nothing else:

- `inbox` (`InboxItems`, store/inbox.py) and `announcements` (`Announcements`, store/announce.py: an inbox item
  told in its session once, the message and the mark in one transaction);
- `breadcrumbs`, `worktree_records`, `workflow_states` (store/side_tables.py);
- `slots`, `run_commands`, `permission_asks`, `front_ends`, `tool_processes` (store/coordination.py: what
  processes sharing a data dir coordinate through).

So `store.inbox.list(session_id)`, `store.slots.take(run_id, limit)`, `store.permission_asks.post(…)`.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import EllipsisType
from typing import Any

import aiosqlite

from yeetui.errors import ChildLimitReached, StoreError
from yeetui.events import RunStatus
from yeetui.messages import Message, Usage
from yeetui.store.announce import Announcements
from yeetui.store.coordination import (
    FrontEnds,
    PermissionAsks,
    ProviderHolds,
    RunCommandQueue,
    SlotQueue,
    ToolProcesses,
)
from yeetui.store.db import Database, first_row
from yeetui.store.inbox import InboxItems
from yeetui.store.liveness import pid_alive, process_gone, process_start
from yeetui.store.records import (
    RunBrief,
    RunRecord,
    SessionRecord,
    StoredMessage,
    TreeTotals,
    dump_json,
    parse_ts,
    utcnow,
)
from yeetui.store.schedules import Schedules
from yeetui.store.side_tables import Breadcrumbs, WorkflowStates, WorktreeRecords

INTERRUPTED_ERROR = "found running at start-up; the process that ran it is gone"
"""The `error` of a run `mark_interrupted` ends."""

_SESSION_FIELDS = frozenset({"title", "model", "workspace", "cwd", "status"})
def _json_field(column: str, path: str) -> str:
    return f"CASE WHEN json_valid(r.{column}) THEN json_extract(r.{column}, '{path}') END"


_BRIEFS_SQL = (
    "SELECT r.id, r.session_id, r.profile, r.label, r.status, r.cost, substr(r.error, 1, 300) AS error,"
    " r.started_at, r.finished_at, r.pid, "
    + " + ".join(f"coalesce({_json_field('usage', '$.' + part)}, 0)"
                 for part in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
    + " AS tokens, "
    + ", ".join(f"{_json_field('options', path)} AS {name}" for name, path in (
        ("mode", "$.mode"), ("detached", "$.detached"), ("external", "$.external"),
        ("pane_server", "$.pane.server"), ("pane_window", "$.pane.window"), ("pane_id", "$.pane.pane")))
    + ", s.cwd, s.parent_id FROM agent_runs r LEFT JOIN sessions s ON s.id = r.session_id"
    " WHERE r.status IN (?, ?, ?) OR r.finished_at >= ?"
    " OR r.id IN (SELECT run_id FROM inbox_items WHERE status = 'unread' AND run_id IS NOT NULL)"
    " OR r.id IN (SELECT run_id FROM permission_asks WHERE answer IS NULL)"
    " ORDER BY r.created_at DESC, r.rowid DESC"
)
"""`Store.run_briefs`: what a listing needs of each run it shows, computed in SQLite."""

_LIVE_STATUSES = (RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.WAITING_PERMISSION)


def session_key(profile: str, session_id: str, *, subagent: bool, origin: str = "primary") -> str:
    """`agent:<profile>:<origin>:<id>`: `subagent` for a child; for a top-level session where it came from —
    `primary` (a conversation in the app), `run` (`yeetui run`), `detached` (`yeetui agents start`)."""
    return f"agent:{profile}:{'subagent' if subagent else origin}:{session_id}"


class Store(Database):
    """The async store. All methods (its parts' too) commit before returning and raise `StoreError` with context."""

    inbox: InboxItems
    announcements: Announcements
    breadcrumbs: Breadcrumbs
    worktree_records: WorktreeRecords
    workflow_states: WorkflowStates
    slots: SlotQueue
    run_commands: RunCommandQueue
    permission_asks: PermissionAsks
    front_ends: FrontEnds
    provider_holds: ProviderHolds
    schedules: Schedules
    tool_processes: ToolProcesses

    def __init__(self, path: Path, conn: aiosqlite.Connection, reader: aiosqlite.Connection) -> None:
        super().__init__(path, conn, reader)
        self.inbox = InboxItems(self)
        self.announcements = Announcements(self)
        self.breadcrumbs = Breadcrumbs(self)
        self.worktree_records = WorktreeRecords(self)
        self.workflow_states = WorkflowStates(self)
        self.slots = SlotQueue(self)
        self.run_commands = RunCommandQueue(self)
        self.permission_asks = PermissionAsks(self)
        self.front_ends = FrontEnds(self)
        self.provider_holds = ProviderHolds(self)
        self.schedules = Schedules(self)
        self.tool_processes = ToolProcesses(self)

    # ----- sessions ----------------------------------------------------------------------------------

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
                             with_messages: bool = False) -> SessionRecord | None:
        """The most recently active top-level session (what `--continue` resumes; `parent_id` as for
        `list_sessions`); with `origin`, the latest of that origin (`primary`: a conversation of the app, not a
        headless or detached run); `with_messages` skips a conversation opened and left with nothing said in it."""
        clauses, params = _parent_clause(parent_id)
        clauses.insert(0, "1")
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
        """Change any of title, model, workspace (a dict), cwd, status; bumps `updated_at`."""
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

    # ----- messages ----------------------------------------------------------------------------------

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

    # ----- runs --------------------------------------------------------------------------------------

    async def create_run(
        self, *, session_id: str, profile: str, model: str | None, prompt: str,
        status: RunStatus = RunStatus.QUEUED, parent_run_id: str | None = None, label: str | None = None,
        workflow: str | None = None, worktree: str | Path | None = None, pid: int | None = None,
        options: dict[str, Any] | None = None, max_children: int | None = None,
    ) -> RunRecord:
        """Create a run record. `pid` is the process responsible for it, this one unless given; a runner
        in another process claims the run with `update_run(pid=…)`.

        Without a `label` the run gets the next `profile#N` of the data dir. With `max_children`, the run
        is a child of `options["parent_session_id"]` and is refused (ChildLimitReached) when that session
        already has that many live children. Both are decided in the transaction that inserts the run, so
        they hold for spawns racing in one process or in many."""
        run_id, now = uuid.uuid4().hex, utcnow()
        status = RunStatus(status)
        parent_session = (options or {}).get("parent_session_id")
        pid = os.getpid() if pid is None else pid
        pid_start = process_start(pid)

        def insert(conn: sqlite3.Connection) -> sqlite3.Row | None:
            self.require(conn, "sessions", session_id, "session")
            if parent_run_id is not None:
                self.require(conn, "agent_runs", parent_run_id, "parent run")
            if max_children is not None and parent_session:
                live = self._live_children(conn, parent_session)
                if live >= max_children:
                    raise ChildLimitReached(
                        f"Refused: session {parent_session[:8]} already has {live} active subagents (limit "
                        f"{max_children}). Wait for one to finish or cancel one.")
            run_label = label if label is not None else self._next_label(conn, profile)
            conn.execute(
                "INSERT INTO agent_runs (id, session_id, parent_run_id, profile, model, prompt, status,"
                " usage, label, workflow, worktree, created_at, started_at, finished_at, pid, pid_start, options)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, session_id, parent_run_id, profile, model, self.clean(prompt), status.value,
                 Usage().model_dump_json(), run_label, workflow, None if worktree is None else str(worktree),
                 now, now if status is RunStatus.RUNNING else None, now if status.is_final else None,
                 pid, pid_start, dump_json(options or {})),
            )
            return first_row(conn, "SELECT * FROM agent_runs WHERE id = ?", (run_id,))

        row = await self.transaction(f"create a {profile!r} run in session {session_id}", insert)
        assert row is not None
        return RunRecord.from_row(row)

    async def claim_run(self, run_id: str, *, status: RunStatus, pid: int | None, new_pid: int,
                        options: dict[str, Any] | None = None) -> RunRecord | None:
        """Make the run `queued` for process `new_pid` — only if it is still `status` with `pid` as read
        (compare-and-set): of two processes starting or resuming one run, exactly one gets it. None: lost."""

        def claim(conn: sqlite3.Connection) -> sqlite3.Row | None:
            values = {"status": RunStatus.QUEUED.value, "pid": new_pid, "pid_start": process_start(new_pid),
                      "finished_at": None, "error": None}
            if options is not None:
                values["options"] = dump_json(options)
            assignments = ", ".join(f"{name} = ?" for name in values)
            cursor = conn.execute(f"UPDATE agent_runs SET {assignments} WHERE id = ? AND status = ? AND pid IS ?",
                                  [*values.values(), run_id, RunStatus(status).value, pid])
            if cursor.rowcount == 0:
                return None
            return first_row(conn, "SELECT * FROM agent_runs WHERE id = ?", (run_id,))

        row = await self.transaction(f"claim run {run_id}", claim)
        return None if row is None else RunRecord.from_row(row)

    async def hand_over(self, run_id: str, pid: int, *, from_pid: int) -> bool:
        """Record `pid` as the process of a run this one (`from_pid`) made or claimed and then started a worker
        for — unless the worker claimed it first (compare-and-set): its own pid stays. True when recorded."""
        def hand(conn: sqlite3.Connection) -> bool:
            return conn.execute("UPDATE agent_runs SET pid = ?, pid_start = ? WHERE id = ? AND pid IS ?",
                                (pid, process_start(pid), run_id, from_pid)).rowcount > 0

        return await self.transaction(f"hand run {run_id} to process {pid}", hand)

    async def allocate_label(self, profile: str) -> str:
        """The next `profile#N` of this data dir, taken for good (atomically, across processes)."""
        return await self.transaction(f"number a {profile!r} run", lambda conn: self._next_label(conn, profile))

    def _next_label(self, conn: sqlite3.Connection, profile: str) -> str:
        row = first_row(conn, "SELECT last FROM run_labels WHERE profile = ?", (profile,))
        if row is None:  # a data dir from before labels were counted here: continue after its runs
            row = first_row(conn, "SELECT count(*) AS last FROM agent_runs WHERE profile = ?", (profile,))
        number = (int(row["last"]) if row is not None else 0) + 1
        conn.execute("INSERT INTO run_labels (profile, last) VALUES (?, ?) ON CONFLICT (profile) DO UPDATE SET"
                     " last = excluded.last", (profile, number))
        return f"{profile}#{number}"

    def _live_children(self, conn: sqlite3.Connection, parent_session_id: str) -> int:
        """Live (queued, running, waiting for a permission) subagent runs reporting to a session; a pair
        watcher's runs are not its children."""
        marks = ", ".join("?" * len(_LIVE_STATUSES))
        row = first_row(conn, f"SELECT count(*) AS n FROM agent_runs WHERE status IN ({marks}) AND"
                        " json_extract(options, '$.parent_session_id') = ? AND"
                        " coalesce(json_extract(options, '$.watcher'), 0) = 0",
                        (*[s.value for s in _LIVE_STATUSES], parent_session_id))
        return int(row["n"]) if row is not None else 0

    async def update_run(
        self, run_id: str, *, status: RunStatus | None = None, result: Any = None, usage: Usage | None = None,
        cost: float | EllipsisType | None = ..., error: str | None = None, pid: int | None = None,
        worktree: str | Path | None = None, options: dict[str, Any] | None = None, turns: int | None = None,
        model: str | None = None,
    ) -> RunRecord:
        """Change a run; arguments left as None (`...` for cost) stay as they are.

        The first move to `running` sets `started_at`; the first final status (`RunStatus.is_final`) sets
        `finished_at`; moving back to a live status (a resume) clears `finished_at` and `error`.
        """
        values: dict[str, Any] = {}
        now = utcnow()
        if status is not None:
            status = RunStatus(status)
            values["status"] = status.value
            if not status.is_final:
                values["finished_at"] = values["error"] = None
        given = {
            "result": None if result is None else self.clean(dump_json(result) or "null"),
            "error": None if error is None else self.clean(error),
            "usage": None if usage is None else usage.model_dump_json(),
            "worktree": None if worktree is None else str(worktree),
            "options": None if options is None else dump_json(options),
            "turns": turns,
            "model": None if model is None else self.clean(model),
        }
        values.update((name, value) for name, value in given.items() if value is not None)
        if pid is not None:  # with its start: the pid alone may be reused by another process later
            values["pid"], values["pid_start"] = pid, process_start(pid)
        if cost is not ...:
            values["cost"] = cost

        def update(conn: sqlite3.Connection) -> sqlite3.Row | None:
            row = first_row(conn, "SELECT started_at, finished_at FROM agent_runs WHERE id = ?", (run_id,))
            if row is None:
                raise StoreError(f"There is no run {run_id} in the store at {self.path}.")
            if status is RunStatus.RUNNING and row["started_at"] is None:
                values["started_at"] = now
            if status is not None and status.is_final and row["finished_at"] is None:
                values["finished_at"] = now  # a second final status keeps the first end time
            if values:
                assignments = ", ".join(f"{name} = ?" for name in values)
                conn.execute(f"UPDATE agent_runs SET {assignments} WHERE id = ?", [*values.values(), run_id])
            return first_row(conn, "SELECT * FROM agent_runs WHERE id = ?", (run_id,))

        row = await self.transaction(f"update run {run_id}", update)
        assert row is not None
        return RunRecord.from_row(row)

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self.fetch_one(f"read run {run_id}", "SELECT * FROM agent_runs WHERE id = ?", (run_id,))
        return None if row is None else RunRecord.from_row(row)

    async def resolve_run(self, id_or_prefix: str) -> RunRecord:
        """The run whose id or label (`oracle#2`, what `agents list` prints) is `id_or_prefix`, or whose id
        uniquely starts with it."""
        return RunRecord.from_row(await self.resolve_row("agent_runs", "run", id_or_prefix, key_column="label"))

    async def list_runs(self, *, session_id: str | None = None, statuses: Iterable[RunStatus] | None = None,
                        parent_run_id: str | None = None, limit: int = 100) -> list[RunRecord]:
        """Runs, newest first, optionally of one session, with given statuses, or below one parent run."""
        clauses: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if parent_run_id is not None:
            clauses.append("parent_run_id = ?")
            params.append(parent_run_id)
        if statuses is not None:
            wanted = [RunStatus(s).value for s in statuses]
            clauses.append(f"status IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = await self.fetch_all("list runs", f"SELECT * FROM agent_runs{where}"
                                    " ORDER BY created_at DESC, rowid DESC LIMIT ?", [*params, limit])
        return [RunRecord.from_row(r) for r in rows]

    async def run_briefs(self, *, finished_since: datetime) -> list[RunBrief]:
        """Every run a listing of what goes on shows, newest first, in one read (the fleet: every two seconds,
        however many runs the data dir holds): each one not finished (queued, running, waiting for permission),
        each one finished at `finished_since` or later, and — however old — each one with an unread inbox item
        or an unanswered permission question. A row whose usage or options are not valid JSON shows what it
        can, never fails the read."""
        since = finished_since.astimezone(UTC).isoformat(timespec="microseconds")
        rows = await self.fetch_all("list runs", _BRIEFS_SQL, (*(s.value for s in _LIVE_STATUSES), since))
        briefs = []
        for row in rows:
            try:
                status = RunStatus(row["status"])
            except ValueError:
                status = RunStatus.FAILED
            mode = ("external" if row["external"] else "detached" if row["detached"]
                    else str(row["mode"] or "in_process"))
            pane = (str(row["pane_server"]), str(row["pane_window"]), str(row["pane_id"] or "")) \
                if row["pane_server"] and row["pane_window"] else None
            briefs.append(RunBrief(
                id=row["id"], session_id=row["session_id"], profile=row["profile"], label=row["label"],
                status=status, cost=row["cost"], error=row["error"], tokens=int(row["tokens"] or 0),
                started_at=parse_ts(row["started_at"]), finished_at=parse_ts(row["finished_at"]), pid=row["pid"],
                mode=mode, pane=pane, cwd=row["cwd"], parent_session_id=row["parent_id"]))
        return briefs

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

    async def tree_usage(self, session_id: str) -> tuple[Usage, float | None]:
        """Tokens and cost of every run in `session_id` and the sessions below it (its subagents, theirs…).
        The cost is None when a run's cost is unknown (a model without a price); a run whose cost its parent's
        holds (an external agent's subagent, `RunOptions.cost_in_parent`) counts its tokens only."""
        rows = await self.fetch_all(
            f"sum the usage below session {session_id}",
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t"
            " ON s.parent_id = t.id) SELECT usage, cost, json_extract(options, '$.cost_in_parent') AS in_parent"
            " FROM agent_runs WHERE session_id IN tree", (session_id,))
        total = Usage()
        cost_known: float | None = 0.0
        for row in rows:
            usage = Usage.model_validate_json(row["usage"]) if row["usage"] else Usage()
            total = total + usage
            if cost_known is not None and usage.total_tokens and not row["in_parent"]:
                cost_known = None if row["cost"] is None else cost_known + float(row["cost"])
        return total, cost_known

    async def latest_compaction_at(self, session_id: str) -> str | None:
        """When the session was last compacted (its newest summary message), as stored; None if never."""
        row = await self.fetch_one(f"find the latest compaction of session {session_id}",
                                   "SELECT created_at FROM messages WHERE session_id = ? AND"
                                   " json_extract(body, '$.meta.compaction') = 1 ORDER BY seq DESC LIMIT 1",
                                   (session_id,))
        return str(row["created_at"]) if row is not None else None

    async def last_progress(self, runs: Iterable[RunRecord | RunBrief]) -> dict[str, datetime]:
        """When each run last got somewhere, as the store shows it: its newest message written or checkpointed
        (a streamed answer is checkpointed as it grows; a tool's result is a message), else its start."""
        wanted = {run.id: run for run in runs}
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        rows = await self.fetch_all("look for the runs' last progress",
                                    f"SELECT run_id, max(updated_at) AS at FROM messages WHERE run_id IN ({marks})"
                                    " GROUP BY run_id", list(wanted))
        latest = {row["run_id"]: datetime.fromisoformat(row["at"]) for row in rows}
        progress: dict[str, datetime] = {}
        for run_id, run in wanted.items():
            times = [t for t in (latest.get(run_id), run.started_at) if t is not None]
            if times:
                progress[run_id] = max(t if t.tzinfo else t.replace(tzinfo=UTC) for t in times)
        return progress

    async def last_activity(self, run_ids: Iterable[str]) -> dict[str, str]:
        """What each run was last seen doing, from its newest message: `calling bash`, `answering` (a streamed
        answer checkpointed as it grows), `thinking after grep` (a tool's result went back to the model)."""
        wanted = list(dict.fromkeys(run_ids))
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        rows = await self.fetch_all(
            "look for the runs' last activity",
            "SELECT m.run_id, m.role, m.partial, CASE WHEN json_valid(m.body) THEN (SELECT group_concat("
            "json_extract(p.value, '$.name'), ', ') FROM json_each(m.body, '$.parts') AS p WHERE"
            " json_extract(p.value, '$.kind') IN ('tool_call', 'tool_result')) END AS names FROM messages m"
            f" JOIN (SELECT max(id) AS id FROM messages WHERE run_id IN ({marks}) GROUP BY run_id) AS newest"
            " ON m.id = newest.id", wanted)
        said: dict[str, str] = {}
        for row in rows:
            names = str(row["names"] or "")[:60]
            if row["role"] == "assistant":
                said[row["run_id"]] = f"calling {names}" if names else "answering" if row["partial"] else "thinking"
            elif row["role"] == "tool":
                said[row["run_id"]] = f"thinking after {names}" if names else "thinking"
            else:
                said[row["run_id"]] = "thinking"
        return said

    async def tree_totals(self, session_id: str) -> TreeTotals:
        """What every run in `session_id` and the sessions below it spent, as a budget counts it: all tokens,
        the dollars of those whose price is known, the tokens of those whose price is not, model requests."""
        rows = await self.fetch_all(
            f"sum the spend below session {session_id}",
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t"
            " ON s.parent_id = t.id) SELECT usage, cost, turns, json_extract(options, '$.cost_in_parent')"
            " AS in_parent FROM agent_runs WHERE session_id IN tree", (session_id,))
        tokens = unpriced = turns = 0
        cost = 0.0
        for row in rows:
            used = Usage.model_validate_json(row["usage"]).total_tokens if row["usage"] else 0
            tokens += used
            turns += row["turns"] or 0
            if row["cost"] is not None:
                cost += float(row["cost"])
            elif used and not row["in_parent"]:
                unpriced += used
        return TreeTotals(tokens=tokens, cost=cost, unpriced_tokens=unpriced, turns=turns, runs=len(rows))

    async def usage_by_session(self, session_ids: Iterable[str]) -> dict[str, tuple[Usage, float | None]]:
        """Tokens and cost of each session's own runs (not the sessions below it), in one query; a session
        without runs is left out. The cost is None when a run that used tokens has no known cost (unless its
        parent's cost holds it: `RunOptions.cost_in_parent`)."""
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        rows = await self.fetch_all("sum the usage of sessions",
                                    "SELECT session_id, usage, cost, json_extract(options, '$.cost_in_parent')"
                                    f" AS in_parent FROM agent_runs WHERE session_id IN ({marks})", ids)
        sums: dict[str, tuple[Usage, float | None]] = {}
        for row in rows:
            total, cost = sums.get(row["session_id"], (Usage(), 0.0))
            usage = Usage.model_validate_json(row["usage"]) if row["usage"] else Usage()
            if cost is not None and usage.total_tokens and not row["in_parent"]:
                cost = None if row["cost"] is None else cost + float(row["cost"])
            sums[row["session_id"]] = (total + usage, cost)
        return sums

    async def mark_interrupted(self, *, is_alive: Callable[[int], bool] = pid_alive) -> list[RunRecord]:
        """End as `interrupted` every running/queued/waiting_permission run whose process is gone (see
        `process_gone`): at start-up, and mid-run when a pane's worker died. Runs of a live process — this
        one's own runs, live in its memory, another yeetui's, a tmux child's — are left alone; a pid now
        used by an unrelated process (another start time) no longer keeps its run alive."""
        marks = ", ".join("?" * len(_LIVE_STATUSES))

        def mark(conn: sqlite3.Connection) -> list[sqlite3.Row | None]:
            candidates = conn.execute(f"SELECT id, pid, pid_start FROM agent_runs WHERE status IN ({marks})",
                                      [s.value for s in _LIVE_STATUSES]).fetchall()
            orphaned = [r["id"] for r in candidates if process_gone(r["pid"], r["pid_start"], is_alive=is_alive)]
            now = utcnow()
            for run_id in orphaned:
                conn.execute("UPDATE agent_runs SET status = ?, error = ?, finished_at = ? WHERE id = ?",
                             (RunStatus.INTERRUPTED.value, INTERRUPTED_ERROR, now, run_id))
            return [first_row(conn, "SELECT * FROM agent_runs WHERE id = ?", (run_id,)) for run_id in orphaned]

        rows = await self.transaction("mark orphaned runs interrupted", mark)
        return [RunRecord.from_row(r) for r in rows if r is not None]


def _parent_clause(parent_id: str | EllipsisType | None) -> tuple[list[str], list[Any]]:
    """The WHERE clause of a session listing's `parent_id`: None, top-level only; `...`, any; else its children."""
    if parent_id is None:
        return ["parent_id IS NULL"], []
    if parent_id is ...:
        return [], []
    return ["parent_id = ?"], [parent_id]
