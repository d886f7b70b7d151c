"""Markdown as an answer shows it: rendered once per width (`RenderedMarkdown`), and, while it streams, block by
block (`markdown_blocks`, `MarkdownBlocks`), drawn by a widget that turns each block into lines once (`AnswerText`).
`AssistantMessageView` (message_views.py) puts them together.

The Markdown parser and Rich's renderer (with Pygments) are imported on first use, ~40 ms that a new session's
start-up need not pay: `warm` imports them in the background once the session is open."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment, Segments
from textual.app import App
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget

from yeetui.tui.textual_workarounds import MeasuredAfterEachUpdate, SizedByLayout

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


def warm() -> None:
    """Import what rendering Markdown needs (in a thread: the first answer then renders without it)."""
    import markdown_it  # noqa: F401
    import rich.markdown  # noqa: F401


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
            from rich.markdown import Markdown as RichMarkdown  # on use: see the module's docstring

            markdown = RichMarkdown(self.text, code_theme=self.code_theme)
            segments = self._segments[key] = list(console.render(markdown, options))
        return segments


@functools.cache
def _parser() -> MarkdownIt:
    """GFM-like, but without linkify: `conftest.py` must not turn into http://conftest.py while streaming
    (finished messages render through Rich, which does not linkify either). Built once: a parser keeps no
    state between documents."""
    from markdown_it import MarkdownIt  # on use: see the module's docstring

    return MarkdownIt("gfm-like").disable("linkify")


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
    offsets = [0]  # where each line starts (the parser counts lines by "\n")
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
        return [block.height(app, width) + blank for block, blank, _ in self._blanks(app.console, options)]

    def height(self, app: App[Any], width: int) -> int:
        """Lines it takes at `width`."""
        return sum(self.block_lines(app, width))

    def _blanks(self, console: Console,
                options: ConsoleOptions) -> Iterator[tuple[RenderedMarkdown, bool, list[Segment]]]:
        """Each block, whether a blank line is drawn before it, and its own segments."""
        before = self.after
        for block, gap in self.blocks:
            segments = block.__rich_console__(console, options)
            yield block, bool(before) and not (segments and segments[0].text == "\n"), segments
            before = gap

    def drawn_blocks(self, console: Console,
                     options: ConsoleOptions) -> Iterator[tuple[RenderedMarkdown, bool, list[Segment]]]:
        """Each block, whether a blank line is drawn before it, and its segments (that line included)."""
        for block, blank, segments in self._blanks(console, options):
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
