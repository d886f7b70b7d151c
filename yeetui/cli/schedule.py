"""`yeetui schedule`: agents that run on a schedule (see yeetui.application.schedules)."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

from yeetui import paths
from yeetui.application.schedules import (
    Scheduler,
    describe_fire,
    describe_spec,
    describe_state,
    local_time,
)
from yeetui.bus import Bus
from yeetui.cli.common import budget_of, error, open_store, table
from yeetui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from yeetui.errors import YeetuiError
from yeetui.events import Notice
from yeetui.text import clip_words, one_line


async def cmd_schedule(args: argparse.Namespace) -> int:
    handler = {"add": _add, "list": _list, "pause": _pause, "resume": _resume, "remove": _remove,
               "run-now": _run_now, "daemon": _daemon}[args.action]
    try:
        return await handler(args)
    except YeetuiError as exc:
        error(args, str(exc))
        return EXIT_FAILED


async def _add(args: argparse.Namespace) -> int:
    project = paths.find_project_root(Path.cwd())
    async with await open_store() as store:
        schedule = await Scheduler(store).add(project_dir=project, when=args.when, profile=args.profile,
                                              prompt=args.prompt, missed=args.missed, approve=args.yes,
                                              budget=budget_of(args))
    if args.json:
        print(json.dumps(schedule.to_json()))
    else:
        print(f"Schedule {schedule.id}: {schedule.profile} {schedule.spec!r}, next at {local_time(schedule.next_at)}. "
              "It fires while `yeetui schedule daemon` or any yeetui app runs.")
    return EXIT_OK


async def _list(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        listing = await Scheduler(store).listing()
    if args.json:
        print(json.dumps([{**s.to_json(), "last": fire.__dict__ if fire else None} for s, fire in listing],
                         default=str))
        return EXIT_OK
    if not listing:
        print("No schedules. Add one: yeetui schedule add \"0 7 * * 1-5\" --profile reviewer \"review yesterday\"",
              file=sys.stderr)
        return EXIT_OK
    rows = [(s.id, describe_spec(s.spec), s.profile, describe_state(s),
             "skip missed" if s.missed == "skip" else "run missed once", describe_fire(fire),
             clip_words(one_line(s.prompt), 40)) for s, fire in listing]
    print(table(("ID", "WHEN", "PROFILE", "STATE", "MISSED", "LAST", "PROMPT"), rows))
    return EXIT_OK


async def _pause(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        schedule = await Scheduler(store).pause(args.id)
    print(f"Schedule {schedule.id} paused.")
    return EXIT_OK


async def _resume(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        schedule = await Scheduler(store).resume(args.id)
    print(f"Schedule {schedule.id} resumed; next at {local_time(schedule.next_at)}.")
    return EXIT_OK


async def _remove(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        schedule = await Scheduler(store).remove(args.id)
    print(f"Schedule {schedule.id} removed.")
    return EXIT_OK


async def _run_now(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        run_id = await Scheduler(store).run_now(args.id)
    print(json.dumps({"run_id": run_id}) if args.json else run_id)
    return EXIT_OK


async def _daemon(args: argparse.Namespace) -> int:
    """A foreground process that fires due schedules (put it in systemd or a tmux window)."""
    bus = Bus()

    def say(event: object) -> None:
        if isinstance(event, Notice):
            print(f"{datetime.now(UTC).astimezone():%H:%M:%S} {event.text}", file=sys.stderr, flush=True)

    bus.add_listener(say)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with await open_store() as store:
        scheduler = Scheduler(store, bus)
        if args.once:
            for schedule, run_id in await scheduler.tick():
                print(f"Schedule {schedule.id}: started run {run_id}.", flush=True)
            return EXIT_OK
        print(f"Firing due schedules every {args.interval:g} s; ctrl+c stops.", file=sys.stderr, flush=True)
        await scheduler.run_forever(interval=args.interval, stop=stop)
    return EXIT_OK
