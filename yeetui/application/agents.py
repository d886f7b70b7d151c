"""Subagent runs handled from the shell (`yeetui agents …`) or any front end without a runtime of its own:
start one in a detached worker, resume, cancel or steer one whichever process executes it, and the worker's
side — executing a run record made elsewhere, with its permission questions and live events wired up.

Every call reads the store, so it sees runs of any process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.application.runs import RunDesk
from yeetui.bus import Bus
from yeetui.errors import ConfigError, YeetuiError
from yeetui.events import RunRegistered, RunStatus
from yeetui.runs.asking import AskThroughStore, RefuseThroughStore
from yeetui.runs.budget import Budget
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runs.spec import RunOptions
from yeetui.runtime import FrontEnd, Runtime
from yeetui.settings.config import Settings, load_settings
from yeetui.store import Store
from yeetui.store.db import WRITE_WAIT
from yeetui.store.records import RunRecord
from yeetui.subagents.detached import worker_log
from yeetui.subagents.elsewhere import process_running
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.panes import read_env_file
from yeetui.subagents.spawner import SpawnHandle, SpawnRequest
from yeetui.system.relay import RelaySender, relay_dir

__all__ = [
    "LIVE",
    "RESUMABLE",
    "AgentDesk",
    "SpawnHandle",
    "SpawnRequest",
    "Worker",
    "cancel_run",
    "ensure_final",
    "open_store",
    "read_env_file",
    "run_json",
    "steer_run",
    "worker_log",
]

LIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_PERMISSION)
RESUMABLE = (RunStatus.INTERRUPTED, RunStatus.WAITING_USER, RunStatus.FAILED, RunStatus.TIMEOUT,
             RunStatus.CANCELLED, RunStatus.BUDGET_EXHAUSTED, RunStatus.QUOTA_EXHAUSTED)
CANCEL_WAIT = 20.0
"""Seconds a cancel waits for a signalled worker to record the end of its run."""


async def open_store(*, write_wait: float = WRITE_WAIT, verify: bool = False) -> Store:
    """The store, with runs whose process died ended `interrupted` and told to their parents; `verify`: the whole
    file checked first (a damaged store is said to be so, never read as an empty one). When any of that fails
    the store is closed again and the error says why: a command never hangs on a store it could not open."""
    async def recover(store: Store) -> None:
        await Delivery(store, Bus()).recover()

    return await Store.open(paths.database_path(), write_wait=write_wait, verify=verify, then=recover)


async def run_json(store: Store, run: RunRecord) -> dict[str, Any]:
    """A run record for `--json`: the stored run plus its session's parent, the output up front, and what its
    whole tree (it and every subagent below it) used."""
    session = await store.get_session(run.session_id)
    data = run.to_json()
    data["parent_session_id"] = session.parent_id if session else RunOptions.of(run).parent_session_id
    data["result"] = {"output": "", **(run.result or {})}
    data["output"] = data["result"]["output"]
    usage, cost = await store.tree_usage(run.session_id)
    data["tree"] = {"usage": usage.model_dump(), "cost": cost}
    return data


async def ensure_final(store: Store, run_id: str) -> RunRecord:
    """The run after its execution ended; one stopped before it really began is recorded `cancelled`."""
    run = await store.resolve_run(run_id)
    if not run.status.is_final:
        run = await store.update_run(run.id, status=RunStatus.CANCELLED, error="cancelled")
    return run


# -- detached workers ---------------------------------------------------------------------------------

def check_resumable(run: RunRecord) -> None:
    """Raise YeetuiError unless the run ended in a way it can be resumed from."""
    if run.status in LIVE:
        raise YeetuiError(f"Run {run.id[:12]} ({run.label or run.profile}) is still {run.status.value} in "
                          f"process {run.pid}; only a run that ended can be resumed.")
    if run.status not in RESUMABLE:
        raise YeetuiError(f"Run {run.id[:12]} ({run.label or run.profile}) is {run.status.value}; there is "
                          "nothing to resume. Start a new run instead.")


class AgentDesk:
    """Runs a command starts, over one runtime: in a detached worker, or here until they end (`--wait`)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def start_detached(self, *, profile: str, prompt: str, model: str | None, context: str,
                             timeout: float | None, label: str | None, approve: bool, ask_any_yeetui: bool = False,
                             ask_wait: bool = False, ask_timeout: float | None = None,
                             budget: Budget | None = None) -> tuple[RunRecord, int]:
        """A new top-level session and its queued run, handed to a detached worker: (the run, the worker's pid).
        `ask_any_yeetui`: its permission questions are asked in any yeetui showing dialogs (refused when none,
        unless `ask_wait`: then each waits for an answer, up to `ask_timeout` seconds)."""
        run = await self._runtime.detached.create(
            profile_name=profile, prompt=prompt, model=model, context=context, timeout=timeout, title=label,
            approve=approve, ask_any_yeetui=ask_any_yeetui, ask_wait=ask_wait, ask_timeout=ask_timeout,
            budget=budget)
        return run, await self._runtime.detached.launch(run.id)

    async def resume_detached(self, run: RunRecord) -> int:
        """Resume an ended run in a detached worker; the worker's pid. The run is claimed first, atomically: of
        two resumes at once, one wins and the other is refused."""
        store = self._runtime.store
        if await store.claim_run(run.id, status=run.status, pid=run.pid, new_pid=os.getpid()) is None:
            raise YeetuiError(f"Run {run.id[:12]} ({run.label or run.profile}) is being resumed by another "
                              "process.")
        return await self._runtime.detached.launch(run.id, resume=True)

    async def run_here(self, start: SpawnRequest | str, *, resume: bool = False) -> tuple[
            asyncio.Future[SpawnHandle], list[str]]:
        """Start a run in this process (`--wait`): a new one from a request, or an existing run id. Returns the
        task carrying it and the list the ids of runs registered meanwhile are added to (so a cancel before the
        task returned still knows which run to report)."""
        registered: list[str] = []

        def note(event: object) -> None:
            if isinstance(event, RunRegistered):
                registered.append(event.run_id)

        self._runtime.bus.add_listener(note)
        coroutine = (self._runtime.spawner.spawn(start) if isinstance(start, SpawnRequest)
                     else self._runtime.spawner.start_existing(start, resume=resume))
        return asyncio.ensure_future(coroutine), registered


