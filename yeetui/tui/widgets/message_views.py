"""The views a ConversationView is made of: one per user/assistant message, plus announcements, steering,
notices and tool blocks (`tool_views.py`).

Assistant text is Markdown drawn by `AnswerText`s (`markdown_text.py`: rendered once per width, and block by block
while it streams; see `AssistantMessageView`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message as TextualMessage
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from yeetui.messages import Message, ThinkingPart, attachment_note
from yeetui.tui.textual_workarounds import SizedByLayout
from yeetui.tui.widgets.markdown_text import (
    AnswerText,
    MarkdownBlocks,
    RenderedMarkdown,
    markdown_blocks,
)
from yeetui.tui.widgets.render_text import (
    ANNOUNCEMENT_LINES,
    inline_markdown,
    preview,
    split_announcement,
    yeetui_notes,
)
from yeetui.tui.widgets.tool_views import Entry

_GUIDANCE_RE = re.compile(r"^\[Guidance from ([^\]]+)\]\s*")

FLUSH_INTERVAL = 0.05
"""Seconds between draws of a streaming answer's buffered deltas (deltas arrive far faster)."""
TYPING_FLUSH_INTERVAL = 0.25
"""The same while the user types (see `Pacing`)."""
TYPING_GRACE = 0.5
"""Seconds after a keystroke during which the user counts as typing."""


class Pacing:
    """How often, and when, streamed text is drawn: every `FLUSH_INTERVAL`, but only every
    `TYPING_FLUSH_INTERVAL` while the user types. Each draw of a growing answer can cost a layout of the screen
    and a repaint of the conversation (a new line scrolls it), and a key that arrives meanwhile waits for it:
    while keys come, their echo goes first and the answer catches up in bigger steps (nothing is dropped,
    only drawn less often). A draw that falls due while the user types is also `hold`-ed until the next key's
    echo is on screen (`echoed`, which the screen calls after that refresh), so it runs in the gap between
    two keys rather than in the way of one."""

    def __init__(self) -> None:
        self._typed_at = -math.inf
        self._held: list[Callable[[], Awaitable[None]]] = []

    def typed(self) -> None:
        self._typed_at = time.monotonic()

    def typed_since(self, moment: float) -> bool:
        """A key came after `moment` (a `time.monotonic()` reading)."""
        return self._typed_at > moment

    @property
    def typing(self) -> bool:
        """True within `TYPING_GRACE` of the last key."""
        return time.monotonic() - self._typed_at < TYPING_GRACE

    @property
    def interval(self) -> float:
        return TYPING_FLUSH_INTERVAL if self.typing else FLUSH_INTERVAL

    def hold(self, draw: Callable[[], Awaitable[None]]) -> None:
        """Run `draw` once the next key's echo is drawn (the caller draws anyway if no key comes)."""
        if draw not in self._held:
            self._held.append(draw)

    async def echoed(self) -> None:
        """A key's echo is on screen: run the draws held for this moment."""
        draws, self._held = self._held, []
        for draw in draws:
            await draw()


FREEZE_AT = 8
"""Blocks the open end of a streaming answer may hold before the older ones are frozen (see
`AssistantMessageView`): it is rendered again on every draw, so the fewer the cheaper."""
FREEZE_AT_TYPING = 3 * FREEZE_AT
"""The same while the user types: a freeze mounts a widget, a layout of the screen that a key typed meanwhile
waits for, and the open end, drawn block by block, costs little more for a few more blocks."""
KEEP_LIVE = 2
"""Blocks that stay open after a freeze: the last one, which a later delta may still change (a list or table
growing, a paragraph that turns out to be a setext heading), and the one before it."""
RESERVE_STEP = 8
"""While the user types, the open end of a streaming answer takes room ahead of its text at least this many
lines at a time (see `AssistantMessageView._show_tail`)."""


def thinking_text(message: Message) -> str:
    parts = [p for p in message.parts if isinstance(p, ThinkingPart)]
    return "\n\n".join("(redacted thinking)" if p.redacted else p.text for p in parts)


