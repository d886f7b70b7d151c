"""`yeetui profiles list|show|validate`: the agent profiles as loaded here, and their problems."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from yeetui import paths
from yeetui.cli.common import EXIT_FAILED, EXIT_OK
from yeetui.profile_loader import load_profiles, validate_profile_file
from yeetui.resources import builtin_dir
from yeetui.trust import is_trusted


async def cmd_profiles(args: argparse.Namespace) -> int:
    if args.action == "validate" and args.path:
        errors = validate_profile_file(Path(args.path))
    else:
        profiles = load_profiles(project_dir=Path.cwd(), user_dir=paths.config_dir() / "agents",
                                 builtin_dir=builtin_dir("agents"), trusted=is_trusted(Path.cwd()))
        errors = profiles.errors
    if args.action == "validate":
        if args.json:
            print(json.dumps({"ok": not errors, "errors": [str(e) for e in errors]}))
        elif errors:
            for err in errors:
                print(str(err), file=sys.stderr)
        else:
            print("All profiles are valid." if not args.path else f"{args.path}: valid.")
        return EXIT_FAILED if errors else EXIT_OK
    for err in errors:
        print(f"yeetui: warning: {err}", file=sys.stderr)
    if args.action == "list":
        rows = [{"name": p.name, "description": p.description, "capabilities": list(p.capabilities),
                 "model": p.model, "sources": [str(s) for s in p.sources]} for p in profiles.profiles.values()]
        if args.json:
            print(json.dumps(rows))
        else:
            for row in rows:
                print(f"{row['name']:<14} {','.join(row['capabilities']):<28} {row['description']}")
        return EXIT_OK
    profile = profiles.get(args.name)
    data = profile.model_dump(mode="json")
    data["sources"] = [str(s) for s in profile.sources]
    if args.json:
        print(json.dumps(data))
    else:
        print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return EXIT_OK
