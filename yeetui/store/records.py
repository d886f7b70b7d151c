"""Immutable records the store hands out, one per table, each with a JSON-friendly `to_json()`.

Timestamps are stored as UTC ISO-8601 text and surface here as timezone-aware `datetime`s.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError

from yeetui.errors import StoreError
from yeetui.events import RunStatus
from yeetui.messages import Message, Usage
from yeetui.store.payloads import InboxPayload, payload_of

InboxStatus = Literal["unread", "read", "dismissed"]
INBOX_STATUSES: tuple[InboxStatus, ...] = ("unread", "read", "dismissed")


def utcnow() -> str:
    """The current time as stored: UTC, ISO-8601, microseconds (fixed width, so text order is time order)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def parse_ts(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def dump_json(value: Any) -> str | None:
    """JSON text for a column; `None` stays SQL NULL. Pydantic models are dumped in JSON mode."""
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False)


def load_json(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise StoreError(f"The store holds invalid JSON in {what}: {err}.") from err


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


class _Record:
    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]
    """Every record is a dataclass (declared so `fields(self)` type-checks on this base)."""

    def to_json(self) -> dict[str, Any]:
        """A dict that `json.dumps` accepts: datetimes as ISO strings, paths as strings, models dumped."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


@dataclass(frozen=True, slots=True)
class SessionRecord(_Record):
    id: str
    key: str
    parent_id: str | None
    depth: int
    profile: str
    title: str
    model: str | None
    workspace: dict[str, Any] | None
    cwd: Path | None
    status: str
    created_at: datetime
    updated_at: datetime

    @property
    def origin(self) -> str:
        """Where a session came from, read from its key: `primary` (the app), `run`, `detached`, `subagent`."""
        parts = self.key.split(":")
        return parts[2] if len(parts) >= 4 and parts[0] == "agent" else "primary"

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> SessionRecord:
        return cls(
            id=row["id"], key=row["key"], parent_id=row["parent_id"], depth=row["depth"],
            profile=row["profile"], title=row["title"], model=row["model"],
            workspace=load_json(row["workspace"], f"the workspace of session {row['id']}"),
            cwd=_path(row["cwd"]), status=row["status"],
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
        )


@dataclass(frozen=True, slots=True)
class StoredMessage(_Record):
    id: int
    session_id: str
    run_id: str | None
    seq: int
    message: Message
    partial: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredMessage:
        try:
            message = Message.model_validate_json(row["body"])
        except ValidationError as err:
            raise StoreError(
                f"Message {row['id']} of session {row['session_id']} is not a valid stored message: {err}"
            ) from err
        return cls(
            id=row["id"], session_id=row["session_id"], run_id=row["run_id"], seq=row["seq"],
            message=message, partial=bool(row["partial"]),
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
        )


@dataclass(frozen=True, slots=True)
class RunRecord(_Record):
    id: str
    session_id: str
    parent_run_id: str | None
    profile: str
    model: str | None
    prompt: str
    status: RunStatus
    result: Any
    usage: Usage
    cost: float | None
    error: str | None
    label: str | None
    workflow: str | None
    worktree: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    pid: int | None
    options: dict[str, Any]
    """Spawn options (timeout, session_context, cleanup, mode, parent ids…); {} for a plain run."""
    turns: int = 0
    """Model requests it made so far."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RunRecord:
        run_id = row["id"]
        try:
            status = RunStatus(row["status"])
            usage = Usage.model_validate_json(row["usage"]) if row["usage"] else Usage()
        except (ValueError, ValidationError) as err:
            raise StoreError(f"Run {run_id} holds an invalid status or usage: {err}") from err
        return cls(
            id=run_id, session_id=row["session_id"], parent_run_id=row["parent_run_id"],
            profile=row["profile"], model=row["model"], prompt=row["prompt"], status=status,
            result=load_json(row["result"], f"the result of run {run_id}"), usage=usage,
            cost=row["cost"], error=row["error"], label=row["label"], workflow=row["workflow"],
            worktree=row["worktree"], created_at=datetime.fromisoformat(row["created_at"]),
            started_at=parse_ts(row["started_at"]), finished_at=parse_ts(row["finished_at"]),
            pid=row["pid"], options=load_json(row["options"], f"the options of run {run_id}") or {},
            turns=row["turns"] or 0,
        )


