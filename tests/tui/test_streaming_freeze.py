"""A long streamed answer costs the same per write at its end as at its start (issue 14): finished blocks
leave the open end (rendered again on each write) for a frozen Static, rendered once; the open end keeps a
bounded number of blocks; what is shown is what rendering the whole answer shows."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any, cast

import pytest
from rich.console import Console
from textual._styles_cache import StylesCache

from tests.tui.test_conversation import Host
from tests.waiting import pilot_until
from yeetui.messages import Message
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.markdown_text import (
    AnswerText,
    MarkdownBlocks,
    RenderedMarkdown,
    block_starts,
    markdown_blocks,
)
from yeetui.tui.widgets.message_views import (
    FLUSH_INTERVAL,
    FREEZE_AT,
    RESERVE_STEP,
    TYPING_FLUSH_INTERVAL,
    AssistantMessageView,
    Pacing,
)


def answer(sections: int) -> str:
    """A model-like answer: headings, paragraphs, lists, code, a table, a setext heading."""
    parts = []
    for n in range(sections):
        parts.append(f"## Part {n}\n\nThe parser reads **once** and keeps `offset` monotonic ({n}).\n\n"
                     f"- first point {n}\n- second point\n  continued\n\n"
                     f"```python\ndef step_{n}(x):\n    return x + {n}\n```\n\n"
                     f"| case | value |\n|---|---|\n| {n} | {n * 2} |\n\nSetext {n}\n---\n\n")
    return "".join(parts)


def drawn(message: AssistantMessageView) -> list[str]:
    """The non-blank lines the message's Statics draw, frozen parts and open end."""
    lines = [str(body.render_line(y).text).rstrip() for body in message.query(".body") if body.display
             for y in range(body.size.height)]
    return [line.strip() for line in lines if line.strip()]


class Typing(Pacing):
    """The user types all along (a loaded machine may take longer than `TYPING_GRACE` between two writes)."""

    typing = True  # type: ignore[assignment]  # a constant where Pacing computes it


def tail_lines(message: AssistantMessageView, app: Any, width: int) -> int:
    """The lines the open end of a streaming answer takes: what rendering the whole text shown takes, less
    what the frozen parts before it take."""
    whole = RenderedMarkdown(message.shown_text, code_theme="monokai").height(app, width)
    frozen = message.query(".frozen").results(AnswerText)
    return whole - sum(cast(MarkdownBlocks, part.content).height(app, width) for part in frozen)


def whole(text: str, width: int) -> list[str]:
    """The non-blank lines rendering `text` at once draws."""
    return [line.strip() for line in rendered(text, width) if line.strip()]


def rendered(text: str | MarkdownBlocks, width: int = 70) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(RenderedMarkdown(text, code_theme="monokai") if isinstance(text, str) else text)
    return [line.rstrip() for line in cast(io.StringIO, console.file).getvalue().splitlines()]


def test_drawn_block_by_block_markdown_shows_what_rendering_the_whole_shows() -> None:
    """The open end is drawn block by block (`MarkdownBlocks`) and frozen blocks are drawn apart from it:
    line for line, blank lines included, that must be what rendering the whole text draws, at any moment of
    the stream (a horizontal rule, which Rich puts no blank line after, lists, quotes, an HTML block)."""
    text = ("- a list first\n\n" + answer(3) + "# Title\n\na rule:\n\n***\n- right after a rule\n\n---\n\n"
            "> quoted\n\n***\n\n| a |\n|---|\n| 1 |\n\nafter a rule:\n\n***\n\nafter the rule\n\n- a\n\n- b\n\n"
            "> quote\n> more\n\n<div>x</div>\n\nthe end")
    for end in range(1, len(text) + 1, 5):
        partial = text[:end]
        blocks = markdown_blocks(partial)
        assert "".join(source for source, _ in blocks) == partial
        drawn_blocks = [(RenderedMarkdown(source, code_theme="monokai"), gap) for source, gap in blocks]
        whole = rendered(partial)
        assert rendered(MarkdownBlocks(drawn_blocks)) == whole, end
        for cut in range(1, len(blocks)):  # frozen up to `cut`, the open end after it
            frozen = MarkdownBlocks(drawn_blocks[:cut])
            tail = MarkdownBlocks(drawn_blocks[cut:], after=frozen.gap)
            assert rendered(frozen) + rendered(tail) == whole, (end, cut)


