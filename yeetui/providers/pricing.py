"""What a model call cost, from yeetui's own price table (USD per million tokens) and the prices the user
configured (`models: {openrouter/x: {input_per_mtok: …, output_per_mtok: …}}`, see `yeetui.settings.config`).

Kept here rather than taken from litellm so that cost works without importing litellm (seconds) and for
Anthropic sessions that never load it. Prices are list prices for standard context lengths, checked against
the vendors' price pages and litellm 1.102.4's bundled price data. An unknown model costs `None`, never 0:
a made-up zero would hide spend from budgets.

Configured prices come first, for the exact `provider/model` name configured. They are passed explicitly
(`configured=`), or — for the code inside a run, which prices every request it makes — bound to the run's
task when the launcher starts it (`context_with`): each run prices with its own process's config, and
nothing outside a run's task sees another's.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from yeetui.messages import Usage


class Price(NamedTuple):
    input: float
    output: float
    cache_read: float
    cache_write: float


def _claude(input_: float, output: float) -> Price:
    # Anthropic: cache reads cost 0.1x input, 5-minute cache writes 1.25x input.
    return Price(input_, output, round(input_ * 0.1, 6), round(input_ * 1.25, 6))


def _cached(input_: float, output: float, cache_read: float) -> Price:
    # OpenAI and Gemini do not charge separately for writing the cache; such tokens bill as input.
    return Price(input_, output, cache_read, input_)


PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus-4-6": _claude(5.0, 25.0),
    "claude-opus-4-5": _claude(5.0, 25.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4": _claude(15.0, 75.0),
    "claude-4-opus": _claude(15.0, 75.0),
    "claude-sonnet-4-6": _claude(3.0, 15.0),
    "claude-sonnet-4-5": _claude(3.0, 15.0),
    "claude-sonnet-4": _claude(3.0, 15.0),
    "claude-4-sonnet": _claude(3.0, 15.0),
    "claude-haiku-4-5": _claude(1.0, 5.0),
    "claude-3-7-sonnet": _claude(3.0, 15.0),
    "claude-3-5-sonnet": _claude(3.0, 15.0),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
    "claude-3-opus": _claude(15.0, 75.0),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.3),
    # OpenAI
    "gpt-5.2": _cached(1.75, 14.0, 0.175),
    "gpt-5.2-codex": _cached(1.75, 14.0, 0.175),
    "gpt-5.1": _cached(1.25, 10.0, 0.125),
    "gpt-5.1-codex": _cached(1.25, 10.0, 0.125),
    "gpt-5.1-codex-mini": _cached(0.25, 2.0, 0.025),
    "gpt-5": _cached(1.25, 10.0, 0.125),
    "gpt-5-codex": _cached(1.25, 10.0, 0.125),
    "gpt-5-chat": _cached(1.25, 10.0, 0.125),
    "gpt-5-mini": _cached(0.25, 2.0, 0.025),
    "gpt-5-nano": _cached(0.05, 0.4, 0.005),
    "gpt-5-pro": _cached(15.0, 120.0, 15.0),
    "gpt-4.1": _cached(2.0, 8.0, 0.5),
    "gpt-4.1-mini": _cached(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _cached(0.1, 0.4, 0.025),
    "gpt-4o": _cached(2.5, 10.0, 1.25),
    "gpt-4o-mini": _cached(0.15, 0.6, 0.075),
    "o1": _cached(15.0, 60.0, 7.5),
    "o3": _cached(2.0, 8.0, 0.5),
    "o3-mini": _cached(1.1, 4.4, 0.55),
    "o3-pro": _cached(20.0, 80.0, 20.0),
    "o4-mini": _cached(1.1, 4.4, 0.275),
    # Google (prompts up to 200k tokens)
    "gemini-3-pro": _cached(2.0, 12.0, 0.2),
    "gemini-2.5-pro": _cached(1.25, 10.0, 0.125),
    "gemini-2.5-flash": _cached(0.3, 2.5, 0.03),
    "gemini-2.5-flash-lite": _cached(0.1, 0.4, 0.01),
    "gemini-2.0-flash": _cached(0.1, 0.4, 0.025),
    "gemini-2.0-flash-lite": _cached(0.075, 0.3, 0.01875),
}

# What may follow a table key and still be the same model: dates (`-20250929`, `-2025-08-07`), `-latest`,
# preview/exp tags, numbered revisions (`-001`), Bedrock/Vertex version tails (`-v1:0`, `@20250929`).
# Anything else (`-pro`, `-mini`, `-search-api`) is a different model, so it is not priced by a neighbour.
_SUFFIX = re.compile(
    r"(?:-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest|preview(?:-\d{2}-\d{2,4})?|exp(?:-\d{2}-\d{2,4})?|\d{3}))*"
    r"(?:-v\d+(?::\d+)?|@\d{8}|:[A-Za-z0-9.\-]+)?"
)


def _normalise(model: str) -> str:
    """`openrouter/anthropic/claude-sonnet-4.5` → `claude-sonnet-4-5`; `gemini/gemini-2.5-pro` → bare."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if name.startswith("claude"):
        name = name.replace(".", "-")  # OpenRouter spells versions with dots
    return name


CONTEXT_WINDOWS = (("claude-", 200_000), ("gpt-5", 400_000), ("gpt-4.1", 1_047_576), ("o3", 200_000),
                   ("o4", 200_000), ("gpt-4o", 128_000), ("gemini-", 1_048_576))
"""Tokens of input a model family takes, by model-name prefix (the standard window, not a beta's larger one)."""


def context_window(model: str) -> int | None:
    """The model's context window in tokens, when its family is known."""
    name = _normalise(model)
    return next((size for prefix, size in CONTEXT_WINDOWS if name.startswith(prefix)), None)


_CONFIGURED: contextvars.ContextVar[Mapping[str, Price]] = contextvars.ContextVar(
    "yeetui_configured_prices", default=MappingProxyType({}))
"""The configured prices of the run whose task reads it (set by `context_with`); none elsewhere."""


def context_with(prices: Mapping[str, Price]) -> contextvars.Context:
    """A copy of the current context in which `price_for` and `cost_usd` also know `prices` (by `provider/model`
    name): the context a run's task is created in (`loop.create_task(…, context=…)`)."""
    context = contextvars.copy_context()
    context.run(_CONFIGURED.set, MappingProxyType({_key(name): price for name, price in prices.items()}))
    return context


def _key(model: str) -> str:
    return model.strip().lower()


def price_for(model: str, configured: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `model`: the one configured for its exact name (`configured`, by default those bound to the
    current run's task), else the table entry (any provider prefix, dated suffixes allowed), else None."""
    chosen = _CONFIGURED.get() if configured is None else {_key(name): price for name, price in configured.items()}
    if (own := chosen.get(_key(model))) is not None:
        return own
    name = _normalise(model)
    matches = [key for key in PRICES if name.startswith(key) and _SUFFIX.fullmatch(name[len(key):])]
    return PRICES[max(matches, key=len)] if matches else None


def cost_usd(model: str, usage: Usage, configured: Mapping[str, Price] | None = None) -> float | None:
    """The cost of `usage` on `model` in US dollars, or None when the model's price is unknown (`configured`: as
    for `price_for`)."""
    price = price_for(model, configured)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
