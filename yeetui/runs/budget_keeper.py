"""Keeping budgets: watching what each budget-owning run's tree spends, warning at 80 %, and halting the whole
tree at a limit (see `yeetui.runs.budget` for what a budget is).

Every run this process executes is entered here with the task that runs it (`RunLauncher.execute`), so a halt
can stop it at once, mid-request. A budget's owner is checked by the process that runs it: after each model
request of a run in this process, and every `TICK` seconds while it lives (its wall-clock limit, and what its
descendants in other processes — pane children, detached workers — record in the store per request).

A halt stops every live run below the owner — here by cancelling its task with the halt message, elsewhere
through the store (`run_commands`, kind `halt`, taken by that process) — waits for them to end, then stops the
owner. Each ends `budget_exhausted` with what it had produced; the owner's output also says which limit was hit,
what was spent, and what every run of its tree produced. The owner's requester gets an inbox item at 80 % and
one for the halt: the keeper's own, or — for an owner whose ending is delivered to the requester anyway (a
subagent's, a detached run's completion) — that ending, so that one halt is one item.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from yeetui.bus import Bus
from yeetui.errors import YeetuiError
from yeetui.events import BudgetUpdated, InboxItemAdded, Notice, RunStatus, RunStatusChanged
from yeetui.runs.budget import (
    HALT_REASON,
    WARN_AT,
    Breach,
    Budget,
    Spend,
    against,
    breach,
    halt_message,
    used_share,
)
from yeetui.runs.spec import RunOptions, RunResult
from yeetui.store import RunRecord, Store
from yeetui.store.payloads import BudgetAlert
from yeetui.text import cap, clip, one_line

log = logging.getLogger(__name__)

TICK = 0.25
"""Seconds between looks at each owner's tree while it lives (what runs of other processes spent is read
from the store: one summing query per owner)."""
HALT_WAIT = 15.0
"""Seconds a halt waits for the runs below the owner to end before it stops the owner anyway."""
OUTPUT_EXCERPT = 600
"""Characters of each run's output quoted in the owner's halt report."""
_LIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_PERMISSION)


@dataclass
class Halt:
    """Why a run was halted."""

    found: Breach
    owner_run_id: str
    owner_label: str
    report: str = ""
    """For the owner: what was spent and what each run of its tree produced."""
    details: dict[str, object] = field(default_factory=dict)
    reported: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the report is written (the runs below the owner have ended)."""


@dataclass
class _Entry:
    session_id: str
    label: str
    task: asyncio.Task[object] | None
    budget: Budget | None
    requester: str | None
    """Where the owner's inbox items go: its parent's session, or its own for a top-level run."""
    warned: bool = False
    halting: bool = False


