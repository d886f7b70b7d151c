"""Choosing a model from a front end (`/model`, ACP's model option): what can be chosen with the keys the user
has, and whether a chosen name can be used at all."""

from __future__ import annotations

from yeetui.providers import pricing
from yeetui.providers.base import split_model
from yeetui.providers.tiers import TIER_NAMES, TIERS
from yeetui.runtime import Runtime


class Models:
    """Model use cases over one runtime (its providers, with the keys of its environment and config)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def choices(self, current: str) -> list[tuple[str, str]]:
        """(model, note) pairs: each tier of every provider in the tiers table the user has a key for, the tiers
        the config sets, and `current` (the model in use), once each."""
        choices: list[tuple[str, str]] = []
        for provider, table in TIERS.items():
            if self._runtime.launcher.provider(f"{provider}/{table['default']}")[0].missing_credentials() is None:
                choices += [(f"{provider}/{table[tier]}", f"{provider} · {tier}") for tier in TIER_NAMES]
        choices += [(model, f"{tier} (config)") for tier, model in self._runtime.settings.models.items() if model]
        unique: dict[str, str] = {} if current in [model for model, _ in choices] else {current: "in use"}
        for model, note in choices:
            unique.setdefault(model, note)
        return list(unique.items())

    def problem(self, model: str) -> str | None:
        """Why `model` cannot be used here (no key for its provider), or None. A name without a provider
        (`provider/model`) raises ConfigError, before anything changes."""
        split_model(model)
        provider, _ = self._runtime.launcher.provider(model)
        return provider.missing_credentials()


def context_window(model: str) -> int | None:
    """How many tokens of context `model` takes, when its family is known (`usage_update`'s size)."""
    return pricing.context_window(model)
