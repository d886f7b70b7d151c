"""The Provider seam: one streaming call to a model, in yeetui's own message model.

A provider makes exactly one attempt per `stream()` call (SDK-level retries are switched off);
`yeetui.providers.retry` decides about retries, so that a retry never duplicates text already shown.
Errors are raised as `yeetui.errors.ProviderError` with `retryable` set, and their text never contains
an API key.

Also home to what every provider module shares and that needs no SDK: the credentials and where they come
from in the environment, and `parse_tool_arguments`. The provider modules import only this module (and the
vocabulary below it); `yeetui.providers.factory` imports them to pick one for a model name.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from yeetui import paths
from yeetui.errors import ConfigError
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
class UsageChunk:
    """What the request has used so far, as the provider reported it mid-stream (Anthropic's `message_start`
    carries the input tokens, `message_delta` the output): cumulative for this attempt, superseded by each
    later UsageChunk and by the StreamDone's usage. A request cut off before its end (a crash, a cancel, a
    dropped connection) still counts what it reported."""

    usage: Usage
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True)
class StreamDone:
    """The last item of every successful stream: the whole assistant message."""

    message: Message
    usage: Usage
    stop_reason: str
    kind: Literal["done"] = "done"


StreamItem = TextChunk | ThinkingChunk | ToolCallChunk | UsageChunk | StreamDone


class Provider(Protocol):
    name: str
    """`anthropic`, `openai`, `gemini`, … — the prefix of `provider/model`."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Yield chunks as they arrive, then exactly one StreamDone. Raise ProviderError on failure."""
        ...

    def missing_credentials(self) -> str | None:
        """Why no request can be made (no API key), or None. Nothing is sent to find out."""
        ...


_QUOTA_WORDS = re.compile(r"credit balance|insufficient[_ ]quota|exceeded your current quota|billing|payment required|"
                          r"out of credits|insufficient (?:funds|credits|balance)", re.IGNORECASE)


def is_quota_error(status: int | None, kind: str, detail: str) -> bool:
    """Whether a provider's refusal is about the account's quota or credit (a billing matter that no retry
    fixes), not a rate limit: Anthropic's `billing_error` or "credit balance is too low", OpenAI's
    `insufficient_quota` ("You exceeded your current quota"), HTTP 402."""
    return status == 402 or kind == "billing_error" or bool(_QUOTA_WORDS.search(detail))


def split_model(name: str) -> tuple[str, str]:
    """`anthropic/claude-sonnet-4-5` → (`anthropic`, `claude-sonnet-4-5`). A bare name is an error."""
    provider, sep, model = name.partition("/")
    if not sep or not provider or not model:
        raise ConfigError(
            f"Model {name!r} is not of the form provider/model "
            "(for example anthropic/claude-sonnet-4-5 or openai/gpt-5)."
        )
    return provider, model


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


KEYLESS_PROVIDERS = frozenset({"ollama", "ollama_chat", "lm_studio", "hosted_vllm", "vllm", "llamafile",
                               "xinference"})
"""Local servers that take no API key."""


def missing_key(provider: str, label: str, api_key: str | None) -> str | None:
    """What to tell the user when `provider` has no key (None when it has one or needs none): checked before
    any request, so a missing key is said at once instead of surfacing as a server error after retries."""
    if api_key or provider in KEYLESS_PROVIDERS:
        return None
    variable = (_KEY_VARS.get(provider) or (f"{_env_prefix(provider)}_API_KEY",))[0]
    config = paths.config_dir() / "config.yaml"
    hint = other_model_hint(provider)
    return f"No {label} API key: set {variable}, or providers.{provider}.api_key in {config}.{hint}"


def other_model_hint(provider: str, keyed: list[str] | None = None) -> str:
    """` You have a key for openai: …` when another provider with a tier table has a key (`keyed`, default: the
    ones whose standard variable is set), so a user with only an OpenAI key is sent to an OpenAI model."""
    from yeetui.providers.tiers import TIERS

    if keyed is None:
        keyed = [name for name, variables in _KEY_VARS.items() if any(os.environ.get(v) for v in variables)]
    others = [name for name in keyed if name != provider and name in TIERS]
    if not others:
        return ""
    model = f"{others[0]}/{TIERS[others[0]]['default']}"
    return (f" You have a key for {' and '.join(others)}: use one of its models — `--model {model}`, "
            f"`model: {model}` in config.yaml, or /model in the app.")


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
