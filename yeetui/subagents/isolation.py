"""A child's own checkout: a new child session is bound to the worktree (or clone) its profile asks for, and
when the child ends, what it left uncommitted is committed on its branch and where its work is is described
for delivery. Without `Worktrees` (or when none can be made) a child works in its parent's checkout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile
from yeetui.events import Notice
from yeetui.store import Store
from yeetui.store.records import SessionRecord
from yeetui.subagents.spawn_request import SpawnRequest
from yeetui.worktrees.manager import WorktreeError, Worktrees


class WorktreeIsolation:
    def __init__(self, worktrees: Worktrees | None, *, store: Store, bus: Bus, project_dir: Path) -> None:
        self.worktrees = worktrees
        """The `Worktrees` children with `isolation: worktree|clone` get their checkout from; None: every child
        works in the parent's checkout."""
        self.store = store
        self.bus = bus
        self.project_dir = project_dir

    async def isolate(self, session: SessionRecord, profile: Profile, req: SpawnRequest, label: str,
                      parent: SessionRecord | None) -> SessionRecord:
        """Bind a new child session to its own worktree (or clone) when its profile asks for one; when none
        can be made (not a git repository, no commit yet) it works in the parent's checkout, with a notice."""
        isolation = req.isolation or profile.workspace.isolation
        if isolation == "current" or self.worktrees is None:
            return session
        checkout = parent.cwd if parent is not None and parent.cwd else self.project_dir
        try:
            if req.worktree:
                wt = await self.worktrees.claim(req.worktree, session.id, from_session_id=req.worktree_from)
            else:
                wt = await self.worktrees.create(
                    checkout, task=f"{label} {req.task}", prefix=profile.workspace.branch_prefix,
                    base=profile.workspace.base_branch, owner_session_id=session.id, kind=isolation, label=label)
        except (WorktreeError, ValueError) as exc:
            self.bus.publish(Notice("warning", f"{label} gets no {isolation} of its own and works in {checkout}: "
                                    f"{exc}", session.id))
            return session
        writable, readable = await self.worktrees.git_dirs(wt)
        workspace = {"mode": isolation, "worktree_id": wt.id, "branch": wt.branch, "checkout": str(wt.repo),
                     "git_writable": [str(p) for p in writable], "git_readable": [str(p) for p in readable]}
        return await self.store.update_session(session.id, cwd=str(wt.path), workspace=workspace)

    async def worktree_info(self, session_id: str) -> dict[str, Any] | None:
        """Where the session's work is, when it has a worktree of its own (see `Delivery.completion`)."""
        if self.worktrees is None or (wt := await self.worktrees.of_session(session_id)) is None:
            return None
        state = await self.worktrees.state(wt)
        return {"id": wt.id, "branch": wt.branch, "path": str(wt.path), "commits": state.commits,
                "base": wt.base_commit, "checkout": str(wt.repo)}

    async def hand_in(self, session_id: str, label: str, task: str) -> dict[str, Any] | None:
        """A child that worked in its own worktree: what it left uncommitted is committed on its branch (so
        the branch is the whole of its work, for review and merge), and where that work is, for delivery."""
        if self.worktrees is None:
            return None
        wt = await self.worktrees.of_session(session_id)
        if wt is None:
            return None
        try:
            lines = task.strip().splitlines()
            await self.worktrees.commit_work(wt, f"{label}: {lines[0][:60] if lines else 'work'}")
            return await self.worktree_info(session_id)
        except WorktreeError as exc:
            self.bus.publish(Notice("warning", f"{label}: could not commit its work in {wt.path}: {exc}", session_id))
            return {"id": wt.id, "branch": wt.branch, "path": str(wt.path), "commits": None}
