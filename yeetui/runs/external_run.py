"""A run whose agent is an external program speaking the Agent Client Protocol (`runner: acp`): Claude Code's
adapter, `opencode acp`, Codex's, Gemini CLI's. yeetui is the client.

The run goes as any other for the rest of yeetui: its status, its transcript (the task, then the agent's final
message), its text, thinking and tool calls as the usual events (so the ledger and the conversation show
them), its usage and cost (what the agent reports), its ending delivered once to whoever started it. The
agent's permission requests go through the profile's permission rules, then to yeetui's dialog (or the
headless rules) as any tool call's would; yeetui never picks a mode that skips them.

The agent's own subagents become nodes of yeetui's tree: a child announced with `subagent_update` (ACP's
subagent sessions, which yeetui asks for) or, from older Claude Code adapters, updates tagged with the spawning
tool call (`_meta.claudeCode.parentToolUseId`) get a session and a run under this run's session — in the ledger,
the switcher and `agents list` — with their own text, tool calls, state and usage (the usage an idle state
carries, else what the agent recorded of that subagent: see `yeetui.external.records`). Costs are counted
once: where the agent's reported cost holds its subagents' (Claude Code, yeetui), theirs are not priced
apart; OpenCode's `task` children carry their own, from OpenCode's record.

Whatever the program sends is hostile input: every field is checked before use and capped before it is shown
(`yeetui.external.updates` reads them); it gets no more subagents in yeetui's tree than yeetui's own agents
(`MAX_LIVE_CHILDREN` at once) and at most `MAX_CHILDREN` in a run, and what it says it spent is bounded
(`yeetui.external.spend`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from yeetui.bus import Bus
from yeetui.definitions.profiles import Profile
from yeetui.errors import YeetuiError
from yeetui.events import (
    InboxItemAdded,
    Notice,
    PermissionAnswer,
    PermissionRequested,
    RunModelChanged,
    RunRegistered,
    RunStatus,
    RunStatusChanged,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    UsageUpdated,
)
from yeetui.external import model_names, spend, updates
from yeetui.external.process import ExternalAgent, ExternalAgentError
from yeetui.external.quiet import QuietWatch
from yeetui.external.records import claude, opencode
from yeetui.messages import Message, Usage
from yeetui.runs.spec import RunResult, RunSpec
from yeetui.store import Store
from yeetui.store.payloads import Completion
from yeetui.text import cap, seconds_text

log = logging.getLogger(__name__)

INBOX_BODY_CAP = 4000
"""Characters of a subagent's report kept on its inbox item."""
KIND_TOOLS = {"execute": "bash", "edit": "edit_file", "delete": "edit_file", "move": "edit_file",
              "read": "read_file", "search": "grep", "fetch": "web_fetch"}
"""An ACP tool kind → the yeetui tool whose permission rules decide it."""
WRITING_KINDS = {"execute", "edit", "delete", "move"}
COMMAND_POLL = 0.3
"""Seconds between looks for cancel commands sent to the run or its subagents from elsewhere."""
MAX_LIVE_CHILDREN = 5
"""The agent's subagents followed at once: as many as yeetui lets one of its own sessions have (the spawner's
`max_children`). One it starts beyond them is taken up by a later update of it once another has ended."""
MAX_CHILDREN = 50
"""The agent's subagents one run keeps a node (a session and a run) for: a hostile agent announced thousands.
The others' updates are not shown, and their usage is not counted apart."""
MAX_CALLS = 10_000
"""Tool calls of its subagents remembered (to know whose a permission request sent on the run's own session is)."""


CANCEL_GRACE = 10.0
"""Seconds a cancelled agent has to end its turn before its process is ended."""


