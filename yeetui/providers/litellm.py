"""Every non-Anthropic model (`openai/…`, `gemini/…`, `openrouter/…`, `ollama/…`) through litellm.

litellm costs about three seconds to import, so it is imported inside the first call, never at module
import and never on an Anthropic-only path. Before that import `LITELLM_LOCAL_MODEL_COST_MAP` is defaulted
to `True`; otherwise litellm fetches its price map from GitHub on import.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import logging
import os
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yeetui.errors import ProviderError
from yeetui.heavy_imports import gc_paused
from yeetui.messages import Message, Part, TextPart, ThinkingPart, ToolCallPart, Usage, pair_tool_results
from yeetui.providers.base import (
    ModelRequest,
    StreamDone,
    StreamItem,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    UsageChunk,
    is_quota_error,
    missing_key,
    parse_tool_arguments,
)
from yeetui.redact import redact

_LABELS = {"openai": "OpenAI", "gemini": "Gemini", "openrouter": "OpenRouter", "ollama": "Ollama",
           "mistral": "Mistral", "deepseek": "DeepSeek", "groq": "Groq", "xai": "xAI"}

# OpenAI finish reasons → the Anthropic-style vocabulary yeetui uses for StreamDone.stop_reason.
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                "length": "max_tokens", "content_filter": "refusal"}

_STATUS_WORDING = {
    400: "rejected the request",
    401: "rejected the API key",
    403: "refused the request (the key lacks permission)",
    404: "does not know this model or endpoint",
    408: "timed out the request",
    409: "reported a conflict",
    422: "could not process the request",
    429: "rate-limited the request",
}
_RETRYABLE_STATUS = frozenset({408, 409, 429})


_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


_ready: Any = None
"""The configured litellm module, once `_import_litellm` has run."""


async def _litellm() -> Any:
    """litellm, imported and configured in a worker thread the first time: the import takes seconds, and
    on the event loop it would freeze the TUI."""
    global _ready
    if _ready is None:
        _ready = await asyncio.to_thread(_import_litellm)
    return _ready


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else: a network fetch at import
    # In its default "DEV" mode litellm loads a `.env` found above its install dir at import: with a venv
    # inside a cloned repository that is the repository's `.env`, whose OPENAI_BASE_URL would get the key.
    os.environ["LITELLM_MODE"] = "PRODUCTION"
    with gc_paused():
        import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # litellm attaches handlers that print to stdout/stderr, which would scribble over the TUI. Without
    # them its records propagate to yeetui's own logging (a file, through the redacting filter).
    for name in _LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler) is not logging.FileHandler and isinstance(handler, logging.StreamHandler):
                logger.removeHandler(handler)
    return litellm


def known_providers() -> set[str]:
    """The provider prefixes litellm can call (for `profiles validate`): its `LlmProviders` enum, read from
    litellm's source where it is found (milliseconds), else from the imported package (seconds)."""
    return providers_in_source() or {str(getattr(p, "value", p)) for p in _import_litellm().provider_list}


