"""The Provider seam: one streaming call to a model, in yeetui's own message model.

A provider makes exactly one attempt per `stream()` call (SDK-level retries are switched off);
`yeetui.providers.retry` decides about retries, so that a retry never duplicates text already shown.
Errors are raised as `yeetui.errors.ProviderError` with `retryable` set, and their text never contains
an API key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from yeetui.messages import Message, Usage

ThinkingLevel = Literal["off", "low", "medium", "high"]


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    model: str
    """The model id without the provider prefix (e.g. `claude-sonnet-4-5`, `gpt-5`)."""
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 8192
    thinking: ThinkingLevel = "off"


@dataclass(frozen=True)
class TextChunk:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class ThinkingChunk:
    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolCallChunk:
    """A tool call began streaming (arguments arrive later, in the final message)."""

    id: str
    name: str
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class StreamDone:
    """The last item of every successful stream: the whole assistant message."""

    message: Message
    usage: Usage
    stop_reason: str
    kind: Literal["done"] = "done"


StreamItem = TextChunk | ThinkingChunk | ToolCallChunk | StreamDone


class Provider(Protocol):
    name: str
    """`anthropic`, `openai`, `gemini`, … — the prefix of `provider/model`."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Yield chunks as they arrive, then exactly one StreamDone. Raise ProviderError on failure."""
        ...


def split_model(name: str) -> tuple[str, str]:
    """`anthropic/claude-sonnet-4-5` → (`anthropic`, `claude-sonnet-4-5`). A bare name is an error."""
    provider, sep, model = name.partition("/")
    if not sep or not provider or not model:
        from yeetui.errors import ConfigError

        raise ConfigError(
            f"Model {name!r} is not of the form provider/model "
            "(for example anthropic/claude-sonnet-4-5 or openai/gpt-5)."
        )
    return provider, model
