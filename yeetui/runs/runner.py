"""The agent loop: prompt → provider stream → tool calls → results → … until an exit tool ends the run.

Control flow is by one small exception, `RunEnded`, carrying the outcome. Status always comes from here,
never from model text. Every message is committed as it completes; streaming text is checkpointed as a
partial message so a killed process loses at most the last fraction of a second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from yeetui.bus import Bus
from yeetui.errors import ProviderError, StoreError
from yeetui.events import (
    MessageCommitted,
    Notice,
    ProviderRetrying,
    RunStatus,
    RunStatusChanged,
    StreamRestarted,
    TextDelta,
    ThinkingDelta,
    UsageUpdated,
)
from yeetui.framing import framed
from yeetui.hooks.runner import HookRunner
from yeetui.messages import Message, TextPart, ToolCallPart, ToolResultPart, Usage
from yeetui.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    TextChunk,
    ThinkingChunk,
    UsageChunk,
    split_model,
)
from yeetui.providers.pricing import cost_usd
from yeetui.providers.retry import Restarted, stream_with_retry
from yeetui.runs.budget import is_halt
from yeetui.runs.compaction import compaction_message, redeliver_unseen, summarise
from yeetui.runs.history import repair_history
from yeetui.runs.mcp_tools import McpAccess
from yeetui.runs.mentions import prompt_message
from yeetui.runs.prompting import NUDGE
from yeetui.runs.spec import RunResult, RunSpec, cancel_reason
from yeetui.runs.tool_executor import ToolExecutor, ToolRunState
from yeetui.store import Store
from yeetui.store.records import utcnow
from yeetui.text import clip, one_line, seconds_text

CHECKPOINT_INTERVAL = 0.25
"""Seconds between writes of the in-flight assistant message (what a crash can lose), for short answers."""


def checkpoint_interval(length: int) -> float:
    """Each checkpoint writes (and redacts) the whole answer so far: a long answer is checkpointed less
    often, so that the cost per second stays flat (40 KB: every 2.25 s instead of 4 times a second)."""
    return CHECKPOINT_INTERVAL + length / 20_000


class RunEnded(Exception):
    def __init__(self, status: RunStatus, output: str = "", *, result: dict[str, Any] | None = None,
                 error: str | None = None) -> None:
        super().__init__(error or status.value)
        self.status, self.output, self.result, self.error = status, output, result, error


ProviderFactory = Callable[[str], tuple[Provider, str]]
MAX_KEPT_ON = 3
"""Times in a row a Stop hook may keep an agent from stopping (a hook that always blocks must not loop it)."""
BeforeTurn = Callable[[], Awaitable[list[Message]]]
"""Called before every model turn; returns the messages it committed meanwhile (steering, announcements)."""


class Runner:
    def __init__(self, *, store: Store, bus: Bus, executor: ToolExecutor, providers: ProviderFactory,
                 retry_attempts: int = 5, retry_base_delay: float = 1.0, retry_max_delay: float = 30.0,
                 after_request: Callable[[str], Awaitable[None]] | None = None,
                 halted: Callable[[str], bool] | None = None, quota_hold_minutes: float = 30.0,
                 hooks: HookRunner | None = None) -> None:
        self.store = store
        self.bus = bus
        self.executor = executor
        self.providers = providers
        self.retry_attempts = retry_attempts
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.after_request = after_request
        """Told after every model request of a run (its budgets are looked at: `BudgetKeeper.after_request`)."""
        self.quota_hold_minutes = quota_hold_minutes
        """How long a provider that refused for its quota is held (queued runs for it wait), unless a request
        to it succeeds first."""
        self.hooks = hooks
        """The user's Stop and SubagentStop hooks, which may keep an agent from stopping (yeetui.hooks)."""
        self.halted = halted
        """Whether a run was halted by its tree's budget (its cancellation may have lost its message on the
        way through a `gather` of tool calls)."""
        self._last_input: dict[str, int] = {}

    async def run(self, spec: RunSpec, run_id: str, *, before_turn: BeforeTurn | None = None) -> RunResult:
        """Run `spec` to its end. `before_turn` is called before every model turn and returns the messages it
        committed meanwhile (steering, announcements), which join the history."""
        result = RunResult(run_id=run_id, session_id=spec.session_id, status=RunStatus.RUNNING)
        earlier = await self.store.get_run(run_id)
        if earlier is not None:  # a resumed run goes on counting from what its earlier attempts used
            result.usage, result.cost, result.turns = earlier.usage, earlier.cost, earlier.turns
        await self._set_status(result, RunStatus.RUNNING)
        try:
            async with asyncio.timeout(spec.timeout) as deadline:
                try:
                    await self._loop(spec, result, before_turn)
                except TimeoutError:
                    if deadline.expired():
                        raise
                    raise RunEnded(RunStatus.FAILED, error="a timeout inside the run") from None
        except RunEnded as end:
            result.status, result.output, result.result, result.error = end.status, end.output, end.result, end.error
        except TimeoutError:
            result.status, result.error = RunStatus.TIMEOUT, f"timed out after {seconds_text(spec.timeout)}"
        except StoreError as exc:  # the store took no more (a full disk): the run ends saying what it could not keep
            result.status, result.error = RunStatus.FAILED, str(exc)
        except ProviderError as exc:
            result.status, result.error = RunStatus.FAILED, str(exc)
            if exc.quota:  # the account is spent: said in the provider's words; queued runs for it wait
                result.status = RunStatus.QUOTA_EXHAUSTED
                provider = split_model(spec.model)[0]
                await self.store.provider_holds.hold(provider, str(exc), minutes=self.quota_hold_minutes)
                self.bus.publish(Notice("error", f"{provider}: the account's quota or credit is spent — {exc}. "
                                        f"Runs queued for {provider} wait (up to {self.quota_hold_minutes:g} min, or "
                                        "until a request to it succeeds).", spec.session_id))
        except asyncio.CancelledError as exc:
            reason = cancel_reason(exc)
            # its tree's budget is spent: it ends with what it said so far
            halted = is_halt(reason) or (self.halted is not None and self.halted(run_id))
            result.status = RunStatus.BUDGET_EXHAUSTED if halted else RunStatus.CANCELLED
            result.error = reason.removeprefix("cancelled: ") if halted else reason
            await asyncio.shield(self._finish(result))
            raise
        await self._finish(result)
        self._last_input.pop(run_id, None)
        return result

    async def _loop(self, spec: RunSpec, result: RunResult, before_turn: BeforeTurn | None) -> None:
        history = await repair_history(self.store, spec.session_id)
        if history and history[0].meta.get("compaction"):  # a compaction this run did not finish (a crash)
            compacted_at = await self.store.latest_compaction_at(spec.session_id)
            if compacted_at is not None:
                await self._redeliver(spec, result, history, compacted_at)
        if spec.prompt is not None:
            await self._commit(spec, result, history, prompt_message(spec.prompt, spec.attachments))
        elif not history or (history[-1].role == "assistant" and not history[-1].tool_calls):
            await self._commit(spec, result, history, Message.user("Continue where you left off."))
        tool_state = ToolRunState(
            run_id=result.run_id, session_id=spec.session_id, agent_label=spec.label, offered=set(spec.tools),
            permissions=spec.permissions, context=spec.tool_context, workflow=spec.workflow,
            secrets=spec.secrets, on_status=lambda s: self._set_status(result, RunStatus(s)),
            on_always=lambda tool, subject: self.store.remember_permission(spec.session_id, tool, subject),
        )
        turns = _Stops()
        for _turn in range(spec.max_turns):
            if before_turn is not None:
                history.extend(await before_turn())
            if spec.compact_at is not None and self._last_input.get(result.run_id, 0) > spec.compact_at:
                history[:] = await self._compact(spec, result, history)
            reply = await self._model_turn(spec, result, history)
            if self.after_request is not None:
                await self.after_request(result.run_id)
            if not reply.tool_calls:
                await self._answered(spec, result, history, reply.text, turns)
                continue
            parts = await self._run_tools(reply, tool_state)
            await self._commit(spec, result, history, Message(role="tool", parts=tuple(parts)))
            if spec.workflow is not None:
                await self.store.workflow_states.save(result.run_id, spec.workflow.workflow.name,
                                                      spec.workflow.state())
            await self._after_tools(spec, result, history, list(zip(reply.tool_calls, parts, strict=True)),
                                    tool_state, turns)
        raise RunEnded(RunStatus.FAILED, error=f"reached max_turns ({spec.max_turns}) without finishing")

    async def _answered(self, spec: RunSpec, result: RunResult, history: list[Message], text: str,
                        turns: _Stops) -> None:
        """The model answered without a tool call: the run ends (completed, or waiting for the user) — unless a
        Stop hook keeps it going, or it owes an exit tool and gets a reminder (a few, then it waits)."""
        if (not spec.exit_tools or spec.interactive) and \
                await self._kept_on(spec, result, history, text, turns.kept_on):
            turns.kept_on += 1
            return
        if not spec.exit_tools:
            raise RunEnded(RunStatus.COMPLETED, text)
        if spec.interactive:
            raise RunEnded(RunStatus.WAITING_USER, text)
        turns.nudges += 1
        if turns.nudges > spec.max_nudges:
            raise RunEnded(RunStatus.WAITING_USER, text, error=(
                f"stopped without calling {_names(spec.exit_tools)} after {spec.max_nudges} reminders"))
        nudge = NUDGE.format(tools=_names(spec.exit_tools))
        await self._commit(spec, result, history, Message.user(nudge, nudge=True))

    async def _after_tools(self, spec: RunSpec, result: RunResult, history: list[Message],
                           done: list[tuple[ToolCallPart, ToolResultPart]], tool_state: ToolRunState,
                           turns: _Stops) -> None:
        """An exit tool that ran ends the run (unless a Stop hook keeps it going); one its tool refused (arguments
        that fail the schema) spends a reminder, so a model that keeps getting them wrong ends here, not at
        max_turns."""
        for call, part in done:
            if not part.is_error and _ends_run(spec, call.name):
                outcome = _exit_outcome(call.name, tool_state.exit_data.get(call.name), part.content)
                if await self._kept_on(spec, result, history, outcome.output, turns.kept_on):
                    turns.kept_on += 1
                    return
                raise outcome
            if part.is_error and call.name in spec.exit_tools:
                turns.nudges += 1
                if turns.nudges > spec.max_nudges:
                    raise RunEnded(RunStatus.FAILED, error=(
                        f"{call.name} was refused {turns.nudges} times; the last time: "
                        f"{clip(one_line(part.content), 300)}"))

    async def _kept_on(self, spec: RunSpec, result: RunResult, history: list[Message], said: str,
                       kept_on: int) -> bool:
        """The agent is about to stop: its `Stop` (a subagent: `SubagentStop`) hooks run, and one that blocks
        keeps it going, its reason said to the agent — at most `MAX_KEPT_ON` times in a row (Claude Code's
        `stop_hook_active` tells the hook when it already did)."""
        event = "SubagentStop" if spec.parent_session_id else "Stop"
        target = spec.profile if spec.parent_session_id else None  # a subagent's matcher names its profile
        if self.hooks is None or not self.hooks.has(event, target):
            return False
        fields: dict[str, Any] = {"stop_hook_active": kept_on > 0, "last_assistant_message": said}
        if spec.parent_session_id:
            fields |= {"agent_id": result.run_id, "agent_type": spec.profile, "agent_session_id": spec.session_id,
                       "agent_transcript_path": await self.hooks.transcript_path(spec.session_id)}
        hooked = await self.hooks.fire(event, session_id=spec.parent_session_id or spec.session_id,
                                       run_id=result.run_id, target=target, **fields)
        if not hooked.blocked or kept_on >= MAX_KEPT_ON:
            return False
        said = framed("hook-output", hooked.reason, writer=f"a {event} hook", event=event)
        await self._commit(spec, result, history, Message.user(f"[{event} hook] A hook kept you going.\n{said}",
                                                               hook=True))
        return True

    async def _run_tools(self, reply: Message, state: ToolRunState) -> list[ToolResultPart]:
        """Tool calls run in order — or all at once when every one of them is safe to overlap (reads and
        agent tools: three `spawn_subagent` calls in one message run three children concurrently)."""
        calls = reply.tool_calls
        if len(calls) > 1 and all(self.executor.registry.parallel_safe(c.name) for c in calls):
            done = await asyncio.gather(*(self.executor.execute(c, state) for c in calls))
            return [part for part, _ in done]
        return [(await self.executor.execute(call, state))[0] for call in calls]

    async def _model_turn(self, spec: RunSpec, result: RunResult, history: list[Message]) -> Message:
        provider, bare_model = self.providers(spec.model)
        request = self._request(spec, bare_model, history)
        text = ""
        asked_at = utcnow()  # every result delivered by now is in this request
        result.turns += 1  # a request made counts, however it ends
        partial_id: int | None = None
        last_write = 0.0
        last_usage_write = -CHECKPOINT_INTERVAL
        done: StreamDone | None = None
        # What this attempt has reported (and the run counted) so far: a request cut off mid-stream — a crash,
        # a cancel, a dropped connection — still counts in the run's tokens and cost.
        counted = Usage()

        async def on_retry(attempt: int, delay: float, reason: str) -> None:
            nonlocal counted
            counted = Usage()  # the failed attempt's usage stays counted; the next one reports from zero
            self.bus.publish(ProviderRetrying(result.run_id, spec.session_id, attempt, delay, reason,
                                              max_attempts=self.retry_attempts))

        async for item in stream_with_retry(provider, request, on_retry=on_retry, max_attempts=self.retry_attempts,
                                            base_delay=self.retry_base_delay, max_delay=self.retry_max_delay):
            if isinstance(item, TextChunk):
                text += item.text
                self.bus.publish(TextDelta(result.run_id, spec.session_id, item.text))
                if time.monotonic() - last_write >= checkpoint_interval(len(text)):
                    partial_id = await self._checkpoint(spec, result, partial_id, text)
                    last_write = time.monotonic()
            elif isinstance(item, ThinkingChunk):
                self.bus.publish(ThinkingDelta(result.run_id, spec.session_id, item.text))
            elif isinstance(item, Restarted):
                text = ""
                self.bus.publish(StreamRestarted(result.run_id, spec.session_id))
            elif isinstance(item, UsageChunk):
                if (more := item.usage.beyond(counted)).total_tokens:
                    counted = item.usage
                    self._add_usage(spec, result, more, context=_context(item.usage))
                    # Stored at once the first time (the prompt's tokens, most of a request's cost), then at
                    # most once per checkpoint interval: some providers send the usage so far with every chunk.
                    if time.monotonic() - last_usage_write >= CHECKPOINT_INTERVAL:
                        await self.store.update_run(result.run_id, usage=result.usage, cost=result.cost,
                                                    turns=result.turns)
                        last_usage_write = time.monotonic()
            elif isinstance(item, StreamDone):
                done = item
        if done is None:
            raise ProviderError("the model stream ended without a final message", retryable=False)
        self._add_usage(spec, result, done.usage.beyond(counted), context=_context(done.usage))
        self._last_input[result.run_id] = _context(done.usage)
        # The model saw every child's result delivered before the request: consumed (compaction never replays them).
        await self.store.announcements.mark_consumed(spec.session_id, delivered_by=asked_at)
        if result.turns == 1:  # its provider answers: a hold for its quota (set by any process) is over
            await self.store.provider_holds.release(split_model(spec.model)[0])
        await self._commit(spec, result, history, done.message, replace_id=partial_id)
        # Stored per response, not only at the end: a crash mid-run loses no spent tokens.
        await self.store.update_run(result.run_id, usage=result.usage, cost=result.cost, turns=result.turns)
        return done.message

    def _request(self, spec: RunSpec, bare_model: str, history: list[Message]) -> ModelRequest:
        """This turn's request: the tools offered now and the system prompt of the workflow's current step."""
        offered = spec.tools
        mcp = spec.tool_context.mcp
        if isinstance(mcp, McpAccess):  # the MCP tools the run loaded so far (`mcp_load`)
            offered = [*offered, *(name for name in mcp.loaded if name not in offered)]
        if spec.workflow is not None:  # the current step's blocked tools are not offered (they would be refused)
            offered = [name for name in offered if spec.workflow.check_tool(name) is None]
        tools = [self.executor.registry.get(name).spec() for name in offered]
        system = spec.system_prompt
        if spec.workflow is not None:  # rebuilt every turn: the current step changes what the model is told
            system += "\n\n# Workflow\n" + spec.workflow.instructions()
        return ModelRequest(model=bare_model, system=system, messages=list(history), tools=tools,
                            max_tokens=spec.max_tokens, thinking=spec.thinking)

    async def _compact(self, spec: RunSpec, result: RunResult, history: list[Message]) -> list[Message]:
        """Auto-compaction near the context limit: summarise, commit the summary, continue from it."""
        provider, bare_model = self.providers(spec.model)
        self.bus.publish(Notice("info", "The conversation is near the context limit; compacting it.",
                                spec.session_id))
        if self.hooks is not None:
            await self.hooks.compacting(spec.session_id, result.run_id, "auto")
        summary, usage = await summarise(provider, bare_model, history)
        self._add_usage(spec, result, usage)
        self._last_input[result.run_id] = 0
        compacted: list[Message] = []
        await self._commit(spec, result, compacted, compaction_message(summary))
        if self.hooks is not None and (added := await self.hooks.compacted(spec.session_id, result.run_id)):
            await self._commit(spec, result, compacted, Message.user(added, hook=True))
        compacted_at = await self.store.latest_compaction_at(spec.session_id)
        if compacted_at is not None:  # results not seen yet come again after the summary, which may omit them
            await self._redeliver(spec, result, compacted, compacted_at)
        return compacted

    async def _redeliver(self, spec: RunSpec, result: RunResult, history: list[Message], compacted_at: str) -> None:
        for message_id, message in await redeliver_unseen(self.store, spec.session_id, compacted_at=compacted_at,
                                                          run_id=result.run_id):
            history.append(message)
            self.bus.publish(MessageCommitted(result.run_id, spec.session_id, message_id, message))

    async def _checkpoint(self, spec: RunSpec, result: RunResult, partial_id: int | None, text: str) -> int:
        message = Message(role="assistant", parts=(TextPart(text=text),))
        if partial_id is None:
            return await self.store.append_message(spec.session_id, message, run_id=result.run_id, partial=True)
        await self.store.update_message(partial_id, message, partial=True)
        return partial_id

    async def _commit(self, spec: RunSpec, result: RunResult, history: list[Message], message: Message, *,
                      replace_id: int | None = None) -> None:
        if replace_id is None:
            message_id = await self.store.append_message(spec.session_id, message, run_id=result.run_id)
        else:
            await self.store.update_message(replace_id, message, partial=False)
            message_id = replace_id
        history.append(message)
        self.bus.publish(MessageCommitted(result.run_id, spec.session_id, message_id, message))

    def _add_usage(self, spec: RunSpec, result: RunResult, usage: Usage, *, context: int = 0) -> None:
        turn_cost = cost_usd(spec.model, usage)
        known = result.cost is not None or result.usage.total_tokens == 0
        result.cost = (result.cost or 0.0) + turn_cost if known and turn_cost is not None else None
        result.usage = result.usage + usage
        self.bus.publish(UsageUpdated(result.run_id, spec.session_id, result.usage, result.cost,
                                      context_tokens=context))

    async def _set_status(self, result: RunResult, status: RunStatus, reason: str = "") -> None:
        result.status = status
        await self.store.update_run(result.run_id, status=status)
        self.bus.publish(RunStatusChanged(result.run_id, result.session_id, status, reason))

    async def _finish(self, result: RunResult) -> None:
        """Record the ending, and say it. An ending the store cannot take now is owed (written once it takes
        writes again): the run has ended all the same, and whoever waits on it hears so."""
        def record() -> Awaitable[object]:
            return self.store.update_run(
                result.run_id, status=result.status, usage=result.usage, cost=result.cost, error=result.error,
                turns=result.turns, result={"output": result.output, **(result.result or {})})

        try:
            await record()
        except StoreError:
            self.store.owe(f"end run {result.run_id}", record)
        self.bus.publish(RunStatusChanged(result.run_id, result.session_id, result.status, result.error or ""))


def _context(usage: Usage) -> int:
    """A request's input, cached or not: what its context holds."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


@dataclass
class _Stops:
    """How often a run was kept from stopping: reminders to call its exit tool, and Stop hooks that kept it on."""

    nudges: int = 0
    kept_on: int = 0


def _names(tools: list[str]) -> str:
    return " or ".join(f"`{t}`" for t in tools)


def _ends_run(spec: RunSpec, tool: str) -> bool:
    """`ask_user` always ends a run; with a workflow, its exit (not a step transition) ends it."""
    if tool == "ask_user" and tool in spec.exit_tools:
        return True
    if spec.workflow is not None:
        return spec.workflow.finished
    return tool in spec.exit_tools


def _exit_outcome(tool: str, data: dict[str, Any] | None, content: str) -> RunEnded:
    if tool == "ask_user":
        question = (data or {}).get("question", content)
        return RunEnded(RunStatus.WAITING_USER, question, result=data)
    output = (data or {}).get("output", content)
    return RunEnded(RunStatus.COMPLETED, output, result=data)
