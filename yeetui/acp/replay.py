"""A stored conversation as the session updates that show it again (`session/load`, and following a conversation
another yeetui runs): what the user said, what the agent said and thought, each tool call with its ending, and
the answer a turn ended with as the agent's text — what an editor saw of it live, from the store.

Not shown: what yeetui itself added to the conversation (the runner's reminders, subagents' results delivered to
it, a compaction's summary), which an editor never saw live either.
"""

from __future__ import annotations

from typing import Any

from yeetui.acp import updates
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, typed_text

UNSHOWN = ("nudge", "announcement", "compaction")
"""Meta flags of the user messages yeetui added to a conversation, not the user."""


class Replay:
    """The updates of one conversation's messages, given in order (it remembers what a later message needs: which
    calls were answers, what the agent said last)."""

    def __init__(self) -> None:
        self._answered: set[str] = set()
        self._said = ""

    def updates(self, message: Message) -> list[Any]:
        if message.role == "user":
            self._said = ""
            if any(message.meta.get(flag) for flag in UNSHOWN) or not (text := typed_text(message)):
                return []
            return [updates.user_chunk(text)]
        if message.role == "tool":
            return [self._result(part.call_id, part.name, part.content, part.is_error)
                    for part in message.tool_results if part.call_id not in self._answered or part.is_error]
        shown: list[Any] = []
        for part in message.parts:
            if isinstance(part, ThinkingPart) and not part.redacted and part.text:
                shown.append(updates.thought(part.text))
            elif isinstance(part, ToolCallPart):
                shown.append(self._call(part))
            elif isinstance(part, TextPart) and part.text:
                shown.append(self._say(part.text))
        return shown

    def _call(self, call: ToolCallPart) -> Any:
        if (text := updates.answer(call.name, call.arguments)) is not None:
            self._answered.add(call.id)
            return self._say(updates.after(self._said, text))
        return updates.stored_call(call)

    def _result(self, call_id: str, name: str, content: str, is_error: bool) -> Any:
        if call_id in self._answered:
            return updates.refused_answer(call_id, name, content)
        return updates.tool_result(call_id, content, is_error)

    def _say(self, text: str) -> Any:
        self._said = (self._said + text)[-2:]
        return updates.text_chunk(text)