async def test_a_long_answer_keeps_the_live_widget_small_and_never_redraws_frozen_blocks() -> None:
    text = answer(30)  # ~190 blocks
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        frozen_seen: dict[int, AnswerText] = {}
        largest_live = 0
        for start in range(0, len(text), 120):
            await view.stream_text("r1", text[start:start + 120])
            message = view.query_one(AssistantMessageView)
            await message.flush()
            await pilot.pause()  # the stream writes between flushes, as it does at 20 flushes a second
            largest_live = max(largest_live, len(block_starts(message._tail)))
            for static in message.query(".frozen").results(AnswerText):
                frozen_seen.setdefault(id(static), static)
        message = view.query_one(AssistantMessageView)
        await pilot_until(pilot, lambda: message.source == text)
        frozen = list(message.query(".frozen").results(AnswerText))
        assert len(frozen) >= 5  # most of the answer left the open end
        assert largest_live <= FREEZE_AT + 1  # frozen down as soon as it held more than FREEZE_AT blocks
        assert all(id(s) in frozen_seen for s in frozen) and len(frozen_seen) == len(frozen)  # never replaced
        assert ("".join(cast(MarkdownBlocks, s.content).text for s in frozen)
                + message._tail == text)  # nothing lost or doubled
        width = message.query_one(".frozen").size.width
        await pilot.pause()
        assert drawn(message) == whole(text, width)  # the parts draw what the whole answer would

        await view.add_message(Message.assistant(text), 9)  # the committed message: the same text
        await pilot.pause()
        assert message.source == text and list(message.query(".frozen")) == frozen  # kept as they were
        assert drawn(message) == whole(text, width)


async def test_a_restart_drops_frozen_blocks_too() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        message = None
        for part in answer(8).split("\n\n"):
            await view.stream_text("r1", part + "\n\n")
            message = view.query_one(AssistantMessageView)
            await message.flush()
            await pilot.pause()
        assert message is not None and message.query(".frozen")
        await message.restart()
        await view.stream_text("r1", "fresh start")
        await message.flush()
        await pilot_until(pilot, lambda: message.source == "fresh start")
        assert not message.query(".frozen")


async def test_blocks_still_streaming_after_a_freeze_are_read_whole() -> None:
    """A table whose rows arrive after a freeze is still one table: the open end starts at a block, so the rows
    that follow are read with their table's head."""
    paragraphs = "".join(f"paragraph {n}\n\n" for n in range(FREEZE_AT + 1))
    writes = [paragraphs + "| a | b |\n|---|---|\n| 1 |", " ", "2 |\n| 3 | 4 |\n\nafter the table\n"]
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        for chunk in writes:
            await view.stream_text("r1", chunk)
            message = view.query_one(AssistantMessageView)
            await message.flush()
            await pilot.pause()
        await pilot_until(pilot, lambda: message.source == "".join(writes))
        assert message.query(".frozen")
        await pilot.pause()
        lines = drawn(message)
        assert not any("|" in line for line in lines)  # no raw table row: drawn as a table
        assert lines == whole("".join(writes), message.query_one(".frozen").size.width)


async def test_writes_that_add_no_line_skip_the_layout_and_the_view_still_fits_its_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    layouts: list[bool] = []
    original, redraw = AnswerText.update, AnswerText.redraw_from

    def update(self: AnswerText, content: Any, *, layout: bool = True) -> None:
        if not self.has_class("frozen"):
            layouts.append(layout)
        original(self, content, layout=layout)

    def redraw_from(self: AnswerText, content: Any, line: int) -> None:
        layouts.append(False)
        redraw(self, content, line)

    monkeypatch.setattr(AnswerText, "update", update)
    monkeypatch.setattr(AnswerText, "redraw_from", redraw_from)
    view = ConversationView("s1")
    async with Host(view).run_test(size=(60, 20)) as pilot:
        words = [f"word{n} " for n in range(120)] + ["\n\n- a list\n", "- grows\n\n", "## and a heading\n"]
        written = ""
        for word in words:
            written += word
            await view.stream_text("r1", word)
            message = view.query_one(AssistantMessageView)
            await message.flush()
            await pilot.pause()
            body = message.query(".body").last(AnswerText)

            def fits(body: AnswerText = body, message: AssistantMessageView = message) -> bool:
                return body.size.height == tail_lines(message, pilot.app, body.content_size.width)

            await pilot_until(pilot, fits)  # never left at a stale height
            bottom = body.region.bottom  # the end of the text is on screen
            assert view.region.y < bottom <= view.region.bottom, (len(written), body.region, view.region)
        assert drawn(message) == whole(written, message.query(".body").last().content_size.width)
        assert layouts.count(False) > len(words) // 2  # most writes only redrew their lines
        assert layouts.count(True) >= 10  # a new line, the list and the heading were laid out


