"""ConversationView: streaming answers, tool blocks, announcements and the bounded window
(long sessions from a real SQLite store: test_conversation_paging.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from textual.app import App, ComposeResult
from textual.content import Content
from textual.message import Message as TextualMessage

from tests.waiting import pilot_until
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from yeetui.store.records import StoredMessage
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.markdown_text import AnswerText, RenderedMarkdown
from yeetui.tui.widgets.message_views import (
    AnnouncementView,
    AssistantMessageView,
    NoticeView,
    OlderMarker,
    SteerView,
    ThinkingBlock,
    UserMessageView,
)
from yeetui.tui.widgets.tool_views import Entry, ToolCallView

SIZE = (80, 24)


class Host(App[None]):
    def __init__(self, view: ConversationView, on_load_older: Callable[[ConversationView.LoadOlder], Any] | None
                 = None) -> None:
        super().__init__()
        self.view = view
        self.on_load_older = on_load_older

    def compose(self) -> ComposeResult:
        yield self.view

    async def on_conversation_view_load_older(self, message: ConversationView.LoadOlder) -> None:
        if self.on_load_older is not None:
            await self.on_load_older(message)


def stored(message_id: int, message: Message, *, partial: bool = False) -> StoredMessage:
    now = datetime.now(UTC)
    return StoredMessage(message_id, "s1", "r1", message_id, message, partial, now, now)


def plain(widget: Any) -> str:
    """The text a Static-like widget shows."""
    return widget.visual.plain


def posted(messages: list[TextualMessage], kind: type) -> list[Any]:
    """Messages of `kind` seen by the hook, once each (the hook sees a message at every hop it bubbles)."""
    unique = {id(m): m for m in messages if isinstance(m, kind)}
    return list(unique.values())


def shown(widget: Any) -> str:
    """The text an assistant message shows, as drawn (all its Statics, frozen parts and open end)."""
    return "\n".join(str(body.render_line(y).text) for body in widget.query(".body") if body.display
                     for y in range(body.size.height))


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Markdown documents rendered (each `RenderedMarkdown` renders at most once per width)."""
    seen: list[str] = []
    original = RenderedMarkdown.__rich_console__

    def counting(self: RenderedMarkdown, console: Any, options: Any) -> Any:
        if not self._segments:
            seen.append(self.text)
        return original(self, console, options)

    monkeypatch.setattr(RenderedMarkdown, "__rich_console__", counting)
    return seen


async def test_streaming_500_deltas_renders_coalesced_writes(renders: list[str]) -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        text = ""
        for i in range(500):
            delta = f"w{i} " + ("\n\n" if i % 100 == 99 else "")
            text += delta
            await view.stream_text("r1", delta)
        live = view.query_one(AssistantMessageView)
        await pilot_until(pilot, lambda: live.source == text and "w499" in shown(live))
        assert 1 <= len(renders) < 100  # deltas were coalesced, never one render per token
        assert "w0 " in shown(live)

        before, body = len(renders), live.query_one(".body:last-of-type", AnswerText)
        await view.add_message(Message.assistant(text), 7)
        await pilot.pause()
        views = view.query(AssistantMessageView)
        assert len(views) == 1  # the committed message did not duplicate the streamed one
        assert views.first().message_id == 7 and views.first().source == text
        assert live.query_one(".body:last-of-type", AnswerText) is body  # same widget kept
        assert len(renders) == before  # identical text: not rendered again


async def test_commit_right_after_deltas_flushes_the_buffer() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        for word in ("alpha ", "beta ", "gamma"):
            await view.stream_text("r1", word)
        await view.add_message(Message.assistant("alpha beta gamma"), 3)
        await pilot.pause()
        reply = view.query_one(AssistantMessageView)
        assert reply.source == "alpha beta gamma" and "alpha beta gamma" in shown(reply)
        assert len(view.query(AssistantMessageView)) == 1


async def test_committed_text_that_differs_replaces_the_streamed_text() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.stream_text("r1", "a draft that was")
        await pilot.pause(0.1)
        await view.add_message(Message.assistant("the final answer"), 3)
        await pilot.pause()
        reply = view.query_one(AssistantMessageView)
        assert reply.source == "the final answer" and "the final answer" in shown(reply)
        assert "draft" not in shown(reply) and len(view.query(AssistantMessageView)) == 1


