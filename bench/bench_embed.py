"""Key echo in the composer while an embedded pane streams (issue 12).

The TUI (`YeetuiApp` under Pilot, as bench_tui's load case) shows a tmux window of a private server inside
the main screen (`MainScreen.embed`), with a program in it writing a numbered line every 10 ms — an agent's
pane streaming. Keys go to the composer, as the driver sends them; each key's echo time is measured. The
baseline is the same app, same keys, with no pane. Event-loop stalls come from a 2 ms timer task.

Usage: python bench/bench_embed.py [--quick] [--keys N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fake_llm, isolated_env
from bench.measure import LagMonitor, emit, fork_cases, percentile, run_case, show

SIZE = (120, 40)
PRODUCER = ("import itertools, sys, time\nfor i in itertools.count():\n"
            "    print(f'line {i}: the parser walks the token stream once and keeps a stack', flush=True)\n"
            "    time.sleep(0.01)\n")


async def case_echo(*, embedded: bool, keys: int) -> dict:
    from textual import events
    from textual.widgets import TextArea

    from yeetui.application.surface import Surface
    from yeetui.runtime import Runtime
    from yeetui.subagents.panes import Pane
    from yeetui.tui.app import YeetuiApp
    from yeetui.tui.screens.main import MainScreen
    from yeetui.tui.widgets.composer import Composer
    from yeetui.tui.widgets.embedded_pane import EmbeddedPane

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    server = f"yeetui-bench-{int(time.time() * 1000) % 10**8}"
    _tmux(server, "new-session", "-d", "-s", "yeetui", "-n", "stream", "-x", "118", "-y", "14", sys.executable, "-c",
          PRODUCER)
    runtime = await Runtime.open(cwd=project)
    echoed = asyncio.Event()

    def hook(message: object) -> None:
        if isinstance(message, TextArea.Changed) and message.text_area.id == "composer-input":
            echoed.set()

    app = YeetuiApp(cwd=project, surface=Surface(runtime), tune_gc=True)
    try:
        async with app.run_test(size=SIZE, message_hook=hook):
            main = cast(MainScreen, app.screen)  # what the loop below waits for
            for _ in range(400):
                if isinstance(app.screen, MainScreen) and cast(MainScreen, app.screen).current:
                    main = app.screen
                    break
                await asyncio.sleep(0.05)
            streamed = 0
            if embedded:
                await main.embed(Pane(server, "stream", "", 0), "stream")
                pane = main.query_one(EmbeddedPane)
                for _ in range(200):
                    if pane.bytes_seen > 0:
                        break
                    await asyncio.sleep(0.05)
                before = pane.bytes_seen
            composer = main.query_one(Composer)
            composer.focus()
            await asyncio.sleep(0.3)
            lag = LagMonitor(0.002).start()
            echoes: list[float] = []
            rng = random.Random(4)
            for i in range(keys):
                if i and i % 40 == 0:
                    composer.input.clear()
                    await asyncio.sleep(0.05)
                await asyncio.sleep(rng.uniform(0.02, 0.06))
                echoed.clear()
                char = "abcdefghijklmnopqrstuvwxyz"[i % 26]
                start = time.perf_counter()
                app._driver.send_message(events.Key(char, char))
                try:
                    await asyncio.wait_for(echoed.wait(), 10.0)
                finally:
                    echoes.append(time.perf_counter() - start)
            stalls = await lag.stop()
            if embedded:
                streamed = main.query_one(EmbeddedPane).bytes_seen - before
    finally:
        await runtime.close()
        _tmux(server, "kill-server")
    return {"echo": echoes, "lag_p99": stalls["p99"], "streamed": streamed}


def _tmux(server: str, *args: str) -> None:
    subprocess.run(["tmux", "-L", server, "-f", "/dev/null", *args], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keys", type=int, default=None)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    keys = args.keys or (20 if args.quick else 200)
    if args.case:
        emit(asyncio.run(case_echo(embedded=args.case == "embedded", keys=keys)))
        return
    if shutil.which("tmux") is None:
        raise SystemExit("bench_embed needs tmux")
    me = str(Path(__file__).resolve())
    if args.quick:
        fork_cases(["yeetui.runtime", "yeetui.tui.app", "yeetui.tui.widgets.embedded_pane"])
    with tempfile.TemporaryDirectory() as tmp, fake_llm([]) as url:
        def case(name: str) -> dict:
            home = Path(tempfile.mkdtemp(dir=tmp))
            return run_case([me, "--case", name, "--keys", str(keys)], env=isolated_env(url, home), cwd=home)

        idle, busy = case("plain"), case("embedded")
        print(f"key echo in the composer, {keys} keys, with an embedded pane streaming "
              f"({busy['streamed'] // 1024} KB shown meanwhile) vs without:", flush=True)
        show("  key echo p50", percentile(busy["echo"], 50), percentile(idle["echo"], 50))
        show("  key echo p99", percentile(busy["echo"], 99), percentile(idle["echo"], 99),
             goal_text="goal p99 < 50 ms")
        show("  event-loop stall p99", busy["lag_p99"], idle["lag_p99"])


if __name__ == "__main__":
    main()