@dataclass
class _Node:
    """The run itself (the root) or one of the agent's subagents."""

    run_id: str
    session_id: str
    label: str
    text: list[str] = field(default_factory=list)
    message_id: object = None
    """The id of the message its text comes from (a new one starts the final message afresh)."""
    after_tool: bool = False
    """A tool call came since its last text: the next text starts the final message afresh."""
    final: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    """A subagent's own cost, where its agent's reported cost does not hold it (OpenCode's children)."""
    ended: bool = False
    messages: set[str] = field(default_factory=set)
    """Ids of the messages between sessions it was given (kept once)."""
    cancellable: bool = False
    """The agent said this subagent can be cancelled on its own (`capabilities.cancel`)."""
    model: str = ""
    """The model the agent said this node runs on ('' until it says one)."""

    def add_text(self, text: str, message_id: object) -> None:
        if (message_id is not None and message_id != self.message_id) or self.after_tool:
            self.message_id, self.final, self.after_tool = message_id, [], False
        self.text.append(text)
        self.final.append(text)

    def tool_called(self) -> None:
        """A tool call (its start, an update of it, a question about it): text after it is a new message, and what
        it said before was a preamble (Gemini CLI numbers no messages)."""
        self.after_tool = True

    @property
    def output(self) -> str:
        """The agent's last message: what it said since its last new message id, or since its last tool call when
        it said anything after it."""
        return cap("".join(self.final).strip(), updates.TEXT_CAP)