# -- another process's run -------------------------------------------------------------------------------

async def cancel_run(store: Store, run: RunRecord) -> RunRecord:
    """Cancel a run whichever process executes it: its detached worker is signalled (it cancels the run and
    exits), a TUI's or `yeetui run`'s subagent gets an abort command through the store; a run nobody executes
    any more is recorded cancelled here. Returns the run as it ended."""
    name = f"Run {run.id[:12]} ({run.label or run.profile})"
    if run.status.is_final and run.status != RunStatus.INTERRUPTED:
        raise YeetuiError(f"{name} already ended: {run.status.value}.")
    if run.status in LIVE and run.pid is not None and process_running(run.pid) and run.pid != os.getpid():
        if RunOptions.of(run).detached and _leads_its_group(run.pid):
            os.killpg(run.pid, signal.SIGTERM)
        else:
            await store.run_commands.post(run.id, "abort")
        run = await _wait_final(store, run)
    if not run.status.is_final or run.status == RunStatus.INTERRUPTED:
        run = await store.update_run(run.id, status=RunStatus.CANCELLED, error="cancelled by the user")
    return run


async def steer_run(store: Store, run: RunRecord, message: str) -> None:
    """Guidance for a running run, whichever process executes it: it reads it at its next turn."""
    if run.status not in LIVE or not process_running(run.pid):
        raise YeetuiError(f"Run {run.id[:12]} ({run.label or run.profile}) is {run.status.value}; only a running "
                          "run can be steered.")
    await store.run_commands.post(run.id, "steer", message, sender="the user")


async def _wait_final(store: Store, run: RunRecord) -> RunRecord:
    deadline = time.monotonic() + CANCEL_WAIT
    current = run
    while time.monotonic() < deadline:
        current = await store.resolve_run(run.id)
        if current.status.is_final or not process_running(run.pid):
            return current
        await asyncio.sleep(0.1)
    raise YeetuiError(f"Asked process {run.pid} to cancel run {run.id[:12]}, but it was still "
                      f"{current.status.value} after {CANCEL_WAIT:g} s.")


def _leads_its_group(pid: int) -> bool:
    """A detached worker is the leader of its own process group; anything else under that pid is not ours."""
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


# -- the worker's side --------------------------------------------------------------------------------------

