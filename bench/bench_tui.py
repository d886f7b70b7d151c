"""TUI costs (issue 4). Every figure is printed next to a baseline measured in the same run.

(a) Time to first frame: `python -m yeetui` vs a bare Textual app with a Header, a Markdown and an Input
    (bench/tui_probe.py), each started in a 120×40 pseudo-terminal and timed until its first visible text,
    and until its usable screen (yeetui: the composer; the probe: all three widgets) has been written.
(b) Responsiveness under load: the real YeetuiApp headless (`run_test(size=(120, 40))`) while the primary
    streams a long Markdown answer and 20 subagents stream in the background, vs the same app idle.
    Event-loop stalls come from a 2 ms timer task (oversleep max / p99); key echo is the time from a key
    reaching the app (sent the way the terminal driver sends it, as `pilot.press` does) to the character
    being in the composer's TextArea (its `TextArea.Changed` being dispatched).
(c) Opening a 10,000-message session vs a 10-message one (and a 100-message one, which mounts as many
    messages as the long one's first page): from `MainScreen.open_session(id)` to the view mounted, and to
    the first screen refresh after it (rendered).
Each measurement runs in a fresh interpreter against the standalone fake LLM server.

Usage: python bench/bench_tui.py [--quick] [--rounds N] [--keys N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fake_llm, isolated_env
from bench.measure import LagMonitor, emit, median, percentile, run_case, show

ROOT = Path(__file__).resolve().parent.parent
SIZE = (120, 40)
PRIMARY_MARKER = "PRIMARY-LONG-ANSWER"
SUBTASK_MARKER = "BG-SUBTASK"


def long_markdown(target: int) -> str:
    """A long, mixed answer: headings, paragraphs, lists, code and a table, as models write them."""
    parts, n = [], 0
    while sum(map(len, parts)) < target:
        n += 1
        parts.append(f"## Step {n}: the tokenizer\n\nThe tokenizer reads the input **once** and keeps a small "
                     f"stack of open scopes; each scope records where it started so that errors can point at "
                     f"the opening bracket. See `parse_scope()` and the notes below.\n\n"
                     f"- keep `offset` monotonic\n- never re-read a token\n- report the *first* error\n\n"
                     f"```python\ndef parse_scope(tokens, start={n}):\n    stack = [start]\n"
                     f"    for token in tokens:\n        if token.opens:\n            stack.append(token.offset)\n"
                     f"    return stack\n```\n\n| case | before | after |\n|---|---|---|\n"
                     f"| {n} | 12 ms | 3 ms |\n\n")
    return "".join(parts)[:target]


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

    from yeetui.runtime import Runtime
    from yeetui.spawner import AgentSpawner
    from yeetui.tui.app import YeetuiApp
    from yeetui.tui.widgets.composer import Composer

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project)
    runtime.spawner = AgentSpawner(runtime, max_concurrent=max(subagents, 1), max_children=max(subagents, 1))
    echoed = asyncio.Event()

    def hook(message: object) -> None:
        if isinstance(message, TextArea.Changed) and message.text_area.id == "composer-input":
            echoed.set()

    app = YeetuiApp(cwd=project, runtime=runtime)
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

def _conversation(count: int) -> list[tuple[str, str]]:
    """`count` messages of a realistic shape: question, reply with a tool call, tool result, answer."""
    from yeetui.messages import Message, TextPart, ToolCallPart, ToolResultPart

    code = "\n".join(f"    line_{i} = parse(tokens[{i}])  # keep offsets monotonic" for i in range(20))
    messages: list[Message] = []
    turn = 0
    while len(messages) < count:
        turn += 1
        call = f"toolu_{turn:06d}"
        messages += [
            Message.user(f"Question {turn}: why does the tokenizer lose the offset after a nested scope?"),
            Message(role="assistant", parts=(TextPart(text=f"Let me read the parser (turn {turn})."),
                                             ToolCallPart(id=call, name="read_file",
                                                          arguments={"path": "src/parser.py"}))),
            Message(role="tool", parts=(ToolResultPart(call_id=call, name="read_file",
                                                       content=f"def parse():\n{code}\n"),)),
            Message.assistant(long_markdown(700)),
        ]
    return [(m.role, m.model_dump_json()) for m in messages[:count]]


def _fill(db: Path, session_id: str, count: int) -> None:
    """Bulk-insert `count` messages (direct SQL: a benchmark fixture, 10,000 inserts through the API
    would only measure the API)."""
    from yeetui.store.records import utcnow

    now = utcnow()
    rows = [(session_id, seq, role, body, now, now) for seq, (role, body) in enumerate(_conversation(count), 1)]
    with sqlite3.connect(db, timeout=30) as conn:
        conn.executemany("INSERT INTO messages (session_id, run_id, seq, role, body, partial, created_at, "
                         "updated_at) VALUES (?, NULL, ?, ?, ?, 0, ?, ?)", rows)


async def case_open(*, sizes: list[int], rounds: int) -> dict:
    from yeetui import paths
    from yeetui.runtime import Runtime
    from yeetui.tui.app import YeetuiApp

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project)
    sessions = {}
    for size in sizes:
        record = await runtime.store.create_session(profile="generic", title=f"{size} messages",
                                                    cwd=str(project))
        _fill(paths.database_path(runtime.env), record.id, size)
        sessions[size] = record.id
    results: dict[str, dict[str, list[float]]] = {str(s): {"loaded": [], "rendered": [], "widgets": []}
                                                  for s in sizes}
    app = YeetuiApp(cwd=project, runtime=runtime)
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
    finally:
        await runtime.close()
    return results


def run_one_case(args: argparse.Namespace) -> None:
    if args.case == "load":
        emit(asyncio.run(case_load(busy=args.busy, keys=args.keys, subagents=args.subagents,
                                   budget=args.key_budget)))
    elif args.case == "open":
        emit(asyncio.run(case_open(sizes=json.loads(args.sizes), rounds=args.rounds)))
    else:
        raise SystemExit(f"unknown case {args.case!r}")


# -- the driver ------------------------------------------------------------------------------------

def first_frame(rounds: int, env: dict[str, str], home: Path) -> None:
    from bench.pty_timing import time_to_markers
    from bench.tui_probe import INPUT_MARKER, MARKDOWN_MARKER, TITLE_MARKER

    project = home / "project"
    project.mkdir(exist_ok=True)
    env = {**env, "PYTHONPATH": str(ROOT)}
    probe = [sys.executable, str(ROOT / "bench" / "tui_probe.py")]
    yeetui = [sys.executable, "-m", "yeetui"]
    probe_first, probe_ready, ours_first, ours_ready = [], [], [], []
    for i in range(rounds + 1):  # round 0 warms the file cache and is dropped
        seen = time_to_markers(probe, markers=[TITLE_MARKER, MARKDOWN_MARKER, INPUT_MARKER], env=env,
                               cwd=project, size=SIZE)
        ours = time_to_markers(yeetui, markers=["Message yeetui"], env=env, cwd=project, size=SIZE)
        if i:
            probe_first.append(seen["first text"])
            probe_ready.append(max(seen[m] for m in (TITLE_MARKER, MARKDOWN_MARKER, INPUT_MARKER)))
            ours_first.append(ours["first text"])
            ours_ready.append(ours["Message yeetui"])
    print(f"time to first frame in a {SIZE[0]}×{SIZE[1]} pty ({rounds} alternating rounds, medians):", flush=True)
    show("  first visible text: yeetui vs bare Textual app (Header+Markdown+Input)", median(ours_first),
         median(probe_first), goal=1.5)
    show("  usable screen: yeetui composer shown vs bare app fully drawn", median(ours_ready),
         median(probe_ready), goal=1.5)


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
    print(f"opening a session ({len(runs[large]['loaded'])} rounds, medians; mounted widgets: "
          + ", ".join(f"{s} msgs → {int(median(runs[str(s)]['widgets']))}" for s in sizes) + "):", flush=True)
    for what in ("loaded", "rendered"):
        show(f"  {large}-message vs {small}-message session, {what}", median(runs[large][what]),
             median(runs[small][what]), goal=2.0)
        show(f"  {large}-message vs {middle}-message session, {what}", median(runs[large][what]),
             median(runs[middle][what]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configuration (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="first-frame and open-session rounds")
    parser.add_argument("--keys", type=int, default=None, help="key presses per responsiveness run (default 100)")
    parser.add_argument("--subagents", type=int, default=None, help="background subagents (default 20)")
    parser.add_argument("--load-rounds", type=int, default=None, help="idle/busy run pairs (default 1)")
    parser.add_argument("--key-budget", type=float, default=None,
                        help="seconds of key presses per responsiveness run at most (default 120)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        run_one_case(args)
        return
    rounds = args.rounds or (2 if args.quick else 7)
    keys = args.keys or (15 if args.quick else 100)
    subagents = args.subagents if args.subagents is not None else (3 if args.quick else 20)
    load_rounds = args.load_rounds or 1
    budget = args.key_budget or (40.0 if args.quick else 120.0)
    sizes = [10, 100, 1000] if args.quick else [10, 100, 10_000]
    primary_chars, sub_chars = (4_000, 2_000) if args.quick else (24_000, 8_000)
    me = str(Path(__file__).resolve())

    with tempfile.TemporaryDirectory() as tmp, fake_llm(script(primary_chars=primary_chars,
                                                               sub_chars=sub_chars)) as url:
        def case(*extra: str) -> dict:
            home = Path(tempfile.mkdtemp(dir=tmp))
            return run_case([me, *extra], env=isolated_env(url, home), cwd=home)

        first_frame(rounds, isolated_env(url, Path(tmp)), Path(tmp))
        idle, busy = [], []
        load = ["--case", "load", "--keys", str(keys), "--subagents", str(subagents), "--key-budget", str(budget)]
        for _ in range(load_rounds):
            idle.append(case(*load))
            busy.append(case(*load, "--busy"))
        report_load(idle, busy, subagents)
        report_open(case("--case", "open", "--sizes", json.dumps(sizes), "--rounds", str(rounds)), sizes)


if __name__ == "__main__":
    main()
