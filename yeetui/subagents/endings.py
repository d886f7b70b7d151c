"""Who hears how a child run ended: its parent — inline, as the result of the blocking spawn that waited for it
in this process, or announced — or, for a detached top-level run nobody waits for, its own session's inbox."""

from __future__ import annotations

from typing import Any

from yeetui.runs.spec import RunOptions, RunResult
from yeetui.store.records import RunRecord
from yeetui.subagents.inbox import Delivery


async def deliver_ending(delivery: Delivery, run: RunRecord | None, result: RunResult, *, run_id: str,
                         session_id: str, parent_session_id: str | None, label: str, deliver: bool, inline: bool,
                         worktree: dict[str, Any] | None) -> None:
    """Deliver the ending of the run `run_id` of `session_id` (`run`: its record as it ended; `result`: what
    its runner returned). `inline`: a spawn
    of this process waits for it, so its parent is answered by that spawn's tool result, marked delivered here;
    otherwise its parent's side announces it. `deliver`: the spawn asked for its ending to be delivered at all."""
    status = run.status if run else result.status
    if parent_session_id and deliver:
        item, _ = await delivery.completion(
            recipient_session_id=parent_session_id, run_id=run_id, child_session_id=session_id,
            label=label, status=status, output=result.output,
            error=result.error or (run.error if run else None),
            result=result.result, announce=not inline,
            attempt=RunOptions.of(run).attempt, worktree=worktree)
        if inline:
            await delivery.consumed(item.id)
    elif run is not None and not parent_session_id and RunOptions.of(run).detached:
        # A detached top-level run (`agents start`, a schedule's): nobody waits for it, so its result waits
        # in its own session's inbox, unread — the fleet lists it under "needs you" until it is read.
        await delivery.completion(
            recipient_session_id=session_id, run_id=run_id, child_session_id=session_id,
            label=label, status=status, output=result.output, error=result.error or run.error,
            result=result.result, announce=False, attempt=RunOptions.of(run).attempt, worktree=worktree)