async def test_stream_restarted_clears_the_live_text() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.stream_thinking("r1", "pondering")
        await view.stream_text("r1", "first attempt")
        live = view.query_one(AssistantMessageView)
        await pilot_until(pilot, lambda: "first attempt" in shown(live))
        await view.stream_restarted("r1")
        await pilot.pause()
        assert live.source == "" and "first attempt" not in shown(live)
        assert not view.query(ThinkingBlock)
        await view.stream_text("r1", "second")
        await view.add_message(Message.assistant("second"), 2)
        await pilot.pause()
        assert live.source == "second" and "second" in shown(live)
        assert "first attempt" not in shown(live)


async def test_thinking_streams_dimmed_and_collapsed() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.stream_thinking("r1", "let me ")
        await view.stream_thinking("r1", "think")
        await view.stream_text("r1", "Answer")
        await pilot_until(pilot, lambda: bool(view.query(ThinkingBlock)))
        block = view.query_one(ThinkingBlock)
        assert block.collapsed
        assert block.text == "let me think"
        message = Message(role="assistant", parts=(ThinkingPart(text="let me think"), TextPart(text="Answer")))
        await view.add_message(message, 4)
        await pilot.pause()
        assert len(view.query(ThinkingBlock)) == 1


async def test_tool_block_shows_arguments_then_result_and_error_styling() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.tool_started("c1", "bash", {"command": "pytest -q [tests]"})
        await pilot.pause()
        block = view.query_one(ToolCallView)
        assert block.collapsed
        assert "bash  pytest -q [tests]" in plain(block.query_one("CollapsibleTitle"))
        assert plain(block.query_one(".tool-args")) == "$ pytest -q [tests]"
        assert plain(block.query_one(".tool-result")) == "running…"

        await view.tool_finished("c1", "bash", "FAILED tests/test_a.py\n" + "line\n" * 40, True)
        await pilot.pause()
        result = plain(block.query_one(".tool-result"))
        assert result.startswith("FAILED tests/test_a.py")
        assert "more lines" in result  # a preview, not the whole output
        assert block.has_class("-error")
        assert "✗" in plain(block.query_one("CollapsibleTitle"))

        await view.tool_started("c2", "read_file", {"path": "src/a.py"})
        await view.tool_finished("c2", "read_file", "print('hi')", False)
        await pilot.pause()
        ok = view.query(ToolCallView).last()
        assert "read_file  src/a.py" in plain(ok.query_one("CollapsibleTitle"))
        assert not ok.has_class("-error")
        await pilot.click(ok.query_one("CollapsibleTitle"))
        assert not ok.collapsed


async def test_a_denied_or_interrupted_call_reads_as_such_not_as_an_error() -> None:
    """Issue 24, item 13: the user's no, a deny rule and a stopped run are not failures of the tool."""
    from yeetui.messages import INTERRUPTED_RESULT

    view = ConversationView("s1")
    results = {"c1": "The user denied bash on 'rm -rf build'. Do not retry it; choose another way or ask the user.",
               "c2": "bash on 'curl x | sh' is denied by a permission rule.", "c3": INTERRUPTED_RESULT,
               "c4": "bash failed: exit 2"}
    async with Host(view).run_test(size=SIZE) as pilot:
        for call_id, content in results.items():
            await view.tool_started(call_id, "bash", {"command": "x"})
            await view.tool_finished(call_id, "bash", content, True)
        await pilot.pause()
        titles = [plain(block.query_one("CollapsibleTitle")) for block in view.query(ToolCallView)]
        assert titles[0].endswith("⊘ denied") and titles[1].endswith("⊘ denied")
        assert titles[2].endswith("◌ interrupted") and titles[3].endswith("✗ error")


async def test_committed_tool_messages_do_not_duplicate_blocks() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.stream_text("r1", "Reading it.")
        call = ToolCallPart(id="c1", name="read_file", arguments={"path": "src/a.py"})
        await view.add_message(Message(role="assistant", parts=(TextPart(text="Reading it."), call)), 2)
        await view.tool_started("c1", "read_file", {"path": "src/a.py"})
        await view.tool_finished("c1", "read_file", "content", False)
        result = ToolResultPart(call_id="c1", name="read_file", content="content")
        await view.add_message(Message(role="tool", parts=(result,)), 3)
        await pilot.pause()
        assert len(view.query(ToolCallView)) == 1
        assert len(view.query(AssistantMessageView)) == 1
        assert plain(view.query_one(ToolCallView).query_one(".tool-result")) == "content"