@dataclass(frozen=True, slots=True)
class RunBrief:
    """What a listing of many runs shows of each (`Store.run_briefs`): no prompt, no result, no message."""

    id: str
    session_id: str
    profile: str
    label: str | None
    status: RunStatus
    cost: float | None
    error: str | None
    """At most its first 300 characters."""
    tokens: int
    started_at: datetime | None
    finished_at: datetime | None
    pid: int | None
    mode: str
    """`in_process`, `tmux`, `detached`, `external`."""
    pane: tuple[str, str, str] | None
    """A tmux-mode run's (server, window, pane id)."""
    cwd: str | None
    """Its session's project directory."""
    parent_session_id: str | None
    """Its session's parent session."""


@dataclass(frozen=True, slots=True)
class TreeTotals:
    """What a tree of runs spent (`Store.tree_totals`)."""

    tokens: int
    cost: float
    """Dollars of the runs whose price is known."""
    unpriced_tokens: int
    """Tokens of runs whose price is not known (counted in `tokens`, not in `cost`)."""
    turns: int
    runs: int


@dataclass(frozen=True, slots=True)
class InboxItem(_Record):
    id: int
    session_id: str
    """The recipient."""
    run_id: str | None
    kind: str
    title: str
    body: str
    data: dict[str, Any] | None
    """Structured extras (a verdict, an interjection's severity, …)."""
    status: InboxStatus
    dedupe_key: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def payload(self) -> InboxPayload:
        """`data` as its kind says (yeetui.store.payloads): a completion, an interjection, an orchestrator's step…"""
        return payload_of(self.kind, self.data)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> InboxItem:
        return cls(
            id=row["id"], session_id=row["session_id"], run_id=row["run_id"], kind=row["kind"],
            title=row["title"], body=row["body"],
            data=load_json(row["data"], f"the data of inbox item {row['id']}"), status=row["status"],
            dedupe_key=row["dedupe_key"], created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
        )


@dataclass(frozen=True, slots=True)
class Breadcrumb(_Record):
    id: int
    session_id: str
    child_session_id: str | None
    run_id: str | None
    summary: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Breadcrumb:
        return cls(
            id=row["id"], session_id=row["session_id"], child_session_id=row["child_session_id"],
            run_id=row["run_id"], summary=row["summary"],
            created_at=datetime.fromisoformat(row["created_at"]),
        )


@dataclass(frozen=True, slots=True)
class WorktreeRecord(_Record):
    id: str
    path: Path
    branch: str
    base_branch: str | None
    repo: Path
    owner_session_id: str | None
    status: str
    created_at: datetime
    updated_at: datetime
    kind: str = "worktree"
    """`worktree` (a git worktree of `repo`) or `clone` (a local clone of it)."""
    base_commit: str | None = None
    """The commit the branch started from: its work is `base_commit...branch`."""
    label: str | None = None
    """The run (`builder#3`) or task it was made for."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> WorktreeRecord:
        return cls(
            id=row["id"], path=Path(row["path"]), branch=row["branch"], base_branch=row["base_branch"],
            repo=Path(row["repo"]), owner_session_id=row["owner_session_id"], status=row["status"],
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
            kind=row["kind"], base_commit=row["base_commit"], label=row["label"],
        )


@dataclass(frozen=True, slots=True)
class WorkflowStateRecord(_Record):
    run_id: str
    workflow: str
    state: dict[str, Any]
    updated_at: datetime

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> WorkflowStateRecord:
        return cls(
            run_id=row["run_id"], workflow=row["workflow"],
            state=load_json(row["state"], f"the workflow state of run {row['run_id']}"),
            updated_at=datetime.fromisoformat(row["updated_at"]),
        )
