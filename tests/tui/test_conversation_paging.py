"""ConversationView with long sessions from a real SQLite store: only about two screens are mounted, older
messages come in as the user scrolls up (held ones first, then pages from the store, as MainScreen does),
the lines on screen stay put meanwhile, and views far below are unmounted and come back."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, cast

import pytest
from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.widget import Widget

from tests.waiting import pilot_until
from yeetui.messages import Message, TextPart, ToolCallPart, ToolResultPart
from yeetui.store import Store
from yeetui.tui.widgets import conversation_window
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.conversation_pages import ConversationPages
from yeetui.tui.widgets.message_views import AssistantMessageView, OlderMarker, UserMessageView
from yeetui.tui.widgets.render_text import Item, chunk_end, chunk_start
from yeetui.tui.widgets.tool_views import Entry, ToolCallView

SIZE = (80, 24)
PAGE = 100


class Paging(App[None]):
    """A host that answers the view's requests for pages the way MainScreen does (`ConversationPages`)."""

    def __init__(self, view: ConversationView, store: Store, page: int = PAGE) -> None:
        super().__init__()
        self.view, self.store = view, store
        self.pages = ConversationPages(store, page)
        self.requests: list[int] = []
        self.newer: list[int | None] = []
        self.dropped: list[int] = []

    def on_entry_window_dropped(self, message: ConversationView.Dropped) -> None:
        self.dropped.append(message.views)

    def compose(self) -> ComposeResult:
        yield self.view

    async def open(self) -> None:
        await self.pages.open(self.view)

    async def on_conversation_view_load_older(self, message: ConversationView.LoadOlder) -> None:
        self.requests.append(message.before_message_id)
        await self.pages.older(self.view, message)

    async def on_conversation_view_load_newer(self, message: ConversationView.LoadNewer) -> None:
        self.newer.append(message.after_message_id)
        await self.pages.newer(self.view, message)

    async def on_conversation_view_jump(self, message: ConversationView.Jump) -> None:
        await self.pages.jump(self.view, message)


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    async with await Store.open(tmp_path / "data" / "yeetui.db") as opened:
        yield opened


def turn(n: int) -> list[Message]:
    """One turn as agents write them: a question, a reply calling a tool, its result, a longer answer."""
    call = f"call-{n}"
    answer = "\n\n".join(f"Answer {n}, paragraph {p}: the offset is kept across nested scopes." for p in range(4))
    return [
        Message.user(f"Question {n}: why is the offset lost?"),
        Message(role="assistant", parts=(TextPart(text=f"Reading the parser ({n})."),
                                         ToolCallPart(id=call, name="read_file", arguments={"path": f"src/p{n}.py"}))),
        Message(role="tool", parts=(ToolResultPart(call_id=call, name="read_file", content=f"def parse_{n}(): ..."),)),
        Message.assistant(answer),
    ]


async def fill(store: Store, turns: int) -> str:
    session = await store.create_session(profile="generic")
    for n in range(turns):
        for message in turn(n):
            await store.append_message(session.id, message)
    return session.id


async def settle(pilot: Any, view: ConversationView) -> None:
    """Let paging steps (and the store's pages) finish and the screen refresh."""
    for _ in range(100):
        await pilot.pause()
        if not view.paging:
            break
    await pilot.pause()


def on_screen(view: ConversationView, widget: Widget) -> bool:
    region = widget.region
    return widget.is_attached and region.height > 0 and view.region.overlaps(region)


def question(widget: Widget) -> str:
    return widget.text.split(":")[0] if isinstance(widget, UserMessageView) else ""


def top_visible(view: ConversationView) -> Widget:
    return next(e for e in view.entries if e.region.bottom > view.region.y)


def check_tool_blocks(view: ConversationView) -> None:
    """Every mounted tool block shows its call and its result, once."""
    blocks = list(view.query(ToolCallView))
    assert len({b.call_id for b in blocks}) == len(blocks)
    for block in blocks:
        n = block.call_id.removeprefix("call-")
        assert block.has_call and block.arguments == {"path": f"src/p{n}.py"}, block.call_id
        assert block.result == f"def parse_{n}(): ...", block.call_id


def test_a_chunk_of_messages_never_separates_a_call_from_its_result() -> None:
    items = [Item(i + 1, message) for i, message in enumerate(m for n in range(6) for m in turn(n))]
    starts = {chunk_start(items, 76, rows) for rows in range(120)}
    ends = {chunk_end(items, 76, rows) for rows in range(120)}
    assert len(starts) > 5 and len(ends) > 5  # the budget moved the cut across every turn
    assert all(start == 0 or not items[start].is_result for start in starts)
    assert all(end == len(items) or not items[end].is_result for end in ends)