def providers_in_source() -> set[str]:
    """The values of litellm's `LlmProviders` enum (what its `provider_list` is made of), read from
    `litellm/types/utils.py` without importing litellm; empty when that file or class is not there."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return set()
    if spec is None or not spec.submodule_search_locations:
        return set()
    for folder in spec.submodule_search_locations:
        try:
            tree = ast.parse(Path(folder, "types", "utils.py").read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "LlmProviders":
                return {statement.value.value for statement in node.body
                        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                        and isinstance(statement.value.value, str)}
    return set()


# ---------------------------------------------------------------------------------------------------
# Neutral → OpenAI chat format


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Translate to OpenAI chat messages: a system message, then user/assistant/tool messages.

    Assistant tool calls carry JSON-string arguments (`{}` for calls whose arguments were malformed);
    each tool result becomes its own `role: tool` message. Thinking is not sent back: the chat format
    has no place for it.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in pair_tool_results(messages):
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        if message.role == "assistant":
            calls = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                for c in message.tool_calls
            ]
            if not text and not calls:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        for result in message.tool_results:
            content = result.content
            if result.is_error and not content.lower().startswith("error"):
                content = f"Error: {content}"  # the chat format has no is_error flag
            out.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
        if text:
            out.append({"role": "user", "content": text})
    return out


def to_openai_tools(request: ModelRequest) -> list[dict[str, Any]]:
    return [
        {"type": "function",
         "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in request.tools
    ]


# ---------------------------------------------------------------------------------------------------
# Stream chunks → neutral


@dataclass
class _Call:
    id: str
    name: str = ""
    arguments: str = ""
    announced: bool = False


@dataclass
class ChunkAccumulator:
    """Folds litellm stream chunks (OpenAI delta shape) into chunks and the final message."""

    text: str = ""
    thinking: str = ""
    calls: dict[int, _Call] = field(default_factory=dict)
    order: list[_Call] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None

    def feed(self, chunk: Any) -> list[StreamItem]:
        items: list[StreamItem] = []
        if (usage := getattr(chunk, "usage", None)) is not None:
            self.usage = _usage(usage)
            items.append(UsageChunk(self.usage))
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            if delta is not None:
                if thinking := getattr(delta, "reasoning_content", None):
                    self.thinking += thinking
                    items.append(ThinkingChunk(thinking))
                if content := getattr(delta, "content", None):
                    self.text += content
                    items.append(TextChunk(content))
                for position, call in enumerate(getattr(delta, "tool_calls", None) or []):
                    items.extend(self._feed_call(position, call))
            if reason := getattr(choice, "finish_reason", None):
                self.finish_reason = reason
        return items

    def _feed_call(self, position: int, delta: Any) -> list[StreamItem]:
        index = delta.index if getattr(delta, "index", None) is not None else position
        call_id = getattr(delta, "id", None)
        call = self.calls.get(index)
        if call is None or (call_id and call.id != call_id and call.announced):
            # Some providers reuse index 0 for every call; a new id then means a new call.
            call = _Call(id=call_id or f"call_{uuid.uuid4().hex[:24]}")
            self.calls[index] = call
            self.order.append(call)
        function = getattr(delta, "function", None)
        if function is not None:
            if (name := getattr(function, "name", None)) and not call.name:
                call.name = name
            call.arguments += getattr(function, "arguments", None) or ""
        if call.name and not call.announced:
            call.announced = True
            return [ToolCallChunk(id=call.id, name=call.name)]
        return []

    def done(self) -> StreamDone:
        parts: list[Part] = []
        if self.thinking:
            parts.append(ThinkingPart(text=self.thinking))
        if self.text:
            parts.append(TextPart(text=self.text))
        for call in self.order:
            arguments, raw = parse_tool_arguments(call.arguments)
            parts.append(ToolCallPart(id=call.id, name=call.name, arguments=arguments, raw_arguments=raw))
        reason = self.finish_reason or "stop"
        return StreamDone(
            message=Message(role="assistant", parts=tuple(parts)),
            usage=self.usage or Usage(),
            stop_reason=STOP_REASONS.get(reason, reason),
        )


def _usage(usage: Any) -> Usage:
    """OpenAI counts cached tokens inside prompt_tokens; yeetui's input_tokens are the uncached rest."""
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    cache_write = getattr(usage, "cache_creation_input_tokens", 0) or 0
    return Usage(
        input_tokens=max(0, prompt - cached - cache_write),
        output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cache_read_tokens=cached,
        cache_write_tokens=cache_write,
    )


# ---------------------------------------------------------------------------------------------------
# Errors


def _detail(exc: BaseException) -> str:
    """litellm's message without its `litellm.XError: XError: OpenAIException - ` preamble."""
    text = str(getattr(exc, "message", None) or exc).strip()
    while True:
        head, sep, rest = text.partition(": ")
        if sep and " " not in head and (head.endswith("Error") or head.endswith("Exception")):
            text = rest.strip()
            continue
        head, sep, rest = text.partition(" - ")
        if sep and " " not in head and head.endswith("Exception"):
            text = rest.strip()
            continue
        return text.split("\n", 1)[0][:500] or "no details given"


def map_error(exc: BaseException, label: str, timeout: float, secrets: list[str]) -> ProviderError:
    """Turn a litellm (or transport) exception into a ProviderError with a readable, key-free message."""
    name = type(exc).__name__
    chain = _chain(exc)
    if any("Timeout" in type(e).__name__ or isinstance(e, TimeoutError) for e in chain):
        return ProviderError(f"{label} did not answer within {timeout:g} s.", retryable=True)
    original = getattr(exc, "original_exception", None)
    if name == "MidStreamFallbackError" and isinstance(original, BaseException):
        # litellm wraps whatever broke a stream after it began; the original says what it was.
        if any(_is_connection_error(e) for e in chain[1:]):
            return ProviderError(
                redact(f"The stream from {label} broke off mid-answer: {_detail(original)}", secrets),
                retryable=True,
            )
        return map_error(original, label, timeout, secrets)
    detail = _detail(exc)
    if any(type(e).__name__ in ("AuthenticationError", "PermissionDeniedError") for e in chain):
        status = 403 if any(type(e).__name__ == "PermissionDeniedError" for e in chain) else 401
        return ProviderError(redact(f"{label} {_STATUS_WORDING[status]} ({status}): {detail}", secrets),
                             status=status, retryable=False)  # another attempt gets the same answer
    # An unreachable server surfaces as a 500 InternalServerError raised while handling openai's
    # APIConnectionError: the exception chain tells it apart from a real server error.
    if any(_is_connection_error(e) for e in chain):
        return ProviderError(redact(f"The connection to {label} dropped: {detail}", secrets), retryable=True)
    if name == "ContextWindowExceededError":
        return ProviderError(redact(f"The conversation is too long for the model's context window at "
                                    f"{label}: {detail}", secrets), status=400)
    found = getattr(exc, "status_code", None)
    if not isinstance(found, int):
        return ProviderError(redact(f"{label} call failed ({name}): {detail}", secrets))
    status = found
    retryable = status in _RETRYABLE_STATUS or status >= 500
    fallback = "had a server error" if status >= 500 else "rejected the request"
    wording = _STATUS_WORDING.get(status) or fallback
    return ProviderError(redact(f"{label} {wording} ({status}): {detail}", secrets), status=status,
                         retryable=retryable, retry_after=_retry_after(exc) if retryable else None,
                         quota=is_quota_error(status, str(getattr(exc, "code", "") or ""), detail))


