"""The fleet: every run of every project on this data dir at a glance, in three groups — **needs you**
(a permission question or `ask_user` waiting, a budget warning or halt, a finished top-level run not read yet),
**working** (with what it is doing, for how long, at what spend; stalled ones said so) and **done** (recent) —
with its project, its place in its tree and where it runs (in-process, a tmux pane, a detached worker, an
external ACP agent). A run recorded as live whose process is gone is said to be gone, never working.

Read from the store alone, so any process shows the same: `yeetui fleet`, `yeetui fleet --json`, the TUI's
ctrl+g. `FleetDesk` acts on a row from any of them, wherever the run executes: answers its permission question,
steers or follows it up, cancels it, finds its tmux pane or its worktree, says how to open its session.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from yeetui.application.agents import cancel_run, steer_run
from yeetui.errors import YeetuiError
from yeetui.events import PermissionAnswer, RunStatus
from yeetui.runs.spec import RunOptions
from yeetui.store import Store
from yeetui.store.coordination import PermissionAsk
from yeetui.store.records import RunBrief, SessionRecord, WorktreeRecord
from yeetui.subagents.detached import spawn_worker, worker_log
from yeetui.subagents.elsewhere import process_running
from yeetui.system.processes import yeetui_command
from yeetui.system.terminals import attach_argv
from yeetui.system.tmux import Pane, TmuxServer

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
    """What it needs or does: the question waiting, its activity (`calling bash`, `answering`), `no progress for
    3:10`, how it ended."""
    elapsed: float | None = None
    cost: float | None = None
    tokens: int = 0
    session_id: str = ""
    pid: int | None = None
    ask: PermissionAsk | None = None
    """The permission question it waits on, when the store holds it (a pane's, a detached run's)."""
    worktree: str = ""
    """The path of the worktree its session works in, if any."""
    pane: str = ""
    """`tmux -L … attach -t …` for a run in a tmux pane."""

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
    """The fleet as the store shows it now: a handful of reads, however many runs it lists."""
    now = now or datetime.now(UTC)
    seen = Fleet()
    runs = await store.run_briefs(limit=limit)
    above = await _sessions_and_ancestors(store, {r.parent_session_id for r in runs if r.parent_session_id})
    running = [r for r in runs if r.status == RunStatus.RUNNING]
    progress = await store.last_progress(running)
    doing = await store.last_activity(r.id for r in running)
    asks: dict[str, PermissionAsk] = {}
    for ask in await store.permission_asks.unanswered_any():
        asks.setdefault(ask.run_id, ask)
    unread = {item.run_id: item for item in await store.inbox.list(None, statuses=("unread",)) if item.run_id}
    worktrees = {str(wt.owner_session_id): wt for wt in await store.worktree_records.list(statuses=("active",))
                 if wt.owner_session_id}
    for run in runs:
        row = FleetRow(run_id=run.id, label=run.label or run.profile, profile=run.profile, project=run.cwd or "",
                       path=_path(run, above), mode=run.mode, status=run.status.value, elapsed=_elapsed(run, now),
                       cost=run.cost, tokens=run.tokens, session_id=run.session_id, pid=run.pid,
                       worktree=str(worktrees[run.session_id].path) if run.session_id in worktrees else "",
                       pane=Pane(*run.pane, 0).attach_command() if run.pane else "")
        budget_item = unread.get(run.id)
        if run.status in LIVE and run.pid is not None and not process_running(run.pid):
            row.status, row.why = "gone", "its process is gone (it is recorded interrupted at the next start)"
            seen.done.append(row)
        elif run.status in NEEDS_INPUT:
            row.ask = asks.get(run.id)
            row.why = (f"asks to run {row.ask.tool}: {row.ask.subject}" if row.ask is not None
                       else "needs permission" if run.status == RunStatus.WAITING_PERMISSION else "needs your input")
            seen.needs_you.append(row)
        elif run.status in LIVE:
            idle = (now - progress[run.id]).total_seconds() if run.id in progress else None
            row.why = "queued" if run.status == RunStatus.QUEUED else doing.get(run.id, "starting")
            if stall_after is not None and idle is not None and idle >= stall_after:
                row.status = "stalled"
                row.why = f"no progress for {int(idle // 60)}:{int(idle % 60):02d} ({row.why})"
            seen.working.append(row)
        elif budget_item is not None and budget_item.kind == "budget":
            row.why = budget_item.title
            seen.needs_you.append(row)
        elif run.finished_at is not None and now - _aware(run.finished_at) <= RECENT:
            row.why = (run.error or "")[:200]
            if run.parent_session_id is None and run.id in unread \
                    and run.status != RunStatus.CANCELLED:  # the user's own cancel needs nothing more of them
                row.why = row.why or "finished: not read yet"
                seen.needs_you.append(row)
            else:
                seen.done.append(row)
    return seen


async def _sessions_and_ancestors(store: Store, ids: set[str]) -> dict[str, SessionRecord]:
    """The sessions `ids` and every session above them, a level of the trees per read."""
    found: dict[str, SessionRecord] = {}
    wanted = set(ids)
    for _ in range(16):
        if not wanted:
            break
        batch = await store.get_sessions(wanted)
        found.update(batch)
        wanted = {s.parent_id for s in batch.values() if s.parent_id and s.parent_id not in found}
    return found


def _path(run: RunBrief, above: Mapping[str, SessionRecord]) -> str:
    """`primary › oracle#2`: the titles (or profiles) of the sessions above the run's, then its own label."""
    names = [run.label or run.profile]
    record = above.get(run.parent_session_id) if run.parent_session_id else None
    hops = 0
    while record is not None and hops < 16:
        names.append(record.title or record.profile)
        record = above.get(record.parent_id) if record.parent_id else None
        hops += 1
    return " › ".join(reversed(names))


