"""Shared bits for benchmarks: the standalone fake LLM server and timing helpers.

Benchmarks print ratios against a baseline measured in the same run, never absolute pass/fail times.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def fake_llm(replies: list[dict]) -> Iterator[str]:
    """Run `python -m tests.fakellm` with `replies`; yield its base URL."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(replies, handle)
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakellm", "--script", handle.name], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        if not line.startswith("FAKE_LLM_URL="):
            raise RuntimeError(f"fake LLM server did not start: {line!r}")
        yield line.split("=", 1)[1]
    finally:
        proc.kill()
        proc.wait()
        os.unlink(handle.name)


def isolated_env(base_url: str, home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000000000",
        "OPENAI_BASE_URL": base_url + "/v1", "OPENAI_API_KEY": "sk-bench-0000000000",
        "YEETUI_CONFIG_DIR": str(home / "config"), "YEETUI_DATA_DIR": str(home / "data"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    })
    return env


def wall(argv: list[str], *, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def alternate(a: list[str], b: list[str], *, rounds: int, env: dict[str, str], cwd: Path) -> tuple[list, list]:
    """Time `a` and `b` alternately so machine noise hits both alike."""
    times_a, times_b = [], []
    for _ in range(rounds):
        times_a.append(wall(a, env=env, cwd=cwd))
        times_b.append(wall(b, env=env, cwd=cwd))
    return times_a, times_b


def report(name: str, subject: list[float], baseline: list[float], goal: float | None = None) -> float:
    ratio = statistics.median(subject) / statistics.median(baseline)
    verdict = "" if goal is None else f" (goal ≤ {goal:.2f}: {'met' if ratio <= goal else 'NOT met'})"
    print(f"{name}: median {statistics.median(subject) * 1000:.0f} ms vs baseline "
          f"{statistics.median(baseline) * 1000:.0f} ms → ratio {ratio:.2f}{verdict}")
    return ratio
