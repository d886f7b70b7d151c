"""Key echo as drawn, in the real binary (issue 14): how late does a typed character show on the terminal?

`python -m yeetui` runs in a 120×40 pseudo-terminal, as in a terminal emulator (Textual's Linux driver,
xterm-256color). Keys are written to the terminal at random intervals (20–80 ms apart) and a key counts as
echoed when its character is in what the program writes back: the time from writing the key to reading
its echo is the figure, everything included (the event loop, layout, rendering, the terminal write).

The characters typed appear nowhere else on screen: letters of three alphabets (Cyrillic, Greek, Cyrillic
capitals), one alphabet per batch of up to 24 keys, each letter once per batch; the composer is cleared with
backspaces between batches (not measured). So the first appearance of a letter's bytes after it was typed
is its echo, even though the composer redraws the letters typed before it; stale redraws of a cleared
batch use another alphabet.

Baseline, in the same run: a bare Textual app with an Input (bench/tui_probe.py), measured the same way.
Conditions, each a fresh yeetui in a fresh project and data dir, against the standalone fake LLM server:
  idle      the session open, nothing running;
  stream    the primary answers a long Markdown answer (headings, lists, code, tables) at ~100 tokens/s
            (~400 characters/s), typed through from its first line to its end;
  busy      the same, with 20 oracles started first the way a user starts them (`/oracle …` typed into
            the composer; 8 run at once, the rest queue), each streaming its own answer;
and, with `--long`, the same three with a 2,000-message session open (`--resume`).
Reported per condition: p50 / p99 / max echo, ratios to the bare app, the app's CPU share and RSS.

Usage: python bench/bench_typing.py [--quick] [--only idle|stream|busy] [--long] [--keys N] [--children N]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fake_llm, isolated_env
from bench.measure import median, percentile
from bench.terminal import TerminalProgram
from bench.tui_fixtures import long_markdown

ROOT = Path(__file__).resolve().parent.parent
SIZE = (120, 40)
PRIMARY_MARKER = "PRIMARY-LONG-ANSWER"
CHILD_MARKER = "BG-SUBTASK"
END_MARKER = "ENDOFTHEANSWER"
FIRST_LINE = "Step 1"
ALPHABETS = ["абвгдежзийклмнопрстуфхцчшщ", "αβγδεζηθικλμνξοπρστυφχψω", "АБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩ"]
BATCH = 24


def script(*, primary_chars: int, child_chars: int) -> list[dict]:
    """The primary ~400 characters/s in deltas of 8 (≈100 tokens/s); each child ~400 characters/s."""
    complete = [{"name": "complete", "arguments": {"output": "done"}}]
    return [
        {"text": long_markdown(primary_chars) + f"\n\n{END_MARKER}\n", "chunk_size": 8, "chunk_delay": 0.02,
         "repeat": True, "when_contains": PRIMARY_MARKER},
        {"text": long_markdown(child_chars), "chunk_size": 12, "chunk_delay": 0.03, "repeat": True,
         "tool_calls": complete, "when_contains": CHILD_MARKER},
    ]


def measure_keys(term: TerminalProgram, *, keys: int, until: Callable[[], bool] | None, budget: float,
                 seed: int) -> dict:
    """Type up to `keys` letters (or until `until()` holds, or `budget` seconds pass); each one's echo time."""
    rng = random.Random(seed)
    echoes: list[float] = []
    missed = 0
    cpu0, wall0 = term.cpu_seconds(), time.perf_counter()
    deadline = wall0 + budget
    batch = 0
    while len(echoes) < keys and time.perf_counter() < deadline and not (until and until()):
        letters = ALPHABETS[batch % len(ALPHABETS)][:BATCH]
        batch += 1
        typed = 0
        for letter in letters:
            if len(echoes) >= keys or time.perf_counter() > deadline or (until and until()):
                break
            term.settle(rng.uniform(0.02, 0.08))
            wanted = letter.encode()
            term.since = b""
            start = time.perf_counter()
            term.type(letter)
            typed += 1
            while wanted not in term.since:
                if time.perf_counter() - start > 10:
                    missed += 1
                    break
                term.pump(0.01)
            echoes.append(time.perf_counter() - start)
        term.type("\x7f" * typed)  # clear the composer (not measured)
        term.settle(0.3)
    wall = time.perf_counter() - wall0
    return {"echo": echoes, "missed": missed, "cpu": (term.cpu_seconds() - cpu0) / wall, "rss": term.rss_mb(),
            "seconds": wall}


def make_project(home: Path) -> Path:
    project = home / "project"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


