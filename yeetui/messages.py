"""yeetui's own, provider-neutral message model.

Providers translate to and from these shapes inside `yeetui/providers/<name>.py`; nothing else ever sees
an Anthropic or litellm object. Everything here round-trips through JSON (`Message.model_dump_json()` /
`Message.model_validate_json()`), which is how messages are stored.
"""

from __future__ import annotations

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

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