def _chain(exc: BaseException, limit: int = 8) -> list[BaseException]:
    """`exc` and what it wraps: litellm's `original_exception`, then `__cause__` / `__context__`."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < limit and seen not in chain:
        chain.append(seen)
        original = getattr(seen, "original_exception", None)
        seen = original if isinstance(original, BaseException) else (seen.__cause__ or seen.__context__)
    return chain


def _is_connection_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "APIConnectionError" or _is_transport_error(exc)


_TRANSPORT_BASES = (("httpx", "TransportError"), ("httpcore", "NetworkError"), ("httpcore", "ProtocolError"),
                    ("aiohttp", "ClientConnectionError"), ("aiohttp", "ClientPayloadError"))


def _is_transport_error(exc: BaseException) -> bool:
    """A network-level failure (refused, reset, cut off mid-body) — not an HTTP error status."""
    if isinstance(exc, ConnectionError):
        return True
    for module_name, class_name in _TRANSPORT_BASES:
        module = sys.modules.get(module_name)
        base = getattr(module, class_name, None) if module is not None else None
        if isinstance(base, type) and isinstance(exc, base):
            return True
    return False


def _retry_after(exc: BaseException) -> float | None:
    """The server's retry-after, from the headers litellm kept (seconds; an HTTP-date is ignored)."""
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None)):
        if not headers:
            continue
        try:
            if (ms := headers.get("retry-after-ms")) is not None:
                return float(ms) / 1000
            if (seconds := headers.get("retry-after")) is not None:
                return float(seconds)
        except (TypeError, ValueError, AttributeError):
            continue
    return None


# ---------------------------------------------------------------------------------------------------


class LiteLLMProvider:
    """Provider for `<provider>/<model>` through litellm (the provider prefix is kept in the call)."""

    def __init__(self, provider: str, api_key: str | None, base_url: str | None,
                 timeout: float = 600) -> None:
        self.name = provider
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._label = _LABELS.get(provider, provider)

    def __repr__(self) -> str:
        return f"LiteLLMProvider({self.name!r}, base_url={self._base_url!r})"

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": f"{self.name}/{request.model}",
            "messages": to_openai_messages(request.system, request.messages),
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "num_retries": 0,
            "timeout": self._timeout,
            "drop_params": True,  # e.g. reasoning_effort on a model without reasoning: drop, don't fail
        }
        if request.tools:
            kwargs["tools"] = to_openai_tools(request)
        if request.thinking != "off":
            kwargs["reasoning_effort"] = request.thinking
        if self._base_url:
            kwargs["api_base"] = self._base_url
        if self._api_key:
            kwargs["api_key"] = self._api_key
        return kwargs

    def missing_credentials(self) -> str | None:
        return missing_key(self.name, self._label, self._api_key)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        if (problem := self.missing_credentials()) is not None:
            raise ProviderError(problem, retryable=False)
        litellm = await _litellm()
        secrets = [self._api_key] if self._api_key else []
        acc = ChunkAccumulator()
        try:
            response = await litellm.acompletion(**self._kwargs(request))
            try:
                async for chunk in response:
                    for item in acc.feed(chunk):
                        yield item
            finally:
                aclose = getattr(response, "aclose", None)  # releases the HTTP connection early
                if aclose is not None:
                    await aclose()
        except ProviderError:
            raise
        except Exception as exc:  # litellm raises its own classes, openai's, httpx's or aiohttp's
            raise map_error(exc, self._label, self._timeout, secrets) from exc
        if acc.finish_reason is None:
            raise ProviderError(
                f"The connection to {self._label} dropped: the stream ended without a finish reason.",
                retryable=True,
            )
        yield acc.done()
