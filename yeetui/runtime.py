"""The composition root: opens settings, store, bus and providers, builds the launcher, delivery, spawner,
orchestrator engine and watchers, and hands them to each other. No behaviour of its own.

Front ends (the CLI, the TUI) open one Runtime per process and act through the use cases of
yeetui.application over it (and `session_control()`, an interactive conversation); they read store records
and subscribe to the bus, but do not reach its working parts (the launcher, spawner, watchers). Provider SDKs
are imported only when a model is first used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.bus import Bus
from yeetui.definitions.foreign.commands import CommandFile, load_commands
from yeetui.definitions.profile_loader import load_profiles
from yeetui.definitions.profiles import ProfileSet
from yeetui.definitions.workflows import Workflow, load_workflows
from yeetui.events import PermissionRequested
from yeetui.hooks.runner import HookConfinement, HookRunner
from yeetui.hooks.sources import load_hooks
from yeetui.mcp.client import McpConnections
from yeetui.mcp.launch import Placement
from yeetui.mcp.sources import default_home
from yeetui.mcp.startable import startable_servers
from yeetui.providers.base import Provider, split_model
from yeetui.providers.factory import create_provider
from yeetui.redact import secret_values_from_env
from yeetui.resources import builtin_dir
from yeetui.runs.asking import AskThroughStore
from yeetui.runs.launcher import RunLauncher
from yeetui.runs.mcp_tools import McpLoadTool
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runs.prompting import context_notes
from yeetui.runs.slots import RunSlots
from yeetui.runs.transcripts import write_transcript
from yeetui.settings.config import LoadedSettings, Settings, load_settings, provider_credentials
from yeetui.settings.trust import TrustState, project_files, trust_state, untrusted_hooks_note
from yeetui.store import Store
from yeetui.subagents.detached import DetachedRuns
from yeetui.subagents.elsewhere import RunsElsewhere
from yeetui.subagents.host import AgentHost
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.isolation import WorktreeIsolation
from yeetui.subagents.orchestrator.engine import OrchestratorEngine
from yeetui.subagents.pane_runs import PaneRuns
from yeetui.subagents.panes import PaneHost
from yeetui.subagents.run_commands import RunCommands
from yeetui.subagents.session_control import SessionControl
from yeetui.subagents.spawner import AgentSpawner
from yeetui.subagents.tools import agent_tools
from yeetui.subagents.watcher.watcher import Watchers
from yeetui.system import sandbox
from yeetui.system.relay import RelayReceiver, relay_dir
from yeetui.system.sandbox.notices import sandbox_notices
from yeetui.tools.ask_user import AskUserTool
from yeetui.tools.registry import ToolRegistry, builtin_tools
from yeetui.worktrees.manager import Worktrees

DEFAULT_MAX_CONCURRENT = 8
"""Runs executing at once across every yeetui process on a data dir (the rest wait, visibly queued)."""

@dataclass(frozen=True)
class FrontEnd:
    """What the front end opening the runtime does for the runs it starts: given at open, fixed after."""

    model: str | None = None
    """`--model`: the model of every run this process starts, its subagents' too."""
    approve_asks: bool = False
    """`--yes`: the permission questions of children in panes and detached workers are approved (they run
    where nobody could be asked in time)."""
    answers_asks: bool = False
    """A front end with dialogs (the TUI): the permission questions of pane children come to it."""
    open_asks: bool = True
    """With `answers_asks`: the questions open to every yeetui (of runs an MCP client spawned) come to it too.
    An editor's ACP agent asks only about its own sessions, so it takes none of those."""
    ask_anywhere: bool = False
    """Nobody is at this process's terminal, yet the user can answer: the permission questions of its runs wait
    in the store for `yeetui fleet` or any yeetui app (a follow-up the fleet started in the background)."""
    session_end: str = "other"
    """The `reason` SessionEnd hooks are given when this process closes (the TUI's quit: `prompt_input_exit`)."""
    headless: bool = False
    """Nobody is there to answer permission questions (`yeetui run`, `agents start --wait`): each is refused
    unattended (or allowed, with `approve_asks`), and the refusals are kept in `Runtime.refused`."""


