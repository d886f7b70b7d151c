"""What the bus cannot tell the status ledger, read from the store: runs that other yeetui processes execute,
and what each row's session tree has cost.

Events reach the ledger only from runs of this process. A run started with `yeetui agents start` lives in a
detached worker, and a child of `yeetui run` in that process; both write to the same store. `LedgerSync`
polls it (a front end calls `refresh()` about once a second): live runs of this project owned by another
live process get a row, kept up to date until they end, so the user can see, steer and cancel them from the
ledger like any other (cancel, abort and steer reach them through `run_commands`). For every row whose
session has subagents it also sets the tree's cost, so a parent row says what it and its helpers cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.store.liveness import pid_alive
from yeetui.store.records import RunRecord, SessionRecord
from yeetui.subagents.ledger import WATCHING, Ledger

LIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_PERMISSION)


class LedgerSync:
    def __init__(self, store: Store, ledger: Ledger, *, project_dir: Path, is_local: Callable[[str], bool],
                 is_alive: Callable[[int], bool] = pid_alive) -> None:
        self.store = store
        self.ledger = ledger
        self.project_dir = str(Path(project_dir).resolve())
        self.is_local = is_local
        """Whether this process executes the run (the spawner's live runs)."""
        self.is_alive = is_alive
        self._shown: set[str] = set()
        self._sessions: dict[str, SessionRecord | None] = {}
        self._busy = False

    async def refresh(self) -> None:
        """One look at the store; a call while the previous one still runs does nothing."""
        if self._busy:
            return
        self._busy = True
        try:
            await self._runs_elsewhere()
            await self._tree_costs()
        finally:
            self._busy = False

    async def _runs_elsewhere(self) -> None:
        me = os.getpid()
        shown: set[str] = set()
        theirs = []
        for run in await self.store.list_runs(statuses=LIVE, limit=200):
            if run.pid is None or run.pid == me or self.is_local(run.id) or not self.is_alive(run.pid):
                continue
            session = await self._session(run.session_id)
            if session is None or session.cwd is None or str(session.cwd.resolve()) != self.project_dir:
                continue
            theirs.append((run, session))
        progress = await self.store.last_progress(run for run, _ in theirs)
        now = datetime.now(UTC)
        for run, session in theirs:
            idle = (now - progress[run.id]).total_seconds() if run.id in progress else None
            self.ledger.elsewhere(run, parent_session_id=session.parent_id, running_for=_running_for(run),
                                  idle_for=idle)
            shown.add(run.id)
        for run_id in self._shown - shown:  # ended since the last look (or its process died)
            ended = await self.store.get_run(run_id)
            if ended is not None:
                if not ended.status.is_final:  # its process is gone: say so until recovery records it
                    ended = replace(ended, status=RunStatus.INTERRUPTED, error="its process is gone")
                session = await self._session(ended.session_id)
                self.ledger.elsewhere(ended, parent_session_id=session.parent_id if session else None,
                                      running_for=None)
        self._shown = shown

    async def _tree_costs(self) -> None:
        for row in self.ledger.rows():
            if row.status == WATCHING or row.is_final:
                continue
            if not await self.store.has_child_sessions(row.session_id):
                self.ledger.set_tree_cost(row.run_id, None)
                continue
            _, cost = await self.store.tree_usage(row.session_id)
            self.ledger.set_tree_cost(row.run_id, cost)

    async def _session(self, session_id: str) -> SessionRecord | None:
        if session_id not in self._sessions:
            self._sessions[session_id] = await self.store.get_session(session_id)
        return self._sessions[session_id]


def _running_for(run: RunRecord) -> float | None:
    if run.started_at is None:
        return None
    started = run.started_at if run.started_at.tzinfo else run.started_at.replace(tzinfo=UTC)
    return max((datetime.now(UTC) - started).total_seconds(), 0.0)
