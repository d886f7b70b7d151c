"""`yeetui profiles list|show|validate`: the agent profiles as loaded here, and their problems."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from yeetui import paths
from yeetui.application.profiles import unknown_names
from yeetui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from yeetui.definitions.profile_loader import load_profiles, validate_profile_file
from yeetui.errors import ProfileError
from yeetui.paths import find_project_root
from yeetui.resources import builtin_dir
from yeetui.settings.trust import is_trusted


def _table(rows: list[dict[str, Any]], project: Path) -> str:
    """Name, roles, source file and the first line of the description, in aligned columns; a renamed or
    project-changed profile says so on the line below."""
    builtins = builtin_dir("agents")

    def source(row: dict[str, Any]) -> str:
        if not row["sources"]:
            return "built in"
        last = Path(row["sources"][-1])
        for base, shown in ((project, ""), (builtins, "built in: ")):
            if last.is_relative_to(base):
                return shown + str(last.relative_to(base))
        return str(last)

    cells = [(row["name"], ",".join(row["capabilities"]), source(row),
              (row["description"].strip().splitlines() or [""])[0]) for row in rows]
    widths = [max((len(c[i]) for c in cells), default=0) for i in range(3)]
    lines = []
    for row, (name, roles, where, description) in zip(rows, cells, strict=True):
        description = description if len(description) <= 100 else description[:99] + "…"
        lines.append(f"{name:<{widths[0]}}  {roles:<{widths[1]}}  {where:<{widths[2]}}  {description}".rstrip())
        if row["note"]:
            lines.append(f"{'':<{widths[0]}}  ↳ {row['note']}")
    return "\n".join(lines)


async def cmd_profiles(args: argparse.Namespace) -> int:
    project = find_project_root(Path.cwd())
    if args.action == "validate" and args.path:
        errors: list[ProfileError] = [*validate_profile_file(Path(args.path))]
    else:
        profiles = load_profiles(project_dir=project, user_dir=paths.config_dir() / "agents",
                                 builtin_dir=builtin_dir("agents"), trusted=is_trusted(project))
        errors = profiles.errors
    if args.action == "validate":
        notes = [str(e) for e in errors if getattr(e, "warning", False)]
        if not args.path:
            notes += unknown_names(profiles)
        problems = [str(e) for e in errors if not getattr(e, "warning", False)]
        if args.json:
            print(json.dumps({"ok": not problems and not (args.strict and notes), "errors": problems,
                              "warnings": notes}))
        else:
            for text in problems:
                print(f"error: {text}", file=sys.stderr)
            for text in notes:
                print(f"warning: {text}", file=sys.stderr)
            if not problems and not notes:
                print("All profiles are valid." if not args.path else f"{args.path}: valid.")
            elif not problems:
                print(f"Valid, with {len(notes)} warning{'s' if len(notes) > 1 else ''}.")
        return EXIT_FAILED if problems or (args.strict and notes) else EXIT_OK
    for err in errors:
        print(f"yeetui: warning: {err}", file=sys.stderr)
    if args.action == "list":
        rows = [{"name": p.name, "description": p.description, "capabilities": list(p.capabilities),
                 "model": p.model, "sources": [str(s) for s in p.sources], "note": p.note}
                for p in sorted(profiles, key=lambda p: p.name)]
        if args.json:
            print(json.dumps(rows))
        else:
            print(_table(rows, project))
        return EXIT_OK
    profile = profiles.get(args.name)
    data = profile.model_dump(mode="json")
    data["sources"] = [str(s) for s in profile.sources]
    if args.json:
        print(json.dumps(data))
    else:
        print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return EXIT_OK
