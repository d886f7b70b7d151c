"""Answers a ConversationView's requests for pages of its session from the store: older pages as the user
scrolls up, newer ones as they scroll down from a jump to the start, and the first or last page on a jump.

The view never reads the store itself (it is a widget, fed plain data); whoever hosts it — the main
screen — passes its messages here.
"""

from __future__ import annotations

from yeetui.store import Store
from yeetui.subagents.session_control import ending_notices
from yeetui.tui.widgets.conversation import ConversationView

PAGE = 100
"""Messages loaded when a session opens, and per page when scrolling either way."""


class ConversationPages:
    def __init__(self, store: Store, page: int = PAGE) -> None:
        self.store = store
        self.page = page

    async def open(self, view: ConversationView) -> None:
        """The session's last page, as it opens (with how its runs ended, said again)."""
        store, session_id = self.store, view.session_id
        page = await store.messages(session_id, limit=self.page + 1)
        await view.load(page[-self.page:], has_older=len(page) > self.page,
                        errors=await ending_notices(store, session_id, page))

    async def older(self, view: ConversationView, message: ConversationView.LoadOlder) -> None:
        older = await self.store.messages(message.session_id, limit=self.page + 1,
                                          before_id=message.before_message_id)
        await view.prepend(older[-self.page:], has_older=len(older) > self.page,
                           before_message_id=message.before_message_id)

    async def newer(self, view: ConversationView, message: ConversationView.LoadNewer) -> None:
        newer = await self.store.messages(message.session_id, limit=self.page + 1, from_start=True,
                                          after_id=message.after_message_id, before_id=message.before_message_id)
        await view.append_newer(newer[: self.page], has_newer=len(newer) > self.page)

    async def jump(self, view: ConversationView, message: ConversationView.Jump) -> None:
        store, session_id = self.store, message.session_id
        if message.to_end:
            page = await store.messages(session_id, limit=self.page + 1)
            await view.show_end(page[-self.page:], has_older=len(page) > self.page,
                                errors=await ending_notices(store, session_id, page))
        else:
            page = await store.messages(session_id, limit=self.page + 1, from_start=True)
            await view.show_start(page[: self.page], has_newer=len(page) > self.page)
