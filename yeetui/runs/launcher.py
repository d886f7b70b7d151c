"""The launcher: the only code that creates a run record, builds a run's spec and executes it.

Every run — the primary conversation's turn, a subagent, a pair watcher's look, a detached worker's job —
is written by `create_run` (one writer, typed `RunOptions`), resolved into a `RunSpec` by `build_spec`
(profile, model, tools, rules, prompt) and executed by `execute`, which runs the agent loop or, for a
profile with a capability that has a run engine (the orchestrator), that engine instead.

The launcher knows nothing of other runs. What it needs from the code that manages many runs it is handed
when the runtime wires things together: the run engines (`engines`), the agent host given to a run that may
spawn (`agent_host`), the hook that stops a run's children when it is cancelled (`on_cancel_children`),
and the mailroom that brings announcements into a run between turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

from yeetui import paths
from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile, ProfileSet
from yeetui.definitions.workflows import Workflow, WorkflowTracker
from yeetui.errors import StoreError, WorkflowError, YeetuiError
from yeetui.events import MessageCommitted, Notice, RunRegistered, RunStatus
from yeetui.framing import framed
from yeetui.hooks.runner import HookRunner
from yeetui.mcp.client import McpConnections
from yeetui.messages import Message
from yeetui.providers.base import Provider, ThinkingLevel, split_model
from yeetui.providers.pricing import context_with, price_for
from yeetui.providers.tiers import TIERS, is_tier, tier_model
from yeetui.runs.budget import Budget, BudgetError, uncountable
from yeetui.runs.budget_keeper import BudgetKeeper
from yeetui.runs.compaction import compaction_message, redeliver_unseen, summarise
from yeetui.runs.external_run import ExternalRun
from yeetui.runs.history import repair_history
from yeetui.runs.mcp_tools import McpAccess, server_allowed
from yeetui.runs.mentions import Attachment, read_mentions
from yeetui.runs.permissions import Permissions
from yeetui.runs.prompting import build_system_prompt, read_context_files
from yeetui.runs.runner import BeforeTurn, Runner
from yeetui.runs.slots import RunSlots
from yeetui.runs.spec import RunOptions, RunResult, RunSpec
from yeetui.runs.tool_executor import ToolExecutor
from yeetui.settings.config import Settings
from yeetui.store import Store
from yeetui.store.records import RunRecord, SessionRecord
from yeetui.text import title_from
from yeetui.tools.base import ToolContext, ToolSettings
from yeetui.tools.registry import ToolRegistry
from yeetui.workspace import BashSandbox, WorkspaceBinding

RunEngine = Callable[[RunSpec, str], Awaitable[RunResult]]
"""Runs a spec to its end in place of the agent loop (`engines`, keyed by profile capability)."""
log = logging.getLogger(__name__)


class AgentHostFactory(Protocol):
    """Makes the host a run's agent tools act through (yeetui.subagents.host.AgentHost, set by the runtime:
    this layer cannot name it, hence `object`; the agent tools check what they get)."""

    def __call__(self, *, session_id: str, run_id: str, label: str) -> object: ...


class Mailroom(Protocol):
    """What the launcher needs of delivery (yeetui.subagents.inbox.Delivery): to hold announcements while a
    session is mid-run and hand them over between turns."""

    async def begin_run(self, session_id: str) -> None: ...
    async def end_run(self, session_id: str) -> None: ...
    async def flush(self, session_id: str) -> list[Message]: ...


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


class RunLauncher:
    def __init__(self, *, settings: Settings, store: Store, bus: Bus, profiles: ProfileSet,
                 workflows: Mapping[str, Workflow], registry: ToolRegistry, project_dir: Path,
                 env: Mapping[str, str], secrets: list[str], mailroom: Mailroom,
                 create_provider: Callable[[str], tuple[Provider, str]], slots: RunSlots | None = None,
                 model_override: str | None = None, mcp: McpConnections | None = None,
                 hooks: HookRunner | None = None) -> None:
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
        self.mailroom = mailroom
        self.slots = slots or RunSlots(store)
        """Run slots shared by every yeetui process on the data dir; headless runs and subagents take one."""
        self.mcp: Final = mcp
        """The process's MCP servers (one connection each, shared by its runs); None: none configured."""
        self.model_override: Final = model_override
        """`--model` given to this process: every run it starts uses it, subagents included."""
        self.engines: dict[str, RunEngine] = {}
        self._fell_back: set[tuple[str, str]] = set()
        """(profile, model) pairs already told about running on another model instead."""
        self.agent_host: AgentHostFactory | None = None
        self._create_provider = create_provider
        self._providers: dict[str, tuple[Provider, str]] = {}
        self._cancel_children: list[Callable[[str], Awaitable[None]]] = []
        self.hooks: Final = hooks
        """The user's lifecycle hooks (None: none configured; see yeetui.hooks)."""
        self._hooked: set[str] = set()
        """Sessions whose SessionStart hooks ran in this process."""
        self.budgets: Final = BudgetKeeper(store, bus)
        """The budgets of this process's runs: watched, warned about, their trees halted (see yeetui.runs.budget)."""

    def on_cancel_children(self, hook: Callable[[str], Awaitable[None]]) -> None:
        """Call `hook(session_id)` when a run of that session is cancelled, to stop its subtree."""
        self._cancel_children.append(hook)

    # -- providers ---------------------------------------------------------------------------------

    def provider(self, model: str) -> tuple[Provider, str]:
        """The provider for `provider/model` (created once), and the bare model id."""
        if model not in self._providers:
            split_model(model)  # a clear error for a name without a provider prefix
            self._providers[model] = self._create_provider(model)
        return self._providers[model]

    async def aclose(self) -> None:
        if self.hooks is not None:
            await self.hooks.close()
        for provider, _ in self._providers.values():
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                await aclose()

    # -- what a profile gets -----------------------------------------------------------------------

    def resolve_model(self, profile: Profile, requested: str | None = None, *, within: str | None = None) -> str:
        """The model of a run, first found of: the process's `--model` (`model_override`), the model asked
        for (a spawn's `model`, the session's `/model`), the profile's workflow's `model`, the profile's
        `model`, the model the user chose (`within`, else the config default, which YEETUI_MODEL feeds). A
        profile with `model_locked` keeps its own.

        `within` is the model the user chose for the tree the run joins (`tree_model`: the window's `/model`
        or `--model`, as its conversation runs on it). A tier (`strong`, `default`, `fast`) resolves for that
        model's provider — or, when that provider has no key, for one that has (see `_tier`); a model a
        profile or workflow names whose provider has no key gives way to the chosen model (see `_usable`)."""
        chosen = within or self.settings.model
        if profile.model_locked and profile.model:
            return self._tier(profile.model, chosen)
        if self.model_override:
            return self.model_override
        workflow = self.workflows.get(profile.workflow) if profile.workflow else None
        model = self._tier(requested or (workflow.model if workflow else None) or profile.model or chosen, chosen)
        split_model(model)
        return self._usable(model, profile, chosen)

    async def tree_model(self, session_id: str | None) -> str | None:
        """The model the user chose for the tree session `session_id` belongs to: the model of its top session,
        the conversation the user talks to (kept current by `run_prompt`: the window's `/model`, `--model`, the
        config default), which its subagents' tiers follow. None without a session."""
        session = await self.store.get_session(session_id) if session_id else None
        while session is not None and session.parent_id is not None:
            session = await self.store.get_session(session.parent_id)
        return session.model if session is not None else None

    async def choose_model(self, session_id: str, model: str) -> None:
        """The user chose `model` for the conversation `session_id` (the window's `/model`): the session runs on it
        from now, so a subagent spawned before its next turn (`/oracle` right after `/model`) follows it too."""
        session = await self.store.get_session(session_id)
        if session is None or session.profile not in self.profiles.profiles:
            return
        chosen = self.resolve_model(self.profiles.get(session.profile), model, within=model)
        if session.model != chosen:
            await self.store.update_session(session_id, model=chosen)

    def _keyed(self, model: str) -> bool:
        """Whether requests to `model`'s provider can be made (it has a key, or needs none)."""
        return self.provider(model)[0].missing_credentials() is None

    def _tier(self, model: str, chosen: str) -> str:
        """`model`, or the model of the tier it names: the config's (`models: {strong: …}`), else the tier of
        `chosen`'s provider — or, when that provider has no key, the tier of the first provider of the tiers
        table that has one (an OpenAI user's oracle runs on OpenAI's strong model, whatever the default says)."""
        if not is_tier(model):
            return model
        configured = {str(tier): name for tier, name in self.settings.models.items() if name}
        if model in configured:
            return configured[model]
        resolved = tier_model(model, chosen)
        if self._keyed(resolved):
            return resolved
        for provider, table in TIERS.items():
            candidate = tier_model(model, f"{provider}/{table['default']}")
            if self._keyed(candidate):
                return candidate
        return resolved  # no key for any: the run says which key is missing

    def _usable(self, model: str, profile: Profile, chosen: str) -> str:
        """`model`, or — when `model`'s provider has no key — the model the user chose (or, that one's provider
        keyless too, the default tier of a provider with a key): a profile pinned to another provider
        (`anthropic/…` for an OpenAI user) runs, with a notice naming both models, rather than fails."""
        if model == chosen or self._keyed(model):
            return model
        instead = chosen if self._keyed(chosen) else self._tier("default", chosen)
        if instead == model or not self._keyed(instead):
            return model  # no key for either: the run says which key is missing
        if (profile.name, model) not in self._fell_back:
            self._fell_back.add((profile.name, model))
            asked = f" ({profile.sources[-1]})" if profile.sources else ""
            self.bus.publish(Notice("warning", f"Profile {profile.name!r}{asked} asks for {model}, but there is no "
                                    f"key for {model.partition('/')[0]}; it runs on {instead} instead."))
        return instead

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

    @staticmethod
    def exit_tools(profile: Profile) -> list[str]:
        """The profile's exit tools; a profile with a stop rule can always also end by asking the user."""
        tools = list(profile.exit_tools)
        return [*tools, "ask_user"] if tools and "ask_user" not in tools else tools

    # -- records -----------------------------------------------------------------------------------

    async def new_session(self, profile: Profile, *, title: str = "", model: str | None = None,
                          parent_id: str | None = None, key: str | None = None,
                          origin: str = "primary") -> SessionRecord:
        """A new session; a top-level one says where it came from (`origin`: `primary` for the app's
        conversations, `run`, `detached`), so `--continue` and the switcher can tell them apart."""
        return await self.store.create_session(profile=profile.name, title=title[:80], model=model,
                                               parent_id=parent_id, key=key, cwd=str(self.project_dir),
                                               origin=origin)

    async def allocate_label(self, profile: Profile) -> str:
        """`oracle#4`: the next number of `profile` in this data dir, taken atomically for good."""
        return await self.store.allocate_label(profile.name)

    async def create_run(self, session: SessionRecord, profile: Profile, *, model: str, prompt: str,
                         label: str | None = None, options: RunOptions | None = None,
                         parent_run_id: str | None = None, max_children: int | None = None) -> RunRecord:
        """Write a run record (status queued): the one place runs are created. Without `label` the run is
        numbered (`oracle#4`, unique in the data dir); with `max_children` it is refused (ChildLimitReached)
        when its parent session already has that many live children — both decided atomically, across
        processes. A run on a model without a known price under a dollar limit is refused here, before it is
        written (`refuse_uncountable`)."""
        given = None
        if options is not None and options.budget is not None:
            with contextlib.suppress(ValueError):  # a bad stored budget is ignored (and logged) by `_budget`
                given = Budget.from_json(options.budget)
        await self.refuse_uncountable(profile, model, budget=given, parent_session_id=session.parent_id)
        return await self.store.create_run(
            session_id=session.id, profile=profile.name, model=model, prompt=prompt, label=label,
            parent_run_id=parent_run_id, workflow=profile.workflow,
            options=options.to_json() if options is not None else None, max_children=max_children)

    # -- specs -------------------------------------------------------------------------------------

    async def build_spec(self, *, session: SessionRecord, profile: Profile, prompt: str | None, model: str,
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
                                     agents=agents, mcp=mcp, processes=self.store.tool_processes.run_log(run_id)),
            permissions=permissions,
            prompt=prompt, attachments=attachments,
            thinking=thinking or profile.thinking or self.settings.thinking or "off",
            exit_tools=self.exit_tools(profile), workflow=workflow, interactive=interactive,
            max_turns=limits.max_turns, timeout=timeout, max_nudges=limits.max_nudges,
            budget=await self._budget(profile, run_id, parent_session_id, budget),
            max_tokens=self.settings.max_tokens, secrets=self.secrets, parent_session_id=parent_session_id,
            compact_at=self.settings.compact_at_tokens,
        )

    def runner(self) -> Runner:
        executor = ToolExecutor(self.registry, self.bus, output_cap=self.settings.tools.output_cap, hooks=self.hooks)
        retry = self.settings.retry
        return Runner(store=self.store, bus=self.bus, executor=executor, providers=self.provider,
                      retry_attempts=retry.max_attempts, retry_base_delay=retry.base_delay,
                      retry_max_delay=retry.max_delay, after_request=self.budgets.after_request,
                      halted=lambda run_id: self.budgets.halt_of(run_id) is not None,
                      quota_hold_minutes=self.settings.quota_hold_minutes, hooks=self.hooks)

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

    # -- running -----------------------------------------------------------------------------------

    async def run_prompt(self, prompt: str | None, *, profile_name: str | None = None, model: str | None = None,
                         session_id: str | None = None, interactive: bool = False,
                         budget: Budget | None = None) -> RunResult:
        """Run `prompt` in a new session (or continue `session_id`) with the profile's agent, to the end."""
        if session_id is not None:
            session = await self.store.resolve_session(session_id)
            profile = self.profiles.get(profile_name or session.profile)
        else:
            profile = self.profiles.get(profile_name or self.settings.primary_profile)
            session = None
        chosen = self.resolve_model(profile, model, within=model)
        await self.refuse_uncountable(profile, chosen, budget=budget)  # before anything is written
        if session is None:
            session = await self.new_session(profile, title=title_from(prompt or ""), model=chosen,
                                             origin="primary" if interactive else "run")
        else:
            changes: dict[str, str] = {}
            if session.model != chosen:  # what it runs on now: its subagents' tiers follow it (`tree_model`)
                changes["model"] = chosen
            if not session.title and prompt and not session.parent_id:
                # A primary session is named by its first prompt, once: a stable title for the header and the
                # switcher (run labels change with every run).
                changes["title"] = title_from(prompt)
            if changes:
                session = await self.store.update_session(session.id, **changes)
        if self.hooks is not None and prompt is not None:
            prompt, refused = await self._prompt_hooks(session.id, prompt, created=session.id not in self._hooked)
        else:
            refused = None
        run = await self.create_run(session, profile, model=chosen, prompt=prompt or "")
        label = run.label or profile.name
        if refused is not None:  # a UserPromptSubmit hook blocked it: nothing is sent
            await self.store.update_run(run.id, status=RunStatus.FAILED, error=refused)
            self.bus.publish(RunRegistered(run.id, session.id, None, profile.name, label, chosen, RunStatus.FAILED))
            self.bus.publish(Notice("warning", refused, session.id))
            return RunResult(run_id=run.id, session_id=session.id, status=RunStatus.FAILED, error=refused)
        spec = await self.build_spec(session=session, profile=profile, prompt=prompt, model=chosen,
                                     interactive=interactive, label=label, run_id=run.id, attach_mentions=True,
                                     budget=budget)
        if interactive:  # the conversation the user is typing into never waits behind background agents
            self.bus.publish(RunRegistered(run.id, session.id, None, profile.name, label, chosen, RunStatus.RUNNING))
            return await self.execute(spec, run.id)
        self.bus.publish(RunRegistered(run.id, session.id, None, profile.name, label, chosen, RunStatus.QUEUED))
        await self.slots.acquire(run.id)
        try:
            return await self.execute(spec, run.id)
        finally:
            await asyncio.shield(self.slots.release(run.id))

    async def _prompt_hooks(self, session_id: str, prompt: str, *, created: bool) -> tuple[str, str | None]:
        """The user's SessionStart (the first prompt of a session in this process) and UserPromptSubmit hooks:
        the prompt with what they add for the agent, and why it was refused if one blocked it."""
        assert self.hooks is not None
        added = []
        if created and self.hooks.has("SessionStart"):
            self._hooked.add(session_id)
            started = await self.hooks.fire("SessionStart", session_id=session_id,
                                            source="resume" if await self.store.messages(session_id) else "startup")
            added.append(started.context)
        self._hooked.add(session_id)
        if self.hooks.has("UserPromptSubmit"):
            submitted = await self.hooks.fire("UserPromptSubmit", session_id=session_id, prompt=prompt)
            if submitted.blocked:
                return prompt, f"A UserPromptSubmit hook blocked the prompt: {submitted.reason}"
            added.append(submitted.context)
        context = "\n\n".join(a for a in added if a)
        if not context:
            return prompt, None
        return f"{prompt}\n\n[Context from your hooks]\n{framed('hook-output', context, writer='your hooks')}", None

    def _mail_for(self, spec: RunSpec, run_id: str, mailbox: list[Message],
                  collect: Callable[[], Awaitable[None]] | None) -> BeforeTurn:
        """What a run reads before each turn: what other processes sent (`collect`), its mailbox (committed to
        its session) and the announcements waiting for its session."""
        session_id = spec.session_id

        async def before_turn() -> list[Message]:
            if collect is not None:
                await collect()
            added: list[Message] = []
            while mailbox:
                message = mailbox.pop(0)
                message_id = await self.store.append_message(session_id, message, run_id=run_id)
                self.bus.publish(MessageCommitted(run_id, session_id, message_id, message))
                added.append(message)
            return added + await self.mailroom.flush(session_id)

        return before_turn

    async def _engine_run(self, spec: RunSpec, run_id: str, profile: Profile,
                          before_turn: BeforeTurn) -> RunResult:
        """The run, by what runs it: an external agent's program, an engine of the profile's (the orchestrator),
        or the model loop."""
        if profile.runner == "acp":
            return await ExternalRun(spec, run_id, profile, store=self.store, bus=self.bus, env=self.env,
                                     secrets=list(self.secrets)).run()
        engine = next((self.engines[c] for c in profile.capabilities if c in self.engines), None)
        if engine is not None:
            return await engine(spec, run_id)
        return await self.runner().run(spec, run_id, before_turn=before_turn)

    async def execute(self, spec: RunSpec, run_id: str, *, mailbox: list[Message] | None = None,
                      collect: Callable[[], Awaitable[None]] | None = None) -> RunResult:
        """Run `spec` to its end: announcements and steering reach it between turns; cancelling it cancels
        its subagents too. `collect` runs before each turn, before the mailbox is read: it fills the mailbox
        with what other processes sent (so guidance sent before a turn begins is in that turn)."""
        session_id = spec.session_id
        before_turn = self._mail_for(spec, run_id, [] if mailbox is None else mailbox, collect)
        if spec.workflow is not None:
            await self.store.workflow_states.save(run_id, spec.workflow.workflow.name, spec.workflow.state())
        await self.store.update_run(run_id, pid=os.getpid())
        await self.mailroom.begin_run(session_id)
        profile = self.profiles.get(spec.profile)
        if self.hooks is not None and spec.parent_session_id and self.hooks.has("SubagentStart"):
            await self.hooks.fire("SubagentStart", session_id=spec.parent_session_id, run_id=run_id,
                                  agent_id=run_id, agent_type=spec.profile, agent_session_id=session_id)

        async def engine_run() -> RunResult:
            return await self._engine_run(spec, run_id, profile, before_turn)

        # The run goes in a task of its own, entered with the budgets: a halt of its tree cancels that task (at
        # once, mid-request) and the run ends `budget_exhausted` here, as an answer — never as a cancellation of
        # whoever awaits it (the `yeetui run` in a terminal, the parent's spawn).
        # Its task prices its requests with the config's prices too (`models: {provider/model: {…}}`).
        running = asyncio.get_running_loop().create_task(engine_run(), context=context_with(self.settings.prices))
        self.budgets.enter(run_id, session_id, label=spec.label, task=running, budget=spec.budget,
                           parent_session_id=spec.parent_session_id)
        try:
            try:
                await asyncio.wait({running})
            except asyncio.CancelledError as exc:  # whoever awaits the run was cancelled: so is the run
                running.cancel(exc.args[0] if exc.args else None)
                await _until_done(running)
                if (halt := self.budgets.halt_of(run_id)) is not None and _stopped(running):
                    await asyncio.shield(self.budgets.record(run_id, session_id, halt))  # halted all the same
                raise
            if (halt := self.budgets.halt_of(run_id)) is not None and _stopped(running):
                for hook in self._cancel_children:
                    await asyncio.shield(hook(session_id))
                return await self.budgets.record(run_id, session_id, halt)
            result = running.result()  # raises as the run did (cancelled by anyone else: cancelled)
            if spec.budget is not None and (spent := await self.budgets.spend(run_id)) is not None:
                result.result = {**(result.result or {}), "budget": {"limits": spec.budget.to_json(),
                                                                     "spent": spent.to_json()}}
            return result
        except asyncio.CancelledError:
            for hook in self._cancel_children:
                await asyncio.shield(hook(session_id))
            raise
        finally:
            self.budgets.leave(run_id)
            try:
                await asyncio.shield(self.mailroom.end_run(session_id))
            except StoreError as exc:  # what waits for the session is delivered at its next run; the ending stands
                log.warning("after run %s: %s", run_id, exc)
            if self.hooks is not None:  # what its hooks left running, in a session of their own too, ends with it
                await asyncio.shield(self.hooks.run_ended(run_id))

    async def compact(self, session_id: str, *, model: str | None = None) -> str:
        """`/compact`: summarise the session's current history and append the summary message."""
        session = await self.store.get_session(session_id)
        if session is None:
            raise YeetuiError(f"There is no session {session_id} to compact.")
        history = await repair_history(self.store, session_id)
        if not history:
            return ""
        chosen = model or session.model or self.resolve_model(self.profiles.get(session.profile))
        provider, bare = self.provider(chosen)
        summary, _ = await summarise(provider, bare, history)
        message = compaction_message(summary)
        message_id = await self.store.append_message(session_id, message)
        self.bus.publish(MessageCommitted("", session_id, message_id, message))
        compacted_at = await self.store.latest_compaction_at(session_id)
        for again_id, again in await redeliver_unseen(self.store, session_id, compacted_at=compacted_at or "",
                                                      run_id=None) if compacted_at else []:
            self.bus.publish(MessageCommitted("", session_id, again_id, again))  # results not seen yet: again
        return summary


def _strictest(profile: Profile, configured: str) -> BashSandbox:
    """The config's `tools.bash_sandbox: required` holds for every profile that would run bash without a
    sandbox — a writable one that says `off` too; a read-only one's `off` (no bash at all) is stricter still."""
    mode = profile.workspace.bash_sandbox
    if configured == "required" and not (mode == "off" and not profile.workspace.allow_writes):
        return "required"
    if configured == "unshielded" and mode == "auto":
        return "unshielded"
    return mode


def _stopped(running: asyncio.Future[RunResult]) -> bool:
    """The run was stopped (cancelled, or it took the cancellation and ended so) rather than ending on its own."""
    if running.cancelled():
        return True
    return running.exception() is None and running.result().status in (RunStatus.CANCELLED,
                                                                          RunStatus.BUDGET_EXHAUSTED)


async def _until_done(running: asyncio.Future[RunResult]) -> None:
    """Wait for a cancelled run to end — however often the waiter is cancelled meanwhile (a quitting app
    cancels twice): the run stops with its caller, never left running (and writing) behind it."""
    while not running.done():
        try:
            await asyncio.wait({running})
        except asyncio.CancelledError:
            running.cancel()
