"""Pick the provider for a `provider/model` name.

Importing this module (or creating a provider) loads neither `anthropic` nor `litellm`: each provider
module imports its SDK on its first call.
"""

from __future__ import annotations

from yeetui.providers.anthropic import AnthropicProvider
from yeetui.providers.base import Provider, ProviderCredentials, split_model
from yeetui.providers.litellm import LiteLLMProvider


def create_provider(
    model: str, creds: ProviderCredentials, *, timeout: float = 600.0
) -> tuple[Provider, str]:
    """The provider for `model` (`provider/model`) and the bare model id to put in its requests.

    `anthropic/*` uses the official SDK; every other prefix goes through litellm. Raises ConfigError
    for a name without a provider prefix.
    """
    provider_name, model_id = split_model(model)
    if provider_name == "anthropic":
        return AnthropicProvider(creds.api_key, creds.base_url, timeout=timeout), model_id
    return LiteLLMProvider(provider_name, creds.api_key, creds.base_url, timeout=timeout), model_id
