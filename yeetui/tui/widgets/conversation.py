"""One session's transcript: a scrolling column of message views, fed plain data by the screen.

Only a bounded window of message views stays mounted (older ones are in SQLite and come back through
`LoadOlder` → `prepend`). The live assistant message streams through `Markdown.get_stream()`; finished
assistant text is a pre-rendered `Static`. The view sticks to the end while the user is at the end
(Textual's `anchor()`), and stays put once they scroll up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual import on
from textual.containers import VerticalScroll
from textual.message import Message as TextualMessage
from textual.widget import Widget

from yeetui.messages import Message, ToolCallPart
from yeetui.store.records import StoredMessage
from yeetui.tui.widgets.message_views import (
    AnnouncementView,
    AssistantMessageView,
    NoticeView,
    OlderMarker,
    SteerView,
    UserMessageView,
    thinking_text,
)
from yeetui.tui.widgets.tool_views import Entry, ToolCallView

WINDOW = 150
"""Message views kept mounted while the user follows the end of the conversation."""
HEAVY_KEEP = 2
"""Streamed messages that keep their Markdown widget; older ones are swapped for a light Static."""


class ConversationView(VerticalScroll):
    DEFAULT_CSS = """
    ConversationView {
        height: 1fr;
        padding: 0 1 1 1;
        background: $background;
        scrollbar-size-vertical: 1;
    }
    """

    class LoadOlder(TextualMessage):
        """The user reached the top and older messages exist: the screen should `prepend` a page."""

        def __init__(self, session_id: str, before_message_id: int) -> None:
            super().__init__()
            self.session_id = session_id
            self.before_message_id = before_message_id

    class OpenSession(TextualMessage):
        """An announcement's child session was chosen."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, session_id: str, *, window: int = WINDOW, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.session_id = session_id
        self.window = window
        self.has_older = False
        self._loading_older = False
        self._live: AssistantMessageView | None = None
        self._live_run: str | None = None
        self._heavy: list[AssistantMessageView] = []
        self._tools: dict[str, ToolCallView] = {}

    def on_mount(self) -> None:
        self.anchor()

    # -- queries -----------------------------------------------------------------------------------

    @property
    def entries(self) -> list[Widget]:
        """The mounted message views, oldest first (the `OlderMarker` excluded)."""
        return [child for child in self.children if isinstance(child, Entry)]

    @property
    def oldest_message_id(self) -> int | None:
        ids = [e.message_id for e in self.entries if isinstance(e, Entry) and e.message_id is not None]
        return min(ids) if ids else None

    @property
    def following(self) -> bool:
        """True while the view sticks to the end (the user has not scrolled away from it)."""
        return self.is_anchored and not self._anchor_released

    # -- whole transcripts -------------------------------------------------------------------------

    async def load(self, messages: list[StoredMessage], *, has_older: bool) -> None:
        """Replace everything with `messages` (the tail of the session)."""
        self._live, self._live_run = None, None
        self._heavy.clear()
        self._tools.clear()
        self._loading_older = False
        tail = messages[-1] if messages else None
        if tail is not None and tail.partial and tail.message.role == "assistant" and tail.run_id:
            # A run is (or was) mid-stream: its checkpoint becomes the live view that deltas continue.
            messages = messages[:-1]
            self._live = AssistantMessageView(tail.message.text, thinking_text(tail.message),
                                              message_id=tail.id, live=True)
            self._live_run = tail.run_id
        views = self._build(messages)
        if self._live is not None:
            views.append(self._live)
        with self.app.batch_update():
            await self.remove_children()
            await self.mount_all(views)
        await self._set_has_older(has_older)
        await self._trim()
        self.anchor()
        self.call_after_refresh(self._fill_if_short)

    async def prepend(self, messages: list[StoredMessage], *, has_older: bool) -> None:
        """Mount an older page above what is shown, keeping the visible lines where they are."""
        self._loading_older = False
        known = self.oldest_message_id
        messages = [m for m in messages if known is None or m.id < known]
        views = self._build(messages)
        old_height, old_y = self.virtual_size.height, self.scroll_y
        following = self.following
        first = next(iter(self.entries), None)
        if views:
            with self.app.batch_update():
                if first is not None:
                    await self.mount_all(views, before=first)
                else:
                    await self.mount_all(views)
        await self._set_has_older(has_older)
        if views and not following:
            def keep_position() -> None:
                grown = self.virtual_size.height - old_height
                self.scroll_to(y=old_y + grown, animate=False, immediate=True)
            self.call_after_refresh(keep_position)

    def _build(self, messages: Sequence[StoredMessage]) -> list[Widget]:
        views: list[Widget] = []
        for stored in messages:
            views.extend(self._views_for(stored.message, stored.id, interrupted=stored.partial))
        return views

    def _views_for(self, message: Message, message_id: int | None, *, interrupted: bool = False) -> list[Widget]:
        """New views for one committed message; tool results fill their call's block instead."""
        meta = message.meta
        if message.role == "tool":
            orphans: list[Widget] = []
            for part in message.tool_results:
                block = self._tools.get(part.call_id)
                if block is None:
                    block = ToolCallView(part.call_id, part.name or "tool", None, message_id=message_id)
                    self._tools[part.call_id] = block
                    orphans.append(block)
                    block.set_class(len(orphans) == 1, "-first")
                block.set_result(part.content, part.is_error)
            return orphans
        if message.role == "user":
            if meta.get("announcement"):
                return [AnnouncementView(message, message_id=message_id)]
            if meta.get("steer") or meta.get("nudge"):
                return [SteerView(message, message_id=message_id)]
            return [UserMessageView(message.text, message_id=message_id)]
        views: list[Widget] = []
        text, thinking = message.text, thinking_text(message)
        interrupted = interrupted or bool(meta.get("interrupted"))
        if text.strip() or thinking or interrupted:
            views.append(AssistantMessageView(text, thinking, message_id=message_id, interrupted=interrupted))
        views.extend(self._tool_blocks(message.tool_calls, message_id))
        return views

    def _tool_blocks(self, calls: Iterable[ToolCallPart], message_id: int | None) -> list[Widget]:
        blocks: list[Widget] = []
        for call in calls:
            existing = self._tools.get(call.id)
            if existing is not None and existing.has_call:
                existing.message_id = message_id
                continue
            block = ToolCallView(call.id, call.name, call.arguments, message_id=message_id)
            if existing is not None:  # a result-only block from a later page: the call now has its place
                if existing.result is not None:
                    block.set_result(existing.result, existing.is_error)
                if existing.is_attached:
                    existing.remove()
            self._tools[call.id] = block
            blocks.append(block)
        if blocks:
            blocks[0].add_class("-first")
        return blocks

    # -- committed messages ------------------------------------------------------------------------

    async def add_message(self, message: Message, message_id: int, *, run_id: str | None = None) -> None:
        """A committed message. The assistant message of a live stream finishes that view in place."""
        live = self._live
        if message.role == "assistant" and live is not None and run_id in (None, self._live_run):
            self._live, self._live_run = None, None
            live.message_id = message_id
            thinking = thinking_text(message)
            await live.finish(message.text, thinking, interrupted=bool(message.meta.get("interrupted")))
            if message.text.strip() or thinking or live.interrupted:
                self._note_heavy(live)
            else:  # a tool-call-only reply whose stream was restarted away: nothing left to show
                await live.remove()
            views = self._tool_blocks(message.tool_calls, message_id)
        else:
            if live is not None and message.role == "user":
                await self.end_stream()
            views = self._views_for(message, message_id)
        if views:
            await self.mount_all(views)
        await self._trim()

    async def end_stream(self, run_id: str | None = None) -> None:
        """The run ended without committing its streamed text (cancelled, failed): keep it, marked."""
        live = self._live
        if live is None or run_id not in (None, self._live_run):
            return
        self._live, self._live_run = None, None
        await live.abandon()
        self._note_heavy(live)

    def _note_heavy(self, view: AssistantMessageView) -> None:
        if not view.is_heavy:
            return
        self._heavy.append(view)
        while len(self._heavy) > HEAVY_KEEP:
            old = self._heavy.pop(0)
            if old.is_attached:
                self.run_worker(old.lighten(), group="lighten")

    # -- streaming ---------------------------------------------------------------------------------

    async def _live_view(self, run_id: str) -> AssistantMessageView:
        if self._live is not None and self._live_run != run_id:
            await self.end_stream()
        if self._live is None:
            self._live, self._live_run = AssistantMessageView(live=True), run_id
            await self.mount(self._live)
            await self._trim()
        return self._live

    async def stream_text(self, run_id: str, text: str) -> None:
        (await self._live_view(run_id)).append_text(text)

    async def stream_thinking(self, run_id: str, text: str) -> None:
        (await self._live_view(run_id)).append_thinking(text)

    async def stream_restarted(self, run_id: str) -> None:
        if self._live is not None and self._live_run == run_id:
            await self._live.restart()

    # -- tools and notices -------------------------------------------------------------------------

    async def tool_started(self, call_id: str, name: str, arguments: dict) -> None:
        block = self._tools.get(call_id)
        if block is None:
            block = ToolCallView(call_id, name, arguments)
            await self._mount_block(block)
        elif not block.has_call:
            block.set_arguments(arguments)

    async def tool_finished(self, call_id: str, name: str, content: str, is_error: bool) -> None:
        block = self._tools.get(call_id)
        if block is None:
            block = ToolCallView(call_id, name, None)
            await self._mount_block(block)
        block.set_result(content, is_error)

    async def _mount_block(self, block: ToolCallView) -> None:
        """A tool block that arrived by event rather than inside a committed message."""
        self._tools[block.call_id] = block
        if not isinstance(self.children[-1] if self.children else None, ToolCallView):
            block.add_class("-first")
        await self.mount(block)
        await self._trim()

    async def add_notice(self, level: str, text: str) -> None:
        await self.mount(NoticeView(level, text))
        await self._trim()

    # -- the bounded window ------------------------------------------------------------------------

    async def _trim(self) -> None:
        """Unmount the oldest whole messages beyond the window (beyond 3× while the user reads history).

        Trims a tenth below the window at a time, so removals (each a layout pass) come in batches."""
        entries = self.entries
        limit = self.window if self.following else 3 * self.window
        if len(entries) <= limit:
            return
        doomed: list[Widget] = []
        excess = len(entries) - (self.window - self.window // 10)
        index = 0
        while index < len(entries) and (len(doomed) < excess or self._same_message(entries[index], doomed)):
            entry = entries[index]
            if entry is self._live:
                break
            doomed.append(entry)
            index += 1
        if not doomed:
            return
        removed_height = sum(w.outer_size.height for w in doomed)
        for widget in doomed:
            if isinstance(widget, ToolCallView) and self._tools.get(widget.call_id) is widget:
                del self._tools[widget.call_id]
            if widget in self._heavy:
                self._heavy.remove(widget)  # type: ignore[arg-type]
        following = self.following
        await self.remove_children(doomed)
        await self._set_has_older(True)
        if not following:
            self.scroll_to(y=max(0, self.scroll_y - removed_height), animate=False, immediate=True)

    @staticmethod
    def _same_message(entry: Widget, doomed: list[Widget]) -> bool:
        """Keep removing while `entry` belongs to the message just removed (tool blocks of a reply)."""
        last_id = getattr(doomed[-1], "message_id", None) if doomed else None
        return last_id is not None and getattr(entry, "message_id", None) == last_id

    async def _set_has_older(self, has_older: bool) -> None:
        self.has_older = has_older
        markers = self.query_children(OlderMarker)
        if has_older and not markers:
            await self.mount(OlderMarker(), before=0)
        elif not has_older and markers:
            await markers.remove()
        elif markers:
            markers.first().set_loading(self._loading_older)

    # -- paging older messages ---------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value <= 0 < old_value:
            self.request_older()

    def on_mouse_scroll_up(self) -> None:
        if self.scroll_y <= 0:
            self.request_older()

    def _fill_if_short(self) -> None:
        """A short tail that does not fill the view cannot be scrolled: ask for more at once."""
        if self.max_scroll_y == 0:
            self.request_older()

    def request_older(self) -> None:
        """Post `LoadOlder` once per page while older messages exist."""
        oldest = self.oldest_message_id
        if not self.has_older or self._loading_older or oldest is None:
            return
        self._loading_older = True
        for marker in self.query_children(OlderMarker):
            marker.set_loading(True)
        self.post_message(self.LoadOlder(self.session_id, oldest))

    @on(AnnouncementView.Selected)
    def _open_child(self, event: AnnouncementView.Selected) -> None:
        event.stop()
        self.post_message(self.OpenSession(event.child_session_id))