async def test_opening_a_long_session_mounts_about_two_screens_and_shows_the_end(store: Store) -> None:
    session = await fill(store, 250)  # 1,000 messages
    view = ConversationView(session)
    app = Paging(view, store)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await pilot_until(pilot, lambda: bool(view.entries) and on_screen(view, view.entries[-1]))  # laid out
        assert 3 <= len(view.entries) <= 20  # not the page of 100 messages (~250 views)
        # the rest of the page is held
        assert len(view.held) + len({e.message_id for e in cast(list[Entry], view.entries)}) >= 90
        assert view.query(OlderMarker) and app.requests == []  # nothing fetched yet
        last = view.entries[-1]
        assert isinstance(last, AssistantMessageView) and "Answer 249, paragraph 3" in last.text
        assert on_screen(view, last) and view.following
        check_tool_blocks(view)


async def test_scrolling_up_shows_older_messages_and_keeps_the_visible_lines_in_place(store: Store) -> None:
    session = await fill(store, 60)
    view = ConversationView(session)
    app = Paging(view, store)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await pilot.pause(0.1)
        mounted, oldest = len(view.entries), view.oldest_message_id
        view.scroll_to(y=view.size.height + 2, animate=False, immediate=True)  # up, but not near the top
        await pilot.pause(0.1)
        assert len(view.entries) == mounted and not view.following
        anchor = top_visible(view)
        row = anchor.region.y
        view.scroll_to(y=view.scroll_y - 3, animate=False, immediate=True)  # now within a screen of the top
        await pilot_until(pilot, lambda: len(view.entries) > mounted)  # held messages came in above
        await pilot.pause(0.1)
        assert anchor.region.y == row + 3  # the lines on screen only moved by the user's own scroll
        assert view.oldest_message_id is not None and oldest is not None and view.oldest_message_id < oldest
        assert view.scroll_y > view.size.height  # the new lines are above the screen
        check_tool_blocks(view)


async def test_every_message_can_be_reached_and_views_far_below_are_unmounted(store: Store) -> None:
    session = await fill(store, 24)  # 96 messages: four pages of 30
    view = ConversationView(session, window=40)
    app = Paging(view, store, page=30)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await pilot.pause(0.1)
        seen: set[str] = set()
        most = 0
        for _ in range(400):
            seen.update(question(e) for e in view.entries if on_screen(view, e))
            most = max(most, len(view.entries))
            if "Question 0" in seen:
                break
            view.scroll_page_up(animate=False)
            await settle(pilot, view)
        assert "Question 0" in seen and not view.held and not view.has_older
        assert seen >= {f"Question {n}" for n in range(24)}  # every turn was on screen on the way up
        assert most <= 40 + 20  # the window (plus one step's chunk) was never exceeded
        assert len(app.requests) == 3 and app.requests == sorted(app.requests, reverse=True)
        first = next(e for e in view.entries if isinstance(e, UserMessageView))
        assert first.text.startswith("Question 0:") and on_screen(view, first)
        check_tool_blocks(view)

        seen.clear()  # back down: the views unmounted below come back, in order, up to the end
        for _ in range(400):
            seen.update(question(e) for e in view.entries if on_screen(view, e))
            if view.scroll_y >= view.max_scroll_y and cast(Entry, view.entries[-1]).message_id == 96:
                break
            view.scroll_page_down(animate=False)
            await settle(pilot, view)
        assert seen >= {f"Question {n}" for n in range(24)}
        ids = [e.message_id for e in cast(list[Entry], view.entries) if e.message_id is not None]
        assert ids == sorted(ids)
        assert "Answer 23, paragraph 3" in cast(AssistantMessageView, view.entries[-1]).text
        assert view.following  # back at the end: following again
        check_tool_blocks(view)


