"""Agent profiles: the validated model and the field-by-field merge of layers.

Files are found and parsed by `yeetui.definitions.profile_loader.load_profiles`; this module holds what they mean.
The published JSON schema in `schemas/` is generated from these models by `yeetui.definitions.editor_schema`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from yeetui.errors import ProfileError

Capability = Literal["primary", "subtask", "watcher", "orchestrator"]
Thinking = Literal["off", "low", "medium", "high"]
PermissionAction = Literal["allow", "ask", "deny"]
RunMode = Literal["in_process", "tmux", "terminal", "headless"]
Isolation = Literal["current", "worktree", "clone"]
BashSandbox = Literal["auto", "required", "off"]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_MODEL_PATTERN = r"^([^/\s]+/\S+|strong|default|fast)$"
"""`provider/model`, or a tier (`strong`, `default`, `fast`) resolved for the user's provider."""
_STRICT = ConfigDict(extra="forbid", frozen=True)


OWNED_BRANCH_FOLDER = "yeetui/"
"""Where every branch yeetui makes lives (`refs/heads/yeetui/…`)."""


class WorkspacePolicy(BaseModel):
    """Where the agent works and whether it may change files."""

    model_config = _STRICT

    allow_writes: bool = True
    """False makes the binding read-only: write_file/edit_file are refused and bash runs sandboxed."""
    isolation: Isolation = "current"
    """`current`: the parent's checkout; `worktree`: a new git worktree; `clone`: a shallow clone."""
    branch_prefix: str = "yeetui/"
    """Prefix of the branch created for worktree/clone isolation: a folder under `yeetui/` (`yeetui/build/`),
    since a builder's bash may write that folder's refs and no others — never the user's branches."""

    @field_validator("branch_prefix")
    @classmethod
    def _owned_folder(cls, value: str) -> str:
        if not (value.startswith(OWNED_BRANCH_FOLDER) and value.endswith("/")) or ".." in value or "//" in value:
            raise ValueError(f"branch_prefix {value!r} must name a folder yeetui owns: start with "
                             f"{OWNED_BRANCH_FOLDER!r} and end with '/', like 'yeetui/build/'")
        return value
    base_branch: str | None = None
    """Branch the worktree/clone starts from; None means the current HEAD."""
    bash_sandbox: BashSandbox = "auto"
    """`auto` runs bash in an OS sandbox when one exists, `required` refuses bash without one. `off`: read-only
    profiles get no bash at all; writable ones run it unconfined (an explicit opt-out)."""
    network: bool = False
    """Whether bash may use the network inside its sandbox (writable profiles; read-only ones never do)."""


class BudgetLimits(BaseModel):
    """What a run and every subagent below it may spend together; unset: no limit of that kind. Reaching one
    halts the whole tree (`budget_exhausted`), and its owner's result says what was spent and produced."""

    model_config = _STRICT

    max_cost_usd: float | None = Field(None, gt=0)
    """US dollars (requests of models whose price is unknown count in `max_tokens` only)."""
    max_tokens: int | None = Field(None, ge=1)
    """Input plus output tokens of every request in the tree."""
    max_turns: int | None = Field(None, ge=1)
    """Model requests in the tree."""
    max_minutes: float | None = Field(None, gt=0)
    """Minutes since the run started."""


class Limits(BaseModel):
    """Bounds on one run of this profile."""

    model_config = _STRICT

    max_turns: int = Field(50, ge=1)
    """Model calls per run before it is stopped."""
    timeout: float = Field(300.0, gt=0, le=1800)
    """Wall-clock seconds per run (at most 1800); a timed-out run is cancelled and still reports."""
    max_depth: int = Field(1, ge=0, le=8)
    """Deepest session level this agent's descendants may reach (the primary session is level 0)."""
    can_spawn_children: bool = False
    """Whether the agent gets the agent tools (spawn_subagent, request_review, ...)."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Halt the run and its subagents once together they cost this many US dollars (as `budget.max_cost_usd`)."""
    max_total_tokens: int | None = Field(None, ge=1)
    """Halt the run and its subagents once together they used this many tokens (as `budget.max_tokens`)."""
    budget: BudgetLimits = Field(default_factory=BudgetLimits)
    """What the run and its subagents may spend together (see `BudgetLimits`)."""
    max_nudges: int = Field(3, ge=0)
    """How often a run that stops without an exit tool is told to continue before it waits for the user."""


