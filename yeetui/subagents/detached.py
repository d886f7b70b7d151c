"""Runs executed by a worker process of their own (`yeetui agent run --run-id ID`, started detached).

`DetachedRuns.create` writes what `AgentSpawner.spawn` writes up to the run record — profile, timeout and
model resolved, context injected, session and queued run — for a run another process will execute;
`DetachedRuns.launch` starts that process in its own process group with its output in a log file under the data
dir, and records its pid on the run before returning, so no other yeetui process sweeps the run up as a
leftover of a dead one while the worker starts.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from yeetui import paths
from yeetui.definitions.profiles import ProfileSet
from yeetui.errors import ContextResolutionError, YeetuiError
from yeetui.events import RunStatus
from yeetui.runs.budget import Budget, BudgetError
from yeetui.runs.launcher import RunLauncher
from yeetui.runs.spawn_context import resolve_context
from yeetui.runs.spec import RunOptions
from yeetui.store import Store
from yeetui.store.records import RunRecord
from yeetui.subagents.spawn_request import SpawnRefused
from yeetui.system.processes import yeetui_command


class DetachedRuns:
    """Runs handed to a worker process of their own: the record made here, the process started detached."""

    def __init__(self, launcher: RunLauncher, *, store: Store, profiles: ProfileSet, project_dir: Path,
                 env: Mapping[str, str], default_timeout: float, max_timeout: float) -> None:
        self.launcher = launcher
        self.store = store
        self.profiles = profiles
        self.project_dir = project_dir
        self.env = env
        """The environment the workers get (keys included: they call the models)."""
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout

    async def create(self, *, profile_name: str, prompt: str, model: str | None = None, context: str = "none",
                     timeout: float | None = None, title: str | None = None, approve: bool = False,
                     ask_any_yeetui: bool = False, ask_wait: bool = False, ask_timeout: float | None = None,
                     budget: Budget | None = None) -> RunRecord:
        """A new top-level session and its queued run record, for a worker process to execute.
        `ask_any_yeetui`: its permission questions go to any yeetui showing dialogs (`RunOptions`); `budget`:
        what it and its subagents may spend."""
        try:
            profile = self.profiles.get(profile_name)
        except YeetuiError as exc:
            raise SpawnRefused(str(exc)) from None
        timeout = min(timeout or profile.limits.timeout or self.default_timeout, self.max_timeout)
        chosen = self.launcher.models.resolve(profile, model)
        try:  # before its session is made: a refused run leaves nothing behind
            await self.launcher.specs.refuse_uncountable(profile, chosen, budget=budget)
        except BudgetError as exc:
            raise SpawnRefused(str(exc)) from None
        try:
            full_prompt = await resolve_context(context, store=self.store, parent_session_id=None,
                                                project_root=self.project_dir, task=prompt)
        except ContextResolutionError as exc:
            raise SpawnRefused(str(exc)) from None
        session = await self.launcher.new_session(profile, title=title or prompt, model=chosen, origin="detached")
        options = RunOptions(timeout=timeout, session_context=context, detached=True, approve=approve,
                             ask_any_yeetui=ask_any_yeetui or ask_wait, ask_wait=ask_wait, ask_timeout=ask_timeout,
                             budget=budget.to_json() if budget else None)
        return await self.launcher.create_run(session, profile, model=chosen, prompt=full_prompt, options=options)

    async def launch(self, run_id: str, *, resume: bool = False) -> int:
        """Start `yeetui agent run` for `run_id` detached; its pid, recorded on the run."""
        argv = yeetui_command("agent", "run", "--run-id", run_id, *(["--resume"] if resume else []))
        env = dict(self.env)
        try:
            pid = spawn_worker(argv, cwd=self.project_dir, env=env, log_path=worker_log(run_id, env))
        except OSError as exc:
            if not resume:
                await self.store.update_run(run_id, status=RunStatus.FAILED,
                                            error=f"could not start its process: {exc}")
            raise YeetuiError(f"Could not start the worker process for run {run_id[:12]}: {exc}.") from None
        await self.store.hand_over(run_id, pid, from_pid=os.getpid())  # a warm worker may have claimed it already
        return pid


def worker_log(run_id: str, env: Mapping[str, str] | None = None) -> Path:
    return paths.data_dir(env) / "agents" / f"{run_id}.log"


def spawn_worker(argv: list[str], *, cwd: Path, env: dict[str, str], log_path: Path) -> int:
    """Start `argv` as a process of its own session (it outlives whoever started it), its output to `log_path`;
    its pid."""
    paths.private_dir(log_path.parent)
    with open(os.open(log_path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600), "ab") as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return proc.pid