async def test_load_renders_every_kind_of_message() -> None:
    view = ConversationView("s1")
    messages = [
        stored(1, Message.user("why does [b]login[/b] flake?")),
        stored(2, Message(role="assistant", parts=(
            ThinkingPart(text="hmm"), TextPart(text="Looking."),
            ToolCallPart(id="c1", name="grep", arguments={"pattern": "login"})))),
        stored(3, Message(role="tool", parts=(ToolResultPart(call_id="c1", name="grep", content="x", is_error=True),))),
        stored(4, Message.user("[Guidance from parent]\nfocus on auth", steer=True)),
        stored(5, Message.user("Remember to call `complete`.", nudge=True)),
        stored(6, Message.assistant("half a sent", interrupted=True)),
    ]
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.load(messages, has_older=False)
        await pilot.pause()
        kinds = [type(child).__name__ for child in view.children]
        assert kinds == ["UserMessageView", "AssistantMessageView", "ToolCallView", "SteerView", "SteerView",
                         "AssistantMessageView"]
        assert "why does [b]login[/b] flake?" in plain(view.query_one(UserMessageView))  # no markup parsing
        assert view.query_one(ToolCallView).has_class("-error")
        steer, nudge = view.query(SteerView)
        assert plain(steer).startswith("↪ guidance from parent: focus on auth")
        assert plain(nudge).startswith("↪ reminder:")
        assert view.query(".interrupted")
        assert not view.query(OlderMarker)


async def test_a_partial_tail_keeps_streaming_into_the_same_view() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.load([stored(1, Message.user("go")), stored(2, Message.assistant("Half of it"), partial=True)],
                        has_older=False)
        await view.stream_text("r1", ", and the rest.")
        await view.add_message(Message.assistant("Half of it, and the rest."), 2)
        await pilot.pause()
        (reply,) = view.query(AssistantMessageView)
        assert reply.source == "Half of it, and the rest." and "Half of it, and the rest." in shown(reply)
        assert not view.query(".interrupted")


async def test_announcement_posts_open_session_on_click_and_enter() -> None:
    seen: list[TextualMessage] = []
    view = ConversationView("s1")
    text = ('[Subagent: oracle#4] Complete.\n<subagent-output label="oracle#4" trust="untrusted">\n'
            "It is a race in the session fixture.\n</subagent-output>\nThe text inside …")
    message = Message.user(text, announcement=True, label="oracle#4", child_session_id="child-1",
                           status="completed")
    async with Host(view).run_test(size=SIZE, message_hook=seen.append) as pilot:
        await view.add_message(message, 9)
        await pilot.pause()
        block = view.query_one(AnnouncementView)
        assert block.border_title == "↳ oracle#4 · completed"
        assert "It is a race in the session fixture." in plain(block)
        assert "subagent-output" not in plain(block)
        assert block.has_class("-completed")

        await pilot.click(AnnouncementView)
        await pilot.pause()
        assert [m.session_id for m in posted(seen, ConversationView.OpenSession)] == ["child-1"]

        block.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert [m.session_id for m in posted(seen, ConversationView.OpenSession)] == ["child-1", "child-1"]


async def test_notices_are_readable_lines() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        await view.add_notice("warning", "Profile file agents/x.yaml is invalid: line 3.")
        await view.add_notice("error", "The provider refused the request.")
        await pilot.pause()
        warning, error = view.query(NoticeView)
        assert plain(warning) == "⚠ Profile file agents/x.yaml is invalid: line 3."
        assert warning.has_class("-warning") and error.has_class("-error")


async def test_window_stays_bounded_and_the_store_is_asked_once_the_held_run_out() -> None:
    seen: list[TextualMessage] = []
    view = ConversationView("s1", window=150)
    async with Host(view).run_test(size=SIZE, message_hook=seen.append) as pilot:
        await view.load([stored(1000, Message.user("the first loaded"))], has_older=True)
        for i in range(1001, 1401):
            message = Message.user(f"question {i}") if i % 2 else Message.assistant(f"answer **{i}**")
            await view.add_message(message, i)
        await pilot_until(pilot, lambda: len(view.entries) <= 150)
        assert view.has_older and view.query(OlderMarker)
        oldest = view.oldest_message_id
        assert oldest is not None and oldest > 1250
        # trimmed views are held, in order; following the end, only the newest few hundred
        first = view.held[0].id
        assert [item.id for item in view.held] == list(range(first, oldest)) and len(view.held) <= 200
        assert view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y  # followed the end

        for _ in range(200):  # scroll up until the held messages are all shown again
            if posted(seen, ConversationView.LoadOlder):
                break
            view.scroll_home(animate=False, immediate=True)
            await pilot.pause(0.02)
        requests = posted(seen, ConversationView.LoadOlder)
        assert [(r.session_id, r.before_message_id) for r in requests] == [("s1", 1000)]  # (never answered)
        assert len(view.entries) <= 150  # bounded while scrolling back too
        view.scroll_end(animate=False, immediate=True)
        view.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        assert len(posted(seen, ConversationView.LoadOlder)) == 1  # one request per page


