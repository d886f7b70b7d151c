"""Model tiers: a profile says what kind of model it wants (`strong`, `default`, `fast`), and the tier is
resolved for the provider the user actually uses, so that the oracle runs on OpenAI's strong model for an
OpenAI user instead of failing for want of an Anthropic key.

The provider is the one of the model the user chose for the conversation the run belongs to (the window's
`/model` or `--model`, else the config's `model` / `YEETUI_MODEL`); when that provider has no key, the first
provider of the table below that has one (`RunLauncher._tier`). Config can override any tier (`models: {strong:
openai/o3}`); a provider not in the table below uses the chosen model for every tier.
"""

from __future__ import annotations

from collections.abc import Mapping

TIER_NAMES = ("strong", "default", "fast")

TIERS: dict[str, dict[str, str]] = {
    "anthropic": {"strong": "claude-opus-4-5", "default": "claude-sonnet-4-6", "fast": "claude-haiku-4-5"},
    "openai": {"strong": "gpt-5.1", "default": "gpt-5", "fast": "gpt-5-mini"},
    "gemini": {"strong": "gemini-2.5-pro", "default": "gemini-2.5-flash", "fast": "gemini-2.5-flash-lite"},
}
"""Per provider, the model of each tier (documented in the README)."""


def is_tier(name: str | None) -> bool:
    return name in TIER_NAMES


def tier_model(tier: str, chosen: str, overrides: Mapping[str, str] | None = None) -> str:
    """`provider/model` for `tier`, given the model the user chose (whose provider it picks; it is the `default`
    tier itself) and config overrides."""
    if overrides and overrides.get(tier):
        return overrides[tier]
    if tier == "default":
        return chosen
    provider = chosen.partition("/")[0]
    table = TIERS.get(provider)
    return f"{provider}/{table[tier]}" if table else chosen
