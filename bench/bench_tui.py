"""TUI costs (issue 4). Every figure is printed next to a baseline measured in the same run.

(a) Time to first frame: `python -m yeetui` vs a bare Textual app with a Header, a Markdown and an Input
    (bench/tui_probe.py), each started in a 120×40 pseudo-terminal and timed until its first visible text,
    until its usable screen (yeetui: the composer; the probe: all three widgets) has been written, until
    text typed the moment the composer (the probe's Input) shows is echoed, and — yeetui only — until
    the main screen is up with the session open (the runtime built behind the first screen). The echo is the
    headline, "launch to an accepting prompt", printed last as a ratio against the bare app's.
(b) Responsiveness under load: the real YeetuiApp headless (`run_test(size=(120, 40))`) while the primary
    streams a long Markdown answer and 20 subagents stream in the background, vs the same app idle.
    Event-loop stalls come from a 2 ms timer task (oversleep max / p99); key echo is the time from a key
    reaching the app (sent the way the terminal driver sends it, as `pilot.press` does) to the character
    being in the composer's TextArea (its `TextArea.Changed` being dispatched).
(c) Opening a 10,000-message session vs a 10-message one (and a 100-message one, which is as many messages
    as the long one's first page): from `MainScreen.open_session(id)` to the view mounted, and to the first
    screen refresh after it (rendered); the widgets mounted. Then scrolling back through the long session
    page by page: each page-up until the view has settled (older messages mounted, pages fetched from the
    store) and redrawn, the last tenth of the steps vs the first tenth (does the cost grow with depth?),
    event-loop stalls meanwhile, and the widgets mounted at the end.
(d) Long sessions both ways: a 10,000-message session is opened; ctrl+home is pressed (the composer has the
    focus) and timed until the first message is mounted and drawn, against the time the session took to open
    (both read one page from the store); then the whole session is paged down to its end (each page-down until
    settled and redrawn), twice, and the process's RSS after each pass is compared with its RSS once the
    session was open (goal: within 20 %; each RSS is read after a full collection, as the app runs one when
    the user pauses); and ctrl+end from the top, timed the same way.
Each measurement runs in a fresh interpreter against the standalone fake LLM server (with --quick, a fork of the
driver, which has imported yeetui once: quick figures only show that the benchmark works).

Key echo as drawn in the real binary, in a terminal, is bench/bench_typing.py.

Usage: python bench/bench_tui.py [--quick] [--rounds N] [--keys N] [--only frame|load|open|jump …]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fake_llm, isolated_env
from bench.measure import LagMonitor, emit, fork_cases, median, percentile, run_case, show
from bench.tui_fixtures import fill_session, long_markdown

ROOT = Path(__file__).resolve().parent.parent
SIZE = (120, 40)
PRIMARY_MARKER = "PRIMARY-LONG-ANSWER"
SUBTASK_MARKER = "BG-SUBTASK"


def script(*, primary_chars: int, sub_chars: int) -> list[dict]:
    """Streams paced like fast real models: the primary ~600 characters/s in deltas of 12, each subagent
    ~400 characters/s."""
    complete = [{"name": "complete", "arguments": {"output": "done"}}]
    return [
        {"text": long_markdown(primary_chars), "chunk_size": 12, "chunk_delay": 0.02, "repeat": True,
         "when_contains": PRIMARY_MARKER},
        {"text": long_markdown(sub_chars), "chunk_size": 12, "chunk_delay": 0.03, "repeat": True,
         "tool_calls": complete, "when_contains": SUBTASK_MARKER},
    ]


# -- (b) responsiveness under load -----------------------------------------------------------------

async def _main_screen(pilot):
    from yeetui.tui.screens.main import MainScreen

    for _ in range(400):
        screen = pilot.app.screen
        if isinstance(screen, MainScreen) and screen.current:
            return screen
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the main screen never appeared (screen: {pilot.app.screen})")


async def case_load(*, busy: bool, keys: int, subagents: int, budget: float = 120.0) -> dict:
    from textual import events
    from textual.widgets import TextArea

    from yeetui.application.surface import Surface
    from yeetui.runtime import Runtime
    from yeetui.tui.app import YeetuiApp
    from yeetui.tui.widgets.composer import Composer

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project, spawner_limits={"max_concurrent": max(subagents, 1),
                                                              "max_children": max(subagents, 1)})
    echoed = asyncio.Event()

    def hook(message: object) -> None:
        if isinstance(message, TextArea.Changed) and message.text_area.id == "composer-input":
            echoed.set()

    app = YeetuiApp(cwd=project, surface=Surface(runtime), tune_gc=True)  # as the binary runs it
    try:
        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            main = await _main_screen(pilot)
            import anthropic  # noqa: F401  # the app warms it in a thread; make sure that is over
            await asyncio.sleep(0.5)
            control = main.control(main.current)
            setup = time.perf_counter()
            if busy:
                await control.submit(f"{PRIMARY_MARKER}: explain the tokenizer in depth")
                await asyncio.gather(*(control.spawn("generic", f"{SUBTASK_MARKER}-{i}: summarise the tokenizer")
                                       for i in range(subagents)))
                await _until_streaming(main)
            setup = time.perf_counter() - setup
            composer = main.query_one(Composer)
            composer.focus()
            await asyncio.sleep(0.1)
            live_at_start = len(runtime.spawner.live_runs())
            lag = LagMonitor(0.002).start()
            echoes: list[float] = []
            rng = random.Random(4)
            deadline = time.perf_counter() + budget
            for i in range(keys):
                if time.perf_counter() > deadline:
                    break  # a very slow app: report the keys measured so far
                if i and i % 40 == 0:
                    composer.input.clear()
                    await asyncio.sleep(0.05)
                await asyncio.sleep(rng.uniform(0.02, 0.06))  # sample stalls at random phases
                echoed.clear()
                char = "abcdefghijklmnopqrstuvwxyz"[i % 26]
                start = time.perf_counter()
                app._driver.send_message(events.Key(char, char))  # what the terminal driver (and Pilot) does
                try:
                    await asyncio.wait_for(echoed.wait(), max(deadline - start, 5.0))
                finally:
                    echoes.append(time.perf_counter() - start)  # a key never echoed counts as the time waited
            stalls = await lag.stop()
            live = len(runtime.spawner.live_runs())
            still_streaming = control.busy
            if busy:
                await control.interrupt()
            await runtime.spawner.shutdown()
    finally:
        await runtime.close()
    return {"echo": echoes, "lag_max": stalls["max"], "lag_p99": stalls["p99"], "lag_p50": stalls["p50"],
            "live_subagents_at_start": live_at_start, "live_subagents_at_end": live, "setup": setup,
            "primary_streaming_at_end": still_streaming}


async def _until_streaming(main) -> None:
    """Wait until the primary's answer shows (the subagents were spawned before: their spawn calls returned)."""
    from yeetui.tui.widgets.conversation import ConversationView

    view = main.query_one(f"#conv-{main.current}", ConversationView)
    deadline = time.perf_counter() + 120
    while time.perf_counter() < deadline:
        if view._live is not None:
            await asyncio.sleep(0.3)
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the primary's answer never started streaming")


