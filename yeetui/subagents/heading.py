"""Which session is on screen, in words: the trail from its primary session down to it, its status, whether
the user can still talk to it, and its model — what a front end's header (breadcrumb) shows.

`primary “fix the flaky login test” › orchestrator#2 › builder#3 · completed · type to follow up · claude-sonnet-4-5`

Read from the store, with the ledger's live row preferred for the status (a watcher between runs, a run that
just changed), so every front end says the same thing the ledger and the switcher say.
"""

from __future__ import annotations

from dataclasses import dataclass

from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.subagents.ledger import ANSWERED, Ledger, run_status_word, short_model, status_word

PRIMARY = "primary"
"""How the top of the trail reads: the conversation the user talks to."""
FOLLOW_UP = "type to follow up"
"""What a finished subagent's heading adds: a message typed in its session continues it."""


@dataclass(frozen=True, slots=True)
class SessionHeading:
    trail: tuple[str, ...]
    """Labels from the primary session down to the one on screen (`primary`, `orchestrator#2`, `builder#3`)."""
    title: str
    """The primary session's title (from its first prompt); empty before the first prompt."""
    status: str
    """How the on-screen session's latest run reads (`running`, `completed`, `answered`, `new`, …)."""
    follow_up: bool
    """A subagent whose run has ended: what the user types in its session is a follow-up turn of it."""
    model: str = ""
    """The short model name of its latest run, or of the model its next run uses when a front end changed it
    (`/model`) and no run is in flight."""

    def text(self) -> str:
        """The heading on one line (what the header shows, unstyled)."""
        head = f"{self.trail[0]} “{self.title}”" if self.title else self.trail[0]
        parts = [" › ".join((head, *self.trail[1:])), self.status]
        if self.follow_up:
            parts.append(FOLLOW_UP)
        if self.model:
            parts.append(self.model)
        return " · ".join(parts)


async def session_heading(store: Store, session_id: str, ledger: Ledger | None = None, *,
                          model: str | None = None) -> SessionHeading | None:
    """The heading of `session_id`, or None when it does not exist. `model`: the model a front end set for its
    top-level conversations (`/model`); a top-level session names it while none of its runs is in flight."""
    session = await store.get_session(session_id)
    if session is None:
        return None
    chain = [session]
    while chain[-1].parent_id and (parent := await store.get_session(chain[-1].parent_id)) is not None:
        if any(s.id == parent.id for s in chain):
            break  # a cycle in parent ids: stop rather than loop
        chain.append(parent)
    chain.reverse()
    top = chain[0]
    trail = [PRIMARY if top.origin == "primary" else f"{top.origin} {top.profile}"]  # `detached oracle`
    for node in chain[1:]:
        runs = await store.list_runs(session_id=node.id, limit=1)
        trail.append(runs[0].label if runs and runs[0].label else node.profile)
    runs = await store.list_runs(session_id=session.id, limit=1)
    run = runs[0] if runs else None
    rows = [r for r in ledger.rows() if r.session_id == session.id] if ledger is not None else []
    row = rows[-1] if rows else None  # the session's latest run (rows are in order of start)
    if row is not None:
        status = status_word(row)
    elif run is None:
        status = "new"
    elif run.status == RunStatus.WAITING_USER and session.parent_id is None:
        status = ANSWERED
    else:
        status = run_status_word(run.status)
    ended = run is not None and run.status.is_final and (row is None or row.is_final)
    shown = (run.model or "") if run else ""
    if model and session.parent_id is None and (run is None or ended):
        shown = model  # what answers the next prompt
    return SessionHeading(trail=tuple(trail), title=chain[0].title, status=status,
                          follow_up=session.parent_id is not None and ended, model=short_model(shown))

