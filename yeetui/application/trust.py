"""Trusting a project, as the user does it from any front end: what its files would grant (`yeetui trust` lists
it, the TUI asks about it before reading them), and trusting it with its files as they are now.

Until trusted, a project's files may narrow rights, never widen them (yeetui.settings.trust)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from yeetui import paths
from yeetui.definitions.profile_loader import load_profiles
from yeetui.errors import ConfigError
from yeetui.hooks.sources import load_hooks
from yeetui.mcp.sources import default_home, discover
from yeetui.resources import builtin_dir
from yeetui.settings.config import load_settings
from yeetui.settings.trust import is_trusted, project_files, set_trusted, trust_state
from yeetui.text import one_line

__all__ = ["Trusted", "is_trusted", "project_files", "project_servers_beside_trust", "project_widenings",
           "set_trusted", "trust_project"]


def project_widenings(project: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """What the project's files ask for beyond what an untrusted project gets (what trusting it would grant),
    one line each naming the file and line: `yeetui trust` lists them, the TUI asks about them. A config file
    that does not parse grants nothing: opening the runtime reports it."""
    found: list[str] = []
    try:
        found += [w for w in load_settings(project_dir=project, env=env, trusted=False).warnings if "not trusted" in w]
    except ConfigError:
        pass
    profiles = load_profiles(project_dir=project, user_dir=paths.config_dir(env) / "agents",
                             builtin_dir=builtin_dir("agents"), trusted=False)
    found += [str(e) for e in profiles.errors if "not trusted" in str(e)]
    lines = [line.split(" — ", 1)[0].replace(": ignored ", ": ", 1) for line in found]
    project_hooks = load_hooks(None, project_dir=project, trusted=True)
    lines += [f"{command.source}: the hook `{one_line(command.command)[:160]}` runs (in the OS sandbox, as your "
              "writable agents' bash, while the files it names stay as they are now)"
              for groups in project_hooks.groups.values() for group in groups for command in group.commands]
    return lines


def project_servers_beside_trust(project: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """The MCP servers a project's files define, which trusting it does not start (each needs its own approval):
    what `yeetui trust` says beside what trust grants."""
    env = os.environ if env is None else env
    servers = discover(project, home=default_home(env), env=env, config_dir=paths.config_dir(env)).servers
    return [f"{spec.path}: the MCP server {spec.name} is not started by trust: it needs your approval of exactly "
            f"what it runs (`yeetui mcp approve {spec.name}`)" for spec in servers if spec.needs_consent]


@dataclass(frozen=True)
class Trusted:
    already: bool
    """It was trusted with its files as they are."""
    granted: list[str]
    """What trusting grants, one line per file and line."""
    changed: tuple[str, ...]
    """It was trusted, and these files changed since (`.yeetui/agents/x.md (added)`, …)."""
    beside: list[str] = field(default_factory=list)
    """What the project brings that trust does not grant (its MCP servers, which need their own approval)."""


def trust_project(project: Path) -> Trusted:
    """Trust `project` with its files as they are now (remembered); whether it already was, what trusting
    grants, and which files changed since it was last trusted."""
    state = trust_state(project)
    files = state.files or project_files(project)  # pinned as they were before what they grant was read
    granted = project_widenings(project)
    set_trusted(project, True, files=files)
    return Trusted(state.trusted, granted, state.changed, project_servers_beside_trust(project))
