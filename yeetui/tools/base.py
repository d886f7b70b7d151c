"""The Tool seam: a name, a pydantic argument model, and an async `run`.

Argument schemas sent to the model come from `Args.model_json_schema()`. Invalid arguments never reach
`run`: `ToolRegistry.prepare` turns them into a clear error result for the model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from yeetui.providers.base import ToolSpec
from yeetui.workspace import WorkspaceBinding


@dataclass
class ToolSettings:
    bash_timeout: float = 120.0
    """Default seconds before a bash command's process group is killed."""
    bash_max_timeout: float = 600.0
    output_cap: int = 30_000
    """Characters of tool output kept; the rest is replaced by a truncation note."""
    read_cap: int = 256_000
    """Bytes `read_file` returns at most."""


class ProcessLog(Protocol):
    """Where the process groups a tool starts are noted while they may run (the store, for crash recovery)."""

    async def started(self, pgid: int, leader_start: int | None) -> None: ...

    async def ended(self, pgid: int) -> None: ...


@dataclass
class ToolContext:
    """What a tool may touch: everything is explicit, nothing global (concurrent runs share no cwd)."""

    binding: WorkspaceBinding
    session_id: str = ""
    run_id: str = ""
    settings: ToolSettings = field(default_factory=ToolSettings)
    env: dict[str, str] | None = None
    """Environment for subprocesses; None means a scrubbed copy of os.environ (see tools.shell)."""
    agents: object | None = None
    """The calling run's `yeetui.subagents.host.AgentHost` when it may use agent tools; None otherwise. Typed
    `object` here because the tools layer sits below the subagents: only the agent tools
    (yeetui.subagents.tools) use it, and they check its type."""
    mcp: object | None = None
    """The run's `yeetui.runs.mcp_tools.McpAccess` when its profile may use MCP servers; typed `object` for the
    same reason as `agents`."""
    processes: ProcessLog | None = None
    shell_prelude: Callable[[], str] | None = None
    """What runs before each bash command (what the session's SessionStart hooks wrote in `CLAUDE_ENV_FILE`,
    which Claude Code sources so), as it is when the command runs; None: nothing."""
    for_hooks: bool = False
    """A PostToolUse hook reads this call's response in Claude Code's shape: `write_file` keeps the text it
    overwrites (`originalFile`), which it reads only then."""
    hermetic_git: bool = False
    """Set for one call that a permission rule allowed without asking: its git reads no config from the
    repository that runs programs (`yeetui.system.git.hermetic_env`)."""


@dataclass(frozen=True)
class ToolOutput:
    content: str
    is_error: bool = False
    data: dict[str, Any] | None = None
    """Structured result for the runner (e.g. the validated arguments of `complete`)."""


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    writes: ClassVar[bool] = False
    """Changes files (or may, like `bash`): read-only bindings never get it, and `ask` rules apply."""
    parallel_safe: ClassVar[bool] = False
    """Several calls of it in one model turn may run at once (no writes, no ordering between them)."""
    spawns: ClassVar[bool] = False
    """An agent tool: offered only to runs whose profile and depth allow subagents."""
    needs_mcp: ClassVar[bool] = False
    """Offered only to runs that may use MCP servers (`mcp_load`)."""
    exit: ClassVar[bool] = False
    """Ends the run (`complete`, `ask_user`): offered as the profile's stop rule says."""
    _spec_cache: ClassVar[ToolSpec | None] = None
    """`spec()` of this very class, set in its own `__dict__` (a subclass never reads its parent's)."""

    def activity(self, args: dict[str, Any]) -> str:
        """What a call is doing, in a few words, for the status ledger (`reading app.py`)."""
        return f"calling {self.name}"

    def spec(self) -> ToolSpec:
        """Built once per tool class (pydantic's schema generation costs milliseconds per call)."""
        cached = type(self).__dict__.get("_spec_cache")
        if cached is None:
            schema = self.Args.model_json_schema()
            schema.pop("title", None)
            cached = ToolSpec(name=self.name, description=self.description, input_schema=schema)
            type(self)._spec_cache = cached
        return cached

    def subject(self, args: BaseModel) -> str:
        """What permission patterns match against: the path or command. Default: empty."""
        return str(getattr(args, "path", "") or getattr(args, "command", "") or "")

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput: ...
