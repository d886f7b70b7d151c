"""`yeetui trust [PATH] [--revoke]`: say what an untrusted project's files ask for, and trust it (or stop).

Trusting lets the project's `.yeetui/config.yaml` and agent files (`.yeetui/agents`, `.claude/agents`,
`.opencode/agent(s)`) widen rights as they say — allow rules, writable profiles, higher limits. Before
recording it, the command lists exactly what that grants, so the user trusts knowingly. Trust is pinned to
those files' content: when they changed since the project was last trusted, the command names them first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from yeetui import paths
from yeetui.application.trust import trust_project
from yeetui.cli.common import error, say_trusted
from yeetui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from yeetui.settings.trust import set_trusted


async def cmd_trust(args: argparse.Namespace) -> int:
    return await asyncio.to_thread(_trust, args)  # file reads and writes only


def _trust(args: argparse.Namespace) -> int:
    project = Path(args.path or Path.cwd()).resolve()
    if project.is_dir():
        project = paths.find_project_root(project)
    else:
        error(args, f"{project} is not a directory.")
        return EXIT_FAILED
    if args.revoke:
        set_trusted(project, False)
        if args.json:
            print(json.dumps({"project": str(project), "trusted": False}))
        else:
            print(f"{project} is no longer trusted: its files may narrow rights, not widen them.")
        return EXIT_OK
    trusted = trust_project(project)
    if args.json:
        print(json.dumps({"project": str(project), "trusted": True, "was_trusted": trusted.already,
                          "grants": trusted.granted, "changed": list(trusted.changed),
                          "not_granted": trusted.beside}))
        return EXIT_OK
    say_trusted(project, trusted)
    return EXIT_OK
