"""The inbox as the user handles it from any front end: read an item, mark it read or dismissed, and accept or
dismiss a pair watcher's interjection (its watcher counts the verdict)."""

from __future__ import annotations

from yeetui.runtime import Runtime
from yeetui.store.records import InboxItem, InboxStatus

__all__ = ["InboxDesk", "InboxItem", "InboxStatus"]


class InboxDesk:
    """Inbox use cases over one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def get(self, item_id: int) -> InboxItem | None:
        return await self._runtime.store.inbox.get(item_id)

    async def mark(self, item: InboxItem, status: InboxStatus, *, accepted: bool | None = None) -> bool:
        """Mark the item read or dismissed. `accepted` is the user's verdict on an interjection (accept or
        dismiss); its watcher, while on, counts it (what it says next takes the verdicts into account). Whether a
        watcher counted it."""
        await self._runtime.store.inbox.set_status(item.id, status)
        if item.kind == "interjection" and accepted is not None:
            if watcher := self._runtime.watchers.get(item.session_id):
                await watcher.mark(item.id, accepted=accepted)
                return True
        return False