# -- (c) opening long sessions ---------------------------------------------------------------------

async def case_open(*, sizes: list[int], rounds: int, scroll_steps: int = 0) -> dict:
    from yeetui import paths
    from yeetui.application.surface import Surface
    from yeetui.runtime import Runtime
    from yeetui.tui.app import YeetuiApp

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project)
    sessions = {}
    for size in sizes:
        record = await runtime.store.create_session(profile="generic", title=f"{size} messages",
                                                    cwd=str(project))
        fill_session(paths.database_path(runtime.env), record.id, size)
        sessions[size] = record.id
    results: dict[str, dict[str, list[float]]] = {str(s): {"loaded": [], "rendered": [], "widgets": []}
                                                  for s in sizes}
    app = YeetuiApp(cwd=project, surface=Surface(runtime), tune_gc=True)  # as the binary runs it
    try:
        async with app.run_test(size=SIZE) as pilot:
            main = await _main_screen(pilot)
            home = main.current
            await asyncio.sleep(0.5)
            for round_ in range(rounds + 1):  # the first round warms caches (CSS, imports) and is dropped
                shift = round_ % len(sizes)
                for size in sizes[shift:] + sizes[:shift]:  # each size takes each place in the order
                    refreshed = asyncio.Event()
                    start = time.perf_counter()
                    await main.open_session(sessions[size])
                    loaded = time.perf_counter() - start
                    main.call_after_refresh(refreshed.set)
                    await asyncio.wait_for(refreshed.wait(), 60)
                    rendered = time.perf_counter() - start
                    view = main.query_one(f"#conv-{sessions[size]}")
                    widgets = len(list(view.query("*")))
                    await main.open_session(home)
                    await view.remove()
                    await pilot.pause(0.2)
                    if round_ == 0:
                        continue
                    results[str(size)]["loaded"].append(loaded)
                    results[str(size)]["rendered"].append(rendered)
                    results[str(size)]["widgets"].append(widgets)
            if scroll_steps:
                results["scroll"] = await _scroll_back(pilot, main, sessions[max(sizes)], scroll_steps)
    finally:
        await runtime.close()
    return results


