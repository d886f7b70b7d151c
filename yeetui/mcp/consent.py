"""The user's approvals of project-defined MCP servers, remembered in the data dir.

A server a project's file defines is a program (or a URL) that arrived with whatever the user cloned; it is
never started until the user approved that exact server (`ServerSpec.fingerprint`: the project, the name, the
resolved command or URL, and the env and header entries as written) and the files it runs as they were then
(`pins`: the content of every project file its command names, the executable it resolves to). An edited
command, a server of the same name in another project, a new env entry — or an agent's edit of the script
the server runs — asks again, and the question names what changed. Settings the other tools keep for "enable every
project server" (Claude Code's `enableAllProjectMcpServers`, `enabledMcpjsonServers`) are not read: they were
given to another program, not to yeetui. Trusting a project (`yeetui trust`) is not consent either.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from yeetui import paths
from yeetui.mcp.launch import unconfinable
from yeetui.mcp.servers import ServerSpec
from yeetui.settings.pins import changes, command_pins, neutral_dir


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


@dataclass(frozen=True)
class Approval:
    """Whether a server may start, and — when it was approved but what it runs changed since — what changed."""

    approved: bool
    pins: Mapping[str, str]
    """What the approval pinned (the files as they are now, when it holds)."""
    changed: tuple[str, ...] = ()


def current_pins(spec: ServerSpec, project_dir: Path, home: Path | None = None) -> dict[str, str]:
    """The project files `spec`'s command names and the executable it resolves to, as they are now (nothing for
    a remote server)."""
    if spec.transport != "stdio" or not spec.command:
        return {}
    home = home or Path(os.environ.get("HOME") or Path.home())
    cwd = Path(spec.cwd) if spec.cwd else neutral_dir(project_dir, home)
    return command_pins(spec.command, project_dir, cwd=cwd, path=spec.env.get("PATH", os.environ.get("PATH")))


def approval(spec: ServerSpec, project_dir: Path, env: Mapping[str, str] | None = None,
             home: Path | None = None) -> Approval:
    """Whether `spec` may start: user-scoped servers start as configured; a project's only once approved, and
    only while the files it runs are those approved."""
    if not spec.needs_consent:
        return Approval(True, {})
    record = _read(env).get(spec.fingerprint(project_dir))
    now = current_pins(spec, project_dir, home)
    if record is None:
        return Approval(False, now)
    pinned = record.get("pins")
    if not isinstance(pinned, dict):  # approved before yeetui pinned files: the approval is of the config only
        return Approval(False, now, ("what it runs was not pinned when you approved it",))
    if pinned != now:
        return Approval(False, now, tuple(changes({str(k): str(v) for k, v in pinned.items()}, now)))
    return Approval(True, now)


def approve(spec: ServerSpec, project_dir: Path, env: Mapping[str, str] | None = None, *,
            pins: Mapping[str, str] | None = None) -> None:
    """Remember that the user approved exactly `spec` for `project_dir`, with the files it runs as they are now —
    or as `pins` says they were when the user was shown them."""
    approved = _read(env)
    approved[spec.fingerprint(project_dir)] = {
        "project": str(Path(project_dir).resolve()), "name": spec.name, "source": str(spec.path),
        "target": spec.target, "env": sorted(spec.env_as_written), "headers": sorted(spec.headers_as_written),
        "pins": dict(current_pins(spec, project_dir) if pins is None else pins),
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


Admitted = Literal["user", "approved", "needs approval", "disabled", "refused"]


@dataclass(frozen=True)
class Admission:
    """Whether a configured server may start here and now, and if not, why."""

    spec: ServerSpec
    """As it would start: a project's with the pins of its approval, and `unconfined` when the user granted it."""
    state: Admitted
    reason: str = ""
    """Why it needs approval again (what changed) or is refused."""


def admit(spec: ServerSpec, project_dir: Path, env: Mapping[str, str] | None = None, *,
          unconfined: Collection[str] = (), secrets_for: Mapping[str, Collection[str]] | None = None,
          sandbox: Callable[[], str | None] | None = None, home: Path | None = None) -> Admission:
    """Decide whether `spec` may start: the user's own servers as configured; a project's only when it names
    no secret-named variable the user's own config does not grant it (`secrets_for`), is approved with the
    files it runs unchanged, and an OS sandbox works here (`sandbox`, probed only then) or the user's own
    config lets it run unconfined (`unconfined`, by name)."""
    if not spec.enabled:
        return Admission(spec, "disabled")
    if not spec.needs_consent:
        return Admission(spec, "user")
    granted = set((secrets_for or {}).get(spec.name, ()))
    if wanted := [name for name in spec.secret_references() if name not in granted]:
        grant = f"project_grants: {{mcp_secrets: {{{spec.name}: [{', '.join(wanted)}]}}}}"
        return Admission(spec, "refused", (
            f"it names {', '.join(wanted)}, which may hold a key or password, and a project's file must not hand "
            f"one to a program it brings; if you want it to have {'them' if len(wanted) > 1 else 'it'}, put "
            f"`{grant}` in your own ~/.config/yeetui/config.yaml"))
    decided = approval(spec, project_dir, env, home=home)
    pinned = replace(spec, pins=dict(decided.pins), unconfined=spec.name in unconfined)
    if not decided.approved:
        return Admission(pinned, "needs approval", "; ".join(decided.changed))
    if not pinned.unconfined and spec.transport == "stdio" and sandbox is not None and sandbox() is None:
        return Admission(pinned, "refused", unconfinable(spec.name))
    return Admission(pinned, "approved")
