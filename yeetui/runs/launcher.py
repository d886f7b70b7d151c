"""The launcher: the only code that creates a run record, builds a run's spec and executes it.

Every run — the primary conversation's turn, a subagent, a pair watcher's look, a detached worker's job —
is written by `create_run` (one writer, typed `RunOptions`), resolved into a `RunSpec` by `build_spec`
(profile, model, tools, rules, prompt) and executed by `execute`, which runs the agent loop or, for a
profile with a capability that has a run engine (the orchestrator), that engine instead. Which model a run
uses is the launcher's `models` (yeetui.runs.model_choice: `resolve_model`, `tree_model`, `choose_model`);
what it is given, its `specs` (yeetui.runs.spec_builder: `build_spec`, `refuse_uncountable`).

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
from typing import Final, Protocol

from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile, ProfileSet
from yeetui.definitions.workflows import Workflow
from yeetui.errors import StoreError, YeetuiError
from yeetui.events import MessageCommitted, Notice, RunRegistered, RunStatus
from yeetui.framing import framed
from yeetui.hooks.runner import HookRunner
from yeetui.mcp.client import McpConnections
from yeetui.messages import Message
from yeetui.providers.base import Provider, split_model
from yeetui.providers.pricing import context_with
from yeetui.runs.budget import Budget
from yeetui.runs.budget_keeper import BudgetKeeper
from yeetui.runs.compaction import compaction_message, redeliver_unseen, summarise
from yeetui.runs.external_run import ExternalRun
from yeetui.runs.history import repair_history
from yeetui.runs.model_choice import ModelChoice
from yeetui.runs.runner import BeforeTurn, Runner
from yeetui.runs.slots import RunSlots
from yeetui.runs.spec import RunOptions, RunResult, RunSpec
from yeetui.runs.spec_builder import AgentHostFactory, SpecBuilder
from yeetui.runs.tool_executor import ToolExecutor
from yeetui.settings.config import Settings
from yeetui.store import Store
from yeetui.store.records import RunRecord, SessionRecord
from yeetui.text import title_from
from yeetui.tools.registry import ToolRegistry

RunEngine = Callable[[RunSpec, str], Awaitable[RunResult]]
"""Runs a spec to its end in place of the agent loop (`engines`, keyed by profile capability)."""
log = logging.getLogger(__name__)


class Mailroom(Protocol):
    """What the launcher needs of delivery (yeetui.subagents.inbox.Delivery): to hold announcements while a
    session is mid-run and hand them over between turns."""

    async def begin_run(self, session_id: str) -> None: ...
    async def end_run(self, session_id: str) -> None: ...
    async def flush(self, session_id: str) -> list[Message]: ...


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
        self.engines: dict[str, RunEngine] = {}
        self._create_provider = create_provider
        self._providers: dict[str, tuple[Provider, str]] = {}
        self._cancel_children: list[Callable[[str], Awaitable[None]]] = []
        self.hooks: Final = hooks
        """The user's lifecycle hooks (None: none configured; see yeetui.hooks)."""
        self._hooked: dict[str, str] = {}
        """Sessions whose SessionStart hooks ran in this process (their SessionEnd hooks run when it closes), and
        each one's latest run (its hooks' `YEETUI_RUN_ID` when no run is going)."""
        self._cleared: dict[str, str] = {}
        """New sessions a /clear started: their SessionStart's `source` is `clear`."""
        self.budgets: Final = BudgetKeeper(store, bus)
        """The budgets of this process's runs: watched, warned about, their trees halted (see yeetui.runs.budget)."""
        self.models: Final = ModelChoice(settings=settings, store=store, bus=bus, profiles=profiles,
                                         workflows=workflows, providers=self.provider, override=model_override)
        """Which model each run uses; `model_override` is the process's `--model`, which every run it starts uses."""
        self.specs: Final = SpecBuilder(settings=settings, store=store, bus=bus, profiles=profiles, workflows=workflows,
                                        registry=registry, project_dir=project_dir, env=env, secrets=secrets, mcp=mcp,
                                        budgets=self.budgets)
        """What each run is given: its workspace, tools, MCP servers, prompt, permissions, limits and budget."""
        if hooks is not None:
            self.specs.session_env = hooks.env_script

    @property
    def agent_host(self) -> AgentHostFactory | None:
        """Makes the host a run that may spawn acts through (set by the runtime; None: no run spawns)."""
        return self.specs.agent_host

    @agent_host.setter
    def agent_host(self, host: AgentHostFactory | None) -> None:
        self.specs.agent_host = host

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
            with contextlib.suppress(ValueError):  # a bad stored budget is ignored (and logged) by the spec builder
                given = Budget.from_json(options.budget)
        await self.specs.refuse_uncountable(profile, model, budget=given, parent_session_id=session.parent_id)
        return await self.store.create_run(
            session_id=session.id, profile=profile.name, model=model, prompt=prompt, label=label,
            parent_run_id=parent_run_id, workflow=profile.workflow,
            options=options.to_json() if options is not None else None, max_children=max_children)

    # -- running -----------------------------------------------------------------------------------

    def runner(self) -> Runner:
        executor = ToolExecutor(self.registry, self.bus, output_cap=self.settings.tools.output_cap, hooks=self.hooks)
        retry = self.settings.retry
        return Runner(store=self.store, bus=self.bus, executor=executor, providers=self.provider,
                      retry_attempts=retry.max_attempts, retry_base_delay=retry.base_delay,
                      retry_max_delay=retry.max_delay, after_request=self.budgets.after_request,
                      halted=lambda run_id: self.budgets.halt_of(run_id) is not None,
                      quota_hold_minutes=self.settings.quota_hold_minutes, hooks=self.hooks)

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
        chosen = self.models.resolve(profile, model, within=model)
        await self.specs.refuse_uncountable(profile, chosen, budget=budget)  # before anything is written
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
        run = await self.create_run(session, profile, model=chosen, prompt=prompt or "")
        label = run.label or profile.name
        if self.hooks is not None and prompt is not None:
            prompt, refused = await self._prompt_hooks(session.id, run.id, prompt)
        else:
            refused = None
        if refused is not None:  # a UserPromptSubmit hook blocked it: nothing is sent
            await self.store.update_run(run.id, status=RunStatus.FAILED, error=refused)
            self.bus.publish(RunRegistered(run.id, session.id, None, profile.name, label, chosen, RunStatus.FAILED))
            self.bus.publish(Notice("warning", refused, session.id))
            return RunResult(run_id=run.id, session_id=session.id, status=RunStatus.FAILED, error=refused)
        spec = await self.specs.build(session=session, profile=profile, prompt=prompt, model=chosen,
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

    async def _prompt_hooks(self, session_id: str, run_id: str, prompt: str) -> tuple[str, str | None]:
        """The user's SessionStart (the first prompt of a session in this process: `startup`, `resume`, or
        `clear` after /clear) and UserPromptSubmit hooks: the prompt with what they add for the agent, and why it
        was refused if one blocked it."""
        assert self.hooks is not None
        added = []
        started_here = session_id in self._hooked
        self._hooked[session_id] = run_id
        if not started_here:
            source = self._cleared.pop(session_id, None) or \
                ("resume" if await self.store.messages(session_id) else "startup")
            if self.hooks.has("SessionStart", source):
                started = await self.hooks.fire("SessionStart", session_id=session_id, run_id=run_id, target=source,
                                                source=source, model=await self._session_model(session_id))
                added.append(started.context)
        if self.hooks.has("UserPromptSubmit"):
            submitted = await self.hooks.fire("UserPromptSubmit", session_id=session_id, run_id=run_id,
                                              prompt=prompt)
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
        if self.hooks is not None and spec.parent_session_id and self.hooks.has("SubagentStart", spec.profile):
            await self.hooks.fire("SubagentStart", session_id=spec.parent_session_id, run_id=run_id,
                                  target=spec.profile, agent_id=run_id, agent_type=spec.profile,
                                  agent_session_id=session_id)

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

    async def _session_model(self, session_id: str) -> str:
        session = await self.store.get_session(session_id)
        return (session.model if session is not None else None) or self.settings.model

    async def clear(self, ended_session_id: str | None, new_session_id: str) -> None:
        """/clear (the TUI's /new): the conversation left ends, as Claude Code's /clear ends it (its SessionEnd
        hooks, `reason: clear`), and the new one starts as `clear` (its SessionStart hooks, at its first prompt)."""
        self._cleared[new_session_id] = "clear"
        if ended_session_id is not None and (last_run := self._hooked.pop(ended_session_id, None)) is not None:
            await self._end_session(ended_session_id, last_run, "clear")

    async def end_sessions(self, reason: str = "other") -> None:
        """This process is closing: the SessionEnd hooks of every session whose SessionStart ran here (`reason`:
        `prompt_input_exit` when the user quit the app, `other` when a command ended)."""
        while self._hooked:
            session_id, last_run = self._hooked.popitem()
            await self._end_session(session_id, last_run, reason)

    def last_run(self, session_id: str) -> str | None:
        """The session's latest run started in this process (its hooks' `YEETUI_RUN_ID` between runs)."""
        return self._hooked.get(session_id)

    async def _end_session(self, session_id: str, last_run: str, reason: str) -> None:
        if self.hooks is None or not self.hooks.has("SessionEnd", reason):
            return
        try:
            await self.hooks.fire("SessionEnd", session_id=session_id, run_id=last_run, target=reason,
                                  reason=reason)
        except StoreError as exc:  # its transcript could not be written: the ending stands
            log.warning("SessionEnd hooks of %s: %s", session_id, exc)

    async def compact(self, session_id: str, *, model: str | None = None) -> str:
        """`/compact`: summarise the session's current history and append the summary message."""
        session = await self.store.get_session(session_id)
        if session is None:
            raise YeetuiError(f"There is no session {session_id} to compact.")
        history = await repair_history(self.store, session_id)
        if not history:
            return ""
        chosen = model or session.model or self.models.resolve(self.profiles.get(session.profile))
        provider, bare = self.provider(chosen)
        if self.hooks is not None:
            await self.hooks.compacting(session_id, self.last_run(session_id), "manual")
        summary, _ = await summarise(provider, bare, history)
        message = compaction_message(summary)
        message_id = await self.store.append_message(session_id, message)
        self.bus.publish(MessageCommitted("", session_id, message_id, message))
        if self.hooks is not None and (added := await self.hooks.compacted(session_id, self.last_run(session_id))):
            hooked = Message.user(added, hook=True)
            self.bus.publish(MessageCommitted("", session_id, await self.store.append_message(session_id, hooked),
                                              hooked))
        compacted_at = await self.store.latest_compaction_at(session_id)
        for again_id, again in await redeliver_unseen(self.store, session_id, compacted_at=compacted_at or "",
                                                      run_id=None) if compacted_at else []:
            self.bus.publish(MessageCommitted("", session_id, again_id, again))  # results not seen yet: again
        return summary


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
