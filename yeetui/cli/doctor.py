"""`yeetui doctor`: what this machine gives yeetui, and what is missing — above all whether agents' `bash` runs
in an OS sandbox here, and how strong it is.

One line per check, `ok`, `warning` or `missing`; with `--json` the same as one object. Exit 1 when a check
that protects the user fails (no sandbox at all), else 0. Keys are reported as set or not, never shown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from yeetui import __version__, paths
from yeetui.cli.common import EXIT_OK, error
from yeetui.config import load_settings, provider_credentials
from yeetui.errors import ConfigError
from yeetui.providers.base import split_model
from yeetui.runs.prompting import read_context_files
from yeetui.system import sandbox
from yeetui.system.tmux import TmuxServer, server_name
from yeetui.trust import trust_state

State = Literal["ok", "warning", "missing"]

LANDLOCK_WEAKER = ("weaker than bubblewrap: inside the workspace, bash can write .git/, .yeetui/, .claude/ and "
                   ".opencode/ (the file tools still refuse them), a writable agent can change the mode and times "
                   "of your files outside it, and before ABI 4 it can reach the network over TCP")
NO_SECCOMP = ("; libseccomp is missing, so UDP, Unix sockets (your tmux, D-Bus, databases), chown and extended "
              "attributes are open to bash too (install libseccomp2)")


@dataclass(frozen=True)
class Check:
    name: str
    state: State
    detail: str


def sandbox_check() -> Check:
    if sandbox.probe_bwrap():
        return Check("sandbox", "ok", "bubblewrap: agents' bash sees the filesystem read-only except its workspace "
                     "(.git/, .yeetui/, .claude/, .opencode/ stay read-only), no network unless allowed, no "
                     "capabilities even as root")
    if sandbox.probe_landlock():
        seccomp = sandbox.seccomp_available()
        return Check("sandbox", "warning", f"Landlock ABI {sandbox.landlock_abi()}{' + seccomp' if seccomp else ''} "
                     f"(bubblewrap does not work here): {LANDLOCK_WEAKER}{'' if seccomp else NO_SECCOMP}")
    return Check("sandbox", "missing", "no OS sandbox works here (install bubblewrap; Landlock needs Linux 5.13+): "
                 "agents' bash runs with your rights, behind the permission rules only; read-only agents get no "
                 "bash. `tools.bash_sandbox: required` in config.yaml refuses bash to every agent instead")


async def run_checks(project: Path) -> list[Check]:
    checks = [Check("yeetui", "ok", f"{__version__} on Python {platform.python_version()}")]
    checks.append(await asyncio.to_thread(sandbox_check))
    problem = await TmuxServer(server_name(paths.data_dir())).problem()
    checks.append(Check("tmux", "warning", f"{problem}: subagents run in-process instead of panes") if problem
                  else Check("tmux", "ok", f"{shutil.which('tmux')}: subagents can run in panes"))
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
    checks.append(Check("dirs", "ok", f"config {paths.config_dir()}, data {paths.data_dir()}"))
    return checks


async def cmd_doctor(args: argparse.Namespace) -> int:
    try:
        checks = await run_checks(paths.find_project_root(Path.cwd()))
    except OSError as exc:
        error(args, f"could not check this machine: {exc}")
        return 1
    if args.json:
        print(json.dumps({"checks": [asdict(c) for c in checks]}))
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            print(f"{check.name:<{width}}  {check.state:<7}  {check.detail}")
    return 1 if any(c.state == "missing" for c in checks) else EXIT_OK
