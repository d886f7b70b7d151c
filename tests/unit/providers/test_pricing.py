"""Model ids (any provider prefix, dated suffixes) map to the right price; unknown models cost None."""

from __future__ import annotations

import pytest

from yeetui.messages import Usage
from yeetui.providers.pricing import PRICES, cost_usd, price_for


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("anthropic/claude-opus-4-5", "claude-opus-4-5"),
        ("claude-haiku-4-5@20251001", "claude-haiku-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("openai/gpt-5", "gpt-5"),
        ("gpt-5-2025-08-07", "gpt-5"),
        ("openai/gpt-5-mini", "gpt-5-mini"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/o3", "o3"),
        ("o4-mini", "o4-mini"),
        ("gemini/gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini/gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini/gemini-3-pro-preview", "gemini-3-pro"),
    ],
)
def test_model_ids_match_their_table_entry(model: str, key: str) -> None:
    assert price_for(model) is PRICES[key]


@pytest.mark.parametrize(
    "model",
    [
        "ollama/llama3.1:8b",
        "openai/gpt-5-search-api",  # a different model, not priced by its gpt-5 prefix
        "gpt-5-turbo-ultra",
        "o3-deep-research",
        "claude-sonnet-4-5-extended",
        "mystery/model",
        "",
    ],
)
def test_unknown_models_cost_none_not_zero(model: str) -> None:
    assert price_for(model) is None
    assert cost_usd(model, Usage(input_tokens=1000, output_tokens=1000)) is None


def test_cost_sums_all_four_token_kinds() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000,
                  cache_write_tokens=1_000_000)
    assert cost_usd("anthropic/claude-sonnet-4-5", usage) == pytest.approx(3 + 15 + 0.3 + 3.75)
    assert cost_usd("openai/gpt-5", Usage(input_tokens=2_000_000, output_tokens=100_000,
                                          cache_read_tokens=1_000_000)) == pytest.approx(2.5 + 1.0 + 0.125)


def test_known_model_with_no_usage_costs_zero() -> None:
    assert cost_usd("claude-haiku-4-5", Usage()) == 0.0


def test_every_price_is_positive_and_cache_reads_are_cheaper_than_input() -> None:
    for key, price in PRICES.items():
        assert price.input > 0 and price.output > price.input, key
        assert 0 < price.cache_read <= price.input <= price.cache_write, key
