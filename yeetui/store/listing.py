"""What a listing of runs shows (the fleet, `agents list`), read across the tables in one query each: each run's
brief, when each last got somewhere and what each was last seen doing.

`RunListing` is a part of `Store` (store/sqlite.py), a mixin over `Database`: `store.run_briefs(…)`,
`store.last_progress(runs)`, `store.last_activity(run_ids)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from yeetui.events import RunStatus
from yeetui.store.db import Database
from yeetui.store.records import RunBrief, RunRecord, parse_ts
from yeetui.store.runs import LIVE_STATUSES


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


class RunListing(Database):
    """Reads of many runs at once, for a listing refreshed every few seconds."""

    async def run_briefs(self, *, finished_since: datetime) -> list[RunBrief]:
        """Every run a listing of what goes on shows, newest first, in one read (the fleet: every two seconds,
        however many runs the data dir holds): each one not finished (queued, running, waiting for permission),
        each one finished at `finished_since` or later, and — however old — each one with an unread inbox item
        or an unanswered permission question. A row whose usage or options are not valid JSON shows what it
        can, never fails the read."""
        since = finished_since.astimezone(UTC).isoformat(timespec="microseconds")
        rows = await self.fetch_all("list runs", _BRIEFS_SQL, (*(s.value for s in LIVE_STATUSES), since))
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