class UserMessageView(Entry, Static):
    DEFAULT_CSS = """
    UserMessageView {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $primary;
        background: $primary 8%;
    }
    """

    def __init__(self, text: str, *, message_id: int | None = None,
                 attachments: Sequence[dict[str, Any]] = ()) -> None:
        self.message_id = message_id
        self.text = text
        notes = [Content.styled(f"\n📎 attached {attachment_note(meta)}", "$text-muted") for meta in attachments]
        super().__init__(Content.assemble(("you", "bold"), "\n", text, *notes))


class ThinkingBlock(Collapsible):
    DEFAULT_CSS = """
    ThinkingBlock {
        background: transparent;
        border-top: none;
        padding: 0;
        margin: 0;
        color: $text-muted;
        & > CollapsibleTitle { color: $text-muted; text-style: italic; padding: 0 1; }
        & > Contents { padding: 0 1 0 3; }
        & .thinking-text { color: $text-muted; text-style: italic; }
    }
    """

    def __init__(self, text: str = "") -> None:
        self.text = text
        self._body = Static(Content(text), classes="thinking-text")
        super().__init__(self._body, title="thinking", collapsed=True, collapsed_symbol="▸", expanded_symbol="▾")

    def set_text(self, text: str) -> None:
        self.text = text
        self._body.update(Content(text))


