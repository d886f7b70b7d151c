"""`Store`: yeetui's SQLite persistence for sessions, messages and agent runs.

Open it with `await Store.open(path)` (or `async with await Store.open(path) as store`). Several Store
instances, in one process or many, may share a file: the database runs in WAL mode and writers wait up
to `busy_timeout`. Every call commits before it returns, so a `kill -9` loses nothing already stored.
Writes run as whole transactions on the store's writer thread; reads use a second, read-only connection
(see `yeetui.store.db`).

`Store` is a `Database` with the core tables, each in a module of its own that `Store` mixes in — sessions and
their remembered permissions (`SessionTable`, store/sessions.py), messages (`MessageTable`, store/messages.py),
agent runs (`RunTable`, store/runs.py), with the reads across them of a listing of runs (`RunListing`,
store/listing.py) and of what runs spent (`Spending`, store/spend.py) — and holds the other tables as typed
parts, each given the Database and nothing else:

- `inbox` (`InboxItems`, store/inbox.py) and `announcements` (`Announcements`, store/announce.py: an inbox item
  told in its session once, the message and the mark in one transaction);
- `breadcrumbs`, `worktree_records`, `workflow_states` (store/side_tables.py);
- `slots`, `run_commands`, `permission_asks`, `front_ends`, `tool_processes` (store/coordination.py: what
  processes sharing a data dir coordinate through).

So `store.inbox.list(session_id)`, `store.slots.take(run_id, limit)`, `store.permission_asks.post(…)`.
"""

from __future__ import annotations

from pathlib import Path

import aiosqlite

from yeetui.store.announce import Announcements
from yeetui.store.coordination import (
    FrontEnds,
    PermissionAsks,
    ProviderHolds,
    RunCommandQueue,
    SlotQueue,
    ToolProcesses,
)
from yeetui.store.inbox import InboxItems
from yeetui.store.listing import RunListing
from yeetui.store.messages import MessageTable
from yeetui.store.runs import RunTable
from yeetui.store.schedules import Schedules
from yeetui.store.sessions import SessionTable
from yeetui.store.side_tables import Breadcrumbs, WorkflowStates, WorktreeRecords
from yeetui.store.spend import Spending


class Store(SessionTable, MessageTable, RunTable, RunListing, Spending):
    """The async store. All methods (its parts' too) commit before returning and raise `StoreError` with context."""

    inbox: InboxItems
    announcements: Announcements
    breadcrumbs: Breadcrumbs
    worktree_records: WorktreeRecords
    workflow_states: WorkflowStates
    slots: SlotQueue
    run_commands: RunCommandQueue
    permission_asks: PermissionAsks
    front_ends: FrontEnds
    provider_holds: ProviderHolds
    schedules: Schedules
    tool_processes: ToolProcesses

    def __init__(self, path: Path, conn: aiosqlite.Connection, reader: aiosqlite.Connection) -> None:
        super().__init__(path, conn, reader)
        self.inbox = InboxItems(self)
        self.announcements = Announcements(self)
        self.breadcrumbs = Breadcrumbs(self)
        self.worktree_records = WorktreeRecords(self)
        self.workflow_states = WorkflowStates(self)
        self.slots = SlotQueue(self)
        self.run_commands = RunCommandQueue(self)
        self.permission_asks = PermissionAsks(self)
        self.front_ends = FrontEnds(self)
        self.provider_holds = ProviderHolds(self)
        self.schedules = Schedules(self)
        self.tool_processes = ToolProcesses(self)