def _elapsed(run: RunBrief, now: datetime) -> float | None:
    if run.started_at is None:
        return None
    end = _aware(run.finished_at) if run.finished_at else now
    return max((end - _aware(run.started_at)).total_seconds(), 0.0)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# -- acting on a row ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Handover:
    """A command that takes the user's terminal: the fleet runs it in its place and comes back when it ends."""

    argv: list[str]
    cwd: str


class FleetDesk:
    """The fleet's actions, from any process on this data dir: each reaches the run wherever it executes
    (through the store, a signal, or its tmux server)."""

    def __init__(self, store: Store, *, env: Mapping[str, str] | None = None,
                 stall_after: float | None = 120.0) -> None:
        self.store = store
        self.env = dict(os.environ if env is None else env)
        self.stall_after = stall_after

    async def look(self, *, limit: int = 500) -> Fleet:
        return await fleet(self.store, stall_after=self.stall_after, limit=limit)

    async def answer(self, row: FleetRow, answer: PermissionAnswer) -> str:
        """Answer the question the run waits on (the first answer wins, from here or any other yeetui)."""
        if row.ask is None:
            raise YeetuiError(self.no_question(row))
        if not await self.store.permission_asks.answer(row.ask.id, answer):
            raise YeetuiError(f"{row.label}'s question was answered already (or it stopped waiting).")
        said = {"allow_once": "allowed once", "allow_always": "allowed for the rest of its session",
                "deny": "denied"}.get(answer, answer)
        return f"{row.label}: {row.ask.tool} {said}."

    @staticmethod
    def no_question(row: FleetRow) -> str:
        """What to say of a row with no question in the store to answer."""
        if row.status != "waiting_permission":
            return f"{row.label} has no question waiting."
        where = f" in the yeetui that runs it (process {row.pid})" if row.pid else " in the yeetui that runs it"
        return f"{row.label}'s question is asked in its own dialog: answer it{where}."

    async def cancel(self, row: FleetRow) -> str:
        ended = await cancel_run(self.store, await self.store.resolve_run(row.run_id))
        return f"{row.label}: {ended.status.value}."

    async def send(self, row: FleetRow, text: str) -> str:
        """A message for the run: guidance a running one reads at its next turn; a finished subagent goes on
        with it in its own session (`yeetui agents send`, in the background in its project; its permission
        questions wait for an answer here or in any yeetui app)."""
        if not text.strip():
            raise YeetuiError("The message is empty.")
        run = await self.store.resolve_run(row.run_id)
        if run.status in LIVE:
            await steer_run(self.store, run, text)
            return f"{row.label} reads it at its next turn."
        session = await self.store.get_session(run.session_id)
        if session is None or session.parent_id is None:
            raise YeetuiError(f"{row.label} is a conversation of its own, not a subagent: open it (enter) and type "
                              "there to go on with it.")
        project = _project_of(row)
        argv = yeetui_command("agents", "send", "--json", "--ask-anywhere", run.id, "--", text)
        pid = await asyncio.to_thread(spawn_worker, argv, cwd=project, env=self.env,
                                      log_path=worker_log(f"{run.id}-follow-up", self.env))
        return f"{row.label} goes on with your message (process {pid}; it shows here as it works)."

    async def pane(self, row: FleetRow) -> Pane | None:
        """The run's tmux pane, while it is there."""
        run = await self.store.resolve_run(row.run_id)
        pane = RunOptions.of(run).pane
        if not pane or not pane.get("server") or not pane.get("window"):
            return None
        server = TmuxServer(pane["server"], env=self.env)
        if not await server.has_pane(pane.get("pane", "")):
            return None
        return Pane(pane["server"], pane["window"], pane.get("pane", ""), run.pid or 0)

    async def worktree(self, row: FleetRow) -> WorktreeRecord | None:
        """The worktree the run's session works in (the newest active one)."""
        found = await self.store.worktree_records.list(statuses=("active",), owner_session_id=row.session_id)
        return found[0] if found else None

    async def mark_read(self, row: FleetRow) -> None:
        """The user opened the run: its result waiting unread in its inbox counts as read."""
        for item in await self.store.inbox.list(row.session_id, statuses=("unread",)):
            if item.run_id == row.run_id and item.kind != "budget":
                await self.store.inbox.set_status(item.id, "read")

    def attach(self, pane: Pane) -> Handover:
        """Attach this terminal to the pane's tmux window (detach with the prefix key, d, to come back)."""
        return Handover(attach_argv(pane.server, pane.target), os.getcwd())

    def shell(self, worktree: WorktreeRecord) -> Handover:
        """The user's shell in a worktree (exit it to come back)."""
        return Handover([self.env.get("SHELL") or "/bin/sh"], str(worktree.path))

    def open_session(self, row: FleetRow) -> Handover:
        """yeetui on the run's session, in its project: `yeetui --resume SESSION`."""
        return Handover(yeetui_command("--resume", row.session_id), str(_project_of(row)))


def _project_of(row: FleetRow) -> Path:
    if not row.project or not Path(row.project).is_dir():
        raise YeetuiError(f"{row.label}'s project {row.project or '(unknown)'} is gone.")
    return Path(row.project)

