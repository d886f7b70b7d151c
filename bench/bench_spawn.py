"""Subagent costs (issue 3), against the standalone fake LLM server.

(a) Spawn overhead: from `AgentSpawner.spawn(...)` (non-blocking, requested_by="user") to the child's first
    request arriving at the fake server, vs a direct `AsyncAnthropic().messages.create(stream=True)` call's
    request arriving — alternating, medians over N rounds. Arrival times are the server's `time.monotonic()`
    (CLOCK_MONOTONIC, shared by all processes on the machine), read back from `GET /_fake/requests`.
(b) Fan-out: N subagents (default 50) each streaming a ~2 KB scripted reply and calling `complete`, with
    `max_concurrent=N` and with the spawner's default of 8 — wall time, peak RSS and RSS per subagent —
    vs the same N streams made with the bare SDK. Each case runs in a fresh interpreter so memory peaks
    are its own (with --quick, a fork of the driver: quick figures only show that the benchmark works).

Usage: python bench/bench_spawn.py [--quick] [--rounds N] [--agents N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fake_llm, isolated_env
from bench.measure import LagMonitor, emit, fake_requests, fork_cases, median, peak_rss_kb, rss_kb, run_case, show

MODEL = "claude-sonnet-4-6"
PARAGRAPH = ("The parser walks the token stream once and keeps a small stack of open scopes; each scope "
             "records where it started so that errors can point at the opening bracket. ")
FANOUT_TEXT = (PARAGRAPH * 14)[:2048]
COMPLETE = [{"name": "complete", "arguments": {"output": "done"}}]


def script() -> list[dict]:
    stream = {"text": FANOUT_TEXT, "chunk_size": 16, "chunk_delay": 0.01, "repeat": True}
    return [
        {"text": "ok", "tool_calls": COMPLETE, "when_contains": "SPAWN-PROBE", "repeat": True},
        {"text": "ok", "when_contains": "DIRECT-PROBE", "repeat": True},
        {**stream, "tool_calls": COMPLETE, "when_contains": "FANOUT-TASK"},
        {**stream, "when_contains": "DIRECT-FANOUT"},
    ]


# -- cases (each runs in its own interpreter) ------------------------------------------------------

async def _open_runtime(**spawner_limits: int):
    from yeetui.runtime import Runtime

    project = Path.cwd() / "project"
    project.mkdir(exist_ok=True)
    return await Runtime.open(cwd=project, spawner_limits=spawner_limits)


async def _direct_stream(client, prompt: str) -> None:
    stream = await client.messages.create(model=MODEL, max_tokens=1024, stream=True,
                                          messages=[{"role": "user", "content": prompt}])
    async for _ in stream:
        pass


async def case_overhead(url: str, rounds: int) -> dict:
    """Alternate spawn → first request and direct create → request; both warmed up by one round."""
    import anthropic

    from yeetui.events import RunStatus
    from yeetui.subagents.spawner import SpawnRequest

    runtime = await _open_runtime()
    client = anthropic.AsyncAnthropic(max_retries=0)
    try:
        primary = await runtime.launcher.new_session(runtime.profiles.get("generic"))
        starts: dict[str, float] = {}
        calls: list[float] = []
        for i in range(rounds + 1):  # round 0 warms both paths (SDK import, connection pool, caches)
            marker = f"SPAWN-PROBE-{i}:"
            starts[marker] = time.monotonic()
            handle = await runtime.spawner.spawn(SpawnRequest(
                profile="generic", prompt=f"{marker} say ok", parent_session_id=primary.id, requested_by="user"))
            if i:
                calls.append(time.monotonic() - starts[marker])
            result = await runtime.spawner.wait(handle.run_id)
            if result is None or result.status != RunStatus.COMPLETED:
                raise RuntimeError(f"the probe subagent did not complete: {result}")
            marker = f"DIRECT-PROBE-{i}:"
            starts[marker] = time.monotonic()
            await _direct_stream(client, f"{marker} say ok")
    finally:
        await client.close()
        await runtime.close()
    arrivals: dict[str, float] = {}
    for request in fake_requests(url):
        for marker in starts:
            if marker in request["text"] and marker not in arrivals:
                arrivals[marker] = request["started"]
    missing = sorted(set(starts) - set(arrivals))
    if missing:
        raise RuntimeError(f"no request reached the fake server for {missing}")
    spawn = [arrivals[m] - starts[m] for m in starts if m.startswith("SPAWN") and not m.endswith("-0:")]
    direct = [arrivals[m] - starts[m] for m in starts if m.startswith("DIRECT") and not m.endswith("-0:")]
    return {"spawn": spawn, "direct": direct, "spawn_call": calls}


async def case_fanout(agents: int, max_concurrent: int) -> dict:
    from yeetui.events import RunStatus
    from yeetui.subagents.spawner import SpawnRequest

    runtime = await _open_runtime(max_concurrent=max_concurrent, max_children=agents)
    rss_open = rss_kb()
    import anthropic  # noqa: F401  # a one-time cost of the first model call, not a per-subagent one
    try:
        primary = await runtime.launcher.new_session(runtime.profiles.get("generic"))
        baseline = rss_kb()
        lag = LagMonitor().start()
        start = time.perf_counter()
        waits, calls = [], []
        for i in range(agents):
            called = time.perf_counter()
            handle = await runtime.spawner.spawn(SpawnRequest(
                profile="generic", prompt=f"FANOUT-TASK-{i}: summarise the parser", parent_session_id=primary.id,
                requested_by="user"))
            calls.append(time.perf_counter() - called)
            waits.append(asyncio.ensure_future(runtime.spawner.wait(handle.run_id)))  # before it can end
        spawned = time.perf_counter() - start
        results = await asyncio.gather(*waits)
        wall = time.perf_counter() - start
        stalls = await lag.stop()
        bad = [r for r in results if r is None or r.status != RunStatus.COMPLETED]
        if bad:
            raise RuntimeError(f"{len(bad)} of {agents} subagents did not complete, e.g. {bad[0]}")
        return {"wall": wall, "spawned": spawned, "spawn_call": median(calls), "rss_open": rss_open,
                "baseline": baseline, "peak": peak_rss_kb(), "lag_max": stalls["max"], "lag_p99": stalls["p99"]}
    finally:
        await runtime.close()


async def case_direct_fanout(agents: int) -> dict:
    import anthropic

    client = anthropic.AsyncAnthropic(max_retries=0)
    try:
        baseline = rss_kb()
        lag = LagMonitor().start()
        start = time.perf_counter()
        await asyncio.gather(*(_direct_stream(client, f"DIRECT-FANOUT-{i}: summarise the parser")
                               for i in range(agents)))
        wall = time.perf_counter() - start
        stalls = await lag.stop()
        return {"wall": wall, "baseline": baseline, "peak": peak_rss_kb(), "lag_max": stalls["max"],
                "lag_p99": stalls["p99"]}
    finally:
        await client.close()


def run_one_case(args: argparse.Namespace) -> None:
    if args.case == "overhead":
        emit(asyncio.run(case_overhead(args.url, args.rounds)))
    elif args.case == "fanout":
        emit(asyncio.run(case_fanout(args.agents, args.max_concurrent)))
    elif args.case == "direct-fanout":
        emit(asyncio.run(case_direct_fanout(args.agents)))
    else:
        raise SystemExit(f"unknown case {args.case!r}")


# -- the driver ------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configuration (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="spawn-overhead rounds (default 15)")
    parser.add_argument("--fanout-rounds", type=int, default=None, help="repeats of each fan-out case (default 3)")
    parser.add_argument("--agents", type=int, default=None, help="concurrent subagents (default 50)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--max-concurrent", type=int, default=8, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        run_one_case(args)
        return
    rounds = args.rounds or (2 if args.quick else 15)
    fanout_rounds = args.fanout_rounds or (1 if args.quick else 3)
    agents = args.agents or (4 if args.quick else 50)
    default_slots = 8 if not args.quick else 2  # the spawner's default is 8; --quick scales it with the agents
    me = str(Path(__file__).resolve())
    if args.quick:
        fork_cases(["anthropic", "yeetui.runtime", "yeetui.subagents.spawner"])

    with tempfile.TemporaryDirectory() as tmp, fake_llm(script()) as url:
        def case(name: str, *extra: str) -> dict:
            home = Path(tempfile.mkdtemp(dir=tmp))
            return run_case([me, "--case", name, "--url", url, *extra], env=isolated_env(url, home), cwd=home)

        print(f"spawn overhead, {rounds} alternating rounds after one warm-up round:", flush=True)
        overhead = case("overhead", "--rounds", str(rounds))
        show("  spawn() → child's first request at the server (median)", median(overhead["spawn"]),
             median(overhead["direct"]))
        show("  spawn() → child's first request (max)", max(overhead["spawn"]), max(overhead["direct"]))
        show("  the spawn() call alone (median) vs direct create → request arrival", median(overhead["spawn_call"]),
             median(overhead["direct"]))

        print(f"{agents} concurrent subagents, ~2 KB streamed each ({fanout_rounds} round(s), medians):", flush=True)
        wide, narrow, direct = [], [], []
        for _ in range(fanout_rounds):
            direct.append(case("direct-fanout", "--agents", str(agents)))
            wide.append(case("fanout", "--agents", str(agents), "--max-concurrent", str(agents)))
            narrow.append(case("fanout", "--agents", str(agents), "--max-concurrent", str(default_slots)))
        _report_fanout(agents, default_slots, wide, narrow, direct, median(overhead["spawn_call"]))


def _report_fanout(agents: int, slots: int, wide: list[dict], narrow: list[dict], direct: list[dict],
                   idle_call: float) -> None:
    def med(runs: list[dict], key: str) -> float:
        return median([r[key] for r in runs])

    def per_agent_mb(runs: list[dict]) -> float:
        return median([(r["peak"] - r["baseline"]) / agents / 1024 for r in runs])

    show(f"  wall, max_concurrent={agents} vs {agents} bare SDK streams", med(wide, "wall"), med(direct, "wall"))
    show(f"  wall, default max_concurrent={slots} vs max_concurrent={agents}", med(narrow, "wall"),
         med(wide, "wall"), goal_text=f"{-(-agents // slots)} waves of {slots} would be ≈{-(-agents // slots)}×")
    show("  one spawn() call (median) while the others run vs when idle (a)", med(wide, "spawn_call"),
         idle_call)
    show(f"  time to make all {agents} spawn() calls vs {agents} bare SDK streams' wall",
         med(wide, "spawned"), med(direct, "wall"))
    show(f"  peak RSS, max_concurrent={agents} vs bare SDK", med(wide, "peak") / 1024, med(direct, "peak") / 1024,
         unit="MB")
    show(f"  peak RSS, max_concurrent={slots} vs bare SDK", med(narrow, "peak") / 1024, med(direct, "peak") / 1024,
         unit="MB")
    show("  RSS after Runtime.open (+SDK) vs bare SDK process", med(wide, "baseline") / 1024,
         med(direct, "baseline") / 1024, unit="MB")
    direct_per = median([(r["peak"] - r["baseline"]) / agents / 1024 for r in direct])
    show(f"  RSS per subagent, max_concurrent={agents} vs per bare SDK stream", per_agent_mb(wide), direct_per,
         unit="MB")
    show(f"  RSS per subagent, max_concurrent={slots} vs per bare SDK stream", per_agent_mb(narrow), direct_per,
         unit="MB")
    show(f"  largest event-loop stall, max_concurrent={agents} vs bare SDK", med(wide, "lag_max"),
         med(direct, "lag_max"))
    show(f"  p99 event-loop stall, max_concurrent={agents} vs bare SDK", med(wide, "lag_p99"),
         med(direct, "lag_p99"))


if __name__ == "__main__":
    main()
