"""The status ledger: one row per live run, kept up to date from bus events.

`Ledger(bus)` listens to the bus and publishes `LedgerChanged(run_id, row)` whenever a row really changes
(`row` is None when it disappears), so a front end redraws one line at a time. Activity text comes from
the run's own events (`reading src/auth.py`, `thinking`, `answering`, …); streaming deltas only flip the
activity word, they never cause a publish per delta. Rows of finished runs linger briefly, then go.

A watcher between runs shows as `pair#2 watching`: call `watching()` / `stopped_watching()`, or publish a
`WatcherChanged` event if events.py has one (read through getattr, so the ledger does not depend on it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.events import RunStatus
from yeetui.providers.pricing import price_for
from yeetui.store.records import RunRecord
from yeetui.text import dollars, tokens_text

Clock = Callable[[], float]
STALLED = "stalled"
"""How a running row reads when nothing came of it for a while (`LedgerRow.stalled`)."""
WATCHING = "watching"
"""The ledger status of a watcher with no run in flight."""

_STATUS_WORDS = {RunStatus.WAITING_PERMISSION: "needs permission", RunStatus.WAITING_USER: "needs input",
                 RunStatus.TIMEOUT: "timed out", RunStatus.BUDGET_EXHAUSTED: "budget exhausted",
                 RunStatus.QUOTA_EXHAUSTED: "quota exhausted"}
_PERMISSION = "waiting for permission"
_PROGRESS = (ev.TextDelta, ev.ThinkingDelta, ev.ToolCallStarted, ev.ToolCallFinished, ev.RunStatusChanged,
             ev.UsageUpdated, ev.MessageCommitted)
"""Events that show a run getting somewhere (see `LedgerRow.stalled`)."""


@dataclass(frozen=True, slots=True)
class LedgerRow:
    run_id: str
    session_id: str
    parent_session_id: str | None
    label: str
    profile: str
    model: str
    """The short model name (`claude-sonnet-4-6`), without the provider."""
    status: RunStatus | str
    """A RunStatus, or `watching` for a watcher between runs."""
    registered: float
    """Clock time the row appeared (orders queued rows)."""
    started: float | None = None
    """Clock time the run started running."""
    ended: float | None = None
    """Clock time the run reached a final status; the elapsed time stops there."""
    cost: float | None = 0.0
    """USD so far; None when the model's price is unknown."""
    activity: str = ""
    tree_cost: float | None = None
    """USD of the row's session and every subagent session below it, when it has subagents; None otherwise."""
    elsewhere: int | None = None
    """The pid of the yeetui process that executes the run, when that is not this one (a detached worker)."""
    tokens: int = 0
    """Tokens used so far (input, output and cache, summed over the run's provider calls)."""
    budget: str = ""
    """What its tree spent against its budget's limits (`$0.31/$0.50 · 40k/100k tok`), when it has one."""
    progressed: float | None = None
    """Clock time of its last progress: a token streamed, a tool call begun or ended, a status change."""
    stall_after: float | None = None
    """Seconds without progress after which a running row reads `stalled` (None: never)."""
    clock: Clock = field(default=time.monotonic, repr=False, compare=False)

    @property
    def elapsed(self) -> float:
        """Seconds spent running (0 while queued), frozen at the end of the run."""
        if self.started is None:
            return 0.0
        return max((self.ended if self.ended is not None else self.clock()) - self.started, 0.0)

    @property
    def is_final(self) -> bool:
        return isinstance(self.status, RunStatus) and self.status.is_final

    @property
    def stalled(self) -> bool:
        """Running, and nothing came of it for `stall_after` seconds (its activity says what it waits on)."""
        return (self.status == RunStatus.RUNNING and self.stall_after is not None and self.progressed is not None
                and self.clock() - self.progressed >= self.stall_after)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "clock"}
        data["status"] = str(self.status)
        data["elapsed"] = round(self.elapsed, 3)
        return data


def short_model(model: str) -> str:
    """`anthropic/claude-sonnet-4-6` → `claude-sonnet-4-6` (the last path segment)."""
    return model.rpartition("/")[2] if model else ""


def format_elapsed(seconds: float) -> str:
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


ANSWERED = "answered"
"""The word for a top-level (primary) run that ended its turn: it waits for the user, as it should."""


def status_word(row: LedgerRow) -> str:
    """How a row's status reads: `needs permission`, `timed out`, … A subagent waiting for the user needs
    input; the primary conversation waiting for the user has simply answered."""
    status = row.status
    if status == RunStatus.WAITING_USER and row.parent_session_id is None:
        return ANSWERED
    if row.stalled:
        return STALLED
    return run_status_word(status) if isinstance(status, RunStatus) else str(status)