async def test_a_line_gained_while_streaming_lays_the_screen_out_once() -> None:
    """Textual lays the screen out again when a layout changed a widget's virtual size; the answer, its text
    and the conversation only change size through a layout, so they skip that (`SizedByLayout`)."""
    view = ConversationView("s1")
    async with Host(view).run_test(size=(60, 20)) as pilot:
        for i in range(1, 30):
            await view.add_message(Message.user(f"message {i}"), i)
        await view.stream_text("r1", "first line\n\n")
        message = view.query_one(AssistantMessageView)
        await message.flush()
        await pilot.pause()
        screen = pilot.app.screen
        original = screen._refresh_layout
        layouts: list[int] = []

        def counted(*args: object, **kw: object) -> None:
            layouts.append(1)
            original(*args, **kw)  # type: ignore[arg-type]

        screen._refresh_layout = counted  # type: ignore[method-assign]
        lines = 12
        for n in range(lines):
            await view.stream_text("r1", f"line {n} of the answer\n\n")
            await message.flush()
            for _ in range(3):
                await pilot.pause()
        assert view.scroll_y == view.max_scroll_y  # still following the end
        body = message.query(".body").last()
        assert f"line {lines - 1} of the answer" in message.shown_text
        assert view.region.y < body.region.bottom <= view.region.bottom  # and its last line is on screen
        assert 0 < len(layouts) <= lines + 3, len(layouts)  # one per new line at most (it was two)