async def test_a_message_arriving_while_the_user_reads_far_above_shows_when_they_come_back(store: Store) -> None:
    session = await fill(store, 40)
    view = ConversationView(session, window=40)
    app = Paging(view, store)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        for _ in range(200):  # far up: the newest views have been unmounted below
            if view.oldest_message_id == 1:
                break
            view.scroll_page_up(animate=False)
            await settle(pilot, view)
        assert cast(Entry, view.entries[-1]).message_id != 160
        new_id = await store.append_message(session, Message.user("Question 40: a late one"))
        await view.add_message(Message.user("Question 40: a late one"), new_id)
        assert question(view.entries[-1]) != "Question 40"  # not mounted after the gap
        for _ in range(200):
            if question(view.entries[-1]) == "Question 40" and view.scroll_y >= view.max_scroll_y:
                break
            view.scroll_page_down(animate=False)
            await settle(pilot, view)
        ids = [e.message_id for e in cast(list[Entry], view.entries) if e.message_id is not None]
        assert ids[-1] == new_id and ids == sorted(ids)


@pytest.mark.parametrize("answer_lines", range(20, 60, 4))
async def test_a_tool_call_and_its_result_stay_one_block_wherever_the_mounted_part_starts(
        store: Store, answer_lines: int) -> None:
    """The newest answer's length moves where `load` stops mounting across a call and its result."""
    session = await fill(store, 3)
    await store.append_message(session, Message.assistant("\n".join(f"line {i}" for i in range(answer_lines))))
    view = ConversationView(session)
    app = Paging(view, store)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await pilot.pause(0.05)
        check_tool_blocks(view)
        for _ in range(20):
            view.scroll_home(animate=False, immediate=True)
            await pilot.pause(0.03)
        assert not view.held and question(view.entries[0]) == "Question 0"
        check_tool_blocks(view)
        assert len(view.query(ToolCallView)) == 3


async def test_a_page_from_the_store_that_starts_with_a_result_joins_its_call(store: Store) -> None:
    """Store pages can split a call from its result: the result-only block becomes the whole block."""
    session = await fill(store, 30)  # 120 messages; a page of 7 ends with a tool result at index 2 of a turn
    view = ConversationView(session)
    app = Paging(view, store, page=7)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        for _ in range(300):
            if view.oldest_message_id == 1:
                break
            view.scroll_page_up(animate=False)
            await settle(pilot, view)
        assert view.oldest_message_id == 1
        check_tool_blocks(view)


def first_question(view: ConversationView) -> str:
    return next((question(e) for e in view.entries if isinstance(e, UserMessageView)), "")


async def test_jumping_to_the_start_of_a_long_session_reads_one_page_not_everything_between(store: Store) -> None:
    session = await fill(store, 500)  # 2,000 messages
    view = ConversationView(session)
    app = Paging(view, store)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await settle(pilot, view)
        view.jump_to_start()
        await settle(pilot, view)
        first = next(e for e in view.entries if isinstance(e, UserMessageView))
        assert first.text.startswith("Question 0:") and on_screen(view, first) and view.scroll_y == 0
        assert not view.query(OlderMarker) and not view.has_older and not view.held
        assert view.has_newer and app.requests == []  # no page of older messages was read on the way
        assert len(view.entries) <= 20 and not view.following
        check_tool_blocks(view)

        view.jump_to_end()
        await settle(pilot, view)
        last = view.entries[-1]
        assert "Answer 499, paragraph 3" in last.text and on_screen(view, last)  # type: ignore[attr-defined]
        assert view.following and not view.has_newer and view.has_older and view.query(OlderMarker)
        check_tool_blocks(view)


async def test_from_the_start_scrolling_down_reaches_every_message_in_order_with_bounded_memory(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversation_window, "HELD_MAX", 60)
    monkeypatch.setattr(conversation_window, "BELOW_MAX", 60)
    session = await fill(store, 60)  # 240 messages: pages of 50
    view = ConversationView(session, window=40)
    app = Paging(view, store, page=50)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await settle(pilot, view)
        view.jump_to_start()
        await settle(pilot, view)
        seen: list[str] = []
        held = below = 0
        for _ in range(600):
            for entry in view.entries:
                if on_screen(view, entry) and question(entry) and question(entry) not in seen:
                    seen.append(question(entry))
            held, below = max(held, len(view.held)), max(below, len(view._below))
            if view.following and not view.has_newer and view.scroll_y >= view.max_scroll_y:
                break
            view.scroll_page_down(animate=False)
            await settle(pilot, view)
        assert seen == [f"Question {n}" for n in range(60)]  # every turn, in order
        assert "Answer 59, paragraph 3" in cast(AssistantMessageView, view.entries[-1]).text
        assert len(app.newer) >= 3 and app.newer == sorted(app.newer)  # page after page from the store
        assert held <= 60 and below <= 60 and len(view.entries) <= 40 + 20  # bounded on both sides
        assert view.has_older and view.following  # the oldest were dropped on the way down
        check_tool_blocks(view)
        # The app heard of each unmounted view (its next full collection frees them), and nothing keeps the
        # lines drawn by views that are gone (Textual's StylesCache lru, see textual_workarounds).
        assert sum(app.dropped) >= 200
        gc.collect()
        alive = {id(w._styles_cache) for w in gc.get_objects() if isinstance(w, Widget)}
        orphans = [c for c in gc.get_objects() if isinstance(c, StylesCache) and id(c) not in alive]
        assert len(orphans) <= 5, len(orphans)


