"""A run's spec, built: what a profile gets for one run — the workspace it may touch, the tools it is offered, the
MCP servers it may use, its system prompt, permissions, limits and budget — resolved into a `RunSpec`.

`SpecBuilder` is the launcher's (`RunLauncher.specs`); the launcher's `build_spec` is its `build`. A run on a
model without a known price that a dollar limit would hold is refused here before it is written
(`refuse_uncountable`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from yeetui import paths
from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile, ProfileSet
from yeetui.definitions.workflows import Workflow, WorkflowTracker
from yeetui.errors import WorkflowError, YeetuiError
from yeetui.events import Notice
from yeetui.mcp.client import McpConnections
from yeetui.providers.base import ThinkingLevel
from yeetui.providers.pricing import price_for
from yeetui.runs.budget import Budget, BudgetError, uncountable
from yeetui.runs.budget_keeper import BudgetKeeper
from yeetui.runs.mcp_tools import McpAccess, server_allowed
from yeetui.runs.mentions import Attachment, read_mentions
from yeetui.runs.permissions import Permissions
from yeetui.runs.prompting import build_system_prompt, read_context_files
from yeetui.runs.spec import RunOptions, RunSpec
from yeetui.settings.config import Settings
from yeetui.store import Store
from yeetui.store.records import SessionRecord
from yeetui.tools.base import ToolContext, ToolSettings
from yeetui.tools.registry import ToolRegistry
from yeetui.workspace import BashSandbox, WorkspaceBinding

log = logging.getLogger(__name__)


class AgentHostFactory(Protocol):
    """Makes the host a run's agent tools act through (yeetui.subagents.host.AgentHost, set by the runtime:
    this layer cannot name it, hence `object`; the agent tools check what they get)."""

    def __call__(self, *, session_id: str, run_id: str, label: str) -> object: ...


def own_checkout(session: SessionRecord) -> Path | None:
    """The worktree or clone a session was given to work in (`workspace.mode`), or None for the project's
    checkout. A session whose worktree is gone cannot run: it would write into the wrong place."""
    workspace = session.workspace or {}
    if workspace.get("mode") not in ("worktree", "clone") or session.cwd is None:
        return None
    if not os.path.isdir(session.cwd):
        raise YeetuiError(f"The {workspace['mode']} of session {session.id[:12]} ({session.cwd}, branch "
                          f"{workspace.get('branch', '?')}) is gone; it was merged, discarded or deleted, so this "
                          "session cannot run again.")
    return session.cwd


class SpecBuilder:
    """What each run of this process is given, from its profile, its session and the config."""

    def __init__(self, *, settings: Settings, store: Store, bus: Bus, profiles: ProfileSet,
                 workflows: Mapping[str, Workflow], registry: ToolRegistry, project_dir: Path,
                 env: Mapping[str, str], secrets: list[str], mcp: McpConnections | None,
                 budgets: BudgetKeeper) -> None:
        self.settings = settings
        self.store = store
        self.bus = bus
        self.profiles = profiles
        self.workflows = workflows
        self.registry = registry
        self.project_dir = project_dir
        self.env = env
        self.secrets = secrets
        """Values to redact from anything written or shown (keys from the environment and the config)."""
        self.mcp = mcp
        self.budgets = budgets
        """The budgets of this process's runs: a live run's dollar limit holds for the runs below it."""
        self.agent_host: AgentHostFactory | None = None
        """Makes the agent host a run that may spawn is given (set by the runtime; None: no run spawns)."""
        self.session_env: Callable[[list[str]], str] | None = None
        """What the SessionStart hooks of these sessions wrote in `CLAUDE_ENV_FILE` (`HookRunner.env_script`):
        each bash command of a run in one of them, or below one, runs it first."""

    def binding_for(self, profile: Profile, cwd: Path | None = None,
                    workspace: Mapping[str, Any] | None = None) -> WorkspaceBinding:
        """What a run may touch: the project, or (`cwd` with its session's `workspace`) the worktree or clone
        the session was given — whose bash then runs in an OS sandbox that can write only there."""
        own = workspace if cwd is not None and workspace else {}
        return WorkspaceBinding(
            cwd=cwd or self.project_dir,
            mode=own.get("mode", "shared"),
            allow_writes=profile.workspace.allow_writes,
            protected=(paths.config_dir(self.env), paths.data_dir(self.env)),
            bash_sandbox=_strictest(profile, self.settings.tools.bash_sandbox),
            git_writable=tuple(Path(p) for p in own.get("git_writable", ())),
            git_readable=tuple(Path(p) for p in own.get("git_readable", ())),
            network=profile.workspace.network or self.settings.tools.bash_network,
        )

    def may_spawn(self, profile: Profile, depth: int) -> bool:
        return (self.agent_host is not None and profile.limits.can_spawn_children
                and depth < profile.limits.max_depth)

    def offered_tools(self, profile: Profile, binding: WorkspaceBinding, *, depth: int = 0,
                      mcp: bool = False) -> list[str]:
        """The tools the model is offered: the profile's choice, less what the binding or depth forbids, plus
        the exit tools (and `mcp_load` when the run may use MCP servers). Each tool says what it is (`writes`,
        `spawns`, `exit`, `needs_mcp`); no name lists here."""
        exits = self.exit_tools(profile)
        offered, ending = [], []
        for tool in self.registry.tools():
            if tool.exit:
                if tool.name == "complete" or tool.name in exits:
                    ending.append(tool.name)
            elif tool.name in profile.disallowed_tools:
                continue
            elif tool.needs_mcp:
                if mcp:
                    offered.append(tool.name)
            elif tool.spawns:
                if self.may_spawn(profile, depth):
                    offered.append(tool.name)
            elif (profile.tools is None or tool.name in profile.tools) and (binding.allow_writes or not tool.writes):
                offered.append(tool.name)
        return offered + ending

    def mcp_access(self, profile: Profile, binding: WorkspaceBinding) -> McpAccess | None:
        """Which of the process's MCP servers a run of `profile` may use (None: none): the profile's `mcp`,
        and in a read-only workspace only the servers the user marked read-only."""
        if self.mcp is None or profile.mcp == "none" or "mcp_load" in profile.disallowed_tools:
            return None
        denied = [name for name in profile.disallowed_tools if name.startswith("mcp__")]
        servers = [name for name in self.mcp.names() if server_allowed(profile.mcp, name)
                   and (binding.allow_writes or self.mcp.spec(name).read_only)
                   and not {f"mcp__{name}", f"mcp__{name}__*"} & set(denied)]
        return McpAccess(self.mcp, servers, profile.mcp, self.registry, denied=denied,
                         index_wait=self.settings.mcp_index_wait) if servers else None

    async def _shell_prelude(self, session: SessionRecord) -> Callable[[], str] | None:
        """What runs before each of the run's bash commands: the `CLAUDE_ENV_FILE` scripts of its session and
        the sessions above it, as they are when the command runs (None: no SessionStart hook could write one)."""
        if self.session_env is None:
            return None
        chain = [session.id]
        above = session.parent_id
        while above is not None and len(chain) <= session.depth:
            chain.append(above)
            parent = await self.store.get_session(above)
            above = parent.parent_id if parent is not None else None
        session_env = self.session_env
        return lambda: session_env(chain)

    @staticmethod
    def exit_tools(profile: Profile) -> list[str]:
        """The profile's exit tools; a profile with a stop rule can always also end by asking the user."""
        tools = list(profile.exit_tools)
        return [*tools, "ask_user"] if tools and "ask_user" not in tools else tools


    async def build(self, *, session: SessionRecord, profile: Profile, prompt: str | None, model: str,
                         interactive: bool = False, label: str | None = None, parent_session_id: str | None = None,
                         run_id: str = "", thinking: ThinkingLevel | None = None, deadline: float | None = None,
                         attach_mentions: bool = False, budget: Budget | None = None) -> RunSpec:
        """The run's spec, whole. `thinking` overrides the profile's and the config's level; `deadline` (event
        loop time) sets the timeout to what is left of it once the spec is made (a queued child's wait counts
        against its time), else the profile's timeout holds; `attach_mentions`: the files `prompt` mentions
        go with it (the user's own prompt), and those that cannot are reported as notices. `budget` tightens
        the run's budget (a command's `--max-cost`)."""
        binding = self.binding_for(profile, cwd=own_checkout(session), workspace=session.workspace)
        attachments: tuple[Attachment, ...] = ()
        if attach_mentions and prompt:
            found, problems = await asyncio.to_thread(read_mentions, prompt, binding)
            attachments = tuple(found)
            for problem in problems:
                self.bus.publish(Notice("warning", problem, session.id))
        workflow = None
        if profile.workflow:
            if profile.workflow not in self.workflows:
                raise WorkflowError(f"Profile {profile.name!r} names workflow {profile.workflow!r}, which is not "
                                    f"defined (known: {', '.join(sorted(self.workflows)) or 'none'}).")
            workflow = WorkflowTracker(self.workflows[profile.workflow])
        system = build_system_prompt(
            profile_prompt=profile.prompt, cwd=binding.cwd, read_only=not binding.allow_writes,
            exit_tools=self.exit_tools(profile), interactive=interactive,
            context_files=read_context_files(binding.cwd, self.settings.context_files, self.secrets),
        )
        tool_settings = ToolSettings(bash_timeout=self.settings.tools.bash_timeout,
                                     bash_max_timeout=self.settings.tools.bash_max_timeout,
                                     output_cap=self.settings.tools.output_cap)
        permissions = Permissions.merge(Permissions.from_config(self.settings.permissions),
                                        Permissions.from_config(profile.permissions))
        permissions.remember_all(await self.store.remembered_permissions(session.id))  # the dialog's "Always"
        limits = profile.limits
        mcp = self.mcp_access(profile, binding)
        if mcp is not None:
            system += "\n\n" + await mcp.index()
        agents = None
        if self.agent_host is not None and self.may_spawn(profile, session.depth):
            agents = self.agent_host(session_id=session.id, run_id=run_id, label=label or profile.name)
        timeout = limits.timeout
        if deadline is not None:
            timeout = max(deadline - asyncio.get_running_loop().time(), 0.001)
        return RunSpec(
            session_id=session.id, profile=profile.name, label=label or profile.name, model=model,
            system_prompt=system, tools=self.offered_tools(profile, binding, depth=session.depth, mcp=mcp is not None),
            tool_context=ToolContext(binding=binding, session_id=session.id, run_id=run_id, settings=tool_settings,
                                     agents=agents, mcp=mcp, processes=self.store.tool_processes.run_log(run_id),
                                     shell_prelude=await self._shell_prelude(session)),
            permissions=permissions,
            prompt=prompt, attachments=attachments,
            thinking=thinking or profile.thinking or self.settings.thinking or "off",
            exit_tools=self.exit_tools(profile), workflow=workflow, interactive=interactive,
            max_turns=limits.max_turns, timeout=timeout, max_nudges=limits.max_nudges,
            budget=await self._budget(profile, run_id, parent_session_id, budget),
            max_tokens=self.settings.max_tokens, secrets=self.secrets, parent_session_id=parent_session_id,
            compact_at=self.settings.compact_at_tokens,
        )

    async def _budget(self, profile: Profile, run_id: str | None, parent_session_id: str | None,
                      given: Budget | None) -> Budget | None:
        """The run's budget: the tightest of its profile's, the one its spawn or command gave it (stored on the
        run), `given`, and — for a top-level run — the config's."""
        budget = self._limits(profile, given, top=parent_session_id is None)
        run = await self.store.get_run(run_id) if run_id is not None else None
        if run is not None:
            try:
                budget = budget.tighter(Budget.from_json(RunOptions.of(run).budget))
            except ValueError as exc:
                log.warning("run %s: its stored budget is ignored: %s", run_id, exc)
        return budget if budget.is_set else None

    def _limits(self, profile: Profile, given: Budget | None, *, top: bool) -> Budget:
        """The tightest of the profile's limits, `given`, and — `top`, a top-level run — the config's."""
        limits = profile.limits
        budget = Budget(max_cost_usd=limits.max_cost_usd, max_tokens=limits.max_total_tokens).tighter(
            Budget(**limits.budget.model_dump())).tighter(given)
        return budget.tighter(Budget(**self.settings.budget.model_dump())) if top else budget

    async def refuse_uncountable(self, profile: Profile, model: str, *, budget: Budget | None = None,
                                 parent_session_id: str | None = None) -> None:
        """Refuse (BudgetError), before it starts, a run of `profile` on `model` that a dollar limit would hold
        when yeetui knows no price for `model`: its spend could not be counted, and the limit would not hold.
        The limit is the run's own (its profile's, `budget`, for a top-level run the config's) or that of a
        live run above it (`parent_session_id` up), in this process or another."""
        if price_for(model, self.settings.prices) is not None:
            return
        own = self._limits(profile, budget, top=parent_session_id is None).max_cost_usd
        found = (own, None) if own is not None else await self._cost_limit_above(parent_session_id)
        if found is None:
            return
        limit, owner = found
        raise BudgetError(uncountable(model, limit, owner=owner, config=paths.config_dir(self.env) / "config.yaml"))

    async def _cost_limit_above(self, session_id: str | None) -> tuple[float, str] | None:
        """The dollar limit of the nearest live run, from session `session_id` up, that has one, and its label:
        a run of this process as its budget keeper holds it, else the live run of another process as its record
        and profile give it."""
        while session_id is not None:
            session = await self.store.get_session(session_id)
            if session is None:
                return None
            if (held := self.budgets.cost_limit_in(session.id)) is not None:
                return held
            runs = await self.store.list_runs(session_id=session.id, limit=1)
            if runs and not runs[0].status.is_final and session.profile in self.profiles.profiles:
                try:
                    stored = Budget.from_json(RunOptions.of(runs[0]).budget)
                except ValueError:
                    stored = None  # ignored by its own process too
                limit = self._limits(self.profiles.get(session.profile), stored,
                                     top=session.parent_id is None).max_cost_usd
                if limit is not None:
                    return limit, runs[0].label or session.profile
            session_id = session.parent_id
        return None


def _strictest(profile: Profile, configured: str) -> BashSandbox:
    """The config's `tools.bash_sandbox: required` holds for every profile that would run bash without a
    sandbox — a writable one that says `off` too; a read-only one's `off` (no bash at all) is stricter still."""
    mode = profile.workspace.bash_sandbox
    if configured == "required" and not (mode == "off" and not profile.workspace.allow_writes):
        return "required"
    if configured == "unshielded" and mode == "auto":
        return "unshielded"
    return mode