class Worker:
    """A process executing a run record made by another (`yeetui agent run`): who answers its permission
    questions (the yeetui following its pane, `--yes`, or nobody: refused and recorded for whoever started
    it), its parent's announcements left to the parent's process, its live events relayed to the TUIs."""

    def __init__(self, runtime: Runtime, run: RunRecord) -> None:
        self.runtime = runtime
        """The runtime it executes the run on (opened for it by `open`; the worker's `shut` closes it)."""
        self.run = run
        self.options = RunOptions.of(run)
        self._asking: AskThroughStore | RefuseThroughStore | None = None
        self._sender: RelaySender | None = None

    @classmethod
    async def open(cls, run_id: str, *, cwd: Path, stand_in: int | None = None) -> Worker:
        """The worker of the run `run_id` (an id or its prefix), on a runtime opened as the run's options say
        (`--yes`: its own children in panes are approved too); `stand_in`: forked warm, the pid of the process
        standing in for it. `shut` it when done."""
        async with await Store.open(paths.database_path(os.environ)) as store:  # a look before the runtime
            options = RunOptions.of(await store.resolve_run(run_id))
        # No crash sweep here: the run this worker claims carries its pid, and front ends do the recovery.
        runtime = await Runtime.open(cwd=cwd, recover=False, front_end=FrontEnd(approve_asks=options.approve),
                                     stand_in=stand_in)
        try:
            return cls(runtime, await RunDesk(runtime).resolve(run_id))
        except BaseException:
            await runtime.close()
            raise

    @property
    def bus(self) -> Bus:
        """The run's live events."""
        return self.runtime.bus

    @property
    def store(self) -> Store:
        return self.runtime.store

    async def shut(self) -> None:
        """Close the runtime it opened (after `close`, or when the run could not start)."""
        await self.runtime.close()

    @property
    def asked_in_yeetui(self) -> bool:
        """Its permission questions are asked in the yeetui that follows its pane."""
        return isinstance(self._asking, AskThroughStore)

    def start(self) -> None:
        runtime, options = self.runtime, self.options
        if (options.ask_here or options.ask_any_yeetui) and not options.approve:
            self._asking = AskThroughStore(runtime.store, self.run.id, open_to_all=options.ask_any_yeetui,
                                           wait=options.ask_wait, timeout=options.ask_timeout)
            runtime.bus.add_listener(self._asking.listen)
        elif options.approve:
            answer_permissions_headless(runtime.bus, approve=True)
        else:
            self._asking = RefuseThroughStore(runtime.store, self.run.id)
            runtime.bus.add_listener(self._asking.listen)
        if options.parent_session_id:  # its parent lives in another process, which announces the ending
            runtime.delivery.hold_for.add(options.parent_session_id)
        if options.pane and (folder := relay_dir(paths.data_dir(), os.environ)) is not None:
            self._sender = RelaySender(folder, str(runtime.project_dir))
            runtime.bus.add_listener(self._sender.listen)
            self._sender.start()

    def execute(self, *, resume: bool) -> asyncio.Future[SpawnHandle]:
        return asyncio.ensure_future(self.runtime.spawner.start_existing(self.run.id, blocking=True, resume=resume))

    async def close(self) -> RunRecord:
        """Stop asking and relaying; the run as it ended."""
        final = await ensure_final(self.runtime.store, self.run.id)
        if self._asking is not None:
            await self._asking.close()
        if self._sender is not None:
            await self._sender.close()
        return final


def worker_env(env_file: str | None) -> None:
    """A pane's worker reads its environment (keys included) from a private file, never its command line."""
    if env_file:
        os.environ.update(read_env_file(Path(env_file)))


async def stalled(store: Store, runs: list[RunRecord], *, project_dir: Path | None = None) -> dict[str, float]:
    """The running runs among `runs` that got nowhere for the configured `stall_after` seconds: run id → seconds
    since their last progress (`Store.last_progress`)."""
    try:
        after = load_settings(project_dir=project_dir).settings.stall_after
    except ConfigError:
        after = Settings().stall_after
    running = [r for r in runs if r.status == RunStatus.RUNNING]
    if after is None or not running:
        return {}
    now = datetime.now(UTC)
    idle = {run_id: (now - at).total_seconds() for run_id, at in (await store.last_progress(running)).items()}
    return {run_id: seconds for run_id, seconds in idle.items() if seconds >= after}