async def test_scrolling_far_up_drops_the_newest_from_memory_and_fetches_them_again_coming_down(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversation_window, "HELD_MAX", 60)
    monkeypatch.setattr(conversation_window, "BELOW_MAX", 60)
    session = await fill(store, 40)
    view = ConversationView(session, window=40)
    app = Paging(view, store, page=50)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await settle(pilot, view)
        for _ in range(600):
            if view.oldest_message_id == 1 and view.scroll_y == 0:
                break
            view.scroll_page_up(animate=False)
            await settle(pilot, view)
            assert len(view._below) <= 60 and len(view.held) <= 60 + 50  # a page joins the held at most
        assert view.has_newer  # the newest were dropped: only the store has them now
        late_id = await store.append_message(session, Message.user("Question 40: a late one"))
        await view.add_message(Message.user("Question 40: a late one"), late_id)  # committed meanwhile
        view.jump_to_end()
        await settle(pilot, view)
        ids = [e.message_id for e in cast(list[Entry], view.entries) if e.message_id is not None]
        assert ids[-1] == late_id and ids == sorted(ids) and view.following and not view.has_newer
        check_tool_blocks(view)


async def test_a_live_answer_survives_jumps_to_the_start_and_back(store: Store) -> None:
    session = await fill(store, 100)
    view = ConversationView(session)
    app = Paging(view, store)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await view.stream_text("run-1", "The answer so far")
        live = view._live
        view.jump_to_start()
        await settle(pilot, view)
        assert first_question(view) == "Question 0" and live is not None and live.is_attached
        await view.stream_text("run-1", ", and more")  # deltas go on into the same view
        answer_id = await store.append_message(session, Message.assistant("The answer so far, and more"))
        await view.add_message(Message.assistant("The answer so far, and more"), answer_id, run_id="run-1")
        view.jump_to_end()
        await settle(pilot, view)
        answers = [e for e in view.entries if isinstance(e, AssistantMessageView) and "answer so far" in e.text]
        assert len(answers) == 1 and answers[0].text == "The answer so far, and more"
        assert view.entries[-1] is answers[0] and view.following


async def test_back_at_the_end_after_reading_far_up_memory_settles_and_every_message_is_still_reachable(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversation_window, "SETTLED_HELD", 30)
    session = await fill(store, 24)  # 96 messages: four pages of 30
    view = ConversationView(session, window=40)
    app = Paging(view, store, page=30)
    async with app.run_test(size=SIZE) as pilot:
        await app.open()
        await settle(pilot, view)
        opened = len(view.entries)
        for _ in range(12):  # read far up: the window fills
            view.scroll_page_up(animate=False)
            await settle(pilot, view)
        assert len(view.entries) > 40 // 2
        for _ in range(100):  # and back down to the end
            if view.following and not view.has_newer and view.scroll_y >= view.max_scroll_y:
                break
            view.scroll_page_down(animate=False)
            await settle(pilot, view)
        await pilot_until(pilot, lambda: view.following and len(view.entries) <= 40 // 2 and not view.paging)
        assert len(view.entries) <= max(opened, 40 // 4) + 6 and len(view.held) <= 30 and view.has_older
        assert "Answer 23, paragraph 3" in cast(AssistantMessageView, view.entries[-1]).text
        seen: list[str] = []
        for _ in range(600):  # and all the way up again: every turn, newest first, none missing
            for entry in reversed(view.entries):
                if on_screen(view, entry) and question(entry) and question(entry) not in seen:
                    seen.append(question(entry))
            if view.oldest_message_id == 1 and view.scroll_y == 0:
                break
            view.scroll_page_up(animate=False)
            await settle(pilot, view)
        assert seen == [f"Question {n}" for n in reversed(range(24))]
        check_tool_blocks(view)
