"""Which of the MCP servers the config files define this process starts, and what it says of the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from yeetui import paths
from yeetui.mcp.consent import admit
from yeetui.mcp.servers import ServerSpec
from yeetui.mcp.sources import default_home, discover
from yeetui.settings.config import ProjectGrants


def startable_servers(project_dir: Path, env: Mapping[str, str], grants: ProjectGrants,
                      sandbox: Callable[[], str | None]) -> tuple[list[ServerSpec], list[str]]:
    """The MCP servers this process may start — enabled, and the user's own or approved (`yeetui mcp approve`),
    a project's confined or granted — and warnings: files that could not be read, and a project's servers left
    unstarted, each saying why. `sandbox` probes the OS sandbox a confined server would run in."""
    found = discover(project_dir, home=default_home(env), env=env, config_dir=paths.config_dir(env))
    warnings = [f"MCP: {problem}" for problem in found.problems]
    startable = []
    for spec in found.servers:
        admitted = admit(spec, project_dir, env, unconfined=grants.unconfined_mcp_servers,
                         secrets_for=grants.mcp_secrets, sandbox=sandbox, home=default_home(env))
        if admitted.state in ("user", "approved"):
            startable.append(admitted.spec)
        elif admitted.state == "needs approval":
            changed = f" (what it runs changed since you approved it: {admitted.reason})" if admitted.reason else ""
            warnings.append(f"The MCP server {spec.name} that {spec.path} defines is not started: it needs your "
                            f"approval of exactly what it runs{changed} (`yeetui mcp list`, then `yeetui mcp "
                            f"approve {spec.name}`).")
        elif admitted.state == "refused":
            warnings.append(f"The MCP server {spec.name} that {spec.path} defines is not started: {admitted.reason}.")
    return startable, warnings
