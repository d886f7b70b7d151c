"""Pick the provider for a `provider/model` name, and read its credentials from the environment.

Importing this module (or creating a provider) loads neither `anthropic` nor `litellm`; each provider
imports its SDK on its first call. Also home to the two SDK-free helpers both providers' translations use
(`parse_tool_arguments`, `pair_tool_results`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from yeetui.messages import Message, ToolResultPart
from yeetui.providers.base import Provider, split_model


@dataclass(frozen=True)
class ProviderCredentials:
    """Key and endpoint for one provider. The key is kept out of `repr()` so it never reaches a log."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None


# Where the standard variables are not simply `<PROVIDER>_API_KEY` / `<PROVIDER>_API_BASE`.
_KEY_VARS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "ollama": (),
}
_BASE_VARS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_BASE_URL",),
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "ollama": ("OLLAMA_API_BASE",),
}


def _env_prefix(provider: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", provider.upper())


def credentials_from_env(provider: str, env: Mapping[str, str]) -> ProviderCredentials:
    """The standard environment variables for `provider` (empty values count as unset).

    Known providers use their documented variables (`ANTHROPIC_API_KEY`, `OPENAI_BASE_URL` or
    `OPENAI_API_BASE`, `OLLAMA_API_BASE`, …); any other provider `foo` reads `FOO_API_KEY` and
    `FOO_API_BASE` / `FOO_BASE_URL`, the names litellm itself uses.
    """
    prefix = _env_prefix(provider)
    key_vars = _KEY_VARS.get(provider, (f"{prefix}_API_KEY",))
    base_vars = _BASE_VARS.get(provider, (f"{prefix}_API_BASE", f"{prefix}_BASE_URL"))
    api_key = next((env[v] for v in key_vars if env.get(v)), None)
    base_url = next((env[v] for v in base_vars if env.get(v)), None)
    return ProviderCredentials(api_key=api_key, base_url=base_url)


def create_provider(
    model: str, creds: ProviderCredentials, *, timeout: float = 600.0
) -> tuple[Provider, str]:
    """The provider for `model` (`provider/model`) and the bare model id to put in its requests.

    `anthropic/*` uses the official SDK; every other prefix goes through litellm. Raises ConfigError
    for a name without a provider prefix.
    """
    provider_name, model_id = split_model(model)
    if provider_name == "anthropic":
        from yeetui.providers.anthropic import AnthropicProvider

        return AnthropicProvider(creds.api_key, creds.base_url, timeout=timeout), model_id
    from yeetui.providers.litellm import LiteLLMProvider

    return LiteLLMProvider(provider_name, creds.api_key, creds.base_url, timeout=timeout), model_id


# Helpers shared by the provider translations (kept here so each provider module stays SDK-specific).


def parse_tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Streamed argument JSON → (arguments, raw_arguments). Never raises.

    Valid JSON objects give `(obj, None)`; empty text gives `({}, None)`; anything else (truncated JSON,
    a bare string or list) gives `({}, text)` so the tool layer can tell the model its arguments were bad.
    """
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (value, None) if isinstance(value, dict) else ({}, text)


INTERRUPTED_RESULT = "No result: the tool call was interrupted before it finished."


def pair_tool_results(messages: list[Message]) -> list[Message]:
    """Make every tool call answered by a result in the messages right after it, as the APIs require.

    A session resumed after a crash or an interrupt can hold a tool call whose result was never
    recorded, or (rarer) a result whose call is gone; both make Anthropic and OpenAI reject the whole
    request. Missing results are filled with an error result saying the call was interrupted; orphaned
    results are dropped.
    """
    out: list[Message] = []
    pending: dict[str, str] = {}  # call id → tool name, for the last assistant message's calls

    def flush() -> None:
        if pending:
            out.append(Message(role="tool", parts=tuple(
                ToolResultPart(call_id=cid, name=name, content=INTERRUPTED_RESULT, is_error=True)
                for cid, name in pending.items()
            )))
            pending.clear()

    for msg in messages:
        if msg.role == "assistant":
            flush()
            out.append(msg)
            pending.update({c.id: c.name for c in msg.tool_calls})
            continue
        results = [p for p in msg.parts if isinstance(p, ToolResultPart)]
        if not results:
            flush()
            out.append(msg)
            continue
        kept = tuple(p for p in msg.parts if not isinstance(p, ToolResultPart) or p.call_id in pending)
        for part in results:
            pending.pop(part.call_id, None)
        if any(not isinstance(p, ToolResultPart) for p in kept):
            flush()  # text after the results: the calls still unanswered must be answered before it
        if kept:
            out.append(msg.model_copy(update={"parts": kept}))
    flush()
    return out
