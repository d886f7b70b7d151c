"""AgentSpawner: hands work to subagents — child session, run record, limits, execution, delivery.

`spawn()` resolves the profile, checks the limits (depth, allowlist: yeetui.subagents.limits; the children per
parent are checked when the run is written), creates the child session (`agent:<profile>:subagent:<id>`) and its
run record through the launcher, and starts it. Runs wait for a run slot (`yeetui.runs.slots`, shared by every
yeetui process), visibly `queued`; the queue wait counts against the timeout. Every run, however it ends, is
delivered to its requester exactly once (yeetui.subagents.endings, through yeetui.subagents.inbox). Cancelling a
run cancels its subtree: the spawner registers that hook with the launcher.

It delegates what is not about its own runs: a child's own checkout to `WorktreeIsolation`
(yeetui.subagents.isolation), children in tmux panes to `PaneRuns` (yeetui.subagents.pane_runs), and commands
between processes (cancel and steer of a run another process executes; taking those for this process's runs)
to `RunCommands` (yeetui.subagents.run_commands). What a follow-up may be is yeetui.subagents.follow_up's; the
waits around a child run (a provider's hold, its outcome, a parent's lent slot) are yeetui.subagents.waiting's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile, ProfileSet, RunMode
from yeetui.errors import ChildLimitReached, ContextResolutionError, YeetuiError
from yeetui.events import Notice, RunRegistered, RunStatus, RunStatusChanged
from yeetui.messages import Message
from yeetui.runs.budget import BudgetError
from yeetui.runs.launcher import RunLauncher
from yeetui.runs.slots import RunSlots
from yeetui.runs.spawn_context import resolve_context
from yeetui.runs.spec import RunOptions, RunResult, cancel_reason
from yeetui.store import Store
from yeetui.store.coordination import RunCommand
from yeetui.store.records import RunRecord, SessionRecord
from yeetui.subagents.elsewhere import LIVE, RunsElsewhere, process_running
from yeetui.subagents.endings import deliver_ending
from yeetui.subagents.follow_up import follow_up_request
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.isolation import WorktreeIsolation
from yeetui.subagents.limits import check_limits
from yeetui.subagents.pane_runs import PaneRuns
from yeetui.subagents.panes import Pane, PaneHost
from yeetui.subagents.run_commands import RunCommands
from yeetui.subagents.spawn_request import SpawnHandle, SpawnRefused, SpawnRequest
from yeetui.subagents.waiting import outcome, wait_lending_slot, wait_out_hold
from yeetui.text import seconds_text
from yeetui.worktrees.manager import Worktrees

__all__ = ["AgentSpawner", "SpawnHandle", "SpawnRefused", "SpawnRequest"]

WRAP_UP = ("[yeetui] You are asked to stop. Wrap up now: do not start new work; call `complete` with what you "
           "have so far (status `partial`) within the next turn.")


@dataclass
class _Live:
    run_id: str
    session_id: str
    parent_session_id: str | None
    label: str
    task: asyncio.Task[RunResult] | None = None
    began: bool = False
    """Its task has taken its first step (a task cancelled before that never runs its own cleanup)."""
    started: bool = False
    abort_timer: asyncio.TimerHandle | None = None
    mailbox: list[Message] = field(default_factory=list)
    worktree: dict[str, Any] | None = None
    answered_here: bool = False
    """A blocking spawn of this process waits for it: its ending goes back as that spawn's tool result and is
    marked delivered here. A run whose record another process made (a pane's worker runs it, or a resume) never
    is: its ending is left for its parent's side to deliver."""


class AgentSpawner:
    """Starts child runs through the launcher and delivers their endings through `delivery`; registers with
    the launcher to stop a cancelled run's children."""

    def __init__(self, launcher: RunLauncher, delivery: Delivery, *, store: Store, bus: Bus, slots: RunSlots,
                 profiles: ProfileSet, project_dir: Path, isolation: WorktreeIsolation, pane_runs: PaneRuns,
                 commands: RunCommands, configured_mode: RunMode | None = None, max_children: int = 5,
                 default_timeout: float = 300.0, max_timeout: float = 1800.0, approve_asks: bool = False,
                 stand_in: int | None = None) -> None:
        self.launcher = launcher
        self.delivery = delivery
        self.store = store
        self.bus = bus
        self.slots = slots
        self.profiles = profiles
        self.project_dir = project_dir
        self.isolation = isolation
        """A child's own worktree (or clone), when its profile asks for one."""
        self.pane_runs = pane_runs
        """Children in tmux panes: opened, followed, found again."""
        self.commands = commands
        """Cancel and steer between processes, through the store."""
        self.configured_mode = configured_mode
        """The config's `subagent_mode`: where a child runs when neither the spawn nor its profile says."""
        self.approve_asks: Final = approve_asks
        """Children in panes may run tool calls that would ask (`yeetui run --yes`): their worker has nobody
        to ask, so otherwise each such call is refused with a message saying which rule to add."""
        self.stand_in: Final = stand_in
        """In a worker forked by the warm server (yeetui.system.warm): the pid of its stand-in, the process that
        asked for it (which passes each signal on to it and ends as it ends) and that its launcher recorded as the
        run's. None elsewhere."""
        self.max_children = max_children
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self._live: dict[str, _Live] = {}
        self._endings: set[asyncio.Future[None]] = set()
        """Endings of runs cancelled before they began, still being written and delivered."""
        self._by_parent: defaultdict[str, set[str]] = defaultdict(set)
        self._wrapping_elsewhere: set[str] = set()
        """Runs another process executes that this one asked to wrap up (a second cancel stops them now)."""
        launcher.on_cancel_children(self.cancel_children)

    @property
    def worktrees(self) -> Worktrees | None:
        """The `Worktrees` children get their own checkout from; None: every child works in the parent's."""
        return self.isolation.worktrees

    @property
    def panes(self) -> PaneHost | None:
        """Where `tmux`/`terminal` mode children run; None: they run in-process (with a notice)."""
        return self.pane_runs.host

    @property
    def elsewhere(self) -> RunsElsewhere:
        """The runs this process started in panes, followed until they end."""
        return self.pane_runs.elsewhere

    # -- spawning ----------------------------------------------------------------------------------

    async def spawn(self, req: SpawnRequest) -> SpawnHandle:
        launcher = self.launcher
        profile = self._profile(req.profile)
        parent = await self.store.get_session(req.parent_session_id) if req.parent_session_id else None
        if req.parent_session_id and parent is None:
            raise SpawnRefused(f"Parent session {req.parent_session_id} does not exist.")
        depth = parent.depth + 1 if parent else 0
        check_limits(req, profile, parent, depth, owner_of=self._profile)
        timeout = min(req.timeout or profile.limits.timeout or self.default_timeout, self.max_timeout)
        # The child's tiers follow the model the user chose for its tree (the window's /model, --model).
        within = await launcher.models.tree_model(parent.id if parent else None)
        model = launcher.models.resolve(profile, req.model, within=within)
        try:  # a dollar limit over it that its model's spend could not be counted against: refused, said why
            await launcher.specs.refuse_uncountable(profile, model, budget=req.budget,
                                              parent_session_id=req.parent_session_id)
        except BudgetError as exc:
            raise SpawnRefused(str(exc)) from None
        try:
            prompt = await resolve_context(req.session_context, store=self.store,
                                           parent_session_id=req.parent_session_id, project_root=self.project_dir,
                                           task=req.prompt)
        except ContextResolutionError as exc:
            raise SpawnRefused(str(exc)) from None
        created = False
        label: str | None = None
        if req.session_id is not None:
            existing = await self.store.get_session(req.session_id)
            if existing is None:
                raise SpawnRefused(f"Session {req.session_id} does not exist.")
            earlier = await self.store.list_runs(session_id=existing.id, limit=1)
            session = existing
            label = earlier[0].label if earlier and earlier[0].label else None
        else:
            session = await launcher.new_session(profile, title=req.label or req.prompt, model=model,
                                                 parent_id=parent.id if parent else None)
            created = True
        prompt += req.prompt_suffix
        mode = await self._mode(req, profile, session.id)
        options = RunOptions(timeout=timeout, blocking=req.blocking, cleanup=req.cleanup, mode=mode,
                             session_context=req.session_context, requested_by=req.requested_by,
                             thinking=req.thinking, parent_session_id=req.parent_session_id, deliver=req.deliver,
                             watcher=req.watcher, approve=self.approve_asks and mode != "in_process",
                             ask_here=self.pane_runs.asks_answered_here and mode != "in_process",
                             budget=req.budget.to_json() if req.budget is not None else None)
        while True:
            try:
                run = await launcher.create_run(session, profile, model=model, prompt=prompt, label=label,
                                                options=options, parent_run_id=req.parent_run_id,
                                                max_children=None if req.watcher else self.max_children)
                break
            except ChildLimitReached as exc:
                if await self.pane_runs.siblings_opened(req.parent_session_id):
                    continue  # a sibling that was opening its pane held a place it gives back if tmux refused
                if created:
                    await self.store.delete_session(session.id)
                raise SpawnRefused(str(exc)) from None
        label = run.label or profile.name
        if created:
            session = await self.isolation.isolate(session, profile, req, label, parent)
        if mode in ("tmux", "terminal"):
            return await self._launch_in_pane(run.id, session, profile, timeout, req, label,
                                              show=mode == "terminal")
        return await self._launch(run.id, session, profile, prompt, model, timeout, req, label,
                                  answered_here=req.blocking)

    async def _mode(self, req: SpawnRequest, profile: Profile, session_id: str) -> RunMode:
        """Where the run executes: the spawn's `mode`, else the profile's, else the config's default; a pane
        mode tmux cannot serve here falls back to in-process, saying why."""
        configured = self.configured_mode
        chosen = profile.mode if profile.mode != "in_process" else None
        mode: RunMode = req.mode or chosen or configured or "in_process"
        if mode == "headless":
            mode = "in_process"  # a spawned child always reports to a live parent; `agents start` detaches
        if mode in ("tmux", "terminal"):
            problem = await self.pane_runs.problem()
            if problem is not None:
                self.bus.publish(Notice("warning", f"{profile.name}: cannot run in a tmux pane ({problem}); it "
                                        "runs in-process instead.", session_id))
                return "in_process"
        return mode

    async def _launch_in_pane(self, run_id: str, session: SessionRecord, profile: Profile, timeout: float,
                              req: SpawnRequest, label: str, *, show: bool = False) -> SpawnHandle:
        """Start the run's worker in a tmux window (see `PaneRuns.start`); a blocking spawn waits for its ending
        in the store (lending the parent's run slot meanwhile, as for an in-process child) and, the parent's
        side, marks it delivered as it returns it."""
        await self.pane_runs.start(run_id, label, parent_session_id=req.parent_session_id, session_id=session.id,
                                   show=show)
        handle = SpawnHandle(run_id, session.id, session.key, label, profile.name)
        if req.blocking:
            ending = self.pane_runs.ended(run_id, timeout + 30.0, inline=True)  # marked delivered here
            handle.result = await wait_lending_slot(ending, req.parent_run_id, run_id, session.id, slots=self.slots,
                                                  store=self.store)
            handle.worktree = await self.isolation.worktree_info(session.id)
        return handle

    async def adopt_elsewhere(self) -> None:
        """At start: follow the pane runs that outlived the yeetui that started them (see RunsElsewhere)."""
        await self.pane_runs.adopt()

    async def pane_of(self, run_id: str) -> Pane | None:
        """The tmux window a run lives in, while its pane is there."""
        return await self.pane_runs.pane_of(run_id)

    async def _launch(self, run_id: str, session: SessionRecord, profile: Profile, prompt: str | None, model: str,
                      timeout: float, req: SpawnRequest, label: str, *, answered_here: bool = False) -> SpawnHandle:
        live = _Live(run_id, session.id, req.parent_session_id, label, answered_here=answered_here)
        self._live[run_id] = live
        self.commands.keep_taking(self.live_runs, self._act_on)
        if req.parent_session_id and not req.watcher:
            self._by_parent[req.parent_session_id].add(run_id)
        self.bus.publish(RunRegistered(run_id, session.id, req.parent_session_id, profile.name, label, model,
                                       RunStatus.QUEUED))
        self.bus.publish(RunStatusChanged(run_id, session.id, RunStatus.QUEUED))
        live.task = asyncio.create_task(self._execute(live, session, profile, prompt, model, timeout, req),
                                        name=f"yeetui run {label}")
        live.task.add_done_callback(lambda task: self._never_began(live, req, task))
        handle = SpawnHandle(run_id, session.id, session.key, label, profile.name)
        if req.blocking:
            handle.result = await wait_lending_slot(live.task, req.parent_run_id, run_id, session.id, slots=self.slots,
                                                  store=self.store)
            handle.worktree = live.worktree
        return handle

    async def start_existing(self, run_id: str, *, blocking: bool = True, resume: bool = False) -> SpawnHandle:
        """Execute a run record made earlier — by `yeetui agents start` for a detached process, or an
        interrupted run the user resumes (`resume=True`: its conversation continues, nothing re-sent). A run
        that never began — it waited for a run slot when its process died, so its task never reached its
        transcript — starts afresh with its task, resumed or not."""
        run = await self.store.resolve_run(run_id)
        if run.status not in (RunStatus.QUEUED, RunStatus.INTERRUPTED, RunStatus.WAITING_USER) and not (
                resume and run.status.is_final):
            raise SpawnRefused(f"Run {run.id[:12]} is {run.status.value}; only queued or interrupted runs start.")
        if self.is_live(run.id):
            raise SpawnRefused(f"Run {run.id[:12]} is already running here.")
        session = await self.store.get_session(run.session_id)
        if session is None:
            raise SpawnRefused(f"The session of run {run.id[:12]} is gone.")
        profile = self._profile(run.profile)
        opts = RunOptions.of(run)
        req = SpawnRequest(profile=run.profile, prompt=run.prompt, parent_session_id=opts.parent_session_id,
                           parent_run_id=run.parent_run_id, blocking=blocking, thinking=opts.thinking,
                           cleanup=opts.cleanup, deliver=opts.deliver, requested_by=opts.requested_by,
                           watcher=opts.watcher)
        if resume:
            # A new ending to deliver; and nobody waits inline for it any more (a blocking parent's tool call
            # ended with the process that ran it), so it is announced.
            opts = opts.but(attempt=opts.attempt + 1, blocking=False)
        claimed = await self.store.claim_run(run.id, status=run.status, pid=run.pid, new_pid=os.getpid(),
                                             options=opts.to_json())
        if claimed is None and (mine := self.stand_in) is not None and (now := await self.store.get_run(run.id)) \
                and now.pid == mine and now.status == run.status:
            # What changed meanwhile was our launcher recording the process it started — our stand-in (a worker
            # forked warm is quick enough to read the run before that record lands): claim it as it is now.
            claimed = await self.store.claim_run(run.id, status=now.status, pid=mine, new_pid=os.getpid(),
                                                 options=opts.to_json())
        if claimed is None:
            raise SpawnRefused(f"Run {run.id[:12]} was started by another process meanwhile.")
        timeout = float(opts.timeout or profile.limits.timeout or self.default_timeout)
        has_prompt = (not resume and run.status == RunStatus.QUEUED) or (
            bool(run.prompt) and not await self.store.run_has_messages(run.id))
        return await self._launch(run.id, session, profile, run.prompt if has_prompt else None,
                                  run.model or self.launcher.models.resolve(profile), timeout, req,
                                  run.label or profile.name)

    async def follow_up(self, session_id: str, text: str, *,
                        requested_by: Literal["user", "agent"] = "user") -> SpawnHandle:
        """A message for a subagent whose run has ended: a new run in the same session, so the subagent has its
        whole conversation as context, with the same profile, model and parent; its ending is delivered to the
        parent like the first one (inbox item and announcement). Runs in this process, whatever mode the first
        run had. Refused (saying why) for a run still going, a watcher, or a checkout that is gone (see
        `follow_up_request`)."""
        return await self.spawn(await follow_up_request(self.store, session_id, text, requested_by=requested_by))

    def _profile(self, name: str) -> Profile:
        try:
            return self.profiles.get(name)
        except YeetuiError as exc:
            raise SpawnRefused(str(exc)) from None

    # -- running -----------------------------------------------------------------------------------

    async def _execute(self, live: _Live, session: SessionRecord, profile: Profile, prompt: str | None, model: str,
                       timeout: float, req: SpawnRequest) -> RunResult:
        live.began = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        result = RunResult(run_id=live.run_id, session_id=session.id, status=RunStatus.QUEUED)
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    await wait_out_hold(live.run_id, live.session_id, model, store=self.store, bus=self.bus)
                    await self.slots.acquire(live.run_id)
            except TimeoutError:
                result.status, result.error = RunStatus.TIMEOUT, f"timed out after {seconds_text(timeout)} while queued"
                await self.store.update_run(live.run_id, status=result.status, error=result.error)
                self.bus.publish(RunStatusChanged(live.run_id, session.id, result.status, result.error))
                return result
            try:
                live.started = True
                spec = await self.launcher.specs.build(session=session, profile=profile, prompt=prompt, model=model,
                                                      label=live.label, parent_session_id=live.parent_session_id,
                                                      run_id=live.run_id, thinking=req.thinking or None,
                                                      deadline=deadline)
                result = await self.launcher.execute(spec, live.run_id, mailbox=live.mailbox,
                                                     collect=lambda: self.commands.take([live.run_id],
                                                                                        self._act_on))
            finally:
                await asyncio.shield(self.slots.release(live.run_id))
            return result
        except asyncio.CancelledError as exc:
            result.status, result.error = RunStatus.CANCELLED, cancel_reason(exc)
            if not live.started:  # cancelled while queued: the runner never ran to say so
                await asyncio.shield(self._cancelled_in_queue(live, result))
            raise
        finally:
            await asyncio.shield(self._settle(live, result, req))

    async def _cancelled_in_queue(self, live: _Live, result: RunResult) -> None:
        await self.store.update_run(live.run_id, status=result.status, error=result.error)
        self.bus.publish(RunStatusChanged(live.run_id, live.session_id, result.status, result.error or ""))

    def _never_began(self, live: _Live, req: SpawnRequest, task: asyncio.Task[RunResult]) -> None:
        """A run cancelled before its task took a step ran none of `_execute`: end and deliver it here."""
        if live.began or not task.cancelled():
            return
        result = RunResult(run_id=live.run_id, session_id=live.session_id, status=RunStatus.CANCELLED,
                           error="cancelled")

        async def end() -> None:
            await self._cancelled_in_queue(live, result)
            await self._settle(live, result, req)

        self._endings.add(ending := asyncio.ensure_future(end()))
        ending.add_done_callback(self._endings.discard)

    async def _settle(self, live: _Live, result: RunResult, req: SpawnRequest) -> None:
        """After a run, however it ended: stop its subtree, deliver it, forget it, clean up."""
        self._live.pop(live.run_id, None)
        if live.parent_session_id:
            self._by_parent[live.parent_session_id].discard(live.run_id)
        if live.abort_timer:
            live.abort_timer.cancel()
        await self.cancel_children(live.session_id, graceful=False)
        # The parent is answered inline (a blocking spawn's tool result, marked delivered) only by a spawn that
        # waits for the run in this process — never by a pane's worker or a resume, which run a record another
        # process made: their ending is left for the parent's side to deliver (`RunsElsewhere.ended` takes it as
        # the waiting spawn's result; with that spawn's process gone, it is announced).
        run = await self.store.get_run(live.run_id)
        worktree = live.worktree = await self.isolation.hand_in(live.session_id, live.label, req.task)
        await deliver_ending(self.delivery, run, result, run_id=live.run_id, session_id=live.session_id,
                             parent_session_id=live.parent_session_id, label=live.label, deliver=req.deliver,
                             inline=live.answered_here, worktree=worktree)
        if req.cleanup == "delete":
            await self.store.delete_session(live.session_id)

    # -- controls ----------------------------------------------------------------------------------

    def is_live(self, run_id: str) -> bool:
        return run_id in self._live

    def live_runs(self, parent_session_id: str | None = None) -> list[str]:
        if parent_session_id is None:
            return list(self._live)
        return [r for r in self._by_parent.get(parent_session_id, ()) if r in self._live]

    async def running(self, parent_session_id: str | None = None) -> list[RunRecord]:
        """The subagent runs going on now (of `parent_session_id`, when given), oldest first: this process's own
        and those another yeetui process executes — children in tmux panes, detached `agents start` runs —
        as the shared store shows them, so each can be cancelled or steered from here."""
        runs = []
        for run in reversed(await self.store.list_runs(statuses=LIVE, limit=500)):
            if not run.options or not (self.is_live(run.id) or process_running(run.pid)):
                continue  # a conversation's own run, or one whose process is gone (recovery ends it)
            if parent_session_id is None or RunOptions.of(run).parent_session_id == parent_session_id:
                runs.append(run)
        return runs

    def label(self, run_id: str) -> str | None:
        """The label of a live run of this process."""
        live = self._live.get(run_id)
        return live.label if live is not None else None

    async def wait(self, run_id: str, timeout: float | None = None) -> RunResult | None:
        """Wait for a live run of this process to end, however it ends (cancelled: a result saying so); None
        when it is not live here. Cancelling the waiter leaves the run alone."""
        live = self._live.get(run_id)
        if live is None or live.task is None:
            return None
        async with asyncio.timeout(timeout):
            return await outcome(live.task, run_id, live.session_id, store=self.store)

    async def steer(self, run_id: str, text: str, *, sender: str = "parent") -> None:
        """Inject guidance: the child reads it at the start of its next turn. A run another yeetui process
        executes gets it through the store (`run_commands`)."""
        live = self._live.get(run_id)
        if live is None:
            await self.commands.post(run_id, "steer", text, sender=sender)
            return
        live.mailbox.append(Message.user(f"[Guidance from {sender}]\n{text}", steer=True))

    def wrapping_up(self, run_id: str) -> bool:
        """This process asked the run to wrap up (a graceful cancel) and it has not ended yet (for a run another
        process executes: this process asked, whether or not it has ended since)."""
        live = self._live.get(run_id)
        return live.abort_timer is not None if live is not None else run_id in self._wrapping_elsewhere

    async def cancel(self, run_id: str, *, graceful: bool = True, grace: float = 30.0) -> None:
        """Graceful: ask the run to wrap up and `complete`, aborting it after `grace` seconds. Else abort now.
        A run another yeetui process executes is told through the store; that process acts on it."""
        live = self._live.get(run_id)
        if live is None:
            await self.commands.post(run_id, "cancel" if graceful else "abort")
            if graceful:
                self._wrapping_elsewhere.add(run_id)
            return
        if not graceful or not live.started:
            self.abort(run_id)
            return
        live.mailbox.append(Message.user(WRAP_UP, steer=True))
        live.abort_timer = asyncio.get_running_loop().call_later(
            grace, self.abort, run_id, f"asked to wrap up, it had not finished after {seconds_text(grace)}: stopped")

    async def _act_on(self, command: RunCommand) -> None:
        """A command another process left for a run of this one (see RunCommands)."""
        if command.kind == "steer":
            await self.steer(command.run_id, command.body, sender=command.sender)
        elif command.kind == "halt":  # its tree's budget is spent (`yeetui.runs.budget_keeper`)
            self.launcher.budgets.halt_here(command.run_id, command.body)
        elif command.run_id in self._live:
            await self.cancel(command.run_id, graceful=command.kind == "cancel")

    def abort(self, run_id: str, reason: str | None = None) -> None:
        """Stop the run now; `reason` is what its record says after `cancelled: ` (see `cancel_reason`)."""
        live = self._live.get(run_id)
        if live is not None and live.task is not None and not live.task.done():
            live.task.cancel(reason)

    async def cancel_children(self, session_id: str, *, graceful: bool = False) -> None:
        for run_id in self.pane_runs.children_of(session_id):  # in panes: told through the store, like any
            with contextlib.suppress(SpawnRefused):
                await self.commands.post(run_id, "cancel" if graceful else "abort")
        for run_id in self.live_runs(session_id):
            if graceful:
                await self.cancel(run_id)
            else:
                self.abort(run_id)
        tasks = [task for r in self.live_runs(session_id) if (task := self._live[r].task) is not None]
        if tasks and not graceful:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _require_live(self, run_id: str) -> _Live:
        live = self._live.get(run_id)
        if live is None:
            raise SpawnRefused(f"Run {run_id} is not running in this process (it may have finished).")
        return live

    async def shutdown(self) -> None:
        await self.pane_runs.close()
        await self.commands.close()
        for run_id in list(self._live):
            self.abort(run_id)
        tasks = [live.task for live in self._live.values() if live.task]
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*self._endings, return_exceptions=True)


