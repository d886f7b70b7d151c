"""Runs as the user handles them from any front end, wherever they execute — in this process, in a tmux pane,
in a detached worker: find one by its label, stop it, steer it, watch its pane.

A run in another process is controlled through the store (its process acts on the command); the callers do
not need to know where it runs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from yeetui.events import PermissionRequested
from yeetui.runs.budget import Budget
from yeetui.runs.spec import RunOptions, RunResult
from yeetui.runtime import Runtime
from yeetui.store.coordination import PermissionAsk
from yeetui.store.records import RunRecord, SessionRecord
from yeetui.subagents.elsewhere import process_running
from yeetui.subagents.review import review_request
from yeetui.subagents.spawner import SpawnHandle
from yeetui.system.terminals import Shown, attach_argv, show_window
from yeetui.system.tmux import Pane

__all__ = ["Budget", "Pane", "RunDesk", "Sent", "Shown", "SpawnHandle", "command_budget"]


def command_budget(*, max_cost: float | None = None, max_tokens: int | None = None, max_turns: int | None = None,
                   max_minutes: float | None = None) -> Budget | None:
    """The budget a command gives its run (`--max-cost 0.50`, `/orchestrate --max-cost 0.50 …`); None: none."""
    budget = Budget(max_cost_usd=max_cost, max_tokens=max_tokens, max_turns=max_turns, max_minutes=max_minutes)
    return budget if budget.is_set else None


@dataclass(frozen=True)
class Sent:
    """Where a message typed into a session went."""

    to: Literal["conversation", "elsewhere", "live", "follow_up"]
    """`conversation`: a turn of the top-level conversation; `elsewhere`: the run another yeetui process
    executes for the session (read at its next turn); `live`: the subagent running here (same);
    `follow_up`: a new turn of a finished subagent, in its own session with its context."""
    label: str = ""
    pid: int | None = None
    """The process that executes the run, for `elsewhere`."""


class RunDesk:
    """Run use cases over one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._spawner = runtime.spawner
        self._store = runtime.store

    # -- finding ----------------------------------------------------------------------------------

    async def running(self, *, under_session: str | None = None) -> list[RunRecord]:
        """Every live run, in this process, in tmux panes or detached; with `under_session`, only the subagents
        that session started."""
        live = await self._spawner.running()
        if under_session is None:
            return live
        return [r for r in live if RunOptions.of(r).parent_session_id == under_session]

    async def find_running(self, name: str, *, under_session: str | None = None) -> RunRecord | None:
        """A live run by its label (`oracle#4`) or run id prefix; with no name, the latest subagent started by
        `under_session`."""
        if not name:
            children = await self.running(under_session=under_session) if under_session else []
            return children[-1] if children else None
        return next((r for r in await self.running() if r.label == name or r.id.startswith(name)), None)

    async def find_in_pane(self, name: str = "") -> RunRecord | None:
        """The latest run in a tmux pane, or the one with this label or run id prefix."""
        runs = [r for r in await self._store.list_runs(limit=200) if RunOptions.of(r).pane]
        if not name:
            return next(iter(runs), None)
        return next((r for r in runs if r.label == name or r.id.startswith(name)), None)

    async def elsewhere(self, session_id: str) -> RunRecord | None:
        """The session's latest run when another live yeetui process executes it (a detached worker)."""
        runs = await self._store.list_runs(session_id=session_id, limit=1)
        if not runs:
            return None
        run = runs[0]
        if (run.status.is_final or run.pid in (None, os.getpid()) or self._spawner.is_live(run.id)
                or not process_running(run.pid)):
            return None
        return run

    async def resolve(self, ident: str) -> RunRecord:
        """The run with this id, unique id prefix or label (a clear error otherwise)."""
        return await self._store.resolve_run(ident)

    def is_live(self, run_id: str) -> bool:
        """The run executes in this process now."""
        return self._spawner.is_live(run_id)

    def label(self, run_id: str) -> str:
        return self._spawner.label(run_id) or run_id[:8]

    def live_here(self, *, under_session: str | None = None) -> list[str]:
        """Ids of the runs this process executes (they stop when it quits); with `under_session`, only that
        session's subagents."""
        return self._spawner.live_runs(under_session)

    async def refused_unattended(self) -> list[PermissionRequested | PermissionAsk]:
        """Tool calls refused because nobody could be asked: this process's runs' (a headless front end), and
        those of the pane children it followed, which their workers recorded in the store."""
        elsewhere = await self._store.permission_asks.unattended_refusals(self._spawner.elsewhere.ever_followed)
        return [*self._runtime.refused, *elsewhere]

    def ask_again(self) -> None:
        """For a front end that starts listening to the bus in the same step: the permission questions of runs
        in other processes that this one asks, still open, are published again — those found while the runtime
        opened reached no one (see `RunsElsewhere.ask_again`: the same requests, so one answer settles each)."""
        self._spawner.elsewhere.ask_again()

    def children_running(self, session_id: str) -> list[str]:
        """Labels of the subagents `session_id` started that still run here (`await_children` waits for them)."""
        return [self.label(run_id) for run_id in self._spawner.live_runs(session_id)]

    async def wait(self, run_id: str) -> RunResult | None:
        """The ending of a run this process executes, once it has ended (None: not one of this process's)."""
        return await self._spawner.wait(run_id)

    async def await_children(self, session_id: str) -> None:
        """Until every subagent `session_id` started here has ended (however it ends)."""
        live = self._spawner.live_runs(session_id)
        await asyncio.gather(*(self._spawner.wait(r) for r in live), return_exceptions=True)

    # -- acting -----------------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str, ...]:
        """The key values no output may show (a front end printing a run's events or result redacts them)."""
        return tuple(self._runtime.launcher.secrets)

    async def run_prompt(self, prompt: str | None, *, profile: str | None = None, model: str | None = None,
                         session_id: str | None = None, budget: Budget | None = None) -> RunResult:
        """Run `prompt` to its end in the foreground: a new session of `profile` (the primary profile by
        default), or a new turn of `session_id`; `budget`: what it and its subagents may spend."""
        return await self._runtime.launcher.run_prompt(prompt, profile_name=profile, model=model,
                                                       session_id=session_id, budget=budget)

    async def review(self, *, parent_session_id: str, target: str | None = None) -> SpawnHandle:
        """A reviewer on the project's changes (or on `target`: a branch, a commit range, a worktree)."""
        request = await review_request(self._runtime.project_dir, parent_session_id=parent_session_id,
                                       target=target)
        return await self._spawner.spawn(request)

    async def send(self, session: SessionRecord, text: str, *,
                   converse: Callable[[str], Awaitable[None]]) -> Sent:
        """A message the user typed into `session`, delivered where it belongs: to the run another process
        executes for it, to a top-level conversation's next turn (`converse`, the front end's conversation
        control), to a subagent running here, or, a subagent having finished, as a follow-up turn of it.
        Raises YeetuiError when it cannot go anywhere (the caller keeps the text for the user)."""
        if (other := await self.elsewhere(session.id)) is not None:
            await self._spawner.steer(other.id, text, sender="user")
            return Sent("elsewhere", other.label or other.profile, other.pid)
        if session.parent_id is None:
            await converse(text)
            return Sent("conversation")
        live = [r for r in await self._store.list_runs(session_id=session.id, limit=1) if self.is_live(r.id)]
        if live:
            await self._spawner.steer(live[0].id, text, sender="user")
            return Sent("live", live[0].label or live[0].profile)
        handle = await self._spawner.follow_up(session.id, text)
        return Sent("follow_up", handle.label)

    async def follow_up(self, session_id: str, text: str) -> SpawnHandle:
        """A new turn of a finished subagent, in its own session with its context; its answer is delivered
        to its parent like the first."""
        return await self._spawner.follow_up(session_id, text)

    def wrapping_up(self, run_id: str) -> bool:
        """It was already asked to wrap up (a second cancel stops it now)."""
        return self._spawner.wrapping_up(run_id)

    async def cancel(self, run_id: str, *, graceful: bool = True) -> None:
        """Ask the run to wrap up (`graceful`: it finishes its turn and reports, stopped after a grace period)
        or stop it now — with its own subagents."""
        await self._spawner.cancel(run_id, graceful=graceful)

    async def stop_children(self, session_id: str) -> None:
        """Stop every subagent a session started, now."""
        await self._spawner.cancel_children(session_id)

    def abort(self, run_id: str) -> None:
        """Stop a run of this process now (esc on its session)."""
        self._spawner.abort(run_id)

    async def steer(self, run_id: str, text: str) -> None:
        """A message from the user that the run reads at its next turn."""
        await self._spawner.steer(run_id, text, sender="user")

    # -- panes ------------------------------------------------------------------------------------

    async def pane_of(self, run: RunRecord) -> Pane | None:
        """The tmux pane the run executes in, while it is there."""
        return await self._spawner.pane_of(run.id)

    async def show_pane(self, pane: Pane) -> Shown:
        """Put the pane in front of the user: a split of their tmux, a terminal window, or the command to
        type."""
        return await asyncio.to_thread(show_window, pane.server, pane.target, env=self._runtime.env)

    @staticmethod
    def attach_command(pane: Pane) -> list[str]:
        """The command that attaches a terminal to the pane's tmux window."""
        return attach_argv(pane.server, pane.target)

