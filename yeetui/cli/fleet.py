"""`yeetui fleet`: every run of every project on this data dir, grouped by what it needs (see
yeetui.application.fleet)."""

from __future__ import annotations

import argparse
import json
import sys

from yeetui.application.fleet import Fleet, FleetDesk, FleetRow, fleet
from yeetui.cli.common import open_store, table
from yeetui.cli.exit_codes import EXIT_OK
from yeetui.subagents.ledger import format_elapsed
from yeetui.text import dollars, one_line, terminal_safe, tokens_text


async def cmd_fleet(args: argparse.Namespace) -> int:
    """Full screen in a terminal (live, acting on runs); `--print` (or output to a pipe) a listing; `--json`."""
    if not (args.json or args.print) and sys.stdin.isatty() and sys.stdout.isatty():
        from yeetui.cli.common import setup_logging
        from yeetui.tui.fleet_app import FleetApp

        setup_logging()
        async with await open_store() as store:
            await FleetApp(FleetDesk(store)).run_async()
        return EXIT_OK
    async with await open_store() as store:
        seen = await fleet(store, limit=args.limit)
    if args.json:
        print(json.dumps(seen.to_json(), default=str))
        return EXIT_OK
    _print(seen)
    return EXIT_OK


def _print(seen: Fleet) -> None:
    for title, rows in (("NEEDS YOU", seen.needs_you), ("WORKING", seen.working), ("DONE (24 h)", seen.done)):
        print(f"{title} ({len(rows)})")
        if rows:
            print(table(("RUN", "LABEL", "STATUS", "PROJECT", "MODE", "TIME", "SPEND", "WHAT"),
                        [_cells(r) for r in rows]))
        print()
    if seen.done_not_listed:
        print(f"… and {seen.done_not_listed} older done in the last 24 hours, not listed (--limit)")


def _cells(row: FleetRow) -> tuple[str, ...]:
    spend = f"{dollars(row.cost)} {tokens_text(row.tokens)}" if row.tokens else "-"
    elapsed = format_elapsed(row.elapsed) if row.elapsed is not None else "-"
    return (row.run_id[:12], _safe(row.path)[-40:], row.status_text, _safe(row.project)[-30:], row.mode, elapsed, spend,
            _safe(row.why)[:60])


def _safe(text: str) -> str:
    """A run's own words (its question, its error) on one line, without what would act on the terminal."""
    return one_line(terminal_safe(text))
