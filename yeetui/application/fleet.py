"""The fleet: every run of every project on this data dir at a glance, in three groups — **needs you**
(a permission question or `ask_user` waiting, a budget warning or halt, a detached or scheduled run's result not
read yet; never a conversation that merely answered),
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
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from yeetui.application.agents import cancel_run, steer_run
from yeetui.errors import YeetuiError
from yeetui.events import PermissionAnswer, PermissionRequested, RunStatus
from yeetui.runs.spec import RunOptions
from yeetui.store import Store
from yeetui.store.coordination import PermissionAsk
from yeetui.store.records import InboxItem, RunBrief, SessionRecord, WorktreeRecord
from yeetui.subagents.detached import spawn_worker, worker_log
from yeetui.subagents.elsewhere import process_running
from yeetui.subagents.ledger import ANSWERED, run_status_word
from yeetui.system.processes import yeetui_command
from yeetui.system.terminals import attach_argv
from yeetui.system.tmux import Pane, TmuxServer
from yeetui.text import clip_words, one_line

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
    """Its run status as stored (`waiting_permission`, `budget_exhausted`, …), or `stalled`, or `gone`."""
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
    status_text: str = ""
    """The status in words: `needs permission`, `answered`, `budget exhausted`, `timed out`, `stalled`, …
    (from `status` when not given)."""
    conversation: bool = False
    """A conversation of its own (no parent session): a message goes on with it where it is opened, never in
    the background the way a finished subagent's follow-up does."""

    def __post_init__(self) -> None:
        if not self.status_text:
            self.status_text = status_words(self.status)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def status_words(status: str) -> str:
    """A run status as people read it (`waiting_user` → `needs input`); `stalled` and `gone` as they are."""
    try:
        return run_status_word(RunStatus(status))
    except ValueError:
        return status


@dataclass
class Fleet:
    needs_you: list[FleetRow] = field(default_factory=list)
    working: list[FleetRow] = field(default_factory=list)
    done: list[FleetRow] = field(default_factory=list)
    """The newest done runs, up to the listing's limit."""
    done_not_listed: int = 0
    """Done runs of the last 24 hours past the limit: counted, not listed."""

    def counts(self) -> dict[str, int]:
        """How many runs each group holds, listed or not."""
        return {"needs_you": len(self.needs_you), "working": len(self.working),
                "done": len(self.done) + self.done_not_listed}

    def to_json(self) -> dict[str, Any]:
        return {"needs_you": [r.to_json() for r in self.needs_you], "working": [r.to_json() for r in self.working],
                "done": [r.to_json() for r in self.done], "counts": self.counts()}