async def _scroll_back(pilot, main, session_id: str, steps: int) -> dict:
    """Page up `steps` times through a long session, timing each step until the view has settled (older
    messages mounted, pages fetched) and the screen refreshed; event-loop stalls meanwhile."""
    await main.open_session(session_id)
    await pilot.pause(0.3)
    view = main.query_one(f"#conv-{session_id}")
    after_open = len(list(view.query("*")))
    lag = LagMonitor(0.002).start()
    times: list[float] = []
    for _ in range(steps):
        start = time.perf_counter()
        view.scroll_page_up(animate=False)
        await asyncio.sleep(0)
        for _ in range(60_000):  # settled: nothing being mounted or fetched (the older code has no `paging`)
            if not (getattr(view, "paging", False) or view._loading_older):
                break
            await asyncio.sleep(0.001)
        refreshed = asyncio.Event()
        main.call_after_refresh(refreshed.set)
        await asyncio.wait_for(refreshed.wait(), 60)
        times.append(time.perf_counter() - start)
    stalls = await lag.stop()
    return {"steps": times, "lag_max": stalls["max"], "lag_p99": stalls["p99"], "widgets_after_open": after_open,
            "widgets_after": len(list(view.query("*")))}


async def poll(predicate, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.001)):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise RuntimeError(f"not reached within {timeout:g} s")


