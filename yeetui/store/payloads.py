"""What an inbox item carries besides its title and body, by kind: a typed union read from the item's stored JSON
and written back to it.

- `Completion` (`completion`, `review`): a child run ended — its status, its result, the worktree it left work in,
  and the announcement its parent's conversation is told;
- `Interjection`: the pair watcher's remark — its severity and the watcher's session;
- `OrchestratorStep` (`orchestrator`): a step of an orchestration needs the user (blocked, failed);
- `BudgetAlert` (`budget`): a run spent most of its budget, or was halted by it;
- `OtherPayload`: any other kind, its data as stored.

The data is read defensively: it was written by yeetui, but from words of models and programs, and an older or
damaged row must still show. A field of the wrong type reads as its default, never as an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BudgetAlert", "Completion", "InboxPayload", "Interjection", "OrchestratorStep", "OtherPayload",
           "payload_of"]


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _mapping(data: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = data.get(key)
    return dict(value) if isinstance(value, Mapping) else None


def _ids(trees: list[Any]) -> list[str]:
    return [str(tree["id"]) for tree in trees if isinstance(tree, Mapping) and tree.get("id")]


def _without_none(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Told:
    """What every kind may tell its recipient's conversation (`announce`: once, as a message) and which
    session it is about (what opening the item shows)."""

    label: str | None = None
    """The agent it is about (`oracle#4`)."""
    child_session_id: str | None = None
    announce: bool = False
    announcement: str | None = None
    """The message the conversation is told (none: the item's title)."""

    @property
    def status(self) -> str | None:
        """The run status an announcement carries (a completion's)."""
        return None

    @property
    def worktree_ids(self) -> list[str]:
        """The worktrees it tells of (alt+m merges them, alt+w opens one), in order."""
        return []


@dataclass(frozen=True, slots=True)
class Completion(Told):
    run_status: str = "completed"
    """The child run's final status (a RunStatus value)."""
    result: dict[str, Any] = field(default_factory=dict)
    """The run's structured result (its `complete` artifacts, an orchestrator's builders' worktrees…)."""
    worktree: dict[str, Any] | None = None
    """Where a child that worked in its own worktree left its work."""

    @property
    def status(self) -> str | None:
        return self.run_status

    @property
    def verdict(self) -> str | None:
        """A reviewer's verdict (`approve`, `request_changes`), from its `complete` artifacts."""
        artifacts = self.result.get("artifacts")
        verdict = artifacts.get("verdict") if isinstance(artifacts, Mapping) else None
        return verdict if isinstance(verdict, str) else None

    @property
    def worktree_ids(self) -> list[str]:
        """The worktrees it tells of: a builder's own, or an orchestrator's builders' (in plan order)."""
        found = self.result.get("worktrees")
        return _ids([self.worktree] if self.worktree else found if isinstance(found, list) else [])

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Completion:
        return cls(label=_text(data, "label"), child_session_id=_text(data, "child_session_id"),
                   announce=data.get("announce") is True, announcement=_text(data, "announcement"),
                   run_status=_text(data, "status") or "completed", result=_mapping(data, "result") or {},
                   worktree=_mapping(data, "worktree"))

    def to_data(self) -> dict[str, Any]:
        return _without_none({"status": self.run_status, "label": self.label,
                              "child_session_id": self.child_session_id, "announce": self.announce,
                              "announcement": self.announcement, "result": self.result, "worktree": self.worktree})


@dataclass(frozen=True, slots=True)
class Interjection(Told):
    severity: str = "aside"
    """`aside`, `concern` or `blocker` (a blocker is announced into the conversation)."""
    watcher_session_id: str | None = None
    run_id: str | None = None
    """The watcher's run that made it."""
    accepted: bool = False
    """The user accepted it (older rows; newer verdicts are kept on the watcher's run)."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Interjection:
        return cls(label=_text(data, "label"), child_session_id=_text(data, "child_session_id"),
                   announce=data.get("announce") is True, announcement=_text(data, "announcement"),
                   severity=_text(data, "severity") or "aside", watcher_session_id=_text(data, "watcher_session_id"),
                   run_id=_text(data, "run_id"), accepted=data.get("accepted") is True)

    def to_data(self) -> dict[str, Any]:
        data = _without_none({"severity": self.severity, "watcher_session_id": self.watcher_session_id,
                              "run_id": self.run_id, "label": self.label, "child_session_id": self.child_session_id})
        if self.announce:
            data.update(announce=True, announcement=self.announcement)
        if self.accepted:
            data["accepted"] = True
        return data


@dataclass(frozen=True, slots=True)
class OrchestratorStep(Told):
    progress: str = ""
    """The orchestration's progress line when it happened."""
    step: str | None = None
    event: str | None = None
    """What happened to the step (`blocked`, `failed`, …)."""
    step_status: str | None = None
    """The step's status (for the orchestration's `end`: the run's)."""
    child_run_id: str | None = None
    worktrees: list[dict[str, Any]] | None = None
    """At the end: the builders' worktrees left to merge, in plan order."""

    @property
    def worktree_ids(self) -> list[str]:
        return _ids(self.worktrees or [])

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> OrchestratorStep:
        trees = data.get("worktrees")
        return cls(progress=_text(data, "progress") or "", step=_text(data, "step"), event=_text(data, "event"),
                   step_status=_text(data, "status"), child_run_id=_text(data, "child_run_id"),
                   worktrees=[dict(t) for t in trees if isinstance(t, Mapping)] if isinstance(trees, list) else None)

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"progress": self.progress, "step": self.step, "event": self.event,
                                "status": self.step_status, "child_run_id": self.child_run_id}
        if self.worktrees is not None:
            data["worktrees"] = self.worktrees
        return data


@dataclass(frozen=True, slots=True)
class BudgetAlert(Told):
    run_id: str | None = None
    session_id: str | None = None
    """The session of the run whose budget it is."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> BudgetAlert:
        return cls(label=_text(data, "label"), run_id=_text(data, "run_id"), session_id=_text(data, "session_id"))

    def to_data(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "label": self.label, "session_id": self.session_id}


@dataclass(frozen=True, slots=True)
class OtherPayload(Told):
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> OtherPayload:
        return cls(label=_text(data, "label"), child_session_id=_text(data, "child_session_id"),
                   announce=data.get("announce") is True, announcement=_text(data, "announcement"), data=dict(data))

    def to_data(self) -> dict[str, Any]:
        return dict(self.data)


InboxPayload = Completion | Interjection | OrchestratorStep | BudgetAlert | OtherPayload

_BY_KIND: dict[str, type[Completion | Interjection | OrchestratorStep | BudgetAlert]] = {
    "completion": Completion, "review": Completion, "interjection": Interjection, "orchestrator": OrchestratorStep,
    "budget": BudgetAlert,
}


def payload_of(kind: str, data: Mapping[str, Any] | None) -> InboxPayload:
    """The payload of an item of `kind` whose stored data is `data` (None or not a mapping: an empty one)."""
    found = data if isinstance(data, Mapping) else {}
    reader = _BY_KIND.get(kind)
    return reader.from_data(found) if reader is not None else OtherPayload.from_data(found)
