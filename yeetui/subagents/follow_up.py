"""A follow-up: a message for a subagent whose run has ended, which becomes a new run in its session. What can
be followed up (a subagent's ended run that is not a watcher's, not released, not an external agent's, whose
checkout is still there), and the spawn request that carries it on."""

from __future__ import annotations

from typing import Literal

from yeetui.runs.spec import RunOptions
from yeetui.store import Store
from yeetui.subagents.spawn_request import SpawnRefused, SpawnRequest

RELEASED = "released"
"""The status of a subagent's session its parent let go (`release_agent`): it is not followed up again."""


async def follow_up_request(store: Store, session_id: str, text: str, *,
                            requested_by: Literal["user", "agent"]) -> SpawnRequest:
    """The spawn of `text` as the next run of the subagent session `session_id`, with the same profile, model
    and parent, in this process whatever mode the first run had; SpawnRefused (saying why) for a top-level
    conversation, a run still going, a watcher, a released subagent, an external agent's, or a checkout that
    is gone."""
    session = await store.get_session(session_id)
    if session is None or session.parent_id is None:
        raise SpawnRefused("Only a subagent's session can be followed up; this is a top-level conversation.")
    runs = await store.list_runs(session_id=session.id, limit=1)
    if not runs:
        raise SpawnRefused("This subagent never ran; there is nothing to follow up.")
    run = runs[0]
    label = run.label or run.profile
    if not run.status.is_final:
        raise SpawnRefused(f"{label} is still {run.status.value}; guidance reaches it at its next turn.")
    opts = RunOptions.of(run)
    if opts.watcher:
        raise SpawnRefused(f"{label} is a watcher: it answers what it watches, not messages of its own. "
                           "Write in the conversation it watches.")
    if session.status == RELEASED:
        raise SpawnRefused(f"{label} was released by its parent; start a new subagent for more work.")
    if run.options.get("external"):
        raise SpawnRefused(f"{label} was a subagent of an external agent, which keeps its context: follow up "
                           "with the agent that started it.")
    if session.cwd is not None and not session.cwd.is_dir():
        raise SpawnRefused(f"{label} worked in {session.cwd}, which is gone (merged or discarded); start a new "
                           "subagent for more work.")
    return SpawnRequest(
        profile=run.profile, prompt=text, parent_session_id=opts.parent_session_id or session.parent_id,
        session_id=session.id, mode="in_process", model=run.model, thinking=opts.thinking, cleanup="keep",
        requested_by=requested_by, deliver=opts.deliver, timeout=opts.timeout)
