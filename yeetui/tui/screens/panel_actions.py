"""What the keys of the status ledger and the inbox panel do (the main screen hands their messages here): open,
steer, watch, embed or stop a run; open, reply to, accept or dismiss an inbox item, merge the worktrees it tells
of or open a shell in one."""

from __future__ import annotations

from typing import Protocol

from yeetui import events as ev
from yeetui.errors import YeetuiError
from yeetui.store.payloads import InboxPayload, Interjection
from yeetui.store.records import InboxItem, InboxStatus, WorktreeRecord
from yeetui.subagents.ledger import LedgerRow
from yeetui.text import clip_words, one_line
from yeetui.tui.commands import CommandScreen
from yeetui.tui.slash import ask_merge, open_worktree_shell, run_slash, stop_question
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.ledger import LedgerPanel


class PanelScreen(CommandScreen, Protocol):
    """What the panels' actions use of the main screen besides the commands' share."""

    async def open_session(self, session_id: str) -> None: ...

    def focus_composer(self) -> None: ...


async def ledger_action(screen: PanelScreen, message: LedgerPanel.Action, row: LedgerRow | None) -> None:
    """A key on the ledger's row of a run (`row`: what the ledger shows of it)."""
    run = await screen.surface.store.get_run(message.run_id)
    if run is None:  # a watcher row between runs: open the watcher's session
        if row is not None and message.action in ("open", "steer"):
            await screen.open_session(row.session_id)
        return
    if message.action == "open":
        await screen.open_session(run.session_id)
    elif message.action == "watch":
        await run_slash(screen, "attach", run.id)
    elif message.action == "embed":
        await run_slash(screen, "embed", run.id)
    elif message.action == "steer":
        await screen.open_session(run.session_id)
        screen.focus_composer()
    elif message.action in ("cancel", "abort") and not run.status.is_final:
        graceful = message.action == "cancel"

        async def stop() -> None:
            try:  # a run of another process (a detached worker) is told through the store
                await screen.surface.runs.cancel(run.id, graceful=graceful)
            except YeetuiError as exc:
                await screen.notice("warning", str(exc))
                return
            if not screen.surface.runs.is_live(run.id):
                word = "wrap up" if graceful else "stop now"
                await screen.notice("info", f"Asked {run.label or run.profile} (in process {run.pid}) to {word}.")

        screen.confirm(*stop_question(run.label or run.profile, now=not graceful,
                                      queued=run.status == ev.RunStatus.QUEUED), stop)


async def inbox_action(screen: PanelScreen, message: InboxPanel.Action, panel: InboxPanel) -> None:
    """A key on an inbox item; `panel` shows its new status at once."""
    item = await screen.surface.inbox.get(message.item_id)
    if item is None:
        return
    payload = item.payload
    if message.action == "merge":
        await _merge_item(screen, payload)
        return
    if message.action == "worktree":
        await _open_item_worktree(screen, payload)
        return
    status: InboxStatus = "dismissed" if message.action == "dismiss" else "read"
    judged = message.action in ("accept", "dismiss")  # an interjection's verdict, its watcher counts it
    counted = await screen.surface.inbox.mark(item, status, accepted=message.action == "accept" if judged else None)
    panel.set_status(item.id, status)
    if judged:
        screen.app.notify(judged_text(item, accepted=message.action == "accept", counted=counted), timeout=4,
                          markup=False)  # the item's title is an agent's words: never Textual markup
    watcher = payload.watcher_session_id if isinstance(payload, Interjection) else None
    if message.action == "open" and (child := payload.child_session_id or watcher):
        await screen.open_session(child)
    elif message.action == "reply":
        screen.prefill(f"Re {payload.label or item.title}: ")


async def _open_item_worktree(screen: PanelScreen, payload: InboxPayload) -> None:
    """alt+w on an inbox item: a shell in the first worktree it tells of that is still there (an orchestrator's
    item tells of each builder's, and a merged one is gone), named by its agent's label."""
    live = await _active_trees(screen, payload, none="This item has no worktree; alt+w opens a builder's worktree.",
                               gone="This item's worktrees were merged or discarded: there is none to open.")
    if not live:
        return
    try:
        said = await open_worktree_shell(screen, live[0], live[0].label or live[0].branch)
    except YeetuiError as exc:
        await screen.notice("warning", str(exc))
        return
    others = ", ".join(wt.label or wt.branch for wt in live[1:])
    await screen.notice("info", said + (f" Also still open: {others} (/open NAME)." if others else ""))


async def _merge_item(screen: PanelScreen, payload: InboxPayload) -> None:
    """alt+m on an inbox item: after one confirmation, merge the worktrees it tells of that are still
    active (a builder's, an orchestrator's builders'), in order, stopping at the first that does not merge."""
    trees = await _active_trees(
        screen, payload, none="This item has no worktree to merge; alt+m merges a builder's branch.",
        gone="Nothing left to merge: this item's worktrees were merged or discarded.")
    if trees:
        ask_merge(screen, trees)


async def _active_trees(screen: PanelScreen, payload: InboxPayload, *, none: str, gone: str) -> list[WorktreeRecord]:
    """The worktrees an item tells of that are still active, in order; when there are none, the warning that
    says why (`none`: it tells of no worktree; `gone`: they were merged or discarded)."""
    ids = payload.worktree_ids
    live = [wt for i in ids if (wt := await screen.surface.worktrees.get(i)) and wt.status == "active"]
    if not live:
        await screen.notice("warning", gone if ids else none)
    return live


def judged_text(item: InboxItem, *, accepted: bool, counted: bool) -> str:
    """What alt+a / alt+d did, said at once: `Accepted the pair's remark: …; the pair takes it into account.`"""
    title = clip_words(one_line(item.title), 60)
    if item.kind != "interjection":
        return f"{'Accepted' if accepted else 'Dismissed'}: {title}" + (" (marked read)." if accepted else ".")
    verdict = "useful" if accepted else "not useful"
    told = f"; the pair counts it as {verdict}." if counted else " (the pair is off: F2 turns it on)."
    return f"{'Accepted' if accepted else 'Dismissed'} the pair's remark: {title}{told}"