class ExternalRun:
    def __init__(self, spec: RunSpec, run_id: str, profile: Profile, *, store: Store, bus: Bus,
                 env: Mapping[str, str], secrets: list[str]) -> None:
        assert profile.acp is not None
        self.spec, self.run_id, self.profile = spec, run_id, profile
        self.store, self.bus = store, bus
        self.env = {**env, **profile.acp.env, "YEETUI_RUN_ID": run_id, "YEETUI_SESSION_ID": spec.session_id}
        self.secrets = secrets
        self.root = _Node(run_id, spec.session_id, spec.label)
        self._nodes: dict[str, _Node] = {}
        """The agent's session ids (and `tool:<id>` for legacy-tagged children) → nodes."""
        self._work: asyncio.Queue[Any] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._cost: float | None = None
        self._agent_session: str | None = None
        self._watch: asyncio.Task[None] | None = None
        self._to_load: list[str] = []
        """Subagent sessions known only from a tool's output (OpenCode's task tool): read back at the end."""
        self._children = 0
        self._over_limit_said = False
        self._calls: dict[str, _Node] = {}
        """A subagent's tool call id → its node: an agent may route a subagent's permission request to the run's
        own session (Codex's adapter does for clients without subagent sessions)."""
        self._stopping: asyncio.Task[None] | None = None
        self._stopped = False
        """Cancelled, it did not end its turn in time, and its process was ended."""
        self._quiet = QuietWatch(bus, run_id, spec.session_id, spec.label, profile.acp.command,
                                 profile.acp.quiet_after)
        """Says when the agent has been silent too long with a tool call open (yeetui.external.quiet)."""

    async def run(self) -> RunResult:
        spec = self.spec
        result = RunResult(run_id=self.run_id, session_id=spec.session_id, status=RunStatus.RUNNING)
        await self._status(self.root, RunStatus.RUNNING)
        # The model yeetui would have chosen is not the one the agent runs: none is named until the agent says.
        await self.store.update_run(self.run_id, model="")
        self.bus.publish(RunModelChanged(self.run_id, spec.session_id, ""))
        if spec.prompt is not None:
            await self._commit(self.root, Message.user(spec.prompt))
        acp = self.profile.acp
        assert acp is not None
        agent = ExternalAgent(acp.command, acp.args, env=self.env, cwd=spec.tool_context.binding.cwd,
                              on_update=self._taken, ask=self._ask, secrets=self.secrets)
        self._worker = asyncio.create_task(self._work_through(), name=f"yeetui external {spec.label}")
        quiet = asyncio.create_task(self._quiet.watch(), name=f"quiet {spec.label}")
        try:
            async with asyncio.timeout(spec.timeout):
                await agent.start(timeout=acp.start_timeout)
                opened = await agent.new_session(timeout=acp.start_timeout)
                self._agent_session = opened["sessionId"]
                self._nodes[opened["sessionId"]] = self.root
                await self._model(self.root, model_names.chosen_model(opened))
                self._watch = asyncio.create_task(self._follow_commands(agent), name=f"commands {spec.label}")
                try:
                    mode = updates.asking_mode(opened.get("modes"), acp.mode)
                except updates.NoAskingMode as exc:
                    raise ExternalAgentError(str(exc)) from None
                if mode is not None:
                    await agent.set_mode(opened["sessionId"], mode)
                answer = await agent.prompt(opened["sessionId"], spec.prompt or "Continue where you left off.")
                await self._drain()
                await self._model(self.root, model_names.answering_model(answer))
                await self._read_back(agent)
            stop = answer.get("stopReason")
            result.status = RunStatus.CANCELLED if stop == "cancelled" else (
                RunStatus.FAILED if stop == "refusal" else RunStatus.COMPLETED)
            if stop == "refusal":
                result.error = "the agent refused the task"
            elif stop in ("max_tokens", "max_turn_requests"):
                result.error = f"the agent stopped early ({stop})"
            self._usage(answer)
            await self._spend_read_back()
        except TimeoutError:
            result.status, result.error = RunStatus.TIMEOUT, f"timed out after {seconds_text(spec.timeout)}"
        except ExternalAgentError as exc:
            if self._stopped:  # it was cancelled and did not stop, so it was stopped
                result.status, result.error = RunStatus.CANCELLED, "cancelled (its agent was stopped)"
            else:
                result.status, result.error = RunStatus.FAILED, f"{acp.command}: {exc}"
        except asyncio.CancelledError:
            result.status, result.error = RunStatus.CANCELLED, "cancelled"
            if self._agent_session is not None:
                await asyncio.shield(agent.cancel(self._agent_session))
            await asyncio.shield(self._end(result, agent))
            raise
        finally:
            quiet.cancel()
        await self._end(result, agent)
        return result

    async def _end(self, result: RunResult, agent: ExternalAgent) -> None:
        if self._stopping is not None:
            self._stopping.cancel()
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        await agent.close()
        await self._drain()
        if self._worker is not None:
            self._worker.cancel()
        for node in list(self._nodes.values()):
            if node is not self.root and not node.ended:  # its parent ended first: so did it
                await self._child_ended(node, RunStatus.CANCELLED if result.status != RunStatus.COMPLETED
                                        else RunStatus.COMPLETED, None)
        result.output = self.root.output
        result.usage, result.cost = self.root.usage, self._cost
        if result.output:
            await self._commit(self.root, Message.assistant(result.output))
        await self.store.update_run(self.run_id, status=result.status, usage=result.usage, cost=result.cost,
                                    error=result.error, result={"output": result.output})
        self.bus.publish(RunStatusChanged(self.run_id, self.spec.session_id, result.status, result.error or ""))

    async def _follow_commands(self, agent: ExternalAgent) -> None:
        """Cancel and abort sent to this run or one of its subagents from anywhere (the ledger, another
        process's `agents cancel`): the agent's `session/cancel`, for the run's session or — where the agent
        allows it — the one subagent's alone. Guidance (`steer`) has no ACP message: it is said not taken."""
        while True:
            await asyncio.sleep(COMMAND_POLL)
            by_run = {node.run_id: key for key, node in self._nodes.items() if not node.ended}
            try:
                commands = await self.store.run_commands.take(by_run)
            except YeetuiError:
                log.exception("could not look for commands to %s", self.spec.label)
                continue
            for command in commands:
                key = by_run.get(command.run_id)
                node = self._nodes.get(key) if key else None
                if node is None or command.kind not in ("cancel", "abort"):
                    log.warning("%s cannot take %r (an external agent takes cancel only)", self.spec.label,
                                command.kind)
                elif node is self.root:
                    if self._agent_session is not None:
                        await agent.cancel(self._agent_session)
                    if self._stopping is None or command.kind == "abort":  # /cancel! after /cancel: at once
                        if self._stopping is not None:
                            self._stopping.cancel()
                        self._stopping = asyncio.create_task(
                            self._stop_unless_it_ends(agent, 0.0 if command.kind == "abort" else CANCEL_GRACE))
                elif node.cancellable and key is not None:
                    await agent.cancel(key)
                else:
                    self.bus.publish(Notice("warning", f"{node.label} cannot be stopped on its own: its agent does "
                                            f"not allow it. Stop {self.spec.label} instead.", self.spec.session_id))

    async def _stop_unless_it_ends(self, agent: ExternalAgent, grace: float) -> None:
        """Asked to cancel (`abort`: at once), an agent that has not ended its turn within `grace` seconds — one
        waiting on something it does not say, as OpenCode's `task` child on a question it never passes on —
        is stopped: its process ends, and the run with it, as cancelled."""
        await asyncio.sleep(grace)
        if agent.running:
            self._stopped = True
            self.bus.publish(Notice("warning", f"{self.spec.label} did not stop when asked"
                                    + (f" within {seconds_text(grace)}" if grace else "") + ": its agent was stopped.",
                                    self.spec.session_id))
            await agent.close()

    async def _read_back(self, agent: ExternalAgent) -> None:
        """The transcripts of subagents the agent only named (OpenCode's task tool): replayed by `session/load`
        into their nodes. One that cannot be read keeps what the tool reported."""
        if not agent.can_load:
            return
        for child in self._to_load:
            try:
                await agent.load_session(child, timeout=30.0)
            except ExternalAgentError as exc:
                log.warning("could not read back subagent session %s of %s: %s", child, self.spec.label, exc)
            await self._drain()

    # -- what the agent sends ---------------------------------------------------------------------------------

    def _taken(self, session_id: str, update: dict[str, Any]) -> None:
        """Every `session/update`, in the order it came (synchronous: the work is queued)."""
        self._quiet.heard()
        self._work.put_nowait((session_id, update))

    async def _work_through(self) -> None:
        while True:
            session_id, update = await self._work.get()
            try:
                await self._apply(session_id, update)
            except Exception:
                log.exception("an update of %s could not be applied", self.spec.label)
            finally:
                self._work.task_done()

    async def _drain(self) -> None:
        if self._worker is not None and not self._worker.done():
            await self._work.join()

    async def _apply(self, session_id: str, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if (announced := updates.stable_subagent(update)) is not None:
            await self._subagent(session_id, announced)
            return
        if kind == "session_message":
            await self._session_message(update)
            return
        node = self._nodes.get(session_id)
        if node is None:
            return  # a session it never announced: not shown
        parent_tool = updates.legacy_parent(update)
        if node is self.root and parent_tool is not None:
            tagged = await self._legacy_child(parent_tool)
            if tagged is None:
                return  # a subagent over the limits: not shown
            node = tagged
        if kind == "agent_message_chunk":
            if text := updates.text(update.get("content")):
                node.add_text(text, update.get("messageId"))
                self.bus.publish(TextDelta(node.run_id, node.session_id, text))
        elif kind == "agent_thought_chunk":
            if text := updates.text(update.get("content")):
                self.bus.publish(ThinkingDelta(node.run_id, node.session_id, text))
        elif kind == "tool_call":
            self._tool_call(node, update)
        elif kind == "tool_call_update":
            await self._tool_call_update(node, update)
        elif kind == "config_option_update":
            await self._model(node, model_names.chosen_model(update))
        elif kind == "usage_update":
            await self._usage_update(node, update)

    def _tool_call(self, node: _Node, update: dict[str, Any]) -> None:
        """A tool call starting: shown; a subagent's is remembered as its (see `_ask`)."""
        node.tool_called()
        if call_id := updates.field(update.get("toolCallId")):
            if update.get("status") not in ("completed", "failed"):
                self._quiet.opened(call_id)
            if node is not self.root and len(self._calls) < MAX_CALLS:
                self._calls.setdefault(call_id, node)
            raw = update.get("rawInput")
            self.bus.publish(ToolCallStarted(node.run_id, node.session_id, call_id,
                                             updates.field(update.get("kind")) or "tool",
                                             raw if isinstance(raw, dict) else {},
                                             activity=updates.field(update.get("title"))))

    async def _tool_call_update(self, node: _Node, update: dict[str, Any]) -> None:
        """A tool call going on or ending; one that names a subagent session (OpenCode's `task`) makes a node
        for it, and an older Claude adapter's Agent call carries its subagent's usage."""
        node.tool_called()  # (Gemini CLI sends no `tool_call` for a call it asks about first)
        status = update.get("status")
        call_id = updates.field(update.get("toolCallId"))
        child = updates.named_child(update)
        if child and child != self._agent_session and child not in self._nodes and node is self.root:
            raw = update.get("rawInput")
            task = updates.field(raw.get("prompt")) if isinstance(raw, dict) else ""
            if await self._new_child(child, updates.field(update.get("title")) or "subagent", task or None,
                                     cost_in_parent=False) is not None:
                self._to_load.append(child)
        legacy = self._nodes.get(f"tool:{call_id}")
        if legacy is not None and (usage := claude.tool_response_usage(update)) is not None:
            legacy.usage = usage  # an older Claude adapter's subagent: its usage is on the Agent call
            self.bus.publish(UsageUpdated(legacy.run_id, legacy.session_id, usage, None))
        if call_id and status in ("completed", "failed"):
            self._quiet.closed(call_id)
            self.bus.publish(ToolCallFinished(node.run_id, node.session_id, call_id,
                                              updates.field(update.get("kind")) or "tool",
                                              updates.tool_output(update.get("content")), status == "failed"))

    async def _usage_update(self, node: _Node, update: dict[str, Any]) -> None:
        """The context used, the model measured (where said) and, for the run itself, the cost so far."""
        await self._model(node, model_names.measured_model(update))
        cost = update.get("cost")
        if isinstance(cost, dict) and node is self.root and cost.get("currency", "USD") == "USD" \
                and (amount := spend.dollars(cost.get("amount"))) is not None:
            self._cost = amount
            self.bus.publish(UsageUpdated(node.run_id, node.session_id, node.usage, self._cost))

    async def _model(self, node: _Node, model: str) -> None:
        """`node` runs on `model` (when it names one): its record and its ledger row say so."""
        if not model or model == node.model:
            return
        node.model = model
        await self.store.update_run(node.run_id, model=model)
        self.bus.publish(RunModelChanged(node.run_id, node.session_id, model))

    async def _subagent(self, session_id: str, update: dict[str, Any]) -> None:
        """A subagent announced or changed, on its parent's session: the run's own, or another subagent's (a
        child of that subagent's node)."""
        child = updates.field(update.get("sessionId"))
        if not child or child == self._agent_session:
            return
        node = self._nodes.get(child)
        if node is None:
            parent = self._nodes.get(session_id, self.root)
            node = await self._new_child(child, updates.field(update.get("title")) or "subagent",
                                         updates.field(update.get("description")),
                                         parent=None if parent.ended else parent)
            if node is None:
                return  # over the limits: not shown
        capabilities = update.get("capabilities")
        if isinstance(capabilities, dict):
            node.cancellable = isinstance(capabilities.get("cancel"), dict)
        state = update.get("state")
        if isinstance(state, dict) and not node.ended:
            name = state.get("state")
            if name == "requires_action":
                await self._status(node, RunStatus.WAITING_PERMISSION)
            elif name == "running":
                await self._status(node, RunStatus.RUNNING)
            elif name == "idle":
                node.usage = updates.usage(state.get("usage")) or await self._recorded_usage(child) or node.usage
                if node.usage.total_tokens:
                    self.bus.publish(UsageUpdated(node.run_id, node.session_id, node.usage, None))
                stop = state.get("stopReason")
                error = state.get("error")
                status = RunStatus.CANCELLED if stop == "cancelled" else (
                    RunStatus.FAILED if stop in ("error", "refusal") else RunStatus.COMPLETED)
                message = updates.field(error.get("message")) if isinstance(error, dict) else None
                await self._child_ended(node, status, message or (stop if status == RunStatus.FAILED else None))

    async def _session_message(self, update: dict[str, Any]) -> None:
        """A message between sessions (ACP subagent sessions): one a subagent is given — its task, or a later
        word from its parent — goes into its transcript, once (agents send it on both sessions)."""
        node = self._nodes.get(updates.field(update.get("recipientSessionId")))
        message_id = updates.field(update.get("messageId"))
        if node is None or node is self.root or node.ended or (message_id and message_id in node.messages):
            return
        content = update.get("content")
        text = "\n".join(t for t in map(updates.text, content if isinstance(content, list) else []) if t)
        if text:
            node.messages.add(message_id)
            await self._commit(node, Message.user(cap(text, updates.TEXT_CAP)))

    async def _recorded_usage(self, child: str) -> Usage | None:
        """A subagent's usage from Claude Code's record of it, when its idle state said none (Claude Code's
        adapter drops it)."""
        if self._agent_session is None:
            return None
        return await asyncio.to_thread(claude.subagent_usage, self.env, self._agent_session, child)

    async def _spend_read_back(self) -> None:
        """What the agent recorded as spent, read once it is done (a record written after a subagent went idle
        is complete now): a Claude Code subagent's usage; an OpenCode `task` child's tokens and cost (its
        session's own, which its parent's cost does not hold), and the top session's tokens when the turn's
        answer counted fewer (OpenCode's counts its last request only)."""
        if self._agent_session is None:
            return
        parent = self._agent_session
        for key, node in list(self._nodes.items()):
            if node is self.root or key.startswith("tool:"):
                continue
            usage, cost = node.usage, node.cost
            if key in self._to_load:
                if spend := await asyncio.to_thread(opencode.session_spend, self.env, key, parent_id=parent):
                    usage, cost = spend.usage, spend.cost
            elif (recorded := await self._recorded_usage(key)) is not None:
                usage = recorded
            if (usage, cost) != (node.usage, node.cost):
                node.usage, node.cost = usage, cost
                if node.ended:
                    await self.store.update_run(node.run_id, usage=usage, cost=cost)
                self.bus.publish(UsageUpdated(node.run_id, node.session_id, usage, cost))
        top = await asyncio.to_thread(opencode.session_spend, self.env, parent, parent_id=None)
        if top is not None and top.usage.total_tokens > self.root.usage.total_tokens:
            self.root.usage = top.usage
            self._cost = self._cost if self._cost is not None else top.cost
            self.bus.publish(UsageUpdated(self.run_id, self.spec.session_id, top.usage, self._cost))

    async def _legacy_child(self, tool_call_id: str) -> _Node | None:
        key = f"tool:{tool_call_id}"
        return self._nodes.get(key) or await self._new_child(key, "subagent", None)

    async def _new_child(self, key: str, title: str, description: str | None, *,
                         cost_in_parent: bool = True, parent: _Node | None = None) -> _Node | None:
        """A node for one of the agent's subagents: a session and a run under `parent`'s (this run's by default),
        shown running — or None when the agent has as many as it may have (`MAX_LIVE_CHILDREN` running,
        `MAX_CHILDREN` in all). `cost_in_parent`: the cost the agent reports for its own session holds this
        subagent's (Claude Code's and yeetui's do; OpenCode's session cost is that session's alone)."""
        parent = parent or self.root
        running = sum(1 for node in self._nodes.values() if node is not self.root and not node.ended)
        if self._children >= MAX_CHILDREN or running >= MAX_LIVE_CHILDREN:
            if not self._over_limit_said:
                self._over_limit_said = True
                self.bus.publish(Notice("warning", f"{self.spec.label}'s agent started more subagents than yeetui "
                                        f"follows ({MAX_LIVE_CHILDREN} at once, {MAX_CHILDREN} in a run): the "
                                        "others are not shown, and their usage is not counted apart.",
                                        self.spec.session_id))
            return None
        self._children += 1
        profile = self.spec.profile
        session = await self.store.create_session(profile=profile, title=cap(title, 80), parent_id=parent.session_id,
                                                  cwd=self.spec.tool_context.binding.cwd)
        label = f"{parent.label}/{await self.store.allocate_label(profile + '-sub')}"
        run = await self.store.create_run(session_id=session.id, profile=profile, model=None,
                                          prompt=cap(description or title, updates.FIELD_CAP), status=RunStatus.RUNNING,
                                          parent_run_id=parent.run_id, label=label, pid=os.getpid(),
                                          options={"parent_session_id": parent.session_id, "deliver": False,
                                                   "external": True, "cost_in_parent": cost_in_parent})
        node = _Node(run.id, session.id, label)
        self._nodes[key] = node
        program = os.path.basename(self.profile.acp.command) if self.profile.acp else ""
        self.bus.publish(RunRegistered(run.id, session.id, parent.session_id, profile, label, program,
                                       RunStatus.RUNNING))
        return node

    async def _child_ended(self, node: _Node, status: RunStatus, error: str | None) -> None:
        node.ended = True
        if node.output:
            await self._commit(node, Message.assistant(node.output))
        await self.store.update_run(node.run_id, status=status, usage=node.usage, cost=node.cost, error=error,
                                    result={"output": node.output})
        self.bus.publish(RunStatusChanged(node.run_id, node.session_id, status, error or ""))
        # Its report went to its agent, which carries on with it; the inbox of this run's session keeps it too
        # (as a built-in subagent's report to a subagent is kept), never announced into a conversation.
        body = cap(node.output or error or "", INBOX_BODY_CAP)
        data = Completion(label=node.label, child_session_id=node.session_id, run_status=status.value,
                          result={"output": cap(node.output, INBOX_BODY_CAP)}).to_data()
        item, created = await self.store.inbox.put(
            session_id=self.spec.session_id, run_id=node.run_id, kind="completion",
            title=f"{node.label} — {status.value}", body=body, data=data, dedupe_key=f"completion:{node.run_id}")
        if created:
            self.bus.publish(InboxItemAdded(item.id, self.spec.session_id, node.run_id, item.kind, item.title,
                                            item.body, data))

    # -- permission requests ---------------------------------------------------------------------------------

    async def _ask(self, session_id: str, call: dict[str, Any], options: list[dict[str, Any]]) -> str | None:
        """The agent asks to run a tool call: the profile's rules decide, else the user (or the headless
        rules), as for yeetui's own tools. The chosen option's id, or None (cancelled: refused)."""
        await self._drain()  # the tool call it asks about has been shown
        with self._quiet.asking():
            return await self._answer(session_id, call, options)

    async def _answer(self, session_id: str, call: dict[str, Any], options: list[dict[str, Any]]) -> str | None:
        node = self._nodes.get(session_id, self.root)
        if node is self.root:  # a subagent's request may come on the run's own session: whose call is it?
            node = self._calls.get(updates.field(call.get("toolCallId")), node)
        node.tool_called()
        kind = updates.field(call.get("kind")) or "other"
        title = updates.field(call.get("title")) or kind
        raw = call.get("rawInput")
        arguments = raw if isinstance(raw, dict) else {}
        subject = updates.field(arguments.get("command") or arguments.get("file_path")
                                or arguments.get("path")) or title
        tool = KIND_TOOLS.get(kind, f"{self.spec.profile}:{kind}")
        binding = self.spec.tool_context.binding
        action = self.spec.permissions.decide(tool, subject, writes=kind in WRITING_KINDS, cwd=binding.cwd,
                                              roots=binding.roots)
        answer: PermissionAnswer
        if action == "allow":
            answer = "allow_once"
        elif action == "deny":
            answer = "deny"
        else:
            reply: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
            await self._status(node, RunStatus.WAITING_PERMISSION)
            self.bus.publish(PermissionRequested(node.run_id, node.session_id, node.label, tool,
                                                 cap(f"{title}" if subject == title else f"{subject} ({title})",
                                                     updates.FIELD_CAP), dict(arguments), reply,
                                                 call_id=updates.field(call.get("toolCallId"))))
            try:
                answer = await reply
            finally:
                if not node.ended:
                    await self._status(node, RunStatus.RUNNING)
        return updates.option(options, answer)

    # -- records ----------------------------------------------------------------------------------------------

    async def _status(self, node: _Node, status: RunStatus) -> None:
        await self.store.update_run(node.run_id, status=status)
        self.bus.publish(RunStatusChanged(node.run_id, node.session_id, status, ""))

    async def _commit(self, node: _Node, message: Message) -> None:
        from yeetui.events import MessageCommitted

        message_id = await self.store.append_message(node.session_id, message, run_id=node.run_id)
        self.bus.publish(MessageCommitted(node.run_id, node.session_id, message_id, message))

    def _usage(self, answer: dict[str, Any]) -> None:
        """The turn's usage: its answer's `usage`, else what its `_meta.quota` counts (Gemini CLI's)."""
        if (usage := updates.usage(answer.get("usage")) or updates.quota_usage(answer)) is not None:
            self.root.usage = usage
            self.bus.publish(UsageUpdated(self.run_id, self.spec.session_id, usage, self._cost))