class Triggers(BaseModel):
    """How the user starts this profile directly."""

    model_config = _STRICT

    slash: str | None = None
    """Slash command, e.g. `/oracle`; the rest of the input line becomes the prompt."""
    hotkey: str | None = None
    """Textual key name, e.g. `f2` or `ctrl+shift+p`; toggles a watcher or starts a subtask."""

    @field_validator("slash")
    @classmethod
    def _slash(cls, value: str | None) -> str | None:
        if value is None:
            return None
        word = value[1:]
        if not value.startswith("/") or not word or not all(c.isalnum() or c in "-_" for c in word):
            raise ValueError("a slash trigger is '/' followed by one word of letters, digits, '-' or '_', "
                             "like '/oracle'")
        return value

    @field_validator("hotkey")
    @classmethod
    def _hotkey(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or any(c.isspace() for c in value)):
            raise ValueError("a hotkey is a Textual key name without spaces, like 'f2' or 'ctrl+shift+p'")
        return value


class ExternalAgentSpec(BaseModel):
    """An agent program speaking the Agent Client Protocol, run as the profile's agent (`runner: acp`)."""

    model_config = _STRICT

    command: str = Field(min_length=1)
    """The program, found on PATH: `claude-agent-acp`, `opencode`, `codex-acp`, `gemini`."""
    args: list[str] = Field(default_factory=list)
    """Its arguments: `[acp]` for OpenCode, `[--acp]` for Gemini CLI."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for it on top of yeetui's environment (its own key, a base URL)."""
    mode: str | None = None
    """The session mode to put it in, by the agent's own id. None: the one that asks before changes
    (`default`, `manual`, `ask`, `read-only`), when it offers one — never a mode that skips its permission
    questions: an agent that offers none and starts in one that edits unasked is not run."""
    start_timeout: float = Field(60.0, gt=0, le=600)
    """Seconds it has to start and open a session (an npm package's first start can be slow)."""
    quiet_after: float = Field(60.0, gt=0, le=1800)
    """Seconds without a word from it while one of its tool calls is open, after which its run shows as waiting
    on it, and why (OpenCode passes no `task` child's permission question over ACP: it waits for an answer
    nobody is asked for)."""


class Profile(BaseModel):
    """An agent profile. Every field is optional in a file; `name` defaults to the file's stem."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="yeetui agent profile")

    name: str = Field(json_schema_extra={"pattern": NAME_PATTERN, "maxLength": 64})
    """Unique profile name (letters, digits, '.', '-', '_'); defaults to the file name without suffix."""
    description: str = ""
    """One line saying when to use this agent; shown in lists and to agents choosing a subagent."""
    capabilities: list[Capability] = Field(default_factory=lambda: list[Capability](["subtask"]))
    """Roles the profile may run in: `primary` (the conversation), `subtask` (spawned to do a task and
    report), `watcher` (observes a conversation and interjects), `orchestrator` (plans and spawns)."""
    prompt: str = ""
    """System prompt. In a Markdown profile this is the body below the front matter."""
    model: str | None = Field(None, json_schema_extra={"pattern": _MODEL_PATTERN})
    """Model as `provider/model`, e.g. `anthropic/claude-sonnet-4-6`; None uses the configured default."""
    model_locked: bool = False
    """Always run on `model`, whatever a spawn, a workflow or `--model` asks for (e.g. a reviewer that must
    stay on one model)."""
    thinking: Thinking | None = None
    """Extended-thinking level; None uses the configured default."""
    tools: list[str] | None = None
    """Allow-list of tool names; None means every built-in tool. Exit tools are always available."""
    disallowed_tools: list[str] = Field(default_factory=list)
    """Tools removed after the allow-list is applied."""
    mcp: Literal["inherit", "none"] | list[str] = "inherit"
    """MCP servers the profile's runs may use: all the user has (`inherit`), `none`, or `server` / `server/tool`
    globs. A run in a read-only workspace gets only servers the user marked `read_only`."""
    permissions: dict[str, PermissionAction | dict[str, PermissionAction]] = Field(default_factory=dict)
    """Per tool: an action (`allow`, `ask`, `deny`), or a map from glob pattern (bash command or path)
    to action. Later patterns take precedence over earlier ones."""
    workspace: WorkspacePolicy = Field(default_factory=WorkspacePolicy)
    """Write access and isolation of the agent's workspace."""
    workflow: str | None = None
    """Name of a workflow the agent's runs follow."""
    mode: RunMode = "in_process"
    """Where runs execute: in this process, a tmux pane, an external terminal, or a detached process."""
    limits: Limits = Field(default_factory=Limits)
    """Turn, time, depth and budget limits."""
    triggers: Triggers = Field(default_factory=Triggers)
    """Slash command and hotkey that start this profile."""
    exit_tools: list[str] = Field(default_factory=lambda: ["complete"])
    """Tools that end a run (the stop rule). A run that stops without calling one is nudged to continue.
    An empty list ends the run whenever the model stops calling tools."""
    default_variables: dict[str, str] = Field(default_factory=dict)
    """Values for template variables when the spawner is not given them."""
    allowed_children: list[str] | None = None
    """Profiles this agent may spawn; None means any profile with the `subtask` capability."""
    runner: Literal["yeetui", "acp"] = "yeetui"
    """Who runs the agent: yeetui's own loop, or an external agent program over the Agent Client Protocol
    (`acp`), whose permission questions, subagents and costs show in yeetui like its own."""
    acp: ExternalAgentSpec | None = None
    """With `runner: acp`: the program to run."""

    _sources: tuple[Path, ...] = PrivateAttr(default=())
    _note: str = PrivateAttr(default="")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.fullmatch(NAME_PATTERN, value) or len(value) > 64:
            raise ValueError("a profile name is up to 64 letters, digits, '.', '-' or '_', starting with a "
                             "letter or digit")
        return value

    @field_validator("tools", mode="before")
    @classmethod
    def _all_tools(cls, value: Any) -> Any:
        """`tools: "*"` or `["*"]` means every tool, as in Claude Code and OpenCode (not none)."""
        return None if value == "*" or value == ["*"] else value

    @model_validator(mode="after")
    def _runner(self) -> Profile:
        if self.runner == "acp" and self.acp is None:
            raise ValueError("runner: acp needs `acp: {command: …}`, the agent program to run")
        return self

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(_MODEL_PATTERN, value):
            raise ValueError("a model is written 'provider/model', like 'anthropic/claude-sonnet-4-6' or "
                             "'openai/gpt-5', or is a tier: strong, default or fast")
        return value

    @property
    def sources(self) -> tuple[Path, ...]:
        """The files this profile was merged from, lowest precedence first."""
        return self._sources

    def with_sources(self, sources: tuple[Path, ...]) -> Profile:
        self._sources = sources
        return self

    @property
    def note(self) -> str:
        """Where the profile came from when that needs saying: renamed on a name collision, or a built-in
        changed by the project's own file (shown by `profiles list`)."""
        return self._note

    def with_note(self, note: str) -> Profile:
        self._note = note
        return self

    def has(self, capability: Capability) -> bool:
        return capability in self.capabilities

    @property
    def read_only(self) -> bool:
        return not self.workspace.allow_writes


