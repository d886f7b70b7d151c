"""`anthropic/*` models through the official SDK: neutral messages in, raw stream events out.

The SDK is imported on the first call (importing it costs about a second), its own retries are off
(`yeetui.providers.retry` owns retrying), and every failure leaves as a `ProviderError` whose text names
what went wrong without the key.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from yeetui.errors import ProviderError
from yeetui.heavy_imports import gc_paused
from yeetui.messages import (
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    pair_tool_results,
)
from yeetui.providers.base import (
    ModelRequest,
    StreamDone,
    StreamItem,
    TextChunk,
    ThinkingChunk,
    ThinkingLevel,
    ToolCallChunk,
    UsageChunk,
    is_quota_error,
    missing_key,
    parse_tool_arguments,
)
from yeetui.redact import redact

THINKING_BUDGETS: dict[ThinkingLevel, int] = {"low": 2048, "medium": 8192, "high": 24576}

_CACHE = {"type": "ephemeral"}

_RETRYABLE_STATUS = frozenset({408, 409, 429})

# In-stream `error` events arrive on an HTTP 200 response; these types are worth another attempt.
_NOT_RETRYABLE_TYPES = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error",
     "request_too_large", "billing_error"}
)

_STATUS_WORDING = {
    400: "Anthropic rejected the request",
    401: "Anthropic rejected the API key",
    402: "Anthropic refused the request for billing reasons",
    403: "Anthropic refused the request (the key lacks permission)",
    404: "Anthropic does not know this model or endpoint",
    408: "Anthropic timed out the request",
    409: "Anthropic reported a conflict",
    413: "The request is too large for Anthropic",
    429: "Anthropic rate-limited the request",
    529: "Anthropic is overloaded",
}


# ---------------------------------------------------------------------------------------------------
# Neutral → Anthropic


def _tool_id(call_id: str) -> str:
    """Anthropic accepts tool ids matching ^[a-zA-Z0-9_-]+$; ids from other providers (`call.1`) are mapped
    the same way on both the call and its result, so pairs stay paired."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id) or "call"


def _blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text.strip():  # the API rejects empty and whitespace-only text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart):
            if message.role != "assistant":
                continue
            if part.redacted:
                blocks.append({"type": "redacted_thinking", "data": part.text})
            elif part.signature:  # unsigned thinking (e.g. from another provider) cannot be sent back
                blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif isinstance(part, ToolCallPart):
            # Malformed arguments (raw_arguments set) go back as {}; the tool result explains the error.
            blocks.append(
                {"type": "tool_use", "id": _tool_id(part.id), "name": part.name, "input": dict(part.arguments)}
            )
        elif isinstance(part, ToolResultPart):
            block: dict[str, Any] = {  # an empty error result is rejected by the API
                "type": "tool_result", "tool_use_id": _tool_id(part.call_id), "content": part.content or "(no output)"
            }
            if part.is_error:
                block["is_error"] = True
            blocks.append(block)
    return blocks


