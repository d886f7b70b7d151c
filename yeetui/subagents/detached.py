"""Runs executed by a worker process of their own (`yeetui agent run --run-id ID`, started detached).

`create_detached_run` writes what `AgentSpawner.spawn` writes up to the run record — profile, timeout and
model resolved, context injected, session and queued run — for a run another process will execute;
`launch_worker` starts that process in its own process group with its output in a log file under the data
dir, and records its pid on the run before returning, so no other yeetui process sweeps the run up as a
leftover of a dead one while the worker starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from yeetui import paths
from yeetui.errors import ContextResolutionError, YeetuiError
from yeetui.events import RunStatus
from yeetui.runs.spawn_context import resolve_context
from yeetui.runs.spec import RunOptions
from yeetui.store.records import RunRecord
from yeetui.subagents.spawner import AgentSpawner, SpawnRefused


async def create_detached_run(spawner: AgentSpawner, *, profile_name: str, prompt: str, model: str | None = None,
                              context: str = "none", timeout: float | None = None, title: str | None = None,
                              approve: bool = False) -> RunRecord:
    """A new top-level session and its queued run record, for a worker process to execute."""
    launcher = spawner.launcher
    try:
        profile = spawner.profiles.get(profile_name)
    except YeetuiError as exc:
        raise SpawnRefused(str(exc)) from None
    timeout = min(timeout or profile.limits.timeout or spawner.default_timeout, spawner.max_timeout)
    chosen = launcher.resolve_model(profile, model)
    try:
        full_prompt = await resolve_context(context, store=spawner.store, parent_session_id=None,
                                            project_root=spawner.project_dir, task=prompt)
    except ContextResolutionError as exc:
        raise SpawnRefused(str(exc)) from None
    session = await launcher.new_session(profile, title=title or prompt, model=chosen, origin="detached")
    options = RunOptions(timeout=timeout, session_context=context, detached=True, approve=approve)
    return await launcher.create_run(session, profile, model=chosen, prompt=full_prompt, options=options)


def worker_log(run_id: str, env: Mapping[str, str] | None = None) -> Path:
    return paths.data_dir(env) / "agents" / f"{run_id}.log"


async def launch_worker(spawner: AgentSpawner, run_id: str, *, resume: bool = False) -> int:
    """Start `yeetui agent run` for `run_id` detached; its pid, recorded on the run."""
    launcher = spawner.launcher
    argv = [sys.executable, "-m", "yeetui", "agent", "run", "--run-id", run_id, *(["--resume"] if resume else [])]
    env = dict(launcher.env)
    try:
        pid = _spawn_worker(argv, cwd=launcher.project_dir, env=env, log_path=worker_log(run_id, env))
    except OSError as exc:
        if not resume:
            await spawner.store.update_run(run_id, status=RunStatus.FAILED,
                                           error=f"could not start its process: {exc}")
        raise YeetuiError(f"Could not start the worker process for run {run_id[:12]}: {exc}.") from None
    await spawner.store.update_run(run_id, pid=pid)
    return pid


def _spawn_worker(argv: list[str], *, cwd: Path, env: dict[str, str], log_path: Path) -> int:
    paths.private_dir(log_path.parent)
    with open(os.open(log_path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600), "ab") as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return proc.pid
