"""The fleet view with 500 runs listed (issue 29): does it stay responsive while it refreshes from the store?

The real FleetApp (`yeetui fleet`), headless (`run_test(size=(150, 40))`), on a store of N runs — most finished,
some working (their elapsed time changes at every refresh, so their rows are redrawn), some waiting on a
permission question — refreshed every 2 s as the app does (and, `--refresh 0.5`, four times as often) while a
key moves the
highlight down and up the list. Measured: key → highlight moved (p50/p99/max), event-loop stalls (a 2 ms timer's
oversleep), and one refresh (read the store, update the rows). Baseline: the same with 5 runs, same run.

Usage: python bench/bench_fleet.py [--runs 500] [--keys 200] [--refresh S] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import LagMonitor, emit, fork_cases, median, percentile, run_case, show

ROOT = Path(__file__).resolve().parent.parent


async def _fill(store, runs: int, project: Path) -> None:  # type: ignore[no-untyped-def]
    from yeetui.events import RunStatus

    working, asking = max(1, runs // 16), max(1, runs // 25)
    for n in range(runs):
        session = await store.create_session(profile="oracle", cwd=project, title=f"oracle#{n}")
        run = await store.create_run(session_id=session.id, profile="oracle", model=None, prompt="p",
                                     status=RunStatus.QUEUED, label=f"oracle#{n}", pid=os.getpid(),
                                     options={"detached": True})
        await store.update_run(run.id, status=RunStatus.RUNNING)
        if n < asking:
            await store.update_run(run.id, status=RunStatus.WAITING_PERMISSION)
            await store.permission_asks.post(run.id, run_id=run.id, session_id=session.id, agent_label=f"oracle#{n}",
                                             tool="bash", subject=f"make step-{n}", arguments={}, open_to_all=True)
        elif n >= asking + working:
            await store.update_run(run.id, status=RunStatus.COMPLETED)


async def _case(runs: int, keys: int, refresh: float) -> None:
    import yeetui.tui.screens.fleet as fleet_screen

    fleet_screen.REFRESH = refresh
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as folder:
        await _measure(Path(folder), runs, keys)


async def _measure(home: Path, runs: int, keys: int) -> None:
    from textual import events
    from textual.widgets import OptionList

    import yeetui.tui.screens.fleet as fleet_screen
    from yeetui.application.fleet import FleetDesk
    from yeetui.store import Store
    from yeetui.tui.fleet_app import FleetApp

    async with await Store.open(home / "yeetui.db") as store:
        await _fill(store, runs, home)
        app = FleetApp(FleetDesk(store), run_handover=lambda handover: 0)
        async with app.run_test(size=(150, 40)) as pilot:
            while (not isinstance(app.screen, fleet_screen.FleetScreen)
                   or not cast(fleet_screen.FleetScreen, app.screen).rows):
                await pilot.pause(0.05)
            screen = cast(fleet_screen.FleetScreen, app.screen)
            listing = screen.query_one(OptionList)
            refreshes = []
            for _ in range(5):
                start = time.perf_counter()
                await screen.action_refresh()
                refreshes.append(time.perf_counter() - start)
            moved = asyncio.Event()
            listing.watch(listing, "highlighted", lambda _: moved.set(), init=False)
            rng = random.Random(4)
            monitor = LagMonitor().start()
            echo, direction = [], "down"
            looks = screen.looks
            for n in range(keys):
                if n and n % 40 == 0:
                    direction = "up" if direction == "down" else "down"
                await asyncio.sleep(rng.uniform(0.02, 0.06))  # a fast typist's pace, at random phases of refreshes
                moved.clear()
                start = time.perf_counter()
                app._driver.send_message(events.Key(direction, None))  # what the terminal driver does
                try:
                    await asyncio.wait_for(moved.wait(), 5.0)
                finally:
                    echo.append(time.perf_counter() - start)  # a key never seen counts as the time waited
            lag = await monitor.stop()
            emit({"echo_p50": median(echo), "echo_p99": percentile(echo, 99), "echo_max": max(echo),
                  "lag_max": lag["max"], "lag_p99": lag["p99"], "refresh": median(refreshes),
                  "looks": screen.looks - looks, "rows": len(screen.rows)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--refresh", type=float, default=2.0)
    parser.add_argument("--quick", action="store_true", help="a tiny run that only shows it works")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.keys, args.refresh = 40, 12, 0.5
    if args.case is not None:
        asyncio.run(_case(args.case, args.keys, args.refresh))
        return
    if args.quick:
        fork_cases(["yeetui.store", "yeetui.application.fleet", "yeetui.tui.fleet_app"])
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as home:
        env.update({"YEETUI_CONFIG_DIR": f"{home}/config", "YEETUI_DATA_DIR": f"{home}/data"})
        script = str(Path(__file__).resolve())
        flags = ["--keys", str(args.keys), "--refresh", str(args.refresh)]
        base = run_case([script, "--case", "5", *flags], env=env, cwd=ROOT)
        many = run_case([script, "--case", str(args.runs), *flags], env=env, cwd=ROOT)
    print(f"fleet with {many['rows']} runs vs {base['rows']} runs, refreshed every {args.refresh:g} s "
          f"({many['looks']} refreshes during the keys):")
    show("  key → highlight moved p50", many["echo_p50"], base["echo_p50"])
    show("  key → highlight moved p99", many["echo_p99"], base["echo_p99"], goal=3.0)
    show("  key → highlight moved max", many["echo_max"], base["echo_max"])
    show("  event-loop stall max", many["lag_max"], base["lag_max"])
    show("  one refresh (read the store, update the rows)", many["refresh"], base["refresh"])


if __name__ == "__main__":
    main()
