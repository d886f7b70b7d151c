"""yeetui's own, provider-neutral message model.

Providers translate to and from these shapes inside `yeetui/providers/<name>.py`; nothing else ever sees
an Anthropic or litellm object. Everything here round-trips through JSON (`Message.model_dump_json()` /
`Message.model_validate_json()`), which is how messages are stored. `pair_tool_results` makes a conversation
one every provider accepts: each tool call answered, no result without its call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_FROZEN = ConfigDict(frozen=True, defer_build=True)
"""Validators are built when first used (a stored message read, a reply committed), not at import: a new
session opens without them."""


class _Part(BaseModel):
    model_config = _FROZEN


class TextPart(_Part):
    kind: Literal["text"] = "text"
    text: str


class ThinkingPart(_Part):
    kind: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None
    """Anthropic's signature; must be sent back unchanged with the thinking block."""
    redacted: bool = False
    """A redacted_thinking block: `text` then holds the opaque data."""


class ToolCallPart(_Part):
    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    """Set when the model's argument JSON did not parse; `arguments` is then empty."""


class ToolResultPart(_Part):
    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str = ""
    content: str
    is_error: bool = False


Part = Annotated[TextPart | ThinkingPart | ToolCallPart | ToolResultPart, Field(discriminator="kind")]

Role = Literal["user", "assistant", "tool"]


class Message(BaseModel):
    """One conversation message. Tool results travel in `role="tool"` messages."""

    model_config = _FROZEN

    role: Role
    parts: tuple[Part, ...] = ()
    meta: dict[str, Any] = Field(default_factory=dict)
    """yeetui's own annotations (e.g. {"nudge": true}, {"interrupted": true}); never sent to providers."""

    @classmethod
    def user(cls, text: str, **meta: Any) -> Message:
        return cls(role="user", parts=(TextPart(text=text),), meta=meta)

    @classmethod
    def assistant(cls, text: str, **meta: Any) -> Message:
        return cls(role="assistant", parts=(TextPart(text=text),), meta=meta)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]


class Usage(BaseModel):
    """Token counts for one provider call, or summed over a run."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    def beyond(self, counted: Usage) -> Usage:
        """What this (cumulative) usage adds to `counted`, the part of it already counted; never negative."""
        return Usage(
            input_tokens=max(0, self.input_tokens - counted.input_tokens),
            output_tokens=max(0, self.output_tokens - counted.output_tokens),
            cache_read_tokens=max(0, self.cache_read_tokens - counted.cache_read_tokens),
            cache_write_tokens=max(0, self.cache_write_tokens - counted.cache_write_tokens),
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


INTERRUPTED_RESULT = "Interrupted: the run stopped before this tool call finished; its effect is unknown."
"""The result given to a tool call that has none: its process died, or the run was stopped, while it ran."""
DENIED_BY_USER = "The user denied "
"""How the result of a call the user refused at its permission prompt begins."""
DENIED_BY_RULE = " is denied by a permission rule."
"""How the result of a call a `deny` rule refused ends."""
DENIED_UNATTENDED = "Refused without asking: "
"""How the result of a call under an `ask` rule begins when nobody could be asked (a headless run)."""

ToolOutcome = Literal["done", "error", "denied", "interrupted"]


def tool_outcome(content: str, is_error: bool) -> ToolOutcome:
    """What became of a tool call, read from its result: done, failed, refused (by the user or a rule) or cut
    off when its run stopped — so a view can say "denied" rather than "error"."""
    if not is_error:
        return "done"
    if content.startswith((DENIED_BY_USER, DENIED_UNATTENDED)) or content.endswith(DENIED_BY_RULE):
        return "denied"
    if content == INTERRUPTED_RESULT:
        return "interrupted"
    return "error"


def pair_tool_results(messages: Iterable[Message]) -> list[Message]:
    """`messages` with every tool call answered by a result in the messages right after it, and no result
    without its call, as the model APIs require (see `pair_tool_results_with_sources`)."""
    return [message for message, _ in pair_tool_results_with_sources(messages)]


def pair_tool_results_with_sources(messages: Iterable[Message]) -> Iterator[tuple[Message, int | None]]:
    """Answer every unanswered tool call and drop every orphaned result; yields each resulting message with
    the index of the input message it stands for (None for an added answer).

    A conversation resumed after a crash or an interrupt can hold a tool call whose result was never
    recorded, or (rarer) a result whose call is gone; either makes Anthropic and OpenAI reject the whole
    request. The calls still unanswered when the next assistant message or a message with other content
    begins (or the conversation ends) get one added `role="tool"` message of error results saying they were
    interrupted (`INTERRUPTED_RESULT`, meta `{"interrupted": True}`); results answering no call of the
    assistant message before them are dropped. A complete conversation comes back unchanged.

    The providers send what `pair_tool_results` returns; `yeetui.runs.history.repair_history` uses the
    sources to store the answers it can append.
    """
    pending: dict[str, str] = {}  # call id → tool name, for the calls of the last assistant message

    def answer_pending() -> Iterator[tuple[Message, None]]:
        if pending:
            answer = Message(role="tool", meta={"interrupted": True}, parts=tuple(
                ToolResultPart(call_id=call_id, name=name, content=INTERRUPTED_RESULT, is_error=True)
                for call_id, name in pending.items()))
            pending.clear()
            yield answer, None

    for index, message in enumerate(messages):
        if message.role == "assistant":
            yield from answer_pending()
            yield message, index
            pending.update({call.id: call.name for call in message.tool_calls})
            continue
        results = message.tool_results
        if not results:
            yield from answer_pending()
            yield message, index
            continue
        kept = tuple(p for p in message.parts if not isinstance(p, ToolResultPart) or p.call_id in pending)
        for part in results:
            pending.pop(part.call_id, None)
        if any(not isinstance(p, ToolResultPart) for p in kept):
            yield from answer_pending()  # other content after the results: answer the rest before it
        if kept:
            yield (message if kept == message.parts else message.model_copy(update={"parts": kept})), index
    yield from answer_pending()


# -- how a user's prompt with attachments reads --------------------------------------------------------------

ATTACHMENT_CAP_BYTES = 51_200
"""Bytes of a file `@mentioned` in a prompt that are sent with it (the head is kept), as for a `file:` context."""


def typed_text(message: Message) -> str:
    """What the user typed: the first text part of a prompt with attachments, else the whole text."""
    if message.meta.get("attachments") and message.parts and isinstance(message.parts[0], TextPart):
        return message.parts[0].text
    return message.text


def attachment_note(meta: dict[str, Any]) -> str:
    """`calc.py (12 lines)`, `big.log (1300 lines, cut at 50 KB of 2 MB)`: an attachment as the user reads it."""
    lines = meta.get("lines", 0)
    text = f"{meta.get('path', '?')} ({lines} line{'s' if lines != 1 else ''}"
    if meta.get("truncated"):
        text += f", the first {ATTACHMENT_CAP_BYTES // 1024} KB of {_size(int(meta.get('size') or 0))}"
    return text + ")"


def _size(count: int) -> str:
    if count >= 1 << 20:
        return f"{count / (1 << 20):.1f} MB"
    return f"{count // 1024} KB"