def long_session(env: dict[str, str], project: Path, count: int) -> str:
    """A session of `count` messages made in the store before yeetui starts; its id."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from yeetui import paths\n"
        "from yeetui.runtime import Runtime\n"
        "from bench.tui_fixtures import fill_session\n"
        "async def main():\n"
        "    runtime = await Runtime.open(cwd=Path.cwd())\n"
        "    record = await runtime.store.create_session(profile='generic', title='long', cwd=str(Path.cwd()))\n"
        f"    fill_session(paths.database_path(runtime.env), record.id, {count})\n"
        "    await runtime.close()\n"
        "    print(record.id)\n"
        "asyncio.run(main())\n")
    done = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, cwd=project,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def run_yeetui(condition: str, *, url: str, tmp: Path, keys: int, children: int, messages: int,
               budget: float, seed: int) -> dict:
    home = Path(tempfile.mkdtemp(dir=tmp))
    env = {**isolated_env(url, home), "YEETUI_MODEL": "anthropic/claude-sonnet-4-5", "PYTHONPATH": str(ROOT),
           "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    project = make_project(home)
    argv = [sys.executable, "-m", "yeetui"]
    if messages:
        argv += ["--resume", long_session(env, project, messages)]
    term = TerminalProgram(argv, env=env, cwd=project, size=SIZE)
    try:
        term.wait(lambda: term.shows("Message yeetui") and term.shows("nothing in the inbox"), 60, "the main screen")
        term.settle(3.0)  # start-up work (the provider SDK warmed in a thread) is over
        until = None
        if condition in ("stream", "busy"):
            if condition == "busy":
                for i in range(children):
                    term.type(f"/oracle {CHILD_MARKER}-{i}: summarise the tokenizer\r")
                    term.settle(0.3)
                term.wait(lambda: term.shows(f"{CHILD_MARKER}-{children - 1}") or term.shows("queued"), 30,
                          "the children")
            term.type(f"{PRIMARY_MARKER}: explain the tokenizer in depth\r")
            term.wait(lambda: term.shows(FIRST_LINE), 60, "the primary's answer")
            term.recent = b""  # the end marker must come from now on

            def until() -> bool:
                return term.shows(END_MARKER)

        result = measure_keys(term, keys=keys, until=until, budget=budget, seed=seed)
        if until is not None:
            result["answer_ended"] = until()
        return result
    finally:
        term.close()


def run_bare(*, tmp: Path, keys: int, seed: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
    term = TerminalProgram([sys.executable, str(ROOT / "bench" / "tui_probe.py")], env=env, cwd=tmp, size=SIZE)
    try:
        term.wait(lambda: term.shows("PROBE-INPUT"), 60, "the bare app")
        term.settle(0.5)
        return measure_keys(term, keys=keys, until=None, budget=600, seed=seed)
    finally:
        term.close()


def report(name: str, result: dict, bare: dict, *, busy: bool) -> None:
    echo = result["echo"]
    p50, p99, top = median(echo), percentile(echo, 99), max(echo, default=0.0)
    b50, b99 = median(bare["echo"]), percentile(bare["echo"], 99)
    extra = ""
    if busy:
        met = p99 < 0.050 and top < 0.150
        extra = f"  [goal p99 < 50 ms, max < 150 ms: {'met' if met else 'NOT met'}]"
    ended = "" if "answer_ended" not in result else ("; answer streamed to its end" if result["answer_ended"]
                                                      else "; answer still streaming at the last key")
    print(f"  {name:<26} {len(echo):>4} keys  p50 {p50 * 1000:6.1f}  p99 {p99 * 1000:6.1f}  max {top * 1000:6.1f} ms"
          f"  ratio p50 {p50 / b50:4.1f}× p99 {p99 / b99:4.1f}×  cpu {result['cpu']:4.0%}  rss {result['rss']:.0f} MB"
          f"{'  MISSED ' + str(result['missed']) if result['missed'] else ''}{extra}{ended}", flush=True)
    if busy and len(echo) >= 30:
        third = len(echo) // 3
        parts = [echo[:third], echo[third:2 * third], echo[2 * third:]]
        print("  " + " " * 26 + "       by third of the answer: p99 " +
              " / ".join(f"{percentile(p, 99) * 1000:.0f}" for p in parts) + " ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small configuration (smoke test)")
    parser.add_argument("--only", choices=("idle", "stream", "busy"), action="append")
    parser.add_argument("--long", action="store_true", help="also with a 2,000-message session open")
    parser.add_argument("--keys", type=int, default=None, help="keys per idle condition (default 200)")
    parser.add_argument("--children", type=int, default=None, help="oracles in the busy condition (default 20)")
    args = parser.parse_args()
    keys = args.keys or (40 if args.quick else 200)
    children = args.children if args.children is not None else (3 if args.quick else 20)
    primary_chars, child_chars = (4_000, 2_000) if args.quick else (40_000, 8_000)
    conditions = args.only or ["idle", "stream", "busy"]
    sizes = [0, 200 if args.quick else 2_000] if args.long else [0]
    budget = 30 if args.quick else 150

    with tempfile.TemporaryDirectory() as tmp, fake_llm(script(primary_chars=primary_chars,
                                                               child_chars=child_chars)) as url:
        bare = run_bare(tmp=Path(tmp), keys=keys, seed=0)
        b = bare["echo"]
        print(f"key echo as drawn, {SIZE[0]}×{SIZE[1]} pty, keys 20–80 ms apart (ms):", flush=True)
        print(f"  {'bare Textual app (Input)':<26} {len(b):>4} keys  p50 {median(b) * 1000:6.1f}  "
              f"p99 {percentile(b, 99) * 1000:6.1f}  max {max(b) * 1000:6.1f} ms  cpu {bare['cpu']:4.0%}", flush=True)
        for messages in sizes:
            for n, condition in enumerate(conditions):
                streaming = condition != "idle"
                result = run_yeetui(condition, url=url, tmp=Path(tmp), keys=100_000 if streaming else keys,
                                    children=children, messages=messages, budget=budget, seed=n + 1)
                label = {"idle": "yeetui idle", "stream": "yeetui, primary streaming",
                         "busy": f"yeetui, primary + {children} kids"}[condition]
                if messages:
                    label += f" ({messages} msgs)"
                report(label, result, bare, busy=streaming)
        again = run_bare(tmp=Path(tmp), keys=keys, seed=9)  # the floor again, after: was the machine steady?
        print(f"  {'bare Textual app, again':<26} {len(again['echo']):>4} keys  p50 "
              f"{median(again['echo']) * 1000:6.1f}  p99 {percentile(again['echo'], 99) * 1000:6.1f}  max "
              f"{max(again['echo']) * 1000:6.1f} ms", flush=True)


if __name__ == "__main__":
    main()
