"""What a run is given and what it returns: `RunOptions` (stored on the run record), `RunSpec` (everything
resolved for one execution), `RunResult` (how it ended).

`RunOptions` is the run record's `options` column, typed. It says how the run was requested and how its
ending is handled — who its parent is, whether to deliver the result there, its timeout — and it outlives
the process that made it: a detached worker or a resume reads it back with `RunOptions.of(record)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from yeetui.definitions.profiles import RunMode
from yeetui.definitions.workflows import WorkflowTracker
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.providers.base import ThinkingLevel
from yeetui.runs.budget import Budget
from yeetui.runs.mentions import Attachment
from yeetui.runs.permissions import Permissions
from yeetui.tools.base import ToolContext

Requester = Literal["user", "agent"]
Cleanup = Literal["keep", "delete"]


@dataclass(frozen=True)
class RunOptions:
    """How a run was requested and how its ending is handled; stored as the run record's `options`."""

    timeout: float | None = None
    """Seconds from the request to the end, queueing included; None: the profile's or the default."""
    parent_session_id: str | None = None
    """The session the run reports to; None for a top-level run."""
    deliver: bool = True
    """Deliver the ending to the parent (inbox item + announcement). Watchers deliver their own way."""
    blocking: bool = False
    """The requester waits for the result in the same tool call."""
    cleanup: Cleanup = "keep"
    mode: RunMode = "in_process"
    session_context: str = "none"
    requested_by: Requester = "user"
    thinking: ThinkingLevel | None = None
    watcher: bool = False
    """A pair watcher's run: not a child of the watched session for limits, listing or subtree cancel."""
    detached: bool = False
    """Executed by a `yeetui agent run` worker process of its own."""
    approve: bool = False
    """Headless `ask` permissions are allowed (`--yes`) rather than refused."""
    ask_here: bool = False
    """A pane's worker posts its `ask` questions in the store for the yeetui that follows the pane (the TUI that
    started it) instead of refusing them; `approve` still wins."""
    ask_any_yeetui: bool = False
    """Nobody follows this detached run (an MCP client started it): its `ask` questions are asked in every
    yeetui that shows dialogs, and refused as unattended when none runs; `approve` still wins."""
    ask_wait: bool = False
    """With `ask_any_yeetui`: a question waits for an answer even while no yeetui is open (a detached
    `agents start` run: the fleet view, or any TUI opened later, answers it) — up to `ask_timeout` seconds, after
    which it is refused as unattended; None: as long as the run's own timeout allows."""
    ask_timeout: float | None = None
    budget: dict[str, Any] | None = None
    """The budget the spawn (or the command that started it) gave it (`Budget.to_json`)."""
    cost_in_parent: bool = False
    """An external agent's subagent: the cost the agent reported for its parent already holds this run's, so
    its own is not priced and does not make its tree's cost unknown."""
    attempt: int = 0
    """Bumped by every resume: each attempt's ending is delivered once."""
    pane: dict[str, str] | None = None
    """A `tmux`-mode run's window: `server` (the `-L` name), `window`, `pane` id."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RunOptions:
        """Read stored options; keys this version does not know are ignored, missing ones take defaults."""
        if not _OPTION_NAMES:
            _OPTION_NAMES.update(f.name for f in fields(cls))
        return cls(**{k: v for k, v in (data or {}).items() if k in _OPTION_NAMES})

    @classmethod
    def of(cls, run: Any) -> RunOptions:
        """The options of a run record (`yeetui.store.RunRecord`)."""
        return cls.from_json(getattr(run, "options", None))

    def but(self, **changes: Any) -> RunOptions:
        return replace(self, **changes)


_OPTION_NAMES: set[str] = set()
"""RunOptions' field names, worked out once (a listing of 500 runs reads their options twice each)."""


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs, resolved up front by the launcher (profile, model, binding, rules); made
    whole by `SpecBuilder.build` (runs/spec_builder.py) and never changed after."""

    session_id: str
    profile: str
    label: str
    model: str
    system_prompt: str
    tools: list[str]
    tool_context: ToolContext
    permissions: Permissions
    prompt: str | None = None
    attachments: tuple[Attachment, ...] = ()
    """Files the prompt mentions (`@calc.py`), sent with it (see yeetui.runs.mentions)."""
    thinking: ThinkingLevel = "off"
    exit_tools: list[str] = field(default_factory=lambda: ["complete"])
    workflow: WorkflowTracker | None = None
    interactive: bool = False
    max_turns: int = 50
    timeout: float = 300.0
    max_nudges: int = 3
    budget: Budget | None = None
    """What the run and everything it spawns may spend together (`yeetui.runs.budget`)."""
    max_tokens: int = 8192
    secrets: list[str] = field(default_factory=list)
    parent_session_id: str | None = None
    compact_at: int | None = None
    """Input tokens of a turn above which the history is compacted before the next turn."""


def cancel_reason(exc: BaseException) -> str:
    """What a cancelled run's record says: `cancelled`, or `cancelled: <why>` when whoever cancelled it said
    why (`task.cancel("its tmux pane was closed")` — the message travels down to the awaiting run)."""
    why = exc.args[0] if exc.args and isinstance(exc.args[0], str) and exc.args[0] else None
    return f"cancelled: {why}" if why else "cancelled"


@dataclass
class RunResult:
    run_id: str
    session_id: str
    status: RunStatus
    output: str = ""
    result: dict[str, Any] | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    turns: int = 0
    """Model requests made."""

    def to_json(self) -> dict[str, Any]:
        return {"type": "result", "status": self.status.value, "output": self.output, "result": self.result,
                "error": self.error, "session_id": self.session_id, "run_id": self.run_id,
                "usage": self.usage.model_dump(), "cost": self.cost}


