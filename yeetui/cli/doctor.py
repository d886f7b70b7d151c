"""`yeetui doctor`: what this machine gives yeetui, and what is missing — above all whether agents' `bash` runs
in an OS sandbox here, and how strong it is.

One line per check, `ok`, `warning` or `missing`; with `--json` the same as one object. Exit 1 when a check
that protects the user fails (no sandbox at all), else 0. Keys are reported as set or not, never shown.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from yeetui import paths
from yeetui.application.doctor import run_checks
from yeetui.cli.common import error
from yeetui.cli.exit_codes import EXIT_OK


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