async def test_while_the_user_types_a_stream_is_drawn_less_often_and_nothing_is_lost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    original = AssistantMessageView.set_timer

    def set_timer(self: AssistantMessageView, delay: float, *args: object, **kw: object) -> object:
        delays.append(delay)
        return original(self, delay, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(AssistantMessageView, "set_timer", set_timer)
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        message = None
        for n in range(6):
            await view.stream_text("r1", f"word{n} ")
            message = view.query_one(AssistantMessageView)
            await message.flush()
        assert delays and set(delays) == {FLUSH_INTERVAL}
        delays.clear()
        for n in range(6, 12):
            view.pacing.typed()  # a key in the composer
            await view.stream_text("r1", f"word{n} ")
            assert message is not None
            await message.flush()
        assert delays and set(delays) == {TYPING_FLUSH_INTERVAL}
        await view.add_message(Message.assistant("".join(f"word{n} " for n in range(12))), 5)
        await pilot.pause()
        assert message is not None and "word11" in " ".join(drawn(message))


async def test_a_line_that_scrolls_the_view_redraws_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the view follows a stream, each new line of the answer scrolls it by a line: the open end is
    drawn again (its text changed) and the scrollbar (it moved), but nothing else renders a line — not the
    messages above, not the answer's frozen parts, not the answer's own column, which grows with every line
    but has nothing of its own to draw (`BLANK`)."""
    drawn_by: Counter[str] = Counter()
    original = StylesCache.render_line

    def render_line(self: StylesCache, styles: Any, y: int, *args: Any, **kw: Any) -> Any:
        node = styles.node
        drawn_by[type(node).__name__ + (".frozen" if node.has_class("frozen") else "")] += 1
        return original(self, styles, y, *args, **kw)

    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        for i in range(1, 6):
            await view.add_message(Message.user(f"question {i}"), 2 * i)
            await view.add_message(Message.assistant(answer(1)), 2 * i + 1)
        await view.stream_text("r1", answer(3) + "- the first item\n")
        message = view.query_one("AssistantMessageView:last-of-type", AssistantMessageView)
        await message.flush()
        await pilot.pause()
        assert any(part.region.overlaps(view.region) for part in message.query(".frozen"))  # frozen parts on screen
        body = message.query_one(".body:last-of-type", AnswerText)

        def settled() -> bool:  # the last write laid out, the view at its end
            return (body.size.height == tail_lines(message, pilot.app, body.content_size.width)
                    and view.scroll_y == view.max_scroll_y)

        await pilot_until(pilot, settled)
        pilot.app.export_screenshot()  # all on screen drawn now: on a loaded machine the frozen part's first
        # paint could still be to come, and was counted below (24 lines, once in a full run)
        monkeypatch.setattr(StylesCache, "render_line", render_line)

        for n in range(6):
            await pilot_until(pilot, settled)
            before = view.max_scroll_y
            await view.stream_text("r1", f"- item {n}\n")  # a line more
            await message.flush()

            def scrolled(b: int = before) -> bool:
                return view.scroll_y == b + 1 == view.max_scroll_y

            await pilot_until(pilot, scrolled)  # scrolled by a line
            await pilot.pause()
        assert drawn_by["AnswerText"] and drawn_by["ScrollBar"]
        assert set(drawn_by) <= {"AnswerText", "ScrollBar"}, drawn_by


async def test_while_the_user_types_a_draw_that_falls_due_waits_for_the_next_key_s_echo(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A draw that can lay the screen out runs right after a key's echo is on screen, in the gap before the
    next key, rather than whenever its timer fires (in the way of a key); with no key after it, it still
    runs, at the latest `TYPING_GRACE` later."""
    monkeypatch.setattr(Pacing, "typing", property(lambda self: True))  # the user is typing
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        await view.stream_text("r1", "first words ")
        message = view.query_one(AssistantMessageView)
        await message.flush()
        await view.stream_text("r1", "and more")
        await message._due()  # its timer fires while the user types
        assert message.shown_text == "first words "  # held...
        await view.pacing.echoed()  # ...until the screen has drawn the next key's echo
        assert message.shown_text == "first words and more"

        await view.stream_text("r1", " and the end")
        await message._due()
        assert message.shown_text == "first words and more"
        await pilot_until(pilot, lambda: message.shown_text.endswith("the end"))  # no key came: drawn anyway
        await view.pacing.echoed()  # a key after that draws nothing twice
        assert message.shown_text == "first words and more and the end"


async def test_while_the_user_types_new_lines_of_an_answer_lay_out_the_screen_once_per_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A line more of a streaming answer grows it, and a growing widget is a layout of the whole screen and a
    repaint of the scrolled view. While the user types, the open end takes its room `RESERVE_STEP` lines at a
    time, so most new lines fill room it already has: one layout per step, not one per line; the view
    still follows the end; once the typing stops the open end takes only the lines its text needs."""
    from textual.screen import Screen

    layouts = 0
    original = Screen._refresh_layout

    def counting(self: Screen, *args: Any, **kw: Any) -> Any:
        nonlocal layouts
        layouts += 1
        return original(self, *args, **kw)

    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        for i in range(1, 4):
            await view.add_message(Message.user(f"question {i}"), 2 * i)
            await view.add_message(Message.assistant(answer(1)), 2 * i + 1)
        await view.stream_text("r1", "Here is the list:\n\n")
        message = view.query_one("AssistantMessageView:last-of-type", AssistantMessageView)
        await message.flush()
        await pilot.pause()
        monkeypatch.setattr(Screen, "_refresh_layout", counting)
        lines = 3 * RESERVE_STEP
        for n in range(lines):
            view.pacing.typed()
            await view.stream_text("r1", f"- item {n}\n")
            await message.flush()
            await pilot.pause()
            assert message.query_one(".body").region.bottom <= view.region.bottom  # the end stays in view
            assert view.scroll_y == view.max_scroll_y
        assert 0 < layouts <= lines // 2, layouts  # one per step (a few more on a loaded machine), not one per line
        body = message.query_one(".body")
        assert body.size.height > len(drawn(message)) - 1  # room reserved beyond its text

        view.pacing = message.pacing = Pacing()  # the typing stopped
        await view.stream_text("r1", "- the last item\n")
        await message.flush()
        await pilot.pause()
        assert body.size.height == tail_lines(message, pilot.app, body.content_size.width)


async def test_the_reserved_room_moves_with_frozen_blocks_and_the_answer_still_reads_as_a_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A long answer streamed line by line while the user types: blocks freeze as usual, the room reserved
    for the open end shrinks by what they took (the answer keeps its height, no extra layout), the screen is
    laid out far less often than when nobody types, and what is drawn is what rendering the whole shows."""
    from textual.screen import Screen

    text = answer(8)  # enough blocks to freeze while the user types too
    counts: dict[bool, int] = {}
    original = Screen._refresh_layout
    layouts = 0

    def counting(self: Screen, *args: Any, **kw: Any) -> Any:
        nonlocal layouts
        layouts += 1
        return original(self, *args, **kw)

    for typing in (False, True):
        layouts = 0

        view = ConversationView("s1")
        async with Host(view).run_test(size=(100, 30)) as pilot:
            await view.add_message(Message.user("question"), 1)
            await view.stream_text("r1", "")
            await pilot.pause()
            message = view.query_one("AssistantMessageView:last-of-type", AssistantMessageView)
            monkeypatch.setattr(Screen, "_refresh_layout", counting)
            for line in text.splitlines(keepends=True):
                if typing:
                    view.pacing.typed()
                await view.stream_text("r1", line)
                await message.flush()
                await pilot.pause()
            monkeypatch.setattr(Screen, "_refresh_layout", original)
            assert message.query(".frozen")
            assert (message._reserved > 0) == typing
            await message.finish(text, "")
            await pilot.pause()
            assert message._reserved == 0
            assert drawn(message) == whole(text, message.query_one(".body").content_size.width)
        counts[typing] = layouts
    assert counts[True] * 2 < counts[False], counts


async def test_a_write_that_changes_the_last_block_draws_only_that_block_s_lines_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Most writes add words to the last block of the open end. The blocks before it keep their lines: they
    are neither rendered again (`MarkdownBlocks` keeps them) nor drawn again on screen (`redraw_from`), so a
    write costs the lines it changed, not the whole open end, which is most of the screen."""
    renders: Counter[str] = Counter()
    original_render = RenderedMarkdown.__rich_console__

    def counting_render(self: RenderedMarkdown, console: Any, options: Any) -> Any:
        key = (options.max_width, options.justify, options.overflow, options.no_wrap)
        if key not in self._segments:
            renders[self.text] += 1
        return original_render(self, console, options)

    lines_drawn: list[int] = []
    original_line = StylesCache.render_line

    def render_line(self: StylesCache, styles: Any, y: int, *args: Any, **kw: Any) -> Any:
        if isinstance(styles.node, AnswerText) and not styles.node.has_class("frozen"):
            lines_drawn.append(y)
        return original_line(self, styles, y, *args, **kw)

    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        head = "## A heading\n\nA first paragraph that stays as it is.\n\n```python\nx = 1\n```\n\n"
        message = None
        for write in (head + "The last", " paragraph grows"):  # the second write finds the width laid out
            await view.stream_text("r1", write)
            message = view.query_one(AssistantMessageView)
            await message.flush()
            await pilot.pause()
        assert message is not None
        body = message.query_one(".body:last-of-type", AnswerText)
        last_block_line = RenderedMarkdown(head, code_theme="monokai").height(pilot.app, body.content_size.width)
        pilot.app.export_screenshot()  # all on screen drawn now, not in the writes below (a loaded machine)
        monkeypatch.setattr(RenderedMarkdown, "__rich_console__", counting_render)
        monkeypatch.setattr(StylesCache, "render_line", render_line)
        for word in (" word", " by", " word"):
            await view.stream_text("r1", word)
            await message.flush()
            await pilot.pause()
        assert renders and all(text.startswith("The last paragraph grows") for text in renders)  # the last block only
        assert lines_drawn and min(lines_drawn) >= last_block_line - 1, (sorted(set(lines_drawn)), last_block_line)
        assert drawn(message) == whole(head + "The last paragraph grows word by word", body.content_size.width)


async def test_while_the_user_types_blocks_freeze_later_and_a_fast_answer_takes_more_room(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A freeze mounts a Static (a layout a key waits for): while the user types, the open end keeps up to
    `FREEZE_AT_TYPING` blocks, and freezes down once the typing stops. An answer that grows by many lines per
    draw takes room for about two more such draws (at most half the view), not `RESERVE_STEP` lines."""
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 40)) as pilot:
        await view.stream_text("r1", "")
        message = view.query_one(AssistantMessageView)
        await pilot.pause()
        view.pacing = message.pacing = Typing()
        await view.stream_text("r1", "".join(f"paragraph {n}\n\n" for n in range(2 * FREEZE_AT)))
        await message.flush()
        await pilot.pause()
        assert not message.query(".frozen")  # the user types: not frozen yet
        body = message.query_one(".body:last-of-type", AnswerText)
        lines = tail_lines(message, pilot.app, body.content_size.width)
        room = message._reserved - lines
        assert room > RESERVE_STEP  # it grew by 2 × FREEZE_AT × 2 lines at once
        assert room <= view.size.height // 2 + 1

        view.pacing = message.pacing = Pacing()  # the typing stopped
        await view.stream_text("r1", "the end")
        await message.flush()
        await pilot.pause()
        assert message.query(".frozen") and len(block_starts(message._tail)) <= FREEZE_AT
        assert drawn(message) == whole(message.shown_text, body.content_size.width)