class BudgetKeeper:
    def __init__(self, store: Store, bus: Bus, *, tick: float = TICK, halt_wait: float = HALT_WAIT) -> None:
        self.store, self.bus = store, bus
        self.tick, self.halt_wait = tick, halt_wait
        self._runs: dict[str, _Entry] = {}
        self._halts: dict[str, Halt] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._halting: set[asyncio.Task[None]] = set()

    # -- the runs of this process ----------------------------------------------------------------------

    def enter(self, run_id: str, session_id: str, *, label: str, task: asyncio.Task[object] | None,
              budget: Budget | None, parent_session_id: str | None) -> None:
        """A run this process executes begins (`task` runs it; None: nothing here can stop it mid-way)."""
        self._runs[run_id] = _Entry(session_id, label, task, budget if budget and budget.is_set else None,
                                    parent_session_id or session_id)
        if budget is not None and budget.is_set and (self._ticker is None or self._ticker.done()):
            self._ticker = asyncio.create_task(self._tick(), name="yeetui budgets")

    def leave(self, run_id: str) -> None:
        self._runs.pop(run_id, None)

    def halt_of(self, run_id: str) -> Halt | None:
        """Why `run_id` was halted, if it was."""
        return self._halts.get(run_id)

    def cost_limit_in(self, session_id: str) -> tuple[float, str] | None:
        """The dollar limit of a run of this process in session `session_id`, and its label, if one has one."""
        for entry in self._runs.values():
            if entry.session_id == session_id and entry.budget is not None and entry.budget.max_cost_usd is not None:
                return entry.budget.max_cost_usd, entry.label
        return None

    async def after_request(self, run_id: str) -> None:
        """A run of this process made a model request: look at every budget of this process it counts
        against (its own, and its ancestors' that run here)."""
        entry = self._runs.get(run_id)
        if entry is None:
            return
        owners = [run_id] if entry.budget is not None else []
        session = await self.store.get_session(entry.session_id)
        while session is not None and session.parent_id is not None:
            for other_id, other in self._runs.items():
                if other.session_id == session.parent_id and other.budget is not None:
                    owners.append(other_id)
            session = await self.store.get_session(session.parent_id)
        for owner in owners:
            if (halting := await self._check(owner, between_requests=True)) is not None:
                # Not one more request: the run that crossed the limit waits here until the halt stops it.
                await asyncio.wait({halting})

    def halt_here(self, run_id: str, message: str) -> None:
        """Another process halted the tree `run_id` belongs to (a `halt` run command): stop it now."""
        entry = self._runs.get(run_id)
        if entry is None or run_id in self._halts:
            return
        self._halts[run_id] = Halt(Breach("elsewhere", message.removeprefix(f"{HALT_REASON}: ")),
                                   owner_run_id="elsewhere", owner_label="its tree's owner")
        if entry.task is not None and not entry.task.done():
            entry.task.cancel(message)

    async def close(self) -> None:
        for task in [self._ticker, *self._halting]:
            if task is not None:
                task.cancel()
        await asyncio.gather(*(t for t in [self._ticker, *self._halting] if t is not None), return_exceptions=True)

    # -- checking ----------------------------------------------------------------------------------------

    async def _tick(self) -> None:
        while owners := [r for r, e in self._runs.items() if e.budget is not None and not e.halting]:
            for run_id in owners:
                try:
                    await self._check(run_id)
                except YeetuiError:
                    log.exception("could not check the budget of run %s", run_id)
            await asyncio.sleep(self.tick)

    async def spend(self, run_id: str) -> Spend | None:
        """What the tree of `run_id` (a run of this process) has spent so far."""
        entry = self._runs.get(run_id)
        run = await self.store.get_run(run_id)
        if entry is None or run is None:
            return None
        totals = await self.store.tree_totals(entry.session_id)
        return Spend(tokens=totals.tokens, cost=totals.cost, unpriced_tokens=totals.unpriced_tokens,
                     turns=totals.turns, minutes=_minutes_since(run), runs=totals.runs)

    async def _check(self, run_id: str, *, between_requests: bool = False) -> asyncio.Task[None] | None:
        """Look at the budget of `run_id`; the halt it started, if its tree reached a limit (`between_requests`:
        a run of the tree has just finished a request, none of this process's is under way because of it)."""
        entry = self._runs.get(run_id)
        if entry is None or entry.budget is None or entry.halting:
            return None
        spent = await self.spend(run_id)
        if spent is None:
            return None
        budget = entry.budget
        share = used_share(budget, spent)
        self.bus.publish(BudgetUpdated(run_id, entry.session_id, against(budget, spent), share))
        found = breach(budget, spent, between_requests=between_requests)
        if found is not None:
            entry.halting = True
            task = asyncio.create_task(self._halt(run_id, entry, found, spent), name=f"halt {entry.label}")
            self._halting.add(task)
            task.add_done_callback(self._halting.discard)
            return task
        if WARN_AT <= share < 1.0 and not entry.warned:  # at the limit, the halt's item tells of it: one, not two
            entry.warned = True
            await self._inbox(entry, run_id, "budget", f"{entry.label} has spent {share:.0%} of its budget",
                              f"{against(budget, spent)} — {spent.text()}", dedupe=f"budget-warning:{run_id}")
        return None

    # -- halting ----------------------------------------------------------------------------------------

    async def _halt(self, owner_id: str, owner: _Entry, found: Breach, spent: Spend) -> None:
        message = halt_message(found)
        self.bus.publish(Notice("warning", f"{owner.label} reached its budget ({found.text}): halting it and "
                                f"every agent below it.", owner.session_id))
        # Everything stops at once — the owner too, so a child's halted answer does not start it on another
        # request — and the owner's ending waits for the report of what its tree produced.
        halt = self._halts[owner_id] = Halt(found, owner_id, owner.label)
        try:
            below = await self._live_below(owner.session_id)
            for run in below:
                await self._stop(run, Halt(found, owner_id, owner.label), message)
            if owner.task is not None and not owner.task.done():
                owner.task.cancel(message)
            await self._wait_ended([r.id for r in below])
            halt.report, halt.details = await self._report(owner, found)
            if not await self._ending_delivered(owner_id):
                await self._inbox(owner, owner_id, "budget", f"{owner.label} halted: budget exhausted",
                                  f"{found.text} — {spent.text()}", dedupe=f"budget-halt:{owner_id}")
        except YeetuiError:
            log.exception("halting the tree of %s failed", owner.label)
        finally:
            halt.reported.set()

    async def _ending_delivered(self, run_id: str) -> bool:
        """Whether the run's ending reaches the owner's requester as an inbox item of its own (a subagent's
        completion for its parent, a detached run's in its own inbox): that item then tells of the halt."""
        options = RunOptions.of(await self.store.get_run(run_id))
        return bool(options.parent_session_id and options.deliver and not options.watcher) or (
            options.detached and not options.parent_session_id)

    async def _live_below(self, session_id: str) -> list[RunRecord]:
        runs: list[RunRecord] = []
        for below in await self.store.session_tree_ids(session_id):
            if below != session_id:
                runs += [r for r in await self.store.list_runs(session_id=below, statuses=_LIVE, limit=100)]
        return runs

    async def _stop(self, run: RunRecord, halt: Halt, message: str) -> None:
        entry = self._runs.get(run.id)
        if entry is not None:
            self._halts[run.id] = halt
            if entry.task is not None and not entry.task.done():
                entry.task.cancel(message)
            return
        await self.store.run_commands.post(run.id, "halt", message, sender="budget")

    async def _wait_ended(self, run_ids: list[str]) -> None:
        """Until each run has ended and recorded how (a run of this process: until it has left; one of another
        process: until it says `budget_exhausted`, or a moment after it ended otherwise)."""
        deadline = time.monotonic() + self.halt_wait
        ended_at: dict[str, float] = {}
        while run_ids and time.monotonic() < deadline:
            waiting = []
            for run_id in run_ids:
                run = await self.store.get_run(run_id)
                if run is None or (run.status.is_final and run_id not in self._runs and (
                        run.status == RunStatus.BUDGET_EXHAUSTED or time.monotonic() - ended_at.setdefault(
                            run_id, time.monotonic()) > 2.0)):
                    continue
                waiting.append(run_id)
            run_ids = waiting
            if run_ids:
                await asyncio.sleep(0.1)

    async def _report(self, owner: _Entry, found: Breach) -> tuple[str, dict[str, object]]:
        """What the owner's result says: the limit, the spend, and each run of the tree with its output."""
        lines = [f"Budget exhausted: {found.text}. Every agent of this tree was halted."]
        runs: list[dict[str, object]] = []
        for below in await self.store.session_tree_ids(owner.session_id):
            if below == owner.session_id:
                continue
            for run in await self.store.list_runs(session_id=below, limit=100):
                output = str((run.result or {}).get("output") or "") if isinstance(run.result, dict) else ""
                output = output or await self._last_said(run.session_id, run.id)  # halted before it could say it
                runs.append({"run_id": run.id, "label": run.label or run.profile, "status": run.status.value,
                             "output": cap(output, 4000), "cost": run.cost, "tokens": run.usage.total_tokens})
                said = clip(one_line(output), OUTPUT_EXCERPT) if output else "(nothing yet)"
                lines.append(f"- {run.label or run.profile} ({_words(run.status)}): {said}")
        return "\n".join(lines), {"limit": found.limit, "breach": found.text, "runs": runs}

    async def record(self, run_id: str, session_id: str, halt: Halt) -> RunResult:
        """The end of a halted run of this process, as stored: `budget_exhausted`, with what it had said so far
        (and, for the owner, the halt report) — whatever engine ran it."""
        if halt.owner_run_id == run_id:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(halt.reported.wait(), self.halt_wait + 5)
        run = await self.store.get_run(run_id)
        said = ""
        if run is not None and isinstance(run.result, dict):
            said = str(run.result.get("output") or "")
        if not said:
            said = await self._last_said(session_id, run_id)
        output = f"{said}\n\n{halt.report}".strip() if halt.owner_run_id == run_id else said
        error = (f"{HALT_REASON}: {halt.found.text}" if halt.owner_run_id == run_id
                 else f"halted: the budget of {halt.owner_label} is exhausted ({halt.found.text})")
        owner = halt.owner_run_id == run_id
        budget_data: dict[str, object] = dict(halt.details) if owner else {"halted_by": halt.owner_run_id}
        if owner:
            entry = self._runs.get(run_id)
            if entry is not None and entry.budget is not None:
                budget_data["limits"] = entry.budget.to_json()
            if (spent := await self.spend(run_id)) is not None:
                budget_data["spent"] = spent.to_json()
        result_data = {**(run.result if run is not None and isinstance(run.result, dict) else {}),
                       "output": output, "budget": budget_data}
        await self.store.update_run(run_id, status=RunStatus.BUDGET_EXHAUSTED, error=error, result=result_data)
        self.bus.publish(RunStatusChanged(run_id, session_id, RunStatus.BUDGET_EXHAUSTED, error))
        result = RunResult(run_id=run_id, session_id=session_id, status=RunStatus.BUDGET_EXHAUSTED, output=output,
                           error=error, result=result_data)
        if run is not None:
            result.usage, result.cost = run.usage, run.cost
        return result

    async def _last_said(self, session_id: str, run_id: str) -> str:
        for stored in reversed(await self.store.messages(session_id)):
            if stored.run_id == run_id and stored.message.role == "assistant" and stored.message.text:
                return stored.message.text
        return ""

    async def _inbox(self, entry: _Entry, run_id: str, kind: str, title: str, body: str, *, dedupe: str) -> None:
        recipient = entry.requester or entry.session_id
        data = BudgetAlert(label=entry.label, run_id=run_id, session_id=entry.session_id).to_data()
        with contextlib.suppress(YeetuiError):
            item, created = await self.store.inbox.put(session_id=recipient, run_id=run_id, kind=kind, title=title,
                                                       body=body, data=data, dedupe_key=dedupe)
            if created:
                self.bus.publish(InboxItemAdded(item.id, recipient, run_id, kind, title, body, data))


def _words(status: RunStatus) -> str:
    """A run status as the halt report says it: `budget exhausted`, `completed`, …"""
    return status.value.replace("_", " ")


def _minutes_since(run: RunRecord) -> float:
    if run.started_at is None:
        return 0.0
    started = run.started_at if run.started_at.tzinfo else run.started_at.replace(tzinfo=UTC)
    return max((datetime.now(UTC) - started).total_seconds(), 0.0) / 60

