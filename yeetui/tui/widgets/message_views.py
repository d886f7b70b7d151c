"""The views a ConversationView is made of: one per user/assistant message, plus announcements, steering,
notices and tool blocks (`tool_views.py`).

Assistant text is a light `Static` holding a `RenderedMarkdown` (Rich Markdown, rendered once per width);
a streaming answer is a few of them (see `AssistantMessageView`).
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment, Segments
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message as TextualMessage
from textual.strip import Strip
from textual.style import Style
from textual.timer import Timer
from textual.visual import Visual, visualize
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from yeetui.messages import Message, ThinkingPart, attachment_note
from yeetui.tui.textual_workarounds import MeasuredAfterEachUpdate, SizedByLayout
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
"""The same while the user types: a freeze mounts a Static, a layout of the screen that a key typed meanwhile
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


class RenderedMarkdown:
    """Finished Markdown as a Rich renderable that parses on first use and renders once per width.

    A `Static` renders its content twice per width (to measure its height, then to draw it) and again
    whenever it is redrawn; Markdown with highlighted code is the costliest thing in a transcript, so the
    segments are kept and replayed. Rich's Markdown ignores the height it is offered, so width is the key."""

    def __init__(self, text: str, *, code_theme: str) -> None:
        self.text = text
        self.code_theme = code_theme
        self._segments: dict[tuple[object, ...], list[Segment]] = {}
        self._heights: dict[int, int] = {}

    def height(self, app: App[Any], width: int) -> int:
        """Lines it takes at `width`, counted as Textual counts them (and rendered in the same cache slot)."""
        height = self._heights.get(width)
        if height is None:
            options = app.console_options.update_width(width).update(highlight=False)
            if len(self._heights) >= 2:
                del self._heights[next(iter(self._heights))]
            height = self._heights[width] = sum(text.count("\n") for text, _, _ in
                                                self.__rich_console__(app.console, options))
        return height

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> list[Segment]:
        key = (options.max_width, options.justify, options.overflow, options.no_wrap)
        segments = self._segments.get(key)
        if segments is None:
            if len(self._segments) >= 2:  # a terminal being resized: keep the last widths only
                del self._segments[next(iter(self._segments))]
            markdown = RichMarkdown(self.text, code_theme=self.code_theme)
            segments = self._segments[key] = list(console.render(markdown, options))
        return segments


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


@functools.cache
def _parser() -> MarkdownIt:
    """GFM-like, but without linkify: `conftest.py` must not turn into http://conftest.py while streaming
    (finished messages render through Rich, which does not linkify either). Built once: a parser keeps no
    state between documents."""
    return MarkdownIt("gfm-like").disable("linkify")


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


def block_starts(source: str) -> list[int]:
    """The line each top-level Markdown block of `source` starts on."""
    return [start for start, _ in _top_level_blocks(source)]


def _top_level_blocks(source: str) -> list[tuple[int, bool]]:
    """Each top-level block of `source`: the line it starts on, and whether it is a horizontal rule."""
    tokens = _parser().parse(source)
    return [(t.map[0], t.type == "hr") for t in tokens if t.level == 0 and t.nesting in (0, 1) and t.map is not None]


def markdown_blocks(source: str) -> list[tuple[str, bool]]:
    """`source` cut into its top-level Markdown blocks: each block's text, up to where the next one starts
    (blank lines before the first belong to it), and whether rendering the whole puts a blank line after it
    (Rich puts one after every block but a horizontal rule). The texts join up to `source`."""
    blocks = _top_level_blocks(source)
    if not blocks:
        return [(source, True)] if source else []
    offsets = [0]  # where each line starts (the parser counts lines by "\n", as `freeze` cuts)
    while (end := source.find("\n", offsets[-1])) != -1:
        offsets.append(end + 1)
    cuts = [0] + [offsets[min(start, len(offsets) - 1)] for start, _ in blocks[1:]] + [len(source)]
    return [(source[cuts[i]:cuts[i + 1]], not rule) for i, (_, rule) in enumerate(blocks)]