def merge_fields(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Field-by-field merge of two raw profile mappings: nested mappings merge per key, everything else
    (lists included) is replaced. A key set by `override` moves to the end, so that among permission
    patterns the higher layer's come last and take precedence."""
    out = dict(base)
    for key, value in override.items():
        previous = out.pop(key, None)
        if isinstance(value, Mapping) and isinstance(previous, Mapping):
            out[key] = merge_fields(previous, value)
        else:
            out[key] = value
    return out


class ProfileFileError(ProfileError):
    """A ProfileError that knows its file and line. `warning` marks problems that did not skip a file."""

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None,
                 warning: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.warning = warning


@dataclass
class ProfileSet:
    """The loaded profiles plus every problem met while loading them (the good ones still load)."""

    profiles: dict[str, Profile] = field(default_factory=dict)
    errors: list[ProfileError] = field(default_factory=list)
    not_installed: dict[str, Profile] = field(default_factory=dict)
    """Built-in external agents (`runner: acp`) whose program is not on PATH: not offered (`doctor` lists them)."""

    def get(self, name: str) -> Profile:
        try:
            return self.profiles[name]
        except KeyError:
            known = ", ".join(sorted(self.profiles)) or "none"
            raise ProfileError(f"There is no agent profile named '{name}'. "
                               f"Known profiles: {known}.") from None

    def __contains__(self, name: object) -> bool:
        return name in self.profiles

    def __iter__(self) -> Iterator[Profile]:
        return iter(self.profiles.values())

    def names(self) -> list[str]:
        return sorted(self.profiles)

    def with_capability(self, capability: Capability) -> list[Profile]:
        return [p for p in self.profiles.values() if p.has(capability)]

    def by_slash(self, command: str) -> Profile | None:
        """The profile whose slash trigger is `command` (with or without the leading '/')."""
        wanted = "/" + command.lstrip("/").lower()
        return next((p for p in self if (p.triggers.slash or "").lower() == wanted), None)

    def by_hotkey(self, key: str) -> Profile | None:
        return next((p for p in self if (p.triggers.hotkey or "").lower() == key.lower()), None)

    def check_workflows(self, workflow_names: set[str] | Mapping[str, Any]) -> list[ProfileError]:
        """Problems for profiles naming a workflow that does not exist."""
        known = ", ".join(sorted(workflow_names)) or "none"
        return [ProfileFileError(f"Profile '{p.name}' ({_where(p)}) names the workflow '{p.workflow}', which "
                                 f"does not exist. Known workflows: {known}.",
                                 path=p.sources[-1] if p.sources else None)
                for p in self if p.workflow and p.workflow not in workflow_names]


def _where(profile: Profile) -> str:
    return str(profile.sources[-1]) if profile.sources else "built in"
