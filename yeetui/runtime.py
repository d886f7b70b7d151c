"""The composition root: settings + store + profiles + providers + bus + tools, built once per process.

Front ends (the CLI, later the TUI) construct a Runtime and call its methods; nothing else builds these
parts. Provider SDKs are imported only when a model is first used.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.bus import Bus
from yeetui.config import LoadedSettings, Settings, load_settings, provider_credentials
from yeetui.events import MessageCommitted, PermissionRequested, RunRegistered, RunStatus
from yeetui.messages import Message
from yeetui.profile_loader import load_profiles
from yeetui.profiles import Profile, ProfileSet
from yeetui.providers.base import Provider, split_model
from yeetui.redact import secret_values_from_env
from yeetui.resources import builtin_dir
from yeetui.runs.permissions import Permissions
from yeetui.runs.prompting import build_system_prompt, read_context_files
from yeetui.runs.runner import Runner, RunResult, RunSpec
from yeetui.runs.tool_executor import ToolExecutor
from yeetui.store import Store
from yeetui.store.records import SessionRecord
from yeetui.subagents.host import AgentHost
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.spawner import AgentSpawner
from yeetui.subagents.tools import agent_tools
from yeetui.tools.ask_user import AskUserTool
from yeetui.tools.base import ToolContext, ToolSettings
from yeetui.tools.registry import ToolRegistry, builtin_tools
from yeetui.workflows import Workflow, WorkflowTracker, load_workflows
from yeetui.workspace import WorkspaceBinding

AGENT_TOOLS = ("spawn_subagent", "request_review", "list_agents", "get_agent_result", "cancel_agent", "send_message")
ALWAYS_OFFERED = ("complete", "ask_user")
"""Every agent can finish (`complete`) and, when its profile has a stop rule, ask the user (`ask_user`)."""


@dataclass
class Runtime:
    settings: Settings
    store: Store
    bus: Bus
    profiles: ProfileSet
    workflows: dict[str, Workflow]
    registry: ToolRegistry
    project_dir: Path
    env: Mapping[str, str]
    warnings: list[str] = field(default_factory=list)
    _providers: dict[str, tuple[Provider, str]] = field(default_factory=dict)
    _labels: dict[str, int] = field(default_factory=dict)
    delivery: Delivery = field(init=False)
    spawner: AgentSpawner = field(init=False)

    def __post_init__(self) -> None:
        self.delivery = Delivery(self.store, self.bus)
        self.spawner = AgentSpawner(self)

    @classmethod
    async def open(cls, *, cwd: Path | None = None, overrides: Mapping[str, Any] | None = None,
                   env: Mapping[str, str] | None = None, recover: bool = True) -> Runtime:
        """Build everything. `recover=False` skips the crash sweep (`recover()`): a detached worker about to
        claim a run must not sweep it up as a leftover of a dead process."""
        env = dict(os.environ if env is None else env)
        project_dir = (cwd or Path.cwd()).resolve()
        # Parsing config, profile and workflow files is blocking work: off the event loop (a UI stays live).
        loaded: LoadedSettings = await asyncio.to_thread(load_settings, project_dir=project_dir, env=env,
                                                         overrides=overrides)
        warnings = list(loaded.warnings)
        profiles = await asyncio.to_thread(load_profiles, project_dir=project_dir,
                                           user_dir=paths.config_dir(env) / "agents", builtin_dir=builtin_dir("agents"))
        warnings += [str(err) for err in profiles.errors]
        workflows, workflow_errors = await asyncio.to_thread(load_workflows, project_dir=project_dir,
                                                             user_dir=paths.config_dir(env) / "workflows",
                                                             builtin_dir=builtin_dir("workflows"))
        warnings += [str(err) for err in workflow_errors]
        store = await Store.open(paths.database_path(env))
        registry = ToolRegistry([*builtin_tools(), AskUserTool(), *agent_tools()])
        runtime = cls(settings=loaded.settings, store=store, bus=Bus(), profiles=profiles, workflows=workflows,
                      registry=registry, project_dir=project_dir, env=env, warnings=warnings)
        if recover:
            await runtime.recover()
        return runtime

    async def recover(self) -> None:
        """After a crash: runs left running become interrupted and are delivered like any other ending;
        announcements recorded but never made are made now."""
        for run in await self.store.mark_interrupted():
            parent = run.options.get("parent_session_id")
            if parent and run.options.get("deliver", True):
                await self.delivery.completion(
                    recipient_session_id=parent, run_id=run.id, child_session_id=run.session_id,
                    label=run.label or run.profile, status=RunStatus.INTERRUPTED,
                    output=(run.result or {}).get("output", ""), error=run.error, result=run.result,
                    announce=not run.options.get("blocking", False), attempt=int(run.options.get("attempt", 0)))
        for session_id in await self.store.pending_announcement_sessions():
            await self.delivery.flush(session_id)

    async def close(self) -> None:
        from yeetui.subagents.watcher.watcher import stop_watchers

        await stop_watchers(self)
        await self.spawner.shutdown()
        for provider, _ in self._providers.values():
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                await aclose()
        await self.store.close()

    # -- providers ---------------------------------------------------------------------------------

    def provider(self, model: str) -> tuple[Provider, str]:
        """The provider for `provider/model` (created once), and the bare model id."""
        if model not in self._providers:
            from yeetui.providers.registry import create_provider

            name, _ = split_model(model)
            self._providers[model] = create_provider(model, provider_credentials(self.settings, name, self.env))
        return self._providers[model]

    def secrets(self) -> list[str]:
        values = secret_values_from_env(self.env)
        values += [c.api_key.get_secret_value() for c in self.settings.providers.values() if c.api_key]
        return values

    # -- runs --------------------------------------------------------------------------------------

    def resolve_model(self, profile: Profile, override: str | None = None) -> str:
        """CLI flag > profile > config default (YEETUI_MODEL feeds the config default)."""
        model = override or profile.model or self.settings.model
        split_model(model)
        return model

    def binding_for(self, profile: Profile, cwd: Path | None = None) -> WorkspaceBinding:
        return WorkspaceBinding(
            cwd=cwd or self.project_dir,
            allow_writes=profile.workspace.allow_writes,
            protected=(paths.config_dir(self.env), paths.data_dir(self.env)),
            bash_sandbox=profile.workspace.bash_sandbox,
        )

    def may_spawn(self, profile: Profile, depth: int) -> bool:
        return profile.limits.can_spawn_children and depth < profile.limits.max_depth

    def offered_tools(self, profile: Profile, binding: WorkspaceBinding, *, depth: int = 0) -> list[str]:
        names = [t for t in self.registry.names() if t not in ALWAYS_OFFERED and t not in AGENT_TOOLS]
        if profile.tools is not None:
            names = [t for t in names if t in profile.tools]
        names = [t for t in names if t not in profile.disallowed_tools]
        if not binding.allow_writes:
            names = [t for t in names if not self.registry.get(t).writes]
        if self.may_spawn(profile, depth):
            names += [t for t in AGENT_TOOLS if t not in profile.disallowed_tools]
        return names + [t for t in ALWAYS_OFFERED if t == "complete" or t in self.exit_tools(profile)]

    @staticmethod
    def exit_tools(profile: Profile) -> list[str]:
        """The profile's exit tools; a profile with a stop rule can always also end by asking the user."""
        tools = list(profile.exit_tools)
        return [*tools, "ask_user"] if tools and "ask_user" not in tools else tools

    async def new_session(self, profile: Profile, *, title: str = "", model: str | None = None) -> SessionRecord:
        return await self.store.create_session(profile=profile.name, title=title[:80], model=model,
                                               cwd=str(self.project_dir))

    async def next_label(self, profile: str) -> str:
        """`oracle#4`: a per-profile sequence number, unique in this data dir's history."""
        if profile not in self._labels:
            runs = await self.store.list_runs(limit=1_000_000)
            self._labels[profile] = sum(1 for r in runs if r.profile == profile)
        self._labels[profile] += 1
        return f"{profile}#{self._labels[profile]}"

    async def build_spec(self, *, session: SessionRecord, profile: Profile, prompt: str | None, model: str,
                         interactive: bool = False, label: str | None = None, parent_session_id: str | None = None,
                         run_id: str = "") -> RunSpec:
        binding = self.binding_for(profile)
        workflow = None
        if profile.workflow:
            if profile.workflow not in self.workflows:
                from yeetui.errors import WorkflowError

                raise WorkflowError(f"Profile {profile.name!r} names workflow {profile.workflow!r}, which is not "
                                    f"defined (known: {', '.join(sorted(self.workflows)) or 'none'}).")
            workflow = WorkflowTracker(self.workflows[profile.workflow])
        system = build_system_prompt(
            profile_prompt=profile.prompt, cwd=binding.cwd, read_only=not binding.allow_writes,
            exit_tools=self.exit_tools(profile), interactive=interactive,
            context_files=read_context_files(binding.cwd, self.settings.context_files),
        )
        tool_settings = ToolSettings(bash_timeout=self.settings.tools.bash_timeout,
                                     bash_max_timeout=self.settings.tools.bash_max_timeout,
                                     output_cap=self.settings.tools.output_cap)
        limits = profile.limits
        agents = None
        if self.may_spawn(profile, session.depth):
            agents = AgentHost(self.spawner, session_id=session.id, run_id=run_id, label=label or profile.name)
        return RunSpec(
            session_id=session.id, profile=profile.name, label=label or profile.name, model=model,
            system_prompt=system, tools=self.offered_tools(profile, binding, depth=session.depth),
            tool_context=ToolContext(binding=binding, session_id=session.id, run_id=run_id, settings=tool_settings,
                                     agents=agents),
            permissions=Permissions.merge(Permissions.from_config(self.settings.permissions),
                                          Permissions.from_config(profile.permissions)),
            prompt=prompt, thinking=profile.thinking or self.settings.thinking or "off",
            exit_tools=self.exit_tools(profile), workflow=workflow, interactive=interactive,
            max_turns=limits.max_turns, timeout=limits.timeout, max_nudges=limits.max_nudges,
            max_cost_usd=limits.max_cost_usd, max_total_tokens=limits.max_total_tokens,
            max_tokens=self.settings.max_tokens, secrets=self.secrets(), parent_session_id=parent_session_id,
            compact_at=self.settings.compact_at_tokens,
        )

    def runner(self) -> Runner:
        executor = ToolExecutor(self.registry, self.bus, output_cap=self.settings.tools.output_cap)
        retry = self.settings.retry
        return Runner(store=self.store, bus=self.bus, executor=executor, providers=self.provider,
                      retry_attempts=retry.max_attempts, retry_base_delay=retry.base_delay,
                      retry_max_delay=retry.max_delay)

    async def run_prompt(self, prompt: str | None, *, profile_name: str | None = None, model: str | None = None,
                         session_id: str | None = None, interactive: bool = False) -> RunResult:
        """Run `prompt` in a new session (or continue `session_id`) with the profile's agent, to the end."""
        if session_id is not None:
            session = await self.store.resolve_session(session_id)
            profile = self.profiles.get(profile_name or session.profile)
        else:
            profile = self.profiles.get(profile_name or self.settings.primary_profile)
            session = None
        chosen = self.resolve_model(profile, model)
        if session is None:
            session = await self.new_session(profile, title=prompt or "", model=chosen)
        label = await self.next_label(profile.name)
        run = await self.store.create_run(session_id=session.id, profile=profile.name, model=chosen,
                                          prompt=prompt or "", label=label, workflow=profile.workflow)
        spec = await self.build_spec(session=session, profile=profile, prompt=prompt, model=chosen,
                                     interactive=interactive, label=label, run_id=run.id)
        self.bus.publish(RunRegistered(run.id, session.id, None, profile.name, label, chosen, RunStatus.RUNNING))
        return await self.execute(spec, run.id)

    async def execute(self, spec: RunSpec, run_id: str, *, mailbox: list[Message] | None = None) -> RunResult:
        """Run `spec` to its end: announcements and steering reach it between turns; cancelling it cancels
        its subagents too."""
        mailbox = [] if mailbox is None else mailbox
        session_id = spec.session_id

        async def before_turn() -> list[Message]:
            added: list[Message] = []
            while mailbox:
                message = mailbox.pop(0)
                message_id = await self.store.append_message(session_id, message, run_id=run_id)
                self.bus.publish(MessageCommitted(run_id, session_id, message_id, message))
                added.append(message)
            return added + await self.delivery.flush(session_id)

        spec.before_turn = before_turn
        if spec.workflow is not None:
            await self.store.save_workflow_state(run_id, spec.workflow.workflow.name, spec.workflow.state())
        await self.store.update_run(run_id, pid=os.getpid())
        await self.delivery.begin_run(session_id)
        try:
            if "orchestrator" in self.profiles.get(spec.profile).capabilities:
                from yeetui.subagents.orchestrator.engine import run_orchestrator  # the plan → spawn → review engine

                return await run_orchestrator(self, spec, run_id)
            return await self.runner().run(spec, run_id)
        except asyncio.CancelledError:
            await asyncio.shield(self.spawner.cancel_children(session_id))
            raise
        finally:
            await asyncio.shield(self.delivery.end_run(session_id))


def answer_permissions_headless(runtime: Runtime, *, approve: bool) -> None:
    """Headless runs have nobody to ask: deny every `ask` (or allow, with --yes)."""

    def answer(event: object) -> None:
        if isinstance(event, PermissionRequested) and not event.reply.done():
            event.reply.set_result("allow_once" if approve else "deny")

    runtime.bus.add_listener(answer)


FINAL_OK = {RunStatus.COMPLETED}