async def case_jump(*, size: int) -> dict:
    """(d): jump to the top of a long session and back, and page down through all of it."""
    from bench.measure import rss_kb
    from yeetui import paths
    from yeetui.application.surface import Surface
    from yeetui.runtime import Runtime
    from yeetui.tui.app import YeetuiApp
    from yeetui.tui.gc_pacing import collect_fully
    from yeetui.tui.widgets.message_views import UserMessageView

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project)
    record = await runtime.store.create_session(profile="generic", title=f"{size} messages", cwd=str(project))
    fill_session(paths.database_path(runtime.env), record.id, size)
    app = YeetuiApp(cwd=project, surface=Surface(runtime), tune_gc=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            main = await _main_screen(pilot)
            import anthropic  # noqa: F401  # the app warms it in a thread: not part of what scrolling costs
            await asyncio.sleep(0.5)

            async def drawn() -> None:
                refreshed = asyncio.Event()
                main.call_after_refresh(refreshed.set)
                await asyncio.wait_for(refreshed.wait(), 60)

            async def settled(view) -> None:
                for _ in range(60_000):
                    if not view.paging:
                        break
                    await asyncio.sleep(0.001)
                await drawn()

            start = time.perf_counter()
            await main.open_session(record.id)
            view = main.view(record.id)
            await settled(view)
            opened = time.perf_counter() - start
            await pilot.pause(0.5)
            collect_fully()
            rss_open = rss_kb()

            def first_shown() -> bool:
                return any(isinstance(e, UserMessageView) and e.text.startswith("Question 1:")
                           and e.region.overlaps(view.region) for e in view.entries)

            main.composer.focus()
            start = time.perf_counter()
            await pilot.press("ctrl+home")
            await poll(first_shown)
            await drawn()
            to_top = time.perf_counter() - start

            steps: list[float] = []
            peak_items = 0
            rss_after: list[int] = []
            for pass_ in range(2):
                if pass_:
                    await pilot.press("ctrl+home")
                    await poll(first_shown)
                    await settled(view)
                while not (view.following and not view.has_newer and view.scroll_y >= view.max_scroll_y):
                    step = time.perf_counter()
                    view.scroll_page_down(animate=False)
                    await asyncio.sleep(0)
                    await settled(view)
                    steps.append(time.perf_counter() - step)
                    peak_items = max(peak_items, len(view.held) + len(view._below))
                    if len(steps) > 100_000:
                        raise RuntimeError("paging down never reached the end")
                await pilot.pause(0.5)
                collect_fully()
                rss_after.append(rss_kb())

            await pilot.press("ctrl+home")
            await poll(first_shown)
            await settled(view)
            start = time.perf_counter()
            await pilot.press("ctrl+end")
            await poll(lambda: view.following and not view.has_newer
                       and "Step" in getattr(view.entries[-1], "text", ""))
            await drawn()
            to_end = time.perf_counter() - start
    finally:
        await runtime.close()
    return {"opened": opened, "to_top": to_top, "to_end": to_end, "rss_open": rss_open, "rss_after": rss_after,
            "steps": steps, "peak_items": peak_items}


def run_one_case(args: argparse.Namespace) -> None:
    if args.case == "load":
        emit(asyncio.run(case_load(busy=args.busy, keys=args.keys, subagents=args.subagents,
                                   budget=args.key_budget)))
    elif args.case == "jump":
        emit(asyncio.run(case_jump(size=json.loads(args.sizes)[-1])))
    elif args.case == "open":
        emit(asyncio.run(case_open(sizes=json.loads(args.sizes), rounds=args.rounds,
                                   scroll_steps=args.scroll_steps or 0)))
    else:
        raise SystemExit(f"unknown case {args.case!r}")


# -- the driver ------------------------------------------------------------------------------------

ECHO_PROBE = "qzxjv"
"""Typed the moment the composer (or the bare app's Input) shows; its echo is the "accepts keys" time."""
SESSION_READY = "nothing in the inbox"
"""Drawn only by yeetui's main screen (its inbox panel): it replaces the starting screen once the runtime is
open, and opens its session at once (a new session: ~10 ms later, usually before the first paint)."""


def first_frame(rounds: int, env: dict[str, str], home: Path, *, warm_up: bool = True) -> None:
    from bench.pty_timing import time_to_markers
    from bench.tui_probe import INPUT_MARKER, MARKDOWN_MARKER, TITLE_MARKER

    project = home / "project"
    project.mkdir(exist_ok=True)
    # Bytecode is cached, as for any installed package: a private cache dir, written in the warm-up round
    # (a sandbox's PYTHONDONTWRITEBYTECODE would otherwise make every start compile yeetui from source).
    env = {**{k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT),
           "PYTHONPYCACHEPREFIX": str(home / "pycache")}
    probe = [sys.executable, str(ROOT / "bench" / "tui_probe.py")]
    yeetui = [sys.executable, "-m", "yeetui"]
    probe_first, probe_ready, probe_echo, ours_first, ours_ready, ours_echo, ours_session = [], [], [], [], [], [], []
    for i in range(0 if warm_up else 1, rounds + 1):  # round 0 warms the file cache and is dropped
        seen = time_to_markers(probe, markers=[TITLE_MARKER, MARKDOWN_MARKER, INPUT_MARKER], env=env,
                               cwd=project, size=SIZE, type_after={INPUT_MARKER: ECHO_PROBE})
        ours = time_to_markers(yeetui, markers=["Message yeetui", SESSION_READY], env=env, cwd=project,
                               size=SIZE, type_after={"Message yeetui": ECHO_PROBE})
        if i:
            probe_first.append(seen["first text"])
            probe_ready.append(max(seen[m] for m in (TITLE_MARKER, MARKDOWN_MARKER, INPUT_MARKER)))
            probe_echo.append(seen[ECHO_PROBE])
            ours_first.append(ours["first text"])
            ours_ready.append(ours["Message yeetui"])
            ours_echo.append(ours[ECHO_PROBE])
            ours_session.append(ours[SESSION_READY])
    print(f"time to first frame in a {SIZE[0]}×{SIZE[1]} pty ({rounds} alternating rounds, medians):", flush=True)
    show("  first visible text: yeetui vs bare Textual app (Header+Markdown+Input)", median(ours_first),
         median(probe_first), goal=1.5)
    show("  usable screen: yeetui composer shown vs bare app fully drawn", median(ours_ready),
         median(probe_ready), goal=1.5)
    show("  composer accepts keys: text typed at the placeholder echoed, yeetui vs bare app's Input",
         median(ours_echo), median(probe_echo), goal=1.5)
    show("  session ready: yeetui main screen up (its inbox drawn) vs bare app fully drawn",
         median(ours_session), median(probe_ready))
    show("launch to an accepting prompt (the headline; text typed at the prompt echoed), yeetui vs bare Textual app",
         median(ours_echo), median(probe_echo), goal=1.3)


def report_load(idle: list[dict], busy: list[dict], subagents: int) -> None:
    def pooled(runs: list[dict], key: str) -> list[float]:
        return [v for r in runs for v in r[key]]

    idle_echo, busy_echo = pooled(idle, "echo"), pooled(busy, "echo")
    print(f"responsiveness: primary streaming a long answer + {subagents} subagents streaming, vs idle "
          f"({len(busy_echo)} vs {len(idle_echo)} keys):", flush=True)
    show("  key echo p50", percentile(busy_echo, 50), percentile(idle_echo, 50))
    p99 = percentile(busy_echo, 99)
    show("  key echo p99", p99, percentile(idle_echo, 99),
         goal_text=f"goal p99 < 50 ms under load: {'met' if p99 < 0.050 else 'NOT met'}")
    show("  key echo max", max(busy_echo), max(idle_echo))
    show("  largest event-loop stall", max(r["lag_max"] for r in busy), max(r["lag_max"] for r in idle))
    show("  p99 event-loop stall", median([r["lag_p99"] for r in busy]), median([r["lag_p99"] for r in idle]))
    for run in busy:
        print(f"  (busy run: starting the load took {run['setup']:.1f} s; "
              f"subagents live at the first key {run['live_subagents_at_start']}, "
              f"at the last {run['live_subagents_at_end']}; primary still streaming at the last key: "
              f"{'yes' if run['primary_streaming_at_end'] else 'no'})", flush=True)


def report_open(runs: dict, sizes: list[int]) -> None:
    small, middle, large = (str(s) for s in sizes)
    scroll = runs.pop("scroll", None)
    print(f"opening a session ({len(runs[large]['loaded'])} rounds, medians; mounted widgets: "
          + ", ".join(f"{s} msgs → {int(median(runs[str(s)]['widgets']))}" for s in sizes) + "):", flush=True)
    for what in ("loaded", "rendered"):
        show(f"  {large}-message vs {small}-message session, {what}", median(runs[large][what]),
             median(runs[small][what]), goal=2.0)
        show(f"  {large}-message vs {middle}-message session, {what}", median(runs[large][what]),
             median(runs[middle][what]))
    if scroll:
        steps, tenth = scroll["steps"], max(1, len(scroll["steps"]) // 10)
        print(f"scrolling back through the {large}-message session ({len(steps)} page-ups, each until settled and "
              f"redrawn; mounted widgets {scroll['widgets_after_open']} after opening, {scroll['widgets_after']} "
              f"after):", flush=True)
        show(f"  page-up, last {tenth} vs first {tenth} (median)", median(steps[-tenth:]), median(steps[:tenth]))
        show("  page-up, slowest vs median", max(steps), median(steps))
        print(f"  event-loop stalls while scrolling: max {scroll['lag_max'] * 1000:.0f} ms, "
              f"p99 {scroll['lag_p99'] * 1000:.0f} ms", flush=True)


def report_jump(run: dict, size: int) -> None:
    steps = run["steps"]
    print(f"long session both ways ({size} messages; {len(steps)} page-downs from the top to the end in two passes, "
          "median "
          f"{median(steps) * 1000:.0f} ms each, at most {run['peak_items']} messages held in memory):", flush=True)
    show("  ctrl+home: first message drawn, vs opening the session", run["to_top"], run["opened"],
         goal_text=f"goal < 1 s: {'met' if run['to_top'] < 1.0 else 'NOT met'}")
    show("  ctrl+end from the top: end drawn, vs opening the session", run["to_end"], run["opened"])
    for n, rss in enumerate(run["rss_after"], 1):
        ratio = rss / run["rss_open"]
        print(f"  RSS after paging through it all, pass {n}: {rss / 1024:.0f} MB vs {run['rss_open'] / 1024:.0f} MB "
              f"once open → ratio {ratio:.2f} (goal ≤ 1.20: {'met' if ratio <= 1.2 else 'NOT met'})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configuration (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="first-frame and open-session rounds")
    parser.add_argument("--keys", type=int, default=None, help="key presses per responsiveness run (default 100)")
    parser.add_argument("--subagents", type=int, default=None, help="background subagents (default 20)")
    parser.add_argument("--load-rounds", type=int, default=None, help="idle/busy run pairs (default 1)")
    parser.add_argument("--key-budget", type=float, default=None,
                        help="seconds of key presses per responsiveness run at most (default 120)")
    parser.add_argument("--only", choices=("frame", "load", "open", "jump"), action="append",
                        help="run only these cases (repeatable; default: all)")
    parser.add_argument("--scroll-steps", type=int, default=None,
                        help="page-ups scrolling back through the longest session (default 150; 0: skip)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", help="open-session sizes, a JSON list of three (default [10, 100, 10000])")
    args = parser.parse_args()
    if args.case:
        run_one_case(args)
        return
    rounds = args.rounds or (1 if args.quick else 7)
    keys = args.keys or (10 if args.quick else 100)
    subagents = args.subagents if args.subagents is not None else (2 if args.quick else 20)
    load_rounds = args.load_rounds or 1
    budget = args.key_budget or (40.0 if args.quick else 120.0)
    sizes = json.loads(args.sizes) if args.sizes else [5, 20, 60] if args.quick else [10, 100, 10_000]
    only = set(args.only or ("frame", "load", "open", "jump"))
    scroll_steps = args.scroll_steps if args.scroll_steps is not None else (6 if args.quick else 150)
    primary_chars, sub_chars = (2_500, 1_200) if args.quick else (24_000, 8_000)
    me = str(Path(__file__).resolve())
    if args.quick:
        fork_cases(["anthropic", "yeetui.runtime", "yeetui.tui.app"])

    with tempfile.TemporaryDirectory() as tmp, fake_llm(script(primary_chars=primary_chars,
                                                               sub_chars=sub_chars)) as url:
        def case(*extra: str) -> dict:
            home = Path(tempfile.mkdtemp(dir=tmp))
            return run_case([me, *extra], env=isolated_env(url, home), cwd=home)

        if "frame" in only:
            first_frame(rounds, isolated_env(url, Path(tmp)), Path(tmp), warm_up=not args.quick)
        if "load" in only:
            idle, busy = [], []
            load = ["--case", "load", "--keys", str(keys), "--subagents", str(subagents),
                    "--key-budget", str(budget)]
            for _ in range(load_rounds):
                idle.append(case(*load))
                busy.append(case(*load, "--busy"))
            report_load(idle, busy, subagents)
        if "jump" in only:
            report_jump(case("--case", "jump", "--sizes", json.dumps(sizes)), sizes[-1])
        if "open" in only:
            report_open(case("--case", "open", "--sizes", json.dumps(sizes), "--rounds", str(rounds),
                             "--scroll-steps", str(scroll_steps)), sizes)


if __name__ == "__main__":
    main()