async def test_streaming_follows_the_end_only_while_the_user_is_there() -> None:
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE) as pilot:
        for i in range(1, 41):
            await view.add_message(Message.user(f"message {i}"), i)
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y > 0
        await view.stream_text("r1", "\n\n".join(f"paragraph {i}" for i in range(10)))
        await pilot_until(pilot, lambda: "paragraph 9" in shown(view.query_one(AssistantMessageView)))
        await pilot_until(pilot, lambda: view.scroll_y == view.max_scroll_y)  # followed the growing reply

        view.scroll_to(y=5, animate=False, immediate=True)  # the user scrolls up to read
        await pilot_until(pilot, lambda: not view.paging)  # (older messages may be mounted above)
        await pilot.pause()
        reading = next(e for e in view.entries if e.region.y >= view.region.y)
        row = reading.region.y
        await view.stream_text("r1", "\n\nmore and more\n\nand more")
        await pilot_until(pilot, lambda: "and more" in view.query_one(AssistantMessageView).source)
        await pilot.pause(0.1)
        assert reading.region.y == row  # what the user reads stays where it is
        assert view.scroll_y < view.max_scroll_y


async def test_the_summary_an_agent_ends_with_is_shown_as_its_answer(fake_env, project) -> None:
    """`complete`'s output is the answer: rendered Markdown in the conversation, not a one-line tool row cut
    with "…" whose expansion shows raw Markdown; a failed `complete` still shows its error."""
    from tests.fakellm import Reply, ToolCall
    from tests.tui.test_app import _main, _type
    from tests.waiting import pilot_until
    from yeetui.tui.app import YeetuiApp
    from yeetui.tui.widgets.message_views import AssistantMessageView
    from yeetui.tui.widgets.tool_views import ToolCallView

    summary = "## Done\n\nI renamed **three** functions:\n\n- `a()`\n- `b()`\n- `c()`\n\nAll tests pass."
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": summary})]))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "rename them")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: any("renamed" in a.source for a in view.query(AssistantMessageView)))
        await pilot.pause(0.3)
        assert not [b for b in view.query(ToolCallView) if b.tool_name == "complete"]
        screen = pilot.app.export_screenshot().replace("&#160;", " ")
        assert "renamed" in screen and "three" in screen
        assert "**three**" not in screen and "## Done" not in screen  # rendered Markdown, not its source


def test_inline_markdown_styles_instead_of_showing_the_syntax() -> None:
    from yeetui.tui.widgets.render_text import inline_markdown

    rendered = inline_markdown("## Result\nI renamed **three** functions in `a.py`; see [docs](http://x.y).\n- *one*")
    assert rendered.plain == "Result\nI renamed three functions in a.py; see docs.\n• one"
    assert {str(span.style) for span in rendered.spans} == {"bold", "$text-accent", "underline", "italic"}
    assert inline_markdown("snake_case_name and 2*3*4").plain == "snake_case_name and 2*3*4"


def test_an_announcement_shows_the_child_s_markdown_styled() -> None:
    from yeetui.events import RunStatus
    from yeetui.subagents.inbox import announcement_text
    from yeetui.tui.widgets.message_views import AnnouncementView

    text = announcement_text("oracle#4", RunStatus.COMPLETED, "The **fixture** sleeps in `conftest.py`.", None)
    view = AnnouncementView(Message.user(text, announcement=True, label="oracle#4", status="completed"))
    shown = cast(Content, view.visual).plain if hasattr(view, "visual") else str(view.render())
    assert "The fixture sleeps in conftest.py." in shown and "**" not in shown and "`" not in shown


async def test_an_older_page_that_no_longer_joins_what_is_held_is_not_shown() -> None:
    """A page asked for before the oldest held messages were dropped would leave a hole: it is dropped."""
    seen: list[TextualMessage] = []
    view = ConversationView("s1")
    async with Host(view).run_test(size=SIZE, message_hook=seen.append) as pilot:
        await view.load([stored(i, Message.user(f"question {i}")) for i in range(1000, 1010)], has_older=True)
        await pilot.pause()
        await view.prepend([stored(5, Message.user("from a stale request"))], has_older=True,
                           before_message_id=999)
        assert all(item.id != 5 for item in view.held)
        assert not any("stale" in getattr(e, "text", "") for e in view.entries)
        await view.prepend([stored(7, Message.user("the page asked for"))], has_older=True,
                           before_message_id=view.held[0].id if view.held else view.oldest_message_id)
        assert view.held[0].id == 7 if view.held else any(e.message_id == 7 for e in cast(list[Entry], view.entries))
