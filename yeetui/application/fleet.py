"""The fleet: every run of every project on this data dir at a glance, in three groups — **needs you**
(a permission question or `ask_user` waiting, a budget warning or halt, a finished top-level run not read yet),
**working** (with what it is doing, for how long, at what spend; stalled ones said so) and **done** (recent) —
with its project, its place in its tree and where it runs (in-process, a tmux pane, a detached worker, an
external ACP agent). A run recorded as live whose process is gone is said to be gone, never working.

Read from the store alone, so any process shows the same: `yeetui fleet`, `yeetui fleet --json`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from yeetui.events import RunStatus
from yeetui.runs.spec import RunOptions
from yeetui.store import RunRecord, Store
from yeetui.store.records import SessionRecord
from yeetui.subagents.elsewhere import process_running

RECENT = timedelta(hours=24)
"""How far back `done` reaches."""
LIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_PERMISSION)
NEEDS_INPUT = (RunStatus.WAITING_PERMISSION, RunStatus.WAITING_USER)


@dataclass
class FleetRow:
    run_id: str
    label: str
    profile: str
    project: str
    path: str
    """Its place in its tree: `primary › orchestrator#1 › builder#3`."""
    mode: str
    """`in_process`, `tmux`, `detached`, `external`."""
    status: str
    why: str = ""
    """What it needs or does: the question waiting, `stalled 3:10`, its activity, how it ended."""
    elapsed: float | None = None
    cost: float | None = None
    tokens: int = 0
    session_id: str = ""
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Fleet:
    needs_you: list[FleetRow] = field(default_factory=list)
    working: list[FleetRow] = field(default_factory=list)
    done: list[FleetRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"needs_you": [r.to_json() for r in self.needs_you], "working": [r.to_json() for r in self.working],
                "done": [r.to_json() for r in self.done]}


async def fleet(store: Store, *, now: datetime | None = None, stall_after: float | None = 120.0,
                limit: int = 500) -> Fleet:
    """The fleet as the store shows it now."""
    now = now or datetime.now(UTC)
    seen = Fleet()
    sessions: dict[str, SessionRecord | None] = {}

    async def session(session_id: str) -> SessionRecord | None:
        if session_id not in sessions:
            sessions[session_id] = await store.get_session(session_id)
        return sessions[session_id]

    runs = await store.list_runs(limit=limit)
    live = [r for r in runs if r.status in LIVE]
    progress = await store.last_progress([r for r in live if r.status == RunStatus.RUNNING])
    asks = {a.run_id: a for a in await store.permission_asks.unanswered_open_to_all()}
    unread = {item.run_id: item for item in await store.inbox.list(None, statuses=("unread",)) if item.run_id}
    for run in runs:
        record = await session(run.session_id)
        row = FleetRow(run_id=run.id, label=run.label or run.profile, profile=run.profile,
                       project=str(record.cwd) if record and record.cwd else "", path=await _path(run, session),
                       mode=_mode(run), status=run.status.value, elapsed=_elapsed(run, now), cost=run.cost,
                       tokens=run.usage.total_tokens, session_id=run.session_id, pid=run.pid)
        budget_item = unread.get(run.id)
        if run.status in LIVE and run.pid is not None and not process_running(run.pid):
            row.status, row.why = "gone", "its process is gone (it is recorded interrupted at the next start)"
            seen.done.append(row)
        elif run.status in NEEDS_INPUT:
            ask = asks.get(run.id)
            row.why = (f"asks to run {ask.tool}: {ask.subject}" if ask is not None
                       else "needs permission" if run.status == RunStatus.WAITING_PERMISSION else "needs your input")
            seen.needs_you.append(row)
        elif run.status in LIVE:
            idle = (now - progress[run.id]).total_seconds() if run.id in progress else None
            if stall_after is not None and idle is not None and idle >= stall_after:
                row.status, row.why = "stalled", f"no progress for {int(idle // 60)}:{int(idle % 60):02d}"
            seen.working.append(row)
        elif budget_item is not None and budget_item.kind == "budget":
            row.why = budget_item.title
            seen.needs_you.append(row)
        elif run.finished_at is not None and now - _aware(run.finished_at) <= RECENT:
            row.why = (run.error or "")[:200]
            if record is not None and record.parent_id is None and run.id in unread:
                row.why = row.why or "finished: not read yet"
                seen.needs_you.append(row)
            else:
                seen.done.append(row)
    return seen


def _mode(run: RunRecord) -> str:
    options = RunOptions.of(run)
    if run.options.get("external"):
        return "external"
    if options.detached:
        return "detached"
    return options.mode


async def _path(run: RunRecord, session: Any) -> str:
    """`primary › oracle#2`: the labels (or profiles) of the sessions above the run's, then its own."""
    names = [run.label or run.profile]
    record = await session(run.session_id)
    hops = 0
    while record is not None and record.parent_id is not None and hops < 16:
        record = await session(record.parent_id)
        hops += 1
        if record is not None:
            names.append(record.title or record.profile)
    return " › ".join(reversed(names))


def _elapsed(run: RunRecord, now: datetime) -> float | None:
    if run.started_at is None:
        return None
    end = _aware(run.finished_at) if run.finished_at else now
    return max((end - _aware(run.started_at)).total_seconds(), 0.0)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
