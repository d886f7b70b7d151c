"""Scheduled agents in the store (see 0016_schedules.sql): the schedules, and each trigger fired — claimed once
by whichever yeetui process looks first, in the transaction that moves the schedule on."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from yeetui.errors import StoreError
from yeetui.store.db import Database
from yeetui.store.liveness import pid_alive
from yeetui.store.records import utcnow

MissedPolicy = str
"""`skip`: a trigger missed (no yeetui was running) is not fired late; `once`: the run happens once on wake."""
LATE_GRACE = timedelta(seconds=90)
"""How late a trigger may still be fired under `skip` (a daemon that looks every few seconds is never late)."""


@dataclass(frozen=True)
class ScheduleRecord:
    id: str
    project_dir: str
    profile: str
    prompt: str
    spec: str
    missed: MissedPolicy
    approve: bool
    budget: dict[str, Any] | None
    paused: bool
    pause_reason: str | None
    next_at: datetime
    failures: int
    created_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ScheduleRecord:
        return cls(id=row["id"], project_dir=row["project_dir"], profile=row["profile"], prompt=row["prompt"],
                   spec=row["spec"], missed=row["missed"], approve=bool(row["approve"]),
                   budget=json.loads(row["budget"]) if row["budget"] else None, paused=bool(row["paused"]),
                   pause_reason=row["pause_reason"], next_at=datetime.fromisoformat(row["next_at"]),
                   failures=row["failures"], created_at=datetime.fromisoformat(row["created_at"]))

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["next_at"], data["created_at"] = self.next_at.isoformat(), self.created_at.isoformat()
        return data


@dataclass(frozen=True)
class Fire:
    """One trigger of a schedule, claimed by a process to launch (`run_id` None until it did)."""

    schedule_id: str
    due_at: str
    run_id: str | None
    skipped: bool
    outcome: str | None


NextAfter = Callable[[str, datetime], datetime]


class Schedules:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, *, project_dir: str, profile: str, prompt: str, spec: str, missed: MissedPolicy,
                  approve: bool, budget: dict[str, Any] | None, next_at: datetime) -> ScheduleRecord:
        schedule_id = uuid.uuid4().hex[:12]
        row = (schedule_id, project_dir, profile, self._db.clean(prompt), spec, missed, int(approve),
               json.dumps(budget) if budget else None, next_at.astimezone(UTC).isoformat(), utcnow())
        await self._db.transaction("add a schedule", lambda conn: conn.execute(
            "INSERT INTO schedules (id, project_dir, profile, prompt, spec, missed, approve, budget, next_at,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row))
        return await self.get(schedule_id)

    async def get(self, ident: str) -> ScheduleRecord:
        """The schedule with this id or unique id prefix."""
        rows = await self._db.fetch_all("find a schedule", "SELECT * FROM schedules WHERE id LIKE ? || '%'",
                                        (ident,))
        if len(rows) != 1:
            raise StoreError(f"No schedule {ident!r}." if not rows else f"{ident!r} names more than one schedule.")
        return ScheduleRecord.from_row(rows[0])

    async def all(self) -> list[ScheduleRecord]:
        rows = await self._db.fetch_all("list schedules", "SELECT * FROM schedules ORDER BY created_at")
        return [ScheduleRecord.from_row(r) for r in rows]

    async def set_paused(self, schedule_id: str, paused: bool, reason: str | None = None, *,
                         next_at: datetime | None = None) -> None:
        """Pause (saying why) or resume — from `next_at` on, with its failures forgotten."""
        def change(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE schedules SET paused = ?, pause_reason = ?, failures = CASE WHEN ? THEN failures"
                         " ELSE 0 END WHERE id = ?", (int(paused), reason, int(paused), schedule_id))
            if next_at is not None:
                conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?",
                             (next_at.astimezone(UTC).isoformat(), schedule_id))

        await self._db.transaction(f"pause or resume schedule {schedule_id}", change)

    async def remove(self, schedule_id: str) -> None:
        def remove(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM schedule_fires WHERE schedule_id = ?", (schedule_id,))
            conn.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))

        await self._db.transaction(f"remove schedule {schedule_id}", remove)

    async def claim_due(self, now: datetime, next_after: NextAfter) -> list[tuple[ScheduleRecord, Fire]]:
        """Claim every trigger due by `now` (once each, whichever process asks): a schedule's `next_at` moves past
        `now` in the same transaction. A trigger missed by more than `LATE_GRACE` is not fired under the `skip`
        policy (its row says skipped); under `once`, the missed triggers are one run. The claims to launch."""
        now = now.astimezone(UTC)
        me = os.getpid()

        def claim(conn: sqlite3.Connection) -> list[tuple[sqlite3.Row, str, bool]]:
            claimed = []
            for row in conn.execute("SELECT * FROM schedules WHERE paused = 0 AND next_at <= ?",
                                    (now.isoformat(),)).fetchall():
                due = datetime.fromisoformat(row["next_at"])
                skipped = row["missed"] == "skip" and now - due > LATE_GRACE
                inserted = conn.execute(
                    "INSERT OR IGNORE INTO schedule_fires (schedule_id, due_at, claimed_by, claimed_at, skipped)"
                    " VALUES (?, ?, ?, ?, ?)", (row["id"], row["next_at"], me, utcnow(), int(skipped))).rowcount
                conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?",
                             (next_after(row["spec"], now).astimezone(UTC).isoformat(), row["id"]))
                if inserted:
                    claimed.append((row, row["next_at"], skipped))
            return claimed

        found = await self._db.transaction("claim the schedules due", claim)
        return [(ScheduleRecord.from_row(row), Fire(row["id"], due, None, skipped, None))
                for row, due, skipped in found if not skipped]

    async def fired_by_hand(self, schedule_id: str, due_at: str, run_id: str) -> None:
        """A run the user started off schedule (`run-now`): listed, and counted like the others."""
        row = (schedule_id, due_at, os.getpid(), utcnow(), run_id)
        await self._db.transaction("note a run started by hand", lambda conn: conn.execute(
            "INSERT OR IGNORE INTO schedule_fires (schedule_id, due_at, claimed_by, claimed_at, run_id)"
            " VALUES (?, ?, ?, ?, ?)", row))

    async def launched(self, schedule_id: str, due_at: str, run_id: str) -> None:
        await self._db.transaction("note a scheduled run", lambda conn: conn.execute(
            "UPDATE schedule_fires SET run_id = ? WHERE schedule_id = ? AND due_at = ?", (run_id, schedule_id, due_at)))

    async def orphans(self, *, is_alive: Callable[[int], bool] = pid_alive) -> list[tuple[ScheduleRecord, Fire]]:
        """Triggers claimed by a process that died before it launched their run: taken over by this process
        (each by one taker only)."""
        me = os.getpid()

        def take(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            taken = []
            for row in conn.execute("SELECT * FROM schedule_fires WHERE run_id IS NULL AND skipped = 0 AND"
                                    " claimed_by != ?", (me,)).fetchall():
                if not is_alive(row["claimed_by"]):
                    conn.execute("UPDATE schedule_fires SET claimed_by = ? WHERE schedule_id = ? AND due_at = ?"
                                 " AND claimed_by = ?", (me, row["schedule_id"], row["due_at"], row["claimed_by"]))
                    taken.append(row)
            return taken

        rows = await self._db.transaction("take over unlaunched schedule triggers", take)
        out = []
        for row in rows:
            try:
                out.append((await self.get(row["schedule_id"]), Fire(row["schedule_id"], row["due_at"], None, False,
                                                                       None)))
            except StoreError:
                continue  # removed meanwhile
        return out

    async def fires(self, schedule_id: str, limit: int = 20) -> list[Fire]:
        rows = await self._db.fetch_all("list a schedule's triggers", "SELECT * FROM schedule_fires WHERE"
                                        " schedule_id = ? ORDER BY due_at DESC LIMIT ?", (schedule_id, limit))
        return [Fire(r["schedule_id"], r["due_at"], r["run_id"], bool(r["skipped"]), r["outcome"]) for r in rows]

    async def settle(self, *, pause_after: int) -> list[ScheduleRecord]:
        """Record how each launched trigger's run ended (once it has), counting failures in a row; a schedule
        whose runs failed `pause_after` times in a row is paused. The schedules paused now."""
        def settle(conn: sqlite3.Connection) -> list[str]:
            paused = []
            for row in conn.execute("SELECT f.schedule_id, f.due_at, r.status FROM schedule_fires f JOIN agent_runs r"
                                    " ON r.id = f.run_id WHERE f.outcome IS NULL AND r.status IN ('completed',"
                                    " 'failed', 'timeout', 'cancelled', 'interrupted', 'waiting_user',"
                                    " 'budget_exhausted', 'quota_exhausted') ORDER BY f.due_at").fetchall():
                conn.execute("UPDATE schedule_fires SET outcome = ? WHERE schedule_id = ? AND due_at = ?",
                             (row["status"], row["schedule_id"], row["due_at"]))
                if row["status"] == "completed":
                    conn.execute("UPDATE schedules SET failures = 0 WHERE id = ?", (row["schedule_id"],))
                    continue
                conn.execute("UPDATE schedules SET failures = failures + 1 WHERE id = ?", (row["schedule_id"],))
                count = conn.execute("SELECT failures, paused FROM schedules WHERE id = ?",
                                     (row["schedule_id"],)).fetchone()
                if count is not None and count["failures"] >= pause_after and not count["paused"]:
                    conn.execute("UPDATE schedules SET paused = 1, pause_reason = ? WHERE id = ?",
                                 (f"its last {count['failures']} runs failed (the last: {row['status']})",
                                  row["schedule_id"]))
                    paused.append(row["schedule_id"])
            return paused

        ids = await self._db.transaction("settle scheduled runs", settle)
        return [await self.get(i) for i in ids]