def run_status_word(status: RunStatus) -> str:
    """A run status as people read it: `needs permission`, `needs input`, `timed out`, else its value."""
    return _STATUS_WORDS.get(status, status.value)


def format_row(row: LedgerRow) -> str:
    """`oracle#4 running · claude-sonnet-4-6 · 0:42 · $0.03 · 12k tok · reading src/auth.py`; a run with subagents adds
    what its whole tree cost (`$0.03 (tree $0.41)`), a run of another process says so (`in process 4242`)."""
    status = row.status
    word = status_word(row)
    parts = [f"{row.label} {word}"]
    if row.model:
        parts.append(row.model)
    if status not in (WATCHING, RunStatus.QUEUED):  # a queued run has no time or cost yet
        parts.append(format_elapsed(row.elapsed))
        cost = dollars(row.cost)
        if row.tree_cost is not None and (row.cost is None or row.tree_cost - row.cost >= 0.0001):
            cost += f" (tree {dollars(row.tree_cost)})"
        parts.append(cost)
        if row.tokens:
            parts.append(tokens_text(row.tokens))
        if row.budget:
            parts.append(row.budget)
    if row.activity and row.activity != word:
        parts.append(row.activity)
    return " · ".join(parts)


def tree_order(rows: Iterable[LedgerRow]) -> list[tuple[LedgerRow, int]]:
    """`rows` as the switcher's tree shows sessions: each row followed by the rows of its subagents (a row
    whose parent session has a row here), with its depth below the top; siblings keep their given order."""
    rows = list(rows)
    by_session = {row.session_id: row for row in rows}  # a subagent sits under its parent session's latest run
    children: dict[str | None, list[LedgerRow]] = {}
    for row in rows:
        parent = row.parent_session_id
        under = by_session.get(parent) if parent and parent != row.session_id else None
        children.setdefault(under.run_id if under is not None else None, []).append(row)
    ordered: list[tuple[LedgerRow, int]] = []
    placed: set[str] = set()

    def place(row: LedgerRow, depth: int) -> None:
        placed.add(row.run_id)
        ordered.append((row, depth))
        for child in children.get(row.run_id, []):
            if child.run_id not in placed:
                place(child, depth + 1)

    for row in children.get(None, []):
        place(row, 0)
    for row in rows:  # a cycle in parent ids: show what is left at the top rather than lose it
        if row.run_id not in placed:
            place(row, 0)
    return ordered