async def fleet(store: Store, *, now: datetime | None = None, stall_after: float | None = 120.0,
                limit: int = 500) -> Fleet:
    """The fleet as the store shows it now, in a handful of reads: every run that goes on, every one that
    needs the user however old, every one done in the last 24 hours — all counted; of the done ones, the newest
    `limit` are listed."""
    now = now or datetime.now(UTC)
    runs = await store.run_briefs(finished_since=now - RECENT)
    asks: dict[str, PermissionAsk] = {}
    for ask in await store.permission_asks.unanswered_any():
        asks.setdefault(ask.run_id, ask)
    unread: dict[str, list[InboxItem]] = {}
    for item in await store.inbox.list(None, statuses=("unread",)):  # newest first
        if item.run_id:
            unread.setdefault(item.run_id, []).append(item)
    latest: dict[str, str] = {}
    for run in runs:  # newest first: the first run seen of a session is its latest
        latest.setdefault(run.session_id, run.id)
    placed = [(run, *where) for run in runs
              if (where := _place(run, now, asks, unread.get(run.id, []), latest[run.session_id] == run.id))]
    listed, done = [], 0
    for entry in placed:  # every run that needs the user or goes on, and the newest `limit` done
        done += entry[1] == "done"
        if entry[1] != "done" or done <= limit:
            listed.append(entry)
    seen = Fleet(done_not_listed=max(done - limit, 0))
    listed_runs = [run for run, *_ in listed]
    above = await _sessions_and_ancestors(store, {r.parent_session_id for r in listed_runs if r.parent_session_id})
    running = [r for r in listed_runs if r.status == RunStatus.RUNNING]
    progress = await store.last_progress(running)
    doing = await store.last_activity(r.id for r in running)
    worktrees = {str(wt.owner_session_id): wt for wt in await store.worktree_records.list(statuses=("active",))
                 if wt.owner_session_id}
    groups = {"needs_you": seen.needs_you, "working": seen.working, "done": seen.done}
    for run, group, status, why in listed:
        row = FleetRow(run_id=run.id, label=run.label or run.profile, profile=run.profile, project=run.cwd or "",
                       path=_path(run, above), mode=run.mode, status=status, status_text=_status_text(run, status),
                       conversation=run.parent_session_id is None, why=why, elapsed=_elapsed(run, now),
                       cost=run.cost, tokens=run.tokens, session_id=run.session_id, pid=run.pid,
                       ask=asks.get(run.id) if group == "needs_you" and run.status in NEEDS_INPUT else None,
                       worktree=str(worktrees[run.session_id].path) if run.session_id in worktrees else "",
                       pane=Pane(*run.pane, 0).attach_command() if run.pane else "")
        if group == "working":
            idle = (now - progress[run.id]).total_seconds() if run.id in progress else None
            row.why = "queued" if run.status == RunStatus.QUEUED else doing.get(run.id, "starting")
            if stall_after is not None and idle is not None and idle >= stall_after:
                row.status = row.status_text = "stalled"
                row.why = f"no progress for {int(idle // 60)}:{int(idle % 60):02d} ({row.why})"
        groups[group].append(row)
    return seen


def _place(run: RunBrief, now: datetime, asks: Mapping[str, PermissionAsk], unread: list[InboxItem],
           latest: bool) -> tuple[str, str, str] | None:
    """(group, status, why) of a run, or None when the fleet does not list it. Needs you: a question waiting
    (a permission question, a subagent's `ask_user`), a budget warning or halt not read yet (a halt is told by a
    budget item, or by the halted run's ending), the result of a detached or scheduled run nobody read yet. Not
    a conversation that answered: its user read the answer where they asked."""
    status = run.status.value
    budget = next((item for item in unread if item.kind == "budget"), None)
    result = next((item for item in unread if item.kind != "budget"), None)
    top = run.parent_session_id is None
    if run.status in LIVE and run.pid is not None and not process_running(run.pid):
        return "done", "gone", "its process is gone (it is recorded interrupted at the next start)"
    if run.status == RunStatus.WAITING_PERMISSION:
        ask = asks.get(run.id)
        return "needs_you", status, f"asks to run {ask.tool}: {ask.subject}" if ask is not None else "needs permission"
    if run.status in LIVE:
        return "working", status, ""
    if budget is not None:  # a warning, or the halt of a primary's tree
        return "needs_you", status, budget.title
    if run.status == RunStatus.BUDGET_EXHAUSTED and result is not None:  # a halt its ending tells of
        return "needs_you", status, (run.error or "halted: its budget ran out")[:200]
    if top and run.mode == "detached" and result is not None and run.status != RunStatus.CANCELLED:
        # the user's own cancel needs nothing more of them
        if run.status == RunStatus.WAITING_USER:
            return "needs_you", status, f"asks you: {clip_words(one_line(result.body), 200)}" if result.body \
                else "asks you something"
        return "needs_you", status, (run.error or "")[:200] or "finished: not read yet"
    if run.status == RunStatus.WAITING_USER and not top and latest:  # not followed up since
        return "needs_you", status, "needs your input"
    if run.finished_at is not None and now - _aware(run.finished_at) <= RECENT:
        return "done", status, (run.error or "")[:200]
    return None


def _status_text(run: RunBrief, status: str) -> str:
    """`needs permission`, `budget exhausted`; a conversation of its own waiting for the user has `answered`."""
    if run.status == RunStatus.WAITING_USER and run.parent_session_id is None and run.mode != "detached":
        return ANSWERED
    return status_words(status)


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


