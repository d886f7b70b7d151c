"""The neutral script a test gives the fake server. One Reply answers one request, in either wire format.

Selection: on each request the server takes the first not-yet-used Reply whose `when_contains` (if set)
occurs in the request body's JSON text; a Reply with `repeat=True` is never used up. No match → the
server answers HTTP 500 with a body saying "fake LLM: no scripted reply for request N", so a test that
under-scripts fails loudly instead of hanging.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None
    """Send this exact text as the argument JSON (e.g. malformed `{"path": "a.txt"`)."""
    id: str | None = None
    fill: dict[str, str] = field(default_factory=dict)
    """Placeholders in the arguments (or `raw`) replaced, as the reply is sent, by the first group of a regular
    expression's first match in the request's strings: an id an earlier tool result gave, which the script
    cannot know (`{"AGENT": r'"agent_id":\\s*"([^"]+)"'}` for a Codex subagent to wait for). A pattern that
    matches nothing leaves its placeholder."""


@dataclass
class Fault:
    kind: Literal["status", "overloaded_in_stream", "drop", "malformed_sse"]
    status: int = 500
    """For kind=status: the HTTP status (429, 500, 529, 401, …) with a wire-correct error body."""
    after_chars: int = 0
    """For in-stream faults: how many characters of text to stream before the fault."""
    retry_after: float | None = None
    message: str | None = None
    """The error body's message (status and in-stream error faults); None: the provider's usual wording.
    Lets a test make a provider echo what it was sent — its API key, say."""

    @classmethod
    def http(cls, status: int, retry_after: float | None = None, message: str | None = None) -> Fault:
        return cls(kind="status", status=status, retry_after=retry_after, message=message)

    @classmethod
    def overloaded_in_stream(cls, after_chars: int = 0, message: str | None = None) -> Fault:
        return cls(kind="overloaded_in_stream", after_chars=after_chars, message=message)

    @classmethod
    def drop(cls, after_chars: int = 0) -> Fault:
        """Close the connection abruptly mid-stream."""
        return cls(kind="drop", after_chars=after_chars)


@dataclass
class Reply:
    text: str = ""
    thinking: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop: str | None = None
    """Stop reason; default `tool_use`/`tool_calls` when tool_calls is set, else `end_turn`/`stop`."""
    fault: Fault | None = None
    when_contains: str | None = None
    repeat: bool = False
    chunk_size: int = 4
    """Characters of text per streamed delta."""
    chunk_delay: float = 0.0
    """Seconds to sleep between streamed deltas (concurrency and kill tests)."""
    after_requests: int = 0
    """Hold this answer until the server has received this many requests in all: forces one run's reply to
    come after another run's request (e.g. a child finishing only once its parent's next turn began)."""
    usage: dict[str, int] | None = None
    """input_tokens / output_tokens / cache_read_tokens / cache_write_tokens; defaults are computed."""
    usage_every_chunk: bool = False
    """OpenAI wire: every streamed chunk carries the usage so far (one more output token each), as Gemini's
    API does through litellm; the last carries the whole."""

    @classmethod
    def tool(cls, name: str, /, **arguments: Any) -> Reply:
        return cls(tool_calls=[ToolCall(name=name, arguments=arguments)])

    @classmethod
    def error(cls, status: int, retry_after: float | None = None) -> Reply:
        return cls(fault=Fault.http(status, retry_after))