ProviderFactory = Callable[[str], tuple[Provider, str]]
"""`provider/model` → its provider and the bare model id; the default reads credentials from the environment
and the config."""


log = logging.getLogger(__name__)


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
    launcher: RunLauncher
    delivery: Delivery
    spawner: AgentSpawner
    watchers: Watchers
    detached: DetachedRuns
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a front end says once at start besides warnings (which project instruction files agents read)."""
    command_files: list[CommandFile] = field(default_factory=list)
    """Claude Code / OpenCode / the user's slash-command files (front ends add them to their commands)."""
    relay: RelayReceiver | None = None
    """Live events of runs in tmux panes, from their workers (see yeetui.system.relay)."""
    refused: list[PermissionRequested] = field(default_factory=list)
    """Permission questions of this process's runs refused because nobody could be asked (`FrontEnd.headless`)."""
    controls: list[SessionControl] = field(default_factory=list)
    """The conversations a front end drives; closing the runtime ends their running turns."""
    asking: AskThroughStore | None = None
    """`FrontEnd.ask_anywhere`: passes this process's permission questions on to the store."""
    session_end: str = "other"
    """`FrontEnd.session_end`: why its conversations end when it closes (their SessionEnd hooks' `reason`)."""

    @classmethod
    async def open(cls, *, cwd: Path | None = None, overrides: Mapping[str, Any] | None = None,
                   env: Mapping[str, str] | None = None, recover: bool = True,
                   provider_factory: ProviderFactory | None = None,
                   spawner_limits: Mapping[str, Any] | None = None, front_end: FrontEnd | None = None,
                   stand_in: int | None = None) -> Runtime:
        """Build everything. `recover=False` skips the crash sweep (`Delivery.recover`): a detached worker about
        to claim a run must not sweep it up as a leftover of a dead process. `provider_factory` replaces how
        providers are made (tests run an in-process scripted provider through it); `spawner_limits` overrides
        the spawner's (`max_concurrent`, `max_children`, `default_timeout`, `max_timeout`); `front_end` says what
        the front end does for the runs (see FrontEnd); `stand_in`: in a worker forked warm, the pid of the process
        standing in for it (see AgentSpawner.stand_in)."""
        front_end = front_end or FrontEnd()
        env = dict(os.environ if env is None else env)
        project_dir = paths.find_project_root(cwd or Path.cwd())  # from a subfolder too
        # Front ends warn of the sandbox (a pane's or detached worker, `recover=False`, has no one to read it and
        # skips the probe at start); probed once per process, off the loop. The probe runs a command under the
        # sandbox: started first, it runs while the files are read.
        probing = asyncio.ensure_future(asyncio.to_thread(sandbox.probe_sandbox)) if recover else None
        try:
            # Parsing config, profile and workflow files is blocking work: off the event loop (a UI stays live).
            # An untrusted project's files may narrow rights, not widen them; trust holds while they are unchanged.
            trust = await asyncio.to_thread(trust_state, project_dir, env)
            loaded, profiles = await _load_definitions(project_dir, env, overrides, trust.trusted)
            if trust.trusted and await asyncio.to_thread(project_files, project_dir) != trust.files:
                # changed while they were read: what was read may not be what the user trusted
                trust = TrustState(False, {}, note=f"The config and agent files of {project_dir} changed while yeetui "
                                   "read them; this time they may narrow rights but not widen them.")
                loaded, profiles = await _load_definitions(project_dir, env, overrides, False)
            warnings = [trust.note] if trust.note else []
            if not trust.trusted and (hooks_off := await asyncio.to_thread(untrusted_hooks_note, project_dir)):
                warnings.append(hooks_off)
            warnings += loaded.warnings
            warnings += [str(err) for err in profiles.errors]
            workflows, workflow_errors = await asyncio.to_thread(load_workflows, project_dir=project_dir,
                                                                 user_dir=paths.config_dir(env) / "workflows",
                                                                 builtin_dir=builtin_dir("workflows"))
            warnings += [str(err) for err in workflow_errors]
            command_files, command_warnings = await asyncio.to_thread(load_commands, project_dir,
                                                                      paths.config_dir(env) / "commands")
            warnings += command_warnings
        except BaseException:
            if probing is not None:
                probing.cancel()
            raise
        settings = loaded.settings
        if probing is not None:
            warnings += sandbox_notices(await probing, settings.tools.bash_sandbox)
        store = await Store.open(paths.database_path(env))
        launcher: RunLauncher | None = None
        try:  # everything opened from here is closed again if opening fails or is cancelled (an app quit early)
            bus = Bus()
            registry = ToolRegistry([*builtin_tools(), AskUserTool(), McpLoadTool(), *agent_tools()])
            mcp_servers, mcp_warnings = await asyncio.to_thread(startable_servers, project_dir, env,
                                                                settings.project_grants, sandbox.probe_sandbox)
            warnings += mcp_warnings
            secrets = secret_values_from_env(env)
            secrets += [c.api_key.get_secret_value() for c in settings.providers.values() if c.api_key]

            def default_provider(model: str) -> tuple[Provider, str]:
                name, _ = split_model(model)
                return create_provider(model, provider_credentials(settings, name, env))

            store.secrets = tuple(secrets)  # nothing is written with a key in it
            delivery = Delivery(store, bus)
            limits = dict(spawner_limits or {})
            slots = RunSlots(store, limit=int(limits.pop("max_concurrent", DEFAULT_MAX_CONCURRENT)))
            hook_set = load_hooks(settings.hooks, project_dir=project_dir, trusted=trust.trusted)
            warnings += [f"Hooks: {problem}" for problem in hook_set.problems]
            hooks = None
            if hook_set:
                hooks = HookRunner(hook_set, project_dir=project_dir, bus=bus, env=dict(env),
                                   transcripts=lambda session_id: write_transcript(store, session_id, env, project_dir),
                                   confinement=HookConfinement(
                                       bash_sandbox=settings.tools.bash_sandbox, network=settings.tools.bash_network,
                                       hidden=(paths.config_dir(env), paths.data_dir(env)),
                                       unconfined=tuple(settings.project_grants.unconfined_hooks),
                                       home=default_home(env)))
                if recover:  # a front end's notice (a worker has no one to read it)
                    warnings += await asyncio.to_thread(hooks.unconfinable)
            launcher = RunLauncher(settings=settings, store=store, bus=bus, profiles=profiles, workflows=workflows,
                                   registry=registry, project_dir=project_dir, env=env, secrets=secrets,
                                   mailroom=delivery, create_provider=provider_factory or default_provider, slots=slots,
                                   model_override=front_end.model,
                                   mcp=McpConnections(mcp_servers, bus=bus, placement=Placement(
                                       project_dir, default_home(env), (paths.config_dir(env), paths.data_dir(env)),
                                       auth_dir=paths.data_dir(env) / "mcp-auth")),
                                   hooks=hooks)
            panes = PaneHost(env=env, project_dir=project_dir)
            elsewhere = RunsElsewhere(store, bus, delivery, panes, answers_asks=front_end.answers_asks,
                                      open_asks=front_end.open_asks)
            worktrees = Worktrees(store, env=env)
            spawner = AgentSpawner(
                launcher, delivery, store=store, bus=bus, slots=slots, profiles=profiles, project_dir=project_dir,
                configured_mode=settings.subagent_mode,
                isolation=WorktreeIsolation(worktrees, store=store, bus=bus, project_dir=project_dir),
                pane_runs=PaneRuns(panes, elsewhere, store=store, bus=bus),
                commands=RunCommands(store), approve_asks=front_end.approve_asks, stand_in=stand_in, **limits)
            launcher.agent_host = lambda **run: AgentHost(spawner, delivery, store=store, project_dir=project_dir,
                                                          **run)
            launcher.engines["orchestrator"] = OrchestratorEngine(
                spawner, delivery, store=store, bus=bus, profiles=profiles, project_dir=project_dir,
                worktrees=worktrees, merging=settings.worktrees)
            runtime = cls(settings=settings, store=store, bus=bus, profiles=profiles, workflows=workflows,
                          registry=registry, project_dir=project_dir, env=env, launcher=launcher, delivery=delivery,
                          spawner=spawner, session_end=front_end.session_end,
                          watchers=Watchers(launcher, spawner, delivery, store=store, bus=bus, profiles=profiles),
                          detached=DetachedRuns(launcher, store=store, profiles=profiles, project_dir=project_dir,
                                                env=env, default_timeout=spawner.default_timeout,
                                                max_timeout=spawner.max_timeout), warnings=warnings,
                          notes=await asyncio.to_thread(context_notes, project_dir, settings.context_files),
                          command_files=command_files)
            if front_end.headless:
                runtime.refused = answer_permissions_headless(bus, approve=front_end.approve_asks)
            elif front_end.ask_anywhere:
                runtime.asking = AskThroughStore(store, "", open_to_all=True, wait=True)
                bus.add_listener(runtime.asking.listen)
            if recover:
                await delivery.recover()
                await spawner.adopt_elsewhere()
                runtime.relay = await _listen_for_panes(env, project_dir, bus)
            return runtime
        except BaseException:
            await asyncio.shield(_close_partly_open(store, launcher))
            raise

    def session_control(self, session_id: str, *, model: str | None = None) -> SessionControl:
        """The interactive control of one conversation (what a front end drives)."""
        control = SessionControl(self.launcher, self.spawner, session_id, store=self.store, bus=self.bus,
                                 project_dir=self.project_dir, env=self.env, secrets=self.launcher.secrets,
                                 model=model)
        self.controls.append(control)
        return control

    async def close(self) -> None:
        """Quitting: running turns of conversations end first (stored as cancelled because yeetui quit, not left
        running for the next start to find as a crash), then watchers, subagents and the store."""
        for control in self.controls:
            await control.close()
        await self.launcher.end_sessions(self.session_end)
        if self.asking is not None:
            await self.asking.close()
        if self.relay is not None:
            await self.relay.close()
        await self.watchers.stop_all()
        await self.spawner.shutdown()
        await self.launcher.budgets.close()
        if self.launcher.mcp is not None:
            await self.launcher.mcp.close()
        await self.launcher.aclose()
        await self.store.close()


