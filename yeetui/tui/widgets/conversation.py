"""One session's transcript: a scrolling column of message views, fed plain data by the screen.

Only what is near the screen is mounted (`EntryWindow`): `load` mounts about two screens of the newest
messages it is given and holds the rest; scrolling up mounts held messages above the screen, keeping the
visible lines in place, and asks for the next page (`LoadOlder` → `prepend`) before they run out. While the
user reads far above the end, views far below are unmounted too and come back as they scroll down. The
assistant text is a light `Static` that renders its Markdown once per width (while it streams, only its open
end is rendered again). The view sticks to the end while the user is at the end
(Textual's `anchor()`), and stays put once they scroll up.

`jump_to_start` / `jump_to_end` (Home / End) show the first or the last page of the session straight from
the store (`Jump` → `show_start` / `show_end`) rather than paging through everything between; from the
start, newer pages come as the user scrolls down (`LoadNewer` → `append_newer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from textual import on
from textual.message import Message as TextualMessage
from textual.widget import Widget

from yeetui import events as ev
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, typed_text
from yeetui.store.records import StoredMessage
from yeetui.tui.widgets.conversation_window import EntryWindow
from yeetui.tui.widgets.message_views import (
    AnnouncementView,
    AssistantMessageView,
    NoticeView,
    OlderMarker,
    Pacing,
    SteerView,
    UserMessageView,
    thinking_text,
)
from yeetui.tui.widgets.render_text import Item, chunk_end, chunk_start
from yeetui.tui.widgets.tool_views import Entry, ToolCallView

WINDOW = 60
"""Message views kept mounted at most (a tenth fewer after each trim)."""


def final_summary(call: ToolCallPart) -> str | None:
    """The Markdown an agent ends its run with (`complete`'s `output`), or None for any other call."""
    output = call.arguments.get("output") if call.name == "complete" and isinstance(call.arguments, dict) else None
    return output if isinstance(output, str) and output.strip() else None


class ConversationView(EntryWindow):
    DEFAULT_CSS = """
    ConversationView {
        height: 1fr;
        padding: 0 1 1 1;
        background: $background;
        scrollbar-size-vertical: 1;
    }
    """

    class LoadOlder(TextualMessage):
        """Older messages exist and the user is getting near them: the screen should `prepend` a page."""

        def __init__(self, session_id: str, before_message_id: int) -> None:
            super().__init__()
            self.session_id = session_id
            self.before_message_id = before_message_id

    class LoadNewer(TextualMessage):
        """The user scrolls down towards messages only the store has: the screen should `append_newer` the
        page after `after_message_id` (and before `before_message_id`, when something follows the gap)."""

        def __init__(self, session_id: str, after_message_id: int | None, before_message_id: int | None) -> None:
            super().__init__()
            self.session_id = session_id
            self.after_message_id = after_message_id
            self.before_message_id = before_message_id

    class Jump(TextualMessage):
        """Show the session's first page (`show_start`) or its last (`show_end`), fetched from the store."""

        def __init__(self, session_id: str, *, to_end: bool) -> None:
            super().__init__()
            self.session_id = session_id
            self.to_end = to_end

    class OpenSession(TextualMessage):
        """An announcement's child session was chosen."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, session_id: str, *, window: int = WINDOW, pacing: Pacing | None = None,
                 **kw: object) -> None:
        super().__init__(window=window, **kw)
        self.session_id = session_id
        self.pacing = pacing or Pacing()
        """How often streamed text is drawn (shared with the screen, which says when the user types)."""
        self._loading_older = False
        self._loading_newer = False
        self._jumping = False
        self._dropped: list[Item] = []
        """Messages committed while newer ones were only in the store and a page of them was on its way."""
        self._live: AssistantMessageView | None = None
        self._live_run: str | None = None
        self._tools: dict[str, ToolCallView] = {}
        self._final: set[str] = set()
        """Call ids of `complete` calls shown as the agent's answer (their "done" result shows nothing)."""
        self._first: dict[int, Widget] = {}
        """Message id → the mounted view that carries the message's items."""

    def on_mount(self) -> None:
        self.anchor()

    @property
    def paging(self) -> bool:
        """True while a step is under way or a page (or a jump) has been asked of the store."""
        return super().paging or self._loading_older or self._loading_newer or self._jumping

    @property
    def oldest_message_id(self) -> int | None:
        """The oldest mounted message."""
        ids = [e.message_id for e in self.entries if isinstance(e, Entry) and e.message_id is not None]
        return min(ids) if ids else None

    # -- whole transcripts -------------------------------------------------------------------------

    async def load(self, messages: list[StoredMessage], *, has_older: bool,
                   errors: Mapping[int, Sequence[str]] | None = None) -> None:
        """Replace everything with `messages` (the tail of the session): mount the newest, hold the rest.
        `errors`: error lines to show after the message of each id (how earlier runs ended)."""
        self._live, self._live_run = None, None
        self._tools.clear()
        self._first.clear()
        self._loading_older = False
        tail = messages[-1] if messages else None
        if tail is not None and tail.partial and tail.message.role == "assistant" and tail.run_id and \
                tail.id not in (errors or {}):  # (a run that ended, stopped mid-answer, is not continued)
            # A run is (or was) mid-stream: its checkpoint becomes the live view that deltas continue.
            messages = messages[:-1]
            self._live = AssistantMessageView(tail.message.text, thinking_text(tail.message),
                                              message_id=tail.id, live=True, pacing=self.pacing)
            self._live_run = tail.run_id
        items: list[Item] = []
        for stored in messages:
            items.append(Item(stored.id, stored.message, stored.partial))
            items.extend(Item(None, notice=("error", text)) for text in (errors or {}).get(stored.id, ()))
        views = self._build(self._reset(items))
        if self._live is not None:
            views.append(self._live)
        self.has_older = has_older
        marker: list[Widget] = [OlderMarker()] if self._held or has_older else []
        with self.app.batch_update():
            await self.remove_children()
            await self.mount_all(marker + views)
        self.anchor()
        self.call_after_refresh(self._check)

    async def prepend(self, messages: list[StoredMessage], *, has_older: bool,
                      before_message_id: int | None = None) -> None:
        """An older page from the store: hold it; it is mounted as the user scrolls up to it.
        `before_message_id`: what the page was asked for (`LoadOlder`); if the oldest messages known have
        changed since (dropped from memory while it was on its way), the page would leave a hole: it is
        dropped, and asked for again if still wanted."""
        self._loading_older = False
        known = self._oldest_known_id()
        if before_message_id is not None and known is not None and before_message_id != known:
            self._check()
            return
        self._hold_older([Item(m.id, m.message, m.partial) for m in messages if known is None or m.id < known])
        self.has_older = has_older
        await self._window_changed()
        self._check()

    def _build(self, items: Sequence[Item]) -> list[Widget]:
        views: list[Widget] = []
        for item in items:
            if item.notice is not None:
                notice = NoticeView(*item.notice)
                notice.items = (item,)
                views.append(notice)
            elif item.message is not None:
                made = self._views_for(item.message, item.id, interrupted=item.partial)
                self._give_items(item, made)
                views.extend(made)
        return views

    def _give_items(self, item: Item, views: Sequence[Widget]) -> None:
        """Give `item` to the view that rebuilds it: its first new view, else (a tool result filling a
        block already shown) the first view of the call's message."""
        owner: Widget | None = views[0] if views else None
        if owner is None and item.message is not None and item.message.tool_results:
            block = self._tools.get(item.message.tool_results[0].call_id)
            owner = self._first.get(block.message_id, block) if block and block.message_id else block
        if owner is not None:
            owner.items = (*owner.items, item)  # type: ignore[attr-defined]  # message views and tool blocks have items
            if item.id is not None and views:
                self._first[item.id] = owner

    def _views_for(self, message: Message, message_id: int | None, *, interrupted: bool = False) -> list[Widget]:
        """New views for one committed message; tool results fill their call's block instead."""
        meta = message.meta
        if message.role == "tool":
            orphans: list[Widget] = []
            for part in message.tool_results:
                if part.call_id in self._final and not part.is_error:
                    continue
                block = self._tools.get(part.call_id)
                if block is None:
                    block = ToolCallView(part.call_id, part.name or "tool", None, message_id=message_id)
                    self._tools[part.call_id] = block
                    orphans.append(block)
                    block.mark_first(len(orphans) == 1)
                block.set_result(part.content, part.is_error)
            return orphans
        if message.role == "user":
            if meta.get("announcement"):
                return [AnnouncementView(message, message_id=message_id)]
            if meta.get("steer") or meta.get("nudge"):
                return [SteerView(message, message_id=message_id)]
            return [UserMessageView(typed_text(message), message_id=message_id,
                                    attachments=message.meta.get("attachments") or ())]
        views: list[Widget] = []
        text, thinking = message.text, thinking_text(message)
        interrupted = interrupted or bool(meta.get("interrupted"))
        if text.strip() or thinking or interrupted:
            views.append(AssistantMessageView(text, thinking, message_id=message_id, interrupted=interrupted))
        views.extend(self._tool_blocks(message.tool_calls, message_id))
        return views

    def _tool_blocks(self, calls: Iterable[ToolCallPart], message_id: int | None) -> list[Widget]:
        """Views for a message's tool calls: a block per call, except that the summary an agent ends its run
        with (`complete`'s output) is shown as its answer, rendered as Markdown like any reply."""
        blocks: list[ToolCallView] = []
        answers: list[Widget] = []
        for call in calls:
            summary = final_summary(call)
            if summary is not None:  # built again when paging mounts the message again
                self._final.add(call.id)
                answers.append(AssistantMessageView(summary, "", message_id=message_id))
                continue
            existing = self._tools.get(call.id)
            if existing is not None and existing.has_call:
                existing.message_id = message_id
                continue
            block = ToolCallView(call.id, call.name, call.arguments, message_id=message_id)
            if existing is not None:  # a result-only block from a later page: the call now has its place
                if existing.result is not None:
                    block.set_result(existing.result, existing.is_error)
                block.items = existing.items
                self._forget([existing])
                if existing.is_attached:
                    self._unmounting(existing)
                    existing.remove()
            self._tools[call.id] = block
            blocks.append(block)
        if blocks:
            blocks[0].mark_first()
        return [*blocks, *answers]

    def _forget(self, widgets: Sequence[Widget]) -> None:
        for widget in widgets:
            if isinstance(widget, ToolCallView) and self._tools.get(widget.call_id) is widget:
                del self._tools[widget.call_id]
            message_id = getattr(widget, "message_id", None)
            if message_id is not None and self._first.get(message_id) is widget:
                del self._first[message_id]

    # -- drawing the domain's events ---------------------------------------------------------------

    async def draw(self, event: ev.Event) -> bool:
        """Draw `event` in the conversation it belongs to when it is one of the view's own (a stream, a message, a
        tool call, a retry); whether it was."""
        match event:
            case ev.TextDelta():
                await self.stream_text(event.run_id, event.text)
            case ev.ThinkingDelta():
                await self.stream_thinking(event.run_id, event.text)
            case ev.StreamRestarted():
                await self.stream_restarted(event.run_id)
            case ev.MessageCommitted():
                await self.add_message(event.message, event.message_id, run_id=event.run_id or None)
            case ev.RunStatusChanged() if event.status.is_final:
                await self.end_stream(event.run_id)
            case ev.ToolCallStarted():
                await self.tool_started(event.call_id, event.name, event.arguments)
            case ev.ToolCallFinished():
                await self.tool_finished(event.call_id, event.name, event.content, event.is_error)
            case ev.ProviderRetrying():
                await self.add_notice("warning", event.text)
            case _:
                return False
        return True

    # -- committed messages ------------------------------------------------------------------------

    async def add_message(self, message: Message, message_id: int, *, run_id: str | None = None) -> None:
        """A committed message. The assistant message of a live stream finishes that view in place."""
        item, live = Item(message_id, message), self._live
        if message.role == "assistant" and live is not None and run_id in (None, self._live_run):
            self._live, self._live_run = None, None
            live.message_id = message_id
            thinking = thinking_text(message)
            await live.finish(message.text, thinking, interrupted=bool(message.meta.get("interrupted")))
            kept = bool(message.text.strip() or thinking or live.interrupted)
            if not kept:  # a tool-call-only reply whose stream was restarted away: nothing left to show
                self._unmounting(live)
                await live.remove()
            views: list[Widget] = list(self._tool_blocks(message.tool_calls, message_id))
            shown = [live] if kept else views
            self._give_items(item, shown[:1])
        else:
            if live is not None and message.role == "user":
                await self.end_stream()
            filled = message.role == "tool" and all(p.call_id in self._tools or p.call_id in self._final
                                                    for p in message.tool_results)
            if self._gap_at_end() and not filled:
                if not self.has_newer:
                    self._below.append(item)  # the user reads far above: it is mounted when they come back
                elif self._loading_newer:
                    self._dropped.append(item)  # the page on its way may have been read before it was stored
                return
            views = self._views_for(message, message_id)
            self._give_items(item, views)
        await self._mount_at_end(views)

    async def end_stream(self, run_id: str | None = None) -> None:
        """The run ended without committing its streamed text (cancelled, failed): keep it, marked."""
        live = self._live
        if live is None or run_id not in (None, self._live_run):
            return
        self._live, self._live_run = None, None
        await live.abandon()
        parts = ((ThinkingPart(text=live.thinking),) if live.thinking else ()) + (TextPart(text=live.text),)
        live.items = (Item(None, Message(role="assistant", parts=parts, meta={"interrupted": True})),)

    # -- streaming ---------------------------------------------------------------------------------

    async def _live_view(self, run_id: str) -> AssistantMessageView:
        if self._live is not None and self._live_run != run_id:
            await self.end_stream()
        if self._live is None:
            self._live, self._live_run = AssistantMessageView(live=True, pacing=self.pacing), run_id
            await self._mount_at_end([self._live])
        return self._live

    async def stream_text(self, run_id: str, text: str) -> None:
        (await self._live_view(run_id)).append_text(text)

    async def stream_thinking(self, run_id: str, text: str) -> None:
        (await self._live_view(run_id)).append_thinking(text)

    async def stream_restarted(self, run_id: str) -> None:
        if self._live is not None and self._live_run == run_id:
            await self._live.restart()

    # -- tools and notices -------------------------------------------------------------------------

    async def tool_started(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        if call_id in self._final or final_summary(ToolCallPart(id=call_id, name=name, arguments=arguments)):
            return  # the answer: shown with the committed message, not as a tool block
        block = self._tools.get(call_id)
        if block is None:
            block = ToolCallView(call_id, name, arguments)
            await self._mount_block(block)
        elif not block.has_call:
            block.set_arguments(arguments)

    async def tool_finished(self, call_id: str, name: str, content: str, is_error: bool) -> None:
        if call_id in self._final and not is_error:
            return
        block = self._tools.get(call_id)
        if block is None:
            block = ToolCallView(call_id, name, None)
            await self._mount_block(block)
        block.set_result(content, is_error)

    async def _mount_block(self, block: ToolCallView) -> None:
        """A tool block that arrived by event rather than inside a committed message."""
        self._tools[block.call_id] = block
        if not isinstance(self.children[-1] if self.children else None, ToolCallView):
            block.mark_first()
        await self._mount_at_end([block])

    async def add_notice(self, level: str, text: str) -> None:
        item = Item(None, notice=(level, text))
        if self._gap_at_end() and not self.has_newer:
            self._below.append(item)
        else:  # past a gap of pages only the store has, it stays after them: the store does not keep notices
            await self._mount_at_end(self._build([item]))

    # -- older messages ----------------------------------------------------------------------------

    async def _window_changed(self) -> None:
        """The top line shows while older messages are held or in the store."""
        markers = self.query_children(OlderMarker)
        older = bool(self._held) or self.has_older
        if older and not markers:
            await self.mount(OlderMarker(), before=0)
        elif not older and markers:
            await markers.remove()
        elif markers:
            markers.first().set_loading(self._loading_older and not self._held)

    def _want_store_page(self) -> None:
        self.request_older()

    def _want_newer_page(self) -> None:
        if self._loading_newer or not self.has_newer:
            return
        last = next((item.id for item in reversed(self._below) if item.id is not None), None)
        if last is None:
            last = self._last_id_before_gap()
        self._loading_newer = True
        self.post_message(self.LoadNewer(self.session_id, last, self._first_id_after_gap()))

    def _last_id_before_gap(self) -> int | None:
        entries = self.entries
        end = entries.index(self._gap_at) if self._gap_at in entries else len(entries)
        return next((found for e in reversed(entries[:end])
                     if (found := getattr(e, "message_id", None)) is not None), None)

    def _first_id_after_gap(self) -> int | None:
        entries = self.entries
        if self._gap_at not in entries:
            return None
        return next((found for e in entries[entries.index(self._gap_at):]
                     if (found := getattr(e, "message_id", None)) is not None), None)

    async def append_newer(self, messages: list[StoredMessage], *, has_newer: bool) -> None:
        """A newer page from the store (asked for by `LoadNewer`): it joins the gap below the screen."""
        self._loading_newer = False
        items = self._page_items(messages)
        if not has_newer:  # the last page: what was committed while it was on its way, if it missed it
            seen = {item.id for item in items}
            items += [item for item in self._dropped if item.id not in seen]
        self._dropped.clear()
        self._hold_newer(items, more=has_newer)

    def _page_items(self, messages: Sequence[StoredMessage]) -> list[Item]:
        """Items of a page fetched from the store, less the live answer's checkpoint (its view is shown)."""
        return [Item(m.id, m.message, m.partial) for m in messages
                if not (m.partial and self._live is not None and m.run_id == self._live_run)]

    # -- jumping to either end ---------------------------------------------------------------------

    def _transient(self) -> list[Widget]:
        """Entries the store cannot rebuild yet: the live answer and the tool blocks streamed with it."""
        return [e for e in self.entries if not self._rebuildable(e)]

    def jump_to_start(self) -> None:
        """Show the first message of the session: at once if it is mounted, else from the store."""
        if self._held or self.has_older:
            if not self._jumping:
                self._jumping = True
                self.post_message(self.Jump(self.session_id, to_end=False))
            return
        self.anchor(False)
        self.scroll_home(animate=False, immediate=True)

    def jump_to_end(self) -> None:
        """Show the end of the session and follow it again."""
        if self._below or self.has_newer:
            if not self._jumping:
                self._jumping = True
                self.post_message(self.Jump(self.session_id, to_end=True))
            return
        self.anchor()  # scrolls to the end, and follows it again

    async def show_start(self, messages: list[StoredMessage], *, has_newer: bool) -> None:
        """The session's first page, from the store: mounted at the top; the rest of the page waits in the
        gap, newer pages come as the user scrolls down."""
        self._jumping = self._loading_older = self._loading_newer = False
        self._dropped.clear()
        items = self._page_items(messages)
        end = chunk_end(items, *self._chunk_rows())
        self.anchor(False)
        await self._replace([], items[:end], items[end:], has_newer=has_newer, keep=self._transient())
        self.scroll_home(animate=False, immediate=True)
        self.call_after_refresh(self._check)

    async def show_end(self, messages: list[StoredMessage], *, has_older: bool,
                       errors: Mapping[int, Sequence[str]] | None = None) -> None:
        """The session's last page, from the store (as when it opens), and the live answer after it."""
        self._jumping = self._loading_older = self._loading_newer = False
        self._dropped.clear()
        items: list[Item] = []
        for item in self._page_items(messages):
            items.append(item)
            items.extend(Item(None, notice=("error", text)) for text in (errors or {}).get(item.id or -1, ()))
        start = chunk_start(items, *self._chunk_rows())
        marker: list[Widget] = [OlderMarker()] if start or has_older else []
        await self._replace(marker, items[start:], [], held=items[:start], has_older=has_older,
                            keep=self._transient())
        self.anchor()  # scrolls to the end, and follows it again
        self.call_after_refresh(self._check)

    def request_older(self) -> None:
        """Post `LoadOlder` once per page while older messages exist in the store."""
        oldest = self._oldest_known_id()
        if not self.has_older or self._loading_older or oldest is None:
            return
        self._loading_older = True
        for marker in self.query_children(OlderMarker):
            marker.set_loading(not self._held)
        self.post_message(self.LoadOlder(self.session_id, oldest))

    def _oldest_known_id(self) -> int | None:
        held = next((item.id for item in self._held if item.id is not None), None)
        return held if held is not None else self.oldest_message_id

    @on(AnnouncementView.Selected)
    def _open_child(self, event: AnnouncementView.Selected) -> None:
        event.stop()
        self.post_message(self.OpenSession(event.child_session_id))
