"""`yeetui trust [PATH] [--revoke]`: say what an untrusted project's files ask for, and trust it (or stop).

Trusting lets the project's `.yeetui/config.yaml` and agent files (`.yeetui/agents`, `.claude/agents`,
`.opencode/agent(s)`) widen rights as they say — allow rules, writable profiles, higher limits. Before
recording it, the command lists exactly what that grants, so the user trusts knowingly.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from yeetui import paths
from yeetui.cli.common import EXIT_OK, EXIT_USAGE, error
from yeetui.config import load_settings
from yeetui.errors import ConfigError
from yeetui.profile_loader import load_profiles
from yeetui.resources import builtin_dir
from yeetui.trust import is_trusted, set_trusted


def widenings(project: Path) -> list[str]:
    """What the project's files ask for beyond what an untrusted project gets, one line each."""
    found: list[str] = []
    try:
        found += [w for w in load_settings(project_dir=project, trusted=False).warnings if "not trusted" in w]
    except ConfigError as exc:
        found.append(str(exc))
    profiles = load_profiles(project_dir=project, user_dir=paths.config_dir() / "agents",
                             builtin_dir=builtin_dir("agents"), trusted=False)
    found += [str(e) for e in profiles.errors if "not trusted" in str(e)]
    return [line.split(" — ", 1)[0].replace(": ignored ", ": ", 1) for line in found]


async def cmd_trust(args: argparse.Namespace) -> int:
    return await asyncio.to_thread(_trust, args)  # file reads and writes only


def _trust(args: argparse.Namespace) -> int:
    project = Path(args.path or Path.cwd()).resolve()
    if project.is_dir():
        project = paths.find_project_root(project)
    else:
        error(args, f"{project} is not a directory.")
        return EXIT_USAGE
    if args.revoke:
        set_trusted(project, False)
        if args.json:
            print(json.dumps({"project": str(project), "trusted": False}))
        else:
            print(f"{project} is no longer trusted: its files may narrow rights, not widen them.")
        return EXIT_OK
    granted = widenings(project)
    already = is_trusted(project)
    set_trusted(project, True)
    if args.json:
        print(json.dumps({"project": str(project), "trusted": True, "was_trusted": already, "grants": granted}))
        return EXIT_OK
    print(f"Trusted {project}." + (" (It already was.)" if already else ""))
    if granted:
        print("Its files now take effect as written:")
        for line in granted:
            print(f"  - {line}")
    else:
        print("Its files ask for nothing beyond what an untrusted project gets.")
    return EXIT_OK
