"""Command line: `yeetui run`, `yeetui sessions`, `yeetui profiles`, `yeetui --version`.

Only argparse is imported at module level, so `yeetui --version` and `--help` stay fast; each command
imports what it needs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from yeetui import __version__


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"yeetui: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="yeetui", description="A terminal app for LLM coding agents built around subagents.")
    parser.add_argument("--version", action="version", version=f"yeetui {__version__}")
    parser.add_argument("--model", help="model for this run, as provider/model")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="run one prompt headless and print the result")
    run.add_argument("prompt", nargs="?", help="the task (omit with --resume to just continue)")
    run.add_argument("--profile", "-p", help="agent profile (default: the primary profile, generic)")
    run.add_argument("--model", "-m", dest="run_model", help="model as provider/model")
    run.add_argument("--json", action="store_true", help="print one JSON event per line, the last a result")
    run.add_argument("--yes", "-y", action="store_true", help="allow tool calls that would ask permission")
    run.add_argument("--resume", metavar="SESSION", help="continue this session (id or unique prefix)")
    run.add_argument("--continue", dest="cont", action="store_true", help="continue the latest session")

    sessions = sub.add_parser("sessions", help="list and show sessions")
    ssub = sessions.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    slist = ssub.add_parser("list", help="recent sessions with their latest run")
    slist.add_argument("--json", action="store_true")
    slist.add_argument("--limit", type=int, default=50)
    sshow = ssub.add_parser("show", help="a session's runs and transcript")
    sshow.add_argument("id")
    sshow.add_argument("--json", action="store_true")

    profiles = sub.add_parser("profiles", help="list, show and validate agent profiles")
    psub = profiles.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    plist = psub.add_parser("list", help="every profile and where it comes from")
    plist.add_argument("--json", action="store_true")
    pshow = psub.add_parser("show", help="one profile, merged")
    pshow.add_argument("name")
    pshow.add_argument("--json", action="store_true")
    pval = psub.add_parser("validate", help="check profile files (all, or one PATH)")
    pval.add_argument("path", nargs="?")
    pval.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from yeetui.cli_commands import dispatch

    return dispatch(args)


if __name__ == "__main__":
    raise SystemExit(main())
