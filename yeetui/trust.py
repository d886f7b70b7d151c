"""Which repositories the user trusts: until then, files that arrive with a repository may narrow an agent's
rights but never widen them.

A repository's `.yeetui/config.yaml`, `.yeetui/agents/`, `.claude/agents/` and `.opencode/agent(s)/` come
with whatever the user cloned. Until the user trusts the project (`yeetui trust`, remembered in the user's
data dir, keyed by the project's real path), allow rules in those files are dropped (ask and deny stay), a
profile they name cannot be made writable when the user's own and built-in files keep it read-only, and
the dropped items are listed as warnings, so the user sees what trusting would grant.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from yeetui import paths


def _trust_file(env: Mapping[str, str] | None = None) -> Path:
    return paths.data_dir(env) / "trusted-projects.json"


def trusted_projects(env: Mapping[str, str] | None = None) -> list[str]:
    try:
        data = json.loads(_trust_file(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [p for p in data.get("projects", []) if isinstance(p, str)] if isinstance(data, dict) else []


def is_trusted(project_dir: Path, env: Mapping[str, str] | None = None) -> bool:
    return str(Path(project_dir).resolve()) in trusted_projects(env)


def set_trusted(project_dir: Path, trusted: bool = True, env: Mapping[str, str] | None = None) -> None:
    """Remember (or forget) that the user trusts the project at `project_dir`."""
    project = str(Path(project_dir).resolve())
    projects = [p for p in trusted_projects(env) if p != project] + ([project] if trusted else [])
    target = _trust_file(env)
    paths.private_dir(target.parent)
    temporary = target.with_name(target.name + f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"projects": sorted(projects)}, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, target)

