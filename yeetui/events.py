"""Typed domain events, published on the bus (`yeetui.bus.Bus`).

Every event is a frozen dataclass with a `kind` literal. The TUI, the CLI's JSON printer and tests
subscribe to these; nothing in the domain knows who is listening.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from yeetui.messages import Message, Usage


class RunStatus(StrEnum):
    """The one run state machine every surface reads."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING_PERMISSION = "waiting_permission"
    WAITING_USER = "waiting_user"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    QUOTA_EXHAUSTED = "quota_exhausted"
    """The provider refused for the account's quota or credit (its words are the run's error)."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    """Halted with its whole tree when the tree reached a limit of its budget (`yeetui.runs.budget`)."""

    @property
    def is_final(self) -> bool:
        return self in _FINAL


_FINAL = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.CANCELLED,
          RunStatus.INTERRUPTED, RunStatus.WAITING_USER, RunStatus.BUDGET_EXHAUSTED, RunStatus.QUOTA_EXHAUSTED}


@dataclass(frozen=True, slots=True)
class RunStatusChanged:
    run_id: str
    session_id: str
    status: RunStatus
    reason: str = ""
    kind: Literal["run_status"] = "run_status"


@dataclass(frozen=True, slots=True)
class TextDelta:
    run_id: str
    session_id: str
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    run_id: str
    session_id: str
    text: str
    kind: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, slots=True)
class StreamRestarted:
    """A retried provider stream diverged from what was already shown: discard the in-flight text."""

    run_id: str
    session_id: str
    kind: Literal["stream_restarted"] = "stream_restarted"


@dataclass(frozen=True, slots=True)
class MessageCommitted:
    run_id: str
    session_id: str
    message_id: int
    message: Message
    kind: Literal["message"] = "message"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    run_id: str
    session_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    activity: str = ""
    """What the call is doing in a few words (`reading app.py`), from the tool itself."""
    kind: Literal["tool_started"] = "tool_started"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    run_id: str
    session_id: str
    call_id: str
    name: str
    content: str
    is_error: bool
    kind: Literal["tool_finished"] = "tool_finished"


@dataclass(frozen=True, slots=True)
class ProviderRetrying:
    run_id: str
    session_id: str
    attempt: int
    """The attempt that failed (1-based)."""
    delay: float
    reason: str
    max_attempts: int = 0
    kind: Literal["provider_retry"] = "provider_retry"

    @property
    def text(self) -> str:
        """`retrying (2/5) in 4 s — Anthropic is overloaded (529)`: what the user reads."""
        of = f"/{self.max_attempts}" if self.max_attempts else ""
        wait = f"{self.delay:.0f} s" if self.delay >= 10 or self.delay == int(self.delay) else f"{self.delay:.1f} s"
        return f"retrying ({self.attempt + 1}{of}) in {wait} — {self.reason}"


@dataclass(frozen=True, slots=True)
class BudgetUpdated:
    """What the tree of a budget-owning run has spent against its limits (`yeetui.runs.budget`)."""

    run_id: str
    session_id: str
    against: str
    """`$0.31/$0.50 · 40k/100k tok`: spend against each limit set."""
    share: float
    """The largest share of a limit spent (1.0: reached)."""
    kind: Literal["budget"] = "budget"


@dataclass(frozen=True, slots=True)
class UsageUpdated:
    run_id: str
    session_id: str
    usage: Usage
    cost: float | None
    context_tokens: int = 0
    """The latest request's input — the context the run is using now; 0 when not known."""
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class RunModelChanged:
    """The model a run runs on is known now, or changed: an external agent said which one it chose or used."""

    run_id: str
    session_id: str
    model: str
    kind: Literal["run_model"] = "run_model"


