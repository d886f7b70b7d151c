"""Subagents in tmux panes (issue 12), against the standalone fake LLM server and a private tmux server.

(a) Start-up: from `AgentSpawner.spawn(...)` to the child's first request at the fake server, for a child in
    a tmux pane (a `yeetui agent run` worker in yeetui's tmux server) vs an in-process child — alternating,
    medians over N rounds. Arrival times are the server's CLOCK_MONOTONIC, shared by every process.
(b) Memory: the RSS of each idle pane worker (its run waiting on a slow model stream) vs a bare interpreter
    that imported the Anthropic SDK and waits — the least any separate agent process costs.

Usage: python bench/bench_panes.py [--quick] [--rounds N] [--idle N]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fake_llm, isolated_env
from bench.measure import emit, fake_requests, fork_cases, median, run_case, show

COMPLETE = [{"name": "complete", "arguments": {"output": "done"}}]


def script() -> list[dict]:
    return [
        {"text": "ok", "tool_calls": COMPLETE, "when_contains": "PROBE-", "repeat": True},
        {"text": "idle " * 2000, "chunk_size": 5, "chunk_delay": 0.5, "tool_calls": COMPLETE,
         "when_contains": "IDLE-", "repeat": True},
    ]


async def case_startup(url: str, rounds: int) -> dict:
    from yeetui.runtime import Runtime
    from yeetui.subagents.spawner import SpawnRequest
    from yeetui.system.tmux import TmuxServer

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project)
    starts: dict[str, float] = {}
    try:
        parent = await runtime.store.create_session(profile="generic")
        for i in range(rounds + 1):  # round 0 warms both paths
            for mode in ("in_process", "tmux"):
                marker = f"PROBE-{mode}-{i}:"
                starts[marker] = time.monotonic()
                handle = await runtime.spawner.spawn(SpawnRequest("oracle", f"{marker} say ok", mode=mode,
                                                                  parent_session_id=parent.id, requested_by="user"))
                await _until_final(runtime, handle.run_id)
        server = runtime.spawner.panes.server if runtime.spawner.panes else None
    finally:
        await runtime.close()
    if isinstance(server, TmuxServer):
        await server.kill_server()
    arrivals: dict[str, float] = {}
    for request in fake_requests(url):
        for marker in starts:
            if marker in request["text"] and marker not in arrivals:
                arrivals[marker] = request["started"]
    late = {m: arrivals[m] - starts[m] for m in starts if m in arrivals and not m.endswith("-0:")}
    return {"tmux": [v for m, v in late.items() if "-tmux-" in m],
            "in_process": [v for m, v in late.items() if "-in_process-" in m]}


async def case_idle(idle: int) -> dict:
    from yeetui.events import RunStatus
    from yeetui.runtime import Runtime
    from yeetui.subagents.spawner import SpawnRequest

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    runtime = await Runtime.open(cwd=project)
    sizes: list[float] = []
    try:
        parent = await runtime.store.create_session(profile="generic")
        handles = [await runtime.spawner.spawn(SpawnRequest("oracle", f"IDLE-{i}: think slowly", mode="tmux",
                                                            parent_session_id=parent.id, requested_by="user"))
                   for i in range(idle)]
        for handle in handles:  # idle: streaming a reply that trickles in, one token every half second
            while True:
                run = await runtime.store.get_run(handle.run_id)
                if run is not None and run.status == RunStatus.RUNNING and run.pid:
                    break
                await asyncio.sleep(0.1)
        await asyncio.sleep(3.0)  # past start-up: imports done, first tokens in
        for handle in handles:
            run = await runtime.store.get_run(handle.run_id)
            sizes.append(_rss_kb(run.pid) if run and run.pid else 0.0)
        for handle in handles:
            await runtime.spawner.cancel(handle.run_id, graceful=False)
    finally:
        server = runtime.spawner.panes.server if runtime.spawner.panes else None
        await runtime.close()
        if server is not None:
            await server.kill_server()
    return {"rss": sizes, "bare": _bare_sdk_rss()}


async def _until_final(runtime, run_id: str) -> None:
    while True:
        run = await runtime.store.get_run(run_id)
        if run is not None and run.status.is_final:
            return
        await asyncio.sleep(0.02)


def _rss_kb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def _bare_sdk_rss() -> float:
    proc = subprocess.Popen([sys.executable, "-c", "import anthropic, time; print('ready', flush=True); "
                             "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        return _rss_kb(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configuration (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="start-up rounds (default 8)")
    parser.add_argument("--idle", type=int, default=None, help="idle pane workers measured (default 4)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case == "startup":
        emit(asyncio.run(case_startup(args.url, args.rounds)))
        return
    if args.case == "idle":
        emit(asyncio.run(case_idle(args.idle)))
        return
    if shutil.which("tmux") is None:
        raise SystemExit("bench_panes needs tmux")
    rounds = args.rounds or (1 if args.quick else 8)
    idle = args.idle or (1 if args.quick else 4)
    me = str(Path(__file__).resolve())
    if args.quick:
        fork_cases(["anthropic", "yeetui.runtime", "yeetui.subagents.spawner", "yeetui.system.tmux"])
    with tempfile.TemporaryDirectory() as tmp, fake_llm(script()) as url:
        def case(name: str, *extra: str) -> dict:
            home = Path(tempfile.mkdtemp(dir=tmp))
            return run_case([me, "--case", name, "--url", url, *extra], env=isolated_env(url, home), cwd=home)

        print(f"pane start-up, {rounds} alternating rounds after one warm-up round:", flush=True)
        startup = case("startup", "--rounds", str(rounds))
        show("  spawn() → first request, tmux pane vs in-process (median)", median(startup["tmux"]),
             median(startup["in_process"]))
        print(f"memory of {idle} idle pane worker(s):", flush=True)
        memory = case("idle", "--idle", str(idle))
        show("  RSS per idle pane worker vs a bare interpreter with the SDK imported", median(memory["rss"]) / 1024,
             memory["bare"] / 1024, unit="MB")


if __name__ == "__main__":
    main()
