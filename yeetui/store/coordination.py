"""What yeetui processes sharing one data dir coordinate through: run slots (how many runs execute at once,
in queue order), run commands (cancel, abort, steer a run that another process executes), permission asks (a
pane's tool call waiting for the user's answer in the yeetui that follows it, or in any yeetui showing
dialogs: the front ends) and the process groups of running commands (ended by the next process to recover when
their yeetui process was killed).

Each step is one write transaction (BEGIN IMMEDIATE), so processes racing for the last slot cannot both
take it. Rows of processes that are gone are reclaimed by whichever process takes a slot next.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from yeetui.errors import StoreError
from yeetui.store.db import Database
from yeetui.store.liveness import pid_alive, process_gone, process_start
from yeetui.store.records import utcnow

log = logging.getLogger(__name__)


class SlotQueue:
    """The `run_slots` table: which runs hold a slot, wait for one (in queue order) or have lent theirs.
    `yeetui.runs.slots.RunSlots` is what a run waits on."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def queue(self, run_id: str, *, pid: int | None = None) -> None:
        """Join the queue (or re-join it, keeping its place, after lending the slot away)."""
        owner = os.getpid() if pid is None else pid

        def queue(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT pid, state FROM run_slots WHERE run_id = ?", (run_id,)).fetchone()
            if row is not None and row["pid"] == owner:
                if row["state"] == "lent":
                    conn.execute("UPDATE run_slots SET state = 'waiting' WHERE run_id = ?", (run_id,))
                return
            # New, or left behind by an earlier process that ran this run (a resume after a crash).
            seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM run_slots").fetchone()[0]
            conn.execute("INSERT OR REPLACE INTO run_slots (run_id, pid, seq, state) VALUES (?, ?, ?, 'waiting')",
                         (run_id, owner, seq))

        await self._db.transaction(f"queue run {run_id} for a slot", queue)

    async def take(self, run_id: str, limit: int, *, is_alive: Callable[[int], bool] = pid_alive) -> bool:
        """Take a slot for a queued run if one is free and no run queued before it is still waiting for one
        that it could have; True when the run now holds a slot."""

        def take(conn: sqlite3.Connection) -> bool:
            for row in conn.execute("SELECT run_id, pid FROM run_slots").fetchall():
                if row["pid"] != os.getpid() and not is_alive(row["pid"]):
                    conn.execute("DELETE FROM run_slots WHERE run_id = ?", (row["run_id"],))
            mine = conn.execute("SELECT seq, state FROM run_slots WHERE run_id = ?", (run_id,)).fetchone()
            if mine is None:
                return False
            if mine["state"] == "held":
                return True
            held = conn.execute("SELECT count(*) FROM run_slots WHERE state = 'held'").fetchone()[0]
            ahead = conn.execute("SELECT count(*) FROM run_slots WHERE state = 'waiting' AND seq < ?",
                                 (mine["seq"],)).fetchone()[0]
            if held + ahead >= limit:
                return False
            conn.execute("UPDATE run_slots SET state = 'held' WHERE run_id = ?", (run_id,))
            return True

        return await self._db.transaction(f"take a slot for run {run_id}", take)

    async def lend(self, run_id: str) -> None:
        """The run waits for a child: its slot counts as free, its place in the queue is kept."""
        await self._db.transaction(
            f"lend the slot of run {run_id}",
            lambda conn: conn.execute("UPDATE run_slots SET state = 'lent' WHERE run_id = ? AND state = 'held'",
                                      (run_id,)))

    async def release(self, run_id: str) -> None:
        await self._db.transaction(
            f"release the slot of run {run_id}",
            lambda conn: conn.execute("DELETE FROM run_slots WHERE run_id = ?", (run_id,)))

    async def counts(self) -> dict[str, int]:
        """How many runs hold, wait for, or have lent a slot (for status displays and tests)."""
        rows = await self._db.fetch_all("count run slots",
                                        "SELECT state, count(*) AS n FROM run_slots GROUP BY state")
        return {row["state"]: row["n"] for row in rows}


class RunCommandQueue:
    """Commands to runs, from any process to the process that executes the run (see 0005_run_commands.sql).
    `yeetui.subagents.run_commands.RunCommands` posts and acts on them."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def post(self, run_id: str, kind: str, body: str = "", *, sender: str = "user") -> int:
        def post(conn: sqlite3.Connection) -> int:
            cursor = conn.execute("INSERT INTO run_commands (run_id, kind, body, sender, created_at) VALUES"
                                  " (?, ?, ?, ?, ?)", (run_id, kind, body, sender, utcnow()))
            return int(cursor.lastrowid or 0)

        return await self._db.transaction(f"send {kind} to run {run_id}", post)

    async def take(self, run_ids: Iterable[str]) -> list[RunCommand]:
        """The open commands for these runs, oldest first, marked taken in the same transaction (so two
        pollers never both act on one)."""
        wanted = list(run_ids)
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        # Polled every fraction of a second while runs stream: look on the reader connection first, and
        # take the writer's lock only when there is something to take.
        waiting = await self._db.fetch_one(
            "look for run commands",
            f"SELECT 1 FROM run_commands WHERE taken_at IS NULL AND run_id IN ({marks}) LIMIT 1", wanted)
        if waiting is None:
            return []

        def take(conn: sqlite3.Connection) -> list[RunCommand]:
            rows = conn.execute(f"SELECT id, run_id, kind, body, sender FROM run_commands WHERE taken_at IS NULL"
                                f" AND run_id IN ({marks}) ORDER BY id", wanted).fetchall()
            if rows:
                conn.execute(f"UPDATE run_commands SET taken_at = ? WHERE id IN ({', '.join('?' * len(rows))})",
                             [utcnow(), *(r["id"] for r in rows)])
            return [RunCommand(r["id"], r["run_id"], r["kind"], r["body"], r["sender"]) for r in rows]

        return await self._db.transaction("take run commands", take)


class PermissionAsks:
    """Permission questions from runs in other processes (see 0008_permission_asks.sql)."""

    ANSWERS = ("allow_once", "allow_always", "deny")

    def __init__(self, db: Database) -> None:
        self._db = db

    async def post(self, pane_run_id: str, *, run_id: str, session_id: str, agent_label: str,
                   tool: str, subject: str, arguments: Mapping[str, Any], unattended: bool = False,
                   open_to_all: bool = False) -> int:
        """Write a question for whoever follows `pane_run_id` (the run the pane was opened for; `run_id` may
        be one of its in-process children) — or, `open_to_all`, for every yeetui that shows dialogs. Subject
        and arguments are stored redacted. `unattended`: nobody could be asked and the call was refused —
        recorded answered, for the summary of the run that started the pane (`unattended_refusals`)."""
        clean = self._db.clean
        now = utcnow()
        row = (pane_run_id, run_id, session_id, agent_label, tool, clean(subject),
               clean(json.dumps(dict(arguments), default=str)), now, "unattended" if unattended else None,
               now if unattended else None, int(open_to_all))

        def post(conn: sqlite3.Connection) -> int:
            cursor = conn.execute("INSERT INTO permission_asks (pane_run_id, run_id, session_id, agent_label, tool,"
                                  " subject, arguments, created_at, answer, answered_at, open_to_all)"
                                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            return int(cursor.lastrowid or 0)

        return await self._db.transaction(f"ask about {tool} for run {run_id}", post)

    async def read_answer(self, ask_id: int) -> str | None:
        """The answer given (or 'withdrawn'), None while the question is open."""
        row = await self._db.fetch_one("read a permission answer",
                                       "SELECT answer FROM permission_asks WHERE id = ?", (ask_id,))
        return row["answer"] if row is not None else "withdrawn"

    async def answer(self, ask_id: int, answer: str) -> bool:
        """Record the answer unless one is there already (the first answer wins); whether this one counted."""
        if answer not in (*self.ANSWERS, "withdrawn", "unattended"):
            raise StoreError(f"{answer!r} is not a permission answer (one of {', '.join(self.ANSWERS)}).")

        def settle(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute("UPDATE permission_asks SET answer = ?, answered_at = ? WHERE id = ?"
                                  " AND answer IS NULL", (answer, utcnow(), ask_id))
            return cursor.rowcount == 1

        return await self._db.transaction("answer a permission question", settle)

    async def unanswered(self, pane_run_ids: Iterable[str]) -> list[PermissionAsk]:
        """Unanswered questions from these panes, oldest first."""
        return await self._asks(pane_run_ids, "answer IS NULL")

    async def unanswered_open_to_all(self) -> list[PermissionAsk]:
        """Unanswered questions any yeetui with dialogs may answer, oldest first."""
        return await self._asks(None, "answer IS NULL AND open_to_all = 1")

    async def unanswered_any(self) -> list[PermissionAsk]:
        """Every unanswered question, of any pane or open to all, oldest first (the fleet view answers them)."""
        return await self._asks(None, "answer IS NULL")

    async def unattended_refusals(self, pane_run_ids: Iterable[str]) -> list[PermissionAsk]:
        """Tool calls these panes refused because nobody could be asked, oldest first."""
        return await self._asks(pane_run_ids, "answer = 'unattended'")

    async def _asks(self, pane_run_ids: Iterable[str] | None, condition: str) -> list[PermissionAsk]:
        """The questions meeting `condition`, of these panes (of any, when None)."""
        wanted = list(pane_run_ids) if pane_run_ids is not None else []
        if pane_run_ids is not None and not wanted:
            return []
        of_panes = f" AND pane_run_id IN ({', '.join('?' * len(wanted))})" if pane_run_ids is not None else ""
        rows = await self._db.fetch_all("look for permission questions",
                                        f"SELECT * FROM permission_asks WHERE {condition}{of_panes} ORDER BY id",
                                        wanted)
        asks = []
        for r in rows:
            try:
                arguments = json.loads(r["arguments"])
            except ValueError:
                arguments = {}
            asks.append(PermissionAsk(r["id"], r["pane_run_id"], r["run_id"], r["session_id"], r["agent_label"],
                                      r["tool"], r["subject"], arguments if isinstance(arguments, dict) else {}))
        return asks


@dataclass(frozen=True)
class PermissionAsk:
    id: int
    pane_run_id: str
    run_id: str
    session_id: str
    agent_label: str
    tool: str
    subject: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class RunCommand:
    id: int
    run_id: str
    kind: str
    body: str
    sender: str


@dataclass(frozen=True)
class LeftoverProcess:
    """A command's process group whose yeetui process is gone."""

    pgid: int
    leader_start: int | None
    run_id: str | None


class ToolProcesses:
    """The process groups of running commands (see 0006_tool_processes.sql)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def note(self, run_id: str, pgid: int, leader_start: int | None, *,
                   owner_pid: int | None = None) -> None:
        owner = os.getpid() if owner_pid is None else owner_pid

        def note(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO tool_processes (owner_pid, pgid, leader_start, run_id, created_at)"
                         " VALUES (?, ?, ?, ?, ?)", (owner, pgid, leader_start, run_id or None, utcnow()))

        await self._db.transaction(f"note process group {pgid}", note)

    async def forget(self, pgid: int) -> None:
        def forget(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM tool_processes WHERE owner_pid = ? AND pgid = ?", (os.getpid(), pgid))

        await self._db.transaction(f"forget process group {pgid}", forget)

    async def take_leftovers(self, *, is_alive: Callable[[int], bool] = pid_alive) -> list[LeftoverProcess]:
        """The groups whose yeetui process is gone, removed in the same transaction: of several processes
        recovering at once, one ends each group."""

        def take(conn: sqlite3.Connection) -> list[LeftoverProcess]:
            me = os.getpid()
            rows = [r for r in conn.execute("SELECT * FROM tool_processes").fetchall()
                    if r["owner_pid"] != me and not is_alive(r["owner_pid"])]
            for row in rows:
                conn.execute("DELETE FROM tool_processes WHERE owner_pid = ? AND pgid = ?",
                             (row["owner_pid"], row["pgid"]))
            return [LeftoverProcess(r["pgid"], r["leader_start"], r["run_id"]) for r in rows]

        return await self._db.transaction("take leftover process groups", take)

    def run_log(self, run_id: str) -> RunProcessLog:
        """Where the commands of run `run_id` note their process groups (its tools' `ProcessLog`)."""
        return RunProcessLog(self, run_id)


class RunProcessLog:
    """One run's `yeetui.tools.base.ProcessLog`, kept in the store. Noting is best effort: a store error
    is logged and the command still runs (it is ended in-process as always; only crash recovery needs this)."""

    def __init__(self, processes: ToolProcesses, run_id: str) -> None:
        self.processes = processes
        self.run_id = run_id

    async def started(self, pgid: int, leader_start: int | None) -> None:
        try:
            await self.processes.note(self.run_id, pgid, leader_start)
        except StoreError as exc:
            log.warning("could not note process group %s of run %s: %s", pgid, self.run_id, exc)

    async def ended(self, pgid: int) -> None:
        try:
            await self.processes.forget(pgid)
        except StoreError as exc:
            log.warning("could not forget process group %s of run %s: %s", pgid, self.run_id, exc)


class FrontEnds:
    """The yeetui processes showing permission dialogs now (see 0012_front_ends.sql)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def enter(self, pid: int) -> None:
        """`pid` shows dialogs from now on (a row left by an earlier process under the same pid is replaced)."""
        row = (pid, process_start(pid), utcnow())
        await self._db.transaction("note a front end", lambda conn: conn.execute(
            "INSERT OR REPLACE INTO front_ends (pid, pid_start, started_at) VALUES (?, ?, ?)", row))

    async def leave(self, pid: int) -> None:
        await self._db.transaction("drop a front end", lambda conn: conn.execute(
            "DELETE FROM front_ends WHERE pid = ?", (pid,)))

    async def any_present(self) -> bool:
        """Whether a process that shows dialogs runs now; the rows of processes gone are dropped."""
        rows = await self._db.fetch_all("look for front ends", "SELECT pid, pid_start FROM front_ends")
        gone = [r["pid"] for r in rows if process_gone(r["pid"], r["pid_start"])]
        if gone:
            await self._db.transaction("drop front ends gone", lambda conn: conn.execute(
                f"DELETE FROM front_ends WHERE pid IN ({', '.join('?' * len(gone))})", gone))
        return len(gone) < len(rows)


@dataclass(frozen=True)
class ProviderHold:
    provider: str
    reason: str
    """The provider's words when it refused (already redacted)."""
    until: str
    """ISO time the hold ends by itself."""


class ProviderHolds:
    """Providers whose quota or credit is spent (see 0014_provider_holds.sql): runs queued for them wait."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def hold(self, provider: str, reason: str, *, minutes: float) -> None:
        now = datetime.now(UTC)
        row = (provider, self._db.clean(reason)[:1000], now.isoformat(), (now + timedelta(minutes=minutes)).isoformat())
        await self._db.transaction(f"hold provider {provider}", lambda conn: conn.execute(
            "INSERT OR REPLACE INTO provider_holds (provider, reason, since, until) VALUES (?, ?, ?, ?)", row))

    async def active(self, provider: str) -> ProviderHold | None:
        """The hold on `provider`, unless there is none or its time is up."""
        row = await self._db.fetch_one(f"look for a hold on {provider}", "SELECT * FROM provider_holds WHERE"
                                       " provider = ? AND until > ?", (provider, datetime.now(UTC).isoformat()))
        return ProviderHold(row["provider"], row["reason"], row["until"]) if row is not None else None

    async def release(self, provider: str) -> bool:
        """Lift the hold (a request to the provider succeeded again, or the user said so); whether there was one.
        Asked at each run's first answer: a look on the reader first, so no hold costs no write."""
        if await self._db.fetch_one(f"look for a hold on {provider}", "SELECT 1 FROM provider_holds WHERE"
                                    " provider = ?", (provider,)) is None:
            return False

        def release(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM provider_holds WHERE provider = ?", (provider,)).rowcount > 0

        return await self._db.transaction(f"release provider {provider}", release)