@dataclass(frozen=True, slots=True)
class RunProgress:
    """Where a multi-step run stands (an orchestrator: `plan ✓ → build … → review`): the ledger's activity
    for its row. Progress is shown, not filed: only what needs the user or has finished goes to the inbox."""

    run_id: str
    session_id: str
    text: str
    steps: tuple[tuple[str, str], ...] = ()
    """The steps in order, each (what it does, its status: pending, running, done, failed, blocked, skipped):
    the plan a front end may show (ACP's `plan`)."""
    kind: Literal["run_progress"] = "run_progress"


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should read (a warning about a broken profile file, a retry, …)."""

    level: Literal["info", "warning", "error"]
    text: str
    session_id: str | None = None
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True, slots=True)
class RunRegistered:
    """A run exists (queued or about to start): who it is, for the ledger and the session tree."""

    run_id: str
    session_id: str
    parent_session_id: str | None
    profile: str
    label: str
    model: str
    status: RunStatus
    kind: Literal["run_registered"] = "run_registered"


@dataclass(frozen=True, slots=True)
class InboxItemAdded:
    item_id: int
    session_id: str
    """The recipient session."""
    run_id: str | None
    item_kind: str
    """`completion`, `review`, `interjection`, `orchestrator`, `permission`, …"""
    title: str
    body: str
    data: dict[str, Any] = field(default_factory=dict)
    kind: Literal["inbox_item"] = "inbox_item"


@dataclass(frozen=True, slots=True)
class LedgerChanged:
    """One ledger row changed (see yeetui.subagents.ledger.LedgerRow); `row` is None when the row was removed."""

    run_id: str
    row: Any
    kind: Literal["ledger"] = "ledger"


@dataclass(frozen=True, slots=True)
class SessionBusyChanged:
    """The primary conversation of a session started or stopped working; `queued` prompts wait."""

    session_id: str
    busy: bool
    queued: int
    kind: Literal["session_busy"] = "session_busy"


@dataclass(frozen=True, slots=True)
class WatcherChanged:
    """A pair watcher (yeetui.subagents.watcher) turned on or off, started or ended a run, or its counts
    changed.

    `session_id` is the watcher's own session; the ledger shows `label watching` while `watching` is true
    and no run of that session is in flight."""

    session_id: str
    watched_session_id: str
    label: str
    state: Literal["watching", "running", "off"]
    interjections: int = 0
    accepted: int = 0
    dismissed: int = 0
    profile: str = ""
    model: str = ""
    kind: Literal["watcher"] = "watcher"

    @property
    def watching(self) -> bool:
        """On (between runs or running one); False once turned off."""
        return self.state != "off"

    @property
    def parent_session_id(self) -> str:
        return self.watched_session_id


PermissionAnswer = Literal["allow_once", "allow_always", "deny", "unattended"]
"""`unattended`: refused because nobody could be asked (a headless run, a pane worker no yeetui follows) — the
model and the run's summary are told so, never that the user denied it."""


@dataclass(frozen=True, slots=True)
class PermissionRequested:
    """A tool call under an `ask` rule. Whoever answers resolves `reply` with a PermissionAnswer."""

    run_id: str
    session_id: str
    agent_label: str
    tool: str
    subject: str
    """What is asked about: the command for bash, the path for file tools."""
    arguments: dict[str, Any]
    reply: asyncio.Future[PermissionAnswer] = field(compare=False, repr=False)
    call_id: str = ""
    """The tool call asked about (its `ToolCallStarted` came first); empty for a question from another process."""
    kind: Literal["permission_requested"] = "permission_requested"


Event = (RunStatusChanged | TextDelta | ThinkingDelta | StreamRestarted | MessageCommitted | ToolCallStarted
         | ToolCallFinished | ProviderRetrying | RunProgress | RunModelChanged
         | UsageUpdated | BudgetUpdated | Notice
         | PermissionRequested
         | RunRegistered | InboxItemAdded | LedgerChanged | SessionBusyChanged | WatcherChanged)


def event_to_json(event: Event) -> dict[str, Any]:
    """A JSON-safe dict for `--json` output (futures dropped, messages dumped)."""
    out: dict[str, Any] = {"type": event.kind}
    for name in event.__dataclass_fields__:
        if name in ("kind", "reply"):
            continue
        value = getattr(event, name)
        if isinstance(value, Message | Usage):
            value = value.model_dump(mode="json")
        elif hasattr(value, "to_json"):
            value = value.to_json()
        out[name] = value
    return out
