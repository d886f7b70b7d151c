"""The user's approvals of project-defined MCP servers, remembered in the data dir.

A server a project's file defines is a program (or a URL) that arrived with whatever the user cloned; it is
never started until the user approved that exact server (`ServerSpec.fingerprint`: the project, the name, the
resolved command or URL, and the env and header entries as written). An edited command, a server of the same
name in another project, or a new env entry asks again. Settings the other tools keep for "enable every
project server" (Claude Code's `enableAllProjectMcpServers`, `enabledMcpjsonServers`) are not read: they were
given to another program, not to yeetui. Trusting a project (`yeetui trust`) is not consent either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.mcp.servers import ServerSpec


def _approvals_file(env: Mapping[str, str] | None = None) -> Path:
    return paths.data_dir(env) / "mcp-approvals.json"


def _read(env: Mapping[str, str] | None) -> dict[str, Any]:
    """Fingerprint → record; a missing or unreadable file approves nothing."""
    try:
        data = json.loads(_approvals_file(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    approved = data.get("approved") if isinstance(data, dict) else None
    return {k: v for k, v in approved.items() if isinstance(v, dict)} if isinstance(approved, dict) else {}


def is_approved(spec: ServerSpec, project_dir: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether `spec` may start: user-scoped servers start as configured; a project's only once approved."""
    return not spec.needs_consent or spec.fingerprint(project_dir) in _read(env)


def approve(spec: ServerSpec, project_dir: Path, env: Mapping[str, str] | None = None) -> None:
    """Remember that the user approved exactly `spec` for `project_dir`."""
    approved = _read(env)
    approved[spec.fingerprint(project_dir)] = {
        "project": str(Path(project_dir).resolve()), "name": spec.name, "source": str(spec.path),
        "target": spec.target, "env": sorted(spec.env_as_written), "headers": sorted(spec.headers_as_written),
        "approved_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _write(approved, env)


def revoke(name: str, project_dir: Path, env: Mapping[str, str] | None = None) -> int:
    """Forget every approval of a server called `name` in `project_dir`; how many there were."""
    project = str(Path(project_dir).resolve())
    approved = _read(env)
    gone = [k for k, v in approved.items() if v.get("project") == project and v.get("name") == name]
    for key in gone:
        del approved[key]
    if gone:
        _write(approved, env)
    return len(gone)


def _write(approved: dict[str, Any], env: Mapping[str, str] | None) -> None:
    data = {"version": 1, "approved": dict(sorted(approved.items()))}
    paths.replace_private(_approvals_file(env), json.dumps(data, indent=1) + "\n")