async def test_an_answer_drawn_block_by_block_draws_the_lines_a_static_draws_for_the_whole() -> None:
    """`AnswerText` turns Markdown into lines block by block (each block once per width): each line, text and
    colours, is the line Textual's own Static draws for the whole text."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    text = answer(2) + "a rule:\n\n***\n- after the rule\n\n> quoted\n"
    blocks = [(RenderedMarkdown(source, code_theme="monokai"), gap) for source, gap in markdown_blocks(text)]

    class Both(App[None]):
        def compose(self) -> ComposeResult:
            yield Static(RenderedMarkdown(text, code_theme="monokai"), id="whole")
            yield AnswerText(MarkdownBlocks(blocks), classes="blocks")

    app = Both()
    async with app.run_test(size=(70, 200)) as pilot:
        await pilot.pause()
        whole, parts = app.query_one("#whole", Static), app.query_one(AnswerText)
        assert parts.size == whole.size and whole.size.height > 20
        for y in range(whole.size.height):
            assert parts.render_line(y).render(app.console) == whole.render_line(y).render(app.console), y


async def test_a_write_parses_only_the_end_of_the_open_end_and_cuts_it_as_parsing_it_whole_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each write cuts the open end into blocks again; it parses only from the start of its last blocks (the
    ones a write can change), and the blocks are the ones parsing the whole open end gives, at every write."""
    from yeetui.tui.widgets import message_views

    parsed: list[int] = []
    original = message_views.markdown_blocks  # type: ignore[attr-defined]  # the name it calls, patched below

    def counting(source: str) -> list[tuple[str, bool]]:
        parsed.append(len(source))
        return original(source)

    monkeypatch.setattr(message_views, "markdown_blocks", counting)
    text = answer(3) + "A rule:\n\n***\nSetext\n---\n\n- a\n\n  continued\n- b\n\n```\ncode\n\n```\n\nthe end\n"
    view = ConversationView("s1")
    async with Host(view).run_test(size=(100, 30)) as pilot:
        await view.stream_text("r1", "")
        message = view.query_one(AssistantMessageView)
        view.pacing = message.pacing = Typing()  # (no freeze below FREEZE_AT_TYPING blocks)
        for start in range(0, len(text), 23):
            await view.stream_text("r1", text[start:start + 23])
            await message.flush()
            await pilot.pause()
            drawn_blocks = message._tail_drawn.blocks if message._tail_drawn else ()
            assert [block.text for block, _ in drawn_blocks] == [s for s, _ in original(message._tail)], start
        assert not message.query(".frozen") and message._tail == text
        assert max(parsed[-5:]) < len(text) // 4  # the last writes parsed the end only