def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Translate to Anthropic's alternating user/assistant turns.

    Tool results become user-role `tool_result` blocks; consecutive messages of the same role are merged
    (tool results first within a user turn, as the API requires); messages left empty are dropped.
    """
    turns: list[dict[str, Any]] = []
    for message in pair_tool_results(messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")  # stable: keeps each group's order
    return turns


def build_params(request: ModelRequest) -> dict[str, Any]:
    """Keyword arguments for `client.messages.create(stream=True, **params)`.

    Prompt caching: the system prompt and the last block of the conversation carry cache breakpoints, so
    each turn of an agent loop re-reads the previous turn's prefix from the cache.
    """
    messages = to_anthropic_messages(request.messages)
    if messages:
        last = messages[-1]["content"][-1]
        if last["type"] in ("text", "tool_result"):
            last["cache_control"] = _CACHE
    params: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
    }
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    if request.thinking != "off":
        budget = THINKING_BUDGETS[request.thinking]
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if request.max_tokens <= budget:  # max_tokens counts thinking too; leave room for the answer
            params["max_tokens"] = budget + request.max_tokens
    return params


# ---------------------------------------------------------------------------------------------------
# Anthropic stream events → neutral


@dataclass
class _Block:
    type: str
    text: str = ""
    signature: str | None = None
    id: str = ""
    name: str = ""


@dataclass
class StreamAccumulator:
    """Folds raw stream events into chunks as they come and the final message at the end."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None
    finished: bool = False

    def _add_usage(self, usage: Any) -> None:
        for src, dst in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_input_tokens", "cache_read_tokens"),
            ("cache_creation_input_tokens", "cache_write_tokens"),
        ):
            value = getattr(usage, src, None)
            if value is not None:  # message_delta counts are cumulative: the latest value wins
                self.usage[dst] = value

    def feed(self, event: Any) -> list[StreamItem]:
        kind = event.type
        if kind == "message_start":
            self._add_usage(event.message.usage)
            return [UsageChunk(Usage(**self.usage))]
        elif kind == "content_block_start":
            cb = event.content_block
            if cb.type == "text":
                self.blocks[event.index] = _Block("text", cb.text)
                return [TextChunk(cb.text)] if cb.text else []
            if cb.type == "thinking":
                self.blocks[event.index] = _Block("thinking", cb.thinking, cb.signature or None)
                return [ThinkingChunk(cb.thinking)] if cb.thinking else []
            if cb.type == "redacted_thinking":
                self.blocks[event.index] = _Block("redacted_thinking", cb.data)
            elif cb.type == "tool_use":
                self.blocks[event.index] = _Block("tool_use", id=cb.id, name=cb.name)
                return [ToolCallChunk(id=cb.id, name=cb.name)]
        elif kind == "content_block_delta":
            block = self.blocks.get(event.index)
            delta = event.delta
            if block is None:
                return []
            if delta.type == "text_delta":
                block.text += delta.text
                return [TextChunk(delta.text)] if delta.text else []
            if delta.type == "thinking_delta":
                block.text += delta.thinking
                return [ThinkingChunk(delta.thinking)] if delta.thinking else []
            if delta.type == "signature_delta":
                block.signature = delta.signature
            elif delta.type == "input_json_delta":
                block.text += delta.partial_json
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._add_usage(event.usage)
            return [UsageChunk(Usage(**self.usage))]
        elif kind == "message_stop":
            self.finished = True
        return []

    def message(self) -> Message:
        parts: list[Part] = []
        for _, block in sorted(self.blocks.items()):
            if block.type == "text" and block.text:
                parts.append(TextPart(text=block.text))
            elif block.type == "thinking":
                parts.append(ThinkingPart(text=block.text, signature=block.signature))
            elif block.type == "redacted_thinking":
                parts.append(ThinkingPart(text=block.text, redacted=True))
            elif block.type == "tool_use":
                arguments, raw = parse_tool_arguments(block.text)
                parts.append(
                    ToolCallPart(id=block.id, name=block.name, arguments=arguments, raw_arguments=raw)
                )
        return Message(role="assistant", parts=tuple(parts))

    def done(self) -> StreamDone:
        return StreamDone(message=self.message(), usage=Usage(**self.usage),
                          stop_reason=self.stop_reason or "end_turn")


# ---------------------------------------------------------------------------------------------------
# Errors


def _retry_after(headers: Any) -> float | None:
    try:
        if ms := headers.get("retry-after-ms"):
            return float(ms) / 1000
        if seconds := headers.get("retry-after"):
            return float(seconds)
    except (TypeError, ValueError):  # an HTTP-date or garbage: fall back to our own backoff
        return None
    return None


def status_error(exc: Any, secrets: list[str]) -> ProviderError:
    """Map an `anthropic.APIStatusError` (HTTP error, or an `error` event inside a 200 stream)."""
    status: int = exc.status_code
    err_type = getattr(exc, "type", None) or "error"
    detail = getattr(exc, "api_message", None) or str(getattr(exc, "message", "")) or "no details given"
    if status < 400:  # an `error` event mid-stream; the SDK does not retry these
        retryable = err_type not in _NOT_RETRYABLE_TYPES
        overloaded = err_type == "overloaded_error"
        wording = "Anthropic is overloaded" if overloaded else "Anthropic reported an error"
        text = f"{wording} mid-stream ({err_type}): {detail}"
        return ProviderError(redact(text, secrets), status=None, retryable=retryable,
                             quota=is_quota_error(None, err_type, detail))
    retryable = status in _RETRYABLE_STATUS or status >= 500
    wording = _STATUS_WORDING.get(status) or (
        "Anthropic had a server error" if status >= 500 else "Anthropic rejected the request"
    )
    text = f"{wording} ({status} {err_type}): {detail}"
    return ProviderError(redact(text, secrets), status=status, retryable=retryable,
                         retry_after=_retry_after(exc.response.headers) if retryable else None,
                         quota=is_quota_error(status, err_type, detail))


