"""A stored conversation as the updates that show it again: what the user and the agent said, the calls with their
endings, a turn's answer as the agent's text; never what yeetui itself added to the conversation."""

from __future__ import annotations

from typing import Any

from yeetui.acp.replay import Replay
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart


def _shown(messages: list[Message]) -> list[tuple[str, Any]]:
    replay = Replay()
    shown = []
    for message in messages:
        for update in replay.updates(message):
            content = getattr(update, "content", None)
            what = content.text if hasattr(content, "text") else (update.tool_call_id, update.status)
            shown.append((update.session_update, what))
    return shown


def test_a_conversation_is_shown_as_it_was_said_and_its_answer_as_text() -> None:
    messages = [
        Message.user("find it"),
        Message(role="assistant", parts=(ThinkingPart(text="hm", signature="s"), TextPart(text="Looking."),
                                         ToolCallPart(id="c1", name="grep", arguments={"pattern": "x"}))),
        Message(role="tool", parts=(ToolResultPart(call_id="c1", name="grep", content="a.py:1: x"),)),
        Message(role="assistant", parts=(ToolCallPart(id="c2", name="complete", arguments={"output": "In a.py."}),)),
        Message(role="tool", parts=(ToolResultPart(call_id="c2", name="complete", content="Run completed."),)),
    ]
    assert _shown(messages) == [
        ("user_message_chunk", "find it"), ("agent_thought_chunk", "hm"), ("agent_message_chunk", "Looking."),
        ("tool_call", ("c1", "in_progress")), ("tool_call_update", ("c1", "completed")),
        ("agent_message_chunk", "\n\nIn a.py.")]


def test_what_yeetui_added_is_not_shown_and_a_refused_answer_fails() -> None:
    messages = [
        Message.user("go"),
        Message(role="assistant", parts=(ToolCallPart(id="c1", name="complete", arguments={"output": "{bad"}),)),
        Message(role="tool", parts=(ToolResultPart(call_id="c1", name="complete", content="not JSON",
                                                   is_error=True),)),
        Message.user("You stopped without calling complete.", nudge=True),
        Message.user("oracle#1 finished: 42", announcement=True),
        Message.user("[Summary of the conversation so far]", compaction=True),
        Message(role="assistant", parts=(TextPart(text="Done."),)),
    ]
    assert _shown(messages) == [
        ("user_message_chunk", "go"), ("agent_message_chunk", "{bad"), ("tool_call", ("c1", "failed")),
        ("agent_message_chunk", "Done.")]