class Ledger:
    def __init__(self, bus: Bus, *, linger: float = 10.0, clock: Clock = time.monotonic,
                 stall_after: float | None = None) -> None:
        self.bus = bus
        self.linger = linger
        self.clock = clock
        self.stall_after = stall_after
        """Seconds without progress after which a running row reads `stalled` (`Settings.stall_after`)."""
        self._progress: dict[str, float] = {}
        """Clock time of each run's last progress: kept apart from its row, as deltas come hundreds a second."""
        self._rows: dict[str, LedgerRow] = {}
        self._watchers: dict[str, LedgerRow] = {}
        """Watcher rows by session id, shown while that session has no run row."""
        self._paused: dict[str, str] = {}
        """Activity before a permission question, restored when the run goes on."""
        self._gone: dict[str, None] = {}
        """Runs whose rows were removed: late events must not bring them back (insertion-ordered, capped)."""
        self._timers: list[asyncio.TimerHandle] = []
        self._closed = False
        bus.add_listener(self._on_event)

    # -- reading ------------------------------------------------------------------------------------

    def rows(self) -> list[LedgerRow]:
        """Live rows (and lingering finished ones), in order of start."""
        self.prune()
        for run_id, row in list(self._rows.items()):
            if (progressed := self._progress.get(run_id)) is not None and progressed != row.progressed:
                self._rows[run_id] = replace(row, progressed=progressed)
        return sorted(self._rows.values(), key=lambda r: (r.started if r.started is not None else r.registered,
                                                         r.registered))

    def get(self, run_id: str) -> LedgerRow | None:
        return self._rows.get(run_id)

    # -- watchers -----------------------------------------------------------------------------------

    def watching(self, session_id: str, *, label: str, profile: str = "", model: str = "",
                 parent_session_id: str | None = None) -> None:
        """A watcher session is active: show `label watching` whenever it has no run in flight. Calling it
        again with the same details changes nothing."""
        old = self._watchers.get(session_id)
        row = LedgerRow(run_id=_watch_key(session_id), session_id=session_id, parent_session_id=parent_session_id,
                        label=label, profile=profile, model=short_model(model), status=WATCHING,
                        registered=old.registered if old else self.clock(), clock=self.clock)
        self._watchers[session_id] = row
        if not self._session_busy(session_id):
            self._put(row)

    def stopped_watching(self, session_id: str) -> None:
        if self._watchers.pop(session_id, None) is not None:
            self._drop(_watch_key(session_id))

    # -- what the bus cannot tell: runs of other processes, tree costs (see ledger_sync) -------------

    def elsewhere(self, run: RunRecord, *, parent_session_id: str | None, running_for: float | None,
                  idle_for: float | None = None) -> None:
        """Show (or update) a run that another yeetui process executes, from its stored record: status and
        cost as stored, `running_for` seconds of elapsed time so far, `idle_for` seconds since it last got
        somewhere (`Store.last_progress`). A final status ends the row as any ending does; a run never shown
        is not brought up just to end."""
        row = self._rows.get(run.id)
        now = self.clock()
        if idle_for is not None:
            self._progress[run.id] = now - idle_for
        if row is None:
            if run.status.is_final or run.id in self._gone:
                return
            started = now - running_for if run.status == RunStatus.RUNNING and running_for is not None else None
            self._put(LedgerRow(
                run_id=run.id, session_id=run.session_id, parent_session_id=parent_session_id,
                label=run.label or run.profile, profile=run.profile, model=short_model(run.model or ""),
                status=run.status, registered=now, started=started, cost=run.cost, tokens=run.usage.total_tokens,
                activity=_where_elsewhere(run), elsewhere=run.pid, stall_after=self.stall_after,
                progressed=self._progress.get(run.id, now), clock=self.clock))
            return
        if row.is_final:
            return
        changes: dict[str, Any] = {"status": run.status, "cost": run.cost, "tokens": run.usage.total_tokens}
        if run.status == RunStatus.RUNNING and row.started is None:
            changes["started"] = now
        if not run.status.is_final and run.pid != row.elsewhere:  # claimed by another process (a warm worker)
            changes["elsewhere"] = run.pid
            changes["activity"] = _where_elsewhere(run)
        if run.status.is_final:
            changes["ended"] = now
            changes["activity"] = (run.error or "")[:80]
            self._schedule_prune()
        self._put(replace(row, **changes))

    def set_tree_cost(self, run_id: str, cost: float | None) -> None:
        """What the row's session and its subagents cost in all (None: no subagents, nothing to add)."""
        row = self._rows.get(run_id)
        if row is not None and row.tree_cost != cost:
            self._put(replace(row, tree_cost=cost))

    # -- lifecycle ----------------------------------------------------------------------------------

    def prune(self) -> None:
        """Remove finished rows whose linger is over."""
        now = self.clock()
        for key, row in list(self._rows.items()):
            if row.ended is not None and now - row.ended >= self.linger:
                self._drop(key)

    def close(self) -> None:
        """Stop reacting to events and cancel pending removals."""
        self._closed = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    # -- events -------------------------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if self._closed:
            return
        if isinstance(event, _PROGRESS) and event.run_id in self._rows:
            self._progress[event.run_id] = self.clock()
        if isinstance(event, ev.WatcherChanged):
            self._on_watcher(event)
        elif isinstance(event, ev.RunRegistered):
            self._on_registered(event)
        elif isinstance(event, ev.RunStatusChanged):
            self._on_status(event)
        elif isinstance(event, ev.ToolCallStarted):
            self._set(event.run_id, activity=event.activity or f"calling {event.name}")
        elif isinstance(event, ev.PermissionRequested):
            self._set(event.run_id, activity=_PERMISSION)
        elif isinstance(event, (ev.TextDelta, ev.ThinkingDelta)):
            # Deltas arrive hundreds of times a second across runs; most change nothing, so settle those
            # without building a row or pruning.
            activity = "answering" if isinstance(event, ev.TextDelta) else "thinking"
            row = self._rows.get(event.run_id)
            if row is None or row.is_final or row.activity == activity:
                return
            self._set(event.run_id, activity=activity)
        elif isinstance(event, ev.UsageUpdated):
            self._set(event.run_id, cost=event.cost, tokens=event.usage.total_tokens)
        elif isinstance(event, ev.RunModelChanged):
            self._set(event.run_id, model=short_model(event.model))
        elif isinstance(event, ev.BudgetUpdated):
            row = self._rows.get(event.run_id)
            if row is None or row.budget == f"budget {event.against}":
                return
            self._set(event.run_id, budget=f"budget {event.against}")
        elif isinstance(event, (ev.ProviderRetrying, ev.RunProgress)):
            self._set(event.run_id, activity=event.text)
        else:
            return
        self.prune()

    def _on_registered(self, event: ev.RunRegistered) -> None:
        now = self.clock()
        self._gone.pop(event.run_id, None)
        old = self._rows.get(event.run_id)
        status = RunStatus(event.status)
        row = LedgerRow(
            run_id=event.run_id, session_id=event.session_id, parent_session_id=event.parent_session_id,
            label=event.label, profile=event.profile, model=short_model(event.model), status=status,
            registered=old.registered if old else now, started=now if status == RunStatus.RUNNING else None,
            cost=old.cost if old else (0.0 if price_for(event.model) is not None else None),
            activity="queued" if status == RunStatus.QUEUED else "",
            progressed=now, stall_after=self.stall_after, clock=self.clock)
        self._progress[event.run_id] = now
        if event.session_id in self._watchers:
            self._drop(_watch_key(event.session_id))
        self._put(row)

    def _on_status(self, event: ev.RunStatusChanged) -> None:
        status = RunStatus(event.status)
        row = self._rows.get(event.run_id)
        if row is None:
            if status.is_final or event.run_id in self._gone:
                return
            row = LedgerRow(run_id=event.run_id, session_id=event.session_id, parent_session_id=None,
                            label=event.run_id[:8], profile="", model="", status=status, registered=self.clock(),
                            cost=None, clock=self.clock)  # its model unknown, so is its cost
        now = self.clock()
        changes: dict[str, Any] = {"status": status}
        if status == RunStatus.QUEUED:
            changes["activity"] = event.reason or "queued"  # a hold on its provider says so
        elif status == RunStatus.RUNNING:
            if row.started is None:
                changes["started"] = now
            if row.status == RunStatus.WAITING_PERMISSION or row.activity == _PERMISSION:
                changes["activity"] = self._paused.pop(event.run_id, "")
            elif row.activity == "queued" or row.activity.startswith("held:"):
                changes["activity"] = ""
        elif status == RunStatus.WAITING_PERMISSION:
            if row.activity != _PERMISSION:
                self._paused[event.run_id] = row.activity
            changes["activity"] = _PERMISSION
        elif status.is_final:
            self._paused.pop(event.run_id, None)
            changes["ended"] = now
            reason = event.reason if event.reason and event.reason != status.value else ""
            changes["activity"] = reason[:80]
            if row.session_id in self._watchers:  # a watcher's run ended: back to `watching` at once
                self._drop(event.run_id)
                self._put(self._watchers[row.session_id])
                return
            self._schedule_prune()
        self._put(replace(row, **changes))

    def _on_watcher(self, event: Any) -> None:
        session_id = getattr(event, "session_id", None)
        if not session_id:
            return
        active = getattr(event, "watching", None)
        if active is None:
            active = str(getattr(event, "status", getattr(event, "state", ""))) in (WATCHING, "started", "active")
        if active:
            self.watching(session_id, label=getattr(event, "label", "") or session_id[:8],
                          profile=getattr(event, "profile", "") or "", model=getattr(event, "model", "") or "",
                          parent_session_id=getattr(event, "parent_session_id", None)
                          or getattr(event, "watched_session_id", None))
        else:
            self.stopped_watching(session_id)

    # -- changing rows ------------------------------------------------------------------------------

    def _set(self, run_id: str, **changes: Any) -> None:
        row = self._rows.get(run_id)
        if row is None or row.is_final:
            return
        if changes.get("activity") == _PERMISSION and row.activity != _PERMISSION:
            self._paused[run_id] = row.activity
        self._put(replace(row, **changes))

    def _put(self, row: LedgerRow) -> None:
        if self._rows.get(row.run_id) == row:
            return  # nothing changed: nothing to publish
        self._rows[row.run_id] = row
        self.bus.publish(ev.LedgerChanged(row.run_id, row))

    def _drop(self, key: str) -> None:
        self._progress.pop(key, None)
        if self._rows.pop(key, None) is None:
            return
        if not key.startswith("watch:"):
            self._gone[key] = None
            while len(self._gone) > 1000:
                del self._gone[next(iter(self._gone))]
        self.bus.publish(ev.LedgerChanged(key, None))

    def _session_busy(self, session_id: str) -> bool:
        return any(r.session_id == session_id and r.status != WATCHING for r in self._rows.values())

    def _schedule_prune(self) -> None:
        """With a running loop, remove the row when its linger is over even if no other event comes."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # driven synchronously (tests): callers prune explicitly
        self._timers = [t for t in self._timers if not t.cancelled() and t.when() > loop.time()]
        self._timers.append(loop.call_later(self.linger + 0.01, self.prune))


def _watch_key(session_id: str) -> str:
    return f"watch:{session_id}"


def _where_elsewhere(run: RunRecord) -> str:
    """A run of another process, for its row: `in its tmux pane` (a pane child: the pane is what the user
    watches, alt+t), else `in process 4242`."""
    options = run.options or {}
    if options.get("mode") in ("tmux", "terminal") or isinstance(options.get("pane"), dict):
        return "in its tmux pane" if options.get("mode") != "terminal" else "in its terminal window"
    return f"in process {run.pid}"