def _where(base_url: str | None) -> str:
    if not base_url:
        return "Anthropic"
    parts = urlsplit(base_url)
    return f"Anthropic at {parts.hostname}{f':{parts.port}' if parts.port else ''}"


# ---------------------------------------------------------------------------------------------------


class AnthropicProvider:
    """Provider for `anthropic/*` models (also any Anthropic-compatible endpoint via `base_url`)."""

    name = "anthropic"

    def __init__(self, api_key: str | None, base_url: str | None, timeout: float = 600) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._client: Any = None
        self._creating: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"AnthropicProvider(base_url={self._base_url!r})"

    def missing_credentials(self) -> str | None:
        return missing_key("anthropic", "Anthropic", self._api_key)

    def _new_client(self) -> Any:
        with gc_paused():
            import anthropic  # lazily: importing the SDK costs about a second

        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )

    async def _get_client(self) -> Any:
        """The SDK client, made once and reused by every stream. It is built in a worker thread: importing
        the SDK and loading the TLS certificates takes 50–100 ms (seconds for a cold import), which
        would stall the event loop — every key press and frame of a TUI — each time a model is first used."""
        if self._client is None:
            if (problem := self.missing_credentials()) is not None:
                raise ProviderError(problem, retryable=False)
            if self._creating is None:
                self._creating = asyncio.Lock()
            async with self._creating:  # concurrent first streams (a burst of spawns) share one client
                if self._client is None:
                    self._client = await asyncio.to_thread(self._new_client)
        return self._client

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool (a no-op if no call was ever made)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        client = await self._get_client()
        import anthropic  # for its exception types; already loaded by _get_client, in a worker thread

        secrets = [self._api_key] if self._api_key else []
        timeouts: tuple[type[BaseException], ...] = (anthropic.APITimeoutError, *_transport_errors("TimeoutException"))
        dropped: tuple[type[BaseException], ...] = (anthropic.APIConnectionError, *_transport_errors("HTTPError"))
        acc = StreamAccumulator()
        try:
            events = await client.messages.create(stream=True, **build_params(request))
            try:
                async for event in events:
                    for item in acc.feed(event):
                        yield item
            finally:
                await events.close()
        except anthropic.APIStatusError as exc:
            raise status_error(exc, secrets) from exc
        except timeouts as exc:
            raise ProviderError(
                f"{_where(self._base_url)} did not answer within {self._timeout:g} s.", retryable=True
            ) from exc
        except dropped as exc:
            raise ProviderError(
                f"The connection to {_where(self._base_url)} dropped ({type(exc).__name__}).", retryable=True
            ) from exc
        except ValueError as exc:  # a garbled SSE event (JSON that does not parse): worth another try
            raise ProviderError(
                f"{_where(self._base_url)} sent a malformed stream event ({type(exc).__name__}).",
                retryable=True,
            ) from exc
        except anthropic.APIError as exc:  # e.g. a response that did not match the schema
            raise ProviderError(
                redact(f"{_where(self._base_url)} sent an unexpected response: {exc.message}", secrets)
            ) from exc
        if not acc.finished:
            raise ProviderError(
                f"The connection to {_where(self._base_url)} dropped: the stream ended before message_stop.",
                retryable=True,
            )
        yield acc.done()


def _transport_errors(name: str) -> tuple[type[BaseException], ...]:
    """HTTP library errors (`HTTPError`, `TimeoutException`) a half-read stream can raise: the SDK wraps
    only errors of the request itself, not those of reading the body."""
    modules = (sys.modules.get(module) for module in ("httpx2", "httpx"))  # only those already loaded
    return tuple(getattr(m, name) for m in modules if m is not None and hasattr(m, name))
