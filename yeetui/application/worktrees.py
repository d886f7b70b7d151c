"""The worktrees agents work in, as the user handles them from any front end: find one by name, see its work,
merge it into their branch, discard it, sync it, open a shell in it, list and clean up what is left.

Merging and discarding act on the user's word only: front ends ask first (the TUI's confirmation, the CLI's
explicit command); nothing here asks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from yeetui.store import Store
from yeetui.store.records import WorktreeRecord
from yeetui.system.terminals import Shown, open_shell
from yeetui.worktrees.manager import CleanupEntry, Worktrees, WorktreeState
from yeetui.worktrees.merging import MergeOutcome, Strategy, SyncHow, discard_work, merge_work, sync_worktree

if TYPE_CHECKING:
    from yeetui.runtime import Runtime

__all__ = ["CleanupEntry", "MergeOutcome", "Shown", "Strategy", "SyncHow", "WorktreeDesk", "WorktreeState"]


class WorktreeDesk:
    """Worktree use cases over one store (and, in a running app, the spawner's worktree manager)."""

    def __init__(self, store: Store, *, env: Mapping[str, str] | None = None,
                 worktrees: Worktrees | None = None) -> None:
        self.store = store
        self.env = env
        self._worktrees = worktrees or Worktrees(store, env=env)

    @classmethod
    def of(cls, runtime: Runtime) -> WorktreeDesk:
        """The desk of a running app: the spawner's worktree manager, the app's environment."""
        return cls(runtime.store, env=runtime.env, worktrees=runtime.spawner.worktrees)

    async def create(self, checkout: Path, *, task: str, prefix: str = "yeetui/", base: str | None = None,
                     owner_session: str | None = None, clone: bool = False) -> WorktreeRecord:
        owner = (await self.store.resolve_session(owner_session)).id if owner_session else None
        return await self._worktrees.create(checkout, task=task, prefix=prefix, base=base, owner_session_id=owner,
                                            kind="clone" if clone else "worktree")

    async def get(self, worktree_id: str) -> WorktreeRecord | None:
        return await self.store.worktree_records.get(worktree_id)

    async def resolve(self, ident: str) -> WorktreeRecord:
        """The worktree with this id or unique id prefix (a clear error otherwise)."""
        return await self.store.worktree_records.resolve(ident)

    async def find(self, name: str, *, within_session: str | None = None) -> WorktreeRecord:
        """An active worktree by its agent's label, branch or id prefix; with `within_session`, only among the
        worktrees of that session's tree (what a conversation on screen can name)."""
        tree = await self.store.session_tree_ids(within_session) if within_session else None
        return await self._worktrees.find(name, sessions=tree)

    async def listed(self, *, include_ended: bool = False) -> list[WorktreeRecord]:
        return await self.store.worktree_records.list(statuses=None if include_ended else ("active",))

    async def state(self, wt: WorktreeRecord) -> WorktreeState:
        """Its work now (commits on its branch, uncommitted changes); an ended worktree has none."""
        return await self._worktrees.state(wt) if wt.status == "active" else WorktreeState(exists=False)

    async def active_with_state(self) -> list[tuple[WorktreeRecord, WorktreeState]]:
        return [(wt, await self._worktrees.state(wt)) for wt in await self.listed()]

    async def claim(self, ident: str, session: str) -> tuple[WorktreeRecord, str]:
        """Give the worktree to a session; (the worktree, the session's id)."""
        wt = await self.resolve(ident)
        owner = await self.store.resolve_session(session)
        return await self._worktrees.claim(wt.id, owner.id), owner.id

    async def release(self, ident: str) -> WorktreeRecord:
        return await self._worktrees.release((await self.resolve(ident)).id)

    async def merge(self, wt: WorktreeRecord, *, strategy: Strategy = "merge",
                    message: str | None = None) -> MergeOutcome:
        """Merge its branch into the branch checked out in its checkout (work left uncommitted is committed
        first); the outcome says whether it merged and why not."""
        return await merge_work(self._worktrees, wt, strategy=strategy, message=message)

    async def discard(self, wt: WorktreeRecord) -> WorktreeRecord:
        """Remove the worktree and its branch, with every change in them."""
        return await discard_work(self._worktrees, wt)

    async def sync(self, wt: WorktreeRecord, *, how: SyncHow = "rebase") -> MergeOutcome:
        return await sync_worktree(self._worktrees, wt, how=how)

    async def delete(self, wt: WorktreeRecord, *, force: bool = False) -> WorktreeRecord:
        return await self._worktrees.delete(wt, force=force)

    async def stale(self, *, older_than: timedelta) -> list[WorktreeRecord]:
        return await self._worktrees.stale(older_than=older_than)

    async def cleanup(self, *, apply: bool, older_than: timedelta) -> list[CleanupEntry]:
        return await self._worktrees.cleanup(dry_run=not apply, older_than=older_than)

    async def open_shell(self, wt: WorktreeRecord) -> Shown:
        """A shell in the worktree: a split of the user's tmux, a terminal window, or the command to type."""
        return await asyncio.to_thread(open_shell, wt.path, env=self.env)