class MarkdownBlocks:
    """Markdown drawn block by block, each block a `RenderedMarkdown` (rendered once per width), with the
    blank lines rendering the whole would put between them: so it shows what rendering its whole text shows.

    A streaming answer's open end is one: a write renders again only the blocks it changed (mostly the last),
    where rendering the open end whole cost 8 ms for 400 characters with code and a table (Rich highlights
    code and lays tables out on every render); freezing hands finished blocks on as they are.

    Rich puts a blank line before a block when the element it closed last asks for one: the block before
    (every kind but a horizontal rule), or the block's own inner elements (a list's items, a quote's
    paragraphs), which a block rendered alone therefore starts with. `after`: the blank-line flag of the block
    drawn just before this run of blocks elsewhere (the frozen part before the open end), None at the start."""

    def __init__(self, blocks: Sequence[tuple[RenderedMarkdown, bool]], *, after: bool | None = None) -> None:
        self.blocks = tuple(blocks)
        self.after = after
        self.text = "".join(block.text for block, _ in self.blocks)

    @property
    def gap(self) -> bool | None:
        """The blank-line flag of its last block (what a run drawn after it takes as `after`)."""
        return self.blocks[-1][1] if self.blocks else self.after

    def block_lines(self, app: App[Any], width: int) -> list[int]:
        """Lines each block takes at `width`, with the blank line before it (see `RenderedMarkdown.height`)."""
        options = app.console_options.update_width(width).update(highlight=False)
        return [block.height(app, width) + blank for block, blank in self._blanks(app.console, options)]

    def height(self, app: App[Any], width: int) -> int:
        """Lines it takes at `width`."""
        return sum(self.block_lines(app, width))

    def _blanks(self, console: Console, options: ConsoleOptions) -> Iterator[tuple[RenderedMarkdown, bool]]:
        """Each block, and whether a blank line is drawn before it."""
        before = self.after
        for block, gap in self.blocks:
            segments = block.__rich_console__(console, options)
            yield block, bool(before) and not (segments and segments[0].text == "\n")
            before = gap

    def drawn_blocks(self, console: Console,
                     options: ConsoleOptions) -> Iterator[tuple[RenderedMarkdown, bool, list[Segment]]]:
        """Each block, whether a blank line is drawn before it, and its segments (that line included)."""
        for block, blank in self._blanks(console, options):
            segments = block.__rich_console__(console, options)
            yield block, blank, [Segment.line(), *segments] if blank else segments

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for _, _, segments in self.drawn_blocks(console, options):
            yield from segments


class AnswerText(MeasuredAfterEachUpdate, SizedByLayout, Widget):
    """A stretch of an answer's text (it grows as the answer streams).

    A `Static` would draw the same; this one draws less. A Static's update repaints all its lines and turns
    all of its text into lines again; the open end of a streaming answer is most of the screen while a write
    changes its last few lines. So `redraw_from` repaints only the lines from a given one on, and Markdown
    drawn block by block (`MarkdownBlocks`) is turned into lines block by block, each block once per width
    and style: a write costs the lines of the blocks it changed."""

    DEFAULT_CSS = """
    AnswerText { height: auto; }
    """

    def __init__(self, content: RenderableType = "", *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._content = content
        self._block_lines: dict[tuple[RenderedMarkdown, bool], list[Strip]] = {}
        """The lines of each block drawn last (by the block and whether a blank line comes before it)."""
        self._drawn_at: tuple[int, Style] | None = None
        """The width and style `_block_lines` were drawn at."""
        self._lines: list[Strip] | None = None
        """All the lines of the content, as drawn last (None: to draw again)."""

    @property
    def content(self) -> RenderableType:
        return self._content

    def render(self) -> RenderableType:
        return self._content

    def update(self, content: RenderableType, *, layout: bool = True) -> None:
        """Show `content`, all of it drawn again (and the screen laid out, with `layout`)."""
        self._content, self._lines = content, None
        self.refresh(layout=layout)

    def redraw_from(self, content: RenderableType, line: int) -> None:
        """Show `content`, which takes as many lines as what was shown and differs from it only from `line`
        on: only those lines are drawn again (no layout)."""
        self._content, self._lines = content, None
        width, height = self.content_size
        if line >= height or not width:
            self.refresh()
        else:
            self.refresh(Region(0, line, width, height - line))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if isinstance(self._content, RenderedMarkdown | MarkdownBlocks):
            return self._content.height(self.app, width) if width else 0
        return super().get_content_height(container, viewport, width)

    def render_line(self, y: int) -> Strip:
        content = self._content
        if not isinstance(content, MarkdownBlocks) or self.text_selection is not None:
            return super().render_line(y)  # (a selection is drawn over the whole text, as Textual draws it)
        lines = self._drawn_lines(content)
        return lines[y] if y < len(lines) else Strip.blank(self.size.width, self.visual_style.rich_style)

    def _drawn_lines(self, content: MarkdownBlocks) -> list[Strip]:
        width, style = self.size.width, self.visual_style
        if self._drawn_at != (width, style):
            self._drawn_at, self._block_lines, self._lines = (width, style), {}, None
        if self._lines is None:
            options = self.app.console_options.update_width(width).update(highlight=False)
            drawn, self._block_lines, lines = self._block_lines, {}, []
            for block, blank_before, segments in content.drawn_blocks(self.app.console, options):
                key = (block, blank_before)
                strips = drawn.get(key)
                if strips is None:
                    strips = Visual.to_strips(self, visualize(self, Segments(segments)), width, None, style)
                self._block_lines[key] = strips
                lines.extend(strips)
            self._lines = lines
        return self._lines


class AssistantMessageView(SizedByLayout, Entry, Vertical):
    """An assistant message: optional thinking, then the text. Streams while `live`.

    The text is Rich Markdown in `Static`s, rendered once per width, streaming or not. While it streams, the
    open end of the answer (`_tail`) is one Static drawn again on each write (`MarkdownBlocks`: only the
    blocks the write changed are rendered again), and once it holds more than `FREEZE_AT` blocks, all but the
    last `KEEP_LIVE` move, rendered as they are, into a `.frozen` Static before it that is never rendered
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
        """The start of the text, shown by the `.frozen` Statics before `_body`."""
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
        """Move finished blocks, the first of the open end, into a frozen Static (see the class docstring)."""
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
