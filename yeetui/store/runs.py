"""The `agent_runs` table (and `run_labels`, the numbers of `oracle#4`): one record per run, from queued to
its end, claimed by the process that runs it.

`RunTable` is a part of `Store` (store/sqlite.py), a mixin over `Database`: `store.create_run(…)`,
`store.update_run(…)`, `store.mark_interrupted()`.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from types import EllipsisType
from typing import Any

from yeetui.errors import ChildLimitReached, StoreError
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.store.db import Database, first_row
from yeetui.store.liveness import pid_alive, process_gone, process_start
from yeetui.store.records import RunRecord, dump_json, utcnow

INTERRUPTED_ERROR = "found running at start-up; the process that ran it is gone"
"""The `error` of a run `mark_interrupted` ends."""

LIVE_STATUSES = (RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.WAITING_PERMISSION)
"""The statuses of a run not ended: its process holds it (`mark_interrupted` ends it when that process is gone)."""


class RunTable(Database):
    """Runs: created (numbered, a parent's limit of live children held), claimed, handed over, changed, read,
    listed; those whose process is gone ended as interrupted."""

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
        marks = ", ".join("?" * len(LIVE_STATUSES))
        row = first_row(conn, f"SELECT count(*) AS n FROM agent_runs WHERE status IN ({marks}) AND"
                        " json_extract(options, '$.parent_session_id') = ? AND"
                        " coalesce(json_extract(options, '$.watcher'), 0) = 0",
                        (*[s.value for s in LIVE_STATUSES], parent_session_id))
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

    async def mark_interrupted(self, *, is_alive: Callable[[int], bool] = pid_alive) -> list[RunRecord]:
        """End as `interrupted` every running/queued/waiting_permission run whose process is gone (see
        `process_gone`): at start-up, and mid-run when a pane's worker died. Runs of a live process — this
        one's own runs, live in its memory, another yeetui's, a tmux child's — are left alone; a pid now
        used by an unrelated process (another start time) no longer keeps its run alive."""
        marks = ", ".join("?" * len(LIVE_STATUSES))

        def mark(conn: sqlite3.Connection) -> list[sqlite3.Row | None]:
            candidates = conn.execute(f"SELECT id, pid, pid_start FROM agent_runs WHERE status IN ({marks})",
                                      [s.value for s in LIVE_STATUSES]).fetchall()
            orphaned = [r["id"] for r in candidates if process_gone(r["pid"], r["pid_start"], is_alive=is_alive)]
            now = utcnow()
            for run_id in orphaned:
                conn.execute("UPDATE agent_runs SET status = ?, error = ?, finished_at = ? WHERE id = ?",
                             (RunStatus.INTERRUPTED.value, INTERRUPTED_ERROR, now, run_id))
            return [first_row(conn, "SELECT * FROM agent_runs WHERE id = ?", (run_id,)) for run_id in orphaned]

        rows = await self.transaction("mark orphaned runs interrupted", mark)
        return [RunRecord.from_row(r) for r in rows if r is not None]