async def _close_partly_open(store: Store, launcher: RunLauncher | None) -> None:
    """What `Runtime.open` opened before it failed or was cancelled: the store (whose threads would keep the
    process from exiting) and the launcher's MCP connections."""
    if launcher is not None and launcher.mcp is not None:
        with contextlib.suppress(Exception):
            await launcher.mcp.close()
    await store.close()


async def _load_definitions(project_dir: Path, env: Mapping[str, str], overrides: Mapping[str, Any] | None,
                            trusted: bool) -> tuple[LoadedSettings, ProfileSet]:
    """The settings and profiles, parsed off the event loop (blocking work: a UI stays live)."""
    loaded = await asyncio.to_thread(load_settings, project_dir=project_dir, env=env, overrides=overrides,
                                     trusted=trusted)
    profiles = await asyncio.to_thread(load_profiles, project_dir=project_dir,
                                       user_dir=paths.config_dir(env) / "agents", builtin_dir=builtin_dir("agents"),
                                       trusted=trusted)
    return loaded, profiles


async def _listen_for_panes(env: Mapping[str, str], project_dir: Path, bus: Bus) -> RelayReceiver | None:
    folder = relay_dir(paths.data_dir(env), env)
    if folder is None:
        return None
    receiver = RelayReceiver(folder, str(project_dir), bus.publish)
    try:
        await receiver.start()
    except OSError as exc:  # live pane events are a view; everything else works without them
        log.warning("not receiving live events from panes: %s", exc)
        return None
    return receiver

