"""What is asked of the spawner (`SpawnRequest`), what it answers (`SpawnHandle`), and how it refuses
(`SpawnRefused`): shared by the spawner and the parts it delegates to (worktree isolation, pane runs, run
commands), so none of them needs the spawner itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from yeetui.definitions.profiles import Isolation, RunMode
from yeetui.errors import YeetuiError
from yeetui.runs.budget import Budget
from yeetui.runs.spec import RunResult
from yeetui.subagents.inbox import worktree_note


class SpawnRefused(YeetuiError):
    """A spawn was not allowed; the message says why, for the model or the user."""


@dataclass(frozen=True)
class SpawnRequest:
    profile: str
    prompt: str
    parent_session_id: str | None = None
    parent_run_id: str | None = None
    blocking: bool = False
    mode: RunMode | None = None
    model: str | None = None
    thinking: Literal["off", "low", "medium", "high"] | None = None
    label: str | None = None
    timeout: float | None = None
    cleanup: Literal["keep", "delete"] = "keep"
    session_context: str = "none"
    requested_by: Literal["user", "agent"] = "agent"
    prompt_suffix: str = ""
    """Text appended to the prompt after context resolution (e.g. the diff for a reviewer)."""
    session_id: str | None = None
    """Run in this existing child session (a watcher's successive runs) instead of a new one."""
    watcher: bool = False
    """A watcher's run: not a child of the watched session for limits, listing or subtree cancel."""
    deliver: bool = True
    """Deliver the completion to the parent (inbox + announcement). Watchers deliver their own way."""
    isolation: Isolation | None = None
    """Overrides the profile's `workspace.isolation` for this spawn (`current` keeps the parent's checkout)."""
    worktree: str | None = None
    """Work in this existing worktree (an orchestrator's builder reworking its branch) instead of a new one;
    handed over from `worktree_from`, the session that held it."""
    worktree_from: str | None = None
    budget: Budget | None = None
    """What the child and its own subagents may spend together (its ancestors' budgets hold too)."""

    @property
    def task(self) -> str:
        """What the child is asked to do, in a few words: its label, else its prompt's first line (an orchestrator's
        step prompt goes on with the overall goal, which is not this child's task)."""
        first = next((line.strip() for line in self.prompt.splitlines() if line.strip()), "")
        return self.label or first


@dataclass
class SpawnHandle:
    run_id: str
    session_id: str
    session_key: str
    label: str
    profile: str
    result: RunResult | None = None
    worktree: dict[str, Any] | None = None
    """Where the child's work is, when it worked in a worktree of its own (see `Delivery.completion`)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": "accepted", "run_id": self.run_id, "session_key": self.session_key,
                                "session_id": self.session_id, "label": self.label}
        if self.result is not None:
            data.update(status=self.result.status.value, output=self.result.output, error=self.result.error)
        if self.worktree is not None:
            data.update(worktree=self.worktree, worktree_note=worktree_note(self.label, self.worktree))
        return data
