"""Which model a run uses: the process's `--model`, the model asked for, the profile's workflow's, the profile's,
the model the user chose for the tree — a tier (`strong`, `fast`) resolved for a provider that has a key, and a
model whose provider has no key giving way, with a notice, to one that has.

`ModelChoice` is the launcher's (`RunLauncher.models`); the launcher's `resolve_model`, `tree_model` and
`choose_model` are its `resolve`, `tree_model` and `choose`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile, ProfileSet
from yeetui.definitions.workflows import Workflow
from yeetui.events import Notice
from yeetui.providers.base import Provider, split_model
from yeetui.providers.tiers import TIERS, is_tier, tier_model
from yeetui.settings.config import Settings
from yeetui.store import Store


class ModelChoice:
    """The model of each run of this process, and of the conversation the user chose one for."""

    def __init__(self, *, settings: Settings, store: Store, bus: Bus, profiles: ProfileSet,
                 workflows: Mapping[str, Workflow], providers: Callable[[str], tuple[Provider, str]],
                 override: str | None = None) -> None:
        """`providers` gives the provider of a `provider/model` (the launcher's, created once): whether it has a
        key decides between models."""
        self.settings = settings
        self.store = store
        self.bus = bus
        self.profiles = profiles
        self.workflows = workflows
        self._providers = providers
        self.override: Final = override
        """`--model` given to this process: every run it starts uses it, subagents included."""
        self._fell_back: set[tuple[str, str]] = set()
        """(profile, model) pairs already told about running on another model instead."""

    def resolve(self, profile: Profile, requested: str | None = None, *, within: str | None = None) -> str:
        """The model of a run, first found of: the process's `--model` (`override`), the model asked
        for (a spawn's `model`, the session's `/model`), the profile's workflow's `model`, the profile's
        `model`, the model the user chose (`within`, else the config default, which YEETUI_MODEL feeds). A
        profile with `model_locked` keeps its own.

        `within` is the model the user chose for the tree the run joins (`tree_model`: the window's `/model`
        or `--model`, as its conversation runs on it). A tier (`strong`, `default`, `fast`) resolves for that
        model's provider — or, when that provider has no key, for one that has (see `_tier`); a model a
        profile or workflow names whose provider has no key gives way to the chosen model (see `_usable`)."""
        chosen = within or self.settings.model
        if profile.model_locked and profile.model:
            return self._tier(profile.model, chosen)
        if self.override:
            return self.override
        workflow = self.workflows.get(profile.workflow) if profile.workflow else None
        model = self._tier(requested or (workflow.model if workflow else None) or profile.model or chosen, chosen)
        split_model(model)
        return self._usable(model, profile, chosen)

    async def tree_model(self, session_id: str | None) -> str | None:
        """The model the user chose for the tree session `session_id` belongs to: the model of its top session,
        the conversation the user talks to (kept current by the launcher's `run_prompt`: the window's `/model`,
        `--model`, the config default), which its subagents' tiers follow. None without a session."""
        session = await self.store.get_session(session_id) if session_id else None
        while session is not None and session.parent_id is not None:
            session = await self.store.get_session(session.parent_id)
        return session.model if session is not None else None

    async def choose(self, session_id: str, model: str) -> None:
        """The user chose `model` for the conversation `session_id` (the window's `/model`): the session runs on it
        from now, so a subagent spawned before its next turn (`/oracle` right after `/model`) follows it too."""
        session = await self.store.get_session(session_id)
        if session is None or session.profile not in self.profiles.profiles:
            return
        chosen = self.resolve(self.profiles.get(session.profile), model, within=model)
        if session.model != chosen:
            await self.store.update_session(session_id, model=chosen)

    def _keyed(self, model: str) -> bool:
        """Whether requests to `model`'s provider can be made (it has a key, or needs none)."""
        return self._providers(model)[0].missing_credentials() is None

    def _tier(self, model: str, chosen: str) -> str:
        """`model`, or the model of the tier it names: the config's (`models: {strong: …}`), else the tier of
        `chosen`'s provider — or, when that provider has no key, the tier of the first provider of the tiers
        table that has one (an OpenAI user's oracle runs on OpenAI's strong model, whatever the default says)."""
        if not is_tier(model):
            return model
        configured = {str(tier): name for tier, name in self.settings.models.items() if name}
        if model in configured:
            return configured[model]
        resolved = tier_model(model, chosen)
        if self._keyed(resolved):
            return resolved
        for provider, table in TIERS.items():
            candidate = tier_model(model, f"{provider}/{table['default']}")
            if self._keyed(candidate):
                return candidate
        return resolved  # no key for any: the run says which key is missing

    def _usable(self, model: str, profile: Profile, chosen: str) -> str:
        """`model`, or — when `model`'s provider has no key — the model the user chose (or, that one's provider
        keyless too, the default tier of a provider with a key): a profile pinned to another provider
        (`anthropic/…` for an OpenAI user) runs, with a notice naming both models, rather than fails."""
        if model == chosen or self._keyed(model):
            return model
        instead = chosen if self._keyed(chosen) else self._tier("default", chosen)
        if instead == model or not self._keyed(instead):
            return model  # no key for either: the run says which key is missing
        if (profile.name, model) not in self._fell_back:
            self._fell_back.add((profile.name, model))
            asked = f" ({profile.sources[-1]})" if profile.sources else ""
            self.bus.publish(Notice("warning", f"Profile {profile.name!r}{asked} asks for {model}, but there is no "
                                    f"key for {model.partition('/')[0]}; it runs on {instead} instead."))
        return instead
