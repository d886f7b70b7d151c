"""The limits a spawn is checked against: the hard depth limit for every child, and for a child an agent asks
for, what its parent's profile allows (children at all, how deep, which profiles) and whether the child's
profile can run as a subagent. Each refusal says why, for the model that asked."""

from __future__ import annotations

from collections.abc import Callable

from yeetui.definitions.profiles import Profile
from yeetui.store.records import SessionRecord
from yeetui.subagents.spawn_request import SpawnRefused, SpawnRequest

HARD_MAX_DEPTH = 4


def check_limits(req: SpawnRequest, profile: Profile, parent: SessionRecord | None, depth: int, *,
                 owner_of: Callable[[str], Profile]) -> None:
    """Raise SpawnRefused when a child of `profile` at `depth` under `parent` is beyond the limits; `owner_of`
    finds the parent's profile by name (refusing a name that is not there)."""
    if depth > HARD_MAX_DEPTH:
        raise SpawnRefused(f"Refused: a subagent at depth {depth} exceeds the hard limit of {HARD_MAX_DEPTH}.")
    if req.requested_by == "agent":
        if parent is None:
            raise SpawnRefused("Refused: an agent spawn needs the parent session.")
        owner = owner_of(parent.profile)
        if not owner.limits.can_spawn_children:
            raise SpawnRefused(f"Refused: {parent.profile} subagents may not spawn subagents of their own. "
                               "Do the work yourself or report back with `complete`.")
        if depth > owner.limits.max_depth:
            raise SpawnRefused(f"Refused: the child would be at depth {depth}, and profile {owner.name!r} "
                               f"allows depth {owner.limits.max_depth} at most.")
        if owner.allowed_children is not None and profile.name not in owner.allowed_children:
            raise SpawnRefused(f"Refused: {owner.name!r} may spawn only {', '.join(owner.allowed_children)}; "
                               f"not {profile.name!r}.")
        if not ({"subtask", "orchestrator"} & set(profile.capabilities)):
            raise SpawnRefused(f"Refused: profile {profile.name!r} cannot run as a subagent "
                               f"(capabilities: {', '.join(profile.capabilities)}).")
