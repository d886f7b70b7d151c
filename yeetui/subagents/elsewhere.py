"""Following the runs this process started in another process: children in tmux panes.

A pane's worker executes its run and records the ending in the store; the yeetui that started it (or, after a
crash, the next one to start: `adopt`) follows it from the store. When the worker is gone, the ending is
announced to the parent here — this process knows whether the parent is busy. A blocking spawn waiting here
takes the ending as its tool result instead and marks it delivered: only the parent's side does (had the worker
done it, a parent whose process died meanwhile would never hear of it once resumed). A worker that died or hangs
past its time is killed and its run recovered like any run whose process died.

The worker has nobody to ask in its own window, so a tool call under an `ask` rule reaches the user through
the store (`permission_asks`): while this process shows dialogs (`answers_asks`, the TUI), each open question
of a followed pane is published here as an ordinary `PermissionRequested`, and the answer is written back for
the worker to read. Such a process also asks the questions open to every yeetui (`attend`): those of detached
runs nobody follows, which an MCP client started.

Attending starts while the runtime opens, before its front end listens to the bus, so a question found then
reaches nobody: the front end calls `ask_again` in the same step as it starts listening, and every question still
open is published again — to it once, as those published later are new ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
from typing import Final

from yeetui.bus import Bus
from yeetui.errors import YeetuiError
from yeetui.events import InboxItemAdded, PermissionAnswer, PermissionRequested, RunStatus
from yeetui.runs.spec import RunOptions, RunResult
from yeetui.store import RunRecord, Store
from yeetui.store.liveness import pid_alive
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.panes import PaneHost

log = logging.getLogger(__name__)

POLL = 0.2
"""Seconds between looks at the store for the followed runs' endings and questions."""
LIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_PERMISSION)
RECORD_GRACE = 30.0
"""Seconds a worker whose run is final has, at least, to record its ending (after committing its worktree's
work) before it counts as hung and is killed."""


def process_running(pid: int | None) -> bool:
    """Whether `pid` is a running process (a zombie waiting for its parent counts as gone)."""
    return pid is not None and pid > 0 and pid_alive(pid)