# -- questions settled elsewhere ----------------------------------------------------------------------------------

ANSWER_WORDS: dict[str, str] = {"allow_once": "allowed once", "allow_always": "allowed for the rest of its session",
                                "deny": "denied"}
"""A user's answer to a permission question, as said back to them."""


def settled_text(label: str, tool: str, answer: str | None) -> str:
    """`oracle#3's bash question was answered in another window: allowed once.` — what a dialog that closed
    without the user's answer says: who answered elsewhere and how, or why nobody needs the answer any more."""
    question = f"{label}'s {tool} question"
    if answer in ANSWER_WORDS:
        return f"{question} was answered in another window: {ANSWER_WORDS[answer]}."
    if answer == "unattended":
        return f"{question} was refused: nobody answered it in time."
    return f"{question} was withdrawn: its run stopped waiting for the answer."


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

    async def stored_question(self, request: PermissionRequested, *, taken: Collection[int] = ()) -> int | None:
        """The question in the store that `request` stands for — one a run in another process (a pane's worker, a
        detached run) asks through the store, answered by whoever answers first —, by its id, while it is open and
        not in `taken` (the ids the caller matched to other requests already). None for a question of this process's
        own runs, which only this process answers."""
        if request.call_id or request.reply.done():
            return None
        for ask in await self.store.permission_asks.unanswered_any():
            if ask.id not in taken and (ask.run_id, ask.session_id, ask.tool, ask.subject, ask.arguments) == (
                    request.run_id, request.session_id, request.tool, request.subject, request.arguments):
                return ask.id
        return None


    async def how_settled(self, request: PermissionRequested, ask_id: int | None) -> str:
        """What a dialog for `request` says when it closed without the user's answer: the answer given in another
        window (`ask_id`: its question in the store), or why its run stopped waiting."""
        if ask_id is not None:
            return settled_text(request.agent_label, request.tool, await self.store.permission_asks.read_answer(ask_id))
        given = None if request.reply.cancelled() or not request.reply.done() else request.reply.result()
        return settled_text(request.agent_label, request.tool, given)

    async def look(self, *, limit: int = 500) -> Fleet:
        return await fleet(self.store, stall_after=self.stall_after, limit=limit)

    async def answer(self, row: FleetRow, answer: PermissionAnswer) -> str:
        """Answer the question the run waits on (the first answer wins, from here or any other yeetui)."""
        if row.ask is None:
            raise YeetuiError(self.no_question(row))
        if not await self.store.permission_asks.answer(row.ask.id, answer):
            raise YeetuiError(f"{await self.settled(row.ask)} Your answer was not used.")
        return f"{row.label}: {row.ask.tool} {ANSWER_WORDS.get(answer, answer)}."

    async def settled(self, ask: PermissionAsk) -> str:
        """How a question was settled without this fleet's answer, in a sentence."""
        return settled_text(ask.agent_label, ask.tool, await self.store.permission_asks.read_answer(ask.id))

    @staticmethod
    def no_question(row: FleetRow) -> str:
        """What to say of a row with no question in the store to answer."""
        if row.status != "waiting_permission":
            return f"{row.label} has no question waiting."
        where = f" in the yeetui that runs it (process {row.pid})" if row.pid else " in the yeetui that runs it"
        return f"{row.label}'s question is asked in its own dialog: answer it{where}."

    @staticmethod
    def no_message(row: FleetRow) -> str | None:
        """Why a message cannot go to the run from a fleet of its own (None: it can): a conversation of its own
        that ended goes on only where it is opened."""
        if row.status in (*(s.value for s in LIVE), "stalled") or not row.conversation:
            return None
        return _opened_to_go_on(row.label)

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
            raise YeetuiError(_opened_to_go_on(row.label))
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


def _opened_to_go_on(label: str) -> str:
    return f"{label} is a conversation of its own, not a subagent: open it (enter) and type there to go on with it."


def _project_of(row: FleetRow) -> Path:
    if not row.project or not Path(row.project).is_dir():
        raise YeetuiError(f"{row.label}'s project {row.project or '(unknown)'} is gone.")
    return Path(row.project)

