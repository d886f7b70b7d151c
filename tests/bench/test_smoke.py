"""The spawn and TUI benchmarks run end to end in their tiny `--quick` configuration.

Only that they work is checked — exit status and the figure lines they print — never how fast anything was:
the machine running the tests is too noisy for timing assertions. In that configuration the benchmarks fork
their measured cases from the driver (`bench.measure.fork_cases`) instead of starting each in a fresh
interpreter: the cases' code is the same, and the suite does not pay for the imports again for every case.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURE = re.compile(r"^\s*(?P<name>.+?): (median )?(?P<subject>\d+(\.\d+)?) (?P<unit>\S+) vs baseline "
                    r"(?P<baseline>\d+(\.\d+)?) (?P=unit) → ratio (?P<ratio>\d+\.\d\d|inf)")


def _run(script: str) -> dict[str, str]:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    figures = {}
    for line in proc.stdout.splitlines():
        if match := FIGURE.match(line):
            figures[match["name"]] = line
    assert figures, f"{script} printed no figure lines:\n{proc.stdout}"
    return figures


def _has(figures: dict[str, str], *fragments: str) -> None:
    for fragment in fragments:
        assert any(fragment in name for name in figures), f"no figure about {fragment!r} in {list(figures)}"


@pytest.mark.timeout(600)
def test_spawn_benchmark_runs() -> None:
    figures = _run("bench_spawn.py")
    _has(figures, "child's first request", "wall, max_concurrent=", "wall, default max_concurrent=",
         "peak RSS", "RSS per subagent", "event-loop stall")


@pytest.mark.timeout(600)
def test_tui_benchmark_runs() -> None:
    figures = _run("bench_tui.py")
    _has(figures, "first visible text", "usable screen", "launch to an accepting prompt", "key echo p50",
         "key echo p99", "largest event-loop stall",
         "-message session, loaded", "-message session, rendered")
    assert "goal p99 < 50 ms" in figures[next(n for n in figures if "key echo p99" in n)]


@pytest.mark.timeout(300)
def test_headless_benchmark_runs() -> None:
    figures = _run("bench_headless.py")
    _has(figures, "yeetui run vs direct anthropic SDK call", "yeetui --version cold start")


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_panes_benchmark_runs() -> None:
    figures = _run("bench_panes.py")
    _has(figures, "tmux pane vs in-process", "RSS per idle pane worker")


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_embed_benchmark_runs() -> None:
    figures = _run("bench_embed.py")
    _has(figures, "key echo p50", "key echo p99", "event-loop stall p99")


@pytest.mark.timeout(300)
def test_mcp_benchmark_runs() -> None:
    figures = _run("bench_mcp.py")
    _has(figures, "lazy (index + mcp_load) vs eager", "mcp_load + first call", "cold start to its first answer")


@pytest.mark.timeout(600)
def test_fleet_benchmark_runs() -> None:
    _has(_run("bench_fleet.py"), "key → highlight moved p99", "event-loop stall max", "one refresh")