class RunsElsewhere:
    def __init__(self, store: Store, bus: Bus, delivery: Delivery, panes: PaneHost | None, *,
                 answers_asks: bool = False, open_asks: bool = True) -> None:
        self.store = store
        self.bus = bus
        self.delivery = delivery
        self.panes = panes
        self.answers_asks: Final = answers_asks
        """This process shows permission dialogs (the TUI): pane children's questions are asked here."""
        self.open_asks: Final = open_asks
        """…and (`attend`) the questions open to every yeetui."""
        self._followed: dict[str, str | None] = {}
        """Run id → the session its ending is announced to."""
        self.ever_followed: list[str] = []
        """Every run this process followed, in order (`yeetui run` counts their unattended refusals)."""
        self._asked: dict[int, PermissionRequested] = {}
        """Question id in the store → the request published for it, while it is open."""
        self._answers: set[asyncio.Task[None]] = set()
        self._watch: asyncio.Task[None] | None = None
        self._attending: asyncio.Task[None] | None = None
        self.rounds = 0
        """Looks at the store so far (tests wait on it instead of sleeping)."""

    def follow(self, run_id: str, parent_session_id: str | None) -> None:
        self._followed[run_id] = parent_session_id
        if run_id not in self.ever_followed:
            self.ever_followed.append(run_id)
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._follow_all(), name="yeetui runs elsewhere")

    def following(self, run_id: str | None = None) -> bool:
        """Whether this process follows `run_id` (any run, when None)."""
        return run_id in self._followed if run_id is not None else bool(self._followed)

    def children_of(self, session_id: str) -> list[str]:
        return [run_id for run_id, parent in self._followed.items() if parent == session_id]

    async def adopt(self) -> None:
        """At start: runs still live in panes (their worker outlived the yeetui that started them) are
        followed from here, so their endings are announced to parents this process shows."""
        for run in await self.store.list_runs(statuses=LIVE, limit=500):
            options = RunOptions.of(run)
            if options.pane and options.parent_session_id and process_running(run.pid):
                self.follow(run.id, options.parent_session_id)
        if self.panes is not None:  # windows of ended runs were kept for reading until this start
            if self._followed:
                await self.panes.hold()  # their windows are this process's to show now
            await self.panes.server.close_dead_windows()
        if self.answers_asks and self.open_asks:
            await self.attend()

    async def attend(self) -> None:
        """This process shows dialogs: it is entered among the store's front ends, and the questions of runs
        nobody follows (an MCP client's `spawn`), open to every yeetui, are asked here too, until `close`."""
        if self._attending is not None:
            return
        await self.store.front_ends.enter(os.getpid())
        self._attending = asyncio.create_task(self._attend(), name="yeetui open questions")

    async def _attend(self) -> None:
        while True:
            try:
                await self._forward_asks()
            except YeetuiError:
                log.exception("could not look for permission questions open to every yeetui")
            self.rounds += 1
            await asyncio.sleep(POLL)

    async def ended(self, run_id: str, limit: float, *, inline: bool = False) -> RunResult:
        """The ending of a run another process executes, read from the store once it is final. Past `limit`
        seconds (its own timeout failed to stop it) it is aborted. `inline`: the ending goes back to the
        parent as a blocking spawn's tool result, here, so it is marked delivered first (`_taken_inline`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while True:
            run = await self.store.get_run(run_id)
            if run is None:
                return RunResult(run_id, "", RunStatus.FAILED, error="its run record is gone")
            if run.status.is_final:
                data = run.result if isinstance(run.result, dict) else {}
                if inline:
                    await self._taken_inline(run, deadline)
                return RunResult(run.id, run.session_id, run.status, output=str(data.get("output") or ""),
                                 error=run.error, result=data)
            if loop.time() > deadline or not process_running(run.pid):
                await self.stop(run)
            await asyncio.sleep(POLL)

    async def _taken_inline(self, run: RunRecord, deadline: float) -> None:
        """A final run whose ending its waiting parent takes as its tool result: its inbox item is marked
        delivered here, the parent's side, before the parent's next turn could announce it too. The item is
        recorded by the run's worker after the final status (so this waits for it while the worker lives, and
        kills a worker that hangs past `deadline`), or by the recovery of a worker that died; a worker gone
        without recording it leaves it to be recorded here, as delivered."""
        options = RunOptions.of(run)
        if not options.parent_session_id or not options.deliver:
            return  # nothing is recorded for a parent
        loop = asyncio.get_running_loop()
        deadline = max(deadline, loop.time() + RECORD_GRACE)
        while await self.delivery.taken_inline(run.id, options.attempt) is None:
            if process_running(run.pid) and loop.time() > deadline:
                await self.stop(run)
            if not process_running(run.pid):
                data = run.result if isinstance(run.result, dict) else {}
                item, _ = await self.delivery.completion(
                    recipient_session_id=options.parent_session_id, run_id=run.id, child_session_id=run.session_id,
                    label=run.label or run.profile, status=run.status, output=str(data.get("output") or ""),
                    error=run.error, result=data, announce=False, attempt=options.attempt)
                await self.delivery.consumed(item.id)
                return
            await asyncio.sleep(POLL)

    async def stop(self, run: RunRecord) -> None:
        """A worker that is gone, or hangs past its time: its process group is killed and the run recovered
        (ended interrupted and delivered, like any run whose process died)."""
        if run.pid and process_running(run.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(run.pid, signal.SIGKILL)
            for _ in range(100):
                if not process_running(run.pid):
                    break
                await asyncio.sleep(0.02)
        await self.delivery.recover()

    async def _follow_all(self) -> None:
        """While followed runs are live: forward their questions, and when one ends, announce it to its parent
        here (the worker recorded it and left the announcement to this process)."""
        while self._followed:
            try:
                if self.answers_asks and self._attending is None:  # else `_attend` forwards them
                    await self._forward_asks()
                for run_id, parent in list(self._followed.items()):
                    run = await self.store.get_run(run_id)
                    if run is not None and not run.status.is_final and not process_running(run.pid):
                        await self.stop(run)
                        run = await self.store.get_run(run_id)
                    # Final is not enough: the worker records its delivery after the run's final status, so
                    # the run is done with only once its process has gone (a load run caught one announcement
                    # missed when this looked only at the status).
                    if run is None or (run.status.is_final and not process_running(run.pid)):
                        if parent:
                            await self._show_delivered(run_id, parent)
                            if not self.delivery.is_active(parent):
                                await self.delivery.flush(parent, only_if_idle=True)
                        # Only now: who asks `following` finds its ending announced. A store error on the way
                        # leaves the run followed, and the next round announces it (else the announcement
                        # waited, recorded, for the next start of a yeetui).
                        self._followed.pop(run_id, None)
                        if self.panes is not None:  # its window joins those kept for reading, the oldest go
                            await self.panes.trim()
            except YeetuiError:
                log.exception("could not follow the runs this process started elsewhere")
            self.rounds += 1
            await asyncio.sleep(POLL)
        self._withdraw(self._asked)

    async def _show_delivered(self, run_id: str, parent: str) -> None:
        """The worker published its inbox item on its own bus: say it here too, for the inbox on screen."""
        for item in await self.store.inbox.list(parent):
            if item.run_id == run_id:
                self.bus.publish(InboxItemAdded(item.id, parent, run_id, item.kind, item.title, item.body,
                                                item.data or {}))

    async def _forward_asks(self) -> None:
        open_asks = await self.store.permission_asks.unanswered(self._followed)
        if self._attending is not None:
            followed = {ask.id for ask in open_asks}
            open_asks += [ask for ask in await self.store.permission_asks.unanswered_open_to_all()
                          if ask.id not in followed]
        still_open = {ask.id for ask in open_asks}
        self._withdraw({i: f for i, f in self._asked.items() if i not in still_open})  # answered or withdrawn
        for ask in open_asks:
            if ask.id in self._asked:
                continue
            reply: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
            reply.add_done_callback(functools.partial(self._answered, ask.id))
            request = PermissionRequested(ask.run_id, ask.session_id, ask.agent_label, ask.tool, ask.subject,
                                          ask.arguments, reply)
            self._asked[ask.id] = request
            self.bus.publish(request)

    def ask_again(self) -> None:
        """For a front end that starts listening to the bus in the same step (no await between): the questions
        asked here that are still open are published again, as those found while the runtime opened reached
        nobody. Each is the request published before, its reply the same future: the first answer — from this
        front end, another yeetui or the fleet — settles it and is recorded once. A listener that was there
        already gets the request a second time."""
        for request in list(self._asked.values()):
            if not request.reply.done():
                self.bus.publish(request)

    def _withdraw(self, asked: dict[int, PermissionRequested]) -> None:
        """Questions nobody needs answered any more: their dialogs, if shown, answer nothing."""
        for ask_id, request in list(asked.items()):
            self._asked.pop(ask_id, None)
            request.reply.cancel()

    def _answered(self, ask_id: int, reply: asyncio.Future[PermissionAnswer]) -> None:
        if reply.cancelled():
            return
        task = asyncio.ensure_future(self._record(ask_id, reply.result()))
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    async def _record(self, ask_id: int, answer: PermissionAnswer) -> None:
        try:
            await self.store.permission_asks.answer(ask_id, answer)
        except YeetuiError:
            log.exception("could not record the answer to permission question %s", ask_id)

    async def close(self) -> None:
        if self._attending is not None:
            self._attending.cancel()
            await asyncio.gather(self._attending, return_exceptions=True)
            try:
                await self.store.front_ends.leave(os.getpid())
            except YeetuiError:
                log.exception("could not leave the store's front ends")
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        self._withdraw(self._asked)
        await asyncio.gather(*self._answers, return_exceptions=True)

