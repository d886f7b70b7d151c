"""Measurement helpers shared by the spawn and TUI benchmarks: memory, event-loop lag, percentiles,
running one measured case in a fresh subprocess, and printing a figure next to its baseline.

Every figure is printed with the baseline measured in the same run and the ratio between them; nothing
here decides pass or fail on absolute times.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import resource
import runpy
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULT_PREFIX = "RESULT "


# -- memory ----------------------------------------------------------------------------------------

def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_kb() -> int:
    """The process's resident set size now, in KiB."""
    value = _status_kb("VmRSS")
    return value if value is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss_kb() -> int:
    """The process's peak resident set size so far (VmHWM, else ru_maxrss), in KiB."""
    value = _status_kb("VmHWM")
    return value if value is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# -- statistics ------------------------------------------------------------------------------------

def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0–100) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


class LagMonitor:
    """Measures event-loop stalls: a task sleeps `interval` seconds over and over and records how much
    longer than asked each sleep took (the oversleep is the time the loop was busy elsewhere)."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.samples: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> LagMonitor:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="bench lag monitor")
        return self

    async def _run(self) -> None:
        clock = time.perf_counter
        while True:
            before = clock()
            await asyncio.sleep(self.interval)
            self.samples.append(max(0.0, clock() - before - self.interval))

    async def stop(self) -> dict[str, float]:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        return self.stats()

    def reset(self) -> None:
        self.samples.clear()

    def stats(self) -> dict[str, float]:
        return {"max": max(self.samples, default=0.0), "p99": percentile(self.samples, 99),
                "p50": percentile(self.samples, 50), "n": float(len(self.samples))}


# -- cases in subprocesses -------------------------------------------------------------------------

def emit(result: dict[str, Any]) -> None:
    """A case's result, for `run_case` in the parent process: one JSON line on stdout."""
    print(RESULT_PREFIX + json.dumps(result), flush=True)


_forking = False
"""Set by `fork_cases`: cases are then forked from the driver instead of started afresh."""


def fork_cases(preload: Sequence[str]) -> None:
    """For `--quick` (the test suite's smoke runs, whose figures mean nothing): import `preload` here once and fork
    every later case from this process, so no case pays for those imports again. A forked case is still a process
    of its own — its directory, environment, stdout and exit status — but its memory starts as a copy of the
    driver's, so its RSS figures are not comparable: full runs start each case in a fresh interpreter."""
    global _forking
    import importlib

    for module in preload:
        importlib.import_module(module)
    _forking = True


def run_case(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 600.0) -> dict[str, Any]:
    """Run one measured case in a fresh interpreter (so memory peaks and caches don't leak between cases), or
    forked when `fork_cases` was called, and return the dict it `emit`ted."""
    if _forking:
        code, out, err = _run_forked(argv, env=env, cwd=cwd, timeout=timeout)
    else:
        proc = subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_PREFIX):
            if code != 0:
                break
            return json.loads(line[len(RESULT_PREFIX):])
    raise RuntimeError(f"benchmark case {argv[1:]} failed (exit {code}):\n{out[-2000:]}\n{err[-4000:]}")


def _run_forked(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float) -> tuple[int, str, str]:
    """`python ARGV` as a fork of this process: the script runs as `__main__` with `sys.argv = ARGV`, its output
    goes to files read back here. The child ends with `os._exit`: the driver's exit handlers (its temporary
    directories) are the driver's, not the case's."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the case
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
                sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                sys.argv = list(argv)
                runpy.run_path(argv[0], run_name="__main__")
                code = 0
            except SystemExit as exit_:  # as the interpreter takes it: None is 0, text is printed and means 1
                code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
                if isinstance(exit_.code, str):
                    print(exit_.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.02)
        code = os.waitstatus_to_exitcode(done[1])
        out.seek(0)
        err.seek(0)
        return code, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def fake_requests(base_url: str) -> list[dict[str, Any]]:
    """The request log of a standalone fake LLM server (`GET /_fake/requests`)."""
    with urllib.request.urlopen(base_url + "/_fake/requests", timeout=30) as response:
        return json.loads(response.read())


# -- printing --------------------------------------------------------------------------------------

def show(name: str, subject: float, baseline: float, *, unit: str = "ms", goal: float | None = None,
         goal_text: str | None = None) -> float:
    """Print `name: <subject> vs baseline <baseline> → ratio r`. Times are given in seconds and shown in
    ms when unit is "ms"; other units are shown as given."""
    scale = 1000.0 if unit == "ms" else 1.0
    ratio = subject / baseline if baseline > 0 else math.inf
    verdict = ""
    if goal is not None:
        verdict = f" (goal ratio ≤ {goal:.2f}: {'met' if ratio <= goal else 'NOT met'})"
    if goal_text:
        verdict += f" ({goal_text})"
    digits = 2 if max(subject, baseline) * scale < 10 else 1
    print(f"{name}: {subject * scale:.{digits}f} {unit} vs baseline {baseline * scale:.{digits}f} {unit} "
          f"→ ratio {ratio:.2f}{verdict}", flush=True)
    return ratio
