"""A pair's interjections in the store: inbox items of the watched session (kind `interjection`), which the
user accepts or dismisses. The counts live in the store, so they survive the watcher being turned off."""

from __future__ import annotations

from dataclasses import dataclass

from yeetui.errors import YeetuiError
from yeetui.store import InboxItem, Store
from yeetui.store.payloads import Interjection

INTERJECTION = "interjection"
"""The inbox item kind of a pair's remark."""


class WatcherError(YeetuiError):
    """A watcher could not start, or an interjection could not be marked."""


@dataclass(frozen=True, slots=True)
class WatcherStats:
    interjections: int = 0
    accepted: int = 0
    dismissed: int = 0


async def mark_interjection(store: Store, item_id: int, *, accepted: bool) -> InboxItem:
    """Accept (status read) or dismiss an interjection. Works with the watcher off, e.g. from the inbox.

    The store cannot yet change an item's data, so "accepted" is recorded on the pair run that made the
    interjection (`result.interjection_verdict`); `data.accepted` is honoured too once the store writes it."""
    item = await store.inbox.get(item_id)
    if item is None:
        raise WatcherError(f"There is no inbox item {item_id} in the store at {store.path}.")
    if item.kind != INTERJECTION:
        raise WatcherError(f"Inbox item {item_id} is a {item.kind!r} item, not an interjection; only "
                           "interjections are accepted or dismissed.")
    item = await store.inbox.set_status(item_id, "read" if accepted else "dismissed")
    run = await store.get_run(item.run_id) if item.run_id else None
    if run is not None:
        verdict = "accepted" if accepted else "dismissed"
        await store.update_run(run.id, result={**(run.result or {}), "interjection_verdict": verdict})
    return item


async def interjection_stats(store: Store, watched_session_id: str,
                             watcher_session_id: str | None = None) -> WatcherStats:
    """Interjections made for `watched_session_id` (by one watcher session, or all), accepted and dismissed."""
    items = [i for i in await store.inbox.list(watched_session_id) if isinstance(p := i.payload, Interjection)
             and (watcher_session_id is None or p.watcher_session_id == watcher_session_id)]
    accepted = 0
    for item in items:
        if item.status != "read":
            continue
        if isinstance(told := item.payload, Interjection) and told.accepted:
            accepted += 1
            continue
        run = await store.get_run(item.run_id) if item.run_id else None
        accepted += bool(run and (run.result or {}).get("interjection_verdict") == "accepted")
    return WatcherStats(len(items), accepted, sum(1 for i in items if i.status == "dismissed"))