class AssistantMessageView(SizedByLayout, Entry, Vertical):
    """An assistant message: optional thinking, then the text. Streams while `live`.

    The text is Rich Markdown in `AnswerText`s, rendered once per width, streaming or not. While it streams,
    the open end of the answer (`_tail`) is one `AnswerText` drawn again on each write (`MarkdownBlocks`: only
    the blocks the write changed are rendered again), and once it holds more than `FREEZE_AT` blocks, all but
    the last `KEEP_LIVE` move, rendered as they are, into a `.frozen` one before it that is never rendered
    again. A write so costs the same at 40 KB as at 4 KB, and one widget's worth of layout.

    (Textual's own `Markdown` widget, written through a `MarkdownStream`, keeps a child widget per block, and
    the screen lays them all out on every write: a 40 KB answer had ~1,800 children and took most of a core,
    and typing lagged by a third of a second.)"""

    BLANK = True
    """It draws nothing of its own (no background, border or padding; its margin lies outside it): Textual
    then paints its lines as one blank strip instead of rendering each through its styles, which it would
    do for every visible line each time the view grows by a line while the answer streams."""

    DEFAULT_CSS = """
    AssistantMessageView {
        height: auto;
        margin: 1 0 0 0;
        & > .body { padding: 0 1; margin: 0; }
        & > .interrupted { color: $text-warning; padding: 0 1; }
    }
    """

    def __init__(self, text: str = "", thinking: str = "", *, message_id: int | None = None, live: bool = False,
                 interrupted: bool = False, pacing: Pacing | None = None) -> None:
        super().__init__()
        self.message_id = message_id
        self.live = live
        self.pacing = pacing or Pacing()
        self.text = text
        self.thinking = thinking
        self.interrupted = interrupted
        self._text_buffer: list[str] = []
        self._thinking_buffer: list[str] = []
        self._timer: Timer | None = None
        self._frozen = ""
        """The start of the text, shown by the `.frozen` `AnswerText`s before `_body`."""
        self._tail = text
        """The rest of the text, shown by `_body`."""
        self._frozen_gap: bool | None = None
        """The blank-line flag of the last frozen block (None: nothing frozen; see `MarkdownBlocks`)."""
        self._tail_blocks: dict[str, tuple[RenderedMarkdown, bool]] = {}
        """The open end's blocks as last drawn, by their text (a write renders again only new texts)."""
        self._tail_split: list[tuple[str, bool]] = []
        self._tail_split_text = ""
        """The open end's text as last cut into blocks (`markdown_blocks`), and that text."""
        self._tail_size: tuple[int, int] | None = None
        """The width `_body` was last rendered at while streaming, and the height it took then."""
        self._tail_lines = 0
        """Lines the open end's text took at its last draw (how fast it grows: see `_show_tail`)."""
        self._tail_drawn: MarkdownBlocks | None = None
        """What the open end showed at its last draw while streaming."""
        self._reserved = 0
        """Lines `_body` takes at least while the user types (0: as many as its text)."""
        self._body = AnswerText(classes="body")

    # -- composition -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        if self.thinking:
            yield ThinkingBlock(self.thinking)
        self._body.update(self._rich(self.text))
        self._body.display = bool(self.text.strip()) or self.live
        yield self._body
        if self.interrupted:
            yield Static("(interrupted)", classes="interrupted")

    def _rich(self, text: str) -> RenderedMarkdown:
        dark = self.app.current_theme.dark if self.is_attached else True
        return RenderedMarkdown(text, code_theme="monokai" if dark else "default")

    @property
    def source(self) -> str:
        """The text as shown (for a live message: everything written so far, buffered or not)."""
        if self.live:
            return self._frozen + self._tail + "".join(self._text_buffer)
        return self.text

    @property
    def shown_text(self) -> str:
        """The text on screen: for a live message, what was written so far, less what waits to be."""
        return self._frozen + self._tail if self.live else self.text

    # -- streaming ---------------------------------------------------------------------------------

    def append_text(self, delta: str) -> None:
        self._text_buffer.append(delta)
        self._schedule()

    def append_thinking(self, delta: str) -> None:
        self._thinking_buffer.append(delta)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is None:
            self._timer = self.set_timer(self.pacing.interval, self._due, name="stream-flush")

    async def _due(self) -> None:
        """The buffered deltas are due: drawn now or, while the user types, right after the next key's echo
        (at the latest `TYPING_GRACE` from now, should no key come)."""
        if self._timer is not None:
            self._timer.stop()
        if self.pacing.typing:
            self._timer = self.set_timer(TYPING_GRACE, self.flush, name="stream-flush")
            self.pacing.hold(self._flush_held)
        else:
            await self.flush()

    async def _flush_held(self) -> None:
        if self.is_attached:
            await self.flush()

    async def flush(self) -> None:
        """Show everything buffered: the text's open end rendered again, the thinking in its block."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._thinking_buffer:
            self.thinking += "".join(self._thinking_buffer)
            self._thinking_buffer.clear()
            await self._show_thinking(self.thinking)
        if self._text_buffer and self.live:
            self._tail += "".join(self._text_buffer)
            self._text_buffer.clear()
            blocks = self._blocks(self._tail)
            if len(blocks) > (FREEZE_AT_TYPING if self.pacing.typing else FREEZE_AT):
                await self._freeze(blocks[:-KEEP_LIVE])
                blocks = blocks[-KEEP_LIVE:]
            self._show_tail(MarkdownBlocks(blocks, after=self._frozen_gap))

    def _blocks(self, text: str) -> list[tuple[RenderedMarkdown, bool]]:
        """`text`'s blocks, rendered: those drawn before as they were, the others new. When `text` continues
        the text split last time, only its end is parsed again, from the start of the last `KEEP_LIVE` blocks
        (a write can change only those: see `KEEP_LIVE`)."""
        split = self._tail_split
        if len(split) > KEEP_LIVE and text.startswith(self._tail_split_text):
            kept = split[:-KEEP_LIVE]
            split = kept + markdown_blocks(text[sum(len(source) for source, _ in kept):])
        else:
            split = markdown_blocks(text)
        self._tail_split, self._tail_split_text = split, text
        drawn, self._tail_blocks = self._tail_blocks, {}
        blocks = []
        for source, gap in split:
            block = drawn.get(source) or (self._rich(source), gap)
            self._tail_blocks[source] = block
            blocks.append(block)
        return blocks

    def _show_tail(self, rich: MarkdownBlocks) -> None:
        """Draw the open end again. Most writes add words, not lines: while its height stays the same, the
        screen is spared a layout (and a scroll of everything on it), and only the lines from the first block
        that changed on are drawn again.

        While the user types, it also takes room ahead of its text (blank lines below it that the next
        writes fill): a line more then costs a redraw of this one widget rather than a layout of the screen
        and a repaint of the scrolled view, which a key typed meanwhile waits for. The room is taken for
        about two more writes like the last one (at least `RESERVE_STEP` lines, at most half the view, so the
        text never leaves it). Once the typing stops it shrinks back to its text."""
        width = self._body.content_size.width
        per_block = rich.block_lines(self.app, width) if width and self._body.display else None
        lines = sum(per_block) if per_block is not None else None
        reserved = 0
        if lines is not None and self.pacing.typing:
            reserved = self._reserved
            if lines >= reserved:  # full: room for at least one line more
                grown = lines - self._tail_lines
                view = self.parent.size.height if isinstance(self.parent, Widget) else 0
                reserved = lines + 1 + max(RESERVE_STEP, min(2 * grown, view // 2))
        self._tail_lines = lines or 0
        if reserved != self._reserved:
            self._reserved = reserved
            self._body.styles.min_height = reserved or None
        size = (width, max(lines, reserved)) if lines is not None else None
        drawn, self._tail_drawn = self._tail_drawn, rich
        if per_block is not None and size == self._tail_size and drawn is not None and drawn.after == rich.after:
            same = 0
            for old, new in zip(drawn.blocks, rich.blocks, strict=False):
                if old[0] is not new[0] or old[1] != new[1]:
                    break
                same += 1
            self._body.redraw_from(rich, sum(per_block[:same]))
        else:
            self._body.update(rich, layout=size is None or size != self._tail_size)
        self._tail_size = size
        self._body.display = True

    def _release_reserve(self) -> None:
        if self._reserved:
            self._reserved = 0
            self._body.styles.min_height = None

    async def _freeze(self, blocks: Sequence[tuple[RenderedMarkdown, bool]]) -> None:
        """Move finished blocks, the first of the open end, into a frozen `AnswerText` (see the class docstring)."""
        frozen = MarkdownBlocks(blocks, after=self._frozen_gap)
        self._tail = self._tail[len(frozen.text):]
        self._frozen += frozen.text
        self._frozen_gap = frozen.gap
        self._tail_size = None
        if self._reserved:  # the room the frozen lines took moves with them: the answer keeps its height
            width = self._body.content_size.width
            taken = frozen.height(self.app, width) if width else 0
            self._reserved = max(0, self._reserved - taken) if width else 0
            self._tail_lines = max(0, self._tail_lines - taken)
            self._body.styles.min_height = self._reserved or None
        await self.mount(AnswerText(frozen, classes="body frozen"), before=self._body)

    async def _show_thinking(self, text: str) -> None:
        blocks = self.query(ThinkingBlock)
        if blocks:
            blocks.first().set_text(text)
        elif text:
            await self.mount(ThinkingBlock(text), before=0)

    async def finish(self, text: str, thinking: str, *, interrupted: bool = False) -> None:
        """The committed message arrived: stop streaming; what is shown is kept unless the text differs."""
        await self.flush()
        self._release_reserve()
        was_live, self.live = self.live, False
        if not was_live or self._frozen + self._tail != text:  # (rare) the committed text is not what streamed
            await self._unfreeze()
            self._tail = text
            self._body.update(self._rich(text))
        self.text = text
        self._body.display = bool(text.strip())
        if thinking != self.thinking:
            self.thinking = thinking
            await self._show_thinking(thinking)
        if interrupted and not self.interrupted:
            self.interrupted = True
            await self.mount(Static("(interrupted)", classes="interrupted"))

    async def restart(self) -> None:
        """The provider stream restarted: drop what was shown; new deltas follow."""
        self._text_buffer.clear()
        self._thinking_buffer.clear()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        await self._unfreeze()
        self._release_reserve()
        self._tail = self.text = self.thinking = ""
        self._body.update(self._rich(""))
        await self.query(ThinkingBlock).remove()

    async def _unfreeze(self) -> None:
        self._frozen = ""
        self._frozen_gap = None
        self._tail_size = None
        self._tail_blocks.clear()
        self._tail_split, self._tail_split_text = [], ""
        await self.query(".frozen").remove()

    async def abandon(self) -> None:
        """The run ended without committing this message (cancelled): keep what was shown, marked."""
        await self.finish(self.source, self.thinking + "".join(self._thinking_buffer), interrupted=True)


class AnnouncementView(Entry, Static, can_focus=True):
    """A subagent's completion as a bordered block; click or Enter opens the child's session."""

    BINDINGS = [Binding("enter", "open", "Open session", id="conversation.open_child", show=False)]

    DEFAULT_CSS = """
    AnnouncementView {
        margin: 1 0 0 2;
        padding: 0 1;
        border: round $accent 60%;
        border-title-color: $accent;
        border-subtitle-color: $text-muted;
        background: $accent 5%;
        &.-failed, &.-timeout { border: round $error 70%; border-title-color: $text-error; }
        &.-cancelled, &.-interrupted, &.-waiting_user { border: round $warning 70%;
                                                         border-title-color: $text-warning; }
        &.-completed { border: round $success 60%; border-title-color: $text-success; }
        &:focus { border: round $accent; background: $accent 12%; }
        &.-linked { pointer: pointer; }
        &:hover.-linked { background: $accent 12%; }
    }
    """

    class Selected(TextualMessage):
        def __init__(self, child_session_id: str) -> None:
            super().__init__()
            self.child_session_id = child_session_id

    def __init__(self, message: Message, *, message_id: int | None = None) -> None:
        meta: dict[str, Any] = message.meta
        self.message_id = message_id
        self.label: str = meta.get("label") or "subagent"
        self.status: str = meta.get("status") or ""
        self.child_session_id: str | None = meta.get("child_session_id")
        head, body = split_announcement(message.text)
        lines = [Content(head)] if head else []
        if body:  # the child's Markdown, styled (not its raw ** and `)
            lines.append(inline_markdown(preview(body, max_lines=ANNOUNCEMENT_LINES, max_chars=800)))
        for note in yeetui_notes(message.text):  # where its work is and how to take it: never cut
            lines.append(Content.styled(f"⎇ {note}", "$accent"))
        super().__init__(Content("\n").join(lines) if lines else Content(self.label))
        self.border_title = f"↳ {self.label}" + (f" · {self.status}" if self.status else "")
        if self.child_session_id:
            self.border_subtitle = "enter/click: open session"
            self.add_class("-linked")
        if self.status:
            self.add_class(f"-{self.status}")

    def on_click(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        if self.child_session_id:
            self.post_message(self.Selected(self.child_session_id))


class SteerView(Entry, Static):
    """Guidance sent into a run, or the runner's reminder: small and dimmed."""

    DEFAULT_CSS = """
    SteerView { margin: 1 0 0 2; padding: 0 1; color: $text-muted; text-style: italic; }
    """

    def __init__(self, message: Message, *, message_id: int | None = None) -> None:
        self.message_id = message_id
        text = message.text
        if message.meta.get("nudge"):
            kind = "reminder"
        elif match := _GUIDANCE_RE.match(text):
            kind, text = f"guidance from {match.group(1)}", text[match.end():]
        else:
            kind = "guidance"
        super().__init__(Content.assemble((f"↪ {kind}: ", "bold"), preview(text.strip(), max_lines=3)))


class NoticeView(Entry, Static):
    """A warning or error as a readable line (wrapped, never a traceback)."""

    ICONS = {"info": "ℹ", "warning": "⚠", "error": "✗"}
    DEFAULT_CSS = """
    NoticeView {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
        &.-warning { color: $text-warning; }
        &.-error { color: $text-error; background: $error 10%; }
    }
    """

    def __init__(self, level: str, text: str) -> None:
        self.level = level
        super().__init__(Content(f"{self.ICONS.get(level, '•')} {text}"), classes=f"-{level}")


class OlderMarker(Static):
    """The top line while older messages exist in the store but are not mounted."""

    DEFAULT_CSS = """
    OlderMarker { color: $text-muted; text-align: center; width: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__("↑ older messages · scroll up to load")
        self.loading = False

    def set_loading(self, loading: bool) -> None:
        if loading != self.loading:
            self.loading = loading
            self.update("loading older messages…" if loading else "↑ older messages · scroll up to load")
