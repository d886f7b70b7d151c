"""Checking agent profiles beyond their schema (`yeetui profiles validate`): tools and providers they name that
do not exist here."""

from __future__ import annotations

from yeetui.definitions.profiles import ProfileSet


def unknown_names(profiles: ProfileSet) -> list[str]:
    """Tools no yeetui tool is called, and providers neither yeetui nor litellm knows, per profile."""
    from yeetui.subagents.tools import agent_tools
    from yeetui.tools.registry import builtin_tools

    tools = {tool.name for tool in [*builtin_tools(), *agent_tools()]} | {"ask_user"}
    providers = _known_providers() if any(p.model and "/" in p.model for p in profiles) else set()
    found = []
    for profile in profiles:
        where = profile.sources[-1] if profile.sources else "built in"
        unknown = sorted({*(profile.tools or []), *profile.disallowed_tools} - tools)
        if unknown:
            found.append(f"profile {profile.name!r} ({where}) names tools yeetui does not have: {', '.join(unknown)}")
        provider = (profile.model or "").partition("/")[0] if profile.model and "/" in profile.model else None
        if provider and provider not in providers:
            found.append(f"profile {profile.name!r} ({where}) asks for model {profile.model}, but no provider is "
                         f"called {provider!r}")
    return found


def _known_providers() -> set[str]:
    from yeetui.providers.litellm import known_providers  # reads litellm's provider names, without importing it

    return known_providers() | {"anthropic"}
